/* sc_faultruns.c -- "faults --redlock" and "faults --cluster N": the
 * contended lock while one node of a topology fails, in turn, in several
 * ways.
 *
 * The workers of "contended" (contend.h: P processes, W waiters, one lock,
 * fencing on, the section GET + SET of a counter on the bench's own plain
 * redis-server, which no fault touches) run for --seconds while the
 * parent injects one fault after another, each in a segment of its own:
 *  - Redlock, 3 masters: master 1 is reached through a fault proxy
 *    (tests/proxy.c) that runs in a process of its own, so that it keeps
 *    forwarding while the parent sleeps and while it waits for the workers.
 *    In turn: SIGSTOP of master 1, a blackhole (the proxy holds every byte
 *    both ways), cuts (the proxy closes every connection, every 250 ms),
 *    a delay (the proxy holds the replies and lets them go every
 *    FR_DELAY_MS) and kill -9 of master 1, restarted empty at the end of
 *    the window. A minority fault: the two others make a majority
 *    throughout, so no check is exempted and a fault should cost at most
 *    20 % of the throughput.
 *  - Cluster of N masters with one replica each (tests/redis_cluster.h),
 *    wait_replicas 1: a manual failover (CLUSTER FAILOVER on the replica
 *    of the lock's master), a reshard of the lock's slot by hand (SETSLOT
 *    IMPORTING/MIGRATING, a second of ASK, MIGRATE, a second, SETSLOT
 *    NODE) and kill -9 of the lock's master, restarted at once after its
 *    replica took over so that it comes back as that one's replica.
 * A fault lasts min(5 s, a third of its segment); the watchdog lease is 5 s
 * unless --lease says otherwise. The figures and targets are faultfig.h's:
 * nothing may overlap, be lost, go back or never fire, and the longest
 * time with no holder is at most the lease plus the longest failover. */
#include "faultfig.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>
#include <hilock/hilock.h>

#include "proxy.h"
#include "redis_cluster.h"
#include "redis_server.h"

#define FR_DEFAULT_SECONDS 30
#define FR_DEFAULT_LEASE_MS 5000
#define FR_DRAIN_MS 6000          /* > request timeout: every callback due */
#define FR_WINDOW_MAX_NS 5000000000LL
#define FR_CUT_EVERY_MS 250
#define FR_DELAY_MS 200
#define FR_MASTERS 3
#define FR_MIN_SHARE 0.8          /* a minority master costs <= 20 % */

/* ---- the fault proxy, in a process of its own ---------------------------- */

/* Commands on the proxy's pipe, one byte each. */
enum { PX_BLACKHOLE = 'B', PX_FLOW = 'b', PX_CUT = 'C', PX_DELAY = 'D',
       PX_NODELAY = 'd' };

struct fr_proxy {
    pid_t pid;
    int cmd;   /* write end of its command pipe; -1: none */
    int port;  /* where it listens */
};

struct px_child {
    struct event_base *base;
    struct tp_proxy *tp;
    struct event *delay;
};

/* Delay: let the replies held so far go, and hold the next ones. */
static void px_on_delay(evutil_socket_t fd, short what, void *arg)
{
    struct px_child *c = arg;
    tp_hold_replies(c->tp, false);
    tp_hold_replies(c->tp, true);
}

static void px_on_cmd(evutil_socket_t fd, short what, void *arg)
{
    struct px_child *c = arg;
    struct timeval every = {0, FR_DELAY_MS * 1000};
    char op;
    if (read(fd, &op, 1) != 1) {
        event_base_loopbreak(c->base); /* the parent is gone or done */
        return;
    }
    switch (op) {
    case PX_BLACKHOLE: tp_blackhole(c->tp, true); break;
    case PX_FLOW: tp_blackhole(c->tp, false); break;
    case PX_CUT: tp_cut_all(c->tp); break;
    case PX_DELAY:
        tp_hold_replies(c->tp, true);
        evtimer_add(c->delay, &every);
        break;
    case PX_NODELAY:
        evtimer_del(c->delay);
        tp_hold_replies(c->tp, false);
        break;
    }
}

/* The proxy process: listen, tell the port, obey the pipe until it
 * closes. Never returns. */
static void px_main(int upstream, int cmd, int info)
{
    struct px_child c = {event_base_new(), NULL, NULL};
    struct event *ev = NULL;
    int port = -1;
    if (c.base && (c.tp = tp_new(c.base, upstream)) &&
        (c.delay = event_new(c.base, -1, EV_PERSIST, px_on_delay, &c)) &&
        (ev = event_new(c.base, cmd, EV_READ | EV_PERSIST, px_on_cmd, &c)) &&
        event_add(ev, NULL) == 0)
        port = tp_port(c.tp);
    if (write(info, &port, sizeof port) != sizeof port || port < 0)
        _exit(1);
    close(info);
    event_base_dispatch(c.base);
    tp_free(c.tp);
    _exit(0);
}

