/* SPDX-License-Identifier: BSD-3-Clause */
/* script_rw.c -- the read-write lock scripts, in Redisson's layout.
 *
 * The lock key <name> is a hash: "mode" is "read" or "write", each reader
 * owner has its field "<client-uuid>:<owner-tag>" = its holds, a writer
 * "<client-uuid>:<owner-tag>:write" = its holds. Read hold n of a reader
 * also has its own key <base><field>:rwlock_timeout:<n> (base:
 * "{<name>}:") with that hold's lease, so that a reader that dies frees its
 * share when its lease runs out while other readers go on; the lock key
 * lives as long as its longest hold. Releases publish on
 * "redisson_rwlock:{<name>}": "1" from a writer (every reader may go), "0"
 * from a reader.
 *
 * hilock's own keys beside it: the request ids applied per owner field,
 * "hilock_rid:{<name>}" (a hash, gone with the lock), which make a resent
 * acquire or release apply once (Redisson's hash must hold nothing but
 * "mode" and holders: its readers count every other field as one); and a
 * waiting writer's mark, "hilock_rwlock_writer:{<name>}", which keeps new
 * readers off for a short time that the writer's retries renew: readers
 * then cannot starve it (readers already holding still re-enter).
 *
 * Every script declares the lock key, then the request ids and the
 * writer's mark it reads from ARGV (see script.c); a reader's timeout keys
 * are named inside the scripts, in the lock's slot. */
#include "script.h"

/* What every script shares, on the lock KEYS[1] and the request ids
 * rids:
 * longer  makes key k live at least ms;
 * applied whether owner f's request rid was applied already;
 * note    records that f's request rid was applied (kept ms at least);
 * forget  removes owner f, its holds and its request id;
 * prune   drops the fields of readers whose every hold expired (a reader's
 *         field is alive while its newest hold's key is; a writer's
 *         always); returns how many holders are left, and, when given
 *         most (a number), the longest PTTL among their holds and most.
 *         One pass: a release that leaves readers reads each hold's PTTL
 *         once, not an EXISTS and then a PTTL of each in a second pass. */
#define RW_LUA                                                                \
    KIND_LUA                                                                  \
    MAY_PUBLISH_LUA                                                           \
    "local function longer(k, ms)\n"                                          \
    "  if redis.call('pttl', k) < ms then redis.call('pexpire', k, ms) end\n" \
    "end\n"                                                                   \
    "local function applied(rids, f, rid)\n"                                  \
    "  return tonumber(rid) <= tonumber(redis.call('hget', rids, f) or '0')\n" \
    "end\n"                                                                   \
    "local function note(rids, f, rid, ms)\n"                                 \
    "  redis.call('hset', rids, f, rid)\n"                                    \
    "  longer(rids, ms)\n"                                                    \
    "end\n"                                                                   \
    "local function forget(rids, f)\n"                                        \
    "  redis.call('hdel', KEYS[1], f)\n"                                      \
    "  redis.call('hdel', rids, f)\n"                                         \
    "end\n"                                                                   \
    "local function prune(base, rids, most)\n"                                \
    "  local f = redis.call('hgetall', KEYS[1])\n"                            \
    "  local live = 0\n"                                                      \
    "  for i = 1, #f, 2 do\n"                                                 \
    "    if f[i] ~= 'mode' then\n"                                            \
    "      local top = base .. f[i] .. ':rwlock_timeout:'\n"                  \
    "      local c = tonumber(f[i + 1]) or 0\n"                               \
    "      local p = c > 0 and redis.call('pttl', top .. c) or -2\n"          \
    "      if p ~= -2 or string.find(f[i], ':write$') then\n"                 \
    "        live = live + 1\n"                                               \
    "        if most then\n"                                                  \
    "          most = math.max(most, p)\n"                                    \
    "          for j = 1, c - 1 do\n"                                         \
    "            most = math.max(most, redis.call('pttl', top .. j))\n"       \
    "          end\n"                                                         \
    "        end\n"                                                           \
    "      else\n"                                                            \
    "        forget(rids, f[i])\n"                                            \
    "      end\n"                                                             \
    "    end\n"                                                               \
    "  end\n"                                                                 \
    "  return live, most\n"                                                   \
    "end\n"

