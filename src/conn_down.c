/* SPDX-License-Identifier: BSD-3-Clause */
/* conn_down.c -- what a connection that went down leaves behind: why (the
 * server's text, TLS's reason, or the network), the owner told of it, and
 * the backoff timer for the next attempt. Called by conn.c when a context
 * dies under a reply, and by connect.c and handshake.c when opening fails. */
#include <hiredis/async.h>
#include <string.h>

#include "backoff.h"
#include "clock.h"
#include "conn_impl.h"
#include "hot.h"
#include "reply.h"
#include "tls.h"

/* Arm the backoff timer for the next connect attempt. */
void conn_backoff(struct conn *conn)
{
    const struct hilock_options *o = conn->cfg->opts;
    uint32_t ms = backoff_delay_ms(o->reconnect_min_ms, o->reconnect_max_ms,
                                   conn->attempt, conn->cfg->rng);
    struct timeval tv = clock_tv(ms);
    if (conn->attempt < 32)
        conn->attempt++;
    evtimer_add(&conn->retry_timer, &tv);
}

/* Note why the connection is down and tell the owner. */
void conn_failed(struct conn *conn, int err)
{
    conn->err = err;
    if (conn->hooks->on_fail)
        conn->hooks->on_fail(conn, err);
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
    conn_backoff(conn);
    if (conn->hooks->on_drop)
        conn->hooks->on_drop(conn);
}

/* When the connection failed in TLS rather than in TCP: HILOCK_ETLS in
 * *err, the reason (kept in buf) in *why. */
void conn_tls_cause(struct conn *conn, int *err, const char **why,
                    char *buf, size_t len)
{
    if (conn->tls_session &&
        tls_failed(conn->tls_session, conn->tls_wait, buf, len)) {
        *err = HILOCK_ETLS;
        *why = buf;
    }
}

/* The connection ac died: say why, forget it, plan a reconnect. */
HILOCK_COLD
void conn_lost(struct conn *conn, const redisAsyncContext *ac)
{
    char text[REPLY_SCRUB_MAX];
    const char *why = ac->errstr[0] ? reply_error_scrub(ac->errstr,
                                                        strlen(ac->errstr),
                                                        text, sizeof(text))
                                    : "closed by the server";
    /* hiredis drops a connection on an error reply that no request asked
     * for, with the server's text as the reason (a denied SUBSCRIBE). */
    int err = ac->err == REDIS_ERR_OTHER
                  ? reply_error_text_code(why, strlen(why))
                  : HILOCK_ECONN;
    char tls_why[160];
    if (err == HILOCK_ESERVER)
        err = HILOCK_ECONN;
    if (ac->err == REDIS_ERR_PROTOCOL)
        err = HILOCK_EPROTO; /* not Redis, or not speaking RESP */
    conn_tls_cause(conn, &err, &why, tls_why, sizeof(tls_why));
    conn->tls_session = NULL;
    conn_log_down(conn, err, "lost: %s", why);
    conn_detach(conn);
    conn_failed(conn, err);
}
