/* SPDX-License-Identifier: BSD-3-Clause */
/* fanout.h -- one lock operation sent to the nodes of the client (one node, or
 * the N masters of a Redlock) and decided by quorum (quorum.h).
 *
 * The engine builds an operation as it built a single request: encode the
 * command once, submit, get one callback with the combined result. Each
 * node gets its own request (a copy of the command) with its own deadline
 * and resends; a node's reply that comes after the operation was decided,
 * or after that node's request had failed, goes to the late callback, so
 * that a late success can be undone on that node. */
#ifndef HILOCK_FANOUT_H
#define HILOCK_FANOUT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include "conn.h"
#include "engine.h"
#include "quorum.h"
#include "reply.h"
#include "script.h"

struct fanout;

/* The decision: status and the combined result (NULL when completed early
 * by fanout_complete). Called exactly once. */
typedef void fanout_done_fn(struct fanout *op, int status,
                        const struct op_result *res);
/* Node i answered after the decision (or after its own request failed):
 * res is its reply, NULL when its connection dropped instead (or its
 * request ended without an answer: one may still come). On several
 * masters a decided acquire's requests are not sent again after a
 * drop. */
typedef void fanout_late_fn(struct fanout *op, size_t i, const struct op_result *res);

/* What an operation keeps about one node. */
struct fanout_node {
    struct req *req;       /* its request; NULL: recycled or not sent */
    struct op_result res;  /* its answer, once got */
    uint64_t rid;          /* an acquire: the request id the node answered
                              (what undoing its grant names) */
    unsigned char got;     /* answered (or counted as no answer) */
};

/* Hot fields first, then the nodes' entries (only the first n in use):
 * on one node an operation's every field in use sits in its first four
 * cache lines. */
struct fanout {
    struct engine *eng;
    fanout_done_fn *done;         /* NULL once decided */
    fanout_late_fn *late;
    void (*fini)(struct fanout *op); /* when the memory goes */
    /* The submitter's, as in struct req. */
    void *ctx;
    TAILQ_ENTRY(fanout) ctx_link;
    void *data;
    uint64_t sent_ms;         /* when submitted (monotonic ms) */
    int64_t token;            /* the submitter's: an acquire's decided
                                 fencing token, while it is written back */
    enum op_kind kind;
    uint32_t vote_ms;         /* its node requests' deadline */
    unsigned slot;            /* what its keys hash to (see topo.h) */
    int status;               /* the decision, once decided (the
                                 submitter may overrule it: see lock.c) */
    uint8_t n;                /* nodes of the client */
    int8_t target;            /* the one node it goes to; -1: all */
    uint8_t live;             /* node requests not recycled yet */
    uint8_t busy;             /* inside a dispatch: do not free */
    uint8_t script;           /* the script its command runs, id + 1 (0:
                                 none, or plain: see fanout_eval) */
    uint8_t early;            /* decided by fanout_complete: the ends of its
                                 node requests say nothing of the nodes */
    uint8_t hurried;          /* split: the rest's deadline brought in */
    uint8_t handed;           /* fair release: REPLY_HANDED_* */
    uint32_t lease_ms;        /* the submitter's: an acquire's lease */
    uint32_t drop;            /* a release: the holds (permits) it drops */
    uint32_t nlocks;          /* renew: locks in the batch */
    /* A plain command (fanout_plain): what it is to become when it goes again
     * (why, see conn.h): encoded into cmd, and the script it now runs, or
     * -1 while it stays plain (cmd then left as it is, or rewritten). */
    int (*again)(struct fanout *op, struct resp_buf *cmd, enum req_again why);
    /* A decided acquire's request to a node goes again after its
     * connection dropped: a finished operation's request must not take
     * anything now. Encode into cmd the undo of what request id rid may
     * have taken, and return the script it runs. NULL, or -1: it goes
     * again as it was. */
    int (*undo)(struct fanout *op, struct resp_buf *cmd, uint64_t rid);
    uint64_t rid;             /* the submitter's: a plain acquire's id */
    /* When set, reads a node's reply into res instead of the kind's
     * decoding (a guarded command's reply is the caller's). */
    void (*raw)(struct fanout *op, const struct redisReply *rep,
                struct op_result *res);
    unsigned char *renew;     /* renew: n rows of nlocks answers, then the
                                 combined row (see quorum_renew) */
    struct fanout_node node[QUORUM_NODES_MAX]; /* by node: the first n */
    /* A fair release handed the lock to a waiter of this client (read
     * only when handed says so, which decoding it sets). */
    struct reply_handoff handoff;
};

