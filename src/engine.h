/* SPDX-License-Identifier: BSD-3-Clause */
/* engine.h -- what the lock engine's files share: one struct.
 *
 * The engine is the layer between the client (lifecycle, public API) and
 * the nodes (Redis endpoints): lock handles, wait queues, the watchdog and
 * MultiLocks. Its files are layered too -- multi.c on top, then lock.c
 * (and query.c beside it), then grant.c, the kinds (kind*.c) with their
 * modes (fair.c, plain.c), hold.c, wait.c and watchdog.c, then handle.c
 * and fanout.c -- and a lower one reports to a higher one only through
 * the hooks below, which lock.c fills in (and multi.c wraps for its
 * members). */
#ifndef HILOCK_ENGINE_H
#define HILOCK_ENGINE_H

#include <event2/event.h>
#include <event2/event_struct.h>
#include <stdint.h>
#include <sys/queue.h>

#include "heap.h"
#include "hilock/hilock.h"
#include "reentry.h"
#include "script.h"
#include "stats.h"
#include "table.h"
#include "topo.h"

struct hilock_lock;

/* The watchdog: every held lock sits in one heap keyed by its next event
 * (renewal due, or the moment its lease could have run out). */
struct watchdog {
    struct heap heap;
    struct event timer;
    uint64_t armed_ms; /* when timer fires; 0: not armed */
};

/* Upcalls to lock.c, from the files below it. */
struct engine_hooks {
    /* wait.c: the waiter's turn has come; send an attempt. */
    void (*attempt)(struct hilock_lock *lock);
    /* wait.c: the wait's deadline passed. */
    void (*wait_expired)(struct hilock_lock *lock);
    /* wait.c (fair mode): the lock was handed to this waiting acquire,
     * with token; the hold lasts until until_ms at least, or 0: it was
     * learnt too late to count (see wait.c). */
    void (*handed)(struct hilock_lock *lock, int64_t token,
                   uint64_t until_ms);
    /* wait.c: a quiet release of lock's name was taken up by no waiter
     * here: publish the release message it left out. */
    void (*owed)(struct hilock_lock *lock);
    /* watchdog.c: Redis confirmed the owner's hold with lease_ms from a
     * request sent at sent_ms. */
    void (*renewed)(struct hilock_lock *lock, uint64_t sent_ms,
                    uint32_t lease_ms);
    /* watchdog.c: Redis says the owner holds it no more. */
    void (*gone)(struct hilock_lock *lock);
    /* watchdog.c: its validity ran out with no renewal confirmed, or it
     * could not be scheduled (no memory). */
    void (*expired)(struct hilock_lock *lock);
    /* watchdog.c: a majority renewed the lock but node i had lost it (a
     * restart without persistence): take it there again if free. */
    void (*repair)(struct hilock_lock *lock, size_t i);
};

LIST_HEAD(lock_list, hilock_lock);

struct engine {
    struct event_base *base;
    const struct hilock_options *opts; /* the client's copy */
    struct topo *topo;                 /* the client's: where requests go */
    size_t nnodes;                     /* its members: the Redlock masters,
                                          else 1 */
    struct script_set scripts;         /* digests for EVALSHA */
    struct reentry *guard;
    const char *prefix;                /* never NULL */
    size_t prefix_len;
    const char *id;                    /* client uuid: owner fields */
    const char *listener;              /* fair mode: hand-off channel tag;
                                          NULL: not fair */
    const unsigned char *permit_prefix; /* 8 public random bytes: ids of
                                           permits and semaphore handles */
    uint64_t seq;                      /* request ids */
    uint64_t *rng;                     /* jitter (the client's seed) */
    struct lock_list locks;            /* every handle, for teardown */
    struct table owners;               /* every handle, by name + owner */
    struct table waits;                /* wait queues by name */
    struct watchdog wd;
    struct engine_hooks hooks;
    struct multi_state *multi;         /* multi.c's */
    struct fanout *fanout_pool;        /* recycled fan-outs (fanout.c) */
    size_t fanout_pool_len;
    struct hilock_stats stats;         /* the client's counters */
    uint8_t plain_refused;             /* a node does not take the plain
                                          commands: scripts only from now
                                          on (see plain.c) */
};

/* The lease a request asks for: lease_ms, or the watchdog's for 0. */
static inline uint32_t engine_lease(const struct engine *eng,
                                    uint32_t lease_ms)
{
    return lease_ms ? lease_ms : eng->opts->watchdog_lease_ms;
}

/* Failures a later attempt may not meet: a wait goes on through them. */
static inline int engine_transient(int status)
{
    return status == HILOCK_ETIMEDOUT || status == HILOCK_ECONN ||
           status == HILOCK_ENOQUORUM;
}

#endif
