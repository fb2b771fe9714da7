/* SPDX-License-Identifier: BSD-3-Clause */
/* test_trust.c -- the edges where a careful user first stopped trusting
 * the library: a resend that overtook its twin, leases shortened under the
 * watchdog, handles of one owner that did not see each other's changes, a
 * release lost at shutdown, a renewal applied after its owner gave up, a
 * same-owner acquire queued behind strangers, waits that gave up on one
 * hiccup, errors that all read "timed out", handshakes that failed quietly
 * and a subscriber connection that reconnected in a storm. Each test fails
 * without the fix it is named after. */
#include "testutil.h"
#include "proxy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REQ_MS 1000
/* A lease shorter than a watchdog period, and how long a test watches a
 * hold under it: two such leases, after which it would be gone unless
 * renewed. Scaled by CK_TIMEOUT_MULTIPLIER, as are the watchdog leases of
 * those tests: a client slowed down by valgrind must renew in time. */
#define SHORT_MS tu_ms(300)
#define TWO_SHORT_LEASES_MS (2 * SHORT_MS)

static struct tp_proxy *proxy;
static struct hilock_client *client, *other;
static struct tu_result res[4], lost, lost2;

/* Log lines and state changes the client reported. */
static char logged[4096];
static int states[32], state_status[32], nstates;

static void log_line(enum hilock_log_level level, const char *msg, void *arg)
{
    (void)level;
    (void)arg;
    size_t n = strlen(logged);
    snprintf(logged + n, sizeof logged - n, "%s\n", msg);
}

static void on_state(struct hilock_client *c, int status,
                     enum hilock_state state, const char *node, void *arg)
{
    (void)c;
    (void)node;
    (void)arg;
    if (nstates < 32) {
        state_status[nstates] = status;
        states[nstates++] = state;
    }
}

static void setup(void)
{
    tu_setup();
    proxy = NULL;
    client = other = NULL;
    memset(res, 0, sizeof res);
    memset(&lost, 0, sizeof lost);
    memset(&lost2, 0, sizeof lost2);
    logged[0] = '\0';
    nstates = 0;
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
    tu_teardown();
}

/* Options of every client here: 1 s requests, quick reconnects, the log and
 * the state callback above; through the proxy when there is one. */
static void options(struct hilock_options *o, uint32_t watchdog_ms)
{
    tu_options(o);
    if (proxy)
        o->node.port = tp_port(proxy);
    o->request_timeout_ms = REQ_MS;
    o->connect_timeout_ms = REQ_MS;
    o->reconnect_min_ms = 20;
    o->reconnect_max_ms = 200;
    if (watchdog_ms)
        o->watchdog_lease_ms = watchdog_ms;
    o->log_cb = log_line;
    o->state_cb = on_state;
}

static struct hilock_client *new_client(uint32_t watchdog_ms)
{
    struct hilock_options o;
    options(&o, watchdog_ms);
    return tu_client(&o);
}

static void await(struct tu_result *r, int n, int timeout_ms, const char *what)
{
    ck_assert_msg(tu_run_until_count(&r->calls, n, timeout_ms),
                  "%s: no callback within %d ms", what, timeout_ms);
}

static bool proxy_holds_three(void *arg)
{
    (void)arg;
    return tp_held_commands(proxy) >= 3;
}

/* 1: a NOSCRIPT reply is proof the first attempt was not applied, so its
 * resend is a new attempt; it must not be taken for an old resend because
 * its twin, sent after it, was applied first. */
