/* SPDX-License-Identifier: BSD-3-Clause */
/* holders.c -- see holders.h: the workers that take, hold and give back a
 * read-write lock's sides, a mutex or a semaphore's permits, and the checks
 * on what they recorded. */
#include "holders.h"

#include <event2/event.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <hilock/hilock.h>


/* ---- worker ------------------------------------------------------------ */

/* A callback name of handle type type that passes its call on to fn, a
 * callback of another handle type that reads no handle: the semaphores'
 * callbacks are the lock's, or the counting semaphore's. */
#define FORWARD_CB(name, type, fn)                                         \
    static void name(struct type *h, int status,                           \
                     const struct hilock_result *res, void *arg)           \
    {                                                                      \
        (void)h;                                                           \
        fn(NULL, status, res, arg);                                        \
    }

struct hproc;

struct holder {
    struct hproc *p;
    struct hilock_lock *lock;        /* a mutex or a read-write side, */
    struct hilock_permit *permit;    /* or an expiring permit, */
    struct hilock_semaphore *sem;    /* or a counting semaphore */
    struct event *timer;  /* the end of the section, or of the pause */
    int in_section;       /* what the timer ends */
    struct hold_rec cur;
};

struct hproc {
    const struct hold_cfg *cfg;
    const struct hold_group *g;
    int group;
    struct event_base *base;
    struct hilock_client *client;
    struct holder *h;
    int nh, first_id;     /* its handles and the first one's global id */
    int active, stopping, closing, init_done;
    struct hold_rec *recs;
    size_t n, cap;
    struct hold_stats st;
};

static void holder_next(struct holder *h);

static void holder_idle(struct holder *h)
{
    if (--h->p->active == 0)
        event_base_loopexit(h->p->base, NULL);
}

static void arm(struct holder *h, int us, int in_section)
{
    struct timeval tv = {us / 1000000, us % 1000000};
    h->in_section = in_section;
    if (evtimer_add(h->timer, &tv) != 0) {
        h->p->st.errors++;
        holder_idle(h);
    }
}

static void on_released(struct hilock_lock *lock, int status,
                        const struct hilock_result *res, void *arg)
{
    struct holder *h = arg;
    h->p->st.rel_fired++;
    if (h->p->closing)
        return;
    if (status != 0)
        h->p->st.errors++;
    if (h->p->g->pause_us > 0)
        arm(h, h->p->g->pause_us, 0);
    else
        holder_next(h);
}

/* The semaphores' callbacks: as the lock's. */
FORWARD_CB(on_sem_released, hilock_semaphore, on_released)

FORWARD_CB(on_permit_released, hilock_permit, on_released)

/* Keep the section's record; records that find no memory count as
 * errors. */
static void keep(struct hproc *p, const struct hold_rec *r)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 4096;
        struct hold_rec *more = realloc(p->recs, cap * sizeof(*more));
        if (more) {
            p->recs = more;
            p->cap = cap;
        }
    }
    if (p->n < p->cap)
        p->recs[p->n++] = *r;
    else
        p->st.errors++;
}

/* The section is over: record it and give the lock or permit back. */
static void section_end(struct holder *h)
{
    struct hproc *p = h->p;
    int rc;
    h->cur.rel_ns = now_ns();
    keep(p, &h->cur);
    if (h->sem)
        rc = hilock_semaphore_release(h->sem, 1, on_sem_released, h);
    else if (h->permit)
        rc = hilock_permit_release(h->permit, on_permit_released, h);
    else
        rc = hilock_lock_release(h->lock, on_released, h);
    if (rc == 0) {
        p->st.rel_issued++;
    } else {
        p->st.errors++;
        holder_idle(h);
    }
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct holder *h = arg;
    if (h->in_section)
        section_end(h);
    else
        holder_next(h);
}

static void on_acquired(struct hilock_lock *lock, int status,
                        const struct hilock_result *res, void *arg)
{
    struct holder *h = arg;
    struct hproc *p = h->p;
    p->st.acq_fired++;
    if (p->closing)
        return;
    if (status == 0) {
        h->cur.acq_ns = now_ns();
        arm(h, p->g->hold_us, 1);
    } else if (status == HILOCK_ETIMEDOUT) {
        p->st.timeouts++;
        holder_next(h);
    } else {
        p->st.errors++;  /* not tried again: it would spin */
        holder_idle(h);
    }
}

