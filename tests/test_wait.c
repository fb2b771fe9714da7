/* SPDX-License-Identifier: BSD-3-Clause */
/* test_wait.c -- waiting for a busy lock, against a real Redis.
 *
 * What DESIGN.md "Waiting" promises, each checked where it could break:
 * a release wakes waiters on other clients through the channel message and
 * waiters on the holder's own client without it; an expiry (which publishes
 * nothing) is caught by the fallback timer; the waiters of one name on one
 * client share one subscription and are served once each in FIFO order, a
 * new local acquire queues behind them; deadline and cancel end a wait once;
 * a success that arrives after a cancel is released; a killed subscriber
 * connection is re-subscribed and no waiter is lost.
 *
 * Timing bounds are generous: each one separates the path under test from
 * the next slower path (a fallback of 10 s or more, a deadline of 5 s or a
 * reconnect of at least 1 s), not from a fast machine. Under valgrind the
 * bounds stretch with CK_TIMEOUT_MULTIPLIER, and so do the leases and
 * reconnect delays of those slower paths, so that they stay apart. */
#include "testutil.h"

#include <string.h>
#include <time.h>

#include "proxy.h"

#define MAX_WAITERS 50

/* The monotonic clock in us (the library's yield is a few ms). */
static long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
#define WAITER_LEASE_MS 10000 /* before tu_ms() */
#define HOLDER_LEASE_MS 30000 /* before tu_ms() */

/* One waiting handle: what its acquire and release callbacks saw. */
struct waiter {
    struct hilock_lock *lock;
    int idx;
    int acq_calls;
    int acq_status;
    long long acq_at_ms;
    long long acq_at_us; /* now_us() */
    long long rel_at_us;
    int rel_calls;
    int rel_status;
    int rel_rc; /* hilock_lock_release's return, issued in the callback */
};

static struct hilock_client *a, *b;
static struct waiter ws[MAX_WAITERS];
static int order[MAX_WAITERS]; /* waiter indexes in the order served */
static int served;             /* acquisitions, all waiters */
static int holding;            /* local holders right now */
static int overlaps;           /* acquisitions while another was held */

/* The waiters' records, cleared. */
static void setup_round(void)
{
    memset(ws, 0, sizeof ws);
    memset(order, 0, sizeof order);
    served = holding = overlaps = 0;
}

static void setup(void)
{
    tu_setup_pair(&a, &b);
    setup_round();
}

static void teardown(void)
{
    tu_teardown_pair(&a, &b);
}

/* Run until PUBSUB NUMSUB channel reports n subscribers, failing the test
 * after a bound. */
static void await_numsub(const char *channel, long long n, const char *what)
{
    ck_assert_msg(tu_numsub_becomes(channel, n, tu_ms(2000)), "%s", what);
}

/* The holder of name on client a, for a scaled HOLDER_LEASE_MS. */
static struct hilock_lock *hold(const char *name)
{
    struct hilock_lock *h = tu_lock(a, name, 1);
    tu_assert_status(tu_acquire(h, 0, (uint64_t)tu_ms(HOLDER_LEASE_MS), NULL),
                     0);
    return h;
}

static void on_released(struct hilock_lock *lock, int status,
                        const struct hilock_result *res, void *arg)
{
    struct waiter *w = arg;
    (void)lock;
    (void)res;
    w->rel_calls++;
    w->rel_status = status;
    w->rel_at_us = now_us();
    holding--;
}

/* Acquire callback: record the outcome and the order; on success release at
 * once, so the next waiter can be served. */
static void on_acquired(struct hilock_lock *lock, int status,
                        const struct hilock_result *res, void *arg)
{
    struct waiter *w = arg;
    (void)res;
    w->acq_calls++;
    w->acq_status = status;
    w->acq_at_ms = tu_now_ms();
    w->acq_at_us = now_us();
    if (status != 0)
        return;
    if (holding > 0)
        overlaps++;
    holding++;
    if (served < MAX_WAITERS)
        order[served] = w->idx;
    served++;
    w->rel_rc = hilock_lock_release(lock, on_released, w);
}

/* Create waiters [from, to) on client c for name (owner tags 100 + i) and
 * issue their acquires in index order, all in this loop turn. */
