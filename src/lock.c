/* SPDX-License-Identifier: BSD-3-Clause */
/* lock.c -- the acquire/release state machine: the top of the engine.
 *
 * A handle is one name plus one owner. At most one acquire or release is
 * pending on it (lock->pending); queries (query.c) and renewals
 * (watchdog.c) may run alongside. What the handle takes is its kind's
 * business (kind.h): this file sends what the kind encodes and reads what
 * the reply says. The path of an acquire reads down the file: an attempt
 * goes out (send_attempt), its answer comes back (acquire_done), and it is
 * reported (took) or waits for the next attempt (acquire_failed); a
 * release follows. Grants are checked and partial ones undone in grant.c,
 * twins' shared hold is kept in hold.c, fair hand-offs come through
 * hook_handed (fair.c). The files below report here through eng->hooks,
 * which lock_engine_init fills in. The user's callback is always the last
 * thing a code path does with the lock (finish_op). */
#include "lock.h"

#include "backoff.h"
#include "clock.h"
#include "fair.h"
#include "grant.h"
#include "handle.h"
#include "hold.h"
#include "hot.h"
#include "topo.h"
#include "wait.h"
#include "watchdog.h"
#include "wire.h"

/* Delay before the next attempt of a wait whose attempt failed on the way
 * (the connection's own backoff paces reconnects). */
#define ACQUIRE_RETRY_MS 50

/* Callbacks of the fan-outs this file sends. */
static void acquire_done(struct fanout *op, int status,
                         const struct op_result *res);
static void fence_done(struct fanout *f, int status,
                       const struct op_result *res);
static void release_done(struct fanout *op, int status,
                         const struct op_result *res);

static void leave_done(struct fanout *op, int status,
                       const struct op_result *res)
{
    (void)op;
    (void)status;
    (void)res; /* not sent: the entry goes stale by its deadline */
}

/* Send what encode writes about lock, whose answer nobody needs (best
 * effort: the answer goes to leave_done). */
static void send_aside(struct hilock_lock *lock,
                       void (*encode)(struct hilock_lock *lock,
                                      struct fanout *op))
{
    struct fanout *op =
        fanout_new(lock->eng, OP_KIND_LEAVE, -1, lock->slot, 0, leave_done);
    if (!op)
        return;
    encode(lock, op);
    handle_attach(lock, op);
    fanout_submit(op, 0);
}

/* A waiting acquire that queued ended without the lock: take back what
 * its kind left (a fair queue entry, a writer's mark). */
static void send_leave(struct hilock_lock *lock)
{
    if (lock->kind->encode_leave)
        send_aside(lock, lock->kind->encode_leave);
}

/* The release message of lock's name alone, into op. */
static void encode_release_message(struct hilock_lock *lock,
                                   struct fanout *op)
{
    struct wire_lock w = handle_wire(lock);
    wire_release_message(fanout_cmd(op), &w, topo_publish(lock->eng->topo));
}

/* wait.c: a quiet release of lock's name was taken up by no waiter here:
 * the release message it left out goes now. */
static void hook_owed(struct hilock_lock *lock)
{
    send_aside(lock, encode_release_message);
}

/* What the value of lock's pending acquire or release, ending with
 * status, means: an acquire's token (permits: how many it took), a
 * release's holds left (permits: how many are available), a busy
 * acquire's ttl. */
static enum cb_field op_field(const struct hilock_lock *lock, int status)
{
    if (status == HILOCK_EBUSY)
        return CB_FIELD_TTL;
    if (status != 0)
        return CB_FIELD_NONE;
    if (!lock->kind->leased)
        return CB_FIELD_PERMITS;
    return lock->pending.what == PENDING_ACQUIRE ? CB_FIELD_TOKEN
                                                 : CB_FIELD_HOLDS;
}

/* Finish the pending acquire or release: clear it, then call the user's
 * callback (last) with value as the result's field for it. */
