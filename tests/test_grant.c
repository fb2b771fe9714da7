/* SPDX-License-Identifier: BSD-3-Clause */
/* test_grant.c -- what an acquire may count as a grant, and what undoing
 * one may touch: the cleanup of a late attempt drops that attempt's own
 * hold and never a later attempt's, and a grant that arrives after its
 * lease could have run out is undone and reported as not acquired; the
 * holds an unanswered release may have left are not dropped twice. Each
 * test fails without the fix it is named after. */
#include "testutil.h"
#include "proxy.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tp_proxy *proxy;
static struct hilock_client *client, *other;
static struct tu_result res[4];
static struct rs_server *more[2]; /* masters beside tu_srv */

static void setup(void)
{
    tu_setup();
    proxy = NULL;
    client = other = NULL;
    memset(res, 0, sizeof res);
}

static void teardown(void)
{
    if (tu_srv)
        rs_resume(tu_srv);
    hilock_client_free(client);
    hilock_client_free(other);
    client = other = NULL;
    tp_free(proxy);
    proxy = NULL;
    for (int i = 0; i < 2; i++) {
        rs_stop(more[i]);
        more[i] = NULL;
    }
    tu_teardown();
}

/* Options of the clients here: request_ms requests, through the proxy
 * when there is one. */
static void options(struct hilock_options *o, int request_ms)
{
    tu_options(o);
    if (proxy)
        o->node.port = tp_port(proxy);
    o->request_timeout_ms = (uint32_t)request_ms;
    o->reconnect_min_ms = 20;
    o->reconnect_max_ms = 200;
}

static void await(struct tu_result *r, int n, int timeout_ms, const char *what)
{
    ck_assert_msg(tu_run_until_count(&r->calls, n, timeout_ms),
                  "%s: no callback within %d ms", what, timeout_ms);
}

/* Another client, straight to Redis, tries to take name once: a lock
 * (side < 0) or that side of a read-write lock. */
static int other_takes(const char *name, int side)
{
    struct tp_proxy *px = proxy;
    proxy = NULL;
    if (!other) {
        struct hilock_options o;
        options(&o, tu_ms(2000));
        other = tu_client(&o);
    }
    proxy = px;
    struct hilock_lock *l = side < 0 ? tu_lock(other, name, 99)
                                     : tu_rwlock(other, name, 99, side);
    return tu_acquire(l, 0, 30000, NULL);
}

/* The first attempt of a waiting acquire is applied, its reply is held
 * past the request timeout and its hold runs out meanwhile; the retry
 * takes the lock afresh and reports it. The first attempt's reply then
 * comes, late: its cleanup must find that its own hold is gone and leave
 * the retry's alone. scripts_only: the first attempt is the acquire
 * script, else the plain RESTORE; fair: both are fair mode's; side: a
 * lock (-1) or that side of a read-write lock. */
