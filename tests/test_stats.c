/* SPDX-License-Identifier: BSD-3-Clause */
/* test_stats.c -- the counters a user reads (hilock_client_stats) against
 * what the test did: acquisitions and re-entries, waits with their
 * histogram, a timeout and a cancel, watchdog renewals counted against the
 * script calls Redis saw, a lock lost to a deleted key, a reconnect, and
 * the gauges (requests in flight, parked waiters, subscriptions) back at 0.
 * Then the inventory server's GET /metrics, read by a Prometheus text
 * parser (promtext.h; its own cases first): histograms a scraper accepts,
 * counters that match the purchases made.
 *
 * The inventory server is $HILOCK_INVENTORY_SERVER (meson passes the built
 * one); it dies with the test (PR_SET_PDEATHSIG). */
#include "testutil.h"

#include "promtext.h"
#include "proxy.h"
#include "stats.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static struct hilock_client *a, *b;
static struct tu_result res[4];

static void setup(void)
{
    tu_setup_pair(&a, &b);
    memset(res, 0, sizeof res);
}

static void teardown(void)
{
    tu_teardown_pair(&a, &b);
}

static struct hilock_stats stats_of(const struct hilock_client *c)
{
    struct hilock_stats s;
    memset(&s, 0xa5, sizeof s);
    tu_assert_status(hilock_client_stats(c, &s, sizeof s), 0);
    return s;
}

/* Observations in a histogram. */
static uint64_t hist_count(const uint64_t *h)
{
    uint64_t n = 0;
    for (int i = 0; i < HILOCK_HIST_BUCKETS; i++)
        n += h[i];
    return n;
}

/* What a tu_run_until condition reads: one gauge or counter of a client
 * reaching a value. */
struct gauge_wait {
    const struct hilock_client *client;
    size_t offset; /* of a uint64_t in struct hilock_stats */
    uint64_t value;
};

static bool gauge_is(void *arg)
{
    const struct gauge_wait *g = arg;
    struct hilock_stats s = stats_of(g->client);
    uint64_t v;
    memcpy(&v, (const char *)&s + g->offset, sizeof v);
    return v == g->value;
}

