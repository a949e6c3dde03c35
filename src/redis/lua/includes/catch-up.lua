--[[
  Bringing the queue up to now, which every command does first, bounded: at
  most CATCH_UP_BATCH items a call (jobs entering or leaving the ready
  index, expired leases, aged-out finished jobs). When more are due the
  command stops there and replies { CATCHING_UP }; the client calls it again
  until it runs, so no call holds Redis for long whatever the backlog.
]]

-- Bring the queue up to now, at most CATCH_UP_BATCH items per script. First
-- the ready index follows the clock: it holds exactly the PENDING jobs with
-- runAt <= the clock, so when a call's now is later, jobs due since join it,
-- and when earlier, jobs not due any more leave it. Such a sweep over a range
-- of K.pending that does not fit in one script is saved in K.state and
-- continued by the next script, whatever its now: until it ends, no script
-- gets past this prelude, so K.pending does not change under it.

-- A job not due any more leaves K.held too, where a rate limit may have put it (and its parked set, caps.lua): STATS counts held jobs
-- as ready, and once the clock passes its runAt again the sweep files it in K.ready, where the limit
-- holds it anew if need be (left in both, it would be counted twice).
-- Once groups take turns, a job filed ready takes its turn then (turns.lua).
local function reindexOne(n, add)
  if add then
    redis.call('ZADD', K.ready, 0, fileMember(jobKey(n), n))
  else
    local member = readyMember(jobKey(n), n)
    redis.call('ZREM', K.ready, member)
    redis.call('ZREM', K.held, member)
    unpark(jobKey(n), member)
  end
end

-- The sweep from the clock to now: { min, max, offset, add, to }, or nil when the index is exact for now.
local function plan()
  if clock == nil then return { '-inf', nowText, 0, true, nowText } end
  if now > clock then return { '(' .. num(clock), nowText, 0, true, nowText } end
  if now < clock then return { '(' .. nowText, num(clock), 0, false, nowText } end
  return nil
end

local function save(sweep)
  redis.call('HSET', K.state, 'sweepMin', sweep[1], 'sweepMax', sweep[2], 'sweepOffset', sweep[3], 'sweepAdd', sweep[4] and '1' or '0', 'sweepTo', sweep[5])
end

