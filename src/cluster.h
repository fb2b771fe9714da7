/* SPDX-License-Identifier: BSD-3-Clause */
/* cluster.h -- a Redis Cluster: the slot map and one node per server.
 *
 * The map comes from CLUSTER SLOTS, asked of a node that is up: at start,
 * after a MOVED (which also fixes its one slot at once), when a node goes
 * down (its slots may fail over to a replica) and while a mapped master
 * stays down. Requests carry their slot: they go to its master, follow
 * MOVED and ASK (below the engine: node.c reports the redirect, this file
 * moves the request), and those still waiting in a queue move with the
 * map. Release messages use sharded pub/sub (SSUBSCRIBE on the master of
 * the channel's slot) when the servers have it (Redis 7), plain pub/sub
 * otherwise. */
#ifndef HILOCK_CLUSTER_H
#define HILOCK_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "hilock/hilock.h"
#include "node.h"
#include "topo.h"

struct cluster;

/* A cluster reached through seeds[0..n-1] (copied), reporting through ev
 * as member 0. Returns 0 or HILOCK_ENOMEM. */
int cluster_new(struct cluster **out, const struct conn_config *cfg,
                const struct hilock_endpoint *seeds, size_t n,
                const char *prefix, size_t prefix_len,
                const struct topo_events *ev);
void cluster_start(struct cluster *cl);
/* Shutdown (node_close on every node) and free. */
void cluster_free(struct cluster *cl, uint32_t drain_ms);
/* conn_cancel_all on every node's command connection. */
void cluster_cancel(struct cluster *cl);
/* A request about keys of slot, on its master as far as the map knows;
 * before the map is known it waits for it (and fails with
 * HILOCK_ENOTCLUSTER when no seed is a cluster node). NULL without
 * memory. */
struct req *cluster_request(struct cluster *cl, unsigned slot,
                            req_done_fn *done);
/* The master of slot, or NULL while the map is not known. */
struct node *cluster_node(struct cluster *cl, unsigned slot);
/* Whether releases are published with SPUBLISH. */
int cluster_sharded(const struct cluster *cl);
/* name has no waiters left: unsubscribe it wherever it is. */
void cluster_unwant(struct cluster *cl, const char *name, size_t len,
                    enum sub_kind kind);

#endif
