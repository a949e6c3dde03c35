--[[
  Flows (submit-flow.lua): a parent job waits, PENDING, until each of its
  children has ended, as the shared-memory queue's (src/shm/moves/flows.ts).

  A child's hash names its parent (`parent`: its number). A parent's hash
  lists its direct children (`children`: their numbers, comma-separated, in
  submission order), says `ignoreChildFailure` '1' under onChildFailure
  'ignore', and, while it waits, counts its children not ended yet
  (`waiting`, above 0; absent once it does not wait). A waiting parent is in
  K.pending at score +inf (WAITING_SCORE), its own runAt kept in its hash:
  never due, so no catch-up files it ready and no poll leases it; it counts
  as PENDING (and delayed) like any job there, and stats counts the waiting
  ones by that score.

  The parent's moves are made by the script that ended the child, right
  after the child's move (its complete, its fail or lease expiry to DEAD,
  its cancel, its remove while PENDING): one script, so no other call sees
  the child ended and the parent not counting it. A child has ended, for
  its parent, once SUCCEEDED; DEAD or CANCELLED (or removed while PENDING)
  ends it too under 'ignore', and under 'fail' makes the parent DEAD at once,
  its lastError naming the child, and so on up the tree. A retryDead of a
  child whose parent still waits under 'ignore' counts it back in.

  A queue that never stored a flow (not `flowing`, call.lua) reads or writes
  nothing here: each helper returns before its first command.
]]

-- A waiting parent's score in K.pending: later than any clock.
local WAITING_SCORE = '+inf'

-- From this call on, the queue has flows (its version says so: see flowing in call.lua).
local function startFlows()
  if flowing then return end
  flowing = true
  redis.call('HSET', K.state, 'version', modelVersion())
end

-- The move *count down*: waiting parent n (at key, `waiting` children not ended) has one fewer to
-- wait for; at none it is filed as any PENDING job, ready at once if its runAt is past (read again as
-- now, as retryDead's: it queues behind the jobs ready before it), and clients waiting for work are woken.
local function countDown(n, key, waiting)
  if waiting > 1 then
    redis.call('HSET', key, 'waiting', int(waiting - 1))
    return
  end
  redis.call('HDEL', key, 'waiting')
  local runAt = tonumber(redis.call('HGET', key, 'runAt'))
  if runAt <= now then
    runAt = now
    redis.call('HSET', key, 'runAt', nowText)
  end
  -- ZADD moves its score in K.pending from +inf to its runAt.
  enqueue(n, key, runAt)
  announce()
end

-- The move *fail parent*: waiting parent n (at key) DEAD at now, its lastError `reason`, as a permanent failure.
local function failParent(n, key, reason)
  redis.call('HDEL', key, 'waiting')
  redis.call('HSET', key, 'status', 'DEAD', 'lastError', reason, 'finishedAt', nowText)
  redis.call('ZREM', K.pending, n)
  unlist(K.pendingNums, { n })
  redis.call('ZADD', K.dead, n, n)
  redis.call('ZADD', K.deadAt, now, n)
  noteEvent('dead', n, key, nil, reason)
  announceFinished({ n })
end

-- Why a child that ended as `status` fails its parent under 'fail'.
local FAILURE_REASONS = { DEAD = ' is DEAD', CANCELLED = ' was cancelled', REMOVED = ' was removed' }

-- After the move that left job n `status` (SUCCEEDED, DEAD, CANCELLED; REMOVED: removed while PENDING),
-- in the same script: its parent `parentN` (its hash's `parent`; nil: read it from key), if it waits,
-- counts it. Goes up the tree while a parent it fails is itself a child.
local function childEnded(n, key, status, parentN)
  if not flowing then return end
  if parentN == nil then parentN = redis.call('HGET', key, 'parent') end
  while parentN do
    local parentKey = jobKey(parentN)
    local f = redis.call('HMGET', parentKey, 'status', 'waiting', 'ignoreChildFailure', 'parent')
    local waiting = tonumber(f[2] or '0')
    if f[1] ~= 'PENDING' or waiting <= 0 then return end
    if status == 'SUCCEEDED' or f[3] == '1' then
      countDown(parentN, parentKey, waiting)
      return
    end
    failParent(parentN, parentKey, 'child J' .. n .. FAILURE_REASONS[status])
    -- The parent is DEAD now: its own parent counts that as its child's death.
    n, status, parentN = parentN, 'DEAD', f[4]
  end
end

-- Before a retryDead of DEAD job n (at key): if its parent still waits (it counted the child's death under
-- 'ignore'), it waits for the child again. Under 'fail' a waiting parent never counted a child's death (it
-- would have died of it): it counts the child as not ended already (see unfinishedChildren).
local function childRetried(key)
  if not flowing then return end
  local parentN = redis.call('HGET', key, 'parent')
  if not parentN then return end
  local parentKey = jobKey(parentN)
  local f = redis.call('HMGET', parentKey, 'status', 'waiting', 'ignoreChildFailure')
  if f[1] == 'PENDING' and tonumber(f[2] or '0') > 0 and f[3] == '1' then redis.call('HINCRBY', parentKey, 'waiting', 1) end
end

-- For a retryDead of DEAD job n (at key): how many of its children it waits for again: those PENDING or
-- RUNNING, and under 'fail' those DEAD too (retry them, and it runs once they succeeded). SUCCEEDED and
-- CANCELLED children, and children evicted or removed, have ended. 0 for a job without children.
local function unfinishedChildren(key)
  if not flowing then return 0 end
  local f = redis.call('HMGET', key, 'children', 'ignoreChildFailure')
  if not f[1] then return 0 end
  local waiting = 0
  for child in string.gmatch(f[1], '%d+') do
    local status = redis.call('HGET', jobKey(child), 'status')
    if status == 'PENDING' or status == 'RUNNING' or (status == 'DEAD' and f[2] ~= '1') then waiting = waiting + 1 end
  end
  return waiting
end

-- PENDING job n (at key) waits for `waiting` children (above 0): in K.pending at WAITING_SCORE, out of the ready index.
local function waitFor(n, key, waiting)
  redis.call('HSET', key, 'waiting', int(waiting))
  redis.call('ZADD', K.pending, WAITING_SCORE, n)
end

-- Whether PENDING job n (at key) is a parent that waits (edits leave it waiting: pending.lua).
local function waits(key)
  return flowing and tonumber(redis.call('HGET', key, 'waiting') or '0') > 0
end