static void late_cleanup_keeps_the_retry(int scripts_only, int fair,
                                         int side)
{
    int lease = tu_ms(400), request_ms = tu_ms(1200);
    struct hilock_result held;
    proxy = tp_new(tu_base, rs_port(tu_srv));
    ck_assert_ptr_nonnull(proxy);
    struct hilock_options o;
    options(&o, request_ms);
    o.scripts_only = scripts_only;
    o.fair = fair;
    client = tu_client(&o);
    struct hilock_lock *l = side < 0 ? tu_lock(client, "late", 1)
                                     : tu_rwlock(client, "late", 1, side);
    char field[80];
    tu_field(client, 1, field);
    strcat(field, side == HILOCK_WRITE ? ":write" : "");
    tu_client_ready(client);
    tp_hold_replies(proxy, true);
    tu_assert_status(hilock_lock_acquire(l, (uint64_t)tu_ms(10000),
                                         (uint64_t)lease, tu_record, &res[0]),
                     0);
    ck_assert_msg(tu_run_until_redis(1, tu_ms(2000), "EXISTS", "late",
                                     (char *)NULL),
                  "the first attempt never reached Redis");
    ck_assert_msg(tu_run_until_redis(0, tu_ms(3000), "EXISTS", "late",
                                     (char *)NULL),
                  "the first attempt's hold never ran out");
    ck_assert_int_eq(res[0].calls, 0);
    ck_assert_msg(tu_run_until_redis(1, 2 * request_ms, "EXISTS", "late",
                                     (char *)NULL),
                  "no retry took the lock");
    tp_hold_replies(proxy, false);
    await(&res[0], 1, tu_ms(3000), "acquire");
    tu_assert_status(res[0].status, 0);
    /* asked after the late attempt's cleanup went out: answered after it */
    tu_assert_status(tu_query(hilock_lock_query_held, l, &held), 0);
    ck_assert_int_eq(held.held, 1);
    ck_assert_int_eq(rs_int(tu_srv, "HGET", "late", field, (char *)NULL), 1);
    ck_assert_uint_eq(hilock_lock_hold_count(l), 1);
    /* another reader would share it: a writer is refused */
    tu_assert_status(other_takes("late", side == HILOCK_READ ? HILOCK_WRITE
                                                             : side),
                     HILOCK_EBUSY);
}

START_TEST(late_script_attempt_cleanup_keeps_the_retrys_hold)
{
    late_cleanup_keeps_the_retry(1, 0, -1);
}
END_TEST

START_TEST(late_restore_attempt_cleanup_keeps_the_retrys_hold)
{
    late_cleanup_keeps_the_retry(0, 0, -1);
}
END_TEST

/* Fair mode: the late attempt's undo goes by its request id too, and
 * leaves the hold the retry began. */
START_TEST(late_fair_attempt_cleanup_keeps_the_retrys_hold)
{
    late_cleanup_keeps_the_retry(1, 1, -1);
}
END_TEST

/* A writer's late attempt is undone by its request id too. */
START_TEST(late_write_attempt_cleanup_keeps_the_retrys_hold)
{
    late_cleanup_keeps_the_retry(1, 0, HILOCK_WRITE);
}
END_TEST

/* A reader's late attempt is undone by its request id too. */
START_TEST(late_read_attempt_cleanup_keeps_the_retrys_hold)
{
    late_cleanup_keeps_the_retry(1, 0, HILOCK_READ);
}
END_TEST

/* Requests of client completed so far (replies, deadlines, failures). */
static uint64_t completed(void)
{
    struct hilock_stats st;
    uint64_t n = 0;
    ck_assert_int_eq(hilock_client_stats(client, &st, sizeof st), 0);
    for (int i = 0; i < HILOCK_HIST_BUCKETS; i++)
        n += st.request_us[i];
    return n;
}

struct after {
    uint64_t done;
};

/* One more request timed out, and the next attempt is on its way. */
static bool next_attempt_sent(void *arg)
{
    struct after *a = arg;
    struct hilock_stats st;
    ck_assert_int_eq(hilock_client_stats(client, &st, sizeof st), 0);
    return completed() > a->done && st.requests_inflight > 0;
}

/* Attempts pile up: the first one's hold runs out while its reply is
 * held, then Redis stops; the second and third wait in its socket, the
 * second past its deadline. Redis runs them together: the second takes
 * the lock afresh, the third re-enters. The first attempt's cleanup must
 * drop nothing, the second's must drop the second's hold: one hold is
 * left, the third's. */
