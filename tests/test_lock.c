/* SPDX-License-Identifier: BSD-3-Clause */
/* test_lock.c -- the lock's core promises against a real Redis: mutual
 * exclusion, reentrancy, ownership checks on release, lease expiry, waiting
 * with and without success, the queries, and the key layout. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static struct hilock_client *a, *b;

static void setup(void)
{
    tu_setup_pair(&a, &b);
}

static void teardown(void)
{
    tu_teardown_pair(&a, &b);
}

START_TEST(try_acquire_of_a_held_lock_is_ebusy_with_the_holders_ttl)
{
    struct hilock_lock *la = tu_lock(a, "res", 1);
    struct hilock_lock *lb = tu_lock(b, "res", 1);
    struct hilock_lock *la2 = tu_lock(a, "res", 2); /* same client, other tag */
    struct hilock_result v;
    tu_assert_status(tu_acquire(la, 0, 10000, NULL), 0);
    tu_assert_status(tu_acquire(lb, 0, 10000, &v), HILOCK_EBUSY);
    ck_assert_msg(v.ttl_ms > 0 && v.ttl_ms <= 10000, "EBUSY value %lld",
                  (long long)v.ttl_ms);
    tu_assert_status(tu_acquire(la2, 0, 10000, &v), HILOCK_EBUSY);
    ck_assert_msg(v.ttl_ms > 0 && v.ttl_ms <= 10000, "EBUSY value %lld",
                  (long long)v.ttl_ms);
    ck_assert_uint_eq(hilock_lock_hold_count(lb), 0);
    ck_assert_int_eq(tu_holds("res", b, 1), RS_NIL);

    tu_assert_status(tu_release(la, &v), 0);
    ck_assert_int_eq(v.holds, 0);
    tu_assert_status(tu_acquire(lb, 0, 10000, NULL), 0);
    ck_assert_int_eq(tu_holds("res", b, 1), 1);
    ck_assert_int_eq(tu_holds("res", a, 1), RS_NIL);
    tu_assert_status(tu_acquire(la, 0, 10000, NULL), HILOCK_EBUSY);
}
END_TEST

START_TEST(reentrant_acquire_counts_holds_and_release_counts_down)
{
    struct hilock_lock *l = tu_lock(a, "re", 7);
    struct hilock_result v;
    for (int i = 1; i <= 3; i++) {
        tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
        ck_assert_uint_eq(hilock_lock_hold_count(l), (unsigned)i);
        ck_assert_int_eq(tu_holds("re", a, 7), i);
    }
    tu_assert_status(tu_release(l, &v), 0);
    ck_assert_int_eq(v.holds, 2);
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "re", (char *)NULL), 1);
    ck_assert_int_eq(tu_holds("re", a, 7), 2);
    tu_assert_status(tu_release(l, &v), 0);
    ck_assert_int_eq(v.holds, 1);
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "re", (char *)NULL), 1);
    ck_assert_int_eq(tu_holds("re", a, 7), 1);
    tu_assert_status(tu_release(l, &v), 0);
    ck_assert_int_eq(v.holds, 0);
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "re", (char *)NULL), 0);
    ck_assert_uint_eq(hilock_lock_hold_count(l), 0);
}
END_TEST

START_TEST(two_handles_with_the_same_name_and_tag_reenter)
{
    struct hilock_lock *l1 = tu_lock(a, "same", 5);
    struct hilock_lock *l2 = tu_lock(a, "same", 5);
    tu_assert_status(tu_acquire(l1, 0, 10000, NULL), 0);
    tu_assert_status(tu_acquire(l2, 0, 10000, NULL), 0);
    ck_assert_int_eq(tu_holds("same", a, 5), 2);
}
END_TEST

START_TEST(reentry_resets_the_lease)
{
    struct hilock_lock *l = tu_lock(a, "lease", 1);
    tu_assert_status(tu_acquire(l, 0, 1000, NULL), 0);
    /* reset to 8000, not added to what was left (up to 9000) nor kept */
    tu_assert_status(tu_acquire(l, 0, 8000, NULL), 0);
    long long pttl = rs_int(tu_srv, "PTTL", "lease", (char *)NULL);
    ck_assert_msg(pttl > 5000 && pttl <= 8000, "PTTL %lld", pttl);
}
END_TEST