static void start_waiters(struct hilock_client *c, const char *name,
                          int from, int to, uint64_t wait_ms)
{
    for (int i = from; i < to; i++) {
        ws[i].idx = i;
        ws[i].lock = tu_lock(c, name, 100 + (uint64_t)i);
        tu_assert_status(hilock_lock_acquire(ws[i].lock,
                                             wait_ms,
                                             (uint64_t)tu_ms(WAITER_LEASE_MS), on_acquired, &ws[i]),
                         0);
    }
}

/* Every waiter in [from, to) was called back none of the times. */
static void assert_none_served(int from, int to)
{
    for (int i = from; i < to; i++)
        ck_assert_msg(ws[i].acq_calls == 0, "waiter %d called back: %s", i,
                      hilock_err_name(ws[i].acq_status));
}

/* Waiters [0, n) were each served once, in index order, never two at a
 * time, and each release succeeded. */
static void assert_served_once_in_order(int n)
{
    ck_assert_int_eq(served, n);
    ck_assert_int_eq(overlaps, 0);
    for (int i = 0; i < n; i++) {
        ck_assert_msg(ws[i].acq_calls == 1, "waiter %d called back %d times",
                      i, ws[i].acq_calls);
        tu_assert_status(ws[i].acq_status, 0);
        tu_assert_status(ws[i].rel_rc, 0);
        ck_assert_msg(ws[i].rel_calls == 1, "release %d called back %d times",
                      i, ws[i].rel_calls);
        tu_assert_status(ws[i].rel_status, 0);
        ck_assert_msg(order[i] == i, "turn %d went to waiter %d", i,
                      order[i]);
    }
}

START_TEST(release_on_another_client_wakes_the_waiter_by_message)
{
    struct hilock_lock *h = hold("msg");
    start_waiters(b, "msg", 0, 1, 5000);
    await_numsub(TU_CHANNEL("msg"), 1, "the waiter never subscribed");
    tu_client_ready(b); /* answered after the busy reply: parked */
    assert_none_served(0, 1);
    long long released = tu_now_ms();
    tu_assert_status(tu_release(h, NULL), 0);
    ck_assert(tu_run_until_count(&ws[0].acq_calls, 1, tu_ms(6000)));
    /* the deadline (5 s) would fail it, the fallback is the holder's lease */
    tu_assert_status(ws[0].acq_status, 0);
    long long took = ws[0].acq_at_ms - released;
    ck_assert_msg(took < tu_ms(1000), "woke %lld ms after the release", took);
    tu_run_quiet();
    assert_served_once_in_order(1);
}
END_TEST

START_TEST(expired_holder_is_taken_over_by_the_fallback_timer)
{
    /* A crashed Redisson-style owner: a hold nobody will ever release. */
    ck_assert_int_eq(rs_int(tu_srv, "HSET", "crash",
                            "00000000-dead-dead-dead-000000000000:1", "1",
                            (char *)NULL),
                     1);
    ck_assert_int_eq(rs_int(tu_srv, "PEXPIRE", "crash", "300", (char *)NULL),
                     1);
    long long t0 = tu_now_ms();
    start_waiters(b, "crash", 0, 1, 3000);
    ck_assert(tu_run_until_count(&ws[0].acq_calls, 1, tu_ms(5000)));
    tu_assert_status(ws[0].acq_status, 0); /* not at its 3 s deadline */
    long long took = ws[0].acq_at_ms - t0;
    ck_assert_msg(took >= 150, "acquired after %lld ms: lock was not held",
                  took);
    ck_assert_msg(took < tu_ms(1500), "took over after %lld ms", took);
    tu_run_quiet();
    assert_served_once_in_order(1);
    /* nothing was published but the waiter's own release (a release of
     * the holder would have been), so the waiter woke by its own timer;
     * commands run by scripts and transactions are counted too */
    ck_assert_int_eq(rs_cmdstat_calls(tu_srv, "publish"), 1);
}
END_TEST

