/* SPDX-License-Identifier: BSD-3-Clause */
/* test_pure.c -- the modules with no I/O: RESP encoding, the time
 * heap, backoff, key naming, reply decoding and the Redlock arithmetic. No Redis needed; replies are
 * built by feeding RESP text to hiredis's own reader, as the wire would. */
#include <check.h>
#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "restore_payload.h"
#include "heap.h"
#include "hilock/hilock.h"
#include "keys.h"
#include "quorum.h"
#include "reply.h"
#include "resp.h"
#include "slot.h"
#include "wire.h"

static redisReply *parse(const char *resp);

START_TEST(resp_encodes_binary_safe_arguments_with_lengths)
{
    char small[8]; /* forces the move to the heap */
    struct resp_buf b;
    resp_init(&b, small, sizeof(small));
    struct resp_part parts[2] = {{"a\r\n", 3}, {"\0b", 2}};
    resp_array(&b, 3);
    resp_arg(&b, "SET", 3);
    resp_arg_parts(&b, 2, parts);
    resp_arg_u64(&b, 18446744073709551615ull);
    const char expect[] = "*3\r\n$3\r\nSET\r\n$5\r\na\r\n\0b\r\n"
                          "$20\r\n18446744073709551615\r\n";
    ck_assert_uint_eq(b.len, sizeof(expect) - 1);
    ck_assert(memcmp(b.data, expect, b.len) == 0);
    ck_assert(!b.failed);
    resp_reset(&b);
    resp_arg_u64(&b, 0);
    ck_assert_uint_eq(b.len, 7);
    ck_assert(memcmp(b.data, "$1\r\n0\r\n", 7) == 0);
    resp_free(&b);
    ck_assert_ptr_eq(b.data, small);
}
END_TEST

START_TEST(heap_pops_in_key_order_under_moves_and_removals)
{
    enum { N = 1000 };
    static struct heap_node nodes[N];
    struct heap h;
    heap_init(&h);
    srand(7);
    /* Few keys for many nodes: buckets are shared, moved between and
     * emptied all the time. */
    for (int i = 0; i < N; i++) {
        heap_node_init(&nodes[i]);
        ck_assert_int_eq(heap_set(&h, &nodes[i], (uint64_t)(rand() % 300)), 0);
    }
    for (int i = 0; i < N; i += 3)
        ck_assert_int_eq(heap_set(&h, &nodes[i], (uint64_t)(rand() % 300)), 0);
    for (int i = 1; i < N; i += 7)
        heap_remove(&h, &nodes[i]);
    for (int i = 1; i < N; i += 7)
        ck_assert(!heap_contains(&nodes[i]));
    ck_assert_uint_eq(h.len, N - (N + 5) / 7);
    ck_assert_uint_le(h.nbuckets, 300);
    uint64_t last = 0;
    size_t popped = 0;
    struct heap_node *top;
    while ((top = heap_top(&h))) {
        ck_assert_uint_ge(heap_top_key(&h), last);
        ck_assert_uint_eq(heap_key(&h, top), heap_top_key(&h));
        last = heap_top_key(&h);
        heap_remove(&h, top);
        ck_assert(!heap_contains(top));
        popped++;
    }
    ck_assert_uint_eq(popped, N - (N + 5) / 7);
    ck_assert_uint_eq(h.len, 0);
    ck_assert_uint_eq(h.nbuckets, 0);
    ck_assert_uint_le(h.nslots, 16); /* the table shrank as it emptied */
    heap_free(&h);
}
END_TEST

START_TEST(heap_shares_a_bucket_per_key_and_drops_it_when_emptied)
{
    struct heap_node a, b, c, d;
    struct heap h;
    heap_init(&h);
    heap_node_init(&a);
    heap_node_init(&b);
    heap_node_init(&c);
    heap_node_init(&d);
    ck_assert_int_eq(heap_set(&h, &a, 50), 0);
    ck_assert_int_eq(heap_set(&h, &b, 50), 0);
    ck_assert_int_eq(heap_set(&h, &c, 50), 0);
    ck_assert_int_eq(heap_set(&h, &d, 70), 0);
    ck_assert_uint_eq(h.nbuckets, 2);
    ck_assert_uint_eq(heap_top_key(&h), 50);
    /* Out of the middle, off the head, from the tail of one bucket. */
    heap_remove(&h, &b);
    ck_assert_uint_eq(heap_key(&h, &a), 50);
    ck_assert_int_eq(heap_set(&h, &c, 90), 0); /* c was the head */
    ck_assert_uint_eq(heap_key(&h, &a), 50);
    ck_assert_uint_eq(heap_key(&h, &c), 90);
    ck_assert_uint_eq(h.nbuckets, 3);
    ck_assert_int_eq(heap_set(&h, &a, 90), 0); /* 50 empties */
    ck_assert_uint_eq(h.nbuckets, 2);
    ck_assert_uint_eq(heap_top_key(&h), 70);
    ck_assert_ptr_eq(heap_top(&h), &d);
    /* Setting a node to the key it has changes nothing. */
    ck_assert_int_eq(heap_set(&h, &d, 70), 0);
    ck_assert_uint_eq(h.len, 3);
    heap_remove(&h, &d);
    ck_assert_uint_eq(heap_top_key(&h), 90);
    heap_remove(&h, &d); /* not in it: nothing happens */
    ck_assert_uint_eq(h.len, 2);
    heap_free(&h);
    ck_assert(!heap_contains(&a) && !heap_contains(&c));
    ck_assert_ptr_null(heap_top(&h));
}
END_TEST

/* Keys that are no arithmetic progression, so that some share a home slot
 * in the heap's table and removals have probe chains to repair. */
static uint64_t square(int i)
{
    return (uint64_t)i * (uint64_t)i;
}

START_TEST(heap_finds_buckets_by_key_through_growth_and_shrinking)
{
    /* Many distinct keys make the table grow and, as they empty, shrink;
     * every node must still be found under its own key. */
    enum { N = 5000 };
    static struct heap_node nodes[N];
    static struct heap_node *all[N];
    struct heap h;
    heap_init(&h);
    for (int i = 0; i < N; i++) {
        heap_node_init(&nodes[i]);
        ck_assert_int_eq(heap_set(&h, &nodes[i], square(i % 2500)), 0);
    }
    ck_assert_uint_eq(h.nbuckets, 2500);
    ck_assert_uint_eq(heap_nodes(&h, all, N), N);
    static char seen[N];
    for (int i = 0; i < N; i++) { /* each listed once */
        ptrdiff_t k = all[i] - nodes;
        ck_assert(k >= 0 && k < N && !seen[k]);
        seen[k] = 1;
    }
    ck_assert_uint_eq(heap_nodes(&h, all, 10), 10);
    static uint64_t key[N];
    for (int i = 0; i < N; i++)
        key[i] = square(i % 2500);
    for (int i = 0; i < N; i += 2)
        heap_remove(&h, &nodes[i]);
    for (int i = 1; i < N; i += 2) {
        ck_assert_uint_eq(heap_key(&h, &nodes[i]), key[i]);
        /* Joining an existing bucket must find it, not make another. */
        size_t before = h.nbuckets;
        ck_assert_int_eq(heap_set(&h, &nodes[i - 1], key[i]), 0);
        key[i - 1] = key[i];
        ck_assert_uint_eq(h.nbuckets, before);
    }
    for (int i = 0; i < N; i++)
        if (key[i] >= square(200))
            heap_remove(&h, &nodes[i]);
    ck_assert_uint_eq(h.nbuckets, 100); /* the squares of odd j < 200 */
    ck_assert_uint_le(h.nslots, 1024);
    for (int i = 0; i < N; i++)
        if (key[i] < square(200))
            ck_assert_uint_eq(heap_key(&h, &nodes[i]), key[i]);
    ck_assert_uint_eq(heap_top_key(&h), 1);
    heap_free(&h);
}
END_TEST

