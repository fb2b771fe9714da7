/* contended.c -- many waiters in several processes fight for one lock.
 *
 * The scenario behind issue 3 (later hilock-bench's "contended"): P processes,
 * each one event loop with one hilock client, run W waiters in all on ONE
 * lock name. Every waiter loops: acquire (watchdog lease, long wait),
 * critical section = GET counter then SET counter+1 on a hiredis async
 * context on the same loop, release, acquire again. After --seconds the
 * processes stop by themselves and hand their records to the parent, which
 * merges them (CLOCK_MONOTONIC is machine-wide, so timestamps of different
 * processes compare) and reports throughput, hand-off and wait latencies,
 * fairness, and the mutual-exclusion checks:
 *  - the final counter equals the number of acquisitions,
 *  - [acquired, release sent] intervals sorted by acquisition never overlap,
 *  - fencing tokens strictly increase in acquisition order,
 *  - each critical section read the value the previous one wrote.
 * Exits 1 on any violation, request error or failed child, 2 on bad usage;
 * an acquire that times out (starvation) is reported but does not fail.
 *
 * A redis-server is started through the test harness unless --port names
 * one; everything talks to 127.0.0.1 only. Every child is bounded in time
 * (its own hard stop, and the parent kills overrunning children by pid). */
#include <errno.h>
#include <event2/event.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <hilock/hilock.h>

#include "redis_server.h"

#define LOCK_NAME "hilock-bench:contended"
#define COUNTER_KEY "hilock-bench:contended:counter"
#define FENCE_KEY "hilock_fence:{" LOCK_NAME "}"

#define WAIT_MS 10000        /* acquire wait of every waiter */
#define RETRY_MS 10          /* pause before retrying a failed acquire */
#define DRAIN_MS 300         /* loop time after the last waiter stopped */
#define CHILD_GRACE_S 20     /* child's hard stop after --seconds */
#define PARENT_GRACE_S 30    /* parent kills children after --seconds + this */
#define READY_TIMEOUT_MS 10000

struct options {
    int procs;
    int waiters;
    int seconds;
    int port;
    int worst;   /* list the longest hand-offs */
};

/* One acquisition, as written by a child. */
struct record {
    int64_t call_ns;   /* acquire issued */
    int64_t acq_ns;    /* right after the acquire callback began */
    int64_t rel_ns;    /* right before the release was sent */
    int64_t token;     /* fencing token */
    int64_t seen;      /* counter value read in the critical section */
    int32_t proc;
    int32_t waiter;    /* global waiter id */
};

