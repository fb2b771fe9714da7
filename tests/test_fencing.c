/* SPDX-License-Identifier: BSD-3-Clause */
/* test_fencing.c -- with fencing on, every acquisition of a lock gets a
 * token larger than any before it, whoever acquires and however the
 * previous hold ended; re-entry keeps the token; without fencing it is 0. */
#include "testutil.h"

static struct hilock_client *a, *b;

static void setup(void)
{
    struct hilock_options o;
    tu_setup();
    tu_options(&o);
    o.fencing = 1;
    a = tu_client(&o);
    b = tu_client(&o);
}

static void teardown(void)
{
    tu_teardown_pair(&a, &b);
}

START_TEST(tokens_strictly_increase_across_holders_and_clients)
{
    struct hilock_lock *la = tu_lock(a, "fence", 1);
    struct hilock_lock *lb = tu_lock(b, "fence", 1);
    struct hilock_lock *la2 = tu_lock(a, "fence", 2);
    struct hilock_result t1, t2, t3, t4;
    tu_assert_status(tu_acquire(la, 0, 10000, &t1), 0);
    ck_assert_int_gt(t1.token, 0);
    ck_assert_int_eq(hilock_lock_token(la), t1.token);
    tu_assert_status(tu_release(la, NULL), 0);
    ck_assert_int_eq(hilock_lock_token(la), 0);

    tu_assert_status(tu_acquire(lb, 0, 10000, &t2), 0);
    ck_assert_int_gt(t2.token, t1.token);
    ck_assert_int_eq(hilock_lock_token(lb), t2.token);
    tu_assert_status(tu_release(lb, NULL), 0);

    tu_assert_status(tu_acquire(la, 0, 10000, &t3), 0);
    ck_assert_int_gt(t3.token, t2.token);
    tu_assert_status(tu_release(la, NULL), 0);

    tu_assert_status(tu_acquire(la2, 0, 10000, &t4), 0); /* other tag */
    ck_assert_int_gt(t4.token, t3.token);
}
END_TEST

START_TEST(reentry_keeps_the_token_until_the_last_release)
{
    struct hilock_lock *l = tu_lock(a, "fence", 1);
    struct hilock_result t, again;
    tu_assert_status(tu_acquire(l, 0, 10000, &t), 0);
    ck_assert_int_gt(t.token, 0);
    tu_assert_status(tu_acquire(l, 0, 10000, &again), 0);
    ck_assert_int_eq(again.token, t.token);
    ck_assert_int_eq(hilock_lock_token(l), t.token);
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert_int_eq(hilock_lock_token(l), t.token); /* still held once */
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert_int_eq(hilock_lock_token(l), 0);
    tu_assert_status(tu_acquire(l, 0, 10000, &again), 0);
    ck_assert_int_gt(again.token, t.token);
}
END_TEST

START_TEST(token_increases_after_a_lease_expires)
{
    struct hilock_lock *la = tu_lock(a, "fence", 1);
    struct hilock_lock *lb = tu_lock(b, "fence", 1);
    struct hilock_result t1, t2;
    tu_assert_status(tu_acquire(la, 0, 200, &t1), 0);
    tu_assert_status(tu_acquire(lb, 3000, 10000, &t2), 0);
    ck_assert_int_gt(t2.token, t1.token);
}
END_TEST

START_TEST(token_increases_for_a_waiter_woken_by_release)
{
    struct hilock_lock *la = tu_lock(a, "fence", 1);
    struct hilock_lock *lb = tu_lock(b, "fence", 1);
    struct tu_result rb = {0};
    struct hilock_result t1;
    tu_assert_status(tu_acquire(la, 0, 30000, &t1), 0);
    tu_assert_status(hilock_lock_acquire(lb, 5000, 10000, tu_record, &rb), 0);
    tu_client_ready(b); /* answered after the busy reply: parked */
    tu_assert_status(tu_release(la, NULL), 0);
    ck_assert(tu_run_until_count(&rb.calls, 1, tu_ms(6000)));
    tu_assert_status(rb.status, 0);
    ck_assert_int_gt(rb.res.token, t1.token);
    ck_assert_int_eq(hilock_lock_token(lb), rb.res.token);
}
END_TEST

START_TEST(tokens_of_different_locks_are_independent_but_valid)
{
    struct hilock_lock *x = tu_lock(a, "fx", 1);
    struct hilock_lock *y = tu_lock(a, "fy", 1);
    struct hilock_result tx, ty, tx2;
    tu_assert_status(tu_acquire(x, 0, 10000, &tx), 0);
    tu_assert_status(tu_acquire(y, 0, 10000, &ty), 0);
    ck_assert_int_gt(tx.token, 0);
    ck_assert_int_gt(ty.token, 0);
    tu_assert_status(tu_release(x, NULL), 0);
    tu_assert_status(tu_acquire(x, 0, 10000, &tx2), 0);
    ck_assert_int_gt(tx2.token, tx.token);
}
END_TEST

START_TEST(without_fencing_the_token_is_zero)
{
    struct hilock_client *plain = tu_client(NULL); /* fencing off */
    struct hilock_lock *l = tu_lock(plain, "nofence", 1);
    struct hilock_result t;
    tu_assert_status(tu_acquire(l, 0, 10000, &t), 0);
    ck_assert_int_eq(t.token, 0);
    ck_assert_int_eq(hilock_lock_token(l), 0);
    tu_assert_status(tu_acquire(l, 0, 10000, &t), 0);
    ck_assert_int_eq(t.token, 0);
    hilock_client_free(plain);
}
END_TEST

static Suite *fencing_suite(void)
{
    Suite *s = suite_create("fencing");
    TCase *tc = tcase_create("tokens");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, tokens_strictly_increase_across_holders_and_clients);
    tcase_add_test(tc, reentry_keeps_the_token_until_the_last_release);
    tcase_add_test(tc, token_increases_after_a_lease_expires);
    tcase_add_test(tc, token_increases_for_a_waiter_woken_by_release);
    tcase_add_test(tc, tokens_of_different_locks_are_independent_but_valid);
    tcase_add_test(tc, without_fencing_the_token_is_zero);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_main(fencing_suite());
}