FORWARD_CB(on_sem_acquired, hilock_semaphore, on_acquired)

FORWARD_CB(on_permit_acquired, hilock_permit, on_acquired)

/* Acquire again, or stop once the time is up. */
static void holder_next(struct holder *h)
{
    struct hproc *p = h->p;
    int rc;
    if (p->stopping) {
        holder_idle(h);
        return;
    }
    h->cur.call_ns = now_ns();
    if (h->sem)
        rc = hilock_semaphore_acquire(h->sem, 1, HOLD_WAIT_MS,
                                      on_sem_acquired, h);
    else if (h->permit)
        rc = hilock_permit_acquire(h->permit, HOLD_WAIT_MS, 0,
                                   on_permit_acquired, h);
    else
        rc = hilock_lock_acquire(h->lock, HOLD_WAIT_MS, 0, on_acquired, h);
    if (rc == 0) {
        p->st.acq_issued++;
    } else {
        p->st.errors++;
        holder_idle(h);
    }
}

static void on_lost(struct hilock_lock *lock, int status,
                    const struct hilock_result *res, void *arg)
{
    struct holder *h = arg;
    h->p->st.lost++;
}

FORWARD_CB(on_permit_lost, hilock_permit, on_lost)

/* A handle of the group's kind on the name, owner tag id + 1, told of its
 * loss (a counting semaphore's permits are never lost). */
static int handle_new(struct hproc *p, int id, struct holder *h)
{
    int rc;
    struct hilock_lock **out = &h->lock;
    const char *name = p->cfg->name;
    size_t len = strlen(name);
    switch (p->g->kind) {
    case HOLD_READ:
    case HOLD_WRITE:
        rc = hilock_rwlock_new(p->client, name, len, (uint64_t)id + 1,
                               p->g->kind == HOLD_READ ? HILOCK_READ
                                                       : HILOCK_WRITE,
                               out);
        return rc ? rc : hilock_lock_on_lost(h->lock, on_lost, h);
    case HOLD_PERMIT:
        rc = hilock_permit_new(p->client, name, len, &h->permit);
        return rc ? rc : hilock_permit_on_lost(h->permit, on_permit_lost, h);
    case HOLD_SEM:
        return hilock_semaphore_new(p->client, name, len, &h->sem);
    default:
        rc = hilock_lock_new(p->client, name, len, (uint64_t)id + 1, out);
        return rc ? rc : hilock_lock_on_lost(h->lock, on_lost, h);
    }
}

static void on_init(struct hilock_semaphore *sem, int status,
                    const struct hilock_result *res, void *arg)
{
    struct hproc *p = arg;
    p->init_done = status == 0 ? 1 : -1;
    event_base_loopexit(p->base, NULL);
}

FORWARD_CB(on_permit_init, hilock_permit, on_init)

/* Set the semaphore's permits if none are (the first worker to ask does
 * it): runs the loop until the answer, 5 s at most. 0 or -1. */
static int semaphore_init(struct hproc *p)
{
    struct timeval bound = {5, 0};
    if (!p->cfg->permits)
        return 0;
    if (hilock_semaphore_try_set_permits(p->h[0].sem, p->cfg->permits,
                                         on_init, p) != 0 &&
        hilock_permit_try_set_permits(p->h[0].permit, p->cfg->permits,
                                      on_permit_init, p) != 0)
        return -1;
    event_base_loopexit(p->base, &bound);
    event_base_dispatch(p->base);
    return p->init_done == 1 ? 0 : -1;
}

