/* SPDX-License-Identifier: BSD-3-Clause */
/* contend.h -- the contention workers shared by "contended", "faults" and
 * "redlock".
 *
 * P worker processes, each one loop with one hilock client and one raw
 * connection for the critical section, run W waiters in all on ONE lock
 * name. A waiter loops: acquire (watchdog lease, 10 s wait), critical
 * section = GET counter then SET counter+1, release, acquire again. Each
 * worker writes its counters and one record per acquisition; the parent
 * merges them (monotonic stamps compare across processes). */
#ifndef HILOCK_BENCH_CONTEND_H
#define HILOCK_BENCH_CONTEND_H

#include "bench.h"

struct hilock_endpoint;

#define CONTEND_LOCK BENCH_PREFIX "contended"
#define CONTEND_COUNTER BENCH_PREFIX "contended:counter"
#define CONTEND_PROBE BENCH_PREFIX "contended:probe"
#define CONTEND_LOCK2 BENCH_PREFIX "contended:second"
#define CONTEND_WAIT_MS 10000
#define CONTEND_ERRS 24 /* acquire outcomes by -code, 0..23 */

struct contend_cfg {
    int procs;
    int waiters;
    double seconds;
    int drain_ms;  /* after the stop: how long stragglers may take */
    const char *host; /* the section's counter; the lock too without masters */
    int port;
    /* Redlock: the lock on these masters (nmasters 0: on host:port). The
     * caller empties them before the run. */
    const struct hilock_endpoint *masters;
    size_t nmasters;
    /* Sentinel: the lock on the master these sentinels name master_name
     * (nsentinels 0: not). The caller empties it before the run. */
    const struct hilock_endpoint *sentinels;
    size_t nsentinels;
    const char *master_name;
    /* Cluster: the lock on the master of its slot, the map learnt from
     * these nodes (ncluster 0: not). The caller empties it before the
     * run. */
    const struct hilock_endpoint *cluster;
    size_t ncluster;
    uint32_t wait_replicas; /* hilock_options.wait_replicas; 0: no WAIT */
    uint32_t lease_ms;      /* watchdog lease; 0: hilock's default */
    /* Worker 0 also tries the lock CONTEND_PROBE once (wait_ms 0), and
     * releases it, every probe_ms; 0: no probe. It sees what a waiter,
     * whose wait goes on through failures, does not: when a try fails and
     * why. Its callbacks count in acq_ and rel_issued/fired. */
    int probe_ms;
    int fair; /* hilock_options.fair: waiters queue, releases hand over */
    int no_fencing; /* hilock_options.fencing off: no tokens to check */
    /* Each waiter takes a MultiLock over the lock and CONTEND_LOCK2
     * instead of the lock alone (MultiLocks draw no fencing tokens). */
    int multi;
};

/* One acquisition. */
struct crecord {
    int64_t call_ns;  /* acquire issued */
    int64_t acq_ns;   /* acquire callback began */
    int64_t rel_ns;   /* release sent */
    int64_t token;    /* fencing token */
    int64_t seen;     /* counter read in the section; -1: the GET failed */
    int32_t proc;
    int32_t waiter;   /* global waiter id */
    int32_t cs_ok;    /* GET and SET both succeeded */
    int32_t pad;
};

/* A worker's counters (summed over workers by the parent). */
struct cstats {
    uint64_t records;
    uint64_t acq_issued, acq_fired;  /* calls that returned 0; callbacks */
    uint64_t rel_issued, rel_fired;
    uint64_t acq_by_code[CONTEND_ERRS]; /* outcomes: [-status] */
    uint64_t rel_errors;
    uint64_t rel_left;               /* releases that left holds behind */
    uint64_t cs_errors;              /* GET/SET failed or not sent */
    uint64_t lost;                   /* on_lost callbacks */
    uint64_t stuck;                  /* waiters not idle at the drain end */
    uint64_t stop_canceled;          /* waits canceled by the stop */
    int64_t overrun;                 /* hit its hard stop */
    int64_t setup_failed;
    int64_t norep_first_ns;          /* first and last acquire callback */
    int64_t norep_last_ns;           /* with HILOCK_ENOREPLICA; 0: none */
    uint64_t probe_by_code[CONTEND_ERRS]; /* probe outcomes: [-status] */
    int64_t probe_fail_ns;           /* longest run of failed probes */
    int64_t probe_fail_at_ns;        /* its first failure; 0: none */
    int64_t probe_slow_ns;           /* slowest probe acquire: call to */
    int64_t probe_slow_at_ns;        /* callback; when it was called */
};

