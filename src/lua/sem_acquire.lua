-- sem_acquire -- take permits of a counting semaphore.
--
-- keys: 2
-- args: 5
--
-- KEYS[1]  the counter
-- KEYS[2]  the request ids "hilock_rid:{<name>}"
-- ARGV[1]  permits
-- ARGV[2]  the request ids' name
-- ARGV[3]  handle (its permit prefix and number)
-- ARGV[4]  rid_ttl ms (how long the request id is kept)
-- ARGV[5]  request id
--
-- Replies: {permits, 0} when taken (a resend applied already gets the
-- same), else -1. WRONGKIND for another kind's key. Layout:
-- lib/sem_kind.lua.
--@include lib/sem_kind.lua
if tonumber(ARGV[5]) <=
    tonumber(redis.call('hget', ARGV[2], ARGV[3]) or '0') then
  return {tonumber(ARGV[1]), 0}
end
if tonumber(redis.call('get', KEYS[1]) or '0') < tonumber(ARGV[1]) then
  return -1
end
redis.call('decrby', KEYS[1], ARGV[1])
redis.call('hset', ARGV[2], ARGV[3], ARGV[5])
redis.call('pexpire', ARGV[2], ARGV[4])
return {tonumber(ARGV[1]), 0}
