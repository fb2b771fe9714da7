/* heap.h -- a binary min-heap of intrusive timed nodes.
 *
 * One loop timer serves a whole heap: the watchdog keeps every held lock in
 * one heap keyed by its next deadline, which costs 8 bytes of heap array per
 * lock instead of a libevent timer each. */
#ifndef HILOCK_HEAP_H
#define HILOCK_HEAP_H

#include <stddef.h>
#include <stdint.h>

struct heap_node {
    uint64_t key;   /* deadline, ms on the monotonic clock */
    size_t index;   /* position in the heap; HEAP_NONE when not in it */
};

#define HEAP_NONE ((size_t)-1)

struct heap {
    struct heap_node **items;
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
/* The node with the smallest key, or NULL. */
static inline struct heap_node *heap_top(const struct heap *h)
{
    return h->len ? h->items[0] : NULL;
}

#endif
