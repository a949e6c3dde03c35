--[[
  resume: ends a pause; clients waiting for work wake and poll again.

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua)
  ARGV: the common arguments (includes/call.lua) only
  Replies:
    { 0 }
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
]]

if redis.call('HDEL', K.state, 'paused') == 1 then announce() end
return { 0 }
