-- Job limits parked behind their rate: noted in RATE_PARKED_KEY with when
-- their window opens (rate_parks, which keeps RATE_DUE_KEY and
-- RATE_WAKE_KEY in step: sync_rate_due; check_rate_due, the backstop), a
-- start booked against the jobs sent back for a rate (book_start), and
-- when a window taken whole opens again (reopens).

-- After a change of RATE_PARKED_KEY: RATE_DUE_KEY set to its first score
-- (for the hand-over); RATE_WAKE_KEY, the time no parked limit opens
-- before, which the doorbell's arming reads (lua/fetch/rates.lua), to it
-- too where that is earlier than RATE_WAKE_KEY says, or none was: a write
-- of it rings every sleeping fetcher, so a first score that moves later (a
-- window opened, and its limit waits for the next) leaves it alone.
-- Without parked limits, both go. Deferred (defer_rate_due), it waits
-- for the end of the call.
local function sync_rate_due()
  if rate_due_deferred then return end
  local first = redis.call('ZRANGE', RATE_PARKED_KEY, 0, 0, 'WITHSCORES')
  if #first == 0 then
    redis.call('DEL', RATE_DUE_KEY, RATE_WAKE_KEY)
    return
  end
  redis.call('SET', RATE_DUE_KEY, first[2])
  local wake = redis.call('GET', RATE_WAKE_KEY)
  if not wake or tonumber(first[2]) < tonumber(wake) then redis.call('SET', RATE_WAKE_KEY, first[2]) end
end

-- The backstop of RATE_DUE_KEY, which a fetch trusts to say when parked
-- rates are due (lua/fetch/rates.lua's release_opened): where it is not
-- RATE_PARKED_KEY's first score (a call failed between writing the set and
-- it), sets it right, and RATE_WAKE_KEY with it. Two reads.
local function check_rate_due()
  local first = redis.call('ZRANGE', RATE_PARKED_KEY, 0, 0, 'WITHSCORES')[2]
  local due = redis.call('GET', RATE_DUE_KEY)
  if (first and tonumber(first)) ~= (due and tonumber(due)) then sync_rate_due() end
end

-- Notes that job limit `id` has jobs parked behind its rate, whose window
-- opens at `opens` (Redis's clock, microseconds): a fetch then sends them
-- back (see lua/fetch/rates.lua). Without `opens` (a rate of 0) only a
-- change of the rate does (lua/release.lua). An earlier time noted stays.
local function rate_parks(id, opens)
  if opens then
    redis.call('ZADD', RATE_PARKED_KEY, 'LT', opens, id)
    rate_parked_written = true
    sync_rate_due()
  end
end

-- Whether jobs of job limit `id` sent back for its rate are counted as not
-- started yet (its key in job_released_key): known where this call read or
-- wrote the count (rate_released), else looked at.
local function released_outstanding(id)
  local known = rate_released[id]
  if known ~= nil then return known end
  return redis.call('EXISTS', job_released_key(id)) == 1
end

-- Counts a start of job limit `id` under its rate now, and one fewer of
-- its jobs sent back but not started. The last of those to start, if the
-- limit has more parked (release holds them back until then), notes it due
-- when its window next has room: now, or as it opens; and returns when
-- (else nil). A job taken from another queue than the one they wait at the
-- front of may be counted for one of them: the next release may then come
-- before that one starts, and go ahead of it. Returns too whether the
-- rate's next starts are the script's, one by one: its window is near its
-- limit (lease_scarce; its room unknown, taken so), or jobs sent back for
-- it, or parked behind it, wait (no lease is asked: lua/lease.lua).
local function book_start(id, rate, who)
  local starts = job_starts_key(id)
  record_start(starts, rate, who)
  local scarce = lease_scarce(rate_rooms[starts] or 0, rate, 0)
  -- Most starts were never sent back: their count, read with the limit's
  -- values (job_limit), said so.
  if not released_outstanding(id) then return nil, scarce end
  -- Counted in this call (release, deferred) or in Redis.
  local pending = released_pending and released_pending[id]
  local left
  if pending then
    left = pending[1] - 1
    pending[1] = left
    if left <= 0 then released_pending[id] = nil end
  else
    left = redis.call('DECR', job_released_key(id))
  end
  rate_released[id] = left > 0
  if left > 0 then return nil, true end
  if not pending then redis.call('DEL', job_released_key(id)) end
  if left < 0 or redis.call('EXISTS', parked_key(id)) == 0 then return nil, scarce end
  local room, opens = rate_room(starts, rate, true)
  local at = room > 0 and now() or opens
  rate_parks(id, at)
  return at, true
end

-- When the window of `starts` ({limit, period} `rate`), whose room is
-- about to be taken whole, opens again: as the oldest start in it leaves,
-- or a period from now if it holds none.
local function reopens(starts, rate)
  local oldest = redis.call('ZRANGE', starts, 0, 0, 'WITHSCORES')[2]
  return (oldest and tonumber(oldest) or now()) + rate[2]
end
