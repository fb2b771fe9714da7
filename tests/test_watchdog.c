/* SPDX-License-Identifier: BSD-3-Clause */
/* test_watchdog.c -- locks acquired without a lease are kept alive by the
 * watchdog, and the holder learns in time when a lock is lost: the key was
 * deleted, or Redis stopped answering for longer than the lease. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The watchdog lease, 300 ms scaled by CK_TIMEOUT_MULTIPLIER: a client
 * slowed down by valgrind must still renew in time, and every bound below
 * is built on it. */
static int lease_ms;
#define PERIOD_MS (lease_ms / 3) /* between renewals */

static struct hilock_client *client;
static struct hilock_lock *lock;
static struct tu_result lost;

static void start(int request_timeout_ms)
{
    struct hilock_options o;
    lease_ms = tu_ms(300);
    tu_options(&o);
    o.watchdog_lease_ms = (uint32_t)lease_ms;
    if (request_timeout_ms)
        o.request_timeout_ms = (uint32_t)tu_ms(request_timeout_ms);
    client = tu_client(&o);
    lock = tu_lock(client, "wd", 1);
    memset(&lost, 0, sizeof lost);
    tu_assert_status(hilock_lock_on_lost(lock, tu_record, &lost), 0);
}

static void setup(void)
{
    tu_setup();
    start(0);
}

static void teardown(void)
{
    hilock_client_free(client);
    client = NULL;
    tu_teardown();
}

static long long field_count(void)
{
    return tu_holds("wd", client, 1);
}

/* No renewal (no script call) for n renewal periods: for a lock that must
 * no longer be renewed. */
static void assert_no_renewal_for(int periods)
{
    tu_assert_no_script_call(periods * PERIOD_MS);
}

START_TEST(watchdog_keeps_the_lock_past_three_leases)
{
    tu_assert_status(tu_acquire(lock, 0, 0, NULL), 0);
    long long pttl = rs_int(tu_srv, "PTTL", "wd", (char *)NULL);
    ck_assert_msg(pttl > 0 && pttl <= lease_ms, "PTTL %lld", pttl);
    tu_run_for(3 * lease_ms); /* the time under test */
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "wd", (char *)NULL), 1);
    pttl = rs_int(tu_srv, "PTTL", "wd", (char *)NULL);
    ck_assert_msg(pttl > 0 && pttl <= lease_ms, "PTTL %lld", pttl);
    ck_assert_int_eq(field_count(), 1);
    ck_assert_int_eq(lost.calls, 0);
    ck_assert_uint_eq(hilock_lock_hold_count(lock), 1);
    /* and it is really still ours against another client */
    struct hilock_client *other = tu_client(NULL);
    struct hilock_lock *ol = tu_lock(other, "wd", 1);
    tu_assert_status(tu_acquire(ol, 0, 1000, NULL), HILOCK_EBUSY);
    hilock_client_free(other);
}
END_TEST

enum { N = 40 };

static bool all_called(void *arg)
{
    const struct tu_result *got = arg;
    for (int i = 0; i < N; i++) {
        if (got[i].calls == 0)
            return false;
    }
    return true;
}

/* 40 locks taken together fall due together: their renewals go out as a
 * few batched script calls, not one call per lock per period. */
START_TEST(renewals_due_together_go_out_in_one_call)
{
    struct hilock_lock *locks[N];
    struct tu_result got[N];
    memset(got, 0, sizeof got);
    for (int i = 0; i < N; i++) {
        char name[16];
        snprintf(name, sizeof name, "batch%d", i);
        locks[i] = tu_lock(client, name, 1);
        tu_assert_status(hilock_lock_acquire(locks[i], 0, 0, tu_record,
                                             &got[i]), 0);
    }
    ck_assert(tu_run_until(all_called, got, tu_ms(3000)));
    long long before = rs_cmdstat_calls(tu_srv, "evalsha");
    /* four renewal periods: unbatched that would be about 4 * 40 = 160
     * calls; batched, 4 on a quick machine, a few more when slow ones
     * spread the 40 acquisitions (and so their due times) apart. The keys
     * outlive the window only if renewed. */
    tu_run_for(4 * PERIOD_MS);
    long long calls = rs_cmdstat_calls(tu_srv, "evalsha") - before;
    ck_assert_msg(calls >= 2 && calls <= 4 * N / 5, "%lld renew calls",
                  calls);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(got[i].status, 0);
        ck_assert_int_eq(rs_int(tu_srv, "EXISTS", hilock_lock_name(locks[i], NULL),
                                (char *)NULL), 1);
    }
    ck_assert_int_eq(lost.calls, 0);
}
END_TEST

