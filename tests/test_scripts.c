/* SPDX-License-Identifier: BSD-3-Clause */
/* test_scripts.c -- the Lua scripts of src/lua/ on their own, against a
 * real redis-server, without the lock engine: each body is loaded with
 * SCRIPT LOAD (Redis must name it by the digest the build computed) and
 * called with EVALSHA on edge inputs -- a key that expired, a request id
 * sent twice (applied once), another kind's key (WRONGKIND), another
 * owner's hold, keys that are missing. Every call keeps its script's
 * contract (the counts of its header), which call() checks first.
 *
 * The encoder case needs no Redis: every wire_* encoder's command keeps
 * its script's contract (wire_check), and a command that breaks it is
 * refused. */
#include "testutil.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "resp.h"
#include "script.h"
#include "wire.h"

/* A lock's companions, named as the engine names them (keys.h). */
#define LK "lk"
#define QUEUE "hilock_queue:{lk}"
#define OWNERS "hilock_queue:{lk}:owners"
#define RIDS "hilock_rid:{lk}"
#define MARK "hilock_rwlock_writer:{lk}"
#define BASE "{lk}:"
#define SEM "sem"
#define SEM_RIDS "hilock_rid:{sem}"
#define PERMITS "{sem}:timeout"

/* Replies of the current test, freed by the fixture. */
static redisReply *kept[512];
static size_t nkept;

static void setup(void)
{
    tu_setup();
    nkept = 0;
}

static void teardown(void)
{
    for (size_t i = 0; i < nkept; i++)
        freeReplyObject(kept[i]);
    tu_teardown();
}

/* Whether n is within [lo, hi] (hi SCRIPT_UNBOUNDED: no bound). */
static int within(size_t n, uint32_t lo, uint32_t hi)
{
    return n >= lo && (hi == SCRIPT_UNBOUNDED || n <= hi);
}

/* EVALSHA of script id: nkeys keys, then the arguments in ap, strings
 * ending with NULL. The counts must keep the script's contract. Returns
 * the reply, the caller's; fails the test on I/O errors. */
static redisReply *call_ap(enum script_id id, size_t nkeys, va_list ap)
{
    const struct script_info *s = &script_table[id];
    const char *argv[64] = {"EVALSHA", s->sha, NULL};
    char num[16];
    size_t argc = 3;
    for (const char *a; (a = va_arg(ap, const char *)) != NULL;) {
        ck_assert_uint_lt(argc, 64);
        argv[argc++] = a;
    }
    ck_assert_msg(within(nkeys, s->keys_min, s->keys_max) &&
                      within(argc - 3 - nkeys, s->args_min, s->args_max),
                  "%s: %zu keys, %zu args break its contract", s->name,
                  nkeys, argc - 3 - nkeys);
    snprintf(num, sizeof num, "%zu", nkeys);
    argv[2] = num;
    redisReply *r = rs_command_argv(tu_srv, (int)argc, argv, NULL);
    ck_assert_ptr_nonnull(r);
    return r;
}

/* call_ap with the arguments given; the reply is kept until teardown. */
static redisReply *call(enum script_id id, size_t nkeys, ...)
{
    va_list ap;
    va_start(ap, nkeys);
    redisReply *r = call_ap(id, nkeys, ap);
    va_end(ap);
    ck_assert_uint_lt(nkept, sizeof kept / sizeof kept[0]);
    kept[nkept++] = r;
    return r;
}

/* Load every script: Redis names each by the digest the build wrote. */
static void load_all(void)
{
    for (int i = 0; i < SCRIPT_COUNT; i++) {
        const struct script_info *s = &script_table[i];
        const char *argv[3] = {"SCRIPT", "LOAD", s->body};
        size_t len[3] = {6, 4, s->len};
        redisReply *r = rs_command_argv(tu_srv, 3, argv, len);
        ck_assert_ptr_nonnull(r);
        ck_assert_msg(r->type == REDIS_REPLY_STRING, "%s: %s", s->name,
                      r->type == REDIS_REPLY_ERROR ? r->str : "no digest");
        ck_assert_str_eq(r->str, s->sha);
        freeReplyObject(r);
    }
}

static void is_int(const redisReply *r, long long v)
{
    ck_assert_msg(r->type == REDIS_REPLY_INTEGER, "type %d: %s", r->type,
                  r->type == REDIS_REPLY_ERROR ? r->str : "");
    ck_assert_int_eq(r->integer, v);
}

static void is_nil(const redisReply *r)
{
    ck_assert_msg(r->type == REDIS_REPLY_NIL, "type %d: %s", r->type,
                  r->type == REDIS_REPLY_ERROR ? r->str : "");
}

/* An error reply whose text starts with what. */
static void is_error(const redisReply *r, const char *what)
{
    ck_assert_msg(r->type == REDIS_REPLY_ERROR, "type %d, not an error",
                  r->type);
    ck_assert_msg(strstr(r->str, what) != NULL, "%s: not %s", r->str, what);
}

/* Element i of array r as an integer (an integer or a decimal string). */
static long long elem(const redisReply *r, size_t i)
{
    ck_assert_msg(r->type == REDIS_REPLY_ARRAY, "type %d: %s", r->type,
                  r->type == REDIS_REPLY_ERROR ? r->str : "");
    ck_assert_uint_lt(i, r->elements);
    const redisReply *e = r->element[i];
    if (e->type == REDIS_REPLY_INTEGER)
        return e->integer;
    ck_assert_int_eq(e->type, REDIS_REPLY_STRING);
    return atoll(e->str);
}

/* r is the array {a, b}. */
static void is_pair(const redisReply *r, long long a, long long b)
{
    ck_assert_uint_eq(r->type == REDIS_REPLY_ARRAY ? r->elements : 0, 2);
    ck_assert_int_eq(elem(r, 0), a);
    ck_assert_int_eq(elem(r, 1), b);
}

/* HGET key field as a number (RS_NIL when there is none). */
static long long hget(const char *key, const char *field)
{
    return rs_int(tu_srv, "HGET", key, field, (char *)NULL);
}

static long long exists(const char *key)
{
    return rs_int(tu_srv, "EXISTS", key, (char *)NULL);
}

/* Wait until key is gone (its lease ran out). */
static void await_gone(const char *key)
{
    long long until = tu_now_ms() + tu_ms(3000);
    while (exists(key) == 1 && tu_now_ms() < until)
        rs_sleep_ms(2);
    ck_assert_int_eq(exists(key), 0);
}

/* The type and content of key, to see it unchanged after a refusal. */
static char *dump(const char *key)
{
    static const char script[] =
        "local t = redis.call('type', KEYS[1]).ok\n"
        "if t == 'hash' then\n"
        "  local v = redis.call('hgetall', KEYS[1])\n"
        "  return t .. ' ' .. table.concat(v, ' ')\n"
        "end\n"
        "return t .. ' ' .. (redis.call('get', KEYS[1]) or '')\n";
    char *d = rs_str(tu_srv, "EVAL", script, "1", key, (char *)NULL);
    ck_assert_ptr_nonnull(d);
    return d;
}

/* SET key value. */
static void set(const char *key, const char *value)
{
    char *ok = rs_str(tu_srv, "SET", key, value, (char *)NULL);
    ck_assert_str_eq(ok, "OK");
    free(ok);
}

/* A lock's acquire without fencing or waiting: owner field f, request id
 * rid, lease ms. */
static redisReply *acquire(const char *f, const char *rid, const char *ms)
{
    return call(SCRIPT_ACQUIRE, 1, LK, ms, f, "0", "fence", rid, NULL);
}

static redisReply *release(const char *f, const char *drop, const char *rid)
{
    return call(SCRIPT_RELEASE, 1, LK, "0", "30000", f, drop, "publish",
                "ch", rid, NULL);
}

static redisReply *undo(const char *f, const char *attempt, const char *rid)
{
    return call(SCRIPT_UNDO, 1, LK, "0", f, "publish", "ch", attempt, rid,
                NULL);
}

/* Another kind's keys at LK, and what each refusal names. */
static void plant_rwlock(void)
{
    ck_assert_int_eq(rs_int(tu_srv, "HSET", LK, "mode", "read", "c:7", "1",
                            (char *)NULL), 2);
}

static void plant_lock(const char *key)
{
    ck_assert_int_eq(rs_int(tu_srv, "HSET", key, "c:7", "1", (char *)NULL),
                     1);
}

START_TEST(every_body_loads_under_the_digest_the_build_computed)
{
    load_all();
    for (int i = 0; i < SCRIPT_COUNT; i++) {
        const struct script_info *s = &script_table[i];
        ck_assert_uint_eq(strlen(s->body), s->len);
        /* the contract and comment lines stay out of what Redis runs */
        ck_assert_msg(strstr(s->body, "\n--") == NULL &&
                          strncmp(s->body, "--", 2) != 0,
                      "%s keeps a comment line", s->name);
        ck_assert_msg(strstr(s->body, "--@include") == NULL, "%s", s->name);
        ck_assert(s->keys_min <= s->keys_max && s->args_min <= s->args_max);
    }
}
END_TEST

START_TEST(acquire_counts_a_request_once_and_refuses_another_owner)
{
    load_all();
    is_pair(acquire("c:1", "1", "30000"), 1, 0);
    ck_assert_int_eq(hget(LK, "c:1"), 1);
    ck_assert_int_eq(hget(LK, "c:1:rid"), 1);
    ck_assert_int_eq(hget(LK, "c:1:first:rid"), 1);
    is_pair(acquire("c:1", "1", "30000"), 1, 0); /* sent again */
    ck_assert_int_eq(hget(LK, "c:1"), 1);
    is_pair(acquire("c:1", "2", "30000"), 2, 0); /* a re-entry */
    ck_assert_int_eq(hget(LK, "c:1:first:rid"), 1);
    redisReply *busy = acquire("c:2", "1", "30000");
    ck_assert_int_gt(busy->type == REDIS_REPLY_INTEGER ? busy->integer : 0,
                     29000); /* the holder's PTTL */
    ck_assert_int_eq(hget(LK, "c:2"), RS_NIL);
    /* fencing: a fresh token on a first hold, the counter on re-entry */
    is_pair(call(SCRIPT_ACQUIRE, 2, "fl", "fc", "30000", "c:1", "1", "fc",
                 "1", NULL),
            1, 1);
    is_pair(call(SCRIPT_ACQUIRE, 2, "fl", "fc", "30000", "c:1", "1", "fc",
                 "2", NULL),
            2, 1);
}
END_TEST

