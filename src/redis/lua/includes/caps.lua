--[[
  New work, and the concurrency caps (setConcurrency, setGroupConcurrency; keys.ts names the keys).

  The whole queue's cap is K.state's `queueCap`: its RUNNING jobs are K.leases, so
  ZCARD K.leases is its count, exact at every script's start (the catch-up expired
  every lease due). A job type's cap is in K.caps, and its RUNNING count in K.running,
  kept only while the type has a cap: counted from K.leases when the cap is set, then
  +1 by the poll that admits a job of the type and -1 by every move out of RUNNING
  (complete, fail, release, cancel, lease expiry: leavesRunning), each in the script
  that makes the move. A poll admits a job only while count < cap, so no script ever
  makes more jobs RUNNING than a cap allows, however many clients poll. A group's cap
  is the same in K.groupCaps and K.groupRunning (the two scopes below): a job with a
  group is admitted only while both its type and its group have room.

  A ready job whose type (or group) is at its cap is parked: out of K.ready into its
  type's (group's) parked set (parkedPrefix .. type, parkedGroupPrefix .. group: the
  same members, so in the same order, turns included), still PENDING in K.pending. A
  poll takes the best job among K.ready's first and the first parked job of every type
  and group with room, so a parked job keeps its place (its turn) and is leased as soon
  as a place is free, with nothing to move back; one taken from a type's set whose group
  is full moves to its group's set (and the other way), member and all. A job that
  leaves PENDING or stops being due leaves its parked set too (unpark).

  K.state's `capped` is '1' while some type or group has a cap or parked jobs (K.parkedTypes,
  K.parkedGroups): only then does a poll take jobs one at a time and a move out of RUNNING
  read the job's type and group. A queue with no cap pays two more fields of begin's HMGET
  and nothing else; one that never named a group reads none of the group keys.
]]

-- New work: wakes clients in waitForWork (a poll that found nothing reads the counter).
local function announce()
  signal = int(redis.call('HINCRBY', K.state, 'signal', 1))
  redis.call('PUBLISH', K.signal, signal)
end

-- The two scopes a cap may have: a job's type (its hash's first field read below) and its group (the second).
local TYPE, GROUP = 1, 2
local SCOPES = {
  { caps = 'caps', running = 'running', parked = 'parkedTypes', field = 'type' },
  { caps = 'groupCaps', running = 'groupRunning', parked = 'parkedGroups', field = 'group' },
}

local function parkedOf(scope, name) return (scope == TYPE and parkedPrefix or parkedGroupPrefix) .. name end

-- The job at key's type and group (nil: none), the names its caps go by.
local function capNames(key)
  local f = redis.call('HMGET', key, 'type', 'group')
  return { f[1], f[2] or nil }
end

-- The job at key (its ready member `member`) out of its type's and its group's parked sets, if parked there.
local function unpark(key, member)
  if not capped then return end
  local names = capNames(key)
  for scope, name in pairs(names) do
    local set = parkedOf(scope, name)
    if redis.call('ZREM', set, member) == 1 and redis.call('EXISTS', set) == 0 then redis.call('SREM', K[SCOPES[scope].parked], name) end
  end
end

-- The job at key leaves RUNNING (called before it leaves K.leases): its type's and group's counts go down
-- where they have a cap. True if the move frees a place a poll may have been refused for (the queue's cap
-- was reached, or the type or group has parked jobs): the caller then wakes waiting clients (announce).
local function leavesRunning(key)
  local waited = queueCap ~= nil and redis.call('ZCARD', K.leases) >= queueCap
  if not capped then return waited end
  for scope, name in pairs(capNames(key)) do
    local running = K[SCOPES[scope].running]
    if redis.call('HEXISTS', running, name) == 1 then redis.call('HINCRBY', running, name, -1) end
    waited = waited or redis.call('EXISTS', parkedOf(scope, name)) == 1
  end
  return waited
end

