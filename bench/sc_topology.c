/* SPDX-License-Identifier: BSD-3-Clause */
/* sc_topology.c -- "uncontended" on two setups in one run:
 *  --cluster N        hilock on a Redis Cluster of N masters (no replicas)
 *                     against hilock on one plain master;
 *  --tls              hilock on the plain server against hilock on a
 *                     second, TLS-only one (certificates made at start);
 *  --wait-replicas N  hilock on a master with N replicas, WAIT off against
 *                     WAIT N (wait_replicas in struct hilock_options).
 *
 * Both use the K-in-flight pair loop of uncontended.h in its hilock mode
 * only (no ceiling: the raw scripts know neither slots nor WAIT), with one
 * run (loop, client, handles) per setup. Phases of --seconds alternate in
 * ABBA order over rounds and K, so machine noise falls on both setups; the
 * figure is the ratio second / first. Every slot locks its own name, so on
 * the cluster the names spread over the slots and so over the masters;
 * the spread is printed, and so are the EVALSHA calls each master served.
 * With WAIT both setups run against the same master with the same
 * replicas attached, so the replication stream costs the same in both and
 * the difference is WAIT's round trip alone. */
#include "uncontended.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hilock/hilock.h>

#include "redis_cluster.h"
#include "redis_server.h"
#include "tls_certs.h"

#define T_KS 4
#define T_REPLICAS_MAX 4
#define T_LINK_WAIT_MS 15000

struct tside {
    const char *label;  /* column heading */
    const char *tag;    /* in the lock names: BENCH_PREFIX "u:<tag>:<i>" */
    struct hilock_options ho;
};

struct tpart {
    struct bench *b;
    struct tside side[2];
    const char *ratio_label; /* "cluster / single" */
    int ks[T_KS], nk, rounds;
    double secs;
    uint32_t wait_ms;
    struct ucell cells[T_KS][2];
};

/* Run every phase: rounds x K x both sides, ABBA. Nonzero when a phase did
 * not drain. */
static int t_phases(struct tpart *p, struct urun **u)
{
    char what[48];
    int bad = 0;
    for (int r = 0; r < p->rounds; r++)
        for (int i = 0; i < p->nk; i++)
            for (int s = 0; s < 2; s++) {
                int side = ((r + i) % 2 == 0) == (s == 0) ? 0 : 1;
                snprintf(what, sizeof what, "round %d/%d, %s", r + 1,
                         p->rounds, p->side[side].label);
                bad |= urun_phase(u[side], U_HILOCK, p->ks[i], p->secs,
                                  &p->cells[i][side], what);
            }
    return bad;
}

/* Set up both runs, then every phase. 0, 1 when a phase did not drain,
 * -1 when the runs could not be set up. */
static int t_run(struct tpart *p)
{
    struct urun *u[2] = {NULL, NULL};
    int rc = 0;
    for (int s = 0; s < 2 && rc == 0; s++)
        if (!(u[s] = urun_new(p->b, &p->side[s].ho, p->side[s].tag, 0,
                              p->wait_ms)))
            rc = -1;
    int64_t t0 = now_ns();
    for (int i = 0; i < p->nk; i++)
        for (int s = 0; s < 2; s++)
            ucell_init(&p->cells[i][s], t0);
    if (rc == 0) {
        progress_begin(p->b, p->rounds * p->nk * 2 * p->secs);
        rc = t_phases(p, u) ? 1 : 0;
        progress_end(p->b);
    }
    for (int s = 0; s < 2; s++)
        urun_free(u[s]);
    return rc;
}

static double t_ratio(const struct ucell *a, const struct ucell *b)
{
    return ucell_rate(a) > 0 ? ucell_rate(b) / ucell_rate(a) : 0;
}

/* "0.97/1.01/0.99": second / first in every round. */
static void t_round_ratios(const struct ucell *a, const struct ucell *b,
                           char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int r = 0; r < a->rounds && r < b->rounds && o + 8 < len; r++)
        o += (size_t)snprintf(buf + o, len - o, "%s%.2f", r ? "/" : "",
                              a->round_rate[r] > 0
                                  ? b->round_rate[r] / a->round_rate[r]
                                  : 0);
}

