/* SPDX-License-Identifier: BSD-3-Clause */
/* sc_held.c -- many locks held under the watchdog: memory, CPU, renewals.
 *
 * One worker process holds N locks (one handle each, watchdog lease) for
 * --seconds, then releases them; the parent watches the server meanwhile.
 * Figures:
 *  - client memory per lock: VmRSS and malloc's bytes in use, in the
 *    worker, before the first handle is created and after the last lock is
 *    acquired, divided by N; also the marginal cost over the second half
 *    (leaves out fixed costs such as the request pool), and what is still
 *    resident after every handle is freed (malloc keeps freed memory);
 *  - client CPU over the hold: getrusage / wall time, in % of one core;
 *  - renewals: EVALSHA calls per second during the hold (INFO
 *    commandstats; nothing else runs EVALSHA then), the server time they
 *    took, and renewal rounds seen on 64 sampled locks (their PTTL stays
 *    higher than the time since the last read allows when renewed);
 *  - locks lost: on_lost callbacks, releases that found the lock gone, and
 *    the lock keys counted (SCAN) at the end of the hold, before the worker
 *    releases: on_lost and not-owner must be 0, the count must be N.
 * The bench's own per-lock array is allocated and touched before the first
 * measurement, so it is not counted. */
#include "bench.h"

#include <event2/event.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <hilock/hilock.h>

#define HELD_NAME BENCH_PREFIX "held:"
#define HELD_WINDOW 1024       /* requests in flight while acquiring */
#define HELD_PHASE_BOUND_S 180 /* acquiring or releasing takes at most */
#define HELD_SAMPLES 64        /* locks whose PTTL the parent follows */
#define HELD_TARGET_BYTES 256
#define HELD_TARGET_CPU 5.0

enum { MSG_ACQUIRED = 1, MSG_HELD, MSG_RELEASE, MSG_RELEASED };

/* The figures each message carries (fan_msg.v[]). */
enum { A_RSS0, A_RSS1, A_HEAP0, A_HEAP1, A_NS, A_ERRORS, A_RSS_MID,
       A_HEAP_MID };
enum { H_CPU, H_WALL, H_LOST, H_RSS };
enum { R_NS, R_ERRORS, R_NOT_OWNER, R_RSS, R_HEAP, R_LOST };

struct held_cfg {
    const char *prefix; /* lock names are prefix + index */
    long n;
    double hold_s;
    uint32_t lease_ms;
    const char *host;
    int port;
};

/* ---- worker ------------------------------------------------------------- */

struct hold;

/* The bench's record of one lock (not counted in the memory figures). */
struct hslot {
    struct hold *h;
    struct hilock_lock *lock;
    int64_t t0; /* acquire call */
};

struct hold {
    const struct held_cfg *cfg;
    struct event_base *base;
    struct hilock_client *client;
    struct hslot *slots;
    long next, done, inflight;
    int releasing;
    int64_t phase_start;
    uint64_t errors, lost, not_owner;
    int64_t rss_mid, heap_mid; /* when N/2 were acquired */
    struct samples lat;        /* acquire latency */
};

static void hold_pump(struct hold *h);

static void on_lost(struct hilock_lock *lock, int status,
                    const struct hilock_result *res, void *arg)
{
    struct hslot *s = arg;
    (void)lock;
    (void)status;
    (void)res;
    s->h->lost++;
}

/* Acquire or release completed. */
static void on_done(struct hilock_lock *lock, int status,
                    const struct hilock_result *res, void *arg)
{
    struct hslot *s = arg;
    struct hold *h = s->h;
    (void)lock;
    (void)res;
    h->inflight--;
    h->done++;
    if (status == HILOCK_ENOTOWNER)
        h->not_owner++;
    else if (status != 0)
        h->errors++;
    else if (!h->releasing)
        samples_add(&h->lat, now_ns() - s->t0);
    hold_pump(h);
}

