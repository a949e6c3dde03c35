/**
 * The Lua scripts of the Redis queue: one per operation, each one atomic
 * transition. Every script is the shared PRELUDE (helpers, then "bring the
 * queue up to now") followed by its own body, and returns a table whose first
 * element is 0 or a negative `Refusal` (which `refusalError` turns into the
 * error; a refused script has changed nothing but the bringing up to now,
 * which any call would have done).
 *
 * Lua in Redis is 5.1 with doubles only. Numbers cross the boundary as text:
 * the client sends JavaScript's exact shortest form, Redis writes a Lua number
 * argument with %.17g (exact), and scripts return numbers as %.17g text
 * (`num`) because a Lua number in a reply is cut to an integer and `tostring`
 * keeps only 14 digits.
 */
import { createHash } from 'node:crypto';
import { Refusal } from '../errors.js';
import { KEY_NAMES } from './keys.js';

/** The arguments every script takes first, in this order (RedisJobQueue fills them in for every call); its own follow. */
export const COMMON_ARGS = ['jobPrefix', 'now', 'seed', 'maxAttempts', 'baseBackoffMillis', 'maxBackoffMillis', 'jitter'] as const;

const arg = (name: (typeof COMMON_ARGS)[number]) => `ARGV[${COMMON_ARGS.indexOf(name) + 1}]`;

const PRELUDE = `
local K = { ${KEY_NAMES.map((name, i) => `${name} = KEYS[${i + 1}]`).join(', ')} }
local jobPrefix = ${arg('jobPrefix')}
local nowText = ${arg('now')}
local now = tonumber(nowText)
-- Redis seeds math.random alike on every call; jitter needs the client's seed.
math.randomseed(tonumber(${arg('seed')}))
local maxAttempts = tonumber(${arg('maxAttempts')})
local baseBackoff = tonumber(${arg('baseBackoffMillis')})
local maxBackoff = tonumber(${arg('maxBackoffMillis')})
local jitter = ${arg('jitter')}
-- A script's own arguments are ARGV[OWN + 1], ARGV[OWN + 2], ...
local OWN = ${COMMON_ARGS.length}

local function int(n) return string.format('%d', n) end
local function num(x) return string.format('%.17g', x) end
local function jobKey(n) return jobPrefix .. n end

-- 16 hex digits that sort as text in the order of the numbers: the IEEE bits,
-- with the sign bit flipped for positives and every bit flipped for negatives.
local function sortable(x)
  if x == 0 then x = 0 end -- -0 and 0 are one number
  local b = { string.byte(struct.pack('>d', x), 1, 8) }
  if b[1] >= 128 then
    for i = 1, 8 do b[i] = 255 - b[i] end
  else
    b[1] = b[1] + 128
  end
  return string.format(string.rep('%02x', 8), unpack(b))
end

-- The member of job n in K.ready: highest priority, then earliest runAt, then
-- submission order; the last 16 characters are n itself.
local function readyMember(key, n)
  local f = redis.call('HMGET', key, 'priority', 'runAt')
  return sortable(-tonumber(f[1])) .. sortable(tonumber(f[2])) .. string.format('%016d', tonumber(n))
end

local function enqueue(n, key, runAt)
  redis.call('ZADD', K.pending, runAt, n)
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

-- A failed attempt of RUNNING job n at failedAt: retried after its backoff,
-- or DEAD when no attempts are left (or at once when permanent).
local function failAttempt(n, key, failedAt, err, permanent)
  redis.call('ZREM', K.leases, n)
  local attempts = tonumber(redis.call('HGET', key, 'attempts'))
  if not permanent and attempts < maxAttempts then
    local runAt = failedAt + backoffAfter(attempts)
    redis.call('HSET', key, 'status', 'PENDING', 'runAt', num(runAt), 'lastError', err)
    enqueue(n, key, runAt)
  else
    redis.call('HSET', key, 'status', 'DEAD', 'lastError', err)
    redis.call('ZADD', K.dead, n, n)
  end
end

-- SUCCEEDED or CANCELLED: held until evicted, oldest finished first.
local function finish(n, key, status)
  redis.call('HSET', key, 'status', status)
  redis.call('RPUSH', K.finished, n)
  redis.call('HINCRBY', K.counts, string.lower(status), 1)
end

-- New work: wakes clients in waitForWork (a poll that found nothing reads the counter).
local function announce()
  redis.call('PUBLISH', K.signal, redis.call('INCR', K.signal))
end

-- The hash of job n, or nil and the Refusal: never issued, or evicted.
local function find(n)
  local key = jobKey(n)
  if redis.call('EXISTS', key) == 1 then return key end
  if tonumber(n) > tonumber(redis.call('GET', K.jobSeq) or '0') then return nil, ${Refusal.NotFound} end
  return nil, ${Refusal.Evicted}
end

-- The hash of job n if token is its current lease (after expiry, RUNNING means valid).
local function leased(n, token)
  local key, refusal = find(n)
  if key == nil then return nil, refusal end
  local f = redis.call('HMGET', key, 'status', 'token')
  if f[1] ~= 'RUNNING' or f[2] ~= token then return nil, ${Refusal.StaleLease} end
  return key
end

-- Leases the best ready job to workerId: 0, the wake counter, and the lease if a job was ready.
local function pollBest(workerId, leaseMillis)
  local signal = redis.call('GET', K.signal) or '0'
  local best = redis.call('ZPOPMIN', K.ready)
  if #best == 0 then return { 0, signal } end
  local n = int(tonumber(string.sub(best[1], 33)))
  local key = jobKey(n)
  local token = int(redis.call('INCR', K.tokenSeq))
  local leaseUntil = now + tonumber(leaseMillis)
  local attempts = redis.call('HINCRBY', key, 'attempts', 1)
  redis.call('HSET', key, 'status', 'RUNNING', 'token', token, 'leaseUntil', num(leaseUntil), 'workerId', workerId)
  redis.call('ZREM', K.pending, n)
  redis.call('ZADD', K.leases, leaseUntil, n)
  local f = redis.call('HMGET', key, 'type', 'payload')
  return { 0, signal, n, token, f[1], f[2], attempts, num(leaseUntil) }
end

-- RUNNING job n, leased under token, is SUCCEEDED: nil, or the Refusal.
local function completeLeased(n, token)
  local key, refusal = leased(n, token)
  if key == nil then return refusal end
  redis.call('ZREM', K.leases, n)
  finish(n, key, 'SUCCEEDED')
  return nil
end

-- Bring the queue up to now. First the ready index follows the clock: it holds
-- exactly the PENDING jobs with runAt <= the latest now, so jobs due since then
-- join it, and if the clock went back, jobs not due any more leave it.
local function reindex(min, max, add)
  for _, n in ipairs(redis.call('ZRANGEBYSCORE', K.pending, min, max)) do
    local member = readyMember(jobKey(n), n)
    if add then redis.call('ZADD', K.ready, 0, member) else redis.call('ZREM', K.ready, member) end
  end
end
local last = redis.call('GET', K.clock)
if last == false then reindex('-inf', nowText, true)
elseif now > tonumber(last) then reindex('(' .. last, nowText, true)
elseif now < tonumber(last) then reindex('(' .. nowText, last, false) end
redis.call('SET', K.clock, nowText)

-- Then every lease with leaseUntil <= now is a failed attempt at its leaseUntil.
local expired = redis.call('ZRANGEBYSCORE', K.leases, '-inf', nowText, 'WITHSCORES')
for i = 1, #expired, 2 do
  failAttempt(expired[i], jobKey(expired[i]), tonumber(expired[i + 1]), 'lease expired', false)
end
`;

