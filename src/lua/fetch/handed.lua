-- What a hand-over left to decide (ARGV[5..10], see state.lua's head): the
-- slot it passed counted as freed, a job it moved from a job limit's parked
-- jobs put back, the acknowledged job's run ended (or, after a keyed
-- hand-over, the slots it booked counted as freed and those it freed sent
-- their parked jobs), and the job it moved decided (adopt).
-- Reads: argv, uuid, held, freed_limits. Writes: freed, ended, written
-- (wrote), and what free_limits, release, job_limits and adopt write.

-- After a keyed hand-over's second round trip (ARGV[10]): the slots it
-- freed of the acknowledged job `acked`'s limits send their parked jobs
-- (it removed their entries itself); then those it booked for the moved
-- job `job` count as freed, as an acknowledgement's do (free_limits),
-- unless `alive` is false (see decide_handed). In that order: each release
-- holds at most one job, by the room it reads, which counts the slots freed
-- so far but not the jobs held since. The acknowledged job's go first,
-- while the booked slots are not counted yet: together they hold no more
-- jobs than there are slots free.
local function keyed_slots(job, acked, alive)
  if acked ~= '' then
    for _, limit in ipairs(job_limits(acked) or NONE) do
      release(limit.id, 1, held, freed_limits[limit.id], limit)
    end
  end
  if alive and job ~= '' then free_limits(job) end
end

-- Decides the hand-over from queue `name` (ARGV[5]); `first_queue`: where
-- the queue names start among the arguments. Returns the reply when it
-- takes the job, else nil.
local function decide_handed(name, first_queue)
  -- A reaper frees the slots of a capsule whose heartbeat expired: one
  -- without its heartbeat key may have lost the slots since the hand-over
  -- passed them. Kept then (its beat, which reconciles, sets it right).
  local keyed = argv[10] == YES
  local job = argv[7]
  local alive = (argv[6] == YES or (keyed and job ~= '')) and redis.call('EXISTS', heartbeat_key(uuid)) == 1
  local passed = argv[6] == YES and alive
  if passed then freed[name] = (freed[name] or 0) + 1 end
  if job ~= '' and argv[9] ~= '' then
    -- Moved from a job limit's parked jobs, the oldest: back where it
    -- was, for the releases below to send as they would have.
    if unmove(name, job) then
      redis.call('RPUSH', parked_key(argv[9]), job)
      redis.call('SADD', LIMITS_WITH_PARKED_KEY, argv[9])
    end
    job = ''
  end
  if keyed then
    keyed_slots(job, argv[8], alive)
  elseif passed and argv[8] ~= '' then
    free_limits(argv[8])
    ended = job_limits(argv[8])
  end
  if job == '' then return nil end
  if held[name] and #held[name] > 0 then
    -- Parked jobs sent back go first: the moved job goes back behind
    -- them (push_held pushes them in front of it).
    if unmove(name, job) then
      push_back(name, job)
      wrote(queue_key(name))
    end
    return nil
  end
  local at = #argv + 1
  for i = first_queue, #argv do
    if argv[i] == name then at = i break end
  end
  return adopt(name, job, at)
end