/* Start a proxy process in front of 127.0.0.1:upstream. 0 or -1. */
static int fr_proxy_start(struct fr_proxy *x, int upstream)
{
    int cmd[2], info[2];
    x->pid = -1;
    x->cmd = -1;
    if (pipe(cmd) != 0)
        return -1;
    if (pipe(info) != 0) {
        close(cmd[0]);
        close(cmd[1]);
        return -1;
    }
    fflush(NULL);
    x->pid = fork();
    if (x->pid == 0) {
        close(cmd[1]);
        close(info[0]);
        px_main(upstream, cmd[0], info[1]);
    }
    close(cmd[0]);
    close(info[1]);
    x->cmd = cmd[1];
    if (x->pid < 0 || read(info[0], &x->port, sizeof x->port) !=
                          sizeof x->port || x->port < 0) {
        close(info[0]);
        return -1;
    }
    close(info[0]);
    return 0;
}

/* Send op to the proxy. 0 or -1. */
static int fr_proxy_do(struct fr_proxy *x, char op)
{
    return write(x->cmd, &op, 1) == 1 ? 0 : -1;
}

static void fr_proxy_stop(struct fr_proxy *x)
{
    if (x->cmd >= 0)
        close(x->cmd);
    if (x->pid > 0) {
        kill(x->pid, SIGTERM);
        while (waitpid(x->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    x->cmd = -1;
    x->pid = -1;
}

/* ---- the schedule, shared by both topologies ----------------------------- */

struct fr_run;

/* Inject fault i of the run: block until it is over, filling f (t0 when
 * it began, t1 when it was over, failed). */
typedef void fr_inject_fn(struct fr_run *r, int i, struct ff_fault *f);

struct fr_run {
    struct bench *b;
    const struct contend_cfg *cfg;
    const char *const *names; /* of the faults */
    int n;
    fr_inject_fn *inject;
    int64_t window_ns;        /* how long a fault lasts */
    int64_t t_go;
    struct ff_fault f[FF_FAULTS_MAX];
    /* Redlock */
    struct rs_server *victim;
    struct fr_proxy px;
    /* Cluster */
    struct rc_cluster *c;
    int slot;
};

/* Wait until t_ns with the progress line going. */
static void fr_until(struct fr_run *r, int64_t t_ns)
{
    contend_progress(r->b, r->cfg, r->t_go, t_ns);
}

/* contend_run's hook: fault i at the start of the second third of
 * segment i (the run is cut into n + 1 segments; the last is for
 * recovery). */
static void fr_during(struct bench *b, int64_t t_go, int64_t t_end, void *arg)
{
    struct fr_run *r = arg;
    int64_t seg = (t_end - t_go) / (r->n + 1);
    r->t_go = t_go;
    r->window_ns = seg / 3 < FR_WINDOW_MAX_NS ? seg / 3 : FR_WINDOW_MAX_NS;
    for (int i = 0; i < r->n; i++) {
        fr_until(r, t_go + seg * i + seg / 3);
        progress_show(b, "%s ...", r->names[i]);
        r->f[i].name = r->names[i];
        r->inject(r, i, &r->f[i]);
    }
    fr_until(r, t_end);
}

/* Run the workers under r's faults and report. Returns the exit
 * status. */
static int fr_go(struct fr_run *r, const char *key, const char *title,
                 const struct ff_targets *tg)
{
    struct cresults res;
    struct ff_figs g;
    const struct contend_cfg *cfg = r->cfg;
    if (contend_run(r->b, cfg, &res, fr_during, r) != 0) {
        fprintf(stderr, "faults: the workers could not be started\n");
        return 1;
    }
    int64_t stop = res.t_go_ns + (int64_t)(cfg->seconds * 1e9);
    ff_compute(&res, contend_counter(cfg), stop, r->f, r->n, &g);
    ff_outcomes(&res.sum);
    json_int(r->b->json, "procs", cfg->procs);
    json_int(r->b->json, "waiters", cfg->waiters);
    json_num(r->b->json, "seconds", cfg->seconds);
    json_int(r->b->json, "lease_ms", cfg->lease_ms);
    int missed = ff_report(r->b, key, title, &g, r->f, r->n, tg, res.t_go_ns);
    int bad = res.failed || res.sum.stuck;
    if (bad)
        printf("  %d worker(s) failed, %" PRIu64 " waiter(s) stuck\n",
               res.failed, res.sum.stuck);
    free(res.recs);
    printf("result: %s\n", bad || missed ? "FAIL" : "ok");
    return bad || missed ? 1 : 0;
}

/* The settings every fault run shares. */
static void fr_cfg(struct contend_cfg *cfg, const struct bench *b)
{
    contend_cfg_init(cfg, b, b->o.seconds > 0 ? b->o.seconds
                                              : FR_DEFAULT_SECONDS,
                     FR_DRAIN_MS);
    cfg->lease_ms = b->o.lease_ms ? b->o.lease_ms : FR_DEFAULT_LEASE_MS;
}

/* A fault run r of bench b with the shared settings in cfg (fr_cfg), its
 * n faults named names and made by inject; nothing else set yet. */
static void fr_init(struct fr_run *r, struct bench *b, struct contend_cfg *cfg,
                    const char *const *names, int n, fr_inject_fn *inject)
{
    fr_cfg(cfg, b);
    memset(r, 0, sizeof *r);
    r->b = b;
    r->cfg = cfg;
    r->names = names;
    r->n = n;
    r->inject = inject;
    r->px = (struct fr_proxy){-1, -1, -1};
}

/* ---- Redlock: one master of three fails --------------------------------- */

static const char *const rl_names[] = {"SIGSTOP", "blackhole", "cuts",
                                       "delay", "kill -9 + restart"};

/* Hold fault f for the window; with cut, cut every connection every
 * FR_CUT_EVERY_MS meanwhile. */
static void rl_hold(struct fr_run *r, struct ff_fault *f, int cut)
{
    int64_t end = now_ns() + r->window_ns;
    while (now_ns() < end) {
        if (cut)
            f->failed |= fr_proxy_do(&r->px, PX_CUT) != 0;
        int64_t next = now_ns() + FR_CUT_EVERY_MS * 1000000LL;
        fr_until(r, cut && next < end ? next : end);
    }
}

static void rl_inject(struct fr_run *r, int i, struct ff_fault *f)
{
    f->t0 = now_ns();
    switch (i) {
    case 0:
        f->failed = rs_pause(r->victim) != 0;
        rl_hold(r, f, 0);
        f->failed |= rs_resume(r->victim) != 0;
        break;
    case 1:
        f->failed = fr_proxy_do(&r->px, PX_BLACKHOLE) != 0;
        rl_hold(r, f, 0);
        f->failed |= fr_proxy_do(&r->px, PX_FLOW) != 0;
        break;
    case 2:
        rl_hold(r, f, 1);
        break;
    case 3:
        f->failed = fr_proxy_do(&r->px, PX_DELAY) != 0;
        rl_hold(r, f, 0);
        f->failed |= fr_proxy_do(&r->px, PX_NODELAY) != 0;
        break;
    default:
        f->failed = rs_kill9(r->victim) != 0;
        rl_hold(r, f, 0);
        f->failed |= rs_restart(r->victim) != 0;
        break;
    }
    f->t1 = now_ns();
}

/* Start the masters and master 1's proxy; fill ep. 0 or -1. */
static int rl_up(struct fr_run *r, struct rs_server **srv,
                 struct hilock_endpoint *ep)
{
    for (int i = 0; i < FR_MASTERS; i++) {
        if (!(srv[i] = rs_start(NULL)))
            return -1;
        ep[i] = (struct hilock_endpoint){"127.0.0.1", rs_port(srv[i]), NULL};
    }
    r->victim = srv[0];
    if (fr_proxy_start(&r->px, rs_port(srv[0])) != 0)
        return -1;
    ep[0].port = r->px.port;
    return 0;
}

static int faults_redlock(struct bench *b)
{
    struct rs_server *srv[FR_MASTERS] = {NULL};
    struct hilock_endpoint ep[FR_MASTERS];
    struct contend_cfg cfg;
    struct fr_run r;
    struct ff_targets tg;
    char title[160];
    int rc = 1;
    fr_init(&r, b, &cfg, rl_names, 5, rl_inject);
    if (rl_up(&r, srv, ep) != 0) {
        fprintf(stderr, "faults: the masters or the proxy did not start\n");
    } else {
        cfg.masters = ep;
        cfg.nmasters = FR_MASTERS;
        printf("faults --redlock: masters on ports %d (through a proxy on "
               "%d) %d %d; %d processes, %d waiters, %.0f s, lease %u ms, "
               "counter on port %d\n",
               rs_port(srv[0]), ep[0].port, ep[1].port, ep[2].port,
               cfg.procs, cfg.waiters, cfg.seconds, cfg.lease_ms, cfg.port);
        snprintf(title, sizeof title, "Redlock, %d masters, faults of master "
                 "1 in turn", FR_MASTERS);
        tg = (struct ff_targets){cfg.lease_ms, FR_MIN_SHARE};
        rc = fr_go(&r, "redlock", title, &tg);
    }
    fr_proxy_stop(&r.px);
    for (int i = 0; i < FR_MASTERS; i++)
        rs_stop(srv[i]);
    return rc;
}

/* ---- Cluster: the lock's master fails over, moves, dies ----------------- */

static const char *const cl_names[] = {"CLUSTER FAILOVER", "reshard",
                                       "kill -9 of the master"};

/* A replica of master m, or -1. */
static int cl_replica_of(struct rc_cluster *c, int m)
{
    for (int i = 0; i < rc_count(c); i++)
        if (i != m && rc_master_of(c, i) == m)
            return i;
    return -1;
}

/* A master other than m, or -1. */
static int cl_other_master(struct rc_cluster *c, int m)
{
    int ms[16];
    int n = rc_masters(c, ms, 16);
    for (int i = 0; i < n && i < 16; i++)
        if (ms[i] != m)
            return ms[i];
    return -1;
}

/* Move the lock's slot from m to another master in steps, a second of
 * ASK and a second after the keys moved between them. 0 or -1. */
static int cl_reshard(struct fr_run *r, int m)
{
    int to = cl_other_master(r->c, m);
    if (to < 0 || rc_migrate_begin(r->c, r->slot, m, to) != 0)
        return -1;
    fr_until(r, now_ns() + 1000000000LL);
    if (rc_migrate_keys(r->c, r->slot, m, to) != 0)
        return -1;
    fr_until(r, now_ns() + 1000000000LL);
    return rc_migrate_finish(r->c, r->slot, to);
}

static void cl_inject(struct fr_run *r, int i, struct ff_fault *f)
{
    int m = rc_slot_owner(r->c, r->slot), rep = -1;
    f->t0 = now_ns();
    f->failover = i != 1;
    if (m < 0) {
        f->failed = 1;
    } else if (i == 0) {
        rep = cl_replica_of(r->c, m);
        f->failed = rep < 0 || rc_failover(r->c, rep) != 0;
    } else if (i == 1) {
        f->failed = cl_reshard(r, m) != 0;
    } else {
        f->failed = rc_kill_master(r->c, m) < 0;
    }
    f->t1 = now_ns();
    /* Back as the new master's replica, so that WAIT 1 is met again. */
    if (i == 2 && m >= 0 && rs_restart(rc_server(r->c, m)) != 0)
        f->failed = 1;
}

static int faults_cluster(struct bench *b)
{
    struct hilock_endpoint seeds[HILOCK_SEEDS_MAX];
    struct contend_cfg cfg;
    struct fr_run r;
    struct ff_targets tg;
    char title[160];
    int masters = b->o.cluster, rc = 1;
    fr_init(&r, b, &cfg, cl_names, 3, cl_inject);
    r.slot = rc_key_slot(CONTEND_LOCK, strlen(CONTEND_LOCK));
    printf("faults --cluster: starting %d masters with a replica each...\n",
           masters);
    if (!(r.c = rc_start(masters, 1))) {
        fprintf(stderr, "faults: the cluster did not start\n");
        return 1;
    }
    int n = rc_count(r.c) < HILOCK_SEEDS_MAX ? rc_count(r.c)
                                             : HILOCK_SEEDS_MAX;
    for (int i = 0; i < n; i++)
        seeds[i] = (struct hilock_endpoint){"127.0.0.1", rc_port(r.c, i),
                                            NULL};
    cfg.cluster = seeds;
    cfg.ncluster = (size_t)n;
    cfg.wait_replicas = 1;
    printf("faults --cluster: %d nodes from port %d; lock slot %d on node "
           "%d; %d processes, %d waiters, %.0f s, lease %u ms, WAIT 1, "
           "counter on port %d\n",
           n, rc_port(r.c, 0), r.slot, rc_slot_owner(r.c, r.slot), cfg.procs,
           cfg.waiters, cfg.seconds, cfg.lease_ms, cfg.port);
    snprintf(title, sizeof title, "Cluster, %d masters + %d replicas, the "
             "lock's master in turn", masters, masters);
    tg = (struct ff_targets){cfg.lease_ms, 0};
    rc = fr_go(&r, "cluster", title, &tg);
    rc_stop(r.c);
    return rc;
}

int faults_topology(struct bench *b)
{
    return b->o.redlock ? faults_redlock(b) : faults_cluster(b);
}
