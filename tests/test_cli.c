/* SPDX-License-Identifier: BSD-3-Clause */
/* test_cli.c -- the hilock command against a real Redis: run passes its
 * command's status through and keeps the lock meanwhile; the documented exit
 * codes for a busy lock (-n), a wait that times out, a lost lock, a signal
 * while waiting, a missing command, an unreachable Redis and bad usage;
 * signals reach the command; status shows the holders; release --force frees
 * the lock and wakes a waiter. Then the edges: a parent's blocked signals,
 * hilock killed by SIGKILL, a command that daemonizes, hundreds of inherited
 * descriptors, contradictory options, keys that are not locks, control bytes
 * in names, a Redis that stalls or refuses, and the README's ACL recipe.
 * Then --redlock over three masters: the lock on every master while the
 * command runs, status master by master, release --force everywhere, no
 * quorum with two masters down, the password for each master, and the
 * lists that are usage errors. Last, the other topologies: a Redis Cluster
 * (--cluster: the master of the name's slot, found through a node that
 * does not own it; a forced release that wakes a waiter of a name with a
 * hash tag of its own), a Sentinel (--sentinel, --master: the master it
 * names, a dead sentinel before it; --wait-replicas without a replica),
 * and their usage errors. Then the other kinds of lock: --read runs share a
 * read-write lock, --write excludes them both ways, --permits N lets N runs
 * in at once and no more, and a permit lost under its command.
 *
 * The command under test is $HILOCK_CLI (meson passes the built tools/hilock;
 * HILOCK_README docs/cli.md, whose ACL line is run as written). Each test gets
 * its own redis-server and scratch directory; every process started here dies
 * with the test (PR_SET_PDEATHSIG) and is waited for, except what a test of
 * hilock's SIGKILL leaves behind, which it kills itself when hilock did not. */
#include "testutil.h"

#include "redis_cluster.h"
#include "redis_sentinel.h"
#include "tls_certs.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The exit codes documented in `hilock --help` and the README. */
#define EXIT_BUSY 75
#define EXIT_LOST 122
#define EXIT_TIMEDOUT 124
#define EXIT_FAILURE_ 125
#define EXIT_NOTFOUND 127

#define CHANNEL "redisson_lock__channel:{job}"

static char dir[256];   /* scratch directory of this test */
static char port[16];   /* the test server's port, as an argument */

/* Make this test's scratch directory. */
static void scratch_dir(void)
{
    snprintf(dir, sizeof(dir), "%s/cli-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void setup(void)
{
    tu_setup();
    scratch_dir();
    snprintf(port, sizeof(port), "%d", rs_port(tu_srv));
}

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw)
{
    return remove(path);
}

static void teardown(void)
{
    nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    tu_teardown();
}

/* dir/name in buf (>= 512 bytes). */
static const char *path_in(char *buf, const char *name)
{
    snprintf(buf, 512, "%s/%s", dir, name);
    return buf;
}

static bool exists(const char *name)
{
    char p[512];
    return access(path_in(p, name), F_OK) == 0;
}

/* How to start the CLI: where its stdout and stderr go (files in the
 * scratch directory; NULL: this test's own), and what the child does to
 * itself just before the exec (NULL: nothing more). */
struct spawn {
    const char *out;
    const char *err;
    void (*prepare)(void);
};

/* In the child before the exec: the signals hilock handles at their
 * defaults, unblocked, whatever this test was started with (a background
 * job of a script ignores SIGINT, for one). */
static void signals_default(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
                               SIGUSR2, SIGCHLD, SIGPIPE};
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        signal(sigs[i], SIG_DFL);
        sigaddset(&set, sigs[i]);
    }
    sigprocmask(SIG_UNBLOCK, &set, NULL);
}

/* Start $HILOCK_CLI with args (NULL-terminated) in the scratch directory,
 * as how says (NULL: defaults). It dies with this test. */
static pid_t cli_start(const char *const *args, const struct spawn *how)
{
    static const struct spawn plain = {NULL, NULL, NULL};
    const char *cli = getenv("HILOCK_CLI");
    ck_assert_msg(cli != NULL, "HILOCK_CLI is not set");
    const char *argv[32] = {cli};
    int n = 1;
    while (args[n - 1] && n < 31) {
        argv[n] = args[n - 1];
        n++;
    }
    argv[n] = NULL;
    if (!how)
        how = &plain;
    pid_t parent = getpid();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char p[512];
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent || chdir(dir) != 0)
            _exit(99);
        if (how->out && !freopen(path_in(p, how->out), "w", stdout))
            _exit(99);
        if (how->err && !freopen(path_in(p, how->err), "w", stderr))
            _exit(99);
        signals_default();
        if (how->prepare)
            how->prepare();
        execv(cli, (char *const *)argv);
        _exit(98);
    }
    return pid;
}

/* cli_start with stdout into dir/out when out is set. */
static pid_t cli_spawn(const char *const *args, const char *out)
{
    struct spawn how = {out, NULL, NULL};
    return cli_start(args, &how);
}

/* Milliseconds scaled by $CK_TIMEOUT_MULTIPLIER (valgrind runs slower). */
static int scaled(int ms)
{
    const char *m = getenv("CK_TIMEOUT_MULTIPLIER");
    int k = m ? atoi(m) : 1;
    return ms * (k > 0 ? k : 1);
}

struct child {
    pid_t pid;
    int status;
};

static bool child_gone(void *arg)
{
    struct child *c = arg;
    return waitpid(c->pid, &c->status, WNOHANG) == c->pid;
}

/* Wait for pid (running the test's loop meanwhile) and return its exit
 * status, 128+N for a signal N; fail the test after timeout_ms. */
static int cli_wait(pid_t pid, int timeout_ms)
{
    struct child c = {pid, 0};
    if (!tu_run_until(child_gone, &c, timeout_ms)) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        ck_abort_msg("hilock did not exit within %d ms", timeout_ms);
    }
    return WIFEXITED(c.status) ? WEXITSTATUS(c.status)
                               : 128 + WTERMSIG(c.status);
}

/* Run the CLI to completion (15 s at most); its exit status. */
static int cli(const char *const *args, const char *out)
{
    return cli_wait(cli_spawn(args, out), scaled(15000));
}

/* cli() with stderr into dir/err (read it with file_text("err")). */
static int cli_err(const char *const *args)
{
    struct spawn how = {NULL, "err", NULL};
    return cli_wait(cli_start(args, &how), scaled(15000));
}

/* Wait (running the loop) until dir/name exists; whether it did. */
static bool file_appears(const char *name, int timeout_ms)
{
    long long deadline = tu_now_ms() + timeout_ms;
    while (!exists(name)) {
        if (tu_now_ms() >= deadline)
            return false;
        tu_run_for(10);
    }
    return true;
}

/* dir/name's content (first 4 KiB) in a static buffer. */
static const char *file_text(const char *name)
{
    static char text[8192];
    char p[512];
    FILE *f = fopen(path_in(p, name), "r");
    size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
    text[n] = '\0';
    if (f)
        fclose(f);
    return text;
}

/* Take "job" from the test process for lease_ms; its handle. */
static struct hilock_lock *hold_job(struct hilock_client *c, uint64_t tag,
                                    uint64_t lease_ms)
{
    struct hilock_lock *l = tu_lock(c, "job", tag);
    tu_assert_status(tu_acquire(l, 0, lease_ms, NULL), 0);
    return l;
}

/* Run the loop until the lock's channel has n subscribers (a waiter). */
static bool waiters_become(long long n, int timeout_ms)
{
    long long deadline = tu_now_ms() + timeout_ms;
    while (rs_numsub(tu_srv, CHANNEL) != n) {
        if (tu_now_ms() >= deadline)
            return false;
        tu_run_for(10);
    }
    return true;
}

static long long job_exists(void)
{
    return rs_int(tu_srv, "EXISTS", "job", (char *)NULL);
}

START_TEST(run_exits_with_the_commands_status_and_frees_the_lock)
{
    const char *seven[] = {"run", "-p", port, "job", "--", "sh", "-c",
                           "exit 7", NULL};
    const char *ok[] = {"run", "-p", port, "job", "true", NULL};
    const char *killed[] = {"run", "-p", port, "job", "--", "sh", "-c",
                            "kill -KILL $$", NULL};
    ck_assert_int_eq(cli(seven, NULL), 7);
    ck_assert_int_eq(job_exists(), 0);
    ck_assert_int_eq(cli(ok, NULL), 0);
    ck_assert_int_eq(cli(killed, NULL), 128 + SIGKILL);
    ck_assert_int_eq(job_exists(), 0);
}
END_TEST

START_TEST(command_runs_while_the_lock_is_held_and_status_shows_the_holder)
{
    const char *run[] = {"run", "-p", port, "job", "--", "sh", "-c",
                         "touch READY; while [ ! -e GO ]; do sleep 0.02; done",
                         NULL};
    const char *status[] = {"status", "-p", port, "job", NULL};
    pid_t pid = cli_spawn(run, NULL);
    ck_assert(file_appears("READY", 5000));
    ck_assert_int_eq(tu_owner_fields("job"), 1);
    long long ttl = rs_int(tu_srv, "PTTL", "job", (char *)NULL);
    ck_assert_msg(ttl > 20000 && ttl <= 30000, "watchdog lease ttl %lld", ttl);

    ck_assert_int_eq(cli(status, "out"), 0);
    char holder[32];
    snprintf(holder, sizeof(holder), ":%d  holds 1\n", (int)pid);
    const char *text = file_text("out");
    ck_assert_msg(strstr(text, "job: held, ttl ") && strstr(text, holder),
                  "status printed: %s", text);
    ck_assert_msg(!strstr(text, ":rid"), "status printed a rid field");

    char p[512];
    fclose(fopen(path_in(p, "GO"), "w"));
    ck_assert_int_eq(cli_wait(pid, 5000), 0);
    ck_assert_int_eq(cli(status, "out"), 1);
    ck_assert_str_eq(file_text("out"), "job: free\n");
}
END_TEST

START_TEST(status_lists_each_holder_with_its_hold_count)
{
    struct hilock_client *c = tu_client(NULL);
    struct hilock_lock *l = hold_job(c, 9, 20000);
    tu_assert_status(tu_acquire(l, 0, 20000, NULL), 0);
    const char *status[] = {"status", "-p", port, "job", NULL};
    ck_assert_int_eq(cli(status, "out"), 0);
    char field[64], line[128];
    snprintf(line, sizeof(line), "  holder %s  holds 2\n",
             tu_field(c, 9, field));
    ck_assert_msg(strstr(file_text("out"), line), "status printed: %s",
                  file_text("out"));
    hilock_client_free(c);
}
END_TEST

START_TEST(nonblocking_run_of_a_held_lock_exits_75_at_once)
{
    struct hilock_client *c = tu_client(NULL);
    hold_job(c, 1, 20000);
    const char *run[] = {"run", "-n", "-p", port, "job", "--", "touch", "RAN",
                         NULL};
    long long t0 = tu_now_ms();
    ck_assert_int_eq(cli(run, NULL), EXIT_BUSY);
    ck_assert_msg(tu_now_ms() - t0 < 1500, "took %lld ms", tu_now_ms() - t0);
    ck_assert(!exists("RAN"));
    ck_assert_int_eq(tu_owner_fields("job"), 1);
    hilock_client_free(c);
}
END_TEST

START_TEST(wait_that_times_out_exits_124_without_running_the_command)
{
    struct hilock_client *c = tu_client(NULL);
    hold_job(c, 1, 20000);
    const char *run[] = {"run", "-w", "300", "-p", port, "job", "--", "touch",
                         "RAN", NULL};
    long long t0 = tu_now_ms();
    ck_assert_int_eq(cli(run, NULL), EXIT_TIMEDOUT);
    long long took = tu_now_ms() - t0;
    ck_assert_msg(took >= 300 && took < 3000, "took %lld ms", took);
    ck_assert(!exists("RAN"));
    hilock_client_free(c);
}
END_TEST

START_TEST(waiting_run_starts_the_command_when_the_holder_releases)
{
    struct hilock_client *c = tu_client(NULL);
    struct hilock_lock *l = hold_job(c, 1, 20000);
    const char *run[] = {"run", "-w", "10000", "-p", port, "job", "--",
                         "touch", "RAN", NULL};
    pid_t pid = cli_spawn(run, NULL);
    ck_assert(waiters_become(1, 5000));
    ck_assert(!exists("RAN"));
    long long t0 = tu_now_ms();
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert_int_eq(cli_wait(pid, 5000), 0);
    ck_assert_msg(tu_now_ms() - t0 < 2000, "woke after %lld ms",
                  tu_now_ms() - t0);
    ck_assert(exists("RAN"));
    hilock_client_free(c);
}
END_TEST

