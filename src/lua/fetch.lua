-- Acknowledges finished jobs, then takes the next job from the first queue,
-- in the order given, that is under its limits: one atomic step, so no two
-- fetchers anywhere can both take the last slot, and one round trip per job
-- (the acknowledgement of a job rides on the next fetch of its capsule).
--
-- A taken job moves to the capsule's in-progress list of its queue, where it
-- stays until acknowledged or pushed back: if the capsule dies, the reaper
-- returns it to its queue.
--
-- ARGV[1]     the capsule's UUID
-- ARGV[2]     "1" while a fetcher of the capsule waits: report whether
--             another job is eligible after this one, and read again the keys
--             this script writes, so that the doorbell goes on tracking them
--             (the request sets CLIENT CACHING yes for this script)
-- ARGV[3]     n, the number of acknowledgements that follow
-- then n triples: queue name, job, SHA1 of the job (hex)
-- then        queue names, in Sidekiq's order for this fetch (no "queue:" prefix)
-- Returns {queue name, job, 1 if more is eligible else 0} or nil.
local uuid = ARGV[1]
local watch = ARGV[2] == '1'
-- Watched keys this script writes (a write ends their tracking).
local written = {}
local function done(reply)
  if watch and #written > 0 then redis.call('EXISTS', unpack(written)) end
  return reply
end
local acks = tonumber(ARGV[3])
local prefix = 'sidekiq:limit_fetch:'
local capsule = prefix .. 'capsule:' .. uuid
local recoveries = prefix .. 'recoveries'

-- Idempotent: an acknowledgement sent again (its reply was lost) finds its
-- job gone and frees no second slot.
local forget = acks > 0 and redis.call('EXISTS', recoveries) == 1
for i = 4, 3 + 3 * acks, 3 do
  local name = ARGV[i]
  if redis.call('LREM', capsule .. ':inprogress:' .. name, 1, ARGV[i + 1]) == 1 then
    redis.call('LREM', prefix .. 'queue:' .. name .. ':busy', 1, uuid)
    written[#written + 1] = prefix .. 'queue:' .. name .. ':busy'
  end
  if forget then redis.call('HDEL', recoveries, ARGV[i + 2]) end
end

-- A limit that is not a non-negative integer reads as 0: a broken limit must
-- never mean "unlimited".
local function read_limit(key)
  local raw = redis.call('GET', key)
  if not raw then return nil end
  return tonumber(string.match(raw, '^%s*(%d+)%s*$')) or 0
end

-- Whether the capsule may take one more job of the queue.
local function eligible(name)
  local busy = prefix .. 'queue:' .. name .. ':busy'
  local limit = read_limit(prefix .. 'queue:' .. name .. ':limit')
  if limit and redis.call('LLEN', busy) >= limit then return false end
  local process_limit = read_limit(prefix .. 'queue:' .. name .. ':process_limit')
  if process_limit == 0 then return false end
  -- Stops scanning as soon as the capsule's share is known to be full.
  return not process_limit or #redis.call('LPOS', busy, uuid, 'COUNT', process_limit) < process_limit
end

-- Queues before the one a job came from are empty or at a limit.
local function more_from(first)
  for i = first, #ARGV do
    if redis.call('LLEN', 'queue:' .. ARGV[i]) > 0 and eligible(ARGV[i]) then return 1 end
  end
  return 0
end

for i = 4 + 3 * acks, #ARGV do
  local name = ARGV[i]
  if eligible(name) then
    local job = redis.call('LMOVE', 'queue:' .. name, capsule .. ':inprogress:' .. name, 'RIGHT', 'LEFT')
    if job then
      redis.call('RPUSH', prefix .. 'queue:' .. name .. ':busy', uuid)
      redis.call('SADD', capsule .. ':queues', name)
      written[#written + 1] = 'queue:' .. name
      written[#written + 1] = prefix .. 'queue:' .. name .. ':busy'
      return done({name, job, watch and more_from(i) or 0})
    end
  end
end
return done(nil)