START_TEST(noscript_resend_overtaken_by_its_twin_counts_two_holds)
{
    proxy = tp_new(tu_base, rs_port(tu_srv));
    ck_assert_ptr_nonnull(proxy);
    struct hilock_options opts;
    options(&opts, 0);
    opts.scripts_only = 1; /* both attempts are scripts */
    client = tu_client(&opts);
    struct hilock_lock *a = tu_lock(client, "ns", 1);
    struct hilock_lock *b = tu_lock(client, "ns", 1);
    tu_assert_status(tu_query(hilock_lock_query_held, a, NULL), 0);
    char *ok = rs_str(tu_srv, "SCRIPT", "FLUSH", (char *)NULL);
    free(ok);
    tp_hold_after(proxy, 1); /* a's attempt passes, then everything waits */
    tu_assert_status(hilock_lock_acquire(a, 0, 30000, tu_record, &res[0]), 0);
    tu_assert_status(hilock_lock_acquire(b, 0, 30000, tu_record, &res[1]), 0);
    ck_assert_msg(tu_run_until(proxy_holds_three, NULL, tu_ms(3000)),
                  "the NOSCRIPT reload and resend never came");
    /* someone else loads the scripts before b's attempt runs */
    struct tp_proxy *px = proxy;
    proxy = NULL; /* straight to Redis */
    other = new_client(0);
    proxy = px;
    struct hilock_lock *o = tu_lock(other, "elsewhere", 1);
    tu_assert_status(tu_query(hilock_lock_query_held, o, NULL), 0);
    tp_hold_after(proxy, -1);
    await(&res[0], 1, tu_ms(3000), "acquire a");
    await(&res[1], 1, tu_ms(3000), "acquire b");
    tu_assert_status(res[0].status, 0);
    tu_assert_status(res[1].status, 0);
    ck_assert_int_eq(tu_holds("ns", client, 1), 2);
    tu_assert_status(tu_release(a, NULL), 0);
    ck_assert_int_eq(tu_holds("ns", client, 1), 1);
}
END_TEST

/* 2: a shorter lease set on a watchdog lock (renew, or a re-entry with a
 * lease) must not outrun the watchdog: it renews within the short lease. */
START_TEST(watchdog_keeps_a_lock_whose_lease_was_shortened)
{
    client = new_client((uint32_t)tu_ms(6000));
    struct hilock_lock *l = tu_lock(client, "short", 1);
    tu_assert_status(hilock_lock_on_lost(l, tu_record, &lost), 0);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    tu_assert_status(hilock_lock_renew(l, (uint64_t)tu_ms(400), tu_record,
                                       &res[0]),
                     0);
    await(&res[0], 1, tu_ms(2000), "renew");
    tu_assert_status(res[0].status, 0);
    tu_assert_status(tu_acquire(l, 0, (uint64_t)SHORT_MS, NULL), 0);
    /* ^ a re-entry */
    tu_run_for(TWO_SHORT_LEASES_MS);
    ck_assert_int_eq(lost.calls, 0);
    ck_assert_int_gt(rs_int(tu_srv, "PTTL", "short", (char *)NULL), SHORT_MS);
    tu_assert_status(tu_release(l, NULL), 0); /* re-applies a lease */
    tu_run_for(TWO_SHORT_LEASES_MS);
    ck_assert_int_eq(lost.calls, 0);
    ck_assert_int_eq(tu_holds("short", client, 1), 1);
}
END_TEST

/* 3: handles of one owner share one hold: when another handle ends it, the
 * holder hears at once, not at its next renewal. */
START_TEST(twin_handle_ending_the_hold_is_seen_at_once)
{
    client = new_client(30000);
    struct hilock_lock *a = tu_lock(client, "twin", 7);
    struct hilock_lock *b = tu_lock(client, "twin", 7);
    tu_assert_status(hilock_lock_on_lost(a, tu_record, &lost), 0);
    tu_assert_status(tu_acquire(a, 0, 0, NULL), 0);
    tu_assert_status(tu_release(b, NULL), 0); /* the owner's one hold */
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "twin", (char *)NULL), 0);
    /* at once, not at the next renewal, 10 s away */
    await(&lost, 1, tu_ms(500), "on_lost of the other handle");
    tu_assert_status(lost.status, HILOCK_ELOST);
    ck_assert_uint_eq(hilock_lock_hold_count(a), 0);
}
END_TEST

