/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_reply.c -- libFuzzer target for everything that turns bytes from
 * Redis into a result.
 *
 * The input is fed to hiredis's reader exactly as the wire would; every
 * reply it yields goes through each decoder in src/reply.c, and through the
 * channel-name parser used for pub/sub messages. A second property runs
 * alongside: the input, cut into arguments, is encoded by src/resp.c and must
 * read back through hiredis as the same arguments. */
#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "reply.h"
#include "resp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Run every decoder on r; they must not crash or read out of bounds. */
static void decode_all(const redisReply *r)
{
    int64_t a, b, c;
    unsigned char ok[64];
    reply_acquire(r, &a, &b, &c);
    reply_release(r, &a, &b);
    reply_integer(r, -2, &a);
    reply_error_code(r);
    reply_is_noscript(r);
    struct reply_redirect to;
    reply_redirect(r, &to);
    if (r->type == REDIS_REPLY_STRING && r->len <= sizeof(ok))
        reply_renew(r, r->len, ok);
    reply_renew(r, 1, ok);
    if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_ERROR) {
        const char *name[2];
        size_t len[2];
        size_t cut = r->len / 3;
        int n = keys_channel_names(r->str, cut, r->str, r->len, name, len);
        for (int i = 0; i < n; i++)
            if (name[i] < r->str || name[i] + len[i] > r->str + r->len)
                abort();
    }
}

/* Encode the input as arguments split at 0xff bytes and parse it back. */
static void roundtrip(const uint8_t *data, size_t size)
{
    struct resp_buf b;
    char small[64];
    size_t argc = 1;
    for (size_t i = 0; i < size; i++)
        argc += data[i] == 0xff;
    resp_init(&b, small, sizeof(small));
    resp_array(&b, argc);
    size_t start = 0;
    for (size_t i = 0; i <= size; i++) {
        if (i == size || data[i] == 0xff) {
            resp_arg(&b, data + start, i - start);
            start = i + 1;
        }
    }
    if (b.failed || b.data[b.len] != '\0')
        abort();
    redisReader *rd = redisReaderCreate();
    void *reply = NULL;
    redisReaderFeed(rd, b.data, b.len);
    if (redisReaderGetReply(rd, &reply) != REDIS_OK || !reply)
        abort();
    redisReply *r = reply;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != argc)
        abort();
    start = 0;
    for (size_t i = 0, k = 0; i <= size; i++) {
        if (i == size || data[i] == 0xff) {
            const redisReply *e = r->element[k++];
            if (e->type != REDIS_REPLY_STRING || e->len != i - start ||
                memcmp(e->str, data + start, e->len) != 0)
                abort();
            start = i + 1;
        }
    }
    freeReplyObject(reply);
    redisReaderFree(rd);
    resp_free(&b);
}

/* Nonzero when the input declares an array of more than 4096 elements.
 * hiredis's reader allocates a declared array up front (0.14 without any
 * limit), so such inputs only measure hiredis's allocator, not our code. */
static int huge_array(const uint8_t *data, size_t size)
{
    for (size_t i = 0; i < size; i++) {
        if (data[i] != '*')
            continue;
        unsigned long n = 0;
        for (size_t j = i + 1; j < size && data[j] >= '0' && data[j] <= '9';
             j++)
            if ((n = n * 10 + (data[j] - '0')) > 4096)
                return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (huge_array(data, size))
        return 0;
    redisReader *rd = redisReaderCreate();
    void *reply = NULL;
    redisReaderFeed(rd, (const char *)data, size);
    while (redisReaderGetReply(rd, &reply) == REDIS_OK && reply) {
        decode_all(reply);
        freeReplyObject(reply);
        reply = NULL;
    }
    redisReaderFree(rd);
    if (size < 4096)
        roundtrip(data, size);
    return 0;
}
