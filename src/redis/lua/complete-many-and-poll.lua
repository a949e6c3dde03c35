--[[
  completeManyAndPoll: completes of a batch, then a poll, in one round trip. Each complete is
  checked on its own: a refused one changes nothing and does not stop the others.

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua), then the hash of each job to complete, in ARGV's order
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] workerId
    [OWN + 2] leaseMillis
    [OWN + 3] max: jobs to poll
    then 3 per complete: n, token, result
  Replies:
    { 0, count of completes, each one's outcome (0 or its Refusal), then what poll.lua replies after its 0 }
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
]]

local first = OWN + 4
local out = completeAll(KEYS, ARGV, first, #ARGV, { 0, (#ARGV - first + 1) / 3 })
return pollBest(oneTaker(ARGV[OWN + 1], ARGV[OWN + 2]), tonumber(ARGV[OWN + 3]), out, false)
