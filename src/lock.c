/* SPDX-License-Identifier: BSD-3-Clause */
/* lock.c -- the lock operations: acquire, release, cancel, free, queries,
 * renew; the top of the engine.
 *
 * A handle is one name plus one owner. At most one acquire or release is
 * pending on it (lock->op); queries and renewals may run alongside. Handles
 * of one name and owner (twins) share one hold in Redis: what a reply says
 * about that hold (a new lease, its end) is applied to all of them. The
 * files below report here through eng->hooks, which lock_engine_init fills
 * in. The user's callback is always the last thing a code path does with
 * the lock. */
#include "lock.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "backoff.h"
#include "clock.h"
#include "handle.h"
#include "reply.h"
#include "wait.h"
#include "watchdog.h"
#include "wire.h"

/* Delay before the next attempt of a wait whose attempt failed on the way
 * (the connection's own backoff paces reconnects). */
#define ACQUIRE_RETRY_MS 50
/* Fair mode: the longest a queue entry stays live without a retry of its
 * waiter refreshing it (see script.c): a client that died leaves an entry
 * that is skipped after this at most. */
#define FAIR_ENTRY_MAX_MS 60000
/* Fair mode: the longest lease a hand-off sets (the "5000" of
 * src/lua/lib/fair.lua). */
#define FAIR_HANDOFF_LEASE_MS 5000
/* Read-write locks: how long a waiting writer's mark keeps new readers
 * off (see src/lua/lib/rw.lua), and how often at least the writer retries
 * (which renews the mark) while it waits. A writer that dies while waiting
 * keeps readers off for this long at most. */
#define RW_WRITER_MARK_MS 3000
#define RW_WRITER_RETRY_MS (RW_WRITER_MARK_MS / 3)
/* Counting semaphores: the shortest time the request ids applied are
 * kept (see src/lua/lib/sem_kind.lua); a request cannot be resent later
 * than its deadline, so four request timeouts are kept when that is
 * longer. */
#define SEM_RID_TTL_MS 60000

static int closing(const struct hilock_lock *lock)
{
    return lock->eng->guard->closing;
}

/* Whether the lock is taken in fair mode (hilock_options.fair; locks
 * only). */
static int fair(const struct hilock_lock *lock)
{
    return lock->eng->listener != NULL && lock->kind == KIND_MUTEX;
}

/* How long the pending wait's queue entry stays live (ms, at least 1). */
static uint32_t entry_ms(const struct hilock_lock *lock, uint64_t now)
{
    uint64_t deadline = handle_wait_deadline(lock);
    uint64_t left = deadline > now ? deadline - now : 1;
    return (uint32_t)(left < FAIR_ENTRY_MAX_MS ? left : FAIR_ENTRY_MAX_MS);
}

/* The fair scripts' view of the client and of the pending wait. */
static struct wire_fair fair_args(const struct hilock_lock *lock)
{
    uint64_t now = clock_now_ms();
    struct wire_fair f = {lock->eng->listener, entry_ms(lock, now),
                          lock->wait_id, topo_publish(lock->eng->topo), now};
    return f;
}

/* lock's wire view for an attempt of its acquire: a waiting one (not
 * fair) joins the fair queue of its name if there is one (script.c). */
static struct wire_lock attempt_wire(const struct hilock_lock *lock)
{
    struct wire_lock w = handle_wire(lock);
    if (handle_wait_deadline(lock))
        w.entry_ms = entry_ms(lock, clock_now_ms());
    return w;
}

static void leave_done(struct op *op, int status,
                       const struct op_result *res)
{
    (void)op;
    (void)status;
    (void)res; /* not sent: the entry goes stale by its deadline */
}

/* A fair wait ended without the lock: take its entry out of the queue,
 * and pass on a hand-off that raced the giving up. A waiting writer's
 * mark goes the same way (sent after its last attempt, which may renew
 * it). Best effort. */
static void send_leave(struct hilock_lock *lock)
{
    struct engine *eng = lock->eng;
    struct wire_lock w = handle_wire(lock);
    struct op *op = op_new(eng, OP_KIND_LEAVE, -1, lock->slot, 0, leave_done);
    if (!op)
        return;
    if (lock->kind == KIND_WRITE) {
        op_eval(op, SCRIPT_WRITE_LEAVE);
        wire_write_leave(op_cmd(op), eng->scripts.sha[SCRIPT_WRITE_LEAVE],
                         &w);
    } else {
        struct wire_fair f = fair_args(lock);
        op_eval(op, SCRIPT_FAIR_LEAVE);
        wire_fair_leave(op_cmd(op), eng->scripts.sha[SCRIPT_FAIR_LEAVE], &w,
                        eng->opts->fencing, &f);
    }
    handle_attach(lock, op);
    op_submit(op, 0);
}

/* Finish the pending op: clear it, then call the user's callback (last). */
static void finish_op(struct hilock_lock *lock, int status, int64_t value)
{
    hilock_lock_cb *cb = lock->op_cb;
    void *arg = lock->op_arg;
    stats_acquire_end(&lock->eng->stats, lock->op == OP_ACQUIRE, status);
    if (lock->op == OP_ACQUIRE) {
        wait_end(lock);
        if (lock->queued && status != 0)
            send_leave(lock);
        lock->queued = 0;
        lock->handed = 0;
        lock->unsure = 0;
    }
    lock->op = OP_NONE;
    lock->op_cb = NULL;
    lock->op_arg = NULL;
    lock->op_pending = NULL;
    if (closing(lock) || lock->freeing)
        status = HILOCK_ECANCELED;
    cb(lock, status, status == HILOCK_ECANCELED ? 0 : value, arg);
}

/* The handle's hold ended (released, lost, freed): stop its renewals. */
static void hold_ended(struct hilock_lock *lock)
{
    watchdog_forget(lock);
    handle_hold_end(lock);
    lock->holds = 0;
    lock->token = 0;
    lock->auto_renew = 0;
}

/* The hold of a handle that counted on it is gone: tell its on_lost. A
 * handle whose release of its last hold is under way counts on nothing:
 * that release's callback tells how the hold ended. */
static void lock_lost(struct hilock_lock *lock)
{
    hilock_lock_cb *cb = lock->lost_cb;
    void *arg = lock->lost_arg;
    int held = lock->holds > (lock->op == OP_RELEASE ? 1u : 0u);
    lock->eng->stats.lost += held && !lock->freeing && !closing(lock);
    hold_ended(lock);
    if (held && cb && !lock->freeing && !closing(lock))
        cb(lock, HILOCK_ELOST, 0, arg);
}