START_TEST(acquire_after_the_lease_ran_out_begins_a_new_hold)
{
    load_all();
    is_pair(acquire("c:1", "1", "1"), 1, 0);
    await_gone(LK);
    is_pair(acquire("c:2", "1", "30000"), 1, 0);
    /* the first owner's ids went with the hash: its late undo finds
     * nothing of its own, and the new holder keeps its hold */
    ck_assert_int_eq(hget(LK, "c:1:rid"), RS_NIL);
    is_nil(undo("c:1", "1", "2"));
    ck_assert_int_eq(hget(LK, "c:2"), 1);
}
END_TEST

START_TEST(acquire_refuses_other_kinds_and_leaves_them)
{
    load_all();
    plant_rwlock();
    char *before = dump(LK);
    is_error(acquire("c:1", "1", "30000"), "WRONGKIND rwlock");
    char *after = dump(LK);
    ck_assert_str_eq(before, after);
    free(before);
    free(after);
    set("n", "4");
    is_error(call(SCRIPT_ACQUIRE, 1, "n", "30000", "c:1", "0", "f", "1",
                  NULL),
             "WRONGKIND semaphore");
    ck_assert_int_eq(rs_int(tu_srv, "GET", "n", (char *)NULL), 4);
}
END_TEST

START_TEST(release_drops_holds_once_and_ends_with_the_message)
{
    load_all();
    is_pair(acquire("c:1", "1", "30000"), 1, 0);
    is_pair(acquire("c:1", "2", "30000"), 2, 0);
    is_nil(release("c:2", "1", "1")); /* not the owner */
    is_pair(release("c:1", "1", "3"), 1, 0);
    is_pair(release("c:1", "1", "3"), 1, 0); /* sent again: nothing more */
    ck_assert_int_eq(hget(LK, "c:1"), 1);
    /* the last hold: the release message goes out, the key goes */
    redisContext *sub = rs_subscriber(tu_srv, "ch");
    ck_assert_ptr_nonnull(sub);
    is_pair(release("c:1", "1", "4"), 0, 1);
    ck_assert_int_eq(exists(LK), 0);
    redisFree(sub);
    is_nil(release("c:1", "1", "5")); /* nothing held */
    plant_rwlock();
    is_error(release("c:7", "1", "6"), "WRONGKIND rwlock");
    ck_assert_int_eq(hget(LK, "c:7"), 1);
}
END_TEST

START_TEST(undo_drops_only_the_hold_its_attempt_began)
{
    load_all();
    /* the attempt's own hold: dropped, and the lock freed */
    is_pair(acquire("c:1", "3", "30000"), 1, 0);
    is_pair(undo("c:1", "3", "4"), 0, 0);
    ck_assert_int_eq(exists(LK), 0);
    is_nil(undo("c:1", "3", "5")); /* nothing held any more */
    /* a hold that began after the attempt (the attempt's ran out) stays */
    is_pair(acquire("c:1", "6", "30000"), 1, 0);
    is_pair(undo("c:1", "5", "7"), 1, 0);
    ck_assert_int_eq(hget(LK, "c:1"), 1);
    /* an attempt that never reached Redis (ids arrive in order) */
    is_pair(undo("c:1", "9", "10"), 1, 0);
    ck_assert_int_eq(hget(LK, "c:1"), 1);
    /* a re-entry made by the attempt goes, one hold, not the first */
    is_pair(acquire("c:1", "11", "30000"), 2, 0);
    is_pair(undo("c:1", "11", "12"), 1, 0);
    is_pair(undo("c:1", "11", "12"), 1, 0); /* sent again: nothing more */
    ck_assert_int_eq(hget(LK, "c:1"), 1);
    /* another owner's hold is not the attempt's */
    is_nil(undo("c:2", "11", "13"));
    ck_assert_int_eq(hget(LK, "c:1"), 1);
    ck_assert_int_eq(rs_int(tu_srv, "DEL", LK, (char *)NULL), 1);
    plant_rwlock();
    is_error(undo("c:7", "1", "2"), "WRONGKIND rwlock");
}
END_TEST

START_TEST(renew_tells_held_gone_and_refuses_past_its_deadline)
{
    load_all();
    is_pair(acquire("c:1", "1", "5000"), 1, 0);
    ck_assert_int_eq(rs_int(tu_srv, "RPUSH", "list", "x", (char *)NULL), 1);
    plant_lock("other");
    redisReply *r = call(SCRIPT_RENEW, 0, "60000", "0", "m", LK, "c:1", "m",
                         LK, "c:2", "m", "missing", "c:1", "m", "list", "c:1",
                         "w", "other", "c:7", NULL);
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    ck_assert_str_eq(r->str, "10000");
    ck_assert_int_gt(rs_int(tu_srv, "PTTL", LK, (char *)NULL), 50000);
    /* a deadline passed (1 ms after the epoch): nothing changes */
    is_int(call(SCRIPT_RENEW, 0, "90000", "1", "m", LK, "c:1", NULL), -1);
    ck_assert_int_lt(rs_int(tu_srv, "PTTL", LK, (char *)NULL), 60001);
    /* keyed: the one lock declared */
    r = call(SCRIPT_RENEW, 1, LK, "60000", "0", "m", LK, "c:1", NULL);
    ck_assert_str_eq(r->str, "1");
}
END_TEST

START_TEST(fence_only_raises_the_counter)
{
    load_all();
    is_int(call(SCRIPT_FENCE, 1, "fc", "7", NULL), 1);
    is_int(call(SCRIPT_FENCE, 1, "fc", "3", NULL), 1);
    ck_assert_int_eq(rs_int(tu_srv, "GET", "fc", (char *)NULL), 7);
}
END_TEST

START_TEST(multi_acquire_takes_all_or_none_once)
{
    load_all();
    is_int(call(SCRIPT_MULTI_ACQUIRE, 2, "a", "b", "30000", "c:1", "1", NULL)
               ->element[0],
           1);
    ck_assert_int_eq(hget("b", "c:1"), 1);
    /* sent again: nothing more */
    call(SCRIPT_MULTI_ACQUIRE, 2, "a", "b", "30000", "c:1", "1", NULL);
    ck_assert_int_eq(hget("a", "c:1"), 1);
    redisReply *r =
        call(SCRIPT_MULTI_ACQUIRE, 2, "c", "b", "30000", "c:2", "1", NULL);
    ck_assert_int_eq(elem(r, 0), -1);
    ck_assert_int_eq(elem(r, 1), 1); /* the second lock is held */
    ck_assert_int_eq(exists("c"), 0);
    is_int(call(SCRIPT_MULTI_RELEASE, 4, "a", "b", "ch:a", "ch:b", "0",
                "30000", "c:1", "publish", "2", NULL),
           2);
    ck_assert_int_eq(exists("a") + exists("b"), 0);
    is_int(call(SCRIPT_MULTI_RELEASE, 4, "a", "b", "ch:a", "ch:b", "0",
                "30000", "c:1", "publish", "3", NULL),
           0);
    plant_rwlock();
    is_error(call(SCRIPT_MULTI_ACQUIRE, 1, LK, "30000", "c:1", "4", NULL),
             "WRONGKIND rwlock");
}
END_TEST

/* A fair acquire of owner f (listener l, in hex as a client tags it,
 * wait id w) in mode m. */
static redisReply *fair(const char *f, const char *m, const char *l,
                        const char *w, const char *rid)
{
    return call(SCRIPT_FAIR_ACQUIRE, 3, LK, QUEUE, OWNERS, "30000", f, "0",
                "fence", QUEUE, m, "30000", l, w, "publish", "ch", "5", rid,
                NULL);
}

/* The fair release of owner f by a client listening as l. */
static redisReply *fair_release(const char *f, const char *l,
                                const char *rid)
{
    return call(SCRIPT_FAIR_RELEASE, 3, LK, QUEUE, OWNERS, "0", "30000", f,
                "1", "publish", "ch", QUEUE, "0", "fence", l, rid, NULL);
}

static redisReply *fair_leave(const char *f, const char *w)
{
    return call(SCRIPT_FAIR_LEAVE, 3, LK, QUEUE, OWNERS, f, QUEUE, "0",
                "fence", "publish", "ch", "0", w, NULL);
}

START_TEST(fair_acquire_queues_once_and_release_hands_the_lock_on)
{
    load_all();
    is_pair(fair("c:1", "t", "aa", "1", "1"), 1, 0);
    ck_assert_int_eq(hget(LK, "c:1:first:rid"), 1);
    is_pair(fair("c:1", "t", "aa", "1", "1"), 1, 0); /* sent again */
    ck_assert_int_eq(hget(LK, "c:1"), 1);
    redisReply *busy = fair("c:2", "w", "bb", "7", "1");
    ck_assert_int_eq(busy->type, REDIS_REPLY_INTEGER);
    char *e1 = rs_str(tu_srv, "LINDEX", QUEUE, "0", (char *)NULL);
    rs_sleep_ms(2);
    fair("c:2", "w", "bb", "7", "2"); /* a retry keeps its one entry */
    ck_assert_int_eq(rs_int(tu_srv, "LLEN", QUEUE, (char *)NULL), 1);
    /* as it is, while it lives long enough; another wait's replaces it */
    char *e2 = rs_str(tu_srv, "LINDEX", QUEUE, "0", (char *)NULL);
    ck_assert_str_eq(e2, e1);
    free(e2);
    fair("c:2", "w", "bb", "8", "3");
    ck_assert_int_eq(rs_int(tu_srv, "LLEN", QUEUE, (char *)NULL), 1);
    e2 = rs_str(tu_srv, "LINDEX", QUEUE, "0", (char *)NULL);
    ck_assert_str_ne(e2, e1);
    ck_assert_ptr_nonnull(strstr(e2, ":8:"));
    free(e1);
    free(e2);
    fair("c:2", "w", "bb", "7", "4"); /* back to wait 7 for what follows */
    ck_assert_int_eq(rs_int(tu_srv, "HEXISTS", OWNERS, "c:2", (char *)NULL),
                     1);
    is_nil(fair_release("c:3", "cc", "1")); /* not the owner */
    /* released by a client that listens as the waiter's: the hand-off
     * comes back in the reply, {0, 0, tag, wait, token, sent, span} */
    redisReply *r = fair_release("c:1", "bb", "2");
    ck_assert_uint_eq(r->elements, 7);
    ck_assert_int_eq(elem(r, 2), 2);
    ck_assert_int_eq(elem(r, 3), 7);
    ck_assert_int_eq(elem(r, 5), 5);
    ck_assert_int_eq(hget(LK, "c:2"), 1);
    ck_assert_int_eq(hget(LK, "c:1"), RS_NIL);
    char *m = rs_str(tu_srv, "HGET", LK, "hilock:handed", (char *)NULL);
    ck_assert_str_eq(m, "0:7");
    free(m);
    ck_assert_int_eq(rs_int(tu_srv, "LLEN", QUEUE, (char *)NULL), 0);
    is_nil(fair_release("c:1", "aa", "2")); /* sent again: gone */
    /* the waiter claims it: its request id is the hold's first */
    is_pair(fair("c:2", "c", "bb", "7", "3"), 1, 0);
    ck_assert_int_eq(rs_int(tu_srv, "HEXISTS", LK, "hilock:handed",
                            (char *)NULL),
                     0);
    ck_assert_int_eq(hget(LK, "c:2:first:rid"), 3);
    /* the last release with nobody queued frees it */
    is_pair(fair_release("c:2", "bb", "4"), 0, 0);
    ck_assert_int_eq(exists(LK), 0);
    plant_rwlock();
    is_error(fair("c:1", "t", "aa", "1", "5"), "WRONGKIND rwlock");
    is_error(fair_release("c:7", "aa", "6"), "WRONGKIND rwlock");
}
END_TEST