/* What a child reports besides its records. */
struct child_stats {
    uint64_t records;
    uint64_t acq_timeouts;  /* HILOCK_ETIMEDOUT after WAIT_MS */
    uint64_t acq_errors;    /* any other acquire failure */
    uint64_t rel_errors;
    uint64_t cs_errors;     /* GET/SET failures */
    int32_t overrun;        /* hit its hard stop */
    int32_t setup_failed;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- child: one process, one loop, one hilock client ------------------ */

enum waiter_state { W_IDLE = 0, W_WAITING, W_CS, W_RELEASING };

struct proc;

struct waiter {
    struct proc *p;
    struct hilock_lock *lock;
    int id;
    enum waiter_state state;
    int64_t call_ns, acq_ns, token, seen;
};

struct proc {
    int index;
    struct event_base *base;
    struct hilock_client *client;
    redisAsyncContext *ac;
    struct waiter *ws;
    int nws;
    int active;          /* waiters not idle */
    int stopping;
    int closing;         /* tearing down: callbacks only return */
    struct record *recs;
    size_t nrecs, caprecs;
    struct child_stats st;
};

static void waiter_acquire(struct waiter *w);

/* Append a record; on allocation failure count it as an error (the counter
 * check will then also fail, loudly). */
static void proc_record(struct proc *p, const struct waiter *w, int64_t rel)
{
    if (p->nrecs == p->caprecs) {
        size_t cap = p->caprecs ? p->caprecs * 2 : 4096;
        struct record *r = realloc(p->recs, cap * sizeof(*r));
        if (!r) {
            p->st.cs_errors++;
            return;
        }
        p->recs = r;
        p->caprecs = cap;
    }
    p->recs[p->nrecs++] = (struct record){w->call_ns, w->acq_ns, rel,
                                          w->token,   w->seen,  p->index,
                                          w->id};
}

/* A waiter went idle; once all have after the stop, drain and leave. */
static void waiter_idle(struct waiter *w)
{
    struct proc *p = w->p;
    w->state = W_IDLE;
    if (--p->active == 0 && p->stopping) {
        struct timeval tv = {0, DRAIN_MS * 1000};
        event_base_loopexit(p->base, &tv);
    }
}

static void on_released(struct hilock_lock *lock, int status, int64_t value,
                        void *arg)
{
    struct waiter *w = arg;
    (void)lock;
    (void)value;
    if (w->p->closing)
        return;
    if (status != 0)
        w->p->st.rel_errors++;
    if (w->p->stopping) {
        waiter_idle(w);
        return;
    }
    waiter_acquire(w);
}

/* End of the critical section: record it, then release. */
static void waiter_release(struct waiter *w)
{
    int64_t rel = now_ns();
    proc_record(w->p, w, rel);
    w->state = W_RELEASING;
    if (hilock_lock_release(w->lock, on_released, w) != 0) {
        w->p->st.rel_errors++;
        waiter_idle(w);
    }
}

static void on_set(redisAsyncContext *ac, void *reply, void *arg)
{
    struct waiter *w = arg;
    const redisReply *r = reply;
    (void)ac;
    if (w->p->closing)
        return;
    if (!r || r->type != REDIS_REPLY_STATUS)
        w->p->st.cs_errors++;
    waiter_release(w);
}

static void on_get(redisAsyncContext *ac, void *reply, void *arg)
{
    struct waiter *w = arg;
    const redisReply *r = reply;
    char num[24];
    if (w->p->closing)
        return;
    if (!r || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL)) {
        w->p->st.cs_errors++;
        waiter_release(w);
        return;
    }
    w->seen = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
    int n = snprintf(num, sizeof num, "%" PRId64, w->seen + 1);
    const char *argv[3] = {"SET", COUNTER_KEY, num};
    size_t lens[3] = {3, sizeof(COUNTER_KEY) - 1, (size_t)n};
    if (redisAsyncCommandArgv(ac, on_set, w, 3, argv, lens) != REDIS_OK) {
        w->p->st.cs_errors++;
        waiter_release(w);
    }
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    struct waiter *w = arg;
    (void)fd;
    (void)what;
    if (w->p->stopping)
        waiter_idle(w);
    else
        waiter_acquire(w);
}

static void on_acquired(struct hilock_lock *lock, int status, int64_t value,
                        void *arg)
{
    struct waiter *w = arg;
    struct proc *p = w->p;
    (void)lock;
    if (p->closing)
        return;
    if (status == 0) {
        w->acq_ns = now_ns();
        w->token = value;
        w->state = W_CS;
        const char *argv[2] = {"GET", COUNTER_KEY};
        size_t lens[2] = {3, sizeof(COUNTER_KEY) - 1};
        if (redisAsyncCommandArgv(p->ac, on_get, w, 2, argv, lens) !=
            REDIS_OK) {
            p->st.cs_errors++;
            waiter_release(w);
        }
        return;
    }
    if (status == HILOCK_ETIMEDOUT)
        p->st.acq_timeouts++;
    else if (status != HILOCK_ECANCELED || !p->stopping)
        p->st.acq_errors++;
    if (p->stopping) {
        waiter_idle(w);
        return;
    }
    struct timeval tv = {0, RETRY_MS * 1000};
    if (event_base_once(p->base, -1, EV_TIMEOUT, on_retry, w, &tv) != 0)
        waiter_idle(w);
}

