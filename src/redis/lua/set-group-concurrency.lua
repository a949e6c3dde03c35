--[[
  setGroupConcurrency: sets or removes a group's concurrency cap (includes/caps.lua). A group's
  first cap counts its jobs RUNNING now (a scan of K.leases, O(running)); a changed cap keeps the
  count. A cap lowered below the jobs RUNNING stops none of them. A queue's first group named here
  makes groups take turns (includes/turns.lua). Clients waiting for work are woken: a cap raised or
  removed may let them lease.

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua)
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] group (never blank)
    [OWN + 2] max, an integer >= 1 ('': remove the cap)
  Replies:
    { 0 }
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua),
      or started its groups' turns (includes/turns.lua), and stopped before its own work: call it again
]]

local group, max = ARGV[OWN + 1], ARGV[OWN + 2]
if max ~= '' and not grouped and not startTurns() then return { CATCHING_UP } end
setCap(GROUP, group, max)
announce()
return { 0 }
