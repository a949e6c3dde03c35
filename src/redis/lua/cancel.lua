--[[
  cancel: a PENDING job CANCELLED.

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua), then KEYS[FIXED + 1], the hash of the job ARGV names
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] n
  Replies:
    { 0 }
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
  Refusals (nothing changed):
    { Refusal.NotFound } / { Refusal.Evicted }: no such job / it was evicted
    { Refusal.NotPending }: the job is not PENDING
]]

local n = ARGV[OWN + 1]
local key, refusal = find(n, KEYS[FIXED + 1])
if key == nil then return { refusal } end
if redis.call('HGET', key, 'status') ~= 'PENDING' then return { Refusal.NotPending } end
local member = readyMember(key, n)
redis.call('ZREM', K.ready, member)
redis.call('ZREM', K.held, member)
redis.call('ZREM', K.pending, n)
unlist(K.pendingNums, { n })
finish(n, key, 'CANCELLED')
return { 0 }
