/* heap.c -- 4-ary min-heap with positions stored in the nodes, so a node
 * can be moved or removed in O(log n) without a search. */
#include "heap.h"

#include <stdlib.h>

#define ARITY 4

void heap_init(struct heap *h)
{
    h->items = NULL;
    h->len = h->cap = 0;
}

void heap_free(struct heap *h)
{
    for (size_t i = 0; i < h->len; i++)
        h->items[i].node->index = HEAP_NONE;
    free(h->items);
    heap_init(h);
}

static void place(struct heap *h, size_t i, struct heap_item it)
{
    h->items[i] = it;
    it.node->index = (uint32_t)i;
}

/* Move the item at i towards the root while it is smaller than its
 * parent. */
static void sift_up(struct heap *h, size_t i)
{
    struct heap_item it = h->items[i];
    while (i > 0) {
        size_t parent = (i - 1) / ARITY;
        if (h->items[parent].key <= it.key)
            break;
        place(h, i, h->items[parent]);
        i = parent;
    }
    place(h, i, it);
}

/* Move the item at i towards the leaves while a child is smaller. */
static void sift_down(struct heap *h, size_t i)
{
    struct heap_item it = h->items[i];
    for (;;) {
        size_t first = ARITY * i + 1, least = first;
        if (first >= h->len)
            break;
        size_t end = first + ARITY < h->len ? first + ARITY : h->len;
        for (size_t c = first + 1; c < end; c++)
            if (h->items[c].key < h->items[least].key)
                least = c;
        if (it.key <= h->items[least].key)
            break;
        place(h, i, h->items[least]);
        i = least;
    }
    place(h, i, it);
}

int heap_set(struct heap *h, struct heap_node *n, uint64_t key)
{
    if (heap_contains(n)) {
        uint64_t old = h->items[n->index].key;
        h->items[n->index].key = key;
        if (key < old)
            sift_up(h, n->index);
        else
            sift_down(h, n->index);
        return 0;
    }
    if (h->len == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        if (cap >= HEAP_NONE)
            return -1;
        struct heap_item *items = realloc(h->items, cap * sizeof(*items));
        if (!items)
            return -1;
        h->items = items;
        h->cap = cap;
    }
    place(h, h->len++, (struct heap_item){key, n});
    sift_up(h, n->index);
    return 0;
}

/* Give back half the array once three quarters of it are unused, so a
 * client that once held a million locks does not keep their slots. */
static void maybe_shrink(struct heap *h)
{
    if (h->cap <= 64 || h->len >= h->cap / 4)
        return;
    struct heap_item *items = realloc(h->items, h->cap / 2 * sizeof(*items));
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
    struct heap_item last = h->items[--h->len];
    n->index = HEAP_NONE;
    if (last.node != n) {
        place(h, i, last);
        if (i > 0 && h->items[(i - 1) / ARITY].key > last.key)
            sift_up(h, i);
        else
            sift_down(h, i);
    }
    maybe_shrink(h);
}
