-- Ends a job limit's back-off at once (the console's resume): its parked
-- jobs go back to their queues as its room allows, now.
--
-- ARGV[1]  the job limit's id
-- Returns {1 if a back-off held it, else 0; how many parked jobs went back}.
return function(KEYS, ARGV)
  local id = ARGV[1]
  local ended = redis.call('DEL', job_back_off_key(id), job_back_off_streak_key(id))
  back_off_ends[id] = false
  -- One queue key per job sent back.
  return {ended, #release(id)}
end
