-- The jobs waiting in queues: those in Sidekiq's list of each, and those
-- parked at a full job limit or behind a rate (each job limit's parked
-- list), counted by the queue each goes back to (the prelude's job_queue,
-- as release reads it). For Sidekiq's API (Queue#size, #latency, Stats), the
-- metrics and the Web UI's tab (src/admin/waiting.rs). Writes nothing.
--
-- ARGV[1]  budget: how many parked payloads it reads, at most, each limit
--          read counting as LIMIT_COST more
-- ARGV[2]  YES: also each queue's oldest waiting payloads (for latency)
-- ARGV[3..] queue names; none: every queue with parked jobs
-- Returns {estimated, then per queue: name, length of Sidekiq's list,
--   parked jobs, its list's oldest payload, its oldest parked payload}
--   (payloads false when none, or not asked for). `estimated`: 1 when the
--   budget did not cover every parked job: a limit whose parked list did
--   not fit in what was left is counted by its oldest job (LINDEX) alone,
--   all its jobs for that job's queue (exact while a limit's jobs go to one
--   queue, as a class's and its keys' usually do); once the budget is
--   spent, the limits left are not read at all.
--
-- Cost: the limits with parked jobs, a page at a time (SSCAN), and for
-- each read its jobs (LRANGE, in slices; LLEN past the first) or its
-- oldest: bounded by the budget. Parked lists hold the oldest job last
-- (the fetch parks with LPUSH; a job going back to parking goes with
-- RPUSH). Why a scan, not counters kept as jobs park and leave: it adds
-- nothing to the fetch, and nothing can drift (a kill, a reap, an outage
-- or a hand-edited key leaves no count to correct).

-- Payloads read per LRANGE: a slice's strings live until it is counted.
local SLICE = 1000
-- Payloads a limit's first LRANGE reads: a list shorter is read whole in
-- one call; a longer one's length is asked (LLEN) before the rest.
local FIRST = 16

-- What reading a limit costs besides its jobs, in payloads read: its keys
-- and its jobs' limits read once (measured: ten to fifteen payloads' time).
local LIMIT_COST = 15

-- A payload's enqueue time in milliseconds, or nil: Sidekiq 8 writes
-- milliseconds (an integer), older versions seconds (a float).
local function enqueued_ms(job)
  local parsed = parse(job)
  local at = parsed and (parsed.enqueued_at or parsed.created_at)
  if type(at) ~= 'number' then return nil end
  if at < 100000000000 then return at * 1000 end
  return at
end

-- The start of `job` up to its queue's name, when job_queue read `name`
-- from there (its limits first, then its queue, as the middleware writes
-- them), else nil. A key's jobs start alike: a job that starts with the
-- same text is of the same queue, found with one plain find instead of
-- job_queue's reads and the tables it keeps for the call.
local function head_of(job, name)
  if not (job_limits(job) and carried_queues[job] == name) then return nil end
  local array = string.match(job, '^%b[]', #LIMITS_FIRST + 1)
  local head = array and LIMITS_FIRST .. array .. ',"queue":"' .. name .. '"'
  if head and string.find(job, head, 1, true) == 1 then return head end
end

-- Counts `jobs` (payloads of one parked list, in its order) by queue into
-- t.counts, noting each queue's oldest (the last met) in t.last.
local function tally(jobs, t)
  for _, job in ipairs(jobs) do
    local name
    if t.head and string.find(job, t.head, 1, true) == 1 then
      name = t.head_name
    else
      name = job_queue(job)
      if name and #jobs > 1 then t.head, t.head_name = head_of(job, name), name end
    end
    if name then
      t.counts[name] = (t.counts[name] or 0) + 1
      t.last[name] = job
    end
  end
end

return function(KEYS, ARGV)
  local budget, with_oldest = tonumber(ARGV[1]) or 0, ARGV[2] == YES
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
  local estimated, seen = 0, {}
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
  -- The limits with parked jobs, a page at a time (SSCAN), so that a set
  -- of many costs no more than the budget allows.
  local function read_limit(id)
    local key = parked_key(id)
    budget = budget - LIMIT_COST
    -- Most lists are short: read at once, their length with them (a
    -- longer one's first FIRST jobs are read again if it does not fit).
    local want, first, len = math.min(FIRST, budget), nil, nil
    if want > 0 then
      first = redis.call('LRANGE', key, 0, want - 1)
      len = #first < want and #first or redis.call('LLEN', key)
    else
      len = redis.call('LLEN', key)
    end
    if first and len <= budget then
      budget = budget - len
      local t = {counts = {}, last = {}}
      tally(first, t)
      for from = #first, len - 1, SLICE do
        tally(redis.call('LRANGE', key, from, math.min(from + SLICE, len) - 1), t)
      end
      for name, count in pairs(t.counts) do note(name, count, t.last[name]) end
    elseif len > 0 then
      -- What was read counts, though the list did not fit.
      if first then budget = budget - #first end
      estimated = 1
      local job = redis.call('LINDEX', key, -1)
      local name = job and job_queue(job)
      if name then note(name, len, job) end
    end
  end
  local cursor = '0'
  repeat
    local page = redis.call('SSCAN', LIMITS_WITH_PARKED_KEY, cursor, 'COUNT', 100)
    cursor = page[1]
    for _, id in ipairs(page[2]) do
      -- The budget spent, the limits left are not read (their jobs not
      -- counted). SSCAN may name a limit twice: counted once.
      if budget <= 0 then
        estimated = 1
        break
      end
      if not seen[id] then
        seen[id] = true
        read_limit(id)
      end
    end
  until cursor == '0' or budget <= 0
  if budget <= 0 and cursor ~= '0' then estimated = 1 end
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
