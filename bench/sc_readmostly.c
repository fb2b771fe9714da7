/* SPDX-License-Identifier: BSD-3-Clause */
/* sc_readmostly.c -- many readers and one writer on one read-write lock.
 *
 * P processes run W reader handles in all on the read side of one name:
 * take it, hold it for a short section, give it back, again. One more
 * process runs a writer that takes the write side every E ms for a section
 * as short. Then the same load on a plain mutex, readers and writer alike,
 * to show what sharing buys. Checks, for each run: no section of the
 * writer (of anyone, on the mutex) overlaps another section, every callback
 * fired once, no request error, no lock lost, no handle stuck. Figures:
 * reader sections/s, writer acquisitions/s, the waits of both (p50, p99),
 * the most sections open at once. */
#include "holders.h"

#include <stdlib.h>
#include <string.h>

#define RM_NAME BENCH_PREFIX "readmostly"

/* One run: readers and the writer as kind (a read-write lock's sides, or
 * both HOLD_MUTEX); its figures in *f and the check rows in t. The number
 * of failed checks, or -1 when the run could not happen. */
static int rm_run(struct bench *b, struct hold_cfg *cfg, int mutex,
                  struct hold_results *res, struct hold_figures *f,
                  struct table *t)
{
    char v[32], x[32];
    cfg->g[0].kind = mutex ? HOLD_MUTEX : HOLD_READ;
    cfg->g[1].kind = mutex ? HOLD_MUTEX : HOLD_WRITE;
    if (holders_run(b, cfg, res) != 0)
        return -1;
    holders_figures(cfg, res, f);
    int failed = holders_check_rows(t, res);
    snprintf(v, sizeof v, "%zu", f->overlaps);
    figure_row(t, mutex ? "sections overlapping another"
                        : "writer sections overlapping another",
               v, "0", f->overlaps == 0);
    failed += f->overlaps != 0;
    snprintf(v, sizeof v, "%zu", f->most_at_once);
    /* Readers share the read lock: two or more of them are inside at
     * once at some point, even on a busy machine; a mutex lets one in. */
    int want = mutex || cfg->g[0].handles < 2 ? 1 : 2;
    snprintf(x, sizeof x, want == 1 ? "== 1" : ">= 2");
    int shared = want == 1 ? f->most_at_once == 1 : f->most_at_once >= 2;
    figure_row(t, "most sections open at once", v, x, shared);
    failed += !shared;
    snprintf(v, sizeof v, "%zu", f->g[1].sections);
    figure_row(t, "writer sections", v, "> 0", f->g[1].sections > 0);
    failed += f->g[1].sections == 0;
    return failed;
}

/* The side-by-side table of the two runs. */
static void rm_print(struct hold_figures *f)
{
    struct table t;
    char a[64], c[64];
    table_init(&t, "figure", "read-write lock", "mutex", NULL);
    table_row(&t, "reader sections/s", fmt_count(f[0].g[0].per_s, a, sizeof a),
              fmt_count(f[1].g[0].per_s, c, sizeof c));
    table_row(&t, "reader wait p50 / p99",
              holders_p50_p99(&f[0].g[0].wait, a, sizeof a),
              holders_p50_p99(&f[1].g[0].wait, c, sizeof c));
    table_row(&t, "writer acquisitions/s",
              fmt_count(f[0].g[1].per_s, a, sizeof a),
              fmt_count(f[1].g[1].per_s, c, sizeof c));
    table_row(&t, "writer wait p50 / p99",
              holders_p50_p99(&f[0].g[1].wait, a, sizeof a),
              holders_p50_p99(&f[1].g[1].wait, c, sizeof c));
    snprintf(a, sizeof a, "%zu", f[0].most_at_once);
    snprintf(c, sizeof c, "%zu", f[1].most_at_once);
    table_row(&t, "most sections open at once", a, c);
    snprintf(a, sizeof a, "%zu .. %zu", f[0].g[0].served_min,
             f[0].g[0].served_max);
    snprintf(c, sizeof c, "%zu .. %zu", f[1].g[0].served_min,
             f[1].g[0].served_max);
    table_row(&t, "sections per reader (min .. max)", a, c);
    table_print(&t, stdout);
    if (f[1].g[0].per_s > 0)
        printf("sharing: %.1fx the reader sections/s of a mutex\n",
               f[0].g[0].per_s / f[1].g[0].per_s);
}

int sc_readmostly(struct bench *b)
{
    int procs = b->o.procs ? b->o.procs : 2;
    int readers = b->o.waiters ? b->o.waiters : 20;
    int hold_us = (int)((b->o.given & OPT_HOLD ? b->o.hold_ms : 1) * 1000);
    int every_ms = b->o.given & OPT_EVERY ? (int)b->o.every_ms : 10;
    struct hold_cfg cfg = {
        RM_NAME, b->host, b->port, b->o.seconds > 0 ? b->o.seconds : 5, 0,
        {{HOLD_READ, procs < readers ? procs : readers, readers, hold_us, 0},
         {HOLD_WRITE, 1, 1, hold_us, every_ms * 1000}},
        2};
    struct hold_results res[2];
    struct hold_figures f[2];
    struct table checks[2];
    int failed = 0;
    printf("readmostly: %d processes x %d readers in all + 1 writer every "
           "%d ms, sections of %.2f ms, %.1f s per run, on %s:%d\n",
           cfg.g[0].procs, readers, every_ms, hold_us / 1000.0, cfg.seconds,
           b->host, b->port);
    progress_begin(b, 2 * cfg.seconds);
    for (int m = 0; m < 2; m++) {
        table_init(&checks[m], "figure", "value", "target", "", NULL);
        int rc = rm_run(b, &cfg, m, &res[m], &f[m], &checks[m]);
        if (rc < 0) {
            fprintf(stderr, "readmostly: the workers could not be started\n");
            return 1;
        }
        failed += rc;
    }
    rm_print(f);
    for (int m = 0; m < 2; m++) {
        printf("checks, %s:\n", m ? "mutex" : "read-write lock");
        table_print(&checks[m], stdout);
        holders_json(b->json, m ? "mutex" : "rwlock", &cfg, &res[m], &f[m]);
        holders_figures_free(&f[m]);
        free(res[m].recs);
    }
    printf("result: %s\n", failed ? "FAIL" : "ok");
    return failed ? 1 : 0;
}
