/* client.h -- the client: one node (a Redis endpoint) and the lock engine
 * on one event_base, with the options they share. */
#ifndef HILOCK_CLIENT_H
#define HILOCK_CLIENT_H

#include <stdint.h>

#include "conn.h"
#include "engine.h"
#include "hilock/hilock.h"
#include "node.h"
#include "reentry.h"

/* One node of the client, as its events know it. */
struct client_link {
    struct hilock_client *client;
    int up;                     /* its command connection is up */
    struct node_events events;
};

struct hilock_client {
    struct hilock_options opts; /* strings point into strings[] */
    char *strings;
    const char *prefix;         /* never NULL */
    size_t prefix_len;
    char id[37];                /* client uuid */
    char request_tag[17];       /* random, in release request ids */
    uint64_t rng;               /* backoff jitter */
    int reported[4];            /* last state and status told, for the
                                   command and the subscriber connection */
    struct reentry guard;
    struct conn_config cfg;
    size_t nnodes;              /* 1, or the Redlock masters */
    struct conn_endpoint eps[HILOCK_MASTERS_MAX];
    struct client_link links[HILOCK_MASTERS_MAX];
    struct node nodes[HILOCK_MASTERS_MAX];
    struct engine eng;
};

#endif
