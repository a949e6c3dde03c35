--[[
  completeAndPollMerged: several completeAndPoll calls of one client, sent in the same tick, in one
  script. The result is that of the calls run one after another in their order (each a complete
  and, if it was not refused, a poll of one job for its own worker), so each call takes effect
  inside its own invocation-response window. On a queue where a complete can change what a poll
  takes (flows, caps, rate limits, groups) they run one after another as that; on any other, the
  completes run first, in one batch, and one poll then leases a job to each caller whose complete
  succeeded, in their order, as many as there are ready.

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua), then the hash of each call's job, in ARGV's order
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] count: how many calls
    then 3 per call: n, token, result (as complete.lua takes them)
    then 2 per call, in the same order: workerId, leaseMillis
  Replies:
    { 0, count, each call's outcome (its Refusal, or how many jobs it leased: 0 or 1), the wake counter,
      when the first held job's window opens ('' none; 'again': a call that leased nothing may poll
      again), then the leases as poll.lua replies them, in the order of the calls that leased one }
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
]]

local count = tonumber(ARGV[OWN + 1])
local first = OWN + 2
local takersAt = first + 3 * count
local function takerOf(call) return ARGV[takersAt + 2 * (call - 1)], ARGV[takersAt + 2 * call - 1] end
local out = { 0, count }

if flowing or capped or limited or grouped or queueCap ~= nil then
  -- One after another: a complete may free a place, end a flow's child or pass a group's turn.
  local signalAt, held = nil, ''
  local leases = {}
  for call = 1, count do
    local at = first + 3 * (call - 1)
    local outcome = completeAll({ [FIXED] = KEYS[FIXED], [FIXED + 1] = KEYS[FIXED + call] }, ARGV, at, at + 2, {})[1]
    if outcome == 0 then
      local polled = pollBest(oneTaker(takerOf(call)), 1, {}, false)
      signalAt = signalAt or polled[1]
      if held ~= 'again' then held = polled[2] end
      for i = 3, #polled do leases[#leases + 1] = polled[i] end
      outcome = (#polled > 2) and 1 or 0
    end
    out[2 + call] = outcome
  end
  out[#out + 1] = signalAt or signal
  out[#out + 1] = held
  for i = 1, #leases do out[#out + 1] = leases[i] end
  return out
end

completeAll(KEYS, ARGV, first, takersAt - 1, out)
local takers = {}
for call = 1, count do
  if out[2 + call] == 0 then takers[#takers + 1] = call end
end
pollBest(function(i) return takerOf(takers[i]) end, #takers, out, false)
-- The leases went to the first takers, in their order (LEASE_FIELDS each, after the counter and the held mark).
local leased = (#out - (2 + count) - 2) / LEASE_FIELDS
for i = 1, leased do out[2 + takers[i]] = 1 end
return out
