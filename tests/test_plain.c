/* SPDX-License-Identifier: BSD-3-Clause */
/* test_plain.c -- the plain fast path: a free lock is taken with RESTORE
 * and a single hold given back with HDEL and the release message, no
 * script; the hash is the one the scripts write, so both paths mix; a
 * refused RESTORE goes on as the script; a server or ACL without the
 * commands turns the path off and nothing is lost. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static struct hilock_client *a, *b;
static char logged[8192];

/* Warnings of every client of the test, one after the other (a client
 * reconnecting to a server the test restarted logs too), while they fit. */
static void log_line(enum hilock_log_level level, const char *msg, void *arg)
{
    size_t n = strlen(logged);
    (void)arg;
    if (level >= HILOCK_LOG_WARN)
        snprintf(logged + n, sizeof logged - n, "%s\n", msg);
}

static void setup(void)
{
    struct hilock_options o;
    tu_setup();
    tu_options(&o);
    o.log_cb = log_line;
    logged[0] = '\0';
    a = tu_client(&o);
    b = tu_client(&o);
}

static void teardown(void)
{
    tu_teardown_pair(&a, &b);
}

/* INFO commandstats of cmd on tu_srv: its calls, and its failed calls. */
static long long calls(const char *cmd)
{
    long long n = rs_cmdstat_calls(tu_srv, cmd);
    ck_assert_int_ge(n, 0);
    return n;
}

/* Its failed calls (refused by the command), or rejected ones (refused
 * before it ran: an ACL). */
static long long cmdstat(const char *cmd, const char *what)
{
    char field[64], key[64];
    snprintf(field, sizeof field, "cmdstat_%s", cmd);
    snprintf(key, sizeof key, ",%s=", what);
    char *v = rs_info(tu_srv, "commandstats", field);
    const char *p = v ? strstr(v, key) : NULL;
    long long n = p ? strtoll(p + strlen(key), NULL, 10) : 0;
    free(v);
    return n;
}

static long long failed(const char *cmd)
{
    return cmdstat(cmd, "failed_calls");
}

START_TEST(free_lock_taken_and_given_back_without_a_script)
{
    struct hilock_lock *l = tu_lock(a, "inv", 7);
    tu_client_ready(a);
    /* a subscriber of the release channel, as a waiter elsewhere */
    redisContext *sub = rs_subscriber(tu_srv, "redisson_lock__channel:{inv}");
    ck_assert_ptr_nonnull(sub);
    long long sha = calls("evalsha"), rst = calls("restore");
    long long hdel = calls("hdel");

    tu_assert_status(tu_acquire(l, 0, 20000, NULL), 0);
    ck_assert_int_eq(calls("restore"), rst + 1);
    ck_assert_int_eq(calls("evalsha"), sha);
    /* Redisson's layout: the owner's field = 1, beside the request ids */
    char field[128], rid[140];
    tu_field(a, 7, field);
    snprintf(rid, sizeof rid, "%s:rid", field);
    ck_assert_int_eq(tu_holds("inv", a, 7), 1);
    ck_assert_int_eq(rs_int(tu_srv, "HLEN", "inv", (char *)NULL), 3);
    ck_assert_int_eq(rs_int(tu_srv, "HEXISTS", "inv", rid, (char *)NULL), 1);
    long long pttl = rs_int(tu_srv, "PTTL", "inv", (char *)NULL);
    ck_assert_msg(pttl > 15000 && pttl <= 20000, "lease %lld", pttl);
    ck_assert_uint_eq(hilock_lock_hold_count(l), 1);

    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert_int_eq(calls("hdel"), hdel + 1);
    ck_assert_int_eq(calls("evalsha"), sha);
    ck_assert_int_eq(tu_exists("inv"), 0);
    ck_assert_uint_eq(hilock_lock_hold_count(l), 0);
    /* the release message went out: Redisson's "0" */
    redisReply *r = NULL;
    ck_assert_int_eq(redisGetReply(sub, (void **)&r), REDIS_OK);
    ck_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 3);
    ck_assert_str_eq(r->element[1]->str, "redisson_lock__channel:{inv}");
    ck_assert_str_eq(r->element[2]->str, "0");
    freeReplyObject(r);
    redisFree(sub);
    ck_assert_int_eq(rs_int(tu_srv, "DBSIZE", (char *)NULL), 0);
}
END_TEST

static struct tu_result queued[2];

static bool both_answered(void *arg)
{
    (void)arg;
    return queued[0].calls == 1 && queued[1].calls == 1;
}

