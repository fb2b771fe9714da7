/* SPDX-License-Identifier: BSD-3-Clause */
/* plain.h -- the plain fast path of a lock: RESTORE to take it, HDEL and
 * the release message to give it back, no script (see plain.c). */
#ifndef HILOCK_PLAIN_H
#define HILOCK_PLAIN_H

#include <stdint.h>

#include "handle.h"

/* Encode the first attempt of lock's acquire into op as RESTORE, as
 * request id rid, when it may go plain. Returns 1 when it did, 0 when
 * nothing was written (the script goes). */
int plain_take(struct hilock_lock *lock, struct fanout *op, uint64_t rid);
/* The same for a later attempt of a waiting acquire: RESTORE with a look
 * at the lock (wire_look), as one transaction, when it may go plain
 * (a default-mode lock whose acquire has not gone as the script). */
int plain_retake(struct hilock_lock *lock, struct fanout *op, uint64_t rid);
/* Encode a release of drop holds of lock w into op as HDEL and the
 * release message (none when the release is quiet, lock->pending.quiet:
 * see wait.h) when it may go plain: the owner's only hold. Returns 1 when
 * it did, 0 when nothing was written. */
int plain_drop(struct hilock_lock *lock, const struct wire_lock *w,
               struct fanout *op, uint32_t drop);

#endif