/* The start of both acquire scripts: a key of another kind refused
 * (WRONGKIND, see script.h: a read-write hash always has its "mode"), the
 * owner's holds n (a resend of a request applied already returns them),
 * and the mode. */
#define RW_ACQUIRE_LUA                                                        \
    "local lease = tonumber(ARGV[1])\n"                                       \
    "local v = redis.pcall('hmget', KEYS[1], ARGV[2], 'mode')\n"              \
    "if v.err or (not v[2] and redis.call('exists', KEYS[1]) == 1) then\n"    \
    "  return other_kind(KEYS[1], 'rwlock') or v\n"                           \
    "end\n"                                                                   \
    "local n, mode = v[1], v[2]\n"                                            \
    "if n and applied(ARGV[5], ARGV[2], ARGV[9]) then\n"                      \
    "  return {tonumber(n), 0}\n"                                             \
    "end\n"

/* read_acquire, write_acquire
 * KEYS[1] lock, KEYS[2] request ids, KEYS[3] waiting writer's mark
 * ARGV[1] lease ms, ARGV[2] owner field (a writer's ends ":write"),
 * ARGV[3] the same owner's field on the other side, ARGV[4] base,
 * ARGV[5] request ids, ARGV[6] waiting writer's mark, ARGV[7] "1" when
 * the acquire waits, ARGV[8] how long a waiting writer's mark lasts (ms),
 * ARGV[9] request id
 * Return {holds, 0} when taken or re-entered, else the lock's PTTL (or the
 * writer's mark's, for a reader kept off by it); a writer that holds the
 * read lock gets the error "DEADLK". */
