/* SPDX-License-Identifier: BSD-3-Clause */
/* table.h -- an intrusive chained hash table.
 *
 * The lock engine keeps several tables keyed by lock name (wait queues,
 * subscriptions, the handles by name and owner): the entries embed a
 * struct table_node and carry their own keys; the table only chains nodes
 * by hash. Lookups walk the nodes of one hash and let the caller compare
 * keys. Nothing here allocates except the bucket array. */
#ifndef HILOCK_TABLE_H
#define HILOCK_TABLE_H

#include <stddef.h>
#include <stdint.h>

struct table_node {
    struct table_node *next;
    uint32_t hash;
};

struct table {
    struct table_node **buckets;
    size_t nbuckets; /* a power of two, or 0 before the first insert */
    size_t count;
};

/* FNV-1a of n bytes at p, started from seed (0 for a plain hash), folded
 * to 32 bits. */
uint32_t table_hash(const void *p, size_t n, uint64_t seed);

void table_init(struct table *t);
/* Free the bucket array; the nodes belong to their owners. */
void table_free(struct table *t);
/* Insert node n with hash. Returns 0, or -1 when no bucket array could be
 * allocated (n is then not in the table). A failed doubling only makes the
 * chains longer. */
int table_insert(struct table *t, struct table_node *n, uint32_t hash);
/* Remove n, which must be in t. */
void table_remove(struct table *t, struct table_node *n);
/* The first node from n on (n included) with hash, or NULL. */
static inline struct table_node *table_with_hash(struct table_node *n,
                                                 uint32_t hash)
{
    while (n && n->hash != hash)
        n = n->next;
    return n;
}

/* The first node with hash, or NULL; table_next() gives the next one with
 * the same hash. The caller compares the keys. Inline: a lock and release
 * pair looks up a few tables. */
static inline struct table_node *table_first(const struct table *t,
                                             uint32_t hash)
{
    if (!t->count) /* no bucket array either before the first insert */
        return NULL;
    return table_with_hash(t->buckets[hash & (t->nbuckets - 1)], hash);
}

static inline struct table_node *table_next(const struct table_node *n)
{
    return table_with_hash(n->next, n->hash);
}
/* Call fn(node, arg) on every node; fn may remove the node it is given. */
void table_each(struct table *t, void (*fn)(struct table_node *n, void *arg),
                void *arg);

/* The struct that embeds node as member. */
#define TABLE_ENTRY(node, type, member)                                        \
    ((type *)(void *)((char *)(node)-offsetof(type, member)))

#endif