/* Plain commands are encoded into one buffer the client shares and handed
 * to hiredis from there; commands that must wait for the connection keep
 * a copy each. Two acquires sent before the client is up, then two
 * releases sent back to back, all go out whole. */
START_TEST(plain_commands_sent_before_the_connection_is_up_go_out_whole)
{
    struct hilock_lock *x = tu_lock(a, "queued-x", 1);
    struct hilock_lock *y = tu_lock(a, "queued-y", 2);
    long long sha = calls("evalsha"), rst = calls("restore");
    long long hdel = calls("hdel");
    ck_assert_int_eq(tu_ups(a), 0); /* nothing ran the loop yet */
    memset(queued, 0, sizeof queued);
    tu_assert_status(hilock_lock_acquire(x, 0, 20000, tu_record, &queued[0]),
                     0);
    tu_assert_status(hilock_lock_acquire(y, 0, 20000, tu_record, &queued[1]),
                     0);
    ck_assert(tu_run_until(both_answered, NULL, tu_ms(3000)));
    tu_assert_status(queued[0].status, 0);
    tu_assert_status(queued[1].status, 0);
    ck_assert_int_eq(calls("restore"), rst + 2);
    ck_assert_int_eq(tu_holds("queued-x", a, 1), 1);
    ck_assert_int_eq(tu_holds("queued-y", a, 2), 1);

    memset(queued, 0, sizeof queued);
    tu_assert_status(hilock_lock_release(x, tu_record, &queued[0]), 0);
    tu_assert_status(hilock_lock_release(y, tu_record, &queued[1]), 0);
    ck_assert(tu_run_until(both_answered, NULL, tu_ms(3000)));
    tu_assert_status(queued[0].status, 0);
    tu_assert_status(queued[1].status, 0);
    ck_assert_int_eq(calls("hdel"), hdel + 2);
    ck_assert_int_eq(calls("evalsha"), sha);
    ck_assert_int_eq(rs_int(tu_srv, "DBSIZE", (char *)NULL), 0);
}
END_TEST

START_TEST(busy_lock_is_looked_at_without_a_script_and_waits)
{
    struct hilock_lock *la = tu_lock(a, "busy", 1);
    struct hilock_lock *lb = tu_lock(b, "busy", 1);
    tu_assert_status(tu_acquire(la, 0, 20000, NULL), 0);
    long long sha = calls("evalsha"), bad = failed("restore");
    long long exec = calls("exec"), pttl = calls("pttl");
    /* refused (BUSYKEY), then RESTORE again with PTTL and HMGET in one
     * transaction: another owner's hold, busy at once, no script */
    tu_assert_status(tu_acquire(lb, 0, 20000, NULL), HILOCK_EBUSY);
    ck_assert_int_eq(failed("restore"), bad + 2);
    ck_assert_int_eq(calls("exec"), exec + 1);
    ck_assert_int_eq(calls("pttl"), pttl + 1);
    ck_assert_int_eq(calls("evalsha"), sha);
    ck_assert_int_eq(tu_holds("busy", b, 1), RS_NIL);
    /* a waiter is woken by the plain release's message, and its attempts
     * stay plain */
    struct tu_result got = {0};
    tu_assert_status(hilock_lock_acquire(lb, 5000, 20000, tu_record, &got), 0);
    tu_run_for(50);
    ck_assert_int_eq(got.calls, 0);
    long long t0 = tu_now_ms();
    tu_assert_status(tu_release(la, NULL), 0);
    ck_assert(tu_run_until_count(&got.calls, 1, tu_ms(2000)));
    tu_assert_status(got.status, 0);
    ck_assert_msg(tu_now_ms() - t0 < 1000, "woken after %lld ms",
                  tu_now_ms() - t0);
    ck_assert_int_eq(tu_holds("busy", b, 1), 1);
    ck_assert_int_eq(calls("evalsha"), sha);
    /* the plain path is still on for that client */
    tu_assert_status(tu_release(lb, NULL), 0);
    long long rst = calls("restore");
    tu_assert_status(tu_acquire(la, 0, 20000, NULL), 0);
    ck_assert_int_eq(calls("restore"), rst + 1);
}
END_TEST

/* A waiter's plain attempt that meets another kind's key (a read-write
 * lock's hash, told by its "mode") or a key of another type leaves it to
 * the script, which refuses it at once: not busy until the wait runs
 * out. */
