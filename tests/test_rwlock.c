/* SPDX-License-Identifier: BSD-3-Clause */
/* test_rwlock.c -- read-write locks against a real Redis: many readers at
 * once, a writer excluded both ways, re-entry, downgrade, the refused
 * upgrade, a waiting writer not starved by readers, read holds expiring one
 * by one, the watchdog and on_lost, resends applied once, and the key
 * layout a Redisson client reads. */
#include "testutil.h"

#include <stdio.h>
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

/* The hold count of writer <client-uuid>:<tag>:write in hash key. */
static long long writer_holds(const char *key, struct hilock_client *c,
                              uint64_t tag)
{
    char f[64], g[80];
    snprintf(g, sizeof(g), "%s:write", tu_field(c, tag, f));
    return rs_int(tu_srv, "HGET", key, g, (char *)NULL);
}

/* Redisson's timeout key of read hold n of c's owner tag on name. */
static const char *timeout_key(struct hilock_client *c, const char *name,
                               uint64_t tag, int n, char *buf, size_t len)
{
    char f[64];
    snprintf(buf, len, "{%s}:%s:rwlock_timeout:%d", name, tu_field(c, tag, f),
             n);
    return buf;
}

static char *mode_of(const char *key)
{
    return rs_str(tu_srv, "HGET", key, "mode", (char *)NULL);
}

START_TEST(readers_share_and_a_writer_excludes_them_both_ways)
{
    struct hilock_lock *r1 = tu_rwlock(a, "doc", 1, HILOCK_READ);
    struct hilock_lock *r2 = tu_rwlock(a, "doc", 2, HILOCK_READ);
    struct hilock_lock *r3 = tu_rwlock(b, "doc", 1, HILOCK_READ);
    struct hilock_lock *w = tu_rwlock(b, "doc", 9, HILOCK_WRITE);
    struct hilock_result v;
    tu_assert_status(tu_acquire(r1, 0, 10000, NULL), 0);
    tu_assert_status(tu_acquire(r2, 0, 10000, NULL), 0);
    tu_assert_status(tu_acquire(r3, 0, 10000, NULL), 0);
    char *m = mode_of("doc");
    ck_assert_str_eq(m, "read");
    free(m);
    ck_assert_int_eq(rs_int(tu_srv, "HLEN", "doc", (char *)NULL), 4);
    tu_assert_status(tu_acquire(w, 0, 10000, &v), HILOCK_EBUSY);
    ck_assert_msg(v.ttl_ms > 0 && v.ttl_ms <= 10000, "EBUSY value %lld",
                  (long long)v.ttl_ms);

    tu_assert_status(tu_release(r1, &v), 0);
    ck_assert_int_eq(v.holds, 0);
    tu_assert_status(tu_release(r2, NULL), 0);
    tu_assert_status(tu_acquire(w, 0, 10000, NULL), HILOCK_EBUSY);
    tu_assert_status(tu_release(r3, NULL), 0);
    ck_assert_int_eq(tu_exists("doc"), 0);

    tu_assert_status(tu_acquire(w, 0, 10000, NULL), 0);
    m = mode_of("doc");
    ck_assert_str_eq(m, "write");
    free(m);
    ck_assert_int_eq(writer_holds("doc", b, 9), 1);
    tu_assert_status(tu_acquire(r1, 0, 10000, &v), HILOCK_EBUSY);
    ck_assert_msg(v.ttl_ms > 0 && v.ttl_ms <= 10000, "EBUSY value %lld",
                  (long long)v.ttl_ms);
    struct hilock_lock *w2 = tu_rwlock(a, "doc", 1, HILOCK_WRITE);
    tu_assert_status(tu_acquire(w2, 0, 10000, NULL), HILOCK_EBUSY);
    tu_assert_status(tu_release(w, NULL), 0);
    ck_assert_int_eq(tu_exists("doc"), 0);
    ck_assert_int_eq(tu_exists("hilock_rid:{doc}"), 0);
}
END_TEST

