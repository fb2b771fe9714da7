-- lib/sem_kind.lua -- what every semaphore script starts with.
--
-- Counting semaphore (RSemaphore): the key <name> holds the permits
-- available as a number; a release adds to it and publishes the new
-- number on "redisson_sc:{<name>}". Its permits have no owner: to apply
-- a resent request once, the last request id applied by each handle is
-- kept in the hash "hilock_rid:{<name>}" for a while (rid_ttl ms: longer
-- than any request can be resent).
--
-- A key of another kind (a lock's hash) is refused and left as it is
-- (WRONGKIND, see kind.lua). Sets the local kv: the counter's value, or
-- false when there is none.
--@include lib/kind.lua
local kv = redis.pcall('get', KEYS[1])
if type(kv) == 'table' then
  return other_kind(KEYS[1], 'semaphore') or kv
end
