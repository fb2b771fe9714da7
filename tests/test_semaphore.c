/* SPDX-License-Identifier: BSD-3-Clause */
/* test_semaphore.c -- counting semaphores and expiring permits against a
 * real Redis: permits set once, taken and given back, waiting woken by
 * releases, the count never exceeded by several processes at once, an
 * expiring permit coming back after its holder is killed, renewal and
 * on_lost, resends applied once, and Redisson's layouts. */
#include "testutil.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

static struct hilock_client *a, *b;

static void setup(void)
{
    tu_setup_pair(&a, &b);
}

static void teardown(void)
{
    tu_teardown_pair(&a, &b);
}

/* Run a call that takes (handle, cb, arg) until its callback fires. */
static int run_cb(int rc, struct tu_result *r, struct hilock_result *res)
{
    tu_assert_status(rc, 0);
    ck_assert(tu_run_until_count(&r->calls, 1, tu_ms(3000)));
    if (res)
        *res = r->res;
    return r->status;
}

static int sem_init(struct hilock_semaphore *s, uint32_t n,
                    struct hilock_result *v)
{
    struct tu_result r = {0};
    return run_cb(hilock_semaphore_try_set_permits(s, n, tu_record_sem, &r),
                  &r, v);
}

static int permit_init(struct hilock_permit *p, uint32_t n,
                       struct hilock_result *v)
{
    struct tu_result r = {0};
    return run_cb(hilock_permit_try_set_permits(p, n, tu_record_permit, &r),
                  &r, v);
}

static int sem_acquire(struct hilock_semaphore *s, uint32_t n,
                       uint64_t wait_ms, struct hilock_result *v)
{
    struct tu_result r = {0};
    tu_assert_status(
        hilock_semaphore_acquire(s, n, wait_ms, tu_record_sem, &r), 0);
    ck_assert(tu_run_until_count(&r.calls, 1, tu_ms(3000) + (int)wait_ms));
    if (v)
        *v = r.res;
    return r.status;
}

static int sem_release(struct hilock_semaphore *s, uint32_t n,
                       struct hilock_result *v)
{
    struct tu_result r = {0};
    return run_cb(hilock_semaphore_release(s, n, tu_record_sem, &r), &r, v);
}

START_TEST(permits_are_set_once_taken_and_given_back)
{
    struct hilock_semaphore *s = tu_semaphore(a, "jobs");
    struct hilock_semaphore *t = tu_semaphore(b, "jobs");
    struct hilock_result v;
    tu_assert_status(sem_acquire(s, 1, 0, &v), HILOCK_EBUSY); /* none set */
    ck_assert_int_eq(v.ttl_ms, HILOCK_TTL_NONE); /* permits never expire */
    tu_assert_status(sem_init(s, 5, &v), 0);
    ck_assert_int_eq(v.permits_set, 1);
    tu_assert_status(sem_init(t, 9, &v), 0);
    ck_assert_int_eq(v.permits_set, 0);
    ck_assert_int_eq(rs_int(tu_srv, "GET", "jobs", (char *)NULL), 5);

    tu_assert_status(sem_acquire(s, 3, 0, &v), 0);
    ck_assert_int_eq(v.permits, 3);
    ck_assert_uint_eq(hilock_semaphore_permits_held(s), 3);
    tu_assert_status(sem_acquire(t, 3, 0, &v), HILOCK_EBUSY);
    tu_assert_status(sem_acquire(t, 2, 0, NULL), 0);
    tu_assert_status(tu_sem_query(hilock_semaphore_available, t, &v), 0);
    ck_assert_int_eq(v.permits, 0);
    tu_assert_status(sem_release(s, 2, &v), 0);
    ck_assert_int_eq(v.permits, 2);
    ck_assert_uint_eq(hilock_semaphore_permits_held(s), 1);
    /* Permits have no owner: anyone may give them back. */
    tu_assert_status(sem_release(t, 3, &v), 0);
    ck_assert_int_eq(v.permits, 5);
    ck_assert_uint_eq(hilock_semaphore_permits_held(t), 0);
    /* One at a time, as a lock's acquire and release took and gave. */
    tu_assert_status(sem_acquire(s, 1, 0, &v), 0);
    ck_assert_int_eq(v.permits, 1);
    ck_assert_int_eq(rs_int(tu_srv, "GET", "jobs", (char *)NULL), 4);
    tu_assert_status(sem_release(s, 1, &v), 0);
    ck_assert_int_eq(v.permits, 5);

    /* A lock's renew, queries and on_lost do not compile on a semaphore
     * (the kinds_apart test); bad counts are refused at run time. */
    struct tu_result r = {0};
    tu_assert_status(hilock_semaphore_acquire(s, 0, 0, tu_record_sem, &r),
                     HILOCK_EINVAL);
    tu_assert_status(hilock_semaphore_acquire(s, HILOCK_PERMITS_MAX + 1, 0,
                                              tu_record_sem, &r),
                     HILOCK_EINVAL);
    tu_assert_status(hilock_semaphore_release(s, 0, tu_record_sem, &r),
                     HILOCK_EINVAL);
    tu_assert_status(hilock_semaphore_try_set_permits(
                         s, HILOCK_PERMITS_MAX + 1, tu_record_sem, &r),
                     HILOCK_EINVAL);
    ck_assert_int_eq(r.calls, 0);
}
END_TEST

