/* SPDX-License-Identifier: BSD-3-Clause */
/* cluster.c -- the Cluster topology: the slot map and one node per server.
 *
 * The map comes from CLUSTER SLOTS, asked of a node that is up: at start,
 * after a MOVED (which also fixes its one slot at once), when a node goes
 * down (its slots may fail over to a replica) and while a mapped master
 * stays down. Requests carry their slot: they go to its master, follow
 * MOVED and ASK (below the engine: node.c reports the redirect, this file
 * moves the request), and those still waiting in a queue move with the
 * map. Release messages use sharded pub/sub (SSUBSCRIBE on the master of
 * the channel's slot) when the servers have it (Redis 7), plain pub/sub
 * otherwise.
 *
 * Nothing about a lock is sent before the slot map is known: until then
 * requests wait in the queue of a connection that never connects (parked)
 * and move to their masters with the first map, or fail at their
 * deadline. A seed that answers CLUSTER SLOTS with "cluster support
 * disabled" is a standalone server: it is logged and never used, since a
 * lock taken there is one the cluster's clients do not see. */
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "clock.h"
#include "slot.h"
#include "topo_backend.h"

/* Shortest time between two CLUSTER SLOTS: a failover answers a burst of
 * requests with MOVED, and one refresh serves them all. */
#define CLUSTER_REFRESH_GAP_MS 100
/* How often the map is asked again while a master in it is down: its
 * replica takes over after the cluster's node timeout. */
#define CLUSTER_DOWN_POLL_MS 250
/* Most redirects one request follows (a map changing under it). */
#define CLUSTER_HOPS_MAX 5

/* One server of the cluster; never moves in memory (its node's connections
 * borrow host). */
struct cnode {
    struct node node;
    struct cluster *cl;
    struct node_events events;
    uint16_t index;               /* in cl->nodes, where it stays */
    uint8_t up;
    uint8_t standalone;           /* not in cluster mode: never used */
    int port;
    char host[];
};

struct cluster {
    struct topo *topo;            /* whose backend this is */
    const struct conn_config *cfg;
    const struct topo_events *ev;
    const char *prefix;
    size_t prefix_len;
    struct cnode **nodes;
    size_t n, cap;
    size_t ups;                   /* nodes whose command connection is up */
    size_t asked;                 /* round robin of the map's source */
    uint8_t known;                /* map and pub/sub kind known */
    uint8_t sharded;              /* servers have sharded pub/sub */
    uint8_t probed;
    const struct cnode *prober;   /* the node whose answer set sharded */
    uint8_t again;                /* refresh once more when this one ends */
    uint8_t evicted;              /* a server dropped a subscription */
    struct req *map_req;          /* CLUSTER SLOTS in flight */
    uint64_t refreshed_ms;
    struct event refresh_timer;
    struct conn parked;           /* requests waiting for the map */
    const struct hilock_endpoint *seeds;
    size_t nseeds;
    uint16_t owner[SLOT_COUNT];   /* master of each slot: index + 1; 0 not
                                     known */
};

static void refresh_soon(struct cluster *cl);

static void cn_up(void *arg, int reconnected, const char *addr)
{
    struct cnode *c = arg;
    struct cluster *cl = c->cl;
    c->up = 1;
    if (++cl->ups == 1 || reconnected)
        cl->ev->on_up(cl->ev->arg, 0, reconnected, addr);
    if (!cl->known)
        refresh_soon(cl);
}

static void cn_down(void *arg, int err, const char *addr)
{
    struct cnode *c = arg;
    struct cluster *cl = c->cl;
    if (c->up) {
        c->up = 0;
        if (--cl->ups == 0)
            cl->ev->on_down(cl->ev->arg, 0, err, addr);
    } else if (cl->ups == 0) {
        cl->ev->on_down(cl->ev->arg, 0, err, addr);
    }
    refresh_soon(cl); /* its slots may be failing over */
}

static struct cnode *cnode_get(struct cluster *cl, const char *host,
                               int port);

/* MOVED fixes the slot's master at once (the full map follows); ASK sends
 * this one request to the importing node. */
