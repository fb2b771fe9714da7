/* SPDX-License-Identifier: BSD-3-Clause */
/* callback.h -- the user's callbacks and what they are told.
 *
 * Every handle is a struct hilock_lock inside; the public types of the
 * kinds (struct hilock_semaphore, struct hilock_permit) are the same
 * pointer under another, incomplete, type, never dereferenced. A callback
 * is called through a pointer of its own type, with the handle as that
 * type: the shape is the handle's public type (its kind says which), not
 * stored with each callback, which keeps a held handle small. The
 * result handed to it is filled here from the one integer an operation
 * reports, by what that integer means. */
#ifndef HILOCK_CALLBACK_H
#define HILOCK_CALLBACK_H

#include <stdint.h>

#include "hilock/hilock.h"

/* The public handle types of a handle, and back. */
static inline struct hilock_semaphore *public_sem(struct hilock_lock *l)
{
    return (struct hilock_semaphore *)(void *)l;
}
static inline struct hilock_permit *public_permit(struct hilock_lock *l)
{
    return (struct hilock_permit *)(void *)l;
}
static inline struct hilock_lock *handle_of_sem(struct hilock_semaphore *s)
{
    return (struct hilock_lock *)(void *)s;
}
static inline struct hilock_lock *handle_of_permit(struct hilock_permit *p)
{
    return (struct hilock_lock *)(void *)p;
}

/* The public type of a handle, which is the shape of its callbacks. */
enum cb_shape { CB_LOCK = 0, CB_SEMAPHORE, CB_PERMIT };

/* A user's callback (of its handle's shape) and its argument. */
struct user_cb {
    union {
        hilock_lock_cb *lock;
        hilock_semaphore_cb *sem;
        hilock_permit_cb *permit;
    } fn;
    void *arg;
};

static inline struct user_cb cb_lock(hilock_lock_cb *fn, void *arg)
{
    struct user_cb cb = {{.lock = fn}, arg};
    return cb;
}
static inline struct user_cb cb_sem(hilock_semaphore_cb *fn, void *arg)
{
    struct user_cb cb = {{.sem = fn}, arg};
    return cb;
}
static inline struct user_cb cb_permit(hilock_permit_cb *fn, void *arg)
{
    struct user_cb cb = {{.permit = fn}, arg};
    return cb;
}

/* Call cb (which is set) about handle lock, as its shape wants. */
/* Whether cb holds a callback. */
static inline int cb_set(const struct user_cb *cb)
{
    return cb->fn.lock != NULL;
}

/* Call cb, if set, as the shape of lock's public type. */
static inline void cb_call(const struct user_cb *cb, enum cb_shape shape,
                           struct hilock_lock *lock, int status,
                           const struct hilock_result *res)
{
    if (!cb_set(cb))
        return;
    if (shape == CB_SEMAPHORE)
        cb->fn.sem(public_sem(lock), status, res, cb->arg);
    else if (shape == CB_PERMIT)
        cb->fn.permit(public_permit(lock), status, res, cb->arg);
    else
        cb->fn.lock(lock, status, res, cb->arg);
}

/* What the integer a query or an operation reports means. */
enum cb_field {
    CB_FIELD_NONE = 0,
    CB_FIELD_TOKEN,       /* a fencing token */
    CB_FIELD_TTL,         /* a remaining lease, < 0: none (see below) */
    CB_FIELD_QUERY_TTL,   /* the query's: -1 no key, INT64_MAX no expiry */
    CB_FIELD_HOLDS,
    CB_FIELD_PERMITS,
    CB_FIELD_LEASE,
    CB_FIELD_HELD,
    CB_FIELD_PERMITS_SET
};

/* The result that carries value as field (nothing for status != 0,
 * but an HILOCK_EBUSY's ttl). */
static inline struct hilock_result cb_result(enum cb_field field,
                                             int64_t value)
{
    struct hilock_result r = {0, 0, 0, 0, 0, 0, 0};
    switch (field) {
    case CB_FIELD_TOKEN: r.token = value; break;
    case CB_FIELD_TTL: r.ttl_ms = value < 0 ? HILOCK_TTL_NONE : value; break;
    case CB_FIELD_QUERY_TTL:
        r.ttl_ms = value == -1          ? HILOCK_TTL_NOKEY
                   : value == INT64_MAX ? HILOCK_TTL_NONE
                                        : value;
        break;
    case CB_FIELD_HOLDS: r.holds = value; break;
    case CB_FIELD_PERMITS: r.permits = value; break;
    case CB_FIELD_LEASE: r.lease_ms = value; break;
    case CB_FIELD_HELD: r.held = value != 0; break;
    case CB_FIELD_PERMITS_SET: r.permits_set = value != 0; break;
    default: break;
    }
    return r;
}

#endif
