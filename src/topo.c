/* SPDX-License-Identifier: BSD-3-Clause */
/* topo.c -- see topo.h. The dispatch to the backend chosen at init, and
 * the nodes' pub/sub news, which every backend sends up alike. Nothing
 * here asks which backend it has, but topo_choose. */
#include "topo.h"

#include <stdlib.h>
#include <string.h>

#include "hot.h"
#include "keys.h"
#include "slot.h"
#include "topo_backend.h"

/* The backend the options ask for (o->topology, checked by the client):
 * the one place that reads them so. */
static const struct topo_ops *topo_choose(const struct hilock_options *o)
{
    static const struct topo_ops *const backends[] = {
        [HILOCK_TOPOLOGY_NODE] = &topo_fixed_ops,
        [HILOCK_TOPOLOGY_SENTINEL] = &topo_sentinel_ops,
        [HILOCK_TOPOLOGY_CLUSTER] = &topo_cluster_ops,
        [HILOCK_TOPOLOGY_REDLOCK] = &topo_fixed_ops,
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
        t->ops->route->cancel(t);
}

int topo_slotted(const struct topo *t)
{
    return t->ops->route->slotted;
}

int topo_name_ok(const struct topo *t, const char *name, size_t len)
{
    /* a prefix's own tag (required in a cluster) decides every slot */
    return !topo_slotted(t) || t->prefix_len || keys_slot_safe(name, len);
}

unsigned topo_slot(const struct topo *t, const char *name, size_t len)
{
    return topo_slotted(t) ? slot_of2(t->prefix, t->prefix_len, name, len)
                           : 0;
}

HILOCK_HOT
struct req *topo_request(struct topo *t, size_t member, unsigned slot,
                         req_done_fn *done)
{
    return t->ops->route->request(t, member, slot, done);
}

struct node *topo_node(struct topo *t, size_t member, unsigned slot)
{
    return t->ops->route->node(t, member, slot);
}

HILOCK_HOT
const char *topo_publish(const struct topo *t)
{
    return t->ops->route->publish(t);
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
    t->ops->route->unwant(t, member, name, len, kind);
}

int topo_listening(struct topo *t, size_t member, const char *name,
                   size_t len, enum sub_kind kind)
{
    struct node *n = topo_node(t, member, topo_slot(t, name, len));
    return n && node_listening(n, name, len, kind);
}

/* A node's pub/sub news, whichever member it is: t's. */

static void sub_message(void *arg, enum sub_kind kind, const char *name,
                        size_t len, const char *msg, size_t mlen)
{
    struct topo *t = arg;
    topo_message(t->ev, kind, name, len, msg, mlen);
}

static void sub_subscribed(void *arg, enum sub_kind kind, const char *name,
                           size_t len)
{
    struct topo *t = arg;
    t->ev->on_release(t->ev->arg, kind, name, len);
}

static void sub_state(void *arg, int up, int err, const char *addr)
{
    struct topo *t = arg;
    t->ev->on_pubsub(t->ev->arg, up, err, addr);
}

struct sub_events topo_sub_events(struct topo *t,
                                  void (*on_evicted)(void *arg,
                                                     const char *name,
                                                     size_t len))
{
    return (struct sub_events){t, sub_message, sub_subscribed, sub_state,
                               on_evicted, t->ev->listener};
}
