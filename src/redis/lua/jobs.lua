--[[
  jobs: a page of the jobs listing (the first call builds the listing sets: includes/listing.lua).
  Each listing set is read from `after` on, a window of limit + 1 numbers (typed: SCAN_BUDGET);
  only numbers up to the end of the shortest full window are known to be all there are, so the
  page stops there. Typed, at most SCAN_BUDGET jobs are looked at.

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua)
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] status ('' for every status)
    [OWN + 2] after: a job number
    [OWN + 3] limit
    [OWN + 4] typed: '1' or '0'
    [OWN + 5] type
  Replies:
    { 0, where the next page goes on after ('' for none), then n, { field, value, ... } of each job listed, in job-number order }
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
]]

if not listingBuilt() then return { CATCHING_UP } end
local status, after, limit, typed, wantedType = ARGV[OWN + 1], ARGV[OWN + 2], tonumber(ARGV[OWN + 3]), ARGV[OWN + 4] == '1', ARGV[OWN + 5]
local window = typed and SCAN_BUDGET or limit + 1
local sources = { numsOf[status] }
if status == '' then sources = { K.pendingNums, K.runningNums, K.succeededNums, K.dead, K.cancelledNums } end
local candidates, covered = {}, math.huge
for _, source in ipairs(sources) do
  local numbers = redis.call('ZRANGEBYSCORE', source, '(' .. after, '+inf', 'LIMIT', 0, window)
  for _, n in ipairs(numbers) do candidates[#candidates + 1] = tonumber(n) end
  if #numbers == window then covered = math.min(covered, tonumber(numbers[#numbers])) end
end
table.sort(candidates)
local out = { 0, '' }
local listed, examined, last = 0, 0, 0
for _, n in ipairs(candidates) do
  if n > covered then break end
  if listed == limit or (typed and examined == SCAN_BUDGET) then
    out[2] = int(last)
    return out
  end
  examined = examined + 1
  last = n
  local key = jobKey(int(n))
  if not typed or redis.call('HGET', key, 'type') == wantedType then
    out[#out + 1] = int(n)
    out[#out + 1] = redis.call('HGETALL', key)
    listed = listed + 1
  end
end
if covered ~= math.huge then out[2] = int(covered) end
return out
