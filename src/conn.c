/* SPDX-License-Identifier: BSD-3-Clause */
/* conn.c -- the core of one hiredis async connection: its requests.
 *
 * The connection owns the requests sent on it. Each request has a deadline
 * of ours (hiredis 0.14 has no request timeouts, and 1.x's would close the
 * connection), so a stalled server turns into ETIMEDOUT for the caller while
 * the connection itself stays up. Most deadlines are the request timeout
 * from when the request went: they come in order, so they wait in one list
 * of the connection under one timer, armed for the first, instead of a
 * libevent timer each (an add and a delete per request, a measurable part
 * of an uncontended pair); a deadline of another length (a Redlock part's,
 * a hurried one) takes the request's own timer. Requests issued while the
 * connection is down wait in a queue until it is ready again, within their
 * deadline; a request marked retry is queued again when the connection drops
 * under it. This file also holds what every state change of the connection
 * shares (ready, aborted); opening and reopening it is connect.c's, the
 * handshake handshake.c's, what a drop or a failure leaves (why, the
 * backoff timer) conn_down.c's.
 *
 * hiredis calls every pending callback with a NULL reply when a context dies,
 * including when we free it. When the client itself is going away, requests
 * still inside hiredis are marked orphans and only freed from that callback. */
#include "conn.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <hiredis/sds.h>
#include <stdio.h>
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

#include "adapter.h"
#include "clock.h"
#include "conn_impl.h"
#include "hot.h"
#include "reply_guard.h"
#include "reply.h"
#include "stats.h"

#define REQ_POOL_MAX 4096

static void on_deadline(evutil_socket_t fd, short what, void *arg);

struct conn *conn_of(const redisAsyncContext *ac)
{
    return ac->data;
}

HILOCK_HOT
struct req *req_new(struct conn *conn, req_done_fn *done)
{
    if (conn->state == CONN_CLOSED)
        return NULL;
    struct req *r = TAILQ_FIRST(&conn->pool);
    if (r) {
        TAILQ_REMOVE(&conn->pool, r, link);
        conn->pool_len--;
    } else if (!(r = malloc(sizeof(*r)))) {
        return NULL;
    }
    hot_zero(r, offsetof(struct req, cmd));
    r->conn = conn;
    r->done = done;
    resp_init(&r->cmd, r->cmd_inline, sizeof(r->cmd_inline));
    return r;
}

void req_scratch_keep(struct req *r)
{
    resp_copy(&r->cmd, &r->conn->cfg->scratch->buf);
    req_scratch_drop(r);
}

/* Forget r's deadline, wherever it is kept. */
static void due_clear(struct req *r)
{
    if (r->due == REQ_DUE_LIST)
        TAILQ_REMOVE(&r->conn->due, r, due_link);
    else if (r->due == REQ_DUE_TIMER)
        evtimer_del(&r->timer);
    r->due = REQ_DUE_NONE;
}

/* Arm the connection's deadline timer for the first deadline of its list,
 * if any (now_us: the monotonic time now). */
static void due_arm(struct conn *conn, uint64_t now_us)
{
    struct req *first = TAILQ_FIRST(&conn->due);
    uint64_t wait_us;
    struct timeval tv;
    if (!first)
        return;
    wait_us = first->due_us > now_us ? first->due_us - now_us : 0;
    tv.tv_sec = (time_t)(wait_us / 1000000u);
    tv.tv_usec = (suseconds_t)(wait_us % 1000000u);
    evtimer_add(&conn->due_timer, &tv);
    conn->due_armed = 1;
}

/* Put r, whose due_us is set, in order in its connection's list: from the
 * end, where a deadline of the request timeout from now belongs (a moved
 * request may walk back further). Arms the timer when r comes first. */
HILOCK_HOT
static inline void due_insert(struct req *r, uint64_t now_us)
{
    struct conn *conn = r->conn;
    struct req *p = TAILQ_LAST(&conn->due, req_list);
    while (p && p->due_us > r->due_us)
        p = TAILQ_PREV(p, req_list, due_link);
    if (p)
        TAILQ_INSERT_AFTER(&conn->due, p, r, due_link);
    else
        TAILQ_INSERT_HEAD(&conn->due, r, due_link);
    r->due = REQ_DUE_LIST;
    if (!conn->due_armed || TAILQ_FIRST(&conn->due) == r)
        due_arm(conn, now_us);
}

