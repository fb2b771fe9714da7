-- lib/rw.lua -- what every read-write lock script shares.
--
-- The layout is Redisson's RReadWriteLock: the lock key <name> is a hash
-- whose "mode" is "read" or "write"; each reader owner has its field
-- "<client-uuid>:<owner-tag>" = its holds, a writer
-- "<client-uuid>:<owner-tag>:write" = its holds. Read hold n of a reader
-- also has its own key <base><field>:rwlock_timeout:<n> (base:
-- "{<name>}:") with that hold's lease, so that a reader that dies frees
-- its share when its lease runs out while other readers go on; the lock
-- key lives as long as its longest hold. Releases publish on
-- "redisson_rwlock:{<name>}": "1" from a writer (every reader may go),
-- "0" from a reader.
--
-- hilock's own keys beside it: the request ids applied per owner field,
-- "hilock_rid:{<name>}" (a hash, gone with the lock), which make a resent
-- acquire or release apply once (Redisson's hash must hold nothing but
-- "mode" and holders: its readers count every other field as one); and a
-- waiting writer's mark, "hilock_rwlock_writer:{<name>}", which keeps new
-- readers off for a short time that the writer's retries renew: readers
-- then cannot starve it (readers already holding still re-enter).
--
-- Every script declares the lock key, then the request ids and the
-- writer's mark it reads from ARGV; a reader's timeout keys are named
-- inside the scripts, in the lock's slot.
--
-- On the lock KEYS[1] and the request ids rids:
-- longer(k, ms)  makes key k live at least ms;
-- applied(rids, f, rid)  whether owner f's request rid was applied
--   already;
-- note(rids, f, rid, ms)  records that f's request rid was applied (kept
--   ms at least);
-- forget(rids, f)  removes owner f, its holds and its request ids (the
--   last applied; the first of its hold, see read_acquire.lua and
--   write_acquire.lua);
-- prune(base, rids, most)  drops the fields of readers whose every hold
--   expired (a reader's field is alive while its newest hold's key is; a
--   writer's always); returns how many holders are left, and, when given
--   most (a number), the longest PTTL among their holds and most. One
--   pass: a release that leaves readers reads each hold's PTTL once, not
--   an EXISTS and then a PTTL of each in a second pass.
--@include lib/kind.lua
--@include lib/may_publish.lua
local function longer(k, ms)
  if redis.call('pttl', k) < ms then redis.call('pexpire', k, ms) end
end
local function applied(rids, f, rid)
  return tonumber(rid) <= tonumber(redis.call('hget', rids, f) or '0')
end
local function note(rids, f, rid, ms)
  redis.call('hset', rids, f, rid)
  longer(rids, ms)
end
local function forget(rids, f)
  redis.call('hdel', KEYS[1], f)
  redis.call('hdel', rids, f, f .. ':first')
end
local function prune(base, rids, most)
  local f = redis.call('hgetall', KEYS[1])
  local live = 0
  for i = 1, #f, 2 do
    if f[i] ~= 'mode' then
      local top = base .. f[i] .. ':rwlock_timeout:'
      local c = tonumber(f[i + 1]) or 0
      local p = -2
      if c > 0 and most then
        p = redis.call('pttl', top .. c)
      elseif c > 0 and redis.call('exists', top .. c) == 1 then
        p = -1
      end
      if p ~= -2 or string.find(f[i], ':write$') then
        live = live + 1
        if most then
          most = math.max(most, p)
          for j = 1, c - 1 do
            most = math.max(most, redis.call('pttl', top .. j))
          end
        end
      else
        forget(rids, f[i])
      end
    end
  end
  return live, most
end
