/* SPDX-License-Identifier: BSD-3-Clause */
/* sc_waiters.c -- many parked waiters: their memory, their subscriptions,
 * and how fast they all get their turn.
 *
 * Two workers on two hilock clients:
 *  - the holder acquires M lock names (watchdog lease) and keeps them until
 *    the parent says release;
 *  - the waiter process parks W waiters over those M names (waiter i on
 *    name i mod M, each its own handle and owner, wait_ms = --seconds).
 * The parent waits until PUBSUB NUMSUB over the M channels adds up to M and
 * EVALSHA calls have stopped (every waiter parked), has the waiter process
 * measure VmRSS and malloc's bytes in use (before the first handle and now:
 * bytes per waiter), counts the subscriptions, then tells the holder to
 * release everything and times until every waiter has acquired and
 * released once. Checks: subscriptions == M, no waiter acquired before the
 * holder released, every waiter served, no errors, no subscription left. */
#include "bench.h"

#include <event2/event.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hilock/hilock.h>

#include "keys.h" /* src/: the key and channel names */

#define W_NAME BENCH_PREFIX "w:"
#define W_WINDOW 1024     /* holder requests in flight */
#define W_CHUNK 1000      /* waiters started per loop turn */
#define W_SETTLE_MS 200   /* EVALSHA count stable this long = all parked */

enum {
    MSG_HELD_ALL = 1, /* holder -> parent: v0 ns taken, v1 errors */
    MSG_START,        /* parent -> waiters: park them */
    MSG_ISSUED,       /* waiters -> parent: v0 ns to issue */
    MSG_MEASURE,      /* parent -> waiters */
    MSG_MEASURED,     /* waiters -> parent: rss0, rss1, heap0, heap1 */
    MSG_RELEASE,      /* parent -> holder */
    MSG_RELEASED,     /* holder -> parent: v0 start, v1 end, v2 errors */
    MSG_ALL_DONE      /* waiters -> parent: v0 last done, v1 errors, v2
                         timeouts, v3 served, v4 lost */
};

struct wcfg {
    int waiters;
    int names;
    double seconds;
    const char *host;
    int port;
};

/* ---- the two workers ---------------------------------------------------- */

struct wproc;

struct wslot {
    struct wproc *p;
    struct hilock_lock *lock;
    int64_t t_acq; /* acquired (waiters); 0 before */
};

struct wproc {
    const struct wcfg *cfg;
    int fd;
    struct event_base *base;
    struct hilock_client *client;
    struct event *cmd;  /* the parent's socket */
    struct wslot *slots;
    int n;              /* slots in use: M (holder) or W (waiters) */
    int next, done, inflight;
    int releasing;
    int64_t t_release; /* holder: the parent's release began */
    uint64_t errors, timeouts, lost, served;
};

static void holder_pump(struct wproc *p);

static void on_lost(struct hilock_lock *lock, int status,
                    const struct hilock_result *res, void *arg)
{
    struct wslot *s = arg;
    (void)lock;
    (void)status;
    (void)res;
    s->p->lost++;
}

/* Holder: acquire or release completed. */
static void holder_done(struct hilock_lock *lock, int status,
                        const struct hilock_result *res, void *arg)
{
    struct wslot *s = arg;
    (void)lock;
    (void)res;
    s->p->inflight--;
    s->p->done++;
    s->p->errors += status != 0;
    holder_pump(s->p);
}

/* Holder: keep W_WINDOW requests in flight until all M are done. */
static void holder_pump(struct wproc *p)
{
    while (p->inflight < W_WINDOW && p->next < p->n) {
        struct wslot *s = &p->slots[p->next++];
        int rc = p->releasing
                     ? hilock_lock_release(s->lock, holder_done, s)
                     : hilock_lock_acquire(s->lock, 0, 0, holder_done, s);
        if (rc != 0) {
            p->errors++;
            p->done++;
        } else {
            p->inflight++;
        }
    }
    if (p->done < p->n)
        return;
    if (p->releasing && p->cmd) { /* the release the parent asked for */
        int64_t v[3] = {p->t_release, now_ns(), (int64_t)p->errors};
        fan_send(p->fd, MSG_RELEASED, v, 3);
    }
    event_base_loopexit(p->base, NULL);
}

/* Holder: run one windowed phase to the end. */
static void holder_phase(struct wproc *p, int releasing)
{
    p->releasing = releasing;
    p->next = p->done = p->inflight = 0;
    holder_pump(p);
    if (p->done < p->n)
        event_base_dispatch(p->base);
}

