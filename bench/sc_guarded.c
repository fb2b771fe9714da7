/* SPDX-License-Identifier: BSD-3-Clause */
/* sc_guarded.c -- what a guarded write costs Redis next to a plain one.
 *
 * One process, one loop, one hilock client holding one lock (a fixed lease
 * longer than the run: no renewal interferes). Phases alternate: guarded
 * writes (hilock_lock_guarded: SET of a key in the lock's slot, checked
 * against the hold in one script), then plain SETs of the same key on a
 * hiredis connection of the same loop, K of either in flight. Figures per
 * kind: writes/s and the Redis CPU per write, from INFO commandstats
 * around each phase (evalsha's usec for guarded writes, which includes the
 * SET they run; set's for plain ones), and the Redis process's CPU time
 * per write (INFO cpu: reading, parsing and answering included). Target:
 * a guarded write costs Redis at most 2x a plain SET (commandstats).
 * Checks: every guarded write succeeded and every plain SET answered
 * OK. */
#include "bench.h"

#include <event2/event.h>
#include <hiredis/adapters/libevent.h>
#include <stdlib.h>
#include <string.h>

#include <hilock/hilock.h>

#define G_NAME BENCH_PREFIX "guarded"
#define G_KEY "{" G_NAME "}:value"
#define G_LEASE_MS 600000

/* One phase's state: its kind, how many are in flight, what came back. */
struct gphase {
    struct event_base *base;
    struct hilock_lock *lock;
    redisAsyncContext *ac;
    int guarded;
    int inflight;
    int64_t end_ns;
    long long done, failed;
};

static void g_send(struct gphase *p);

static void on_guarded(struct hilock_lock *lock, int status,
                       const struct hilock_reply *reply, void *arg)
{
    struct gphase *p = arg;
    (void)lock;
    p->inflight--;
    if (status == 0 && reply->type == HILOCK_REPLY_STATUS)
        p->done++;
    else
        p->failed++;
    g_send(p);
}

static void on_plain(redisAsyncContext *ac, void *reply, void *arg)
{
    struct gphase *p = arg;
    redisReply *r = reply;
    (void)ac;
    p->inflight--;
    if (r && r->type == REDIS_REPLY_STATUS)
        p->done++;
    else
        p->failed++;
    g_send(p);
}

/* Send the next write of the phase, unless its time is up; break the loop
 * once the last one in flight came back. */
static void g_send(struct gphase *p)
{
    static const char *argv[] = {"SET", G_KEY, "1"};
    static const size_t lens[] = {3, sizeof(G_KEY) - 1, 1}, key = 1;
    static const struct hilock_guarded_cmd set = {3, argv, lens, 1, &key};
    if (now_ns() >= p->end_ns) {
        if (p->inflight == 0)
            event_base_loopbreak(p->base);
        return;
    }
    int rc = p->guarded
                 ? hilock_lock_guarded(p->lock, &set, 1, 0, on_guarded, p)
                 : redisAsyncCommandArgv(p->ac, on_plain, p, 3, argv, lens);
    if (rc == 0)
        p->inflight++;
    else
        p->failed++;
}

/* The Redis process's user + system CPU time so far, in us; -1 on error. */
static double g_cpu_us(redisContext *rc)
{
    redisReply *r = bench_cmd(rc, "INFO", "cpu", NULL);
    const char *u = r && r->type == REDIS_REPLY_STRING
                        ? strstr(r->str, "used_cpu_user:") : NULL;
    const char *s = r && r->type == REDIS_REPLY_STRING
                        ? strstr(r->str, "used_cpu_sys:") : NULL;
    double v = u && s ? 1e6 * (strtod(u + 14, NULL) + strtod(s + 13, NULL))
                      : -1;
    if (r)
        freeReplyObject(r);
    return v;
}

/* Run one phase of kind guarded for seconds with k in flight; its writes
 * and Redis usec (commandstats delta) into *ops and *usec. 0 or -1. */
static int g_phase(struct gphase *p, redisContext *rc, int guarded, int k,
                   double seconds, long long *ops, long long *usec,
                   double *cpu_us)
{
    const char *cmd = guarded ? "evalsha" : "set";
    long long c0, u0, c1, u1;
    double cpu0 = g_cpu_us(rc);
    if (cpu0 < 0 || bench_cmdstat(rc, cmd, &c0, &u0) != 0)
        return -1;
    p->guarded = guarded;
    p->done = 0;
    p->end_ns = now_ns() + (int64_t)(seconds * 1e9);
    for (int i = 0; i < k; i++)
        g_send(p);
    event_base_dispatch(p->base);
    double cpu1 = g_cpu_us(rc);
    if (cpu1 < 0 || bench_cmdstat(rc, cmd, &c1, &u1) != 0)
        return -1;
    *cpu_us += cpu1 - cpu0;
    *ops += p->done;
    *usec += u1 - u0;
    (void)c1;
    (void)c0;
    return 0;
}

static void on_taken(struct hilock_lock *lock, int status,
                     const struct hilock_result *res, void *arg)
{
    (void)lock;
    (void)res;
    *(int *)arg = status == 0 ? 1 : -1;
}

