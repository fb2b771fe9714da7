-- release -- drop holds of a lock; the last one frees it.
--
-- keys: 1
-- args: 7
--
-- KEYS[1]  the lock
-- ARGV[1]  the release message
-- ARGV[2]  lease ms, set again when holds remain
-- ARGV[3]  owner field
-- ARGV[4]  holds to drop
-- ARGV[5]  "publish" or "spublish" (sharded pub/sub in a cluster)
-- ARGV[6]  the lock's channel
-- ARGV[7]  request id
--
-- Replies: {holds left, subscribers that received the release message}
-- (the message goes out when no hold is left), or nil when the owner
-- holds nothing. A key of another kind is refused (WRONGKIND) and left
-- as it is.
--
-- A resend of a release that was applied and left holds finds its id in
-- the hash (see acquire.lua) and drops nothing more; one that ended the
-- hold finds nothing and returns nil, which the client, knowing it sent
-- it twice, takes as done. The owner's last hold deletes the whole hash:
-- a lock has one owner. Nothing is left behind. Three calls, as acquire.
-- The message goes out before the delete: a PUBLISH that an ACL refuses
-- ends the script before it wrote anything. While waiters queue on the
-- name (the marker "hilock:queued", lib/fair.lua) only the owner's
-- fields go: the marker keeps the name from being taken past them, and
-- the waiters that the message wakes serve the first in line.
local rid = ARGV[3] .. ':rid'
local v = redis.pcall('hmget', KEYS[1], ARGV[3], rid, 'mode', 'hilock:queued')
if v.err or v[3] then
  --@include lib/kind.lua
  return other_kind(KEYS[1], 'lock') or v
end
if not v[1] then return nil end
if tonumber(ARGV[7]) <= tonumber(v[2] or '0') then
  return {tonumber(v[1]), 0}
end
local n = tonumber(v[1]) - tonumber(ARGV[4])
if n > 0 then
  redis.call('hset', KEYS[1], ARGV[3], n, rid, ARGV[7])
  redis.call('pexpire', KEYS[1], ARGV[2])
  return {n, 0}
end
local heard = redis.call(ARGV[5], ARGV[6], ARGV[1])
if v[4] then
  -- waiters queue: the marker stays, for the first of them (see above)
  redis.call('hdel', KEYS[1], ARGV[3], rid, ARGV[3] .. ':first:rid',
             'hilock:handed')
  redis.call('pexpire', KEYS[1], 5000)
else
  redis.call('del', KEYS[1])
end
return {0, heard}
