/* SPDX-License-Identifier: BSD-3-Clause */
/* run.c -- hilock run: hold a Redis lock for as long as a command runs.
 *
 * One libevent loop does everything: hilock takes (and, under the watchdog,
 * renews) the lock; once the lock is ours the reaper (reaper.c) is forked and
 * starts the command; signals meant for hilock are passed on to it through
 * the reaper; when the command and everything it started have exited, the
 * reaper reports the command's status, the lock is released and the status
 * becomes ours. The lock is a mutex, or with --read / --write one side of a
 * read-write lock, or with --permits one expiring permit of a semaphore:
 * all of them are lock handles, so only taking them and their messages
 * differ. If the lock is lost meanwhile, every descendant is told with
 * SIGTERM (and SIGKILL after KILL_AFTER_MS) and we exit CLI_EXIT_LOST:
 * whatever they did after the loss was not exclusive. If hilock dies, the
 * reaper kills them all; reaper.c says what that does not cover.
 *
 * Before anything else a query (the lock's ttl; for a semaphore, setting its
 * permits when it has none) checks that Redis answers,
 * so that a wait that times out (CLI_EXIT_TIMEDOUT) is not confused with a
 * Redis that cannot be reached (CLI_EXIT_FAILURE). With --redlock the client
 * is given every master and the library decides each step by majority; the
 * query then fails with HILOCK_ENOQUORUM within the request deadline when
 * fewer than a majority answer, and that is CLI_EXIT_FAILURE too ("no
 * quorum"), never a wait without end. With --sentinel or --cluster the
 * client is given the sentinels or the cluster's nodes and finds the master
 * (of the name's slot) itself; the query fails the same way when it cannot.
 *
 * At startup hilock takes down what the command should get (descriptors,
 * signal mask, ignored signals) and undoes what a parent may have done to the
 * signals it relies on (signals_reset). */
#include <errno.h>
#include <event2/event.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hilock/hilock.h>

#include "cli.h"
#include "reaper.h"

#define KILL_AFTER_MS 10000   /* SIGTERM to SIGKILL after a lost lock */
#define RELEASE_MS 10000      /* longest wait for the release's answer */
#define LOST_RELEASE_MS 1000  /* the same for the release after a loss */
#define WATCHDOG_MIN_MS 100   /* shortest -L: renewed every third of it */

/* Signals passed on to the command. */
static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
                                SIGUSR2};
#define NFORWARDED (sizeof(forwarded) / sizeof(forwarded[0]))

enum phase { PROBING, ACQUIRING, RUNNING, RELEASING, DONE };

struct runner {
    struct event_base *base;
    struct hilock_client *client;
    struct hilock_lock *lock;   /* a mutex, a read or write side; or */
    struct hilock_permit *permit; /* with --permits: an expiring permit */
    struct event *sig[NFORWARDED];
    struct event *report;   /* the reaper's report is readable */
    struct event *timer;    /* SIGKILL after a loss, or the release bound */
    enum phase phase;
    const char *name;
    const char *noun;       /* "lock", "read lock", ...: for messages */
    int side;               /* HILOCK_READ, HILOCK_WRITE (both: a usage
                               error), 0 for a mutex or a permit */
    uint64_t permits;       /* --permits N; 0: not a semaphore */
    int fence;              /* --fence: draw a fencing token */
    char shown[CLI_ESCAPED_SIZE(HILOCK_NAME_MAX)];  /* name, escaped */
    struct reaper_cmd cmd;
    struct reaper reaper;
    uint64_t lease_ms, wait_ms, watchdog_ms;
    uint64_t wait_replicas, wait_timeout_ms;  /* 0: no WAIT / the default */
    int wait_given, nonblock;
    int fair;               /* --fair: first come, first served */
    int first_try;          /* the one try before a wait (wait_replicas) */
    long long wait_start_ms;
    const struct cli_redis *redis;
    int lost;
    int exit_code;
    char last_log[256];     /* the last library line printed */
};

/* The exit code for a wait status: the command's, or 128+signal. */
static int code_of(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return CLI_EXIT_FAILURE;
}

/* The library's warnings and errors, such as a server's error text, as
 * "hilock: redis: <line>" ("hilock: <line>" for an option it refused);
 * the same line twice in a row only once (a reconnect loop repeats
 * itself). */