/* Run the loop until the fair queue of "job" has n entries. */
static bool queued_become(long long n, int timeout_ms)
{
    long long deadline = tu_now_ms() + timeout_ms;
    while (rs_int(tu_srv, "LLEN", "hilock_queue:{job}", (char *)NULL) != n) {
        if (tu_now_ms() >= deadline)
            return false;
        tu_run_for(10);
    }
    return true;
}

/* Twenty --fair runs queued first are killed (SIGKILL): the release hands
 * the lock past them to the live run behind, whose command starts within
 * 100 ms, not after a hand-off lease per killed run. */
START_TEST(fair_run_behind_killed_runs_starts_at_the_release)
{
    enum { DEAD = 20 };
    struct hilock_options o;
    tu_options(&o);
    o.fair = 1;
    struct hilock_client *c = tu_client(&o);
    struct hilock_lock *l = hold_job(c, 1, 30000);
    const char *wait[] = {"run", "--fair", "-p", port, "job", "--", "true",
                          NULL};
    const char *live[] = {"run", "--fair", "-w", "60000", "-p", port, "job",
                          "--", "touch", "RAN", NULL};
    pid_t dead[DEAD];
    for (int i = 0; i < DEAD; i++)
        dead[i] = cli_spawn(wait, NULL);
    ck_assert(queued_become(DEAD, scaled(10000)));
    pid_t pid = cli_spawn(live, NULL);
    ck_assert(queued_become(DEAD + 1, scaled(5000)));
    ck_assert(waiters_become(DEAD + 1, scaled(5000)));
    for (int i = 0; i < DEAD; i++) {
        kill(dead[i], SIGKILL);
        waitpid(dead[i], NULL, 0);
    }
    ck_assert(waiters_become(1, scaled(5000)));
    struct timespec t0;
    struct stat st;
    char p[512];
    clock_gettime(CLOCK_REALTIME, &t0);
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert_int_eq(cli_wait(pid, scaled(5000)), 0);
    ck_assert_int_eq(stat(path_in(p, "RAN"), &st), 0);
    long long ms = (st.st_mtim.tv_sec - t0.tv_sec) * 1000LL +
                   (st.st_mtim.tv_nsec - t0.tv_nsec) / 1000000;
    ck_assert_msg(ms <= scaled(100), "the command started %lld ms after "
                  "the release", ms);
    hilock_client_free(c);
}
END_TEST

START_TEST(sigterm_reaches_the_command_and_its_status_is_returned)
{
    const char *run[] = {"run", "-p", port, "job", "--", "sh", "-c",
                         "trap 'exit 42' TERM; touch READY; "
                         "while :; do sleep 0.05; done", NULL};
    pid_t pid = cli_spawn(run, NULL);
    ck_assert(file_appears("READY", 5000));
    kill(pid, SIGTERM);
    ck_assert_int_eq(cli_wait(pid, 5000), 42);
    ck_assert_int_eq(job_exists(), 0);
}
END_TEST

START_TEST(sigint_while_waiting_exits_130_without_running_the_command)
{
    struct hilock_client *c = tu_client(NULL);
    hold_job(c, 1, 20000);
    const char *run[] = {"run", "-p", port, "job", "--", "touch", "RAN", NULL};
    pid_t pid = cli_spawn(run, NULL);
    ck_assert(waiters_become(1, 5000));
    kill(pid, SIGINT);
    ck_assert_int_eq(cli_wait(pid, 5000), 128 + SIGINT);
    ck_assert(!exists("RAN"));
    ck_assert_int_eq(tu_owner_fields("job"), 1);
    hilock_client_free(c);
}
END_TEST

START_TEST(lock_deleted_under_a_running_command_sends_sigterm_and_exits_122)
{
    const char *run[] = {"run", "-L", "600", "-p", port, "job", "--", "sh",
                         "-c",
                         "trap 'touch TERMED; exit 0' TERM; "
                         "touch READY; while :; do sleep 0.05; done", NULL};
    pid_t pid = cli_spawn(run, NULL);
    ck_assert(file_appears("READY", 5000));
    long long ttl = rs_int(tu_srv, "PTTL", "job", (char *)NULL);
    ck_assert_msg(ttl > 0 && ttl <= 600, "watchdog lease -L: ttl %lld", ttl);
    ck_assert_int_eq(rs_int(tu_srv, "DEL", "job", (char *)NULL), 1);
    long long t0 = tu_now_ms();
    ck_assert_int_eq(cli_wait(pid, 5000), EXIT_LOST);
    ck_assert_msg(tu_now_ms() - t0 < 2000, "noticed after %lld ms",
                  tu_now_ms() - t0);
    ck_assert(exists("TERMED"));
}
END_TEST

START_TEST(lock_found_gone_at_the_release_exits_122)
{
    const char *run[] = {"run", "-p", port, "job", "--", "sh", "-c",
                         "touch READY; while [ ! -e GO ]; do sleep 0.02; done",
                         NULL};
    pid_t pid = cli_spawn(run, NULL);
    ck_assert(file_appears("READY", 5000));
    /* The watchdog (30 s lease) renews only 10 s from now: the loss is
     * first seen by the release. */
    ck_assert_int_eq(rs_int(tu_srv, "DEL", "job", (char *)NULL), 1);
    char p[512];
    fclose(fopen(path_in(p, "GO"), "w"));
    ck_assert_int_eq(cli_wait(pid, 5000), EXIT_LOST);
}
END_TEST

START_TEST(fixed_lease_running_out_under_the_command_counts_as_lost)
{
    const char *run[] = {"run", "-l", "500", "-p", port, "job", "--", "sh",
                         "-c",
                         "trap 'touch TERMED; exit 0' TERM; "
                         "touch READY; while :; do sleep 0.05; done", NULL};
    pid_t pid = cli_spawn(run, NULL);
    ck_assert(file_appears("READY", 5000));
    ck_assert_int_eq(cli_wait(pid, 5000), EXIT_LOST);
    ck_assert(exists("TERMED"));
}
END_TEST

START_TEST(release_force_frees_the_lock_and_wakes_a_waiter)
{
    struct hilock_client *a = tu_client(NULL), *b = tu_client(NULL);
    hold_job(a, 1, 30000);
    struct hilock_lock *lb = tu_lock(b, "job", 1);
    struct tu_result got = {0};
    ck_assert_int_eq(hilock_lock_acquire(lb, 10000, 30000, tu_record, &got), 0);
    ck_assert(waiters_become(1, 5000));

    const char *noforce[] = {"release", "-p", port, "job", NULL};
    ck_assert_int_eq(cli(noforce, NULL), EXIT_FAILURE_);
    ck_assert_int_eq(tu_owner_fields("job"), 1);

    const char *force[] = {"release", "--force", "-p", port, "job", NULL};
    long long t0 = tu_now_ms();
    ck_assert_int_eq(cli(force, "out"), 0);
    ck_assert_str_eq(file_text("out"), "job: released; waiters notified\n");
    ck_assert(tu_run_until_count(&got.calls, 1, 3000));
    tu_assert_status(got.status, 0);
    ck_assert_msg(tu_now_ms() - t0 < 2000, "waiter woke after %lld ms",
                  tu_now_ms() - t0);
    tu_assert_status(tu_release(lb, NULL), 0);
    ck_assert_int_eq(cli(force, "out"), 1);
    ck_assert_str_eq(file_text("out"), "job: was free\n");
    hilock_client_free(a);
    hilock_client_free(b);
}
END_TEST

START_TEST(release_force_leaves_a_key_of_another_type_alone)
{
    ck_assert_int_eq(rs_int(tu_srv, "RPUSH", "job", "x", (char *)NULL), 1);
    const char *force[] = {"release", "--force", "-p", port, "job", NULL};
    const char *status[] = {"status", "-p", port, "job", NULL};
    ck_assert_int_eq(cli(force, NULL), EXIT_FAILURE_);
    ck_assert_int_eq(cli(status, NULL), EXIT_FAILURE_);
    ck_assert_int_eq(job_exists(), 1);
}
END_TEST

START_TEST(missing_command_exits_127_and_frees_the_lock)
{
    const char *run[] = {"run", "-p", port, "job", "--",
                         "/nonexistent/hilock-test-cmd", NULL};
    ck_assert_int_eq(cli(run, NULL), EXIT_NOTFOUND);
    ck_assert_int_eq(job_exists(), 0);
}
END_TEST

START_TEST(unreachable_redis_exits_125_without_running_the_command)
{
    char nowhere[16];
    snprintf(nowhere, sizeof(nowhere), "%d", tu_dead_port());
    const char *run[] = {"run", "-p", nowhere, "job", "--", "touch", "RAN",
                         NULL};
    const char *status[] = {"status", "-p", nowhere, "job", NULL};
    ck_assert_int_eq(cli(run, NULL), EXIT_FAILURE_);
    ck_assert(!exists("RAN"));
    ck_assert_int_eq(cli(status, NULL), EXIT_FAILURE_);
}
END_TEST

START_TEST(usage_errors_exit_125_and_help_exits_0)
{
    const char *no_cmd[] = {"run", "-p", port, "job", NULL};
    const char *bad_wait[] = {"run", "-w", "soon", "job", "true", NULL};
    const char *bad_sub[] = {"frobnicate", NULL};
    const char *fair_read[] = {"run", "--fair", "--read", "-p", port, "job",
                               "true", NULL};
    const char *help[] = {"--help", NULL};
    const char *tls_detail[] = {"run", "-p", port, "--cacert", "ca.crt",
                                "job", "true", NULL};
    ck_assert_int_eq(cli(tls_detail, NULL), EXIT_FAILURE_);
    ck_assert_int_eq(cli(no_cmd, NULL), EXIT_FAILURE_);
    ck_assert_int_eq(cli(fair_read, NULL), EXIT_FAILURE_);
    ck_assert_int_eq(cli(bad_wait, NULL), EXIT_FAILURE_);
    ck_assert_int_eq(cli(bad_sub, NULL), EXIT_FAILURE_);
    ck_assert_int_eq(cli(help, "out"), 0);
    ck_assert_ptr_nonnull(strstr(file_text("out"), "exit status"));
    ck_assert_int_eq(job_exists(), 0);
}
END_TEST

/* ---- trust at the edges ------------------------------------------------- */