/* Redis confirmed the owner's hold with lease_ms from a request sent at
 * sent_ms: every holding twin takes the new lease and validity. */
static void share_lease(struct hilock_lock *lock, uint64_t sent_ms,
                        uint32_t lease_ms)
{
    struct hilock_lock *t[HANDLE_TWINS_MAX];
    size_t n = handle_twins(lock, t);
    for (size_t i = 0; i < n; i++) {
        if (t[i]->holds > 0 && !t[i]->freeing) {
            t[i]->lease_ms = lease_ms;
            watchdog_confirmed(t[i], sent_ms);
        }
        handle_unref(t[i]);
    }
}

/* Redis says the owner holds nothing: every twin that counted on the hold
 * (lock included) is told. */
static void share_end(struct hilock_lock *lock)
{
    struct hilock_lock *t[HANDLE_TWINS_MAX];
    size_t n = handle_twins(lock, t);
    for (size_t i = 0; i < n; i++) {
        lock_lost(t[i]);
        handle_unref(t[i]);
    }
}

/* The lease a release sets when holds remain. */
static uint32_t lock_lease(const struct hilock_lock *lock)
{
    return engine_lease(lock->eng, lock->lease_ms);
}

static void acquire_done(struct op *op, int status,
                         const struct op_result *res);
static void acquire_late(struct op *op, size_t i,
                         const struct op_result *res);

/* The lease the pending acquire asks for. */
static uint32_t acquire_lease(const struct hilock_lock *lock)
{
    return engine_lease(lock->eng, lock->op_lease_ms);
}

/* The deadline of each master's part of an acquire: on several masters a
 * tenth of the lease (at least 10 ms), so that one slow master cannot eat
 * the validity; on one node the request timeout. */
static uint32_t part_timeout(const struct hilock_lock *lock)
{
    uint32_t t, max = lock->eng->opts->request_timeout_ms;
    if (lock->eng->nnodes == 1)
        return 0;
    t = acquire_lease(lock) / 10;
    t = t < 10 ? 10 : t;
    return t < max ? t : max;
}

/* How long a waiting writer's mark lasts: RW_WRITER_MARK_MS, or less when
 * its wait ends sooner. */
static uint32_t writer_mark_ms(const struct hilock_lock *lock)
{
    uint64_t now = clock_now_ms(), deadline = handle_wait_deadline(lock);
    uint64_t left = deadline > now ? deadline - now : 1;
    return (uint32_t)(left < RW_WRITER_MARK_MS ? left : RW_WRITER_MARK_MS);
}

static uint32_t sem_rid_ttl(const struct engine *eng)
{
    uint64_t t = 4 * (uint64_t)eng->opts->request_timeout_ms;
    return t > SEM_RID_TTL_MS ? (t < INT32_MAX ? (uint32_t)t : INT32_MAX)
                              : SEM_RID_TTL_MS;
}

/* The acquire [0] and release [1] scripts of the kinds other than a
 * lock's. */
static const uint8_t kind_scripts[][2] = {
    [KIND_READ] = {SCRIPT_READ_ACQUIRE, SCRIPT_READ_RELEASE},
    [KIND_WRITE] = {SCRIPT_WRITE_ACQUIRE, SCRIPT_WRITE_RELEASE},
    [KIND_SEM] = {SCRIPT_SEM_ACQUIRE, SCRIPT_SEM_RELEASE},
    [KIND_PERMIT] = {SCRIPT_PERMIT_ACQUIRE, SCRIPT_PERMIT_RELEASE},
};

/* Mark op as running lock's acquire (0) or release (1) script; its
 * digest. */
static const char *kind_eval(const struct hilock_lock *lock, struct op *op,
                             int release)
{
    enum script_id id = (enum script_id)kind_scripts[lock->kind][release];
    op_eval(op, id);
    return lock->eng->scripts.sha[id];
}

/* Encode the pending acquire of a read-write lock side or a semaphore
 * (lock->op_lease_ms: its permits) into op, as request id rid. */
static void encode_acquire(struct hilock_lock *lock, struct op *op,
                           uint64_t rid)
{
    struct engine *eng = lock->eng;
    struct wire_lock w = handle_wire(lock);
    const char *sha = kind_eval(lock, op, 0);
    if (lock->kind == KIND_SEM)
        wire_sem_acquire(op_cmd(op), sha, &w, lock->op_lease_ms,
                         sem_rid_ttl(eng), rid);
    else if (lock->kind == KIND_PERMIT)
        wire_permit_acquire(op_cmd(op), sha, &w, acquire_lease(lock),
                            topo_publish(eng->topo), rid);
    else
        wire_rw_acquire(op_cmd(op), sha, &w, acquire_lease(lock),
                        handle_wait_deadline(lock) != 0,
                        writer_mark_ms(lock), rid);
}

/* The plain fast path. A lock (not fair, no fencing token, one node)
 * is taken with RESTORE when its handle's owner holds nothing and this is
 * the acquire's first attempt, and a single hold is given back with HDEL
 * and the release message: Redis runs no script for the common
 * uncontended pair. The hash is the one the scripts write (Redisson's
 * layout with the request id field), so both paths mix freely:
 * - RESTORE refused (BUSYKEY: the key exists) goes again as the acquire
 *   script, with a new request id (it was not applied), and the script
 *   decides as ever; a waiter's later attempts run the script at once;
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
 * - HDEL goes only while the hold is valid (its lease cannot have run
 *   out) and the owner holds no read lock of the name: a reader's field
 *   in a read-write hash is named as a lock's owner field, and such a key
 *   (made after the lock was deleted) goes to the script, which refuses
 *   it;
 * - any other error reply (an ACL without RESTORE, a server that lacks
 *   it) sends the script instead, and turns the fast path off for the
 *   client when the command itself was refused. */
static int plain_ok(const struct hilock_lock *lock)
{
    const struct engine *eng = lock->eng;
    return lock->kind == KIND_MUTEX && !fair(lock) && eng->nnodes == 1 &&
           !eng->opts->fencing && !eng->opts->scripts_only &&
           !eng->plain_refused;
}