static void on_log(enum hilock_log_level level, const char *msg, void *arg)
{
    struct runner *r = arg;
    char shown[CLI_ESCAPED_SIZE(200)];
    if (level < HILOCK_LOG_WARN ||
        strncmp(msg, r->last_log, sizeof(r->last_log) - 1) == 0)
        return;
    snprintf(r->last_log, sizeof(r->last_log), "%s", msg);
    cli_error("%s%s", strncmp(msg, "invalid option", 14) ? "redis: " : "",
              cli_escape(shown, sizeof(shown), msg, strlen(msg)));
}

/* Say that doing (or the first query, NULL) met another kind of lock
 * under the name, and which kind it is now. */
static void say_wrong_kind(const struct runner *r, const char *doing)
{
    const char *found = cli_kind_found(r->redis, r->name);
    if (found && strncmp(found, "a ", 2) == 0)
        cli_error("%s%s%s is held as %s", doing ? doing : "",
                  doing ? ": " : "", r->shown, found);
    else
        cli_error("%s%s%s", doing ? doing : "", doing ? ": " : "",
                  hilock_strerror(HILOCK_EWRONGKIND));
}

/* Say that doing (a lock step, or NULL for the first query) failed with
 * status, naming the endpoint, the masters, the sentinels or the cluster. */
static void say_failed(const struct runner *r, const char *doing, int status)
{
    char where[CLI_WHERE_SIZE], what[CLI_WHAT_SIZE];
    size_t n = r->redis->nlist;
    cli_redis_where(r->redis, where, sizeof(where));
    cli_redis_what(r->redis, what, sizeof(what));
    if (status == HILOCK_ENOQUORUM && r->redis->topo == CLI_REDLOCK)
        cli_error("%s%sno quorum: fewer than %zu of the %zu Redis masters "
                  "(%s) answered", doing ? doing : "", doing ? ": " : "",
                  n / 2 + 1, n, where);
    else if (status == HILOCK_EWRONGKIND)
        say_wrong_kind(r, doing);
    else if (status == HILOCK_ENOREPLICA)
        cli_error("%s%s%s (--wait-replicas %llu)", doing ? doing : "",
                  doing ? ": " : "", hilock_strerror(status),
                  (unsigned long long)r->wait_replicas);
    else if (doing)
        cli_error("%s: %s", doing, hilock_strerror(status));
    else
        cli_error("%s: %s", what, hilock_strerror(status));
}

/* ---- the loop ---------------------------------------------------------- */

/* Leave the loop with exit code code. */
static void finish(struct runner *r, int code)
{
    r->exit_code = code;
    r->phase = DONE;
    event_base_loopbreak(r->base);
}

/* (Re)arm the one timer: its meaning depends on the phase (on_timer). */
static void arm_timer(struct runner *r, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(r->timer, &tv);
}

/* The release's answer decides the exit code: the command's; 122 when the
 * lock turned out lost; 125, loudly, when Redis refused the release. */
static void on_released(struct hilock_lock *lock, int status,
                        const struct hilock_result *left, void *arg)
{
    struct runner *r = arg;
    if (r->phase != RELEASING)
        return;  /* given up on (the timer) */
    if (r->lost) {
        finish(r, CLI_EXIT_LOST);  /* best effort; ENOTOWNER is expected */
    } else if (status == 0) {
        finish(r, r->exit_code);
    } else if (status == HILOCK_ENOTOWNER) {
        /* Gone before the command ended, unnoticed until now: what it did
         * after that was not exclusive. */
        cli_error("%s %s was lost before the command ended", r->noun,
                  r->shown);
        finish(r, CLI_EXIT_LOST);
    } else {
        if (status == HILOCK_EWRONGKIND)
            say_wrong_kind(r, "releasing");
        cli_error("releasing %s failed: %s; it may stay until its lease "
                  "runs out (the command exited with %d)", r->shown,
                  hilock_strerror(status), r->exit_code);
        finish(r, CLI_EXIT_FAILURE);
    }
}

/* The permit's callbacks: as the lock's (the handle is r->permit). */
static void on_permit_released(struct hilock_permit *p, int status,
                               const struct hilock_result *res, void *arg)
{
    (void)p;
    on_released(NULL, status, res, arg);
}

