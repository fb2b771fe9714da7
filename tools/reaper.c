/* SPDX-License-Identifier: BSD-3-Clause */
/* reaper.c -- the process between hilock run and its command.
 *
 * hilock run must hold the lock for as long as anything the command started
 * runs, and must be able to stop all of it: a command may ignore SIGTERM,
 * may leave children behind, or may daemonize (fork twice, so that the
 * worker is no longer its child and often sits in a session of its own).
 * One small process, forked from hilock without an exec, does that:
 *
 *  - It is a child subreaper (PR_SET_CHILD_SUBREAPER): whatever the command
 *    leaves behind is re-parented to it, not to init, so waitpid(-1) sees
 *    every descendant end. It reports the command's wait status to hilock
 *    only when none is left, and hilock holds the lock until then.
 *  - It watches hilock through a pipe. At EOF -- hilock died, even by
 *    SIGKILL, so nobody renews the lock any more -- it SIGKILLs every
 *    descendant, then exits.
 *  - It finds descendants by their parent pids in /proc, so a daemon in a
 *    session or process group of its own is found too.
 *  - It sits in a process group of its own and blocks every signal, so that
 *    neither the terminal's signals nor a kill of the job's process group
 *    reach it, while the command joins hilock's group: job control and
 *    terminal input work as they would without hilock.
 *  - The command gets PR_SET_PDEATHSIG(SIGKILL), which it cannot ignore:
 *    should the reaper die, so does the command.
 *
 * What is not covered: a process the command has started through another
 * parent (at, systemd-run, a service it asks) is not a descendant; and when
 * the reaper itself is SIGKILLed, the command dies but its own descendants
 * are re-parented to init (or the nearest subreaper) and keep running after
 * the lease. A SIGKILL of hilock alone, or of hilock's process group, is
 * covered.
 *
 * Linux only: subreapers, PR_SET_PDEATHSIG, signalfd and /proc. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "reaper.h"

#define RESCAN_MS 100  /* while killing: look again for late descendants */

/* ---- descriptors -------------------------------------------------------- */

/* qsort/bsearch order of descriptors. */
static int fd_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The open descriptors above stderr, from /proc/self/fd, sorted, in a
 * malloc'd array; -1 (errno set) when it cannot be read or allocated. */
static int fds_open(int **out, size_t *n)
{
    DIR *d = opendir("/proc/self/fd");
    int *fds = NULL, *grown;
    size_t len = 0, cap = 0;
    if (!d)
        return -1;
    int self = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] == '.' || fd <= 2 || fd == self)
            continue;
        if (len == cap) {
            cap = cap ? 2 * cap : 64;
            if (!(grown = realloc(fds, cap * sizeof(*fds)))) {
                free(fds);
                closedir(d);
                return -1;
            }
            fds = grown;
        }
        fds[len++] = fd;
    }
    closedir(d);
    if (len)
        qsort(fds, len, sizeof(*fds), fd_cmp);
    *out = fds;
    *n = len;
    return 0;
}

/* In the reaper: close every descriptor hilock opened itself (its Redis
 * sockets, its event loop's), keeping what hilock was given and the two
 * pipe ends. */
static void fds_close_ours(const struct reaper_cmd *c, int keep1, int keep2)
{
    int *now;
    size_t n;
    if (fds_open(&now, &n) != 0)
        return;
    for (size_t i = 0; i < n; i++)
        if (now[i] != keep1 && now[i] != keep2 &&
            !bsearch(&now[i], c->fds, c->nfds, sizeof(int), fd_cmp))
            close(now[i]);
    free(now);
}

int reaper_cmd_init(struct reaper_cmd *c)
{
    memset(c, 0, sizeof(*c));
    if (fds_open(&c->fds, &c->nfds) != 0) {
        cli_error("cannot list open descriptors in /proc/self/fd: %s",
                  strerror(errno));
        return -1;
    }
    sigprocmask(SIG_SETMASK, NULL, &c->mask);
    sigemptyset(&c->ignored);
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction sa;
        if (sig != SIGCHLD && sigaction(sig, NULL, &sa) == 0 &&
            sa.sa_handler == SIG_IGN)
            sigaddset(&c->ignored, sig);
    }
    c->pgid = getpgrp();
    return 0;
}

void reaper_cmd_free(struct reaper_cmd *c)
{
    free(c->fds);
    c->fds = NULL;
    c->nfds = 0;
}

