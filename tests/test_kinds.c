/* SPDX-License-Identifier: BSD-3-Clause */
/* test_kinds.c -- lock kinds mixed on one name, against a real Redis: a
 * lock, a read-write lock and a semaphore each refuse the others' keys
 * (HILOCK_EWRONGKIND) on acquire, release, renewal and the queries, in
 * both directions, and leave the key they met as it was. */
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

/* Run a call that takes (sem, n, cb, arg) until its callback fires. */
typedef int sem_call_fn(struct hilock_semaphore *sem, uint32_t n,
                        hilock_semaphore_cb *cb, void *arg);
static int sem_run(sem_call_fn *fn, struct hilock_semaphore *s, uint32_t n)
{
    struct tu_result r = {0};
    tu_assert_status(fn(s, n, tu_record_sem, &r), 0);
    ck_assert(tu_run_until_count(&r.calls, 1, tu_ms(3000)));
    return r.status;
}

static int sem_take(struct hilock_semaphore *s, uint32_t n,
                    hilock_semaphore_cb *cb, void *arg)
{
    return hilock_semaphore_acquire(s, n, 0, cb, arg);
}

static int sem_available(struct hilock_semaphore *s, uint32_t n,
                         hilock_semaphore_cb *cb, void *arg)
{
    (void)n;
    return hilock_semaphore_available(s, cb, arg);
}

/* The type and content of key as one string, to see it unchanged. */
static char *dump(const char *key)
{
    static const char script[] =
        "local t = redis.call('type', KEYS[1]).ok\n"
        "if t == 'hash' then\n"
        "  return t .. ' ' .. table.concat(redis.call('hgetall', KEYS[1]), ' ')\n"
        "end\n"
        "return t .. ' ' .. (redis.call('get', KEYS[1]) or '')\n";
    char *d = rs_str(tu_srv, "EVAL", script, "1", key, (char *)NULL);
    ck_assert_ptr_nonnull(d);
    ck_assert_msg(strncmp(d, "none", 4) != 0, "%s is gone", key);
    return d;
}

static void assert_same(const char *key, char *before)
{
    char *after = dump(key);
    ck_assert_msg(strcmp(before, after) == 0, "%s was changed", key);
    free(after);
    free(before);
}

/* A held lock: neither side of a read-write lock nor a semaphore takes
 * its name (the read side used to prune the holder's field as an expired
 * reader), and the holder's hash stays as it was. */
START_TEST(a_held_lock_refuses_the_other_kinds)
{
    struct hilock_lock *l = tu_lock(a, "k1", 1);
    tu_assert_status(tu_acquire(l, 0, 30000, NULL), 0);
    char *before = dump("k1");

    tu_assert_status(
        tu_acquire(tu_rwlock(b, "k1", 1, HILOCK_READ), 0, 10000, NULL),
        HILOCK_EWRONGKIND);
    tu_assert_status(
        tu_acquire(tu_rwlock(b, "k1", 1, HILOCK_WRITE), 0, 10000, NULL),
        HILOCK_EWRONGKIND);
    /* The holder's own owner, on the read side: not a re-entry. */
    tu_assert_status(
        tu_acquire(tu_rwlock(a, "k1", 1, HILOCK_READ), 0, 10000, NULL),
        HILOCK_EWRONGKIND);
    struct hilock_semaphore *s = tu_semaphore(b, "k1");
    tu_assert_status(sem_run(hilock_semaphore_try_set_permits, s, 5),
                     HILOCK_EWRONGKIND);
    tu_assert_status(sem_run(sem_take, s, 1), HILOCK_EWRONGKIND);
    tu_assert_status(sem_run(hilock_semaphore_release, s, 1),
                     HILOCK_EWRONGKIND);
    tu_assert_status(sem_run(sem_available, s, 0), HILOCK_EWRONGKIND);
    tu_assert_status(tu_permit_acquire(tu_permit(b, "k1"), 0, 10000, NULL),
                     HILOCK_EWRONGKIND);
    /* The read side's queries do not read the lock's fields either. */
    struct hilock_lock *r = tu_rwlock(a, "k1", 1, HILOCK_READ);
    tu_assert_status(tu_query(hilock_lock_query_held, r, NULL),
                     HILOCK_EWRONGKIND);
    tu_assert_status(tu_query(hilock_lock_query_ttl, r, NULL),
                     HILOCK_EWRONGKIND);
    assert_same("k1", before);

    /* A third owner is still kept off, and the holder's release works. */
    tu_assert_status(tu_acquire(tu_lock(b, "k1", 7), 0, 10000, NULL),
                     HILOCK_EBUSY);
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert_int_eq(tu_exists("k1"), 0);
}
END_TEST

