/* SPDX-License-Identifier: BSD-3-Clause */
/* sc_torture.c -- every client kind on many names while the one
 * redis-server is frozen, killed and has its connections cut.
 *
 * The workers (torture.h) run default, fair, fixed-lease and scripts-only
 * clients on --names locks of ONE redis-server. The server runs with AOF
 * and appendfsync always, the README's advice for a single master that may
 * restart ("keep persistence on"): a kill -9 then loses no acknowledged
 * write, lock, fencing counter or section counter, so the checks exempt
 * nothing. Until every worker has stopped, the parent injects a fault
 * every --every ms (FAULT_GAP_MS) after the last one ended, in turn: CLIENT KILL of the command connections
 * (TYPE normal, the sections' too), SIGSTOP shorter than every lease,
 * CLIENT KILL of the subscriber connections (TYPE pubsub), kill -9 and an
 * immediate restart, SIGSTOP longer than the fixed lease, both CLIENT
 * KILLs at once, SIGSTOP longer than the watchdog lease, kill -9 with the
 * server away for a second. The CLIENT KILLs come from an admin connection
 * of the parent, which they skip.
 *
 * A holder believes it holds its lock from its acquire callback until it
 * sends its release, or until on_lost, whichever comes first: the
 * library's promise is that on_lost fires before the lease can have run out
 * on the server. Checks, all of which must be 0:
 *  - overlaps: two such intervals on one name intersect;
 *  - lost updates: two acknowledged SETs of a name wrote the same value,
 *    or the final counter is below the largest acknowledged write; a pair
 *    where one SET was answered after its holder's on_lost is counted
 *    apart (that SET may have run after the lease: the pause that only a
 *    guarded write closes, docs/guarded-writes.md);
 *  - read mismatches: a GET did not return what the writes before it (in
 *    acquisition order) left, unless on_lost came before its reply;
 *  - tokens not increasing (fair clients draw fencing tokens);
 *  - callbacks that never fired: acquire and release calls that returned 0
 *    minus callbacks received, per worker, after the drain;
 *  - hangs: a waiter without progress past its bound (the wait, or none,
 *    plus the slack), or not idle at the drain's end. */
#include "torture.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <hilock/hilock.h>

#include "redis_server.h"

#define FAULT_GAP_MS 1000   /* default: from a fault's end to the next */
#define FAULTS_MAX 4096
#define SHORT_PAUSE_MS 500  /* shorter than every lease */
#define DEFAULT_LEASE_MS 3000
#define REQUEST_TIMEOUT_MS 2000 /* hilock's default */
#define PARENT_GRACE_S 40
#define OVERLAPS_SHOWN 10

enum fkind { FT_CUT_NORMAL, FT_CUT_PUBSUB, FT_CUT_BOTH, FT_PAUSE, FT_KILL9,
             FT_N };

/* Which length a fault of the cycle has. */
enum flen { FL_NONE, FL_SHORT, FL_PAST_FIXED, FL_PAST_WATCHDOG, FL_DOWN };

static const struct {
    enum fkind kind;
    enum flen len;
} cycle[] = {
    {FT_CUT_NORMAL, FL_NONE}, {FT_PAUSE, FL_SHORT},
    {FT_CUT_PUBSUB, FL_NONE}, {FT_KILL9, FL_NONE},
    {FT_PAUSE, FL_PAST_FIXED}, {FT_CUT_BOTH, FL_NONE},
    {FT_PAUSE, FL_PAST_WATCHDOG}, {FT_KILL9, FL_DOWN},
};

#define NCYCLE (sizeof(cycle) / sizeof(cycle[0]))

static const char *const fkind_names[FT_N] = {
    "CLIENT KILL normal", "CLIENT KILL pubsub", "CLIENT KILL both",
    "SIGSTOP", "kill -9"};

/* One fault injected. */
struct tfault {
    enum fkind kind;
    int ms;            /* pause length, or time away after a kill */
    int64_t t0, t1;    /* its window */
    int failed;        /* could not be injected */
    long long cut;     /* connections CLIENT KILL closed */
};

struct tlog {
    struct tfault f[FAULTS_MAX];
    int n;
};

/* The length of a fault of the cycle under cfg, in ms. */
static int fault_ms(const struct torture_cfg *cfg, enum flen len)
{
    switch (len) {
    case FL_SHORT: return SHORT_PAUSE_MS;
    case FL_PAST_FIXED: return TORTURE_FIXED_LEASE_MS + 500;
    case FL_PAST_WATCHDOG: return (int)cfg->lease_ms + 1000;
    case FL_DOWN: return 1000;
    default: return 0;
    }
}