START_TEST(backoff_grows_caps_and_jitters_within_bounds)
{
    uint64_t seed = 42;
    for (unsigned attempt = 0; attempt < 40; attempt++) {
        uint64_t full = 50;
        for (unsigned i = 0; i < attempt && full < 2000; i++)
            full *= 2;
        if (full > 2000)
            full = 2000;
        for (int k = 0; k < 50; k++) {
            uint32_t d = backoff_delay_ms(50, 2000, attempt, &seed);
            ck_assert_uint_ge(d, full - full / 2);
            ck_assert_uint_le(d, full);
        }
    }
    uint32_t a = backoff_delay_ms(1000, 1000, 0, &seed);
    uint32_t same = 1;
    for (int k = 0; k < 20; k++)
        same &= backoff_delay_ms(1000, 1000, 0, &seed) == a;
    ck_assert_msg(!same, "jitter draws differ");
}
END_TEST

START_TEST(keys_follow_the_redisson_layout_and_parse_back)
{
    char small[512];
    struct resp_buf b;
    struct key_src k = {"p:", 2, "inv1", 4};
    struct key_src t = {"p:", 2, "inv{1}", 6}; /* a hash tag of its own */
    resp_init(&b, small, sizeof(small));
    keys_lock(&b, &k);
    keys_channel(&b, &k);
    keys_fence(&b, &k);
    keys_field(&b, "uuid", 77);
    keys_lock(&b, &t);
    keys_channel(&b, &t);
    keys_fence(&b, &t);
    const char expect[] = "$6\r\np:inv1\r\n"
                          "$31\r\np:redisson_lock__channel:{inv1}\r\n"
                          "$21\r\np:hilock_fence:{inv1}\r\n"
                          "$7\r\nuuid:77\r\n"
                          "$8\r\np:inv{1}\r\n"
                          "$31\r\np:redisson_lock__channel:inv{1}\r\n"
                          "$21\r\np:hilock_fence:inv{1}\r\n";
    ck_assert_uint_eq(b.len, sizeof(expect) - 1);
    ck_assert(memcmp(b.data, expect, b.len) == 0);
    resp_free(&b);

    /* Companions declared by the scripts: a fair queue's owners hash, a
     * reader's first hold; a name's own tag stays theirs too. */
    resp_init(&b, small, sizeof(small));
    keys_tagged(&b, &k, KEYS_QUEUE_HEAD, KEYS_OWNERS_TAIL);
    keys_tagged(&b, &t, KEYS_QUEUE_HEAD, KEYS_OWNERS_TAIL);
    keys_read_hold(&b, &k, "uuid", 77, NULL);
    keys_read_hold(&b, &t, "uuid", 77, NULL);
    const char companions[] = "$28\r\np:hilock_queue:{inv1}:owners\r\n"
                              "$28\r\np:hilock_queue:inv{1}:owners\r\n"
                              "$33\r\np:{inv1}:uuid:77:rwlock_timeout:1\r\n"
                              "$33\r\np:inv{1}:uuid:77:rwlock_timeout:1\r\n";
    ck_assert_uint_eq(b.len, sizeof(companions) - 1);
    ck_assert(memcmp(b.data, companions, b.len) == 0);
    resp_free(&b);

    const char *name[2];
    size_t len[2];
    const char *ch = "p:redisson_lock__channel:inv{1}";
    ck_assert_int_eq(keys_channel_names("p:", 2, ch, strlen(ch), name, len), 1);
    ck_assert_uint_eq(len[0], 6);
    ck_assert(memcmp(name[0], "inv{1}", 6) == 0);
    /* "{x}" is the channel of x and of {x} */
    ch = "p:redisson_lock__channel:{x}";
    ck_assert_int_eq(keys_channel_names("p:", 2, ch, strlen(ch), name, len), 2);
    ck_assert(len[0] == 1 && name[0][0] == 'x');
    ck_assert(len[1] == 3 && memcmp(name[1], "{x}", 3) == 0);
    ck_assert_int_eq(keys_channel_names("q:", 2, ch, strlen(ch), name, len), 0);
    ck_assert_int_eq(keys_channel_names("", 0, "other", 5, name, len), 0);
    ck_assert_int_eq(keys_channel_names("", 0, "redisson_lock__channel:{", 24,
                                        name, len), 0);
    ck_assert_int_eq(keys_channel_names("", 0, "redisson_lock__channel:{}",
                                        25, name, len), 0);

    /* The channel as text: the same bytes, cut nowhere. */
    char text[40];
    struct key_src bare = {"", 0, "inv1", 4};
    ck_assert_uint_eq(keys_channel_text(&k, text, sizeof(text)), 31);
    ck_assert_str_eq(text, "p:redisson_lock__channel:{inv1}");
    ck_assert_uint_eq(keys_channel_text(&t, text, sizeof(text)), 31);
    ck_assert_str_eq(text, "p:redisson_lock__channel:inv{1}");
    ck_assert_uint_eq(keys_channel_text(&bare, text, sizeof(text)), 29);
    ck_assert_str_eq(text, "redisson_lock__channel:{inv1}");
    memset(text, 'x', sizeof(text));
    ck_assert_uint_eq(keys_channel_text(&bare, text, 29), 29);
    ck_assert_int_eq(text[0], 'x');
    ck_assert_uint_eq(keys_channel_text(&bare, NULL, 0), 29);
}
END_TEST

/* Every key of a lock hashes to the lock key's slot, whatever braces the
 * name has. */
