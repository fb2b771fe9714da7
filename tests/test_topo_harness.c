/* SPDX-License-Identifier: BSD-3-Clause */
/* test_topo_harness.c -- the cluster and Sentinel harnesses do what the
 * suites will rely on: a cluster that agrees on its slots, redirections
 * (-MOVED, -ASK) where a resharding puts them, failovers that end in one
 * agreed topology, Sentinels that follow the master, and no process that
 * outlives its stop. Needs no hilock. */
#include "redis_cluster.h"
#include "redis_sentinel.h"
#include "redis_server.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every pid gone (reaped, so not even a zombie), checked after a stop. */
static void assert_gone(const pid_t *pids, int n)
{
    for (int i = 0; i < n; i++) {
        if (pids[i] <= 0)
            continue;
        errno = 0;
        ck_assert_msg(kill(pids[i], 0) == -1 && errno == ESRCH,
                      "pid %ld outlived the stop", (long)pids[i]);
    }
}

/* A command's reply as a string (status, error or bulk); fails on nil. */
static char *str_of(struct rs_server *srv, const char *cmd, const char *a1,
                    const char *a2)
{
    char *s = rs_str(srv, cmd, a1, a2, (char *)NULL);
    ck_assert_msg(s != NULL, "%s %s: no string reply", cmd, a1);
    return s;
}

static void assert_reply(struct rs_server *srv, const char *cmd,
                         const char *a1, const char *a2, const char *expect)
{
    char *s = str_of(srv, cmd, a1, a2);
    ck_assert_str_eq(s, expect);
    free(s);
}

/* "MOVED <slot> 127.0.0.1:<port>" or "ASK ..." as Redis words it. */
static void assert_redirect(struct rs_server *srv, const char *key,
                            const char *kind, int slot, int port)
{
    char expect[96];
    snprintf(expect, sizeof expect, "%s %d 127.0.0.1:%d", kind, slot, port);
    assert_reply(srv, "GET", key, NULL, expect);
}

/* ---- cluster ------------------------------------------------------------- */

