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
local req = ARGV[11]
--@include lib/release_hold.lua
local e = may_publish(ARGV[5], ARGV[6])
if e then return e end
-- no marker, nobody queued: freed as release frees it
if not v[4] then
  local heard = redis.call(ARGV[5], ARGV[6], ARGV[1])
  redis.call('del', KEYS[1])
  return {0, heard}
end
-- the hash goes (a DEL costs less than an HDEL of the owner's fields);
-- lib/fair_end.lua writes the marker back with the next owner
redis.call('del', KEYS[1])
local q, fencing, fence, me = ARGV[7], ARGV[8], ARGV[9], ARGV[10]
local pub, chan, marked = ARGV[5], ARGV[6], v[4]
--@include lib/fair_end.lua
