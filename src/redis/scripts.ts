/**
 * The Lua scripts of the Redis queue: one per operation, each one atomic
 * transition. Every script is the shared PRELUDE (helpers, then "bring the
 * queue up to now") followed by its own body, and returns a table whose first
 * element is 0 or a negative `Refusal` (which `refusalError` turns into the
 * error; a refused script has changed nothing but the bringing up to now,
 * which any call would have done).
 *
 * Bringing the queue up to now is bounded: a script does at most
 * CATCH_UP_BATCH items of it (jobs entering or leaving the ready index,
 * expired leases). When more are due it stops there and returns CATCHING_UP
 * instead of running its body; the client calls it again until it runs, so
 * no script holds Redis for long whatever the backlog, and every body still
 * runs on a queue that is up to its `now`.
 *
 * Lua in Redis is 5.1 with doubles only. Numbers cross the boundary as text:
 * the client sends JavaScript's exact shortest form, Redis writes a Lua number
 * argument with %.17g (exact), and scripts return numbers as %.17g text
 * (`num`) because a Lua number in a reply is cut to an integer and `tostring`
 * keeps only 14 digits.
 */
import { createHash } from 'node:crypto';
import { Refusal } from '../errors.js';
import { SCAN_BUDGET } from '../validate.js';
import { KEY_NAMES } from './keys.js';
import { LIVENESS_TTL_MILLIS, PROCESS_GONE } from './liveness.js';

/** The most items of catching up (see above) one script does: each costs a few µs of Redis time. */
export const CATCH_UP_BATCH = 50;

/** A script's first reply element when it stopped to let Redis serve others before it caught up: call it again. */
export const CATCHING_UP = 1;

/** The arguments every script takes first, in this order (RedisJobQueue fills them in for every call); its own follow. */
export const COMMON_ARGS = ['jobPrefix', 'alivePrefix', 'holder', 'now', 'seed', 'maxAttempts', 'baseBackoffMillis', 'maxBackoffMillis', 'jitter', 'partitions', 'partition', 'maxFinished', 'maxAgeMillis'] as const;

const arg = (name: (typeof COMMON_ARGS)[number]) => `ARGV[${COMMON_ARGS.indexOf(name) + 1}]`;

