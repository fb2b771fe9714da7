/* SPDX-License-Identifier: BSD-3-Clause */
/* options.c -- the client's options: their defaults, the checks that
 * refuse what no client could work with (each saying which option is
 * wrong and why), and the copy the client keeps, so that the caller's
 * strings and arrays may go once hilock_client_new returns. */
#include "options.h"

#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "client.h"
#include "slot.h"
#include "tls.h"

void hilock_options_init(struct hilock_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof(*opts));
    opts->node.host = "127.0.0.1";
    opts->node.port = 6379;
    opts->connect_timeout_ms = 2000;
    opts->request_timeout_ms = 2000;
    opts->watchdog_lease_ms = 30000;
    opts->reconnect_min_ms = 50;
    opts->reconnect_max_ms = 2000;
    opts->wait_timeout_ms = 1000;
}

/* Say in why (OPTIONS_WHY_MAX bytes) which option is wrong and how; returns
 * HILOCK_EINVAL. */
static int invalid(char *why, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int invalid(char *why, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, OPTIONS_WHY_MAX, fmt, ap);
    va_end(ap);
    return HILOCK_EINVAL;
}

/* Whether an endpoint can be connected to at all; why says otherwise,
 * naming it name ("masters[1].", or "" for the one endpoint). */
static int endpoint_check(const char *name, const struct hilock_endpoint *e,
                          char *why)
{
    if (e->unix_path)
        return *e->unix_path ? 0
                             : invalid(why, "%sunix_path: empty", name);
    if (!e->host || !*e->host)
        return invalid(why, "%shost: %s", name, e->host ? "empty" : "NULL");
    if (e->port <= 0 || e->port > 65535)
        return invalid(why, "%sport %d: not 1..65535", name, e->port);
    return 0;
}

#define ADDRS_MAX 8

/* The addresses a host resolves to, looked up once. */
struct addrs {
    int looked;
    size_t n;
    struct sockaddr_storage a[ADDRS_MAX];
};

/* Resolve host into *r, once (n stays 0 when it does not resolve). */
static void resolve(const char *host, struct addrs *r)
{
    struct addrinfo hints, *res, *ai;
    if (r->looked)
        return;
    r->looked = 1;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, NULL, &hints, &res) != 0)
        return;
    for (ai = res; ai && r->n < ADDRS_MAX; ai = ai->ai_next)
        if (ai->ai_addrlen <= sizeof(r->a[0]))
            memcpy(&r->a[r->n++], ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(res);
}

/* Whether two resolved addresses are the same host (ports aside). */
static int same_addr(const struct sockaddr_storage *a,
                     const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family)
        return 0;
    if (a->ss_family == AF_INET)
        return memcmp(&((const struct sockaddr_in *)a)->sin_addr,
                      &((const struct sockaddr_in *)b)->sin_addr,
                      sizeof(struct in_addr)) == 0;
    return a->ss_family == AF_INET6 &&
           memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                  &((const struct sockaddr_in6 *)b)->sin6_addr,
                  sizeof(struct in6_addr)) == 0;
}

/* Whether a and b are one server: the same socket path, or the same port
 * on hosts of one name or that resolve to a common address ("localhost"
 * and "127.0.0.1"). ra and rb cache the lookups. */
static int same_endpoint(const struct hilock_endpoint *a, struct addrs *ra,
                         const struct hilock_endpoint *b, struct addrs *rb)
{
    if (a->unix_path || b->unix_path)
        return a->unix_path && b->unix_path &&
               strcmp(a->unix_path, b->unix_path) == 0;
    if (a->port != b->port)
        return 0;
    if (strcasecmp(a->host, b->host) == 0)
        return 1;
    resolve(a->host, ra);
    resolve(b->host, rb);
    for (size_t i = 0; i < ra->n; i++)
        for (size_t j = 0; j < rb->n; j++)
            if (same_addr(&ra->a[i], &rb->a[j]))
                return 1;
    return 0;
}

/* A list (the option what, its length the option count) of min..max
 * endpoints, each usable (over TCP when tcp), none twice. Hosts are
 * resolved to compare them, as connecting does (a blocking lookup). */
static int endpoints_check(const char *what, const char *count,
                           const struct hilock_endpoint *e, size_t n,
                           size_t min, size_t max, int tcp, char *why)
{
    struct addrs r[HILOCK_SEEDS_MAX];
    char name[48];
    if (!e)
        return invalid(why, "%s: NULL with %s %zu", what, count, n);
    if (n < min || n > max)
        return invalid(why, "%s %zu: %zu..%zu wanted", count, n, min, max);
    memset(r, 0, sizeof(r[0]) * n);
    for (size_t i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "%s[%zu].", what, i);
        if (endpoint_check(name, &e[i], why))
            return HILOCK_EINVAL;
        if (tcp && e[i].unix_path)
            return invalid(why, "%sunix_path: TCP only here", name);
        for (size_t j = 0; j < i; j++)
            if (same_endpoint(&e[i], &r[i], &e[j], &r[j]))
                return invalid(why, "%s[%zu] and %s[%zu]: one server listed "
                                    "twice", what, j, what, i);
    }
    return 0;
}

