/* SPDX-License-Identifier: BSD-3-Clause */
/* sc_redlock.c -- hilock over several independent masters (Redlock).
 *
 * Five redis-servers are started once (the first is the bench's own); the
 * run has two parts:
 *  - uncontended: the K-in-flight loop of "uncontended" (uncontended.h)
 *    with one run per topology: the first server as the single endpoint,
 *    the first three as masters, all five. Each run has both modes: hilock,
 *    and the ceiling, which sends hilock's scripts raw to every master at
 *    once and goes on at the first majority, as hilock does. Phases of
 *    --seconds take turns, in alternating order over rounds, K, topologies
 *    and modes, so that machine noise falls on all of them. Target: at the
 *    first K, hilock's acquire p50 on 5 masters is at most 1.3 x its p50 on
 *    one. All masters are asked at once and the third grant decides, so
 *    five masters should cost little more latency than one; the ceiling's
 *    ratio shows what the machine allows (five servers and the client on
 *    few cores cannot all run at once).
 *  - contended over 3 masters: the workers of "contended" (contend.h) on
 *    one lock held on the first three servers, their counter on the fourth
 *    (no master of the lock, never killed). Halfway through, the first
 *    master is killed with kill -9 and restarted empty. Two of three stay,
 *    a majority, so every check of "contended" must hold without exemption.
 *    The restarted master's fencing counter starts again from nothing, yet
 *    tokens must go on increasing: a token is the largest of a majority and
 *    is written back to a majority before the acquisition is reported, and
 *    any later majority meets that one.
 * With --master-out (refuse or stop) both parts give way to two contended
 * runs over the first three masters, all up and then with the first one
 * refusing connections or stopped, compared by acquisitions per second
 * (--multi: the waiters take MultiLocks of two names). */
#include "contend.h"
#include "uncontended.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <hilock/hilock.h>

#include "keys.h" /* src/: the fencing counter's name */
#include "redis_server.h"

#define RL_SERVERS 5
#define RL_TOPOS 3       /* 1, 3 and 5 masters */
#define RL_KS 2          /* default K: 1 and 64 */
#define RL_TARGET 1.3    /* 5-master p50 / 1-master p50 */
#define RL_VICTIM 0      /* the master killed in the contended part */
#define RL_COUNTER 3     /* the server with the section's counter */
#define RL_CMASTERS 3    /* masters of the contended lock */
#define RL_DRAIN_MS 6000 /* > request timeout: every callback is due */
#define RL_OUT_SHARE 0.5 /* --master-out: acquisitions/s over all up's */
#define RL_OUT_DEADLINE_MS 2000 /* the workers' per-master deadline */
#define RL_FENCE KEYS_FENCE_HEAD CONTEND_LOCK KEYS_TAG_TAIL

static const int topo_masters[RL_TOPOS] = {1, 3, 5};

struct rl {
    struct bench *b;
    struct rs_server *srv[RL_SERVERS]; /* [0] is the bench's own */
    struct hilock_endpoint ep[RL_SERVERS];
};

/* The uncontended part: its plan and cells[K index][topology]. */
struct upart {
    int ks[RL_KS], nk, rounds;
    double secs;
    uint32_t wait_ms;
    struct ucell cells[RL_KS][RL_TOPOS][2]; /* [mode]: hilock, ceiling */
};

/* The kill -9 of the contended part, on the monotonic clock. */
struct kill_log {
    struct rl *r;
    const struct contend_cfg *cfg;
    int64_t t0, t1; /* killed; answering PING again */
    int failed;
};

/* ---- servers ------------------------------------------------------------ */

/* Start servers 1..4 beside the bench's own; fill the endpoints. 0 or -1
 * (the ones started are stopped by rl_servers_down). */
static int rl_servers_up(struct rl *r)
{
    r->srv[0] = r->b->srv;
    for (int i = 0; i < RL_SERVERS; i++) {
        if (i > 0 && !(r->srv[i] = rs_start(NULL)))
            return -1;
        r->ep[i] = (struct hilock_endpoint){"127.0.0.1", rs_port(r->srv[i]),
                                            NULL};
    }
    return 0;
}