START_TEST(twin_reentry_with_a_short_lease_keeps_the_watchdog_hold)
{
    client = new_client(30000);
    struct hilock_lock *a = tu_lock(client, "twin2", 7);
    struct hilock_lock *b = tu_lock(client, "twin2", 7);
    tu_assert_status(hilock_lock_on_lost(a, tu_record, &lost), 0);
    tu_assert_status(hilock_lock_on_lost(b, tu_record, &lost2), 0);
    tu_assert_status(tu_acquire(a, 0, 0, NULL), 0);
    tu_assert_status(tu_acquire(b, 0, (uint64_t)SHORT_MS, NULL), 0);
    tu_run_for(TWO_SHORT_LEASES_MS);
    ck_assert_int_eq(lost.calls + lost2.calls, 0);
    ck_assert_int_eq(tu_holds("twin2", client, 7), 2);
    tu_assert_status(tu_release(b, NULL), 0);
    tu_run_for(TWO_SHORT_LEASES_MS);
    ck_assert_int_eq(lost.calls, 0);
    ck_assert_int_eq(tu_holds("twin2", client, 7), 1);
}
END_TEST

/* 4: the natural shutdown order delivers the release already issued. */
START_TEST(lock_free_then_client_free_releases_at_once)
{
    client = new_client(0);
    struct hilock_lock *l = tu_lock(client, "bye", 1);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    hilock_lock_free(l);
    hilock_client_free(client);
    client = NULL;
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "bye", (char *)NULL), 0);
}
END_TEST

static void unblackhole_on_lost(struct hilock_lock *l, int status,
                                const struct hilock_result *result, void *arg)
{
    tu_record(l, status, result, arg);
    tp_blackhole(proxy, false);
}

/* 5: a renewal held up in a stall reaches Redis just after its owner
 * declared the lock lost, while the key still has its safety margin left:
 * it must not extend the key. */
START_TEST(renewal_arriving_after_the_loss_does_not_extend_the_lock)
{
    /* a 900 ms lease, scaled like the bound below: the client's estimate
     * of the server's clock must err by less than the margin (a tenth),
     * which a slow run needs more time for */
    int lease_ms = tu_ms(900);
    proxy = tp_new(tu_base, rs_port(tu_srv));
    ck_assert_ptr_nonnull(proxy);
    client = new_client((uint32_t)lease_ms);
    struct hilock_lock *l = tu_lock(client, "late", 1);
    tu_assert_status(hilock_lock_on_lost(l, unblackhole_on_lost, &lost), 0);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    tp_blackhole(proxy, true);
    await(&lost, 1, tu_ms(3000), "on_lost in the stall");
    long long t0 = tu_now_ms();
    /* the key had at most the margin left; an applied renewal would give
     * it a whole lease again: this bound, 4/9 of the lease (400 ms), lies
     * between the two */
    ck_assert_msg(tu_run_until_redis(0, lease_ms * 4 / 9, "EXISTS", "late",
                                     (char *)NULL),
                  "the lock was extended after its owner gave it up "
                  "(PTTL %lld after %lld ms)",
                  rs_int(tu_srv, "PTTL", "late", (char *)NULL),
                  tu_now_ms() - t0);
}
END_TEST

/* 6: re-entry never waits, not even behind this client's waiters of other
 * owners. */
START_TEST(same_owner_acquire_with_a_wait_reenters_past_other_waiters)
{
    client = new_client(0);
    struct hilock_lock *a = tu_lock(client, "reent", 1);
    struct hilock_lock *w = tu_lock(client, "reent", 2);
    struct hilock_lock *a2 = tu_lock(client, "reent", 1);
    tu_assert_status(tu_acquire(a, 0, 0, NULL), 0);
    tu_assert_status(hilock_lock_acquire(w, 5000, 0, tu_record, &res[0]), 0);
    tu_client_ready(client); /* answered after w's busy reply: w is parked */
    tu_assert_status(hilock_lock_acquire(a2, 5000, 0, tu_record, &res[1]), 0);
    /* queued behind w, it would wait until w's deadline ends it, 5 s on */
    await(&res[1], 1, tu_ms(1000), "re-entry");
    tu_assert_status(res[1].status, 0);
    ck_assert_int_eq(res[0].calls, 0);
    ck_assert_int_eq(tu_holds("reent", client, 1), 2);
}
END_TEST

