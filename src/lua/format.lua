-- Sets the data format in force (FORMAT_KEY: "<format>:<since_ms>", with
-- ":pinned" after while `sidekiq-limits format 1` holds it; see
-- src/keys.rs and src/format.rs), and converts format 2's data back to
-- format 1 once that command pinned it. Each call is one atomic step; its
-- since is Redis's clock as it runs.
--
-- ARGV[1]  what to do (the codes are named in prelude/codes.lua):
--          FORMAT_CENSUS  ARGV[2], the format the census found (1 or 2):
--                         in force from now, unless pinned or in force
--                         already. Format 2 only if every live capsule
--                         (its heartbeat key present) of the registered
--                         ones speaks it (FORMATS_KEY), checked again here:
--                         one of an older release, or v5's, may have
--                         registered since the census read;
--          FORMAT_PIN     format 1, pinned (the census leaves it be): from
--                         now, or since when it was in force already;
--          FORMAT_AUTO    unpinned: the census decides again;
--          FORMAT_CONVERT ARGV[2], a kind of format-2 data (its place in
--                         TO_FORMAT_1), ARGV[3], a SCAN cursor: one SCAN
--                         step over the kind's keys, each converted back to
--                         format 1; nothing unless format 1 is pinned.
-- Returns {{format, since_ms, 1 if pinned else 0}, how many kinds
-- TO_FORMAT_1 names, {the same three before}}; FORMAT_CONVERT, {next
-- cursor, keys converted}.

-- Format 2's data converted back to format 1, kind by kind: what `format 1`
-- runs after pinning it (src/admin/format.rs walks each kind's keys, a
-- SCAN step a call), so that a process of an older release, which reads
-- format 1 alone, finds every datum. Each kind: `pattern`, the SCAN
-- pattern of its format-2 keys, and `to_format_1`, a function of one such
-- key that moves what counts into the kind's format-1 shape in the same
-- step, defined in the kind's own prelude file. No kind has a format-2
-- shape yet: the rate window's conversion goes here.
local TO_FORMAT_1 = {}

-- The most keys one SCAN step of FORMAT_CONVERT asks for.
local CONVERT_STEP = 100

-- Whether every registered capsule whose heartbeat key exists speaks
-- format 2: a capsule that says nothing in FORMATS_KEY is of an older
-- release, or v5's, and reads format 1 alone.
local function all_speak_2()
  local spoken = {}
  local flat = redis.call('HGETALL', FORMATS_KEY)
  for i = 1, #flat, 2 do spoken[flat[i]] = tonumber(flat[i + 1]) end
  for _, uuid in ipairs(redis.call('SUNION', CAPSULES_KEY, REGISTERED_KEY)) do
    if (spoken[uuid] or 1) < 2 and redis.call('EXISTS', heartbeat_key(uuid)) == 1 then return false end
  end
  return true
end

local function set_format(format, since_us, pinned)
  local value = format .. ':' .. math.floor(since_us / 1000)
  if pinned then value = value .. ':pinned' end
  redis.call('SET', FORMAT_KEY, value)
end

return function(KEYS, ARGV)
  local mode = ARGV[1]
  if mode == FORMAT_CONVERT then
    local kind = TO_FORMAT_1[tonumber(ARGV[2])]
    if not kind then return redis.error_reply('no kind of format-2 data numbered ' .. tostring(ARGV[2])) end
    local format, _, pinned = parse_format(redis.call('GET', FORMAT_KEY))
    if format ~= 1 or not pinned then return {'0', 0} end
    local step = redis.call('SCAN', ARGV[3], 'MATCH', kind.pattern, 'COUNT', CONVERT_STEP)
    for _, key in ipairs(step[2]) do kind.to_format_1(key) end
    return {step[1], #step[2]}
  end
  local format, since, pinned = parse_format(redis.call('GET', FORMAT_KEY))
  local was = {format, math.floor(since / 1000), pinned and 1 or 0}
  if mode == FORMAT_CENSUS then
    local target = tonumber(ARGV[2])
    if not pinned and target ~= format and (target == 1 or (target == 2 and all_speak_2())) then
      format, since = target, now()
      set_format(format, since, false)
    end
  elseif mode == FORMAT_PIN then
    if format ~= 1 then format, since = 1, now() end
    pinned = true
    set_format(format, since, true)
  elseif mode == FORMAT_AUTO then
    if pinned then
      pinned = false
      set_format(format, since, false)
    end
  else
    return redis.error_reply('format: unknown mode ' .. tostring(mode))
  end
  return {{format, math.floor(since / 1000), pinned and 1 or 0}, #TO_FORMAT_1, was}
end