/* The throughput and latency tables. Returns the cells with errors. */
static int t_tables(struct tpart *p)
{
    struct table t;
    int errors = 0;
    char h[6][48];
    for (int s = 0; s < 2; s++) {
        snprintf(h[s], sizeof h[s], "pairs/s: %s", p->side[s].label);
        snprintf(h[2 + s], sizeof h[2 + s], "CPU/pair: %s", p->side[s].label);
    }
    snprintf(h[4], sizeof h[4], "%s", p->ratio_label);
    table_init(&t, "K", h[0], h[1], h[4], "by round", h[2], h[3], NULL);
    for (int i = 0; i < p->nk; i++) {
        struct ucell *a = &p->cells[i][0], *b = &p->cells[i][1];
        char k[16], ra[32], rb[32], q[16], rounds[160], ca[32], cb[32];
        snprintf(k, sizeof k, "%d", p->ks[i]);
        snprintf(q, sizeof q, "%.3f", t_ratio(a, b));
        snprintf(ca, sizeof ca, "%.2f us", ucell_cpu_us(a));
        snprintf(cb, sizeof cb, "%.2f us", ucell_cpu_us(b));
        t_round_ratios(a, b, rounds, sizeof rounds);
        table_row(&t, k, fmt_count(ucell_rate(a), ra, sizeof ra),
                  fmt_count(ucell_rate(b), rb, sizeof rb), q, rounds, ca, cb);
    }
    table_print(&t, stdout);
    table_init(&t, "K", "acquire latency", "p50", "p99", "p99.9", "max",
               NULL);
    for (int i = 0; i < p->nk; i++)
        for (int s = 0; s < 2; s++) {
            struct samples *l = &p->cells[i][s].lat;
            char k[16], v[4][32];
            snprintf(k, sizeof k, "%d", p->ks[i]);
            table_row(&t, s ? "" : k, p->side[s].label,
                      fmt_ns(samples_pct(l, 50), v[0], 32),
                      fmt_ns(samples_pct(l, 99), v[1], 32),
                      fmt_ns(samples_pct(l, 99.9), v[2], 32),
                      fmt_ns(samples_max(l), v[3], 32));
        }
    table_print(&t, stdout);
    for (int i = 0; i < p->nk; i++)
        for (int s = 0; s < 2; s++)
            if (p->cells[i][s].errors && ++errors)
                printf("  K=%d, %s: %" PRIu64 " request errors\n", p->ks[i],
                       p->side[s].label, p->cells[i][s].errors);
    return errors;
}

static void t_json(struct tpart *p)
{
    struct json *j = p->b->json;
    json_int(j, "rounds", p->rounds);
    json_num(j, "phase_seconds", p->secs);
    json_int(j, "wait_ms", p->wait_ms);
    json_arr(j, "sides");
    for (int s = 0; s < 2; s++)
        json_str(j, NULL, p->side[s].label);
    json_end(j);
    json_arr(j, "results");
    for (int i = 0; i < p->nk; i++) {
        json_obj(j, NULL);
        json_int(j, "inflight", p->ks[i]);
        json_num(j, "ratio", t_ratio(&p->cells[i][0], &p->cells[i][1]));
        for (int s = 0; s < 2; s++)
            ucell_json(j, p->side[s].label, &p->cells[i][s]);
        json_end(j);
    }
    json_end(j);
}

static void t_plots(struct tpart *p)
{
    struct samples *d[T_KS * 2];
    const struct rate *r[T_KS * 2];
    char names[T_KS * 2][48], title[64];
    const char *titles[T_KS * 2];
    int n = 0;
    for (int i = 0; i < p->nk; i++)
        for (int s = 0; s < 2; s++, n++) {
            snprintf(names[n], sizeof names[n], "%s K=%d", p->side[s].label,
                     p->ks[i]);
            titles[n] = names[n];
            d[n] = &p->cells[i][s].lat;
            r[n] = &p->cells[i][s].rate;
        }
    snprintf(title, sizeof title, "uncontended, %s: acquire latency",
             p->ratio_label);
    plot_cdf(p->b, "acquire-latency", title, d, titles, n);
    plot_rate(p->b, "throughput", "uncontended: lock+release pairs/s",
              "pairs/s", r, titles, n, NULL, 0, 1);
}

