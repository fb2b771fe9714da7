/* SPDX-License-Identifier: BSD-3-Clause */
/* test_redlock.c -- a client over several independent masters (Redlock):
 * quorum acquire and early decision with masters down, frozen (SIGSTOP) or
 * cut off (the fault proxy), no quorum, release everywhere, the validity
 * rule, undo of partial and late grants, loss and repair across restarts,
 * fencing tokens across masters, waiting on every master, bad topologies.
 * Each test starts its own masters on free loopback ports.
 *
 * Time bounds are hang guards or the property under test ("decided well
 * before the per-master deadline"); both scale with CK_TIMEOUT_MULTIPLIER,
 * and so do the request timeouts they are compared with. */
#include "testutil.h"

#include "proxy.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MASTERS_MAX 5

static struct rs_server *masters[MASTERS_MAX];
static struct tp_proxy *proxies[MASTERS_MAX];
static bool paused[MASTERS_MAX];
static int nmasters;
static struct hilock_client *client, *client2;

/* Milliseconds scaled by $CK_TIMEOUT_MULTIPLIER (valgrind runs slower). */
static int scaled(int ms)
{
    const char *m = getenv("CK_TIMEOUT_MULTIPLIER");
    int k = m ? atoi(m) : 1;
    return ms * (k > 0 ? k : 1);
}

static void setup(void)
{
    tu_setup_no_redis();
    nmasters = 0;
    client = client2 = NULL;
}

static void teardown(void)
{
    /* Thaw first: a client being freed waits for replies already sent. The
     * proxies go before the clients, so that nothing waits on them. */
    for (int i = 0; i < nmasters; i++)
        if (masters[i] && paused[i])
            rs_resume(masters[i]);
    for (int i = 0; i < nmasters; i++) {
        tp_free(proxies[i]);
        proxies[i] = NULL;
    }
    hilock_client_free(client);
    hilock_client_free(client2);
    client = client2 = NULL;
    for (int i = 0; i < nmasters; i++) {
        rs_stop(masters[i]);
        masters[i] = NULL;
        paused[i] = false;
    }
    nmasters = 0;
    tu_teardown();
}

/* Start n masters. */
static void masters_start(int n)
{
    for (int i = 0; i < n; i++) {
        masters[i] = rs_start(NULL);
        ck_assert_ptr_nonnull(masters[i]);
        nmasters++;
    }
}

/* Freeze (SIGSTOP) and thaw master i. */
static void master_pause(int i)
{
    ck_assert_int_eq(rs_pause(masters[i]), 0);
    paused[i] = true;
}

static void master_resume(int i)
{
    ck_assert_int_eq(rs_resume(masters[i]), 0);
    paused[i] = false;
}

/* A proxy in front of every master (clients made afterwards use them). */
static void proxies_start(void)
{
    for (int i = 0; i < nmasters; i++) {
        proxies[i] = tp_new(tu_base, rs_port(masters[i]));
        ck_assert_ptr_nonnull(proxies[i]);
    }
}

/* Stop master i for good. */
static void master_down(int i)
{
    rs_stop(masters[i]);
    masters[i] = NULL;
    paused[i] = false;
}

/* Options over the masters (through their proxies when they have one),
 * with a request timeout of request_ms. eps must stay valid until the
 * client is made. */
static void redlock_options(struct hilock_options *o,
                            struct hilock_endpoint *eps, int request_ms)
{
    for (int i = 0; i < nmasters; i++)
        eps[i] = (struct hilock_endpoint){
            "127.0.0.1",
            proxies[i] ? tp_port(proxies[i]) : rs_port(masters[i]), NULL};
    tu_options(o);
    o->topology = HILOCK_TOPOLOGY_REDLOCK;
    o->redlock.masters = eps;
    o->redlock.count = (size_t)nmasters;
    o->request_timeout_ms = (uint32_t)request_ms;
}

/* A client over the masters with the given request timeout. */
static struct hilock_client *redlock_client_timeout(int request_ms)
{
    struct hilock_endpoint eps[MASTERS_MAX];
    struct hilock_options o;
    redlock_options(&o, eps, request_ms);
    return tu_client(&o);
}

/* Start n masters and a client over them. */
static struct hilock_client *redlock_client(int n)
{
    masters_start(n);
    return redlock_client_timeout(1000);
}

/* Every master answers: connections are up and scripts loaded. */
static void warm_up(struct hilock_lock *l)
{
    struct hilock_result held;
    tu_assert_status(tu_query(hilock_lock_query_held, l, &held), 0);
    ck_assert_int_eq(held.held, 0);
}

/* Three masters (behind proxies when proxied), a client over them whose
 * requests time out after request_ms, and lock name on it, once every
 * master has answered. */
static struct hilock_lock *three_masters(const char *name, int request_ms,
                                         bool proxied)
{
    masters_start(3);
    if (proxied)
        proxies_start();
    client = redlock_client_timeout(request_ms);
    struct hilock_lock *l = tu_lock(client, name, 1);
    warm_up(l);
    return l;
}

/* Whether master i (running) has key. */
static bool master_has(int i, const char *key)
{
    return rs_int(masters[i], "EXISTS", key, (char *)NULL) == 1;
}

/* How many running masters (neither stopped nor frozen) have key. */
static int masters_with(const char *key)
{
    int n = 0;
    for (int i = 0; i < nmasters; i++)
        n += masters[i] && !paused[i] && master_has(i, key);
    return n;
}

static bool no_master_has(void *key)
{
    return masters_with(key) == 0;
}

static bool every_master_has(void *key)
{
    return masters_with(key) == nmasters;
}

/* Run until no master has key (releases still on their way land). */
static bool none_left(const char *key)
{
    return tu_run_until(no_master_has, (void *)key, scaled(2000));
}

/* EVALSHA calls master i has served (every lock script is one). */
static long long scripts_run(int i)
{
    return rs_cmdstat_calls(masters[i], "evalsha");
}

/* Start an acquire whose outcome goes to r. */
static void acquire_async(struct hilock_lock *l, uint64_t wait_ms,
                          uint64_t lease_ms, struct tu_result *r)
{
    memset(r, 0, sizeof *r);
    tu_assert_status(hilock_lock_acquire(l, wait_ms, lease_ms, tu_record, r),
                     0);
}

/* Run until r has its callback; fail after timeout_ms. */
static void await(struct tu_result *r, int timeout_ms, const char *what)
{
    ck_assert_msg(tu_run_until_count(&r->calls, 1, timeout_ms),
                  "%s: no callback within %d ms", what, timeout_ms);
    ck_assert_int_eq(r->calls, 1);
}

START_TEST(acquire_and_release_reach_every_master)
{
    client = redlock_client(3);
    struct hilock_lock *l = tu_lock(client, "rl", 1);
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
    /* decided by the first two; the third grants too */
    ck_assert(tu_run_until(every_master_has, "rl", scaled(2000)));
    struct hilock_result left;
    tu_assert_status(tu_release(l, &left), 0);
    ck_assert_int_eq(left.holds, 0);
    ck_assert(none_left("rl"));
}
END_TEST

