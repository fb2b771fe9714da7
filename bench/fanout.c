/* SPDX-License-Identifier: BSD-3-Clause */
/* fanout.c -- worker processes: fork, talk, collect, reap.
 *
 * Each worker is a forked child with a socket to the parent for small
 * fixed-size messages (ready, go, a measurement to take, figures) and a
 * temporary file for bulk results (records, samples), read back after it
 * exits. Workers die with the parent (PR_SET_PDEATHSIG) and leave with
 * _exit(); the parent kills by pid any that overrun their deadline. */
#include "bench.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* Write or read exactly len bytes. 0 or -1. */
static int io_all(int fd, void *buf, size_t len, int writing)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = writing ? write(fd, p, len) : read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int fan_send(int fd, int type, const int64_t *v, int nv)
{
    struct fan_msg m;
    memset(&m, 0, sizeof m);
    m.type = type;
    for (int i = 0; i < nv && i < 8; i++)
        m.v[i] = v[i];
    return io_all(fd, &m, sizeof m, 1);
}

int fan_recv(int fd, struct fan_msg *m, int timeout_ms)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    int rc;
    while ((rc = poll(&pfd, 1, timeout_ms)) < 0 && errno == EINTR)
        ;
    if (rc == 0)
        return 0;
    if (rc < 0 || io_all(fd, m, sizeof(*m), 0) != 0)
        return -1;
    return 1;
}

/* The child side: cut from the parent's other sockets, die with it, run. */
static void child_run(struct fanout *f, int i, int fd, pid_t parent,
                      fan_fn *fn, void *arg)
{
    for (int j = 0; j < i; j++)
        close(f->c[j].fd);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(1);
    int rc = fn(i, fd, f->c[i].out, arg);
    fflush(f->c[i].out);
    _exit(rc);
}

int fan_spawn(struct fanout *f, int n, fan_fn *fn, void *arg)
{
    pid_t parent = getpid();
    f->n = 0;
    f->failed = 0;
    if (!(f->c = calloc((size_t)n, sizeof(*f->c))))
        return -1;
    fflush(NULL); /* nothing buffered is written twice */
    for (int i = 0; i < n; i++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
            break;
        f->c[i].out = tmpfile();
        pid_t pid = f->c[i].out ? fork() : -1;
        if (pid == 0) {
            close(sv[0]);
            child_run(f, i, sv[1], parent, fn, arg);
        }
        close(sv[1]);
        f->c[i].fd = sv[0];
        f->n = i + 1;
        if (pid < 0) {
            f->c[i].pid = 0;
            break;
        }
        f->c[i].pid = pid;
    }
    if (f->n == n && f->c[n - 1].pid > 0)
        return 0;
    fprintf(stderr, "hilock-bench: could not start %d workers\n", n);
    fan_reap(f, 0);
    return -1;
}

int fan_gather(struct fanout *f, int type, struct fan_msg *msgs,
               int timeout_ms)
{
    int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
    for (int i = 0; i < f->n; i++) {
        int left = (int)((deadline - now_ns()) / 1000000);
        struct fan_msg m;
        int rc = fan_recv(f->c[i].fd, &m, left > 0 ? left : 0);
        if (rc != 1 || m.type != type) {
            fprintf(stderr, "hilock-bench: worker %d: %s (waiting for "
                            "message %d)\n", i,
                    rc == 0 ? "no answer in time"
                    : rc < 0 ? "gone" : "unexpected message", type);
            return -1;
        }
        m.index = i;
        if (msgs)
            msgs[i] = m;
    }
    return 0;
}

int fan_ready(int fd, int ok, int timeout_ms)
{
    struct fan_msg m;
    if (fan_send(fd, FAN_READY, NULL, 0) != 0 || !ok ||
        fan_recv(fd, &m, timeout_ms) != 1 || m.type != FAN_GO)
        return -1;
    return 0;
}

int fan_all_ready(struct fanout *f, int timeout_ms)
{
    if (fan_gather(f, FAN_READY, NULL, timeout_ms) == 0)
        return 0;
    fan_reap(f, 0);
    fan_free(f);
    return -1;
}

int fan_broadcast(struct fanout *f, int type)
{
    int bad = 0;
    for (int i = 0; i < f->n; i++)
        bad |= fan_send(f->c[i].fd, type, NULL, 0);
    return bad ? -1 : 0;
}

int fan_poll(struct fanout *f)
{
    int running = 0;
    for (int i = 0; i < f->n; i++) {
        int status;
        if (f->c[i].pid <= 0)
            continue;
        if (waitpid(f->c[i].pid, &status, WNOHANG) == 0) {
            running++;
            continue;
        }
        f->c[i].status = status;
        f->c[i].pid = 0;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "hilock-bench: worker %d failed (status 0x%x)\n",
                    i, status);
            f->failed++;
        }
    }
    return running;
}

int fan_reap(struct fanout *f, int64_t deadline_ns)
{
    while (fan_poll(f) > 0) {
        if (now_ns() < deadline_ns) {
            sleep_ms(10);
            continue;
        }
        for (int i = 0; i < f->n; i++) {
            if (f->c[i].pid <= 0)
                continue;
            fprintf(stderr, "hilock-bench: worker %d overran: killed\n", i);
            kill(f->c[i].pid, SIGKILL);
            waitpid(f->c[i].pid, &f->c[i].status, 0);
            f->c[i].pid = 0;
            f->failed++;
        }
    }
    return f->failed;
}

void fan_free(struct fanout *f)
{
    for (int i = 0; f->c && i < f->n; i++) {
        if (f->c[i].fd > 0)
            close(f->c[i].fd);
        if (f->c[i].out)
            fclose(f->c[i].out);
    }
    free(f->c);
    f->c = NULL;
    f->n = 0;
}

int fan_write(FILE *out, const void *p, size_t len)
{
    return len == 0 || fwrite(p, 1, len, out) == len ? 0 : -1;
}

int fan_read(FILE *in, void *p, size_t len)
{
    return len == 0 || fread(p, 1, len, in) == len ? 0 : -1;
}
