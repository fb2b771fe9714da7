/* SPDX-License-Identifier: BSD-3-Clause */
/* inventory-server.c -- an HTTP shop front that never oversells.
 *
 * Several of these processes may sell the same stock at once: each sale takes
 * the product's hilock lock, reads the stock from Redis, writes it back one
 * lower and lets go, so no two sales ever read the same count. Everything
 * runs on one libevent loop: evhttp for the HTTP side, hilock for the lock, a
 * hiredis async context for the stock itself.
 *
 *   POST /sale[?product=P]   buy one item: {"sold":true,"left":N} or
 *                            {"sold":false}; 503 {"error":"..."} when the
 *                            lock or Redis fails
 *   GET  /stock[?product=P]  {"left":N}
 *   GET  /metrics            the lock client's counters (hilock_client_stats)
 *                            and the purchases answered, as Prometheus text
 *
 * The stock of product P is the string key "stock:P"; the lock is named P
 * (docs/keys.md). Both live on the one Redis of --redis-host and
 * --redis-port, unless --redlock names the Redlock masters: then the lock
 * is taken on a majority of them and the stock stays on that one Redis,
 * which may be one of the masters or another server. The stock is data,
 * not a lock: a majority cannot hold it, it lives in one place, and
 * Redlock makes the lock survive the loss of a master, not the stock.
 *
 * With --cluster the lock and the stock are in a Redis Cluster: the lock
 * through hilock's cluster support, the stock under "stock:{P}", whose hash
 * tag puts it in the slot of the lock key P, so both are on one master.
 * The stock connection starts at the first node listed and follows MOVED
 * replies to the master of that slot (not ASK: a slot being resharded
 * answers 503 until it has moved).
 *
 * With --sentinel and --master the lock is on the master that the
 * Sentinels name, and so is the stock: its address is asked of them once,
 * at startup. hilock follows the master through a failover; this example's
 * stock connection does not (it would have to ask the Sentinels again, as
 * hilock does).
 *
 * SIGINT or SIGTERM stops accepting connections, lets the sales in flight
 * finish and their answers go out (at most DRAIN_MS), releases their locks
 * and exits 0. It prints a startup line and errors, nothing else.
 *
 * What one client may cost is bounded, since the loop that answers it also
 * renews the locks: a request's line and headers HEADERS_MAX bytes, its
 * body BODY_MAX (larger ones are answered with an error and closed before
 * they are read), a connection that sends nothing for --idle-ms is closed,
 * and past --max-connections the server accepts no more until one closes
 * (they wait in the kernel's backlog). libevent 2.1 has no connection
 * limit of its own: the server counts connections in as it accepts them
 * and out through their close callbacks.
 *
 * The stock write is a guarded command (hilock_lock_guarded): one script
 * on the lock's Redis checks that this sale still holds the lock and only
 * then writes, so a sale paused past its lease has its write refused
 * (answered 503 "lock lost") instead of overwriting a newer count. With
 * --redlock there is no one node to ask, and the stock is written as a
 * plain SET: a sale paused past its lease could then still write after
 * the lock moved on (docs/guarded-writes.md). --unguarded writes the
 * plain SET everywhere, and --pause-ms N stops the first sale for N ms
 * between its read and its write: with --lease-ms shorter than that, the
 * pause that guarded writes exist for, on demand. */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <time.h>

#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#ifdef HILOCK_HAVE_TLS
#include <hiredis/hiredis_ssl.h>
#endif

#include <hilock/hilock.h>

#define LOCK_WAIT_MS 5000   /* longest wait for a product's lock */
#define REDIS_STEP_MS 3000  /* longest wait for one stock read or write */
#define DRAIN_MS 10000      /* longest wait for in-flight sales at shutdown */
#define PRODUCT_MAX 64
#define LIST_TEXT_MAX 1024    /* longest --redlock, --sentinel or --cluster
                                 list */
#define SENTINEL_ASK_MS 2000  /* longest wait for a Sentinel's answer */
#define REDIRECTS_MAX 3       /* MOVED replies followed for one command */
#define HEADERS_MAX 8192      /* request line and headers, bytes */
#define BODY_MAX 4096         /* request body, bytes (the API takes none) */
#define IDLE_MS 10000         /* default --idle-ms */
#define CONNECTIONS_MAX 512   /* default --max-connections */

struct sale;

/* Where the lock is: on the stock's Redis, on Redlock masters, on the
 * master that Sentinels name, or in a Redis Cluster. */
enum topo { TOPO_ONE, TOPO_REDLOCK, TOPO_SENTINEL, TOPO_CLUSTER };

struct shop {
    struct event_base *base;
    struct evhttp *http;
    struct evhttp_bound_socket *listener;
    struct hilock_client *locks;
    redisAsyncContext *redis;   /* stock reads and writes; NULL: reconnect */
    const char *redis_host;     /* the stock's Redis (and the lock's */
    int redis_port;             /* with TOPO_ONE) */
    char stock_host[256];       /* the master the Sentinels named, or where
                                   MOVED sent the stock */
    enum topo topo;
    struct hilock_endpoint nodes[HILOCK_SEEDS_MAX];  /* --redlock masters,
                                            --sentinel or --cluster nodes */
    size_t nnodes;              /* 0: the lock is on the stock's Redis */
    const char *master_name;    /* --master */
    const char *cacert;         /* --cacert: lock and stock over TLS */
#ifdef HILOCK_HAVE_TLS
    redisSSLContext *ssl;       /* the stock connection's TLS */
#endif
    char list_text[LIST_TEXT_MAX];  /* the list, split in place */
    const char *product;        /* default product */
    uint64_t next_tag;          /* owner tag of the next sale's lock */
    int inflight;               /* sales and stock queries not answered */
    int unsent;                 /* answers not yet written out */
    int stopping;               /* signal seen: no new work */
    int finishing;              /* shop_finish scheduled */
    int forced;                 /* drain timed out: cancel what is left */
    uint64_t answered[3];       /* purchases answered, by enum outcome */
    struct event *sig_int, *sig_term, *drain;
    int idle_ms;                /* --idle-ms */
    int conns_max;              /* --max-connections */
    int conns;                  /* HTTP connections open */
    int accepting;              /* the listener is enabled */
    uint64_t lease_ms;          /* --lease-ms; 0: the watchdog renews */
    int pause_ms;               /* --pause-ms: the first sale's stop */
    int paused;                 /* that sale has been chosen */
    int unguarded;              /* --unguarded: plain SET of the stock */
};

