/* SPDX-License-Identifier: BSD-3-Clause */
/* sub.c -- the subscriber connection: one SUBSCRIBE per waited name.
 *
 * hiredis keeps one callback per subscribed channel and replaces it when a
 * channel is subscribed twice, and an UNSUBSCRIBE confirmation deletes it,
 * even if a new SUBSCRIBE for the same channel was sent in between. So this
 * table owns the subscription state, never has two (un)subscribe commands
 * in flight for one channel, and sends the next one only when the previous
 * one is confirmed. Every message and confirmation arrives in one callback
 * that finds the entry by the lock name inside the channel name.
 *
 * When the connection drops, every subscription is gone: entries fall back
 * to SUB_NONE (the waiters' fallback timers keep them going); when it is
 * back, every wanted entry is subscribed again, and each confirmation is
 * reported so the name's head waiter retries once. */
#include "sub.h"

#include <stdlib.h>
#include <string.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "keys.h"
#include "stats.h"

enum sub_state {
    SUB_NONE = 0, /* not subscribed, nothing sent */
    SUB_PENDING,  /* SUBSCRIBE sent, not confirmed yet */
    SUB_ACTIVE,   /* confirmed: releases reach us */
    SUB_LEAVING   /* UNSUBSCRIBE sent, not confirmed yet */
};

/* One channel. Lives while wanted, or while being unsubscribed. */
struct sub {
    struct table_node node;
    uint8_t state;  /* enum sub_state */
    uint8_t wanted; /* the name has waiters */
    uint8_t kind;   /* enum sub_kind */
    size_t name_len;
    char name[];
};

/* The channel head of each kind but SUB_HANDOFF (see keys.h). */
static const char *const channel_head[] = {
    [SUB_RELEASE] = KEYS_CHANNEL_HEAD,
    [SUB_RWLOCK] = KEYS_RWLOCK_CHANNEL_HEAD,
    [SUB_SEM] = KEYS_SEM_CHANNEL_HEAD,
};

static struct sub *sub_find(const struct sub_set *s, const char *name,
                            size_t len, enum sub_kind kind)
{
    uint32_t h = table_hash(name, len, kind);
    for (struct table_node *n = table_first(&s->entries, h); n;
         n = table_next(n)) {
        struct sub *e = TABLE_ENTRY(n, struct sub, node);
        if (e->kind == kind && e->name_len == len &&
            memcmp(e->name, name, len) == 0)
            return e;
    }
    return NULL;
}

static void sub_drop(struct sub_set *s, struct sub *e)
{
    table_remove(&s->entries, &e->node);
    free(e);
}

static void on_sub_reply(redisAsyncContext *ac, void *reply, void *privdata);

/* Append "<cmd> <channel of e>" to b. */
static void sub_encode(struct resp_buf *b, const struct sub_set *s,
                       const struct sub *e, const char *cmd)
{
    struct key_src k = {s->prefix, s->prefix_len, e->name, e->name_len};
    resp_array(b, 2);
    resp_arg(b, cmd, strlen(cmd));
    if (e->kind == SUB_HANDOFF)
        keys_handoff(b, &k, s->ev->listener);
    else
        keys_channel_of(b, &k, channel_head[e->kind]);
}

/* Send SUBSCRIBE or UNSUBSCRIBE for e (their sharded forms on a sharded
 * connection). Returns 0, or -1 when the connection is not ready. */
static int sub_send(struct sub_set *s, struct sub *e, const char *cmd)
{
    char small[256], small2[256];
    struct resp_buf b, wire;
    int rc;
    resp_init(&b, small, sizeof(small));
    sub_encode(&b, s, e, cmd);
    if (!s->conn.sharded) {
        rc = conn_send_with(&s->conn, &b, on_sub_reply);
    } else {
        char scmd[16] = "S";
        strcat(scmd, cmd);
        resp_init(&wire, small2, sizeof(small2));
        sub_encode(&wire, s, e, scmd);
        rc = conn_send_as(&s->conn, &b, &wire, on_sub_reply);
        resp_free(&wire);
    }
    resp_free(&b);
    return rc;
}