static void touch(const char *name)
{
    char p[512];
    FILE *f = fopen(path_in(p, name), "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
}

/* Whether process pid is gone or a zombie. */
static bool pid_dead(pid_t pid)
{
    char p[64], stat[512];
    snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(p, "r");
    if (!f)
        return true;
    size_t n = fread(stat, 1, sizeof(stat) - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *end = strrchr(stat, ')');
    return !end || end[1] != ' ' || end[2] == 'Z' || end[2] == 'X';
}

/* Run the loop until process pid is dead; whether it died in time. */
static bool pid_dies(pid_t pid, int timeout_ms)
{
    long long deadline = tu_now_ms() + timeout_ms;
    while (!pid_dead(pid)) {
        if (tu_now_ms() >= deadline)
            return false;
        tu_run_for(10);
    }
    return true;
}

static void block_and_ignore_sigchld_and_sigterm(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGCHLD, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
}

START_TEST(run_started_with_sigchld_blocked_and_ignored_sees_the_command_exit)
{
    const char *run[] = {"run", "-p", port, "job", "--", "sh", "-c", "exit 3",
                         NULL};
    struct spawn how = {NULL, NULL, block_and_ignore_sigchld_and_sigterm};
    ck_assert_int_eq(cli_wait(cli_start(run, &how), scaled(5000)), 3);
    ck_assert_int_eq(job_exists(), 0);
}
END_TEST

START_TEST(sigkill_of_hilock_kills_a_command_that_ignores_sigterm)
{
    /* The command and its child both ignore SIGTERM. */
    const char *run[] = {"run", "-p", port, "job", "--", "sh", "-c",
                         "trap '' TERM; sleep 60 & echo $$ $! > PIDS.tmp; "
                         "mv PIDS.tmp PIDS; wait", NULL};
    pid_t pid = cli_spawn(run, NULL);
    ck_assert(file_appears("PIDS", scaled(5000)));
    int cmd = 0, bg = 0;
    ck_assert_int_eq(sscanf(file_text("PIDS"), "%d %d", &cmd, &bg), 2);
    kill(pid, SIGKILL);
    ck_assert_int_eq(cli_wait(pid, scaled(5000)), 128 + SIGKILL);
    bool dead = pid_dies(cmd, scaled(3000)) && pid_dies(bg, scaled(3000));
    if (!dead) {
        kill(cmd, SIGKILL);
        kill(bg, SIGKILL);
    }
    ck_assert_msg(dead, "the command outlived hilock run's SIGKILL");
}
END_TEST

START_TEST(lock_is_held_until_a_daemonized_descendant_exits)
{
    /* A double fork: the inner subshell outlives the command. It waits until
     * the command ($$ in a subshell) has been reaped, says ORPHAN and works
     * until GO (10 s at most, should the test fail). */
    const char *run[] = {"run", "-p", port, "job", "--", "sh", "-c",
                         "( ( while kill -0 $$ 2>/dev/null; do sleep 0.01; "
                         "done; touch ORPHAN; i=0; while [ ! -e GO ] && "
                         "[ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done; "
                         "touch DONE ) & ); exit 5", NULL};
    pid_t pid = cli_spawn(run, NULL);
    bool orphan = file_appears("ORPHAN", scaled(5000));
    struct child c = {pid, 0};
    bool hilock_gone = child_gone(&c);
    long long held = job_exists();
    touch("GO");
    ck_assert(orphan);
    ck_assert_msg(!hilock_gone, "hilock exited while a descendant worked");
    ck_assert_int_eq(held, 1);
    ck_assert_int_eq(cli_wait(pid, scaled(5000)), 5);
    ck_assert(exists("DONE"));
    ck_assert_int_eq(job_exists(), 0);
}
END_TEST

#define FD_FIRST 500
#define FD_COUNT 300

/* In the child before the exec: descriptors FD_FIRST.. open, inheritable. */
static void open_many_descriptors(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
        rl.rlim_cur < FD_FIRST + FD_COUNT + 64) {
        rl.rlim_cur = FD_FIRST + FD_COUNT + 64;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    int fd = open("/dev/null", O_RDONLY);
    for (int i = FD_FIRST; i < FD_FIRST + FD_COUNT; i++)
        dup2(fd, i);
    close(fd);
}

START_TEST(command_inherits_every_descriptor_hilock_was_given)
{
    const char *run[] = {"run", "-p", port, "job", "--", "sh", "-c",
                         "ls /proc/self/fd > FDS", NULL};
    struct spawn how = {NULL, NULL, open_many_descriptors};
    ck_assert_int_eq(cli_wait(cli_start(run, &how), scaled(5000)), 0);
    int seen = 0;
    for (const char *p = file_text("FDS"); *p; p = strchr(p, '\n') + 1) {
        int fd = atoi(p);
        seen += fd >= FD_FIRST && fd < FD_FIRST + FD_COUNT;
        if (!strchr(p, '\n'))
            break;
    }
    ck_assert_int_eq(seen, FD_COUNT);
}
END_TEST

START_TEST(wait_of_zero_that_misses_the_lock_exits_124)
{
    struct hilock_client *c = tu_client(NULL);
    hold_job(c, 1, 20000);
    const char *run[] = {"run", "-w", "0", "-p", port, "job", "--", "touch",
                         "RAN", NULL};
    ck_assert_int_eq(cli_err(run), EXIT_TIMEDOUT);
    ck_assert_ptr_nonnull(strstr(file_text("err"), "within 0 ms"));
    ck_assert(!exists("RAN"));
    hilock_client_free(c);
}
END_TEST

START_TEST(lease_and_watchdog_lease_together_are_a_usage_error)
{
    const char *run[] = {"run", "-l", "5000", "-L", "5000", "-p", port, "job",
                         "--", "touch", "RAN", NULL};
    ck_assert_int_eq(cli_err(run), EXIT_FAILURE_);
    ck_assert_msg(strstr(file_text("err"), "-l and -L"), "said: %s",
                  file_text("err"));
    ck_assert(!exists("RAN"));
}
END_TEST

START_TEST(watchdog_lease_below_100_ms_is_a_usage_error)
{
    const char *run[] = {"run", "-L", "99", "-p", port, "job", "--", "touch",
                         "RAN", NULL};
    ck_assert_int_eq(cli_err(run), EXIT_FAILURE_);
    ck_assert_msg(strstr(file_text("err"), "at least 100 ms"), "said: %s",
                  file_text("err"));
    ck_assert(!exists("RAN"));
}
END_TEST

/* A lease of 0 is no fixed lease (the watchdog is -L), and a number is
 * digits only: " 5" and "+5" are typos, not 5. */
START_TEST(lease_of_zero_or_not_plain_digits_is_a_usage_error)
{
    static const char *const bad[][3] = {
        {"-l", "0", "-l 0"},
        {"-l", " 5", "' 5'"},
        {"-l", "+5", "'+5'"},
        {"-w", "+5", "'+5'"},
        {"-L", " 500", "' 500'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *run[] = {"run", bad[i][0], bad[i][1], "-p", port, "job",
                             "--", "touch", "RAN", NULL};
        ck_assert_int_eq(cli_err(run), EXIT_FAILURE_);
        ck_assert_msg(strstr(file_text("err"), bad[i][2]), "said: %s",
                      file_text("err"));
        ck_assert(!exists("RAN"));
    }
    ck_assert_int_eq(job_exists(), 0);
}
END_TEST

START_TEST(option_after_the_name_is_a_usage_error)
{
    const char *wait[] = {"run", "-p", port, "job", "-w", "5", "--", "touch",
                          "RAN", NULL};
    const char *nb[] = {"run", "-p", port, "job", "-n", "touch", "RAN", NULL};
    const char *dashed[] = {"run", "-p", port, "job", "--", "-x", NULL};
    ck_assert_int_eq(cli_err(wait), EXIT_FAILURE_);
    ck_assert_msg(strstr(file_text("err"), "'-w' after NAME"), "said: %s",
                  file_text("err"));
    ck_assert_int_eq(cli_err(nb), EXIT_FAILURE_);
    ck_assert(!exists("RAN"));
    /* After --, a word with a dash is the command. */
    ck_assert_int_eq(cli_err(dashed), EXIT_NOTFOUND);
}
END_TEST

START_TEST(empty_host_is_a_usage_error_that_says_so)
{
    const char *run[] = {"run", "-H", "", "-p", port, "job", "true", NULL};
    const char *status[] = {"status", "-H", "", "-p", port, "job", NULL};
    ck_assert_int_eq(cli_err(run), EXIT_FAILURE_);
    const char *text = file_text("err");
    ck_assert_msg(strstr(text, "empty host") && !strstr(text, "setup failed"),
                  "said: %s", text);
    ck_assert_int_eq(cli_err(status), EXIT_FAILURE_);
    ck_assert_msg(strstr(file_text("err"), "empty host"), "said: %s",
                  file_text("err"));
}
END_TEST

START_TEST(user_without_password_is_a_usage_error)
{
    const char *run[] = {"run", "-u", "someone", "-p", port, "job", "true",
                         NULL};
    const char *status[] = {"status", "-u", "someone", "-p", port, "job",
                            NULL};
    ck_assert_int_eq(cli_err(run), EXIT_FAILURE_);
    const char *text = file_text("err");
    ck_assert_msg(strstr(text, "-u needs a password") &&
                  !strstr(text, "setup failed"), "said: %s", text);
    ck_assert_int_eq(cli_err(status), EXIT_FAILURE_);
    ck_assert_msg(strstr(file_text("err"), "-u needs a password"),
                  "said: %s", file_text("err"));
}
END_TEST

START_TEST(status_and_release_force_refuse_a_hash_that_is_not_a_lock)
{
    const char *status[] = {"status", "-p", port, "job", NULL};
    const char *force[] = {"release", "--force", "-p", port, "job", NULL};
    /* An owner field of the right shape does not make the other one fit. */
    ck_assert_int_eq(rs_int(tu_srv, "HSET", "job",
                            "0123abcd-0123-4567-89ab-0123456789ab:7", "1",
                            "name", "x", (char *)NULL), 2);
    ck_assert_int_eq(cli_err(status), EXIT_FAILURE_);
    ck_assert_msg(strstr(file_text("err"), "not a lock"), "said: %s",
                  file_text("err"));
    ck_assert_int_eq(cli_err(force), EXIT_FAILURE_);
    ck_assert_msg(strstr(file_text("err"), "not a lock"), "said: %s",
                  file_text("err"));
    ck_assert_int_eq(job_exists(), 1);
}
END_TEST

START_TEST(names_and_fields_are_printed_with_control_bytes_escaped)
{
    struct hilock_client *c = tu_client(NULL);
    struct hilock_lock *l = tu_lock(c, "a\033[2Jb", 1);
    tu_assert_status(tu_acquire(l, 0, 20000, NULL), 0);
    const char *held[] = {"status", "-p", port, "a\033[2Jb", NULL};
    ck_assert_int_eq(cli(held, "out"), 0);
    ck_assert_msg(strstr(file_text("out"), "a\\x1b[2Jb: held") &&
                  !strchr(file_text("out"), '\033'), "printed: %s",
                  file_text("out"));
    ck_assert_int_eq(rs_int(tu_srv, "HSET", "odd", "\007x", "1", (char *)NULL),
                     1);
    const char *odd[] = {"status", "-p", port, "odd", NULL};
    ck_assert_int_eq(cli_err(odd), EXIT_FAILURE_);
    ck_assert_msg(strstr(file_text("err"), "\\x07x") &&
                  !strchr(file_text("err"), '\007'), "said: %s",
                  file_text("err"));
    hilock_client_free(c);
}
END_TEST

START_TEST(lock_lost_while_redis_stalls_is_released_on_the_way_out)
{
    /* Redis stops answering: hilock declares the lock lost before its lease
     * ends in Redis, and the renewals it sent meanwhile are applied once
     * Redis answers again. The release on the way out must undo them. */
    char lease[16];
    snprintf(lease, sizeof(lease), "%d", scaled(3000));
    const char *run[] = {"run", "-L", lease, "-p", port, "job", "--", "sh",
                         "-c",
                         "trap 'touch TERMED; exit 0' TERM; "
                         "touch READY; while :; do sleep 0.05; done", NULL};
    pid_t pid = cli_spawn(run, NULL);
    ck_assert(file_appears("READY", scaled(5000)));
    ck_assert_int_eq(rs_pause(tu_srv), 0);
    bool termed = file_appears("TERMED", scaled(5000));
    ck_assert_int_eq(rs_resume(tu_srv), 0);
    ck_assert(termed);
    ck_assert_int_eq(cli_wait(pid, scaled(5000)), EXIT_LOST);
    ck_assert_int_eq(job_exists(), 0);
}
END_TEST

START_TEST(wait_without_bound_outlasts_a_redis_stall)
{
    /* The holder's lease runs out while Redis is frozen. A second waiter in
     * this process, with a longer request timeout than hilock's 2 s, gives
     * up after hilock would have: a library that ends a wait on a request
     * timeout has ended hilock's by then. Then Redis answers again. */
    struct hilock_client *a = tu_client(NULL);
    hold_job(a, 1, 1000);
    const char *run[] = {"run", "-p", port, "job", "--", "touch", "RAN",
                         NULL};
    struct spawn how = {NULL, "err", NULL};
    pid_t pid = cli_start(run, &how);
    ck_assert(waiters_become(1, scaled(5000)));
    struct hilock_options opts;
    tu_options(&opts);
    opts.request_timeout_ms = 2500;
    struct hilock_client *b = tu_client(&opts);
    struct hilock_lock *lb = tu_lock(b, "job", 2);
    struct tu_result got = {0};
    ck_assert_int_eq(hilock_lock_acquire(lb, 4000, 20000, tu_record, &got),
                     0);
    ck_assert(waiters_become(2, scaled(5000)));
    ck_assert_int_eq(rs_pause(tu_srv), 0);
    bool gave_up = tu_run_until_count(&got.calls, 1, scaled(8000));
    ck_assert_int_eq(rs_resume(tu_srv), 0);
    ck_assert(gave_up);
    ck_assert_int_eq(cli_wait(pid, scaled(5000)), 0);
    ck_assert(exists("RAN"));
    ck_assert_msg(!strstr(file_text("err"), "within"), "said: %s",
                  file_text("err"));
    hilock_client_free(b);
    hilock_client_free(a);
}
END_TEST

START_TEST(redis_error_text_reaches_stderr)
{
    /* Only "someone" can log in, and not with that password. */
    static const char *const setup[][5] = {
        {"ACL", "SETUSER", "someone", "on", ">right"},
        {"ACL", "SETUSER", "default", "off", NULL}};
    for (size_t i = 0; i < 2; i++) {
        redisReply *r = rs_command_argv(tu_srv, setup[i][4] ? 5 : 4,
                                        setup[i], NULL);
        ck_assert(r && r->type == REDIS_REPLY_STATUS);
        freeReplyObject(r);
    }
    const char *run[] = {"run", "-u", "someone", "-a", "wrong", "-p", port,
                         "job", "--", "touch", "RAN", NULL};
    ck_assert_int_eq(cli_err(run), EXIT_FAILURE_);
    const char *text = file_text("err");
    ck_assert_msg(strstr(text, "hilock: redis: ") && strstr(text, "WRONGPASS"),
                  "said: %s", text);
    ck_assert(!exists("RAN"));
}
END_TEST

/* The README's ACL SETUSER line split into words in argv (at most max);
 * the word count. The line is run as written. */
static int readme_acl_line(char *line, size_t size, const char **argv,
                           int max)
{
    const char *path = getenv("HILOCK_README");
    ck_assert_msg(path != NULL, "HILOCK_README is not set");
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    bool found = false;
    while (!found && fgets(line, (int)size, f))
        found = strncmp(line, "ACL SETUSER ", 12) == 0;
    fclose(f);
    ck_assert_msg(found, "no ACL SETUSER line in the README");
    int n = 0;
    for (char *w = strtok(line, " \n"); w && n < max; w = strtok(NULL, " \n"))
        argv[n++] = w;
    return n;
}

/* The README's ACL user (with words appended: NULL-terminated) made on the
 * test server; its name and password in user and pass (64 bytes each). */
static void acl_user_from_readme(const char *const *more, char *user,
                                 char *pass)
{
    char line[1024];
    const char *argv[64];
    int n = readme_acl_line(line, sizeof(line), argv, 56);
    ck_assert_int_ge(n, 4);
    snprintf(user, 64, "%s", argv[2]);
    pass[0] = '\0';
    for (int i = 3; i < n; i++)
        if (argv[i][0] == '>')
            snprintf(pass, 64, "%s", argv[i] + 1);
    ck_assert_msg(pass[0], "the README's ACL user has no >password");
    while (more && *more)
        argv[n++] = *more++;
    redisReply *r = rs_command_argv(tu_srv, n, argv, NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert_msg(r->type == REDIS_REPLY_STATUS, "ACL SETUSER: %s", r->str);
    freeReplyObject(r);
}

START_TEST(readme_acl_recipe_lets_run_take_and_wait_for_a_lock)
{
    char user[64], pass[64];
    acl_user_from_readme(NULL, user, pass);
    const char *run[] = {"run", "-u", user, "-a", pass, "-p", port, "job",
                         "--", "true", NULL};
    ck_assert_int_eq(cli_err(run), 0);
    ck_assert_int_eq(job_exists(), 0);

    struct hilock_client *c = tu_client(NULL);
    struct hilock_lock *l = hold_job(c, 1, 20000);
    const char *wait[] = {"run", "-u", user, "-a", pass, "-w", "10000", "-p",
                          port, "job", "--", "touch", "RAN", NULL};
    const char *status[] = {"status", "-u", user, "-a", pass, "-p", port,
                            "job", NULL};
    pid_t pid = cli_spawn(wait, NULL);
    ck_assert(waiters_become(1, scaled(5000)));
    ck_assert_int_eq(cli(status, NULL), 0);
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert_int_eq(cli_wait(pid, scaled(5000)), 0);
    ck_assert(exists("RAN"));
    ck_assert_int_eq(job_exists(), 0);
    hilock_client_free(c);
}
END_TEST

START_TEST(release_that_redis_refuses_fails_loudly)
{
    /* Without the channel, the release script's PUBLISH is denied. */
    static const char *const nochannels[] = {"resetchannels", NULL};
    char user[64], pass[64];
    acl_user_from_readme(nochannels, user, pass);
    const char *run[] = {"run", "-u", user, "-a", pass, "-p", port, "job",
                         "--", "true", NULL};
    ck_assert_int_eq(cli_err(run), EXIT_FAILURE_);
    ck_assert_msg(strstr(file_text("err"), "releasing job"), "said: %s",
                  file_text("err"));
}
END_TEST

/* Run the loop until channel has n subscribers; whether it did. */
static bool subscribers_become(const char *channel, long long n,
                               int timeout_ms)
{
    long long deadline = tu_now_ms() + timeout_ms;
    while (rs_numsub(tu_srv, channel) != n) {
        if (tu_now_ms() >= deadline)
            return false;
        tu_run_for(10);
    }
    return true;
}

/* A library client as user (password pass), fair or with fencing tokens
 * as asked. */
static struct hilock_client *acl_client(const char *user, const char *pass,
                                        int fair, int fencing)
{
    struct hilock_options o;
    tu_options(&o);
    o.username = user;
    o.password = pass;
    o.fair = fair;
    o.fencing = fencing;
    return tu_client(&o);
}

/* The README's ACL user runs every kind: --read, --write (a waiting
 * writer woken by a reader's release), --permits, and through the
 * library a fair lock handed from one owner to the next and a lock with
 * fencing tokens. */
START_TEST(readme_acl_recipe_covers_every_kind)
{
    char user[64], pass[64];
    acl_user_from_readme(NULL, user, pass);
    const char *read[] = {"run", "-u", user, "-a", pass, "-p", port,
                          "--read", "rw", "--", "true", NULL};
    const char *write[] = {"run", "-u", user, "-a", pass, "-p", port,
                           "--write", "rw", "--", "true", NULL};
    const char *permits[] = {"run", "-u", user, "-a", pass, "-p", port,
                             "--permits", "2", "sem", "--", "true", NULL};
    ck_assert_int_eq(cli_err(read), 0);
    ck_assert_int_eq(cli_err(write), 0);
    ck_assert_int_eq(cli_err(permits), 0);
    ck_assert_int_eq(tu_exists("rw"), 0);
    ck_assert_int_eq(rs_int(tu_srv, "GET", "sem", (char *)NULL), 2);
    ck_assert_int_eq(tu_exists("{sem}:timeout"), 0);

    struct hilock_client *c = tu_client(NULL);
    struct hilock_lock *r = NULL;
    tu_assert_status(hilock_rwlock_new(c, "rw", 2, 1, HILOCK_READ, &r), 0);
    tu_assert_status(tu_acquire(r, 0, 20000, NULL), 0);
    const char *wait[] = {"run", "-u", user, "-a", pass, "-w", "10000",
                          "-p", port, "--write", "rw", "--", "touch", "RAN",
                          NULL};
    pid_t pid = cli_spawn(wait, NULL);
    ck_assert(subscribers_become("redisson_rwlock:{rw}", 1, scaled(5000)));
    tu_assert_status(tu_release(r, NULL), 0);
    ck_assert_int_eq(cli_wait(pid, scaled(5000)), 0);
    ck_assert(exists("RAN"));
    hilock_client_free(c);

    struct hilock_client *fair = acl_client(user, pass, 1, 0);
    struct hilock_lock *f1 = tu_lock(fair, "fj", 1), *f2 = tu_lock(fair, "fj", 2);
    tu_assert_status(tu_acquire(f1, 0, 20000, NULL), 0);
    struct tu_result next = {0};
    tu_assert_status(hilock_lock_acquire(f2, 10000, 20000, tu_record, &next),
                     0);
    ck_assert(tu_run_until_redis(1, scaled(5000), "LLEN", "hilock_queue:{fj}",
                                 (char *)NULL));
    tu_assert_status(tu_release(f1, NULL), 0);
    ck_assert(tu_run_until_count(&next.calls, 1, scaled(5000)));
    tu_assert_status(next.status, 0);
    tu_assert_status(tu_release(f2, NULL), 0);
    ck_assert_int_eq(tu_exists("fj"), 0);
    hilock_client_free(fair);

    struct hilock_client *fenced = acl_client(user, pass, 0, 1);
    struct hilock_lock *t = tu_lock(fenced, "tj", 1);
    tu_assert_status(tu_acquire(t, 0, 20000, NULL), 0);
    ck_assert_int_gt(hilock_lock_token(t), 0);
    tu_assert_status(tu_release(t, NULL), 0);
    ck_assert_int_eq(tu_exists("tj"), 0);
    hilock_client_free(fenced);
}
END_TEST

/* The type and content of key as one string (NULL: no key). */
static char *key_state(const char *key)
{
    static const char script[] =
        "local t = redis.call('type', KEYS[1]).ok\n"
        "if t == 'hash' then\n"
        "  return t .. ' ' .. table.concat(redis.call('hgetall', KEYS[1]), ' ')\n"
        "elseif t == 'zset' then\n"
        "  return t .. ' ' .. table.concat(redis.call('zrange', KEYS[1], 0, -1), ' ')\n"
        "elseif t == 'none' then return nil end\n"
        "return t .. ' ' .. redis.call('get', KEYS[1])\n";
    return rs_str(tu_srv, "EVAL", script, "1", key, (char *)NULL);
}

/* Release l (of user's client, whose ACL has no channel): refused as
 * HILOCK_ENOPERM, with key and its companion other (NULL: none) as they
 * were. */
static int lock_release_of(void *l)
{
    return tu_release(l, NULL);
}

static int sem_release_of(void *s)
{
    return tu_sem_release(s, 1, NULL);
}

static int permit_release_of(void *p)
{
    return tu_permit_release(p, NULL);
}

static void release_refused(int (*release)(void *), void *l,
                            const char *key, const char *other)
{
    char *k0 = key_state(key), *o0 = other ? key_state(other) : NULL;
    ck_assert_ptr_nonnull(k0);
    tu_assert_status(release(l), HILOCK_ENOPERM);
    char *k1 = key_state(key), *o1 = other ? key_state(other) : NULL;
    ck_assert_ptr_nonnull(k1);
    ck_assert_msg(strcmp(k0, k1) == 0, "%s: %s became %s", key, k0, k1);
    ck_assert(!other || (o0 && o1 && strcmp(o0, o1) == 0));
    free(k0);
    free(k1);
    free(o0);
    free(o1);
}

/* A release whose PUBLISH the ACL refuses changes nothing, for every
 * kind: the holder keeps what it held (its lease runs out as usual), and
 * the call says HILOCK_ENOPERM. */
START_TEST(a_release_that_the_acl_refuses_changes_nothing)
{
    static const char *const nochannels[] = {"resetchannels", NULL};
    char user[64], pass[64];
    acl_user_from_readme(nochannels, user, pass);
    const char *read[] = {"run", "-u", user, "-a", pass, "-p", port,
                          "--read", "rw", "--", "true", NULL};
    ck_assert_int_eq(cli_err(read), EXIT_FAILURE_);
    ck_assert_int_eq(tu_exists("rw"), 1);
    ck_assert_msg(strstr(file_text("err"), "releasing rw"), "said: %s",
                  file_text("err"));

    struct hilock_client *c = acl_client(user, pass, 0, 0);
    struct hilock_lock *r = NULL, *w = NULL;
    struct hilock_semaphore *s = NULL;
    struct hilock_permit *p = NULL;
    tu_assert_status(hilock_rwlock_new(c, "rd", 2, 1, HILOCK_READ, &r), 0);
    tu_assert_status(tu_acquire(r, 0, 20000, NULL), 0);
    release_refused(lock_release_of, r, "rd", "hilock_rid:{rd}");
    tu_assert_status(hilock_rwlock_new(c, "wr", 2, 1, HILOCK_WRITE, &w), 0);
    tu_assert_status(tu_acquire(w, 0, 20000, NULL), 0);
    release_refused(lock_release_of, w, "wr", "hilock_rid:{wr}");

    rs_int(tu_srv, "SET", "sm", "3", (char *)NULL);
    tu_assert_status(hilock_semaphore_new(c, "sm", 2, &s), 0);
    tu_assert_status(tu_sem_acquire(s, 1, 0, NULL), 0);
    release_refused(sem_release_of, s, "sm", NULL);
    ck_assert_int_eq(rs_int(tu_srv, "GET", "sm", (char *)NULL), 2);
    tu_assert_status(hilock_permit_new(c, "sm", 2, &p), 0);
    tu_assert_status(tu_permit_acquire(p, 0, 20000, NULL), 0);
    release_refused(permit_release_of, p, "sm", "{sm}:timeout");
    hilock_client_free(c);

    /* a lock released by its script (no fast path) */
    struct hilock_options o;
    tu_options(&o);
    o.username = user;
    o.password = pass;
    o.scripts_only = 1;
    struct hilock_client *sc = tu_client(&o);
    struct hilock_lock *l = tu_lock(sc, "lk", 1);
    tu_assert_status(tu_acquire(l, 0, 20000, NULL), 0);
    release_refused(lock_release_of, l, "lk", NULL);
    hilock_client_free(sc);
}
END_TEST

/* ---- several masters (--redlock) ---------------------------------------- */

#define NMASTERS 3

static struct rs_server *masters[NMASTERS];
static char masters_arg[128];  /* "127.0.0.1:P,127.0.0.1:P,127.0.0.1:P" */

/* A scratch directory and three masters, no single server (tu_srv NULL). */
static void setup_redlock(void)
{
    size_t len = 0;
    tu_setup_no_redis();
    scratch_dir();
    for (int i = 0; i < NMASTERS; i++) {
        masters[i] = rs_start(NULL);
        ck_assert_msg(masters[i] != NULL, "could not start redis-server");
        len += (size_t)snprintf(masters_arg + len, sizeof(masters_arg) - len,
                                "%s127.0.0.1:%d", i ? "," : "",
                                rs_port(masters[i]));
    }
}

static void teardown_redlock(void)
{
    for (int i = 0; i < NMASTERS; i++) {
        rs_stop(masters[i]);
        masters[i] = NULL;
    }
    teardown();
}

/* Stop master i (it no longer answers). */
static void master_stop(int i)
{
    rs_stop(masters[i]);
    masters[i] = NULL;
}

/* How many masters have the key "job". */
static int masters_with_job(void)
{
    int n = 0;
    for (int i = 0; i < NMASTERS; i++)
        n += masters[i] &&
             rs_int(masters[i], "EXISTS", "job", (char *)NULL) == 1;
    return n;
}

/* Run the loop until n masters have "job"; whether they did in time. */
static bool masters_with_job_become(int n, int timeout_ms)
{
    long long deadline = tu_now_ms() + timeout_ms;
    while (masters_with_job() != n) {
        if (tu_now_ms() >= deadline)
            return false;
        tu_run_for(10);
    }
    return true;
}

/* Run the loop until master i's channel of "job" has n subscribers. */
static bool master_waiters_become(int i, long long n, int timeout_ms)
{
    long long deadline = tu_now_ms() + timeout_ms;
    while (rs_numsub(masters[i], CHANNEL) != n) {
        if (tu_now_ms() >= deadline)
            return false;
        tu_run_for(10);
    }
    return true;
}

/* A client over the three masters. */
static struct hilock_client *redlock_client(void)
{
    struct hilock_endpoint eps[NMASTERS];
    struct hilock_options o;
    for (int i = 0; i < NMASTERS; i++)
        eps[i] = (struct hilock_endpoint){"127.0.0.1", rs_port(masters[i]),
                                          NULL};
    tu_options(&o);
    o.topology = HILOCK_TOPOLOGY_REDLOCK;
    o.redlock.masters = eps;
    o.redlock.count = NMASTERS;
    return tu_client(&o);
}

/* "  127.0.0.1:<port of master i>: <what>" in a static buffer. */
static const char *master_line(int i, const char *what)
{
    static char line[128];
    snprintf(line, sizeof(line), "  127.0.0.1:%d: %s", rs_port(masters[i]),
             what);
    return line;
}

START_TEST(redlock_run_holds_the_lock_on_every_master_while_the_command_runs)
{
    const char *run[] = {"run", "--redlock", masters_arg, "job", "--", "sh",
                         "-c",
                         "touch READY; while [ ! -e GO ]; do sleep 0.02; done",
                         NULL};
    pid_t pid = cli_spawn(run, NULL);
    ck_assert(file_appears("READY", scaled(5000)));
    int held = masters_with_job();
    long long ttl = rs_int(masters[2], "PTTL", "job", (char *)NULL);
    touch("GO");
    ck_assert_int_eq(held, NMASTERS);
    ck_assert_msg(ttl > 20000 && ttl <= 30000, "watchdog lease ttl %lld", ttl);
    ck_assert_int_eq(cli_wait(pid, scaled(5000)), 0);
    ck_assert_int_eq(masters_with_job(), 0);
    const char *seven[] = {"run", "--redlock", masters_arg, "job", "--", "sh",
                           "-c", "exit 7", NULL};
    ck_assert_int_eq(cli(seven, NULL), 7);
    ck_assert_int_eq(masters_with_job(), 0);
}
END_TEST

START_TEST(redlock_status_shows_each_master_and_calls_a_majority_held)
{
    struct hilock_client *c = redlock_client();
    struct hilock_lock *l = tu_lock(c, "job", 9);
    tu_assert_status(tu_acquire(l, 0, 20000, NULL), 0);
    /* A majority answered; the third master's grant lands too. */
    ck_assert(masters_with_job_become(NMASTERS, scaled(2000)));
    const char *status[] = {"status", "--redlock", masters_arg, "job", NULL};
    char field[64], holder[128];
    snprintf(holder, sizeof(holder), "    holder %s  holds 1\n",
             tu_field(c, 9, field));

    ck_assert_int_eq(cli(status, "out"), 0);
    const char *text = file_text("out");
    ck_assert_msg(strncmp(text, "job: held on 3 of 3 masters\n", 28) == 0 &&
                  strstr(text, master_line(0, "held, ttl ")) &&
                  strstr(text, master_line(2, "held, ttl ")) &&
                  strstr(text, holder), "status printed: %s", text);

    /* One master lost it: still held by a majority. */
    ck_assert_int_eq(rs_int(masters[0], "DEL", "job", (char *)NULL), 1);
    ck_assert_int_eq(cli(status, "out"), 0);
    text = file_text("out");
    ck_assert_msg(strstr(text, "job: held on 2 of 3 masters\n") &&
                  strstr(text, master_line(0, "free\n")),
                  "status printed: %s", text);

    /* Two lost it: no owner holds a majority, so it is free. */
    ck_assert_int_eq(rs_int(masters[1], "DEL", "job", (char *)NULL), 1);
    ck_assert_int_eq(cli(status, "out"), 1);
    ck_assert_msg(strstr(file_text("out"), "job: free: "),
                  "status printed: %s", file_text("out"));
    hilock_client_free(c);
}
END_TEST

START_TEST(redlock_release_force_breaks_the_lock_on_every_master)
{
    struct hilock_client *c = redlock_client();
    struct hilock_lock *l = tu_lock(c, "job", 1);
    tu_assert_status(tu_acquire(l, 0, 20000, NULL), 0);
    const char *run[] = {"run", "-w", "10000", "--redlock", masters_arg,
                         "job", "--", "touch", "RAN", NULL};
    pid_t pid = cli_spawn(run, NULL);
    for (int i = 0; i < NMASTERS; i++)
        ck_assert(master_waiters_become(i, 1, scaled(5000)));
    ck_assert_int_eq(masters_with_job(), NMASTERS);

    const char *force[] = {"release", "--force", "--redlock", masters_arg,
                           "job", NULL};
    ck_assert_int_eq(cli(force, "out"), 0);
    const char *text = file_text("out");
    ck_assert_msg(strstr(text, "job: released on 3 of 3 masters; waiters "
                               "notified\n") &&
                  strstr(text, master_line(1, "released\n")),
                  "release printed: %s", text);
    /* The waiting run wakes, runs and lets go. */
    ck_assert_int_eq(cli_wait(pid, scaled(5000)), 0);
    ck_assert(exists("RAN"));
    ck_assert_int_eq(masters_with_job(), 0);
    ck_assert_int_eq(cli(force, "out"), 1);
    ck_assert_msg(strstr(file_text("out"), "job: was free on every master\n"),
                  "release printed: %s", file_text("out"));
    hilock_client_free(c);
}
END_TEST

START_TEST(redlock_run_with_one_master_down_runs_and_without_a_quorum_exits_125)
{
    /* One master down: two of three are a majority. */
    master_stop(2);
    const char *ok[] = {"run", "-n", "--redlock", masters_arg, "job", "--",
                        "touch", "DONE", NULL};
    ck_assert_int_eq(cli(ok, NULL), 0);
    ck_assert(exists("DONE"));
    ck_assert_int_eq(masters_with_job(), 0);

    master_stop(1);
    const char *run[] = {"run", "-n", "--redlock", masters_arg, "job", "--",
                         "touch", "RAN", NULL};
    long long t0 = tu_now_ms();
    ck_assert_int_eq(cli_err(run), EXIT_FAILURE_);
    long long took = tu_now_ms() - t0;
    ck_assert_msg(took < scaled(5000), "took %lld ms", took);
    ck_assert_msg(strstr(file_text("err"), "no quorum: fewer than 2 of the 3 "
                                           "Redis masters"),
                  "said: %s", file_text("err"));
    ck_assert(!exists("RAN"));
    ck_assert_int_eq(masters_with_job(), 0);

    /* Without -n it does not wait for the masters either. */
    const char *wait[] = {"run", "--redlock", masters_arg, "job", "--",
                          "touch", "RAN", NULL};
    ck_assert_int_eq(cli_err(wait), EXIT_FAILURE_);
    ck_assert(!exists("RAN"));

    /* status cannot tell; release --force cannot reach them all. */
    const char *status[] = {"status", "--redlock", masters_arg, "job", NULL};
    ck_assert_int_eq(cli(status, "out"), EXIT_FAILURE_);
    ck_assert_msg(strstr(file_text("out"), "job: unknown: 2 of the 3 "
                                           "masters did not answer\n"),
                  "status printed: %s", file_text("out"));
    const char *force[] = {"release", "--force", "--redlock", masters_arg,
                           "job", NULL};
    ck_assert_int_eq(cli(force, NULL), EXIT_FAILURE_);
}
END_TEST

START_TEST(redlock_password_applies_to_every_master)
{
    for (int i = 0; i < NMASTERS; i++) {
        char *ok = rs_str(masters[i], "CONFIG", "SET", "requirepass", "pw",
                          (char *)NULL);
        ck_assert_str_eq(ok ? ok : "(null)", "OK");
        free(ok);
    }
    const char *run[] = {"run", "-a", "pw", "--redlock", masters_arg, "job",
                         "--", "touch", "RAN", NULL};
    ck_assert_int_eq(cli_err(run), 0);
    ck_assert(exists("RAN"));
    /* status reads each master on its own: each one took the password. */
    const char *status[] = {"status", "-a", "pw", "--redlock", masters_arg,
                            "job", NULL};
    ck_assert_int_eq(cli(status, "out"), 1);
    const char *text = file_text("out");
    ck_assert_msg(strncmp(text, "job: free\n", 10) == 0, "printed: %s", text);
    for (int i = 0; i < NMASTERS; i++)
        ck_assert_msg(strstr(text, master_line(i, "free\n")), "printed: %s",
                      text);
    const char *nopass[] = {"status", "--redlock", masters_arg, "job", NULL};
    ck_assert_int_eq(cli(nopass, NULL), EXIT_FAILURE_);
}
END_TEST

/* Run the CLI with args; it must exit 125 saying what (in stderr) without
 * running anything. */
static void assert_usage_error(const char *const *args, const char *what)
{
    ck_assert_int_eq(cli_err(args), EXIT_FAILURE_);
    ck_assert_msg(strstr(file_text("err"), what), "said: %s (wanted: %s)",
                  file_text("err"), what);
    ck_assert(!exists("RAN"));
}

START_TEST(bad_redlock_lists_are_usage_errors)
{
    static const char *const lists[][2] = {
        {"127.0.0.1:7001,127.0.0.1:7002", "odd number of masters"},
        {"a:1,b:2,c:3,d:4", "odd number of masters from 3 to 9"},
        {"a:1", "not 1"},
        {"a:1,b:1,c:1,d:1,e:1,f:1,g:1,h:1,i:1,j:1,k:1", "not 11"},
        {"a:1,b:2,a:1", "'a:1' is listed twice"},
        {"127.0.0.1:7001,LOCALHOST:7002,localhost:7002", "listed twice"},
        {"a:1,,b:2", "empty entry"},
        {"a:1,b:2,c:3,", "empty entry"},
        {"a:1,b:2,c", "'c' is not host:port"},
        {"a:x,b:1,c:2", "'a:x': the port is not a number"},
        {"a:0,b:1,c:2", "'a:0': the port"},
        {"a:65536,b:1,c:2", "'a:65536': the port"},
        {"a: 1,b:1,c:1", "the port"},
        {"10.0.0.256:1,b:2,c:3", "neither an IPv4 address nor a host name"},
        {"-a:1,b:2,c:3", "neither an IPv4 address nor a host name"},
        {"a_b:1,b:2,c:3", "neither an IPv4 address nor a host name"},
        {"::1:5,b:1,c:1", "IPv6"},
        /* two names of one server: the library says so */
        {"127.0.0.1:7001,localhost:7001,127.0.0.1:7003",
         "redlock.masters[0] and redlock.masters[1]: one server listed "
         "twice"},
    };
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        const char *run[] = {"run", "--redlock", lists[i][0], "job", "--",
                             "touch", "RAN", NULL};
        assert_usage_error(run, lists[i][1]);
    }
    const char *status[] = {"status", "--redlock", "a:1,b:2", "job", NULL};
    assert_usage_error(status, "odd number");
    const char *force[] = {"release", "--force", "--redlock", "a:1,b:2,x:y",
                           "job", NULL};
    assert_usage_error(force, "'x:y'");
    const char *with_h[] = {"run", "-H", "127.0.0.1", "--redlock",
                            masters_arg, "job", "--", "touch", "RAN", NULL};
    assert_usage_error(with_h, "-H/-p and --redlock exclude each other");
    const char *with_p[] = {"status", "--redlock", masters_arg, "-p", "6379",
                            "job", NULL};
    assert_usage_error(with_p, "-H/-p and --redlock exclude each other");
    const char *twice[] = {"run", "--redlock", masters_arg, "--redlock",
                           masters_arg, "job", "--", "touch", "RAN", NULL};
    assert_usage_error(twice, "--redlock given twice");
    const char *help[] = {"--help", NULL};
    ck_assert_int_eq(cli(help, "out"), 0);
    ck_assert_ptr_nonnull(strstr(file_text("out"), "--redlock h:p,h:p,h:p"));
    ck_assert_int_eq(masters_with_job(), 0);
}
END_TEST

/* ---- a Redis Cluster, a Sentinel ----------------------------------------- */

static struct rc_cluster *cluster;
static char cluster_arg[128];  /* every node: "127.0.0.1:P,..." */

/* A scratch directory and a cluster of three masters. */
static void setup_cluster(void)
{
    size_t len = 0;
    tu_setup_no_redis();
    scratch_dir();
    cluster = rc_start(3, 0);
    ck_assert_msg(cluster != NULL, "could not start a Redis Cluster");
    for (int i = 0; i < rc_count(cluster); i++)
        len += (size_t)snprintf(cluster_arg + len, sizeof(cluster_arg) - len,
                                "%s127.0.0.1:%d", i ? "," : "",
                                rc_port(cluster, i));
}

static void teardown_cluster(void)
{
    rc_stop(cluster);
    cluster = NULL;
    teardown();
}

/* The node that owns the slot of key. */
static int owner_of(const char *key)
{
    int node = rc_slot_owner(cluster, rc_key_slot(key, strlen(key)));
    ck_assert_int_ge(node, 0);
    return node;
}

/* EXISTS key on the node that owns its slot. */
/* Start run (a command that holds "job" until the file GO appears; it
 * makes READY first), check with exists that Redis has the lock and with
 * status that it is shown held, let the command end: it exits 0 and the
 * lock is gone. */
static void run_held_and_shown(const char *const *run,
                               const char *const *status,
                               long long (*in_redis)(const char *key))
{
    pid_t pid = cli_spawn(run, NULL);
    ck_assert(file_appears("READY", scaled(5000)));
    long long held = in_redis("job");
    int rc = cli(status, "out");
    touch("GO");
    ck_assert_int_eq(held, 1);
    ck_assert_int_eq(rc, 0);
    ck_assert_msg(strncmp(file_text("out"), "job: held, ttl ", 15) == 0,
                  "status printed: %s", file_text("out"));
    ck_assert_int_eq(cli_wait(pid, scaled(5000)), 0);
    ck_assert_int_eq(in_redis("job"), 0);
}

static long long cluster_exists(const char *key)
{
    return rs_int(rc_server(cluster, owner_of(key)), "EXISTS", key,
                  (char *)NULL);
}

/* Subscribers of channel on every node, plain and sharded. */
static long long cluster_listeners(const char *channel)
{
    long long n = 0;
    for (int i = 0; i < rc_count(cluster); i++) {
        const char *argv[] = {"PUBSUB", "SHARDNUMSUB", channel};
        redisReply *r = rs_command_argv(rc_server(cluster, i), 3, argv, NULL);
        if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[1]->type == REDIS_REPLY_INTEGER)
            n += r->element[1]->integer;
        freeReplyObject(r);
        long long plain = rs_numsub(rc_server(cluster, i), channel);
        n += plain > 0 ? plain : 0;
    }
    return n;
}

START_TEST(cluster_run_status_and_release_force_reach_the_slots_master)
{
    /* Given only a node that does not own job's slot, run and status are
     * redirected to the one that does. */
    char seed[32];
    snprintf(seed, sizeof(seed), "127.0.0.1:%d",
             rc_port(cluster, (owner_of("job") + 1) % rc_count(cluster)));
    const char *run[] = {"run", "--cluster", seed, "job", "--", "sh", "-c",
                         "touch READY; while [ ! -e GO ]; do sleep 0.02; done",
                         NULL};
    const char *status[] = {"status", "--cluster", seed, "job", NULL};
    run_held_and_shown(run, status, cluster_exists);
    ck_assert_int_eq(cli(status, "out"), 1);
    ck_assert_str_eq(file_text("out"), "job: free\n");

    /* a{b}c has a hash tag of its own: its channel is
     * redisson_lock__channel:a{b}c, without added braces. A waiter listens
     * there and wakes at the forced release, long before the holder's
     * lease or the waiter's own -w would end. */
    struct hilock_endpoint seeds[] = {{"127.0.0.1", rc_port(cluster, 0),
                                       NULL}};
    struct hilock_options o;
    tu_options(&o);
    o.topology = HILOCK_TOPOLOGY_CLUSTER;
    o.cluster.seeds = seeds;
    o.cluster.count = 1;
    struct hilock_client *c = tu_client(&o);
    struct hilock_lock *l = tu_lock(c, "a{b}c", 1);
    tu_assert_status(tu_acquire(l, 0, 20000, NULL), 0);
    const char *wait[] = {"run", "-w", "10000", "--cluster", cluster_arg,
                          "a{b}c", "--", "touch", "RAN", NULL};
    pid_t pid = cli_spawn(wait, NULL);
    long long deadline = tu_now_ms() + scaled(5000);
    while (cluster_listeners("redisson_lock__channel:a{b}c") != 1 &&
           tu_now_ms() < deadline)
        tu_run_for(10);
    ck_assert_int_eq(cluster_listeners("redisson_lock__channel:a{b}c"), 1);
    const char *force[] = {"release", "--force", "--cluster", cluster_arg,
                           "a{b}c", NULL};
    ck_assert_int_eq(cli(force, "out"), 0);
    ck_assert_str_eq(file_text("out"), "a{b}c: released; waiters notified\n");
    ck_assert_int_eq(cli_wait(pid, scaled(5000)), 0);
    ck_assert(exists("RAN"));
    ck_assert_int_eq(cluster_exists("a{b}c"), 0);
    hilock_client_free(c);
}
END_TEST

#define SENTINEL_MASTER "hilock-cli"

static struct rt_sentinel *sentinel;
static char sentinel_arg[64];  /* a dead port first, then the Sentinel */

/* A scratch directory, a master without replicas and one Sentinel. */
static void setup_sentinel(void)
{
    tu_setup_no_redis();
    scratch_dir();
    sentinel = rt_start(0, 1, SENTINEL_MASTER);
    ck_assert_msg(sentinel != NULL, "could not start a Sentinel");
    snprintf(sentinel_arg, sizeof(sentinel_arg), "127.0.0.1:%d,127.0.0.1:%d",
             tu_dead_port(), rt_sentinel_port(sentinel, 0));
}

static void teardown_sentinel(void)
{
    rt_stop(sentinel);
    sentinel = NULL;
    teardown();
}

/* EXISTS key on the master the Sentinel names. */
static long long master_exists(const char *key)
{
    int m = rt_master(sentinel);
    ck_assert_int_ge(m, 0);
    return rs_int(rt_server(sentinel, m), "EXISTS", key, (char *)NULL);
}

START_TEST(sentinel_run_status_and_release_force_find_the_master)
{
    const char *run[] = {"run", "--sentinel", sentinel_arg, "--master",
                         SENTINEL_MASTER, "job", "--", "sh", "-c",
                         "touch READY; while [ ! -e GO ]; do sleep 0.02; done",
                         NULL};
    const char *status[] = {"status", "--sentinel", sentinel_arg, "--master",
                            SENTINEL_MASTER, "job", NULL};
    run_held_and_shown(run, status, master_exists);

    /* release --force on the master, of a lock the library holds there */
    struct hilock_endpoint eps[] = {
        {"127.0.0.1", rt_sentinel_port(sentinel, 0), NULL}};
    struct hilock_options o;
    tu_options(&o);
    o.topology = HILOCK_TOPOLOGY_SENTINEL;
    o.sentinel.nodes = eps;
    o.sentinel.count = 1;
    o.sentinel.master_name = SENTINEL_MASTER;
    struct hilock_client *c = tu_client(&o);
    tu_assert_status(tu_acquire(tu_lock(c, "job", 1), 0, 20000, NULL), 0);
    const char *force[] = {"release", "--force", "--sentinel", sentinel_arg,
                           "--master", SENTINEL_MASTER, "job", NULL};
    ck_assert_int_eq(cli(force, "out"), 0);
    ck_assert_str_eq(file_text("out"), "job: released; waiters notified\n");
    ck_assert_int_eq(master_exists("job"), 0);
    ck_assert_int_eq(cli(status, "out"), 1);
    ck_assert_str_eq(file_text("out"), "job: free\n");
    hilock_client_free(c);

    /* No replica to WAIT for: said at once, without -w too, and the
     * command does not run. */
    const char *replicas[] = {"run", "--sentinel", sentinel_arg, "--master",
                              SENTINEL_MASTER, "--wait-replicas", "1",
                              "--wait-timeout", "100", "job", "--", "touch",
                              "RAN", NULL};
    ck_assert_int_eq(cli_err(replicas), EXIT_FAILURE_);
    ck_assert_msg(strstr(file_text("err"), "did not reach enough replicas"),
                  "said: %s", file_text("err"));
    ck_assert(!exists("RAN"));

    /* A name the Sentinel does not know. */
    const char *unknown[] = {"status", "--sentinel", sentinel_arg,
                             "--master", "nosuch", "job", NULL};
    ck_assert_int_eq(cli_err(unknown), EXIT_FAILURE_);
    ck_assert_msg(strstr(file_text("err"), "named a master 'nosuch'"),
                  "said: %s", file_text("err"));
}
END_TEST

/* A scratch directory, no server: for what must fail before any
 * connection. */
static void setup_no_redis(void)
{
    tu_setup_no_redis();
    scratch_dir();
}

START_TEST(bad_topology_options_are_usage_errors)
{
    const char *seventeen =
        "a:1,a:2,a:3,a:4,a:5,a:6,a:7,a:8,a:9,a:10,a:11,a:12,a:13,a:14,a:15,"
        "a:16,a:17";
    static const char *const cases[][8] = {
        {"--sentinel", "a:1", NULL, "--sentinel needs --master NAME"},
        {"--master", "m", NULL, "--master names a master that sentinels "
                                "watch: it needs --sentinel"},
        {"--cluster", "a:1", "-p", "7000", NULL,
         "-H/-p and --cluster exclude each other"},
        {"-H", "h", "--sentinel", "a:1", "--master", "m", NULL,
         "-H/-p and --sentinel exclude each other"},
        {"--redlock", "a:1,b:1,c:1", "--sentinel", "a:1", NULL,
         "--redlock and --sentinel exclude each other"},
        {"--cluster", "a:1", "--cluster", "b:1", NULL,
         "--cluster given twice"},
        {"--cluster", "a:1,,b:1", NULL, "--cluster: an empty entry"},
        {"--sentinel", "a:1,a:1", "--master", "m", NULL,
         "--sentinel: 'a:1' is listed twice"},
        {"--sentinel", "a", "--master", "m", NULL,
         "--sentinel: 'a' is not host:port"},
        {"--sentinel", "a:1", "--master", "a b", NULL, "no master name"},
        {"--sentinel-password", "pw", NULL,
         "--sentinel-password is for the sentinels of --sentinel"},
        {"--wait-timeout", "100", NULL, "needs --wait-replicas"},
        {"--wait-replicas", "1", "--wait-timeout", "0", NULL,
         "--wait-timeout must be at least 1 ms"},
        {"--wait-replicas", "two", NULL, "bad --wait-replicas 'two'"},
        {"--read", "--write", NULL, "--read and --write exclude each other"},
        {"--permits", "0", NULL, "bad --permits '0'"},
        {"--permits", "2", "--write", NULL,
         "--permits and --write exclude each other"},
        {"--redlock", "a:1,b:1,c:1", "--read", NULL,
         "--read is not for --redlock"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *args[16] = {"run"};
        size_t n = 1, k = 0;
        while (cases[i][k])
            args[n++] = cases[i][k++];
        const char *what = cases[i][k + 1];
        args[n++] = "job";
        args[n++] = "touch";
        args[n++] = "RAN";
        args[n] = NULL;
        assert_usage_error(args, what);
    }
    const char *many[] = {"status", "--cluster", seventeen, "job", NULL};
    assert_usage_error(many, "--cluster takes 1 to 16 nodes, not 17");
    /* A '}' without a hash tag leaves the name's keys in different slots. */
    const char *untagged[] = {"release", "--force", "--cluster", "a:1",
                              "a}b", NULL};
    assert_usage_error(untagged, "'a}b' cannot be a lock in a cluster");
    const char *help[] = {"--help", NULL};
    ck_assert_int_eq(cli(help, "out"), 0);
    ck_assert_ptr_nonnull(strstr(file_text("out"), "--sentinel h:p[,...] "
                                                   "--master NAME"));
    ck_assert_ptr_nonnull(strstr(file_text("out"), "--cluster h:p[,...]"));
}
END_TEST

/* ---- read-write locks and semaphores ------------------------------------ */

/* A command that marks its arrival (touch me) and waits, 5 s at most, for
 * the mark of another (other): both exit 0 only if both were inside at
 * once. In buf (>= 256 bytes). */
static const char *meet(char *buf, const char *me, const char *other)
{
    snprintf(buf, 256,
             "touch %s; i=0; while [ ! -e %s ]; do i=$((i+1)); "
             "[ $i -gt 250 ] && exit 9; sleep 0.02; done", me, other);
    return buf;
}

START_TEST(two_read_runs_hold_the_lock_at_once)
{
    char a[256], b[256];
    const char *ra[] = {"run", "-p", port, "--read", "rw", "--", "sh", "-c",
                        meet(a, "A", "B"), NULL};
    const char *rb[] = {"run", "-p", port, "--read", "rw", "--", "sh", "-c",
                        meet(b, "B", "A"), NULL};
    pid_t pa = cli_spawn(ra, NULL), pb = cli_spawn(rb, NULL);
    ck_assert_int_eq(cli_wait(pa, scaled(10000)), 0);
    ck_assert_int_eq(cli_wait(pb, scaled(10000)), 0);
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "rw", (char *)NULL), 0);
}
END_TEST