START_TEST(cluster_slots_and_redirects)
{
    struct rc_cluster *c = rc_start(3, 1);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(rc_count(c), 6);

    /* Our CRC16 and hash-tag rule against the server's. */
    static const char *const keys[] = {
        "", "a", "foo", "123456789", "{a}b", "a{}b", "a{b", "{}{a}",
        "foo{bar}{baz}", "{user1000}.following", "}{a}", "a}b{", "{{a}}",
    };
    /* CRC16/XMODEM check value */
    ck_assert_int_eq(rc_key_slot("123456789", 9), 0x31C3);
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        long long slot = rs_int(rc_server(c, 0), "CLUSTER", "KEYSLOT", keys[k],
                                (char *)NULL);
        ck_assert_msg(rc_key_slot(keys[k], strlen(keys[k])) == slot,
                      "key \"%s\": %d, server says %lld", keys[k],
                      rc_key_slot(keys[k], strlen(keys[k])), slot);
    }
    const char *bin[] = {"CLUSTER", "KEYSLOT", "x\0{y}"};
    size_t binlen[] = {7, 7, 6};
    redisReply *r = rs_command_argv(rc_server(c, 0), 3, bin, binlen);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->type, REDIS_REPLY_INTEGER);
    ck_assert_int_eq(rc_key_slot("x\0{y}", 6), r->integer);
    ck_assert_int_eq(rc_key_slot("x\0{y}", 6), rc_key_slot("y", 1));
    freeReplyObject(r);

    /* A key lives on its slot's owner; every node agrees who that is. */
    const char *key = "{moved}k";
    int slot = rc_key_slot(key, strlen(key));
    int from = rc_slot_owner(c, slot);
    ck_assert_int_ge(from, 0);
    ck_assert_int_lt(from, 3);
    assert_reply(rc_server(c, from), "SET", key, "v1", "OK");
    assert_reply(rc_server(c, from), "GET", key, NULL, "v1");

    /* Moved with its key: the new owner serves it, the old one redirects. */
    int to = (from + 1) % 3;
    ck_assert_int_eq(rc_move_slot(c, slot, to), 0);
    ck_assert_int_eq(rc_slot_owner(c, slot), to);
    assert_reply(rc_server(c, to), "GET", key, NULL, "v1");
    assert_redirect(rc_server(c, from), key, "MOVED", slot, rc_port(c, to));
    ck_assert_int_eq(rc_move_slot(c, slot, to), 0); /* already there */

    /* In steps: more keys than one GETKEYSINSLOT batch. */
    const char *akey = "{ask}k";
    int aslot = rc_key_slot(akey, strlen(akey));
    int afrom = rc_slot_owner(c, aslot);
    int ato = (afrom + 1) % 3;
    ck_assert_int_ge(afrom, 0);
    assert_reply(rc_server(c, afrom), "SET", akey, "v2", "OK");
    for (int k = 0; k < 150; k++) {
        char name[32];
        snprintf(name, sizeof name, "{ask}%d", k);
        assert_reply(rc_server(c, afrom), "SET", name, "x", "OK");
    }
    ck_assert_int_eq(rc_migrate_begin(c, aslot, afrom, ato), 0);
    /* not moved yet */
    assert_reply(rc_server(c, afrom), "GET", akey, NULL, "v2");
    ck_assert_int_eq(rc_migrate_keys(c, aslot, afrom, ato), 0);
    char s[16];
    snprintf(s, sizeof s, "%d", aslot);
    ck_assert_int_eq(rs_int(rc_server(c, afrom), "CLUSTER", "COUNTKEYSINSLOT",
                            s, (char *)NULL), 0);
    ck_assert_int_eq(rs_int(rc_server(c, ato), "CLUSTER", "COUNTKEYSINSLOT",
                            s, (char *)NULL), 151);
    /* Gone from the old owner: -ASK; the new one wants ASKING first. */
    assert_redirect(rc_server(c, afrom), akey, "ASK", aslot, rc_port(c, ato));
    assert_redirect(rc_server(c, ato), akey, "MOVED", aslot,
                    rc_port(c, afrom));
    redisContext *ctx = rs_connect(rc_server(c, ato));
    ck_assert_ptr_nonnull(ctx);
    r = redisCommand(ctx, "ASKING");
    ck_assert_ptr_nonnull(r);
    freeReplyObject(r);
    r = redisCommand(ctx, "GET %s", akey);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    ck_assert_str_eq(r->str, "v2");
    freeReplyObject(r);
    redisFree(ctx);
    ck_assert_int_eq(rc_migrate_finish(c, aslot, ato), 0);
    ck_assert_int_eq(rc_slot_owner(c, aslot), ato);
    assert_reply(rc_server(c, ato), "GET", akey, NULL, "v2");
    assert_redirect(rc_server(c, afrom), akey, "MOVED", aslot,
                    rc_port(c, ato));

    pid_t pids[6];
    for (int i = 0; i < 6; i++)
        pids[i] = rs_pid(rc_server(c, i));
    rc_stop(c);
    assert_gone(pids, 6);
}
END_TEST

START_TEST(cluster_failover_and_kill)
{
    struct rc_cluster *c = rc_start(3, 1);
    ck_assert_ptr_nonnull(c);
    int masters[8];
    ck_assert_int_eq(rc_masters(c, masters, 8), 3);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(masters[i], i);
    pid_t pids[6];
    for (int i = 0; i < 6; i++)
        pids[i] = rs_pid(rc_server(c, i));

    /* A key of the master that replica 3 follows. */
    int old = rc_master_of(c, 3);
    ck_assert_int_ge(old, 0);
    ck_assert_int_lt(old, 3);
    char key[32];
    int slot = -1;
    for (int k = 0; slot < 0; k++) {
        snprintf(key, sizeof key, "k%d", k);
        if (rc_slot_owner(c, rc_key_slot(key, strlen(key))) == old)
            slot = rc_key_slot(key, strlen(key));
    }
    assert_reply(rc_server(c, old), "SET", key, "v", "OK");

    /* Manual failover: roles swap, the data stays. */
    ck_assert_int_eq(rc_failover(c, 3), 0);
    ck_assert_int_eq(rc_slot_owner(c, slot), 3);
    ck_assert_int_eq(rc_master_of(c, old), 3);
    ck_assert_int_eq(rc_masters(c, masters, 8), 3);
    assert_reply(rc_server(c, 3), "GET", key, NULL, "v");
    assert_redirect(rc_server(c, old), key, "MOVED", slot, rc_port(c, 3));

    /* kill -9 of the new master: the old one is promoted back. */
    ck_assert_int_eq(rc_kill_master(c, 3), old);
    ck_assert_int_eq(rs_pid(rc_server(c, 3)), 0);
    assert_gone(&pids[3], 1);
    ck_assert_int_eq(rc_slot_owner(c, slot), old);
    ck_assert_int_eq(rc_masters(c, masters, 8), 3);
    assert_reply(rc_server(c, old), "GET", key, NULL, "v");

    rc_stop(c);
    assert_gone(pids, 6);
}
END_TEST