START_TEST(a_waiter_is_woken_by_a_release_elsewhere)
{
    struct hilock_semaphore *s = tu_semaphore(a, "w");
    struct hilock_semaphore *t = tu_semaphore(b, "w");
    struct hilock_semaphore *u = tu_semaphore(b, "w");
    tu_assert_status(sem_init(s, 2, NULL), 0);
    tu_assert_status(sem_acquire(s, 2, 0, NULL), 0);
    struct tu_result w1 = {0}, w2 = {0};
    tu_assert_status(
        hilock_semaphore_acquire(t, 1, 10000, tu_record_sem, &w1), 0);
    tu_assert_status(
        hilock_semaphore_acquire(u, 1, 10000, tu_record_sem, &w2), 0);
    ck_assert(tu_numsub_becomes("redisson_sc:{w}", 1, tu_ms(2000)));
    tu_run_for(100);
    ck_assert_int_eq(w1.calls + w2.calls, 0);
    long long t0 = tu_now_ms();
    /* Two permits back at once: both waiters of the other client go. */
    tu_assert_status(sem_release(s, 2, NULL), 0);
    ck_assert(tu_run_until_count(&w1.calls, 1, tu_ms(2000)));
    ck_assert(tu_run_until_count(&w2.calls, 1, tu_ms(2000)));
    tu_assert_status(w1.status, 0);
    tu_assert_status(w2.status, 0);
    ck_assert_msg(w1.at_ms - t0 < 900 && w2.at_ms - t0 < 900,
                  "woken after %lld / %lld ms (the fallback poll, not the "
                  "message)", w1.at_ms - t0, w2.at_ms - t0);
    struct hilock_result v;
    tu_assert_status(tu_sem_query(hilock_semaphore_available, s, &v), 0);
    ck_assert_int_eq(v.permits, 0);
    /* A wait that runs out leaves nothing taken. */
    tu_assert_status(sem_acquire(s, 1, 200, NULL), HILOCK_ETIMEDOUT);
    ck_assert_int_eq(rs_int(tu_srv, "GET", "w", (char *)NULL), 0);
}
END_TEST

/* Several processes, each with one client and several handles, take and
 * give back permits of one semaphore of 3 as fast as they can; every
 * holder counts itself in Redis (INCR on taking, DECR before giving back)
 * and records the highest count it saw. */
#define CHILDREN 4
#define HANDLES 4
#define ROUNDS 25

struct worker {
    struct hilock_client *c;
    struct hilock_semaphore *h[HANDLES];
    int left[HANDLES];
    long long max_seen;
    int errors;
    int active;
};

static struct worker wk;

static void take(int i);

