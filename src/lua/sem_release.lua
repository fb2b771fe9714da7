-- sem_release -- give permits back to a counting semaphore.
--
-- keys: 2
-- args: 7
--
-- KEYS[1]  the counter
-- KEYS[2]  the request ids
-- ARGV[1]  permits
-- ARGV[2]  the request ids' name
-- ARGV[3]  handle
-- ARGV[4]  rid_ttl ms
-- ARGV[5]  publish command
-- ARGV[6]  the channel
-- ARGV[7]  request id
--
-- Replies: {permits available after it, subscribers that heard}. The
-- number goes out before it is written: a PUBLISH that an ACL refuses
-- ends the script before it changed anything. WRONGKIND for another
-- kind's key.
--@include lib/sem_kind.lua
if tonumber(ARGV[7]) <=
    tonumber(redis.call('hget', ARGV[2], ARGV[3]) or '0') then
  return {math.max(tonumber(kv or '0'), 0), 0}
end
local v = tonumber(kv or '0') + tonumber(ARGV[1])
local heard = redis.call(ARGV[5], ARGV[6], v)
redis.call('incrby', KEYS[1], ARGV[1])
redis.call('hset', ARGV[2], ARGV[3], ARGV[7])
redis.call('pexpire', ARGV[2], ARGV[4])
return {math.max(v, 0), heard}
