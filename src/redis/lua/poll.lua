--[[
  poll: leases up to max ready jobs, best first (none while the queue is paused).

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua)
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] workerId
    [OWN + 2] leaseMillis: for jobs without a timeout of their own
    [OWN + 3] max
  Replies:
    { 0, wake counter, when the first held job's window opens ('' none; 'again': poll again), then per lease its type, payload, headers ('' none) and 'n,token,attempt,maxAttempts,leaseUntil,timeout,waitMillis,binary' (timeout '': none; binary '1': the payload is raw bytes, '': text) }: up to max ready jobs, best first, tokens consecutive
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
]]

return pollBest(oneTaker(ARGV[OWN + 1], ARGV[OWN + 2]), tonumber(ARGV[OWN + 3]), { 0 }, true)