static void rl_servers_down(struct rl *r)
{
    for (int i = 1; i < RL_SERVERS; i++)
        rs_stop(r->srv[i]);
}

/* Empty every server. 0 or -1. */
static int rl_flush(struct rl *r)
{
    for (int i = 0; i < RL_SERVERS; i++) {
        char *ok = rs_str(r->srv[i], "FLUSHALL", (char *)NULL);
        int bad = !ok || strcmp(ok, "OK") != 0;
        free(ok);
        if (bad)
            return -1;
    }
    return 0;
}

/* ---- uncontended over 1, 3 and 5 masters -------------------------------- */

static const char *const mode_names[2] = {"hilock", "ceiling"};

/* Options of a client on topology t: the first server as the single
 * endpoint, or the first n servers as masters. */
static void topo_options(const struct rl *r, int t, struct hilock_options *ho)
{
    hilock_options_init(ho);
    ho->node.host = r->ep[0].host;
    ho->node.port = r->ep[0].port;
    if (topo_masters[t] > 1) {
        ho->topology = HILOCK_TOPOLOGY_REDLOCK;
        ho->redlock.masters = r->ep;
        ho->redlock.count = (size_t)topo_masters[t];
    }
}

/* Every phase: rounds x K x topologies x modes. The topologies take turns
 * forward and backward, the two modes of each alternate. Returns nonzero
 * when a phase did not drain. */
static int u_phases(struct upart *p, struct urun **u)
{
    char what[48];
    int bad = 0;
    for (int r = 0; r < p->rounds; r++)
        for (int i = 0; i < p->nk; i++)
            for (int j = 0; j < RL_TOPOS * 2; j++) {
                int t = (r + i) % 2 ? RL_TOPOS - 1 - j / 2 : j / 2;
                int m = (r + i + j / 2 + j) % 2;
                snprintf(what, sizeof what, "round %d/%d, %d master(s)",
                         r + 1, p->rounds, topo_masters[t]);
                bad |= urun_phase(u[t], (enum umode)m, p->ks[i], p->secs,
                                  &p->cells[i][t][m], what);
            }
    return bad;
}

/* One run (client and raw connections) per topology, then every phase.
 * 0, 1 when a phase did not drain, -1 when the runs could not be set up. */
static int u_run(struct rl *r, struct upart *p)
{
    struct urun *u[RL_TOPOS] = {NULL};
    struct hilock_options ho;
    char tag[8];
    int rc = 0;
    for (int t = 0; t < RL_TOPOS && rc == 0; t++) {
        topo_options(r, t, &ho);
        snprintf(tag, sizeof tag, "m%d", topo_masters[t]);
        if (!(u[t] = urun_new(r->b, &ho, tag, 1, p->wait_ms)))
            rc = -1;
    }
    int64_t t0 = now_ns();
    for (int i = 0; i < p->nk; i++)
        for (int t = 0; t < RL_TOPOS; t++)
            for (int m = 0; m < 2; m++)
                ucell_init(&p->cells[i][t][m], t0);
    if (rc == 0) {
        progress_begin(r->b, p->rounds * p->nk * RL_TOPOS * 2 * p->secs);
        rc = u_phases(p, u) ? 1 : 0;
        progress_end(r->b);
    }
    for (int t = 0; t < RL_TOPOS; t++)
        urun_free(u[t]);
    return rc;
}

/* Acquire p50 of mode m on topology t over the single master's, at K
 * index i. */
static double p50_ratio(struct upart *p, int i, int t, int m)
{
    int64_t one = samples_pct(&p->cells[i][0][m].lat, 50);
    return one > 0 ? (double)samples_pct(&p->cells[i][t][m].lat, 50) /
                         (double)one
                   : 0;
}