-- True once the ready index is exact for now; false if the budget ran out first (the sweep is saved).
local function indexCaughtUp()
  -- Whether a sweep is saved in K.state (only one saved by an earlier script is: this one saves only as it returns).
  local stored = sweepSaved ~= nil
  local sweep = sweepSaved or plan()
  while sweep do
    if budget == 0 then save(sweep) return false end
    local items = redis.call('ZRANGEBYSCORE', K.pending, sweep[1], sweep[2], 'WITHSCORES', 'LIMIT', sweep[3], budget + 1)
    local count = math.min(#items / 2, budget)
    if grouped and sweep[4] then
      -- Jobs due at one time take their turns in submission order (the set orders ties by text: 10 before 9).
      local batch = {}
      for i = 1, 2 * count, 2 do batch[#batch + 1] = { tonumber(items[i + 1]), tonumber(items[i]), items[i] } end
      table.sort(batch, function(a, b) return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2]) end)
      for _, job in ipairs(batch) do reindexOne(job[3], true) end
    else
      for i = 1, 2 * count, 2 do reindexOne(items[i], sweep[4]) end
    end
    budget = budget - count
    if #items / 2 <= count then
      clock = tonumber(sweep[5])
      redis.call('HSET', K.state, 'clock', sweep[5])
      if stored then redis.call('HDEL', K.state, 'sweepMin', 'sweepMax', 'sweepOffset', 'sweepAdd', 'sweepTo') stored = false end
      sweep = plan()
    else
      -- Resume after the last item done: from its score on, skipping the items
      -- of that score already done (an offset only ever walks one score's ties).
      local score = items[2 * count]
      if items[2] == score and sweep[1] == score then
        sweep[3] = sweep[3] + count
      else
        local ties = 0
        for i = 2 * count, 2, -2 do
          if items[i] ~= score then break end
          ties = ties + 1
        end
        sweep[1] = score
        sweep[3] = ties
      end
      save(sweep)
      return false
    end
  end
  return true
end

-- Why a lease of the job at key expired: its holder process is gone too (its
-- liveness key lapsed), or not (or the lease names no holder).
local function expiryReason(key)
  local leasedBy = redis.call('HGET', key, 'holder')
  if leasedBy and redis.call('EXISTS', alivePrefix .. leasedBy) == 0 then return PROCESS_GONE end
  return 'lease expired'
end

-- Then every lease with leaseUntil <= now is a failed attempt at its leaseUntil.
-- True once none is left; false if the budget ran out first.
local function leasesCaughtUp()
  local expired = redis.call('ZRANGEBYSCORE', K.leases, '-inf', nowText, 'WITHSCORES', 'LIMIT', 0, budget + 1)
  local count = math.min(#expired / 2, budget)
  local batch = {}
  for i = 1, 2 * count, 2 do batch[#batch + 1] = { tonumber(expired[i + 1]), tonumber(expired[i]), expired[i] } end
  -- Retries take their group turns as they are filed: leases that expired at one time go in job order
  -- (the set orders ties by text: 10 before 9), as the shared-memory queue files them.
  if grouped then table.sort(batch, function(a, b) return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2]) end) end
  local dead = {}
  for _, lease in ipairs(batch) do
    local key = jobKey(lease[3])
    if failAttempt(lease[3], key, lease[1], expiryReason(key), false, true) then
      dead[#dead + 1] = lease[3]
      childEnded(lease[3], key, 'DEAD')
    end
  end
  -- One message for the batch.
  if #dead > 0 then announceFinished(dead) end
  budget = budget - count
  return #expired / 2 <= count
end

-- Then the retain option's age: finished jobs that finished maxAge before now or earlier are evicted, oldest
-- first (one finished before the option was set, with no finishedAt, too). True once none is left.
local function agedOut()
  if maxAge == nil then return true end
  while budget > 0 do
    local head = redis.call('LINDEX', K.finished, 0)
    if not head then return true end
    local finishedAt = redis.call('HGET', jobKey(head), 'finishedAt')
    if finishedAt and tonumber(finishedAt) + maxAge > now then return true end
    evictOldest()
    budget = budget - 1
  end
  return false
end

-- Evicts DEAD job n (the retain option's DEAD limits); its idempotent key is free, unless a newer job took it.
local function evictDead(n)
  local key = jobKey(n)
  local k = redis.call('HGET', key, 'key')
  if k and redis.call('HGET', K.keys, k) == n then redis.call('HDEL', K.keys, k) end
  undead(n)
  redis.call('DEL', key, logsKeyOf(key))
end

-- Then the retain option's DEAD limits: DEAD jobs beyond maxDead, oldest dead first, and those dead maxDeadAge
-- before now or earlier, are evicted (never for room). True once none is left.
local function deadAgedOut()
  if maxDead == nil and maxDeadAge == nil then return true end
  local count = redis.call('ZCARD', K.dead)
  if count == 0 then return true end
  -- DEAD jobs no deadAt holds (died before it was kept): filed, at when they died if known, else now.
  if redis.call('ZCARD', K.deadAt) < count then
    for _, n in ipairs(redis.call('ZRANGE', K.dead, 0, -1)) do
      if not redis.call('ZSCORE', K.deadAt, n) then
        redis.call('ZADD', K.deadAt, tonumber(redis.call('HGET', jobKey(n), 'finishedAt') or nowText), n)
      end
    end
  end
  while budget > 0 do
    local oldest = redis.call('ZRANGE', K.deadAt, 0, 0, 'WITHSCORES')
    if #oldest == 0 then return true end
    local over = maxDead ~= nil and count > maxDead
    if not over and (maxDeadAge == nil or tonumber(oldest[2]) + maxDeadAge > now) then return true end
    evictDead(oldest[1])
    count = count - 1
    budget = budget - 1
  end
  return false
end

-- Nothing to do but move the clock: no saved sweep, and nothing falls due between the clock and now
-- (every PENDING job after the clock is due at due or later, every lease expires at due or later).
local function quiet()
  return sweepSaved == nil and clock ~= nil and due ~= nil and now >= clock and now < due
end

-- When something next falls due, once the queue is up to now: the first delayed job's runAt or the
-- first lease's leaseUntil, whichever comes first.
local function nextDue()
  local delayed = redis.call('ZRANGEBYSCORE', K.pending, '(' .. nowText, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  local leased = redis.call('ZRANGE', K.leases, 0, 0, 'WITHSCORES')
  local t = math.huge
  -- A flow's waiting parent is at +inf (flows.lua), which Lua may not read as a number.
  if delayed[2] then t = tonumber(delayed[2]) or math.huge end
  if leased[2] then t = math.min(t, tonumber(leased[2])) end
  return t
end

-- A call whose now is before the clock may leave the ready index exact for the clock (behind, call.lua)
-- when nothing falls due before its now either (no lease expired: every one expires at due or later), no sweep
-- is saved, and the queue has none of what files or takes ready jobs one by one (groups, rate limits, caps,
-- flows). The jobs it then finds ready that are due only after its now are its to pass over (leases.lua, takeReady).
local function quietBehind()
  return sweepSaved == nil and clock ~= nil and due ~= nil and now < clock and now < due
    and not (grouped or limited or capped or flowing)
end

-- True once the queue is up to now; false if the call must stop and be called again (CATCHING_UP).
-- Most calls find nothing due (quiet) and only note the clock: the sweeps and the reading of when
-- something next falls due run when something did, or the clock went back, or the time is not known.
-- A call that may run behind (a submit, a poll) does not sweep back for a clock a little ahead of its now.
local function caughtUp(mayRunBehind)
  -- Groups starting to take turns: that walk goes on first, and no call gets past it before it ends.
  if turning and not turnSome() then return false end
  if quiet() then
    if now ~= clock then
      clock = now
      redis.call('HSET', K.state, 'clock', nowText)
    end
    return agedOut() and deadAgedOut()
  end
  if mayRunBehind and quietBehind() then
    behind = true
    return agedOut() and deadAgedOut()
  end
  -- Not known until the queue is up to now: a call that stops before leaves it unknown for the next.
  if due ~= nil then redis.call('HDEL', K.state, 'due') end
  due = nil
  local upToNow
  if grouped and sweepSaved == nil then
    -- Once groups take turns, leases expire first: their retries due by now wait in K.pending for the sweep,
    -- which files them with the delayed jobs that came due by (runAt, job number), each taking its turn in
    -- that order, as the shared-memory queue gives them. (A sweep saved by an earlier call runs on first, and
    -- the leases after it, each retry filed as it is made: K.pending must not change under a saved sweep.)
    sweepFiles = true
    local expired = leasesCaughtUp()
    sweepFiles = false
    upToNow = expired and indexCaughtUp()
  else
    upToNow = indexCaughtUp() and leasesCaughtUp()
  end
  if not upToNow then return false end
  due = nextDue()
  redis.call('HSET', K.state, 'due', dueText(due))
  return agedOut() and deadAgedOut()
end

-- The ready index made exact for now after all, in a call that went on behind the clock (takeReady needs it):
-- the sweep back it skipped, and when something next falls due (the jobs swept out fall due later). False if
-- the budget ran out first (the sweep is saved for the calls after it, as in caughtUp).
function exactNow()
  behind = false
  redis.call('HDEL', K.state, 'due')
  due = nil
  if not indexCaughtUp() then return false end
  due = nextDue()
  redis.call('HSET', K.state, 'due', dueText(due))
  return true
end
