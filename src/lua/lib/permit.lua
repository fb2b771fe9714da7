-- lib/permit.lua -- what every expiring-permit script starts with.
--
-- Expiring permits (RPermitExpirableSemaphore): the counter of
-- sem_kind.lua, and the sorted set "{<name>}:timeout" of the permits
-- taken, each a 16-byte id scored by the unix time in ms (the server's
-- clock) at which it expires. An expired permit goes back to the counter
-- the next time anyone takes, counts or initialises (Redisson does the
-- same), and that is published. A permit's id is fixed for one acquire:
-- a resent acquire finds it taken and applies nothing more.
--
-- Sets the local now, the server's clock in ms, and gives back the
-- expired permits (published first, so that a PUBLISH an ACL refuses
-- changes nothing). It reads KEYS[1] the counter, ARGV[1] the sorted set
-- (declared as KEYS[2]), ARGV[2] the publish command, ARGV[3] the
-- channel.
--@include lib/sem_kind.lua
local t = redis.call('time')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local gone = redis.call('zrangebyscore', ARGV[1], 0, now)
if #gone > 0 then
  redis.call(ARGV[2], ARGV[3], tonumber(kv or '0') + #gone)
  for i = 1, #gone, 1000 do
    redis.call('zrem', ARGV[1],
               unpack(gone, i, math.min(i + 999, #gone)))
  end
  kv = redis.call('incrby', KEYS[1], #gone)
end
