-- lib/rw.lua -- what every read-write lock script shares.
--
-- The layout is Redisson's RReadWriteLock: the lock key <name> is a hash
-- whose "mode" is "read" or "write"; each reader owner has its field
-- "<client-uuid>:<owner-tag>" = its holds, a writer
-- "<client-uuid>:<owner-tag>:write" = its holds. Read hold n of a reader
-- also has its own key <base><field>:rwlock_timeout:<n> (base:
-- "{<name>}:") with that hold's lease, so that a reader that dies frees
-- its share when its lease runs out while other readers go on; the lock
-- key lives at least as long as its longest hold. Releases publish on
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
-- live_holder(base, rids)  the PTTL of a live holder (-1: no expiry; a
--   writer's field is live, with the lock's), or nil when none is left.
--   A reader's field is live while its newest hold's key is; the fields
--   of readers whose every hold expired that it meets are dropped. It
--   stops at the first live holder (HSCAN, a chunk at a time), so that a
--   reader leaving or a writer asking costs the same beside one reader or
--   a thousand; dead readers behind a live one are dropped when no live
--   one is left (their holds are gone, so they keep nobody out but the
--   key, which lives until its longest hold would have ended).
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
local function live_holder(base, rids)
  local cursor = '0'
  repeat
    local r = redis.call('hscan', KEYS[1], cursor, 'COUNT', 50)
    cursor = r[1]
    local f = r[2]
    for i = 1, #f, 2 do
      local k = f[i]
      if string.find(k, ':write$') then return redis.call('pttl', KEYS[1]) end
      if k ~= 'mode' then
        local c = tonumber(f[i + 1]) or 0
        local p = -2
        if c > 0 then
          p = redis.call('pttl', base .. k .. ':rwlock_timeout:' .. c)
        end
        if p ~= -2 then return p end
        forget(rids, k)
      end
    end
  until cursor == '0'
  return nil
end
