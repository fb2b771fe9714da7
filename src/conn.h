/* SPDX-License-Identifier: BSD-3-Clause */
/* conn.h -- one Redis connection: requests with deadlines (conn.c), the
 * handshake (handshake.c), connects and reconnects (connect.c). The
 * transport of a node (node.h); it knows no scripts and no locks, and
 * reports up only through the hooks it is given. */
#ifndef HILOCK_CONN_H
#define HILOCK_CONN_H

#include <event2/event.h>
#include <event2/event_struct.h>
#include <stdint.h>
#include <sys/queue.h>

#include "hilock/hilock.h"
#include "reentry.h"
#include "resp.h"

struct redisAsyncContext;
struct redisReply;
struct req;
struct conn;

/* Completion of a request: status 0 with the reply, or a negative code with
 * reply NULL (ETIMEDOUT, ECONN, ECANCELED, ENOMEM, or the cause of a refused
 * handshake). Called exactly once. */
typedef void req_done_fn(struct req *req, int status,
                         struct redisReply *reply);
/* A reply that arrived after its request had completed (timed out or was
 * canceled); reply is NULL when the connection dropped instead. */
typedef void req_late_fn(struct req *req, struct redisReply *reply);
/* Called when the request's memory is recycled (drop references here). */
typedef void req_fini_fn(struct req *req);
/* Why a request goes again: Redis refused it unapplied (NOSCRIPT, a
 * cluster redirect); Redis refused a plain request (req.plain.active) with an
 * error, or answered a checked one (req.plain.checked) with what only
 * the script it stands for may settle; the same because the server does
 * not take that plain command at all (unknown, or refused by an ACL); its
 * connection dropped after it was sent, so it may have been applied; a
 * plain RESTORE found its key there (BUSYKEY). */
enum req_again {
    REQ_AGAIN_REFUSED = 0,
    REQ_AGAIN_SCRIPT,
    REQ_AGAIN_NO_PLAIN,
    REQ_AGAIN_DROPPED,
    REQ_AGAIN_BUSYKEY
};
/* Called before a request goes again (why): its owner may bring the
 * command up to date. */
typedef void req_refresh_fn(struct req *req, enum req_again why);

enum req_where { REQ_NOWHERE = 0, REQ_QUEUED, REQ_SENT, REQ_ORPHAN };
/* Where a request's deadline is kept: nowhere, in its connection's list of
 * deadlines in order (conn->due), or on the request's own timer. */
enum req_due { REQ_DUE_NONE = 0, REQ_DUE_LIST, REQ_DUE_TIMER };

/* Room for a command inside its request: a plain release (MULTI, HDEL of
 * three fields, PUBLISH, EXEC) of a name of a few dozen bytes takes about
 * 330, and a command that does not fit costs a malloc, a copy and a free. */
#define REQ_INLINE_CMD 512

TAILQ_HEAD(req_list, req);

/* A request's fields, by owner: the connection's own first, then one
 * sub-struct for each layer that keeps something in it. What every
 * request touches comes first, so that the header and the start of the
 * command share few cache lines; the timer, seldom used, comes last. */
