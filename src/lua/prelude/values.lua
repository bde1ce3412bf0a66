-- Stored and declared values read as the core and Ruby read them: a limit
-- (parse_limit, read_limit), a rate (parse_rate, declared_rate), with
-- their bounds (MAX_LIMIT, MAX_PERIOD, MIN_PERIOD), and a back-off's end
-- (parse_back_off), an adaptive limit's state (parse_adaptive) and a
-- queue's adaptive range (parse_range).

-- The largest valid limit, 2^53 - 1: a Lua number holds every integer up to
-- it exactly. No queue has that many jobs running: a larger one is broken.
local MAX_LIMIT = 9007199254740991

-- A limit that is not decimal digits (ASCII whitespace around allowed) up to
-- MAX_LIMIT reads as 0: a broken limit must never mean "unlimited". The core
-- (limits.rs) and Ruby (limits.rb) read limits the same way; the values all
-- must agree on are in spec/fixtures/limit_values.json. `raw`: the value
-- as GET (or MGET) gives it, false when the key is missing.
local function parse_limit(raw)
  if not raw then return nil end
  -- tonumber rounds digits to the nearest double: above MAX_LIMIT only if
  -- their value is.
  local limit = tonumber(string.match(raw, '^%s*(%d+)%s*$'))
  if limit and limit <= MAX_LIMIT then return limit end
  return 0
end

local function read_limit(key) return parse_limit(redis.call('GET', key)) end

-- The longest rate period, in seconds (a week), and the shortest.
local MAX_PERIOD, MIN_PERIOD = 604800, 0.1

-- A rate as {limit, period in microseconds}, from its stored text
-- "<limit>/<period in seconds>" ("100/60", "5/0.5"; ASCII whitespace
-- around each allowed), or nil when `raw` is false (no key). Anything else
-- reads as a limit of 0, no start at all: a broken rate must never mean
-- "unlimited". limits.rs and rates.rb read rates the same way
-- (spec/fixtures/rate_values.json).
local function parse_rate(raw)
  if not raw then return nil end
  local limit, period = string.match(raw, '^%s*(%d+)%s*/%s*(%d+%.?%d*)%s*$')
  limit, period = tonumber(limit), tonumber(period)
  if limit and period and limit <= MAX_LIMIT and period >= MIN_PERIOD and period <= MAX_PERIOD then
    return {limit, math.floor(period * 1000000 + 0.5)}
  end
  return {0, 1000000}
end

-- A declared rate, as a payload carries it: [limit, period in seconds].
local function declared_rate(rate)
  if type(rate) ~= 'table' then return {0, 1000000} end
  local limit, period = rate[1], rate[2]
  if type(limit) == 'number' and limit >= 0 and limit <= MAX_LIMIT and limit % 1 == 0 and
    type(period) == 'number' and period >= MIN_PERIOD and period <= MAX_PERIOD then
    return {limit, math.floor(period * 1000000 + 0.5)}
  end
  return {0, 1000000}
end

-- When a back-off ends (microseconds, Redis's clock), from its stored text
-- "<until> <class> <jid>" (src/keys.rs's job_back_off), or nil: no key, or
-- text that does not start with digits (then no back-off holds the limit:
-- a back-off only ever holds jobs back for a while).
local function parse_back_off(raw)
  if not raw then return nil end
  return tonumber(string.match(raw, '^(%d+)'))
end

-- An adaptive limit's state, {value, changed} (microseconds, Redis's
-- clock), from its stored text "<value> <changed>" (src/keys.rs's
-- job_adaptive), or nil: no key, or text that does not read (the limit
-- then starts at its floor again).
local function parse_adaptive(raw)
  if not raw then return nil end
  local value, changed = string.match(raw, '^(%d+) (%d+)$')
  value, changed = tonumber(value), tonumber(changed)
  if value and changed and value <= MAX_LIMIT then return {value, changed} end
  return nil
end

-- A queue's adaptive range, floor and ceiling, from its stored text
-- "<floor>..<ceiling>" (src/keys.rs's limit_range), or nil: no key, or a
-- broken range, which reads as none: its floor, the queue's limit, holds
-- alone (as a reader that knows no ranges reads it).
local function parse_range(raw)
  if not raw then return nil end
  local floor, ceiling = string.match(raw, '^(%d+)%.%.(%d+)$')
  floor, ceiling = tonumber(floor), tonumber(ceiling)
  if floor and ceiling and floor >= 1 and floor <= ceiling and ceiling <= MAX_LIMIT then return floor, ceiling end
  return nil
end
