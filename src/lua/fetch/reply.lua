-- The end of a call: the writes left to its end (held jobs pushed, slots
-- freed, limits leaving the parked set and the capsule's set, discarded
-- jobs removed, the rate's due time noted; push_held, done), and the reply
-- without a job (none).
-- Reads: uuid, watch, freed, freed_limits, fair_freed, held, held_in, parked_into, ended,
-- discarded_from, discarded, aside, opens, written, the prelude's emptied
-- and rate_parked_written. Writes: held (each queue's jobs cleared), held_in, written,
-- and ends the deferral of the rate's due time (defer_rate_due).

-- Pushes the held jobs this fetch did not take to the front of their
-- queues, as release would have: the last held goes first. A window's job
-- (held_in) comes out of the in-progress list first (a user denied the
-- push stops before: see may_send).
local function push_held()
  for name, jobs in pairs(held) do
    if #jobs > 0 then
      local queue = queue_key(name)
      for _, job in ipairs(jobs) do
        if job == held_in then
          may_send('RPUSH', queue, 'job')
          redis.call('LREM', in_progress_key(uuid, name), 1, job)
        end
        redis.call('RPUSH', queue, job)
      end
      wrote(queue)
    end
    held[name] = nil
  end
  held_in = nil
end

local function done(reply)
  push_held()
  -- Held jobs are in lists now: their limits may leave the parked set,
  -- unless this call parked more of theirs.
  if emptied then
    for id in pairs(emptied) do
      if not parked_into[id] then redis.call('SREM', LIMITS_WITH_PARKED_KEY, id) end
    end
  end
  for id, n in pairs(freed_limits) do
    if n > 0 then
      unbook_job_limit(uuid, id, n)
      local fair = fair_freed[id]
      if fair then fair_note(fair, redis.call('LLEN', job_busy_key(id))) end
    end
  end
  -- A run's limits leave the capsule's set with its last slot of them: a
  -- run that passes one still holds that slot (src/capsule/hand_over/).
  -- Others its beats drop (reconcile.lua).
  for _, limit in ipairs(ended or NONE) do
    if not redis.call('LPOS', job_busy_key(limit.id), uuid) then
      redis.call('SREM', capsule_limits_key(uuid), limit.id)
    end
  end
  for name, n in pairs(freed) do
    if n > 0 then
      local busy = busy_key(name)
      redis.call('LREM', busy, n, uuid)
      wrote(busy)
    end
  end
  -- The writes left to the end of the call (defer_rate_due): freed slots
  -- of rate limits decided, counts of jobs sent back for a rate, and
  -- RATE_PARKED_KEY's first opening, noted once for all this call's
  -- changes of it (see sync_rate_due). The doorbell tracks RATE_WAKE_KEY
  -- alone of them (lua/fetch/rates.lua).
  for _, queue in ipairs(defer_rate_due(false)) do wrote(queue) end
  if rate_parked_written then wrote(RATE_WAKE_KEY) end
  -- The last writes: until the reply carries their payloads, discarded jobs
  -- stay where a refused write (the ACL changed under a running process)
  -- leaves them to be fetched again.
  if discarded_from ~= NONE then
    for _, at in ipairs(discarded_from) do redis.call('LREM', at[1], 1, at[2]) end
  end
  if watch and #written > 0 then redis.call('EXISTS', unpack(written)) end
  return reply
end

-- The reply without a job: nil when there is nothing to say (and nothing
-- was written: a reply says the script wrote, see script/fetch/look.rs).
local function none(more)
  if opens then return done({false, false, more, discarded, false, false, opens_in(), false, opens}) end
  if more == 0 and discarded == NONE and aside == 0 and not rate_parked_written then return done(nil) end
  return done({false, false, more, discarded})
end
