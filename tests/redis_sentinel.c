/* SPDX-License-Identifier: BSD-3-Clause */
/* redis_sentinel.c -- see redis_sentinel.h.
 *
 * Why the care: Sentinels learn everything by polling and gossip (INFO of
 * the master lists the replicas, hellos on __sentinel__:hello announce the
 * other Sentinels and new configurations), so each of them is asked on its
 * own until all say the same thing. Their periods are shortened with
 * SENTINEL DEBUG, a knob Redis (7.0 and later) provides for its own tests;
 * the defaults would make every start and failover take 10 to 20 seconds.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "redis_sentinel.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RT_MAX 32
#define RT_POLL_MS 20
/* Connect and reply timeout of the harness's own queries. */
#define RT_IO_MS 2000

struct rt_sentinel {
    char name[64];
    int nservers, nsentinels;
    struct rs_server *server[RT_MAX];
    struct rs_server *sentinel[RT_MAX];
};

/* ---- accessors ----------------------------------------------------------- */

const char *rt_master_name(const struct rt_sentinel *t)
{
    return t ? t->name : NULL;
}

int rt_sentinel_count(const struct rt_sentinel *t)
{
    return t ? t->nsentinels : 0;
}

int rt_sentinel_port(const struct rt_sentinel *t, int i)
{
    return t && i >= 0 && i < t->nsentinels ? rs_port(t->sentinel[i]) : -1;
}

struct rs_server *rt_sentinel_server(struct rt_sentinel *t, int i)
{
    return t && i >= 0 && i < t->nsentinels ? t->sentinel[i] : NULL;
}

int rt_server_count(const struct rt_sentinel *t)
{
    return t ? t->nservers : 0;
}

int rt_server_port(const struct rt_sentinel *t, int i)
{
    return t && i >= 0 && i < t->nservers ? rs_port(t->server[i]) : -1;
}

struct rs_server *rt_server(struct rt_sentinel *t, int i)
{
    return t && i >= 0 && i < t->nservers ? t->server[i] : NULL;
}

/* Whether the servers have what 7.0 brought (--shutdown-timeout, SENTINEL
 * DEBUG); a version that cannot be told counts as new. */
static bool v7(void)
{
    int v = rs_server_version();
    return v == 0 || v >= RS_VERSION_7_0;
}

static bool live(const struct rs_server *srv)
{
    return srv && rs_pid(srv) > 0;
}

static int server_by_port(const struct rt_sentinel *t, long long port)
{
    for (int i = 0; i < t->nservers; i++)
        if (rs_port(t->server[i]) == port)
            return i;
    return -1;
}

void rt_stop(struct rt_sentinel *t)
{
    if (!t)
        return;
    /* Signal them all first, so that they shut down in parallel: a
     * Sentinel acts on SIGTERM only at its next timer tick. */
    for (int i = 0; i < t->nsentinels; i++)
        if (live(t->sentinel[i]))
            kill(rs_pid(t->sentinel[i]), SIGTERM);
    for (int i = 0; i < t->nservers; i++)
        if (live(t->server[i]))
            kill(rs_pid(t->server[i]), SIGTERM);
    for (int i = 0; i < t->nsentinels; i++)
        rs_stop(t->sentinel[i]);
    for (int i = 0; i < t->nservers; i++)
        rs_stop(t->server[i]);
    free(t);
}

/* ---- queries ------------------------------------------------------------- */

/* Run a command (NULL-terminated strings) on srv; the reply or NULL. */
static redisReply *query(const struct rs_server *srv, const char *cmd,
                         const char *a1, const char *a2)
{
    const char *argv[3] = {cmd, a1, a2};
    int argc = a2 ? 3 : a1 ? 2 : 1;
    redisContext *ctx = rs_connect_timeout(srv, RT_IO_MS);
    if (!ctx)
        return NULL;
    redisReply *r = redisCommandArgv(ctx, argc, argv, NULL);
    redisFree(ctx);
    return r;
}

/* The value of key in a flat key/value array reply (SENTINEL MASTER), or
 * NULL. */
static const char *field(const redisReply *r, const char *key)
{
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return NULL;
    for (size_t k = 0; k + 1 < r->elements; k += 2) {
        const redisReply *kr = r->element[k], *vr = r->element[k + 1];
        if (kr->type == REDIS_REPLY_STRING && vr->type == REDIS_REPLY_STRING &&
            strcmp(kr->str, key) == 0)
            return vr->str;
    }
    return NULL;
}

static bool field_is(const redisReply *r, const char *key, const char *value)
{
    const char *v = field(r, key);
    return v && strcmp(v, value) == 0;
}

static bool field_is_int(const redisReply *r, const char *key, long long n)
{
    const char *v = field(r, key);
    return v && strtoll(v, NULL, 10) == n;
}

