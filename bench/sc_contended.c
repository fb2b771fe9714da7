/* SPDX-License-Identifier: BSD-3-Clause */
/* sc_contended.c -- many waiters in several processes fight for one lock.
 *
 * The workers (see contend.h) run for --seconds, stop by themselves and hand
 * their records to the parent, which merges them and reports throughput,
 * hand-off and wait latencies, fairness, and the mutual-exclusion checks:
 *  - the final counter equals the number of acquisitions,
 *  - [acquired, release sent] intervals sorted by acquisition never overlap,
 *  - fencing tokens strictly increase in acquisition order,
 *  - each critical section read the value the previous one wrote.
 * Exits 1 on any violation, request error or failed worker; an acquire that
 * times out (starvation) is reported but does not fail, and neither does a
 * latency or fairness target that is missed (it is printed as MISSED).
 *
 * The worker half of this file and the checks are shared with sc_faults.c,
 * which runs the same workers while it pauses and kills the server, and
 * with sc_redlock.c, which runs them over three masters and kills one. */
#include "contend.h"

#include <event2/event.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <hilock/hilock.h>

#include "keys.h" /* src/: the key and channel names */

#define RETRY_MS 10       /* pause before retrying a failed acquire */
#define SETTLE_MS 300     /* loop time after the last waiter went idle */
#define HARD_GRACE_S 20   /* worker's own hard stop after the drain */
#define PARENT_GRACE_S 30 /* parent kills workers after the drain + this */
#define READY_TIMEOUT_MS 15000


/* ---- worker: one process, one loop, one hilock client ------------------ */

enum wstate { W_IDLE = 0, W_WAITING, W_CS, W_RELEASING, W_RETRY };

struct cproc;

struct cwaiter {
    struct cproc *p;
    struct hilock_lock *lock;
    struct hilock_multi *multi; /* cfg->multi: taken instead of lock */
    int id;
    enum wstate state;
    int cs_ok;
    int64_t call_ns, acq_ns, token, seen;
};

struct cproc {
    int index;
    const struct contend_cfg *cfg;
    struct event_base *base;
    struct hilock_client *client;
    struct kv *kv;
    struct cwaiter *ws;
    int nws;
    int active;   /* waiters not idle, and the probe while it runs */
    int stopping;
    struct hilock_lock *probe; /* worker 0 with probe_ms, else NULL */
    struct event *probe_tick;
    int probe_busy;
    int64_t probe_call_ns;     /* the probe's acquire was called */
    int64_t probe_fail_since;  /* first failure of the current run */
    int closing;  /* tearing down: callbacks only return */
    struct crecord *recs;
    size_t nrecs, caprecs;
    struct cstats st;
};

static void waiter_acquire(struct cwaiter *w);

/* Append a record; on allocation failure count a section error (the counter
 * check then fails too, loudly). */
static void proc_record(struct cproc *p, const struct cwaiter *w, int64_t rel)
{
    if (p->nrecs == p->caprecs) {
        size_t cap = p->caprecs ? p->caprecs * 2 : 4096;
        struct crecord *r = realloc(p->recs, cap * sizeof(*r));
        if (!r) {
            p->st.cs_errors++;
            return;
        }
        p->recs = r;
        p->caprecs = cap;
    }
    p->recs[p->nrecs++] = (struct crecord){
        w->call_ns, w->acq_ns, rel, w->token, w->seen, p->index, w->id,
        w->cs_ok, 0};
}

/* A waiter went idle; once all have after the stop, settle and leave. */
static void waiter_idle(struct cwaiter *w)
{
    struct cproc *p = w->p;
    w->state = W_IDLE;
    if (--p->active == 0 && p->stopping) {
        struct timeval tv = {0, SETTLE_MS * 1000};
        event_base_loopexit(p->base, &tv);
    }
}

static void on_released(struct hilock_lock *lock, int status,
                        const struct hilock_result *res, void *arg)
{
    struct cwaiter *w = arg;
    (void)lock;
    w->p->st.rel_fired++;
    if (w->p->closing)
        return;
    if (status != 0)
        w->p->st.rel_errors++;
    else if (res->holds != 0) /* each waiter takes one hold at a time */
        w->p->st.rel_left++;
    if (w->p->stopping)
        waiter_idle(w);
    else
        waiter_acquire(w);
}

static void on_multi_released(struct hilock_multi *m, int status,
                              const struct hilock_result *res, void *arg)
{
    (void)m;
    on_released(NULL, status, res, arg);
}

/* End of the critical section: record it, then release. */
static void waiter_release(struct cwaiter *w)
{
    struct cproc *p = w->p;
    proc_record(p, w, now_ns());
    w->state = W_RELEASING;
    if ((w->multi ? hilock_multi_release(w->multi, on_multi_released, w)
                  : hilock_lock_release(w->lock, on_released, w)) != 0) {
        p->st.rel_errors++;
        waiter_idle(w);
        return;
    }
    p->st.rel_issued++;
}

static void on_set(redisAsyncContext *ac, void *reply, void *arg)
{
    struct cwaiter *w = arg;
    const redisReply *r = reply;
    (void)ac;
    if (w->p->closing)
        return;
    if (r && r->type == REDIS_REPLY_STATUS)
        w->cs_ok = 1;
    else
        w->p->st.cs_errors++;
    waiter_release(w);
}

static void on_get(redisAsyncContext *ac, void *reply, void *arg)
{
    struct cwaiter *w = arg;
    struct cproc *p = w->p;
    const redisReply *r = reply;
    char num[24];
    (void)ac;
    if (p->closing)
        return;
    if (!r || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL)) {
        p->st.cs_errors++;
        waiter_release(w);
        return;
    }
    w->seen = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
    int n = snprintf(num, sizeof num, "%" PRId64, w->seen + 1);
    const char *argv[3] = {"SET", CONTEND_COUNTER, num};
    size_t lens[3] = {3, sizeof(CONTEND_COUNTER) - 1, (size_t)n};
    if (kv_cmd(p->kv, on_set, w, 3, argv, lens) != 0) {
        p->st.cs_errors++;
        waiter_release(w);
    }
}

/* The lock is ours: the critical section starts with the GET. */
static void waiter_section(struct cwaiter *w)
{
    struct cproc *p = w->p;
    const char *argv[2] = {"GET", CONTEND_COUNTER};
    size_t lens[2] = {3, sizeof(CONTEND_COUNTER) - 1};
    w->state = W_CS;
    w->seen = -1;
    w->cs_ok = 0;
    if (kv_cmd(p->kv, on_get, w, 2, argv, lens) != 0) {
        p->st.cs_errors++;
        waiter_release(w);
    }
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    struct cwaiter *w = arg;
    (void)fd;
    (void)what;
    if (w->p->stopping)
        waiter_idle(w);
    else
        waiter_acquire(w);
}

