-- fair_release -- drop holds of a fair lock; the last one hands it on.
--
-- keys: 3..4
-- args: 11
--
-- KEYS[1..4]  as for fair_acquire
-- ARGV[1..6]  as for release
-- ARGV[7]  the queue's name
-- ARGV[8]  "1" to issue fencing tokens
-- ARGV[9]  the fencing counter's name
-- ARGV[10] the caller's listener
-- ARGV[11] request id
--
-- Replies: as release, but the owner's last hold goes to the first live
-- entry of the queue (lib/fair.lua) when there is one: then {0, 0, 0},
-- or {0, 0, owner tag, wait id, token, sent, span} (as in the message)
-- when that waiter is the caller's client's, which delivers the hand-off
-- itself without waiting for the message. With no live entry, or a turn
-- of the waiters without fair mode, the lock is deleted and the release
-- published, as release. A hash without the queue's marker has nobody
-- queued (lib/fair.lua): its last hold is freed as release frees it, at
-- its cost.
--@include lib/may_publish.lua
local rid = ARGV[3] .. ':rid'
local v = redis.pcall('hmget', KEYS[1], ARGV[3], rid, 'mode', 'hilock:queued')
if v.err or v[3] then
  --@include lib/kind.lua
  return other_kind(KEYS[1], 'lock') or v
end
if not v[1] then return nil end
if tonumber(ARGV[11]) <= tonumber(v[2] or '0') then
  return {tonumber(v[1]), 0}
end
local n = tonumber(v[1]) - tonumber(ARGV[4])
if n > 0 then
  redis.call('hset', KEYS[1], ARGV[3], n, rid, ARGV[11])
  redis.call('pexpire', KEYS[1], ARGV[2])
  return {n, 0}
end
local e = may_publish(ARGV[5], ARGV[6])
if e then return e end
-- no marker, nobody queued: freed as release frees it
if not v[4] then
  local heard = redis.call(ARGV[5], ARGV[6], ARGV[1])
  redis.call('del', KEYS[1])
  return {0, heard}
end
-- the owner's fields go, the marker stays for the queue
redis.call('hdel', KEYS[1], ARGV[3], rid, ARGV[3] .. ':first:rid',
           'hilock:handed')
--@include lib/fair.lua
local h = hand(KEYS[1], ARGV[7], KEYS[3], now_ms(), ARGV[8], ARGV[9],
               ARGV[5], ARGV[6], ARGV[10], nil, true)
if not h then return {0, redis.call(ARGV[5], ARGV[6], ARGV[1])} end
if type(h) == 'number' then return {0, h} end
if h[1] == ARGV[10] then return {0, 0, h[2], h[3], h[4], h[5], h[6]} end
return {0, 0, 0}
