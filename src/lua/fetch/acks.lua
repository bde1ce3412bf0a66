-- An acknowledged job's job-limit slots, freed for the jobs this call
-- takes, and the parked jobs they let go, held (free_limits); the call's
-- acknowledgements (acknowledge).
-- Reads: argv, uuid. Writes: freed, freed_limits, fair_freed, held, the
-- prelude's emptied (release).

-- Counts the slots of the job limits `job` carries as freed by its end,
-- and holds for each the oldest parked job it has room for; for a fair
-- class's job, the job of the tenant whose turn it is (fair.lua).
local function free_limits(job)
  local limits, fair = job_limits(job) or NONE, nil
  for _, limit in ipairs(limits) do
    local id = limit.id
    freed_limits[id] = (freed_limits[id] or 0) + 1
    if limit.fair then
      fair = limit
      if fair_freed == NONE then fair_freed = {} end
      fair_freed[id] = limit
    else
      release(id, 1, held, freed_limits[id], limit)
    end
  end
  if fair then fair_turn(fair, limits, held, freed_limits) end
end

-- Takes the call's acknowledgements, ARGV[first] to ARGV[last] in triples
-- (queue name, job, SHA1): sets freed, freed_limits and held for the call, or
-- NONE when there is nothing to acknowledge and no hand-over to decide.
-- `recovered`: RECOVERED_KEY as the call's first read found it (false:
-- absent), or nil if it did not read it.
--
-- A job's recovery count (RECOVERIES_KEY, by SHA1) is forgotten as it is
-- acknowledged. RECOVERED_KEY exists wherever RECOVERIES_KEY does: the
-- only writer of RECOVERIES_KEY, a reap that counts a recovery
-- (lua/reap.lua), writes RECOVERED_KEY after it in the same call, with the
-- same expiry. Without it, no count is there to forget, and no EXISTS is
-- sent (a hand-over reads it so too: src/capsule/hand_over/).
--
-- Idempotent: an acknowledgement sent again (its reply was lost) finds its
-- job gone and frees no second slot. The slots freed, per queue and per
-- job limit, are released at the end, unless a job taken here books them
-- again: a queue's busy list is then not written at all, and rings no
-- fetcher sleeping on it; a job limit's slot passes from one job to the
-- next without a write. Likewise the parked jobs the acknowledgements send
-- back are held, by queue name, and pushed to their queues at the end,
-- unless this fetch takes them (see release in the prelude): a hot key's
-- next job goes from its parked list to the capsule that freed its slot.
local function acknowledge(acks, handed, first, last, recovered)
  if acks == 0 and handed == '' then
    freed, freed_limits, held = NONE, NONE, NONE
    return
  end
  freed, freed_limits, held = {}, {}, {}
  local forget = acks > 0 and recovered ~= false and redis.call('EXISTS', RECOVERIES_KEY) == 1
  for i = first, last, 3 do
    local name, job = argv[i], argv[i + 1]
    if redis.call('LREM', in_progress_key(uuid, name), 1, job) == 1 then
      freed[name] = (freed[name] or 0) + 1
      free_limits(job)
    end
    if forget then redis.call('HDEL', RECOVERIES_KEY, argv[i + 2]) end
  end
end
