/* SPDX-License-Identifier: BSD-3-Clause */
/* handle.c -- see handle.h.
 *
 * Every request about a lock holds a reference to it, so a reply that
 * arrives after hilock_lock_free() still finds the name and owner it needs
 * (a late acquire success is released at once). */
#include "handle.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "hot.h"

static uint32_t owner_hash(const struct hilock_lock *lock)
{
    uint64_t h = lock->name_hash ^ (lock->owner_tag * 0x9e3779b97f4a7c15u);
    return (uint32_t)(h ^ (h >> 32));
}

/* Whether h is of lock's name and owner. */
static int same_owner(const struct hilock_lock *h,
                      const struct hilock_lock *lock)
{
    return h->owner_tag == lock->owner_tag && h->name_len == lock->name_len &&
           memcmp(h->name, lock->name, lock->name_len) == 0;
}

/* Enter new handle lock in eng->owners: it is solo when no handle of its
 * name and owner is there, and those that are stop being solo. Returns
 * 0, or -1 without memory. */
static int owners_enter(struct hilock_lock *lock)
{
    struct table *t = &lock->eng->owners;
    lock->solo = 1;
    for (struct table_node *n = table_first(t, owner_hash(lock)); n;
         n = table_next(n)) {
        struct hilock_lock *h = TABLE_ENTRY(n, struct hilock_lock, owner_node);
        if (same_owner(h, lock))
            lock->solo = h->solo = 0;
    }
    return table_insert(t, &lock->owner_node, owner_hash(lock));
}

struct hilock_lock *handle_new(struct engine *eng, const char *name,
                               size_t len, uint64_t owner_tag,
                               const struct kind_ops *kind)
{
    struct hilock_lock *lock =
        calloc(1, offsetof(struct hilock_lock, name) + len + 1);
    if (!lock)
        return NULL;
    lock->eng = eng;
    lock->owner_tag = owner_tag;
    lock->kind = kind;
    lock->refs = 1;
    TAILQ_INIT(&lock->fanouts);
    heap_node_init(&lock->wd.node);
    lock->name_len = (uint16_t)len;
    memcpy(lock->name, name, len);
    lock->name_hash = table_hash(name, len, 0);
    lock->slot = (uint16_t)topo_slot(eng->topo, name, len);
    if (owners_enter(lock) != 0) {
        free(lock);
        return NULL;
    }
    LIST_INSERT_HEAD(&eng->locks, lock, link);
    return lock;
}

void handle_ref(struct hilock_lock *lock)
{
    lock->refs++;
}

/* End lock's hold on its name, unlink it from the engine, and stop and
 * free its wait timer. */
static void handle_unlink(struct hilock_lock *lock)
{
    handle_hold_end(lock);
    table_remove(&lock->eng->owners, &lock->owner_node);
    LIST_REMOVE(lock, link);
    if (lock->waiting) {
        event_del(&lock->waiting->timer);
        free(lock->waiting);
        lock->waiting = NULL;
    }
}

/* Unlink from the engine and free; the wait timer goes with it. */
static void handle_destroy(struct hilock_lock *lock)
{
    handle_unlink(lock);
    free(lock);
}

HILOCK_HOT
void handle_unref(struct hilock_lock *lock)
{
    if (--lock->refs == 0)
        handle_destroy(lock);
}

/* Cut lock loose from its engine, which is going away; the user's
 * handle stays valid for hilock_lock_free() and the local state calls. */
static void handle_detach_engine(struct hilock_lock *lock)
{
    handle_unlink(lock);
    TAILQ_INIT(&lock->fanouts);
    lock->eng = NULL;
    lock->refs = 1;
    lock->hold.count = 0;
    lock->hold.token = 0;
    lock->freeing = 1; /* every call but the local ones: HILOCK_EINVAL */
    lock->pending.what = PENDING_NONE;
    lock->pending.fanout = NULL;
    lock->on_lost = cb_lock(NULL, NULL);
}

void handle_free_all(struct engine *eng)
{
    while (!LIST_EMPTY(&eng->locks)) {
        struct hilock_lock *lock = LIST_FIRST(&eng->locks);
        if (lock->user_freed || lock->multi)
            handle_destroy(lock); /* a MultiLock's member goes with it */
        else
            handle_detach_engine(lock);
    }
}

