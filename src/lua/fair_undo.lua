-- fair_undo -- fair mode: drop the hold an acquire attempt took, if it is
-- still there, and hand the lock on when that ends it.
--
-- keys: 3..4
-- args: 10
--
-- KEYS[1..4]  as for fair_acquire
-- ARGV[1]  the release message
-- ARGV[2]  owner field
-- ARGV[3]  publish command
-- ARGV[4]  the lock's channel
-- ARGV[5]  the queue's name
-- ARGV[6]  "1" to issue fencing tokens
-- ARGV[7]  the fencing counter's name
-- ARGV[8]  the caller's listener
-- ARGV[9]  the request id of the acquire attempt to undo
-- ARGV[10] request id (of this undo)
--
-- Replies: as fair_release: {holds left, 0} when a hold remains (or
-- nothing was the attempt's), nil when the owner holds nothing; when the
-- attempt's hold was the last, the lock goes to the first live entry of
-- the queue as a fair release hands it ({0, 0, 0}, or the hand-off to
-- the caller's own client, {0, 0, owner tag, wait id, token, sent,
-- span}), else it is deleted and the release published ({0,
-- subscribers}). WRONGKIND for another kind's key, left as it is.
--
-- As undo.lua, by request id: one hold is dropped only when the owner
-- holds, the attempt reached Redis (the last id applied is not below
-- it) and the owner's hold began with that attempt or before it
-- ("<owner field>:first:rid", which fair_acquire writes on a fresh take
-- and on a claim). A hold without that field began with a hand-off that
-- no attempt claimed: it is not the attempt's, and stays. So does a hold
-- begun after the attempt (by a retry, or a hand-off claimed later): a
-- late attempt's undo never takes back a hold reported since. A resend
-- drops nothing a second time (its id, as for release).
--
-- Only a successful attempt is undone, and a success leaves no queue
-- entry of its own (a fresh take pops the caller's entry, a hand-off
-- popped it), so the queue is not touched but to hand the lock on.
--@include lib/may_publish.lua
local own, attempt, req = ARGV[2], tonumber(ARGV[9]), ARGV[10]
local rid, unfirst = own .. ':rid', math.huge
local v = redis.pcall('hmget', KEYS[1], own, rid, own .. ':first:rid', 'mode')
--@include lib/undo_hold.lua
local e = may_publish(ARGV[3], ARGV[4])
if e then return e end
redis.call('del', KEYS[1])
local q, fencing, fence, me = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local pub, chan, marked = ARGV[3], ARGV[4], false
--@include lib/fair_end.lua
