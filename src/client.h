/* SPDX-License-Identifier: BSD-3-Clause */
/* client.h -- the client: its topology (the Redis nodes) and the lock
 * engine on one event_base, with the options they share. */
#ifndef HILOCK_CLIENT_H
#define HILOCK_CLIENT_H

#include <stdint.h>

#include "conn.h"
#include "engine.h"
#include "hilock/hilock.h"
#include "reentry.h"
#include "tls.h"
#include "topo.h"

struct hilock_client {
    struct hilock_options opts; /* strings point into strings[] */
    char *strings;
    const char *prefix;         /* never NULL */
    size_t prefix_len;
    char id[37];                /* client uuid */
    char listener[17];          /* fair mode: hand-off channel tag (hex) */
    unsigned char tag[8];       /* the same, raw: starts permit ids */
    uint64_t rng;               /* backoff jitter */
    int reported[4];            /* last state and status told, for the
                                   command and the subscriber connection */
    struct reentry guard;
    struct conn_config cfg;
    struct req_scratch scratch; /* conn_config.scratch */
    struct tls_set tls;         /* TLS contexts (NULL: plain) */
    struct hilock_endpoint eps[HILOCK_SEEDS_MAX]; /* copies of the lists */
    uint8_t up[HILOCK_MASTERS_MAX]; /* members up */
    struct topo_events events;
    struct topo topo;
    struct engine eng;
    size_t wire;                /* requests in flight (conn_config.wire) */
    /* hilock_client_close: its callback, and the wait for the replies. */
    hilock_close_cb *close_cb;
    void *close_arg;
    uint64_t close_deadline_ms;
    struct event close_timer;
};

#endif