START_TEST(slots_follow_redis_and_keep_a_lock_in_one_slot)
{
    ck_assert_uint_eq(slot_crc16("123456789", 9), 0x31C3);
    ck_assert_uint_eq(slot_of2("foo", 3, "", 0), 12182);
    ck_assert_uint_eq(slot_of2("", 0, "foo", 3), 12182);
    ck_assert_uint_eq(slot_of2("{foo}", 5, "bar", 3), 12182);
    ck_assert_uint_eq(slot_of2("a{f", 3, "oo}b", 4), 12182);
    ck_assert_uint_eq(slot_of2("x{}{foo}", 8, "", 0),
                      slot_crc16("x{}{foo}", 8) & 16383);
    ck_assert(!slot_has_tag("a{", 2) && !slot_has_tag("a{}", 3) &&
              slot_has_tag("a{b}", 4) && !slot_has_tag("}{", 2));
    static const char *const names[] = {"inv", "a{b}c", "{x}", "a{",
                                        "}{a}", "x{y{z}}", "a}b"};
    /* a '}' without a tag: no companion key can share the slot */
    ck_assert(!keys_slot_safe("a{}b", 4) && !keys_slot_safe("{}", 2) &&
              !keys_slot_safe("a}", 2));
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(names[i], "a}b") == 0) {
            ck_assert(!keys_slot_safe(names[i], 3));
            continue;
        }
        ck_assert(keys_slot_safe(names[i], strlen(names[i])));
        struct key_src k = {"", 0, names[i], strlen(names[i])};
        char small[256];
        struct resp_buf b;
        resp_init(&b, small, sizeof(small));
        keys_channel(&b, &k);
        keys_fence(&b, &k);
        unsigned slot = slot_of2("", 0, names[i], strlen(names[i]));
        /* walk the two bulk strings */
        const char *p = b.data;
        for (int a = 0; a < 2; a++) {
            long n = strtol(p + 1, (char **)&p, 10);
            p += 2;
            ck_assert_msg(slot_of2(p, (size_t)n, "", 0) == slot, "%s",
                          names[i]);
            p += n + 2;
        }
        resp_free(&b);
    }
}
END_TEST

START_TEST(cluster_redirects_parse)
{
    struct reply_redirect to;
    redisReply *r = parse("-MOVED 3999 127.0.0.1:6381\r\n");
    ck_assert_int_eq(reply_redirect(r, &to), REPLY_MOVED);
    ck_assert_uint_eq(to.slot, 3999);
    ck_assert_str_eq(to.host, "127.0.0.1");
    ck_assert_int_eq(to.port, 6381);
    freeReplyObject(r);
    r = parse("-ASK 12 ::1:7000\r\n");
    ck_assert_int_eq(reply_redirect(r, &to), REPLY_ASK);
    ck_assert_str_eq(to.host, "::1");
    ck_assert_int_eq(to.port, 7000);
    freeReplyObject(r);
    r = parse("-MOVED 12 :7001\r\n"); /* the node that answered */
    ck_assert_int_eq(reply_redirect(r, &to), REPLY_MOVED);
    ck_assert_str_eq(to.host, "");
    ck_assert_int_eq(to.port, 7001);
    freeReplyObject(r);
    static const char *const retry[] = {
        "-TRYAGAIN Multiple keys request during rehashing of slot\r\n",
        "-CLUSTERDOWN The cluster is down\r\n",
        "-LOADING Redis is loading the dataset in memory\r\n"};
    for (size_t i = 0; i < sizeof(retry) / sizeof(retry[0]); i++) {
        r = parse(retry[i]);
        ck_assert_int_eq(reply_redirect(r, &to), REPLY_RETRY);
        freeReplyObject(r);
    }
    static const char *const bad[] = {
        "-MOVED x 1.2.3.4:5\r\n", "-MOVEDX 1 a:1\r\n",
        "-MOVED 16384 a:1\r\n",  "-MOVED 1 a:\r\n", "-MOVED 1 a\r\n",
        "-MOVED 1 a:70000\r\n",  "-MOVED 1\r\n",
        "-MOVED  a:1\r\n",       "-ERR MOVED 1 a:1\r\n",
        "+MOVED 1 a:1\r\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        r = parse(bad[i]);
        ck_assert_msg(reply_redirect(r, &to) == REPLY_NOT_REDIRECT, "%s",
                      bad[i]);
        freeReplyObject(r);
    }
}
END_TEST

/* Parse one RESP reply from text with hiredis's reader. */
static redisReply *parse(const char *resp)
{
    redisReader *r = redisReaderCreate();
    void *reply = NULL;
    redisReaderFeed(r, resp, strlen(resp));
    ck_assert_int_eq(redisReaderGetReply(r, &reply), REDIS_OK);
    ck_assert_ptr_nonnull(reply);
    redisReaderFree(r);
    return reply;
}

static int acquire_of(const char *resp, int64_t *holds, int64_t *token,
                      int64_t *ttl)
{
    redisReply *r = parse(resp);
    int rc = reply_acquire(r, holds, token, ttl);
    freeReplyObject(r);
    return rc;
}

START_TEST(acquire_replies_decode_to_results)
{
    int64_t holds = 0, token = 0, ttl = 0;
    ck_assert_int_eq(acquire_of("*2\r\n:1\r\n:9\r\n", &holds, &token, &ttl), 0);
    ck_assert(holds == 1 && token == 9);
    ck_assert_int_eq(acquire_of(":1234\r\n", &holds, &token, &ttl),
                     HILOCK_EBUSY);
    ck_assert(ttl == 1234);
    ck_assert_int_eq(acquire_of(":-1\r\n", &holds, &token, &ttl), HILOCK_EBUSY);
    ck_assert(ttl == -1);
    ck_assert_int_eq(acquire_of(":-2\r\n", &holds, &token, &ttl), HILOCK_EPROTO);
    ck_assert_int_eq(acquire_of("*2\r\n:0\r\n:9\r\n", &holds, &token, &ttl),
                     HILOCK_EPROTO);
    ck_assert_int_eq(acquire_of("*1\r\n:1\r\n", &holds, &token, &ttl),
                     HILOCK_EPROTO);
    ck_assert_int_eq(acquire_of("$-1\r\n", &holds, &token, &ttl), HILOCK_EPROTO);
    holds = token = 7;
    ck_assert_int_eq(acquire_of("+OK\r\n", &holds, &token, &ttl), 0);
    ck_assert(holds == 1 && token == 0); /* RESTORE made the lock */
    ck_assert_int_eq(acquire_of("+QUEUED\r\n", &holds, &token, &ttl),
                     HILOCK_EPROTO);
    ck_assert_int_eq(acquire_of("-BUSYKEY Target key name already exists.\r\n",
                                &holds, &token, &ttl), HILOCK_ESERVER);
    ck_assert_int_eq(acquire_of("-WRONGTYPE Operation against a key\r\n",
                                &holds, &token, &ttl), HILOCK_EWRONGTYPE);
    ck_assert_int_eq(acquire_of("-ERR Error running script (call to f_1): "
                                "@user_script:1: WRONGTYPE Operation\r\n",
                                &holds, &token, &ttl), HILOCK_EWRONGTYPE);
}
END_TEST

/* EXEC of a waiter's plain attempt: RESTORE, PTTL, HMGET of the owner's
 * field, "mode" and the fair queue's marker. */
#define LOOK_BUSY "*3\r\n-BUSYKEY Target key name already exists.\r\n"
static const char *const look_defers[] = {
    LOOK_BUSY ":5000\r\n*3\r\n$1\r\n1\r\n$-1\r\n$-1\r\n", /* own hold */
    LOOK_BUSY ":5000\r\n*3\r\n$-1\r\n$4\r\nread\r\n$-1\r\n", /* rwlock */
    LOOK_BUSY ":-1\r\n*3\r\n$-1\r\n$-1\r\n$1\r\n1\r\n", /* fair queue */
    LOOK_BUSY ":-1\r\n-WRONGTYPE Operation against a key\r\n", /* a list */
    LOOK_BUSY ":-2\r\n*3\r\n$-1\r\n$-1\r\n$-1\r\n", /* impossible */
    "*3\r\n-OOM command not allowed\r\n:-2\r\n"
    "*3\r\n$-1\r\n$-1\r\n$-1\r\n",
    LOOK_BUSY ":5000\r\n*2\r\n$-1\r\n$-1\r\n",
    "*2\r\n+OK\r\n:5000\r\n",
    "$-1\r\n",
};

