/* SPDX-License-Identifier: BSD-3-Clause */
/* fair.h -- fair mode (hilock_options.fair): a lock's waiters queue in
 * Redis, and a release hands the lock to the head of the queue (see
 * script.c). A mode of the lock kind (kind_mutex.c), which encodes its
 * acquire, release and leave here; lock.c asks here whether a hand-off
 * counts. */
#ifndef HILOCK_FAIR_H
#define HILOCK_FAIR_H

#include <stdint.h>

#include "handle.h"

/* Whether lock is taken in fair mode (asked several times a pair:
 * inline). */
static inline int fair_on(const struct hilock_lock *lock)
{
    return lock->eng->listener != NULL && lock->kind->fair;
}
/* lock's wire view for an attempt of its acquire: a waiting one (fair or
 * not) joins the fair queue of its name if there is one; on one node (not
 * a cluster), one that does not wait declares the queue to serve it
 * (src/lua/acquire.lua). */
struct wire_lock fair_attempt_wire(const struct hilock_lock *lock);
/* Encode an attempt of lock's pending acquire as a fair one into op, as
 * request id rid: a waiting one queues when the lock is busy. */
void fair_encode_attempt(struct hilock_lock *lock, struct fanout *op,
                         uint64_t rid);
/* The fair attempt's command alone, into cmd (a plain one going again as
 * the script). Returns its script id. */
int fair_attempt_into(struct hilock_lock *lock, struct resp_buf *cmd,
                      uint64_t rid);
/* op (an attempt of lock, plain or fair) is lock's attempt in fair mode:
 * its resend after a drop, once decided, is the fair undo, and a hand-off
 * learnt before it is forgotten (the attempt decides). */
void fair_begin_attempt(struct hilock_lock *lock, struct fanout *op);
/* op->undo of a fair attempt (see fanout.h): a decided attempt resent
 * after a drop undoes what its request id rid may have taken instead. */
int fair_resend_undo(struct fanout *op, struct resp_buf *cmd, uint64_t rid);
/* Whether lock's first attempt may go as the plain RESTORE, or its
 * release as the plain HDEL, as far as fair mode goes: not in fair mode,
 * or no waiter of this client is parked on the name (it is queued in
 * Redis: RESTORE would pass it when the key is absent, and the fair
 * release script hands it the lock at once; see plain.c), and the hold
 * did not come through a wait (others were in line then, most likely
 * still are: the script hands the lock to the next at once, where the
 * HDEL's message would wake every client waiting on the name to look). */
int fair_plain_ok(const struct hilock_lock *lock);
/* The fair release of drop holds alone, as rid, into cmd (a plain one
 * going again as the script). Returns its script id. */
int fair_release_into(struct hilock_lock *lock, struct resp_buf *cmd,
                      uint32_t drop, uint64_t rid);
/* Encode a fair release of drop holds into op, as rid: the last one hands
 * the lock to the head of the queue. */
void fair_encode_release(struct hilock_lock *lock, struct fanout *op,
                         uint32_t drop, uint64_t rid);
/* Encode the undo of the hold the attempt with request id attempt took
 * into op, as rid (src/lua/fair_undo.lua): only a hold that attempt began;
 * the lock is handed on when that ends it. */
void fair_encode_undo(struct hilock_lock *lock, struct fanout *op,
                      uint64_t attempt, uint64_t rid);
/* Encode leaving the queue into op (a hand-off that raced the giving up
 * is passed on). */
void fair_encode_leave(struct hilock_lock *lock, struct fanout *op);
/* A release handed lock to its pending acquire, with a hold that lasts
 * until until_ms (0: learnt too late to count). Returns 1 when the hand-off
 * counts as the acquisition, with *lease_ms its lease here (a claim is
 * sent first for a longer lease); 0 when an attempt must decide instead. */
int fair_take_handoff(struct hilock_lock *lock, uint64_t until_ms,
                      uint32_t *lease_ms);

#endif
