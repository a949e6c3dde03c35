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

-- One batch of the walk startTurns begins (and each later call's catch-up continues, before anything
-- else): the first jobs of K.unturned, at most the catch-up's budget, each take the next turn of the jobs
-- without a group at their turn level, in the order they have, (priority, runAt, submission), and get
-- their new member in the index they are in: K.held (by their window), a type's parked set, else K.ready.
-- A held entry of a job that moved on since (releaseHeld drops it) is dropped: its hash's turn is its
-- current member's. True once none is left: groups take turns from then on, K.state's version says so.
local function turnSome()
  local batch = budget > 0 and redis.call('ZRANGE', K.unturned, 0, budget - 1) or {}
  for _, old in ipairs(batch) do
    local level, n = string.sub(old, 1, 16), string.sub(old, 33)
    local key = jobKey(int(tonumber(n)))
    local set, score = K.ready, redis.call('ZSCORE', K.held, old)
    if score then
      set = K.held
    elseif capped then
      local parked = parkedPrefix .. (redis.call('HGET', key, 'type') or '')
      if redis.call('ZSCORE', parked, old) then set = parked end
    end
    if set == K.held and readyMember(key, n) ~= old then
      redis.call('ZREM', K.held, old)
    else
      local field = level .. ' '
      local turn = tonumber(redis.call('HGET', K.turns, field) or '0') + 1
      redis.call('HSET', K.turns, field, int(turn))
      redis.call('HSET', key, 'turn', int(turn))
      -- K.ready itself was moved to K.unturned whole: its jobs are added anew, the others moved within their set.
      if set ~= K.ready then redis.call('ZREM', set, old) end
      redis.call('ZADD', set, score or 0, level .. sortable(turn) .. n)
    end
  end
  if #batch > 0 then callMany('ZREM', K.unturned, batch, 1) end
  budget = budget - #batch
  if redis.call('EXISTS', K.unturned) == 1 then return false end
  turning = false
  redis.call('HSET', K.state, 'version', modelVersion())
  return true
end

-- Groups take turns from now on (a submit named the queue's first group, or setGroupConcurrency did): every
-- job filed ready so far, in K.ready, K.held or a type's parked set, gets a turn (all ungrouped) in the
-- order it has, and keeps its set. Not in one script: K.ready becomes K.unturned (a RENAME), the held and
-- parked jobs (few, as a rule) join it by their members, and turnSome walks it a batch per script, each
-- call's catch-up going on with it before anything else (turning), so no call finds the queue half turned
-- and none holds Redis longer than a catch-up's batch. True once done; false: the caller stops
-- (CATCHING_UP, having changed nothing else) and is called again.
local function startTurns()
  if redis.call('EXISTS', K.ready) == 1 then redis.call('RENAME', K.ready, K.unturned) end
  local others = {}
  local held = redis.call('ZRANGE', K.held, 0, -1)
  for _, member in ipairs(held) do
    others[#others + 1] = 0
    others[#others + 1] = member
  end
  for _, jobType in ipairs(redis.call('SMEMBERS', K.parkedTypes)) do
    for _, member in ipairs(redis.call('ZRANGE', parkedPrefix .. jobType, 0, -1)) do
      others[#others + 1] = 0
      others[#others + 1] = member
    end
  end
  callMany('ZADD', K.unturned, others, 2)
  grouped, turning = true, true
  redis.call('HSET', K.state, 'version', modelVersion())
  return turnSome()
end

-- Before new jobs are stored: groups take turns from now on if one of them is the first of the queue's life to
-- name a group. The `total` jobs' arguments are ARGV's from `first`, `width` each, the group `at` within them.
-- False if the caller must stop before its own work (see startTurns).
local function startTurnsIfNamed(ARGV, first, total, width, at)
  if grouped then return true end
  for j = 1, total do
    if ARGV[first + (j - 1) * width + at] ~= '' then return startTurns() end
  end
  return true
end