/* Start the acquire or release of slot s. 0 or an error. */
static int slot_start(struct hold *h, long i)
{
    struct hslot *s = &h->slots[i];
    char name[64];
    int rc;
    if (h->releasing)
        return hilock_lock_release(s->lock, on_done, s);
    int len = snprintf(name, sizeof name, "%s%ld", h->cfg->prefix, i);
    rc = hilock_lock_new(h->client, name, (size_t)len, 1, &s->lock);
    rc = rc ? rc : hilock_lock_on_lost(s->lock, on_lost, s);
    s->t0 = now_ns();
    return rc ? rc : hilock_lock_acquire(s->lock, 0, 0, on_done, s);
}

/* Issue requests up to the window; leave the loop when all are done. */
static void hold_pump(struct hold *h)
{
    long n = h->cfg->n;
    if (!h->releasing && h->done == n / 2 && h->rss_mid == 0) {
        h->rss_mid = rss_bytes();
        h->heap_mid = heap_bytes();
    }
    while (h->inflight < HELD_WINDOW && h->next < n) {
        if (slot_start(h, h->next++) != 0) {
            h->errors++;
            h->done++;
        } else {
            h->inflight++;
        }
    }
    if (h->done == n) /* a break, unlike loopexit, leaves nothing armed */
        event_base_loopbreak(h->base);
}

static void on_phase_bound(evutil_socket_t fd, short what, void *arg)
{
    struct hold *h = arg;
    (void)fd;
    (void)what;
    fprintf(stderr, "held: a phase overran its bound: stopped\n");
    event_base_loopbreak(h->base);
}

/* Acquire (or release) every lock, windowed; bounded in time by a timer
 * of its own that goes with the phase. Returns the phase's duration in ns. */
static int64_t hold_phase(struct hold *h, int releasing)
{
    struct timeval bound = {HELD_PHASE_BOUND_S, 0};
    struct event *ev = evtimer_new(h->base, on_phase_bound, h);
    h->releasing = releasing;
    h->next = h->done = h->inflight = 0;
    h->phase_start = now_ns();
    hold_pump(h);
    if (h->done < h->cfg->n && ev) {
        evtimer_add(ev, &bound);
        event_base_dispatch(h->base);
    }
    if (ev)
        event_free(ev);
    h->errors += (uint64_t)(h->cfg->n - h->done); /* unfinished: failed */
    return now_ns() - h->phase_start;
}

/* Run the loop for s seconds (the hold). */
static void hold_wait(struct hold *h, double s)
{
    struct timeval tv = {(time_t)s, (suseconds_t)((s - (int)s) * 1e6)};
    event_base_loopexit(h->base, &tv);
    event_base_dispatch(h->base);
}

/* Loop and client, connected (lock 0 taken and released once, then its
 * handle freed), the slot array and sample buffer allocated and touched.
 * 0 or -1. */
static int hold_setup(struct hold *h, const struct held_cfg *cfg)
{
    struct hilock_options ho;
    const struct held_cfg probe = {BENCH_PREFIX "held-probe:", 1, 0,
                                   cfg->lease_ms, cfg->host, cfg->port};
    /* The probe is lock 0 under another name, so the count of held:*
     * keys at the end of the hold is exactly N. */
    memset(h, 0, sizeof(*h));
    hilock_options_init(&ho);
    ho.node.host = cfg->host;
    ho.node.port = cfg->port;
    ho.watchdog_lease_ms = cfg->lease_ms;
    if (!(h->base = event_base_new()) ||
        hilock_client_new(h->base, &ho, &h->client) != 0 ||
        !(h->slots = calloc((size_t)cfg->n, sizeof(*h->slots))) ||
        samples_reserve(&h->lat, (size_t)cfg->n) != 0)
        return -1;
    memset(h->slots, 0, (size_t)cfg->n * sizeof(*h->slots)); /* touch */
    for (long i = 0; i < cfg->n; i++)
        h->slots[i].h = h;
    h->cfg = &probe;
    hold_phase(h, 0);
    hold_phase(h, 1);
    hilock_lock_free(h->slots[0].lock);
    h->slots[0].lock = NULL;
    h->cfg = cfg;
    h->lat.n = 0;
    h->rss_mid = h->heap_mid = 0;
    return h->errors ? -1 : 0;
}

/* The worker: set up, measure, acquire, measure, hold, release, measure,
 * reporting each step to the parent. Returns its exit status. */