/* The port the Sentinel gives for the master, or -1. */
static long long sentinel_master_port(const struct rt_sentinel *t,
                                      const struct rs_server *sen)
{
    redisReply *r = query(sen, "SENTINEL", "GET-MASTER-ADDR-BY-NAME",
                          t->name);
    long long port = -1;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_STRING &&
        strcmp(r->element[0]->str, "127.0.0.1") == 0 &&
        r->element[1]->type == REDIS_REPLY_STRING)
        port = strtoll(r->element[1]->str, NULL, 10);
    if (r)
        freeReplyObject(r);
    return port;
}

/* ROLE of a data node: 1 master, 0 replica (*master_port: the port it
 * replicates), -1 on error. */
static int role(const struct rs_server *srv, long long *master_port)
{
    redisReply *r = query(srv, "ROLE", NULL, NULL);
    int result = -1;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements >= 3 &&
        r->element[0]->type == REDIS_REPLY_STRING) {
        if (strcmp(r->element[0]->str, "master") == 0) {
            result = 1;
        } else if (strcmp(r->element[0]->str, "slave") == 0 &&
                   r->element[2]->type == REDIS_REPLY_INTEGER) {
            result = 0;
            if (master_port)
                *master_port = r->element[2]->integer;
        }
    }
    if (r)
        freeReplyObject(r);
    return result;
}

static bool link_up(const struct rs_server *srv)
{
    char *status = rs_info(srv, "replication", "master_link_status");
    bool up = status && strcmp(status, "up") == 0;
    free(status);
    return up;
}

/* rt_master() for the const callers below. */
static int master_index(const struct rt_sentinel *t)
{
    long long port = -1;
    for (int i = 0; i < t->nsentinels; i++) {
        if (!live(t->sentinel[i]))
            continue;
        long long p = sentinel_master_port(t, t->sentinel[i]);
        if (p < 0 || (port >= 0 && p != port))
            return -1;
        port = p;
    }
    int m = server_by_port(t, port);
    if (m < 0 || !live(t->server[m]) || role(t->server[m], NULL) != 1)
        return -1;
    return m;
}

int rt_master(struct rt_sentinel *t)
{
    return t ? master_index(t) : -1;
}

/* ---- waiting ------------------------------------------------------------- */

/* True when every live data node but master m replicates it with its link
 * up, and every live Sentinel lists each of them as a healthy replica of
 * m (flags exactly "slave": not down, not disconnected). */
static bool replicas_settled(const struct rt_sentinel *t, int m)
{
    int mport = rs_port(t->server[m]);
    for (int i = 0; i < t->nservers; i++) {
        long long following = -1;
        if (i == m || !live(t->server[i]))
            continue;
        if (role(t->server[i], &following) != 0 || following != mport ||
            !link_up(t->server[i]))
            return false;
    }
    for (int s = 0; s < t->nsentinels; s++) {
        if (!live(t->sentinel[s]))
            continue;
        redisReply *r = query(t->sentinel[s], "SENTINEL", "REPLICAS",
                              t->name);
        bool ok = r && r->type == REDIS_REPLY_ARRAY;
        for (int i = 0; ok && i < t->nservers; i++) {
            bool listed = false;
            if (i == m || !live(t->server[i]))
                continue;
            for (size_t k = 0; k < r->elements && !listed; k++) {
                const redisReply *e = r->element[k];
                listed = field_is_int(e, "port", rs_port(t->server[i])) &&
                         field_is(e, "flags", "slave") &&
                         field_is(e, "master-link-status", "ok") &&
                         field_is_int(e, "master-port", mport);
            }
            ok = listed;
        }
        if (r)
            freeReplyObject(r);
        if (!ok)
            return false;
    }
    return true;
}

/* True when every Sentinel names server 0 as the master and knows the
 * other Sentinels and the replicas, and the replicas are settled. */
static bool started(const struct rt_sentinel *t)
{
    for (int s = 0; s < t->nsentinels; s++) {
        redisReply *r = query(t->sentinel[s], "SENTINEL", "MASTER", t->name);
        bool ok = field_is(r, "flags", "master") &&
                  field_is_int(r, "port", rs_port(t->server[0])) &&
                  field_is_int(r, "num-slaves", t->nservers - 1) &&
                  field_is_int(r, "num-other-sentinels", t->nsentinels - 1);
        if (r)
            freeReplyObject(r);
        if (!ok)
            return false;
    }
    return master_index(t) == 0 && replicas_settled(t, 0);
}

static bool is_settled(const struct rt_sentinel *t)
{
    int m = master_index(t);
    return m >= 0 && replicas_settled(t, m);
}

/* How long a wait may take: RT_WAIT_MS, three times that for Sentinels
 * without SENTINEL DEBUG (before 7.0), whose hellos come every 2 s and
 * whose INFO every 10 s. */