const PRELUDE = `
local K = { ${KEY_NAMES.map((name, i) => `${name} = KEYS[${i + 1}]`).join(', ')} }
-- The hashes of the jobs the call names are KEYS[FIXED + 1], KEYS[FIXED + 2], ...
local FIXED = ${KEY_NAMES.length}
local jobPrefix = ${arg('jobPrefix')}
-- The calling process's liveness key is alivePrefix .. holder (see liveness.ts).
local alivePrefix = ${arg('alivePrefix')}
local holder = ${arg('holder')}
local nowText = ${arg('now')}
local now = tonumber(nowText)
-- Redis seeds math.random alike on every call; jitter needs the client's seed.
math.randomseed(tonumber(${arg('seed')}))
local maxAttempts = tonumber(${arg('maxAttempts')})
local baseBackoff = tonumber(${arg('baseBackoffMillis')})
local maxBackoff = tonumber(${arg('maxBackoffMillis')})
local jitter = ${arg('jitter')}
-- Job numbers: partition + 1, then every partitions-th (1, 2, 3, ... for a queue of one partition).
local partitions = tonumber(${arg('partitions')})
local partition = tonumber(${arg('partition')})
-- The retain option: finished jobs kept at most (nil: no limit), and for how long after they finished.
local maxFinished = tonumber(${arg('maxFinished')})
local maxAge = tonumber(${arg('maxAgeMillis')})
-- A script's own arguments are ARGV[OWN + 1], ARGV[OWN + 2], ...
local OWN = ${COMMON_ARGS.length}

local function int(n) return string.format('%d', n) end
local function num(x) return string.format('%.17g', x) end
local function jobKey(n) return jobPrefix .. n end
-- The number of the seq-th job submitted to this partition.
local function jobNumberOf(seq) return int((seq - 1) * partitions + partition + 1) end

-- 16 hex digits that sort as text in the order of the numbers: the IEEE bits,
-- with the sign bit flipped for positives and every bit flipped for negatives.
-- Kept for the script's run: a batch's jobs mostly share a priority and a runAt.
local sortables = {}
local function sortable(x)
  if x == 0 then x = 0 end -- -0 and 0 are one number
  local known = sortables[x]
  if known then return known end
  local b = { string.byte(struct.pack('>d', x), 1, 8) }
  if b[1] >= 128 then
    for i = 1, 8 do b[i] = 255 - b[i] end
  else
    b[1] = b[1] + 128
  end
  known = string.format(string.rep('%02x', 8), unpack(b))
  sortables[x] = known
  return known
end

-- The member of job n in K.ready: highest priority, then earliest runAt, then
-- submission order; the last 16 characters are n itself.
local function memberOf(priority, runAt, n)
  return sortable(-priority) .. sortable(runAt) .. string.format('%016d', tonumber(n))
end

local function readyMember(key, n)
  local f = redis.call('HMGET', key, 'priority', 'runAt')
  return memberOf(tonumber(f[1]), tonumber(f[2]), n)
end

-- One command per up to 500 of args (Lua's unpack is bounded): ZADD key score member ..., RPUSH key n ...
local function callMany(command, key, args, width)
  for from = 1, #args, 500 * width do
    redis.call(command, key, unpack(args, from, math.min(#args, from + 500 * width - 1)))
  end
end

-- Each status's listing set: its jobs by number, for jobs() to page through.
local numsOf = { PENDING = K.pendingNums, RUNNING = K.runningNums, SUCCEEDED = K.succeededNums, DEAD = K.dead, CANCELLED = K.cancelledNums }
-- The listing sets other than K.dead (which deadLetters needs anyway) are kept only once jobs() was
-- first called on the queue (K.listing exists; see LISTING): a queue that never lists pays nothing for them.
local listed = redis.call('EXISTS', K.listing) == 1
-- Files numbers (n, n, ...: score and member each) in a listing set / takes numbers out of one, if the sets are kept.
local function list(set, scored) if listed then callMany('ZADD', set, scored, 2) end end
local function unlist(set, numbers) if listed then redis.call('ZREM', set, unpack(numbers)) end end

local function enqueue(n, key, runAt)
  redis.call('ZADD', K.pending, runAt, n)
  list(K.pendingNums, { n, n })
  if runAt <= now then redis.call('ZADD', K.ready, 0, readyMember(key, n)) end
end

-- The Lua twin of RetryPolicy.backoffAfter, with the client's seed for jitter.
local function backoffAfter(attempt)
  local delay = maxBackoff
  if baseBackoff == 0 then delay = 0
  elseif attempt - 1 < 64 then delay = math.min(maxBackoff, baseBackoff * 2 ^ (attempt - 1)) end
  if jitter == 'full' then return math.floor(math.random() * (delay + 1)) end
  if jitter == 'equal' then
    local half = math.ceil(delay / 2)
    return half + math.floor(math.random() * (delay - half + 1))
  end
  return delay
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
local function failAttempt(n, key, failedAt, err, permanent)
  redis.call('ZREM', K.leases, n)
  unlist(K.runningNums, { n })
  local f = redis.call('HMGET', key, 'attempts', 'maxAttempts', 'key')
  local attempts = tonumber(f[1])
  if not permanent and attempts < attemptLimit(f[2]) then
    local runAt = failedAt + backoffAfter(attempts)
    redis.call('HSET', key, 'status', 'PENDING', 'runAt', num(runAt), 'lastError', err)
    enqueue(n, key, runAt)
  else
    redis.call('HSET', key, 'status', 'DEAD', 'lastError', err)
    -- A keyed job notes when it finished: its key stays taken keyTtl from then.
    if f[3] then redis.call('HSET', key, 'finishedAt', num(failedAt)) end
    redis.call('ZADD', K.dead, n, n)
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
  redis.call('DEL', key)
end

-- The retain option's count: finished jobs beyond maxFinished are evicted, oldest finished first.
local function trimFinished()
  if maxFinished == nil then return end
  for _ = 1, redis.call('LLEN', K.finished) - maxFinished do evictOldest() end
end

-- SUCCEEDED or CANCELLED (at now): held until evicted, oldest finished first. The finish time is
-- noted where something runs from it: a keyed job's key TTL, the retain option's maxAgeMillis.
local function finish(n, key, status)
  redis.call('HSET', key, 'status', status)
  if maxAge or redis.call('HEXISTS', key, 'key') == 1 then redis.call('HSET', key, 'finishedAt', nowText) end
  list(numsOf[status], { n, n })
  redis.call('RPUSH', K.finished, n)
  redis.call('HINCRBY', K.counts, string.lower(status), 1)
  announceFinished({ n })
  trimFinished()
end

-- The n of the job that holds the idempotent key k now, or nil if k is free: a job holds its
-- key while PENDING or RUNNING, and once finished until finishedAt + keyTtl; an evicted job, never.
local function keyHolder(k)
  local n = redis.call('HGET', K.keys, k)
  if not n then return nil end
  local f = redis.call('HMGET', jobKey(n), 'status', 'keyTtl', 'finishedAt')
  if not f[1] then return nil end
  if f[1] == 'PENDING' or f[1] == 'RUNNING' then return n end
  local ttl = tonumber(f[2] or '0')
  if ttl > 0 and now < tonumber(f[3] or '0') + ttl then return n end
  return nil
end

-- New work: wakes clients in waitForWork (a poll that found nothing reads the counter).
local function announce()
  redis.call('PUBLISH', K.signal, redis.call('INCR', K.signal))
end

-- Why job n has no hash: the Refusal for an id never issued, or for a job evicted.
local function absence(n)
  local number = tonumber(n)
  local issued = tonumber(redis.call('GET', K.jobSeq) or '0')
  if (number - 1) % partitions ~= partition or number > tonumber(jobNumberOf(issued)) then return ${Refusal.NotFound} end
  return ${Refusal.Evicted}
end

-- The hash of job n (declared as key), or nil and the Refusal.
local function find(n, key)
  if redis.call('EXISTS', key) == 1 then return key end
  return nil, absence(n)
end

-- The hash of job n if token is its current lease (after expiry, RUNNING means valid), then
-- nil and whether the job has an idempotent key. Every job's hash has a status: none means no hash.
local function leased(n, token, key)
  local f = redis.call('HMGET', key, 'status', 'token', 'key')
  if not f[1] then return nil, absence(n) end
  if f[1] ~= 'RUNNING' or f[2] ~= token then return nil, ${Refusal.StaleLease} end
  return key, nil, f[3] ~= false
end

-- Rate limits (see keys.ts): fixed windows aligned to the clock, the one of
-- now starting at floor(now / window) * window. A lease a type's limit admits
-- is counted at once; nil if it admits one now, else when its next window opens.
local function windowOpensAt(key)
  local jobType = redis.call('HGET', key, 'type')
  local limit = redis.call('HGET', K.limits, jobType)
  if not limit then return nil end
  local max, window = string.match(limit, '^(%d+),(%d+)$')
  max, window = tonumber(max), tonumber(window)
  local start = math.floor(now / window) * window
  local current = redis.call('HGET', K.windows, jobType)
  local from, used = start, 0
  if current then
    local s, u = string.match(current, '^(.+),(%d+)$')
    -- A clock gone back keeps counting the later window.
    if tonumber(s) >= start and tonumber(u) > 0 then from, used = tonumber(s), tonumber(u) end
  end
  if used >= max then return from + window end
  redis.call('HSET', K.windows, jobType, num(from) .. ',' .. int(used + 1))
  return nil
end

-- Jobs one script moves into or out of K.held, at most: each costs a few µs of
-- Redis time, and a backlog of a limited type is passed over once per window.
local holdBudget = ${CATCH_UP_BATCH}

-- Files the held jobs whose window opened by upTo back into the ready index,
-- best first: each only if it is still PENDING, due, and has the member it
-- was held with (a job cancelled, or leased and retried since, has moved on).
-- True once none is left; false if the budget ran out first.
local function releaseHeld(upTo)
  local due = redis.call('ZRANGEBYSCORE', K.held, '-inf', upTo, 'LIMIT', 0, holdBudget + 1)
  local count = math.min(#due, holdBudget)
  for i = 1, count do
    local member = due[i]
    local n = int(tonumber(string.sub(member, 33)))
    local key = jobKey(n)
    local f = redis.call('HMGET', key, 'status', 'runAt')
    if f[1] == 'PENDING' and tonumber(f[2]) <= now and readyMember(key, n) == member then redis.call('ZADD', K.ready, 0, member) end
    redis.call('ZREM', K.held, member)
  end
  holdBudget = holdBudget - count
  return #due <= count
end

-- The numbers of up to max best ready jobs, taken out of the ready index.
-- With rate limits, one at a time: a job whose type's window is used up is
-- held (see K.held) and the next is taken; each one taken is counted. Also
-- whether the budget ran out before anything could be taken: look again.
local function takeBest(max)
  local numbers = {}
  if redis.call('EXISTS', K.limits) == 0 then
    local best = redis.call('ZPOPMIN', K.ready, max)
    for i = 1, #best, 2 do numbers[#numbers + 1] = int(tonumber(string.sub(best[i], 33))) end
    return numbers, false
  end
  -- Jobs still held whose window opened may come first: none is taken before they are back.
  if not releaseHeld(nowText) then return numbers, true end
  while #numbers < max do
    if holdBudget == 0 then return numbers, #numbers == 0 end
    local best = redis.call('ZPOPMIN', K.ready)
    if #best == 0 then break end
    local n = int(tonumber(string.sub(best[1], 33)))
    local opensAt = windowOpensAt(jobKey(n))
    if opensAt then
      redis.call('ZADD', K.held, opensAt, best[1])
      holdBudget = holdBudget - 1
    else
      numbers[#numbers + 1] = n
    end
  end
  return numbers, false
end

-- Leases up to max ready jobs to workerId (none while the queue is paused), best first, each for its
-- own timeout if it has one, else for leaseMillis: each one's n, token, type, payload, attempt,
-- maxAttempts, leaseUntil, timeout ('' for none) and headers ('' for none) appended to out after the wake
-- counter (read first: work announced later is newer than this poll) and when
-- the first held job's window opens ('' if none is held; 'again' when the
-- budget of held jobs ran out before any was taken: poll again). A poll that
-- may run again (restartable: it changed nothing else) returns CATCHING_UP
-- instead of 'again'. The indexes change once for the whole batch; the tokens
-- are consecutive.
local function pollBest(workerId, leaseMillis, max, out, restartable)
  out[#out + 1] = redis.call('GET', K.signal) or '0'
  local numbers, again = {}, false
  if max > 0 and redis.call('EXISTS', K.paused) == 0 then numbers, again = takeBest(max) end
  if again and restartable then return { ${CATCHING_UP} } end
  if again then
    out[#out + 1] = 'again'
  else
    local firstHeld = redis.call('ZRANGE', K.held, 0, 0, 'WITHSCORES')
    out[#out + 1] = firstHeld[2] or ''
  end
  local count = #numbers
  if count == 0 then return out end
  local lastToken = redis.call('INCRBY', K.tokenSeq, count)
  -- The holder is alive now: its key must not have lapsed before its first refresh.
  redis.call('SET', alivePrefix .. holder, '1', 'PX', ${LIVENESS_TTL_MILLIS})
  local pollUntil = now + tonumber(leaseMillis)
  local pollUntilText = num(pollUntil)
  local leases, running = {}, {}
  for i = 1, count do
    local n = numbers[i]
    local key = jobKey(n)
    local token = int(lastToken - count + i)
    local f = redis.call('HMGET', key, 'attempts', 'type', 'payload', 'maxAttempts', 'timeout', 'headers')
    local attempt = tonumber(f[1]) + 1
    -- The job's own lease length wins over the poll's.
    local leaseUntil, untilText = pollUntil, pollUntilText
    if f[5] then
      leaseUntil = now + tonumber(f[5])
      untilText = num(leaseUntil)
    end
    redis.call('HSET', key, 'status', 'RUNNING', 'attempts', attempt, 'token', token, 'leaseUntil', untilText, 'workerId', workerId, 'holder', holder)
    leases[2 * i - 1] = leaseUntil
    leases[2 * i] = n
    running[2 * i - 1] = n
    running[2 * i] = n
    for _, field in ipairs({ n, token, f[2], f[3], attempt, attemptLimit(f[4]), untilText, f[5] or '', f[6] or '' }) do out[#out + 1] = field end
  end
  redis.call('ZREM', K.pending, unpack(numbers))
  unlist(K.pendingNums, numbers)
  redis.call('ZADD', K.leases, unpack(leases))
  list(K.runningNums, running)
  return out
end

-- Completes the leases named by ARGV[first .. last] (n, token, result each:
-- the result's JSON text, '' for none; their hashes declared in that order):
-- each checked on its own, its outcome (0 or the Refusal) appended to out;
-- the indexes change once for all of them.
local function completeAll(first, last, out)
  local done, succeeded = {}, {}
  for i = first, last, 3 do
    local n = ARGV[i]
    local key, refusal, keyed = leased(n, ARGV[i + 1], KEYS[FIXED + (i - first) / 3 + 1])
    if key then
      if ARGV[i + 2] == '' then redis.call('HSET', key, 'status', 'SUCCEEDED')
      else redis.call('HSET', key, 'status', 'SUCCEEDED', 'result', ARGV[i + 2]) end
      -- The finish time, where something runs from it: a keyed job's key TTL, the retain option's maxAgeMillis.
      if keyed or maxAge then redis.call('HSET', key, 'finishedAt', nowText) end
      done[#done + 1] = n
      succeeded[#succeeded + 1] = n
      succeeded[#succeeded + 1] = n
    end
    out[#out + 1] = refusal or 0
  end
  if #done == 0 then return out end
  redis.call('ZREM', K.leases, unpack(done))
  unlist(K.runningNums, done)
  list(K.succeededNums, succeeded)
  redis.call('RPUSH', K.finished, unpack(done))
  redis.call('HINCRBY', K.counts, 'succeeded', #done)
  announceFinished(done)
  trimFinished()
  return out
end

-- Bring the queue up to now, at most CATCH_UP_BATCH items per script. First
-- the ready index follows the clock: it holds exactly the PENDING jobs with
-- runAt <= the clock, so when a call's now is later, jobs due since join it,
-- and when earlier, jobs not due any more leave it. Such a sweep over a range
-- of K.pending that does not fit in one script is saved in K.sweep and
-- continued by the next script, whatever its now: until it ends, no script
-- gets past this prelude, so K.pending does not change under it.
local budget = ${CATCH_UP_BATCH}

-- A job not due any more leaves K.held too, where a rate limit may have put it: STATS counts held jobs
-- as ready, and once the clock passes its runAt again the sweep files it in K.ready, where the limit
-- holds it anew if need be (left in both, it would be counted twice).
local function reindexOne(n, add)
  local member = readyMember(jobKey(n), n)
  if add then
    redis.call('ZADD', K.ready, 0, member)
  else
    redis.call('ZREM', K.ready, member)
    redis.call('ZREM', K.held, member)
  end
end

-- The sweep from the clock to now: { min, max, offset, add, to }, or nil when the index is exact for now.
local function plan()
  local last = redis.call('GET', K.clock)
  if last == false then return { '-inf', nowText, 0, true, nowText } end
  if now > tonumber(last) then return { '(' .. last, nowText, 0, true, nowText } end
  if now < tonumber(last) then return { '(' .. nowText, last, 0, false, nowText } end
  return nil
end

local function save(sweep)
  redis.call('HSET', K.sweep, 'min', sweep[1], 'max', sweep[2], 'offset', sweep[3], 'add', sweep[4] and '1' or '0', 'to', sweep[5])
end

-- True once the ready index is exact for now; false if the budget ran out first (the sweep is saved).
local function indexCaughtUp()
  local saved = redis.call('HMGET', K.sweep, 'min', 'max', 'offset', 'add', 'to')
  local sweep
  -- Whether K.sweep exists (only a sweep saved by an earlier script does: this one saves only as it returns).
  local stored = saved[1] ~= false
  if stored then sweep = { saved[1], saved[2], tonumber(saved[3]), saved[4] == '1', saved[5] } else sweep = plan() end
  while sweep do
    if budget == 0 then save(sweep) return false end
    local items = redis.call('ZRANGEBYSCORE', K.pending, sweep[1], sweep[2], 'WITHSCORES', 'LIMIT', sweep[3], budget + 1)
    local count = math.min(#items / 2, budget)
    for i = 1, 2 * count, 2 do reindexOne(items[i], sweep[4]) end
    budget = budget - count
    if #items / 2 <= count then
      redis.call('SET', K.clock, sweep[5])
      if stored then redis.call('DEL', K.sweep) stored = false end
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
  if leasedBy and redis.call('EXISTS', alivePrefix .. leasedBy) == 0 then return '${PROCESS_GONE}' end
  return 'lease expired'
end

-- Then every lease with leaseUntil <= now is a failed attempt at its leaseUntil.
-- True once none is left; false if the budget ran out first.
local function leasesCaughtUp()
  local expired = redis.call('ZRANGEBYSCORE', K.leases, '-inf', nowText, 'WITHSCORES', 'LIMIT', 0, budget + 1)
  local count = math.min(#expired / 2, budget)
  local dead = {}
  for i = 1, 2 * count, 2 do
    local key = jobKey(expired[i])
    if failAttempt(expired[i], key, tonumber(expired[i + 1]), expiryReason(key), false) then dead[#dead + 1] = expired[i] end
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

if not (indexCaughtUp() and leasesCaughtUp() and agedOut()) then return { ${CATCHING_UP} } end
`;

