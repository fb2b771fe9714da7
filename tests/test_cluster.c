/* SPDX-License-Identifier: BSD-3-Clause */
/* test_cluster.c -- hilock on a Redis Cluster (3 masters, 1 replica each,
 * started by tests/redis_cluster.c): locks spread over every master by the
 * slot of their key, names with braces and prefixes, MOVED after a slot
 * migration and ASK during one, waiters woken by sharded pub/sub (also by a
 * release that another client library publishes), a manual failover and a
 * killed master while a lock is contended, with mutual exclusion and
 * fencing order checked, and a lock lost in a failover reported at once.
 *
 * The "cluster" case shares one cluster (an unchecked fixture, started once
 * in the runner) and each test reads the map as it finds it; the failover
 * tests start a cluster each. */
#include "testutil.h"

#include "redis_cluster.h"

#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct rc_cluster *cluster;
static struct hilock_client *client, *client2;

static void shared_start(void)
{
    rs_init();
    cluster = rc_start(3, 1);
    if (!cluster) {
        fprintf(stderr, "test_cluster: no cluster\n");
        exit(1);
    }
}

static void shared_stop(void)
{
    rc_stop(cluster);
    cluster = NULL;
}

static void setup(void)
{
    tu_setup_no_redis();
    client = client2 = NULL;
}

static void teardown(void)
{
    hilock_client_free(client);
    hilock_client_free(client2);
    client = client2 = NULL;
    tu_teardown();
}

static void own_start(void)
{
    setup();
    cluster = rc_start(3, 1);
    ck_assert_ptr_nonnull(cluster);
}

static void own_stop(void)
{
    teardown();
    rc_stop(cluster);
    cluster = NULL;
}

/* Options for the cluster, seeded with node `seed`. */
static struct hilock_endpoint seeds[1];
static void cluster_options(struct hilock_options *o, int seed)
{
    tu_options(o);
    seeds[0] = (struct hilock_endpoint){"127.0.0.1", rc_port(cluster, seed),
                                        NULL};
    o->topology = HILOCK_TOPOLOGY_CLUSTER;
    o->cluster.seeds = seeds;
    o->cluster.count = 1;
}

static struct hilock_client *cluster_client(int seed)
{
    struct hilock_options o;
    cluster_options(&o, seed);
    struct hilock_client *c = tu_client(&o);
    tu_client_ready(c);
    return c;
}

/* A command on the master that owns key's slot now. */
static long long on_owner(const char *key, const char *cmd, const char *arg)
{
    int node = rc_slot_owner(cluster, rc_key_slot(key, strlen(key)));
    ck_assert_int_ge(node, 0);
    return rs_int(rc_server(cluster, node), cmd, key, arg, (char *)NULL);
}

/* Locks land on the master of their key's slot, all three masters get
 * some, and a second client is kept out of each. */
START_TEST(locks_spread_over_every_master_and_exclude_others)
{
    enum { N = 48 };
    struct hilock_lock *a[N], *b[N];
    char name[N][24];
    int per_master[64] = {0};
    client = cluster_client(0);
    client2 = cluster_client(1);
    for (int i = 0; i < N; i++) {
        snprintf(name[i], sizeof(name[i]), "spread-%d", i);
        a[i] = tu_lock(client, name[i], 0);
        b[i] = tu_lock(client2, name[i], 0);
        tu_assert_status(tu_acquire(a[i], 0, 0, NULL), 0);
    }
    for (int i = 0; i < N; i++) {
        struct hilock_result ttl;
        tu_assert_status(tu_acquire(b[i], 0, 0, &ttl), HILOCK_EBUSY);
        ck_assert_int_gt(ttl.ttl_ms, 0);
        ck_assert_int_eq(on_owner(name[i], "EXISTS", NULL), 1);
        per_master[rc_slot_owner(cluster,
                                 rc_key_slot(name[i], strlen(name[i])))]++;
    }
    int masters[8], m = rc_masters(cluster, masters, 8);
    ck_assert_int_eq(m, 3);
    for (int i = 0; i < m; i++)
        ck_assert_msg(per_master[masters[i]] > 0, "master %d got none",
                      masters[i]);
    for (int i = 0; i < N; i++) {
        tu_assert_status(tu_release(a[i], NULL), 0);
        ck_assert_int_eq(on_owner(name[i], "EXISTS", NULL), 0);
    }
    /* each lock was taken and given back plain, on its master */
    long long restores = 0, hdels = 0;
    for (int i = 0; i < m; i++) {
        restores += rs_cmdstat_calls(rc_server(cluster, masters[i]), "restore");
        hdels += rs_cmdstat_calls(rc_server(cluster, masters[i]), "hdel");
    }
    ck_assert_int_ge(restores, N);
    ck_assert_int_eq(hdels, N);
}
END_TEST

/* Every key of a lock lives in one slot, braces or not; names that cannot
 * and MultiLocks over several slots are refused; a prefix needs a tag. */
START_TEST(names_with_braces_keep_their_keys_in_one_slot)
{
    static const char *const names[] = {"order{42}", "{42}x", "a{", "{x}",
                                        "plain"};
    static const char *const fences[] = {"hilock_fence:order{42}",
                                         "hilock_fence:{42}x",
                                         "hilock_fence:{a{}",
                                         "hilock_fence:{x}",
                                         "hilock_fence:{plain}"};
    struct hilock_options o;
    struct hilock_lock *l;
    cluster_options(&o, 0);
    o.fencing = 1;
    client = tu_client(&o);
    tu_client_ready(client);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        struct hilock_result token;
        ck_assert_int_eq(rc_key_slot(fences[i], strlen(fences[i])),
                         rc_key_slot(names[i], strlen(names[i])));
        l = tu_lock(client, names[i], 0);
        tu_assert_status(tu_acquire(l, 0, 0, &token), 0);
        ck_assert_int_eq(token.token, on_owner(fences[i], "GET", NULL));
        tu_assert_status(tu_release(l, NULL), 0);
    }
    ck_assert_int_eq(hilock_lock_new(client, "a{}b", 4, 0, &l), HILOCK_EINVAL);
    ck_assert_int_eq(hilock_lock_new(client, "x}", 2, 0, &l), HILOCK_EINVAL);

    struct hilock_multi *m;
    const char *same[] = {"{t}a", "{t}b"}, *apart[] = {"a", "b"};
    size_t lens[] = {4, 4}, lens1[] = {1, 1};
    ck_assert_int_eq(hilock_multi_new(client, same, lens, 2, 0, &m), 0);
    hilock_multi_free(m);
    ck_assert_int_eq(hilock_multi_new(client, apart, lens1, 2, 0, &m),
                     HILOCK_EINVAL);

    struct hilock_client *c;
    o.key_prefix = "app:";
    ck_assert_int_eq(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
    o.key_prefix = "{app}:";
    client2 = tu_client(&o);
    tu_client_ready(client2);
    l = tu_lock(client2, "a{}b", 0); /* the prefix's tag decides */
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    ck_assert_int_eq(on_owner("{app}:a{}b", "EXISTS", NULL), 1);
    tu_assert_status(tu_release(l, NULL), 0);
}
END_TEST

