-- Brings a capsule's busy entries per queue within what it knows it holds:
-- at least its running jobs, at most those plus the fetches still in flight.
-- Corrects lost releases (too many entries) and lost bookings (too few).
--
-- ARGV[1]  the capsule's UUID
-- then triples: busy key, lower bound, upper bound
-- Returns {busy key, before, after} for every list it changed.
local uuid = ARGV[1]
local changes = {}
for i = 2, #ARGV, 3 do
  local busy = ARGV[i]
  local low, high = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local held = #redis.call('LPOS', busy, uuid, 'COUNT', 0)
  if held > high then
    redis.call('LREM', busy, held - high, uuid)
    table.insert(changes, {busy, held, high})
  elseif held < low then
    for _ = held + 1, low do redis.call('RPUSH', busy, uuid) end
    table.insert(changes, {busy, held, low})
  end
end
return changes
