/* SPDX-License-Identifier: BSD-3-Clause */
/* test_fair.c -- fair mode (hilock_options.fair), against a real Redis.
 *
 * What the README's "Fair mode" promises, each checked where it could
 * break: waiters of several clients get the lock in the order they queued,
 * each by a hand-off (the release makes it the owner), with fencing tokens
 * in that order; a hand-off to a waiter of the releasing client needs no
 * message; a waiter whose client is gone is skipped after its entry's
 * deadline, and a hold handed to a client freed just before costs at most
 * the short hand-off lease; a hand-off message lost with the subscriber
 * connection is recovered by the waiter's retry, which claims the hold;
 * a hand-off read after an attempt of the waiter timed out in a stall is
 * reported only once a new attempt confirmed it, and stays held;
 * cancel and timeout leave no queue entry; a client without fair mode on
 * the same name is still excluded; a release resent after a lost reply
 * hands off once and leaves nothing behind.
 *
 * Bounds: a hand-off takes a round trip or two; each bound separates it
 * from the next slower path (a fallback at the holder's lease of 10 s or
 * more), not from a fast machine. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy.h"

#define NAME "fair"
#define QUEUE "hilock_queue:{" NAME "}"
#define OWNERS QUEUE ":owners"
#define FENCE "hilock_fence:{" NAME "}"
#define LONG_MS 10000 /* a lease or wait no test reaches (before tu_ms) */

static struct hilock_client *cl[4];
static struct tp_proxy *proxy;

/* Who got the lock, in order (client index), and overlapping holds. */
static int order[8], served, holding, overlaps;

struct waiter {
    int idx;
    struct tu_result r;
};

/* Set while the clients are freed: the waits still parked then are called
 * back with HILOCK_ECANCELED, and their waiters lived on the stack of the
 * test that has returned. */
static int ending;

static void setup(void)
{
    tu_setup();
    memset(cl, 0, sizeof cl);
    ending = 0;
    proxy = NULL;
    served = holding = overlaps = 0;
}

static void teardown(void)
{
    ending = 1;
    for (int i = 0; i < 4; i++)
        hilock_client_free(cl[i]);
    tp_free(proxy);
    tu_teardown();
}

/* A ready client, fair or not, with fencing; through the proxy when
 * via_proxy. */
static struct hilock_client *client(int fair, int via_proxy)
{
    struct hilock_options o;
    tu_options(&o);
    o.fair = fair;
    o.fencing = 1;
    if (via_proxy) {
        if (!proxy)
            ck_assert_ptr_nonnull(proxy = tp_new(tu_base, rs_port(tu_srv)));
        o.node.port = tp_port(proxy);
    }
    struct hilock_client *c = tu_client(&o);
    tu_client_ready(c);
    return c;
}

/* A ready fair client without fencing: its first attempt on a free name
 * may go as the plain RESTORE (see plain.c). */
static struct hilock_client *client_unfenced(void)
{
    struct hilock_options o;
    tu_options(&o);
    o.fair = 1;
    struct hilock_client *c = tu_client(&o);
    tu_client_ready(c);
    return c;
}

/* Free client i as if its process died: what it sends on the way out
 * (the queue entry's removal) never reaches Redis. It goes through the
 * proxy, which holds everything from now on. */
static void kill_client(int i)
{
    tp_blackhole(proxy, true);
    hilock_client_free(cl[i]);
    cl[i] = NULL;
}

static void on_acquired(struct hilock_lock *lock, int status,
                        const struct hilock_result *res, void *arg)
{
    struct waiter *w = arg;
    if (ending)
        return;
    tu_record(lock, status, res, &w->r);
    if (status == 0) {
        overlaps += holding > 0;
        holding++;
        order[served++] = w->idx;
    }
}

/* Start a waiting acquire of NAME on lock of client c; run until Redis
 * has queued it as entry number queued (LLEN). */
static void wait_queued(struct hilock_client *c, struct hilock_lock *lock,
                        struct waiter *w,
                        uint64_t wait_ms, uint64_t lease_ms, long long queued)
{
    ck_assert_int_eq(hilock_lock_acquire(lock, wait_ms, lease_ms, on_acquired,
                                         w),
                     0);
    ck_assert_msg(tu_run_until_redis(queued, tu_ms(2000), "LLEN", QUEUE,
                                     (char *)NULL),
                  "waiter not queued");
    /* and its client has read the busy reply: the waiter is parked */
    tu_client_ready(c);
    ck_assert_int_eq(w->r.calls, 0);
}

static bool pttl_above_10s(void *arg)
{
    (void)arg;
    return rs_int(tu_srv, "PTTL", NAME, (char *)NULL) > 10000;
}

static void release_held(struct hilock_lock *lock)
{
    holding--;
    tu_assert_status(tu_release(lock, NULL), 0);
}

/* The waiter w, of client cl[c] on owner tag tag, is granted NAME within
 * a second. */
static void granted(struct waiter *w, int c, int tag)
{
    ck_assert(tu_run_until_count(&w->r.calls, 1, tu_ms(1000)));
    tu_assert_status(w->r.status, 0);
    ck_assert_int_eq(tu_holds(NAME, cl[c], tag), 1);
}

/* No two holds overlapped, and nothing of NAME is left: the lock, its
 * queue and the queue's owners. */
static void nothing_left(void)
{
    ck_assert_int_eq(overlaps, 0);
    ck_assert_int_eq(tu_exists(NAME), 0);
    ck_assert_int_eq(tu_exists(QUEUE), 0);
    ck_assert_int_eq(tu_exists(OWNERS), 0);
}

/* Take NAME on a new handle of client c, without waiting, as the holder
 * the test's waiters queue behind; its token in *token (may be NULL). */
static struct hilock_lock *hold(struct hilock_client *c, int64_t *token)
{
    struct hilock_lock *h = tu_lock(c, NAME, 1);
    struct hilock_result res;
    tu_assert_status(tu_acquire(h, 0, (uint64_t)tu_ms(LONG_MS), &res), 0);
    if (token)
        *token = res.token;
    holding = 1;
    return h;
}

/* Start a waiting acquire of NAME on a new handle of client c, which has
 * no fair mode and NAME no queue yet, reported to w; run until it
 * listens on the lock's channel. */
static void wait_default(struct hilock_client *c, struct waiter *w)
{
    ck_assert_int_eq(hilock_lock_acquire(tu_lock(c, NAME, 1),
                                         (uint64_t)tu_ms(LONG_MS), 0,
                                         on_acquired, w),
                     0);
    ck_assert(tu_numsub_becomes(TU_CHANNEL(NAME), 1, tu_ms(2000)));
    tu_run_quiet();
}

/* Three clients queue behind a fourth; each release hands the lock to the
 * next in queue order, with a larger token each time, and nothing is left
 * in Redis at the end. */