static void given(struct hilock_semaphore *sem, int status,
                  const struct hilock_result *res, void *arg)
{
    int i = (int)(intptr_t)arg;
    (void)sem;
    (void)res;
    if (status)
        wk.errors++;
    if (--wk.left[i] > 0)
        take(i);
    else
        wk.active--;
}

static void taken(struct hilock_semaphore *sem, int status,
                  const struct hilock_result *res, void *arg)
{
    (void)res;
    if (status) {
        wk.errors++;
        wk.active--;
        return;
    }
    long long n = rs_int(tu_srv, "INCR", "holders", (char *)NULL);
    if (n > wk.max_seen)
        wk.max_seen = n;
    rs_int(tu_srv, "DECR", "holders", (char *)NULL);
    if (hilock_semaphore_release(sem, 1, given, arg) != 0) {
        wk.errors++;
        wk.active--;
    }
}

static void take(int i)
{
    if (hilock_semaphore_acquire(wk.h[i], 1, 20000, taken,
                                 (void *)(intptr_t)i) != 0) {
        wk.errors++;
        wk.active--;
    }
}

static bool workers_done(void *arg)
{
    (void)arg;
    return wk.active == 0;
}

/* In a child: run the workers; exit with the most holders seen at once
 * (0..3) when every round went right and no one saw more than 3, else 10
 * and more. */
static void child(void)
{
    struct event_base *base = event_base_new();
    tu_base = base;
    wk.c = tu_client(NULL);
    tu_client_ready(wk.c);
    for (int i = 0; i < HANDLES; i++) {
        wk.h[i] = tu_semaphore(wk.c, "pool");
        wk.left[i] = ROUNDS;
    }
    wk.active = HANDLES;
    for (int i = 0; i < HANDLES; i++)
        take(i);
    bool ok = tu_run_until(workers_done, NULL, 60000);
    hilock_client_free(wk.c);
    _exit(ok && wk.errors == 0 && wk.max_seen <= 3 ? (int)wk.max_seen
                                                   : 10 + (int)wk.max_seen);
}

START_TEST(the_count_is_never_exceeded_by_several_processes)
{
    struct hilock_semaphore *s = tu_semaphore(a, "pool");
    tu_assert_status(sem_init(s, 3, NULL), 0);
    pid_t pid[CHILDREN];
    for (int i = 0; i < CHILDREN; i++) {
        pid[i] = fork();
        ck_assert_int_ge(pid[i], 0);
        if (pid[i] == 0)
            child();
    }
    int most = 0;
    for (int i = 0; i < CHILDREN; i++) {
        int st = 0;
        ck_assert_int_eq(waitpid(pid[i], &st, 0), pid[i]);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) <= 3,
                      "child %d: status %d", i,
                      WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        most = WEXITSTATUS(st) > most ? WEXITSTATUS(st) : most;
    }
    ck_assert_msg(most >= 2, "never more than %d holder at once", most);
    ck_assert_int_eq(rs_int(tu_srv, "GET", "pool", (char *)NULL), 3);
    ck_assert_int_eq(rs_int(tu_srv, "GET", "holders", (char *)NULL), 0);
}
END_TEST

