/* SPDX-License-Identifier: BSD-3-Clause */
/* test_badinput.c -- every public entry point rejects bad arguments with
 * HILOCK_EINVAL (or HILOCK_EINPROGRESS), never calls the callback of a call
 * that returned an error, and sends nothing to Redis for it.
 *
 * "Sends nothing" is checked with INFO commandstats: the calls of every
 * command except connection housekeeping (and our own INFO) are summed
 * before and after, the "after" behind one query of the same client, which
 * goes out after anything the rejected calls could have queued. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Commands a client may send on its own for its connection; not counted. */
static bool housekeeping(const char *name)
{
    static const char *const skip[] = {"info", "ping", "client", "hello",
                                       "script", "auth", "select", "command",
                                       "config", "quit"};
    size_t len = strcspn(name, "|:");
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++) {
        if (strlen(skip[i]) == len && strncmp(name, skip[i], len) == 0)
            return true;
    }
    return false;
}

/* Calls of every non-housekeeping command the server has processed. */
static long long traffic(void)
{
    char *info = rs_str(tu_srv, "INFO", "commandstats", (char *)NULL);
    long long sum = 0;
    ck_assert_ptr_nonnull(info);
    for (char *p = strstr(info, "cmdstat_"); p; p = strstr(p, "cmdstat_")) {
        p += strlen("cmdstat_");
        const char *calls = strstr(p, ":calls=");
        ck_assert_ptr_nonnull(calls);
        if (!housekeeping(p))
            sum += strtoll(calls + strlen(":calls="), NULL, 10);
    }
    free(info);
    return sum;
}

static struct hilock_client *client;
static struct hilock_lock *lock;
static struct tu_result res; /* callbacks of calls that must not fire */
static long long before;
static long long query_calls; /* what one query costs (a script call and
                                 the commands it runs) */

/* A client and a lock, connected and settled, with the traffic so far. */
static void setup(void)
{
    tu_setup();
    client = tu_client(NULL);
    lock = tu_lock(client, "bad", 1);
    memset(&res, 0, sizeof res);
    tu_client_ready(client);
    before = traffic();
    tu_assert_status(tu_query(hilock_lock_query_held, lock, NULL), 0);
    query_calls = traffic() - before;
    ck_assert_int_gt(query_calls, 0);
    before = traffic();
}

static void teardown(void)
{
    hilock_client_free(client);
    client = NULL;
    tu_teardown();
}

/* No callback fired and nothing was sent since before was taken: once a
 * query sent now is answered, the server has counted whatever went out
 * ahead of it, and the query itself costs what one did in setup. */
static void assert_nothing_sent(void)
{
    tu_run_quiet();
    ck_assert_int_eq(res.calls, 0);
    tu_assert_status(tu_query(hilock_lock_query_held, lock, NULL), 0);
    ck_assert_int_eq(traffic(), before + query_calls);
    before = traffic();
}

/* The same, and the server holds no key. */
static void assert_quiet(void)
{
    assert_nothing_sent();
    ck_assert_int_eq(rs_int(tu_srv, "DBSIZE", (char *)NULL), 0);
}