/* Holder: the parent's command arrived (release). */
static void holder_on_cmd(evutil_socket_t fd, short what, void *arg)
{
    struct wproc *p = arg;
    struct fan_msg m;
    (void)what;
    if (fan_recv((int)fd, &m, 0) != 1 || m.type != MSG_RELEASE) {
        p->errors++;
        event_base_loopbreak(p->base);
        return;
    }
    event_del(p->cmd);
    p->t_release = now_ns();
    p->releasing = 1; /* holder_pump reports the end */
    p->next = p->done = p->inflight = 0;
    holder_pump(p);
}

static void waiter_released(struct hilock_lock *lock, int status,
                            const struct hilock_result *res, void *arg)
{
    struct wslot *s = arg;
    struct wproc *p = s->p;
    (void)lock;
    (void)res;
    p->errors += status != 0;
    if (++p->done == p->n) {
        int64_t v[5] = {now_ns(), (int64_t)p->errors, (int64_t)p->timeouts,
                        (int64_t)p->served, (int64_t)p->lost};
        fan_send(p->fd, MSG_ALL_DONE, v, 5);
        event_base_loopexit(p->base, NULL);
    }
}

/* A waiter's turn: note it, release at once. */
static void waiter_acquired(struct hilock_lock *lock, int status,
                            const struct hilock_result *res, void *arg)
{
    struct wslot *s = arg;
    struct wproc *p = s->p;
    (void)res;
    if (status == 0) {
        s->t_acq = now_ns();
        p->served++;
        if (hilock_lock_release(lock, waiter_released, s) == 0)
            return;
    }
    if (status == HILOCK_ETIMEDOUT)
        p->timeouts++;
    else
        p->errors++;
    waiter_released(lock, 0, 0, s);
}

/* Start the next chunk of waiters; when all are out, tell the parent. */
static void waiters_issue(evutil_socket_t fd, short what, void *arg)
{
    struct wproc *p = arg;
    uint32_t wait_ms = (uint32_t)(p->cfg->seconds * 1000);
    (void)fd;
    (void)what;
    for (int k = 0; k < W_CHUNK && p->next < p->n; k++) {
        struct wslot *s = &p->slots[p->next++];
        if (hilock_lock_acquire(s->lock, wait_ms, 0, waiter_acquired, s) != 0)
            waiter_acquired(s->lock, HILOCK_EINVAL, 0, s);
    }
    if (p->next < p->n) {
        struct timeval tv = {0, 1000};
        event_base_once(p->base, -1, EV_TIMEOUT, waiters_issue, p, &tv);
        return;
    }
    int64_t v[1] = {0};
    fan_send(p->fd, MSG_ISSUED, v, 1);
}

/* Waiters: the parent's commands (measure). */
static void waiters_on_cmd(evutil_socket_t fd, short what, void *arg)
{
    struct wproc *p = arg;
    struct fan_msg m;
    (void)what;
    if (fan_recv((int)fd, &m, 0) != 1) {
        event_base_loopbreak(p->base);
        return;
    }
    if (m.type == MSG_MEASURE) {
        int64_t v[2] = {rss_bytes(), heap_bytes()};
        fan_send(p->fd, MSG_MEASURED, v, 2);
    }
}

/* Loop, client (connected: one probe lock taken and released), handles
 * of the slots (holder: its M names; waiters: none yet). 0 or -1. */
static int wproc_setup(struct wproc *p, const struct wcfg *cfg, int fd,
                       int n)
{
    struct hilock_options ho;
    struct hilock_lock *probe;
    memset(p, 0, sizeof(*p));
    p->cfg = cfg;
    p->fd = fd;
    p->n = n;
    hilock_options_init(&ho);
    ho.node.host = cfg->host;
    ho.node.port = cfg->port;
    if (!(p->base = event_base_new()) ||
        hilock_client_new(p->base, &ho, &p->client) != 0 ||
        !(p->slots = calloc((size_t)n, sizeof(*p->slots))))
        return -1;
    memset(p->slots, 0, (size_t)n * sizeof(*p->slots)); /* touch */
    for (int i = 0; i < n; i++)
        p->slots[i].p = p;
    /* Each process its own probe name: both probe at the same time. */
    char name[48];
    int len = snprintf(name, sizeof name, BENCH_PREFIX "w-probe:%d",
                       (int)getpid());
    if (hilock_lock_new(p->client, name, (size_t)len, 1, &probe) != 0)
        return -1;
    p->n = 1;
    p->slots[0].lock = probe;
    holder_phase(p, 0);
    holder_phase(p, 1);
    p->n = n;
    p->slots[0] = (struct wslot){p, NULL, 0};
    hilock_lock_free(probe);
    return p->errors ? -1 : 0;
}

