/* inventory-demo.c -- many buyers, a few shop fronts, one stock: nothing
 * oversold.
 *
 * Starts a throwaway redis-server, puts 200 items of one product in stock,
 * starts 3 hilock-inventory-server processes and buys 3000 times through
 * real HTTP (evhttp client connections, 300 requests in flight, spread over
 * the servers). Then it prints what was sold and what is left, stops the
 * servers (SIGTERM, which makes them finish and release their locks) and the
 * redis-server, and exits 0 only when exactly the stock was sold, nothing is
 * left, no sale was counted twice and no lock was left behind.
 *
 * Before stopping the servers it reads their GET /metrics pages (the lock
 * clients' counters as Prometheus text, read with tests/promtext.h) and
 * prints a summary: acquisitions, waits and their p50/p99 from the wait
 * histogram, timeouts, lost locks, the latency of the requests to Redis.
 *
 * Every sold answer carries the stock it left behind ({"sold":true,"left":N});
 * two sales reporting the same N would be two buyers who saw the same count:
 * an oversell. That is what "oversold" counts, next to sales beyond the stock.
 *
 * With --redlock N it starts N redis-servers instead of one (N odd, 3..9):
 * the servers take the lock on all of them as Redlock masters (a majority
 * decides) and keep the stock on the first, which is their data store as
 * well as a master. The result must be the same: exactly the stock sold.
 *
 * With --cluster it starts a Redis Cluster of three masters instead
 * (redis-cli --cluster create, through tests/redis_cluster.h): the servers
 * get every node with --cluster, and the lock and the stock live in the
 * cluster, the stock under "stock:{P}", in the slot of the lock key P, on
 * the master that owns it.
 *
 * With --sentinel it starts a master and one Sentinel watching it instead
 * (tests/redis_sentinel.h): the servers get --sentinel and --master, and
 * the lock and the stock are on the master the Sentinel names.
 *
 * All of it is bounded: --time-limit (60 s) for everything up to the last
 * answer, STOP_MS for the servers to exit after that, and alarm() behind
 * both. The servers are started with
 * PR_SET_PDEATHSIG, so they die with this process whatever happens.
 *
 * The pause: --lease-ms L gives every sale's lock a lease of L ms (no
 * watchdog), --pause-ms P (> L) stops the first sale of the first server
 * for P ms between its stock read and its write. The other sales take the
 * lock once that lease runs out. The servers write the stock through a
 * guarded command, which refuses the paused sale's stale write: nothing
 * oversold. With --unguarded they write a plain SET and the paused sale
 * overwrites the newer stock; --expect-oversold then makes the run succeed
 * only if something was oversold (the proof that the pause bites).
 *
 * Options: --servers N --stock N --purchases N --concurrency N
 * --time-limit S --product P --redlock N --cluster --sentinel
 * --lease-ms L --pause-ms P --unguarded --expect-oversold --server PATH
 * (default: hilock-inventory-server next to this executable). */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "promtext.h"
#include "redis_cluster.h"
#include "redis_sentinel.h"
#include "redis_server.h"
#include "tls_certs.h"

#define SERVERS_MAX 16
#define MASTERS_MAX 9   /* HILOCK_MASTERS_MAX */
#define CLUSTER_MASTERS 3  /* --cluster: masters, no replicas */
#define SENTINEL_MASTER "inventory"  /* --sentinel: the master's name */
#define START_MS 10000  /* longest wait for a server to start and answer */
#define STOP_MS 15000   /* longest wait for a server to exit after SIGTERM */

struct config {
    int servers, stock, purchases, concurrency, time_limit_s;
    int masters;           /* --redlock N; 0: one redis-server, no Redlock */
    int cluster;           /* --cluster: a Redis Cluster instead */
    int sentinel;          /* --sentinel: a master and a Sentinel instead */
    int tls;               /* --tls: TLS-only redis-servers */
    int lease_ms;          /* --lease-ms for the servers; 0: watchdog */
    int pause_ms;          /* --pause-ms for server 0 */
    int unguarded;         /* --unguarded for the servers */
    int expect_oversold;   /* --expect-oversold: succeed only if it was */
    const char *product;
    char server_path[PATH_MAX];
};

struct shopfront {
    pid_t pid;
    int port;
    int ready;
};

struct buyer {
    struct demo *demo;
    struct evhttp_connection *conn;
    int server;
};

/* The servers' /metrics pages, summed. */
struct lock_summary {
    double acquisitions, reentries, waits, timeouts, lost;
    struct prom_histogram wait, request;
    char error[200];       /* set: a page was missing or malformed */
};

