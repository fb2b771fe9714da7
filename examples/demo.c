/* SPDX-License-Identifier: BSD-3-Clause */
/* demo.c -- two clients on one event loop contend for one lock.
 *
 * Starts a throwaway redis-server on a free loopback port, then runs a short
 * scripted story and prints each event as it happens:
 *   1. alice takes "inventory001" under the watchdog (fencing on);
 *   2. bob tries once and is told it is busy, with alice's remaining lease;
 *   3. bob waits up to 5 s; alice re-enters, then releases twice after 300 ms;
 *   4. bob gets the lock with a larger fencing token, and releases it.
 * Exits 0 when every step happened as described. */
#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <hilock/hilock.h>

#include "redis_server.h"

static struct event_base *base;
static struct hilock_lock *alice, *bob;
static struct timespec t0;
static int failures;
static int64_t alice_token;

static double ms_since_start(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0.tv_sec) * 1e3 +
           (double)(t.tv_nsec - t0.tv_nsec) / 1e6;
}

static void say(const char *who, const char *what, int status, int64_t value)
{
    printf("%8.1f ms  %-5s  %-28s %-18s value=%" PRId64 "\n",
           ms_since_start(), who, what, hilock_err_name(status), value);
}

static void expect(int ok, const char *what)
{
    if (!ok) {
        printf("           UNEXPECTED: %s\n", what);
        failures++;
    }
}

static void bob_released(struct hilock_lock *l, int status,
                         const struct hilock_result *left, void *arg)
{
    say("bob", "release", status, left->holds);
    expect(status == 0 && left->holds == 0, "bob's release frees the lock");
    event_base_loopbreak(base);
}

static void bob_acquired(struct hilock_lock *l, int status,
                         const struct hilock_result *token, void *arg)
{
    say("bob", "acquire (waited)", status, token->token);
    expect(status == 0, "bob gets the lock once alice lets go");
    expect(token->token > alice_token, "bob's fencing token is larger");
    if (status == 0)
        hilock_lock_release(bob, bob_released, NULL);
    else
        event_base_loopbreak(base);
}

static void alice_released(struct hilock_lock *l, int status,
                           const struct hilock_result *left, void *arg)
{
    say("alice", "release", status, left->holds);
    expect(status == 0, "alice's release succeeds");
    if (status == 0 && left->holds > 0)
        hilock_lock_release(alice, alice_released, NULL);
}

static void alice_lets_go(evutil_socket_t fd, short what, void *arg)
{
    hilock_lock_release(alice, alice_released, NULL);
}

static void alice_reentered(struct hilock_lock *l, int status,
                            const struct hilock_result *token, void *arg)
{
    say("alice", "acquire again (re-entry)", status, token->token);
    expect(status == 0 && hilock_lock_hold_count(l) == 2,
           "alice re-enters her own lock");
    struct timeval later = {0, 300 * 1000};
    event_base_once(base, -1, EV_TIMEOUT, alice_lets_go, NULL, &later);
}

static void bob_tried(struct hilock_lock *l, int status,
                      const struct hilock_result *ttl, void *arg)
{
    say("bob", "try-acquire", status, ttl->ttl_ms);
    expect(status == HILOCK_EBUSY && ttl->ttl_ms > 0,
           "bob finds it busy with a ttl");
    hilock_lock_acquire(bob, 5000, 0, bob_acquired, NULL);
    hilock_lock_acquire(alice, 0, 0, alice_reentered, NULL);
}

static void alice_acquired(struct hilock_lock *l, int status,
                           const struct hilock_result *token, void *arg)
{
    say("alice", "acquire", status, token->token);
    expect(status == 0, "alice gets the free lock");
    alice_token = token->token;
    if (status == 0)
        hilock_lock_acquire(bob, 0, 0, bob_tried, NULL);
    else
        event_base_loopbreak(base);
}

static void give_up(evutil_socket_t fd, short what, void *arg)
{
    printf("           UNEXPECTED: the demo did not finish in 15 s\n");
    failures++;
    event_base_loopbreak(base);
}

int main(void)
{
    struct rs_server *srv = rs_start(NULL);
    if (!srv)
        return 1;
    printf("redis-server pid %d on 127.0.0.1:%d\n", (int)rs_pid(srv),
           rs_port(srv));
    base = event_base_new();
    struct hilock_options opts;
    hilock_options_init(&opts);
    opts.node.port = rs_port(srv);
    opts.fencing = 1;
    struct hilock_client *ca, *cb;
    if (hilock_client_new(base, &opts, &ca) || hilock_client_new(base, &opts, &cb) ||
        hilock_lock_new(ca, "inventory001", 12, 1, &alice) ||
        hilock_lock_new(cb, "inventory001", 12, 1, &bob)) {
        fprintf(stderr, "demo: cannot create clients\n");
        rs_stop(srv);
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    hilock_lock_acquire(alice, 0, 0, alice_acquired, NULL);
    struct timeval limit = {15, 0};
    event_base_once(base, -1, EV_TIMEOUT, give_up, NULL, &limit);
    event_base_dispatch(base);
    hilock_client_free(ca);
    hilock_client_free(cb);
    hilock_lock_free(alice); /* handles outlive their client: free them */
    hilock_lock_free(bob);
    event_base_free(base);
    rs_stop(srv);
    printf(failures ? "demo: %d unexpected event(s)\n"
                    : "demo: mutual exclusion held; redis-server stopped\n",
           failures);
    return failures ? 1 : 0;
}
