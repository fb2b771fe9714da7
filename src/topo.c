/* SPDX-License-Identifier: BSD-3-Clause */
/* topo.c -- see topo.h. The dispatch to the backend chosen at init, and
 * the fixed nodes that the one-node, Redlock and Sentinel backends share
 * (a cluster's nodes are cluster.c's). Nothing here asks which backend it
 * has, but topo_choose. */
#include "topo.h"

#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "slot.h"
#include "topo_backend.h"

/* The backend the options ask for (o->topology, checked by the client):
 * the one place that reads them so. */
static const struct topo_ops *topo_choose(const struct hilock_options *o)
{
    static const struct topo_ops *const backends[] = {
        [HILOCK_TOPOLOGY_NODE] = &topo_node_ops,
        [HILOCK_TOPOLOGY_SENTINEL] = &topo_sentinel_ops,
        [HILOCK_TOPOLOGY_CLUSTER] = &topo_cluster_ops,
        [HILOCK_TOPOLOGY_REDLOCK] = &topo_redlock_ops,
    };
    return backends[o->topology];
}

int topo_init(struct topo *t, const struct conn_config *cfg,
              const struct hilock_options *o, const char *prefix,
              size_t prefix_len, const struct topo_events *ev)
{
    memset(t, 0, sizeof(*t));
    t->ops = topo_choose(o);
    t->cfg = cfg;
    t->ev = ev;
    t->prefix = prefix;
    t->prefix_len = prefix_len;
    t->members = 1;
    return t->ops->init(t, o);
}

void topo_start(struct topo *t)
{
    t->ops->start(t);
}

void topo_close(struct topo *t, uint32_t drain_ms)
{
    if (t->impl)
        t->ops->close(t, drain_ms);
    t->impl = NULL;
}

void topo_cancel(struct topo *t)
{
    if (t->impl)
        t->ops->cancel(t);
}

int topo_slotted(const struct topo *t)
{
    return t->ops->slotted;
}

int topo_name_ok(const struct topo *t, const char *name, size_t len)
{
    /* a prefix's own tag (required in a cluster) decides every slot */
    return !t->ops->slotted || t->prefix_len || keys_slot_safe(name, len);
}

unsigned topo_slot(const struct topo *t, const char *name, size_t len)
{
    return t->ops->slotted ? slot_of2(t->prefix, t->prefix_len, name, len)
                           : 0;
}

struct req *topo_request(struct topo *t, size_t member, unsigned slot,
                         req_done_fn *done)
{
    return t->ops->request(t, member, slot, done);
}

struct node *topo_node(struct topo *t, size_t member, unsigned slot)
{
    return t->ops->node(t, member, slot);
}

const char *topo_publish(const struct topo *t)
{
    return t->ops->publish(t);
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
    t->ops->unwant(t, member, name, len, kind);
}

int topo_listening(struct topo *t, size_t member, const char *name,
                   size_t len, enum sub_kind kind)
{
    struct node *n = topo_node(t, member, topo_slot(t, name, len));
    return n && node_listening(n, name, len, kind);
}

/* The fixed nodes. Their events go up as member i's. */

static void link_up(void *arg, int reconnected, const char *addr)
{
    struct topo_link *l = arg;
    l->topo->ev->on_up(l->topo->ev->arg, l->member, reconnected, addr);
}

static void link_down(void *arg, int err, const char *addr)
{
    struct topo_link *l = arg;
    struct topo *t = l->topo;
    struct topo_fixed *f = t->impl;
    if (f->on_down)
        f->on_down(t);
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

void topo_fixed_init(struct topo_fixed *f, struct topo *t,
                     const struct conn_endpoint *eps, size_t n)
{
    t->members = n;
    for (size_t i = 0; i < n; i++) {
        struct topo_link *l = &f->links[i];
        l->topo = t;
        l->member = i;
        l->events = (struct node_events){
            l, link_up, link_down, NULL,
            {l, link_message, link_release, link_pubsub, NULL,
             t->ev->listener}};
        node_init(&l->node, t->cfg, &eps[i], t->prefix, t->prefix_len,
                  &l->events);
        f->n++;
    }
}

int topo_fixed_new(struct topo *t, const struct hilock_endpoint *eps,
                   size_t n)
{
    struct topo_fixed *f = calloc(1, sizeof(*f));
    struct conn_endpoint ce[HILOCK_MASTERS_MAX];
    if (!f)
        return HILOCK_ENOMEM;
    n = n < HILOCK_MASTERS_MAX ? n : HILOCK_MASTERS_MAX;
    for (size_t i = 0; i < n; i++)
        ce[i] = (struct conn_endpoint){eps[i].host, eps[i].port,
                                       eps[i].unix_path};
    t->impl = f;
    topo_fixed_init(f, t, ce, n);
    return 0;
}

void topo_fixed_start(struct topo *t)
{
    struct topo_fixed *f = t->impl;
    for (size_t i = 0; i < f->n; i++)
        node_start(&f->links[i].node);
}

void topo_fixed_close(struct topo *t, uint32_t drain_ms)
{
    struct topo_fixed *f = t->impl;
    for (size_t i = 0; i < f->n; i++)
        node_close(&f->links[i].node, drain_ms);
    free(f);
    t->impl = NULL;
}

void topo_fixed_cancel(struct topo *t)
{
    struct topo_fixed *f = t->impl;
    for (size_t i = 0; i < f->n; i++)
        conn_cancel_all(&f->links[i].node.cmd);
}

struct req *topo_fixed_request(struct topo *t, size_t member, unsigned slot,
                               req_done_fn *done)
{
    struct topo_fixed *f = t->impl;
    (void)slot;
    return node_request(&f->links[member].node, done);
}

struct node *topo_fixed_node(struct topo *t, size_t member, unsigned slot)
{
    struct topo_fixed *f = t->impl;
    (void)slot;
    return &f->links[member].node;
}

const char *topo_fixed_publish(const struct topo *t)
{
    (void)t;
    return "publish";
}

void topo_fixed_unwant(struct topo *t, size_t member, const char *name,
                       size_t len, enum sub_kind kind)
{
    struct topo_fixed *f = t->impl;
    node_unwant(&f->links[member].node, name, len, kind);
}
