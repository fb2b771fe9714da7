/* SPDX-License-Identifier: BSD-3-Clause */
/* test_faults.c -- the client under network and server faults, through the
 * loopback proxy of proxy.h: replies lost after Redis applied the command,
 * network stalls, a frozen server, restarts, SCRIPT FLUSH, keys of another
 * type, refused connections, and teardown from inside callbacks.
 *
 * Every client here talks to Redis through the proxy, with a 500 ms request
 * deadline (scaled by CK_TIMEOUT_MULTIPLIER, like the bounds that depend on
 * it) and reconnects after 20..200 ms; the synchronous rs_* helpers talk to
 * Redis directly, so they see the server's truth even while the proxy holds
 * or drops the client's bytes. Bounds are generous: a test that fails now
 * and then is a failing test. */
#include "testutil.h"
#include "proxy.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REQ_MS 500       /* request_timeout_ms of every client here... */
#define WD_MS 600        /* ...and watchdog_lease_ms... */
#define WAITERS 5

static int req_ms;       /* ...as they are set: tu_ms(REQ_MS)... */
static int wd_ms;        /* ...and tu_ms(WD_MS) */

static struct tp_proxy *proxy;
static struct hilock_client *client, *other;
static struct tu_result res[16];
static struct tu_result lost;
static long long pttl_at_lost; /* PTTL seen by lost_with_pttl */

/* A client through the proxy with a request_timeout_ms of request_ms;
 * fencing on or off. */
static struct hilock_client *proxied_client_waiting(int fencing,
                                                    int request_ms)
{
    struct hilock_options o;
    tu_options(&o);
    o.node.port = tp_port(proxy);
    o.request_timeout_ms = (uint32_t)request_ms;
    o.connect_timeout_ms = (uint32_t)req_ms;
    o.reconnect_min_ms = 20;
    o.reconnect_max_ms = 200;
    o.watchdog_lease_ms = (uint32_t)wd_ms;
    o.fencing = fencing;
    return tu_client(&o);
}

/* The same with the request timeout of this suite, req_ms. */
static struct hilock_client *proxied_client(int fencing)
{
    return proxied_client_waiting(fencing, req_ms);
}

static void setup(void)
{
    tu_setup();
    req_ms = tu_ms(REQ_MS);
    wd_ms = tu_ms(WD_MS);
    proxy = tp_new(tu_base, rs_port(tu_srv));
    ck_assert_ptr_nonnull(proxy);
    client = proxied_client(0);
    other = NULL;
    memset(res, 0, sizeof res);
    memset(&lost, 0, sizeof lost);
    pttl_at_lost = RS_ERR;
}

static void teardown(void)
{
    if (tu_srv)
        rs_resume(tu_srv); /* a test that failed while it was frozen */
    hilock_client_free(client);
    hilock_client_free(other);
    client = other = NULL;
    tp_free(proxy);
    proxy = NULL;
    tu_teardown();
}

/* Make sure l's client is connected, has loaded its scripts and has no
 * reply outstanding: a query's reply comes after the SCRIPT LOAD replies. */
static void settle(struct hilock_lock *l)
{
    tu_assert_status(tu_query(hilock_lock_query_held, l, NULL), 0);
}

/* Run until r has been called once, failing after timeout_ms. */
static void await(struct tu_result *r, int timeout_ms, const char *what)
{
    ck_assert_msg(tu_run_until_count(&r->calls, 1, timeout_ms),
                  "%s: no callback within %d ms", what, timeout_ms);
}

/* Run until the watchdog has renewed l's hold and l's client has read the
 * reply. */
static void await_renewal(struct hilock_lock *l)
{
    tu_await_renewal(l, wd_ms);
}

/* No renewal (no script call) for a whole watchdog period: for a lock that
 * must no longer be renewed. */
static void assert_no_renewal(void)
{
    tu_assert_no_script_call(wd_ms / 3);
}

/* ---- replies lost after Redis applied the command ----------------------- */

static bool both_called(void *arg)
{
    (void)arg;
    return res[0].calls >= 1 && res[1].calls >= 1;
}

/* Arm a cut, start op (which fires into res[0]), and check that it
 * succeeded, that the cut happened, and that the client came back on a new
 * connection to finish it. */
static void through_a_cut(int (*op)(void *), void *l)
{
    long accepted = tp_accepted(proxy);
    tp_cut_next_reply(proxy);
    tu_assert_status(op(l), 0);
    await(&res[0], tu_ms(REQ_MS + 3000), "operation whose reply was cut");
    tu_assert_status(res[0].status, 0);
    ck_assert_msg(!tp_cut_pending(proxy), "no reply passed the proxy");
    ck_assert_msg(tp_accepted(proxy) > accepted,
                  "the client did not reconnect after the cut");
    tu_run_quiet(); /* a duplicate callback would come now */
    ck_assert_int_eq(res[0].calls, 1);
}

static int op_try_acquire(void *l)
{
    return hilock_lock_acquire(l, 0, 30000, tu_record, &res[0]);
}

static int op_release(void *l)
{
    return hilock_lock_release(l, tu_record, &res[0]);
}

static int op_sem_take(void *s)
{
    return hilock_semaphore_acquire(s, 1, 0, tu_record_sem, &res[0]);
}

static int op_permit_take(void *p)
{
    return hilock_permit_acquire(p, 0, 30000, tu_record_permit, &res[0]);
}

static int op_sem_give(void *s)
{
    return hilock_semaphore_release(s, 1, tu_record_sem, &res[0]);
}

static int op_permit_give(void *p)
{
    return hilock_permit_release(p, tu_record_permit, &res[0]);
}

START_TEST(acquire_whose_reply_is_lost_is_applied_once)
{
    struct hilock_lock *l = tu_lock(client, "cut-acq", 1);
    settle(l);
    long long restore = rs_cmdstat_calls(tu_srv, "restore");
    long long evalsha = rs_cmdstat_calls(tu_srv, "evalsha");
    through_a_cut(op_try_acquire, l);
    /* taken plain; the resend, which may find it applied, is the script */
    ck_assert_int_eq(rs_cmdstat_calls(tu_srv, "restore"), restore + 1);
    ck_assert_int_eq(rs_cmdstat_calls(tu_srv, "evalsha"), evalsha + 1);
    ck_assert_int_eq(tu_holds("cut-acq", client, 1), 1);
    ck_assert_int_eq(tu_owner_fields("cut-acq"), 1);
    ck_assert_uint_eq(hilock_lock_hold_count(l), 1);
    struct hilock_result v;
    tu_assert_status(tu_release(l, &v), 0);
    ck_assert_int_eq(v.holds, 0);
    ck_assert_int_eq(tu_exists("cut-acq"), 0);
}
END_TEST

START_TEST(reentrant_acquire_whose_reply_is_lost_counts_one_hold)
{
    struct hilock_lock *l = tu_lock(client, "cut-re", 1);
    tu_assert_status(tu_acquire(l, 0, 30000, NULL), 0);
    through_a_cut(op_try_acquire, l);
    ck_assert_int_eq(tu_holds("cut-re", client, 1), 2);
    ck_assert_int_eq(tu_owner_fields("cut-re"), 1);
    ck_assert_uint_eq(hilock_lock_hold_count(l), 2);
    struct hilock_result v;
    tu_assert_status(tu_release(l, &v), 0);
    ck_assert_int_eq(v.holds, 1);
    tu_assert_status(tu_release(l, &v), 0);
    ck_assert_int_eq(v.holds, 0);
    ck_assert_int_eq(tu_exists("cut-re"), 0);
}
END_TEST

/* Two handles with the same name and tag are one owner. Their acquires go
 * out back to back on one connection and both replies are lost: each
 * resend must count once, leaving two holds, not four. */