/* Run until field of c's stats is value; fail the test after 5 s. */
#define RUN_UNTIL_STAT(c, field, v)                                           \
    do {                                                                      \
        struct gauge_wait g_ = {(c), offsetof(struct hilock_stats, field),   \
                                (v)};                                         \
        ck_assert_msg(tu_run_until(gauge_is, &g_, tu_ms(5000)),               \
                      #field " never became %llu", (unsigned long long)(v)); \
    } while (0)

/* ---- the bucket bounds ------------------------------------------------- */

START_TEST(buckets_are_log2_microseconds_as_documented)
{
    static const struct {
        uint64_t us;
        unsigned bucket;
    } cases[] = {{0, 0},        {1, 0},           {2, 1},
                 {3, 2},        {4, 2},           {5, 3},
                 {1000, 10},    {1024, 10},       {1025, 11},
                 {1u << 30, 30}, {(1u << 30) + 1, 31}, {UINT64_MAX, 31}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_msg(stats_bucket(cases[i].us) == cases[i].bucket,
                      "%llu us in bucket %u, expected %u",
                      (unsigned long long)cases[i].us,
                      stats_bucket(cases[i].us), cases[i].bucket);
    ck_assert_int_eq(HILOCK_HIST_BUCKETS, 32);
}
END_TEST

/* ---- the call ---------------------------------------------------------- */

START_TEST(stats_start_at_zero_and_honour_the_callers_size)
{
    struct hilock_stats s = stats_of(a);
    struct hilock_stats zero;
    memset(&zero, 0, sizeof zero);
    ck_assert_int_eq(memcmp(&s, &zero, sizeof s), 0);

    /* An older caller's smaller struct: only its part is written. */
    uint64_t small[3] = {7, 7, 7};
    tu_assert_status(hilock_client_stats(a, (struct hilock_stats *)small,
                                         2 * sizeof small[0]),
                     0);
    ck_assert(small[0] == 0 && small[1] == 0 && small[2] == 7);
    /* A newer caller's larger struct: what this library does not know is
     * zeroed. */
    enum { WORDS = sizeof(struct hilock_stats) / sizeof(uint64_t) };
    uint64_t big[WORDS + 2];
    memset(big, 0xee, sizeof big);
    tu_assert_status(
        hilock_client_stats(a, (struct hilock_stats *)big, sizeof big), 0);
    ck_assert(big[WORDS] == 0 && big[WORDS + 1] == 0);

    tu_assert_status(hilock_client_stats(NULL, &s, sizeof s), HILOCK_EINVAL);
    tu_assert_status(hilock_client_stats(a, NULL, sizeof s), HILOCK_EINVAL);
    tu_assert_status(hilock_client_stats(a, &s, 0), HILOCK_EINVAL);
}
END_TEST

/* ---- acquisitions and requests ----------------------------------------- */

START_TEST(acquisitions_reentries_and_requests_match_what_was_done)
{
    struct hilock_lock *l = tu_lock(a, "acq", 1);
    struct hilock_lock *twin = tu_lock(a, "acq", 1);
    struct hilock_lock *other = tu_lock(a, "acq2", 1);
    tu_client_ready(a);
    struct hilock_stats s0 = stats_of(a);
    for (int i = 0; i < 3; i++)
        tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0); /* 1 + 2 re */
    tu_assert_status(tu_acquire(twin, 0, 10000, NULL), 0);  /* re-entry */
    tu_assert_status(tu_acquire(other, 0, 10000, NULL), 0);
    tu_assert_status(tu_acquire(tu_lock(b, "acq", 9), 0, 10000, NULL),
                     HILOCK_EBUSY); /* b's, and not an acquisition */
    struct hilock_stats s = stats_of(a);
    ck_assert_uint_eq(s.acquisitions, 5);
    ck_assert_uint_eq(s.reentries, 3);
    ck_assert_uint_eq(s.waits + s.timeouts + s.cancels + s.lost, 0);
    ck_assert_uint_eq(stats_of(b).acquisitions, 0);

    for (int i = 0; i < 3; i++)
        tu_assert_status(tu_release(l, NULL), 0);
    tu_assert_status(tu_release(twin, NULL), 0);
    tu_assert_status(tu_release(other, NULL), 0);
    s = stats_of(a);
    /* Five acquires and five releases, one request each, all answered. */
    ck_assert_uint_eq(hist_count(s.request_us) - hist_count(s0.request_us),
                      10);
    ck_assert_uint_gt(s.request_us_sum, s0.request_us_sum);
    ck_assert_uint_eq(s.requests_inflight, 0);
    ck_assert_uint_eq(s.acquisitions, 5); /* releases count nothing here */
}
END_TEST

START_TEST(a_request_is_in_flight_until_its_reply)
{
    struct hilock_options o;
    tu_options(&o);
    struct tp_proxy *p = tp_new(tu_base, rs_port(tu_srv));
    ck_assert_ptr_nonnull(p);
    o.node.port = tp_port(p);
    struct hilock_client *c = tu_client(&o);
    struct hilock_lock *l = tu_lock(c, "fly", 1);
    tu_client_ready(c);
    tp_blackhole(p, true);
    tu_assert_status(hilock_lock_query_held(l, tu_record, &res[0]), 0);
    ck_assert_uint_eq(stats_of(c).requests_inflight, 1);
    tu_run_quiet();
    ck_assert_int_eq(res[0].calls, 0);
    ck_assert_uint_eq(stats_of(c).requests_inflight, 1);
    tp_blackhole(p, false);
    ck_assert(tu_run_until_count(&res[0].calls, 1, tu_ms(5000)));
    tu_assert_status(res[0].status, 0);
    ck_assert_uint_eq(stats_of(c).requests_inflight, 0);
    hilock_client_free(c);
    tp_free(p);
}
END_TEST

/* ---- waits, timeouts, cancels ------------------------------------------ */

START_TEST(waits_and_their_histogram_count_every_parked_acquire)
{
    struct hilock_lock *held = tu_lock(b, "w", 1);
    struct hilock_lock *w[3];
    tu_assert_status(tu_acquire(held, 0, 10000, NULL), 0);
    for (int i = 0; i < 3; i++) {
        w[i] = tu_lock(a, "w", (uint64_t)i + 1);
        tu_assert_status(
            hilock_lock_acquire(w[i], 10000, 10000, tu_record, &res[i]), 0);
    }
    RUN_UNTIL_STAT(a, waiters_parked, 3);
    RUN_UNTIL_STAT(a, subscriptions, 1);
    ck_assert_uint_eq(stats_of(a).waits, 3);
    tu_assert_status(tu_release(held, NULL), 0);
    /* FIFO: each waiter gets it in turn as the one before lets go. */
    for (int i = 0; i < 3; i++) {
        ck_assert(tu_run_until_count(&res[i].calls, 1, tu_ms(5000)));
        tu_assert_status(res[i].status, 0);
        ck_assert_uint_eq(stats_of(a).waiters_parked, (uint64_t)(2 - i));
        tu_assert_status(tu_release(w[i], NULL), 0);
    }
    struct hilock_stats s = stats_of(a);
    ck_assert_uint_eq(s.waits, 3);
    ck_assert_uint_eq(s.acquisitions, 3);
    ck_assert_uint_eq(s.waiters_parked, 0);
    ck_assert_uint_eq(s.subscriptions, 0); /* the last waiter unsubscribed */
    ck_assert_uint_eq(hist_count(s.wait_us), 3);
    ck_assert_uint_gt(s.wait_us_sum, 0);
    ck_assert_uint_eq(s.timeouts + s.cancels, 0);
}
END_TEST

START_TEST(a_timeout_and_a_cancel_are_counted_with_their_waits)
{
    struct hilock_lock *held = tu_lock(b, "tc", 1);
    struct hilock_lock *l = tu_lock(a, "tc", 2);
    tu_assert_status(tu_acquire(held, 0, 10000, NULL), 0);

    tu_assert_status(tu_acquire(l, 200, 10000, NULL), HILOCK_ETIMEDOUT);
    struct hilock_stats s = stats_of(a);
    ck_assert_uint_eq(s.timeouts, 1);
    ck_assert_uint_eq(s.waits, 1);
    ck_assert_uint_eq(hist_count(s.wait_us), 1);
    /* It waited about 200 ms: a bucket well above 2^16 us (65 ms). */
    ck_assert_uint_ge(s.wait_us_sum, 100000);
    for (unsigned i = 0; i <= 16; i++)
        ck_assert_uint_eq(s.wait_us[i], 0);

    tu_assert_status(hilock_lock_acquire(l, 10000, 10000, tu_record, &res[0]),
                     0);
    RUN_UNTIL_STAT(a, waiters_parked, 1);
    tu_assert_status(hilock_lock_cancel(l), 0);
    tu_assert_status(res[0].status, HILOCK_ECANCELED);
    s = stats_of(a);
    ck_assert_uint_eq(s.cancels, 1);
    ck_assert_uint_eq(s.timeouts, 1);
    ck_assert_uint_eq(s.waits, 2);
    ck_assert_uint_eq(s.waiters_parked, 0);
    ck_assert_uint_eq(hist_count(s.wait_us), 2);
    ck_assert_uint_eq(s.acquisitions, 0);
}
END_TEST

/* ---- the watchdog ------------------------------------------------------ */

START_TEST(renewals_match_the_script_calls_and_a_deleted_key_is_lost)
{
    struct hilock_options o;
    tu_options(&o);
    o.watchdog_lease_ms = (uint32_t)tu_ms(300);
    struct hilock_client *c = tu_client(&o);
    struct hilock_lock *l = tu_lock(c, "wd", 1);
    tu_client_ready(c);
    long long calls0 = rs_cmdstat_calls(tu_srv, "evalsha");
    long long restores0 = rs_cmdstat_calls(tu_srv, "restore");
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0); /* the watchdog's */
    /* taken plain: every script call from here on is a renewal or a
     * query */
    ck_assert_int_eq(rs_cmdstat_calls(tu_srv, "restore"), restores0 + 1);
    tu_await_renewal(l, tu_ms(2000));
    tu_await_renewal(l, tu_ms(2000));
    /* A query answered means that Redis has run every renewal sent before
     * it; the count stands if no renewal went out meanwhile. */
    struct hilock_stats s, after;
    long long calls;
    for (int tries = 0;; tries++) {
        ck_assert_int_lt(tries, 10);
        s = stats_of(c);
        tu_assert_status(tu_query(hilock_lock_query_held, l, NULL), 0);
        /* the queries are script calls too: one in each
         * tu_await_renewal, one a try */
        calls = rs_cmdstat_calls(tu_srv, "evalsha") - 2 - (tries + 1);
        after = stats_of(c);
        if (after.renewals_sent == s.renewals_sent)
            break;
    }
    ck_assert_uint_ge(s.renewals_sent, 2);
    ck_assert_int_eq((long long)s.renewals_sent, calls - calls0);
    ck_assert_uint_eq(s.renewals_failed, 0);
    ck_assert_uint_eq(s.lost, 0);

    hilock_lock_on_lost(l, tu_record, &res[0]);
    ck_assert_int_eq(rs_int(tu_srv, "DEL", "wd", (char *)NULL), 1);
    ck_assert(tu_run_until_count(&res[0].calls, 1, tu_ms(3000)));
    tu_assert_status(res[0].status, HILOCK_ELOST);
    s = stats_of(c);
    ck_assert_uint_eq(s.lost, 1);
    ck_assert_uint_eq(s.renewals_failed, 1);
    ck_assert_uint_eq(s.requests_inflight, 0);
    hilock_client_free(c);
}
END_TEST