/* ---- sentinel ------------------------------------------------------------ */

/* The replication role of data node i and the port it follows. */
static void assert_replica_of(struct rt_sentinel *t, int i, int master)
{
    char *role = rs_info(rt_server(t, i), "replication", "role");
    char *port = rs_info(rt_server(t, i), "replication", "master_port");
    ck_assert_ptr_nonnull(role);
    ck_assert_ptr_nonnull(port);
    ck_assert_str_eq(role, "slave");
    ck_assert_int_eq(atoi(port), rt_server_port(t, master));
    free(role);
    free(port);
}

static void collect_pids(struct rt_sentinel *t, pid_t *pids, int *n)
{
    *n = 0;
    for (int i = 0; i < rt_server_count(t); i++)
        pids[(*n)++] = rs_pid(rt_server(t, i));
    for (int i = 0; i < rt_sentinel_count(t); i++)
        pids[(*n)++] = rs_pid(rt_sentinel_server(t, i));
}

START_TEST(sentinel_failover)
{
    struct rt_sentinel *t = rt_start(1, 3, "hilock-master");
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(rt_server_count(t), 2);
    ck_assert_int_eq(rt_sentinel_count(t), 3);
    ck_assert_str_eq(rt_master_name(t), "hilock-master");
    ck_assert_int_eq(rt_master(t), 0);
    assert_replica_of(t, 1, 0);
    for (int i = 0; i < 3; i++) {
        /* Valkey names the field server_mode */
        char *role = rs_info(rt_sentinel_server(t, i), "server",
                             "redis_mode");
        if (!role)
            role = rs_info(rt_sentinel_server(t, i), "server",
                           "server_mode");
        ck_assert_ptr_nonnull(role);
        ck_assert_str_eq(role, "sentinel");
        free(role);
    }
    pid_t pids[5];
    int n;
    collect_pids(t, pids, &n);
    /* Replication is asynchronous: a failover keeps what reached the
     * replica, so WAIT for it (on the connection that wrote). */
    redisContext *ctx = rs_connect(rt_server(t, 0));
    ck_assert_ptr_nonnull(ctx);
    redisReply *r = redisCommand(ctx, "SET k v");
    ck_assert_ptr_nonnull(r);
    freeReplyObject(r);
    r = redisCommand(ctx, "WAIT 1 5000");
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->type, REDIS_REPLY_INTEGER);
    ck_assert_int_eq(r->integer, 1);
    freeReplyObject(r);
    redisFree(ctx);

    ck_assert_int_eq(rt_failover(t), 1);
    ck_assert_int_eq(rt_master(t), 1);
    ck_assert_int_eq(rt_settle(t), 0); /* the old master follows now */
    assert_replica_of(t, 0, 1);
    assert_reply(rt_server(t, 1), "GET", "k", NULL, "v");

    rt_stop(t);
    assert_gone(pids, n);
}
END_TEST

START_TEST(sentinel_kill_master)
{
    struct rt_sentinel *t = rt_start(1, 3, "hilock-kill");
    ck_assert_ptr_nonnull(t);
    pid_t pids[5];
    int n;
    collect_pids(t, pids, &n);

    ck_assert_int_eq(rt_kill_master(t), 1);
    ck_assert_int_eq(rs_pid(rt_server(t, 0)), 0);
    assert_gone(&pids[0], 1);
    ck_assert_int_eq(rt_master(t), 1);

    rt_stop(t);
    assert_gone(pids, n);
}
END_TEST

static Suite *topo_suite(void)
{
    Suite *s = suite_create("topo_harness");
    TCase *tc = tcase_create("cluster");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, cluster_slots_and_redirects);
    tcase_add_test(tc, cluster_failover_and_kill);
    suite_add_tcase(s, tc);
    tc = tcase_create("sentinel");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, sentinel_failover);
    tcase_add_test(tc, sentinel_kill_master);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (rs_init() != 0)
        return EXIT_FAILURE;
    SRunner *sr = srunner_create(topo_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
