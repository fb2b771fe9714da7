/* SPDX-License-Identifier: BSD-3-Clause */
/* semaphore.c -- the semaphore calls of the public header: counting
 * semaphores and expiring permits, which are lock handles of their own
 * kinds (see kind_sem.c, kind_permit.c and src/lua/lib/sem_kind.lua). */
#include <stdio.h>

#include "handle.h"
#include "lock.h"
#include "query.h"
#include "fanout.h"

static int is_sem(const struct hilock_lock *sem)
{
    return sem && (sem->kind == &kind_sem || sem->kind == &kind_permit);
}

int hilock_semaphore_acquire(struct hilock_lock *sem, uint32_t permits,
                             uint64_t wait_ms, hilock_lock_cb *cb, void *arg)
{
    if (!sem || sem->kind != &kind_sem || permits == 0 ||
        permits > HILOCK_PERMITS_MAX)
        return HILOCK_EINVAL;
    return lock_acquire(sem, wait_ms, 0, permits, cb, arg);
}

int hilock_semaphore_release(struct hilock_lock *sem, uint32_t permits,
                             hilock_lock_cb *cb, void *arg)
{
    if (!sem || sem->kind != &kind_sem || permits == 0 ||
        permits > HILOCK_PERMITS_MAX)
        return HILOCK_EINVAL;
    return lock_release(sem, permits, cb, arg);
}

int hilock_permit_id(const struct hilock_lock *permit, char *buf, size_t len)
{
    if (!permit || permit->kind != &kind_permit || permit->hold.count == 0 ||
        !buf || len < 33)
        return HILOCK_EINVAL;
    struct wire_lock w = handle_wire(permit);
    for (size_t i = 0; i < sizeof(w.member); i++)
        snprintf(buf + 2 * i, 3, "%02x", w.member[i]);
    return 0;
}

/* Send the semaphore script id (sem_init with permits, or sem_available)
 * as a query whose integer reply goes to cb. */
static int sem_query(struct hilock_lock *sem, enum script_id id,
                     uint32_t permits, hilock_lock_cb *cb, void *arg)
{
    int rc;
    if (!is_sem(sem) || permits > HILOCK_PERMITS_MAX)
        return HILOCK_EINVAL;
    struct fanout *op = query_new(sem, OP_KIND_QUERY_COUNT, cb, arg, &rc);
    if (!op)
        return rc;
    struct engine *eng = sem->eng;
    struct wire_lock w = handle_wire(sem);
    const char *pub = topo_publish(eng->topo);
    fanout_eval(op, id);
    if (id == SCRIPT_SEM_INIT)
        wire_sem_init(fanout_cmd(op), eng->scripts.sha[id], &w, permits, pub);
    else
        wire_sem_available(fanout_cmd(op), eng->scripts.sha[id], &w, pub);
    fanout_submit(op, 0);
    return 0;
}

int hilock_semaphore_init(struct hilock_lock *sem, uint32_t permits,
                          hilock_lock_cb *cb, void *arg)
{
    return sem_query(sem, SCRIPT_SEM_INIT, permits, cb, arg);
}

int hilock_semaphore_available(struct hilock_lock *sem, hilock_lock_cb *cb,
                               void *arg)
{
    return sem_query(sem, SCRIPT_SEM_AVAILABLE, 0, cb, arg);
}