START_TEST(reentry_counts_holds_with_a_timeout_key_per_read_hold)
{
    struct hilock_lock *r = tu_rwlock(a, "re", 4, HILOCK_READ);
    struct hilock_lock *w = tu_rwlock(b, "re", 4, HILOCK_WRITE);
    char k[160];
    for (int i = 1; i <= 3; i++) {
        tu_assert_status(tu_acquire(r, 0, 10000, NULL), 0);
        ck_assert_uint_eq(hilock_lock_hold_count(r), (unsigned)i);
        ck_assert_int_eq(tu_holds("re", a, 4), i);
        long long t = rs_int(tu_srv, "PTTL",
                             timeout_key(a, "re", 4, i, k, sizeof(k)),
                             (char *)NULL);
        ck_assert_msg(t > 0 && t <= 10000, "hold %d pttl %lld", i, t);
    }
    struct hilock_result v;
    tu_assert_status(tu_release(r, &v), 0);
    ck_assert_int_eq(v.holds, 2);
    ck_assert_int_eq(tu_exists(timeout_key(a, "re", 4, 3, k, sizeof(k))), 0);
    ck_assert_int_eq(tu_exists(timeout_key(a, "re", 4, 2, k, sizeof(k))), 1);
    tu_assert_status(tu_release(r, NULL), 0);
    tu_assert_status(tu_release(r, &v), 0);
    ck_assert_int_eq(v.holds, 0);
    ck_assert_int_eq(tu_exists("re"), 0);
    ck_assert_int_eq(tu_exists(timeout_key(a, "re", 4, 1, k, sizeof(k))), 0);
    tu_assert_status(tu_release(r, NULL), HILOCK_ENOTOWNER);

    tu_assert_status(tu_acquire(w, 0, 10000, NULL), 0);
    tu_assert_status(tu_acquire(w, 0, 10000, NULL), 0);
    ck_assert_int_eq(writer_holds("re", b, 4), 2);
    tu_assert_status(tu_release(w, &v), 0);
    ck_assert_int_eq(v.holds, 1);
    ck_assert_int_eq(tu_exists("re"), 1);
    tu_assert_status(tu_release(w, &v), 0);
    ck_assert_int_eq(v.holds, 0);
    ck_assert_int_eq(tu_exists("re"), 0);
    /* Nothing is left behind: no timeout key, no request ids. */
    ck_assert_int_eq(rs_int(tu_srv, "DBSIZE", (char *)NULL), 0);
}
END_TEST

START_TEST(a_writer_downgrades_and_an_upgrade_is_refused)
{
    struct hilock_lock *w = tu_rwlock(a, "dg", 1, HILOCK_WRITE);
    struct hilock_lock *r = tu_rwlock(a, "dg", 1, HILOCK_READ);
    struct hilock_lock *other = tu_rwlock(b, "dg", 1, HILOCK_READ);
    tu_assert_status(tu_acquire(w, 0, 10000, NULL), 0);
    tu_assert_status(tu_acquire(other, 0, 10000, NULL), HILOCK_EBUSY);
    tu_assert_status(tu_acquire(r, 0, 10000, NULL), 0); /* downgrade */
    tu_assert_status(tu_release(w, NULL), 0);
    char *m = mode_of("dg");
    ck_assert_str_eq(m, "read");
    free(m);
    ck_assert_uint_eq(hilock_lock_hold_count(r), 1);
    tu_assert_status(tu_acquire(other, 0, 10000, NULL), 0);

    /* Holding the read lock, the same owner may not take the write lock:
     * neither at once nor by waiting (it would wait for itself). */
    long long t0 = tu_now_ms();
    tu_assert_status(tu_acquire(w, 0, 10000, NULL), HILOCK_EDEADLK);
    tu_assert_status(tu_acquire(w, 5000, 10000, NULL), HILOCK_EDEADLK);
    ck_assert_msg(tu_now_ms() - t0 < 2000, "the refusal waited");
    ck_assert_uint_eq(hilock_lock_hold_count(w), 0);
    tu_assert_status(tu_release(r, NULL), 0);
    tu_assert_status(tu_release(other, NULL), 0);
    ck_assert_int_eq(tu_exists("dg"), 0);
}
END_TEST

/* Readers that keep overlapping (each new one takes the read lock before
 * the last one leaves) would keep a writer out for ever; here a writer
 * that waits stops new readers, and gets the lock once the readers that
 * held it leave. */