/* ---- the connection ---------------------------------------------------- */

START_TEST(a_reconnect_is_counted_and_the_subscription_comes_back_once)
{
    struct hilock_options o;
    tu_options(&o);
    o.reconnect_min_ms = 20;
    o.reconnect_max_ms = 100;
    struct tp_proxy *p = tp_new(tu_base, rs_port(tu_srv));
    ck_assert_ptr_nonnull(p);
    o.node.port = tp_port(p);
    struct hilock_client *c = tu_client(&o);
    struct hilock_lock *held = tu_lock(b, "rc", 1);
    struct hilock_lock *l = tu_lock(c, "rc", 2);
    tu_client_ready(c);
    tu_assert_status(tu_acquire(held, 0, 10000, NULL), 0);
    tu_assert_status(hilock_lock_acquire(l, 20000, 10000, tu_record, &res[0]),
                     0);
    RUN_UNTIL_STAT(c, subscriptions, 1);
    ck_assert_uint_eq(stats_of(c).reconnects, 0);

    tp_cut_all(p);
    RUN_UNTIL_STAT(c, reconnects, 1);
    RUN_UNTIL_STAT(c, subscriptions, 1); /* dropped, then confirmed again */
    struct hilock_stats s = stats_of(c);
    ck_assert_uint_eq(s.waiters_parked, 1);
    ck_assert_uint_eq(s.waits, 1);

    tu_assert_status(tu_release(held, NULL), 0);
    ck_assert(tu_run_until_count(&res[0].calls, 1, tu_ms(5000)));
    tu_assert_status(res[0].status, 0);
    tu_assert_status(tu_release(l, NULL), 0);
    s = stats_of(c);
    ck_assert_uint_eq(s.reconnects, 1);
    ck_assert_uint_eq(s.acquisitions, 1);
    ck_assert_uint_eq(s.waiters_parked, 0);
    ck_assert_uint_eq(s.subscriptions, 0);
    ck_assert_uint_eq(s.requests_inflight, 0);
    ck_assert_uint_eq(hist_count(s.wait_us), 1);
    hilock_client_free(c);
    tp_free(p);
}
END_TEST

/* ---- the Prometheus text parser ---------------------------------------- */