/* Worker index's group, loop, client and handles. 0 or -1. */
static int hproc_setup(struct hproc *p, const struct hold_cfg *cfg,
                       int index)
{
    struct hilock_options ho;
    int first = 0;
    memset(p, 0, sizeof(*p));
    p->cfg = cfg;
    while (index >= cfg->g[p->group].procs) {
        index -= cfg->g[p->group].procs;
        first += cfg->g[p->group++].handles;
    }
    p->g = &cfg->g[p->group];
    int each = p->g->handles / p->g->procs, extra = p->g->handles % p->g->procs;
    p->nh = each + (index < extra);
    p->first_id = first + index * each + (index < extra ? index : extra);
    hilock_options_init(&ho);
    ho.node.host = cfg->host;
    ho.node.port = cfg->port;
    if (!(p->base = event_base_new()) ||
        hilock_client_new(p->base, &ho, &p->client) != 0 ||
        !(p->h = calloc((size_t)p->nh, sizeof(*p->h))))
        return -1;
    for (int i = 0; i < p->nh; i++) {
        struct holder *h = &p->h[i];
        h->p = p;
        h->cur.handle = p->first_id + i;
        h->cur.group = p->group;
        if (handle_new(p, p->first_id + i, h) != 0 ||
            !(h->timer = evtimer_new(p->base, on_timer, h)))
            return -1;
    }
    return semaphore_init(p);
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    struct hproc *p = arg;
    p->stopping = 1;  /* handles finish the section they are in */
}

static void on_hard(evutil_socket_t fd, short what, void *arg)
{
    struct hproc *p = arg;
    p->st.stuck = (uint64_t)p->active;
    event_base_loopbreak(p->base);
}

/* Run every handle until the time is up and the last section is over. */
static void hproc_run(struct hproc *p)
{
    double s = p->cfg->seconds;
    struct timeval stop = {(time_t)s, (suseconds_t)((s - (int)s) * 1e6)};
    struct timeval hard = {(time_t)s + 15, 0};
    struct event *ev_stop = evtimer_new(p->base, on_stop, p);
    struct event *ev_hard = evtimer_new(p->base, on_hard, p);
    evtimer_add(ev_stop, &stop);
    evtimer_add(ev_hard, &hard);
    p->active = p->nh;
    for (int i = 0; i < p->nh; i++)
        holder_next(&p->h[i]);
    if (p->active > 0)
        event_base_dispatch(p->base);
    event_free(ev_stop);
    event_free(ev_hard);
}

/* Free the client (its pending callbacks fire, and are counted, now), the
 * timers and the loop. */
static void hproc_close(struct hproc *p)
{
    p->closing = 1;
    hilock_client_free(p->client);
    for (int i = 0; p->h && i < p->nh; i++)
        if (p->h[i].timer)
            event_free(p->h[i].timer);
    free(p->h);
    if (p->base)
        event_base_free(p->base);
}

static int hworker(int index, int fd, FILE *out, void *arg)
{
    const struct hold_cfg *cfg = arg;
    struct hproc p;
    if (fan_ready(fd, hproc_setup(&p, cfg, index) == 0, 60000) != 0)
        return 1;
    hproc_run(&p);
    hproc_close(&p);
    p.st.records = p.n;
    if (fan_write(out, &p.st, sizeof p.st) != 0 ||
        fan_write(out, p.recs, p.n * sizeof(*p.recs)) != 0)
        return 1;
    return p.st.stuck ? 1 : 0;
}

/* ---- parent ------------------------------------------------------------ */

static int collect(FILE *f, struct hold_results *res)
{
    struct hold_stats st;
    rewind(f);
    if (fan_read(f, &st, sizeof st) != 0)
        return -1;
    struct hold_rec *r =
        realloc(res->recs, (res->n + st.records + 1) * sizeof(*r));
    if (!r)
        return -1;
    res->recs = r;
    if (fan_read(f, r + res->n, st.records * sizeof(*r)) != 0)
        return -1;
    res->n += st.records;
    res->sum.records += st.records;
    res->sum.acq_issued += st.acq_issued;
    res->sum.acq_fired += st.acq_fired;
    res->sum.rel_issued += st.rel_issued;
    res->sum.rel_fired += st.rel_fired;
    res->sum.timeouts += st.timeouts;
    res->sum.errors += st.errors;
    res->sum.lost += st.lost;
    res->sum.stuck += st.stuck;
    return 0;
}

static int cmp_acq(const void *x, const void *y)
{
    const struct hold_rec *a = x, *b = y;
    return (a->acq_ns > b->acq_ns) - (a->acq_ns < b->acq_ns);
}