/* Whether the servers have sharded pub/sub (7.0 and later). */
static bool sharded_servers(void)
{
    int v = rs_server_version();
    return v == 0 || v >= RS_VERSION_7_0;
}

/* PUBSUB's name on the nodes of the cluster under test. */
static const char *pubsub_cmd = "PUBSUB";

/* Subscribers of name's channel: sharded ones on the master of its slot,
 * or (servers without sharded pub/sub) plain ones on every node. */
static long long shard_subscribers(const char *name, bool sharded)
{
    char ch[128];
    snprintf(ch, sizeof(ch), "redisson_lock__channel:{%s}", name);
    int node = rc_slot_owner(cluster, rc_key_slot(ch, strlen(ch)));
    long long n = 0;
    for (int i = 0; i < rc_count(cluster); i++) {
        if (sharded && i != node)
            continue;
        const char *argv[] = {pubsub_cmd, sharded ? "SHARDNUMSUB" : "NUMSUB",
                              ch};
        redisReply *r = rs_command_argv(rc_server(cluster, i), 3, argv, NULL);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2)
            n = -1000;
        else
            n += r->element[1]->integer;
        freeReplyObject(r);
    }
    return n;
}

struct subs_at {
    const char *name;
    long long n;
    bool sharded;
};

static bool subscribed(void *arg)
{
    struct subs_at *s = arg;
    return shard_subscribers(s->name, s->sharded) == s->n;
}

/* A holder (client) of a lock and a waiter (client2) for it, whose
 * result goes to got. */
struct contest {
    struct hilock_lock *holder, *waiter;
    struct tu_result got;
};

/* The holder takes name for 30 s, the waiter waits for it up to 20 s:
 * returns once the waiter listens for its release (on the sharded channel
 * or not). */
static void contest_begin(struct contest *c, const char *name, bool sharded)
{
    struct subs_at s = {name, 1, sharded};
    c->got = (struct tu_result){0};
    c->holder = tu_lock(client, name, 0);
    c->waiter = tu_lock(client2, name, 0);
    tu_assert_status(tu_acquire(c->holder, 0, 30000, NULL), 0);
    ck_assert_int_eq(
        hilock_lock_acquire(c->waiter, 20000, 0, tu_record, &c->got), 0);
    ck_assert(tu_run_until(subscribed, &s, tu_ms(3000)));
}

/* A waiter subscribes on the master of its channel's slot (SSUBSCRIBE)
 * and is woken by the release, long before the holder's lease runs out;
 * a release published by another library (DEL, then SPUBLISH, as a
 * Redisson client in a Redis 7 cluster does) wakes it too. Servers without
 * sharded pub/sub: the same with plain SUBSCRIBE and PUBLISH. */
static void woken_by_a_release(bool sharded)
{
    struct contest c;
    contest_begin(&c, "woken", sharded);
    struct subs_at s = {"woken", 1, sharded};
    long long t0 = tu_now_ms();
    tu_assert_status(tu_release(c.holder, NULL), 0);
    ck_assert(tu_run_until_count(&c.got.calls, 1, tu_ms(2000)));
    tu_assert_status(c.got.status, 0);
    ck_assert_int_lt(c.got.at_ms - t0, 1000); /* the lease was 30 s */
    tu_assert_status(tu_release(c.waiter, NULL), 0);

    /* Another library holds it (its own owner field), then releases. */
    int node = rc_slot_owner(cluster, rc_key_slot("woken", 5));
    struct rs_server *srv = rc_server(cluster, node);
    ck_assert_int_eq(rs_int(srv, "HSET", "woken", "other:1", "1", (char *)NULL),
                     1);
    ck_assert_int_eq(rs_int(srv, "PEXPIRE", "woken", "30000", (char *)NULL),
                     1);
    c.got.calls = 0;
    ck_assert_int_eq(
        hilock_lock_acquire(c.waiter, 20000, 0, tu_record, &c.got), 0);
    ck_assert(tu_run_until(subscribed, &s, tu_ms(3000)));
    tu_run_quiet();
    ck_assert_int_eq(c.got.calls, 0);
    t0 = tu_now_ms();
    ck_assert_int_eq(rs_int(srv, "DEL", "woken", (char *)NULL), 1);
    ck_assert_int_eq(rs_int(srv, sharded ? "SPUBLISH" : "PUBLISH",
                            "redisson_lock__channel:{woken}", "0",
                            (char *)NULL),
                     1);
    ck_assert(tu_run_until_count(&c.got.calls, 1, tu_ms(2000)));
    tu_assert_status(c.got.status, 0);
    ck_assert_int_lt(c.got.at_ms - t0, 1000);
    tu_assert_status(tu_release(c.waiter, NULL), 0);
}

START_TEST(waiter_is_woken_by_a_sharded_release)
{
    client = cluster_client(0);
    client2 = cluster_client(2);
    woken_by_a_release(sharded_servers());
}
END_TEST

static int warnings;

static void count_warnings(enum hilock_log_level level, const char *msg,
                           void *arg)
{
    (void)arg;
    if (level >= HILOCK_LOG_WARN) {
        warnings++;
        fprintf(stderr, "warning: %s\n", msg);
    }
}

/* A cluster of servers without sharded pub/sub: before 7.0, or here
 * with its commands renamed away (PUBSUB kept under another name). */
static void unsharded_start(void)
{
    static const char *const renamed[] = {
        "--rename-command", "SPUBLISH", "hilock-spublish",
        "--rename-command", "SSUBSCRIBE", "hilock-ssubscribe",
        "--rename-command", "SUNSUBSCRIBE", "hilock-sunsubscribe",
        "--rename-command", "PUBSUB", "hilock-pubsub", NULL};
    setup();
    pubsub_cmd = sharded_servers() ? "hilock-pubsub" : "PUBSUB";
    cluster = rc_start_args(3, 0, sharded_servers() ? renamed : NULL);
    ck_assert_ptr_nonnull(cluster);
}