static void on_acquired(struct hilock_lock *lock, int status,
                        const struct hilock_result *res, void *arg)
{
    struct cwaiter *w = arg;
    struct cproc *p = w->p;
    (void)lock;
    p->st.acq_fired++;
    if (p->closing)
        return;
    p->st.acq_by_code[-status < CONTEND_ERRS ? -status : CONTEND_ERRS - 1]++;
    if (status == HILOCK_ENOREPLICA) {
        p->st.norep_last_ns = now_ns();
        if (!p->st.norep_first_ns)
            p->st.norep_first_ns = p->st.norep_last_ns;
    }
    if (status == 0) {
        w->acq_ns = now_ns();
        w->token = res->token;
        waiter_section(w);
        return;
    }
    if (p->stopping) {
        waiter_idle(w);
        return;
    }
    struct timeval tv = {0, RETRY_MS * 1000};
    w->state = W_RETRY;
    if (event_base_once(p->base, -1, EV_TIMEOUT, on_retry, w, &tv) != 0)
        waiter_idle(w);
}

static void on_multi_acquired(struct hilock_multi *m, int status,
                              const struct hilock_result *res, void *arg)
{
    (void)m;
    on_acquired(NULL, status, res, arg);
}

static void waiter_acquire(struct cwaiter *w)
{
    w->call_ns = now_ns();
    w->state = W_WAITING;
    if ((w->multi ? hilock_multi_acquire(w->multi, CONTEND_WAIT_MS, 0,
                                         on_multi_acquired, w)
                  : hilock_lock_acquire(w->lock, CONTEND_WAIT_MS, 0,
                                        on_acquired, w)) != 0) {
        w->p->st.acq_by_code[CONTEND_ERRS - 1]++;
        waiter_idle(w);
        return;
    }
    w->p->st.acq_issued++;
}

static void on_lost(struct hilock_lock *lock, int status,
                    const struct hilock_result *res, void *arg)
{
    struct cwaiter *w = arg;
    (void)lock;
    (void)status;
    (void)res;
    w->p->st.lost++;
}

/* ---- the probe: try another lock once, now and then ------------------- */

/* A probe finished (released, or not acquired). */
static void probe_idle(struct cproc *p)
{
    p->probe_busy = 0;
    if (--p->active == 0 && p->stopping) {
        struct timeval tv = {0, SETTLE_MS * 1000};
        event_base_loopexit(p->base, &tv);
    }
}

static void on_probe_released(struct hilock_lock *lock, int status,
                              const struct hilock_result *res, void *arg)
{
    struct cproc *p = arg;
    (void)lock;
    (void)res;
    p->st.rel_fired++;
    if (p->closing)
        return;
    if (status != 0)
        p->st.rel_errors++;
    probe_idle(p);
}

/* A run of failed probes ended (or the run did): keep the longest. */
static void probe_run_end(struct cproc *p, int64_t t)
{
    if (p->probe_fail_since && t - p->probe_fail_since > p->st.probe_fail_ns) {
        p->st.probe_fail_ns = t - p->probe_fail_since;
        p->st.probe_fail_at_ns = p->probe_fail_since;
    }
    p->probe_fail_since = 0;
}

static void on_probe_acquired(struct hilock_lock *lock, int status,
                              const struct hilock_result *res, void *arg)
{
    struct cproc *p = arg;
    int64_t t = now_ns();
    (void)res;
    p->st.acq_fired++;
    if (p->closing)
        return;
    if (t - p->probe_call_ns > p->st.probe_slow_ns) {
        p->st.probe_slow_ns = t - p->probe_call_ns;
        p->st.probe_slow_at_ns = p->probe_call_ns;
    }
    p->st.probe_by_code[-status < CONTEND_ERRS ? -status : CONTEND_ERRS - 1]++;
    if (status == HILOCK_ENOREPLICA) {
        p->st.norep_last_ns = t;
        if (!p->st.norep_first_ns)
            p->st.norep_first_ns = t;
    }
    if (status != 0) {
        if (!p->probe_fail_since)
            p->probe_fail_since = t;
        probe_idle(p);
        return;
    }
    probe_run_end(p, t);
    if (hilock_lock_release(lock, on_probe_released, p) != 0) {
        p->st.rel_errors++;
        probe_idle(p);
        return;
    }
    p->st.rel_issued++;
}

static void on_probe_tick(evutil_socket_t fd, short what, void *arg)
{
    struct cproc *p = arg;
    (void)fd;
    (void)what;
    if (p->stopping || p->probe_busy)
        return;
    p->probe_call_ns = now_ns();
    if (hilock_lock_acquire(p->probe, 0, 0, on_probe_acquired, p) != 0) {
        p->st.probe_by_code[CONTEND_ERRS - 1]++;
        return;
    }
    p->st.acq_issued++;
    p->probe_busy = 1;
    p->active++;
}

/* The drain time is over: whoever is not idle now is stuck. */
static void on_drain_end(evutil_socket_t fd, short what, void *arg)
{
    struct cproc *p = arg;
    (void)fd;
    (void)what;
    p->st.stuck = (uint64_t)p->active;
    event_base_loopbreak(p->base);
}

/* --seconds are up: cancel parked acquires, let critical sections finish
 * within the drain time. */
static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    struct cproc *p = arg;
    (void)fd;
    (void)what;
    p->stopping = 1;
    if (p->probe_tick)
        event_del(p->probe_tick);
    probe_run_end(p, now_ns());
    for (int i = 0; i < p->nws; i++)
        if (p->ws[i].state == W_WAITING &&
            (p->ws[i].multi ? hilock_multi_cancel(p->ws[i].multi)
                            : hilock_lock_cancel(p->ws[i].lock)) ==
                0) /* on_acquired: idle */
            p->st.stop_canceled++;
    if (p->active == 0) {
        struct timeval tv = {0, SETTLE_MS * 1000};
        event_base_loopexit(p->base, &tv);
    }
}

static void on_hard_stop(evutil_socket_t fd, short what, void *arg)
{
    struct cproc *p = arg;
    (void)fd;
    (void)what;
    p->st.overrun = 1;
    event_base_loopbreak(p->base);
}

static void on_multi_lost(struct hilock_multi *m, int status,
                          const struct hilock_result *res, void *arg)
{
    (void)m;
    on_lost(NULL, status, res, arg);
}

/* cfg->multi: w's MultiLock over the lock and CONTEND_LOCK2 (owner tags
 * apart from the lock handles'). 0 or -1. */
static int waiter_multi(struct cwaiter *w)
{
    static const char *const names[2] = {CONTEND_LOCK, CONTEND_LOCK2};
    static const size_t lens[2] = {sizeof(CONTEND_LOCK) - 1,
                                   sizeof(CONTEND_LOCK2) - 1};
    if (hilock_multi_new(w->p->client, names, lens, 2,
                         (uint64_t)w->id + 1000001, &w->multi) != 0)
        return -1;
    return hilock_multi_on_lost(w->multi, on_multi_lost, w);
}

/* Loop, client, section connection and lock handles of worker index.
 * 0 or -1. */