START_TEST(test_fifo_across_clients)
{
    struct hilock_lock *l[4];
    struct waiter w[4] = {{0, {0}}, {1, {0}}, {2, {0}}, {3, {0}}};
    struct hilock_result tok;
    for (int i = 0; i < 4; i++) {
        cl[i] = client(1, 0);
        l[i] = tu_lock(cl[i], NAME, 7);
    }
    tu_assert_status(tu_acquire(l[0], 0, (uint64_t)tu_ms(LONG_MS), &tok), 0);
    holding = 1;
    /* queued in the order 2, 1, 3: not the order of the clients' creation */
    wait_queued(cl[2], l[2], &w[2], (uint64_t)tu_ms(LONG_MS), 0, 1);
    wait_queued(cl[1], l[1], &w[1], (uint64_t)tu_ms(LONG_MS), 0, 2);
    wait_queued(cl[3], l[3], &w[3], (uint64_t)tu_ms(LONG_MS), 0, 3);
    int expect[3] = {2, 1, 3};
    struct hilock_lock *holder = l[0];
    /* each queued owner is found by its field, not by reading the list */
    ck_assert_int_eq(rs_int(tu_srv, "HLEN", OWNERS, (char *)NULL), 3);
    ck_assert_int_gt(rs_int(tu_srv, "PTTL", OWNERS, (char *)NULL), 0);
    long long calls = rs_cmdstat_calls(tu_srv, "evalsha");
    for (int k = 0; k < 3; k++) {
        struct waiter *next = &w[expect[k]];
        release_held(holder);
        ck_assert_msg(tu_run_until_count(&next->r.calls, 1, tu_ms(1000)),
                      "hand-off %d not delivered", k);
        tu_assert_status(next->r.status, 0);
        ck_assert_int_eq(next->r.res.token, tok.token + 1 + k); /* its token */
        ck_assert_int_eq(order[k], expect[k]);
        holder = l[expect[k]];
    }
    tu_run_quiet();
    ck_assert_int_eq(overlaps, 0);
    /* Each hand-off cost its release and nothing else: no claim, and the
     * one next in line learnt the new lease from the message, without a
     * retry. */
    ck_assert_int_eq(rs_cmdstat_calls(tu_srv, "evalsha") - calls, 3);
    /* The last one holds it with the short hand-off lease (its marker
     * stays), which its watchdog extends at the first renewal. */
    ck_assert_int_eq(rs_int(tu_srv, "HEXISTS", NAME, "hilock:handed",
                            (char *)NULL),
                     1);
    ck_assert_int_le(rs_int(tu_srv, "PTTL", NAME, (char *)NULL), 5000);
    ck_assert(tu_run_until(pttl_above_10s, NULL, tu_ms(4000)));
    release_held(holder);
    ck_assert_int_eq(tu_exists(NAME), 0);
    ck_assert_int_eq(tu_exists(QUEUE), 0);
    ck_assert_int_eq(tu_exists(OWNERS), 0);
}
END_TEST

static struct hilock_lock *rel_waiter;
static int waiter_done_at_release;

static void on_release_check(struct hilock_lock *lock, int status,
                             const struct hilock_result *res, void *arg)
{
    struct tu_result *r = arg;
    (void)lock;
    (void)res;
    r->calls++;
    r->status = status;
    waiter_done_at_release = hilock_lock_hold_count(rel_waiter);
}

/* The release that hands the lock to a waiter of its own client delivers
 * it from its reply: the waiter holds it before the release's own
 * callback runs, and no message is published. */
START_TEST(test_same_client_handoff_needs_no_message)
{
    struct waiter w = {1, {0}};
    struct tu_result rel = {0};
    cl[0] = client(1, 0);
    struct hilock_lock *h = tu_lock(cl[0], NAME, 1);
    rel_waiter = tu_lock(cl[0], NAME, 2);
    tu_assert_status(tu_acquire(h, 0, (uint64_t)tu_ms(LONG_MS), NULL), 0);
    wait_queued(cl[0], rel_waiter, &w, (uint64_t)tu_ms(LONG_MS), 0, 1);
    /* both its channels subscribed (the hand-off one first), and the retry
     * that each confirmation makes answered: no attempt in flight */
    ck_assert(tu_numsub_becomes(TU_CHANNEL(NAME), 1, tu_ms(2000)));
    /* the confirmation may reach the client after Redis counted it: let
     * its retry go out and come back */
    tu_run_quiet();
    tu_client_ready(cl[0]);
    long long pubs = rs_cmdstat_calls(tu_srv, "publish");
    ck_assert_int_eq(hilock_lock_release(h, on_release_check, &rel), 0);
    ck_assert(tu_run_until_count(&rel.calls, 1, tu_ms(2000)));
    tu_assert_status(rel.status, 0);
    ck_assert_int_eq(rs_cmdstat_calls(tu_srv, "publish") - pubs, 0);
    ck_assert_int_eq(waiter_done_at_release, 1);
    ck_assert_int_eq(w.r.calls, 1);
    tu_assert_status(w.r.status, 0);
    tu_run_quiet();
    ck_assert_int_eq(w.r.calls, 1);
    ck_assert_int_eq(tu_holds(NAME, cl[0], 2), 1);
    /* not claimed: it holds with the hand-off lease until its watchdog
     * renews */
    ck_assert_int_eq(rs_int(tu_srv, "HEXISTS", NAME, "hilock:handed",
                            (char *)NULL),
                     1);
}
END_TEST

/* A queued waiter whose client is freed is skipped once its entry's
 * deadline (its wait) has passed: the next waiter gets the lock by the
 * release itself. */
START_TEST(test_gone_waiter_skipped_after_deadline)
{
    struct waiter w1 = {1, {0}}, w2 = {2, {0}};
    for (int i = 0; i < 3; i++)
        cl[i] = client(1, i == 1);
    struct hilock_lock *h = tu_lock(cl[0], NAME, 1);
    tu_assert_status(tu_acquire(h, 0, (uint64_t)tu_ms(LONG_MS), NULL), 0);
    wait_queued(cl[1], tu_lock(cl[1], NAME, 1), &w1, 300, 0, 1);
    wait_queued(cl[2], tu_lock(cl[2], NAME, 1), &w2, (uint64_t)tu_ms(LONG_MS), 0,
                2);
    kill_client(1);
    ck_assert_int_eq(w1.r.calls, 1);
    tu_assert_status(w1.r.status, HILOCK_ECANCELED);
    ck_assert_int_eq(rs_int(tu_srv, "LLEN", QUEUE, (char *)NULL), 2);
    tu_run_for(400); /* past the gone waiter's deadline */
    long long t0 = tu_now_ms();
    tu_assert_status(tu_release(h, NULL), 0);
    ck_assert(tu_run_until_count(&w2.r.calls, 1, tu_ms(1000)));
    tu_assert_status(w2.r.status, 0);
    ck_assert_int_lt(tu_now_ms() - t0, tu_ms(1000));
    ck_assert_int_eq(tu_exists(QUEUE), 0);
}
END_TEST

/* A hold handed to a client freed just before the release costs the
 * short hand-off lease (here the gone waiter's own 1 s lease), not the
 * gone waiter's wait: then the next waiter gets it. */
