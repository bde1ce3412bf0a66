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

-- JSON read only as far as a rewrite needs it: where a value ends, and
-- where a top-level member is, with strings and escapes honoured (an id
-- may hold any text, brackets and quotes included).
local QUOTE, BACKSLASH, COMMA = 34, 92, 44
local OPENS, CLOSES = {[91] = true, [123] = true}, {[93] = true, [125] = true}

-- The last byte of the JSON value that starts at byte `i` of `s`, or nil.
local function value_end(s, i)
  local depth, quoted, escaped = 0, false, false
  for j = i, #s do
    local c = string.byte(s, j)
    if quoted then
      if escaped then
        escaped = false
      elseif c == BACKSLASH then
        escaped = true
      elseif c == QUOTE then
        quoted = false
        if depth == 0 then return j end
      end
    elseif c == QUOTE then
      quoted = true
    elseif OPENS[c] then
      depth = depth + 1
    elseif CLOSES[c] then
      if depth == 0 then return j - 1 end
      depth = depth - 1
      if depth == 0 then return j end
    elseif c == COMMA and depth == 0 then
      return j - 1
    end
  end
  return nil
end

-- The bytes [from, to] of the JSON object `s`'s top-level member whose key
-- is `key` (as JSON text, quotes included), with one comma beside it; nil
-- if it has none.
local function member_span(s, key)
  local i, comma = string.match(s, '^{%s*()'), nil
  while i and string.byte(s, i) == QUOTE do
    local key_end = value_end(s, i)
    local value = key_end and string.match(s, '^%s*:%s*()', key_end + 1)
    local last = value and value_end(s, value)
    local after = last and string.find(s, '[,}]', last + 1)
    if not after then return nil end
    if string.sub(s, i, key_end) == key then
      if comma then return comma, last end
      if string.byte(s, after) == COMMA then return i, after end
      return i, last
    end
    if string.byte(s, after) ~= COMMA then return nil end
    comma, i = after, string.match(s, '^%s*()', after + 1)
  end
  return nil
end

-- Job `job` of queue `name` as it goes on: unchanged unless the queue is
-- fair (eligible read its limit: seen_fair) and the job does not carry its
-- share yet; else rewritten with its "limit_fetch" member first (where the
-- client middleware writes it, and the fetch reads it fastest), holding
-- its share and its other limits. Only that member is encoded again: the
-- rest could not be (cjson writes an empty array as {}), and every other
-- byte stays as it was.
local function fair_queued(job, name)
  if not seen_fair then return job end
  local group = fair_queue_id(name)
  local limits = job_limits(job)
  for _, limit in ipairs(limits or {}) do
    if limit.id == group then return job end
  end
  if not parse(job) then return job end
  local tenant, first = fair_tenant(job, limits or {})
  tenant.fair = group
  local shared = {tenant}
  for _, limit in ipairs(limits or {}) do
    if limit ~= first then shared[#shared + 1] = limit end
  end
  shared[#shared + 1] = {id = group, concurrency = seen_fair}
  local rest = job
  -- A payload without the text carries no member: its args are not read.
  if string.find(job, '"limit_fetch":', 1, true) then
    local from, to = member_span(job, '"limit_fetch"')
    if from then rest = string.sub(job, 1, from - 1) .. string.sub(job, to + 1) end
  end
  rest = string.match(rest, '^{%s*(.*)$')
  if not rest then return job end
  if string.sub(rest, 1, 1) ~= '}' then rest = ',' .. rest end
  return carrying(job, shared, rest)
end