/* A read-write lock, on either side: a lock (the RESTORE of the fast path
 * finds the key, the script then refuses it; a fair lock too) and a
 * semaphore are refused, also for the reader's own owner, whose field is
 * named as a lock's. */
START_TEST(a_held_read_write_lock_refuses_the_other_kinds)
{
    struct hilock_lock *r = tu_rwlock(a, "k2", 1, HILOCK_READ);
    tu_assert_status(tu_acquire(r, 0, 30000, NULL), 0);
    char *before = dump("k2");
    struct hilock_lock *mine = tu_lock(a, "k2", 1);
    tu_assert_status(tu_acquire(mine, 0, 10000, NULL), HILOCK_EWRONGKIND);
    tu_assert_status(tu_acquire(tu_lock(b, "k2", 1), 0, 10000, NULL),
                     HILOCK_EWRONGKIND);
    tu_assert_status(tu_query(hilock_lock_query_held, mine, NULL),
                     HILOCK_EWRONGKIND);
    tu_assert_status(tu_query(hilock_lock_query_count, mine, NULL),
                     HILOCK_EWRONGKIND);
    tu_assert_status(tu_query(hilock_lock_query_ttl, mine, NULL),
                     HILOCK_EWRONGKIND);
    struct hilock_options o;
    tu_options(&o);
    o.fair = 1;
    struct hilock_client *fair = tu_client(&o);
    tu_assert_status(tu_acquire(tu_lock(fair, "k2", 1), 0, 10000, NULL),
                     HILOCK_EWRONGKIND);
    struct hilock_semaphore *s = tu_semaphore(b, "k2");
    tu_assert_status(sem_run(sem_take, s, 1), HILOCK_EWRONGKIND);
    tu_assert_status(sem_run(hilock_semaphore_try_set_permits, s, 3),
                     HILOCK_EWRONGKIND);
    assert_same("k2", before);
    tu_assert_status(tu_release(r, NULL), 0);
    hilock_client_free(fair);

    struct hilock_lock *w = tu_rwlock(b, "k2", 3, HILOCK_WRITE);
    tu_assert_status(tu_acquire(w, 0, 30000, NULL), 0);
    before = dump("k2");
    tu_assert_status(tu_acquire(tu_lock(a, "k2", 4), 0, 10000, NULL),
                     HILOCK_EWRONGKIND);
    tu_assert_status(sem_run(sem_take, tu_semaphore(a, "k2"), 1),
                     HILOCK_EWRONGKIND);
    assert_same("k2", before);
    tu_assert_status(tu_release(w, NULL), 0);
    ck_assert_int_eq(tu_exists("k2"), 0);
}
END_TEST

/* A semaphore's counter (a number, Redisson's layout) is neither a lock
 * nor a read-write lock. */
START_TEST(a_semaphore_refuses_the_other_kinds)
{
    struct hilock_semaphore *s = tu_semaphore(a, "k3");
    tu_assert_status(sem_run(hilock_semaphore_try_set_permits, s, 2), 0);
    tu_assert_status(sem_run(sem_take, s, 1), 0);
    char *before = dump("k3");
    struct hilock_lock *l = tu_lock(b, "k3", 1);
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), HILOCK_EWRONGKIND);
    tu_assert_status(tu_query(hilock_lock_query_held, l, NULL),
                     HILOCK_EWRONGKIND);
    tu_assert_status(
        tu_acquire(tu_rwlock(b, "k3", 1, HILOCK_READ), 0, 10000, NULL),
        HILOCK_EWRONGKIND);
    tu_assert_status(
        tu_acquire(tu_rwlock(b, "k3", 1, HILOCK_WRITE), 0, 10000, NULL),
        HILOCK_EWRONGKIND);
    assert_same("k3", before);
    tu_assert_status(sem_run(hilock_semaphore_release, s, 1), 0);
    ck_assert_int_eq(rs_int(tu_srv, "GET", "k3", (char *)NULL), 2);
}
END_TEST

/* A lock's key deleted under its holder (hilock release --force) and
 * taken as a read lock by the same owner: the lock's release, renewal and
 * queries refuse the read-write hash and leave the reader's hold (its
 * field is named as the lock's) where it is; the reader's release, the
 * other way round, refuses a lock's hash. */