START_TEST(fifty_local_waiters_served_in_order_on_one_subscription)
{
    struct hilock_lock *h = hold("many");
    start_waiters(b, "many", 0, MAX_WAITERS, 20000);
    await_numsub(TU_CHANNEL("many"), 1, "the waiters never subscribed");
    tu_client_ready(b); /* every busy reply is back: all 50 are parked */
    assert_none_served(0, MAX_WAITERS);
    ck_assert_int_eq(rs_numsub(tu_srv, TU_CHANNEL("many")), 1);

    long long released = tu_now_ms();
    tu_assert_status(tu_release(h, NULL), 0);
    /* each hand-off is a local release: a lost wake-up would cost the
     * previous waiter's 10 s lease */
    ck_assert_msg(tu_run_until_count(&served, MAX_WAITERS, tu_ms(8000)),
                  "%d of %d waiters served", served, MAX_WAITERS);
    long long took = tu_now_ms() - released;
    ck_assert_msg(took < tu_ms(5000), "50 hand-offs took %lld ms", took);
    ck_assert(tu_run_until_count(&ws[MAX_WAITERS - 1].rel_calls, 1,
                                 tu_ms(2000)));
    tu_run_quiet();
    assert_served_once_in_order(MAX_WAITERS);
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "many", (char *)NULL), 0);
    await_numsub(TU_CHANNEL("many"), 0, "the last waiter did not unsubscribe");
}
END_TEST

START_TEST(waiter_times_out_at_its_deadline_once)
{
    hold("late");
    long long t0 = tu_now_ms();
    start_waiters(b, "late", 0, 1, 300);
    ck_assert(tu_run_until_count(&ws[0].acq_calls, 1, tu_ms(5000)));
    tu_assert_status(ws[0].acq_status, HILOCK_ETIMEDOUT);
    long long took = ws[0].acq_at_ms - t0;
    ck_assert_msg(took >= 250 && took < 300 + tu_ms(1200),
                  "timed out after %lld ms", took);
    tu_run_quiet();
    ck_assert_int_eq(ws[0].acq_calls, 1);
    ck_assert_uint_eq(hilock_lock_hold_count(ws[0].lock), 0);
    ck_assert_int_eq(tu_holds("late", a, 1), 1);
    await_numsub(TU_CHANNEL("late"), 0,
                 "the timed-out waiter did not unsubscribe");
}
END_TEST

START_TEST(cancel_of_a_parked_waiter_fires_ecanceled_once)
{
    struct hilock_lock *h = hold("cancel");
    start_waiters(b, "cancel", 0, 1, 10000);
    await_numsub(TU_CHANNEL("cancel"), 1, "the waiter never subscribed");
    tu_client_ready(b); /* answered after the busy reply: parked */
    assert_none_served(0, 1);
    tu_assert_status(hilock_lock_cancel(ws[0].lock), 0);
    ck_assert_int_eq(ws[0].acq_calls, 1); /* before cancel returned */
    tu_assert_status(ws[0].acq_status, HILOCK_ECANCELED);
    await_numsub(TU_CHANNEL("cancel"), 0,
                 "the canceled waiter did not unsubscribe");
    /* a release now finds nobody to wake, and nothing fires again */
    tu_assert_status(tu_release(h, NULL), 0);
    tu_run_quiet();
    ck_assert_int_eq(ws[0].acq_calls, 1);
    ck_assert_int_eq(ws[0].rel_calls, 0);
    ck_assert_uint_eq(hilock_lock_hold_count(ws[0].lock), 0);
    ck_assert_int_eq(tu_holds("cancel", b, 100), RS_NIL);
}
END_TEST

/* Fencing on, so the fencing counter proves the canceled acquire did
 * succeed in Redis. */
static struct hilock_client *fencing_client(void)
{
    struct hilock_options o;
    tu_options(&o);
    o.fencing = 1;
    return tu_client(&o);
}

START_TEST(success_after_cancel_is_released_at_once)
{
    struct hilock_client *c = fencing_client();
    tu_client_ready(c); /* connected: the attempt goes out at once */
    start_waiters(c, "undo", 0, 1, 3000);
    tu_assert_status(hilock_lock_cancel(ws[0].lock), 0);
    ck_assert_int_eq(ws[0].acq_calls, 1);
    tu_assert_status(ws[0].acq_status, HILOCK_ECANCELED);
    /* the acquire won in Redis (a token was drawn)... */
    ck_assert_msg(tu_run_until_redis(1, tu_ms(2000), "GET", TU_FENCE("undo"),
                                     (char *)NULL),
                  "the canceled acquire never won in Redis");
    /* ...and was undone */
    ck_assert_msg(tu_run_until_redis(0, tu_ms(2000), "EXISTS", "undo",
                                     (char *)NULL),
                  "a success after cancel was not released");
    ck_assert_int_eq(tu_holds("undo", c, 100), RS_NIL);
    tu_run_quiet();
    ck_assert_uint_eq(hilock_lock_hold_count(ws[0].lock), 0);
    ck_assert_int_eq(ws[0].acq_calls, 1);
    hilock_client_free(c);
}
END_TEST