START_TEST(client_new_rejects_null_arguments_and_bad_ports)
{
    struct hilock_options o;
    struct hilock_client *c = NULL;
    tu_options(&o);
    tu_assert_status(hilock_client_new(NULL, &o, &c), HILOCK_EINVAL);
    tu_assert_status(hilock_client_new(tu_base, NULL, &c), HILOCK_EINVAL);
    tu_assert_status(hilock_client_new(tu_base, &o, NULL), HILOCK_EINVAL);
    o.node.port = -1;
    tu_assert_status(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
    o.node.port = 65536;
    tu_assert_status(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
    o.node.port = 100000;
    tu_assert_status(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
    /* and the same options with a good port work */
    o.node.port = rs_port(tu_srv);
    tu_assert_status(hilock_client_new(tu_base, &o, &c), 0);
    ck_assert_ptr_nonnull(c);
    hilock_client_free(c);
}
END_TEST

/* What hilock_client_new told the log callback. */
struct told {
    int lines;
    enum hilock_log_level level;
    char line[512];
};

static void tell(enum hilock_log_level level, const char *msg, void *arg)
{
    struct told *t = arg;
    t->lines++;
    t->level = level;
    snprintf(t->line, sizeof t->line, "%s", msg);
}

/* One bad option: what to change, and the words the log line must have. */
typedef void opt_fn(struct hilock_options *o);
struct bad_option {
    opt_fn *set;
    const char *says;
};

static struct hilock_endpoint eps[3];

static void user_alone(struct hilock_options *o) { o->username = "u"; }
static void lease_50(struct hilock_options *o) { o->watchdog_lease_ms = 50; }
static void db_negative(struct hilock_options *o) { o->db = -1; }
static void no_connect(struct hilock_options *o) { o->connect_timeout_ms = 0; }
static void no_request(struct hilock_options *o) { o->request_timeout_ms = 0; }
static void no_backoff(struct hilock_options *o) { o->reconnect_min_ms = 0; }
static void backoff_inverted(struct hilock_options *o)
{
    o->reconnect_min_ms = 500;
    o->reconnect_max_ms = 100;
}
static void replicas_no_wait(struct hilock_options *o)
{
    o->wait_replicas = 1;
    o->wait_timeout_ms = 0;
}
static void empty_host(struct hilock_options *o) { o->node.host = ""; }
static void bad_port(struct hilock_options *o) { o->node.port = 70000; }
static void empty_socket(struct hilock_options *o) { o->node.unix_path = ""; }
/* masters: three good ones on ports 1..3, then spoilt */
static void three_masters(struct hilock_options *o)
{
    for (int i = 0; i < 3; i++)
        eps[i] = (struct hilock_endpoint){"127.0.0.1", 7001 + i, NULL};
    o->topology = HILOCK_TOPOLOGY_REDLOCK;
    o->redlock.masters = eps;
    o->redlock.count = 3;
}
static void two_masters(struct hilock_options *o)
{
    three_masters(o);
    o->redlock.count = 2;
}
static void same_master(struct hilock_options *o)
{
    three_masters(o);
    eps[2].host = "localhost";
    eps[2].port = eps[0].port;
}
static void master_without_port(struct hilock_options *o)
{
    three_masters(o);
    eps[1].port = 0;
}
static void fair_redlock(struct hilock_options *o)
{
    three_masters(o);
    o->fair = 1;
}
static void two_lists(struct hilock_options *o)
{
    three_masters(o);
    o->topology = HILOCK_TOPOLOGY_CLUSTER;
    o->cluster.seeds = eps;
    o->cluster.count = 3;
}
static void cluster_without_seeds(struct hilock_options *o)
{
    o->topology = HILOCK_TOPOLOGY_CLUSTER;
}
static void masters_on_one_node(struct hilock_options *o)
{
    three_masters(o);
    o->topology = HILOCK_TOPOLOGY_NODE;
}
static void unknown_topology(struct hilock_options *o)
{
    o->topology = (enum hilock_topology)7;
}
static void cluster_untagged(struct hilock_options *o)
{
    three_masters(o);
    o->redlock.masters = NULL;
    o->redlock.count = 0;
    o->topology = HILOCK_TOPOLOGY_CLUSTER;
    o->cluster.seeds = eps;
    o->cluster.count = 3;
    o->key_prefix = "app:";
}
static void cluster_db(struct hilock_options *o)
{
    cluster_untagged(o);
    o->key_prefix = NULL;
    o->db = 2;
}
static void cluster_socket(struct hilock_options *o)
{
    cluster_untagged(o);
    o->key_prefix = NULL;
    eps[1].unix_path = "/tmp/redis.sock";
}
static void sentinel_unnamed(struct hilock_options *o)
{
    three_masters(o);
    o->redlock.masters = NULL;
    o->redlock.count = 0;
    o->topology = HILOCK_TOPOLOGY_SENTINEL;
    o->sentinel.nodes = eps;
    o->sentinel.count = 3;
}

/* Each mistake is refused with one line that names the option. */
START_TEST(client_new_says_which_option_is_wrong_and_why)
{
    static const struct bad_option bad[] = {
        {user_alone, "username"},
        {lease_50, "watchdog_lease_ms 50"},
        {db_negative, "db -1"},
        {no_connect, "connect_timeout_ms"},
        {no_request, "request_timeout_ms"},
        {no_backoff, "reconnect_min_ms"},
        {backoff_inverted, "reconnect_max_ms 100"},
        {replicas_no_wait, "wait_timeout_ms"},
        {empty_host, "host: empty"},
        {bad_port, "port 70000"},
        {empty_socket, "unix_path: empty"},
        {two_masters, "redlock.count 2"},
        {same_master, "redlock.masters[0] and redlock.masters[2]: one server"},
        {master_without_port, "redlock.masters[1].port 0"},
        {fair_redlock, "fair"},
        {two_lists, "redlock: set, but topology is HILOCK_TOPOLOGY_CLUSTER"},
        {cluster_without_seeds, "cluster.seeds: NULL"},
        {masters_on_one_node, "redlock: set, but topology is "
                              "HILOCK_TOPOLOGY_NODE"},
        {unknown_topology, "topology 7"},
        {cluster_untagged, "key_prefix \"app:\""},
        {cluster_db, "db 2"},
        {cluster_socket, "cluster.seeds[1].unix_path"},
        {sentinel_unnamed, "sentinel.master_name"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct hilock_options o;
        struct hilock_client *c = NULL;
        struct told t = {0, HILOCK_LOG_DEBUG, ""};
        tu_options(&o);
        o.log_cb = tell;
        o.log_arg = &t;
        bad[i].set(&o);
        tu_assert_status(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
        ck_assert_ptr_null(c);
        ck_assert_msg(t.lines == 1 && t.level == HILOCK_LOG_ERROR,
                      "case %zu: %d lines", i, t.lines);
        ck_assert_msg(strstr(t.line, bad[i].says), "case %zu said: %s", i,
                      t.line);
    }
    struct hilock_options o;
    struct hilock_client *c = NULL;
    struct told t = {0, HILOCK_LOG_DEBUG, ""};
    tu_options(&o);
    o.log_cb = tell;
    o.log_arg = &t;
    tu_assert_status(hilock_client_new(NULL, &o, &c), HILOCK_EINVAL);
    ck_assert_msg(t.lines == 1 && strstr(t.line, "base: NULL"), "said: %s",
                  t.line);
}
END_TEST

START_TEST(client_id_rejects_null_and_short_buffers)
{
    char buf[64];
    tu_assert_status(hilock_client_id(NULL, buf, sizeof buf), HILOCK_EINVAL);
    tu_assert_status(hilock_client_id(client, NULL, 37), HILOCK_EINVAL);
    tu_assert_status(hilock_client_id(client, buf, 36), HILOCK_EINVAL);
    tu_assert_status(hilock_client_id(client, buf, 0), HILOCK_EINVAL);
    memset(buf, 'x', sizeof buf);
    tu_assert_status(hilock_client_id(client, buf, 37), 0);
    ck_assert_int_eq((int)strlen(buf), 36);
    for (int i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23)
            ck_assert_int_eq(buf[i], '-');
        else
            ck_assert_msg(strchr("0123456789abcdefABCDEF", buf[i]) != NULL,
                          "not a UUID: %s", buf);
    }
}
END_TEST

START_TEST(client_ids_differ_between_clients)
{
    char a[37], b[37];
    struct hilock_client *other = tu_client(NULL);
    tu_assert_status(hilock_client_id(client, a, sizeof a), 0);
    tu_assert_status(hilock_client_id(other, b, sizeof b), 0);
    ck_assert_str_ne(a, b);
    hilock_client_free(other);
}
END_TEST

START_TEST(lock_new_rejects_null_empty_and_overlong_names)
{
    static char name[HILOCK_NAME_MAX + 2];
    struct hilock_lock *l = NULL;
    memset(name, 'n', sizeof name);
    tu_assert_status(hilock_lock_new(NULL, "a", 1, 0, &l), HILOCK_EINVAL);
    tu_assert_status(hilock_lock_new(client, NULL, 1, 0, &l), HILOCK_EINVAL);
    tu_assert_status(hilock_lock_new(client, "", 0, 0, &l), HILOCK_EINVAL);
    tu_assert_status(hilock_lock_new(client, "a", 0, 0, &l), HILOCK_EINVAL);
    tu_assert_status(hilock_lock_new(client, name, HILOCK_NAME_MAX + 1, 0, &l),
                     HILOCK_EINVAL);
    tu_assert_status(hilock_lock_new(client, "a", 1, 0, NULL), HILOCK_EINVAL);
    /* a side that is neither of the enum's, and the other kinds' NULLs */
    tu_assert_status(hilock_rwlock_new(client, "a", 1, 0,
                                       (enum hilock_rw_side)3, &l),
                     HILOCK_EINVAL);
    ck_assert_ptr_null(l);
    struct hilock_semaphore *s = NULL;
    struct hilock_permit *p = NULL;
    tu_assert_status(hilock_semaphore_new(client, "a", 1, NULL),
                     HILOCK_EINVAL);
    tu_assert_status(hilock_semaphore_new(client, "", 0, &s), HILOCK_EINVAL);
    tu_assert_status(hilock_permit_new(NULL, "a", 1, &p), HILOCK_EINVAL);
    ck_assert_ptr_null(s);
    ck_assert_ptr_null(p);
    assert_quiet();
}
END_TEST

START_TEST(lock_new_accepts_the_longest_name_and_any_bytes)
{
    static char name[HILOCK_NAME_MAX];
    struct hilock_lock *l = NULL;
    size_t len = 0;
    memset(name, 'n', sizeof name);
    tu_assert_status(hilock_lock_new(client, name, sizeof name, 0, &l), 0);
    ck_assert(memcmp(hilock_lock_name(l, &len), name, sizeof name) == 0);
    ck_assert_uint_eq(len, sizeof name);
    hilock_lock_free(l);
    tu_assert_status(hilock_lock_new(client, "a\0b\xff", 4, 7, &l), 0);
    ck_assert(memcmp(hilock_lock_name(l, &len), "a\0b\xff", 4) == 0);
    ck_assert_uint_eq(len, 4);
    ck_assert_ptr_nonnull(hilock_lock_name(l, NULL));
    ck_assert_uint_eq(hilock_lock_hold_count(l), 0);
    ck_assert_int_eq(hilock_lock_token(l), 0);
    hilock_lock_free(l);
    assert_quiet(); /* creating and freeing idle handles sends nothing */
}
END_TEST

START_TEST(acquire_rejects_bad_arguments_and_sends_nothing)
{
    tu_assert_status(hilock_lock_acquire(NULL, 0, 1000, tu_record, &res),
                     HILOCK_EINVAL);
    tu_assert_status(hilock_lock_acquire(lock, 0, 1000, NULL, &res),
                     HILOCK_EINVAL);
    tu_assert_status(
        hilock_lock_acquire(lock, 0, HILOCK_MS_MAX + 1, tu_record, &res),
        HILOCK_EINVAL);
    tu_assert_status(
        hilock_lock_acquire(lock, 0, UINT64_MAX, tu_record, &res),
        HILOCK_EINVAL);
    tu_assert_status(
        hilock_lock_acquire(lock, HILOCK_MS_MAX + 1, 1000, tu_record, &res),
        HILOCK_EINVAL);
    tu_assert_status(
        hilock_lock_acquire(lock, UINT64_MAX, 1000, tu_record, &res),
        HILOCK_EINVAL);
    assert_quiet();
    ck_assert_uint_eq(hilock_lock_hold_count(lock), 0);
}
END_TEST

START_TEST(acquire_accepts_the_maximum_lease_and_wait)
{
    struct hilock_result token;
    tu_assert_status(tu_acquire(lock, HILOCK_MS_MAX, HILOCK_MS_MAX, &token),
                     0);
    ck_assert_int_eq(token.token, 0);
    long long pttl = rs_int(tu_srv, "PTTL", "bad", (char *)NULL);
    ck_assert_msg(pttl > (long long)HILOCK_MS_MAX - 60000,
                  "PTTL %lld after a lease of HILOCK_MS_MAX", pttl);
    ck_assert_uint_eq(hilock_lock_hold_count(lock), 1);
}
END_TEST

START_TEST(release_rejects_null_lock_and_null_callback)
{
    tu_assert_status(hilock_lock_release(NULL, tu_record, &res),
                     HILOCK_EINVAL);
    tu_assert_status(hilock_lock_release(lock, NULL, &res), HILOCK_EINVAL);
    assert_quiet();
}
END_TEST

START_TEST(renew_rejects_null_unheld_overlong_and_null_callback)
{
    tu_assert_status(hilock_lock_renew(NULL, 1000, tu_record, &res),
                     HILOCK_EINVAL);
    tu_assert_status(hilock_lock_renew(lock, 1000, tu_record, &res),
                     HILOCK_EINVAL); /* not held */
    assert_quiet();

    tu_assert_status(tu_acquire(lock, 0, 10000, NULL), 0);
    before = traffic();
    tu_assert_status(
        hilock_lock_renew(lock, HILOCK_MS_MAX + 1, tu_record, &res),
        HILOCK_EINVAL);
    tu_assert_status(hilock_lock_renew(lock, 1000, NULL, &res),
                     HILOCK_EINVAL);
    assert_nothing_sent();
}
END_TEST

START_TEST(cancel_rejects_null_and_a_lock_with_nothing_pending)
{
    tu_assert_status(hilock_lock_cancel(NULL), HILOCK_EINVAL);
    tu_assert_status(hilock_lock_cancel(lock), HILOCK_EINVAL);
    assert_quiet();
    tu_assert_status(tu_acquire(lock, 0, 10000, NULL), 0);
    tu_assert_status(hilock_lock_cancel(lock), HILOCK_EINVAL); /* held */
    ck_assert_uint_eq(hilock_lock_hold_count(lock), 1);
}
END_TEST

START_TEST(on_lost_rejects_null_lock_and_accepts_clearing)
{
    tu_assert_status(hilock_lock_on_lost(NULL, tu_record, &res),
                     HILOCK_EINVAL);
    tu_assert_status(hilock_lock_on_lost(lock, tu_record, &res), 0);
    tu_assert_status(hilock_lock_on_lost(lock, NULL, NULL), 0);
    assert_quiet();
}
END_TEST

START_TEST(queries_reject_null_lock_and_null_callback)
{
    tu_query_fn *fns[] = {hilock_lock_query_held, hilock_lock_query_count,
                          hilock_lock_query_ttl};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        tu_assert_status(fns[i](NULL, tu_record, &res), HILOCK_EINVAL);
        tu_assert_status(fns[i](lock, NULL, &res), HILOCK_EINVAL);
    }
    assert_quiet();
}
END_TEST

START_TEST(local_getters_and_frees_tolerate_null)
{
    size_t len = 99;
    ck_assert_uint_eq(hilock_lock_hold_count(NULL), 0);
    ck_assert_int_eq(hilock_lock_token(NULL), 0);
    ck_assert_ptr_null(hilock_lock_name(NULL, &len));
    hilock_lock_free(NULL);
    hilock_client_free(NULL);
    assert_quiet();
}
END_TEST

START_TEST(acquire_or_release_while_acquire_pending_is_einprogress)
{
    struct tu_result first = {0};
    tu_assert_status(hilock_lock_acquire(lock, 0, 10000, tu_record, &first),
                     0);
    tu_assert_status(hilock_lock_acquire(lock, 0, 10000, tu_record, &res),
                     HILOCK_EINPROGRESS);
    tu_assert_status(hilock_lock_release(lock, tu_record, &res),
                     HILOCK_EINPROGRESS);
    ck_assert(tu_run_until_count(&first.calls, 1, tu_ms(3000)));
    tu_assert_status(first.status, 0);
    tu_run_quiet();
    ck_assert_int_eq(first.calls, 1);
    ck_assert_int_eq(res.calls, 0);
    ck_assert_uint_eq(hilock_lock_hold_count(lock), 1);
}
END_TEST

START_TEST(acquire_or_release_while_release_pending_is_einprogress)
{
    struct tu_result rel = {0};
    tu_assert_status(tu_acquire(lock, 0, 10000, NULL), 0);
    tu_assert_status(hilock_lock_release(lock, tu_record, &rel), 0);
    tu_assert_status(hilock_lock_release(lock, tu_record, &res),
                     HILOCK_EINPROGRESS);
    tu_assert_status(hilock_lock_acquire(lock, 0, 10000, tu_record, &res),
                     HILOCK_EINPROGRESS);
    ck_assert(tu_run_until_count(&rel.calls, 1, tu_ms(3000)));
    tu_assert_status(rel.status, 0);
    ck_assert_int_eq(rel.res.holds, 0);
    tu_run_quiet();
    ck_assert_int_eq(rel.calls, 1);
    ck_assert_int_eq(res.calls, 0);
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "bad", (char *)NULL), 0);
}
END_TEST

static Suite *badinput_suite(void)
{
    Suite *s = suite_create("badinput");
    TCase *tc = tcase_create("einval");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, client_new_rejects_null_arguments_and_bad_ports);
    tcase_add_test(tc, client_new_says_which_option_is_wrong_and_why);
    tcase_add_test(tc, client_id_rejects_null_and_short_buffers);
    tcase_add_test(tc, client_ids_differ_between_clients);
    tcase_add_test(tc, lock_new_rejects_null_empty_and_overlong_names);
    tcase_add_test(tc, lock_new_accepts_the_longest_name_and_any_bytes);
    tcase_add_test(tc, acquire_rejects_bad_arguments_and_sends_nothing);
    tcase_add_test(tc, acquire_accepts_the_maximum_lease_and_wait);
    tcase_add_test(tc, release_rejects_null_lock_and_null_callback);
    tcase_add_test(tc, renew_rejects_null_unheld_overlong_and_null_callback);
    tcase_add_test(tc, cancel_rejects_null_and_a_lock_with_nothing_pending);
    tcase_add_test(tc, on_lost_rejects_null_lock_and_accepts_clearing);
    tcase_add_test(tc, queries_reject_null_lock_and_null_callback);
    tcase_add_test(tc, local_getters_and_frees_tolerate_null);
    suite_add_tcase(s, tc);

    TCase *busy = tcase_create("einprogress");
    tcase_add_checked_fixture(busy, setup, teardown);
    tcase_set_timeout(busy, 30);
    tcase_add_test(busy, acquire_or_release_while_acquire_pending_is_einprogress);
    tcase_add_test(busy, acquire_or_release_while_release_pending_is_einprogress);
    suite_add_tcase(s, busy);
    return s;
}

int main(void)
{
    return tu_main(badinput_suite());
}
