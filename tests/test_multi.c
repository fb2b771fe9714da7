/* SPDX-License-Identifier: BSD-3-Clause */
/* test_multi.c -- MultiLock: several names all or none, no deadlock between
 * MultiLocks over the same names in any order, waiting on pub/sub, release
 * of all, loss of one name, and over three Redlock masters. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

static struct hilock_client *client, *other;
static struct rs_server *extra[2];

static void setup(void)
{
    tu_setup();
    client = tu_client(NULL);
    other = tu_client(NULL);
    extra[0] = extra[1] = NULL;
}

static void teardown(void)
{
    hilock_client_free(client);
    hilock_client_free(other);
    client = other = NULL;
    rs_stop(extra[0]);
    rs_stop(extra[1]);
    tu_teardown();
}

/* A MultiLock over the NULL-terminated names. */
static struct hilock_multi *multi(struct hilock_client *c, uint64_t tag,
                                  const char *const *names)
{
    size_t lens[8], k = 0;
    struct hilock_multi *m = NULL;
    while (names[k]) {
        lens[k] = strlen(names[k]);
        k++;
    }
    tu_assert_status(hilock_multi_new(c, names, lens, k, tag, &m), 0);
    return m;
}

struct mres {
    int calls, status;
    long long at_ms;
};

static void mrecord(struct hilock_multi *m, int status,
                    const struct hilock_result *res, void *arg)
{
    struct mres *r = arg;
    (void)m;
    (void)res;
    r->calls++;
    r->status = status;
    r->at_ms = tu_now_ms();
}

static int macquire(struct hilock_multi *m, uint64_t wait, uint64_t lease)
{
    struct mres r = {0};
    tu_assert_status(hilock_multi_acquire(m, wait, lease, mrecord, &r), 0);
    ck_assert(tu_run_until_count(&r.calls, 1, (int)wait + 5000));
    return r.status;
}

static int mrelease(struct hilock_multi *m)
{
    struct mres r = {0};
    tu_assert_status(hilock_multi_release(m, mrecord, &r), 0);
    ck_assert(tu_run_until_count(&r.calls, 1, 5000));
    return r.status;
}

static long long exists(const char *key)
{
    return rs_int(tu_srv, "EXISTS", key, (char *)NULL);
}

START_TEST(multilock_takes_every_name_or_none)
{
    static const char *const names[] = {"ma", "mb", "mc", NULL};
    struct hilock_lock *b = tu_lock(other, "mb", 1);
    struct hilock_multi *m = multi(client, 1, names);
    tu_assert_status(tu_acquire(b, 0, 30000, NULL), 0);
    tu_assert_status(macquire(m, 0, 30000), HILOCK_EBUSY);
    ck_assert_int_eq(exists("ma"), 0);
    ck_assert_int_eq(exists("mc"), 0);
    ck_assert_int_eq(hilock_multi_held(m), 0);
    tu_assert_status(tu_release(b, NULL), 0);
    tu_assert_status(macquire(m, 0, 30000), 0);
    ck_assert_int_eq(hilock_multi_held(m), 1);
    ck_assert_int_eq(tu_owner_fields("ma") + tu_owner_fields("mb") +
                         tu_owner_fields("mc"),
                     3);
    tu_assert_status(mrelease(m), 0);
    ck_assert_int_eq(exists("ma") + exists("mb") + exists("mc"), 0);
    hilock_multi_free(m);
}
END_TEST

/* Two MultiLocks take {x, y} and {y, x} in turn, many times, from two
 * clients: each gets its turn, and they never hold at once. */
struct duel {
    struct hilock_multi *m[2];
    int inside[2]; /* between its acquisition and its release call */
    int done[2], overlap, rounds;
};

static struct duel duel;

static void duel_released(struct hilock_multi *m, int status,
                          const struct hilock_result *res, void *arg);

static void duel_leave(evutil_socket_t fd, short what, void *arg)
{
    int i = (int)(intptr_t)arg;
    (void)fd;
    (void)what;
    duel.inside[i] = 0;
    tu_assert_status(hilock_multi_release(duel.m[i], duel_released, arg), 0);
}