static void unsharded_stop(void)
{
    pubsub_cmd = "PUBSUB";
    own_stop();
}

/* There, waiters subscribe plainly and are woken by a release (ours, or
 * another library's PUBLISH), and the probe for sharded pub/sub that the
 * servers refuse is no warning. */
START_TEST(waiter_is_woken_without_sharded_pub_sub_and_nothing_is_logged)
{
    struct hilock_options o;
    warnings = 0;
    cluster_options(&o, 0);
    o.log_cb = count_warnings;
    client = tu_client(&o);
    tu_client_ready(client);
    cluster_options(&o, 2);
    o.log_cb = count_warnings;
    client2 = tu_client(&o);
    tu_client_ready(client2);
    woken_by_a_release(false);
    ck_assert_int_eq(warnings, 0);
}
END_TEST

/* A read-write lock and expiring permits in a cluster: their companion
 * keys share the name's slot, waiters are woken by sharded releases on
 * their own channels, and the watchdog renews them on their masters. */
START_TEST(read_write_locks_and_permits_work_in_a_cluster)
{
    struct hilock_options o;
    cluster_options(&o, 0);
    o.watchdog_lease_ms = 900;
    client = tu_client(&o);
    tu_client_ready(client);
    client2 = cluster_client(1);
    struct hilock_lock *r = NULL, *w = NULL;
    struct hilock_permit *p1 = NULL, *p2 = NULL;
    tu_assert_status(hilock_rwlock_new(client, "cdoc", 4, 1, HILOCK_READ, &r),
                     0);
    tu_assert_status(hilock_rwlock_new(client2, "cdoc", 4, 1, HILOCK_WRITE,
                                       &w),
                     0);
    tu_assert_status(tu_acquire(r, 0, 0, NULL), 0);
    char key[128];
    snprintf(key, sizeof(key), "{cdoc}:%s:rwlock_timeout:1",
             tu_field(client, 1, (char[64]){0}));
    ck_assert_int_eq(on_owner(key, "EXISTS", NULL), 1);
    ck_assert_int_eq(rc_key_slot(key, strlen(key)), rc_key_slot("cdoc", 4));
    struct tu_result got = {0};
    tu_assert_status(hilock_lock_acquire(w, 20000, 0, tu_record, &got), 0);
    tu_run_for(1200); /* the reader's hold is renewed past its lease */
    ck_assert_int_eq(got.calls, 0);
    ck_assert_int_eq(on_owner(key, "EXISTS", NULL), 1);
    long long t0 = tu_now_ms();
    tu_assert_status(tu_release(r, NULL), 0);
    ck_assert(tu_run_until_count(&got.calls, 1, tu_ms(2000)));
    tu_assert_status(got.status, 0);
    ck_assert_int_lt(got.at_ms - t0, 900);
    tu_assert_status(tu_release(w, NULL), 0);

    tu_assert_status(hilock_permit_new(client, "cjobs", 5, &p1), 0);
    tu_assert_status(hilock_permit_new(client2, "cjobs", 5, &p2), 0);
    struct tu_result init = {0};
    tu_assert_status(
        hilock_permit_try_set_permits(p1, 1, tu_record_permit, &init), 0);
    ck_assert(tu_run_until_count(&init.calls, 1, tu_ms(2000)));
    ck_assert_int_eq(init.res.permits_set, 1);
    tu_assert_status(tu_permit_acquire(p1, 0, 0, NULL), 0);
    got = (struct tu_result){0};
    tu_assert_status(
        hilock_permit_acquire(p2, 20000, 0, tu_record_permit, &got), 0);
    tu_run_for(1200); /* the permit is renewed past its lease */
    ck_assert_int_eq(got.calls, 0);
    t0 = tu_now_ms();
    tu_assert_status(tu_permit_release(p1, NULL), 0);
    ck_assert(tu_run_until_count(&got.calls, 1, tu_ms(2000)));
    tu_assert_status(got.status, 0);
    ck_assert_int_lt(got.at_ms - t0, 900);
    tu_assert_status(tu_permit_release(p2, NULL), 0);
}
END_TEST

/* Kinds refuse each other in a cluster as on one node: a name held as a
 * read lock is no lock (the script after RESTORE's BUSYKEY, a query) and
 * no semaphore; a semaphore's counter is no lock. */
START_TEST(kinds_refuse_each_other_in_a_cluster)
{
    client = cluster_client(0);
    client2 = cluster_client(1);
    struct hilock_lock *r = tu_rwlock(client, "ckind", 1, HILOCK_READ);
    tu_assert_status(tu_acquire(r, 0, 20000, NULL), 0);
    struct hilock_lock *l = tu_lock(client2, "ckind", 1);
    tu_assert_status(tu_acquire(l, 0, 20000, NULL), HILOCK_EWRONGKIND);
    tu_assert_status(tu_query(hilock_lock_query_held, l, NULL),
                     HILOCK_EWRONGKIND);
    struct hilock_semaphore *s = tu_semaphore(client2, "ckind");
    struct tu_result taken = {0};
    tu_assert_status(
        hilock_semaphore_acquire(s, 1, 0, tu_record_sem, &taken), 0);
    ck_assert(tu_run_until_count(&taken.calls, 1, tu_ms(2000)));
    tu_assert_status(taken.status, HILOCK_EWRONGKIND);
    tu_assert_status(tu_release(r, NULL), 0);
    ck_assert_int_eq(on_owner("ckind", "EXISTS", NULL), 0);

    ck_assert_int_eq(on_owner("csem", "SET", "4"), RS_ERR); /* "OK" */
    tu_assert_status(tu_acquire(tu_lock(client, "csem", 1), 0, 20000, NULL),
                     HILOCK_EWRONGKIND);
    ck_assert_int_eq(on_owner("csem", "GET", NULL), 4);
}
END_TEST

/* Whether list key (on its slot's master) holds one entry. */
static bool one_queued(void *key)
{
    return on_owner(key, "LLEN", NULL) == 1;
}

/* Fair mode in a cluster: the queue and the hand-off channel live in the
 * lock's slot, the release hands the lock to the waiter (sharded publish
 * on its own channel) with the next fencing token. */
