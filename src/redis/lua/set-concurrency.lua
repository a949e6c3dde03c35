--[[
  setConcurrency: sets or removes a concurrency cap (includes/caps.lua): the whole queue's or a
  job type's. A type's first cap counts its jobs RUNNING now (a scan of K.leases, O(running));
  a changed cap keeps the count. A cap lowered below the jobs RUNNING stops none of them. Clients
  waiting for work are woken: a cap raised or removed may let them lease.

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua)
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] type ('': the whole queue's cap; a type is never blank)
    [OWN + 2] max, an integer >= 1 ('': remove the cap)
  Replies:
    { 0 }
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
]]

local jobType, max = ARGV[OWN + 1], ARGV[OWN + 2]
if jobType == '' then
  if max == '' then redis.call('HDEL', K.state, 'queueCap') else redis.call('HSET', K.state, 'queueCap', max) end
else
  setCap(TYPE, jobType, max)
end
announce()
return { 0 }
