/* SPDX-License-Identifier: BSD-3-Clause */
/* sc_oversell.c -- the inventory that must never be oversold.
 *
 * Stock S in Redis; P worker processes with C concurrent buyers each make
 * N purchases in all. A purchase: acquire the lock "inventory001" (watchdog
 * lease, 10 s wait), GET the stock, and if it is above 0 SET it to one less
 * and count a sale, then release. Checks: exactly min(S, N) sales, the
 * final stock S - sales (0 when N >= S), every unit sold once (the stock
 * values the sales read are all different), and critical sections never
 * overlap.
 *
 * --no-lock runs the same purchases without the lock, to show that the
 * checks catch overselling. Its exit status says whether the harness did
 * its job: 0 when the oversell was detected (expected), 1 when it was not
 * (with the default load it always is). */
#include "bench.h"

#include <event2/event.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <hilock/hilock.h>

#include "keys.h" /* src/: the key and channel names */

#define O_LOCK "inventory001"
#define O_STOCK BENCH_PREFIX "stock:" O_LOCK
#define O_WAIT_MS 10000
#define O_RETRY_MS 10


struct ocfg {
    int procs, buyers, purchases, stock, no_lock;
    double seconds;
    const char *host;
    int port;
};

/* One purchase. */
struct orec {
    int64_t call_ns, acq_ns, rel_ns;
    int64_t seen; /* stock read; -1: the GET failed */
    int32_t sold;
    int32_t proc;
};

struct ostats {
    uint64_t records, acq_failed, errors, lost;
    int64_t overrun;
};

/* ---- worker ------------------------------------------------------------ */

struct oproc;

struct buyer {
    struct oproc *p;
    struct hilock_lock *lock;
    struct orec cur;
    int busy;
};

struct oproc {
    const struct ocfg *cfg;
    int index;
    struct event_base *base;
    struct hilock_client *client;
    struct kv *kv;
    struct buyer *b;
    int tickets;  /* purchases this process still has to make */
    int active;
    int stopping;
    int closing;
    struct orec *recs;
    size_t n, cap;
    struct ostats st;
};

static void buyer_next(struct buyer *b);

static void buyer_idle(struct buyer *b)
{
    b->busy = 0;
    if (--b->p->active == 0)
        event_base_loopexit(b->p->base, NULL);
}

static void on_released(struct hilock_lock *lock, int status,
                        const struct hilock_result *res, void *arg)
{
    struct buyer *b = arg;
    (void)lock;
    (void)res;
    if (b->p->closing)
        return;
    b->p->st.errors += status != 0;
    buyer_next(b);
}

/* The purchase is over: record it, release (with the lock), go on. */
static void buyer_end(struct buyer *b)
{
    struct oproc *p = b->p;
    b->cur.rel_ns = now_ns();
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 1024;
        struct orec *r = realloc(p->recs, cap * sizeof(*r));
        if (r) {
            p->recs = r;
            p->cap = cap;
        }
    }
    if (p->n < p->cap)
        p->recs[p->n++] = b->cur;
    else
        p->st.errors++;
    if (p->cfg->no_lock)
        buyer_next(b);
    else if (hilock_lock_release(b->lock, on_released, b) != 0) {
        p->st.errors++;
        buyer_next(b);
    }
}

static void on_set(redisAsyncContext *ac, void *reply, void *arg)
{
    struct buyer *b = arg;
    const redisReply *r = reply;
    (void)ac;
    if (b->p->closing)
        return;
    if (r && r->type == REDIS_REPLY_STATUS)
        b->cur.sold = 1;
    else
        b->p->st.errors++;
    buyer_end(b);
}

static void on_get(redisAsyncContext *ac, void *reply, void *arg)
{
    struct buyer *b = arg;
    struct oproc *p = b->p;
    const redisReply *r = reply;
    char num[24];
    (void)ac;
    if (p->closing)
        return;
    if (!r || r->type != REDIS_REPLY_STRING) {
        p->st.errors++;
        buyer_end(b);
        return;
    }
    b->cur.seen = strtoll(r->str, NULL, 10);
    if (b->cur.seen <= 0) {
        buyer_end(b); /* sold out: no sale */
        return;
    }
    int n = snprintf(num, sizeof num, "%" PRId64, b->cur.seen - 1);
    const char *argv[3] = {"SET", O_STOCK, num};
    size_t lens[3] = {3, sizeof(O_STOCK) - 1, (size_t)n};
    if (kv_cmd(p->kv, on_set, b, 3, argv, lens) != 0) {
        p->st.errors++;
        buyer_end(b);
    }
}

