/* SPDX-License-Identifier: BSD-3-Clause */
/* sc_sentinel.c -- "faults --sentinel": the contended lock while its master
 * fails over under Redis Sentinel.
 *
 * One deployment (tests/redis_sentinel.h): a master, one replica and three
 * Sentinels, started once, both data nodes with the append-only file on
 * (CONFIG SET appendonly yes, also on a master restarted after its kill). Four runs of the workers of "contended"
 * (contend.h: P processes, W waiters in all, one lock, fencing on, the
 * critical section GET + SET of a counter), each with one failover at 30 %
 * of the run:
 *   1. SENTINEL FAILOVER, WAIT off     2. SENTINEL FAILOVER, WAIT 1
 *   3. kill -9 of the master, WAIT off 4. kill -9 of the master, WAIT 1
 * The clients find the master through the Sentinels. The counter lives on
 * the bench's own plain redis-server, which no fault touches, so it sees
 * every section's GET and SET whichever master granted the lock. Worker 0
 * also probes: it tries another lock once (wait_ms 0) every 100 ms, which
 * shows the failures a waiter's wait hides (it goes on through them).
 *
 * The parent injects the fault with blocking calls of the harness
 * (rt_failover; for the kill rs_kill9 and then the wait for a new master
 * that rt_kill_master does, so that the kill itself is timed; rt_settle):
 * the load runs in the worker processes, so it goes on meanwhile. After a
 * kill -9 the old master is restarted at once, empty, and made a replica
 * of the new master (REPLICAOF); until it has synced the new master has no
 * replica, so with WAIT 1 acquisitions fail with HILOCK_ENOREPLICA. Between
 * runs the deployment settles (the old master a replica again) and the
 * lock's keys are deleted on the master. The watchdog lease is 5 s unless
 * --lease says otherwise, so that a lock left behind by a failover runs
 * out within the run.
 *
 * Figures per run: critical sections; overlaps (a section that began
 * before an earlier one's release was sent), sections that did not read
 * the previous section's write, updates of the counter lost, fencing
 * tokens not above an earlier one (apart: the largest token again, to the
 * waiter that had it, which is a re-entry on a hold a lost release left
 * behind), releases that left a hold; callbacks that never fired; acquire
 * and probe outcomes; waits that timed out; the processes the lock reached
 * once the deployment settled, and the processes subscribed to the lock's
 * channel on the master a second before the stop; the longest gap between
 * consecutive acquisitions that ends after the fault began (how long the
 * lock was unavailable), beside the longest before it; and faultfig.h's
 * figures: the longest time with no holder (release sent to the next
 * acquisition) against the lease plus the failover, and the throughput
 * while the new master was not yet named as a share of that before.
 *
 * A failover that loses a write may give the lock to two holders: with
 * WAIT off that is what the figures measure, not a failure; with WAIT 1 an
 * overlap, a lost update, a token out of order or a time with no holder
 * longer than the lease plus the failover fails the run. So do
 * callbacks that never fired, stuck waiters, a fault that could not be
 * injected, no acquisition after the fault, a process the lock no longer
 * reaches or that is not subscribed at the end, and workers that failed. */
#include "faultfig.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <hilock/hilock.h>

#include "keys.h" /* src/: the fencing counter's name */
#include "redis_sentinel.h"

#define S_SENTINELS 3
#define S_NAME "hilock-bench"
#define S_AT 0.3             /* the fault, as a fraction of a run */
#define S_DRAIN_MS 6000      /* > request timeout: every callback is due */
#define S_DEFAULT_SECONDS 15
#define S_DEFAULT_LEASE_MS 5000 /* a lease that runs out within a run */
#define S_RUNS 4
#define S_PROBE_MS 100
#define S_FENCE KEYS_FENCE_HEAD CONTEND_LOCK KEYS_TAG_TAIL
#define S_CHANNEL KEYS_CHANNEL_HEAD CONTEND_LOCK KEYS_TAG_TAIL

