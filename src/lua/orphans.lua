-- Finds the capsules that hold slots in the busy lists of the queues this
-- capsule serves while neither registered nor beating. The reaper looks at
-- registered capsules only, so nothing else frees them: a capsule reaped
-- while alive (stalled past its heartbeat's expiry: a long GC pause, a
-- suspended VM, a starved heartbeat thread), which then fetched and died
-- before its next beat registered it again; or one whose registration a
-- process of v5 removed (v5 reaps what it finds dead and forgets it).
-- Their slots would lower the queues' limits for good, and their
-- in-progress jobs would never go back.
--
-- A UUID found so is noted in UNREGISTERED_KEY with the time (Redis's
-- clock, the same for every process); registering removes the note, and so
-- does this script when it finds the capsule registered or beating again.
-- A capsule still unregistered the grace period (longer than a heartbeat's
-- expiry) after its note is dead, not about to register again: returned,
-- to be reaped (reap.lua, mode 'o', checks all this again atomically).
-- A noted UUID this capsule does not meet (its slots are in queues other
-- processes serve, or gone) is returned only after twice the grace, so
-- that a process serving its queues, which meets it, reaps it first (and
-- frees its slots there), and no note outlives its capsule.
--
-- ARGV[1]     the capsule's own UUID (its own entries are reconcile's)
-- ARGV[2]     the grace period, in seconds
-- ARGV[3..n]  the queues the capsule serves
-- Returns the UUIDs to reap.
return function(KEYS, ARGV)
  local own = ARGV[1]
  local grace = tonumber(ARGV[2])
  local now = tonumber(redis.call('TIME')[1])

  local noted = {}
  local pairs_list = redis.call('HGETALL', UNREGISTERED_KEY)
  for i = 1, #pairs_list, 2 do noted[pairs_list[i]] = tonumber(pairs_list[i + 1]) or 0 end

  local function alive(uuid)
    return redis.call('SISMEMBER', CAPSULES_KEY, uuid) == 1 or redis.call('SISMEMBER', REGISTERED_KEY, uuid) == 1
      or redis.call('EXISTS', heartbeat_key(uuid)) == 1
  end

  local met = {[own] = true}
  for i = 3, #ARGV do
    -- One entry per job running: bounded by the queue's running jobs.
    for _, uuid in ipairs(redis.call('LRANGE', busy_key(ARGV[i]), 0, -1)) do
      if not met[uuid] then
        met[uuid] = true
        if alive(uuid) then
          if noted[uuid] then
            redis.call('HDEL', UNREGISTERED_KEY, uuid)
            noted[uuid] = nil
          end
        elseif not noted[uuid] then
          redis.call('HSET', UNREGISTERED_KEY, uuid, now)
        end
      end
    end
  end

  local ripe = {}
  for uuid, since in pairs(noted) do
    local age = now - since
    if uuid ~= own and (age >= 2 * grace or (met[uuid] and age >= grace)) then ripe[#ripe + 1] = uuid end
  end
  return ripe
end
