/* SPDX-License-Identifier: BSD-3-Clause */
/* torture_worker.c -- see torture.h: one worker process of "torture", its
 * waiters of every client kind, their critical sections, and the watch for
 * waiters that stop making progress. */
#include "torture.h"

#include <event2/event.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <hilock/hilock.h>

#define RETRY_MS 10      /* pause before retrying after an error */
#define SETTLE_MS 300    /* loop time after the last waiter went idle */
#define TICK_MS 250      /* hang check; progress every fourth tick */
#define HARD_GRACE_S 20  /* hard stop after the drain */
#define READY_TIMEOUT_MS 30000

enum tstate { S_IDLE = 0, S_WAITING, S_SECTION, S_RELEASING, S_RETRY };

struct tproc;

struct twaiter {
    struct tproc *p;
    enum tkind kind;
    int id;                    /* global */
    enum tstate state;
    int64_t since_ns;          /* last progress */
    int hung;                  /* counted for this stretch already */
    uint64_t rng;
    struct hilock_lock **h;    /* one handle per name, made when first used */
    int cur;                   /* the name of the acquisition under way */
    int64_t lost_ns;           /* on_lost of that acquisition; 0: none */
    struct trec r;
};

struct tproc {
    int index, fd;
    const struct torture_cfg *cfg;
    struct event_base *base;
    struct hilock_client *client[TK_N];
    struct kv *kv;
    struct twaiter *ws;
    int nws;
    int active;   /* waiters not idle */
    int stopping;
    int closing;  /* tearing down: callbacks only return */
    long acquired;
    unsigned ticks;
    struct event *ev_stop, *ev_tick, *ev_drain, *ev_hard;
    struct trec *recs;
    size_t nrecs, caprecs;
    struct tstats st;
};

static void waiter_acquire(struct twaiter *w);
static void proc_stop(struct tproc *p);

static const char *const state_names[] = {"idle", "waiting", "section",
                                          "releasing", "retry"};
static const char *const kind_names[TK_N] = {"default", "fair",
                                             "fixed-lease", "scripts-only"};

const char *torture_state_name(int state)
{
    return state >= 0 && state <= S_RETRY ? state_names[state] : "?";
}

const char *torture_kind_name(int kind)
{
    return kind >= 0 && kind < TK_N ? kind_names[kind] : "?";
}

static struct tkstats *kst(struct twaiter *w)
{
    return &w->p->st.k[w->kind];
}

static int code_slot(int status)
{
    return -status >= 0 && -status < TORTURE_ERRS - 1 ? -status
                                                      : TORTURE_ERRS - 1;
}

/* The waiter moves to state s: that is progress. */
static void waiter_state(struct twaiter *w, enum tstate s)
{
    w->state = s;
    w->since_ns = now_ns();
    w->hung = 0;
}

/* A waiter went idle; once all have after the stop, settle and leave. */
static void waiter_idle(struct twaiter *w)
{
    struct tproc *p = w->p;
    waiter_state(w, S_IDLE);
    if (--p->active == 0 && p->stopping) {
        struct timeval tv = {0, SETTLE_MS * 1000};
        event_base_loopexit(p->base, &tv);
    }
}

/* Acquire again, or go idle once stopping. */
static void waiter_next(struct twaiter *w)
{
    if (w->p->stopping)
        waiter_idle(w);
    else
        waiter_acquire(w);
}

/* Keep the record; one that finds no memory counts as a failed GET (the
 * run then fails its checks loudly rather than silently). */
static void keep(struct tproc *p, const struct trec *r)
{
    if (p->nrecs == p->caprecs) {
        size_t cap = p->caprecs ? p->caprecs * 2 : 8192;
        struct trec *more = realloc(p->recs, cap * sizeof(*more));
        if (!more) {
            p->st.k[r->kind].get_failed++;
            return;
        }
        p->recs = more;
        p->caprecs = cap;
    }
    p->recs[p->nrecs++] = *r;
}

static void on_released(struct hilock_lock *lock, int status,
                        const struct hilock_result *res, void *arg)
{
    struct twaiter *w = arg;
    (void)lock;
    kst(w)->rel_fired++;
    if (w->p->closing)
        return;
    kst(w)->rel_by_code[code_slot(status)]++;
    kst(w)->rel_left += status == 0 && res->holds != 0; /* one hold at a time */
    waiter_next(w);
}