static const char page[] =
    "# A comment that is neither HELP nor TYPE\n"
    "# HELP req_total Requests, with a \\\\ and a\\nsecond line.\n"
    "# TYPE req_total counter\n"
    "req_total{code=\"200\",path=\"/a \\\"b\\\" \\\\c\\nd\"} 1027 1395066363000\n"
    "req_total{code=\"500\" , } 3\n"
    "\n"
    "   # TYPE lat histogram\n"
    "lat_bucket{le=\"0.5\"} 1\n"
    "lat_bucket{le=\"1\"} 4\n"
    "lat_bucket{le=\"+Inf\"} 5\n"
    "lat_sum 4.25\n"
    "lat_count 5\n"
    "temp\t-1.5e1\n"
    "nan_one NaN\n";

START_TEST(the_parser_reads_labels_escapes_timestamps_and_types)
{
    struct prom_doc doc;
    char err[128] = "";
    ck_assert_msg(prom_parse(page, strlen(page), &doc, err, sizeof err) == 0,
                  "%s", err);
    ck_assert_uint_eq(doc.nsamples, 9);
    const struct prom_sample *s = prom_find(&doc, "req_total", "code", "200");
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(prom_label(s, "path"), "/a \"b\" \\c\nd");
    ck_assert(s->value == 1027);
    ck_assert(s->has_timestamp && s->timestamp_ms == 1395066363000LL);
    s = prom_find(&doc, "req_total", "code", "500");
    ck_assert(s && s->value == 3 && !s->has_timestamp && s->nlabels == 1);
    ck_assert_str_eq(prom_family(&doc, "req_total")->type, "counter");
    ck_assert_str_eq(prom_family(&doc, "req_total")->help,
                     "Requests, with a \\ and a\nsecond line.");
    ck_assert(prom_find(&doc, "temp", NULL, NULL)->value == -15);
    ck_assert(isnan(prom_find(&doc, "nan_one", NULL, NULL)->value));
    struct prom_histogram h;
    ck_assert_msg(prom_histogram(&doc, "lat", &h, err, sizeof err) == 0,
                  "%s", err);
    ck_assert(h.n == 3 && h.count == 5 && h.sum == 4.25);
    ck_assert(prom_quantile(&h, 0.5) == 1);
    ck_assert(prom_quantile(&h, 0.2) == 0.5);
    ck_assert(isinf(prom_quantile(&h, 1)));
    prom_free(&doc);
}
END_TEST

START_TEST(the_parser_rejects_what_a_scraper_rejects)
{
    static const char *const bad[] = {
        "9lives 1\n",                        /* name starts with a digit */
        "x{a=\"1} 2\n",                      /* unterminated value */
        "x{a=\"\\t\"} 2\n",                  /* unknown escape */
        "x{a=\"1\",a=\"2\"} 2\n",            /* label twice */
        "x{a=1} 2\n",                        /* unquoted value */
        "x{a=\"1\" b=\"2\"} 2\n",            /* no comma */
        "x\n",                               /* no value */
        "x{} \n",                            /* no value */
        "x 1 2 3\n",                         /* after the timestamp */
        "x one\n",                           /* not a number */
        "x 1 12.5\n",                        /* timestamp not an integer */
        "# TYPE x counter\n# TYPE x gauge\n", /* TYPE twice */
        "x 1\n# TYPE x counter\n",           /* TYPE after samples */
        "# TYPE h histogram\nh_bucket 1\n",  /* bucket without le */
        "# TYPE x countr\n",                 /* unknown type */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct prom_doc doc;
        char err[128] = "";
        ck_assert_msg(prom_parse(bad[i], strlen(bad[i]), &doc, err,
                                 sizeof err) != 0,
                      "accepted: %s", bad[i]);
        ck_assert_msg(strncmp(err, "line ", 5) == 0, "no reason for %s",
                      bad[i]);
        prom_free(&doc);
    }
    static const char *const bad_hist[] = {
        "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\n"
        "h_sum 1\nh_count 1\n", /* not cumulative */
        "# TYPE h histogram\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\n"
        "h_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n", /* bounds fall */
        "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",
        "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n",
        "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_count 2\n",
    };
    for (size_t i = 0; i < sizeof bad_hist / sizeof bad_hist[0]; i++) {
        struct prom_doc doc;
        struct prom_histogram h;
        char err[128] = "";
        ck_assert_int_eq(prom_parse(bad_hist[i], strlen(bad_hist[i]), &doc,
                                    err, sizeof err),
                         0);
        ck_assert_msg(prom_histogram(&doc, "h", &h, err, sizeof err) != 0,
                      "accepted histogram %zu", i);
        prom_free(&doc);
    }
}
END_TEST

/* ---- the inventory server's /metrics ----------------------------------- */

/* Start $HILOCK_INVENTORY_SERVER on a free port against tu_srv, with the
 * options more (NULL-terminated; NULL: none); its pid in *pid, its HTTP
 * port returned. */