static int held_main(int index, int fd, FILE *out, void *arg)
{
    const struct held_cfg *cfg = arg;
    struct hold h;
    (void)index;
    if (hold_setup(&h, cfg) != 0) {
        fprintf(stderr, "held: worker setup failed\n");
        return 1;
    }
    int64_t rss0 = rss_bytes(), heap0 = heap_bytes();
    int64_t acq_ns = hold_phase(&h, 0);
    int64_t acquired[8] = {[A_RSS0] = rss0,
                           [A_RSS1] = rss_bytes(),
                           [A_HEAP0] = heap0,
                           [A_HEAP1] = heap_bytes(),
                           [A_NS] = acq_ns,
                           [A_ERRORS] = (int64_t)h.errors,
                           [A_RSS_MID] = h.rss_mid,
                           [A_HEAP_MID] = h.heap_mid};
    if (fan_send(fd, MSG_ACQUIRED, acquired, 8) != 0)
        return 1;
    int64_t cpu0 = cpu_ns(), wall0 = now_ns();
    hold_wait(&h, cfg->hold_s);
    int64_t held[4] = {[H_CPU] = cpu_ns() - cpu0, [H_WALL] = now_ns() - wall0,
                       [H_LOST] = (int64_t)h.lost, [H_RSS] = rss_bytes()};
    struct fan_msg go;
    if (fan_send(fd, MSG_HELD, held, 4) != 0 || /* the parent counts keys */
        fan_recv(fd, &go, 120000) != 1 || go.type != MSG_RELEASE)
        return 1;
    uint64_t acq_errors = h.errors;
    int64_t rel_ns = hold_phase(&h, 1);
    for (long i = 0; i < cfg->n; i++)
        hilock_lock_free(h.slots[i].lock);
    hold_wait(&h, 0.2); /* let the frees settle */
    int64_t released[6] = {[R_NS] = rel_ns,
                           [R_ERRORS] = (int64_t)(h.errors - acq_errors),
                           [R_NOT_OWNER] = (int64_t)h.not_owner,
                           [R_RSS] = rss_bytes(), [R_HEAP] = heap_bytes(),
                           [R_LOST] = (int64_t)h.lost};
    if (fan_send(fd, MSG_RELEASED, released, 6) != 0)
        return 1;
    uint64_t nlat = h.lat.n;
    fan_write(out, &nlat, sizeof nlat);
    fan_write(out, h.lat.v, nlat * sizeof(*h.lat.v));
    hilock_client_free(h.client);
    event_base_free(h.base);
    return 0;
}

/* ---- parent -------------------------------------------------------------- */

/* What the parent sees of the server during the hold. */
struct watch {
    long long calls0, usec0, calls1, usec1;
    int64_t t0, t1;
    long long pttl[HELD_SAMPLES];
    int64_t pttl_at[HELD_SAMPLES]; /* when pttl[i] was read */
    int jumps[HELD_SAMPLES];
    struct rate renew; /* EVALSHA calls/s over the hold */
    long long last_calls;
};

/* PTTL of the sampled locks, pipelined. Without a renewal the PTTL falls
 * by the time between two reads; a renewal in between leaves it higher
 * than that (by the renewal's age), which is counted. */
static void watch_pttl(redisContext *rc, const struct held_cfg *cfg,
                       struct watch *w)
{
    char name[HELD_SAMPLES][64];
    for (int i = 0; i < HELD_SAMPLES; i++) {
        snprintf(name[i], sizeof name[i], HELD_NAME "%ld",
                 (long)((double)i * (double)cfg->n / HELD_SAMPLES));
        redisAppendCommand(rc, "PTTL %s", name[i]);
    }
    for (int i = 0; i < HELD_SAMPLES; i++) {
        redisReply *r = NULL;
        if (redisGetReply(rc, (void **)&r) != REDIS_OK || !r)
            return;
        int64_t now = now_ns();
        if (r->type == REDIS_REPLY_INTEGER) {
            long long expect =
                w->pttl[i] - (now - w->pttl_at[i]) / 1000000;
            if (w->pttl[i] > 0 && r->integer > expect + 50)
                w->jumps[i]++;
            w->pttl[i] = r->integer;
            w->pttl_at[i] = now;
        }
        freeReplyObject(r);
    }
}

