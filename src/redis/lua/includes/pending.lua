--[[
  The edits of a PENDING job (change-priority.lua, change-delay.lua,
  promote.lua, update-payload.lua): how each finds its job, and how a job
  whose priority or runAt changed is filed again. Each edit is one script,
  so a poll runs wholly before it (the edit then finds the job RUNNING and is
  refused) or wholly after it (and leases the job as edited).
  Refusals: NotFound, Evicted (absence, jobs.lua), NotEditable.
]]

-- The hash of job n (declared as key) if the job is PENDING, or nil and the Refusal.
local function pendingJob(n, key)
  local status = redis.call('HGET', key, 'status')
  if not status then return nil, absence(n) end
  if status ~= 'PENDING' then return nil, Refusal.NotEditable end
  return key
end

-- PENDING job n with its fields changed (HSET's field, value, ...): out of the ready index by its old
-- member (and out of K.held, where a rate limit may have put it, and its parked sets, where a cap may have:
-- the next poll holds or parks it again if need be),
-- then filed again by its new priority and runAt (ready, or delayed in K.pending alone).
local function refile(n, key, fields)
  -- A flow's parent waiting for its children waits on: its new runAt counts once they have ended (flows.lua).
  if waits(key) then
    redis.call('HSET', key, unpack(fields))
    return
  end
  local member = readyMember(key, n)
  redis.call('ZREM', K.ready, member)
  redis.call('ZREM', K.held, member)
  unpark(key, member)
  redis.call('HSET', key, unpack(fields))
  enqueue(n, key, tonumber(redis.call('HGET', key, 'runAt')))
  announce()
end