/* CLIENT KILL TYPE type from a connection of our own (SKIPME yes: not
 * itself). The number closed, or -1. */
static long long cut(struct bench *b, const char *type)
{
    redisContext *rc = bench_connect(b, 2000);
    long long n = rc ? bench_int(rc, "CLIENT", "KILL", "TYPE", type, "SKIPME",
                                 "yes", NULL)
                     : -1;
    if (rc)
        redisFree(rc);
    return n < 0 ? -1 : n;
}

/* Inject f now (it blocks for its length) and record its window. */
static void inject(struct bench *b, struct tfault *f)
{
    long long n = 0, m = 0;
    f->t0 = now_ns();
    switch (f->kind) {
    case FT_PAUSE:
        f->failed = rs_pause(b->srv) != 0;
        sleep_ms(f->ms);
        f->failed |= rs_resume(b->srv) != 0;
        break;
    case FT_KILL9:
        if (f->ms == 0) {
            f->failed = rs_kill9_restart(b->srv) != 0;
            break;
        }
        f->failed = rs_kill9(b->srv) != 0;
        sleep_ms(f->ms);
        f->failed |= rs_restart(b->srv) != 0;
        break;
    default:
        if (f->kind != FT_CUT_PUBSUB)
            n = cut(b, "normal");
        if (f->kind != FT_CUT_NORMAL)
            m = cut(b, "pubsub");
        f->failed = n < 0 || m < 0;
        f->cut = (n > 0 ? n : 0) + (m > 0 ? m : 0);
    }
    f->t1 = now_ns();
}

/* Read what the workers said so far: acquisitions per worker into got,
 * stopped ones marked in done. Returns how many have stopped. */
static int read_news(struct fanout *f, long *got, int *done)
{
    int n = 0;
    for (int i = 0; i < f->n; i++) {
        struct fan_msg m;
        int rc;
        while (!done[i] && (rc = fan_recv(f->c[i].fd, &m, 0)) != 0) {
            if (rc < 0 || m.type == TMSG_DONE)
                done[i] = 1;
            if (rc > 0)
                got[i] = (long)m.v[0];
        }
        n += done[i];
    }
    return n;
}

/* Until t_end or every worker has stopped: inject the cycle's faults, one
 * every cfg->gap_ms, each only if it ends a second before t_end. */
static void run_faults(struct bench *b, struct fanout *f,
                       const struct torture_cfg *cfg, int64_t t_end,
                       struct tlog *log)
{
    long got[64] = {0};
    int done[64] = {0}, injecting = 1;
    size_t next_i = 0;
    int64_t next = now_ns() + (int64_t)cfg->gap_ms * 1000000;
    while (now_ns() < t_end && read_news(f, got, done) < f->n) {
        int64_t now = now_ns();
        long sum = 0;
        if (injecting && now >= next && log->n < FAULTS_MAX) {
            struct tfault *x = &log->f[log->n];
            x->kind = cycle[next_i % NCYCLE].kind;
            x->ms = fault_ms(cfg, cycle[next_i % NCYCLE].len);
            injecting = now + (int64_t)(x->ms + 1000) * 1000000 < t_end;
            if (injecting) {
                inject(b, x);
                log->n++;
                next_i++;
            }
            next = now_ns() + (int64_t)cfg->gap_ms * 1000000;
        }
        for (int i = 0; i < f->n; i++)
            sum += got[i];
        progress_show(b, "%ld acquisitions, %d faults, next: %s", sum,
                      log->n, fkind_names[cycle[next_i % NCYCLE].kind]);
        sleep_ms(50);
    }
}

static int cmp_name_acq(const void *x, const void *y)
{
    const struct trec *a = x, *b = y;
    if (a->name != b->name)
        return a->name - b->name;
    return (a->acq_ns > b->acq_ns) - (a->acq_ns < b->acq_ns);
}