START_TEST(a_waiting_writer_is_not_starved_by_overlapping_readers)
{
    struct hilock_lock *r1 = tu_rwlock(a, "hot", 1, HILOCK_READ);
    struct hilock_lock *r2 = tu_rwlock(a, "hot", 2, HILOCK_READ);
    struct hilock_lock *w = tu_rwlock(b, "hot", 1, HILOCK_WRITE);
    struct tu_result cw = {0}, c2 = {0};
    tu_assert_status(tu_acquire(r1, 0, 30000, NULL), 0);
    tu_assert_status(hilock_lock_acquire(w, 20000, 30000, tu_record, &cw), 0);
    ck_assert(tu_run_until_redis(1, tu_ms(2000), "EXISTS",
                                 "hilock_rwlock_writer:{hot}", (char *)NULL));
    /* A new reader now waits behind the writer... */
    struct hilock_result v;
    tu_assert_status(tu_acquire(r2, 0, 30000, &v), HILOCK_EBUSY);
    ck_assert_msg(v.ttl_ms > 0, "EBUSY value %lld", (long long)v.ttl_ms);
    tu_assert_status(hilock_lock_acquire(r2, 20000, 30000, tu_record, &c2), 0);
    tu_run_for(200);
    ck_assert_int_eq(cw.calls, 0);
    ck_assert_int_eq(c2.calls, 0);
    /* ... but the reader that holds may re-enter. */
    tu_assert_status(tu_acquire(r1, 0, 30000, NULL), 0);
    tu_assert_status(tu_release(r1, NULL), 0);
    tu_assert_status(tu_release(r1, NULL), 0);
    ck_assert(tu_run_until_count(&cw.calls, 1, tu_ms(3000)));
    tu_assert_status(cw.status, 0);
    ck_assert_int_eq(c2.calls, 0);
    ck_assert_int_eq(tu_exists("hilock_rwlock_writer:{hot}"), 0);
    long long let_go = tu_now_ms();
    tu_assert_status(tu_release(w, NULL), 0);
    ck_assert(tu_run_until_count(&c2.calls, 1, tu_ms(3000)));
    tu_assert_status(c2.status, 0);
    ck_assert_msg(c2.at_ms >= cw.at_ms, "the reader went first");
    /* woken by the writer's release message, not by its fallback (r1's
     * releases, the first of which published nothing, must not make it
     * take that message for an echo of its own) */
    ck_assert_msg(c2.at_ms - let_go < tu_ms(1000),
                  "the reader took the lock %lld ms after the release",
                  c2.at_ms - let_go);
    tu_assert_status(tu_release(r2, NULL), 0);
}
END_TEST

/* A writer that gives up waiting stops keeping readers off at once: its
 * mark goes with it (times out or cancels). */
START_TEST(a_writer_that_gives_up_lets_readers_in_again)
{
    struct hilock_lock *r1 = tu_rwlock(a, "gu", 1, HILOCK_READ);
    struct hilock_lock *r2 = tu_rwlock(a, "gu", 2, HILOCK_READ);
    struct hilock_lock *w = tu_rwlock(b, "gu", 1, HILOCK_WRITE);
    tu_assert_status(tu_acquire(r1, 0, 30000, NULL), 0);
    tu_assert_status(tu_acquire(w, 300, 30000, NULL), HILOCK_ETIMEDOUT);
    tu_assert_status(tu_acquire(r2, 0, 30000, NULL), 0);
    tu_assert_status(tu_release(r2, NULL), 0);
    struct tu_result r = {0};
    tu_assert_status(hilock_lock_acquire(w, 30000, 30000, tu_record, &r), 0);
    ck_assert(tu_run_until_redis(1, tu_ms(2000), "EXISTS",
                                 "hilock_rwlock_writer:{gu}", (char *)NULL));
    tu_assert_status(hilock_lock_cancel(w), 0);
    tu_assert_status(r.status, HILOCK_ECANCELED);
    tu_assert_status(tu_acquire(r2, 0, 30000, NULL), 0);
    ck_assert_int_eq(tu_exists("hilock_rwlock_writer:{gu}"), 0);
    tu_assert_status(tu_release(r2, NULL), 0);
    tu_assert_status(tu_release(r1, NULL), 0);
}
END_TEST

/* A reader that dies frees its share when its own lease runs out, while
 * another reader goes on holding under the watchdog. */