/* Take the lock; 0 or -1. */
static int g_take(struct gphase *p)
{
    int taken = 0;
    if (hilock_lock_acquire(p->lock, 5000, G_LEASE_MS, on_taken, &taken))
        return -1;
    while (taken == 0)
        event_base_loop(p->base, EVLOOP_ONCE);
    return taken == 1 ? 0 : -1;
}

/* Print the figures; the number of failed checks. */
static int g_report(struct bench *b, const struct gphase *p, double secs,
                    const long long ops[2], const long long usec[2],
                    const double cpu[2], long long plain_failed)
{
    struct table t;
    char v[64], x[48];
    double per[2];
    table_init(&t, "figure", "value", "target", "", NULL);
    for (int g = 1; g >= 0; g--) {
        const char *what = g ? "guarded SET" : "plain SET";
        per[g] = ops[g] ? (double)usec[g] / (double)ops[g] : 0;
        snprintf(x, sizeof x, "%s writes/s", what);
        figure_row(&t, x, fmt_count(ops[g] / secs, v, sizeof v), NULL, 0);
        snprintf(x, sizeof x, "%s Redis us/write", what);
        snprintf(v, sizeof v, "%.2f", per[g]);
        figure_row(&t, x, v, NULL, 0);
        snprintf(x, sizeof x, "%s Redis process us/write", what);
        snprintf(v, sizeof v, "%.2f", ops[g] ? cpu[g] / (double)ops[g] : 0);
        figure_row(&t, x, v, NULL, 0);
        json_obj(b->json, g ? "guarded" : "plain");
        json_num(b->json, "process_us_per_write",
                 ops[g] ? cpu[g] / (double)ops[g] : 0);
        json_num(b->json, "writes_per_s", ops[g] / secs);
        json_num(b->json, "redis_us_per_write", per[g]);
        json_end(b->json);
    }
    double ratio = per[0] > 0 ? per[1] / per[0] : 0;
    snprintf(v, sizeof v, "%.2fx", ratio);
    figure_row(&t, "guarded / plain Redis CPU", v, "<= 2x", ratio <= 2);
    json_num(b->json, "cpu_ratio", ratio);
    snprintf(v, sizeof v, "%lld", p->failed);
    figure_row(&t, "guarded writes failed", v, "== 0", p->failed == 0);
    snprintf(v, sizeof v, "%lld", plain_failed);
    figure_row(&t, "plain SETs failed", v, "== 0", plain_failed == 0);
    table_print(&t, stdout);
    return (p->failed != 0) + (plain_failed != 0);
}

/* The phases, alternating, rounds of each; 0 or -1. */
static int g_run(struct gphase *p, redisContext *rc, int k, double s,
                 int rounds, long long ops[2], long long usec[2],
                 double cpu[2], long long *plain_failed)
{
    long long gfail = 0;
    for (int r = 0; r < rounds; r++)
        for (int g = 1; g >= 0; g--) {
            p->failed = 0;
            if (g_phase(p, rc, g, k, s, &ops[g], &usec[g], &cpu[g]) != 0)
                return -1;
            if (g)
                gfail += p->failed;
            else
                *plain_failed += p->failed;
        }
    p->failed = gfail;
    return 0;
}

int sc_guarded(struct bench *b)
{
    int k = b->o.inflight ? b->o.inflight : 64;
    int rounds = b->o.rounds ? b->o.rounds : 2;
    double s = b->o.seconds > 0 ? b->o.seconds : 2;
    struct hilock_options o;
    struct hilock_client *client = NULL;
    struct gphase p = {0};
    long long ops[2] = {0, 0}, usec[2] = {0, 0}, plain_failed = 0;
    double cpu[2] = {0, 0};
    int rc_ok = -1;
    redisContext *rc = bench_connect(b, 2000);
    hilock_options_init(&o);
    o.node.host = b->host;
    o.node.port = b->port;
    printf("guarded: guarded vs plain SET of one key, %d in flight, %d "
           "rounds of %.1f s each, on %s:%d\n", k, rounds, s, b->host,
           b->port);
    p.base = event_base_new();
    p.ac = redisAsyncConnect(b->host, b->port);
    if (!rc || !p.base || !p.ac || p.ac->err ||
        redisLibeventAttach(p.ac, p.base) != REDIS_OK ||
        hilock_client_new(p.base, &o, &client) != 0 ||
        hilock_lock_new(client, G_NAME, sizeof(G_NAME) - 1, 1, &p.lock) ||
        g_take(&p) != 0) {
        fprintf(stderr, "guarded: could not set up the client or the lock\n");
        goto out;
    }
    progress_begin(b, 2 * rounds * s);
    rc_ok = g_run(&p, rc, k, s, rounds, ops, usec, cpu, &plain_failed);
    progress_end(b);
    if (rc_ok == 0)
        rc_ok = g_report(b, &p, rounds * s, ops, usec, cpu, plain_failed) ? -1 : 0;
out:
    if (p.ac)
        redisAsyncFree(p.ac);
    hilock_lock_free(p.lock);
    hilock_client_free(client);
    if (p.base)
        event_base_free(p.base);
    if (rc)
        redisFree(rc);
    printf("result: %s\n", rc_ok ? "FAIL" : "ok");
    return rc_ok ? 1 : 0;
}