/* One row of the table: K index i, topology t. */
static void u_row(struct table *tb, struct upart *p, int i, int t)
{
    struct ucell *h = &p->cells[i][t][U_HILOCK], *c = &p->cells[i][t][U_CEIL];
    char k[16], n[8], rate[2][32], l[4][32], q[2][16], cpu[2][32];
    snprintf(k, sizeof k, "%d", p->ks[i]);
    snprintf(n, sizeof n, "%d", topo_masters[t]);
    for (int m = 0; m < 2; m++) {
        struct ucell *x = m ? c : h;
        fmt_count(ucell_rate(x), rate[m], 32);
        fmt_ns(samples_pct(&x->lat, 50), l[m], 32);
        fmt_ns(samples_pct(&x->lat, 99), l[2 + m], 32);
        snprintf(q[m], 16, "%.2f", p50_ratio(p, i, t, m));
        snprintf(cpu[m], 32, "%.1f us", ucell_cpu_us(x));
    }
    table_row(tb, t ? "" : k, n, rate[0], rate[1], l[0], l[1], l[2], l[3],
              q[0], q[1], cpu[0], cpu[1]);
}

/* The table of every cell. Returns the cells with errors (listed). */
static int u_table(struct upart *p)
{
    struct table tb;
    int errors = 0;
    table_init(&tb, "K", "masters", "pairs/s: hilock", "ceiling",
               "acquire p50: hilock", "ceiling", "p99: hilock", "ceiling",
               "p50 / 1 master: hilock", "ceiling", "client CPU/pair: hilock",
               "ceiling", NULL);
    for (int i = 0; i < p->nk; i++)
        for (int t = 0; t < RL_TOPOS; t++)
            u_row(&tb, p, i, t);
    table_print(&tb, stdout);
    for (int i = 0; i < p->nk; i++)
        for (int t = 0; t < RL_TOPOS; t++)
            for (int m = 0; m < 2; m++)
                if (p->cells[i][t][m].errors && ++errors)
                    printf("  K=%d, %d master(s), %s: %" PRIu64 " errors\n",
                           p->ks[i], topo_masters[t], mode_names[m],
                           p->cells[i][t][m].errors);
    return errors;
}

/* The cells as JSON: per K and topology, each mode's figures and its p50
 * over the single master's. */
static void u_json(struct json *j, struct upart *p)
{
    char key[16];
    json_int(j, "rounds", p->rounds);
    json_num(j, "phase_seconds", p->secs);
    json_int(j, "wait_ms", p->wait_ms);
    json_arr(j, "results");
    for (int i = 0; i < p->nk; i++) {
        json_obj(j, NULL);
        json_int(j, "inflight", p->ks[i]);
        for (int t = 0; t < RL_TOPOS; t++) {
            snprintf(key, sizeof key, "masters_%d", topo_masters[t]);
            json_obj(j, key);
            json_obj(j, "p50_over_1_master");
            for (int m = 0; m < 2; m++)
                json_num(j, mode_names[m], p50_ratio(p, i, t, m));
            json_end(j);
            for (int m = 0; m < 2; m++)
                ucell_json(j, mode_names[m], &p->cells[i][t][m]);
            json_end(j);
        }
        json_end(j);
    }
    json_end(j);
}

/* Print and write the figures; *missed counts the target. Returns the
 * number of cells with errors. */
static int u_report(struct bench *b, struct upart *p, int *missed)
{
    double q = p50_ratio(p, 0, RL_TOPOS - 1, U_HILOCK);
    double floor = p50_ratio(p, 0, RL_TOPOS - 1, U_CEIL);
    int errors = u_table(p);
    *missed = !(q > 0 && q <= RL_TARGET);
    printf("  target at K=%d: acquire p50 on 5 masters <= %.1f x on 1: "
           "%.2f  %s (the ceiling: %.2f)\n",
           p->ks[0], RL_TARGET, q, *missed ? "MISSED" : "ok", floor);
    json_obj(b->json, "uncontended");
    u_json(b->json, p);
    json_obj(b->json, "target");
    json_int(b->json, "inflight", p->ks[0]);
    json_num(b->json, "p50_ratio_5_to_1", q);
    json_num(b->json, "ceiling_p50_ratio_5_to_1", floor);
    json_num(b->json, "max", RL_TARGET);
    json_bool(b->json, "met", !*missed);
    json_end(b->json);
    json_end(b->json);
    return errors;
}