struct demo {
    const struct config *cfg;
    struct event_base *base;
    struct shopfront shops[SERVERS_MAX];
    struct buyer *buyers;
    char path[128];        /* "/sale?product=P" */
    char stock_path[128];  /* "/stock?product=P" */
    char key[80];          /* "stock:P", in a cluster "stock:{P}" */
    char masters_list[MASTERS_MAX * 24];  /* --redlock for the servers */
    char cluster_list[CLUSTER_MASTERS * 24];  /* --cluster for them */
    char sentinel_list[24];                   /* --sentinel for them */
    char certs[PATH_MAX];  /* --tls: the certificates' directory */
    char cacert[PATH_MAX + 16];  /* --tls: the CA, --cacert for them */
    int issued, answered;  /* purchases sent / answered */
    int sold, not_sold, errors;
    int *left_seen;        /* sold answers per "left" value, [0, stock) */
    int left_bad;          /* sold answers with a "left" outside that range */
    int ready;             /* servers that answered GET /stock */
    char *metrics[SERVERS_MAX];  /* their GET /metrics pages */
    int metrics_answered;
    struct lock_summary locks;
    int timed_out;
    double deadline;       /* the time limit, monotonic seconds */
    double t_start, t_end;
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- the servers ------------------------------------------------------- */

/* In the child: die with the parent, send stdout into the pipe, exec
 * server i on a kernel-chosen port, with the lock and the stock in the
 * cluster of d->cluster_list or on the master of the Sentinel of
 * d->sentinel_list when one is set, else with the stock on redis_port and
 * the lock on the masters of d->masters_list (none when empty); with the
 * lease and the write's guard of the options, and server 0 with the
 * pause. Never returns. */
static void server_exec(const struct demo *d, int i, int out_fd,
                        int redis_port, pid_t parent)
{
    const struct config *cfg = d->cfg;
    char rport[16], lease[16], pause[16];
    const char *argv[24];
    int n = 0;
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        _exit(127);
    dup2(out_fd, STDOUT_FILENO);
    close(out_fd);
    snprintf(rport, sizeof(rport), "%d", redis_port);
    snprintf(lease, sizeof(lease), "%d", cfg->lease_ms);
    snprintf(pause, sizeof(pause), "%d", cfg->pause_ms);
    argv[n++] = cfg->server_path;
    argv[n++] = "--port", argv[n++] = "0";
    argv[n++] = "--product", argv[n++] = cfg->product;
    if (*d->cluster_list) {
        argv[n++] = "--cluster", argv[n++] = d->cluster_list;
    } else if (*d->sentinel_list) {
        argv[n++] = "--sentinel", argv[n++] = d->sentinel_list;
        argv[n++] = "--master", argv[n++] = SENTINEL_MASTER;
    } else {
        argv[n++] = "--redis-port", argv[n++] = rport;
        if (*d->masters_list)
            argv[n++] = "--redlock", argv[n++] = d->masters_list;
        if (cfg->tls)  /* one server or --redlock only (parse_args) */
            argv[n++] = "--cacert", argv[n++] = d->cacert;
    }
    if (cfg->lease_ms)
        argv[n++] = "--lease-ms", argv[n++] = lease;
    if (cfg->pause_ms && i == 0)
        argv[n++] = "--pause-ms", argv[n++] = pause;
    if (cfg->unguarded)
        argv[n++] = "--unguarded";
    argv[n] = NULL;
    execv(cfg->server_path, (char *const *)argv);
    fprintf(stderr, "inventory-demo: cannot run %s: %s\n", cfg->server_path,
            strerror(errno));
    _exit(127);
}

/* The earlier of START_MS from now and the time limit. */
static double start_deadline(const struct demo *d)
{
    double t = now_s() + START_MS / 1e3;
    return t < d->deadline ? t : d->deadline;
}

/* Read the server's startup line from fd until deadline and return the
 * port it names, or -1. */
static int read_port(int fd, double deadline)
{
    char line[512];
    size_t n = 0;
    while (n < sizeof(line) - 1 && !memchr(line, '\n', n)) {
        struct pollfd p = {fd, POLLIN, 0};
        int left_ms = (int)((deadline - now_s()) * 1e3);
        if (left_ms <= 0 || poll(&p, 1, left_ms) <= 0)
            return -1;
        ssize_t r = read(fd, line + n, sizeof(line) - 1 - n);
        if (r <= 0)
            return -1;
        n += (size_t)r;
    }
    line[n] = '\0';
    const char *at = strstr(line, "http://127.0.0.1:");
    return at ? atoi(at + strlen("http://127.0.0.1:")) : -1;
}

/* Start server i and learn its port. 0, or -1 with a message. */
static int server_start(struct demo *d, int i, int redis_port)
{
    int fds[2];
    if (pipe(fds) != 0) {
        perror("inventory-demo: pipe");
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        server_exec(d, i, fds[1], redis_port, parent);
    }
    close(fds[1]);
    if (pid < 0) {
        perror("inventory-demo: fork");
        close(fds[0]);
        return -1;
    }
    d->shops[i].pid = pid;
    d->shops[i].port = read_port(fds[0], start_deadline(d));
    close(fds[0]);
    if (d->shops[i].port <= 0) {
        fprintf(stderr, "inventory-demo: server %d (pid %d) did not start\n",
                i, (int)pid);
        return -1;
    }
    return 0;
}

/* Wait for pid until deadline (seconds, monotonic); its wait status, or -1
 * when it is still running. */
static int wait_until(pid_t pid, double deadline)
{
    int st;
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        if (r < 0 || now_s() >= deadline)
            return -1;
        usleep(10 * 1000);
    }
}