/* The command and its descendants are gone: release the lock. After a
 * loss too, with a short bound: a renewal that Redis applies late must not
 * keep the lock for us after we exit. */
static void release_start(struct runner *r)
{
    r->phase = RELEASING;
    evtimer_del(r->timer);
    int rc = r->permit
                 ? hilock_permit_release(r->permit, on_permit_released, r)
                 : hilock_lock_release(r->lock, on_released, r);
    if (rc == 0) {
        arm_timer(r, r->lost ? LOST_RELEASE_MS : RELEASE_MS);
    } else if (r->lost) {
        finish(r, CLI_EXIT_LOST);
    } else {
        cli_error("releasing %s failed: %s; it stays until its lease runs "
                  "out", r->shown, hilock_strerror(rc));
        finish(r, CLI_EXIT_FAILURE);
    }
}

/* While running, the grace period after a loss is over: SIGKILL them all.
 * While releasing, the release has not been answered in time. */
static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct runner *r = arg;
    if (r->phase == RUNNING) {
        cli_error("still running %d ms after SIGTERM; sending SIGKILL",
                  KILL_AFTER_MS);
        reaper_order(&r->reaper, REAPER_TREE | SIGKILL);
    } else if (r->phase == RELEASING && r->lost) {
        finish(r, CLI_EXIT_LOST);
    } else if (r->phase == RELEASING) {
        cli_error("no answer to the release of %s in %d ms; it stays until "
                  "its lease runs out", r->shown, RELEASE_MS);
        finish(r, CLI_EXIT_FAILURE);
    }
}

/* The reaper's report: the command and every descendant have exited. */
static void on_report(evutil_socket_t fd, short what, void *arg)
{
    struct runner *r = arg;
    int status;
    if (reaper_wait(&r->reaper, &status) != 0) {
        /* Killed: the command died with it (PR_SET_PDEATHSIG). Whatever
         * it started may still run, so the lock is left to its lease. */
        cli_error("the process watching the command was killed; %s stays "
                  "until its lease runs out", r->shown);
        finish(r, CLI_EXIT_FAILURE);
        return;
    }
    r->exit_code = r->lost ? CLI_EXIT_LOST : code_of(status);
    release_start(r);
}

/* The lock is gone while the command runs: SIGTERM to every descendant,
 * SIGKILL after KILL_AFTER_MS (on_timer); the exit code will be 122. */
static void on_lost(struct hilock_lock *lock, int status,
                    const struct hilock_result *res, void *arg)
{
    struct runner *r = arg;
    if (r->phase != RUNNING || r->lost)
        return;
    r->lost = 1;
    cli_error("%s %s lost; sending SIGTERM to the command and all it "
              "started", r->noun, r->shown);
    reaper_order(&r->reaper, REAPER_TREE | SIGTERM);
    arm_timer(r, KILL_AFTER_MS);
}

/* A signal for us: the command's while it runs; before that, give up. */
static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct runner *r = arg;
    if (r->phase == RUNNING)
        reaper_order(&r->reaper, (int)sig);
    else if (r->phase == ACQUIRING) {
        r->exit_code = 128 + (int)sig;
        if ((r->permit ? hilock_permit_cancel(r->permit)
                       : hilock_lock_cancel(r->lock)) != 0)
            finish(r, r->exit_code);
    } else if (r->phase == PROBING)
        finish(r, 128 + (int)sig);
}

/* What the command gets in its environment about the hold, so that it can
 * check it where it writes: HILOCK_LOCK_NAME; HILOCK_OWNER_FIELD, the
 * field its hold has in the lock hash (a permit: HILOCK_PERMIT_ID, its id
 * in hex); with --fence, HILOCK_FENCE_TOKEN. 0, or -1 with a message. */
static int command_env(struct runner *r)
{
    char id[37], field[64], permit[33], token[24];
    int rc = 0;
    if (r->permits) {
        rc = hilock_permit_id(r->permit, permit, sizeof(permit)) != 0 ||
             setenv("HILOCK_PERMIT_ID", permit, 1) != 0;
    } else {
        rc = hilock_client_id(r->client, id, sizeof(id)) != 0;
        snprintf(field, sizeof(field), "%s:%llu%s", id,
                 (unsigned long long)getpid(),
                 r->side == HILOCK_WRITE ? ":write" : "");
        rc = rc || setenv("HILOCK_OWNER_FIELD", field, 1) != 0;
    }
    snprintf(token, sizeof(token), "%lld",
             (long long)(r->permit ? 0 : hilock_lock_token(r->lock)));
    rc = rc || setenv("HILOCK_LOCK_NAME", r->name, 1) != 0 ||
         (r->fence && setenv("HILOCK_FENCE_TOKEN", token, 1) != 0);
    if (rc)
        cli_error("cannot pass the hold to the command's environment");
    return rc ? -1 : 0;
}