START_TEST(fair_hand_off_works_in_a_cluster)
{
    struct tu_result got = {0};
    struct hilock_options o;
    cluster_options(&o, 0);
    o.fair = 1;
    o.fencing = 1;
    client = tu_client(&o);
    tu_client_ready(client);
    client2 = tu_client(&o);
    tu_client_ready(client2);
    struct hilock_lock *holder = tu_lock(client, "fair{c}", 0);
    struct hilock_lock *waiter = tu_lock(client2, "fair{c}", 0);
    struct hilock_result first;
    tu_assert_status(tu_acquire(holder, 0, 30000, &first), 0);
    ck_assert_int_eq(hilock_lock_acquire(waiter, 20000, 30000, tu_record, &got),
                     0);
    ck_assert(tu_run_until(one_queued, "hilock_queue:fair{c}", tu_ms(3000)));
    tu_run_quiet(); /* its hand-off channel subscribed */
    tu_assert_status(tu_release(holder, NULL), 0);
    ck_assert(tu_run_until_count(&got.calls, 1, tu_ms(2000)));
    tu_assert_status(got.status, 0);
    ck_assert_int_eq(got.res.token, first.token + 1);
    struct hilock_stats st;
    ck_assert_int_eq(hilock_client_stats(client2, &st, sizeof st), 0);
    ck_assert_int_eq(st.handoffs, 1); /* by the message, not a retry */
    ck_assert_int_eq(on_owner("hilock_queue:fair{c}", "LLEN", NULL), 0);
    tu_assert_status(tu_release(waiter, NULL), 0);
    ck_assert_int_eq(on_owner("fair{c}", "EXISTS", NULL), 0);
}
END_TEST

/* Log lines of a client, kept for a test to read. */
static char logged[4096];
static void log_keep(enum hilock_log_level level, const char *msg, void *arg)
{
    size_t n = strlen(logged);
    (void)level;
    (void)arg;
    snprintf(logged + n, sizeof(logged) - n, "%s\n", msg);
}

/* A standalone server among the seeds is refused (a log line names it)
 * and takes no lock, even from an acquire sent before the slot map is
 * known; with only that seed, acquires fail with HILOCK_ENOTCLUSTER. */
START_TEST(standalone_seed_is_refused_and_takes_no_lock)
{
    struct rs_server *solo = tu_server_start(NULL);
    ck_assert_ptr_nonnull(solo);
    struct hilock_endpoint mixed[2] = {
        {"127.0.0.1", rs_port(solo), NULL},
        {"127.0.0.1", rc_port(cluster, 0), NULL}};
    struct hilock_options o;
    tu_options(&o);
    o.topology = HILOCK_TOPOLOGY_CLUSTER;
    o.cluster.seeds = mixed;
    o.cluster.count = 2;
    o.log_cb = log_keep;
    logged[0] = '\0';
    client = tu_client(&o); /* not waited for: the map is not known yet */
    struct hilock_lock *l = tu_lock(client, "solo", 0);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    ck_assert_int_eq(rs_int(solo, "EXISTS", "solo", (char *)NULL), 0);
    ck_assert_int_eq(on_owner("solo", "EXISTS", NULL), 1);
    char want[64];
    snprintf(want, sizeof(want), "127.0.0.1:%d: not in cluster mode",
             rs_port(solo));
    ck_assert_msg(strstr(logged, want), "no log line \"%s\" in:\n%s", want,
                  logged);
    tu_assert_status(tu_release(l, NULL), 0);

    o.cluster.count = 1;
    o.log_cb = NULL;
    client2 = tu_client(&o);
    struct hilock_lock *l2 = tu_lock(client2, "solo", 0);
    tu_assert_status(tu_acquire(l2, 0, 0, NULL), HILOCK_ENOTCLUSTER);
    ck_assert_int_eq(rs_int(solo, "EXISTS", "solo", (char *)NULL), 0);
    rs_stop(solo);
}
END_TEST

/* A master other than node. */
static int other_master(int node)
{
    int masters[8], m = rc_masters(cluster, masters, 8);
    for (int i = 0; i < m; i++)
        if (masters[i] != node)
            return masters[i];
    ck_abort_msg("no other master");
    return -1;
}

/* A held lock whose slot moves to another master: the watchdog's renewals
 * and the release follow (MOVED), the lock is never lost. */
START_TEST(moved_after_a_slot_migration_is_followed)
{
    struct tu_result lost = {0};
    struct hilock_options o;
    cluster_options(&o, 0);
    o.watchdog_lease_ms = 600;
    client = tu_client(&o);
    tu_client_ready(client);
    struct hilock_lock *l = tu_lock(client, "moving", 0);
    hilock_lock_on_lost(l, tu_record, &lost);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    int slot = rc_key_slot("moving", 6);
    int from = rc_slot_owner(cluster, slot), to = other_master(from);
    ck_assert_int_eq(rc_move_slot(cluster, slot, to), 0);
    ck_assert_int_eq(rc_slot_owner(cluster, slot), to);
    tu_run_for(1200); /* two leases: renewals must reach the new master */
    ck_assert_int_eq(lost.calls, 0);
    long long ttl = rs_int(rc_server(cluster, to), "PTTL", "moving",
                           (char *)NULL);
    ck_assert_int_gt(ttl, 0);
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert_int_eq(rs_int(rc_server(cluster, to), "EXISTS", "moving",
                            (char *)NULL),
                     0);
    /* and back, for a fresh acquire that meets MOVED */
    ck_assert_int_eq(rc_move_slot(cluster, slot, from), 0);
    tu_assert_status(tu_acquire(l, 0, 5000, NULL), 0);
    ck_assert_int_eq(on_owner("moving", "EXISTS", NULL), 1);
    tu_assert_status(tu_release(l, NULL), 0);
}
END_TEST

/* A waiter parked on a lock whose slot then moves to another master: the
 * holder's release runs on the new master (during the migration through
 * ASK, after it through MOVED) and publishes there, where the waiter was
 * not subscribed. The old master ends the waiter's sharded subscription
 * when the slot leaves it; the waiter subscribes on the new master and
 * retries at once, long before the holder's 30 s lease would have ended
 * its wait. Once with the release before the slot's last step (the
 * message is missed: the retry makes up for it), once after. */
static void waiter_follows(int release_before_finish)
{
    struct contest c;
    contest_begin(&c, "drifting", sharded_servers());
    int slot = rc_key_slot("drifting", 8);
    int from = rc_slot_owner(cluster, slot), to = other_master(from);
    ck_assert_int_eq(rc_migrate_begin(cluster, slot, from, to), 0);
    ck_assert_int_eq(rc_migrate_keys(cluster, slot, from, to), 0);
    if (release_before_finish) {
        tu_assert_status(tu_release(c.holder, NULL), 0);
        tu_run_for(200);
    }
    ck_assert_int_eq(rc_migrate_finish(cluster, slot, to), 0);
    long long t0 = tu_now_ms();
    if (!release_before_finish)
        tu_assert_status(tu_release(c.holder, NULL), 0);
    ck_assert(tu_run_until_count(&c.got.calls, 1, tu_ms(3000)));
    tu_assert_status(c.got.status, 0);
    ck_assert_int_lt(c.got.at_ms - t0, tu_ms(2000));
    ck_assert_int_eq(rs_int(rc_server(cluster, to), "EXISTS", "drifting",
                            (char *)NULL),
                     1);
    tu_assert_status(tu_release(c.waiter, NULL), 0);
}