-- The caps as one poll sees them, read once, per scope: each capped name's max and RUNNING count, and the
-- names with parked jobs with the first of each (head, nil once it has none). Groups only once they are named.
local function capsView()
  local view = {}
  for scope = 1, grouped and 2 or 1 do
    local keys = SCOPES[scope]
    local of = { max = {}, count = {}, heads = {} }
    local caps = redis.call('HGETALL', K[keys.caps])
    for i = 1, #caps, 2 do of.max[caps[i]] = tonumber(caps[i + 1]) end
    local counts = redis.call('HGETALL', K[keys.running])
    for i = 1, #counts, 2 do of.count[counts[i]] = tonumber(counts[i + 1]) end
    for _, name in ipairs(redis.call('SMEMBERS', K[keys.parked])) do
      of.heads[name] = redis.call('ZRANGE', parkedOf(scope, name), 0, 0)[1]
    end
    view[scope] = of
  end
  return view
end

local function hasRoom(view, scope, name)
  local of = view[scope]
  if name == nil or of == nil then return true end
  local max = of.max[name]
  return max == nil or (of.count[name] or 0) < max
end

-- The best job a capped poll may look at next: K.ready's first, or a type's or group's first parked job if
-- that type or group has room and the job comes first. Its member and, for a parked one, its scope and name; nil if none.
local function nextCandidate(view)
  local best, bestScope, bestName = redis.call('ZRANGE', K.ready, 0, 0)[1], nil, nil
  for scope, of in pairs(view) do
    for name, head in pairs(of.heads) do
      if hasRoom(view, scope, name) and (best == nil or precedes(head, best)) then best, bestScope, bestName = head, scope, name end
    end
  end
  return best, bestScope, bestName
end

-- Takes the candidate out of the index it is in (keeps the parked names and view's heads right).
local function takeCandidate(view, member, scope, name)
  if scope == nil then
    redis.call('ZREM', K.ready, member)
    return
  end
  local set = parkedOf(scope, name)
  redis.call('ZREM', set, member)
  local heads = view[scope].heads
  heads[name] = redis.call('ZRANGE', set, 0, 0)[1]
  if heads[name] == nil then redis.call('SREM', K[SCOPES[scope].parked], name) end
end

-- Parks the ready job `member` in the set of `name` (of scope), at its cap.
local function park(view, scope, name, member)
  redis.call('ZADD', parkedOf(scope, name), 0, member)
  local heads = view[scope].heads
  if heads[name] == nil then redis.call('SADD', K[SCOPES[scope].parked], name) end
  if heads[name] == nil or precedes(member, heads[name]) then heads[name] = member end
end

-- The scope at whose cap a job of these names (capNames) is, or nil if both have room.
local function fullScope(view, names)
  for scope = TYPE, GROUP do
    if not hasRoom(view, scope, names[scope]) then return scope end
  end
  return nil
end

-- A job of these names admitted by a poll: its type's and group's counts go up where they have a cap.
local function admit(view, names)
  for scope, name in pairs(names) do
    local of = view[scope]
    if of and of.max[name] ~= nil then
      of.count[name] = (of.count[name] or 0) + 1
      redis.call('HINCRBY', K[SCOPES[scope].running], name, 1)
    end
  end
end

-- Whether no cap is set in this view (a poll then checks whether caps can be settled).
local function uncapped(view)
  for _, of in pairs(view) do
    if next(of.max) ~= nil then return false end
  end
  return true
end

-- No cap and no parked job left: polls go back to the fast path (K.state's `capped` off).
local function settleCaps()
  if redis.call('EXISTS', K.caps, K.parkedTypes, K.groupCaps, K.parkedGroups) == 0 then
    redis.call('HDEL', K.state, 'capped')
    capped = false
  end
end

-- Sets the cap of `name` (a type or a group, per scope) to max (an integer's text), or removes it (max '').
-- A name's first cap counts its jobs RUNNING now (a scan of K.leases, O(running)); a changed cap keeps the
-- count. A removed cap's parked jobs stay parked: with no cap the name always has room, and polls take them
-- in their place.
local function setCap(scope, name, max)
  local keys = SCOPES[scope]
  if max == '' then
    redis.call('HDEL', K[keys.caps], name)
    redis.call('HDEL', K[keys.running], name)
    if capped then settleCaps() end
    return
  end
  if redis.call('HEXISTS', K[keys.caps], name) == 0 then
    local count = 0
    for _, n in ipairs(redis.call('ZRANGE', K.leases, 0, -1)) do
      if redis.call('HGET', jobKey(n), keys.field) == name then count = count + 1 end
    end
    redis.call('HSET', K[keys.running], name, count)
  end
  redis.call('HSET', K[keys.caps], name, max)
  redis.call('HSET', K.state, 'capped', '1')
end