static void duel_acquired(struct hilock_multi *m, int status,
                          const struct hilock_result *res, void *arg)
{
    int i = (int)(intptr_t)arg;
    (void)res;
    (void)m;
    tu_assert_status(status, 0);
    duel.overlap += duel.inside[1 - i];
    duel.inside[i] = 1;
    /* the section lasts a millisecond of loop time: the other MultiLock's
     * turn would come inside it if mutual exclusion failed */
    struct timeval tv = {0, 1000};
    ck_assert_int_eq(event_base_once(tu_base, -1, EV_TIMEOUT, duel_leave, arg,
                                     &tv),
                     0);
}

static void duel_released(struct hilock_multi *m, int status,
                          const struct hilock_result *res, void *arg)
{
    int i = (int)(intptr_t)arg;
    (void)res;
    tu_assert_status(status, 0);
    if (++duel.done[i] < duel.rounds)
        tu_assert_status(
            hilock_multi_acquire(m, 10000, 30000, duel_acquired, arg), 0);
}

START_TEST(multilocks_in_opposite_orders_never_deadlock)
{
    static const char *const xy[] = {"dx", "dy", NULL};
    static const char *const yx[] = {"dy", "dx", NULL};
    memset(&duel, 0, sizeof duel);
    duel.rounds = 40;
    duel.m[0] = multi(client, 1, xy);
    duel.m[1] = multi(other, 1, yx);
    for (intptr_t i = 0; i < 2; i++)
        tu_assert_status(hilock_multi_acquire(duel.m[i], 10000, 30000,
                                              duel_acquired, (void *)i),
                         0);
    ck_assert(tu_run_until_count(&duel.done[0], duel.rounds, 20000));
    ck_assert(tu_run_until_count(&duel.done[1], duel.rounds, 20000));
    ck_assert_int_eq(duel.overlap, 0);
    ck_assert_int_eq(exists("dx") + exists("dy"), 0);
}
END_TEST

START_TEST(waiting_multilock_is_woken_by_the_release)
{
    static const char *const names[] = {"wa", "wb", NULL};
    struct hilock_lock *b = tu_lock(other, "wb", 1);
    struct hilock_multi *m = multi(client, 1, names);
    struct mres r = {0};
    tu_assert_status(tu_acquire(b, 0, 30000, NULL), 0);
    tu_assert_status(hilock_multi_acquire(m, 10000, 0, mrecord, &r), 0);
    tu_run_for(200);
    ck_assert_int_eq(r.calls, 0);
    long long t0 = tu_now_ms();
    tu_assert_status(tu_release(b, NULL), 0);
    ck_assert(tu_run_until_count(&r.calls, 1, 3000));
    tu_assert_status(r.status, 0);
    ck_assert_int_lt(r.at_ms - t0, 1000); /* not the 30 s lease */
}
END_TEST

START_TEST(multilock_wait_times_out_with_nothing_taken)
{
    static const char *const names[] = {"ta", "tb", NULL};
    struct hilock_lock *b = tu_lock(other, "tb", 1);
    struct hilock_multi *m = multi(client, 1, names);
    tu_assert_status(tu_acquire(b, 0, 30000, NULL), 0);
    tu_assert_status(macquire(m, 300, 0), HILOCK_ETIMEDOUT);
    ck_assert_int_eq(exists("ta"), 0);
}
END_TEST

/* A MultiLock over names, held by a client whose watchdog lease is
 * 300 ms (it replaces client), its on_lost recorded in *lost; then name
 * gone deleted from under it, and its loss reported. */
static struct hilock_multi *multi_losing(const char *const *names,
                                         const char *gone,
                                         struct mres *lost)
{
    struct hilock_options o;
    tu_options(&o);
    o.watchdog_lease_ms = 300;
    hilock_client_free(client);
    client = tu_client(&o);
    struct hilock_multi *m = multi(client, 1, names);
    tu_assert_status(hilock_multi_on_lost(m, mrecord, lost), 0);
    tu_assert_status(macquire(m, 0, 0), 0);
    ck_assert_int_eq(rs_int(tu_srv, "DEL", gone, (char *)NULL), 1);
    ck_assert(tu_run_until_count(&lost->calls, 1, 2000));
    return m;
}

START_TEST(losing_one_name_loses_the_multilock_once)
{
    static const char *const names[] = {"la", "lb", NULL};
    struct mres lost = {0};
    struct hilock_multi *m = multi_losing(names, "lb", &lost);
    tu_assert_status(lost.status, HILOCK_ELOST);
    tu_run_for(300);
    ck_assert_int_eq(lost.calls, 1);
    ck_assert_int_eq(hilock_multi_held(m), 0);
}
END_TEST

