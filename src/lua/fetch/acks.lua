-- An acknowledged job's job-limit slots, vacated for the jobs this call
-- takes, and the parked jobs they let go, held (vacate).
-- Writes: vacated, held, the prelude's emptied (release).

-- Counts the slots of the job limits `job` carries as vacated by its end,
-- and holds for each the oldest parked job it has room for.
local function vacate(job)
  for _, limit in ipairs(job_limits(job) or NONE) do
    local id = limit.id
    vacated[id] = (vacated[id] or 0) + 1
    release(id, 1, held, vacated[id], limit)
  end
end
