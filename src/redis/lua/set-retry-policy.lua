--[[
  setRetryPolicy: sets or removes a job type's own retry policy. Jobs submitted from now on
  without maxAttempts of their own take its maxAttempts; every failure of a job of the type
  from now on waits its backoff.

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua)
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] type
    [OWN + 2] the policy, "maxAttempts,baseBackoff,maxBackoff,jitter" ('': remove the type's)
  Replies:
    { 0 }
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
]]

local jobType, policy = ARGV[OWN + 1], ARGV[OWN + 2]
if policy == '' then redis.call('HDEL', K.policies, jobType) else redis.call('HSET', K.policies, jobType, policy) end
-- Submits and failures read K.policies only while some type has a policy (see typePolicy).
if redis.call('EXISTS', K.policies) == 1 then redis.call('HSET', K.state, 'policies', '1') else redis.call('HDEL', K.state, 'policies') end
return { 0 }
