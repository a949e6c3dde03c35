--[[
  deadLetters: a page of the dead-letter list.

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua)
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] after: a job number
  Replies:
    { 0, n, { field, value, ... }, ... }: the first DEAD_LETTERS_PAGE DEAD jobs numbered above after, in submission order
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
]]

local out = { 0 }
for _, n in ipairs(redis.call('ZRANGEBYSCORE', K.dead, '(' .. ARGV[OWN + 1], '+inf', 'LIMIT', 0, DEAD_LETTERS_PAGE)) do
  out[#out + 1] = n
  out[#out + 1] = redis.call('HGETALL', jobKey(n))
end
return out
