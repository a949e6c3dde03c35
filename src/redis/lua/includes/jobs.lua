--[[
  One job's moves between states, and how a call finds the job it names.
  Refusals (negative first reply elements, errors.ts's Refusal): NotFound,
  Evicted, StaleLease.
]]

-- The listing sets (numsOf) other than K.dead, which deadLetters needs anyway, are kept only once
-- jobs() was first called on the queue (listed; see listing.lua).
-- Files numbers (n, n, ...: score and member each) in a listing set / takes numbers out of one, if the sets are kept.
local function list(set, scored) if listed then callMany('ZADD', set, scored, 2) end end
local function unlist(set, numbers) if listed then redis.call('ZREM', set, unpack(numbers)) end end

-- Whether the sweep the catch-up is about to run files a job due at runAt (it adds the jobs due in
-- (clock, now] to the ready index), while sweepFiles says it will (catch-up.lua): the job then takes its
-- group turn in that sweep, in (runAt, job number) order with the delayed jobs that came due.
local function sweepFilesLater(runAt)
  return sweepFiles and (clock == nil or (now > clock and runAt > clock))
end

local function enqueue(n, key, runAt)
  redis.call('ZADD', K.pending, runAt, n)
  list(K.pendingNums, { n, n })
  if runAt > indexedTo() then dueBy(runAt) elseif not sweepFilesLater(runAt) then redis.call('ZADD', K.ready, 0, fileMember(key, n)) end
end

-- PENDING job n out of every index enqueue filed it in, and out of K.held, where a rate limit may have put it,
-- and its type's or group's parked set, where a cap may have (caps.lua).
local function dequeue(n, key)
  local member = readyMember(key, n)
  redis.call('ZREM', K.ready, member)
  redis.call('ZREM', K.held, member)
  unpark(key, member)
  redis.call('ZREM', K.pending, n)
  unlist(K.pendingNums, { n })
end

-- DEAD job n out of the dead letters and out of their order by when they died (K.deadAt).
local function undead(n)
  redis.call('ZREM', K.dead, n)
  redis.call('ZREM', K.deadAt, n)
end

-- The Lua twin of RetryPolicy.backoffAfter, with the client's seed for jitter: of the policy
-- `policy` (typePolicy's) or, nil, of the queue's.
local function backoffAfter(attempt, policy)
  local base, cap, spread = baseBackoff, maxBackoff, jitter
  if policy then base, cap, spread = policy[2], policy[3], policy[4] end
  local delay = cap
  if base == 0 then delay = 0
  elseif attempt - 1 < 64 then delay = math.min(cap, base * 2 ^ (attempt - 1)) end
  if spread == 'full' then return math.floor(math.random() * (delay + 1)) end
  if spread == 'equal' then
    local half = math.ceil(delay / 2)
    return half + math.floor(math.random() * (delay - half + 1))
  end
  return delay
end

-- The retry policy of its own that jobs of `jobType` have, as { maxAttempts, baseBackoff, maxBackoff,
-- jitter }; nil if it has none. A queue whose types have none (not policied) reads nothing.
local function typePolicy(jobType)
  if not policied then return nil end
  local text = redis.call('HGET', K.policies, jobType)
  if not text then return nil end
  local a, b, c, d = string.match(text, '^(%d+),(%d+),(%d+),(%a+)$')
  -- Only setRetryPolicy writes K.policies; text of another shape is no policy.
  if not a then return nil end
  return { tonumber(a), tonumber(b), tonumber(c), d }
end

-- Jobs moved into SUCCEEDED, DEAD or CANCELLED: their numbers, comma-separated, on the channel
-- clients waiting in finished() listen on (a PUBLISH no one listens to costs next to nothing).
local function announceFinished(numbers)
  redis.call('PUBLISH', K.finishes, table.concat(numbers, ','))
end

-- A failed attempt of RUNNING job n at failedAt: retried after its backoff,
-- or DEAD when no attempts are left (or at once when permanent).
-- The attempts job n gets: its own maxAttempts (0 or, a job older than the field, none), else the policy's.
local function attemptLimit(own)
  local limit = tonumber(own or '0')
  if limit > 0 then return limit end
  return maxAttempts
end

-- True if it dead-lettered the job (the caller announces it).
-- `expired`: the attempt failed because its lease ran out (its event says it stalled).
local function failAttempt(n, key, failedAt, err, permanent, expired)
  if leavesRunning(key) then announce() end
  redis.call('ZREM', K.leases, n)
  redis.call('HDEL', K.tokens, n)
  unlist(K.runningNums, { n })
  local f = redis.call('HMGET', key, 'attempts', 'maxAttempts', 'type')
  local attempts = tonumber(f[1])
  local retried = not permanent and attempts < attemptLimit(f[2])
  noteEvent(retried and 'retrying' or 'dead', n, key, failedAt, err, expired)
  if retried then
    -- Its attempts were fixed at its submit (its own, or its type's policy's then); its backoff is its type's now.
    local runAt = failedAt + backoffAfter(attempts, typePolicy(f[3]))
    redis.call('HSET', key, 'status', 'PENDING', 'runAt', num(runAt), 'lastError', err)
    enqueue(n, key, runAt)
  else
    -- When it finished (JobView's finishedAt; a keyed job's key stays taken keyTtl from then).
    redis.call('HSET', key, 'status', 'DEAD', 'lastError', err, 'finishedAt', num(failedAt))
    redis.call('ZADD', K.dead, n, n)
    redis.call('ZADD', K.deadAt, failedAt, n)
    return true
  end
  return false
end

-- Evicts the job that finished first (the head of K.finished); its idempotent key is free, unless a newer job took it.
local function evictOldest()
  local n = redis.call('LPOP', K.finished)
  local key = jobKey(n)
  local f = redis.call('HMGET', key, 'status', 'key')
  redis.call('HINCRBY', K.counts, string.lower(f[1]), -1)
  unlist(numsOf[f[1]], { n })
  if f[2] and redis.call('HGET', K.keys, f[2]) == n then redis.call('HDEL', K.keys, f[2]) end
  redis.call('DEL', key, logsKeyOf(key))
end

-- Room for `count` new jobs in a queue that holds `capacity`: finished jobs evicted, oldest finished first,
-- only as far as room is needed and only if that makes enough. False, with nothing evicted, if it does not.
local function roomFor(count, capacity)
  local finished = redis.call('LLEN', K.finished)
  local held = redis.call('ZCARD', K.pending) + redis.call('ZCARD', K.leases) + redis.call('ZCARD', K.dead) + finished
  local excess = held + count - capacity
  if excess > finished then return false end
  for _ = 1, excess do evictOldest() end
  return true
end

-- A new PENDING job's hash fields, and its runAt: `runAt` as given, or '' for `delay` after now; `attempts` its
-- own, or '0' for its type's policy's if the type has one (looked up once per type in a call: `typeAttempts`).
local function newJobFields(jobType, payload, priority, runAt, delay, attempts, typeAttempts)
  if runAt == '' then runAt = delay == '0' and nowText or num(now + tonumber(delay)) end
  if attempts == '0' and policied then
    if not typeAttempts[jobType] then
      local policy = typePolicy(jobType)
      typeAttempts[jobType] = policy and tostring(policy[1]) or '0'
    end
    attempts = typeAttempts[jobType]
  end
  return { 'type', jobType, 'payload', payload, 'priority', priority,
    'status', 'PENDING', 'attempts', 0, 'runAt', runAt, 'maxAttempts', attempts, 'submittedAt', nowText }, runAt
end

-- The retain option's count: finished jobs beyond maxFinished are evicted, oldest finished first.
local function trimFinished()
  if maxFinished == nil then return end
  for _ = 1, redis.call('LLEN', K.finished) - maxFinished do evictOldest() end
end

-- SUCCEEDED or CANCELLED (at now): held until evicted, oldest finished first. The finish time is
-- JobView's finishedAt, and what a keyed job's key TTL and the retain option's maxAgeMillis run from.
local function finish(n, key, status, wasRunning)
  noteEvent(string.lower(status), n, key, wasRunning and now or nil)
  redis.call('HSET', key, 'status', status, 'finishedAt', nowText)
  list(numsOf[status], { n, n })
  redis.call('RPUSH', K.finished, n)
  redis.call('HINCRBY', K.counts, string.lower(status), 1)
  announceFinished({ n })
  trimFinished()
end

-- The n of the job that holds the idempotent key k now, or nil if k is free: a job holds its
-- key while PENDING or RUNNING, and once finished until finishedAt + keyTtl; an evicted job, never.
-- For a throttled submit (throttle > 0, milliseconds): while now < submittedAt + throttle, whatever its status.
local function keyHolder(k, throttle)
  local n = redis.call('HGET', K.keys, k)
  if not n then return nil end
  local f = redis.call('HMGET', jobKey(n), 'status', 'keyTtl', 'finishedAt', 'submittedAt')
  if not f[1] then return nil end
  -- The window runs from the holder's submit, not its finish: at most one job per window.
  if throttle and throttle > 0 then
    if now < tonumber(f[4] or '0') + throttle then return n end
    return nil
  end
  if f[1] == 'PENDING' or f[1] == 'RUNNING' then return n end
  local ttl = tonumber(f[2] or '0')
  if ttl > 0 and now < tonumber(f[3] or '0') + ttl then return n end
  return nil
end

-- The job that holds idempotent key k if it is PENDING (a debounced submit edits it), else nil.
local function pendingKeyHolder(k)
  local n = redis.call('HGET', K.keys, k)
  if not n then return nil end
  if redis.call('HGET', jobKey(n), 'status') ~= 'PENDING' then return nil end
  return n
end

-- Why job n has no hash: the Refusal for an id never issued, or for a job evicted.
local function absence(n)
  local number = tonumber(n)
  local issued = tonumber(redis.call('GET', K.jobSeq) or '0')
  if (number - 1) % partitions ~= partition or number > tonumber(jobNumberOf(issued)) then return Refusal.NotFound end
  return Refusal.Evicted
end

-- The hash of job n (declared as key), or nil and the Refusal.
local function find(n, key)
  if redis.call('EXISTS', key) == 1 then return key end
  return nil, absence(n)
end

-- The hash of job n if token is its current lease (after expiry, RUNNING means valid), then
-- nil and whether its token is in K.tokens (leases.lua, pollBest). Every job's hash has a
-- status: none means no hash.
local function leased(n, token, key)
  local f = redis.call('HMGET', key, 'status', 'token', 'filed')
  if not f[1] then return nil, absence(n) end
  if f[1] ~= 'RUNNING' or f[2] ~= token then return nil, Refusal.StaleLease end
  return key, nil, f[3] == '1'
end
