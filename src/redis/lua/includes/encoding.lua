--[[
  Numbers as text and job members of the ready index. Lua in Redis is 5.1
  with doubles only: numbers cross the boundary as text (`num`, %.17g, is
  exact; `tostring` keeps 14 digits and a reply cuts a number to an integer).
]]

local function int(n) return string.format('%d', n) end
local function num(x) return string.format('%.17g', x) end
local function jobKey(n) return jobPrefix .. n end
-- A job's log (log.lua), beside its hash: in its slot, deleted with it.
local function logsKeyOf(key) return key .. ':logs' end
-- The number of the seq-th job submitted to this partition.
local function jobNumberOf(seq) return int((seq - 1) * partitions + partition + 1) end

-- 16 hex digits that sort as text in the order of the numbers: the IEEE bits,
-- with the sign bit flipped for positives and every bit flipped for negatives.
-- Kept for the call (sortables).
local function sortable(x)
  if x == 0 then x = 0 end -- -0 and 0 are one number
  local known = sortables[x]
  if known then return known end
  local b = { string.byte(struct.pack('>d', x), 1, 8) }
  if b[1] >= 128 then
    for i = 1, 8 do b[i] = 255 - b[i] end
  else
    b[1] = b[1] + 128
  end
  known = string.format(string.rep('%02x', 8), unpack(b))
  sortables[x] = known
  return known
end

-- The number sortable(x) was made from.
local function unsortable(hex)
  local b = {}
  for i = 1, 8 do b[i] = tonumber(string.sub(hex, 2 * i - 1, 2 * i), 16) end
  if b[1] >= 128 then
    b[1] = b[1] - 128
  else
    for i = 1, 8 do b[i] = 255 - b[i] end
  end
  return (struct.unpack('>d', string.char(unpack(b))))
end

-- The member of job n in K.ready: highest priority, then earliest runAt (once groups take turns,
-- lowest turn: turns.lua), then submission order. The first 16 characters are the priority's (the
-- job's turn level), the next 16 its runAt's or turn's, the last 16 n itself.
local function memberOf(priority, order, n)
  return sortable(-priority) .. sortable(order) .. string.format('%016d', tonumber(n))
end

-- Whether ready member a comes before b as a sorted set orders them: by bytes (Lua's `<` is the
-- locale's collation, which Redis sets from the environment).
local function precedes(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- The member job n was filed ready with (its turn, kept in its hash, once groups take turns).
local function readyMember(key, n)
  local f = redis.call('HMGET', key, 'priority', 'runAt', 'turn')
  return memberOf(tonumber(f[1]), tonumber(grouped and f[3] or f[2]), n)
end

-- One command per up to 500 of args (Lua's unpack is bounded): ZADD key score member ..., RPUSH key n ...
local function callMany(command, key, args, width)
  for from = 1, #args, 500 * width do
    redis.call(command, key, unpack(args, from, math.min(#args, from + 500 * width - 1)))
  end
end

-- The state hash's text for a due time.
local function dueText(t)
  if t == math.huge then return 'none' end
  return num(t)
end

-- Something falls due at t (a delayed job's runAt, a lease's leaseUntil): the next due time is no later.
local function dueBy(t)
  if due ~= nil and t < due then
    due = t
    redis.call('HSET', K.state, 'due', dueText(t))
  end
end

-- The time the ready index is kept exact for: now, or the clock while the call runs behind it (call.lua).
-- A job due by then is filed ready, a later one tells the next due time (dueBy).
local function indexedTo() return behind and clock or now end