static int wait_ms(void)
{
    return v7() ? RT_WAIT_MS : 3 * RT_WAIT_MS;
}

/* Poll cond(t) until true or wait_ms() passed. 0 or -1. */
static int wait_for(const struct rt_sentinel *t,
                    bool (*cond)(const struct rt_sentinel *),
                    const char *what)
{
    long long deadline = rs_now_ms() + wait_ms();
    for (;;) {
        if (cond(t))
            return 0;
        if (rs_now_ms() >= deadline)
            break;
        rs_sleep_ms(RT_POLL_MS);
    }
    fprintf(stderr, "rt: %s: not done in %d ms\n", what, wait_ms());
    return -1;
}

int rt_settle(struct rt_sentinel *t)
{
    return t ? wait_for(t, is_settled, "settle") : -1;
}

/* Poll until a master other than old is named by all; its index or -1. */
static int wait_new_master(struct rt_sentinel *t, int old, const char *what)
{
    long long deadline = rs_now_ms() + wait_ms();
    for (;;) {
        int m = rt_master(t);
        if (m >= 0 && m != old)
            return m;
        if (rs_now_ms() >= deadline)
            break;
        rs_sleep_ms(RT_POLL_MS);
    }
    fprintf(stderr, "rt: %s: no new master in %d ms\n", what, wait_ms());
    return -1;
}

/* ---- start --------------------------------------------------------------- */

/* hz 100: SIGTERM acted on within 10 ms. Full syncs through a file, as in
 * redis_cluster.c: a diskless one may leave a replica "up" without a stream
 * for a second. shutdown-timeout 0: a master stops without waiting for its
 * replicas. */
/* rt_set_tls's files (empty: no TLS). */
static char tls_files[3][PATH_MAX];

void rt_set_tls(const struct rs_tls *tls)
{
    const char *f[3] = {tls ? tls->cert_file : NULL,
                        tls ? tls->key_file : NULL,
                        tls ? tls->ca_file : NULL};
    for (int i = 0; i < 3; i++)
        snprintf(tls_files[i], sizeof tls_files[i], "%s", f[i] ? f[i] : "");
}

/* rs_start_opts(o), with TLS (and replication over it) when rt_set_tls
 * asked for it. */
static struct rs_server *start_with(struct rs_options *o)
{
    const char *args[16];
    int n = 0;
    if (!tls_files[0][0])
        return rs_start_opts(o);
    for (int i = 0; o->args && o->args[i] && n < 13; i++)
        args[n++] = o->args[i];
    args[n++] = "--tls-replication";
    args[n++] = "yes";
    args[n] = NULL;
    o->args = args;
    o->tls = (struct rs_tls){tls_files[0], tls_files[1], tls_files[2], 0};
    return rs_start_opts(o);
}

static struct rs_server *start_data_node(int master_port)
{
    char port[16];
    struct rs_options o;
    snprintf(port, sizeof port, "%d", master_port);
    const char *args[10] = {"--hz", "100", "--repl-diskless-sync", "no"};
    int n = 4;
    if (v7()) {
        args[n++] = "--shutdown-timeout";
        args[n++] = "0";
    }
    if (master_port > 0) {
        args[n++] = "--replicaof";
        args[n++] = "127.0.0.1";
        args[n++] = port;
    }
    args[n] = NULL;
    memset(&o, 0, sizeof o);
    o.args = args;
    return start_with(&o);
}

static struct rs_server *start_sentinel(const struct rt_sentinel *t,
                                        int quorum)
{
    char conf[512];
    snprintf(conf, sizeof conf,
             "sentinel monitor %s 127.0.0.1 %d %d\n"
             "sentinel down-after-milliseconds %s %d\n"
             "sentinel failover-timeout %s %d\n"
             "sentinel parallel-syncs %s 1\n",
             t->name, rs_port(t->server[0]), quorum, t->name,
             RT_DOWN_AFTER_MS, t->name, RT_FAILOVER_TIMEOUT_MS, t->name);
    struct rs_options o;
    memset(&o, 0, sizeof o);
    static const char *const args[] = {"--sentinel", NULL};
    o.args = args;
    o.conf = conf;
    struct rs_server *sen = start_with(&o);
    if (!sen)
        return NULL;
    /* Hellos every 200 ms: Sentinels find each other and spread a new
     * configuration at once; an old master is made a replica 4 hello
     * periods after it shows up. INFO every 500 ms (not less: a replica
     * whose last INFO is 3 periods old is not promoted, and during a
     * failover Sentinels send INFO only every second): replicas and role
     * changes are seen soon. Asking the others every 200 ms: a master
     * down for everyone is agreed on at once. Before 7.0 there is no
     * SENTINEL DEBUG: the default periods (hellos every 2 s, INFO every
     * 10 s) make starts and failovers slower. */
    if (!v7())
        return sen;
    redisContext *ctx = rs_connect_timeout(sen, RT_IO_MS);
    redisReply *r = ctx ? redisCommand(ctx,
                                       "SENTINEL DEBUG publish-period 200 "
                                       "info-period 500 ask-period 200")
                        : NULL;
    bool ok = r && r->type == REDIS_REPLY_STATUS;
    if (!ok)
        fprintf(stderr, "rt: SENTINEL DEBUG on port %d: %s\n", rs_port(sen),
                r && r->str ? r->str : "no reply");
    if (r)
        freeReplyObject(r);
    if (ctx)
        redisFree(ctx);
    if (!ok) {
        rs_stop(sen);
        return NULL;
    }
    return sen;
}

