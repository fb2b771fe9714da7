-- lib/write_end.lua -- how an owner's last write hold ends, shared by
-- write_release and write_undo (the same end, their arguments at other
-- places).
--
-- write_ended(ids, cmd, chan): the release is heard on chan (cmd:
-- PUBLISH or SPUBLISH), the owner's request ids in hash ids forgotten; the
-- lock goes, or stays as the owner's read lock when it holds one. The
-- script's reply.
local function write_ended(ids, cmd, chan)
  local heard = redis.call(cmd, chan, ARGV[1])
  forget(ids, ARGV[3])
  if redis.call('hlen', KEYS[1]) == 1 then
    redis.call('del', KEYS[1], ids)
  else
    redis.call('hset', KEYS[1], 'mode', 'read')
  end
  return {0, heard}
end
