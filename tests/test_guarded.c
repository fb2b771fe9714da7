/* SPDX-License-Identifier: BSD-3-Clause */
/* test_guarded.c -- guarded commands: a write runs only while the handle
 * still holds its lock in Redis (held, expired, released, taken by another
 * owner, a newer fencing token, read-write sides and expiring permits),
 * another kind's key is refused, a Redlock client is refused, a failing
 * command reports what ran, and a request resent after its reply was lost
 * is applied once. */
#include "testutil.h"
#include "proxy.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct hilock_client *a, *b;
static struct tp_proxy *proxy;
static char logged[2048];

/* What a guarded callback saw: its status, and the reply summarised (the
 * view is valid during the callback only). */
struct gres {
    int calls;
    int status;
    int has_reply;
    enum hilock_reply_type type;
    int64_t integer;
    char str[64];
    size_t elements;
    enum hilock_reply_type etype[HILOCK_GUARDED_MAX];
    int64_t einteger[HILOCK_GUARDED_MAX];
    char estr[HILOCK_GUARDED_MAX][16];
};

static void on_guarded(struct hilock_lock *lock, int status,
                       const struct hilock_reply *reply, void *arg)
{
    struct gres *g = arg;
    (void)lock;
    g->calls++;
    g->status = status;
    g->has_reply = reply != NULL;
    if (!reply)
        return;
    g->type = reply->type;
    g->integer = reply->integer;
    snprintf(g->str, sizeof g->str, "%.*s", (int)reply->len,
             reply->str ? reply->str : "");
    g->elements = reply->elements;
    for (size_t i = 0; i < reply->elements && i < HILOCK_GUARDED_MAX; i++) {
        const struct hilock_reply *e = &reply->element[i];
        g->etype[i] = e->type;
        g->einteger[i] = e->integer;
        snprintf(g->estr[i], sizeof g->estr[i], "%.*s", (int)e->len,
                 e->str ? e->str : "");
    }
}

static void on_permit_guarded(struct hilock_permit *permit, int status,
                              const struct hilock_reply *reply, void *arg)
{
    (void)permit;
    on_guarded(NULL, status, reply, arg);
}

static void log_line(enum hilock_log_level level, const char *msg, void *arg)
{
    (void)level;
    (void)arg;
    size_t n = strlen(logged);
    snprintf(logged + n, sizeof logged - n, "%s\n", msg);
}

static void setup(void)
{
    tu_setup();
    proxy = NULL;
    logged[0] = '\0';
    a = tu_client(NULL);
    b = tu_client(NULL);
}

static void teardown(void)
{
    hilock_client_free(a);
    hilock_client_free(b);
    a = b = NULL;
    tp_free(proxy);
    proxy = NULL;
    tu_teardown();
}

/* A command of up to 4 NUL-terminated arguments; argument 1 is its key
 * when keyed. Storage for it comes from the caller. */
struct cmdbuf {
    const char *argv[4];
    size_t len[4];
    size_t key;
};

static struct hilock_guarded_cmd cmd(struct cmdbuf *c, int keyed, ...)
{
    va_list ap;
    size_t n = 0;
    va_start(ap, keyed);
    for (const char *s; n < 4 && (s = va_arg(ap, const char *));)
        c->argv[n] = s, c->len[n] = strlen(s), n++;
    va_end(ap);
    c->key = 1;
    return (struct hilock_guarded_cmd){n, c->argv, c->len, keyed ? 1 : 0,
                                       &c->key};
}

/* Run a guarded call on l until its callback fires; the call's own return
 * must be 0. */
static void run(struct hilock_lock *l, const struct hilock_guarded_cmd *c,
                size_t n, unsigned flags, struct gres *g)
{
    memset(g, 0, sizeof *g);
    tu_assert_status(hilock_lock_guarded(l, c, n, flags, on_guarded, g), 0);
    ck_assert_int_eq(g->calls, 0); /* never inside the call */
    ck_assert_msg(tu_run_until_count(&g->calls, 1, tu_ms(3000)),
                  "the guarded call never completed");
}

