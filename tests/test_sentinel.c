/* SPDX-License-Identifier: BSD-3-Clause */
/* test_sentinel.c -- hilock behind Redis Sentinel (a master, one replica,
 * three sentinels, started by tests/redis_sentinel.c): the master found
 * past a dead sentinel and one that answers garbage, an unknown master
 * name, the client following a failover with a lock held and a waiter
 * parked, a lock whose write did not survive a failover reported lost at
 * once, WAIT, a frozen sentinel skipped after its timeout, a lying one
 * outvoted, and a failover followed while a sentinel is frozen.
 *
 * Each test starts its own deployment. */
#include "testutil.h"

#include "redis_sentinel.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct rt_sentinel *dep;
static struct hilock_client *client, *client2;
static struct hilock_endpoint sentinels[5];

static void setup(void)
{
    tu_setup_no_redis();
    dep = rt_start(1, 3, "locks");
    ck_assert_ptr_nonnull(dep);
    client = client2 = NULL;
}

static void teardown(void)
{
    hilock_client_free(client);
    hilock_client_free(client2);
    client = client2 = NULL;
    rt_stop(dep);
    dep = NULL;
    tu_teardown();
}

/* Options for the deployment: a dead sentinel first when dead_first. */
static void sentinel_options(struct hilock_options *o, bool dead_first)
{
    size_t n = 0;
    tu_options(o);
    if (dead_first)
        sentinels[n++] =
            (struct hilock_endpoint){"127.0.0.1", tu_dead_port(), NULL};
    for (int i = 0; i < rt_sentinel_count(dep); i++)
        sentinels[n++] = (struct hilock_endpoint){
            "127.0.0.1", rt_sentinel_port(dep, i), NULL};
    o->topology = HILOCK_TOPOLOGY_SENTINEL;
    o->sentinel.nodes = sentinels;
    o->sentinel.count = n;
    o->sentinel.master_name = "locks";
}

static struct hilock_client *sentinel_client(void)
{
    struct hilock_options o;
    sentinel_options(&o, false);
    struct hilock_client *c = tu_client(&o);
    tu_client_ready(c);
    return c;
}

/* EXISTS key on data node i. */
static long long exists_on(int i, const char *key)
{
    return rs_int(rt_server(dep, i), "EXISTS", key, (char *)NULL);
}

/* The first "sentinel" refuses connections, the second is a plain Redis
 * that answers SENTINEL with an error: both are skipped. */
START_TEST(master_is_found_past_a_dead_and_a_wrong_sentinel)
{
    struct hilock_options o;
    sentinel_options(&o, true);
    memmove(sentinels + 2, sentinels + 1, 3 * sizeof(sentinels[0]));
    sentinels[1] = (struct hilock_endpoint){"127.0.0.1", rt_server_port(dep, 1),
                                            NULL};
    o.sentinel.count++;
    client = tu_client(&o);
    tu_client_ready(client);
    struct hilock_lock *l = tu_lock(client, "found", 0);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    ck_assert_int_eq(exists_on(rt_master(dep), "found"), 1);
    tu_assert_status(tu_release(l, NULL), 0);
}
END_TEST

/* No sentinel knows the name: requests fail with ECONN once every
 * sentinel was asked, well before their deadline, and the state callback
 * says why. */