START_TEST(release_by_another_owner_is_enotowner_and_keeps_the_lock)
{
    struct hilock_lock *owner = tu_lock(a, "mine", 1);
    struct hilock_lock *other_tag = tu_lock(a, "mine", 2);
    struct hilock_lock *other_client = tu_lock(b, "mine", 1);
    tu_assert_status(tu_acquire(owner, 0, 10000, NULL), 0);
    tu_assert_status(tu_release(other_tag, NULL), HILOCK_ENOTOWNER);
    tu_assert_status(tu_release(other_client, NULL), HILOCK_ENOTOWNER);
    ck_assert_int_eq(tu_holds("mine", a, 1), 1);
    ck_assert_int_gt(rs_int(tu_srv, "PTTL", "mine", (char *)NULL), 0);
    ck_assert_int_eq(tu_owner_fields("mine"), 1);
    ck_assert_uint_eq(hilock_lock_hold_count(owner), 1);
    struct hilock_result v;
    tu_assert_status(tu_release(owner, &v), 0);
    ck_assert_int_eq(v.holds, 0);
}
END_TEST

START_TEST(release_of_a_lock_never_taken_is_enotowner)
{
    struct hilock_lock *l = tu_lock(a, "never", 1);
    tu_assert_status(tu_release(l, NULL), HILOCK_ENOTOWNER);
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "never", (char *)NULL), 0);
}
END_TEST

START_TEST(expired_lease_frees_the_lock_for_another_client)
{
    struct hilock_lock *la = tu_lock(a, "exp", 1);
    struct hilock_lock *lb = tu_lock(b, "exp", 1);
    tu_assert_status(tu_acquire(la, 0, 200, NULL), 0);
    long long t0 = tu_now_ms();
    tu_assert_status(tu_acquire(lb, 2000, 10000, NULL), 0);
    long long took = tu_now_ms() - t0;
    ck_assert_msg(took < tu_ms(2000), "acquire after expiry took %lld ms",
                  took);
    ck_assert_int_eq(tu_holds("exp", b, 1), 1);
    ck_assert_int_eq(tu_holds("exp", a, 1), RS_NIL);
    /* the old holder's release is refused: its lease ran out */
    tu_assert_status(tu_release(la, NULL), HILOCK_ENOTOWNER);
    ck_assert_int_eq(tu_holds("exp", b, 1), 1);
}
END_TEST

START_TEST(waiting_acquire_succeeds_soon_after_the_holder_releases)
{
    struct hilock_lock *la = tu_lock(a, "wait", 1);
    struct hilock_lock *lb = tu_lock(b, "wait", 1);
    struct tu_result rb = {0};
    tu_assert_status(tu_acquire(la, 0, 30000, NULL), 0);
    tu_assert_status(hilock_lock_acquire(lb, 5000, 10000, tu_record, &rb), 0);
    tu_client_ready(b); /* answered after the busy reply: parked */
    ck_assert_int_eq(rb.calls, 0);
    long long released = tu_now_ms();
    tu_assert_status(tu_release(la, NULL), 0);
    ck_assert(tu_run_until_count(&rb.calls, 1, tu_ms(6000)));
    /* woken by the release, not by the 5 s deadline (which would fail it)
     * or the 30 s lease */
    tu_assert_status(rb.status, 0);
    ck_assert_msg(rb.at_ms - released < tu_ms(2000),
                  "woke %lld ms after release", rb.at_ms - released);
    ck_assert_int_eq(tu_holds("wait", b, 1), 1);
    tu_run_quiet();
    ck_assert_int_eq(rb.calls, 1);
}
END_TEST

