-- Takes the next job from the first queue, in the order given, that is under
-- its limits, and books a busy slot for it: one atomic step, so no two
-- fetchers anywhere can both take the last slot.
--
-- ARGV[1]    the capsule's UUID
-- ARGV[2..n] queue names, in Sidekiq's order for this fetch (no "queue:" prefix)
-- Returns {queue name, job} or nil.
local uuid = ARGV[1]
local prefix = 'sidekiq:limit_fetch:queue:'

-- A limit that is not a non-negative integer reads as 0: a broken limit must
-- never mean "unlimited".
local function read_limit(key)
  local raw = redis.call('GET', key)
  if not raw then return nil end
  return tonumber(string.match(raw, '^%s*(%d+)%s*$')) or 0
end

for i = 2, #ARGV do
  local name = ARGV[i]
  local busy = prefix .. name .. ':busy'
  local limit = read_limit(prefix .. name .. ':limit')
  local eligible = limit == nil or redis.call('LLEN', busy) < limit
  if eligible then
    local process_limit = read_limit(prefix .. name .. ':process_limit')
    if process_limit == 0 then
      eligible = false
    elseif process_limit then
      -- Stops scanning as soon as the capsule's share is known to be full.
      eligible = #redis.call('LPOS', busy, uuid, 'COUNT', process_limit) < process_limit
    end
  end
  if eligible then
    local job = redis.call('RPOP', 'queue:' .. name)
    if job then
      redis.call('RPUSH', busy, uuid)
      return {name, job}
    end
  end
end
return nil