HILOCK_HOT
static void finish_op(struct hilock_lock *lock, int status, int64_t value)
{
    struct user_cb cb = lock->pending.cb;
    enum cb_field field = op_field(lock, status);
    int acquire = lock->pending.what == PENDING_ACQUIRE;
    stats_acquire_end(&lock->eng->stats, acquire, status);
    if (acquire) {
        /* A wait left for later (wait_first) is neither armed nor queued:
         * nothing to end (a timer's delete costs as much as a send). */
        if (lock->pending.wait_later)
            lock->pending.wait_later = 0;
        else
            wait_end(lock);
        if (lock->pending.queued && status != 0)
            send_leave(lock);
        lock->pending.queued = 0;
        lock->pending.unsure = 0;
        lock->pending.handed = 0;
    }
    lock->pending.what = PENDING_NONE;
    lock->pending.cb = cb_lock(NULL, NULL);
    lock->pending.fanout = NULL;
    if (handle_closing(lock) || lock->freeing)
        status = HILOCK_ECANCELED;
    struct hilock_result res =
        cb_result(status == HILOCK_ECANCELED ? CB_FIELD_NONE : field, value);
    cb_call(&cb, lock->kind->api, lock, status, &res);
}

/* The pending acquire got a hold with lease_ms from sent_ms on: record
 * it, report its token. Permits (a hold without a lease) are only counted
 * by the handle, which reports how many it took. */
static void took(struct hilock_lock *lock, int64_t token, uint64_t sent_ms,
                 uint32_t lease_ms)
{
    if (!lock->kind->leased) {
        lock->hold.count += lock->pending.permits;
        finish_op(lock, 0, lock->pending.permits);
        return;
    }
    lock->hold.token = token; /* on re-entry, Redis returns the current one */
    lock->pending.splits = 0;
    lock->eng->stats.reentries +=
        hold_grant(lock, sent_ms, lock->pending.lease_ms == 0, lease_ms);
    finish_op(lock, 0, lock->hold.token);
}

/* The acquire succeeded (sent at sent_ms) with the lease it asked for. */
static void acquired(struct hilock_lock *lock, int64_t token, uint64_t sent_ms)
{
    took(lock, token, sent_ms, handle_acquire_lease(lock));
}

/* The deadline of each master's part of an acquire: on several masters a
 * tenth of the lease (at least 10 ms), so that one slow master cannot eat
 * the validity; on one node the request timeout. */
static uint32_t part_timeout(const struct hilock_lock *lock)
{
    uint32_t t, max = lock->eng->opts->request_timeout_ms;
    if (lock->eng->nnodes == 1)
        return 0;
    t = handle_acquire_lease(lock) / 10;
    t = t < 10 ? 10 : t;
    return t < max ? t : max;
}

/* Send one attempt of the pending acquire to every node, as the kind
 * encodes it, with one request id (a resend is applied once; a NOSCRIPT
 * resend takes a new id, see fanout.c); first: the acquire's first
 * attempt; now_us: the clock as the caller read it (0: not read). Returns
 * 0 or ENOMEM. */
HILOCK_HOT
static int send_attempt(struct hilock_lock *lock, int first, uint64_t now_us)
{
    struct engine *eng = lock->eng;
    struct fanout *op =
        fanout_new(eng, OP_KIND_ACQUIRE, -1, lock->slot, 0, acquire_done);
    if (!op)
        return HILOCK_ENOMEM;
    op->late = grant_late;
    lock->kind->encode_acquire(lock, op, first, ++eng->seq);
    handle_attach(lock, op);
    lock->pending.fanout = op;
    fanout_submit_at(op, part_timeout(lock), now_us);
    return 0;
}

/* How a wait that ends without the lock reports: no quorum when a
 * majority was never reachable, else timed out. */
static int wait_failure(const struct hilock_lock *lock)
{
    return lock->pending.wait_err == HILOCK_ENOQUORUM ? HILOCK_ENOQUORUM
                                                      : HILOCK_ETIMEDOUT;
}

/* The attempt failed with status (ttl: the holder's, for EBUSY): report
 * it, or keep waiting until the wait's own deadline. */