/* 7: a wait lasts until its own deadline through stalls and reconnects. */
START_TEST(waiting_acquire_outlasts_a_stall_longer_than_the_request_timeout)
{
    proxy = tp_new(tu_base, rs_port(tu_srv));
    ck_assert_ptr_nonnull(proxy);
    struct hilock_options o;
    options(&o, 0);
    o.request_timeout_ms = (uint32_t)tu_ms(300);
    client = tu_client(&o);
    struct hilock_lock *l = tu_lock(client, "stall", 1);
    tu_client_ready(client);
    tp_blackhole(proxy, true);
    tu_assert_status(hilock_lock_acquire(l, 8000, 0, tu_record, &res[0]), 0);
    /* a stall of twice the request timeout */
    tu_run_for(2 * (int)o.request_timeout_ms);
    ck_assert_int_eq(res[0].calls, 0);
    long long stall_end = tu_now_ms();
    tp_blackhole(proxy, false);
    tp_cut_all(proxy); /* and a reconnect on top */
    await(&res[0], 1, tu_ms(6000), "acquire after the stall");
    tu_assert_status(res[0].status, 0);
    ck_assert_int_ge(res[0].at_ms, stall_end);
}
END_TEST

/* 8: the cause, not "timed out". */
START_TEST(refused_connection_is_econn)
{
    struct hilock_options o;
    options(&o, 0);
    o.node.port = tu_dead_port();
    o.request_timeout_ms = (uint32_t)tu_ms(200); /* the ECONN comes at it */
    client = tu_client(&o);
    struct hilock_lock *l = tu_lock(client, "nobody", 1);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), HILOCK_ECONN);
    ck_assert_int_ge(nstates, 1);
    ck_assert_int_eq(states[0], HILOCK_STATE_DOWN);
    tu_assert_status(state_status[0], HILOCK_ECONN);
}
END_TEST

START_TEST(server_error_text_reaches_the_log)
{
    rs_stop(tu_srv);
    struct rs_options so;
    memset(&so, 0, sizeof so);
    so.conf = "rename-command EVALSHA \"\"\nrename-command EVAL \"\"\n"
              "rename-command RESTORE \"\"";
    tu_srv = tu_server_start(&so);
    ck_assert_ptr_nonnull(tu_srv);
    client = new_client(0);
    struct hilock_lock *l = tu_lock(client, "renamed", 1);
    /* RESTORE refused: the script goes instead, and is refused too */
    tu_assert_status(tu_acquire(l, 0, 0, NULL), HILOCK_ESERVER);
    ck_assert_msg(strstr(logged, "unknown command") != NULL,
                  "server text not logged: %s", logged);
}
END_TEST

/* A server that does not know a command echoes its first arguments in the
 * error: the owner field among them. The log keeps the server's word and
 * drops the arguments: the client id is never logged. */
