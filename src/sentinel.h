/* sentinel.h -- find the master that Redis Sentinel names.
 *
 * Asks the sentinels in turn (SENTINEL get-master-addr-by-name), skipping
 * one that is down, does not know the name or answers garbage, and listens
 * on one of them for +switch-master. The answer goes up through
 * sentinel_events; the topology points its node there (topo.c), and the
 * node's handshake checks with ROLE that it is a master indeed. */
#ifndef HILOCK_SENTINEL_H
#define HILOCK_SENTINEL_H

#include "conn.h"
#include "hilock/hilock.h"

struct sentinel;

struct sentinel_events {
    /* The master is at host:port (host valid during the call). */
    void (*on_master)(void *arg, const char *host, int port);
    /* No sentinel named the master in a whole round (err says why). */
    void (*on_fail)(void *arg, int err);
};

/* A resolver for o->master_name over o->sentinels (o outlives it), with
 * o->sentinel_password; nothing is sent before sentinel_resolve. Returns
 * 0 or HILOCK_ENOMEM. */
int sentinel_new(struct sentinel **out, const struct conn_config *cfg,
                 const struct hilock_options *o,
                 const struct sentinel_events *ev, void *arg);
/* Ask for the master now (no-op while a question is out). */
void sentinel_resolve(struct sentinel *s);
/* Close the connections and free. NULL is ignored. */
void sentinel_free(struct sentinel *s);

#endif
