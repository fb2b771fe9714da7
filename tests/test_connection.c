/* SPDX-License-Identifier: BSD-3-Clause */
/* test_connection.c -- connection options (password, ACL user, db, unix
 * socket) and the server-side refusals that have their own codes: EAUTH,
 * ENOPERM, EWRONGTYPE, EREADONLY, EOOM. Each test starts the server it
 * needs; the teardown stops it. */
#include "testutil.h"
#include "proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>

static struct hilock_client *client;
static struct rs_server *master; /* for the replica test */
static struct rs_server *second; /* a Redlock's second master */
static struct tp_proxy *proxy;    /* counts the client's connections */

/* What the client logged and reported. */
struct seen {
    int warnings;    /* log lines at HILOCK_LOG_WARN and above */
    int ups, downs;  /* HILOCK_STATE_UP and _DOWN events */
    int down_status; /* the status of the last DOWN */
    char node[300];  /* the node of the last event */
    char log[4096];  /* every line at WARN and above */
};
static struct seen seen;

static void log_line(enum hilock_log_level level, const char *msg, void *arg)
{
    struct seen *s = arg;
    if (level < HILOCK_LOG_WARN)
        return;
    s->warnings++;
    size_t n = strlen(s->log);
    snprintf(s->log + n, sizeof s->log - n, "%s\n", msg);
}

static void on_state(struct hilock_client *c, int status,
                     enum hilock_state state, const char *node, void *arg)
{
    struct seen *s = arg;
    (void)c;
    snprintf(s->node, sizeof s->node, "%s", node);
    s->ups += state == HILOCK_STATE_UP;
    if (state == HILOCK_STATE_DOWN) {
        s->downs++;
        s->down_status = status;
    }
}

/* Options that log into seen and reconnect quickly. */
static void watched_options(struct hilock_options *o)
{
    tu_options(o);
    o->reconnect_min_ms = 10;
    o->reconnect_max_ms = 100;
    o->log_cb = log_line;
    o->log_arg = &seen;
    o->state_cb = on_state;
    o->state_arg = &seen;
}

/* A peer that is not Redis: it answers whatever comes with an HTTP error
 * and closes, as a web server on the wrong port does. */
static struct evconnlistener *http;
static int http_accepted;
static struct bufferevent *http_open[64]; /* connections not closed yet */

/* Close connection bev of the HTTP peer. */
static void http_close(struct bufferevent *bev)
{
    for (size_t i = 0; i < sizeof http_open / sizeof http_open[0]; i++)
        if (http_open[i] == bev)
            http_open[i] = NULL;
    bufferevent_free(bev);
}

static void http_on_read(struct bufferevent *bev, void *arg)
{
    static const char answer[] = "HTTP/1.1 400 Bad Request\r\n"
                                 "Content-Length: 0\r\n\r\n";
    (void)arg;
    evbuffer_drain(bufferevent_get_input(bev), (size_t)-1);
    send(bufferevent_getfd(bev), answer, sizeof answer - 1, MSG_NOSIGNAL);
    http_close(bev);
}

static void http_on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)what;
    (void)arg;
    http_close(bev);
}

static void http_on_accept(struct evconnlistener *l, evutil_socket_t fd,
                           struct sockaddr *sa, int salen, void *arg)
{
    (void)l;
    (void)sa;
    (void)salen;
    (void)arg;
    http_accepted++;
    struct bufferevent *bev =
        bufferevent_socket_new(tu_base, fd, BEV_OPT_CLOSE_ON_FREE);
    ck_assert_ptr_nonnull(bev);
    http_open[http_accepted % (sizeof http_open / sizeof http_open[0])] = bev;
    bufferevent_setcb(bev, http_on_read, NULL, http_on_event, NULL);
    bufferevent_enable(bev, EV_READ);
}

