/* SPDX-License-Identifier: BSD-3-Clause */
/* client.c -- the client: options, owner id, its node and lock engine,
 * the state it reports, teardown.
 *
 * Teardown may be requested from inside a callback that hilock is running;
 * every loop callback into hilock is bracketed by the reentry guard (see
 * reentry.h), and hilock_client_free() called inside one only marks the
 * client. The outermost leave then tears it down, so no code above it on
 * the stack ever touches freed memory. */
#include "client.h"

#include "clock.h"
#include "lock.h"
#include "slot.h"
#include "multi.h"
#include "quorum.h"
#include "wait.h"
#include "watchdog.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>

#include <event2/event.h>

/* Longest hilock_client_free() blocks to deliver requests already sent. */
#define CLIENT_DRAIN_MS 1000

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

/* Room for the text of an option refused by options_check. */
#define CLIENT_WHY_MAX 224

/* Say in why (CLIENT_WHY_MAX bytes) which option is wrong and how; returns
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
    vsnprintf(why, CLIENT_WHY_MAX, fmt, ap);
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
static int options_check(const struct hilock_options *o, char *why)
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
static int options_copy(struct hilock_client *c, const struct hilock_options *o)
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

/* Draw the 128-bit client id from the OS and format it as a UUID (v4),
 * the jitter seed, and the fair mode's listener tag (public: it names a
 * channel, so it is drawn apart from the secret id). */