static int proc_setup(struct cproc *p, const struct contend_cfg *cfg,
                      int index)
{
    struct hilock_options ho;
    int first = index * cfg->waiters / cfg->procs;
    int last = (index + 1) * cfg->waiters / cfg->procs;
    memset(p, 0, sizeof(*p));
    p->index = index;
    p->cfg = cfg;
    if (!(p->base = event_base_new()))
        return -1;
    hilock_options_init(&ho);
    ho.node.host = cfg->host;
    ho.node.port = cfg->port;
    ho.fencing = !cfg->no_fencing;
    if (cfg->nmasters) {
        ho.topology = HILOCK_TOPOLOGY_REDLOCK;
        ho.redlock.masters = cfg->masters;
        ho.redlock.count = cfg->nmasters;
    } else if (cfg->nsentinels) {
        ho.topology = HILOCK_TOPOLOGY_SENTINEL;
        ho.sentinel.nodes = cfg->sentinels;
        ho.sentinel.count = cfg->nsentinels;
        ho.sentinel.master_name = cfg->master_name;
    } else if (cfg->ncluster) {
        ho.topology = HILOCK_TOPOLOGY_CLUSTER;
        ho.cluster.seeds = cfg->cluster;
        ho.cluster.count = cfg->ncluster;
    }
    ho.wait_replicas = cfg->wait_replicas;
    ho.fair = cfg->fair;
    if (cfg->lease_ms)
        ho.watchdog_lease_ms = cfg->lease_ms;
    if (hilock_client_new(p->base, &ho, &p->client) != 0 ||
        !(p->kv = kv_new(p->base, cfg->host, cfg->port)))
        return -1;
    p->nws = last - first;
    if (!(p->ws = calloc((size_t)(p->nws ? p->nws : 1), sizeof(*p->ws))))
        return -1;
    for (int i = 0; i < p->nws; i++) {
        struct cwaiter *w = &p->ws[i];
        w->p = p;
        w->id = first + i;
        if (hilock_lock_new(p->client, CONTEND_LOCK, sizeof(CONTEND_LOCK) - 1,
                            (uint64_t)w->id + 1, &w->lock) != 0 ||
            hilock_lock_on_lost(w->lock, on_lost, w) != 0 ||
            (cfg->multi && waiter_multi(w) != 0))
            return -1;
    }
    if (cfg->probe_ms > 0 && index == 0 &&
        (hilock_lock_new(p->client, CONTEND_PROBE, sizeof(CONTEND_PROBE) - 1,
                         1, &p->probe) != 0 ||
         !(p->probe_tick = event_new(p->base, -1, EV_PERSIST, on_probe_tick,
                                     p))))
        return -1;
    return 0;
}

/* Start every waiter, run until all stopped (or the drain or hard stop). */
static void proc_run(struct cproc *p)
{
    const struct contend_cfg *cfg = p->cfg;
    double stop_s = cfg->seconds, drain_s = stop_s + cfg->drain_ms / 1000.0;
    struct timeval stop = {(time_t)stop_s,
                           (suseconds_t)((stop_s - (int)stop_s) * 1e6)};
    struct timeval drain = {(time_t)drain_s,
                            (suseconds_t)((drain_s - (int)drain_s) * 1e6)};
    struct timeval hard = {(time_t)drain_s + HARD_GRACE_S, 0};
    struct event *ev[3] = {evtimer_new(p->base, on_stop, p),
                           evtimer_new(p->base, on_drain_end, p),
                           evtimer_new(p->base, on_hard_stop, p)};
    if (!ev[0] || !ev[1] || !ev[2]) {
        p->st.setup_failed = 1;
        return;
    }
    evtimer_add(ev[0], &stop);
    evtimer_add(ev[1], &drain);
    evtimer_add(ev[2], &hard);
    p->active = p->nws;
    for (int i = 0; i < p->nws; i++)
        waiter_acquire(&p->ws[i]);
    if (p->probe_tick) {
        struct timeval every = {cfg->probe_ms / 1000,
                                (cfg->probe_ms % 1000) * 1000};
        evtimer_add(p->probe_tick, &every);
    }
    event_base_dispatch(p->base);
    for (int i = 0; i < 3; i++)
        event_free(ev[i]);
}

/* The worker's whole life: set up, report ready, wait for go, run, write
 * counters and records. Returns its exit status. */
static int worker_main(int index, int fd, FILE *out, void *arg)
{
    const struct contend_cfg *cfg = arg;
    struct cproc p;
    int rc = proc_setup(&p, cfg, index);
    if (rc == 0)
        (void)kv_wait_up(p.base, p.kv);
    else
        p.st.setup_failed = 1;
    /* a worker that failed its setup still goes, and reports it */
    if (fan_ready(fd, 1, READY_TIMEOUT_MS * 2) != 0)
        return 1;
    if (rc == 0)
        proc_run(&p);
    p.closing = 1; /* callbacks fired by the frees below only return */
    p.st.records = p.nrecs;
    struct cstats st = p.st; /* counted before teardown fires ECANCELED */
    hilock_client_free(p.client);
    if (p.probe_tick)
        event_free(p.probe_tick);
    kv_free(p.kv);
    if (p.base)
        event_base_free(p.base);
    if (fan_write(out, &st, sizeof st) != 0 ||
        fan_write(out, p.recs, p.nrecs * sizeof(*p.recs)) != 0)
        return 1;
    return st.setup_failed || st.overrun ? 1 : 0;
}

/* ---- parent: start, supervise, merge ----------------------------------- */

/* Add a worker's counters to the sum. */
static void cstats_add(struct cstats *d, const struct cstats *s)
{
    d->records += s->records;
    d->acq_issued += s->acq_issued;
    d->acq_fired += s->acq_fired;
    d->rel_issued += s->rel_issued;
    d->rel_fired += s->rel_fired;
    for (int c = 0; c < CONTEND_ERRS; c++)
        d->acq_by_code[c] += s->acq_by_code[c];
    d->rel_errors += s->rel_errors;
    d->rel_left += s->rel_left;
    d->cs_errors += s->cs_errors;
    d->lost += s->lost;
    d->stuck += s->stuck;
    d->stop_canceled += s->stop_canceled;
    d->overrun += s->overrun;
    d->setup_failed += s->setup_failed;
    if (s->norep_first_ns &&
        (!d->norep_first_ns || s->norep_first_ns < d->norep_first_ns))
        d->norep_first_ns = s->norep_first_ns;
    if (s->norep_last_ns > d->norep_last_ns)
        d->norep_last_ns = s->norep_last_ns;
    for (int c = 0; c < CONTEND_ERRS; c++)
        d->probe_by_code[c] += s->probe_by_code[c];
    if (s->probe_fail_ns > d->probe_fail_ns) {
        d->probe_fail_ns = s->probe_fail_ns;
        d->probe_fail_at_ns = s->probe_fail_at_ns;
    }
    if (s->probe_slow_ns > d->probe_slow_ns) {
        d->probe_slow_ns = s->probe_slow_ns;
        d->probe_slow_at_ns = s->probe_slow_at_ns;
    }
}

