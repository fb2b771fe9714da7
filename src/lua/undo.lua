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
local own, attempt, req, unfirst = ARGV[2], tonumber(ARGV[5]), ARGV[6], '0'
local rid = own .. ':rid'
local v = redis.pcall('hmget', KEYS[1], own, rid, own .. ':first:rid', 'mode',
                      'hilock:queued')
--@include lib/undo_hold.lua
local pub, chan, queued = ARGV[3], ARGV[4], v[5]
--@include lib/lock_end.lua
