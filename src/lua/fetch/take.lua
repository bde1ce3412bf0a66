-- Taking a job: its queue's slot and rate start booked (book_queue), the
-- job moved into the in-progress list (take, moved_from), and the reply
-- with it (taken).
-- Reads: uuid, report, watch, seen, seen_rate, seen_adaptive, freed, held, held_in, moved,
-- discarded, took_held, rates_held_back, opens. Writes: freed, held, held_in, moved, took_held,
-- written, and (taken, through more_from and done) what those write.

-- Books the capsule a slot of queue `name`, whose busy list is `busy`, and
-- a start of its rate (read by the eligible that let it).
local function book_queue(name, busy)
  if seen_rate then record_start(starts_key(name), seen_rate, uuid) end
  if (freed[name] or 0) > 0 then
    -- Takes again a slot it freed: its busy entry stays, and so does the
    -- queue in the capsule's set (its job was there).
    freed[name] = freed[name] - 1
  else
    redis.call('RPUSH', busy, uuid)
    wrote(busy)
    redis.call('SADD', capsule_queues_key(uuid), name)
  end
end

-- The reply for job `job` taken from queue `name`, the i-th argument.
local function taken(name, job, i)
  local state, adaptive = seen, seen_adaptive
  local more, queued = 0, false
  if report then more, queued = more_from(i) end
  -- An adaptive limit grows at the fetch that finds it reached, which a
  -- hand-over never is (src/capsule/hand_over/): its queue's jobs come here.
  local to_script = state[2] or state[4] or state[5] or adaptive or rates_held_back
  return done({name, job, more, discarded, to_script and 1 or false, queued, opens_in(), took_held and 1 or false,
    opens})
end

-- A queue's key, written by this fetch: the doorbell's reads of it end.
local function moved_from(name, queue)
  if watch and not moved[name] then
    moved[name] = true
    wrote(queue)
  end
end

-- Takes the job a window let go (held_in), in the in-progress list
-- `inprogress` already (lua/fetch/rates.lua): first there, unless a job
-- taken after it still is (a discarded one stays until the call ends);
-- then moved first, as a take puts it (a user denied the push stops before
-- the move: see may_send); in a fair queue, carrying its share.
local function take_window_job(job, name, inprogress)
  held_in = nil
  local shared = fair_queued(job, name)
  if shared ~= job or redis.call('LINDEX', inprogress, 0) ~= job then
    may_send('LPUSH', inprogress, 'job')
    redis.call('LREM', inprogress, 1, job)
    redis.call('LPUSH', inprogress, shared)
  end
  return shared
end

-- The job at the front of queue `name`, moved into the capsule's
-- in-progress list `inprogress`: the last job held for it (already there
-- if a window let it go: take_window_job), else its queue's own (whose key
-- is then written); in a fair queue, carrying its share (fair_queued).
local function take(name, queue, inprogress)
  local waiting = held[name]
  if waiting and #waiting > 0 then
    took_held = true
    local job = table.remove(waiting)
    if job == held_in then return take_window_job(job, name, inprogress) end
    job = fair_queued(job, name)
    redis.call('LPUSH', inprogress, job)
    return job
  end
  local job = redis.call('LMOVE', queue, inprogress, 'RIGHT', 'LEFT')
  if not job then return nil end
  moved_from(name, queue)
  local shared = fair_queued(job, name)
  if shared ~= job then
    -- In its place, first: the commands the documented ACL allows (no LSET).
    redis.call('LPOP', inprogress)
    redis.call('LPUSH', inprogress, shared)
  end
  return shared
end