enum sale_kind { SALE_BUY, SALE_QUERY };

/* How a purchase was answered: the label of inventory_purchases_total. */
enum outcome { OUT_SOLD, OUT_SOLD_OUT, OUT_FAILED };
static const char *const outcome_names[] = {"sold", "sold_out", "failed"};

/* One HTTP request from arrival to answer. */
struct sale {
    struct shop *shop;
    struct evhttp_request *req;
    enum sale_kind kind;
    struct hilock_lock *lock;   /* SALE_BUY only */
    struct event *deadline;     /* armed while a Redis reply is awaited */
    char key[PRODUCT_MAX + 10]; /* "stock:<product>" ("stock:{<product>}") */
    long long left;             /* stock after this sale */
    int redirects;              /* MOVED replies followed */
    long long start_ms;         /* arrival, monotonic */
    int sold;
    int lost;                   /* on_lost fired */
    const char *error;          /* set: answer 503 with it */
};

static void shop_finish_later(struct shop *shop);

static long long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* After a stop signal: end once every request is answered and every answer
 * written (evhttp_free would drop answers still in an output buffer). */
static void shop_maybe_finish(struct shop *shop)
{
    if (shop->stopping && shop->inflight == 0 && shop->unsent == 0)
        shop_finish_later(shop);
}

/* ---- answering --------------------------------------------------------- */

/* An answer has been written out. (One whose connection died first is never
 * reported; the drain timer bounds the wait for those.) */
static void on_sent(struct evhttp_request *req, void *arg)
{
    struct shop *shop = arg;
    shop->unsent--;
    shop_maybe_finish(shop);
}

/* Send code with body (of Content-Type type; NULL: there was no memory
 * for it), counted in shop->unsent until written out; frees body. */
static void reply_body(struct shop *shop, struct evhttp_request *req,
                       int code, const char *reason, const char *type,
                       struct evbuffer *body)
{
    if (evhttp_request_get_connection(req)) {  /* NULL: the client left */
        shop->unsent++;
        evhttp_request_set_on_complete_cb(req, on_sent, shop);
    }
    if (!body) {
        evhttp_send_error(req, HTTP_INTERNAL, NULL);
        return;
    }
    evhttp_add_header(evhttp_request_get_output_headers(req),
                      "Content-Type", type);
    evhttp_send_reply(req, code, reason, body);
    evbuffer_free(body);
}

/* Send code with a JSON body made from fmt. */
static void reply_json(struct shop *shop, struct evhttp_request *req,
                       int code, const char *reason, const char *fmt, ...)
{
    struct evbuffer *body = evbuffer_new();
    va_list ap;
    if (body) {
        va_start(ap, fmt);
        evbuffer_add_vprintf(body, fmt, ap);
        va_end(ap);
    }
    reply_body(shop, req, code, reason, "application/json", body);
}

/* Answer the request of sale s, free it and everything it owns; the last one
 * to finish after a stop signal ends the server. */
static void sale_answer(struct sale *s)
{
    struct shop *shop = s->shop;
    if (s->kind == SALE_BUY)
        shop->answered[s->error ? OUT_FAILED : s->sold ? OUT_SOLD
                                                       : OUT_SOLD_OUT]++;
    if (s->error)
        reply_json(shop, s->req, 503, "Service Unavailable",
                   "{\"error\":\"%s\"}\n", s->error);
    else if (s->kind == SALE_QUERY)
        reply_json(shop, s->req, HTTP_OK, "OK", "{\"left\":%lld}\n", s->left);
    else if (s->sold)
        reply_json(shop, s->req, HTTP_OK, "OK", "{\"sold\":true,\"left\":%lld}\n",
                   s->left);
    else
        reply_json(shop, s->req, HTTP_OK, "OK", "{\"sold\":false}\n");
    /* Not held any more, except after a forced stop: then freeing the
     * handle releases it without waiting for the reply. Once the client is
     * gone (shop->locks NULL), so is the handle. */
    if (s->lock && shop->locks)
        hilock_lock_free(s->lock);
    event_free(s->deadline);
    free(s);
    shop->inflight--;
    shop_maybe_finish(shop);
}

static void on_released(struct hilock_lock *lock, int status,
                        const struct hilock_result *left, void *arg)
{
    struct sale *s = arg;
    /* The answer is about the stock, which was read (and written) under the
     * lock; a failed release changes none of that. ENOTOWNER: the lease ran
     * out first; other errors: the lease will run out. */
    if (status != 0 && status != HILOCK_ECANCELED)
        fprintf(stderr, "inventory-server: release: %s\n",
                hilock_strerror(status));
    sale_answer(s);
}

/* Let go of the lock (when held), then answer. */
static void sale_release(struct sale *s)
{
    if (s->lock && !s->shop->forced && hilock_lock_hold_count(s->lock) > 0 &&
        hilock_lock_release(s->lock, on_released, s) == 0)
        return;
    sale_answer(s);
}

/* ---- the stock in Redis ------------------------------------------------ */

static void on_redis_connected(const redisAsyncContext *ac, int status)
{
    struct shop *shop = ac->data;
    if (status != REDIS_OK) {
        fprintf(stderr, "inventory-server: redis %s:%d: %s\n",
                shop->redis_host, shop->redis_port, ac->errstr);
        if (shop->redis == ac)
            shop->redis = NULL;
    }
}

