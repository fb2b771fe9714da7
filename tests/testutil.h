/* SPDX-License-Identifier: BSD-3-Clause */
/* testutil.h -- shared pieces of the Check suites: a fresh event_base and
 * redis-server per test, loop runners with deadlines, a recording callback,
 * synchronous wrappers that fail the test when no callback arrives, the
 * client's readiness, and what Redis holds for a lock.
 *
 * Tests wait for events (a callback, a reply, a state change), not for
 * time. A bound on time is a timeout that fails the test; pass upper bounds
 * through tu_ms(), so that they stretch under valgrind
 * (CK_TIMEOUT_MULTIPLIER=10). "Nothing more arrives" is checked with
 * tu_run_quiet() and its one window, TU_QUIET_MS.
 *
 * Check runs every test in a forked child; the fixture runs there too, so
 * the globals below are per test. */
#ifndef HILOCK_TESTS_TESTUTIL_H
#define HILOCK_TESTS_TESTUTIL_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>

#include <hilock/hilock.h>

#include "redis_server.h"

extern struct event_base *tu_base;
extern struct rs_server *tu_srv;

/* Checked fixtures: a new event_base and, for tu_setup, a new server. */
void tu_setup(void);
void tu_setup_no_redis(void);
void tu_teardown(void);
/* The fixture most suites share: tu_setup, then two clients with the
 * default options (tu_options) into *a and *b; and its end: both freed
 * (and set to NULL), then tu_teardown. */
struct hilock_client;
void tu_setup_pair(struct hilock_client **a, struct hilock_client **b);
void tu_teardown_pair(struct hilock_client **a, struct hilock_client **b);

/* A loopback TCP port where connections are refused, for a client pointed
 * at no server: the port stays bound (not listening) until tu_teardown(),
 * so no server started meanwhile can take it, and no connection to it can
 * get it as its own source port and connect to itself, as a port that was
 * merely free a moment ago (rs_free_port) can. Fails the test on error. */
int tu_dead_port(void);

/* rs_start_opts() with the options every test server gets on top (opts may
 * be NULL): hz 100, so that the server acts on SIGTERM within 10 ms rather
 * than at its next 100 ms cron tick. NULL on failure. */
struct rs_server *tu_server_start(const struct rs_options *opts);

/* Milliseconds on the monotonic clock. */
long long tu_now_ms(void);

/* ms times CK_TIMEOUT_MULTIPLIER (taken as 1 when unset or below 1): for
 * upper bounds, the time something may take before the test fails. Not for
 * lower bounds ("not before"), nor for a bound that tells two outcomes
 * apart: a slower run must not let the wrong outcome pass. */
int tu_ms(int ms);

/* The window in which a test checks that nothing more arrives (a second
 * callback, a late reply): long enough for a reply already on its way over
 * loopback and the timers due now. tu_run_quiet() runs the loop for
 * tu_ms(TU_QUIET_MS). */
#define TU_QUIET_MS 100
void tu_run_quiet(void);

/* Run the loop until cond(arg) is true or timeout_ms passes; returns
 * whether cond became true. The loop wakes at least every 5 ms. */
typedef bool tu_cond_fn(void *arg);
bool tu_run_until(tu_cond_fn *cond, void *arg, int timeout_ms);
/* Run the loop for ms milliseconds. */
void tu_run_for(int ms);
/* Run until *counter >= n; returns whether it got there in time. */
bool tu_run_until_count(const int *counter, int n, int timeout_ms);
/* Run the loop, polling rs_int(tu_srv, cmd, ..., NULL) every 10 ms, until
 * it returns expect; returns whether it did within timeout_ms. */
bool tu_run_until_redis(long long expect, int timeout_ms, const char *cmd,
                        ...);

/* What a callback saw. calls counts invocations; the other fields hold
 * the last one. at_ms is tu_now_ms() at the call; handle is the handle it
 * was about, lock the same for a lock's callback (tu_record). */
