-- read_acquire -- take or re-enter the read side of a read-write lock.
--
-- keys: 3
-- args: 9
--
-- KEYS[1]  the lock
-- KEYS[2]  the request ids "hilock_rid:{<name>}"
-- KEYS[3]  the waiting writer's mark
-- ARGV[1]  lease ms
-- ARGV[2]  owner field (a writer's ends ":write")
-- ARGV[3]  the same owner's field on the other side
-- ARGV[4]  base (of a reader's timeout keys)
-- ARGV[5]  the request ids' name
-- ARGV[6]  the waiting writer's mark's name
-- ARGV[7]  "1" when the acquire waits
-- ARGV[8]  how long a waiting writer's mark lasts (ms)
-- ARGV[9]  request id
--
-- Replies: {holds, 0} when taken or re-entered, else the lock's PTTL, or
-- the writer's mark's for a reader kept off by it. WRONGKIND for another
-- kind's key. Layout and companions: lib/rw.lua.
--@include lib/rw.lua
--@include lib/rw_acquire.lua
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return redis.call('pttl', KEYS[1])
end
if not n and mode ~= 'write' then
  local w = redis.call('pttl', ARGV[6])
  if w ~= -2 then return math.max(redis.call('pttl', KEYS[1]), w) end
end
if not mode then redis.call('hset', KEYS[1], 'mode', 'read') end
local c = redis.call('hincrby', KEYS[1], ARGV[2], 1)
-- a hold that begins here (the owner's first, or one after its newest
-- ran out) keeps this request's id as its first (read_undo.lua)
if c == 1 or redis.call('exists', ARGV[4] .. ARGV[2] .. ':rwlock_timeout:' ..
                        (c - 1)) == 0 then
  redis.call('hset', ARGV[5], ARGV[2] .. ':first', ARGV[9])
end
redis.call('set', ARGV[4] .. ARGV[2] .. ':rwlock_timeout:' .. c, 1,
           'px', lease)
longer(KEYS[1], lease)
note(ARGV[5], ARGV[2], ARGV[9], lease)
return {c, 0}