static void acquire_failed(struct hilock_lock *lock, int status, int64_t ttl)
{
    uint32_t retry = lock->kind->busy_retry_ms;
    int rc;
    if (handle_wait_deadline(lock) == 0 ||
        (status != HILOCK_EBUSY && !engine_transient(status))) {
        finish_op(lock, status, status == HILOCK_EBUSY ? ttl : 0);
        return;
    }
    if (status == HILOCK_EBUSY || status == HILOCK_ENOQUORUM)
        lock->pending.wait_err = (int8_t)status;
    if (clock_now_ms() >= handle_wait_deadline(lock)) {
        finish_op(lock, wait_failure(lock), 0);
        return;
    }
    if (lock->pending.handed) {
        /* Handed over while this attempt was on its way (it got there
         * first): the next one claims it. */
        lock->pending.handed = 0;
        if ((rc = send_attempt(lock, 0, 0)) != 0)
            finish_op(lock, rc, 0);
        return;
    }
    if (status != HILOCK_EBUSY)
        ttl = ACQUIRE_RETRY_MS; /* a late success is undone by grant_late */
    else if (retry && (ttl < 0 || ttl > retry))
        ttl = retry; /* the kind retries sooner (a writer's mark) */
    if ((rc = wait_park(lock, ttl)) != 0)
        finish_op(lock, rc, 0);
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
    if (lock->hold.unreleased && lock->eng->nnodes == 1 && holds > 1 &&
        !lock->pending.unsure && lock->kind->nested &&
        !handle_owner_holds(lock))
        grant_cleanup(lock, (uint32_t)(holds - 1), -1);
    lock->hold.unreleased = 0;
}

/* A split vote: other clients took the other masters at the same moment.
 * Everyone retrying at once on the next release would split again: back
 * off for a short random time, longer each time. */
static void split_vote(struct hilock_lock *lock, int status)
{
    uint64_t ms = backoff_delay_ms(2, 64, lock->pending.splits,
                                   lock->eng->rng);
    lock->pending.splits += lock->pending.splits < 8;
    /* Held off before parking too: a release heard while the attempt was
     * out (the undo's own) must not send the next one at once. */
    wait_hold_off(lock, ms);
    acquire_failed(lock, status, (int64_t)ms);
    wait_hold_off(lock, ms);
}

/* The acquire goes on past its first attempt: arm its wait's timer, when
 * that was left for now (see lock_acquire). */
static void wait_goes_on(struct hilock_lock *lock)
{
    if (lock->pending.wait_later) {
        lock->pending.wait_later = 0;
        wait_arm(lock);
    }
}

/* An attempt's decision: a grant in time is the acquisition (after the
 * fence, on several masters with fencing); anything else is undone where
 * it was granted and waits on or is reported. */
HILOCK_HOT
static void acquire_done(struct fanout *op, int status,
                         const struct op_result *res)
{
    struct hilock_lock *lock = op->ctx;
    int64_t ttl = res && status == HILOCK_EBUSY ? res->ttl_ms : -1;
    lock->pending.fanout = NULL;
    if (status == 0)
        status = grant_in_time(lock, op);
    if (status == 0 && (status = grant_fence(lock, op, res, fence_done,
                                             part_timeout(lock))) == 0) {
        drop_unreleased(lock, res->count);
        if (!lock->pending.fanout) /* else the fence decides */
            acquired(lock, op->n > 1 ? op->token : res->token, op->sent_ms);
        else
            wait_goes_on(lock);
        return;
    }
    wait_goes_on(lock);
    op->status = status; /* late successes are undone too */
    grant_undo_partial(lock, op);
    lock->pending.unsure |= status != HILOCK_EBUSY;
    if (status == HILOCK_EBUSY && grant_somewhere(op)) {
        split_vote(lock, status);
        return;
    }
    lock->pending.splits = 0;
    acquire_failed(lock, status, ttl);
}

/* The fence of a granted acquire (f->data) is decided. */
static void fence_done(struct fanout *f, int status,
                       const struct op_result *res)
{
    struct hilock_lock *lock = f->ctx;
    struct fanout *op = f->data;
    (void)res;
    lock->pending.fanout = NULL;
    if (status == 0)
        status = grant_in_time(lock, op);
    if (status == 0) {
        acquired(lock, op->token, op->sent_ms);
    } else {
        op->status = status; /* late successes are undone too */
        grant_undo_partial(lock, op);
        acquire_failed(lock, status, -1);
    }
    fanout_drop(op);
}

