--[[
  remove: a job that is not RUNNING gone for good, as an eviction leaves it (its hash deleted, its
  idempotent key free unless a newer job took it). A flow's child removed while PENDING ends for its parent
  as a cancelled one, in this script (includes/flows.lua); a waiting parent removed waits no more.

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua), then KEYS[FIXED + 1], the hash of the job ARGV names
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] n
  Replies:
    { 0 }
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
  Refusals (nothing changed):
    { Refusal.NotFound } / { Refusal.Evicted }: no such job / it was evicted or removed
    { Refusal.Running }: the job is RUNNING (a lease that ran out was expired first, by the catch-up)
]]

local n = ARGV[OWN + 1]
local key, refusal = find(n, KEYS[FIXED + 1])
if key == nil then return { refusal } end
local f = redis.call('HMGET', key, 'status', 'key', 'parent')
local status = f[1]
if status == 'RUNNING' then return { Refusal.Running } end
if status == 'PENDING' then
  dequeue(n, key)
elseif status == 'DEAD' then
  undead(n)
else
  -- SUCCEEDED or CANCELLED: out of the eviction order (a scan of the list: remove is no hot path).
  redis.call('LREM', K.finished, 1, n)
  redis.call('HINCRBY', K.counts, string.lower(status), -1)
  unlist(numsOf[status], { n })
end
if f[2] and redis.call('HGET', K.keys, f[2]) == n then redis.call('HDEL', K.keys, f[2]) end
redis.call('DEL', key, logsKeyOf(key))
-- A client waiting in finished() on a PENDING job looks again, and finds it gone.
if status == 'PENDING' then
  announceFinished({ n })
  -- A flow's child removed while PENDING has ended, for its parent, as a cancelled one (includes/flows.lua).
  childEnded(n, key, 'REMOVED', f[3] or false)
end
return { 0 }