/* Until the worker says the hold is over: sample the server. 0 or -1. */
static int watch_hold(struct bench *b, redisContext *rc, int fd,
                      const struct held_cfg *cfg, struct watch *w,
                      struct fan_msg *held)
{
    int64_t deadline = now_ns() + (int64_t)((cfg->hold_s + 60) * 1e9);
    int64_t next_info = 0;
    while (now_ns() < deadline) {
        int got = fan_recv(fd, held, 250);
        if (got != 0) {
            w->t1 = now_ns();
            bench_cmdstat(rc, "evalsha", &w->calls1, &w->usec1);
            for (long long k = w->last_calls; k < w->calls1; k++)
                rate_hit(&w->renew, w->t1);
            return got == 1 && held->type == MSG_HELD ? 0 : -1;
        }
        watch_pttl(rc, cfg, w);
        if (now_ns() >= next_info) {
            long long calls = 0, usec;
            bench_cmdstat(rc, "evalsha", &calls, &usec);
            for (long long k = w->last_calls; k < calls; k++)
                rate_hit(&w->renew, now_ns());
            w->last_calls = calls;
            next_info = now_ns() + 1000000000;
        }
        int min = INT_MAX;
        for (int i = 0; i < HELD_SAMPLES; i++)
            min = w->jumps[i] < min ? w->jumps[i] : min;
        progress_show(b, "holding %ld locks, %.0f of %.0f s: renewal rounds "
                         "seen %d, renew calls %lld",
                      cfg->n, (double)(now_ns() - w->t0) / 1e9, cfg->hold_s,
                      min, w->last_calls - w->calls0);
    }
    return -1;
}

/* Wait for message type from the worker, with progress. 0 or -1. */
static int await(struct bench *b, redisContext *rc, int fd, int type,
                 struct fan_msg *m, const char *what, long n)
{
    int64_t deadline =
        now_ns() + (int64_t)(HELD_PHASE_BOUND_S + 30) * 1000000000;
    while (now_ns() < deadline) {
        int got = fan_recv(fd, m, 250);
        if (got != 0)
            return got == 1 && m->type == type ? 0 : -1;
        long long keys = b->srv ? bench_int(rc, "DBSIZE", NULL) : -1;
        progress_show(b, "%s %ld locks (keys now %lld)", what, n, keys);
    }
    return -1;
}

/* Lock keys on the server (SCAN), or -1. */
static long long count_keys(redisContext *rc)
{
    char cursor[32] = "0";
    long long n = 0;
    do {
        redisReply *r = bench_cmd(rc, "SCAN", cursor, "MATCH", HELD_NAME "*",
                                  "COUNT", "10000", NULL);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
            if (r)
                freeReplyObject(r);
            return -1;
        }
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        n += (long long)r->element[1]->elements;
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    return n;
}

struct held_result {
    struct fan_msg acq, held, rel;
    struct watch w;
    long long keys_at_end;
    struct samples lat;
};

/* Run the worker and watch; fill *hr. 0 or -1. */
static int held_run(struct bench *b, struct held_cfg *cfg,
                    struct held_result *hr)
{
    struct fanout f;
    redisContext *rc = bench_connect(b, 5000);
    int ok = 0;
    if (!rc || bench_reset(b, rc, NULL) != 0 ||
        fan_spawn(&f, 1, held_main, cfg) != 0) {
        if (rc)
            redisFree(rc);
        return -1;
    }
    int fd = f.c[0].fd;
    if (await(b, rc, fd, MSG_ACQUIRED, &hr->acq, "acquiring", cfg->n) == 0) {
        hr->w.t0 = now_ns();
        bench_cmdstat(rc, "evalsha", &hr->w.calls0, &hr->w.usec0);
        hr->w.last_calls = hr->w.calls0;
        rate_init(&hr->w.renew, hr->w.t0, 1000000000);
        ok = watch_hold(b, rc, fd, cfg, &hr->w, &hr->held) == 0;
        hr->keys_at_end = ok ? count_keys(rc) : -1;
        ok = ok && fan_send(fd, MSG_RELEASE, NULL, 0) == 0;
        ok = ok && await(b, rc, fd, MSG_RELEASED, &hr->rel, "releasing",
                         cfg->n) == 0;
    }
    progress_end(b);
    ok = fan_reap(&f, now_ns() + 30 * (int64_t)1000000000) == 0 && ok;
    uint64_t nlat = 0;
    FILE *out = f.c[0].out;
    rewind(out);
    if (ok && fan_read(out, &nlat, sizeof nlat) == 0 &&
        samples_reserve(&hr->lat, nlat) == 0 &&
        fan_read(out, hr->lat.v, nlat * sizeof(int64_t)) == 0)
        hr->lat.n = nlat;
    fan_free(&f);
    redisFree(rc);
    return ok ? 0 : -1;
}