/* SIGTERM every server, wait up to STOP_MS, SIGKILL what is left. Returns
 * the number of servers that did not exit 0. */
static int servers_stop(struct demo *d)
{
    int bad = 0;
    for (int i = 0; i < d->cfg->servers; i++)
        if (d->shops[i].pid > 0)
            kill(d->shops[i].pid, SIGTERM);
    double deadline = now_s() + STOP_MS / 1e3;
    for (int i = 0; i < d->cfg->servers; i++) {
        pid_t pid = d->shops[i].pid;
        if (pid <= 0)
            continue;
        int st = wait_until(pid, deadline);
        if (st == -1) {
            fprintf(stderr, "inventory-demo: server pid %d ignored SIGTERM "
                            "for %d ms; killing it\n", (int)pid, STOP_MS);
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
        if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "inventory-demo: server pid %d ended badly "
                            "(status 0x%x)\n", (int)pid, st);
            bad++;
        }
        d->shops[i].pid = 0;
    }
    return bad;
}

/* ---- HTTP -------------------------------------------------------------- */

/* The body of a response as a NUL-terminated string in buf. */
static const char *body_of(struct evhttp_request *req, char *buf, size_t len)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    ev_ssize_t n = evbuffer_copyout(in, buf, len - 1);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

/* Send method path to buyer b's server; the answer goes to cb(req, b).
 * -1 when the request could not be made. */
static int http_send(struct buyer *b, enum evhttp_cmd_type method,
                     const char *path, void (*cb)(struct evhttp_request *,
                                                  void *))
{
    struct evhttp_request *req = evhttp_request_new(cb, b);
    if (!req)
        return -1;
    evhttp_add_header(evhttp_request_get_output_headers(req), "Host",
                      "127.0.0.1");
    return evhttp_make_request(b->conn, req, method, path);
}

static void probe_sent_later(evutil_socket_t fd, short what, void *arg);

/* GET /stock answered (or failed): a server is ready on a 200, else ask
 * again in 100 ms. */
static void on_probe(struct evhttp_request *req, void *arg)
{
    struct buyer *b = arg;
    struct demo *d = b->demo;
    if (req && evhttp_request_get_response_code(req) == HTTP_OK) {
        d->shops[b->server].ready = 1;
        if (++d->ready == d->cfg->servers)
            event_base_loopbreak(d->base);
        return;
    }
    struct timeval tv = {0, 100 * 1000};
    event_base_once(d->base, -1, EV_TIMEOUT, probe_sent_later, b, &tv);
}

static void probe_sent_later(evutil_socket_t fd, short what, void *arg)
{
    struct buyer *b = arg;
    if (http_send(b, EVHTTP_REQ_GET, b->demo->stock_path,
                  on_probe) != 0)
        on_probe(NULL, b);
}

static void buy(struct buyer *b);

/* Count one purchase's answer. */
static void tally(struct demo *d, struct evhttp_request *req)
{
    char buf[256];
    int code = req ? evhttp_request_get_response_code(req) : 0;
    const char *body = code ? body_of(req, buf, sizeof(buf)) : "";
    const char *left = strstr(body, "\"left\":");
    if (code == HTTP_OK && strstr(body, "\"sold\":true") && left) {
        long n = strtol(left + 7, NULL, 10);
        d->sold++;
        if (n >= 0 && n < d->cfg->stock)
            d->left_seen[n]++;
        else
            d->left_bad++;
    } else if (code == HTTP_OK && strstr(body, "\"sold\":false")) {
        d->not_sold++;
    } else {
        if (d->errors++ < 5)
            fprintf(stderr, "inventory-demo: purchase failed: HTTP %d %s",
                    code, code ? body : "(no answer)\n");
    }
}

/* A purchase was answered: count it, then buy again while purchases are
 * left (keep-alive: the same connection). */
static void on_bought(struct evhttp_request *req, void *arg)
{
    struct buyer *b = arg;
    struct demo *d = b->demo;
    tally(d, req);
    if (++d->answered == d->cfg->purchases) {
        d->t_end = now_s();
        event_base_loopbreak(d->base);
        return;
    }
    buy(b);
}

/* Send the next purchase on b's connection, if any purchase is left. */
static void buy(struct buyer *b)
{
    struct demo *d = b->demo;
    if (d->issued >= d->cfg->purchases)
        return;
    d->issued++;
    if (http_send(b, EVHTTP_REQ_POST, d->path, on_bought) != 0)
        on_bought(NULL, b);
}

static void on_time_limit(evutil_socket_t fd, short what, void *arg)
{
    struct demo *d = arg;
    d->timed_out = 1;
    event_base_loopbreak(d->base);
}

/* Run the loop until something breaks it or until deadline; 0, or -1 when
 * the time ran out. */