/* Start a run of side (--read or --write) on "rw" whose command touches
 * mark and stays until the file go appears. */
static pid_t hold_rw(const char *side, const char *mark, const char *go)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "touch %s; while [ ! -e %s ]; do sleep 0.02; "
             "done", mark, go);
    const char *run[] = {"run", "-p", port, side, "rw", "--", "sh", "-c",
                         cmd, NULL};
    pid_t pid = cli_spawn(run, NULL);
    ck_assert(file_appears(mark, scaled(5000)));
    return pid;
}

START_TEST(a_write_run_excludes_read_runs_and_they_exclude_it)
{
    const char *status[] = {"status", "-p", port, "rw", NULL};
    const char *read[] = {"run", "-w", "300", "-p", port, "--read", "rw",
                          "--", "touch", "RAN", NULL};
    const char *write[] = {"run", "-w", "300", "-p", port, "--write", "rw",
                           "--", "touch", "RAN", NULL};
    char holder[48];
    pid_t w = hold_rw("--write", "W", "GO");
    ck_assert_int_eq(cli(read, NULL), EXIT_TIMEDOUT);
    ck_assert_int_eq(cli(status, "out"), 0);
    snprintf(holder, sizeof(holder), ":%d  holds 1\n", (int)w);
    ck_assert_msg(strstr(file_text("out"), "rw: read-write lock, write mode")
                  && strstr(file_text("out"), "  writer ") &&
                  strstr(file_text("out"), holder),
                  "status printed: %s", file_text("out"));
    touch("GO");
    ck_assert_int_eq(cli_wait(w, scaled(5000)), 0);

    pid_t r = hold_rw("--read", "R", "GO2");
    ck_assert_int_eq(cli(write, NULL), EXIT_TIMEDOUT);
    ck_assert(!exists("RAN"));
    ck_assert_int_eq(cli(status, "out"), 0);
    ck_assert_msg(strstr(file_text("out"), "read mode, 1 reader,"),
                  "status printed: %s", file_text("out"));
    touch("GO2");
    ck_assert_int_eq(cli_wait(r, scaled(5000)), 0);
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "rw", (char *)NULL), 0);
}
END_TEST

