-- A fair queue (`fair_limits: {queue: 10}`): its slots shared among the
-- tenants of its jobs as a fair class's are (prelude/fair.lua). The fetch
-- writes the share into each job of the queue when it first takes it
-- (fair_queued): the job's tenant's entry first, its fair naming the
-- queue's job limit (fair_queue_id), and that limit's entry last. From then
-- on the job carries its share like a job of a fair class, and every other
-- script (acknowledgements, reaps, reconciliations, releases) reads it from
-- the payload as it reads any job limit, with no queue to look up.
-- Reads: seen_fair.

-- The entry a job's tenant is: a copy of its first key limit (its class's
-- key: or fair:), else of its first limit, else one of its class alone.
-- Its own limit and rate hold it still; it is not discarded at its limit
-- (a job waiting for its turn is never dropped). `limits`: the job's.
local function fair_tenant(job, limits)
  local first
  for _, limit in ipairs(limits) do
    if string.sub(limit.id, 1, 4) == 'key:' then first = limit break end
  end
  first = first or limits[1]
  local tenant = {}
  if first then
    for k, v in pairs(first) do tenant[k] = v end
  else
    local parsed = parse(job)
    local class = parsed and (parsed.wrapped or parsed.class)
    tenant.id = 'class:' .. (type(class) == 'string' and class or '?')
  end
  tenant.discard = nil
  return tenant, first
end

-- Job `job` of queue `name` as it goes on: unchanged unless the queue is
-- fair (eligible read its limit: seen_fair) and the job does not carry its
-- share yet; else rewritten, its other limits and every other byte as they
-- were. The payload's "limit_fetch" array, first (as the client middleware
-- writes it; one that was elsewhere, written by hand, is left where it
-- was: the first one is read), is the only part encoded again: its args
-- could not be (cjson writes an empty array as {}).
local function fair_queued(job, name)
  if not seen_fair then return job end
  local group = fair_queue_id(name)
  local limits = job_limits(job) or {}
  for _, limit in ipairs(limits) do
    if limit.id == group then return job end
  end
  if not parse(job) then return job end
  local tenant, first = fair_tenant(job, limits)
  tenant.fair = group
  local shared = {tenant}
  for _, limit in ipairs(limits) do
    if limit ~= first then shared[#shared + 1] = limit end
  end
  shared[#shared + 1] = {id = group, concurrency = seen_fair}
  local array = string.sub(job, 1, #LIMITS_FIRST) == LIMITS_FIRST and string.match(job, '^%b[]', #LIMITS_FIRST + 1)
  local rest
  if array and carried_limits[job] then
    rest = string.sub(job, #LIMITS_FIRST + #array + 1)
  else
    rest = string.sub(job, 2)
    if string.sub(rest, 1, 1) ~= '}' then rest = ',' .. rest end
  end
  local rewritten = LIMITS_FIRST .. cjson.encode(shared) .. rest
  carried_limits[rewritten] = shared
  carried_queues[rewritten] = carried_queues[job]
  return rewritten
end