/* Bytes as "123 B" per lock, or KiB/MiB for totals. */
static const char *fmt_bytes(double v, char *buf, size_t len)
{
    if (v < 10 * 1024 && v > -10 * 1024)
        snprintf(buf, len, "%.0f B", v);
    else if (v < 10 * 1048576.0 && v > -10 * 1048576.0)
        snprintf(buf, len, "%.1f KiB", v / 1024);
    else
        snprintf(buf, len, "%.1f MiB", v / 1048576);
    return buf;
}

/* The figures of a run, from the worker's messages and the watch. */
struct held_figs {
    double rss_per, heap_per, rss_marg, heap_marg, cpu_pct;
    double acq_s, rel_s, hold_s;
    long long calls, usec;
    int rounds_min, rounds_max;
    int64_t lost, not_owner, errors;
    int keys_bad;
};

static void held_figures(const struct held_cfg *cfg,
                         const struct held_result *hr, struct held_figs *f)
{
    const int64_t *a = hr->acq.v, *h = hr->held.v, *r = hr->rel.v;
    double n = (double)cfg->n, half = n - (double)(cfg->n / 2);
    f->rss_per = (double)(a[A_RSS1] - a[A_RSS0]) / n;
    f->heap_per = (double)(a[A_HEAP1] - a[A_HEAP0]) / n;
    f->rss_marg = a[A_RSS_MID] ? (double)(a[A_RSS1] - a[A_RSS_MID]) / half : 0;
    f->heap_marg =
        a[A_HEAP_MID] ? (double)(a[A_HEAP1] - a[A_HEAP_MID]) / half : 0;
    f->cpu_pct = h[H_WALL] > 0 ? 100.0 * (double)h[H_CPU] / (double)h[H_WALL]
                               : 0;
    f->acq_s = (double)a[A_NS] / 1e9;
    f->rel_s = (double)r[R_NS] / 1e9;
    f->hold_s = (double)(hr->w.t1 - hr->w.t0) / 1e9;
    f->calls = hr->w.calls1 - hr->w.calls0;
    f->usec = hr->w.usec1 - hr->w.usec0;
    f->rounds_min = INT_MAX;
    f->rounds_max = 0;
    for (int i = 0; i < HELD_SAMPLES; i++) {
        int j = hr->w.jumps[i];
        f->rounds_min = j < f->rounds_min ? j : f->rounds_min;
        f->rounds_max = j > f->rounds_max ? j : f->rounds_max;
    }
    f->lost = r[R_LOST];
    f->not_owner = r[R_NOT_OWNER];
    f->errors = a[A_ERRORS] + r[R_ERRORS];
    f->keys_bad = hr->keys_at_end != cfg->n;
}

/* Memory rows of the table. */
static void held_table_memory(struct table *t, const struct held_result *hr,
                              const struct held_figs *f)
{
    const int64_t *a = hr->acq.v, *r = hr->rel.v;
    char v[96], x[32], y[32];
    figure_row(t, "RSS per lock", fmt_bytes(f->rss_per, x, sizeof x),
               "<= 256 B", f->rss_per <= HELD_TARGET_BYTES);
    figure_row(t, "malloc in use per lock",
               fmt_bytes(f->heap_per, x, sizeof x), NULL, 0);
    snprintf(v, sizeof v, "RSS %s, malloc %s",
             fmt_bytes(f->rss_marg, x, sizeof x),
             fmt_bytes(f->heap_marg, y, sizeof y));
    figure_row(t, "marginal per lock (2nd half)", v, NULL, 0);
    snprintf(v, sizeof v, "%s -> %s", fmt_bytes((double)a[A_RSS0], x, sizeof x),
             fmt_bytes((double)a[A_RSS1], y, sizeof y));
    figure_row(t, "RSS before -> all held", v, NULL, 0);
    snprintf(v, sizeof v, "RSS %s, malloc %s",
             fmt_bytes((double)r[R_RSS], x, sizeof x),
             fmt_bytes((double)r[R_HEAP], y, sizeof y));
    figure_row(t, "after release and free", v, NULL, 0);
}

