-- lib/kind.lua -- kinds refuse each other's keys (Redisson's layouts).
--
-- other_kind(k, mine): nil when key k is free or of kind mine, else the
-- error reply "WRONGKIND <kind found>" (HILOCK_EWRONGKIND), the kind as
-- "lock", "rwlock" or "semaphore". A hash without a "mode" field is a
-- lock, one with it a read-write lock, a number a semaphore. A key of no
-- lock kind (a list, a string that is no number) is nil too, left to the
-- command that meets it (WRONGTYPE). Scripts call it where a key is not
-- what they expect, not on their common path, and include it inside that
-- branch: a definition costs Redis on every call that runs it.
local function other_kind(k, mine)
  local t, found = redis.call('type', k).ok, nil
  if t == 'hash' then
    found = redis.call('hexists', k, 'mode') == 1 and 'rwlock' or 'lock'
  elseif t == 'string' and
         string.find(redis.call('get', k), '^%-?%d+$') then
    found = 'semaphore'
  end
  if not found or found == mine then return nil end
  return redis.error_reply('WRONGKIND ' .. found)
end