/* Create handle i: name (i mod M), owner tag i + 1. 0 or -1. */
static int slot_lock(struct wproc *p, int i)
{
    char name[48];
    int len = snprintf(name, sizeof name, W_NAME "%d", i % p->cfg->names);
    return hilock_lock_new(p->client, name, (size_t)len, (uint64_t)i + 1,
                           &p->slots[i].lock) == 0 &&
                   hilock_lock_on_lost(p->slots[i].lock, on_lost,
                                       &p->slots[i]) == 0
               ? 0
               : -1;
}

static int holder_main(const struct wcfg *cfg, int fd)
{
    struct wproc p;
    if (wproc_setup(&p, cfg, fd, cfg->names) != 0)
        return 1;
    for (int i = 0; i < p.n; i++)
        if (slot_lock(&p, i) != 0)
            return 1;
    int64_t t0 = now_ns();
    holder_phase(&p, 0);
    int64_t v[2] = {now_ns() - t0, (int64_t)p.errors};
    if (fan_send(fd, MSG_HELD_ALL, v, 2) != 0)
        return 1;
    p.cmd = event_new(p.base, fd, EV_READ | EV_PERSIST, holder_on_cmd, &p);
    struct timeval bound = {(time_t)cfg->seconds + 120, 0};
    event_add(p.cmd, NULL);
    event_base_loopexit(p.base, &bound);
    event_base_dispatch(p.base);
    event_free(p.cmd);
    hilock_client_free(p.client);
    event_base_free(p.base);
    return 0;
}

static int waiters_main(const struct wcfg *cfg, int fd, FILE *out)
{
    struct wproc p;
    struct fan_msg m;
    if (wproc_setup(&p, cfg, fd, cfg->waiters) != 0 ||
        fan_recv(fd, &m, 300000) != 1 || m.type != MSG_START)
        return 1;
    int64_t v[2] = {rss_bytes(), heap_bytes()};
    for (int i = 0; i < p.n; i++)
        if (slot_lock(&p, i) != 0)
            return 1;
    p.done = 0;
    p.next = 0;
    fan_send(fd, MSG_MEASURED, v, 2); /* the "before" figures */
    p.cmd = event_new(p.base, fd, EV_READ | EV_PERSIST, waiters_on_cmd, &p);
    event_add(p.cmd, NULL);
    struct timeval now = {0, 0}, bound = {(time_t)cfg->seconds + 60, 0};
    event_base_once(p.base, -1, EV_TIMEOUT, waiters_issue, &p, &now);
    event_base_loopexit(p.base, &bound);
    event_base_dispatch(p.base);
    for (int i = 0; i < p.n; i++)
        fan_write(out, &p.slots[i].t_acq, sizeof(int64_t));
    event_free(p.cmd);
    hilock_client_free(p.client);
    event_base_free(p.base);
    return p.done == p.n ? 0 : 1;
}

static int wmain(int index, int fd, FILE *out, void *arg)
{
    return index == 0 ? holder_main(arg, fd) : waiters_main(arg, fd, out);
}

/* ---- parent ------------------------------------------------------------- */

/* Subscribers over the M channels (PUBSUB NUMSUB in batches): the sum in
 * *subs, channels with at least one in *chans. 0 or -1. */
static int count_subs(redisContext *rc, int names, long long *subs,
                      long long *chans)
{
    enum { BATCH = 1000 };
    static char ch[BATCH][64];
    const char *argv[BATCH + 2];
    *subs = *chans = 0;
    for (int first = 0; first < names; first += BATCH) {
        int n = names - first < BATCH ? names - first : BATCH;
        argv[0] = "PUBSUB";
        argv[1] = "NUMSUB";
        for (int i = 0; i < n; i++) {
            snprintf(ch[i], sizeof ch[i],
                     KEYS_CHANNEL_HEAD W_NAME "%d" KEYS_TAG_TAIL, first + i);
            argv[i + 2] = ch[i];
        }
        redisReply *r = bench_cmdv(rc, n + 2, argv, NULL);
        if (!r || r->type != REDIS_REPLY_ARRAY) {
            if (r)
                freeReplyObject(r);
            return -1;
        }
        for (size_t i = 1; i < r->elements; i += 2) {
            *subs += r->element[i]->integer;
            *chans += r->element[i]->integer > 0;
        }
        freeReplyObject(r);
    }
    return 0;
}

