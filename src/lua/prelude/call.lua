-- What one call keeps, reset by new_call() at its start: its caches of
-- payloads, carried limits and stored values, its rate state, the job
-- limits a release emptied for the fetch; the data format (format.lua's
-- data_format); and Redis's clock, read once a call (now).

-- What this call has learnt, so that it asks once: payloads parsed, the
-- limits they carry (by payload, and by the text of their array) and the
-- queue written after them (a hot key's job is met twice in a fetch:
-- released from parking, then taken), and job limits' stored values and
-- back-offs' ends and adaptive limits' states (false: none), by id.
local parsed_jobs, carried_limits, carried_arrays, carried_queues, stored_job_limits = {}, {}, {}, {}, {}
local back_off_ends, adaptive_states = {}, {}
-- Rates: Redis's clock, read once a call; job limits' rates by id; the
-- room left in windows, by starts key (false: full), and when each full
-- one; whether this call wrote RATE_PARKED_KEY; and, by job limit id,
-- false where its count of jobs sent back for its rate was read absent
-- (book_start then need not look; a write of it forgets that), true where
-- read or written present.
local clock, job_rates, rate_rooms, rate_opens, rate_parked_written, rate_released
-- Starts keys whose count removed the starts that left the window (their
-- room, less the starts this call recorded since, is exact), or nil: a
-- table made at the first.
local rate_pruned
-- Whether RATE_DUE_KEY and RATE_WAKE_KEY are kept in step with
-- RATE_PARKED_KEY once, as the call ends, rather than at every change, and
-- counts of jobs sent back for a rate written then too, less those that
-- started in the call (defer_rate_due); those counts by job limit id
-- ({count, period in ms}), or nil.
local rate_due_deferred, released_pending
-- In the fetch: freed slots of limits without concurrency, decided as the
-- call ends (defer_rate_due), or nil; and whether some of their values are
-- still to read, with the next limit's (job_limit).
local undecided, values_wanted
-- Job limits whose last parked jobs a release handed to the fetch (`held`,
-- see release), by id, or nil: they leave LIMITS_WITH_PARKED_KEY once those jobs are in
-- a list again (lua/fetch/reply.lua's done).
local emptied
local function new_call()
  parsed_jobs, carried_limits, carried_arrays, carried_queues, stored_job_limits = {}, {}, {}, {}, {}
  back_off_ends, adaptive_states = {}, {}
  clock, job_rates, rate_rooms, rate_opens, rate_parked_written, rate_released = nil, {}, {}, {}, false, {}
  rate_pruned, rate_due_deferred, released_pending, undecided, values_wanted = nil, false, nil, nil, false
  emptied = nil
  format_now, format_since = nil, nil
  guard_none()
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