/* A sentinel master name: it comes back inside space-separated messages. */
static int master_name_ok(const char *name)
{
    if (!name || !*name || strlen(name) >= 256)
        return 0;
    for (const char *p = name; *p; p++)
        if ((unsigned char)*p <= ' ')
            return 0;
    return 1;
}

/* In a cluster every key of a lock must hash to one slot: a prefix does
 * that only when a hash tag of its own decides the slot. */
static int cluster_prefix_ok(const char *prefix)
{
    return !prefix || !*prefix ||
           (slot_has_tag(prefix, strlen(prefix)) &&
            strchr(strchr(prefix, '{'), '}') != NULL);
}

/* Redlock masters: an odd number from 3 to HILOCK_MASTERS_MAX. */
static int masters_check(const struct hilock_options *o, char *why)
{
    if (o->redlock.count % 2 == 0)
        return invalid(why, "redlock.count %zu: an odd number of masters "
                            "wanted", o->redlock.count);
    if (o->fair)
        return invalid(why, "fair: not with HILOCK_TOPOLOGY_REDLOCK");
    return endpoints_check("redlock.masters", "redlock.count",
                           o->redlock.masters, o->redlock.count, 3,
                           HILOCK_MASTERS_MAX, 0, why);
}

/* Cluster seeds: no db, a key_prefix with a hash tag. */
static int cluster_check(const struct hilock_options *o, char *why)
{
    if (o->db != 0)
        return invalid(why, "db %d: a cluster has database 0 only", o->db);
    if (!cluster_prefix_ok(o->key_prefix))
        return invalid(why, "key_prefix \"%.64s\": in a cluster it needs a "
                            "hash tag such as \"{app}:\"", o->key_prefix);
    return endpoints_check("cluster.seeds", "cluster.count", o->cluster.seeds,
                           o->cluster.count, 1, HILOCK_SEEDS_MAX, 1, why);
}

/* Sentinels with a master name. */
static int sentinel_check(const struct hilock_options *o, char *why)
{
    if (!master_name_ok(o->sentinel.master_name))
        return invalid(why, "sentinel.master_name: %s",
                       o->sentinel.master_name
                           ? "empty, too long, or with a space"
                           : "NULL");
    return endpoints_check("sentinel.nodes", "sentinel.count",
                           o->sentinel.nodes, o->sentinel.count, 1,
                           HILOCK_SEEDS_MAX, 0, why);
}

/* The names of the topologies, for the log line. */
static const char *const topology_names[] = {
    [HILOCK_TOPOLOGY_NODE] = "HILOCK_TOPOLOGY_NODE",
    [HILOCK_TOPOLOGY_SENTINEL] = "HILOCK_TOPOLOGY_SENTINEL",
    [HILOCK_TOPOLOGY_CLUSTER] = "HILOCK_TOPOLOGY_CLUSTER",
    [HILOCK_TOPOLOGY_REDLOCK] = "HILOCK_TOPOLOGY_REDLOCK",
};

/* The option groups of the topologies other than o->topology are unset:
 * a group filled in for another topology is a mistake worth naming. */
static int others_unset(const struct hilock_options *o, char *why)
{
    const char *set = NULL;
    if (o->topology != HILOCK_TOPOLOGY_SENTINEL &&
        (o->sentinel.nodes || o->sentinel.count || o->sentinel.master_name ||
         o->sentinel.password || o->sentinel.tls_own))
        set = "sentinel";
    else if (o->topology != HILOCK_TOPOLOGY_CLUSTER &&
             (o->cluster.seeds || o->cluster.count))
        set = "cluster";
    else if (o->topology != HILOCK_TOPOLOGY_REDLOCK &&
             (o->redlock.masters || o->redlock.count))
        set = "redlock";
    if (!set)
        return 0;
    return invalid(why, "%s: set, but topology is %s", set,
                   topology_names[o->topology]);
}

/* The topology named by o->topology, with its own group of options. */
static int topology_check(const struct hilock_options *o, char *why)
{
    if ((unsigned)o->topology > HILOCK_TOPOLOGY_REDLOCK)
        return invalid(why, "topology %d: not a HILOCK_TOPOLOGY_*",
                       (int)o->topology);
    if (others_unset(o, why))
        return HILOCK_EINVAL;
    if (o->topology == HILOCK_TOPOLOGY_REDLOCK)
        return masters_check(o, why);
    if (o->topology == HILOCK_TOPOLOGY_SENTINEL)
        return sentinel_check(o, why);
    if (o->topology == HILOCK_TOPOLOGY_CLUSTER)
        return cluster_check(o, why);
    return endpoint_check("node.", &o->node, why);
}

