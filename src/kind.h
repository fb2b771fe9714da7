/* SPDX-License-Identifier: BSD-3-Clause */
/* kind.h -- what a handle takes, behind one table of operations.
 *
 * A kind is a lock (kind_mutex.c), a read or a write side of a read-write
 * lock (kind_rw.c), permits of a counting semaphore (kind_sem.c) or one
 * expiring permit (kind_permit.c). Each fills in a struct kind_ops: the
 * scripts its acquire, release, leave and undo run and how their arguments
 * are encoded, what a hold of it means, which channel its waiters hear and
 * which calls apply to it. Its scripts' arguments are encoded by its wire
 * file (wire_mutex.c, wire_rw.c, wire_sem.c), whose struct wire_kind the
 * table points to. The engine calls the table and never asks which kind a
 * handle is. */
#ifndef HILOCK_KIND_H
#define HILOCK_KIND_H

#include <stdint.h>

#include "callback.h"
#include "fanout.h"
#include "sub.h"
#include "wire.h"

struct hilock_lock;

/* The kinds as the constructors name them (kind_of). */
enum lock_kind {
    KIND_MUTEX = 0,
    KIND_READ,
    KIND_WRITE,
    KIND_SEM,
    KIND_PERMIT
};

/* The public type of a kind's handles (hilock.h): struct hilock_lock,
 * hilock_semaphore or hilock_permit. */

struct kind_ops {
    enum cb_shape api;       /* the public type its handles are */
    /* How the scripts every kind shares (renew, query, guarded) see it;
     * NULL for a kind that takes part in none of them. */
    const struct wire_kind *wire;
    enum sub_kind channel;   /* the release messages its waiters hear */
    unsigned shared : 1;     /* several owners may hold it at once */
    unsigned leased : 1;     /* a hold has a lease: its grant is checked,
                                the watchdog renews or loses it, renew and
                                on_lost apply. Else a hold is permits that
                                the handle counts: no lease, no token */
    unsigned owned : 1;      /* holds are the owner tag's, shared by twins;
                                else the handle's own (its own number) */
    unsigned nested : 1;     /* an owner's holds nest, counted in Redis */
    unsigned single : 1;     /* one hold per handle at most */
    unsigned queries : 1;    /* hilock_lock_query_* apply */
    unsigned guarded : 1;    /* guarded commands apply */
    unsigned fair : 1;       /* taken in fair mode when the client is */
    unsigned bare_field : 1; /* a hold is the owner's field, with no
                                suffix, in the name's hash: a lock's
                                plain release (HDEL) would end it */
    uint32_t busy_retry_ms;  /* a waiting attempt found busy tries again
                                this soon at the latest (0: when a release
                                is heard or the holder's lease ends) */
    const char *field_suffix; /* of the owner's field in the hash, or NULL */
    /* Encode an attempt of lock's pending acquire into op, as request id
     * rid; first: the acquire's first attempt. Sets pending.queued when
     * the attempt may leave something to take back (encode_leave). */
    void (*encode_acquire)(struct hilock_lock *lock, struct fanout *op,
                           int first, uint64_t rid);
    /* Encode a release of drop holds (permits) of lock into op, as rid. */
    void (*encode_release)(struct hilock_lock *lock, struct fanout *op,
                           uint32_t drop, uint64_t rid);
    /* A waiting acquire that queued gave up: encode taking back its queue
     * entry or mark into op. NULL: the kind never queues. */
    void (*encode_leave)(struct hilock_lock *lock, struct fanout *op);
    /* Encode into op the undo of the hold the attempt with request id
     * attempt took, as rid. NULL: no undo by request id, one hold of the
     * owner is released instead. */
    void (*encode_undo)(struct hilock_lock *lock, struct fanout *op,
                        uint64_t attempt, uint64_t rid);
    /* Redlock: encode taking lock again on a master that lost it. NULL:
     * the kind is not for several masters. */
    void (*encode_repair)(struct hilock_lock *lock, struct fanout *op);
};

/* What the kinds whose handles are struct hilock_lock (a lock, the read
 * and the write side) have in common in their tables: a hold is its
 * owner's, re-entrant, with a lease, and the queries and guarded commands
 * apply. */
#define KIND_LOCK_SIDE                                                     \
    .api = CB_LOCK, .leased = 1, .owned = 1, .nested = 1, .queries = 1,    \
    .guarded = 1

extern const struct kind_ops kind_mutex;
extern const struct kind_ops kind_read;
extern const struct kind_ops kind_write;
extern const struct kind_ops kind_sem;
extern const struct kind_ops kind_permit;

/* A script call a kind's encoder writes: the lock as the scripts see it,
 * where the command goes, the script's digest and the release message
 * command. */
struct kind_call {
    struct wire_lock w;
    struct resp_buf *cmd;
    const char *sha;
    const char *publish;
};

/* op marked as a call of script id (fanout_eval) about lock, and what to
 * encode it with. */
struct kind_call kind_call(struct hilock_lock *lock, struct fanout *op,
                           enum script_id id);

/* The table of kind id. */
const struct kind_ops *kind_of(enum lock_kind id);
/* A release of drop holds (permits) of lock's owner on every node (node
 * < 0) or on one, as a request id of its own (resending it is harmless),
 * attached to lock, not submitted. now_us: the clock as the caller read it
 * to submit it with (0: not read), op->sent_ms for the encoder until then.
 * NULL: no memory. */
struct fanout *kind_release_new(struct hilock_lock *lock, uint32_t drop,
                                int node, uint64_t now_us,
                                fanout_done_fn *done);

#endif