enum s_fault { S_FAILOVER, S_KILL };

static const struct {
    enum s_fault fault;
    uint32_t wait;
    const char *name;
    const char *label; /* its column in the table */
} s_plan[S_RUNS] = {
    {S_FAILOVER, 0, "SENTINEL FAILOVER, WAIT off", "FAILOVER"},
    {S_FAILOVER, 1, "SENTINEL FAILOVER, WAIT 1", "FAILOVER+WAIT 1"},
    {S_KILL, 0, "kill -9 master, WAIT off", "kill -9"},
    {S_KILL, 1, "kill -9 master, WAIT 1", "kill -9+WAIT 1"},
};

/* What the parent did during one run, on the monotonic clock. */
struct s_fault_log {
    struct rt_sentinel *t;
    const struct contend_cfg *cfg;
    enum s_fault fault;
    int old_port, new_port;
    int64_t t0;      /* command sent, or master killed */
    int64_t t1;      /* every Sentinel names the new master */
    int64_t t2;      /* settled: the old master a replica with its link up */
    int failed;      /* a harness call failed */
    long long numsub; /* subscribers of the lock's channel on the master
                         a second before the stop; -1: unknown */
};

/* One run's figures. */
struct s_run {
    size_t sections, overlaps, mismatches;
    size_t token_drops;      /* a token not above the largest before, to
                                another waiter or lower */
    size_t token_again;      /* the largest token again, to the waiter that
                                had it: a re-entry on a hold left behind */
    long long counter;       /* final value; -1: unreadable */
    long long lost_updates;  /* sections with GET and SET ok - counter */
    uint64_t cb_missing;
    int64_t gap_before;      /* longest acquisition gap ending before t0 */
    int64_t gap_around;      /* longest ending after t0 (or to the end) */
    int64_t gap_at;          /* where that gap began, since t0 */
    int never_after;         /* none after the new master was named */
    struct s_fault_log log;
    struct cstats sum;
    int failed_workers;
    int procs;               /* worker processes */
    size_t *after;           /* acquisitions per process after t2 */
    int served_after;        /* processes with one or more of them */
    int checks_failed;
    int64_t t_go;            /* the workers were started */
    struct rate rate;        /* critical sections/s, for the plot */
    struct ff_fault fault;   /* [t0, t1]: until the new master was named */
    struct ff_figs ff;       /* the figures every fault run reports */
};

/* REPLICAOF 127.0.0.1 port on srv. 0 or -1. */
static int s_replicaof(struct rs_server *srv, int port)
{
    char p[16];
    snprintf(p, sizeof p, "%d", port);
    char *ok = rs_str(srv, "REPLICAOF", "127.0.0.1", p, (char *)NULL);
    int bad = !ok || strncmp(ok, "OK", 2) != 0; /* "OK Already connected" */
    if (bad)
        fprintf(stderr, "faults: REPLICAOF on port %d: %s\n", rs_port(srv),
                ok ? ok : "no reply");
    free(ok);
    return bad ? -1 : 0;
}

/* Turn the append-only file on (appendfsync everysec): the harness starts
 * every server without persistence, and a restart does so again. 0 or
 * -1. */
static int s_aof(struct rs_server *srv)
{
    char *ok = rs_str(srv, "CONFIG", "SET", "appendonly", "yes",
                      (char *)NULL);
    int bad = !ok || strcmp(ok, "OK") != 0;
    if (bad)
        fprintf(stderr, "faults: CONFIG SET appendonly yes on port %d: %s\n",
                rs_port(srv), ok ? ok : "no reply");
    free(ok);
    return bad ? -1 : 0;
}

/* kill -9 master old, then wait until every Sentinel names another one
 * (rt_kill_master's steps, with the kill itself timed). Its index or -1. */