START_TEST(waiting_acquire_times_out_while_the_holder_keeps_it)
{
    struct hilock_lock *la = tu_lock(a, "keep", 1);
    struct hilock_lock *lb = tu_lock(b, "keep", 1);
    struct tu_result rb = {0};
    tu_assert_status(tu_acquire(la, 0, 30000, NULL), 0);
    long long t0 = tu_now_ms();
    tu_assert_status(hilock_lock_acquire(lb, 300, 10000, tu_record, &rb), 0);
    ck_assert(tu_run_until_count(&rb.calls, 1, tu_ms(5000)));
    long long took = rb.at_ms - t0;
    tu_assert_status(rb.status, HILOCK_ETIMEDOUT);
    ck_assert_msg(took >= 250 && took < 300 + tu_ms(1500),
                  "timed out after %lld ms", took);
    ck_assert_int_eq(tu_holds("keep", a, 1), 1);
    ck_assert_uint_eq(hilock_lock_hold_count(lb), 0);
    tu_run_quiet();
    ck_assert_int_eq(rb.calls, 1);
}
END_TEST

START_TEST(waiter_subscribes_to_the_redisson_channel_and_leaves_it)
{
    struct hilock_lock *la = tu_lock(a, "chan", 1);
    struct hilock_lock *lb = tu_lock(b, "chan", 1);
    struct tu_result rb = {0};
    tu_assert_status(tu_acquire(la, 0, 30000, NULL), 0);
    tu_assert_status(hilock_lock_acquire(lb, 5000, 10000, tu_record, &rb), 0);
    ck_assert_msg(tu_numsub_becomes(TU_CHANNEL("chan"), 1, tu_ms(2000)),
                  "waiter never subscribed");
    ck_assert_int_eq(rb.calls, 0);
    tu_assert_status(tu_release(la, NULL), 0);
    ck_assert(tu_run_until_count(&rb.calls, 1, tu_ms(3000)));
    tu_assert_status(rb.status, 0);
    ck_assert_msg(tu_numsub_becomes(TU_CHANNEL("chan"), 0, tu_ms(2000)),
                  "the last waiter did not unsubscribe");
}
END_TEST

START_TEST(local_waiters_are_served_in_order_and_all_get_the_lock)
{
    struct hilock_lock *la = tu_lock(a, "fifo", 1);
    struct hilock_lock *w1 = tu_lock(b, "fifo", 2);
    struct hilock_lock *w2 = tu_lock(b, "fifo", 3);
    struct tu_result r1 = {0}, r2 = {0};
    tu_assert_status(tu_acquire(la, 0, 30000, NULL), 0);
    tu_assert_status(hilock_lock_acquire(w1, 8000, 10000, tu_record, &r1), 0);
    tu_client_ready(b); /* w1 is parked */
    tu_assert_status(hilock_lock_acquire(w2, 8000, 10000, tu_record, &r2), 0);
    tu_client_ready(b); /* and w2 behind it */
    tu_assert_status(tu_release(la, NULL), 0);
    ck_assert(tu_run_until_count(&r1.calls, 1, tu_ms(3000)));
    tu_assert_status(r1.status, 0);
    ck_assert_int_eq(r2.calls, 0); /* the second waits for the first */
    tu_assert_status(tu_release(w1, NULL), 0);
    ck_assert(tu_run_until_count(&r2.calls, 1, tu_ms(3000)));
    tu_assert_status(r2.status, 0);
    ck_assert_int_eq(tu_holds("fifo", b, 3), 1);
    ck_assert_int_eq(tu_owner_fields("fifo"), 1);
}
END_TEST