/* The critical section: read the stock. */
static void buyer_section(struct buyer *b)
{
    const char *argv[2] = {"GET", O_STOCK};
    size_t lens[2] = {3, sizeof(O_STOCK) - 1};
    b->cur.acq_ns = now_ns();
    if (kv_cmd(b->p->kv, on_get, b, 2, argv, lens) != 0) {
        b->p->st.errors++;
        buyer_end(b);
    }
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    buyer_next(arg);
}

static void on_acquired(struct hilock_lock *lock, int status,
                        const struct hilock_result *res, void *arg)
{
    struct buyer *b = arg;
    struct oproc *p = b->p;
    struct timeval tv = {0, O_RETRY_MS * 1000};
    (void)lock;
    (void)res;
    if (p->closing)
        return;
    if (status == 0) {
        buyer_section(b);
        return;
    }
    p->st.acq_failed++;
    p->tickets++; /* not bought: try again */
    if (event_base_once(p->base, -1, EV_TIMEOUT, on_retry, b, &tv) != 0)
        buyer_idle(b);
}

/* Take a ticket and buy, or stop. */
static void buyer_next(struct buyer *b)
{
    struct oproc *p = b->p;
    if (p->stopping || p->tickets == 0) {
        buyer_idle(b);
        return;
    }
    p->tickets--;
    memset(&b->cur, 0, sizeof b->cur);
    b->cur.call_ns = now_ns();
    b->cur.seen = -1;
    b->cur.proc = p->index;
    if (p->cfg->no_lock) {
        buyer_section(b);
    } else if (hilock_lock_acquire(b->lock, O_WAIT_MS, 0, on_acquired, b) !=
               0) {
        p->st.errors++;
        buyer_idle(b);
    }
}

static void on_lost(struct hilock_lock *lock, int status,
                    const struct hilock_result *res, void *arg)
{
    struct buyer *b = arg;
    (void)lock;
    (void)status;
    (void)res;
    b->p->st.lost++;
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    struct oproc *p = arg;
    (void)fd;
    (void)what;
    p->stopping = 1; /* buyers finish the purchase they are in */
}

static void on_hard(evutil_socket_t fd, short what, void *arg)
{
    struct oproc *p = arg;
    (void)fd;
    (void)what;
    p->st.overrun = 1;
    event_base_loopbreak(p->base);
}

/* Loop, client, connection, buyers of process index. 0 or -1. */
static int oproc_setup(struct oproc *p, const struct ocfg *cfg, int index)
{
    struct hilock_options ho;
    memset(p, 0, sizeof(*p));
    p->cfg = cfg;
    p->index = index;
    p->tickets = cfg->purchases / cfg->procs +
                 (index < cfg->purchases % cfg->procs);
    hilock_options_init(&ho);
    ho.node.host = cfg->host;
    ho.node.port = cfg->port;
    if (!(p->base = event_base_new()) ||
        hilock_client_new(p->base, &ho, &p->client) != 0 ||
        !(p->kv = kv_new(p->base, cfg->host, cfg->port)) ||
        !(p->b = calloc((size_t)cfg->buyers, sizeof(*p->b))))
        return -1;
    for (int i = 0; i < cfg->buyers; i++) {
        struct buyer *b = &p->b[i];
        b->p = p;
        if (hilock_lock_new(p->client, O_LOCK, sizeof(O_LOCK) - 1,
                            (uint64_t)(index * cfg->buyers + i + 1),
                            &b->lock) != 0 ||
            hilock_lock_on_lost(b->lock, on_lost, b) != 0)
            return -1;
    }
    return kv_wait_up(p->base, p->kv);
}