struct tu_result {
    int calls;
    int status;
    struct hilock_result res;
    long long at_ms;
    struct hilock_lock *lock;
    const void *handle;
};
/* A hilock_lock_cb, hilock_semaphore_cb and hilock_permit_cb recording
 * into the struct tu_result given as arg; each fails the test on a NULL
 * result. */
void tu_record(struct hilock_lock *lock, int status,
               const struct hilock_result *res, void *arg);
void tu_record_sem(struct hilock_semaphore *sem, int status,
                   const struct hilock_result *res, void *arg);
void tu_record_permit(struct hilock_permit *permit, int status,
                      const struct hilock_result *res, void *arg);

/* Whether no field of res is set: what a callback gets on an error, and
 * with the statuses whose operations set none. */
bool tu_result_empty(const struct hilock_result *res);

/* Options for the test server: defaults, port of tu_srv, 1500 ms request
 * and connect timeouts. */
void tu_options(struct hilock_options *opts);
/* A client from opts (NULL: tu_options); fails the test on error. Its state
 * changes are recorded for the helpers below (and passed on to
 * opts->state_cb). */
struct hilock_client *tu_client(const struct hilock_options *opts);
/* Run until client is ready: it reported HILOCK_STATE_UP and answered a
 * query, so its scripts are loaded (their SCRIPT LOAD replies come first)
 * and whatever it sent before the query has been answered too. Fails the
 * test otherwise. */
void tu_client_ready(struct hilock_client *client);
/* How many times client (made by tu_client) reported HILOCK_STATE_UP. */
int tu_ups(const struct hilock_client *client);
/* Run until client has reported HILOCK_STATE_UP n times in all, e.g. after
 * a restart; returns whether it did within timeout_ms. */
bool tu_run_until_up(const struct hilock_client *client, int n,
                     int timeout_ms);
/* Run until the last state client reported for the connection that state
 * is about (HILOCK_STATE_UP/DOWN: the command connection; PUBSUB_UP/DOWN:
 * the subscriber) is state; returns whether it was within timeout_ms. */
bool tu_run_until_state(const struct hilock_client *client, int state,
                        int timeout_ms);
/* Keep lock (a handle the test may leave to its client's free) reachable
 * for the leak checkers until the test ends; returns it. tu_lock does. */
struct hilock_lock *tu_keep(struct hilock_lock *lock);
/* A lock handle; fails the test on error. */
struct hilock_lock *tu_lock(struct hilock_client *client, const char *name,
                            uint64_t owner_tag);
/* A read-write lock handle on side HILOCK_READ or HILOCK_WRITE, a
 * counting semaphore's handle, an expiring-permit semaphore's handle: kept
 * as tu_lock's; each fails the test on error. */
struct hilock_lock *tu_rwlock(struct hilock_client *client, const char *name,
                              uint64_t owner_tag, enum hilock_rw_side side);
struct hilock_semaphore *tu_semaphore(struct hilock_client *client,
                                      const char *name);
struct hilock_permit *tu_permit(struct hilock_client *client,
                                const char *name);
/* The number of owner fields in lock hash key: its fields other than the
 * "<field>:rid" bookkeeping of the acquire request id. -1 on error. */
long long tu_owner_fields(const char *key);
/* The owner field "<client-uuid>:<tag>" in buf (>= 64 bytes). */
const char *tu_field(struct hilock_client *client, uint64_t owner_tag,
                     char *buf);
/* The hold count Redis has in lock hash key for client's owner_tag, RS_NIL
 * when that owner holds nothing there. */
long long tu_holds(const char *key, struct hilock_client *client,
                   uint64_t owner_tag);
/* EXISTS key on tu_srv: 1 or 0 (RS_ERR on error). */
long long tu_exists(const char *key);
/* Run until Redis has run one script call more than now (EVALSHA: in the
 * tests that use it, a renewal by the watchdog) and lock's client has read
 * its reply (a query sent behind it is answered). Fails the test when that
 * takes longer than timeout_ms. */