static bool replicas_linked(const struct rt_sentinel *t)
{
    for (int i = 1; i < t->nservers; i++)
        if (!link_up(t->server[i]))
            return false;
    return true;
}

struct rt_sentinel *rt_start(int replicas, int sentinels,
                             const char *master_name)
{
    if (replicas < 0 || replicas + 1 > RT_MAX || sentinels < 1 ||
        sentinels > RT_MAX || !master_name || !master_name[0] ||
        strlen(master_name) >= sizeof ((struct rt_sentinel *)0)->name ||
        strpbrk(master_name, " \t\r\n\"'")) {
        fprintf(stderr, "rt: bad arguments\n");
        return NULL;
    }
    struct rt_sentinel *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    snprintf(t->name, sizeof t->name, "%s", master_name);
    /* Replicas in sync before the Sentinels start: a Sentinel's first INFO
     * of the master then lists them all. */
    for (t->nservers = 0; t->nservers <= replicas; t->nservers++) {
        int mport = t->nservers ? rs_port(t->server[0]) : 0;
        t->server[t->nservers] = start_data_node(mport);
        if (!t->server[t->nservers])
            goto fail;
    }
    if (wait_for(t, replicas_linked, "replica sync") != 0)
        goto fail;
    for (t->nsentinels = 0; t->nsentinels < sentinels; t->nsentinels++) {
        t->sentinel[t->nsentinels] =
            start_sentinel(t, sentinels >= 2 ? 2 : 1);
        if (!t->sentinel[t->nsentinels])
            goto fail;
    }
    if (wait_for(t, started, "start") != 0)
        goto fail;
    return t;
fail:
    rt_stop(t);
    return NULL;
}

/* ---- failures ------------------------------------------------------------ */

/* The master per rt_master(), when some other data node is live to take
 * over; else -1 with a message. */
static int master_with_replica(const struct rt_sentinel *t, const char *what)
{
    int m = master_index(t);
    if (m < 0) {
        fprintf(stderr, "rt: %s: the Sentinels name no master\n", what);
        return -1;
    }
    for (int i = 0; i < t->nservers; i++)
        if (i != m && live(t->server[i]))
            return m;
    fprintf(stderr, "rt: %s: no live replica to promote\n", what);
    return -1;
}

int rt_failover(struct rt_sentinel *t)
{
    int old = t ? master_with_replica(t, "failover") : -1;
    if (old < 0)
        return -1;
    long long deadline = rs_now_ms() + wait_ms();
    for (;;) {
        struct rs_server *sen = NULL;
        for (int i = 0; i < t->nsentinels && !sen; i++)
            if (live(t->sentinel[i]))
                sen = t->sentinel[i];
        if (!sen)
            return -1;
        redisReply *r = query(sen, "SENTINEL", "FAILOVER", t->name);
        bool ok = r && r->type == REDIS_REPLY_STATUS;
        /* No replica fit to promote yet (just reconfigured, not yet seen
         * by INFO), or the last failover still finishing: try again. */
        bool again = r && r->type == REDIS_REPLY_ERROR &&
                     (strstr(r->str, "NOGOODSLAVE") ||
                      strstr(r->str, "INPROG"));
        if (!ok && (!again || rs_now_ms() >= deadline))
            fprintf(stderr, "rt: SENTINEL FAILOVER: %s\n",
                    r && r->str ? r->str : "no reply");
        if (r)
            freeReplyObject(r);
        if (ok)
            break;
        if (!again || rs_now_ms() >= deadline)
            return -1;
        rs_sleep_ms(RT_POLL_MS);
    }
    return wait_new_master(t, old, "failover");
}

int rt_kill_master(struct rt_sentinel *t)
{
    int old = t ? master_with_replica(t, "kill") : -1;
    if (old < 0)
        return -1;
    if (rs_kill9(t->server[old]) != 0)
        return -1;
    return wait_new_master(t, old, "failover after kill");
}