/* The lock is ours: start the reaper and with it the command, with every
 * signal blocked across the fork so that no libevent handler runs in the
 * child. 0, or -1 with a message. */
static int command_start(struct runner *r)
{
    if (command_env(r) != 0)
        return -1;
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &old);
    int rc = reaper_start(&r->cmd, &r->reaper);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return -1;
    event_assign(r->report, r->base, r->reaper.report, EV_READ, on_report, r);
    if (event_add(r->report, NULL) != 0) {
        /* Without the report we cannot tell when it ends: end it now. */
        cli_error("cannot watch the command; stopping it");
        reaper_close(&r->reaper);
        return -1;
    }
    r->phase = RUNNING;
    return 0;
}

static void on_acquired(struct hilock_lock *lock, int status,
                        const struct hilock_result *res, void *arg);

static void on_permit_acquired(struct hilock_permit *p, int status,
                               const struct hilock_result *res, void *arg)
{
    (void)p;
    on_acquired(NULL, status, res, arg);
}

static void on_permit_lost(struct hilock_permit *p, int status,
                           const struct hilock_result *res, void *arg)
{
    (void)p;
    on_lost(NULL, status, res, arg);
}

/* Say why -n did not get it; ttl is what the busy acquire reported: the
 * holder's lease, or for a permit when the first one taken expires
 * (HILOCK_TTL_NONE: none will, or no expiry). */
static void say_busy(const struct runner *r, int64_t ttl)
{
    char when[64] = "";
    if (ttl >= 0)
        snprintf(when, sizeof(when), " (%s %lld ms)",
                 r->permits ? "the first taken expires in" : "ttl",
                 (long long)ttl);
    if (r->permits)
        cli_error("every permit of semaphore %s is taken%s", r->shown, when);
    else
        cli_error("%s is held by another owner%s", r->shown, when);
}

static long long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Take the lock: try once with -n, else wait -w ms or, without -w, as long
 * as it takes. With --wait-replicas a wait starts with one try: the library
 * takes a failed WAIT as a passing failure and tries again for as long as
 * a wait lasts, so without that try a run whose replicas are missing would
 * wait without a word (without -w: forever) instead of saying so. 0, or
 * -1 with a message. */
static int acquire(struct runner *r)
{
    uint64_t wait_ms = HILOCK_MS_MAX;
    if (r->phase == PROBING) {
        r->phase = ACQUIRING;
        r->wait_start_ms = now_ms();
        r->first_try = r->wait_replicas && !r->nonblock && r->wait_ms > 0;
    }
    if (r->nonblock || r->first_try) {
        wait_ms = 0;
    } else if (r->wait_given) {
        uint64_t spent = (uint64_t)(now_ms() - r->wait_start_ms);
        wait_ms = spent < r->wait_ms ? r->wait_ms - spent : 0;
    }
    int rc = r->permit ? hilock_permit_acquire(r->permit, wait_ms,
                                               r->lease_ms,
                                               on_permit_acquired, r)
                       : hilock_lock_acquire(r->lock, wait_ms, r->lease_ms,
                                             on_acquired, r);
    if (rc != 0)
        cli_error("acquiring %s: %s", r->shown, hilock_strerror(rc));
    return rc != 0 ? -1 : 0;
}

/* The acquire's outcome: run the command, or the exit code that says why
 * not (75 busy with -n, 124 not within -w, 128+N a signal, 125 else). */