/* ---- the process tree --------------------------------------------------- */

struct proc {
    pid_t pid, ppid;
    int ours;  /* found to descend from the reaper (and signalled) */
};

/* The parent pid of pid from /proc/<pid>/stat, or -1. The command name
 * may hold spaces and parentheses: the fields after it follow the last
 * ')'. */
static pid_t parent_of(pid_t pid)
{
    char path[64], stat[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, stat, sizeof(stat) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    stat[n] = '\0';
    char state;
    int ppid;
    const char *end = strrchr(stat, ')');
    if (!end || sscanf(end + 1, " %c %d", &state, &ppid) != 2)
        return -1;
    return ppid;
}

/* Every process with its parent, in a malloc'd array; 0, or -1. */
static int procs_list(struct proc **out, size_t *n)
{
    DIR *d = opendir("/proc");
    struct proc *all = NULL, *grown;
    size_t len = 0, cap = 0;
    struct dirent *e;
    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL) {
        pid_t pid = (pid_t)atoi(e->d_name), ppid;
        if (pid <= 0 || (ppid = parent_of(pid)) < 0)
            continue;
        if (len == cap) {
            cap = cap ? 2 * cap : 256;
            if (!(grown = realloc(all, cap * sizeof(*all))))
                break;
            all = grown;
        }
        all[len++] = (struct proc){pid, ppid, 0};
    }
    closedir(d);
    *out = all;
    *n = len;
    return 0;
}

/* Whether pid is the reaper (self) or a process found to descend from it. */
static int tree_has(const struct proc *all, size_t n, pid_t pid, pid_t self)
{
    if (pid == self)
        return 1;
    for (size_t i = 0; i < n; i++)
        if (all[i].ours && all[i].pid == pid)
            return 1;
    return 0;
}

/* Send sig to every descendant of this process, parents before their
 * children. A pid that is not our child could be reused between the scan
 * and the kill; the window is microseconds and pids are reused only once
 * the counter wraps, so that risk is taken. */
static void tree_signal(int sig)
{
    struct proc *all;
    size_t n, found;
    pid_t self = getpid();
    if (procs_list(&all, &n) != 0)
        return;
    do {
        found = 0;
        for (size_t i = 0; i < n; i++) {
            if (all[i].ours || all[i].pid <= 1 || all[i].pid == self ||
                !tree_has(all, n, all[i].ppid, self))
                continue;
            all[i].ours = 1;
            kill(all[i].pid, sig);
            found++;
        }
    } while (found);
    free(all);
}

/* ---- the reaper process ------------------------------------------------- */

/* What the reaper keeps track of. */
struct reaping {
    pid_t cmd;     /* the command, 0 once reaped */
    int status;    /* its wait status */
    int ctl;       /* read end of the orders; -1 after EOF */
    int killing;   /* SIGKILL whatever is found, until nothing is left */
};

/* In the command's process: die with the reaper, join hilock's process
 * group, take the signal state hilock was started with, exec. Never
 * returns. */
static _Noreturn void cmd_exec(const struct reaper_cmd *c, pid_t reaper)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != reaper)
        _exit(CLI_EXIT_FAILURE);
    setpgid(0, c->pgid);  /* if hilock's group is gone: the reaper's */
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, sigismember(&c->ignored, sig) ? SIG_IGN : SIG_DFL);
    sigprocmask(SIG_SETMASK, &c->mask, NULL);
    execvp(c->argv[0], c->argv);
    int err = errno;
    char shown[CLI_ESCAPED_SIZE(256)];
    cli_error("%s: %s", cli_escape(shown, sizeof(shown), c->argv[0],
                                   strlen(c->argv[0])), strerror(err));
    _exit(err == ENOENT ? CLI_EXIT_NOTFOUND : CLI_EXIT_NOEXEC);
}

/* Carry out one order from hilock. */
static void order_do(struct reaping *st, unsigned char order)
{
    int sig = order & ~REAPER_TREE;
    if (order & REAPER_TREE) {
        if (sig == SIGKILL)
            st->killing = 1;
        tree_signal(sig);
    } else if (st->cmd) {
        kill(st->cmd, sig);
    } else {
        tree_signal(sig);
    }
}