/* Add what a worker wrote to *res. 0 or -1. */
static int collect(FILE *f, struct cresults *res)
{
    struct cstats st;
    rewind(f);
    if (fan_read(f, &st, sizeof st) != 0)
        return -1;
    struct crecord *r = realloc(res->recs,
                                (res->n + st.records + 1) * sizeof(*r));
    if (!r)
        return -1;
    res->recs = r;
    if (fan_read(f, r + res->n, st.records * sizeof(*r)) != 0)
        return -1;
    res->n += st.records;
    cstats_add(&res->sum, &st);
    return 0;
}

static int cmp_acq(const void *x, const void *y)
{
    const struct crecord *a = x, *b = y;
    return (a->acq_ns > b->acq_ns) - (a->acq_ns < b->acq_ns);
}

/* Empty the keys of the run on cfg's server and set the counter to 0.
 * 0 or -1. */
static int reset_keys(struct bench *b, const struct contend_cfg *cfg)
{
    static const char *const extra[] = {
        CONTEND_LOCK, CONTEND_COUNTER,
        KEYS_FENCE_HEAD CONTEND_LOCK KEYS_TAG_TAIL, NULL};
    redisContext *rc = bench_connect_at(cfg->host, cfg->port, 2000);
    int ok = rc && bench_reset(b, rc, extra) == 0;
    redisReply *r = ok ? bench_cmd(rc, "SET", CONTEND_COUNTER, "0", NULL)
                       : NULL;
    ok = r && r->type == REDIS_REPLY_STATUS;
    if (r)
        freeReplyObject(r);
    if (rc)
        redisFree(rc);
    return ok ? 0 : -1;
}

void contend_progress(struct bench *b, const struct contend_cfg *cfg,
                      int64_t t_go, int64_t t_until)
{
    redisContext *rc = bench_connect_at(cfg->host, cfg->port, 500);
    while (now_ns() < t_until) {
        long long c = rc ? bench_int(rc, "GET", CONTEND_COUNTER, NULL) : 0;
        double s = (double)(now_ns() - t_go) / 1e9;
        int64_t left = (t_until - now_ns()) / 1000000;
        progress_show(b, "of %.0f s: %lld critical sections, %.0f/s",
                      cfg->seconds, c, s > 0 ? (double)c / s : 0);
        sleep_ms(left > 500 ? 500 : left > 0 ? (int)left : 0);
    }
    if (rc)
        redisFree(rc);
}

void contend_cfg_init(struct contend_cfg *cfg, const struct bench *b,
                      double seconds, int drain_ms)
{
    *cfg = (struct contend_cfg){.procs = b->o.procs ? b->o.procs : 4,
                                .waiters = b->o.waiters ? b->o.waiters : 100,
                                .seconds = seconds,
                                .drain_ms = drain_ms,
                                .host = b->host,
                                .port = b->port};
    if (cfg->waiters < cfg->procs)
        cfg->procs = cfg->waiters;
}

int contend_run(struct bench *b, const struct contend_cfg *cfg,
                struct cresults *res, contend_during_fn *during, void *arg)
{
    struct fanout f;
    memset(res, 0, sizeof(*res));
    if (reset_keys(b, cfg) != 0 || fan_spawn(&f, cfg->procs, worker_main,
                                        (void *)cfg) != 0)
        return -1;
    if (fan_all_ready(&f, READY_TIMEOUT_MS) != 0)
        return -1;
    res->no_tokens = cfg->multi || cfg->no_fencing;
    res->t_go_ns = now_ns();
    fan_broadcast(&f, FAN_GO);
    progress_begin(b, cfg->seconds);
    int64_t t_end = res->t_go_ns + (int64_t)(cfg->seconds * 1e9);
    if (during)
        during(b, res->t_go_ns, t_end, arg);
    else
        contend_progress(b, cfg, res->t_go_ns, t_end);
    progress_end(b);
    int64_t grace = (int64_t)(cfg->drain_ms / 1000 + PARENT_GRACE_S) *
                    1000000000;
    res->failed = fan_reap(&f, t_end + grace);
    for (int i = 0; i < f.n; i++)
        if (collect(f.c[i].out, res) != 0)
            res->failed++;
    fan_free(&f);
    if (res->n > 1)
        qsort(res->recs, res->n, sizeof(*res->recs), cmp_acq);
    return 0;
}

/* ---- figures shared with faults ----------------------------------------- */

/* Waiters served, and the fewest/most acquisitions of one. */
static void count_served(const struct cresults *res, int waiters,
                         struct cfigures *f)
{
    size_t *per = calloc((size_t)waiters, sizeof(*per));
    f->per_min = SIZE_MAX;
    if (!per)
        return;
    for (size_t i = 0; i < res->n; i++)
        if (res->recs[i].waiter >= 0 && res->recs[i].waiter < waiters)
            per[res->recs[i].waiter]++;
    for (int w = 0; w < waiters; w++) {
        f->served += per[w] > 0;
        f->per_min = per[w] < f->per_min ? per[w] : f->per_min;
        f->per_max = per[w] > f->per_max ? per[w] : f->per_max;
    }
    free(per);
}

void contend_figures(const struct cresults *res, int waiters,
                     struct cfigures *f)
{
    const struct crecord *r = res->recs;
    size_t n = res->n, same_waiter = 0, same_proc = 0;
    memset(f, 0, sizeof(*f));
    for (size_t i = 0; i < n; i++) {
        samples_add(&f->wait, r[i].acq_ns - r[i].call_ns);
        if (i == 0)
            continue;
        int64_t h = r[i].acq_ns - r[i - 1].rel_ns;
        samples_add(&f->hand, h);
        if (r[i].waiter == r[i - 1].waiter)
            same_waiter++;
        else
            samples_add(&f->other, h);
        same_proc += r[i].proc == r[i - 1].proc;
    }
    f->prev_share = n > 1 ? 100.0 * (double)same_waiter / (double)(n - 1) : 0;
    f->proc_share = n > 1 ? 100.0 * (double)same_proc / (double)(n - 1) : 0;
    f->span_s = n ? (double)(r[n - 1].rel_ns - r[0].call_ns) / 1e9 : 0;
    f->cs_per_s = f->span_s > 0 ? (double)n / f->span_s : 0;
    count_served(res, waiters, f);
}

void contend_figures_free(struct cfigures *f)
{
    samples_free(&f->hand);
    samples_free(&f->other);
    samples_free(&f->wait);
}