/* Subscribe e if wanted and not subscribed. */
static void sub_join(struct sub_set *s, struct sub *e)
{
    if (e->state == SUB_NONE && sub_send(s, e, "SUBSCRIBE") == 0)
        e->state = SUB_PENDING;
}

static void resubscribe_one(struct table_node *n, void *arg)
{
    sub_join(arg, TABLE_ENTRY(n, struct sub, node));
}

static void reset_one(struct table_node *n, void *arg)
{
    struct sub *e = TABLE_ENTRY(n, struct sub, node);
    stats_unsubscribed(((struct sub_set *)arg)->conn.cfg->stats,
                       e->state == SUB_ACTIVE);
    e->state = SUB_NONE;
    if (!e->wanted)
        sub_drop(arg, e);
}

static void sub_on_ready(struct conn *conn)
{
    struct sub_set *s = conn->owner;
    table_each(&s->entries, resubscribe_one, s);
}

static void sub_on_drop(struct conn *conn)
{
    struct sub_set *s = conn->owner;
    table_each(&s->entries, reset_one, s);
}

static void sub_on_fail(struct conn *conn, int err)
{
    struct sub_set *s = conn->owner;
    char addr[CONN_ADDR_MAX];
    s->ev->on_state(s->ev->arg, 0, err, conn_addr(conn, addr, sizeof(addr)));
}

static const struct conn_hooks sub_hooks = {
    .on_ready = sub_on_ready,
    .on_drop = sub_on_drop,
    .on_fail = sub_on_fail,
};

void sub_init(struct sub_set *s, const struct conn_config *cfg,
              const struct conn_endpoint *ep, const char *prefix,
              size_t prefix_len, const struct sub_events *ev)
{
    conn_init(&s->conn, cfg, ep, &sub_hooks, s, "subscriber");
    table_init(&s->entries);
    s->prefix = prefix;
    s->prefix_len = prefix_len;
    s->ev = ev;
}

static void free_one(struct table_node *n, void *arg)
{
    stats_unsubscribed(((struct sub_set *)arg)->conn.cfg->stats,
                       TABLE_ENTRY(n, struct sub, node)->state == SUB_ACTIVE);
    sub_drop(arg, TABLE_ENTRY(n, struct sub, node));
}

void sub_close(struct sub_set *s)
{
    conn_close(&s->conn);
    table_each(&s->entries, free_one, s);
    table_free(&s->entries);
}

int sub_want(struct sub_set *s, const char *name, size_t len,
             enum sub_kind kind)
{
    struct sub *e = sub_find(s, name, len, kind);
    if (!e) {
        if (!(e = calloc(1, sizeof(*e) + len)))
            return HILOCK_ENOMEM;
        e->name_len = len;
        e->kind = (uint8_t)kind;
        memcpy(e->name, name, len);
        if (table_insert(&s->entries, &e->node,
                         table_hash(name, len, kind))) {
            free(e);
            return HILOCK_ENOMEM;
        }
    }
    e->wanted = 1;
    if (s->conn.state == CONN_IDLE &&
        !evtimer_pending(&s->conn.retry_timer, NULL))
        conn_start(&s->conn); /* first need: open the connection */
    sub_join(s, e);
    /* SUB_LEAVING: the confirmation of the UNSUBSCRIBE subscribes again. */
    return 0;
}

void sub_unwant(struct sub_set *s, const char *name, size_t len,
                enum sub_kind kind)
{
    struct sub *e = sub_find(s, name, len, kind);
    if (!e)
        return;
    e->wanted = 0;
    if (e->state == SUB_LEAVING)
        return;
    stats_unsubscribed(s->conn.cfg->stats, e->state == SUB_ACTIVE);
    if (e->state != SUB_NONE && sub_send(s, e, "UNSUBSCRIBE") == 0)
        e->state = SUB_LEAVING;
    else
        sub_drop(s, e);
}