START_TEST(fair_leave_takes_the_entry_and_passes_a_raced_hand_off_on)
{
    load_all();
    is_pair(fair("c:1", "t", "aa", "1", "1"), 1, 0);
    fair("c:2", "w", "bb", "7", "1");
    is_int(fair_leave("c:2", "7"), 0);
    ck_assert_int_eq(rs_int(tu_srv, "LLEN", QUEUE, (char *)NULL), 0);
    ck_assert_int_eq(rs_int(tu_srv, "HEXISTS", OWNERS, "c:2", (char *)NULL),
                     0);
    /* a hand-off to wait 8 that raced its giving up goes on (to nobody:
     * the lock is freed) */
    fair("c:2", "w", "bb", "8", "2");
    fair_release("c:1", "bb", "2");
    ck_assert_int_eq(hget(LK, "c:2"), 1);
    is_int(fair_leave("c:2", "8"), 1);
    ck_assert_int_eq(exists(LK), 0);
    is_int(fair_leave("c:2", "8"), 0); /* sent again: nothing to do */
}
END_TEST

/* call_ap for the many calls of a long queue: the reply is not kept. */
static redisReply *call_once(enum script_id id, size_t nkeys, ...)
{
    va_list ap;
    va_start(ap, nkeys);
    redisReply *r = call_ap(id, nkeys, ap);
    va_end(ap);
    return r;
}

/* Owner c:i queues as wait id w, listening as "bb" (a release by a client
 * listening so hands it the lock in its reply). */
static void queue_quiet(long i, long w)
{
    char f[32], wid[32];
    snprintf(f, sizeof f, "c:%ld", i);
    snprintf(wid, sizeof wid, "%ld", w);
    redisReply *r =
        call_once(SCRIPT_FAIR_ACQUIRE, 3, LK, QUEUE, OWNERS, "30000", f, "0",
                  "fence", QUEUE, "w", "30000", "bb", wid, "publish", "ch",
                  "5", "1", NULL);
    ck_assert_int_eq(r->type, REDIS_REPLY_INTEGER);
    freeReplyObject(r);
}

/* Owner c:i's fair release: the wait id its hand-off went to (the
 * releasing client's own, in the reply), -1 when it went to nobody. */
static long long release_quiet(long i)
{
    char f[32];
    snprintf(f, sizeof f, "c:%ld", i);
    redisReply *r = call_once(SCRIPT_FAIR_RELEASE, 3, LK, QUEUE, OWNERS, "0",
                              "30000", f, "1", "publish", "ch", QUEUE, "0",
                              "fence", "bb", "2", NULL);
    ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
    long long w = r->elements == 7 ? elem(r, 3) : -1;
    freeReplyObject(r);
    return w;
}

static long long queue_len(void)
{
    return rs_int(tu_srv, "LLEN", QUEUE, (char *)NULL);
}

/* The queue's marker on the lock ("n<ms>": nothing left behind in the
 * list, which expires then), into buf. */
static const char *marker(char *buf, size_t size)
{
    char *m = rs_str(tu_srv, "HGET", LK, "hilock:queued", (char *)NULL);
    snprintf(buf, size, "%s", m ? m : "(none)");
    free(m);
    return buf;
}

/* A waiter that gives up in the middle of a long queue leaves its entry
 * behind, out of the owners hash, at a cost that does not grow with the
 * queue; the hand-offs pass it over and keep the order, and the same
 * owner queued again waits at the tail, not in its old place. One at
 * either end goes out of the list at once. */
START_TEST(fair_leave_in_the_middle_keeps_a_long_queue_in_order)
{
    enum { N = 1000 };
    char m[16];
    load_all();
    is_pair(fair("c:0", "t", "aa", "1", "1"), 1, 0);
    for (long i = 1; i <= N; i++)
        queue_quiet(i, i);
    ck_assert_int_eq(queue_len(), N);
    ck_assert_int_eq(marker(m, sizeof m)[0], 'n');
    is_int(fair_leave("c:500", "500"), 0);
    ck_assert_int_eq(queue_len(), N);
    ck_assert_int_eq(rs_int(tu_srv, "HEXISTS", OWNERS, "c:500", (char *)NULL),
                     0);
    ck_assert_str_eq(marker(m, sizeof m), "1"); /* pops look now */
    is_int(fair_leave("c:1000", "1000"), 0);
    ck_assert_int_eq(queue_len(), N - 1);
    is_int(fair_leave("c:1", "1"), 0);
    ck_assert_int_eq(queue_len(), N - 2);
    queue_quiet(500, 5000);
    ck_assert_int_eq(queue_len(), N - 1);
    long holder = 0;
    for (long i = 2; i < N; i++) {
        if (i == 500)
            continue;
        ck_assert_int_eq(release_quiet(holder), i);
        holder = i;
    }
    ck_assert_int_eq(release_quiet(holder), 5000);
    ck_assert_int_eq(hget(LK, "c:500"), 1);
    ck_assert_int_eq(release_quiet(500), -1); /* nobody left: freed */
    ck_assert_int_eq(exists(LK) + exists(QUEUE) + exists(OWNERS), 0);
}
END_TEST

/* A retry ("r") of a wait that queued finds its entry and leaves it as
 * it is, or refreshes it in its place; one whose entry is gone (handed
 * on, dropped) queues again at the tail. */
START_TEST(fair_retry_finds_its_entry_or_queues_again)
{
    load_all();
    is_pair(fair("c:1", "t", "aa", "1", "1"), 1, 0);
    ck_assert_int_eq(fair("c:2", "w", "bb", "7", "1")->type,
                     REDIS_REPLY_INTEGER);
    ck_assert_int_eq(fair("c:3", "w", "cc", "1", "1")->type,
                     REDIS_REPLY_INTEGER);
    char *e1 = rs_str(tu_srv, "LINDEX", QUEUE, "0", (char *)NULL);
    ck_assert_int_eq(fair("c:2", "r", "bb", "7", "2")->type,
                     REDIS_REPLY_INTEGER);
    ck_assert_int_eq(queue_len(), 2);
    char *e2 = rs_str(tu_srv, "LINDEX", QUEUE, "0", (char *)NULL);
    ck_assert_str_eq(e2, e1); /* as it was, first */
    free(e2);
    fair("c:2", "r", "bb", "8", "3"); /* another wait's: in its place */
    e2 = rs_str(tu_srv, "LINDEX", QUEUE, "0", (char *)NULL);
    ck_assert_ptr_nonnull(strstr(e2, ":8:"));
    free(e2);
    free(e1);
    ck_assert_int_eq(queue_len(), 2);
    /* popped as a hand-off pops it */
    ck_assert_int_eq(rs_int(tu_srv, "HDEL", OWNERS, "c:2", (char *)NULL), 1);
    e2 = rs_str(tu_srv, "LPOP", QUEUE, (char *)NULL);
    ck_assert_ptr_nonnull(strstr(e2, ":8:"));
    free(e2);
    fair("c:2", "r", "bb", "8", "4"); /* gone: at the tail again */
    ck_assert_int_eq(queue_len(), 2);
    e2 = rs_str(tu_srv, "LINDEX", QUEUE, "-1", (char *)NULL);
    ck_assert_ptr_nonnull(strstr(e2, ":8:"));
    ck_assert_int_eq(rs_int(tu_srv, "HEXISTS", OWNERS, "c:2", (char *)NULL),
                     1);
    free(e2);
}
END_TEST

/* A fair acquire in mode "w" of owner f (listener l, wait id w) whose
 * entry lives ms. */
static redisReply *fair_for(const char *f, const char *l, const char *w,
                            const char *ms, const char *rid)
{
    return call(SCRIPT_FAIR_ACQUIRE, 3, LK, QUEUE, OWNERS, "30000", f, "0",
                "fence", QUEUE, "w", ms, l, w, "publish", "ch", "5", rid,
                NULL);
}

/* Calls of command cmd so far (INFO commandstats). */
static long long calls_of(const char *cmd)
{
    char *info = rs_str(tu_srv, "INFO", "commandstats", (char *)NULL);
    char key[64];
    snprintf(key, sizeof key, "cmdstat_%s:calls=", cmd);
    char *at = info ? strstr(info, key) : NULL;
    long long n = at ? atoll(at + strlen(key)) : 0;
    free(info);
    return n;
}

/* The queue's expiry as the marker tells it ("n<ms>"). */
static long long marker_until(void)
{
    char m[32];
    marker(m, sizeof m);
    ck_assert_int_eq(m[0], 'n');
    return atoll(m + 1);
}

/* A waiter that joins a queue a fair waiter started reads when the queue
 * expires from the marker ("n<ms>"), not by a PTTL of its own, and
 * extends the list, its owners hash and the marker when its wait goes
 * past that. */
START_TEST(fair_join_reads_the_queues_expiry_from_the_marker)
{
    load_all();
    is_pair(fair("c:1", "t", "aa", "1", "1"), 1, 0);
    ck_assert_int_eq(fair_for("c:2", "bb", "1", "1000", "1")->type,
                     REDIS_REPLY_INTEGER);
    long long until = marker_until();
    ck_assert_int_le(rs_int(tu_srv, "PTTL", QUEUE, (char *)NULL), 2000);
    long long pttls = calls_of("pttl");
    ck_assert_int_eq(fair_for("c:3", "cc", "1", "500", "1")->type,
                     REDIS_REPLY_INTEGER);
    ck_assert_int_eq(calls_of("pttl") - pttls, 1); /* the lock's alone */
    ck_assert_int_eq(marker_until(), until);
    ck_assert_int_le(rs_int(tu_srv, "PTTL", QUEUE, (char *)NULL), 2000);
    ck_assert_int_eq(fair_for("c:4", "dd", "1", "30000", "1")->type,
                     REDIS_REPLY_INTEGER);
    ck_assert_int_gt(marker_until(), until + 50000);
    ck_assert_int_gt(rs_int(tu_srv, "PTTL", QUEUE, (char *)NULL), 30000);
    ck_assert_int_gt(rs_int(tu_srv, "PTTL", OWNERS, (char *)NULL), 30000);
    ck_assert_int_eq(queue_len(), 3);
}
END_TEST

