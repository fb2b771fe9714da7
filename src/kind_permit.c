/* SPDX-License-Identifier: BSD-3-Clause */
/* kind_permit.c -- one expiring permit of a semaphore
 * (hilock_permit_new): Redisson's RPermitExpirableSemaphore, a member of
 * the permit zset scored by its expiry. A handle holds one permit at a
 * time, named by the handle's own id and the acquire call
 * (src/lua/lib/permit.lua); it has a lease, which the watchdog renews. */
#include "kind.h"

#include "fanout.h"
#include "handle.h"

static void permit_acquire(struct hilock_lock *lock, struct fanout *op,
                           int first, uint64_t rid)
{
    struct kind_call c = kind_call(lock, op, SCRIPT_PERMIT_ACQUIRE);
    (void)first;
    wire_permit_acquire(c.cmd, c.sha, &c.w, handle_acquire_lease(lock),
                        c.publish, rid);
}

/* The permit goes back whole (drop is always its one hold). */
static void permit_release(struct hilock_lock *lock, struct fanout *op,
                           uint32_t drop, uint64_t rid)
{
    struct kind_call c = kind_call(lock, op, SCRIPT_PERMIT_RELEASE);
    (void)drop;
    wire_permit_release(c.cmd, c.sha, &c.w, c.publish, rid);
}

const struct kind_ops kind_permit = {
    .api = CB_PERMIT,
    .wire = &wire_kind_permit,
    .channel = SUB_SEM,
    .shared = 1,
    .leased = 1,
    .single = 1,
    .guarded = 1,
    .encode_acquire = permit_acquire,
    .encode_release = permit_release,
};