/* Start the workers, inject the faults, merge the records. 0 or -1. */
static int torture_run(struct bench *b, const struct torture_cfg *cfg,
                       struct tresults *res, struct tlog *log,
                       int64_t *t_go)
{
    struct fanout f;
    memset(res, 0, sizeof(*res));
    if (fan_spawn(&f, cfg->procs, torture_worker, (void *)cfg) != 0 ||
        fan_all_ready(&f, 60000) != 0)
        return -1;
    *t_go = now_ns();
    fan_broadcast(&f, FAN_GO);
    progress_begin(b, cfg->seconds);
    int64_t t_end = *t_go + (int64_t)(cfg->seconds * 1e9);
    run_faults(b, &f, cfg, t_end, log);
    progress_end(b);
    int64_t stop = now_ns() < t_end ? now_ns() : t_end;
    res->failed = fan_reap(&f, stop + (int64_t)(cfg->drain_ms / 1000 +
                                                PARENT_GRACE_S) * 1000000000);
    for (int i = 0; i < f.n; i++)
        if (torture_collect(f.c[i].out, res) != 0)
            res->failed++;
    fan_free(&f);
    if (res->n > 1)
        qsort(res->recs, res->n, sizeof(*res->recs), cmp_name_acq);
    return 0;
}

/* ---- checks ------------------------------------------------------------ */

struct overlap {
    size_t a, b; /* records: the earlier holder, the one that overlapped */
};

struct tchecks {
    size_t overlaps;
    struct overlap shown[OVERLAPS_SHOWN];
    size_t lost_updates, dup_writes, final_short;
    size_t late_dups;        /* values written twice by a late SET */
    struct overlap dup_shown[OVERLAPS_SHOWN]; /* two writes of one value */
    size_t read_bad;
    struct overlap read_shown[OVERLAPS_SHOWN]; /* the last read or write
                                                  before, the read */
    size_t token_bad;
    struct overlap token_shown[OVERLAPS_SHOWN]; /* the holder of the top
                                                   token, the one below */
    size_t fair_no_token;
    size_t token_again;      /* the top token again, to its holder */
    uint64_t acq_missing, rel_missing;
    uint64_t hangs, stuck;
    long long counter_sum;   /* final counters, summed over the names */
    uint64_t acked;          /* acknowledged SETs */
    int counters_read;       /* the final counters could be read */
};

/* Keep pair {a, b} as the n-th of what broke a check. */
static void keep_pair(struct overlap *shown, size_t n, size_t a, size_t b)
{
    if (n < OVERLAPS_SHOWN)
        shown[n] = (struct overlap){a, b};
}

/* Sections of one name [from, to) whose intervals intersect an earlier
 * one's (the running latest end). */
static void check_overlaps(const struct tresults *res, size_t from,
                           size_t to, struct tchecks *c)
{
    size_t last = from;
    for (size_t i = from + 1; i < to; i++) {
        const struct trec *r = &res->recs[i];
        if (r->acq_ns < res->recs[last].end_ns)
            keep_pair(c->shown, c->overlaps++, last, i);
        if (r->end_ns > res->recs[last].end_ns)
            last = i;
    }
}

/* An acknowledged write: the value and its record. */
struct written {
    int64_t v;
    size_t rec;
};

static int cmp_written(const void *x, const void *y)
{
    const struct written *a = x, *b = y;
    return (a->v > b->v) - (a->v < b->v);
}

/* Acknowledged writes of one name that wrote the same value: lost
 * updates, unless one of the two was answered after its holder's on_lost
 * (TR_LATE): that write may have run after the lease, which no lease can
 * prevent; those are counted apart. vals is sorted here. */
static void check_dups(const struct tresults *res, struct written *vals,
                       size_t nv, struct tchecks *c)
{
    qsort(vals, nv, sizeof(*vals), cmp_written);
    for (size_t i = 1; i < nv; i++) {
        if (vals[i].v != vals[i - 1].v)
            continue;
        if ((res->recs[vals[i].rec].flags |
             res->recs[vals[i - 1].rec].flags) & TR_LATE)
            c->late_dups++;
        else
            keep_pair(c->dup_shown, c->dup_writes++, vals[i - 1].rec,
                      vals[i].rec);
    }
}

/* Reads and writes of one name [from, to) in acquisition order: every GET
 * returns what the writes before left (a write whose reply was lost may or
 * may not have been applied), no acknowledged value is written twice, and
 * the final counter is not below the largest acknowledged write. A GET
 * answered after on_lost (its SET skipped) is not checked: that holder's
 * interval had ended, so its place in the order is not known. A SET
 * answered after its holder's on_lost (TR_LATE) may have run after the
 * lease, after later holders' reads: like a write whose reply was lost,
 * it widens what the next read may see instead of fixing it. */
