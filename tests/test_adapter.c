/* SPDX-License-Identifier: BSD-3-Clause */
/* test_adapter.c -- the event adapter of the connections (src/adapter.c)
 * with plain hiredis against a real redis-server: a write the owner takes
 * leaves only when the owner writes, what the socket does not take goes by
 * the poll, and a context that dies in the owner's write is let go. */
#include "testutil.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "adapter.h"

/* The owner of the test's context: takes the writes when take is set
 * (and writes them itself, by adapter_write_now). */
struct owner {
    redisAsyncContext *ac;
    int take;
    int asked;        /* write_soon calls */
    int replies;      /* non-NULL replies */
    int errors;       /* error replies */
    int disconnected; /* disconnect callbacks */
    int disconnect_status;
};

static int write_soon(redisAsyncContext *ac, void *arg)
{
    struct owner *o = arg;
    (void)ac;
    o->asked++;
    return o->take;
}

static void on_reply(redisAsyncContext *ac, void *reply, void *arg)
{
    struct owner *o = arg;
    redisReply *r = reply;
    (void)ac;
    if (!r)
        return;
    o->replies++;
    if (r->type == REDIS_REPLY_ERROR)
        o->errors++;
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    struct owner *o = ac->data;
    o->disconnected++;
    o->disconnect_status = status;
}

/* A context on the test server through the adapter, connected: a PING
 * went by the poll (the owner takes nothing yet). */
static void owner_open(struct owner *o)
{
    memset(o, 0, sizeof(*o));
    o->ac = redisAsyncConnect("127.0.0.1", rs_port(tu_srv));
    ck_assert_ptr_nonnull(o->ac);
    ck_assert_int_eq(o->ac->err, 0);
    o->ac->data = o;
    ck_assert_int_eq(adapter_attach(o->ac, tu_base, write_soon, o), 0);
    ck_assert_int_eq(adapter_attach(o->ac, tu_base, write_soon, o), -1);
    redisAsyncSetDisconnectCallback(o->ac, on_disconnect);
    ck_assert_int_eq(redisAsyncCommand(o->ac, on_reply, o, "PING"),
                     REDIS_OK);
    ck_assert(tu_run_until_count(&o->replies, 1, tu_ms(5000)));
    ck_assert(o->ac->c.flags & REDIS_CONNECTED);
}

static void owner_close(struct owner *o)
{
    if (!o->disconnected)
        redisAsyncFree(o->ac);
}

START_TEST(a_taken_write_leaves_when_the_owner_writes)
{
    struct owner o;
    owner_open(&o);
    int asked = o.asked;
    o.take = 1;
    ck_assert_int_eq(redisAsyncCommand(o.ac, on_reply, &o, "PING"),
                     REDIS_OK);
    ck_assert_int_gt(o.asked, asked);
    tu_run_for(200);
    ck_assert_int_eq(o.replies, 1); /* nothing polled it out */
    adapter_write_now(o.ac);
    ck_assert(tu_run_until_count(&o.replies, 2, tu_ms(5000)));
    ck_assert_int_eq(o.errors, 0);
    owner_close(&o);
}
END_TEST

/* Commands of about 48 MB in all: more than a loopback socket takes in
 * one write, so the rest goes by the poll. */
START_TEST(what_the_socket_does_not_take_goes_by_the_poll)
{
    enum { N = 3000, VALUE = 16384 };
    struct owner o;
    owner_open(&o);
    o.take = 1; /* and writes once, below: the poll sends the rest */
    char *value = malloc(VALUE);
    ck_assert_ptr_nonnull(value);
    memset(value, 'v', VALUE);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(redisAsyncCommand(o.ac, on_reply, &o,
                                           "SET big:%d %b", i % 16, value,
                                           (size_t)VALUE),
                         REDIS_OK);
    free(value);
    adapter_write_now(o.ac);
    ck_assert(tu_run_until_count(&o.replies, 1 + N, tu_ms(30000)));
    ck_assert_int_eq(o.errors, 0);
    owner_close(&o);
}
END_TEST

/* A write that fails (the socket was shut for writing) makes hiredis let
 * the context go inside adapter_write_now: the adapter ends after it
 * (ASan and valgrind check that nothing is touched after the free). */
START_TEST(a_context_lost_in_the_owners_write_is_let_go)
{
    struct owner o;
    void (*was)(int) = signal(SIGPIPE, SIG_IGN);
    owner_open(&o);
    o.take = 1;
    ck_assert_int_eq(shutdown(o.ac->c.fd, SHUT_WR), 0);
    ck_assert_int_eq(redisAsyncCommand(o.ac, on_reply, &o, "PING"),
                     REDIS_OK);
    adapter_write_now(o.ac);
    ck_assert_int_eq(o.disconnected, 1);
    ck_assert_int_eq(o.disconnect_status, REDIS_ERR);
    ck_assert_int_eq(o.replies, 1);
    owner_close(&o);
    signal(SIGPIPE, was);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("adapter");
    TCase *tc = tcase_create("adapter");
    tcase_add_checked_fixture(tc, tu_setup, tu_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_taken_write_leaves_when_the_owner_writes);
    tcase_add_test(tc, what_the_socket_does_not_take_goes_by_the_poll);
    tcase_add_test(tc, a_context_lost_in_the_owners_write_is_let_go);
    suite_add_tcase(s, tc);
    return tu_main(s);
}
