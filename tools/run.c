/* run.c -- hilock run: hold a Redis lock for as long as a command runs.
 *
 * One libevent loop does everything: hilock takes (and, under the watchdog,
 * renews) the lock; the command is fork/exec'd once the lock is ours and
 * watched through a SIGCHLD event and waitpid(); signals meant for hilock are
 * passed on to it; when it exits the lock is released and its status becomes
 * ours. If the lock is lost meanwhile, the command is told with SIGTERM (and
 * SIGKILL after KILL_AFTER_MS) and we exit CLI_EXIT_LOST: whatever it did
 * after the loss was not exclusive.
 *
 * Before anything else a query (the lock's ttl) checks that Redis answers,
 * so that a wait that times out (CLI_EXIT_TIMEDOUT) is not confused with a
 * Redis that cannot be reached (CLI_EXIT_FAILURE). */
#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <hilock/hilock.h>

#include "cli.h"

#define KILL_AFTER_MS 10000  /* SIGTERM to SIGKILL after a lost lock */
#define RELEASE_MS 10000     /* longest wait for the release's answer */
#define FDS_MAX 256          /* descriptors remembered as inherited */

/* Signals passed on to the command. */
static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
                                SIGUSR2};
#define NFORWARDED (sizeof(forwarded) / sizeof(forwarded[0]))

enum phase { PROBING, ACQUIRING, RUNNING, RELEASING, DONE };

struct runner {
    struct event_base *base;
    struct hilock_client *client;
    struct hilock_lock *lock;
    struct event *sig[NFORWARDED];
    struct event *sigchld;
    struct event *timer;    /* SIGKILL after a loss, or the release bound */
    enum phase phase;
    const char *name;
    char **cmd;
    uint64_t lease_ms, wait_ms;
    int nonblock;
    const struct cli_redis *redis;
    pid_t child;
    int lost;
    int exit_code;
    int inherited[FDS_MAX]; /* descriptors open when we started */
    int ninherited;
};

/* ---- descriptors ------------------------------------------------------- */

/* Call fn(fd, arg) for every open descriptor above stderr, from
 * /proc/self/fd; -1 when it cannot be read. */
static int fds_each(void (*fn)(int fd, void *arg), void *arg)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int self = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] != '.' && fd > 2 && fd != self)
            fn(fd, arg);
    }
    closedir(d);
    return 0;
}

static void remember_fd(int fd, void *arg)
{
    struct runner *r = arg;
    if (r->ninherited < FDS_MAX)
        r->inherited[r->ninherited++] = fd;
}

/* Mark every descriptor we opened (Redis sockets, libevent's) close-on-exec,
 * so that the command gets only what hilock itself was given. */
static void cloexec_ours(int fd, void *arg)
{
    struct runner *r = arg;
    for (int i = 0; i < r->ninherited; i++)
        if (r->inherited[i] == fd)
            return;
    int flags = fcntl(fd, F_GETFD);
    if (flags >= 0)
        fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

/* ---- the command ------------------------------------------------------- */

/* In the child: default signal handling, die with hilock (the lock would no
 * longer be renewed), exec. Never returns. */
static void child_exec(struct runner *r, pid_t parent, const sigset_t *mask)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    for (size_t i = 0; i < NFORWARDED; i++)
        sigaction(forwarded[i], &dfl, NULL);
    sigaction(SIGCHLD, &dfl, NULL);
    sigaction(SIGPIPE, &dfl, NULL);
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        _exit(CLI_EXIT_FAILURE);
#endif
    sigprocmask(SIG_SETMASK, mask, NULL);
    execvp(r->cmd[0], r->cmd);
    int err = errno;
    fprintf(stderr, "hilock: %s: %s\n", r->cmd[0], strerror(err));
    _exit(err == ENOENT ? CLI_EXIT_NOTFOUND : CLI_EXIT_NOEXEC);
}

/* Start the command. Signals stay blocked across fork() so that none runs
 * libevent's handler in the child before exec. 0, or -1 with a message. */
static int child_start(struct runner *r)
{
    sigset_t all, old;
    fds_each(cloexec_ours, r);
    fflush(NULL);
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &old);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0)
        child_exec(r, parent, &old);
    int err = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) {
        cli_error("fork: %s", strerror(err));
        return -1;
    }
    r->child = pid;
    return 0;
}

/* The exit code for a wait status: the command's, or 128+signal. */
static int code_of(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return CLI_EXIT_FAILURE;
}

/* ---- the loop ---------------------------------------------------------- */

static void finish(struct runner *r, int code)
{
    r->exit_code = code;
    r->phase = DONE;
    event_base_loopbreak(r->base);
}