START_TEST(unknown_master_name_fails_with_econn)
{
    struct hilock_options o;
    sentinel_options(&o, false);
    o.sentinel.master_name = "nobody";
    o.request_timeout_ms = 10000;
    client = tu_client(&o);
    struct hilock_lock *l = tu_lock(client, "nowhere", 0);
    long long t0 = tu_now_ms();
    tu_assert_status(tu_acquire(l, 0, 0, NULL), HILOCK_ECONN);
    ck_assert_int_lt(tu_now_ms() - t0, 5000);
    ck_assert(tu_run_until_state(client, HILOCK_STATE_DOWN, tu_ms(5000)));
    struct hilock_client *c;
    o.sentinel.master_name = "two words";
    ck_assert_int_eq(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
    o.sentinel.master_name = NULL;
    ck_assert_int_eq(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
}
END_TEST

struct numsub_at {
    struct rs_server *srv;
    long long n;
};

/* Whether the channel of lock "moved" has n subscribers on srv. */
static bool numsub_is(void *arg)
{
    struct numsub_at *at = arg;
    return rs_numsub(at->srv, "redisson_lock__channel:{moved}") == at->n;
}

/* SENTINEL FAILOVER while a lock is held under the watchdog and another
 * client waits for it: the client moves to the new master within a bound,
 * the hold survives (the replica had it), the waiter subscribes again on
 * the new master and gets the lock after the release. */
START_TEST(failover_is_followed_with_a_lock_held_and_a_waiter_parked)
{
    struct tu_result lost = {0}, got = {0};
    struct hilock_options o;
    sentinel_options(&o, false);
    o.watchdog_lease_ms = 1500;
    client = tu_client(&o);
    tu_client_ready(client);
    client2 = sentinel_client();
    struct hilock_lock *held = tu_lock(client, "moved", 0);
    struct hilock_lock *waiter = tu_lock(client2, "moved", 0);
    hilock_lock_on_lost(held, tu_record, &lost);
    tu_assert_status(tu_acquire(held, 0, 0, NULL), 0);
    ck_assert_int_eq(hilock_lock_acquire(waiter, 30000, 0, tu_record, &got),
                     0);
    int old = rt_master(dep);
    /* The replica must have the lock before it is promoted. */
    tu_run_for(200);
    int ups = tu_ups(client);
    char *ok = rs_str(rt_sentinel_server(dep, 0), "SENTINEL", "FAILOVER",
                      "locks", (char *)NULL);
    ck_assert_ptr_nonnull(ok);
    free(ok);
    long long t0 = tu_now_ms();
    int now = old;
    while ((now == old || now < 0) && tu_now_ms() - t0 < tu_ms(15000)) {
        tu_run_for(100);
        now = rt_master(dep);
    }
    ck_assert_int_ne(now, old);
    ck_assert(tu_run_until_up(client, ups + 1, tu_ms(10000)));
    tu_run_for(1000); /* renewals on the new master */
    ck_assert_int_eq(lost.calls, 0);
    ck_assert_int_eq(got.calls, 0);
    ck_assert_int_eq(exists_on(now, "moved"), 1);
    /* the waiter listens on the new master */
    struct numsub_at at = {rt_server(dep, now), 1};
    ck_assert(tu_run_until(numsub_is, &at, tu_ms(5000)));
    tu_assert_status(tu_release(held, NULL), 0);
    ck_assert(tu_run_until_count(&got.calls, 1, tu_ms(5000)));
    tu_assert_status(got.status, 0);
    ck_assert_int_eq(exists_on(now, "moved"), 1);
    tu_assert_status(tu_release(waiter, NULL), 0);
}
END_TEST

/* A write that did not survive the failover: the master is killed and a
 * replica promoted while the client's loop does not run, and the lock is
 * taken out of the new master (as if its write never reached the
 * replica). The client reconnects there, verifies its locks and reports
 * this one lost at once -- not at its next renewal, a third of a 30 s
 * lease later. */
START_TEST(lock_lost_in_a_failover_is_reported_at_once)
{
    struct tu_result lost = {0};
    client = sentinel_client();
    struct hilock_lock *l = tu_lock(client, "gone", 0);
    hilock_lock_on_lost(l, tu_record, &lost);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0); /* 30 s watchdog lease */
    int now = rt_kill_master(dep);
    ck_assert_int_ge(now, 0);
    ck_assert_int_eq(exists_on(now, "gone"), 1);
    ck_assert_int_eq(rs_int(rt_server(dep, now), "DEL", "gone", (char *)NULL),
                     1);
    long long t0 = tu_now_ms();
    ck_assert(tu_run_until_count(&lost.calls, 1, tu_ms(8000)));
    ck_assert_int_lt(tu_now_ms() - t0, 8000);
    tu_assert_status(lost.status, HILOCK_ELOST);
}
END_TEST

/* WAIT 1: an acquisition is reported once the replica has it; with the
 * replica frozen it fails with ENOREPLICA and is undone. */
START_TEST(wait_for_a_replica_confirms_or_undoes_an_acquisition)
{
    struct hilock_options o;
    sentinel_options(&o, false);
    o.wait_replicas = 1;
    o.wait_timeout_ms = 300;
    client = tu_client(&o);
    tu_client_ready(client);
    struct hilock_lock *l = tu_lock(client, "waited", 0);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    int master = rt_master(dep), replica = master == 0 ? 1 : 0;
    ck_assert_int_eq(exists_on(replica, "waited"), 1);
    tu_assert_status(tu_release(l, NULL), 0);

    ck_assert_int_eq(rs_pause(rt_server(dep, replica)), 0);
    long long t0 = tu_now_ms();
    tu_assert_status(tu_acquire(l, 0, 0, NULL), HILOCK_ENOREPLICA);
    ck_assert_int_ge(tu_now_ms() - t0, 250);
    tu_run_quiet();
    ck_assert_int_eq(exists_on(master, "waited"), 0); /* undone */
    ck_assert_int_eq(rs_resume(rt_server(dep, replica)), 0);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    tu_assert_status(tu_release(l, NULL), 0);
}
END_TEST

/* The first of two sentinels is frozen: the client asks the other too
 * and takes its answer once the frozen one's timeout has passed. Then a
 * sentinel that names another server (one of a second deployment, under
 * the same master name) is outvoted by the two that name the master: no
 * lock is ever taken on the wrong server. */
START_TEST(frozen_sentinel_is_skipped_and_a_lying_one_outvoted)
{
    struct hilock_options o;
    tu_options(&o);
    sentinels[0] = (struct hilock_endpoint){"127.0.0.1",
                                            rt_sentinel_port(dep, 0), NULL};
    sentinels[1] = (struct hilock_endpoint){"127.0.0.1",
                                            rt_sentinel_port(dep, 1), NULL};
    o.topology = HILOCK_TOPOLOGY_SENTINEL;
    o.sentinel.nodes = sentinels;
    o.sentinel.count = 2;
    o.sentinel.master_name = "locks";
    o.request_timeout_ms = 5000; /* outlasts a sentinel's (connect) timeout */
    ck_assert_int_eq(rs_pause(rt_sentinel_server(dep, 0)), 0);
    client = tu_client(&o);
    struct hilock_lock *l = tu_lock(client, "truth", 0);
    long long t0 = tu_now_ms();
    int rc = tu_acquire(l, 0, 0, NULL);
    long long took = tu_now_ms() - t0;
    ck_assert_int_eq(rs_resume(rt_sentinel_server(dep, 0)), 0);
    tu_assert_status(rc, 0);
    ck_assert_int_lt(took, tu_ms(4000)); /* one sentinel timeout: 1.5 s */
    ck_assert_int_eq(exists_on(rt_master(dep), "truth"), 1);
    tu_assert_status(tu_release(l, NULL), 0);

    struct rt_sentinel *other = rt_start(0, 1, "locks");
    ck_assert_ptr_nonnull(other);
    sentinels[2] = sentinels[1];
    sentinels[1] = sentinels[0];
    sentinels[0] = (struct hilock_endpoint){
        "127.0.0.1", rt_sentinel_port(other, 0), NULL};
    o.sentinel.count = 3;
    client2 = tu_client(&o);
    struct hilock_lock *l2 = tu_lock(client2, "truth", 0);
    rc = tu_acquire(l2, 0, 0, NULL);
    long long wrong = rs_int(rt_server(other, 0), "EXISTS", "truth",
                             (char *)NULL);
    rt_stop(other);
    tu_assert_status(rc, 0);
    ck_assert_int_eq(wrong, 0);
    ck_assert_int_eq(exists_on(rt_master(dep), "truth"), 1);
    tu_assert_status(tu_release(l2, NULL), 0);
}
END_TEST

/* The master that sentinel i names now (index of a data node), or -1. */
static int named_by(int i)
{
    redisReply *r = rs_command_argv(
        rt_sentinel_server(dep, i), 3,
        (const char *[]){"SENTINEL", "get-master-addr-by-name", "locks"},
        NULL);
    int port = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2
                   ? atoi(r->element[1]->str)
                   : -1;
    freeReplyObject(r);
    for (int k = 0; k < rt_server_count(dep); k++)
        if (rt_server_port(dep, k) == port)
            return k;
    return -1;
}

/* A failover while the first sentinel is frozen: the other two announce
 * the new master and name it, and the client follows within
 * down-after + failover timeout + one sentinel timeout. */
START_TEST(failover_is_followed_while_a_sentinel_is_frozen)
{
    client = sentinel_client();
    struct hilock_lock *l = tu_lock(client, "followed", 0);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    tu_assert_status(tu_release(l, NULL), 0);
    int old = rt_master(dep);
    ck_assert_int_eq(rs_pause(rt_sentinel_server(dep, 0)), 0);
    free(rs_str(rt_sentinel_server(dep, 1), "SENTINEL", "FAILOVER", "locks",
                (char *)NULL));
    long long t0 = tu_now_ms(), bound = tu_ms(RT_DOWN_AFTER_MS +
                                              RT_FAILOVER_TIMEOUT_MS + 1500);
    int now = old, rc = HILOCK_ETIMEDOUT, done = 0;
    while (!done && tu_now_ms() - t0 < bound + tu_ms(5000)) {
        tu_run_for(50);
        if (now == old || now < 0) {
            now = named_by(1);
            continue;
        }
        rc = tu_acquire(l, 0, 0, NULL);
        done = rc == 0 && exists_on(now, "followed") == 1;
        if (rc == 0 && !done) { /* the old master, not demoted yet */
            /* The client may move to the new master before this release
             * goes, which then does not find the hold taken on the old
             * one: the failover lost it, which is the test's point. */
            int rel = tu_release(l, NULL);
            if (rel != HILOCK_ENOTOWNER)
                tu_assert_status(rel, 0);
        }
    }
    long long took = tu_now_ms() - t0;
    ck_assert_int_eq(rs_resume(rt_sentinel_server(dep, 0)), 0);
    ck_assert_msg(done, "not taken on the new master; last: %s",
                  hilock_err_name(rc));
    ck_assert_int_lt(took, bound);
    tu_assert_status(tu_release(l, NULL), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sentinel");
    TCase *tc = tcase_create("sentinel");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, master_is_found_past_a_dead_and_a_wrong_sentinel);
    tcase_add_test(tc, unknown_master_name_fails_with_econn);
    tcase_add_test(tc,
                   failover_is_followed_with_a_lock_held_and_a_waiter_parked);
    tcase_add_test(tc, lock_lost_in_a_failover_is_reported_at_once);
    tcase_add_test(tc, wait_for_a_replica_confirms_or_undoes_an_acquisition);
    tcase_add_test(tc, frozen_sentinel_is_skipped_and_a_lying_one_outvoted);
    tcase_add_test(tc, failover_is_followed_while_a_sentinel_is_frozen);
    suite_add_tcase(s, tc);
    return tu_main(s);
}
