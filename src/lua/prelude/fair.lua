-- Fair share (a class declared `fair:`): its slots divided among its
-- tenants with work, by weight. Each job carries its tenant's entry first,
-- {id = the tenant's key limit, fair = the class's id, weight = w}, then
-- the class's. A job that finds its class full parks as its tenant's
-- (lua/fetch/job_limits.lua's at_share); each slot of the class that frees
-- goes to the tenant whose turn it is: the one holding the fewest slots
-- for its weight among those with parked jobs (fair_turn). So a tenant
-- alone takes every slot, and tenants with work converge to slots in
-- proportion to their weights (3.3 each of 10 for three, 6:2:2 for
-- weights 3:1:1) as slots free, without preempting a running job.
--
-- fair_waiting_key(class) holds the tenants with parked jobs, each scored
-- by the slots it holds over its weight, noted wherever its busy list
-- changes (fair_note). A score is a hint: one left stale (a reap freed a
-- tenant's slots) orders turns less fairly for a while, never lets the
-- class exceed its limit, and never strands a job: reaps and
-- reconciliations send every parked job of the limits they free back to
-- their queues (release with no count).

local function fair_weight(limit)
  local weight = tonumber(limit.weight)
  if weight and weight > 0 then return weight end
  return 1
end

-- A score: the slots held over the weight, to 3 decimals, then when it
-- was noted, in microseconds of Redis's clock (wrapping every 2.8 hours)
-- below the fourth: among tenants holding as few slots for their weight,
-- the one noted least lately (served, or parked, longest ago) comes first.
-- By name alone, a tenant whose job just ended would win every tie with
-- tenants that arrived behind a backlog, until its own jobs ran out.
local function fair_score(slots, weight)
  return math.floor(slots / weight * 1000 + 0.5) / 1000 + (now() % 10000000000) * 1e-14
end

-- Notes tenant `limit`'s score after its busy list changed to `busy`
-- entries; with `add`, adds it (it parks a job).
local function fair_note(limit, busy, add)
  local score = fair_score(busy, fair_weight(limit))
  if add then
    redis.call('ZADD', fair_waiting_key(limit.fair), score, limit.id)
  else
    redis.call('ZADD', fair_waiting_key(limit.fair), 'XX', score, limit.id)
  end
end

-- How many turns a freed slot may give in one call: a slot freed gives
-- one; more room (a limit raised) is given by the next frees.
local TURNS = 4
-- Candidates looked at per turn, the lowest scores: a tenant whose own
-- limit, rate or back-off holds it gives its turn to the next.
local CANDIDATES = 4

-- A slot of `fair`'s class freed (`limits`: the job's, holding the
-- class's entry): sends the oldest parked job of the tenant whose turn it
-- is back to the front of its queue (held: to the fetch, see release), as
-- the class has room. `freed`: the fetch's slots freed by id (freed_limits),
-- or nil. A job sent counts for its tenant in the turns after it here; its
-- score changes when the job books its slot (book, fair_note).
local function fair_turn(fair, limits, held, freed)
  local class
  for _, limit in ipairs(limits) do
    if limit.id == fair.fair then class = limit end
  end
  if not class then return end
  local room = job_limit(class) - (redis.call('LLEN', job_busy_key(class.id)) - (freed and freed[class.id] or 0))
  local waiting = fair_waiting_key(class.id)
  -- The ended job's tenant holds one slot less than its score says until
  -- the end of the call notes it (fetch's done).
  local given = {[fair.id] = -((freed and freed[fair.id] or 0) / fair_weight(fair))}
  for _ = 1, math.min(room, TURNS) do
    local scored = redis.call('ZRANGE', waiting, 0, CANDIDATES - 1, 'WITHSCORES')
    local order = {}
    for i = 1, #scored, 2 do
      local id = scored[i]
      order[#order + 1] = {id = id, score = tonumber(scored[i + 1]) + (given[id] or 0)}
    end
    table.sort(order, function(a, b) return a.score < b.score or (a.score == b.score and a.id < b.id) end)
    local sent = false
    for _, candidate in ipairs(order) do
      local id = candidate.id
      local _, n, entry = release(id, 1, held, freed and freed[id])
      if n and n > 0 then
        given[id] = (given[id] or 0) + 1 / fair_weight(entry or fair)
        sent = true
        break
      end
      -- A tenant leaves with its last parked job (release), or here if
      -- its jobs went another way (a reap, a release of every job).
      if redis.call('EXISTS', parked_key(id)) == 0 then redis.call('ZREM', waiting, id) end
    end
    if not sent then return end
  end
end