/* Renewal and CPU rows of the table. */
static void held_table_renewals(struct table *t, const struct held_cfg *cfg,
                                const struct held_figs *f)
{
    char v[96];
    double span = f->hold_s > 0 ? f->hold_s : 1;
    snprintf(v, sizeof v, "%.2f %% of a core", f->cpu_pct);
    figure_row(t, "client CPU while holding", v,
               cfg->lease_ms == 30000 ? "<= 5 %" : NULL,
               f->cpu_pct <= HELD_TARGET_CPU);
    snprintf(v, sizeof v, "%.1f /s (%lld in %.1f s)", (double)f->calls / span,
             f->calls, f->hold_s);
    figure_row(t, "renew calls (EVALSHA)", v, NULL, 0);
    snprintf(v, sizeof v, "%.0f /s", (double)cfg->n * 3000.0 / cfg->lease_ms);
    figure_row(t, "locks renewed (expected)", v, NULL, 0);
    snprintf(v, sizeof v, "%.2f ms/s (%.1f us per call)",
             (double)f->usec / 1e3 / span,
             f->calls > 0 ? (double)f->usec / (double)f->calls : 0);
    figure_row(t, "server time in renewals", v, NULL, 0);
    snprintf(v, sizeof v, "%d..%d", f->rounds_min, f->rounds_max);
    figure_row(t, "renewal rounds seen (64 sampled)", v, ">= 2",
               f->rounds_min >= 2);
}

/* Print the table; returns the targets missed. */
static int held_table(const struct held_cfg *cfg, struct held_result *hr,
                      const struct held_figs *f)
{
    struct table t;
    char v[96], x[32], y[32];
    double n = (double)cfg->n;
    table_init(&t, "figure", "value", "target", "", NULL);
    snprintf(v, sizeof v, "%s in %.2f s (%s/s)", fmt_count(n, x, sizeof x),
             f->acq_s, fmt_count(f->acq_s > 0 ? n / f->acq_s : 0, y, sizeof y));
    figure_row(&t, "locks acquired", v, NULL, 0);
    snprintf(v, sizeof v, "%s p50, %s p99",
             fmt_ns(samples_pct(&hr->lat, 50), x, sizeof x),
             fmt_ns(samples_pct(&hr->lat, 99), y, sizeof y));
    figure_row(&t, "acquire latency (window 1024)", v, NULL, 0);
    held_table_memory(&t, hr, f);
    held_table_renewals(&t, cfg, f);
    snprintf(v, sizeof v, "%" PRId64 " (on_lost %" PRId64
             ", release not owner %" PRId64 ")",
             f->lost + f->not_owner, f->lost, f->not_owner);
    figure_row(&t, "locks lost", v, "0", f->lost + f->not_owner == 0);
    snprintf(v, sizeof v, "%lld", hr->keys_at_end);
    figure_row(&t, "lock keys at the end of the hold", v, "== N",
               !f->keys_bad);
    snprintf(v, sizeof v, "%" PRId64, f->errors);
    figure_row(&t, "request errors", v, "0", f->errors == 0);
    snprintf(v, sizeof v, "%.2f s", f->rel_s);
    figure_row(&t, "release all", v, NULL, 0);
    table_print(&t, stdout);
    return (f->rss_per > HELD_TARGET_BYTES) +
           (cfg->lease_ms == 30000 && f->cpu_pct > HELD_TARGET_CPU) +
           (f->rounds_min < 2);
}

