/* SPDX-License-Identifier: BSD-3-Clause */
/* test_tls.c -- TLS connections. With TLS built in (hiredis 1.x with
 * hiredis_ssl): locks over TLS on one node and on Redlock masters, mutual
 * TLS, the pub/sub wait, a reconnect's new handshake, and the failures that
 * end in HILOCK_ETLS (an unknown CA, an expired or misnamed certificate, a
 * plaintext server, a missing client certificate), each with a log line
 * and the usual backoff. Without TLS: the options are refused. The
 * certificates are made with openssl for each test (tls_certs.h); servers
 * speak TLS only (--port 0). */
#include "testutil.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_cluster.h"
#include "redis_sentinel.h"
#include "tls_certs.h"

#ifdef HILOCK_HAVE_TLS
#define TLS_ONLY
#else
#define TLS_ONLY __attribute__((unused))
#endif

static struct hilock_client *client;
static char certdir[PATH_MAX];
static char paths[8][PATH_MAX + 32];

/* What the log callback saw: lines in all, lines naming TLS, the last. */
struct log_seen {
    int lines;
    int tls_lines;
    char last_tls[320];
};
static struct log_seen seen;

static void log_line(enum hilock_log_level level, const char *msg, void *arg)
{
    struct log_seen *s = arg;
    (void)level;
    s->lines++;
    if (strstr(msg, "TLS") || strstr(msg, "tls") || strstr(msg, "certif") ||
        strstr(msg, "alert") || strstr(msg, "version")) {
        s->tls_lines++;
        snprintf(s->last_tls, sizeof s->last_tls, "%s", msg);
    }
}

/* Whether HILOCK_STATE_DOWN was reported with HILOCK_ETLS (a later
 * attempt may fail otherwise on a loaded machine: its connect timing out). */
static int down_tls;

TLS_ONLY static void on_state(struct hilock_client *c, int status,
                              enum hilock_state state, const char *node,
                              void *arg)
{
    (void)c;
    (void)node;
    (void)arg;
    if (state == HILOCK_STATE_DOWN && status == HILOCK_ETLS)
        down_tls = 1;
}

/* The path of file name in the certificate directory (a few at a time). */
static const char *cert(const char *name)
{
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s", certdir, name);
    return p;
}