/* The guarded write of the docs, from a shell job: a Lua one-liner that
 * writes only while HILOCK_OWNER_FIELD is in lock HILOCK_LOCK_NAME, and
 * stores the token it was given. In buf (>= 1024 bytes). */
static const char *guarded_write(char *buf, const char *value, const char *to)
{
    snprintf(buf, 1024,
             "\"${HILOCK_REDIS_CLI:-redis-cli}\" -p %s EVAL "
             "\"if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then "
             "return redis.error_reply('NOTOWNER') end "
             "return redis.call('set', KEYS[2], ARGV[2])\" "
             "2 \"$HILOCK_LOCK_NAME\" '{job}:out' \"$HILOCK_OWNER_FIELD\" "
             "%s > %s", port, value, to);
    return buf;
}

START_TEST(run_passes_the_hold_to_the_command_for_a_guarded_write)
{
    char first[1024], second[1024], cmd[2200];
    guarded_write(first, "\"$HILOCK_FENCE_TOKEN\"", "first");
    guarded_write(second, "late", "second");
    snprintf(cmd, sizeof(cmd),
             "env | grep '^HILOCK_' > env; %s; "
             "\"${HILOCK_REDIS_CLI:-redis-cli}\" -p %s del job > /dev/null; "
             "%s", first, port, second);
    const char *run[] = {"run", "-p", port, "--fence", "job", "--", "sh",
                         "-c", cmd, NULL};
    /* the lock deleted under the command: lost, found gone at release */
    ck_assert_int_eq(cli(run, NULL), 122);
    long long token = tu_fence("job");
    ck_assert_int_gt(token, 0);
    ck_assert_int_eq(rs_int(tu_srv, "GET", "{job}:out", (char *)NULL), token);
    ck_assert_str_eq(file_text("first"), "OK\n");
    ck_assert_msg(strstr(file_text("second"), "NOTOWNER") != NULL,
                  "the late write answered: %s", file_text("second"));
    const char *env = file_text("env");
    char want[64];
    snprintf(want, sizeof(want), "HILOCK_FENCE_TOKEN=%lld\n", token);
    ck_assert_msg(strstr(env, want) && strstr(env, "HILOCK_LOCK_NAME=job\n") &&
                      strstr(env, "HILOCK_OWNER_FIELD="),
                  "env: %s", env);
    const char *plain[] = {"run", "-p", port, "--fence", "--write", "job",
                           "true", NULL};
    ck_assert_int_eq(cli_err(plain), 125);
}
END_TEST

