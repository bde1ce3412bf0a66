-- Adaptive job limits (`concurrency: 1..20`): the limit in force moves
-- between a floor and a ceiling, additive increase, multiplicative
-- decrease. It grows by one after each ROUND in which it was reached and
-- no back-off came (grow, at the fetch that finds it reached), and shrinks
-- by SHRINK, never below its floor, at each back-off (shrink, back_off.lua),
-- after which it waits two rounds.
-- Held in Redis for every process (job_adaptive_key), forgotten after IDLE
-- without a change: it starts at its floor again.

-- Microseconds; bin/bench's back_off section measured 0.25, 0.5 and 1 s
-- (docs/back-off.md).
local ROUND = 500000
local SHRINK = 0.75
-- Milliseconds: 10 minutes.
local IDLE = 600000

-- `from`: when its next round starts (now, unless later).
local function set_adaptive(id, value, from)
  local t = from or now()
  redis.call('SET', job_adaptive_key(id), value .. ' ' .. string.format('%.0f', t), 'PX', IDLE)
  adaptive_states[id] = {value, t}
end

-- Adaptive limit `limit`, found reached at `concurrency`, its limit in
-- force: one more once a round since its last change (up to its
-- ceiling; at it, the limit is kept from being forgotten). Returns the
-- limit in force after. A fixed one, or one stored at run time, is kept.
local function grow(limit, concurrency)
  local floor, ceiling = adaptive_range(limit)
  if not floor or stored_job_limits[limit.id] then return concurrency end
  local state = adaptive_states[limit.id]
  if state and now() - state[2] < ROUND then return concurrency end
  -- Its first round starts when it is first reached.
  if state and concurrency < ceiling then concurrency = concurrency + 1 end
  set_adaptive(limit.id, concurrency)
  return concurrency
end

-- Adaptive limit `limit` backs off: its limit in force shrinks, and grows
-- again no sooner than two rounds later: a limit that grows back into the
-- same wall at once, a round after each back-off, spends a tenth of its
-- calls on refusals where the downstream admits two (bin/bench back_off).
local function shrink(limit)
  local concurrency = job_limit(limit)
  local floor = adaptive_range(limit)
  if not floor or stored_job_limits[limit.id] then return end
  set_adaptive(limit.id, math.max(floor, math.floor(concurrency * SHRINK)), now() + ROUND)
end