/* Acquisitions per process and how long the lock stayed in one process. */
static void print_processes(const struct cresults *res, int procs)
{
    size_t *per = calloc((size_t)procs, sizeof(*per));
    size_t runs = 0, longest = 0, run = 0;
    const struct crecord *r = res->recs;
    if (!per)
        return;
    for (size_t i = 0; i < res->n; i++) {
        if (r[i].proc >= 0 && r[i].proc < procs)
            per[r[i].proc]++;
        run = i > 0 && r[i].proc == r[i - 1].proc ? run + 1 : 1;
        runs += run == 1;
        longest = run > longest ? run : longest;
    }
    printf("  acquisitions per process:");
    for (int i = 0; i < procs; i++)
        printf(" %zu", per[i]);
    printf("; stays in one process: mean %.1f, longest %zu\n",
           runs ? (double)res->n / (double)runs : 0.0, longest);
    free(per);
}

/* One latency row: value "p50" etc. with an optional target in ns. */
static int latency_row(struct table *t, const char *fig, struct samples *s,
                       double p, int64_t target_ns, const char *target)
{
    char v[32];
    int64_t x = samples_pct(s, p);
    int met = x <= target_ns;
    figure_row(t, fig, fmt_ns(x, v, sizeof v), target, met);
    return target ? !met : 0;
}

int contend_print(const struct cfigures *fc, const struct cresults *res,
                  const struct contend_cfg *cfg)
{
    struct cfigures *f = (struct cfigures *)fc;
    struct table t;
    char v[64], a[32];
    int missed = 0;
    table_init(&t, "figure", "value", "target", "", NULL);
    snprintf(v, sizeof v, "%zu in %.2f s", res->n, f->span_s);
    figure_row(&t, "acquisitions", v, NULL, 0);
    figure_row(&t, "critical sections/s", fmt_count(f->cs_per_s, a, sizeof a),
               NULL, 0);
    snprintf(v, sizeof v, "%zu / %d (per waiter %zu..%zu)", f->served,
             cfg->waiters, f->served ? f->per_min : 0, f->per_max);
    figure_row(&t, "waiters served", v, NULL, 0);
    latency_row(&t, "hand-off p50", &f->hand, 50, 0, NULL);
    latency_row(&t, "hand-off p99", &f->hand, 99, 0, NULL);
    missed += latency_row(&t, "hand-off to other waiter p50", &f->other, 50,
                          150000, "<= 0.15 ms");
    latency_row(&t, "hand-off to other waiter p99", &f->other, 99, 0, NULL);
    latency_row(&t, "wait p50", &f->wait, 50, 0, NULL);
    missed += latency_row(&t, "wait p99", &f->wait, 99, 50000000, "<= 50 ms");
    latency_row(&t, "wait max", &f->wait, 100, 0, NULL);
    snprintf(v, sizeof v, "%.1f %%", f->prev_share);
    figure_row(&t, "previous-holder share", v, "<= 50 %",
               f->prev_share <= 50.0);
    missed += f->prev_share > 50.0;
    snprintf(v, sizeof v, "%.1f %%", f->proc_share);
    figure_row(&t, "same-process share", v, NULL, 0);
    table_print(&t, stdout);
    print_processes(res, cfg->procs);
    return missed;
}

void contend_json(struct bench *b, struct cfigures *f,
                  const struct cresults *res)
{
    struct json *j = b->json;
    const struct cstats *s = &res->sum;
    json_int(j, "acquisitions", (int64_t)res->n);
    json_num(j, "span_s", f->span_s);
    json_num(j, "critical_sections_per_s", f->cs_per_s);
    json_int(j, "waiters_served", (int64_t)f->served);
    json_num(j, "previous_holder_share_pct", f->prev_share);
    json_num(j, "same_process_share_pct", f->proc_share);
    json_latency(j, "handoff", &f->hand);
    json_latency(j, "handoff_other", &f->other);
    json_latency(j, "wait", &f->wait);
    json_obj(j, "counters");
    json_int(j, "acquire_issued", (int64_t)s->acq_issued);
    json_int(j, "acquire_callbacks", (int64_t)s->acq_fired);
    json_int(j, "release_issued", (int64_t)s->rel_issued);
    json_int(j, "release_callbacks", (int64_t)s->rel_fired);
    json_obj(j, "acquire_outcomes");
    for (int c = 0; c < CONTEND_ERRS; c++)
        if (s->acq_by_code[c])
            json_int(j, c == CONTEND_ERRS - 1 ? "other" : hilock_err_name(-c),
                     (int64_t)s->acq_by_code[c]);
    json_end(j);
    json_int(j, "release_errors", (int64_t)s->rel_errors);
    json_int(j, "section_errors", (int64_t)s->cs_errors);
    json_int(j, "locks_lost", (int64_t)s->lost);
    json_int(j, "stuck_waiters", (int64_t)s->stuck);
    json_int(j, "failed_workers", res->failed);
    json_end(j);
}

void contend_plots(struct bench *b, struct cfigures *f,
                   const struct cresults *res, const struct plot_mark *marks,
                   int nmarks)
{
    struct samples *d[3] = {&f->hand, &f->other, &f->wait};
    const char *titles[3] = {"hand-off", "hand-off to another waiter",
                             "wait (call -> acquired)"};
    char title[64];
    struct rate r;
    const struct rate *rp = &r;
    const char *rt = "critical sections/s";
    if (!b->o.plot_dir)
        return;
    snprintf(title, sizeof title, "%s: latency", b->scenario);
    plot_cdf(b, "latency", title, d, titles, 3);
    rate_init(&r, res->t_go_ns, 100000000);
    for (size_t i = 0; i < res->n; i++)
        rate_hit(&r, res->recs[i].acq_ns);
    snprintf(title, sizeof title, "%s: critical sections/s", b->scenario);
    plot_rate(b, "throughput", title, rt, &rp, &rt, 1, marks, nmarks, 0);
    rate_free(&r);
}

/* Nonzero when token b, following a, is one ex lets a restart hand out
 * again. */
static int token_reissued(const struct ctoken_exempt *ex,
                          const struct crecord *b)
{
    return ex && b->acq_ns >= ex->after_ns && b->token <= ex->max;
}

int contend_check(struct bench *b, const struct cresults *res,
                  long long counter, const struct ctoken_exempt *ex)
{
    const struct crecord *r = res->recs;
    size_t n = res->n, overlap = 0, token_bad = 0, reissued = 0;
    size_t seen_bad = 0;
    for (size_t i = 0; i < n; i++) {
        seen_bad += r[i].seen != (int64_t)i;
        if (i == 0)
            continue;
        overlap += r[i].acq_ns <= r[i - 1].rel_ns;
        if (res->no_tokens || r[i].token > r[i - 1].token)
            continue;
        if (token_reissued(ex, &r[i]))
            reissued++;
        else
            token_bad++;
    }
    int bad = (counter != (long long)n) + (overlap > 0) + (token_bad > 0) +
              (seen_bad > 0);
    printf("checks\n");
    printf("  %-40s %s (counter %lld, acquisitions %zu)\n",
           "final counter == acquisitions",
           counter == (long long)n ? "ok" : "FAIL", counter, n);
    printf("  %-40s %s (%zu overlaps)\n", "critical sections disjoint",
           overlap ? "FAIL" : "ok", overlap);
    printf("  %-40s %s (%zu out of order", "fencing tokens strictly increasing",
           token_bad ? "FAIL" : "ok", token_bad);
    if (ex)
        printf(", %zu handed out again after the restart", reissued);
    printf(")\n");
    printf("  %-40s %s (%zu mismatches)\n",
           "each section read the previous write", seen_bad ? "FAIL" : "ok",
           seen_bad);
    json_obj(b->json, "checks");
    json_int(b->json, "final_counter", counter);
    json_int(b->json, "overlaps", (int64_t)overlap);
    json_int(b->json, "tokens_out_of_order", (int64_t)token_bad);
    if (ex)
        json_int(b->json, "tokens_reissued_after_restart", (int64_t)reissued);
    json_int(b->json, "read_mismatches", (int64_t)seen_bad);
    json_int(b->json, "violations", bad);
    json_end(b->json);
    return bad;
}

