--[[
  Fair turns of groups (submit's `group`): start-time fair queuing over the
  ready jobs, per priority, as the shared-memory queue takes them.

  A queue that never named a group files its ready jobs by (priority, runAt,
  submission), and reads or writes nothing here. From the first group it
  names on (startTurns: a submit naming one, or setGroupConcurrency), it is
  `grouped` (call.lua) and each job filed ready gets a turn: one past the
  later of its group's last turn and the turn last served, of its priority
  (its turn level); its member is then (priority, turn, submission), and a
  poll leases the lowest turn of the highest priority (served moves the
  round on). A group with k jobs ready has them at k consecutive turns,
  interleaved with every other group's: one job per group per round. The
  jobs without a group take turns as one more group (''). A job held (rate
  limit) or parked (cap) keeps its member, so its turn.

  K.turns holds, per turn level (the 16 characters of sortable(-priority)),
  the turn last served (field: the level) and each group's last turn (field:
  the level, a space, the group). A job's turn is its hash's `turn`, for
  readyMember to find its member.
]]

-- Turn level `level`'s next turn for a job of `group` ('' for none), taken.
local function nextTurn(level, group)
  local field = level .. ' ' .. group
  local f = redis.call('HMGET', K.turns, level, field)
  local turn = math.max(tonumber(f[1] or '0'), tonumber(f[2] or '0')) + 1
  redis.call('HSET', K.turns, field, int(turn))
  return turn
end

-- The member job n of `priority` and `group` ('': none) is filed ready with now that groups take turns,
-- and its turn (its hash keeps it, for readyMember): its group's next.
local function turnMember(priority, group, n)
  local level = sortable(-priority)
  local turn = nextTurn(level, group)
  return level .. sortable(turn) .. string.format('%016d', tonumber(n)), int(turn)
end

-- A new job n of `priority` and `group` ('': none) due at `due`: its member of the ready index if due by
-- indexedTo(), and its turn where groups take turns (nil otherwise); nil if not due yet, the catch-up told when it falls due.
local function newReadyMember(priority, group, n, due)
  if due > indexedTo() then
    dueBy(due)
    return nil
  end
  if grouped then return turnMember(priority, group, n) end
  return memberOf(priority, due, n)
end

-- The member PENDING job n (at key) is filed ready with now: with a new turn once groups take turns.
local function fileMember(key, n)
  if not grouped then return readyMember(key, n) end
  local f = redis.call('HMGET', key, 'priority', 'group')
  local member, turn = turnMember(tonumber(f[1]), f[2] or '', n)
  redis.call('HSET', key, 'turn', turn)
  return member
end

-- The ready members a poll leased: each one's turn level has come at least as far as its turn.
local function served(members)
  local top = {}
  for _, member in ipairs(members) do
    local level, turn = string.sub(member, 1, 16), unsortable(string.sub(member, 17, 32))
    if top[level] == nil or turn > top[level] then top[level] = turn end
  end
  for level, turn in pairs(top) do
    if turn > tonumber(redis.call('HGET', K.turns, level) or '0') then redis.call('HSET', K.turns, level, int(turn)) end
  end
end

-- Groups take turns from now on (a submit named the queue's first group, or setGroupConcurrency did): every
-- job filed ready so far, in K.ready, K.held or a type's parked set, gets a turn (all ungrouped) in the
-- order it has, (priority, runAt, submission), and keeps its set. Once in the queue's life, in one script:
-- one HSET per job (its turn) and the ready index written again in batches; the held and parked jobs
-- (few, as a rule) are sorted into K.ready's order, which ZRANGE gives already.
local function startTurns()
  local others = {}
  local held = redis.call('ZRANGE', K.held, 0, -1, 'WITHSCORES')
  for i = 1, #held, 2 do
    local n = string.sub(held[i], 33)
    -- A held entry of a job that moved on since (releaseHeld drops it) is dropped now: its hash's turn is its current member's.
    if readyMember(jobKey(int(tonumber(n))), n) == held[i] then others[#others + 1] = { held[i], K.held, held[i + 1] } else redis.call('ZREM', K.held, held[i]) end
  end
  for _, jobType in ipairs(redis.call('SMEMBERS', K.parkedTypes)) do
    local set = parkedPrefix .. jobType
    for _, member in ipairs(redis.call('ZRANGE', set, 0, -1)) do others[#others + 1] = { member, set, 0 } end
  end
  table.sort(others, function(a, b) return precedes(a[1], b[1]) end)
  -- The turns given so far per turn level: the ungrouped jobs' last turn once all are given.
  local last = {}
  local function give(old)
    local level, n = string.sub(old, 1, 16), string.sub(old, 33)
    local turn = (last[level] or 0) + 1
    last[level] = turn
    redis.call('HSET', jobKey(int(tonumber(n))), 'turn', int(turn))
    return level .. sortable(turn) .. n
  end
  local o = 1
  local function giveOthersBefore(member)
    while o <= #others and (member == nil or precedes(others[o][1], member)) do
      local entry = others[o]
      local new = give(entry[1])
      redis.call('ZREM', entry[2], entry[1])
      redis.call('ZADD', entry[2], entry[3], new)
      o = o + 1
    end
  end
  local ready = {}
  for _, member in ipairs(redis.call('ZRANGE', K.ready, 0, -1)) do
    giveOthersBefore(member)
    ready[#ready + 1] = 0
    ready[#ready + 1] = give(member)
  end
  giveOthersBefore(nil)
  redis.call('DEL', K.ready)
  callMany('ZADD', K.ready, ready, 2)
  for level, turn in pairs(last) do redis.call('HSET', K.turns, level .. ' ', int(turn)) end
  grouped = true
  redis.call('HSET', K.state, 'version', modelVersion())
end

-- Before new jobs are stored: groups take turns from now on if one of them is the first of the queue's life to
-- name a group. The `total` jobs' arguments are ARGV's from `first`, `width` each, the group `at` within them.
local function startTurnsIfNamed(ARGV, first, total, width, at)
  if grouped then return end
  for j = 1, total do
    if ARGV[first + (j - 1) * width + at] ~= '' then
      startTurns()
      return
    end
  end
end