void handle_free_detached(struct hilock_lock *lock)
{
    free(lock);
}

/* fini of an operation attached to a lock: unlink it, drop its
 * reference. */
HILOCK_HOT
static void handle_detach(struct fanout *op)
{
    struct hilock_lock *lock = op->ctx;
    TAILQ_REMOVE(&lock->fanouts, op, ctx_link);
    op->ctx = NULL;
    handle_unref(lock);
}

HILOCK_HOT
void handle_attach(struct hilock_lock *lock, struct fanout *op)
{
    op->ctx = lock;
    op->fini = handle_detach;
    TAILQ_INSERT_TAIL(&lock->fanouts, op, ctx_link);
    handle_ref(lock);
}

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

void handle_wire_member(const struct hilock_lock *lock,
                        unsigned char member[16])
{
    memcpy(member, lock->eng->permit_prefix, 8);
    put_be32(member + 8, (uint32_t)lock->owner_tag);
    put_be32(member + 12, lock->pending.wait_id);
}

static struct hilock_lock *twin_from(struct table_node *n,
                                     const struct hilock_lock *lock);

/* A handle that begins to hold while twins hold, and those twins, are
 * marked: a handle that holds unmarked has no holding twin, and
 * handle_twins() needs no lookup for it (the watchdog's renewals ask for
 * every lock it renews). */
HILOCK_HOT
int handle_hold_begin(struct hilock_lock *lock)
{
    if (lock->holding)
        return 1;
    if (!lock->solo) {
        struct hilock_lock *t = twin_from(
            table_first(&lock->eng->owners, owner_hash(lock)), lock);
        for (; t; t = twin_from(table_next(&t->owner_node), lock))
            t->twinned = lock->twinned = 1;
    }
    lock->holding = 1;
    return lock->twinned;
}

HILOCK_HOT
void handle_hold_end(struct hilock_lock *lock)
{
    lock->holding = 0;
    lock->twinned = 0;
}

/* The next handle from table node n on that holds lock's name for lock's
 * owner as kind, or NULL. */
static struct hilock_lock *holder_from(struct table_node *n,
                                       const struct hilock_lock *lock,
                                       const struct kind_ops *kind)
{
    for (; n; n = table_next(n)) {
        struct hilock_lock *h = TABLE_ENTRY(n, struct hilock_lock, owner_node);
        if (h->holding && h->kind == kind && same_owner(h, lock))
            return h;
    }
    return NULL;
}

/* The next holding twin of lock from table node n on, or NULL. */
static struct hilock_lock *twin_from(struct table_node *n,
                                     const struct hilock_lock *lock)
{
    return holder_from(n, lock, lock->kind);
}

HILOCK_HOT
int handle_field_shared(const struct hilock_lock *lock)
{
    if (lock->solo)
        return 0; /* no other handle of its name and owner */
    struct table_node *n = table_first(&lock->eng->owners, owner_hash(lock));
    for (; n; n = table_next(n)) {
        struct hilock_lock *h = TABLE_ENTRY(n, struct hilock_lock, owner_node);
        if (h->holding && h->kind != lock->kind && h->kind->bare_field &&
            same_owner(h, lock))
            return 1;
    }
    return 0;
}

HILOCK_HOT
int handle_owner_holds(const struct hilock_lock *lock)
{
    if (lock->solo)
        return lock->holding;
    return twin_from(table_first(&lock->eng->owners, owner_hash(lock)),
                     lock) != NULL;
}

HILOCK_HOT
size_t handle_twins(struct hilock_lock *lock,
                    struct hilock_lock *out[HANDLE_TWINS_MAX])
{
    size_t n = 0;
    if (handle_holds_alone(lock)) {
        handle_ref(lock);
        out[0] = lock;
        return 1;
    }
    if (lock->solo)
        return 0; /* it does not hold, and no other handle exists */
    struct hilock_lock *h =
        twin_from(table_first(&lock->eng->owners, owner_hash(lock)), lock);
    for (; h && n < HANDLE_TWINS_MAX;
         h = twin_from(table_next(&h->owner_node), lock)) {
        handle_ref(h);
        out[n++] = h;
    }
    return n;
}