static void on_redis_disconnected(const redisAsyncContext *ac, int status)
{
    struct shop *shop = ac->data;
    if (status != REDIS_OK && !shop->stopping)
        fprintf(stderr, "inventory-server: redis connection lost: %s\n",
                ac->errstr);
    if (shop->redis == ac)
        shop->redis = NULL;
}

/* The stock connection, (re)connecting when there is none. Commands sent
 * before the connection is up wait in hiredis's output buffer. NULL when no
 * context can be made (message on stderr) or after a forced stop. */
static redisAsyncContext *shop_redis(struct shop *shop)
{
    if (shop->redis || shop->forced)
        return shop->redis;
    redisAsyncContext *ac = redisAsyncConnect(shop->redis_host,
                                              shop->redis_port);
    if (!ac || ac->err) {
        fprintf(stderr, "inventory-server: redis: %s\n",
                ac ? ac->errstr : "out of memory");
        if (ac)
            redisAsyncFree(ac);
        return NULL;
    }
#ifdef HILOCK_HAVE_TLS
    if (shop->ssl &&
        redisInitiateSSLWithContext(&ac->c, shop->ssl) != REDIS_OK) {
        fprintf(stderr, "inventory-server: redis TLS: %s\n", ac->c.errstr);
        redisAsyncFree(ac);
        return NULL;
    }
#endif
    ac->data = shop;
    redisLibeventAttach(ac, shop->base);
    redisAsyncSetConnectCallback(ac, on_redis_connected);
    redisAsyncSetDisconnectCallback(ac, on_redis_disconnected);
    shop->redis = ac;
    return ac;
}

/* A Redis reply did not come within REDIS_STEP_MS: the server is stalled or
 * the link is dead. Dropping the context completes every request on it with
 * a NULL reply (this sale's too); the next request reconnects. */
static void on_redis_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct sale *s = arg;
    redisAsyncContext *ac = s->shop->redis;
    fprintf(stderr, "inventory-server: redis did not answer in %d ms\n",
            REDIS_STEP_MS);
    s->shop->redis = NULL;
    if (ac)
        redisAsyncFree(ac);
}

/* Send argv for sale s with fn as the reply callback, under the step
 * deadline. -1 (nothing sent, fn never called) when there is no connection. */
static int sale_command(struct sale *s, redisCallbackFn *fn, int argc,
                        const char **argv)
{
    redisAsyncContext *ac = shop_redis(s->shop);
    if (!ac || redisAsyncCommandArgv(ac, fn, s, argc, argv, NULL) != REDIS_OK)
        return -1;
    struct timeval tv = {REDIS_STEP_MS / 1000, (REDIS_STEP_MS % 1000) * 1000};
    evtimer_add(s->deadline, &tv);
    return 0;
}

/* A MOVED reply (--cluster): point the stock connection at the master it
 * names, unless it is there already, and return 0 for the caller to send
 * its command again; -1 for any other reply, or after REDIRECTS_MAX. The
 * old connection is closed once its other replies (MOVED too, most
 * likely) are in. */
static int sale_moved(struct sale *s, const redisReply *r)
{
    struct shop *shop = s->shop;
    char host[sizeof(shop->stock_host)];
    int port;
    if (shop->topo != TOPO_CLUSTER || !r || r->type != REDIS_REPLY_ERROR ||
        s->redirects >= REDIRECTS_MAX ||
        sscanf(r->str, "MOVED %*d %255[^:]:%d", host, &port) != 2)
        return -1;
    s->redirects++;
    if (port == shop->redis_port && strcmp(host, shop->redis_host) == 0)
        return 0;  /* moved already, by another sale's reply */
    memcpy(shop->stock_host, host, sizeof(host));
    shop->redis_host = shop->stock_host;
    shop->redis_port = port;
    redisAsyncContext *old = shop->redis;
    shop->redis = NULL;
    if (old)
        redisAsyncDisconnect(old);
    return 0;
}

/* The stock in a GET reply: 0 for nil, -1 for an error or garbage. */
static long long stock_of(const redisReply *r)
{
    if (!r)
        return -1;
    if (r->type == REDIS_REPLY_NIL)
        return 0;
    if (r->type != REDIS_REPLY_STRING)
        return -1;
    char *end;
    errno = 0;
    long long n = strtoll(r->str, &end, 10);
    return (errno || end == r->str || *end || n < 0) ? -1 : n;
}

static void on_stored(redisAsyncContext *ac, void *reply, void *arg);

/* The guarded write's outcome: sold, or refused because the lease ran out
 * and the lock may be someone else's now (nothing was written). */
static void on_guarded_stored(struct hilock_lock *lock, int status,
                              const struct hilock_reply *reply, void *arg)
{
    struct sale *s = arg;
    (void)lock;
    if (status == 0 && (reply->type == HILOCK_REPLY_STATUS ||
                        reply->type == HILOCK_REPLY_LOST))
        s->sold = 1;  /* LOST: applied once, its reply lost */
    else if (status == HILOCK_ENOTOWNER)
        s->error = "lock lost";
    else
        s->error = status ? hilock_strerror(status) : "stock write failed";
    sale_release(s);
}

/* Write the stock left by sale s; answers on failure. Guarded: only while
 * s still holds the lock (one script on the lock's Redis). */
static void sale_write_stock(struct sale *s)
{
    char buf[24];
    snprintf(buf, sizeof(buf), "%lld", s->left);
    const char *argv[] = {"SET", s->key, buf};
    if (!s->shop->unguarded && s->shop->topo != TOPO_REDLOCK) {
        size_t lens[] = {3, strlen(s->key), strlen(buf)}, key = 1;
        struct hilock_guarded_cmd set = {3, argv, lens, 1, &key};
        int rc = hilock_lock_guarded(s->lock, &set, 1, 0, on_guarded_stored,
                                     s);
        if (rc != 0) {
            s->error = hilock_strerror(rc);
            sale_release(s);
        }
        return;
    }
    if (sale_command(s, on_stored, 3, argv) != 0) {
        s->error = "redis unavailable";
        sale_release(s);
    }
}

