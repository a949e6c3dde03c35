--[[
  updatePayload: a PENDING job's new payload (its place in the ready order is the same; once groups take
  turns, it is filed again with a new turn, at the end of its group's line, as the shared-memory queue files it).

  KEYS: the queue's declared key, KEYS[FIXED] (includes/call.lua), then KEYS[FIXED + 1], the hash of the job ARGV names
  ARGV: the common arguments (includes/call.lua), then
    [OWN + 1] n
    [OWN + 2] payload: text, or raw bytes when [OWN + 3] is given
    [OWN + 3] '1' for a binary payload (absent for text)
  Replies:
    { 0 }
    { CATCHING_UP }: the call brought the queue part of the way up to now (includes/catch-up.lua)
      and stopped before its own work: call it again
  Refusals (nothing changed):
    { Refusal.NotFound } / { Refusal.Evicted }: no such job / it was evicted
    { Refusal.NotEditable }: the job is not PENDING
]]

local n = ARGV[OWN + 1]
local key, refusal = pendingJob(n, KEYS[FIXED + 1])
if key == nil then return { refusal } end
local isBinary = ARGV[OWN + 3] == '1'
local fields = payloadFields({}, ARGV[OWN + 2], isBinary)
if grouped then refile(n, key, fields) else redis.call('HSET', key, unpack(fields)) end
clearBinaryPayload(key, isBinary)
return { 0 }
