/* SPDX-License-Identifier: BSD-3-Clause */
/* test_lifecycle.c -- freeing and cancelling: every pending callback fires
 * exactly once (HILOCK_ECANCELED) when its lock or client goes, freeing from
 * inside callbacks is safe, a freed or cancelled hold does not linger in
 * Redis, and a client with no server fails its requests in bounded time.
 *
 * Where a test says an acquire was undone, it first proves that the acquire
 * reached Redis and succeeded there: the clients run with fencing, and the
 * lock's fencing counter counts the acquisitions Redis granted. */
#include "testutil.h"

#include <event2/event.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define N 20

static struct hilock_client *client, *holder;
static struct tu_result res[N];

static struct hilock_client *fencing_client(void)
{
    struct hilock_options o;
    tu_options(&o);
    o.fencing = 1;
    return tu_client(&o);
}

static void setup(void)
{
    tu_setup();
    client = fencing_client();
    holder = tu_client(NULL);
    memset(res, 0, sizeof res);
}

static void teardown(void)
{
    hilock_client_free(client); /* NULL when a test freed it */
    hilock_client_free(holder);
    client = holder = NULL;
    tu_teardown();
}

static struct hilock_lock *numbered_lock(struct hilock_client *c,
                                         const char *prefix, int i)
{
    char name[32];
    snprintf(name, sizeof name, "%s%d", prefix, i);
    return tu_lock(c, name, 1);
}

static void assert_each_canceled_once(int from, int to)
{
    for (int i = from; i < to; i++) {
        ck_assert_msg(res[i].calls == 1, "callback %d fired %d times", i,
                      res[i].calls);
        ck_assert_msg(res[i].status == HILOCK_ECANCELED,
                      "callback %d: %s", i, hilock_err_name(res[i].status));
    }
}

/* Let the client write the requests it has handed to its live connection,
 * without reading any reply: one turn of the loop that does not wait, in
 * which the socket is writable and no reply can be readable yet. Then wait,
 * off the loop, until Redis has granted the acquire of lock name. Its
 * success reply is left unread in the socket. */
static void send_and_let_redis_grant(const char *name)
{
    ck_assert_int_ge(event_base_loop(tu_base, EVLOOP_ONCE | EVLOOP_NONBLOCK),
                     0);
    long long deadline = tu_now_ms() + tu_ms(2000);
    struct timespec pause = {0, 1000000};
    while (tu_fence(name) != 1 && tu_now_ms() < deadline)
        nanosleep(&pause, NULL);
    ck_assert_msg(tu_fence(name) == 1, "Redis never granted the acquire of %s",
                  name);
}

/* The acquires are queued on a live connection when the client goes: the
 * free sends them, and undoes each success before it returns. */
START_TEST(client_free_cancels_every_pending_acquire_once_and_undoes_them)
{
    tu_client_ready(client);
    for (int i = 0; i < N; i++) {
        struct hilock_lock *l = numbered_lock(client, "free", i);
        tu_assert_status(hilock_lock_acquire(l, 0, 10000, tu_record, &res[i]),
                         0);
    }
    hilock_client_free(client);
    client = NULL;
    assert_each_canceled_once(0, N); /* before free returned */
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "free%d", i);
        ck_assert_msg(tu_fence(name) == 1, "acquire %d never reached Redis", i);
        ck_assert_msg(tu_exists(name) == 0, "acquire %d was left holding", i);
    }
    tu_run_quiet();
    assert_each_canceled_once(0, N);
}
END_TEST

START_TEST(client_free_delivers_the_release_and_cancels_pending_callbacks_once)
{
    struct hilock_lock *l = tu_lock(client, "rq", 1);
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
    tu_assert_status(hilock_lock_release(l, tu_record, &res[0]), 0);
    struct hilock_lock *q = tu_lock(client, "q", 1);
    tu_assert_status(hilock_lock_query_held(q, tu_record, &res[1]), 0);
    tu_assert_status(hilock_lock_query_count(q, tu_record, &res[2]), 0);
    tu_assert_status(hilock_lock_query_ttl(q, tu_record, &res[3]), 0);
    hilock_client_free(client);
    client = NULL;
    assert_each_canceled_once(0, 4);
    /* the release already issued was delivered before free returned */
    ck_assert_int_eq(tu_exists("rq"), 0);
    tu_run_quiet();
    assert_each_canceled_once(0, 4);
}
END_TEST