static void sale_read_stock(struct sale *s);

static void on_paused(evutil_socket_t fd, short what, void *arg)
{
    sale_write_stock(arg);
}

/* Write the stock now, or --pause-ms later for the first sale. */
static void sale_write_maybe_later(struct sale *s)
{
    struct shop *shop = s->shop;
    struct timeval tv = {shop->pause_ms / 1000, (shop->pause_ms % 1000) * 1000};
    if (shop->pause_ms > 0 && !shop->paused &&
        event_base_once(shop->base, -1, EV_TIMEOUT, on_paused, s, &tv) == 0) {
        shop->paused = 1;
        return;
    }
    sale_write_stock(s);
}

static void on_stored(redisAsyncContext *ac, void *reply, void *arg)
{
    struct sale *s = arg;
    redisReply *r = reply;
    evtimer_del(s->deadline);
    if (sale_moved(s, r) == 0) {
        sale_write_stock(s);
        return;
    }
    if (r && r->type == REDIS_REPLY_STATUS)
        s->sold = 1;
    else
        s->error = r ? "stock write failed" : "redis unavailable";
    sale_release(s);
}

/* The stock as read under the lock: sell one if there is one. */
static void on_stock(redisAsyncContext *ac, void *reply, void *arg)
{
    struct sale *s = arg;
    evtimer_del(s->deadline);
    const redisReply *r = reply;
    if (sale_moved(s, r) == 0) {
        sale_read_stock(s);
        return;
    }
    long long n = stock_of(r);
    if (n < 0)
        s->error = !r ? "redis unavailable"
                   : r->type == REDIS_REPLY_ERROR ? "redis error"
                   : "bad stock value";
    else if (s->kind == SALE_QUERY)
        s->left = n;
    else if (s->lost)
        s->error = "lock lost";
    else if (n > 0) {
        s->left = n - 1;
        sale_write_maybe_later(s);
        return;
    }
    sale_release(s);
}

/* Read the stock for sale s; answers on failure. */
static void sale_read_stock(struct sale *s)
{
    const char *argv[] = {"GET", s->key};
    if (sale_command(s, on_stock, 2, argv) != 0) {
        s->error = "redis unavailable";
        sale_release(s);
    }
}

/* ---- the lock ---------------------------------------------------------- */

static void on_lost(struct hilock_lock *lock, int status,
                    const struct hilock_result *res, void *arg)
{
    ((struct sale *)arg)->lost = 1;
}

static void on_locked(struct hilock_lock *lock, int status,
                      const struct hilock_result *token, void *arg)
{
    struct sale *s = arg;
    if (status == 0 && !s->shop->forced) {
        sale_read_stock(s);
        return;
    }
    if (status == HILOCK_ETIMEDOUT)  /* the wait, or a Redis deadline */
        s->error = now_ms() - s->start_ms >= LOCK_WAIT_MS
                       ? "lock wait timed out" : "redis timed out";
    else
        s->error = status ? hilock_strerror(status) : "shutting down";
    sale_release(s);
}

/* ---- requests ---------------------------------------------------------- */

/* The product named by the query (?product=P) or the default, copied into
 * out; -1 when it is empty, too long or has characters outside
 * [A-Za-z0-9._:-]. */
static int product_of(struct evhttp_request *req, const char *dflt,
                      char *out)
{
    const char *query = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
    struct evkeyvalq params;
    const char *p = dflt;
    int rc = 0;
    TAILQ_INIT(&params);
    if (query && evhttp_parse_query_str(query, &params) == 0) {
        const char *v = evhttp_find_header(&params, "product");
        if (v)
            p = v;
    }
    size_t len = strlen(p);
    if (len == 0 || len > PRODUCT_MAX ||
        strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                  "0123456789._:-") != len)
        rc = -1;
    else
        memcpy(out, p, len + 1);
    evhttp_clear_headers(&params);
    return rc;
}

/* A new sale for req on product, counted in flight; NULL on no memory. */
static struct sale *sale_new(struct shop *shop, struct evhttp_request *req,
                             enum sale_kind kind, const char *product)
{
    struct sale *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->deadline = evtimer_new(shop->base, on_redis_deadline, s);
    if (!s->deadline) {
        free(s);
        return NULL;
    }
    s->shop = shop;
    s->req = req;
    s->kind = kind;
    s->start_ms = now_ms();
    if (shop->topo == TOPO_CLUSTER)  /* the slot of the lock key, product */
        snprintf(s->key, sizeof(s->key), "stock:{%s}", product);
    else
        snprintf(s->key, sizeof(s->key), "stock:%s", product);
    shop->inflight++;
    return s;
}

/* Start a purchase: a lock handle of its own, then the bounded wait. */
static void sale_start(struct sale *s, const char *product)
{
    struct hilock_lock *lock;
    int rc = hilock_lock_new(s->shop->locks, product, strlen(product),
                             ++s->shop->next_tag, &lock);
    if (rc == 0) {
        s->lock = lock;
        hilock_lock_on_lost(lock, on_lost, s);
        rc = hilock_lock_acquire(lock, LOCK_WAIT_MS, s->shop->lease_ms,
                                 on_locked, s);
    }
    if (rc != 0) {
        s->error = hilock_strerror(rc);
        sale_answer(s);
    }
}

/* ---- /metrics ---------------------------------------------------------- */

/* The lock client's counters as Prometheus text, appended to b: the
 * library formats them (hilock_stats_prometheus), sized by a first call
 * without a buffer. -1 when the counters cannot be read or no memory. */
