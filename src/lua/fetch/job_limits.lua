-- A job's limits checked (backing_off, at_rate, at_concurrency, at_share,
-- at_limit, and held_back, which checks a class's back-off too) and booked
-- (book).
-- Reads: uuid, freed_limits, full, rate_full, classes_back_off. Writes:
-- full, rate_full, freed_limits, opens, rates_held_back.

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
  if concurrency >= MAX_LIMIT then return false end
  local busy = redis.call('LLEN', job_busy_key(limit.id)) - (freed_limits[limit.id] or 0)
  -- An adaptive limit reached may grow (adaptive.lua).
  return busy >= concurrency and busy >= grow(limit, concurrency)
end

-- Whether job limit `limit` backs off now; if so, notes when it ends (its
-- jobs are parked until then, as behind a rate).
local function backing_off(limit)
  job_limit(limit)
  local ends = back_off_end(limit.id)
  if not ends then return false end
  if rate_full == NONE then rate_full = {} end
  rate_full[limit.id] = ends
  return true
end

-- Whether fair class tenant `limit` (a job's first limit, among `limits`)
-- waits its turn: its class is at its limit in force. Its job then parks
-- as its tenant's, and goes at a turn of a freed slot (fair.lua).
local function at_share(limit, limits)
  local class_id = limit.fair
  if not class_id then return false end
  if full[class_id] then return true end
  for _, class in ipairs(limits) do
    if class.id == class_id and at_concurrency(class) then
      if full == NONE then full = {} end
      full[class_id] = true
      return true
    end
  end
  return false
end

-- The first of a job's limits that backs off, or is at its limit or its
-- rate (or a fair share's turn), if any.
local function at_limit(limits)
  for _, limit in ipairs(limits) do
    local id = limit.id
    if full[id] or backing_off(limit) or at_concurrency(limit) or at_share(limit, limits) or at_rate(limit) then
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
      local busy = redis.call('RPUSH', job_busy_key(id), uuid)
      if limit.fair then fair_note(limit, busy) end
    end
    local rate = job_rate(limit)
    -- The reply says when more parked jobs may go: the fetcher that took
    -- this one sets the doorbell to ring then.
    if rate then
      local at, held_back = book_start(id, rate, uuid)
      opens_at(at)
      if held_back then rates_held_back = true end
    end
  end
end

-- The back-off that holds a job without limits of queue `name` (its class
-- declares none, and backs off: back_off.lua), as a limit {id =}, or nil.
-- Asked only where eligible read that classes back off in the queue.
local function class_back_off(job, name)
  local parsed = parse(job)
  local class = parsed and (parsed.wrapped or parsed.class)
  if type(class) ~= 'string' then return nil end
  local id = redis.call('HGET', class_back_offs_key(name), class)
  local ends = id and back_off_end(id)
  if not ends then return nil end
  if rate_full == NONE then rate_full = {} end
  rate_full[id] = ends
  return {id = id}
end

-- A job's limits (nil if it carries none), and the one that holds it back
-- now, if any: one of its limits (at_limit), or for a job of queue `name`
-- without limits, its class's back-off.
local function held_back(job, name)
  local limits = job_limits(job)
  if limits then return limits, at_limit(limits) end
  if classes_back_off then return nil, class_back_off(job, name) end
  return nil, nil
end