/* Run every buyer until the tickets are gone or the time is up. */
static void oproc_run(struct oproc *p)
{
    double s = p->cfg->seconds;
    struct timeval stop = {(time_t)s, (suseconds_t)((s - (int)s) * 1e6)};
    struct timeval hard = {(time_t)s + 30, 0};
    struct event *ev_stop = evtimer_new(p->base, on_stop, p);
    struct event *ev_hard = evtimer_new(p->base, on_hard, p);
    evtimer_add(ev_stop, &stop);
    evtimer_add(ev_hard, &hard);
    p->active = p->cfg->buyers;
    for (int i = 0; i < p->cfg->buyers; i++)
        buyer_next(&p->b[i]);
    if (p->active > 0)
        event_base_dispatch(p->base);
    event_free(ev_stop);
    event_free(ev_hard);
}

static int oworker(int index, int fd, FILE *out, void *arg)
{
    const struct ocfg *cfg = arg;
    struct oproc p;
    if (fan_ready(fd, oproc_setup(&p, cfg, index) == 0, 60000) != 0)
        return 1;
    oproc_run(&p);
    p.closing = 1;
    p.st.records = p.n;
    struct ostats st = p.st;
    hilock_client_free(p.client);
    kv_free(p.kv);
    event_base_free(p.base);
    if (fan_write(out, &st, sizeof st) != 0 ||
        fan_write(out, p.recs, p.n * sizeof(*p.recs)) != 0)
        return 1;
    return st.overrun ? 1 : 0;
}

/* ---- parent ------------------------------------------------------------ */

struct oresult {
    struct orec *recs;
    size_t n;
    struct ostats sum;
    int failed;
    long long final_stock;
    int64_t t_go;
};

/* Stock S, nothing else of ours. 0 or -1. */
static int oreset(struct bench *b, const struct ocfg *cfg)
{
    static const char *const extra[] = {
        O_LOCK, KEYS_FENCE_HEAD O_LOCK KEYS_TAG_TAIL, NULL};
    char s[24];
    redisContext *rc = bench_connect(b, 2000);
    snprintf(s, sizeof s, "%d", cfg->stock);
    int ok = rc && bench_reset(b, rc, extra) == 0;
    redisReply *r = ok ? bench_cmd(rc, "SET", O_STOCK, s, NULL) : NULL;
    ok = r && r->type == REDIS_REPLY_STATUS;
    if (r)
        freeReplyObject(r);
    if (rc)
        redisFree(rc);
    return ok ? 0 : -1;
}

static int ocollect(FILE *f, struct oresult *res)
{
    struct ostats st;
    rewind(f);
    if (fan_read(f, &st, sizeof st) != 0)
        return -1;
    struct orec *r = realloc(res->recs, (res->n + st.records + 1) * sizeof(*r));
    if (!r)
        return -1;
    res->recs = r;
    if (fan_read(f, r + res->n, st.records * sizeof(*r)) != 0)
        return -1;
    res->n += st.records;
    res->sum.acq_failed += st.acq_failed;
    res->sum.errors += st.errors;
    res->sum.lost += st.lost;
    res->sum.overrun += st.overrun;
    return 0;
}

/* Run the workers and collect. 0 or -1. */
static int orun(struct bench *b, const struct ocfg *cfg, struct oresult *res)
{
    struct fanout f;
    if (oreset(b, cfg) != 0 || fan_spawn(&f, cfg->procs, oworker,
                                         (void *)cfg) != 0)
        return -1;
    if (fan_all_ready(&f, 30000) != 0)
        return -1;
    redisContext *rc = bench_connect(b, 2000);
    res->t_go = now_ns();
    fan_broadcast(&f, FAN_GO);
    progress_begin(b, cfg->seconds);
    int64_t deadline = res->t_go + (int64_t)((cfg->seconds + 40) * 1e9);
    while (fan_poll(&f) > 0 && now_ns() < deadline) {
        long long st = rc ? bench_int(rc, "GET", O_STOCK, NULL) : 0;
        progress_show(b, "stock left %lld", st);
        sleep_ms(100);
    }
    progress_end(b);
    res->failed = fan_reap(&f, deadline);
    for (int i = 0; i < f.n; i++)
        if (ocollect(f.c[i].out, res) != 0)
            res->failed++;
    fan_free(&f);
    res->final_stock = rc ? bench_int(rc, "GET", O_STOCK, NULL) : LLONG_MIN;
    if (rc)
        redisFree(rc);
    return 0;
}

