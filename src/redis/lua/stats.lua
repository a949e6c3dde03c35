--[[
  stats: the queue's counts, each O(1) (parked jobs: O(1) per job type and group with parked jobs): catching up
  left K.ready exact for now (held and parked jobs are ready too).

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua)
  ARGV: the common arguments (includes/call.lua) only
  Replies:
    { 0, pending, ready, running, succeeded, dead, cancelled, paused (1 or 0) }, and once the queue has flows
      one more: its parents waiting for their children (PENDING at +inf, includes/flows.lua; counted in pending)
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
]]

local parked = 0
if capped then
  for scope = TYPE, GROUP do
    for _, name in ipairs(redis.call('SMEMBERS', K[SCOPES[scope].parked])) do parked = parked + redis.call('ZCARD', parkedOf(scope, name)) end
  end
end
local counts = { 0, redis.call('ZCARD', K.pending), redis.call('ZCARD', K.ready) + redis.call('ZCARD', K.held) + parked,
  redis.call('ZCARD', K.leases), tonumber(redis.call('HGET', K.counts, 'succeeded') or '0'),
  redis.call('ZCARD', K.dead), tonumber(redis.call('HGET', K.counts, 'cancelled') or '0'), paused and 1 or 0 }
if flowing then counts[9] = redis.call('ZCOUNT', K.pending, WAITING_SCORE, WAITING_SCORE) end
return counts