struct req {
    /* The connection's (conn.c): where the request is and its deadline. */
    TAILQ_ENTRY(req) link;    /* in conn->queued, conn->sent or the pool */
    struct conn *conn;
    TAILQ_ENTRY(req) due_link; /* in conn->due */
    uint64_t due_us;          /* deadline in conn->due (monotonic us) */
    uint64_t sent_us;         /* when submitted (monotonic us); 0: never */
    uint8_t due;              /* where the deadline is: enum req_due */
    uint8_t where;            /* enum req_where */
    uint8_t enomem;           /* encoding failed (RESP_NOMEM: complete
                                 with ENOMEM; RESP_BROKEN: EPROTO) */
    uint8_t asking;           /* send ASKING first (req_move) */
    uint8_t resent;           /* sent again after its connection dropped:
                                 it may have been applied already */
    uint8_t lent;             /* its command is in the client's scratch
                                 buffer until sent (req_scratch) */
    /* The connection's contract with the submitter, which sets them. */
    req_done_fn *done;        /* NULL once completed */
    req_late_fn *late;
    req_fini_fn *fini;
    req_refresh_fn *refresh;
    uint8_t retry;            /* resend when the connection drops */
    uint8_t quiet;            /* an error reply is an answer its submitter
                                 expects (a probe): not logged */
    /* The cluster topology's (cluster.c): the slot the request is about,
     * and how often it was redirected. */
    struct req_cluster {
        uint8_t routed;
        uint8_t hops;
        uint16_t slot;
    } cluster;
    /* The node's (node.c): the script an EVALSHA runs (its id + 1; 0:
     * none), and whether a NOSCRIPT was handled once already on this node
     * (1: its script was loaded; 2: it goes as EVAL with the body). */
    struct req_node {
        uint8_t script;
        uint8_t reloaded;
    } node;
    /* The plain path's (fanout.c, plain.c): a plain command standing in for a
     * script, whose error reply other than a redirect makes it go again
     * through refresh (read by node.c), and so may a checked one's
     * success (node.c asks reply.c); split, when nonzero, says cmd holds
     * two commands, the second from this offset on, or three when split2
     * is nonzero too (the third from there on), sent as one transaction
     * (MULTI, them, EXEC) whose reply is EXEC's (read by conn.c). */
    struct req_plain {
        uint8_t active;
        uint8_t checked;
        uint32_t split;
        uint32_t split2;
    } plain;
    /* The submitter's, never read below it: what the request is about,
     * and one more pointer. */
    struct req_submitter {
        void *ctx;
        void *data;
    } submitter;
    /* Not cleared by req_new: each user sets it up first. */
    struct resp_buf cmd;
    char cmd_inline[REQ_INLINE_CMD];
    struct event timer;       /* deadline, when not in conn->due (due):
                                 assigned as it is armed (due_set) */
};

/* The client's scratch buffer (req_scratch): one command at a time, on
 * its way from the encoder to hiredis. */
struct req_scratch {
    struct resp_buf buf;
    struct req *holder;                /* the request it is lent to */
    char inline_data[REQ_INLINE_CMD];
};

/* What every connection of a client shares; borrowed, outlives them. */
struct conn_config {
    struct event_base *base;
    const struct hilock_options *opts; /* auth, db, timeouts, backoff, log */
    const struct timeval *req_timeout; /* libevent common timeout */
    uint64_t *rng;                     /* backoff jitter */
    struct reentry *reentry;           /* brackets every loop callback */
    struct hilock_stats *stats;        /* the client's counters */
    size_t *wire;                      /* requests handed to hiredis and
                                          not answered yet, over every
                                          connection of the client */
    const struct tls *tls;             /* NULL: plain TCP (tls.h) */
    const struct tls *sentinel_tls;    /* the sentinels' (sentinel.c) */
    struct req_scratch *scratch;       /* see req_scratch */
};

/* Where to connect; strings borrowed. */
struct conn_endpoint {
    const char *host;
    int port;
    const char *unix_path; /* when set, used instead of host/port */
};

/* News for the connection's owner. Every hook may be NULL. */
struct conn_hooks {
    /* Connected and the handshake passed; queued requests go out after. */
    void (*on_ready)(struct conn *conn);
    /* The connection dropped; pending requests are already requeued. */
    void (*on_drop)(struct conn *conn);
    /* A connect attempt, the handshake or the connection failed with err
     * (HILOCK_ECONN, HILOCK_EAUTH, HILOCK_ENOPERM, ...). */
    void (*on_fail)(struct conn *conn, int err);
    /* An error reply to a pending request, or any reply to a checked
     * plain one (req.plain.checked): return nonzero when handled (the
     * request was resent with conn_resend), 0 to complete it. */
    int (*on_error)(struct conn *conn, struct req *r,
                    struct redisReply *reply);
};

/* IDLE: no context (backing off); CONNECTING: TCP connect under way;
 * HANDSHAKE: connected, AUTH/SELECT sent, requests held until they pass;
 * READY: requests flow; CLOSED: the client is going away. */
enum conn_state {
    CONN_IDLE = 0,
    CONN_CONNECTING,
    CONN_HANDSHAKE,
    CONN_READY,
    CONN_CLOSED
};