/* Give r a deadline ms after now_us, replacing the one it had: in the
 * connection's list when ms is the request timeout, else on r's timer. */
static void due_set(struct req *r, uint64_t now_us, uint32_t ms)
{
    due_clear(r);
    if (ms == r->conn->cfg->opts->request_timeout_ms) {
        r->due_us = now_us + (uint64_t)ms * 1000u;
        due_insert(r, now_us);
        return;
    }
    struct timeval tv = clock_tv(ms);
    evtimer_assign(&r->timer, r->conn->cfg->base, on_deadline, r);
    evtimer_add(&r->timer, &tv);
    r->due = REQ_DUE_TIMER;
}

/* r's command is unusable (r->cmd.failed: no memory, or a script call
 * that broke its contract): r fails on the loop, not in the call that
 * submits it, waiting in the queue for an immediate deadline. */
static void fail_soon(struct req *r, uint64_t now_us)
{
    r->enomem = (uint8_t)r->cmd.failed;
    due_set(r, now_us, 1);
}

/* Give a finished request's memory back to the pool. */
HILOCK_HOT
static void req_recycle(struct req *r)
{
    struct conn *conn = r->conn;
    due_clear(r); /* a resent completed request may have a deadline */
    if (r->lent) /* never submitted */
        req_scratch_drop(r);
    if (r->fini)
        r->fini(r);
    resp_free(&r->cmd);
    if (conn->pool_len < REQ_POOL_MAX && conn->state != CONN_CLOSED) {
        TAILQ_INSERT_HEAD(&conn->pool, r, link);
        conn->pool_len++;
    } else {
        free(r);
    }
}

static void on_reply(redisAsyncContext *ac, void *reply, void *privdata);

/* Commands whose replies nobody reads: ASKING only lets the next command
 * in; MULTI opens the transaction of a split request, whose commands
 * answer QUEUED, and EXEC's reply is the request's. */
static const char asking_cmd[] = "*1\r\n$6\r\nASKING\r\n";
static const char multi_cmd[] = "*1\r\n$5\r\nMULTI\r\n";
static const char exec_cmd[] = "*1\r\n$4\r\nEXEC\r\n";

static int send_cmd(struct conn *conn, const char *cmd, size_t len,
                    struct req *r)
{
    return redisAsyncFormattedCommand(conn->ac, r ? on_reply : NULL, r, cmd,
                                      len) == REDIS_OK;
}

/* Hand what r sends (its command cmd) to hiredis; 0 when the context
 * refuses (going down: what went out is lost with it). */
static int send_parts(struct conn *conn, struct req *r,
                      const struct resp_buf *cmd)
{
    if (r->asking && !send_cmd(conn, asking_cmd, sizeof(asking_cmd) - 1, NULL))
        return 0;
    const struct req_plain *p = &r->plain;
    if (!p->split)
        return send_cmd(conn, cmd->data, cmd->len, r);
    size_t end = p->split2 ? p->split2 : cmd->len;
    return send_cmd(conn, multi_cmd, sizeof(multi_cmd) - 1, NULL) &&
           send_cmd(conn, cmd->data, p->split, NULL) &&
           send_cmd(conn, cmd->data + p->split, end - p->split, NULL) &&
           (!p->split2 || send_cmd(conn, cmd->data + p->split2,
                                   cmd->len - p->split2, NULL)) &&
           send_cmd(conn, exec_cmd, sizeof(exec_cmd) - 1, r);
}

/* What is handed to hiredis would wait in its buffer until the loop polls
 * the socket writable: one more pass through the loop, a poll and two
 * changes of the poll set, before a request leaves. flush_ev, made active
 * with the first command of a batch (through the adapter, connect.c),
 * writes the buffer as soon as the callbacks running now are done, in the
 * same pass: the batch still goes out in one write, that much sooner. */