START_TEST(read_holds_expire_one_by_one)
{
    struct hilock_options o;
    tu_options(&o);
    o.watchdog_lease_ms = 900;
    struct hilock_client *c = tu_client(&o);
    struct hilock_lock *gone = tu_rwlock(a, "ex", 1, HILOCK_READ);
    struct hilock_lock *kept = tu_rwlock(c, "ex", 1, HILOCK_READ);
    struct hilock_lock *w = tu_rwlock(b, "ex", 1, HILOCK_WRITE);
    struct tu_result lost = {0};
    tu_assert_status(hilock_lock_on_lost(kept, tu_record, &lost), 0);
    tu_assert_status(tu_acquire(gone, 0, 400, NULL), 0); /* explicit lease */
    tu_assert_status(tu_acquire(kept, 0, 0, NULL), 0);   /* watchdog */
    tu_assert_status(tu_acquire(w, 0, 10000, NULL), HILOCK_EBUSY);
    tu_run_for(700);
    char k[160];
    ck_assert_int_eq(tu_exists(timeout_key(a, "ex", 1, 1, k, sizeof(k))), 0);
    ck_assert_int_eq(tu_exists(timeout_key(c, "ex", 1, 1, k, sizeof(k))), 1);
    ck_assert_int_eq(tu_exists("ex"), 1);
    tu_assert_status(tu_acquire(w, 0, 10000, NULL), HILOCK_EBUSY);
    /* The survivor's release frees the lock: the dead reader counts no
     * more, and the writer that waits gets it. */
    struct tu_result cw = {0};
    tu_assert_status(hilock_lock_acquire(w, 5000, 10000, tu_record, &cw), 0);
    tu_run_for(100);
    ck_assert_int_eq(cw.calls, 0);
    tu_assert_status(tu_release(kept, NULL), 0);
    ck_assert(tu_run_until_count(&cw.calls, 1, tu_ms(3000)));
    tu_assert_status(cw.status, 0);
    ck_assert_int_eq(lost.calls, 0);
    hilock_client_free(c);
}
END_TEST

START_TEST(a_write_lock_deleted_from_under_its_holder_is_reported_lost)
{
    struct hilock_options o;
    tu_options(&o);
    o.watchdog_lease_ms = 600;
    struct hilock_client *c = tu_client(&o);
    struct hilock_lock *w = tu_rwlock(c, "lw", 1, HILOCK_WRITE);
    struct hilock_lock *r = tu_rwlock(c, "lr", 1, HILOCK_READ);
    struct tu_result lw = {0}, lr = {0};
    tu_assert_status(hilock_lock_on_lost(w, tu_record, &lw), 0);
    tu_assert_status(hilock_lock_on_lost(r, tu_record, &lr), 0);
    tu_assert_status(tu_acquire(w, 0, 0, NULL), 0);
    tu_assert_status(tu_acquire(r, 0, 0, NULL), 0);
    tu_run_for(700); /* renewed past the first lease */
    ck_assert_int_eq(lw.calls + lr.calls, 0);
    ck_assert_int_eq(tu_exists("lw"), 1);
    rs_int(tu_srv, "DEL", "lw", (char *)NULL);
    char k[160];
    rs_int(tu_srv, "DEL", timeout_key(c, "lr", 1, 1, k, sizeof(k)),
           (char *)NULL);
    ck_assert(tu_run_until_count(&lw.calls, 1, tu_ms(2000)));
    ck_assert(tu_run_until_count(&lr.calls, 1, tu_ms(2000)));
    tu_assert_status(lw.status, HILOCK_ELOST);
    tu_assert_status(lr.status, HILOCK_ELOST);
    ck_assert_uint_eq(hilock_lock_hold_count(r), 0);
    hilock_client_free(c);
}
END_TEST

/* A reader waiting on a writer is woken by the writer's release message,
 * not by its fallback timer (the writer's lease is long). */
