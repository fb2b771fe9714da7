-- write_release -- drop write holds of a read-write lock.
--
-- keys: 2
-- args: 9
--
-- KEYS[1]  the lock
-- KEYS[2]  the request ids
-- ARGV[1]  the release message
-- ARGV[2]  lease ms
-- ARGV[3]  owner field
-- ARGV[4]  holds to drop
-- ARGV[5]  publish command
-- ARGV[6]  the channel
-- ARGV[7]  base (of a reader's timeout keys)
-- ARGV[8]  the request ids' name
-- ARGV[9]  request id
--
-- Replies: {holds left, subscribers that heard the release} (0 for the
-- second when the lock is still held), or nil when the owner holds
-- nothing. WRONGKIND for another kind's key, left as it is. A release
-- that may publish asks the ACL first and publishes before it deletes:
-- one that the ACL refuses changes nothing.
--
-- A writer that leaves readers behind (it took the read lock too) hands
-- the lock over to them: mode "read".
--@include lib/rw.lua
--@include lib/rw_release.lua
--@include lib/write_end.lua
if not n or mode ~= 'write' then return nil end
n = tonumber(n)
if applied(ARGV[8], ARGV[3], ARGV[9]) then return {n, 0} end
local c = math.max(n - tonumber(ARGV[4]), 0)
if c > 0 then
  redis.call('hset', KEYS[1], ARGV[3], c)
  note(ARGV[8], ARGV[3], ARGV[9], tonumber(ARGV[2]))
  longer(KEYS[1], tonumber(ARGV[2]))
  return {c, 0}
end
return write_ended(ARGV[8], ARGV[5], ARGV[6])