/**
 * submit / submitMany, all or none. ARGV: capacity, then per job type,
 * payload, priority, runAt ('' for delay after now), delay, maxAttempts
 * (0: the policy's), key ('': none), keyTtl, timeout (0: the poll's), headers ('': none). A job
 * whose key is taken (see keyHolder) is not stored: its id is the holder's;
 * a key given twice in one call is the first one's (the later jobs get the
 * first one's id, and are not stored). Finished jobs are evicted, oldest
 * first, only as far as room is needed and only if that makes enough; an
 * evicted job's key is free.
 */
const SUBMIT = `
local capacity = tonumber(ARGV[OWN + 1])
local first = OWN + 2
local WIDTH = 10
local total = (#ARGV - first + 1) / WIDTH
-- Per job: the id it gets without being stored (a key's holder's), or the index of the earlier job whose key it repeats.
local holders, repeats, firstWithKey = {}, {}, {}
local count = 0
for j = 1, total do
  local k = ARGV[first + (j - 1) * WIDTH + 6]
  if k ~= '' and firstWithKey[k] then
    repeats[j] = firstWithKey[k]
  else
    if k ~= '' then
      firstWithKey[k] = j
      holders[j] = keyHolder(k)
    end
    if not holders[j] then count = count + 1 end
  end
end
local finished = redis.call('LLEN', K.finished)
local held = redis.call('ZCARD', K.pending) + redis.call('ZCARD', K.leases) + redis.call('ZCARD', K.dead) + finished
local excess = held + count - capacity
if excess > finished then return { ${Refusal.NoSlot} } end
for _ = 1, excess do evictOldest() end
local ids = { 0 }
local seq = redis.call('INCRBY', K.jobSeq, count) - count
local pending, ready, numbers = {}, {}, {}
for j = 1, total do
  local i = first + (j - 1) * WIDTH
  if repeats[j] then
    ids[j + 1] = ids[repeats[j] + 1]
  elseif holders[j] then
    ids[j + 1] = holders[j]
  else
    seq = seq + 1
    local n = jobNumberOf(seq)
    local runAt = ARGV[i + 3]
    if runAt == '' then runAt = ARGV[i + 4] == '0' and nowText or num(now + tonumber(ARGV[i + 4])) end
    local key = jobKey(n)
    redis.call('HSET', key, 'type', ARGV[i], 'payload', ARGV[i + 1], 'priority', ARGV[i + 2],
      'status', 'PENDING', 'attempts', 0, 'runAt', runAt, 'maxAttempts', ARGV[i + 5])
    if ARGV[i + 6] ~= '' then
      redis.call('HSET', key, 'key', ARGV[i + 6], 'keyTtl', ARGV[i + 7])
      redis.call('HSET', K.keys, ARGV[i + 6], n)
    end
    if ARGV[i + 8] ~= '0' then redis.call('HSET', key, 'timeout', ARGV[i + 8]) end
    if ARGV[i + 9] ~= '' then redis.call('HSET', key, 'headers', ARGV[i + 9]) end
    local due = tonumber(runAt)
    pending[#pending + 1] = due
    pending[#pending + 1] = n
    numbers[#numbers + 1] = n
    numbers[#numbers + 1] = n
    if due <= now then
      ready[#ready + 1] = 0
      ready[#ready + 1] = memberOf(tonumber(ARGV[i + 2]), due, n)
    end
    ids[j + 1] = n
  end
end
callMany('ZADD', K.pending, pending, 2)
list(K.pendingNums, numbers)
callMany('ZADD', K.ready, ready, 2)
if count > 0 then announce() end
return ids
`;