static void on_acquired(struct hilock_lock *lock, int status,
                        const struct hilock_result *res, void *arg)
{
    struct runner *r = arg;
    int first = r->first_try;
    r->first_try = 0;
    if (first && (status == HILOCK_EBUSY || status == HILOCK_ETIMEDOUT ||
                  status == HILOCK_ECONN)) {
        /* Held, or no answer: now the wait itself. */
        if (acquire(r) != 0)
            finish(r, CLI_EXIT_FAILURE);
    } else if (status == 0) {
        if (r->permit)
            hilock_permit_on_lost(r->permit, on_permit_lost, r);
        else
            hilock_lock_on_lost(lock, on_lost, r);
        if (command_start(r) != 0) {
            r->exit_code = CLI_EXIT_FAILURE;
            release_start(r);
        }
    } else if (status == HILOCK_EBUSY && r->nonblock) {
        say_busy(r, res->ttl_ms);
        finish(r, CLI_EXIT_BUSY);
    } else if (status == HILOCK_EBUSY || (status == HILOCK_ETIMEDOUT &&
                                          r->wait_given)) {
        /* EBUSY: -w 0, one try. */
        cli_error("%s not acquired within %llu ms", r->shown,
                  (unsigned long long)r->wait_ms);
        finish(r, CLI_EXIT_TIMEDOUT);
    } else if (status == HILOCK_ETIMEDOUT) {
        /* No -w: the wait has no bound, whatever ended this one. */
        if (acquire(r) != 0)
            finish(r, CLI_EXIT_FAILURE);
    } else if (status == HILOCK_ECANCELED) {
        finish(r, r->exit_code);  /* a signal: 128+N */
    } else {
        char doing[sizeof(r->shown) + 16];
        snprintf(doing, sizeof(doing), "acquiring %s", r->shown);
        say_failed(r, doing, status);
        finish(r, CLI_EXIT_FAILURE);
    }
}

/* The ttl query answered (or the semaphore's permits were set): Redis is
 * there, so go for the lock. */
static void on_probe(struct hilock_lock *lock, int status,
                     const struct hilock_result *res, void *arg)
{
    struct runner *r = arg;
    (void)lock;
    (void)res;
    if (r->phase != PROBING)
        return;
    if (status != 0) {
        say_failed(r, NULL, status);
        finish(r, CLI_EXIT_FAILURE);
        return;
    }
    if (acquire(r) != 0)
        finish(r, CLI_EXIT_FAILURE);
}

/* The semaphore has permits now (set by us when res->permits_set). One set
 * before with another total is used as it is, with a word on stderr: it is
 * shared, and its users agreed on its size first. Its total is read with
 * status's blocking connection (2 s at most), once, before the command starts:
 * the library counts only the permits available. Then as on_probe. */
static void on_init(struct hilock_permit *permit, int status,
                    const struct hilock_result *res, void *arg)
{
    struct runner *r = arg;
    long long total;
    (void)permit;
    if (r->phase == PROBING && status == 0 && !res->permits_set &&
        cli_semaphore_total(r->redis, r->name, &total) == 0 &&
        total != (long long)r->permits)
        cli_error("semaphore %s has %lld permits in all, not %llu: it is "
                  "used as it is", r->shown, total,
                  (unsigned long long)r->permits);
    on_probe(NULL, status, res, arg);
}

/* ---- setup ------------------------------------------------------------- */

/* After NAME: an optional "--", then the command. A word that looks like an
 * option is refused there rather than run as the command: options go
 * before NAME. 0, or -1 with a message. */
static int parse_command(struct runner *r, int argc, char **argv, int i)
{
    char shown[CLI_ESCAPED_SIZE(32)];
    if (i < argc && strcmp(argv[i], "--") == 0) {
        i++;
    } else if (i < argc && argv[i][0] == '-' && argv[i][1]) {
        cli_error("'%s' after NAME: options go before NAME (a command that "
                  "starts with '-' goes after --)",
                  cli_escape(shown, sizeof(shown), argv[i], strlen(argv[i])));
        return -1;
    }
    if (i >= argc) {
        cli_error("run needs a lock NAME and a command (try hilock --help)");
        return -1;
    }
    r->cmd.argv = argv + i;
    return 0;
}

/* Check --read, --write and --permits, and set r->noun; 0, or -1 with a
 * message. */
