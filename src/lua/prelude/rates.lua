-- Rate windows: the room a window has left now (rate_room), a start
-- counted in it (record_start) and the span of a lease of starts
-- (lease_span, lua/lease.lua). Reads and writes the call's rate caches
-- (call.lua).
--
-- A window may hold stamps ahead of Redis's clock: a lease's starts are
-- stamped as of its end (lua/lease.lua). Every count below counts them
-- (only stamps at or before now - period are removed), and the set lives
-- a period past the latest (LEASE_SPAN_MAX).

-- A lease's span (microseconds): LEASE_SPAN_EACH a start granted,
-- LEASE_SPAN_LEAST at least, and a twentieth of the period, LEASE_SPAN_MAX,
-- at most. Its starts are stamped that far ahead: a window a lease fills
-- opens again that much later for them, so a span is as short as the
-- spending of its starts allows (a job a hand-over; the first in the
-- grant's own pipeline).
local LEASE_SPAN_MAX, LEASE_SPAN_EACH, LEASE_SPAN_LEAST = 50000, 3000, 5000
local function lease_span(rate, granted)
  local span = math.max(LEASE_SPAN_LEAST, granted * LEASE_SPAN_EACH)
  return math.min(LEASE_SPAN_MAX, math.floor(rate[2] / 20), span)
end

-- Whether a window of `rate` with `room` left is near its limit once `k`
-- more starts are counted: past half of it, or within LEASE_SCARCE starts.
-- Near it, a window is the script's, start by start (lua/lease.lua): a
-- lease there would be refused or short next time, and its starts,
-- stamped a span late, would hold the window shut that much longer (its
-- parked jobs then go back in more, smaller releases, each waking the
-- idle fetchers). A rate of LEASE_SCARCE starts a period or fewer is never
-- leased: few starts, little to save.
local LEASE_SCARCE = 64
local function lease_scarce(room, rate, k)
  return room - k < math.max(LEASE_SCARCE, rate[1] / 2)
end

-- How many more starts the window of `rate` ({limit, period}) whose starts
-- are the sorted set `starts` allows now; at 0, also when it next will
-- (microseconds, Redis's clock), or nil if never (a limit of 0). A window
-- is strict: a start at t counts until t + period.
--
-- The set is counted whole first: starts that left the window only make
-- the count larger, so a count under the limit leaves room (perhaps less
-- than there is), and they are removed only once the count reaches the
-- limit, which then counts again. Whether there is room is exact either
-- way, which is all a fetch asks (it starts one job). They are also
-- removed at every PRUNE_EVERY-th count: a large limit's set holds at most
-- that many more than its window held then, not the limit's count.
-- `exact`: removes them first, for the room itself (how many parked jobs a
-- release sends back).
local PRUNE_EVERY = 128
local function rate_room(starts, rate, exact)
  local room = rate_rooms[starts]
  local pruned = rate_pruned and rate_pruned[starts]
  -- A room cached from a count that removed nothing may be short of it. A
  -- room of 0 (a pruned window its recorded starts filled) needs its
  -- opening read.
  if room ~= nil and room ~= 0 and not (exact and room and not pruned) then
    if room then return room, nil end
    return 0, rate_opens[starts]
  end
  local limit, period = rate[1], rate[2]
  if limit == 0 then
    rate_rooms[starts] = false
    return 0, nil
  end
  local n = limit
  if room ~= 0 then
    n = redis.call('ZCARD', starts)
    if exact or n >= limit or (n > 0 and n % PRUNE_EVERY == 0) then
      n = n - redis.call('ZREMRANGEBYSCORE', starts, '-inf', now() - period)
      rate_pruned = rate_pruned or {}
      rate_pruned[starts] = true
    end
  end
  if n < limit then
    rate_rooms[starts] = limit - n
    return limit - n
  end
  -- The window opens when the start `limit` places before the newest
  -- leaves it.
  local opens = tonumber(redis.call('ZRANGE', starts, n - limit, n - limit, 'WITHSCORES')[2]) + period
  rate_rooms[starts], rate_opens[starts] = false, opens
  return 0, opens
end

-- Counts a start now in the window `starts` of `rate`, which expires with
-- its last start: an idle rate leaves nothing in Redis. `who`: the capsule
-- (a member is unique per capsule and time).
local function record_start(starts, rate, who)
  local t = now()
  -- Lua's own number to text keeps 14 digits; Redis's, for arguments, all.
  redis.call('ZADD', starts, t, who .. ':' .. string.format('%.0f', t))
  -- A period past the latest stamp, a lease's too.
  redis.call('PEXPIRE', starts, math.ceil((rate[2] + LEASE_SPAN_MAX) / 1000))
  local room = rate_rooms[starts]
  if room and room > 1 then
    rate_rooms[starts] = room - 1
  else
    -- A pruned window's last room taken: full, and its set holds the
    -- window alone (rate_room reads its opening).
    rate_rooms[starts] = room == 1 and rate_pruned and rate_pruned[starts] and 0 or nil
  end
end
