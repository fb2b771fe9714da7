/* SPDX-License-Identifier: BSD-3-Clause */
/* test_hostile.c -- a misbehaving server costs a connection, not the process.
 *
 * hiredis aborts or crashes on some replies a broken or hostile peer can
 * send (see src/reply_guard.c). Here the peer is a fake Redis on the test's own
 * loop: it answers SCRIPT LOAD, EVALSHA and (UN)SUBSCRIBE the way Redis
 * would, except for one reply per test, which it replaces with a bad one or
 * follows with an unsolicited one. Each test then checks that the process
 * lives on, that the client dropped the connection that carried the bad
 * reply, that the acquire in progress completed exactly once, and that the
 * client works again over a new connection.
 *
 * The fake answers every acquire with "acquired" (holds 1, token 0) unless
 * the test says otherwise for the first one; a busy answer (the holder's
 * PTTL, 5000) makes a waiting acquire subscribe on the subscriber
 * connection, which is how the pub/sub cases reach it. */
#include "testutil.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#define REQ_MS 1000  /* request and connect timeouts of the client */
#define WAIT_MS 3000 /* wait_ms of the acquires that subscribe */
#define BUSY ":5000\r\n"
#define ACQUIRED "*2\r\n:1\r\n:0\r\n"

/* What the fake says differently from Redis. NULL fields: what Redis says.
 * In first_subscribe, '@' stands for the subscribed channel as a bulk
 * string. */
struct script {
    const char *first_acquire;       /* reply to the first EVALSHA */
    const char *after_first_acquire; /* sent right behind that reply */
    const char *first_subscribe;     /* reply to the first SUBSCRIBE */
};

struct fake_conn {
    struct fake *fake;
    struct bufferevent *bev;
    struct fake_conn *next;
};

struct fake {
    struct evconnlistener *listener;
    int port;
    const struct script *script;
    struct fake_conn *conns;
    int accepted;   /* connections accepted */
    int closed;     /* connections the client closed */
    int acquires;   /* EVALSHA commands answered */
    int subscribes; /* SUBSCRIBE commands answered */
};

static struct fake fake;
static struct hilock_client *client;
static char *big; /* a reply built at run time */

/* One command as read: its argument count and the first two arguments. */
struct cmd {
    long long argc;
    const char *arg[2];
    size_t len[2];
};

/* Read "<type><integer>\r\n" at *pos. 1 with *v set, 0 when more bytes are
 * needed, -1 when the bytes are not that. */
static int read_num(const char *p, size_t n, size_t *pos, char type,
                    long long *v)
{
    size_t i = *pos;
    if (i >= n)
        return 0;
    if (p[i++] != type)
        return -1;
    long long x = 0;
    while (i < n && p[i] >= '0' && p[i] <= '9')
        x = x * 10 + (p[i++] - '0');
    if (i + 2 > n)
        return 0;
    if (p[i] != '\r' || p[i + 1] != '\n')
        return -1;
    *pos = i + 2;
    *v = x;
    return 1;
}

/* Parse one RESP array of bulk strings from p/n into *c. Returns the bytes
 * it took, 0 when incomplete, -1 when malformed. */
static long cmd_parse(const char *p, size_t n, struct cmd *c)
{
    size_t pos = 0;
    int rc = read_num(p, n, &pos, '*', &c->argc);
    if (rc <= 0)
        return rc;
    for (long long i = 0; i < c->argc; i++) {
        long long len;
        if ((rc = read_num(p, n, &pos, '$', &len)) <= 0)
            return rc;
        if (pos + (size_t)len + 2 > n)
            return 0;
        if (i < 2) {
            c->arg[i] = p + pos;
            c->len[i] = (size_t)len;
        }
        pos += (size_t)len + 2;
    }
    return (long)pos;
}

/* Append text to out with each '@' replaced by the channel ch/len as a bulk
 * string. */
static void add_with_channel(struct evbuffer *out, const char *text,
                             const char *ch, size_t len)
{
    for (const char *at; (at = strchr(text, '@')) != NULL; text = at + 1) {
        evbuffer_add(out, text, (size_t)(at - text));
        evbuffer_add_printf(out, "$%zu\r\n", len);
        evbuffer_add(out, ch, len);
    }
    evbuffer_add(out, text, strlen(text));
}