HILOCK_HOT
void conn_on_flush(evutil_socket_t fd, short what, void *arg)
{
    struct conn *conn = arg;
    struct reentry *re = conn->cfg->reentry;
    (void)fd;
    (void)what;
    reentry_enter(re);
    conn->flush_pending = 0;
    conn->arrival_us = 0; /* the batch of replies was read before */
    if (conn->state == CONN_READY && conn->ac)
        adapter_write_now(conn->ac); /* may drop the connection */
    reentry_leave(re);
}

HILOCK_HOT
void conn_flush_soon(struct conn *conn)
{
    if (!conn->flush_pending) {
        conn->flush_pending = 1;
        event_active(&conn->flush_ev, 0, 1);
    }
}

/* When the replies hiredis is handing out now were read: the clock as the
 * first of them found it, kept until flush_ev runs after this read's
 * callbacks -- one clock read per batch of replies, not one per reply.
 * Later replies of the batch get a time from before the callbacks of the
 * earlier ones ran: it times a reply's arrival (the request's latency),
 * and the requests its callbacks send count from it (reentry_now_us), so
 * their leases start no later than Redis's. A grant is checked against the
 * clock itself (grant.c); a release's check of its hold (plain.c) may see
 * a hold that ran out within the batch as live, which only sends it by
 * HDEL rather than by the script: either answers that it was not held. */
static uint64_t arrival_us(struct conn *conn)
{
    if (!conn->arrival_us) {
        conn->arrival_us = clock_now_us();
        conn_flush_soon(conn);
    }
    return conn->arrival_us;
}

/* Hand r to hiredis; when the context refuses (going down), queue it. A
 * command in the scratch buffer is hiredis's once handed over; a queued
 * one keeps a copy. */
HILOCK_HOT
static void send_now(struct conn *conn, struct req *r)
{
    if (conn->state == CONN_READY && !r->enomem &&
        send_parts(conn, r, req_cmd(r))) {
        r->where = REQ_SENT; /* written by flush_ev (see connect.c) */
        TAILQ_INSERT_TAIL(&conn->sent, r, link);
        (*conn->cfg->wire)++;
    } else {
        r->where = REQ_QUEUED;
        TAILQ_INSERT_TAIL(&conn->queued, r, link);
    }
    if (!r->lent)
        return;
    if (r->where == REQ_SENT) {
        req_scratch_drop(r);
        return;
    }
    req_scratch_keep(r);
    if (r->cmd.failed) /* no memory for the copy */
        fail_soon(r, clock_now_us());
}

void conn_resend(struct conn *conn, struct req *r)
{
    send_now(conn, r);
}

void conn_reroute(struct conn *conn, conn_dest_fn *dest, void *arg)
{
    struct req *r, *next;
    for (r = TAILQ_FIRST(&conn->queued); r; r = next) {
        next = TAILQ_NEXT(r, link);
        struct conn *d = dest(arg, r);
        if (d && d != conn && !r->enomem) {
            TAILQ_REMOVE(&conn->queued, r, link);
            req_move(r, d, 0);
        }
    }
}

void conn_resend_later(struct conn *conn, struct req *r, uint32_t ms)
{
    r->where = REQ_QUEUED;
    TAILQ_INSERT_TAIL(&conn->queued, r, link);
    if (!evtimer_pending(&conn->later_timer, NULL)) {
        struct timeval tv = clock_tv(ms);
        evtimer_add(&conn->later_timer, &tv);
    }
}

void req_move(struct req *r, struct conn *dst, int asking)
{
    if (r->due == REQ_DUE_LIST && dst != r->conn) {
        TAILQ_REMOVE(&r->conn->due, r, due_link);
        r->conn = dst;
        due_insert(r, clock_now_us());
    }
    r->conn = dst;
    r->asking = (uint8_t)(asking != 0);
    send_now(dst, r);
}

void req_submit(struct req *r, uint32_t timeout_ms)
{
    req_submit_at(r, timeout_ms, clock_now_us());
}

/* req_submit_at of a request that is not on the common path: a
 * deadline of its own length, a command that failed to encode, or a
 * deadline set already. */
