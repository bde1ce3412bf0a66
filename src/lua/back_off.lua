-- Backs a job limit off: what it protects answered "too many requests"
-- (a BackOff from a job's perform, lib/sidekiq/limit_fetch/back_off.rb, or
-- the console). Until the back-off ends no job of the limit starts, in any
-- process; a back-off while one holds extends it, never shortens it. The
-- job that backed off goes back parked, first in line for its limit, its
-- slots freed, in one atomic step: it runs again when the back-off ends,
-- as a job parked behind a rate does (lua/fetch/rates.lua).
--
-- A job of a queue whose limit is adaptive shrinks that limit too (see
-- below).
--
-- A class that declares no limit backs off as a class: its jobs carry no
-- limit, so the limit (`class:<name>`) is noted in every queue Sidekiq
-- knows and the job's own, where the fetch reads it with the queue's
-- limits (class_back_off, class_back_offs).
--
-- ARGV[1]  the capsule's UUID, or '' (the console: no job)
-- ARGV[2]  the job's queue name
-- ARGV[3]  the job, in the capsule's in-progress list of that queue, or ''
-- ARGV[4]  the id of the job limit that backs off
-- ARGV[5]  '1' if the job carries that limit, '0' if its class declares
--          none (the job's class name is ARGV[6] then)
-- ARGV[6]  who backs it off: the job's class name, or "console"
-- ARGV[7]  the job's jid, or ''
-- ARGV[8]  for how long, in seconds; '' for the default: BACK_OFF_FIRST,
--          doubled with each back-off of the limit that follows the last
--          one's end within STREAK_KEPT, up to BACK_OFF_LONGEST
-- Returns {milliseconds until the back-off ends, 1 if the job went back
-- parked (0: it was no longer in the in-progress list: a reaper took the
-- capsule for dead and pushed it back to its queue already)}.

local BACK_OFF_FIRST, BACK_OFF_LONGEST = 1, 60
local STREAK_KEPT = 60000

-- Notes in queue `name` that `class`'s jobs are held by limit `id`'s
-- back-off until `ends`.
local function hold_class(name, class, id, ends, ms)
  local flag = class_back_off_key(name)
  local later = parse_back_off(redis.call('GET', flag))
  if not later or later < ends then
    redis.call('SET', flag, string.format('%.0f', ends), 'PX', ms)
  end
  local classes = class_back_offs_key(name)
  redis.call('HSET', classes, class, id)
  if redis.call('PTTL', classes) < ms then redis.call('PEXPIRE', classes, ms) end
end

return function(KEYS, ARGV)
  local uuid, name, job, id = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
  local carried, who, jid = ARGV[5] == '1', ARGV[6], ARGV[7]
  local streak = redis.call('INCRBY', job_back_off_streak_key(id), 1)
  local seconds = tonumber(ARGV[8]) or math.min(BACK_OFF_FIRST * 2 ^ (streak - 1), BACK_OFF_LONGEST)
  local t = now()
  local ends = t + math.floor(seconds * 1000000 + 0.5)
  local current = back_off_end(id)
  local kept = current and current >= ends
  if kept then ends = current end
  local ms = math.max(1, math.ceil((ends - t) / 1000))
  if not kept then
    redis.call('SET', job_back_off_key(id), string.format('%.0f', ends) .. ' ' .. who .. ' ' .. jid, 'PX', ms)
    back_off_ends[id] = ends
  end
  redis.call('PEXPIRE', job_back_off_streak_key(id), ms + STREAK_KEPT)
  redis.call('HINCRBY', BACK_OFFS_KEY, id, 1)
  if not carried then
    hold_class(name, who, id, ends, ms)
    for _, queue in ipairs(redis.call('SMEMBERS', 'queues')) do
      if queue ~= name then hold_class(queue, who, id, ends, ms) end
    end
  end
  if job == '' then return {ms, 0} end
  -- An adaptive limit that backs off shrinks (adaptive.lua). So does its
  -- queue's adaptive limit, whichever of the job's limits backs off: the
  -- queue's limit is what admits the jobs that hit what it protects, and a
  -- limit that only grew would send more of them into the same wall.
  for _, limit in ipairs(job_limits(job) or {}) do
    if limit.id == id then shrink(limit) end
  end
  shrink_queue(name)

  -- Noted parked first, then out of the list and into the parked one: a
  -- user denied the push stops before the removal (see may_send).
  local parked = parked_key(id)
  may_send('RPUSH', parked, 'job')
  redis.call('SADD', LIMITS_WITH_PARKED_KEY, id)
  rate_parks(id, ends)
  if redis.call('LREM', in_progress_key(uuid, name), 1, job) == 0 then return {ms, 0} end
  -- First in line: a release sends the oldest, on the right, first.
  redis.call('RPUSH', parked, job)
  redis.call('LREM', busy_key(name), 1, uuid)
  local limits = job_limits(job)
  if limits then
    free_job_limits(uuid, limits)
    -- A fair class's tenant waits its turn with its job, once the back-off
    -- ends (fair.lua).
    for _, limit in ipairs(limits) do
      if limit.id == id and limit.fair then fair_note(limit, redis.call('LLEN', job_busy_key(id)), true) end
    end
  end
  return {ms, 1}
end
