/* heap.h -- a 4-ary min-heap of intrusive timed nodes.
 *
 * One loop timer serves a whole heap: the watchdog keeps every held lock in
 * one heap keyed by its next deadline, which costs 16 bytes of heap array
 * and 4 in the node per lock instead of a libevent timer each. The keys
 * live in the array beside their nodes, and each node has four children:
 * a sift compares keys in one or two cache lines per level and touches a
 * node only to tell it its new place (at a million locks, every other
 * access is a cache miss). */
#ifndef HILOCK_HEAP_H
#define HILOCK_HEAP_H

#include <stddef.h>
#include <stdint.h>

struct heap_node {
    uint32_t index; /* position in the heap; HEAP_NONE when not in it */
};

#define HEAP_NONE UINT32_MAX

struct heap_item {
    uint64_t key;   /* deadline, ms on the monotonic clock */
    struct heap_node *node;
};

struct heap {
    struct heap_item *items;
    size_t len;
    size_t cap;
};

void heap_init(struct heap *h);
void heap_free(struct heap *h);
static inline void heap_node_init(struct heap_node *n)
{
    n->index = HEAP_NONE;
}
static inline int heap_contains(const struct heap_node *n)
{
    return n->index != HEAP_NONE;
}
/* Insert n with key, or move it there when already present.
 * Returns 0, or -1 when the array cannot grow (n is then not in the heap). */
int heap_set(struct heap *h, struct heap_node *n, uint64_t key);
/* Remove n if present. */
void heap_remove(struct heap *h, struct heap_node *n);
/* The node with the smallest key, or NULL; that key. */
static inline struct heap_node *heap_top(const struct heap *h)
{
    return h->len ? h->items[0].node : NULL;
}
static inline uint64_t heap_top_key(const struct heap *h)
{
    return h->items[0].key;
}
/* The key of n, which must be in h. */
static inline uint64_t heap_key(const struct heap *h,
                                const struct heap_node *n)
{
    return h->items[n->index].key;
}

#endif