START_TEST(explicit_lease_is_not_renewed)
{
    tu_assert_status(tu_acquire(lock, 0, 200, NULL), 0);
    ck_assert(tu_run_until_redis(0, tu_ms(2000), "EXISTS", "wd",
                                 (char *)NULL));
}
END_TEST

START_TEST(on_lost_fires_when_the_key_is_deleted_behind_our_back)
{
    tu_assert_status(tu_acquire(lock, 0, 0, NULL), 0);
    tu_await_renewal(lock, lease_ms);
    long long t0 = tu_now_ms();
    ck_assert_int_eq(rs_int(tu_srv, "DEL", "wd", (char *)NULL), 1);
    ck_assert_msg(tu_run_until_count(&lost.calls, 1, tu_ms(3000)),
                  "on_lost never fired after DEL");
    tu_assert_status(lost.status, HILOCK_ELOST);
    ck_assert(tu_result_empty(&lost.res));
    ck_assert_ptr_eq(lost.lock, lock);
    ck_assert_msg(lost.at_ms - t0 < tu_ms(2000), "on_lost %lld ms after DEL",
                  lost.at_ms - t0);
    assert_no_renewal_for(2);
    ck_assert_int_eq(lost.calls, 1);
    /* a lost lock is not resurrected by later renewals */
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "wd", (char *)NULL), 0);
}
END_TEST

START_TEST(on_lost_fires_when_another_owner_took_the_key)
{
    tu_assert_status(tu_acquire(lock, 0, 0, NULL), 0);
    /* replace the hash with someone else's hold behind our back */
    ck_assert_int_eq(rs_int(tu_srv, "DEL", "wd", (char *)NULL), 1);
    ck_assert_int_eq(rs_int(tu_srv, "HSET", "wd", "intruder:1", "1",
                            (char *)NULL), 1);
    ck_assert_int_eq(rs_int(tu_srv, "PEXPIRE", "wd", "30000", (char *)NULL),
                     1);
    ck_assert(tu_run_until_count(&lost.calls, 1, tu_ms(3000)));
    tu_assert_status(lost.status, HILOCK_ELOST);
    ck_assert_int_eq(rs_int(tu_srv, "HGET", "wd", "intruder:1", (char *)NULL),
                     1);
    ck_assert_int_eq(rs_int(tu_srv, "HLEN", "wd", (char *)NULL), 1);
}
END_TEST

START_TEST(renew_on_demand_sets_the_lease)
{
    int64_t v = -1;
    struct tu_result r = {0};
    tu_assert_status(tu_acquire(lock, 0, 10000, NULL), 0);
    tu_assert_status(hilock_lock_renew(lock, 0, tu_record, &r), 0);
    ck_assert(tu_run_until_count(&r.calls, 1, tu_ms(3000)));
    tu_assert_status(r.status, 0);
    ck_assert_int_eq(r.res.lease_ms, 10000);
    long long pttl = rs_int(tu_srv, "PTTL", "wd", (char *)NULL);
    ck_assert_msg(pttl > 9000 && pttl <= 10000, "PTTL %lld", pttl);

    memset(&r, 0, sizeof r);
    tu_assert_status(hilock_lock_renew(lock, 20000, tu_record, &r), 0);
    ck_assert(tu_run_until_count(&r.calls, 1, tu_ms(3000)));
    tu_assert_status(r.status, 0);
    v = r.res.lease_ms;
    ck_assert_int_eq(v, 20000);
    pttl = rs_int(tu_srv, "PTTL", "wd", (char *)NULL);
    ck_assert_msg(pttl > 19000 && pttl <= 20000, "PTTL %lld", pttl);
    tu_run_quiet();
    ck_assert_int_eq(r.calls, 1);
}
END_TEST

START_TEST(renew_of_a_watchdog_lock_uses_the_watchdog_lease)
{
    struct tu_result r = {0};
    tu_assert_status(tu_acquire(lock, 0, 0, NULL), 0);
    tu_assert_status(hilock_lock_renew(lock, 0, tu_record, &r), 0);
    ck_assert(tu_run_until_count(&r.calls, 1, tu_ms(3000)));
    tu_assert_status(r.status, 0);
    ck_assert_int_eq(r.res.lease_ms, lease_ms);
}
END_TEST

