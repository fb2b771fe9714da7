/* SPDX-License-Identifier: BSD-3-Clause */
/* holders.h -- the section workers shared by "readmostly" and "semaphore".
 *
 * Groups of worker processes, each process one loop with one hilock client,
 * run handles of one kind (a mutex, one side of a read-write lock, an
 * expiring permit, a counting semaphore) on ONE name. A handle loops:
 * acquire (watchdog lease, HOLD_WAIT_MS wait), hold for hold_us (a timer:
 * the section), release, pause for pause_us, again, until the run's time is
 * up. Each worker writes its counters and one record per section; the
 * parent merges them (monotonic stamps compare across processes) and
 * checks them. A record spans from the acquire's callback to the sending
 * of the release, which lies inside the hold Redis granted: sections that
 * overlap in the records overlapped in Redis too. */
#ifndef HILOCK_BENCH_HOLDERS_H
#define HILOCK_BENCH_HOLDERS_H

#include "bench.h"

#define HOLD_WAIT_MS 10000
#define HOLD_GROUPS 2

enum hold_kind { HOLD_MUTEX, HOLD_READ, HOLD_WRITE, HOLD_PERMIT, HOLD_SEM };

/* Processes that run handles of one kind. */
struct hold_group {
    enum hold_kind kind;
    int procs;
    int handles;   /* in all, spread over the processes */
    int hold_us;   /* length of a section */
    int pause_us;  /* between a release and the next acquire */
};

struct hold_cfg {
    const char *name;      /* the lock or semaphore */
    const char *host;
    int port;
    double seconds;
    uint32_t permits;      /* semaphores: set when none are (0: not) */
    struct hold_group g[HOLD_GROUPS];
    int ngroups;
};

/* One section. */
struct hold_rec {
    int64_t call_ns;  /* acquire issued */
    int64_t acq_ns;   /* acquire callback began */
    int64_t rel_ns;   /* release sent */
    int32_t handle;   /* global handle id */
    int32_t group;
};

/* A worker's counters (summed over workers by the parent). */
struct hold_stats {
    uint64_t records;
    uint64_t acq_issued, acq_fired;  /* calls that returned 0; callbacks */
    uint64_t rel_issued, rel_fired;
    uint64_t timeouts;               /* acquires that waited HOLD_WAIT_MS */
    uint64_t errors;                 /* any other failure */
    uint64_t lost;                   /* on_lost callbacks */
    uint64_t stuck;                  /* handles not idle at the hard stop */
};

struct hold_results {
    struct hold_rec *recs;  /* sorted by acq_ns */
    size_t n;
    struct hold_stats sum;
    int failed;             /* workers that failed, overran or sent nothing */
    int64_t t_go_ns;
};

/* Reset the bench's keys, run the workers, merge what they wrote into *res
 * (free res->recs). 0, or -1 when the run could not happen at all. */
int holders_run(struct bench *b, const struct hold_cfg *cfg,
                struct hold_results *res);

/* What the merged records show. Exclusive sections (a mutex's, a
 * writer's) must overlap no other section. */
struct hold_figures {
    size_t overlaps;        /* exclusive sections overlapping another */
    size_t most_at_once;    /* most sections open at one moment */
    struct {
        size_t sections;
        double per_s;       /* sections per second of the run */
        struct samples wait;  /* acquire call -> callback, ns */
        size_t served_min, served_max;  /* sections per handle */
    } g[HOLD_GROUPS];
};

void holders_figures(const struct hold_cfg *cfg, struct hold_results *res,
                     struct hold_figures *f);
void holders_figures_free(struct hold_figures *f);
/* Print the counters every run must get right (every callback once, no
 * error, no loss, no stuck handle, no failed worker) as rows of t; the
 * number of them that failed. */
int holders_check_rows(struct table *t, const struct hold_results *res);
/* "p50 / p99" of the waits s into buf. Returns buf. */
const char *holders_p50_p99(struct samples *s, char *buf, size_t len);
/* The same figures into the JSON object key. */
void holders_json(struct json *j, const char *key, const struct hold_cfg *cfg,
                  const struct hold_results *res, struct hold_figures *f);

#endif