static int inventory_start_with(pid_t *pid, const char *const *more)
{
    const char *bin = getenv("HILOCK_INVENTORY_SERVER");
    char rport[16], line[512];
    int fds[2];
    ck_assert_msg(bin != NULL, "HILOCK_INVENTORY_SERVER is not set");
    snprintf(rport, sizeof rport, "%d", rs_port(tu_srv));
    ck_assert_int_eq(pipe(fds), 0);
    pid_t parent = getpid();
    *pid = fork();
    ck_assert_int_ge(*pid, 0);
    if (*pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(99);
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        const char *argv[24] = {bin, "--port", "0", "--redis-port", rport,
                                "--product", "gadget"};
        for (int i = 0; more && more[i] && i < 16; i++)
            argv[7 + i] = more[i];
        execv(bin, (char *const *)argv);
        _exit(98);
    }
    close(fds[1]);
    size_t n = 0;
    while (n < sizeof line - 1 && !memchr(line, '\n', n)) {
        struct pollfd pf = {fds[0], POLLIN, 0};
        ck_assert_msg(poll(&pf, 1, tu_ms(10000)) == 1, "no startup line");
        ssize_t r = read(fds[0], line + n, sizeof line - 1 - n);
        ck_assert_msg(r > 0, "the server exited at startup");
        n += (size_t)r;
    }
    close(fds[0]);
    line[n] = '\0';
    const char *at = strstr(line, "http://127.0.0.1:");
    ck_assert_ptr_nonnull(at);
    return atoi(at + strlen("http://127.0.0.1:"));
}

static int inventory_start(pid_t *pid)
{
    return inventory_start_with(pid, NULL);
}

/* A connection to the server on port, nothing sent. */
static int http_connect(int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

/* Send an HTTP/1.0 request; the connection, to read the answer from. */
static int http_send(int port, const char *method, const char *path)
{
    char req[256];
    int fd = http_connect(port);
    int len = snprintf(req, sizeof req, "%s %s HTTP/1.0\r\nHost: x\r\n\r\n",
                       method, path);
    ck_assert_int_eq(write(fd, req, (size_t)len), len);
    return fd;
}

/* Read the whole answer on fd (the server closes it), check its status
 * code and return its body (malloc'd). */
static char *http_read(int fd, int code)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    for (;;) {
        struct pollfd pf = {fd, POLLIN, 0};
        ck_assert_msg(poll(&pf, 1, tu_ms(10000)) == 1, "no HTTP answer");
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        ck_assert_int_ge(r, 0);
        if (r == 0)
            break;
        n += (size_t)r;
        if (n == cap - 1)
            ck_assert_ptr_nonnull(buf = realloc(buf, cap *= 2));
    }
    close(fd);
    buf[n] = '\0';
    ck_assert_msg(atoi(buf + strlen("HTTP/1.x ")) == code, "answer: %s", buf);
    char *body = strstr(buf, "\r\n\r\n");
    ck_assert_ptr_nonnull(body);
    memmove(buf, body + 4, strlen(body + 4) + 1);
    return buf;
}

/* Whether the server closed fd (after an answer or not) within
 * timeout_ms; what it sent is read and dropped. */
static bool closed_within(int fd, int timeout_ms)
{
    char buf[4096];
    long long deadline = tu_now_ms() + timeout_ms;
    for (;;) {
        long long left = deadline - tu_now_ms();
        struct pollfd pf = {fd, POLLIN, 0};
        if (left <= 0 || poll(&pf, 1, (int)left) != 1)
            return false;
        ssize_t r = recv(fd, buf, sizeof buf, 0);
        if (r <= 0)
            return true;
    }
}

/* The resident set of process pid in KiB (VmRSS). */
static long rss_kib(pid_t pid)
{
    char path[64], line[256];
    long kib = -1;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kib = atol(line + 6);
    fclose(f);
    ck_assert_int_gt(kib, 0);
    return kib;
}

/* How long GET /stock takes to be answered, in ms: the loop's delay. */
static long long stock_ms(int port)
{
    long long t0 = tu_now_ms();
    free(http_read(http_send(port, "GET", "/stock"), 200));
    return tu_now_ms() - t0;
}

/* Send up to total bytes of what head starts (then 'a's) on fd, at most
 * limit_ms; a GET /stock between chunks, its slowest time in *slowest.
 * Returns the bytes the server took before it closed or stopped. */
static size_t flood(int fd, int port, const char *head, size_t total,
                    int limit_ms, long long *slowest)
{
    static char chunk[1 << 20];
    size_t sent = 0, hl = strlen(head);
    long long deadline = tu_now_ms() + limit_ms;
    memset(chunk, 'a', sizeof chunk);
    memcpy(chunk, head, hl);
    while (sent < total && tu_now_ms() < deadline) {
        struct pollfd pf = {fd, POLLOUT, 0};
        if (poll(&pf, 1, 100) != 1)
            continue; /* the server is not reading: it may be done */
        if (pf.revents & (POLLERR | POLLHUP))
            break;
        size_t off = sent % sizeof chunk;
        ssize_t w = send(fd, chunk + (sent < hl ? sent : off),
                         sizeof chunk - (sent < hl ? sent : off),
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0)
            break; /* closed by the server (EPIPE, ECONNRESET) */
        sent += (size_t)w;
        long long ms = stock_ms(port);
        *slowest = ms > *slowest ? ms : *slowest;
    }
    return sent;
}

/* What the example's users copy: a client that sends too much, sends
 * nothing, or opens too many connections neither grows the server nor
 * stalls its loop (which renews the locks): an oversize request line or
 * body gets an error or a closed connection at once, an idle connection
 * is closed after --idle-ms, and past --max-connections the next is
 * served only when one closes. */
