/* SPDX-License-Identifier: BSD-3-Clause */
/* sentinel.c -- see sentinel.h.
 *
 * Every sentinel has two connections of its own: one asks, one is
 * subscribed to +switch-master. A round asks all of them at once, each
 * with the connect timeout as its deadline, and a master is taken only
 * when it is named by more than half of the sentinels, or, once every
 * question has ended, by more than half of those that named one: a frozen
 * or dead sentinel costs at most its timeout, and one that lies is
 * outvoted. A +switch-master heard from any of them starts a round (the
 * message itself is not trusted). A round in which no master wins is
 * logged and tried again after the reconnect backoff; until a master is
 * known, the master's requests fail with HILOCK_ECONN. Nothing here
 * advances from one sentinel to the next, so no failure path can land on
 * a sentinel that another path just left. */
#include "sentinel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "clock.h"

/* How soon a round goes again when the sentinels that answered disagreed
 * (one lying, or the others still catching up with a failover). */
#define SENTINEL_RECHECK_MS 1000

struct sentinel;

/* One sentinel and its answer in the current round. */
struct sentry {
    struct sentinel *s;
    struct conn ask;
    struct conn watch;
    struct req *pending;        /* its question, while out */
    uint8_t named;              /* it named host:port this round */
    int port;
    char host[256];
};

struct sentinel {
    struct hilock_options opts; /* the sentinels': their AUTH, no db */
    struct conn_config cfg;
    const char *name;
    size_t n;
    uint8_t in_round;           /* a round is under way */
    uint8_t failed;             /* the last round named no master */
    uint8_t redo;               /* start another when this one ends */
    uint8_t watching;           /* the watch connections were started */
    struct event again;         /* next round */
    const struct sentinel_events *ev;
    void *arg;
    struct sentry *e;           /* n of them */
};

static void decide(struct sentinel *s);

/* The ask connection of a sentinel failed: its question fails now (it
 * counts as no answer), not at its deadline. */
static void on_ask_fail(struct conn *conn, int err)
{
    conn_fail_queued(conn, err);
}

/* A "message" on +switch-master: "<name> <old ip> <old port> <new ip>
 * <new port>". For this name, a round confirms it. */
static void on_watch_reply(redisAsyncContext *ac, void *reply, void *priv)
{
    const redisReply *r = reply;
    struct conn *conn = conn_of(ac);
    char name[256], host[256];
    int port;
    (void)priv;
    if (!conn || !r || r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[2]->type != REDIS_REPLY_STRING ||
        strcmp(r->element[0]->str, "message") != 0)
        return;
    struct sentry *e = conn->owner;
    struct sentinel *s = e->s;
    if (sscanf(r->element[2]->str, "%255s %*s %*s %255s %d", name, host,
               &port) != 3 ||
        strcmp(name, s->name) != 0 || port <= 0 || port > 65535)
        return;
    conn_log(conn, HILOCK_LOG_INFO, "+switch-master to %s:%d", host, port);
    reentry_enter(conn->cfg->reentry);
    evtimer_del(&s->again); /* news: no backoff */
    sentinel_resolve(s);
    reentry_leave(conn->cfg->reentry);
}

static void on_watch_ready(struct conn *conn)
{
    struct resp_buf b;
    char small[64];
    resp_init(&b, small, sizeof(small));
    resp_array(&b, 2);
    resp_arg(&b, "SUBSCRIBE", 9);
    resp_arg(&b, "+switch-master", 14);
    conn_send_with(conn, &b, on_watch_reply);
    resp_free(&b);
}

static const struct conn_hooks ask_hooks = {.on_fail = on_ask_fail};
static const struct conn_hooks watch_hooks = {.on_ready = on_watch_ready};

static void on_again(evutil_socket_t fd, short what, void *arg)
{
    struct sentinel *s = arg;
    reentry_enter(s->cfg.reentry);
    sentinel_resolve(s);
    reentry_leave(s->cfg.reentry);
}

int sentinel_new(struct sentinel **out, const struct conn_config *cfg,
                 const struct hilock_options *o,
                 const struct sentinel_events *ev, void *arg)
{
    struct sentinel *s = calloc(1, sizeof(*s));
    if (!s || !(s->e = calloc(o->sentinel.count, sizeof(*s->e)))) {
        free(s);
        return HILOCK_ENOMEM;
    }
    s->opts = *o;
    s->opts.username = NULL;
    s->opts.password = o->sentinel.password;
    s->opts.db = 0;
    s->cfg = *cfg;
    s->cfg.opts = &s->opts;
    s->cfg.tls = cfg->sentinel_tls;
    s->n = o->sentinel.count;
    s->name = o->sentinel.master_name;
    s->ev = ev;
    s->arg = arg;
    for (size_t i = 0; i < s->n; i++) {
        const struct hilock_endpoint *p = &o->sentinel.nodes[i];
        struct conn_endpoint ep = {p->host, p->port, p->unix_path};
        s->e[i].s = s;
        conn_init(&s->e[i].ask, &s->cfg, &ep, &ask_hooks, &s->e[i],
                  "sentinel");
        conn_init(&s->e[i].watch, &s->cfg, &ep, &watch_hooks, &s->e[i],
                  "sentinel watch");
    }
    evtimer_assign(&s->again, cfg->base, on_again, s);
    *out = s;
    return 0;
}

