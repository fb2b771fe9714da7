/* SPDX-License-Identifier: BSD-3-Clause */
/* test_harness.c -- the redis-server harness does what the suites rely on:
 * a private port, pause/resume, restarts on the same port, and a server that
 * never outlives the process that started it. Needs no hilock. */
#include "redis_server.h"

#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct rs_server *srv;

/* hz 100: the server acts on SIGTERM within 10 ms, not at its next 100 ms
 * cron tick, which makes every stop 90 ms shorter. */
static void setup(void)
{
    static const char *const args[] = {"--hz", "100", NULL};
    srv = rs_start(args);
    ck_assert_ptr_nonnull(srv);
}

static void teardown(void)
{
    rs_stop(srv);
    srv = NULL;
}

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* errno of a plain connect to 127.0.0.1:port, 0 when it connected. */
static int connect_errno(int port)
{
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), err = 0;
    ck_assert_int_ge(fd, 0);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((uint16_t)port);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
        err = errno;
    close(fd);
    return err;
}

/* True once connecting to port is refused, polled for up to timeout_ms. */
static int port_refused_within(int port, int timeout_ms)
{
    long long deadline = mono_ms() + timeout_ms;
    do {
        if (connect_errno(port) == ECONNREFUSED)
            return 1;
        usleep(20000);
    } while (mono_ms() < deadline);
    return 0;
}

/* SET k v, which must answer OK. */
static void set_k(struct rs_server *s)
{
    char *ok = rs_str(s, "SET", "k", "v", (char *)NULL);
    ck_assert_ptr_nonnull(ok);
    ck_assert_str_eq(ok, "OK");
    free(ok);
}

static int dir_exists(const char *dir)
{
    struct stat st;
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

START_TEST(start_answers_ping_as_our_own_child)
{
    char log[PATH_MAX + 16];
    ck_assert_int_gt(rs_port(srv), 0);
    ck_assert_int_eq(rs_ping(srv, 1000), 0);
    char *pid = rs_info(srv, "server", "process_id");
    ck_assert_ptr_nonnull(pid);
    ck_assert_int_eq(atoi(pid), (int)rs_pid(srv));
    free(pid);
    ck_assert_int_eq(rs_int(srv, "DBSIZE", (char *)NULL), 0);
    snprintf(log, sizeof log, "%s/redis.log", rs_dir(srv));
    ck_assert_int_eq(access(log, R_OK), 0);
}
END_TEST

START_TEST(sync_helpers_return_ints_strings_and_nil)
{
    set_k(srv);
    ck_assert_int_eq(rs_int(srv, "EXISTS", "k", (char *)NULL), 1);
    ck_assert_int_eq(rs_int(srv, "HSET", "h", "f", "42", (char *)NULL), 1);
    ck_assert_int_eq(rs_int(srv, "HGET", "h", "f", (char *)NULL), 42);
    ck_assert(rs_int(srv, "HGET", "h", "nope", (char *)NULL) == RS_NIL);
    ck_assert_ptr_null(rs_str(srv, "GET", "missing", (char *)NULL));
    ck_assert(rs_int(srv, "NOSUCHCOMMAND", (char *)NULL) == RS_ERR);
    ck_assert_int_eq(rs_cmdstat_calls(srv, "hset"), 1);
    ck_assert_int_eq(rs_cmdstat_calls(srv, "evalsha"), 0);
    const char *argv[] = {"SET", "bin\0key", "x"};
    size_t lens[] = {3, 7, 1};
    redisReply *r = rs_command_argv(srv, 3, argv, lens);
    ck_assert_ptr_nonnull(r);
    freeReplyObject(r);
    ck_assert_int_eq(rs_int(srv, "EXISTS", "bin", (char *)NULL), 0);
    ck_assert_int_eq(rs_int(srv, "DBSIZE", (char *)NULL), 3);

    ck_assert_int_eq(rs_numsub(srv, "ch"), 0);
    redisContext *sub = rs_subscriber(srv, "ch");
    ck_assert_ptr_nonnull(sub);
    ck_assert_int_eq(rs_numsub(srv, "ch"), 1);
    redisFree(sub);
}
END_TEST

START_TEST(pause_stops_replies_and_resume_restores_them)
{
    ck_assert_int_eq(rs_pause(srv), 0);
    ck_assert_int_eq(rs_ping(srv, 200), -1);
    ck_assert_int_eq(rs_resume(srv), 0);
    ck_assert_int_eq(rs_ping(srv, 2000), 0);
}
END_TEST

START_TEST(kill9_restart_serves_the_same_port_with_no_data)
{
    int port = rs_port(srv);
    pid_t old = rs_pid(srv);
    set_k(srv);
    ck_assert_int_eq(rs_kill9_restart(srv), 0);
    ck_assert_int_eq(rs_port(srv), port);
    ck_assert_int_ne(rs_pid(srv), old);
    ck_assert_int_eq(kill(old, 0), -1); /* reaped, not a zombie */
    ck_assert_int_eq(rs_ping(srv, 1000), 0);
    ck_assert_int_eq(rs_int(srv, "EXISTS", "k", (char *)NULL), 0);
}
END_TEST

START_TEST(kill9_restart_of_a_paused_server_works)
{
    int port = rs_port(srv);
    ck_assert_int_eq(rs_pause(srv), 0);
    ck_assert_int_eq(rs_kill9_restart(srv), 0);
    ck_assert_int_eq(rs_port(srv), port);
    ck_assert_int_eq(rs_ping(srv, 1000), 0);
}
END_TEST

START_TEST(graceful_restart_serves_the_same_port)
{
    int port = rs_port(srv);
    pid_t old = rs_pid(srv);
    ck_assert_int_eq(rs_restart(srv), 0);
    ck_assert_int_eq(rs_port(srv), port);
    ck_assert_int_ne(rs_pid(srv), old);
    ck_assert_int_eq(rs_ping(srv, 1000), 0);
}
END_TEST

START_TEST(stop_refuses_connections_and_removes_the_dir)
{
    int port = rs_port(srv);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", rs_dir(srv));
    ck_assert(dir_exists(dir));
    ck_assert_int_eq(rs_pause(srv), 0); /* stop must cope with a frozen one */
    rs_stop(srv);
    srv = NULL;
    ck_assert_int_eq(connect_errno(port), ECONNREFUSED);
    ck_assert(!dir_exists(dir));
}
END_TEST

START_TEST(two_servers_get_distinct_ports_and_dirs)
{
    struct rs_server *other = rs_start(NULL);
    ck_assert_ptr_nonnull(other);
    ck_assert_int_ne(rs_port(other), rs_port(srv));
    ck_assert_str_ne(rs_dir(other), rs_dir(srv));
    set_k(srv);
    ck_assert_int_eq(rs_int(other, "EXISTS", "k", (char *)NULL), 0);
    rs_stop(other);
    ck_assert_int_eq(rs_ping(srv, 1000), 0);
}
END_TEST

START_TEST(extra_args_and_conf_text_are_applied)
{
    const char *args[] = {"--requirepass", "s3cret", NULL};
    struct rs_server *locked = rs_start(args);
    ck_assert_ptr_nonnull(locked);
    char *reply = rs_str(locked, "PING", (char *)NULL);
    ck_assert_ptr_nonnull(reply);
    ck_assert_msg(strncmp(reply, "NOAUTH", 6) == 0, "PING said %s", reply);
    free(reply);
    rs_stop(locked);

    struct rs_options o;
    memset(&o, 0, sizeof o);
    o.conf = "maxmemory 12345678\nmaxmemory-policy noeviction";
    struct rs_server *conf = rs_start_opts(&o);
    ck_assert_ptr_nonnull(conf);
    char *mm = rs_info(conf, "memory", "maxmemory");
    ck_assert_ptr_nonnull(mm);
    ck_assert_str_eq(mm, "12345678");
    free(mm);
    ck_assert_int_eq(rs_restart(conf), 0); /* conf survives a restart */
    mm = rs_info(conf, "memory", "maxmemory_policy");
    ck_assert_str_eq(mm, "noeviction");
    free(mm);
    rs_stop(conf);
}
END_TEST

/* Start a server in a child, report its port and dir, then leave by
 * exit() (atexit runs) or by _exit() (only PR_SET_PDEATHSIG helps). */
static void child_starts_and_leaves(int use_exit, int *port, char *dir)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        struct rs_server *s = rs_start(NULL);
        char msg[PATH_MAX + 32];
        int n = snprintf(msg, sizeof msg, "%d %s", s ? rs_port(s) : -1,
                         s ? rs_dir(s) : "-");
        if (write(fds[1], msg, (size_t)n + 1) < 0)
            _exit(2);
        if (use_exit)
            exit(0);
        _exit(0);
    }
    close(fds[1]);
    char buf[PATH_MAX + 32] = {0};
    ssize_t got = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);
    ck_assert_int_gt(got, 0);
    ck_assert_int_eq(sscanf(buf, "%d %s", port, dir), 2);
    ck_assert_int_gt(*port, 0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
}

