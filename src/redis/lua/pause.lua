--[[
  pause: pauses the queue for every client: polls lease nothing until resume.

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua)
  ARGV: the common arguments (includes/call.lua) only
  Replies:
    { 0 }
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
]]

redis.call('HSET', K.state, 'paused', '1')
return { 0 }