HILOCK_OUTLINE
static void submit_other(struct req *r, uint32_t timeout_ms, uint64_t now_us)
{
    if (r->lent)
        req_scratch_keep(r);
    if (r->cmd.failed) {
        fail_soon(r, now_us);
        r->where = REQ_QUEUED;
        TAILQ_INSERT_TAIL(&r->conn->queued, r, link);
        return;
    }
    due_set(r, now_us,
            timeout_ms ? timeout_ms : r->conn->cfg->opts->request_timeout_ms);
    send_now(r->conn, r);
}

/* The common path (the request timeout, a command encoded, no deadline
 * yet) is kept short: the deadline goes straight to the connection's
 * list, without due_set's checks. */
HILOCK_HOT
void req_submit_at(struct req *r, uint32_t timeout_ms, uint64_t now_us)
{
    r->sent_us = now_us;
    stats_request_sent(r->conn->cfg->stats);
    if (timeout_ms || req_cmd(r)->failed || r->enomem ||
        r->due != REQ_DUE_NONE) {
        submit_other(r, timeout_ms, now_us);
        return;
    }
    r->due_us =
        now_us + (uint64_t)r->conn->cfg->opts->request_timeout_ms * 1000u;
    due_insert(r, now_us);
    send_now(r->conn, r);
}

/* Run the request's done once with status and reply, which came at now_us
 * (0: now). */
HILOCK_HOT
static void finish(struct req *r, int status, redisReply *reply,
                   uint64_t now_us)
{
    req_done_fn *done = r->done;
    r->done = NULL;
    due_clear(r);
    if (r->sent_us) /* else there is nothing to time */
        stats_request_done(r->conn->cfg->stats, r->sent_us,
                           now_us ? now_us : clock_now_us());
    done(r, status, reply);
}

void req_complete(struct req *r, int status)
{
    if (!r->done)
        return;
    if (r->where == REQ_QUEUED) {
        TAILQ_REMOVE(&r->conn->queued, r, link);
        r->where = REQ_NOWHERE;
    }
    finish(r, status, NULL, 0);
    if (r->where == REQ_NOWHERE)
        req_recycle(r);
}

/* Why a request ran out of time: a connection that is down says more than
 * "timed out", and so does one whose handshake is out after the last one
 * failed (with a server that keeps refusing, the deadline often comes
 * while the next handshake is out); a first handshake that hangs is a
 * time-out. */
static int deadline_status(const struct req *r)
{
    const struct conn *conn = r->conn;
    if (r->enomem)
        return r->enomem == RESP_BROKEN ? HILOCK_EPROTO : HILOCK_ENOMEM;
    if (r->where != REQ_QUEUED || conn->state == CONN_READY)
        return HILOCK_ETIMEDOUT;
    if (conn->state == CONN_HANDSHAKE)
        return conn->err ? conn->err : HILOCK_ETIMEDOUT;
    return conn->err ? conn->err : HILOCK_ECONN;
}

void req_hurry(struct req *r, uint32_t ms)
{
    if (r->done)
        due_set(r, clock_now_us(), ms);
}

/* r's deadline passed (and is forgotten): complete it, or give up on
 * resending it. */
static void deadline_passed(struct req *r)
{
    if (r->done) {
        req_complete(r, deadline_status(r));
    } else if (r->where == REQ_QUEUED) {
        /* A completed request waiting to be resent: give up on it. */
        TAILQ_REMOVE(&r->conn->queued, r, link);
        r->where = REQ_NOWHERE;
        if (r->late)
            r->late(r, NULL);
        req_recycle(r);
    }
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct req *r = arg;
    struct reentry *re = r->conn->cfg->reentry;
    (void)fd;
    (void)what;
    reentry_enter(re);
    r->due = REQ_DUE_NONE;
    deadline_passed(r);
    reentry_leave(re);
}

void conn_on_due(evutil_socket_t fd, short what, void *arg)
{
    struct conn *conn = arg;
    struct reentry *re = conn->cfg->reentry;
    uint64_t now_us = clock_now_us();
    struct req *r;
    (void)fd;
    (void)what;
    reentry_enter(re);
    conn->due_armed = 0;
    while ((r = TAILQ_FIRST(&conn->due)) != NULL && r->due_us <= now_us) {
        due_clear(r);
        deadline_passed(r);
    }
    if (!conn->due_armed && conn->state != CONN_CLOSED)
        due_arm(conn, now_us);
    reentry_leave(re);
}

