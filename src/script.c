/* SPDX-License-Identifier: BSD-3-Clause */
/* script.c -- the Lua side of the lock.
 *
 * Every state change of a lock is one script, so it is atomic on the server.
 * The layout is Redisson's: the lock is a hash whose field
 * "<client-uuid>:<owner-tag>" holds the re-entry count, with a PEXPIRE lease;
 * the final release publishes on the lock's channel. A Java service using
 * RLock and a C server using hilock can therefore guard the same resource.
 *
 * Scripts are called with EVALSHA; the connection sends SCRIPT LOAD for all
 * of them right after connecting, and a NOSCRIPT reply (restart, failover,
 * SCRIPT FLUSH) makes the request load the script and go out once more.
 *
 * Every key a script touches is declared, so that Redis Cluster routes the
 * call by all of them: during a slot migration a call whose keys are split
 * between the two nodes is refused with TRYAGAIN (and sent again shortly)
 * instead of running where half of them are missing. Where a script reads
 * a companion key's name from ARGV (its layout predates the rule), the key
 * is declared after the lock key as well (KEYS[2..], in the order each
 * script's contract lists; the script itself reads ARGV). Two exceptions:
 * a reader's timeout keys are named inside the read-write scripts, in the
 * lock's slot (script_rw.c), and the renew script declares none, or the
 * keys of the one lock it renews alone (see there). */
#include "script.h"

#include <string.h>

#include "keys.h"
#include "sha1.h"

/* The fair scripts are longer than the 4095 characters ISO C asks every
 * compiler to take in one string literal; GCC and Clang take any length. */
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Woverlength-strings"
#endif

/* acquire
 * KEYS[1] lock, then the fencing counter when tokens are issued, then for
 * a caller that waits the fair queue and its owners hash
 * ARGV[1] lease ms, ARGV[2] owner field, ARGV[3] "1" to issue tokens,
 * ARGV[4] fencing counter, then for a caller that waits ARGV[5] fair
 * queue and ARGV[6] ms its queue entry stays live; last the request id
 * (fixed across resends of one acquire)
 * Returns the holder's PTTL (integer) when another owner holds the lock,
 * else {holds, token}: token is a fresh INCR on a first acquisition, the
 * current counter on re-entry, 0 without fencing. A key of another kind
 * is refused (WRONGKIND, see script.h).
 *
 * The counter is declared with the lock: after an ASK the importing node
 * must not draw a token from a counter that has not moved yet (it would
 * start again at 1, and the counter's MIGRATE would then fail).
 *
 * A caller that waits and finds the lock held while fair clients queue on
 * the name joins their queue (see the fair scripts below): an entry
 * "plain:<owner field>" at the tail, its deadline in the owners hash. Its
 * acquisition takes the entry out again and ends a turn it was given.
 * Nothing of this runs for a caller that does not wait, nor when the name
 * has no queue.
 *
 * A request whose reply was lost is sent again with the same request id.
 * The highest request id applied for an owner (acquire or release) is kept
 * in the lock hash itself, under "<owner field>:rid", and a request whose
 * id is not above it is a resend of one already applied: it returns the
 * current result instead of counting a hold again. That holds because a
 * client's requests reach Redis in id order (one connection, resends go out
 * before anything newer, and a request that Redis refused unapplied --
 * NOSCRIPT, a cluster redirect -- goes again with a new id), also when two
 * handles of one owner lose their replies together. Kept in the hash, it
 * costs no key and goes away with the lock. Redisson ignores the field.
 * The request that creates the hash also writes its id under
 * "<owner field>:first:rid", which no later request changes: the undo
 * script tells by it whether an attempt's hold is still there.
 *
 * A resend that finds its id applied writes the id field again as it is:
 * the write goes to the replicas, so that a WAIT after it on the new
 * connection covers the original write too (a connection that wrote
 * nothing is confirmed by WAIT at once).
 *
 * A free lock costs three calls (one more for a token, one more for a
 * caller that waits): PTTL tells it free and is the reply for a held
 * one, which costs two (PTTL and HMGET; three for a caller that waits). */
