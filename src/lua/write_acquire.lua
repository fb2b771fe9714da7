-- write_acquire -- take or re-enter the write side of a read-write lock.
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
-- among readers the PTTL of the one live hold it met (a writer that
-- waits leaves its mark, keeping new readers off); a writer that holds
-- the read lock gets the error "DEADLK". WRONGKIND for another kind's
-- key.
--@include lib/rw.lua
--@include lib/rw_acquire.lua
local live
if mode == 'read' then
  live = live_holder(ARGV[4], ARGV[5])
  if not live then
    redis.call('del', KEYS[1], ARGV[5])
    mode = false
  end
end
local c
if not mode then
  redis.call('hset', KEYS[1], 'mode', 'write', ARGV[2], 1)
  redis.call('pexpire', KEYS[1], lease)
  redis.call('del', ARGV[6])
  -- the hold begins with this request: its id is the hold's first, by
  -- which write_undo.lua tells whether a late attempt's hold is still there
  redis.call('hset', ARGV[5], ARGV[2] .. ':first', ARGV[9])
  c = 1
elseif mode == 'write' and n then
  c = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  longer(KEYS[1], lease)
elseif redis.call('hexists', KEYS[1], ARGV[3]) == 1 then
  return redis.error_reply('DEADLK the owner holds the read lock')
else
  if ARGV[7] == '1' then
    redis.call('set', ARGV[6], ARGV[2], 'px', ARGV[8])
  end
  -- when a live reader's hold may end (a retry then looks again)
  if live and live >= 0 then return live end
  return redis.call('pttl', KEYS[1])
end
note(ARGV[5], ARGV[2], ARGV[9], lease)
return {c, 0}
