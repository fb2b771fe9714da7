/* owners.c -- see owners.h. A chained hash table; the chain pointer and a
 * membership flag live in struct hilock_lock, so entering a handle never
 * allocates except when the bucket array doubles (and a failed doubling
 * only makes the chains longer). */
#include "owners.h"

#include <stdlib.h>
#include <string.h>

#include "client.h"

static size_t owner_hash(const struct hilock_lock *l)
{
    uint64_t h = 1469598103934665603u ^ l->owner_tag;
    for (size_t i = 0; i < l->name_len; i++)
        h = (h ^ (unsigned char)l->name[i]) * 1099511628211u;
    return (size_t)(h ^ (h >> 29));
}

static int same_owner(const struct hilock_lock *a, const struct hilock_lock *b)
{
    return a->owner_tag == b->owner_tag && a->name_len == b->name_len &&
           memcmp(a->name, b->name, a->name_len) == 0;
}

void owners_init(struct owner_table *t)
{
    memset(t, 0, sizeof(*t));
}

void owners_free(struct owner_table *t)
{
    free(t->buckets);
    owners_init(t);
}

/* Double the bucket array (from 64 at first); keep the old one on failure. */
static void owners_grow(struct owner_table *t)
{
    size_t n = t->nbuckets ? t->nbuckets * 2 : 64;
    struct hilock_lock **b = calloc(n, sizeof(*b));
    if (!b)
        return;
    for (size_t i = 0; i < t->nbuckets; i++) {
        while (t->buckets[i]) {
            struct hilock_lock *l = t->buckets[i];
            t->buckets[i] = l->onext;
            l->onext = b[owner_hash(l) & (n - 1)];
            b[owner_hash(l) & (n - 1)] = l;
        }
    }
    free(t->buckets);
    t->buckets = b;
    t->nbuckets = n;
}

void owners_add(struct owner_table *t, struct hilock_lock *lock)
{
    if (lock->in_owners)
        return;
    if (t->count >= t->nbuckets)
        owners_grow(t);
    if (!t->nbuckets)
        return; /* no memory for the first array: twins go unseen */
    struct hilock_lock **b = &t->buckets[owner_hash(lock) & (t->nbuckets - 1)];
    lock->onext = *b;
    *b = lock;
    lock->in_owners = 1;
    t->count++;
}

void owners_remove(struct owner_table *t, struct hilock_lock *lock)
{
    if (!lock->in_owners)
        return;
    struct hilock_lock **p = &t->buckets[owner_hash(lock) & (t->nbuckets - 1)];
    while (*p != lock)
        p = &(*p)->onext;
    *p = lock->onext;
    lock->onext = NULL;
    lock->in_owners = 0;
    t->count--;
}

/* The first handle from h on (h included) with the owner of like. */
static struct hilock_lock *match_from(struct hilock_lock *h,
                                      const struct hilock_lock *like)
{
    while (h && !same_owner(h, like))
        h = h->onext;
    return h;
}

struct hilock_lock *owners_first(const struct owner_table *t,
                                 const struct hilock_lock *lock)
{
    if (!t->nbuckets)
        return NULL;
    return match_from(t->buckets[owner_hash(lock) & (t->nbuckets - 1)], lock);
}

struct hilock_lock *owners_next(const struct hilock_lock *h)
{
    return match_from(h->onext, h);
}