/* The plan from the options: K (1, 64, 256, 1024 unless --inflight),
 * rounds, phase length, wait_ms. */
static void t_plan(struct tpart *p, struct bench *b)
{
    static const int all_k[T_KS] = {1, 64, 256, 1024};
    p->b = b;
    if (b->o.inflight)
        p->ks[p->nk++] = b->o.inflight > U_KMAX ? U_KMAX : b->o.inflight;
    else
        for (int i = 0; i < T_KS; i++)
            p->ks[p->nk++] = all_k[i];
    p->rounds = b->o.rounds ? b->o.rounds : 3;
    p->rounds = p->rounds > U_ROUNDS_MAX ? U_ROUNDS_MAX : p->rounds;
    p->secs = b->o.seconds > 0 ? b->o.seconds : 1.0;
    p->wait_ms = (b->o.given & OPT_WAIT) ? b->o.wait_ms : 5000;
}

/* Run, print and write the comparison. 0 ok, -1 the runs could not be set
 * up, 1 a phase did not drain, 2 request errors. */
static int t_measure(struct tpart *p)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("  %d round(s) x %d K x 2 setups, %.1f s each, wait_ms %u; %ld "
           "core(s): the bench (one loop) and every redis-server share "
           "them\n",
           p->rounds, p->nk, p->secs, p->wait_ms, cores);
    int run = t_run(p);
    int errors = run >= 0 ? t_tables(p) : 0;
    json_int(p->b->json, "cores", cores);
    if (run >= 0) {
        t_json(p);
        t_plots(p);
    }
    for (int i = 0; i < p->nk; i++)
        for (int s = 0; s < 2; s++)
            ucell_free(&p->cells[i][s]);
    return run < 0 ? -1 : run > 0 ? 1 : errors ? 2 : 0;
}

/* The result line for t_measure's outcome; returns the exit status. */
static int t_result(int outcome)
{
    static const char *const why[] = {"", "a phase did not drain",
                                      "request errors"};
    if (outcome == 0)
        printf("result: ok\n");
    else
        printf("result: FAIL (%s)\n", outcome < 0 ? "setup failed"
                                                  : why[outcome]);
    return outcome != 0;
}

/* ---- --cluster N --------------------------------------------------------- */

/* How the names of the K slots spread over the masters (by slot owner),
 * and the EVALSHA calls each master served during the run. */
static void t_spread(struct tpart *p, struct rc_cluster *c, int masters,
                     const long long *calls_before)
{
    int kmax = 0, owner_of[9] = {0};
    for (int i = 0; i < p->nk; i++)
        kmax = p->ks[i] > kmax ? p->ks[i] : kmax;
    int *slot_owner = malloc(RC_SLOTS * sizeof(*slot_owner));
    if (!slot_owner)
        return;
    for (int s = 0; s < RC_SLOTS; s++)
        slot_owner[s] = -2; /* not asked yet */
    for (int i = 0; i < kmax; i++) {
        char name[64];
        int n = snprintf(name, sizeof name, BENCH_PREFIX "u:%s:%d",
                         p->side[1].tag, i);
        int slot = rc_key_slot(name, (size_t)n);
        if (slot_owner[slot] == -2)
            slot_owner[slot] = rc_slot_owner(c, slot);
        if (slot_owner[slot] >= 0 && slot_owner[slot] < masters)
            owner_of[slot_owner[slot]]++;
    }
    free(slot_owner);
    printf("  the %d lock names by master:", kmax);
    json_arr(p->b->json, "names_per_master");
    for (int m = 0; m < masters; m++) {
        printf(" %d", owner_of[m]);
        json_int(p->b->json, NULL, owner_of[m]);
    }
    json_end(p->b->json);
    printf("; EVALSHA calls served by master:");
    json_arr(p->b->json, "evalsha_per_master");
    for (int m = 0; m < masters; m++) {
        long long n = rs_cmdstat_calls(rc_server(c, m), "evalsha");
        long long d = n >= 0 ? n - calls_before[m] : -1;
        char buf[32];
        printf(" %s", d >= 0 ? fmt_count((double)d, buf, sizeof buf) : "?");
        json_int(p->b->json, NULL, d);
    }
    json_end(p->b->json);
    printf("\n");
}