START_TEST(expiring_permits_have_ids_and_a_lease)
{
    struct hilock_permit *p1 = tu_permit(a, "exp"), *p2 = tu_permit(a, "exp"),
                         *p3 = tu_permit(b, "exp");
    struct hilock_result v;
    tu_assert_status(permit_init(p1, 2, &v), 0);
    ck_assert_int_eq(v.permits_set, 1);
    tu_assert_status(tu_permit_acquire(p1, 0, 10000, &v), 0);
    ck_assert(tu_result_empty(&v));
    ck_assert_int_eq(hilock_permit_held(p1), 1);
    tu_assert_status(tu_permit_acquire(p2, 0, 0, &v), 0);
    tu_assert_status(tu_permit_acquire(p3, 0, 10000, &v), HILOCK_EBUSY);
    ck_assert_msg(v.ttl_ms > 0 && v.ttl_ms <= 30000, "EBUSY ttl %lld",
                  (long long)v.ttl_ms);
    ck_assert_int_eq(rs_int(tu_srv, "ZCARD", "{exp}:timeout", (char *)NULL),
                     2);
    char id1[33], id2[33];
    tu_assert_status(hilock_permit_id(p1, id1, sizeof(id1)), 0);
    tu_assert_status(hilock_permit_id(p2, id2, sizeof(id2)), 0);
    ck_assert_uint_eq(strlen(id1), 32);
    ck_assert_str_ne(id1, id2);
    /* A handle holds one permit at a time. */
    struct tu_result r = {0};
    tu_assert_status(
        hilock_permit_acquire(p1, 0, 1000, tu_record_permit, &r),
        HILOCK_EINVAL);
    tu_assert_status(tu_permit_release(p1, &v), 0);
    ck_assert_int_eq(hilock_permit_held(p1), 0);
    tu_assert_status(hilock_permit_id(p1, id1, sizeof(id1)), HILOCK_EINVAL);
    tu_assert_status(tu_permit_acquire(p3, 0, 10000, NULL), 0);
    tu_assert_status(tu_permit_query(hilock_permit_available, p3, &v), 0);
    ck_assert_int_eq(v.permits, 0);
    tu_assert_status(tu_permit_release(p3, NULL), 0);
    tu_assert_status(tu_permit_release(p3, NULL), HILOCK_ENOTOWNER);
    tu_assert_status(tu_permit_release(p2, NULL), 0);
    ck_assert_int_eq(rs_int(tu_srv, "GET", "exp", (char *)NULL), 2);
    ck_assert_int_eq(tu_exists("{exp}:timeout"), 0);
}
END_TEST

/* A permit taken with a lease and never given back returns to the
 * semaphore when the lease runs out, and its holder is told it lost it;
 * a permit under the watchdog stays. */
START_TEST(an_expired_permit_comes_back_and_its_holder_is_told)
{
    struct hilock_options o;
    tu_options(&o);
    o.watchdog_lease_ms = 600;
    struct hilock_client *c = tu_client(&o);
    struct hilock_permit *p1 = tu_permit(a, "lease");
    struct hilock_permit *kept = tu_permit(c, "lease");
    struct hilock_permit *p3 = tu_permit(b, "lease");
    struct tu_result lost = {0}, lost_kept = {0};
    tu_assert_status(hilock_permit_on_lost(p1, tu_record_permit, &lost), 0);
    tu_assert_status(
        hilock_permit_on_lost(kept, tu_record_permit, &lost_kept), 0);
    tu_assert_status(permit_init(p1, 2, NULL), 0);
    tu_assert_status(tu_permit_acquire(p1, 0, 300, NULL), 0);
    tu_assert_status(tu_permit_acquire(kept, 0, 0, NULL), 0);
    struct hilock_result v;
    tu_assert_status(tu_permit_acquire(p3, 0, 10000, &v), HILOCK_EBUSY);
    ck_assert_msg(v.ttl_ms > 0 && v.ttl_ms <= 300, "first expiry in %lld ms",
                  (long long)v.ttl_ms);
    struct tu_result w = {0};
    long long t0 = tu_now_ms();
    tu_assert_status(
        hilock_permit_acquire(p3, 5000, 10000, tu_record_permit, &w), 0);
    ck_assert(tu_run_until_count(&w.calls, 1, tu_ms(3000)));
    tu_assert_status(w.status, 0);
    ck_assert_msg(w.at_ms - t0 < 900, "took %lld ms", w.at_ms - t0);
    ck_assert(tu_run_until_count(&lost.calls, 1, tu_ms(2000)));
    tu_assert_status(lost.status, HILOCK_ELOST);
    ck_assert_ptr_eq(lost.handle, p1);
    tu_assert_status(tu_permit_release(p1, NULL), HILOCK_ENOTOWNER);
    tu_run_for(700); /* the watchdog renews the other one */
    ck_assert_int_eq(lost_kept.calls, 0);
    ck_assert_int_eq(hilock_permit_held(kept), 1);
    /* and so does an explicit renewal */
    struct tu_result rn = {0};
    tu_assert_status(hilock_permit_renew(kept, 5000, tu_record_permit, &rn),
                     0);
    ck_assert(tu_run_until_count(&rn.calls, 1, tu_ms(2000)));
    tu_assert_status(rn.status, 0);
    ck_assert_int_eq(rn.res.lease_ms, 5000);
    ck_assert_ptr_eq(rn.handle, kept);
    tu_assert_status(tu_permit_release(kept, NULL), 0);
    hilock_client_free(c);
}
END_TEST

