/* SPDX-License-Identifier: BSD-3-Clause */
/* table.c -- see table.h. */
#include "table.h"

#include <stdlib.h>

#include "hot.h"

#define TABLE_FIRST_BUCKETS 64

uint32_t table_hash(const void *p, size_t n, uint64_t seed)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603u ^ seed;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211u;
    return (uint32_t)(h ^ (h >> 32));
}

void table_init(struct table *t)
{
    t->buckets = NULL;
    t->nbuckets = 0;
    t->count = 0;
}

void table_free(struct table *t)
{
    free(t->buckets);
    table_init(t);
}

/* Double the bucket array; keep the old one when that fails. */
static void table_grow(struct table *t)
{
    size_t n = t->nbuckets ? t->nbuckets * 2 : TABLE_FIRST_BUCKETS;
    struct table_node **b = calloc(n, sizeof(*b));
    if (!b)
        return;
    for (size_t i = 0; i < t->nbuckets; i++) {
        while (t->buckets[i]) {
            struct table_node *e = t->buckets[i];
            t->buckets[i] = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    }
    free(t->buckets);
    t->buckets = b;
    t->nbuckets = n;
}

HILOCK_HOT
int table_insert(struct table *t, struct table_node *n, uint32_t hash)
{
    if (t->count >= t->nbuckets)
        table_grow(t);
    if (!t->nbuckets)
        return -1;
    struct table_node **b = &t->buckets[hash & (t->nbuckets - 1)];
    n->hash = hash;
    n->next = *b;
    *b = n;
    t->count++;
    return 0;
}

HILOCK_HOT
void table_remove(struct table *t, struct table_node *n)
{
    struct table_node **p = &t->buckets[n->hash & (t->nbuckets - 1)];
    while (*p != n)
        p = &(*p)->next;
    *p = n->next;
    n->next = NULL;
    t->count--;
}

void table_each(struct table *t, void (*fn)(struct table_node *n, void *arg),
                void *arg)
{
    for (size_t i = 0; i < t->nbuckets; i++) {
        for (struct table_node *n = t->buckets[i], *next; n; n = next) {
            next = n->next;
            fn(n, arg);
        }
    }
}
