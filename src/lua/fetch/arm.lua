-- Arming the doorbell (MODE_ARM): a different command with a
-- different reply; it takes nothing (see state.lua's head).
-- Reads: argv, opens. Writes: what eligible and done write.

-- Reads, for each queue from ARGV[first_queue], the keys whether it is
-- eligible depends on, and its length if it is. Returns 1 if an eligible
-- queue holds a job, else nil; or, when a rate holds something back,
-- {1 or 0, opens in, opens at}.
local function arm(first_queue)
  local queued = nil
  for i = first_queue, #argv do
    local name = argv[i]
    if eligible(name, busy_key(name)) and redis.call('LLEN', queue_key(name)) > 0 then queued = 1 end
  end
  if opens then return done({queued or 0, opens_in(), opens}) end
  return done(queued)
end
