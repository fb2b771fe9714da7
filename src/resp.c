/* SPDX-License-Identifier: BSD-3-Clause */
/* resp.c -- RESP command encoding with explicit lengths.
 *
 * Requests are encoded once into a buffer owned by the request and handed to
 * hiredis with redisAsyncFormattedCommand(). Keeping the encoded bytes lets a
 * request be sent again unchanged after a reconnect or a NOSCRIPT reply, and
 * composite arguments (prefix + name + suffix) are written in place instead of
 * being assembled in temporary strings. Every argument carries its length, so
 * user data never meets a format string.
 *
 * The encoding is kept NUL-terminated: hiredis 0.14 walks the arguments of a
 * (UN)SUBSCRIBE with strchr() to learn the channel names. */
#include "resp.h"

#include <stdlib.h>
#include <string.h>

#include "hot.h"

HILOCK_HOT
void resp_reset(struct resp_buf *b)
{
    b->len = 0;
    b->failed = 0;
    b->words = 0;
    b->declared = 0;
}

void resp_free_heap(struct resp_buf *b)
{
    free(b->data);
    b->data = b->inline_data;
    b->cap = b->inline_cap;
}

/* Grow the buffer for n more bytes plus the terminating NUL (reserve); on
 * failure mark it failed. */
HILOCK_COLD
static int grow(struct resp_buf *b, size_t n)
{
    if (b->failed)
        return -1;
    size_t cap = b->cap ? b->cap * 2 : 256;
    while (cap < b->len + n + 1)
        cap *= 2;
    char *p = b->data != b->inline_data ? realloc(b->data, cap) : malloc(cap);
    if (!p) {
        b->failed = RESP_NOMEM;
        return -1;
    }
    if (b->data == b->inline_data && b->len)
        memcpy(p, b->data, b->len);
    b->data = p;
    b->cap = cap;
    return 0;
}

/* Make room for n more bytes plus the terminating NUL: one comparison when
 * the buffer has it, as it nearly always does. -1 when the buffer failed
 * (or fails now). */
static inline int reserve(struct resp_buf *b, size_t n)
{
    if (!b->failed && b->len + n + 1 <= b->cap)
        return 0;
    return grow(b, n);
}

HILOCK_HOT
static void put(struct resp_buf *b, const void *p, size_t n)
{
    if (n && reserve(b, n) == 0) {
        memcpy(b->data + b->len, p, n);
        b->len += n;
        b->data[b->len] = '\0';
    }
}

HILOCK_HOT
size_t resp_u64_str(unsigned long long v, char *out)
{
    if (v < 10) { /* most are lengths and counts */
        out[0] = (char)('0' + v);
        out[1] = '\0';
        return 1;
    }
    if (v < 100) {
        out[0] = (char)('0' + v / 10);
        out[1] = (char)('0' + v % 10);
        out[2] = '\0';
        return 2;
    }
    char tmp[21];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    out[n] = '\0';
    return n;
}

/* Write the line "<c><decimal>\r\n" into out (24 bytes); its length. */
static size_t line(char *out, char c, size_t v)
{
    out[0] = c;
    size_t n = 1 + resp_u64_str(v, out + 1);
    out[n++] = '\r';
    out[n++] = '\n';
    return n;
}

/* Append a "<c><decimal>\r\n" line. */
static void put_line(struct resp_buf *b, char c, size_t v)
{
    char tmp[24];
    put(b, tmp, line(tmp, c, v));
}

HILOCK_HOT
void resp_array(struct resp_buf *b, size_t argc)
{
    put_line(b, '*', argc);
    b->declared += (uint32_t)argc;
}

/* One bulk string: its header, the parts, CRLF, written into room made
 * once for all of it. */
HILOCK_HOT
void resp_arg_parts(struct resp_buf *b, size_t n, const struct resp_part *p)
{
    char head[24];
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += p[i].len;
    size_t h = line(head, '$', total);
    b->words++;
    if (reserve(b, h + total + 2) != 0)
        return;
    char *d = b->data + b->len;
    memcpy(d, head, h);
    d += h;
    for (size_t i = 0; i < n; i++) {
        if (p[i].len)
            memcpy(d, p[i].ptr, p[i].len);
        d += p[i].len;
    }
    d[0] = '\r';
    d[1] = '\n';
    d[2] = '\0';
    b->len += h + total + 2;
}

HILOCK_HOT
void resp_arg(struct resp_buf *b, const void *ptr, size_t len)
{
    struct resp_part part = {ptr, len};
    resp_arg_parts(b, 1, &part);
}

HILOCK_HOT
void resp_arg_u64(struct resp_buf *b, unsigned long long v)
{
    char tmp[21];
    resp_arg(b, tmp, resp_u64_str(v, tmp));
}

void resp_u64_fixed(unsigned long long v, char *out)
{
    for (int i = RESP_U64_WIDTH - 1; i >= 0; i--) {
        out[i] = (char)('0' + v % 10);
        v /= 10;
    }
}

void resp_arg_u64_fixed(struct resp_buf *b, unsigned long long v)
{
    char tmp[RESP_U64_WIDTH];
    resp_u64_fixed(v, tmp);
    resp_arg(b, tmp, sizeof(tmp));
}

void resp_raw(struct resp_buf *b, const void *p, size_t n)
{
    put(b, p, n);
}

void resp_copy(struct resp_buf *dst, const struct resp_buf *src)
{
    resp_reset(dst);
    if (src->failed) {
        dst->failed = 1;
        return;
    }
    put(dst, src->data, src->len);
    dst->words = src->words;
    dst->declared = src->declared;
}
