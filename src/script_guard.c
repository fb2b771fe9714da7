/* script_guard.c -- the guarded command script: run a caller's Redis
 * commands only while a handle still holds its lock.
 *
 * The check and the commands are one script, so no other client can take
 * the lock in between: a holder that stalled past its lease has its write
 * refused on the node that decides who holds. The check reads each kind's
 * own layout (script.c, script_rw.c, script_sem.c) and writes only the
 * request id it applied, so that a request resent after its reply was
 * lost runs its commands once. A lock keeps that id in "<field>:rid" of
 * its hash, as its acquires and releases do (a client's requests reach
 * Redis in id order, so the field stays "the last id applied"); the other
 * kinds keep it in "hilock_rid:{<name>}", by owner field or permit id. */
#include "script.h"

/* guarded
 * KEYS[1] the lock key (a permit: the semaphore's counter), KEYS[2] the
 * fencing counter (a permit: its sorted set), KEYS[3] the request ids
 * "hilock_rid:{<name>}", KEYS[4..] the commands' keys (declared for the
 * cluster's routing; the commands name them in their arguments)
 * ARGV[1] kind: "m" lock, "w" writer, "r" reader, "p" expiring permit;
 * ARGV[2] owner field (a permit: its id); ARGV[3] fencing token the
 * counter must hold ("0": not checked); ARGV[4] a reader's base; ARGV[5]
 * ms to keep a request id in KEYS[3]; ARGV[6] number of commands; then
 * per command its argument count and its arguments; last: request id.
 * Returns the commands' replies, one element each, up to and including
 * the first that failed (Redis keeps what the ones before it wrote).
 * Refusals, with nothing run: "NOTOWNER ..." when the hold is gone,
 * "APPLIED ..." when this request id ran already, WRONGKIND (script.h). */
const char script_guarded_lua[] =
    KIND_LUA
    "local kind, f = ARGV[1], ARGV[2]\n"
    "local rid = tonumber(ARGV[#ARGV])\n"
    "local last\n"
    "local function gone(why)\n"
    "  return redis.error_reply('NOTOWNER ' .. why)\n"
    "end\n"
    "if kind == 'p' then\n"
    "  local kv = redis.pcall('get', KEYS[1])\n"
    "  if type(kv) == 'table' then\n"
    "    return other_kind(KEYS[1], 'semaphore') or kv\n"
    "  end\n"
    "  local s = redis.call('zscore', KEYS[2], f)\n"
    "  local t = redis.call('time')\n"
    "  if not s or tonumber(s) <= t[1] * 1000 + math.floor(t[2] / 1000) then\n"
    "    return gone('the permit expired or was released')\n"
    "  end\n"
    "  last = redis.call('hget', KEYS[3], f)\n"
    "elseif kind == 'm' then\n"
    "  local v = redis.pcall('hmget', KEYS[1], f, 'mode', f .. ':rid')\n"
    "  if v.err or v[2] then return other_kind(KEYS[1], 'lock') or v end\n"
    "  if tonumber(v[1] or '0') <= 0 then\n"
    "    return gone('the lock is not held by this owner')\n"
    "  end\n"
    "  last = v[3]\n"
    "else\n"
    "  local v = redis.pcall('hmget', KEYS[1], f, 'mode')\n"
    "  if v.err or (not v[2] and redis.call('exists', KEYS[1]) == 1) then\n"
    "    return other_kind(KEYS[1], 'rwlock') or v\n"
    "  end\n"
    "  local c = tonumber(v[1] or '0')\n"
    "  if c <= 0 or (kind == 'r' and redis.call('exists',\n"
    "      ARGV[4] .. f .. ':rwlock_timeout:' .. c) == 0) then\n"
    "    return gone('the lock is not held by this owner')\n"
    "  end\n"
    "  last = redis.call('hget', KEYS[3], f)\n"
    "end\n"
    "if ARGV[3] ~= '0' and redis.call('get', KEYS[2]) ~= ARGV[3] then\n"
    "  return gone('a newer fencing token was drawn')\n"
    "end\n"
    "if rid <= tonumber(last or '0') then\n"
    "  return redis.error_reply('APPLIED this request ran already')\n"
    "end\n"
    "if kind == 'm' then\n"
    "  redis.call('hset', KEYS[1], f .. ':rid', rid)\n"
    "else\n"
    "  redis.call('hset', KEYS[3], f, rid)\n"
    "  if redis.call('pttl', KEYS[3]) < tonumber(ARGV[5]) then\n"
    "    redis.call('pexpire', KEYS[3], ARGV[5])\n"
    "  end\n"
    "end\n"
    "local out, a = {}, 7\n"
    "for i = 1, tonumber(ARGV[6]) do\n"
    "  local n = tonumber(ARGV[a])\n"
    "  local r = redis.pcall(unpack(ARGV, a + 1, a + n))\n"
    "  out[i] = r\n"
    "  a = a + n + 1\n"
    "  if type(r) == 'table' and r.err then break end\n"
    "end\n"
    "return out\n";
