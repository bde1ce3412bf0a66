-- The data format in force (FORMAT_KEY, src/keys.rs's FORMAT): which shape
-- the data that has two take in this call (a rate's window: rate_shapes.lua).
-- Read at most once a call: from the value an MGET of the call read with
-- other keys (format_raw: the fetch's first read), else with a GET.

-- The format (1 or 2) and since when (microseconds of Redis's clock, as
-- now() counts), from FORMAT_KEY's "<format>:<since_ms>[:pinned]". Absent,
-- or not of that form: format 1 since forever (1, 0).
local function data_format()
  if not format_read then
    local raw = format_raw
    if raw == nil then raw = redis.call('GET', FORMAT_KEY) end
    local format, since = string.match(raw or '', '^(%d+):(%d+)')
    format, since = tonumber(format), tonumber(since)
    if format == 2 then format_read = {2, since * 1000} else format_read = {1, (since or 0) * 1000} end
  end
  return format_read[1], format_read[2]
end