/* An owners hash emptied while entries left behind keep the list (and
 * its expiry) is written again by the next waiter with an expiry too. */
START_TEST(fair_join_gives_an_owners_hash_written_again_its_expiry)
{
    load_all();
    is_pair(fair("c:1", "t", "aa", "1", "1"), 1, 0);
    for (long i = 2; i <= 5; i++)
        queue_quiet(i, i);
    is_int(fair_leave("c:4", "4"), 0); /* left behind */
    is_int(fair_leave("c:5", "5"), 0); /* the tail: out */
    ck_assert_int_eq(release_quiet(1), 2);
    ck_assert_int_eq(release_quiet(2), 3);
    ck_assert_int_eq(exists(OWNERS), 0);
    ck_assert_int_eq(queue_len(), 1);
    ck_assert_int_gt(rs_int(tu_srv, "PTTL", QUEUE, (char *)NULL), 30000);
    queue_quiet(6, 6);
    ck_assert_int_gt(rs_int(tu_srv, "PTTL", OWNERS, (char *)NULL), 0);
    ck_assert_int_eq(release_quiet(3), 6); /* past the one left behind */
}
END_TEST

/* Entries left behind never outnumber the live ones by much: when they
 * do, the leave writes the list again without them, in order. */
START_TEST(fair_leave_rewrites_a_list_mostly_left_behind)
{
    enum { N = 40 };
    char f[32], w[32];
    load_all();
    is_pair(fair("c:0", "t", "aa", "1", "1"), 1, 0);
    for (long i = 1; i <= N; i++)
        queue_quiet(i, i);
    for (long i = 2; i <= 31; i++) {
        snprintf(f, sizeof f, "c:%ld", i);
        snprintf(w, sizeof w, "%ld", i);
        is_int(fair_leave(f, w), 0);
        long long live = rs_int(tu_srv, "HLEN", OWNERS, (char *)NULL);
        ck_assert_int_eq(live, N - (i - 1));
        ck_assert_int_le(queue_len(), 2 * live + 16);
    }
    ck_assert_int_eq(queue_len(), 11); /* written again, then 1 left behind */
    ck_assert_int_gt(rs_int(tu_srv, "PTTL", QUEUE, (char *)NULL), 0);
    ck_assert_int_eq(release_quiet(0), 1);
    long holder = 1;
    for (long i = 32; i <= N; i++) {
        ck_assert_int_eq(release_quiet(holder), i);
        holder = i;
    }
    ck_assert_int_eq(release_quiet(holder), -1);
    ck_assert_int_eq(exists(QUEUE) + exists(OWNERS), 0);
}
END_TEST

/* The messages sub (subscribed to chan) heard so far, joined by "|"
 * into buf: a last one is published and read up to. */
static const char *heard(redisContext *sub, const char *chan, char *buf,
                         size_t size)
{
    ck_assert_int_eq(rs_int(tu_srv, "PUBLISH", chan, "end", (char *)NULL), 1);
    buf[0] = '\0';
    for (;;) {
        redisReply *r = NULL;
        ck_assert_int_eq(redisGetReply(sub, (void **)&r), REDIS_OK);
        ck_assert(r->type == REDIS_REPLY_ARRAY && r->elements == 3);
        int end = strcmp(r->element[2]->str, "end") == 0;
        if (!end)
            snprintf(buf + strlen(buf), size - strlen(buf), "%s%s",
                     buf[0] ? "|" : "", r->element[2]->str);
        freeReplyObject(r);
        if (end)
            return buf;
    }
}

/* A hand-off wakes the next in line (to look again when the short lease
 * ends) only when that waiter is another client's: the new owner's
 * client looks after its own next waiter. */
START_TEST(fair_release_wakes_the_next_only_on_another_client)
{
    char m[256];
    load_all();
    redisContext *bb = rs_subscriber(tu_srv, "ch:bb");
    redisContext *cc = rs_subscriber(tu_srv, "ch:cc");
    is_pair(fair("c:1", "t", "aa", "1", "1"), 1, 0);
    fair("c:2", "w", "bb", "2", "1");
    fair("c:3", "w", "bb", "3", "1");
    fair("c:4", "w", "cc", "4", "1");
    ck_assert_uint_eq(fair_release("c:1", "aa", "2")->elements, 3);
    ck_assert_int_eq(hget(LK, "c:2"), 1);
    ck_assert_int_eq(hget(LK, "c:1"), RS_NIL);
    ck_assert_int_eq(marker(m, sizeof m)[0], 'n'); /* kept, with the owner */
    ck_assert_ptr_nonnull(strstr(heard(bb, "ch:bb", m, sizeof m), "2:2:"));
    ck_assert_ptr_null(strchr(m, '|')); /* the hand-off alone */
    ck_assert_str_eq(heard(cc, "ch:cc", m, sizeof m), "");
    ck_assert_uint_eq(fair_release("c:2", "aa", "2")->elements, 3);
    ck_assert_int_eq(hget(LK, "c:3"), 1);
    ck_assert_ptr_nonnull(strstr(heard(bb, "ch:bb", m, sizeof m), "3:3:"));
    ck_assert_ptr_null(strchr(m, '|'));
    ck_assert_str_eq(heard(cc, "ch:cc", m, sizeof m), "wake:5000");
    redisFree(bb);
    redisFree(cc);
}
END_TEST

/* A default acquire that waits (may join the queue): owner f. */
static redisReply *acquire_waiting(const char *f, const char *rid)
{
    return call(SCRIPT_ACQUIRE, 3, LK, QUEUE, OWNERS, "30000", f, "0",
                "fence", QUEUE, "30000", "publish", "ch", rid, NULL);
}

/* A default acquire that does not wait, with the queue declared. */
static redisReply *acquire_trying(const char *f, const char *rid)
{
    return call(SCRIPT_ACQUIRE, 4, LK, "fence", QUEUE, OWNERS, "30000", f, "0",
                "fence", QUEUE, "0", "publish", "ch", rid, NULL);
}

START_TEST(a_default_waiter_gives_an_owners_hash_written_again_its_expiry)
{
    load_all();
    is_pair(acquire("c:1", "1", "30000"), 1, 0);
    /* a list kept by an entry left behind, its owners hash gone */
    ck_assert_int_eq(rs_int(tu_srv, "RPUSH", QUEUE, "left", (char *)NULL), 1);
    ck_assert_int_eq(rs_int(tu_srv, "PEXPIRE", QUEUE, "100000", (char *)NULL),
                     1);
    ck_assert_int_eq(rs_int(tu_srv, "HSET", LK, "hilock:queued", "1",
                            (char *)NULL),
                     1);
    ck_assert_int_eq(acquire_waiting("c:3", "1")->type, REDIS_REPLY_INTEGER);
    long long ttl = rs_int(tu_srv, "PTTL", OWNERS, (char *)NULL);
    ck_assert_msg(ttl > 0, "owners hash PTTL %lld", ttl);
}
END_TEST

/* A waiter that finds the lock held without the queue's marker is busy
 * after one EXISTS (of the lock and the queue at once), the PTTL and the
 * HMGET: it joins a queue whose marker went with an expired key when it
 * finds the lock free next. */
START_TEST(a_waiter_finds_a_hold_without_the_marker_busy)
{
    load_all();
    is_pair(acquire("c:1", "1", "30000"), 1, 0);
    ck_assert_int_eq(rs_int(tu_srv, "RPUSH", QUEUE, "plain:c:9",
                            (char *)NULL),
                     1);
    ck_assert_int_eq(rs_int(tu_srv, "HSET", OWNERS, "c:9", "1",
                            (char *)NULL),
                     1);
    long long exists = calls_of("exists"), hmgets = calls_of("hmget");
    redisReply *busy = acquire_waiting("c:2", "1");
    ck_assert_int_eq(busy->type, REDIS_REPLY_INTEGER);
    ck_assert_int_gt(busy->integer, 29000);
    ck_assert_int_eq(calls_of("exists") - exists, 1);
    ck_assert_int_eq(calls_of("hmget") - hmgets, 1);
    ck_assert_int_eq(hget(OWNERS, "c:2"), RS_NIL);
    ck_assert_int_eq(queue_len(), 1);
    /* free (c:9's entry dead): served, and taken, in one call */
    ck_assert_int_eq(rs_int(tu_srv, "DEL", LK, (char *)NULL), 1);
    is_pair(acquire_waiting("c:2", "2"), 1, 0);
    ck_assert_int_eq(hget(LK, "c:2"), 1);
}
END_TEST

/* A waiter that finds neither the lock nor a queue takes the lock after
 * one EXISTS of both, without a PTTL. */
START_TEST(a_waiter_takes_a_free_lock_after_one_exists)
{
    load_all();
    long long exists = calls_of("exists"), pttls = calls_of("pttl");
    is_pair(acquire_waiting("c:2", "1"), 1, 0);
    ck_assert_int_eq(calls_of("exists") - exists, 1);
    ck_assert_int_eq(calls_of("pttl") - pttls, 0);
    ck_assert_int_eq(hget(LK, "c:2"), 1);
}
END_TEST

static long long marked(void)
{
    return rs_int(tu_srv, "HEXISTS", LK, "hilock:queued", (char *)NULL);
}

/* What the plain release does: HDEL of the owner's fields. */
static void plain_release(const char *f)
{
    char rid[64], first[64];
    snprintf(rid, sizeof rid, "%s:rid", f);
    snprintf(first, sizeof first, "%s:first:rid", f);
    ck_assert_int_eq(rs_int(tu_srv, "HDEL", LK, f, rid, first, (char *)NULL),
                     3);
}

/* Whether a RESTORE of LK is refused (BUSYKEY: the key is there). */
static int restore_refused(void)
{
    redisContext *c = rs_connect(tu_srv);
    ck_assert_ptr_nonnull(c);
    freeReplyObject(redisCommand(c, "HSET {lk}:tmp c:9 1"));
    redisReply *d = redisCommand(c, "DUMP {lk}:tmp");
    ck_assert_int_eq(d->type, REDIS_REPLY_STRING);
    redisReply *r = redisCommand(c, "RESTORE %s 30000 %b", LK, d->str,
                                 (size_t)d->len);
    int busy = r->type == REDIS_REPLY_ERROR && strstr(r->str, "BUSYKEY");
    freeReplyObject(r);
    freeReplyObject(d);
    redisFree(c);
    return busy;
}