/* The acquire latency of hilock's cells as CDFs (with --plot). */
static void u_plot(struct bench *b, struct upart *p)
{
    struct samples *d[RL_KS * RL_TOPOS];
    char names[RL_KS * RL_TOPOS][32];
    const char *titles[RL_KS * RL_TOPOS];
    int n = 0;
    for (int i = 0; i < p->nk; i++)
        for (int t = 0; t < RL_TOPOS; t++, n++) {
            snprintf(names[n], sizeof names[n], "%d master(s) K=%d",
                     topo_masters[t], p->ks[i]);
            titles[n] = names[n];
            d[n] = &p->cells[i][t][U_HILOCK].lat;
        }
    plot_cdf(b, "acquire-latency", "redlock: uncontended acquire latency", d,
             titles, n);
}

/* The uncontended part, start to report. 0 ok, 1 failed; *missed counts
 * the target. */
static int u_part(struct rl *r, int *missed)
{
    struct bench *b = r->b;
    struct upart *p = calloc(1, sizeof(*p));
    int rc = 1;
    *missed = 0;
    if (!p)
        return 1;
    p->ks[p->nk++] = b->o.inflight ? b->o.inflight : 1;
    if (!b->o.inflight)
        p->ks[p->nk++] = 64;
    p->rounds = b->o.rounds ? b->o.rounds : 3;
    p->rounds = p->rounds > U_ROUNDS_MAX ? U_ROUNDS_MAX : p->rounds;
    p->secs = b->o.seconds > 0 ? b->o.seconds : 1.0;
    p->wait_ms = (b->o.given & OPT_WAIT) ? b->o.wait_ms : 5000;
    printf("uncontended: %d round(s) x %d K x 1, 3 and 5 masters x 2 modes, "
           "%.1f s each, wait_ms %u\n",
           p->rounds, p->nk, p->secs, p->wait_ms);
    int run = u_run(r, p);
    if (run >= 0) {
        int errors = u_report(b, p, missed);
        u_plot(b, p);
        rc = run || errors;
    }
    for (int i = 0; i < p->nk; i++)
        for (int t = 0; t < RL_TOPOS; t++)
            for (int m = 0; m < 2; m++)
                ucell_free(&p->cells[i][t][m]);
    free(p);
    return rc;
}

/* ---- contended over 3 masters, one killed and restarted ----------------- */

/* While the workers run: progress, and halfway the kill -9 and restart of
 * master RL_VICTIM. */
static void kill_midway(struct bench *b, int64_t t_go, int64_t t_end,
                        void *arg)
{
    struct kill_log *k = arg;
    contend_progress(b, k->cfg, t_go, t_go + (t_end - t_go) / 2);
    k->t0 = now_ns();
    k->failed = rs_kill9_restart(k->r->srv[RL_VICTIM]) != 0;
    k->t1 = now_ns();
    contend_progress(b, k->cfg, t_go, t_end);
}

/* What the kill did, from the records. */
struct restart_obs {
    int64_t before;   /* largest token acquired before the kill */
    int64_t after;    /* first token after the restart; -1: none */
    int64_t next_ns;  /* kill -> next acquisition; -1: never */
    size_t down;      /* acquisitions while the master was away */
    size_t reissued;  /* tokens after the kill not above before */
    int64_t reissue_ns; /* kill -> the first of those; -1: none */
};

static void restart_observe(const struct kill_log *k,
                            const struct cresults *res,
                            struct restart_obs *o)
{
    *o = (struct restart_obs){0, -1, -1, 0, 0, -1};
    for (size_t i = 0; i < res->n; i++) {
        const struct crecord *c = &res->recs[i];
        if (c->acq_ns < k->t0) {
            o->before = c->token > o->before ? c->token : o->before;
            continue;
        }
        o->next_ns = o->next_ns < 0 ? c->acq_ns - k->t0 : o->next_ns;
        o->down += c->acq_ns <= k->t1;
        if (c->acq_ns > k->t1 && o->after < 0)
            o->after = c->token;
        if (c->token <= o->before && o->reissued++ == 0)
            o->reissue_ns = c->acq_ns - k->t0;
    }
}

/* Print and write what the kill did, and each master's fencing counter at
 * the end. */