START_TEST(piled_up_attempts_leave_exactly_the_reported_hold)
{
    int lease = tu_ms(400), request_ms = tu_ms(1200);
    struct hilock_result count;
    proxy = tp_new(tu_base, rs_port(tu_srv));
    ck_assert_ptr_nonnull(proxy);
    struct hilock_options o;
    options(&o, request_ms);
    client = tu_client(&o);
    struct hilock_lock *l = tu_lock(client, "pile", 1);
    tu_client_ready(client);
    tp_hold_replies(proxy, true);
    tu_assert_status(hilock_lock_acquire(l, (uint64_t)tu_ms(10000),
                                         (uint64_t)lease, tu_record, &res[0]),
                     0);
    ck_assert(tu_run_until_redis(1, tu_ms(2000), "EXISTS", "pile",
                                 (char *)NULL));
    ck_assert(tu_run_until_redis(0, tu_ms(3000), "EXISTS", "pile",
                                 (char *)NULL));
    ck_assert_int_eq(rs_pause(tu_srv), 0);
    struct after a = {completed()};
    ck_assert_msg(tu_run_until(next_attempt_sent, &a, 2 * request_ms),
                  "no second attempt");
    a.done = completed();
    ck_assert_msg(tu_run_until(next_attempt_sent, &a, 2 * request_ms),
                  "no third attempt");
    ck_assert_int_eq(res[0].calls, 0);
    ck_assert_int_eq(rs_resume(tu_srv), 0);
    tp_hold_replies(proxy, false);
    await(&res[0], 1, tu_ms(3000), "acquire");
    tu_assert_status(res[0].status, 0);
    tu_assert_status(tu_query(hilock_lock_query_count, l, &count), 0);
    ck_assert_int_eq(count.holds, 1);
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert_int_eq(tu_exists("pile"), 0);
}
END_TEST

/* A release gets no answer (Redis stopped): the handle's hold ended for
 * it, but Redis may still hold it. The next acquire's first attempt waits
 * in the same socket past its deadline, the retry too, both behind the
 * release. Redis runs them in order: the release frees the lock, the
 * first attempt takes it afresh, the retry re-enters and reports two
 * holds. The extra hold is the first attempt's, dropped by its late
 * undo, not the unanswered release's: one hold is left, the reported
 * one. */
START_TEST(attempts_after_an_unanswered_release_leave_the_reported_hold)
{
    int request_ms = tu_ms(600);
    struct hilock_result count;
    struct hilock_options o;
    options(&o, request_ms);
    o.scripts_only = 1;
    client = tu_client(&o);
    struct hilock_lock *l = tu_lock(client, "unrel", 1);
    tu_client_ready(client);
    tu_assert_status(tu_acquire(l, 0, (uint64_t)tu_ms(30000), NULL), 0);
    ck_assert_int_eq(rs_pause(tu_srv), 0);
    tu_assert_status(hilock_lock_release(l, tu_record, &res[1]), 0);
    await(&res[1], 1, 2 * request_ms, "release");
    tu_assert_status(res[1].status, HILOCK_ETIMEDOUT);
    struct after a = {completed()};
    tu_assert_status(hilock_lock_acquire(l, (uint64_t)tu_ms(10000),
                                         (uint64_t)tu_ms(30000), tu_record,
                                         &res[0]),
                     0);
    ck_assert_msg(tu_run_until(next_attempt_sent, &a, 2 * request_ms),
                  "no second attempt");
    ck_assert_int_eq(res[0].calls, 0);
    ck_assert_int_eq(rs_resume(tu_srv), 0);
    await(&res[0], 1, tu_ms(3000), "acquire");
    tu_assert_status(res[0].status, 0);
    tu_run_quiet();
    tu_assert_status(tu_query(hilock_lock_query_count, l, &count), 0);
    ck_assert_int_eq(count.holds, 1);
    ck_assert_int_eq(tu_holds("unrel", client, 1), 1);
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert_int_eq(tu_exists("unrel"), 0);
}
END_TEST

/* Run the loop once without blocking: a request made outside the loop is
 * written, no reply is read yet. Then wait, the loop not running, until
 * Redis has granted name: the grant is on its way back, unread. */
