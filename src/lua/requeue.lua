-- Pushes jobs a capsule holds back to the front of their queues and frees
-- their slots, in one atomic step.
--
-- A job missing from the in-progress list is pushed back all the same (Redis
-- may have lost its data: running it twice beats losing it), but frees no
-- slot: its entry is gone too, or belongs to a job still running.
--
-- ARGV[1]  the capsule's UUID
-- then pairs: queue name, job
local uuid = ARGV[1]
local prefix = 'sidekiq:limit_fetch:'
local capsule = prefix .. 'capsule:' .. uuid
for i = 2, #ARGV, 2 do
  local name, job = ARGV[i], ARGV[i + 1]
  redis.call('RPUSH', 'queue:' .. name, job)
  if redis.call('LREM', capsule .. ':inprogress:' .. name, 1, job) == 1 then
    redis.call('LREM', prefix .. 'queue:' .. name .. ':busy', 1, uuid)
  end
end
return #ARGV