static void waiter_acquire(struct waiter *w)
{
    w->call_ns = now_ns();
    w->state = W_WAITING;
    if (hilock_lock_acquire(w->lock, 0, WAIT_MS, on_acquired, w) != 0) {
        w->p->st.acq_errors++;
        waiter_idle(w);
    }
}

/* --seconds are up: cancel parked acquires, let critical sections finish. */
static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    struct proc *p = arg;
    (void)fd;
    (void)what;
    p->stopping = 1;
    for (int i = 0; i < p->nws; i++)
        if (p->ws[i].state == W_WAITING)
            hilock_lock_cancel(p->ws[i].lock); /* on_acquired: idle */
    if (p->active == 0) { /* nobody left to call waiter_idle */
        struct timeval tv = {0, DRAIN_MS * 1000};
        event_base_loopexit(p->base, &tv);
    }
}

static void on_hard_stop(evutil_socket_t fd, short what, void *arg)
{
    struct proc *p = arg;
    (void)fd;
    (void)what;
    p->st.overrun = 1;
    event_base_loopbreak(p->base);
}

static void on_ctx_connect(const redisAsyncContext *ac, int status)
{
    (void)ac;
    if (status != REDIS_OK)
        fprintf(stderr, "contended: counter connection failed\n");
}

/* Loop, client, counter connection and lock handles of process index.
 * 0, or -1 with a message. */
static int proc_setup(struct proc *p, const struct options *o, int index)
{
    struct hilock_options ho;
    int first = index * o->waiters / o->procs;
    int last = (index + 1) * o->waiters / o->procs;
    memset(p, 0, sizeof(*p));
    p->index = index;
    if (!(p->base = event_base_new()))
        return -1;
    hilock_options_init(&ho);
    ho.port = o->port;
    ho.fencing = 1;
    if (hilock_client_new(p->base, &ho, &p->client) != 0)
        return -1;
    p->ac = redisAsyncConnect("127.0.0.1", o->port);
    if (!p->ac || p->ac->err)
        return -1;
    redisLibeventAttach(p->ac, p->base);
    redisAsyncSetConnectCallback(p->ac, on_ctx_connect);
    p->nws = last - first;
    if (!(p->ws = calloc((size_t)p->nws, sizeof(*p->ws))))
        return -1;
    for (int i = 0; i < p->nws; i++) {
        struct waiter *w = &p->ws[i];
        w->p = p;
        w->id = first + i;
        if (hilock_lock_new(p->client, LOCK_NAME, sizeof(LOCK_NAME) - 1,
                            (uint64_t)w->id + 1, &w->lock) != 0)
            return -1;
    }
    return 0;
}

/* Run the loop for ms: connections come up before the start signal. */
static void proc_warm_up(struct proc *p, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_base_loopexit(p->base, &tv);
    event_base_dispatch(p->base);
}

/* Start every waiter, run until all stopped (or the hard stop). */
static void proc_run(struct proc *p, const struct options *o)
{
    struct timeval stop = {o->seconds, 0};
    struct timeval hard = {o->seconds + CHILD_GRACE_S, 0};
    struct event *ev_stop = evtimer_new(p->base, on_stop, p);
    struct event *ev_hard = evtimer_new(p->base, on_hard_stop, p);
    if (!ev_stop || !ev_hard) {
        p->st.setup_failed = 1;
        return;
    }
    evtimer_add(ev_stop, &stop);
    evtimer_add(ev_hard, &hard);
    p->active = p->nws;
    for (int i = 0; i < p->nws; i++)
        waiter_acquire(&p->ws[i]);
    event_base_dispatch(p->base);
    event_free(ev_stop);
    event_free(ev_hard);
}