static void send_then_stall_until_granted(const char *name)
{
    event_base_loop(tu_base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    ck_assert_int_eq(res[0].calls, 0);
    long long deadline = tu_now_ms() + tu_ms(2000);
    while (rs_int(tu_srv, "EXISTS", name, (char *)NULL) != 1) {
        ck_assert_msg(tu_now_ms() < deadline, "the request never arrived");
        rs_sleep_ms(1);
    }
}

/* The busy loop goes on past the lease: the grant runs out, another
 * owner takes the lock, and only then does the loop read the grant. It
 * must not be reported: a lease that ran out is no lock. status: what the
 * acquire must end with; lease_ms 0: under the watchdog (its lease is
 * the one checked). */
static void grant_read_after_its_lease_on(int side, uint64_t wait_ms,
                                          uint32_t lease_ms, int status)
{
    int lease = lease_ms ? (int)lease_ms : tu_ms(1000);
    struct hilock_options o;
    options(&o, tu_ms(20000)); /* the request does not time out */
    o.watchdog_lease_ms = (uint32_t)lease;
    client = tu_client(&o);
    struct hilock_lock *l = NULL;
    if (side)
        tu_assert_status(hilock_rwlock_new(client, "slow", 4, 1, side, &l), 0);
    else
        l = tu_lock(client, "slow", 1);
    tu_client_ready(client);
    long long t0 = tu_now_ms(); /* not before the request was made */
    tu_assert_status(hilock_lock_acquire(l, wait_ms, lease_ms, tu_record,
                                         &res[0]),
                     0);
    send_then_stall_until_granted("slow");
    /* the stall lasts one and a half leases; the lock runs out and
     * another owner takes it */
    rs_sleep_ms((int)(t0 + lease * 3 / 2 - tu_now_ms()));
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "slow", (char *)NULL), 0);
    ck_assert_int_eq(rs_int(tu_srv, "HSET", "slow", "another:1", "1",
                            (char *)NULL),
                     1);
    ck_assert_int_eq(rs_int(tu_srv, "PEXPIRE", "slow", "60000",
                            (char *)NULL),
                     1);
    await(&res[0], 1, (int)wait_ms + tu_ms(3000), "acquire");
    tu_assert_status(res[0].status, status);
    ck_assert_uint_eq(hilock_lock_hold_count(l), 0);
    tu_run_quiet();
    ck_assert_int_eq(res[0].calls, 1);
    ck_assert_int_eq(tu_owner_fields("slow"), 1);
    ck_assert_int_eq(rs_int(tu_srv, "HGET", "slow", "another:1",
                            (char *)NULL),
                     1);
}

static void grant_read_after_its_lease(uint64_t wait_ms, uint32_t lease_ms,
                                       int status)
{
    grant_read_after_its_lease_on(0, wait_ms, lease_ms, status);
}

START_TEST(grant_read_after_its_lease_is_not_acquired)
{
    grant_read_after_its_lease(0, (uint32_t)tu_ms(1000), HILOCK_ETIMEDOUT);
}
END_TEST

START_TEST(watchdog_grant_read_after_its_lease_is_not_acquired)
{
    grant_read_after_its_lease(0, 0, HILOCK_ETIMEDOUT);
}
END_TEST

/* The same for the other kinds with a lease: a read-write lock's sides. */
START_TEST(write_grant_read_after_its_lease_is_not_acquired)
{
    grant_read_after_its_lease_on(HILOCK_WRITE, 0, (uint32_t)tu_ms(1000),
                                  HILOCK_ETIMEDOUT);
}
END_TEST

START_TEST(read_grant_read_after_its_lease_is_not_acquired)
{
    grant_read_after_its_lease_on(HILOCK_READ, 0, (uint32_t)tu_ms(1000),
                                  HILOCK_ETIMEDOUT);
}
END_TEST

/* With a wait, the late grant is undone and the wait goes on: the next
 * attempt finds the other owner, and the wait ends at its deadline. */
START_TEST(waiting_grant_read_after_its_lease_waits_on)
{
    grant_read_after_its_lease((uint64_t)tu_ms(2500), (uint32_t)tu_ms(1000),
                               HILOCK_ETIMEDOUT);
}
END_TEST