/* Start the HTTP peer on 127.0.0.1; its port. */
static int http_start(void)
{
    struct sockaddr_in sin;
    socklen_t len = sizeof sin;
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    http = evconnlistener_new_bind(tu_base, http_on_accept, NULL,
                                   LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
                                   16, (struct sockaddr *)&sin, sizeof sin);
    ck_assert_ptr_nonnull(http);
    evutil_socket_t fd = evconnlistener_get_fd(http);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
    return ntohs(sin.sin_port);
}

static void setup(void)
{
    tu_setup_no_redis();
    client = NULL;
    master = NULL;
    second = NULL;
    http = NULL;
    http_accepted = 0;
    proxy = NULL;
    memset(&seen, 0, sizeof seen);
}

static void teardown(void)
{
    hilock_client_free(client);
    client = NULL;
    rs_stop(master);
    master = NULL;
    rs_stop(second);
    second = NULL;
    if (http)
        evconnlistener_free(http);
    http = NULL;
    for (size_t i = 0; i < sizeof http_open / sizeof http_open[0]; i++)
        if (http_open[i])
            http_close(http_open[i]);
    tp_free(proxy);
    proxy = NULL;
    tu_teardown();
}

static void start_with_args(const char *const *args)
{
    struct rs_options o;
    memset(&o, 0, sizeof o);
    o.args = args;
    tu_srv = tu_server_start(&o);
    ck_assert_msg(tu_srv != NULL, "could not start redis-server");
}

static void start_with_conf(const char *conf)
{
    struct rs_options o;
    memset(&o, 0, sizeof o);
    o.conf = conf;
    tu_srv = tu_server_start(&o);
    ck_assert_msg(tu_srv != NULL, "could not start redis-server");
}

/* A client on tu_srv with the given credentials, 1 s request deadline. */
static struct hilock_lock *lock_as(const char *user, const char *pass,
                                   const char *name)
{
    struct hilock_options o;
    tu_options(&o);
    o.username = user;
    o.password = pass;
    o.request_timeout_ms = 1000;
    client = tu_client(&o);
    return tu_lock(client, name, 1);
}

START_TEST(password_lets_requests_through)
{
    const char *args[] = {"--requirepass", "s3cret", NULL};
    start_with_args(args);
    struct hilock_lock *l = lock_as(NULL, "s3cret", "pw");
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
    tu_assert_status(tu_release(l, NULL), 0);
}
END_TEST

START_TEST(missing_password_fails_with_eauth)
{
    const char *args[] = {"--requirepass", "s3cret", NULL};
    start_with_args(args);
    struct hilock_lock *l = lock_as(NULL, NULL, "pw");
    long long t0 = tu_now_ms();
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), HILOCK_EAUTH);
    ck_assert_int_lt(tu_now_ms() - t0, 1000 + tu_ms(1500));
}
END_TEST

static bool proxy_accepted_four(void *arg)
{
    (void)arg;
    return tp_accepted(proxy) >= 4;
}

/* The handshake is refused: DOWN with the cause, once, and one line in
 * the log, however often the client tries again; never UP. */
START_TEST(missing_password_reports_down_once_never_up)
{
    const char *args[] = {"--requirepass", "s3cret", NULL};
    start_with_args(args);
    struct hilock_options o;
    watched_options(&o);
    proxy = tp_new(tu_base, rs_port(tu_srv));
    ck_assert_ptr_nonnull(proxy);
    o.node.port = tp_port(proxy);
    client = tu_client(&o);
    ck_assert_msg(tu_run_until(proxy_accepted_four, NULL, tu_ms(5000)),
                  "%ld connections", tp_accepted(proxy));
    ck_assert_int_eq(seen.ups, 0);
    ck_assert_int_eq(seen.downs, 1);
    tu_assert_status(seen.down_status, HILOCK_EAUTH);
    ck_assert_msg(seen.warnings == 1, "log:\n%s", seen.log);
    ck_assert_msg(strstr(seen.log, "NOAUTH"), "log:\n%s", seen.log);
}
END_TEST

