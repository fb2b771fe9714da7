/* SPDX-License-Identifier: BSD-3-Clause */
/* connect.c -- a connection's life: set up, opened (TCP, then TLS),
 * reopened after a drop, restarted on a new address, drained and closed.
 *
 * Reconnects back off exponentially with jitter; the backoff starts over
 * only once a connection has proved useful, so a server that accepts and
 * then rejects us (a denied SUBSCRIBE, a failed AUTH) is not hammered.
 * Over TLS (tls.c) a PING goes first: its reply shows that the TLS
 * handshake passed, within the connect deadline. */
#include <errno.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <hiredis/sds.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "adapter.h"
#include "clock.h"
#include "conn.h"
#include "conn_impl.h"
#include "hot.h"
#include "reply_guard.h"
#include "tls.h"

static void on_retry_timer(evutil_socket_t fd, short what, void *arg);

/* The adapter's write_soon (adapter.h): a ready connection writes what
 * hiredis holds with flush_ev, in this pass of the loop (conn.c); ac's
 * data is its connection, NULL once the connection let ac go. */
HILOCK_HOT
static int flush_for(redisAsyncContext *ac, void *arg)
{
    struct conn *conn = ac->data;
    (void)arg;
    if (!conn || conn->state != CONN_READY)
        return 0;
    conn_flush_soon(conn);
    return 1;
}

void conn_init(struct conn *conn, const struct conn_config *cfg,
               const struct conn_endpoint *ep, const struct conn_hooks *hooks,
               void *owner, const char *what)
{
    memset(conn, 0, sizeof(*conn));
    conn->cfg = cfg;
    conn->ep = *ep;
    conn->hooks = hooks;
    conn->owner = owner;
    conn->what = what;
    TAILQ_INIT(&conn->queued);
    TAILQ_INIT(&conn->sent);
    TAILQ_INIT(&conn->pool);
    TAILQ_INIT(&conn->due);
    evtimer_assign(&conn->retry_timer, cfg->base, on_retry_timer, conn);
    evtimer_assign(&conn->later_timer, cfg->base, conn_on_later, conn);
    event_assign(&conn->flush_ev, cfg->base, -1, 0, conn_on_flush, conn);
    evtimer_assign(&conn->due_timer, cfg->base, conn_on_due, conn);
}

void conn_restart(struct conn *conn)
{
    if (conn->state == CONN_CLOSED)
        return;
    if (conn->state != CONN_IDLE) {
        conn_log(conn, HILOCK_LOG_INFO, "reconnecting");
        conn_abort(conn, HILOCK_ECONN, 0);
    }
    conn->attempt = 0;
    evtimer_del(&conn->retry_timer);
    struct timeval now = {0, 0};
    evtimer_add(&conn->retry_timer, &now);
}

/* Connected (and through TLS): the handshake of AUTH, SELECT and ROLE. */
static void conn_opened(struct conn *conn)
{
    evtimer_del(&conn->retry_timer);
    conn_log(conn, HILOCK_LOG_DEBUG, "connected, handshake");
    conn->state = CONN_HANDSHAKE;
    if (conn_handshake(conn) == 0)
        conn_ready(conn);
}

/* Any reply to the PING that follows a TLS connect: the TLS handshake is
 * over. */
static void on_tls_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    struct conn *conn = ac->data;
    if (!conn || !reply || conn->state != CONN_CONNECTING)
        return;
    reentry_enter(conn->cfg->reentry);
    conn->tls_wait = 0;
    conn_opened(conn);
    reentry_leave(conn->cfg->reentry);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    struct conn *conn = ac->data;
    static const char ping[] = "*1\r\n$4\r\nPING\r\n";
    if (!conn)
        return;
    struct reentry *re = conn->cfg->reentry;
    reentry_enter(re);
    if (status != REDIS_OK) {
        int err = HILOCK_ECONN;
        const char *why = ac->errstr;
        char tls_why[160];
        conn->tls_wait = 1; /* a TLS handshake done at once may be refused */
        conn_tls_cause(conn, &err, &why, tls_why, sizeof(tls_why));
        evtimer_del(&conn->retry_timer);
        conn_log_down(conn, err, "failed: %s", why);
        conn->ac = NULL; /* hiredis frees it after this callback */
        conn->state = CONN_IDLE;
        conn_backoff(conn);
        conn_failed(conn, err);
    } else if (conn->tls_session) {
        /* The TLS handshake runs within the connect deadline, which stays
         * armed: a server that never answers it (plaintext) fails. */
        conn->tls_wait = 1;
        redisAsyncFormattedCommand(conn->ac, on_tls_reply, NULL, ping,
                                   sizeof(ping) - 1);
    } else {
        conn_opened(conn);
    }
    reentry_leave(re);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    struct conn *conn = ac->data;
    if (!conn)
        return;
    struct reentry *re = conn->cfg->reentry;
    reentry_enter(re);
    conn_lost(conn, ac);
    reentry_leave(re);
}