static int metrics_lock_client(struct evbuffer *b, struct hilock_client *c)
{
    struct hilock_stats st;
    char *text;
    int len;
    if (hilock_client_stats(c, &st, sizeof(st)) != 0)
        return -1;
    len = hilock_stats_prometheus(&st, sizeof(st), NULL, NULL, 0);
    if (len < 0 || !(text = malloc((size_t)len + 1)))
        return -1;
    hilock_stats_prometheus(&st, sizeof(st), NULL, text, (size_t)len + 1);
    len = evbuffer_add(b, text, (size_t)len);
    free(text);
    return len;
}

/* GET /metrics: the lock client's counters and the purchases answered, in
 * the Prometheus text format (version 0.0.4). */
static void metrics_answer(struct shop *shop, struct evhttp_request *req)
{
    struct evbuffer *b = evbuffer_new();
    if (!b || !shop->locks || metrics_lock_client(b, shop->locks) != 0) {
        if (b)
            evbuffer_free(b);
        reply_json(shop, req, 503, "Service Unavailable",
                   "{\"error\":\"no lock client\"}\n");
        return;
    }
    evbuffer_add_printf(b, "# HELP inventory_purchases_total Purchases "
                           "answered, by outcome.\n"
                           "# TYPE inventory_purchases_total counter\n");
    for (int i = 0; i < 3; i++)
        evbuffer_add_printf(b, "inventory_purchases_total{outcome=\"%s\"} "
                               "%" PRIu64 "\n",
                            outcome_names[i], shop->answered[i]);
    reply_body(shop, req, HTTP_OK, "OK", "text/plain; version=0.0.4", b);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct shop *shop = arg;
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    enum evhttp_cmd_type method = evhttp_request_get_command(req);
    char product[PRODUCT_MAX + 1];
    int buy = path && strcmp(path, "/sale") == 0;
    if (path && strcmp(path, "/metrics") == 0) {
        if (method == EVHTTP_REQ_GET)
            metrics_answer(shop, req);
        else
            reply_json(shop, req, 405, "Method Not Allowed",
                       "{\"error\":\"use GET\"}\n");
        return;
    }
    if (!path || (!buy && strcmp(path, "/stock") != 0)) {
        reply_json(shop, req, HTTP_NOTFOUND, "Not Found", "{\"error\":\"no such path\"}\n");
        return;
    }
    if (method != (buy ? EVHTTP_REQ_POST : EVHTTP_REQ_GET)) {
        reply_json(shop, req, 405, "Method Not Allowed",
                   "{\"error\":\"use %s\"}\n", buy ? "POST" : "GET");
        return;
    }
    if (product_of(req, shop->product, product) != 0) {
        reply_json(shop, req, HTTP_BADREQUEST, "Bad Request",
                   "{\"error\":\"bad product\"}\n");
        return;
    }
    struct sale *s = shop->stopping ? NULL
                                    : sale_new(shop, req, buy ? SALE_BUY : SALE_QUERY, product);
    if (!s) {
        evhttp_add_header(evhttp_request_get_output_headers(req),
                          "Connection", "close");
        reply_json(shop, req, 503, "Service Unavailable", "{\"error\":\"%s\"}\n",
                   shop->stopping ? "shutting down" : "out of memory");
        return;
    }
    if (buy)
        sale_start(s, product);
    else
        sale_read_stock(s);
}

/* ---- start and stop ---------------------------------------------------- */

/* Everything answered (or given up on): free what the server holds and let
 * the loop end. Runs from its own loop turn, never inside evhttp. */
static void shop_finish(evutil_socket_t fd, short what, void *arg)
{
    struct shop *shop = arg;
    if (shop->http) {
        shop->listener = NULL;    /* freed with it; conn_closed runs */
        evhttp_free(shop->http);  /* closes the idle keep-alive connections */
        shop->http = NULL;
    }
    if (shop->redis) {
        redisAsyncContext *ac = shop->redis;
        shop->redis = NULL;
        redisAsyncFree(ac);
    }
    if (shop->locks) {
        hilock_client_free(shop->locks);
        shop->locks = NULL;
    }
    event_base_loopexit(shop->base, NULL);
}

static void shop_finish_later(struct shop *shop)
{
    if (shop->finishing)
        return;
    shop->finishing = 1;
    if (event_base_once(shop->base, -1, EV_TIMEOUT, shop_finish, shop, NULL))
        event_base_loopexit(shop->base, NULL);
}

/* In-flight work did not finish within DRAIN_MS: fail the Redis requests
 * (their sales answer and free their lock handles, which releases a held
 * lock best effort), then cancel the lock operations still pending (their
 * callbacks answer the rest). */
static void on_drain_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct shop *shop = arg;
    fprintf(stderr, "inventory-server: after %d ms, %d request(s) still "
                    "unanswered and %d answer(s) unsent; giving up on them\n",
            DRAIN_MS, shop->inflight, shop->unsent);
    shop->forced = 1;
    if (shop->redis) {
        redisAsyncContext *ac = shop->redis;
        shop->redis = NULL;
        redisAsyncFree(ac);
    }
    struct hilock_client *locks = shop->locks;
    shop->locks = NULL;
    hilock_client_free(locks);
    shop_finish_later(shop);  /* unwritten answers are given up on too */
}