START_TEST(test_handoff_to_gone_client_expires)
{
    struct waiter w1 = {1, {0}}, w2 = {2, {0}};
    char gone[64];
    for (int i = 0; i < 3; i++)
        cl[i] = client(1, i == 1);
    struct hilock_lock *h = tu_lock(cl[0], NAME, 1);
    tu_assert_status(tu_acquire(h, 0, (uint64_t)tu_ms(LONG_MS), NULL), 0);
    wait_queued(cl[1], tu_lock(cl[1], NAME, 1), &w1, (uint64_t)tu_ms(LONG_MS), 1000,
                1);
    wait_queued(cl[2], tu_lock(cl[2], NAME, 1), &w2, (uint64_t)tu_ms(LONG_MS), 0,
                2);
    tu_field(cl[1], 1, gone);
    kill_client(1);
    long long t0 = tu_now_ms();
    tu_assert_status(tu_release(h, NULL), 0);
    ck_assert_int_eq(rs_int(tu_srv, "HEXISTS", NAME, gone, (char *)NULL),
                     1); /* handed to the gone client */
    ck_assert_int_le(rs_int(tu_srv, "PTTL", NAME, (char *)NULL), 1000);
    ck_assert(tu_run_until_count(&w2.r.calls, 1, tu_ms(3000)));
    tu_assert_status(w2.r.status, 0);
    ck_assert_int_ge(w2.r.at_ms - t0, 900); /* only when that lease ran out */
    ck_assert_int_eq(tu_holds(NAME, cl[2], 1), 1);
    ck_assert_int_eq(tu_exists(QUEUE), 0);
}
END_TEST

/* The subscriber connection of the waiter's client is cut as the lock is
 * handed over: the message is lost, and the waiter's retry after
 * resubscribing claims the hold (its own lease, no marker). */
START_TEST(test_lost_handoff_message_recovered)
{
    struct waiter w = {1, {0}};
    cl[0] = client(1, 0);
    cl[1] = client(1, 1);
    struct hilock_lock *h = tu_lock(cl[0], NAME, 1);
    tu_assert_status(tu_acquire(h, 0, (uint64_t)tu_ms(LONG_MS), NULL), 0);
    wait_queued(cl[1], tu_lock(cl[1], NAME, 1), &w, (uint64_t)tu_ms(LONG_MS),
                (uint64_t)tu_ms(LONG_MS), 1);
    ck_assert(tu_run_until_state(cl[1], HILOCK_STATE_PUBSUB_UP, tu_ms(2000)));
    tp_blackhole(proxy, true);
    tu_assert_status(tu_release(h, NULL), 0);
    tp_cut_all(proxy); /* the message published meanwhile is gone */
    tp_blackhole(proxy, false);
    ck_assert(tu_run_until_count(&w.r.calls, 1, tu_ms(4000)));
    tu_assert_status(w.r.status, 0);
    ck_assert_int_eq(rs_int(tu_srv, "HEXISTS", NAME, "hilock:handed",
                            (char *)NULL),
                     0);
    ck_assert_int_gt(rs_int(tu_srv, "PTTL", NAME, (char *)NULL), 5000);
    ck_assert_int_eq(tu_holds(NAME, cl[1], 1), 1);
}
END_TEST

/* A client that waits on the name again soon keeps its subscriptions
 * (they linger half a second): it subscribes nothing, and a hand-off to
 * its new wait that arrives before the wait's busy answer (held here)
 * is taken at once by a retry, not at the holder's lease's end. */
START_TEST(test_waiting_again_keeps_the_subscriptions)
{
    struct waiter w1 = {1, {0}}, w2 = {1, {0}};
    cl[0] = client(1, 0);
    cl[1] = client(1, 1);
    ck_assert_int_eq(tp_accepted(proxy), 1); /* the command connection */
    struct hilock_lock *h = hold(cl[0], NULL);
    struct hilock_lock *wl = tu_lock(cl[1], NAME, 1);
    wait_queued(cl[1], wl, &w1, (uint64_t)tu_ms(LONG_MS),
                (uint64_t)tu_ms(LONG_MS), 1);
    ck_assert(tu_run_until_state(cl[1], HILOCK_STATE_PUBSUB_UP, tu_ms(2000)));
    release_held(h);
    granted(&w1, 1, 1);
    release_held(wl);
    long long subs = rs_cmdstat_calls(tu_srv, "subscribe");
    long long evals = rs_cmdstat_calls(tu_srv, "evalsha");
    h = hold(cl[0], NULL);
    tp_hold_replies_of(proxy, 1, true);
    ck_assert_int_eq(hilock_lock_acquire(wl, (uint64_t)tu_ms(LONG_MS),
                                         (uint64_t)tu_ms(LONG_MS),
                                         on_acquired, &w2),
                     0);
    ck_assert(tu_run_until_redis(1, tu_ms(2000), "LLEN", QUEUE, (char *)NULL));
    release_held(h); /* handed to w2, heard before its busy answer */
    tu_run_for(50);
    ck_assert_int_eq(w2.r.calls, 0);
    tp_hold_replies_of(proxy, 1, false);
    granted(&w2, 1, 1);
    ck_assert_int_eq(rs_cmdstat_calls(tu_srv, "subscribe") - subs, 0);
    /* the hold, the attempt, the release and the retry */
    ck_assert_int_eq(rs_cmdstat_calls(tu_srv, "evalsha") - evals, 4);
    release_held(wl);
    nothing_left();
}
END_TEST

/* A waiter reads its hand-off only after the hand-off lease ran out (its
 * process stopped; here every byte of its client is held) and the next
 * waiter took the lock: it does not report the lock it no longer holds,
 * but queues again, and gets it from that waiter's release. */
START_TEST(test_late_handoff_is_not_a_grant)
{
    struct waiter w1 = {1, {0}}, w2 = {2, {0}};
    for (int i = 0; i < 3; i++)
        cl[i] = client(1, i == 1);
    struct hilock_lock *h = hold(cl[0], NULL);
    wait_queued(cl[1], tu_lock(cl[1], NAME, 1), &w1, (uint64_t)tu_ms(LONG_MS),
                1000, 1);
    wait_queued(cl[2], tu_lock(cl[2], NAME, 1), &w2, (uint64_t)tu_ms(LONG_MS),
                0, 2);
    ck_assert(tu_run_until_state(cl[1], HILOCK_STATE_PUBSUB_UP, tu_ms(2000)));
    tu_run_quiet();
    tp_blackhole(proxy, true); /* the first waiter's process stops */
    release_held(h);           /* handed to it, with a 1 s lease */
    ck_assert(tu_run_until_count(&w2.r.calls, 1, tu_ms(4000)));
    tu_assert_status(w2.r.status, 0); /* when that lease ran out */
    tp_blackhole(proxy, false); /* it resumes and reads its hand-off */
    tu_run_quiet();
    ck_assert_int_eq(w1.r.calls, 0);
    ck_assert_int_eq(overlaps, 0);
    ck_assert_int_eq(rs_int(tu_srv, "LLEN", QUEUE, (char *)NULL), 1);
    release_held(w2.r.lock);
    ck_assert(tu_run_until_count(&w1.r.calls, 1, tu_ms(2000)));
    tu_assert_status(w1.r.status, 0);
    ck_assert_int_eq(overlaps, 0);
    ck_assert_int_eq(tu_holds(NAME, cl[1], 1), 1);
}
END_TEST

/* The hand-off channel of the client whose waiter is queued at index i
 * (the listener tag is the entry's third field), into buf. */
