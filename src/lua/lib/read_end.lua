-- lib/read_end.lua -- how an owner's last read hold ends, shared by
-- read_release and read_undo (the same end, their arguments at other
-- places).
--
-- read_ended(ids, base, cmd, chan): the owner's request ids in hash ids
-- are forgotten; unless a writer holds the name or a live reader is left
-- (their timeout keys start with base), the lock goes and the channel
-- chan hears the release (cmd: PUBLISH or SPUBLISH). The lock key keeps
-- its lease (that of its longest hold, which may have been this one's):
-- finding the longest of the others would read every reader's holds,
-- and a dead reader keeps nobody out (lib/rw.lua). The script's reply.
local function read_ended(ids, base, cmd, chan)
  forget(ids, ARGV[3])
  if mode == 'write' or live_holder(base, ids) then return {0, 0} end
  local heard = redis.call(cmd, chan, ARGV[1])
  redis.call('del', KEYS[1], ids)
  return {0, heard}
end
