--[[
  retryDead: a DEAD job PENDING again, ready now, its attempts from 0; a flow's parent with children not ended
  waits for them again, and a flow's child whose parent still waits under 'ignore' is counted in again (includes/flows.lua).

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua), then KEYS[FIXED + 1], the hash of the job ARGV names
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] n
  Replies:
    { 0 }
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
  Refusals (nothing changed):
    { Refusal.NotFound } / { Refusal.Evicted }: no such job / it was evicted
    { Refusal.NotDead }: the job is not DEAD
]]

local n = ARGV[OWN + 1]
local key, refusal = find(n, KEYS[FIXED + 1])
if key == nil then return { refusal } end
if redis.call('HGET', key, 'status') ~= 'DEAD' then return { Refusal.NotDead } end
undead(n)
-- A child whose parent still waits is waited for again, and a flow's parent waits again for its children not ended (includes/flows.lua).
childRetried(key)
local waiting = unfinishedChildren(key)
redis.call('HSET', key, 'status', 'PENDING', 'attempts', 0, 'runAt', nowText)
if waiting > 0 then
  waitFor(n, key, waiting)
  list(K.pendingNums, { n, n })
else
  enqueue(n, key, now)
  announce()
end
return { 0 }