START_TEST(a_waiters_plain_attempt_decides_or_defers)
{
    int64_t holds = 0, token = 7, ttl = 0;
    const char *took =
        "*3\r\n+OK\r\n:20000\r\n*3\r\n$1\r\n1\r\n$-1\r\n$-1\r\n";
    const char *busy =
        LOOK_BUSY ":1234\r\n*3\r\n$-1\r\n$-1\r\n$-1\r\n";
    redisReply *r = parse(took);
    ck_assert(!reply_look_defers(r));
    freeReplyObject(r);
    ck_assert_int_eq(acquire_of(took, &holds, &token, &ttl), 0);
    ck_assert(holds == 1 && token == 0);
    r = parse(busy);
    ck_assert(!reply_look_defers(r));
    freeReplyObject(r);
    ck_assert_int_eq(acquire_of(busy, &holds, &token, &ttl), HILOCK_EBUSY);
    ck_assert(ttl == 1234);
    for (size_t i = 0; i < sizeof look_defers / sizeof look_defers[0]; i++) {
        r = parse(look_defers[i]);
        ck_assert_msg(reply_look_defers(r), "case %zu", i);
        freeReplyObject(r);
        ck_assert_msg(acquire_of(look_defers[i], &holds, &token, &ttl) != 0,
                      "case %zu", i);
    }
}
END_TEST

START_TEST(dump_payload_is_a_checked_rdb_hash)
{
    /* the CRC-64 Redis checks payloads with: its published check value */
    const unsigned char *digits = (const unsigned char *)"123456789";
    ck_assert(restore_payload_crc64(0, digits, 9) == 0xe9c6d914c4b8d9caULL);
    /* and continued over parts, the same */
    ck_assert(restore_payload_crc64(restore_payload_crc64(0, digits, 4),
                                    digits + 4, 5) == 0xe9c6d914c4b8d9caULL);
    unsigned char out[512];
    char longer[100];
    memset(longer, 'x', sizeof longer);
    const struct resp_part kv[4] = {
        {"f", 1}, {"1", 1}, {longer, sizeof longer}, {"", 0}};
    size_t n = restore_payload_hash(kv, 2, out, sizeof out);
    /* type, pair count, 1+1, 1+1, 2+100 (a two-byte length), 1+0, version,
     * CRC */
    ck_assert_uint_eq(n, 1 + 1 + 2 + 2 + 102 + 1 + 2 + 8);
    ck_assert_int_eq(out[0], 4);
    ck_assert_int_eq(out[1], 2);
    ck_assert(out[2] == 1 && out[3] == 'f' && out[4] == 1 && out[5] == '1');
    ck_assert(out[6] == 0x40 && out[7] == 100);
    ck_assert(out[108] == 0 && out[109] == 6 && out[110] == 0);
    uint64_t crc = restore_payload_crc64(0, out, n - 8);
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(out[n - 8 + (size_t)i], (unsigned char)(crc >> (8 * i)));
    /* too small a buffer, a string too long: nothing */
    ck_assert_uint_eq(restore_payload_hash(kv, 2, out, n - 1), 0);
    const struct resp_part huge[2] = {{out, DUMP_STRING_MAX + 1}, {"", 0}};
    ck_assert_uint_eq(restore_payload_hash(huge, 1, out, sizeof out), 0);
}
END_TEST

/* The CRC-64 of Redis bit by bit, from its polynomial alone: what the
 * table-driven one must agree with. */
static uint64_t crc64_bitwise(uint64_t crc, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int b = 0; b < 8; b++)
            crc = crc & 1 ? crc >> 1 ^ 0x95ac9329ac4bc9b5ULL : crc >> 1;
    }
    return crc;
}

START_TEST(crc64_by_words_agrees_bit_by_bit)
{
    unsigned char data[96];
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < sizeof data; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        data[i] = (unsigned char)x;
    }
    /* every length and every start (the words are read unaligned), and
     * continued from a CRC in the middle of a word */
    for (size_t at = 0; at < 8; at++)
        for (size_t n = 0; at + n <= sizeof data; n++) {
            uint64_t want = crc64_bitwise(0, data + at, n);
            ck_assert_msg(restore_payload_crc64(0, data + at, n) == want,
                          "at %zu, %zu bytes", at, n);
            size_t half = n / 2 + at % 3;
            if (half <= n)
                ck_assert(restore_payload_crc64(
                              restore_payload_crc64(0, data + at, half),
                              data + at + half, n - half) == want);
        }
}
END_TEST

START_TEST(plain_commands_name_the_lock_and_the_owner)
{
    struct wire_lock l = {.prefix = "", .name = "inv", .name_len = 3,
                          .client_id = "c1", .owner_tag = 42};
    char in[512];
    struct resp_buf b;
    resp_init(&b, in, sizeof in);
    ck_assert_int_eq(wire_take(&b, &l, 30000, 9), 0);
    static const char head[] = "*4\r\n$7\r\nRESTORE\r\n$3\r\ninv\r\n"
                               "$5\r\n30000\r\n";
    /* the payload: a hash of 3 pairs, the owner's field = 1, its last and
     * its first request id (as the scripts write them) */
    static const char hash[] = "\x04\x03\x05" "c1:42" "\x01" "1" "\x09"
                               "c1:42:rid" "\x01" "9" "\x0f"
                               "c1:42:first:rid" "\x01" "9";
    ck_assert(memcmp(b.data, head, sizeof head - 1) == 0);
    ck_assert(memcmp(b.data + sizeof head - 1, "$50\r\n", 5) == 0);
    ck_assert(memcmp(b.data + sizeof head + 4, hash, sizeof hash - 1) == 0);
    resp_reset(&b);
    ck_assert_int_eq(wire_take(&b, &l, 0, 9), -1); /* RESTORE's "forever" */
    ck_assert_uint_eq(b.len, 0);
    size_t second = wire_drop(&b, &l, "publish");
    static const char hdel[] = "*5\r\n$4\r\nHDEL\r\n$3\r\ninv\r\n"
                               "$5\r\nc1:42\r\n$9\r\nc1:42:rid\r\n"
                               "$15\r\nc1:42:first:rid\r\n";
    static const char pub[] = "*3\r\n$7\r\npublish\r\n"
                              "$28\r\nredisson_lock__channel:{inv}\r\n"
                              "$1\r\n0\r\n";
    ck_assert_uint_eq(second, sizeof hdel - 1);
    ck_assert_uint_eq(b.len, second + sizeof pub - 1);
    ck_assert(memcmp(b.data, hdel, second) == 0);
    ck_assert(memcmp(b.data + second, pub, sizeof pub - 1) == 0);
    resp_reset(&b); /* quiet: the HDEL alone */
    ck_assert_uint_eq(wire_drop(&b, &l, NULL), 0);
    ck_assert_uint_eq(b.len, sizeof hdel - 1);
    ck_assert(memcmp(b.data, hdel, b.len) == 0);
    resp_free(&b);
}
END_TEST

