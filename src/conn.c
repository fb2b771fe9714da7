/* conn.c -- one hiredis async connection, kept alive.
 *
 * The connection owns the requests sent on it. Each request has a deadline on
 * a libevent timer of ours (hiredis 0.14 has no request timeouts, and 1.x's
 * would close the connection), so a stalled server turns into ETIMEDOUT for
 * the caller while the connection itself stays up. Requests issued while the
 * connection is down wait in a queue until it is ready again, within their
 * deadline; a request marked retry is queued again when the connection drops
 * under it. Reconnects back off exponentially with jitter.
 *
 * hiredis calls every pending callback with a NULL reply when a context dies,
 * including when we free it. When the client itself is going away, requests
 * still inside hiredis are marked orphans and only freed from that callback. */
#include "conn.h"

#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

/* The async API used here (redisAsyncFormattedCommand, the libevent adapter,
 * connect/disconnect callbacks with a const context, NULL replies to every
 * pending callback when a context dies, one callback per subscribed channel)
 * is the same in 0.14 and 1.x; the suite runs against both. RESP3 is never
 * negotiated, so 1.x's push replies do not occur. */
#if !defined(HIREDIS_MAJOR) || HIREDIS_MAJOR > 1 ||                           \
    (HIREDIS_MAJOR == 0 && HIREDIS_MINOR < 14)
#error "hilock is written for hiredis 0.14 and 1.x"
#endif

#include "backoff.h"
#include "client.h"
#include "guard.h"
#include "reply.h"
#include "script.h"

#define REQ_POOL_MAX 4096

static void list_push(struct req_list *l, struct req *r)
{
    r->prev = l->tail;
    r->next = NULL;
    if (l->tail)
        l->tail->next = r;
    else
        l->head = r;
    l->tail = r;
}

static void list_unlink(struct req_list *l, struct req *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        l->head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        l->tail = r->prev;
    r->prev = r->next = NULL;
}

static void on_deadline(evutil_socket_t fd, short what, void *arg);
static void on_retry_timer(evutil_socket_t fd, short what, void *arg);

void conn_init(struct conn *conn, struct hilock_client *client,
               const char *what)
{
    memset(conn, 0, sizeof(*conn));
    conn->client = client;
    conn->what = what;
    evtimer_assign(&conn->retry_timer, client->base, on_retry_timer, conn);
}

struct req *req_new(struct conn *conn, req_done_fn *done)
{
    struct hilock_client *c = conn->client;
    if (conn->state == CONN_CLOSED)
        return NULL;
    struct req *r = c->req_pool;
    if (r) {
        c->req_pool = r->next;
        c->req_pool_len--;
    } else if (!(r = malloc(sizeof(*r)))) {
        return NULL;
    }
    memset(r, 0, offsetof(struct req, cmd));
    r->conn = conn;
    r->done = done;
    r->script = -1;
    evtimer_assign(&r->timer, c->base, on_deadline, r);
    resp_init(&r->cmd, r->cmd_inline, sizeof(r->cmd_inline));
    return r;
}

/* Give a finished request's memory back to the pool. */
static void req_recycle(struct req *r)
{
    struct hilock_client *c = r->conn->client;
    evtimer_del(&r->timer); /* a resent completed request may have it armed */
    if (r->fini)
        r->fini(r);
    resp_release(&r->cmd);
    if (c->req_pool_len < REQ_POOL_MAX) {
        r->next = c->req_pool;
        c->req_pool = r;
        c->req_pool_len++;
    } else {
        free(r);
    }
}

void req_discard(struct req *r)
{
    r->done = NULL;
    req_recycle(r);
}

static void on_reply(redisAsyncContext *ac, void *reply, void *privdata);

/* Hand r to hiredis; when the context refuses (going down), queue it. */
static void send_now(struct conn *conn, struct req *r)
{
    if (conn->state == CONN_READY &&
        redisAsyncFormattedCommand(conn->ac, on_reply, r, r->cmd.data,
                                   r->cmd.len) == REDIS_OK) {
        r->where = REQ_SENT;
        list_push(&conn->sent, r);
    } else {
        r->where = REQ_QUEUED;
        list_push(&conn->queued, r);
    }
}

void req_submit(struct req *r, uint32_t timeout_ms)
{
    struct hilock_client *c = r->conn->client;
    if (timeout_ms == 0) {
        evtimer_add(&r->timer, c->req_timeout);
    } else {
        struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
        evtimer_add(&r->timer, &tv);
    }
    if (r->cmd.failed) {
        /* Encoding ran out of memory: fail on the loop, not in the call. */
        r->where = REQ_QUEUED;
        list_push(&r->conn->queued, r);
        req_complete(r, HILOCK_ENOMEM);
        return;
    }
    send_now(r->conn, r);
}

/* Run the request's done once with status and reply. */
static void finish(struct req *r, int status, redisReply *reply)
{
    req_done_fn *done = r->done;
    r->done = NULL;
    evtimer_del(&r->timer);
    done(r, status, reply);
}

