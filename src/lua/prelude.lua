-- Prepended to every script (see script/mod.rs): the Redis data model's key
-- names, built as src/keys.rs builds them (tests/lua_prelude.rs holds the two
-- to each other), and the rules several scripts share. Defines locals only:
-- each costs every call of every script a little, the fetch's included, so
-- only what a script uses is here (the capsules set and heartbeat keys reach
-- the reap script from the core, as KEYS).

local PREFIX = 'sidekiq:limit_fetch:'
local RECOVERIES_KEY = 'sidekiq:limit_fetch:recoveries'
local DEAD_KEY = 'dead'

-- Sidekiq's own list for a queue.
local function queue_key(name) return 'queue:' .. name end
local function limit_key(name) return PREFIX .. 'queue:' .. name .. ':limit' end
local function process_limit_key(name) return PREFIX .. 'queue:' .. name .. ':process_limit' end
local function busy_key(name) return PREFIX .. 'queue:' .. name .. ':busy' end
local function in_progress_key(uuid, name) return PREFIX .. 'capsule:' .. uuid .. ':inprogress:' .. name end
local function capsule_queues_key(uuid) return PREFIX .. 'capsule:' .. uuid .. ':queues' end

-- The largest valid limit, 2^53 - 1: a Lua number holds every integer up to
-- it exactly. No queue has that many jobs running: a larger one is broken.
local MAX_LIMIT = 9007199254740991

-- A limit that is not decimal digits (ASCII whitespace around allowed) up to
-- MAX_LIMIT reads as 0: a broken limit must never mean "unlimited". The core
-- (limits.rs) and Ruby (limits.rb) read limits the same way; the values all
-- must agree on are in spec/fixtures/limit_values.json.
local function read_limit(key)
  local raw = redis.call('GET', key)
  if not raw then return nil end
  -- tonumber rounds digits to the nearest double: above MAX_LIMIT only if
  -- their value is.
  local limit = tonumber(string.match(raw, '^%s*(%d+)%s*$'))
  if limit and limit <= MAX_LIMIT then return limit end
  return 0
end

-- Puts a job back first in line: Sidekiq pushes jobs on the left of a queue
-- and takes them from the right.
local function push_back(name, job) redis.call('RPUSH', queue_key(name), job) end

-- The jid and class of a job, for logs: '?' for what its payload lacks, or
-- for all of it when it is not a JSON object.
local function describe_job(job)
  local ok, parsed = pcall(cjson.decode, job)
  if ok and type(parsed) == 'table' then
    return tostring(parsed.jid or '?'), tostring(parsed.class or '?')
  end
  return '?', '?'
end

