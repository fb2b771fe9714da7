/* SPDX-License-Identifier: BSD-3-Clause */
/* watchdog.h -- lease renewal and loss detection on one loop timer (see
 * watchdog.c). What it learns goes up through eng->hooks: renewed, gone,
 * expired. */
#ifndef HILOCK_WATCHDOG_H
#define HILOCK_WATCHDOG_H

#include <stdint.h>

#include "engine.h"
#include "handle.h"

void watchdog_init(struct engine *eng);
void watchdog_free(struct engine *eng);
/* A hold started or its lease was reset by a request sent at sent_ms:
 * schedule the lock's renewal (under the watchdog) or its validity end. */
void watchdog_confirmed(struct hilock_lock *lock, uint64_t sent_ms);
/* Stop tracking the lock. */
void watchdog_forget(struct hilock_lock *lock);
/* Renew one lock now with lease_ms for hilock_lock_renew(); cb gets the
 * result after the hooks have applied it. Returns 0 or HILOCK_ENOMEM. */
int watchdog_renew_now(struct hilock_lock *lock, uint32_t lease_ms,
                       struct user_cb cb);
/* After a reconnect: the server may have lost every key (restart,
 * failover). Renew every watchdog lock and check every lock with an
 * explicit lease (without extending it) now, so a vanished lock is reported
 * at once instead of at its next renewal or lease end. */
void watchdog_verify_all(struct engine *eng);

#endif