void req_complete(struct req *r, int status)
{
    if (!r->done)
        return;
    if (r->where == REQ_QUEUED) {
        list_unlink(&r->conn->queued, r);
        r->where = REQ_NOWHERE;
    }
    finish(r, status, NULL);
    if (r->where == REQ_NOWHERE)
        req_recycle(r);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct req *r = arg;
    struct hilock_client *c = r->conn->client;
    client_enter(c);
    if (r->done) {
        req_complete(r, HILOCK_ETIMEDOUT);
    } else if (r->where == REQ_QUEUED) {
        /* A completed request waiting to be resent: give up on it. */
        list_unlink(&r->conn->queued, r);
        r->where = REQ_NOWHERE;
        if (r->late)
            r->late(r, NULL);
        req_recycle(r);
    }
    client_leave(c);
}

/* Arm the backoff timer for the next connect attempt. */
static void schedule_retry(struct conn *conn)
{
    struct hilock_client *c = conn->client;
    uint32_t ms = backoff_delay_ms(c->opts.reconnect_min_ms,
                                   c->opts.reconnect_max_ms, conn->attempt++,
                                   &c->rng);
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(&conn->retry_timer, &tv);
}

/* Forget the current context (it is dying or being freed by the caller) and
 * plan a reconnect. */
static void conn_detach(struct conn *conn)
{
    if (conn->ac)
        conn->ac->data = NULL;
    conn->ac = NULL;
    conn->state = CONN_IDLE;
    evtimer_del(&conn->retry_timer);
    schedule_retry(conn);
    if (conn->on_drop)
        conn->on_drop(conn);
}

/* A request's context died under it: send it again later, or fail it. A
 * request that already completed but may have been applied (retry with a
 * late handler: an acquire that timed out or was canceled) is resent too,
 * within a fresh deadline, so that its late handler learns the outcome. */
static void dropped(struct conn *conn, struct req *r)
{
    if (r->retry && (r->done || r->late)) {
        if (!r->done)
            evtimer_add(&r->timer, conn->client->req_timeout);
        r->where = REQ_QUEUED;
        list_push(&conn->queued, r);
        return;
    }
    if (r->done)
        finish(r, HILOCK_ECONN, NULL);
    else if (r->late)
        r->late(r, NULL);
    req_recycle(r);
}

void conn_load_script(struct conn *conn, int id)
{
    struct resp_buf b;
    size_t len;
    const char *body = script_body((enum script_id)id, &len);
    resp_init(&b, NULL, 0);
    resp_array(&b, 3);
    resp_arg(&b, "SCRIPT", 6);
    resp_arg(&b, "LOAD", 4);
    resp_arg(&b, body, len);
    conn_send_raw(conn, &b);
    resp_release(&b);
}

/* Load the script r runs, then send r again behind it (same connection, so
 * the load is executed first). */
static void reload_and_resend(struct conn *conn, struct req *r)
{
    conn_load_script(conn, r->script);
    r->reloaded = 1;
    send_now(conn, r);
}

static void on_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    struct req *r = privdata;
    if (r->where == REQ_ORPHAN) {
        free(r);
        return;
    }
    struct conn *conn = r->conn;
    struct hilock_client *c = conn->client;
    client_enter(c);
    list_unlink(&conn->sent, r);
    r->where = REQ_NOWHERE;
    if (!reply) {
        if (ac == conn->ac)
            conn_detach(conn);
        dropped(conn, r);
    } else if (!r->done) {
        if (r->late)
            r->late(r, reply);
        req_recycle(r);
    } else if (r->script >= 0 && !r->reloaded && reply_is_noscript(reply)) {
        reload_and_resend(conn, r);
    } else {
        finish(r, 0, reply);
        req_recycle(r);
    }
    client_leave(c);
}

/* Log handshake and script-load errors; nobody else waits for them. */
static void on_raw_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    redisReply *rep = reply;
    struct conn *conn = ac->data;
    if (conn && rep && rep->type == REDIS_REPLY_ERROR)
        client_log(conn->client, HILOCK_LOG_WARN, "%s connection: %.*s",
                   conn->what, (int)(rep->len > 200 ? 200 : rep->len),
                   rep->str);
}

int conn_send_with(struct conn *conn, struct resp_buf *cmd,
                   conn_reply_fn *fn)
{
    if (conn->state != CONN_READY || cmd->failed ||
        redisAsyncFormattedCommand(conn->ac, fn, NULL, cmd->data,
                                   cmd->len) != REDIS_OK)
        return -1;
    return 0;
}

void conn_send_raw(struct conn *conn, struct resp_buf *cmd)
{
    conn_send_with(conn, cmd, on_raw_reply);
}

