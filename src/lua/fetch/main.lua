-- The function Redis calls at every fetch (its arguments and reply: see
-- state.lua's head). It sets the call's state, takes the acknowledgements,
-- releases what a rate lets go, decides a hand-over's job, then arms the
-- doorbell (MODE_ARM) or looks at the queues in order.

return function(KEYS, ARGV)
  argv, uuid = ARGV, ARGV[1]
  local mode = ARGV[2]
  watch = mode == MODE_WATCH
  report = watch or mode == MODE_REPORT
  lookahead = tonumber(ARGV[3])
  local acks = tonumber(ARGV[4])
  local handed = ARGV[5]
  local first_ack = 11
  local first_queue = first_ack + 3 * acks
  written = watch and {} or NONE
  moved = watch and {} or NONE
  full, parked_into, discarded, aside, rate_full, opens = NONE, NONE, NONE, 0, NONE, nil
  discarded_from, fair_freed = NONE, NONE
  took_held, ended, classes_back_off, held_in, rates_held_back = false, nil, false, nil, false
  -- A fetch may park and send back many limits: RATE_DUE_KEY and
  -- RATE_WAKE_KEY are written once, as it ends (done).
  defer_rate_due(true)

  -- One MGET: the first queue's state, when parked rates are due, whether
  -- a reap counted recoveries (queues.lua).
  local due, recovered = read_ahead(mode == MODE_ARM, acks, first_queue)

  acknowledge(acks, handed, first_ack, first_queue - 1, recovered)

  -- Before any job is taken: a job parked behind its rate goes first once
  -- its window opens.
  release_opened(mode ~= MODE_ARM, first_queue, due)

  if handed ~= '' then
    local reply = decide_handed(handed, first_queue)
    if reply then return reply end
  end
  if mode == MODE_ARM then return arm(first_queue) end

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
