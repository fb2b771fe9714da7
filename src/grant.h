/* SPDX-License-Identifier: BSD-3-Clause */
/* grant.h -- what an acquire's grants are worth, and the undoing of those
 * nobody reports: every grant is checked against its lease; on several
 * masters a failed quorum's partial grants are undone, a late vote's grant
 * too, the token is raised on a majority (fencing) and a master that lost
 * a held lock takes it again (repair). */
#ifndef HILOCK_GRANT_H
#define HILOCK_GRANT_H

#include <stddef.h>
#include <stdint.h>

#include "handle.h"

/* Whether the grant of acquire op, read now, is within its lease (less
 * the drift allowance): 0, else how it failed -- HILOCK_ETIMEDOUT on one
 * node, HILOCK_ENOQUORUM on several masters (a wait goes on through
 * both). Holds without a lease (permits) always are. */
int grant_in_time(const struct hilock_lock *lock, const struct fanout *op);
/* Whether some master granted acquire op (it failed as a whole). */
int grant_somewhere(const struct fanout *op);
/* A quorum granted acquire op (res: the combined result). On several
 * masters, make op->token the largest any later majority can see: raise
 * the counters of a majority to it first, unless a majority drew it
 * already -- a fence fan-out pending on lock (node parts with timeout_ms)
 * that done decides. Returns 0 when the acquisition stands or a fence is
 * under way, else the failure status. */
int grant_fence_masters(struct hilock_lock *lock, struct fanout *op,
                        const struct op_result *res, fanout_done_fn *done,
                        uint32_t timeout_ms);
/* The same on any topology (one node: nothing to raise, it stands). */
static inline int grant_fence(struct hilock_lock *lock, struct fanout *op,
                              const struct op_result *res,
                              fanout_done_fn *done, uint32_t timeout_ms)
{
    if (lock->eng->nnodes == 1)
        return 0;
    return grant_fence_masters(lock, op, res, done, timeout_ms);
}
/* Undo the holds that acquire op took on the nodes that granted it: it
 * failed as a whole. */
void grant_undo_partial(struct hilock_lock *lock, struct fanout *op);
/* op->late of an acquire attempt: a node answered after the decision. */
void grant_late(struct fanout *op, size_t i, const struct op_result *res);
/* Release drop holds of this owner without telling anyone (a late acquire
 * success, a held handle being freed, a failed quorum), on every node
 * (node < 0) or one. Best effort. */
void grant_cleanup(struct hilock_lock *lock, uint32_t drop, int node);
/* Whether op is such a cleanup (it is not cancelled with its handle). */
int grant_is_cleanup(const struct fanout *op);
/* A majority renewed lock, but master i had lost it (restarted empty):
 * take it there again when it is free, so that the next failure of
 * another master does not cost the quorum. Best effort. */
void grant_repair(struct hilock_lock *lock, size_t i);

#endif
