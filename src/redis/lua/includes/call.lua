--[[
  The call: what every command reads from its KEYS and ARGV, and the state
  the helpers of one call share.

  KEYS: KEYS[1] (FIXED = 1) the queue's jobSeq key, which names its slot; the
    other fixed keys of KEY_NAMES (keys.ts) are named from its prefix, as
    K.pending, K.ready, ...; then the hashes of the jobs the call names,
    KEYS[FIXED + 1], KEYS[FIXED + 2], ...
  ARGV: the common arguments, ARGV[1 .. OWN] in COMMON_ARGS order (scripts.ts);
    then the command's own, ARGV[OWN + 1], ARGV[OWN + 2], ...

  Every command replies { Refusal.NewerDataModel } (nothing changed) on a
  queue whose K.state names a data model newer than this one (see begin).

  Loaded once as a Functions library, these locals outlive a call: begin()
  sets every one of them afresh as each call starts, so nothing of one call
  is seen by the next. (Redis runs one function at a time.)
]]

-- The queue's fixed keys by name, and the prefix they were named from.
local K, namedFor = {}, nil
-- Each status's listing set: its jobs by number, for jobs() to page through (see jobs.lua).
local numsOf
local jobPrefix
-- Job type t's parked set is parkedPrefix .. t, group g's parkedGroupPrefix .. g (see caps.lua).
local parkedPrefix, parkedGroupPrefix
-- The calling process's liveness key is alivePrefix .. holder (see liveness.ts).
local alivePrefix, holder
-- The call's clock, as sent (exact text) and as a number.
local nowText, now
-- The retry policy.
local maxAttempts, baseBackoff, maxBackoff, jitter
-- The common settings argument (SETTINGS in scripts.ts) as last parsed, and its values in that order: a client
-- sends the same text on every call, so a library call, whose locals outlive it, parses it only when it changes.
local settingsText, settings
-- Job numbers: partition + 1, then every partitions-th (1, 2, 3, ... for a queue of one partition).
local partitions, partition
-- The retain option: finished jobs kept at most (nil: no limit), and for how long after they finished.
local maxFinished, maxAge
-- The retain option's DEAD limits: DEAD jobs kept at most, and for how long after they died (nil: no limit).
local maxDead, maxDeadAge
-- Whether the listing sets other than K.dead are kept: only once jobs() was first called on the
-- queue (K.listing exists, and K.state says listed; see listing.lua). A queue that never lists pays nothing for them.
local listed
-- Sortable forms of numbers already made in this call (see encoding.lua): a batch's jobs mostly
-- share a priority and a runAt.
local sortables
-- Items of catching up (catch-up.lua) and of held jobs (leases.lua) the call may still move.
local budget, holdBudget
-- True while the catch-up of a queue whose groups take turns expires leases before its sweep of the ready
-- index (catch-up.lua): a retry due by now is left for the sweep to file (jobs.lua, enqueue).
local sweepFiles
-- True while the call runs behind the clock: its now is before the clock the ready index is exact for, and it
-- went on without making the index exact for its now (catch-up.lua, caughtUp), as only a submit or a poll may.
-- Clients' clocks and calls interleave: a submit's now is often a millisecond or two past a poll sent just
-- before it, and a sweep back and forth would take the jobs it filed out of the index and put them back.
local behind
-- The queue's state hash (K.state, see keys.ts) as the call found it, and as the call changes it: the
-- clock the ready index is exact for (nil: none yet), when something next falls due (nil: not known,
-- catch up in full), the sweep in progress (nil: none), the pause, whether rate limits may hold jobs,
-- the wake counter, and whether some job type has a retry policy of its own (K.policies).
local clock, due, sweepSaved, paused, limited, signal, policied
-- The bound of the queue's event stream while a subscriber has turned events on (K.state's `events`;
-- see events.lua), else nil: a queue no one watches writes no event. eventsUntil: when (Redis's clock,
-- ms) events go off unless a subscriber renews them; nil: not known, or already checked in this call.
local eventsMax, eventsUntil
-- The concurrency caps (caps.lua): whether some job type has a cap or parked jobs (K.state's `capped`),
-- and the whole queue's cap (K.state's `queueCap`; nil: none). A queue without caps reads nothing more.
local capped, queueCap
-- Whether groups take turns (turns.lua): once a queue names a group, K.state's version is GROUPED_MODEL
-- for the rest of its life, and its ready jobs are filed by (priority, turn, submission). A client of
-- a build without groups refuses such a queue (NewerDataModel) rather than file jobs out of turn.
local grouped
-- Whether the queue may hold binary values (a job's payload or result stored as raw bytes, its hash
-- marking it with binaryPayload / binaryResult = '1'): once a call stores the first, K.state's version
-- is BINARY_MODEL (GROUPED_BINARY_MODEL with groups) for the rest of the queue's life (markBinary),
-- so that a client of a build without bytes refuses the queue (NewerDataModel) rather than hand its
-- workers the bytes decoded as text, or overwrite a payload and leave its mark.
local binary
-- Whether the queue may hold flows (includes/flows.lua): once a call stores the first, K.state's version is
-- FLOW_MODEL and up (2 to 5 moved up by 4) for the rest of the queue's life, so that a client of a build
-- without flows refuses the queue (NewerDataModel) rather than lease a waiting parent's children without
-- counting their ends. A queue that never stored a flow reads and writes nothing of them.
local flowing
-- Whether groups start to take turns (turns.lua): from the first group a queue names until every job filed
-- ready before has its turn, K.state's version is TURNING_MODEL and up (the grouped version moved up by 8),
-- and every call's catch-up first gives the next batch of them theirs (turnSome). A build that cannot
-- refuses the queue (NewerDataModel) meanwhile: it would find the ready index half in K.unturned.
local turning

