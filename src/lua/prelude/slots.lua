-- A capsule's job-limit slots: freed (unbook_job_limit, free_job_limits,
-- which release what the freed slots let go), and the limits it may hold
-- slots of (capsule_job_limits).

-- Removes `n` of the capsule's entries from a job limit's busy list (slots
-- it freed). The capsule's set of run limits is kept by the fetch script
-- that ends a run, and by its beats (reconcile.lua).
local function unbook_job_limit(uuid, id, n)
  return redis.call('LREM', job_busy_key(id), n, uuid)
end

-- Frees the slots of a job's limits that the capsule booked for it (the job
-- ended or went back), and sends for each the oldest parked job to be
-- fetched next if it has room.
local function free_job_limits(uuid, limits)
  local fair
  for _, limit in ipairs(limits) do
    if unbook_job_limit(uuid, limit.id, 1) == 1 then
      if limit.fair then
        fair = limit
        fair_note(limit, redis.call('LLEN', job_busy_key(limit.id)))
      else
        release(limit.id, 1, nil, nil, limit)
      end
    end
  end
  -- A fair class's freed slot goes to the tenant whose turn it is.
  if fair then fair_turn(fair, limits) end
end

-- The ids of the job limits capsule `uuid` may hold slots of, each once:
-- those its in-progress jobs carry (a slot is booked with its job, in one
-- step), and those its runs name (a run's hand-over passes a slot before
-- it reads the job that takes it: see src/capsule/hand_over/).
local function capsule_job_limits(uuid)
  local ids, seen = {}, {}
  local function add(id)
    if not seen[id] then
      seen[id] = true
      ids[#ids + 1] = id
    end
  end
  for _, id in ipairs(redis.call('SMEMBERS', capsule_limits_key(uuid))) do add(id) end
  for _, name in ipairs(redis.call('SMEMBERS', capsule_queues_key(uuid))) do
    -- One job per thread at most: bounded by the capsule's concurrency.
    for _, job in ipairs(redis.call('LRANGE', in_progress_key(uuid, name), 0, -1)) do
      for _, limit in ipairs(job_limits(job) or {}) do add(limit.id) end
    end
  end
  return ids
end