/* While anyone queues, the lock keeps the marker: a plain release leaves
 * the key (a RESTORE is refused), one that does not wait finds it busy,
 * a default waiter hands it to the first in line and queues; a turn of a
 * default waiter is its own; the last one out takes the marker along. */
START_TEST(queue_marker_keeps_a_released_name_for_the_first_in_line)
{
    load_all();
    redisContext *hears = rs_subscriber(tu_srv, "ch:bb");
    redisContext *sub = rs_subscriber(tu_srv, "ch");
    is_pair(fair("c:1", "t", "aa", "1", "1"), 1, 0);
    ck_assert_int_eq(marked(), 0); /* nobody queues: nothing more */
    ck_assert_int_eq(fair("c:2", "w", "bb", "7", "1")->type,
                     REDIS_REPLY_INTEGER);
    ck_assert_int_eq(marked(), 1);
    plain_release("c:1");
    ck_assert_int_eq(rs_int(tu_srv, "HLEN", LK, (char *)NULL), 1);
    ck_assert(restore_refused());
    ck_assert_int_eq(acquire("c:3", "1", "30000")->type, REDIS_REPLY_INTEGER);
    /* a default waiter serves the first in line, and queues */
    ck_assert_int_eq(acquire_waiting("c:3", "2")->type, REDIS_REPLY_INTEGER);
    ck_assert_int_eq(hget(LK, "c:2"), 1);
    ck_assert_int_eq(hget(LK, "c:3"), RS_NIL);
    ck_assert_int_eq(marked(), 1);
    /* handed with a token, although the default caller issues none */
    is_pair(fair("c:2", "c", "bb", "7", "2"), 1, 1);
    /* its release gives the default waiter its turn: the marker alone */
    is_pair(fair_release("c:2", "bb", "3"), 0, 1);
    ck_assert_int_eq(rs_int(tu_srv, "HLEN", LK, (char *)NULL), 1);
    ck_assert(restore_refused());
    ck_assert_int_eq(fair("c:4", "t", "dd", "1", "1")->type,
                     REDIS_REPLY_INTEGER);
    ck_assert_int_eq(acquire("c:5", "1", "30000")->type, REDIS_REPLY_INTEGER);
    is_pair(acquire_waiting("c:3", "3"), 1, 0);
    ck_assert_int_eq(marked(), 0);
    ck_assert_int_eq(exists(QUEUE), 0);
    is_pair(release("c:3", "1", "4"), 0, 1);
    ck_assert_int_eq(exists(LK), 0);
    redisFree(hears);
    redisFree(sub);
}
END_TEST

/* Waiters that nobody hears (their process died) hold a free name with
 * the marker for one pass at most: the first caller that finds it so
 * takes it; the script release keeps the marker for what is left, and
 * the next finds the queue empty and takes the marker along. The last
 * leave out takes it too. */
START_TEST(queue_marker_goes_with_dead_waiters_and_the_last_leave)
{
    load_all();
    is_pair(fair("c:1", "t", "aa", "1", "1"), 1, 0);
    fair("c:2", "w", "ee", "7", "1");
    plain_release("c:1");
    is_pair(acquire_waiting("c:3", "1"), 1, 0);
    ck_assert_int_eq(marked(), 1); /* the deaf one keeps its place once */
    is_pair(release("c:3", "1", "2"), 0, 0);
    ck_assert_int_eq(rs_int(tu_srv, "HLEN", LK, (char *)NULL), 1);
    long long ttl = rs_int(tu_srv, "PTTL", LK, (char *)NULL);
    ck_assert(ttl > 0 && ttl <= 5000);
    is_pair(acquire_waiting("c:5", "1"), 1, 0);
    ck_assert_int_eq(marked(), 0);
    ck_assert_int_eq(exists(QUEUE), 0);
    is_pair(release("c:5", "1", "2"), 0, 0);
    ck_assert_int_eq(exists(LK), 0);
    is_pair(fair("c:1", "t", "aa", "1", "3"), 1, 0);
    fair("c:2", "w", "ee", "8", "2");
    ck_assert_int_eq(marked(), 1);
    is_int(fair_leave("c:2", "8"), 0);
    ck_assert_int_eq(marked(), 0);
}
END_TEST

/* A default waiter that finds the name free passes over the stale entry
 * a fair waiter left behind (it gave up in the middle of the queue, and
 * queued again at the tail), without taking the owner's place at the
 * tail with it, and hands the lock to the first live one. */
START_TEST(queue_marker_pass_skips_an_entry_left_behind)
{
    load_all();
    redisContext *hears = rs_subscriber(tu_srv, "ch:dd");
    is_pair(fair("c:1", "t", "aa", "1", "1"), 1, 0);
    fair("c:3", "w", "cc", "1", "1");
    call(SCRIPT_FAIR_ACQUIRE, 3, LK, QUEUE, OWNERS, "30000", "c:2", "0",
         "fence", QUEUE, "w", "20", "bb", "7", "publish", "ch", "5", "1",
         NULL); /* its entry lives 20 ms */
    fair("c:4", "w", "dd", "1", "1");
    is_int(fair_leave("c:2", "7"), 0); /* in the middle: left behind */
    fair("c:2", "w", "bb", "8", "2");  /* again, at the tail */
    is_int(fair_leave("c:3", "1"), 0); /* the one left behind is first */
    ck_assert_int_eq(queue_len(), 3);
    rs_sleep_ms(30);
    plain_release("c:1");
    ck_assert_int_eq(acquire_waiting("c:9", "1")->type, REDIS_REPLY_INTEGER);
    ck_assert_int_eq(hget(LK, "c:4"), 1);
    ck_assert_int_eq(rs_int(tu_srv, "HEXISTS", OWNERS, "c:2", (char *)NULL),
                     1);
    char *tail = rs_str(tu_srv, "LINDEX", QUEUE, "0", (char *)NULL);
    ck_assert_ptr_nonnull(strstr(tail, ":8:"));
    free(tail);
    redisFree(hears);
}
END_TEST

/* A caller that does not wait and finds a released name kept by the
 * marker hands it to the first live waiter, and is refused without
 * queueing; with nobody live in line (a killed process's waiters) it
 * takes the lock at once instead of waiting out the old lease. */
START_TEST(queue_marker_serves_the_line_for_a_caller_that_does_not_wait)
{
    load_all();
    redisContext *hears = rs_subscriber(tu_srv, "ch:bb");
    is_pair(fair("c:1", "t", "aa", "1", "1"), 1, 0);
    fair("c:2", "w", "bb", "7", "1");
    plain_release("c:1");
    ck_assert_int_eq(acquire_trying("c:3", "1")->type, REDIS_REPLY_INTEGER);
    ck_assert_int_eq(hget(LK, "c:2"), 1);
    ck_assert_int_eq(hget(LK, "c:3"), RS_NIL);
    ck_assert_int_eq(hget(OWNERS, "c:3"), RS_NIL);
    is_pair(fair("c:2", "c", "bb", "7", "2"), 1, 1);
    redisFree(hears);
    fair("c:4", "w", "dd", "3", "1"); /* nobody hears dd */
    plain_release("c:2");
    ck_assert_int_eq(marked(), 1);
    is_pair(acquire_trying("c:3", "2"), 1, 0);
    ck_assert_int_eq(hget(OWNERS, "c:3"), RS_NIL);
    /* held: refused at once, without queueing */
    ck_assert_int_eq(acquire_trying("c:5", "1")->type, REDIS_REPLY_INTEGER);
    ck_assert_int_eq(hget(OWNERS, "c:5"), RS_NIL);
}
END_TEST

static redisReply *fair_undo(const char *f, const char *l,
                             const char *attempt, const char *rid)
{
    return call(SCRIPT_FAIR_UNDO, 3, LK, QUEUE, OWNERS, "0", f, "publish",
                "ch", QUEUE, "0", "fence", l, attempt, rid, NULL);
}

START_TEST(fair_undo_drops_only_its_attempts_hold_and_hands_it_on)
{
    load_all();
    /* the attempt's own fresh hold: dropped, the lock handed to the
     * waiter queued behind (its client is the caller's: in the reply) */
    is_pair(fair("c:1", "t", "aa", "1", "3"), 1, 0);
    fair("c:2", "w", "bb", "7", "1");
    redisReply *r = fair_undo("c:1", "bb", "3", "4");
    ck_assert_uint_eq(r->elements, 7);
    ck_assert_int_eq(elem(r, 3), 7);
    ck_assert_int_eq(hget(LK, "c:1"), RS_NIL);
    ck_assert_int_eq(hget(LK, "c:2"), 1);
    /* a handed hold no attempt claimed is not the attempt's */
    is_pair(fair_undo("c:2", "bb", "1", "2"), 1, 0);
    ck_assert_int_eq(hget(LK, "c:2"), 1);
    /* nor one claimed after it, nor one the attempt never reached */
    is_pair(fair("c:2", "c", "bb", "7", "5"), 1, 0);
    is_pair(fair_undo("c:2", "bb", "1", "6"), 1, 0);
    is_pair(fair_undo("c:2", "bb", "9", "10"), 1, 0);
    ck_assert_int_eq(hget(LK, "c:2"), 1);
    /* a re-entry the attempt made goes, once */
    is_pair(fair("c:2", "t", "bb", "7", "11"), 2, 0);
    is_pair(fair_undo("c:2", "bb", "11", "12"), 1, 0);
    is_pair(fair_undo("c:2", "bb", "11", "12"), 1, 0);
    ck_assert_int_eq(hget(LK, "c:2"), 1);
    is_nil(fair_undo("c:3", "cc", "1", "2")); /* another owner's */
    ck_assert_int_eq(rs_int(tu_srv, "DEL", LK, (char *)NULL), 1);
    plant_rwlock();
    is_error(fair_undo("c:7", "aa", "1", "2"), "WRONGKIND rwlock");
}
END_TEST

/* A read-write acquire of side script id, owner field f whose other
 * side is o. */
static redisReply *rw_acquire(enum script_id id, const char *f, const char *o,
                              const char *wait, const char *ms,
                              const char *rid)
{
    return call(id, 3, LK, RIDS, MARK, ms, f, o, BASE, RIDS, MARK, wait,
                "200", rid, NULL);
}

static redisReply *rw_release(enum script_id id, const char *f,
                              const char *drop, const char *rid)
{
    return call(id, 2, LK, RIDS, "0", "30000", f, drop, "publish", "ch",
                BASE, RIDS, rid, NULL);
}