/* Write all of buf to fd. 0 or -1. */
static int write_all(int fd, const void *buf, size_t len)
{
    const char *b = buf;
    while (len > 0) {
        ssize_t n = write(fd, b, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        b += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The child's whole life: set up, report ready, wait for the start (EOF on
 * go_fd), run, write stats and records to out_fd. Returns the exit code. */
static int child_main(const struct options *o, int index, int ready_fd,
                      int go_fd, int out_fd)
{
    struct proc p;
    char byte = 'r';
    int rc = proc_setup(&p, o, index);
    if (rc == 0) {
        proc_warm_up(&p, 200);
    } else {
        fprintf(stderr, "contended: process %d: setup failed\n", index);
        p.st.setup_failed = 1;
    }
    if (write_all(ready_fd, &byte, 1) != 0)
        return 1;
    while (read(go_fd, &byte, 1) < 0 && errno == EINTR)
        ;
    if (rc == 0)
        proc_run(&p, o);
    p.closing = 1; /* after an overrun, callbacks still fire below */
    hilock_client_free(p.client);
    if (p.ac)
        redisAsyncFree(p.ac);
    if (p.base)
        event_base_free(p.base);
    p.st.records = p.nrecs;
    if (write_all(out_fd, &p.st, sizeof p.st) != 0 ||
        write_all(out_fd, p.recs, p.nrecs * sizeof(*p.recs)) != 0)
        return 1;
    return p.st.setup_failed || p.st.overrun ? 1 : 0;
}

/* ---- parent: start, supervise, merge, check, report -------------------- */

struct results {
    struct record *recs;
    size_t n;
    struct child_stats sum;
    int failed_children;
};

static int usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s [--procs N] [--waiters N] [--seconds N] [--port N] "
            "[--worst N]\n"
            "  --procs    processes, each one loop and one client (4)\n"
            "  --waiters  waiters in all, split evenly (100)\n"
            "  --seconds  run time (10)\n"
            "  --port     use the redis-server on 127.0.0.1:N instead of "
            "starting one\n"
            "  --worst    also list the N longest hand-offs (0)\n",
            argv0);
    return 2;
}