START_TEST(a_waiter_meeting_another_kind_is_refused)
{
    if (_i == 0)
        ck_assert_int_eq(rs_int(tu_srv, "HSET", "other", "mode", "read",
                                (char *)NULL), 1);
    else
        ck_assert_int_eq(rs_int(tu_srv, "RPUSH", "other", "x", (char *)NULL),
                         1); /* a key of another type */
    long long sha = calls("evalsha"), exec = calls("exec");
    long long t0 = tu_now_ms();
    tu_assert_status(tu_acquire(tu_lock(a, "other", 1), 5000, 20000, NULL),
                     _i == 0 ? HILOCK_EWRONGKIND : HILOCK_EWRONGTYPE);
    ck_assert_msg(tu_now_ms() - t0 < 2000, "refused after %lld ms",
                  tu_now_ms() - t0);
    ck_assert_int_eq(calls("exec"), exec + 1);
    ck_assert_int_eq(calls("evalsha"), sha + 1);
    ck_assert_int_eq(tu_exists("other"), 1);
}
END_TEST

/* The hash holds the fair queue's marker (fair clients queue on the
 * name): the look leaves it to the script, which puts the waiter in line;
 * its later attempts go as the script too (they must leave the line when
 * they take the lock). */
START_TEST(a_waiter_meeting_the_fair_queue_joins_it_by_script)
{
    struct hilock_lock *la = tu_lock(a, "q", 1);
    tu_assert_status(tu_acquire(la, 0, 20000, NULL), 0);
    ck_assert_int_eq(rs_int(tu_srv, "HSET", "q", "hilock:queued", "1",
                            (char *)NULL), 1);
    long long sha = calls("evalsha"), exec = calls("exec");
    struct tu_result got = {0};
    struct hilock_lock *lb = tu_lock(b, "q", 1);
    tu_assert_status(hilock_lock_acquire(lb, 5000, 20000, tu_record, &got), 0);
    ck_assert(tu_run_until_redis(1, tu_ms(2000), "LLEN",
                                 "hilock_queue:{q}", (char *)NULL));
    ck_assert_int_eq(calls("exec"), exec + 1);
    ck_assert_int_ge(calls("evalsha"), sha + 1);
    long long rst = calls("restore");
    tu_assert_status(tu_release(la, NULL), 0);
    ck_assert(tu_run_until_count(&got.calls, 1, tu_ms(3000)));
    tu_assert_status(got.status, 0);
    ck_assert_int_eq(calls("restore"), rst); /* the script took it */
    ck_assert_int_eq(rs_int(tu_srv, "LLEN", "hilock_queue:{q}", (char *)NULL),
                     0);
    tu_assert_status(tu_release(lb, NULL), 0);
}
END_TEST

/* Two handles of one owner take a free lock at once: one RESTORE wins,
 * the other is refused and counts a second hold with the script. */
START_TEST(twins_taking_a_free_lock_together_count_two_holds)
{
    struct hilock_lock *x = tu_lock(a, "twins", 3);
    struct hilock_lock *y = tu_lock(a, "twins", 3);
    struct tu_result rx = {0}, ry = {0};
    tu_client_ready(a);
    tu_assert_status(hilock_lock_acquire(x, 0, 20000, tu_record, &rx), 0);
    tu_assert_status(hilock_lock_acquire(y, 0, 20000, tu_record, &ry), 0);
    ck_assert(tu_run_until_count(&rx.calls, 1, tu_ms(2000)));
    ck_assert(tu_run_until_count(&ry.calls, 1, tu_ms(2000)));
    tu_assert_status(rx.status, 0);
    tu_assert_status(ry.status, 0);
    ck_assert_int_eq(tu_holds("twins", a, 3), 2);
    tu_assert_status(tu_release(x, NULL), 0);
    ck_assert_int_eq(tu_holds("twins", a, 3), 1);
    tu_assert_status(tu_release(y, NULL), 0);
    ck_assert_int_eq(tu_exists("twins"), 0);
}
END_TEST

/* A handle made while another handle of its owner holds the lock (alone
 * until then): its acquire counts a second hold, and the first release
 * leaves that hold in place, as with twins made before. */
START_TEST(twin_made_while_the_lock_is_held_keeps_its_hold)
{
    struct hilock_lock *x = tu_lock(a, "late-twin", 3);
    tu_client_ready(a);
    tu_assert_status(tu_acquire(x, 0, 20000, NULL), 0);
    struct hilock_lock *y = tu_lock(a, "late-twin", 3);
    tu_assert_status(tu_acquire(y, 0, 20000, NULL), 0);
    ck_assert_int_eq(tu_holds("late-twin", a, 3), 2);
    tu_assert_status(tu_release(x, NULL), 0);
    ck_assert_int_eq(tu_holds("late-twin", a, 3), 1);
    ck_assert_uint_eq(hilock_lock_hold_count(y), 1);
    tu_assert_status(tu_release(y, NULL), 0);
    ck_assert_int_eq(tu_exists("late-twin"), 0);
}
END_TEST