struct wresult {
    struct fan_msg held, before, issued, after, released, done;
    long long subs, chans, patterns, subs_left;
    int64_t t_start, t_parked;
    int64_t *t_acq;
    int parked;
};

/* Receive message type from worker w within ms. 0 or -1 (with a note). */
static int expect(struct fanout *f, int w, int type, struct fan_msg *m,
                  int ms)
{
    int rc = fan_recv(f->c[w].fd, m, ms);
    if (rc == 1 && m->type == type)
        return 0;
    fprintf(stderr, "waiters: %s did not report (step %d)\n",
            w ? "the waiter process" : "the holder", type);
    return -1;
}

/* Until the subscriptions add up to M and EVALSHA calls stop (or the
 * bound): every waiter is parked. Returns 1 parked, 0 not. */
static int await_parked(struct bench *b, redisContext *rc,
                        const struct wcfg *cfg, struct wresult *wr)
{
    int64_t deadline = now_ns() + (int64_t)(cfg->seconds * 1e9);
    long long calls, last = -1, subs = 0, chans = 0;
    while (now_ns() < deadline) {
        if (count_subs(rc, cfg->names, &subs, &chans) != 0 ||
            bench_cmdstat(rc, "evalsha", &calls, NULL) != 0)
            return 0;
        progress_show(b, "parking %d waiters: %lld / %d names subscribed",
                      cfg->waiters, chans, cfg->names);
        if (chans >= cfg->names && calls == last) {
            wr->t_parked = now_ns();
            return 1;
        }
        last = chans >= cfg->names ? calls : -1;
        sleep_ms(W_SETTLE_MS);
    }
    return 0;
}

/* Release, then wait for both workers' reports. 0 or -1. */
static int await_drain(struct bench *b, struct fanout *f,
                       const struct wcfg *cfg, struct wresult *wr)
{
    int64_t deadline = now_ns() + (int64_t)(cfg->seconds * 1e9);
    int got_rel = 0, got_done = 0;
    if (fan_send(f->c[0].fd, MSG_RELEASE, NULL, 0) != 0)
        return -1;
    while ((!got_rel || !got_done) && now_ns() < deadline) {
        struct fan_msg m;
        if (!got_rel && fan_recv(f->c[0].fd, &m, 50) == 1)
            got_rel = m.type == MSG_RELEASED ? (wr->released = m, 1) : -1;
        if (!got_done && fan_recv(f->c[1].fd, &m, 50) == 1)
            got_done = m.type == MSG_ALL_DONE ? (wr->done = m, 1) : -1;
        if (got_rel < 0 || got_done < 0)
            return -1;
        progress_show(b, "released: waiting for %d waiters to take turns",
                      cfg->waiters);
    }
    return got_rel && got_done ? 0 : -1;
}

/* The whole run; fills *wr. 0 or -1. */
static int waiters_run(struct bench *b, const struct wcfg *cfg,
                       redisContext *rc, struct wresult *wr)
{
    struct fanout f;
    int ok = 0;
    if (fan_spawn(&f, 2, wmain, (void *)cfg) != 0)
        return -1;
    int64_t bound = 120000 + (int)(cfg->seconds * 1000);
    if (expect(&f, 0, MSG_HELD_ALL, &wr->held, (int)bound) == 0 &&
        fan_send(f.c[1].fd, MSG_START, NULL, 0) == 0 &&
        expect(&f, 1, MSG_MEASURED, &wr->before, 60000) == 0) {
        wr->t_start = now_ns();
        ok = expect(&f, 1, MSG_ISSUED, &wr->issued, (int)bound) == 0 &&
             (wr->parked = await_parked(b, rc, cfg, wr)) &&
             fan_send(f.c[1].fd, MSG_MEASURE, NULL, 0) == 0 &&
             expect(&f, 1, MSG_MEASURED, &wr->after, 60000) == 0 &&
             count_subs(rc, cfg->names, &wr->subs, &wr->chans) == 0;
        wr->patterns = bench_int(rc, "PUBSUB", "NUMPAT", NULL);
        ok = ok && await_drain(b, &f, cfg, wr) == 0;
    }
    progress_end(b);
    sleep_ms(500); /* unsubscribes settle */
    long long chans;
    if (count_subs(rc, cfg->names, &wr->subs_left, &chans) != 0)
        wr->subs_left = -1;
    ok = fan_reap(&f, now_ns() + 60 * (int64_t)1000000000) == 0 && ok;
    wr->t_acq = calloc((size_t)cfg->waiters, sizeof(int64_t));
    rewind(f.c[1].out);
    if (ok && wr->t_acq)
        ok = fan_read(f.c[1].out, wr->t_acq,
                      (size_t)cfg->waiters * sizeof(int64_t)) == 0;
    fan_free(&f);
    return ok ? 0 : -1;
}