static int check_kind(struct runner *r)
{
    const char *side = r->side == HILOCK_READ ? "read" : "write";
    if (r->side == (HILOCK_READ | HILOCK_WRITE)) {
        cli_error("--read and --write exclude each other: a run holds one "
                  "side of a read-write lock");
        return -1;
    }
    if (r->permits && r->side) {
        cli_error("--permits and --%s exclude each other: NAME is a "
                  "semaphore or a read-write lock", side);
        return -1;
    }
    if (r->fair && (r->permits || r->side)) {
        cli_error("--fair is for a lock: not with --%s",
                  r->permits ? "permits" : side);
        return -1;
    }
    if (r->fair && r->redis->topo == CLI_REDLOCK) {
        cli_error("--fair is not for --redlock: its queue lives on one "
                  "master");
        return -1;
    }
    if ((r->permits || r->side) && r->redis->topo == CLI_REDLOCK) {
        cli_error("--%s is not for --redlock: read-write locks and "
                  "semaphores live on one master",
                  r->permits ? "permits" : side);
        return -1;
    }
    r->noun = r->permits ? "a permit of semaphore"
              : r->side == HILOCK_READ  ? "read lock"
              : r->side == HILOCK_WRITE ? "write lock"
                                        : "lock";
    return 0;
}

/* Check the options taken together; 0, or -1 with a message. */
static int check_args(struct runner *r, int lease_given,
                      int watchdog_given, int wait_timeout_given)
{
    if (lease_given && watchdog_given) {
        cli_error("-l and -L exclude each other: -l is a fixed lease, -L the "
                  "lease the watchdog renews");
        return -1;
    }
    if (lease_given && r->lease_ms == 0) {
        cli_error("-l 0: a fixed lease is at least 1 ms (leave -l out, or "
                  "give -L, for the watchdog)");
        return -1;
    }
    if (watchdog_given && r->watchdog_ms < WATCHDOG_MIN_MS) {
        cli_error("the watchdog lease -L must be at least %d ms (it is "
                  "renewed every third of it)", WATCHDOG_MIN_MS);
        return -1;
    }
    if (wait_timeout_given && !r->wait_replicas) {
        cli_error("--wait-timeout is how long --wait-replicas waits: it "
                  "needs --wait-replicas N (N >= 1)");
        return -1;
    }
    if (wait_timeout_given && r->wait_timeout_ms == 0) {
        cli_error("--wait-timeout must be at least 1 ms");
        return -1;
    }
    if (r->fence && (r->side || r->permits)) {
        cli_error("--fence: fencing tokens are drawn for a plain lock only, "
                  "not with --read, --write or --permits");
        return -1;
    }
    if (check_kind(r) != 0 || cli_redis_check(r->redis) != 0)
        return -1;
    return cli_name_check(r->redis, r->name);
}

/* Parse the count s of option opt, min..max, into *n: a replica count
 * (WAIT's numreplicas) or a number of permits. 0, or -1 with a message
 * naming unit. */
static int count_arg(const char *opt, const char *unit, const char *s,
                     uint64_t min, uint64_t max, uint64_t *n)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || !*s || *end || *s == '-' || *s == '+' || v < min ||
        v > max) {
        cli_error("bad %s '%s' (a number of %s, %llu..%llu)", opt, s, unit,
                  (unsigned long long)min, (unsigned long long)max);
        return -1;
    }
    *n = v;
    return 0;
}

/* Parse "run"'s arguments into r and redis; 0, 1 for --help, -1 on a
 * usage error (message printed). */