static void queued_channel(int i, char *buf, size_t size)
{
    char idx[16];
    snprintf(idx, sizeof idx, "%d", i);
    char *e = rs_str(tu_srv, "LINDEX", QUEUE, idx, (char *)NULL);
    ck_assert_ptr_nonnull(e);
    char *lt = strchr(strchr(e, ':') + 1, ':') + 1;
    *strchr(lt, ':') = '\0';
    snprintf(buf, size, "%s:%s", TU_CHANNEL(NAME), lt);
    free(e);
}

static bool two_held(void *arg)
{
    (void)arg;
    return tp_held_commands(proxy) >= 2;
}

#define STALL_TIMEOUT_MS 400 /* the stalled waiter's request timeout */

/* Redis stalls (here: the proxy holds every command of the waiter's
 * client) while a queued waiter's attempt is out: it times out, and the
 * retry 50 ms later is held too. Between the two, the lock is handed to
 * that waiter by another client's release, and its message read. Redis
 * then applies the attempts that timed out after the hand-off: the first
 * claims the hold, the next count re-entries, and each late success is
 * undone. The waiter reports the lock only once an attempt made after
 * those confirmed it, and still holds it once every undo is through. */
START_TEST(test_handoff_after_timed_out_attempt_is_confirmed)
{
    struct waiter w = {1, {0}};
    struct hilock_options o;
    char chan[128];
    cl[0] = client(1, 0);
    ck_assert_ptr_nonnull(proxy = tp_new(tu_base, rs_port(tu_srv)));
    tu_options(&o);
    o.fair = 1;
    o.fencing = 1;
    o.node.port = tp_port(proxy);
    o.request_timeout_ms = STALL_TIMEOUT_MS;
    cl[1] = tu_client(&o);
    tu_client_ready(cl[1]);
    struct hilock_lock *h = hold(cl[0], NULL);
    struct hilock_lock *b = tu_lock(cl[1], NAME, 1);
    wait_queued(cl[1], b, &w, (uint64_t)tu_ms(LONG_MS), 0, 1);
    ck_assert(tu_run_until_state(cl[1], HILOCK_STATE_PUBSUB_UP, tu_ms(2000)));
    tu_run_quiet();
    queued_channel(0, chan, sizeof chan);
    tp_hold_after(proxy, 0); /* Redis stalls for this client's commands */
    ck_assert_int_eq(rs_int(tu_srv, "PUBLISH", chan, "wake", (char *)NULL),
                     1); /* the waiter looks again: held */
    ck_assert(tu_run_until(two_held, NULL, tu_ms(4000)));
    /* the first attempt timed out, the retry went out: hand the lock over
     * when that times out too, before the next one goes */
    tu_run_for(STALL_TIMEOUT_MS + 15);
    release_held(h);
    tu_run_for(100);
    tp_hold_after(proxy, -1); /* Redis applies what it held, in order */
    ck_assert(tu_run_until_count(&w.r.calls, 1, tu_ms(4000)));
    tu_assert_status(w.r.status, 0);
    tu_run_quiet();
    ck_assert_int_eq(tu_holds(NAME, cl[1], 1), 1);
    ck_assert_int_eq(overlaps, 0);
    release_held(b);
    ck_assert_int_eq(tu_exists(NAME), 0);
}
END_TEST

/* A process with 20 waiters queued first is killed (its connections
 * close; what it sends on the way out never arrives): the release passes
 * over its waiters, whom nobody can hear, and hands the lock to the live
 * waiter behind them in the same call, not after a hand-off lease per
 * dead waiter. Each dead entry is kept once (its client might have been
 * only reconnecting) and dropped when met deaf again. */
START_TEST(test_dead_waiters_cost_a_round_trip)
{
    enum { DEAD = 20 };
    struct waiter dead[DEAD], live = {2, {0}};
    char chan[128];
    cl[0] = client(1, 0);
    cl[1] = client(1, 1);
    cl[2] = client(1, 0);
    struct hilock_lock *h = hold(cl[0], NULL);
    for (int i = 0; i < DEAD; i++) {
        dead[i] = (struct waiter){1, {0}};
        wait_queued(cl[1], tu_lock(cl[1], NAME, (uint64_t)i + 1), &dead[i],
                    (uint64_t)tu_ms(LONG_MS), 0, i + 1);
    }
    wait_queued(cl[2], tu_lock(cl[2], NAME, 1), &live,
                (uint64_t)tu_ms(LONG_MS), 0, DEAD + 1);
    queued_channel(0, chan, sizeof chan);
    ck_assert(tu_numsub_becomes(chan, 1, tu_ms(2000)));
    kill_client(1);
    tp_cut_all(proxy); /* the killed process's sockets close */
    ck_assert(tu_numsub_becomes(chan, 0, tu_ms(2000)));
    /* the live waiter's channels are confirmed */
    ck_assert(tu_numsub_becomes(TU_CHANNEL(NAME), 1, tu_ms(2000)));
    tu_run_quiet();
    long long token = rs_int(tu_srv, "GET", FENCE, (char *)NULL);
    long long t0 = tu_now_ms();
    release_held(h);
    ck_assert(tu_run_until_count(&live.r.calls, 1, tu_ms(1000)));
    tu_assert_status(live.r.status, 0);
    ck_assert_int_le(live.r.at_ms - t0, tu_ms(100));
    ck_assert_int_eq(tu_holds(NAME, cl[2], 1), 1);
    ck_assert_int_eq(rs_int(tu_srv, "LLEN", QUEUE, (char *)NULL), DEAD);
    /* the waiters passed over drew no token: the next one is the one
     * handed */
    ck_assert_int_eq(live.r.res.token, token + 1);
    ck_assert_int_eq(rs_int(tu_srv, "GET", FENCE, (char *)NULL), token + 1);
    /* met deaf again: dropped, and with nobody live left the lock is
     * free, and the counter as it was: a hand-off that went to nobody
     * drew no token */
    release_held(live.r.lock);
    ck_assert_int_eq(tu_exists(NAME), 0);
    ck_assert_int_eq(rs_int(tu_srv, "GET", FENCE, (char *)NULL), token + 1);
    ck_assert_int_eq(tu_exists(QUEUE), 0);
    ck_assert_int_eq(tu_exists(OWNERS), 0);
    ck_assert_int_eq(overlaps, 0);
}
END_TEST

/* A waiter whose client is reconnecting when its turn comes cannot hear
 * its hand-off: the lock goes to the next waiter, and the deaf one keeps
 * its place at the head when its client is back, ahead of a waiter that
 * queued after it. */
