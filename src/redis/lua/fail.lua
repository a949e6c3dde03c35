--[[
  fail: a failed attempt: retried after its backoff, or DEAD when no attempts are left.

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua), then KEYS[FIXED + 1], the hash of the job ARGV names
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] n: the job's number
    [OWN + 2] token: its lease's fencing token
    [OWN + 3] error text
    [OWN + 4] permanent: '1' (DEAD at once) or '0'
  Replies:
    { 0 }
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
  Refusals (nothing changed):
    { Refusal.NotFound } / { Refusal.Evicted }: no such job / it was evicted; { Refusal.StaleLease }: the token is not the job's valid lease
]]

local n = ARGV[OWN + 1]
local key, refusal = leased(n, ARGV[OWN + 2], KEYS[FIXED + 1])
if key == nil then return { refusal } end
if failAttempt(n, key, now, ARGV[OWN + 3], ARGV[OWN + 4] == '1') then
  announceFinished({ n })
  -- A flow's parent counts its child's death in this same script (includes/flows.lua).
  childEnded(n, key, 'DEAD')
end
announce()
return { 0 }