static int freed_at_call = -1;
static int calls_total;

/* Acquire callback of lock 0: frees the whole client from inside. */
static void free_client_cb(struct hilock_lock *lock, int status,
                           const struct hilock_result *result, void *arg)
{
    tu_record(lock, status, result, arg);
    calls_total++;
    freed_at_call = calls_total;
    hilock_client_free(client);
    client = NULL;
}

static void count_cb(struct hilock_lock *lock, int status,
                     const struct hilock_result *result, void *arg)
{
    tu_record(lock, status, result, arg);
    calls_total++;
}

START_TEST(client_free_inside_a_callback_cancels_the_others_once)
{
    /* locks busy1..busy19 are held elsewhere, so their acquires wait */
    for (int i = 1; i < N; i++) {
        struct hilock_lock *h = numbered_lock(holder, "busy", i);
        tu_assert_status(tu_acquire(h, 0, 30000, NULL), 0);
    }
    for (int i = 1; i < N; i++) {
        struct hilock_lock *w = numbered_lock(client, "busy", i);
        tu_assert_status(hilock_lock_acquire(w, 8000, 10000, count_cb, &res[i]),
                         0);
    }
    /* the query is answered after the waiters' busy replies: parked now */
    tu_client_ready(client);
    for (int i = 1; i < N; i++)
        ck_assert_int_eq(res[i].calls, 0);
    struct hilock_lock *first = tu_lock(client, "free0", 1);
    tu_assert_status(
        hilock_lock_acquire(first, 0, 10000, free_client_cb, &res[0]), 0);
    ck_assert(tu_run_until_count(&calls_total, N, tu_ms(3000)));
    ck_assert_int_eq(freed_at_call, 1);
    ck_assert_int_eq(res[0].calls, 1);
    tu_assert_status(res[0].status, 0);
    assert_each_canceled_once(1, N);
    tu_run_quiet();
    ck_assert_int_eq(calls_total, N);
    /* the holder's locks are untouched; free0 is left to its lease */
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "busy7", (char *)NULL), 1);
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "free0", (char *)NULL), 1);
}
END_TEST

/* Acquire callback that frees its own lock. */
static void free_lock_cb(struct hilock_lock *lock, int status,
                         const struct hilock_result *result, void *arg)
{
    tu_record(lock, status, result, arg);
    hilock_lock_free(lock);
}

START_TEST(lock_free_inside_its_own_acquire_callback_is_safe)
{
    struct hilock_lock *l = tu_lock(client, "self", 1);
    tu_assert_status(hilock_lock_acquire(l, 0, 30000, free_lock_cb, &res[0]),
                     0);
    ck_assert(tu_run_until_count(&res[0].calls, 1, tu_ms(3000)));
    tu_assert_status(res[0].status, 0);
    /* freed while held: the hold is released */
    ck_assert(tu_run_until_redis(0, tu_ms(2000), "EXISTS", "self",
                                 (char *)NULL));
    tu_run_quiet();
    ck_assert_int_eq(res[0].calls, 1);
    /* the client still works */
    struct hilock_lock *next = tu_lock(client, "self", 1);
    tu_assert_status(tu_acquire(next, 0, 10000, NULL), 0);
}
END_TEST

START_TEST(lock_free_of_a_held_lock_releases_it)
{
    struct hilock_lock *l = tu_lock(client, "held", 1);
    tu_assert_status(tu_acquire(l, 0, 30000, NULL), 0);
    tu_assert_status(tu_acquire(l, 0, 30000, NULL), 0); /* two holds */
    hilock_lock_free(l);
    ck_assert_msg(tu_run_until_redis(0, tu_ms(2000), "EXISTS", "held",
                                     (char *)NULL),
                  "the freed lock's key is still there");
    struct hilock_lock *other = tu_lock(holder, "held", 1);
    tu_assert_status(tu_acquire(other, 0, 10000, NULL), 0);
}
END_TEST