static int run_until(struct demo *d, double deadline)
{
    double limit_s = deadline > now_s() ? deadline - now_s() : 0;
    struct timeval tv = {(time_t)limit_s,
                         (suseconds_t)((limit_s - (time_t)limit_s) * 1e6)};
    struct event *t = evtimer_new(d->base, on_time_limit, d);
    d->timed_out = 0;
    evtimer_add(t, &tv);
    event_base_dispatch(d->base);
    event_free(t);
    return d->timed_out ? -1 : 0;
}

/* One keep-alive connection per buyer, buyer i to server i % servers. */
static int buyers_open(struct demo *d)
{
    int n = d->cfg->concurrency;
    d->buyers = calloc((size_t)n, sizeof(*d->buyers));
    if (!d->buyers)
        return -1;
    for (int i = 0; i < n; i++) {
        struct buyer *b = &d->buyers[i];
        b->demo = d;
        b->server = i % d->cfg->servers;
        b->conn = evhttp_connection_base_new(d->base, NULL, "127.0.0.1",
                      (ev_uint16_t)d->shops[b->server].port);
        if (!b->conn)
            return -1;
        evhttp_connection_set_timeout(b->conn, 30);
    }
    return 0;
}

static void buyers_close(struct demo *d)
{
    for (int i = 0; d->buyers && i < d->cfg->concurrency; i++)
        if (d->buyers[i].conn)
            evhttp_connection_free(d->buyers[i].conn);
    free(d->buyers);
    d->buyers = NULL;
}

/* ---- the servers' counters --------------------------------------------- */

/* GET /metrics answered (or failed): keep the page. */
static void on_metrics(struct evhttp_request *req, void *arg)
{
    struct buyer *b = arg;
    struct demo *d = b->demo;
    if (req && evhttp_request_get_response_code(req) == HTTP_OK) {
        struct evbuffer *in = evhttp_request_get_input_buffer(req);
        size_t n = evbuffer_get_length(in);
        char *text = malloc(n + 1);
        if (text) {
            evbuffer_copyout(in, text, n);
            text[n] = '\0';
        }
        d->metrics[b->server] = text;
    }
    if (++d->metrics_answered == d->cfg->servers)
        event_base_loopbreak(d->base);
}

/* Add histogram from (same buckets) into into. */
static void histogram_add(struct prom_histogram *into,
                          const struct prom_histogram *from)
{
    if (into->n == 0)
        *into = *from;
    else if (into->n == from->n) {
        for (size_t i = 0; i < from->n; i++)
            into->count_le[i] += from->count_le[i];
        into->sum += from->sum;
        into->count += from->count;
    }
}

/* Add server i's page to d->locks; 0, or -1 with the reason there. */
static int summary_add(struct demo *d, int i)
{
    static const struct {
        const char *name;
        size_t offset;
    } counters[] = {
        {"hilock_acquisitions_total",
         offsetof(struct lock_summary, acquisitions)},
        {"hilock_reentries_total", offsetof(struct lock_summary, reentries)},
        {"hilock_waits_total", offsetof(struct lock_summary, waits)},
        {"hilock_timeouts_total", offsetof(struct lock_summary, timeouts)},
        {"hilock_locks_lost_total", offsetof(struct lock_summary, lost)},
    };
    struct lock_summary *sum = &d->locks;
    struct prom_doc doc = {0};
    struct prom_histogram wait, request;
    char err[160] = "no answer";
    int rc = d->metrics[i] &&
                     prom_parse(d->metrics[i], strlen(d->metrics[i]), &doc,
                                err, sizeof(err)) == 0 &&
                     prom_histogram(&doc, "hilock_wait_seconds", &wait, err,
                                    sizeof(err)) == 0 &&
                     prom_histogram(&doc, "hilock_request_seconds", &request,
                                    err, sizeof(err)) == 0
                 ? 0
                 : -1;
    for (size_t k = 0; rc == 0 && k < sizeof(counters) / sizeof(counters[0]);
         k++) {
        const struct prom_sample *s =
            prom_find(&doc, counters[k].name, NULL, NULL);
        if (s) {
            *(double *)((char *)sum + counters[k].offset) += s->value;
        } else {
            snprintf(err, sizeof(err), "no %s", counters[k].name);
            rc = -1;
        }
    }
    if (rc == 0) {
        histogram_add(&sum->wait, &wait);
        histogram_add(&sum->request, &request);
    } else {
        snprintf(sum->error, sizeof(sum->error), "server %d's /metrics: %s",
                 i, err);
    }
    prom_free(&doc);
    return rc;
}

/* Read every server's GET /metrics into d->locks, within START_MS. */
static void metrics_collect(struct demo *d)
{
    for (int i = 0; i < d->cfg->servers; i++)
        if (http_send(&d->buyers[i], EVHTTP_REQ_GET, "/metrics", on_metrics))
            on_metrics(NULL, &d->buyers[i]);
    if (d->metrics_answered < d->cfg->servers)
        run_until(d, start_deadline(d));
    for (int i = 0; i < d->cfg->servers && summary_add(d, i) == 0; i++)
        ;
}