static void on_released(struct hilock_lock *lock, int status, int64_t left,
                        void *arg)
{
    struct runner *r = arg;
    if (status == HILOCK_ENOTOWNER) {
        /* Gone before the command ended, unnoticed until now: what it did
         * after that was not exclusive. */
        cli_error("lock %s was lost before the command ended", r->name);
        finish(r, CLI_EXIT_LOST);
        return;
    }
    if (status != 0 && status != HILOCK_ECANCELED)
        cli_error("releasing %s: %s (its lease will run out)", r->name,
                  hilock_strerror(status));
    finish(r, r->exit_code);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct runner *r = arg;
    if (r->phase == RUNNING) {
        cli_error("command still running %d ms after SIGTERM; sending SIGKILL",
                  KILL_AFTER_MS);
        kill(r->child, SIGKILL);
    } else if (r->phase == RELEASING) {
        cli_error("no answer to the release of %s in %d ms (its lease will "
                  "run out)", r->name, RELEASE_MS);
        finish(r, r->exit_code);
    }
}

static void arm_timer(struct runner *r, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(r->timer, &tv);
}

/* SIGCHLD: reap the command; release the lock unless it was lost. */
static void on_sigchld(evutil_socket_t sig, short what, void *arg)
{
    struct runner *r = arg;
    int status;
    if (r->phase != RUNNING || waitpid(r->child, &status, WNOHANG) != r->child)
        return;
    r->exit_code = r->lost ? CLI_EXIT_LOST : code_of(status);
    r->phase = RELEASING;
    evtimer_del(r->timer);
    if (r->lost || hilock_lock_release(r->lock, on_released, r) != 0) {
        finish(r, r->exit_code);
        return;
    }
    arm_timer(r, RELEASE_MS);
}

static void on_lost(struct hilock_lock *lock, int status, int64_t v,
                    void *arg)
{
    struct runner *r = arg;
    if (r->phase != RUNNING || r->lost)
        return;
    r->lost = 1;
    cli_error("lock %s lost; sending SIGTERM to the command", r->name);
    kill(r->child, SIGTERM);
    arm_timer(r, KILL_AFTER_MS);
}

/* A signal for us: the command's while it runs; before that, give up. */
static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct runner *r = arg;
    if (r->phase == RUNNING)
        kill(r->child, (int)sig);
    else if (r->phase == ACQUIRING) {
        r->exit_code = 128 + (int)sig;
        if (hilock_lock_cancel(r->lock) != 0)
            finish(r, r->exit_code);
    } else if (r->phase == PROBING)
        finish(r, 128 + (int)sig);
}

static void on_acquired(struct hilock_lock *lock, int status, int64_t ttl,
                        void *arg)
{
    struct runner *r = arg;
    if (status == 0) {
        hilock_lock_on_lost(lock, on_lost, r);
        if (child_start(r) != 0) {
            r->exit_code = CLI_EXIT_FAILURE;
            r->phase = RELEASING;
            if (hilock_lock_release(lock, on_released, r) != 0)
                finish(r, CLI_EXIT_FAILURE);
            return;
        }
        r->phase = RUNNING;
    } else if (status == HILOCK_EBUSY) {
        cli_error("%s is held by another owner (ttl %lld ms)", r->name,
                  (long long)ttl);
        finish(r, CLI_EXIT_BUSY);
    } else if (status == HILOCK_ETIMEDOUT && !r->nonblock) {
        cli_error("%s not acquired within %llu ms", r->name,
                  (unsigned long long)r->wait_ms);
        finish(r, CLI_EXIT_TIMEDOUT);
    } else if (status == HILOCK_ECANCELED) {
        finish(r, r->exit_code);  /* a signal: 128+N */
    } else {
        cli_error("acquiring %s: %s", r->name, hilock_strerror(status));
        finish(r, CLI_EXIT_FAILURE);
    }
}

/* The ttl query answered: Redis is there, so go for the lock. */
static void on_probe(struct hilock_lock *lock, int status, int64_t ttl,
                     void *arg)
{
    struct runner *r = arg;
    if (r->phase != PROBING)
        return;
    if (status != 0) {
        cli_error("Redis at %s:%d: %s", r->redis->host, r->redis->port,
                  hilock_strerror(status));
        finish(r, CLI_EXIT_FAILURE);
        return;
    }
    r->phase = ACQUIRING;
    int rc = hilock_lock_acquire(lock, r->lease_ms,
                                 r->nonblock ? 0 : r->wait_ms, on_acquired, r);
    if (rc != 0) {
        cli_error("acquiring %s: %s", r->name, hilock_strerror(rc));
        finish(r, CLI_EXIT_FAILURE);
    }
}