/* Parse argv into *o. 0, or -1 on bad usage. */
static int parse_options(int argc, char **argv, struct options *o)
{
    static const struct option longopts[] = {
        {"procs", required_argument, NULL, 'p'},
        {"waiters", required_argument, NULL, 'w'},
        {"seconds", required_argument, NULL, 's'},
        {"port", required_argument, NULL, 'P'},
        {"worst", required_argument, NULL, 'W'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    *o = (struct options){4, 100, 10, 0, 0};
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        char *end;
        long v = optarg ? strtol(optarg, &end, 10) : 0;
        if (c == 'h' || c == '?' || !optarg || *end || v < 1 || v > 65535)
            return -1;
        if (c == 'p')
            o->procs = (int)v;
        else if (c == 'w')
            o->waiters = (int)v;
        else if (c == 's')
            o->seconds = (int)v;
        else if (c == 'W')
            o->worst = (int)v;
        else
            o->port = (int)v;
    }
    if (optind != argc || o->procs > 256 || o->waiters < o->procs ||
        o->seconds > 3600)
        return -1;
    return 0;
}

/* Run one command on the parent's connection; the reply (caller frees) or
 * NULL with a message. */
static redisReply *sync_cmd(redisContext *rc, int argc, const char **argv)
{
    redisReply *r = redisCommandArgv(rc, argc, argv, NULL);
    if (!r)
        fprintf(stderr, "contended: %s: %s\n", argv[0], rc->errstr);
    return r;
}

/* Empty the bench's keys so the counter starts at 0. 0 or -1. */
static int reset_keys(redisContext *rc)
{
    const char *del[] = {"DEL", LOCK_NAME, COUNTER_KEY, FENCE_KEY};
    const char *set[] = {"SET", COUNTER_KEY, "0"};
    redisReply *r = sync_cmd(rc, 4, del);
    if (!r)
        return -1;
    freeReplyObject(r);
    if (!(r = sync_cmd(rc, 3, set)))
        return -1;
    freeReplyObject(r);
    return 0;
}

/* The counter's value, or -1. */
static long long read_counter(redisContext *rc)
{
    const char *get[] = {"GET", COUNTER_KEY};
    redisReply *r = sync_cmd(rc, 2, get);
    long long v = -1;
    if (r && r->type == REDIS_REPLY_STRING)
        v = strtoll(r->str, NULL, 10);
    if (r)
        freeReplyObject(r);
    return v;
}

/* Wait until n bytes arrive on fd within timeout_ms. 0 or -1. */
static int wait_ready(int fd, int n, int timeout_ms)
{
    int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
    char buf[64];
    while (n > 0) {
        int left = (int)((deadline - now_ns()) / 1000000);
        struct pollfd pfd = {fd, POLLIN, 0};
        if (left <= 0 || poll(&pfd, 1, left) <= 0)
            return -1;
        ssize_t got = read(fd, buf, (size_t)n < sizeof buf ? (size_t)n
                                                            : sizeof buf);
        if (got <= 0)
            return -1;
        n -= (int)got;
    }
    return 0;
}

/* Reap every child by pid; kill those still running at deadline_ns.
 * Returns how many did not exit 0. */
static int reap_children(pid_t *pids, int n, int64_t deadline_ns)
{
    int running = n, failed = 0;
    while (running > 0) {
        for (int i = 0; i < n; i++) {
            int status;
            if (pids[i] <= 0 || waitpid(pids[i], &status, WNOHANG) == 0)
                continue;
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "contended: process %d failed (status %d)\n",
                        i, status);
                failed++;
            }
            pids[i] = 0;
            running--;
        }
        if (running > 0 && now_ns() >= deadline_ns) {
            for (int i = 0; i < n; i++) {
                if (pids[i] <= 0)
                    continue;
                fprintf(stderr, "contended: process %d overran: killed\n", i);
                kill(pids[i], SIGKILL);
                waitpid(pids[i], NULL, 0);
                pids[i] = 0;
                failed++;
            }
            break;
        }
        if (running > 0)
            usleep(20000);
    }
    return failed;
}

/* Append the stats and records a child wrote to f. 0 or -1. */
static int collect(FILE *f, struct results *res)
{
    struct child_stats st;
    rewind(f);
    if (fread(&st, sizeof st, 1, f) != 1)
        return -1;
    struct record *r = realloc(res->recs,
                               (res->n + st.records + 1) * sizeof(*r));
    if (!r)
        return -1;
    res->recs = r;
    if (fread(r + res->n, sizeof(*r), st.records, f) != st.records)
        return -1;
    res->n += st.records;
    res->sum.acq_timeouts += st.acq_timeouts;
    res->sum.acq_errors += st.acq_errors;
    res->sum.rel_errors += st.rel_errors;
    res->sum.cs_errors += st.cs_errors;
    res->sum.overrun += st.overrun;
    res->sum.setup_failed += st.setup_failed;
    return 0;
}

/* Fork one child per process, each with its own output file; a child never
 * returns from here. Returns how many were started. */
static int spawn_children(const struct options *o, pid_t *pids, FILE **outs,
                          const int ready[2], const int go[2])
{
    int started = 0;
    fflush(NULL);
    for (; started < o->procs; started++) {
        if (!(outs[started] = tmpfile()) || (pids[started] = fork()) < 0)
            break;
        if (pids[started] == 0) {
            close(ready[0]);
            close(go[1]);
            _exit(child_main(o, started, ready[1], go[0],
                             fileno(outs[started])));
        }
    }
    return started;
}

/* Fork the children, start them together, supervise them and collect what
 * they wrote into *res. 0, or -1 when the run could not happen at all. */