/* The grant is still undone when nobody took the lock meanwhile: the
 * undo (by the attempt's request id) takes it away, and the wait's next
 * attempt takes it again with a lease of its own. */
START_TEST(late_grant_is_undone_and_the_wait_takes_the_lock_again)
{
    int lease = tu_ms(600);
    struct hilock_result ttl;
    struct hilock_options o;
    options(&o, tu_ms(20000));
    client = tu_client(&o);
    struct hilock_lock *l = tu_lock(client, "again", 1);
    tu_client_ready(client);
    long long t0 = tu_now_ms();
    tu_assert_status(hilock_lock_acquire(l, (uint64_t)tu_ms(5000),
                                         (uint64_t)lease, tu_record, &res[0]),
                     0);
    send_then_stall_until_granted("again");
    /* the grant's own lease is made long: only the undo removes it */
    ck_assert_int_eq(rs_int(tu_srv, "PEXPIRE", "again", "60000",
                            (char *)NULL),
                     1);
    rs_sleep_ms((int)(t0 + lease * 3 / 2 - tu_now_ms()));
    await(&res[0], 1, tu_ms(5000), "acquire");
    tu_assert_status(res[0].status, 0);
    ck_assert_uint_eq(hilock_lock_hold_count(l), 1);
    ck_assert_int_eq(tu_holds("again", client, 1), 1);
    tu_assert_status(tu_query(hilock_lock_query_ttl, l, &ttl), 0);
    ck_assert_msg(ttl.ttl_ms > 0 && ttl.ttl_ms <= lease,
                  "pttl %lld: not the new lease", (long long)ttl.ttl_ms);
}
END_TEST

static bool nothing_in_flight(void *arg)
{
    (void)arg;
    struct hilock_stats st;
    ck_assert_int_eq(hilock_client_stats(client, &st, sizeof st), 0);
    return st.requests_inflight == 0;
}

/* Three masters: the test's server and two more, the last one behind the
 * proxy. On it an acquire and the release after it never arrive (held,
 * then cut with the connection), both long finished by the majority.
 * After the reconnect the acquire must not be sent again: granted now, it
 * would hold that master for its whole lease after the release. */
START_TEST(finished_acquire_is_not_sent_again_after_a_drop)
{
    struct hilock_result held;
    for (int i = 0; i < 2; i++) {
        more[i] = tu_server_start(NULL);
        ck_assert_ptr_nonnull(more[i]);
    }
    proxy = tp_new(tu_base, rs_port(more[1]));
    ck_assert_ptr_nonnull(proxy);
    struct hilock_endpoint eps[3] = {
        {"127.0.0.1", rs_port(tu_srv), NULL},
        {"127.0.0.1", rs_port(more[0]), NULL},
        {"127.0.0.1", tp_port(proxy), NULL}};
    struct hilock_options o;
    options(&o, tu_ms(1000));
    o.node.port = 0;
    o.topology = HILOCK_TOPOLOGY_REDLOCK;
    o.redlock.masters = eps;
    o.redlock.count = 3;
    client = tu_client(&o);
    struct hilock_lock *l = tu_lock(client, "rl", 1);
    tu_assert_status(tu_query(hilock_lock_query_held, l, &held), 0);
    tp_blackhole(proxy, true);
    tu_assert_status(tu_acquire(l, 0, 20000, NULL), 0);
    tu_assert_status(tu_release(l, NULL), 0);
    /* the third master's requests end at their deadlines */
    ck_assert(tu_run_until(nothing_in_flight, NULL, tu_ms(5000)));
    tp_cut_all(proxy);
    tp_blackhole(proxy, false);
    /* asked after the reconnect: answered after whatever went again */
    tu_assert_status(tu_query(hilock_lock_query_held, l, &held), 0);
    ck_assert_int_eq(held.held, 0);
    tu_run_quiet();
    ck_assert_msg(rs_int(more[1], "EXISTS", "rl", (char *)NULL) == 0,
                  "the finished acquire was granted after the release "
                  "(PTTL %lld)",
                  rs_int(more[1], "PTTL", "rl", (char *)NULL));
    for (int i = 0; i < 2; i++) {
        rs_stop(more[i]);
        more[i] = NULL;
    }
}
END_TEST

