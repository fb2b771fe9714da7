/* SPDX-License-Identifier: BSD-3-Clause */
/* faultfig.c -- the figures and the table of a fault run (faultfig.h).
 *
 * Gaps are measured between holders: from the latest release sent before
 * an acquisition to that acquisition, so time spent inside sections does
 * not count, and the last gap runs to the stop. Shares compare sections
 * begun during a fault's window with those begun in a window as long just
 * before it; windows shorter than FF_MIN_WINDOW_NS are widened to it, so
 * an instant fault (a reshard step) is not judged on a handful of
 * sections. */
#include "faultfig.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <hilock/hilock.h>

/* Acquisitions of res begun in [from, to). */
static size_t begun_within(const struct cresults *res, int64_t from,
                           int64_t to)
{
    size_t n = 0;
    for (size_t i = 0; i < res->n; i++)
        n += res->recs[i].acq_ns >= from && res->recs[i].acq_ns < to;
    return n;
}

/* Fault i's shares and whether the lock was taken after it. */
static void ff_fault_figs(const struct cresults *res, const struct ff_fault *f,
                          int i, struct ff_figs *g)
{
    int64_t len = f->t1 - f->t0;
    len = len < FF_MIN_WINDOW_NS ? FF_MIN_WINDOW_NS : len;
    int64_t from = f->t0 - len < res->t_go_ns ? res->t_go_ns : f->t0 - len;
    size_t before = begun_within(res, from, f->t0);
    size_t during = begun_within(res, f->t0, f->t0 + len);
    g->per_s_before[i] = f->t0 > from ? (double)before * 1e9 /
                                            (double)(f->t0 - from)
                                      : 0;
    g->per_s_during[i] = (double)during * 1e9 / (double)len;
    g->share[i] = g->per_s_before[i] > 0
                      ? g->per_s_during[i] / g->per_s_before[i] : -1;
    g->never_after[i] = !f->t1 || !res->n ||
                        res->recs[res->n - 1].acq_ns < f->t1;
    if (f->failover && f->t1 - f->t0 > g->failover_ns)
        g->failover_ns = f->t1 - f->t0;
}

void ff_compute(const struct cresults *res, long long counter, int64_t stop_ns,
                const struct ff_fault *f, int n, struct ff_figs *g)
{
    const struct crecord *c = res->recs;
    int64_t max_rel = res->t_go_ns, max_token = INT64_MIN;
    size_t ok_sections = 0;
    memset(g, 0, sizeof(*g));
    g->acquisitions = res->n;
    for (size_t i = 0; i < res->n; i++) {
        if (c[i].acq_ns - max_rel > g->gap_ns) {
            g->gap_ns = c[i].acq_ns - max_rel;
            g->gap_at_ns = max_rel - res->t_go_ns;
        }
        g->overlaps += i > 0 && c[i].acq_ns <= max_rel;
        g->token_regressions += c[i].token <= max_token;
        ok_sections += c[i].cs_ok != 0;
        max_rel = c[i].rel_ns > max_rel ? c[i].rel_ns : max_rel;
        max_token = c[i].token > max_token ? c[i].token : max_token;
    }
    if (stop_ns - max_rel > g->gap_ns) {
        g->gap_ns = stop_ns - max_rel;
        g->gap_at_ns = max_rel - res->t_go_ns;
    }
    g->lost_updates = counter >= 0 ? (long long)ok_sections - counter : -1;
    g->cb_missing = (res->sum.acq_issued - res->sum.acq_fired) +
                    (res->sum.rel_issued - res->sum.rel_fired);
    for (int i = 0; i < n && i < FF_FAULTS_MAX; i++)
        ff_fault_figs(res, &f[i], i, g);
}

/* One count that must be 0. Returns 1 when it is not. */
static int ff_zero(struct table *t, const char *figure, long long v)
{
    char s[32];
    snprintf(s, sizeof s, "%lld", v);
    figure_row(t, figure, s, "0", v == 0);
    return v != 0;
}