static void setup(void)
{
    const char *tmp = getenv("TMPDIR");
    tu_setup_no_redis();
    client = NULL;
    memset(&seen, 0, sizeof seen);
    snprintf(certdir, sizeof certdir, "%s/hilock-tls-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(certdir));
    ck_assert_int_eq(rs_tls_certs(certdir), 0);
}

static void teardown(void)
{
    char cmd[PATH_MAX + 16];
    hilock_client_free(client);
    client = NULL;
    tu_teardown();
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", certdir);
    ck_assert_int_eq(system(cmd), 0);
}

/* A TLS-only server presenting certificate crt (with server.key). */
TLS_ONLY static struct rs_server *tls_server(const char *crt, int auth_clients)
{
    struct rs_options o;
    memset(&o, 0, sizeof o);
    o.tls.cert_file = cert(crt);
    o.tls.key_file = cert("server.key");
    o.tls.ca_file = cert("ca.crt");
    o.tls.auth_clients = auth_clients;
    struct rs_server *srv = tu_server_start(&o);
    ck_assert_msg(srv != NULL, "could not start a TLS redis-server");
    return srv;
}

/* Options for tu_srv over TLS, trusting ca, logging into seen. */
static void tls_options(struct hilock_options *o, const char *ca)
{
    tu_options(o);
    o->tls.mode = HILOCK_TLS_VERIFY;
    o->tls.ca_file = cert(ca);
    o->log_cb = log_line;
    o->log_arg = &seen;
}

/* A client with options trusting ca is refused at hilock_client_new with
 * HILOCK_ETLS, and one log line says says. */
static void assert_new_refused(const char *ca, const char *says)
{
    struct hilock_options o;
    struct hilock_client *c = NULL;
    tls_options(&o, ca);
    ck_assert_int_eq(hilock_client_new(tu_base, &o, &c), HILOCK_ETLS);
    ck_assert_ptr_null(c);
    ck_assert_int_eq(seen.lines, 1);
    ck_assert_ptr_nonnull(strstr(seen.last_tls, says));
}

#ifdef HILOCK_HAVE_TLS

START_TEST(lock_is_taken_and_released_over_tls)
{
    struct hilock_options o;
    tu_srv = tls_server("server.crt", 0);
    tls_options(&o, "ca.crt");
    client = tu_client(&o);
    struct hilock_lock *l = tu_lock(client, "tls-one", 1);
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
    ck_assert_int_eq(tu_holds("tls-one", client, 1), 1);
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert_int_eq(tu_exists("tls-one"), 0);
    ck_assert_int_eq(seen.tls_lines, 0);
}
END_TEST

/* A client with options o takes lock name and releases it. */
static void assert_lock_passes(const struct hilock_options *o,
                               const char *name)
{
    client = tu_client(o);
    struct hilock_lock *l = tu_lock(client, name, 1);
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
    tu_assert_status(tu_release(l, NULL), 0);
}

START_TEST(mutual_tls_passes_with_a_client_certificate)
{
    struct hilock_options o;
    tu_srv = tls_server("server.crt", 1);
    tls_options(&o, "ca.crt");
    o.tls.cert_file = cert("client.crt");
    o.tls.key_file = cert("client.key");
    assert_lock_passes(&o, "tls-mutual");
}
END_TEST

/* A try (wait 0) on a client whose handshake cannot pass: HILOCK_ETLS,
 * the state DOWN with it, a log line that says why, and reconnects that
 * back off (no storm of handshakes). */
static void assert_tls_refused(struct hilock_options *o, const char *why)
{
    o->reconnect_min_ms = 50;
    o->reconnect_max_ms = 400;
    o->connect_timeout_ms = 1000; /* the TLS handshake's deadline too */
    o->state_cb = on_state;
    down_tls = 0;
    client = tu_client(o);
    struct hilock_lock *l = tu_lock(client, "tls-refused", 1);
    int status = tu_acquire(l, 0, 10000, NULL);
    tu_assert_status(status, HILOCK_ETLS);
    ck_assert(tu_run_until_state(client, HILOCK_STATE_DOWN, tu_ms(2000)));
    ck_assert(down_tls);
    ck_assert_msg(strstr(seen.last_tls, why) != NULL,
                  "log \"%s\" does not say \"%s\"", seen.last_tls, why);
    int before = seen.tls_lines;
    tu_run_for(1000);
    /* 2 connections (command, subscriber) at most every 400 ms, plus
     * jitter: a storm would be hundreds. */
    ck_assert_int_le(seen.tls_lines - before, 16);
    ck_assert_int_eq(tu_exists("tls-refused"), 0);
}

/* assert_tls_refused for a server presenting crt (asking for a client's
 * certificate when auth_clients) to a client trusting ca. */
static void assert_cert_refused(const char *crt, int auth_clients,
                                const char *ca, const char *why)
{
    struct hilock_options o;
    tu_srv = tls_server(crt, auth_clients);
    tls_options(&o, ca);
    assert_tls_refused(&o, why);
}

START_TEST(unknown_ca_fails_with_etls)
{
    assert_cert_refused("server.crt", 0, "other-ca.crt", "certificate");
}
END_TEST

START_TEST(expired_certificate_fails_with_etls)
{
    assert_cert_refused("expired.crt", 0, "ca.crt", "expired");
}
END_TEST

START_TEST(certificate_for_another_name_fails_with_etls)
{
    assert_cert_refused("other-name.crt", 0, "ca.crt", "mismatch");
}
END_TEST

/* The same certificate passes when server_name is the name it carries. */
START_TEST(server_name_is_the_name_checked)
{
    struct hilock_options o;
    tu_srv = tls_server("other-name.crt", 0);
    tls_options(&o, "ca.crt");
    o.tls.server_name = "other.invalid";
    assert_lock_passes(&o, "tls-sni");
}
END_TEST

START_TEST(plaintext_server_fails_with_etls)
{
    struct hilock_options o;
    tu_srv = tu_server_start(NULL);
    ck_assert_ptr_nonnull(tu_srv);
    tls_options(&o, "ca.crt");
    assert_tls_refused(&o, "TLS");
}
END_TEST

START_TEST(missing_client_certificate_fails_with_etls)
{
    assert_cert_refused("server.crt", 1, "ca.crt", "TLS");
}
END_TEST

/* Verification off: the unknown CA's server is accepted. */
START_TEST(no_verify_mode_accepts_any_certificate)
{
    struct hilock_options o;
    tu_srv = tls_server("server.crt", 0);
    tls_options(&o, "other-ca.crt");
    o.tls.mode = HILOCK_TLS_NO_VERIFY;
    assert_lock_passes(&o, "tls-noverify");
}
END_TEST

START_TEST(reconnect_after_restart_handshakes_again)
{
    struct hilock_options o;
    tu_srv = tls_server("server.crt", 0);
    tls_options(&o, "ca.crt");
    client = tu_client(&o);
    tu_client_ready(client);
    int ups = tu_ups(client);
    ck_assert_int_eq(rs_restart(tu_srv), 0);
    ck_assert(tu_run_until_up(client, ups + 1, tu_ms(5000)));
    struct hilock_lock *l = tu_lock(client, "tls-again", 1);
    tu_assert_status(tu_acquire_eventually(l, 10000), 0);
    ck_assert_int_eq(tu_holds("tls-again", client, 1), 1);
    tu_assert_status(tu_release(l, NULL), 0);
}
END_TEST

/* A waiter is woken by the release message on its TLS subscriber
 * connection, long before the holder's lease would end. */
START_TEST(waiter_is_woken_over_tls)
{
    struct hilock_options o;
    struct tu_result got = {0};
    tu_srv = tls_server("server.crt", 0);
    tls_options(&o, "ca.crt");
    client = tu_client(&o);
    struct hilock_client *other = tu_client(&o);
    struct hilock_lock *a = tu_lock(client, "tls-wait", 1);
    struct hilock_lock *b = tu_lock(other, "tls-wait", 1);
    tu_assert_status(tu_acquire(a, 0, 60000, NULL), 0);
    ck_assert_int_eq(hilock_lock_acquire(b, 20000, 60000, tu_record, &got), 0);
    ck_assert(tu_numsub_becomes(TU_CHANNEL("tls-wait"), 1, tu_ms(3000)));
    long long t0 = tu_now_ms();
    tu_assert_status(tu_release(a, NULL), 0);
    ck_assert(tu_run_until_count(&got.calls, 1, tu_ms(3000)));
    tu_assert_status(got.status, 0);
    ck_assert_int_lt(tu_now_ms() - t0, tu_ms(3000));
    ck_assert_int_eq(tu_holds("tls-wait", other, 1), 1);
    hilock_client_free(other);
}
END_TEST

START_TEST(redlock_masters_over_tls)
{
    struct rs_server *srv[3];
    struct hilock_endpoint eps[3];
    struct hilock_options o;
    for (int i = 0; i < 3; i++) {
        srv[i] = tls_server("server.crt", 0);
        eps[i] = (struct hilock_endpoint){"127.0.0.1", rs_port(srv[i]), NULL};
    }
    tls_options(&o, "ca.crt");
    o.topology = HILOCK_TOPOLOGY_REDLOCK;
    o.redlock.masters = eps;
    o.redlock.count = 3;
    client = tu_client(&o);
    struct hilock_lock *l = tu_lock(client, "tls-redlock", 1);
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
    int holding = 0; /* a majority decides: one may not be up yet */
    for (int i = 0; i < 3; i++)
        holding += rs_int(srv[i], "EXISTS", "tls-redlock", (char *)NULL) == 1;
    ck_assert_int_ge(holding, 2);
    tu_assert_status(tu_release(l, NULL), 0);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(
            rs_int(srv[i], "EXISTS", "tls-redlock", (char *)NULL), 0);
        rs_stop(srv[i]);
    }
}
END_TEST

