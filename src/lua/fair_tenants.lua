-- The tenants of a class declared `fair:` that have work (running or
-- parked jobs), for the console, the CLI, the Web UI's tab and the metrics
-- (src/admin/fair_share.rs): those waiting their turn (fair_waiting_key),
-- and those the jobs in registered capsules' in-progress lists name as the
-- class's tenants (a slot is booked with its job). Each weight is read from
-- a job of the tenant, which carries it. Writes nothing.
--
-- ARGV[1]  the class's id (class:<name>)
-- Returns {id, running, parked, weight as text} for each, unsorted.
return function(KEYS, ARGV)
  local class = ARGV[1]
  local tenants, seen = {}, {}
  local function add(id, limit)
    if seen[id] then return end
    seen[id] = true
    local running = redis.call('LLEN', job_busy_key(id))
    local parked = redis.call('LLEN', parked_key(id))
    if running + parked > 0 then
      tenants[#tenants + 1] = {id, running, parked, tostring(fair_weight(limit))}
    end
  end
  for _, id in ipairs(redis.call('ZRANGE', fair_waiting_key(class), 0, -1)) do
    for _, limit in ipairs(job_limits(redis.call('LINDEX', parked_key(id), -1) or '') or {}) do
      if limit.id == id then add(id, limit) end
    end
  end
  for _, uuid in ipairs(redis.call('SUNION', CAPSULES_KEY, REGISTERED_KEY)) do
    for _, name in ipairs(redis.call('SMEMBERS', capsule_queues_key(uuid))) do
      -- One job per thread at most: bounded by the capsule's concurrency.
      for _, job in ipairs(redis.call('LRANGE', in_progress_key(uuid, name), 0, -1)) do
        for _, limit in ipairs(job_limits(job) or {}) do
          if limit.fair == class then add(limit.id, limit) end
        end
      end
    end
  end
  return tenants
end
