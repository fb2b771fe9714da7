/* SPDX-License-Identifier: BSD-3-Clause */
/* sentinel.h -- find the master that Redis Sentinel names.
 *
 * Asks all the sentinels at once (SENTINEL get-master-addr-by-name) and
 * takes the master that a majority names: of all of them, or, once every
 * question has been answered or has timed out, of those that named one. A
 * sentinel that is down, frozen, does not know the name or answers
 * garbage costs at most its timeout; one that lies is outvoted. Every
 * sentinel is watched for +switch-master, which starts a new round. The
 * answer goes up through sentinel_events; the topology points its node
 * there (topo_sentinel.c), and the node's handshake checks with ROLE that it is a
 * master indeed. */
#ifndef HILOCK_SENTINEL_H
#define HILOCK_SENTINEL_H

#include "conn.h"
#include "hilock/hilock.h"

struct sentinel;

struct sentinel_events {
    /* The master is at host:port (host valid during the call). */
    void (*on_master)(void *arg, const char *host, int port);
    /* No master was named by a majority in a round (err says why). */
    void (*on_fail)(void *arg, int err);
};

/* A resolver for o->sentinel.master_name over o->sentinel.nodes (o
 * outlives it), with o->sentinel.password; nothing is sent before
 * sentinel_resolve. Returns 0 or HILOCK_ENOMEM. */
int sentinel_new(struct sentinel **out, const struct conn_config *cfg,
                 const struct hilock_options *o,
                 const struct sentinel_events *ev, void *arg);
/* Ask for the master now (while a round is out: once more after it; after
 * a round without a master: not before its backoff). */
void sentinel_resolve(struct sentinel *s);
/* Close the connections and free. NULL is ignored. */
void sentinel_free(struct sentinel *s);

#endif