static void check_counter(const struct tresults *res, size_t from, size_t to,
                          long long final, struct tchecks *c)
{
    int64_t lo = 0, hi = 0, top = 0;
    size_t last = from; /* the record that left lo..hi */
    struct written *vals = malloc((to - from + 1) * sizeof(*vals));
    size_t nv = 0;
    for (size_t i = from; i < to; i++) {
        const struct trec *r = &res->recs[i];
        int w = r->flags & TR_WRITE;
        if ((r->flags & TR_GET_OK) && !(r->flags & TR_SKIPPED)) {
            if (r->seen < lo || r->seen > hi)
                keep_pair(c->read_shown, c->read_bad++, last, i);
            lo = hi = r->seen;
            last = i;
        }
        int late = (r->flags & TR_LATE) != 0;
        if (w == TW_ACKED) {
            c->acked++;
            if (vals)
                vals[nv++] = (struct written){r->seen + 1, i};
        }
        if (w == TW_ACKED && !late) {
            lo = hi = r->seen + 1;
            top = r->seen + 1 > top ? r->seen + 1 : top;
        } else if ((w == TW_UNKNOWN || late) && r->seen + 1 > hi) {
            hi = r->seen + 1; /* applied at some point, maybe later */
        }
    }
    if (vals)
        check_dups(res, vals, nv, c);
    free(vals);
    if (c->counters_read) {
        c->final_short += final < top;
        c->counter_sum += final;
    }
}

/* Fencing tokens of one name [from, to): drawn by the fair clients, they
 * must grow in acquisition order. */
static void check_tokens(const struct tresults *res, size_t from, size_t to,
                         struct tchecks *c)
{
    size_t top = to;
    for (size_t i = from; i < to; i++) {
        const struct trec *r = &res->recs[i];
        if (r->kind == TK_FAIR && r->token <= 0)
            c->fair_no_token++;
        if (r->token <= 0)
            continue;
        if (top < to && r->token == res->recs[top].token &&
            r->waiter == res->recs[top].waiter) {
            c->token_again++; /* the same owner's hold, left by a release */
        } else if (top < to && r->token <= res->recs[top].token) {
            keep_pair(c->token_shown, c->token_bad++, top, i);
        }
        if (top == to || r->token > res->recs[top].token)
            top = i;
    }
}

/* Each name's final counter into final[] (which has cfg->names slots).
 * 0, or -1 when they could not be read. */
static int read_counters(struct bench *b, const struct torture_cfg *cfg,
                         long long *final)
{
    redisContext *rc = bench_connect(b, 5000);
    int ok = rc != NULL;
    for (int i = 0; ok && i < cfg->names; i++) {
        char key[64];
        snprintf(key, sizeof key, TORTURE_COUNTER "%d", i);
        redisReply *r = bench_cmd(rc, "GET", key, NULL);
        ok = r && (r->type == REDIS_REPLY_STRING ||
                   r->type == REDIS_REPLY_NIL);
        if (ok)
            final[i] = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
        if (r)
            freeReplyObject(r);
    }
    if (rc)
        redisFree(rc);
    return ok ? 0 : -1;
}

/* Every check over the merged records and counters. */
static void run_checks(struct bench *b, const struct torture_cfg *cfg,
                       const struct tresults *res, struct tchecks *c)
{
    long long *final = calloc((size_t)cfg->names, sizeof(*final));
    memset(c, 0, sizeof(*c));
    c->counters_read = final && read_counters(b, cfg, final) == 0;
    for (size_t from = 0, to; from < res->n; from = to) {
        int name = res->recs[from].name;
        for (to = from; to < res->n && res->recs[to].name == name; to++)
            ;
        check_overlaps(res, from, to, c);
        check_counter(res, from, to, c->counters_read ? final[name] : 0, c);
        check_tokens(res, from, to, c);
    }
    c->lost_updates = c->dup_writes + c->final_short;
    for (int k = 0; k < TK_N; k++) {
        const struct tkstats *s = &res->sum.k[k];
        c->acq_missing += s->acq_issued - s->acq_fired;
        c->rel_missing += s->rel_issued - s->rel_fired;
        c->hangs += s->hangs;
        c->stuck += s->stuck;
    }
    free(final);
}

/* ---- report ------------------------------------------------------------ */

/* The last fault that began at or before t, or NULL. */
static const struct tfault *fault_before(const struct tlog *log, int64_t t)
{
    const struct tfault *f = NULL;
    for (int i = 0; i < log->n && log->f[i].t0 <= t; i++)
        f = &log->f[i];
    return f;
}