static int cmp_acq(const void *x, const void *y)
{
    const struct orec *a = x, *b = y;
    return (a->acq_ns > b->acq_ns) - (a->acq_ns < b->acq_ns);
}

static int cmp_seen(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* What the records say about the stock. */
struct ocheck {
    size_t sales, dup_units, overlaps;
    long long expect_sales, expect_stock;
    int detected; /* an oversell or inconsistency was found */
};

static void ocheck_run(const struct ocfg *cfg, struct oresult *res,
                       struct ocheck *c)
{
    int64_t *units = malloc((res->n + 1) * sizeof(*units));
    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i < res->n; i++)
        if (res->recs[i].sold && units)
            units[c->sales++] = res->recs[i].seen;
    if (units) {
        qsort(units, c->sales, sizeof(*units), cmp_seen);
        for (size_t i = 1; i < c->sales; i++)
            c->dup_units += units[i] == units[i - 1];
    }
    free(units);
    if (!cfg->no_lock && res->n > 1) {
        qsort(res->recs, res->n, sizeof(*res->recs), cmp_acq);
        for (size_t i = 1; i < res->n; i++)
            c->overlaps += res->recs[i].acq_ns <= res->recs[i - 1].rel_ns;
    }
    c->expect_sales = cfg->purchases < cfg->stock ? cfg->purchases
                                                  : cfg->stock;
    c->expect_stock = cfg->stock - c->expect_sales;
    c->detected = (long long)c->sales != c->expect_sales ||
                  res->final_stock != cfg->stock - (long long)c->sales ||
                  c->dup_units > 0 || c->overlaps > 0;
}

/* Wait for the section, purchases over time, and the span of the run. */
struct ofigs {
    struct samples wait;
    struct rate rate;
    double span_s;
};

static void oversell_figures(const struct oresult *res, struct ofigs *f)
{
    int64_t first = INT64_MAX, last = 0;
    memset(f, 0, sizeof(*f));
    rate_init(&f->rate, res->t_go, 100000000);
    for (size_t i = 0; i < res->n; i++) {
        const struct orec *r = &res->recs[i];
        first = r->call_ns < first ? r->call_ns : first;
        last = r->rel_ns > last ? r->rel_ns : last;
        samples_add(&f->wait, r->acq_ns - r->call_ns);
        rate_hit(&f->rate, r->rel_ns);
    }
    f->span_s = res->n ? (double)(last - first) / 1e9 : 0;
}

static void oversell_table(const struct ocfg *cfg, const struct oresult *res,
                           const struct ocheck *c, struct ofigs *f)
{
    struct table t;
    char v[96], x[32], y[32];
    long long gone = cfg->stock - res->final_stock;
    table_init(&t, "figure", "value", "target", "", NULL);
    snprintf(v, sizeof v, "%zu of %d in %.2f s", res->n, cfg->purchases,
             f->span_s);
    figure_row(&t, "purchases", v, NULL, 0);
    figure_row(&t, "purchases/s",
               fmt_count(f->span_s > 0 ? (double)res->n / f->span_s : 0, x,
                         sizeof x),
               NULL, 0);
    snprintf(v, sizeof v, "%s p50, %s p99",
             fmt_ns(samples_pct(&f->wait, 50), x, sizeof x),
             fmt_ns(samples_pct(&f->wait, 99), y, sizeof y));
    figure_row(&t, cfg->no_lock ? "wait for the section" : "wait for the lock",
               v, NULL, 0);
    snprintf(v, sizeof v, "%zu", c->sales);
    snprintf(x, sizeof x, "== %lld", c->expect_sales);
    figure_row(&t, "sales", v, x, (long long)c->sales == c->expect_sales);
    snprintf(v, sizeof v, "%lld", res->final_stock);
    snprintf(x, sizeof x, "== %lld", c->expect_stock);
    figure_row(&t, "final stock", v, x, res->final_stock == c->expect_stock);
    snprintf(v, sizeof v, "%lld", (long long)c->sales - gone);
    figure_row(&t, "sales - units gone from stock", v, "0",
               (long long)c->sales == gone);
    snprintf(v, sizeof v, "%zu", c->dup_units);
    figure_row(&t, "units sold more than once", v, "0", c->dup_units == 0);
    if (!cfg->no_lock) {
        snprintf(v, sizeof v, "%zu", c->overlaps);
        figure_row(&t, "overlapping critical sections", v, "0",
                   c->overlaps == 0);
    }
    snprintf(v, sizeof v, "errors %" PRIu64 ", acquires failed %" PRIu64
             ", locks lost %" PRIu64, res->sum.errors, res->sum.acq_failed,
             res->sum.lost);
    figure_row(&t, "problems", v, NULL, 0);
    table_print(&t, stdout);
}

