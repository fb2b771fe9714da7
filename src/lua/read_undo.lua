-- read_undo -- drop the read hold an acquire attempt took, if it is
-- still there.
--
-- keys: 2
-- args: 9
--
-- KEYS[1]  the lock
-- KEYS[2]  the request ids "hilock_rid:{<name>}"
-- ARGV[1]  the release message
-- ARGV[2]  lease ms (how long the request id is kept at least)
-- ARGV[3]  the reader's owner field
-- ARGV[4]  publish command
-- ARGV[5]  the channel
-- ARGV[6]  base (of a reader's timeout keys)
-- ARGV[7]  the request ids' name
-- ARGV[8]  the request id of the acquire attempt to undo
-- ARGV[9]  request id (of this undo)
--
-- Replies: as read_release: {holds left, subscribers that heard the
-- release} (0 for the second while the lock is held), or nil when the
-- reader holds nothing. WRONGKIND for another kind's key, left as it is.
--
-- As write_undo.lua, by request id: one hold (the newest, as a release
-- drops) goes only when the reader holds, the attempt reached Redis and
-- the reader's hold began with that attempt or before it (the request
-- ids' "<field>:first", which read_acquire writes when a hold begins: the
-- owner's first, or one after its newest ran out). A hold begun after the
-- attempt stays. When it was the reader's last, the lock follows the
-- readers left, or is deleted and the release published, as
-- read_release does.
--@include lib/rw.lua
--@include lib/rw_release.lua
--@include lib/read_end.lua
if not n then return nil end
--@include lib/rw_undo.lua
if n == 1 then
  local e = may_publish(ARGV[4], ARGV[5])
  if e then return e end
end
redis.call('del', ARGV[6] .. ARGV[3] .. ':rwlock_timeout:' .. n)
if n > 1 then
  redis.call('hset', KEYS[1], ARGV[3], n - 1)
  note(ARGV[7], ARGV[3], ARGV[9], tonumber(ARGV[2]))
  return {n - 1, 0}
end
return read_ended(ARGV[7], ARGV[6], ARGV[4], ARGV[5])