/**
 * ARGV: workerId, leaseMillis, max. Returns 0, the wake counter, and the
 * leases (n, token, type, payload, attempt, maxAttempts, leaseUntil, timeout, headers each) of up to max
 * ready jobs, best first.
 */
const POLL = `
return pollBest(ARGV[OWN + 1], ARGV[OWN + 2], tonumber(ARGV[OWN + 3]), { 0 }, true)
`;

/** ARGV: n, token, result ('' for none); the job's hash declared. */
const COMPLETE = `
return completeAll(OWN + 1, OWN + 3, {})
`;

/**
 * ARGV: n, token, result, workerId, leaseMillis; the job's hash declared: a
 * complete, then a poll of one job, in one round trip. Returns what POLL does.
 */
const COMPLETE_AND_POLL = `
local outcome = completeAll(OWN + 1, OWN + 3, {})
if outcome[1] ~= 0 then return outcome end
return pollBest(ARGV[OWN + 4], ARGV[OWN + 5], 1, outcome, false)
`;

/**
 * ARGV: workerId, leaseMillis, max, then n, token, result of each job to
 * complete; their hashes declared in that order. Each complete is checked on
 * its own: a refused one changes nothing and does not stop the others.
 * Returns 0, the count of completes, each one's outcome (0 or its Refusal),
 * then what POLL does.
 */