START_TEST(success_after_cancel_passes_to_the_next_waiter)
{
    struct hilock_client *c = fencing_client();
    tu_client_ready(c);
    start_waiters(c, "pass", 0, 1, 3000);
    tu_assert_status(hilock_lock_cancel(ws[0].lock), 0);
    ck_assert_msg(tu_run_until_redis(1, tu_ms(2000), "GET", TU_FENCE("pass"),
                                     (char *)NULL),
                  "the canceled acquire never won in Redis");
    /* another client waits for the same, free again or not yet */
    start_waiters(b, "pass", 1, 2, 3000);
    ck_assert(tu_run_until_count(&ws[1].acq_calls, 1, tu_ms(1500)));
    tu_assert_status(ws[1].acq_status, 0);
    tu_run_quiet();
    ck_assert_int_eq(ws[0].acq_calls, 1);
    tu_assert_status(ws[0].acq_status, HILOCK_ECANCELED);
    ck_assert_int_eq(ws[1].acq_calls, 1);
    ck_assert_int_eq(tu_holds("pass", c, 100), RS_NIL);
    ck_assert_uint_eq(hilock_lock_hold_count(ws[0].lock), 0);
    hilock_client_free(c);
}
END_TEST

START_TEST(waiters_survive_a_killed_subscriber_connection)
{
    enum { N = 10 };
    struct hilock_lock *h = hold("kill");
    start_waiters(b, "kill", 0, N, 20000);
    await_numsub(TU_CHANNEL("kill"), 1, "the waiters never subscribed");
    tu_client_ready(b); /* answered after the busy replies: parked */
    assert_none_served(0, N);
    ck_assert_int_eq(rs_cmdstat_calls(tu_srv, "subscribe"), 1);

    ck_assert_int_eq(rs_int(tu_srv, "CLIENT", "KILL", "TYPE", "pubsub",
                            (char *)NULL),
                     1);
    ck_assert_int_eq(rs_numsub(tu_srv, TU_CHANNEL("kill")), 0);
    ck_assert_msg(tu_numsub_becomes(TU_CHANNEL("kill"), 1, tu_ms(5000)),
                  "the channel was not subscribed again");
    ck_assert_int_eq(rs_cmdstat_calls(tu_srv, "subscribe"), 2);
    tu_run_quiet();
    assert_none_served(0, N); /* the holder still has it */

    long long released = tu_now_ms();
    tu_assert_status(tu_release(h, NULL), 0);
    /* without the new subscription the head would sleep until the
     * holder's 30 s lease ran out */
    ck_assert_msg(tu_run_until_count(&served, N, tu_ms(8000)),
                  "%d of %d served", served, N);
    long long took = tu_now_ms() - released;
    ck_assert_msg(took < tu_ms(5000), "%d hand-offs took %lld ms", N, took);
    ck_assert(tu_run_until_count(&ws[N - 1].rel_calls, 1, tu_ms(2000)));
    tu_run_quiet();
    assert_served_once_in_order(N);
    await_numsub(TU_CHANNEL("kill"), 0, "the last waiter did not unsubscribe");
}
END_TEST

START_TEST(new_local_acquire_queues_behind_parked_waiters)
{
    hold("barge");
    start_waiters(b, "barge", 0, 3, 20000);
    await_numsub(TU_CHANNEL("barge"), 1, "the waiters never subscribed");
    tu_client_ready(b); /* answered after the busy replies: parked */
    assert_none_served(0, 3);
    /* Free the lock behind everyone's back, as an expiry would: the parked
     * waiters sleep on their fallback (the 30 s lease), so a newcomer that
     * sent an attempt now would get the lock past them. */
    ck_assert_int_eq(rs_int(tu_srv, "DEL", "barge", (char *)NULL), 1);
    start_waiters(b, "barge", 3, 4, 20000);
    tu_client_ready(b); /* an attempt of the newcomer would be answered */
    tu_run_quiet();
    assert_none_served(0, 4);
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "barge", (char *)NULL), 0);
    /* a release message wakes the head; the newcomer comes last */
    ck_assert_int_eq(rs_int(tu_srv, "PUBLISH", TU_CHANNEL("barge"), "0",
                            (char *)NULL),
                     1);
    ck_assert_msg(tu_run_until_count(&served, 4, tu_ms(5000)),
                  "%d of 4 served", served);
    ck_assert(tu_run_until_count(&ws[3].rel_calls, 1, tu_ms(2000)));
    tu_run_quiet();
    assert_served_once_in_order(4);
}
END_TEST

