-- Decoding payloads: a job as a table (parse), the job limits it carries
-- (job_limits, read from the "limit_fetch" array alone when it can) and
-- the queue it names (job_queue). Each decoded once a call (call.lua's
-- caches).

-- A payload as a table, or nil when it is not a JSON object.
local function parse(job)
  local parsed = parsed_jobs[job]
  if parsed == nil then
    local ok, value = pcall(cjson.decode, job)
    parsed = ok and type(value) == 'table' and value or false
    parsed_jobs[job] = parsed
  end
  return parsed or nil
end

-- The valid job limits of a payload's "limit_fetch" field, or false.
--
-- The client middleware writes the field first in the payload, and its
-- queue next: only the array is decoded, and the queue's name read after
-- it (carried_queues), for a released job: a payload's arguments may be
-- large, and the fetch reads the limits of every keyed job it acknowledges
-- and takes. Elsewhere (a payload written otherwise), or if that array
-- does not decode (an id with a bracket ends %b[] early or late, leaving
-- JSON that does not parse), the whole payload is. Only at the start is the
-- field surely the payload's own, not a key of a hash among its arguments;
-- once the array decoded, what follows it is the payload's next key.
-- spec/fixtures/job_limit_payloads.json holds payloads as the middleware
-- writes them and what this reads from each (tests/payloads.rs).
local LIMITS_FIRST = '{"limit_fetch":'

-- The valid job limits of a decoded "limit_fetch" value, or false.
local function valid_limits(list)
  local limits = {}
  if type(list) == 'table' then
    for _, limit in ipairs(list) do
      if type(limit) == 'table' and type(limit.id) == 'string' then limits[#limits + 1] = limit end
    end
  end
  return #limits > 0 and limits
end

local function carried(job)
  if string.sub(job, 1, #LIMITS_FIRST) == LIMITS_FIRST then
    local array = string.match(job, '^%b[]', #LIMITS_FIRST + 1)
    -- A hot key's jobs carry the same array: decoded once a call.
    local limits = array and carried_arrays[array]
    if limits == nil and array then
      local ok, list = pcall(cjson.decode, array)
      if ok then limits = valid_limits(list) end
      carried_arrays[array] = limits == nil and 'invalid' or limits
    end
    if limits ~= nil and limits ~= 'invalid' then
      -- A name with a quote or a backslash in it is escaped: read as JSON.
      carried_queues[job] = string.match(job, '^,"queue":"([^"\\]*)"', #LIMITS_FIRST + #array + 1)
      return limits
    end
  end
  local parsed = parse(job)
  return valid_limits(parsed and parsed.limit_fetch)
end

-- The head `job` opens with that says alone which job limits it carries
-- (the "limit_fetch" field first, its array valid), or nil: a payload
-- that opens with the same head carries the same limits (carried reads
-- nothing else of it).
local function carried_head(job)
  if string.sub(job, 1, #LIMITS_FIRST) ~= LIMITS_FIRST then return nil end
  local array = string.match(job, '^%b[]', #LIMITS_FIRST + 1)
  if type(array and carried_arrays[array]) ~= 'table' then return nil end
  return LIMITS_FIRST .. array
end

-- The job limits a payload carries, each {id =, concurrency =, discard =}
-- (lib/sidekiq/limit_fetch/job_limits.rb writes them); nil for a job that
-- carries none, which costs one plain find. `with_head`: also its head
-- (carried_head), if it has one.
local function job_limits(job, with_head)
  if not string.find(job, '"limit_fetch":', 1, true) then return nil end
  local limits = carried_limits[job]
  if limits == nil then
    limits = carried(job)
    carried_limits[job] = limits
  end
  if with_head and limits then return limits, carried_head(job) end
  return limits or nil
end

-- Payload `job` rewritten to carry job limits `limits` first, before
-- `rest`, its members after the first (a leading comma if any): known to
-- carry them, and `job`'s queue, without a decode.
local function carrying(job, limits, rest)
  local rewritten = LIMITS_FIRST .. cjson.encode(limits) .. rest
  carried_limits[rewritten] = limits
  carried_queues[rewritten] = carried_queues[job]
  return rewritten
end

-- The name of the queue a payload says it belongs to, or nil.
local function job_queue(job)
  if job_limits(job) and carried_queues[job] then return carried_queues[job] end
  local parsed = parse(job)
  return parsed and type(parsed.queue) == 'string' and parsed.queue or nil
end