/* SIGINT/SIGTERM: stop accepting, finish what is in flight, then exit. */
static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct shop *shop = arg;
    if (shop->stopping)
        return;
    shop->stopping = 1;
    evsignal_del(shop->sig_int);
    evsignal_del(shop->sig_term);
    if (shop->listener) {
        evhttp_del_accept_socket(shop->http, shop->listener);
        shop->listener = NULL;
    }
    if (shop->inflight == 0 && shop->unsent == 0) {
        shop_finish_later(shop);
        return;
    }
    struct timeval tv = {DRAIN_MS / 1000, 0};
    evtimer_add(shop->drain, &tv);
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: hilock-inventory-server [--port N] [--redis-host H] "
        "[--redis-port N] [--redlock H:N,H:N,H:N | --sentinel H:N,... "
        "--master NAME | --cluster H:N,...] [--product P] [--idle-ms N]\n"
        "       [--max-connections N] [--lease-ms N] [--pause-ms N] "
        "[--unguarded]\n"
        "  --port N        HTTP port on 127.0.0.1 (default 8080; 0: any free)\n"
        "  --redis-host H  Redis host of the stock, and of the lock without\n"
        "                  --redlock (default 127.0.0.1)\n"
        "  --redis-port N  its port (default 6379)\n"
        "  --redlock LIST  take the lock on these Redlock masters instead\n"
        "                  (host:port, comma-separated, an odd number 3..%d)\n"
        "  --sentinel LIST the lock and the stock on the master that these\n"
        "  --master NAME   Sentinels (host:port, comma-separated) know as\n"
        "                  NAME, instead of --redis-host and --redis-port\n"
        "  --cluster LIST  the lock and the stock (key stock:{P}) in the\n"
        "                  Redis Cluster of these nodes (host:port,\n"
        "                  comma-separated, 1..%d), instead of --redis-host\n"
        "                  and --redis-port\n"
        "  --cacert FILE   the lock and the stock over TLS, trusting the CAs\n"
        "                  of FILE (one Redis or --redlock; needs hilock\n"
        "                  built with TLS)\n"
        "  --product P     product of requests without ?product= "
        "(default inventory001)\n"
        "  --idle-ms N     close a connection silent for N ms (default %d)\n"
        "  --max-connections N  accept no more than N at once (default %d)\n"
        "  --lease-ms N    each sale's lock lease (default: the watchdog's,\n"
        "                  renewed while the sale runs)\n"
        "  --pause-ms N    stop the first sale for N ms between its stock\n"
        "                  read and its write (a process paused past its\n"
        "                  lease, on demand)\n"
        "  --unguarded     write the stock with a plain SET, not a guarded\n"
        "                  command (always so with --redlock)\n"
        "POST /sale buys one item; GET /stock shows what is left; GET\n"
        "/metrics shows the lock's counters as Prometheus text.\n",
        HILOCK_MASTERS_MAX, HILOCK_SEEDS_MAX, IDLE_MS, CONNECTIONS_MAX);
}

/* A port number 0..65535 from s, or -1. */
static int port_arg(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    return (*s && !*end && v >= 0 && v <= 65535) ? (int)v : -1;
}

/* Split the --redlock, --sentinel or --cluster list (topo)
 * "host:port,host:port,..." into shop->nodes (only one list). 0, or -1 for
 * an entry without a host or a port 1..65535, or too many;
 * hilock_client_new() checks the rest (for Redlock an odd count of 3 or
 * more; no node twice). */
static int nodes_arg(struct shop *shop, enum topo topo, const char *list)
{
    size_t len = strlen(list);
    size_t max = topo == TOPO_REDLOCK ? HILOCK_MASTERS_MAX : HILOCK_SEEDS_MAX;
    if (len >= sizeof(shop->list_text) || shop->nnodes)
        return -1;
    shop->topo = topo;
    memcpy(shop->list_text, list, len + 1);
    for (char *entry = shop->list_text; entry; ) {
        char *comma = strchr(entry, ',');
        if (comma)
            *comma = '\0';
        char *colon = strrchr(entry, ':');
        if (!colon || colon == entry || shop->nnodes == max)
            return -1;
        *colon = '\0';
        int port = port_arg(colon + 1);
        if (port <= 0)
            return -1;
        shop->nodes[shop->nnodes++] =
            (struct hilock_endpoint){entry, port, NULL};
        entry = comma ? comma + 1 : NULL;
    }
    return 0;
}

/* A count 1..1000000 from s into *v; 0, or -1. */
static int count_arg(const char *s, int *v)
{
    char *end;
    long n = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || n < 1 || n > 1000000)
        return -1;
    *v = (int)n;
    return 0;
}

/* Fill shop from argv; 0, 1 for --help, -1 for a usage error. */
static int parse_args(struct shop *shop, int *port, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"port", required_argument, NULL, 'p'},
        {"redis-host", required_argument, NULL, 'H'},
        {"redis-port", required_argument, NULL, 'r'},
        {"redlock", required_argument, NULL, 'R'},
        {"sentinel", required_argument, NULL, 'S'},
        {"master", required_argument, NULL, 'M'},
        {"cluster", required_argument, NULL, 'C'},
        {"product", required_argument, NULL, 'P'},
        {"cacert", required_argument, NULL, 'T'},
        {"idle-ms", required_argument, NULL, 'I'},
        {"max-connections", required_argument, NULL, 'X'},
        {"lease-ms", required_argument, NULL, 'L'},
        {"pause-ms", required_argument, NULL, 'W'},
        {"unguarded", no_argument, NULL, 'U'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int c, redis_given = 0;
    while ((c = getopt_long(argc, argv, "p:H:r:R:S:M:C:P:I:X:h", longopts,
                            NULL)) !=
           -1) {
        switch (c) {
        case 'p': *port = port_arg(optarg); if (*port < 0) return -1; break;
        case 'H': shop->redis_host = optarg; redis_given = 1; break;
        case 'r':
            shop->redis_port = port_arg(optarg);
            redis_given = 1;
            if (shop->redis_port <= 0)
                return -1;
            break;
        case 'R':
        case 'S':
        case 'C':
            if (nodes_arg(shop, c == 'R'   ? TOPO_REDLOCK
                                : c == 'S' ? TOPO_SENTINEL
                                           : TOPO_CLUSTER, optarg) != 0)
                return -1;
            break;
        case 'M': shop->master_name = optarg; break;
        case 'P': shop->product = optarg; break;
        case 'T': shop->cacert = optarg; break;
        case 'I':
        case 'X':
        case 'W':
            if (count_arg(optarg, c == 'I'   ? &shop->idle_ms
                                  : c == 'X' ? &shop->conns_max
                                             : &shop->pause_ms) != 0)
                return -1;
            break;
        case 'L': {
            int ms;
            if (count_arg(optarg, &ms) != 0)
                return -1;
            shop->lease_ms = (uint64_t)ms;
            break;
        }
        case 'U': shop->unguarded = 1; break;
        case 'h': return 1;
        default: return -1;
        }
    }
    size_t plen = strlen(shop->product);
    int elsewhere = shop->topo == TOPO_SENTINEL || shop->topo == TOPO_CLUSTER;
    if (optind != argc || plen == 0 || plen > PRODUCT_MAX ||
        (elsewhere && redis_given) ||
        (shop->topo == TOPO_SENTINEL) != (shop->master_name != NULL) ||
        (shop->cacert && elsewhere))
        return -1;
    if (shop->topo == TOPO_CLUSTER) {  /* the stock: first asked of the
                                          first node */
        shop->redis_host = shop->nodes[0].host;
        shop->redis_port = shop->nodes[0].port;
    }
    return 0;
}

