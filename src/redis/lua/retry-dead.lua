--[[
  retryDead: a DEAD job PENDING again, ready now, its attempts from 0.

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
redis.call('HSET', key, 'status', 'PENDING', 'attempts', 0, 'runAt', nowText)
enqueue(n, key, now)
announce()
return { 0 }
