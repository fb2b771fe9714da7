/* SPDX-License-Identifier: BSD-3-Clause */
/* topo_backend.h -- what a topology backend implements (struct topo_ops)
 * and the fixed nodes topo.c offers them. Only topo.c and the backends
 * include it; the engine sees topo.h. */
#ifndef HILOCK_TOPO_BACKEND_H
#define HILOCK_TOPO_BACKEND_H

#include "topo.h"

/* A topology backend: one file each (topo_node.c, topo_redlock.c,
 * topo_sentinel.c, cluster.c). topo.c calls these and never asks which
 * backend it has. */
struct topo_ops {
    const char *name; /* "node", "redlock", "sentinel", "cluster" */
    /* Requests route by the slot of their keys: every key of one request
     * must hash to one slot. */
    int slotted;
    /* Set up t->impl for o (t's shared fields are set). Returns 0 or
     * HILOCK_ENOMEM; close then frees what was made. */
    int (*init)(struct topo *t, const struct hilock_options *o);
    /* Start connecting. */
    void (*start)(struct topo *t);
    /* Shutdown as node_close for every node; frees t->impl. */
    void (*close)(struct topo *t, uint32_t drain_ms);
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

extern const struct topo_ops topo_node_ops;
extern const struct topo_ops topo_redlock_ops;
extern const struct topo_ops topo_sentinel_ops;
extern const struct topo_ops topo_cluster_ops;

/* Nodes at fixed addresses, one per member (one node, Redlock's masters,
 * Sentinel's master): what those backends share. */
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
/* t->impl becomes a struct topo_fixed (malloc'd) with one node per
 * endpoint of eps[0..n-1] (at most HILOCK_MASTERS_MAX). 0 or
 * HILOCK_ENOMEM. */
int topo_fixed_new(struct topo *t, const struct hilock_endpoint *eps,
                   size_t n);
/* The fixed backends' operations, for a t->impl that is (or starts
 * with) a struct topo_fixed allocated with malloc: start every node, close
 * them and free t->impl, cancel, and route to member i's node whatever
 * the slot. */
void topo_fixed_start(struct topo *t);
void topo_fixed_close(struct topo *t, uint32_t drain_ms);
void topo_fixed_cancel(struct topo *t);
struct req *topo_fixed_request(struct topo *t, size_t member, unsigned slot,
                               req_done_fn *done);
struct node *topo_fixed_node(struct topo *t, size_t member, unsigned slot);
const char *topo_fixed_publish(const struct topo *t);
void topo_fixed_unwant(struct topo *t, size_t member, const char *name,
                       size_t len, enum sub_kind kind);

#endif