static int cn_redirect(void *arg, struct req *r, int ask,
                       const struct reply_redirect *to)
{
    struct cnode *c = arg;
    struct cluster *cl = c->cl;
    struct cnode *d = cnode_get(cl, to->host[0] ? to->host : c->host,
                                to->port);
    if (!d || r->cluster.hops >= CLUSTER_HOPS_MAX)
        return 0;
    r->cluster.hops++;
    if (!ask) {
        cl->owner[to->slot] = (uint16_t)(d->index + 1);
        refresh_soon(cl);
    }
    node_req_moved(r);
    req_move(r, &d->node.cmd, ask);
    return 1;
}

/* A server dropped a subscription: arg is the topology (topo_sub_events). */
static void cn_evicted(void *arg, const char *name, size_t len)
{
    struct topo *t = arg;
    struct cluster *cl = t->impl;
    (void)name;
    (void)len;
    cl->evicted = 1;
    refresh_soon(cl); /* then the name is subscribed where it lives */
}

/* The node at host:port, made (and started) when new; NULL without
 * memory. */
static struct cnode *cnode_get(struct cluster *cl, const char *host,
                               int port)
{
    size_t len = strlen(host);
    for (size_t i = 0; i < cl->n; i++)
        if (cl->nodes[i]->port == port && strcmp(cl->nodes[i]->host, host) == 0)
            return cl->nodes[i];
    if (cl->n == UINT16_MAX - 1)
        return NULL;
    if (cl->n == cl->cap) {
        size_t cap = cl->cap ? cl->cap * 2 : 8;
        struct cnode **p = realloc(cl->nodes, cap * sizeof(*p));
        if (!p)
            return NULL;
        cl->nodes = p;
        cl->cap = cap;
    }
    struct cnode *c = calloc(1, sizeof(*c) + len + 1);
    if (!c)
        return NULL;
    memcpy(c->host, host, len + 1);
    c->port = port;
    c->cl = cl;
    c->events = (struct node_events){c, cn_up, cn_down, cn_redirect,
                                     topo_sub_events(cl->topo, cn_evicted)};
    struct conn_endpoint ep = {c->host, port, NULL};
    node_init(&c->node, cl->cfg, &ep, cl->prefix, cl->prefix_len, &c->events);
    c->node.subs.conn.sharded = cl->sharded;
    c->index = (uint16_t)cl->n;
    cl->nodes[cl->n++] = c;
    node_start(&c->node);
    return c;
}

/* The connection a request about slot goes to now: its master's, a
 * cluster node's (one that is up if any) while the map has no master for
 * it, or the parked queue while there is no map. */
static struct conn *route(struct cluster *cl, unsigned slot)
{
    unsigned o = cl->owner[slot];
    if (!cl->known)
        return &cl->parked;
    if (o)
        return &cl->nodes[o - 1]->node.cmd;
    struct cnode *any = NULL;
    for (size_t i = 0; i < cl->n; i++) {
        struct cnode *c = cl->nodes[i];
        if (c->up && !c->standalone)
            return &c->node.cmd;
        if (!any && !c->standalone)
            any = c; /* none up: queue there until it connects */
    }
    return any ? &any->node.cmd : &cl->parked;
}

/* Where queued request r goes after a change of the map (NULL: stays). */
static struct conn *reroute_dest(void *arg, struct req *r)
{
    struct conn *d = r->cluster.routed ? route(arg, r->cluster.slot) : NULL;
    if (d && d != r->conn)
        node_req_moved(r);
    return d;
}

/* Names wanted on a node that no longer owns their slot. */
struct strays {
    struct cluster *cl;
    struct cnode *c;
    size_t n, cap;
    struct {
        const char *name;
        size_t len;
        enum sub_kind kind;
    } *v;
};

static void stray_one(void *arg, const char *name, size_t len,
                      enum sub_kind kind)
{
    struct strays *s = arg;
    unsigned slot = slot_of2(s->cl->prefix, s->cl->prefix_len, name, len);
    if (route(s->cl, slot) == &s->c->node.cmd)
        return;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        void *p = realloc(s->v, cap * sizeof(*s->v));
        if (!p)
            return; /* it stays there until its waiters end */
        s->v = p;
        s->cap = cap;
    }
    s->v[s->n].name = name;
    s->v[s->n].kind = kind;
    s->v[s->n++].len = len;
}

/* The map changed: move queued requests to their slots' masters, drop
 * subscriptions from nodes that lost their slots, and have the waiters
 * subscribe where their channels live now. */