START_TEST(test_deaf_waiter_keeps_its_place)
{
    struct waiter wb = {1, {0}}, wc = {2, {0}}, wd = {3, {0}};
    char chan[128];
    for (int i = 0; i < 4; i++)
        cl[i] = client(1, i == 1);
    struct hilock_lock *h = hold(cl[0], NULL);
    wait_queued(cl[1], tu_lock(cl[1], NAME, 1), &wb, (uint64_t)tu_ms(LONG_MS),
                0, 1);
    wait_queued(cl[2], tu_lock(cl[2], NAME, 1), &wc, (uint64_t)tu_ms(LONG_MS),
                0, 2);
    queued_channel(0, chan, sizeof chan);
    ck_assert(tu_numsub_becomes(TU_CHANNEL(NAME), 2, tu_ms(2000)));
    tp_refuse(proxy, true);
    tp_cut_all(proxy); /* its client reconnects, in vain for now */
    ck_assert(tu_numsub_becomes(chan, 0, tu_ms(2000)));
    release_held(h);
    ck_assert(tu_run_until_count(&wc.r.calls, 1, tu_ms(1000)));
    tu_assert_status(wc.r.status, 0);
    wait_queued(cl[3], tu_lock(cl[3], NAME, 1), &wd, (uint64_t)tu_ms(LONG_MS),
                0, 2);
    tp_refuse(proxy, false);
    ck_assert(tu_run_until_state(cl[1], HILOCK_STATE_PUBSUB_UP, tu_ms(4000)));
    ck_assert(tu_numsub_becomes(chan, 1, tu_ms(2000)));
    tu_run_quiet(); /* its retry keeps the entry where it was */
    ck_assert_int_eq(wb.r.calls, 0);
    ck_assert_int_eq(rs_int(tu_srv, "LLEN", QUEUE, (char *)NULL), 2);
    release_held(wc.r.lock);
    ck_assert(tu_run_until_count(&wb.r.calls, 1, tu_ms(1000)));
    tu_assert_status(wb.r.status, 0);
    ck_assert_int_eq(wd.r.calls, 0);
    ck_assert_int_eq(order[1], 1);
    ck_assert_int_eq(overlaps, 0);
}
END_TEST

/* A waiter that finds the lock free (its holder had no fair mode) behind
 * an entry that cannot hear a hand-off takes the lock itself, in the same
 * call, and leaves no second entry of its own behind (one that would
 * later hand it a hold it never counts). */
START_TEST(test_waiter_past_a_deaf_entry_takes_the_lock_once)
{
    struct waiter wb = {1, {0}}, wc = {2, {0}};
    char chan[128];
    cl[0] = client(0, 0);
    cl[1] = client(1, 1);
    cl[2] = client(1, 0);
    struct hilock_lock *h = hold(cl[0], NULL);
    wait_queued(cl[1], tu_lock(cl[1], NAME, 1), &wb, (uint64_t)tu_ms(LONG_MS),
                0, 1);
    wait_queued(cl[2], tu_lock(cl[2], NAME, 1), &wc, (uint64_t)tu_ms(LONG_MS),
                0, 2);
    queued_channel(0, chan, sizeof chan);
    ck_assert(tu_numsub_becomes(TU_CHANNEL(NAME), 2, tu_ms(2000)));
    tp_refuse(proxy, true);
    tp_cut_all(proxy);
    ck_assert(tu_numsub_becomes(chan, 0, tu_ms(2000)));
    release_held(h); /* freed and published: the live waiter looks again */
    ck_assert(tu_run_until_count(&wc.r.calls, 1, tu_ms(1000)));
    tu_assert_status(wc.r.status, 0);
    tu_run_quiet();
    ck_assert_int_eq(rs_int(tu_srv, "LLEN", QUEUE, (char *)NULL), 1);
    ck_assert_int_eq(tu_holds(NAME, cl[2], 1), 1);
    ck_assert_int_eq(wb.r.calls, 0);
}
END_TEST

/* A wait that times out and one that is cancelled take their entries out
 * of the queue. */
START_TEST(test_timeout_and_cancel_leave_queue)
{
    struct waiter w1 = {1, {0}}, w2 = {2, {0}};
    for (int i = 0; i < 3; i++)
        cl[i] = client(1, 0);
    struct hilock_lock *h = tu_lock(cl[0], NAME, 1);
    tu_assert_status(tu_acquire(h, 0, (uint64_t)tu_ms(LONG_MS), NULL), 0);
    struct hilock_lock *l1 = tu_lock(cl[1], NAME, 1);
    wait_queued(cl[1], l1, &w1, 300, 0, 1);
    struct hilock_lock *l2 = tu_lock(cl[2], NAME, 1);
    wait_queued(cl[2], l2, &w2, (uint64_t)tu_ms(LONG_MS), 0, 2);
    ck_assert(tu_run_until_count(&w1.r.calls, 1, tu_ms(2000)));
    tu_assert_status(w1.r.status, HILOCK_ETIMEDOUT);
    ck_assert(tu_run_until_redis(1, tu_ms(1000), "LLEN", QUEUE, (char *)NULL));
    ck_assert_int_eq(rs_int(tu_srv, "HLEN", OWNERS, (char *)NULL), 1);
    ck_assert_int_eq(hilock_lock_cancel(l2), 0);
    ck_assert_int_eq(w2.r.calls, 1);
    tu_assert_status(w2.r.status, HILOCK_ECANCELED);
    ck_assert(tu_run_until_redis(0, tu_ms(1000), "LLEN", QUEUE, (char *)NULL));
    ck_assert_int_eq(tu_exists(OWNERS), 0);
    /* the release finds nobody queued: the lock is deleted */
    tu_assert_status(tu_release(h, NULL), 0);
    ck_assert_int_eq(tu_exists(NAME), 0);
}
END_TEST

/* A client without fair mode on the same name is excluded from a hold
 * handed over by a fair release, and its own release (which hands
 * nothing) still lets the queued fair waiter in. */
START_TEST(test_mixed_with_default_client)
{
    struct waiter wf = {1, {0}}, wd = {2, {0}};
    cl[0] = client(1, 0);
    cl[1] = client(1, 0);
    cl[2] = client(0, 0);
    struct hilock_lock *h = hold(cl[0], NULL);
    struct hilock_lock *lf = tu_lock(cl[1], NAME, 1);
    struct hilock_lock *ld = tu_lock(cl[2], NAME, 1);
    wait_queued(cl[1], lf, &wf, (uint64_t)tu_ms(LONG_MS), 0, 1);
    ck_assert_int_eq(hilock_lock_acquire(ld, (uint64_t)tu_ms(LONG_MS), 0,
                                         on_acquired, &wd),
                     0);
    release_held(h); /* handed to the fair waiter */
    ck_assert(tu_run_until_count(&wf.r.calls, 1, tu_ms(1000)));
    tu_assert_status(wf.r.status, 0);
    tu_run_quiet();
    ck_assert_int_eq(wd.r.calls, 0);
    release_held(lf); /* nobody queued: deleted and published */
    ck_assert(tu_run_until_count(&wd.r.calls, 1, tu_ms(1000)));
    tu_assert_status(wd.r.status, 0);
    /* and the other way round: a fair waiter behind the default holder */
    struct waiter wf2 = {1, {0}};
    wait_queued(cl[1], lf, &wf2, (uint64_t)tu_ms(LONG_MS), 0, 1);
    release_held(ld);
    ck_assert(tu_run_until_count(&wf2.r.calls, 1, tu_ms(1000)));
    tu_assert_status(wf2.r.status, 0);
    ck_assert_int_eq(overlaps, 0);
    ck_assert_int_eq(tu_exists(QUEUE), 0);
}
END_TEST

/* A client without fair mode that waits joins the queue of the fair
 * clients on its name (woken when the queue starts): when its entry comes
 * up, the release frees the lock for it instead of handing it to the fair
 * waiter behind, which waits its turn. So it is served in its place in
 * line, not after every fair waiter that comes. */