START_TEST(waiter_follows_its_lock_to_a_new_master)
{
    client = cluster_client(0);
    client2 = cluster_client(2);
    waiter_follows(1);
    waiter_follows(0);
}
END_TEST

/* The fencing counter moves with the lock: while a slot migrates, an
 * acquire after ASK is not run on the importing node before the counter
 * is there (it waits, TRYAGAIN), so tokens never go back and the
 * counter's MIGRATE finds no copy in its way. */
START_TEST(fencing_tokens_keep_rising_while_the_slot_migrates)
{
    struct hilock_options o;
    cluster_options(&o, 0);
    o.fencing = 1;
    o.request_timeout_ms = 8000;
    client = tu_client(&o);
    tu_client_ready(client);
    struct hilock_lock *l = tu_lock(client, "minted", 0);
    int64_t last = 0;
    struct hilock_result token;
    for (int i = 0; i < 5; i++) {
        tu_assert_status(tu_acquire(l, 0, 0, &token), 0);
        ck_assert_int_gt(token.token, last);
        last = token.token;
        tu_assert_status(tu_release(l, NULL), 0);
    }
    int slot = rc_key_slot("minted", 6);
    int from = rc_slot_owner(cluster, slot), to = other_master(from);
    ck_assert_int_eq(rc_migrate_begin(cluster, slot, from, to), 0);
    /* The lock is free: ASK sends the acquire to `to`, whose counter has
     * not arrived. It must not be taken there yet. */
    struct tu_result got = {0};
    ck_assert_int_eq(hilock_lock_acquire(l, 0, 0, tu_record, &got), 0);
    tu_run_for(300);
    if (got.calls)
        ck_assert_int_gt(got.res.token, last); /* never a token from 1 */
    ck_assert_int_eq(got.calls, 0);
    ck_assert_int_eq(rc_migrate_keys(cluster, slot, from, to), 0);
    tu_run_for(100);
    ck_assert_int_eq(rc_migrate_finish(cluster, slot, to), 0);
    ck_assert(tu_run_until_count(&got.calls, 1, tu_ms(5000)));
    tu_assert_status(got.status, 0);
    ck_assert_int_eq(got.res.token, last + 1);
    ck_assert_int_eq(rs_int(rc_server(cluster, to), "GET",
                            "hilock_fence:{minted}", (char *)NULL),
                     last + 1);
    tu_assert_status(tu_release(l, NULL), 0);
}
END_TEST

/* A held lock and a read lock whose keys MIGRATE moved while their slot
 * is still migrating: the old master answers ASK for them, and the
 * watchdog's renewals, a query and the releases follow there; neither is
 * ever reported lost. */
START_TEST(renewals_follow_ask_while_the_slot_migrates)
{
    struct tu_result lost = {0};
    struct hilock_options o;
    cluster_options(&o, 0);
    o.watchdog_lease_ms = 600;
    o.request_timeout_ms = 5000; /* outlasts the end of the migration */
    client = tu_client(&o);
    tu_client_ready(client);
    struct hilock_lock *l = tu_lock(client, "carried", 0), *r = NULL;
    hilock_lock_on_lost(l, tu_record, &lost);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    tu_assert_status(hilock_rwlock_new(client, "{carried}r", 10, 2,
                                       HILOCK_READ, &r),
                     0);
    hilock_lock_on_lost(r, tu_record, &lost);
    tu_assert_status(tu_acquire(r, 0, 0, NULL), 0);
    int slot = rc_key_slot("carried", 7);
    int from = rc_slot_owner(cluster, slot), to = other_master(from);
    ck_assert_int_eq(rc_migrate_begin(cluster, slot, from, to), 0);
    ck_assert_int_eq(rc_migrate_keys(cluster, slot, from, to), 0);
    tu_run_for(1500); /* two and a half leases, renewed on `to` only */
    ck_assert_int_eq(lost.calls, 0);
    char n[16];
    snprintf(n, sizeof(n), "%d", slot);
    ck_assert_int_eq(rs_int(rc_server(cluster, to), "CLUSTER",
                            "COUNTKEYSINSLOT", n, (char *)NULL),
                     3); /* the lock, the read lock and its hold's key:
                            their leases were renewed */
    struct hilock_result held;
    tu_assert_status(tu_query(hilock_lock_query_held, l, &held), 0);
    ck_assert_int_eq(held.held, 1);
    tu_assert_status(tu_release(l, NULL), 0);
    /* The reader's release declares its request ids too, which expired:
     * the importing node answers TRYAGAIN until the slot is its own. */
    struct tu_result done = {0};
    tu_assert_status(hilock_lock_release(r, tu_record, &done), 0);
    tu_run_for(100);
    ck_assert_int_eq(rc_migrate_finish(cluster, slot, to), 0);
    ck_assert(tu_run_until_count(&done.calls, 1, tu_ms(3000)));
    tu_assert_status(done.status, 0);
    ck_assert_int_eq(rs_int(rc_server(cluster, to), "CLUSTER",
                            "COUNTKEYSINSLOT", n, (char *)NULL),
                     0);
}
END_TEST

/* While a slot is migrating, a lock whose key is not on the old master
 * any more is taken on the importing one (ASK, then ASKING). */
START_TEST(ask_during_a_migration_is_followed)
{
    client = cluster_client(0);
    struct hilock_lock *l = tu_lock(client, "asked", 0);
    int slot = rc_key_slot("asked", 5);
    int from = rc_slot_owner(cluster, slot), to = other_master(from);
    ck_assert_int_eq(rc_migrate_begin(cluster, slot, from, to), 0);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    char s[16];
    snprintf(s, sizeof(s), "%d", slot);
    ck_assert_int_eq(rs_int(rc_server(cluster, to), "CLUSTER",
                            "COUNTKEYSINSLOT", s, (char *)NULL),
                     1);
    ck_assert_int_eq(rs_int(rc_server(cluster, from), "CLUSTER",
                            "COUNTKEYSINSLOT", s, (char *)NULL),
                     0);
    tu_assert_status(tu_release(l, NULL), 0);
    /* the lock is gone from the importing node */
    redisReply *keys = rs_command_argv(
        rc_server(cluster, to), 4,
        (const char *[]){"CLUSTER", "GETKEYSINSLOT", s, "10"}, NULL);
    ck_assert(keys && keys->type == REDIS_REPLY_ARRAY);
    for (size_t i = 0; i < keys->elements; i++)
        ck_assert_str_ne(keys->element[i]->str, "asked");
    freeReplyObject(keys);
    ck_assert_int_eq(rc_migrate_finish(cluster, slot, to), 0);
}
END_TEST

