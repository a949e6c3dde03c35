--[[
  Leases: rate limits, taking the best ready jobs, polls and completes.
]]

-- Rate limits (see keys.ts): fixed windows aligned to the clock, the one of
-- now starting at floor(now / window) * window. A lease a type's limit admits
-- is counted at once; nil if it admits one now, else when its next window opens.
local function windowOpensAt(key)
  local jobType = redis.call('HGET', key, 'type')
  local limit = redis.call('HGET', K.limits, jobType)
  if not limit then return nil end
  local max, window = string.match(limit, '^(%d+),(%d+)$')
  max, window = tonumber(max), tonumber(window)
  local start = math.floor(now / window) * window
  local current = redis.call('HGET', K.windows, jobType)
  local from, used = start, 0
  if current then
    local s, u = string.match(current, '^(.+),(%d+)$')
    -- A clock gone back keeps counting the later window.
    if tonumber(s) >= start and tonumber(u) > 0 then from, used = tonumber(s), tonumber(u) end
  end
  if used >= max then return from + window end
  redis.call('HSET', K.windows, jobType, num(from) .. ',' .. int(used + 1))
  return nil
end

-- Jobs one script moves into or out of K.held, at most: each costs a few µs of
-- Redis time, and a backlog of a limited type is passed over once per window.