START_TEST(test_default_waiter_served_in_its_place)
{
    struct waiter f1 = {1, {0}}, f2 = {2, {0}}, d = {3, {0}};
    for (int i = 0; i < 4; i++)
        cl[i] = client(i < 3, 0);
    struct hilock_lock *h = hold(cl[0], NULL);
    wait_default(cl[3], &d);
    /* the queue it starts wakes the default waiter, which joins it */
    wait_queued(cl[1], tu_lock(cl[1], NAME, 1), &f1, (uint64_t)tu_ms(LONG_MS),
                0, 2);
    wait_queued(cl[2], tu_lock(cl[2], NAME, 1), &f2, (uint64_t)tu_ms(LONG_MS),
                0, 3);
    release_held(h);
    ck_assert(tu_run_until_count(&f1.r.calls, 1, tu_ms(1000)));
    release_held(f1.r.lock);
    ck_assert(tu_run_until_count(&d.r.calls, 1, tu_ms(1000)));
    tu_assert_status(d.r.status, 0);
    ck_assert_int_eq(f2.r.calls, 0);
    release_held(d.r.lock);
    ck_assert(tu_run_until_count(&f2.r.calls, 1, tu_ms(1000)));
    tu_assert_status(f2.r.status, 0);
    ck_assert_int_eq(order[0], 1);
    ck_assert_int_eq(order[1], 3);
    ck_assert_int_eq(order[2], 2);
    ck_assert_int_eq(overlaps, 0);
    ck_assert_int_eq(tu_exists(QUEUE), 0);
    ck_assert_int_eq(tu_exists(OWNERS), 0);
}
END_TEST

/* Fair workers take one lock again and again as fast as they can while
 * waiters without fair mode come, one acquisition each. */
enum { MIX_FAIR = 3, MIX_DEFAULT = 3, MIX_WORKERS = MIX_FAIR + MIX_DEFAULT };
struct mix_worker {
    struct hilock_lock *lock;
    int since;    /* acquisitions by anyone when its wait began */
    int longest;  /* most acquisitions by others during one of its waits */
    int got;
    int loop;     /* takes the lock again after each release */
    int fenced;   /* its client draws fencing tokens */
};
static struct mix_worker mix[MIX_WORKERS];
static int mix_total, mix_errors, mix_defaults_done, mix_stop, mix_idle;
static int mix_bad_tokens;
static int64_t mix_last_token;

static void mix_acquire(struct mix_worker *w);

static void mix_released(struct hilock_lock *lock, int status,
                         const struct hilock_result *res, void *arg)
{
    struct mix_worker *w = arg;
    (void)lock;
    (void)res;
    mix_errors += status != 0;
    if (w->loop && !mix_stop)
        mix_acquire(w);
    else
        mix_idle++;
}

static void mix_acquired(struct hilock_lock *lock, int status,
                         const struct hilock_result *res, void *arg)
{
    struct mix_worker *w = arg;
    (void)res;
    if (status != 0) {
        mix_errors++;
        return;
    }
    if (mix_total - w->since > w->longest)
        w->longest = mix_total - w->since;
    mix_total++;
    w->got++;
    if (w->fenced) { /* the fenced workers' tokens grow, whoever handed */
        mix_bad_tokens += res->token <= mix_last_token;
        mix_last_token = res->token;
    }
    mix_defaults_done += !w->loop;
    ck_assert_int_eq(hilock_lock_release(lock, mix_released, w), 0);
}

static void mix_acquire(struct mix_worker *w)
{
    w->since = mix_total;
    ck_assert_int_eq(hilock_lock_acquire(w->lock, (uint64_t)tu_ms(LONG_MS), 0,
                                         mix_acquired, w),
                     0);
}

/* Three fair workers hand the lock on among themselves without pause;
 * three waiters without fair mode come meanwhile. Each of them gets the
 * lock after about as many acquisitions by others as there are workers
 * ahead of it (its place in line, plus one pass of slack), not never. */
START_TEST(test_default_waiters_not_starved_by_fair_workers)
{
    struct hilock_client *c[MIX_WORKERS];
    memset(mix, 0, sizeof mix);
    mix_total = mix_errors = mix_defaults_done = mix_stop = mix_idle = 0;
    for (int i = 0; i < MIX_WORKERS; i++) {
        c[i] = client(i < MIX_FAIR, 0);
        mix[i].lock = tu_lock(c[i], NAME, 1);
        mix[i].loop = i < MIX_FAIR;
    }
    for (int i = 0; i < MIX_FAIR; i++)
        mix_acquire(&mix[i]);
    ck_assert(tu_run_until_count(&mix_total, 20, tu_ms(5000)));
    for (int i = MIX_FAIR; i < MIX_WORKERS; i++)
        mix_acquire(&mix[i]);
    ck_assert_msg(tu_run_until_count(&mix_defaults_done, MIX_DEFAULT,
                                     tu_ms(5000)),
                  "%d of %d waiters without fair mode got the lock in %d "
                  "acquisitions", mix_defaults_done, MIX_DEFAULT, mix_total);
    mix_stop = 1;
    tu_run_quiet();
    for (int i = MIX_FAIR; i < MIX_WORKERS; i++)
        ck_assert_msg(mix[i].longest <= 2 * MIX_WORKERS,
                      "waiter %d got the lock after %d acquisitions of "
                      "others", i, mix[i].longest);
    ck_assert_int_eq(mix_errors, 0);
    for (int i = 0; i < MIX_WORKERS; i++)
        hilock_client_free(c[i]);
}
END_TEST

/* A ready client without fencing, fair or not: its first attempt on a
 * free name goes as the plain RESTORE, its release as HDEL (plain.c). */
static struct hilock_client *client_plain(int fair)
{
    struct hilock_options o;
    tu_options(&o);
    o.fair = fair;
    struct hilock_client *c = tu_client(&o);
    tu_client_ready(c);
    return c;
}

/* Three fair and three default workers, each on its own client and all
 * on the plain path, take one name again and again. A release without a
 * script (HDEL) leaves the name free with waiters queued, and a first
 * attempt (RESTORE) must not take it past them: no waiter of either mode
 * waits through more acquisitions of others than its place in line and
 * a pass of slack, however long the run. */
START_TEST(test_no_waiter_passed_on_a_free_name)
{
    enum { RUN = 600 };
    struct hilock_client *c[MIX_WORKERS];
    memset(mix, 0, sizeof mix);
    mix_total = mix_errors = mix_defaults_done = mix_stop = mix_idle = 0;
    for (int i = 0; i < MIX_WORKERS; i++) {
        c[i] = client_plain(i < MIX_FAIR);
        mix[i].lock = tu_lock(c[i], NAME, 1);
        mix[i].loop = 1;
    }
    for (int i = 0; i < MIX_WORKERS; i++)
        mix_acquire(&mix[i]);
    ck_assert_msg(tu_run_until_count(&mix_total, RUN, tu_ms(20000)),
                  "%d of %d acquisitions", mix_total, RUN);
    mix_stop = 1;
    ck_assert(tu_run_until_count(&mix_idle, MIX_WORKERS, tu_ms(10000)));
    ck_assert_int_eq(mix_errors, 0);
    for (int i = 0; i < MIX_WORKERS; i++) {
        ck_assert_int_gt(mix[i].got, 0);
        ck_assert_msg(mix[i].longest <= 2 * MIX_WORKERS + 2,
                      "%s worker %d waited through %d acquisitions of "
                      "others", i < MIX_FAIR ? "fair" : "default", i,
                      mix[i].longest);
    }
    tu_run_quiet();
    ck_assert_int_eq(tu_exists(NAME), 0);
    ck_assert_int_eq(tu_exists(QUEUE), 0);
    for (int i = 0; i < MIX_WORKERS; i++)
        hilock_client_free(c[i]);
}
END_TEST