START_TEST(the_inventory_server_bounds_what_a_client_may_cost)
{
    enum { MiB = 1 << 20 };
    static const char *const opts[] = {"--idle-ms", "1500",
                                       "--max-connections", "4", NULL};
    free(rs_str(tu_srv, "SET", "stock:gadget", "3", (char *)NULL));
    pid_t pid;
    int port = inventory_start_with(&pid, opts);
    long rss0 = rss_kib(pid);
    long long slowest = 0;

    int fd = http_connect(port);
    size_t took = flood(fd, port, "GET /", 64 * MiB, tu_ms(20000), &slowest);
    ck_assert_msg(took < 32 * MiB, "took %zu bytes of a request line", took);
    ck_assert(closed_within(fd, tu_ms(2000)));
    close(fd);
    fd = http_connect(port);
    took = flood(fd, port,
                 "POST /sale HTTP/1.1\r\nHost: x\r\n"
                 "Content-Length: 25165824\r\n\r\n",
                 24 * MiB, tu_ms(20000), &slowest);
    ck_assert_msg(took < 16 * MiB, "took %zu bytes of a body", took);
    ck_assert(closed_within(fd, tu_ms(2000)));
    close(fd);
    ck_assert_msg(slowest < tu_ms(500), "the loop stalled %lld ms", slowest);
    ck_assert_msg(rss_kib(pid) - rss0 < 16 * 1024, "RSS %ld -> %ld KiB",
                  rss0, rss_kib(pid));
    /* what a customer buys still sells */
    char *body = http_read(http_send(port, "POST", "/sale"), 200);
    ck_assert_msg(strstr(body, "\"sold\":true"), "%s", body);
    free(body);

    /* idle connections: four fill the server; a fifth is served once one
     * of them closes, and the server closes the idle ones by itself */
    int idle[4];
    for (int i = 0; i < 4; i++)
        idle[i] = http_connect(port);
    int fifth = http_send(port, "GET", "/stock");
    struct pollfd pf = {fifth, POLLIN, 0};
    ck_assert_int_eq(poll(&pf, 1, 200), 0);
    close(idle[0]);
    free(http_read(fifth, 200));
    for (int i = 1; i < 4; i++) {
        ck_assert(closed_within(idle[i], tu_ms(5000)));
        close(idle[i]);
    }

    ck_assert_int_eq(kill(pid, SIGTERM), 0);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
END_TEST

static double metric(const struct prom_doc *doc, const char *name)
{
    const struct prom_sample *s = prom_find(doc, name, NULL, NULL);
    ck_assert_msg(s != NULL, "no %s", name);
    return s->value;
}

/* ---- hilock_stats_prometheus ------------------------------------------- */

/* Counters with distinct values, and histograms with a few observations:
 * 3 of at most 1 us, 2 in (1, 2] us, 1 in (2^9, 2^10] us, 4 above 2^30. */
static struct hilock_stats sample_stats(void)
{
    struct hilock_stats s;
    memset(&s, 0, sizeof s);
    s.acquisitions = 101;
    s.reentries = 102;
    s.waits = 103;
    s.timeouts = 104;
    s.cancels = 105;
    s.handoffs = 106;
    s.lost = 107;
    s.renewals_sent = 108;
    s.renewals_failed = 109;
    s.reconnects = 110;
    s.requests_inflight = 111;
    s.waiters_parked = 112;
    s.subscriptions = 113;
    s.wait_us[0] = 3;
    s.wait_us[1] = 2;
    s.wait_us[10] = 1;
    s.wait_us[HILOCK_HIST_BUCKETS - 1] = 4;
    s.wait_us_sum = 7654321;
    s.request_us[5] = 9;
    s.request_us_sum = 250;
    return s;
}

/* The text of st with labels, in a buffer of exactly the size asked for. */
static char *prometheus_text(const struct hilock_stats *st, size_t st_size,
                             const char *labels)
{
    int len = hilock_stats_prometheus(st, st_size, labels, NULL, 0);
    ck_assert_int_gt(len, 0);
    char *text = malloc((size_t)len + 1);
    ck_assert_ptr_nonnull(text);
    memset(text, 'x', (size_t)len + 1);
    ck_assert_int_eq(hilock_stats_prometheus(st, st_size, labels, text,
                                             (size_t)len + 1), len);
    ck_assert_uint_eq(strlen(text), (size_t)len);
    return text;
}

START_TEST(the_library_writes_every_counter_as_a_scraper_reads_it)
{
    struct hilock_stats st = sample_stats();
    static const struct {
        const char *name, *type;
        double value;
    } want[] = {
        {"hilock_acquisitions_total", "counter", 101},
        {"hilock_reentries_total", "counter", 102},
        {"hilock_waits_total", "counter", 103},
        {"hilock_timeouts_total", "counter", 104},
        {"hilock_cancels_total", "counter", 105},
        {"hilock_handoffs_total", "counter", 106},
        {"hilock_locks_lost_total", "counter", 107},
        {"hilock_renewals_sent_total", "counter", 108},
        {"hilock_renewals_failed_total", "counter", 109},
        {"hilock_reconnects_total", "counter", 110},
        {"hilock_requests_in_flight", "gauge", 111},
        {"hilock_waiters_parked", "gauge", 112},
        {"hilock_subscriptions", "gauge", 113},
    };
    char *text = prometheus_text(&st, sizeof st, NULL);
    struct prom_doc doc;
    struct prom_histogram wait, req;
    char err[160] = "";
    ck_assert_msg(prom_parse(text, strlen(text), &doc, err, sizeof err) == 0,
                  "%s", err);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const struct prom_family *f = prom_family(&doc, want[i].name);
        ck_assert_msg(f != NULL, "no family %s", want[i].name);
        ck_assert_str_eq(f->type, want[i].type);
        ck_assert_msg(f->help[0] != '\0', "%s has no HELP", want[i].name);
        ck_assert_msg(metric(&doc, want[i].name) == want[i].value, "%s",
                      want[i].name);
    }
    ck_assert_msg(prom_histogram(&doc, "hilock_wait_seconds", &wait, err,
                                 sizeof err) == 0, "%s", err);
    ck_assert_msg(prom_histogram(&doc, "hilock_request_seconds", &req, err,
                                 sizeof err) == 0, "%s", err);
    /* Cumulative on log2 bounds in seconds, the last one +Inf. */
    ck_assert_uint_eq(wait.n, HILOCK_HIST_BUCKETS);
    ck_assert(wait.le[0] == 0.000001 && wait.count_le[0] == 3);
    ck_assert(wait.le[1] == 0.000002 && wait.count_le[1] == 5);
    ck_assert(wait.le[9] == 0.000512 && wait.count_le[9] == 5);
    ck_assert(wait.le[10] == 0.001024 && wait.count_le[10] == 6);
    ck_assert(wait.le[30] == 1073.741824 && wait.count_le[30] == 6);
    ck_assert(isinf(wait.le[31]) && wait.count_le[31] == 10);
    ck_assert(wait.count == 10 && wait.sum == 7.654321);
    ck_assert(req.count == 9 && req.count_le[4] == 0 && req.count_le[5] == 9);
    ck_assert(req.sum == 0.00025);
    prom_free(&doc);
    free(text);
}
END_TEST