START_TEST(plain_command_refusals_are_told_apart)
{
    static const struct {
        const char *resp;
        int refused;
    } v[] = {
        {"-BUSYKEY Target key name already exists.\r\n", 0},
        {"-EXECABORT Transaction discarded because of previous errors.\r\n",
         0},
        {"-OOM command not allowed\r\n", 0},
        {"-READONLY You can't write against a read only replica.\r\n", 0},
        {"-LOADING Redis is loading the dataset in memory\r\n", 0},
        {"-NOPERM User u has no permissions to run the 'restore' command\r\n",
         1},
        {"-ERR unknown command 'RESTORE', with args beginning with: \r\n", 1},
        {"-ERR EXEC without MULTI\r\n", 1},
        {"-ERR DUMP payload version or checksum are wrong\r\n", 1},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        redisReply *r = parse(v[i].resp);
        ck_assert_msg(reply_plain_refused(r) == v[i].refused, "%s", v[i].resp);
        freeReplyObject(r);
    }
}
END_TEST

START_TEST(error_replies_map_to_distinct_codes)
{
    static const struct {
        const char *resp;
        int code;
    } v[] = {
        {"-OOM command not allowed\r\n", HILOCK_EOOM},
        {"-READONLY You can't write against a read only replica.\r\n",
         HILOCK_EREADONLY},
        {"-NOAUTH Authentication required.\r\n", HILOCK_EAUTH},
        {"-WRONGPASS invalid username-password pair\r\n", HILOCK_EAUTH},
        {"-ERR Protocol error: unauthenticated multibulk length\r\n",
         HILOCK_EAUTH},
        {"-NOPERM this user has no permissions\r\n", HILOCK_ENOPERM},
        /* an ACL refusing a command inside a script: Redis 7.0, 6.2 */
        {"-ERR The user executing the script can't publish to the channel "
         "mentioned in the command script: 1f0c, on @user_script:9.\r\n",
         HILOCK_ENOPERM},
        {"-ERR Error running script (call to f_1f0c): @user_script:9: "
         "@user_script: 9: The user executing the script can't run this "
         "command or subcommand\r\n",
         HILOCK_ENOPERM},
        /* the same on Redis 7.2 and later */
        {"-ERR ACL failure in script: No permissions to access a channel "
         "script: b87f673e, on @user_script:1.\r\n",
         HILOCK_ENOPERM},
        {"-WRONGKIND rwlock\r\n", HILOCK_EWRONGKIND},
        {"-ERR something else\r\n", HILOCK_ESERVER},
        /* a command's error inside a script, as Redis 6.2 and KeyDB wrap
         * it: the inner reply keeps its dash */
        {"-ERR Error running script (call to f_5a1b): @user_script: 1: "
         "-READONLY You can't write against a read only replica. \r\n",
         HILOCK_EREADONLY},
        {"-ERR Error running script (call to f_5a1b): @user_script: 1: "
         "-OOM command not allowed when used memory > 'maxmemory'. \r\n",
         HILOCK_EOOM},
        {"-ERR Error running script (call to f_5a1b): @user_script: 1: "
         "-NOPERM this user has no permissions to run the 'hset' command\r\n",
         HILOCK_ENOPERM},
        {"-ERR Error running script: @user_script: 1: -ERR not a code\r\n",
         HILOCK_ESERVER},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        redisReply *r = parse(v[i].resp);
        ck_assert_int_eq(reply_error_code(r), v[i].code);
        freeReplyObject(r);
    }
    redisReply *r = parse("-NOSCRIPT No matching script.\r\n");
    ck_assert(reply_is_noscript(r));
    freeReplyObject(r);
    r = parse("+OK\r\n");
    ck_assert(!reply_is_noscript(r));
    ck_assert_int_eq(reply_error_code(r), HILOCK_EPROTO);
    freeReplyObject(r);
}
END_TEST

/* Server texts that echo arguments lose them before they are logged. */
START_TEST(error_texts_are_scrubbed_of_arguments)
{
    char out[REPLY_SCRUB_MAX];
    static const char unknown[] =
        "ERR unknown command 'EVALSHA', with args beginning with: "
        "'c24ce29b' '1' 'k' '6a10219f-8b0d-49d8-920c-c91db8cdfc44:1' ";
    ck_assert_str_eq(reply_error_scrub(unknown, sizeof unknown - 1, out,
                                       sizeof out),
                     "ERR unknown command 'EVALSHA', with args beginning "
                     "with:");
    static const char quoted[] = "ERR bad 'x-1:2' and 'GET'\r\nmore";
    ck_assert_str_eq(reply_error_scrub(quoted, sizeof quoted - 1, out,
                                       sizeof out),
                     "ERR bad '...' and 'GET'??more");
    static const char open[] = "ERR unclosed 'secret";
    ck_assert_str_eq(reply_error_scrub(open, sizeof open - 1, out,
                                       sizeof out),
                     "ERR unclosed '...'");
    char tiny[8];
    ck_assert_str_eq(reply_error_scrub(unknown, sizeof unknown - 1, tiny,
                                       sizeof tiny),
                     "ERR unk");
    char longtext[400];
    memset(longtext, 'a', sizeof longtext);
    ck_assert_uint_eq(strlen(reply_error_scrub(longtext, sizeof longtext,
                                               out, sizeof out)),
                      200);
}
END_TEST

/* An EVALSHA refused (NOSCRIPT after a load that did not take, or EVALSHA
 * itself refused) goes again as EVAL of the body with the same keys and
 * arguments, its request id still last (rewritten in place later). */
START_TEST(evalsha_becomes_eval_of_the_body)
{
    const char sha[41] = "0123456789abcdef0123456789abcdef01234567";
    struct resp_buf b;
    resp_init(&b, NULL, 0);
    wire_evalsha(&b, SCRIPT_FENCE, sha, 1, 1);
    resp_arg(&b, "k", 1);
    resp_arg_u64_fixed(&b, 7);
    ck_assert_int_eq(wire_eval_body(&b, "return 1", 8), 0);
    const char *want = "*5\r\n$4\r\nEVAL\r\n$8\r\nreturn 1\r\n$1\r\n1\r\n"
                       "$1\r\nk\r\n$20\r\n00000000000000000007\r\n";
    ck_assert_uint_eq(b.len, strlen(want));
    ck_assert_str_eq(b.data, want);
    wire_rid(&b, 8);
    ck_assert(strstr(b.data, "00000000000000000008\r\n") != NULL);
    /* not an EVALSHA (now an EVAL): left as it is */
    ck_assert_int_eq(wire_eval_body(&b, "return 2", 8), -1);
    ck_assert_str_eq(b.data + b.len - 22, "00000000000000000008\r\n");
    resp_free(&b);

    static const struct {
        const char *resp;
        int refused;
    } v[] = {
        {"-NOPERM User u has no permissions to run the 'evalsha' command\r\n",
         1},
        {"-NOPERM this user has no permissions to run the 'evalsha' command "
         "or its subcommand\r\n", 1},
        {"-ERR unknown command `EVALSHA`, with args beginning with: \r\n", 1},
        {"-ERR unknown command 'EVALSHA', with args beginning with: \r\n", 1},
        {"-NOPERM User u has no permissions to run the 'hset' command\r\n", 0},
        {"-NOSCRIPT No matching script. Please use EVAL.\r\n", 0},
        {"-ERR evalsha\r\n", 0},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        redisReply *r = parse(v[i].resp);
        ck_assert_int_eq(reply_evalsha_refused(r), v[i].refused);
        freeReplyObject(r);
    }
}
END_TEST