/* Fair workers that draw fencing tokens beside workers without fair mode
 * or fencing: whoever frees the name or hands it on, each fair holder's
 * token is larger than the one before. */
START_TEST(test_fair_tokens_grow_beside_default_clients)
{
    enum { RUN = 300 };
    struct hilock_client *c[MIX_WORKERS];
    memset(mix, 0, sizeof mix);
    mix_total = mix_errors = mix_defaults_done = mix_stop = mix_idle = 0;
    mix_bad_tokens = 0;
    mix_last_token = 0;
    for (int i = 0; i < MIX_WORKERS; i++) {
        c[i] = i < MIX_FAIR ? client(1, 0) : client_plain(0);
        mix[i].lock = tu_lock(c[i], NAME, 1);
        mix[i].loop = 1;
        mix[i].fenced = i < MIX_FAIR;
    }
    for (int i = 0; i < MIX_WORKERS; i++)
        mix_acquire(&mix[i]);
    ck_assert_msg(tu_run_until_count(&mix_total, RUN, tu_ms(20000)),
                  "%d of %d acquisitions", mix_total, RUN);
    mix_stop = 1;
    ck_assert(tu_run_until_count(&mix_idle, MIX_WORKERS, tu_ms(10000)));
    ck_assert_int_eq(mix_errors, 0);
    ck_assert_int_eq(mix_bad_tokens, 0);
    for (int i = 0; i < MIX_WORKERS; i++)
        hilock_client_free(c[i]);
}
END_TEST

/* A waiter without fair mode that went away after joining the queue costs
 * the fair waiter behind it at most the short turn it is given. */
START_TEST(test_gone_default_waiter_costs_a_turn)
{
    struct waiter f1 = {1, {0}}, d = {3, {0}};
    cl[0] = client(1, 0);
    cl[1] = client(1, 0);
    cl[3] = client(0, 1);
    struct hilock_lock *h = hold(cl[0], NULL);
    wait_default(cl[3], &d);
    struct hilock_lock *l1 = tu_lock(cl[1], NAME, 1);
    wait_queued(cl[1], l1, &f1, (uint64_t)tu_ms(LONG_MS), 0, 2);
    /* the fair waiter goes first: put it behind the default one */
    ck_assert_int_eq(hilock_lock_cancel(l1), 0);
    ck_assert(tu_run_until_redis(1, tu_ms(2000), "LLEN", QUEUE,
                                 (char *)NULL));
    struct waiter f2 = {1, {0}};
    wait_queued(cl[1], l1, &f2, (uint64_t)tu_ms(LONG_MS), 0, 2);
    kill_client(3);
    long long t0 = tu_now_ms();
    release_held(h);
    ck_assert(tu_run_until_count(&f2.r.calls, 1, tu_ms(2000)));
    tu_assert_status(f2.r.status, 0);
    ck_assert_int_lt(f2.r.at_ms - t0, tu_ms(900)); /* a 500 ms turn */
    ck_assert_int_eq(overlaps, 0);
}
END_TEST

/* A release whose reply is lost is sent again: it hands the lock over
 * once (one token drawn), and the last release leaves no key behind. */
START_TEST(test_resent_release_applies_once)
{
    struct waiter w = {1, {0}};
    int64_t tok;
    cl[0] = client(1, 1);
    cl[1] = client(1, 0);
    struct hilock_lock *h = hold(cl[0], &tok);
    wait_queued(cl[1], tu_lock(cl[1], NAME, 1), &w, (uint64_t)tu_ms(LONG_MS), 0, 1);
    tp_cut_next_reply(proxy);
    release_held(h);
    ck_assert(!tp_cut_pending(proxy));
    ck_assert(tu_run_until_count(&w.r.calls, 1, tu_ms(1000)));
    tu_assert_status(w.r.status, 0);
    ck_assert_int_eq(w.r.res.token, tok + 1);
    tu_run_quiet();
    ck_assert_int_eq(tu_fence(NAME), tok + 1);
    ck_assert_int_eq(tu_holds(NAME, cl[1], 1), 1);
    release_held(w.r.lock);
    ck_assert_int_eq(tu_exists(NAME), 0);
    ck_assert_int_eq(tu_exists(QUEUE), 0);
}
END_TEST

/* A fair client takes a free name with no queue as a default client
 * does: one RESTORE, no script. On a held name the RESTORE is refused and
 * the fair script queues the waiter, which the release hands the lock. */
START_TEST(test_free_name_taken_by_restore)
{
    struct waiter w = {1, {0}};
    cl[0] = client_unfenced();
    cl[1] = client_unfenced();
    struct hilock_lock *a = tu_lock(cl[0], NAME, 1);
    long long restores = rs_cmdstat_calls(tu_srv, "restore");
    long long scripts = rs_cmdstat_calls(tu_srv, "evalsha");
    tu_assert_status(tu_acquire(a, (uint64_t)tu_ms(LONG_MS), 0, NULL), 0);
    holding = 1;
    ck_assert_int_eq(rs_cmdstat_calls(tu_srv, "restore") - restores, 1);
    ck_assert_int_eq(rs_cmdstat_calls(tu_srv, "evalsha") - scripts, 0);
    ck_assert_int_eq(tu_holds(NAME, cl[0], 1), 1);
    wait_queued(cl[1], tu_lock(cl[1], NAME, 1), &w, (uint64_t)tu_ms(LONG_MS),
                0, 1);
    tu_run_quiet();
    release_held(a);
    granted(&w, 1, 1);
    release_held(w.r.lock);
    nothing_left();
}
END_TEST

/* A fair client's release of its only hold, taken without a wait and
 * with no waiter of its own parked on the name, is the plain HDEL and the
 * release message (no script): it leaves the queue's marker, and the
 * waiter queued meanwhile, woken by the message, takes the lock at its
 * retry. A hold that came through a wait (others were in line, and most
 * likely still are) goes back by the fair script, which hands the lock to
 * the next at once instead of waking every client on the name. */
