-- The fetch's rates: jobs parked behind a rate whose window has opened go
-- back first (release_opened), and the doorbell's arming learns when the
-- next may (wake_at).
-- Reads: argv, uuid, freed_limits. Writes: opens, held, held_in, written
-- (wrote), the prelude's rate_parked_written.

-- Arming (no job taken): when the first parked limit may go, by
-- RATE_WAKE_KEY, the key the doorbell then tracks, rather than
-- RATE_PARKED_KEY, which every window's opening writes. A time past, which
-- may be older than the first opening now (it moves later without a
-- write), is said as it is: the doorbell rings at once, and the look it
-- wakes, whose reads are not tracked, learns the first opening. Read here,
-- the set would be tracked: the next opening would ring every sleeping
-- fetcher, whose arming would read it again, and so at every opening.
-- Without RATE_WAKE_KEY, RATE_DUE_KEY: limits parked by an older version
-- of the gem, which writes no RATE_WAKE_KEY, are found by their first
-- opening (tracked, every opening rings, as it did then), until a look
-- sets RATE_WAKE_KEY (release_opened).
local function wake_at()
  local wake = tonumber(redis.call('GET', RATE_WAKE_KEY) or redis.call('GET', RATE_DUE_KEY))
  if wake then opens_at(wake) end
end

-- The in-progress list a job of queue `name` that a window let go goes
-- into, if this fetch asks for that queue (ARGV from `first_queue`), else
-- nil; the queue is noted among the capsule's first, for a reaper or a
-- beat to find the list by (see lua/reap.lua).
local function take_first_from(name, first_queue)
  for i = first_queue, #argv do
    if argv[i] == name then
      redis.call('SADD', capsule_queues_key(uuid), name)
      return in_progress_key(uuid, name)
    end
  end
end

-- Sends back the jobs parked behind a rate whose window has opened (the
-- earliest first, at most RELEASE_AT_ONCE limits a call), and notes when
-- the next opens. `may_release`: false to only note it (arming reads,
-- takes nothing). The first job sent back of a queue this fetch asks for
-- (ARGV from `first_queue`) goes straight into the capsule's in-progress
-- list, held for this fetch (held_in): taken, it never enters its queue,
-- whose write would wake every idle fetcher for a job already taken; not
-- taken, it goes to the front of its queue as the call ends (push_held).
-- The others go to their queues at once: they wake the fetchers that take
-- them.
--
-- `due`: RATE_DUE_KEY as the call's first read found it (false: absent),
-- or nil if it did not read it. Every script that writes RATE_PARKED_KEY
-- sets it to the set's first score (sync_rate_due), in the same call:
-- where it says none is parked, or none opens yet, the set is not read (a
-- command fewer a fetch). A call that failed between its write of the set
-- and of RATE_DUE_KEY (the fetch writes it as it ends) may leave it later
-- than the set's first score, or absent: the beats' sweep sets it right
-- (lua/release.lua's check_rate_due), and sends back meanwhile the jobs of
-- the limits it visits. One found earlier than the first opening (the
-- limits it named went) is set right as this call ends.
local RELEASE_AT_ONCE = 100
local function release_opened(may_release, first_queue, due)
  if not may_release then return wake_at() end
  if due == false then return end
  local at = due and tonumber(due)
  if not at then
    local first = redis.call('ZRANGE', RATE_PARKED_KEY, 0, 0, 'WITHSCORES')
    if #first == 0 then return end
    at = tonumber(first[2])
  end
  if at > now() then return opens_at(at) end
  local ids = redis.call('ZRANGE', RATE_PARKED_KEY, '-inf', now(), 'BYSCORE', 'LIMIT', 0, RELEASE_AT_ONCE)
  if #ids == 0 then
    -- RATE_DUE_KEY said due, and none is: set right as the call ends.
    rate_parked_written = true
    local following = redis.call('ZRANGE', RATE_PARKED_KEY, 0, 0, 'WITHSCORES')
    if #following > 0 then opens_at(tonumber(following[2])) end
    return
  end
  redis.call('ZREM', RATE_PARKED_KEY, unpack(ids))
  -- RATE_DUE_KEY and RATE_WAKE_KEY follow as the call ends (done), once
  -- for these limits and any they park again in this call: a later first
  -- opening leaves RATE_WAKE_KEY as it is (see sync_rate_due), and one is
  -- written where none was (limits parked by an older version: see
  -- wake_at).
  rate_parked_written = true
  local take_first = function(name) return take_first_from(name, first_queue) end
  for _, id in ipairs(ids) do
    -- Slots this call's acknowledgements freed count as free: no later
    -- acknowledgement will send these jobs back for them.
    local queues, _, _, job = release(id, nil, nil, freed_limits[id], nil, not held_in and take_first or nil)
    for _, queue in ipairs(queues) do wrote(queue) end
    if job then
      held_in = job
      local name = job_queue(job)
      if held == NONE then held = {} end
      local waiting = held[name] or {}
      waiting[#waiting + 1] = job
      held[name] = waiting
    end
  end
  local following = redis.call('ZRANGE', RATE_PARKED_KEY, 0, 0, 'WITHSCORES')
  if #following > 0 then opens_at(tonumber(following[2])) end
end
