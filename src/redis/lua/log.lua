--[[
  log: a line appended to a job's log (its list at the job's key .. ':logs', see keys.ts), the oldest lines
  past maxLogLines dropped and counted in the job's hash (logsDropped). Any held job may log, in any status.

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua), then KEYS[FIXED + 1], the hash of the job ARGV names
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] n: the job's number
    [OWN + 2] line: the line, already cut to maxLogLineBytes by the client
    [OWN + 3] maxLogLines
  Replies:
    { 0 }
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
  Refusals (nothing changed):
    { Refusal.NotFound } / { Refusal.Evicted }: no such job / it was evicted
]]

local key, refusal = find(ARGV[OWN + 1], KEYS[FIXED + 1])
if key == nil then return { refusal } end
local logs = logsKeyOf(key)
local over = redis.call('RPUSH', logs, ARGV[OWN + 2]) - tonumber(ARGV[OWN + 3])
if over > 0 then
  redis.call('LTRIM', logs, over, -1)
  redis.call('HINCRBY', key, 'logsDropped', over)
end
return { 0 }