static int run_children(const struct options *o, struct results *res)
{
    /* static: children inherit these and _exit without freeing them */
    static pid_t *pids;
    static FILE **outs;
    int ready[2] = {-1, -1}, go[2] = {-1, -1};
    int ok = 0;
    pids = calloc((size_t)o->procs, sizeof(*pids));
    outs = calloc((size_t)o->procs, sizeof(*outs));
    if (pids && outs && pipe(ready) == 0 && pipe(go) == 0) {
        int started = spawn_children(o, pids, outs, ready, go);
        close(ready[1]);
        close(go[0]);
        ok = started == o->procs &&
             wait_ready(ready[0], o->procs, READY_TIMEOUT_MS) == 0;
        close(go[1]); /* EOF: every child starts now */
        close(ready[0]);
        if (!ok)
            fprintf(stderr, "contended: processes did not get ready\n");
        int64_t grace = (int64_t)(o->seconds + PARENT_GRACE_S) * 1000000000;
        res->failed_children =
            reap_children(pids, started, now_ns() + (ok ? grace : 0));
        for (int i = 0; ok && i < started; i++)
            if (collect(outs[i], res) != 0)
                res->failed_children++;
    }
    for (int i = 0; outs && i < o->procs; i++)
        if (outs[i])
            fclose(outs[i]);
    free(outs);
    free(pids);
    outs = NULL;
    pids = NULL;
    return ok ? 0 : -1;
}

static int cmp_acq(const void *x, const void *y)
{
    const struct record *a = x, *b = y;
    return (a->acq_ns > b->acq_ns) - (a->acq_ns < b->acq_ns);
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* The p-th percentile (nearest rank) of v[0..n), sorting v; 0 when empty. */
static int64_t percentile(int64_t *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof(*v), cmp_i64);
    size_t rank = (size_t)(p / 100.0 * (double)n + 0.999999);
    return v[rank == 0 ? 0 : rank > n ? n - 1 : rank - 1];
}

/* ns as a short human string in buf. */
static const char *fmt_ns(int64_t ns, char *buf, size_t len)
{
    if (ns < 10000)
        snprintf(buf, len, "%.2f us", (double)ns / 1e3);
    else if (ns < 10000000)
        snprintf(buf, len, "%.0f us", (double)ns / 1e3);
    else
        snprintf(buf, len, "%.1f ms", (double)ns / 1e6);
    return buf;
}

/* Print one latency line: p50, p99, max of v[0..n). */
static void print_latency(const char *what, int64_t *v, size_t n)
{
    char a[32], b[32], c[32];
    int64_t p50 = percentile(v, n, 50), p99 = percentile(v, n, 99);
    int64_t max = n ? v[n - 1] : 0;
    printf("  %-34s %10s %10s %10s   (n=%zu)\n", what,
           fmt_ns(p50, a, sizeof a), fmt_ns(p99, b, sizeof b),
           fmt_ns(max, c, sizeof c), n);
}

/* Latencies and shares over records sorted by acquisition. */
static void report_latencies(const struct record *r, size_t n)
{
    int64_t *hand = malloc((n + 1) * sizeof(*hand));
    int64_t *other = malloc((n + 1) * sizeof(*other));
    int64_t *wait = malloc((n + 1) * sizeof(*wait));
    size_t nh = 0, no = 0, same_waiter = 0, same_proc = 0;
    if (!hand || !other || !wait) {
        fprintf(stderr, "contended: out of memory\n");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        wait[i] = r[i].acq_ns - r[i].call_ns;
        if (i == 0)
            continue;
        hand[nh++] = r[i].acq_ns - r[i - 1].rel_ns;
        if (r[i].waiter == r[i - 1].waiter)
            same_waiter++;
        else
            other[no++] = r[i].acq_ns - r[i - 1].rel_ns;
        same_proc += r[i].proc == r[i - 1].proc;
    }
    printf("  %-34s %10s %10s %10s\n", "", "p50", "p99", "max");
    print_latency("hand-off (release sent -> next)", hand, nh);
    print_latency("hand-off to a different waiter", other, no);
    print_latency("wait (acquire call -> acquired)", wait, n);
    printf("  %-34s %9.1f %%\n", "previous-holder share",
           nh ? 100.0 * (double)same_waiter / (double)nh : 0.0);
    printf("  %-34s %9.1f %%\n", "same-process share",
           nh ? 100.0 * (double)same_proc / (double)nh : 0.0);
out:
    free(hand);
    free(other);
    free(wait);
}