static const char acquire_lua[] =
    KIND_LUA
    "local t = 0\n"
    "local f = ARGV[2]\n"
    "local rid = f .. ':rid'\n"
    "local id, q, wait = ARGV[5], '', '0'\n"
    "if #ARGV == 7 then q, wait, id = ARGV[5], ARGV[6], ARGV[7] end\n"
    "local p = redis.call('pttl', KEYS[1])\n"
    "if p == -2 then\n" /* no key: taken */
    "  redis.call('hset', KEYS[1], f, 1, rid, id,\n"
    "             f .. '" KEYS_FIRST_RID_SUFFIX "', id)\n"
    "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "  if ARGV[3] == '1' then t = redis.call('incr', ARGV[4]) end\n"
    "  local own = KEYS[#KEYS]\n" /* declared last by a caller that waits */
    "  if wait ~= '0' and redis.call('exists', own) == 1 then\n"
    "    if redis.call('hdel', own, f) == 1 then\n"
    "      redis.call('lrem', q, 1, 'plain:' .. f)\n"
    "    end\n"
    "    redis.call('hdel', own, 'hilock:turn')\n"
    "  end\n"
    "  return {1, t}\n"
    "end\n"
    "local v = redis.pcall('hmget', KEYS[1], f, rid, 'mode')\n"
    "if v.err or v[3] then return other_kind(KEYS[1], 'lock') or v end\n"
    "if not v[1] then\n"
    "  if wait ~= '0' and redis.call('exists', q) == 1 then\n"
    "    local c, ms, own = redis.call('time'), tonumber(wait), KEYS[#KEYS]\n"
    "    if redis.call('hexists', own, f) == 0 then\n"
    "      redis.call('rpush', q, 'plain:' .. f)\n"
    "    end\n"
    "    redis.call('hset', own, f, c[1] * 1000 + math.floor(c[2] / 1000) + ms)\n"
    "    if redis.call('pttl', q) < ms then\n" /* see FAIR_LUA */
    "      redis.call('pexpire', q, 2 * ms)\n"
    "      redis.call('pexpire', own, 2 * ms)\n"
    "    end\n"
    "  end\n"
    "  return p\n"
    "end\n"
    "local n = tonumber(v[1])\n"
    "if tonumber(id) > tonumber(v[2] or '0') then\n"
    "  n = n + 1\n"
    "  redis.call('hset', KEYS[1], f, n, rid, id)\n"
    "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "else\n" /* a resend: written again as it is (see above) */
    "  redis.call('hset', KEYS[1], rid, v[2])\n"
    "end\n"
    "if ARGV[3] == '1' then t = tonumber(redis.call('get', ARGV[4]) or '0') end\n"
    "return {n, t}\n";

/* release
 * KEYS[1] lock
 * ARGV[1] message, ARGV[2] lease ms, ARGV[3] owner field, ARGV[4] holds to
 * drop, ARGV[5] "publish" or "spublish" (sharded pub/sub in a cluster),
 * ARGV[6] channel, ARGV[7] request id
 * Returns {holds left, subscribers that received the release message} (the
 * message goes out when no hold is left), or nil when the owner holds
 * nothing. A resend of a release that was applied and left holds finds its
 * id in the hash (see acquire) and drops nothing more; one that ended the
 * hold finds nothing and returns nil, which the client, knowing it sent it
 * twice, takes as done. The owner's last hold deletes the whole hash: a
 * lock has one owner. Nothing is left behind. Three calls, as acquire.
 * A key of another kind is refused (WRONGKIND) and left as it is. The
 * message goes out before the delete: a PUBLISH that an ACL refuses ends
 * the script before it wrote anything. */
static const char release_lua[] =
    KIND_LUA
    "local rid = ARGV[3] .. ':rid'\n"
    "local v = redis.pcall('hmget', KEYS[1], ARGV[3], rid, 'mode')\n"
    "if v.err or v[3] then return other_kind(KEYS[1], 'lock') or v end\n"
    "if not v[1] then return nil end\n"
    "if tonumber(ARGV[7]) <= tonumber(v[2] or '0') then\n"
    "  return {tonumber(v[1]), 0}\n"
    "end\n"
    "local n = tonumber(v[1]) - tonumber(ARGV[4])\n"
    "if n > 0 then\n"
    "  redis.call('hset', KEYS[1], ARGV[3], n, rid, ARGV[7])\n"
    "  redis.call('pexpire', KEYS[1], ARGV[2])\n"
    "  return {n, 0}\n"
    "end\n"
    "local heard = redis.call(ARGV[5], ARGV[6], ARGV[1])\n"
    "redis.call('del', KEYS[1])\n"
    "return {0, heard}\n";

/* undo
 * KEYS[1] lock
 * ARGV[1] message, ARGV[2] owner field, ARGV[3] "publish" or "spublish",
 * ARGV[4] channel, ARGV[5] the request id of an acquire attempt, ARGV[6]
 * request id
 * Drops the hold that attempt took, when it took one and it is still
 * there: the owner holds; the attempt reached Redis (the last id applied
 * is not below it: a client's requests arrive in id order); and the
 * owner's hold began with that attempt or before it ("<owner
 * field>:first:rid"; a hash without the field, written by another script
 * or an earlier version, counts as begun before). A hold that began after
 * the attempt is a later one's (the attempt's own ran out, or was
 * released, in between): nothing is dropped. So it also serves an attempt
 * whose reply was lost with its connection. The lease stays as it is: it
 * belongs to the holds that remain. Returns as release: {holds left,
 * subscribers}, nil when the owner holds nothing; a resend drops nothing a
 * second time (its id, as for release). Another kind's key is refused
 * (WRONGKIND) and left as it is. */
static const char undo_lua[] =
    KIND_LUA
    "local rid = ARGV[2] .. ':rid'\n"
    "local v = redis.pcall('hmget', KEYS[1], ARGV[2], rid,\n"
    "                      ARGV[2] .. '" KEYS_FIRST_RID_SUFFIX "', 'mode')\n"
    "if v.err or v[4] then return other_kind(KEYS[1], 'lock') or v end\n"
    "if not v[1] then return nil end\n"
    "local n = tonumber(v[1])\n"
    "local last = tonumber(v[2] or '0')\n"
    "if tonumber(ARGV[6]) <= last or last < tonumber(ARGV[5]) or\n"
    "   tonumber(v[3] or '0') > tonumber(ARGV[5]) then\n"
    "  return {n, 0}\n"
    "end\n"
    "if n > 1 then\n"
    "  redis.call('hset', KEYS[1], ARGV[2], n - 1, rid, ARGV[6])\n"
    "  return {n - 1, 0}\n"
    "end\n"
    "local heard = redis.call(ARGV[3], ARGV[4], ARGV[1])\n"
    "redis.call('del', KEYS[1])\n"
    "return {0, heard}\n";