static bool key_gone(void *key)
{
    return exists(key) == 0;
}

/* Losing one name releases the others at once and stops their renewal:
 * another owner can take them, and the MultiLock taken again and
 * released leaves nothing behind. */
START_TEST(losing_one_name_releases_the_others)
{
    static const char *const names[] = {"ka", "kb", NULL};
    struct mres lost = {0};
    struct hilock_multi *m = multi_losing(names, "kb", &lost);
    ck_assert_msg(tu_run_until(key_gone, "ka", 1000),
                  "the other name is still held (PTTL %lld)",
                  rs_int(tu_srv, "PTTL", "ka", (char *)NULL));
    struct hilock_lock *b = tu_lock(other, "ka", 1);
    tu_assert_status(tu_acquire(b, 500, 30000, NULL), 0);
    tu_assert_status(tu_release(b, NULL), 0);
    tu_assert_status(macquire(m, 0, 0), 0);
    tu_assert_status(mrelease(m), 0);
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "ka", "kb", (char *)NULL), 0);
}
END_TEST

START_TEST(multilock_over_three_masters_takes_every_name_on_each)
{
    static const char *const names[] = {"ra", "rb", NULL};
    struct hilock_endpoint eps[3];
    struct rs_server *srv[3] = {tu_srv, NULL, NULL};
    struct hilock_options o;
    for (int i = 0; i < 2; i++) {
        extra[i] = srv[i + 1] = rs_start(NULL);
        ck_assert_ptr_nonnull(extra[i]);
    }
    for (int i = 0; i < 3; i++)
        eps[i] = (struct hilock_endpoint){"127.0.0.1", rs_port(srv[i]), NULL};
    tu_options(&o);
    o.topology = HILOCK_TOPOLOGY_REDLOCK;
    o.redlock.masters = eps;
    o.redlock.count = 3;
    struct hilock_client *rl = tu_client(&o);
    struct hilock_multi *m = multi(rl, 1, names);
    tu_assert_status(macquire(m, 0, 30000), 0);
    tu_run_for(100); /* the third master's answer */
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(rs_int(srv[i], "EXISTS", "ra", "rb", (char *)NULL),
                         2);
    tu_assert_status(mrelease(m), 0);
    tu_run_for(100);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(rs_int(srv[i], "EXISTS", "ra", "rb", (char *)NULL),
                         0);
    hilock_client_free(rl);
}
END_TEST

START_TEST(bad_multilocks_are_einval)
{
    const char *names[] = {"a", "b", "a"};
    size_t lens[] = {1, 1, 1};
    struct hilock_multi *m = NULL;
    tu_assert_status(hilock_multi_new(client, names, lens, 0, 1, &m),
                     HILOCK_EINVAL);
    tu_assert_status(hilock_multi_new(client, names, lens, 3, 1, &m),
                     HILOCK_EINVAL); /* a name twice */
    tu_assert_status(hilock_multi_new(client, names, lens,
                                      HILOCK_MULTI_MAX + 1, 1, &m),
                     HILOCK_EINVAL);
    tu_assert_status(hilock_multi_new(client, NULL, lens, 2, 1, &m),
                     HILOCK_EINVAL);
    ck_assert_ptr_null(m);
    tu_assert_status(hilock_multi_new(client, names, lens, 2, 1, &m), 0);
    tu_assert_status(hilock_multi_release(m, NULL, NULL), HILOCK_EINVAL);
    tu_assert_status(hilock_multi_cancel(m), HILOCK_EINVAL);
    hilock_multi_free(m);
}
END_TEST

static Suite *multi_suite(void)
{
    Suite *s = suite_create("multi");
    TCase *tc = tcase_create("multi");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, multilock_takes_every_name_or_none);
    tcase_add_test(tc, multilocks_in_opposite_orders_never_deadlock);
    tcase_add_test(tc, waiting_multilock_is_woken_by_the_release);
    tcase_add_test(tc, multilock_wait_times_out_with_nothing_taken);
    tcase_add_test(tc, losing_one_name_loses_the_multilock_once);
    tcase_add_test(tc, losing_one_name_releases_the_others);
    tcase_add_test(tc, multilock_over_three_masters_takes_every_name_on_each);
    tcase_add_test(tc, bad_multilocks_are_einval);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_main(multi_suite());
}
