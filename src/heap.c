/* heap.c -- binary min-heap with positions stored in the nodes, so a node
 * can be moved or removed in O(log n) without a search. */
#include "heap.h"

#include <stdlib.h>

void heap_init(struct heap *h)
{
    h->items = NULL;
    h->len = h->cap = 0;
}

void heap_free(struct heap *h)
{
    for (size_t i = 0; i < h->len; i++)
        h->items[i]->index = HEAP_NONE;
    free(h->items);
    heap_init(h);
}

static void place(struct heap *h, size_t i, struct heap_node *n)
{
    h->items[i] = n;
    n->index = i;
}

/* Move the node at i towards the root while it is smaller than its parent. */
static void sift_up(struct heap *h, size_t i)
{
    struct heap_node *n = h->items[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (h->items[parent]->key <= n->key)
            break;
        place(h, i, h->items[parent]);
        i = parent;
    }
    place(h, i, n);
}

/* Move the node at i towards the leaves while a child is smaller. */
static void sift_down(struct heap *h, size_t i)
{
    struct heap_node *n = h->items[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= h->len)
            break;
        if (child + 1 < h->len &&
            h->items[child + 1]->key < h->items[child]->key)
            child++;
        if (n->key <= h->items[child]->key)
            break;
        place(h, i, h->items[child]);
        i = child;
    }
    place(h, i, n);
}

int heap_set(struct heap *h, struct heap_node *n, uint64_t key)
{
    if (heap_contains(n)) {
        uint64_t old = n->key;
        n->key = key;
        if (key < old)
            sift_up(h, n->index);
        else
            sift_down(h, n->index);
        return 0;
    }
    if (h->len == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        struct heap_node **items = realloc(h->items, cap * sizeof(*items));
        if (!items)
            return -1;
        h->items = items;
        h->cap = cap;
    }
    n->key = key;
    place(h, h->len++, n);
    sift_up(h, n->index);
    return 0;
}

/* Give back half the array once three quarters of it are unused, so a
 * client that once held a million locks does not keep their slots. */
static void maybe_shrink(struct heap *h)
{
    if (h->cap <= 64 || h->len >= h->cap / 4)
        return;
    struct heap_node **items = realloc(h->items, h->cap / 2 * sizeof(*items));
    if (items) {
        h->items = items;
        h->cap /= 2;
    }
}

void heap_remove(struct heap *h, struct heap_node *n)
{
    if (!heap_contains(n))
        return;
    size_t i = n->index;
    struct heap_node *last = h->items[--h->len];
    n->index = HEAP_NONE;
    if (last != n) {
        place(h, i, last);
        if (i > 0 && h->items[(i - 1) / 2]->key > last->key)
            sift_up(h, i);
        else
            sift_down(h, i);
    }
    maybe_shrink(h);
}