/* A peer that does not speak RESP is never taken for a server that is
 * up: no UP/DOWN flapping on every reconnect. */
START_TEST(peer_that_is_not_redis_is_never_reported_up)
{
    struct hilock_options o;
    watched_options(&o);
    o.node.port = http_start();
    client = tu_client(&o);
    ck_assert_msg(tu_run_until_count(&http_accepted, 4, tu_ms(5000)),
                  "%d connections", http_accepted);
    ck_assert_int_eq(seen.ups, 0);
    ck_assert_int_eq(seen.downs, 1);
    tu_assert_status(seen.down_status, HILOCK_EPROTO);
    ck_assert_msg(seen.warnings == 1, "log:\n%s", seen.log);
}
END_TEST

/* A state event and the log line of a failure say which server. */
START_TEST(down_event_and_log_name_the_server)
{
    struct hilock_options o;
    char want[64];
    watched_options(&o);
    o.node.port = tu_dead_port();
    snprintf(want, sizeof want, "127.0.0.1:%d", o.node.port);
    client = tu_client(&o);
    ck_assert(tu_run_until_count(&seen.downs, 1, tu_ms(3000)));
    ck_assert_str_eq(seen.node, want);
    ck_assert_msg(strstr(seen.log, want), "log:\n%s", seen.log);
}
END_TEST

/* One Redlock master of three is down: the client works, and the log
 * names the master that does not. */
START_TEST(redlock_log_names_the_master_that_is_down)
{
    start_with_args(NULL);
    second = tu_server_start(NULL);
    ck_assert_ptr_nonnull(second);
    struct hilock_endpoint m[3] = {{"127.0.0.1", rs_port(tu_srv), NULL},
                                   {"127.0.0.1", rs_port(second), NULL},
                                   {"127.0.0.1", tu_dead_port(), NULL}};
    struct hilock_options o;
    char want[64];
    watched_options(&o);
    o.topology = HILOCK_TOPOLOGY_REDLOCK;
    o.redlock.masters = m;
    o.redlock.count = 3;
    snprintf(want, sizeof want, "127.0.0.1:%d", m[2].port);
    client = tu_client(&o);
    struct hilock_lock *l = tu_lock(client, "rl", 1);
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
    ck_assert_msg(strstr(seen.log, want), "log:\n%s", seen.log);
}
END_TEST

START_TEST(wrong_password_fails_with_eauth)
{
    const char *args[] = {"--requirepass", "s3cret", NULL};
    start_with_args(args);
    struct hilock_lock *l = lock_as(NULL, "wrong", "pw");
    long long t0 = tu_now_ms();
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), HILOCK_EAUTH);
    ck_assert_int_lt(tu_now_ms() - t0, 1000 + tu_ms(1500));
}
END_TEST

START_TEST(acl_user_lets_requests_through)
{
    start_with_conf("user alice on >alicepw ~* &* +@all");
    struct hilock_lock *l = lock_as("alice", "alicepw", "acl");
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "acl", (char *)NULL), 1);
}
END_TEST

START_TEST(acl_key_denial_fails_with_enoperm)
{
    /* the lock's companion key (hilock_fence:{name})
     * contains the name too, so one pattern covers a lock and its keys */
    start_with_conf("user bob on >bobpw ~*allowed* &* +@all");
    struct hilock_lock *denied = lock_as("bob", "bobpw", "secret");
    tu_assert_status(tu_acquire(denied, 0, 10000, NULL), HILOCK_ENOPERM);
    struct hilock_lock *ok = tu_lock(client, "allowed:x", 1);
    tu_assert_status(tu_acquire(ok, 0, 10000, NULL), 0);
}
END_TEST

