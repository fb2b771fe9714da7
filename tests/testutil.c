/* SPDX-License-Identifier: BSD-3-Clause */
/* testutil.c -- see testutil.h. */
#include "testutil.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct event_base *tu_base;
struct rs_server *tu_srv;

static int dead_fd = -1; /* the socket holding tu_dead_port() */

/* Margin added to the deadline of a synchronous wrapper: the callback must
 * fire within the operation's own bounds; this is only a hang guard. */
#define TU_MARGIN_MS 5000

void tu_setup_no_redis(void)
{
    tu_base = event_base_new();
    ck_assert_ptr_nonnull(tu_base);
}

struct rs_server *tu_server_start(const struct rs_options *opts)
{
    static const char *const ours[] = {"--hz", "100"};
    const char *args[64];
    size_t n = 0;
    struct rs_options o;
    if (opts)
        o = *opts;
    else
        memset(&o, 0, sizeof o);
    for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++)
        args[n++] = ours[i];
    for (size_t i = 0; o.args && o.args[i]; i++) {
        ck_assert_uint_lt(n, sizeof args / sizeof args[0] - 1);
        args[n++] = o.args[i];
    }
    args[n] = NULL;
    o.args = args; /* rs_start_opts copies them */
    return rs_start_opts(&o);
}

void tu_setup(void)
{
    tu_setup_no_redis();
    tu_srv = tu_server_start(NULL);
    ck_assert_msg(tu_srv != NULL, "could not start redis-server");
}

int tu_dead_port(void)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    ck_assert_int_lt(dead_fd, 0); /* one per test */
    dead_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(dead_fd, 0);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(dead_fd, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(getsockname(dead_fd, (struct sockaddr *)&sa, &len), 0);
    return ntohs(sa.sin_port);
}

void tu_teardown(void)
{
    if (dead_fd >= 0)
        close(dead_fd);
    dead_fd = -1;
    rs_stop(tu_srv);
    tu_srv = NULL;
    if (tu_base)
        event_base_free(tu_base);
    tu_base = NULL;
}

void tu_setup_pair(struct hilock_client **a, struct hilock_client **b)
{
    tu_setup();
    *a = tu_client(NULL);
    *b = tu_client(NULL);
}

void tu_teardown_pair(struct hilock_client **a, struct hilock_client **b)
{
    hilock_client_free(*a);
    hilock_client_free(*b);
    *a = *b = NULL;
    tu_teardown();
}