/* SET key value through permit p's guard; the status. */
static int permit_set(struct hilock_permit *p, const char *key,
                      const char *value)
{
    struct cmdbuf cb;
    struct hilock_guarded_cmd c = cmd(&cb, 1, "SET", key, value, NULL);
    struct gres g;
    memset(&g, 0, sizeof g);
    tu_assert_status(
        hilock_permit_guarded(p, &c, 1, 0, on_permit_guarded, &g), 0);
    ck_assert_int_eq(g.calls, 0); /* never inside the call */
    ck_assert_msg(tu_run_until_count(&g.calls, 1, tu_ms(3000)),
                  "the guarded call never completed");
    return g.status;
}

/* SET key value through l's guard; the status. */
static int guarded_set(struct hilock_lock *l, const char *key,
                       const char *value, unsigned flags)
{
    struct cmdbuf cb;
    struct hilock_guarded_cmd c = cmd(&cb, 1, "SET", key, value, NULL);
    struct gres g;
    run(l, &c, 1, flags, &g);
    return g.status;
}

static char *get(const char *key)
{
    return rs_str(tu_srv, "GET", key, (char *)NULL);
}

/* The value of key is want (NULL: no key). */
static void assert_value(const char *key, const char *want)
{
    char *v = get(key);
    if (!want)
        ck_assert_msg(v == NULL, "%s holds %s", key, v);
    else
        ck_assert_msg(v && strcmp(v, want) == 0, "%s holds %s, not %s", key,
                      v ? v : "(nil)", want);
    free(v);
}

/* SET key value straight on the server. */
static void set_plain(const char *key, const char *value)
{
    char *ok = rs_str(tu_srv, "SET", key, value, (char *)NULL);
    ck_assert(ok && strcmp(ok, "OK") == 0);
    free(ok);
}

START_TEST(held_lock_runs_the_command_and_returns_its_reply)
{
    struct hilock_lock *l = tu_lock(a, "stock", 1);
    struct cmdbuf c1, c2;
    struct hilock_guarded_cmd one = cmd(&c1, 1, "SET", "count", "5", NULL);
    struct gres g;
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
    run(l, &one, 1, 0, &g);
    tu_assert_status(g.status, 0);
    ck_assert(g.has_reply);
    ck_assert_int_eq(g.type, HILOCK_REPLY_STATUS);
    ck_assert_str_eq(g.str, "OK");
    assert_value("count", "5");

    struct hilock_guarded_cmd two[2] = {
        cmd(&c1, 1, "DECRBY", "count", "2", NULL),
        cmd(&c2, 1, "GET", "count", NULL)};
    run(l, two, 2, 0, &g);
    tu_assert_status(g.status, 0);
    ck_assert_int_eq(g.type, HILOCK_REPLY_ARRAY);
    ck_assert_uint_eq(g.elements, 2);
    ck_assert_int_eq(g.etype[0], HILOCK_REPLY_INTEGER);
    ck_assert_int_eq(g.etype[1], HILOCK_REPLY_STRING);
    assert_value("count", "3");
    ck_assert_int_eq(tu_holds("stock", a, 1), 1); /* the hold is untouched */
}
END_TEST

/* Element i of g's array reply is of type t, with integer v or text str. */
static void assert_element(const struct gres *g, size_t i,
                           enum hilock_reply_type t, int64_t v,
                           const char *str)
{
    ck_assert_int_eq(g->etype[i], t);
    ck_assert_int_eq(g->einteger[i], v);
    ck_assert_str_eq(g->estr[i], str);
}

/* Lists of 4 and of 6 commands: replies of every shape in one array, the
 * first as short as the arrays the client builds without allocating, the
 * second longer; each twice, so that a reused array shows no old values. */