uint64_t contend_errors(const struct cstats *s)
{
    uint64_t acq = 0;
    for (int c = 1; c < CONTEND_ERRS; c++)
        if (c != -HILOCK_ETIMEDOUT && c != -HILOCK_ECANCELED)
            acq += s->acq_by_code[c];
    printf("  starved acquires: %" PRIu64 " (none within %d ms); errors: "
           "acquire %" PRIu64 ", release %" PRIu64 ", section %" PRIu64
           ", locks lost %" PRIu64 ", stuck %" PRIu64 "\n",
           s->acq_by_code[-HILOCK_ETIMEDOUT], CONTEND_WAIT_MS, acq,
           s->rel_errors, s->cs_errors, s->lost, s->stuck);
    return acq + s->rel_errors + s->cs_errors + s->lost + s->stuck;
}

long long contend_counter(const struct contend_cfg *cfg)
{
    redisContext *rc = bench_connect_at(cfg->host, cfg->port, 2000);
    long long v = rc ? bench_int(rc, "GET", CONTEND_COUNTER, NULL) : -1;
    if (rc)
        redisFree(rc);
    return v;
}

/* ---- the contended scenario -------------------------------------------- */

/* The k longest hand-offs: when, how long, from which holder to which, and
 * how long the new holder had waited. */
static void print_worst(const struct cresults *res, int k)
{
    const struct crecord *r = res->recs;
    size_t *idx = malloc((size_t)k * sizeof(*idx)), m = 0;
    if (!idx || res->n < 2)
        goto out;
    for (size_t i = 1; i < res->n; i++) { /* idx sorted, longest first */
        int64_t h = r[i].acq_ns - r[i - 1].rel_ns;
        size_t j = m < (size_t)k ? m++ : (size_t)k;
        while (j > 0 && r[idx[j - 1]].acq_ns - r[idx[j - 1] - 1].rel_ns < h) {
            if (j < (size_t)k)
                idx[j] = idx[j - 1];
            j--;
        }
        if (j < (size_t)k)
            idx[j] = i;
    }
    printf("longest hand-offs\n  %10s %10s  %-9s -> %-9s %10s\n", "at",
           "hand-off", "from", "to", "its wait");
    for (size_t j = 0; j < m; j++) {
        const struct crecord *a = &r[idx[j] - 1], *c = &r[idx[j]];
        char from[16], to[16], t1[32], t2[32];
        snprintf(from, sizeof from, "%d.%d", a->proc, a->waiter);
        snprintf(to, sizeof to, "%d.%d", c->proc, c->waiter);
        printf("  %8.3f s %10s  %-9s -> %-9s %10s\n",
               (double)(c->acq_ns - r[0].acq_ns) / 1e9,
               fmt_ns(c->acq_ns - a->rel_ns, t1, sizeof t1), from, to,
               fmt_ns(c->acq_ns - c->call_ns, t2, sizeof t2));
    }
out:
    free(idx);
}

/* ---- what a perfect lock would allow ---------------------------------- */

#define SERIAL_KEY BENCH_PREFIX "contended:serial"
#define SERIAL_S 2.0 /* length of the serial ceiling's loop */

/* The serial ceiling: one blocking connection does the critical section
 * (GET, SET of a key of its own) and one more round trip (PING), back to
 * back, for secs. A perfect lock hands over in one round trip, so its
 * sections/s cannot exceed this loop's. Every PING is timed. */
struct serial {
    uint64_t loops;
    double secs;
    double per_s;
    struct samples ping;
};

/* Run the loop on host:port. 0, or -1 on a failed command. */
static int serial_run(const char *host, int port, double secs,
                      struct serial *s)
{
    redisContext *rc = bench_connect_at(host, port, 2000);
    char num[24];
    long long v = 0;
    int ok = rc != NULL;
    memset(s, 0, sizeof(*s));
    int64_t t0 = now_ns(), until = t0 + (int64_t)(secs * 1e9);
    while (ok && now_ns() < until) {
        redisReply *r = bench_cmd(rc, "GET", SERIAL_KEY, NULL);
        ok = r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL);
        if (ok && r->type == REDIS_REPLY_STRING)
            v = strtoll(r->str, NULL, 10);
        if (r)
            freeReplyObject(r);
        snprintf(num, sizeof num, "%lld", v + 1);
        r = ok ? bench_cmd(rc, "SET", SERIAL_KEY, num, NULL) : NULL;
        ok = r && r->type == REDIS_REPLY_STATUS;
        if (r)
            freeReplyObject(r);
        int64_t p0 = now_ns();
        r = ok ? bench_cmd(rc, "PING", NULL) : NULL;
        ok = r && r->type == REDIS_REPLY_STATUS;
        if (ok)
            samples_add(&s->ping, now_ns() - p0);
        if (r)
            freeReplyObject(r);
        s->loops += ok;
    }
    s->secs = (double)(now_ns() - t0) / 1e9;
    s->per_s = s->secs > 0 ? (double)s->loops / s->secs : 0;
    if (ok)
        bench_int(rc, "DEL", SERIAL_KEY, NULL);
    if (rc)
        redisFree(rc);
    return ok ? 0 : -1;
}

/* The commands hilock sends about a lock, as INFO commandstats names
 * them: script calls, the fast path (RESTORE; its HDEL and PUBLISH go in
 * MULTI/EXEC), subscriptions, and what a connection sends when it comes
 * up or waits for replicas. A command that a script or an EXEC runs is
 * counted in its own line too, and in the script's or EXEC's: those lines
 * (HDEL, PUBLISH, TIME...) are not added again; the handshake's TIME is
 * left out with them. The first two are the script calls. */
static const char *const lock_cmds[] = {
    "evalsha", "eval", "restore", "multi", "exec", "subscribe",
    "unsubscribe", "ssubscribe", "sunsubscribe", "ping", "wait",
    "script|load"};
#define NLOCK_CMDS (sizeof(lock_cmds) / sizeof(lock_cmds[0]))

/* Calls and usec of each lock command so far (INFO commandstats), and
 * the server process's CPU time (INFO cpu, s). */