/* Redis has granted the acquire, its reply is not read yet: the free must
 * release what the reply will say it got. */
START_TEST(lock_free_with_an_acquire_pending_cancels_it_and_leaves_no_hold)
{
    struct hilock_lock *l = tu_lock(client, "pend", 1);
    tu_client_ready(client);
    tu_assert_status(hilock_lock_acquire(l, 0, 30000, tu_record, &res[0]), 0);
    send_and_let_redis_grant("pend");
    ck_assert_int_eq(tu_exists("pend"), 1);
    ck_assert_int_eq(res[0].calls, 0);
    hilock_lock_free(l);
    ck_assert_int_eq(res[0].calls, 1);
    tu_assert_status(res[0].status, HILOCK_ECANCELED);
    ck_assert_msg(tu_run_until_redis(0, tu_ms(2000), "EXISTS", "pend",
                                     (char *)NULL),
                  "the acquire granted before the free was left holding");
    tu_run_quiet();
    ck_assert_int_eq(res[0].calls, 1);
    ck_assert_int_eq(tu_fence("pend"), 1);
}
END_TEST

START_TEST(cancel_of_a_waiting_acquire_fires_ecanceled_once)
{
    struct hilock_lock *h = tu_lock(holder, "cw", 1);
    struct hilock_lock *w = tu_lock(client, "cw", 1);
    tu_assert_status(tu_acquire(h, 0, 30000, NULL), 0);
    tu_assert_status(hilock_lock_acquire(w, 8000, 10000, tu_record, &res[0]),
                     0);
    ck_assert_msg(tu_numsub_becomes(TU_CHANNEL("cw"), 1, tu_ms(2000)),
                  "the waiter never parked");
    ck_assert_int_eq(res[0].calls, 0);
    tu_assert_status(hilock_lock_cancel(w), 0);
    ck_assert_int_eq(res[0].calls, 1); /* before cancel returned */
    tu_assert_status(res[0].status, HILOCK_ECANCELED);
    tu_assert_status(hilock_lock_cancel(w), HILOCK_EINVAL); /* nothing left */
    ck_assert_msg(tu_numsub_becomes(TU_CHANNEL("cw"), 0, tu_ms(2000)),
                  "the canceled waiter did not unsubscribe");
    tu_run_quiet();
    ck_assert_int_eq(res[0].calls, 1);
    ck_assert_uint_eq(hilock_lock_hold_count(w), 0);
    /* the holder is untouched, and the handle can be used again */
    char field[64];
    ck_assert_int_eq(rs_int(tu_srv, "HGET", "cw", tu_field(holder, 1, field),
                            (char *)NULL), 1);
    tu_assert_status(tu_acquire(w, 0, 10000, NULL), HILOCK_EBUSY);
}
END_TEST

/* Canceled before the loop ran: the request was already handed to the
 * live connection, so it still goes out, and Redis grants it. */
START_TEST(cancel_right_after_issuing_undoes_a_late_success)
{
    struct hilock_lock *l = tu_lock(client, "late", 1);
    tu_client_ready(client); /* connected, so the request goes out at once */
    tu_assert_status(hilock_lock_acquire(l, 0, 30000, tu_record, &res[0]), 0);
    tu_assert_status(hilock_lock_cancel(l), 0);
    ck_assert_int_eq(res[0].calls, 1); /* before cancel returned */
    tu_assert_status(res[0].status, HILOCK_ECANCELED);
    ck_assert_msg(tu_run_until_redis(1, tu_ms(2000), "GET",
                                     TU_FENCE("late"), (char *)NULL),
                  "the canceled acquire never reached Redis");
    ck_assert_msg(tu_run_until_redis(0, tu_ms(2000), "EXISTS", "late",
                                     (char *)NULL),
                  "a success after cancel was not released");
    tu_run_quiet();
    ck_assert_int_eq(res[0].calls, 1);
    ck_assert_uint_eq(hilock_lock_hold_count(l), 0);
}
END_TEST

/* The same once Redis has granted it: the success reply is in the socket,
 * unread, when the cancel comes. */