#define READ(f, o, rid) rw_acquire(SCRIPT_READ_ACQUIRE, f, o, "0", "30000", rid)
#define WRITE(f, o, w, rid)                                                   \
    rw_acquire(SCRIPT_WRITE_ACQUIRE, f, o, w, "30000", rid)

START_TEST(readers_share_a_waiting_writer_keeps_new_ones_off)
{
    load_all();
    is_pair(READ("c:1", "c:1:write", "1"), 1, 0);
    ck_assert_int_eq(exists(BASE "c:1:rwlock_timeout:1"), 1);
    is_pair(READ("c:1", "c:1:write", "1"), 1, 0); /* sent again */
    ck_assert_int_eq(hget(LK, "c:1"), 1);
    is_pair(READ("c:3", "c:3:write", "1"), 1, 0);
    ck_assert_int_eq(WRITE("c:2:write", "c:2", "1", "1")->type,
                     REDIS_REPLY_INTEGER);
    char *mark = rs_str(tu_srv, "GET", MARK, (char *)NULL);
    ck_assert_str_eq(mark, "c:2:write");
    free(mark);
    ck_assert_int_eq(READ("c:4", "c:4:write", "1")->type,
                     REDIS_REPLY_INTEGER); /* kept off */
    is_pair(READ("c:1", "c:1:write", "2"), 2, 0); /* a holder re-enters */
    is_pair(rw_release(SCRIPT_READ_RELEASE, "c:1", "2", "3"), 0, 0);
    ck_assert_int_eq(exists(BASE "c:1:rwlock_timeout:2"), 0);
    is_nil(rw_release(SCRIPT_READ_RELEASE, "c:1", "2", "3")); /* again */
    is_pair(rw_release(SCRIPT_READ_RELEASE, "c:3", "1", "2"), 0, 0);
    ck_assert_int_eq(exists(LK), 0);
    is_pair(WRITE("c:2:write", "c:2", "1", "2"), 1, 0);
    ck_assert_int_eq(exists(MARK), 0);
    is_pair(WRITE("c:2:write", "c:2", "1", "2"), 1, 0); /* sent again */
    ck_assert_int_eq(hget(LK, "c:2:write"), 1);
    ck_assert_int_eq(READ("c:5", "c:5:write", "1")->type,
                     REDIS_REPLY_INTEGER);
    is_nil(rw_release(SCRIPT_WRITE_RELEASE, "c:5:write", "1", "2"));
    is_pair(rw_release(SCRIPT_WRITE_RELEASE, "c:2:write", "1", "3"), 0, 0);
    ck_assert_int_eq(exists(LK) + exists(RIDS), 0);
}
END_TEST

/* read_undo (write 0) or write_undo (write 1) of owner field f: undoes
 * the attempt by request id attempt, itself request id rid. */
static redisReply *rw_undo(int write, const char *f, const char *attempt,
                           const char *rid)
{
    return call(write ? SCRIPT_WRITE_UNDO : SCRIPT_READ_UNDO, 2, LK, RIDS,
                write ? "1" : "0", "30000", f, "publish", "ch", BASE, RIDS,
                attempt, rid, NULL);
}

#define WRITE_UNDO(f, attempt, rid) rw_undo(1, f, attempt, rid)
#define READ_UNDO(f, attempt, rid) rw_undo(0, f, attempt, rid)

/* What both undo scripts keep, for owner field f (o: its other side)
 * holding nothing, the request ids below 6 used: a hold begun after the
 * attempt, or one the attempt never reached, stays; a re-entry the
 * attempt made goes, once, and the hold keeps its first request id. */
static void undo_only_its_attempt(int write, const char *f, const char *o)
{
    char first[64];
    snprintf(first, sizeof first, "%s:first", f);
    is_pair(write ? WRITE(f, o, "0", "6") : READ(f, o, "6"), 1, 0);
    is_pair(rw_undo(write, f, "5", "7"), 1, 0);
    is_pair(rw_undo(write, f, "9", "10"), 1, 0);
    is_pair(write ? WRITE(f, o, "0", "11") : READ(f, o, "11"), 2, 0);
    ck_assert_int_eq(hget(RIDS, first), 6);
    is_pair(rw_undo(write, f, "11", "12"), 1, 0);
    is_pair(rw_undo(write, f, "11", "12"), 1, 0);
}

START_TEST(write_undo_drops_only_the_hold_its_attempt_began)
{
    load_all();
    is_pair(WRITE("c:2:write", "c:2", "0", "3"), 1, 0);
    ck_assert_int_eq(hget(RIDS, "c:2:write:first"), 3);
    is_pair(WRITE_UNDO("c:2:write", "3", "4"), 0, 0);
    ck_assert_int_eq(exists(LK) + exists(RIDS), 0);
    is_nil(WRITE_UNDO("c:2:write", "3", "5")); /* nothing held */
    undo_only_its_attempt(1, "c:2:write", "c:2");
    ck_assert_int_eq(hget(LK, "c:2:write"), 1);
    /* a reader is not the writer; a release forgets the first id */
    is_nil(WRITE_UNDO("c:5:write", "1", "2"));
    is_pair(rw_release(SCRIPT_WRITE_RELEASE, "c:2:write", "1", "13"), 0, 0);
    ck_assert_int_eq(hget(RIDS, "c:2:write:first"), RS_NIL);
    plant_lock(LK);
    is_error(WRITE_UNDO("c:7:write", "1", "2"), "WRONGKIND lock");
}
END_TEST

START_TEST(read_undo_drops_only_the_hold_its_attempt_began)
{
    load_all();
    is_pair(READ("c:1", "c:1:write", "3"), 1, 0);
    is_pair(READ("c:3", "c:3:write", "1"), 1, 0);
    ck_assert_int_eq(hget(RIDS, "c:1:first"), 3);
    /* its own hold goes; the other reader keeps the lock */
    is_pair(READ_UNDO("c:1", "3", "4"), 0, 0);
    ck_assert_int_eq(exists(BASE "c:1:rwlock_timeout:1"), 0);
    ck_assert_int_eq(hget(LK, "c:1"), RS_NIL);
    ck_assert_int_eq(hget(RIDS, "c:1:first"), RS_NIL);
    ck_assert_int_eq(hget(LK, "c:3"), 1);
    is_nil(READ_UNDO("c:1", "3", "5")); /* nothing held */
    undo_only_its_attempt(0, "c:1", "c:1:write");
    /* the re-entry's hold went: the newest */
    ck_assert_int_eq(exists(BASE "c:1:rwlock_timeout:2"), 0);
    ck_assert_int_eq(exists(BASE "c:1:rwlock_timeout:1"), 1);
    /* a hold after the newest ran out begins anew: its id is the first */
    ck_assert_int_eq(rs_int(tu_srv, "PEXPIRE", BASE "c:1:rwlock_timeout:1",
                            "1", (char *)NULL),
                     1);
    await_gone(BASE "c:1:rwlock_timeout:1");
    is_pair(READ("c:1", "c:1:write", "13"), 2, 0);
    ck_assert_int_eq(hget(RIDS, "c:1:first"), 13);
    is_pair(READ_UNDO("c:1", "11", "14"), 2, 0);
    /* the last reader's undo frees the lock */
    is_pair(rw_release(SCRIPT_READ_RELEASE, "c:3", "1", "2"), 0, 0);
    ck_assert_int_eq(rs_int(tu_srv, "DEL", LK, RIDS, (char *)NULL), 2);
    is_pair(READ("c:1", "c:1:write", "15"), 1, 0);
    is_pair(READ_UNDO("c:1", "15", "16"), 0, 0);
    ck_assert_int_eq(exists(LK) + exists(RIDS), 0);
    plant_lock(LK);
    is_error(READ_UNDO("c:7", "1", "2"), "WRONGKIND lock");
}
END_TEST

START_TEST(an_expired_read_hold_lets_the_writer_in)
{
    load_all();
    is_pair(READ("c:1", "c:1:write", "1"), 1, 0);
    /* the hold's own key runs out while the lock key lives on */
    ck_assert_int_eq(rs_int(tu_srv, "PEXPIRE", BASE "c:1:rwlock_timeout:1",
                            "1", (char *)NULL),
                     1);
    await_gone(BASE "c:1:rwlock_timeout:1");
    ck_assert_int_eq(exists(LK), 1);
    is_pair(WRITE("c:2:write", "c:2", "0", "1"), 1, 0);
    ck_assert_int_eq(hget(LK, "c:1"), RS_NIL); /* pruned */
}
END_TEST

/* Readers c:<from>..c:<to - 1>, one hold each. */
static void readers(int from, int to)
{
    char f[32], o[40];
    for (int i = from; i < to; i++) {
        snprintf(f, sizeof f, "c:%d", i);
        snprintf(o, sizeof o, "c:%d:write", i);
        is_pair(READ(f, o, "1"), 1, 0);
    }
}

START_TEST(a_reader_leaving_or_a_writer_asking_reads_few_readers)
{
    enum { N = 300 };
    load_all();
    readers(0, N);
    long long before = rs_cmdstat_calls(tu_srv, "pttl");
    ck_assert_int_eq(WRITE("w:write", "w", "1", "1")->type,
                     REDIS_REPLY_INTEGER);
    is_pair(rw_release(SCRIPT_READ_RELEASE, "c:7", "1", "2"), 0, 0);
    long long read = rs_cmdstat_calls(tu_srv, "pttl") - before;
    ck_assert_msg(read <= 4, "%lld holds read beside %d readers", read, N);
    ck_assert_int_eq(rs_int(tu_srv, "HLEN", LK, (char *)NULL), N);
}
END_TEST

START_TEST(dead_readers_behind_a_live_one_go_when_it_leaves)
{
    load_all();
    readers(0, 6);
    char k[48];
    for (int i = 1; i < 6; i++) { /* their holds ran out */
        snprintf(k, sizeof k, BASE "c:%d:rwlock_timeout:1", i);
        ck_assert_int_eq(rs_int(tu_srv, "DEL", k, (char *)NULL), 1);
    }
    ck_assert_int_eq(WRITE("w:write", "w", "1", "1")->type,
                     REDIS_REPLY_INTEGER); /* c:0 still reads */
    is_pair(rw_release(SCRIPT_READ_RELEASE, "c:0", "1", "2"), 0, 0);
    ck_assert_int_eq(exists(LK) + exists(RIDS), 0);
    is_pair(WRITE("w:write", "w", "1", "2"), 1, 0);
}
END_TEST