/* One node behind the proxy: an acquire that never arrives (held, then
 * cut with its connection) ends at its deadline. After the reconnect it
 * must not go again: its undo goes in its place. Sent again it would take
 * the free lock, drawing a fencing token, before its late success were
 * undone. fair: in fair mode; side: a lock (-1) or a read-write side. */
static void decided_attempt_is_not_sent_again(int fair, int side)
{
    struct hilock_result held;
    proxy = tp_new(tu_base, rs_port(tu_srv));
    ck_assert_ptr_nonnull(proxy);
    struct hilock_options o;
    options(&o, tu_ms(500));
    o.scripts_only = 1;
    o.fencing = side < 0;
    o.fair = fair;
    client = tu_client(&o);
    struct hilock_lock *l = side < 0 ? tu_lock(client, "cut", 1)
                                     : tu_rwlock(client, "cut", 1, side);
    tu_client_ready(client);
    tp_blackhole(proxy, true);
    tu_assert_status(tu_acquire(l, 0, 20000, NULL), HILOCK_ETIMEDOUT);
    tp_cut_all(proxy);
    tp_blackhole(proxy, false);
    /* asked after the reconnect: answered after whatever went again */
    tu_assert_status(tu_query(hilock_lock_query_held, l, &held), 0);
    ck_assert_int_eq(held.held, 0);
    tu_run_quiet();
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "cut", (char *)NULL), 0);
    if (side < 0)
        ck_assert_msg(tu_fence("cut") <= 0,
                      "the finished acquire went again and drew a token");
}

START_TEST(decided_fair_attempt_is_not_sent_again_after_a_drop)
{
    decided_attempt_is_not_sent_again(1, -1);
}
END_TEST

START_TEST(decided_write_attempt_is_not_sent_again_after_a_drop)
{
    decided_attempt_is_not_sent_again(0, HILOCK_WRITE);
}
END_TEST

START_TEST(decided_read_attempt_is_not_sent_again_after_a_drop)
{
    decided_attempt_is_not_sent_again(0, HILOCK_READ);
}
END_TEST

static Suite *grant_suite(void)
{
    const TTest *const tests[] = {
        late_script_attempt_cleanup_keeps_the_retrys_hold,
        late_restore_attempt_cleanup_keeps_the_retrys_hold,
        late_fair_attempt_cleanup_keeps_the_retrys_hold,
        late_write_attempt_cleanup_keeps_the_retrys_hold,
        late_read_attempt_cleanup_keeps_the_retrys_hold,
        piled_up_attempts_leave_exactly_the_reported_hold,
        attempts_after_an_unanswered_release_leave_the_reported_hold,
        grant_read_after_its_lease_is_not_acquired,
        watchdog_grant_read_after_its_lease_is_not_acquired,
        write_grant_read_after_its_lease_is_not_acquired,
        read_grant_read_after_its_lease_is_not_acquired,
        waiting_grant_read_after_its_lease_waits_on,
        late_grant_is_undone_and_the_wait_takes_the_lock_again,
        finished_acquire_is_not_sent_again_after_a_drop,
        decided_fair_attempt_is_not_sent_again_after_a_drop,
        decided_write_attempt_is_not_sent_again_after_a_drop,
        decided_read_attempt_is_not_sent_again_after_a_drop,
    };
    return tu_suite("grant", setup, teardown, 30, tests,
                    sizeof tests / sizeof tests[0]);
}

int main(void)
{
    return tu_main(grant_suite());
}
