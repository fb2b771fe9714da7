-- guarded -- run a caller's commands only while a handle holds its lock.
--
-- keys: 3..
-- args: 7..
--
-- KEYS[1]  the lock key (a permit: the semaphore's counter)
-- KEYS[2]  the fencing counter (a permit: its sorted set)
-- KEYS[3]  the request ids "hilock_rid:{<name>}"
-- KEYS[4..] the commands' keys (declared for the cluster's routing; the
--          commands name them in their arguments)
-- ARGV[1]  kind: "m" lock, "w" writer, "r" reader, "p" expiring permit
-- ARGV[2]  owner field (a permit: its id)
-- ARGV[3]  fencing token the counter must hold ("0": not checked)
-- ARGV[4]  a reader's base
-- ARGV[5]  ms to keep a request id in KEYS[3]
-- ARGV[6]  number of commands
-- ARGV[7..] per command its argument count and its arguments
-- ARGV[#]  last: request id
--
-- Replies: the commands' replies, one element each, up to and including
-- the first that failed (Redis keeps what the ones before it wrote).
-- Refusals, with nothing run: "NOTOWNER ..." when the hold is gone,
-- "APPLIED ..." when this request id ran already, WRONGKIND.
--
-- The check and the commands are one script, so no other client can take
-- the lock in between: a holder that stalled past its lease has its
-- write refused on the node that decides who holds. The check reads each
-- kind's own layout and writes only the request id it applied, so that a
-- request resent after its reply was lost runs its commands once. A lock
-- keeps that id in "<field>:rid" of its hash, as its acquires and
-- releases do (a client's requests reach Redis in id order, so the field
-- stays "the last id applied"); the other kinds keep it in
-- "hilock_rid:{<name>}", by owner field or permit id.
--@include lib/kind.lua
local kind, f = ARGV[1], ARGV[2]
local rid = tonumber(ARGV[#ARGV])
local last
local function gone(why)
  return redis.error_reply('NOTOWNER ' .. why)
end
if kind == 'p' then
  local kv = redis.pcall('get', KEYS[1])
  if type(kv) == 'table' then
    return other_kind(KEYS[1], 'semaphore') or kv
  end
  local s = redis.call('zscore', KEYS[2], f)
  local t = redis.call('time')
  if not s or tonumber(s) <= t[1] * 1000 + math.floor(t[2] / 1000) then
    return gone('the permit expired or was released')
  end
  last = redis.call('hget', KEYS[3], f)
elseif kind == 'm' then
  local v = redis.pcall('hmget', KEYS[1], f, 'mode', f .. ':rid')
  if v.err or v[2] then return other_kind(KEYS[1], 'lock') or v end
  if tonumber(v[1] or '0') <= 0 then
    return gone('the lock is not held by this owner')
  end
  last = v[3]
else
  local v = redis.pcall('hmget', KEYS[1], f, 'mode')
  if v.err or (not v[2] and redis.call('exists', KEYS[1]) == 1) then
    return other_kind(KEYS[1], 'rwlock') or v
  end
  local c = tonumber(v[1] or '0')
  if c <= 0 or (kind == 'r' and redis.call('exists',
      ARGV[4] .. f .. ':rwlock_timeout:' .. c) == 0) then
    return gone('the lock is not held by this owner')
  end
  last = redis.call('hget', KEYS[3], f)
end
if ARGV[3] ~= '0' and redis.call('get', KEYS[2]) ~= ARGV[3] then
  return gone('a newer fencing token was drawn')
end
if rid <= tonumber(last or '0') then
  return redis.error_reply('APPLIED this request ran already')
end
if kind == 'm' then
  redis.call('hset', KEYS[1], f .. ':rid', rid)
else
  redis.call('hset', KEYS[3], f, rid)
  if redis.call('pttl', KEYS[3]) < tonumber(ARGV[5]) then
    redis.call('pexpire', KEYS[3], ARGV[5])
  end
end
local out, a = {}, 7
for i = 1, tonumber(ARGV[6]) do
  local n = tonumber(ARGV[a])
  local r = redis.pcall(unpack(ARGV, a + 1, a + n))
  out[i] = r
  a = a + n + 1
  if type(r) == 'table' and r.err then break end
end
return out