long long tu_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int tu_ms(int ms)
{
    static double multiplier;
    if (multiplier == 0) {
        const char *env = getenv("CK_TIMEOUT_MULTIPLIER");
        char *end = NULL;
        double m = env ? strtod(env, &end) : 1;
        multiplier = env && end != env && m > 1 ? m : 1;
    }
    return (int)(ms * multiplier);
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

bool tu_run_until(tu_cond_fn *cond, void *arg, int timeout_ms)
{
    struct timeval tv = {0, 5000};
    struct event *ev = event_new(tu_base, -1, EV_PERSIST, tick, NULL);
    long long deadline = tu_now_ms() + timeout_ms;
    bool met;
    ck_assert_ptr_nonnull(ev);
    event_add(ev, &tv);
    while (!(met = cond && cond(arg)) && tu_now_ms() < deadline)
        event_base_loop(tu_base, EVLOOP_ONCE);
    event_free(ev);
    return met;
}

void tu_run_for(int ms)
{
    tu_run_until(NULL, NULL, ms);
}

void tu_run_quiet(void)
{
    tu_run_for(tu_ms(TU_QUIET_MS));
}

struct count_goal {
    const int *counter;
    int n;
};

static bool count_reached(void *arg)
{
    const struct count_goal *g = arg;
    return *g->counter >= g->n;
}

bool tu_run_until_count(const int *counter, int n, int timeout_ms)
{
    struct count_goal g = {counter, n};
    return tu_run_until(count_reached, &g, timeout_ms);
}

bool tu_run_until_redis(long long expect, int timeout_ms, const char *cmd,
                        ...)
{
    long long deadline = tu_now_ms() + timeout_ms;
    for (;;) {
        va_list ap;
        va_start(ap, cmd);
        long long v = rs_vint(tu_srv, cmd, ap);
        va_end(ap);
        if (v == expect)
            return true;
        if (tu_now_ms() >= deadline)
            return false;
        tu_run_for(10);
    }
}

bool tu_numsub_becomes(const char *channel, long long n, int timeout_ms)
{
    long long deadline = tu_now_ms() + timeout_ms;
    for (;;) {
        if (rs_numsub(tu_srv, channel) == n)
            return true;
        if (tu_now_ms() >= deadline)
            return false;
        tu_run_for(10);
    }
}

/* Record a callback about handle (of any type) into r. */
static void record(struct tu_result *r, const void *handle, int status,
                   const struct hilock_result *res)
{
    ck_assert_ptr_nonnull(res);
    r->calls++;
    r->status = status;
    r->res = *res;
    r->at_ms = tu_now_ms();
    r->handle = handle;
}

bool tu_result_empty(const struct hilock_result *res)
{
    return res->token == 0 && res->ttl_ms == 0 && res->holds == 0 &&
           res->permits == 0 && res->lease_ms == 0 && res->held == 0 &&
           res->permits_set == 0;
}

void tu_record(struct hilock_lock *lock, int status,
               const struct hilock_result *res, void *arg)
{
    struct tu_result *r = arg;
    record(r, lock, status, res);
    r->lock = lock;
}

void tu_record_sem(struct hilock_semaphore *sem, int status,
                   const struct hilock_result *res, void *arg)
{
    record(arg, sem, status, res);
}

void tu_record_permit(struct hilock_permit *permit, int status,
                      const struct hilock_result *res, void *arg)
{
    record(arg, permit, status, res);
}

void tu_options(struct hilock_options *opts)
{
    hilock_options_init(opts);
    opts->node.port = tu_srv ? rs_port(tu_srv) : 6379;
    opts->request_timeout_ms = 1500;
    opts->connect_timeout_ms = 1500;
}

/* What a client made by tu_client reported through its state callback.
 * Records are never freed (a test makes a handful); the newest comes first,
 * so a client at the address of a freed one finds its own. */
struct client_rec {
    const struct hilock_client *client;
    int ups;
    int state;  /* the command connection's last state, 0 before any */
    int status; /* and its status */
    int pubsub; /* the subscriber's last state, 0 before any */
    hilock_state_cb *user_cb;
    void *user_arg;
    struct client_rec *next;
};

static struct client_rec *client_recs;

/* The state callback tu_client installs: note the news in the record (arg),
 * then pass it on to the test's own callback, if any. */
static void record_state(struct hilock_client *c, int status,
                         enum hilock_state state, const char *node,
                         void *arg)
{
    struct client_rec *r = arg;
    if (state == HILOCK_STATE_UP || state == HILOCK_STATE_DOWN) {
        r->state = state;
        r->status = status;
    } else {
        r->pubsub = state;
    }
    r->ups += state == HILOCK_STATE_UP;
    if (r->user_cb)
        r->user_cb(c, status, state, node, r->user_arg);
}

/* The record of client c; fails the test when tu_client did not make c. */
static struct client_rec *client_rec(const struct hilock_client *c)
{
    for (struct client_rec *r = client_recs; r; r = r->next) {
        if (r->client == c)
            return r;
    }
    ck_abort_msg("client %p was not made by tu_client", (const void *)c);
    return NULL;
}

struct hilock_client *tu_client(const struct hilock_options *opts)
{
    struct hilock_options o;
    struct hilock_client *c = NULL;
    struct client_rec *r = calloc(1, sizeof *r);
    ck_assert_ptr_nonnull(r);
    if (opts)
        o = *opts;
    else
        tu_options(&o);
    r->user_cb = o.state_cb;
    r->user_arg = o.state_arg;
    o.state_cb = record_state;
    o.state_arg = r;
    int rc = hilock_client_new(tu_base, &o, &c);
    if (rc)
        free(r);
    tu_assert_status(rc, 0);
    ck_assert_ptr_nonnull(c);
    r->client = c;
    r->next = client_recs;
    client_recs = r;
    return c;
}

int tu_ups(const struct hilock_client *client)
{
    return client_rec(client)->ups;
}

struct ups_goal {
    const struct client_rec *rec;
    int n;
};

static bool ups_reached(void *arg)
{
    const struct ups_goal *g = arg;
    return g->rec->ups >= g->n;
}

bool tu_run_until_up(const struct hilock_client *client, int n,
                     int timeout_ms)
{
    struct ups_goal g = {client_rec(client), n};
    return tu_run_until(ups_reached, &g, timeout_ms);
}

struct state_goal {
    const struct client_rec *rec;
    int state;
};

static bool state_reached(void *arg)
{
    const struct state_goal *g = arg;
    if (g->state == HILOCK_STATE_UP || g->state == HILOCK_STATE_DOWN)
        return g->rec->state == g->state;
    return g->rec->pubsub == g->state;
}

bool tu_run_until_state(const struct hilock_client *client, int state,
                        int timeout_ms)
{
    struct state_goal g = {client_rec(client), state};
    return tu_run_until(state_reached, &g, timeout_ms);
}

void tu_client_ready(struct hilock_client *client)
{
    const struct client_rec *r = client_rec(client);
    ck_assert_msg(tu_run_until_state(client, HILOCK_STATE_UP,
                                     tu_ms(TU_MARGIN_MS)),
                  "client not up: last state %d, %s", r->state,
                  hilock_err_name(r->status));
    struct hilock_lock *probe = tu_lock(client, "tu-ready", 0);
    tu_assert_status(tu_query(hilock_lock_query_held, probe, NULL), 0);
    hilock_lock_free(probe);
}

/* The handles tu_lock (and tu_keep) had. Most tests leave their handles
 * to the client's free, which detaches them (their memory is the user's
 * to free, see hilock_client_free); kept here, they stay reachable until
 * the test's process ends instead of counting as leaks. Never read, so
 * volatile: the stores must not be optimised away. */
static const void *volatile made[1024];
static size_t nmade;

static void keep(const void *handle)
{
    made[nmade++ % (sizeof made / sizeof made[0])] = handle;
}

struct hilock_lock *tu_keep(struct hilock_lock *lock)
{
    keep(lock);
    return lock;
}

struct hilock_lock *tu_lock(struct hilock_client *client, const char *name,
                            uint64_t owner_tag)
{
    struct hilock_lock *l = NULL;
    int rc = hilock_lock_new(client, name, strlen(name), owner_tag, &l);
    tu_assert_status(rc, 0);
    ck_assert_ptr_nonnull(l);
    return tu_keep(l);
}

struct hilock_lock *tu_rwlock(struct hilock_client *client, const char *name,
                              uint64_t owner_tag, enum hilock_rw_side side)
{
    struct hilock_lock *l = NULL;
    tu_assert_status(
        hilock_rwlock_new(client, name, strlen(name), owner_tag, side, &l), 0);
    ck_assert_ptr_nonnull(l);
    return tu_keep(l);
}

struct hilock_semaphore *tu_semaphore(struct hilock_client *client,
                                      const char *name)
{
    struct hilock_semaphore *s = NULL;
    tu_assert_status(hilock_semaphore_new(client, name, strlen(name), &s), 0);
    ck_assert_ptr_nonnull(s);
    keep(s);
    return s;
}

struct hilock_permit *tu_permit(struct hilock_client *client,
                                const char *name)
{
    struct hilock_permit *p = NULL;
    tu_assert_status(hilock_permit_new(client, name, strlen(name), &p), 0);
    ck_assert_ptr_nonnull(p);
    keep(p);
    return p;
}

const char *tu_field(struct hilock_client *client, uint64_t owner_tag,
                     char *buf)
{
    char id[37];
    tu_assert_status(hilock_client_id(client, id, sizeof id), 0);
    snprintf(buf, 64, "%s:%llu", id, (unsigned long long)owner_tag);
    return buf;
}

long long tu_holds(const char *key, struct hilock_client *client,
                   uint64_t owner_tag)
{
    char field[64];
    return rs_int(tu_srv, "HGET", key, tu_field(client, owner_tag, field),
                  (char *)NULL);
}

long long tu_exists(const char *key)
{
    return rs_int(tu_srv, "EXISTS", key, (char *)NULL);
}

long long tu_fence(const char *name)
{
    char key[HILOCK_NAME_MAX + 32];
    snprintf(key, sizeof key, TU_FENCE("%s"), name);
    return rs_int(tu_srv, "GET", key, (char *)NULL);
}

/* tu_cond_fn: Redis has counted more EVALSHA calls than *arg. */
static bool evalsha_above(void *arg)
{
    return rs_cmdstat_calls(tu_srv, "evalsha") > *(const long long *)arg;
}

void tu_await_renewal(struct hilock_lock *lock, int timeout_ms)
{
    long long calls = rs_cmdstat_calls(tu_srv, "evalsha");
    ck_assert_int_ge(calls, 0);
    ck_assert_msg(tu_run_until(evalsha_above, &calls, timeout_ms),
                  "no script call within %d ms", timeout_ms);
    tu_assert_status(tu_query(hilock_lock_query_held, lock, NULL), 0);
}

long long tu_lock_calls(void)
{
    long long sum = 0;
    static const char *const cmd[] = {"evalsha", "restore", "hdel"};
    for (size_t i = 0; i < sizeof cmd / sizeof cmd[0]; i++) {
        long long n = rs_cmdstat_calls(tu_srv, cmd[i]);
        ck_assert_int_ge(n, 0);
        sum += n;
    }
    return sum;
}

void tu_assert_no_script_call(int window_ms)
{
    long long calls = tu_lock_calls();
    tu_run_for(window_ms);
    tu_run_quiet();
    long long after = tu_lock_calls();
    ck_assert_msg(after == calls, "%lld lock commands in %d ms",
                  after - calls, window_ms);
}

/* Results of the synchronous wrappers live in a static ring rather than on
 * the stack, so that a buggy second callback after the wrapper returned
 * writes somewhere harmless instead of into a dead frame. */
static struct tu_result *fresh_result(void)
{
    static struct tu_result ring[256];
    static unsigned next;
    struct tu_result *r = &ring[next++ % 256];
    memset(r, 0, sizeof *r);
    return r;
}

/* The call what, which may wait up to wait_ms, returned rc, which must be
 * 0 (it started): run until its callback r has been called; fail the test
 * when it has not TU_MARGIN_MS after wait_ms. */
static int finish(int rc, struct tu_result *r, struct hilock_result *res,
                  uint64_t wait_ms, const char *what)
{
    long long timeout_ms = (long long)wait_ms + tu_ms(TU_MARGIN_MS);
    tu_assert_status(rc, 0);
    if (timeout_ms > tu_ms(60000))
        timeout_ms = tu_ms(60000); /* a test never waits longer than this */
    ck_assert_msg(tu_run_until_count(&r->calls, 1, (int)timeout_ms),
                  "%s: no callback within %lld ms", what, timeout_ms);
    ck_assert_int_eq(r->calls, 1);
    if (res)
        *res = r->res;
    return r->status;
}

int tu_acquire(struct hilock_lock *lock, uint64_t wait_ms, uint64_t lease_ms,
               struct hilock_result *res)
{
    struct tu_result *r = fresh_result();
    int rc = hilock_lock_acquire(lock, wait_ms, lease_ms, tu_record, r);
    return finish(rc, r, res, wait_ms, "acquire");
}

int tu_release(struct hilock_lock *lock, struct hilock_result *res)
{
    struct tu_result *r = fresh_result();
    int rc = hilock_lock_release(lock, tu_record, r);
    return finish(rc, r, res, 0, "release");
}

int tu_query(tu_query_fn *fn, struct hilock_lock *lock,
             struct hilock_result *res)
{
    struct tu_result *r = fresh_result();
    return finish(fn(lock, tu_record, r), r, res, 0, "query");
}

int tu_sem_acquire(struct hilock_semaphore *s, uint32_t permits,
                   uint64_t wait_ms, struct hilock_result *res)
{
    struct tu_result *r = fresh_result();
    int rc = hilock_semaphore_acquire(s, permits, wait_ms, tu_record_sem, r);
    return finish(rc, r, res, wait_ms, "semaphore acquire");
}

int tu_sem_release(struct hilock_semaphore *s, uint32_t permits,
                   struct hilock_result *res)
{
    struct tu_result *r = fresh_result();
    int rc = hilock_semaphore_release(s, permits, tu_record_sem, r);
    return finish(rc, r, res, 0, "semaphore release");
}

int tu_permit_acquire(struct hilock_permit *p, uint64_t wait_ms,
                      uint64_t lease_ms, struct hilock_result *res)
{
    struct tu_result *r = fresh_result();
    int rc = hilock_permit_acquire(p, wait_ms, lease_ms, tu_record_permit, r);
    return finish(rc, r, res, wait_ms, "permit acquire");
}

int tu_permit_release(struct hilock_permit *p, struct hilock_result *res)
{
    struct tu_result *r = fresh_result();
    int rc = hilock_permit_release(p, tu_record_permit, r);
    return finish(rc, r, res, 0, "permit release");
}

int tu_sem_query(tu_sem_query_fn *fn, struct hilock_semaphore *sem,
                 struct hilock_result *res)
{
    struct tu_result *r = fresh_result();
    return finish(fn(sem, tu_record_sem, r), r, res, 0, "semaphore query");
}

int tu_permit_query(tu_permit_query_fn *fn, struct hilock_permit *p,
                    struct hilock_result *res)
{
    struct tu_result *r = fresh_result();
    return finish(fn(p, tu_record_permit, r), r, res, 0, "permit query");
}

Suite *tu_suite(const char *name, SFun setup, SFun teardown, int timeout_s,
                const TTest *const *tests, size_t n)
{
    Suite *s = suite_create(name);
    TCase *tc = tcase_create(name);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, timeout_s);
    for (size_t i = 0; i < n; i++)
        tcase_add_test(tc, tests[i]);
    suite_add_tcase(s, tc);
    return s;
}