/* Whether r is [host, port] with a usable host and port; *port set. */
static int master_reply(const redisReply *r, int *port)
{
    char *end;
    long p;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING ||
        r->element[0]->len == 0 || r->element[0]->len >= 256 ||
        memchr(r->element[0]->str, '\0', r->element[0]->len))
        return 0;
    p = strtol(r->element[1]->str, &end, 10);
    if (*end || p <= 0 || p > 65535)
        return 0;
    *port = (int)p;
    return 1;
}

/* A sentinel's answer (or its failure): noted for the round under way. */
static void on_answer(struct req *req, int status, redisReply *reply)
{
    struct sentry *e = req->submitter.ctx;
    struct sentinel *s = e->s;
    int port;
    e->pending = NULL;
    if (status == HILOCK_ECANCELED)
        return; /* shutting down */
    if (status == 0 && master_reply(reply, &port)) {
        memcpy(e->host, reply->element[0]->str, reply->element[0]->len + 1);
        e->port = port;
        e->named = 1;
    } else {
        conn_log(&e->ask, HILOCK_LOG_WARN, "did not name master %s: %s",
                 s->name, status ? hilock_strerror(status) : "no such master");
    }
    if (s->in_round)
        decide(s);
}

/* How many sentinels of this round named the same master as e. */
static size_t votes(const struct sentinel *s, const struct sentry *e)
{
    size_t v = 0;
    for (size_t i = 0; i < s->n; i++)
        v += s->e[i].named && s->e[i].port == e->port &&
             strcmp(s->e[i].host, e->host) == 0;
    return v;
}

/* End the round: master w (NULL: none won); again after ms when ms. */
static void round_end(struct sentinel *s, const struct sentry *w,
                      uint32_t ms)
{
    s->in_round = 0;
    s->failed = w == NULL;
    if (ms) {
        struct timeval tv = clock_tv(ms);
        evtimer_add(&s->again, &tv);
    }
    if (w && !s->watching) {
        s->watching = 1;
        for (size_t i = 0; i < s->n; i++)
            conn_start(&s->e[i].watch);
    }
    if (w)
        s->ev->on_master(s->arg, w->host, w->port);
    else
        s->ev->on_fail(s->arg, HILOCK_ECONN);
    if (s->redo && !s->in_round) {
        s->redo = 0;
        evtimer_del(&s->again);
        sentinel_resolve(s);
    }
}

/* Decide the round when its answers allow: a master named by more than
 * half of all sentinels wins at once; when no question is out, one named
 * by more than half of those that named one. A win over a dissent is
 * checked again shortly. */
static void decide(struct sentinel *s)
{
    const struct sentry *best = NULL;
    size_t top = 0, named = 0, out = 0;
    for (size_t i = 0; i < s->n; i++) {
        out += s->e[i].pending != NULL;
        if (!s->e[i].named)
            continue;
        size_t v = votes(s, &s->e[i]);
        named++;
        if (v > top) {
            top = v;
            best = &s->e[i];
        }
    }
    if (top * 2 > s->n || (out == 0 && top * 2 > named)) {
        round_end(s, best, top == named ? 0 : SENTINEL_RECHECK_MS);
        return;
    }
    if (out > 0)
        return;
    conn_log(&s->e[0].ask, HILOCK_LOG_WARN,
             "no master %s named by a majority of %zu answers", s->name,
             named);
    round_end(s, NULL, s->opts.reconnect_max_ms);
}

/* Ask sentinel e, unless its question of an earlier round is still out
 * (that answer counts for this round). */
static void ask_one(struct sentinel *s, struct sentry *e)
{
    e->named = 0;
    if (e->pending)
        return;
    struct req *r = req_new(&e->ask, on_answer);
    if (!r)
        return;
    r->submitter.ctx = e;
    resp_array(&r->cmd, 3);
    resp_arg(&r->cmd, "SENTINEL", 8);
    resp_arg(&r->cmd, "get-master-addr-by-name", 23);
    resp_arg(&r->cmd, s->name, strlen(s->name));
    e->pending = r;
    if (e->ask.state == CONN_IDLE &&
        !evtimer_pending(&e->ask.retry_timer, NULL))
        conn_start(&e->ask);
    req_submit(r, s->opts.connect_timeout_ms);
}

void sentinel_resolve(struct sentinel *s)
{
    if (s->in_round) {
        s->redo = 1;
        return;
    }
    if (s->failed && evtimer_pending(&s->again, NULL))
        return; /* the backoff after a round without a master */
    evtimer_del(&s->again);
    s->in_round = 1;
    for (size_t i = 0; i < s->n; i++)
        ask_one(s, &s->e[i]);
    for (size_t i = 0; i < s->n; i++)
        if (s->e[i].pending)
            return;
    /* nothing could be asked (no memory): later */
    round_end(s, NULL, s->opts.reconnect_max_ms);
}

void sentinel_free(struct sentinel *s)
{
    if (!s)
        return;
    evtimer_del(&s->again);
    for (size_t i = 0; i < s->n; i++) {
        conn_close(&s->e[i].ask);
        conn_close(&s->e[i].watch);
    }
    free(s->e);
    free(s);
}
