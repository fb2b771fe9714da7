-- lib/read_end.lua -- how an owner's last read hold ends, shared by
-- read_release and read_undo (the same end, their arguments at other
-- places).
--
-- read_ended(ids, base, cmd, chan): the owner's request ids in hash ids
-- are forgotten; unless a writer holds the name or readers are left
-- (their timeout keys start with base), the lock goes and the channel
-- chan hears the release (cmd: PUBLISH or SPUBLISH). The script's reply.
local function read_ended(ids, base, cmd, chan)
  forget(ids, ARGV[3])
  if mode == 'write' then return {0, 0} end
  local live, most = prune(base, ids, 0)
  if live > 0 then
    if most > 0 then redis.call('pexpire', KEYS[1], most) end
    return {0, 0}
  end
  local heard = redis.call(cmd, chan, ARGV[1])
  redis.call('del', KEYS[1], ids)
  return {0, heard}
end