START_TEST(arrays_of_every_element_shape_reach_the_callback_intact)
{
    struct hilock_lock *l = tu_lock(a, "stock", 1);
    struct cmdbuf c[6];
    struct gres g;
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
    for (int round = 1; round <= 2; round++) {
        const char *by = round == 1 ? "7" : "40";
        struct hilock_guarded_cmd cmds[6] = {
            cmd(&c[0], 1, "SET", "word", by, NULL),
            cmd(&c[1], 1, "GET", "nothing", NULL),
            cmd(&c[2], 1, "INCRBY", "count", by, NULL),
            cmd(&c[3], 1, "GET", "word", NULL),
            cmd(&c[4], 1, "STRLEN", "word", NULL),
            cmd(&c[5], 1, "DEL", "count", NULL)};
        for (size_t n = 4; n <= 6; n += 2) {
            run(l, cmds, n, 0, &g);
            tu_assert_status(g.status, 0);
            ck_assert_int_eq(g.type, HILOCK_REPLY_ARRAY);
            ck_assert_uint_eq(g.elements, n);
            assert_element(&g, 0, HILOCK_REPLY_STATUS, 0, "OK");
            assert_element(&g, 1, HILOCK_REPLY_NIL, 0, "");
            assert_element(&g, 2, HILOCK_REPLY_INTEGER, atoi(by) * (n / 2 - 1),
                           "");
            assert_element(&g, 3, HILOCK_REPLY_STRING, 0, by);
            if (n == 6) {
                assert_element(&g, 4, HILOCK_REPLY_INTEGER,
                               (int64_t)strlen(by), "");
                assert_element(&g, 5, HILOCK_REPLY_INTEGER, 1, "");
            }
        }
    }
}
END_TEST

START_TEST(expired_lease_refuses_the_write)
{
    struct hilock_lock *l = tu_lock(a, "stock", 1);
    tu_assert_status(tu_acquire(l, 0, 200, NULL), 0);
    ck_assert(tu_run_until_redis(0, tu_ms(3000), "EXISTS", "stock",
                                 (char *)NULL));
    tu_assert_status(guarded_set(l, "count", "1", 0), HILOCK_ENOTOWNER);
    assert_value("count", NULL);
}
END_TEST

START_TEST(released_lock_refuses_the_write)
{
    struct hilock_lock *l = tu_lock(a, "stock", 1);
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
    tu_assert_status(tu_release(l, NULL), 0);
    tu_assert_status(guarded_set(l, "count", "1", 0), HILOCK_ENOTOWNER);
    assert_value("count", NULL);
}
END_TEST

/* The pause: a's lease runs out, b takes the lock, a wakes and writes. */
START_TEST(lock_taken_by_another_owner_refuses_the_stale_write)
{
    struct hilock_lock *la = tu_lock(a, "stock", 1);
    struct hilock_lock *lb = tu_lock(b, "stock", 1);
    tu_assert_status(tu_acquire(la, 0, 200, NULL), 0);
    tu_assert_status(tu_acquire(lb, (uint64_t)tu_ms(3000), 10000, NULL), 0);
    tu_assert_status(guarded_set(lb, "count", "new", 0), 0);
    tu_assert_status(guarded_set(la, "count", "stale", 0), HILOCK_ENOTOWNER);
    assert_value("count", "new");
}
END_TEST

START_TEST(fence_flag_refuses_once_a_newer_token_was_drawn)
{
    struct hilock_options o;
    tu_options(&o);
    o.fencing = 1;
    struct hilock_client *f = tu_client(&o);
    struct hilock_lock *l = NULL;
    tu_assert_status(hilock_lock_new(f, "fenced", 6, 1, &l), 0);
    tu_keep(l);
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
    tu_assert_status(guarded_set(l, "v", "1", HILOCK_GUARD_FENCE), 0);
    ck_assert_int_gt(rs_int(tu_srv, "INCR", TU_FENCE("fenced"), (char *)NULL),
                     hilock_lock_token(l));
    tu_assert_status(guarded_set(l, "v", "2", HILOCK_GUARD_FENCE),
                     HILOCK_ENOTOWNER);
    tu_assert_status(guarded_set(l, "v", "3", 0), 0); /* still the holder */
    assert_value("v", "3");
    hilock_client_free(f);
}
END_TEST

START_TEST(fence_flag_without_a_token_is_refused_at_the_call)
{
    struct hilock_lock *l = tu_lock(a, "stock", 1);
    struct cmdbuf cb;
    struct hilock_guarded_cmd c = cmd(&cb, 1, "SET", "k", "v", NULL);
    struct gres g = {0};
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
    tu_assert_status(hilock_lock_guarded(l, &c, 1, HILOCK_GUARD_FENCE,
                                         on_guarded, &g),
                     HILOCK_EINVAL);
    tu_assert_status(hilock_lock_guarded(l, &c, 0, 0, on_guarded, &g),
                     HILOCK_EINVAL);
    tu_assert_status(hilock_lock_guarded(l, &c, HILOCK_GUARDED_MAX + 1, 0,
                                         on_guarded, &g),
                     HILOCK_EINVAL);
    tu_run_quiet();
    ck_assert_int_eq(g.calls, 0);
}
END_TEST

