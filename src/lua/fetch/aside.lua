-- Jobs set aside at a full job limit: parked (parks, and park_front for a
-- run at the front of a queue) or discarded (discard), one at a time
-- (set_aside).
-- Reads: lookahead, rate_full, watch. Writes: parked_into, discarded,
-- discarded_from, aside, moved, written, opens, full (at_limit), the
-- prelude's rate_parked_written (rate_parks).

-- Notes that job limit `limit` parked a job, and if at its rate, when the
-- window opens for it; a fair class's tenant waits its turn (fair.lua).
local function parks(limit)
  local id = limit.id
  if not parked_into[id] then
    if parked_into == NONE then parked_into = {} end
    parked_into[id] = true
    redis.call('SADD', LIMITS_WITH_PARKED_KEY, id)
    if limit.fair then
      fair_note(limit, redis.call('LLEN', job_busy_key(id)) - (freed_limits[id] or 0), true)
    end
    local at = rate_full[id]
    if at then
      rate_parks(id, at ~= 0 and at or nil)
      opens_at(at ~= 0 and at or nil)
    end
  end
end

-- Counts and reports a job dropped at its full `limit`: the reply carries
-- its payload, the only copy left, to the process that fetched it.
local function discard(job, limit)
  local parsed = parse(job) or {}
  local class = tostring(parsed.wrapped or parsed.class or '?')
  redis.call('HINCRBY', DISCARDED_KEY, class, 1)
  if discarded == NONE then discarded = {} end
  discarded[#discarded + 1] = {job, limit.id}
end

-- Moves the job just taken (first in `inprogress`) aside, for `limit`. Its
-- bookkeeping first: a write refused after it (the ACL changed under a
-- running process) leaves a spurious entry, never a job where nothing looks.
-- A discarded job leaves `inprogress` last of all (done): its payload is
-- nowhere else until the reply.
local function set_aside(job, inprogress, limit)
  if limit.discard then
    discard(job, limit)
    if discarded_from == NONE then discarded_from = {} end
    discarded_from[#discarded_from + 1] = {inprogress, job}
  else
    parks(limit)
    redis.call('LMOVE', inprogress, parked_key(limit.id), 'LEFT', 'LEFT')
  end
  aside = aside + 1
end

-- Parks at once the jobs at the front of queue `name` that a full limit
-- parks (a hot key's backlog), up to `batch` of them and the lookahead:
-- one LRANGE, one LTRIM and one LPUSH per limit, where taking and setting
-- aside each costs two moves. Stops at the first job it would not park
-- (under its limits, or discarded at its limit), which the caller takes.
-- Returns whether it parked the whole batch.
local function park_front(name, queue, batch)
  local room = math.min(batch, lookahead - aside)
  local front = redis.call('LRANGE', queue, -room, -1)
  local by_id, limits, n = {}, {}, 0
  -- A job that opens with the head of the last one parked (carried_head)
  -- carries the same limits, and nothing written since changes what they
  -- say: it parks as that one did, unread (a hot key's backlog, whose jobs
  -- each cost the reading more than the move). In a fair queue too: that
  -- head holds the queue's share already (fair_queued gives a job without
  -- it another, and its rewritten job no head), and so does the job.
  local head, jobs
  for i = #front, 1, -1 do
    local job = front[i]
    if not (head and string.find(job, head, 1, true) == 1) then
      job = fair_queued(job, name)
      local _, limit = held_back(job, name)
      if not limit or limit.discard then break end
      jobs = by_id[limit.id]
      if not jobs then
        jobs = {}
        by_id[limit.id] = jobs
        limits[#limits + 1] = limit
      end
      head = select(2, job_limits(job, true))
    end
    jobs[#jobs + 1] = job
    n = n + 1
  end
  if n == 0 then return false end
  -- Out of the queue, then into the parked lists: noted parked first, and a
  -- user denied the push stops before the trim (see may_send).
  for _, limit in ipairs(limits) do
    parks(limit)
    may_send('LPUSH', parked_key(limit.id), 'job')
  end
  redis.call('LTRIM', queue, 0, -n - 1)
  moved_from(name, queue)
  for _, limit in ipairs(limits) do redis.call('LPUSH', parked_key(limit.id), unpack(by_id[limit.id])) end
  aside = aside + n
  return n == room
end