struct cmdstats {
    int ok;
    long long calls[NLOCK_CMDS], usec[NLOCK_CMDS];
    double cpu_s;
};

/* The value after key in an INFO text, or 0. */
static double info_num(const char *text, const char *key)
{
    const char *p = strstr(text, key);
    return p ? strtod(p + strlen(key), NULL) : 0;
}

/* Read them all from one INFO commandstats (absent: 0). ok is 0 when the
 * command failed. */
static void cmdstats_read(redisContext *rc, struct cmdstats *st)
{
    redisReply *r = rc ? bench_cmd(rc, "INFO", "commandstats", NULL) : NULL;
    memset(st, 0, sizeof(*st));
    st->ok = r && r->type == REDIS_REPLY_STRING;
    for (size_t i = 0; st->ok && i < NLOCK_CMDS; i++) {
        char needle[64];
        snprintf(needle, sizeof needle, "cmdstat_%s:calls=", lock_cmds[i]);
        const char *p = strstr(r->str, needle);
        const char *u = p ? strstr(p, ",usec=") : NULL;
        st->calls[i] = p ? strtoll(p + strlen(needle), NULL, 10) : 0;
        st->usec[i] = u ? strtoll(u + 6, NULL, 10) : 0;
    }
    if (r)
        freeReplyObject(r);
    r = st->ok ? bench_cmd(rc, "INFO", "cpu", NULL) : NULL;
    st->ok = r && r->type == REDIS_REPLY_STRING;
    if (st->ok)
        st->cpu_s = info_num(r->str, "used_cpu_user:") +
                    info_num(r->str, "used_cpu_sys:");
    if (r)
        freeReplyObject(r);
}

/* The measured window: lock commands counted from t0 to t1 (taken by the
 * parent while the workers run). */
struct cwindow {
    const struct contend_cfg *cfg;
    int64_t t0, t1;
    struct cmdstats s0, s1;
};

static void contended_during(struct bench *b, int64_t t_go, int64_t t_end,
                             void *arg)
{
    struct cwindow *w = arg;
    redisContext *rc = bench_connect_at(w->cfg->host, w->cfg->port, 2000);
    w->t0 = now_ns();
    cmdstats_read(rc, &w->s0);
    contend_progress(b, w->cfg, t_go, t_end);
    w->t1 = now_ns();
    cmdstats_read(rc, &w->s1);
    if (rc)
        redisFree(rc);
}

/* Script calls (EVALSHA and EVAL) in the window, and their usec; both -1
 * when INFO failed. */
static long long window_scripts(const struct cwindow *w, long long *usec)
{
    if (!w->s0.ok || !w->s1.ok) {
        *usec = -1;
        return -1;
    }
    *usec = 0;
    long long calls = 0;
    for (int i = 0; i < 2; i++) {
        calls += w->s1.calls[i] - w->s0.calls[i];
        *usec += w->s1.usec[i] - w->s0.usec[i];
    }
    return calls;
}

/* usec of every lock command in the window, or -1. */
static long long window_lock_usec(const struct cwindow *w)
{
    long long usec = 0;
    if (!w->s0.ok || !w->s1.ok)
        return -1;
    for (size_t i = 0; i < NLOCK_CMDS; i++)
        usec += w->s1.usec[i] - w->s0.usec[i];
    return usec;
}

/* Print the lock commands of the window with their share per CS, and the
 * server's CPU time per CS: the time a script waited for the CPU while
 * other processes ran counts in commandstats, not here (here the
 * sections' commands and the network count too). */
static void window_print(const struct cwindow *w, size_t cs)
{
    if (!w->s0.ok || !w->s1.ok || cs == 0)
        return;
    printf("Redis process CPU per critical section (INFO cpu, every "
           "command and the network included): %.2f us\n",
           (w->s1.cpu_s - w->s0.cpu_s) * 1e6 / (double)cs);
    printf("lock commands in the window (INFO commandstats), per critical "
           "section:\n");
    for (size_t i = 0; i < NLOCK_CMDS; i++) {
        long long n = w->s1.calls[i] - w->s0.calls[i];
        long long us = w->s1.usec[i] - w->s0.usec[i];
        if (n > 0)
            printf("  %-12s %7.3f calls  %7.2f us  (%.2f us per call)\n",
                   lock_cmds[i], (double)n / (double)cs,
                   (double)us / (double)cs, (double)us / (double)n);
    }
}

/* Acquisitions within [t0, t1]. */
static size_t acquired_within(const struct cresults *res, int64_t t0,
                              int64_t t1)
{
    size_t n = 0;
    for (size_t i = 0; i < res->n; i++)
        n += res->recs[i].acq_ns >= t0 && res->recs[i].acq_ns <= t1;
    return n;
}

/* Waiters with no acquisition. */
static int waiters_unserved(const struct cresults *res, int waiters)
{
    char *seen = calloc((size_t)waiters, 1);
    int none = 0;
    if (!seen)
        return -1;
    for (size_t i = 0; i < res->n; i++)
        if (res->recs[i].waiter >= 0 && res->recs[i].waiter < waiters)
            seen[res->recs[i].waiter] = 1;
    for (int i = 0; i < waiters; i++)
        none += !seen[i];
    free(seen);
    return none;
}

/* The figures against a perfect lock and the targets (set for
 * 4 processes x 25 waiters in fair mode; printed for every run). Returns
 * the targets missed. */