START_TEST(renew_of_a_deleted_lock_is_elost_and_fires_on_lost)
{
    struct tu_result r = {0};
    tu_assert_status(tu_acquire(lock, 0, 10000, NULL), 0);
    ck_assert_int_eq(rs_int(tu_srv, "DEL", "wd", (char *)NULL), 1);
    tu_assert_status(hilock_lock_renew(lock, 0, tu_record, &r), 0);
    ck_assert(tu_run_until_count(&r.calls, 1, tu_ms(3000)));
    tu_assert_status(r.status, HILOCK_ELOST);
    ck_assert(tu_run_until_count(&lost.calls, 1, tu_ms(3000)));
    tu_assert_status(lost.status, HILOCK_ELOST);
    tu_run_quiet();
    ck_assert_int_eq(r.calls, 1);
    ck_assert_int_eq(lost.calls, 1);
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "wd", (char *)NULL), 0);
}
END_TEST

START_TEST(no_on_lost_and_no_renewal_after_release)
{
    struct hilock_result v;
    tu_assert_status(tu_acquire(lock, 0, 0, NULL), 0);
    tu_await_renewal(lock, lease_ms); /* renewing now */
    tu_assert_status(tu_release(lock, &v), 0);
    ck_assert_int_eq(v.holds, 0);
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "wd", (char *)NULL), 0);
    assert_no_renewal_for(3);
    ck_assert_int_eq(lost.calls, 0);
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "wd", (char *)NULL), 0);
}
END_TEST

START_TEST(no_on_lost_after_the_lock_is_freed)
{
    tu_assert_status(tu_acquire(lock, 0, 0, NULL), 0);
    tu_await_renewal(lock, lease_ms); /* renewing now */
    hilock_lock_free(lock);
    lock = NULL;
    ck_assert(tu_run_until_redis(0, tu_ms(2000), "EXISTS", "wd",
                                 (char *)NULL));
    assert_no_renewal_for(3);
    ck_assert_int_eq(lost.calls, 0);
}
END_TEST

/* The fixture of this test uses request_timeout_ms 200 (scaled). */
static void setup_short_timeout(void)
{
    tu_setup();
    start(200);
}

START_TEST(on_lost_fires_while_redis_is_paused_before_the_lease_runs_out)
{
    tu_assert_status(tu_acquire(lock, 0, 0, NULL), 0);
    tu_await_renewal(lock, lease_ms); /* a confirmed one */
    ck_assert_int_eq(lost.calls, 0);
    long long paused = tu_now_ms();
    ck_assert_int_eq(rs_pause(tu_srv), 0);
    bool fired = tu_run_until_count(&lost.calls, 1, tu_ms(3000));
    long long after = tu_now_ms() - paused;
    ck_assert_int_eq(rs_resume(tu_srv), 0);
    ck_assert_msg(fired, "on_lost did not fire during %lld ms of pause",
                  after);
    tu_assert_status(lost.status, HILOCK_ELOST);
    /* the last confirmed renewal was before the pause, so the lease could
     * run out at most lease_ms after it; allow timer slack */
    ck_assert_msg(lost.at_ms - paused < 2 * lease_ms + 100,
                  "on_lost came %lld ms into the pause (lease %d ms)",
                  lost.at_ms - paused, lease_ms);
    tu_run_quiet();
    ck_assert_int_eq(lost.calls, 1);
}
END_TEST

static Suite *watchdog_suite(void)
{
    Suite *s = suite_create("watchdog");
    TCase *tc = tcase_create("renewal");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, watchdog_keeps_the_lock_past_three_leases);
    tcase_add_test(tc, renewals_due_together_go_out_in_one_call);
    tcase_add_test(tc, explicit_lease_is_not_renewed);
    tcase_add_test(tc, on_lost_fires_when_the_key_is_deleted_behind_our_back);
    tcase_add_test(tc, on_lost_fires_when_another_owner_took_the_key);
    tcase_add_test(tc, renew_on_demand_sets_the_lease);
    tcase_add_test(tc, renew_of_a_watchdog_lock_uses_the_watchdog_lease);
    tcase_add_test(tc, renew_of_a_deleted_lock_is_elost_and_fires_on_lost);
    tcase_add_test(tc, no_on_lost_and_no_renewal_after_release);
    tcase_add_test(tc, no_on_lost_after_the_lock_is_freed);
    suite_add_tcase(s, tc);

    TCase *p = tcase_create("unreachable");
    tcase_add_checked_fixture(p, setup_short_timeout, teardown);
    tcase_set_timeout(p, 30);
    tcase_add_test(p, on_lost_fires_while_redis_is_paused_before_the_lease_runs_out);
    suite_add_tcase(s, p);
    return s;
}

int main(void)
{
    return tu_main(watchdog_suite());
}
