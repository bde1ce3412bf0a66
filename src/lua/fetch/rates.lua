-- The fetch's rates: jobs parked behind a rate whose window has opened go
-- back first (release_opened), and the doorbell's arming learns when the
-- next may (wake_at).
-- Reads: freed_limits. Writes: opens, held, written (wrote), rate_emptied,
-- the prelude's rate_parked_written.

-- Arming (no job taken): when the first parked limit may go, by
-- RATE_WAKE_KEY, the key the doorbell then tracks, rather than
-- RATE_PARKED_KEY, which every window's opening writes. A time past, which
-- may be older than the first opening now (it moves later without a
-- write), reads the set itself.
local function wake_at()
  local wake = tonumber(redis.call('GET', RATE_WAKE_KEY))
  if not wake then return end
  if wake > now() then return opens_at(wake) end
  local first = redis.call('ZRANGE', RATE_PARKED_KEY, 0, 0, 'WITHSCORES')
  if #first > 0 then opens_at(tonumber(first[2])) end
end

-- Sends back the jobs parked behind a rate whose window has opened (the
-- earliest first, at most RELEASE_AT_ONCE limits a call), and notes when
-- the next opens. `may_release`: false to only note it (arming reads,
-- takes nothing). The jobs are held for this fetch (see release): the one
-- it takes never enters its queue, whose write would wake every idle
-- fetcher for a job already taken; the others are pushed as it ends.
local RELEASE_AT_ONCE = 100
local function release_opened(may_release)
  if not may_release then return wake_at() end
  local first = redis.call('ZRANGE', RATE_PARKED_KEY, 0, 0, 'WITHSCORES')
  if #first == 0 then return end
  local at = tonumber(first[2])
  if at > now() then return opens_at(at) end
  local ids = redis.call('ZRANGE', RATE_PARKED_KEY, '-inf', now(), 'BYSCORE', 'LIMIT', 0, RELEASE_AT_ONCE)
  redis.call('ZREM', RATE_PARKED_KEY, unpack(ids))
  rate_parked_written = true
  if held == NONE then held = {} end
  for _, id in ipairs(ids) do
    -- Slots this call's acknowledgements freed count as free: no later
    -- acknowledgement will send these jobs back for them.
    release(id, nil, held, freed_limits[id])
  end
  local following = redis.call('ZRANGE', RATE_PARKED_KEY, 0, 0, 'WITHSCORES')
  if #following > 0 then
    -- Later than RATE_WAKE_KEY says: that stays (see sync_rate_due).
    redis.call('SET', RATE_DUE_KEY, following[2])
    opens_at(tonumber(following[2]))
  else
    -- A start of these jobs may park their limit again, in this call: the
    -- set is looked at again as it ends (done).
    redis.call('DEL', RATE_DUE_KEY)
    rate_emptied = true
  end
end