/* The section is over: record it (its interval ends at on_lost if that
 * came first) and release. */
static void waiter_release(struct twaiter *w)
{
    int64_t now = now_ns();
    w->r.end_ns = w->lost_ns && w->lost_ns < now ? w->lost_ns : now;
    if (w->lost_ns)
        w->r.flags |= TR_LOST;
    keep(w->p, &w->r);
    waiter_state(w, S_RELEASING);
    if (hilock_lock_release(w->h[w->cur], on_released, w) != 0) {
        kst(w)->call_errors++;
        waiter_idle(w);
        return;
    }
    kst(w)->rel_issued++;
}

static void on_set(redisAsyncContext *ac, void *reply, void *arg)
{
    struct twaiter *w = arg;
    const redisReply *r = reply;
    (void)ac;
    if (w->p->closing)
        return;
    if (!r) {
        w->r.flags |= TW_UNKNOWN; /* the connection went: maybe applied */
        kst(w)->set_unknown++;
    } else if (r->type == REDIS_REPLY_STATUS) {
        w->r.flags |= TW_ACKED;
        if (w->lost_ns) {
            w->r.flags |= TR_LATE;
            kst(w)->set_late++;
        }
    } else {
        w->r.flags |= TW_REFUSED;
        kst(w)->set_refused++;
    }
    waiter_release(w);
}

/* Write the counter read + 1, unless the lock was reported lost. */
static void section_write(struct twaiter *w)
{
    char key[64], num[24];
    if (w->lost_ns) {
        w->r.flags |= TR_SKIPPED;
        kst(w)->skipped++;
        waiter_release(w);
        return;
    }
    int kn = snprintf(key, sizeof key, TORTURE_COUNTER "%d", w->cur);
    int n = snprintf(num, sizeof num, "%" PRId64, w->r.seen + 1);
    const char *argv[3] = {"SET", key, num};
    size_t lens[3] = {3, (size_t)kn, (size_t)n};
    if (kv_cmd(w->p->kv, on_set, w, 3, argv, lens) != 0) {
        w->r.flags |= TW_REFUSED; /* not sent: the connection is down */
        kst(w)->set_refused++;
        waiter_release(w);
    }
}

static void on_get(redisAsyncContext *ac, void *reply, void *arg)
{
    struct twaiter *w = arg;
    const redisReply *r = reply;
    (void)ac;
    if (w->p->closing)
        return;
    if (!r || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL)) {
        kst(w)->get_failed++;
        waiter_release(w);
        return;
    }
    w->r.seen = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
    w->r.flags |= TR_GET_OK;
    section_write(w);
}

/* The lock is ours: the critical section starts with the GET. */
static void waiter_section(struct twaiter *w)
{
    char key[64];
    int kn = snprintf(key, sizeof key, TORTURE_COUNTER "%d", w->cur);
    const char *argv[2] = {"GET", key};
    size_t lens[2] = {3, (size_t)kn};
    waiter_state(w, S_SECTION);
    if (kv_cmd(w->p->kv, on_get, w, 2, argv, lens) != 0) {
        kst(w)->get_failed++;
        waiter_release(w);
    }
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    waiter_next(arg);
}

static void on_acquired(struct hilock_lock *lock, int status,
                        const struct hilock_result *res, void *arg)
{
    struct twaiter *w = arg;
    struct tproc *p = w->p;
    (void)lock;
    kst(w)->acq_fired++;
    if (p->closing)
        return;
    kst(w)->acq_by_code[code_slot(status)]++;
    if (status == 0) {
        w->r.acq_ns = now_ns();
        w->r.token = res->token;
        waiter_section(w);
        if (++p->acquired == p->cfg->quota)
            proc_stop(p); /* the section just begun still runs */
        return;
    }
    if (p->stopping || status == HILOCK_ETIMEDOUT) {
        waiter_next(w);
        return;
    }
    struct timeval tv = {0, RETRY_MS * 1000};
    waiter_state(w, S_RETRY);
    if (event_base_once(p->base, -1, EV_TIMEOUT, on_retry, w, &tv) != 0)
        waiter_idle(w);
}