START_TEST(release_and_renewal_leave_another_kinds_key_alone)
{
    struct hilock_lock *l = tu_lock(a, "k4", 1);
    struct hilock_lock *r = tu_rwlock(a, "k4", 1, HILOCK_READ);
    tu_assert_status(tu_acquire(l, 0, 30000, NULL), 0);
    ck_assert_int_eq(rs_int(tu_srv, "DEL", "k4", (char *)NULL), 1);
    tu_assert_status(tu_acquire(r, 0, 30000, NULL), 0);
    char *before = dump("k4");

    struct tu_result renewed = {0};
    tu_assert_status(hilock_lock_renew(l, 20000, tu_record, &renewed), 0);
    ck_assert(tu_run_until_count(&renewed.calls, 1, tu_ms(3000)));
    tu_assert_status(renewed.status, HILOCK_ELOST);
    assert_same("k4", before);
    ck_assert_int_eq(tu_holds("k4", a, 1), 1);

    /* the renewal ended the lock's hold here: a fresh handle holds it on
     * a key of its own, which is then swapped for the reader's again */
    struct hilock_lock *l2 = tu_lock(a, "k5", 1);
    struct hilock_lock *r2 = tu_rwlock(a, "k5", 1, HILOCK_READ);
    tu_assert_status(tu_acquire(l2, 0, 30000, NULL), 0);
    ck_assert_int_eq(rs_int(tu_srv, "DEL", "k5", (char *)NULL), 1);
    tu_assert_status(tu_acquire(r2, 0, 30000, NULL), 0);
    before = dump("k5");
    tu_assert_status(tu_release(l2, NULL), HILOCK_EWRONGKIND);
    assert_same("k5", before);
    ck_assert_int_eq(tu_holds("k5", a, 1), 1);
    tu_assert_status(tu_release(r2, NULL), 0);
    tu_assert_status(tu_release(r, NULL), 0);

    /* The reader's release meets a lock's hash: refused, left alone. */
    struct hilock_lock *r3 = tu_rwlock(b, "k6", 2, HILOCK_READ);
    tu_assert_status(tu_acquire(r3, 0, 30000, NULL), 0);
    ck_assert_int_eq(rs_int(tu_srv, "DEL", "k6", (char *)NULL), 1);
    tu_assert_status(tu_acquire(tu_lock(b, "k6", 2), 0, 30000, NULL), 0);
    before = dump("k6");
    tu_assert_status(tu_release(r3, NULL), HILOCK_EWRONGKIND);
    assert_same("k6", before);
}
END_TEST

static void mrecord(struct hilock_multi *m, int status,
                    const struct hilock_result *res, void *arg)
{
    struct tu_result *r = arg;
    (void)m;
    r->calls++;
    r->status = status;
    r->res = *res;
}

/* A MultiLock whose second name is its owner's read lock: refused whole
 * (the reader's field is named as the lock's owner field), nothing taken
 * and the read-write hash as it was. */
START_TEST(a_multilock_refuses_a_name_of_another_kind)
{
    static const char *const names[] = {"m1", "m2"};
    static const size_t lens[] = {2, 2};
    struct hilock_lock *r = tu_rwlock(a, "m2", 1, HILOCK_READ);
    tu_assert_status(tu_acquire(r, 0, 30000, NULL), 0);
    char *before = dump("m2");
    struct hilock_multi *m = NULL;
    tu_assert_status(hilock_multi_new(a, names, lens, 2, 1, &m), 0);
    struct tu_result res = {0};
    tu_assert_status(hilock_multi_acquire(m, 0, 10000, mrecord, &res), 0);
    ck_assert(tu_run_until_count(&res.calls, 1, tu_ms(3000)));
    tu_assert_status(res.status, HILOCK_EWRONGKIND);
    ck_assert_int_eq(tu_exists("m1"), 0);
    assert_same("m2", before);
    hilock_multi_free(m);
}
END_TEST

Suite *kinds_suite(void);
Suite *kinds_suite(void)
{
    Suite *s = suite_create("kinds");
    TCase *tc = tcase_create("kinds");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_held_lock_refuses_the_other_kinds);
    tcase_add_test(tc, a_held_read_write_lock_refuses_the_other_kinds);
    tcase_add_test(tc, a_semaphore_refuses_the_other_kinds);
    tcase_add_test(tc, release_and_renewal_leave_another_kinds_key_alone);
    tcase_add_test(tc, a_multilock_refuses_a_name_of_another_kind);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_main(kinds_suite());
}
