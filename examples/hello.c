/* SPDX-License-Identifier: BSD-3-Clause */
/* hello.c -- hilock's smallest complete program: connect, take the lock
 * "hello" under the watchdog, work for a second while holding it, release
 * it, close. Build: cc hello.c $(pkg-config --cflags --libs hilock libevent)
 * Run: ./hello [host [port]]   (default 127.0.0.1 6379) */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <event2/event.h>
#include <hilock/hilock.h>

static struct hilock_client *client;
static struct hilock_lock *lock;
static struct event *work;
static int exit_code = 1;

static void on_closed(struct hilock_client *c, void *arg) { (void)c, (void)arg; }

/* The end, whatever happened: free the handle, close the client. */
static void shut_down(void)
{
    event_free(work);
    hilock_lock_free(lock);
    hilock_client_close(client, on_closed, NULL);
}

static void on_released(struct hilock_lock *l, int status,
                        const struct hilock_result *res, void *a)
{
    printf("released: %s\n", hilock_strerror(status));
    exit_code = status == 0 ? 0 : 1;
    shut_down();
}

/* The work is done: give the lock back. */
static void on_work_done(evutil_socket_t fd, short what, void *arg)
{
    if (hilock_lock_release(lock, on_released, NULL) != 0)
        shut_down();
}

/* The lock was lost while held (Redis gone too long, or the key deleted):
 * stop working at once, the lock no longer protects anything. */
static void on_lost(struct hilock_lock *l, int status,
                    const struct hilock_result *res, void *a)
{
    fprintf(stderr, "lost the lock: %s\n", hilock_strerror(status));
    shut_down();
}

static void on_acquired(struct hilock_lock *l, int status,
                        const struct hilock_result *res, void *a)
{
    struct timeval one_second = {1, 0};
    if (status != 0) {
        fprintf(stderr, "not acquired: %s\n", hilock_strerror(status));
        shut_down();
        return;
    }
    printf("acquired \"hello\"; working for a second\n");
    event_add(work, &one_second);
}

int main(int argc, char **argv)
{
    struct event_base *base = event_base_new();
    struct hilock_options opts;
    signal(SIGPIPE, SIG_IGN); /* hiredis writes to sockets that may close */
    hilock_options_init(&opts);
    opts.node.host = argc > 1 ? argv[1] : "127.0.0.1";
    opts.node.port = argc > 2 ? atoi(argv[2]) : 6379;
    if (!base || hilock_client_new(base, &opts, &client) != 0 ||
        hilock_lock_new(client, "hello", 5, 0, &lock) != 0)
        return 1;
    work = evtimer_new(base, on_work_done, NULL);
    hilock_lock_on_lost(lock, on_lost, NULL);
    /* Wait up to 10 s for it; lease 0: the watchdog renews it while held. */
    if (hilock_lock_acquire(lock, 10000, 0, on_acquired, NULL) != 0)
        shut_down();
    event_base_dispatch(base); /* returns once the client is closed */
    event_base_free(base);
    return exit_code;
}