START_TEST(same_client_release_wakes_its_waiter_without_a_message)
{
    struct hilock_options o;
    tu_options(&o);
    /* a re-subscription takes half of reconnect_min_ms at least */
    o.reconnect_min_ms = (uint32_t)tu_ms(2000);
    o.reconnect_max_ms = (uint32_t)tu_ms(4000);
    struct hilock_client *c = tu_client(&o);
    struct hilock_lock *h = tu_lock(c, "self", 1);
    tu_assert_status(tu_acquire(h, 0, (uint64_t)tu_ms(HOLDER_LEASE_MS), NULL),
                     0);
    start_waiters(c, "self", 0, 1, (uint64_t)tu_ms(5000));
    await_numsub(TU_CHANNEL("self"), 1, "the waiter never subscribed");
    tu_client_ready(c); /* answered after the busy reply: parked */
    assert_none_served(0, 1);
    /* Take the message path away: the release reaches no subscriber, and
     * the subscription comes back a second later at the earliest. */
    ck_assert_int_eq(rs_int(tu_srv, "CLIENT", "KILL", "TYPE", "pubsub",
                            (char *)NULL),
                     1);
    ck_assert_int_eq(rs_numsub(tu_srv, TU_CHANNEL("self")), 0);
    long long released = tu_now_ms();
    tu_assert_status(tu_release(h, NULL), 0);
    ck_assert(tu_run_until_count(&ws[0].acq_calls, 1, tu_ms(6000)));
    tu_assert_status(ws[0].acq_status, 0);
    long long took = ws[0].acq_at_ms - released;
    ck_assert_msg(took < tu_ms(500), "woke %lld ms after the local release",
                  took);
    tu_run_quiet();
    assert_served_once_in_order(1);
    hilock_client_free(c);
}
END_TEST

/* The release channel of lock name (TU_CHANNEL for a name known at run
 * time), in a buffer of its own until the next call. */
static const char *channel_of(const char *name)
{
    static char channel[96];
    snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}", name);
    return channel;
}

/* Releases in a row that keep the lock in one process while it has
 * waiters of its own: WAIT_LOCAL_STREAK_MAX (4) in wait.c, the last of
 * which publishes. */
#define QUIET_IN_A_ROW 3

/* The holder of name on a, a waiter on a and one on b, all parked; the
 * PUBLISH count so far. */
static long long hold_with_waiter_here_and_elsewhere(const char *name,
                                                     struct hilock_lock **h)
{
    *h = hold(name);
    start_waiters(a, name, 0, 1, (uint64_t)tu_ms(5000));
    start_waiters(b, name, 1, 2, (uint64_t)tu_ms(5000));
    await_numsub(channel_of(name), 2, "the waiters never subscribed");
    tu_client_ready(a);
    tu_client_ready(b); /* answered after the busy replies: parked */
    assert_none_served(0, 2);
    return rs_cmdstat_calls(tu_srv, "publish");
}

START_TEST(release_to_a_waiter_of_its_own_publishes_nothing)
{
    struct hilock_lock *h;
    long long published = hold_with_waiter_here_and_elsewhere("quiet", &h);
    tu_assert_status(tu_release(h, NULL), 0);
    ck_assert(tu_run_until_count(&served, 2, tu_ms(5000)));
    ck_assert(tu_run_until_count(&ws[1].rel_calls, 1, tu_ms(2000)));
    tu_run_quiet();
    /* the waiter here went first; b's waiter heard the release of the
     * lock's last holder on a (nobody here waited any more), and its own */
    assert_served_once_in_order(2);
    ck_assert_int_eq(rs_cmdstat_calls(tu_srv, "publish") - published, 2);
}
END_TEST

