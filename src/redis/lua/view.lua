--[[
  view: one job's state.

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua), then KEYS[FIXED + 1], the hash of the job ARGV names
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] n
  Replies:
    { 0, { field, value, ... } }: the job's hash
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
  Refusals (nothing changed):
    { Refusal.NotFound } / { Refusal.Evicted }: no such job / it was evicted
]]

local key, refusal = find(ARGV[OWN + 1], KEYS[FIXED + 1])
if key == nil then return { refusal } end
return { 0, redis.call('HGETALL', key) }
