-- query -- ask about a lock: held by the owner, its holds, its lease.
--
-- keys: 1
-- args: 3
--
-- KEYS[1]  the lock
-- ARGV[1]  "held", "count" or "ttl"
-- ARGV[2]  owner field
-- ARGV[3]  the kind asked about: "lock" or "rwlock"
--
-- Replies: what HEXISTS, HGET or PTTL of the key would (1 or 0; the holds
-- or nil; the PTTL), or WRONGKIND for a key of another kind: a lock's
-- owner field and a reader's are named alike.
--@include lib/kind.lua
local v = redis.pcall('hmget', KEYS[1], ARGV[2], 'mode')
if v.err or ((v[2] and 'rwlock' or 'lock') ~= ARGV[3] and
             redis.call('exists', KEYS[1]) == 1) then
  return other_kind(KEYS[1], ARGV[3]) or v
end
if ARGV[1] == 'held' then return v[1] and 1 or 0 end
if ARGV[1] == 'count' then return v[1] end
return redis.call('pttl', KEYS[1])
