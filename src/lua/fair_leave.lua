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
-- owner's entry (in the middle of the list it is left behind for the
-- pops to pass over, see lib/fair.lua: no scan), and passes on a
-- hand-off to that wait that raced the giving up (the hold it got: the
-- lock moves on when the owner holds nothing else). Sent again, it finds
-- nothing more to do.
local own, q = KEYS[3], ARGV[2]
local v = redis.call('hmget', KEYS[1], ARGV[1], 'hilock:handed',
                     'hilock:queued')
local mine = redis.call('hget', own, ARGV[1])
if mine then
  redis.call('hdel', own, ARGV[1])
  local left = redis.call('hlen', own)
  if left == 0 then
    -- the last waiter out takes the list (what is left behind) and the
    -- queue's marker with it
    redis.call('del', q)
    redis.call('hdel', KEYS[1], 'hilock:queued')
  elseif redis.call('lindex', q, -1) == mine then
    redis.call('rpop', q)
  elseif redis.call('lindex', q, 0) == mine then
    redis.call('lpop', q)
  else
    -- left behind in the middle: pops look at the owners hash now
    if v[3] and string.byte(v[3]) == 110 then
      redis.call('hset', KEYS[1], 'hilock:queued', '1')
    end
    if redis.call('llen', q) > 2 * left + 16 then
      -- when such entries outnumber the live ones the list is written
      -- again without them: at most once per as many leaves as entries
      local live, keep = {}, {}
      local all = redis.call('hgetall', own)
      for i = 2, #all, 2 do live[all[i]] = true end
      for _, e in ipairs(redis.call('lrange', q, 0, -1)) do
        if live[e] or string.sub(e, 1, 6) == 'plain:' then
          keep[#keep + 1] = e
        end
      end
      local ttl = redis.call('pttl', q)
      redis.call('del', q)
      for i = 1, #keep, 1000 do
        redis.call('rpush', q, unpack(keep, i, math.min(i + 999, #keep)))
      end
      if ttl > 0 then redis.call('pexpire', q, ttl) end
    end
  end
end
if not v[1] or string.match(v[2] or '', ':(%d+)$') ~= ARGV[8] then
  return 0
end
if tonumber(v[1]) > 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
  redis.call('hdel', KEYS[1], 'hilock:handed')
  return 1
end
redis.call('del', KEYS[1])
--@include lib/fair.lua
if not hand(KEYS[1], q, own, now_ms(), ARGV[3], ARGV[4], ARGV[5],
            ARGV[6], nil, nil, false) then
  redis.call(ARGV[5], ARGV[6], ARGV[7])
end
return 1