/* One record of a pair: kind, waiter, token, call, interval, counter. */
static void print_rec(const struct trec *r, int64_t t_go)
{
    static const char *const writes[] = {"no SET", "SET ok", "SET lost",
                                         "SET refused"};
    printf("%s waiter %d token %" PRId64 " called %.3f held [%.3f, %.3f]%s "
           "read %" PRId64 " %s%s", torture_kind_name(r->kind), r->waiter,
           r->token, (double)(r->call_ns - t_go) / 1e9,
           (double)(r->acq_ns - t_go) / 1e9, (double)(r->end_ns - t_go) / 1e9,
           r->flags & TR_LOST ? " to on_lost" : "", r->seen,
           writes[r->flags & TR_WRITE],
           r->flags & TR_SKIPPED ? " (skipped: lost)" : "");
}

/* Pairs of records that broke a check, with the fault before. */
static void print_pairs(const char *what, const struct tresults *res,
                        const struct tlog *log, const struct overlap *pairs,
                        size_t n, int64_t t_go)
{
    for (size_t i = 0; i < n && i < OVERLAPS_SHOWN; i++) {
        const struct trec *a = &res->recs[pairs[i].a];
        const struct trec *x = &res->recs[pairs[i].b];
        const struct tfault *f = fault_before(log, x->acq_ns);
        printf("  %s on name %d:\n    ", what, a->name);
        print_rec(a, t_go);
        printf("\n    ");
        print_rec(x, t_go);
        printf("\n    last fault before: %s", f ? fkind_names[f->kind]
                                                : "none");
        if (f)
            printf(" %d ms at [%.3f, %.3f]", f->ms,
                   (double)(f->t0 - t_go) / 1e9, (double)(f->t1 - t_go) / 1e9);
        printf("\n");
    }
}

/* Outcomes of one kind's acquires (or releases), by name. */
static void print_codes(const char *what, const uint64_t *by_code)
{
    printf("    %s:", what);
    for (int c = 0; c < TORTURE_ERRS; c++)
        if (by_code[c])
            printf(" %s %" PRIu64, c == 0 ? "ok"
                                   : c == TORTURE_ERRS - 1 ? "other"
                                   : hilock_err_name(-c),
                   by_code[c]);
    printf("\n");
}

static void print_kinds(const struct tresults *res, double span_s)
{
    printf("per client kind\n");
    for (int k = 0; k < TK_N; k++) {
        const struct tkstats *s = &res->sum.k[k];
        char v[32];
        printf("  %-13s %s acquisitions (%.0f/s), on_lost in a section %"
               PRIu64 ", SETs skipped after on_lost %" PRIu64 "\n",
               torture_kind_name(k), fmt_count((double)s->acq_by_code[0], v,
                                               sizeof v),
               span_s > 0 ? (double)s->acq_by_code[0] / span_s : 0, s->lost,
               s->skipped);
        print_codes("acquire", s->acq_by_code);
        print_codes("release", s->rel_by_code);
        printf("    releases that left a hold %" PRIu64 "\n", s->rel_left);
        printf("    GET failed %" PRIu64 ", SET reply lost %" PRIu64
               ", SET refused or not sent %" PRIu64 ", SET answered after "
               "on_lost %" PRIu64 ", on_lost outside a section %" PRIu64
               ", call errors %" PRIu64 "\n",
               s->get_failed, s->set_unknown, s->set_refused, s->set_late,
               s->lost_outside, s->call_errors);
        if (s->lost_outside) {
            printf("    on_lost outside a section, by the waiter's state:");
            for (int i = 0; i < 5; i++)
                if (s->lost_when[i])
                    printf(" %s %" PRIu64, torture_state_name(i),
                           s->lost_when[i]);
            printf("; on another name's handle %" PRIu64 "\n", s->lost_other);
        }
    }
}

/* Time from the end of fault f to the next acquisition (any name), or -1.
 * recs are sorted by name: a scan over all of them. */
static int64_t next_acq_after(const struct tresults *res, int64_t t)
{
    int64_t best = -1;
    for (size_t i = 0; i < res->n; i++) {
        int64_t d = res->recs[i].acq_ns - t;
        if (d >= 0 && (best < 0 || d < best))
            best = d;
    }
    return best;
}

/* The faults of the cycle's c-th place: how many, how many failed, the
 * connections closed, the time they took and the longest time to the next
 * acquisition after one; *none counts those with no acquisition after
 * (the last fault excepted: the run may have stopped). */
struct fsum {
    int n, failed;
    int64_t took, worst;
    long long closed;
};

