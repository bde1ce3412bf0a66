-- The function Redis calls at every fetch (its arguments and reply: see
-- state.lua's head). It sets the call's state, takes the acknowledgements,
-- releases what a rate lets go, decides a hand-over's job, then arms the
-- doorbell (mode 't') or looks at the queues in order.

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
  took_held, ended, classes_back_off = false, nil, false

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
        local limits, limit = held_back(job, name)
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