static int uncontended_cluster(struct bench *b)
{
    struct tpart *p = calloc(1, sizeof(*p));
    struct hilock_endpoint seeds[9];
    long long calls[9] = {0};
    char label[32], ratio[48];
    int n = b->o.cluster, rc = 1;
    if (!p)
        return 1;
    t_plan(p, b);
    printf("uncontended --cluster %d: starting %d masters...\n", n, n);
    struct rc_cluster *c = rc_start(n, 0);
    if (!c) {
        fprintf(stderr, "uncontended: the cluster could not be started\n");
        free(p);
        return 1;
    }
    printf("uncontended: hilock on one plain master (port %d) vs on a "
           "cluster of %d masters (ports",
           b->port, n);
    json_arr(b->json, "cluster_ports");
    for (int m = 0; m < n; m++) {
        seeds[m] = (struct hilock_endpoint){"127.0.0.1", rc_port(c, m), NULL};
        calls[m] = rs_cmdstat_calls(rc_server(c, m), "evalsha");
        printf(" %d", rc_port(c, m));
        json_int(b->json, NULL, rc_port(c, m));
    }
    json_end(b->json);
    printf(")\n");
    snprintf(label, sizeof label, "cluster %d", n);
    snprintf(ratio, sizeof ratio, "cluster / single");
    p->ratio_label = ratio;
    p->side[0].label = "single";
    p->side[0].tag = "single";
    hilock_options_init(&p->side[0].ho);
    p->side[0].ho.node.host = b->host;
    p->side[0].ho.node.port = b->port;
    p->side[1].label = label;
    p->side[1].tag = "cluster";
    hilock_options_init(&p->side[1].ho);
    p->side[1].ho.topology = HILOCK_TOPOLOGY_CLUSTER;
    p->side[1].ho.cluster.seeds = seeds;
    p->side[1].ho.cluster.count = (size_t)n;
    json_int(b->json, "cluster_masters", n);
    rc = t_measure(p);
    if (rc >= 0)
        t_spread(p, c, n, calls);
    rc = t_result(rc);
    rc_stop(c);
    free(p);
    return rc;
}

/* ---- --wait-replicas N --------------------------------------------------- */

/* Nonzero once the master counts n replicas and each has its link up. */
static int replicas_up(struct bench *b, struct rs_server **rep, int n)
{
    char *conn = rs_info(b->srv, "replication", "connected_slaves");
    int ok = conn && atoi(conn) == n;
    free(conn);
    for (int i = 0; ok && i < n; i++) {
        char *link = rs_info(rep[i], "replication", "master_link_status");
        ok = link && strcmp(link, "up") == 0;
        free(link);
    }
    return ok;
}