static void fault_sum(const struct tresults *res, const struct tlog *log,
                      size_t c, struct fsum *s, int *none)
{
    memset(s, 0, sizeof(*s));
    for (int i = (int)c; i < log->n; i += (int)NCYCLE) {
        const struct tfault *f = &log->f[i];
        int64_t d = next_acq_after(res, f->t1);
        s->n++;
        s->failed += f->failed;
        s->closed += f->cut;
        s->took += f->t1 - f->t0;
        *none += d < 0 && i + 1 < log->n;
        s->worst = d > s->worst ? d : s->worst;
    }
}

/* Every fault's window, into the JSON. */
static void json_fault_log(struct bench *b, const struct tlog *log,
                           int64_t t_go)
{
    json_arr(b->json, "fault_log");
    for (int i = 0; i < log->n; i++) {
        json_obj(b->json, NULL);
        json_str(b->json, "kind", fkind_names[log->f[i].kind]);
        json_int(b->json, "ms", log->f[i].ms);
        json_num(b->json, "from_s", (double)(log->f[i].t0 - t_go) / 1e9);
        json_num(b->json, "to_s", (double)(log->f[i].t1 - t_go) / 1e9);
        json_end(b->json);
    }
    json_end(b->json);
}

/* The faults by their place in the cycle. Returns the faults after which
 * nothing was acquired. */
static int print_faults(struct bench *b, const struct tresults *res,
                        const struct tlog *log, int64_t t_go)
{
    int none = 0;
    printf("faults injected: %d\n", log->n);
    json_arr(b->json, "faults");
    for (size_t c = 0; c < NCYCLE && (int)c < log->n; c++) {
        struct fsum s;
        char w[32], t[32];
        const struct tfault *f = &log->f[c];
        fault_sum(res, log, c, &s, &none);
        printf("  %-19s %5d ms  x%-4d took %-9s next acquisition within %s"
               "%s", fkind_names[f->kind], f->ms, s.n,
               fmt_ns(s.took / s.n, t, sizeof t),
               fmt_ns(s.worst, w, sizeof w),
               s.failed ? "  FAILED to inject" : "");
        if (f->kind < FT_PAUSE)
            printf("  (%lld connections closed)", s.closed);
        printf("\n");
        json_obj(b->json, NULL);
        json_str(b->json, "kind", fkind_names[f->kind]);
        json_int(b->json, "ms", f->ms);
        json_int(b->json, "count", s.n);
        json_int(b->json, "failed", s.failed);
        json_int(b->json, "connections_closed", s.closed);
        json_num(b->json, "worst_next_acquisition_s", (double)s.worst / 1e9);
        json_end(b->json);
    }
    json_end(b->json);
    json_fault_log(b, log, t_go);
    return none;
}

/* Print the checks; returns how many failed. */
static int print_checks(struct bench *b, const struct tresults *res,
                        const struct tchecks *c, int dead_after,
                        const struct tlog *log)
{
    int bad = 0, inj = 0;
    for (int i = 0; i < log->n; i++)
        inj += log->f[i].failed;
    printf("checks\n");
#define CHECK(ok, name, ...)                                                   \
    do {                                                                       \
        bad += !(ok);                                                          \
        printf("  %-34s %s (", name, (ok) ? "ok" : "FAIL");                    \
        printf(__VA_ARGS__);                                                   \
        printf(")\n");                                                         \
    } while (0)
    CHECK(c->overlaps == 0, "overlaps", "%zu", c->overlaps);
    CHECK(c->lost_updates == 0, "lost updates",
          "%zu: %zu values written twice, %zu counters below their largest "
          "write; %" PRIu64 " acknowledged SETs, counters sum to %lld; "
          "apart: %zu values written twice by a SET answered after its "
          "holder's on_lost", c->lost_updates, c->dup_writes,
          c->final_short, c->acked, c->counter_sum, c->late_dups);
    CHECK(c->counters_read, "final counters read", "%s",
          c->counters_read ? "yes" : "no");
    CHECK(c->read_bad == 0, "read mismatches", "%zu", c->read_bad);
    CHECK(c->token_bad == 0, "tokens not increasing",
          "%zu; the same token to the same waiter again %zu, fair "
          "acquisitions without a token %zu", c->token_bad, c->token_again,
          c->fair_no_token);
    CHECK(c->acq_missing + c->rel_missing == 0, "callbacks that never fired",
          "%" PRIu64 " acquire, %" PRIu64 " release", c->acq_missing,
          c->rel_missing);
    CHECK(c->hangs + c->stuck == 0, "hangs",
          "%" PRIu64 " past their bound, %" PRIu64 " not idle after the "
          "drain", c->hangs, c->stuck);
    CHECK(dead_after == 0 && inj == 0, "faults injected, each recovered",
          "%d failed to inject, %d without an acquisition after", inj,
          dead_after);
    CHECK(res->failed == 0 && !res->sum.setup_failed && !res->sum.overrun,
          "workers exited cleanly", "%d failed", res->failed);
#undef CHECK
    json_obj(b->json, "checks");
    json_int(b->json, "overlaps", (int64_t)c->overlaps);
    json_int(b->json, "lost_updates", (int64_t)c->lost_updates);
    json_int(b->json, "late_write_dups", (int64_t)c->late_dups);
    json_int(b->json, "read_mismatches", (int64_t)c->read_bad);
    json_int(b->json, "tokens_not_increasing", (int64_t)c->token_bad);
    json_int(b->json, "callbacks_never_fired",
             (int64_t)(c->acq_missing + c->rel_missing));
    json_int(b->json, "hangs", (int64_t)(c->hangs + c->stuck));
    json_int(b->json, "failed", bad);
    json_end(b->json);
    return bad;
}