int holders_run(struct bench *b, const struct hold_cfg *cfg,
                struct hold_results *res)
{
    struct fanout f;
    int procs = 0;
    redisContext *rc = bench_connect(b, 2000);
    int ok = rc && bench_reset(b, rc, NULL) == 0;
    if (rc)
        redisFree(rc);
    for (int i = 0; i < cfg->ngroups; i++)
        procs += cfg->g[i].procs;
    memset(res, 0, sizeof(*res));
    if (!ok || fan_spawn(&f, procs, hworker, (void *)cfg) != 0)
        return -1;
    if (fan_all_ready(&f, 30000) != 0)
        return -1;
    res->t_go_ns = now_ns();
    fan_broadcast(&f, FAN_GO);
    int64_t deadline = res->t_go_ns + (int64_t)((cfg->seconds + 25) * 1e9);
    while (fan_poll(&f) > 0 && now_ns() < deadline) {
        progress_show(b, "%.1f s", (double)(now_ns() - res->t_go_ns) / 1e9);
        sleep_ms(100);
    }
    progress_end(b);
    res->failed = fan_reap(&f, deadline);
    for (int i = 0; i < f.n; i++)
        if (collect(f.c[i].out, res) != 0)
            res->failed++;
    fan_free(&f);
    qsort(res->recs, res->n, sizeof(*res->recs), cmp_acq);
    return 0;
}

/* ---- checks and figures ------------------------------------------------ */

static int exclusive(enum hold_kind k)
{
    return k == HOLD_MUTEX || k == HOLD_WRITE;
}

/* Exclusive sections that overlap another section, in records sorted by
 * acq_ns: one that starts before an earlier section ended, or any that
 * starts before an earlier exclusive one ended. */
static size_t overlaps(const struct hold_cfg *cfg,
                       const struct hold_results *res)
{
    int64_t end_any = INT64_MIN, end_excl = INT64_MIN;
    size_t n = 0;
    for (size_t i = 0; i < res->n; i++) {
        const struct hold_rec *r = &res->recs[i];
        int excl = exclusive(cfg->g[r->group].kind);
        n += (excl && r->acq_ns < end_any) || r->acq_ns < end_excl;
        end_any = r->rel_ns > end_any ? r->rel_ns : end_any;
        if (excl && r->rel_ns > end_excl)
            end_excl = r->rel_ns;
    }
    return n;
}

/* A section's start (+1) or end (-1) at t_ns. */
struct edge {
    int64_t t_ns;
    int step;
};

static int cmp_edge(const void *x, const void *y)
{
    const struct edge *a = x, *b = y;
    if (a->t_ns != b->t_ns)
        return (a->t_ns > b->t_ns) - (a->t_ns < b->t_ns);
    return a->step - b->step;  /* an end before a start at the same ns */
}

/* The most sections open at one moment. */
static size_t most_at_once(const struct hold_results *res)
{
    struct edge *e = malloc((2 * res->n + 1) * sizeof(*e));
    size_t most = 0;
    long open = 0;
    if (!e)
        return SIZE_MAX;
    for (size_t i = 0; i < res->n; i++) {
        e[2 * i] = (struct edge){res->recs[i].acq_ns, 1};
        e[2 * i + 1] = (struct edge){res->recs[i].rel_ns, -1};
    }
    qsort(e, 2 * res->n, sizeof(*e), cmp_edge);
    for (size_t i = 0; i < 2 * res->n; i++) {
        open += e[i].step;
        most = (size_t)open > most ? (size_t)open : most;
    }
    free(e);
    return most;
}

/* Sections per handle of group g: the fewest and the most. */
static void served(const struct hold_cfg *cfg, const struct hold_results *res,
                   int g, size_t *min, size_t *max)
{
    int first = 0;
    for (int i = 0; i < g; i++)
        first += cfg->g[i].handles;
    size_t *count = calloc((size_t)cfg->g[g].handles, sizeof(*count));
    *min = *max = 0;
    if (!count)
        return;
    for (size_t i = 0; i < res->n; i++)
        if (res->recs[i].group == g)
            count[res->recs[i].handle - first]++;
    *min = SIZE_MAX;
    for (int i = 0; i < cfg->g[g].handles; i++) {
        *min = count[i] < *min ? count[i] : *min;
        *max = count[i] > *max ? count[i] : *max;
    }
    free(count);
}