/* op->again of a plain acquire or release (see op.h). */
static int plain_again(struct op *op, struct resp_buf *cmd,
                       enum req_again why)
{
    struct hilock_lock *lock = op->ctx;
    struct engine *eng = lock->eng;
    eng->plain_refused |= why == REQ_AGAIN_NO_PLAIN;
    if (op->kind == OP_KIND_RELEASE &&
        (why == REQ_AGAIN_DROPPED || why == REQ_AGAIN_REFUSED))
        return -1; /* HDEL goes again as it is */
    struct wire_lock w = handle_wire(lock);
    if (op->kind == OP_KIND_RELEASE) {
        resp_reset(cmd);
        wire_release(cmd, eng->scripts.sha[SCRIPT_RELEASE], &w, ++eng->seq,
                     lock_lease(lock), 1, topo_publish(eng->topo));
        return SCRIPT_RELEASE;
    }
    if (why != REQ_AGAIN_DROPPED)
        op->rid = ++eng->seq; /* not applied: a new request */
    w = attempt_wire(lock);
    resp_reset(cmd);
    if (why == REQ_AGAIN_REFUSED &&
        wire_take(cmd, &w, op->lease_ms, op->rid) == 0)
        return -1;
    resp_reset(cmd);
    wire_acquire(cmd, eng->scripts.sha[SCRIPT_ACQUIRE], &w, op->lease_ms, 0,
                 op->rid);
    return SCRIPT_ACQUIRE;
}

/* op->undo of a lock's acquire attempt (see op.h): the undo script, by
 * the attempt's own request id. */
static int attempt_undo(struct op *op, struct resp_buf *cmd, uint64_t rid)
{
    struct hilock_lock *lock = op->ctx;
    struct engine *eng = lock->eng;
    struct wire_lock w = handle_wire(lock);
    resp_reset(cmd);
    wire_undo(cmd, eng->scripts.sha[SCRIPT_UNDO], &w, rid, ++eng->seq,
              topo_publish(eng->topo));
    return SCRIPT_UNDO;
}

/* Encode the first attempt of lock w's acquire as RESTORE when it may go
 * plain. Returns 1 when it did. */
static int plain_take(struct hilock_lock *lock, const struct wire_lock *w,
                      struct op *op)
{
    if (!plain_ok(lock) || lock->holds > 0 || handle_owner_holds(lock))
        return 0;
    op->rid = ++lock->eng->seq;
    op->lease_ms = acquire_lease(lock);
    if (wire_take(op_cmd(op), w, op->lease_ms, op->rid) != 0)
        return 0; /* nothing written: the script goes */
    op->again = plain_again;
    op_plain(op, 0);
    return 1;
}

/* Encode a release of drop holds of lock w as HDEL and the release
 * message when it may go plain: the owner's only hold. 1 when it did. */
static int plain_drop(struct hilock_lock *lock, const struct wire_lock *w,
                      struct op *op, uint32_t drop)
{
    if (!plain_ok(lock) || drop != 1 || lock->holds != 1 ||
        lock->unreleased || lock->twinned ||
        clock_now_ms() >= lock->valid_until ||
        handle_owner_holds_as(lock, KIND_READ))
        return 0;
    op->again = plain_again;
    op_plain(op, wire_drop(op_cmd(op), w, topo_publish(lock->eng->topo)));
    return 1;
}

/* Send one acquire attempt for the pending acquire to every node, with one
 * request id (a resend is applied once; a NOSCRIPT resend takes a new id,
 * see op.c); the first attempt may go plain. Returns 0 or ENOMEM. */
static int send_attempt(struct hilock_lock *lock, int first)
{
    struct engine *eng = lock->eng;
    struct wire_lock w = attempt_wire(lock);
    struct op *op =
        op_new(eng, OP_KIND_ACQUIRE, -1, lock->slot, 0, acquire_done);
    if (!op)
        return HILOCK_ENOMEM;
    op->late = acquire_late;
    if (fair(lock)) {
        struct wire_fair f = fair_args(lock);
        enum wire_fair_mode m =
            handle_wait_deadline(lock) ? WIRE_FAIR_WAIT : WIRE_FAIR_TRY;
        op_eval(op, SCRIPT_FAIR_ACQUIRE);
        wire_fair_acquire(op_cmd(op), eng->scripts.sha[SCRIPT_FAIR_ACQUIRE],
                          &w, acquire_lease(lock), eng->opts->fencing, m, &f,
                          ++eng->seq);
        lock->queued |= m == WIRE_FAIR_WAIT;
        lock->handed = 0;
    } else if (lock->kind != KIND_MUTEX) {
        encode_acquire(lock, op, ++eng->seq);
        lock->queued |= lock->kind == KIND_WRITE && handle_wait_deadline(lock);
    } else if (!first || !plain_take(lock, &w, op)) {
        op_eval(op, SCRIPT_ACQUIRE);
        wire_acquire(op_cmd(op), eng->scripts.sha[SCRIPT_ACQUIRE], &w,
                     acquire_lease(lock), eng->opts->fencing, ++eng->seq);
    }
    if (lock->kind == KIND_MUTEX && !fair(lock))
        op->undo = attempt_undo;
    handle_attach(lock, op);
    lock->op_pending = op;
    op_submit(op, part_timeout(lock));
    return 0;
}

/* wait.c's turn: the head waiter tries again. */
static void hook_attempt(struct hilock_lock *lock)
{
    if (lock->op_pending)
        return;
    int rc = send_attempt(lock, 0);
    if (rc)
        finish_op(lock, rc, 0);
}

/* wait.c: the wait's deadline passed. */
static void hook_wait_expired(struct hilock_lock *lock)
{
    if (lock->op_pending)
        op_complete(lock->op_pending, HILOCK_ETIMEDOUT);
    else if (lock->op == OP_ACQUIRE)
        finish_op(lock, lock->wait_err == HILOCK_ENOQUORUM ? HILOCK_ENOQUORUM
                                                          : HILOCK_ETIMEDOUT,
                  0);
}

static void claim_done(struct op *op, int status,
                       const struct op_result *res);

/* Fair mode: make the hold handed to this owner its own (drop the
 * marker, set its lease; see script.c). Best effort: a claim that cannot
 * be sent leaves the short hand-off lease, which the watchdog renews. */