START_TEST(labels_go_on_every_sample_and_the_le_label_joins_them)
{
    struct hilock_stats st = sample_stats();
    char *text = prometheus_text(&st, sizeof st, "client=\"orders\",zone=\"a\"");
    struct prom_doc doc;
    struct prom_histogram wait;
    char err[160] = "";
    ck_assert_msg(prom_parse(text, strlen(text), &doc, err, sizeof err) == 0,
                  "%s", err);
    for (size_t i = 0; i < doc.nsamples; i++) {
        const struct prom_sample *s = &doc.samples[i];
        ck_assert_msg(prom_label(s, "client") &&
                          strcmp(prom_label(s, "client"), "orders") == 0 &&
                          prom_label(s, "zone") &&
                          strcmp(prom_label(s, "zone"), "a") == 0,
                      "%s has not the labels", s->name);
        ck_assert_uint_eq(s->nlabels,
                          strstr(s->name, "_bucket") ? 3 : 2);
    }
    ck_assert_msg(prom_histogram(&doc, "hilock_wait_seconds", &wait, err,
                                 sizeof err) == 0, "%s", err);
    ck_assert(wait.count == 10);
    prom_free(&doc);
    free(text);
}
END_TEST

START_TEST(a_short_buffer_is_cut_and_terminated_and_the_length_still_told)
{
    struct hilock_stats st = sample_stats();
    char *full = prometheus_text(&st, sizeof st, NULL);
    size_t len = strlen(full);
    char small[100];
    memset(small, 'x', sizeof small);
    ck_assert_int_eq(hilock_stats_prometheus(&st, sizeof st, NULL, small,
                                             sizeof small), (int)len);
    ck_assert_uint_eq(strlen(small), sizeof small - 1);
    ck_assert(strncmp(small, full, sizeof small - 1) == 0);
    /* One byte short: all but the last character. */
    char *almost = malloc(len);
    ck_assert_int_eq(hilock_stats_prometheus(&st, sizeof st, NULL, almost,
                                             len), (int)len);
    ck_assert(strlen(almost) == len - 1 && strncmp(almost, full, len - 1) == 0);
    ck_assert_int_eq(hilock_stats_prometheus(NULL, sizeof st, NULL, NULL, 0),
                     HILOCK_EINVAL);
    ck_assert_int_eq(hilock_stats_prometheus(&st, 0, NULL, NULL, 0),
                     HILOCK_EINVAL);
    ck_assert_int_eq(hilock_stats_prometheus(&st, sizeof st, NULL, NULL, 5),
                     HILOCK_EINVAL);
    free(almost);
    free(full);
}
END_TEST

START_TEST(an_older_callers_struct_reads_its_missing_fields_as_zero)
{
    /* A caller whose header ended after the gauges: the histograms it has
     * not are written empty, never read past its struct. */
    struct hilock_stats st = sample_stats();
    size_t older = offsetof(struct hilock_stats, wait_us);
    char *text = prometheus_text(&st, older, NULL);
    struct prom_doc doc;
    struct prom_histogram wait;
    char err[160] = "";
    ck_assert_msg(prom_parse(text, strlen(text), &doc, err, sizeof err) == 0,
                  "%s", err);
    ck_assert(metric(&doc, "hilock_subscriptions") == 113);
    ck_assert_msg(prom_histogram(&doc, "hilock_wait_seconds", &wait, err,
                                 sizeof err) == 0, "%s", err);
    ck_assert(wait.count == 0 && wait.sum == 0);
    prom_free(&doc);
    free(text);
}
END_TEST

START_TEST(a_live_clients_text_counts_its_acquisition)
{
    struct hilock_lock *l = tu_lock(a, "metrics-live", 1);
    tu_assert_status(tu_acquire(l, 0, 5000, NULL), 0);
    struct hilock_stats st = stats_of(a);
    char *text = prometheus_text(&st, sizeof st, NULL);
    struct prom_doc doc;
    char err[160] = "";
    ck_assert_msg(prom_parse(text, strlen(text), &doc, err, sizeof err) == 0,
                  "%s", err);
    ck_assert(metric(&doc, "hilock_acquisitions_total") == 1);
    ck_assert(metric(&doc, "hilock_requests_in_flight") == 0);
    prom_free(&doc);
    free(text);
}
END_TEST