const COMPLETE_MANY_AND_POLL = `
local first = OWN + 4
local out = completeAll(first, #ARGV, { 0, (#ARGV - first + 1) / 3 })
return pollBest(ARGV[OWN + 1], ARGV[OWN + 2], tonumber(ARGV[OWN + 3]), out, false)
`;

/** ARGV: n, token, error text, permanent ('1' or '0'); the job's hash declared. */
const FAIL = `
local n = ARGV[OWN + 1]
local key, refusal = leased(n, ARGV[OWN + 2], KEYS[FIXED + 1])
if key == nil then return { refusal } end
if failAttempt(n, key, now, ARGV[OWN + 3], ARGV[OWN + 4] == '1') then announceFinished({ n }) end
announce()
return { 0 }
`;

/** ARGV: n, token; the job's hash declared. The lease handed back unfinished: PENDING, ready now, the attempt not counted. */
const RELEASE = `
local n = ARGV[OWN + 1]
local key, refusal = leased(n, ARGV[OWN + 2], KEYS[FIXED + 1])
if key == nil then return { refusal } end
redis.call('ZREM', K.leases, n)
unlist(K.runningNums, { n })
redis.call('HINCRBY', key, 'attempts', -1)
redis.call('HSET', key, 'status', 'PENDING', 'runAt', nowText)
enqueue(n, key, now)
announce()
return { 0 }
`;

