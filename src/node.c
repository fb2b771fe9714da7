/* SPDX-License-Identifier: BSD-3-Clause */
/* node.c -- see node.h.
 *
 * Scripts are called with EVALSHA; the node sends SCRIPT LOAD for all of
 * them right after the command connection is up, and a NOSCRIPT reply
 * (restart, failover, SCRIPT FLUSH) makes the request load its script and
 * go out once more, behind the load on the same connection. A server that
 * does not take the load (SCRIPT refused by an ACL or renamed: NOSCRIPT
 * again) or refuses EVALSHA gets the request as EVAL with the script's
 * body instead. The trade-off: on such a server every script call costs
 * a second round trip (EVALSHA, then EVAL); the request's encoding is
 * made by its submitter, which knows nothing of the node. */
#include "node.h"

#include <hiredis/hiredis.h>

#include "hot.h"
#include "reply.h"
#include "wire.h"

/* Send SCRIPT LOAD for script id. */
static void node_load_script(struct conn *conn, enum script_id id)
{
    struct resp_buf b;
    size_t len;
    const char *body = script_body(id, &len);
    resp_init(&b, NULL, 0);
    resp_array(&b, 3);
    resp_arg(&b, "SCRIPT", 6);
    resp_arg(&b, "LOAD", 4);
    resp_arg(&b, body, len);
    conn_send_raw(conn, &b);
    resp_free(&b);
}

static void cmd_on_ready(struct conn *conn)
{
    struct node *n = conn->owner;
    char addr[CONN_ADDR_MAX];
    n->by_body = 0;
    for (int i = 0; i < SCRIPT_COUNT; i++)
        node_load_script(conn, (enum script_id)i);
    n->ev->on_up(n->ev->arg, conn->connects > 1,
                 conn_addr(conn, addr, sizeof(addr)));
}

static void cmd_on_fail(struct conn *conn, int err)
{
    struct node *n = conn->owner;
    char addr[CONN_ADDR_MAX];
    n->ev->on_down(n->ev->arg, err, conn_addr(conn, addr, sizeof(addr)));
}

/* Make r, refused as EVALSHA (reply), an EVAL of its script's body; the
 * first such refusal on a connection is logged. Nonzero when done. */
static int node_send_body(struct node *n, struct req *r,
                          const redisReply *reply)
{
    size_t len;
    const char *body = script_body((enum script_id)(r->node.script - 1), &len);
    if (wire_eval_body(&r->cmd, body, len) != 0)
        return 0;
    r->node.reloaded = 2;
    if (!n->by_body) {
        char text[REPLY_SCRUB_MAX]; /* the refusal may echo arguments */
        conn_log(&n->cmd, HILOCK_LOG_WARN,
                 "%s: scripts go with their bodies (EVAL)",
                 reply_error_scrub(reply->str, reply->len, text,
                                   sizeof(text)));
    }
    n->by_body = 1;
    return 1;
}

/* How long a request waits before it goes again to a cluster that is
 * busy (TRYAGAIN: a multi-key command during a slot migration) or down
 * (CLUSTERDOWN: a failover under way), or to a server still loading its
 * data set (LOADING); its deadline still bounds it. */
#define NODE_RETRY_MS 25

/* A cluster's redirect or retry; NOSCRIPT: load the script r runs, then
 * send r again behind the load; a plain command refused, or a checked one
 * answered with what only a script settles: it goes again as what its
 * owner makes of it (the script it stands for). */
static int cmd_on_error(struct conn *conn, struct req *r, redisReply *reply)
{
    struct node *n = conn->owner;
    struct reply_redirect to;
    if (reply->type != REDIS_REPLY_ERROR) { /* checked (conn.h) */
        if (!r->refresh || !reply_look_defers(reply))
            return 0;
        r->refresh(r, REQ_AGAIN_SCRIPT);
        conn_resend(conn, r);
        return 1;
    }
    enum reply_redirect_kind kind = reply_redirect(reply, &to);
    if (kind != REPLY_NOT_REDIRECT && r->refresh)
        r->refresh(r, REQ_AGAIN_REFUSED); /* it goes again as a new one */
    if (kind == REPLY_RETRY) {
        conn_resend_later(conn, r, NODE_RETRY_MS);
        return 1;
    }
    if (kind != REPLY_NOT_REDIRECT)
        return n->ev->on_redirect &&
               n->ev->on_redirect(n->ev->arg, r, kind == REPLY_ASK, &to);
    if (r->plain.active && r->refresh) {
        int refused = reply_plain_refused(reply);
        char text[REPLY_SCRUB_MAX];
        if (refused)
            conn_log(conn, HILOCK_LOG_WARN,
                     "%s: no plain fast path, scripts only from now on",
                     reply_error_scrub(reply->str, reply->len, text,
                                       sizeof(text)));
        r->refresh(r, refused               ? REQ_AGAIN_NO_PLAIN
                      : reply_busykey(reply) ? REQ_AGAIN_BUSYKEY
                                             : REQ_AGAIN_SCRIPT);
        conn_resend(conn, r);
        return 1;
    }
    if (!r->node.script || r->node.reloaded > 1)
        return 0;
    int noscript = reply_is_noscript(reply);
    if (!noscript && !reply_evalsha_refused(reply))
        return 0;
    if (noscript && !r->node.reloaded && !n->by_body) {
        node_load_script(conn, (enum script_id)(r->node.script - 1));
        r->node.reloaded = 1;
    } else if (!node_send_body(n, r, reply)) {
        return 0;
    }
    if (r->refresh)
        r->refresh(r, REQ_AGAIN_REFUSED);
    conn_resend(conn, r);
    return 1;
}

