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
local rid = ARGV[2] .. ':rid'
local v = redis.pcall('hmget', KEYS[1], ARGV[2], rid,
                      ARGV[2] .. ':first:rid', 'mode')
if v.err or v[4] then
  --@include lib/kind.lua
  return other_kind(KEYS[1], 'lock') or v
end
if not v[1] then return nil end
local n = tonumber(v[1])
local last = tonumber(v[2] or '0')
local attempt = tonumber(ARGV[9])
if tonumber(ARGV[10]) <= last or last < attempt or not v[3] or
   tonumber(v[3]) > attempt then
  return {n, 0}
end
if n > 1 then
  redis.call('hset', KEYS[1], ARGV[2], n - 1, rid, ARGV[10])
  return {n - 1, 0}
end
local e = may_publish(ARGV[3], ARGV[4])
if e then return e end
redis.call('del', KEYS[1])
--@include lib/fair.lua
local h = hand(KEYS[1], ARGV[5], KEYS[3], now_ms(), ARGV[6], ARGV[7],
               ARGV[3], ARGV[4], ARGV[8], nil, false)
if not h then return {0, redis.call(ARGV[3], ARGV[4], ARGV[1])} end
if type(h) == 'number' then return {0, h} end
if h[1] == ARGV[8] then return {0, 0, h[2], h[3], h[4], h[5], h[6]} end
return {0, 0, 0}