/** ARGV: n, token, leaseMillis; the job's hash declared. Returns 0 and the new leaseUntil. */
const EXTEND = `
local n = ARGV[OWN + 1]
local key, refusal = leased(n, ARGV[OWN + 2], KEYS[FIXED + 1])
if key == nil then return { refusal } end
local leaseUntil = now + tonumber(ARGV[OWN + 3])
redis.call('HSET', key, 'leaseUntil', num(leaseUntil))
redis.call('ZADD', K.leases, leaseUntil, n)
return { 0, num(leaseUntil) }
`;

/** ARGV: n; the job's hash declared. Returns 0 and the job's hash as field, value, ... */
const VIEW = `
local key, refusal = find(ARGV[OWN + 1], KEYS[FIXED + 1])
if key == nil then return { refusal } end
return { 0, redis.call('HGETALL', key) }
`;

/** The most dead jobs one deadLetters script returns: a page, so that no script grows with the dead-letter list. */
export const DEAD_LETTERS_PAGE = 50;

/**
 * ARGV: after. Returns 0, then n and the hash of each of the first
 * DEAD_LETTERS_PAGE DEAD jobs numbered above `after`, in submission order.
 */
const DEAD_LETTERS = `
local out = { 0 }
for _, n in ipairs(redis.call('ZRANGEBYSCORE', K.dead, '(' .. ARGV[OWN + 1], '+inf', 'LIMIT', 0, ${DEAD_LETTERS_PAGE})) do
  out[#out + 1] = n
  out[#out + 1] = redis.call('HGETALL', jobKey(n))
end
return out
`;