START_TEST(db_option_puts_the_lock_in_that_database)
{
    start_with_args(NULL);
    struct hilock_options o;
    tu_options(&o);
    o.db = 3;
    client = tu_client(&o);
    struct hilock_lock *l = tu_lock(client, "indb", 1);
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "indb", (char *)NULL), 0);
    redisContext *c = rs_connect(tu_srv);
    ck_assert_ptr_nonnull(c);
    redisReply *r = redisCommand(c, "SELECT 3");
    ck_assert_ptr_nonnull(r);
    freeReplyObject(r);
    r = redisCommand(c, "EXISTS indb");
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->integer, 1);
    freeReplyObject(r);
    redisFree(c);
}
END_TEST

START_TEST(unix_socket_path_is_used_instead_of_tcp)
{
    struct rs_options so;
    memset(&so, 0, sizeof so);
    so.unix_socket = 1;
    tu_srv = tu_server_start(&so);
    ck_assert_ptr_nonnull(tu_srv);
    ck_assert_ptr_nonnull(rs_unix_path(tu_srv));
    struct hilock_options o;
    tu_options(&o);
    o.node.port = tu_dead_port(); /* nothing there: only the socket can work */
    o.node.unix_path = rs_unix_path(tu_srv);
    client = tu_client(&o);
    struct hilock_lock *l = tu_lock(client, "sock", 1);
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "sock", (char *)NULL), 1);
}
END_TEST

START_TEST(key_of_another_type_fails_with_ewrongtype)
{
    start_with_args(NULL);
    char *ok = rs_str(tu_srv, "SET", "str", "value", (char *)NULL);
    ck_assert_str_eq(ok, "OK");
    free(ok);
    struct hilock_lock *l = lock_as(NULL, NULL, "str");
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), HILOCK_EWRONGTYPE);
    ok = rs_str(tu_srv, "GET", "str", (char *)NULL);
    ck_assert_str_eq(ok, "value"); /* untouched */
    free(ok);
}
END_TEST

START_TEST(replica_fails_with_ereadonly)
{
    char port[16];
    master = tu_server_start(NULL);
    ck_assert_ptr_nonnull(master);
    snprintf(port, sizeof port, "%d", rs_port(master));
    const char *args[] = {"--replicaof", "127.0.0.1", port, NULL};
    start_with_args(args);
    struct hilock_lock *l = lock_as(NULL, NULL, "ro");
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), HILOCK_EREADONLY);
}
END_TEST

START_TEST(server_out_of_memory_fails_with_eoom)
{
    const char *args[] = {"--maxmemory", "1", "--maxmemory-policy",
                          "noeviction", NULL};
    start_with_args(args);
    struct hilock_lock *l = lock_as(NULL, NULL, "oom");
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), HILOCK_EOOM);
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "oom", (char *)NULL), 0);
}
END_TEST

static Suite *connection_suite(void)
{
    Suite *s = suite_create("connection");
    TCase *tc = tcase_create("options_and_refusals");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, password_lets_requests_through);
    tcase_add_test(tc, missing_password_fails_with_eauth);
    tcase_add_test(tc, wrong_password_fails_with_eauth);
    tcase_add_test(tc, missing_password_reports_down_once_never_up);
    tcase_add_test(tc, peer_that_is_not_redis_is_never_reported_up);
    tcase_add_test(tc, down_event_and_log_name_the_server);
    tcase_add_test(tc, redlock_log_names_the_master_that_is_down);
    tcase_add_test(tc, acl_user_lets_requests_through);
    tcase_add_test(tc, acl_key_denial_fails_with_enoperm);
    tcase_add_test(tc, db_option_puts_the_lock_in_that_database);
    tcase_add_test(tc, unix_socket_path_is_used_instead_of_tcp);
    tcase_add_test(tc, key_of_another_type_fails_with_ewrongtype);
    tcase_add_test(tc, replica_fails_with_ereadonly);
    tcase_add_test(tc, server_out_of_memory_fails_with_eoom);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_main(connection_suite());
}
