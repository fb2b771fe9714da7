/* SPDX-License-Identifier: BSD-3-Clause */
/* handle.h -- the lock handle object: its fields, its memory (reference
 * counted), the requests it owns, and its twins (handles of the same name
 * and owner, which share one hold in Redis). */
#ifndef HILOCK_HANDLE_H
#define HILOCK_HANDLE_H

#include <stdint.h>
#include <sys/queue.h>

#include <event2/event_struct.h>

#include "callback.h"
#include "engine.h"
#include "heap.h"
#include "hot.h"
#include "kind.h"
#include "fanout.h"
#include "table.h"
#include "wire.h"

/* What is pending on a handle: at most one acquire or release. */
enum pending_what { PENDING_NONE = 0, PENDING_ACQUIRE, PENDING_RELEASE };

struct wait_queue;
struct hilock_lock;

/* What a handle needs only while it waits (wait.c), kept apart so that a
 * held lock does not carry it: its deadline timer and its place in the
 * name's queue. Freed with the handle. */
struct waiting {
    struct event timer;              /* the wait's deadline */
    uint64_t deadline;               /* ms; 0: the acquire tries once */
    uint64_t parked_us;              /* when it was parked (stats.h) */
    struct hilock_lock *lock;
    struct wait_queue *queue;        /* NULL: not parked */
    TAILQ_ENTRY(waiting) link;       /* in queue->waiters */
    uint32_t news_mark;              /* its name's news when the acquire
                                        began (wait.c) */
};

/* The sub-structs below keep their flags in the bits their numbers leave
 * free, so that a held handle stays small (a server may hold a million). */

/* The handle's hold (lock.c, hold.c): what Redis gave this handle. */
struct lock_hold {
    int64_t token;                   /* its fencing token */
    unsigned count : 30;             /* holds taken through this handle (a
                                        counting semaphore: permits) */
    unsigned unreleased : 1;         /* a release of it got no answer */
    unsigned renewing : 1;           /* the watchdog's renewal of its lease
                                        is in flight */
    unsigned lease_ms : 31;          /* lease of the current hold (at most
                                        HILOCK_MS_MAX) */
    unsigned auto_renew : 1;         /* the watchdog renews the lease */
};

/* The pending acquire or release (lock.c): the user's callback, the
 * fan-out in flight, and what the acquire asked for. */
struct lock_pending {
    struct user_cb cb;               /* of the handle's public shape */
    struct fanout *fanout;           /* attempt or release in flight */
    uint32_t lease_ms;               /* the lease asked for (0: watchdog) */
    uint32_t permits;                /* a counting semaphore's permits */
    uint32_t wait_id;                /* which acquire call this is (request
                                        ids, low 32 bits): fair queue
                                        entries, expiring permits' ids */
    signed int wait_err : 8;         /* last busy/no-quorum of the wait */
    unsigned splits : 4;             /* split votes in a row (Redlock), at
                                        most 8 */
    unsigned what : 2;               /* enum pending_what */
    unsigned queued : 1;             /* a waiting attempt went out: in fair
                                        mode it may have a queue entry, a
                                        writer may have left its mark */
    unsigned unsure : 1;             /* an attempt of this acquire failed
                                        with no answer that counts: it may
                                        still take a hold, undone late */
    unsigned wait_later : 1;         /* the wait's timer is armed only if
                                        the first attempt fails (lock.c) */
    unsigned handed : 1;             /* fair mode (fair.c): handed over
                                        while an attempt was in flight */
    unsigned quiet : 1;              /* the pending release publishes no
                                        message: a waiter of this client
                                        is next (wait.c) */
    unsigned scripted : 1;           /* an attempt of this acquire went as
                                        a script: so do the next (plain.c) */
};

/* The watchdog's (watchdog.c). */
struct lock_watch {
    struct heap_node node;           /* in eng->wd.heap */
    uint64_t valid_until;            /* ms: lease may run out after this */
};

/* A lock handle: its identity and memory (handle.c), then one sub-struct
 * per owner. */
struct hilock_lock {
    struct engine *eng;              /* NULL: detached, its client is gone */
    LIST_ENTRY(hilock_lock) link;    /* eng->locks */
    struct fanout_list fanouts;      /* fan-outs about this lock */
    uint64_t owner_tag;
    uint32_t refs;                   /* handle + requests + renew batches */
    uint32_t name_hash;              /* table_hash of the name, once */
    struct table_node owner_node;    /* eng->owners */
    const struct kind_ops *kind;     /* what it takes (kind.h) */
    unsigned freeing : 1;            /* hilock_lock_free() was called, or
                                        the client is going */
    unsigned user_freed : 1;         /* hilock_lock_free() was called */
    unsigned holding : 1;            /* its hold began (handle.c) */
    unsigned twinned : 1;            /* a twin held while it held */
    unsigned solo : 1;               /* no other handle of its name and
                                        owner was made since it was: it
                                        has no twin to find or be found
                                        by */
    unsigned waited : 1;             /* its hold came through a wait that
                                        went out (fair mode: it is given
                                        back by the fair script, which
                                        hands the lock to those in line) */
    uint16_t name_len;               /* at most HILOCK_NAME_MAX */
    uint16_t slot;                   /* of its keys, in a cluster */
    struct lock_hold hold;
    struct lock_pending pending;
    struct lock_watch wd;
    struct user_cb on_lost;          /* hilock_lock_on_lost, ... */
    struct hilock_multi *multi;      /* the MultiLock it is a member of */
    struct waiting *waiting;         /* wait.c's, allocated on its first
                                        wait */
    char name[];
};