/** The most jobs one jobs() script files in the listing sets while the first jobs() builds them (see LISTING). */
export const LISTING_BATCH = 200;

/**
 * The listing sets are built by the first jobs() on a queue, and kept from
 * then on. Its first script empties them (a queue that stopped keeping them,
 * or never did, may hold stale members), creates K.listing (so every move
 * from then on keeps them) and notes the jobs issued so far (upTo, by jobSeq);
 * then it and the scripts after it file those jobs, LISTING_BATCH per script
 * in job-number order (next), each under the status its hash has then. A job
 * that moves before it is filed is filed by its move, and again, alike, when
 * its turn comes; one that moves after is moved by its move; an evicted one
 * has no hash and is passed over. True once every job up to upTo is filed.
 */
const LISTING = `
local function listingBuilt()
  local f = redis.call('HMGET', K.listing, 'upTo', 'next')
  local upTo, from
  if f[1] then
    upTo, from = tonumber(f[1]), tonumber(f[2])
    if from > upTo then return true end
  else
    for status, set in pairs(numsOf) do
      if status ~= 'DEAD' then redis.call('UNLINK', set) end
    end
    upTo, from = tonumber(redis.call('GET', K.jobSeq) or '0'), 1
  end
  local to = math.min(upTo, from + ${LISTING_BATCH} - 1)
  for seq = from, to do
    local n = jobNumberOf(seq)
    local status = redis.call('HGET', jobKey(n), 'status')
    if status and status ~= 'DEAD' then redis.call('ZADD', numsOf[status], n, n) end
  end
  redis.call('HSET', K.listing, 'upTo', upTo, 'next', to + 1)
  return to == upTo
end
`;

/**
 * ARGV: status ('' for every status), after, limit, typed ('1' or '0'), type.
 * Returns 0, where the next page goes on after ('' for none), then n and the
 * hash of each job listed, in job-number order: the first `limit` jobs
 * numbered above `after` (of `type`, if typed). Each listing set is read from
 * `after` on, a window of limit + 1 numbers (typed: SCAN_BUDGET); only
 * numbers up to the end of the shortest full window are known to be all
 * there are, so the page stops there. Typed, at most SCAN_BUDGET jobs are looked at.
 */
const JOBS = `
if not listingBuilt() then return { ${CATCHING_UP} } end
local status, after, limit, typed, wantedType = ARGV[OWN + 1], ARGV[OWN + 2], tonumber(ARGV[OWN + 3]), ARGV[OWN + 4] == '1', ARGV[OWN + 5]
local window = typed and ${SCAN_BUDGET} or limit + 1
local sources = { numsOf[status] }
if status == '' then sources = { K.pendingNums, K.runningNums, K.succeededNums, K.dead, K.cancelledNums } end
local candidates, covered = {}, math.huge
for _, source in ipairs(sources) do
  local numbers = redis.call('ZRANGEBYSCORE', source, '(' .. after, '+inf', 'LIMIT', 0, window)
  for _, n in ipairs(numbers) do candidates[#candidates + 1] = tonumber(n) end
  if #numbers == window then covered = math.min(covered, tonumber(numbers[#numbers])) end
end
table.sort(candidates)
local out = { 0, '' }
local listed, examined, last = 0, 0, 0
for _, n in ipairs(candidates) do
  if n > covered then break end
  if listed == limit or (typed and examined == ${SCAN_BUDGET}) then
    out[2] = int(last)
    return out
  end
  examined = examined + 1
  last = n
  local key = jobKey(int(n))
  if not typed or redis.call('HGET', key, 'type') == wantedType then
    out[#out + 1] = int(n)
    out[#out + 1] = redis.call('HGETALL', key)
    listed = listed + 1
  end
end
if covered ~= math.huge then out[2] = int(covered) end
return out
`;