/* The command in b as hiredis reads it: one array of its words, with
 * nothing after it. */
static redisReply *command_words(const struct resp_buf *b)
{
    redisReader *r = redisReaderCreate();
    void *cmd = NULL, *more = NULL;
    redisReaderFeed(r, b->data, b->len);
    ck_assert_int_eq(redisReaderGetReply(r, &cmd), REDIS_OK);
    ck_assert_ptr_nonnull(cmd);
    ck_assert_int_eq(redisReaderGetReply(r, &more), REDIS_OK);
    ck_assert_ptr_null(more);
    redisReaderFree(r);
    ck_assert_int_eq(((redisReply *)cmd)->type, REDIS_REPLY_ARRAY);
    return cmd;
}

/* Whether the words of cmd from first on are want[0..n-1]. */
static void words_are(const redisReply *cmd, size_t first,
                      const char *const *want, size_t n)
{
    ck_assert_uint_ge(cmd->elements, first + n);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(cmd->element[first + i]->len == strlen(want[i]) &&
                          memcmp(cmd->element[first + i]->str, want[i],
                                 strlen(want[i])) == 0,
                      "word %zu: %s, not %s", first + i,
                      cmd->element[first + i]->str, want[i]);
}

/* One renew call over a lock of every kind that renews, each written as
 * its kind's struct wire_kind says (the renew script's contract: a type,
 * then the key, the holder and what else it reads), and a call of one
 * lock alone declaring the keys its kind names. */
START_TEST(renew_calls_write_each_lock_as_its_kind_says)
{
    const char sha[41] = "0123456789abcdef0123456789abcdef01234567";
    struct wire_lock m = {.prefix = "", .name = "inv", .name_len = 3,
                          .client_id = "c1", .owner_tag = 42,
                          .kind = &wire_kind_mutex};
    struct wire_lock r = m, w = m, p = m;
    r.kind = &wire_kind_read;
    w.kind = &wire_kind_write;
    w.suffix = ":write";
    p.kind = &wire_kind_permit;
    memcpy(p.member, "ABCDEFGHIJKLMNOP", sizeof p.member);
    const struct wire_lock *all[4] = {&m, &r, &w, &p};
    struct resp_buf b;
    resp_init(&b, NULL, 0);
    size_t nargs = 0;
    for (int i = 0; i < 4; i++)
        nargs += wire_renew_size(all[i]);
    ck_assert_uint_eq(nargs, 13);
    wire_renew_head(&b, sha, nargs, 30000, 0, NULL);
    for (int i = 0; i < 4; i++)
        wire_renew_lock(&b, all[i]);
    redisReply *cmd = command_words(&b);
    static const char *const batch[] = {
        "0", "30000", "0",
        "m", "inv", "c1:42",
        "r", "inv", "c1:42", "{inv}:",
        "w", "inv", "c1:42:write",
        "p", "{inv}:timeout", "ABCDEFGHIJKLMNOP"};
    ck_assert_uint_eq(cmd->elements, 2 + 16);
    words_are(cmd, 2, batch, 16);
    freeReplyObject(cmd);
    /* alone: a reader declares its key and its first hold's key, a permit
     * its sorted set, a writer its key */
    static const char *const keyed[3][4] = {
        {"2", "inv", "{inv}:c1:42:rwlock_timeout:1", "30000"},
        {"1", "{inv}:timeout", "30000", "0"},
        {"1", "inv", "30000", "0"}};
    const struct wire_lock *alone[3] = {&r, &p, &w};
    for (int i = 0; i < 3; i++) {
        resp_reset(&b);
        wire_renew_head(&b, sha, wire_renew_size(alone[i]), 30000, 0,
                        alone[i]);
        wire_renew_lock(&b, alone[i]);
        cmd = command_words(&b);
        ck_assert_uint_eq(cmd->elements,
                          3 + (size_t)(keyed[i][0][0] - '0') + 2 +
                              wire_renew_size(alone[i]));
        words_are(cmd, 2, keyed[i], 4);
        freeReplyObject(cmd);
    }
    /* the query names the key's layout of the kind asked about */
    static const char *const query[2][4] = {
        {"inv", "count", "c1:42", "lock"},
        {"inv", "count", "c1:42:write", "rwlock"}};
    const struct wire_lock *asked[2] = {&m, &w};
    for (int i = 0; i < 2; i++) {
        resp_reset(&b);
        wire_query(&b, sha, WIRE_QUERY_COUNT, asked[i]);
        cmd = command_words(&b);
        ck_assert_uint_eq(cmd->elements, 7);
        words_are(cmd, 2, (const char *const[]){"1"}, 1);
        words_are(cmd, 3, query[i], 4);
        freeReplyObject(cmd);
    }
    resp_free(&b);
}
END_TEST

START_TEST(release_renew_and_integer_replies_decode)
{
    int64_t v = -5, heard = -5;
    unsigned char ok[3];
    redisReply *r = parse("*2\r\n:2\r\n:0\r\n");
    ck_assert_int_eq(reply_release(r, &v, &heard), 0);
    ck_assert(v == 2 && heard == 0);
    freeReplyObject(r);
    r = parse("*2\r\n:0\r\n:3\r\n");
    ck_assert_int_eq(reply_release(r, &v, &heard), 0);
    ck_assert(v == 0 && heard == 3);
    freeReplyObject(r);
    r = parse("$-1\r\n");
    ck_assert_int_eq(reply_release(r, &v, &heard), HILOCK_ENOTOWNER);
    ck_assert_int_eq(reply_integer(r, 7, &v), 0);
    ck_assert(v == 7);
    freeReplyObject(r);
    r = parse(":2\r\n");
    ck_assert_int_eq(reply_release(r, &v, &heard), HILOCK_EPROTO);
    freeReplyObject(r);
    /* the plain release: EXEC of HDEL (fields removed) and PUBLISH; a
     * quiet one is the HDEL alone, which nobody heard */
    r = parse("*2\r\n:2\r\n:3\r\n");
    v = heard = -1;
    ck_assert_int_eq(reply_release_plain(r, &v, &heard), 0);
    ck_assert(v == 0 && heard == 3);
    freeReplyObject(r);
    r = parse(":2\r\n");
    v = heard = -1;
    ck_assert_int_eq(reply_release_plain(r, &v, &heard), 0);
    ck_assert(v == 0 && heard == 0);
    freeReplyObject(r);
    static const struct {
        const char *resp;
        int status;
    } plain[] = {
        {"*2\r\n:0\r\n:0\r\n", HILOCK_ENOTOWNER}, /* another owner's */
        {":0\r\n", HILOCK_ENOTOWNER},
        {"*2\r\n-WRONGTYPE Operation against a key\r\n:0\r\n",
         HILOCK_EWRONGTYPE},
        {"-WRONGTYPE Operation against a key\r\n", HILOCK_EWRONGTYPE},
        {"*2\r\n:-1\r\n:0\r\n", HILOCK_EPROTO},
        {":-1\r\n", HILOCK_EPROTO},
        {"*1\r\n:1\r\n", HILOCK_EPROTO},
        {"-EXECABORT Transaction discarded\r\n", HILOCK_ESERVER},
    };
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        r = parse(plain[i].resp);
        ck_assert_int_eq(reply_release_plain(r, &v, &heard), plain[i].status);
        freeReplyObject(r);
    }
    r = parse("*2\r\n:-3\r\n:0\r\n");
    ck_assert_int_eq(reply_release(r, &v, &heard), HILOCK_EPROTO);
    freeReplyObject(r);
    r = parse("$3\r\n101\r\n");
    ck_assert_int_eq(reply_renew(r, 3, ok), 0);
    ck_assert(ok[0] == 1 && ok[1] == 0 && ok[2] == 1);
    ck_assert_int_eq(reply_renew(r, 2, ok), HILOCK_EPROTO);
    freeReplyObject(r);
    r = parse("$2\r\n12\r\n"); /* 2: that node cannot tell */
    ck_assert_int_eq(reply_renew(r, 2, ok), 0);
    ck_assert(ok[0] == 1 && ok[1] == 2);
    freeReplyObject(r);
    r = parse("$2\r\n13\r\n");
    ck_assert_int_eq(reply_renew(r, 2, ok), HILOCK_EPROTO);
    freeReplyObject(r);
    r = parse("*2\r\n:1\r\n:1\r\n"); /* the old array form */
    ck_assert_int_eq(reply_renew(r, 2, ok), HILOCK_EPROTO);
    freeReplyObject(r);
    r = parse("$2\r\n42\r\n");
    ck_assert_int_eq(reply_integer(r, 0, &v), 0);
    ck_assert(v == 42);
    freeReplyObject(r);
    r = parse("$2\r\n4x\r\n");
    ck_assert_int_eq(reply_integer(r, 0, &v), HILOCK_EPROTO);
    freeReplyObject(r);
}
END_TEST

