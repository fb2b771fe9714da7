/* SPDX-License-Identifier: BSD-3-Clause */
/* plain.c -- the plain fast path, a mode of the lock kind (kind_mutex.c).
 *
 * A lock (no fencing token, one node) is taken with RESTORE when its
 * handle's owner holds nothing and this is the acquire's first attempt,
 * and a single hold is given back with HDEL and the release message
 * (in fair mode only by a client with no waiter of its own parked on the
 * name, whose release would hand the lock on at once, and for a hold taken
 * without a wait; the HDEL takes the hand-off marker too), or, quiet (its
 * client's own waiter is next, see wait.c), with the HDEL alone: Redis
 * runs no script for the common uncontended pair.
 * While waiters queue on the name the key exists, with the queue's
 * marker when no one holds it (src/lua/lib/fair.lua), so a RESTORE that
 * succeeds passed nobody in line; a fair client with waiters of its own
 * parked on the name sends the fair script instead (the key may be
 * absent with them queued: a lease ran out), and a refused or resent
 * RESTORE goes as the fair script. The hash is the one the scripts write (Redisson's
 * layout with the request id field), so both paths mix freely:
 * - RESTORE refused (BUSYKEY: the key exists) goes again, with a new
 *   request id (it was not applied), as RESTORE with a look at the lock
 *   in one transaction (PTTL, and HMGET of what acquire.lua reads first:
 *   the owner's own field, another kind's "mode", the fair queue's
 *   marker); a waiting acquire's later attempts go so too. A lock that
 *   is simply another owner's, nothing of that there, is busy with the
 *   PTTL as the script would answer, and no script runs while a default
 *   waiter waits; else the attempt goes again as the acquire script,
 *   which decides as ever (it refuses another kind, puts the waiter in
 *   the fair queue, counts a re-entry), and so do the acquire's later
 *   attempts (a waiter in line leaves it by the script that takes the
 *   lock);
 * - a RESTORE resent after a dropped connection may have been applied, so
 *   it goes as the acquire script with its own request id, which the hash
 *   then holds: the script sees the resend and counts nothing twice;
 * - HDEL removes only this owner's fields, so it never touches another
 *   owner's hold, is harmless to repeat, and its count says whether the
 *   owner held the lock; it goes in one transaction with the release
 *   message (whose count is the release script's), so that a refused
 *   PUBLISH (an ACL without the channel) applies nothing and the script
 *   then reports it, as it would have; a release message after nothing
 *   was removed only makes waiters look once more;
 * - a release that a cluster refused (TRYAGAIN, a redirect) goes again
 *   as the release script, with a new request id: inside a transaction
 *   Redis counts SPUBLISH's channel as a key, one that no node holds, so
 *   while the slot migrates the old master answers the transaction
 *   TRYAGAIN as long as the lock's key is there, up to the end of the
 *   migration; the script, whose one key is the lock, runs where that key
 *   is (a command of the transaction redirected fails EXEC with
 *   EXECABORT, which sends the script too);
 * - HDEL goes only while the hold is valid (its lease cannot have run
 *   out) and the owner holds no read lock of the name: a reader's field
 *   in a read-write hash is named as a lock's owner field, and such a key
 *   (made after the lock was deleted) goes to the script, which refuses
 *   it;
 * - any other error reply (an ACL without RESTORE, a server that lacks
 *   it) sends the script instead, and turns the fast path off for the
 *   client when the command itself was refused.
 * A plain command is encoded into the client's scratch buffer
 * (fanout_plain_cmd) and kept nowhere once hiredis has it: whatever it
 * becomes when it goes again (plain_again), the HDEL that goes as it was
 * too, is encoded anew. */
#include "plain.h"

#include "clock.h"
#include "fair.h"
#include "fanout.h"
#include "hot.h"

/* Whether the client may use the plain commands for a lock: one node, no
 * fencing token, and no refusal of them so far. */
static int plain_ok(const struct hilock_lock *lock)
{
    const struct engine *eng = lock->eng;
    return eng->nnodes == 1 && !eng->opts->fencing &&
           !eng->opts->scripts_only && !eng->plain_refused;
}

/* Whether a waiter's attempt at lock may go plain (see plain_retake):
 * the common waiter of default mode, whose owner holds nothing and whose
 * acquire has met nothing that only the script settles. */
static int retake_ok(const struct hilock_lock *lock)
{
    return plain_ok(lock) && !fair_on(lock) && !lock->pending.scripted &&
           lock->hold.count == 0 && !handle_owner_holds(lock);
}

static int plain_again(struct fanout *op, struct resp_buf *cmd,
                       enum req_again why);

/* Encode into cmd the plain release of lock w (HDEL, and the release
 * message unless it is quiet), and mark op plain. */
static HILOCK_INLINE void encode_drop(struct hilock_lock *lock,
                                      struct fanout *op,
                                      struct resp_buf *cmd,
                                      const struct wire_lock *w)
{
    const char *publish =
        lock->pending.quiet ? NULL : topo_publish(lock->eng->topo);
    op->again = plain_again;
    fanout_plain(op,
                 fair_on(lock) ? wire_fair_drop(cmd, w, publish)
                               : wire_drop(cmd, w, publish),
                 0, 0);
}

