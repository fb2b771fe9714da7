-- undo -- drop the hold an acquire attempt took, if it is still there.
--
-- keys: 1
-- args: 6
--
-- KEYS[1]  the lock
-- ARGV[1]  the release message
-- ARGV[2]  owner field
-- ARGV[3]  "publish" or "spublish"
-- ARGV[4]  the lock's channel
-- ARGV[5]  the request id of the acquire attempt to undo
-- ARGV[6]  request id (of this undo)
--
-- Replies: as release: {holds left, subscribers}, nil when the owner
-- holds nothing; a resend drops nothing a second time (its id, as for
-- release). Another kind's key is refused (WRONGKIND) and left as it is.
--
-- It drops one hold when: the owner holds; the attempt reached Redis
-- (the last id applied is not below it: a client's requests arrive in id
-- order); and the owner's hold began with that attempt or before it
-- ("<owner field>:first:rid"; a hash without the field, written by
-- another script or an earlier version, counts as begun before). A hold
-- that began after the attempt is a later one's (the attempt's own ran
-- out, or was released, in between): nothing is dropped. So it also
-- serves an attempt whose reply was lost with its connection. The lease
-- stays as it is: it belongs to the holds that remain.
local rid = ARGV[2] .. ':rid'
local v = redis.pcall('hmget', KEYS[1], ARGV[2], rid,
                      ARGV[2] .. ':first:rid', 'mode', 'hilock:queued')
if v.err or v[4] then
  --@include lib/kind.lua
  return other_kind(KEYS[1], 'lock') or v
end
if not v[1] then return nil end
local n = tonumber(v[1])
local last = tonumber(v[2] or '0')
if tonumber(ARGV[6]) <= last or last < tonumber(ARGV[5]) or
   tonumber(v[3] or '0') > tonumber(ARGV[5]) then
  return {n, 0}
end
if n > 1 then
  redis.call('hset', KEYS[1], ARGV[2], n - 1, rid, ARGV[6])
  return {n - 1, 0}
end
local heard = redis.call(ARGV[3], ARGV[4], ARGV[1])
if v[5] then
  -- waiters queue: the marker stays, as release.lua leaves it
  redis.call('hdel', KEYS[1], ARGV[2], rid, ARGV[2] .. ':first:rid',
             'hilock:handed')
  redis.call('pexpire', KEYS[1], 5000)
else
  redis.call('del', KEYS[1])
end
return {0, heard}
