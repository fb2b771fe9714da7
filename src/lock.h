/* lock.h -- the top of the lock engine (the hilock_lock_* calls of the
 * public header live in lock.c too); what the client calls. */
#ifndef HILOCK_LOCK_H
#define HILOCK_LOCK_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/* Set up the engine's tables, wait queues, watchdog and hooks; the caller
 * fills in base, opts, topo, guard, prefix and id. */
void lock_engine_init(struct engine *eng);
/* hilock_lock_new on eng. Returns 0, HILOCK_EINVAL or HILOCK_ENOMEM. */
int lock_new(struct engine *eng, const char *name, size_t len,
             uint64_t owner_tag, struct hilock_lock **out);
/* A hold taken by a request sent at sent_ms with lease_ms (0: watchdog)
 * on some other path (a MultiLock): count it and track its lease. */
void lock_granted(struct hilock_lock *lock, uint64_t sent_ms,
                  uint32_t lease_ms);
/* One hold of the handle was released on some other path. */
void lock_drop_hold(struct hilock_lock *lock);
/* Teardown, step 1: mark every handle freed, end every pending op that has
 * no request in flight, stop the watchdog's tracking. */
void lock_cancel_all(struct engine *eng);
/* Teardown, last step (after the node is closed): free every handle and
 * the engine's tables. */
void lock_engine_free(struct engine *eng);

#endif