/* Encode into cmd op's attempt as RESTORE, and with a look when look: a
 * waiter's attempt (wire_look). 0, or -1 when nothing was written.
 * Inline: with look 0 the first attempt's hot path keeps no branch. */
static inline int encode_take(struct fanout *op, struct resp_buf *cmd,
                              const struct wire_lock *w, int look)
{
    size_t second = 0, third = 0;
    if (wire_take(cmd, w, op->lease_ms, op->rid) != 0)
        return -1;
    if (look) {
        second = cmd->len;
        third = wire_look(cmd, w);
    }
    op->again = plain_again;
    fanout_plain(op, second, third, look);
    return 0;
}

/* op->again of a plain acquire or release (see fanout.h). An attempt
 * refused unapplied (a cluster's redirect) goes again as RESTORE, with a
 * new request id; a RESTORE that found the key goes on as a waiter's
 * attempt (with the look), when it may, so that a lock simply held by
 * another owner costs no script; anything else goes as the script, and
 * so do the acquire's later attempts. */
static int plain_again(struct fanout *op, struct resp_buf *cmd,
                       enum req_again why)
{
    struct hilock_lock *lock = op->ctx;
    struct engine *eng = lock->eng;
    eng->plain_refused |= why == REQ_AGAIN_NO_PLAIN;
    struct wire_lock w = handle_wire(lock);
    if (op->kind == OP_KIND_RELEASE && why == REQ_AGAIN_DROPPED) {
        resp_reset(cmd); /* sent from the scratch buffer: nothing kept */
        encode_drop(lock, op, cmd, &w); /* HDEL goes again as it was */
        return -1;
    }
    if (op->kind == OP_KIND_RELEASE && fair_on(lock)) {
        resp_reset(cmd);
        return fair_release_into(lock, cmd, 1, ++eng->seq);
    }
    if (op->kind == OP_KIND_RELEASE) {
        resp_reset(cmd);
        wire_release(cmd, eng->scripts.sha[SCRIPT_RELEASE], &w, ++eng->seq,
                     handle_hold_lease(lock), 1, topo_publish(eng->topo),
                     lock->pending.quiet);
        return SCRIPT_RELEASE;
    }
    if (why != REQ_AGAIN_DROPPED)
        op->rid = ++eng->seq; /* not applied: a new request */
    w = fair_attempt_wire(lock);
    resp_reset(cmd);
    if ((why == REQ_AGAIN_REFUSED ||
         (why == REQ_AGAIN_BUSYKEY && retake_ok(lock))) &&
        encode_take(op, cmd, &w, why == REQ_AGAIN_BUSYKEY) == 0)
        return -1;
    resp_reset(cmd);
    lock->pending.scripted = 1;
    if (fair_on(lock))
        return fair_attempt_into(lock, cmd, op->rid);
    wire_acquire(cmd, eng->scripts.sha[SCRIPT_ACQUIRE], &w, op->lease_ms, 0,
                 topo_publish(eng->topo), op->rid);
    return SCRIPT_ACQUIRE;
}

/* Encode into op the acquire's attempt at lock with request id rid as
 * RESTORE, with the look when look. 1 when written, 0 when not (the
 * script goes). */
static inline int take(struct hilock_lock *lock, struct fanout *op,
                       uint64_t rid, int look)
{
    struct wire_lock w = handle_wire(lock);
    op->rid = rid;
    op->lease_ms = handle_acquire_lease(lock);
    if (encode_take(op, fanout_plain_cmd(op), &w, look) == 0)
        return 1;
    req_scratch_drop(op->node[0].req); /* the script goes instead */
    return 0;
}

HILOCK_HOT
int plain_take(struct hilock_lock *lock, struct fanout *op, uint64_t rid)
{
    if (!plain_ok(lock) || lock->hold.count > 0 ||
        handle_owner_holds(lock) || !fair_plain_ok(lock))
        return 0;
    return take(lock, op, rid, 0);
}

HILOCK_COLD
int plain_retake(struct hilock_lock *lock, struct fanout *op, uint64_t rid)
{
    return retake_ok(lock) && take(lock, op, rid, 1);
}

/* The time now (ms), as the caller of kind_release_new read it for op. */
static uint64_t now_ms(const struct fanout *op)
{
    return op->sent_ms ? op->sent_ms : clock_now_ms();
}

HILOCK_HOT
int plain_drop(struct hilock_lock *lock, const struct wire_lock *w,
               struct fanout *op, uint32_t drop)
{
    if (!plain_ok(lock) || drop != 1 || lock->hold.count != 1 ||
        lock->hold.unreleased || lock->twinned ||
        now_ms(op) >= lock->wd.valid_until ||
        handle_field_shared(lock) || !fair_plain_ok(lock))
        return 0;
    encode_drop(lock, op, fanout_plain_cmd(op), w);
    return 1;
}
