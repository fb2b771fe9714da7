/* SPDX-License-Identifier: BSD-3-Clause */
/* hilock-bench.c -- measure hilock: hilock-bench SCENARIO [options].
 *
 * Parses the command line, starts (or checks) the redis-server, runs one
 * scenario and closes the JSON file and the plots. The scenarios live in
 * sc_*.c; what each measures and prints is in bench/README.md.
 *
 * Exit status: 0 the run passed its checks, 1 a check failed or the run
 * could not be done, 2 bad usage. */
#include "bench.h"

#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <hilock/hilock.h>

static const struct scenario scenarios[] = {
    {"uncontended", "lock+release pairs on distinct keys vs raw EVALSHA",
     OPT_SECONDS | OPT_INFLIGHT | OPT_ROUNDS | OPT_WAIT | OPT_REMOTE |
         OPT_CLUSTER | OPT_WAIT_REPLICAS | OPT_TLS | OPT_FAIR,
     sc_uncontended,
     "  --inflight K   pairs in flight, at most 1024 (default: 1, 64, 256 and\n"
     "                 1024 in one run)\n"
     "  --seconds S    length of one measured phase (1)\n"
     "  --rounds R     phases per mode and K, interleaved (3)\n"
     "  --wait MS      wait_ms of every acquire; 0 tries once (5000)\n"
     "  --fair         the hilock rows in fair mode (hilock_options.fair = 1)\n"
     "  --cluster N    instead: hilock on a cluster of N masters (3..9) vs\n"
     "                 on one plain master, in one run\n"
     "  --wait-replicas N\n"
     "                 instead: hilock on a master with N replicas (1..4),\n"
     "                 WAIT off vs WAIT N, in one run\n"
     "  --tls          instead: hilock on a plain server vs on a TLS one,\n"
     "                 in one run (needs hilock built with TLS)\n"},
    {"contended", "P processes, W waiters, one lock, a GET/SET section",
     OPT_SECONDS | OPT_PROCS | OPT_WAITERS | OPT_WORST | OPT_FAIR |
         OPT_NO_FENCING |
         OPT_REMOTE,
     sc_contended,
     "  --procs P      processes, one loop and one client each (4)\n"
     "  --waiters W    waiters in all (100)\n"
     "  --seconds S    run time (10)\n"
     "  --worst N      also list the N longest hand-offs (0)\n"
     "  --fair         clients in fair mode (hilock_options.fair = 1)\n"
     "  --no-fencing   no fencing tokens (the plain path of a lock goes)\n"},
    {"held", "N locks held under the watchdog: memory, CPU, renewals",
     OPT_SECONDS | OPT_LOCKS | OPT_LEASE | OPT_REMOTE, sc_held,
     "  --locks N      locks held (100000)\n"
     "  --lease MS     watchdog lease; renewed every third (30000)\n"
     "  --seconds S    hold time (35: three renewal rounds)\n"},
    {"waiters", "W parked waiters over M names, then released",
     OPT_SECONDS | OPT_WAITERS | OPT_NAMES | OPT_REMOTE, sc_waiters,
     "  --waiters W    parked waiters (100000)\n"
     "  --names M      lock names they wait on (10000)\n"
     "  --seconds S    bound of the whole run and every wait (60)\n"},
    {"oversell", "stock S, P x C buyers, 3000 purchases under one lock",
     OPT_SECONDS | OPT_PROCS | OPT_BUYERS | OPT_PURCHASES | OPT_STOCK |
         OPT_NO_LOCK | OPT_REMOTE,
     sc_oversell,
     "  --stock S      units in stock (200)\n"
     "  --purchases N  purchases in all (3000)\n"
     "  --procs P      processes (4)\n"
     "  --buyers C     concurrent buyers per process (25)\n"
     "  --seconds S    bound of the run (60)\n"
     "  --no-lock      buy without the lock: the check must catch it\n"},
    {"faults", "contended while redis-server is paused and kill -9'd",
     OPT_SECONDS | OPT_PROCS | OPT_WAITERS | OPT_SENTINEL | OPT_LEASE |
         OPT_REDLOCK | OPT_CLUSTER,
     sc_faults,
     "  --procs P      processes (4)\n"
     "  --waiters W    waiters in all (100)\n"
     "  --seconds S    run time; 3 pauses and 3 kill -9 in it (20; with\n"
     "                 --sentinel: of each of the 4 runs, 15; with\n"
     "                 --redlock or --cluster: 30)\n"
     "  --sentinel     instead: 1 master + 1 replica + 3 Sentinels; SENTINEL\n"
     "                 FAILOVER and kill -9 of the master, each with WAIT\n"
     "                 off and WAIT 1\n"
     "  --redlock      instead: 3 masters; one is stopped, blackholed, cut,\n"
     "                 delayed and kill -9'd in turn\n"
     "  --cluster N    instead: N masters + N replicas; the lock's master\n"
     "                 fails over, its slot moves, the master is kill -9'd\n"
     "  --lease MS     with --sentinel, --redlock, --cluster: the watchdog\n"
     "                 lease (5000)\n"},
    {"redlock", "uncontended on 1, 3 and 5 masters; contended on 3, one "
                "killed",
     OPT_SECONDS | OPT_INFLIGHT | OPT_ROUNDS | OPT_WAIT | OPT_PROCS |
         OPT_WAITERS | OPT_CSECONDS | OPT_MASTER_OUT | OPT_MULTI,
     sc_redlock,
     "  --inflight K   uncontended pairs in flight, at most 1024 (default: 1\n"
     "                 and 64 in one run; the target is checked at the first)\n"
     "  --seconds S    length of one uncontended phase (1)\n"
     "  --rounds R     uncontended phases per topology, mode and K (3)\n"
     "  --wait MS      wait_ms of every uncontended acquire (5000)\n"
     "  --procs P      contended: processes (4)\n"
     "  --waiters W    contended: waiters in all (100)\n"
     "  --contended-seconds S\n"
     "                 contended: run time; kill -9 of a master halfway (10)\n"
     "  --master-out refuse|stop\n"
     "                 instead: contended with all masters up, then with\n"
     "                 one refusing connections or stopped (SIGSTOP)\n"
     "  --multi        with --master-out: each waiter takes a MultiLock of\n"
     "                 two names\n"},
    {"readmostly", "P x R readers and one writer on a read-write lock, then "
                   "on a mutex",
     OPT_SECONDS | OPT_PROCS | OPT_WAITERS | OPT_HOLD | OPT_EVERY |
         OPT_REMOTE,
     sc_readmostly,
     "  --procs P      reader processes, one loop and one client each (2)\n"
     "  --waiters W    reader handles in all (20)\n"
     "  --hold MS      length of every section (1)\n"
     "  --every MS     the writer's pause between its sections (10)\n"
     "  --seconds S    length of each of the two runs (5)\n"},
    {"semaphore", "P x W waiters for the N permits of a semaphore",
     OPT_SECONDS | OPT_PROCS | OPT_WAITERS | OPT_HOLD | OPT_PERMITS |
         OPT_COUNTING | OPT_REMOTE,
     sc_semaphore,
     "  --permits N    permits of the semaphore (4)\n"
     "  --procs P      processes, one loop and one client each (2)\n"
     "  --waiters W    waiters in all (20)\n"
     "  --hold MS      length of every section (2)\n"
     "  --seconds S    run time (5)\n"
     "  --counting     a counting semaphore (RSemaphore) instead of\n"
     "                 expiring permits under the watchdog\n"},
    {"torture", "every client kind on many locks; kill -9, SIGSTOP, CLIENT "
                "KILL",
     OPT_SECONDS | OPT_PROCS | OPT_WAITERS | OPT_NAMES | OPT_LEASE |
         OPT_ACQUISITIONS | OPT_EVERY,
     sc_torture,
     "  --procs P      processes, one client of each kind each (4, at most\n"
     "                 64)\n"
     "  --waiters W    waiters in all, the kinds in turn (160)\n"
     "  --names N      lock names, at most 4096 (64)\n"
     "  --seconds S    bound of the run; faults all along it (20)\n"
     "  --acquisitions N\n"
     "                 stop once N locks were acquired (no target)\n"
     "  --lease MS     watchdog lease of the default, fair and scripts-only\n"
     "                 clients (3000)\n"
     "  --every MS     from the end of a fault to the next (1000)\n"},
    {"guarded", "guarded writes vs plain SETs of one key: Redis CPU each",
     OPT_SECONDS | OPT_INFLIGHT | OPT_ROUNDS | OPT_REMOTE, sc_guarded,
     "  --inflight K   writes in flight (64)\n"
     "  --seconds S    length of one phase (2)\n"
     "  --rounds R     phases of each kind, alternating (2)\n"},
    {"scripts", "each lock script alone: Redis us per call by queue size",
     OPT_SERIAL | OPT_REMOTE, sc_scripts,
     "  --serial       each call sent after the last one's reply, as calls\n"
     "                 arrive in a contended run (pipelined batches of 32\n"
     "                 without it); 1, 10, 100 and 1000 queued, 2000 calls\n"
     "                 per case\n"},
};