START_TEST(queries_report_held_count_and_ttl)
{
    struct hilock_lock *l = tu_lock(a, "q", 1);
    struct hilock_lock *other = tu_lock(b, "q", 1);
    struct hilock_result v;
    tu_assert_status(tu_query(hilock_lock_query_held, l, &v), 0);
    ck_assert_int_eq(v.held, 0);
    tu_assert_status(tu_query(hilock_lock_query_count, l, &v), 0);
    ck_assert_int_eq(v.holds, 0);
    tu_assert_status(tu_query(hilock_lock_query_ttl, l, &v), 0);
    ck_assert_int_eq(v.ttl_ms, HILOCK_TTL_NOKEY);

    tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
    tu_assert_status(tu_query(hilock_lock_query_held, l, &v), 0);
    ck_assert_int_eq(v.held, 1);
    tu_assert_status(tu_query(hilock_lock_query_count, l, &v), 0);
    ck_assert_int_eq(v.holds, 2);
    tu_assert_status(tu_query(hilock_lock_query_ttl, l, &v), 0);
    ck_assert_msg(v.ttl_ms > 0 && v.ttl_ms <= 10000, "ttl %lld",
                  (long long)v.ttl_ms);

    /* another owner: not held by it, but the ttl is the holder's */
    tu_assert_status(tu_query(hilock_lock_query_held, other, &v), 0);
    ck_assert_int_eq(v.held, 0);
    tu_assert_status(tu_query(hilock_lock_query_count, other, &v), 0);
    ck_assert_int_eq(v.holds, 0);
    tu_assert_status(tu_query(hilock_lock_query_ttl, other, &v), 0);
    ck_assert_msg(v.ttl_ms > 0 && v.ttl_ms <= 10000, "ttl %lld",
                  (long long)v.ttl_ms);

    tu_assert_status(tu_release(l, NULL), 0);
    tu_assert_status(tu_release(l, NULL), 0);
    tu_assert_status(tu_query(hilock_lock_query_held, l, &v), 0);
    ck_assert_int_eq(v.held, 0);
    tu_assert_status(tu_query(hilock_lock_query_ttl, l, &v), 0);
    ck_assert_int_eq(v.ttl_ms, HILOCK_TTL_NOKEY);
}
END_TEST

/* A lock key without an expiry (left by hand, or by another client) is
 * reported with the one "no expiry" value both where a busy acquire tells
 * the holder's ttl and where the ttl query does; a missing key with the
 * "no key" value. */
START_TEST(a_key_without_expiry_is_ttl_none_everywhere)
{
    struct hilock_lock *l = tu_lock(a, "forever", 1);
    struct hilock_result v;
    ck_assert_int_eq(rs_int(tu_srv, "HSET", "forever", "someone:1", "1",
                            (char *)NULL),
                     1);
    v.ttl_ms = 0;
    tu_assert_status(tu_acquire(l, 0, 10000, &v), HILOCK_EBUSY);
    ck_assert_int_eq(v.ttl_ms, HILOCK_TTL_NONE);
    v.ttl_ms = 0;
    tu_assert_status(tu_query(hilock_lock_query_ttl, l, &v), 0);
    ck_assert_int_eq(v.ttl_ms, HILOCK_TTL_NONE);
    ck_assert_int_eq(rs_int(tu_srv, "DEL", "forever", (char *)NULL), 1);
    tu_assert_status(tu_query(hilock_lock_query_ttl, l, &v), 0);
    ck_assert_int_eq(v.ttl_ms, HILOCK_TTL_NOKEY);
    ck_assert_int_ne(HILOCK_TTL_NONE, HILOCK_TTL_NOKEY);
}
END_TEST

START_TEST(lock_key_is_a_hash_keyed_by_client_id_and_tag)
{
    struct hilock_lock *l = tu_lock(a, "layout", 12345678901234ULL);
    tu_assert_status(tu_acquire(l, 0, 5000, NULL), 0);
    char *type = rs_str(tu_srv, "TYPE", "layout", (char *)NULL);
    ck_assert_str_eq(type, "hash");
    free(type);
    ck_assert_int_eq(tu_holds("layout", a, 12345678901234ULL), 1);
    long long pttl = rs_int(tu_srv, "PTTL", "layout", (char *)NULL);
    ck_assert_msg(pttl > 0 && pttl <= 5000, "PTTL %lld", pttl);
}
END_TEST