static void print_logs(const struct tresults *res)
{
    printf("client log lines: %" PRIu64 " warnings, %" PRIu64 " errors%s\n",
           res->sum.log_warn, res->sum.log_error,
           res->sum.nlogs ? "; the first that differ:" : "");
    for (uint64_t i = 0; i < res->sum.nlogs; i++)
        printf("  %s\n", res->sum.logs[i]);
}

static void print_hangs(const struct tresults *res, int64_t t_go)
{
    for (uint64_t i = 0; i < res->sum.nhangs; i++) {
        const struct thang *h = &res->sum.hang[i];
        printf("  hang: %s waiter %d %s since %.3f s, noticed at %.3f s%s\n",
               torture_kind_name(h->kind), h->waiter,
               torture_state_name(h->state), (double)(h->since_ns - t_go) / 1e9,
               (double)(h->at_ns - t_go) / 1e9,
               h->after_stop ? " (after the stop)" : "");
    }
}

/* Acquisitions per second over the run, per kind: into the JSON, and
 * plotted with the faults marked (--plot). */
static void rates(struct bench *b, const struct tresults *res,
                  const struct tlog *log, int64_t t_go)
{
    struct rate r[TK_N];
    const struct rate *rp[TK_N];
    const char *titles[TK_N];
    struct plot_mark marks[256];
    int nmarks = 0;
    for (int k = 0; k < TK_N; k++) {
        rate_init(&r[k], t_go, 250000000);
        rp[k] = &r[k];
        titles[k] = torture_kind_name(k);
    }
    for (size_t i = 0; i < res->n; i++)
        rate_hit(&r[res->recs[i].kind], res->recs[i].acq_ns);
    json_obj(b->json, "acquisitions_per_s");
    for (int k = 0; k < TK_N; k++)
        json_rate(b->json, titles[k], &r[k]);
    json_end(b->json);
    for (int i = 0; i < log->n && nmarks < 256; i++)
        marks[nmarks++] = (struct plot_mark){
            (double)(log->f[i].t0 - t_go) / 1e9, fkind_names[log->f[i].kind]};
    if (b->o.plot_dir)
        plot_rate(b, "throughput", "torture: acquisitions/s",
                  "acquisitions/s", rp, titles, TK_N, marks, nmarks, 0);
    for (int k = 0; k < TK_N; k++)
        rate_free(&r[k]);
}

/* Start the server this scenario needs: AOF, appendfsync always. 0 or -1. */
static int server_with_aof(struct bench *b)
{
    static const char *const args[] = {"--appendonly", "yes",
                                       "--appendfsync", "always", NULL};
    bench_server_down(b);
    if (bench_server_up(b, args) != 0)
        return -1;
    redisContext *rc = bench_connect(b, 2000);
    redisReply *r = rc ? bench_cmd(rc, "CONFIG", "GET", "appendfsync", NULL)
                       : NULL;
    int ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
             strcmp(r->element[1]->str, "always") == 0;
    if (r)
        freeReplyObject(r);
    if (rc)
        redisFree(rc);
    return ok ? 0 : -1;
}