static void send_claim(struct hilock_lock *lock)
{
    struct engine *eng = lock->eng;
    struct wire_lock w = handle_wire(lock);
    struct wire_fair f = fair_args(lock);
    struct op *op =
        op_new(eng, OP_KIND_ACQUIRE, -1, lock->slot, 0, claim_done);
    if (!op)
        return;
    op->lease_ms = acquire_lease(lock);
    op_eval(op, SCRIPT_FAIR_ACQUIRE);
    wire_fair_acquire(op_cmd(op), eng->scripts.sha[SCRIPT_FAIR_ACQUIRE], &w,
                      op->lease_ms, eng->opts->fencing, WIRE_FAIR_CLAIM, &f,
                      ++eng->seq);
    handle_attach(lock, op);
    op_submit(op, 0);
}

/* The claim's answer: the hold is ours with our lease, or it was gone
 * before we claimed it (lost), or no answer (claim again while held). */
static void claim_done(struct op *op, int status,
                       const struct op_result *res)
{
    struct hilock_lock *lock = op->ctx;
    (void)res;
    if (status == 0)
        share_lease(lock, op->sent_ms, op->lease_ms);
    else if (status == HILOCK_EBUSY)
        share_end(lock);
    else if (engine_transient(status) && lock->holds > 0 &&
             !lock->freeing && !closing(lock))
        send_claim(lock);
}

static void took(struct hilock_lock *lock, int64_t token, uint64_t sent_ms,
                 uint32_t lease_ms);

/* A hold with lease_ms from sent_ms on, under the watchdog or not: count
 * it and track its lease (shared with its twins). Returns whether the
 * owner held already (a re-entry). */
static int granted(struct hilock_lock *lock, uint64_t sent_ms, int watchdog,
                   uint32_t lease_ms)
{
    int again = lock->holds++ > 0 || handle_hold_begin(lock);
    lock->auto_renew |= watchdog != 0;
    share_lease(lock, sent_ms, lease_ms);
    return again;
}

/* wait.c (fair mode): a release handed the lock to this waiter, with the
 * short hand-off lease (see script.c), which lasts until until_ms here.
 * It is the owner now: report success at once. Under the watchdog, or
 * with a lease no longer than the hand-off lease, the hold is ours as it
 * is (the watchdog extends it at its first renewal, a third of the
 * hand-off lease later); a longer explicit lease is claimed first (sent
 * before the callback, so that anything the callback sends comes after
 * it). With an attempt in flight, or when the hand-off was learnt too
 * late to count (until_ms 0: the lease may have run out and the lock
 * moved on), an attempt decides instead: it claims the hold when it is
 * still this wait's, else queues again. So it does too after an attempt
 * of this wait failed unanswered (timed out while Redis was stopped, or
 * slow): Redis may apply that attempt after the hand-off, claiming the
 * hold, and the undo its late success brings drops one hold of the owner
 * -- the handed one, were it reported. The deciding attempt goes after
 * that attempt (and after its undo, when that went first), so it counts
 * what is really there, and the undo then drops only its extra hold. */
static void hook_handed(struct hilock_lock *lock, int64_t token,
                        uint64_t until_ms)
{
    if (lock->op != OP_ACQUIRE || lock->freeing || closing(lock))
        return;
    if (lock->op_pending || until_ms == 0 || lock->unsure) {
        lock->handed = 1;
        hook_attempt(lock);
        return;
    }
    lock->eng->stats.handoffs++;
    uint32_t lease = acquire_lease(lock);
    if (lock->op_lease_ms > FAIR_HANDOFF_LEASE_MS)
        send_claim(lock);
    if (lease > FAIR_HANDOFF_LEASE_MS)
        lease = FAIR_HANDOFF_LEASE_MS;
    took(lock, token, until_ms - lease, lease);
}

/* A hold was granted by a request sent at sent_ms: count it and track its
 * lease (shared with its twins). */
void lock_granted(struct hilock_lock *lock, uint64_t sent_ms,
                  uint32_t lease_ms)
{
    granted(lock, sent_ms, lease_ms == 0, engine_lease(lock->eng, lease_ms));
}

void lock_drop_hold(struct hilock_lock *lock)
{
    if (lock->holds > 0 && --lock->holds == 0)
        hold_ended(lock);
}

/* The pending acquire got a hold with lease_ms from sent_ms on: record
 * it, report. A counting semaphore's permits have no lease: the handle
 * only counts them (and reports how many it took). */
static void took(struct hilock_lock *lock, int64_t token, uint64_t sent_ms,
                 uint32_t lease_ms)
{
    if (lock->kind == KIND_SEM) {
        lock->holds += lock->op_lease_ms;
        finish_op(lock, 0, lock->op_lease_ms);
        return;
    }
    lock->token = token; /* on re-entry, Redis returns the current token */
    lock->splits = 0;
    lock->eng->stats.reentries +=
        granted(lock, sent_ms, lock->op_lease_ms == 0, lease_ms);
    finish_op(lock, 0, lock->token);
}

/* The acquire succeeded (sent at sent_ms) with the lease it asked for. */
static void acquired(struct hilock_lock *lock, int64_t token, uint64_t sent_ms)
{
    took(lock, token, sent_ms, acquire_lease(lock));
}

static void cleanup_done(struct op *op, int status,
                         const struct op_result *res);

/* Encode a release of drop holds of a read-write lock side, of drop
 * permits of a semaphore, or of an expiring permit into op, as rid. */
static void encode_release(struct hilock_lock *lock, struct op *op,
                           uint32_t drop, uint64_t rid)
{
    struct engine *eng = lock->eng;
    struct wire_lock w = handle_wire(lock);
    const char *pub = topo_publish(eng->topo);
    const char *sha = kind_eval(lock, op, 1);
    op->token = drop;
    if (lock->kind == KIND_SEM)
        wire_sem_release(op_cmd(op), sha, &w, drop, sem_rid_ttl(eng), pub,
                         rid);
    else if (lock->kind == KIND_PERMIT)
        wire_permit_release(op_cmd(op), sha, &w, pub, rid);
    else
        wire_rw_release(op_cmd(op), sha, &w, rid, lock_lease(lock), drop,
                        pub);
}

/* A release of drop holds of this owner on every node (node < 0) or on one,
 * with a request id of its own so that resending it is harmless, attached
 * to the lock. NULL: no memory. */