/* A fair hand-off, as its message and as a release's reply, carries the
 * waiter's send time and the span to the end of its lease; anything short
 * of the five parts is not a hand-off. */
START_TEST(fair_handoffs_decode_with_their_lease_end)
{
    struct reply_handoff h;
    int64_t left, heard;
    const char *msg = "7:12:3:1000:4500";
    ck_assert_int_eq(reply_handoff_message(msg, strlen(msg), &h), 0);
    ck_assert(h.owner_tag == 7 && h.wait_id == 12 && h.token == 3);
    ck_assert(h.sent_ms == 1000 && h.span_ms == 4500);
    static const char *const bad[] = {"7:12:3", "7:12:3:1000", "7:12:3:1000:",
                                      "7:12:3:1000:45x", "7:12:3:-1:4500",
                                      "wake:5000"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(reply_handoff_message(bad[i], strlen(bad[i]), &h) ==
                          HILOCK_EPROTO,
                      "%s", bad[i]);
    redisReply *r = parse("*7\r\n:0\r\n:0\r\n$1\r\n7\r\n$2\r\n12\r\n"
                          ":3\r\n$4\r\n1000\r\n:4500\r\n");
    ck_assert_int_eq(reply_release(r, &left, &heard), 0);
    ck_assert_int_eq(reply_release_handoff(r, &h), REPLY_HANDED_LOCAL);
    ck_assert(h.owner_tag == 7 && h.wait_id == 12 && h.token == 3);
    ck_assert(h.sent_ms == 1000 && h.span_ms == 4500);
    freeReplyObject(r);
    r = parse("*5\r\n:0\r\n:0\r\n$1\r\n7\r\n$2\r\n12\r\n:3\r\n");
    ck_assert_int_eq(reply_release(r, &left, &heard), HILOCK_EPROTO);
    freeReplyObject(r);
}
END_TEST

/* ---- quorum.c: the Redlock arithmetic ---------------------------------- */

static const struct op_result OK = {.count = 1, .token = 7};
static const struct op_result BUSY = {.status = HILOCK_EBUSY, .ttl_ms = 500,
                                      .index = 2};
static const struct op_result DOWN = {.status = HILOCK_ECONN};

/* Decide kind over n results of which the first got are in. */
static int decide(enum op_kind kind, size_t n, const struct op_result *res,
                  size_t got, struct op_result *out)
{
    unsigned char g[QUORUM_NODES_MAX] = {0};
    for (size_t i = 0; i < got; i++)
        g[i] = 1;
    return quorum_decide(kind, n, res, g, out);
}

START_TEST(majority_and_validity)
{
    ck_assert_uint_eq(quorum_of(1), 1);
    ck_assert_uint_eq(quorum_of(3), 2);
    ck_assert_uint_eq(quorum_of(5), 3);
    ck_assert_uint_eq(quorum_of(9), 5);
    /* 10 000 ms lease: the allowance is 100 + 2 ms */
    ck_assert_int_eq(quorum_validity(10000, 0), 9898);
    ck_assert_int_eq(quorum_validity(10000, 9898), 0);
    ck_assert_int_lt(quorum_validity(100, 200), 0);
}
END_TEST

/* A grant is checked against its lease from the moment its request was
 * sent: 1000 ms leave 1000 - 12 ms of allowance, less the time since. */
START_TEST(grant_validity_counts_from_the_send)
{
    ck_assert_int_eq(quorum_grant_left(1000, 5000, 5000), 988);
    ck_assert_int_eq(quorum_grant_left(1000, 5000, 5500), 488);
    ck_assert_int_eq(quorum_grant_left(1000, 5000, 5988), 0);  /* too late */
    ck_assert_int_lt(quorum_grant_left(1000, 5000, 6500), 0); /* 1.5 leases */
    /* a clock read before the send counts as no time */
    ck_assert_int_eq(quorum_grant_left(1000, 5000, 4000), 988);
    /* leases up to HILOCK_MS_MAX, times far apart: no overflow */
    ck_assert_int_lt(quorum_grant_left(UINT32_MAX, 0, UINT64_MAX / 2), 0);
    ck_assert_int_gt(quorum_grant_left(UINT32_MAX, 7, 7), 0);
}
END_TEST

START_TEST(one_node_passes_its_reply_through)
{
    struct op_result out;
    struct op_result busy[1] = {BUSY};
    struct op_result down[1] = {DOWN};
    ck_assert_int_eq(decide(OP_KIND_ACQUIRE, 1, busy, 0, &out), 0);
    ck_assert_int_eq(decide(OP_KIND_ACQUIRE, 1, busy, 1, &out), 1);
    ck_assert_int_eq(out.status, HILOCK_EBUSY);
    ck_assert_int_eq(out.ttl_ms, 500);
    ck_assert_int_eq(decide(OP_KIND_RELEASE, 1, down, 1, &out), 1);
    ck_assert_int_eq(out.status, HILOCK_ECONN);
}
END_TEST

START_TEST(acquire_is_decided_by_the_first_majority)
{
    struct op_result res[5] = {OK, {.count = 1, .token = 9}, OK, DOWN, DOWN};
    struct op_result out;
    ck_assert_int_eq(decide(OP_KIND_ACQUIRE, 5, res, 2, &out), 0);
    ck_assert_int_eq(decide(OP_KIND_ACQUIRE, 5, res, 3, &out), 1);
    ck_assert_int_eq(out.status, 0);
    ck_assert_int_eq(out.token, 9); /* the largest token of the majority */
}
END_TEST

/* Masters that hold another kind's key under the name make the failure
 * that (with busy ones beside them, when too few are busy to say busy);
 * one beside a majority that granted changes nothing. */
START_TEST(another_kind_on_the_masters_that_refused_is_reported)
{
    const struct op_result KIND = {.status = HILOCK_EWRONGKIND};
    struct op_result two[3] = {KIND, KIND, OK};
    struct op_result mixed[3] = {KIND, BUSY, OK};
    struct op_result one[3] = {KIND, OK, OK};
    struct op_result down[3] = {KIND, DOWN, OK};
    struct op_result five[5] = {KIND, KIND, KIND, BUSY, OK};
    struct op_result out;
    ck_assert_int_eq(decide(OP_KIND_ACQUIRE, 3, two, 2, &out), 1);
    ck_assert_int_eq(out.status, HILOCK_EWRONGKIND);
    ck_assert_int_eq(decide(OP_KIND_ACQUIRE, 3, mixed, 2, &out), 1);
    ck_assert_int_eq(out.status, HILOCK_EBUSY); /* a waiter waits on */
    ck_assert_int_eq(decide(OP_KIND_ACQUIRE, 5, five, 4, &out), 1);
    ck_assert_int_eq(out.status, HILOCK_EWRONGKIND);
    ck_assert_int_eq(decide(OP_KIND_QUERY_HELD, 3, two, 3, &out), 1);
    ck_assert_int_eq(out.status, HILOCK_EWRONGKIND);
    ck_assert_int_eq(decide(OP_KIND_ACQUIRE, 3, one, 3, &out), 1);
    ck_assert_int_eq(out.status, 0);
    ck_assert_int_eq(decide(OP_KIND_ACQUIRE, 3, down, 2, &out), 1);
    ck_assert_int_eq(out.status, HILOCK_ENOQUORUM);
}
END_TEST

START_TEST(acquire_fails_once_a_majority_is_out_of_reach)
{
    struct op_result down[3] = {DOWN, DOWN, OK};
    struct op_result busy[3] = {
        BUSY, OK, {.status = HILOCK_EBUSY, .ttl_ms = 300, .index = 4}};
    struct op_result out;
    ck_assert_int_eq(decide(OP_KIND_ACQUIRE, 3, down, 1, &out), 0);
    ck_assert_int_eq(decide(OP_KIND_ACQUIRE, 3, down, 2, &out), 1);
    ck_assert_int_eq(out.status, HILOCK_ENOQUORUM);
    ck_assert_int_eq(decide(OP_KIND_ACQUIRE, 3, busy, 3, &out), 1);
    ck_assert_int_eq(out.status, HILOCK_EBUSY);
    ck_assert_int_eq(out.ttl_ms, 300); /* the soonest a holder's lease ends */
    ck_assert_int_eq(out.index, 4); /* and what that reply said */
}
END_TEST

START_TEST(queries_wait_for_every_node_and_take_what_a_majority_has)
{
    struct op_result ttl[3] = {{.count = 900}, {.count = -1},
                                {.count = 400}};
    struct op_result out;
    ck_assert_int_eq(decide(OP_KIND_QUERY_TTL, 3, ttl, 2, &out), 0);
    ck_assert_int_eq(decide(OP_KIND_QUERY_TTL, 3, ttl, 3, &out), 1);
    ck_assert_int_eq(out.status, 0);
    ck_assert_int_eq(out.count, 400); /* a majority still has 400 ms */
    struct op_result held[3] = {{.count = 1}, {.count = 0}, DOWN};
    ck_assert_int_eq(decide(OP_KIND_QUERY_HELD, 3, held, 3, &out), 1);
    ck_assert_int_eq(out.count, 0); /* held on one of three: not held */
}
END_TEST

START_TEST(renewals_are_decided_per_lock)
{
    /* three nodes, two locks: lock 0 renewed on two, lock 1 gone on two */
    unsigned char ok[6] = {RENEW_OK, RENEW_GONE, RENEW_OK, RENEW_GONE,
                           RENEW_UNKNOWN, RENEW_OK};
    unsigned char out[2];
    quorum_renew(3, 2, ok, out);
    ck_assert_int_eq(out[0], RENEW_OK);
    ck_assert_int_eq(out[1], RENEW_GONE);
    unsigned char split[3] = {RENEW_OK, RENEW_GONE, RENEW_UNKNOWN};
    quorum_renew(3, 1, split, out);
    ck_assert_int_eq(out[0], RENEW_UNKNOWN); /* retried, not lost yet */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("pure");
    TCase *tc = tcase_create("pure");
    tcase_add_test(tc, dump_payload_is_a_checked_rdb_hash);
    tcase_add_test(tc, crc64_by_words_agrees_bit_by_bit);
    tcase_add_test(tc, plain_commands_name_the_lock_and_the_owner);
    tcase_add_test(tc, plain_command_refusals_are_told_apart);
    tcase_add_test(tc, error_texts_are_scrubbed_of_arguments);
    tcase_add_test(tc, resp_encodes_binary_safe_arguments_with_lengths);
    tcase_add_test(tc, heap_pops_in_key_order_under_moves_and_removals);
    tcase_add_test(tc, heap_shares_a_bucket_per_key_and_drops_it_when_emptied);
    tcase_add_test(tc, heap_finds_buckets_by_key_through_growth_and_shrinking);
    tcase_add_test(tc, backoff_grows_caps_and_jitters_within_bounds);
    tcase_add_test(tc, keys_follow_the_redisson_layout_and_parse_back);
    tcase_add_test(tc, slots_follow_redis_and_keep_a_lock_in_one_slot);
    tcase_add_test(tc, cluster_redirects_parse);
    tcase_add_test(tc, acquire_replies_decode_to_results);
    tcase_add_test(tc, a_waiters_plain_attempt_decides_or_defers);
    tcase_add_test(tc, error_replies_map_to_distinct_codes);
    tcase_add_test(tc, evalsha_becomes_eval_of_the_body);
    tcase_add_test(tc, release_renew_and_integer_replies_decode);
    tcase_add_test(tc, renew_calls_write_each_lock_as_its_kind_says);
    tcase_add_test(tc, fair_handoffs_decode_with_their_lease_end);
    suite_add_tcase(s, tc);
    tc = tcase_create("quorum");
    tcase_add_test(tc, majority_and_validity);
    tcase_add_test(tc, grant_validity_counts_from_the_send);
    tcase_add_test(tc, one_node_passes_its_reply_through);
    tcase_add_test(tc, acquire_is_decided_by_the_first_majority);
    tcase_add_test(tc, acquire_fails_once_a_majority_is_out_of_reach);
    tcase_add_test(tc, another_kind_on_the_masters_that_refused_is_reported);
    tcase_add_test(tc, queries_wait_for_every_node_and_take_what_a_majority_has);
    tcase_add_test(tc, renewals_are_decided_per_lock);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
