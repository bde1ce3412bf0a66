-- A rate's window in either shape, as the scripts count it: the room it
-- has left now (rate_room), a start counted in it (record_start), its
-- oldest start that counts (oldest_start); the moves between the shapes;
-- and stamps_to_set, which the command that sets format 1 runs on every
-- string.
--
-- In data format 1 (format.lua) every window is a sorted set (rates.lua).
-- In format 2, a rate of LEASE_SCARCE starts or fewer, which is never
-- leased (lua/lease.lua), keeps its window as one string beside the set
-- (stamps_of(starts)): read in the MGET that reads its limit's values or
-- its queue's state (no command of its own), written with one SET ... PX,
-- where a set costs a ZCARD, a ZADD and a PEXPIRE. A process that speaks
-- format 1 alone never reads that key, so never meets it as another type.
--
-- The string: 's', then little-endian doubles (Redis's Lua struct
-- library): when it was written and the rate's period (microseconds), then
-- the stamps of the starts that counted then, oldest first (each a start's
-- time, as a set's score). A larger rate's window in format 2 stays a set
-- (its leases name their starts), and its string holds a mark instead:
-- 'z', then until when the set may hold starts that count (a rate lowered
-- to LEASE_SCARCE or fewer then finds them there).
--
-- Moves, each in the call that finds the window, before it counts it: each
-- count is of one format, and counts every start that still counts.
-- - Format 2, a string window: the set's starts that count come into the
--   string, and the set goes, where the set may hold some: within a period
--   and LEASE_SPAN_MAX of the switch to format 2 (its latest start, a
--   lease's stamped that far ahead, counts until then), unless the string
--   was written since (they came then); or where a mark says so.
-- - Format 2, a set's window: a string's stamps come into the set, and the
--   mark replaces the string.
-- - Format 1, within a period and LEASE_SPAN_MAX of a switch from format 2
--   (a string's lifetime: its stamps are no later than the switch): a
--   string's stamps come back into the set, and the string goes.

local STRING_TAG, MARK_TAG = 's', 'z'
-- A switch's `since` counts whole milliseconds: the switch came within the
-- millisecond after it, so a write in that one may have come before it.
local SWITCH_SLACK = 1000

-- Microseconds as whole milliseconds, rounded up, 1 at least (an expiry).
local function ms(us) return math.max(1, math.ceil(us / 1000)) end

-- The string `raw` as {written =, period =, stamps =}, a mark as {mark =},
-- or nil (absent, or of no shape this version writes).
local function unpack_string(raw)
  if not raw then return nil end
  local tag = string.sub(raw, 1, 1)
  if tag == MARK_TAG and #raw == 9 then return {mark = (struct.unpack('<d', raw, 2))} end
  if tag ~= STRING_TAG or #raw < 17 or (#raw - 17) % 8 ~= 0 then return nil end
  local written, period = struct.unpack('<dd', raw, 2)
  local stamps = {}
  for at = 18, #raw, 8 do stamps[#stamps + 1] = (struct.unpack('<d', raw, at)) end
  return {written = written, period = period, stamps = stamps}
end

-- Notes the value `raw` of the string `key` that an MGET of this call read.
local function note_string(key, raw)
  rate_strings = rate_strings or {}
  rate_strings[key] = raw
end

-- MGET of `keys`, and of FORMAT_KEY after them where this call has not
-- read it (format.lua then asks no GET); the value of a window's string
-- at `string_at` in `keys`, if given, noted for the call.
local function read_with_format(keys, string_at)
  local n = #keys
  local unknown = not format_now
  if unknown then keys[n + 1] = FORMAT_KEY end
  local values = redis.call('MGET', unpack(keys))
  if unknown then format_read(values[n + 1]) end
  if string_at then note_string(keys[string_at], values[string_at]) end
  return values
end

-- The string of the window `starts`, unpacked: as an MGET of this call
-- read it, else with a GET.
local function read_string(starts)
  local key = stamps_of(starts)
  local raw = rate_strings and rate_strings[key]
  if raw == nil then raw = redis.call('GET', key) end
  return unpack_string(raw)
end

-- Those of `stamps` that count now in a window of `period`.
local function counting(stamps, period)
  local from, kept = now() - period, {}
  for _, stamp in ipairs(stamps) do
    if stamp > from then kept[#kept + 1] = stamp end
  end
  return kept
end

-- Writes the string window of `starts`: `stamps` (oldest first) of a
-- `period`. Like a set, it expires a period past its latest stamp, and
-- LEASE_SPAN_MAX (a lease's start moved in may be stamped ahead of now).
local function write_string(starts, period, stamps)
  local t = now()
  local packed = #stamps > 0 and struct.pack('<' .. string.rep('d', #stamps), unpack(stamps)) or ''
  local latest = math.max(stamps[#stamps] or t, t)
  redis.call('SET', stamps_of(starts), STRING_TAG .. struct.pack('<dd', t, period) .. packed,
    'PX', ms(latest - t + period + LEASE_SPAN_MAX))
end

-- Adds `stamps` (oldest first) to the set `starts`, as members of their
-- own (a string keeps no capsule's name), and has the set live a period
-- past the latest, and LEASE_SPAN_MAX, at least.
local function add_to_set(starts, stamps, period)
  if #stamps == 0 then return end
  local args = {}
  for i, stamp in ipairs(stamps) do
    local text = string.format('%.0f', stamp)
    args[#args + 1] = text
    args[#args + 1] = 'moved#' .. i .. ':' .. text
  end
  redis.call('ZADD', starts, unpack(args))
  local t = now()
  local keep = ms(math.max(stamps[#stamps], t) - t + period + LEASE_SPAN_MAX)
  -- A set that had no expiry (new) reads -1.
  if redis.call('PTTL', starts) < keep then redis.call('PEXPIRE', starts, keep) end
end

-- The string window `starts` (a rate's of format 1), its stamps moved into
-- the set beside it, of a `period` (as its string says, where nil); the
-- string goes. Returns how many stamps moved (those that counted).
local function string_to_set(starts, period, held)
  held = held or read_string(starts)
  if not held then return 0 end
  local moved = held.stamps and counting(held.stamps, period or held.period) or NONE
  add_to_set(starts, moved, period or held.period)
  redis.call('DEL', stamps_of(starts))
  return #moved
end

-- The `format 1` command's conversion (run for each key its SCAN finds,
-- after it set format 1): the string window `key` (src/keys.rs's stamps or
-- job_stamps) back into the sorted set beside it, which a process that
-- speaks format 1 alone counts; a mark just goes. Returns how many starts
-- moved (those that still counted).
local function stamps_to_set(key)
  return string_to_set(starts_of(key), nil)
end

-- The stamps that count now in the string window `starts` of `rate`
-- (format 2), oldest first, read once a call: the string's, and the set's
-- where it may hold some (they move in, and the set goes).
local function string_window(starts, rate)
  local known = windows and windows[starts]
  if known and known.stamps then return known.stamps end
  local t, period = now(), rate[2]
  local held = read_string(starts)
  local _, since = data_format()
  local from_set
  if held and held.mark then
    from_set = held.mark > t
  else
    local written_since = held and held.written >= since + SWITCH_SLACK
    from_set = not written_since and t < since + SWITCH_SLACK + period + LEASE_SPAN_MAX
  end
  local stamps = held and held.stamps and counting(held.stamps, period) or {}
  if from_set then
    local found = redis.call('ZRANGE', starts, '(' .. string.format('%.0f', t - period), '+inf', 'BYSCORE',
      'WITHSCORES')
    for i = 2, #found, 2 do stamps[#stamps + 1] = tonumber(found[i]) end
    table.sort(stamps)
    -- Written at once: the set goes, and a call that records no start
    -- must not lose them; the string then says they came (a mark goes).
    if #found > 0 or held then write_string(starts, period, stamps) end
    if #found > 0 then redis.call('DEL', starts) end
  end
  windows = windows or {}
  windows[starts] = {stamps = stamps}
  return stamps
end

-- Format 2, a set's window: has its string say until when the set may
-- hold starts that count, `rate`'s period and LEASE_SPAN_MAX from now at
-- least (a lease's starts are stamped ahead); renewed for twice that, so
-- once in a period or less often.
local function mark_set(starts, rate, known)
  local t, keep = now(), rate[2] + LEASE_SPAN_MAX
  if known.mark >= t + keep then return end
  known.mark = t + 2 * keep
  redis.call('SET', stamps_of(starts), MARK_TAG .. struct.pack('<d', known.mark), 'PX', ms(2 * keep))
end

-- Format 2, a set's window: once a call, a string's stamps moved into the
-- set, and the mark written in its place. Returns what the call knows of
-- its mark.
local function set_window(starts, rate)
  local known = windows and windows[starts]
  if known then return known end
  local held = read_string(starts)
  known = {mark = held and held.mark or 0}
  windows = windows or {}
  windows[starts] = known
  if held and held.stamps then
    add_to_set(starts, counting(held.stamps, rate[2]), rate[2])
    mark_set(starts, rate, known)
  end
  return known
end

-- Whether the window `starts` of `rate` is a string in this call; moves
-- what its other shape holds first (once a call).
local function string_shaped(starts, rate)
  local format, since = data_format()
  if format == 2 then
    if rate[1] <= LEASE_SCARCE then return true end
    set_window(starts, rate)
  elseif since > 0 and not (windows and windows[starts]) and now() < since + SWITCH_SLACK + rate[2] + LEASE_SPAN_MAX
  then
    windows = windows or {}
    windows[starts] = {}
    string_to_set(starts, rate[2])
  end
  return false
end

-- After starts added to the set `starts` of `rate` in format 2 (a start,
-- a lease's): its mark covers them.
local function set_written(starts, rate)
  if data_format() == 2 then mark_set(starts, rate, set_window(starts, rate)) end
end

-- How many more starts the window `starts` of `rate` ({limit, period})
-- allows now; at 0, also when it next will (microseconds, Redis's clock),
-- or nil if never (a limit of 0). A window is strict: a start at t counts
-- until t + period. A set counts as set_room says (`exact`: the room
-- itself, not only whether there is any); a string always exactly.
local function rate_room(starts, rate, exact)
  if rate[1] == 0 then
    rate_rooms[starts] = false
    return 0, nil
  end
  if not string_shaped(starts, rate) then return set_room(starts, rate, exact) end
  local stamps = string_window(starts, rate)
  local n, limit = #stamps, rate[1]
  rate_rooms[starts] = math.max(0, limit - n)
  if n < limit then return limit - n end
  -- The start `limit` places before the newest leaves the window then.
  return 0, stamps[n - limit + 1] + rate[2]
end

-- Counts a start now in the window `starts` of `rate` (`who`: the capsule,
-- a set's member's prefix), which expires a period past its latest start:
-- an idle rate leaves nothing in Redis.
local function record_start(starts, rate, who)
  if not string_shaped(starts, rate) then
    set_record(starts, rate, who)
    return set_written(starts, rate)
  end
  local stamps, t = string_window(starts, rate), now()
  -- In order: a lease's start moved in may be stamped ahead of now.
  local i = #stamps
  while i > 0 and stamps[i] > t do
    stamps[i + 1] = stamps[i]
    i = i - 1
  end
  stamps[i + 1] = t
  write_string(starts, rate[2], stamps)
  rate_rooms[starts] = math.max(0, rate[1] - #stamps)
end

-- The oldest start that counts in the window `starts` of `rate` (after
-- rate_room's exact count in this call), or nil if none.
local function oldest_start(starts, rate)
  if string_shaped(starts, rate) then return string_window(starts, rate)[1] end
  local oldest = redis.call('ZRANGE', starts, 0, 0, 'WITHSCORES')[2]
  return oldest and tonumber(oldest)
end
