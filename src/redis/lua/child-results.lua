--[[
  childResults: the results of a flow's parent's direct children that SUCCEEDED and are still held (a child
  evicted or removed is missing), in submission order.

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua), then KEYS[FIXED + 1], the hash of the job ARGV names
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] n: the parent's number
  Replies:
    { 0, then 3 per child that SUCCEEDED: its n, its result ('' when it has none), and '1' for a result
      (JSON text), 'b' for a binary one (raw bytes), '' for none }
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
  Refusals (nothing changed):
    { Refusal.NotFound } / { Refusal.Evicted }: no such job / it was evicted
]]

local key, refusal = find(ARGV[OWN + 1], KEYS[FIXED + 1])
if key == nil then return { refusal } end
local out = { 0 }
local children = redis.call('HGET', key, 'children')
if not children then return out end
for child in string.gmatch(children, '%d+') do
  local f = redis.call('HMGET', jobKey(child), 'status', 'result', 'binaryResult')
  if f[1] == 'SUCCEEDED' then
    out[#out + 1] = child
    out[#out + 1] = f[2] or ''
    out[#out + 1] = not f[2] and '' or (f[3] and 'b' or '1')
  end
end
return out
