-- Frees everything a dead capsule held, exactly once: of several processes
-- reaping at the same moment, only the first acts. A capsule whose
-- heartbeat came back (or that registered again) is left alone, and so is
-- every capsule while OUTAGE_KEY exists: an outage or a freeze ended less
-- than a heartbeat's expiry ago, and a live capsule may not have beaten
-- since (see src/keys.rs).
--
-- Its in-progress jobs go back to the front of their queues, in the order
-- they were fetched. A job recovered more than ARGV[3] times keeps killing
-- the processes that run it: it goes to Sidekiq's dead set instead.
--
-- KEYS[1]    the capsules set (REGISTERED_KEY, this gem's own, likewise;
--            and its entries in BEATS_KEY and FORMATS_KEY go with it)
-- KEYS[2]    the capsule's heartbeat key
-- KEYS[3..n] busy lists to free its slots in, besides those of the queues
--            it has in-progress lists for (its queues set)
-- ARGV[1]    the capsule's UUID
-- ARGV[2]    why (the codes are named in prelude/codes.lua): REAP_DEAD,
--            registered, its heartbeat expired; REAP_CLEAN, its own clean
--            shutdown: act even with a live heartbeat, and push leftover
--            jobs back without counting a recovery; REAP_UNREGISTERED,
--            neither registered nor beating since a beat noted it so in
--            UNREGISTERED_KEY at least ARGV[5] seconds ago (orphans.lua)
-- ARGV[3]    how many recoveries a job may have before it is declared dead
-- ARGV[4]    now, in seconds (the dead set's score)
-- ARGV[5]    REAP_UNREGISTERED: the grace period, in seconds
-- Returns nil if there was nothing to do, else
-- {slots freed (queues' and job limits'), jobs pushed back,
--  {{queue, jid, class} of each dead job},
--  {{queue, jobs pushed back to it}...} (queues it pushed none to left out)}.
return function(KEYS, ARGV)
  local uuid = ARGV[1]
  local mode = ARGV[2]
  local clean = mode == REAP_CLEAN
  local max_recoveries = tonumber(ARGV[3])
  local now = tonumber(ARGV[4])

  if not clean and redis.call('EXISTS', OUTAGE_KEY) == 1 then return nil end
  if mode == REAP_UNREGISTERED then
    -- Registered or beating again: alive after all, and its note goes.
    if redis.call('EXISTS', KEYS[2]) == 1 or redis.call('SISMEMBER', KEYS[1], uuid) == 1
      or redis.call('SISMEMBER', REGISTERED_KEY, uuid) == 1 then
      redis.call('HDEL', UNREGISTERED_KEY, uuid)
      return nil
    end
    local since = tonumber(redis.call('HGET', UNREGISTERED_KEY, uuid))
    if not since or tonumber(redis.call('TIME')[1]) - since < tonumber(ARGV[5]) then return nil end
  else
    if not clean and redis.call('EXISTS', KEYS[2]) == 1 then return nil end
    -- Either set: a v5 process may have reaped it from the shared one first.
    if not clean and redis.call('SISMEMBER', KEYS[1], uuid) == 0
      and redis.call('SISMEMBER', REGISTERED_KEY, uuid) == 0 then
      -- Reaped already, by a process of an older release that knows no
      -- BEATS_KEY (nor FORMATS_KEY): its entry there would make every beat
      -- ask after it.
      redis.call('ZREM', BEATS_KEY, uuid)
      redis.call('HDEL', FORMATS_KEY, uuid)
      return nil
    end
  end
  -- What names it as one to reap (its note, its place in the sets) goes
  -- last, once its jobs are back: a write refused on the way (the ACL
  -- changed under a running process) leaves it to be reaped again, not its
  -- jobs in a list nothing looks at.

  -- Its slots: in the lists given, and in those of the queues it fetched from
  -- (every fetch that books a slot notes its queue there).
  local freed = 0
  local lists = {}
  for i = 3, #KEYS do lists[KEYS[i]] = true end
  for _, name in ipairs(redis.call('SMEMBERS', capsule_queues_key(uuid))) do lists[busy_key(name)] = true end
  for busy in pairs(lists) do
    freed = freed + redis.call('LREM', busy, 0, uuid)
  end
  -- Its job limits' slots (found before its jobs go back), each sending
  -- parked jobs it has room for back.
  for _, id in ipairs(capsule_job_limits(uuid)) do
    freed = freed + redis.call('LREM', job_busy_key(id), 0, uuid)
    release(id)
  end
  redis.call('DEL', capsule_limits_key(uuid))

  local pushed, dead, counted, by_queue = 0, {}, false, {}
  for _, name in ipairs(redis.call('SMEMBERS', capsule_queues_key(uuid))) do
    local inprogress = in_progress_key(uuid, name)
    local before = pushed
    -- Newest first, each pushed in front of the last: the oldest ends up
    -- first. Each moves in one write (LMOVE), its recovery counted before.
    local job = redis.call('LINDEX', inprogress, 0)
    while job do
      local poison = false
      if not clean then
        local digest = redis.sha1hex(job)
        if redis.call('HINCRBY', RECOVERIES_KEY, digest, 1) > max_recoveries then
          redis.call('HDEL', RECOVERIES_KEY, digest)
          poison = true
        end
        redis.call('EXPIRE', RECOVERIES_KEY, 604800)
        counted = true
      end
      if poison then
        -- In the dead set before it leaves the list: twice rather than nowhere.
        redis.call('ZADD', DEAD_KEY, now, job)
        redis.call('LPOP', inprogress)
        local jid, class = describe_job(job)
        table.insert(dead, {name, jid, class})
      else
        redis.call('LMOVE', inprogress, queue_key(name), 'LEFT', 'RIGHT')
        pushed = pushed + 1
      end
      job = redis.call('LINDEX', inprogress, 0)
    end
    if pushed > before then by_queue[#by_queue + 1] = {name, pushed - before} end
  end
  redis.call('DEL', capsule_queues_key(uuid))
  if counted then
    -- A hand-over that reads it changed acknowledges with HDEL again.
    redis.call('INCRBY', RECOVERED_KEY, 1)
    redis.call('EXPIRE', RECOVERED_KEY, 604800)
  end
  if mode == REAP_UNREGISTERED then
    redis.call('HDEL', UNREGISTERED_KEY, uuid)
  else
    redis.call('DEL', KEYS[2])
    redis.call('SREM', KEYS[1], uuid)
    redis.call('SREM', REGISTERED_KEY, uuid)
  end
  redis.call('ZREM', BEATS_KEY, uuid)
  -- The format it spoke: the census counts the live capsules' alone.
  redis.call('HDEL', FORMATS_KEY, uuid)
  redis.call('DEL', capsule_info_key(uuid))
  -- The last to beat, leaving: no capsule beats now that could vouch for Redis.
  if clean and redis.call('GET', LAST_BEAT_KEY) == uuid then redis.call('DEL', LAST_BEAT_KEY) end
  return {freed, pushed, dead, by_queue}
end