START_TEST(rw_scripts_refuse_deadlock_and_other_kinds)
{
    load_all();
    is_pair(READ("c:1", "c:1:write", "1"), 1, 0);
    is_error(WRITE("c:1:write", "c:1", "0", "2"), "DEADLK");
    ck_assert_int_eq(rs_int(tu_srv, "DEL", LK, RIDS, (char *)NULL), 2);
    plant_lock(LK);
    is_error(READ("c:1", "c:1:write", "3"), "WRONGKIND lock");
    is_error(rw_release(SCRIPT_WRITE_RELEASE, "c:7:write", "1", "4"),
             "WRONGKIND lock");
    ck_assert_int_eq(hget(LK, "c:7"), 1);
    /* a waiting writer that gives up takes its own mark only */
    set(MARK, "c:2:write");
    is_int(call(SCRIPT_WRITE_LEAVE, 2, LK, MARK, MARK, "c:3:write", NULL),
           0);
    ck_assert_int_eq(exists(MARK), 1);
    is_int(call(SCRIPT_WRITE_LEAVE, 2, LK, MARK, MARK, "c:2:write", NULL),
           0);
    ck_assert_int_eq(exists(MARK), 0);
}
END_TEST

static redisReply *sem_acquire(const char *n, const char *rid)
{
    return call(SCRIPT_SEM_ACQUIRE, 2, SEM, SEM_RIDS, n, SEM_RIDS, "h1",
                "60000", rid, NULL);
}

static redisReply *sem_release(const char *n, const char *rid)
{
    return call(SCRIPT_SEM_RELEASE, 2, SEM, SEM_RIDS, n, SEM_RIDS, "h1",
                "60000", "publish", "sch", rid, NULL);
}

static redisReply *sem_init(const char *n)
{
    return call(SCRIPT_SEM_INIT, 2, SEM, PERMITS, PERMITS, "publish", "sch",
                n, NULL);
}

static redisReply *available(void)
{
    return call(SCRIPT_SEM_AVAILABLE, 2, SEM, PERMITS, PERMITS, "publish",
                "sch", NULL);
}

START_TEST(semaphore_permits_are_taken_and_given_back_once_per_request)
{
    load_all();
    is_int(available(), 0); /* missing: none */
    is_int(sem_init("3"), 1);
    is_int(sem_init("5"), 0); /* set already */
    is_int(available(), 3);
    is_pair(sem_acquire("2", "1"), 2, 0);
    is_pair(sem_acquire("2", "1"), 2, 0); /* sent again */
    is_int(available(), 1);
    is_int(sem_acquire("2", "2"), -1);
    is_pair(sem_release("2", "3"), 3, 0);
    is_pair(sem_release("2", "3"), 3, 0); /* sent again */
    is_int(available(), 3);
    plant_lock("lock");
    is_error(call(SCRIPT_SEM_ACQUIRE, 2, "lock", SEM_RIDS, "1", SEM_RIDS,
                  "h1", "60000", "4", NULL),
             "WRONGKIND lock");
    ck_assert_int_eq(hget("lock", "c:7"), 1);
}
END_TEST

static redisReply *permit(const char *id, const char *ms, const char *rid)
{
    return call(SCRIPT_PERMIT_ACQUIRE, 2, SEM, PERMITS, PERMITS, "publish",
                "sch", id, ms, rid, NULL);
}

START_TEST(expiring_permits_apply_once_and_come_back_when_they_expire)
{
    load_all();
    is_int(sem_init("1"), 1);
    is_pair(permit("p1", "60000", "1"), 1, 0);
    is_pair(permit("p1", "60000", "1"), 1, 0); /* sent again */
    is_int(available(), 0);
    redisReply *wait = permit("p2", "60000", "2");
    ck_assert_int_eq(wait->type, REDIS_REPLY_INTEGER);
    ck_assert_int_gt(wait->integer, 50000); /* until p1 expires */
    is_pair(call(SCRIPT_PERMIT_RELEASE, 2, SEM, PERMITS, PERMITS, "publish",
                 "sch", "p1", "3", NULL),
            0, 0);
    is_nil(call(SCRIPT_PERMIT_RELEASE, 2, SEM, PERMITS, PERMITS, "publish",
                "sch", "p1", "4", NULL));
    is_int(available(), 1);
    /* one that expires goes back at the next look */
    is_pair(permit("p3", "1", "5"), 1, 0);
    long long until = tu_now_ms() + tu_ms(3000);
    redisReply *n;
    while ((n = available())->integer == 0 && tu_now_ms() < until)
        rs_sleep_ms(2);
    is_int(n, 1);
    ck_assert_int_eq(rs_int(tu_srv, "ZCARD", PERMITS, (char *)NULL), 0);
}
END_TEST

static redisReply *query(const char *what, const char *f, const char *kind)
{
    return call(SCRIPT_QUERY, 1, LK, what, f, kind, NULL);
}

START_TEST(query_answers_for_the_owner_and_refuses_other_kinds)
{
    load_all();
    is_int(query("held", "c:1", "lock"), 0);
    is_int(query("ttl", "c:1", "lock"), -2);
    is_pair(acquire("c:1", "1", "30000"), 1, 0);
    is_pair(acquire("c:1", "2", "30000"), 2, 0);
    is_int(query("held", "c:1", "lock"), 1);
    is_int(query("held", "c:2", "lock"), 0);
    redisReply *c = query("count", "c:1", "lock");
    ck_assert_int_eq(c->type, REDIS_REPLY_STRING);
    ck_assert_str_eq(c->str, "2");
    ck_assert_int_gt(query("ttl", "c:2", "lock")->integer, 29000);
    is_error(query("held", "c:1", "rwlock"), "WRONGKIND lock");
}
END_TEST

/* A guarded SET g 1 as owner f with fencing token t and request id rid. */
static redisReply *guarded(const char *f, const char *t, const char *rid)
{
    return call(SCRIPT_GUARDED, 4, LK, "fc", RIDS, "g", "m", f, t, BASE,
                "60000", "1", "3", "SET", "g", "1", rid, NULL);
}

START_TEST(guarded_runs_once_and_only_for_the_holder)
{
    load_all();
    is_error(guarded("c:1", "0", "1"), "NOTOWNER"); /* missing */
    is_pair(call(SCRIPT_ACQUIRE, 2, LK, "fc", "30000", "c:1", "1", "fc", "1",
                 NULL),
            1, 1);
    redisReply *r = guarded("c:1", "1", "2");
    ck_assert_uint_eq(r->type == REDIS_REPLY_ARRAY ? r->elements : 0, 1);
    ck_assert_str_eq(r->element[0]->str, "OK");
    ck_assert_int_eq(rs_int(tu_srv, "GET", "g", (char *)NULL), 1);
    ck_assert_int_eq(rs_int(tu_srv, "DEL", "g", (char *)NULL), 1);
    is_error(guarded("c:1", "1", "2"), "APPLIED"); /* sent again */
    is_error(guarded("c:2", "0", "3"), "NOTOWNER");
    ck_assert_int_eq(rs_int(tu_srv, "INCR", "fc", (char *)NULL), 2);
    is_error(guarded("c:1", "1", "4"), "NOTOWNER"); /* a newer token */
    ck_assert_int_eq(exists("g"), 0);
    ck_assert_int_eq(rs_int(tu_srv, "DEL", LK, (char *)NULL), 1);
    plant_rwlock();
    is_error(guarded("c:7", "0", "5"), "WRONGKIND rwlock");
}
END_TEST

/* --- the encoder: no Redis --------------------------------------------- */

static void encoder_setup(void)
{
    tu_setup_no_redis();
}

static void encoder_teardown(void)
{
    tu_teardown();
}

static const struct wire_lock mutex = {.prefix = "", .name = "inv",
                                       .name_len = 3, .client_id = "id",
                                       .owner_tag = 4,
                                       .kind = &wire_kind_mutex};

/* b holds a call of script id that keeps its contract; b is reset. */
static void keeps(struct resp_buf *b, enum script_id id)
{
    ck_assert_msg(!b->failed && wire_check(b, id) == 0, "%s: %.*s",
                  script_table[id].name, (int)b->len, b->data);
    resp_reset(b);
}

