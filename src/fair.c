/* SPDX-License-Identifier: BSD-3-Clause */
/* fair.c -- see fair.h. */
#include "fair.h"

#include "clock.h"
#include "fanout.h"
#include "hold.h"
#include "topo.h"
#include "wait.h"

/* The longest a queue entry stays live without a retry of its waiter
 * refreshing it (see src/lua/lib/fair.lua): a client that died leaves an
 * entry that is skipped after this at most. */
#define FAIR_ENTRY_MAX_MS 60000
/* The longest lease a hand-off sets (the "5000" of src/lua/lib/fair.lua). */
#define FAIR_HANDOFF_LEASE_MS 5000

static void claim_done(struct fanout *op, int status,
                       const struct op_result *res);

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
                          lock->pending.wait_id, topo_publish(lock->eng->topo),
                          now};
    return f;
}

struct wire_lock fair_attempt_wire(const struct hilock_lock *lock)
{
    struct wire_lock w = handle_wire(lock);
    /* A try that does not wait declares the queue too, to serve it past
     * dead waiters: a plain HDEL leaves a key with the queue's marker and
     * the old holder's lease. Not on Redlock (no plain path there), nor in
     * a cluster, where more keys would make a try wait out its slot's
     * migration (TRYAGAIN while the keys are split). */
    w.queue = lock->eng->nnodes == 1 && !topo_slotted(lock->eng->topo);
    if (handle_wait_deadline(lock))
        w.entry_ms = entry_ms(lock, clock_now_ms());
    return w;
}

/* The fair undo of what the attempt with request id attempt took, as
 * rid, into cmd (src/lua/fair_undo.lua). */
static void fair_encode_undo_into(struct hilock_lock *lock,
                                  struct resp_buf *cmd, uint64_t attempt,
                                  uint64_t rid)
{
    struct engine *eng = lock->eng;
    struct wire_lock w = handle_wire(lock);
    struct wire_fair f = fair_args(lock);
    wire_fair_undo(cmd, eng->scripts.sha[SCRIPT_FAIR_UNDO], &w, attempt, rid,
                   eng->opts->fencing, &f);
}

int fair_resend_undo(struct fanout *op, struct resp_buf *cmd, uint64_t rid)
{
    struct hilock_lock *lock = op->ctx;
    resp_reset(cmd);
    fair_encode_undo_into(lock, cmd, rid, ++lock->eng->seq);
    return SCRIPT_FAIR_UNDO;
}

int fair_plain_ok(const struct hilock_lock *lock)
{
    return !fair_on(lock) || (!wait_has_waiters(lock) && !lock->waited);
}

void fair_begin_attempt(struct hilock_lock *lock, struct fanout *op)
{
    op->undo = fair_resend_undo;
    lock->pending.handed = 0;
}

int fair_attempt_into(struct hilock_lock *lock, struct resp_buf *cmd,
                      uint64_t rid)
{
    struct engine *eng = lock->eng;
    struct wire_lock w = fair_attempt_wire(lock);
    struct wire_fair f = fair_args(lock);
    /* A retry of a wait that queued looks its entry up first (the
     * script's "r"): most are still queued. */
    enum wire_fair_mode m = !handle_wait_deadline(lock) ? WIRE_FAIR_TRY
                            : lock->pending.queued      ? WIRE_FAIR_RETRY
                                                        : WIRE_FAIR_WAIT;
    wire_fair_acquire(cmd, eng->scripts.sha[SCRIPT_FAIR_ACQUIRE], &w,
                      handle_acquire_lease(lock), eng->opts->fencing, m, &f,
                      rid);
    lock->pending.queued |= m != WIRE_FAIR_TRY;
    return SCRIPT_FAIR_ACQUIRE;
}

void fair_encode_attempt(struct hilock_lock *lock, struct fanout *op,
                         uint64_t rid)
{
    fanout_eval(op, SCRIPT_FAIR_ACQUIRE);
    fair_attempt_into(lock, fanout_cmd(op), rid);
    fair_begin_attempt(lock, op);
}

int fair_release_into(struct hilock_lock *lock, struct resp_buf *cmd,
                      uint32_t drop, uint64_t rid)
{
    struct engine *eng = lock->eng;
    struct wire_lock w = handle_wire(lock);
    struct wire_fair f = fair_args(lock);
    wire_fair_release(cmd, eng->scripts.sha[SCRIPT_FAIR_RELEASE], &w, rid,
                      handle_hold_lease(lock), drop, eng->opts->fencing, &f);
    return SCRIPT_FAIR_RELEASE;
}

