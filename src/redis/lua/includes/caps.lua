--[[
  New work, and the concurrency caps (setConcurrency; keys.ts names the keys).

  The whole queue's cap is K.state's `queueCap`: its RUNNING jobs are K.leases, so
  ZCARD K.leases is its count, exact at every script's start (the catch-up expired
  every lease due). A job type's cap is in K.caps, and its RUNNING count in K.running,
  kept only while the type has a cap: counted from K.leases when the cap is set, then
  +1 by the poll that admits a job of the type and -1 by every move out of RUNNING
  (complete, fail, release, cancel, lease expiry: leavesRunning), each in the script
  that makes the move. A poll admits a job only while count < cap, so no script ever
  makes more jobs RUNNING than a cap allows, however many clients poll.

  A ready job whose type is at its cap is parked: out of K.ready into its type's
  parked set (parkedPrefix .. type, the same members, so in the same order), still
  PENDING in K.pending. A poll takes the best job among K.ready's first and the first
  parked job of every type with room, so a parked job keeps its place among its type
  and is leased as soon as a place is free, with nothing to move back. A job that
  leaves PENDING or stops being due leaves its parked set too (unpark).

  K.state's `capped` is '1' while some type has a cap or parked jobs (K.parkedTypes):
  only then does a poll take jobs one at a time and a move out of RUNNING read the job's
  type. A queue with no cap pays two more fields of begin's HMGET and nothing else.
]]

-- New work: wakes clients in waitForWork (a poll that found nothing reads the counter).
local function announce()
  signal = int(redis.call('HINCRBY', K.state, 'signal', 1))
  redis.call('PUBLISH', K.signal, signal)
end

local function parkedOf(jobType) return parkedPrefix .. jobType end

-- The job at key (its ready member `member`) out of its type's parked set, if parked there.
local function unpark(key, member)
  if not capped then return end
  local jobType = redis.call('HGET', key, 'type')
  local set = parkedOf(jobType)
  if redis.call('ZREM', set, member) == 1 and redis.call('EXISTS', set) == 0 then redis.call('SREM', K.parkedTypes, jobType) end
end

-- The job at key leaves RUNNING (called before it leaves K.leases): its type's count goes down if
-- the type has a cap. True if the move frees a place a poll may have been refused for (the queue's
-- cap was reached, or the type has parked jobs): the caller then wakes waiting clients (announce).
local function leavesRunning(key)
  local waited = queueCap ~= nil and redis.call('ZCARD', K.leases) >= queueCap
  if not capped then return waited end
  local jobType = redis.call('HGET', key, 'type')
  if redis.call('HEXISTS', K.running, jobType) == 1 then redis.call('HINCRBY', K.running, jobType, -1) end
  return waited or redis.call('EXISTS', parkedOf(jobType)) == 1
end

-- The type caps as one poll sees them, read once: each capped type's max and RUNNING count, and the
-- types with parked jobs with the first of each (head, nil once it has none).
local function capsView()
  local view = { max = {}, count = {}, heads = {} }
  local caps = redis.call('HGETALL', K.caps)
  for i = 1, #caps, 2 do view.max[caps[i]] = tonumber(caps[i + 1]) end
  local counts = redis.call('HGETALL', K.running)
  for i = 1, #counts, 2 do view.count[counts[i]] = tonumber(counts[i + 1]) end
  for _, jobType in ipairs(redis.call('SMEMBERS', K.parkedTypes)) do
    view.heads[jobType] = redis.call('ZRANGE', parkedOf(jobType), 0, 0)[1]
  end
  return view
end

-- Whether ready member a comes before b as a sorted set orders them: by bytes (Lua's `<` is the
-- locale's collation, which Redis sets from the environment).
local function precedes(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

local function hasRoom(view, jobType)
  local max = view.max[jobType]
  return max == nil or (view.count[jobType] or 0) < max
end

-- The best job a capped poll may look at next: K.ready's first, or a type's first parked job if that
-- type has room and the job comes first. Its member and, for a parked one, its type; nil if none.
local function nextCandidate(view)
  local best, bestType = redis.call('ZRANGE', K.ready, 0, 0)[1], nil
  for jobType, head in pairs(view.heads) do
    if hasRoom(view, jobType) and (best == nil or precedes(head, best)) then best, bestType = head, jobType end
  end
  return best, bestType
end

-- Takes the candidate out of the index it is in (keeps parkedTypes and view.heads right).
local function takeCandidate(view, member, parkedType)
  if parkedType == nil then
    redis.call('ZREM', K.ready, member)
    return
  end
  local set = parkedOf(parkedType)
  redis.call('ZREM', set, member)
  view.heads[parkedType] = redis.call('ZRANGE', set, 0, 0)[1]
  if view.heads[parkedType] == nil then redis.call('SREM', K.parkedTypes, parkedType) end
end

-- Parks the ready job `member` of jobType, at its cap.
local function park(view, jobType, member)
  redis.call('ZADD', parkedOf(jobType), 0, member)
  if view.heads[jobType] == nil then redis.call('SADD', K.parkedTypes, jobType) end
  if view.heads[jobType] == nil or precedes(member, view.heads[jobType]) then view.heads[jobType] = member end
end

-- A job of jobType admitted by a poll: its type's count goes up if the type has a cap.
local function admit(view, jobType)
  if view.max[jobType] == nil then return end
  view.count[jobType] = (view.count[jobType] or 0) + 1
  redis.call('HINCRBY', K.running, jobType, 1)
end

-- No cap and no parked job left: polls go back to the fast path (K.state's `capped` off).
local function settleCaps()
  if redis.call('EXISTS', K.caps) == 0 and redis.call('EXISTS', K.parkedTypes) == 0 then
    redis.call('HDEL', K.state, 'capped')
    capped = false
  end
end
