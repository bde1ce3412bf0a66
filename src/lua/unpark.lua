-- Sends a job limit's parked jobs back to the front of their queues, all of
-- them, whatever room the limit has: for a way out of the gem (`sidekiq-limits
-- release --all`, src/admin/release_all.rs), after which a plain Sidekiq
-- fetch, which never looks at parked lists, must find every job in its
-- queue. The caller calls again until none is left, so that no call holds
-- Redis long; each call moves its jobs in one atomic step: every job leaves
-- the parked list and enters its queue once.
--
-- Jobs go newest first, each pushed in front of the last (Sidekiq takes a
-- queue's jobs from the right): within a call and from one call to the
-- next, the oldest ends up first in line, ahead of what the queue held.
-- The call that finds the list empty forgets the limit's parking: its place
-- in LIMITS_WITH_PARKED_KEY and RATE_PARKED_KEY (and RATE_DUE_KEY and
-- RATE_WAKE_KEY after it), and its count of jobs released for its rate and
-- not started, which would hold back a later release of the gem.
--
-- ARGV[1]  the job limit's id
-- ARGV[2]  how many jobs to move at most (> 0)
-- Returns {jobs still parked, {{queue name, jobs sent there}...},
--  {{jid, class} of each job that names no queue, now in the dead set}}.
return function(KEYS, ARGV)
  local id, batch = ARGV[1], tonumber(ARGV[2])
  local parked = parked_key(id)
  -- Newest first: the parked list's oldest is last (the fetch's LPUSH).
  -- Each moves in one write (LMOVE): a write refused on the way (the ACL
  -- changed under a running process) leaves every job in one list or the
  -- other.
  local sent, order, dead = {}, {}, {}
  for _ = 1, batch do
    local job = redis.call('LINDEX', parked, 0)
    if not job then break end
    -- A job without a queue was written by hand (Sidekiq's payloads all
    -- name theirs): it goes where Sidekiq shows it, as release does.
    local name = job_queue(job)
    if name then
      redis.call('LMOVE', parked, queue_key(name), 'LEFT', 'RIGHT')
      if not sent[name] then
        sent[name] = 0
        order[#order + 1] = name
      end
      sent[name] = sent[name] + 1
    else
      -- Scored in seconds, as Sidekiq scores its dead set; in it before it
      -- leaves the list: twice rather than nowhere.
      redis.call('ZADD', DEAD_KEY, math.floor(now() / 1000000), job)
      redis.call('LPOP', parked)
      local jid, class = describe_job(job)
      dead[#dead + 1] = {jid, class}
    end
  end
  local left = redis.call('LLEN', parked)
  if left == 0 then
    redis.call('SREM', LIMITS_WITH_PARKED_KEY, id)
    if redis.call('ZREM', RATE_PARKED_KEY, id) == 1 then sync_rate_due() end
    redis.call('DEL', job_released_key(id))
  end
  local queues = {}
  for _, name in ipairs(order) do queues[#queues + 1] = {name, sent[name]} end
  return {left, queues, dead}
end
