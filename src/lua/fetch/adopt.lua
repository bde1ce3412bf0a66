-- The job a hand-over moved and left undecided: taken back out of the
-- in-progress list (unmove), then decided as a fetch would (adopt).
-- Reads: uuid. Writes: freed, aside, and what eligible, book, book_queue,
-- parks, discard and taken write.

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
  job = fair_queued(job, name)
  local limits, limit = held_back(job, name)
  if limit then
    if limit.discard then
      discard(job, limit)
    else
      redis.call('LPUSH', parked_key(limit.id), job)
      parks(limit)
    end
    aside = aside + 1
    return nil
  end
  redis.call('LPUSH', inprogress, job)
  if limits then book(limits) end
  book_queue(name, busy)
  return taken(name, job, at)
end
