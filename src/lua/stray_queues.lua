-- Meets the queue sets of capsules neither registered nor beating, which
-- the census's walk over `capsule:*:queues` keys found (src/reaper.rs). A
-- queue set names the queues a capsule has in-progress lists for; only the
-- reaper deletes it (reap.lua), and the reaper looks at registered
-- capsules and at those holding slots in a busy list. A capsule reaped
-- while alive (frozen past its heartbeat's expiry) that woke, fetched
-- (which writes the set again), acknowledged and died before its next beat
-- registered it holds neither: its set would stay for good.
--
-- Such a set naming no queue where the capsule still has an in-progress
-- job or a slot, and the capsule holding no job limit's slot its runs
-- passed, means nothing: it goes. A live capsule in that state (woken, its
-- next beat to come) loses nothing: its next booking writes the set again,
-- in the same step as its job. A capsule that still holds something is
-- noted as found unregistered (UNREGISTERED_KEY, as orphans.lua notes one),
-- unless already noted: a beat reaps it once noted for twice the grace, if
-- it has not registered again.
--
-- ARGV[1..n]  UUIDs whose queue set the walk found (the census's: one walk
--             step per heartbeat period across the fleet)
-- Returns {sets deleted, capsules noted}.
return function(KEYS, ARGV)
  local deleted, noted = 0, 0
  local now
  for _, uuid in ipairs(ARGV) do
    -- Registered first: what nearly every set found is, in one command.
    if redis.call('SISMEMBER', REGISTERED_KEY, uuid) == 0 and redis.call('SISMEMBER', CAPSULES_KEY, uuid) == 0
      and redis.call('EXISTS', heartbeat_key(uuid)) == 0 then
      local queues = capsule_queues_key(uuid)
      local holds = redis.call('EXISTS', capsule_limits_key(uuid)) == 1
      for _, name in ipairs(redis.call('SMEMBERS', queues)) do
        if holds then break end
        holds = redis.call('EXISTS', in_progress_key(uuid, name)) == 1
          or redis.call('LPOS', busy_key(name), uuid) ~= false
      end
      if not holds then
        deleted = deleted + redis.call('DEL', queues)
      elseif not redis.call('HGET', UNREGISTERED_KEY, uuid) then
        now = now or redis.call('TIME')[1]
        redis.call('HSET', UNREGISTERED_KEY, uuid, now)
        noted = noted + 1
      end
    end
  end
  return {deleted, noted}
end