void conn_proven(struct conn *conn)
{
    conn->attempt = 0;
}

/* A request's context died under it: send it again later, or fail it. A
 * request that already completed but may have been applied (retry with a
 * late handler: an acquire that timed out or was canceled) is resent too,
 * within a fresh deadline, so that its late handler learns the outcome. */
HILOCK_COLD
static void dropped(struct conn *conn, struct req *r)
{
    if (r->retry && (r->done || r->late)) {
        if (!r->done)
            due_set(r, clock_now_us(), conn->cfg->opts->request_timeout_ms);
        if (r->refresh)
            r->refresh(r, REQ_AGAIN_DROPPED);
        r->resent = 1;
        r->where = REQ_QUEUED;
        TAILQ_INSERT_TAIL(&conn->queued, r, link);
        return;
    }
    if (r->done)
        finish(r, HILOCK_ECONN, NULL, 0);
    else if (r->late)
        r->late(r, NULL);
    req_recycle(r);
}

/* Log an error reply with the server's text, scrubbed of the arguments it
 * may echo (reply_error_scrub): it says more than our code. */
HILOCK_COLD
static void log_error_reply(struct conn *conn, const redisReply *rep)
{
    char text[REPLY_SCRUB_MAX];
    conn_log(conn, HILOCK_LOG_WARN, "%s",
             reply_error_scrub(rep->str, rep->len, text, sizeof(text)));
}

HILOCK_HOT
static void on_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    struct req *r = privdata;
    if (r->where == REQ_ORPHAN) {
        free(r);
        return;
    }
    struct conn *conn = r->conn;
    struct reentry *re = conn->cfg->reentry;
    reentry_enter(re);
    TAILQ_REMOVE(&conn->sent, r, link);
    (*conn->cfg->wire)--;
    r->where = REQ_NOWHERE;
    if (!reply) {
        if (ac == conn->ac)
            conn_lost(conn, ac);
        dropped(conn, r);
    } else if (!r->done) {
        if (r->late)
            r->late(r, reply);
        req_recycle(r);
    } else {
        int error = ((redisReply *)reply)->type == REDIS_REPLY_ERROR;
        if ((!error && !r->plain.checked) || !conn->hooks->on_error ||
            !conn->hooks->on_error(conn, r, reply)) {
            if (!error)
                conn_proven(conn);
            else if (!r->quiet)
                log_error_reply(conn, reply);
            re->now_us = arrival_us(conn); /* for the calls it makes */
            finish(r, 0, reply, re->now_us);
            req_recycle(r);
        }
    }
    reentry_leave(re);
}

/* Log handshake and script-load errors; nobody else waits for them. */
static void on_raw_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    redisReply *rep = reply;
    struct conn *conn = ac->data;
    if (conn && rep && rep->type == REDIS_REPLY_ERROR)
        log_error_reply(conn, rep);
}

/* Hand cmd to hiredis with fn(ac, reply, priv); -1 when it refuses. */
int conn_send_formatted(struct conn *conn, struct resp_buf *cmd,
                          conn_reply_fn *fn, void *priv)
{
    if (!conn->ac || cmd->failed ||
        redisAsyncFormattedCommand(conn->ac, fn, priv, cmd->data,
                                   cmd->len) != REDIS_OK)
        return -1;
    return 0;
}

int conn_send_with(struct conn *conn, struct resp_buf *cmd,
                   conn_reply_fn *fn)
{
    return conn->state == CONN_READY ? conn_send_formatted(conn, cmd, fn, NULL)
                                     : -1;
}

int conn_send_as(struct conn *conn, struct resp_buf *cmd,
                 const struct resp_buf *wire, conn_reply_fn *fn)
{
    if (wire->failed || conn_send_with(conn, cmd, fn) != 0)
        return -1;
    /* hiredis appended cmd to its output buffer, which nothing has written
     * yet: put wire in its place. */
    sds ob = sdsMakeRoomFor(conn->ac->c.obuf, wire->len);
    if (!ob)
        return -1;
    sdssetlen(ob, sdslen(ob) - cmd->len);
    conn->ac->c.obuf = sdscatlen(ob, wire->data, wire->len); /* has room */
    return 0;
}

