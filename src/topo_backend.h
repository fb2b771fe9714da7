/* SPDX-License-Identifier: BSD-3-Clause */
/* topo_backend.h -- what a topology backend implements (struct topo_ops)
 * and what the backends share: the nodes' pub/sub news (topo.c) and the
 * nodes at fixed addresses (topo_fixed.c). Only topo.c and the backends
 * include it; the engine sees topo.h. */
#ifndef HILOCK_TOPO_BACKEND_H
#define HILOCK_TOPO_BACKEND_H

#include "topo.h"

/* How requests and subscriptions reach a backend's nodes once they are
 * set up. The fixed nodes have one way (topo_fixed_route), which the
 * Sentinel backend shares; a cluster has its own. */
struct topo_route {
    /* Requests route by the slot of their keys: every key of one request
     * must hash to one slot. */
    int slotted;
    /* conn_cancel_all on every node's command connection. */
    void (*cancel)(struct topo *t);
    /* A request to member i about keys of slot, or NULL. */
    struct req *(*request)(struct topo *t, size_t member, unsigned slot,
                           req_done_fn *done);
    /* Where member i's requests about slot go now, or NULL. */
    struct node *(*node)(struct topo *t, size_t member, unsigned slot);
    /* The release message command. */
    const char *(*publish)(const struct topo *t);
    /* name has no waiters left on member i: unsubscribe it. */
    void (*unwant)(struct topo *t, size_t member, const char *name,
                   size_t len, enum sub_kind kind);
};

/* A topology backend: one file each (topo_fixed.c for one node and for
 * Redlock's masters, topo_sentinel.c, cluster.c). topo.c calls these and
 * never asks which backend it has. */
struct topo_ops {
    /* Set up t->impl for o (t's shared fields are set). Returns 0 or
     * HILOCK_ENOMEM; close then frees what was made. */
    int (*init)(struct topo *t, const struct hilock_options *o);
    /* Start connecting. */
    void (*start)(struct topo *t);
    /* Shutdown as node_close for every node; frees t->impl. */
    void (*close)(struct topo *t, uint32_t drain_ms);
    const struct topo_route *route;
};

extern const struct topo_ops topo_fixed_ops;
extern const struct topo_ops topo_sentinel_ops;
extern const struct topo_ops topo_cluster_ops;

/* The pub/sub news of a node of t, sent up as t's (topo_events);
 * on_evicted (may be NULL) is called with t too. */
struct sub_events topo_sub_events(struct topo *t,
                                  void (*on_evicted)(void *arg,
                                                     const char *name,
                                                     size_t len));

/* Nodes at fixed addresses, one per member (one node, Redlock's masters,
 * Sentinel's master): topo_fixed.c. */
struct topo_link {
    struct topo *topo;
    size_t member;
    struct node_events events;
    struct node node;
};

struct topo_fixed {
    size_t n;                         /* links[] set up */
    /* A node went down (may be NULL): Sentinel asks where the master is
     * now. Called before the engine hears of it. */
    void (*on_down)(struct topo *t);
    struct topo_link links[HILOCK_MASTERS_MAX];
};

/* Set up f with one node per endpoint (n, at most HILOCK_MASTERS_MAX),
 * reporting as members 0..n-1 of t. */
void topo_fixed_init(struct topo_fixed *f, struct topo *t,
                     const struct conn_endpoint *eps, size_t n);
/* Close every node of t->impl, a struct topo_fixed (or one that starts
 * with it) allocated with malloc, and free it. */
void topo_fixed_close(struct topo *t, uint32_t drain_ms);
/* Route to member i's node whatever the slot, for such a t->impl. */
extern const struct topo_route topo_fixed_route;

#endif
