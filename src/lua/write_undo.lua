-- write_undo -- drop the write hold an acquire attempt took, if it is
-- still there.
--
-- keys: 2
-- args: 9
--
-- KEYS[1]  the lock
-- KEYS[2]  the request ids "hilock_rid:{<name>}"
-- ARGV[1]  the release message
-- ARGV[2]  lease ms (how long the request id is kept at least)
-- ARGV[3]  the writer's owner field (ends ":write")
-- ARGV[4]  publish command
-- ARGV[5]  the channel
-- ARGV[6]  base (not used here: read_undo.lua's layout)
-- ARGV[7]  the request ids' name
-- ARGV[8]  the request id of the acquire attempt to undo
-- ARGV[9]  request id (of this undo)
--
-- Replies: as write_release: {holds left, subscribers that heard the
-- release} (0 for the second while the lock is held), or nil when the
-- writer holds nothing. WRONGKIND for another kind's key, left as it is.
--
-- As undo.lua, by request id: one hold is dropped only when the writer
-- holds, the attempt reached Redis (the last id applied, kept in the
-- request ids, is not below it) and the writer's hold began with that
-- attempt or before it (the request ids' "<field>:first", which
-- write_acquire writes when a hold begins; a hold without it was begun
-- by no attempt this script knows, and stays). A hold begun after the
-- attempt (its own ran out, a retry took the lock afresh) stays. The
-- lease stays as it is. A resend drops nothing a second time.
--@include lib/rw.lua
--@include lib/rw_release.lua
--@include lib/write_end.lua
if not n or mode ~= 'write' then return nil end
--@include lib/rw_undo.lua
if n > 1 then
  redis.call('hset', KEYS[1], ARGV[3], n - 1)
  note(ARGV[7], ARGV[3], ARGV[9], tonumber(ARGV[2]))
  return {n - 1, 0}
end
return write_ended(ARGV[7], ARGV[4], ARGV[5])