START_TEST(twin_handles_acquiring_together_with_replies_lost_count_two_holds)
{
    struct hilock_lock *a = tu_lock(client, "cut-twin", 1);
    struct hilock_lock *b = tu_lock(client, "cut-twin", 1);
    settle(a);
    long accepted = tp_accepted(proxy);
    tp_cut_next_reply(proxy);
    tu_assert_status(hilock_lock_acquire(a, 0, 30000, tu_record, &res[0]), 0);
    tu_assert_status(hilock_lock_acquire(b, 0, 30000, tu_record, &res[1]), 0);
    ck_assert(tu_run_until(both_called, NULL, tu_ms(REQ_MS + 3000)));
    ck_assert(!tp_cut_pending(proxy));
    ck_assert_int_gt(tp_accepted(proxy), accepted);
    tu_run_quiet();
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(res[i].calls, 1);
        tu_assert_status(res[i].status, 0);
    }
    ck_assert_uint_eq(hilock_lock_hold_count(a), 1);
    ck_assert_uint_eq(hilock_lock_hold_count(b), 1);
    ck_assert_int_eq(tu_holds("cut-twin", client, 1), 2);
    /* two releases free it */
    struct hilock_result v;
    tu_assert_status(tu_release(a, &v), 0);
    tu_assert_status(tu_release(b, &v), 0);
    ck_assert_int_eq(v.holds, 0);
    ck_assert_int_eq(tu_exists("cut-twin"), 0);
}
END_TEST

START_TEST(fenced_acquire_whose_reply_is_lost_draws_one_token)
{
    hilock_client_free(client);
    client = proxied_client(1);
    struct hilock_lock *l = tu_lock(client, "cut-fence", 1);
    settle(l);
    through_a_cut(op_try_acquire, l);
    /* the resend returned the token of the applied acquire, drew no other */
    ck_assert_int_eq(res[0].res.token, 1);
    ck_assert_int_eq(hilock_lock_token(l), 1);
    ck_assert_int_eq(tu_fence("cut-fence"), 1);
    ck_assert_int_eq(tu_holds("cut-fence", client, 1), 1);
}
END_TEST

START_TEST(release_whose_reply_is_lost_is_applied_once)
{
    struct hilock_lock *l = tu_lock(client, "cut-rel", 1);
    tu_assert_status(tu_acquire(l, 0, 30000, NULL), 0);
    tu_assert_status(tu_acquire(l, 0, 30000, NULL), 0);
    ck_assert_int_eq(tu_holds("cut-rel", client, 1), 2);
    through_a_cut(op_release, l);
    ck_assert_int_eq(res[0].res.holds, 1);
    ck_assert_int_eq(tu_holds("cut-rel", client, 1), 1);
    ck_assert_uint_eq(hilock_lock_hold_count(l), 1);
    struct hilock_result v;
    tu_assert_status(tu_release(l, &v), 0);
    ck_assert_int_eq(v.holds, 0);
    ck_assert_int_eq(tu_exists("cut-rel"), 0);
}
END_TEST

START_TEST(full_release_whose_reply_is_lost_still_reports_none_left)
{
    struct hilock_lock *l = tu_lock(client, "cut-full", 1);
    tu_assert_status(tu_acquire(l, 0, 30000, NULL), 0);
    long long hdel = rs_cmdstat_calls(tu_srv, "hdel");
    /* the resend finds the hash gone: taken as done, not ENOTOWNER */
    through_a_cut(op_release, l);
    ck_assert_int_eq(rs_cmdstat_calls(tu_srv, "hdel"), hdel + 2); /* plain */
    ck_assert_int_eq(res[0].res.holds, 0);
    ck_assert_int_eq(tu_exists("cut-full"), 0);
    ck_assert_uint_eq(hilock_lock_hold_count(l), 0);
    /* and the lock is free for the next owner */
    struct hilock_lock *l2 = tu_lock(client, "cut-full", 2);
    tu_assert_status(tu_acquire(l2, 0, 30000, NULL), 0);
}
END_TEST

/* Read-write locks and semaphores keep their request ids apart from the
 * lock hash (Redisson's readers count its fields): each acquire and
 * release whose reply is lost is still applied once. */
START_TEST(rwlock_and_semaphore_requests_whose_replies_are_lost_apply_once)
{
    struct hilock_lock *r = NULL, *w = NULL;
    struct hilock_semaphore *s = NULL;
    struct hilock_permit *p = NULL;
    settle(tu_lock(client, "cut-probe", 1));
    tu_assert_status(hilock_rwlock_new(client, "cut-rw", 6, 1, HILOCK_READ,
                                       &r),
                     0);
    tu_assert_status(hilock_rwlock_new(client, "cut-w", 5, 1, HILOCK_WRITE,
                                       &w),
                     0);
    tu_assert_status(hilock_semaphore_new(client, "cut-sem", 7, &s), 0);
    tu_assert_status(hilock_permit_new(client, "cut-p", 5, &p), 0);
    rs_int(tu_srv, "SET", "cut-sem", "5", (char *)NULL);
    rs_int(tu_srv, "SET", "cut-p", "2", (char *)NULL);

    void *each[] = {r, r, r, w, s, p};
    int (*op[])(void *) = {op_try_acquire, op_try_acquire, op_release,
                           op_try_acquire, op_sem_take,    op_permit_take};
    for (size_t i = 0; i < 6; i++) {
        res[0] = (struct tu_result){0};
        through_a_cut(op[i], each[i]);
    }
    ck_assert_int_eq(tu_holds("cut-rw", client, 1), 1);
    ck_assert_uint_eq(hilock_lock_hold_count(r), 1);
    char f[64], g[80];
    snprintf(g, sizeof(g), "%s:write", tu_field(client, 1, f));
    ck_assert_int_eq(rs_int(tu_srv, "HGET", "cut-w", g, (char *)NULL), 1);
    ck_assert_int_eq(rs_int(tu_srv, "GET", "cut-sem", (char *)NULL), 4);
    ck_assert_int_eq(rs_int(tu_srv, "GET", "cut-p", (char *)NULL), 1);
    ck_assert_int_eq(rs_int(tu_srv, "ZCARD", "{cut-p}:timeout", (char *)NULL),
                     1);

    void *back[] = {r, w, s, p};
    int (*give[])(void *) = {op_release, op_release, op_sem_give,
                             op_permit_give};
    for (size_t i = 0; i < 4; i++) {
        res[0] = (struct tu_result){0};
        through_a_cut(give[i], back[i]);
    }
    ck_assert_int_eq(tu_exists("cut-rw"), 0);
    ck_assert_int_eq(tu_exists("cut-w"), 0);
    ck_assert_int_eq(tu_exists("hilock_rid:{cut-rw}"), 0);
    ck_assert_int_eq(rs_int(tu_srv, "GET", "cut-sem", (char *)NULL), 5);
    ck_assert_int_eq(rs_int(tu_srv, "GET", "cut-p", (char *)NULL), 2);
    ck_assert_int_eq(tu_exists("{cut-p}:timeout"), 0);
}
END_TEST

static bool cut_done(void *arg)
{
    (void)arg;
    return !tp_cut_pending(proxy);
}

/* The acquire of l on key, which Redis applied and whose reply was lost, is
 * undone soon (the key goes), and its callback still fired only once. */
static void assert_hold_undone(struct hilock_lock *l, const char *key,
                               const char *which)
{
    ck_assert_msg(tu_run_until_redis(0, tu_ms(REQ_MS + 2000), "EXISTS", key,
                                     (char *)NULL),
                  "%s acquire applied by Redis was left holding the lock "
                  "(PTTL %lld)",
                  which, rs_int(tu_srv, "PTTL", key, (char *)NULL));
    tu_run_quiet();
    ck_assert_int_eq(res[0].calls, 1);
    ck_assert_uint_eq(hilock_lock_hold_count(l), 0);
}

/* A success that comes after a cancel is released at once (hilock.h). Here
 * it never comes: Redis applied the acquire, the reply was lost with the
 * connection. The hold must still be undone, not left for its 30 s lease. */
START_TEST(canceled_acquire_applied_with_its_reply_lost_leaves_no_hold)
{
    struct hilock_lock *l = tu_lock(client, "cut-cancel", 1);
    settle(l);
    long long calls_before = tu_lock_calls();
    tp_cut_next_reply(proxy);
    tu_assert_status(hilock_lock_acquire(l, 0, 30000, tu_record, &res[0]), 0);
    tu_assert_status(hilock_lock_cancel(l), 0); /* still goes out */
    ck_assert_int_eq(res[0].calls, 1);
    tu_assert_status(res[0].status, HILOCK_ECANCELED);
    ck_assert_msg(tu_run_until(cut_done, NULL, tu_ms(2000)),
                  "the acquire's reply never came back to the proxy");
    ck_assert_int_gt(tu_lock_calls(), calls_before);
    assert_hold_undone(l, "cut-cancel", "a canceled");
}
END_TEST