static struct op *release_op(struct hilock_lock *lock, uint32_t drop,
                             int node, op_done_fn *done)
{
    struct engine *eng = lock->eng;
    struct wire_lock w = handle_wire(lock);
    struct op *op = op_new(eng, OP_KIND_RELEASE, node, lock->slot, 0, done);
    if (!op)
        return NULL;
    if (fair(lock)) {
        struct wire_fair f = fair_args(lock);
        op_eval(op, SCRIPT_FAIR_RELEASE);
        wire_fair_release(op_cmd(op), eng->scripts.sha[SCRIPT_FAIR_RELEASE],
                          &w, ++eng->seq, lock_lease(lock), drop,
                          eng->opts->fencing, &f);
    } else if (lock->kind != KIND_MUTEX) {
        encode_release(lock, op, drop, ++eng->seq);
    } else if (!plain_drop(lock, &w, op, drop)) {
        op_eval(op, SCRIPT_RELEASE);
        wire_release(op_cmd(op), eng->scripts.sha[SCRIPT_RELEASE], &w,
                     ++eng->seq, lock_lease(lock), drop,
                     topo_publish(eng->topo));
    }
    handle_attach(lock, op);
    return op;
}

/* Release drop holds of this owner without telling anyone (a late acquire
 * success, a held handle being freed, a failed quorum). Best effort. */
static void send_cleanup(struct hilock_lock *lock, uint32_t drop, int node)
{
    struct op *op = release_op(lock, drop, node, cleanup_done);
    if (op)
        op_submit(op, 0);
}

/* Undo the hold that acquire op's request to node i took (it granted
 * it): only that request's own hold, if still there, never one a later
 * attempt or a fair hand-off began after it (src/lua/undo.lua,
 * fair_undo.lua, read_undo.lua, write_undo.lua; a semaphore's permits
 * have no owner: one is given back). Best effort. */
static void send_undo(struct hilock_lock *lock, const struct op *op, size_t i)
{
    struct engine *eng = lock->eng;
    int node = op->n == 1 ? -1 : (int)i;
    if (lock->kind == KIND_SEM || lock->kind == KIND_PERMIT) {
        send_cleanup(lock, 1, node);
        return;
    }
    struct wire_lock w = handle_wire(lock);
    struct op *u =
        op_new(eng, OP_KIND_RELEASE, node, lock->slot, 0, cleanup_done);
    if (!u)
        return;
    if (lock->kind != KIND_MUTEX) {
        enum script_id id = lock->kind == KIND_WRITE ? SCRIPT_WRITE_UNDO
                                                     : SCRIPT_READ_UNDO;
        op_eval(u, id);
        wire_rw_undo(op_cmd(u), eng->scripts.sha[id], &w, op->rids[i],
                     ++eng->seq, lock_lease(lock), topo_publish(eng->topo));
    } else if (fair(lock)) {
        struct wire_fair f = fair_args(lock);
        op_eval(u, SCRIPT_FAIR_UNDO);
        wire_fair_undo(op_cmd(u), eng->scripts.sha[SCRIPT_FAIR_UNDO], &w,
                       op->rids[i], ++eng->seq, eng->opts->fencing, &f);
    } else {
        op_eval(u, SCRIPT_UNDO);
        wire_undo(op_cmd(u), eng->scripts.sha[SCRIPT_UNDO], &w, op->rids[i],
                  ++eng->seq, topo_publish(eng->topo));
    }
    handle_attach(lock, u);
    op_submit(u, 0);
}

/* Undo the holds that acquire op took on the nodes that granted it: it
 * failed as a whole. */
static void undo_partial(struct hilock_lock *lock, struct op *op)
{
    for (size_t i = 0; i < op->n; i++)
        if (op_node_ok(op, i))
            send_undo(lock, op, i);
}

/* A node answered an acquire after its decision: a success there is only
 * kept when the acquire succeeded as a whole and its hold was not given
 * back (or lost) since. */
static void acquire_late(struct op *op, size_t i, const struct op_result *res)
{
    const struct hilock_lock *lock = op->ctx;
    if (res && res->status == 0 && (op->status != 0 || lock->holds == 0))
        send_undo(op->ctx, op, i);
}

/* Release op of this client ended lock's name's hold (res: its result):
 * wake this client's head waiter, or, when the fair release handed the
 * lock to a waiter of this client, hand it over here at once. */
static void released_news(struct hilock_lock *lock, const struct op *op,
                          const struct op_result *res)
{
    if (op->handed == REPLY_HANDED_LOCAL)
        wait_handed(lock->eng, lock->name, lock->name_len, &op->handoff);
    else if (op->handed == REPLY_HANDED_NONE)
        wait_released(lock, res->b);
}

static void cleanup_done(struct op *op, int status,
                         const struct op_result *res)
{
    struct hilock_lock *lock = op->ctx;
    if (lock->kind == KIND_SEM) {
        if (status == 0 && res)
            wait_released(lock, res->b);
        return;
    }
    if (status == 0 && res && res->a == 0 && op->target < 0) {
        share_end(op->ctx); /* twins that still counted on it */
        released_news(op->ctx, op, res);
    }
}

static void fence_done(struct op *op, int status,
                       const struct op_result *res);

/* Whether some master granted acquire op (it failed as a whole). */
static int granted_somewhere(const struct op *op)
{
    for (size_t i = 0; i < op->n; i++)
        if (op_node_ok(op, i))
            return 1;
    return 0;
}

/* The attempt failed with status (ttl: the holder's, for EBUSY): report
 * it, or keep waiting until the wait's own deadline. A wait that ends
 * without a majority ever reachable reports HILOCK_ENOQUORUM. */
static void acquire_failed(struct hilock_lock *lock, int status, int64_t ttl)
{
    if (handle_wait_deadline(lock) == 0 ||
        (status != HILOCK_EBUSY && !engine_transient(status))) {
        finish_op(lock, status, status == HILOCK_EBUSY ? ttl : 0);
        return;
    }
    if (status == HILOCK_EBUSY || status == HILOCK_ENOQUORUM)
        lock->wait_err = (int8_t)status;
    if (clock_now_ms() >= handle_wait_deadline(lock)) {
        finish_op(lock,
                  lock->wait_err == HILOCK_ENOQUORUM ? HILOCK_ENOQUORUM
                                                     : HILOCK_ETIMEDOUT,
                  0);
        return;
    }
    if (lock->handed) {
        /* Handed over while this attempt was on its way (it got there
         * first): the next one claims it. */
        lock->handed = 0;
        int rc = send_attempt(lock, 0);
        if (rc)
            finish_op(lock, rc, 0);
        return;
    }
    if (status != HILOCK_EBUSY)
        ttl = ACQUIRE_RETRY_MS; /* a late success is undone by late */
    else if (lock->kind == KIND_WRITE &&
             (ttl < 0 || ttl > RW_WRITER_RETRY_MS))
        ttl = RW_WRITER_RETRY_MS; /* renew the mark that keeps readers off */
    int rc = wait_park(lock, ttl);
    if (rc)
        finish_op(lock, rc, 0);
}