/* s seconds, readably, into buf. */
static const char *duration(double s, char *buf, size_t len)
{
    if (isnan(s))
        snprintf(buf, len, "-");
    else if (isinf(s))
        snprintf(buf, len, "over 17.9 min");
    else if (s < 1e-3)
        snprintf(buf, len, "%.0f us", s * 1e6);
    else if (s < 1)
        snprintf(buf, len, "%.3g ms", s * 1e3);
    else
        snprintf(buf, len, "%.3g s", s);
    return buf;
}

/* The lines of the summary; 0, or -1 when a page was bad. */
static int summary_print(const struct lock_summary *l)
{
    char p50[32], p99[32], mean[32];
    if (l->error[0]) {
        printf("metrics      UNEXPECTED: %s\n", l->error);
        return -1;
    }
    printf("locks        %.0f acquired (%.0f re-entries), %.0f waited, "
           "%.0f timed out, %.0f lost\n", l->acquisitions, l->reentries,
           l->waits, l->timeouts, l->lost);
    printf("lock wait    p50 <= %s, p99 <= %s, mean %s (histogram of %.0f "
           "waits)\n", duration(prom_quantile(&l->wait, 0.5), p50, 32),
           duration(prom_quantile(&l->wait, 0.99), p99, 32),
           duration(l->wait.count ? l->wait.sum / l->wait.count : NAN, mean,
                    32), l->wait.count);
    printf("redis calls  p50 <= %s, p99 <= %s (histogram of %.0f lock "
           "requests)\n", duration(prom_quantile(&l->request, 0.5), p50, 32),
           duration(prom_quantile(&l->request, 0.99), p99, 32),
           l->request.count);
    return 0;
}

/* ---- the run ----------------------------------------------------------- */

/* Wait until every server answers GET /stock, within START_MS (and the
 * time limit). */
static int servers_wait_ready(struct demo *d)
{
    for (int i = 0; i < d->cfg->servers; i++)
        if (http_send(&d->buyers[i], EVHTTP_REQ_GET, d->stock_path, on_probe))
            return -1;
    if (run_until(d, start_deadline(d)) != 0) {
        fprintf(stderr, "inventory-demo: only %d of %d servers answered "
                        "within %d ms\n", d->ready, d->cfg->servers, START_MS);
        return -1;
    }
    return 0;
}

/* Fire every purchase with at most concurrency in flight, within the time
 * limit. 0, or -1 when the time ran out. */
static int purchases_run(struct demo *d)
{
    d->t_start = now_s();
    for (int i = 0; i < d->cfg->concurrency; i++)
        buy(&d->buyers[i]);
    if (run_until(d, d->deadline) != 0) {
        fprintf(stderr, "inventory-demo: gave up after %d s: %d of %d "
                        "purchases answered\n", d->cfg->time_limit_s,
                d->answered, d->cfg->purchases);
        return -1;
    }
    return 0;
}

/* Sales that saw a stock count another sale saw too, or one outside the
 * stock: each is an item sold twice. */
static int oversold(const struct demo *d)
{
    int extra = d->left_bad;
    for (int i = 0; i < d->cfg->stock; i++)
        if (d->left_seen[i] > 1)
            extra += d->left_seen[i] - 1;
    return extra;
}

/* Print the result; 0 when nothing was oversold and the stock is gone. */
static int report(const struct demo *d, long long left, long long locked)
{
    double secs = d->t_end > d->t_start ? d->t_end - d->t_start : 1e-9;
    int over = oversold(d);
    long long unaccounted = (long long)d->cfg->stock - d->sold - left;
    if (unaccounted < 0 && -unaccounted > over)
        over = (int)-unaccounted;
    printf("purchases    %d over %d servers, %d in flight\n",
           d->cfg->purchases, d->cfg->servers, d->cfg->concurrency);
    printf("sold         %d of %d\n", d->sold, d->cfg->stock);
    printf("not sold     %d (out of stock)\n", d->not_sold);
    printf("errors       %d\n", d->errors);
    printf("left         %lld (stock in Redis)\n", left);
    printf("oversold     %d\n", over);
    printf("time         %.2f s, %.0f purchases/s\n", secs,
           d->cfg->purchases / secs);
    int counted = summary_print(&d->locks);
    if (locked != 0)
        printf("UNEXPECTED: the lock key is still there after the servers "
               "stopped\n");
    if (d->cfg->expect_oversold) {  /* the negative control */
        if (over == 0)
            printf("UNEXPECTED: nothing oversold: the pause did not bite\n");
        return over > 0 ? 0 : -1;
    }
    return (d->sold == d->cfg->stock && left == 0 && over == 0 &&
            locked == 0 && counted == 0) ? 0 : -1;
}

static int int_arg(const char *s, int min, int max)
{
    char *end;
    long v = strtol(s, &end, 10);
    return (*s && !*end && v >= min && v <= max) ? (int)v : INT_MIN;
}