struct cresults {
    struct crecord *recs; /* sorted by acq_ns */
    size_t n;
    struct cstats sum;
    int failed;           /* workers that failed, overran or sent nothing */
    int no_tokens;        /* MultiLocks: no tokens to check */
    int64_t t_go_ns;      /* when the workers were started */
};

/* The usual configuration: --procs (4) and --waiters (100) of b, no more
 * processes than waiters, seconds and drain_ms as given, the lock and the
 * counter on b's server. */
void contend_cfg_init(struct contend_cfg *cfg, const struct bench *b,
                      double seconds, int drain_ms);

/* Hook the parent runs while the workers run (faults injects them here);
 * it returns when t_end_ns is reached. NULL: only show progress. */
typedef void contend_during_fn(struct bench *b, int64_t t_go_ns,
                               int64_t t_end_ns, void *arg);

/* Reset the keys on host:port, run the workers, merge what they wrote into
 * *res (free res->recs). 0, or -1 when the run could not happen at all. */
int contend_run(struct bench *b, const struct contend_cfg *cfg,
                struct cresults *res, contend_during_fn *during, void *arg);
/* The progress line (critical sections so far, read from the counter every
 * 0.5 s) until t_until_ns; the default while the workers run. */
void contend_progress(struct bench *b, const struct contend_cfg *cfg,
                      int64_t t_go_ns, int64_t t_until_ns);
/* The counter on host:port after the run, or -1. */
long long contend_counter(const struct contend_cfg *cfg);

/* Latency figures shared by both reports: hand-off (release sent -> next
 * acquired), hand-off to a different waiter, wait (call -> acquired). */
struct cfigures {
    struct samples hand, other, wait;
    double prev_share;   /* next holder == previous holder */
    double proc_share;   /* next holder in the same process */
    size_t served;       /* distinct waiters with an acquisition */
    size_t per_min, per_max;
    double cs_per_s;
    double span_s;
};

void contend_figures(const struct cresults *res, int waiters,
                     struct cfigures *f);
void contend_figures_free(struct cfigures *f);
/* Print the figure table with the targets; returns targets missed. */
int contend_print(const struct cfigures *f, const struct cresults *res,
                  const struct contend_cfg *cfg);
/* Write figures and counters as JSON; plot CDFs and CS/s over time. */
void contend_json(struct bench *b, struct cfigures *f,
                  const struct cresults *res);
void contend_plots(struct bench *b, struct cfigures *f,
                   const struct cresults *res, const struct plot_mark *marks,
                   int nmarks);
/* Tokens a restart may hand out again: a master restarted empty has lost
 * its fencing counter, so an acquisition from after_ns on may draw a token
 * up to max (the largest handed out before) once more. */
struct ctoken_exempt {
    int64_t after_ns;
    int64_t max;
};

/* The mutual-exclusion checks: final counter == acquisitions, sections
 * disjoint, tokens strictly increasing (except, with ex, the tokens ex
 * describes: counted apart), each section read the previous write. Prints
 * each and writes "checks" to the JSON; returns how many failed. */
int contend_check(struct bench *b, const struct cresults *res,
                  long long counter, const struct ctoken_exempt *ex);
/* "faults --sentinel" (sc_sentinel.c): the workers on a lock behind
 * Sentinels while its master fails over. Returns the exit status. */
int faults_sentinel(struct bench *b);

/* Print the starved acquires and the errors; returns the errors that fail a
 * run (every acquire outcome but a time-out or a cancel, failed releases and
 * sections, lost locks, stuck waiters). */
uint64_t contend_errors(const struct cstats *s);

#endif