struct conn {
    const struct conn_config *cfg;
    struct conn_endpoint ep;
    const struct conn_hooks *hooks;
    void *owner;                      /* the hooks' context */
    const char *what;                 /* "command" or "subscriber", for logs */
    struct redisAsyncContext *ac;
    void *tls_session;                /* ac's TLS session, or NULL */
    uint8_t tls_wait;                 /* connected, TLS handshake under way */
    enum conn_state state;
    unsigned attempt;                 /* connects in a row that did not
                                         prove useful (backoff exponent) */
    unsigned connects;                /* successful handshakes so far */
    unsigned gate;                    /* handshake replies still awaited */
    int err;                          /* why it is down (0: it is not) */
    uint8_t fail_pending;             /* a failure not told to on_fail yet */
    uint8_t want_clock;               /* measure the server's clock */
    uint8_t want_master;              /* ROLE must say master (Sentinel) */
    uint8_t sharded;                  /* subscriber: SSUBSCRIBE (cluster) */
    uint8_t clock_known;              /* clock_offset_us is measured */
    int64_t clock_offset_us;          /* server's unix time minus our
                                         monotonic time, in us, never larger
                                         than the truth (see conn.c) */
    uint64_t clock_best_ms;           /* when that offset was measured */
    uint64_t clock_asked_ms;          /* when TIME was last sent */
    struct event retry_timer;         /* backoff, and connect deadline */
    struct event later_timer;         /* sends what conn_resend_later put
                                         back in the queue */
    struct event flush_ev;            /* writes what was handed to hiredis
                                         (see conn.c) */
    uint8_t flush_pending;            /* flush_ev is active */
    uint64_t arrival_us;              /* when the replies hiredis hands out
                                         now were read (monotonic us); 0:
                                         unknown (see conn.c) */
    struct req_list due;              /* deadlines of the request timeout,
                                         soonest first (see conn.c) */
    struct event due_timer;           /* armed for the first of due */
    uint8_t due_armed;                /* due_timer is pending */
    struct req_list queued;           /* waiting for a connection */
    struct req_list sent;             /* handed to hiredis */
    struct req_list pool;             /* recycled requests */
    size_t pool_len;
};

void conn_init(struct conn *conn, const struct conn_config *cfg,
               const struct conn_endpoint *ep, const struct conn_hooks *hooks,
               void *owner, const char *what);
/* Start connecting now (no-op unless idle). */
void conn_start(struct conn *conn);
/* Complete every request with HILOCK_ECANCELED, close the connection, stop
 * timers and free the request pool. Requests still inside hiredis are
 * orphaned and freed when hiredis lets go of them. */
void conn_close(struct conn *conn);
/* Room for conn_addr's text. */
#define CONN_ADDR_MAX 280
/* The server conn talks to, for logs and state events: "host:port"
 * ("[host]:port" for an IPv6 address), or the unix socket path; into buf
 * (CONN_ADDR_MAX bytes), which is returned. */
const char *conn_addr(const struct conn *conn, char *buf, size_t len);
/* Write msg, formatted, to the client's log callback, as "<what>
 * connection to <address>: <msg>". */
