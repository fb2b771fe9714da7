/* SPDX-License-Identifier: BSD-3-Clause */
/* heap.h -- timed nodes grouped by deadline: a min-heap of buckets.
 *
 * One loop timer serves a whole heap: the watchdog keeps every held lock in
 * one heap keyed by its next deadline. Nodes with the same key share a
 * bucket (a list), and only the buckets are ordered, in a min-heap, found
 * by key through a small open-addressed table. Locks taken or renewed
 * together share their keys (the watchdog rounds renewal times up to a
 * grain, and one batch confirms its locks with one sent time), so a million
 * locks make a few thousand buckets at most. Setting or removing a node then
 * costs O(1) and touches only the node and its list neighbours, and a timer
 * run takes its due nodes off the top bucket one by one with no sift: at a
 * million locks every touch of another handle is a cache miss, which a
 * heap of nodes paid about log n times per renewal.
 *
 * A node costs 16 bytes in its owner and nothing elsewhere. A bucket costs
 * about 64 bytes per distinct key in use, freed as soon as its last node
 * leaves: only when nearly every key differs (each lock taken in a
 * millisecond of its own, with long explicit leases) is that more than the
 * 16 bytes a heap of nodes needed per node. */
#ifndef HILOCK_HEAP_H
#define HILOCK_HEAP_H

#include <stddef.h>
#include <stdint.h>

struct heap_node {
    struct heap_node *next; /* in its bucket */
    uintptr_t prev;         /* the node before it; for the first node, its
                               bucket's address | 1; 0: not in a heap */
};

struct heap_bucket {
    uint64_t key;            /* deadline, ms on the monotonic clock */
    struct heap_node *first; /* never NULL while in the heap; in the spare
                                list, the next spare bucket (cast) */
    size_t index;            /* position in heap.order */
};

struct heap {
    struct heap_bucket **order; /* min-heap by key */
    size_t nbuckets;
    size_t order_cap;
    struct heap_bucket **slots; /* the buckets by key (linear probing) */
    size_t nslots;              /* a power of two, or 0 */
    struct heap_bucket *last;   /* last bucket a node joined: a run of
                                   nodes set to one key skips the table */
    struct heap_bucket *spare;  /* emptied buckets kept for reuse */
    size_t nspare;
    size_t len;                 /* nodes */
};

void heap_init(struct heap *h);
/* Free the heap's memory; every node in it is left outside any heap. */
void heap_free(struct heap *h);
static inline void heap_node_init(struct heap_node *n)
{
    n->next = NULL;
    n->prev = 0;
}
static inline int heap_contains(const struct heap_node *n)
{
    return n->prev != 0;
}
/* Insert n with key, or move it there when already present.
 * Returns 0, or -1 when no bucket could be made for key (n is then not in
 * the heap, even if it was before). */
int heap_set(struct heap *h, struct heap_node *n, uint64_t key);
/* Remove n if present. */
void heap_remove(struct heap *h, struct heap_node *n);
/* A node with the smallest key, or NULL; that key (the heap not empty). */
static inline struct heap_node *heap_top(const struct heap *h)
{
    return h->nbuckets ? h->order[0]->first : NULL;
}
static inline uint64_t heap_top_key(const struct heap *h)
{
    return h->order[0]->key;
}
/* The key of n, which must be in h. Walks to the head of n's bucket:
 * O(nodes before n), for tests and rare checks. */
uint64_t heap_key(const struct heap *h, const struct heap_node *n);
/* Put up to max of the heap's nodes in out (any order); returns how many. */
size_t heap_nodes(const struct heap *h, struct heap_node **out, size_t max);

#endif