/* The same when the acquire timed out: its bytes were held by a stall past
 * the deadline, then reached Redis, and the reply was lost. */
START_TEST(timed_out_acquire_applied_with_its_reply_lost_leaves_no_hold)
{
    struct hilock_lock *l = tu_lock(client, "cut-late", 1);
    settle(l);
    tp_blackhole(proxy, true);
    tu_assert_status(hilock_lock_acquire(l, 0, 30000, tu_record, &res[0]), 0);
    await(&res[0], tu_ms(REQ_MS + 2000), "acquire in a stall");
    tu_assert_status(res[0].status, HILOCK_ETIMEDOUT);
    ck_assert_int_eq(tu_exists("cut-late"), 0); /* not there yet */
    tp_cut_next_reply(proxy);
    tp_blackhole(proxy, false); /* the acquire reaches Redis now */
    ck_assert_msg(tu_run_until(cut_done, NULL, tu_ms(2000)),
                  "the held acquire never reached Redis");
    assert_hold_undone(l, "cut-late", "a timed-out");
}
END_TEST

/* ---- a frozen server and a stalled network ------------------------------ */

START_TEST(frozen_server_times_requests_out_once_and_a_late_success_is_undone)
{
    struct hilock_lock *l = tu_lock(client, "stall", 1);
    settle(l);
    long long calls_before = tu_lock_calls();
    ck_assert_int_eq(rs_pause(tu_srv), 0);
    long long t0 = tu_now_ms();
    tu_assert_status(hilock_lock_query_held(l, tu_record, &res[0]), 0);
    tu_assert_status(hilock_lock_acquire(l, 0, 30000, tu_record, &res[1]), 0);
    bool done = tu_run_until(both_called, NULL, tu_ms(REQ_MS + 3000));
    tu_run_quiet(); /* still frozen: nothing more may arrive */
    ck_assert_int_eq(rs_resume(tu_srv), 0);
    ck_assert_msg(done, "no callback while the server was frozen");
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(res[i].calls, 1);
        tu_assert_status(res[i].status, HILOCK_ETIMEDOUT);
        ck_assert_msg(res[i].at_ms - t0 >= req_ms - 50 &&
                          res[i].at_ms - t0 < req_ms + tu_ms(1500),
                      "request %d timed out after %lld ms (deadline %d ms)",
                      i, res[i].at_ms - t0, req_ms);
    }
    ck_assert_uint_eq(hilock_lock_hold_count(l), 0);
    /* Redis now runs the acquire it had buffered (one RESTORE); its late
     * success must be released (a script call) */
    long long deadline = tu_now_ms() + tu_ms(5000);
    while ((tu_lock_calls() < calls_before + 2 || tu_exists("stall") != 0) &&
           tu_now_ms() < deadline)
        tu_run_for(10);
    ck_assert_msg(tu_lock_calls() >= calls_before + 2,
                  "the late acquire success was never released");
    ck_assert_msg(tu_exists("stall") == 0,
                  "a late acquire success was left holding the lock");
    tu_run_quiet();
    ck_assert_int_eq(res[0].calls, 1);
    ck_assert_int_eq(res[1].calls, 1);
    /* and the lock works again on the same connection */
    tu_assert_status(tu_acquire(l, 0, 30000, NULL), 0);
    ck_assert_int_eq(tu_holds("stall", client, 1), 1);
}
END_TEST

/* Requests sent apart while the server is frozen time out each at its own
 * deadline, the request timeout after it was sent: the later one is not
 * failed with the earlier one, nor the earlier one late -- also when the
 * connection's deadline timer was last armed for a request that got its
 * reply. */
START_TEST(requests_sent_apart_in_a_stall_each_time_out_at_its_own_deadline)
{
    struct hilock_lock *a = tu_lock(client, "apart-a", 1);
    struct hilock_lock *b = tu_lock(client, "apart-b", 1);
    settle(a); /* answered: its deadline was armed and is gone */
    ck_assert_int_eq(rs_pause(tu_srv), 0);
    long long t0 = tu_now_ms();
    tu_assert_status(hilock_lock_query_held(a, tu_record, &res[0]), 0);
    tu_run_for(req_ms / 2);
    long long t1 = tu_now_ms();
    tu_assert_status(hilock_lock_query_held(b, tu_record, &res[1]), 0);
    bool done = tu_run_until(both_called, NULL, tu_ms(REQ_MS + 3000));
    ck_assert_int_eq(rs_resume(tu_srv), 0);
    ck_assert_msg(done, "no callback while the server was frozen");
    long long sent[2] = {t0, t1};
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(res[i].calls, 1);
        tu_assert_status(res[i].status, HILOCK_ETIMEDOUT);
        ck_assert_msg(res[i].at_ms - sent[i] >= req_ms - 50 &&
                          res[i].at_ms - sent[i] < req_ms + tu_ms(1500),
                      "request %d timed out after %lld ms (deadline %d ms)",
                      i, res[i].at_ms - sent[i], req_ms);
    }
    tu_run_quiet();
    ck_assert_int_eq(res[0].calls, 1);
    ck_assert_int_eq(res[1].calls, 1);
}
END_TEST

/* An acquire whose wait outlasts the request timeout, on a frozen server:
 * its first attempt times out, the second is out when the wait ends, and
 * the acquire ends then, once -- not when that attempt times out, three
 * quarters of a request timeout later. */
START_TEST(acquire_waiting_past_the_request_timeout_in_a_stall_ends_with_its_wait)
{
    struct hilock_lock *l = tu_lock(client, "stall-wait", 1);
    int wait_ms = req_ms + req_ms / 4;
    settle(l);
    ck_assert_int_eq(rs_pause(tu_srv), 0);
    long long t0 = tu_now_ms();
    tu_assert_status(
        hilock_lock_acquire(l, (uint64_t)wait_ms, 30000, tu_record, &res[0]),
        0);
    bool done = tu_run_until_count(&res[0].calls, 1, wait_ms + tu_ms(3000));
    ck_assert_int_eq(rs_resume(tu_srv), 0);
    ck_assert_msg(done, "the waiting acquire never ended");
    tu_assert_status(res[0].status, HILOCK_ETIMEDOUT);
    ck_assert_msg(res[0].at_ms - t0 >= wait_ms - 50 &&
                      res[0].at_ms - t0 < wait_ms + req_ms / 2,
                  "the acquire ended after %lld ms (wait %d ms)",
                  res[0].at_ms - t0, wait_ms);
    /* Redis runs the attempts it had buffered: each late success is
     * undone, and the callback stays the one. */
    long long deadline = tu_now_ms() + tu_ms(5000);
    while (tu_exists("stall-wait") != 0 && tu_now_ms() < deadline)
        tu_run_for(10);
    ck_assert_msg(tu_exists("stall-wait") == 0,
                  "a late attempt was left holding the lock");
    tu_run_quiet();
    ck_assert_int_eq(res[0].calls, 1);
    ck_assert_uint_eq(hilock_lock_hold_count(l), 0);
}
END_TEST

/* on_lost is not called after a release: a release still without its
 * reply (the server frozen) when the lease runs out ends the hold through
 * its own callback, and on_lost stays silent. */
START_TEST(lease_running_out_while_the_release_is_pending_is_not_lost)
{
    struct hilock_lock *l = tu_lock(client, "relpend", 1);
    tu_assert_status(hilock_lock_on_lost(l, tu_record, &lost), 0);
    tu_assert_status(tu_acquire(l, 0, (uint64_t)(req_ms / 2), NULL), 0);
    ck_assert_int_eq(rs_pause(tu_srv), 0);
    tu_assert_status(hilock_lock_release(l, tu_record, &res[0]), 0);
    bool done = tu_run_until_count(&res[0].calls, 1, tu_ms(REQ_MS + 3000));
    tu_run_quiet();
    ck_assert_int_eq(rs_resume(tu_srv), 0);
    ck_assert_msg(done, "no release callback while the server was frozen");
    tu_assert_status(res[0].status, HILOCK_ETIMEDOUT);
    ck_assert_msg(lost.calls == 0, "on_lost fired after the release");
    ck_assert_uint_eq(hilock_lock_hold_count(l), 0);
    tu_assert_status(tu_acquire_eventually(l, 0), 0); /* usable again */
    ck_assert_int_eq(lost.calls, 0);
}
END_TEST