static int client_id_init(struct hilock_client *c)
{
    unsigned char b[32];
    size_t got = 0;
    while (got < sizeof(b)) {
        ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return HILOCK_ERANDOM;
        got += (size_t)n;
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(c->id, sizeof(c->id),
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
             "%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
             b[10], b[11], b[12], b[13], b[14], b[15]);
    memcpy(&c->rng, b + 16, sizeof(c->rng));
    c->rng |= 1;
    for (size_t i = 0; i < 8; i++)
        snprintf(c->listener + 2 * i, 3, "%02x", b[24 + i]);
    memcpy(c->tag, b + 24, sizeof(c->tag));
    return 0;
}

/* Tell the user of a change of state, once per change: a failure with the
 * same cause as the last one reported is not news. node names the server
 * (NULL: the Sentinel master's name). */
static void client_report(struct hilock_client *c, enum hilock_state state,
                          int status, const char *node)
{
    int *last = state <= HILOCK_STATE_DOWN ? c->reported : c->reported + 2;
    if (last[0] == (int)state && last[1] == status)
        return;
    last[0] = (int)state;
    last[1] = status;
    if (!node)
        node = c->opts.sentinel.master_name ? c->opts.sentinel.master_name
                                            : "";
    if (c->opts.state_cb && !c->guard.closing)
        c->opts.state_cb(c, status, state, node, c->opts.state_arg);
}

/* The topology's news. The client is up while a majority of its members
 * is (its one node or cluster, or most Redlock masters). After a reconnect
 * or a failover the server may have lost every key: the locks held are
 * verified at once. */
/* Mark member i up or down; the number of members up now. */
static size_t members_set(struct hilock_client *c, size_t i, int up)
{
    size_t n = 0;
    c->up[i] = (uint8_t)up;
    for (size_t k = 0; k < c->eng.nnodes; k++)
        n += c->up[k];
    return n;
}

static void on_member_up(void *arg, size_t member, int reconnected,
                         const char *node)
{
    struct hilock_client *c = arg;
    size_t up = members_set(c, member, 1);
    c->eng.stats.reconnects += reconnected != 0;
    if (reconnected)
        watchdog_verify_all(&c->eng);
    if (up == quorum_of(c->eng.nnodes))
        client_report(c, HILOCK_STATE_UP, 0, node);
}

static void on_member_down(void *arg, size_t member, int err,
                           const char *node)
{
    struct hilock_client *c = arg;
    if (members_set(c, member, 0) < quorum_of(c->eng.nnodes))
        client_report(c, HILOCK_STATE_DOWN,
                      c->eng.nnodes == 1 ? err : HILOCK_ENOQUORUM, node);
}

static void on_pubsub_state(void *arg, int up, int err, const char *node)
{
    client_report(arg, up ? HILOCK_STATE_PUBSUB_UP : HILOCK_STATE_PUBSUB_DOWN,
                  err, node);
}

/* A release message, or a confirmed subscription (a release may have come
 * before it): the name's head waiter retries. */
static void on_release_news(void *arg, enum sub_kind kind, const char *name,
                            size_t len)
{
    struct hilock_client *c = arg;
    wait_on_message(&c->eng, kind, name, len);
}

/* Fair mode: a hand-off message for one of this client's waiters. */
static void on_handoff_news(void *arg, const char *name, size_t len,
                            const char *msg, size_t mlen)
{
    struct hilock_client *c = arg;
    wait_on_handoff(&c->eng, name, len, msg, mlen);
}

static void client_rewant(void *arg)
{
    struct hilock_client *c = arg;
    wait_rewant_all(&c->eng);
}

static void client_teardown(void *arg);
static void on_close_tick(evutil_socket_t fd, short what, void *arg);

/* Wire the client's parts together: the topology reports here, the
 * engine sends through it. */
static int client_assemble(struct hilock_client *c, struct event_base *base)
{
    struct timeval tv = clock_tv(c->opts.request_timeout_ms);
    int rc;
    reentry_init(&c->guard, client_teardown, c);
    evtimer_assign(&c->close_timer, base, on_close_tick, c);
    c->cfg = (struct conn_config){base, &c->opts,
                                  event_base_init_common_timeout(base, &tv),
                                  &c->rng, &c->guard, &c->eng.stats,
                                  &c->wire, c->tls.main, c->tls.sentinel};
    c->events = (struct topo_events){c,
                                     on_member_up,
                                     on_member_down,
                                     on_pubsub_state,
                                     on_release_news,
                                     on_handoff_news,
                                     client_rewant,
                                     c->opts.fair ? c->listener : NULL};
    if ((rc = topo_init(&c->topo, &c->cfg, &c->opts, c->prefix,
                        c->prefix_len, &c->events)))
        return rc;
    c->eng.base = base;
    c->eng.opts = &c->opts;
    c->eng.topo = &c->topo;
    c->eng.nnodes = c->topo.members;
    script_set_init(&c->eng.scripts);
    c->eng.guard = &c->guard;
    c->eng.prefix = c->prefix;
    c->eng.prefix_len = c->prefix_len;
    c->eng.id = c->id;
    c->eng.listener = c->events.listener;
    c->eng.permit_prefix = c->tag;
    c->eng.rng = &c->rng;
    lock_engine_init(&c->eng);
    return multi_init(&c->eng);
}

/* hilock_client_new's arguments and options: 0, or HILOCK_EINVAL with
 * one line to opts->log_cb (when there is one) saying which and why. */
static int client_args_check(const struct event_base *base,
                             const struct hilock_options *opts,
                             struct hilock_client *const *out)
{
    char why[CLIENT_WHY_MAX], line[CLIENT_WHY_MAX + 32];
    if (!opts)
        return HILOCK_EINVAL;
    if (!base || !out)
        snprintf(line, sizeof(line), "invalid argument: %s: NULL",
                 base ? "out" : "base");
    else if (options_check(opts, why))
        snprintf(line, sizeof(line), "invalid option: %s", why);
    else
        return 0;
    if (opts->log_cb)
        opts->log_cb(HILOCK_LOG_ERROR, line, opts->log_arg);
    return HILOCK_EINVAL;
}

int hilock_client_new(struct event_base *base,
                      const struct hilock_options *opts,
                      struct hilock_client **out)
{
    int rc = client_args_check(base, opts, out);
    if (rc)
        return rc;
    struct hilock_client *c = calloc(1, sizeof(*c));
    if (!c)
        return HILOCK_ENOMEM;
    if ((rc = options_copy(c, opts)) || (rc = client_id_init(c)) ||
        (rc = tls_set_init(&c->tls, opts))) {
        free(c->strings);
        free(c);
        return rc;
    }
    if ((rc = client_assemble(c, base))) {
        topo_close(&c->topo, 0);
        lock_engine_free(&c->eng);
        tls_set_free(&c->tls);
        free(c->strings);
        free(c);
        return rc;
    }
    topo_start(&c->topo);
    *out = c;
    return 0;
}

int hilock_client_id(const struct hilock_client *client, char *buf,
                     size_t len)
{
    if (!client || !buf || len < sizeof(client->id))
        return HILOCK_EINVAL;
    memcpy(buf, client->id, sizeof(client->id));
    return 0;
}

int hilock_lock_new(struct hilock_client *client, const char *name,
                    size_t name_len, uint64_t owner_tag,
                    struct hilock_lock **out)
{
    if (!client || client->guard.closing)
        return HILOCK_EINVAL;
    return lock_new(&client->eng, name, name_len, owner_tag, KIND_MUTEX,
                    out);
}

int hilock_rwlock_new(struct hilock_client *client, const char *name,
                      size_t name_len, uint64_t owner_tag,
                      enum hilock_rw_side side, struct hilock_lock **out)
{
    if (!client || client->guard.closing ||
        (side != HILOCK_READ && side != HILOCK_WRITE))
        return HILOCK_EINVAL;
    return lock_new(&client->eng, name, name_len, owner_tag,
                    side == HILOCK_READ ? KIND_READ : KIND_WRITE, out);
}

int hilock_semaphore_new(struct hilock_client *client, const char *name,
                         size_t name_len, struct hilock_semaphore **out)
{
    struct hilock_lock *h = NULL;
    if (!client || client->guard.closing || !out)
        return HILOCK_EINVAL;
    int rc = lock_new(&client->eng, name, name_len, 0, KIND_SEM, &h);
    if (rc == 0)
        *out = public_sem(h);
    return rc;
}

int hilock_permit_new(struct hilock_client *client, const char *name,
                      size_t name_len, struct hilock_permit **out)
{
    struct hilock_lock *h = NULL;
    if (!client || client->guard.closing || !out)
        return HILOCK_EINVAL;
    int rc = lock_new(&client->eng, name, name_len, 0, KIND_PERMIT, &h);
    if (rc == 0)
        *out = public_permit(h);
    return rc;
}

int hilock_multi_new(struct hilock_client *client, const char *const *names,
                     const size_t *lens, size_t count, uint64_t owner_tag,
                     struct hilock_multi **out)
{
    if (!client || client->guard.closing)
        return HILOCK_EINVAL;
    return multi_new(&client->eng, names, lens, count, owner_tag, out);
}

/* How often a closing client looks whether its requests are answered. */
#define CLIENT_CLOSE_POLL_MS 2

/* Close the connections (waiting up to drain_ms, blocking, for what is in
 * flight) and free all memory. */
static void client_destroy(struct hilock_client *c, uint32_t drain_ms)
{
    topo_close(&c->topo, drain_ms);
    multi_free_all(&c->eng);
    lock_engine_free(&c->eng);
    event_del(&c->close_timer);
    tls_set_free(&c->tls);
    free(c->strings);
    free(c);
}

/* hilock_client_close's wait: once every request sent is answered, or
 * its deadline passed, tell the user and free the client. */
static void on_close_tick(evutil_socket_t fd, short what, void *arg)
{
    struct hilock_client *c = arg;
    (void)fd;
    (void)what;
    if (c->wire > 0 && clock_now_ms() < c->close_deadline_ms) {
        struct timeval tv = clock_tv(CLIENT_CLOSE_POLL_MS);
        evtimer_add(&c->close_timer, &tv);
        return;
    }
    c->close_cb(c, c->close_arg);
    client_destroy(c, 0);
}

/* Cancel everything and fire the callbacks; then deliver what was sent
 * (blocking, or on the loop for hilock_client_close) and free all
 * memory. */
static void client_teardown(void *arg)
{
    struct hilock_client *c = arg;
    uint32_t drain = c->opts.request_timeout_ms < CLIENT_DRAIN_MS
                         ? c->opts.request_timeout_ms
                         : CLIENT_DRAIN_MS;
    multi_cancel_all(&c->eng);
    lock_cancel_all(&c->eng);
    if (!c->close_cb) {
        client_destroy(c, drain);
        return;
    }
    topo_cancel(&c->topo);
    struct timeval now = {0, 0};
    c->close_deadline_ms = clock_now_ms() + drain;
    evtimer_add(&c->close_timer, &now);
}

void hilock_client_free(struct hilock_client *client)
{
    if (client)
        reentry_close(&client->guard);
}

int hilock_client_close(struct hilock_client *client, hilock_close_cb *cb,
                        void *arg)
{
    if (!client || !cb || client->guard.closing)
        return HILOCK_EINVAL;
    client->close_cb = cb;
    client->close_arg = arg;
    reentry_close(&client->guard);
    return 0;
}
