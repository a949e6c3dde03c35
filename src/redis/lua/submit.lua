--[[
  submit: stores new jobs (submit, submitMany), all or none. A job whose idempotent key
  is taken (see keyHolder) is not stored: its id is the holder's; a key given twice in one call is
  the first one's. Finished jobs are evicted, oldest first, only as far as room is needed and only
  if that makes enough; an evicted job's key is free.

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua)
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] capacity: the most jobs the queue holds
    [OWN + 2] width: the arguments per job, 13, or 3 when every job of the call has the defaults of all but its
      first three (type, payload and priority are sent; runAt '', delay 0, maxAttempts 0, no key, timeout or
      headers, no debounce or throttle, no group), which keeps the request of a batch of plain jobs short
    then width per job: type, payload, priority, runAt ('' for delay after now), delay, maxAttempts
      (0: its type's policy's if it has one, else the queue's), key ('': none), keyTtl, timeout (0: the poll's),
      headers ('': none), debounce (0: none; else a PENDING holder of the key gets this payload and runs
      debounce after now, and no job is stored), throttle (0: none; else the key is taken while now is
      within throttle of its holder's submittedAt, whatever the holder's status), group ('': none; the
      first job of the queue's life to name one makes groups take turns: includes/turns.lua)
    then, only when some job's payload is binary (raw bytes), one more: a '0' or '1' per job, '1' for
      a binary payload (includes/call.lua, payloadFields)
  Replies:
    { 0, n, n, ... }: each job's number (a key holder's for a job not stored); clients waiting for work are woken
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua),
      or started its groups' turns (includes/turns.lua), and stopped before its own work: call it again
  Refusals (nothing changed):
    { Refusal.NoSlot }: not enough room, even evicting every finished job
]]

local capacity = tonumber(ARGV[OWN + 1])
local WIDTH = tonumber(ARGV[OWN + 2])
local first = OWN + 3
-- A job's argument at offset k (0: its type), the default when the call sends only the first WIDTH.
local DEFAULTS = { [3] = '', [4] = '0', [5] = '0', [6] = '', [7] = '0', [8] = '0', [9] = '', [10] = '0', [11] = '0', [12] = '' }
local function field(j, k)
  if k < WIDTH then return ARGV[first + (j - 1) * WIDTH + k] end
  return DEFAULTS[k]
end
local total = math.floor((#ARGV - first + 1) / WIDTH)
-- Which payloads are binary: nil when none is (a text batch sends nothing more).
local binaries = (#ARGV - first + 1) % WIDTH == 1 and ARGV[#ARGV] or nil
local function isBinary(j) return binaries ~= nil and string.byte(binaries, j) == 49 end
-- Groups start taking turns on a ready index exact for now: behind the clock (includes/call.lua), a submit that
-- names the queue's first group makes it so before it changes anything.
if behind then
  for j = 1, total do
    if field(j, 12) ~= '' then
      if not exactNow() then return { CATCHING_UP } end
      break
    end
  end
end
-- Per job: the id it gets without being stored (a key's holder's), or the index of the earlier job whose key it repeats.
local holders, repeats, firstWithKey = {}, {}, {}
local count = 0
for j = 1, total do
  local k = field(j, 6)
  if k ~= '' and firstWithKey[k] then
    repeats[j] = firstWithKey[k]
  else
    if k ~= '' then
      firstWithKey[k] = j
      if field(j, 10) ~= '0' then
        holders[j] = pendingKeyHolder(k)
      else
        holders[j] = keyHolder(k, tonumber(field(j, 11)))
      end
    end
    if not holders[j] then count = count + 1 end
  end
end
if not roomFor(count, capacity) then return { Refusal.NoSlot } end
if WIDTH > 12 and not startTurnsIfNamed(ARGV, first, total, WIDTH, 12) then return { CATCHING_UP } end
local ids = { 0 }
local seq = redis.call('INCRBY', K.jobSeq, count) - count
local pending, ready, numbers = {}, {}, {}
-- The maxAttempts of each type's own policy met in this call ('0': none), for its jobs without their own.
local typeAttempts = {}
for j = 1, total do
  if repeats[j] then
    ids[j + 1] = ids[repeats[j] + 1]
  elseif holders[j] then
    if field(j, 10) ~= '0' then
      -- Debounce: the holder's payload and runAt in this one script, so a poll leases it wholly as it was or as edited.
      local held = jobKey(holders[j])
      redis.call('HSET', held, unpack(payloadFields({}, field(j, 1), isBinary(j))))
      clearBinaryPayload(held, isBinary(j))
      refile(holders[j], held, { 'runAt', num(now + tonumber(field(j, 10))) })
    end
    ids[j + 1] = holders[j]
  else
    seq = seq + 1
    local n = jobNumberOf(seq)
    local key = jobKey(n)
    local fields, runAt = newJobFields(field(j, 0), field(j, 1), field(j, 2), field(j, 3), field(j, 4), field(j, 5), typeAttempts)
    local due = tonumber(runAt)
    pending[#pending + 1] = due
    pending[#pending + 1] = n
    numbers[#numbers + 1] = n
    numbers[#numbers + 1] = n
    local member, turn = newReadyMember(tonumber(field(j, 2)), field(j, 12), n, due)
    if member then
      if turn then fields[17], fields[18] = 'turn', turn end
      ready[#ready + 1] = 0
      ready[#ready + 1] = member
    end
    if isBinary(j) then
      markBinary()
      local at = #fields
      fields[at + 1], fields[at + 2] = 'binaryPayload', '1'
    end
    if field(j, 12) ~= '' then
      local at = #fields
      fields[at + 1], fields[at + 2] = 'group', field(j, 12)
    end
    redis.call('HSET', key, unpack(fields))
    if field(j, 6) ~= '' then
      redis.call('HSET', key, 'key', field(j, 6), 'keyTtl', field(j, 7))
      redis.call('HSET', K.keys, field(j, 6), n)
    end
    if field(j, 8) ~= '0' then redis.call('HSET', key, 'timeout', field(j, 8)) end
    if field(j, 9) ~= '' then redis.call('HSET', key, 'headers', field(j, 9)) end
    ids[j + 1] = n
  end
end
callMany('ZADD', K.pending, pending, 2)
list(K.pendingNums, numbers)
callMany('ZADD', K.ready, ready, 2)
if count > 0 then announce() end
return ids