/* A release that times out in a stall gives the hold up locally (it is
 * applied when the server resumes); the next acquire on the same handle is
 * a first acquisition again and reports the token Redis issued for it. */
START_TEST(release_timed_out_in_a_stall_gives_the_hold_up_and_tokens_stay_true)
{
    hilock_client_free(client);
    client = proxied_client(1);
    struct hilock_lock *l = tu_lock(client, "stale", 1);
    int64_t t2 = 0;
    struct hilock_result t1;
    /* a lease that outlives the stall: the hold cannot be lost meanwhile */
    tu_assert_status(tu_acquire(l, 0, 30000, &t1), 0);
    ck_assert_int_eq(rs_pause(tu_srv), 0);
    tu_assert_status(hilock_lock_release(l, tu_record, &res[0]), 0);
    await(&res[0], tu_ms(REQ_MS + 3000), "release");
    tu_assert_status(res[0].status, HILOCK_ETIMEDOUT);
    ck_assert_uint_eq(hilock_lock_hold_count(l), 0);
    tu_assert_status(hilock_lock_acquire(l, 10000, 30000, tu_record, &res[1]),
                     0);
    ck_assert_int_eq(rs_resume(tu_srv), 0);
    await(&res[1], tu_ms(5000), "acquire after the stall");
    tu_assert_status(res[1].status, 0);
    t2 = res[1].res.token;
    ck_assert_msg(t2 > t1.token, "token %lld after %lld", (long long)t2,
                  (long long)t1.token);
    ck_assert_int_eq(t2, tu_fence("stale"));
    ck_assert_int_eq(hilock_lock_hold_count(l), 1);
    ck_assert_int_eq(tu_holds("stale", client, 1), 1);
}
END_TEST

/* A watchdog lock whose release is out in a stall is not renewed
 * meanwhile: a renewal sent behind the release would outlive it (its
 * deadline is later) and, resent on the next connection after the release
 * timed out and its bytes were lost (a failover), give the lease of a hold
 * nobody has any more a new start. The key ends with the lease it had. */
START_TEST(watchdog_does_not_renew_a_hold_whose_release_is_out)
{
    struct hilock_options o;
    hilock_client_free(client);
    tu_options(&o);
    o.node.port = tp_port(proxy);
    o.request_timeout_ms = (uint32_t)tu_ms(1500);
    o.reconnect_min_ms = 20;
    o.reconnect_max_ms = 200;
    o.watchdog_lease_ms = (uint32_t)tu_ms(3000); /* renewed every second */
    client = tu_client(&o);
    struct hilock_lock *l = tu_lock(client, "rr", 1);
    settle(l);
    long long t0 = tu_now_ms();
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    tp_blackhole(proxy, true);
    tu_assert_status(hilock_lock_release(l, tu_record, &res[0]), 0);
    await(&res[0], tu_ms(1500 + 3000), "release in a stall");
    tu_assert_status(res[0].status, HILOCK_ETIMEDOUT);
    tp_cut_all(proxy); /* the release never reaches Redis */
    tp_blackhole(proxy, false);
    tu_assert_status(tu_query(hilock_lock_query_held, l, NULL), 0);
    long long left = tu_ms(3000) + tu_ms(300) - (tu_now_ms() - t0);
    if (left > 0)
        tu_run_for((int)left);
    ck_assert_msg(tu_exists("rr") == 0, "lease restarted: %lld ms left",
                  rs_int(tu_srv, "PTTL", "rr", (char *)NULL));
}
END_TEST

/* on_lost that records and asks Redis (directly) how long the key has
 * left: reported before expiry means a positive PTTL. */
static void lost_with_pttl(struct hilock_lock *lock, int status,
                           const struct hilock_result *result, void *arg)
{
    tu_record(lock, status, result, arg);
    if (lost.calls == 1)
        pttl_at_lost = rs_int(tu_srv, "PTTL", "bh", (char *)NULL);
}

START_TEST(network_stall_longer_than_the_lease_reports_lost_before_expiry)
{
    struct hilock_lock *l = tu_lock(client, "bh", 1);
    tu_assert_status(hilock_lock_on_lost(l, lost_with_pttl, &lost), 0);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    await_renewal(l);
    ck_assert_int_eq(lost.calls, 0);
    long long pttl = rs_int(tu_srv, "PTTL", "bh", (char *)NULL);
    ck_assert_msg(pttl > 0 && pttl <= wd_ms, "PTTL %lld", pttl);
    /* every renewal confirmed so far was sent before this moment, so the
     * lease may run out on the server wd_ms after it at the earliest */
    long long t0 = tu_now_ms();
    tp_blackhole(proxy, true);
    bool fired = tu_run_until_count(&lost.calls, 1, tu_ms(3000));
    tu_run_until_redis(0, tu_ms(2000), "EXISTS", "bh", (char *)NULL);
    long long gone = tu_exists("bh");
    tp_blackhole(proxy, false);
    ck_assert_msg(fired, "on_lost did not fire during a %lld ms stall",
                  tu_now_ms() - t0);
    tu_assert_status(lost.status, HILOCK_ELOST);
    ck_assert_msg(lost.at_ms - t0 <= wd_ms + 100,
                  "on_lost came %lld ms into the stall (lease %d ms)",
                  lost.at_ms - t0, wd_ms);
    ck_assert_msg(pttl_at_lost > 0,
                  "on_lost came after the lease ran out (PTTL %lld)",
                  pttl_at_lost);
    ck_assert_msg(gone == 0, "the stalled lock never expired on the server");
    ck_assert_uint_eq(hilock_lock_hold_count(l), 0);
    /* the held renewal now reaches Redis (ahead of the query, if on the
     * same connection): it must not revive the lock */
    settle(l);
    tu_run_quiet();
    ck_assert_int_eq(lost.calls, 1);
    ck_assert_int_eq(tu_exists("bh"), 0);
    tu_assert_status(tu_acquire_eventually(l, 30000), 0);
    ck_assert_int_eq(tu_holds("bh", client, 1), 1);
}
END_TEST

/* Renewals that fail fast (the connection keeps being refused) rather than
 * time out: the loss is still reported before the lease runs out. */
START_TEST(refused_reconnects_longer_than_the_lease_report_lost_before_expiry)
{
    struct hilock_lock *l = tu_lock(client, "bh", 1);
    tu_assert_status(hilock_lock_on_lost(l, lost_with_pttl, &lost), 0);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    await_renewal(l);
    ck_assert_int_eq(lost.calls, 0);
    long long t0 = tu_now_ms();
    tp_refuse(proxy, true);
    tp_cut_all(proxy);
    bool fired = tu_run_until_count(&lost.calls, 1, tu_ms(3000));
    ck_assert_msg(fired, "on_lost did not fire while refused");
    tu_assert_status(lost.status, HILOCK_ELOST);
    ck_assert_msg(lost.at_ms - t0 <= wd_ms + 100,
                  "on_lost came %lld ms after the link went (lease %d ms)",
                  lost.at_ms - t0, wd_ms);
    ck_assert_msg(pttl_at_lost > 0,
                  "on_lost came after the lease ran out (PTTL %lld)",
                  pttl_at_lost);
    ck_assert_msg(tp_accepted(proxy) > 2, "no reconnect attempts (%ld)",
                  tp_accepted(proxy));
    tp_refuse(proxy, false);
    ck_assert(tu_run_until_redis(0, tu_ms(2000), "EXISTS", "bh",
                                 (char *)NULL));
    tu_assert_status(tu_acquire_eventually(l, 30000), 0);
    tu_run_quiet();
    ck_assert_int_eq(lost.calls, 1);
}
END_TEST

static bool accepted_above(void *arg)
{
    return tp_accepted(proxy) > *(long *)arg;
}

