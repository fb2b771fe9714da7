/* SPDX-License-Identifier: BSD-3-Clause */
/* hold.h -- a handle's hold, and the owner's hold its twins share.
 *
 * Handles of one name and owner (twins) share one hold in Redis: what a
 * reply says about that hold (a new lease, its end) is applied to every
 * one of them here. The engine (lock.c), fair mode and the Redlock
 * grants report through these calls. */
#ifndef HILOCK_HOLD_H
#define HILOCK_HOLD_H

#include <stdint.h>

#include "handle.h"
#include "quorum.h"

/* A hold with lease_ms from sent_ms on, under the watchdog or not: count
 * it and track its lease (shared with its twins). Returns whether the
 * owner held already (a re-entry). */
int hold_grant(struct hilock_lock *lock, uint64_t sent_ms, int watchdog,
               uint32_t lease_ms);
/* One hold of the handle ended; the last one ends its hold. */
void hold_drop(struct hilock_lock *lock);
/* The handle's hold ended (released, lost, freed): stop its renewals. */
void hold_end(struct hilock_lock *lock);
/* The hold of a handle that counted on it is gone: hold_end, and tell
 * its on_lost (the one place it is called). A handle whose release of its
 * last hold is under way counts on nothing: that release's callback tells
 * how the hold ended. */
void hold_lost(struct hilock_lock *lock);
/* Redis confirmed the owner's hold with lease_ms from a request sent at
 * sent_ms: every holding twin takes the new lease and validity. */
void hold_share_lease(struct hilock_lock *lock, uint64_t sent_ms,
                      uint32_t lease_ms);
/* Redis says the owner holds nothing: every twin that counted on the hold
 * (lock included) is told. */
void hold_share_end(struct hilock_lock *lock);
/* Release op of this client ended lock's name's hold (res: its result):
 * wake this client's head waiter, or, when the fair release handed the
 * lock to a waiter of this client, hand it over here at once. */
void hold_released_news(struct hilock_lock *lock, const struct fanout *op,
                        const struct op_result *res);

#endif