START_TEST(cancel_after_redis_granted_undoes_the_success)
{
    struct hilock_lock *l = tu_lock(client, "granted", 1);
    tu_client_ready(client);
    tu_assert_status(hilock_lock_acquire(l, 0, 30000, tu_record, &res[0]), 0);
    send_and_let_redis_grant("granted");
    ck_assert_int_eq(res[0].calls, 0);
    tu_assert_status(hilock_lock_cancel(l), 0);
    ck_assert_int_eq(res[0].calls, 1);
    tu_assert_status(res[0].status, HILOCK_ECANCELED);
    ck_assert_msg(tu_run_until_redis(0, tu_ms(2000), "EXISTS", "granted",
                                     (char *)NULL),
                  "a success granted before the cancel was not released");
    tu_run_quiet();
    ck_assert_int_eq(res[0].calls, 1);
    ck_assert_uint_eq(hilock_lock_hold_count(l), 0);
    /* and the handle works again */
    struct hilock_result token;
    tu_assert_status(tu_acquire(l, 0, 30000, &token), 0);
    ck_assert_int_eq(token.token, 2);
}
END_TEST

/* No-server tests: a client pointed at a port nothing listens on. */
#define DEAD_REQ_MS 300 /* its request (and connect) timeout */

static void setup_no_server(void)
{
    tu_setup_no_redis();
    memset(res, 0, sizeof res);
    client = holder = NULL;
}

static struct hilock_client *client_on_dead_port(void)
{
    struct hilock_options o;
    tu_options(&o);
    o.node.port = tu_dead_port();
    ck_assert_int_gt(o.node.port, 0);
    o.request_timeout_ms = DEAD_REQ_MS;
    o.connect_timeout_ms = DEAD_REQ_MS;
    o.reconnect_min_ms = 50;
    return tu_client(&o);
}

/* What hilock_client_close told. */
struct closed {
    int calls;
    long long at_ms;
    uint64_t requests; /* the client's request count, read in the call */
};

static void on_closed(struct hilock_client *c, void *arg)
{
    struct closed *cl = arg;
    struct hilock_stats st;
    tu_assert_status(hilock_client_stats(c, &st, sizeof st), 0);
    cl->calls++;
    cl->at_ms = tu_now_ms();
    for (int i = 0; i < HILOCK_HIST_BUCKETS; i++)
        cl->requests += st.request_us[i];
}

/* Take lock "lk", stop Redis (SIGSTOP), release it and write the release
 * out: it is on the wire when the test closes the client. */
static void release_into_a_stalled_server(void)
{
    struct hilock_lock *l = tu_lock(client, "lk", 1);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    ck_assert_int_eq(rs_pause(tu_srv), 0);
    tu_assert_status(hilock_lock_release(l, tu_record, &res[0]), 0);
    ck_assert_int_ge(event_base_loop(tu_base, EVLOOP_ONCE | EVLOOP_NONBLOCK),
                     0);
}

/* The asynchronous close returns at once where hilock_client_free blocks
 * (up to 1 s) for a stalled server, and still delivers the release when
 * the server comes back within the deadline; its callback comes after. */
START_TEST(client_close_returns_at_once_and_delivers_the_release)
{
    struct closed cl = {0, 0, 0};
    release_into_a_stalled_server();
    long long t0 = tu_now_ms();
    tu_assert_status(hilock_client_close(client, on_closed, &cl), 0);
    long long took = tu_now_ms() - t0;
    client = NULL;
    ck_assert_msg(took < 500, "hilock_client_close blocked %lld ms", took);
    ck_assert_int_eq(cl.calls, 0); /* never inside the call */
    ck_assert_int_eq(res[0].calls, 1);
    tu_assert_status(res[0].status, HILOCK_ECANCELED);
    ck_assert_int_eq(rs_resume(tu_srv), 0);
    ck_assert(tu_run_until_count(&cl.calls, 1, tu_ms(3000)));
    ck_assert_int_gt(cl.requests, 0);
    ck_assert_int_eq(tu_exists("lk"), 0); /* the release was applied */
    tu_run_quiet();
    ck_assert_int_eq(cl.calls, 1);
    ck_assert_int_eq(res[0].calls, 1);
}
END_TEST