START_TEST(server_dies_when_its_parent_dies_without_cleanup)
{
    int port;
    char dir[PATH_MAX + 32];
    child_starts_and_leaves(0, &port, dir);
    ck_assert_msg(port_refused_within(port, 3000),
                  "server on port %d outlived its parent", port);
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(exit_kills_unstopped_servers_and_removes_dirs)
{
    int port;
    char dir[PATH_MAX + 32];
    child_starts_and_leaves(1, &port, dir);
    ck_assert_int_eq(connect_errno(port), ECONNREFUSED);
    ck_assert(!dir_exists(dir));
}
END_TEST

static Suite *harness_suite(void)
{
    Suite *s = suite_create("harness");
    TCase *tc = tcase_create("redis_server");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, start_answers_ping_as_our_own_child);
    tcase_add_test(tc, sync_helpers_return_ints_strings_and_nil);
    tcase_add_test(tc, pause_stops_replies_and_resume_restores_them);
    tcase_add_test(tc, kill9_restart_serves_the_same_port_with_no_data);
    tcase_add_test(tc, kill9_restart_of_a_paused_server_works);
    tcase_add_test(tc, graceful_restart_serves_the_same_port);
    tcase_add_test(tc, stop_refuses_connections_and_removes_the_dir);
    tcase_add_test(tc, two_servers_get_distinct_ports_and_dirs);
    tcase_add_test(tc, extra_args_and_conf_text_are_applied);
    tcase_add_test(tc, server_dies_when_its_parent_dies_without_cleanup);
    tcase_add_test(tc, exit_kills_unstopped_servers_and_removes_dirs);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (rs_init() != 0)
        return EXIT_FAILURE;
    SRunner *sr = srunner_create(harness_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
