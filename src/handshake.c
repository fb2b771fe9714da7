/* SPDX-License-Identifier: BSD-3-Clause */
/* handshake.c -- what a new connection sends before any request: the
 * gate, and the measure of the server's clock.
 *
 * After connecting, AUTH and SELECT (or PING, when there is neither) go
 * out first and every request waits until they are accepted: a request
 * must never run as another user or in another database, and the
 * connection is not up before the peer has shown it is a Redis that takes
 * our commands. A refused handshake fails the waiting requests with its
 * cause. With Sentinel, ROLE must say master. The command connection also
 * asks the server's TIME, so that a renewal can carry a deadline in the
 * server's clock (see watchdog.c). Scripts are loaded by the node once the
 * gate is open (node.c). */
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "conn.h"
#include "conn_impl.h"
#include "reply.h"

/* Tags of the handshake replies (privdata of on_gate_reply). */
static char gate_auth, gate_select, gate_role, gate_ping;

/* The command a handshake reply answers, for logs. */
static const char *gate_name(const void *tag)
{
    return tag == &gate_auth     ? "AUTH"
           : tag == &gate_select ? "SELECT"
           : tag == &gate_role   ? "ROLE"
                                 : "PING";
}

/* Whether a ROLE reply names a master. */
static int role_is_master(const redisReply *rep)
{
    return rep->type == REDIS_REPLY_ARRAY && rep->elements > 0 &&
           rep->element[0]->type == REDIS_REPLY_STRING &&
           strcmp(rep->element[0]->str, "master") == 0;
}

/* A reply to AUTH, SELECT, ROLE or PING: the last one accepted opens the
 * gate; a refusal fails the waiting requests and drops the connection.
 * Any answer to PING but NOAUTH will do (an ACL may deny PING itself). A
 * server that is no master (the sentinels' answer is out of date) is only
 * dropped: the requests wait for the next one. */
static void on_gate_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    redisReply *rep = reply;
    struct conn *conn = ac->data;
    if (!conn || !rep || conn->state != CONN_HANDSHAKE)
        return; /* the context is going away */
    struct reentry *re = conn->cfg->reentry;
    reentry_enter(re);
    if (privdata == &gate_role && !role_is_master(rep)) {
        conn_log_down(conn, HILOCK_EREADONLY, "not a master");
        conn_abort(conn, HILOCK_EREADONLY, 0);
    } else if (rep->type == REDIS_REPLY_ERROR &&
               (privdata != &gate_ping ||
                reply_error_code(rep) == HILOCK_EAUTH)) {
        int err = privdata == &gate_auth ? HILOCK_EAUTH
                                         : reply_error_code(rep);
        char text[REPLY_SCRUB_MAX];
        conn_log_down(conn, err, "%s refused: %s", gate_name(privdata),
                      reply_error_scrub(rep->str, rep->len, text,
                                        sizeof(text)));
        conn_abort(conn, err, 1);
    } else if (--conn->gate == 0) {
        conn_ready(conn);
    }
    reentry_leave(re);
}

/* How long one measurement of the server's clock stands as the best one:
 * the two clocks drift apart by a few parts per million. */
#define CLOCK_KEEP_MS 60000
/* Shortest interval between measurements asked by conn_clock_refresh. */
#define CLOCK_REFRESH_MS 1000

/* The reply to TIME: [seconds, microseconds] of the server's clock. The
 * server read its clock somewhere between our send and now, so taking "now"
 * as the moment of reading gives an offset that is never too large: a
 * deadline converted with it falls no later than the one we meant. The
 * error is the round trip, and a slow one (a busy loop) would make every
 * deadline early: of the measurements of the last CLOCK_KEEP_MS, the
 * largest offset -- the one with the shortest round trip -- is kept. */