static void oversell_json(struct json *j, const struct ocfg *cfg,
                          const struct oresult *res, const struct ocheck *c,
                          struct ofigs *f)
{
    json_bool(j, "no_lock", cfg->no_lock);
    json_int(j, "stock", cfg->stock);
    json_int(j, "purchases_planned", cfg->purchases);
    json_int(j, "purchases", (int64_t)res->n);
    json_num(j, "purchases_per_s",
             f->span_s > 0 ? (double)res->n / f->span_s : 0);
    json_int(j, "sales", (int64_t)c->sales);
    json_int(j, "final_stock", res->final_stock);
    json_int(j, "units_sold_twice", (int64_t)c->dup_units);
    json_int(j, "overlaps", (int64_t)c->overlaps);
    json_int(j, "errors", (int64_t)res->sum.errors);
    json_int(j, "acquires_failed", (int64_t)res->sum.acq_failed);
    json_int(j, "locks_lost", (int64_t)res->sum.lost);
    json_bool(j, "oversell_detected", c->detected);
    json_latency(j, "wait", &f->wait);
    json_rate(j, "purchases_over_time", &f->rate);
}

/* Print, write, plot; returns the exit status. */
static int oreport(struct bench *b, const struct ocfg *cfg,
                   struct oresult *res, const struct ocheck *c)
{
    struct ofigs f;
    oversell_figures(res, &f);
    oversell_table(cfg, res, c, &f);
    oversell_json(b->json, cfg, res, c, &f);
    struct samples *d = &f.wait;
    const char *tw = "purchase call -> section starts";
    plot_cdf(b, "wait", "oversell: wait for the critical section", &d, &tw, 1);
    const struct rate *rp = &f.rate;
    const char *tr = "purchases/s";
    plot_rate(b, "throughput", "oversell: purchases/s", "purchases/s", &rp,
              &tr, 1, NULL, 0, 0);
    samples_free(&f.wait);
    rate_free(&f.rate);
    if (cfg->no_lock) {
        printf("result: %s\n", c->detected
                   ? "ok: oversell detected, as expected without the lock"
                   : "FAIL: no oversell detected without the lock");
        return c->detected && res->failed == 0 ? 0 : 1;
    }
    int ok = !c->detected && (int)res->n == cfg->purchases &&
             res->failed == 0 && res->sum.errors == 0 && res->sum.lost == 0;
    printf("result: %s\n", ok ? "ok" : "FAIL");
    return ok ? 0 : 1;
}

int sc_oversell(struct bench *b)
{
    struct ocfg cfg = {b->o.procs ? b->o.procs : 4,
                       b->o.buyers ? b->o.buyers : 25,
                       b->o.purchases ? b->o.purchases : 3000,
                       b->o.stock ? b->o.stock : 200,
                       b->o.no_lock,
                       b->o.seconds > 0 ? b->o.seconds : 60,
                       b->host,
                       b->port};
    struct oresult res;
    struct ocheck c;
    memset(&res, 0, sizeof res);
    printf("oversell: stock %d, %d purchases by %d processes x %d buyers, "
           "%s, on %s:%d\n",
           cfg.stock, cfg.purchases, cfg.procs, cfg.buyers,
           cfg.no_lock ? "WITHOUT the lock" : "lock \"" O_LOCK "\"", b->host,
           b->port);
    if (orun(b, &cfg, &res) != 0) {
        fprintf(stderr, "oversell: the workers could not be started\n");
        return 1;
    }
    ocheck_run(&cfg, &res, &c);
    int rc = oreport(b, &cfg, &res, &c);
    free(res.recs);
    return rc;
}
