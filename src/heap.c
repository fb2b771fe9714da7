/* SPDX-License-Identifier: BSD-3-Clause */
/* heap.c -- a binary min-heap of buckets, each a list of the nodes with
 * one key, and a linear-probing table that finds a key's bucket. A node
 * knows its bucket only when it is first in it (its prev is the bucket's
 * address with the low bit set), which is all that removing it needs: the
 * bucket changes only when its first node leaves. */
#include "heap.h"

#include <stdlib.h>

#include "hot.h"

#define ORDER_MIN 16
#define SLOTS_MIN 16
/* Emptied buckets kept for reuse: a renewal round empties and fills a few
 * buckets per batch, and a malloc each would show. */
#define SPARE_MAX 64

void heap_init(struct heap *h)
{
    *h = (struct heap){0};
}

/* The bucket a first node's prev names. */
static struct heap_bucket *bucket_of(uintptr_t prev)
{
    return (struct heap_bucket *)(prev & ~(uintptr_t)1);
}

void heap_free(struct heap *h)
{
    for (size_t i = 0; i < h->nbuckets; i++) {
        struct heap_node *n = h->order[i]->first;
        while (n) {
            struct heap_node *next = n->next;
            heap_node_init(n);
            n = next;
        }
        free(h->order[i]);
    }
    while (h->spare) {
        struct heap_bucket *b = h->spare;
        h->spare = (struct heap_bucket *)b->first;
        free(b);
    }
    free(h->order);
    free(h->slots);
    heap_init(h);
}

/* ---- the order of the buckets ----------------------------------------- */

static void place(struct heap *h, size_t i, struct heap_bucket *b)
{
    h->order[i] = b;
    b->index = i;
}

/* Move the bucket at i towards the root while its key is smaller than its
 * parent's, or towards the leaves while a child's is smaller. */
static void sift(struct heap *h, size_t i)
{
    struct heap_bucket *b = h->order[i];
    while (i > 0 && h->order[(i - 1) / 2]->key > b->key) {
        place(h, i, h->order[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->nbuckets)
            break;
        if (c + 1 < h->nbuckets && h->order[c + 1]->key < h->order[c]->key)
            c++;
        if (b->key <= h->order[c]->key)
            break;
        place(h, i, h->order[c]);
        i = c;
    }
    place(h, i, b);
}

/* ---- finding a bucket by key ------------------------------------------ */

static size_t slot_hash(const struct heap *h, uint64_t key)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (h->nslots - 1);
}

/* The bucket with key, or NULL. */
static struct heap_bucket *slot_find(const struct heap *h, uint64_t key)
{
    if (!h->nslots)
        return NULL;
    for (size_t i = slot_hash(h, key);; i = (i + 1) & (h->nslots - 1)) {
        struct heap_bucket *b = h->slots[i];
        if (!b || b->key == key)
            return b;
    }
}

static void slot_put(struct heap *h, struct heap_bucket *b)
{
    size_t i = slot_hash(h, b->key);
    while (h->slots[i])
        i = (i + 1) & (h->nslots - 1);
    h->slots[i] = b;
}

/* Take b out of the table, moving back the buckets after it that probing
 * would no longer reach (no tombstones to sweep). */
static void slot_drop(struct heap *h, const struct heap_bucket *b)
{
    size_t mask = h->nslots - 1, i = slot_hash(h, b->key);
    while (h->slots[i] != b)
        i = (i + 1) & mask;
    for (size_t j = (i + 1) & mask; h->slots[j]; j = (j + 1) & mask) {
        size_t home = slot_hash(h, h->slots[j]->key);
        /* j's bucket may fill the hole at i unless its home lies in the
         * cyclic range (i, j]. */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            h->slots[i] = h->slots[j];
            i = j;
        }
    }
    h->slots[i] = NULL;
}

/* Give the table nslots slots and put every bucket back in.
 * Returns 0, or -1 with the table unchanged. */
static int slot_resize(struct heap *h, size_t nslots)
{
    struct heap_bucket **slots = calloc(nslots, sizeof(*slots));
    if (!slots)
        return -1;
    free(h->slots);
    h->slots = slots;
    h->nslots = nslots;
    for (size_t i = 0; i < h->nbuckets; i++)
        slot_put(h, h->order[i]);
    return 0;
}

/* ---- buckets ----------------------------------------------------------- */