/* The command of a --permits run on "sem": counts itself in ("inside"),
 * notes the count in the file seen, waits (5 s at most) until two runs
 * have come in, then counts itself out. In buf (>= 512 bytes). */
static const char *count_in(char *buf)
{
    snprintf(buf, 512,
             "rc() { \"${HILOCK_REDIS_CLI:-redis-cli}\" -p %s \"$@\"; }; "
             "rc incr inside >> seen; rc incr entered > /dev/null; i=0; "
             "while [ \"$(rc get entered)\" -lt 2 ]; do i=$((i+1)); "
             "[ $i -gt 250 ] && exit 9; sleep 0.02; done; "
             "sleep 0.1; rc decr inside > /dev/null", port);
    return buf;
}

START_TEST(permits_2_let_two_of_three_runs_in_at_once_and_never_three)
{
    char cmd[512];
    const char *run[] = {"run", "-p", port, "--permits", "2", "sem", "--",
                         "sh", "-c", count_in(cmd), NULL};
    pid_t pid[3];
    for (int i = 0; i < 3; i++)
        pid[i] = cli_spawn(run, NULL);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(cli_wait(pid[i], scaled(10000)), 0);
    /* Every count noted, one a line: three runs, none saw three inside. */
    const char *seen = file_text("seen");
    int lines = 0, most = 0;
    for (const char *at = seen; *at; at = strchr(at, '\n') + 1) {
        int n = atoi(at);
        most = n > most ? n : most;
        lines++;
    }
    ck_assert_msg(lines == 3 && most == 2, "counts seen: %s", seen);
    ck_assert_int_eq(rs_int(tu_srv, "GET", "sem", (char *)NULL), 2);
    ck_assert_int_eq(tu_exists("{sem}:timeout"), 0);
}
END_TEST

