-- fair_leave -- a fair wait cancelled or timed out leaves the queue.
--
-- keys: 3..4
-- args: 8
--
-- KEYS[1..4]  as for fair_acquire
-- ARGV[1]  owner field
-- ARGV[2]  the queue's name
-- ARGV[3]  "1" to issue fencing tokens
-- ARGV[4]  the fencing counter's name
-- ARGV[5]  publish command
-- ARGV[6]  the lock's channel
-- ARGV[7]  the release message
-- ARGV[8]  the wait id that gave up
--
-- Replies: 1 when it passed a hand-off on, else 0. It removes the
-- owner's entry, and passes on a hand-off to that wait that raced the
-- giving up (the hold it got: the lock moves on when the owner holds
-- nothing else). Sent again, it finds nothing more to do.
--@include lib/fair.lua
local own = KEYS[3]
local mine = redis.call('hget', own, ARGV[1])
if mine then
  redis.call('lrem', ARGV[2], 1, mine)
  redis.call('hdel', own, ARGV[1])
  -- the last entry out takes the queue's marker with it
  if redis.call('exists', ARGV[2]) == 0 then
    redis.call('hdel', KEYS[1], 'hilock:queued')
  end
end
local v = redis.call('hmget', KEYS[1], ARGV[1], 'hilock:handed')
if not v[1] or string.match(v[2] or '', ':(%d+)$') ~= ARGV[8] then
  return 0
end
if tonumber(v[1]) > 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
  redis.call('hdel', KEYS[1], 'hilock:handed')
  return 1
end
redis.call('del', KEYS[1])
if not hand(KEYS[1], ARGV[2], own, now_ms(), ARGV[3], ARGV[4], ARGV[5],
            ARGV[6], nil, nil, false) then
  redis.call(ARGV[5], ARGV[6], ARGV[7])
end
return 1