/* Whether node i has key among the keys of its slot. */
static bool has_key(int i, int slot, const char *key)
{
    char s[16];
    snprintf(s, sizeof(s), "%d", slot);
    redisReply *keys = rs_command_argv(
        rc_server(cluster, i), 4,
        (const char *[]){"CLUSTER", "GETKEYSINSLOT", s, "100"}, NULL);
    ck_assert(keys && keys->type == REDIS_REPLY_ARRAY);
    bool found = false;
    for (size_t k = 0; k < keys->elements; k++)
        found |= strcmp(keys->element[k]->str, key) == 0;
    freeReplyObject(keys);
    return found;
}

/* A lock of holder's client renewed and released while its slot migrates,
 * its key still on the old master or already moved (MIGRATE): both
 * succeed where the key is, another client is kept out before the release,
 * the release leaves the lock nowhere, and the other client takes it at
 * once. */
static void release_while_migrating(struct hilock_client *holder,
                                    const char *name, int moved)
{
    struct tu_result renewed = {0};
    struct hilock_lock *l = tu_lock(holder, name, 0);
    struct hilock_lock *other = tu_lock(client2, name, 0);
    tu_assert_status(tu_acquire(l, 0, 30000, NULL), 0);
    int slot = rc_key_slot(name, strlen(name));
    int from = rc_slot_owner(cluster, slot), to = other_master(from);
    ck_assert_int_eq(rc_migrate_begin(cluster, slot, from, to), 0);
    if (moved)
        ck_assert_int_eq(rc_migrate_keys(cluster, slot, from, to), 0);
    ck_assert_int_eq(hilock_lock_renew(l, 30000, tu_record, &renewed), 0);
    ck_assert(tu_run_until_count(&renewed.calls, 1, tu_ms(3000)));
    tu_assert_status(renewed.status, 0);
    /* Busy: RESTORE refused where the key is (after ASK when moved), then
     * the acquire script, sent to the slot's owner again. */
    int st = tu_acquire(other, 0, 0, NULL);
    tu_assert_status(st, HILOCK_EBUSY);
    st = tu_release(l, NULL);
    tu_assert_status(st, 0);
    ck_assert(!has_key(from, slot, name) && !has_key(to, slot, name));
    st = tu_acquire(other, 0, 0, NULL);
    tu_assert_status(st, 0);
    tu_assert_status(tu_release(other, NULL), 0);
    ck_assert_int_eq(rc_migrate_keys(cluster, slot, from, to), 0);
    ck_assert_int_eq(rc_migrate_finish(cluster, slot, to), 0);
}

START_TEST(release_while_the_slot_migrates_frees_the_lock)
{
    client = cluster_client(0);
    client2 = cluster_client(1);
    release_while_migrating(client, "unmoved", 0);
    release_while_migrating(client, "moved", 1);
    struct hilock_options o;
    cluster_options(&o, 0);
    o.fencing = 1; /* scripts only */
    hilock_client_free(client);
    client = tu_client(&o);
    tu_client_ready(client);
    release_while_migrating(client, "fenced", 0);
    release_while_migrating(client, "fenced-moved", 1);
}
END_TEST

/* A write that did not survive a failover: the master is killed and its
 * replica promoted while the client's loop does not run, and the lock is
 * taken out of the new master (as if its write never reached the
 * replica). Once the client finds the new map it checks its locks there
 * and reports this one lost at once -- not a third of a 30 s lease later. */
START_TEST(lock_lost_in_a_failover_is_reported_at_once)
{
    struct tu_result lost = {0};
    client = cluster_client(0);
    struct hilock_lock *l = tu_lock(client, "gone", 0);
    hilock_lock_on_lost(l, tu_record, &lost);
    tu_assert_status(tu_acquire(l, 0, 0, NULL), 0);
    int slot = rc_key_slot("gone", 4);
    int now = rc_kill_master(cluster, rc_slot_owner(cluster, slot));
    ck_assert_int_ge(now, 0);
    ck_assert_int_eq(rc_slot_owner(cluster, slot), now);
    ck_assert_int_eq(rs_int(rc_server(cluster, now), "DEL", "gone",
                            (char *)NULL),
                     1);
    ck_assert(tu_run_until_count(&lost.calls, 1, tu_ms(5000)));
    tu_assert_status(lost.status, HILOCK_ELOST);
}
END_TEST

/* ---- failover under contention ---- */

enum { WORKERS = 6 };

/* Workers of two clients take one lock in turns; each holds it a few ms.
 * Exclusion is checked in-process (both clients live here); the fencing
 * tokens must rise with every acquisition by another worker. */
struct contend {
    struct hilock_lock *lock[WORKERS];
    struct event *hold[WORKERS];
    int holding, overlaps, acquired, failed, lost, calls;
    int last_failure;
    int64_t last_token, token_drops;
    int last_worker;
    int stop;
};
static struct contend ct;

static void worker_go(int i);

static void on_released(struct hilock_lock *lock, int status,
                        const struct hilock_result *res, void *arg)
{
    worker_go((int)(intptr_t)arg);
}

static void on_hold_end(evutil_socket_t fd, short what, void *arg)
{
    int i = (int)(intptr_t)arg;
    ct.holding--;
    ck_assert_int_eq(hilock_lock_release(ct.lock[i], on_released, arg), 0);
}

static void on_acquired(struct hilock_lock *lock, int status,
                        const struct hilock_result *res, void *arg)
{
    int i = (int)(intptr_t)arg;
    ct.calls++;
    if (status != 0) {
        ct.failed++;
        ct.last_failure = status;
        worker_go(i);
        return;
    }
    ct.acquired++;
    if (ct.holding++ > 0)
        ct.overlaps++;
    /* Equal only when the last holder takes it again: a release of its
     * that never reached Redis left its hold, which it re-enters. */
    if (res->token < ct.last_token ||
        (res->token == ct.last_token && i != ct.last_worker))
        ct.token_drops++;
    ct.last_token = res->token;
    ct.last_worker = i;
    struct timeval tv = {0, 2000};
    evtimer_add(ct.hold[i], &tv);
}

