--[[
  The call: what every command reads from its KEYS and ARGV, and the state
  the helpers of one call share.

  KEYS: KEYS[1] (FIXED = 1) the queue's jobSeq key, which names its slot; the
    other fixed keys of KEY_NAMES (keys.ts) are named from its prefix, as
    K.pending, K.ready, ...; then the hashes of the jobs the call names,
    KEYS[FIXED + 1], KEYS[FIXED + 2], ...
  ARGV: the common arguments, ARGV[1 .. OWN] in COMMON_ARGS order (scripts.ts);
    then the command's own, ARGV[OWN + 1], ARGV[OWN + 2], ...

  Loaded once as a Functions library, these locals outlive a call: begin()
  sets every one of them afresh as each call starts, so nothing of one call
  is seen by the next. (Redis runs one function at a time.)
]]

-- The queue's fixed keys by name.
local K = {}
-- Each status's listing set: its jobs by number, for jobs() to page through (see jobs.lua).
local numsOf
local jobPrefix
-- The calling process's liveness key is alivePrefix .. holder (see liveness.ts).
local alivePrefix, holder
-- The call's clock, as sent (exact text) and as a number.
local nowText, now
-- The retry policy.
local maxAttempts, baseBackoff, maxBackoff, jitter
-- Job numbers: partition + 1, then every partitions-th (1, 2, 3, ... for a queue of one partition).
local partitions, partition
-- The retain option: finished jobs kept at most (nil: no limit), and for how long after they finished.
local maxFinished, maxAge
-- Whether the listing sets other than K.dead are kept: only once jobs() was first called on the
-- queue (K.listing exists; see listing.lua). A queue that never lists pays nothing for them.
local listed
-- Sortable forms of numbers already made in this call (see encoding.lua): a batch's jobs mostly
-- share a priority and a runAt.
local sortables
-- Items of catching up (catch-up.lua) and of held jobs (leases.lua) the call may still move.
local budget, holdBudget

local function begin(KEYS, ARGV)
  -- One key declared instead of all 22: a call's request is about 900 bytes shorter, so 16 of them
  -- fit in the 16 KB Redis reads per client per event-loop pass, and share one AOF fsync.
  local base = string.sub(KEYS[1], 1, -1 - #DECLARED_SUFFIX)
  for _, name in ipairs(KEY_NAMES) do K[name] = base .. name end
  numsOf = { PENDING = K.pendingNums, RUNNING = K.runningNums, SUCCEEDED = K.succeededNums, DEAD = K.dead, CANCELLED = K.cancelledNums }
  jobPrefix, alivePrefix = base .. 'job:', base .. 'alive:'
  holder = ARGV[ARG.holder]
  nowText = ARGV[ARG.now]
  now = tonumber(nowText)
  -- Redis seeds math.random alike on every call; jitter needs the client's seed.
  math.randomseed(tonumber(ARGV[ARG.seed]))
  maxAttempts = tonumber(ARGV[ARG.maxAttempts])
  baseBackoff = tonumber(ARGV[ARG.baseBackoffMillis])
  maxBackoff = tonumber(ARGV[ARG.maxBackoffMillis])
  jitter = ARGV[ARG.jitter]
  partitions, partition = tonumber(ARGV[ARG.partitions]), tonumber(ARGV[ARG.partition])
  maxFinished, maxAge = tonumber(ARGV[ARG.maxFinished]), tonumber(ARGV[ARG.maxAgeMillis])
  listed = redis.call('EXISTS', K.listing) == 1
  sortables = {}
  budget, holdBudget = CATCH_UP_BATCH, CATCH_UP_BATCH
end
