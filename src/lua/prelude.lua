-- The top of the function library whose functions the scripts are (see
-- script/mod.rs), run once when Redis loads it: the Redis data model's key
-- names, built as src/keys.rs builds them (tests/lua_prelude.rs holds the
-- two to each other), and the rules several scripts share. Defines locals
-- only, which every script sees; no Redis command runs here (Redis allows
-- none while it loads a library). The capsules set and heartbeat keys reach
-- the reap script from the core, as KEYS; the orphans script, which meets
-- UUIDs in busy lists, builds them here.
--
-- Locals here outlive a call: what one call may keep is reset by
-- new_call(), which every function runs first (script/mod.rs).

local PREFIX = 'sidekiq:limit_fetch:'
local RECOVERIES_KEY = 'sidekiq:limit_fetch:recoveries'
-- How many reaps counted a recovery (src/keys.rs's RECOVERED).
local RECOVERED_KEY = 'sidekiq:limit_fetch:recovered'
local DEAD_KEY = 'dead'
local CAPSULES_KEY = 'sidekiq:limit_fetch:capsules'
local REGISTERED_KEY = 'sidekiq:limit_fetch:registered'
local UNREGISTERED_KEY = 'sidekiq:limit_fetch:unregistered'
local OUTAGE_KEY = 'sidekiq:limit_fetch:outage'
local LAST_BEAT_KEY = 'sidekiq:limit_fetch:last_beat'

-- Sidekiq's own list for a queue.
local function queue_key(name) return 'queue:' .. name end
local function limit_key(name) return PREFIX .. 'queue:' .. name .. ':limit' end
local function process_limit_key(name) return PREFIX .. 'queue:' .. name .. ':process_limit' end
local function busy_key(name) return PREFIX .. 'queue:' .. name .. ':busy' end
local function paused_key(name) return PREFIX .. 'queue:' .. name .. ':paused' end
local function in_progress_key(uuid, name) return PREFIX .. 'capsule:' .. uuid .. ':inprogress:' .. name end
local function capsule_queues_key(uuid) return PREFIX .. 'capsule:' .. uuid .. ':queues' end
local function heartbeat_key(uuid) return PREFIX .. 'capsule:' .. uuid .. ':heartbeat' end
local function capsule_info_key(uuid) return PREFIX .. 'capsule:' .. uuid .. ':info' end
-- Job limits (a job class's, or a key's) by id: see src/keys.rs.
local function job_limit_key(id) return PREFIX .. 'limit:' .. id .. ':limit' end
local function job_busy_key(id) return PREFIX .. 'limit:' .. id .. ':busy' end
local function parked_key(id) return PREFIX .. 'limit:' .. id .. ':parked' end
-- The job limits a capsule's runs pass slots of (src/keys.rs): a slot's
-- other holders carry their limits, in the capsule's in-progress lists.
local function capsule_limits_key(uuid) return PREFIX .. 'capsule:' .. uuid .. ':limits' end
local PARKED_KEY = 'sidekiq:limit_fetch:parked'
-- Rates: a queue's or a job limit's stored rate, its starts (a sorted set
-- scored by start time, in microseconds of Redis's clock), and the job
-- limits parked at their rate, scored by when their window may next open.
local function rate_key(name) return PREFIX .. 'queue:' .. name .. ':rate' end
local function starts_key(name) return PREFIX .. 'queue:' .. name .. ':starts' end
local function job_rate_key(id) return PREFIX .. 'limit:' .. id .. ':rate' end
local function job_starts_key(id) return PREFIX .. 'limit:' .. id .. ':starts' end
local function job_released_key(id) return PREFIX .. 'limit:' .. id .. ':released' end
local RATE_PARKED_KEY = 'sidekiq:limit_fetch:rate_parked'
-- RATE_PARKED_KEY's first score, or absent with it: a plain string that a
-- processor's hand-over reads in its MGET (src/capsule/hand_over/).
local RATE_DUE_KEY = 'sidekiq:limit_fetch:rate_due'
local DISCARDED_KEY = 'sidekiq:limit_fetch:discarded'

-- The largest valid limit, 2^53 - 1: a Lua number holds every integer up to
-- it exactly. No queue has that many jobs running: a larger one is broken.
local MAX_LIMIT = 9007199254740991

-- A limit that is not decimal digits (ASCII whitespace around allowed) up to
-- MAX_LIMIT reads as 0: a broken limit must never mean "unlimited". The core
-- (limits.rs) and Ruby (limits.rb) read limits the same way; the values all
-- must agree on are in spec/fixtures/limit_values.json. `raw`: the value
-- as GET (or MGET) gives it, false when the key is missing.
local function parse_limit(raw)
  if not raw then return nil end
  -- tonumber rounds digits to the nearest double: above MAX_LIMIT only if
  -- their value is.
  local limit = tonumber(string.match(raw, '^%s*(%d+)%s*$'))
  if limit and limit <= MAX_LIMIT then return limit end
  return 0
end

local function read_limit(key) return parse_limit(redis.call('GET', key)) end

-- The longest rate period, in seconds (a week), and the shortest.
local MAX_PERIOD, MIN_PERIOD = 604800, 0.1

-- A rate as {limit, period in microseconds}, from its stored text
-- "<limit>/<period in seconds>" ("100/60", "5/0.5"; ASCII whitespace
-- around each allowed), or nil when `raw` is false (no key). Anything else
-- reads as a limit of 0, no start at all: a broken rate must never mean
-- "unlimited". limits.rs and rates.rb read rates the same way
-- (spec/fixtures/rate_values.json).
local function parse_rate(raw)
  if not raw then return nil end
  local limit, period = string.match(raw, '^%s*(%d+)%s*/%s*(%d+%.?%d*)%s*$')
  limit, period = tonumber(limit), tonumber(period)
  if limit and period and limit <= MAX_LIMIT and period >= MIN_PERIOD and period <= MAX_PERIOD then
    return {limit, math.floor(period * 1000000 + 0.5)}
  end
  return {0, 1000000}
end

-- A declared rate, as a payload carries it: [limit, period in seconds].
local function declared_rate(rate)
  if type(rate) ~= 'table' then return {0, 1000000} end
  local limit, period = rate[1], rate[2]
  if type(limit) == 'number' and limit >= 0 and limit <= MAX_LIMIT and limit % 1 == 0 and
    type(period) == 'number' and period >= MIN_PERIOD and period <= MAX_PERIOD then
    return {limit, math.floor(period * 1000000 + 0.5)}
  end
  return {0, 1000000}
end

-- Puts a job back first in line: Sidekiq pushes jobs on the left of a queue
-- and takes them from the right.
local function push_back(name, job) redis.call('RPUSH', queue_key(name), job) end

-- Stops the call before a move that takes two writes (out of one list, then
-- into another) if its user may not send the second, `command` with the
-- arguments given (its key first). Redis keeps what a script wrote before a
-- command it refuses: with the ACL changed under running processes (the
-- capsule's boot check passed, src/acl.rs), the job would be in neither
-- list. Refused in Redis's own words, which src/acl.rs reads to name the
-- rule to add.
local function may_send(command, key, ...)
  if not redis.acl_check_cmd(command, key, ...) then
    error({err = "NOPERM this user has no permissions to run the '" .. string.lower(command) ..
      "' command (or to access '" .. key .. "'), checked before the move that needs it"})
  end
end

-- What this call has learnt, so that it asks once: payloads parsed, the
-- limits they carry (by payload, and by the text of their array) and the
-- queue written after them (a hot key's job is met twice in a fetch:
-- released from parking, then taken), and job limits' stored values, by id.
local parsed_jobs, carried_limits, carried_arrays, carried_queues, stored_job_limits = {}, {}, {}, {}, {}
-- Rates: Redis's clock, read once a call; job limits' rates by id; the
-- room left in windows, by starts key (false: full), and when each full
-- one; and whether this call wrote RATE_PARKED_KEY.
local clock, job_rates, rate_rooms, rate_opens, rate_parked_written
-- Job limits whose last parked jobs a release handed to the fetch (`held`,
-- see release), by id, or nil: they leave PARKED_KEY once those jobs are in
-- a list again (fetch.lua's done).
local emptied
local function new_call()
  parsed_jobs, carried_limits, carried_arrays, carried_queues, stored_job_limits = {}, {}, {}, {}, {}
  clock, job_rates, rate_rooms, rate_opens, rate_parked_written = nil, {}, {}, {}, false
  emptied = nil
end

-- Redis's clock now, in microseconds: the same for the whole call (a
-- script's writes carry one time, as if they were made at once).
local function now()
  if not clock then
    local time = redis.call('TIME')
    clock = tonumber(time[1]) * 1000000 + tonumber(time[2])
  end
  return clock
end

-- How many more starts the window of `rate` ({limit, period}) whose starts
-- are the sorted set `starts` allows now; at 0, also when it next will
-- (microseconds, Redis's clock), or nil if never (a limit of 0). Starts
-- that left the window are removed first: a window is strict, a start at
-- t counts until t + period.
local function rate_room(starts, rate)
  local room = rate_rooms[starts]
  if room ~= nil then return room or 0, rate_opens[starts] end
  local limit, period = rate[1], rate[2]
  if limit == 0 then
    rate_rooms[starts] = false
    return 0, nil
  end
  local t = now()
  redis.call('ZREMRANGEBYSCORE', starts, '-inf', t - period)
  local n = redis.call('ZCARD', starts)
  if n < limit then
    rate_rooms[starts] = limit - n
    return limit - n
  end
  -- The window opens when the start `limit` places before the newest
  -- leaves it.
  local opens = tonumber(redis.call('ZRANGE', starts, n - limit, n - limit, 'WITHSCORES')[2]) + period
  rate_rooms[starts], rate_opens[starts] = false, opens
  return 0, opens
end

-- Counts a start now in the window `starts` of `rate`, which expires with
-- its last start: an idle rate leaves nothing in Redis. `who`: the capsule
-- (a member is unique per capsule and time).
local function record_start(starts, rate, who)
  local t = now()
  -- Lua's own number to text keeps 14 digits; Redis's, for arguments, all.
  redis.call('ZADD', starts, t, who .. ':' .. string.format('%.0f', t))
  redis.call('PEXPIRE', starts, math.ceil(rate[2] / 1000))
  local room = rate_rooms[starts]
  if room then
    rate_rooms[starts] = room > 1 and room - 1 or nil
  else
    rate_rooms[starts] = nil
  end
end

-- A payload as a table, or nil when it is not a JSON object.
local function parse(job)
  local parsed = parsed_jobs[job]
  if parsed == nil then
    local ok, value = pcall(cjson.decode, job)
    parsed = ok and type(value) == 'table' and value or false
    parsed_jobs[job] = parsed
  end
  return parsed or nil
end

-- The valid job limits of a payload's "limit_fetch" field, or false.
--
-- The client middleware writes the field first in the payload, and its
-- queue next: only the array is decoded, and the queue's name read after
-- it (carried_queues), for a released job: a payload's arguments may be
-- large, and the fetch reads the limits of every keyed job it acknowledges
-- and takes. Elsewhere (a payload written otherwise), or if that array
-- does not decode (an id with a bracket ends %b[] early or late, leaving
-- JSON that does not parse), the whole payload is. Only at the start is the
-- field surely the payload's own, not a key of a hash among its arguments;
-- once the array decoded, what follows it is the payload's next key.
-- spec/fixtures/job_limit_payloads.json holds payloads as the middleware
-- writes them and what this reads from each (tests/payloads.rs).
local LIMITS_FIRST = '{"limit_fetch":'

-- The valid job limits of a decoded "limit_fetch" value, or false.
local function valid_limits(list)
  local limits = {}
  if type(list) == 'table' then
    for _, limit in ipairs(list) do
      if type(limit) == 'table' and type(limit.id) == 'string' then limits[#limits + 1] = limit end
    end
  end
  return #limits > 0 and limits
end

local function carried(job)
  if string.sub(job, 1, #LIMITS_FIRST) == LIMITS_FIRST then
    local array = string.match(job, '^%b[]', #LIMITS_FIRST + 1)
    -- A hot key's jobs carry the same array: decoded once a call.
    local limits = array and carried_arrays[array]
    if limits == nil and array then
      local ok, list = pcall(cjson.decode, array)
      if ok then limits = valid_limits(list) end
      carried_arrays[array] = limits == nil and 'invalid' or limits
    end
    if limits ~= nil and limits ~= 'invalid' then
      -- A name with a quote or a backslash in it is escaped: read as JSON.
      carried_queues[job] = string.match(job, '^,"queue":"([^"\\]*)"', #LIMITS_FIRST + #array + 1)
      return limits
    end
  end
  local parsed = parse(job)
  return valid_limits(parsed and parsed.limit_fetch)
end

-- The job limits a payload carries, each {id =, concurrency =, discard =}
-- (lib/sidekiq/limit_fetch/job_limits.rb writes them); nil for a job that
-- carries none, which costs one plain find.
local function job_limits(job)
  if not string.find(job, '"limit_fetch":', 1, true) then return nil end
  local limits = carried_limits[job]
  if limits == nil then
    limits = carried(job)
    carried_limits[job] = limits
  end
  return limits or nil
end

-- The name of the queue a payload says it belongs to, or nil.
local function job_queue(job)
  if job_limits(job) and carried_queues[job] then return carried_queues[job] end
  local parsed = parse(job)
  return parsed and type(parsed.queue) == 'string' and parsed.queue or nil
end

-- A job limit's value: the one stored for its id (set at run time), else
-- the default its job carries. Like a stored limit, a broken default reads
-- as 0. A limit that declares a rate and no concurrency has none (the
-- largest limit), unless one is stored.
local function job_limit(limit)
  local stored = stored_job_limits[limit.id]
  if stored == nil then
    stored = read_limit(job_limit_key(limit.id)) or false
    stored_job_limits[limit.id] = stored
  end
  if stored then return stored end
  local default = limit.concurrency
  if default == nil and limit.rate ~= nil then return MAX_LIMIT end
  if type(default) == 'number' and default >= 0 and default <= MAX_LIMIT and default % 1 == 0 then
    return default
  end
  return 0
end

-- A job limit's rate ({limit, period}), or nil: the one stored for its id
-- (set at run time), else the one its job carries. Only a limit that
-- declares a rate has one: the others never pay for the stored one's read.
local function job_rate(limit)
  if limit.rate == nil then return nil end
  local rate = job_rates[limit.id]
  if rate == nil then
    rate = parse_rate(redis.call('GET', job_rate_key(limit.id))) or declared_rate(limit.rate)
    job_rates[limit.id] = rate
  end
  return rate
end


-- Notes that job limit `id` has jobs parked behind its rate, whose window
-- opens at `opens` (Redis's clock, microseconds): a fetch then sends them
-- back (see fetch.lua). Without `opens` (a rate of 0) only a change of the
-- rate does (release.lua). An earlier time noted stays.
-- Sets RATE_DUE_KEY to RATE_PARKED_KEY's first score, after a change of it.
local function sync_rate_due()
  local first = redis.call('ZRANGE', RATE_PARKED_KEY, 0, 0, 'WITHSCORES')
  if #first == 0 then
    redis.call('DEL', RATE_DUE_KEY)
  else
    redis.call('SET', RATE_DUE_KEY, first[2])
  end
end

local function rate_parks(id, opens)
  if opens then
    redis.call('ZADD', RATE_PARKED_KEY, 'LT', opens, id)
    rate_parked_written = true
    sync_rate_due()
  end
end

-- Counts a start of job limit `id` under its rate now, and one fewer of
-- its jobs sent back but not started. The last of those to start, if the
-- limit has more parked (release holds them back until then), notes it due
-- when its window next has room: now (then returns true), or as it opens.
-- A job taken from another queue than the one they wait at the front of
-- may be counted for one of them: the next release may then come before
-- that one starts, and go ahead of it.
local function book_start(id, rate, who)
  local starts = job_starts_key(id)
  record_start(starts, rate, who)
  local released = job_released_key(id)
  if redis.call('EXISTS', released) == 0 then return false end
  local left = redis.call('DECR', released)
  if left > 0 then return false end
  redis.call('DEL', released)
  if left < 0 or redis.call('EXISTS', parked_key(id)) == 0 then return false end
  local room, opens = rate_room(starts, rate)
  rate_parks(id, room > 0 and now() or opens)
  return room > 0
end

-- When the window of `starts` ({limit, period} `rate`), whose room is
-- about to be taken whole, opens again: as the oldest start in it leaves,
-- or a period from now if it holds none.
local function reopens(starts, rate)
  local oldest = redis.call('ZRANGE', starts, 0, 0, 'WITHSCORES')[2]
  return (oldest and tonumber(oldest) or now()) + rate[2]
end

-- Sends up to `n` of a job limit's oldest parked jobs (n > 0; nil: as many
-- as it has room for) back to the front of their queues, to be fetched
-- next, the oldest first. Room is what both its concurrency and its rate
-- leave. Parked jobs carry the limit; the oldest tells its default,
-- unless `known`, a limit of that id at hand (a job that just ended),
-- tells it for them. Returns the queues' keys it wrote. With `held` (a
-- table), jobs are not pushed but appended to held[queue name], in the
-- order they would have been pushed: the fetch takes them from there, so
-- that a job it takes at once never writes its queue, which would wake
-- idle fetchers for nothing, and pushes the rest when it ends (see
-- fetch.lua). `vacated`: how many entries of the limit's busy list are
-- slots already freed, that the caller removes later (the fetch's
-- hand-over; 0 if nil). Jobs left parked behind the rate are noted to go
-- when its window opens (rate_parks).
local function release(id, n, held, vacated, known)
  -- A limit with parked jobs is in PARKED_KEY: every script that parks a
  -- job adds its limit. Most limits never park: a slot freed (n) of one
  -- costs this one look.
  if n and redis.call('SISMEMBER', PARKED_KEY, id) == 0 then return {} end
  local parked = parked_key(id)
  local left = redis.call('LLEN', parked)
  if left == 0 then
    redis.call('SREM', PARKED_KEY, id)
    return {}
  end
  local room, rate, rate_left, opens = 0, nil, nil, nil
  for _, limit in ipairs(known and {known} or job_limits(redis.call('LINDEX', parked, -1)) or {}) do
    if limit.id == id then
      local concurrency = job_limit(limit)
      -- A slot freed (n) of a limit without concurrency sends nothing
      -- back: its jobs were parked by its rate, and go, in order, as its
      -- window opens.
      if n and concurrency == MAX_LIMIT then return {} end
      room = concurrency - redis.call('LLEN', job_busy_key(id)) + (vacated or 0)
      rate = job_rate(limit)
    end
  end
  local starts = rate and job_starts_key(id)
  if room > 0 and rate then
    -- Jobs sent back earlier wait at the front of their queues until they
    -- start: more sent now would go ahead of them. The last to start says
    -- when (book_start); a period at most, as the count then expires.
    if redis.call('EXISTS', job_released_key(id)) == 1 then return {} end
    rate_left, opens = rate_room(starts, rate)
    if rate_left < room then room = rate_left end
  end
  if n and n < room then room = n end
  if room <= 0 then
    if rate_left == 0 then rate_parks(id, opens) end
    return {}
  end
  if not held then
    -- Out of the list, then into their queues: a user denied the push
    -- stops here, not between the two (see may_send).
    local name = job_queue(redis.call('LINDEX', parked, -1))
    if name then may_send('RPUSH', queue_key(name), 'job') end
  end
  -- Its bookkeeping is written once its jobs are where they go (below): a
  -- write refused there leaves them there, and an entry that outlives its
  -- jobs is dropped by the next look (a spurious one costs a look).
  local jobs = redis.call('RPOP', parked, room)
  local queues = {}
  for i = #jobs, 1, -1 do
    -- A job without a queue was written by hand (Sidekiq's payloads all
    -- name theirs): it goes where Sidekiq shows it, not nowhere.
    local name = job_queue(jobs[i])
    if name then
      if held then
        local waiting = held[name] or {}
        waiting[#waiting + 1] = jobs[i]
        held[name] = waiting
      else
        local queue = queue_key(name)
        redis.call('RPUSH', queue, jobs[i])
        queues[#queues + 1] = queue
      end
    else
      redis.call('ZADD', DEAD_KEY, 0, jobs[i])
    end
  end
  if #jobs == left then
    if held then
      emptied = emptied or {}
      emptied[id] = true
    else
      redis.call('SREM', PARKED_KEY, id)
    end
  elseif rate_left == room then
    rate_parks(id, reopens(starts, rate))
  end
  if rate then
    -- Counted until they start (book_start), or for a period at most.
    redis.call('INCRBY', job_released_key(id), #jobs)
    redis.call('PEXPIRE', job_released_key(id), math.ceil(rate[2] / 1000))
  end
  return queues
end

-- Removes `n` of the capsule's entries from a job limit's busy list (slots
-- it freed). The capsule's set of run limits is kept by the fetch script
-- that ends a run, and by its beats (reconcile.lua).
local function unbook_job_limit(uuid, id, n)
  return redis.call('LREM', job_busy_key(id), n, uuid)
end

-- Frees the slots of a job's limits that the capsule booked for it (the job
-- ended or went back), and sends for each the oldest parked job to be
-- fetched next if it has room.
local function free_job_limits(uuid, limits)
  for _, limit in ipairs(limits) do
    if unbook_job_limit(uuid, limit.id, 1) == 1 then release(limit.id, 1, nil, nil, limit) end
  end
end

-- The ids of the job limits capsule `uuid` may hold slots of, each once:
-- those its in-progress jobs carry (a slot is booked with its job, in one
-- step), and those its runs name (a run's hand-over passes a slot before
-- it reads the job that takes it: see src/capsule/hand_over/).
local function capsule_job_limits(uuid)
  local ids, seen = {}, {}
  local function add(id)
    if not seen[id] then
      seen[id] = true
      ids[#ids + 1] = id
    end
  end
  for _, id in ipairs(redis.call('SMEMBERS', capsule_limits_key(uuid))) do add(id) end
  for _, name in ipairs(redis.call('SMEMBERS', capsule_queues_key(uuid))) do
    -- One job per thread at most: bounded by the capsule's concurrency.
    for _, job in ipairs(redis.call('LRANGE', in_progress_key(uuid, name), 0, -1)) do
      for _, limit in ipairs(job_limits(job) or {}) do add(limit.id) end
    end
  end
  return ids
end

-- The jid and class of a job, for logs: '?' for what its payload lacks, or
-- for all of it when it is not a JSON object.
local function describe_job(job)
  local parsed = parse(job)
  if parsed then return tostring(parsed.jid or '?'), tostring(parsed.class or '?') end
  return '?', '?'
end