TAILQ_HEAD(fanout_list, fanout);

/* Free the recycled operations (engine teardown). */
void fanout_pool_free(struct engine *eng);
/* A new operation of kind on every member (node < 0) or on member node
 * only, about keys of slot (see topo.h), with nlocks answers per member
 * for a renewal. NULL without memory or when the client is closing. */
struct fanout *fanout_new(struct engine *eng, enum op_kind kind, int node,
                  unsigned slot, uint32_t nlocks, fanout_done_fn *done);
/* The buffer to encode the command into (once, for every node): the first
 * node request's. Inline, as fanout_plain: every lock and release asks. */
static inline struct resp_buf *fanout_cmd(struct fanout *op)
{
    size_t i = 0;
    while (i + 1 < op->n && !op->node[i].req)
        i++;
    return &op->node[i].req->cmd;
}
/* The buffer to encode a plain command into (fanout_plain, one node): the
 * client's scratch buffer, lent to the node request until it is sent
 * (req_scratch). Its owner encodes the command anew for any resend
 * (again). */
static inline struct resp_buf *fanout_plain_cmd(struct fanout *op)
{
    return req_scratch(op->node[0].req);
}
/* Node i's own buffer, for a command that differs per node (NULL when
 * the operation does not go to node i); buffers left empty get a copy of
 * the first one's command. */
struct resp_buf *fanout_cmd_at(struct fanout *op, size_t i);
/* Mark the command as running script id (NOSCRIPT reload per node). */
void fanout_eval(struct fanout *op, enum script_id id);
/* Mark the command as plain, not a script (again: see above); split
 * nonzero: the buffer holds a second command from there on, and a third
 * from split2 when that is nonzero, and they go as one transaction;
 * checked: its reply may still send it again as the script (see
 * conn.h). */
static inline void fanout_plain(struct fanout *op, size_t split,
                                size_t split2, int checked)
{
    for (size_t i = 0; i < op->n; i++)
        if (op->node[i].req)
            op->node[i].req->plain = (struct req_plain){
                .active = 1,
                .checked = (uint8_t)checked,
                .split = (uint32_t)split,
                .split2 = (uint32_t)split2};
}
/* Send it to its nodes, each with a deadline of timeout_ms (0: the
 * request timeout). */
void fanout_submit(struct fanout *op, uint32_t timeout_ms);
/* The same, sent as of now_us, a monotonic clock read (us) the caller
 * took since it last let other code run (0: read the clock). */
void fanout_submit_at(struct fanout *op, uint32_t timeout_ms,
                      uint64_t now_us);
/* Decide it now with status (HILOCK_ECANCELED, HILOCK_ETIMEDOUT): its done
 * fires with res NULL; requests already sent stay in flight and their
 * replies go to late. No-op when decided. */
void fanout_complete(struct fanout *op, int status);
/* Keep op's memory past its decision until fanout_drop (fanout_hold nests). */
void fanout_hold(struct fanout *op);
void fanout_drop(struct fanout *op);
/* Whether node i's answer made it into the decision; its result. */
int fanout_node_ok(const struct fanout *op, size_t i);
/* A renewal: node i's answer for lock k (RENEW_*). */
int fanout_renew_at(const struct fanout *op, size_t i, size_t k);
/* A decided renewal: the combined answer per lock (RENEW_*). */
const unsigned char *fanout_renew_result(const struct fanout *op);

#endif