/* Fill cfg from argv; 0, or -1 after printing the usage. */
static int parse_args(struct config *cfg, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"servers", required_argument, NULL, 's'},
        {"stock", required_argument, NULL, 'k'},
        {"purchases", required_argument, NULL, 'n'},
        {"concurrency", required_argument, NULL, 'c'},
        {"time-limit", required_argument, NULL, 't'},
        {"product", required_argument, NULL, 'P'},
        {"redlock", required_argument, NULL, 'R'},
        {"cluster", no_argument, NULL, 'C'},
        {"sentinel", no_argument, NULL, 'T'},
        {"server", required_argument, NULL, 'S'},
        {"tls", no_argument, NULL, 'L'},
        {"lease-ms", required_argument, NULL, 'l'},
        {"pause-ms", required_argument, NULL, 'p'},
        {"unguarded", no_argument, NULL, 'U'},
        {"expect-oversold", no_argument, NULL, 'O'},
        {NULL, 0, NULL, 0}};
    int c, bad = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        int *dst = c == 's' ? &cfg->servers : c == 'k' ? &cfg->stock
                 : c == 'n' ? &cfg->purchases : c == 'c' ? &cfg->concurrency
                 : c == 't' ? &cfg->time_limit_s
                 : c == 'l' ? &cfg->lease_ms : c == 'p' ? &cfg->pause_ms
                 : NULL;
        if (dst)
            bad |= (*dst = int_arg(optarg, 1, 1000000)) == INT_MIN;
        else if (c == 'P')
            cfg->product = optarg;
        else if (c == 'R')
            bad |= (cfg->masters = int_arg(optarg, 3, MASTERS_MAX)) ==
                       INT_MIN || cfg->masters % 2 == 0;
        else if (c == 'C')
            cfg->cluster = 1;
        else if (c == 'T')
            cfg->sentinel = 1;
        else if (c == 'L')
            cfg->tls = 1;
        else if (c == 'U')
            cfg->unguarded = 1;
        else if (c == 'O')
            cfg->expect_oversold = 1;
        else if (c == 'S')
            snprintf(cfg->server_path, sizeof(cfg->server_path), "%s", optarg);
        else
            bad = 1;
    }
    if (cfg->concurrency > cfg->purchases)
        cfg->concurrency = cfg->purchases;
    if (bad || optind != argc || cfg->servers > SERVERS_MAX ||
        cfg->concurrency < cfg->servers || strlen(cfg->product) > 64 ||
        (cfg->cluster + cfg->sentinel + (cfg->masters > 0)) > 1 ||
        (cfg->tls && (cfg->cluster || cfg->sentinel))) {
        fprintf(stderr, "usage: hilock-inventory-demo [--servers N<=%d] "
                "[--stock N] [--purchases N] [--concurrency N>=servers] "
                "[--time-limit S] [--product P] [--redlock N (odd, 3..%d) | "
                "--cluster | --sentinel] [--tls (not with --cluster, "
                "--sentinel)] [--lease-ms N] [--pause-ms N] [--unguarded] "
                "[--expect-oversold] [--server PATH]\n", SERVERS_MAX,
                MASTERS_MAX);
        return -1;
    }
    return 0;
}

/* hilock-inventory-server in the directory of this executable. */
static void default_server_path(struct config *cfg)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        snprintf(cfg->server_path, sizeof(cfg->server_path),
                 "hilock-inventory-server");
        return;
    }
    self[n] = '\0';
    snprintf(cfg->server_path, sizeof(cfg->server_path),
             "%s/hilock-inventory-server", dirname(self));
}

/* --tls: certificates in a fresh directory (d->certs), the CA's path in
 * d->cacert, the servers' files in *t. 0, or -1 (message on stderr). */
static int tls_prepare(struct demo *d, struct rs_tls *t,
                       char f[2][PATH_MAX + 16])
{
    const char *tmp = getenv("TMPDIR");
    snprintf(d->certs, sizeof(d->certs), "%s/hilock-demo-tls-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(d->certs) || rs_tls_certs(d->certs) != 0) {
        fprintf(stderr, "inventory-demo: no certificates (is openssl "
                        "installed?)\n");
        return -1;
    }
    snprintf(d->cacert, sizeof(d->cacert), "%s/ca.crt", d->certs);
    snprintf(f[0], PATH_MAX + 16, "%s/server.crt", d->certs);
    snprintf(f[1], PATH_MAX + 16, "%s/server.key", d->certs);
    *t = (struct rs_tls){f[0], f[1], d->cacert, 0};
    return 0;
}

/* Start the redis-servers into srv: one, or cfg->masters Redlock masters
 * whose list goes into d->masters_list; the first holds the stock either
 * way; TLS only with --tls. Print them. 0, or -1 (message on stderr). */
