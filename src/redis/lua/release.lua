--[[
  release: the lease handed back unfinished: PENDING, ready delay after now (a snooze; 0: ready now),
  the attempt not counted.

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua), then KEYS[FIXED + 1], the hash of the job ARGV names
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] n: the job's number
    [OWN + 2] token: its lease's fencing token
    [OWN + 3] delay: milliseconds, >= 0 (absent: 0)
  Replies:
    { 0 }
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
  Refusals (nothing changed):
    { Refusal.NotFound } / { Refusal.Evicted }: no such job / it was evicted; { Refusal.StaleLease }: the token is not the job's valid lease
]]

local n = ARGV[OWN + 1]
local key, refusal = leased(n, ARGV[OWN + 2], KEYS[FIXED + 1])
if key == nil then return { refusal } end
-- Its place under a cap is free (caps.lua); the announce below wakes whoever waits for it.
leavesRunning(key)
redis.call('ZREM', K.leases, n)
redis.call('HDEL', K.tokens, n)
unlist(K.runningNums, { n })
redis.call('HINCRBY', key, 'attempts', -1)
local runAt = now + tonumber(ARGV[OWN + 3] or '0')
redis.call('HSET', key, 'status', 'PENDING', 'runAt', num(runAt))
enqueue(n, key, runAt)
announce()
return { 0 }