/* A server that refused the last connections: a request whose deadline
 * comes while the next connection's handshake is out fails with that
 * cause, not as a time-out. */
START_TEST(request_due_in_a_handshake_after_refusals_fails_with_their_cause)
{
    hilock_client_free(client);
    tp_refuse(proxy, true);
    long seen = tp_accepted(proxy) + 1;
    client = proxied_client_waiting(0, req_ms / 2); /* before the connect
                                                       timeout (req_ms) */
    ck_assert(tu_run_until(accepted_above, &seen, tu_ms(3000)));
    tp_hold_replies(proxy, true);
    tp_refuse(proxy, false);
    seen = tp_accepted(proxy);
    ck_assert(tu_run_until(accepted_above, &seen, tu_ms(3000)));
    struct hilock_lock *l = tu_lock(client, "shake", 1);
    tu_assert_status(hilock_lock_acquire(l, 0, 30000, tu_record, &res[0]), 0);
    ck_assert(tu_run_until_count(&res[0].calls, 1, req_ms));
    tu_assert_status(res[0].status, HILOCK_ECONN);
    tp_hold_replies(proxy, false);
}
END_TEST

/* ---- restarts ----------------------------------------------------------- */

START_TEST(restart_while_a_watchdog_lock_is_held_reports_it_lost)
{
    struct hilock_lock *l = tu_lock(client, "k9wd", 1);
    tu_assert_status(hilock_lock_on_lost(l, tu_record, &lost), 0);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    await_renewal(l);
    long accepted = tp_accepted(proxy);
    ck_assert_int_eq(rs_kill9_restart(tu_srv), 0);
    long long t1 = tu_now_ms();
    ck_assert_msg(tu_run_until_count(&lost.calls, 1, tu_ms(4000)),
                  "on_lost never fired after the restart emptied Redis");
    tu_assert_status(lost.status, HILOCK_ELOST);
    ck_assert_msg(lost.at_ms - t1 < tu_ms(2000),
                  "on_lost came %lld ms after restart", lost.at_ms - t1);
    ck_assert_uint_eq(hilock_lock_hold_count(l), 0);
    assert_no_renewal();
    ck_assert_int_eq(lost.calls, 1);
    ck_assert_int_eq(tu_exists("k9wd"), 0); /* not recreated by the watchdog */
    tu_assert_status(tu_acquire_eventually(l, 0), 0);
    ck_assert_int_gt(tp_accepted(proxy), accepted);
    ck_assert_int_eq(tu_holds("k9wd", client, 1), 1);
}
END_TEST

START_TEST(restart_while_an_explicit_lease_lock_is_held_reports_it_lost_early)
{
    struct hilock_lock *l = tu_lock(client, "k9lease", 1);
    tu_assert_status(hilock_lock_on_lost(l, tu_record, &lost), 0);
    /* the bound below must stay under the lease, scaled or not */
    int lease_ms = tu_ms(10000), bound = tu_ms(4000);
    tu_assert_status(tu_acquire(l, 0, (uint64_t)lease_ms, NULL), 0);
    ck_assert_int_eq(rs_kill9_restart(tu_srv), 0);
    long long t1 = tu_now_ms();
    /* the lease would only run out 10 s from now; the client knows sooner
     * that the key is gone, because it checks held locks on reconnecting */
    bool fired = tu_run_until_count(&lost.calls, 1, bound);
    ck_assert_msg(fired, "on_lost did not fire within %d ms of a restart "
                         "that emptied Redis (lease %d ms; fired: %d)",
                  bound, lease_ms, lost.calls);
    tu_assert_status(lost.status, HILOCK_ELOST);
    ck_assert_msg(lost.at_ms - t1 < bound, "on_lost %lld ms after restart",
                  lost.at_ms - t1);
    ck_assert_uint_eq(hilock_lock_hold_count(l), 0);
    tu_run_quiet();
    ck_assert_int_eq(lost.calls, 1);
    tu_assert_status(tu_acquire_eventually(l, 10000), 0);
}
END_TEST

struct waiter {
    int index;
    struct tu_result got;
    struct tu_result released;
    long long owners_at_grant; /* owner fields in Redis when granted */
};

static struct waiter waiters[WAITERS];
static int grant_order[WAITERS];
static int granted;

/* Acquire callback of a waiter: note the order, check that it is alone,
 * and release at once so that the next waiter's turn comes. */
static void waiter_granted(struct hilock_lock *lock, int status,
                           const struct hilock_result *result, void *arg)
{
    struct waiter *w = arg;
    tu_record(lock, status, result, &w->got);
    if (status != 0)
        return;
    w->owners_at_grant = tu_owner_fields("turns");
    if (granted < WAITERS)
        grant_order[granted] = w->index;
    granted++;
    int rc = hilock_lock_release(lock, tu_record, &w->released);
    if (rc)
        w->released.status = rc, w->released.calls = 100;
}

static int released_count;

static bool all_released(void *arg)
{
    (void)arg;
    released_count = 0;
    for (int i = 0; i < WAITERS; i++)
        released_count += waiters[i].released.calls;
    return released_count >= WAITERS;
}

START_TEST(waiters_parked_across_a_restart_all_get_the_lock_in_turn)
{
    other = proxied_client(0);
    struct hilock_lock *holder = tu_lock(client, "turns", 1);
    struct hilock_lock *w[WAITERS];
    memset(waiters, 0, sizeof waiters);
    granted = 0;
    tu_assert_status(tu_acquire(holder, 0, 1000, NULL), 0);
    for (int i = 0; i < WAITERS; i++) {
        waiters[i].index = i;
        w[i] = tu_lock(other, "turns", 10 + (uint64_t)i);
        tu_assert_status(hilock_lock_acquire(w[i], 15000, 5000,
                                             waiter_granted, &waiters[i]),
                         0); /* issue order is queue order */
    }
    tu_client_ready(other); /* answered after the busy replies: parked */
    ck_assert_int_eq(granted, 0);
    ck_assert_int_eq(rs_kill9_restart(tu_srv), 0); /* the holder's key goes */
    long long t1 = tu_now_ms();
    ck_assert_msg(tu_run_until_count(&granted, WAITERS, tu_ms(8000)),
                  "only %d of %d waiters got the lock within 8 s", granted,
                  WAITERS);
    ck_assert_msg(tu_run_until(all_released, NULL, tu_ms(3000)),
                  "only %d of %d releases completed", released_count,
                  WAITERS);
    for (int i = 0; i < WAITERS; i++) {
        ck_assert_int_eq(waiters[i].got.calls, 1);
        tu_assert_status(waiters[i].got.status, 0);
        ck_assert_msg(waiters[i].got.at_ms - t1 < tu_ms(8000),
                      "waiter %d got it %lld ms after the restart", i,
                      waiters[i].got.at_ms - t1);
        ck_assert_msg(waiters[i].owners_at_grant == 1,
                      "waiter %d was granted with %lld owners in Redis", i,
                      waiters[i].owners_at_grant);
        ck_assert_int_eq(waiters[i].released.calls, 1);
        tu_assert_status(waiters[i].released.status, 0);
        ck_assert_int_eq(waiters[i].released.res.holds, 0);
        ck_assert_msg(grant_order[i] == i, "turn %d went to waiter %d", i,
                      grant_order[i]);
    }
    tu_run_quiet();
    ck_assert_int_eq(granted, WAITERS);
    ck_assert_int_eq(tu_exists("turns"), 0);
}
END_TEST

/* ---- the server forgets scripts, keys of another type ------------------- */

static void script_flush(void)
{
    char *ok = rs_str(tu_srv, "SCRIPT", "FLUSH", (char *)NULL);
    ck_assert_ptr_nonnull(ok);
    ck_assert_str_eq(ok, "OK");
    free(ok);
}

/* Send cmd on rc without reading its reply. */
static void send_only(redisContext *rc, const char *cmd)
{
    int done = 0;
    ck_assert_int_eq(redisAppendCommand(rc, cmd), REDIS_OK);
    while (!done)
        ck_assert_int_eq(redisBufferWrite(rc, &done), REDIS_OK);
}