/* Whether the grant of acquire op, read now, is within its lease (less
 * the drift allowance): 0, else how it failed -- HILOCK_ETIMEDOUT on one
 * node, HILOCK_ENOQUORUM on several masters (a wait goes on through
 * both). A counting semaphore's permits have no lease. */
static int grant_in_time(const struct hilock_lock *lock, const struct op *op)
{
    if (lock->kind == KIND_SEM ||
        quorum_grant_left(acquire_lease(lock), op->sent_ms, clock_now_ms()) >
            0)
        return 0;
    return lock->eng->nnodes > 1 ? HILOCK_ENOQUORUM : HILOCK_ETIMEDOUT;
}

/* Whether a master granting acquire op counted a re-entry while the
 * owner held nothing here: its token is its counter as it was, maybe a
 * token handed out before. (Its extra hold is not dropped here: it is
 * most often the grant of an earlier attempt of this handle whose undo
 * comes with that attempt's late answer.) */
static int reentered(const struct hilock_lock *lock, const struct op *op)
{
    if (lock->holds > 0 || handle_owner_holds(lock))
        return 0;
    for (size_t i = 0; i < op->n; i++)
        if (op_node_ok(op, i) && op->res[i].a > 1)
            return 1;
    return 0;
}

/* A quorum granted the acquire. On several masters, make the token the
 * largest any later majority can see: raise the counters of a majority to
 * it first, unless a majority drew it already. Returns 0 when the acquisition stands (or a
 * fence write is under way), else the failure status. */
static int quorum_granted(struct hilock_lock *lock, struct op *op,
                          const struct op_result *res)
{
    struct engine *eng = lock->eng;
    size_t same = 0;
    if (eng->nnodes == 1)
        return 0;
    /* One above the largest token is fresh once a majority has it (any
     * token reported was on a majority, which meets this one). */
    op->token = res->b + (eng->opts->fencing && reentered(lock, op));
    for (size_t i = 0; i < op->n; i++)
        same += op_node_ok(op, i) && op->res[i].b == op->token;
    if (!eng->opts->fencing || same >= quorum_of(op->n))
        return 0;
    struct wire_lock w = handle_wire(lock);
    struct op *f = op_new(eng, OP_KIND_FENCE, -1, lock->slot, 0, fence_done);
    if (!f)
        return HILOCK_ENOMEM;
    op_eval(f, SCRIPT_FENCE);
    wire_fence(op_cmd(f), eng->scripts.sha[SCRIPT_FENCE], &w, op->token);
    op_hold(op); /* until the fence is decided */
    f->data = op;
    handle_attach(lock, f);
    lock->op_pending = f;
    op_submit(f, part_timeout(lock));
    return 0;
}

static void fence_done(struct op *f, int status, const struct op_result *res)
{
    struct hilock_lock *lock = f->ctx;
    struct op *op = f->data;
    lock->op_pending = NULL;
    if (status == 0)
        status = grant_in_time(lock, op);
    if (status == 0) {
        acquired(lock, op->token, op->sent_ms);
    } else {
        op->status = status; /* late successes are undone too */
        undo_partial(lock, op);
        acquire_failed(lock, status, -1);
    }
    op_drop(op);
}

/* A release of this handle got no answer, and an acquire found more
 * holds of its owner than the one it took while no handle counts any:
 * that release never reached Redis (its master failing over, its
 * connection lost past its deadline), and the holds it left would keep the
 * lock held after this acquisition's own release. They are dropped at
 * once (on one node: a Redlock's masters may count differently) -- unless
 * an earlier attempt of this acquire failed unanswered: then the extra
 * hold may be that attempt's (the release reached Redis after all, and
 * the attempt took the lock before this one re-entered), which its late
 * undo drops; dropping it here too would end the hold just reported. */
static void drop_unreleased(struct hilock_lock *lock, int64_t holds)
{
    if (lock->unreleased && lock->eng->nnodes == 1 && holds > 1 &&
        !lock->unsure && lock->kind <= KIND_WRITE &&
        !handle_owner_holds(lock))
        send_cleanup(lock, (uint32_t)(holds - 1), -1);
    lock->unreleased = 0;
}

static void acquire_done(struct op *op, int status,
                         const struct op_result *res)
{
    struct hilock_lock *lock = op->ctx;
    int64_t ttl = res && status == HILOCK_EBUSY ? res->a : -1;
    lock->op_pending = NULL;
    if (status == 0)
        status = grant_in_time(lock, op);
    if (status == 0 && (status = quorum_granted(lock, op, res)) == 0) {
        drop_unreleased(lock, res->a);
        if (!lock->op_pending)
            acquired(lock, op->n > 1 ? op->token : res->b, op->sent_ms);
        return;
    }
    op->status = status; /* late successes are undone too */
    undo_partial(lock, op);
    lock->unsure |= status != HILOCK_EBUSY;
    if (status == HILOCK_EBUSY && granted_somewhere(op)) {
        /* A split vote: other clients took the other masters at the same
         * moment. Everyone retrying at once on the next release would split
         * again: back off for a short random time, longer each time. */
        ttl = backoff_delay_ms(2, 64, lock->splits, lock->eng->rng);
        lock->splits += lock->splits < 8;
        /* Held off before parking too: a release heard while the attempt
         * was out (the undo's own) must not send the next one at once. */
        wait_hold_off(lock, (uint64_t)ttl);
        acquire_failed(lock, status, ttl);
        wait_hold_off(lock, (uint64_t)ttl);
        return;
    }
    lock->splits = 0;
    acquire_failed(lock, status, ttl);
}

/* Common checks of the public entry points. */
static int lock_usable(const struct hilock_lock *lock)
{
    if (!lock || lock->freeing)
        return HILOCK_EINVAL;
    return closing(lock) ? HILOCK_ECANCELED : 0;
}

int hilock_lock_acquire(struct hilock_lock *lock, uint64_t wait_ms,
                        uint64_t lease_ms, hilock_lock_cb *cb, void *arg)
{
    if (!lock || lease_ms > HILOCK_MS_MAX)
        return HILOCK_EINVAL;
    return lock_acquire(lock, wait_ms,
                        lock->kind == KIND_SEM ? 1 : (uint32_t)lease_ms, cb,
                        arg);
}

