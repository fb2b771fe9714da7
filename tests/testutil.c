/* testutil.c -- see testutil.h. */
#include "testutil.h"

#include <signal.h>

#include <event2/event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct event_base *tu_base;
struct rs_server *tu_srv;

/* Margin added to the deadline of a synchronous wrapper: the callback must
 * fire within the operation's own bounds; this is only a hang guard. */
#define TU_MARGIN_MS 5000

void tu_setup_no_redis(void)
{
    tu_base = event_base_new();
    ck_assert_ptr_nonnull(tu_base);
}

void tu_setup(void)
{
    tu_setup_no_redis();
    tu_srv = rs_start(NULL);
    ck_assert_msg(tu_srv != NULL, "could not start redis-server");
}

void tu_teardown(void)
{
    rs_stop(tu_srv);
    tu_srv = NULL;
    if (tu_base)
        event_base_free(tu_base);
    tu_base = NULL;
}

long long tu_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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
        tu_run_for(20);
    }
}

void tu_record(struct hilock_lock *lock, int status, int64_t value,
               void *arg)
{
    struct tu_result *r = arg;
    r->calls++;
    r->status = status;
    r->value = value;
    r->at_ms = tu_now_ms();
    r->lock = lock;
}

void tu_options(struct hilock_options *opts)
{
    hilock_options_init(opts);
    opts->port = tu_srv ? rs_port(tu_srv) : 6379;
    opts->request_timeout_ms = 1500;
    opts->connect_timeout_ms = 1500;
}

struct hilock_client *tu_client(const struct hilock_options *opts)
{
    struct hilock_options o;
    struct hilock_client *c = NULL;
    if (!opts) {
        tu_options(&o);
        opts = &o;
    }
    int rc = hilock_client_new(tu_base, opts, &c);
    tu_assert_status(rc, 0);
    ck_assert_ptr_nonnull(c);
    return c;
}

struct hilock_lock *tu_lock(struct hilock_client *client, const char *name,
                            uint64_t owner_tag)
{
    struct hilock_lock *l = NULL;
    int rc = hilock_lock_new(client, name, strlen(name), owner_tag, &l);
    tu_assert_status(rc, 0);
    ck_assert_ptr_nonnull(l);
    return l;
}

const char *tu_field(struct hilock_client *client, uint64_t owner_tag,
                     char *buf)
{
    char id[37];
    tu_assert_status(hilock_client_id(client, id, sizeof id), 0);
    snprintf(buf, 64, "%s:%llu", id, (unsigned long long)owner_tag);
    return buf;
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

/* Run until r has been called; fail the test after timeout_ms. */
static int finish(struct tu_result *r, int64_t *value, long long timeout_ms,
                  const char *what)
{
    if (timeout_ms > 60000)
        timeout_ms = 60000; /* a test never waits longer than this */
    ck_assert_msg(tu_run_until_count(&r->calls, 1, (int)timeout_ms),
                  "%s: no callback within %lld ms", what, timeout_ms);
    ck_assert_int_eq(r->calls, 1);
    if (value)
        *value = r->value;
    return r->status;
}

int tu_acquire(struct hilock_lock *lock, uint64_t lease_ms, uint64_t wait_ms,
               int64_t *value)
{
    struct tu_result *r = fresh_result();
    int rc = hilock_lock_acquire(lock, lease_ms, wait_ms, tu_record, r);
    tu_assert_status(rc, 0);
    return finish(r, value, (long long)wait_ms + TU_MARGIN_MS, "acquire");
}

int tu_release(struct hilock_lock *lock, int64_t *value)
{
    struct tu_result *r = fresh_result();
    int rc = hilock_lock_release(lock, tu_record, r);
    tu_assert_status(rc, 0);
    return finish(r, value, TU_MARGIN_MS, "release");
}

int tu_query(tu_query_fn *fn, struct hilock_lock *lock, int64_t *value)
{
    struct tu_result *r = fresh_result();
    int rc = fn(lock, tu_record, r);
    tu_assert_status(rc, 0);
    return finish(r, value, TU_MARGIN_MS, "query");
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
    long long deadline = tu_now_ms() + 5000;
    int st;
    do {
        st = tu_acquire(lock, lease_ms, 0, NULL);
        if (st != HILOCK_ECONN && st != HILOCK_ETIMEDOUT)
            return st;
        tu_run_for(50);
    } while (tu_now_ms() < deadline);
    return st;
}