static int parse_args(struct runner *r, struct cli_redis *redis, int argc,
                      char **argv)
{
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        CLI_REDIS_LONGOPTS,
        {"wait-replicas", required_argument, NULL, CLI_OPT_WAIT_REPLICAS},
        {"wait-timeout", required_argument, NULL, CLI_OPT_WAIT_TIMEOUT},
        {"read", no_argument, NULL, CLI_OPT_READ},
        {"write", no_argument, NULL, CLI_OPT_WRITE},
        {"permits", required_argument, NULL, CLI_OPT_PERMITS},
        {"fence", no_argument, NULL, CLI_OPT_FENCE},
        {"fair", no_argument, NULL, CLI_OPT_FAIR},
        {NULL, 0, NULL, 0}};
    int c, lease_given = 0, watchdog_given = 0, wait_timeout_given = 0;
    while ((c = getopt_long(argc, argv, "+H:p:u:a:w:l:L:nh", longopts,
                            NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case 'h':
            return 1;
        case 'w':
            bad = cli_ms_arg("wait", optarg, &r->wait_ms);
            r->wait_given = 1;
            break;
        case 'l':
            bad = cli_ms_arg("lease", optarg, &r->lease_ms);
            lease_given = 1;
            break;
        case 'L':
            bad = cli_ms_arg("watchdog lease", optarg, &r->watchdog_ms);
            watchdog_given = 1;
            break;
        case 'n':
            r->nonblock = 1;
            break;
        case CLI_OPT_WAIT_REPLICAS:
            bad = count_arg("--wait-replicas", "replicas", optarg, 0,
                            HILOCK_MS_MAX, &r->wait_replicas);
            break;
        case CLI_OPT_READ:
            r->side |= HILOCK_READ;
            break;
        case CLI_OPT_WRITE:
            r->side |= HILOCK_WRITE;
            break;
        case CLI_OPT_FENCE:
            r->fence = 1;
            break;
        case CLI_OPT_PERMITS:
            bad = count_arg("--permits", "permits", optarg, 1,
                            HILOCK_PERMITS_MAX, &r->permits);
            break;
        case CLI_OPT_FAIR:
            r->fair = 1;
            break;
        case CLI_OPT_WAIT_TIMEOUT:
            bad = cli_ms_arg("wait timeout", optarg, &r->wait_timeout_ms);
            wait_timeout_given = 1;
            break;
        default:
            bad = cli_redis_option(redis, c, optarg);
        }
        if (bad)
            return -1;
    }
    if (optind >= argc) {
        cli_error("run needs a lock NAME and a command (try hilock --help)");
        return -1;
    }
    r->name = argv[optind];
    cli_escape(r->shown, sizeof(r->shown), r->name, strlen(r->name));
    if (parse_command(r, argc, argv, optind + 1) != 0)
        return -1;
    return check_args(r, lease_given, watchdog_given, wait_timeout_given);
}

/* Undo what the parent may have done to the signals hilock relies on: a
 * blocked SIGCHLD or SIGTERM would never arrive, an ignored SIGCHLD would
 * reap behind our back. The command gets the same mask. A forwarded signal
 * that was ignored stays ignored, by hilock and the command (nohup's SIGHUP,
 * SIGINT of a background job): it is not watched. */
static void signals_reset(struct runner *r)
{
    sigset_t used;
    sigemptyset(&used);
    sigaddset(&used, SIGCHLD);
    for (size_t i = 0; i < NFORWARDED; i++)
        sigaddset(&used, forwarded[i]);
    for (int sig = 1; sig < NSIG; sig++)
        if (sigismember(&used, sig) == 1)
            sigdelset(&r->cmd.mask, sig);
    sigprocmask(SIG_UNBLOCK, &used, NULL);
    signal(SIGCHLD, SIG_DFL);
    signal(SIGPIPE, SIG_IGN);  /* a dead Redis socket must not kill us */
}

/* The events: forwarded signals, the timer, the report (assigned later).
 * 0, or -1 with a message. */
static int runner_events(struct runner *r)
{
    for (size_t i = 0; i < NFORWARDED; i++) {
        if (sigismember(&r->cmd.ignored, forwarded[i]) == 1)
            continue;
        r->sig[i] = evsignal_new(r->base, forwarded[i], on_signal, r);
        if (!r->sig[i] || evsignal_add(r->sig[i], NULL) != 0) {
            cli_error("cannot watch signal %s", strsignal(forwarded[i]));
            return -1;
        }
    }
    r->timer = evtimer_new(r->base, on_timer, r);
    r->report = event_new(r->base, -1, 0, on_report, r);
    if (!r->timer || !r->report) {
        cli_error("out of memory");
        return -1;
    }
    return 0;
}

/* The handle into r->lock: a mutex or one side of a read-write lock owned
 * by our pid, or an expiring permit. 0 or a HILOCK_E* code. */
static int handle_new(struct runner *r)
{
    size_t len = strlen(r->name);
    uint64_t tag = (uint64_t)getpid();
    if (r->permits)
        return hilock_permit_new(r->client, r->name, len, &r->permit);
    if (r->side)
        return hilock_rwlock_new(r->client, r->name, len, tag,
                                 (enum hilock_rw_side)r->side, &r->lock);
    return hilock_lock_new(r->client, r->name, len, tag, &r->lock);
}

/* The loop, the client, the lock handle and the events; 0, or -1 with a
 * message saying which failed. */
