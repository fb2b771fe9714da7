/* SPDX-License-Identifier: BSD-3-Clause */
/* topo_fixed.c -- nodes at fixed addresses, one per member: the one-node
 * topology (the server of the options: host and port, or a unix socket)
 * and Redlock's (N independent masters, member i being master i), one
 * backend for both, whose requests go to member i's node whatever their
 * slot. The engine counts Redlock's votes (fanout.c, quorum.c); this only
 * routes. A node that is down reconnects by itself, and the others go on:
 * its requests wait for it within their deadlines, or, one vote among
 * several, count as a no at once (node_down, node_vote_ms). The Sentinel
 * backend builds on the same nodes (topo_sentinel.c). */
#include <stdlib.h>

#include "hot.h"
#include "topo_backend.h"

/* The fixed nodes' command connections' news goes up as member i's. */

static void link_up(void *arg, int reconnected, const char *addr)
{
    struct topo_link *l = arg;
    l->topo->ev->on_up(l->topo->ev->arg, l->member, reconnected, addr);
}

static void link_down(void *arg, int err, const char *addr)
{
    struct topo_link *l = arg;
    struct topo *t = l->topo;
    struct topo_fixed *f = t->impl;
    if (f->on_down)
        f->on_down(t);
    t->ev->on_down(t->ev->arg, l->member, err, addr);
}

void topo_fixed_init(struct topo_fixed *f, struct topo *t,
                     const struct conn_endpoint *eps, size_t n)
{
    t->members = n;
    for (size_t i = 0; i < n; i++) {
        struct topo_link *l = &f->links[i];
        l->topo = t;
        l->member = i;
        l->events = (struct node_events){l, link_up, link_down, NULL,
                                         topo_sub_events(t, NULL)};
        node_init(&l->node, t->cfg, &eps[i], t->prefix, t->prefix_len,
                  &l->events);
        f->n++;
    }
}

/* One node per fixed address of o: Redlock's masters in their order, or
 * the one node. Returns 0 or HILOCK_ENOMEM. */
static int fixed_init(struct topo *t, const struct hilock_options *o)
{
    const struct hilock_endpoint *eps = &o->node;
    size_t n = 1;
    if (o->topology == HILOCK_TOPOLOGY_REDLOCK) {
        eps = o->redlock.masters;
        n = o->redlock.count < HILOCK_MASTERS_MAX ? o->redlock.count
                                                  : HILOCK_MASTERS_MAX;
    }
    struct topo_fixed *f = calloc(1, sizeof(*f));
    struct conn_endpoint ce[HILOCK_MASTERS_MAX];
    if (!f)
        return HILOCK_ENOMEM;
    for (size_t i = 0; i < n; i++)
        ce[i] = (struct conn_endpoint){eps[i].host, eps[i].port,
                                       eps[i].unix_path};
    t->impl = f;
    topo_fixed_init(f, t, ce, n);
    return 0;
}

static void fixed_start(struct topo *t)
{
    struct topo_fixed *f = t->impl;
    for (size_t i = 0; i < f->n; i++)
        node_start(&f->links[i].node);
}

void topo_fixed_close(struct topo *t, uint32_t drain_ms)
{
    struct topo_fixed *f = t->impl;
    for (size_t i = 0; i < f->n; i++)
        node_close(&f->links[i].node, drain_ms);
    free(f);
    t->impl = NULL;
}

static void fixed_cancel(struct topo *t)
{
    struct topo_fixed *f = t->impl;
    for (size_t i = 0; i < f->n; i++)
        conn_cancel_all(&f->links[i].node.cmd);
}

HILOCK_HOT
static struct req *fixed_request(struct topo *t, size_t member,
                                 unsigned slot, req_done_fn *done)
{
    struct topo_fixed *f = t->impl;
    (void)slot;
    return node_request(&f->links[member].node, done);
}

static struct node *fixed_node(struct topo *t, size_t member, unsigned slot)
{
    struct topo_fixed *f = t->impl;
    (void)slot;
    return &f->links[member].node;
}

HILOCK_HOT
static const char *fixed_publish(const struct topo *t)
{
    (void)t;
    return "publish";
}

static void fixed_unwant(struct topo *t, size_t member, const char *name,
                         size_t len, enum sub_kind kind)
{
    struct topo_fixed *f = t->impl;
    node_unwant(&f->links[member].node, name, len, kind);
}

const struct topo_route topo_fixed_route = {
    .slotted = 0,
    .cancel = fixed_cancel,
    .request = fixed_request,
    .node = fixed_node,
    .publish = fixed_publish,
    .unwant = fixed_unwant,
};

const struct topo_ops topo_fixed_ops = {
    .init = fixed_init,
    .start = fixed_start,
    .close = topo_fixed_close,
    .route = &topo_fixed_route,
};
