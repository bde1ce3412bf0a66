-- Brings a live capsule's Redis state in line with the jobs it really holds.
-- Runs while the capsule has no fetch, acknowledgement or push-back in
-- flight, so the ledger it is given is exact.
--
-- * A job in an in-progress list that the capsule does not hold (the reply
--   of its fetch was lost) goes back to the front of its queue.
-- * The capsule's busy entries per queue, and per job limit, are set to the
--   number of jobs it holds (a lost release, a booking lost to a Redis
--   restart).
--
-- ARGV[1]  the capsule's UUID
-- then per queue: queue name, n, and the SHA1 (hex) of each of its n jobs
-- Returns {{busy key, entries before, after} for each list it changed,
--          {{queue, jid} of each job pushed back}}.
local uuid = ARGV[1]

local held = {}
local i = 2
while i <= #ARGV do
  local name, n = ARGV[i], tonumber(ARGV[i + 1])
  local digests = {}
  for j = 1, n do
    local d = ARGV[i + 1 + j]
    digests[d] = (digests[d] or 0) + 1
  end
  held[name] = {count = n, digests = digests}
  i = i + 2 + n
end
for _, name in ipairs(redis.call('SMEMBERS', capsule_queues_key(uuid))) do
  held[name] = held[name] or {count = 0, digests = {}}
end

-- Per job limit, the jobs carrying it that the capsule holds.
local booked = {}
for _, id in ipairs(redis.call('SMEMBERS', capsule_limits_key(uuid))) do booked[id] = 0 end

local changes, pushed = {}, {}
for name, mine in pairs(held) do
  local inprogress = in_progress_key(uuid, name)
  local jobs = redis.call('LRANGE', inprogress, 0, -1)
  for j = #jobs, 1, -1 do -- oldest first
    local job = jobs[j]
    local d = redis.sha1hex(job)
    if (mine.digests[d] or 0) > 0 then
      mine.digests[d] = mine.digests[d] - 1
      for _, limit in ipairs(job_limits(job) or {}) do
        booked[limit.id] = (booked[limit.id] or 0) + 1
      end
    else
      redis.call('LREM', inprogress, -1, job)
      push_back(name, job)
      table.insert(pushed, {name, (describe_job(job))})
    end
  end
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
  if count > 0 then
    redis.call('SADD', capsule_limits_key(uuid), id)
  else
    redis.call('SREM', capsule_limits_key(uuid), id)
  end
end
return {changes, pushed}