START_TEST(every_streak_of_quiet_releases_ends_with_a_message)
{
    enum { N = 8 };
    struct hilock_lock *h = hold("streak");
    start_waiters(a, "streak", 0, N, (uint64_t)tu_ms(10000));
    await_numsub(TU_CHANNEL("streak"), 1, "the waiters never subscribed");
    tu_client_ready(a);
    long long published = rs_cmdstat_calls(tu_srv, "publish");
    tu_assert_status(tu_release(h, NULL), 0);
    ck_assert_msg(tu_run_until_count(&served, N, tu_ms(5000)),
                  "%d of %d served", served, N);
    ck_assert(tu_run_until_count(&ws[N - 1].rel_calls, 1, tu_ms(2000)));
    tu_run_quiet();
    assert_served_once_in_order(N);
    /* N + 1 releases: every QUIET_IN_A_ROW + 1st publishes, and the last
     * (no waiter left) */
    ck_assert_int_eq(rs_cmdstat_calls(tu_srv, "publish") - published,
                     (N + 1) / (QUIET_IN_A_ROW + 1) + 1);
}
END_TEST

/* The stand-back after a streak (WAIT_HANDOFF_YIELD_MS, 2, in wait.c; a
 * clock of ms makes it 1 to 2 ms) ends once every other process waiting
 * had its turn: with two, b's release ends a's yield. Else the lock stays
 * free while a sits out the rest of it, and the next turn waits for its
 * end, at every hand-off between the two. */
START_TEST(the_other_process_releasing_ends_the_yield)
{
    enum { HERE = QUIET_IN_A_ROW + 2, B = HERE };
    int checked = 0;
    for (int round = 0; round < 5 && !checked; round++) {
        char name[16];
        snprintf(name, sizeof name, "turns%d", round);
        setup_round();
        struct hilock_lock *h = hold(name);
        start_waiters(a, name, 0, HERE, (uint64_t)tu_ms(5000));
        start_waiters(b, name, B, B + 1, (uint64_t)tu_ms(5000));
        await_numsub(channel_of(name), 2, "the waiters never subscribed");
        tu_client_ready(a);
        tu_client_ready(b); /* answered after the busy replies: parked */
        tu_assert_status(tu_release(h, NULL), 0);
        ck_assert(tu_run_until_count(&served, HERE + 1, tu_ms(5000)));
        ck_assert(tu_run_until_count(&ws[HERE - 1].rel_calls, 1, tu_ms(2000)));
        tu_run_quiet();
        /* a's streak, b's turn after its message, then a's next */
        static const int want[] = {0, 1, 2, B, 3, 4};
        ck_assert_int_eq(served, HERE + 1);
        for (int i = 0; i < HERE + 1; i++)
            ck_assert_int_eq(order[i], want[i]);
        long long yield_from = ws[QUIET_IN_A_ROW - 1].rel_at_us;
        /* only a machine fast enough to fit b's turn well inside the
         * yield can tell (not under valgrind) */
        if (ws[B].rel_at_us - yield_from > 400)
            continue;
        checked = 1;
        ck_assert_msg(ws[QUIET_IN_A_ROW].acq_at_us - yield_from < 1000,
                      "a's next turn came %lld us after its yield began, "
                      "b's release %lld us after it",
                      ws[QUIET_IN_A_ROW].acq_at_us - yield_from,
                      ws[B].rel_at_us - yield_from);
    }
}
END_TEST

START_TEST(quiet_release_whose_waiter_left_publishes_after_all)
{
    struct hilock_lock *h;
    struct tu_result rel = {0};
    hold_with_waiter_here_and_elsewhere("owed", &h);
    /* decided quiet (a's waiter is next), which then leaves before the
     * answer: b's waiter must not sleep until the holder's lease ends */
    tu_assert_status(hilock_lock_release(h, tu_record, &rel), 0);
    tu_assert_status(hilock_lock_cancel(ws[0].lock), 0);
    ck_assert_int_eq(ws[0].acq_calls, 1);
    tu_assert_status(ws[0].acq_status, HILOCK_ECANCELED);
    ck_assert(tu_run_until_count(&ws[1].acq_calls, 1, tu_ms(2000)));
    tu_assert_status(ws[1].acq_status, 0);
    ck_assert_int_eq(rel.calls, 1);
    tu_assert_status(rel.status, 0);
    ck_assert(tu_run_until_count(&ws[1].rel_calls, 1, tu_ms(2000)));
    tu_run_quiet();
    ck_assert_int_eq(ws[0].acq_calls, 1);
    ck_assert_int_eq(served, 1);
}
END_TEST

