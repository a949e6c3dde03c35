--[[
  concurrencyCaps: the whole queue's concurrency cap and every job type's (includes/caps.lua).

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua)
  ARGV: the common arguments (includes/call.lua) only
  Replies:
    { 0, the queue's cap ('' for none), { type, max, ... } }
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
]]

return { 0, queueCap and int(queueCap) or '', redis.call('HGETALL', K.caps) }