static void on_lost(struct hilock_lock *lock, int status,
                    const struct hilock_result *res, void *arg)
{
    struct twaiter *w = arg;
    (void)status;
    (void)res;
    if (w->p->closing)
        return;
    if (w->state == S_SECTION && lock == w->h[w->cur] && !w->lost_ns) {
        w->lost_ns = now_ns();
        kst(w)->lost++;
    } else {
        kst(w)->lost_outside++;
        kst(w)->lost_when[w->state]++;
        kst(w)->lost_other += lock != w->h[w->cur];
    }
}

/* The handle of name i for w, made at its first use. NULL on failure. */
static struct hilock_lock *waiter_handle(struct twaiter *w, int i)
{
    char name[64];
    if (w->h[i])
        return w->h[i];
    int n = snprintf(name, sizeof name, TORTURE_LOCK "%d", i);
    if (hilock_lock_new(w->p->client[w->kind], name, (size_t)n,
                        (uint64_t)w->id + 1, &w->h[i]) != 0)
        return NULL;
    if (hilock_lock_on_lost(w->h[i], on_lost, w) != 0) {
        hilock_lock_free(w->h[i]);
        w->h[i] = NULL;
    }
    return w->h[i];
}

/* A random name (xorshift64), then acquire it. */
static void waiter_acquire(struct twaiter *w)
{
    struct hilock_lock *h;
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    w->cur = (int)(w->rng % (uint64_t)w->p->cfg->names);
    w->lost_ns = 0;
    memset(&w->r, 0, sizeof w->r);
    w->r.waiter = w->id;
    w->r.name = (int16_t)w->cur;
    w->r.kind = (uint8_t)w->kind;
    w->r.seen = -1;
    waiter_state(w, S_WAITING);
    w->r.call_ns = w->since_ns;
    if (!(h = waiter_handle(w, w->cur)) ||
        hilock_lock_acquire(h, TORTURE_WAIT_MS,
                            w->kind == TK_FIXED ? TORTURE_FIXED_LEASE_MS : 0,
                            on_acquired, w) != 0) {
        kst(w)->call_errors++;
        waiter_idle(w);
        return;
    }
    kst(w)->acq_issued++;
}

/* ---- the process: stop, drain, hangs, progress ---------------------- */

/* Describe a hang (the first few are kept) and count it. */
static void note_hang(struct tproc *p, struct twaiter *w, int64_t now)
{
    struct tstats *st = &p->st;
    kst(w)->hangs++;
    w->hung = 1;
    if (st->nhangs < TORTURE_HANGS_KEPT)
        st->hang[st->nhangs++] = (struct thang){
            w->since_ns, now, w->id, w->kind, w->state, p->stopping};
}

/* Every tick: waiters without progress past their bound hang; every
 * fourth, tell the parent how far this worker got. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct tproc *p = arg;
    int64_t now = now_ns(), slack = (int64_t)p->cfg->slack_ms * 1000000;
    (void)fd;
    (void)what;
    for (int i = 0; i < p->nws; i++) {
        struct twaiter *w = &p->ws[i];
        int64_t bound = slack + (w->state == S_WAITING
                                     ? (int64_t)TORTURE_WAIT_MS * 1000000
                                     : 0);
        if (w->state != S_IDLE && !w->hung && now - w->since_ns > bound)
            note_hang(p, w, now);
    }
    if (++p->ticks % 4 == 0 && !p->stopping) {
        int64_t v[1] = {p->acquired};
        fan_send(p->fd, TMSG_PROGRESS, v, 1);
    }
}

static void on_drain_end(evutil_socket_t fd, short what, void *arg)
{
    struct tproc *p = arg;
    (void)fd;
    (void)what;
    for (int i = 0; i < p->nws; i++)
        if (p->ws[i].state != S_IDLE)
            p->st.k[p->ws[i].kind].stuck++;
    event_base_loopbreak(p->base);
}

static void on_hard_stop(evutil_socket_t fd, short what, void *arg)
{
    struct tproc *p = arg;
    (void)fd;
    (void)what;
    p->st.overrun = 1;
    event_base_loopbreak(p->base);
}

/* Stop acquiring (time is up or the quota reached): cancel parked
 * acquires, let sections finish within the drain, tell the parent. */