/* Answer one command the way the script says. */
static void answer(struct fake *f, struct evbuffer *out, const struct cmd *c)
{
    const struct script *s = f->script;
    const char *name = c->arg[0];
    size_t nlen = c->argc > 0 ? c->len[0] : 0;
    if (nlen == 7 && strncasecmp(name, "EVALSHA", 7) == 0) {
        int first = f->acquires++ == 0;
        const char *r = first && s->first_acquire ? s->first_acquire
                                                  : ACQUIRED;
        evbuffer_add(out, r, strlen(r));
        if (first && s->after_first_acquire)
            evbuffer_add(out, s->after_first_acquire,
                         strlen(s->after_first_acquire));
    } else if (nlen == 6 && strncasecmp(name, "SCRIPT", 6) == 0) {
        evbuffer_add_printf(out, "$40\r\n%040d\r\n", 0);
    } else if (nlen == 9 && strncasecmp(name, "SUBSCRIBE", 9) == 0) {
        int first = f->subscribes++ == 0;
        const char *r = first && s->first_subscribe
                            ? s->first_subscribe
                            : "*3\r\n$9\r\nsubscribe\r\n@\r\n:1\r\n";
        add_with_channel(out, r, c->arg[1], c->len[1]);
    } else if (nlen == 11 && strncasecmp(name, "UNSUBSCRIBE", 11) == 0) {
        add_with_channel(out, "*3\r\n$11\r\nunsubscribe\r\n@\r\n:0\r\n",
                         c->arg[1], c->len[1]);
    } else {
        evbuffer_add(out, "+OK\r\n", 5);
    }
}

/* Close one of the fake's connections and forget it. */
static void conn_free(struct fake_conn *fc)
{
    struct fake_conn **pp = &fc->fake->conns;
    while (*pp != fc)
        pp = &(*pp)->next;
    *pp = fc->next;
    bufferevent_free(fc->bev);
    free(fc);
}

/* Answer every complete command the client has sent, in order. */
static void on_read(struct bufferevent *bev, void *arg)
{
    struct fake_conn *fc = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    for (;;) {
        size_t n = evbuffer_get_length(in);
        const char *p = (const char *)evbuffer_pullup(in, -1);
        struct cmd c = {0, {"", ""}, {0, 0}};
        long took = n ? cmd_parse(p, n, &c) : 0;
        ck_assert_msg(took >= 0, "the client sent a malformed command");
        if (took == 0)
            return;
        if (c.argc > 0)
            answer(fc->fake, bufferevent_get_output(bev), &c);
        evbuffer_drain(in, (size_t)took);
    }
}

/* The client closed the connection (or it broke): count it. */
static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct fake_conn *fc = arg;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        fc->fake->closed++;
        conn_free(fc);
    }
}

/* A new client connection: read its commands. */
static void on_accept(struct evconnlistener *l, evutil_socket_t fd,
                      struct sockaddr *sa, int salen, void *arg)
{
    struct fake *f = arg;
    struct fake_conn *fc = calloc(1, sizeof *fc);
    ck_assert_ptr_nonnull(fc);
    fc->fake = f;
    fc->bev = bufferevent_socket_new(tu_base, fd, BEV_OPT_CLOSE_ON_FREE);
    ck_assert_ptr_nonnull(fc->bev);
    bufferevent_setcb(fc->bev, on_read, NULL, on_event, fc);
    bufferevent_enable(fc->bev, EV_READ | EV_WRITE);
    fc->next = f->conns;
    f->conns = fc;
    f->accepted++;
}

/* Start the fake on 127.0.0.1 and a port the kernel picks. */
static void fake_start(const struct script *s)
{
    struct sockaddr_in sin;
    socklen_t len = sizeof sin;
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fake.script = s;
    fake.listener = evconnlistener_new_bind(
        tu_base, on_accept, &fake, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
        16, (struct sockaddr *)&sin, sizeof sin);
    ck_assert_ptr_nonnull(fake.listener);
    evutil_socket_t fd = evconnlistener_get_fd(fake.listener);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
    fake.port = ntohs(sin.sin_port);
}

static void setup(void)
{
    tu_setup_no_redis();
    memset(&fake, 0, sizeof fake);
    client = NULL;
    big = NULL;
}

