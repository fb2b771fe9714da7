/* testutil.h -- shared pieces of the Check suites: a fresh event_base and
 * redis-server per test, loop runners with deadlines, a recording callback,
 * and synchronous wrappers that fail the test when no callback arrives.
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

/* Milliseconds on the monotonic clock. */
long long tu_now_ms(void);

/* Run the loop until cond(arg) is true or timeout_ms passes; returns
 * whether cond became true. The loop wakes at least every 5 ms. */
typedef bool tu_cond_fn(void *arg);
bool tu_run_until(tu_cond_fn *cond, void *arg, int timeout_ms);
/* Run the loop for ms milliseconds. */
void tu_run_for(int ms);
/* Run until *counter >= n; returns whether it got there in time. */
bool tu_run_until_count(const int *counter, int n, int timeout_ms);
/* Run the loop, polling rs_int(tu_srv, cmd, ..., NULL) every 20 ms, until
 * it returns expect; returns whether it did within timeout_ms. */
bool tu_run_until_redis(long long expect, int timeout_ms, const char *cmd,
                        ...);

/* What a hilock_lock_cb saw. calls counts invocations; the other fields
 * hold the last one. at_ms is tu_now_ms() at the call. */
struct tu_result {
    int calls;
    int status;
    int64_t value;
    long long at_ms;
    struct hilock_lock *lock;
};
/* A hilock_lock_cb recording into the struct tu_result given as arg. */
void tu_record(struct hilock_lock *lock, int status, int64_t value,
               void *arg);

/* Options for the test server: defaults, port of tu_srv, 1500 ms request
 * and connect timeouts. */
void tu_options(struct hilock_options *opts);
/* A client from opts (NULL: tu_options); fails the test on error. */
struct hilock_client *tu_client(const struct hilock_options *opts);
/* A lock handle; fails the test on error. */
struct hilock_lock *tu_lock(struct hilock_client *client, const char *name,
                            uint64_t owner_tag);
/* The number of owner fields in lock hash key: its fields other than the
 * "<field>:rid" bookkeeping of the acquire request id. -1 on error. */
long long tu_owner_fields(const char *key);
/* The owner field "<client-uuid>:<tag>" in buf (>= 64 bytes). */
const char *tu_field(struct hilock_client *client, uint64_t owner_tag,
                     char *buf);

/* Issue the call, run the loop until its callback fires (failing the test
 * if it does not within the wait plus a margin) and return its status;
 * *value (if not NULL) gets the value. */
int tu_acquire(struct hilock_lock *lock, uint64_t lease_ms, uint64_t wait_ms,
               int64_t *value);
int tu_release(struct hilock_lock *lock, int64_t *value);
/* tu_acquire (try once) again while it fails with a connection-level code
 * (ECONN, ETIMEDOUT), for up to 5 s: across a reconnect. */
int tu_acquire_eventually(struct hilock_lock *lock, uint64_t lease_ms);
typedef int tu_query_fn(struct hilock_lock *lock, hilock_lock_cb *cb,
                        void *arg);
int tu_query(tu_query_fn *fn, struct hilock_lock *lock, int64_t *value);

/* Fail unless status is expect, naming both codes. */
#define tu_assert_status(status, expect)                                      \
    ck_assert_msg((status) == (expect), "status %s (%d), expected %s (%d)",   \
                  hilock_err_name(status), (int)(status),                    \
                  hilock_err_name(expect), (int)(expect))

/* Run the suite (verbosity from CK_VERBOSITY); the exit status for main. */
int tu_main(Suite *suite);

#endif /* HILOCK_TESTS_TESTUTIL_H */