void conn_start(struct conn *conn)
{
    const struct conn_endpoint *ep = &conn->ep;
    if (conn->state != CONN_IDLE)
        return;
    redisAsyncContext *ac = ep->unix_path
                                ? redisAsyncConnectUnix(ep->unix_path)
                                : redisAsyncConnect(ep->host, ep->port);
    int err = !ac || ac->err ? HILOCK_ECONN : 0;
    conn->tls_session = NULL;
    conn->tls_wait = 0;
    if (!err && conn->cfg->tls) /* a loopback handshake may fail at once */
        err = tls_attach(conn->cfg->tls, ac, ep->host, &conn->tls_session);
    if (!err && adapter_attach(ac, conn->cfg->base, flush_for, NULL))
        err = HILOCK_ENOMEM;
    if (err) {
        conn_log_down(conn, err, "failed: %s",
                      ac && err != HILOCK_ENOMEM ? ac->errstr
                                                 : "out of memory");
        if (ac)
            redisAsyncFree(ac);
        conn_backoff(conn);
        /* Told from the retry timer: this may run inside a user's call. */
        conn->err = err;
        conn->fail_pending = 1;
        return;
    }
    if (guard_attach(ac, conn->sharded) != 0)
        conn_log(conn, HILOCK_LOG_WARN, "no reply guard");
    ac->data = conn;
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    conn->ac = ac;
    conn->state = CONN_CONNECTING;
    struct timeval tv = clock_tv(conn->cfg->opts->connect_timeout_ms);
    evtimer_add(&conn->retry_timer, &tv);
}

/* Backoff elapsed (idle: connect again), or the connect deadline passed. */
static void on_retry_timer(evutil_socket_t fd, short what, void *arg)
{
    struct conn *conn = arg;
    struct reentry *re = conn->cfg->reentry;
    reentry_enter(re);
    if (conn->state == CONN_CONNECTING) {
        redisAsyncContext *ac = conn->ac;
        conn_log_down(conn, conn->tls_wait ? HILOCK_ETLS : HILOCK_ECONN,
                      "%s timed out",
                      conn->tls_wait ? "TLS handshake" : "connect");
        conn->ac = NULL;
        ac->data = NULL;
        conn->state = CONN_IDLE;
        redisAsyncFree(ac);
        conn_backoff(conn);
        conn_failed(conn, conn->tls_wait ? HILOCK_ETLS : HILOCK_ECONN);
    } else if (conn->state == CONN_IDLE) {
        if (conn->fail_pending) {
            conn->fail_pending = 0;
            conn_failed(conn, conn->err);
        }
        conn_start(conn);
    }
    reentry_leave(re);
}

void conn_close(struct conn *conn)
{
    conn->state = CONN_CLOSED;
    evtimer_del(&conn->retry_timer);
    evtimer_del(&conn->later_timer);
    evtimer_del(&conn->due_timer);
    conn->due_armed = 0;
    event_del(&conn->flush_ev);
    conn->flush_pending = 0;
    conn_cancel_list(&conn->queued);
    conn_cancel_list(&conn->sent);
    if (conn->ac) {
        redisAsyncContext *ac = conn->ac;
        conn->ac = NULL;
        ac->data = NULL;
        redisAsyncFree(ac);
    }
    struct req *r;
    while ((r = TAILQ_FIRST(&conn->pool)) != NULL) {
        TAILQ_REMOVE(&conn->pool, r, link);
        free(r);
    }
    conn->pool_len = 0;
}

/* Wait up to ms for ac's socket to be readable (or writable when want_out)
 * and let hiredis handle it. Returns 0, or -1 when nothing more will come. */
static int drain_step(redisAsyncContext *ac, int want_out, int ms)
{
    struct pollfd p = {ac->c.fd, (short)(POLLIN | (want_out ? POLLOUT : 0)),
                       0};
    int n = poll(&p, 1, ms);
    if (n < 0 && errno == EINTR)
        return 0;
    if (n <= 0)
        return -1;
    if (p.revents & POLLOUT)
        adapter_write_now(ac);
    if (p.revents & (POLLIN | POLLHUP | POLLERR))
        redisAsyncHandleRead(ac); /* may free ac: the caller checks */
    return 0;
}

void conn_drain(struct conn *conn, uint32_t timeout_ms)
{
    redisAsyncContext *ac = conn->ac;
    uint64_t end = clock_now_ms() + timeout_ms, now;
    if (conn->state != CONN_READY)
        return;
    if (ac->c.flags & REDIS_IN_CALLBACK) {
        int done = 0;
        redisBufferWrite(&ac->c, &done); /* one try, no waiting */
        return;
    }
    while (conn->state == CONN_READY && conn->ac == ac &&
           !TAILQ_EMPTY(&conn->sent) &&
           (now = clock_now_ms()) < end) {
        if (drain_step(ac, sdslen(ac->c.obuf) > 0, (int)(end - now)) < 0)
            break;
    }
}
