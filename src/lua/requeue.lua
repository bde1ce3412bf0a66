-- Pushes jobs a capsule holds back to the front of their queues and frees
-- their slots (their queues' and their job limits'), in one atomic step.
--
-- A job missing from the in-progress list is pushed back all the same (Redis
-- may have lost its data: running it twice beats losing it), but frees no
-- slot: its entry is gone too, or belongs to a job still running.
--
-- ARGV[1]  the capsule's UUID
-- then pairs: queue name, job
return function(KEYS, ARGV)
  local uuid = ARGV[1]
  for i = 2, #ARGV, 2 do
    local name, job = ARGV[i], ARGV[i + 1]
    local inprogress = in_progress_key(uuid, name)
    -- Into its queue, then out of the list: a user denied the removal stops
    -- before the push, which would run the job twice (see may_send).
    may_send('LREM', inprogress, '1', job)
    push_back(name, job)
    if redis.call('LREM', inprogress, 1, job) == 1 then
      redis.call('LREM', busy_key(name), 1, uuid)
      local limits = job_limits(job)
      if limits then free_job_limits(uuid, limits) end
    end
  end
  return #ARGV
end