/* Whether srv answers PING with LOADING (it is loading its data set). */
static bool loading(void *arg)
{
    char *s = rs_str(arg, "PING", (char *)NULL);
    bool yes = s && strncmp(s, "LOADING", 7) == 0;
    free(s);
    return yes;
}

/* A server that is still loading its data set (after a restart, or
 * DEBUG RELOAD here, made slow by key-load-delay) refuses every command
 * with LOADING, unapplied: a request that meets it goes again until the
 * data is loaded, within its deadline, instead of failing; so a release
 * sent then frees the lock at once rather than after its lease. */
START_TEST(requests_refused_while_loading_go_again_once_loaded)
{
    static const char *const args[] = {
        "--enable-debug-command", "yes", "--key-load-delay", "50",
        "--loading-process-events-interval-bytes", "1024", NULL};
    struct rs_options so;
    struct hilock_options o;
    memset(&so, 0, sizeof so);
    so.args = args;
    struct rs_server *slow = tu_server_start(&so);
    ck_assert_ptr_nonnull(slow);
    char *ok = rs_str(slow, "DEBUG", "POPULATE", "10000", (char *)NULL);
    ck_assert_str_eq(ok ? ok : "", "OK");
    free(ok);
    tu_options(&o);
    o.node.port = rs_port(slow);
    o.request_timeout_ms = (uint32_t)tu_ms(4000); /* the load: ~0.5 s */
    other = tu_client(&o);
    struct hilock_lock *l = tu_lock(other, "kload", 1);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    redisContext *rc = rs_connect(slow);
    ck_assert_ptr_nonnull(rc);
    send_only(rc, "DEBUG RELOAD");
    ck_assert_msg(tu_run_until(loading, slow, tu_ms(3000)),
                  "the server never answered LOADING");
    struct hilock_result left;
    tu_assert_status(tu_release(l, &left), 0);
    ck_assert_int_eq(left.holds, 0);
    ck_assert_int_eq(rs_int(slow, "EXISTS", "kload", (char *)NULL), 0);
    send_only(rc, "DEBUG RELOAD");
    ck_assert(tu_run_until(loading, slow, tu_ms(3000)));
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0); /* sent while loading */
    ck_assert_int_eq(rs_int(slow, "EXISTS", "kload", (char *)NULL), 1);
    redisFree(rc);
    rs_stop(slow);
}
END_TEST

START_TEST(script_flush_between_acquire_and_release_is_transparent)
{
    struct hilock_lock *l = tu_lock(client, "flush", 1);
    struct hilock_result v;
    tu_assert_status(tu_acquire(l, 0, 30000, NULL), 0);
    script_flush();
    tu_assert_status(tu_release(l, &v), 0);
    ck_assert_int_eq(v.holds, 0);
    ck_assert_int_eq(tu_exists("flush"), 0);
    script_flush();
    tu_assert_status(tu_acquire(l, 0, 30000, NULL), 0);
    ck_assert_int_eq(tu_holds("flush", client, 1), 1);
    script_flush();
    tu_assert_status(hilock_lock_renew(l, 20000, tu_record, &res[0]), 0);
    await(&res[0], tu_ms(REQ_MS + 2000), "renew after SCRIPT FLUSH");
    tu_assert_status(res[0].status, 0);
    ck_assert_int_eq(res[0].res.lease_ms, 20000);
    ck_assert_int_gt(rs_int(tu_srv, "PTTL", "flush", (char *)NULL), 10000);
    tu_run_quiet();
    ck_assert_int_eq(res[0].calls, 1);
}
END_TEST

static void set_string(const char *key)
{
    char *ok = rs_str(tu_srv, "SET", key, "value", (char *)NULL);
    ck_assert_ptr_nonnull(ok);
    ck_assert_str_eq(ok, "OK");
    free(ok);
}

static void assert_string_untouched(const char *key)
{
    char *v = rs_str(tu_srv, "GET", key, (char *)NULL);
    ck_assert_ptr_nonnull(v);
    ck_assert_str_eq(v, "value");
    free(v);
}

/* test_connection covers a try-acquire on a string key; this covers the
 * other requests, and a waiting acquire, which must not wait. */
START_TEST(release_queries_and_waiting_acquire_on_a_string_key_are_ewrongtype)
{
    set_string("str");
    struct hilock_lock *l = tu_lock(client, "str", 1);
    tu_assert_status(hilock_lock_query_held(l, tu_record, &res[0]), 0);
    tu_assert_status(hilock_lock_query_count(l, tu_record, &res[1]), 0);
    tu_assert_status(hilock_lock_release(l, tu_record, &res[2]), 0);
    for (int i = 0; i < 3; i++)
        await(&res[i], tu_ms(REQ_MS + 2000), "request on a string key");
    long long t0 = tu_now_ms();
    tu_assert_status(hilock_lock_acquire(l, 10000, 30000, tu_record, &res[3]),
                     0);
    await(&res[3], 10000 + tu_ms(2000), "waiting acquire on a string key");
    tu_run_quiet();
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(res[i].calls, 1);
        tu_assert_status(res[i].status, HILOCK_EWRONGTYPE);
        ck_assert(tu_result_empty(&res[i].res));
    }
    ck_assert_msg(res[3].at_ms - t0 < req_ms,
                  "a waiting acquire on a string key took %lld ms",
                  res[3].at_ms - t0);
    ck_assert_uint_eq(hilock_lock_hold_count(l), 0);
    assert_string_untouched("str");
}
END_TEST

START_TEST(watchdog_lock_replaced_by_a_string_is_reported_lost_and_left_alone)
{
    struct hilock_lock *l = tu_lock(client, "wdstr", 1);
    tu_assert_status(hilock_lock_on_lost(l, tu_record, &lost), 0);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    ck_assert_int_eq(tu_exists("wdstr"), 1);
    ck_assert_int_eq(rs_int(tu_srv, "DEL", "wdstr", (char *)NULL), 1);
    set_string("wdstr");
    long long t0 = tu_now_ms();
    ck_assert_msg(tu_run_until_count(&lost.calls, 1, wd_ms + tu_ms(2000)),
                  "on_lost never fired for a lock replaced by a string");
    tu_assert_status(lost.status, HILOCK_ELOST);
    ck_assert_msg(lost.at_ms - t0 < wd_ms + tu_ms(500),
                  "on_lost after %lld ms", lost.at_ms - t0);
    ck_assert_uint_eq(hilock_lock_hold_count(l), 0);
    assert_no_renewal();
    ck_assert_int_eq(lost.calls, 1);
    assert_string_untouched("wdstr");
    /* a release now: the string is not ours, whatever the code */
    tu_assert_status(hilock_lock_release(l, tu_record, &res[0]), 0);
    await(&res[0], tu_ms(REQ_MS + 2000), "release on a string key");
    tu_run_quiet();
    ck_assert_int_eq(res[0].calls, 1);
    ck_assert_int_ne(res[0].status, 0);
    assert_string_untouched("wdstr");
}
END_TEST

/* ---- exactly-once callbacks while the connection keeps failing ---------- */

#define NREQ 10

static struct hilock_client *victim;
static int fired_total;

static void counting(struct hilock_lock *lock, int status,
                     const struct hilock_result *result, void *arg)
{
    tu_record(lock, status, result, arg);
    fired_total++;
}

/* Issue acquires first..last on victim (odd: try once, even: wait ten
 * request timeouts, past the free) into res[first..last]. */
static void issue_acquires(int first, int last)
{
    for (int i = first; i <= last; i++) {
        char name[16];
        snprintf(name, sizeof name, "refused%d", i);
        struct hilock_lock *l = tu_lock(victim, name, 1);
        uint64_t wait_ms = i % 2 ? 0 : (uint64_t)(10 * req_ms);
        tu_assert_status(hilock_lock_acquire(l, wait_ms, 30000, counting,
                                             &res[i]),
                         0);
    }
}

/* Each of res[1..NREQ] fired once, with a code a dead link may give. */
static void assert_each_failed_once(void)
{
    for (int i = 1; i <= NREQ; i++) {
        ck_assert_msg(res[i].calls == 1, "request %d: %d callbacks", i,
                      res[i].calls);
        int st = res[i].status;
        ck_assert_msg(st == HILOCK_ECANCELED || st == HILOCK_ETIMEDOUT ||
                          st == HILOCK_ECONN,
                      "request %d: %s", i, hilock_err_name(st));
    }
}