START_TEST(the_inventory_metrics_page_parses_and_matches_the_purchases)
{
    enum { STOCK = 5, PURCHASES = 12, AT_ONCE = 4 };
    char stock[8];
    snprintf(stock, sizeof stock, "%d", STOCK);
    free(rs_str(tu_srv, "SET", "stock:gadget", stock, (char *)NULL));
    pid_t pid;
    int port = inventory_start(&pid);
    int sold = 0;
    for (int done = 0; done < PURCHASES; done += AT_ONCE) {
        int fds[AT_ONCE]; /* at once: they wait for each other's lock */
        for (int i = 0; i < AT_ONCE; i++)
            fds[i] = http_send(port, "POST", "/sale");
        for (int i = 0; i < AT_ONCE; i++) {
            char *body = http_read(fds[i], 200);
            sold += strstr(body, "\"sold\":true") != NULL;
            free(body);
        }
    }
    ck_assert_int_eq(sold, STOCK);

    char *text = http_read(http_send(port, "GET", "/metrics"), 200);
    struct prom_doc doc;
    struct prom_histogram wait, req;
    char err[160] = "";
    ck_assert_msg(prom_parse(text, strlen(text), &doc, err, sizeof err) == 0,
                  "%s", err);
    ck_assert_msg(prom_histogram(&doc, "hilock_wait_seconds", &wait, err,
                                 sizeof err) == 0, "%s", err);
    ck_assert_msg(prom_histogram(&doc, "hilock_request_seconds", &req, err,
                                 sizeof err) == 0, "%s", err);
    ck_assert_str_eq(prom_family(&doc, "hilock_acquisitions_total")->type,
                     "counter");
    ck_assert_str_eq(prom_family(&doc, "hilock_waiters_parked")->type,
                     "gauge");
    /* Every purchase took the lock once, sold or not, and let it go. */
    ck_assert(metric(&doc, "hilock_acquisitions_total") == PURCHASES);
    ck_assert(prom_find(&doc, "inventory_purchases_total", "outcome",
                        "sold")->value == STOCK);
    ck_assert(prom_find(&doc, "inventory_purchases_total", "outcome",
                        "sold_out")->value == PURCHASES - STOCK);
    ck_assert(prom_find(&doc, "inventory_purchases_total", "outcome",
                        "failed")->value == 0);
    ck_assert(metric(&doc, "hilock_timeouts_total") == 0);
    ck_assert(metric(&doc, "hilock_locks_lost_total") == 0);
    ck_assert(metric(&doc, "hilock_requests_in_flight") == 0);
    ck_assert(metric(&doc, "hilock_waiters_parked") == 0);
    ck_assert(wait.count == metric(&doc, "hilock_waits_total"));
    /* An acquire and a release per purchase at least (a waiter retries). */
    ck_assert(req.count >= 2 * PURCHASES);
    ck_assert(req.sum > 0 && req.le[0] == 0.000001 && req.n == 32);
    prom_free(&doc);
    free(text);

    ck_assert_int_eq(kill(pid, SIGTERM), 0);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
END_TEST

static Suite *stats_suite(void)
{
    Suite *s = suite_create("stats");
    TCase *pure = tcase_create("pure");
    tcase_add_test(pure, buckets_are_log2_microseconds_as_documented);
    tcase_add_test(pure, the_parser_reads_labels_escapes_timestamps_and_types);
    tcase_add_test(pure, the_parser_rejects_what_a_scraper_rejects);
    suite_add_tcase(s, pure);

    TCase *tc = tcase_create("counters");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, stats_start_at_zero_and_honour_the_callers_size);
    tcase_add_test(tc, acquisitions_reentries_and_requests_match_what_was_done);
    tcase_add_test(tc, a_request_is_in_flight_until_its_reply);
    tcase_add_test(tc, waits_and_their_histogram_count_every_parked_acquire);
    tcase_add_test(tc, a_timeout_and_a_cancel_are_counted_with_their_waits);
    tcase_add_test(tc,
                   renewals_match_the_script_calls_and_a_deleted_key_is_lost);
    tcase_add_test(tc,
                   a_reconnect_is_counted_and_the_subscription_comes_back_once);
    suite_add_tcase(s, tc);

    TCase *prom = tcase_create("prometheus");
    tcase_add_test(prom, the_library_writes_every_counter_as_a_scraper_reads_it);
    tcase_add_test(prom, labels_go_on_every_sample_and_the_le_label_joins_them);
    tcase_add_test(prom,
                   a_short_buffer_is_cut_and_terminated_and_the_length_still_told);
    tcase_add_test(prom, an_older_callers_struct_reads_its_missing_fields_as_zero);
    suite_add_tcase(s, prom);
    tcase_add_test(tc, a_live_clients_text_counts_its_acquisition);

    TCase *inv = tcase_create("metrics");
    tcase_add_checked_fixture(inv, tu_setup, tu_teardown);
    tcase_set_timeout(inv, 60);
    tcase_add_test(inv,
                   the_inventory_metrics_page_parses_and_matches_the_purchases);
    tcase_add_test(inv, the_inventory_server_bounds_what_a_client_may_cost);
    suite_add_tcase(s, inv);
    return s;
}

int main(void)
{
    return tu_main(stats_suite());
}