int sub_active(const struct sub_set *s, const char *name, size_t len,
               enum sub_kind kind)
{
    const struct sub *e = sub_find(s, name, len, kind);
    return e && e->state == SUB_ACTIVE;
}

void sub_rejoin(struct sub_set *s)
{
    if (s->conn.state == CONN_READY)
        table_each(&s->entries, resubscribe_one, s);
}

struct each_ctx {
    sub_name_fn *fn;
    void *arg;
};

static void wanted_one(struct table_node *n, void *arg)
{
    struct each_ctx *c = arg;
    struct sub *e = TABLE_ENTRY(n, struct sub, node);
    if (e->wanted)
        c->fn(c->arg, e->name, e->name_len, (enum sub_kind)e->kind);
}

void sub_each_wanted(struct sub_set *s, sub_name_fn *fn, void *arg)
{
    struct each_ctx c = {fn, arg};
    table_each(&s->entries, wanted_one, &c);
}

/* Apply one "subscribe", "message" (msg) or "unsubscribe" reply about
 * name's channel of kind sk. */
static void sub_event(struct sub_set *s, const char *kind, const char *name,
                      size_t len, enum sub_kind sk, const redisReply *msg)
{
    struct sub *e = sub_find(s, name, len, sk);
    if (!e)
        return;
    if (strcmp(kind, "message") == 0) {
        if (sk != SUB_HANDOFF)
            s->ev->on_message(s->ev->arg, sk, name, len, NULL, 0);
        else if (msg && msg->type == REDIS_REPLY_STRING)
            s->ev->on_message(s->ev->arg, sk, name, len, msg->str,
                              msg->len);
    } else if (strcmp(kind, "subscribe") == 0) {
        if (e->state == SUB_PENDING) {
            e->state = SUB_ACTIVE;
            s->conn.cfg->stats->subscriptions++;
            conn_proven(&s->conn);
            char addr[CONN_ADDR_MAX];
            s->ev->on_state(s->ev->arg, 1, 0,
                            conn_addr(&s->conn, addr, sizeof(addr)));
            s->ev->on_subscribed(s->ev->arg, sk, name, len);
        }
    } else if (strcmp(kind, "unsubscribe") == 0 && e->state == SUB_LEAVING) {
        e->state = SUB_NONE;
        if (!e->wanted)
            sub_drop(s, e);
        else
            sub_join(s, e);
    } else if (strcmp(kind, "unsubscribe") == 0) {
        /* Not asked for: the server dropped it (its slot moved away). */
        stats_unsubscribed(s->conn.cfg->stats, e->state == SUB_ACTIVE);
        e->state = SUB_NONE;
        if (s->ev->on_evicted)
            s->ev->on_evicted(s->ev->arg, name, len);
    }
}

static void on_sub_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    const redisReply *r = reply;
    struct conn *conn = conn_of(ac);
    const char *name[2];
    size_t len[2];
    if (!conn || !r || r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING)
        return; /* NULL: the context is going away; on_drop handles it */
    struct sub_set *s = conn->owner;
    const char *ch = r->element[1]->str;
    size_t chlen = r->element[1]->len;
    int n;
    struct reentry *re = conn->cfg->reentry;
    reentry_enter(re);
    for (int k = SUB_RELEASE; k <= SUB_SEM; k++) {
        n = k == SUB_HANDOFF ? 0
                             : keys_channel_names_of(channel_head[k],
                                                     s->prefix, s->prefix_len,
                                                     ch, chlen, name, len);
        for (int i = 0; i < n; i++)
            sub_event(s, r->element[0]->str, name[i], len[i],
                      (enum sub_kind)k, r->element[2]);
    }
    n = s->ev->listener
            ? keys_handoff_names(s->prefix, s->prefix_len, s->ev->listener,
                                 ch, chlen, name, len)
            : 0;
    for (int i = 0; i < n; i++)
        sub_event(s, r->element[0]->str, name[i], len[i], SUB_HANDOFF,
                  r->element[2]);
    reentry_leave(re);
}
