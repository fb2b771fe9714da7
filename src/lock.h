/* SPDX-License-Identifier: BSD-3-Clause */
/* lock.h -- the top of the lock engine (most hilock_lock_* calls of the
 * public header live in lock.c too; the queries in query.c); what the
 * client calls. */
#ifndef HILOCK_LOCK_H
#define HILOCK_LOCK_H

#include <stddef.h>
#include <stdint.h>

#include "callback.h"
#include "engine.h"
#include "kind.h"
#include "quorum.h"
#include "wire.h"

/* Set up the engine's tables, wait queues, watchdog and hooks; the caller
 * fills in base, opts, topo, guard, prefix and id. */
void lock_engine_init(struct engine *eng);
/* A handle of kind on eng (hilock_lock_new, hilock_rwlock_new, ...); a
 * semaphore's handle gets a number of its own instead of owner_tag.
 * Returns 0, HILOCK_EINVAL (also for a kind other than a lock on several
 * masters) or HILOCK_ENOMEM. */
int lock_new(struct engine *eng, const char *name, size_t len,
             uint64_t owner_tag, enum lock_kind id, struct hilock_lock **out);
/* hilock_lock_acquire of any kind, with lease_ms checked; a counting
 * semaphore takes permits (and has no lease); cb of the handle's public
 * shape. */
int lock_acquire(struct hilock_lock *lock, uint64_t wait_ms,
                 uint32_t lease_ms, uint32_t permits, struct user_cb cb);
/* hilock_lock_release of drop holds (a counting semaphore: permits). */
int lock_release(struct hilock_lock *lock, uint32_t drop, struct user_cb cb);
/* hilock_lock_renew and hilock_lock_on_lost of any kind with a lease
 * (HILOCK_EINVAL for a counting semaphore). */
int lock_renew(struct hilock_lock *lock, uint64_t lease_ms,
               struct user_cb cb);
int lock_on_lost(struct hilock_lock *lock, struct user_cb cb);
/* Teardown, step 1: mark every handle freed, end every pending op that has
 * no request in flight, stop the watchdog's tracking. */
void lock_cancel_all(struct engine *eng);
/* Teardown, last step (after the node is closed): free every handle and
 * the engine's tables. */
void lock_engine_free(struct engine *eng);

#endif