/* A row per fault: when, how long, the share. Returns targets missed. */
static int ff_fault_rows(struct table *t, const struct ff_figs *g,
                         const struct ff_fault *f, int n, double min_share,
                         int64_t t_go)
{
    char fig[96], v[96], tgt[32], d[32];
    int missed = 0;
    snprintf(tgt, sizeof tgt, ">= %.0f %%", min_share * 100);
    for (int i = 0; i < n; i++) {
        int ok = !f[i].failed && f[i].t1 && !g->never_after[i] &&
                 (min_share <= 0 || g->share[i] >= min_share);
        snprintf(fig, sizeof fig, "%s at %.1f s (%s)", f[i].name,
                 (double)(f[i].t0 - t_go) / 1e9,
                 f[i].t1 ? fmt_ns(f[i].t1 - f[i].t0, d, sizeof d) : "-");
        if (f[i].failed || !f[i].t1)
            snprintf(v, sizeof v, "not injected");
        else if (g->never_after[i])
            snprintf(v, sizeof v, "no acquisition after it");
        else
            snprintf(v, sizeof v, "%.0f %% (%.0f/s of %.0f/s)",
                     g->share[i] * 100, g->per_s_during[i],
                     g->per_s_before[i]);
        figure_row(t, fig, v, min_share > 0 ? tgt : "acquired after", ok);
        missed += !ok;
    }
    return missed;
}

static void ff_json(struct json *j, const char *key, const struct ff_figs *g,
                    const struct ff_fault *f, int n, int64_t bound, int missed,
                    int64_t t_go)
{
    json_obj(j, key);
    json_int(j, "acquisitions", (int64_t)g->acquisitions);
    json_int(j, "overlaps", (int64_t)g->overlaps);
    json_int(j, "lost_updates", g->lost_updates);
    json_int(j, "token_regressions", (int64_t)g->token_regressions);
    json_int(j, "callbacks_missing", (int64_t)g->cb_missing);
    json_num(j, "longest_gap_no_holder_s", (double)g->gap_ns / 1e9);
    json_num(j, "that_gap_began_s", (double)g->gap_at_ns / 1e9);
    json_num(j, "gap_bound_s", (double)bound / 1e9);
    json_arr(j, "faults");
    for (int i = 0; i < n; i++) {
        json_obj(j, NULL);
        json_str(j, "fault", f[i].name);
        json_num(j, "at_s", (double)(f[i].t0 - t_go) / 1e9);
        json_num(j, "duration_s", (double)(f[i].t1 - f[i].t0) / 1e9);
        json_bool(j, "injected", !f[i].failed && f[i].t1);
        json_num(j, "per_s_before", g->per_s_before[i]);
        json_num(j, "per_s_during", g->per_s_during[i]);
        json_num(j, "share", g->share[i]);
        json_bool(j, "acquired_after", !g->never_after[i]);
        json_end(j);
    }
    json_end(j);
    json_int(j, "targets_missed", missed);
    json_end(j);
}

int ff_report(struct bench *b, const char *key, const char *title,
              const struct ff_figs *g, const struct ff_fault *f, int n,
              const struct ff_targets *tg, int64_t t_go)
{
    struct table t;
    char v[64], tgt[64], a[32];
    int64_t bound = (int64_t)tg->lease_ms * 1000000 + g->failover_ns;
    int missed = 0;
    printf("%s\n", title);
    table_init(&t, "figure", "value", "target", "", NULL);
    snprintf(v, sizeof v, "%zu", g->acquisitions);
    figure_row(&t, "acquisitions", v, "> 0", g->acquisitions > 0);
    missed += g->acquisitions == 0;
    missed += ff_zero(&t, "overlaps", (long long)g->overlaps);
    missed += ff_zero(&t, "lost updates", g->lost_updates);
    missed += ff_zero(&t, "token regressions",
                      (long long)g->token_regressions);
    missed += ff_zero(&t, "callbacks that never fired",
                      (long long)g->cb_missing);
    snprintf(v, sizeof v, "%s from %.1f s", fmt_ns(g->gap_ns, a, sizeof a),
             (double)g->gap_at_ns / 1e9);
    snprintf(tgt, sizeof tgt, "<= lease %u ms + failover %s", tg->lease_ms,
             fmt_ns(g->failover_ns, a, sizeof a));
    figure_row(&t, "longest gap with no holder", v, tgt, g->gap_ns <= bound);
    missed += g->gap_ns > bound;
    missed += ff_fault_rows(&t, g, f, n, tg->min_share, t_go);
    table_print(&t, stdout);
    ff_json(b->json, key, g, f, n, bound, missed, t_go);
    return missed;
}

void ff_outcomes(const struct cstats *s)
{
    printf("  acquire outcomes:");
    for (int c = 0; c < CONTEND_ERRS; c++)
        if (s->acq_by_code[c])
            printf(" %s %" PRIu64, c == 0 ? "ok"
                                   : c == CONTEND_ERRS - 1 ? "call-error"
                                   : hilock_err_name(-c),
                   s->acq_by_code[c]);
    printf("\n  release errors %" PRIu64 ", section errors %" PRIu64
           ", locks lost %" PRIu64 "\n",
           s->rel_errors, s->cs_errors, s->lost);
}
