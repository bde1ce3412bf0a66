-- The tenants of a class declared `fair:` that have work (running or
-- parked jobs), for the console, the CLI, the Web UI's tab and the metrics
-- (src/admin/fair_share.rs): those waiting their turn (fair_waiting_key),
-- and those the jobs in registered capsules' in-progress lists name as the
-- class's tenants (a slot is booked with its job). Each weight is read from
-- a job of the tenant, which carries it. Writes nothing.
--
-- Without a class, those of every fair class at once, for a page or a
-- scrape that lists job limits by id and cannot know which are tenants:
-- the tenants waiting are then found among the limits with parked jobs
-- (LIMITS_WITH_PARKED_KEY), by the entry their oldest parked job carries
-- (a plain find skips the jobs of other limits without decoding them).
--
-- ARGV[1]  the class's id (class:<name>), or none: every fair class's
-- Returns {id, running, parked, weight as text, class id} for each,
-- unsorted.
return function(KEYS, ARGV)
  local only = ARGV[1]
  local tenants, seen = {}, {}
  -- A tenant's entry names its class (by hand, a job may carry anything).
  local function of_class(limit)
    return type(limit.fair) == 'string' and (not only or limit.fair == only)
  end
  local function add(limit)
    local id = limit.id
    if seen[id] then return end
    seen[id] = true
    local running = redis.call('LLEN', job_busy_key(id))
    local parked = redis.call('LLEN', parked_key(id))
    if running + parked > 0 then
      tenants[#tenants + 1] = {id, running, parked, tostring(fair_weight(limit)), limit.fair}
    end
  end
  -- The entry of tenant `id` its oldest parked job carries, added if it
  -- names a fair class (`only`, when given).
  local function add_parked(id)
    local job = redis.call('LINDEX', parked_key(id), -1)
    if not job or not string.find(job, '"fair":', 1, true) then return end
    for _, limit in ipairs(job_limits(job) or {}) do
      if limit.id == id and of_class(limit) then add(limit) end
    end
  end
  if only then
    for _, id in ipairs(redis.call('ZRANGE', fair_waiting_key(only), 0, -1)) do add_parked(id) end
  else
    for _, id in ipairs(redis.call('SMEMBERS', LIMITS_WITH_PARKED_KEY)) do add_parked(id) end
  end
  for _, uuid in ipairs(redis.call('SUNION', CAPSULES_KEY, REGISTERED_KEY)) do
    for _, name in ipairs(redis.call('SMEMBERS', capsule_queues_key(uuid))) do
      -- One job per thread at most: bounded by the capsule's concurrency.
      for _, job in ipairs(redis.call('LRANGE', in_progress_key(uuid, name), 0, -1)) do
        for _, limit in ipairs(job_limits(job) or {}) do
          if of_class(limit) then add(limit) end
        end
      end
    end
  end
  return tenants
end