/* renew
 * ARGV[1] lease ms (0: only check), ARGV[2] deadline: the server's unix
 * time in ms after which the sender has given these locks up (0: none),
 * then per lock its type and keys:
 *   "m" <lock> <field>           a lock: the field held, the lease set
 *   "w" <lock> <field>           a writer: the same, the lease never cut
 *                                short (readers may share the key)
 *   "r" <lock> <field> <base>    a reader: its newest hold's timeout key
 *                                <base><field>:rwlock_timeout:<n> alive,
 *                                every one of its holds' keys renewed
 *   "p" <sorted set> <permit>    an expiring permit: not expired, its
 *                                expiry moved to now + lease
 * No declared keys: a cluster master renews all the locks it holds, of
 * many slots, in one call. A lock that a master says it does not serve
 * goes again alone, its key declared as KEYS[1] (the permits' sorted set
 * for a permit; a reader's first hold's key as KEYS[2] too, as it moves
 * with the lock), unread here, which the cluster redirects to where the
 * key is (ASK during a migration). Returns one digit per lock, in one
 * string (one reply object for the whole batch, not one per lock): 1 held
 * (lease reset), 0 not held by that owner, 2 not known here (a cluster
 * node that does not serve the key); or the integer -1, with nothing
 * changed, when the deadline has passed: a renewal held up in a stall
 * must not revive a lock its owner has already reported lost. A key that
 * now holds another type or kind (a lock's field in a read-write hash,
 * whose "mode" says so, or the other way round) is just not held, and is
 * left alone; it does not fail the other locks of the batch. */
static const char renew_lua[] =
    "local now\n"
    "local function clock()\n"
    "  if not now then\n"
    "    local t = redis.call('time')\n"
    "    now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
    "  end\n"
    "  return now\n"
    "end\n"
    "if ARGV[2] ~= '0' and clock() > tonumber(ARGV[2]) then return -1 end\n"
    "local lease = tonumber(ARGV[1])\n"
    "local function longer(k)\n"
    "  if lease > 0 and redis.call('pttl', k) < lease then\n"
    "    redis.call('pexpire', k, lease)\n"
    "  end\n"
    "end\n"
    "local function shared(t, k, f, base)\n"
    "  if t == 'p' then\n"
    "    local s = redis.call('zscore', k, f)\n"
    "    if not s or tonumber(s) <= clock() then return 0 end\n"
    "    if lease > 0 then redis.call('zadd', k, clock() + lease, f) end\n"
    "    return 1\n"
    "  end\n"
    "  local v = redis.call('hmget', k, f, 'mode')\n"
    "  if not v[2] then return 0 end\n"
    "  local c = tonumber(v[1] or '0')\n"
    "  local top = base .. f .. ':rwlock_timeout:'\n"
    "  if c < 1 or redis.call('exists', top .. c) == 0 then return 0 end\n"
    "  if lease > 0 then\n"
    "    for j = 1, c do redis.call('pexpire', top .. j, lease) end\n"
    "  end\n"
    "  longer(k)\n"
    "  return 1\n"
    "end\n"
    "local function failed(e)\n"
    "  e = type(e) == 'table' and (e.err or '') or tostring(e)\n"
    "  return string.find(e, 'WRONGTYPE') and 0 or 2\n"
    "end\n"
    "local r = {}\n"
    "local i = 3\n"
    "while i <= #ARGV do\n"
    "  local t, k, f = ARGV[i], ARGV[i + 1], ARGV[i + 2]\n"
    "  if t == 'm' or t == 'w' then\n"
    "    local h = redis.pcall('hmget', k, f, 'mode')\n"
    "    if h.err then\n"
    "      r[#r + 1] = failed(h)\n"
    "    elseif h[1] and ((t == 'm' and not h[2]) or\n"
    "                     (t == 'w' and h[2] == 'write')) then\n"
    "      if t == 'w' then\n"
    "        longer(k)\n"
    "      elseif lease > 0 then\n"
    "        redis.call('pexpire', k, lease)\n"
    "      end\n"
    "      r[#r + 1] = 1\n"
    "    else\n"
    "      r[#r + 1] = 0\n"
    "    end\n"
    "  else\n"
    "    local ok, v = pcall(shared, t, k, f, ARGV[i + 3])\n"
    "    r[#r + 1] = ok and v or failed(v)\n"
    "  end\n"
    "  i = i + (t == 'r' and 4 or 3)\n"
    "end\n"
    "return table.concat(r)\n";

/* fence (Redlock)
 * KEYS[1] fencing counter, ARGV[1] a token handed out by some master
 * Raises the counter to the token when it is below, so that the next
 * acquisition on this master draws a larger one; returns 1. A token is
 * reported only after a majority has it (see lock.c), and any later
 * majority shares a master with that one. */
static const char fence_lua[] =
    "if tonumber(redis.call('get', KEYS[1]) or '0') < tonumber(ARGV[1]) then\n"
    "  redis.call('set', KEYS[1], ARGV[1])\n"
    "end\n"
    "return 1\n";

