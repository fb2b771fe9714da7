-- permit_acquire -- take one expiring permit.
--
-- keys: 2
-- args: 6
--
-- KEYS[1]  the counter
-- KEYS[2]  the permits' sorted set "{<name>}:timeout"
-- ARGV[1]  the same sorted set's name
-- ARGV[2]  publish command
-- ARGV[3]  the channel
-- ARGV[4]  permit id (16 bytes)
-- ARGV[5]  lease ms
-- ARGV[6]  request id (not used: the permit id makes it idempotent)
--
-- Replies: {1, 0} when taken (or taken already by this very acquire),
-- else the ms until the first permit taken expires, -1 when none is
-- taken. Layout: lib/permit.lua.
--@include lib/permit.lua
if redis.call('zscore', ARGV[1], ARGV[4]) then return {1, 0} end
if tonumber(redis.call('get', KEYS[1]) or '0') >= 1 then
  redis.call('decr', KEYS[1])
  redis.call('zadd', ARGV[1], now + tonumber(ARGV[5]), ARGV[4])
  return {1, 0}
end
local first = redis.call('zrange', ARGV[1], 0, 0, 'withscores')
if first[2] then return math.max(tonumber(first[2]) - now, 0) end
return -1