static int redis_start(struct demo *d, struct rs_server **srv, int n)
{
    size_t len = 0;
    struct rs_options o;
    char f[2][PATH_MAX + 16];
    memset(&o, 0, sizeof(o));
    if (d->cfg->tls && tls_prepare(d, &o.tls, f) != 0)
        return -1;
    for (int i = 0; i < n; i++) {
        if (!(srv[i] = rs_start_opts(&o)))
            return -1;
        if (d->cfg->masters)
            len += (size_t)snprintf(d->masters_list + len,
                                    sizeof(d->masters_list) - len,
                                    "%s127.0.0.1:%d", i ? "," : "",
                                    rs_port(srv[i]));
    }
    if (d->cfg->tls)
        printf("TLS only: certificates made in %s; the lock client checks "
               "the chain and the name, the stock connection the chain\n",
               d->certs);
    if (!d->cfg->masters) {
        printf("redis-server 127.0.0.1:%d (pid %d)\n", rs_port(srv[0]),
               (int)rs_pid(srv[0]));
        return 0;
    }
    printf("redis-servers");
    for (int i = 0; i < n; i++)
        printf(" 127.0.0.1:%d", rs_port(srv[i]));
    printf(" (Redlock masters; the stock on the first)\n");
    return 0;
}

/* --cluster: start a Redis Cluster of CLUSTER_MASTERS masters, list its
 * nodes in d->cluster_list and put into *stock and *lock the nodes that own
 * the slots of the stock key and of the lock key (one and the same: the
 * stock key's hash tag is the lock's name). Print them. The cluster, or
 * NULL (message on stderr). */
static struct rc_cluster *cluster_start(struct demo *d,
                                        struct rs_server **stock,
                                        struct rs_server **lock)
{
    struct rc_cluster *c = rc_start(CLUSTER_MASTERS, 0);
    size_t len = 0;
    if (!c)
        return NULL;
    int at = rc_slot_owner(c, rc_key_slot(d->key, strlen(d->key)));
    int lock_at = rc_slot_owner(c, rc_key_slot(d->cfg->product,
                                               strlen(d->cfg->product)));
    if (at < 0 || lock_at < 0) {
        rc_stop(c);
        return NULL;
    }
    printf("redis cluster");
    for (int i = 0; i < rc_count(c); i++) {
        len += (size_t)snprintf(d->cluster_list + len,
                                sizeof(d->cluster_list) - len,
                                "%s127.0.0.1:%d", i ? "," : "", rc_port(c, i));
        printf(" 127.0.0.1:%d", rc_port(c, i));
    }
    printf(" (%d masters; the lock and the stock on 127.0.0.1:%d, slot %d)\n",
           CLUSTER_MASTERS, rc_port(c, at),
           rc_key_slot(d->key, strlen(d->key)));
    *stock = rc_server(c, at);
    *lock = rc_server(c, lock_at);
    return c;
}

/* --sentinel: start a master and one Sentinel watching it, list the
 * Sentinel in d->sentinel_list and put the master into *master. Print
 * them. The setup, or NULL (message on stderr). */
static struct rt_sentinel *sentinel_start(struct demo *d,
                                          struct rs_server **master)
{
    struct rt_sentinel *t = rt_start(0, 1, SENTINEL_MASTER);
    if (!t)
        return NULL;
    int m = rt_master(t);
    if (m < 0) {
        rt_stop(t);
        return NULL;
    }
    snprintf(d->sentinel_list, sizeof(d->sentinel_list), "127.0.0.1:%d",
             rt_sentinel_port(t, 0));
    printf("redis-server 127.0.0.1:%d, the master '%s' of the Sentinel "
           "127.0.0.1:%d (the lock and the stock on it)\n",
           rt_server_port(t, m), SENTINEL_MASTER, rt_sentinel_port(t, 0));
    *master = rt_server(t, m);
    return t;
}

/* How many of the n redis-servers still have the lock key (one that does
 * not answer counts). */
static long long lock_keys_left(struct rs_server *const *srv, int n,
                                const char *product)
{
    long long left = 0;
    for (int i = 0; i < n; i++)
        left += rs_int(srv[i], "EXISTS", product, (char *)NULL) != 0;
    return left;
}

/* Everything between the redis-server start and the servers' stop. */
static int demo_run(struct demo *d, struct rs_server *srv)
{
    char stock[16];
    snprintf(stock, sizeof(stock), "%d", d->cfg->stock);
    char *ok = rs_str(srv, "SET", d->key, stock, (char *)NULL);
    int set = ok && strcmp(ok, "OK") == 0;
    free(ok);
    if (!set)
        return -1;
    printf("stock        %d of %s (key %s)\n", d->cfg->stock,
           d->cfg->product, d->key);
    for (int i = 0; i < d->cfg->servers; i++)
        if (server_start(d, i, rs_port(srv)) != 0)
            return -1;
    printf("servers      %d hilock-inventory-server processes on ports",
           d->cfg->servers);
    for (int i = 0; i < d->cfg->servers; i++)
        printf(" %d", d->shops[i].port);
    printf("\n");
    fflush(stdout);
    if (buyers_open(d) != 0 || servers_wait_ready(d) != 0 ||
        purchases_run(d) != 0)
        return -1;
    metrics_collect(d);
    return 0;
}