START_TEST(key_prefix_puts_the_lock_under_the_prefix)
{
    struct hilock_options o;
    tu_options(&o);
    o.key_prefix = "app:";
    struct hilock_client *p = tu_client(&o);
    struct hilock_lock *l = tu_lock(p, "res", 1);
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "app:res", (char *)NULL), 1);
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "res", (char *)NULL), 0);
    ck_assert_int_eq(tu_holds("app:res", p, 1), 1);
    /* a client without the prefix does not see it */
    struct hilock_lock *plain = tu_lock(a, "res", 1);
    tu_assert_status(tu_acquire(plain, 0, 10000, NULL), 0);
    tu_assert_status(tu_release(plain, NULL), 0);
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "app:res", (char *)NULL), 0);
    hilock_client_free(p);
}
END_TEST

/* Names of many lengths, up to HILOCK_NAME_MAX, through the whole waiting
 * path (acquire, busy, subscribe, wake, acquire). The lengths around 204
 * make the SUBSCRIBE command fill a 256-byte buffer exactly, which catches
 * a command handed to hiredis without a terminating NUL (under ASan or
 * valgrind: hiredis scans SUBSCRIBE commands with strchr). */
START_TEST(waiting_works_for_names_of_many_lengths)
{
    static const size_t lens[] = {1, 100, 200, 202, 203, 204, 205, 206,
                                  230, 255, 256, 300, HILOCK_NAME_MAX};
    static char name[HILOCK_NAME_MAX];
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        struct hilock_lock *la = NULL, *lb = NULL;
        struct tu_result rb = {0};
        memset(name, 'a' + (int)(i % 26), sizeof name);
        tu_assert_status(hilock_lock_new(a, name, lens[i], 1, &la), 0);
        tu_assert_status(hilock_lock_new(b, name, lens[i], 1, &lb), 0);
        tu_assert_status(tu_acquire(la, 0, 30000, NULL), 0);
        tu_assert_status(hilock_lock_acquire(lb, 5000, 10000, tu_record, &rb),
                         0);
        tu_client_ready(b); /* answered after the busy reply: parked */
        tu_assert_status(tu_release(la, NULL), 0);
        ck_assert_msg(tu_run_until_count(&rb.calls, 1, tu_ms(3000)),
                      "waiter on a %zu-byte name not woken", lens[i]);
        tu_assert_status(rb.status, 0);
        tu_assert_status(tu_release(lb, NULL), 0);
        hilock_lock_free(la);
        hilock_lock_free(lb);
    }
}
END_TEST

static Suite *lock_suite(void)
{
    Suite *s = suite_create("lock");
    TCase *tc = tcase_create("exclusion");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, try_acquire_of_a_held_lock_is_ebusy_with_the_holders_ttl);
    tcase_add_test(tc, reentrant_acquire_counts_holds_and_release_counts_down);
    tcase_add_test(tc, two_handles_with_the_same_name_and_tag_reenter);
    tcase_add_test(tc, reentry_resets_the_lease);
    tcase_add_test(tc, release_by_another_owner_is_enotowner_and_keeps_the_lock);
    tcase_add_test(tc, release_of_a_lock_never_taken_is_enotowner);
    tcase_add_test(tc, lock_key_is_a_hash_keyed_by_client_id_and_tag);
    tcase_add_test(tc, key_prefix_puts_the_lock_under_the_prefix);
    tcase_add_test(tc, queries_report_held_count_and_ttl);
    tcase_add_test(tc, a_key_without_expiry_is_ttl_none_everywhere);
    suite_add_tcase(s, tc);

    TCase *w = tcase_create("waiting");
    tcase_add_checked_fixture(w, setup, teardown);
    tcase_set_timeout(w, 30);
    tcase_add_test(w, expired_lease_frees_the_lock_for_another_client);
    tcase_add_test(w, waiting_acquire_succeeds_soon_after_the_holder_releases);
    tcase_add_test(w, waiting_acquire_times_out_while_the_holder_keeps_it);
    tcase_add_test(w, waiter_subscribes_to_the_redisson_channel_and_leaves_it);
    tcase_add_test(w, local_waiters_are_served_in_order_and_all_get_the_lock);
    tcase_add_test(w, waiting_works_for_names_of_many_lengths);
    suite_add_tcase(s, w);
    return s;
}

int main(void)
{
    return tu_main(lock_suite());
}