int tu_main(Suite *suite)
{
    /* hiredis writes with write(): a connection the server closes while we
     * send would raise SIGPIPE. Applications ignore it; so do the tests. */
    signal(SIGPIPE, SIG_IGN);
    if (rs_init() != 0)
        return EXIT_FAILURE;
    SRunner *sr = srunner_create(suite);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

long long tu_owner_fields(const char *key)
{
    const char *argv[2] = {"HKEYS", key};
    redisReply *r = rs_command_argv(tu_srv, 2, argv, NULL);
    long long n = -1;
    if (r && r->type == REDIS_REPLY_ARRAY) {
        n = 0;
        for (size_t i = 0; i < r->elements; i++) {
            const redisReply *e = r->element[i];
            n += !(e->len >= 4 && memcmp(e->str + e->len - 4, ":rid", 4) == 0);
        }
    }
    if (r)
        freeReplyObject(r);
    return n;
}

int tu_acquire_eventually(struct hilock_lock *lock, uint64_t lease_ms)
{
    long long deadline = tu_now_ms() + tu_ms(5000);
    int st;
    do {
        st = tu_acquire(lock, 0, lease_ms, NULL);
        if (st != HILOCK_ECONN && st != HILOCK_ETIMEDOUT)
            return st;
        tu_run_for(20);
    } while (tu_now_ms() < deadline);
    return st;
}
