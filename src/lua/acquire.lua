-- acquire -- take or re-enter a lock.
--
-- keys: 1..4
-- args: 5..9
--
-- KEYS[1]  the lock
-- KEYS[2]  the fencing counter, when tokens are issued or the queue is
--          declared (a hand-off to a fair waiter draws a token for it)
-- KEYS[n]  for a lock's acquire (9 arguments): the fair queue, then its
--          owners hash (last two keys)
-- ARGV[1]  lease ms
-- ARGV[2]  owner field "<client-uuid>:<owner-tag>"
-- ARGV[3]  "1" to issue fencing tokens, else "0"
-- ARGV[4]  the fencing counter's name
-- ARGV[5]  with the queue (9 arguments): the fair queue's name
-- ARGV[6]  with the queue: ms a waiting caller's entry stays live; 0 for
--          a caller that does not wait (it never queues)
-- ARGV[7]  with the queue: the publish command
-- ARGV[8]  with the queue: the lock's channel
-- ARGV[#]  last: the request id (fixed across resends of one acquire)
--
-- Replies: the holder's PTTL (integer) when another owner holds the lock;
-- else {holds, token}: token is a fresh INCR on a first acquisition, the
-- current counter on re-entry, 0 without fencing. A key of another kind
-- is refused: the error "WRONGKIND <kind>" (lib/kind.lua).
--
-- The layout is Redisson's RLock: the lock is a hash whose field
-- "<client-uuid>:<owner-tag>" holds the re-entry count, with a PEXPIRE
-- lease. The counter is declared with the lock: after an ASK the
-- importing node must not draw a token from a counter that has not moved
-- yet (it would start again at 1, and the counter's MIGRATE would then
-- fail).
--
-- A caller that waits and finds the lock held with the queue's marker
-- (fair clients queue on the name) joins their queue (lib/fair.lua),
-- as it does when it finds the lock free and serves the queue first; a
-- hold without the marker (a RESTORE's, or a Redisson client's, taken
-- after the key and its marker expired) is busy like any other: an entry
-- "plain:<owner field>" at the tail, its deadline in the owners hash. Its
-- acquisition takes the entry out again and ends a turn it was given.
-- While anyone queues, the lock hash keeps the field "hilock:queued", so
-- that a release leaves the key (and a RESTORE is refused). Such a lock
-- that holds the marker alone, or no key with a queue, is free for the
-- first in line: a caller that waits takes it when its own entry is the
-- first live one, or when the turn is its own; else it hands the lock on
-- as a fair release would (to the first live entry, or a turn for the
-- first waiter without fair mode) and joins the queue. A caller that
-- does not wait serves the queue the same way and takes the lock only
-- when nobody live is in line (their process died: nobody hears the
-- hand-off); else it finds the lock busy and does not queue. Nothing of
-- this runs when the name has no queue; a caller that does not wait
-- looks for one only where the marker is (a key whose lease ran out
-- took the marker along, and the lock is free to it as to a RESTORE).
--
-- A request whose reply was lost is sent again with the same request id.
-- The highest request id applied for an owner (acquire or release) is
-- kept in the lock hash itself, under "<owner field>:rid", and a request
-- whose id is not above it is a resend of one already applied: it
-- returns the current result instead of counting a hold again. That
-- holds because a client's requests reach Redis in id order (one
-- connection, resends go out before anything newer, and a request that
-- Redis refused unapplied -- NOSCRIPT, a cluster redirect -- goes again
-- with a new id), also when two handles of one owner lose their replies
-- together. Kept in the hash, it costs no key and goes away with the
-- lock. Redisson ignores the field. The request that creates the hash
-- also writes its id under "<owner field>:first:rid" (KEYS_FIRST_RID_SUFFIX
-- in keys.h), which no later request changes: undo.lua tells by it
-- whether an attempt's hold is still there.
--
-- A resend that finds its id applied writes the id field again as it is:
-- the write goes to the replicas, so that a WAIT after it on the new
-- connection covers the original write too (a connection that wrote
-- nothing is confirmed by WAIT at once).
--
-- A free lock costs three calls (one more for a token): PTTL tells it
-- free and is the reply for a held one, which costs two (PTTL and HMGET)
-- without the queue's marker. A caller that waits asks first whether the
-- lock or the queue exists, in one EXISTS of both keys, which saves the
-- PTTL and an EXISTS of the queue when neither does; a held lock costs
-- it one call more (each distinct command costs Redis about a
-- microsecond in a contended run). The queue's functions are defined
-- only where a queue is met.
local t = 0
local f = ARGV[2]
local rid = f .. ':rid'
local id, q, wait = ARGV[5], nil, nil
if #ARGV == 9 then q, wait, id = ARGV[5], tonumber(ARGV[6]), ARGV[9] end
-- a waiter's lock that is free with no queue: one EXISTS tells both
local absent = q and wait ~= 0 and redis.call('exists', KEYS[1], q) == 0
local p = absent and -2 or redis.call('pttl', KEYS[1])
local v = {}
if p ~= -2 then
  v = redis.pcall('hmget', KEYS[1], f, rid, 'mode', 'hilock:queued')
  if v.err or v[3] then
    --@include lib/kind.lua
    return other_kind(KEYS[1], 'lock') or v
  end
