--[[
  completeAndPoll: a complete, then a poll of one job, in one round trip.

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua), then KEYS[FIXED + 1], the hash of the job ARGV names
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] n: the job's number
    [OWN + 2] token: its lease's fencing token
    [OWN + 3] result
    [OWN + 4] workerId
    [OWN + 5] leaseMillis
  Replies:
    what poll.lua replies, max 1
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
  Refusals (nothing changed):
    { Refusal.NotFound } / { Refusal.Evicted }: no such job / it was evicted; { Refusal.StaleLease }: the token is not the job's valid lease
]]

local outcome = completeAll(KEYS, ARGV, OWN + 1, OWN + 3, {})
if outcome[1] ~= 0 then return outcome end
return pollBest(oneTaker(ARGV[OWN + 4], ARGV[OWN + 5]), 1, outcome, false)