static void teardown(void)
{
    hilock_client_free(client);
    client = NULL;
    while (fake.conns)
        conn_free(fake.conns);
    if (fake.listener)
        evconnlistener_free(fake.listener);
    free(big);
    tu_teardown();
}

/* Peak virtual memory of this process, in KiB (VmPeak), or -1. */
static long long vm_peak_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long long kib = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmPeak: %lld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

/* A client of the fake started with script s, and a lock on it. */
static struct hilock_lock *lock_on_fake(const struct script *s)
{
    struct hilock_options o;
    fake_start(s);
    hilock_options_init(&o);
    o.scripts_only = 1; /* the fake server speaks the scripts only */
    o.node.port = fake.port;
    o.request_timeout_ms = REQ_MS;
    o.connect_timeout_ms = REQ_MS;
    client = tu_client(&o);
    return tu_lock(client, "victim", 1);
}

/* Acquire (wait_ms as given) against the fake playing script s: the
 * acquire must complete exactly once with expect, the process must not have
 * grown by 256 MiB or more meanwhile, and the client must have closed one
 * connection (the one with the bad reply), or none when expect_drop is 0. */
static struct hilock_lock *check_case(const struct script *s, uint64_t wait_ms,
                                      int expect, int expect_drop)
{
    static struct tu_result r; /* outlives the call: a late second callback */
    struct hilock_lock *l = lock_on_fake(s);
    memset(&r, 0, sizeof r);
    long long peak0 = vm_peak_kib();
    tu_assert_status(hilock_lock_acquire(l, wait_ms, 10000, tu_record, &r), 0);
    ck_assert_msg(tu_run_until_count(&r.calls, 1, (int)wait_ms + 5000),
                  "the acquire never completed");
    long long grew = vm_peak_kib() - peak0;
    ck_assert_msg(grew < 256 * 1024, "VmPeak grew by %lld MiB", grew / 1024);
    if (expect_drop)
        ck_assert_msg(tu_run_until_count(&fake.closed, 1, 5000),
                      "the client kept the connection");
    tu_run_for(100); /* a second callback would come now */
    ck_assert_int_eq(r.calls, 1);
    tu_assert_status(r.status, expect);
    ck_assert_int_eq(fake.closed, expect_drop ? 1 : 0);
    return l;
}

START_TEST(well_formed_replies_pass_the_guard)
{
    /* busy, wait, subscribe, confirmation, retry, acquired: no drop */
    struct script s = {.first_acquire = BUSY};
    check_case(&s, WAIT_MS, 0, 0);
    ck_assert_int_eq(fake.acquires, 2);
    ck_assert_int_eq(fake.subscribes, 1);
}
END_TEST

/* A reply nobody asked for, after the acquire got its own: the acquire
 * keeps its answer, the connection goes, and the next acquire works over a
 * new one. */
static void check_unsolicited(const char *extra)
{
    struct script s = {.first_acquire = BUSY, .after_first_acquire = extra};
    struct hilock_lock *l = check_case(&s, 0, HILOCK_EBUSY, 1);
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
    ck_assert_int_eq(fake.accepted, 2);
}

START_TEST(unsolicited_status_reply_drops_only_the_connection)
{
    check_unsolicited("+OK\r\n");
}
END_TEST

START_TEST(unsolicited_integer_reply_drops_only_the_connection)
{
    check_unsolicited(":1\r\n");
}
END_TEST

START_TEST(unsolicited_array_reply_drops_only_the_connection)
{
    check_unsolicited("*2\r\n$1\r\na\r\n$1\r\nb\r\n");
}
END_TEST

START_TEST(huge_array_header_allocates_nothing)
{
    /* hiredis would calloc 16 GiB of element pointers for this header; the
     * acquire is sent again on the new connection and succeeds there */
    struct script s = {.first_acquire = "*2147483647\r\n"};
    check_case(&s, 0, 0, 1);
    ck_assert_int_eq(fake.acquires, 2);
}
END_TEST

START_TEST(array_longer_than_any_reply_is_refused)
{
    /* 2^25 pointers are 256 MiB: more than any hilock reply needs */
    struct script s = {.first_acquire = "*33554432\r\n:1\r\n"};
    check_case(&s, 0, 0, 1);
}
END_TEST