static void proc_stop(struct tproc *p)
{
    struct timeval drain = {p->cfg->drain_ms / 1000,
                            (p->cfg->drain_ms % 1000) * 1000};
    struct timeval hard = {p->cfg->drain_ms / 1000 + HARD_GRACE_S, 0};
    if (p->stopping)
        return;
    p->stopping = 1;
    p->st.stop_ns = now_ns();
    evtimer_del(p->ev_stop);
    evtimer_add(p->ev_drain, &drain);
    evtimer_add(p->ev_hard, &hard);
    int64_t v[1] = {p->acquired};
    fan_send(p->fd, TMSG_DONE, v, 1);
    for (int i = 0; i < p->nws; i++)
        if (p->ws[i].state == S_WAITING)
            hilock_lock_cancel(p->ws[i].h[p->ws[i].cur]); /* goes idle */
    if (p->active == 0) {
        struct timeval tv = {0, SETTLE_MS * 1000};
        event_base_loopexit(p->base, &tv);
    }
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    proc_stop(arg);
}

/* Count the clients' warnings and errors; keep the first few that differ
 * in their first 48 bytes. */
static void on_log(enum hilock_log_level level, const char *msg, void *arg)
{
    struct tproc *p = arg;
    struct tstats *st = &p->st;
    if (level < HILOCK_LOG_WARN)
        return;
    if (level == HILOCK_LOG_WARN)
        st->log_warn++;
    else
        st->log_error++;
    for (uint64_t i = 0; i < st->nlogs; i++)
        if (strncmp(st->logs[i], msg, 48) == 0)
            return;
    if (st->nlogs < TORTURE_LOGS_KEPT)
        snprintf(st->logs[st->nlogs++], TORTURE_LOG_LEN, "%s", msg);
}

/* A client of kind k on cfg's server. 0 or -1. */
static int client_new(struct tproc *p, enum tkind k)
{
    struct hilock_options ho;
    hilock_options_init(&ho);
    ho.node.host = p->cfg->host;
    ho.node.port = p->cfg->port;
    ho.watchdog_lease_ms = p->cfg->lease_ms;
    ho.fair = k == TK_FAIR;
    ho.fencing = k == TK_FAIR; /* the others keep the plain fast path */
    ho.scripts_only = k == TK_SCRIPTS;
    ho.log_cb = on_log;
    ho.log_arg = p;
    return hilock_client_new(p->base, &ho, &p->client[k]) == 0 ? 0 : -1;
}

/* Loop, clients, section connection, waiters and timers of worker index.
 * 0 or -1. */
static int proc_setup(struct tproc *p, const struct torture_cfg *cfg,
                      int index, int fd)
{
    int first = index * cfg->waiters / cfg->procs;
    int last = (index + 1) * cfg->waiters / cfg->procs;
    memset(p, 0, sizeof(*p));
    p->index = index;
    p->fd = fd;
    p->cfg = cfg;
    if (!(p->base = event_base_new()))
        return -1;
    for (int k = 0; k < TK_N; k++)
        if (client_new(p, (enum tkind)k) != 0)
            return -1;
    p->nws = last - first;
    if (!(p->kv = kv_new(p->base, cfg->host, cfg->port)) ||
        !(p->ws = calloc((size_t)(p->nws ? p->nws : 1), sizeof(*p->ws))) ||
        !(p->ev_stop = evtimer_new(p->base, on_stop, p)) ||
        !(p->ev_tick = event_new(p->base, -1, EV_PERSIST, on_tick, p)) ||
        !(p->ev_drain = evtimer_new(p->base, on_drain_end, p)) ||
        !(p->ev_hard = evtimer_new(p->base, on_hard_stop, p)))
        return -1;
    for (int i = 0; i < p->nws; i++) {
        struct twaiter *w = &p->ws[i];
        w->p = p;
        w->id = first + i;
        w->kind = (enum tkind)(w->id % TK_N);
        w->rng = 0x9e3779b97f4a7c15ull * (uint64_t)(w->id + 1) + 1;
        if (!(w->h = calloc((size_t)cfg->names, sizeof(*w->h))))
            return -1;
    }
    return 0;
}

/* Start every waiter; run until all stopped (or the drain or hard stop). */
static void proc_run(struct tproc *p)
{
    double s = p->cfg->seconds;
    struct timeval stop = {(time_t)s, (suseconds_t)((s - (int)s) * 1e6)};
    struct timeval tick = {0, TICK_MS * 1000};
    evtimer_add(p->ev_stop, &stop);
    evtimer_add(p->ev_tick, &tick);
    p->active = p->nws;
    for (int i = 0; i < p->nws; i++)
        waiter_next(&p->ws[i]);
    event_base_dispatch(p->base);
}