const char script_read_acquire_lua[] =
    RW_LUA
    RW_ACQUIRE_LUA
    "if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 0 then\n"
    "  return redis.call('pttl', KEYS[1])\n"
    "end\n"
    "if not n and mode ~= 'write' then\n"
    "  local w = redis.call('pttl', ARGV[6])\n"
    "  if w ~= -2 then return math.max(redis.call('pttl', KEYS[1]), w) end\n"
    "end\n"
    "if not mode then redis.call('hset', KEYS[1], 'mode', 'read') end\n"
    "local c = redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "redis.call('set', ARGV[4] .. ARGV[2] .. ':rwlock_timeout:' .. c, 1,\n"
    "           'px', lease)\n"
    "longer(KEYS[1], lease)\n"
    "note(ARGV[5], ARGV[2], ARGV[9], lease)\n"
    "return {c, 0}\n";

const char script_write_acquire_lua[] =
    RW_LUA
    RW_ACQUIRE_LUA
    "if mode == 'read' and prune(ARGV[4], ARGV[5]) == 0 then\n"
    "  redis.call('del', KEYS[1], ARGV[5])\n"
    "  mode = false\n"
    "end\n"
    "local c\n"
    "if not mode then\n"
    "  redis.call('hset', KEYS[1], 'mode', 'write', ARGV[2], 1)\n"
    "  redis.call('pexpire', KEYS[1], lease)\n"
    "  redis.call('del', ARGV[6])\n"
    "  c = 1\n"
    "elseif mode == 'write' and n then\n"
    "  c = redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "  longer(KEYS[1], lease)\n"
    "elseif redis.call('hexists', KEYS[1], ARGV[3]) == 1 then\n"
    "  return redis.error_reply('DEADLK the owner holds the read lock')\n"
    "else\n"
    "  if ARGV[7] == '1' then\n"
    "    redis.call('set', ARGV[6], ARGV[2], 'px', ARGV[8])\n"
    "  end\n"
    "  return redis.call('pttl', KEYS[1])\n"
    "end\n"
    "note(ARGV[5], ARGV[2], ARGV[9], lease)\n"
    "return {c, 0}\n";

/* write_leave (a waiting writer gave up)
 * KEYS[1] lock, KEYS[2] waiting writer's mark, ARGV[1] the same mark,
 * ARGV[2] the writer's field
 * Deletes the mark if this writer made it last. Returns 0. */
const char script_write_leave_lua[] =
    "if redis.call('get', ARGV[1]) == ARGV[2] then\n"
    "  redis.call('del', ARGV[1])\n"
    "end\n"
    "return 0\n";

/* The start of both release scripts: a key of another kind refused and
 * left as it is (WRONGKIND), the owner's holds n and the mode. */
#define RW_RELEASE_LUA                                                        \
    "local v = redis.pcall('hmget', KEYS[1], ARGV[3], 'mode')\n"              \
    "if v.err or (not v[2] and redis.call('exists', KEYS[1]) == 1) then\n"    \
    "  return other_kind(KEYS[1], 'rwlock') or v\n"                           \
    "end\n"                                                                   \
    "local n, mode = v[1], v[2]\n"

/* read_release, write_release
 * KEYS[1] lock, KEYS[2] request ids
 * ARGV[1] release message, ARGV[2] lease ms, ARGV[3] owner field, ARGV[4]
 * holds to drop, ARGV[5] publish command, ARGV[6] channel, ARGV[7] base,
 * ARGV[8] request ids, ARGV[9] request id
 * Return {holds left, subscribers that heard the release} (0 for the
 * second when the lock is still held), or nil when the owner holds
 * nothing. A writer that leaves readers behind (it took the read lock
 * too) hands the lock over to them: mode "read". A release that may
 * publish asks the ACL first and publishes before it deletes: one that
 * the ACL refuses changes nothing. */
const char script_read_release_lua[] =
    RW_LUA
    RW_RELEASE_LUA
    "if not n then return nil end\n"
    "n = tonumber(n)\n"
    "if applied(ARGV[8], ARGV[3], ARGV[9]) then return {n, 0} end\n"
    "local c = math.max(n - tonumber(ARGV[4]), 0)\n"
    "if c == 0 then\n"
    "  local e = may_publish(ARGV[5], ARGV[6])\n"
    "  if e then return e end\n"
    "end\n"
    "for i = c + 1, n do\n"
    "  redis.call('del', ARGV[7] .. ARGV[3] .. ':rwlock_timeout:' .. i)\n"
    "end\n"
    "if c > 0 then\n"
    "  redis.call('hset', KEYS[1], ARGV[3], c)\n"
    "  note(ARGV[8], ARGV[3], ARGV[9], tonumber(ARGV[2]))\n"
    "  return {c, 0}\n"
    "end\n"
    "forget(ARGV[8], ARGV[3])\n"
    "if mode == 'write' then return {0, 0} end\n"
    "local live, most = prune(ARGV[7], ARGV[8], 0)\n"
    "if live > 0 then\n"
    "  if most > 0 then redis.call('pexpire', KEYS[1], most) end\n"
    "  return {0, 0}\n"
    "end\n"
    "local heard = redis.call(ARGV[5], ARGV[6], ARGV[1])\n"
    "redis.call('del', KEYS[1], ARGV[8])\n"
    "return {0, heard}\n";

const char script_write_release_lua[] =
    RW_LUA
    RW_RELEASE_LUA
    "if not n or mode ~= 'write' then return nil end\n"
    "n = tonumber(n)\n"
    "if applied(ARGV[8], ARGV[3], ARGV[9]) then return {n, 0} end\n"
    "local c = math.max(n - tonumber(ARGV[4]), 0)\n"
    "if c > 0 then\n"
    "  redis.call('hset', KEYS[1], ARGV[3], c)\n"
    "  note(ARGV[8], ARGV[3], ARGV[9], tonumber(ARGV[2]))\n"
    "  longer(KEYS[1], tonumber(ARGV[2]))\n"
    "  return {c, 0}\n"
    "end\n"
    "local heard = redis.call(ARGV[5], ARGV[6], ARGV[1])\n"
    "forget(ARGV[8], ARGV[3])\n"
    "if redis.call('hlen', KEYS[1]) == 1 then\n"
    "  redis.call('del', KEYS[1], ARGV[8])\n"
    "else\n"
    "  redis.call('hset', KEYS[1], 'mode', 'read')\n"
    "end\n"
    "return {0, heard}\n";