/* Room for one more bucket in the order and in the table (at most half
 * full, so probes stay short). Returns 0, or -1 without memory. */
static int reserve(struct heap *h)
{
    if (h->nbuckets == h->order_cap) {
        size_t cap = h->order_cap ? h->order_cap * 2 : ORDER_MIN;
        struct heap_bucket **order = realloc(h->order, cap * sizeof(*order));
        if (!order)
            return -1;
        h->order = order;
        h->order_cap = cap;
    }
    if (2 * (h->nbuckets + 1) > h->nslots)
        return slot_resize(h, h->nslots ? h->nslots * 2 : SLOTS_MIN);
    return 0;
}

/* A new empty bucket for key, ordered and findable; NULL without memory. */
static struct heap_bucket *bucket_new(struct heap *h, uint64_t key)
{
    if (reserve(h) != 0)
        return NULL;
    struct heap_bucket *b = h->spare;
    if (b) {
        h->spare = (struct heap_bucket *)b->first;
        h->nspare--;
    } else if (!(b = malloc(sizeof(*b)))) {
        return NULL;
    }
    b->key = key;
    b->first = NULL;
    place(h, h->nbuckets++, b);
    sift(h, b->index);
    slot_put(h, b);
    return b;
}

/* Take the emptied bucket b out of the heap and keep or free it. */
static void bucket_drop(struct heap *h, struct heap_bucket *b)
{
    size_t i = b->index;
    slot_drop(h, b);
    if (h->last == b)
        h->last = NULL;
    if (i != --h->nbuckets) {
        place(h, i, h->order[h->nbuckets]);
        sift(h, i);
    }
    if (h->nspare < SPARE_MAX) {
        b->first = (struct heap_node *)h->spare;
        h->spare = b;
        h->nspare++;
    } else {
        free(b);
    }
    /* A client that once held a million locks under many keys does not
     * keep a table sized for them (failing to shrink is harmless). */
    if (h->nslots > SLOTS_MIN && 8 * h->nbuckets < h->nslots)
        slot_resize(h, h->nslots / 2);
}

/* The bucket for key, made if there is none; NULL without memory. */
static struct heap_bucket *bucket_get(struct heap *h, uint64_t key)
{
    struct heap_bucket *b = h->last;
    if (!b || b->key != key) {
        b = slot_find(h, key);
        if (!b && !(b = bucket_new(h, key)))
            return NULL;
        h->last = b;
    }
    return b;
}

/* ---- nodes ------------------------------------------------------------- */

/* Unlink n, which is in h; its bucket goes when n was its last node. */
static void unlink_node(struct heap *h, struct heap_node *n)
{
    struct heap_node *next = n->next;
    if (next)
        next->prev = n->prev;
    if (n->prev & 1) {
        struct heap_bucket *b = bucket_of(n->prev);
        b->first = next;
        if (!next)
            bucket_drop(h, b);
    } else {
        ((struct heap_node *)n->prev)->next = next;
    }
    heap_node_init(n);
    h->len--;
}

int heap_set(struct heap *h, struct heap_node *n, uint64_t key)
{
    if (heap_contains(n)) {
        if ((n->prev & 1) && bucket_of(n->prev)->key == key)
            return 0;
        unlink_node(h, n);
    }
    struct heap_bucket *b = bucket_get(h, key);
    if (!b)
        return -1;
    /* At the head: the node there is the one set just before, most
     * likely, and still in the cache. */
    n->next = b->first;
    n->prev = (uintptr_t)b | 1;
    if (b->first)
        b->first->prev = (uintptr_t)n;
    b->first = n;
    h->len++;
    return 0;
}

void heap_remove(struct heap *h, struct heap_node *n)
{
    if (heap_contains(n))
        unlink_node(h, n);
}

uint64_t heap_key(const struct heap *h, const struct heap_node *n)
{
    (void)h;
    while (!(n->prev & 1))
        n = (const struct heap_node *)n->prev;
    return bucket_of(n->prev)->key;
}

size_t heap_nodes(const struct heap *h, struct heap_node **out, size_t max)
{
    size_t k = 0;
    for (size_t i = 0; i < h->nbuckets; i++)
        for (struct heap_node *n = h->order[i]->first; n && k < max;
             n = n->next)
            out[k++] = n;
    return k;
}
