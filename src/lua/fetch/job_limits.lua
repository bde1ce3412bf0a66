-- A job's limits checked (at_rate, at_concurrency, at_limit) and booked
-- (book).
-- Reads: uuid, freed_limits, full, rate_full. Writes: full, rate_full,
-- freed_limits, opens.

-- Whether job limit `limit` is at its rate; if so, notes when it opens.
local function at_rate(limit)
  local rate = job_rate(limit)
  if not rate then return false end
  local room, at = rate_room(job_starts_key(limit.id), rate)
  if room > 0 then return false end
  if rate_full == NONE then rate_full = {} end
  rate_full[limit.id] = at or 0
  return true
end

-- Whether job limit `limit` is at its concurrency (the slots the capsule
-- freed above count as free). One without (a rate alone) never is.
local function at_concurrency(limit)
  local concurrency = job_limit(limit)
  return concurrency < MAX_LIMIT and
    redis.call('LLEN', job_busy_key(limit.id)) - (freed_limits[limit.id] or 0) >= concurrency
end

-- The first of a job's limits that is at its limit or its rate, if any.
local function at_limit(limits)
  for _, limit in ipairs(limits) do
    local id = limit.id
    if full[id] or at_concurrency(limit) or at_rate(limit) then
      if full == NONE then full = {} end
      full[id] = true
      return limit
    end
  end
end

-- Books a slot of each of a job's limits for the capsule: one it freed
-- above if any (its entry stays), else a new entry; and a start of each
-- one's rate. The job, in the capsule's in-progress list, says whose
-- entries they are if the capsule dies (reap.lua).
local function book(limits)
  for _, limit in ipairs(limits) do
    local id = limit.id
    if (freed_limits[id] or 0) > 0 then
      freed_limits[id] = freed_limits[id] - 1
    else
      redis.call('RPUSH', job_busy_key(id), uuid)
    end
    local rate = job_rate(limit)
    if rate and book_start(id, rate, uuid) then opens_at(now()) end
  end
end
