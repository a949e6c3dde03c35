--[[
  groupConcurrencyCaps: every group's concurrency cap (includes/caps.lua).

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua)
  ARGV: the common arguments (includes/call.lua) only
  Replies:
    { 0, { group, max, ... } }
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
]]

return { 0, redis.call('HGETALL', K.groupCaps) }
