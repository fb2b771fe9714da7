/* SPDX-License-Identifier: BSD-3-Clause */
/* conn_impl.h -- what the four files of a connection share: conn.c (its
 * requests and state changes), conn_down.c (what a drop or a failure
 * leaves), handshake.c (the gate and the clock) and connect.c (opening,
 * reopening, closing). Calls go from connect.c to handshake.c to conn.c,
 * and from each of them to conn_down.c, never back; no other file
 * includes this. */
#ifndef HILOCK_CONN_IMPL_H
#define HILOCK_CONN_IMPL_H

#include "conn.h"

/* conn.c */

/* Log why the connection failed with err: a warning (an error for a cause
 * other than the network), or only a debug line when it was down for that
 * same cause already. */
void conn_log_down(const struct conn *conn, int err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* The handshake passed: requests flow. */
void conn_ready(struct conn *conn);
/* Give up on the current context, fail what waits for it when
 * fail_queued, and try again after the backoff. Safe inside the context's
 * own callbacks. */
void conn_abort(struct conn *conn, int err, int fail_queued);
/* Hand cmd to hiredis with fn(ac, reply, priv) whatever the state; -1
 * when there is no context or it refuses. */
int conn_send_formatted(struct conn *conn, struct resp_buf *cmd,
                        conn_reply_fn *fn, void *priv);
/* Cancel every request of l (conn_close); those inside hiredis become
 * orphans. */
void conn_cancel_list(struct req_list *l);
/* Make flush_ev run once the callbacks running now are done. */
void conn_flush_soon(struct conn *conn);
/* The loop callbacks of flush_ev and later_timer (set up by conn_init). */
void conn_on_flush(evutil_socket_t fd, short what, void *arg);
void conn_on_later(evutil_socket_t fd, short what, void *arg);
/* The loop callback of due_timer: the deadlines of conn->due that passed. */
void conn_on_due(evutil_socket_t fd, short what, void *arg);

/* conn_down.c */

/* Arm the backoff timer for the next connect attempt. */
void conn_backoff(struct conn *conn);
/* Note why the connection is down (err) and tell the owner. */
void conn_failed(struct conn *conn, int err);
/* When the connection failed in TLS rather than in TCP: HILOCK_ETLS in
 * *err, the reason (kept in buf) in *why. */
void conn_tls_cause(struct conn *conn, int *err, const char **why,
                    char *buf, size_t len);
/* The context ac died: say why, forget it, plan a reconnect. */
void conn_lost(struct conn *conn, const struct redisAsyncContext *ac);

/* handshake.c */

/* Send AUTH, SELECT and ROLE, or else PING (the gate), and TIME, ahead of
 * everything else. Returns the number of gate replies to wait for (0:
 * the connection is ready now). */
unsigned conn_handshake(struct conn *conn);

#endif
