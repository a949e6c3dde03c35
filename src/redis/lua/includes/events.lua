--[[
  The queue's event stream (K.events): one entry per move of a job that a subscriber hears of
  (src/redis/events.ts), written by the script that makes the move, so every process's moves
  are in it whoever made them. Written only while K.state's `events` holds a bound (a
  subscriber sets it; begin reads it with the flags it reads anyway): a queue no one watches pays
  two more fields of that HMGET (events, eventsUntil) and nothing else.

  An entry's fields:
    k: completed | retrying | dead | cancelled (a failed attempt is retrying or dead)
    q: its sequence number in the queue (K.state's eventSeq): a subscriber that finds one
       missing knows how many entries the bound trimmed before it read them
    n: the job's number; t: its type; a: its attempt
    w: how long the attempt's lease waited for the job after it was due (ms of the queue's clock)
    d: how long the attempt ran, from its lease to the move (ms of the queue's clock)
    e: the error (retrying, dead), absent otherwise
    s: '1' when the attempt failed because its lease expired (a stall), absent otherwise
  The stream is capped with XADD's MAXLEN ~ bound: Redis trims whole nodes, so it holds at
  least `bound` entries and at most about 100 more.

  Subscribers renew K.state's `eventsUntil` (Redis's clock, ms) while they read (events.ts): the
  first event of a call past it turns events off (`events` and `eventsUntil` deleted), so a queue
  whose subscribers all went away, closed or not, stops paying for events.
]]

-- Whether events are still on: false once the subscribers' renewal lapsed (and then turned off).
-- Reads Redis's clock once per call at most, and only while events are on.
local function eventsRenewed()
  if eventsUntil == nil then return true end
  local t = redis.call('TIME')
  if tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) > eventsUntil then
    redis.call('HDEL', K.state, 'events', 'eventsUntil')
    eventsMax, eventsUntil = nil, nil
    return false
  end
  eventsUntil = nil
  return true
end

-- Notes job n's move `kind` in the stream, before the move rewrites the job's hash (a retry moves
-- runAt): `at` is when its attempt ended (nil for a job that was not RUNNING: no wait, no duration).
-- One call per move site: complete, fail and expiry, cancel.
local function noteEvent(kind, n, key, at, err, stalled)
  if eventsMax == nil or not eventsRenewed() then return end
  local f = redis.call('HMGET', key, 'type', 'attempts', 'startedAt', 'runAt', 'submittedAt')
  local startedAt = tonumber(f[3] or '')
  local wait, ran = 0, 0
  if startedAt and at then
    -- As the lease's waitMillis (leases.lua): from when it was due (runAt, or its submit if later) to its lease.
    local runAt = tonumber(f[4])
    wait = math.max(0, startedAt - math.max(runAt, tonumber(f[5] or f[4])))
    ran = math.max(0, at - startedAt)
  end
  local fields = { 'k', kind, 'q', redis.call('HINCRBY', K.state, 'eventSeq', 1), 'n', n, 't', f[1], 'a', f[2], 'w', num(wait), 'd', num(ran) }
  if err then
    fields[#fields + 1] = 'e'
    fields[#fields + 1] = err
  end
  if stalled then
    fields[#fields + 1] = 's'
    fields[#fields + 1] = '1'
  end
  redis.call('XADD', K.events, 'MAXLEN', '~', eventsMax, '*', unpack(fields))
end
