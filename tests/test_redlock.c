/* test_redlock.c -- a client over several independent masters (Redlock):
 * quorum acquire, release everywhere, bad topologies. Each test starts its
 * own masters on free loopback ports. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#define MASTERS_MAX 5

static struct rs_server *masters[MASTERS_MAX];
static int nmasters;
static struct hilock_client *client;

static void setup(void)
{
    tu_setup_no_redis();
    nmasters = 0;
    client = NULL;
}

static void teardown(void)
{
    hilock_client_free(client);
    client = NULL;
    for (int i = 0; i < nmasters; i++)
        rs_stop(masters[i]);
    nmasters = 0;
    tu_teardown();
}

/* Start n masters and a client over them. */
static struct hilock_client *redlock_client(int n)
{
    struct hilock_endpoint eps[MASTERS_MAX];
    struct hilock_options o;
    for (int i = 0; i < n; i++) {
        masters[i] = rs_start(NULL);
        ck_assert_ptr_nonnull(masters[i]);
        nmasters++;
        eps[i] = (struct hilock_endpoint){"127.0.0.1", rs_port(masters[i]),
                                          NULL};
    }
    tu_options(&o);
    o.masters = eps;
    o.nmasters = (size_t)n;
    o.request_timeout_ms = 1000;
    return tu_client(&o);
}

/* How many running masters have key. */
static int masters_with(const char *key)
{
    int n = 0;
    for (int i = 0; i < nmasters; i++)
        n += masters[i] &&
             rs_int(masters[i], "EXISTS", key, (char *)NULL) == 1;
    return n;
}

static bool no_master_has(void *key)
{
    return masters_with(key) == 0;
}

/* Run until no master has key (releases still on their way land). */
static bool none_left(const char *key)
{
    return tu_run_until(no_master_has, (void *)key, 2000);
}

START_TEST(acquire_and_release_reach_every_master)
{
    client = redlock_client(3);
    struct hilock_lock *l = tu_lock(client, "rl", 1);
    tu_assert_status(tu_acquire(l, 10000, 0, NULL), 0);
    tu_run_until(NULL, NULL, 100); /* stragglers */
    ck_assert_int_eq(masters_with("rl"), 3);
    int64_t left = -1;
    tu_assert_status(tu_release(l, &left), 0);
    ck_assert_int_eq(left, 0);
    ck_assert(none_left("rl"));
}
END_TEST

START_TEST(second_owner_is_busy_on_a_majority)
{
    client = redlock_client(3);
    struct hilock_lock *a = tu_lock(client, "rl2", 1);
    struct hilock_lock *b = tu_lock(client, "rl2", 2);
    int64_t ttl = 0;
    tu_assert_status(tu_acquire(a, 10000, 0, NULL), 0);
    tu_assert_status(tu_acquire(b, 10000, 0, &ttl), HILOCK_EBUSY);
    ck_assert_int_gt(ttl, 0);
}
END_TEST

START_TEST(quorum_acquire_with_one_master_down)
{
    client = redlock_client(3);
    struct hilock_lock *l = tu_lock(client, "rl3", 1);
    rs_stop(masters[2]);
    masters[2] = NULL;
    tu_assert_status(tu_acquire(l, 10000, 0, NULL), 0);
    tu_assert_status(tu_release(l, NULL), 0);
}
END_TEST

START_TEST(two_of_three_down_is_enoquorum)
{
    client = redlock_client(3);
    struct hilock_lock *l = tu_lock(client, "rl4", 1);
    rs_stop(masters[1]);
    rs_stop(masters[2]);
    masters[1] = masters[2] = NULL;
    tu_assert_status(tu_acquire(l, 10000, 0, NULL), HILOCK_ENOQUORUM);
    ck_assert(none_left("rl4"));
}
END_TEST

START_TEST(bad_topologies_are_einval)
{
    struct hilock_endpoint eps[4] = {{"127.0.0.1", 7001, NULL},
                                     {"127.0.0.1", 7002, NULL},
                                     {"127.0.0.1", 7003, NULL},
                                     {"127.0.0.1", 7004, NULL}};
    struct hilock_options o;
    struct hilock_client *c = NULL;
    hilock_options_init(&o);
    o.masters = eps;
    o.nmasters = 4; /* even */
    tu_assert_status(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
    o.nmasters = 1; /* fewer than 3 */
    tu_assert_status(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
    eps[2].port = 7001; /* listed twice */
    o.nmasters = 3;
    tu_assert_status(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
    o.masters = NULL; /* a count without masters */
    tu_assert_status(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
    ck_assert_ptr_null(c);
}
END_TEST

static Suite *redlock_suite(void)
{
    Suite *s = suite_create("redlock");
    TCase *tc = tcase_create("redlock");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, acquire_and_release_reach_every_master);
    tcase_add_test(tc, second_owner_is_busy_on_a_majority);
    tcase_add_test(tc, quorum_acquire_with_one_master_down);
    tcase_add_test(tc, two_of_three_down_is_enoquorum);
    tcase_add_test(tc, bad_topologies_are_einval);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_main(redlock_suite());
}