/* A semaphore's counter on a majority of the masters is another kind:
 * the quorum reports that, not a missing quorum, and nothing is taken;
 * with it on one master only, the other two grant the lock. */
static bool third_master_free(void *key)
{
    return !master_has(2, key);
}

START_TEST(another_kind_on_a_majority_is_reported_as_such)
{
    client = redlock_client(3);
    struct hilock_lock *l = tu_lock(client, "rk", 1);
    warm_up(l);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(rs_int(masters[i], "SET", "rk", "5", (char *)NULL),
                         RS_ERR); /* "OK" is no number */
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), HILOCK_EWRONGKIND);
    /* what the third master granted is given back */
    ck_assert(tu_run_until(third_master_free, "rk", scaled(2000)));
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(rs_int(masters[i], "GET", "rk", (char *)NULL), 5);

    ck_assert_int_eq(rs_int(masters[1], "DEL", "rk", (char *)NULL), 1);
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
    ck_assert_int_eq(rs_int(masters[0], "GET", "rk", (char *)NULL), 5);
    tu_assert_status(tu_release(l, NULL), 0);
}
END_TEST

START_TEST(second_owner_is_busy_on_a_majority)
{
    client = redlock_client(3);
    struct hilock_lock *a = tu_lock(client, "rl2", 1);
    struct hilock_lock *b = tu_lock(client, "rl2", 2);
    struct hilock_result ttl;
    tu_assert_status(tu_acquire(a, 0, 10000, NULL), 0);
    tu_assert_status(tu_acquire(b, 0, 10000, &ttl), HILOCK_EBUSY);
    ck_assert_int_gt(ttl.ttl_ms, 0);
}
END_TEST

/* A master that is down costs nothing: the first majority decides, long
 * before that master's request runs out of time. */
START_TEST(quorum_acquire_with_one_master_down)
{
    masters_start(3);
    client = redlock_client_timeout(scaled(3000));
    struct hilock_lock *l = tu_lock(client, "rl3", 1);
    master_down(2);
    long long t0 = tu_now_ms();
    tu_assert_status(tu_acquire(l, 0, 60000, NULL), 0);
    long long took = tu_now_ms() - t0;
    ck_assert_msg(took < scaled(1000), "acquired after %lld ms", took);
    ck_assert_int_eq(masters_with("rl3"), 2);
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert(none_left("rl3"));
}
END_TEST

/* A frozen master (SIGSTOP: connections accepted, nothing answered) does
 * not hold up the acquire or the release, and once it thaws it applies
 * both: the lock is not left behind on it. */
START_TEST(paused_master_delays_nothing_and_keeps_nothing)
{
    struct hilock_lock *l = three_masters("rlp", scaled(3000), false);
    master_pause(2);
    long long t0 = tu_now_ms();
    tu_assert_status(tu_acquire(l, 0, 60000, NULL), 0);
    long long took = tu_now_ms() - t0;
    ck_assert_msg(took < scaled(1000), "acquired after %lld ms", took);
    struct hilock_result left;
    t0 = tu_now_ms();
    tu_assert_status(tu_release(l, &left), 0);
    took = tu_now_ms() - t0;
    ck_assert_msg(took < scaled(1000), "released after %lld ms", took);
    ck_assert_int_eq(left.holds, 0);
    master_resume(2);
    /* master 2 now runs the queued acquire (a 60 s lease), then the
     * release: only the release can take the key away in time */
    ck_assert(none_left("rlp"));
    ck_assert_int_ge(scripts_run(2), 2);
}
END_TEST

struct scripts_goal {
    int master;
    long long n;
    const char *key;
};

/* Master g->master has run g->n scripts and has no g->key. */
static bool scripts_done_key_gone(void *arg)
{
    const struct scripts_goal *g = arg;
    return scripts_run(g->master) >= g->n && !master_has(g->master, g->key);
}

/* The same with the network to one master stalled (the proxy forwards
 * nothing either way): once it flows again, the master that timed out gets
 * the acquire and then the release. */
START_TEST(blackholed_master_delays_nothing_and_keeps_nothing)
{
    struct hilock_lock *l = three_masters("rlb", scaled(3000), true);
    long long before = scripts_run(2);
    tp_blackhole(proxies[2], true);
    long long t0 = tu_now_ms();
    tu_assert_status(tu_acquire(l, 0, 60000, NULL), 0);
    long long took = tu_now_ms() - t0;
    ck_assert_msg(took < scaled(1000), "acquired after %lld ms", took);
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert_int_eq(scripts_run(2), before); /* nothing got through */
    tp_blackhole(proxies[2], false);
    struct scripts_goal g = {2, before + 2, "rlb"};
    ck_assert_msg(tu_run_until(scripts_done_key_gone, &g, scaled(2000)),
                  "master 2 ran %lld scripts, has the key: %d",
                  scripts_run(2) - before, master_has(2, "rlb"));
    ck_assert_int_eq(masters_with("rlb"), 0);
}
END_TEST

/* Two masters down: no majority can answer. The acquire fails with
 * HILOCK_ENOQUORUM by the per-master deadline (a tenth of the lease), and
 * the grant of the master that answered is undone. */
START_TEST(two_of_three_down_is_enoquorum)
{
    client = redlock_client(3);
    struct hilock_lock *l = tu_lock(client, "rl4", 1);
    warm_up(l);
    master_down(1);
    master_down(2);
    long long t0 = tu_now_ms();
    tu_assert_status(tu_acquire(l, 0, 2000, NULL), HILOCK_ENOQUORUM);
    long long took = tu_now_ms() - t0;
    ck_assert_msg(took < 200 + scaled(500), "failed after %lld ms", took);
    ck_assert(none_left("rl4"));
}
END_TEST

/* Two masters frozen: their requests never answer, yet the acquire ends
 * with HILOCK_ENOQUORUM at the per-master deadline, never hangs; the grant
 * of the master that answered is undone, and so are the grants the frozen
 * ones make once they thaw (after the decision). */
START_TEST(two_of_three_paused_is_enoquorum_and_late_grants_are_undone)
{
    struct hilock_lock *l = three_masters("rl5", scaled(300), false);
    master_pause(1);
    master_pause(2);
    long long t0 = tu_now_ms();
    /* 60 s lease: the per-master deadline is the request timeout */
    tu_assert_status(tu_acquire(l, 0, 60000, NULL), HILOCK_ENOQUORUM);
    long long took = tu_now_ms() - t0;
    ck_assert_msg(took < scaled(300) + scaled(500), "failed after %lld ms",
                  took);
    ck_assert(none_left("rl5"));
    master_resume(1);
    master_resume(2);
    /* they grant now, with a 60 s lease: only the undo removes the keys */
    ck_assert(none_left("rl5"));
    ck_assert_int_ge(scripts_run(1), 2);
    ck_assert_int_ge(scripts_run(2), 2);
}
END_TEST