/* Run args (-n, on a name of another kind): exit 125 without running
 * "touch RAN", saying what the name holds. */
static void assert_refused_as(const char *const *args, const char *said)
{
    ck_assert_int_eq(cli_err(args), EXIT_FAILURE_);
    ck_assert(!exists("RAN"));
    ck_assert_msg(strstr(file_text("err"), said), "said: %s",
                  file_text("err"));
}

START_TEST(a_name_held_as_another_kind_is_refused_with_that_kind_named)
{
    struct hilock_client *c = tu_client(NULL);
    struct hilock_lock *l = hold_job(c, 1, 20000);
    const char *job_read[] = {"run", "-n", "-p", port, "--read", "job", "--",
                              "touch", "RAN", NULL};
    const char *job_write[] = {"run", "-n", "-p", port, "--write", "job",
                               "--", "touch", "RAN", NULL};
    const char *job_permits[] = {"run", "-n", "-p", port, "--permits", "2",
                                 "job", "--", "touch", "RAN", NULL};
    assert_refused_as(job_read, "job is held as a lock");
    assert_refused_as(job_write, "job is held as a lock");
    assert_refused_as(job_permits, "job is held as a lock");
    /* the holder's hash is as it was: its release works */
    ck_assert_int_eq(tu_owner_fields("job"), 1);
    tu_assert_status(tu_release(l, NULL), 0);
    ck_assert_int_eq(job_exists(), 0);
    hilock_client_free(c);

    pid_t r = hold_rw("--read", "R", "GO");
    const char *rw_plain[] = {"run", "-n", "-p", port, "rw", "--", "touch",
                              "RAN", NULL};
    const char *rw_permits[] = {"run", "-n", "-p", port, "--permits", "1",
                                "rw", "--", "touch", "RAN", NULL};
    assert_refused_as(rw_plain, "rw is held as a read-write lock");
    assert_refused_as(rw_permits, "rw is held as a read-write lock");
    touch("GO");
    ck_assert_int_eq(cli_wait(r, scaled(5000)), 0);
    ck_assert_int_eq(rs_int(tu_srv, "EXISTS", "rw", (char *)NULL), 0);

    rs_int(tu_srv, "SET", "sem", "3", (char *)NULL);
    const char *sem_plain[] = {"run", "-n", "-p", port, "sem", "--", "touch",
                               "RAN", NULL};
    const char *sem_read[] = {"run", "-n", "-p", port, "--read", "sem", "--",
                              "touch", "RAN", NULL};
    assert_refused_as(sem_plain, "sem is held as a semaphore");
    assert_refused_as(sem_read, "sem is held as a semaphore");
    ck_assert_int_eq(rs_int(tu_srv, "GET", "sem", (char *)NULL), 3);
}
END_TEST