static int s_kill(struct s_fault_log *l, int old)
{
    l->t0 = now_ns();
    if (rs_kill9(rt_server(l->t, old)) != 0)
        return -1;
    while (now_ns() - l->t0 < RT_WAIT_MS * 1000000LL) {
        int m = rt_master(l->t);
        if (m >= 0 && m != old)
            return m;
        sleep_ms(20);
    }
    fprintf(stderr, "faults: no new master %d ms after the kill\n",
            RT_WAIT_MS);
    return -1;
}

/* The fault of one run, in the parent, while the workers go on. */
static void s_inject(struct s_fault_log *l)
{
    int old = rt_master(l->t), now = -1;
    l->old_port = old >= 0 ? rt_server_port(l->t, old) : -1;
    l->t0 = now_ns();
    if (old < 0) {
        l->failed = 1;
        return;
    }
    now = l->fault == S_FAILOVER ? rt_failover(l->t) : s_kill(l, old);
    l->t1 = now_ns();
    if (now < 0) {
        l->failed = 1;
        return;
    }
    l->new_port = rt_server_port(l->t, now);
    /* After a kill: back at once, empty, as a replica of the new master. */
    if (l->fault == S_KILL &&
        (rs_kill9_restart(rt_server(l->t, old)) != 0 ||
         s_aof(rt_server(l->t, old)) != 0 ||
         s_replicaof(rt_server(l->t, old), l->new_port) != 0))
        l->failed = 1;
    else if (rt_settle(l->t) != 0)
        l->failed = 1;
    l->t2 = now_ns();
}

static void s_during(struct bench *b, int64_t t_go, int64_t t_end, void *arg)
{
    struct s_fault_log *l = arg;
    contend_progress(b, l->cfg, t_go,
                     t_go + (int64_t)(S_AT * (double)(t_end - t_go)));
    progress_show(b, "%s ...", l->fault == S_FAILOVER ? "SENTINEL FAILOVER"
                                                      : "kill -9");
    s_inject(l);
    /* Every process has waiters parked nearly all the time, so each
     * should be subscribed to the lock's channel on the new master. */
    contend_progress(b, l->cfg, t_go, t_end - 1000000000LL);
    int m = rt_master(l->t);
    l->numsub = m >= 0 ? rs_numsub(rt_server(l->t, m), S_CHANNEL) : -1;
    contend_progress(b, l->cfg, t_go, t_end);
}

/* Delete the lock's keys on the current master and wait until the
 * replica has the deletion too. 0 or -1. */
static int s_clean(struct rt_sentinel *t)
{
    int m = rt_master(t);
    if (m < 0)
        return -1;
    struct rs_server *srv = rt_server(t, m);
    long long d = rs_int(srv, "DEL", CONTEND_LOCK, S_FENCE, CONTEND_PROBE,
                         (char *)NULL);
    long long w = rs_int(srv, "WAIT", "1", "2000", (char *)NULL);
    return d >= 0 && w == 1 ? 0 : -1;
}

/* The fault's name in faultfig's rows. */
static const char *l_name(enum s_fault f)
{
    return f == S_FAILOVER ? "SENTINEL FAILOVER" : "kill -9 of the master";
}

