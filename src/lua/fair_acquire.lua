-- fair_acquire -- take a lock in fair mode: first come, first served.
--
-- keys: 3..4
-- args: 13
--
-- KEYS[1]  the lock
-- KEYS[2]  the fair queue
-- KEYS[3]  its owners hash
-- KEYS[4]  the fencing counter, when tokens are issued
-- ARGV[1]  lease ms
-- ARGV[2]  owner field
-- ARGV[3]  "1" to issue fencing tokens
-- ARGV[4]  the fencing counter's name
-- ARGV[5]  the queue's name
-- ARGV[6]  mode: "w" wait (queue when busy), "r" the same for a retry of
--          a wait that queued (its entry looked up first), "t" try
--          once, "c" claim a hand-off only
-- ARGV[7]  ms the queue entry stays live
-- ARGV[8]  listener (the client's channel tag)
-- ARGV[9]  wait id
-- ARGV[10] publish command
-- ARGV[11] the lock's channel
-- ARGV[12] the sender's monotonic clock in ms (echoed in a hand-off)
-- ARGV[13] request id (as for acquire)
--
-- Replies: {holds, token} or the PTTL, as acquire; while the lock is
-- free during a turn of the waiters without fair mode, what is left of
-- that turn. WRONGKIND for another kind's key.
--
-- The owner's field with the marker of this wait is a hand-off to it:
-- claimed, not counted as a re-entry (the waiter that missed the message
-- gets it so). A free lock is taken only when no live entry is queued
-- before the caller's own and no turn of the waiters without fair mode
-- is on; else it goes to the first live entry (or to such a turn,
-- published as a release), and a waiting caller is queued (once per
-- owner: a second attempt only moves its deadline) and gets the PTTL. A
-- waiter that starts the queue publishes a release (lib/fair.lua). A
-- claim that finds no hold of its owner changes nothing and gets the
-- PTTL. A hold that begins here (a free lock taken, a hand-off claimed)
-- keeps its request id as the first, as acquire does, so that a late
-- attempt's undo leaves it alone.
local f = ARGV[2]
local rid = f .. ':rid'
local v = redis.pcall('hmget', KEYS[1], f, rid, 'hilock:handed', 'mode',
                      'hilock:queued')
if v.err or v[4] then
  --@include lib/kind.lua
  return other_kind(KEYS[1], 'lock') or v
end
if v[1] then
  local ht, hw
  if v[3] then ht, hw = string.match(v[3], '^(%d+):(%d+)$') end
  if hw == ARGV[9] then
    redis.call('hdel', KEYS[1], 'hilock:handed')
    redis.call('hset', KEYS[1], rid, ARGV[13], f .. ':first:rid', ARGV[13])
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {tonumber(v[1]), tonumber(ht)}
  end
  local n = tonumber(v[1])
  if ARGV[6] ~= 'c' and tonumber(ARGV[13]) > tonumber(v[2] or '0') then
    n = n + 1
    redis.call('hset', KEYS[1], f, n, rid, ARGV[13])
    redis.call('pexpire', KEYS[1], ARGV[1])
  end
  local t = 0
  if ARGV[3] == '1' then t = tonumber(redis.call('get', ARGV[4]) or '0') end
  return {n, t}
end
local p = redis.call('pttl', KEYS[1])
if ARGV[6] == 'c' then return p end
local c = redis.call('time')
local now = c[1] * 1000 + math.floor(c[2] / 1000)
local q, own = ARGV[5], KEYS[3]
-- free (no key, or the queue's marker alone): taken, or handed to the
-- first live entry; left alone during a turn (a hold handed on is there)
local free = p == -2 or
             (v[5] and not v[3] and redis.call('hlen', KEYS[1]) == 1)
local left
if free then
  --@include lib/fair.lua
  local tu = turn_of(own)
  if tu > now then left = tu - now end
  if not left then
    local first, o, d
    while true do
      first = redis.call('lindex', q, 0)
      if not first then break end
      o, d = owner_of(first, own)
      if d > now then break end
      redis.call('lpop', q)
      if o ~= '' then redis.call('hdel', own, o) end
    end
    if not first or o == f then
      if first then
        redis.call('lpop', q)
        redis.call('hdel', own, f)
      end
      redis.call('hset', KEYS[1], f, 1, rid, ARGV[13],
                 f .. ':first:rid', ARGV[13])
      redis.call('pexpire', KEYS[1], ARGV[1])
      mark(KEYS[1], q)
      local t = 0
      if ARGV[3] == '1' then t = redis.call('incr', ARGV[4]) end
      return {1, t}
    end
    local h = hand(KEYS[1], q, own, now, ARGV[3], ARGV[4], ARGV[10],
                   ARGV[11], nil, f, v[5])
    if not h then
      redis.call(ARGV[10], ARGV[11], '0')
      left = 1
    -- past entries nobody heard, to the caller's own: it holds it now
    elseif type(h) == 'table' and h[7] == f then
      redis.call('hdel', KEYS[1], 'hilock:handed')
      redis.call('hset', KEYS[1], rid, ARGV[13], f .. ':first:rid',
                 ARGV[13])
      redis.call('pexpire', KEYS[1], ARGV[1])
      return {1, h[4]}
    elseif type(h) == 'number' then
      left = 500
    end
  end
end
if ARGV[6] == 'w' or ARGV[6] == 'r' then
  local ms = tonumber(ARGV[7])
  local function entry()
    return string.format('%d:%s:%s:%s:%s:%d:%s', now + ms, ARGV[1], ARGV[8],
                         ARGV[9], ARGV[12], now, f)
  end
  local e, old, at, keep
  -- a retry ("r") looks its entry up; a first attempt ("w") queues unless
  -- an entry of the owner is there (HSETNX)
  if ARGV[6] == 'r' then
    old = redis.call('hget', own, f)
  else
    e = entry()
    if redis.call('hsetnx', own, f, e) == 0 then
      old = redis.call('hget', own, f)
    end
  end
  -- a retry keeps its place: its entry found with LPOS, a scan in C; one
  -- of the same wait that lives at least half its time more is left as
  -- it is (see above: its sent and written times still bound the hold)
  if old then
    -- (one kept once deaf, "~", is written again: its mark goes)
    local d, l, lt, w = string.match(old, '^([^:~][^:]*):([^:]+):([^:]+):' ..
                                     '([^:]+):')
    keep = w == ARGV[9] and l == ARGV[1] and lt == ARGV[8] and
           tonumber(d) >= now + ms / 2
    if not keep then
      e = e or entry()
      at = redis.call('lpos', q, old)
      redis.call('hset', own, f, e)
    end
  elseif not e then
    e = entry()
    redis.call('hset', own, f, e)
  end
  local started
  if keep then
    at = nil
  elseif at then
    redis.call('lset', q, at, e)
  -- else a new entry; the first one starts the queue (a release published)
  elseif redis.call('rpush', q, e) == 1 then
    started = true
    redis.call(ARGV[10], ARGV[11], '0')
  end
  -- the lock keeps the queue's marker while anyone queues (a key of the
  -- marker alone with a lease of its own); "n<ms>" on a queue started
  -- here: no entry left behind in it, and when it and its owners hash
  -- expire (see lib/fair.lua)
  local mark = started and string.format('n%d', now + 2 * ms) or '1'
  if (started or not v[5] or free) and
     redis.call('hset', KEYS[1], 'hilock:queued', mark) == 1 and
     redis.call('hlen', KEYS[1]) == 1 then
    redis.call('pexpire', KEYS[1], 5000)
  end
  -- see lib/fair.lua: extended only when they would run out first (an
  -- entry left as it is was covered when it was written), told by the
  -- marker "n<ms>" where it is, else by the owners hash's PTTL (a hash
  -- written again has none)
  local trust = not started and not free and v[5] and
                string.byte(v[5]) == 110
  if not keep and
     (started or (trust and (tonumber(string.sub(v[5], 2)) or 0) < now + ms)
      or (not trust and redis.call('pttl', own) < ms)) then
    redis.call('pexpire', q, 2 * ms)
    redis.call('pexpire', own, 2 * ms)
    if trust then
      redis.call('hset', KEYS[1], 'hilock:queued',
                 string.format('n%d', now + 2 * ms))
    end
  end
end
-- it was free: what a hand-off or a turn left
if left then return left end
if free then return redis.call('pttl', KEYS[1]) end
return p