/* Arm the timer of the wait of wait_ms (0: none) whose first attempt goes
 * now -- or leave it for when that attempt fails, when the attempt is
 * decided before the wait's deadline anyway (one node, a wait no shorter
 * than the request timeout, not fair): an acquire that succeeds at once
 * then costs no timer (an add and a delete in libevent's heap of
 * timers, which grows with the acquires in flight). */
static void wait_first(struct hilock_lock *lock, uint64_t wait_ms)
{
    if (!wait_ms)
        return;
    if (lock->eng->nnodes == 1 && !fair_on(lock) &&
        wait_ms >= lock->eng->opts->request_timeout_ms)
        lock->pending.wait_later = 1;
    else
        wait_arm(lock);
}

int lock_acquire(struct hilock_lock *lock, uint64_t wait_ms,
                 uint32_t lease_ms, uint32_t permits, struct user_cb cb)
{
    int rc = handle_usable(lock);
    if (rc)
        return rc;
    if (!cb_set(&cb) || wait_ms > HILOCK_MS_MAX ||
        (lock->kind->single && lock->hold.count > 0))
        return HILOCK_EINVAL;
    if (lock->pending.what != PENDING_NONE)
        return HILOCK_EINPROGRESS;
    /* One time for the deadline and the first attempt's send. */
    uint64_t now_us = reentry_now_us(lock->eng->guard);
    if (wait_ms &&
        (rc = wait_set_deadline(lock, now_us / 1000u + wait_ms + 1)))
        return rc; /* + 1: the ms clock truncates; wait_ms must pass */
    lock->pending.what = PENDING_ACQUIRE;
    lock->pending.cb = cb;
    lock->pending.lease_ms = lease_ms;
    lock->pending.permits = permits;
    if (!wait_ms && lock->waiting)
        lock->waiting->deadline = 0; /* wait_begin set it otherwise */
    lock->pending.wait_err = 0;
    lock->pending.scripted = 0;
    lock->pending.wait_id = (uint32_t)++lock->eng->seq;
    /* In fair mode the queue in Redis keeps the order: every waiter
     * takes its place there at once. */
    if (wait_ms && wait_look(lock) && !fair_on(lock) &&
        !handle_owner_holds(lock)) {
        wait_arm(lock);
        rc = wait_park(lock, -1); /* no barging past our own waiters, but a
                                     re-entry never waits */
    } else {
        wait_first(lock, wait_ms);
        rc = send_attempt(lock, 1, now_us);
    }
    if (rc) {
        lock->pending.wait_later = 0;
        wait_end(lock);
        lock->pending.what = PENDING_NONE;
    }
    return rc;
}

/* Whether a handle is a lock (a mutex or a read-write side): what the
 * public struct hilock_lock is, as its kind says (api). The semaphore
 * kinds have public types of their own (semaphore.c). */
static int is_lock(const struct hilock_lock *lock)
{
    return lock && lock->kind->api == CB_LOCK;
}

HILOCK_HOT
int hilock_lock_acquire(struct hilock_lock *lock, uint64_t wait_ms,
                        uint64_t lease_ms, hilock_lock_cb *cb, void *arg)
{
    if (!is_lock(lock) || lease_ms > HILOCK_MS_MAX)
        return HILOCK_EINVAL;
    return lock_acquire(lock, wait_ms, (uint32_t)lease_ms, 1,
                        cb_lock(cb, arg));
}

/* wait.c's turn: the head waiter tries again. */
static void hook_attempt(struct hilock_lock *lock)
{
    if (lock->pending.fanout)
        return;
    int rc = send_attempt(lock, 0, 0);
    if (rc)
        finish_op(lock, rc, 0);
}

/* wait.c: the wait's deadline passed. */
static void hook_wait_expired(struct hilock_lock *lock)
{
    if (lock->pending.fanout)
        fanout_complete(lock->pending.fanout, HILOCK_ETIMEDOUT);
    else if (lock->pending.what == PENDING_ACQUIRE)
        finish_op(lock, wait_failure(lock), 0);
}

