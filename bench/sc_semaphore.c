/* SPDX-License-Identifier: BSD-3-Clause */
/* sc_semaphore.c -- waiters contending for the N permits of a semaphore.
 *
 * A semaphore of N permits; P processes run W waiters in all, each taking
 * one permit (an expiring one under the watchdog, or with --counting one of
 * a counting semaphore), holding it for a fixed section, giving it back,
 * again. Checks: never more than N sections open at once (and N reached,
 * with N waiters or more: the permits are shared), every permit back at the end (the counter reads
 * N), every callback fired once, no request error, no permit lost, no
 * waiter stuck. Figures: acquisitions/s, wait p50/p99, and fairness: the
 * fewest and the most sections a waiter had. */
#include "holders.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define SEM_NAME BENCH_PREFIX "semaphore"

/* The permits available after the run: the semaphore's counter. */
static long long permits_left(struct bench *b)
{
    redisContext *rc = bench_connect(b, 2000);
    long long n = rc ? bench_int(rc, "GET", SEM_NAME, NULL) : LLONG_MIN;
    if (rc)
        redisFree(rc);
    return n;
}

/* Print the figures and checks; the number of failed checks. */
static int sem_report(struct bench *b, const struct hold_cfg *cfg,
                      struct hold_results *res, struct hold_figures *f)
{
    struct table t;
    char v[64], x[32];
    long long left = permits_left(b);
    size_t n = cfg->permits, w = (size_t)cfg->g[0].handles;
    size_t reach = n < w ? n : w;  /* what the waiters can fill */
    table_init(&t, "figure", "value", "target", "", NULL);
    snprintf(v, sizeof v, "%zu", f->g[0].sections);
    figure_row(&t, "acquisitions", v, NULL, 0);
    figure_row(&t, "acquisitions/s", fmt_count(f->g[0].per_s, v, sizeof v),
               NULL, 0);
    figure_row(&t, "wait p50 / p99",
               holders_p50_p99(&f->g[0].wait, v, sizeof v), NULL, 0);
    snprintf(v, sizeof v, "%zu .. %zu", f->g[0].served_min,
             f->g[0].served_max);
    figure_row(&t, "sections per waiter (min .. max)", v, NULL, 0);
    snprintf(v, sizeof v, "%zu", f->most_at_once);
    snprintf(x, sizeof x, "<= %zu", n);
    figure_row(&t, "most holders at once", v, x, f->most_at_once <= n);
    snprintf(x, sizeof x, "== %zu", reach);
    figure_row(&t, "most holders at once reached the permits", v, x,
               f->most_at_once == reach);
    snprintf(x, sizeof x, "== %zu", n);
    snprintf(v, sizeof v, "%lld", left);
    figure_row(&t, "permits available at the end", v, x, left == (long long)n);
    int failed = holders_check_rows(&t, res);
    table_print(&t, stdout);
    return failed + (f->most_at_once > n) + (f->most_at_once != reach) +
           (left != (long long)n);
}

int sc_semaphore(struct bench *b)
{
    int procs = b->o.procs ? b->o.procs : 2;
    int waiters = b->o.waiters ? b->o.waiters : 20;
    int hold_us = (int)((b->o.given & OPT_HOLD ? b->o.hold_ms : 2) * 1000);
    uint32_t permits = b->o.permits ? (uint32_t)b->o.permits : 4;
    struct hold_cfg cfg = {
        SEM_NAME, b->host, b->port, b->o.seconds > 0 ? b->o.seconds : 5,
        permits,
        {{b->o.counting ? HOLD_SEM : HOLD_PERMIT,
          procs < waiters ? procs : waiters, waiters, hold_us, 0}},
        1};
    struct hold_results res;
    struct hold_figures f;
    printf("semaphore: %u %s permits, %d processes x %d waiters in all, "
           "sections of %.2f ms, %.1f s, on %s:%d\n",
           permits, b->o.counting ? "counting" : "expiring", cfg.g[0].procs,
           waiters, hold_us / 1000.0, cfg.seconds, b->host, b->port);
    progress_begin(b, cfg.seconds);
    if (holders_run(b, &cfg, &res) != 0) {
        fprintf(stderr, "semaphore: the workers could not be started\n");
        return 1;
    }
    holders_figures(&cfg, &res, &f);
    int failed = sem_report(b, &cfg, &res, &f);
    holders_json(b->json, "semaphore", &cfg, &res, &f);
    holders_figures_free(&f);
    free(res.recs);
    printf("result: %s\n", failed ? "FAIL" : "ok");
    return failed ? 1 : 0;
}
