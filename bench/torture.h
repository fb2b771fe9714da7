/* SPDX-License-Identifier: BSD-3-Clause */
/* torture.h -- the workers of "torture": every client kind on many names.
 *
 * P worker processes run W waiters in all. Each process has one hilock
 * client per kind -- default (the plain fast path), fair, a fixed explicit
 * lease, scripts only -- and one raw connection for critical sections; its
 * waiters take the kinds in turn. A waiter loops: pick one of N names at
 * random, acquire it (wait TORTURE_WAIT_MS), GET the name's counter, SET it
 * to that value + 1 unless on_lost came first, release. A process stops at
 * --seconds or at its share of --acquisitions, whichever comes first; it
 * watches its waiters for hangs and writes one record per acquisition. The
 * parent (sc_torture.c) injects the faults and checks the merged records. */
#ifndef HILOCK_BENCH_TORTURE_H
#define HILOCK_BENCH_TORTURE_H

#include "bench.h"

enum tkind { TK_DEFAULT, TK_FAIR, TK_FIXED, TK_SCRIPTS, TK_N };

#define TORTURE_LOCK BENCH_PREFIX "torture:"      /* + the name's index */
#define TORTURE_COUNTER BENCH_PREFIX "torture:n:" /* + the name's index */
#define TORTURE_WAIT_MS 5000        /* wait bound of every acquire */
#define TORTURE_FIXED_LEASE_MS 2000 /* lease_ms of the fixed-lease kind */
#define TORTURE_ERRS 24             /* outcomes by -code, 0..23 */
#define TORTURE_NAMES_MAX 4096
#define TORTURE_HANGS_KEPT 8        /* hangs described in detail */
#define TORTURE_LOGS_KEPT 6         /* distinct warnings kept per worker */
#define TORTURE_LOG_LEN 160

/* Messages of a worker to the parent while it runs (after FAN_GO). */
enum { TMSG_PROGRESS = 10, TMSG_DONE = 11 };

struct torture_cfg {
    int procs;
    int waiters;       /* in all */
    int names;
    double seconds;
    long quota;        /* acquisitions per process; 0: no target */
    uint32_t lease_ms; /* watchdog lease of the kinds without a lease */
    int drain_ms;      /* after the stop: what is under way may finish */
    int slack_ms;      /* past its bound, a waiter without progress hangs */
    int gap_ms;        /* parent: from the end of a fault to the next */
    const char *host;
    int port;
};

/* How a section's SET ended (trec.flags & TR_WRITE). */
enum { TW_NONE = 0, TW_ACKED = 1, TW_UNKNOWN = 2, TW_REFUSED = 3 };

#define TR_WRITE 0x03     /* TW_* */
#define TR_LOST 0x04      /* on_lost came during the section */
#define TR_SKIPPED 0x08   /* the SET was not sent: on_lost came first */
#define TR_GET_OK 0x10    /* seen is what GET returned */
#define TR_LATE 0x20      /* the SET was sent while held and answered after
                             on_lost: it may have run after the lease
                             (the pause no lease closes; docs/guarded-writes.md) */

/* One acquisition. The holder believed it held the lock over
 * [acq_ns, end_ns]: end_ns is the release's sending, or on_lost when that
 * came first. */
struct trec {
    int64_t call_ns; /* acquire called */
    int64_t acq_ns;  /* its callback began */
    int64_t end_ns;
    int64_t token;   /* fencing token (fair kind), else 0 */
    int64_t seen;    /* the counter read */
    int32_t waiter;  /* global waiter id */
    int16_t name;
    uint8_t kind;
    uint8_t flags;   /* TR_* */
};

/* A waiter seen without progress past its bound. */
struct thang {
    int64_t since_ns; /* its last progress */
    int64_t at_ns;    /* when it was noticed */
    int32_t waiter;
    int32_t kind;
    int32_t state;    /* see torture_state_name */
    int32_t after_stop;
};

/* A worker's counters per kind (summed over workers by the parent). */
struct tkstats {
    uint64_t acq_issued, acq_fired; /* calls that returned 0; callbacks */
    uint64_t rel_issued, rel_fired;
    uint64_t acq_by_code[TORTURE_ERRS]; /* outcomes by -status */
    uint64_t rel_by_code[TORTURE_ERRS];
    uint64_t call_errors;   /* acquire/release calls that returned an error */
    uint64_t rel_left;      /* releases answered with holds left */
    uint64_t lost;          /* on_lost during a section */
    uint64_t lost_outside;  /* on_lost with no section under way */
    uint64_t lost_when[5];  /* of those: by the waiter's state */
    uint64_t lost_other;    /* of those: on a handle not in use */
    uint64_t skipped;       /* SETs not sent because on_lost came first */
    uint64_t get_failed, set_unknown, set_refused, set_late;
    uint64_t hangs;         /* waiters without progress past their bound */
    uint64_t stuck;         /* waiters not idle at the drain's end */
};

struct tstats {
    uint64_t records;
    struct tkstats k[TK_N];
    uint64_t nhangs;        /* hang[] in use */
    struct thang hang[TORTURE_HANGS_KEPT];
    uint64_t log_warn, log_error;  /* the clients' log lines */
    uint64_t nlogs;         /* logs[] in use */
    char logs[TORTURE_LOGS_KEPT][TORTURE_LOG_LEN]; /* the first distinct */
    int64_t stop_ns;        /* when this worker stopped acquiring */
    int64_t setup_failed;
    int64_t overrun;        /* hit its hard stop */
};

/* What the parent merged. */
struct tresults {
    struct trec *recs; /* sorted by name, then acq_ns */
    size_t n;
    struct tstats sum;     /* logs: the first distinct of all workers */
    int failed;        /* workers that failed, overran or sent nothing */
};

/* The worker's body for fan_spawn (arg: the struct torture_cfg). */
int torture_worker(int index, int fd, FILE *out, void *arg);
/* Add what a worker wrote to *res. 0 or -1. */
int torture_collect(FILE *f, struct tresults *res);
/* "waiting", "section", ... for struct thang.state. */
const char *torture_state_name(int state);
const char *torture_kind_name(int kind);

#endif
