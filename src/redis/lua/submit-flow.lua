--[[
  submitFlow: stores a flow's jobs, all or none: a parent waits, PENDING, for its children (includes/flows.lua).
  Finished jobs are evicted, oldest first, only as far as room is needed and only if that makes enough.
  The first flow of the queue's life moves its data model up (startFlows).

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua)
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] capacity: the most jobs the queue holds
    then 12 per job, each parent before its children: type, payload, priority, runAt ('' for delay after now),
      delay, maxAttempts (0: its type's policy's if it has one, else the queue's), timeout (0: the poll's),
      headers ('': none), group ('': none), parent (the index, from 1, of its parent among these jobs; 0 for
      the root), children (how many direct children it has), ignore ('1': its onChildFailure is 'ignore')
    then, only when some job's payload is binary (raw bytes), one more: a '0' or '1' per job, '1' for a binary payload
  Replies:
    { 0, n, n, ... }: each job's number, in ARGV's order; clients waiting for work are woken
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua),
      or started its groups' turns (includes/turns.lua), and stopped before its own work: call it again
  Refusals (nothing changed):
    { Refusal.NoSlot }: not enough room, even evicting every finished job
]]

local capacity = tonumber(ARGV[OWN + 1])
local first = OWN + 2
local WIDTH = 12
local total = math.floor((#ARGV - first + 1) / WIDTH)
local binaries = (#ARGV - first + 1) % WIDTH == 1 and ARGV[#ARGV] or nil
if not roomFor(total, capacity) then return { Refusal.NoSlot } end
if not startTurnsIfNamed(ARGV, first, total, WIDTH, 8) then return { CATCHING_UP } end
startFlows()
local ids = { 0 }
local seq = redis.call('INCRBY', K.jobSeq, total) - total
-- Per parent (by index): its children's numbers, for its hash's `children`.
local childrenOf = {}
local pending, ready, numbers = {}, {}, {}
local typeAttempts = {}
for j = 1, total do
  local i = first + (j - 1) * WIDTH
  local n = jobNumberOf(seq + j)
  local key = jobKey(n)
  local fields, runAt = newJobFields(ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], typeAttempts)
  local function add(field, value)
    fields[#fields + 1] = field
    fields[#fields + 1] = value
  end
  local parent = tonumber(ARGV[i + 9])
  if parent > 0 then
    add('parent', ids[parent + 1])
    local siblings = childrenOf[parent]
    siblings[#siblings + 1] = n
  end
  local children = tonumber(ARGV[i + 10])
  numbers[#numbers + 1] = n
  numbers[#numbers + 1] = n
  if children > 0 then
    childrenOf[j] = {}
    add('waiting', children)
    if ARGV[i + 11] == '1' then add('ignoreChildFailure', '1') end
    pending[#pending + 1] = WAITING_SCORE
    pending[#pending + 1] = n
  else
    local due = tonumber(runAt)
    pending[#pending + 1] = due
    pending[#pending + 1] = n
    local member, turn = newReadyMember(tonumber(ARGV[i + 2]), ARGV[i + 8], n, due)
    if member then
      if turn then add('turn', turn) end
      ready[#ready + 1] = 0
      ready[#ready + 1] = member
    end
  end
  if binaries ~= nil and string.byte(binaries, j) == 49 then
    markBinary()
    add('binaryPayload', '1')
  end
  if ARGV[i + 8] ~= '' then add('group', ARGV[i + 8]) end
  if ARGV[i + 6] ~= '0' then add('timeout', ARGV[i + 6]) end
  if ARGV[i + 7] ~= '' then add('headers', ARGV[i + 7]) end
  redis.call('HSET', key, unpack(fields))
  ids[j + 1] = n
end
for j, children in pairs(childrenOf) do redis.call('HSET', jobKey(ids[j + 1]), 'children', table.concat(children, ',')) end
callMany('ZADD', K.pending, pending, 2)
list(K.pendingNums, numbers)
callMany('ZADD', K.ready, ready, 2)
announce()
return ids
