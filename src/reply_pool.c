/* SPDX-License-Identifier: BSD-3-Clause */
/* reply_pool.c -- the replies a command connection sees most, built without
 * allocating.
 *
 * hiredis builds each reply with one or two allocations per element (an
 * object, and a copy of its bytes or its element vector) and frees them all
 * once the reply's callback has run. On a lock's path most replies are the
 * same few: OK for RESTORE and MULTI, QUEUED for each command of a
 * transaction, a script's nil, 0 or 1, and EXEC's short array of integers.
 * Here those are built once and shared, and short arrays of a whole reply
 * are taken from a small pool of fixed records, so that a lock and its
 * release allocate and free a dozen blocks fewer.
 *
 * A reply lives from its first byte's arrival until hiredis frees it right
 * after its callback; a connection builds one reply at a time, so the pool
 * needs one array per connection that is between those two points at once.
 * The pool is static, shared by every thread (its records are taken and
 * given back with an atomic exchange); when all are taken, hiredis builds
 * the array as usual. */
#include "reply_pool.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "hot.h"

/* Arrays in the pool, and the most elements of one. EXEC of a release has
 * two; a reply of more is built by hiredis. */
#define POOL_ARRAYS 16
#define POOL_ITEMS 4

enum { SHARED_OK, SHARED_QUEUED, SHARED_NIL, SHARED_ZERO, SHARED_ONE,
       SHARED_N };

/* Never written: hiredis and hilock only read a reply. */
static const redisReply shared[SHARED_N] = {
    [SHARED_OK] = {.type = REDIS_REPLY_STATUS, .str = (char *)"OK", .len = 2},
    [SHARED_QUEUED] = {.type = REDIS_REPLY_STATUS, .str = (char *)"QUEUED",
                       .len = 6},
    [SHARED_NIL] = {.type = REDIS_REPLY_NIL},
    [SHARED_ZERO] = {.type = REDIS_REPLY_INTEGER, .integer = 0},
    [SHARED_ONE] = {.type = REDIS_REPLY_INTEGER, .integer = 1},
};

/* An array of the pool: the reply, its element vector, room for its
 * integer elements, and whether a reader holds it. */
struct pool_array {
    redisReply top;
    redisReply *vec[POOL_ITEMS];
    redisReply items[POOL_ITEMS];
    atomic_int taken;
};

static struct pool_array arrays[POOL_ARRAYS];

/* Whether p lies in the n bytes at base. */
static int within(const void *p, const void *base, size_t n)
{
    return (uintptr_t)p - (uintptr_t)base < n;
}

static void *share(int i)
{
    return (void *)&shared[i];
}

void *reply_pool_status(const char *s, size_t len)
{
    if (len == 2 && memcmp(s, "OK", 2) == 0)
        return share(SHARED_OK);
    if (len == 6 && memcmp(s, "QUEUED", 6) == 0)
        return share(SHARED_QUEUED);
    return NULL;
}

void *reply_pool_integer(long long v)
{
    return v == 0 || v == 1 ? share(v ? SHARED_ONE : SHARED_ZERO) : NULL;
}

void *reply_pool_nil(void)
{
    return share(SHARED_NIL);
}

void *reply_pool_array(size_t n)
{
    if (n == 0 || n > POOL_ITEMS)
        return NULL;
    for (struct pool_array *a = arrays; a < arrays + POOL_ARRAYS; a++) {
        if (atomic_load_explicit(&a->taken, memory_order_relaxed) ||
            atomic_exchange_explicit(&a->taken, 1, memory_order_acquire))
            continue;
        memset(&a->top, 0, sizeof(a->top));
        memset(a->vec, 0, n * sizeof(a->vec[0]));
        a->top.type = REDIS_REPLY_ARRAY;
        a->top.elements = n;
        a->top.element = a->vec;
        return &a->top;
    }
    return NULL;
}

/* The pool array that reply r is, or NULL. */
static struct pool_array *array_of(const void *r)
{
    if (!within(r, arrays, sizeof(arrays)))
        return NULL;
    return (struct pool_array *)((uintptr_t)r - offsetof(struct pool_array,
                                                         top));
}

void *reply_pool_element(const struct redisReadTask *t, int type,
                         long long v, const char *s, size_t len)
{
    struct pool_array *a = t->parent ? array_of(t->parent->obj) : NULL;
    if (!a)
        return NULL;
    redisReply *e = NULL;
    if (type == REDIS_REPLY_INTEGER) {
        e = &a->items[t->idx];
        memset(e, 0, sizeof(*e));
        e->type = REDIS_REPLY_INTEGER;
        e->integer = v;
    } else if (type == REDIS_REPLY_NIL) {
        e = reply_pool_nil();
    } else if (type == REDIS_REPLY_STATUS) {
        e = reply_pool_status(s, len);
    }
    if (e)
        a->vec[t->idx] = e;
    return e;
}

HILOCK_HOT
void reply_pool_free(void *reply)
{
    if (within(reply, shared, sizeof(shared)))
        return;
    struct pool_array *a = array_of(reply);
    if (!a) {
        freeReplyObject(reply);
        return;
    }
    for (size_t i = 0; i < a->top.elements; i++) {
        redisReply *e = a->vec[i];
        if (e && !within(e, shared, sizeof(shared)) &&
            !within(e, a->items, sizeof(a->items)))
            freeReplyObject(e);
    }
    atomic_store_explicit(&a->taken, 0, memory_order_release);
}
