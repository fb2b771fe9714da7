/* SPDX-License-Identifier: BSD-3-Clause */
/* script_sem.c -- the semaphore scripts, in Redisson's layouts.
 *
 * Counting semaphore (RSemaphore): the key <name> holds the permits
 * available as a number; a release adds to it and publishes the new number
 * on "redisson_sc:{<name>}". Its permits have no owner: to apply a resent
 * request once, the last request id applied by each handle is kept in the
 * hash "hilock_rid:{<name>}" for a while (rid_ttl ms: longer than any
 * request can be resent).
 *
 * Expiring permits (RPermitExpirableSemaphore): the same counter, and the
 * sorted set "{<name>}:timeout" of the permits taken, each a 16-byte id
 * scored by the unix time in ms (the server's clock) at which it expires.
 * An expired permit goes back to the counter the next time anyone takes,
 * counts or initialises (Redisson does the same), and that is published.
 * A permit's id is fixed for one acquire: a resent acquire finds it taken
 * and applies nothing more.
 *
 * Every script declares the counter, then the companion key it reads from
 * ARGV (see script.c): the request ids, or the permits' sorted set. */
#include "script.h"

/* What every semaphore script starts with: a key of another kind (a lock's
 * hash) refused and left as it is (WRONGKIND, see script.h). */
#define SEM_KIND_LUA                                                          \
    KIND_LUA                                                                  \
    "local kv = redis.pcall('get', KEYS[1])\n"                                \
    "if type(kv) == 'table' then\n"                                           \
    "  return other_kind(KEYS[1], 'semaphore') or kv\n"                       \
    "end\n"

/* sem_acquire
 * KEYS[1] counter, KEYS[2] request ids
 * ARGV[1] permits, ARGV[2] request ids, ARGV[3] handle, ARGV[4] rid_ttl ms,
 * ARGV[5] request id
 * Return {permits, 0} when taken, else -1. */
const char script_sem_acquire_lua[] =
    SEM_KIND_LUA
    "if tonumber(ARGV[5]) <=\n"
    "    tonumber(redis.call('hget', ARGV[2], ARGV[3]) or '0') then\n"
    "  return {tonumber(ARGV[1]), 0}\n"
    "end\n"
    "if tonumber(redis.call('get', KEYS[1]) or '0') < tonumber(ARGV[1]) then\n"
    "  return -1\n"
    "end\n"
    "redis.call('decrby', KEYS[1], ARGV[1])\n"
    "redis.call('hset', ARGV[2], ARGV[3], ARGV[5])\n"
    "redis.call('pexpire', ARGV[2], ARGV[4])\n"
    "return {tonumber(ARGV[1]), 0}\n";

/* sem_release
 * KEYS[1] counter, KEYS[2] request ids
 * ARGV[1] permits, ARGV[2] request ids, ARGV[3] handle, ARGV[4] rid_ttl ms,
 * ARGV[5] publish command, ARGV[6] channel, ARGV[7] request id
 * Return {permits available after it, subscribers that heard}. The
 * number goes out before it is written: a PUBLISH that an ACL refuses
 * ends the script before it changed anything. */
const char script_sem_release_lua[] =
    SEM_KIND_LUA
    "if tonumber(ARGV[7]) <=\n"
    "    tonumber(redis.call('hget', ARGV[2], ARGV[3]) or '0') then\n"
    "  return {math.max(tonumber(kv or '0'), 0), 0}\n"
    "end\n"
    "local v = tonumber(kv or '0') + tonumber(ARGV[1])\n"
    "local heard = redis.call(ARGV[5], ARGV[6], v)\n"
    "redis.call('incrby', KEYS[1], ARGV[1])\n"
    "redis.call('hset', ARGV[2], ARGV[3], ARGV[7])\n"
    "redis.call('pexpire', ARGV[2], ARGV[4])\n"
    "return {math.max(v, 0), heard}\n";

/* What every expiring-permit script starts with: the server's clock in
 * ms, and the expired permits given back (published first, so that a
 * PUBLISH an ACL refuses changes nothing).
 * KEYS[1] counter, KEYS[2] sorted set, ARGV[1] the same set, ARGV[2]
 * publish command, ARGV[3] channel. */
#define PERMIT_LUA                                                            \
    SEM_KIND_LUA                                                              \
    "local t = redis.call('time')\n"                                          \
    "local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"                     \
    "local gone = redis.call('zrangebyscore', ARGV[1], 0, now)\n"             \
    "if #gone > 0 then\n"                                                     \
    "  redis.call(ARGV[2], ARGV[3], tonumber(kv or '0') + #gone)\n"           \
    "  for i = 1, #gone, 1000 do\n"                                           \
    "    redis.call('zrem', ARGV[1],\n"                                       \
    "               unpack(gone, i, math.min(i + 999, #gone)))\n"             \
    "  end\n"                                                                 \
    "  kv = redis.call('incrby', KEYS[1], #gone)\n"                           \
    "end\n"

/* permit_acquire
 * ARGV[4] permit id, ARGV[5] lease ms, ARGV[6] request id (not used: the
 * permit id makes the request idempotent)
 * Return {1, 0} when taken (or taken already by this very acquire), else
 * the ms until the first permit taken expires, -1 when none is taken. */
const char script_permit_acquire_lua[] =
    PERMIT_LUA
    "if redis.call('zscore', ARGV[1], ARGV[4]) then return {1, 0} end\n"
    "if tonumber(redis.call('get', KEYS[1]) or '0') >= 1 then\n"
    "  redis.call('decr', KEYS[1])\n"
    "  redis.call('zadd', ARGV[1], now + tonumber(ARGV[5]), ARGV[4])\n"
    "  return {1, 0}\n"
    "end\n"
    "local first = redis.call('zrange', ARGV[1], 0, 0, 'withscores')\n"
    "if first[2] then return math.max(tonumber(first[2]) - now, 0) end\n"
    "return -1\n";

/* permit_release
 * ARGV[4] permit id, ARGV[5] request id (not used)
 * Return {0, subscribers that heard}, or nil when the permit was not
 * taken (released already, or expired and given back). */
const char script_permit_release_lua[] =
    PERMIT_LUA
    "if not redis.call('zscore', ARGV[1], ARGV[4]) then return nil end\n"
    "local heard = redis.call(ARGV[2], ARGV[3], tonumber(kv or '0') + 1)\n"
    "redis.call('zrem', ARGV[1], ARGV[4])\n"
    "redis.call('incr', KEYS[1])\n"
    "return {0, heard}\n";

/* sem_init
 * ARGV[4] permits
 * Return 1 when the permits were set, 0 when some were set already. */
const char script_sem_init_lua[] =
    PERMIT_LUA
    "if kv then return 0 end\n"
    "redis.call(ARGV[2], ARGV[3], ARGV[4])\n"
    "redis.call('set', KEYS[1], ARGV[4])\n"
    "return 1\n";

/* sem_available
 * Return the permits available (never below 0). */
const char script_sem_available_lua[] =
    PERMIT_LUA
    "return math.max(tonumber(redis.call('get', KEYS[1]) or '0'), 0)\n";