static int runner_open(struct runner *r)
{
    const struct cli_redis *redis = r->redis;
    struct hilock_options opts;
    hilock_options_init(&opts);
    opts.node.host = redis->host;
    opts.node.port = redis->port;
    if (redis->topo == CLI_REDLOCK) {
        opts.topology = HILOCK_TOPOLOGY_REDLOCK;
        opts.redlock.masters = redis->list;
        opts.redlock.count = redis->nlist;
    } else if (redis->topo == CLI_SENTINEL) {
        opts.topology = HILOCK_TOPOLOGY_SENTINEL;
        opts.sentinel.nodes = redis->list;
        opts.sentinel.count = redis->nlist;
        opts.sentinel.master_name = redis->master_name;
        opts.sentinel.password = redis->sentinel_password;
    } else if (redis->topo == CLI_CLUSTER) {
        opts.topology = HILOCK_TOPOLOGY_CLUSTER;
        opts.cluster.seeds = redis->list;
        opts.cluster.count = redis->nlist;
    }
    opts.username = redis->username;
    opts.password = redis->password;
    opts.tls = redis->tls;
    opts.fair = r->fair;
    opts.wait_replicas = (uint32_t)r->wait_replicas;
    if (r->wait_timeout_ms)
        opts.wait_timeout_ms = (uint32_t)r->wait_timeout_ms;
    opts.log_cb = on_log;
    opts.log_arg = r;
    opts.fencing = r->fence;
    if (r->watchdog_ms)
        opts.watchdog_lease_ms = (uint32_t)r->watchdog_ms;
    if (!(r->base = event_base_new())) {
        cli_error("cannot create an event loop");
        return -1;
    }
    int rc = hilock_client_new(r->base, &opts, &r->client);
    if (rc != 0) {
        cli_error("cannot set up a Redis client: %s", hilock_strerror(rc));
        return -1;
    }
    rc = handle_new(r);
    if (rc != 0) {
        cli_error("cannot set up %s %s: %s", r->noun, r->shown,
                  hilock_strerror(rc));
        return -1;
    }
    return runner_events(r);
}

static void runner_close(struct runner *r)
{
    for (size_t i = 0; i < NFORWARDED; i++)
        if (r->sig[i])
            event_free(r->sig[i]);
    if (r->report)
        event_free(r->report);
    if (r->timer)
        event_free(r->timer);
    reaper_close(&r->reaper);  /* a reaper still running ends it all */
    hilock_client_free(r->client);  /* the lock is released or lost by now */
    hilock_lock_free(r->lock);      /* detached: only its memory goes */
    hilock_permit_free(r->permit);
    if (r->base)
        event_base_free(r->base);
    reaper_cmd_free(&r->cmd);
}

/* The ttl query that checks Redis answers (for a semaphore: setting its
 * permits if it has none), then the loop; the exit code. */
static int runner_run(struct runner *r)
{
    int rc = r->permits
                 ? hilock_permit_try_set_permits(r->permit,
                                                 (uint32_t)r->permits,
                                                 on_init, r)
                 : hilock_lock_query_ttl(r->lock, on_probe, r);
    if (rc != 0) {
        cli_error("cannot ask Redis about %s: %s", r->shown,
                  hilock_strerror(rc));
        return CLI_EXIT_FAILURE;
    }
    event_base_dispatch(r->base);
    return r->phase == DONE ? r->exit_code : CLI_EXIT_FAILURE;
}

int cli_run(int argc, char **argv)
{
    struct runner r;
    struct cli_redis redis;
    memset(&r, 0, sizeof(r));
    r.reaper = (struct reaper){0, -1, -1};
    r.wait_ms = HILOCK_MS_MAX;
    r.redis = &redis;
    cli_redis_init(&redis);
    /* First, before anything is opened or changed. */
    if (reaper_cmd_init(&r.cmd) != 0)
        return CLI_EXIT_FAILURE;
    int rc = parse_args(&r, &redis, argc, argv);
    if (rc != 0) {
        reaper_cmd_free(&r.cmd);
        if (rc > 0)
            cli_usage(0);
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
    }
    signals_reset(&r);
    rc = runner_open(&r) == 0 ? runner_run(&r) : CLI_EXIT_FAILURE;
    runner_close(&r);
    return rc;
}
