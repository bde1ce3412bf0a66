-- Queue eligibility (eligible: pause, limits, rate), the call's first
-- read (read_ahead), and the skip-ahead scan over queues that hold no job
-- (any_queued, next_queued, after, more_from).
-- Reads: argv, uuid, freed, held. Writes: ahead, ahead_of, seen,
-- seen_rate, seen_adaptive, seen_fair, classes_back_off, opens, written
-- (wrote).

-- The limit in force of queue `name`, whose limit as stored is `limit` and
-- whose range and adaptive state MGET read as `range` and `raw_state`, with
-- `running` jobs (the slots this fetch frees counted: they were running
-- this round): `limit` itself unless it is adaptive (adaptive.lua). An
-- adaptive limit reached while the queue holds a job grows (once a round).
local function queue_in_force(name, limit, range, raw_state, running)
  local floor, ceiling, concurrency, state = queue_adaptive(limit, range, raw_state)
  if not floor then return limit end
  seen_adaptive = true
  if running < concurrency then return concurrency end
  local value = grown(state, concurrency, ceiling)
  if not value then return concurrency end
  if redis.call('LLEN', queue_key(name)) == 0 and not (held[name] and #held[name] > 0) then return concurrency end
  local key = adaptive_key(name)
  write_adaptive(key, value)
  wrote(key)
  return value
end

-- Whether the capsule may take one more job of the queue, whose busy list is
-- `busy` (the slots it freed above count as free): not paused, and under
-- its limits and its rate. One MGET reads the limits, the pause, the rate,
-- whether classes back off in it (classes_back_off, for held_back), an
-- adaptive limit's range and state, and a fair queue's limit (a fair queue
-- is walked whatever its slots: its jobs park by tenant, fair_queue.lua):
-- a queue with none costs one call, as the limit's GET alone did before
-- pauses.
-- The first queue's state comes from the call's first read (read_ahead),
-- once: a later look at the queue reads it again (this call may have
-- grown its adaptive limit since).
local function eligible(name, busy)
  local state = ahead
  if state and ahead_of == name then
    ahead = nil
  else
    state = redis.call('MGET', unpack(queue_state_keys(name)))
  end
  seen, seen_rate, seen_adaptive = state, nil, false
  seen_fair = parse_limit(state[8])
  classes_back_off = state[5] and true or false
  if state[3] then return false end
  local own_freed = freed[name] or 0
  local limit = parse_limit(state[1])
  if limit then
    local running = redis.call('LLEN', busy)
    if state[6] then limit = queue_in_force(name, limit, state[6], state[7], running) end
    if running - own_freed >= limit then return false end
  end
  local process_limit = parse_limit(state[2])
  if process_limit == 0 then return false end
  -- Stops scanning as soon as the capsule's share is known to be full.
  if process_limit and
    #redis.call('LPOS', busy, uuid, 'COUNT', process_limit + own_freed) - own_freed >= process_limit then
    return false
  end
  if not state[4] then return true end
  seen_rate = parse_rate(state[4])
  local room, at = rate_room(starts_key(name), seen_rate)
  if room > 0 then return true end
  opens_at(at)
  return false
end

-- The call's first read, one MGET: the first queue's state (ARGV from
-- `first_queue`; eligible takes it from `ahead`), RATE_DUE_KEY (for
-- release_opened), FORMAT_KEY (kept for data_format, prelude/format.lua:
-- the fetch reads the format with no command of its own) and, with
-- acknowledgements (`acks`), RECOVERED_KEY (for acknowledge): what two
-- more commands read before (a ZRANGE of RATE_PARKED_KEY, an EXISTS of
-- RECOVERIES_KEY). Returns RATE_DUE_KEY's and RECOVERED_KEY's values
-- (false: absent), or nil for each not read. Arming (`arming`) reads
-- nothing ahead: its reads are tracked, and RATE_DUE_KEY changes at every
-- first opening (it reads RATE_WAKE_KEY instead: rates.lua's wake_at).
local function read_ahead(arming, acks, first_queue)
  ahead, ahead_of = nil, nil
  if arming then return nil, nil end
  local name = argv[first_queue]
  local keys = name and queue_state_keys(name) or {}
  local n = #keys
  keys[n + 1], keys[n + 2] = RATE_DUE_KEY, FORMAT_KEY
  if acks > 0 then keys[n + 3] = RECOVERED_KEY end
  local values = redis.call('MGET', unpack(keys))
  if name then ahead, ahead_of = values, name end
  format_read(values[n + 2])
  if acks > 0 then return values[n + 1], values[n + 3] end
  return values[n + 1], nil
end

-- Whether any of the queues from the `from`-th argument to the `to`-th
-- holds a job (an empty list does not exist): one EXISTS for them all. Jobs
-- held for a queue (see release) count.
local function any_queued(from, to)
  local keys = {}
  for i = from, to do
    local name = argv[i]
    if held[name] and #held[name] > 0 then return true end
    keys[#keys + 1] = queue_key(name)
  end
  return redis.call('EXISTS', unpack(keys)) > 0
end

-- The first queue from the `from`-th argument on that holds a job, or nil:
-- EXISTS over runs of queues that double in length, then over halves of
-- the run that holds one. Over n empty queues that is about 2 log2(n)
-- calls, where a look at each queue in turn costs n or 2n (a fetch from
-- the last of 200 queues was 2.6 times BasicFetch's).
local function next_queued(from)
  local last = #argv
  local lo, size = from, 1
  while lo <= last do
    local hi = math.min(lo + size - 1, last)
    if any_queued(lo, hi) then
      while lo < hi do
        local mid = math.floor((lo + hi) / 2)
        if any_queued(lo, mid) then hi = mid else lo = mid + 1 end
      end
      return lo
    end
    lo, size = hi + 1, size * 2
  end
  return nil
end

-- The queue to look at after the `i`-th argument's, or nil: the next, or,
-- with more than a few left, the next that holds a job.
local GALLOP_OVER = 4
local function after(i)
  if #argv - i > GALLOP_OVER then return next_queued(i + 1) end
  if i < #argv then return i + 1 end
  return nil
end

-- Queues before the one a job came from are empty or at a limit. Also
-- returns how many jobs the first queue holds.
local function more_from(first)
  local i, queued = first, 0
  while i do
    local name = argv[i]
    local length = redis.call('LLEN', queue_key(name))
    if i == first then queued = length end
    if length > 0 and eligible(name, busy_key(name)) then return 1, queued end
    i = after(i)
  end
  return 0, queued
end