/* The figures of one run from its records. */
static void s_figures(const struct cresults *res, struct s_run *r)
{
    const struct crecord *c = res->recs;
    int64_t max_rel = INT64_MIN, max_token = INT64_MIN, t0 = r->log.t0;
    int32_t max_waiter = -1;
    size_t ok_sections = 0;
    r->sections = res->n;
    for (size_t i = 0; i < res->n; i++) {
        /* The first gap is from the start of the run. */
        int64_t prev = i ? c[i - 1].acq_ns : res->t_go_ns;
        int64_t gap = c[i].acq_ns - prev;
        ok_sections += c[i].cs_ok != 0;
        if (c[i].acq_ns < t0 && gap > r->gap_before)
            r->gap_before = gap;
        if (c[i].acq_ns >= t0 && gap > r->gap_around) {
            r->gap_around = gap;
            r->gap_at = prev - t0;
        }
        if (i > 0 && c[i].cs_ok && c[i - 1].cs_ok &&
            c[i].seen != c[i - 1].seen + 1)
            r->mismatches++;
        r->overlaps += c[i].acq_ns <= max_rel;
        if (c[i].token == max_token && c[i].waiter == max_waiter)
            r->token_again++;
        else if (c[i].token <= max_token)
            r->token_drops++;
        if (c[i].token > max_token)
            max_waiter = c[i].waiter;
        max_rel = c[i].rel_ns > max_rel ? c[i].rel_ns : max_rel;
        max_token = c[i].token > max_token ? c[i].token : max_token;
    }
    /* The last gap lasts until the stop. */
    int64_t stop = res->t_go_ns + (int64_t)(r->log.cfg->seconds * 1e9);
    int64_t last = res->n ? c[res->n - 1].acq_ns : res->t_go_ns;
    if (stop - last > r->gap_around && stop > t0) {
        r->gap_around = stop - last;
        r->gap_at = last - t0;
    }
    /* Acquired again once the new master was named (or the fault began,
     * when it never was). */
    int64_t named = r->log.t1 ? r->log.t1 : t0;
    r->never_after = !res->n || last <= named;
    r->lost_updates = r->counter >= 0 ? (long long)ok_sections - r->counter
                                      : -1;
    /* Does the lock reach every process again once the deployment
     * settled? */
    r->procs = r->log.cfg->procs;
    r->after = calloc((size_t)r->procs, sizeof(*r->after));
    for (size_t i = 0; r->after && i < res->n; i++)
        if (r->log.t2 && c[i].acq_ns > r->log.t2 && c[i].proc >= 0 &&
            c[i].proc < r->procs)
            r->after[c[i].proc]++;
    for (int k = 0; r->after && k < r->procs; k++)
        r->served_after += r->after[k] > 0;
    r->sum = res->sum;
    r->failed_workers = res->failed;
    r->cb_missing = (res->sum.acq_issued - res->sum.acq_fired) +
                    (res->sum.rel_issued - res->sum.rel_fired);
    r->fault = (struct ff_fault){l_name(r->log.fault), r->log.t0, r->log.t1,
                                 r->log.failed, 1};
    ff_compute(res, r->counter, stop, &r->fault, 1, &r->ff);
    rate_init(&r->rate, res->t_go_ns, 100000000);
    for (size_t i = 0; i < res->n; i++)
        rate_hit(&r->rate, c[i].acq_ns);
}

/* t on the fault's clock as "+1.23 s" (after it) or "-0.40 s" (before),
 * or "-" when t is 0. */
static const char *s_at(int64_t t, int64_t t0, char *buf, size_t len)
{
    if (!t)
        return "-";
    snprintf(buf, len, "%+.2f s", (double)(t - t0) / 1e9);
    return buf;
}

/* Outcome counts by name after label. */
static void s_outcomes(const char *label, const uint64_t *by_code)
{
    printf("  %s:", label);
    for (int k = 0; k < CONTEND_ERRS; k++)
        if (by_code[k])
            printf(" %s %" PRIu64, k == 0 ? "ok"
                                   : k == CONTEND_ERRS - 1 ? "call-error"
                                   : hilock_err_name(-k),
                   by_code[k]);
}

/* One run's details: the fault's timeline, outcomes, errors. Times after
 * the fault's start are on its clock: "+1.23 s". */