START_TEST(test_fair_release_without_own_waiters_is_plain)
{
    struct waiter w1 = {1, {0}}, w0 = {0, {0}};
    cl[0] = client_unfenced();
    cl[1] = client_unfenced();
    struct hilock_lock *h = hold(cl[0], NULL);
    wait_queued(cl[1], tu_lock(cl[1], NAME, 1), &w1, (uint64_t)tu_ms(LONG_MS),
                0, 1);
    long long execs = rs_cmdstat_calls(tu_srv, "exec");
    release_held(h);
    ck_assert_int_eq(rs_cmdstat_calls(tu_srv, "exec") - execs, 1);
    granted(&w1, 1, 1);
    wait_queued(cl[0], tu_lock(cl[0], NAME, 2), &w0, (uint64_t)tu_ms(LONG_MS),
                0, 1);
    /* w1 waited for its hold: the script hands it to w0 */
    release_held(w1.r.lock);
    granted(&w0, 0, 2);
    ck_assert_int_eq(rs_cmdstat_calls(tu_srv, "exec") - execs, 1);
    release_held(w0.r.lock);
    ck_assert_int_eq(rs_cmdstat_calls(tu_srv, "exec") - execs, 1);
    nothing_left();
}
END_TEST

/* cl[0] holds NAME while w, of cl[1], queues and hears its channel; then
 * the key goes (as when the holder's lease runs out), leaving the lock
 * free with w still queued. Returns the RESTORE calls counted so far. */
static long long free_with_a_queued_waiter(struct waiter *w)
{
    char chan[128];
    cl[0] = client_unfenced();
    hold(cl[0], NULL);
    wait_queued(cl[1], tu_lock(cl[1], NAME, 1), w, (uint64_t)tu_ms(LONG_MS),
                0, 1);
    queued_channel(0, chan, sizeof chan);
    ck_assert(tu_numsub_becomes(chan, 1, tu_ms(2000)));
    tu_run_quiet();
    ck_assert_int_eq(rs_int(tu_srv, "DEL", NAME, (char *)NULL), 1);
    holding = 0;
    return rs_cmdstat_calls(tu_srv, "restore");
}

/* The lock is free while a waiter of a fair client is queued (its
 * holder's lease ran out: here the key is deleted, and the waiter's next
 * look is the holder's lease away). That client's next acquire of the
 * name does not take it by RESTORE: the fair script hands it to the
 * queued waiter first, and the newcomer gets it at that one's release. */
START_TEST(test_no_restore_past_own_waiter)
{
    struct waiter w = {1, {0}}, late = {2, {0}};
    cl[1] = client_unfenced();
    long long restores = free_with_a_queued_waiter(&w);
    ck_assert_int_eq(hilock_lock_acquire(tu_lock(cl[1], NAME, 2),
                                         (uint64_t)tu_ms(LONG_MS), 0,
                                         on_acquired, &late),
                     0);
    granted(&w, 1, 1);
    ck_assert_int_eq(late.r.calls, 0);
    ck_assert_int_eq(order[0], 1);
    ck_assert_int_eq(rs_cmdstat_calls(tu_srv, "restore") - restores, 0);
    release_held(w.r.lock);
    granted(&late, 1, 2);
    ck_assert_int_eq(order[1], 2);
    release_held(late.r.lock);
    nothing_left();
}
END_TEST

/* The same free lock with a live waiter queued, taken by a client that
 * has no waiter on the name: its RESTORE takes it (as a client without
 * fair mode would), and its fair release serves the queue: the waiter
 * waits one hold longer at most. */
START_TEST(test_restore_past_queue_serves_it_at_release)
{
    struct waiter w = {1, {0}}, late = {2, {0}};
    cl[1] = client_unfenced();
    cl[2] = client_unfenced();
    long long restores = free_with_a_queued_waiter(&w);
    ck_assert_int_eq(hilock_lock_acquire(tu_lock(cl[2], NAME, 1),
                                         (uint64_t)tu_ms(LONG_MS), 0,
                                         on_acquired, &late),
                     0);
    granted(&late, 2, 1);
    ck_assert_int_eq(rs_cmdstat_calls(tu_srv, "restore") - restores, 1);
    ck_assert_int_eq(w.r.calls, 0);
    release_held(late.r.lock);
    granted(&w, 1, 1);
    release_held(w.r.lock);
    nothing_left();
}
END_TEST

/* Every waiter queued on the name was killed, and the holder released
 * with the queue's marker left in the hash: an acquire that does not wait
 * finds nobody live in line and takes the lock at once, instead of being
 * refused until the old lease runs out. */
START_TEST(test_try_past_dead_waiters_takes_the_lock)
{
    struct waiter dead = {1, {0}};
    char chan[128];
    cl[0] = client(0, 0);
    cl[1] = client(1, 1);
    cl[2] = client(0, 0);
    struct hilock_lock *h = hold(cl[0], NULL);
    wait_queued(cl[1], tu_lock(cl[1], NAME, 1), &dead,
                (uint64_t)tu_ms(LONG_MS), 0, 1);
    queued_channel(0, chan, sizeof chan);
    kill_client(1);
    tp_cut_all(proxy);
    ck_assert(tu_numsub_becomes(chan, 0, tu_ms(2000)));
    release_held(h);
    ck_assert_int_eq(rs_int(tu_srv, "HEXISTS", NAME, "hilock:queued",
                            (char *)NULL),
                     1);
    struct hilock_lock *t = tu_lock(cl[2], NAME, 1);
    tu_assert_status(tu_acquire(t, 0, 0, NULL), 0);
    ck_assert_int_eq(tu_holds(NAME, cl[2], 1), 1);
    tu_assert_status(tu_release(t, NULL), 0);
}
END_TEST

static Suite *fair_suite(void)
{
    Suite *s = suite_create("fair");
    TCase *tc = tcase_create("fair");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_fifo_across_clients);
    tcase_add_test(tc, test_same_client_handoff_needs_no_message);
    tcase_add_test(tc, test_gone_waiter_skipped_after_deadline);
    tcase_add_test(tc, test_handoff_to_gone_client_expires);
    tcase_add_test(tc, test_lost_handoff_message_recovered);
    tcase_add_test(tc, test_waiting_again_keeps_the_subscriptions);
    tcase_add_test(tc, test_late_handoff_is_not_a_grant);
    tcase_add_test(tc, test_handoff_after_timed_out_attempt_is_confirmed);
    tcase_add_test(tc, test_dead_waiters_cost_a_round_trip);
    tcase_add_test(tc, test_deaf_waiter_keeps_its_place);
    tcase_add_test(tc, test_waiter_past_a_deaf_entry_takes_the_lock_once);
    tcase_add_test(tc, test_timeout_and_cancel_leave_queue);
    tcase_add_test(tc, test_mixed_with_default_client);
    tcase_add_test(tc, test_resent_release_applies_once);
    tcase_add_test(tc, test_default_waiter_served_in_its_place);
    tcase_add_test(tc, test_gone_default_waiter_costs_a_turn);
    tcase_add_test(tc, test_default_waiters_not_starved_by_fair_workers);
    tcase_add_test(tc, test_no_waiter_passed_on_a_free_name);
    tcase_add_test(tc, test_fair_tokens_grow_beside_default_clients);
    tcase_add_test(tc, test_free_name_taken_by_restore);
    tcase_add_test(tc, test_fair_release_without_own_waiters_is_plain);
    tcase_add_test(tc, test_no_restore_past_own_waiter);
    tcase_add_test(tc, test_restore_past_queue_serves_it_at_release);
    tcase_add_test(tc, test_try_past_dead_waiters_takes_the_lock);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_main(fair_suite());
}