static void restart_report(struct bench *b, const struct kill_log *k,
                           const struct cresults *res,
                           const struct restart_obs *o)
{
    long long fence[RL_CMASTERS];
    char t1[32], t2[32], t3[32];
    printf("kill -9 of master %d (port %d) at %.2f s: back after %s; "
           "acquisitions while it was away: %zu; next acquisition %s after "
           "the kill\n",
           RL_VICTIM + 1, k->r->ep[RL_VICTIM].port,
           (double)(k->t0 - res->t_go_ns) / 1e9,
           fmt_ns(k->t1 - k->t0, t1, sizeof t1), o->down,
           o->next_ns >= 0 ? fmt_ns(o->next_ns, t2, sizeof t2) : "never");
    printf("  tokens: largest before the kill %" PRId64 ", first after the "
           "restart %" PRId64 "; not above %" PRId64 " after the kill: %zu%s%s"
           "\n  fencing counters at the end:",
           o->before, o->after, o->before, o->reissued,
           o->reissued ? ", the first after " : "",
           o->reissued ? fmt_ns(o->reissue_ns, t3, sizeof t3) : "");
    for (int i = 0; i < RL_CMASTERS; i++) {
        fence[i] = rs_int(k->r->srv[i], "GET", RL_FENCE, (char *)NULL);
        printf(" %lld%s", fence[i], i == RL_VICTIM ? " (restarted)" : "");
    }
    printf("\n");
    json_obj(b->json, "restart");
    json_int(b->json, "master", RL_VICTIM + 1);
    json_num(b->json, "at_s", (double)(k->t0 - res->t_go_ns) / 1e9);
    json_num(b->json, "down_s", (double)(k->t1 - k->t0) / 1e9);
    json_int(b->json, "acquisitions_while_down", (int64_t)o->down);
    json_num(b->json, "next_acquisition_after_s",
             o->next_ns >= 0 ? (double)o->next_ns / 1e9 : -1);
    json_int(b->json, "largest_token_before", o->before);
    json_int(b->json, "first_token_after", o->after);
    json_int(b->json, "tokens_not_above_it_after", (int64_t)o->reissued);
    json_arr(b->json, "fence_counters_at_end");
    for (int i = 0; i < RL_CMASTERS; i++)
        json_int(b->json, NULL, fence[i]);
    json_end(b->json);
    json_end(b->json);
}

/* One more check line, in contend_check's layout. Returns !ok. */
static int check_line(const char *name, int ok, const char *detail)
{
    printf("  %-40s %s (%s)\n", name, ok ? "ok" : "FAIL", detail);
    return !ok;
}

/* The checks the restart adds to contend_check's. Returns how many
 * failed. */
static int c_restart_checks(struct bench *b, const struct kill_log *k,
                            const struct cresults *res, int dead)
{
    const struct cstats *s = &res->sum;
    char a[64], r[64], w[32];
    snprintf(a, sizeof a, "%" PRIu64 " issued, %" PRIu64 " fired",
             s->acq_issued, s->acq_fired);
    snprintf(r, sizeof r, "%" PRIu64 " issued, %" PRIu64 " fired",
             s->rel_issued, s->rel_fired);
    snprintf(w, sizeof w, "%d failed", res->failed);
    int bad = check_line("every acquire callback fired once",
                         s->acq_issued == s->acq_fired, a);
    bad += check_line("every release callback fired once",
                      s->rel_issued == s->rel_fired, r);
    bad += check_line("master killed and restarted", !k->failed,
                      k->failed ? "rs_kill9_restart failed" : "kill -9");
    bad += check_line("lock acquired after the kill", !dead,
                      dead ? "never" : "yes");
    bad += check_line("workers exited cleanly", res->failed == 0, w);
    json_obj(b->json, "restart_checks");
    json_int(b->json, "callbacks_missing",
             (int64_t)(s->acq_issued - s->acq_fired) +
                 (int64_t)(s->rel_issued - s->rel_fired));
    json_bool(b->json, "restarted", !k->failed);
    json_bool(b->json, "acquired_after_kill", !dead);
    json_int(b->json, "failed", bad);
    json_end(b->json);
    return bad;
}

/* The settings of a contended run over the first RL_CMASTERS masters of
 * r, its counter on master RL_COUNTER. */
static void c_cfg(const struct rl *r, struct contend_cfg *cfg)
{
    const struct bench *b = r->b;
    contend_cfg_init(cfg, b,
                     b->o.contended_seconds > 0 ? b->o.contended_seconds : 10,
                     RL_DRAIN_MS);
    cfg->host = r->ep[RL_COUNTER].host;
    cfg->port = r->ep[RL_COUNTER].port;
    cfg->masters = r->ep;
    cfg->nmasters = RL_CMASTERS;
}

