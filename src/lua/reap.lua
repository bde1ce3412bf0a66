-- Frees everything a dead capsule held, exactly once: of several processes
-- reaping at the same moment, only the one whose SREM removed the UUID frees
-- its slots. A capsule whose heartbeat came back is left alone.
--
-- KEYS[1]    the capsules set
-- KEYS[2]    the capsule's heartbeat key
-- KEYS[3..n] busy lists to free its slots in
-- ARGV[1]    the capsule's UUID
-- ARGV[2]    "1" to deregister even with a live heartbeat (clean shutdown)
-- Returns the number of slots freed, or -1 if there was nothing to do.
local uuid = ARGV[1]
if ARGV[2] ~= '1' and redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
redis.call('DEL', KEYS[2])
if redis.call('SREM', KEYS[1], uuid) == 0 and ARGV[2] ~= '1' then return -1 end
local freed = 0
for i = 3, #KEYS do
  freed = freed + redis.call('LREM', KEYS[i], 0, uuid)
end
return freed