/* --sentinel: ask the Sentinels in turn for the address of the master
 * they know as --master, for the stock connection. 0, or -1 with a
 * message. (A blocking call, before the loop runs.) */
static int stock_from_sentinels(struct shop *shop)
{
    struct timeval tv = {SENTINEL_ASK_MS / 1000,
                         (SENTINEL_ASK_MS % 1000) * 1000};
    for (size_t i = 0; i < shop->nnodes; i++) {
        redisContext *c = redisConnectWithTimeout(shop->nodes[i].host,
                                                  shop->nodes[i].port, tv);
        redisReply *r = c && !c->err
                            ? redisCommand(c, "SENTINEL get-master-addr-by-name %s",
                                           shop->master_name)
                            : NULL;
        int ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
                 r->element[0]->type == REDIS_REPLY_STRING &&
                 r->element[1]->type == REDIS_REPLY_STRING &&
                 r->element[0]->len < sizeof(shop->stock_host);
        if (ok) {
            memcpy(shop->stock_host, r->element[0]->str,
                   r->element[0]->len + 1);
            shop->redis_host = shop->stock_host;
            shop->redis_port = port_arg(r->element[1]->str);
            ok = shop->redis_port > 0;
        }
        freeReplyObject(r);
        redisFree(c);
        if (ok)
            return 0;
    }
    fprintf(stderr, "inventory-server: no Sentinel named a master %s\n",
            shop->master_name);
    return -1;
}

/* The listener of shop, NULL when closed (a stop signal). */
static struct evconnlistener *shop_listener(struct shop *shop)
{
    return shop->listener ? evhttp_bound_socket_get_listener(shop->listener)
                          : NULL;
}

/* An HTTP connection closed: count it out, and accept again below the
 * cap. */
static void conn_closed(struct evhttp_connection *evcon, void *arg)
{
    struct shop *shop = arg;
    struct evconnlistener *l = shop_listener(shop);
    (void)evcon;
    shop->conns--;
    if (!shop->accepting && shop->conns < shop->conns_max && l) {
        evconnlistener_enable(l);
        shop->accepting = 1;
    }
}

/* A connection just accepted, and its bufferevent (held by a reference of
 * ours until conn_watch runs). */
struct conn_pending {
    struct shop *shop;
    struct bufferevent *bev;
};

/* The loop turn after an accept: evhttp has made the connection by now,
 * and is the bufferevent's event callback's argument (libevent 2.1 and
 * 2.2 do so; there is no other way to reach it). Ask it to tell
 * conn_closed when it goes; if it went already, that is now. */
static void conn_watch(evutil_socket_t fd, short what, void *arg)
{
    struct conn_pending *c = arg;
    bufferevent_event_cb event_cb = NULL;
    void *evcon = NULL;
    (void)fd;
    (void)what;
    bufferevent_getcb(c->bev, NULL, NULL, &event_cb, &evcon);
    if (event_cb && evcon)
        evhttp_connection_set_closecb(evcon, conn_closed, c->shop);
    else
        conn_closed(NULL, c->shop);
    bufferevent_decref(c->bev);
    free(c);
}

/* evhttp's bufferevent for a new connection, counted in; at the cap the
 * listener stops accepting. NULL (evhttp then makes one itself, not
 * counted) when memory is short. */
static struct bufferevent *conn_new(struct event_base *base, void *arg)
{
    struct shop *shop = arg;
    struct timeval now = {0, 0};
    struct conn_pending *c = malloc(sizeof(*c));
    struct bufferevent *bev =
        c ? bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE) : NULL;
    if (!bev || event_base_once(base, -1, EV_TIMEOUT, conn_watch, c, &now)) {
        if (bev)
            bufferevent_free(bev);
        free(c);
        return NULL;
    }
    bufferevent_incref(bev);
    *c = (struct conn_pending){shop, bev};
    struct evconnlistener *l = shop_listener(shop);
    if (++shop->conns >= shop->conns_max && shop->accepting && l) {
        evconnlistener_disable(l);
        shop->accepting = 0;
    }
    return bev;
}

/* The bounds on what a client may cost (see the top of the file). */
static void shop_limit(struct shop *shop)
{
    struct timeval idle = {shop->idle_ms / 1000, shop->idle_ms % 1000 * 1000};
    evhttp_set_max_headers_size(shop->http, HEADERS_MAX);
    evhttp_set_max_body_size(shop->http, BODY_MAX);
    evhttp_set_timeout_tv(shop->http, &idle);
    evhttp_set_bevcb(shop->http, conn_new, shop);
    shop->accepting = 1;
}

/* Create the lock client, the signal events and the HTTP listener on
 * 127.0.0.1:port. 0, or -1 with a message on stderr. */