/* The contended part: run, print, check. 0 ok, 1 failed; *missed counts
 * the targets of contend_print. */
static int c_part(struct rl *r, int *missed)
{
    struct bench *b = r->b;
    struct contend_cfg cfg;
    struct kill_log k = {r, &cfg, 0, 0, 0};
    struct cresults res;
    struct cfigures f;
    c_cfg(r, &cfg);
    printf("contended over %d masters: %d processes, %d waiters, %.0f s, "
           "lock \"%s\"; counter on port %d; kill -9 of master %d halfway\n",
           RL_CMASTERS, cfg.procs, cfg.waiters, cfg.seconds, CONTEND_LOCK,
           cfg.port, RL_VICTIM + 1);
    if (rl_flush(r) != 0 || contend_run(b, &cfg, &res, kill_midway, &k) != 0) {
        fprintf(stderr, "redlock: the contended part could not be run\n");
        return 1;
    }
    json_obj(b->json, "contended");
    json_int(b->json, "procs", cfg.procs);
    json_int(b->json, "waiters", cfg.waiters);
    json_num(b->json, "seconds", cfg.seconds);
    contend_figures(&res, cfg.waiters, &f);
    *missed = contend_print(&f, &res, &cfg);
    uint64_t errors = contend_errors(&res.sum);
    struct restart_obs o;
    restart_observe(&k, &res, &o);
    restart_report(b, &k, &res, &o);
    struct ctoken_exempt ex = {k.t0, o.before};
    int bad = contend_check(b, &res, contend_counter(&cfg), &ex);
    bad += c_restart_checks(b, &k, &res, o.next_ns < 0);
    contend_json(b, &f, &res);
    json_end(b->json);
    struct plot_mark mark = {(double)(k.t0 - res.t_go_ns) / 1e9, "kill -9"};
    contend_plots(b, &f, &res, &mark, 1);
    contend_figures_free(&f);
    free(res.recs);
    return bad || errors || res.n == 0;
}

/* ---- contended over 3 masters, then with one of them out -------------- */

static const char *const out_names[3] = {"", "refusing connections",
                                         "stopped (SIGSTOP)"};

/* The fault of a --master-out run: master RL_VICTIM refuses connections
 * (kill -9, left down) or is stopped from the start to the end. */
static void master_out(struct bench *b, int64_t t_go, int64_t t_end,
                       void *arg)
{
    struct kill_log *k = arg;
    struct rs_server *v = k->r->srv[RL_VICTIM];
    k->t0 = now_ns();
    k->failed = (b->o.master_out == 1 ? rs_kill9(v) : rs_pause(v)) != 0;
    contend_progress(b, k->cfg, t_go, t_end);
    if (b->o.master_out == 2)
        k->failed |= rs_resume(v) != 0;
}

/* Acquisitions per second of res from from_ns to the end of the run. */
static double rate_from(const struct cresults *res, double seconds,
                        int64_t from_ns)
{
    int64_t end = res->t_go_ns + (int64_t)(seconds * 1e9);
    size_t n = 0;
    for (size_t i = 0; i < res->n; i++)
        n += res->recs[i].acq_ns >= from_ns && res->recs[i].acq_ns <= end;
    return end > from_ns ? (double)n * 1e9 / (double)(end - from_ns) : 0;
}

/* One contended run over the first three masters, with master RL_VICTIM
 * out when out. Prints its figures and checks; *rate: acquisitions per
 * second (with a stopped master, from one deadline after the stop on);
 * *timeouts: the waits that timed out. 0 ok, 1 failed. */