static void on_lost_cb(struct hilock_lock *lock, int status,
                       const struct hilock_result *res, void *arg)
{
    ct.lost++;
}

static void worker_go(int i)
{
    if (!ct.stop)
        ck_assert_int_eq(
            hilock_lock_acquire(ct.lock[i], 3000, 0, on_acquired,
                                (void *)(intptr_t)i),
            0);
}

static void log_stderr(enum hilock_log_level level, const char *msg,
                       void *arg)
{
    fprintf(stderr, "%lld %s\n", tu_now_ms() % 100000, msg);
}

static void contend_start(int wait_replicas)
{
    struct hilock_options o;
    memset(&ct, 0, sizeof(ct));
    cluster_options(&o, 0);
    if (getenv("HILOCK_TEST_LOG"))
        o.log_cb = log_stderr;
    o.fencing = 1;
    o.watchdog_lease_ms = 3000;
    o.wait_replicas = (uint32_t)wait_replicas;
    o.wait_timeout_ms = 500;
    client = tu_client(&o);
    tu_client_ready(client);
    client2 = tu_client(&o);
    tu_client_ready(client2);
    for (int i = 0; i < WORKERS; i++) {
        ct.lock[i] = tu_lock(i % 2 ? client2 : client, "contended",
                             (uint64_t)i);
        hilock_lock_on_lost(ct.lock[i], on_lost_cb, NULL);
        ct.hold[i] = evtimer_new(tu_base, on_hold_end, (void *)(intptr_t)i);
        worker_go(i);
    }
}

static void contend_stop(void)
{
    ct.stop = 1;
    tu_run_for(300);
    for (int i = 0; i < WORKERS; i++)
        event_free(ct.hold[i]);
}

/* Run until `more` further acquisitions happened; whether they did. */
static bool acquisitions(int more, int timeout_ms)
{
    int want = ct.acquired + more;
    while (ct.acquired < want && timeout_ms > 0) {
        tu_run_for(50);
        timeout_ms -= 50;
    }
    if (ct.acquired < want)
        fprintf(stderr,
                "acquired %d (wanted %d), failed %d (last %s), lost %d, "
                "holding %d\n",
                ct.acquired, want, ct.failed, hilock_err_name(ct.last_failure),
                ct.lost, ct.holding);
    return ct.acquired >= want;
}

START_TEST(manual_failover_while_contended_keeps_exclusion)
{
    contend_start(0);
    ck_assert(acquisitions(20, tu_ms(5000)));
    int slot = rc_key_slot("contended", 9);
    int master = rc_slot_owner(cluster, slot), replica = -1;
    for (int i = 0; i < rc_count(cluster); i++)
        if (rc_master_of(cluster, i) == master)
            replica = i;
    ck_assert_int_ge(replica, 0);
    /* Ask for it and keep the loop running while it happens; a replica
     * that lags too long on a loaded machine drops a manual failover after
     * 5 s: ask again then. */
    long long t0 = tu_now_ms(), asked = 0;
    while (rc_slot_owner(cluster, slot) != replica &&
           tu_now_ms() - t0 < tu_ms(20000)) {
        if (tu_now_ms() - asked > 6000) {
            free(rs_str(rc_server(cluster, replica), "CLUSTER", "FAILOVER",
                        (char *)NULL));
            asked = tu_now_ms();
        }
        tu_run_for(50);
    }
    ck_assert_int_eq(rc_slot_owner(cluster, slot), replica);
    ck_assert(acquisitions(20, tu_ms(5000))); /* served by the new master */
    contend_stop();
    ck_assert_int_eq(ct.overlaps, 0);
    ck_assert_int_eq(ct.token_drops, 0);
}
END_TEST

/* kill -9 of the lock's master: its replica takes over after the node
 * timeout, the lock is taken again there. With WAIT 1, an acquisition is
 * only reported once the replica has it, so none is lost: no overlap. The
 * new master has no replica until the killed node comes back as one: the
 * waits go on through HILOCK_ENOREPLICA until then. */
START_TEST(killed_master_with_wait_keeps_exclusion)
{
    contend_start(1);
    ck_assert(acquisitions(20, tu_ms(5000)));
    int slot = rc_key_slot("contended", 9);
    int master = rc_slot_owner(cluster, slot);
    ck_assert_int_eq(rs_kill9(rc_server(cluster, master)), 0);
    long long t0 = tu_now_ms();
    int owner = master;
    while ((owner == master || owner < 0) && tu_now_ms() - t0 < tu_ms(15000)) {
        tu_run_for(100);
        owner = rc_slot_owner(cluster, slot);
    }
    ck_assert_int_ne(owner, master);
    ck_assert_int_eq(rs_kill9_restart(rc_server(cluster, master)), 0);
    t0 = tu_now_ms();
    while (rc_master_of(cluster, master) != owner &&
           tu_now_ms() - t0 < tu_ms(15000))
        tu_run_for(100);
    ck_assert_int_eq(rc_master_of(cluster, master), owner);
    ck_assert(acquisitions(20, tu_ms(10000)));
    contend_stop();
    ck_assert_int_eq(ct.overlaps, 0);
    ck_assert_int_eq(ct.token_drops, 0);
}
END_TEST

/* A grant that reached the replica while WAIT waited for its
 * acknowledgement (the replica frozen): the master dies, so WAIT fails
 * and the acquire with it (HILOCK_ENOREPLICA), and its undo has nowhere
 * to go until the replica takes over -- later than the 1 s request
 * deadline. The undo waits for the new master and drops the grant there:
 * another client takes the lock soon after the failover, not when the
 * 30 s lease of a hold nobody has runs out. */