/**
 * submit / submitMany, all or none. ARGV: capacity, then per job type,
 * payload, priority, runAt ('' for now). Finished jobs are evicted, oldest
 * first, only as far as room is needed and only if that makes enough.
 */
const SUBMIT = `
local capacity = tonumber(ARGV[OWN + 1])
local first = OWN + 2
local count = (#ARGV - first + 1) / 4
local finished = redis.call('LLEN', K.finished)
local held = redis.call('ZCARD', K.pending) + redis.call('ZCARD', K.leases) + redis.call('ZCARD', K.dead) + finished
local excess = held + count - capacity
if excess > finished then return { ${Refusal.NoSlot} } end
for _ = 1, excess do
  local key = jobKey(redis.call('LPOP', K.finished))
  redis.call('HINCRBY', K.counts, string.lower(redis.call('HGET', key, 'status')), -1)
  redis.call('DEL', key)
end
local ids = { 0 }
for i = first, #ARGV, 4 do
  local n = int(redis.call('INCR', K.jobSeq))
  local key = jobKey(n)
  local runAt = ARGV[i + 3]
  if runAt == '' then runAt = nowText end
  redis.call('HSET', key, 'type', ARGV[i], 'payload', ARGV[i + 1], 'priority', ARGV[i + 2],
    'status', 'PENDING', 'attempts', 0, 'runAt', runAt)
  enqueue(n, key, tonumber(runAt))
  ids[#ids + 1] = n
end
if count > 0 then announce() end
return ids
`;

/** ARGV: workerId, leaseMillis. Returns 0, the wake counter, and the lease if a job was ready. */
const POLL = `
return pollBest(ARGV[OWN + 1], ARGV[OWN + 2])
`;