/* Two masters down, a waiting acquire with the per-master deadline set by
 * the request timeout (the lease is long): attempt 1 fails with no quorum
 * at 1 * deadline, attempt 2 follows (at once: the undo of master 0's
 * grant publishes a release, which wakes the waiter, or 50 ms later), and
 * the wait ends while it is out (at 1.75 * deadline). Returns the outcome;
 * *took the time. */
static struct tu_result wait_without_quorum(const char *name, int deadline_ms,
                                            int wait_ms, long long *took)
{
    struct hilock_lock *l = three_masters(name, deadline_ms, false);
    master_down(1);
    master_down(2);
    struct tu_result r;
    long long t0 = tu_now_ms();
    acquire_async(l, (uint64_t)wait_ms, 60000, &r);
    await(&r, wait_ms + scaled(5000), "acquire");
    *took = r.at_ms - t0;
    ck_assert(none_left(name));
    return r;
}

/* A waiting acquire goes on through failed attempts, and when no majority
 * was ever reachable it ends at its wait deadline with HILOCK_ENOQUORUM
 * (the clock of libevent's timers may run a few ms behind). */
START_TEST(waiting_acquire_without_quorum_ends_enoquorum_at_its_deadline)
{
    long long took;
    int wait = scaled(350);
    struct tu_result r = wait_without_quorum("rl6", scaled(200), wait, &took);
    tu_assert_status(r.status, HILOCK_ENOQUORUM);
    ck_assert_msg(took >= wait - 10, "gave up after %lld ms", took);
    ck_assert_msg(took < wait + scaled(500), "gave up after %lld ms", took);
}
END_TEST

/* The same, but the wait ends while the waiter is parked between two
 * attempts: still HILOCK_ENOQUORUM, since every attempt failed without a
 * quorum. Timing-dependent by nature: with a 100 ms lease each attempt
 * fails at its 10 ms per-master deadline and the next follows at once, so
 * over 200 waits of 40 ms some deadlines land while the waiter is parked
 * (most runs see several). */
START_TEST(waiting_acquire_parked_at_its_deadline_ends_enoquorum)
{
    struct hilock_lock *l = three_masters("rl7", 1000, false);
    master_down(1);
    master_down(2);
    for (int i = 0; i < 200; i++) {
        struct tu_result r;
        acquire_async(l, 40, 100, &r);
        await(&r, scaled(5000), "acquire");
        ck_assert_msg(r.status == HILOCK_ENOQUORUM, "wait %d: %s", i,
                      hilock_err_name(r.status));
    }
}
END_TEST

/* The validity rule: a majority granted, but the answers are read after
 * the lease (less the drift allowance) has passed, so the lock may already
 * have expired on them; the acquisition must be refused and its grants
 * undone. A slow master alone cannot produce this: each master's request
 * has a deadline of a tenth of the lease, well before the validity ends.
 * What can is a stalled client -- a loop that does not run (a long
 * callback, the process descheduled) while the replies arrive. The test
 * is that client: it lets the loop send the requests, then does not run
 * it until the majority has answered and the lease has passed. libevent
 * then delivers the replies before the expired deadlines, so the decision
 * is the majority's grants, and only the validity rule can refuse them. */