/* Re-entry runs the script; the first release of two runs it too, the
 * last one goes plain. */
START_TEST(reentry_and_its_releases_keep_the_count)
{
    struct hilock_lock *l = tu_lock(a, "re", 1);
    tu_assert_status(tu_acquire(l, 0, 20000, NULL), 0);
    long long sha = calls("evalsha"), hdel = calls("hdel");
    tu_assert_status(tu_acquire(l, 0, 20000, NULL), 0);
    ck_assert_int_eq(tu_holds("re", a, 1), 2);
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert_int_eq(tu_holds("re", a, 1), 1);
    ck_assert_int_eq(calls("evalsha"), sha + 2);
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert_int_eq(calls("hdel"), hdel + 1);
    ck_assert_int_eq(tu_exists("re"), 0);
    /* a release of nothing: not the owner, whatever the path */
    tu_assert_status(tu_release(l, NULL), HILOCK_ENOTOWNER);
}
END_TEST

/* A plain release finds another owner's lock (ours expired): nothing of
 * it is touched. */
START_TEST(plain_release_after_expiry_leaves_the_new_owner_alone)
{
    struct hilock_lock *la = tu_lock(a, "exp", 1);
    struct hilock_lock *lb = tu_lock(b, "exp", 1);
    tu_assert_status(tu_acquire(la, 0, 100, NULL), 0);
    tu_assert_status(tu_acquire(lb, 3000, 20000, NULL), 0);
    tu_assert_status(tu_release(la, NULL), HILOCK_ENOTOWNER);
    ck_assert_int_eq(tu_holds("exp", b, 1), 1);
    long long pttl = rs_int(tu_srv, "PTTL", "exp", (char *)NULL);
    ck_assert_msg(pttl > 15000, "lease %lld", pttl);
}
END_TEST

/* ACL users without the plain commands: the first refusal is logged and
 * the scripts take over for good; nothing is lost or left. Without MULTI
 * (_i = 1) the release's HDEL and PUBLISH run one by one and EXEC is
 * refused: the release script that follows finds the hold gone and takes
 * the release as done. */
START_TEST(acl_without_the_commands_falls_back_to_scripts)
{
    static const char *const denied[][2] = {{"-restore", "-hdel"},
                                            {"-multi", "-exec"}};
    char *ok = rs_str(tu_srv, "ACL", "SETUSER", "scripted", "on", ">pw",
                      "~*", "&*", "+@all", denied[_i][0], denied[_i][1],
                      (char *)NULL);
    ck_assert_str_eq(ok, "OK");
    free(ok);
    struct hilock_options o;
    tu_options(&o);
    o.username = "scripted";
    o.password = "pw";
    o.log_cb = log_line;
    struct hilock_client *c = tu_client(&o);
    struct hilock_lock *l = tu_lock(c, "acl", 1);
    const char *cmd = _i == 0 ? "restore" : "exec";
    long long rejected = cmdstat(cmd, "rejected_calls");
    long long rst = calls("restore");
    tu_assert_status(tu_acquire(l, 0, 20000, NULL), 0);
    ck_assert_int_eq(tu_holds("acl", c, 1), 1);
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert_int_eq(cmdstat(cmd, "rejected_calls"), rejected + 1);
    ck_assert_msg(strstr(logged, "NOPERM") && strstr(logged, "scripts only"),
                  "not logged: %s", logged);
    ck_assert_int_eq(tu_exists("acl"), 0);
    /* no second try */
    tu_assert_status(tu_acquire(l, 0, 20000, NULL), 0);
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert_int_eq(cmdstat(cmd, "rejected_calls"), rejected + 1);
    ck_assert_int_eq(calls("restore"), rst + (_i == 1));
    ck_assert_int_eq(tu_exists("acl"), 0);
    hilock_client_free(c);
}
END_TEST

/* A server on which SCRIPT is renamed away: the fixture's clients, on
 * the previous server, are replaced by *holder. */
static void start_without_script(struct hilock_client **holder)
{
    struct rs_options so;
    struct hilock_options o;
    memset(&so, 0, sizeof so);
    so.conf = "rename-command SCRIPT \"\"";
    rs_stop(tu_srv);
    tu_srv = tu_server_start(&so);
    ck_assert_ptr_nonnull(tu_srv);
    tu_options(&o);
    *holder = tu_client(&o);
}

