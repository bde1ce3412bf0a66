-- The prelude: the top of the function library whose functions the scripts
-- are (see script/mod.rs), run once when Redis loads it, joined from this
-- folder's files in the order src/lua/prelude/parts.rs lists them. It
-- defines locals only, which every script sees; no Redis command runs here
-- (Redis allows none while it loads a library). Locals here outlive a call:
-- what one call may keep is reset by new_call() (call.lua), which every
-- function runs first (script/mod.rs).
--
-- This file: the Redis data model's key names, built as src/keys.rs builds
-- them (tests/lua_prelude.rs holds the two to each other). The capsules set
-- and heartbeat keys reach the reap script from the core, as KEYS; the
-- orphans script, which meets UUIDs in busy lists, builds them here.

local PREFIX = 'sidekiq:limit_fetch:'
local RECOVERIES_KEY = 'sidekiq:limit_fetch:recoveries'
-- How many reaps counted a recovery (src/keys.rs's RECOVERED).
local RECOVERED_KEY = 'sidekiq:limit_fetch:recovered'
local DEAD_KEY = 'dead'
local CAPSULES_KEY = 'sidekiq:limit_fetch:capsules'
local REGISTERED_KEY = 'sidekiq:limit_fetch:registered'
-- This gem's registered capsules scored by when their heartbeat expires
-- (src/keys.rs's BEATS): a reaped capsule leaves it.
local BEATS_KEY = 'sidekiq:limit_fetch:beats'
local UNREGISTERED_KEY = 'sidekiq:limit_fetch:unregistered'
local OUTAGE_KEY = 'sidekiq:limit_fetch:outage'
local LAST_BEAT_KEY = 'sidekiq:limit_fetch:last_beat'

-- The data format in force ("<format>:<since_ms>[:pinned]", absent: 1;
-- format.lua reads it), and each capsule's highest format by UUID (a reaped
-- capsule leaves it): src/keys.rs's FORMAT and FORMATS.
local FORMAT_KEY = 'sidekiq:limit_fetch:format'
local FORMATS_KEY = 'sidekiq:limit_fetch:formats'

-- Sidekiq's own list for a queue.
local function queue_key(name) return 'queue:' .. name end
local function limit_key(name) return PREFIX .. 'queue:' .. name .. ':limit' end
local function process_limit_key(name) return PREFIX .. 'queue:' .. name .. ':process_limit' end
local function busy_key(name) return PREFIX .. 'queue:' .. name .. ':busy' end
local function paused_key(name) return PREFIX .. 'queue:' .. name .. ':paused' end
local function in_progress_key(uuid, name) return PREFIX .. 'capsule:' .. uuid .. ':inprogress:' .. name end
local function capsule_queues_key(uuid) return PREFIX .. 'capsule:' .. uuid .. ':queues' end
local function heartbeat_key(uuid) return PREFIX .. 'capsule:' .. uuid .. ':heartbeat' end
local function capsule_info_key(uuid) return PREFIX .. 'capsule:' .. uuid .. ':info' end
-- Job limits (a job class's, or a key's) by id: see src/keys.rs.
local function job_limit_key(id) return PREFIX .. 'limit:' .. id .. ':limit' end
local function job_busy_key(id) return PREFIX .. 'limit:' .. id .. ':busy' end
local function parked_key(id) return PREFIX .. 'limit:' .. id .. ':parked' end
-- The job limits a capsule's runs pass slots of (src/keys.rs): a slot's
-- other holders carry their limits, in the capsule's in-progress lists.
local function capsule_limits_key(uuid) return PREFIX .. 'capsule:' .. uuid .. ':limits' end
local LIMITS_WITH_PARKED_KEY = 'sidekiq:limit_fetch:parked'
-- Rates: a queue's or a job limit's stored rate, its starts (a sorted set
-- scored by start time, in microseconds of Redis's clock), and the job
-- limits parked at their rate, scored by when their window may next open.
local function rate_key(name) return PREFIX .. 'queue:' .. name .. ':rate' end
local function starts_key(name) return PREFIX .. 'queue:' .. name .. ':starts' end
local function job_rate_key(id) return PREFIX .. 'limit:' .. id .. ':rate' end
local function job_starts_key(id) return PREFIX .. 'limit:' .. id .. ':starts' end
local function job_released_key(id) return PREFIX .. 'limit:' .. id .. ':released' end
local RATE_PARKED_KEY = 'sidekiq:limit_fetch:rate_parked'
-- Back-offs (src/keys.rs): a job limit's, and its streak; a queue's
-- classes that declare no limit and back off, and the flag its fetch reads.
local function job_back_off_key(id) return PREFIX .. 'limit:' .. id .. ':back_off' end
local function job_back_off_streak_key(id) return PREFIX .. 'limit:' .. id .. ':back_off_streak' end
local function class_back_off_key(name) return PREFIX .. 'queue:' .. name .. ':class_back_off' end
local function class_back_offs_key(name) return PREFIX .. 'queue:' .. name .. ':class_back_offs' end
local BACK_OFFS_KEY = 'sidekiq:limit_fetch:back_offs'
-- An adaptive job limit's limit in force (src/keys.rs).
local function job_adaptive_key(id) return PREFIX .. 'limit:' .. id .. ':adaptive' end
-- A queue's adaptive limit (src/keys.rs): its range, and its limit in force.
local function limit_range_key(name) return PREFIX .. 'queue:' .. name .. ':limit_range' end
local function adaptive_key(name) return PREFIX .. 'queue:' .. name .. ':adaptive' end
-- A fair class's tenants with parked jobs, scored by slots over weight
-- (src/keys.rs).
local function fair_waiting_key(class_id) return PREFIX .. 'limit:' .. class_id .. ':fair' end
-- The job limit id of a fair queue's slots (`fair_limits:`), as
-- src/keys.rs builds it: its stored value (job_limit_key) is the queue's
-- fair limit, and says that the queue is one.
local function fair_queue_id(name) return 'queue:' .. name end
-- RATE_PARKED_KEY's first score, or absent with it: a plain string that a
-- processor's hand-over reads in its MGET (src/capsule/hand_over/).
local RATE_DUE_KEY = 'sidekiq:limit_fetch:rate_due'
-- A time no limit in RATE_PARKED_KEY opens before, or absent with it: what
-- the doorbell's arming reads (src/keys.rs).
local RATE_WAKE_KEY = 'sidekiq:limit_fetch:rate_wake'
local DISCARDED_KEY = 'sidekiq:limit_fetch:discarded'

-- What a fetch reads of queue `name` to know whether it may take a job of
-- it, in one MGET (lua/fetch/queues.lua's eligible): its limit, process
-- limit, pause, rate, whether classes back off in it, an adaptive limit's
-- range and state, and its fair limit (a fair queue's). A fresh table: the
-- fetch's first read appends the keys it reads with it (read_ahead). One
-- builder for the eight also keeps them out of the fetch chunk's upvalues,
-- which Lua caps at 60.
local function queue_state_keys(name)
  return {limit_key(name), process_limit_key(name), paused_key(name), rate_key(name), class_back_off_key(name),
    limit_range_key(name), adaptive_key(name), job_limit_key(fair_queue_id(name))}
end
