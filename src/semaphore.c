/* SPDX-License-Identifier: BSD-3-Clause */
/* semaphore.c -- the semaphore calls of the public header: counting
 * semaphores (struct hilock_semaphore) and expiring permits (struct
 * hilock_permit). Each is a lock handle of its own kind inside (see
 * kind_sem.c, kind_permit.c and src/lua/lib/sem_kind.lua); the public
 * types are its pointer under their own names (callback.h), so that a
 * lock's calls do not compile on them and theirs keep their callbacks'
 * shapes. */
#include <stdio.h>

#include "handle.h"
#include "lock.h"
#include "query.h"
#include "fanout.h"

/* The handle behind a public pointer, or NULL when it is NULL or of
 * another kind (a pointer cast by the caller). */
static struct hilock_lock *sem_of(struct hilock_semaphore *s)
{
    struct hilock_lock *h = handle_of_sem(s);
    return h && h->kind->api == CB_SEMAPHORE ? h : NULL;
}

static struct hilock_lock *permit_of(struct hilock_permit *p)
{
    struct hilock_lock *h = handle_of_permit(p);
    return h && h->kind->api == CB_PERMIT ? h : NULL;
}

/* The same for a const public permit. */
static const struct hilock_lock *permit_const(const struct hilock_permit *p)
{
    const struct hilock_lock *h = (const struct hilock_lock *)(const void *)p;
    return h && h->kind->api == CB_PERMIT ? h : NULL;
}

/* Send the semaphore script id (sem_init with permits, or sem_available)
 * about handle h as a query whose integer reply goes to cb as field.
 * Returns 0, HILOCK_EINVAL, HILOCK_ECANCELED or HILOCK_ENOMEM. */
static int sem_query(struct hilock_lock *h, enum script_id id,
                     uint32_t permits, struct user_cb cb,
                     enum cb_field field)
{
    int rc;
    if (!h || permits > HILOCK_PERMITS_MAX)
        return HILOCK_EINVAL;
    struct fanout *op = query_new(h, OP_KIND_QUERY_COUNT, cb, field, &rc);
    if (!op)
        return rc;
    struct engine *eng = h->eng;
    struct wire_lock w = handle_wire(h);
    const char *pub = topo_publish(eng->topo);
    fanout_eval(op, id);
    if (id == SCRIPT_SEM_INIT)
        wire_sem_init(fanout_cmd(op), eng->scripts.sha[id], &w, permits, pub);
    else
        wire_sem_available(fanout_cmd(op), eng->scripts.sha[id], &w, pub);
    fanout_submit(op, 0);
    return 0;
}

/* ---- counting semaphores ---- */

void hilock_semaphore_free(struct hilock_semaphore *sem)
{
    hilock_lock_free(handle_of_sem(sem));
}

int hilock_semaphore_acquire(struct hilock_semaphore *sem, uint32_t permits,
                             uint64_t wait_ms, hilock_semaphore_cb *cb,
                             void *arg)
{
    struct hilock_lock *h = sem_of(sem);
    if (!h || permits == 0 || permits > HILOCK_PERMITS_MAX)
        return HILOCK_EINVAL;
    return lock_acquire(h, wait_ms, 0, permits, cb_sem(cb, arg));
}

int hilock_semaphore_release(struct hilock_semaphore *sem, uint32_t permits,
                             hilock_semaphore_cb *cb, void *arg)
{
    struct hilock_lock *h = sem_of(sem);
    if (!h || permits == 0 || permits > HILOCK_PERMITS_MAX)
        return HILOCK_EINVAL;
    return lock_release(h, permits, cb_sem(cb, arg));
}

int hilock_semaphore_cancel(struct hilock_semaphore *sem)
{
    struct hilock_lock *h = sem_of(sem);
    return h ? hilock_lock_cancel(h) : HILOCK_EINVAL;
}

