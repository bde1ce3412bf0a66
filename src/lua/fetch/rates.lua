-- The fetch's rates: jobs parked behind a rate whose window has opened go
-- back first (release_opened).
-- Reads: freed_limits. Writes: opens, written (wrote), the prelude's
-- rate_parked_written.

-- Sends back the jobs parked behind a rate whose window has opened (the
-- earliest first, at most RELEASE_AT_ONCE limits a call), and notes when
-- the next opens. `may_release`: false to only note it (arming reads,
-- takes nothing).
local RELEASE_AT_ONCE = 100
local function release_opened(may_release)
  local first = redis.call('ZRANGE', RATE_PARKED_KEY, 0, 0, 'WITHSCORES')
  if #first == 0 then return end
  local at = tonumber(first[2])
  if not may_release or at > now() then return opens_at(at) end
  local ids = redis.call('ZRANGE', RATE_PARKED_KEY, '-inf', now(), 'BYSCORE', 'LIMIT', 0, RELEASE_AT_ONCE)
  redis.call('ZREM', RATE_PARKED_KEY, unpack(ids))
  rate_parked_written = true
  for _, id in ipairs(ids) do
    -- Slots this call's acknowledgements freed count as free: no later
    -- acknowledgement will send these jobs back for them.
    for _, queue in ipairs(release(id, nil, nil, freed_limits[id])) do wrote(queue) end
  end
  local following = redis.call('ZRANGE', RATE_PARKED_KEY, 0, 0, 'WITHSCORES')
  if #following > 0 then
    redis.call('SET', RATE_DUE_KEY, following[2])
    opens_at(tonumber(following[2]))
  else
    redis.call('DEL', RATE_DUE_KEY)
  end
end
