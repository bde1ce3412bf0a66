-- Adaptive limits (`concurrency: 1..20` of a job limit, `"1..20"` of a
-- queue in `limits:`): the limit in force moves between a floor and a
-- ceiling, additive increase, multiplicative decrease. It grows by one
-- after each ROUND in which it was reached and no back-off came (grow, at
-- the fetch that finds it reached; a queue's: grow_queue, lua/fetch/
-- queues.lua), and shrinks by SHRINK, never below its floor, at each
-- back-off (shrink, shrink_queue, back_off.lua), after which it waits two
-- rounds.
-- Held in Redis for every process (job_adaptive_key, adaptive_key),
-- forgotten after IDLE without a change: it starts at its floor again.

-- Microseconds; bin/bench's back_off section measured 0.25, 0.5 and 1 s
-- (docs/back-off.md).
local ROUND = 500000
local SHRINK = 0.75
-- Milliseconds: 10 minutes.
local IDLE = 600000

-- Writes an adaptive limit's state at `key`: `value` in force, its next
-- round from `from` (now, unless later). Returns the state.
local function write_adaptive(key, value, from)
  local t = from or now()
  redis.call('SET', key, value .. ' ' .. string.format('%.0f', t), 'PX', IDLE)
  return {value, t}
end

-- The limit in force after an adaptive limit, in state `state` ({value,
-- changed}, or nil), is found reached at `concurrency`, its limit in force;
-- nil if it stays as it is (within a round of its last change). One more
-- once a round since, up to its ceiling (at it, the same is written again:
-- the limit is kept from being forgotten); its first round starts when it
-- is first reached.
local function grown(state, concurrency, ceiling)
  if state and now() - state[2] < ROUND then return nil end
  if state and concurrency < ceiling then return concurrency + 1 end
  return concurrency
end

-- Adaptive limit `limit`, found reached at `concurrency`, its limit in
-- force: grown. Returns the limit in force after. A fixed one, or one
-- stored at run time, is kept.
local function grow(limit, concurrency)
  local floor, ceiling = adaptive_range(limit)
  if not floor or stored_job_limits[limit.id] then return concurrency end
  local value = grown(adaptive_states[limit.id], concurrency, ceiling)
  if not value then return concurrency end
  adaptive_states[limit.id] = write_adaptive(job_adaptive_key(limit.id), value)
  return value
end

-- The limit in force `concurrency` shrunk at a back-off (never below its
-- floor), written at `key`: it grows again no sooner than two rounds later:
-- a limit that grows back into the same wall at once, a round after each
-- back-off, spends a tenth of its calls on refusals where the downstream
-- admits two (bin/bench back_off).
local function shrunk(key, concurrency, floor)
  return write_adaptive(key, math.max(floor, math.floor(concurrency * SHRINK)), now() + ROUND)
end

-- Adaptive limit `limit` backs off: its limit in force shrinks.
local function shrink(limit)
  local concurrency = job_limit(limit)
  local floor = adaptive_range(limit)
  if not floor or stored_job_limits[limit.id] then return end
  adaptive_states[limit.id] = shrunk(job_adaptive_key(limit.id), concurrency, floor)
end

-- A queue's adaptive limit, from its limit as stored (`limit`, parsed: the
-- floor, written with the range), its range's text and its state's (as
-- MGET reads them): floor, ceiling, limit in force and state ({value,
-- changed}, or nil); nil for a fixed limit: no range, a broken one, or a
-- limit set at run time (other than the range's floor), which holds
-- instead.
local function queue_adaptive(limit, range, raw_state)
  if not limit or not range then return nil end
  local floor, ceiling = parse_range(range)
  if floor ~= limit then return nil end
  local state = parse_adaptive(raw_state)
  return floor, ceiling, math.min(math.max(state and state[1] or floor, floor), ceiling), state
end

-- Queue `name`'s adaptive limit backs off: its limit in force shrinks.
local function shrink_queue(name)
  local values = redis.call('MGET', limit_key(name), limit_range_key(name), adaptive_key(name))
  local floor, _, concurrency = queue_adaptive(parse_limit(values[1]), values[2], values[3])
  if floor then shrunk(adaptive_key(name), concurrency, floor) end
end