static int c_out_run(struct rl *r, int out, double *rate,
                     uint64_t *timeouts)
{
    struct bench *b = r->b;
    struct contend_cfg cfg;
    struct kill_log k = {r, &cfg, 0, 0, 0};
    struct cresults res;
    struct cfigures f;
    c_cfg(r, &cfg);
    cfg.multi = b->o.multi;
    printf("contended over %d masters, %s: %d processes, %d waiters, "
           "%.0f s%s\n",
           RL_CMASTERS,
           out ? out_names[b->o.master_out] : "all up", cfg.procs,
           cfg.waiters, cfg.seconds,
           cfg.multi ? ", MultiLocks of two names" : "");
    if (rl_flush(r) != 0 ||
        contend_run(b, &cfg, &res, out ? master_out : NULL, &k) != 0) {
        fprintf(stderr, "redlock: the contended run could not be run\n");
        return 1;
    }
    json_obj(b->json, out ? "master_out" : "all_up");
    contend_figures(&res, cfg.waiters, &f);
    contend_print(&f, &res, &cfg);
    uint64_t errors = contend_errors(&res.sum);
    int bad = contend_check(b, &res, contend_counter(&cfg), NULL);
    bad += check_line("master out", !k.failed, out ? "as asked" : "none");
    contend_json(b, &f, &res);
    json_end(b->json);
    *rate = rate_from(&res, cfg.seconds,
                      out && b->o.master_out == 2
                          ? k.t0 + (int64_t)RL_OUT_DEADLINE_MS * 1000000
                          : res.t_go_ns);
    *timeouts = res.sum.acq_by_code[-HILOCK_ETIMEDOUT];
    contend_figures_free(&f);
    free(res.recs);
    return bad || errors || res.n == 0;
}

/* --master-out: the same contended run with all masters up, then with
 * one out. Target: at least RL_OUT_SHARE of the acquisitions per second
 * (a stopped master: from one deadline after the stop on, the first vote
 * that meets it waits that long), and no wait timed out. 0 ok, 1 failed;
 * *missed counts the target. */
static int c_out_part(struct rl *r, int *missed)
{
    double up = 0, out = 0;
    uint64_t up_to = 0, out_to = 0;
    int fail = c_out_run(r, 0, &up, &up_to);
    fail |= c_out_run(r, 1, &out, &out_to);
    double share = up > 0 ? out / up : 0;
    *missed = !(share >= RL_OUT_SHARE && out_to == 0);
    printf("  target: one master %s >= %.1f x the acquisitions/s with all "
           "up%s, no wait timed out: %.0f / %.0f = %.2f, %" PRIu64
           " timed out  %s\n",
           out_names[r->b->o.master_out], RL_OUT_SHARE,
           r->b->o.master_out == 2 ? " (from one deadline after the stop)"
                                   : "",
           out, up, share, out_to, *missed ? "MISSED" : "ok");
    json_obj(r->b->json, "master_out_target");
    json_num(r->b->json, "acquisitions_per_s_all_up", up);
    json_num(r->b->json, "acquisitions_per_s_master_out", out);
    json_int(r->b->json, "timeouts_master_out", (int64_t)out_to);
    json_num(r->b->json, "share", share);
    json_bool(r->b->json, "met", !*missed);
    json_end(r->b->json);
    return fail;
}

int sc_redlock(struct bench *b)
{
    struct rl r = {b, {NULL}, {{NULL, 0, NULL}}};
    int missed_u = 0, missed_c = 0, fail = 1;
    if (b->o.multi && !b->o.master_out) {
        fprintf(stderr, "redlock: --multi goes with --master-out\n");
        return 1;
    }
    if (rl_servers_up(&r) != 0 || rl_flush(&r) != 0) {
        fprintf(stderr, "redlock: could not start %d redis-servers\n",
                RL_SERVERS);
    } else {
        printf("redlock: %d redis-servers on 127.0.0.1, ports", RL_SERVERS);
        json_arr(b->json, "server_ports");
        for (int i = 0; i < RL_SERVERS; i++) {
            printf(" %d", r.ep[i].port);
            json_int(b->json, NULL, r.ep[i].port);
        }
        json_end(b->json);
        printf("\n");
        if (b->o.master_out) {
            fail = c_out_part(&r, &missed_c);
        } else {
            fail = u_part(&r, &missed_u);
            fail |= c_part(&r, &missed_c);
        }
    }
    rl_servers_down(&r);
    if (fail)
        printf("result: FAIL\n");
    else if (missed_u + missed_c)
        printf("result: ok, %d target(s) missed\n", missed_u + missed_c);
    else
        printf("result: ok\n");
    return fail;
}
