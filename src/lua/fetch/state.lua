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
-- ARGV[2]     what the capsule's doorbell needs while fetchers sleep on it
--             (the codes are named in prelude/codes.lua):
--             MODE_PLAIN   nothing;
--             MODE_REPORT  report whether another job is eligible after
--                          this one;
--             MODE_WATCH   that, and read again the keys this script
--                          writes, so that the tracking connection (which
--                          sent it after CLIENT CACHING yes) goes on
--                          tracking them;
--             MODE_ARM     take nothing: read, for each queue, the keys
--                          whether it is eligible depends on (its limits,
--                          pause and busy list), and its length if it is
--                          (arming the doorbell, after CLIENT CACHING yes).
--                          A full or paused queue's own key is not read:
--                          pushes to it change nothing until a slot, a
--                          limit or the pause does, and those keys are read
--                          (a pause's TTL running out deletes its key,
--                          which Redis reports too). Returns 1 if an
--                          eligible queue holds a job, else nil; or, when a
--                          rate holds something back, {1 or 0, opens in,
--                          opens at}.
-- ARGV[3]     how many jobs the fetch may set aside at most (>= 1)
-- ARGV[4]     n, the number of acknowledgements that follow ARGV[10]
-- ARGV[5..10] what a hand-over left to decide (see src/capsule/hand_over/),
--             else '', NO, '', '', '', NO: the name of the queue it took from;
--             YES if its acknowledgement freed a slot of that queue (which
--             counts as freed here, while the capsule's heartbeat key
--             exists), else NO; the job it moved into the capsule's
--             in-progress list unchecked, or '' (none was there); the job
--             it acknowledged if that carries job limits, whose slots count
--             as freed too (on the same terms: its run ends, and its limits
--             leave the capsule's set of run limits), else ''; the job limit id
--             whose parked jobs it moved the job from, else '' (its queue);
--             YES if it was a keyed hand-over's second round trip, else NO:
--             then each job limit of ARGV[7]'s job has a slot booked for it
--             (an entry pushed on its busy list, which counts as freed
--             here, on the terms of ARGV[6]), and ARGV[8]'s job is one whose
--             slots it freed itself (their parked jobs are left to send:
--             no run ended)
-- then n triples: queue name, job, SHA1 of the job (hex)
-- then        queue names, in Sidekiq's order for this fetch (no "queue:" prefix)
-- Returns nil if it took and set aside nothing and no rate holds anything
-- back, else {queue name or false, job or false, more, discarded, process
-- limited, queued, opens in, parked, opens at} (the last five may be missing): more is 1 if
-- another job is eligible after this one, or, with no job, if it stopped at
-- ARGV[3]; discarded lists {job, job limit id} of each job it discarded
-- (the whole payload, for the app's discard handlers); with a job, 1 if its queue has a process limit, a rate, classes that back off or an
-- adaptive limit (a hand-over is tried only without any), else false, and, when it reports (ARGV[2]
-- MODE_WATCH or MODE_REPORT), how many jobs its queue still holds (else false); opens in:
-- microseconds until a rate may let something go that it holds back now
-- (a queue's window, or jobs parked behind a job limit's), else false;
-- parked: with a job, 1 if it was a parked job this fetch sent back (its
-- limits may have more: see src/capsule/hand_over/), else false; opens at:
-- with opens in, the time itself (Redis's clock, microseconds), by which
-- the doorbell knows two looks' replies, however far apart they came, for
-- one opening (src/doorbell/).
--
-- The script is joined from this folder's files, in the order
-- src/lua/fetch/parts.rs lists them: this one, the state a call shares
-- (each other file's head says which of it its helpers read and write),
-- the helpers, and last main.lua, the function Redis calls.

-- The chunk above `return` runs once, when Redis loads the library; the
-- function it returns runs at every fetch. Helpers are defined once, here,
-- not at every call (a closure each, every call, cost Redis about a fifth of
-- a fetch), and share the call's state through these locals, which the
-- function sets first. A call that has no acknowledgement, job limit or
-- watcher allocates no table for them: it reads the prelude's NONE, which
-- raises an error if written.
local argv, uuid, watch, report, lookahead
-- The last queue state eligible read: {limit, process limit, paused,
-- rate, classes back off, range, adaptive state, fair limit}, that rate,
-- parsed, whether its limit is adaptive, and its fair limit if it is a fair
-- queue (fair_queue.lua), else nil.
local seen, seen_rate, seen_adaptive, seen_fair
-- The first queue's state as the call's first read found it (read_ahead,
-- queues.lua), and that queue's name, until eligible takes it; else nil.
local ahead, ahead_of
-- Whether the queue eligible looked at last has classes that back off
-- (held_back asks them then).
local classes_back_off = false
-- The earliest time (Redis's clock, microseconds) something a rate holds
-- back in this look may go: a queue's window opens, or parked jobs go back.
local opens
-- Job limits found at their rate, and when their window opens (0: never).
local rate_full
-- Slots freed, per queue and per job limit, and the parked jobs held for
-- their queues (see acknowledge, acks.lua); the watched keys written
-- (a write ends their tracking), the queues whose key a take wrote; job
-- limits found full, and those that parked a job; jobs set aside and
-- discarded.
local freed, freed_limits, held, written, moved, full, parked_into, aside, discarded
-- The in-progress list each job discarded by a take is still in, in order
-- (see set_aside).
local discarded_from
-- The entries of fair class tenants whose slots the acknowledgements
-- freed, by id: their scores are noted once the slots are (done).
local fair_freed
-- The job taken was held: a parked job sent back by this call.
local took_held
-- A rate of the job taken is near its limit (lease_scarce), or has jobs
-- sent back for it still to start, which a script counts: the reply
-- leaves its queue to the script (the next fetch of it on this thread
-- tries no hand-over, whose lease would be refused: src/capsule/
-- hand_over/lease.rs).
local rates_held_back
-- The held job a window let go, in the capsule's in-progress list already
-- (lua/fetch/rates.lua), or nil.
local held_in
-- The job limits of a run that ended here (the acknowledged job whose
-- slots a hand-over passed, ARGV[8]), or nil.
local ended

local function wrote(key)
  if watch then written[#written + 1] = key end
end

local function opens_at(t)
  if t and (not opens or t < opens) then opens = t end
end

-- The reply's "opens in": microseconds until `opens`, else false.
local function opens_in()
  if not opens then return false end
  return math.max(0, opens - now())
end