elseif absent or not q or wait == 0 then
  -- no key, no queue: taken
  redis.call('hset', KEYS[1], f, 1, rid, id, f .. ':first:rid', id)
  redis.call('pexpire', KEYS[1], ARGV[1])
  if ARGV[3] == '1' then t = redis.call('incr', ARGV[4]) end
  return {1, t}
end
if v[1] then
  local n = tonumber(v[1])
  if tonumber(id) > tonumber(v[2] or '0') then
    n = n + 1
    redis.call('hset', KEYS[1], f, n, rid, id)
    redis.call('pexpire', KEYS[1], ARGV[1])
  else
    -- a resend: written again as it is (see above)
    redis.call('hset', KEYS[1], rid, v[2])
  end
  if ARGV[3] == '1' then t = tonumber(redis.call('get', ARGV[4]) or '0') end
  return {n, t}
end
-- held without the marker: busy (a queue whose marker went with an
-- expired key is met, and joined, when the lock is next found free)
if not q or (p ~= -2 and not v[4]) then
  return p
end
-- a queue: the owners hash is declared last
local own = KEYS[#KEYS]
local c = redis.call('time')
local now = c[1] * 1000 + math.floor(c[2] / 1000)
local free = p == -2 or (v[4] and redis.call('hlen', KEYS[1]) == 1)
if free then
  -- free for the first in line: the caller, or whom it hands the lock to
  --@include lib/fair.lua
  local tu, tf = turn_of(own)
  local mine = tu > now and tf == f
  if tu <= now then
    local first
    while true do
      first = redis.call('lindex', q, 0)
      if not first then break end
      local o, d = owner_of(first, own)
      if not o then
        o = string.sub(first, 7)
        d = tonumber(redis.call('hget', own, o) or '0')
      end
      if d > now then break end
      redis.call('lpop', q)
      redis.call('hdel', own, o)
    end
    mine = not first or first == 'plain:' .. f
    if not mine then
      -- a fair waiter it hands the lock to gets a token whatever this
      -- caller issues: the counter is declared with the queue
      local h = hand(KEYS[1], q, own, now, '1', ARGV[4], ARGV[7],
                     ARGV[8], nil, nil, v[4])
      tu, tf = turn_of(own)
      mine = not h or (type(h) == 'number' and tf == f)
    end
  end
  if mine then
    redis.call('hset', KEYS[1], f, 1, rid, id, f .. ':first:rid', id)
    redis.call('pexpire', KEYS[1], ARGV[1])
    if ARGV[3] == '1' then t = redis.call('incr', ARGV[4]) end
    if redis.call('hdel', own, f) == 1 then
      redis.call('lrem', q, 1, 'plain:' .. f)
    end
    redis.call('hdel', own, 'hilock:turn')
    mark(KEYS[1], q)
    return {1, t}
  end
  p = tu > now and tu - now or redis.call('pttl', KEYS[1])
end
-- held, or served to another first: a caller that waits joins the queue
if wait == 0 then return p end
if redis.call('hexists', own, f) == 0 then
  redis.call('rpush', q, 'plain:' .. f)
end
redis.call('hset', own, f, now + wait)
-- the lock keeps the queue's marker (a key of the marker alone with a
-- lease of its own)
if (not v[4] or free) and
   redis.call('hset', KEYS[1], 'hilock:queued', '1') == 1 and
   redis.call('hlen', KEYS[1]) == 1 then
  redis.call('pexpire', KEYS[1], 5000)
end
-- see lib/fair.lua: extended only when they would run out first, told
-- by the owners hash (written again after it emptied, while entries
-- left behind keep the list, it has no expiry)
if redis.call('pttl', own) < wait then
  redis.call('pexpire', q, 2 * wait)
  redis.call('pexpire', own, 2 * wait)
end
return p