static const char *fmt_b(double v, char *buf, size_t len)
{
    if (v < 10240)
        snprintf(buf, len, "%.0f B", v);
    else
        snprintf(buf, len, "%.1f MiB", v / 1048576);
    return buf;
}

/* The figures of a run. */
struct wfigs {
    double rss_per, heap_per, drain_s, park_s;
    struct samples turn; /* release start -> each waiter's turn */
    struct rate rate;    /* turns over time */
    size_t early, unserved;
    int64_t errors, timeouts, lost;
};

static void waiters_figures(const struct wcfg *cfg, const struct wresult *wr,
                            struct wfigs *f)
{
    const int64_t *bf = wr->before.v, *af = wr->after.v;
    int64_t t_rel = wr->released.v[0];
    memset(f, 0, sizeof(*f));
    f->rss_per = (double)(af[0] - bf[0]) / cfg->waiters;
    f->heap_per = (double)(af[1] - bf[1]) / cfg->waiters;
    f->drain_s = (double)(wr->done.v[0] - t_rel) / 1e9;
    f->park_s = (double)(wr->t_parked - wr->t_start) / 1e9;
    rate_init(&f->rate, t_rel, 50000000);
    for (int i = 0; i < cfg->waiters; i++) {
        if (wr->t_acq[i] == 0) {
            f->unserved++;
            continue;
        }
        f->early += wr->t_acq[i] < t_rel;
        samples_add(&f->turn, wr->t_acq[i] - t_rel);
        rate_hit(&f->rate, wr->t_acq[i]);
    }
    f->errors = wr->done.v[1] + wr->released.v[2] + wr->held.v[1];
    f->timeouts = wr->done.v[2];
    f->lost = wr->done.v[4];
}

/* Memory and subscription rows. */
static void waiters_table_park(struct table *t, const struct wcfg *cfg,
                               const struct wresult *wr,
                               const struct wfigs *f)
{
    char v[96], x[32], y[32];
    snprintf(v, sizeof v, "%d over %d names", cfg->waiters, cfg->names);
    figure_row(t, "parked waiters", v, NULL, 0);
    snprintf(v, sizeof v, "%.2f s", f->park_s);
    figure_row(t, "time to park all", v, NULL, 0);
    figure_row(t, "RSS per waiter", fmt_b(f->rss_per, x, sizeof x), NULL, 0);
    figure_row(t, "malloc in use per waiter", fmt_b(f->heap_per, x, sizeof x),
               NULL, 0);
    snprintf(v, sizeof v, "%s -> %s",
             fmt_b((double)wr->before.v[0], x, sizeof x),
             fmt_b((double)wr->after.v[0], y, sizeof y));
    figure_row(t, "waiter process RSS", v, NULL, 0);
    snprintf(v, sizeof v, "%lld", wr->subs);
    figure_row(t, "subscriptions (PUBSUB NUMSUB sum)", v, "== M",
               wr->subs == cfg->names);
    snprintf(v, sizeof v, "%lld", wr->chans);
    figure_row(t, "channels with a subscriber", v, "== M",
               wr->chans == cfg->names);
    snprintf(v, sizeof v, "%lld", wr->patterns);
    figure_row(t, "pattern subscriptions", v, NULL, 0);
}