START_TEST(undo_of_an_unconfirmed_grant_outlasts_the_failover)
{
    struct hilock_options o;
    cluster_options(&o, 0);
    o.wait_replicas = 1;
    o.wait_timeout_ms = 10000;
    o.request_timeout_ms = 1000;
    client = tu_client(&o);
    tu_client_ready(client);
    client2 = cluster_client(1);
    struct hilock_lock *l = tu_lock(client, "orphan", 0);
    struct hilock_lock *other = tu_lock(client2, "orphan", 0);
    tu_assert_status(tu_acquire(l, 0, 30000, NULL), 0);
    tu_assert_status(tu_release(l, NULL), 0);
    int slot = rc_key_slot("orphan", 6);
    int master = rc_slot_owner(cluster, slot), replica = -1;
    for (int i = 0; i < rc_count(cluster); i++)
        if (i != master && rc_master_of(cluster, i) == master)
            replica = i;
    ck_assert_int_ge(replica, 0);
    ck_assert_int_eq(rs_pause(rc_server(cluster, replica)), 0);
    struct tu_result got = {0};
    ck_assert_int_eq(hilock_lock_acquire(l, 0, 30000, tu_record, &got), 0);
    tu_run_for(300); /* granted; WAIT waits for the frozen replica */
    ck_assert_int_eq(got.calls, 0);
    ck_assert_int_eq(rs_kill9(rc_server(cluster, master)), 0);
    ck_assert_int_eq(rs_resume(rc_server(cluster, replica)), 0);
    ck_assert(tu_run_until_count(&got.calls, 1, tu_ms(3000)));
    ck_assert_int_ne(got.status, 0);
    long long t0 = tu_now_ms();
    while (rc_slot_owner(cluster, slot) != replica &&
           tu_now_ms() - t0 < tu_ms(15000))
        tu_run_for(100);
    ck_assert_int_eq(rc_slot_owner(cluster, slot), replica);
    tu_assert_status(tu_acquire(other, tu_ms(5000), 30000, NULL), 0);
}
END_TEST

/* One slot resharded by hand (IMPORTING/MIGRATING, MIGRATE of its keys,
 * SETSLOT NODE) while six workers take and give back a fenced lock in it:
 * the MIGRATE finds no copy of the counter in its way, the workers go on
 * on the new master, and no token goes back, no two hold at once. */
START_TEST(reshard_under_lock_load_completes)
{
    contend_start(0);
    ck_assert(acquisitions(10, tu_ms(5000)));
    int slot = rc_key_slot("contended", 9);
    int from = rc_slot_owner(cluster, slot), to = other_master(from);
    ck_assert_int_eq(rc_migrate_begin(cluster, slot, from, to), 0);
    tu_run_for(300);
    ck_assert_int_eq(rc_migrate_keys(cluster, slot, from, to), 0);
    tu_run_for(300);
    ck_assert_int_eq(rc_migrate_finish(cluster, slot, to), 0);
    ck_assert(acquisitions(10, tu_ms(5000)));
    contend_stop();
    ck_assert_int_eq(ct.overlaps, 0);
    ck_assert_int_eq(ct.token_drops, 0);
    ck_assert_int_eq(ct.lost, 0);
}
END_TEST

/* Guarded commands: a key in the lock name's slot (its hash tag) is
 * written on the master that keeps the lock; a key of another slot is
 * refused at the call, with a log line, and nothing is sent. */
static char guard_log[512];
static void guard_log_line(enum hilock_log_level level, const char *msg,
                           void *arg)
{
    (void)level;
    (void)arg;
    snprintf(guard_log, sizeof guard_log, "%s", msg);
}

static void guard_done(struct hilock_lock *lock, int status,
                       const struct hilock_reply *reply, void *arg)
{
    struct tu_result *r = arg;
    (void)reply;
    r->lock = lock;
    r->status = status;
    r->calls++;
}

START_TEST(guarded_keys_must_share_the_lock_names_slot)
{
    struct hilock_options o;
    cluster_options(&o, 0);
    o.log_cb = guard_log_line;
    client = tu_client(&o);
    tu_client_ready(client);
    struct hilock_lock *l = tu_lock(client, "inv", 1);
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
    const char *in[] = {"SET", "{inv}:count", "5"};
    const char *out[] = {"SET", "count", "5"};
    size_t lens[] = {3, 11, 1}, outlens[] = {3, 5, 1}, key = 1;
    struct hilock_guarded_cmd ok = {3, in, lens, 1, &key};
    struct hilock_guarded_cmd bad = {3, out, outlens, 1, &key};
    struct tu_result r = {0};
    ck_assert_uint_ne(rc_key_slot("count", 5), rc_key_slot("inv", 3));
    tu_assert_status(hilock_lock_guarded(l, &bad, 1, 0, guard_done, &r),
                     HILOCK_EINVAL);
    ck_assert_msg(strstr(guard_log, "slot") != NULL, "log: %s", guard_log);
    tu_assert_status(hilock_lock_guarded(l, &ok, 1, 0, guard_done, &r), 0);
    ck_assert(tu_run_until_count(&r.calls, 1, tu_ms(3000)));
    tu_assert_status(r.status, 0);
    ck_assert_int_eq(on_owner("{inv}:count", "GET", NULL), 5);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cluster");
    TCase *tc = tcase_create("cluster");
    tcase_add_unchecked_fixture(tc, shared_start, shared_stop);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, locks_spread_over_every_master_and_exclude_others);
    tcase_add_test(tc, names_with_braces_keep_their_keys_in_one_slot);
    tcase_add_test(tc, waiter_is_woken_by_a_sharded_release);
    tcase_add_test(tc, moved_after_a_slot_migration_is_followed);
    tcase_add_test(tc, ask_during_a_migration_is_followed);
    tcase_add_test(tc, release_while_the_slot_migrates_frees_the_lock);
    tcase_add_test(tc, waiter_follows_its_lock_to_a_new_master);
    tcase_add_test(tc, fencing_tokens_keep_rising_while_the_slot_migrates);
    tcase_add_test(tc, renewals_follow_ask_while_the_slot_migrates);
    tcase_add_test(tc, standalone_seed_is_refused_and_takes_no_lock);
    tcase_add_test(tc, reshard_under_lock_load_completes);
    tcase_add_test(tc, fair_hand_off_works_in_a_cluster);
    tcase_add_test(tc, read_write_locks_and_permits_work_in_a_cluster);
    tcase_add_test(tc, kinds_refuse_each_other_in_a_cluster);
    tcase_add_test(tc, guarded_keys_must_share_the_lock_names_slot);
    suite_add_tcase(s, tc);
    TCase *un = tcase_create("unsharded");
    tcase_add_checked_fixture(un, unsharded_start, unsharded_stop);
    tcase_set_timeout(un, 60);
    tcase_add_test(un,
                   waiter_is_woken_without_sharded_pub_sub_and_nothing_is_logged);
    suite_add_tcase(s, un);

    TCase *fo = tcase_create("failover");
    tcase_add_checked_fixture(fo, own_start, own_stop);
    tcase_set_timeout(fo, 90);
    tcase_add_test(fo, manual_failover_while_contended_keeps_exclusion);
    tcase_add_test(fo, killed_master_with_wait_keeps_exclusion);
    tcase_add_test(fo, lock_lost_in_a_failover_is_reported_at_once);
    tcase_add_test(fo, undo_of_an_unconfirmed_grant_outlasts_the_failover);
    suite_add_tcase(s, fo);
    return tu_main(s);
}
