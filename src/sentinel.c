/* sentinel.c -- see sentinel.h.
 *
 * Two connections to the current sentinel: one asks, one is subscribed to
 * +switch-master. Either failing moves both to the next sentinel, and a
 * question still waiting goes there. A round in which no sentinel named
 * the master is logged and tried again after the reconnect backoff; until
 * a master is known, the master's requests fail with HILOCK_ECONN at their
 * deadline. */
#include "sentinel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "clock.h"

struct sentinel {
    struct hilock_options opts; /* the sentinels': their AUTH, no db */
    struct conn_config cfg;
    const struct hilock_endpoint *eps;
    size_t n, cur;
    const char *name;
    struct conn ask;
    struct conn watch;
    struct req *pending;        /* get-master-addr-by-name in flight */
    size_t tried;               /* sentinels asked in this round */
    struct event again;         /* next round */
    const struct sentinel_events *ev;
    void *arg;
};

/* Point both connections at the next sentinel and reconnect them. */
static void next_sentinel(struct sentinel *s)
{
    const struct hilock_endpoint *e;
    s->cur = (s->cur + 1) % s->n;
    e = &s->eps[s->cur];
    s->ask.ep = s->watch.ep =
        (struct conn_endpoint){e->host, e->port, e->unix_path};
    conn_restart(&s->ask);
    if (s->watch.state != CONN_IDLE || s->watch.connects)
        conn_restart(&s->watch);
}

static void on_conn_fail(struct conn *conn, int err)
{
    struct sentinel *s = conn->owner;
    (void)err;
    if (s->n > 1)
        next_sentinel(s);
}

/* A "message" on +switch-master: "<name> <old ip> <old port> <new ip>
 * <new port>". */
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
    struct sentinel *s = conn->owner;
    if (sscanf(r->element[2]->str, "%255s %*s %*s %255s %d", name, host,
               &port) != 3 ||
        strcmp(name, s->name) != 0 || port <= 0 || port > 65535)
        return;
    conn_log(conn, HILOCK_LOG_INFO, "+switch-master to %s:%d", host, port);
    reentry_enter(conn->cfg->guard);
    s->ev->on_master(s->arg, host, port);
    reentry_leave(conn->cfg->guard);
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

static const struct conn_hooks ask_hooks = {.on_fail = on_conn_fail};
static const struct conn_hooks watch_hooks = {.on_ready = on_watch_ready,
                                              .on_fail = on_conn_fail};

static void on_again(evutil_socket_t fd, short what, void *arg)
{
    struct sentinel *s = arg;
    reentry_enter(s->cfg.guard);
    sentinel_resolve(s);
    reentry_leave(s->cfg.guard);
}

int sentinel_new(struct sentinel **out, const struct conn_config *cfg,
                 const struct hilock_options *o,
                 const struct sentinel_events *ev, void *arg)
{
    struct sentinel *s = calloc(1, sizeof(*s));
    if (!s)
        return HILOCK_ENOMEM;
    s->opts = *o;
    s->opts.username = NULL;
    s->opts.password = o->sentinel_password;
    s->opts.db = 0;
    s->cfg = *cfg;
    s->cfg.opts = &s->opts;
    s->cfg.tls = cfg->sentinel_tls;
    s->eps = o->sentinels;
    s->n = o->nsentinels;
    s->name = o->master_name;
    s->ev = ev;
    s->arg = arg;
    struct conn_endpoint ep = {s->eps[0].host, s->eps[0].port,
                               s->eps[0].unix_path};
    conn_init(&s->ask, &s->cfg, &ep, &ask_hooks, s, "sentinel");
    conn_init(&s->watch, &s->cfg, &ep, &watch_hooks, s, "sentinel watch");
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

static void on_answer(struct req *req, int status, redisReply *reply)
{
    struct sentinel *s = req->ctx;
    int port;
    s->pending = NULL;
    if (status == HILOCK_ECANCELED)
        return; /* shutting down */
    if (status == 0 && master_reply(reply, &port)) {
        s->tried = 0;
        if (s->watch.state == CONN_IDLE && !s->watch.connects)
            conn_start(&s->watch);
        s->ev->on_master(s->arg, reply->element[0]->str, port);
        return;
    }
    conn_log(&s->ask, HILOCK_LOG_WARN, "%s:%d did not name master %s: %s",
             s->ask.ep.host ? s->ask.ep.host : s->ask.ep.unix_path,
             s->ask.ep.port, s->name,
             status ? hilock_strerror(status) : "no such master");
    if (++s->tried < s->n) {
        next_sentinel(s);
        sentinel_resolve(s);
        return;
    }
    s->tried = 0;
    struct timeval tv = clock_tv(s->opts.reconnect_max_ms);
    evtimer_add(&s->again, &tv);
    s->ev->on_fail(s->arg, HILOCK_ECONN);
}

void sentinel_resolve(struct sentinel *s)
{
    if (s->pending || evtimer_pending(&s->again, NULL))
        return;
    struct req *r = req_new(&s->ask, on_answer);
    if (!r)
        return;
    r->ctx = s;
    resp_array(&r->cmd, 3);
    resp_arg(&r->cmd, "SENTINEL", 8);
    resp_arg(&r->cmd, "get-master-addr-by-name", 23);
    resp_arg(&r->cmd, s->name, strlen(s->name));
    s->pending = r;
    if (s->ask.state == CONN_IDLE && !evtimer_pending(&s->ask.retry_timer,
                                                      NULL))
        conn_start(&s->ask);
    req_submit(r, s->opts.connect_timeout_ms);
}

void sentinel_free(struct sentinel *s)
{
    if (!s)
        return;
    evtimer_del(&s->again);
    conn_close(&s->ask);
    conn_close(&s->watch);
    free(s);
}