static void map_changed(struct cluster *cl)
{
    struct strays s = {cl, NULL, 0, 0, NULL};
    conn_reroute(&cl->parked, reroute_dest, cl);
    for (size_t i = 0; i < cl->n; i++) {
        struct cnode *c = cl->nodes[i];
        conn_reroute(&c->node.cmd, reroute_dest, cl);
        s.c = c;
        s.n = 0;
        sub_each_wanted(&c->node.subs, stray_one, &s);
        for (size_t k = 0; k < s.n; k++)
            node_unwant(&c->node, s.v[k].name, s.v[k].len, s.v[k].kind);
        sub_rejoin(&c->node.subs);
    }
    free(s.v);
    cl->ev->on_rewant(cl->ev->arg);
    /* Slots moved, maybe in a failover that lost writes: the locks held
     * are checked where they live now. */
    cl->ev->on_up(cl->ev->arg, 0, 1, NULL);
}

/* One CLUSTER SLOTS entry's master: [host, port, ...]; the host is empty
 * when the server does not know how it is reached: the one asked. */
static struct cnode *entry_master(struct cluster *cl, const redisReply *m,
                                  const struct cnode *asked)
{
    if (m->type != REDIS_REPLY_ARRAY || m->elements < 2 ||
        m->element[0]->type != REDIS_REPLY_STRING ||
        m->element[1]->type != REDIS_REPLY_INTEGER ||
        m->element[1]->integer <= 0 || m->element[1]->integer > 65535 ||
        m->element[0]->len >= 256)
        return NULL;
    const char *host = m->element[0]->str;
    if (host[0] == '\0' || strcmp(host, "?") == 0)
        host = asked->host;
    return cnode_get(cl, host, (int)m->element[1]->integer);
}

/* Apply a CLUSTER SLOTS reply; 0, or -1 when it makes no map. */
static int map_apply(struct cluster *cl, const redisReply *r,
                     const struct cnode *asked)
{
    uint16_t *owner = calloc(SLOT_COUNT, sizeof(*owner));
    int down = 0;
    if (!owner || !r || r->type != REDIS_REPLY_ARRAY || r->elements == 0) {
        free(owner);
        return -1;
    }
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
            e->element[0]->type != REDIS_REPLY_INTEGER ||
            e->element[1]->type != REDIS_REPLY_INTEGER)
            continue;
        long long from = e->element[0]->integer, to = e->element[1]->integer;
        struct cnode *m = entry_master(cl, e->element[2], asked);
        if (!m || from < 0 || to >= SLOT_COUNT || from > to)
            continue;
        down |= !m->up;
        for (long long s = from; s <= to; s++)
            owner[s] = (uint16_t)(m->index + 1);
    }
    int changed = memcmp(owner, cl->owner, sizeof(cl->owner)) != 0;
    memcpy(cl->owner, owner, sizeof(cl->owner));
    free(owner);
    if (down) { /* a master is down: look again soon for its successor */
        struct timeval tv = clock_tv(CLUSTER_DOWN_POLL_MS);
        evtimer_add(&cl->refresh_timer, &tv);
    }
    if ((changed || cl->evicted) && cl->known)
        map_changed(cl);
    cl->evicted = 0;
    return 0;
}

/* PUBSUB SHARDNUMSUB: an (empty) array when the server has sharded
 * pub/sub, an error when it does not (before Redis 7.0; or an ACL): then
 * waiters use plain pub/sub, which a cluster sends to every node. The
 * error is an answer, not logged. */
static void on_probe(struct req *req, int status, redisReply *reply)
{
    struct cluster *cl = req->submitter.ctx;
    if (status)
        return; /* asked again with the next refresh */
    cl->probed = 1;
    cl->prober = req->submitter.data;
    cl->sharded = reply->type == REDIS_REPLY_ARRAY;
    for (size_t i = 0; i < cl->n; i++)
        cl->nodes[i]->node.subs.conn.sharded = cl->sharded;
}

/* Whether some node may still be a cluster node. */
static int usable(const struct cluster *cl)
{
    for (size_t i = 0; i < cl->n; i++)
        if (!cl->nodes[i]->standalone)
            return 1;
    return 0;
}

/* No node is left to ask for the map: what waits for it fails now. */
static void no_cluster(struct cluster *cl)
{
    cl->parked.err = HILOCK_ENOTCLUSTER;
    conn_fail_queued(&cl->parked, HILOCK_ENOTCLUSTER);
}

