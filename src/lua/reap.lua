-- Frees everything a dead capsule held, exactly once: of several processes
-- reaping at the same moment, only the one whose SREM removed the UUID acts.
-- A capsule whose heartbeat came back is left alone.
--
-- Its in-progress jobs go back to the front of their queues, in the order
-- they were fetched. A job recovered more than ARGV[3] times keeps killing
-- the processes that run it: it goes to Sidekiq's dead set instead.
--
-- KEYS[1]    the capsules set
-- KEYS[2]    the capsule's heartbeat key
-- KEYS[3..n] busy lists to free its slots in
-- ARGV[1]    the capsule's UUID
-- ARGV[2]    "1" for a clean shutdown: act even with a live heartbeat, and
--            push leftover jobs back without counting a recovery
-- ARGV[3]    how many recoveries a job may have before it is declared dead
-- ARGV[4]    now, in seconds (the dead set's score)
-- Returns nil if there was nothing to do, else
-- {slots freed (queues' and job limits'), jobs pushed back,
--  {{queue, jid, class} of each dead job}}.
local uuid = ARGV[1]
local clean = ARGV[2] == '1'
local max_recoveries = tonumber(ARGV[3])
local now = tonumber(ARGV[4])

if not clean and redis.call('EXISTS', KEYS[2]) == 1 then return nil end
redis.call('DEL', KEYS[2])
if redis.call('SREM', KEYS[1], uuid) == 0 and not clean then return nil end
redis.call('DEL', capsule_info_key(uuid))

local freed = 0
for i = 3, #KEYS do
  freed = freed + redis.call('LREM', KEYS[i], 0, uuid)
end
-- Its job limits' slots, each sending parked jobs it has room for back.
local limits = capsule_limits_key(uuid)
for _, id in ipairs(redis.call('SMEMBERS', limits)) do
  freed = freed + redis.call('LREM', job_busy_key(id), 0, uuid)
  release(id)
end
redis.call('DEL', limits)

local pushed, dead = 0, {}
for _, name in ipairs(redis.call('SMEMBERS', capsule_queues_key(uuid))) do
  local inprogress = in_progress_key(uuid, name)
  -- Newest first, each pushed in front of the last: the oldest ends up first.
  local job = redis.call('LPOP', inprogress)
  while job do
    local poison = false
    if not clean then
      local digest = redis.sha1hex(job)
      if redis.call('HINCRBY', RECOVERIES_KEY, digest, 1) > max_recoveries then
        redis.call('HDEL', RECOVERIES_KEY, digest)
        poison = true
      end
      redis.call('EXPIRE', RECOVERIES_KEY, 604800)
    end
    if poison then
      redis.call('ZADD', DEAD_KEY, now, job)
      local jid, class = describe_job(job)
      table.insert(dead, {name, jid, class})
    else
      push_back(name, job)
      pushed = pushed + 1
    end
    job = redis.call('LPOP', inprogress)
  end
end
redis.call('DEL', capsule_queues_key(uuid))
return {freed, pushed, dead}