START_TEST(every_encoder_keeps_its_scripts_contract)
{
    struct resp_buf b;
    struct wire_lock l = mutex, rd = mutex, wr = mutex, sem = mutex;
    struct wire_fair f = {"lt", 5000, 3, "publish", 99};
    const char *sha[SCRIPT_COUNT];
    for (int i = 0; i < SCRIPT_COUNT; i++)
        sha[i] = script_table[i].sha;
    rd.kind = &wire_kind_read;
    wr.kind = &wire_kind_write;
    wr.suffix = ":write";
    sem.kind = &wire_kind_permit;
    resp_init(&b, NULL, 0);
    for (int fencing = 0; fencing < 2; fencing++) {
        for (uint32_t entry = 0; entry < 2; entry++) {
            l.entry_ms = entry * 3000;
            wire_acquire(&b, sha[SCRIPT_ACQUIRE], &l, 30000, fencing,
                         "publish", 1);
            keeps(&b, SCRIPT_ACQUIRE);
        }
        for (int m = 0; m < 3; m++) {
            wire_fair_acquire(&b, sha[SCRIPT_FAIR_ACQUIRE], &mutex, 30000,
                              fencing, (enum wire_fair_mode)"wtc"[m], &f, 2);
            keeps(&b, SCRIPT_FAIR_ACQUIRE);
        }
        wire_fair_release(&b, sha[SCRIPT_FAIR_RELEASE], &mutex, 3, 30000, 1,
                          fencing, &f);
        keeps(&b, SCRIPT_FAIR_RELEASE);
        wire_fair_leave(&b, sha[SCRIPT_FAIR_LEAVE], &mutex, fencing, &f);
        keeps(&b, SCRIPT_FAIR_LEAVE);
        wire_fair_undo(&b, sha[SCRIPT_FAIR_UNDO], &mutex, 3, 4, fencing, &f);
        keeps(&b, SCRIPT_FAIR_UNDO);
    }
    wire_release(&b, sha[SCRIPT_RELEASE], &mutex, 4, 30000, 1, "publish", 0);
    keeps(&b, SCRIPT_RELEASE);
    wire_undo(&b, sha[SCRIPT_UNDO], &mutex, 4, 5, "spublish");
    keeps(&b, SCRIPT_UNDO);
    wire_fence(&b, sha[SCRIPT_FENCE], &mutex, 7);
    keeps(&b, SCRIPT_FENCE);
    wire_query(&b, sha[SCRIPT_QUERY], WIRE_QUERY_TTL, &rd);
    keeps(&b, SCRIPT_QUERY);
    struct wire_lock many[3] = {mutex, mutex, mutex};
    for (size_t n = 1; n <= 3; n++) {
        wire_multi_acquire(&b, sha[SCRIPT_MULTI_ACQUIRE], many, n, 30000, 6);
        keeps(&b, SCRIPT_MULTI_ACQUIRE);
        wire_multi_release(&b, sha[SCRIPT_MULTI_RELEASE], many, n, 7, 30000,
                           "publish");
        keeps(&b, SCRIPT_MULTI_RELEASE);
    }
    const struct wire_lock *side[2] = {&rd, &wr};
    const struct wire_rw_side *how[2] = {&wire_rw_reader, &wire_rw_writer};
    for (int s = 0; s < 2; s++) {
        enum script_id acq = s ? SCRIPT_WRITE_ACQUIRE : SCRIPT_READ_ACQUIRE;
        enum script_id rel = s ? SCRIPT_WRITE_RELEASE : SCRIPT_READ_RELEASE;
        wire_rw_acquire(&b, sha[acq], side[s], how[s], 30000, 1, 200, 8);
        keeps(&b, acq);
        wire_rw_release(&b, sha[rel], side[s], how[s], 9, 30000, 1,
                        "publish");
        keeps(&b, rel);
    }
    wire_write_leave(&b, sha[SCRIPT_WRITE_LEAVE], &wr);
    keeps(&b, SCRIPT_WRITE_LEAVE);
    wire_rw_undo(&b, sha[SCRIPT_WRITE_UNDO], &wr, &wire_rw_writer, 8, 9,
                 30000, "publish");
    keeps(&b, SCRIPT_WRITE_UNDO);
    wire_rw_undo(&b, sha[SCRIPT_READ_UNDO], &rd, &wire_rw_reader, 8, 9,
                 30000, "publish");
    keeps(&b, SCRIPT_READ_UNDO);
    wire_sem_acquire(&b, sha[SCRIPT_SEM_ACQUIRE], &sem, 2, 60000, 10);
    keeps(&b, SCRIPT_SEM_ACQUIRE);
    wire_sem_release(&b, sha[SCRIPT_SEM_RELEASE], &sem, 2, 60000, "publish",
                     11);
    keeps(&b, SCRIPT_SEM_RELEASE);
    wire_permit_acquire(&b, sha[SCRIPT_PERMIT_ACQUIRE], &sem, 30000,
                        "publish", 12);
    keeps(&b, SCRIPT_PERMIT_ACQUIRE);
    wire_permit_release(&b, sha[SCRIPT_PERMIT_RELEASE], &sem, "publish", 13);
    keeps(&b, SCRIPT_PERMIT_RELEASE);
    wire_sem_init(&b, sha[SCRIPT_SEM_INIT], &sem, 3, "publish");
    keeps(&b, SCRIPT_SEM_INIT);
    wire_sem_available(&b, sha[SCRIPT_SEM_AVAILABLE], &sem, "publish");
    keeps(&b, SCRIPT_SEM_AVAILABLE);
    /* a renewal batch of every kind, unkeyed and keyed */
    const struct wire_lock *all[4] = {&mutex, &rd, &wr, &sem};
    for (int k = -1; k < 4; k++) {
        size_t nargs = 0;
        for (int i = 0; i < 4; i++)
            nargs += wire_renew_size(all[i]);
        wire_renew_head(&b, sha[SCRIPT_RENEW], nargs, 30000, 0,
                        k < 0 ? NULL : all[k]);
        for (int i = 0; i < 4; i++)
            wire_renew_lock(&b, all[i]);
        keeps(&b, SCRIPT_RENEW);
    }
    resp_free(&b);
}
END_TEST

START_TEST(a_miscounted_encode_is_refused)
{
    const char *sha = script_table[SCRIPT_RELEASE].sha;
    struct resp_buf b;
    resp_init(&b, NULL, 0);
    /* the release with one argument too few, its header still saying 7 */
    wire_evalsha(&b, SCRIPT_RELEASE, sha, 1, 7);
    for (int i = 0; i < 7; i++)
        resp_arg(&b, "x", 1);
    ck_assert_int_eq(wire_check(&b, SCRIPT_RELEASE), -1);
    resp_arg(&b, "x", 1);
    ck_assert_int_eq(wire_check(&b, SCRIPT_RELEASE), 0);
    resp_arg(&b, "x", 1); /* one too many */
    ck_assert_int_eq(wire_check(&b, SCRIPT_RELEASE), -1);
    resp_reset(&b);
    /* counts that the contract does not allow: refused at the header */
    wire_evalsha(&b, SCRIPT_RELEASE, sha, 1, 8);
    ck_assert_int_eq(b.failed, RESP_BROKEN);
    resp_reset(&b);
    wire_evalsha(&b, SCRIPT_ACQUIRE, script_table[SCRIPT_ACQUIRE].sha, 5, 7);
    ck_assert_int_eq(b.failed, RESP_BROKEN);
    resp_reset(&b);
    /* the header counts right, but one key too many for the script */
    resp_array(&b, 3 + 2 + 7);
    resp_arg(&b, "EVALSHA", 7);
    resp_arg(&b, sha, 40);
    resp_arg(&b, "2", 1);
    for (int i = 0; i < 9; i++)
        resp_arg(&b, "x", 1);
    ck_assert_int_eq(wire_check(&b, SCRIPT_RELEASE), -1);
    resp_reset(&b);
    /* a whole call, then a second command after it: not one call */
    wire_release(&b, sha, &mutex, 4, 30000, 1, "publish", 0);
    ck_assert_int_eq(wire_check(&b, SCRIPT_RELEASE), 0);
    resp_array(&b, 1);
    resp_arg(&b, "PING", 4);
    ck_assert_int_eq(wire_check(&b, SCRIPT_RELEASE), -1);
    resp_reset(&b);
    /* the copy a second node sends is checked alike */
    struct resp_buf c;
    resp_init(&c, NULL, 0);
    wire_evalsha(&b, SCRIPT_RELEASE, sha, 1, 7);
    for (int i = 0; i < 7; i++)
        resp_arg(&b, "x", 1);
    resp_copy(&c, &b);
    ck_assert_int_eq(wire_check(&c, SCRIPT_RELEASE), -1);
    resp_arg(&b, "x", 1);
    resp_copy(&c, &b);
    ck_assert_int_eq(wire_check(&c, SCRIPT_RELEASE), 0);
    resp_free(&c);
    resp_reset(&b);
    /* another script's digest, or its body, is not this script */
    wire_release(&b, sha, &mutex, 4, 30000, 1, "publish", 0);
    ck_assert_int_eq(wire_check(&b, SCRIPT_RELEASE), 0);
    ck_assert_int_eq(wire_check(&b, SCRIPT_UNDO), -1);
    ck_assert_int_eq(wire_eval_body(&b, script_table[SCRIPT_RELEASE].body,
                                    script_table[SCRIPT_RELEASE].len),
                     0);
    ck_assert_int_eq(wire_check(&b, SCRIPT_RELEASE), 0);
    ck_assert_int_eq(wire_check(&b, SCRIPT_ACQUIRE), -1);
    resp_free(&b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("scripts");
    TCase *tc = tcase_create("encoder");
    tcase_add_checked_fixture(tc, encoder_setup, encoder_teardown);
    tcase_add_test(tc, every_encoder_keeps_its_scripts_contract);
    tcase_add_test(tc, a_miscounted_encode_is_refused);
    suite_add_tcase(s, tc);
    tc = tcase_create("scripts");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, every_body_loads_under_the_digest_the_build_computed);
    tcase_add_test(tc, acquire_counts_a_request_once_and_refuses_another_owner);
    tcase_add_test(tc, queue_marker_keeps_a_released_name_for_the_first_in_line);
    tcase_add_test(tc, a_default_waiter_gives_an_owners_hash_written_again_its_expiry);
    tcase_add_test(tc, a_waiter_finds_a_hold_without_the_marker_busy);
    tcase_add_test(tc, a_waiter_takes_a_free_lock_after_one_exists);
    tcase_add_test(tc, queue_marker_goes_with_dead_waiters_and_the_last_leave);
    tcase_add_test(tc, queue_marker_pass_skips_an_entry_left_behind);
    tcase_add_test(tc,
                   queue_marker_serves_the_line_for_a_caller_that_does_not_wait);
    tcase_add_test(tc, acquire_after_the_lease_ran_out_begins_a_new_hold);
    tcase_add_test(tc, acquire_refuses_other_kinds_and_leaves_them);
    tcase_add_test(tc, release_drops_holds_once_and_ends_with_the_message);
    tcase_add_test(tc, undo_drops_only_the_hold_its_attempt_began);
    tcase_add_test(tc, renew_tells_held_gone_and_refuses_past_its_deadline);
    tcase_add_test(tc, fence_only_raises_the_counter);
    tcase_add_test(tc, multi_acquire_takes_all_or_none_once);
    tcase_add_test(tc, fair_acquire_queues_once_and_release_hands_the_lock_on);
    tcase_add_test(tc, fair_release_wakes_the_next_only_on_another_client);
    tcase_add_test(tc, fair_leave_in_the_middle_keeps_a_long_queue_in_order);
    tcase_add_test(tc, fair_leave_rewrites_a_list_mostly_left_behind);
    tcase_add_test(tc, fair_retry_finds_its_entry_or_queues_again);
    tcase_add_test(tc, fair_join_reads_the_queues_expiry_from_the_marker);
    tcase_add_test(tc,
                   fair_join_gives_an_owners_hash_written_again_its_expiry);
    tcase_add_test(tc,
                   fair_leave_takes_the_entry_and_passes_a_raced_hand_off_on);
    tcase_add_test(tc, fair_undo_drops_only_its_attempts_hold_and_hands_it_on);
    tcase_add_test(tc, readers_share_a_waiting_writer_keeps_new_ones_off);
    tcase_add_test(tc, write_undo_drops_only_the_hold_its_attempt_began);
    tcase_add_test(tc, read_undo_drops_only_the_hold_its_attempt_began);
    tcase_add_test(tc, an_expired_read_hold_lets_the_writer_in);
    tcase_add_test(tc, a_reader_leaving_or_a_writer_asking_reads_few_readers);
    tcase_add_test(tc, dead_readers_behind_a_live_one_go_when_it_leaves);
    tcase_add_test(tc, rw_scripts_refuse_deadlock_and_other_kinds);
    tcase_add_test(tc,
                   semaphore_permits_are_taken_and_given_back_once_per_request);
    tcase_add_test(tc,
                   expiring_permits_apply_once_and_come_back_when_they_expire);
    tcase_add_test(tc, query_answers_for_the_owner_and_refuses_other_kinds);
    tcase_add_test(tc, guarded_runs_once_and_only_for_the_holder);
    suite_add_tcase(s, tc);
    return tu_main(s);
}