/* Acquisitions per process, and how long the lock stayed in one process
 * (consecutive acquisitions by the same process). */
static void report_processes(const struct record *r, size_t n,
                             const struct options *o)
{
    size_t *per = calloc((size_t)o->procs, sizeof(*per));
    size_t runs = 0, longest = 0, run = 0;
    if (!per)
        return;
    for (size_t i = 0; i < n; i++) {
        if (r[i].proc >= 0 && r[i].proc < o->procs)
            per[r[i].proc]++;
        run = i > 0 && r[i].proc == r[i - 1].proc ? run + 1 : 1;
        runs += run == 1;
        longest = run > longest ? run : longest;
    }
    printf("  %-34s", "acquisitions per process");
    for (int i = 0; i < o->procs; i++)
        printf(" %zu", per[i]);
    printf("\n  %-34s mean %.1f, longest %zu\n",
           "stays in one process", runs ? (double)n / (double)runs : 0.0,
           longest);
    free(per);
}

/* The k longest hand-offs: when (since the first acquisition), how long,
 * from which holder to which, and how long the new holder had waited. */
static void report_worst(const struct record *r, size_t n, int k)
{
    size_t *idx = malloc((size_t)k * sizeof(*idx));
    size_t m = 0;
    if (!idx || n < 2)
        goto out;
    for (size_t i = 1; i < n; i++) { /* keep idx sorted, longest first */
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
        const struct record *a = &r[idx[j] - 1], *b = &r[idx[j]];
        char from[16], to[16], t1[32], t2[32];
        snprintf(from, sizeof from, "%d.%d", a->proc, a->waiter);
        snprintf(to, sizeof to, "%d.%d", b->proc, b->waiter);
        printf("  %8.3f s %10s  %-9s -> %-9s %10s\n",
               (double)(b->acq_ns - r[0].acq_ns) / 1e9,
               fmt_ns(b->acq_ns - a->rel_ns, t1, sizeof t1), from, to,
               fmt_ns(b->acq_ns - b->call_ns, t2, sizeof t2));
    }
out:
    free(idx);
}

/* Distinct waiters served, and the fewest/most acquisitions of one. */
static void report_fairness(const struct record *r, size_t n,
                            const struct options *o)
{
    size_t *per = calloc((size_t)o->waiters, sizeof(*per));
    size_t served = 0, lo = SIZE_MAX, hi = 0;
    if (!per)
        return;
    for (size_t i = 0; i < n; i++)
        if (r[i].waiter >= 0 && r[i].waiter < o->waiters)
            per[r[i].waiter]++;
    for (int w = 0; w < o->waiters; w++) {
        served += per[w] > 0;
        lo = per[w] < lo ? per[w] : lo;
        hi = per[w] > hi ? per[w] : hi;
    }
    printf("  %-34s %zu / %d   (per waiter: min %zu, max %zu)\n",
           "waiters served", served, o->waiters, lo, hi);
    free(per);
}

