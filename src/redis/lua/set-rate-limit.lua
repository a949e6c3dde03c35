--[[
  setRateLimit: sets or removes a type's rate limit. Every held job goes back to the ready
  index (the next poll holds again those still limited), CATCH_UP_BATCH per call, and waiting
  clients wake. A new limit counts from now; a changed one keeps the current window's count.

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua)
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] type
    [OWN + 2] max ('0': remove the type's limit)
    [OWN + 3] windowMillis
  Replies:
    { 0 }; { CATCHING_UP } also while held jobs are left to put back (setting the limit again changes nothing)
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
]]

local jobType, max = ARGV[OWN + 1], ARGV[OWN + 2]
if max == '0' then
  redis.call('HDEL', K.limits, jobType)
  redis.call('HDEL', K.windows, jobType)
else
  redis.call('HSET', K.limits, jobType, max .. ',' .. ARGV[OWN + 3])
  redis.call('HSET', K.state, 'limited', '1')
  limited = true
end
-- Run again (setting the limit again changes nothing) until every held job is back.
if not releaseHeld('+inf') then return { CATCHING_UP } end
-- Every held job is back: with no limit left, polls skip the limits (see limited).
if limited and redis.call('EXISTS', K.limits) == 0 then
  redis.call('HDEL', K.state, 'limited')
  limited = false
end
announce()
return { 0 }