static void on_clock_reply(redisAsyncContext *ac, void *reply, void *priv)
{
    redisReply *rep = reply;
    struct conn *conn = ac->data;
    uint64_t now_ms = clock_now_ms();
    if (!conn || !rep || rep->type != REDIS_REPLY_ARRAY ||
        rep->elements != 2 || rep->element[0]->type != REDIS_REPLY_STRING ||
        rep->element[1]->type != REDIS_REPLY_STRING)
        return;
    uint64_t server_us = strtoull(rep->element[0]->str, NULL, 10) * 1000000u +
                         strtoull(rep->element[1]->str, NULL, 10);
    int64_t offset = (int64_t)server_us - (int64_t)clock_now_us();
    if (server_us == 0)
        return;
    if (!conn->clock_known || offset > conn->clock_offset_us ||
        now_ms - conn->clock_best_ms > CLOCK_KEEP_MS) {
        conn->clock_offset_us = offset;
        conn->clock_best_ms = now_ms;
    }
    conn->clock_known = 1;
}

void conn_clock_refresh(struct conn *conn)
{
    uint64_t now = clock_now_ms();
    struct resp_buf b;
    char small[32];
    if (conn->state != CONN_READY ||
        now - conn->clock_asked_ms < CLOCK_REFRESH_MS)
        return;
    conn->clock_asked_ms = now;
    resp_init(&b, small, sizeof(small));
    resp_array(&b, 1);
    resp_arg(&b, "TIME", 4);
    conn_send_formatted(conn, &b, on_clock_reply, NULL);
    resp_free(&b);
}

/* The script compares the server's time in whole ms with the deadline:
 * one ms off the exact conversion covers that rounding. */
uint64_t conn_server_ms(const struct conn *conn, uint64_t local_ms)
{
    if (!conn->clock_known)
        return 0;
    int64_t us = (int64_t)local_ms * 1000 + conn->clock_offset_us;
    return us > 2000 ? (uint64_t)(us / 1000 - 1) : 1;
}

/* Send one handshake command; fn gets its reply with tag. */
static void handshake_send(struct conn *conn, struct resp_buf *b,
                           conn_reply_fn *fn, void *tag)
{
    if (conn_send_formatted(conn, b, fn, tag) == 0 && fn == on_gate_reply)
        conn->gate++;
    resp_reset(b);
}

/* AUTH, SELECT and ROLE, or else PING (the gate), and TIME, ahead of
 * everything else. Returns the number of gate replies to wait for. */
unsigned conn_handshake(struct conn *conn)
{
    const struct hilock_options *o = conn->cfg->opts;
    struct resp_buf b;
    char small[256];
    resp_init(&b, small, sizeof(small));
    conn->gate = 0;
    if (o->password) {
        resp_array(&b, o->username ? 3 : 2);
        resp_arg(&b, "AUTH", 4);
        if (o->username)
            resp_arg(&b, o->username, strlen(o->username));
        resp_arg(&b, o->password, strlen(o->password));
        handshake_send(conn, &b, on_gate_reply, &gate_auth);
    }
    if (o->db > 0) {
        resp_array(&b, 2);
        resp_arg(&b, "SELECT", 6);
        resp_arg_u64(&b, (unsigned long long)o->db);
        handshake_send(conn, &b, on_gate_reply, &gate_select);
    }
    if (conn->want_master) {
        resp_array(&b, 1);
        resp_arg(&b, "ROLE", 4);
        handshake_send(conn, &b, on_gate_reply, &gate_role);
    }
    if (conn->gate == 0) {
        /* Nothing else proves the peer is a Redis that takes commands
         * from us (no requirepass, not some other service). */
        resp_array(&b, 1);
        resp_arg(&b, "PING", 4);
        handshake_send(conn, &b, on_gate_reply, &gate_ping);
    }
    if (conn->want_clock) {
        resp_array(&b, 1);
        resp_arg(&b, "TIME", 4);
        handshake_send(conn, &b, on_clock_reply, NULL);
    }
    resp_free(&b);
    return conn->gate;
}
