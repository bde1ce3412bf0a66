-- Sending a job limit's oldest parked jobs back to their queues as it has
-- room (release), or holding them for the fetch that takes them; and the
-- fetch's rate writes left to the end of its call (defer_rate_due).

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
-- lua/fetch/). `freed`: how many entries of the limit's busy list are
-- slots already freed, that the caller removes later (the fetch's
-- hand-over; 0 if nil). Jobs left parked behind the rate are noted to go
-- when its window opens (rate_parks). `take_first` (without `held`): a
-- function of the oldest job's queue name that returns the list it goes
-- into instead (the fetch's in-progress list of a queue it may take from,
-- see lua/fetch/rates.lua), or nil. Also returns how many it sent, the
-- limit's entry it read (nil when it sent none), and the job moved for
-- `take_first` (else nil).
local function release(id, n, held, freed, known, take_first)
  -- A slot freed (n) of a limit without concurrency sends nothing back: its
  -- jobs were parked by its rate, and go, in order, as its window opens;
  -- or, a fair class's tenant, at its turn (fair.lua). A limit that
  -- declares none has one only if it is stored: its values (one read,
  -- which the fetch that takes its next job reads too) say so before the
  -- looks below.
  if n and known and known.concurrency == nil and not known.fair then
    -- In the fetch, a rate limit's are read with those of the next limit
    -- it reads (most often the job it takes: read_wanted), and the slot is
    -- decided as the call ends (defer_rate_due).
    if rate_due_deferred and known.rate ~= nil and known.ceiling == nil and stored_job_limits[id] == nil then
      values_wanted = true
      undecided = undecided or {}
      undecided[#undecided + 1] = known
      return {}
    end
    if job_limit(known) == MAX_LIMIT then return {} end
  end
  -- A limit with parked jobs is in LIMITS_WITH_PARKED_KEY: every script
  -- that parks a job adds its limit. Most limits never park: a slot freed
  -- (n) of one costs this one look.
  if n and redis.call('SISMEMBER', LIMITS_WITH_PARKED_KEY, id) == 0 then return {} end
  local parked = parked_key(id)
  local left = redis.call('LLEN', parked)
  if left == 0 then
    redis.call('SREM', LIMITS_WITH_PARKED_KEY, id)
    return {}
  end
  -- The oldest parked job, read once: it tells the limits (unless `known`)
  -- and the queue the first job goes to.
  local oldest = not known and redis.call('LINDEX', parked, -1) or nil
  -- Jobs parked by the back-off of a class that declares no limit carry
  -- none (back_off.lua): nothing but the back-off held them.
  local limits = known and {known} or job_limits(oldest) or {}
  -- The limit's values first: they hold its back-off's end, which
  -- back_off_end then need not read again.
  for _, limit in ipairs(limits) do
    if limit.id == id then job_limit(limit) end
  end
  -- A back-off holds every job of the limit until it ends, when its
  -- parked jobs go (lua/fetch/rates.lua's release_opened).
  local back_off = back_off_end(id)
  if back_off then
    rate_parks(id, back_off)
    return {}
  end
  local room, rate, rate_left, opens = 0, nil, nil, nil
  local carries = false
  for _, limit in ipairs(limits) do
    if limit.id == id then
      carries = limit
      local concurrency = job_limit(limit)
      if n and concurrency == MAX_LIMIT and not limit.fair then return {} end
      -- Without concurrency, its busy list bounds nothing: not read.
      local busy = concurrency < MAX_LIMIT and redis.call('LLEN', job_busy_key(id)) - (freed or 0) or 0
      -- More jobs than its limit lets run: an adaptive limit may grow
      -- (adaptive.lua), and a slot freed then sends one more.
      if concurrency < MAX_LIMIT and busy + left > concurrency then
        local grown = grow(limit, concurrency)
        if n then n = n + grown - concurrency end
        concurrency = grown
      end
      room = concurrency - busy
      rate = job_rate(limit)
    end
  end
  if not carries and not known then room = left end
  -- A fair class's tenant sent back with no turn (a beat's sweep, a rate's
  -- window, a back-off's end) takes no more than its class has room for:
  -- the rest would only be parked again (fair.lua).
  if carries and carries.fair and not n then
    for _, class in ipairs(limits) do
      if class.id == carries.fair then
        room = math.min(room, job_limit(class) - redis.call('LLEN', job_busy_key(class.id)))
      end
    end
  end
  local starts = rate and job_starts_key(id)
  if room > 0 and rate then
    -- Jobs sent back earlier wait at the front of their queues until they
    -- start: more sent now would go ahead of them. The last to start says
    -- when (book_start); a period at most, as the count then expires.
    if released_outstanding(id) then return {} end
    rate_left, opens = rate_room(starts, rate, true)
    if rate_left < room then room = rate_left end
  end
  if n and n < room then room = n end
  if room <= 0 then
    if rate_left == 0 then rate_parks(id, opens) end
    return {}
  end
  local first, sent = nil, 0
  if not held then
    local name = job_queue(oldest or redis.call('LINDEX', parked, -1))
    local into = take_first and name and take_first(name)
    if into then
      -- The first write: one command takes it out of its list and puts it
      -- where the fetch takes it from, so that a write refused later (the
      -- ACL changed under a running process) leaves it there, never in
      -- this call's memory alone.
      first = redis.call('LMOVE', parked, into, 'RIGHT', 'LEFT')
      room, sent = room - 1, 1
    end
    -- Out of the list, then into their queues: a user denied the push
    -- stops here, not between the two (see may_send).
    if name and room > 0 and sent < left then may_send('RPUSH', queue_key(name), 'job') end
  end
  -- Its bookkeeping is written once its jobs are where they go (below): a
  -- write refused there leaves them there, and an entry that outlives its
  -- jobs is dropped by the next look (a spurious one costs a look).
  -- (A list emptied by that move is gone: RPOP would say nil.)
  local jobs = room > 0 and sent < left and redis.call('RPOP', parked, room) or {}
  sent = sent + #jobs
  local queues = {}
  -- Jobs of one queue in a row go in one RPUSH, in the same order (a
  -- thousand at most: unpack's stack is bounded).
  local run, run_queue = {}, nil
  for i = #jobs, 0, -1 do
    -- A job without a queue was written by hand (Sidekiq's payloads all
    -- name theirs): it goes where Sidekiq shows it, not nowhere.
    local job = jobs[i]
    local name = job and job_queue(job)
    local queue = name and not held and queue_key(name)
    if run_queue and (queue ~= run_queue or #run == 1000) then
      redis.call('RPUSH', run_queue, unpack(run))
      run, run_queue = {}, nil
    end
    if queue then
      run_queue = queue
      run[#run + 1] = job
      queues[#queues + 1] = queue
    elseif name then
      local waiting = held[name] or {}
      waiting[#waiting + 1] = job
      held[name] = waiting
    elseif job then
      redis.call('ZADD', DEAD_KEY, 0, job)
    end
  end
  if sent == left then
    -- A fair class's tenant stops waiting its turn (fair.lua).
    if carries and carries.fair then redis.call('ZREM', fair_waiting_key(carries.fair), id) end
    if held then
      emptied = emptied or {}
      emptied[id] = true
    else
      redis.call('SREM', LIMITS_WITH_PARKED_KEY, id)
    end
  elseif rate_left == sent then
    rate_parks(id, reopens(starts, rate))
  end
  if rate then
    -- Counted until they start (book_start), or for a period at most. None
    -- were (released_outstanding, above): one SET writes the count and its
    -- expiry; in the fetch, as it ends, less those it started (a window's
    -- job it takes at once is counted in no write).
    local ms = math.ceil(rate[2] / 1000)
    if rate_due_deferred then
      released_pending = released_pending or {}
      released_pending[id] = {sent, ms}
    else
      redis.call('SET', job_released_key(id), sent, 'PX', ms)
    end
    rate_released[id] = true
  end
  return queues, sent, carries or nil, first
end

-- From `on` (true) to the end of the call (false), RATE_DUE_KEY and
-- RATE_WAKE_KEY are kept in step once, as it ends, if the call wrote
-- RATE_PARKED_KEY (rate_parked_written), rather than at every change: the
-- fetch, which may send back many limits and park some again, writes them
-- once. So are the counts of jobs sent back for a rate (release), less
-- those that started in the call: a window's job that the fetch sends back
-- and takes at once costs no write of its count. And freed slots of rate
-- limits without concurrency are decided then (release): one whose limit
-- is stored after all sends its parked job back to its queue. Returns the
-- queues' keys that wrote (NONE if none).
local function defer_rate_due(on)
  rate_due_deferred = on
  if on then return NONE end
  local queues = NONE
  for _, known in ipairs(undecided or NONE) do
    if job_limit(known) < MAX_LIMIT then
      for _, queue in ipairs(release(known.id, 1, nil, nil, known)) do
        if queues == NONE then queues = {} end
        queues[#queues + 1] = queue
      end
    end
  end
  if rate_parked_written then sync_rate_due() end
  for id, pending in pairs(released_pending or NONE) do
    redis.call('SET', job_released_key(id), pending[1], 'PX', pending[2])
  end
  return queues
end