void tu_await_renewal(struct hilock_lock *lock, int timeout_ms);
/* The lock commands tu_srv has run so far: script calls (EVALSHA) and
 * the plain fast path's RESTORE and HDEL. */
long long tu_lock_calls(void);
/* Run for window_ms and then the quiet window, and fail the test if Redis
 * ran a lock command meanwhile: no renewal (nor any other lock operation)
 * for a lock that must not be renewed any more. window_ms should cover a
 * renewal period, a third of the watchdog lease. */
void tu_assert_no_script_call(int window_ms);

/* The release channel (the Redisson layout) and the fencing counter of lock
 * name, a string literal: golden literals, not taken from src/. */
#define TU_CHANNEL(name) "redisson_lock__channel:{" name "}"
#define TU_FENCE(name) "hilock_fence:{" name "}"
/* The fencing counter of lock name (NUL-terminated): how many acquisitions
 * Redis granted it with fencing on; RS_NIL when none. */
long long tu_fence(const char *name);
/* Run the loop until PUBSUB NUMSUB channel reports n subscribers; returns
 * whether it did within timeout_ms. */
bool tu_numsub_becomes(const char *channel, long long n, int timeout_ms);

/* Issue the call, run the loop until its callback fires (failing the test
 * if it does not within the wait plus a margin) and return its status;
 * *res (if not NULL) gets the result. */
int tu_acquire(struct hilock_lock *lock, uint64_t wait_ms, uint64_t lease_ms,
               struct hilock_result *res);
int tu_release(struct hilock_lock *lock, struct hilock_result *res);
int tu_sem_acquire(struct hilock_semaphore *s, uint32_t permits,
                   uint64_t wait_ms, struct hilock_result *res);
int tu_sem_release(struct hilock_semaphore *s, uint32_t permits,
                   struct hilock_result *res);
int tu_permit_acquire(struct hilock_permit *p, uint64_t wait_ms,
                      uint64_t lease_ms, struct hilock_result *res);
int tu_permit_release(struct hilock_permit *p, struct hilock_result *res);
/* tu_acquire (try once) again while it fails with a connection-level code
 * (ECONN, ETIMEDOUT), for up to tu_ms(5000): across a reconnect. */
int tu_acquire_eventually(struct hilock_lock *lock, uint64_t lease_ms);
typedef int tu_query_fn(struct hilock_lock *lock, hilock_lock_cb *cb,
                        void *arg);
int tu_query(tu_query_fn *fn, struct hilock_lock *lock,
             struct hilock_result *res);
typedef int tu_sem_query_fn(struct hilock_semaphore *sem,
                            hilock_semaphore_cb *cb, void *arg);
int tu_sem_query(tu_sem_query_fn *fn, struct hilock_semaphore *sem,
                 struct hilock_result *res);
typedef int tu_permit_query_fn(struct hilock_permit *p, hilock_permit_cb *cb,
                               void *arg);
int tu_permit_query(tu_permit_query_fn *fn, struct hilock_permit *p,
                    struct hilock_result *res);

/* Fail unless status is expect, naming both codes; each is evaluated once
 * (status is often the call under test). */
#define tu_assert_status(status, expect)                                      \
    do {                                                                       \
        int tu_got_ = (status), tu_want_ = (expect);                           \
        ck_assert_msg(tu_got_ == tu_want_,                                     \
                      "status %s (%d), expected %s (%d)",                      \
                      hilock_err_name(tu_got_), tu_got_,                       \
                      hilock_err_name(tu_want_), tu_want_);                    \
    } while (0)

/* A suite name with one test case of the same name: the tests[0..n-1],
 * each run between setup and teardown (a checked fixture), timeout_s
 * seconds each at most. */
Suite *tu_suite(const char *name, SFun setup, SFun teardown, int timeout_s,
                const TTest *const *tests, size_t n);

/* Run the suite (verbosity from CK_VERBOSITY); the exit status for main. */
int tu_main(Suite *suite);

#endif /* HILOCK_TESTS_TESTUTIL_H */