START_TEST(deeply_nested_array_is_refused)
{
    /* hiredis 1.x nests without a limit and frees recursively */
    const size_t depth = 1u << 20;
    big = malloc(depth * 4 + 1);
    ck_assert_ptr_nonnull(big);
    for (size_t i = 0; i < depth; i++)
        memcpy(big + i * 4, "*1\r\n", 4);
    big[depth * 4] = '\0';
    struct script s = {.first_acquire = big};
    check_case(&s, 0, 0, 1);
}
END_TEST

/* A bad reply to the first SUBSCRIBE: the subscriber connection goes, the
 * next one subscribes again, its confirmation wakes the waiter, whose retry
 * gets the lock. */
static void check_bad_subscribe_reply(const char *reply)
{
    struct script s = {.first_acquire = BUSY, .first_subscribe = reply};
    check_case(&s, WAIT_MS, 0, 1);
    ck_assert_int_eq(fake.subscribes, 2);
}

START_TEST(pubsub_reply_of_one_element_is_refused)
{
    check_bad_subscribe_reply("*1\r\n:1\r\n");
}
END_TEST

START_TEST(pubsub_reply_with_an_integer_kind_is_refused)
{
    check_bad_subscribe_reply("*3\r\n:1\r\n@\r\n:1\r\n");
}
END_TEST

START_TEST(pubsub_reply_with_an_integer_channel_is_refused)
{
    check_bad_subscribe_reply("*3\r\n$7\r\nmessage\r\n:1\r\n$1\r\nx\r\n");
}
END_TEST

START_TEST(confirmation_of_a_channel_never_subscribed_is_refused)
{
    check_bad_subscribe_reply(
        "*3\r\n$9\r\nsubscribe\r\n$5\r\nother\r\n:1\r\n");
}
END_TEST

START_TEST(unsubscribe_without_a_count_is_refused)
{
    /* a good confirmation, then an unsubscribe whose count is a string */
    struct script s = {
        .first_acquire = BUSY,
        .first_subscribe = "*3\r\n$9\r\nsubscribe\r\n@\r\n:1\r\n"
                           "*3\r\n$11\r\nunsubscribe\r\n@\r\n$1\r\nx\r\n",
    };
    check_case(&s, WAIT_MS, 0, 1);
}
END_TEST

START_TEST(unsolicited_status_on_the_subscriber_is_refused)
{
    /* a good confirmation, then a status reply no command asked for */
    struct script s = {
        .first_acquire = BUSY,
        .first_subscribe = "*3\r\n$9\r\nsubscribe\r\n@\r\n:1\r\n+OK\r\n",
    };
    check_case(&s, WAIT_MS, 0, 1);
}
END_TEST

START_TEST(resp3_push_on_the_subscriber_is_refused)
{
    check_bad_subscribe_reply(">1\r\n$7\r\nmessage\r\n");
}
END_TEST

static Suite *hostile_suite(void)
{
    Suite *s = suite_create("hostile");
    TCase *tc = tcase_create("misbehaving_peer");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, well_formed_replies_pass_the_guard);
    tcase_add_test(tc, unsolicited_status_reply_drops_only_the_connection);
    tcase_add_test(tc, unsolicited_integer_reply_drops_only_the_connection);
    tcase_add_test(tc, unsolicited_array_reply_drops_only_the_connection);
    tcase_add_test(tc, huge_array_header_allocates_nothing);
    tcase_add_test(tc, array_longer_than_any_reply_is_refused);
    tcase_add_test(tc, deeply_nested_array_is_refused);
    tcase_add_test(tc, pubsub_reply_of_one_element_is_refused);
    tcase_add_test(tc, pubsub_reply_with_an_integer_kind_is_refused);
    tcase_add_test(tc, pubsub_reply_with_an_integer_channel_is_refused);
    tcase_add_test(tc, confirmation_of_a_channel_never_subscribed_is_refused);
    tcase_add_test(tc, unsubscribe_without_a_count_is_refused);
    tcase_add_test(tc, unsolicited_status_on_the_subscriber_is_refused);
    tcase_add_test(tc, resp3_push_on_the_subscriber_is_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_main(hostile_suite());
}