void holders_figures(const struct hold_cfg *cfg, struct hold_results *res,
                     struct hold_figures *f)
{
    int64_t last = res->t_go_ns;
    memset(f, 0, sizeof(*f));
    f->overlaps = overlaps(cfg, res);
    f->most_at_once = most_at_once(res);
    for (size_t i = 0; i < res->n; i++) {
        const struct hold_rec *r = &res->recs[i];
        f->g[r->group].sections++;
        samples_add(&f->g[r->group].wait, r->acq_ns - r->call_ns);
        last = r->rel_ns > last ? r->rel_ns : last;
    }
    double span_s = (double)(last - res->t_go_ns) / 1e9;
    for (int g = 0; g < cfg->ngroups; g++) {
        f->g[g].per_s = span_s > 0 ? (double)f->g[g].sections / span_s : 0;
        served(cfg, res, g, &f->g[g].served_min, &f->g[g].served_max);
    }
}

void holders_figures_free(struct hold_figures *f)
{
    for (int g = 0; g < HOLD_GROUPS; g++)
        samples_free(&f->g[g].wait);
}

int holders_check_rows(struct table *t, const struct hold_results *res)
{
    const struct hold_stats *s = &res->sum;
    char v[96];
    int acq = s->acq_issued == s->acq_fired, rel = s->rel_issued == s->rel_fired;
    int clean = s->errors == 0 && s->lost == 0 && s->stuck == 0 &&
                res->failed == 0;
    snprintf(v, sizeof v, "%" PRIu64 "/%" PRIu64 ", %" PRIu64 "/%" PRIu64,
             s->acq_fired, s->acq_issued, s->rel_fired, s->rel_issued);
    figure_row(t, "callbacks fired/issued (acquire, release)", v, "equal",
               acq && rel);
    snprintf(v, sizeof v, "errors %" PRIu64 ", lost %" PRIu64 ", stuck %"
             PRIu64 ", workers failed %d", s->errors, s->lost, s->stuck,
             res->failed);
    figure_row(t, "problems", v, "0", clean);
    snprintf(v, sizeof v, "%" PRIu64, s->timeouts);
    figure_row(t, "acquires timed out (10 s)", v, NULL, 0);
    return !(acq && rel) + !clean;
}

const char *holders_p50_p99(struct samples *s, char *buf, size_t len)
{
    char a[32], c[32];
    snprintf(buf, len, "%s / %s", fmt_ns(samples_pct(s, 50), a, sizeof a),
             fmt_ns(samples_pct(s, 99), c, sizeof c));
    return buf;
}

void holders_json(struct json *j, const char *key, const struct hold_cfg *cfg,
                  const struct hold_results *res, struct hold_figures *f)
{
    static const char *const kinds[] = {"mutex", "read", "write", "permit",
                                        "semaphore"};
    json_obj(j, key);
    json_int(j, "overlaps", (int64_t)f->overlaps);
    json_int(j, "most_at_once", (int64_t)f->most_at_once);
    json_int(j, "errors", (int64_t)res->sum.errors);
    json_int(j, "timeouts", (int64_t)res->sum.timeouts);
    json_int(j, "lost", (int64_t)res->sum.lost);
    json_arr(j, "groups");
    for (int g = 0; g < cfg->ngroups; g++) {
        json_obj(j, NULL);
        json_str(j, "kind", kinds[cfg->g[g].kind]);
        json_int(j, "handles", cfg->g[g].handles);
        json_int(j, "sections", (int64_t)f->g[g].sections);
        json_num(j, "sections_per_s", f->g[g].per_s);
        json_int(j, "served_min", (int64_t)f->g[g].served_min);
        json_int(j, "served_max", (int64_t)f->g[g].served_max);
        json_latency(j, "wait", &f->g[g].wait);
        json_end(j);
    }
    json_end(j);
    json_end(j);
}