/* AUTH and SELECT, pipelined ahead of everything else. */
static void handshake(struct conn *conn)
{
    const struct hilock_options *o = &conn->client->opts;
    struct resp_buf b;
    char small[256];
    resp_init(&b, small, sizeof(small));
    if (o->password) {
        resp_array(&b, o->username ? 3 : 2);
        resp_arg(&b, "AUTH", 4);
        if (o->username)
            resp_arg(&b, o->username, strlen(o->username));
        resp_arg(&b, o->password, strlen(o->password));
        conn_send_raw(conn, &b);
        resp_reset(&b);
    }
    if (o->db > 0) {
        resp_array(&b, 2);
        resp_arg(&b, "SELECT", 6);
        resp_arg_u64(&b, (unsigned long long)o->db);
        conn_send_raw(conn, &b);
    }
    resp_release(&b);
}

/* Send everything that waited for the connection, in order. */
static void flush_queue(struct conn *conn)
{
    struct req_list q = conn->queued;
    conn->queued.head = conn->queued.tail = NULL;
    while (q.head) {
        struct req *r = q.head;
        list_unlink(&q, r);
        send_now(conn, r);
    }
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    struct conn *conn = ac->data;
    if (!conn)
        return;
    struct hilock_client *c = conn->client;
    client_enter(c);
    evtimer_del(&conn->retry_timer);
    if (status != REDIS_OK) {
        client_log(c, HILOCK_LOG_WARN, "%s connection failed: %s",
                   conn->what, ac->errstr);
        conn->ac = NULL; /* hiredis frees it after this callback */
        conn->state = CONN_IDLE;
        schedule_retry(conn);
    } else {
        client_log(c, HILOCK_LOG_INFO, "%s connection up", conn->what);
        conn->state = CONN_READY;
        conn->attempt = 0;
        conn->connects++;
        handshake(conn);
        if (conn->on_ready)
            conn->on_ready(conn);
        flush_queue(conn);
    }
    client_leave(c);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    struct conn *conn = ac->data;
    if (!conn)
        return;
    struct hilock_client *c = conn->client;
    client_enter(c);
    client_log(c, HILOCK_LOG_WARN, "%s connection lost: %s", conn->what,
               ac->errstr ? ac->errstr : "closed");
    conn->ac = NULL;
    conn_detach(conn);
    client_leave(c);
}

void conn_start(struct conn *conn)
{
    struct hilock_client *c = conn->client;
    const struct hilock_options *o = &c->opts;
    if (conn->state != CONN_IDLE)
        return;
    redisAsyncContext *ac = o->unix_path ? redisAsyncConnectUnix(o->unix_path)
                                         : redisAsyncConnect(o->host, o->port);
    if (!ac || ac->err) {
        client_log(c, HILOCK_LOG_WARN, "%s connection failed: %s", conn->what,
                   ac ? ac->errstr : "out of memory");
        if (ac)
            redisAsyncFree(ac);
        schedule_retry(conn);
        return;
    }
    if (guard_attach(ac) != 0)
        client_log(c, HILOCK_LOG_WARN, "%s connection: no reply guard",
                   conn->what);
    ac->data = conn;
    redisLibeventAttach(ac, c->base);
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    conn->ac = ac;
    conn->state = CONN_CONNECTING;
    uint32_t ms = o->connect_timeout_ms;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(&conn->retry_timer, &tv);
}

/* Backoff elapsed (idle: connect again), or the connect deadline passed. */
static void on_retry_timer(evutil_socket_t fd, short what, void *arg)
{
    struct conn *conn = arg;
    struct hilock_client *c = conn->client;
    client_enter(c);
    if (conn->state == CONN_CONNECTING) {
        redisAsyncContext *ac = conn->ac;
        client_log(c, HILOCK_LOG_WARN, "%s connection: connect timed out",
                   conn->what);
        conn->ac = NULL;
        ac->data = NULL;
        conn->state = CONN_IDLE;
        redisAsyncFree(ac);
        schedule_retry(conn);
    } else if (conn->state == CONN_IDLE) {
        conn_start(conn);
    }
    client_leave(c);
}

/* Cancel every request of list l; those inside hiredis become orphans. */
static void cancel_list(struct conn *conn, struct req_list *l)
{
    while (l->head) {
        struct req *r = l->head;
        list_unlink(l, r);
        if (r->done)
            finish(r, HILOCK_ECANCELED, NULL);
        evtimer_del(&r->timer);
        if (r->where == REQ_SENT) {
            resp_release(&r->cmd);
            r->where = REQ_ORPHAN;
        } else {
            resp_release(&r->cmd);
            free(r);
        }
    }
}

void conn_close(struct conn *conn)
{
    conn->state = CONN_CLOSED;
    evtimer_del(&conn->retry_timer);
    cancel_list(conn, &conn->queued);
    cancel_list(conn, &conn->sent);
    if (conn->ac) {
        redisAsyncContext *ac = conn->ac;
        conn->ac = NULL;
        ac->data = NULL;
        redisAsyncFree(ac);
    }
}