/* multi_acquire (MultiLock)
 * KEYS[1..n] locks, ARGV[1] lease ms, ARGV[2] owner field, ARGV[3] request
 * id (as for acquire)
 * All or none, in one atomic step: {-1, i, pttl} when lock KEYS[i + 1] is
 * held by another owner (nothing taken), else {1} with one more hold on
 * every lock. A resend of an attempt already applied (its id is not above
 * the one kept with the first lock) takes nothing more. A key of another
 * kind refuses the whole (WRONGKIND). */
static const char multi_acquire_lua[] =
    KIND_LUA
    "local rid = ARGV[2] .. ':rid'\n"
    "for i = 1, #KEYS do\n"
    "  local v = redis.pcall('hmget', KEYS[i], ARGV[2], 'mode')\n"
    "  if v.err or v[2] then return other_kind(KEYS[i], 'lock') or v end\n"
    "  if not v[1] and redis.call('exists', KEYS[i]) == 1 then\n"
    "    return {-1, i - 1, redis.call('pttl', KEYS[i])}\n"
    "  end\n"
    "end\n"
    "if tonumber(ARGV[3]) <= tonumber(redis.call('hget', KEYS[1], rid) or '0') then\n"
    "  return {1}\n"
    "end\n"
    "for i = 1, #KEYS do\n"
    "  redis.call('hincrby', KEYS[i], ARGV[2], 1)\n"
    "  redis.call('hset', KEYS[i], rid, ARGV[3])\n"
    "  redis.call('pexpire', KEYS[i], ARGV[1])\n"
    "end\n"
    "return {1}\n";

/* multi_release (MultiLock)
 * KEYS[1..n] locks, KEYS[n+1..2n] their channels
 * ARGV[1] message, ARGV[2] lease ms, ARGV[3] owner field, ARGV[4] the
 * publish command (as for release), ARGV[5] request id
 * Drops one hold of the owner on every lock it holds (a lock left with
 * none is deleted and its release published, else its lease is set
 * again). Returns how many locks the owner held; a key of another kind
 * is not one of them and is left alone. A resend drops nothing a second
 * time (the request id, as for release). A channel the ACL refuses fails
 * it before anything changed (may_publish, script.h). */
static const char multi_release_lua[] =
    MAY_PUBLISH_LUA
    "local n = #KEYS / 2\n"
    "for i = n + 1, #KEYS do\n"
    "  local e = may_publish(ARGV[4], KEYS[i])\n"
    "  if e then return e end\n"
    "end\n"
    "local rid = ARGV[3] .. ':rid'\n"
    "local held = 0\n"
    "for i = 1, n do\n"
    "  local v = redis.pcall('hmget', KEYS[i], ARGV[3], rid, 'mode')\n"
    "  if not v.err and v[1] and not v[3] then\n"
    "    held = held + 1\n"
    "    if tonumber(ARGV[5]) > tonumber(v[2] or '0') then\n"
    "      local c = tonumber(v[1]) - 1\n"
    "      if c > 0 then\n"
    "        redis.call('hset', KEYS[i], ARGV[3], c, rid, ARGV[5])\n"
    "        redis.call('pexpire', KEYS[i], ARGV[2])\n"
    "      else\n"
    "        redis.call(ARGV[4], KEYS[n + i], ARGV[1])\n"
    "        redis.call('del', KEYS[i])\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "end\n"
    "return held\n";


