-- renew -- the watchdog's batch: extend the leases of many holds at once.
--
-- keys: 0..2
-- args: 2..
--
-- KEYS     none; or, for a call about one lock that a cluster must
--          route, KEYS[1] its key (the permits' sorted set for a permit)
--          and, for a reader, KEYS[2] its first hold's key (unread here)
-- ARGV[1]  lease ms (0: only check)
-- ARGV[2]  deadline: the server's unix time in ms after which the sender
--          has given these locks up (0: none)
-- ARGV[3..] per lock its type and keys:
--   "m" <lock> <field>           a lock: the field held, the lease set
--   "w" <lock> <field>           a writer: the same, the lease never cut
--                                short (readers may share the key)
--   "r" <lock> <field> <base>    a reader: its newest hold's timeout key
--                                <base><field>:rwlock_timeout:<n> alive,
--                                every one of its holds' keys renewed
--   "p" <sorted set> <permit>    an expiring permit: not expired, its
--                                expiry moved to now + lease
--
-- Replies: one digit per lock, in one string (one reply object for the
-- whole batch, not one per lock): 1 held (lease reset), 0 not held by
-- that owner, 2 not known here (a cluster node that does not serve the
-- key); or the integer -1, with nothing changed, when the deadline has
-- passed: a renewal held up in a stall must not revive a lock its owner
-- has already reported lost.
--
-- No declared keys: a cluster master renews all the locks it holds, of
-- many slots, in one call. A lock that a master says it does not serve
-- goes again alone, its key declared, which the cluster redirects to
-- where the key is (ASK during a migration). A key that now holds
-- another type or kind (a lock's field in a read-write hash, whose
-- "mode" says so, or the other way round) is just not held, and is left
-- alone; it does not fail the other locks of the batch.
local now
local function clock()
  if not now then
    local t = redis.call('time')
    now = t[1] * 1000 + math.floor(t[2] / 1000)
  end
  return now
end
if ARGV[2] ~= '0' and clock() > tonumber(ARGV[2]) then return -1 end
local lease = tonumber(ARGV[1])
local function longer(k)
  if lease > 0 and redis.call('pttl', k) < lease then
    redis.call('pexpire', k, lease)
  end
end
local function shared(t, k, f, base)
  if t == 'p' then
    local s = redis.call('zscore', k, f)
    if not s or tonumber(s) <= clock() then return 0 end
    if lease > 0 then redis.call('zadd', k, clock() + lease, f) end
    return 1
  end
  local v = redis.call('hmget', k, f, 'mode')
  if not v[2] then return 0 end
  local c = tonumber(v[1] or '0')
  local top = base .. f .. ':rwlock_timeout:'
  if c < 1 or redis.call('exists', top .. c) == 0 then return 0 end
  if lease > 0 then
    for j = 1, c do redis.call('pexpire', top .. j, lease) end
  end
  longer(k)
  return 1
end
local function failed(e)
  e = type(e) == 'table' and (e.err or '') or tostring(e)
  return string.find(e, 'WRONGTYPE') and 0 or 2
end
local r = {}
local i = 3
while i <= #ARGV do
  local t, k, f = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  if t == 'm' or t == 'w' then
    local h = redis.pcall('hmget', k, f, 'mode')
    if h.err then
      r[#r + 1] = failed(h)
    elseif h[1] and ((t == 'm' and not h[2]) or
                     (t == 'w' and h[2] == 'write')) then
      if t == 'w' then
        longer(k)
      elseif lease > 0 then
        redis.call('pexpire', k, lease)
      end
      r[#r + 1] = 1
    else
      r[#r + 1] = 0
    end
  else
    local ok, v = pcall(shared, t, k, f, ARGV[i + 3])
    r[#r + 1] = ok and v or failed(v)
  end
  i = i + (t == 'r' and 4 or 3)
end
return table.concat(r)
