-- Acknowledges finished jobs, then takes the next job from the first queue,
-- in the order given, that is under its limits: one atomic step, so no two
-- fetchers anywhere can both take the last slot, and one round trip per job
-- (the acknowledgement of a job rides on the next fetch of its capsule).
--
-- A paused queue (its paused key exists; see src/keys.rs) is never eligible;
-- nor is a queue whose rate's window is full (its starts are counted here,
-- where its jobs are taken).
--
-- A taken job moves to the capsule's in-progress list of its queue, where it
-- stays until acknowledged or pushed back: if the capsule dies, the reaper
-- returns it to its queue.
--
-- A job that carries job limits (its class's, its key's) and finds one at
-- its limit is set aside: parked, in order, until a slot of that limit
-- frees and sends it back to the front of its queue; or, if the limit says
-- so, discarded. The fetch goes on with the next job of the queue, then the
-- next queues, setting aside at most ARGV[3] jobs; beyond that it stops and
-- says to look again. A job limit's rate works the same way, with time as
-- the slot: a job over it is parked until the window opens, and the first
-- fetch after that sends it back to the front of its queue.
--
-- ARGV[1]     the capsule's UUID
-- ARGV[2]     what the capsule's doorbell needs while fetchers sleep on it:
--             '0'  nothing;
--             '2'  report whether another job is eligible after this one;
--             '1'  that, and read again the keys this script writes, so that
--                  the tracking connection (which sent it after CLIENT CACHING
--                  yes) goes on tracking them;
--             't'  take nothing: read, for each queue, the keys whether it is
--                  eligible depends on (its limits, pause and busy list), and
--                  its length if it is (arming the doorbell, after CLIENT
--                  CACHING yes). A full or paused queue's own key is not
--                  read: pushes to it change nothing until a slot, a limit or
--                  the pause does, and those keys are read (a pause's TTL
--                  running out deletes its key, which Redis reports too).
--                  Returns 1 if an eligible queue holds a job, else nil; or,
--                  when a rate holds something back, {1 or 0, opens in}.
-- ARGV[3]     how many jobs the fetch may set aside at most (>= 1)
-- ARGV[4]     n, the number of acknowledgements that follow ARGV[9]
-- ARGV[5..9]  what a hand-over left to decide (see src/capsule/hand_over/),
--             else '', '0', '', '', '': the name of the queue it took from;
--             '1' if its acknowledgement freed a slot of that queue (which
--             counts as freed here, while the capsule's heartbeat key
--             exists), else '0'; the job it moved into the capsule's
--             in-progress list unchecked, or '' (none was there); the job
--             it acknowledged if that carries job limits, whose slots count
--             as freed too (on the same terms: its run ends, and its limits
--             leave the capsule's set of run limits), else ''; the job limit id
--             whose parked jobs it moved the job from, else '' (its queue)
-- then n triples: queue name, job, SHA1 of the job (hex)
-- then        queue names, in Sidekiq's order for this fetch (no "queue:" prefix)
-- Returns nil if it took and set aside nothing and no rate holds anything
-- back, else {queue name or false, job or false, more, discarded, process
-- limited, queued, opens in, parked} (the last four may be missing): more is 1 if
-- another job is eligible after this one, or, with no job, if it stopped at
-- ARGV[3]; discarded lists {job, job limit id} of each job it discarded
-- (the whole payload, for the app's discard handlers); with a job, 1 if its queue has a process limit or a rate (a
-- hand-over is tried only without either), else false, and, when it reports (ARGV[2]
-- '1' or '2'), how many jobs its queue still holds (else false); opens in:
-- microseconds until a rate may let something go that it holds back now
-- (a queue's window, or jobs parked behind a job limit's), else false;
-- parked: with a job, 1 if it was a parked job this fetch sent back (its
-- limits may have more: see src/capsule/hand_over/), else false.

-- The chunk above `return` runs once, when Redis loads the library; the
-- function it returns runs at every fetch. Helpers are defined once, here,
-- not at every call (a closure each, every call, cost Redis about a fifth of
-- a fetch), and share the call's state through these locals, which the
-- function sets first. A call that has no acknowledgement, job limit or
-- watcher allocates no table for them: it reads NONE, which nothing writes.
local NONE = {}
local argv, uuid, watch, report, lookahead
-- The last queue state eligible read: {limit, process limit, paused,
-- rate}, and that rate, parsed.
local seen, seen_rate
-- The earliest time (Redis's clock, microseconds) something a rate holds
-- back in this look may go: a queue's window opens, or parked jobs go back.
local opens
-- Job limits found at their rate, and when their window opens (0: never).
local rate_full
-- Slots freed, per queue and per job limit, and the parked jobs held for
-- their queues (see the acknowledgements below); the watched keys written
-- (a write ends their tracking), the queues whose key a take wrote; job
-- limits found full, and those that parked a job; jobs set aside and
-- discarded.
local freed, vacated, held, written, moved, full, parked, aside, discarded
-- The in-progress list each job discarded by a take is still in, in order
-- (see set_aside).
local discarded_from
-- The job taken was held: a parked job sent back by this call.
local took_held
-- The job limits of a run that ended here (the acknowledged job whose
-- slots a hand-over passed, ARGV[8]), or nil.
local ended

local function wrote(key)
  if watch then written[#written + 1] = key end
end

local function opens_at(t)
  if t and (not opens or t < opens) then opens = t end
end

-- The reply's last element: microseconds until `opens`, else false.
local function opens_in()
  if not opens then return false end
  return math.max(0, opens - now())
end

-- Sends back the jobs parked behind a rate whose window has opened (the
-- earliest first, at most RELEASE_AT_ONCE limits a call), and notes when
-- the next opens. `may_release`: false to only note it (arming reads,
-- takes nothing).
local RELEASE_AT_ONCE = 100
local function release_opened(may_release)
  local first = redis.call('ZRANGE', RATE_PARKED_KEY, 0, 0, 'WITHSCORES')
  if #first == 0 then return end
  local at = tonumber(first[2])
  if not may_release or at > now() then return opens_at(at) end
  local ids = redis.call('ZRANGE', RATE_PARKED_KEY, '-inf', now(), 'BYSCORE', 'LIMIT', 0, RELEASE_AT_ONCE)
  redis.call('ZREM', RATE_PARKED_KEY, unpack(ids))
  rate_parked_written = true
  for _, id in ipairs(ids) do
    -- Slots this call's acknowledgements vacated count as free: no later
    -- acknowledgement will send these jobs back for them.
    for _, queue in ipairs(release(id, nil, nil, vacated[id])) do wrote(queue) end
  end
  local following = redis.call('ZRANGE', RATE_PARKED_KEY, 0, 0, 'WITHSCORES')
  if #following > 0 then
    redis.call('SET', RATE_DUE_KEY, following[2])
    opens_at(tonumber(following[2]))
  else
    redis.call('DEL', RATE_DUE_KEY)
  end
end

-- Pushes the held jobs this fetch did not take to the front of their
-- queues, as release would have: the last held goes first.
local function push_held()
  for name, jobs in pairs(held) do
    if #jobs > 0 then
      local queue = queue_key(name)
      for _, job in ipairs(jobs) do redis.call('RPUSH', queue, job) end
      wrote(queue)
    end
    held[name] = nil
  end
end

local function done(reply)
  push_held()
  -- Held jobs are in lists now: their limits may leave the parked set,
  -- unless this call parked more of theirs.
  if emptied then
    for id in pairs(emptied) do
      if not parked[id] then redis.call('SREM', PARKED_KEY, id) end
    end
  end
  for id, n in pairs(vacated) do
    if n > 0 then unbook_job_limit(uuid, id, n) end
  end
  -- A run's limits leave the capsule's set with its last slot of them: a
  -- run that passes one still holds that slot (src/capsule/hand_over/).
  -- Others its beats drop (reconcile.lua).
  for _, limit in ipairs(ended or NONE) do
    if not redis.call('LPOS', job_busy_key(limit.id), uuid) then
      redis.call('SREM', capsule_limits_key(uuid), limit.id)
    end
  end
  for name, n in pairs(freed) do
    if n > 0 then
      local busy = busy_key(name)
      redis.call('LREM', busy, n, uuid)
      wrote(busy)
    end
  end
  if rate_parked_written then
    wrote(RATE_PARKED_KEY)
    wrote(RATE_DUE_KEY)
  end
  -- The last writes: until the reply carries their payloads, discarded jobs
  -- stay where a refused write (the ACL changed under a running process)
  -- leaves them to be fetched again.
  if discarded_from ~= NONE then
    for _, at in ipairs(discarded_from) do redis.call('LREM', at[1], 1, at[2]) end
  end
  if watch and #written > 0 then redis.call('EXISTS', unpack(written)) end
  return reply
end

-- The reply without a job: nil when there is nothing to say (and nothing
-- was written: a reply says the script wrote, see script/fetch.rs).
local function none(more)
  if opens then return done({false, false, more, discarded, false, false, opens_in()}) end
  if more == 0 and discarded == NONE and aside == 0 and not rate_parked_written then return done(nil) end
  return done({false, false, more, discarded})
end

-- Whether the capsule may take one more job of the queue, whose busy list is
-- `busy` (the slots it freed above count as free): not paused, and under
-- its limits and its rate. One MGET reads the limits, the pause and the
-- rate: a queue with none costs one call, as the limit's GET alone did
-- before pauses.
local function eligible(name, busy)
  local state = redis.call('MGET', limit_key(name), process_limit_key(name), paused_key(name), rate_key(name))
  seen, seen_rate = state, nil
  if state[3] then return false end
  local own_freed = freed[name] or 0
  local limit = parse_limit(state[1])
  if limit and redis.call('LLEN', busy) - own_freed >= limit then return false end
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

-- Whether job limit `limit` is at its rate; if so, notes when it opens.
local function at_rate(limit)
  local rate = job_rate(limit)
  if not rate then return false end
  local room, at = rate_room(job_starts_key(limit.id), rate)
  if room > 0 then return false end
  if rate_full == NONE then rate_full = {} end
  rate_full[limit.id] = at or 0
  return true
end

-- Whether job limit `limit` is at its concurrency (the slots the capsule
-- vacated above count as free). One without (a rate alone) never is.
local function at_concurrency(limit)
  local concurrency = job_limit(limit)
  return concurrency < MAX_LIMIT and
    redis.call('LLEN', job_busy_key(limit.id)) - (vacated[limit.id] or 0) >= concurrency
end

-- The first of a job's limits that is at its limit or its rate, if any.
local function at_limit(limits)
  for _, limit in ipairs(limits) do
    local id = limit.id
    if full[id] or at_concurrency(limit) or at_rate(limit) then
      if full == NONE then full = {} end
      full[id] = true
      return limit
    end
  end
end

-- Books a slot of each of a job's limits for the capsule: one it vacated
-- above if any (its entry stays), else a new entry; and a start of each
-- one's rate. The job, in the capsule's in-progress list, says whose
-- entries they are if the capsule dies (reap.lua).
local function book(limits)
  for _, limit in ipairs(limits) do
    local id = limit.id
    if (vacated[id] or 0) > 0 then
      vacated[id] = vacated[id] - 1
    else
      redis.call('RPUSH', job_busy_key(id), uuid)
    end
    local rate = job_rate(limit)
    if rate and book_start(id, rate, uuid) then opens_at(now()) end
  end
end

-- Books the capsule a slot of queue `name`, whose busy list is `busy`, and
-- a start of its rate (read by the eligible that let it).
local function book_queue(name, busy)
  if seen_rate then record_start(starts_key(name), seen_rate, uuid) end
  if (freed[name] or 0) > 0 then
    -- Takes again a slot it freed: its busy entry stays, and so does the
    -- queue in the capsule's set (its job was there).
    freed[name] = freed[name] - 1
  else
    redis.call('RPUSH', busy, uuid)
    wrote(busy)
    redis.call('SADD', capsule_queues_key(uuid), name)
  end
end

-- The reply for job `job` taken from queue `name`, the i-th argument.
local function taken(name, job, i)
  local state = seen
  local more, queued = 0, false
  if report then more, queued = more_from(i) end
  return done({name, job, more, discarded, (state[2] or state[4]) and 1 or false, queued, opens_in(),
    took_held and 1 or false})
end

-- A queue's key, written by this fetch: the doorbell's reads of it end.
local function moved_from(name, queue)
  if watch and not moved[name] then
    moved[name] = true
    wrote(queue)
  end
end

-- The job at the front of queue `name`, moved into the capsule's
-- in-progress list `inprogress`: the last job held for it, else its queue's
-- own (whose key is then written).
local function take(name, queue, inprogress)
  local waiting = held[name]
  if waiting and #waiting > 0 then
    local job = table.remove(waiting)
    redis.call('LPUSH', inprogress, job)
    took_held = true
    return job
  end
  local job = redis.call('LMOVE', queue, inprogress, 'RIGHT', 'LEFT')
  if job then moved_from(name, queue) end
  return job
end

-- Notes that job limit `id` parked a job, and if at its rate, when the
-- window opens for it.
local function parks(id)
  if not parked[id] then
    if parked == NONE then parked = {} end
    parked[id] = true
    redis.call('SADD', PARKED_KEY, id)
    local at = rate_full[id]
    if at then
      rate_parks(id, at ~= 0 and at or nil)
      opens_at(at ~= 0 and at or nil)
    end
  end
end

-- Counts and reports a job dropped at its full `limit`: the reply carries
-- its payload, the only copy left, to the process that fetched it.
local function discard(job, limit)
  local parsed = parse(job) or {}
  local class = tostring(parsed.wrapped or parsed.class or '?')
  redis.call('HINCRBY', DISCARDED_KEY, class, 1)
  if discarded == NONE then discarded = {} end
  discarded[#discarded + 1] = {job, limit.id}
end

-- Moves the job just taken (first in `inprogress`) aside, for `limit`. Its
-- bookkeeping first: a write refused after it (the ACL changed under a
-- running process) leaves a spurious entry, never a job where nothing looks.
-- A discarded job leaves `inprogress` last of all (done): its payload is
-- nowhere else until the reply.
local function set_aside(job, inprogress, limit)
  if limit.discard then
    discard(job, limit)
    if discarded_from == NONE then discarded_from = {} end
    discarded_from[#discarded_from + 1] = {inprogress, job}
  else
    parks(limit.id)
    redis.call('LMOVE', inprogress, parked_key(limit.id), 'LEFT', 'LEFT')
  end
  aside = aside + 1
end

-- Parks at once the jobs at the front of queue `name` that a full limit
-- parks (a hot key's backlog), up to `batch` of them and the lookahead:
-- one LRANGE, one LTRIM and one LPUSH per limit, where taking and setting
-- aside each costs two moves. Stops at the first job it would not park
-- (under its limits, or discarded at its limit), which the caller takes.
-- Returns whether it parked the whole batch.
local function park_front(name, queue, batch)
  local room = math.min(batch, lookahead - aside)
  local front = redis.call('LRANGE', queue, -room, -1)
  local by_id, ids, n = {}, {}, 0
  for i = #front, 1, -1 do
    local limits = job_limits(front[i])
    local limit = limits and at_limit(limits)
    if not limit or limit.discard then break end
    local jobs = by_id[limit.id]
    if not jobs then
      jobs = {}
      by_id[limit.id] = jobs
      ids[#ids + 1] = limit.id
    end
    jobs[#jobs + 1] = front[i]
    n = n + 1
  end
  if n == 0 then return false end
  -- Out of the queue, then into the parked lists: noted parked first, and a
  -- user denied the push stops before the trim (see may_send).
  for _, id in ipairs(ids) do
    parks(id)
    may_send('LPUSH', parked_key(id), 'job')
  end
  redis.call('LTRIM', queue, 0, -n - 1)
  moved_from(name, queue)
  for _, id in ipairs(ids) do redis.call('LPUSH', parked_key(id), unpack(by_id[id])) end
  aside = aside + n
  return n == room
end

-- Counts the slots of the job limits `job` carries as vacated by its end,
-- and holds for each the oldest parked job it has room for.
local function vacate(job)
  for _, limit in ipairs(job_limits(job) or NONE) do
    local id = limit.id
    vacated[id] = (vacated[id] or 0) + 1
    release(id, 1, held, vacated[id], limit)
  end
end

-- Takes back out of the capsule's in-progress list of queue `name` the
-- job a hand-over moved there; false if it is no longer there: a reaper
-- took the capsule for dead since the hand-over, pushed the job back and
-- freed the slot the hand-over passed, which is then not freed here again.
local function unmove(name, job)
  if redis.call('LREM', in_progress_key(uuid, name), 1, job) == 1 then return true end
  if (freed[name] or 0) > 0 then freed[name] = freed[name] - 1 end
  return false
end

-- Decides the job a hand-over moved from queue `name` into the capsule's
-- in-progress list without the checks a fetch makes: the queue's state
-- changed under it, or the job carries job limits. Taken as a fetch would
-- take it (the reply), else sent back to the front of its queue, or set
-- aside at its full job limit (see unmove for a job no longer there). `at`:
-- the queue's place among the arguments, if it is one of this fetch's (for
-- `more`).
local function adopt(name, job, at)
  if not unmove(name, job) then return nil end
  local inprogress = in_progress_key(uuid, name)
  local busy = busy_key(name)
  if not eligible(name, busy) then
    push_back(name, job)
    wrote(queue_key(name))
    return nil
  end
  local limits = job_limits(job)
  local limit = limits and at_limit(limits)
  if limit then
    if limit.discard then
      discard(job, limit)
    else
      redis.call('LPUSH', parked_key(limit.id), job)
      parks(limit.id)
    end
    aside = aside + 1
    return nil
  end
  redis.call('LPUSH', inprogress, job)
  if limits then book(limits) end
  book_queue(name, busy)
  return taken(name, job, at)
end

return function(KEYS, ARGV)
  argv, uuid = ARGV, ARGV[1]
  local mode = ARGV[2]
  watch = mode == '1'
  report = watch or mode == '2'
  lookahead = tonumber(ARGV[3])
  local acks = tonumber(ARGV[4])
  local handed = ARGV[5]
  local first_ack = 10
  local first_queue = first_ack + 3 * acks
  written = watch and {} or NONE
  moved = watch and {} or NONE
  full, parked, discarded, aside, rate_full, opens = NONE, NONE, NONE, 0, NONE, nil
  discarded_from = NONE
  took_held, ended = false, nil

  -- Idempotent: an acknowledgement sent again (its reply was lost) finds its
  -- job gone and frees no second slot. The slots freed, per queue and per
  -- job limit, are released at the end, unless a job taken here books them
  -- again: a queue's busy list is then not written at all, and rings no
  -- fetcher sleeping on it; a job limit's slot passes from one job to the
  -- next without a write. Likewise the parked jobs the acknowledgements send
  -- back are held, by queue name, and pushed to their queues at the end,
  -- unless this fetch takes them (see release in the prelude): a hot key's
  -- next job goes from its parked list to the capsule that freed its slot.
  if acks > 0 or handed ~= '' then
    freed, vacated, held = {}, {}, {}
    local forget = acks > 0 and redis.call('EXISTS', RECOVERIES_KEY) == 1
    for i = first_ack, first_queue - 1, 3 do
      local name, job = ARGV[i], ARGV[i + 1]
      if redis.call('LREM', in_progress_key(uuid, name), 1, job) == 1 then
        freed[name] = (freed[name] or 0) + 1
        vacate(job)
      end
      if forget then redis.call('HDEL', RECOVERIES_KEY, ARGV[i + 2]) end
    end
  else
    freed, vacated, held = NONE, NONE, NONE
  end

  -- Before any job is taken: a job parked behind its rate goes first once
  -- its window opens.
  release_opened(mode ~= 't')

  if handed ~= '' then
    -- A reaper frees the slots of a capsule whose heartbeat expired: one
    -- without its heartbeat key may have lost the slots since the hand-over
    -- passed them. Kept then (its beat, which reconciles, sets it right).
    local passed = ARGV[6] == '1' and redis.call('EXISTS', heartbeat_key(uuid)) == 1
    if passed then freed[handed] = (freed[handed] or 0) + 1 end
    local job = ARGV[7]
    if job ~= '' and ARGV[9] ~= '' then
      -- Moved from a job limit's parked jobs, the oldest: back where it
      -- was, for the releases below to send as they would have.
      if unmove(handed, job) then
        redis.call('RPUSH', parked_key(ARGV[9]), job)
        redis.call('SADD', PARKED_KEY, ARGV[9])
      end
      job = ''
    end
    if passed and ARGV[8] ~= '' then
      vacate(ARGV[8])
      ended = job_limits(ARGV[8])
    end
    if job ~= '' then
      if held[handed] and #held[handed] > 0 then
        -- Parked jobs sent back go first: the moved job goes back behind
        -- them (push_held pushes them in front of it).
        if unmove(handed, job) then
          push_back(handed, job)
          wrote(queue_key(handed))
        end
      else
        local at = #ARGV + 1
        for i = first_queue, #ARGV do
          if ARGV[i] == handed then at = i break end
        end
        local reply = adopt(handed, job, at)
        if reply then return reply end
      end
    end
  end

  if mode == 't' then
    local queued = nil
    for i = first_queue, #ARGV do
      local name = ARGV[i]
      if eligible(name, busy_key(name)) and redis.call('LLEN', queue_key(name)) > 0 then queued = 1 end
    end
    if opens then return done({queued or 0, opens_in()}) end
    return done(queued)
  end

  -- Each key built once per queue: this loop is the hot path.
  local i = first_queue <= #ARGV and first_queue or nil
  while i do
    local name = ARGV[i]
    local busy = busy_key(name)
    if eligible(name, busy) then
      local queue = queue_key(name)
      local inprogress = in_progress_key(uuid, name)
      -- Jobs set aside one after another here; from the second, the rest of
      -- a run goes in bulk, in batches that double while they fill.
      local streak, batch = 0, 4
      local job = take(name, queue, inprogress)
      while job do
        local limits = job_limits(job)
        local limit = limits and at_limit(limits)
        if not limit then
          if limits then book(limits) end
          book_queue(name, busy)
          push_held()
          return taken(name, job, i)
        end
        set_aside(job, inprogress, limit)
        streak = streak + 1
        if streak >= 2 and aside < lookahead and not (held[name] and #held[name] > 0) then
          while aside < lookahead and park_front(name, queue, batch) do batch = batch * 2 end
        end
        if aside == lookahead then return none(1) end
        job = take(name, queue, inprogress)
      end
    end
    i = after(i)
  end
  return none(0)
end
