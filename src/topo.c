/* SPDX-License-Identifier: BSD-3-Clause */
/* topo.c -- see topo.h. The fixed nodes (single, Redlock, Sentinel) live
 * here; a cluster's are cluster.c's, a sentinel's resolver sentinel.c's. */
#include "topo.h"

#include <string.h>

#include "cluster.h"
#include "keys.h"
#include "sentinel.h"
#include "slot.h"

static void link_up(void *arg, int reconnected, const char *addr)
{
    struct topo_link *l = arg;
    l->topo->ev->on_up(l->topo->ev->arg, l->member, reconnected, addr);
}

static void link_down(void *arg, int err, const char *addr)
{
    struct topo_link *l = arg;
    struct topo *t = l->topo;
    if (t->sentinel)
        sentinel_resolve(t->sentinel); /* the master may have moved */
    t->ev->on_down(t->ev->arg, l->member, err, addr);
}

static void link_pubsub(void *arg, int up, int err, const char *addr)
{
    struct topo_link *l = arg;
    l->topo->ev->on_pubsub(l->topo->ev->arg, up, err, addr);
}

static void link_release(void *arg, enum sub_kind kind, const char *name,
                         size_t len)
{
    struct topo_link *l = arg;
    l->topo->ev->on_release(l->topo->ev->arg, kind, name, len);
}

static void link_message(void *arg, enum sub_kind kind, const char *name,
                         size_t len, const char *msg, size_t mlen)
{
    struct topo_link *l = arg;
    topo_message(l->topo->ev, kind, name, len, msg, mlen);
}

/* The sentinels name the master at host:port: when that is a move, point
 * nodes[0] there and reconnect it (the same master needs nothing: its
 * connection reconnects by itself). */
static void master_named(void *arg, const char *host, int port)
{
    struct topo *t = arg;
    struct node *n = &t->nodes[0];
    size_t len = strlen(host);
    if (len >= sizeof(t->master_host) ||
        (n->cmd.ep.port == port && strcmp(t->master_host, host) == 0))
        return;
    memcpy(t->master_host, host, len + 1);
    n->cmd.ep.port = n->subs.conn.ep.port = port;
    conn_restart(&n->cmd);
    if (n->subs.conn.state != CONN_IDLE)
        conn_restart(&n->subs.conn);
}

/* No sentinel named the master in a whole round. Until one is known at
 * all, waiting requests fail now rather than at their deadline; once one
 * is, its connection keeps trying it. */
static void master_unknown(void *arg, int err)
{
    struct topo *t = arg;
    if (t->nodes[0].cmd.ep.port == 0)
        conn_fail_queued(&t->nodes[0].cmd, err);
    t->ev->on_down(t->ev->arg, 0, err, NULL);
}

static const struct sentinel_events sentinel_ev = {master_named,
                                                   master_unknown};

int topo_init(struct topo *t, const struct conn_config *cfg,
              const struct hilock_options *o, const char *prefix,
              size_t prefix_len, const struct topo_events *ev)
{
    memset(t, 0, sizeof(*t));
    t->cfg = cfg;
    t->ev = ev;
    t->prefix = prefix;
    t->prefix_len = prefix_len;
    int redlock = o->topology == HILOCK_TOPOLOGY_REDLOCK;
    int sentinel = o->topology == HILOCK_TOPOLOGY_SENTINEL;
    t->members = redlock ? o->redlock.count : 1;
    if (o->topology == HILOCK_TOPOLOGY_CLUSTER)
        return cluster_new(&t->cluster, cfg, o->cluster.seeds,
                           o->cluster.count, prefix, prefix_len, ev);
    const struct hilock_endpoint *eps = redlock ? o->redlock.masters
                                                : &o->node;
    for (size_t i = 0; i < t->members; i++) {
        struct topo_link *l = &t->links[i];
        struct conn_endpoint ep = {eps[i].host, eps[i].port,
                                   eps[i].unix_path};
        l->topo = t;
        l->member = i;
        l->events = (struct node_events){
            l, link_up, link_down, NULL,
            {l, link_message, link_release, link_pubsub, NULL}};
        if (sentinel)
            ep = (struct conn_endpoint){t->master_host, 0, NULL};
        node_init(&t->nodes[i], cfg, &ep, prefix, prefix_len, &l->events);
        t->ninit++;
    }
    if (sentinel) {
        t->nodes[0].cmd.want_master = 1;
        return sentinel_new(&t->sentinel, cfg, o, &sentinel_ev, t);
    }
    return 0;
}

void topo_start(struct topo *t)
{
    if (t->cluster)
        cluster_start(t->cluster);
    else if (t->sentinel)
        sentinel_resolve(t->sentinel); /* nodes[0] starts when it answers */
    else
        for (size_t i = 0; i < t->members; i++)
            node_start(&t->nodes[i]);
}

void topo_close(struct topo *t, uint32_t drain_ms)
{
    if (t->cluster)
        cluster_free(t->cluster, drain_ms);
    t->cluster = NULL;
    for (size_t i = 0; i < t->ninit; i++)
        node_close(&t->nodes[i], drain_ms);
    t->ninit = 0;
    sentinel_free(t->sentinel);
    t->sentinel = NULL;
}

void topo_cancel(struct topo *t)
{
    if (t->cluster)
        cluster_cancel(t->cluster);
    for (size_t i = 0; i < t->ninit; i++)
        conn_cancel_all(&t->nodes[i].cmd);
}

int topo_name_ok(const struct topo *t, const char *name, size_t len)
{
    /* a prefix's own tag (required in a cluster) decides every slot */
    return !t->cluster || t->prefix_len || keys_slot_safe(name, len);
}

unsigned topo_slot(const struct topo *t, const char *name, size_t len)
{
    return t->cluster ? slot_of2(t->prefix, t->prefix_len, name, len) : 0;
}

struct req *topo_request(struct topo *t, size_t member, unsigned slot,
                         req_done_fn *done)
{
    if (t->cluster)
        return cluster_request(t->cluster, slot, done);
    return node_request(&t->nodes[member], done);
}

struct node *topo_node(struct topo *t, size_t member, unsigned slot)
{
    return t->cluster ? cluster_node(t->cluster, slot) : &t->nodes[member];
}

const char *topo_publish(const struct topo *t)
{
    return t->cluster && cluster_sharded(t->cluster) ? "spublish"
                                                     : "publish";
}

int topo_want(struct topo *t, size_t member, const char *name, size_t len,
              enum sub_kind kind)
{
    struct node *n = topo_node(t, member, topo_slot(t, name, len));
    return n ? node_want(n, name, len, kind) : 0; /* no map yet: on_rewant */
}

void topo_unwant(struct topo *t, size_t member, const char *name,
                 size_t len, enum sub_kind kind)
{
    if (t->cluster) {
        cluster_unwant(t->cluster, name, len, kind);
        return;
    }
    node_unwant(&t->nodes[member], name, len, kind);
}

int topo_listening(struct topo *t, size_t member, const char *name,
                   size_t len, enum sub_kind kind)
{
    struct node *n = topo_node(t, member, topo_slot(t, name, len));
    return n && node_listening(n, name, len, kind);
}