/* wait.c (fair mode): a release handed the lock to this waiter, with a
 * hold that lasts until until_ms here. It is the owner now, when the
 * hand-off counts (fair.c); else an attempt decides. */
static void hook_handed(struct hilock_lock *lock, int64_t token,
                        uint64_t until_ms)
{
    uint32_t lease;
    if (lock->pending.what != PENDING_ACQUIRE || lock->freeing ||
        handle_closing(lock))
        return;
    if (fair_take_handoff(lock, until_ms, &lease))
        took(lock, token, until_ms - lease, lease);
    else
        hook_attempt(lock);
}

int lock_release(struct hilock_lock *lock, uint32_t drop, struct user_cb cb)
{
    int rc = handle_usable(lock);
    if (rc)
        return rc;
    if (!cb_set(&cb))
        return HILOCK_EINVAL;
    if (lock->pending.what != PENDING_NONE)
        return HILOCK_EINPROGRESS;
    /* One time for the hold's validity (plain.c) and the send. */
    uint64_t now_us = reentry_now_us(lock->eng->guard);
    struct fanout *op = kind_release_new(lock, drop, -1, now_us, release_done);
    if (!op)
        return HILOCK_ENOMEM;
    lock->pending.what = PENDING_RELEASE;
    lock->pending.cb = cb;
    lock->pending.fanout = op;
    fanout_submit_at(op, 0, now_us);
    wait_release_sent(lock, lock->pending.quiet);
    return 0;
}

HILOCK_HOT
int hilock_lock_release(struct hilock_lock *lock, hilock_lock_cb *cb,
                        void *arg)
{
    if (lock && !is_lock(lock))
        return HILOCK_EINVAL;
    return lock_release(lock, 1, cb_lock(cb, arg));
}

/* A release of permits (op->drop) is done: the handle counts fewer (also
 * after an error: the release is most likely applied, see release_done);
 * waiters here are woken. Its value: the permits available after it. */
static void permits_released(struct hilock_lock *lock,
                             const struct fanout *op, int status,
                             const struct op_result *res)
{
    uint32_t n = op->drop;
    lock->hold.count -= lock->hold.count < n ? lock->hold.count : n;
    if (status == 0)
        wait_released(lock, res->heard);
    finish_op(lock, status, status == 0 ? res->count : 0);
}

/* The release is decided: its value is the holds left. */
HILOCK_HOT
static void release_done(struct fanout *op, int status,
                         const struct op_result *res)
{
    struct hilock_lock *lock = op->ctx;
    int64_t left = res && status == 0 ? res->count : 0;
    int quiet = lock->pending.quiet;
    lock->pending.fanout = NULL;
    lock->pending.quiet = 0;
    wait_release_answered(lock, res && status == 0 ? res->heard : 0);
    if (!lock->kind->leased) {
        permits_released(lock, op, status, res);
        return;
    }
    int ended = status == HILOCK_ENOTOWNER || (status == 0 && left == 0);
    lock->hold.unreleased = engine_transient(status);
    /* A release that failed otherwise (timed out, connection lost) gives
     * the hold up too: it is most likely applied anyway (it is resent while
     * its deadline lasts), and if not, the lease runs out once nothing
     * renews it, or the handle's next acquisition drops it. */
    if (ended || (lock->hold.count > 0 && --lock->hold.count == 0))
        hold_end(lock);
    if (ended)
        hold_share_end(lock); /* twins of this owner counted on it too */
    else if (status == 0)
        hold_share_lease(lock, op->sent_ms, handle_hold_lease(lock));
    /* A quiet one that failed may have freed the lock too: the head here
     * looks, or the message goes. */
    if (quiet && (status != 0 || left == 0))
        wait_passed(lock, status);
    else if (status == 0 && left == 0)
        hold_released_news(lock, op, res);
    finish_op(lock, status, left);
}

int hilock_lock_cancel(struct hilock_lock *lock)
{
    if (handle_usable(lock) || lock->pending.what != PENDING_ACQUIRE)
        return HILOCK_EINVAL;
    struct reentry *guard = lock->eng->guard;
    reentry_enter(guard);
    if (lock->pending.fanout)
        fanout_complete(lock->pending.fanout, HILOCK_ECANCELED);
    else
        finish_op(lock, HILOCK_ECANCELED, 0);
    reentry_leave(guard);
    return 0;
}