static bool timer_fired;

static void free_victim_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    hilock_client_free(victim);
    victim = NULL;
    timer_fired = true;
}

static bool timer_done(void *arg)
{
    (void)arg;
    return timer_fired;
}

/* Requests 1..5 reach their deadline while the client keeps reconnecting;
 * 6..10 are still pending when a timer frees the client. */
START_TEST(client_free_from_a_timer_while_reconnecting_fires_each_once)
{
    tp_refuse(proxy, true);
    victim = proxied_client(0);
    fired_total = 0;
    timer_fired = false;
    long long t0 = tu_now_ms();
    issue_acquires(1, NREQ / 2);
    tu_run_for(req_ms / 2);
    long long t_second = tu_now_ms();
    issue_acquires(NREQ / 2 + 1, NREQ);
    struct event *ev = evtimer_new(tu_base, free_victim_timer, NULL);
    ck_assert_ptr_nonnull(ev);
    long long free_at = req_ms + req_ms / 4 - (tu_now_ms() - t0);
    if (free_at < 0)
        free_at = 0;
    struct timeval tv = {(time_t)(free_at / 1000),
                         (suseconds_t)(free_at % 1000) * 1000};
    evtimer_add(ev, &tv);
    ck_assert(tu_run_until(timer_done, NULL, req_ms + tu_ms(3000)));
    event_free(ev);
    ck_assert_msg(tp_accepted(proxy) >= 2,
                  "the client tried to connect %ld times", tp_accepted(proxy));
    ck_assert_int_eq(fired_total, NREQ); /* all before free returned */
    long long last_deadline = t_second + req_ms;
    if (last_deadline > tu_now_ms())
        tu_run_for((int)(last_deadline - tu_now_ms()));
    tu_run_quiet(); /* past every deadline */
    ck_assert_int_eq(fired_total, NREQ);
    assert_each_failed_once();
    /* a try-once acquire fails with the cause at its request deadline; a
     * waiting one keeps waiting through the refusals until the free */
    for (int i = 1; i <= NREQ / 2; i++)
        tu_assert_status(res[i].status,
                         i % 2 ? HILOCK_ECONN : HILOCK_ECANCELED);
    for (int i = NREQ / 2 + 1; i <= NREQ; i++)
        tu_assert_status(res[i].status, HILOCK_ECANCELED);
}
END_TEST

/* Query callback that frees the client it belongs to. */
static void free_victim_cb(struct hilock_lock *lock, int status,
                           const struct hilock_result *result, void *arg)
{
    tu_record(lock, status, result, arg);
    hilock_client_free(victim);
    victim = NULL;
}

START_TEST(client_free_inside_a_callback_while_reconnecting_fires_each_once)
{
    tp_refuse(proxy, true);
    victim = proxied_client(0);
    fired_total = 0;
    /* submitted first, so its deadline is the first to pass */
    struct hilock_lock *q = tu_lock(victim, "refused0", 1);
    tu_assert_status(hilock_lock_query_held(q, free_victim_cb, &res[0]), 0);
    issue_acquires(1, NREQ);
    await(&res[0], tu_ms(REQ_MS + 2000), "query while refused");
    ck_assert_ptr_null(victim);
    tu_assert_status(res[0].status, HILOCK_ECONN);
    ck_assert_int_eq(fired_total, NREQ);
    tu_run_quiet();
    ck_assert_int_eq(res[0].calls, 1);
    ck_assert_int_eq(fired_total, NREQ);
    assert_each_failed_once();
    ck_assert_int_ge(tp_accepted(proxy), 2);
}
END_TEST

/* Requests that timed out while their bytes sat in a stalled network must
 * stay completed when that connection then dies under them: not resent,
 * not reported again, and the acquire never applied. */
START_TEST(requests_timed_out_in_a_stall_stay_done_when_the_connection_drops)
{
    struct hilock_lock *l = tu_lock(client, "sd", 1);
    struct hilock_lock *held = tu_lock(client, "sd-held", 1);
    tu_assert_status(tu_acquire(held, 0, 30000, NULL), 0);
    tp_blackhole(proxy, true);
    tu_assert_status(hilock_lock_acquire(l, 0, 30000, tu_record, &res[0]), 0);
    tu_assert_status(hilock_lock_query_count(l, tu_record, &res[1]), 0);
    tu_assert_status(hilock_lock_release(held, tu_record, &res[2]), 0);
    for (int i = 0; i < 3; i++)
        await(&res[i], tu_ms(REQ_MS + 2000), "request in a stall");
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(res[i].calls, 1);
        tu_assert_status(res[i].status, HILOCK_ETIMEDOUT);
    }
    long accepted = tp_accepted(proxy);
    tp_cut_all(proxy); /* the held bytes never reach Redis */
    tp_blackhole(proxy, false);
    tu_assert_status(tu_query(hilock_lock_query_held, held, NULL), 0);
    ck_assert_int_gt(tp_accepted(proxy), accepted);
    tu_run_quiet();
    for (int i = 0; i < 3; i++)
        ck_assert_msg(res[i].calls == 1, "request %d: %d callbacks", i,
                      res[i].calls);
    ck_assert_int_eq(tu_exists("sd"), 0);
    ck_assert_uint_eq(hilock_lock_hold_count(l), 0);
    /* the release timed out: nothing was released, the hold is still ours */
    ck_assert_int_eq(tu_holds("sd-held", client, 1), 1);
    tu_assert_status(tu_acquire(l, 0, 30000, NULL), 0);
    ck_assert_int_eq(tu_holds("sd", client, 1), 1);
}
END_TEST

/* on_lost that frees the whole client. */
static void free_client_on_lost(struct hilock_lock *lock, int status,
                                const struct hilock_result *result, void *arg)
{
    tu_record(lock, status, result, arg);
    hilock_client_free(client);
    client = NULL;
}

START_TEST(client_free_inside_on_lost_from_a_renewal_reply_is_safe)
{
    other = proxied_client(0);
    struct hilock_lock *a = tu_lock(client, "fl-a", 1);
    struct hilock_lock *b = tu_lock(client, "fl-b", 1);
    struct hilock_lock *w = tu_lock(client, "fl-held", 1);
    struct hilock_lock *h = tu_lock(other, "fl-held", 1);
    tu_assert_status(hilock_lock_on_lost(a, free_client_on_lost, &lost), 0);
    tu_assert_status(hilock_lock_on_lost(b, free_client_on_lost, &lost), 0);
    tu_assert_status(tu_acquire(a, 0, 0, NULL), 0);
    tu_assert_status(tu_acquire(b, 0, 0, NULL), 0);
    tu_assert_status(tu_acquire(h, 0, 30000, NULL), 0);
    /* something pending when the client goes: a parked waiter */
    tu_assert_status(hilock_lock_acquire(w, 10000, 30000, tu_record, &res[0]),
                     0);
    tu_client_ready(client); /* answered after the busy reply: parked */
    ck_assert_int_eq(res[0].calls, 0);
    /* both keys vanish: the next renewal of each finds it gone; the first
     * on_lost frees the client, the second must then not come */
    ck_assert_int_eq(rs_int(tu_srv, "DEL", "fl-a", "fl-b", (char *)NULL), 2);
    ck_assert_msg(tu_run_until_count(&lost.calls, 1, wd_ms + tu_ms(2000)),
                  "on_lost never fired");
    tu_assert_status(lost.status, HILOCK_ELOST);
    ck_assert_ptr_null(client);
    await(&res[0], tu_ms(1000), "the parked waiter of a freed client");
    tu_run_quiet();
    ck_assert_int_eq(lost.calls, 1); /* not again for the other lock */
    ck_assert_int_eq(res[0].calls, 1);
    tu_assert_status(res[0].status, HILOCK_ECANCELED);
    ck_assert_int_eq(tu_exists("fl-held"), 1); /* the other client's hold */
}
END_TEST