-- Files the held jobs whose window opened by upTo back into the ready index,
-- best first: each only if it is still PENDING, due, and has the member it
-- was held with (a job cancelled, or leased and retried since, has moved on).
-- True once none is left; false if the budget ran out first.
local function releaseHeld(upTo)
  local due = redis.call('ZRANGEBYSCORE', K.held, '-inf', upTo, 'LIMIT', 0, holdBudget + 1)
  local count = math.min(#due, holdBudget)
  for i = 1, count do
    local member = due[i]
    local n = int(tonumber(string.sub(member, 33)))
    local key = jobKey(n)
    local f = redis.call('HMGET', key, 'status', 'runAt')
    if f[1] == 'PENDING' and tonumber(f[2]) <= now and readyMember(key, n) == member then redis.call('ZADD', K.ready, 0, member) end
    redis.call('ZREM', K.held, member)
  end
  holdBudget = holdBudget - count
  return #due <= count
end

-- Defined with the catch-up (catch-up.lua), which comes after: the ready index made exact for now.
local exactNow

-- ZPOPMIN's members best[from], best[from + 2], ... up to best[to] back in the ready index.
local function backToReady(best, from, to)
  local members = {}
  for i = from, to, 2 do
    members[#members + 1] = 0
    members[#members + 1] = best[i]
  end
  redis.call('ZADD', K.ready, unpack(members))
end

-- Up to max best ready members, taken out of the ready index (ZPOPMIN's reply: member, score, ...).
-- Behind the clock (call.lua, behind) the index may hold jobs due only after now, each at its priority
-- level's end (a level orders its jobs by runAt): those go back, and the rest are all the jobs due by
-- now unless a lower level follows, which may hold some: then the index is made exact for now and taken
-- from again. Nil if the budget ran out first.
local function takeReady(max)
  local best = redis.call('ZPOPMIN', K.ready, max)
  if not behind then return best end
  local taken = 0
  -- Not grouped (quietBehind): a member's second 16 characters are its runAt (encoding.lua, memberOf).
  while taken < #best and unsortable(string.sub(best[taken + 1], 17, 32)) <= now do taken = taken + 2 end
  if taken == #best then return best end
  backToReady(best, taken + 1, #best)
  local last = redis.call('ZRANGE', K.ready, -1, -1)
  if string.sub(last[1], 1, 16) == string.sub(best[taken + 1], 1, 16) then
    for i = #best, taken + 1, -1 do best[i] = nil end
    return best
  end
  if taken > 0 then backToReady(best, 1, taken) end
  if not exactNow() then return nil end
  return redis.call('ZPOPMIN', K.ready, max)
end

-- The numbers of up to max best ready jobs, taken out of the ready index.
-- With the whole queue's cap, no more than bring K.leases (the jobs RUNNING) to it.
-- With rate limits or type or group caps, one at a time: a job whose type's window is
-- used up is held (see K.held), one whose type or group is at its cap is parked (caps.lua),
-- and the next is taken; each one taken is counted. Also whether the budget
-- ran out before anything could be taken: look again. Once groups take turns, the
-- turns of the jobs taken are served (turns.lua).
local function takeBest(max)
  local numbers = {}
  if queueCap ~= nil then max = math.min(max, queueCap - redis.call('ZCARD', K.leases)) end
  if max <= 0 then return numbers, false end
  if not limited and not capped then
    local best = takeReady(max)
    if best == nil then return numbers, true end
    local members = {}
    for i = 1, #best, 2 do
      numbers[#numbers + 1] = int(tonumber(string.sub(best[i], 33)))
      members[#members + 1] = best[i]
    end
    if grouped then served(members) end
    return numbers, false
  end
  -- Jobs still held whose window opened may come first: none is taken before they are back.
  if limited and not releaseHeld(nowText) then return numbers, true end
  local view = capped and capsView() or nil
  local members, exhausted = {}, false
  while #numbers < max do
    if holdBudget == 0 then
      exhausted = true
      break
    end
    local member, parkedScope, parkedName
    if view then
      member, parkedScope, parkedName = nextCandidate(view)
      if member == nil then break end
      takeCandidate(view, member, parkedScope, parkedName)
    else
      local best = redis.call('ZPOPMIN', K.ready)
      if #best == 0 then break end
      member = best[1]
    end
    local n = int(tonumber(string.sub(member, 33)))
    local key = jobKey(n)
    local names = view and capNames(key)
    -- A parked job is a candidate only while its set's type or group has room; the other may have none.
    local full = view and fullScope(view, names)
    if full then
      park(view, full, names[full], member)
      holdBudget = holdBudget - 1
    else
      local opensAt = limited and windowOpensAt(key) or nil
      if opensAt then
        redis.call('ZADD', K.held, opensAt, member)
        holdBudget = holdBudget - 1
      else
        numbers[#numbers + 1] = n
        members[#members + 1] = member
        if view then admit(view, names) end
      end
    end
  end
  if grouped then served(members) end
  if view and uncapped(view) then settleCaps() end
  return numbers, exhausted and #numbers == 0
end

-- The taker of every lease of a poll: one worker, one lease length (pollBest).
local function oneTaker(workerId, leaseMillis)
  return function() return workerId, leaseMillis end
end

-- Leases up to max ready jobs (none while the queue is paused), best first, the i-th to the worker
-- takerOf(i) names (workerId, leaseMillis), each for its own timeout if it has one, else for that
-- leaseMillis: each one's type, payload, headers ('' for none) and its numbers in one text, comma-separated
-- (n, token, attempt, maxAttempts, leaseUntil, timeout ('' for none), waitMillis and binary ('1' for a payload
-- of raw bytes, else ''): four reply elements to build and read instead of eleven) appended to out after the wake
-- counter (read first: work announced later is newer than this poll) and when
-- the first held job's window opens ('' if none is held; 'again' when the
-- budget of held jobs ran out before any was taken: poll again). A poll that
-- may run again (restartable: it changed nothing else) returns CATCHING_UP
-- instead of 'again'. The indexes change once for the whole batch; the tokens
-- are consecutive.
local function pollBest(takerOf, max, out, restartable)
  out[#out + 1] = signal
  local numbers, again = {}, false
  if max > 0 and not paused then numbers, again = takeBest(max) end
  if again and restartable then return { CATCHING_UP } end
  if again then
    out[#out + 1] = 'again'
  elseif limited then
    local firstHeld = redis.call('ZRANGE', K.held, 0, 0, 'WITHSCORES')
    out[#out + 1] = firstHeld[2] or ''
  else
    -- No limit set and none held (see limited): K.held is empty.
    out[#out + 1] = ''
  end
  local count = #numbers
  if count == 0 then return out end
  local lastToken = redis.call('INCRBY', K.tokenSeq, count)
  -- The holder is alive now: its key must not lapse before its next refresh. A read is cheaper than
  -- the write (a SET is logged to the AOF): the key is set again only when it has less left than a refresh leaves.
  local alive = alivePrefix .. holder
  if redis.call('PTTL', alive) < LIVENESS_LEFT_MILLIS then redis.call('SET', alive, '1', 'PX', LIVENESS_TTL_MILLIS) end
  -- A poll's leases mostly share one length: its leaseUntil is written once.
  local pollMillis, pollUntil, pollUntilText
  local leases, running, tokens = {}, {}, {}
  local firstExpiry = math.huge
  local o = #out
  -- A batch's tokens go to K.tokens, for its completes to read at once; a lone lease's stay in its hash
  -- (filed says which: one HSET and one HDEL more would cost a lone poll and complete more than they save).
  local filed = count > 1 and '1' or '0'
  for i = 1, count do
    local n = numbers[i]
    local key = jobKey(n)
    local token = int(lastToken - count + i)
    local workerId, leaseMillis = takerOf(i)
    if leaseMillis ~= pollMillis then
      pollMillis, pollUntil = leaseMillis, now + tonumber(leaseMillis)
      pollUntilText = num(pollUntil)
    end
    local f = redis.call('HMGET', key, 'attempts', 'type', 'payload', 'maxAttempts', 'timeout', 'headers', 'key', 'runAt', 'submittedAt', 'binaryPayload')
    local attempt = tonumber(f[1]) + 1
    -- The job's own lease length wins over the poll's.
    local leaseUntil, untilText = pollUntil, pollUntilText
    if f[5] then
      leaseUntil = now + tonumber(f[5])
      untilText = num(leaseUntil)
    end
    redis.call('HSET', key, 'status', 'RUNNING', 'attempts', attempt, 'token', token, 'leaseUntil', untilText, 'workerId', workerId, 'holder', holder, 'filed', filed,
      'startedAt', nowText)
    -- Its wait: from when it was due (runAt, or when submitted if later; a job older than submittedAt has only runAt) to now.
    local due = math.max(tonumber(f[8]), tonumber(f[9] or f[8]))
    firstExpiry = math.min(firstExpiry, leaseUntil)
    leases[2 * i - 1] = leaseUntil
    leases[2 * i] = n
    running[2 * i - 1] = n
    running[2 * i] = n
    tokens[2 * i - 1] = n
    -- Marked still, though every finish now notes its time: a client of the build before reads the mark to note a keyed job's.
    tokens[2 * i] = f[7] and token .. KEYED or token
    out[o + 1], out[o + 2], out[o + 3] = f[2], f[3], f[6] or ''
    out[o + 4] = table.concat({ n, token, int(attempt), int(attemptLimit(f[4])), untilText, f[5] or '', num(math.max(0, now - due)), f[10] or '' }, ',')
    o = o + LEASE_FIELDS
  end
  if count > 1 then redis.call('HSET', K.tokens, unpack(tokens)) end
  redis.call('ZREM', K.pending, unpack(numbers))
  unlist(K.pendingNums, numbers)
  redis.call('ZADD', K.leases, unpack(leases))
  dueBy(firstExpiry)
  list(K.runningNums, running)
  return out
end

-- Completes the leases the call's ARGV[first .. last] names (n, token, result each:
-- the result's JSON text, '' for none, or a binary result's raw bytes after a NUL byte, which no JSON
-- text starts with; their hashes declared in that order):
-- each checked on its own, its outcome (0 or the Refusal) appended to out;
-- the indexes change once for all of them.
local function completeAll(KEYS, ARGV, first, last, out)
  local done, doneKeys, succeeded, unfiled = {}, {}, {}, {}
  -- Whether a place under a cap freed that a poll may wait for (see leavesRunning).
  local freed = false
  local numbers = {}
  for i = first, last, 3 do numbers[#numbers + 1] = ARGV[i] end
  -- The batch's leases in one read (K.tokens); a job it has no token for is looked up in its hash.
  local current = {}
  if #numbers > 1 then current = redis.call('HMGET', K.tokens, unpack(numbers)) end
  local seen = {}
  for i = first, last, 3 do
    local n, token, j = ARGV[i], ARGV[i + 1], (i - first) / 3 + 1
    local key, refusal, filed
    local held = current[j]
    if seen[n] or not held then
      -- Completed earlier in this batch (its hash says so now), or not RUNNING under a token K.tokens knows.
      key, refusal, filed = leased(n, token, KEYS[FIXED + j])
    elseif held == token or held == token .. KEYED then
      key, filed = KEYS[FIXED + j], true
    else
      refusal = Refusal.StaleLease
    end
    seen[n] = true
    if key then
      if leavesRunning(key) then freed = true end
      noteEvent('completed', n, key, now)
      -- With the finish time: JobView's finishedAt, and what a keyed job's key TTL and the retain option's maxAgeMillis run from.
      local result = ARGV[i + 2]
      if result == '' then redis.call('HSET', key, 'status', 'SUCCEEDED', 'finishedAt', nowText)
      elseif string.byte(result, 1) ~= 0 then redis.call('HSET', key, 'status', 'SUCCEEDED', 'finishedAt', nowText, 'result', result)
      else
        markBinary()
        redis.call('HSET', key, 'status', 'SUCCEEDED', 'finishedAt', nowText, 'result', string.sub(result, 2), 'binaryResult', '1')
      end
      done[#done + 1] = n
      doneKeys[#doneKeys + 1] = key
      if filed then unfiled[#unfiled + 1] = n end
      succeeded[#succeeded + 1] = n
      succeeded[#succeeded + 1] = n
    end
    out[#out + 1] = refusal or 0
  end
  if #done == 0 then return out end
  redis.call('ZREM', K.leases, unpack(done))
  if #unfiled > 0 then redis.call('HDEL', K.tokens, unpack(unfiled)) end
  unlist(K.runningNums, done)
  list(K.succeededNums, succeeded)
  redis.call('RPUSH', K.finished, unpack(done))
  redis.call('HINCRBY', K.counts, 'succeeded', #done)
  announceFinished(done)
  -- A flow's parent counts its children's successes in this same script (flows.lua); before the trim, which may evict them.
  if flowing then
    for i = 1, #done do childEnded(done[i], doneKeys[i], 'SUCCEEDED') end
  end
  trimFinished()
  if freed then announce() end
  return out
end