static void s_print_run(const struct s_run *r)
{
    const struct s_fault_log *l = &r->log;
    const struct cstats *s = &r->sum;
    char a[32], b2[32];
    printf("  fault at %.2f s of the run: master %d -> %d, named by every "
           "Sentinel at %s; the old master %s at %s%s\n",
           (double)(l->t0 - r->t_go) / 1e9, l->old_port, l->new_port,
           s_at(l->t1, l->t0, a, sizeof a),
           l->fault == S_KILL ? "restarted, a synced replica again"
                              : "a replica again",
           s_at(l->t2, l->t0, b2, sizeof b2),
           l->failed ? "  (a harness call FAILED)" : "");
    s_outcomes("acquire outcomes", s->acq_by_code);
    printf("\n  release errors %" PRIu64 ", releases that left a hold "
           "%" PRIu64 ", section errors %" PRIu64 ", locks lost %" PRIu64
           ", stuck waiters %" PRIu64 "\n",
           s->rel_errors, s->rel_left, s->cs_errors, s->lost, s->stuck);
    snprintf(a, sizeof a, "probe (every %d ms)", l->cfg->probe_ms);
    s_outcomes(a, s->probe_by_code);
    if (s->probe_fail_ns)
        printf("; failing for %s from %s",
               fmt_ns(s->probe_fail_ns, a, sizeof a),
               s_at(s->probe_fail_at_ns, l->t0, b2, sizeof b2));
    if (s->probe_slow_ns)
        printf("; slowest %s, called at %s",
               fmt_ns(s->probe_slow_ns, a, sizeof a),
               s_at(s->probe_slow_at_ns, l->t0, b2, sizeof b2));
    if (s->norep_first_ns)
        printf("; HILOCK_ENOREPLICA from %s to %s",
               s_at(s->norep_first_ns, l->t0, a, sizeof a),
               s_at(s->norep_last_ns, l->t0, b2, sizeof b2));
    printf("\n  acquisitions per process once settled:");
    for (int k = 0; r->after && k < r->procs; k++)
        printf(" %zu", r->after[k]);
    printf("\n");
}

/* The longest time with no holder a run may have: the lease plus the
 * failover (until every Sentinel named the new master). */
static int64_t s_gap_bound(const struct s_run *r)
{
    return (int64_t)r->log.cfg->lease_ms * 1000000 + r->ff.failover_ns;
}

/* The checks of one run; prints the failed ones. Returns how many. */
static int s_checks(const struct s_run *r, uint32_t wait)
{
    int bad = 0;
#define S_CHECK(ok, ...)                                                       \
    do {                                                                       \
        if (!(ok)) {                                                           \
            bad++;                                                             \
            printf("  FAIL: ");                                                \
            printf(__VA_ARGS__);                                               \
            printf("\n");                                                      \
        }                                                                      \
    } while (0)
    S_CHECK(r->cb_missing == 0,
            "callbacks that never fired: %" PRIu64 " (acquire %" PRIu64
            "/%" PRIu64 ", release %" PRIu64 "/%" PRIu64 " fired/issued)",
            r->cb_missing, r->sum.acq_fired, r->sum.acq_issued,
            r->sum.rel_fired, r->sum.rel_issued);
    S_CHECK(r->sum.stuck == 0, "%" PRIu64 " waiter(s) stuck after the drain",
            r->sum.stuck);
    S_CHECK(!r->log.failed, "the fault could not be injected or did not "
                            "settle");
    S_CHECK(!r->never_after, "no acquisition after the fault");
    S_CHECK(r->log.numsub == r->procs,
            "%lld of %d processes subscribed to the lock's channel on the "
            "master at the end",
            r->log.numsub, r->procs);
    S_CHECK(r->served_after == r->procs,
            "once settled, the lock reached %d of %d processes (waiters "
            "elsewhere starve)",
            r->served_after, r->procs);
    S_CHECK(r->failed_workers == 0, "%d worker(s) failed", r->failed_workers);
    S_CHECK(r->counter >= 0, "the counter could not be read");
    if (wait)
        S_CHECK(r->overlaps == 0 && r->mismatches == 0 &&
                    r->lost_updates == 0 && r->token_drops == 0,
                "with WAIT: %zu overlaps, %zu read mismatches, %lld lost "
                "updates, %zu tokens not increasing (must all be 0)",
                r->overlaps, r->mismatches, r->lost_updates, r->token_drops);
    if (wait)
        S_CHECK(r->ff.gap_ns <= s_gap_bound(r),
                "with WAIT: %.2f s with no holder, above the lease plus the "
                "failover (%.2f s)", (double)r->ff.gap_ns / 1e9,
                (double)s_gap_bound(r) / 1e9);
#undef S_CHECK
    return bad;
}

