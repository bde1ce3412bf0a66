-- Sends the parked jobs of each job limit given that it has room for (its
-- limit was raised or reset, or a slot freed without a release: a deploy,
-- a hand-edited key) back to the front of their queues, oldest first, and
-- forgets limits with nothing parked. Run after a limit changes at run
-- time, and by every heartbeat over a few limits with parked jobs at a
-- time, so that no parked job waits for a slot that is already free.
-- Each call also checks RATE_DUE_KEY against RATE_PARKED_KEY
-- (check_rate_due): a fetch trusts it to say when parked rates are due, so
-- a call that failed between writing the two delays their jobs by a
-- heartbeat at most.
--
-- ARGV  job limit ids
-- Returns the number of jobs sent back.
return function(KEYS, ARGV)
  check_rate_due()
  local sent = 0
  for _, id in ipairs(ARGV) do
    sent = sent + #release(id)
  end
  return sent
end