static void held_json(struct json *j, const struct held_cfg *cfg,
                      struct held_result *hr, const struct held_figs *f)
{
    const int64_t *a = hr->acq.v, *r = hr->rel.v;
    json_int(j, "locks", cfg->n);
    json_num(j, "hold_s", cfg->hold_s);
    json_int(j, "lease_ms", cfg->lease_ms);
    json_num(j, "acquire_s", f->acq_s);
    json_latency(j, "acquire_latency", &hr->lat);
    json_int(j, "rss_before", a[A_RSS0]);
    json_int(j, "rss_held", a[A_RSS1]);
    json_int(j, "malloc_before", a[A_HEAP0]);
    json_int(j, "malloc_held", a[A_HEAP1]);
    json_num(j, "rss_per_lock", f->rss_per);
    json_num(j, "malloc_per_lock", f->heap_per);
    json_num(j, "rss_per_lock_marginal", f->rss_marg);
    json_num(j, "malloc_per_lock_marginal", f->heap_marg);
    json_int(j, "rss_after_free", r[R_RSS]);
    json_int(j, "malloc_after_free", r[R_HEAP]);
    json_num(j, "cpu_pct", f->cpu_pct);
    json_int(j, "renew_calls", f->calls);
    json_num(j, "renew_calls_per_s",
             f->hold_s > 0 ? (double)f->calls / f->hold_s : 0);
    json_int(j, "renew_server_usec", f->usec);
    json_int(j, "renewal_rounds_min", f->rounds_min);
    json_int(j, "renewal_rounds_max", f->rounds_max);
    json_int(j, "locks_lost", f->lost + f->not_owner);
    json_int(j, "keys_at_end", hr->keys_at_end);
    json_int(j, "errors", f->errors);
    json_num(j, "release_s", f->rel_s);
    json_rate(j, "renew_calls_over_time", &hr->w.renew);
}

/* Print, write and plot; returns failures, the missed targets in *missed. */
static int held_report(struct bench *b, const struct held_cfg *cfg,
                       struct held_result *hr, int *missed)
{
    struct held_figs f;
    held_figures(cfg, hr, &f);
    *missed = held_table(cfg, hr, &f);
    held_json(b->json, cfg, hr, &f);
    const char *tl = "acquire latency";
    struct samples *d = &hr->lat;
    plot_cdf(b, "acquire-latency", "held: acquire latency (window 1024)", &d,
             &tl, 1);
    const struct rate *rp = &hr->w.renew;
    const char *rt = "EVALSHA/s (renewals)";
    plot_rate(b, "renewals", "held: renew calls/s during the hold", "calls/s",
              &rp, &rt, 1, NULL, 0, 0);
    return (f.lost + f.not_owner > 0) + (f.errors > 0) + f.keys_bad;
}

int sc_held(struct bench *b)
{
    struct held_cfg cfg = {HELD_NAME, b->o.locks ? b->o.locks : 100000,
                           b->o.seconds > 0 ? b->o.seconds : 35,
                           b->o.lease_ms ? b->o.lease_ms : 30000, b->host,
                           b->port};
    struct held_result hr;
    int missed = 0;
    memset(&hr, 0, sizeof hr);
    printf("held: %ld locks under the watchdog (lease %u ms, renewed every "
           "%.1f s), held %.0f s, on %s:%d\n",
           cfg.n, cfg.lease_ms, cfg.lease_ms / 3000.0, cfg.hold_s, b->host,
           b->port);
    if (cfg.hold_s < 2 * cfg.lease_ms / 3000.0 + 1)
        printf("  note: a hold this short shows fewer than 2 renewal "
               "rounds\n");
    progress_begin(b, cfg.hold_s + 5);
    if (held_run(b, &cfg, &hr) != 0) {
        fprintf(stderr, "held: the run failed\n");
        samples_free(&hr.lat);
        rate_free(&hr.w.renew);
        return 1;
    }
    int bad = held_report(b, &cfg, &hr, &missed);
    if (bad)
        printf("result: FAIL\n");
    else if (missed)
        printf("result: ok, %d target(s) missed\n", missed);
    else
        printf("result: ok\n");
    samples_free(&hr.lat);
    rate_free(&hr.w.renew);
    return bad ? 1 : 0;
}
