--[[
  complete: a lease's job SUCCEEDED.

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua), then KEYS[FIXED + 1], the hash of the job ARGV names
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] n: the job's number
    [OWN + 2] token: its lease's fencing token
    [OWN + 3] result: its JSON text ('' for none), or NUL and a binary result's raw bytes (includes/leases.lua, completeAll)
  Replies:
    { 0 }: done; clients waiting in finished() are told
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
  Refusals (nothing changed):
    { Refusal.NotFound } / { Refusal.Evicted }: no such job / it was evicted; { Refusal.StaleLease }: the token is not the job's valid lease
]]

return completeAll(KEYS, ARGV, OWN + 1, OWN + 3, {})