static int ceiling_print(struct bench *b, struct cfigures *f,
                         const struct cresults *res,
                         const struct contend_cfg *cfg, struct serial *sr,
                         const struct cwindow *w)
{
    struct table t;
    char v[96], a[32], c[32];
    int missed = 0, met;
    int64_t ping = samples_pct(&sr->ping, 50);
    int64_t hand = samples_pct(&f->other, 50);
    int64_t wait99 = samples_pct(&f->wait, 99);
    size_t cs = acquired_within(res, w->t0, w->t1);
    long long script_us, lock_us = window_lock_usec(w);
    long long calls = window_scripts(w, &script_us);
    double us_call = calls > 0 ? (double)script_us / (double)calls : -1;
    double us_cs = cs && lock_us >= 0 ? (double)lock_us / (double)cs : -1;
    /* In fair mode every waiter still queued when the run stopped made its
     * acquire call and, canceled, a leave call, for no section: those are
     * the stop's, not the sections'. */
    long long stop_calls =
        cfg->fair ? 2 * (long long)res->sum.stop_canceled : 0;
    if (calls >= stop_calls)
        calls -= stop_calls;
    double cs_ratio = sr->per_s > 0 ? f->cs_per_s / sr->per_s : 0;
    double hand_ratio = ping > 0 ? (double)hand / (double)ping : 0;
    double per_cs = cs && calls >= 0 ? (double)calls / (double)cs : -1;
    int none = waiters_unserved(res, cfg->waiters);
    double spread = f->per_min > 0 && f->served
                        ? (double)f->per_max / (double)f->per_min
                        : -1;
    printf("against a perfect lock (serial GET + SET + PING on one "
           "connection, %.0f s before the workers)\n", SERIAL_S);
    table_init(&t, "figure", "value", "target", "", NULL);
    snprintf(v, sizeof v, "%s CS/s (%" PRIu64 " loops)",
             fmt_count(sr->per_s, a, sizeof a), sr->loops);
    figure_row(&t, "serial ceiling", v, NULL, 0);
    snprintf(v, sizeof v, "%.3f (%s / %s)", cs_ratio,
             fmt_count(f->cs_per_s, a, sizeof a),
             fmt_count(sr->per_s, c, sizeof c));
    met = cs_ratio >= 0.6;
    figure_row(&t, "critical sections/s / ceiling", v, ">= 0.6", met);
    missed += !met;
    figure_row(&t, "PING p50", fmt_ns(ping, a, sizeof a), NULL, 0);
    snprintf(v, sizeof v, "%.2f (%s / %s)", hand_ratio,
             fmt_ns(hand, a, sizeof a), fmt_ns(ping, c, sizeof c));
    met = ping > 0 && hand_ratio <= 1.5;
    figure_row(&t, "hand-off to other waiter p50 / PING p50", v, "<= 1.5",
               met);
    missed += !met;
    met = wait99 <= 50000000;
    figure_row(&t, "wait p99", fmt_ns(wait99, a, sizeof a), "<= 50 ms", met);
    missed += !met;
    if (per_cs >= 0)
        snprintf(v, sizeof v, "%.3f (%lld calls / %zu CS; %lld at the stop "
                 "not counted)", per_cs, calls, cs, stop_calls);
    else
        snprintf(v, sizeof v, "unknown (INFO commandstats failed)");
    met = per_cs >= 0 && per_cs <= 2.0;
    figure_row(&t, "lock script calls per CS", v, "<= 2", met);
    missed += !met;
    if (calls > 0 || per_cs < 0) {
        snprintf(v, sizeof v, "%.2f", us_call);
        met = us_call >= 0 && us_call <= 8.0;
        figure_row(&t, "Redis us per script call", v, "<= 8", met);
        missed += !met;
    } else { /* the plain path only: nothing to judge */
        figure_row(&t, "Redis us per script call", "none ran", NULL, 0);
    }
    snprintf(v, sizeof v, "%.2f (every lock command)", us_cs);
    met = us_cs >= 0 && us_cs <= (cfg->fair ? 15.0 : 30.0);
    figure_row(&t, "Redis us per CS", v, cfg->fair ? "<= 15" : "<= 30", met);
    missed += !met;
    if (spread > 0)
        snprintf(v, sizeof v, "%.2f (%zu..%zu per waiter)", spread,
                 f->per_min, f->per_max);
    else
        snprintf(v, sizeof v, "inf (%zu..%zu per waiter, %d of %d got none)",
                 f->served ? f->per_min : 0, f->per_max, none, cfg->waiters);
    met = spread > 0 && spread <= 1.5;
    figure_row(&t, "acquisitions per waiter max / min", v, "<= 1.5", met);
    missed += !met;
    table_print(&t, stdout);
    window_print(w, cs);
    json_obj(b->json, "perfect_lock");
    json_num(b->json, "serial_seconds", sr->secs);
    json_int(b->json, "serial_loops", (int64_t)sr->loops);
    json_num(b->json, "serial_ceiling_per_s", sr->per_s);
    json_num(b->json, "cs_per_s_over_ceiling", cs_ratio);
    json_latency(b->json, "ping", &sr->ping);
    json_num(b->json, "handoff_other_p50_over_ping_p50", hand_ratio);
    json_int(b->json, "script_calls", calls);
    json_int(b->json, "script_calls_window_cs", (int64_t)cs);
    json_num(b->json, "script_calls_per_cs", per_cs);
    json_num(b->json, "redis_usec_per_script_call", us_call);
    json_num(b->json, "redis_usec_per_cs", us_cs);
    json_num(b->json, "redis_cpu_usec_per_cs",
             w->s0.ok && w->s1.ok && cs
                 ? (w->s1.cpu_s - w->s0.cpu_s) * 1e6 / (double)cs
                 : -1);
    json_int(b->json, "acquisitions_per_waiter_min", (int64_t)f->per_min);
    json_int(b->json, "acquisitions_per_waiter_max", (int64_t)f->per_max);
    json_int(b->json, "waiters_never_served", none);
    json_int(b->json, "targets_missed", missed);
    json_end(b->json);
    return missed;
}

int sc_contended(struct bench *b)
{
    struct contend_cfg cfg;
    struct cresults res;
    struct cfigures f;
    struct serial sr;
    struct cwindow win;
    contend_cfg_init(&cfg, b, b->o.seconds > 0 ? b->o.seconds : 10, 5000);
    cfg.fair = b->o.fair;
    cfg.no_fencing = b->o.no_fencing;
    printf("contended: %d processes, %d waiters, %.0f s, lock \"%s\" on "
           "%s:%d, %s mode%s\n",
           cfg.procs, cfg.waiters, cfg.seconds, CONTEND_LOCK, b->host,
           b->port, cfg.fair ? "fair" : "default",
           cfg.no_fencing ? ", no fencing" : "");
    if (serial_run(cfg.host, cfg.port, SERIAL_S, &sr) != 0) {
        fprintf(stderr, "contended: the serial ceiling loop failed\n");
        samples_free(&sr.ping);
        return 1;
    }
    memset(&win, 0, sizeof win);
    win.cfg = &cfg;
    if (contend_run(b, &cfg, &res, contended_during, &win) != 0) {
        fprintf(stderr, "contended: the workers could not be started\n");
        samples_free(&sr.ping);
        return 1;
    }
    contend_figures(&res, cfg.waiters, &f);
    int missed = contend_print(&f, &res, &cfg);
    missed += ceiling_print(b, &f, &res, &cfg, &sr, &win);
    samples_free(&sr.ping);
    uint64_t errors = contend_errors(&res.sum);
    if (b->o.worst > 0)
        print_worst(&res, b->o.worst);
    int bad = contend_check(b, &res, contend_counter(&cfg), NULL);
    if (res.failed)
        printf("  %d worker(s) failed or overran\n", res.failed);
    json_int(b->json, "procs", cfg.procs);
    json_int(b->json, "waiters", cfg.waiters);
    json_num(b->json, "seconds", cfg.seconds);
    json_bool(b->json, "fair", cfg.fair);
    json_bool(b->json, "fencing", !cfg.no_fencing);
    contend_json(b, &f, &res);
    contend_plots(b, &f, &res, NULL, 0);
    int fail = bad || errors || res.failed || res.n == 0;
    if (fail)
        printf("result: FAIL\n");
    else if (missed)
        printf("result: ok, %d target(s) missed\n", missed);
    else
        printf("result: ok\n");
    contend_figures_free(&f);
    free(res.recs);
    return fail ? 1 : 0;
}
