-- The jobs waiting in queues: those in Sidekiq's list of each, and those
-- parked at a full job limit or behind a rate (each job limit's parked
-- list), counted by the queue each goes back to (the prelude's job_queue,
-- as release reads it). For Sidekiq's API (Queue#size, #latency, Stats), the
-- metrics and the Web UI's tab (src/admin/waiting.rs). Writes nothing.
--
-- ARGV[1]  budget: how many parked payloads it reads whole, at most
-- ARGV[2]  '1': also each queue's oldest waiting payloads (for latency)
-- ARGV[3..] queue names; none: every queue with parked jobs
-- Returns {estimated, then per queue: name, length of Sidekiq's list,
--   parked jobs, its list's oldest payload, its oldest parked payload}
--   (payloads false when none, or not asked for). `estimated`: 1 when some
--   limit's parked list did not fit in what was left of the budget: its
--   jobs are then all counted for the queue of its oldest one (exact while
--   a limit's jobs go to one queue, as a class's usually do).
--
-- Cost: one LLEN per job limit with parked jobs, and at most `budget`
-- payloads read (LRANGE, in slices), plus one (LINDEX) per list that did
-- not fit. Parked lists hold the oldest job last (fetch.lua parks with
-- LPUSH; a job going back to parking goes with RPUSH).

-- Payloads read per LRANGE: a slice's strings live until it is counted.
local SLICE = 1000

-- A payload's enqueue time in milliseconds, or nil: Sidekiq 8 writes
-- milliseconds (an integer), older versions seconds (a float).
local function enqueued_ms(job)
  local parsed = parse(job)
  local at = parsed and (parsed.enqueued_at or parsed.created_at)
  if type(at) ~= 'number' then return nil end
  if at < 100000000000 then return at * 1000 end
  return at
end

return function(KEYS, ARGV)
  local budget, with_oldest = tonumber(ARGV[1]) or 0, ARGV[2] == '1'
  local asked, names = {}, {}
  for i = 3, #ARGV do
    if not asked[ARGV[i]] then
      asked[ARGV[i]] = true
      names[#names + 1] = ARGV[i]
    end
  end
  local every = #names == 0
  -- By queue: parked jobs counted, and the oldest parked payload (with the
  -- time it was enqueued).
  local parked, oldest, oldest_at = {}, {}, {}
  local estimated = 0
  local function note(name, count, job)
    if not every and not asked[name] then return end
    if every and not asked[name] then
      asked[name] = true
      names[#names + 1] = name
    end
    parked[name] = (parked[name] or 0) + count
    if with_oldest and job then
      local at = enqueued_ms(job)
      if not oldest[name] or (at and (not oldest_at[name] or at < oldest_at[name])) then
        oldest[name], oldest_at[name] = job, at
      end
    end
  end
  for _, id in ipairs(redis.call('SMEMBERS', PARKED_KEY)) do
    local key = parked_key(id)
    local len = redis.call('LLEN', key)
    if len > 0 and len <= budget then
      budget = budget - len
      -- Per queue in this list: its jobs, and its oldest (the last seen).
      local counts, last = {}, {}
      for from = 0, len - 1, SLICE do
        for _, job in ipairs(redis.call('LRANGE', key, from, from + SLICE - 1)) do
          local name = job_queue(job)
          if name then
            counts[name] = (counts[name] or 0) + 1
            last[name] = job
          end
        end
      end
      for name, count in pairs(counts) do note(name, count, last[name]) end
    elseif len > 0 then
      estimated = 1
      local job = redis.call('LINDEX', key, -1)
      local name = job and job_queue(job)
      if name then note(name, len, job) end
    end
  end
  local out = {estimated}
  for _, name in ipairs(names) do
    local queue = queue_key(name)
    out[#out + 1] = name
    out[#out + 1] = redis.call('LLEN', queue)
    out[#out + 1] = parked[name] or 0
    out[#out + 1] = with_oldest and redis.call('LINDEX', queue, -1) or false
    out[#out + 1] = oldest[name] or false
  end
  -- What this call parsed would stay referenced until the next call.
  new_call()
  return out
end