/* The seed is reached over TLS, and so is every master the slot map and
 * the redirects name (the cluster tells TLS clients its TLS ports). */
START_TEST(cluster_locks_over_tls)
{
    struct hilock_options o;
    struct rs_tls t = {cert("server.crt"), cert("server.key"),
                       cert("ca.crt"), 0};
    rc_set_tls(&t);
    struct rc_cluster *rc = rc_start(3, 0);
    rc_set_tls(NULL);
    ck_assert_msg(rc != NULL, "could not start a TLS cluster");
    struct hilock_endpoint seed = {"127.0.0.1", rc_tls_port(rc, 0), NULL};
    tls_options(&o, "ca.crt");
    o.topology = HILOCK_TOPOLOGY_CLUSTER;
    o.cluster.seeds = &seed;
    o.cluster.count = 1;
    client = tu_client(&o);
    int on[3] = {0, 0, 0};
    for (int i = 0; i < 12; i++) {
        char name[32];
        snprintf(name, sizeof name, "tls-c-%d", i);
        int owner = rc_slot_owner(rc, rc_key_slot(name, strlen(name)));
        ck_assert_int_ge(owner, 0);
        struct hilock_lock *l = tu_lock(client, name, 1);
        tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
        ck_assert_int_eq(
            rs_int(rc_server(rc, owner), "EXISTS", name, (char *)NULL), 1);
        tu_assert_status(tu_release(l, NULL), 0);
        on[owner]++;
    }
    ck_assert_msg(on[0] && on[1] && on[2], "locks on %d, %d and %d", on[0],
                  on[1], on[2]);
    rc_stop(rc);
}
END_TEST