/* Fair mode (hilock_options.fair): a FIFO of waiters in the list
 * "hilock_queue:{name}", in the lock's slot. An entry is
 *   "<deadline>:<lease>:<listener>:<wait id>:<sent>:<written>:<owner field>"
 * deadline: the server's unix time in ms after which the entry is stale
 * (its waiter gave up or died); lease: the lease it asked for; listener:
 * its client's public channel tag (never the client id, which is secret);
 * wait id: which acquire call of that owner it is; sent: the waiter's own
 * monotonic clock (ms) when it sent the request that wrote the entry;
 * written: the server's time (ms) when that request wrote it. An owner
 * has one entry
 * at most: the hash "hilock_queue:{name}:owners" maps each queued owner
 * field to its entry, so that queueing, a retry and leaving find it
 * without reading the list into Lua (with a hundred waiters, a scan of
 * the list was most of what a fair acquire cost Redis): a retry finds its
 * place with LPOS, leaving with LREM, both scans in C. Both live until the
 * last deadline at least and twice the longest wait past it at most: a
 * waiter that queues extends them only when they would expire before its
 * deadline, and then to twice its wait, so that most queueings cost one
 * PTTL and no PEXPIRE.
 *
 * A hand-off makes the first live entry the owner inside the script that
 * frees the lock: its field = 1 and the marker field "hilock:handed" =
 * "<token>:<wait id>" (the token drawn for it, the wait it went to), a
 * short lease (at most 5 s of what it asked: a waiter that died costs no
 * more), and a message "<owner tag>:<wait id>:<token>:<sent>:<span>" on
 * "<channel>:<listener>". span is the time in ms from the entry's writing
 * to the end of that lease, by the server's clock: the hold cannot end
 * before sent + span in the receiver's own clock (it sent the request
 * before the server wrote the entry), so the receiver knows, when it
 * reads the message, how much of the lease is left, however late that is
 * (see wait.c). The token is drawn (INCR) before the first PUBLISH and
 * given back (DECR) in the same call when no entry took the hold, so that
 * the counter moves only for a hold handed. The entry queued next hears
 * "wake:<ms>" on its
 * own channel, the short lease, so that its client looks again when that
 * ends (a hold handed to a waiter that died moves on then: nothing is
 * published when a lease runs out). The new owner needs no more: its
 * watchdog extends the short lease at its first renewal. Only an owner
 * that asked for a longer explicit lease claims the hold (drops the
 * marker, sets its lease) with the acquire script, as does a waiter whose
 * message was lost and whose retry finds the hold handed to that very
 * wait. The marker stays otherwise until the hold ends; re-entries of the
 * owner count as usual beside it. A Redisson RLock only looks at its own
 * field, so it stays excluded throughout. Whoever finds the lock free
 * with a live entry first hands it over (a release, or any fair acquire:
 * a hold that ran out, or one released by a client without fair mode,
 * moves on too). Stale entries are dropped where they are met.
 *
 * A hand-off that nobody received goes to the next entry in the same
 * call: PUBLISH counts the connections subscribed to the waiter's
 * client's channel, and 0 proves that nobody will act on that message
 * (the releasing client's own waiter learns it from the reply instead).
 * It does not prove the waiter dead: one client's waiters share one
 * subscriber connection, which may be reconnecting, or may not have
 * confirmed the subscription yet right after queueing. So a waiter that
 * no one heard is not handed the lock (which would only hold everyone
 * for the short lease) but keeps its place once: its entry goes back to
 * the head marked "~", and its retry on subscribing again keeps that
 * place; met deaf a second time, it is dropped (a live one queues again
 * at its next retry). Every entry of a listener found deaf is passed
 * over without a second PUBLISH. A fair acquire whose call goes past
 * such entries to the caller's own takes the lock itself in that call
 * (handed to it by message while it queued again, it would leave a second
 * entry behind). A waiter whose process was killed, its
 * connections closed, so costs one PUBLISH of a script call, not a
 * lease.
 *
 * Waiters without fair mode take their place in line too, or they would
 * never find the lock free while fair waiters hand it on among
 * themselves: one that waits and finds the lock held and a queue started
 * adds "plain:<owner field>" (see acquire), and a fair waiter that starts
 * a queue publishes a release so that they look again. A hand-off that
 * meets such a live entry gives those waiters a turn instead: the lock
 * stays free, the release is published on the lock's channel, and fair
 * acquirers leave it alone until "hilock:turn" in the owners hash has
 * passed (at most FAIR_TURN_MS) or a waiter without fair mode took it
 * (its acquire ends the turn). A turn nobody can hear (0 subscribers of
 * the lock's channel) is not given. */
/* How long a turn of the waiters without fair mode lasts at most (ms). */
#define FAIR_TURN_MS "500"
#define FAIR_ENTRY_RE "'^~?(%d+):(%d+):(%x+):(%d+):(%d+):(%d+):(.+)$'"
#define FAIR_LUA                                                            \
    "local function now_ms()\n"                                             \
    "  local t = redis.call('time')\n"                                      \
    "  return t[1] * 1000 + math.floor(t[2] / 1000)\n"                      \
    "end\n"                                                                 \
    "local function parse(e)\n"                                             \
    "  return string.match(e, " FAIR_ENTRY_RE ")\n"                         \
    "end\n"                                                                 \
    "local function owner_of(e)\n"                                          \
    "  if string.sub(e, 1, 6) == 'plain:' then return nil, math.huge end\n" \
    "  local d, l, lt, w, s, wr, f = parse(e)\n"                            \
    "  return f, tonumber(d or '0')\n"                                      \
    "end\n"                                                                 \
    "local function pop(q, own)\n"                                          \
    "  local e = redis.call('lpop', q)\n"                                   \
    "  if not e then return nil end\n"                                      \
    "  local d, l, lt, w, s, wr, f = parse(e)\n"                            \
    "  if f then redis.call('hdel', own, f) end\n"                          \
    "  return e, d, l, lt, w, s, wr, f\n"                                   \
    "end\n"                                                                 \
    "local function unskip(q, own, back)\n"                                 \
    "  for i = #back, 1, -1 do\n"                                           \
    "    local e = '~' .. back[i][1]\n"                                     \
    "    redis.call('lpush', q, e)\n"                                       \
    "    redis.call('hset', own, back[i][2], e)\n"                          \
    "  end\n"                                                               \
    "end\n"                                                                 \
    "local function turn(own, now, pub, chan, e)\n"                         \
    "  local f = string.sub(e, 7)\n"                                        \
    "  local d = tonumber(redis.call('hget', own, f) or '0')\n"             \
    "  redis.call('hdel', own, f)\n"                                        \
    "  if d <= now then return nil end\n"                                   \
    "  local n = redis.call(pub, chan, '0')\n"                              \
    "  if n == 0 then return nil end\n"                                     \
    "  redis.call('hset', own, 'hilock:turn', now + " FAIR_TURN_MS ")\n"    \
    "  if redis.call('pttl', own) < " FAIR_TURN_MS " then\n"                \
    "    redis.call('pexpire', own, " FAIR_TURN_MS ")\n"                    \
    "  end\n"                                                               \
    "  return n\n"                                                          \
    "end\n"                                                                 \
    "local function hand(lock, q, own, now, fencing, fence, pub, chan, me,\n" \
    "                    mine)\n"                                           \
    "  local deaf, back, t, ts, r = {}, nil, nil, '0', nil\n"               \
    "  while true do\n"                                                     \
    "    local e, d, l, lt, w, s, wr, f = pop(q, own)\n"                    \
    "    if not e then break end\n"                                         \
    "    if string.sub(e, 1, 6) == 'plain:' then\n"                         \
    "      r = turn(own, now, pub, chan, e)\n"                              \
    "      if r then break end\n"                                           \
    "    elseif d and tonumber(d) > now then\n"                             \
    "      if not deaf[lt] then\n"                                          \
    "        if fencing == '1' and not t then\n"                            \
    "          t = redis.call('incr', fence)\n"                             \
    "          ts = tostring(t)\n"                                          \
    "        end\n"                                                         \
    "        local tag = string.match(f, ':(%d+)$') or '0'\n"               \
    "        local ms = tonumber(l) > 5000 and '5000' or l\n"               \
    "        local span = now - tonumber(wr) + tonumber(ms)\n"              \
    "        local m = tag .. ':' .. w .. ':' .. ts .. ':' .. s .. ':' ..\n" \
    "                  span\n"                                              \
    "        if redis.call(pub, chan .. ':' .. lt, m) > 0 or lt == me or\n" \
    "           f == mine then\n"                                           \
    "          redis.call('hset', lock, f, '1', 'hilock:handed',\n"         \
    "                     ts .. ':' .. w)\n"                                \
    "          redis.call('pexpire', lock, ms)\n"                           \
    "          local nx = redis.call('lindex', q, 0)\n"                     \
    "          local nl = nx and string.match(nx, '^~?%d+:%d+:(%x+):')\n"   \
    "          if nl and not deaf[nl] then\n"                               \
    "            redis.call(pub, chan .. ':' .. nl, 'wake:' .. ms)\n"       \
    "          end\n"                                                       \
    "          r = {lt, tag, w, t or 0, s, span, f}\n"                      \
    "          break\n"                                                     \
    "        end\n"                                                         \
    "        deaf[lt] = true\n"                                             \
    "      end\n"                                                           \
    "      if string.sub(e, 1, 1) ~= '~' then\n"                            \
    "        back = back or {}\n"                                           \
    "        back[#back + 1] = {e, f}\n"                                    \
    "      end\n"                                                           \
    "    end\n"                                                             \
    "  end\n"                                                               \
    "  if back then unskip(q, own, back) end\n"                             \
    "  if t and type(r) ~= 'table' then redis.call('decr', fence) end\n"    \
    "  return r\n"                                                          \
    "end\n"