void fair_encode_release(struct hilock_lock *lock, struct fanout *op,
                         uint32_t drop, uint64_t rid)
{
    fanout_eval(op, SCRIPT_FAIR_RELEASE);
    fair_release_into(lock, fanout_cmd(op), drop, rid);
}

void fair_encode_undo(struct hilock_lock *lock, struct fanout *op,
                      uint64_t attempt, uint64_t rid)
{
    fanout_eval(op, SCRIPT_FAIR_UNDO);
    fair_encode_undo_into(lock, fanout_cmd(op), attempt, rid);
}

void fair_encode_leave(struct hilock_lock *lock, struct fanout *op)
{
    struct engine *eng = lock->eng;
    struct wire_lock w = handle_wire(lock);
    struct wire_fair f = fair_args(lock);
    fanout_eval(op, SCRIPT_FAIR_LEAVE);
    wire_fair_leave(fanout_cmd(op), eng->scripts.sha[SCRIPT_FAIR_LEAVE], &w,
                    eng->opts->fencing, &f);
}

/* Make the hold handed to this owner its own (drop the marker, set its
 * lease; see script.c). Best effort: a claim that cannot be sent leaves
 * the short hand-off lease, which the watchdog renews. */
static void send_claim(struct hilock_lock *lock)
{
    struct engine *eng = lock->eng;
    struct wire_lock w = handle_wire(lock);
    struct wire_fair f = fair_args(lock);
    struct fanout *op =
        fanout_new(eng, OP_KIND_ACQUIRE, -1, lock->slot, 0, claim_done);
    if (!op)
        return;
    op->lease_ms = handle_acquire_lease(lock);
    fanout_eval(op, SCRIPT_FAIR_ACQUIRE);
    wire_fair_acquire(fanout_cmd(op), eng->scripts.sha[SCRIPT_FAIR_ACQUIRE],
                      &w, op->lease_ms, eng->opts->fencing, WIRE_FAIR_CLAIM,
                      &f, ++eng->seq);
    handle_attach(lock, op);
    fanout_submit(op, 0);
}

/* The claim's answer: the hold is ours with our lease, or it was gone
 * before we claimed it (lost), or no answer (claim again while held). */
static void claim_done(struct fanout *op, int status,
                       const struct op_result *res)
{
    struct hilock_lock *lock = op->ctx;
    (void)res;
    if (status == 0)
        hold_share_lease(lock, op->sent_ms, op->lease_ms);
    else if (status == HILOCK_EBUSY)
        hold_share_end(lock);
    else if (engine_transient(status) && lock->hold.count > 0 &&
             !lock->freeing && !handle_closing(lock))
        send_claim(lock);
}

/* The hand-off came with the short hand-off lease (see script.c). It is
 * the owner now: success is reported at once. Under the watchdog, or with
 * a lease no longer than the hand-off lease, the hold is ours as it is
 * (the watchdog extends it at its first renewal, a third of the hand-off
 * lease later); a longer explicit lease is claimed first (sent before the
 * callback, so that anything the callback sends comes after it). With an
 * attempt in flight, or when the hand-off was learnt too late to count
 * (until_ms 0: the lease may have run out and the lock moved on), an
 * attempt decides instead: it claims the hold when it is still this
 * wait's, else queues again. So it does too after an attempt of this wait
 * failed unanswered (timed out while Redis was stopped, or slow): Redis
 * may apply that attempt after the hand-off, claiming the hold, and the
 * undo its late success brings drops one hold of the owner -- the handed
 * one, were it reported. The deciding attempt goes after that attempt
 * (and after its undo, when that went first), so it counts what is really
 * there, and the undo then drops only its extra hold. */
int fair_take_handoff(struct hilock_lock *lock, uint64_t until_ms,
                      uint32_t *lease_ms)
{
    if (lock->pending.fanout || until_ms == 0 || lock->pending.unsure) {
        lock->pending.handed = 1;
        return 0;
    }
    lock->eng->stats.handoffs++;
    uint32_t lease = handle_acquire_lease(lock);
    if (lock->pending.lease_ms > FAIR_HANDOFF_LEASE_MS)
        send_claim(lock);
    *lease_ms = lease < FAIR_HANDOFF_LEASE_MS ? lease : FAIR_HANDOFF_LEASE_MS;
    return 1;
}
