/* SPDX-License-Identifier: BSD-3-Clause */
/* faultfig.h -- the figures every fault run of "faults" reports, whatever
 * the topology (sc_faultruns.c for Redlock and Cluster, sc_sentinel.c).
 *
 * The input is what contend_run merged (struct cresults: one record per
 * acquisition, sorted by acquisition) plus the faults the parent injected,
 * each a window on the monotonic clock. The output is one table per
 * topology with the same rows: acquisitions, overlaps, lost updates,
 * token regressions, callbacks that never fired, the longest gap with no
 * holder, and for each fault the throughput during it as a share of the
 * throughput just before it. */
#ifndef HILOCK_BENCH_FAULTFIG_H
#define HILOCK_BENCH_FAULTFIG_H

#include "contend.h"

#define FF_FAULTS_MAX 8
#define FF_MIN_WINDOW_NS 1000000000LL /* shares over 1 s at least */

/* One injected fault. */
struct ff_fault {
    const char *name;  /* "SIGSTOP", "kill -9 + restart", ... */
    int64_t t0, t1;    /* injected; over (resumed, or the new master
                          named); 0: not injected */
    int failed;        /* the injection itself failed */
    int failover;      /* t1 - t0 is the topology's own failover time */
};

/* The figures of one run. */
struct ff_figs {
    size_t acquisitions;
    size_t overlaps;          /* began before an earlier release was sent */
    size_t token_regressions; /* a token not above the largest before */
    long long lost_updates;   /* sections with GET and SET ok - counter;
                                 when the counter is unreadable: -1 */
    uint64_t cb_missing;      /* acquire and release callbacks not fired */
    int64_t gap_ns;           /* longest time with no holder */
    int64_t gap_at_ns;        /* where it began, since the start */
    int64_t failover_ns;      /* longest failover among the faults */
    double share[FF_FAULTS_MAX]; /* during / before; -1: nothing before */
    double per_s_before[FF_FAULTS_MAX], per_s_during[FF_FAULTS_MAX];
    int never_after[FF_FAULTS_MAX]; /* no acquisition after it ended */
};

/* Compute the figures of res; counter is the section counter after the
 * run (-1: unreadable), stop_ns when the workers were told to stop. */
void ff_compute(const struct cresults *res, long long counter, int64_t stop_ns,
                const struct ff_fault *f, int n, struct ff_figs *g);

/* Targets of ff_report: the gap is checked against lease_ms plus the
 * longest failover; min_share > 0 also checks every fault's share. */
struct ff_targets {
    uint32_t lease_ms;
    double min_share;
};

/* Print the table of topology title and write it to the JSON under key;
 * t_go is the run's start. Returns the targets missed: a count above that
 * is not 0, a gap or share out of bounds, a fault not injected or not
 * followed by an acquisition. */
int ff_report(struct bench *b, const char *key, const char *title,
              const struct ff_figs *g, const struct ff_fault *f, int n,
              const struct ff_targets *t, int64_t t_go);

/* Print acquire outcomes other than success by name, then release and
 * section errors and lost locks. */
void ff_outcomes(const struct cstats *s);

/* "faults --redlock" and "faults --cluster N" (sc_faultruns.c). Returns
 * the exit status. */
int faults_topology(struct bench *b);

#endif
