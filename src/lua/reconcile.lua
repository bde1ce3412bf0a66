-- Brings a live capsule's Redis state in line with the jobs it really holds.
-- Runs while the capsule has no fetch, acknowledgement or push-back in
-- flight, so the ledger it is given is exact.
--
-- * A job in an in-progress list that the capsule does not hold goes back
--   to the front of its queue: the reply of its fetch was lost. Unless the
--   capsule finished it lately (its digest is given): then Redis lost its
--   acknowledgement (a failover, a restart that lost its last writes), and
--   it is removed, not run again. So is such a job found at the front of
--   its queue: Redis lost its fetch too.
-- * A job the capsule holds that is in no in-progress list is booked again
--   there: the capsule was reaped while alive (frozen, or cut off from Redis,
--   for longer than its heartbeat's expiry), which pushed the job back and
--   freed its slots, or Redis lost the write of its fetch. Its
--   acknowledgement then frees its slots once, as any job's does. If it is
--   still in its queue (or parked), nobody has taken it yet: it is taken
--   out, and runs once.
-- * The capsule's busy entries per queue, and per job limit, are set to the
--   number of jobs it holds, and each queue it holds a slot of is in its
--   queues set (whatever it serves now), so that a later reconciliation or
--   reaping finds them; a job limit's slot is found by the job carrying
--   it, in an in-progress list. Its set of run limits (see
--   src/capsule/hand_over/) keeps only those it still holds jobs of.
--
-- ARGV[1]  the capsule's UUID
-- ARGV[2]  k, the number of queues it holds jobs of
-- then k groups: queue name, n, and its n jobs (payloads)
-- then     m, the number of queues whose jobs it finished lately are given
--          (after an outage or a failover; 0 otherwise), and m groups:
--          queue name, n, and the first 24 hex digits of the SHA1s of n jobs
--          it finished (finished_key), newest first, whose fetch or
--          acknowledgement Redis may have lost
-- Returns {{busy key, entries before, after} for each list it changed,
--          {{queue, jid} of each job pushed back},
--          {{queue, jid, 1 if taken out of its queue or parked list else 0}
--           of each job booked again},
--          {{queue, jid} of each finished job removed, from an in-progress
--           list or its queue}}.

-- How the capsule names a job it finished lately: the first 24 hex digits of
-- its SHA1, as many as its ledger keeps (PREFIX_BYTES, src/ledger/mod.rs).
local function finished_key(job)
  return string.sub(redis.sha1hex(job), 1, 24)
end

return function(KEYS, ARGV)
  local uuid = ARGV[1]

  local held = {}
  local i = 3
  for _ = 1, tonumber(ARGV[2]) do
    local name, n = ARGV[i], tonumber(ARGV[i + 1])
    local jobs = {}
    for j = 1, n do
      local job = ARGV[i + 1 + j]
      jobs[job] = (jobs[job] or 0) + 1
    end
    held[name] = {count = n, jobs = jobs}
    i = i + 2 + n
  end
  -- Per queue, the digests of the jobs finished lately, and how many.
  local finished, finished_count = {}, {}
  for _ = 1, tonumber(ARGV[i]) do
    local name, n = ARGV[i + 1], tonumber(ARGV[i + 2])
    local digests = {}
    for j = 1, n do digests[ARGV[i + 2 + j]] = true end
    finished[name], finished_count[name] = digests, n
    i = i + 2 + n
  end
  for _, name in ipairs(redis.call('SMEMBERS', capsule_queues_key(uuid))) do
    held[name] = held[name] or {count = 0, jobs = {}}
  end

  -- Per job limit, the jobs carrying it that the capsule holds.
  local booked = {}
  for _, id in ipairs(redis.call('SMEMBERS', capsule_limits_key(uuid))) do booked[id] = 0 end
  local function count_limits(job, n)
    for _, limit in ipairs(job_limits(job) or {}) do
      booked[limit.id] = (booked[limit.id] or 0) + n
    end
  end

  local changes, pushed, rebooked, dropped = {}, {}, {}, {}
  for name, mine in pairs(held) do
    local inprogress = in_progress_key(uuid, name)
    local jobs = redis.call('LRANGE', inprogress, 0, -1)
    for j = #jobs, 1, -1 do -- oldest first
      local job = jobs[j]
      if (mine.jobs[job] or 0) > 0 then
        mine.jobs[job] = mine.jobs[job] - 1
        count_limits(job, 1)
      else
        -- Its job limits' entries are looked at too, wherever they are.
        count_limits(job, 0)
        -- Out of the list, then into its queue (see may_send).
        may_send('RPUSH', queue_key(name), job)
        redis.call('LREM', inprogress, -1, job)
        if finished[name] and finished[name][finished_key(job)] then
          table.insert(dropped, {name, (describe_job(job))})
        else
          push_back(name, job)
          table.insert(pushed, {name, (describe_job(job))})
        end
      end
    end
    for job, missing in pairs(mine.jobs) do
      for _ = 1, missing do
        -- Into the list, then out of its queue or parked list (see may_send).
        may_send('LREM', queue_key(name), '-1', job)
        redis.call('LPUSH', inprogress, job)
        count_limits(job, 1)
        -- Pushed back to the front of its queue (the right), or parked.
        local withdrawn = redis.call('LREM', queue_key(name), -1, job)
        for _, limit in ipairs(job_limits(job) or {}) do
          if withdrawn == 0 then withdrawn = redis.call('LREM', parked_key(limit.id), -1, job) end
        end
        table.insert(rebooked, {name, (describe_job(job)), withdrawn})
      end
    end
    if mine.count > 0 then redis.call('SADD', capsule_queues_key(uuid), name) end
    local busy = busy_key(name)
    local entries = #redis.call('LPOS', busy, uuid, 'COUNT', 0)
    if entries > mine.count then
      redis.call('LREM', busy, entries - mine.count, uuid)
      table.insert(changes, {busy, entries, mine.count})
    elseif entries < mine.count then
      for _ = entries + 1, mine.count do redis.call('RPUSH', busy, uuid) end
      table.insert(changes, {busy, entries, mine.count})
    end
  end

  -- A job finished lately that is at the front of its queue (the right end,
  -- which fetches take from) was fetched where Redis lost the write (a master
  -- that was no longer one): taken out, so that it does not run again. Only
  -- the newest jobs' fetches can have been lost, and nobody has fetched here
  -- since (the capsule's fetches wait for this): as far in as it finished jobs.
  for name, digests in pairs(finished) do
    local queue = queue_key(name)
    for _, job in ipairs(redis.call('LRANGE', queue, -math.min(finished_count[name], 1000), -1)) do
      if digests[finished_key(job)] then
        redis.call('LREM', queue, -1, job)
        table.insert(dropped, {name, (describe_job(job))})
      end
    end
  end

  -- The same for job limits; a slot freed may let a parked job go.
  for id, count in pairs(booked) do
    local busy = job_busy_key(id)
    local entries = #redis.call('LPOS', busy, uuid, 'COUNT', 0)
    if entries > count then
      redis.call('LREM', busy, entries - count, uuid)
      table.insert(changes, {busy, entries, count})
      release(id)
    elseif entries < count then
      for _ = entries + 1, count do redis.call('RPUSH', busy, uuid) end
      table.insert(changes, {busy, entries, count})
    end
    -- A run limit it holds no job of any more leaves its set; those it
    -- does stay named by its jobs (reap.lua).
    if count == 0 then redis.call('SREM', capsule_limits_key(uuid), id) end
  end
  return {changes, pushed, rebooked, dropped}
end