START_TEST(a_semaphore_of_another_size_is_used_with_a_word)
{
    ck_assert_int_eq(rs_int(tu_srv, "INCRBY", "sem", "1", (char *)NULL), 1);
    const char *run[] = {"run", "-p", port, "--permits", "3", "sem", "--",
                         "sh", "-c", "touch READY; while [ ! -e GO ]; do "
                         "sleep 0.02; done", NULL};
    const char *other[] = {"run", "-w", "300", "-p", port, "--permits", "3",
                           "sem", "--", "touch", "RAN", NULL};
    const char *status[] = {"status", "-p", port, "sem", NULL};
    struct spawn how = {NULL, "err", NULL};
    pid_t pid = cli_start(run, &how);
    ck_assert(file_appears("READY", scaled(5000)));
    ck_assert_msg(strstr(file_text("err"), "semaphore sem has 1 permits in "
                                           "all, not 3"),
                  "said: %s", file_text("err"));
    /* Its one permit is taken: another run times out. */
    ck_assert_int_eq(cli(other, NULL), EXIT_TIMEDOUT);
    ck_assert(!exists("RAN"));
    ck_assert_int_eq(cli(status, "out"), 0);
    ck_assert_msg(strstr(file_text("out"), "sem: semaphore, 0 available, 1 "
                                           "expiring permit taken\n"
                                           "  permit "),
                  "status printed: %s", file_text("out"));
    touch("GO");
    ck_assert_int_eq(cli_wait(pid, scaled(5000)), 0);
    ck_assert_int_eq(cli(status, "out"), 1);
    ck_assert_str_eq(file_text("out"),
                     "sem: semaphore, 1 available, 0 expiring permits "
                     "taken\n");
}
END_TEST

START_TEST(a_permit_taken_from_under_its_command_exits_122)
{
    const char *run[] = {"run", "-L", "600", "-p", port, "--permits", "1",
                         "sem", "--", "sh", "-c",
                         "trap 'touch TERMED; exit 0' TERM; "
                         "touch READY; while :; do sleep 0.05; done", NULL};
    pid_t pid = cli_spawn(run, NULL);
    ck_assert(file_appears("READY", scaled(5000)));
    ck_assert_int_eq(tu_exists("{sem}:timeout"), 1);
    ck_assert_int_eq(rs_int(tu_srv, "DEL", "{sem}:timeout", (char *)NULL), 1);
    ck_assert_int_eq(cli_wait(pid, scaled(5000)), EXIT_LOST);
    ck_assert(exists("TERMED"));
}
END_TEST

/* ---- TLS ---------------------------------------------------------------- */

#ifdef HILOCK_HAVE_TLS
/* Certificates in the scratch directory and a TLS-only server for them. */
static void setup_tls(void)
{
    char crt[512], key[512], ca[512];
    struct rs_options o;
    tu_setup_no_redis();
    scratch_dir();
    ck_assert_int_eq(rs_tls_certs(dir), 0);
    memset(&o, 0, sizeof o);
    o.tls = (struct rs_tls){path_in(crt, "server.crt"),
                            path_in(key, "server.key"), path_in(ca, "ca.crt"),
                            0};
    tu_srv = tu_server_start(&o);
    ck_assert_msg(tu_srv != NULL, "could not start a TLS redis-server");
    snprintf(port, sizeof(port), "%d", rs_port(tu_srv));
}

START_TEST(tls_run_status_and_release_force_reach_a_tls_server)
{
    char ca[512], other[512];
    path_in(ca, "ca.crt");
    path_in(other, "other-ca.crt");
    const char *run[] = {"run", "-p", port, "--tls", "--cacert", ca,
                         "job", "--", "touch", "RAN", NULL};
    const char *status[] = {"status", "-p", port, "--tls", "--cacert", ca,
                            "job", NULL};
    const char *release[] = {"release", "--force", "-p", port, "--tls",
                             "--cacert", ca, "job", NULL};
    const char *bad_run[] = {"run", "-p", port, "--tls", "--cacert", other,
                             "-w", "0", "job", "--", "touch", "BAD", NULL};
    const char *bad_status[] = {"status", "-p", port, "--tls", "--cacert",
                                other, "job", NULL};
    ck_assert_int_eq(cli(run, NULL), 0);
    ck_assert(exists("RAN"));
    ck_assert_int_eq(cli(status, NULL), 1); /* free again */
    ck_assert_int_eq(rs_int(tu_srv, "HSET", "job",
                            "5b0c7a62-9a3a-4f3c-8a8e-1f1f1f1f1f1f:1", "1",
                            (char *)NULL),
                     1);
    ck_assert_int_eq(cli(release, NULL), 0);
    ck_assert_int_eq(tu_exists("job"), 0);
    ck_assert_int_eq(cli_err(bad_run), EXIT_FAILURE_);
    ck_assert(!exists("BAD"));
    ck_assert_ptr_nonnull(strstr(file_text("err"), "certificate"));
    ck_assert_int_eq(cli_err(bad_status), EXIT_FAILURE_);
    ck_assert_ptr_nonnull(strstr(file_text("err"), "certificate"));
}
END_TEST
#else
START_TEST(tls_is_refused_without_tls_support)
{
    const char *run[] = {"run", "-p", port, "--tls", "job", "--", "touch",
                         "RAN", NULL};
    const char *status[] = {"status", "-p", port, "--tls", "job", NULL};
    ck_assert_int_eq(cli_err(run), EXIT_FAILURE_);
    ck_assert(!exists("RAN"));
    ck_assert_ptr_nonnull(strstr(file_text("err"), "hiredis 1.x"));
    ck_assert_int_eq(cli_err(status), EXIT_FAILURE_);
    ck_assert_ptr_nonnull(strstr(file_text("err"), "hiredis 1.x"));
}
END_TEST
#endif

static Suite *cli_suite(void)
{
    Suite *s = suite_create("cli");
    TCase *run = tcase_create("run");
    tcase_add_checked_fixture(run, setup, teardown);
    tcase_set_timeout(run, 30);
    tcase_add_test(run, run_exits_with_the_commands_status_and_frees_the_lock);
    tcase_add_test(run, command_runs_while_the_lock_is_held_and_status_shows_the_holder);
    tcase_add_test(run, nonblocking_run_of_a_held_lock_exits_75_at_once);
    tcase_add_test(run, wait_that_times_out_exits_124_without_running_the_command);
    tcase_add_test(run, waiting_run_starts_the_command_when_the_holder_releases);
    tcase_add_test(run, fair_run_behind_killed_runs_starts_at_the_release);
    tcase_add_test(run, sigterm_reaches_the_command_and_its_status_is_returned);
    tcase_add_test(run, sigint_while_waiting_exits_130_without_running_the_command);
    tcase_add_test(run, lock_deleted_under_a_running_command_sends_sigterm_and_exits_122);
    tcase_add_test(run, fixed_lease_running_out_under_the_command_counts_as_lost);
    tcase_add_test(run, lock_found_gone_at_the_release_exits_122);
    tcase_add_test(run, missing_command_exits_127_and_frees_the_lock);
    tcase_add_test(run, unreachable_redis_exits_125_without_running_the_command);
    tcase_add_test(run, usage_errors_exit_125_and_help_exits_0);
    tcase_add_test(run, run_started_with_sigchld_blocked_and_ignored_sees_the_command_exit);
    tcase_add_test(run, sigkill_of_hilock_kills_a_command_that_ignores_sigterm);
    tcase_add_test(run, lock_is_held_until_a_daemonized_descendant_exits);
    tcase_add_test(run, command_inherits_every_descriptor_hilock_was_given);
    tcase_add_test(run, wait_of_zero_that_misses_the_lock_exits_124);
    tcase_add_test(run, lease_and_watchdog_lease_together_are_a_usage_error);
    tcase_add_test(run, watchdog_lease_below_100_ms_is_a_usage_error);
    tcase_add_test(run, lease_of_zero_or_not_plain_digits_is_a_usage_error);
    tcase_add_test(run, option_after_the_name_is_a_usage_error);
    tcase_add_test(run, empty_host_is_a_usage_error_that_says_so);
    tcase_add_test(run, user_without_password_is_a_usage_error);
    tcase_add_test(run, lock_lost_while_redis_stalls_is_released_on_the_way_out);
    tcase_add_test(run, wait_without_bound_outlasts_a_redis_stall);
    tcase_add_test(run, redis_error_text_reaches_stderr);
    suite_add_tcase(s, run);

    TCase *acl = tcase_create("acl");
    tcase_add_checked_fixture(acl, setup, teardown);
    tcase_set_timeout(acl, 30);
    tcase_add_test(acl, readme_acl_recipe_lets_run_take_and_wait_for_a_lock);
    tcase_add_test(acl, release_that_redis_refuses_fails_loudly);
    suite_add_tcase(s, acl);

    TCase *admin = tcase_create("admin");
    tcase_add_checked_fixture(admin, setup, teardown);
    tcase_set_timeout(admin, 30);
    tcase_add_test(admin, status_lists_each_holder_with_its_hold_count);
    tcase_add_test(admin, release_force_frees_the_lock_and_wakes_a_waiter);
    tcase_add_test(admin, release_force_leaves_a_key_of_another_type_alone);
    tcase_add_test(admin, status_and_release_force_refuse_a_hash_that_is_not_a_lock);
    tcase_add_test(admin, names_and_fields_are_printed_with_control_bytes_escaped);
    suite_add_tcase(s, admin);

    TCase *redlock = tcase_create("redlock");
    tcase_add_checked_fixture(redlock, setup_redlock, teardown_redlock);
    tcase_set_timeout(redlock, 30);
    tcase_add_test(redlock, redlock_run_holds_the_lock_on_every_master_while_the_command_runs);
    tcase_add_test(redlock, redlock_status_shows_each_master_and_calls_a_majority_held);
    tcase_add_test(redlock, redlock_release_force_breaks_the_lock_on_every_master);
    tcase_add_test(redlock, redlock_run_with_one_master_down_runs_and_without_a_quorum_exits_125);
    tcase_add_test(redlock, redlock_password_applies_to_every_master);
    tcase_add_test(redlock, bad_redlock_lists_are_usage_errors);
    suite_add_tcase(s, redlock);

    TCase *usage = tcase_create("usage");
    tcase_add_checked_fixture(usage, setup_no_redis, teardown);
    tcase_set_timeout(usage, 30);
    tcase_add_test(usage, bad_topology_options_are_usage_errors);
    suite_add_tcase(s, usage);

    TCase *kinds = tcase_create("kinds");
    tcase_add_checked_fixture(kinds, setup, teardown);
    tcase_set_timeout(kinds, 30);
    tcase_add_test(kinds, two_read_runs_hold_the_lock_at_once);
    tcase_add_test(kinds, a_write_run_excludes_read_runs_and_they_exclude_it);
    tcase_add_test(kinds, permits_2_let_two_of_three_runs_in_at_once_and_never_three);
    tcase_add_test(kinds, a_semaphore_of_another_size_is_used_with_a_word);
    tcase_add_test(kinds, a_name_held_as_another_kind_is_refused_with_that_kind_named);
    tcase_add_test(kinds, readme_acl_recipe_covers_every_kind);
    tcase_add_test(kinds, a_release_that_the_acl_refuses_changes_nothing);
    tcase_add_test(kinds, a_permit_taken_from_under_its_command_exits_122);
    tcase_add_test(kinds, run_passes_the_hold_to_the_command_for_a_guarded_write);
    suite_add_tcase(s, kinds);

    TCase *topo = tcase_create("cluster");
    tcase_add_checked_fixture(topo, setup_cluster, teardown_cluster);
    tcase_set_timeout(topo, 60);
    tcase_add_test(topo, cluster_run_status_and_release_force_reach_the_slots_master);
    suite_add_tcase(s, topo);

    TCase *tls = tcase_create("tls");
#ifdef HILOCK_HAVE_TLS
    tcase_add_checked_fixture(tls, setup_tls, teardown);
    tcase_add_test(tls, tls_run_status_and_release_force_reach_a_tls_server);
#else
    tcase_add_checked_fixture(tls, setup, teardown);
    tcase_add_test(tls, tls_is_refused_without_tls_support);
#endif
    tcase_set_timeout(tls, 60);
    suite_add_tcase(s, tls);

    topo = tcase_create("sentinel");
    tcase_add_checked_fixture(topo, setup_sentinel, teardown_sentinel);
    tcase_set_timeout(topo, 60);
    tcase_add_test(topo, sentinel_run_status_and_release_force_find_the_master);
    suite_add_tcase(s, topo);
    return s;
}

int main(void)
{
    return tu_main(cli_suite());
}
