-- multi_acquire -- MultiLock: take several locks of one owner, all or none.
--
-- keys: 1..
-- args: 3
--
-- KEYS[1..n]  the locks
-- ARGV[1]  lease ms
-- ARGV[2]  owner field
-- ARGV[3]  request id (as for acquire)
--
-- Replies: {-1, i, pttl} when lock KEYS[i + 1] is held by another owner
-- (nothing taken), else {1} with one more hold on every lock, in one
-- atomic step. A resend of an attempt already applied (its id is not
-- above the one kept with the first lock) takes nothing more. A key of
-- another kind refuses the whole (WRONGKIND).
--@include lib/kind.lua
local rid = ARGV[2] .. ':rid'
for i = 1, #KEYS do
  local v = redis.pcall('hmget', KEYS[i], ARGV[2], 'mode')
  if v.err or v[2] then return other_kind(KEYS[i], 'lock') or v end
  if not v[1] and redis.call('exists', KEYS[i]) == 1 then
    return {-1, i - 1, redis.call('pttl', KEYS[i])}
  end
end
if tonumber(ARGV[3]) <= tonumber(redis.call('hget', KEYS[1], rid) or '0') then
  return {1}
end
for i = 1, #KEYS do
  redis.call('hincrby', KEYS[i], ARGV[2], 1)
  redis.call('hset', KEYS[i], rid, ARGV[3])
  redis.call('pexpire', KEYS[i], ARGV[1])
end
return {1}