START_TEST(another_kinds_key_is_refused_as_the_wrong_kind)
{
    struct hilock_lock *l = tu_lock(a, "shared", 1), *r = NULL;
    tu_assert_status(hilock_rwlock_new(b, "shared", 6, 1, HILOCK_READ, &r),
                     0);
    tu_keep(r);
    tu_assert_status(tu_acquire(r, 0, 10000, NULL), 0);
    tu_assert_status(guarded_set(l, "k", "v", 0), HILOCK_EWRONGKIND);
    set_plain("counted", "7"); /* a semaphore's counter */
    struct hilock_lock *m = tu_lock(a, "counted", 1);
    tu_assert_status(guarded_set(m, "k", "v", 0), HILOCK_EWRONGKIND);
    assert_value("k", NULL);
}
END_TEST

START_TEST(read_write_sides_and_permits_guard_their_own_holds)
{
    struct hilock_lock *w = NULL, *r = NULL;
    struct hilock_permit *p = NULL;
    struct hilock_semaphore *s = NULL;
    tu_assert_status(hilock_rwlock_new(a, "rw", 2, 1, HILOCK_WRITE, &w), 0);
    tu_assert_status(hilock_rwlock_new(a, "rw", 2, 2, HILOCK_READ, &r), 0);
    tu_assert_status(hilock_permit_new(a, "sem", 3, &p), 0);
    tu_assert_status(hilock_semaphore_new(a, "sem", 3, &s), 0);
    tu_keep(w), tu_keep(r);
    tu_assert_status(guarded_set(w, "k", "w0", 0), HILOCK_ENOTOWNER);
    tu_assert_status(tu_acquire(w, 0, 10000, NULL), 0);
    tu_assert_status(guarded_set(w, "k", "w1", 0), 0);
    tu_assert_status(guarded_set(r, "k", "r0", 0), HILOCK_ENOTOWNER);
    tu_assert_status(tu_release(w, NULL), 0);
    tu_assert_status(tu_acquire(r, 0, 200, NULL), 0);
    tu_assert_status(guarded_set(r, "k", "r1", 0), 0);
    tu_assert_status(guarded_set(w, "k", "w2", 0), HILOCK_ENOTOWNER);
    /* the reader's share runs out with its own lease */
    ck_assert(tu_run_until_redis(0, tu_ms(3000), "EXISTS", "rw",
                                 (char *)NULL));
    tu_assert_status(guarded_set(r, "k", "r2", 0), HILOCK_ENOTOWNER);
    assert_value("k", "r1");

    set_plain("sem", "1");
    tu_assert_status(tu_permit_acquire(p, 0, 10000, NULL), 0);
    tu_assert_status(permit_set(p, "k", "p1"), 0);
    tu_assert_status(tu_permit_release(p, NULL), 0);
    tu_assert_status(permit_set(p, "k", "p2"), HILOCK_ENOTOWNER);
    assert_value("k", "p1");
    /* A counting semaphore has no owner: no guarded call of its own, and
     * a lock's does not compile on it (the kinds_apart test). */
    hilock_semaphore_free(s);
    hilock_permit_free(p);
}
END_TEST

START_TEST(failing_command_stops_the_list_and_reports_what_ran)
{
    struct hilock_lock *l = tu_lock(a, "stock", 1);
    struct cmdbuf c1, c2, c3;
    struct hilock_guarded_cmd cmds[3] = {
        cmd(&c1, 1, "SET", "word", "abc", NULL),
        cmd(&c2, 1, "INCR", "word", NULL),
        cmd(&c3, 1, "SET", "after", "1", NULL)};
    struct gres g;
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
    run(l, cmds, 3, 0, &g);
    tu_assert_status(g.status, HILOCK_ESERVER);
    ck_assert_int_eq(g.type, HILOCK_REPLY_ARRAY);
    ck_assert_uint_eq(g.elements, 2);
    ck_assert_int_eq(g.etype[0], HILOCK_REPLY_STATUS);
    ck_assert_int_eq(g.etype[1], HILOCK_REPLY_ERROR);
    assert_value("word", "abc");
    assert_value("after", NULL);
}
END_TEST