int hilock_semaphore_try_set_permits(struct hilock_semaphore *sem,
                                     uint32_t permits,
                                     hilock_semaphore_cb *cb, void *arg)
{
    return sem_query(sem_of(sem), SCRIPT_SEM_INIT, permits, cb_sem(cb, arg),
                     CB_FIELD_PERMITS_SET);
}

int hilock_semaphore_available(struct hilock_semaphore *sem,
                               hilock_semaphore_cb *cb, void *arg)
{
    return sem_query(sem_of(sem), SCRIPT_SEM_AVAILABLE, 0, cb_sem(cb, arg),
                     CB_FIELD_PERMITS);
}

uint32_t hilock_semaphore_permits_held(const struct hilock_semaphore *sem)
{
    const struct hilock_lock *h =
        (const struct hilock_lock *)(const void *)sem;
    return h && h->kind->api == CB_SEMAPHORE ? h->hold.count : 0;
}

/* ---- expiring permits ---- */

void hilock_permit_free(struct hilock_permit *permit)
{
    hilock_lock_free(handle_of_permit(permit));
}

int hilock_permit_acquire(struct hilock_permit *permit, uint64_t wait_ms,
                          uint64_t lease_ms, hilock_permit_cb *cb, void *arg)
{
    struct hilock_lock *h = permit_of(permit);
    if (!h || lease_ms > HILOCK_MS_MAX)
        return HILOCK_EINVAL;
    return lock_acquire(h, wait_ms, (uint32_t)lease_ms, 1,
                        cb_permit(cb, arg));
}

int hilock_permit_release(struct hilock_permit *permit, hilock_permit_cb *cb,
                          void *arg)
{
    struct hilock_lock *h = permit_of(permit);
    return h ? lock_release(h, 1, cb_permit(cb, arg)) : HILOCK_EINVAL;
}

int hilock_permit_cancel(struct hilock_permit *permit)
{
    struct hilock_lock *h = permit_of(permit);
    return h ? hilock_lock_cancel(h) : HILOCK_EINVAL;
}

int hilock_permit_renew(struct hilock_permit *permit, uint64_t lease_ms,
                        hilock_permit_cb *cb, void *arg)
{
    struct hilock_lock *h = permit_of(permit);
    return h ? lock_renew(h, lease_ms, cb_permit(cb, arg)) : HILOCK_EINVAL;
}

int hilock_permit_on_lost(struct hilock_permit *permit, hilock_permit_cb *cb,
                          void *arg)
{
    struct hilock_lock *h = permit_of(permit);
    return h ? lock_on_lost(h, cb_permit(cb, arg)) : HILOCK_EINVAL;
}

int hilock_permit_try_set_permits(struct hilock_permit *permit,
                                  uint32_t permits, hilock_permit_cb *cb,
                                  void *arg)
{
    return sem_query(permit_of(permit), SCRIPT_SEM_INIT, permits,
                     cb_permit(cb, arg), CB_FIELD_PERMITS_SET);
}

int hilock_permit_available(struct hilock_permit *permit,
                            hilock_permit_cb *cb, void *arg)
{
    return sem_query(permit_of(permit), SCRIPT_SEM_AVAILABLE, 0,
                     cb_permit(cb, arg), CB_FIELD_PERMITS);
}

int hilock_permit_held(const struct hilock_permit *permit)
{
    const struct hilock_lock *h = permit_const(permit);
    return h && h->hold.count > 0;
}

int hilock_permit_id(const struct hilock_permit *permit, char *buf,
                     size_t len)
{
    const struct hilock_lock *h = permit_const(permit);
    if (!h || h->hold.count == 0 || !buf || len < 33)
        return HILOCK_EINVAL;
    struct wire_lock w = handle_wire(h);
    for (size_t i = 0; i < sizeof(w.member); i++)
        snprintf(buf + 2 * i, 3, "%02x", w.member[i]);
    return 0;
}