/* c answered CLUSTER SLOTS with r: when r says that c is no cluster node,
 * c is never used again (logged; the client is told when no node is
 * left). Returns 1 then. */
static int refuse_standalone(struct cluster *cl, struct cnode *c,
                             const redisReply *r)
{
    if (!r || r->type != REDIS_REPLY_ERROR || !r->str ||
        !strstr(r->str, "cluster support disabled"))
        return 0;
    c->standalone = 1;
    if (cl->prober == c)
        cl->probed = 0; /* ask a cluster node what it has */
    conn_log(&c->node.cmd, HILOCK_LOG_ERROR,
             "not in cluster mode: not used as a cluster node");
    if (!usable(cl)) {
        char addr[CONN_ADDR_MAX];
        no_cluster(cl);
        cl->ev->on_down(cl->ev->arg, 0, HILOCK_ENOTCLUSTER,
                        conn_addr(&c->node.cmd, addr, sizeof(addr)));
    }
    return 1;
}

static void on_slots(struct req *req, int status, redisReply *reply)
{
    struct cluster *cl = req->submitter.ctx;
    struct cnode *asked = req->submitter.data;
    cl->map_req = NULL;
    if (status == HILOCK_ECANCELED)
        return;
    cl->refreshed_ms = clock_now_ms();
    if (status == 0 && refuse_standalone(cl, asked, reply)) {
        if (usable(cl))
            refresh_soon(cl); /* ask a cluster node */
        return;
    }
    if (status || map_apply(cl, reply, asked) != 0 || !cl->probed) {
        struct timeval tv = clock_tv(CLUSTER_DOWN_POLL_MS);
        evtimer_add(&cl->refresh_timer, &tv); /* the error is logged */
        return;
    }
    if (!cl->known) {
        /* Nothing subscribed before now: every subscriber connection
         * starts with the right kind. */
        cl->known = 1;
        conn_reroute(&cl->parked, reroute_dest, cl);
        cl->ev->on_rewant(cl->ev->arg);
    }
    if (cl->again) {
        cl->again = 0;
        refresh_soon(cl);
    }
}

/* Send the two-word command "a b" to c with done. */
static void ask_node(struct cluster *cl, struct cnode *c, const char *a,
                     const char *b, req_done_fn *done, struct req **out)
{
    struct req *r = node_request(&c->node, done);
    if (!r)
        return;
    r->submitter.ctx = cl;
    r->submitter.data = c;
    r->quiet = done == on_probe; /* an error is its answer: no sharding */
    resp_array(&r->cmd, 2);
    resp_arg(&r->cmd, a, strlen(a));
    resp_arg(&r->cmd, b, strlen(b));
    if (out)
        *out = r;
    req_submit(r, 0);
}

/* Ask a node that is up (else the next one that may be a cluster node:
 * it goes when that connects) for the map. */
static void refresh_now(struct cluster *cl)
{
    struct cnode *c = NULL, *next = NULL;
    for (size_t k = 0; k < cl->n && !c; k++) {
        struct cnode *x = cl->nodes[(cl->asked + k) % cl->n];
        if (!x->standalone && !next)
            next = x;
        if (!x->standalone && x->up)
            c = x;
    }
    if (!c)
        c = next;
    if (!c) {
        no_cluster(cl);
        return;
    }
    cl->asked = (size_t)c->index + 1;
    if (!cl->probed)
        ask_node(cl, c, "PUBSUB", "SHARDNUMSUB", on_probe, NULL);
    ask_node(cl, c, "CLUSTER", "SLOTS", on_slots, &cl->map_req);
}

static void on_refresh_timer(evutil_socket_t fd, short what, void *arg)
{
    struct cluster *cl = arg;
    reentry_enter(cl->cfg->reentry);
    if (cl->map_req)
        cl->again = 1;
    else
        refresh_now(cl);
    reentry_leave(cl->cfg->reentry);
}

/* Ask for the map as soon as the gap since the last answer allows. */
static void refresh_soon(struct cluster *cl)
{
    if (cl->map_req) {
        cl->again = 1;
        return;
    }
    uint64_t now = clock_now_ms(), due = cl->refreshed_ms +
                                         CLUSTER_REFRESH_GAP_MS;
    struct timeval tv = clock_tv(due > now ? due - now : 0);
    if (!evtimer_pending(&cl->refresh_timer, NULL))
        evtimer_add(&cl->refresh_timer, &tv);
}