START_TEST(unknown_command_error_logs_no_client_id)
{
    rs_stop(tu_srv);
    struct rs_options so;
    memset(&so, 0, sizeof so);
    so.conf = "rename-command EVALSHA \"\"\nrename-command EVAL \"\"\n"
              "rename-command RESTORE \"\"\nrename-command HDEL \"\"\n"
              "rename-command HEXISTS \"\"\nrename-command HGET \"\"";
    tu_srv = tu_server_start(&so);
    ck_assert_ptr_nonnull(tu_srv);
    struct hilock_options o;
    options(&o, 0);
    o.scripts_only = 1;
    client = tu_client(&o);
    char id[37];
    tu_assert_status(hilock_client_id(client, id, sizeof id), 0);
    struct hilock_lock *l = tu_lock(client, "k", 1);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), HILOCK_ESERVER);
    tu_assert_status(tu_release(l, NULL), HILOCK_ESERVER);
    tu_query(hilock_lock_query_held, l, NULL);
    tu_query(hilock_lock_query_count, l, NULL);
    ck_assert_msg(strstr(logged, "unknown command 'EVALSHA'") != NULL,
                  "server text not logged: %s", logged);
    ck_assert_msg(strstr(logged, id) == NULL, "client id logged: %s",
                  logged);
}
END_TEST

/* 9: a failed handshake fails the requests; they never run elsewhere. */
START_TEST(failed_select_fails_requests_instead_of_using_db_0)
{
    struct hilock_options o;
    options(&o, 0);
    o.db = 100;
    client = tu_client(&o);
    struct hilock_lock *l = tu_lock(client, "db", 1);
    int st = tu_acquire(l, 0, 0, NULL);
    ck_assert_msg(st == HILOCK_ESERVER, "status %s", hilock_err_name(st));
    ck_assert_int_eq(rs_int(tu_srv, "DBSIZE", (char *)NULL), 0);
    ck_assert_msg(strstr(logged, "DB index") != NULL, "log: %s", logged);
}
END_TEST

START_TEST(password_refused_by_a_server_without_one_fails_with_eauth)
{
    struct hilock_options o;
    options(&o, 0);
    o.password = "not-configured";
    client = tu_client(&o);
    struct hilock_lock *l = tu_lock(client, "auth", 1);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), HILOCK_EAUTH);
    ck_assert_int_eq(rs_int(tu_srv, "DBSIZE", (char *)NULL), 0);
}
END_TEST

/* The most connections a client (reconnect_min_ms 50, reconnect_max_ms
 * 2000) can open in elapsed_ms when its subscriber is refused each time:
 * the command connection, a first subscriber, and one more each time the
 * shortest next delay (half of 50, 100, 200 .. 2000 ms) has passed. */
static long long backoff_allows(long long elapsed_ms)
{
    long long n = 2, at = 0, delay = 50;
    while ((at += delay / 2) <= elapsed_ms) {
        n++;
        delay = delay * 2 > 2000 ? 2000 : delay * 2;
    }
    return n;
}

/* INFO stats total_connections_received of tu_srv. */
static long long connections_received(void)
{
    char *s = rs_info(tu_srv, "stats", "total_connections_received");
    ck_assert_ptr_nonnull(s);
    long long n = atoll(s);
    free(s);
    return n;
}

/* 10: SUBSCRIBE denied: back off, say so, keep waiting right. */
START_TEST(subscribe_denied_backs_off_reports_enoperm_and_still_waits)
{
    rs_stop(tu_srv);
    struct rs_options so;
    memset(&so, 0, sizeof so);
    so.conf = "user nochan on >pw ~* resetchannels +@all";
    tu_srv = tu_server_start(&so);
    ck_assert_ptr_nonnull(tu_srv);
    other = new_client(0);
    struct hilock_lock *holder = tu_lock(other, "acl", 1);
    tu_assert_status(tu_acquire(holder, 0, 0, NULL), 0);
    struct hilock_options o;
    options(&o, 0);
    o.username = "nochan";
    o.password = "pw";
    o.reconnect_min_ms = 50; /* the defaults */
    o.reconnect_max_ms = 2000;
    client = tu_client(&o);
    struct hilock_lock *w = tu_lock(client, "acl", 2);
    long long conns0 = connections_received();
    long long t_wait = tu_now_ms();
    tu_assert_status(hilock_lock_acquire(w, 10000, 0, tu_record, &res[0]), 0);
    ck_assert_msg(tu_run_until_state(client, HILOCK_STATE_PUBSUB_DOWN,
                                     tu_ms(2000)),
                  "the denied subscriber was never reported");
    int reported = 0;
    for (int i = 0; i < nstates; i++)
        reported |= states[i] == HILOCK_STATE_PUBSUB_DOWN &&
                    state_status[i] == HILOCK_ENOPERM;
    ck_assert_msg(reported, "ENOPERM on the subscriber never reported");
    /* a window of 1 s at least; a storm would open 20 or more */
    tu_run_for((int)(t_wait + 1000 - tu_now_ms()));
    long long window = tu_now_ms() - t_wait;
    long long conns = connections_received() - conns0;
    ck_assert_msg(conns <= backoff_allows(window),
                  "%lld connections in %lld ms", conns, window);
    long long t0 = tu_now_ms();
    tu_assert_status(tu_release(holder, NULL), 0);
    await(&res[0], 1, tu_ms(3000), "waiter");
    tu_assert_status(res[0].status, 0);
    ck_assert_int_lt(res[0].at_ms - t0, tu_ms(1500));
}
END_TEST