START_TEST(quiet_release_of_a_plain_hold_is_one_hdel)
{
    struct hilock_lock *h = hold("bare");
    struct hilock_lock *w = tu_lock(a, "bare", 100);
    struct tu_result got = {0};
    tu_assert_status(hilock_lock_acquire(w, (uint64_t)tu_ms(5000),
                                         (uint64_t)tu_ms(WAITER_LEASE_MS),
                                         tu_record, &got),
                     0);
    await_numsub(TU_CHANNEL("bare"), 1, "the waiter never subscribed");
    tu_client_ready(a); /* answered after the busy reply: parked */
    static const char *const cmds[] = {"hdel", "exec", "publish", "evalsha"};
    long long before[4];
    for (int i = 0; i < 4; i++)
        before[i] = rs_cmdstat_calls(tu_srv, cmds[i]);
    tu_assert_status(tu_release(h, NULL), 0);
    ck_assert(tu_run_until_count(&got.calls, 1, tu_ms(2000)));
    tu_assert_status(got.status, 0);
    /* the release is the HDEL alone; the one transaction is the
     * waiter's attempt (RESTORE with its look, see plain.c): no script */
    static const long long expect[4] = {1, 1, 0, 0};
    for (int i = 0; i < 4; i++)
        ck_assert_msg(rs_cmdstat_calls(tu_srv, cmds[i]) - before[i] ==
                          expect[i],
                      "%s: %lld calls", cmds[i],
                      rs_cmdstat_calls(tu_srv, cmds[i]) - before[i]);
    tu_assert_status(tu_release(w, NULL), 0);
}
END_TEST

/* A client through a new proxy whose answers are never late, with *h
 * holding name for a scaled HOLDER_LEASE_MS. */
static struct hilock_client *proxied_holder(const char *name,
                                            struct tp_proxy **proxy,
                                            struct hilock_lock **h)
{
    *proxy = tp_new(tu_base, rs_port(tu_srv));
    ck_assert_ptr_nonnull(*proxy);
    struct hilock_options o;
    tu_options(&o);
    o.node.port = tp_port(*proxy);
    o.request_timeout_ms = (uint32_t)tu_ms(10000);
    struct hilock_client *c = tu_client(&o);
    *h = tu_lock(c, name, 1);
    tu_assert_status(
        tu_acquire(*h, 0, (uint64_t)tu_ms(HOLDER_LEASE_MS), NULL), 0);
    return c;
}

/* Waiter 0 on c for name, waiting up to wait_ms, parked after its busy
 * answer. */
static void park_first_waiter(struct hilock_client *c, const char *name,
                              int wait_ms)
{
    start_waiters(c, name, 0, 1, (uint64_t)tu_ms(wait_ms));
    await_numsub(channel_of(name), 1, "the waiter never subscribed");
    tu_client_ready(c);
}

/* The holder's release (rel) and waiter 0's turn each end once, in that
 * order; c and its proxy go. */
static void end_with_one_hand_off(const struct tu_result *rel,
                                  struct hilock_client *c,
                                  struct tp_proxy *proxy)
{
    ck_assert(tu_run_until_count(&ws[0].rel_calls, 1, tu_ms(2000)));
    tu_run_quiet();
    ck_assert_int_eq(rel->calls, 1);
    tu_assert_status(rel->status, 0);
    assert_served_once_in_order(1);
    hilock_client_free(c);
    tp_free(proxy);
}

START_TEST(quiet_release_and_the_next_attempt_go_together)
{
    struct tp_proxy *proxy;
    struct hilock_lock *h;
    struct hilock_client *c = proxied_holder("together", &proxy, &h);
    park_first_waiter(c, "together", 5000);
    /* Redis answers nothing now: the waiter's attempt must not wait for
     * the release's answer to go out */
    tp_hold_replies(proxy, true);
    struct tu_result rel = {0};
    char field[64];
    tu_assert_status(hilock_lock_release(h, tu_record, &rel), 0);
    ck_assert_msg(tu_run_until_redis(1, tu_ms(2000), "HGET", "together",
                                     tu_field(c, 100, field), (char *)NULL),
                  "the waiter took the lock only after the release's answer");
    ck_assert_int_eq(rel.calls, 0);
    ck_assert_int_eq(ws[0].acq_calls, 0);
    tp_hold_replies(proxy, false);
    end_with_one_hand_off(&rel, c, proxy);
}
END_TEST

static struct tu_result batch_rel;

/* A query's answer: the holder lets go from inside it, ahead of the
 * answers still to read in that batch. */
static void release_in_batch(struct hilock_lock *lock, int status,
                             const struct hilock_result *res, void *arg)
{
    (void)status;
    (void)res;
    (void)arg;
    tu_assert_status(hilock_lock_release(lock, tu_record, &batch_rel), 0);
}