/* The deadline of the pending acquire's wait (ms), 0 when it tries once. */
static inline uint64_t handle_wait_deadline(const struct hilock_lock *lock)
{
    return lock->waiting ? lock->waiting->deadline : 0;
}

/* Whether lock's client is closing. */
static inline int handle_closing(const struct hilock_lock *lock)
{
    return lock->eng->guard->closing;
}

/* The checks of the public entry points: 0, HILOCK_EINVAL (no handle, or
 * freed) or HILOCK_ECANCELED (its client is closing). */
static inline int handle_usable(const struct hilock_lock *lock)
{
    if (!lock || lock->freeing)
        return HILOCK_EINVAL;
    return handle_closing(lock) ? HILOCK_ECANCELED : 0;
}

/* The lease the pending acquire asks for. */
static inline uint32_t handle_acquire_lease(const struct hilock_lock *lock)
{
    return engine_lease(lock->eng, lock->pending.lease_ms);
}

/* The lease of the current hold (a release sets it when holds remain). */
static inline uint32_t handle_hold_lease(const struct hilock_lock *lock)
{
    return engine_lease(lock->eng, lock->hold.lease_ms);
}

/* A new handle of kind on eng, not yet referenced by anything but its
 * owner, or NULL without memory. */
struct hilock_lock *handle_new(struct engine *eng, const char *name,
                               size_t len, uint64_t owner_tag,
                               const struct kind_ops *kind);
void handle_ref(struct hilock_lock *lock);
/* Drop a reference; the last one frees the handle. */
void handle_unref(struct hilock_lock *lock);
/* Client teardown: free every handle of eng now, but those the user has
 * not freed yet. Those are detached (no engine, nothing pending, nothing
 * held): hilock_lock_free() then frees only their memory. */
void handle_free_all(struct engine *eng);
/* Free a detached handle's memory. */
void handle_free_detached(struct hilock_lock *lock);
/* Link operation op to the lock (op->ctx; takes a reference, dropped when
 * op's memory goes). */
void handle_attach(struct hilock_lock *lock, struct fanout *op);
/* A handle without an owner (an expiring permit): its own id, as the
 * scripts name it, into member. */
void handle_wire_member(const struct hilock_lock *lock,
                        unsigned char member[16]);

/* The lock as the wire format names it (always inline: every command
 * asks, a pair's lock and release too). */
static HILOCK_INLINE struct wire_lock
handle_wire(const struct hilock_lock *lock)
{
    const struct engine *eng = lock->eng;
    struct wire_lock w = {.prefix = eng->prefix,
                          .prefix_len = eng->prefix_len,
                          .name = lock->name,
                          .name_len = lock->name_len,
                          .client_id = eng->id,
                          .owner_tag = lock->owner_tag,
                          .suffix = lock->kind->field_suffix,
                          .kind = lock->kind->wire};
    if (!lock->kind->owned)
        handle_wire_member(lock, w.member);
    return w;
}

/* The owner's hold: every handle is in eng->owners from its making, where
 * its twins find it while it holds. Begin returns whether the owner held
 * already (through this handle or a twin). */
int handle_hold_begin(struct hilock_lock *lock);
void handle_hold_end(struct hilock_lock *lock);
/* Nonzero when some handle of lock's name and owner holds. */
int handle_owner_holds(const struct hilock_lock *lock);
/* Nonzero when a handle of lock's name and owner holds it as another
 * kind whose hold is the owner's bare field too (kind_ops.bare_field: a
 * reader's, in the read-write hash of that name). */
int handle_field_shared(const struct hilock_lock *lock);
/* Nonzero when lock holds and no other handle of its name and owner does
 * (known without a lookup: see handle_hold_begin). */
static inline int handle_holds_alone(const struct hilock_lock *lock)
{
    return lock->holding && !lock->twinned;
}
/* Most twins handled at once. */
#define HANDLE_TWINS_MAX 64
/* The holding handles of lock's name and owner (lock too, if it holds),
 * each with a reference the caller drops: what is done to them may fire
 * callbacks that free handles. Returns how many were put in out. */
size_t handle_twins(struct hilock_lock *lock,
                    struct hilock_lock *out[HANDLE_TWINS_MAX]);

#endif