-- A queue of data model 1 (no K.state: its clock, sweep, pause and wake counter in keys of their own)
-- converted in place, atomically, by the first call that finds it: those move into K.state, whose flags
-- say whether rate limits may hold jobs and whether the listing sets are kept. Its next due time is
-- left unknown, so that call catches up in full and sets it. Returns what begin's read would have: the fields by name.
local function migrate()
  local sweep = redis.call('HMGET', K.sweep, 'min', 'max', 'offset', 'add', 'to')
  local f = { DATA_MODEL, redis.call('GET', K.clock), false,
    redis.call('EXISTS', K.paused) == 1 and '1' or false,
    (redis.call('EXISTS', K.limits) == 1 or redis.call('EXISTS', K.held) == 1) and '1' or false,
    redis.call('EXISTS', K.listing) == 1 and '1' or false,
    redis.call('GET', K.signal), sweep[1], sweep[2], sweep[3], sweep[4], sweep[5], false,
    redis.call('HGET', K.state, 'events'), redis.call('HGET', K.state, 'eventsUntil') }
  local fields = { 'version', 'clock', 'due', 'paused', 'limited', 'listed', 'signal', 'sweepMin', 'sweepMax', 'sweepOffset', 'sweepAdd', 'sweepTo' }
  local values = {}
  for i, field in ipairs(fields) do
    if f[i] then
      values[#values + 1] = field
      values[#values + 1] = f[i]
    end
  end
  redis.call('HSET', K.state, unpack(values))
  redis.call('DEL', K.clock, K.sweep, K.paused, K.signal)
  local state = {}
  for i, field in ipairs(fields) do state[field] = f[i] or nil end
  state.events, state.eventsUntil = f[14] or nil, f[15] or nil
  return state
end

local function begin(KEYS, ARGV)
  -- One key declared instead of all 22: a call's request is about 900 bytes shorter, so 16 of them
  -- fit in the 16 KB Redis reads per client per event-loop pass, and share one AOF fsync.
  local base = string.sub(KEYS[1], 1, -1 - #DECLARED_SUFFIX)
  -- The names follow from base alone: a call on the queue of the call before reuses them.
  if base ~= namedFor then
    for _, name in ipairs(KEY_NAMES) do K[name] = base .. name end
    numsOf = { PENDING = K.pendingNums, RUNNING = K.runningNums, SUCCEEDED = K.succeededNums, DEAD = K.dead, CANCELLED = K.cancelledNums }
    jobPrefix, alivePrefix, parkedPrefix, parkedGroupPrefix = base .. 'job:', base .. 'alive:', base .. 'parked:', base .. 'parkedGroup:'
    namedFor = base
  end
  holder = ARGV[ARG.holder]
  nowText = ARGV[ARG.now]
  now = tonumber(nowText)
  -- Redis seeds math.random alike on every call; jitter needs the client's seed.
  math.randomseed(tonumber(ARGV[ARG.seed]))
  local text = ARGV[ARG.settings]
  if text ~= settingsText then
    local s = {}
    for field in string.gmatch(text .. ',', '([^,]*),') do s[#s + 1] = field end
    settings = { tonumber(s[1]), tonumber(s[2]), tonumber(s[3]), s[4], tonumber(s[5]), tonumber(s[6]), tonumber(s[7]), tonumber(s[8]), tonumber(s[9]), tonumber(s[10]) }
    settingsText = text
  end
  maxAttempts, baseBackoff, maxBackoff, jitter = settings[1], settings[2], settings[3], settings[4]
  partitions, partition = settings[5], settings[6]
  maxFinished, maxAge, maxDead, maxDeadAge = settings[7], settings[8], settings[9], settings[10]
  sortables = {}
  budget, holdBudget = CATCH_UP_BATCH, CATCH_UP_BATCH
  sweepFiles = false
  behind = false
  -- One read for what every call consults: the flags and the catch-up's clock and next due time. The hash
  -- holds only those fields (and eventSeq), most of them absent: reading it whole costs the script less than
  -- naming all 17 (each an argument and a reply element converted), about 3 µs a call.
  local s = {}
  local all = redis.call('HGETALL', K.state)
  for i = 1, #all, 2 do s[all[i]] = all[i + 1] end
  if s.version == nil then s = migrate() end
  -- A newer leasehold's layout: nothing here may read or write it.
  local version = s.version
  flowing = false
  -- TURNING_MODEL + 1, 3, 5 or 7: a grouped model (3, 5, 7, 9) whose turns start, read as that model from here on.
  local turningAt = (tonumber(version) or -1) - TURNING_MODEL
  turning = (turningAt == 1 or turningAt == 3 or turningAt == 5 or turningAt == 7) and version == string.format('%d', turningAt + TURNING_MODEL)
  if turning then version = string.format('%d', turningAt + tonumber(DATA_MODEL)) end
  if version ~= DATA_MODEL and version ~= GROUPED_MODEL and version ~= BINARY_MODEL and version ~= GROUPED_BINARY_MODEL then
    -- FLOW_MODEL + 0 to 3, as written (modelVersion): the same four with flows (see flowing).
    local offset = (tonumber(version) or -1) - FLOW_MODEL
    if (offset ~= 0 and offset ~= 1 and offset ~= 2 and offset ~= 3) or version ~= string.format('%d', offset + FLOW_MODEL) then
      return { Refusal.NewerDataModel }
    end
    flowing = true
    version = string.format('%d', offset + tonumber(DATA_MODEL))
  end
  grouped = version == GROUPED_MODEL or version == GROUPED_BINARY_MODEL
  binary = version == BINARY_MODEL or version == GROUPED_BINARY_MODEL
  clock, due = s.clock and tonumber(s.clock), nil
  if s.due == 'none' then due = math.huge elseif s.due then due = tonumber(s.due) end
  paused, limited, listed, signal, policied = s.paused == '1', s.limited == '1', s.listed == '1', s.signal or '0', s.policies == '1'
  eventsMax = s.events and tonumber(s.events) or nil
  eventsUntil = s.eventsUntil and tonumber(s.eventsUntil) or nil
  capped, queueCap = s.capped == '1', s.queueCap and tonumber(s.queueCap) or nil
  sweepSaved = nil
  if s.sweepMin then sweepSaved = { s.sweepMin, s.sweepMax, tonumber(s.sweepOffset), s.sweepAdd == '1', s.sweepTo } end
end

-- The queue's data model from this call on: its version names whether groups take turns (or start to)
-- whether binary values may be stored, and whether flows were (see grouped, turning, binary, flowing above).
local function modelVersion()
  local version = DATA_MODEL
  if grouped then version = binary and GROUPED_BINARY_MODEL or GROUPED_MODEL
  elseif binary then version = BINARY_MODEL end
  if flowing then version = string.format('%d', tonumber(version) - tonumber(DATA_MODEL) + FLOW_MODEL) end
  if turning then return string.format('%d', tonumber(version) - tonumber(DATA_MODEL) + TURNING_MODEL) end
  return version
end

-- Called by each call that stores a binary value, before it does: the queue's version says so from then on.
local function markBinary()
  if binary then return end
  binary = true
  redis.call('HSET', K.state, 'version', modelVersion())
end

-- The fields that set a job's payload to `payload` (binary: raw bytes, marked), appended to fields;
-- a text payload over a binary one loses the mark (clearBinaryPayload). Marks the queue if binary.
local function payloadFields(fields, payload, isBinary)
  fields[#fields + 1] = 'payload'
  fields[#fields + 1] = payload
  if isBinary then
    markBinary()
    fields[#fields + 1] = 'binaryPayload'
    fields[#fields + 1] = '1'
  end
  return fields
end

-- After a text payload replaced the job's payload: its binary mark goes, if the queue may have one
-- (a queue that never held bytes pays nothing).
local function clearBinaryPayload(key, isBinary)
  if binary and not isBinary then redis.call('HDEL', key, 'binaryPayload') end
end