START_TEST(client_free_inside_on_lost_from_the_lease_timer_is_safe)
{
    /* the query below must outlast the lease, still pending at on_lost */
    hilock_client_free(client);
    client = proxied_client_waiting(0, wd_ms + tu_ms(200));
    struct hilock_lock *a = tu_lock(client, "ft-a", 1);
    struct hilock_lock *q = tu_lock(client, "ft-q", 1);
    tu_assert_status(hilock_lock_on_lost(a, free_client_on_lost, &lost), 0);
    tu_assert_status(tu_acquire(a, 0, 0, NULL), 0);
    await_renewal(a);
    tp_blackhole(proxy, true);
    /* a request stuck in the stall when the client goes */
    tu_assert_status(hilock_lock_query_count(q, tu_record, &res[0]), 0);
    ck_assert_msg(tu_run_until_count(&lost.calls, 1, wd_ms + tu_ms(2000)),
                  "on_lost never fired during the stall");
    tp_blackhole(proxy, false);
    tu_assert_status(lost.status, HILOCK_ELOST);
    ck_assert_ptr_null(client);
    tu_run_quiet();
    ck_assert_int_eq(lost.calls, 1);
    ck_assert_int_eq(res[0].calls, 1);
    tu_assert_status(res[0].status, HILOCK_ECANCELED);
}
END_TEST

/* ---- the proxy itself --------------------------------------------------- */

static bool accepted_more_than_two(void *arg)
{
    (void)arg;
    return tp_accepted(proxy) > 2;
}

START_TEST(proxy_forwards_counts_and_cuts_connections)
{
    struct hilock_lock *l = tu_lock(client, "px", 1);
    settle(l);
    ck_assert_int_eq(tp_connections(proxy), 1);
    ck_assert_int_eq(tp_accepted(proxy), 1);
    tp_cut_all(proxy);
    ck_assert_int_eq(tp_connections(proxy), 0);
    tu_assert_status(tu_acquire_eventually(l, 30000), 0);
    ck_assert_int_eq(tp_connections(proxy), 1);
    ck_assert_int_eq(tp_accepted(proxy), 2);
    /* a blackhole holds a request without losing it */
    tp_blackhole(proxy, true);
    tu_assert_status(hilock_lock_query_count(l, tu_record, &res[0]), 0);
    tu_run_quiet();
    ck_assert_int_eq(res[0].calls, 0);
    tp_blackhole(proxy, false);
    await(&res[0], req_ms, "query held by the blackhole");
    tu_assert_status(res[0].status, 0);
    ck_assert_int_eq(res[0].res.holds, 1);
    /* refusing: connections are accepted and closed */
    tp_refuse(proxy, true);
    tp_cut_all(proxy);
    ck_assert(tu_run_until(accepted_more_than_two, NULL, tu_ms(1000)));
    ck_assert_int_eq(tp_connections(proxy), 0);
    tp_refuse(proxy, false);
    tu_assert_status(tu_acquire_eventually(l, 30000), 0);
    ck_assert_int_eq(tu_holds("px", client, 1), 2);
}
END_TEST

/* Whether the replica's link to its master is up. */
static bool replica_linked(void *replica)
{
    char *st = rs_info(replica, "replication", "master_link_status");
    bool up = st && strcmp(st, "up") == 0;
    free(st);
    return up;
}

/* With WAIT on: an acquire applied whose reply was lost goes again on a
 * new connection and finds itself applied, so it writes nothing there.
 * WAIT counts the replicas that have the connection's writes; with none
 * it would confirm at once, though the first write is here on no replica
 * (the replica is frozen). It does not: the server takes a connection's
 * offset from any command it ran (redis 7.0), and the connection's
 * handshake and script loads come before the resend. The acquisition
 * must not count as confirmed, and its hold is undone. */
START_TEST(resent_acquire_is_not_confirmed_by_a_wait_on_the_new_connection)
{
    char port[16];
    snprintf(port, sizeof port, "%d", rs_port(tu_srv));
    const char *args[] = {"--replicaof", "127.0.0.1", port, NULL};
    char *ok = rs_str(tu_srv, "CONFIG", "SET", "repl-diskless-sync-delay",
                      "0", (char *)NULL); /* the first sync at once */
    ck_assert_str_eq(ok, "OK");
    free(ok);
    struct rs_server *replica = rs_start(args);
    ck_assert_ptr_nonnull(replica);
    ck_assert(tu_run_until(replica_linked, replica, tu_ms(5000)));
    struct hilock_options o;
    tu_options(&o);
    o.node.port = tp_port(proxy);
    o.wait_replicas = 1;
    o.wait_timeout_ms = (uint32_t)tu_ms(200);
    other = tu_client(&o);
    struct hilock_lock *l = tu_lock(other, "cut-wait", 1);
    settle(l);
    ck_assert_int_eq(rs_pause(replica), 0);
    tp_cut_next_reply(proxy);
    tu_assert_status(hilock_lock_acquire(l, 0, 30000, tu_record, &res[0]),
                     0);
    await(&res[0], tu_ms(REQ_MS + 3000), "acquire whose reply was cut");
    ck_assert_int_eq(rs_resume(replica), 0);
    rs_stop(replica);
    ck_assert_msg(!tp_cut_pending(proxy), "no reply passed the proxy");
    tu_assert_status(res[0].status, HILOCK_ENOREPLICA);
    ck_assert_uint_eq(hilock_lock_hold_count(l), 0);
    ck_assert(tu_run_until_redis(0, tu_ms(2000), "EXISTS", "cut-wait",
                                 (char *)NULL));
}
END_TEST

static Suite *faults_suite(void)
{
    Suite *s = suite_create("faults");
    struct {
        const char *name;
        const TTest *tests[12]; /* NULL-terminated */
    } cases[] = {
        {"lost_replies",
         {acquire_whose_reply_is_lost_is_applied_once,
          reentrant_acquire_whose_reply_is_lost_counts_one_hold,
          twin_handles_acquiring_together_with_replies_lost_count_two_holds,
          fenced_acquire_whose_reply_is_lost_draws_one_token,
          release_whose_reply_is_lost_is_applied_once,
          full_release_whose_reply_is_lost_still_reports_none_left,
          rwlock_and_semaphore_requests_whose_replies_are_lost_apply_once,
          canceled_acquire_applied_with_its_reply_lost_leaves_no_hold,
          timed_out_acquire_applied_with_its_reply_lost_leaves_no_hold,
          resent_acquire_is_not_confirmed_by_a_wait_on_the_new_connection}},
        {"stalls",
         {frozen_server_times_requests_out_once_and_a_late_success_is_undone,
          requests_sent_apart_in_a_stall_each_time_out_at_its_own_deadline,
          acquire_waiting_past_the_request_timeout_in_a_stall_ends_with_its_wait,
          network_stall_longer_than_the_lease_reports_lost_before_expiry,
          refused_reconnects_longer_than_the_lease_report_lost_before_expiry,
          request_due_in_a_handshake_after_refusals_fails_with_their_cause,
          release_timed_out_in_a_stall_gives_the_hold_up_and_tokens_stay_true,
          lease_running_out_while_the_release_is_pending_is_not_lost,
          watchdog_does_not_renew_a_hold_whose_release_is_out}},
        {"restarts",
         {restart_while_a_watchdog_lock_is_held_reports_it_lost,
          restart_while_an_explicit_lease_lock_is_held_reports_it_lost_early,
          waiters_parked_across_a_restart_all_get_the_lock_in_turn,
          requests_refused_while_loading_go_again_once_loaded}},
        {"server_state",
         {script_flush_between_acquire_and_release_is_transparent,
          release_queries_and_waiting_acquire_on_a_string_key_are_ewrongtype,
          watchdog_lock_replaced_by_a_string_is_reported_lost_and_left_alone}},
        {"teardown",
         {requests_timed_out_in_a_stall_stay_done_when_the_connection_drops,
          client_free_from_a_timer_while_reconnecting_fires_each_once,
          client_free_inside_a_callback_while_reconnecting_fires_each_once,
          client_free_inside_on_lost_from_a_renewal_reply_is_safe,
          client_free_inside_on_lost_from_the_lease_timer_is_safe}},
        {"proxy", {proxy_forwards_counts_and_cuts_connections}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 30);
        for (size_t j = 0; j < 12 && cases[i].tests[j]; j++)
            tcase_add_test(tc, cases[i].tests[j]);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    return tu_main(faults_suite());
}