/* Cancel the pending op and every fan-out with a callback, except the
 * releases of this lock's holds. */
static void cancel_pending(struct hilock_lock *lock)
{
    struct fanout *op, *next;
    if (lock->pending.what != PENDING_NONE && !lock->pending.fanout)
        finish_op(lock, HILOCK_ECANCELED, 0);
    for (op = TAILQ_FIRST(&lock->fanouts); op; op = next) {
        next = TAILQ_NEXT(op, ctx_link);
        if (!grant_is_cleanup(op) && op->done != leave_done)
            fanout_complete(op, HILOCK_ECANCELED);
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
    if (lock->hold.count > 0)
        grant_cleanup(lock, lock->hold.count, -1);
    hold_end(lock);
    handle_unref(lock);
    reentry_leave(guard);
}

int lock_on_lost(struct hilock_lock *lock, struct user_cb cb)
{
    if (!lock || lock->freeing || !lock->kind->leased)
        return HILOCK_EINVAL; /* counted permits are never lost */
    lock->on_lost = cb;
    return 0;
}

int hilock_lock_on_lost(struct hilock_lock *lock, hilock_lock_cb *cb,
                        void *arg)
{
    return is_lock(lock) ? lock_on_lost(lock, cb_lock(cb, arg))
                         : HILOCK_EINVAL;
}

int lock_renew(struct hilock_lock *lock, uint64_t lease_ms,
               struct user_cb cb)
{
    int rc = handle_usable(lock);
    if (rc)
        return rc;
    if (!cb_set(&cb) || lease_ms > HILOCK_MS_MAX ||
        lock->hold.count == 0 || !lock->kind->leased)
        return HILOCK_EINVAL;
    return watchdog_renew_now(lock, lease_ms ? (uint32_t)lease_ms
                                             : handle_hold_lease(lock),
                              cb);
}

int hilock_lock_renew(struct hilock_lock *lock, uint64_t lease_ms,
                      hilock_lock_cb *cb, void *arg)
{
    return is_lock(lock) ? lock_renew(lock, lease_ms, cb_lock(cb, arg))
                         : HILOCK_EINVAL;
}

uint32_t hilock_lock_hold_count(const struct hilock_lock *lock)
{
    return lock ? lock->hold.count : 0;
}

int64_t hilock_lock_token(const struct hilock_lock *lock)
{
    return lock ? lock->hold.token : 0;
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
             uint64_t owner_tag, enum lock_kind id, struct hilock_lock **out)
{
    const struct kind_ops *kind = kind_of(id);
    if (!name || !out || len == 0 || len > HILOCK_NAME_MAX ||
        !topo_name_ok(eng->topo, name, len) ||
        (!kind->encode_repair && eng->nnodes > 1))
        return HILOCK_EINVAL; /* a kind without repair: one node only */
    if (!kind->owned)
        owner_tag = ++eng->seq; /* no owner: the handle's own number */
    struct hilock_lock *lock = handle_new(eng, name, len, owner_tag, kind);
    if (!lock)
        return HILOCK_ENOMEM;
    *out = lock;
    return 0;
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
    eng->hooks.owed = hook_owed;
    eng->hooks.renewed = hold_share_lease;
    eng->hooks.gone = hold_share_end;
    eng->hooks.expired = hold_lost;
    eng->hooks.repair = grant_repair;
}

void lock_cancel_all(struct engine *eng)
{
    struct hilock_lock *lock;
    LIST_FOREACH(lock, &eng->locks, link) {
        lock->freeing = 1;
        if (lock->pending.what != PENDING_NONE && !lock->pending.fanout)
            finish_op(lock, HILOCK_ECANCELED, 0);
        watchdog_forget(lock);
    }
}

void lock_engine_free(struct engine *eng)
{
    fanout_pool_free(eng);
    handle_free_all(eng);
    table_free(&eng->owners);
    waits_free(eng);
    watchdog_free(eng);
}
