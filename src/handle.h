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
#include "op.h"
#include "table.h"
#include "wire.h"

enum lock_op { OP_NONE = 0, OP_ACQUIRE, OP_RELEASE };


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
};

struct hilock_lock {
    struct engine *eng;              /* NULL: detached, its client is gone */
    LIST_ENTRY(hilock_lock) link;    /* eng->locks */
    struct op_list ops;              /* operations about this lock */
    uint64_t owner_tag;
    uint32_t refs;                   /* handle + requests + renew batches */
    uint32_t holds;                  /* holds taken through this handle */
    int64_t token;
    uint32_t lease_ms;               /* lease of the current hold */
    uint32_t op_lease_ms;            /* requested lease (0: watchdog) */
    unsigned auto_renew : 1;         /* watchdog renews the lease */
    unsigned renewing : 1;           /* a watchdog renewal is in flight */
    unsigned freeing : 1;            /* hilock_lock_free() was called, or
                                        the client is going */
    unsigned user_freed : 1;         /* hilock_lock_free() was called */
    unsigned in_owners : 1;          /* in eng->owners */
    unsigned unreleased : 1;         /* a release of it got no answer */
    unsigned queued : 1;             /* a waiting attempt went out: in fair
                                        mode it may have a queue entry, a
                                        writer may have left its mark */
    unsigned kind : 3;               /* enum lock_kind */
    unsigned twinned : 1;            /* a twin held while it held */
    unsigned handed : 1;             /* fair: handed over while an attempt
                                        was in flight */
    unsigned unsure : 1;             /* an attempt of this acquire failed
                                        with no answer that counts: it may
                                        still take a hold, undone late */
    unsigned op : 2;                 /* enum lock_op pending */
    uint8_t splits;                  /* split votes in a row (Redlock) */
    int8_t wait_err;                 /* last busy/no-quorum of the wait */
    uint32_t wait_id;                /* fair: which acquire call this is
                                        (request ids, low 32 bits) */
    struct table_node owner_node;    /* eng->owners */
    struct heap_node wd_node;
    uint32_t name_hash;              /* table_hash of the name, once */
    uint64_t valid_until;            /* ms: lease may run out after this */
    struct user_cb lost_cb;
    /* The pending acquire or release. */
    struct user_cb op_cb;
    struct op *op_pending;           /* attempt or release in flight */
    struct hilock_multi *multi;      /* the MultiLock it is a member of */
    struct waiting *waiting;         /* allocated on its first wait */
    uint16_t name_len;               /* at most HILOCK_NAME_MAX */
    uint16_t slot;                   /* of its keys, in a cluster */
    char name[];
};

/* The deadline of the pending acquire's wait (ms), 0 when it tries once. */
static inline uint64_t handle_wait_deadline(const struct hilock_lock *lock)
{
    return lock->waiting ? lock->waiting->deadline : 0;
}

/* The channel lock waits on. */
static inline enum sub_kind handle_channel(const struct hilock_lock *lock)
{
    static const uint8_t channel[] = {
        [KIND_MUTEX] = SUB_RELEASE, [KIND_READ] = SUB_RWLOCK,
        [KIND_WRITE] = SUB_RWLOCK,  [KIND_SEM] = SUB_SEM,
        [KIND_PERMIT] = SUB_SEM,
    };
    return (enum sub_kind)channel[lock->kind];
}

/* Whether several may hold what lock takes at once (readers, permits). */
static inline int handle_shared(const struct hilock_lock *lock)
{
    return lock->kind == KIND_READ || lock->kind == KIND_SEM ||
           lock->kind == KIND_PERMIT;
}

/* A new handle of kind on eng, not yet referenced by anything but its
 * owner, or NULL without memory. */
struct hilock_lock *handle_new(struct engine *eng, const char *name,
                               size_t len, uint64_t owner_tag,
                               enum lock_kind kind);
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
void handle_attach(struct hilock_lock *lock, struct op *op);
/* The lock as the wire format names it. */
struct wire_lock handle_wire(const struct hilock_lock *lock);

/* The owner's hold: a handle that holds enters the twins table, and leaves
 * it when its hold ends. Begin returns whether the owner held already
 * (through this handle or a twin). */
int handle_hold_begin(struct hilock_lock *lock);
void handle_hold_end(struct hilock_lock *lock);
/* Nonzero when some handle of lock's name and owner holds. */
int handle_owner_holds(const struct hilock_lock *lock);
/* Nonzero when a handle of lock's name and owner holds it as kind (enum
 * lock_kind). */
int handle_owner_holds_as(const struct hilock_lock *lock, unsigned kind);
/* Most twins handled at once. */
#define HANDLE_TWINS_MAX 64
/* The holding handles of lock's name and owner (lock too, if it holds),
 * each with a reference the caller drops: what is done to them may fire
 * callbacks that free handles. Returns how many were put in out. */
size_t handle_twins(struct hilock_lock *lock,
                    struct hilock_lock *out[HANDLE_TWINS_MAX]);

#endif