/* fair_acquire
 * KEYS[1] lock, KEYS[2] queue, KEYS[3] its owners hash, KEYS[4] the
 * fencing counter when tokens are issued
 * ARGV[1] lease ms, ARGV[2] owner field, ARGV[3] "1" to issue tokens,
 * ARGV[4] fencing counter, ARGV[5] queue, ARGV[6] mode: "w" wait (queue
 * when busy), "t" try once, "c" claim a hand-off only, ARGV[7] ms the
 * entry stays live, ARGV[8] listener, ARGV[9] wait id, ARGV[10] publish
 * command, ARGV[11] channel, ARGV[12] the sender's monotonic clock in ms
 * (echoed in a hand-off), ARGV[13] request id (as for acquire)
 * Returns {holds, token} or the PTTL, as acquire. The owner's field with
 * the marker of this wait is a hand-off to it: claimed, not counted as a
 * re-entry (the waiter that missed the message gets it so). A free lock
 * is taken only when no live entry is queued before the caller's own and
 * no turn of the waiters without fair mode is on; else it goes to the
 * first live entry (or to such a turn, published as a release), and a
 * waiting caller is queued (once per owner: a second attempt only moves
 * its deadline) and gets the PTTL, or what is left of a turn while the
 * lock is free. A waiter that starts the queue publishes a release (see
 * above). A claim that finds no hold of its owner changes nothing and
 * gets the PTTL. A hold that begins here (a free lock taken, a hand-off
 * claimed) keeps its request id as the first, as acquire does, so that a
 * late attempt's undo leaves it alone. */