void conn_log(const struct conn *conn, enum hilock_log_level level,
              const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* A fresh request with an empty command buffer, or NULL when out of memory
 * or the connection is closed. */
struct req *req_new(struct conn *conn, req_done_fn *done);
/* r's command: where its encoder put it (see req_scratch). */
static inline struct resp_buf *req_cmd(struct req *r)
{
    return r->lent ? &r->conn->cfg->scratch->buf : &r->cmd;
}
/* r, which holds the scratch buffer, lets it go: hiredis has its command,
 * or nobody needs it (its owner encodes into r->cmd after all). */
static inline void req_scratch_drop(struct req *r)
{
    r->conn->cfg->scratch->holder = NULL;
    r->lent = 0;
}
/* The same, keeping a copy of its command in r->cmd. */
void req_scratch_keep(struct req *r);
/* The buffer to encode r's command into instead of r->cmd when r's owner
 * encodes it anew for every resend (refresh): the client's scratch
 * buffer, shared by all requests and so warm in the cache. r holds it
 * until it is submitted and handed to hiredis; r then keeps no copy, or
 * takes one (into r->cmd) when it has to wait: queued, or another
 * request asked for the buffer first. */
static inline struct resp_buf *req_scratch(struct req *r)
{
    struct req_scratch *s = r->conn->cfg->scratch;
    if (s->holder && s->holder != r)
        req_scratch_keep(s->holder);
    s->holder = r;
    r->lent = 1;
    resp_reset(&s->buf);
    return &s->buf;
}
/* Arm the request's deadline (timeout_ms from now; 0: the request timeout
 * of the options) and send it, or queue it until the connection is ready.
 * A command whose encoding failed completes with HILOCK_ENOMEM on the
 * loop. */
void req_submit(struct req *req, uint32_t timeout_ms);
/* The same, with now_us the monotonic time now (clock_now_us), read once
 * by a caller that submits several. */
void req_submit_at(struct req *req, uint32_t timeout_ms, uint64_t now_us);
/* Complete a request early with status (e.g. HILOCK_ECANCELED): its done
 * fires now; a reply that still arrives goes to late. No-op if completed. */
void req_complete(struct req *req, int status);
/* Bring a pending request's deadline forward to ms from now (the caller
 * knows it was due later). No-op if completed. */
void req_hurry(struct req *req, uint32_t ms);
/* Send r again (from on_error), behind what was sent before. */
void conn_resend(struct conn *conn, struct req *r);
/* Send r again after ms (from on_error: the cluster is busy or down for a
 * moment), still within its deadline. */
void conn_resend_later(struct conn *conn, struct req *r, uint32_t ms);
/* Send r on dst instead (from on_error of r's connection: a cluster
 * redirect), preceded by ASKING when asking; its deadline stays. */
void req_move(struct req *r, struct conn *dst, int asking);
/* Move each request waiting in conn's queue for which dest(arg, r) names
 * another connection to that one (a cluster's map changed). */
typedef struct conn *conn_dest_fn(void *arg, struct req *r);
void conn_reroute(struct conn *conn, conn_dest_fn *dest, void *arg);
/* Drop the current connection, if any, and connect again at once (to
 * conn->ep, which the owner may have changed): requests in flight are
 * requeued or failed as after a drop. */
void conn_restart(struct conn *conn);

/* The connection has shown it is useful (a reply, a confirmed
 * subscription): the next reconnect starts from the shortest delay again. */
void conn_proven(struct conn *conn);
/* Fail every request waiting in the queue with err now (there is nowhere
 * to send them: no sentinel names a master). */
void conn_fail_queued(struct conn *conn, int err);
/* Complete every request that still has a callback with HILOCK_ECANCELED;
 * requests already sent stay in flight (their replies go to late). */
void conn_cancel_all(struct conn *conn);
/* Shutdown: when the connection is up and not inside one of its own
 * callbacks, send what is buffered and wait, blocking, up to timeout_ms
 * for the replies of every request in flight, so that releases already
 * issued are applied before the socket closes; replies are handled as
 * usual. Inside a callback only the buffered bytes are written. */
void conn_drain(struct conn *conn, uint32_t timeout_ms);
/* Measure the server's clock again, at most once a second (a renewal
 * with a deadline is about to go out). */
void conn_clock_refresh(struct conn *conn);
/* A server unix time in ms that the server's clock passes no later than
 * ours passes local_ms (see conn.c), or 0 when the clock is not measured. */
uint64_t conn_server_ms(const struct conn *conn, uint64_t local_ms);

/* Send a command whose reply nobody needs (SCRIPT LOAD); error replies are
 * logged. Does nothing unless the connection is ready. */
void conn_send_raw(struct conn *conn, struct resp_buf *cmd);
/* Send a command whose replies go to fn(ac, reply, NULL): (UN)SUBSCRIBE on
 * the subscriber connection. Returns 0, or -1 when not ready. */
typedef void conn_reply_fn(struct redisAsyncContext *ac, void *reply,
                           void *privdata);
int conn_send_with(struct conn *conn, struct resp_buf *cmd,
                   conn_reply_fn *fn);
/* As conn_send_with, but what goes on the wire is wire, a command whose
 * replies hiredis is to take for those of cmd: SSUBSCRIBE sent as hiredis's
 * SUBSCRIBE (the reply guard renames the replies; see reply_guard.c). */
int conn_send_as(struct conn *conn, struct resp_buf *cmd,
                 const struct resp_buf *wire, conn_reply_fn *fn);
/* The connection of a hiredis context (from a reply callback), or NULL
 * when the context is going away. */
struct conn *conn_of(const struct redisAsyncContext *ac);

#endif