/** ARGV: n, token. */
const COMPLETE = `
local refusal = completeLeased(ARGV[OWN + 1], ARGV[OWN + 2])
if refusal ~= nil then return { refusal } end
return { 0 }
`;

/** ARGV: n, token, workerId, leaseMillis: a complete, then a poll, in one round trip. Returns what POLL does. */
const COMPLETE_AND_POLL = `
local refusal = completeLeased(ARGV[OWN + 1], ARGV[OWN + 2])
if refusal ~= nil then return { refusal } end
return pollBest(ARGV[OWN + 3], ARGV[OWN + 4])
`;

/** ARGV: n, token, error text, permanent ('1' or '0'). */
const FAIL = `
local n = ARGV[OWN + 1]
local key, refusal = leased(n, ARGV[OWN + 2])
if key == nil then return { refusal } end
failAttempt(n, key, now, ARGV[OWN + 3], ARGV[OWN + 4] == '1')
announce()
return { 0 }
`;

/** ARGV: n, token. The lease handed back unfinished: PENDING, ready now, the attempt not counted. */
const RELEASE = `
local n = ARGV[OWN + 1]
local key, refusal = leased(n, ARGV[OWN + 2])
if key == nil then return { refusal } end
redis.call('ZREM', K.leases, n)
redis.call('HINCRBY', key, 'attempts', -1)
redis.call('HSET', key, 'status', 'PENDING', 'runAt', nowText)
enqueue(n, key, now)
announce()
return { 0 }
`;

/** ARGV: n, token, leaseMillis. Returns 0 and the new leaseUntil. */
const EXTEND = `
local n = ARGV[OWN + 1]
local key, refusal = leased(n, ARGV[OWN + 2])
if key == nil then return { refusal } end
local leaseUntil = now + tonumber(ARGV[OWN + 3])
redis.call('HSET', key, 'leaseUntil', num(leaseUntil))
redis.call('ZADD', K.leases, leaseUntil, n)
return { 0, num(leaseUntil) }
`;

/** ARGV: n. Returns 0 and the job's hash as field, value, ... */
const VIEW = `
local key, refusal = find(ARGV[OWN + 1])
if key == nil then return { refusal } end
return { 0, redis.call('HGETALL', key) }
`;

/** Returns 0, then n and the hash of every DEAD job, in submission order. */
const DEAD_LETTERS = `
local out = { 0 }
for _, n in ipairs(redis.call('ZRANGE', K.dead, 0, -1)) do
  out[#out + 1] = n
  out[#out + 1] = redis.call('HGETALL', jobKey(n))
end
return out
`;

/** ARGV: n. */
const RETRY_DEAD = `
local n = ARGV[OWN + 1]
local key, refusal = find(n)
if key == nil then return { refusal } end
if redis.call('HGET', key, 'status') ~= 'DEAD' then return { ${Refusal.NotDead} } end
redis.call('ZREM', K.dead, n)
redis.call('HSET', key, 'status', 'PENDING', 'attempts', 0, 'runAt', nowText)
enqueue(n, key, now)
announce()
return { 0 }
`;

/** ARGV: n. */
const CANCEL = `
local n = ARGV[OWN + 1]
local key, refusal = find(n)
if key == nil then return { refusal } end
if redis.call('HGET', key, 'status') ~= 'PENDING' then return { ${Refusal.NotPending} } end
redis.call('ZREM', K.ready, readyMember(key, n))
redis.call('ZREM', K.pending, n)
finish(n, key, 'CANCELLED')
return { 0 }
`;

/** Returns 0, pending, ready, running, succeeded, dead, cancelled: each O(1), as the prelude left K.ready exact for now. */
const STATS = `
return { 0, redis.call('ZCARD', K.pending), redis.call('ZCARD', K.ready),
  redis.call('ZCARD', K.leases), tonumber(redis.call('HGET', K.counts, 'succeeded') or '0'),
  redis.call('ZCARD', K.dead), tonumber(redis.call('HGET', K.counts, 'cancelled') or '0') }
`;

export interface Script {
  readonly lua: string;
  /** What EVALSHA names it by. */
  readonly sha: string;
}

function script(body: string): Script {
  const lua = PRELUDE + body;
  return { lua, sha: createHash('sha1').update(lua).digest('hex') };
}

export const SCRIPTS = {
  submit: script(SUBMIT),
  poll: script(POLL),
  complete: script(COMPLETE),
  completeAndPoll: script(COMPLETE_AND_POLL),
  fail: script(FAIL),
  release: script(RELEASE),
  extend: script(EXTEND),
  view: script(VIEW),
  deadLetters: script(DEAD_LETTERS),
  retryDead: script(RETRY_DEAD),
  cancel: script(CANCEL),
  stats: script(STATS),
} as const;