static int shop_open(struct shop *shop, int port)
{
    struct hilock_options opts;
    hilock_options_init(&opts);
    opts.node.host = shop->redis_host;
    opts.node.port = shop->redis_port;
    if (shop->topo == TOPO_CLUSTER) {
        opts.topology = HILOCK_TOPOLOGY_CLUSTER;
        opts.cluster.seeds = shop->nodes;
        opts.cluster.count = shop->nnodes;
    } else if (shop->topo == TOPO_SENTINEL) {
        opts.topology = HILOCK_TOPOLOGY_SENTINEL;
        opts.sentinel.nodes = shop->nodes;
        opts.sentinel.count = shop->nnodes;
        opts.sentinel.master_name = shop->master_name;
    } else if (shop->topo == TOPO_REDLOCK) {
        opts.topology = HILOCK_TOPOLOGY_REDLOCK;
        opts.redlock.masters = shop->nodes;
        opts.redlock.count = shop->nnodes;
    }
    if (shop->cacert) {
        opts.tls.mode = HILOCK_TLS_VERIFY;
        opts.tls.ca_file = shop->cacert;
    }
#ifdef HILOCK_HAVE_TLS
    redisSSLContextError ssl_err = REDIS_SSL_CTX_NONE;
    if (shop->cacert &&
        !(shop->ssl = redisCreateSSLContext(shop->cacert, NULL, NULL, NULL,
                                            NULL, &ssl_err))) {
        fprintf(stderr, "inventory-server: TLS: %s\n",
                redisSSLContextGetError(ssl_err));
        return -1;
    }
#endif
    int rc = hilock_client_new(shop->base, &opts, &shop->locks);
    if (rc != 0) {
        fprintf(stderr, "inventory-server: hilock: %s%s\n", hilock_strerror(rc),
                rc != HILOCK_EINVAL || !shop->nnodes ? ""
                : shop->topo == TOPO_REDLOCK
                    ? " (--redlock: an odd number of masters from 3, none "
                      "twice)"
                    : " (a node listed twice? a bad --master?)");
        return -1;
    }
    shop->sig_int = evsignal_new(shop->base, SIGINT, on_signal, shop);
    shop->sig_term = evsignal_new(shop->base, SIGTERM, on_signal, shop);
    shop->drain = evtimer_new(shop->base, on_drain_timeout, shop);
    shop->http = evhttp_new(shop->base);
    if (!shop->sig_int || !shop->sig_term || !shop->drain || !shop->http ||
        evsignal_add(shop->sig_int, NULL) || evsignal_add(shop->sig_term, NULL)) {
        fprintf(stderr, "inventory-server: libevent setup failed\n");
        return -1;
    }
    evhttp_set_allowed_methods(shop->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST);
    evhttp_set_gencb(shop->http, on_request, shop);
    shop_limit(shop);
    shop->listener = evhttp_bind_socket_with_handle(shop->http, "127.0.0.1",
                                                    (ev_uint16_t)port);
    if (!shop->listener) {
        fprintf(stderr, "inventory-server: cannot listen on 127.0.0.1:%d: %s\n",
                port, strerror(errno));
        return -1;
    }
    return 0;
}

/* The port the listener got (port 0 asks the kernel for one). */
static int shop_port(struct shop *shop)
{
    struct sockaddr_storage ss;
    ev_socklen_t len = sizeof(ss);
    evutil_socket_t fd = evhttp_bound_socket_get_fd(shop->listener);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return -1;
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* Free what shop_open made; for the error path and after the loop. */
static void shop_close(struct shop *shop)
{
    shop->listener = NULL; /* freed with http; conn_closed runs */
    if (shop->http)
        evhttp_free(shop->http);
    if (shop->redis)
        redisAsyncFree(shop->redis);
    hilock_client_free(shop->locks);
    if (shop->sig_int)
        event_free(shop->sig_int);
    if (shop->sig_term)
        event_free(shop->sig_term);
    if (shop->drain)
        event_free(shop->drain);
#ifdef HILOCK_HAVE_TLS
    if (shop->ssl)
        redisFreeSSLContext(shop->ssl);
#endif
}

int main(int argc, char **argv)
{
    struct shop shop = {.redis_host = "127.0.0.1", .redis_port = 6379,
                        .product = "inventory001", .idle_ms = IDLE_MS,
                        .conns_max = CONNECTIONS_MAX};
    int port = 8080;
    int rc = parse_args(&shop, &port, argc, argv);
    if (rc != 0) {
        usage(rc > 0 ? stdout : stderr);
        return rc > 0 ? 0 : 2;
    }
    signal(SIGPIPE, SIG_IGN);  /* a client hanging up must not kill us */
    if (shop.topo == TOPO_SENTINEL && stock_from_sentinels(&shop) != 0)
        return 1;
    shop.base = event_base_new();
    if (!shop.base || shop_open(&shop, port) != 0) {
        shop_close(&shop);
        if (shop.base)
            event_base_free(shop.base);
        return 1;
    }
    if (shop.topo == TOPO_SENTINEL)
        printf("inventory-server: listening on http://127.0.0.1:%d (lock and "
               "stock on the master %s of the Sentinels, now %s:%d, product "
               "%s)\n", shop_port(&shop), shop.master_name, shop.redis_host,
               shop.redis_port, shop.product);
    else if (shop.topo == TOPO_CLUSTER)
        printf("inventory-server: listening on http://127.0.0.1:%d (lock and "
               "stock in the Redis Cluster of %s:%d, product %s)\n",
               shop_port(&shop), shop.redis_host, shop.redis_port,
               shop.product);
    else if (shop.topo == TOPO_REDLOCK)
        printf("inventory-server: listening on http://127.0.0.1:%d (stock on "
               "redis %s:%d, lock on %zu Redlock masters, product %s)\n",
               shop_port(&shop), shop.redis_host, shop.redis_port,
               shop.nnodes, shop.product);
    else
        printf("inventory-server: listening on http://127.0.0.1:%d "
               "(redis %s:%d, product %s)\n", shop_port(&shop),
               shop.redis_host, shop.redis_port, shop.product);
    fflush(stdout);
    rc = event_base_dispatch(shop.base);
    shop_close(&shop);
    event_base_free(shop.base);
    return rc < 0 ? 1 : 0;
}