/* Sentinels and master speak TLS only: the sentinels are asked over TLS
 * (the same settings, or their own), the master they name is reached over
 * TLS, and after a failover the new one is. */
START_TEST(sentinel_master_over_tls)
{
    struct hilock_options o;
    struct rs_tls t = {cert("server.crt"), cert("server.key"),
                       cert("ca.crt"), 0};
    rt_set_tls(&t);
    struct rt_sentinel *st = rt_start(1, 1, "tlsmaster");
    rt_set_tls(NULL);
    ck_assert_msg(st != NULL, "could not start TLS sentinels");
    struct hilock_endpoint ep = {"127.0.0.1", rt_sentinel_port(st, 0), NULL};
    tls_options(&o, "ca.crt");
    o.topology = HILOCK_TOPOLOGY_SENTINEL;
    o.sentinel.nodes = &ep;
    o.sentinel.count = 1;
    o.sentinel.master_name = "tlsmaster";
    o.sentinel.tls_own = 1;
    o.sentinel.tls = o.tls;
    client = tu_client(&o);
    struct hilock_lock *l = tu_lock(client, "tls-sentinel", 1);
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
    ck_assert_int_eq(rs_int(rt_server(st, rt_master(st)), "EXISTS",
                            "tls-sentinel", (char *)NULL),
                     1);
    tu_assert_status(tu_release(l, NULL), 0);
    int ups = tu_ups(client);
    int promoted = rt_failover(st);
    ck_assert_int_ge(promoted, 0);
    ck_assert(tu_run_until_up(client, ups + 1, tu_ms(10000)));
    struct hilock_lock *m = tu_lock(client, "tls-sentinel-2", 1);
    tu_assert_status(tu_acquire_eventually(m, 10000), 0);
    ck_assert_int_eq(rs_int(rt_server(st, promoted), "EXISTS",
                            "tls-sentinel-2", (char *)NULL),
                     1);
    tu_assert_status(tu_release(m, NULL), 0);
    /* The sentinels' own settings are the ones used for them: off, the
     * TLS-only sentinel cannot be asked. */
    hilock_client_free(client);
    o.sentinel.tls.mode = HILOCK_TLS_OFF;
    client = tu_client(&o);
    l = tu_lock(client, "tls-sentinel-3", 1);
    ck_assert_int_ne(tu_acquire(l, 0, 10000, NULL), 0);
    rt_stop(st);
}
END_TEST