START_TEST(readers_wait_for_the_writer_and_all_go_at_its_release)
{
    struct hilock_lock *w = tu_rwlock(a, "wk", 1, HILOCK_WRITE);
    struct hilock_lock *r[3] = {tu_rwlock(b, "wk", 1, HILOCK_READ),
                                tu_rwlock(b, "wk", 2, HILOCK_READ),
                                tu_rwlock(b, "wk", 3, HILOCK_READ)};
    struct tu_result c[3] = {{0}, {0}, {0}};
    tu_assert_status(tu_acquire(w, 0, 30000, NULL), 0);
    for (int i = 0; i < 3; i++)
        tu_assert_status(hilock_lock_acquire(r[i], 10000, 30000, tu_record,
                                             &c[i]),
                         0);
    ck_assert(tu_numsub_becomes("redisson_rwlock:{wk}", 1, tu_ms(2000)));
    tu_run_for(100);
    long long t0 = tu_now_ms();
    tu_assert_status(tu_release(w, NULL), 0);
    int all = 0;
    for (int i = 0; i < 3; i++) {
        ck_assert(tu_run_until_count(&c[i].calls, 1, tu_ms(2000)));
        tu_assert_status(c[i].status, 0);
        all++;
    }
    ck_assert_int_eq(all, 3);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(c[i].at_ms - t0 < 900, "reader %d woke after %lld ms",
                      i, c[i].at_ms - t0);
    ck_assert_int_eq(rs_int(tu_srv, "HLEN", "wk", (char *)NULL), 4);
}
END_TEST

/* What a Redisson client expects to find, written by hand as Redisson's
 * scripts would: a hilock reader is excluded by a Redisson writer and
 * shares with a Redisson reader, and a hilock writer's release publishes
 * the message Redisson's readers wait for. */
START_TEST(a_redisson_layout_is_shared)
{
    struct hilock_lock *r = tu_rwlock(a, "rz", 1, HILOCK_READ);
    struct hilock_lock *w = tu_rwlock(a, "rz", 2, HILOCK_WRITE);
    rs_int(tu_srv, "HSET", "rz", "mode", "write", "other-uuid:7:write", "1",
           (char *)NULL);
    rs_int(tu_srv, "PEXPIRE", "rz", "10000", (char *)NULL);
    tu_assert_status(tu_acquire(r, 0, 10000, NULL), HILOCK_EBUSY);
    rs_int(tu_srv, "DEL", "rz", (char *)NULL);
    rs_int(tu_srv, "HSET", "rz", "mode", "read", "other-uuid:7", "1",
           (char *)NULL);
    rs_int(tu_srv, "SET", "{rz}:other-uuid:7:rwlock_timeout:1", "1", "PX",
           "10000", (char *)NULL);
    rs_int(tu_srv, "PEXPIRE", "rz", "10000", (char *)NULL);
    tu_assert_status(tu_acquire(r, 0, 10000, NULL), 0);
    ck_assert_int_eq(rs_int(tu_srv, "HLEN", "rz", (char *)NULL), 3);
    tu_assert_status(tu_release(r, NULL), 0);
    ck_assert_int_eq(tu_exists("rz"), 1); /* the other reader holds */
    tu_assert_status(tu_acquire(w, 0, 10000, NULL), HILOCK_EBUSY);
    rs_int(tu_srv, "DEL", "{rz}:other-uuid:7:rwlock_timeout:1", (char *)NULL);
    /* Its only hold expired: the writer takes the lock. */
    tu_assert_status(tu_acquire(w, 0, 10000, NULL), 0);
    ck_assert_int_eq(rs_int(tu_srv, "HLEN", "rz", (char *)NULL), 2);
}
END_TEST

Suite *rwlock_suite(void);
Suite *rwlock_suite(void)
{
    Suite *s = suite_create("rwlock");
    TCase *tc = tcase_create("rwlock");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, readers_share_and_a_writer_excludes_them_both_ways);
    tcase_add_test(tc, reentry_counts_holds_with_a_timeout_key_per_read_hold);
    tcase_add_test(tc, a_writer_downgrades_and_an_upgrade_is_refused);
    tcase_add_test(tc, a_waiting_writer_is_not_starved_by_overlapping_readers);
    tcase_add_test(tc, a_writer_that_gives_up_lets_readers_in_again);
    tcase_add_test(tc, read_holds_expire_one_by_one);
    tcase_add_test(tc, a_write_lock_deleted_from_under_its_holder_is_reported_lost);
    tcase_add_test(tc, readers_wait_for_the_writer_and_all_go_at_its_release);
    tcase_add_test(tc, a_redisson_layout_is_shared);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_main(rwlock_suite());
}