static int uncontended_wait(struct bench *b)
{
    struct tpart *p = calloc(1, sizeof(*p));
    struct rs_server *rep[T_REPLICAS_MAX] = {NULL};
    char port[16], label[32], ratio[48];
    int n = b->o.wait_replicas, rc = 1, up = 0;
    if (!p)
        return 1;
    t_plan(p, b);
    snprintf(port, sizeof port, "%d", b->port);
    const char *args[] = {"--replicaof", "127.0.0.1", port, NULL};
    for (int i = 0; i < n; i++)
        if (!(rep[i] = rs_start(args)))
            goto out;
    for (int64_t t = now_ns(); !(up = replicas_up(b, rep, n)) &&
                               now_ns() - t < T_LINK_WAIT_MS * 1000000LL;)
        sleep_ms(20);
    if (!up) {
        fprintf(stderr, "uncontended: the replicas did not come up\n");
        goto out;
    }
    printf("uncontended: hilock on a master (port %d) with %d replica(s) "
           "(ports",
           b->port, n);
    json_arr(b->json, "replica_ports");
    for (int i = 0; i < n; i++) {
        printf(" %d", rs_port(rep[i]));
        json_int(b->json, NULL, rs_port(rep[i]));
    }
    json_end(b->json);
    snprintf(label, sizeof label, "WAIT %d", n);
    snprintf(ratio, sizeof ratio, "WAIT %d / off", n);
    p->ratio_label = ratio;
    p->side[0].label = "WAIT off";
    p->side[0].tag = "nowait";
    p->side[1].label = label;
    p->side[1].tag = "wait";
    for (int s = 0; s < 2; s++) {
        hilock_options_init(&p->side[s].ho);
        p->side[s].ho.node.host = b->host;
        p->side[s].ho.node.port = b->port;
    }
    p->side[1].ho.wait_replicas = (uint32_t)n;
    printf("): WAIT off vs WAIT %d (wait_timeout_ms %u) after each "
           "acquisition; the replicas are attached in both\n",
           n, p->side[1].ho.wait_timeout_ms);
    json_int(b->json, "wait_replicas", n);
    json_int(b->json, "wait_timeout_ms", p->side[1].ho.wait_timeout_ms);
    rc = t_result(t_measure(p));
out:
    for (int i = 0; i < n; i++)
        rs_stop(rep[i]);
    free(p);
    return rc;
}

/* ---- --tls --------------------------------------------------------------- */

#ifdef HILOCK_HAVE_TLS
/* Both sides on a server of their own, configured alike but for TLS. */
static int tls_compare(struct bench *b, struct tpart *p, const char *dir)
{
    char f[3][PATH_MAX + 16];
    const char *names[3] = {"server.crt", "server.key", "ca.crt"};
    for (int i = 0; i < 3; i++)
        snprintf(f[i], sizeof f[i], "%s/%s", dir, names[i]);
    struct rs_options o;
    memset(&o, 0, sizeof o);
    o.tls = (struct rs_tls){f[0], f[1], f[2], 0};
    struct rs_server *srv = rs_start_opts(&o);
    if (!srv) {
        fprintf(stderr, "uncontended: the TLS server could not be started\n");
        return 1;
    }
    printf("uncontended: hilock on a plain server (port %d) vs on a TLS one "
           "(port %d, TLS 1.2+, certificate verified)\n",
           b->port, rs_port(srv));
    p->ratio_label = "TLS / plain";
    p->side[0].label = "plain";
    p->side[0].tag = "plain";
    p->side[1].label = "TLS";
    p->side[1].tag = "tls";
    for (int s = 0; s < 2; s++) {
        hilock_options_init(&p->side[s].ho);
        p->side[s].ho.node.host = b->host;
        p->side[s].ho.node.port = s ? rs_port(srv) : b->port;
    }
    p->side[1].ho.tls.mode = HILOCK_TLS_VERIFY;
    p->side[1].ho.tls.ca_file = f[2];
    json_int(b->json, "tls_port", rs_port(srv));
    int rc = t_result(t_measure(p));
    rs_stop(srv);
    return rc;
}

static int uncontended_tls(struct bench *b)
{
    struct tpart *p = calloc(1, sizeof(*p));
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX], cmd[PATH_MAX + 16];
    int rc = 1;
    if (!p)
        return 1;
    t_plan(p, b);
    snprintf(dir, sizeof dir, "%s/hilock-bench-tls-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(dir) && rs_tls_certs(dir) == 0)
        rc = tls_compare(b, p, dir);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "uncontended: could not remove %s\n", dir);
    free(p);
    return rc;
}
#else
static int uncontended_tls(struct bench *b)
{
    (void)b;
    fprintf(stderr, "uncontended --tls: this hilock was built without TLS "
                    "(it needs hiredis 1.x with hiredis_ssl)\n");
    return 1;
}
#endif

int uncontended_topology(struct bench *b)
{
    if (b->o.tls)
        return uncontended_tls(b);
    return b->o.cluster ? uncontended_cluster(b) : uncontended_wait(b);
}