void conn_send_raw(struct conn *conn, struct resp_buf *cmd)
{
    conn_send_with(conn, cmd, on_raw_reply);
}

/* Send everything that waited for the connection, in order. */
static void flush_queue(struct conn *conn)
{
    struct req_list q = TAILQ_HEAD_INITIALIZER(q);
    struct req *r;
    TAILQ_CONCAT(&q, &conn->queued, link);
    while ((r = TAILQ_FIRST(&q)) != NULL) {
        TAILQ_REMOVE(&q, r, link);
        send_now(conn, r);
    }
}

void conn_on_later(evutil_socket_t fd, short what, void *arg)
{
    struct conn *conn = arg;
    struct reentry *re = conn->cfg->reentry;
    reentry_enter(re);
    if (conn->state == CONN_READY)
        flush_queue(conn); /* else the queue goes when it is ready */
    reentry_leave(re);
}

/* The handshake passed: requests flow. */
void conn_ready(struct conn *conn)
{
    conn_log(conn, HILOCK_LOG_INFO, "up");
    conn->state = CONN_READY;
    conn->err = 0;
    conn->connects++;
    if (conn->hooks->on_ready)
        conn->hooks->on_ready(conn);
    flush_queue(conn);
}

/* Fail every queued request with err: they must not run on a connection
 * whose handshake was refused. */
void conn_fail_queued(struct conn *conn, int err)
{
    struct req *r;
    while ((r = TAILQ_FIRST(&conn->queued)) != NULL) {
        TAILQ_REMOVE(&conn->queued, r, link);
        r->where = REQ_NOWHERE;
        if (r->done)
            finish(r, err, NULL, 0);
        else if (r->late)
            r->late(r, NULL);
        req_recycle(r);
    }
}

/* Give up on the current context (safe inside its own callbacks: hiredis
 * then frees it when the callback returns), fail what waits for it when
 * fail_queued and try again after the backoff. */
void conn_abort(struct conn *conn, int err, int fail_queued)
{
    redisAsyncContext *ac = conn->ac;
    int was_ready = conn->state == CONN_READY;
    conn->ac = NULL;
    conn->state = CONN_IDLE;
    if (ac) {
        ac->data = NULL;
        redisAsyncFree(ac);
    }
    evtimer_del(&conn->retry_timer);
    conn_backoff(conn);
    if (was_ready && conn->hooks->on_drop)
        conn->hooks->on_drop(conn); /* conn_restart of a working one */
    conn_failed(conn, err);
    if (fail_queued)
        conn_fail_queued(conn, err);
}

/* Cancel every request of list l; those inside hiredis become orphans.
 * Their owners let go of them now (fini): an orphan is freed later, when
 * its owner is long gone. */
void conn_cancel_list(struct req_list *l)
{
    struct req *r;
    while ((r = TAILQ_FIRST(l)) != NULL) {
        TAILQ_REMOVE(l, r, link);
        if (r->where == REQ_SENT)
            (*r->conn->cfg->wire)--;
        if (r->done)
            finish(r, HILOCK_ECANCELED, NULL, 0);
        due_clear(r);
        if (r->fini) {
            req_fini_fn *fini = r->fini;
            r->fini = NULL;
            fini(r);
        }
        if (r->where == REQ_SENT) {
            resp_free(&r->cmd);
            r->where = REQ_ORPHAN;
        } else {
            resp_free(&r->cmd);
            free(r);
        }
    }
}

void conn_cancel_all(struct conn *conn)
{
    struct req_list *lists[2] = {&conn->queued, &conn->sent};
    for (int i = 0; i < 2; i++) {
        struct req *r, *next;
        for (r = TAILQ_FIRST(lists[i]); r; r = next) {
            next = TAILQ_NEXT(r, link);
            req_complete(r, HILOCK_ECANCELED);
        }
    }
}