static const struct conn_hooks cmd_hooks = {
    .on_ready = cmd_on_ready,
    .on_fail = cmd_on_fail,
    .on_error = cmd_on_error,
};

void node_init(struct node *n, const struct conn_config *cfg,
               const struct conn_endpoint *ep, const char *prefix,
               size_t prefix_len, const struct node_events *ev)
{
    n->ev = ev;
    n->suspect = 0;
    script_set_init(&n->scripts);
    conn_init(&n->cmd, cfg, ep, &cmd_hooks, n, "command");
    n->cmd.want_clock = 1;
    sub_init(&n->subs, cfg, ep, prefix, prefix_len, &ev->pubsub);
}

void node_start(struct node *n)
{
    conn_start(&n->cmd);
}

void node_close(struct node *n, uint32_t drain_ms)
{
    conn_cancel_all(&n->cmd);
    conn_drain(&n->cmd, drain_ms);
    conn_close(&n->cmd);
    sub_close(&n->subs);
}

void node_move(struct node *n, int port)
{
    n->cmd.ep.port = n->subs.conn.ep.port = port;
    conn_restart(&n->cmd);
    if (n->subs.conn.state != CONN_IDLE)
        conn_restart(&n->subs.conn);
}

int node_addressed(const struct node *n)
{
    return n->cmd.ep.port != 0 || n->cmd.ep.unix_path != NULL;
}

void node_fail_queued(struct node *n, int err)
{
    conn_fail_queued(&n->cmd, err);
}

/* The deadline of a suspect master's vote: long enough for a master that
 * answers, short beside a lease, so that a frozen or cut-off master costs
 * one full deadline, not one per vote. */
#define NODE_SUSPECT_MS 5

int node_down(const struct node *n)
{
    const struct conn *c = &n->cmd;
    return c->err && (c->state == CONN_IDLE || c->state == CONN_CONNECTING);
}

int node_suspect(const struct node *n)
{
    return n->suspect;
}

uint32_t node_vote_ms(const struct node *n, uint32_t timeout_ms)
{
    uint32_t t =
        timeout_ms ? timeout_ms : n->cmd.cfg->opts->request_timeout_ms;
    return n->suspect && NODE_SUSPECT_MS < t ? NODE_SUSPECT_MS : timeout_ms;
}

void node_voted(struct node *n, int timed_out)
{
    n->suspect = timed_out != 0;
}

HILOCK_HOT
struct req *node_request(struct node *n, req_done_fn *done)
{
    return req_new(&n->cmd, done);
}

void node_eval(struct req *r, enum script_id id)
{
    r->node.script = (uint8_t)(id + 1);
}

void node_req_moved(struct req *r)
{
    r->node.reloaded = 0; /* the new node may lack the script */
}

const char *node_sha(const struct node *n, enum script_id id)
{
    return n->scripts.sha[id];
}

void node_clock_refresh(struct node *n)
{
    conn_clock_refresh(&n->cmd);
}

uint64_t node_server_ms(const struct node *n, uint64_t local_ms)
{
    return conn_server_ms(&n->cmd, local_ms);
}

int node_want(struct node *n, const char *name, size_t len,
              enum sub_kind kind)
{
    return sub_want(&n->subs, name, len, kind);
}

void node_unwant(struct node *n, const char *name, size_t len,
                 enum sub_kind kind)
{
    sub_unwant(&n->subs, name, len, kind);
}

int node_listening(const struct node *n, const char *name, size_t len,
                   enum sub_kind kind)
{
    return sub_active(&n->subs, name, len, kind);
}
