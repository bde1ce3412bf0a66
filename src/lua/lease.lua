-- Leases starts of a job limit's rate to one fetching thread: counts its
-- window (rate_room) and stamps up to ARGV[4] starts in it at once, each at
-- g + span (g: Redis's clock now), so that the thread hands over that many
-- of the limit's jobs without a script (src/capsule/hand_over/lease.rs);
-- and takes back the starts of its last lease it did not spend.
--
-- ARGV[1]  the job limit's id
-- ARGV[2]  its declared rate's limit, as its jobs carry it (starts)
-- ARGV[3]  its declared rate's period, as its jobs carry it (seconds)
-- ARGV[4]  how many starts are asked (k >= 1; 0: only give back)
-- ARGV[5]  the capsule (its uuid: the members' prefix)
-- ARGV[6]  optional: the stamp of the thread's last lease, whose starts
-- ARGV[7]  from this one (its members' numbers, 1 first)
-- ARGV[8]  to this one, it did not spend and will not: they go, and if
--          the limit has jobs parked behind its rate, they are due now
-- Returns {granted, span, stamp, hold}: the starts granted (0..k), each
-- counted in the window from now on, the lease's span (microseconds,
-- lease_span: as long as `granted` starts take to spend), their stamp (a
-- member is <capsule>#<n>:<stamp>), and how long the thread asks no lease
-- of this limit again (microseconds; 0: it may), as the window is near its
-- limit (below).
--
-- Near its limit once k are counted (lease_scarce: past half, or within
-- LEASE_SCARCE starts), a window is the script's: a grant there is of one
-- start (the job moved in this very pipeline), or none, and the thread
-- leaves the limit's jobs to the script for a period (LEASE_HOLD_MAX at
-- most), as it does while jobs wait, sent back for the rate.
--
-- Why exact: a start is stamped no earlier than it happens (the thread
-- spends its lease only within the span of its request's sending, which
-- precedes g, and only on a job moved after this call in the same
-- pipeline). A window counts every stamp after now - period, future ones
-- included (rate_room never prunes them). For any window of the period,
-- take the last grant (or start a script counted) whose starts fall in it:
-- every earlier one's starts in the window have stamps at or after them,
-- so after its start - period, so after its time - period, and were
-- counted when it was granted; and it granted only the room left then.
-- So no window holds more than the limit. A start given back never
-- happened: the count loses nothing that started. A stored rate changed
-- during a lease binds from the next grant: a span later at most.
local LEASE_HOLD_MAX = 10000000

return function(KEYS, ARGV)
  local id, asked, who = ARGV[1], tonumber(ARGV[4]), ARGV[5]
  local starts = job_starts_key(id)
  if ARGV[6] then
    local back = {}
    for i = tonumber(ARGV[7]), tonumber(ARGV[8]) do back[#back + 1] = who .. '#' .. i .. ':' .. ARGV[6] end
    -- Jobs parked behind the rate wait for the room just given back: due
    -- now, if parked (XX) for later (LT), as rate_parks notes them.
    if #back > 0 and redis.call('ZREM', starts, unpack(back)) > 0
      and redis.call('ZADD', RATE_PARKED_KEY, 'XX', 'LT', 'CH', now(), id) > 0 then
      rate_parked_written = true
      sync_rate_due()
    end
  end
  if not asked or asked < 1 then return {0, 0, '', 0} end
  local rate = parse_rate(redis.call('GET', job_rate_key(id)))
    or declared_rate({tonumber(ARGV[2]), tonumber(ARGV[3])})
  local hold = math.min(rate[2], LEASE_HOLD_MAX)
  -- Jobs sent back for the rate wait at the front of their queues for a
  -- script, which counts their starts (book_start): none is leased.
  if redis.call('EXISTS', job_released_key(id)) == 1 then return {0, 0, '', hold} end
  local room = rate_room(starts, rate)
  local granted = asked
  if lease_scarce(room, rate, asked) then
    granted = math.min(1, room)
  else
    hold = 0
  end
  if granted < 1 then return {0, 0, '', hold} end
  local span = lease_span(rate, granted)
  local stamp = string.format('%.0f', now() + span)
  local args = {}
  for i = 1, granted do
    args[#args + 1] = stamp
    -- Unique: `who` names the thread, which asks once a round trip. Were
    -- one there, its ZADD would not count it: only those added are granted.
    args[#args + 1] = who .. '#' .. i .. ':' .. stamp
  end
  granted = redis.call('ZADD', starts, unpack(args))
  redis.call('PEXPIRE', starts, math.ceil((rate[2] + LEASE_SPAN_MAX) / 1000))
  return {granted, span, stamp, hold}
end