/* Read the orders waiting on the pipe; at EOF, kill everything. */
static void orders_read(struct reaping *st)
{
    unsigned char buf[64];
    ssize_t n = read(st->ctl, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
        return;
    if (n <= 0) {
        close(st->ctl);
        st->ctl = -1;
        st->killing = 1;
        return;
    }
    for (ssize_t i = 0; i < n; i++)
        order_do(st, buf[i]);
}

/* Reap every child that has exited; whether none is left. */
static int reap(struct reaping *st)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
        if (pid == st->cmd) {
            st->status = status;
            st->cmd = 0;
        }
    return pid < 0 && errno == ECHILD;
}

/* Wait until the command and every descendant are gone, obeying orders
 * meanwhile; sfd reads SIGCHLD. */
static void reap_all(struct reaping *st, int sfd)
{
    while (!reap(st)) {
        struct pollfd p[2] = {{st->ctl, POLLIN, 0}, {sfd, POLLIN, 0}};
        /* A process re-parented to us sends no SIGCHLD: while killing,
         * look for late ones now and then. */
        if (st->killing)
            tree_signal(SIGKILL);
        if (poll(p, 2, st->killing ? RESCAN_MS : -1) < 0 && errno != EINTR)
            st->killing = 1;  /* cannot wait for orders: end it all */
        if (p[1].revents) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
            }
        }
        if (st->ctl >= 0 && p[0].revents)
            orders_read(st);
    }
}

/* Tell hilock the command's wait status and exit. */
static _Noreturn void report_exit(int report, int status)
{
    ssize_t w = write(report, &status, sizeof(status));
    _exit(w == (ssize_t)sizeof(status) ? 0 : CLI_EXIT_FAILURE);
}

/* The reaper: see the top of the file. Every signal is blocked (by
 * reaper_start's caller) and stays so. When it cannot start the command it
 * reports an exit status of CLI_EXIT_FAILURE. Never returns. */
static _Noreturn void reaper_main(const struct reaper_cmd *c, int ctl, int report)
{
    struct reaping st = {0, 0, ctl, 0};
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    setpgid(0, 0);
    prctl(PR_SET_NAME, "hilock-reaper");
    fds_close_ours(c, ctl, report);
    signal(SIGCHLD, SIG_DFL);  /* SIG_IGN would reap behind our back */
    int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0 || prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
        cli_error("cannot watch the command: %s", strerror(errno));
        report_exit(report, W_EXITCODE(CLI_EXIT_FAILURE, 0));
    }
    pid_t self = getpid();
    fflush(NULL);
    st.cmd = fork();
    if (st.cmd == 0)
        cmd_exec(c, self);
    if (st.cmd < 0) {
        cli_error("fork: %s", strerror(errno));
        report_exit(report, W_EXITCODE(CLI_EXIT_FAILURE, 0));
    }
    reap_all(&st, sfd);
    report_exit(report, st.status);
}

int reaper_start(const struct reaper_cmd *c, struct reaper *r)
{
    int ctl[2], report[2];
    if (pipe2(ctl, O_CLOEXEC) != 0) {
        cli_error("pipe: %s", strerror(errno));
        return -1;
    }
    if (pipe2(report, O_CLOEXEC) != 0) {
        cli_error("pipe: %s", strerror(errno));
        close(ctl[0]);
        close(ctl[1]);
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        reaper_main(c, ctl[0], report[1]);
    int err = errno;
    close(ctl[0]);
    close(report[1]);
    if (pid < 0) {
        close(ctl[1]);
        close(report[0]);
        cli_error("fork: %s", strerror(err));
        return -1;
    }
    *r = (struct reaper){pid, ctl[1], report[0]};
    return 0;
}

void reaper_order(struct reaper *r, int order)
{
    unsigned char b = (unsigned char)order;
    if (r->ctl >= 0 && write(r->ctl, &b, 1) != 1) {
        /* The reaper is gone; its report tells the rest. */
    }
}

int reaper_wait(struct reaper *r, int *status)
{
    ssize_t n;
    do
        n = read(r->report, status, sizeof(*status));
    while (n < 0 && errno == EINTR);
    while (waitpid(r->pid, NULL, 0) < 0 && errno == EINTR) {
    }
    r->pid = 0;
    return n == (ssize_t)sizeof(*status) ? 0 : -1;
}

void reaper_close(struct reaper *r)
{
    if (r->ctl >= 0)
        close(r->ctl);
    if (r->report >= 0)
        close(r->report);
    r->ctl = r->report = -1;
}