/* A server that stays stopped costs the close its deadline, on the loop:
 * the callback fires once when it passed. */
START_TEST(client_close_gives_up_on_a_stalled_server_at_the_deadline)
{
    struct closed cl = {0, 0, 0};
    release_into_a_stalled_server();
    long long t0 = tu_now_ms();
    tu_assert_status(hilock_client_close(client, on_closed, &cl), 0);
    tu_assert_status(hilock_client_close(client, on_closed, &cl),
                     HILOCK_EINVAL);
    client = NULL;
    ck_assert(tu_run_until_count(&cl.calls, 1, tu_ms(3000)));
    ck_assert_int_ge(cl.at_ms - t0, 1000); /* min(1500 ms requests, 1 s) */
    tu_run_quiet();
    ck_assert_int_eq(cl.calls, 1);
    ck_assert_int_eq(rs_resume(tu_srv), 0);
}
END_TEST

static bool one_parked(void *arg)
{
    struct hilock_stats st;
    tu_assert_status(hilock_client_stats(arg, &st, sizeof st), 0);
    return st.waiters_parked == 1;
}

/* Handles kept per request often outlive their client: once it is freed,
 * each is detached -- nothing held, every call but the local ones
 * refused -- and hilock_lock_free only frees its memory (run it under
 * ASan: a use after free would abort it). */
START_TEST(lock_free_after_its_client_frees_only_the_handle)
{
    struct hilock_lock *held = numbered_lock(client, "after", 0);
    struct hilock_lock *idle = numbered_lock(client, "after", 1);
    struct hilock_lock *waiting = numbered_lock(client, "after", 2);
    struct hilock_lock *freed = numbered_lock(client, "after", 3);
    struct hilock_lock *other = numbered_lock(holder, "after", 2);
    tu_assert_status(tu_acquire(held, 0, 0, NULL), 0);
    tu_assert_status(tu_acquire(other, 0, 0, NULL), 0);
    tu_assert_status(
        hilock_lock_acquire(waiting, 10000, 0, tu_record, &res[0]), 0);
    ck_assert(tu_run_until(one_parked, client, tu_ms(2000)));
    hilock_lock_free(freed); /* before: the client frees it */
    hilock_client_free(client);
    client = NULL;
    ck_assert_int_eq(res[0].calls, 1);
    tu_assert_status(res[0].status, HILOCK_ECANCELED);
    ck_assert_uint_eq(hilock_lock_hold_count(held), 0);
    size_t len = 0;
    ck_assert_ptr_nonnull(hilock_lock_name(idle, &len));
    ck_assert_uint_eq(len, 6);
    tu_assert_status(hilock_lock_acquire(idle, 0, 0, tu_record, &res[1]),
                     HILOCK_EINVAL);
    tu_assert_status(hilock_lock_release(held, tu_record, &res[1]),
                     HILOCK_EINVAL);
    tu_assert_status(hilock_lock_query_held(idle, tu_record, &res[1]),
                     HILOCK_EINVAL);
    tu_assert_status(hilock_lock_cancel(waiting), HILOCK_EINVAL);
    hilock_lock_free(held);
    hilock_lock_free(idle);
    hilock_lock_free(waiting);
    tu_run_quiet();
    ck_assert_int_eq(res[1].calls, 0);
    ck_assert_int_eq(res[0].calls, 1);
}
END_TEST

START_TEST(request_without_a_server_fails_in_bounded_time_once)
{
    client = client_on_dead_port();
    struct hilock_lock *l = tu_lock(client, "nowhere", 1);
    long long t0 = tu_now_ms();
    tu_assert_status(hilock_lock_acquire(l, 0, 10000, tu_record, &res[0]), 0);
    tu_assert_status(hilock_lock_query_ttl(l, tu_record, &res[1]), 0);
    int bound = DEAD_REQ_MS + tu_ms(1500);
    ck_assert(tu_run_until_count(&res[0].calls, 1, bound));
    ck_assert(tu_run_until_count(&res[1].calls, 1, bound));
    for (int i = 0; i < 2; i++) {
        ck_assert_msg(res[i].status == HILOCK_ETIMEDOUT ||
                          res[i].status == HILOCK_ECONN,
                      "request %d: %s", i, hilock_err_name(res[i].status));
        ck_assert_msg(res[i].at_ms - t0 < bound,
                      "request %d failed after %lld ms", i,
                      res[i].at_ms - t0);
    }
    tu_run_quiet();
    ck_assert_int_eq(res[0].calls, 1);
    ck_assert_int_eq(res[1].calls, 1);
    ck_assert_uint_eq(hilock_lock_hold_count(l), 0);
}
END_TEST