/* Free clients, handles, timers and the loop; callbacks fired now only
 * return (p->closing). */
static void proc_close(struct tproc *p)
{
    p->closing = 1;
    for (int k = 0; k < TK_N; k++)
        hilock_client_free(p->client[k]);
    for (int i = 0; p->ws && i < p->nws; i++) {
        for (int n = 0; p->ws[i].h && n < p->cfg->names; n++)
            hilock_lock_free(p->ws[i].h[n]);
        free(p->ws[i].h);
    }
    free(p->ws);
    kv_free(p->kv);
    struct event *ev[] = {p->ev_stop, p->ev_tick, p->ev_drain, p->ev_hard};
    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++)
        if (ev[i])
            event_free(ev[i]);
    if (p->base)
        event_base_free(p->base);
}

int torture_worker(int index, int fd, FILE *out, void *arg)
{
    const struct torture_cfg *cfg = arg;
    struct tproc p;
    int rc = proc_setup(&p, cfg, index, fd);
    if (rc == 0)
        (void)kv_wait_up(p.base, p.kv);
    else
        p.st.setup_failed = 1;
    /* a worker that failed its setup still goes, and reports it */
    if (fan_ready(fd, 1, READY_TIMEOUT_MS) != 0)
        return 1;
    if (rc == 0)
        proc_run(&p);
    p.st.records = p.nrecs;
    struct tstats st = p.st; /* counted before teardown fires ECANCELED */
    proc_close(&p);
    if (fan_write(out, &st, sizeof st) != 0 ||
        fan_write(out, p.recs, p.nrecs * sizeof(*p.recs)) != 0)
        return 1;
    free(p.recs);
    return st.setup_failed || st.overrun ? 1 : 0;
}

/* ---- the parent's side ---------------------------------------------- */

static void tkstats_add(struct tkstats *d, const struct tkstats *s)
{
    d->acq_issued += s->acq_issued;
    d->acq_fired += s->acq_fired;
    d->rel_issued += s->rel_issued;
    d->rel_fired += s->rel_fired;
    for (int c = 0; c < TORTURE_ERRS; c++) {
        d->acq_by_code[c] += s->acq_by_code[c];
        d->rel_by_code[c] += s->rel_by_code[c];
    }
    d->call_errors += s->call_errors;
    d->rel_left += s->rel_left;
    d->lost += s->lost;
    d->lost_outside += s->lost_outside;
    for (int i = 0; i < 5; i++)
        d->lost_when[i] += s->lost_when[i];
    d->lost_other += s->lost_other;
    d->skipped += s->skipped;
    d->get_failed += s->get_failed;
    d->set_unknown += s->set_unknown;
    d->set_refused += s->set_refused;
    d->set_late += s->set_late;
    d->hangs += s->hangs;
    d->stuck += s->stuck;
}

int torture_collect(FILE *f, struct tresults *res)
{
    struct tstats st;
    rewind(f);
    if (fan_read(f, &st, sizeof st) != 0)
        return -1;
    struct trec *r = realloc(res->recs, (res->n + st.records + 1) *
                                            sizeof(*r));
    if (!r)
        return -1;
    res->recs = r;
    if (fan_read(f, r + res->n, st.records * sizeof(*r)) != 0)
        return -1;
    res->n += st.records;
    res->sum.records += st.records;
    for (int k = 0; k < TK_N; k++)
        tkstats_add(&res->sum.k[k], &st.k[k]);
    for (uint64_t i = 0; i < st.nhangs && res->sum.nhangs < TORTURE_HANGS_KEPT;
         i++)
        res->sum.hang[res->sum.nhangs++] = st.hang[i];
    res->sum.log_warn += st.log_warn;
    res->sum.log_error += st.log_error;
    for (uint64_t i = 0; i < st.nlogs; i++) {
        uint64_t j = 0;
        while (j < res->sum.nlogs &&
               strncmp(res->sum.logs[j], st.logs[i], 48) != 0)
            j++;
        if (j == res->sum.nlogs && j < TORTURE_LOGS_KEPT)
            memcpy(res->sum.logs[res->sum.nlogs++], st.logs[i],
                   TORTURE_LOG_LEN);
    }
    if (st.stop_ns > res->sum.stop_ns)
        res->sum.stop_ns = st.stop_ns;
    res->sum.setup_failed += st.setup_failed;
    res->sum.overrun += st.overrun;
    return 0;
}
