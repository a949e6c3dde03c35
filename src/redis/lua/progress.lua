--[[
  progress: the progress a lease holder reports of its RUNNING job, kept in the job's hash with the token
  of the lease that reported it (a view shows it only while that token is the job's latest: a new attempt
  starts with none, and the poll scripts never touch it). The lease keeps its end.

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua), then KEYS[FIXED + 1], the hash of the job ARGV names
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] n: the job's number
    [OWN + 2] token: its lease's fencing token
    [OWN + 3] value: the progress, a finite number as JavaScript writes it (stored as that text: exact)
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
redis.call('HSET', key, 'progress', ARGV[OWN + 3], 'progressToken', ARGV[OWN + 2])
return { 0 }