/* The cluster behind o's seeds (borrowed), with no node yet. Returns 0
 * or HILOCK_ENOMEM. */
static int cluster_init(struct topo *t, const struct hilock_options *o)
{
    struct cluster *cl = calloc(1, sizeof(*cl));
    if (!cl)
        return HILOCK_ENOMEM;
    cl->topo = t;
    cl->cfg = t->cfg;
    cl->ev = t->ev;
    cl->prefix = t->prefix;
    cl->prefix_len = t->prefix_len;
    evtimer_assign(&cl->refresh_timer, cl->cfg->base, on_refresh_timer, cl);
    static const struct conn_hooks none = {0};
    static const struct conn_endpoint nowhere = {"", 0, NULL};
    conn_init(&cl->parked, cl->cfg, &nowhere, &none, cl, "cluster map");
    cl->seeds = o->cluster.seeds;
    cl->nseeds = o->cluster.count;
    t->impl = cl;
    return 0;
}

/* A node per seed, and the first CLUSTER SLOTS. */
static void cluster_start(struct topo *t)
{
    struct cluster *cl = t->impl;
    for (size_t i = 0; i < cl->nseeds; i++)
        cnode_get(cl, cl->seeds[i].host, cl->seeds[i].port);
    if (cl->n)
        refresh_now(cl);
}

/* Close every node (node_close) and free the cluster. */
static void cluster_close(struct topo *t, uint32_t drain_ms)
{
    struct cluster *cl = t->impl;
    evtimer_del(&cl->refresh_timer);
    conn_close(&cl->parked);
    for (size_t i = 0; i < cl->n; i++)
        node_close(&cl->nodes[i]->node, drain_ms);
    for (size_t i = 0; i < cl->n; i++)
        free(cl->nodes[i]);
    free(cl->nodes);
    free(cl);
    t->impl = NULL;
}

/* conn_cancel_all on every node's command connection. */
static void cluster_cancel(struct topo *t)
{
    struct cluster *cl = t->impl;
    for (size_t i = 0; i < cl->n; i++)
        conn_cancel_all(&cl->nodes[i]->node.cmd);
}

/* On its master as far as the map knows; before the map is known it
 * waits for it (and fails with HILOCK_ENOTCLUSTER when no seed is a
 * cluster node). */
static struct req *cluster_request(struct topo *t, size_t member,
                                   unsigned slot, req_done_fn *done)
{
    struct cluster *cl = t->impl;
    (void)member;
    if (cl->n == 0)
        return NULL;
    struct req *r = req_new(route(cl, slot), done);
    if (r && !cl->known && !usable(cl)) { /* fails on the loop, not here */
        struct timeval tv = clock_tv(0);
        evtimer_add(&cl->refresh_timer, &tv);
    }
    if (r) {
        r->cluster.routed = 1;
        r->cluster.slot = (uint16_t)slot;
    }
    return r;
}

/* The master of slot, or NULL while the map is not known. */
static struct node *cluster_node(struct topo *t, size_t member,
                                 unsigned slot)
{
    struct cluster *cl = t->impl;
    unsigned o = cl->owner[slot];
    (void)member;
    return cl->known && o ? &cl->nodes[o - 1]->node : NULL;
}

/* SPUBLISH when the servers have sharded pub/sub. */
static const char *cluster_publish(const struct topo *t)
{
    const struct cluster *cl = t->impl;
    return cl->sharded ? "spublish" : "publish";
}

/* Unsubscribe name wherever it is. */
static void cluster_unwant(struct topo *t, size_t member, const char *name,
                           size_t len, enum sub_kind kind)
{
    struct cluster *cl = t->impl;
    (void)member;
    for (size_t i = 0; i < cl->n; i++)
        node_unwant(&cl->nodes[i]->node, name, len, kind);
}

static const struct topo_route cluster_route = {
    .slotted = 1,
    .cancel = cluster_cancel,
    .request = cluster_request,
    .node = cluster_node,
    .publish = cluster_publish,
    .unwant = cluster_unwant,
};

const struct topo_ops topo_cluster_ops = {
    .init = cluster_init,
    .start = cluster_start,
    .close = cluster_close,
    .route = &cluster_route,
};
