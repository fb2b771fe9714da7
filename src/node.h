/* SPDX-License-Identifier: BSD-3-Clause */
/* node.h -- one Redis endpoint: its command connection (pipelined
 * requests with deadlines), its subscriber connection, its script cache
 * with the NOSCRIPT reload, its reconnects and handshake.
 *
 * A client has one node, the N masters of a Redlock, or the masters of a
 * cluster; Sentinel moves its one node. The node knows the scripts but not
 * the locks: the layers above send requests through it and hear from it
 * only through node_events. */
#ifndef HILOCK_NODE_H
#define HILOCK_NODE_H

#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "reply.h"
#include "script.h"
#include "sub.h"

/* News for the layer above; arg is handed back. */
struct node_events {
    void *arg;
    /* The command connection to addr (see conn_addr) is up and
     * authenticated; reconnected is nonzero after a drop (the server may
     * have lost every key). */
    void (*on_up)(void *arg, int reconnected, const char *addr);
    /* The command connection to addr failed or dropped with err. */
    void (*on_down)(void *arg, int err, const char *addr);
    /* A cluster redirect (MOVED, or ASK when ask) answered request r of
     * this node: return nonzero when r was sent on (req_move), 0 to fail
     * it with the error. May be NULL. */
    int (*on_redirect)(void *arg, struct req *r, int ask,
                       const struct reply_redirect *to);
    struct sub_events pubsub;
};

struct node {
    struct conn cmd;
    struct sub_set subs;
    struct script_set scripts;
    const struct node_events *ev;
    uint8_t suspect; /* a vote timed out; no answer since (node_vote_ms) */
    uint8_t by_body; /* SCRIPT LOAD did not take since the connection came
                        up: a NOSCRIPT goes again as EVAL at once */
};

void node_init(struct node *n, const struct conn_config *cfg,
               const struct conn_endpoint *ep, const char *prefix,
               size_t prefix_len, const struct node_events *ev);
/* Start connecting the command connection. */
void node_start(struct node *n);
/* Shutdown: every request with a callback completes with
 * HILOCK_ECANCELED, what is in flight is drained (see conn_drain) for at
 * most drain_ms, then both connections close. */
void node_close(struct node *n, uint32_t drain_ms);

/* n's server moved to port of the host its endpoint names (a string the
 * caller changed in place): both connections reconnect there (the
 * subscriber one only if it was in use). */
void node_move(struct node *n, int port);
/* Whether n has an address at all (Sentinel: not before one is named). */
int node_addressed(const struct node *n);
/* Fail every request waiting in n's queue with err now (nowhere to send
 * them). */
void node_fail_queued(struct node *n, int err);

/* Whether n is known down: its command connection failed and is not
 * back (a Redlock vote there is a no at once). */
int node_down(const struct node *n);
/* Whether n is suspect: a vote there timed out, and n has not answered
 * since (a vote there counts as a no until it answers). */
int node_suspect(const struct node *n);
/* The deadline one Redlock vote on n gets instead of timeout_ms (0: the
 * request timeout): short while n is suspect, else timeout_ms. */
uint32_t node_vote_ms(const struct node *n, uint32_t timeout_ms);
/* A vote on n timed out (timed_out), or n answered one (a reply, on time
 * or late): suspect until it answers again. */
void node_voted(struct node *n, int timed_out);

/* A request on the command connection, or NULL (no memory, closed). */
struct req *node_request(struct node *n, req_done_fn *done);
/* Mark r as running script id: a NOSCRIPT reply loads it and resends r. */
void node_eval(struct req *r, enum script_id id);
/* r goes to another node (a cluster redirect or map change): what this
 * one learned of its script does not hold there. */
void node_req_moved(struct req *r);
/* The digest of script id for EVALSHA. */
const char *node_sha(const struct node *n, enum script_id id);
/* See conn_clock_refresh and conn_server_ms. */
void node_clock_refresh(struct node *n);
uint64_t node_server_ms(const struct node *n, uint64_t local_ms);

/* Subscriptions, see sub.h. */
int node_want(struct node *n, const char *name, size_t len,
              enum sub_kind kind);
void node_unwant(struct node *n, const char *name, size_t len,
                 enum sub_kind kind);
int node_listening(const struct node *n, const char *name, size_t len,
                   enum sub_kind kind);

#endif
