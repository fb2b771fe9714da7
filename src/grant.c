/* SPDX-License-Identifier: BSD-3-Clause */
/* grant.c -- see grant.h. */
#include "grant.h"

#include "clock.h"
#include "fanout.h"
#include "hold.h"
#include "hot.h"
#include "quorum.h"
#include "wait.h"

static void cleanup_done(struct fanout *op, int status,
                         const struct op_result *res);

HILOCK_HOT
int grant_in_time(const struct hilock_lock *lock, const struct fanout *op)
{
    if (!lock->kind->leased ||
        quorum_grant_left(handle_acquire_lease(lock), op->sent_ms,
                          clock_now_ms()) > 0)
        return 0;
    return lock->eng->nnodes > 1 ? HILOCK_ENOQUORUM : HILOCK_ETIMEDOUT;
}

int grant_somewhere(const struct fanout *op)
{
    for (size_t i = 0; i < op->n; i++)
        if (fanout_node_ok(op, i))
            return 1;
    return 0;
}

/* Whether a master granting acquire op counted a re-entry while the
 * owner held nothing here: its token is its counter as it was, maybe a
 * token handed out before. (Its extra hold is not dropped here: it is
 * most often the grant of an earlier attempt of this handle whose undo
 * comes with that attempt's late answer.) */
static int reentered(const struct hilock_lock *lock, const struct fanout *op)
{
    if (lock->hold.count > 0 || handle_owner_holds(lock))
        return 0;
    for (size_t i = 0; i < op->n; i++)
        if (fanout_node_ok(op, i) && op->node[i].res.count > 1)
            return 1;
    return 0;
}

int grant_fence_masters(struct hilock_lock *lock, struct fanout *op,
                        const struct op_result *res, fanout_done_fn *done,
                        uint32_t timeout_ms)
{
    struct engine *eng = lock->eng;
    size_t same = 0;
    /* One above the largest token is fresh once a majority has it (any
     * token reported was on a majority, which meets this one). */
    op->token = res->token + (eng->opts->fencing && reentered(lock, op));
    for (size_t i = 0; i < op->n; i++)
        same += fanout_node_ok(op, i) && op->node[i].res.token == op->token;
    if (!eng->opts->fencing || same >= quorum_of(op->n))
        return 0;
    struct wire_lock w = handle_wire(lock);
    struct fanout *f =
        fanout_new(eng, OP_KIND_FENCE, -1, lock->slot, 0, done);
    if (!f)
        return HILOCK_ENOMEM;
    fanout_eval(f, SCRIPT_FENCE);
    wire_fence(fanout_cmd(f), eng->scripts.sha[SCRIPT_FENCE], &w, op->token);
    fanout_hold(op); /* until the fence is decided */
    f->data = op;
    handle_attach(lock, f);
    lock->pending.fanout = f;
    fanout_submit(f, timeout_ms);
    return 0;
}

/* How long an undo of lock's attempt may wait for its node: as long as
 * the hold it drops may last, at least the request timeout. A node that
 * is down (a master killed, its replica not yet promoted) would otherwise
 * fail it at the request deadline, and the grant it should drop, carried
 * to the replica, would hold the lock there for its lease. Going late is
 * harmless: the undo drops nothing that the attempt did not take. */
static uint32_t undo_deadline_ms(const struct hilock_lock *lock)
{
    uint32_t lease = handle_acquire_lease(lock);
    return lease > lock->eng->opts->request_timeout_ms ? lease : 0;
}

/* Undo the hold that acquire op's request to node i took (it granted
 * it): only that request's own hold, if still there, never one a later
 * attempt or a hand-off began after it (src/lua/undo.lua and the kinds'
 * own), where the kind has such an undo; else one hold of the owner.
 * Best effort. */
static void send_undo(struct hilock_lock *lock, const struct fanout *op,
                      size_t i)
{
    struct engine *eng = lock->eng;
    int node = op->n == 1 ? -1 : (int)i;
    if (!lock->kind->encode_undo) {
        grant_cleanup(lock, 1, node);
        return;
    }
    struct fanout *u =
        fanout_new(eng, OP_KIND_RELEASE, node, lock->slot, 0, cleanup_done);
    if (!u)
        return;
    u->drop = 1;
    lock->kind->encode_undo(lock, u, op->node[i].rid, ++eng->seq);
    handle_attach(lock, u);
    fanout_submit(u, undo_deadline_ms(lock));
}

void grant_undo_partial(struct hilock_lock *lock, struct fanout *op)
{
    for (size_t i = 0; i < op->n; i++)
        if (fanout_node_ok(op, i))
            send_undo(lock, op, i);
}

/* A success there is only kept when the acquire succeeded as a whole and
 * its hold was not given back (or lost) since. */
void grant_late(struct fanout *op, size_t i, const struct op_result *res)
{
    const struct hilock_lock *lock = op->ctx;
    if (res && res->status == 0 && (op->status != 0 || lock->hold.count == 0))
        send_undo(op->ctx, op, i);
}

void grant_cleanup(struct hilock_lock *lock, uint32_t drop, int node)
{
    struct fanout *op = kind_release_new(lock, drop, node, 0, cleanup_done);
    if (op)
        fanout_submit(op, 0);
}

/* A cleanup's answer: permits given back wake this client's waiters; a
 * hold that ended on every node ends for the twins that counted on it. */
static void cleanup_done(struct fanout *op, int status,
                         const struct op_result *res)
{
    struct hilock_lock *lock = op->ctx;
    if (!lock->kind->leased) {
        if (status == 0 && res)
            wait_released(lock, res->heard);
        return;
    }
    if (status == 0 && res && res->count == 0 && op->target < 0) {
        hold_share_end(lock);
        hold_released_news(lock, op, res);
    }
}

int grant_is_cleanup(const struct fanout *op)
{
    return op->done == cleanup_done;
}

static void repair_done(struct fanout *op, int status,
                        const struct op_result *res)
{
    (void)op;
    (void)status;
    (void)res; /* busy: another owner took that master; nothing to do */
}

/* It goes as the kind's repair (see kind_mutex.c). */
void grant_repair(struct hilock_lock *lock, size_t i)
{
    struct fanout *op = fanout_new(lock->eng, OP_KIND_ACQUIRE, (int)i,
                                   lock->slot, 0, repair_done);
    if (!op)
        return; /* the next renewal tries again */
    lock->kind->encode_repair(lock, op);
    handle_attach(lock, op);
    fanout_submit(op, 0);
}