/* ---- setup ------------------------------------------------------------- */

/* Parse "run"'s arguments into r, redis and *watchdog_ms (-l 0 means the
 * watchdog, as in the library); 0, 1 for --help, -1 on a usage error
 * (message printed). */
static int parse_args(struct runner *r, struct cli_redis *redis,
                      uint64_t *watchdog_ms, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "+H:p:u:a:w:l:L:nh", longopts,
                            NULL)) != -1) {
        int bad = 0;
        if (c == 'h')
            return 1;
        else if (c == 'w')
            bad = cli_ms_arg("wait", optarg, &r->wait_ms);
        else if (c == 'l')
            bad = cli_ms_arg("lease", optarg, &r->lease_ms);
        else if (c == 'L')
            bad = cli_ms_arg("watchdog lease", optarg, watchdog_ms);
        else if (c == 'n')
            r->nonblock = 1;
        else
            bad = cli_redis_option(redis, c, optarg);
        if (bad)
            return -1;
    }
    if (optind < argc)
        r->name = argv[optind++];
    if (optind < argc && strcmp(argv[optind], "--") == 0)
        optind++;
    if (!r->name || optind >= argc) {
        cli_error("run needs a lock NAME and a command (try hilock --help)");
        return -1;
    }
    size_t len = strlen(r->name);
    if (len == 0 || len > HILOCK_NAME_MAX || (*watchdog_ms != 0 &&
        (*watchdog_ms < 30 || *watchdog_ms > UINT32_MAX))) {
        cli_error("bad lock name or watchdog lease (>= 30 ms)");
        return -1;
    }
    r->cmd = argv + optind;
    return cli_redis_check(redis);
}

/* The client, the lock handle and the signal events; 0 or -1 (message). */
static int runner_open(struct runner *r, const struct cli_redis *redis,
                       uint64_t watchdog_ms)
{
    struct hilock_options opts;
    hilock_options_init(&opts);
    opts.host = redis->host;
    opts.port = redis->port;
    opts.username = redis->username;
    opts.password = redis->password;
    if (watchdog_ms)
        opts.watchdog_lease_ms = (uint32_t)watchdog_ms;
    r->base = event_base_new();
    int rc = r->base ? hilock_client_new(r->base, &opts, &r->client)
                     : HILOCK_ENOMEM;
    if (rc == 0)
        rc = hilock_lock_new(r->client, r->name, strlen(r->name),
                             (uint64_t)getpid(), &r->lock);
    if (rc != 0) {
        cli_error("%s", hilock_strerror(rc));
        return -1;
    }
    for (size_t i = 0; i < NFORWARDED; i++) {
        r->sig[i] = evsignal_new(r->base, forwarded[i], on_signal, r);
        if (!r->sig[i] || evsignal_add(r->sig[i], NULL) != 0)
            return -1;
    }
    r->sigchld = evsignal_new(r->base, SIGCHLD, on_sigchld, r);
    r->timer = evtimer_new(r->base, on_timer, r);
    if (!r->sigchld || !r->timer || evsignal_add(r->sigchld, NULL) != 0)
        return -1;
    return 0;
}

static void runner_close(struct runner *r)
{
    for (size_t i = 0; i < NFORWARDED; i++)
        if (r->sig[i])
            event_free(r->sig[i]);
    if (r->sigchld)
        event_free(r->sigchld);
    if (r->timer)
        event_free(r->timer);
    hilock_client_free(r->client);  /* the lock is released or lost by now */
    if (r->base)
        event_base_free(r->base);
}

int cli_run(int argc, char **argv)
{
    struct runner r;
    struct cli_redis redis;
    uint64_t watchdog_ms = 0;
    memset(&r, 0, sizeof(r));
    r.wait_ms = HILOCK_MS_MAX;
    cli_redis_init(&redis);
    fds_each(remember_fd, &r);
    int rc = parse_args(&r, &redis, &watchdog_ms, argc, argv);
    if (rc != 0) {
        if (rc > 0)
            cli_usage(0);
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
    }
    signal(SIGPIPE, SIG_IGN);  /* a dead Redis socket must not kill us */
    r.redis = &redis;
    r.exit_code = CLI_EXIT_FAILURE;
    if (runner_open(&r, &redis, watchdog_ms) == 0 &&
        hilock_lock_query_ttl(r.lock, on_probe, &r) == 0)
        event_base_dispatch(r.base);
    else
        cli_error("setup failed");
    if (r.phase != DONE)
        r.exit_code = CLI_EXIT_FAILURE;
    runner_close(&r);
    return r.exit_code;
}
