/* SPDX-License-Identifier: BSD-3-Clause */
/* topo_sentinel.c -- the Sentinel topology: one node, at the address the
 * sentinels name (sentinel.c asks them). The node starts when they first
 * answer, moves when they name another master, and asks them again
 * whenever it goes down (the master may have failed over). Its handshake
 * checks with ROLE that the server is a master indeed. Until a master is
 * known at all, waiting requests fail as soon as a round names none. */
#include <stdlib.h>
#include <string.h>

#include "sentinel.h"
#include "topo_backend.h"

struct sentinel_topo {
    struct topo_fixed fixed;  /* first: the fixed operations use it */
    struct sentinel *resolver;
    char master_host[256];    /* the node's address (its endpoint's host) */
    int master_port;          /* 0: none named yet */
};

/* The node may have lost its master: ask the sentinels. */
static void master_maybe_moved(struct topo *t)
{
    struct sentinel_topo *st = t->impl;
    if (st->resolver) /* NULL: init ran out of memory */
        sentinel_resolve(st->resolver);
}

/* The sentinels name the master at host:port: when that is a move, point
 * the node there and reconnect it (the same master needs nothing: its
 * connection reconnects by itself). */
static void master_named(void *arg, const char *host, int port)
{
    struct sentinel_topo *st = arg;
    struct node *n = &st->fixed.links[0].node;
    size_t len = strlen(host);
    if (len >= sizeof(st->master_host) ||
        (st->master_port == port && strcmp(st->master_host, host) == 0))
        return;
    memcpy(st->master_host, host, len + 1);
    st->master_port = port;
    node_move(n, port);
}

/* No sentinel named the master in a whole round. Until one is known at
 * all, waiting requests fail now rather than at their deadline; once one
 * is, its connection keeps trying it. */
static void master_unknown(void *arg, int err)
{
    struct sentinel_topo *st = arg;
    struct topo *t = st->fixed.links[0].topo;
    struct node *n = &st->fixed.links[0].node;
    if (!node_addressed(n))
        node_fail_queued(n, err);
    t->ev->on_down(t->ev->arg, 0, err, NULL);
}

static const struct sentinel_events sentinel_ev = {master_named,
                                                   master_unknown};

/* The node, with no address yet, and the resolver over o's sentinels.
 * Returns 0 or HILOCK_ENOMEM (topo_close frees what was made). */
static int sentinel_topo_init(struct topo *t, const struct hilock_options *o)
{
    struct sentinel_topo *st = calloc(1, sizeof(*st));
    if (!st)
        return HILOCK_ENOMEM;
    const struct conn_endpoint ep = {st->master_host, 0, NULL};
    t->impl = st;
    st->fixed.on_down = master_maybe_moved;
    topo_fixed_init(&st->fixed, t, &ep, 1);
    st->fixed.links[0].node.cmd.want_master = 1;
    return sentinel_new(&st->resolver, t->cfg, o, &sentinel_ev, st);
}

/* Ask the sentinels; the node starts when they name the master. */
static void sentinel_topo_start(struct topo *t)
{
    struct sentinel_topo *st = t->impl;
    sentinel_resolve(st->resolver); /* the node starts when it answers */
}

/* Close the node, then the sentinels' connections. */
static void sentinel_topo_close(struct topo *t, uint32_t drain_ms)
{
    struct sentinel_topo *st = t->impl;
    struct sentinel *resolver = st->resolver;
    topo_fixed_close(t, drain_ms); /* frees st */
    sentinel_free(resolver);
}

/* Routed as the fixed nodes are: to the one node. */
const struct topo_ops topo_sentinel_ops = {
    .init = sentinel_topo_init,
    .start = sentinel_topo_start,
    .close = sentinel_topo_close,
    .route = &topo_fixed_route,
};