int main(int argc, char **argv)
{
    struct config cfg = {.servers = 3, .stock = 200, .purchases = 3000,
                         .concurrency = 300, .time_limit_s = 60,
                         .product = "inventory001"};
    default_server_path(&cfg);
    if (parse_args(&cfg, argc, argv) != 0)
        return 2;
#ifndef HILOCK_HAVE_TLS
    if (cfg.tls) {
        fprintf(stderr, "inventory-demo: --tls needs hilock built with TLS: "
                        "hiredis 1.x with hiredis_ssl (Debian 12's hiredis "
                        "0.14 has none; see the README, \"TLS\")\n");
        return 2;
    }
#endif
    /* The last resort behind every bound below: SIGALRM ends this process,
     * and the servers and redis-server die with it (PR_SET_PDEATHSIG). */
    alarm((unsigned)cfg.time_limit_s + STOP_MS / 1000 + 15);
    signal(SIGPIPE, SIG_IGN);
    struct demo d = {.cfg = &cfg, .deadline = now_s() + cfg.time_limit_s};
    snprintf(d.path, sizeof(d.path), "/sale?product=%s", cfg.product);
    snprintf(d.stock_path, sizeof(d.stock_path), "/stock?product=%s",
             cfg.product);
    if (cfg.cluster)  /* in the slot of the lock key, the product */
        snprintf(d.key, sizeof(d.key), "stock:{%s}", cfg.product);
    else
        snprintf(d.key, sizeof(d.key), "stock:%s", cfg.product);
    d.left_seen = calloc((size_t)cfg.stock, sizeof(int));
    d.base = event_base_new();
    /* srv[0] holds the stock; the lock is on all nsrv of srv[] (in a
     * cluster: on lock_srv, the owner of its slot). */
    struct rs_server *srv[MASTERS_MAX] = {NULL}, *lock_srv = NULL;
    struct rc_cluster *cluster = NULL;
    struct rt_sentinel *sentinel = NULL;
    int nsrv = cfg.masters ? cfg.masters : 1;
    if (!d.left_seen || !d.base)
        return 1;
    if (cfg.cluster ? !(cluster = cluster_start(&d, &srv[0], &lock_srv))
        : cfg.sentinel ? !(sentinel = sentinel_start(&d, &srv[0]))
                       : redis_start(&d, srv, nsrv) != 0)
        return 1;  /* the redis-servers started die with us (atexit) */
    int rc = demo_run(&d, srv[0]);
    buyers_close(&d);
    int bad_exits = servers_stop(&d);
    long long left = rs_int(srv[0], "GET", d.key, (char *)NULL);
    long long locked = cluster ? lock_keys_left(&lock_srv, 1, cfg.product)
                               : lock_keys_left(srv, nsrv, cfg.product);
    if (rc == 0)
        rc = report(&d, left == RS_NIL ? 0 : left, locked);
    if (cluster)
        rc_stop(cluster);
    else if (sentinel)
        rt_stop(sentinel);
    else
        for (int i = 0; i < nsrv; i++)
            rs_stop(srv[i]);
    event_base_free(d.base);
    free(d.left_seen);
    if (d.certs[0]) {
        char cmd[PATH_MAX + 16];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d.certs);
        if (system(cmd) != 0)
            fprintf(stderr, "inventory-demo: could not remove %s\n", d.certs);
    }
    for (int i = 0; i < cfg.servers; i++)
        free(d.metrics[i]);
    if (rc == 0 && bad_exits == 0 && cfg.expect_oversold) {
        printf("inventory-demo: OK -- oversold as expected: the paused "
               "sale's unguarded write overwrote a newer stock\n");
        return 0;
    }
    if (rc == 0 && bad_exits == 0 && cfg.cluster) {
        printf("inventory-demo: OK -- exactly %d sold, none oversold, the "
               "lock and the stock in a Redis Cluster of %d masters; "
               "servers and cluster stopped\n", cfg.stock, CLUSTER_MASTERS);
        return 0;
    }
    if (rc == 0 && bad_exits == 0 && cfg.sentinel) {
        printf("inventory-demo: OK -- exactly %d sold, none oversold, the "
               "lock and the stock on the master a Sentinel names; servers, "
               "redis-server and Sentinel stopped\n", cfg.stock);
        return 0;
    }
    if (rc == 0 && bad_exits == 0 && cfg.masters) {
        printf("inventory-demo: OK -- exactly %d sold, none oversold, the "
               "lock on %d Redlock masters%s; servers and redis-servers "
               "stopped\n", cfg.stock, cfg.masters,
               cfg.tls ? ", over TLS" : "");
        return 0;
    }
    if (rc == 0 && bad_exits == 0) {
        printf("inventory-demo: OK -- exactly %d sold, none oversold%s; "
               "servers and redis-server stopped\n", cfg.stock,
               cfg.tls ? ", over TLS" : "");
        return 0;
    }
    printf("inventory-demo: FAILED\n");
    return 1;
}