START_TEST(waiting_acquire_without_a_server_ends_by_its_deadline_once)
{
    enum { WAIT_MS = 2 * DEAD_REQ_MS }; /* outlasts a request deadline */
    client = client_on_dead_port();
    struct hilock_lock *l = tu_lock(client, "nowhere", 1);
    long long t0 = tu_now_ms();
    tu_assert_status(hilock_lock_acquire(l, WAIT_MS, 10000, tu_record,
                                         &res[0]),
                     0);
    int bound = WAIT_MS + tu_ms(1500);
    ck_assert(tu_run_until_count(&res[0].calls, 1, bound));
    ck_assert_msg(res[0].status == HILOCK_ETIMEDOUT ||
                      res[0].status == HILOCK_ECONN,
                  "status %s", hilock_err_name(res[0].status));
    ck_assert_msg(res[0].at_ms - t0 < bound, "ended after %lld ms",
                  res[0].at_ms - t0);
    tu_run_quiet();
    ck_assert_int_eq(res[0].calls, 1);
}
END_TEST

START_TEST(client_free_without_a_server_cancels_pending_once)
{
    client = client_on_dead_port();
    for (int i = 0; i < 4; i++) {
        struct hilock_lock *l = numbered_lock(client, "nowhere", i);
        tu_assert_status(hilock_lock_acquire(l, 0, 10000, tu_record, &res[i]),
                         0);
    }
    /* freed while it is failing to connect */
    ck_assert_msg(tu_run_until_state(client, HILOCK_STATE_DOWN, tu_ms(2000)),
                  "the client never reported the refused connection");
    hilock_client_free(client);
    client = NULL;
    assert_each_canceled_once(0, 4);
    tu_run_quiet();
    assert_each_canceled_once(0, 4);
}
END_TEST

static Suite *lifecycle_suite(void)
{
    Suite *s = suite_create("lifecycle");
    TCase *tc = tcase_create("free_and_cancel");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc,
                   client_free_cancels_every_pending_acquire_once_and_undoes_them);
    tcase_add_test(
        tc, client_free_delivers_the_release_and_cancels_pending_callbacks_once);
    tcase_add_test(tc, client_free_inside_a_callback_cancels_the_others_once);
    tcase_add_test(tc, lock_free_inside_its_own_acquire_callback_is_safe);
    tcase_add_test(tc, lock_free_of_a_held_lock_releases_it);
    tcase_add_test(tc,
                   lock_free_with_an_acquire_pending_cancels_it_and_leaves_no_hold);
    tcase_add_test(tc, cancel_of_a_waiting_acquire_fires_ecanceled_once);
    tcase_add_test(tc, cancel_right_after_issuing_undoes_a_late_success);
    tcase_add_test(tc, cancel_after_redis_granted_undoes_the_success);
    tcase_add_test(tc, lock_free_after_its_client_frees_only_the_handle);
    tcase_add_test(tc, client_close_returns_at_once_and_delivers_the_release);
    tcase_add_test(tc,
                   client_close_gives_up_on_a_stalled_server_at_the_deadline);
    suite_add_tcase(s, tc);

    TCase *ns = tcase_create("no_server");
    tcase_add_checked_fixture(ns, setup_no_server, teardown);
    tcase_set_timeout(ns, 30);
    tcase_add_test(ns, request_without_a_server_fails_in_bounded_time_once);
    tcase_add_test(ns, waiting_acquire_without_a_server_ends_by_its_deadline_once);
    tcase_add_test(ns, client_free_without_a_server_cancels_pending_once);
    suite_add_tcase(s, ns);
    return s;
}

int main(void)
{
    return tu_main(lifecycle_suite());
}