/* Drain rows and checks. */
static void waiters_table_drain(struct table *t, const struct wcfg *cfg,
                                const struct wresult *wr, struct wfigs *f)
{
    char v[96], x[32], y[32];
    snprintf(v, sizeof v, "%.3f s", f->drain_s);
    figure_row(t, "release -> every waiter had its turn", v, NULL, 0);
    figure_row(t, "turns/s during the drain",
               fmt_count(f->drain_s > 0 ? cfg->waiters / f->drain_s : 0, x,
                         sizeof x),
               NULL, 0);
    snprintf(v, sizeof v, "%s p50, %s p99",
             fmt_ns(samples_pct(&f->turn, 50), x, sizeof x),
             fmt_ns(samples_pct(&f->turn, 99), y, sizeof y));
    figure_row(t, "release -> a waiter's turn", v, NULL, 0);
    snprintf(v, sizeof v, "%zu", f->unserved);
    figure_row(t, "waiters never served", v, "0", f->unserved == 0);
    snprintf(v, sizeof v, "%zu", f->early);
    figure_row(t, "acquired before the holder released", v, "0",
               f->early == 0);
    snprintf(v, sizeof v, "%" PRId64 " (timeouts %" PRId64 ", lost %" PRId64
             ")", f->errors, f->timeouts, f->lost);
    figure_row(t, "errors", v, "0",
               f->errors == 0 && f->timeouts == 0 && f->lost == 0);
    snprintf(v, sizeof v, "%lld", wr->subs_left);
    figure_row(t, "subscriptions left after the drain", v, "0",
               wr->subs_left == 0);
}

static void waiters_json(struct json *j, const struct wcfg *cfg,
                         const struct wresult *wr, struct wfigs *f)
{
    json_int(j, "waiters", cfg->waiters);
    json_int(j, "names", cfg->names);
    json_num(j, "park_s", f->park_s);
    json_int(j, "rss_before", wr->before.v[0]);
    json_int(j, "rss_parked", wr->after.v[0]);
    json_num(j, "rss_per_waiter", f->rss_per);
    json_num(j, "malloc_per_waiter", f->heap_per);
    json_int(j, "subscriptions", wr->subs);
    json_int(j, "channels_subscribed", wr->chans);
    json_num(j, "drain_s", f->drain_s);
    json_latency(j, "release_to_turn", &f->turn);
    json_rate(j, "turns_over_time", &f->rate);
    json_int(j, "never_served", (int64_t)f->unserved);
    json_int(j, "acquired_early", (int64_t)f->early);
    json_int(j, "errors", f->errors + f->timeouts + f->lost);
    json_int(j, "subscriptions_left", wr->subs_left);
}

/* Print, write, plot; returns failed checks. */
static int waiters_report(struct bench *b, const struct wcfg *cfg,
                          struct wresult *wr)
{
    struct wfigs f;
    struct table t;
    waiters_figures(cfg, wr, &f);
    table_init(&t, "figure", "value", "target", "", NULL);
    waiters_table_park(&t, cfg, wr, &f);
    waiters_table_drain(&t, cfg, wr, &f);
    table_print(&t, stdout);
    waiters_json(b->json, cfg, wr, &f);
    struct samples *d = &f.turn;
    const char *tt = "release -> turn of each waiter";
    plot_cdf(b, "turn-latency", "waiters: from release to each waiter's turn",
             &d, &tt, 1);
    const struct rate *rp = &f.rate;
    const char *rt = "turns/s";
    plot_rate(b, "turns", "waiters: turns/s after the release", "turns/s",
              &rp, &rt, 1, NULL, 0, 0);
    int bad = (wr->subs != cfg->names) + (wr->chans != cfg->names) +
              (f.unserved > 0) + (f.early > 0) + (f.errors != 0) +
              (f.timeouts != 0) + (f.lost != 0) + (wr->subs_left != 0);
    samples_free(&f.turn);
    rate_free(&f.rate);
    return bad;
}

int sc_waiters(struct bench *b)
{
    struct wcfg cfg = {b->o.waiters ? b->o.waiters : 100000,
                       b->o.names ? b->o.names : 10000,
                       b->o.seconds > 0 ? b->o.seconds : 60, b->host,
                       b->port};
    struct wresult wr;
    memset(&wr, 0, sizeof wr);
    if (cfg.names > cfg.waiters)
        cfg.names = cfg.waiters;
    printf("waiters: %d waiters over %d names, holders on another client, "
           "bound %.0f s, on %s:%d\n",
           cfg.waiters, cfg.names, cfg.seconds, b->host, b->port);
    redisContext *rc = bench_connect(b, 5000);
    if (!rc || bench_reset(b, rc, NULL) != 0) {
        if (rc)
            redisFree(rc);
        return 1;
    }
    progress_begin(b, 10);
    int run = waiters_run(b, &cfg, rc, &wr);
    redisFree(rc);
    if (run != 0) {
        fprintf(stderr, "waiters: the run failed%s\n",
                wr.parked ? "" : " (not every waiter got parked in time)");
        free(wr.t_acq);
        return 1;
    }
    int bad = waiters_report(b, &cfg, &wr);
    printf("result: %s\n", bad ? "FAIL" : "ok");
    free(wr.t_acq);
    return bad ? 1 : 0;
}
