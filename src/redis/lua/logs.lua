--[[
  logs: a job's log (see log.lua).

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua), then KEYS[FIXED + 1], the hash of the job ARGV names
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] n
  Replies:
    { 0, { line, ... }, dropped }: the lines kept, oldest first, and how many older ones were dropped
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
  Refusals (nothing changed):
    { Refusal.NotFound } / { Refusal.Evicted }: no such job / it was evicted
]]

local key, refusal = find(ARGV[OWN + 1], KEYS[FIXED + 1])
if key == nil then return { refusal } end
return { 0, redis.call('LRANGE', logsKeyOf(key), 0, -1), redis.call('HGET', key, 'logsDropped') or '0' }