/* Timeouts, leases and backoff. */
static int times_check(const struct hilock_options *o, char *why)
{
    if (o->connect_timeout_ms == 0)
        return invalid(why, "connect_timeout_ms: 0");
    if (o->request_timeout_ms == 0)
        return invalid(why, "request_timeout_ms: 0");
    if (o->watchdog_lease_ms < HILOCK_WATCHDOG_MIN_MS ||
        o->watchdog_lease_ms > HILOCK_MS_MAX)
        return invalid(why, "watchdog_lease_ms %u: not %d..%u ms",
                       (unsigned)o->watchdog_lease_ms, HILOCK_WATCHDOG_MIN_MS,
                       (unsigned)HILOCK_MS_MAX);
    if (o->reconnect_min_ms == 0)
        return invalid(why, "reconnect_min_ms: 0");
    if (o->reconnect_max_ms < o->reconnect_min_ms)
        return invalid(why, "reconnect_max_ms %u: below reconnect_min_ms %u",
                       (unsigned)o->reconnect_max_ms,
                       (unsigned)o->reconnect_min_ms);
    if (o->wait_replicas && o->wait_timeout_ms == 0)
        return invalid(why, "wait_timeout_ms: 0 with wait_replicas");
    if (o->wait_timeout_ms > HILOCK_MS_MAX)
        return invalid(why, "wait_timeout_ms %u: above HILOCK_MS_MAX",
                       (unsigned)o->wait_timeout_ms);
    return 0;
}

/* Reject options no client could work with, saying why. */
int options_check(const struct hilock_options *o, char *why)
{
    if (o->db < 0)
        return invalid(why, "db %d: negative", o->db);
    if (o->username && !o->password)
        return invalid(why, "username: set without a password");
    if (times_check(o, why))
        return HILOCK_EINVAL;
    if (topology_check(o, why))
        return HILOCK_EINVAL;
    if (tls_options_check(o))
        return invalid(why, "tls, sentinel.tls: inconsistent settings (mode, "
                            "cert_file without key_file, or a unix socket)");
    return 0;
}

/* Copy s (may be NULL) to *p, advancing it; the copy, or NULL. */
static const char *copy_string(char **p, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = memcpy(*p, s, n);
    *p += n;
    return d;
}

static size_t string_size(const char *s)
{
    return s ? strlen(s) + 1 : 0;
}

/* The endpoints of o's topology into *eps; their number. */
static size_t topology_endpoints(const struct hilock_options *o,
                                 const struct hilock_endpoint **eps)
{
    switch (o->topology) {
    case HILOCK_TOPOLOGY_SENTINEL:
        *eps = o->sentinel.nodes;
        return o->sentinel.count;
    case HILOCK_TOPOLOGY_CLUSTER:
        *eps = o->cluster.seeds;
        return o->cluster.count;
    case HILOCK_TOPOLOGY_REDLOCK:
        *eps = o->redlock.masters;
        return o->redlock.count;
    default:
        *eps = &o->node;
        return 1;
    }
}

/* Copy the options, their strings into one block owned by the client, and
 * the endpoints of the topology into c->eps, which the copy points to. */
int options_copy(struct hilock_client *c, const struct hilock_options *o)
{
    const struct hilock_endpoint *eps;
    size_t n = topology_endpoints(o, &eps), total = 1;
    total += string_size(o->username) + string_size(o->password) +
             string_size(o->key_prefix) +
             string_size(o->sentinel.master_name) +
             string_size(o->sentinel.password);
    for (size_t i = 0; i < n; i++)
        total += string_size(eps[i].host) + string_size(eps[i].unix_path);
    char *p = c->strings = malloc(total);
    if (!p)
        return HILOCK_ENOMEM;
    c->opts = *o;
    c->opts.username = copy_string(&p, o->username);
    c->opts.password = copy_string(&p, o->password);
    c->opts.key_prefix = copy_string(&p, o->key_prefix);
    c->opts.sentinel.master_name = copy_string(&p, o->sentinel.master_name);
    c->opts.sentinel.password = copy_string(&p, o->sentinel.password);
    for (size_t i = 0; i < n; i++) {
        c->eps[i].host = copy_string(&p, eps[i].host);
        c->eps[i].port = eps[i].port;
        c->eps[i].unix_path = copy_string(&p, eps[i].unix_path);
    }
    /* Only the copies are kept: the user's arrays may go. */
    if (o->topology == HILOCK_TOPOLOGY_NODE)
        c->opts.node = c->eps[0];
    c->opts.sentinel.nodes = o->sentinel.count ? c->eps : NULL;
    c->opts.cluster.seeds = o->cluster.count ? c->eps : NULL;
    c->opts.redlock.masters = o->redlock.count ? c->eps : NULL;
    *p = '\0';
    c->prefix = c->opts.key_prefix ? c->opts.key_prefix : p;
    c->prefix_len = strlen(c->prefix);
    return 0;
}
