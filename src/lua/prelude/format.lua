-- This file: the data format in force (FORMAT_KEY, "<format>:<since_ms>",
-- with ":pinned" after while `sidekiq-limits format 1` holds it; absent:
-- format 1 since forever; see src/keys.rs and src/format.rs). A script
-- reads it in the same call that counts and writes data whose shape
-- depends on it, so that each of its steps is wholly of one format; and
-- at most once a call (new_call, call.lua, forgets it): the fetch's first
-- MGET carries the key (fetch/queues.lua's read_ahead hands its value to
-- format_read), any other script GETs it at its first data_format(), and
-- a script that touches no such data never reads it.

-- This call's format and since (microseconds of Redis's clock), or nil
-- until read.
local format_now, format_since

-- The format, since (microseconds, as now() counts) and whether it is
-- pinned, from FORMAT_KEY's value (false or nil: absent). A value that does
-- not read as one (written by hand) is format 1 since 0, which every
-- process speaks. src/format.rs's InForce::parse reads it the same way
-- (tests/format.rs holds the two to each other).
local function parse_format(value)
  local format, since, rest = string.match(value or '', '^(%d+):(%d+)(.*)$')
  format, since = tonumber(format), tonumber(since)
  if (format ~= 1 and format ~= 2) or not since or (rest ~= '' and rest ~= ':pinned') then
    return 1, 0, false
  end
  return format, since * 1000, rest == ':pinned'
end

-- FORMAT_KEY's value as a read of this call found it (the fetch's first
-- MGET): data_format() reads nothing then.
local function format_read(value)
  format_now, format_since = parse_format(value)
end

-- The data format in force (1 or 2) and since when (microseconds of
-- Redis's clock), read at most once a call.
local function data_format()
  if not format_now then format_read(redis.call('GET', FORMAT_KEY)) end
  return format_now, format_since
end
