-- A job described for logs (describe_job).

-- The jid and class of a job, for logs: '?' for what its payload lacks, or
-- for all of it when it is not a JSON object.
local function describe_job(job)
  local parsed = parse(job)
  if parsed then return tostring(parsed.jid or '?'), tostring(parsed.class or '?') end
  return '?', '?'
end