static const char fair_acquire_lua[] =
    KIND_LUA
    FAIR_LUA
    "local f = ARGV[2]\n"
    "local rid = f .. ':rid'\n"
    "local v = redis.pcall('hmget', KEYS[1], f, rid, 'hilock:handed', 'mode')\n"
    "if v.err or v[4] then return other_kind(KEYS[1], 'lock') or v end\n"
    "if v[1] then\n"
    "  local ht, hw\n"
    "  if v[3] then ht, hw = string.match(v[3], '^(%d+):(%d+)$') end\n"
    "  if hw == ARGV[9] then\n"
    "    redis.call('hdel', KEYS[1], 'hilock:handed')\n"
    "    redis.call('hset', KEYS[1], rid, ARGV[13],\n"
    "               f .. '" KEYS_FIRST_RID_SUFFIX "', ARGV[13])\n"
    "    redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "    return {tonumber(v[1]), tonumber(ht)}\n"
    "  end\n"
    "  local n = tonumber(v[1])\n"
    "  if ARGV[6] ~= 'c' and tonumber(ARGV[13]) > tonumber(v[2] or '0') then\n"
    "    n = n + 1\n"
    "    redis.call('hset', KEYS[1], f, n, rid, ARGV[13])\n"
    "    redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "  end\n"
    "  local t = 0\n"
    "  if ARGV[3] == '1' then t = tonumber(redis.call('get', ARGV[4]) or '0') end\n"
    "  return {n, t}\n"
    "end\n"
    "local p = redis.call('pttl', KEYS[1])\n"
    "if ARGV[6] == 'c' then return p end\n"
    "local now = now_ms()\n"
    "local q, own = ARGV[5], KEYS[3]\n"
    "if p == -2 and\n" /* free: taken, or handed to the first live entry */
    "   tonumber(redis.call('hget', own, 'hilock:turn') or '0') <= now then\n"
    "  local first, o, d\n"
    "  while true do\n"
    "    first = redis.call('lindex', q, 0)\n"
    "    if not first then break end\n"
    "    o, d = owner_of(first)\n"
    "    if d > now then break end\n"
    "    pop(q, own)\n"
    "  end\n"
    "  if not first or o == f then\n"
    "    if first then pop(q, own) end\n"
    "    redis.call('hset', KEYS[1], f, 1, rid, ARGV[13],\n"
    "               f .. '" KEYS_FIRST_RID_SUFFIX "', ARGV[13])\n"
    "    redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "    local t = 0\n"
    "    if ARGV[3] == '1' then t = redis.call('incr', ARGV[4]) end\n"
    "    return {1, t}\n"
    "  end\n"
    "  local h = hand(KEYS[1], q, own, now, ARGV[3], ARGV[4], ARGV[10],\n"
    "                 ARGV[11], nil, f)\n"
    "  if not h then\n"
    "    redis.call(ARGV[10], ARGV[11], '0')\n"
    "  elseif type(h) == 'table' and h[7] == f then\n"
    /* past entries nobody heard, to the caller's own: it holds it now */
    "    redis.call('hdel', KEYS[1], 'hilock:handed')\n"
    "    redis.call('hset', KEYS[1], rid, ARGV[13],\n"
    "               f .. '" KEYS_FIRST_RID_SUFFIX "', ARGV[13])\n"
    "    redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "    return {1, h[4]}\n"
    "  end\n"
    "end\n"
    "if ARGV[6] == 'w' then\n"
    "  local ms = tonumber(ARGV[7])\n"
    "  local e = (now + ms) .. ':' .. ARGV[1] .. ':' .. ARGV[8] .. ':' ..\n"
    "            ARGV[9] .. ':' .. ARGV[12] .. ':' .. now .. ':' .. f\n"
    "  local at\n"
    "  if redis.call('hsetnx', own, f, e) == 0 then\n" /* a retry keeps its place */
    "    at = redis.call('lpos', q, redis.call('hget', own, f))\n"
    "    redis.call('hset', own, f, e)\n"
    "  end\n"
    "  if at then\n"
    "    redis.call('lset', q, at, e)\n"
    "  elseif redis.call('rpush', q, e) == 1 then\n" /* a new queue */
    "    redis.call(ARGV[10], ARGV[11], '0')\n"
    "  end\n"
    "  if redis.call('pttl', q) < ms then\n" /* see FAIR_LUA */
    "    redis.call('pexpire', q, 2 * ms)\n"
    "    redis.call('pexpire', own, 2 * ms)\n"
    "  end\n"
    "end\n"
    "if p == -2 then\n" /* it was free: what a hand-off or a turn left */
    "  p = redis.call('pttl', KEYS[1])\n"
    "  if p == -2 then\n"
    "    local turn = tonumber(redis.call('hget', own, 'hilock:turn') or '0')\n"
    "    p = math.max(turn - now, 1)\n"
    "  end\n"
    "end\n"
    "return p\n";

/* fair_release
 * KEYS[1..4] as for fair_acquire
 * ARGV[1..6] as for release (the request id is ARGV[11]), ARGV[7] queue,
 * ARGV[8] "1" to issue tokens, ARGV[9] fencing counter, ARGV[10] the
 * caller's listener
 * As release, but the owner's last hold goes to the first live entry of
 * the queue (see above) when there is one: then {0, 0, 0}, or {0, 0, owner
 * tag, wait id, token, sent, span} (as in the message) when that waiter
 * is the caller's client's, which delivers the hand-off itself without
 * waiting for the message. With no live entry, or a turn of the waiters
 * without fair mode, the lock is deleted and the release published, as
 * release. */
static const char fair_release_lua[] =
    KIND_LUA
    MAY_PUBLISH_LUA
    FAIR_LUA
    "local rid = ARGV[3] .. ':rid'\n"
    "local v = redis.pcall('hmget', KEYS[1], ARGV[3], rid, 'mode')\n"
    "if v.err or v[3] then return other_kind(KEYS[1], 'lock') or v end\n"
    "if not v[1] then return nil end\n"
    "if tonumber(ARGV[11]) <= tonumber(v[2] or '0') then\n"
    "  return {tonumber(v[1]), 0}\n"
    "end\n"
    "local n = tonumber(v[1]) - tonumber(ARGV[4])\n"
    "if n > 0 then\n"
    "  redis.call('hset', KEYS[1], ARGV[3], n, rid, ARGV[11])\n"
    "  redis.call('pexpire', KEYS[1], ARGV[2])\n"
    "  return {n, 0}\n"
    "end\n"
    "local e = may_publish(ARGV[5], ARGV[6])\n"
    "if e then return e end\n"
    "redis.call('del', KEYS[1])\n"
    "local h = hand(KEYS[1], ARGV[7], KEYS[3], now_ms(), ARGV[8], ARGV[9],\n"
    "               ARGV[5], ARGV[6], ARGV[10])\n"
    "if not h then return {0, redis.call(ARGV[5], ARGV[6], ARGV[1])} end\n"
    "if type(h) == 'number' then return {0, h} end\n"
    "if h[1] == ARGV[10] then return {0, 0, h[2], h[3], h[4], h[5], h[6]} end\n"
    "return {0, 0, 0}\n";