/* The holder of an expiring permit is killed: the permit is back within
 * its lease, and a waiter elsewhere gets it. */
START_TEST(a_killed_holders_permit_returns_after_its_lease)
{
    struct hilock_permit *p = tu_permit(a, "k");
    tu_assert_status(permit_init(p, 1, NULL), 0);
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct hilock_options o;
        tu_base = event_base_new();
        tu_options(&o);
        o.watchdog_lease_ms = 800;
        struct hilock_client *c = tu_client(&o);
        struct hilock_permit *mine = tu_permit(c, "k");
        int ok = tu_permit_acquire(mine, 0, 0, NULL) == 0;
        ck_assert_int_eq(write(fd[1], &ok, sizeof(ok)), sizeof(ok));
        for (;;)
            tu_run_for(1000); /* renewing until killed */
    }
    int ok = 0;
    ck_assert_int_eq(read(fd[0], &ok, sizeof(ok)), sizeof(ok));
    ck_assert_int_eq(ok, 1);
    tu_run_for(1000); /* renewed past its first lease */
    tu_assert_status(tu_permit_acquire(p, 0, 10000, NULL), HILOCK_EBUSY);
    long long t0 = tu_now_ms();
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    tu_assert_status(tu_permit_acquire(p, 5000, 10000, NULL), 0);
    long long took = tu_now_ms() - t0;
    ck_assert_msg(took <= 800 + tu_ms(500), "took %lld ms", took);
    close(fd[0]);
    close(fd[1]);
}
END_TEST

/* What Redisson's RSemaphore and RPermitExpirableSemaphore write is read
 * the same way: a counter, and permits scored by their expiry time. */
START_TEST(redisson_layouts_are_shared)
{
    rs_int(tu_srv, "SET", "rs", "1", (char *)NULL);
    struct hilock_semaphore *s = tu_semaphore(a, "rs");
    tu_assert_status(sem_acquire(s, 1, 0, NULL), 0);
    ck_assert_int_eq(rs_int(tu_srv, "GET", "rs", (char *)NULL), 0);
    tu_assert_status(sem_release(s, 1, NULL), 0);

    /* A Redisson permit that expired long ago comes back on the next
     * acquire, and that is published. */
    rs_int(tu_srv, "SET", "rp", "0", (char *)NULL);
    rs_int(tu_srv, "ZADD", "{rp}:timeout", "1000", "redisson-permit",
           (char *)NULL);
    struct hilock_permit *p = tu_permit(a, "rp");
    tu_assert_status(tu_permit_acquire(p, 0, 10000, NULL), 0);
    ck_assert_int_eq(rs_int(tu_srv, "ZCARD", "{rp}:timeout", (char *)NULL),
                     1);
    ck_assert_int_eq(rs_int(tu_srv, "ZSCORE", "{rp}:timeout",
                            "redisson-permit", (char *)NULL),
                     RS_NIL);
}
END_TEST

Suite *semaphore_suite(void);
Suite *semaphore_suite(void)
{
    Suite *s = suite_create("semaphore");
    TCase *tc = tcase_create("semaphore");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, permits_are_set_once_taken_and_given_back);
    tcase_add_test(tc, a_waiter_is_woken_by_a_release_elsewhere);
    tcase_add_test(tc, the_count_is_never_exceeded_by_several_processes);
    tcase_add_test(tc, expiring_permits_have_ids_and_a_lease);
    tcase_add_test(tc, an_expired_permit_comes_back_and_its_holder_is_told);
    tcase_add_test(tc, a_killed_holders_permit_returns_after_its_lease);
    tcase_add_test(tc, redisson_layouts_are_shared);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_main(semaphore_suite());
}
