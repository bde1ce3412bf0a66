-- Whether this connection's Redis user may run each call given, under the
-- server's ACL rules (`redis.acl_check_cmd`: the command, its subcommand and
-- its keys), without running any. Run once by a capsule at boot
-- (src/acl.rs), so that no script stops partway on a denied command: Redis
-- keeps the writes a function made before a refused command.
--
-- ARGV  calls, each as its number of words and the words: n, command,
--       [subcommand,] arguments... (each with every argument its command
--       needs: a command is checked on the keys its arguments name)
-- Returns the position (1, 2, ...) of each call denied; an error names a
-- command this server does not know.
return function(KEYS, ARGV)
  local denied = {}
  local i, call = 1, 0
  while i <= #ARGV do
    local n = tonumber(ARGV[i])
    call = call + 1
    if not redis.acl_check_cmd(unpack(ARGV, i + 1, i + n)) then denied[#denied + 1] = call end
    i = i + n + 1
  end
  return denied
end