/* The owner id makes owner fields; it must not show in key names that
 * anyone allowed to SCAN can read -- and a release leaves no key at all:
 * its request id lives in the lock hash, which goes with the last hold. */
START_TEST(release_leaves_no_key_behind)
{
    client = new_client(0);
    struct hilock_lock *l = tu_lock(client, "latch", 1);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert_int_eq(rs_int(tu_srv, "DBSIZE", (char *)NULL), 1);
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert_int_eq(rs_int(tu_srv, "DBSIZE", (char *)NULL), 0);
}
END_TEST

/* The readiness signal: up once connected, down with the cause. */
START_TEST(state_callback_reports_up_then_down_with_the_cause)
{
    client = new_client(0);
    struct hilock_lock *l = tu_lock(client, "st", 1);
    tu_assert_status(tu_query(hilock_lock_query_held, l, NULL), 0);
    ck_assert_int_eq(nstates, 1);
    ck_assert_int_eq(states[0], HILOCK_STATE_UP);
    tu_assert_status(state_status[0], 0);
    rs_stop(tu_srv);
    tu_srv = NULL;
    ck_assert_msg(tu_run_until_count(&nstates, 2, tu_ms(3000)), "no DOWN");
    ck_assert_int_eq(states[1], HILOCK_STATE_DOWN);
    tu_assert_status(state_status[1], HILOCK_ECONN);
    /* failed reconnects (after 10..20, 20..40, 40..80, 80..160 ms) do not
     * repeat the same news: a window over several of them */
    tu_run_for(300);
    ck_assert_int_eq(nstates, 2);
}
END_TEST

static Suite *trust_suite(void)
{
    const TTest *const tests[] = {
        noscript_resend_overtaken_by_its_twin_counts_two_holds,
        watchdog_keeps_a_lock_whose_lease_was_shortened,
        twin_handle_ending_the_hold_is_seen_at_once,
        twin_reentry_with_a_short_lease_keeps_the_watchdog_hold,
        lock_free_then_client_free_releases_at_once,
        renewal_arriving_after_the_loss_does_not_extend_the_lock,
        same_owner_acquire_with_a_wait_reenters_past_other_waiters,
        waiting_acquire_outlasts_a_stall_longer_than_the_request_timeout,
        refused_connection_is_econn,
        server_error_text_reaches_the_log,
        unknown_command_error_logs_no_client_id,
        failed_select_fails_requests_instead_of_using_db_0,
        password_refused_by_a_server_without_one_fails_with_eauth,
        subscribe_denied_backs_off_reports_enoperm_and_still_waits,
        state_callback_reports_up_then_down_with_the_cause,
        release_leaves_no_key_behind,
    };
    return tu_suite("trust", setup, teardown, 30, tests,
                    sizeof tests / sizeof tests[0]);
}

int main(void)
{
    return tu_main(trust_suite());
}
