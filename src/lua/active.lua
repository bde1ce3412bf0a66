-- The ids of the job limits with running or parked jobs, for the console,
-- the CLI and the Web UI's tab (src/admin/job_limits.rs): of those the
-- jobs in registered capsules' in-progress lists carry (a slot is booked
-- with its job), those their runs passed slots of (each capsule's set of
-- run limits) and those noted parked, the ones whose busy or parked list
-- holds any (a set may name one a little longer: a beat's reconciliation
-- or sweep drops it). Writes nothing.
--
-- Returns the ids, each once, unsorted.
return function(KEYS, ARGV)
  local ids, seen = {}, {}
  local function add(id)
    if not seen[id] then
      seen[id] = true
      if redis.call('EXISTS', job_busy_key(id), parked_key(id)) > 0 then ids[#ids + 1] = id end
    end
  end
  for _, id in ipairs(redis.call('SMEMBERS', LIMITS_WITH_PARKED_KEY)) do add(id) end
  for _, uuid in ipairs(redis.call('SUNION', CAPSULES_KEY, REGISTERED_KEY)) do
    for _, id in ipairs(capsule_job_limits(uuid)) do add(id) end
  end
  return ids
end
