/* conn.h -- one Redis connection with reconnects and per-request deadlines. */
#ifndef HILOCK_CONN_H
#define HILOCK_CONN_H

#include <event2/event.h>
#include <event2/event_struct.h>
#include <stdint.h>

#include "hilock/hilock.h"
#include "resp.h"

struct hilock_client;
struct redisAsyncContext;
struct redisReply;
struct req;
struct conn;

/* Completion of a request: status 0 with the reply, or a negative code with
 * reply NULL (ETIMEDOUT, ECONN, ECANCELED, ENOMEM). Called exactly once. */
typedef void req_done_fn(struct req *req, int status,
                         struct redisReply *reply);
/* A reply that arrived after its request had completed (timed out or was
 * canceled); reply is NULL when the connection dropped instead. */
typedef void req_late_fn(struct req *req, struct redisReply *reply);
/* Called when the request's memory is recycled (drop references here). */
typedef void req_fini_fn(struct req *req);
/* Called before a request is sent again after Redis answered NOSCRIPT: it
 * was not applied, so its owner may bring the command up to date. */
typedef void req_refresh_fn(struct req *req);

enum req_where { REQ_NOWHERE = 0, REQ_QUEUED, REQ_SENT, REQ_ORPHAN };

#define REQ_INLINE_CMD 256

struct req {
    struct req *prev, *next;  /* in conn->queued or conn->sent */
    struct req *lprev, *lnext; /* in the lock's list of requests */
    struct conn *conn;
    struct event timer;       /* deadline */
    req_done_fn *done;        /* NULL once completed */
    req_late_fn *late;
    req_fini_fn *fini;
    req_refresh_fn *refresh;
    uint8_t where;            /* enum req_where */
    uint8_t retry;            /* resend when the connection drops */
    uint8_t reloaded;         /* NOSCRIPT already handled once */
    uint8_t enomem;           /* encoding failed: complete with ENOMEM */
    int8_t script;            /* enum script_id of an EVALSHA, or -1 */
    /* Owner's fields; conn.c does not look at them. */
    struct hilock_lock *lock;
    hilock_lock_cb *cb;
    void *arg;
    int kind;
    int64_t aux;
    void *batch;
    struct resp_buf cmd;
    char cmd_inline[REQ_INLINE_CMD];
};

struct req_list {
    struct req *head, *tail;
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
    struct hilock_client *client;
    const char *what;                 /* "command" or "subscriber", for logs */
    struct redisAsyncContext *ac;
    enum conn_state state;
    unsigned attempt;                 /* connects in a row that did not
                                         prove useful (backoff exponent) */
    unsigned connects;                /* successful handshakes so far */
    unsigned gate;                    /* handshake replies still awaited */
    int err;                          /* why it is down (0: it is not) */
    uint8_t fail_pending;             /* a failure not told to on_fail yet */
    uint8_t want_clock;               /* measure the server's clock */
    uint8_t clock_known;              /* clock_offset_us is measured */
    int64_t clock_offset_us;          /* server's unix time minus our
                                         monotonic time, in us, never larger
                                         than the truth (see conn.c) */
    struct event retry_timer;         /* backoff, and connect deadline */
    struct req_list queued;           /* waiting for a connection */
    struct req_list sent;             /* handed to hiredis */
    /* After connecting (and AUTH/SELECT): send what this connection needs. */
    void (*on_ready)(struct conn *conn);
    /* After the connection dropped; pending requests are already handled. */
    void (*on_drop)(struct conn *conn);
    /* A connect attempt, the handshake or the connection failed with err
     * (HILOCK_ECONN, HILOCK_EAUTH, HILOCK_ENOPERM, ...); the server's text,
     * if any, is logged. */
    void (*on_fail)(struct conn *conn, int err);
};

void conn_init(struct conn *conn, struct hilock_client *client,
               const char *what);
/* Start connecting now (no-op unless idle). */
void conn_start(struct conn *conn);
/* Complete every request with HILOCK_ECANCELED, close the connection and
 * stop timers. Requests still inside hiredis are orphaned and freed when
 * hiredis lets go of them. */
void conn_close(struct conn *conn);

/* A fresh request on conn's client pool, with an empty command buffer.
 * Returns NULL when out of memory. */
struct req *req_new(struct conn *conn, req_done_fn *done);
/* Arm the request's deadline (timeout_ms from now; 0: the client's request
 * timeout) and send it, or queue it until the connection is ready. */
void req_submit(struct req *req, uint32_t timeout_ms);
/* Complete a request early with status (e.g. HILOCK_ECANCELED): its done
 * fires now; a reply that still arrives goes to late. No-op if completed. */
void req_complete(struct req *req, int status);

/* The connection has shown it is useful (a reply, a confirmed
 * subscription): the next reconnect starts from the shortest delay again. */
void conn_proven(struct conn *conn);
/* Complete every request that still has a callback with HILOCK_ECANCELED;
 * requests already sent stay in flight (their replies go to late). */
void conn_cancel_all(struct conn *conn);
/* Shutdown: when the connection is up and not inside one of its own
 * callbacks, send what is buffered and wait, blocking, up to timeout_ms
 * for the replies of every request in flight, so that releases already
 * issued are applied before the socket closes; replies are handled as
 * usual. Inside a callback only the buffered bytes are written. */
void conn_drain(struct conn *conn, uint32_t timeout_ms);
/* A server unix time in ms that the server's clock passes no later than
 * ours passes local_ms (see conn.c), or 0 when the clock is not measured. */
uint64_t conn_server_ms(const struct conn *conn, uint64_t local_ms);

/* Send a command whose reply nobody needs (handshakes, SCRIPT LOAD); error
 * replies are logged. Does nothing unless the connection is ready. */
void conn_send_raw(struct conn *conn, struct resp_buf *cmd);
/* Send SCRIPT LOAD for script id (enum script_id). */
void conn_load_script(struct conn *conn, int id);
/* Send a command whose replies go to fn(ac, reply, NULL): (UN)SUBSCRIBE on
 * the subscriber connection. Returns 0, or -1 when not ready. */
typedef void conn_reply_fn(struct redisAsyncContext *ac, void *reply,
                           void *privdata);
int conn_send_with(struct conn *conn, struct resp_buf *cmd,
                   conn_reply_fn *fn);

#endif
