/* SPDX-License-Identifier: BSD-3-Clause */
/* kind_sem.c -- permits of a counting semaphore (hilock_semaphore_new):
 * Redisson's RSemaphore string. A hold is permits the handle counts: no
 * owner in Redis, no lease, nothing to renew or lose; acquires and
 * releases are made idempotent by the request ids kept beside the
 * semaphore (src/lua/lib/sem_kind.lua). */
#include "kind.h"

#include <limits.h>
#include <stdint.h>

#include "fanout.h"
#include "handle.h"

/* The shortest time the request ids applied are kept (see
 * src/lua/lib/sem_kind.lua); a request cannot be resent later than its
 * deadline, so four request timeouts are kept when that is longer. */
#define SEM_RID_TTL_MS 60000

static uint32_t sem_rid_ttl(const struct engine *eng)
{
    uint64_t t = 4 * (uint64_t)eng->opts->request_timeout_ms;
    return t > SEM_RID_TTL_MS ? (t < INT32_MAX ? (uint32_t)t : INT32_MAX)
                              : SEM_RID_TTL_MS;
}

/* Take the pending acquire's permits. */
static void sem_acquire(struct hilock_lock *lock, struct fanout *op,
                        int first, uint64_t rid)
{
    struct kind_call c = kind_call(lock, op, SCRIPT_SEM_ACQUIRE);
    (void)first;
    wire_sem_acquire(c.cmd, c.sha, &c.w, lock->pending.permits,
                     sem_rid_ttl(lock->eng), rid);
}

/* Give back drop permits. */
static void sem_release(struct hilock_lock *lock, struct fanout *op,
                        uint32_t drop, uint64_t rid)
{
    struct kind_call c = kind_call(lock, op, SCRIPT_SEM_RELEASE);
    wire_sem_release(c.cmd, c.sha, &c.w, drop, sem_rid_ttl(lock->eng),
                     c.publish, rid);
}

const struct kind_ops kind_sem = {
    .api = CB_SEMAPHORE,
    .channel = SUB_SEM,
    .shared = 1,
    .encode_acquire = sem_acquire,
    .encode_release = sem_release,
};