static void s_json(struct json *j, const struct s_run *r, int i)
{
    const struct s_fault_log *l = &r->log;
    const struct cstats *s = &r->sum;
    json_obj(j, NULL);
    json_str(j, "fault", l->fault == S_FAILOVER ? "sentinel_failover"
                                                : "kill9");
    json_int(j, "wait_replicas", s_plan[i].wait);
    json_int(j, "critical_sections", (int64_t)r->sections);
    json_int(j, "overlaps", (int64_t)r->overlaps);
    json_int(j, "read_mismatches", (int64_t)r->mismatches);
    json_int(j, "final_counter", r->counter);
    json_int(j, "lost_updates", r->lost_updates);
    json_int(j, "tokens_not_increasing", (int64_t)r->token_drops);
    json_int(j, "same_token_same_waiter_again", (int64_t)r->token_again);
    json_int(j, "releases_leaving_holds", (int64_t)s->rel_left);
    json_int(j, "callbacks_missing", (int64_t)r->cb_missing);
    json_num(j, "longest_gap_before_fault_s", (double)r->gap_before / 1e9);
    json_num(j, "longest_gap_from_fault_s", (double)r->gap_around / 1e9);
    json_num(j, "that_gap_began_s", (double)r->gap_at / 1e9);
    json_num(j, "longest_gap_no_holder_s", (double)r->ff.gap_ns / 1e9);
    json_num(j, "gap_bound_s", (double)s_gap_bound(r) / 1e9);
    json_num(j, "throughput_share_during_fault", r->ff.share[0]);
    json_bool(j, "acquired_after_fault", !r->never_after);
    json_arr(j, "acquisitions_per_process_once_settled");
    for (int k = 0; r->after && k < r->procs; k++)
        json_int(j, NULL, (int64_t)r->after[k]);
    json_end(j);
    json_num(j, "probe_slowest_s", (double)s->probe_slow_ns / 1e9);
    json_int(j, "channel_subscribers_at_end", l->numsub);
    json_num(j, "new_master_named_after_s",
             l->t1 ? (double)(l->t1 - l->t0) / 1e9 : -1);
    json_num(j, "settled_after_s", l->t2 ? (double)(l->t2 - l->t0) / 1e9 : -1);
    json_int(j, "old_master_port", l->old_port);
    json_int(j, "new_master_port", l->new_port);
    json_obj(j, "acquire_outcomes");
    for (int k = 0; k < CONTEND_ERRS; k++)
        if (s->acq_by_code[k])
            json_int(j, k == 0                  ? "ok"
                        : k == CONTEND_ERRS - 1 ? "other"
                                                : hilock_err_name(-k),
                     (int64_t)s->acq_by_code[k]);
    json_end(j);
    if (s->norep_first_ns) {
        json_num(j, "enoreplica_first_s", (double)(s->norep_first_ns - l->t0) /
                                              1e9);
        json_num(j, "enoreplica_last_s", (double)(s->norep_last_ns - l->t0) /
                                             1e9);
    }
    json_int(j, "release_errors", (int64_t)s->rel_errors);
    json_int(j, "section_errors", (int64_t)s->cs_errors);
    json_int(j, "locks_lost", (int64_t)s->lost);
    json_int(j, "stuck_waiters", (int64_t)s->stuck);
    json_int(j, "failed_workers", r->failed_workers);
    json_int(j, "checks_failed", r->checks_failed);
    json_end(j);
}