int lock_acquire(struct hilock_lock *lock, uint64_t wait_ms,
                 uint32_t lease_ms, hilock_lock_cb *cb, void *arg)
{
    int rc = lock_usable(lock);
    if (rc)
        return rc;
    if (!cb || wait_ms > HILOCK_MS_MAX ||
        (lock->kind == KIND_PERMIT && lock->holds > 0))
        return HILOCK_EINVAL;
    if (lock->op != OP_NONE)
        return HILOCK_EINPROGRESS;
    if (wait_ms && (rc = wait_begin(lock, wait_ms)))
        return rc;
    lock->op = OP_ACQUIRE;
    lock->op_cb = cb;
    lock->op_arg = arg;
    lock->op_lease_ms = lease_ms;
    if (!wait_ms && lock->waiting)
        lock->waiting->deadline = 0; /* wait_begin set it otherwise */
    lock->wait_err = 0;
    lock->wait_id = (uint32_t)++lock->eng->seq;
    /* In fair mode the queue in Redis keeps the order: every waiter
     * takes its place there at once. */
    if (wait_ms && !fair(lock) && !handle_owner_holds(lock) &&
        wait_has_waiters(lock))
        rc = wait_park(lock, -1); /* no barging past our own waiters, but a
                                     re-entry never waits */
    else
        rc = send_attempt(lock, 1);
    if (rc) {
        wait_end(lock);
        lock->op = OP_NONE;
    }
    return rc;
}

/* A counting semaphore's release (of op->token permits) is done: the
 * handle counts fewer (also after an error: the release is most likely
 * applied, see release_done); waiters here are woken. value: the permits
 * available after it. */
static void sem_release_done(struct hilock_lock *lock, const struct op *op,
                             int status, const struct op_result *res)
{
    uint32_t n = (uint32_t)op->token;
    lock->holds -= lock->holds < n ? lock->holds : n;
    if (status == 0)
        wait_released(lock, res->b);
    finish_op(lock, status, status == 0 ? res->a : 0);
}

static void release_done(struct op *op, int status,
                         const struct op_result *res)
{
    struct hilock_lock *lock = op->ctx;
    int64_t left = res && status == 0 ? res->a : 0;
    lock->op_pending = NULL;
    if (lock->kind == KIND_SEM) {
        sem_release_done(lock, op, status, res);
        return;
    }
    int ended = status == HILOCK_ENOTOWNER || (status == 0 && left == 0);
    lock->unreleased = engine_transient(status);
    /* A release that failed otherwise (timed out, connection lost) gives
     * the hold up too: it is most likely applied anyway (it is resent while
     * its deadline lasts), and if not, the lease runs out once nothing
     * renews it, or the handle's next acquisition drops it. */
    if (ended || (lock->holds > 0 && --lock->holds == 0))
        hold_ended(lock);
    if (ended)
        share_end(lock); /* twins of this owner counted on it too */
    else if (status == 0)
        share_lease(lock, op->sent_ms, lock_lease(lock));
    if (status == 0 && left == 0)
        released_news(lock, op, res);
    finish_op(lock, status, left);
}

int hilock_lock_release(struct hilock_lock *lock, hilock_lock_cb *cb,
                        void *arg)
{
    return lock_release(lock, 1, cb, arg);
}

int lock_release(struct hilock_lock *lock, uint32_t drop, hilock_lock_cb *cb,
                 void *arg)
{
    int rc = lock_usable(lock);
    if (rc)
        return rc;
    if (!cb)
        return HILOCK_EINVAL;
    if (lock->op != OP_NONE)
        return HILOCK_EINPROGRESS;
    struct op *op = release_op(lock, drop, -1, release_done);
    if (!op)
        return HILOCK_ENOMEM;
    lock->op = OP_RELEASE;
    lock->op_cb = cb;
    lock->op_arg = arg;
    lock->op_pending = op;
    op_submit(op, 0);
    return 0;
}

int hilock_lock_cancel(struct hilock_lock *lock)
{
    if (lock_usable(lock) || lock->op != OP_ACQUIRE)
        return HILOCK_EINVAL;
    struct reentry *guard = lock->eng->guard;
    reentry_enter(guard);
    if (lock->op_pending)
        op_complete(lock->op_pending, HILOCK_ECANCELED);
    else
        finish_op(lock, HILOCK_ECANCELED, 0);
    reentry_leave(guard);
    return 0;
}

/* Cancel the pending op and every request with a callback, except the
 * releases of this lock's holds. */
static void cancel_pending(struct hilock_lock *lock)
{
    struct op *op, *next;
    if (lock->op != OP_NONE && !lock->op_pending)
        finish_op(lock, HILOCK_ECANCELED, 0);
    for (op = TAILQ_FIRST(&lock->ops); op; op = next) {
        next = TAILQ_NEXT(op, ctx_link);
        if (op->done != cleanup_done && op->done != leave_done)
            op_complete(op, HILOCK_ECANCELED);
    }
}

void hilock_lock_free(struct hilock_lock *lock)
{
    if (lock && !lock->eng) {
        handle_free_detached(lock); /* its client was freed first */
        return;
    }
    if (!lock || lock->user_freed)
        return;
    lock->user_freed = 1;
    if (lock->freeing)
        return; /* the client's teardown is under way: it frees it */
    struct reentry *guard = lock->eng->guard;
    lock->freeing = 1;
    if (guard->closing)
        return; /* the teardown frees it */
    reentry_enter(guard);
    cancel_pending(lock);
    if (lock->holds > 0)
        send_cleanup(lock, lock->holds, -1);
    hold_ended(lock);
    handle_unref(lock);
    reentry_leave(guard);
}

/* The caller of a query. */
struct query {
    hilock_lock_cb *cb;
    void *arg;
};

static void query_done(struct op *op, int status, const struct op_result *res)
{
    struct hilock_lock *lock = op->ctx;
    struct query *q = op->data;
    int64_t v = res && status == 0 ? res->a : 0;
    if (lock->freeing || closing(lock))
        status = HILOCK_ECANCELED;
    hilock_lock_cb *cb = q->cb;
    void *arg = q->arg;
    free(q);
    op->data = NULL;
    cb(lock, status, status ? 0 : v, arg);
}

