-- permit_release -- give one expiring permit back.
--
-- keys: 2
-- args: 5
--
-- KEYS[1]  the counter
-- KEYS[2]  the permits' sorted set "{<name>}:timeout"
-- ARGV[1]  the same sorted set's name
-- ARGV[2]  publish command
-- ARGV[3]  the channel
-- ARGV[4]  permit id
-- ARGV[5]  request id (not used)
--
-- Replies: {0, subscribers that heard}, or nil when the permit was not
-- taken (released already, or expired and given back).
--@include lib/permit.lua
if not redis.call('zscore', ARGV[1], ARGV[4]) then return nil end
local heard = redis.call(ARGV[2], ARGV[3], tonumber(kv or '0') + 1)
redis.call('zrem', ARGV[1], ARGV[4])
redis.call('incr', KEYS[1])
return {0, heard}