/* One run: clean, run the workers with the fault, compute and print. 0, or
 * -1 when it could not run at all. */
static int s_run_one(struct bench *b, struct rt_sentinel *t,
                     struct contend_cfg *cfg, int i, struct s_run *r)
{
    struct cresults res;
    memset(r, 0, sizeof(*r));
    r->log = (struct s_fault_log){t, cfg, s_plan[i].fault, -1, -1, 0, 0, 0,
                                  0, -1};
    cfg->wait_replicas = s_plan[i].wait;
    printf("run %d/%d: %s\n", i + 1, S_RUNS, s_plan[i].name);
    if (rt_settle(t) != 0 || s_clean(t) != 0) {
        fprintf(stderr, "faults: the deployment did not settle\n");
        return -1;
    }
    if (contend_run(b, cfg, &res, s_during, &r->log) != 0) {
        fprintf(stderr, "faults: the workers could not be started\n");
        return -1;
    }
    r->counter = contend_counter(cfg);
    r->t_go = res.t_go_ns;
    s_figures(&res, r);
    free(res.recs);
    return 0;
}

/* The table of the runs: one row per figure, one column per run. */
static void s_table(struct s_run *runs, int n)
{
    enum { NROWS = 17, W = 40 };
    static const char *const rows[NROWS] = {
        "critical sections", "overlaps", "read mismatches", "lost updates",
        "tokens not increasing", "same token, same waiter again",
        "releases that left a hold", "callbacks that never fired",
        "probe: HILOCK_ENOREPLICA", "10 s waits timed out",
        "processes served once settled", "processes subscribed at the end",
        "longest gap before the fault", "longest gap from the fault",
        "longest gap with no holder", "  bound: lease + failover",
        "throughput during / before the fault"};
    char v[NROWS][S_RUNS][W];
    struct table t;
    for (int i = 0; i < S_RUNS; i++)
        for (int k = 0; k < NROWS; k++)
            snprintf(v[k][i], W, "-");
    for (int i = 0; i < n; i++) {
        struct s_run *r = &runs[i];
        int k = 0;
        snprintf(v[k++][i], W, "%zu", r->sections);
        snprintf(v[k++][i], W, "%zu", r->overlaps);
        snprintf(v[k++][i], W, "%zu", r->mismatches);
        snprintf(v[k++][i], W, "%lld", r->lost_updates);
        snprintf(v[k++][i], W, "%zu", r->token_drops);
        snprintf(v[k++][i], W, "%zu", r->token_again);
        snprintf(v[k++][i], W, "%" PRIu64, r->sum.rel_left);
        snprintf(v[k++][i], W, "%" PRIu64, r->cb_missing);
        snprintf(v[k++][i], W, "%" PRIu64,
                 r->sum.probe_by_code[-HILOCK_ENOREPLICA]);
        snprintf(v[k++][i], W, "%" PRIu64,
                 r->sum.acq_by_code[-HILOCK_ETIMEDOUT]);
        snprintf(v[k++][i], W, "%d of %d", r->served_after, r->procs);
        snprintf(v[k++][i], W, "%lld of %d", r->log.numsub, r->procs);
        fmt_ns(r->gap_before, v[k++][i], W);
        fmt_ns(r->gap_around, v[k][i], W);
        if (r->never_after)
            strncat(v[k][i], " (never)", W - strlen(v[k][i]) - 1);
        fmt_ns(r->ff.gap_ns, v[++k][i], W);
        fmt_ns(s_gap_bound(r), v[++k][i], W);
        snprintf(v[++k][i], W, "%.0f %%", r->ff.share[0] * 100);
    }
    table_init(&t, "", s_plan[0].label, s_plan[1].label, s_plan[2].label,
               s_plan[3].label, NULL);
    for (int k = 0; k < NROWS; k++)
        table_row(&t, rows[k], v[k][0], v[k][1], v[k][2], v[k][3]);
    table_print(&t, stdout);
}