struct op *lock_query_new(struct hilock_lock *lock, enum op_kind kind,
                          hilock_lock_cb *cb, void *arg, int *rc)
{
    if ((*rc = lock_usable(lock)) != 0)
        return NULL;
    if (!cb) {
        *rc = HILOCK_EINVAL;
        return NULL;
    }
    struct query *q = malloc(sizeof(*q));
    struct op *op =
        q ? op_new(lock->eng, kind, -1, lock->slot, 0, query_done) : NULL;
    if (!op) {
        free(q);
        *rc = HILOCK_ENOMEM;
        return NULL;
    }
    *q = (struct query){cb, arg};
    op->data = q;
    handle_attach(lock, op);
    return op;
}

/* Ask every node whether the owner holds the lock, its holds or its
 * lease (not about a semaphore; a key of another kind is refused). */
static int query(struct hilock_lock *lock, enum wire_query which,
                 hilock_lock_cb *cb, void *arg)
{
    static const enum op_kind kinds[] = {
        [WIRE_QUERY_HELD] = OP_KIND_QUERY_HELD,
        [WIRE_QUERY_COUNT] = OP_KIND_QUERY_COUNT,
        [WIRE_QUERY_TTL] = OP_KIND_QUERY_TTL,
    };
    int rc;
    if (lock && (lock->kind == KIND_SEM || lock->kind == KIND_PERMIT))
        return HILOCK_EINVAL;
    struct op *op = lock_query_new(lock, kinds[which], cb, arg, &rc);
    if (!op)
        return rc;
    struct wire_lock w = handle_wire(lock);
    op_eval(op, SCRIPT_QUERY);
    wire_query(op_cmd(op), lock->eng->scripts.sha[SCRIPT_QUERY], which, &w);
    op_submit(op, 0);
    return 0;
}

int hilock_lock_query_held(struct hilock_lock *lock, hilock_lock_cb *cb,
                           void *arg)
{
    return query(lock, WIRE_QUERY_HELD, cb, arg);
}

int hilock_lock_query_count(struct hilock_lock *lock, hilock_lock_cb *cb,
                            void *arg)
{
    return query(lock, WIRE_QUERY_COUNT, cb, arg);
}

int hilock_lock_query_ttl(struct hilock_lock *lock, hilock_lock_cb *cb,
                          void *arg)
{
    return query(lock, WIRE_QUERY_TTL, cb, arg);
}

int hilock_lock_on_lost(struct hilock_lock *lock, hilock_lock_cb *cb,
                        void *arg)
{
    if (!lock || lock->freeing || lock->kind == KIND_SEM)
        return HILOCK_EINVAL; /* counted permits are never lost */
    lock->lost_cb = cb;
    lock->lost_arg = arg;
    return 0;
}

int hilock_lock_renew(struct hilock_lock *lock, uint64_t lease_ms,
                      hilock_lock_cb *cb, void *arg)
{
    int rc = lock_usable(lock);
    if (rc)
        return rc;
    if (!cb || lease_ms > HILOCK_MS_MAX || lock->holds == 0 ||
        lock->kind == KIND_SEM)
        return HILOCK_EINVAL;
    return watchdog_renew_now(lock, lease_ms ? (uint32_t)lease_ms
                                             : lock_lease(lock),
                              cb, arg);
}

uint32_t hilock_lock_hold_count(const struct hilock_lock *lock)
{
    return lock ? lock->holds : 0;
}

int64_t hilock_lock_token(const struct hilock_lock *lock)
{
    return lock ? lock->token : 0;
}

const char *hilock_lock_name(const struct hilock_lock *lock, size_t *len)
{
    if (!lock)
        return NULL;
    if (len)
        *len = lock->name_len;
    return lock->name;
}

int lock_new(struct engine *eng, const char *name, size_t len,
             uint64_t owner_tag, enum lock_kind kind,
             struct hilock_lock **out)
{
    if (!name || !out || len == 0 || len > HILOCK_NAME_MAX ||
        !topo_name_ok(eng->topo, name, len) ||
        (kind != KIND_MUTEX && eng->nnodes > 1))
        return HILOCK_EINVAL;
    if (kind == KIND_SEM || kind == KIND_PERMIT)
        owner_tag = ++eng->seq; /* no owner: the handle's own number */
    struct hilock_lock *lock = handle_new(eng, name, len, owner_tag, kind);
    if (!lock)
        return HILOCK_ENOMEM;
    *out = lock;
    return 0;
}

static void repair_done(struct op *op, int status,
                        const struct op_result *res)
{
    (void)op;
    (void)status;
    (void)res; /* busy: another owner took that master; nothing to do */
}

/* A majority renewed the lock, but master i had lost it (restarted
 * empty): take it there again when it is free, so that the next failure
 * of another master does not cost the quorum. It goes as request id 0,
 * which no request is above (see script.c): on a master where the owner
 * holds the lock again by then (an earlier repair, when two renewals
 * said it was lost), it counts no second hold that the release would
 * leave behind. */
static void hook_repair(struct hilock_lock *lock, size_t i)
{
    struct engine *eng = lock->eng;
    struct wire_lock w = handle_wire(lock);
    struct op *op = op_new(eng, OP_KIND_ACQUIRE, (int)i, lock->slot, 0,
                           repair_done);
    if (!op)
        return; /* the next renewal tries again */
    op_eval(op, SCRIPT_ACQUIRE);
    wire_acquire(op_cmd(op), eng->scripts.sha[SCRIPT_ACQUIRE], &w,
                 lock_lease(lock), eng->opts->fencing, 0);
    handle_attach(lock, op);
    op_submit(op, 0);
}

void lock_engine_init(struct engine *eng)
{
    LIST_INIT(&eng->locks);
    table_init(&eng->owners);
    waits_init(eng);
    watchdog_init(eng);
    eng->hooks.attempt = hook_attempt;
    eng->hooks.wait_expired = hook_wait_expired;
    eng->hooks.handed = hook_handed;
    eng->hooks.renewed = share_lease;
    eng->hooks.gone = share_end;
    eng->hooks.expired = lock_lost;
    eng->hooks.repair = hook_repair;
}

void lock_cancel_all(struct engine *eng)
{
    struct hilock_lock *lock;
    LIST_FOREACH(lock, &eng->locks, link) {
        lock->freeing = 1;
        if (lock->op != OP_NONE && !lock->op_pending)
            finish_op(lock, HILOCK_ECANCELED, 0);
        watchdog_forget(lock);
    }
}

void lock_engine_free(struct engine *eng)
{
    op_pool_free(eng);
    handle_free_all(eng);
    table_free(&eng->owners);
    waits_free(eng);
    watchdog_free(eng);
}