static void torture_cfg_init(struct torture_cfg *cfg, const struct bench *b)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->procs = b->o.procs ? b->o.procs : 4;
    cfg->waiters = b->o.waiters ? b->o.waiters : 160;
    cfg->names = b->o.names ? b->o.names : 64;
    cfg->seconds = b->o.seconds > 0 ? b->o.seconds : 20;
    cfg->lease_ms = b->o.lease_ms ? b->o.lease_ms : DEFAULT_LEASE_MS;
    cfg->gap_ms = (b->o.given & OPT_EVERY) ? (int)b->o.every_ms
                                           : FAULT_GAP_MS;
    if (cfg->waiters < cfg->procs)
        cfg->procs = cfg->waiters;
    if (cfg->procs > 64)
        cfg->procs = 64;
    if (b->o.acquisitions)
        cfg->quota = (b->o.acquisitions + cfg->procs - 1) / cfg->procs;
    /* the longest fault, two request timeouts and a margin */
    cfg->slack_ms = fault_ms(cfg, FL_PAST_WATCHDOG) + 2 * REQUEST_TIMEOUT_MS +
                    2000;
    cfg->drain_ms = cfg->slack_ms;
    cfg->host = b->host;
    cfg->port = b->port;
}

/* The whole report; returns the number of checks that failed. */
static int report(struct bench *b, const struct torture_cfg *cfg,
                  const struct tresults *res, const struct tchecks *c,
                  const struct tlog *log, int64_t t_go)
{
    uint64_t acq = 0;
    char v[32];
    for (int k = 0; k < TK_N; k++)
        acq += res->sum.k[k].acq_by_code[0];
    double span = res->sum.stop_ns > t_go
                      ? (double)(res->sum.stop_ns - t_go) / 1e9
                      : cfg->seconds;
    printf("acquisitions: %s in %.1f s, %.0f/s (1 000 000 would take about "
           "%.0f s)\n", fmt_count((double)acq, v, sizeof v), span,
           (double)acq / span, acq ? 1e6 * span / (double)acq : 0);
    print_kinds(res, span);
    int dead = print_faults(b, res, log, t_go);
    print_pairs("overlap", res, log, c->shown, c->overlaps, t_go);
    print_pairs("token not increasing", res, log, c->token_shown,
                c->token_bad, t_go);
    print_pairs("value written twice", res, log, c->dup_shown, c->dup_writes,
                t_go);
    print_pairs("read mismatch", res, log, c->read_shown, c->read_bad, t_go);
    print_logs(res);
    print_hangs(res, t_go);
    int bad = print_checks(b, res, c, dead, log) + (acq == 0);
    json_int(b->json, "procs", cfg->procs);
    json_int(b->json, "waiters", cfg->waiters);
    json_int(b->json, "names", cfg->names);
    json_int(b->json, "acquisitions", (int64_t)acq);
    json_num(b->json, "seconds", span);
    json_int(b->json, "faults_injected", log->n);
    rates(b, res, log, t_go);
    printf("result: %s%s\n", bad ? "FAIL" : "ok",
           b->o.acquisitions && acq < (uint64_t)b->o.acquisitions
               ? " (the time ran out before the target)" : "");
    return bad;
}

int sc_torture(struct bench *b)
{
    struct torture_cfg cfg;
    struct tresults res;
    struct tchecks c;
    struct tlog *log = calloc(1, sizeof(*log));
    int64_t t_go = 0;
    if (!log || server_with_aof(b) != 0) {
        fprintf(stderr, "torture: no redis-server with appendfsync always\n");
        free(log);
        return 1;
    }
    torture_cfg_init(&cfg, b);
    if (cfg.names > TORTURE_NAMES_MAX) {
        fprintf(stderr, "torture: --names: at most %d\n", TORTURE_NAMES_MAX);
        free(log);
        return 1;
    }
    printf("torture: %d processes, %d waiters (4 client kinds), %d names, "
           "%.0f s at most; watchdog lease %u ms, fixed lease %d ms; a fault "
           "%d ms after the last; AOF appendfsync always, on %s:%d\n",
           cfg.procs, cfg.waiters, cfg.names, cfg.seconds, cfg.lease_ms,
           TORTURE_FIXED_LEASE_MS, cfg.gap_ms, b->host, b->port);
    if (b->o.acquisitions)
        printf("  target: %ld acquisitions\n", b->o.acquisitions);
    int bad = torture_run(b, &cfg, &res, log, &t_go);
    if (bad)
        fprintf(stderr, "torture: the workers could not be started\n");
    else
        run_checks(b, &cfg, &res, &c);
    bad = bad ? 1 : report(b, &cfg, &res, &c, log, t_go);
    free(res.recs);
    free(log);
    return bad ? 1 : 0;
}