#define NSCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))

static int usage(const struct scenario *only)
{
    fprintf(stderr,
            "usage: hilock-bench SCENARIO [options]\n\n"
            "common options:\n"
            "  --host H       redis host with --port (127.0.0.1)\n"
            "  --port N       use this redis-server instead of starting one\n"
            "  --json FILE    write the figures as JSON\n"
            "  --plot DIR     write PNG plots (needs gnuplot)\n"
            "  --no-progress  no progress line on a terminal\n");
    for (size_t i = 0; i < NSCENARIOS; i++) {
        const struct scenario *s = &scenarios[i];
        if (only && only != s)
            continue;
        fprintf(stderr, "\n%s: %s\n%s", s->name, s->summary, s->help);
    }
    return 2;
}

/* Parse a number in [min, max] into *out. 0 or -1. */
static int parse_num(const char *arg, double min, double max, double *out)
{
    char *end;
    double v = strtod(arg, &end);
    if (end == arg || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* Store the value of option c (a getopt_long val) in *o. 0 or -1. */
static int set_option(struct bench_opts *o, int c, const char *arg)
{
    double v = 0;
    switch (c) {
    case 'H': o->host = arg; return 0;
    case 'j': o->json_path = arg; return 0;
    case 'g': o->plot_dir = arg; return 0;
    case 'q': o->no_progress = 1; return 0;
    case 'n': o->no_lock = 1; o->given |= OPT_NO_LOCK; return 0;
    case 'T': o->sentinel = 1; o->given |= OPT_SENTINEL; return 0;
    case 'A': o->redlock = 1; o->given |= OPT_REDLOCK; return 0;
    case 'Y': o->tls = 1; o->given |= OPT_TLS; return 0;
    case 'F': o->fair = 1; o->given |= OPT_FAIR; return 0;
    case 'G': o->no_fencing = 1; o->given |= OPT_NO_FENCING; return 0;
    case 'Z': o->serial = 1; o->given |= OPT_SERIAL; return 0;
    case 'K': o->counting = 1; o->given |= OPT_COUNTING; return 0;
    case 'M': o->multi = 1; o->given |= OPT_MULTI; return 0;
    case 'O':
        o->master_out = strcmp(arg, "refuse") == 0 ? 1
                        : strcmp(arg, "stop") == 0 ? 2 : 0;
        o->given |= OPT_MASTER_OUT;
        return o->master_out ? 0 : -1;
    }
    double min = c == 's' || c == 'C' ? 0.1
                 : c == 'W' || c == 'D' || c == 'E' ? 0 : 1;
    if (parse_num(arg, min, c == 'L' || c == 'Q' ? 1e8 : 1e7, &v) != 0)
        return -1;
    switch (c) {
    case 'P':
        o->port = (int)v;
        o->given |= OPT_REMOTE;
        return v <= 65535 ? 0 : -1;
    case 's': o->seconds = v; o->given |= OPT_SECONDS; break;
    case 'C':
        o->contended_seconds = v;
        o->given |= OPT_CSECONDS;
        break;
    case 'k': o->inflight = (int)v; o->given |= OPT_INFLIGHT; break;
    case 'r': o->rounds = (int)v; o->given |= OPT_ROUNDS; break;
    case 'p': o->procs = (int)v; o->given |= OPT_PROCS; break;
    case 'w': o->waiters = (int)v; o->given |= OPT_WAITERS; break;
    case 'm': o->names = (int)v; o->given |= OPT_NAMES; break;
    case 'L': o->locks = (long)v; o->given |= OPT_LOCKS; break;
    case 'l': o->lease_ms = (uint32_t)v; o->given |= OPT_LEASE; break;
    case 'W': o->wait_ms = (uint32_t)v; o->given |= OPT_WAIT; break;
    case 'b': o->buyers = (int)v; o->given |= OPT_BUYERS; break;
    case 'u': o->purchases = (int)v; o->given |= OPT_PURCHASES; break;
    case 'S': o->stock = (int)v; o->given |= OPT_STOCK; break;
    case 'x': o->worst = (int)v; o->given |= OPT_WORST; break;
    case 'D': o->hold_ms = v; o->given |= OPT_HOLD; break;
    case 'E': o->every_ms = (uint32_t)v; o->given |= OPT_EVERY; break;
    case 'Q':
        o->acquisitions = (long)v;
        o->given |= OPT_ACQUISITIONS;
        break;
    case 'N':
        o->permits = (int)v;
        o->given |= OPT_PERMITS;
        return v <= 1000000 ? 0 : -1;
    case 'c':
        o->cluster = (int)v;
        o->given |= OPT_CLUSTER;
        return v >= 3 && v <= 9 ? 0 : -1;
    case 'R':
        o->wait_replicas = (int)v;
        o->given |= OPT_WAIT_REPLICAS;
        return v <= 4 ? 0 : -1;
    default: return -1;
    }
    return 0;
}

/* Parse the options after the scenario name. 0 or -1. */
static int parse_options(int argc, char **argv, struct bench_opts *o)
{
    static const struct option longopts[] = {
        {"host", required_argument, NULL, 'H'},
        {"port", required_argument, NULL, 'P'},
        {"json", required_argument, NULL, 'j'},
        {"plot", required_argument, NULL, 'g'},
        {"no-progress", no_argument, NULL, 'q'},
        {"seconds", required_argument, NULL, 's'},
        {"contended-seconds", required_argument, NULL, 'C'},
        {"inflight", required_argument, NULL, 'k'},
        {"rounds", required_argument, NULL, 'r'},
        {"procs", required_argument, NULL, 'p'},
        {"waiters", required_argument, NULL, 'w'},
        {"names", required_argument, NULL, 'm'},
        {"locks", required_argument, NULL, 'L'},
        {"lease", required_argument, NULL, 'l'},
        {"wait", required_argument, NULL, 'W'},
        {"buyers", required_argument, NULL, 'b'},
        {"purchases", required_argument, NULL, 'u'},
        {"stock", required_argument, NULL, 'S'},
        {"no-lock", no_argument, NULL, 'n'},
        {"worst", required_argument, NULL, 'x'},
        {"cluster", required_argument, NULL, 'c'},
        {"wait-replicas", required_argument, NULL, 'R'},
        {"sentinel", no_argument, NULL, 'T'},
        {"redlock", no_argument, NULL, 'A'},
        {"tls", no_argument, NULL, 'Y'},
        {"fair", no_argument, NULL, 'F'},
        {"no-fencing", no_argument, NULL, 'G'},
        {"serial", no_argument, NULL, 'Z'},
        {"hold", required_argument, NULL, 'D'},
        {"every", required_argument, NULL, 'E'},
        {"permits", required_argument, NULL, 'N'},
        {"counting", no_argument, NULL, 'K'},
        {"master-out", required_argument, NULL, 'O'},
        {"multi", no_argument, NULL, 'M'},
        {"acquisitions", required_argument, NULL, 'Q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int c;
    memset(o, 0, sizeof(*o));
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c == 'h' || c == '?' || set_option(o, c, optarg) != 0)
            return -1;
    }
    if (o->host && !o->port)
        return -1;
    return optind == argc ? 0 : -1;
}

/* The options given that sc does not take, or 0. */
static unsigned foreign_options(const struct scenario *sc,
                                const struct bench_opts *o)
{
    return o->given & ~sc->opts;
}

/* Nonzero when options that each make the run start its own deployment
 * are combined with each other or with --port. */
static int conflicting_options(const struct bench_opts *o)
{
    unsigned own = o->given & (OPT_CLUSTER | OPT_WAIT_REPLICAS | OPT_SENTINEL |
                               OPT_TLS | OPT_REDLOCK);
    return (own & (own - 1)) || (own && (o->given & OPT_REMOTE));
}

/* Open the JSON file and write what every run has. 0 or -1. */
static int json_begin(struct bench *b)
{
    if (!b->o.json_path)
        return 0;
    if (!(b->json = json_open(b->o.json_path)))
        return -1;
    json_obj(b->json, NULL);
    json_str(b->json, "scenario", b->scenario);
    json_str(b->json, "hilock_version", "0.1.0");
    return 0;
}

/* Close the JSON file and report the plots. Returns rc, or 1 when the JSON
 * file could not be written. */
static int finish(struct bench *b, int rc)
{
    json_bool(b->json, "ok", rc == 0);
    json_end(b->json);
    if (json_close(b->json) != 0) {
        fprintf(stderr, "hilock-bench: writing %s failed\n", b->o.json_path);
        rc = 1;
    } else if (b->o.json_path) {
        printf("json: %s\n", b->o.json_path);
    }
    if (b->plots_skipped)
        printf("plots: skipped (gnuplot is not installed; "
               "apt-get install gnuplot-nox)\n");
    else if (b->o.plot_dir)
        printf("plots: %d written to %s%s\n", b->plots_written,
               b->o.plot_dir, b->plots_failed ? " (some failed)" : "");
    return rc;
}

int main(int argc, char **argv)
{
    struct bench b;
    const struct scenario *sc = NULL;
    memset(&b, 0, sizeof b);
    if (argc < 2)
        return usage(NULL);
    for (size_t i = 0; i < NSCENARIOS; i++)
        if (strcmp(argv[1], scenarios[i].name) == 0)
            sc = &scenarios[i];
    if (!sc)
        return usage(NULL);
    if (parse_options(argc - 1, argv + 1, &b.o) != 0)
        return usage(sc);
    if (foreign_options(sc, &b.o)) {
        fprintf(stderr, "hilock-bench: option not taken by %s%s\n", sc->name,
                (b.o.given & OPT_REMOTE) ? " (it needs its own server)" : "");
        return usage(sc);
    }
    if (conflicting_options(&b.o) ||
        ((b.o.given & OPT_LEASE) && sc->run == sc_faults &&
         !(b.o.given & (OPT_SENTINEL | OPT_REDLOCK | OPT_CLUSTER)))) {
        fprintf(stderr, "hilock-bench: --cluster, --wait-replicas, --tls, "
                        "--sentinel and --redlock start their own servers: "
                        "one of them, without --port (--lease: faults only "
                        "with --sentinel, --redlock or --cluster)\n");
        return usage(sc);
    }
    b.scenario = sc->name;
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* A write to a connection or worker that went away must fail with
     * EPIPE, not kill the bench (hilock installs no signal handlers; the
     * workers inherit this). */
    signal(SIGPIPE, SIG_IGN);
    if (json_begin(&b) != 0)
        return 1;
    if (bench_server_up(&b, NULL) != 0)
        return finish(&b, 1);
    json_obj(b.json, "server");
    json_str(b.json, "host", b.host);
    json_int(b.json, "port", b.port);
    json_bool(b.json, "started_by_bench", b.srv != NULL);
    json_end(b.json);
    int rc = sc->run(&b);
    progress_end(&b);
    bench_server_down(&b);
    return finish(&b, rc);
}
