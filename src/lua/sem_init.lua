-- sem_init -- set a semaphore's permits unless they are set.
--
-- keys: 2
-- args: 4
--
-- KEYS[1]  the counter
-- KEYS[2]  the permits' sorted set "{<name>}:timeout"
-- ARGV[1]  the same sorted set's name
-- ARGV[2]  publish command
-- ARGV[3]  the channel
-- ARGV[4]  permits
--
-- Replies: 1 when the permits were set, 0 when some were set already.
--@include lib/permit.lua
if kv then return 0 end
redis.call(ARGV[2], ARGV[3], ARGV[4])
redis.call('set', KEYS[1], ARGV[4])
return 1