/* No server at all is a connection failure, not a TLS one. */
START_TEST(no_server_is_econn_not_etls)
{
    struct hilock_options o;
    tls_options(&o, "ca.crt");
    o.node.port = tu_dead_port();
    client = tu_client(&o);
    struct hilock_lock *l = tu_lock(client, "tls-nobody", 1);
    int status = tu_acquire(l, 0, 10000, NULL);
    tu_assert_status(status, HILOCK_ECONN);
    ck_assert_int_eq(seen.tls_lines, 0);
}
END_TEST

START_TEST(unreadable_ca_file_is_refused_at_client_new)
{
    assert_new_refused("no-such-ca.crt", "no-such-ca.crt");
}
END_TEST

#else

START_TEST(tls_is_refused_without_tls_support)
{
    assert_new_refused("ca.crt", "hiredis 1.x");
}
END_TEST

#endif

/* Settings that cannot work are refused whether TLS is built in or not. */
START_TEST(inconsistent_tls_options_are_einval)
{
    struct hilock_options o;
    struct hilock_client *c = NULL;
    tls_options(&o, "ca.crt");
    o.tls.cert_file = cert("client.crt"); /* no key */
    ck_assert_int_eq(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
    tls_options(&o, "ca.crt");
    o.node.unix_path = "/tmp/redis.sock";
    ck_assert_int_eq(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
    tls_options(&o, "ca.crt");
    o.tls.mode = (enum hilock_tls_mode)7;
    ck_assert_int_eq(hilock_client_new(tu_base, &o, &c), HILOCK_EINVAL);
    ck_assert_ptr_null(c);
}
END_TEST

static Suite *tls_suite(void)
{
    Suite *s = suite_create("tls");
    TCase *tc = tcase_create("tls");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
#ifdef HILOCK_HAVE_TLS
    tcase_add_test(tc, lock_is_taken_and_released_over_tls);
    tcase_add_test(tc, mutual_tls_passes_with_a_client_certificate);
    tcase_add_test(tc, unknown_ca_fails_with_etls);
    tcase_add_test(tc, expired_certificate_fails_with_etls);
    tcase_add_test(tc, certificate_for_another_name_fails_with_etls);
    tcase_add_test(tc, server_name_is_the_name_checked);
    tcase_add_test(tc, plaintext_server_fails_with_etls);
    tcase_add_test(tc, missing_client_certificate_fails_with_etls);
    tcase_add_test(tc, no_verify_mode_accepts_any_certificate);
    tcase_add_test(tc, reconnect_after_restart_handshakes_again);
    tcase_add_test(tc, waiter_is_woken_over_tls);
    tcase_add_test(tc, redlock_masters_over_tls);
    tcase_add_test(tc, cluster_locks_over_tls);
    tcase_add_test(tc, sentinel_master_over_tls);
    tcase_add_test(tc, no_server_is_econn_not_etls);
    tcase_add_test(tc, unreadable_ca_file_is_refused_at_client_new);
#else
    tcase_add_test(tc, tls_is_refused_without_tls_support);
#endif
    tcase_add_test(tc, inconsistent_tls_options_are_einval);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_main(tls_suite());
}
