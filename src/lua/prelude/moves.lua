-- Moving a job between lists: push_back puts it first in line again;
-- may_send stops a two-write move before its first write if the user may
-- not send the second.

-- Puts a job back first in line: Sidekiq pushes jobs on the left of a queue
-- and takes them from the right.
local function push_back(name, job) redis.call('RPUSH', queue_key(name), job) end

-- Stops the call before a move that takes two writes (out of one list, then
-- into another) if its user may not send the second, `command` with the
-- arguments given (its key first). Redis keeps what a script wrote before a
-- command it refuses: with the ACL changed under running processes (the
-- capsule's boot check passed, src/acl.rs), the job would be in neither
-- list. Refused in Redis's own words, which src/acl.rs reads to name the
-- rule to add.
local function may_send(command, key, ...)
  if not redis.acl_check_cmd(command, key, ...) then
    error({err = "NOPERM this user has no permissions to run the '" .. string.lower(command) ..
      "' command (or to access '" .. key .. "'), checked before the move that needs it"})
  end
end
