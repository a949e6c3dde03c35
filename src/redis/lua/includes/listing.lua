--[[
  The listing sets are built by the first jobs() on a queue, and kept from
  then on. Its first script empties them (a queue that stopped keeping them,
  or never did, may hold stale members), creates K.listing (so every move
  from then on keeps them) and notes the jobs issued so far (upTo, by jobSeq);
  then it and the scripts after it file those jobs, LISTING_BATCH per script
  in job-number order (next), each under the status its hash has then. A job
  that moves before it is filed is filed by its move, and again, alike, when
  its turn comes; one that moves after is moved by its move; an evicted one
  has no hash and is passed over. True once every job up to upTo is filed.
]]

local function listingBuilt()
  local f = redis.call('HMGET', K.listing, 'upTo', 'next')
  local upTo, from
  if f[1] then
    upTo, from = tonumber(f[1]), tonumber(f[2])
    if from > upTo then return true end
  else
    for status, set in pairs(numsOf) do
      if status ~= 'DEAD' then redis.call('UNLINK', set) end
    end
    upTo, from = tonumber(redis.call('GET', K.jobSeq) or '0'), 1
    redis.call('HSET', K.state, 'listed', '1')
  end
  local to = math.min(upTo, from + LISTING_BATCH - 1)
  for seq = from, to do
    local n = jobNumberOf(seq)
    local status = redis.call('HGET', jobKey(n), 'status')
    if status and status ~= 'DEAD' then redis.call('ZADD', numsOf[status], n, n) end
  end
  redis.call('HSET', K.listing, 'upTo', upTo, 'next', to + 1)
  return to == upTo
end