/** ARGV: n; the job's hash declared. */
const RETRY_DEAD = `
local n = ARGV[OWN + 1]
local key, refusal = find(n, KEYS[FIXED + 1])
if key == nil then return { refusal } end
if redis.call('HGET', key, 'status') ~= 'DEAD' then return { ${Refusal.NotDead} } end
redis.call('ZREM', K.dead, n)
redis.call('HSET', key, 'status', 'PENDING', 'attempts', 0, 'runAt', nowText)
enqueue(n, key, now)
announce()
return { 0 }
`;

/** ARGV: n; the job's hash declared. */
const CANCEL = `
local n = ARGV[OWN + 1]
local key, refusal = find(n, KEYS[FIXED + 1])
if key == nil then return { refusal } end
if redis.call('HGET', key, 'status') ~= 'PENDING' then return { ${Refusal.NotPending} } end
local member = readyMember(key, n)
redis.call('ZREM', K.ready, member)
redis.call('ZREM', K.held, member)
redis.call('ZREM', K.pending, n)
unlist(K.pendingNums, { n })
finish(n, key, 'CANCELLED')
return { 0 }
`;

/**
 * Returns 0, pending, ready, running, succeeded, dead, cancelled, paused (1 or 0):
 * each O(1), as the prelude left K.ready exact for now (held jobs are ready too).
 */
const STATS = `
return { 0, redis.call('ZCARD', K.pending), redis.call('ZCARD', K.ready) + redis.call('ZCARD', K.held),
  redis.call('ZCARD', K.leases), tonumber(redis.call('HGET', K.counts, 'succeeded') or '0'),
  redis.call('ZCARD', K.dead), tonumber(redis.call('HGET', K.counts, 'cancelled') or '0'), redis.call('EXISTS', K.paused) }
`;

/** Pauses the queue for every client: polls lease nothing until RESUME. */
const PAUSE = `
redis.call('SET', K.paused, '1')
return { 0 }
`;

/** Ends a pause; clients waiting for work wake and poll again. */
const RESUME = `
if redis.call('DEL', K.paused) == 1 then announce() end
return { 0 }
`;

/**
 * ARGV: type, max, windowMillis (max '0': remove the type's limit). Every
 * held job goes back to the ready index (the next poll holds again those
 * still limited), CATCH_UP_BATCH per run, and waiting clients wake. A new limit counts from now; a
 * changed one keeps the current window's count.
 */
const SET_RATE_LIMIT = `
local jobType, max = ARGV[OWN + 1], ARGV[OWN + 2]
if max == '0' then
  redis.call('HDEL', K.limits, jobType)
  redis.call('HDEL', K.windows, jobType)
else
  redis.call('HSET', K.limits, jobType, max .. ',' .. ARGV[OWN + 3])
end
-- Run again (setting the limit again changes nothing) until every held job is back.
if not releaseHeld('+inf') then return { ${CATCHING_UP} } end
announce()
return { 0 }
`;

/** Returns 0, then type and "max,windowMillis" of every limit. */
const RATE_LIMITS = `
return { 0, redis.call('HGETALL', K.limits) }
`;

export interface Script {
  readonly lua: string;
  /** What EVALSHA names it by. */
  readonly sha: string;
}

function script(body: string): Script {
  return luaScript(PRELUDE + body);
}

/** A script of its own text alone, without the PRELUDE (one that does not bring the queue up to now). */
export function luaScript(lua: string): Script {
  return { lua, sha: createHash('sha1').update(lua).digest('hex') };
}

export const SCRIPTS = {
  submit: script(SUBMIT),
  poll: script(POLL),
  complete: script(COMPLETE),
  completeAndPoll: script(COMPLETE_AND_POLL),
  completeManyAndPoll: script(COMPLETE_MANY_AND_POLL),
  fail: script(FAIL),
  release: script(RELEASE),
  extend: script(EXTEND),
  view: script(VIEW),
  deadLetters: script(DEAD_LETTERS),
  jobs: script(LISTING + JOBS),
  retryDead: script(RETRY_DEAD),
  cancel: script(CANCEL),
  stats: script(STATS),
  pause: script(PAUSE),
  resume: script(RESUME),
  setRateLimit: script(SET_RATE_LIMIT),
  rateLimits: script(RATE_LIMITS),
} as const;