/* The head's attempts go as transactions (a waiter's plain attempt). */
static bool exec_calls_reach(void *arg)
{
    return rs_cmdstat_calls(tu_srv, "exec") >= *(long long *)arg;
}

START_TEST(quiet_release_before_the_heads_busy_answer_in_one_batch)
{
    struct tp_proxy *proxy;
    struct hilock_lock *h;
    struct hilock_client *c = proxied_holder("batch", &proxy, &h);
    /* a holder without expiry: the head polls, once a second */
    ck_assert_int_eq(rs_int(tu_srv, "PERSIST", "batch", (char *)NULL), 1);
    memset(&batch_rel, 0, sizeof batch_rel);
    park_first_waiter(c, "batch", 10000);
    /* Answers held: a query of the holder, then the head's poll come back
     * in one batch. */
    tp_hold_replies(proxy, true);
    tu_assert_status(hilock_lock_query_ttl(h, release_in_batch, NULL), 0);
    tu_run_for(50);
    long long polls = rs_cmdstat_calls(tu_srv, "exec") + 1;
    ck_assert_msg(tu_run_until(exec_calls_reach, &polls, tu_ms(3000)),
                  "the head did not poll");
    tp_hold_replies(proxy, false);
    long long let_go = tu_now_ms();
    /* the release, sent while the head's poll was out, still hands the
     * lock to it at once: not at its next poll, a second later (that
     * interval is not scaled for slow runs, so the bound is not either) */
    ck_assert(tu_run_until_count(&ws[0].acq_calls, 1, tu_ms(3000)));
    ck_assert_msg(ws[0].acq_at_ms - let_go < 800,
                  "the head took the lock %lld ms after the release",
                  ws[0].acq_at_ms - let_go);
    end_with_one_hand_off(&batch_rel, c, proxy);
}
END_TEST

static Suite *wait_suite(void)
{
    Suite *s = suite_create("wait");
    TCase *wake = tcase_create("wake-up");
    tcase_add_checked_fixture(wake, setup, teardown);
    tcase_set_timeout(wake, 30);
    tcase_add_test(wake, release_on_another_client_wakes_the_waiter_by_message);
    tcase_add_test(wake, expired_holder_is_taken_over_by_the_fallback_timer);
    tcase_add_test(wake,
                   same_client_release_wakes_its_waiter_without_a_message);
    tcase_add_test(wake, waiters_survive_a_killed_subscriber_connection);
    suite_add_tcase(s, wake);

    TCase *fifo = tcase_create("fifo");
    tcase_add_checked_fixture(fifo, setup, teardown);
    tcase_set_timeout(fifo, 30);
    tcase_add_test(fifo,
                   fifty_local_waiters_served_in_order_on_one_subscription);
    tcase_add_test(fifo, new_local_acquire_queues_behind_parked_waiters);
    suite_add_tcase(s, fifo);

    TCase *end = tcase_create("ending");
    tcase_add_checked_fixture(end, setup, teardown);
    tcase_set_timeout(end, 30);
    tcase_add_test(end, waiter_times_out_at_its_deadline_once);
    tcase_add_test(end, cancel_of_a_parked_waiter_fires_ecanceled_once);
    tcase_add_test(end, success_after_cancel_is_released_at_once);
    tcase_add_test(end, success_after_cancel_passes_to_the_next_waiter);
    suite_add_tcase(s, end);

    TCase *quiet = tcase_create("quiet");
    tcase_add_checked_fixture(quiet, setup, teardown);
    tcase_set_timeout(quiet, 30);
    tcase_add_test(quiet, release_to_a_waiter_of_its_own_publishes_nothing);
    tcase_add_test(quiet, every_streak_of_quiet_releases_ends_with_a_message);
    tcase_add_test(quiet, the_other_process_releasing_ends_the_yield);
    tcase_add_test(quiet, quiet_release_whose_waiter_left_publishes_after_all);
    tcase_add_test(quiet, quiet_release_of_a_plain_hold_is_one_hdel);
    tcase_add_test(quiet, quiet_release_and_the_next_attempt_go_together);
    tcase_add_test(quiet,
                   quiet_release_before_the_heads_busy_answer_in_one_batch);
    suite_add_tcase(s, quiet);
    return s;
}

int main(void)
{
    return tu_main(wait_suite());
}