/* ACL users that may not load scripts (SCRIPT refused, so EVALSHA finds
 * none: _i = 0) or may not call them by digest (EVALSHA refused: _i = 1),
 * or a server without SCRIPT (renamed: _i = 2): every script goes as EVAL
 * with its body, a waiter's too; once SCRIPT LOAD is known not to take, it
 * is not tried again before a reconnect. */
START_TEST(scripts_go_with_their_bodies_when_they_cannot_be_loaded)
{
    static const char *const denied[] = {"-script", "-evalsha"};
    struct hilock_client *holder = a;
    struct hilock_options o;
    char *ok;
    if (_i == 2)
        start_without_script(&holder);
    tu_options(&o);
    if (_i < 2) {
        ok = rs_str(tu_srv, "ACL", "SETUSER", "bodies", "on", ">pw", "~*",
                    "&*", "+@all", denied[_i], (char *)NULL);
        ck_assert_str_eq(ok, "OK");
        free(ok);
        o.username = "bodies";
        o.password = "pw";
    }
    o.scripts_only = 1;
    o.log_cb = log_line;
    struct hilock_client *c = tu_client(&o);
    struct hilock_lock *l = tu_lock(c, "body", 1);
    tu_client_ready(c);
    if (_i < 2) { /* the other clients' loads are the server's: gone */
        ok = rs_str(tu_srv, "SCRIPT", "FLUSH", (char *)NULL);
        ck_assert_str_eq(ok, "OK");
        free(ok);
    }
    long long eval = calls("eval");
    tu_assert_status(tu_acquire(l, 0, 20000, NULL), 0);
    ck_assert_int_eq(tu_holds("body", c, 1), 1);
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert_int_eq(tu_exists("body"), 0);
    ck_assert_int_ge(calls("eval"), eval + 2);
    ck_assert_msg(strstr(logged, "EVAL"), "not logged: %s", logged);
    /* a waiter: another client holds the lock for a moment */
    struct hilock_lock *held = tu_lock(holder, "body", 2);
    tu_assert_status(tu_acquire(held, 0, 300, NULL), 0);
    long long loads = cmdstat("script", "rejected_calls");
    tu_assert_status(tu_acquire(l, 10000, 20000, NULL), 0);
    ck_assert_int_eq(tu_holds("body", c, 1), 1);
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert_int_eq(cmdstat("script", "rejected_calls"), loads);
    ck_assert_int_eq(tu_exists("body"), 0);
    hilock_client_free(c);
    if (holder != a)
        hilock_client_free(holder);
}
END_TEST

START_TEST(scripts_only_sends_no_plain_command)
{
    struct hilock_options o;
    tu_options(&o);
    o.scripts_only = 1;
    struct hilock_client *c = tu_client(&o);
    struct hilock_lock *l = tu_lock(c, "so", 1);
    tu_client_ready(c);
    long long rst = calls("restore"), hdel = calls("hdel");
    long long sha = calls("evalsha");
    tu_assert_status(tu_acquire(l, 0, 20000, NULL), 0);
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert_int_eq(calls("evalsha"), sha + 2);
    ck_assert_int_eq(calls("restore"), rst);
    ck_assert_int_eq(calls("hdel"), hdel);
    ck_assert_int_eq(tu_exists("so"), 0);
    hilock_client_free(c);
}
END_TEST

static Suite *plain_suite(void)
{
    Suite *s = suite_create("plain");
    TCase *tc = tcase_create("fast path");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, free_lock_taken_and_given_back_without_a_script);
    tcase_add_test(tc,
                   plain_commands_sent_before_the_connection_is_up_go_out_whole);
    tcase_add_test(tc, busy_lock_is_looked_at_without_a_script_and_waits);
    tcase_add_loop_test(tc, a_waiter_meeting_another_kind_is_refused, 0, 2);
    tcase_add_test(tc, a_waiter_meeting_the_fair_queue_joins_it_by_script);
    tcase_add_test(tc, twins_taking_a_free_lock_together_count_two_holds);
    tcase_add_test(tc, twin_made_while_the_lock_is_held_keeps_its_hold);
    tcase_add_test(tc, reentry_and_its_releases_keep_the_count);
    tcase_add_test(tc, plain_release_after_expiry_leaves_the_new_owner_alone);
    tcase_add_loop_test(tc, acl_without_the_commands_falls_back_to_scripts, 0,
                        2);
    tcase_add_test(tc, scripts_only_sends_no_plain_command);
    tcase_add_loop_test(tc,
                        scripts_go_with_their_bodies_when_they_cannot_be_loaded,
                        0, 3);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_main(plain_suite());
}