START_TEST(redlock_client_refuses_guarded_commands)
{
    struct hilock_options o;
    int dead = tu_dead_port();
    struct hilock_endpoint m[3] = {{"127.0.0.1", dead, NULL},
                                   {"127.0.0.2", dead, NULL},
                                   {"127.0.0.3", dead, NULL}};
    tu_options(&o);
    o.topology = HILOCK_TOPOLOGY_REDLOCK;
    o.redlock.masters = m;
    o.redlock.count = 3;
    o.log_cb = log_line;
    struct hilock_client *r = tu_client(&o);
    struct hilock_lock *l = NULL;
    tu_assert_status(hilock_lock_new(r, "stock", 5, 1, &l), 0);
    struct cmdbuf cb;
    struct hilock_guarded_cmd c = cmd(&cb, 1, "SET", "k", "v", NULL);
    struct gres g = {0};
    tu_assert_status(hilock_lock_guarded(l, &c, 1, 0, on_guarded, &g),
                     HILOCK_EGUARDED);
    ck_assert_msg(strstr(logged, "Redlock") != NULL, "logged: %s", logged);
    tu_run_quiet();
    ck_assert_int_eq(g.calls, 0);
    hilock_lock_free(l);
    hilock_client_free(r);
}
END_TEST

/* Redis applies the command; its reply is lost with the connection; the
 * client sends it again on the new one: it is not applied twice. */
START_TEST(request_resent_after_a_lost_reply_is_applied_once)
{
    struct hilock_options o;
    proxy = tp_new(tu_base, rs_port(tu_srv));
    ck_assert_ptr_nonnull(proxy);
    tu_options(&o);
    o.node.port = tp_port(proxy);
    struct hilock_client *c = tu_client(&o);
    struct hilock_lock *l = NULL;
    tu_assert_status(hilock_lock_new(c, "stock", 5, 1, &l), 0);
    tu_keep(l);
    tu_client_ready(c);
    tu_assert_status(tu_acquire(l, 0, 10000, NULL), 0);
    struct cmdbuf cb;
    struct hilock_guarded_cmd incr = cmd(&cb, 1, "INCR", "sold", NULL);
    struct gres g;
    tp_cut_next_reply(proxy);
    run(l, &incr, 1, 0, &g);
    ck_assert(!tp_cut_pending(proxy));
    tu_assert_status(g.status, 0);
    ck_assert(g.has_reply);
    ck_assert_int_eq(g.type, HILOCK_REPLY_LOST);
    ck_assert_int_eq(rs_int(tu_srv, "GET", "sold", (char *)NULL), 1);
    run(l, &incr, 1, 0, &g); /* the next one runs as usual */
    tu_assert_status(g.status, 0);
    ck_assert_int_eq(g.type, HILOCK_REPLY_INTEGER);
    ck_assert_int_eq(g.integer, 2);
    hilock_client_free(c);
}
END_TEST

static Suite *guarded_suite(void)
{
    Suite *s = suite_create("guarded");
    TCase *tc = tcase_create("guarded");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, held_lock_runs_the_command_and_returns_its_reply);
    tcase_add_test(tc, arrays_of_every_element_shape_reach_the_callback_intact);
    tcase_add_test(tc, expired_lease_refuses_the_write);
    tcase_add_test(tc, released_lock_refuses_the_write);
    tcase_add_test(tc, lock_taken_by_another_owner_refuses_the_stale_write);
    tcase_add_test(tc, fence_flag_refuses_once_a_newer_token_was_drawn);
    tcase_add_test(tc, fence_flag_without_a_token_is_refused_at_the_call);
    tcase_add_test(tc, another_kinds_key_is_refused_as_the_wrong_kind);
    tcase_add_test(tc, read_write_sides_and_permits_guard_their_own_holds);
    tcase_add_test(tc, failing_command_stops_the_list_and_reports_what_ran);
    tcase_add_test(tc, redlock_client_refuses_guarded_commands);
    tcase_add_test(tc, request_resent_after_a_lost_reply_is_applied_once);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_main(guarded_suite());
}
