/* SPDX-License-Identifier: BSD-3-Clause */
/* kind_mutex.c -- a lock (hilock_lock_new): Redisson's RLock hash, one
 * owner at a time, re-entrant, with a lease and a fencing token. The only
 * kind for several masters (Redlock), the only one with fair mode
 * (fair.c) and the plain fast path (plain.c); its undo drops exactly the
 * hold a given request id took (see script.c). */
#include "kind.h"

#include "fair.h"
#include "fanout.h"
#include "handle.h"
#include "hot.h"
#include "plain.h"
#include "wait.h"

/* op->undo of an attempt (see fanout.h): a decided attempt resent after a
 * drop undoes what its request id may have taken instead. */
static int resend_undo(struct fanout *op, struct resp_buf *cmd, uint64_t rid)
{
    struct hilock_lock *lock = op->ctx;
    struct engine *eng = lock->eng;
    struct wire_lock w = handle_wire(lock);
    resp_reset(cmd);
    wire_undo(cmd, eng->scripts.sha[SCRIPT_UNDO], &w, rid, ++eng->seq,
              topo_publish(eng->topo));
    return SCRIPT_UNDO;
}

/* An attempt: plain when it may (the first attempt in fair mode too, a
 * default waiter's later ones with a look: see plain.c), else the fair
 * script in fair mode, else the acquire script. */
HILOCK_HOT
static void mutex_acquire(struct hilock_lock *lock, struct fanout *op,
                          int first, uint64_t rid)
{
    struct engine *eng = lock->eng;
    int fair = fair_on(lock);
    if (fair)
        fair_begin_attempt(lock, op);
    else
        op->undo = resend_undo;
    if (first ? plain_take(lock, op, rid) : plain_retake(lock, op, rid))
        return;
    lock->pending.scripted = 1;
    if (fair) {
        fair_encode_attempt(lock, op, rid);
        return;
    }
    /* only the script needs the wait's entry time (a clock read) */
    struct wire_lock w = fair_attempt_wire(lock);
    fanout_eval(op, SCRIPT_ACQUIRE);
    wire_acquire(fanout_cmd(op), eng->scripts.sha[SCRIPT_ACQUIRE], &w,
                 handle_acquire_lease(lock), eng->opts->fencing,
                 topo_publish(eng->topo), rid);
}

/* A release: plain when it may, else the fair script in fair mode, else
 * the release script -- quiet (no message) when it is the handle's own
 * release (nothing pending yet: not a cleanup) of its last hold and a
 * waiter of this client is next on the name (wait.c); the handle notes it
 * for the answer. */
HILOCK_HOT
static void mutex_release(struct hilock_lock *lock, struct fanout *op,
                          uint32_t drop, uint64_t rid)
{
    struct engine *eng = lock->eng;
    struct wire_lock w = handle_wire(lock);
    int quiet = lock->pending.what == PENDING_NONE && !fair_on(lock) &&
                drop >= lock->hold.count && wait_quiet_ok(lock);
    lock->pending.quiet = (unsigned)quiet;
    if (plain_drop(lock, &w, op, drop))
        return;
    if (fair_on(lock)) {
        fair_encode_release(lock, op, drop, rid);
        return;
    }
    fanout_eval(op, SCRIPT_RELEASE);
    wire_release(fanout_cmd(op), eng->scripts.sha[SCRIPT_RELEASE], &w, rid,
                 handle_hold_lease(lock), drop, topo_publish(eng->topo),
                 quiet);
}

/* The undo script, by the attempt's request id; in fair mode its fair
 * twin, which hands the lock on when it ends the hold. */
static void mutex_undo(struct hilock_lock *lock, struct fanout *op,
                       uint64_t attempt, uint64_t rid)
{
    struct engine *eng = lock->eng;
    if (fair_on(lock)) {
        fair_encode_undo(lock, op, attempt, rid);
        return;
    }
    struct wire_lock w = handle_wire(lock);
    fanout_eval(op, SCRIPT_UNDO);
    wire_undo(fanout_cmd(op), eng->scripts.sha[SCRIPT_UNDO], &w, attempt,
              rid, topo_publish(eng->topo));
}

/* The acquire script as request id 0, which no request is above (see
 * script.c): on a master where the owner holds the lock again by then (an
 * earlier repair), it counts no second hold that the release would leave
 * behind. */
static void mutex_repair(struct hilock_lock *lock, struct fanout *op)
{
    struct kind_call c = kind_call(lock, op, SCRIPT_ACQUIRE);
    wire_acquire(c.cmd, c.sha, &c.w, handle_hold_lease(lock),
                 lock->eng->opts->fencing, c.publish, 0);
}

const struct kind_ops kind_mutex = {
    KIND_LOCK_SIDE,
    .wire = &wire_kind_mutex,
    .channel = SUB_RELEASE,
    .fair = 1,
    .bare_field = 1,
    .encode_acquire = mutex_acquire,
    .encode_release = mutex_release,
    .encode_leave = fair_encode_leave, /* only a fair wait queues */
    .encode_undo = mutex_undo,
    .encode_repair = mutex_repair,
};