/* The mutual-exclusion checks; prints each, returns the violations. */
static int check_exclusion(const struct record *r, size_t n,
                           long long counter)
{
    size_t overlap = 0, token_bad = 0, seen_bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (r[i].seen != (int64_t)i)
            seen_bad++;
        if (i == 0)
            continue;
        if (r[i].acq_ns <= r[i - 1].rel_ns)
            overlap++;
        if (r[i].token <= r[i - 1].token)
            token_bad++;
    }
    int bad = (counter != (long long)n) + (overlap > 0) + (token_bad > 0) +
              (seen_bad > 0);
    printf("checks\n");
    printf("  %-42s %s (counter %lld, acquisitions %zu)\n",
           "final counter == acquisitions", counter == (long long)n ? "ok"
                                                                    : "FAIL",
           counter, n);
    printf("  %-42s %s (%zu overlaps)\n", "critical sections disjoint",
           overlap ? "FAIL" : "ok", overlap);
    printf("  %-42s %s (%zu out of order)\n",
           "fencing tokens strictly increasing", token_bad ? "FAIL" : "ok",
           token_bad);
    printf("  %-42s %s (%zu mismatches)\n",
           "each section read the previous write", seen_bad ? "FAIL" : "ok",
           seen_bad);
    return bad;
}

/* Print the report; returns the number of violations and failures. */
static int report(const struct options *o, struct results *res,
                  long long counter)
{
    struct record *r = res->recs;
    size_t n = res->n;
    qsort(r, n, sizeof(*r), cmp_acq);
    double span = n ? (double)(r[n - 1].rel_ns - r[0].call_ns) / 1e9 : 0;
    printf("contended: %d processes, %d waiters, %d s, lock \"%s\" on "
           "127.0.0.1:%d\n",
           o->procs, o->waiters, o->seconds, LOCK_NAME, o->port);
    printf("  %-34s %zu in %.2f s = %.0f critical sections/s\n",
           "acquisitions", n, span, span > 0 ? (double)n / span : 0.0);
    report_fairness(r, n, o);
    report_processes(r, n, o);
    report_latencies(r, n);
    /* A timed-out acquire is starvation, which an unfair lock allows: it
     * is shown, not failed. Any other error fails the run. */
    printf("  %-34s %" PRIu64 " (no acquisition within %d ms)\n",
           "starved acquires", res->sum.acq_timeouts, WAIT_MS);
    printf("  %-34s acquire %" PRIu64 ", release %" PRIu64
           ", critical section %" PRIu64 "\n",
           "errors", res->sum.acq_errors, res->sum.rel_errors,
           res->sum.cs_errors);
    if (o->worst > 0)
        report_worst(r, n, o->worst);
    int bad = check_exclusion(r, n, counter);
    int errors =
        res->sum.acq_errors + res->sum.rel_errors + res->sum.cs_errors ? 1 : 0;
    if (res->failed_children)
        printf("  %d process(es) failed or overran\n", res->failed_children);
    bad += errors + res->failed_children;
    printf("result: %s\n", bad ? "FAIL" : "ok");
    return bad;
}

int main(int argc, char **argv)
{
    static redisContext *rc; /* static: see run_children */
    struct options o;
    struct rs_server *srv = NULL;
    struct results res = {0};
    int bad = 1;
    if (parse_options(argc, argv, &o) != 0)
        return usage(argv[0]);
    if (!o.port) {
        if (rs_init() != 0 || !(srv = rs_start(NULL)))
            return 1;
        o.port = rs_port(srv);
    }
    struct timeval tv = {2, 0};
    rc = redisConnectWithTimeout("127.0.0.1", o.port, tv);
    if (!rc || rc->err || redisSetTimeout(rc, tv) != REDIS_OK ||
        reset_keys(rc) != 0) {
        fprintf(stderr, "contended: cannot use redis on port %d\n", o.port);
        goto out;
    }
    if (run_children(&o, &res) != 0)
        goto out;
    bad = report(&o, &res, read_counter(rc)) ? 1 : 0;
out:
    if (rc)
        redisFree(rc);
    free(res.recs);
    rs_stop(srv);
    return bad;
}