static void s_plot(struct bench *b, struct s_run *runs, int n, double secs)
{
    const struct rate *r[S_RUNS];
    const char *titles[S_RUNS];
    struct plot_mark mark = {S_AT * secs, "failover"};
    for (int i = 0; i < n; i++) {
        r[i] = &runs[i].rate;
        titles[i] = s_plan[i].name;
    }
    plot_rate(b, "throughput", "faults --sentinel: critical sections/s",
              "critical sections/s", r, titles, n, &mark, 1, 0);
}

int faults_sentinel(struct bench *b)
{
    struct contend_cfg cfg;
    struct hilock_endpoint sen[S_SENTINELS];
    struct s_run *runs = calloc(S_RUNS, sizeof(*runs));
    int done = 0, bad = 0;
    if (!runs)
        return 1;
    contend_cfg_init(&cfg, b, b->o.seconds > 0 ? b->o.seconds
                                               : S_DEFAULT_SECONDS,
                     S_DRAIN_MS);
    cfg.lease_ms = b->o.lease_ms ? b->o.lease_ms : S_DEFAULT_LEASE_MS;
    cfg.probe_ms = S_PROBE_MS;
    printf("faults --sentinel: starting a master, 1 replica and %d "
           "Sentinels...\n",
           S_SENTINELS);
    struct rt_sentinel *t = rt_start(1, S_SENTINELS, S_NAME);
    if (!t) {
        fprintf(stderr, "faults: the Sentinel deployment could not be "
                        "started\n");
        free(runs);
        return 1;
    }
    for (int i = 0; i < S_SENTINELS; i++)
        sen[i] = (struct hilock_endpoint){"127.0.0.1", rt_sentinel_port(t, i),
                                          NULL};
    for (int i = 0; i < rt_server_count(t); i++)
        if (s_aof(rt_server(t, i)) != 0)
            bad++;
    cfg.sentinels = sen;
    cfg.nsentinels = S_SENTINELS;
    cfg.master_name = S_NAME;
    printf("faults --sentinel: master port %d, replica port %d, Sentinels "
           "%d %d %d; %d processes, %d waiters, lock \"%s\" (watchdog lease "
           "%u ms), counter on port %d; %d runs of %.0f s, the failover at "
           "%.0f %%\n",
           rt_server_port(t, 0), rt_server_port(t, 1), sen[0].port,
           sen[1].port, sen[2].port, cfg.procs, cfg.waiters, CONTEND_LOCK,
           cfg.lease_ms, cfg.port, S_RUNS, cfg.seconds,
           S_AT * 100);
    json_int(b->json, "procs", cfg.procs);
    json_int(b->json, "waiters", cfg.waiters);
    json_num(b->json, "seconds", cfg.seconds);
    json_int(b->json, "lease_ms", cfg.lease_ms);
    json_num(b->json, "fault_at_fraction", S_AT);
    json_arr(b->json, "runs");
    for (; done < S_RUNS; done++) {
        struct s_run *r = &runs[done];
        if (s_run_one(b, t, &cfg, done, r) != 0) {
            bad++;
            break;
        }
        s_print_run(r);
        r->checks_failed = s_checks(r, s_plan[done].wait);
        bad += r->checks_failed;
        s_json(b->json, r, done);
    }
    json_end(b->json);
    printf("summary (gaps: between consecutive acquisitions, the last one "
           "until the stop; \"from the fault\": the longest that ends after "
           "it began)\n");
    s_table(runs, done);
    s_plot(b, runs, done, cfg.seconds);
    for (int i = 0; i < S_RUNS; i++) {
        rate_free(&runs[i].rate);
        free(runs[i].after);
    }
    free(runs);
    rt_stop(t);
    printf("result: %s\n", bad ? "FAIL" : "ok");
    return bad ? 1 : 0;
}
