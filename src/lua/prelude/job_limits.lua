-- A job limit's values: its concurrency (job_limit) and its rate
-- (job_rate), stored for its id or declared by its job, and when its
-- back-off ends (back_off_end); read once a call.

local function whole(n) return type(n) == 'number' and n >= 0 and n <= MAX_LIMIT and n % 1 == 0 end

-- An adaptive limit's floor and ceiling (its job carries `"concurrency":
-- floor, "ceiling": ceiling`), or nil for a fixed one. A broken range
-- reads as none: its floor alone holds (a process of the gem that knows
-- no ranges reads it so too).
local function adaptive_range(limit)
  local floor, ceiling = limit.concurrency, limit.ceiling
  if ceiling ~= nil and whole(floor) and whole(ceiling) and floor >= 1 and floor <= ceiling then
    return floor, ceiling
  end
  return nil
end

-- A rate limit's values as MGET read them from values[at]: its stored
-- value, back-off, rate and count of jobs sent back, kept.
local function keep_rate_values(limit, values, at)
  local id = limit.id
  if job_rates[id] == nil then job_rates[id] = parse_rate(values[at + 2]) or declared_rate(limit.rate) end
  if rate_released[id] == nil then rate_released[id] = values[at + 3] and true or false end
  stored_job_limits[id] = parse_limit(values[at]) or false
  if back_off_ends[id] == nil then back_off_ends[id] = parse_back_off(values[at + 1]) or false end
end

-- Reads the values of the limits in `undecided` not read yet (rate limits
-- without concurrency, whose freed slots the fetch decides as it ends) in
-- one MGET with `limit`'s, if that is one too (a job's next to take: most
-- often a tenant's rate read with the last one's). A few limits at most:
-- looked for one by one.
local function read_wanted(limit)
  values_wanted = false
  local batch = {}
  if limit.rate ~= nil and limit.ceiling == nil and stored_job_limits[limit.id] == nil then batch[1] = limit end
  for _, wanted in ipairs(undecided) do
    local fresh = stored_job_limits[wanted.id] == nil
    for _, one in ipairs(batch) do
      if one.id == wanted.id then fresh = false end
    end
    if fresh then batch[#batch + 1] = wanted end
  end
  if #batch == 0 then return end
  local keys = {}
  for i, one in ipairs(batch) do
    local id, at = one.id, 4 * i - 4
    keys[at + 1], keys[at + 2] = job_limit_key(id), job_back_off_key(id)
    keys[at + 3], keys[at + 4] = job_rate_key(id), job_released_key(id)
  end
  local values = redis.call('MGET', unpack(keys))
  for i, one in ipairs(batch) do keep_rate_values(one, values, 4 * i - 3) end
end

-- A job limit's value: the one stored for its id (set at run time), else
-- the default its job carries: for an adaptive limit, its limit in force
-- (see adaptive.lua), its floor until it has one. Like a stored limit, a
-- broken default reads as 0. A limit that declares a rate and no
-- concurrency, or a fair class's tenant (whose share its class's turns
-- give, fair.lua), has none (the largest limit), unless one is stored.
local function job_limit(limit)
  local id = limit.id
  if values_wanted then read_wanted(limit) end
  local stored = stored_job_limits[id]
  if stored == nil then
    -- Its back-off in the same read: a limit checked for room is checked
    -- for a back-off too (see back_off_end); an adaptive limit's state; and
    -- a rate's stored value and its count of jobs sent back (job_rate,
    -- book_start), which a limit with a rate reads at every start.
    local values
    if limit.ceiling ~= nil then
      values = redis.call('MGET', job_limit_key(id), job_back_off_key(id), job_adaptive_key(id))
      adaptive_states[id] = parse_adaptive(values[3]) or false
    elseif limit.rate ~= nil then
      values = redis.call('MGET', job_limit_key(id), job_back_off_key(id), job_rate_key(id), job_released_key(id))
      if job_rates[id] == nil then job_rates[id] = parse_rate(values[3]) or declared_rate(limit.rate) end
      if rate_released[id] == nil then rate_released[id] = values[4] and true or false end
    else
      values = redis.call('MGET', job_limit_key(id), job_back_off_key(id))
    end
    stored = parse_limit(values[1]) or false
    stored_job_limits[id] = stored
    if back_off_ends[id] == nil then back_off_ends[id] = parse_back_off(values[2]) or false end
  end
  if stored then return stored end
  local default = limit.concurrency
  if default == nil and (limit.rate ~= nil or limit.fair ~= nil) then return MAX_LIMIT end
  local floor, ceiling = adaptive_range(limit)
  if floor then
    local state = adaptive_states[id]
    return math.min(math.max(state and state[1] or floor, floor), ceiling)
  end
  if whole(default) then return default end
  return 0
end

-- A job limit's rate ({limit, period}), or nil: the one stored for its id
-- (set at run time), else the one its job carries. Only a limit that
-- declares a rate has one: the others never pay for the stored one's read.
local function job_rate(limit)
  if limit.rate == nil then return nil end
  local rate = job_rates[limit.id]
  if rate == nil then
    rate = parse_rate(redis.call('GET', job_rate_key(limit.id))) or declared_rate(limit.rate)
    job_rates[limit.id] = rate
  end
  return rate
end

-- When the back-off of job limit `id` ends (microseconds, Redis's clock),
-- or nil if none holds it now. Read with its stored value (job_limit) where
-- that came first.
local function back_off_end(id)
  local ends = back_off_ends[id]
  if ends == nil then
    ends = parse_back_off(redis.call('GET', job_back_off_key(id))) or false
    back_off_ends[id] = ends
  end
  if ends and ends > now() then return ends end
  return nil
end
