/* SPDX-License-Identifier: BSD-3-Clause */
/* topo.h -- the topology: which node a lock operation goes to.
 *
 *  - one node (topo_fixed.c);
 *  - Redlock: all N masters at once, one member each (topo_fixed.c too;
 *    the engine decides by quorum over the members);
 *  - Sentinel: one node whose address the sentinels give
 *    (topo_sentinel.c, sentinel.h);
 *  - Cluster: the master owning the slot of the lock key (cluster.c).
 * Each is a backend behind one table of operations (topo_backend.h),
 * chosen once at topo_init. The engine sees members (N for Redlock, else
 * 1) and asks for a request to member i about a lock name's slot;
 * redirects, failovers and address changes stay below, and news comes up
 * through topo_events. */
#ifndef HILOCK_TOPO_H
#define HILOCK_TOPO_H

#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "hilock/hilock.h"
#include "node.h"

/* News for the client; arg is handed back. */
struct topo_events {
    void *arg;
    /* Member i can take commands; reconnected: it came back after a drop
     * or moved to another server (a cluster's slots moved), which may not
     * have the locks. node: the server whose news it is (see conn_addr),
     * NULL when no one server is (a cluster's map changed). */
    void (*on_up)(void *arg, size_t member, int reconnected,
                  const char *node);
    /* Member i cannot take commands (err says why); node as for on_up
     * (NULL: no sentinel names the master). */
    void (*on_down)(void *arg, size_t member, int err, const char *node);
    /* A subscriber connection (to node) works (up) or fails with err. */
    void (*on_pubsub)(void *arg, int up, int err, const char *node);
    /* A release was published on name's channel of kind, or that channel
     * was subscribed (a release may have come before). */
    void (*on_release)(void *arg, enum sub_kind kind, const char *name,
                       size_t len);
    /* Fair mode: a hand-off message msg (length mlen) about name on this
     * client's hand-off channel. */
    void (*on_handoff)(void *arg, const char *name, size_t len,
                       const char *msg, size_t mlen);
    /* Where names' channels live changed (a cluster's map): subscribe the
     * waited names again with topo_want. */
    void (*on_rewant)(void *arg);
    /* Fair mode: this client's hand-off channel tag, which the
     * subscriber connections listen on; NULL: not fair. */
    const char *listener;
};

/* Pass a message on name's channel of kind up: a fair hand-off (msg), or
 * a release or confirmed subscription (msg NULL). For the nodes'
 * events. */
static inline void topo_message(const struct topo_events *ev,
                                enum sub_kind kind, const char *name,
                                size_t len, const char *msg, size_t mlen)
{
    if (msg)
        ev->on_handoff(ev->arg, name, len, msg, mlen);
    else
        ev->on_release(ev->arg, kind, name, len);
}

struct topo_ops;

struct topo {
    const struct topo_ops *ops; /* the backend (topo_backend.h) */
    const struct conn_config *cfg;
    const struct topo_events *ev;
    const char *prefix;
    size_t prefix_len;
    size_t members;
    void *impl;                 /* the backend's state */
};

/* Set up the nodes for the options (o's strings outlive t). Returns 0 or
 * HILOCK_ENOMEM. */
int topo_init(struct topo *t, const struct conn_config *cfg,
              const struct hilock_options *o, const char *prefix,
              size_t prefix_len, const struct topo_events *ev);
/* Start connecting. */
void topo_start(struct topo *t);
/* Shutdown, as node_close for every node. */
void topo_close(struct topo *t, uint32_t drain_ms);
/* Complete every request of every node that still has a callback with
 * HILOCK_ECANCELED; those sent stay in flight (conn_cancel_all). */
void topo_cancel(struct topo *t);

/* Whether the keys of one request must hash to one slot (Cluster). */
int topo_slotted(const struct topo *t);
/* Whether lock name can be used: in a cluster every key of it must hash
 * to one slot (see keys_slot_safe). */
int topo_name_ok(const struct topo *t, const char *name, size_t len);
/* The slot of lock name's keys (0 outside a cluster). */
unsigned topo_slot(const struct topo *t, const char *name, size_t len);
/* A request to member i about keys of slot, or NULL (no memory, closed). */
struct req *topo_request(struct topo *t, size_t member, unsigned slot,
                         req_done_fn *done);
/* The node that member i's requests about slot go to now, or NULL while a
 * cluster's map is not known. */
struct node *topo_node(struct topo *t, size_t member, unsigned slot);
/* The release message command: "publish", or "spublish" in a cluster
 * whose servers have sharded pub/sub. */
const char *topo_publish(const struct topo *t);

/* Subscriptions to name's channel of kind on member i (see sub.h). */
int topo_want(struct topo *t, size_t member, const char *name, size_t len,
              enum sub_kind kind);
void topo_unwant(struct topo *t, size_t member, const char *name,
                 size_t len, enum sub_kind kind);
int topo_listening(struct topo *t, size_t member, const char *name,
                   size_t len, enum sub_kind kind);

#endif