/* fair_leave (a fair wait cancelled or timed out)
 * KEYS[1..4] as for fair_acquire
 * ARGV[1] owner field, ARGV[2] queue, ARGV[3] "1" to issue tokens, ARGV[4]
 * fencing counter, ARGV[5] publish command, ARGV[6] channel, ARGV[7]
 * release message, ARGV[8] the wait id that gave up
 * Removes the owner's entry, and passes on a hand-off to that wait that
 * raced the giving up (the hold it got: the lock moves on when the owner
 * holds nothing else). Returns 1 when it passed one on, else 0. Sent
 * again, it finds nothing more to do. */
static const char fair_leave_lua[] =
    FAIR_LUA
    "local own = KEYS[3]\n"
    "local mine = redis.call('hget', own, ARGV[1])\n"
    "if mine then\n"
    "  redis.call('lrem', ARGV[2], 1, mine)\n"
    "  redis.call('hdel', own, ARGV[1])\n"
    "end\n"
    "local v = redis.call('hmget', KEYS[1], ARGV[1], 'hilock:handed')\n"
    "if not v[1] or string.match(v[2] or '', ':(%d+)$') ~= ARGV[8] then\n"
    "  return 0\n"
    "end\n"
    "if tonumber(v[1]) > 1 then\n"
    "  redis.call('hincrby', KEYS[1], ARGV[1], -1)\n"
    "  redis.call('hdel', KEYS[1], 'hilock:handed')\n"
    "  return 1\n"
    "end\n"
    "redis.call('del', KEYS[1])\n"
    "if not hand(KEYS[1], ARGV[2], own, now_ms(), ARGV[3], ARGV[4], ARGV[5],\n"
    "            ARGV[6]) then\n"
    "  redis.call(ARGV[5], ARGV[6], ARGV[7])\n"
    "end\n"
    "return 1\n";

/* query
 * KEYS[1] lock
 * ARGV[1] "held", "count" or "ttl", ARGV[2] owner field, ARGV[3] the kind
 * asked about: "lock" or "rwlock"
 * Returns what HEXISTS, HGET or PTTL of the key would (1 or 0; the holds
 * or nil; the PTTL), or refuses a key of another kind (WRONGKIND): a
 * lock's owner field and a reader's are named alike. */
static const char query_lua[] =
    KIND_LUA
    "local v = redis.pcall('hmget', KEYS[1], ARGV[2], 'mode')\n"
    "if v.err or ((v[2] and 'rwlock' or 'lock') ~= ARGV[3] and\n"
    "             redis.call('exists', KEYS[1]) == 1) then\n"
    "  return other_kind(KEYS[1], ARGV[3]) or v\n"
    "end\n"
    "if ARGV[1] == 'held' then return v[1] and 1 or 0 end\n"
    "if ARGV[1] == 'count' then return v[1] end\n"
    "return redis.call('pttl', KEYS[1])\n";

static const char *const scripts[SCRIPT_COUNT] = {
    [SCRIPT_ACQUIRE] = acquire_lua,
    [SCRIPT_RELEASE] = release_lua,
    [SCRIPT_RENEW] = renew_lua,
    [SCRIPT_FENCE] = fence_lua,
    [SCRIPT_MULTI_ACQUIRE] = multi_acquire_lua,
    [SCRIPT_MULTI_RELEASE] = multi_release_lua,
    [SCRIPT_FAIR_ACQUIRE] = fair_acquire_lua,
    [SCRIPT_FAIR_RELEASE] = fair_release_lua,
    [SCRIPT_FAIR_LEAVE] = fair_leave_lua,
    [SCRIPT_READ_ACQUIRE] = script_read_acquire_lua,
    [SCRIPT_WRITE_ACQUIRE] = script_write_acquire_lua,
    [SCRIPT_READ_RELEASE] = script_read_release_lua,
    [SCRIPT_WRITE_RELEASE] = script_write_release_lua,
    [SCRIPT_WRITE_LEAVE] = script_write_leave_lua,
    [SCRIPT_SEM_ACQUIRE] = script_sem_acquire_lua,
    [SCRIPT_SEM_RELEASE] = script_sem_release_lua,
    [SCRIPT_PERMIT_ACQUIRE] = script_permit_acquire_lua,
    [SCRIPT_PERMIT_RELEASE] = script_permit_release_lua,
    [SCRIPT_SEM_INIT] = script_sem_init_lua,
    [SCRIPT_SEM_AVAILABLE] = script_sem_available_lua,
    [SCRIPT_UNDO] = undo_lua,
    [SCRIPT_QUERY] = query_lua,
    [SCRIPT_GUARDED] = script_guarded_lua,
};

void script_set_init(struct script_set *s)
{
    for (int i = 0; i < SCRIPT_COUNT; i++)
        sha1_hex(scripts[i], strlen(scripts[i]), s->sha[i]);
}

const char *script_body(enum script_id id, size_t *len)
{
    *len = strlen(scripts[id]);
    return scripts[id];
}