START_TEST(validity_check_rejects_an_acquisition_slower_than_its_lease)
{
    const int lease = 100;
    client = redlock_client(3);
    struct hilock_lock *l = tu_lock(client, "rlv", 1);
    warm_up(l);
    master_pause(2); /* a minority says nothing */
    struct tu_result r;
    acquire_async(l, 0, (uint64_t)lease, &r);
    long long t0 = tu_now_ms(); /* not before the requests were made */
    /* one turn of the loop writes the requests; none can be answered yet */
    event_base_loop(tu_base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    ck_assert_int_eq(r.calls, 0);
    /* the stall: wait (loop not running) until the two masters granted */
    long long deadline = tu_now_ms() + scaled(2000);
    while (!(master_has(0, "rlv") && master_has(1, "rlv")))
        ck_assert_msg(tu_now_ms() < deadline, "the requests never arrived");
    /* only an undo may remove these keys: their own lease is now long */
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(rs_int(masters[i], "PEXPIRE", "rlv", "60000",
                                (char *)NULL),
                         1);
    /* ... and until the lease has passed: the time is the scenario */
    long long left;
    while ((left = t0 + lease + 1 - tu_now_ms()) > 0) {
        struct timespec ts = {0, (long)left * 1000000L};
        nanosleep(&ts, NULL);
    }
    await(&r, scaled(2000), "acquire");
    tu_assert_status(r.status, HILOCK_ENOQUORUM);
    ck_assert_int_eq(hilock_lock_hold_count(l), 0);
    ck_assert(none_left("rlv"));
    master_resume(2);
    ck_assert(none_left("rlv"));
}
END_TEST

struct held_goal {
    int a, b;
};

/* The proxies of masters g->a and g->b each hold a command back. */
static bool both_hold(void *arg)
{
    const struct held_goal *g = arg;
    return tp_held_commands(proxies[g->a]) > 0 &&
           tp_held_commands(proxies[g->b]) > 0;
}

/* Restarting two of three masters empty (no persistence) takes the lock
 * from a majority: the watchdog's next renewal finds it gone there and
 * on_lost fires. The restarts happen while the proxies hold the next
 * renewal back, so that no answer of the old servers (the lock still held)
 * can be read after them: otherwise a renewal could find the lock on a
 * majority made of master 0 and a stale answer, and repair the third. */
START_TEST(majority_restarted_empty_reports_lost)
{
    struct hilock_endpoint eps[MASTERS_MAX];
    struct hilock_options o;
    masters_start(3);
    proxies_start();
    redlock_options(&o, eps, scaled(1000));
    o.watchdog_lease_ms = (uint32_t)scaled(1500); /* renewed every 500 ms */
    client = tu_client(&o);
    struct hilock_lock *l = tu_lock(client, "rll", 1);
    struct tu_result lost = {0};
    tu_assert_status(hilock_lock_on_lost(l, tu_record, &lost), 0);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    tp_hold_after(proxies[1], 0);
    tp_hold_after(proxies[2], 0);
    struct held_goal g = {1, 2};
    ck_assert_msg(tu_run_until(both_hold, &g, scaled(2000)),
                  "no renewal came");
    ck_assert_int_eq(lost.calls, 0);
    for (int i = 1; i <= 2; i++) {
        ck_assert_int_eq(rs_kill9_restart(masters[i]), 0);
        tp_cut_all(proxies[i]); /* drops the held renewal */
        tp_hold_after(proxies[i], -1);
    }
    await(&lost, scaled(3000), "on_lost");
    tu_assert_status(lost.status, HILOCK_ELOST);
    ck_assert_ptr_eq(lost.lock, l);
    ck_assert_int_eq(hilock_lock_hold_count(l), 0);
    ck_assert(!master_has(1, "rll") && !master_has(2, "rll")); /* no repair */
}
END_TEST

struct repair_goal {
    int master;
    const char *key, *field;
    const struct tu_result *lost;
};

/* The lock was reported lost, or master g->master holds it for the owner
 * again. */
static bool repaired_or_lost(void *arg)
{
    const struct repair_goal *g = arg;
    return g->lost->calls > 0 ||
           rs_int(masters[g->master], "HEXISTS", g->key, g->field,
                  (char *)NULL) == 1;
}

/* One master of three restarted empty: the lock is still held on a
 * majority, so it is not lost; the next renewal finds it gone on that
 * master and takes it there again (the repair), so that the next failure
 * of another master does not cost the quorum. */
START_TEST(minority_restarted_empty_is_repaired_not_lost)
{
    struct hilock_endpoint eps[MASTERS_MAX];
    struct hilock_options o;
    char field[64];
    masters_start(3);
    redlock_options(&o, eps, scaled(500));
    o.watchdog_lease_ms = (uint32_t)scaled(1500); /* renewed every 500 ms */
    client = tu_client(&o);
    struct hilock_lock *l = tu_lock(client, "rlr", 1);
    struct tu_result lost = {0};
    tu_assert_status(hilock_lock_on_lost(l, tu_record, &lost), 0);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    ck_assert_int_eq(rs_kill9_restart(masters[2]), 0);
    ck_assert(!master_has(2, "rlr"));
    struct repair_goal g = {2, "rlr", tu_field(client, 1, field), &lost};
    ck_assert_msg(tu_run_until(repaired_or_lost, &g, scaled(3000)),
                  "master 2 never got the lock back");
    ck_assert_msg(lost.calls == 0, "on_lost: %s",
                  hilock_err_name(lost.status));
    long long pttl = rs_int(masters[2], "PTTL", "rlr", (char *)NULL);
    ck_assert_int_gt(pttl, 0);
    ck_assert_int_le(pttl, scaled(1500));
    /* still held on all three: a renewal now confirms it */
    struct tu_result renewed = {0};
    tu_assert_status(hilock_lock_renew(l, 0, tu_record, &renewed), 0);
    await(&renewed, scaled(3000), "renew");
    tu_assert_status(renewed.status, 0);
    ck_assert_int_eq(lost.calls, 0);
    ck_assert_int_eq(hilock_lock_hold_count(l), 1);
    ck_assert_int_eq(masters_with("rlr"), 3);
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert(none_left("rlr"));
}
END_TEST

#define FENCE_KEY(name) "hilock_fence:{" name "}"

/* The fencing counter of master i. */
static long long fence_counter(int i, const char *key)
{
    return rs_int(masters[i], "GET", key, (char *)NULL);
}

/* SET key value on master i. */
static void master_set(int i, const char *key, const char *value)
{
    char *ok = rs_str(masters[i], "SET", key, value, (char *)NULL);
    ck_assert_ptr_nonnull(ok);
    ck_assert_str_eq(ok, "OK");
    free(ok);
}

/* Each master has its own token counter; here they differ (100, 5, 50).
 * Tokens must still strictly increase from holder to holder, whichever
 * majority grants: a token is raised on a majority (the fence script)
 * before it is reported, and every later majority shares a master with
 * that one. The majorities are chosen by freezing the third master. */
START_TEST(fencing_tokens_increase_while_counters_differ)
{
    struct hilock_endpoint eps[MASTERS_MAX];
    struct hilock_options o;
    const char *fk = FENCE_KEY("rlf");
    masters_start(3);
    redlock_options(&o, eps, scaled(1000));
    o.fencing = 1;
    client = tu_client(&o);
    struct hilock_lock *a = tu_lock(client, "rlf", 1);
    struct hilock_lock *b = tu_lock(client, "rlf", 2);
    warm_up(a);
    const char *start[3] = {"100", "5", "50"};
    for (int i = 0; i < 3; i++)
        master_set(i, fk, start[i]);
    /* {0, 1} grant: tokens 101 and 6 differ, so 101 is written to a
     * majority before it is reported */
    struct hilock_result t1, t2, t3;
    master_pause(2);
    tu_assert_status(tu_acquire(a, 0, 60000, &t1), 0);
    ck_assert_int_gt(t1.token, 100);
    ck_assert_int_eq(hilock_lock_token(a), t1.token);
    ck_assert_int_ge(fence_counter(0, fk), t1.token);
    ck_assert_int_ge(fence_counter(1, fk), t1.token);
    tu_assert_status(tu_release(a, NULL), 0);
    master_resume(2);
    ck_assert(none_left("rlf"));
    /* {1, 2} grant: master 0, which drew t1, is out */
    master_pause(0);
    tu_assert_status(tu_acquire(b, 0, 60000, &t2), 0);
    ck_assert_int_gt(t2.token, t1.token);
    tu_assert_status(tu_release(b, NULL), 0);
    master_resume(0);
    ck_assert(none_left("rlf"));
    /* all three */
    tu_assert_status(tu_acquire(a, 0, 60000, &t3), 0);
    ck_assert_int_gt(t3.token, t2.token);
    tu_assert_status(tu_release(a, NULL), 0);
}
END_TEST

/* PUBSUB NUMSUB channel is n on every master. */
static bool subscribed_everywhere(void *channel)
{
    for (int i = 0; i < nmasters; i++)
        if (rs_numsub(masters[i], channel) != 1)
            return false;
    return true;
}

struct attempts_goal {
    long long base[MASTERS_MAX];
    long long n;
};

/* Every master has run g->n more scripts than at g->base. */
static bool attempts_reached(void *arg)
{
    const struct attempts_goal *g = arg;
    for (int i = 0; i < nmasters; i++)
        if (scripts_run(i) < g->base[i] + g->n)
            return false;
    return true;
}

/* Park a waiter (client2) on name, held by another owner with a 60 s
 * lease, and run until it listens on every master and has made the retry
 * that a confirmed subscription triggers: from then on only a release
 * message (or its fallback timer, at its 20 s deadline) makes it try
 * again. */
static struct hilock_lock *park_waiter(const char *name, const char *channel,
                                       struct tu_result *r)
{
    struct attempts_goal g;
    struct hilock_lock *w = tu_lock(client2, name, 2);
    for (int i = 0; i < nmasters; i++)
        g.base[i] = scripts_run(i);
    g.n = 2; /* the first attempt and the retry after subscribing */
    acquire_async(w, (uint64_t)scaled(20000), 10000, r);
    ck_assert_msg(tu_run_until(subscribed_everywhere, (void *)channel,
                               scaled(2000)),
                  "the waiter did not subscribe on every master");
    ck_assert(tu_run_until(attempts_reached, &g, scaled(2000)));
    ck_assert_int_eq(r->calls, 0);
    return w;
}

#define CHANNEL(name) "redisson_lock__channel:{" name "}"

/* A waiter on another client is woken by the release message, not by its
 * fallback timer (20 s away): it gets the lock right after the release. */
START_TEST(waiter_is_woken_by_the_release_message)
{
    client = redlock_client(3);
    client2 = redlock_client_timeout(1000);
    struct hilock_lock *h = tu_lock(client, "rlw", 1);
    tu_assert_status(tu_acquire(h, 0, 60000, NULL), 0);
    struct tu_result r;
    struct hilock_lock *w = park_waiter("rlw", CHANNEL("rlw"), &r);
    long long released = tu_now_ms();
    tu_assert_status(tu_release(h, NULL), 0);
    await(&r, scaled(5000), "waiter");
    tu_assert_status(r.status, 0);
    long long took = r.at_ms - released;
    ck_assert_msg(took < scaled(1000), "woke %lld ms after the release",
                  took);
    ck_assert_int_eq(masters_with("rlw"), 3);
    tu_assert_status(tu_release(w, NULL), 0);
}
END_TEST

/* Waiters listen on every master: one release message, from any one of
 * them, wakes the waiter. Here the holder's keys vanish without a word
 * and only master 2 publishes. */
START_TEST(a_release_message_from_any_master_wakes_the_waiter)
{
    client = redlock_client(3);
    client2 = redlock_client_timeout(1000);
    struct hilock_lock *h = tu_lock(client, "rlm", 1);
    tu_assert_status(tu_acquire(h, 0, 60000, NULL), 0);
    struct tu_result r;
    struct hilock_lock *w = park_waiter("rlm", CHANNEL("rlm"), &r);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(rs_int(masters[i], "DEL", "rlm", (char *)NULL), 1);
    long long released = tu_now_ms();
    ck_assert_int_eq(rs_int(masters[2], "PUBLISH", CHANNEL("rlm"), "0",
                            (char *)NULL),
                     1);
    await(&r, scaled(5000), "waiter");
    tu_assert_status(r.status, 0);
    long long took = r.at_ms - released;
    ck_assert_msg(took < scaled(1000), "woke %lld ms after the message",
                  took);
    tu_assert_status(tu_release(w, NULL), 0);
}
END_TEST

/* Five masters: a majority is three, so two down still acquire, three
 * down do not. */
START_TEST(five_masters_tolerate_two_down_not_three)
{
    masters_start(5);
    client = redlock_client_timeout(scaled(3000));
    struct hilock_lock *l = tu_lock(client, "rl5m", 1);
    warm_up(l);
    master_down(3);
    master_down(4);
    long long t0 = tu_now_ms();
    tu_assert_status(tu_acquire(l, 0, 60000, NULL), 0);
    long long took = tu_now_ms() - t0;
    ck_assert_msg(took < scaled(1000), "acquired after %lld ms", took);
    ck_assert_int_eq(masters_with("rl5m"), 3);
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert(none_left("rl5m"));
    master_down(2);
    t0 = tu_now_ms();
    /* per-master deadline: a tenth of the lease, 200 ms */
    tu_assert_status(tu_acquire(l, 0, 2000, NULL), HILOCK_ENOQUORUM);
    took = tu_now_ms() - t0;
    ck_assert_msg(took < 200 + scaled(500), "failed after %lld ms", took);
    ck_assert(none_left("rl5m"));
}
END_TEST

struct held_n_goal {
    long a, c;
};

/* Proxy 0 holds g->a commands and proxy 2 holds g->c. */
static bool holds_reached(void *arg)
{
    const struct held_n_goal *g = arg;
    return tp_held_commands(proxies[0]) == g->a &&
           tp_held_commands(proxies[2]) == g->c;
}

/* The token reported after a fence is the one the fence wrote to a
 * majority, not a larger one from a master that granted after the
 * decision. Counters 10, 20, 100: masters 0 and 1 grant 11 and 21, the
 * fence writes 21; master 2's grant (101) arrives while the fence is out
 * and must not be reported -- only master 2 has it, and the next majority
 * without master 2 would hand out 22. */
START_TEST(fence_reports_a_token_a_majority_has)
{
    struct hilock_endpoint eps[MASTERS_MAX];
    struct hilock_options o;
    const char *fk = FENCE_KEY("rlt");
    masters_start(3);
    proxies_start();
    redlock_options(&o, eps, scaled(2000));
    o.fencing = 1;
    client = tu_client(&o);
    struct hilock_lock *a = tu_lock(client, "rlt", 1);
    struct hilock_lock *b = tu_lock(client, "rlt", 2);
    warm_up(a);
    master_set(0, fk, "10");
    master_set(1, fk, "20");
    master_set(2, fk, "100");
    tp_hold_after(proxies[0], 1); /* the acquire passes, the fence waits */
    tp_hold_after(proxies[2], 0); /* everything waits */
    struct tu_result r;
    acquire_async(a, 0, 60000, &r);
    /* decided on masters 0 and 1 (11, 21): the fence of 21 is out */
    struct held_n_goal g = {1, 2};
    ck_assert(tu_run_until(holds_reached, &g, scaled(2000)));
    ck_assert_int_eq(r.calls, 0);
    /* master 2 grants 101, then answers the fence: with master 1's
     * answer, the fence has its majority */
    tp_hold_after(proxies[2], -1);
    await(&r, scaled(3000), "acquire");
    tu_assert_status(r.status, 0);
    int64_t t1 = r.res.token;
    int have = 0;
    for (int i = 0; i < 3; i++)
        have += fence_counter(i, fk) >= t1;
    ck_assert_msg(have >= 2, "token %lld is on %d counter(s): %lld %lld %lld",
                  (long long)t1, have, fence_counter(0, fk),
                  fence_counter(1, fk), fence_counter(2, fk));
    tp_hold_after(proxies[0], -1);
    tu_assert_status(tu_release(a, NULL), 0);
    ck_assert(none_left("rlt"));
    tp_blackhole(proxies[2], true); /* the next majority: masters 0 and 1 */
    struct hilock_result t2;
    tu_assert_status(tu_acquire(b, 0, 60000, &t2), 0);
    ck_assert_msg(t2.token > t1, "token %lld after %lld", (long long)t2.token,
                  (long long)t1);
    tu_assert_status(tu_release(b, NULL), 0);
    tp_blackhole(proxies[2], false);
}
END_TEST

/* A grant that arrives after the acquire was decided as failed, while
 * that master's request was still within its deadline, is undone: else
 * the master keeps the lock for its whole lease, and a majority of such
 * leftovers blocks every owner. Here masters 1 and 2 refuse at once (the
 * key holds a string), master 0 is frozen and thaws before its deadline,
 * then grants. */
START_TEST(grant_after_a_failed_decision_is_undone)
{
    struct hilock_lock *l = three_masters("rlg", scaled(3000), false);
    master_set(1, "rlg", "x");
    master_set(2, "rlg", "x");
    struct scripts_goal g = {0, scripts_run(0) + 2, "rlg"};
    master_pause(0);
    tu_assert_status(tu_acquire(l, 0, 60000, NULL), HILOCK_ENOQUORUM);
    master_resume(0);
    /* master 0 runs the acquire, and then the undo must come */
    ck_assert_msg(tu_run_until(scripts_done_key_gone, &g, scaled(2000)),
                  "master 0 ran %lld script(s) and kept the grant (PTTL %lld)",
                  scripts_run(0) - (g.n - 2),
                  rs_int(masters[0], "PTTL", "rlg", (char *)NULL));
}
END_TEST

struct renewals_goal {
    long long n;
    const struct tu_result *lost;
};

/* on_lost fired, or master 0 has run g->n scripts. */
static bool renewed_or_lost(void *arg)
{
    const struct renewals_goal *g = arg;
    return g->lost->calls > 0 || scripts_run(0) >= g->n;
}

/* A frozen minority master does not cost a watchdog lock that the other
 * two renew: a renewal is settled as soon as a majority answered for every
 * lock, not when the frozen master's request times out -- which, with a
 * 1.5 s watchdog lease and the default 2 s request timeout, would come
 * after the lock's validity (about 1.35 s). */
START_TEST(paused_minority_does_not_lose_a_watchdog_lock)
{
    struct hilock_endpoint eps[MASTERS_MAX];
    struct hilock_options o;
    masters_start(3);
    redlock_options(&o, eps, scaled(2000));
    o.watchdog_lease_ms = (uint32_t)scaled(1500); /* renewed every 500 ms */
    client = tu_client(&o);
    struct hilock_lock *l = tu_lock(client, "rlq", 1);
    struct tu_result lost = {0};
    tu_assert_status(hilock_lock_on_lost(l, tu_record, &lost), 0);
    warm_up(l);
    master_pause(2);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    struct renewals_goal g = {scripts_run(0) + 4, &lost};
    ck_assert(tu_run_until(renewed_or_lost, &g, scaled(5000)));
    ck_assert_msg(lost.calls == 0, "lost after %lld renewal(s) on master 0",
                  scripts_run(0) - (g.n - 4));
    ck_assert_int_eq(hilock_lock_hold_count(l), 1);
}
END_TEST

/* Another owner holds name on master i only, for ms. */
static void foreign_hold(int i, const char *name, int ms)
{
    char pttl[16];
    snprintf(pttl, sizeof pttl, "%d", ms);
    ck_assert_int_eq(rs_int(masters[i], "HSET", name, "other:1", "1",
                            (char *)NULL),
                     1);
    ck_assert_int_eq(rs_int(masters[i], "PEXPIRE", name, pttl, (char *)NULL),
                     1);
}

#define SPLIT_ROUNDS 2

static void multi_record(struct hilock_multi *m, int status,
                         const struct hilock_result *res, void *arg)
{
    struct tu_result *r = arg;
    (void)m;
    (void)res;
    r->calls++;
    r->status = status;
}

/* Acquire, then release, l or (when m) the MultiLock m, waiting wait_ms
 * for it. The acquire's status; *took its time. */
static int split_round(struct hilock_lock *l, struct hilock_multi *m,
                       int wait_ms, long long *took)
{
    struct tu_result r = {0};
    long long t0 = tu_now_ms();
    if (!m) {
        int rc = tu_acquire(l, (uint64_t)wait_ms, 60000, NULL);
        *took = tu_now_ms() - t0;
        return rc ? rc : tu_release(l, NULL);
    }
    tu_assert_status(
        hilock_multi_acquire(m, (uint64_t)wait_ms, 60000, multi_record, &r),
        0);
    await(&r, wait_ms + scaled(5000), "multi acquire");
    *took = tu_now_ms() - t0;
    if (r.status)
        return r.status;
    r.calls = 0;
    tu_assert_status(hilock_multi_release(m, multi_record, &r), 0);
    await(&r, scaled(5000), "multi release");
    return r.status;
}

/* Master 2's answers held by its proxy: it runs what it gets, but its
 * replies do not come (a slow master, or one cut off on the way back). */
static void master_mute(int i)
{
    tp_hold_replies(proxies[i], true);
}

/* Master 2 out by fault (down, frozen or mute), and another owner holding
 * the lock "rls" on master 0 or 1 for a while: each attempt until then is
 * a split vote (one grant, one busy). The two live masters decide it at
 * once (a master not known out yet gets a short deadline once they
 * answered), the attempt is undone and tried again after a short random
 * backoff, and the lock (or, with multi, a MultiLock over "rls" and
 * "rlt") is taken soon after the other hold ends, never waiting out master
 * 2's deadline (the request timeout, 500 ms, longer than the wait) -- not
 * even once, on the first split vote after the fault. */
static void split_votes_with_one_master_out(void (*fault)(int), bool multi)
{
    static const char *const names[2] = {"rls", "rlt"};
    static const size_t lens[2] = {3, 3};
    struct hilock_multi *m = NULL;
    struct hilock_lock *l =
        three_masters("rls", scaled(500), fault == master_mute);
    if (multi)
        tu_assert_status(hilock_multi_new(client, names, lens, 2, 2, &m), 0);
    fault(2);
    for (int i = 0; i < SPLIT_ROUNDS; i++) {
        int wait = scaled(400);
        long long took;
        foreign_hold(i % 2, "rls", scaled(150));
        int rc = split_round(l, m, wait, &took);
        ck_assert_msg(rc == 0 && took < wait, "round %d: %s after %lld ms",
                      i, hilock_err_name(rc), took);
    }
    hilock_multi_free(m);
}

/* A master that refuses connections is a no vote at once. */
START_TEST(split_votes_with_one_master_refusing_do_not_wait_for_it)
{
    split_votes_with_one_master_out(master_down, false);
}
END_TEST

/* A frozen master costs a short deadline once the others split: then it
 * is suspect, and its votes get a short deadline until it answers again. */
START_TEST(split_votes_with_one_master_frozen_do_not_wait_for_it)
{
    split_votes_with_one_master_out(master_pause, false);
}
END_TEST

/* The same for a master whose answers do not come back. */
START_TEST(split_votes_with_one_master_mute_do_not_wait_for_it)
{
    split_votes_with_one_master_out(master_mute, false);
}
END_TEST

/* The same for a MultiLock. */
START_TEST(multilock_split_votes_with_one_master_out_do_not_wait_for_it)
{
    split_votes_with_one_master_out(master_down, true);
}
END_TEST

START_TEST(multilock_split_votes_with_one_master_frozen_do_not_wait_for_it)
{
    split_votes_with_one_master_out(master_pause, true);
}
END_TEST

/* c's counters. */
static struct hilock_stats stats_of(struct hilock_client *c)
{
    struct hilock_stats st;
    tu_assert_status(hilock_client_stats(c, &st, sizeof st), 0);
    return st;
}

/* Whether c has no request in flight: each was answered or ran out of
 * time. */
static bool nothing_in_flight(void *c)
{
    return stats_of(c).requests_inflight == 0;
}

struct reconnects_goal {
    struct hilock_client *c;
    uint64_t n;
};

static bool reconnected(void *arg)
{
    const struct reconnects_goal *g = arg;
    return stats_of(g->c).reconnects >= g->n;
}

static bool master_2_has(void *key)
{
    return master_has(2, key);
}

/* Whether the cut armed on proxy p came (a reply was dropped). */
static bool cut_done(void *p)
{
    return !tp_cut_pending(p);
}

static bool master_1_has_not(void *key)
{
    return !master_has(1, key);
}

/* Acquire (20 s lease) and release l, or the MultiLock m when given. */
static void take_and_give_back(struct hilock_lock *l, struct hilock_multi *m)
{
    struct tu_result r = {0};
    if (!m) {
        tu_assert_status(tu_acquire(l, 0, 20000, NULL), 0);
        ck_assert(tu_run_until(nothing_in_flight, client, scaled(3000)));
        tu_assert_status(tu_release(l, NULL), 0);
        return;
    }
    tu_assert_status(hilock_multi_acquire(m, 0, 20000, multi_record, &r), 0);
    await(&r, scaled(3000), "multi acquire");
    tu_assert_status(r.status, 0);
    ck_assert(tu_run_until(nothing_in_flight, client, scaled(3000)));
    r.calls = 0;
    tu_assert_status(hilock_multi_release(m, multi_record, &r), 0);
    await(&r, scaled(3000), "multi release");
    tu_assert_status(r.status, 0);
}

/* A master cut off (the proxy holds everything) misses an acquire and its
 * release; both of its requests run out of time, then its connection
 * drops. Neither is sent again (the operations are over): else the
 * acquire alone, resent on the new connection, would take the released
 * lock there for its whole lease. Once the master has a lock taken after
 * the reconnect, whatever went before it on that connection has run:
 * then no master may have the released lock (or MultiLock). */
static void released_stays_released(bool multi)
{
    static const char *const names[2] = {"rlr", "rlr3"};
    static const size_t lens[2] = {3, 4};
    struct hilock_multi *m = NULL;
    masters_start(3);
    proxies_start();
    client = redlock_client_timeout(scaled(300));
    struct hilock_lock *l = tu_lock(client, "rlr", 1);
    struct hilock_lock *after = tu_lock(client, "rlr2", 1);
    warm_up(l);
    if (multi)
        tu_assert_status(hilock_multi_new(client, names, lens, 2, 2, &m), 0);
    tp_blackhole(proxies[2], true);
    take_and_give_back(l, m);
    ck_assert(tu_run_until(nothing_in_flight, client, scaled(3000)));
    struct reconnects_goal g = {client, stats_of(client).reconnects + 1};
    tp_blackhole(proxies[2], false);
    tp_cut_all(proxies[2]);
    ck_assert(tu_run_until(reconnected, &g, scaled(3000)));
    tu_assert_status(tu_acquire(after, 0, 20000, NULL), 0);
    ck_assert(tu_run_until(master_2_has, "rlr2", scaled(3000)));
    for (int i = 0; i < nmasters; i++)
        ck_assert_msg(
            rs_int(masters[i], "EXISTS", "rlr", "rlr3", (char *)NULL) == 0,
            "master %d has the released lock, PTTL %lld", i,
            rs_int(masters[i], "PTTL", "rlr", (char *)NULL));
    hilock_multi_free(m);
}

/* The release of a lock held on every master reaches two; the third is
 * cut off, and its connection drops while the release is still out there:
 * the release goes again on the new connection (harmless to repeat), so
 * that master does not keep the lock for its lease. */
START_TEST(release_cut_off_on_one_master_goes_again_there)
{
    struct hilock_lock *l = three_masters("rlz", scaled(2000), true);
    tu_assert_status(tu_acquire(l, 0, 20000, NULL), 0);
    ck_assert(tu_run_until(every_master_has, "rlz", scaled(2000)));
    tp_blackhole(proxies[2], true);
    tu_assert_status(tu_release(l, NULL), 0);
    tp_blackhole(proxies[2], false);
    tp_cut_all(proxies[2]);
    ck_assert_msg(none_left("rlz"), "left on %d master(s)",
                  masters_with("rlz"));
}
END_TEST

/* An acquire that fails (masters 0 and 2 hold the lock for another
 * owner) while master 1, frozen, has not run it yet: master 1 then grants
 * it, and its reply is lost with the connection. The attempt is decided,
 * but its request goes again on the new connection as the undo of its
 * request id, so master 1 does not keep a hold nobody has for the lease
 * (a minority of such leftovers makes every later vote a unanimous one). */
START_TEST(failed_acquire_cut_off_on_one_master_is_undone_there)
{
    struct hilock_lock *l = three_masters("rlf", scaled(2000), true);
    for (int i = 0; i < 3; i += 2) {
        ck_assert_int_eq(rs_int(masters[i], "HSET", "rlf", "other:1", "1",
                                (char *)NULL),
                         1);
        ck_assert_int_eq(rs_int(masters[i], "PEXPIRE", "rlf", "30000",
                                (char *)NULL),
                         1);
    }
    master_pause(1);
    tu_assert_status(tu_acquire(l, 0, 30000, NULL), HILOCK_EBUSY);
    tp_cut_next_reply(proxies[1]);
    master_resume(1);
    ck_assert(tu_run_until(cut_done, proxies[1], scaled(2000)));
    ck_assert_msg(tu_run_until(master_1_has_not, "rlf", scaled(2000)),
                  "master 1 keeps the failed attempt's hold, PTTL %lld",
                  rs_int(masters[1], "PTTL", "rlf", (char *)NULL));
}
END_TEST

START_TEST(released_lock_does_not_come_back_on_a_minority_master)
{
    released_stays_released(false);
}
END_TEST

START_TEST(released_multilock_does_not_come_back_on_a_minority_master)
{
    released_stays_released(true);
}
END_TEST

/* Owner tag 1 of client holds name on master i, unknown to the client
 * (a release that never reached that master). */
static void stale_hold(int i, const char *name)
{
    char field[64], rid[80];
    tu_field(client, 1, field);
    snprintf(rid, sizeof rid, "%s:rid", field);
    ck_assert_int_eq(rs_int(masters[i], "HSET", name, field, "1", rid, "1",
                            (char *)NULL),
                     2);
    ck_assert_int_eq(rs_int(masters[i], "PEXPIRE", name, "20000",
                            (char *)NULL),
                     1);
}

/* An acquisition that masters 1 and 2 count as a re-entry (the owner's
 * stale holds) while the client held nothing: the token must still be a
 * fresh one, above the last token another owner was given. */
START_TEST(stale_holds_on_a_majority_give_no_old_token)
{
    struct hilock_endpoint eps[MASTERS_MAX];
    struct hilock_options o;
    masters_start(3);
    redlock_options(&o, eps, scaled(1000));
    o.fencing = 1;
    client = tu_client(&o);
    struct hilock_lock *a = tu_lock(client, "rle", 1);
    struct hilock_lock *b = tu_lock(client, "rle", 2);
    warm_up(a);
    struct hilock_result tb, ta;
    tu_assert_status(tu_acquire(b, 0, 60000, &tb), 0);
    tu_assert_status(tu_release(b, NULL), 0);
    ck_assert(none_left("rle"));
    stale_hold(1, "rle");
    stale_hold(2, "rle");
    master_pause(0);
    tu_assert_status(tu_acquire(a, 0, 60000, &ta), 0);
    ck_assert_msg(ta.token > tb.token, "token %lld after another owner's %lld",
                  (long long)ta.token, (long long)tb.token);
    tu_assert_status(tu_release(a, NULL), 0);
}
END_TEST

struct renewals_sent_goal {
    struct hilock_client *c;
    uint64_t n;
};

static bool renewals_sent(void *arg)
{
    const struct renewals_sent_goal *g = arg;
    return stats_of(g->c).renewals_sent >= g->n;
}

/* The owner's hold count on master i. */
static long long holds_on(int i, const char *name)
{
    char field[64];
    return rs_int(masters[i], "HGET", name, tu_field(client, 1, field),
                  (char *)NULL);
}

static bool master_2_holds(void *name)
{
    return holds_on(2, name) >= 1;
}

/* Master 2 lost a watchdog lock and answers two renewals late, both
 * saying so: the lock is repaired there once, not counted twice, and its
 * release leaves nothing on any master. */
START_TEST(repair_counts_a_hold_once)
{
    struct hilock_endpoint eps[MASTERS_MAX];
    struct hilock_options o;
    masters_start(3);
    redlock_options(&o, eps, scaled(2000));
    o.watchdog_lease_ms = (uint32_t)scaled(900); /* renewed every 300 ms */
    client = tu_client(&o);
    struct hilock_lock *l = tu_lock(client, "rlx", 1);
    warm_up(l);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    ck_assert(tu_run_until(every_master_has, "rlx", scaled(2000)));
    ck_assert_int_eq(rs_int(masters[2], "DEL", "rlx", (char *)NULL), 1);
    master_pause(2);
    struct renewals_sent_goal g = {client, stats_of(client).renewals_sent + 2};
    ck_assert(tu_run_until(renewals_sent, &g, scaled(3000)));
    master_resume(2);
    ck_assert(tu_run_until(master_2_holds, "rlx", scaled(3000)));
    /* the next renewal is answered after both repairs */
    g.n = stats_of(client).renewals_sent + 1;
    ck_assert(tu_run_until(renewals_sent, &g, scaled(3000)));
    warm_up(tu_lock(client, "rlx-probe", 1));
    ck_assert_int_eq(holds_on(2, "rlx"), 1);
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert_msg(none_left("rlx"), "left on %d master(s)",
                  masters_with("rlx"));
}
END_TEST

START_TEST(bad_topologies_are_einval)
{
    struct hilock_endpoint eps[11];
    struct hilock_options o;
    struct hilock_client *c = NULL;
    hilock_options_init(&o);
    for (int i = 0; i < 11; i++)
        eps[i] = (struct hilock_endpoint){"127.0.0.1", 7001 + i, NULL};
    o.topology = HILOCK_TOPOLOGY_REDLOCK;
    o.redlock.masters = eps;
    o.redlock.count = 4; /* even */
    tu_assert_status(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
    o.redlock.count = 1; /* fewer than 3 */
    tu_assert_status(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
    o.redlock.count = 11; /* more than HILOCK_MASTERS_MAX */
    tu_assert_status(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
    o.redlock.count = 3;
    eps[1].port = 0; /* no port */
    tu_assert_status(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
    eps[1].port = 65536;
    tu_assert_status(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
    eps[1] = (struct hilock_endpoint){NULL, 7002, NULL}; /* no host */
    tu_assert_status(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
    eps[1] = (struct hilock_endpoint){"", 7002, NULL};
    tu_assert_status(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
    eps[1] = (struct hilock_endpoint){NULL, 0, ""}; /* empty socket path */
    tu_assert_status(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
    /* one socket listed twice, once beside a host and port (the socket
     * wins, so it is the same master) */
    eps[1] = (struct hilock_endpoint){NULL, 0, "/tmp/hilock-rl.sock"};
    eps[2] = (struct hilock_endpoint){"127.0.0.1", 7003,
                                      "/tmp/hilock-rl.sock"};
    tu_assert_status(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
    eps[2] = (struct hilock_endpoint){"127.0.0.1", 7001, NULL}; /* = eps[0] */
    tu_assert_status(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
    o.redlock.masters = NULL; /* a count without masters */
    tu_assert_status(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
    ck_assert_ptr_null(c);
    /* the same mix without duplicates is a valid topology */
    eps[2] = (struct hilock_endpoint){"127.0.0.1", 7003, NULL};
    o.redlock.masters = eps;
    tu_assert_status(hilock_client_new(tu_base, &o, &c), 0);
    ck_assert_ptr_nonnull(c);
    hilock_client_free(c);
}
END_TEST

static Suite *redlock_suite(void)
{
    Suite *s = suite_create("redlock");
    TCase *tc = tcase_create("redlock");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, acquire_and_release_reach_every_master);
    tcase_add_test(tc, second_owner_is_busy_on_a_majority);
    tcase_add_test(tc, quorum_acquire_with_one_master_down);
    tcase_add_test(tc, paused_master_delays_nothing_and_keeps_nothing);
    tcase_add_test(tc, blackholed_master_delays_nothing_and_keeps_nothing);
    tcase_add_test(tc, two_of_three_down_is_enoquorum);
    tcase_add_test(tc,
                   two_of_three_paused_is_enoquorum_and_late_grants_are_undone);
    tcase_add_test(
        tc, waiting_acquire_without_quorum_ends_enoquorum_at_its_deadline);
    tcase_add_test(
        tc, validity_check_rejects_an_acquisition_slower_than_its_lease);
    tcase_add_test(tc, majority_restarted_empty_reports_lost);
    tcase_add_test(tc, minority_restarted_empty_is_repaired_not_lost);
    tcase_add_test(tc, waiter_is_woken_by_the_release_message);
    tcase_add_test(tc, a_release_message_from_any_master_wakes_the_waiter);
    tcase_add_test(tc, five_masters_tolerate_two_down_not_three);
    tcase_add_test(tc, bad_topologies_are_einval);
    tcase_add_test(tc, fencing_tokens_increase_while_counters_differ);
    tcase_add_test(tc,
                   waiting_acquire_parked_at_its_deadline_ends_enoquorum);
    tcase_add_test(tc, fence_reports_a_token_a_majority_has);
    tcase_add_test(tc, grant_after_a_failed_decision_is_undone);
    tcase_add_test(tc, paused_minority_does_not_lose_a_watchdog_lock);
    tcase_add_test(tc, another_kind_on_a_majority_is_reported_as_such);
    tcase_add_test(tc, released_lock_does_not_come_back_on_a_minority_master);
    tcase_add_test(tc, release_cut_off_on_one_master_goes_again_there);
    tcase_add_test(tc, failed_acquire_cut_off_on_one_master_is_undone_there);
    tcase_add_test(tc,
                   released_multilock_does_not_come_back_on_a_minority_master);
    tcase_add_test(tc, stale_holds_on_a_majority_give_no_old_token);
    tcase_add_test(tc, repair_counts_a_hold_once);
    tcase_add_test(tc, split_votes_with_one_master_refusing_do_not_wait_for_it);
    tcase_add_test(tc, split_votes_with_one_master_frozen_do_not_wait_for_it);
    tcase_add_test(tc, split_votes_with_one_master_mute_do_not_wait_for_it);
    tcase_add_test(
        tc, multilock_split_votes_with_one_master_out_do_not_wait_for_it);
    tcase_add_test(
        tc, multilock_split_votes_with_one_master_frozen_do_not_wait_for_it);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_main(redlock_suite());
}
