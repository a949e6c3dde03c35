--[[
  cancel: a PENDING or RUNNING job CANCELLED. A RUNNING job's lease ends with it (its token is refused from
  then on, as a zombie's); its attempt stays counted.

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua), then KEYS[FIXED + 1], the hash of the job ARGV names
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] n
  Replies:
    { 0 }: a PENDING job cancelled
    { 0, 1 }: a RUNNING job cancelled: its number went out on K.cancels, for the worker loop that held it
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
  Refusals (nothing changed):
    { Refusal.NotFound } / { Refusal.Evicted }: no such job / it was evicted
    { Refusal.NotPending }: the job is neither PENDING nor RUNNING
  Events: the job's number on K.finishes (finish), and on K.cancels when it was RUNNING.
  A flow's child cancelled: its parent counts it, or dies of it, in this script (includes/flows.lua).
]]

local n = ARGV[OWN + 1]
local key, refusal = find(n, KEYS[FIXED + 1])
if key == nil then return { refusal } end
local status = redis.call('HGET', key, 'status')
if status == 'RUNNING' then
  -- A lease run out is expired by the catch-up before this (the job is PENDING then): this one is valid.
  -- Its place under a cap is free (caps.lua): clients waiting for one are woken.
  if leavesRunning(key) then announce() end
  redis.call('ZREM', K.leases, n)
  redis.call('HDEL', K.tokens, n)
  unlist(K.runningNums, { n })
  finish(n, key, 'CANCELLED', true)
  redis.call('PUBLISH', K.cancels, n)
  childEnded(n, key, 'CANCELLED')
  return { 0, 1 }
end
if status ~= 'PENDING' then return { Refusal.NotPending } end
-- A parent that waits for its children waits no more (its children run on, and their ends count for nothing).
if flowing then redis.call('HDEL', key, 'waiting') end
dequeue(n, key)
finish(n, key, 'CANCELLED')
childEnded(n, key, 'CANCELLED')
return { 0 }
