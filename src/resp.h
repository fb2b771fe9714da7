/* SPDX-License-Identifier: BSD-3-Clause */
/* resp.h -- encode Redis commands (RESP arrays of bulk strings). */
#ifndef HILOCK_RESP_H
#define HILOCK_RESP_H

#include <stddef.h>
#include <stdint.h>

/* A growable output buffer, always NUL-terminated after len. Starts on
 * caller-provided inline storage and moves to the heap only when a command
 * does not fit. */
struct resp_buf {
    char *data;
    size_t len;
    size_t cap;
    char *inline_data; /* storage that must not be freed */
    size_t inline_cap;
    int failed;        /* nonzero: the content is unusable (RESP_*) */
    /* Counted as they are appended, so that a command's shape is checked
     * without parsing it (wire_check): the bulk strings written by
     * resp_arg*, and the sum of the counts of the array headers. Bytes
     * appended by resp_raw are the caller's to count. */
    uint32_t words;
    uint32_t declared;
};

/* One piece of an argument; an argument may be several pieces joined. */
struct resp_part {
    const void *ptr;
    size_t len;
};

/* Why a buffer failed: an allocation failed; the command it holds broke
 * its script's contract (wire.h). */
#define RESP_NOMEM 1
#define RESP_BROKEN 2

/* Whether b's array headers count the bulk strings it holds (or b failed,
 * which says more): what every encoder must leave. */
static inline int resp_counted(const struct resp_buf *b)
{
    return b->failed || b->words == b->declared;
}

/* Start b empty on inline_data (inline: every request does). */
static inline void resp_init(struct resp_buf *b, char *inline_data,
                             size_t inline_cap)
{
    *b = (struct resp_buf){.data = inline_data,
                           .cap = inline_cap,
                           .inline_data = inline_data,
                           .inline_cap = inline_cap};
}
/* Forget the content, keep the storage for the next command. */
void resp_reset(struct resp_buf *b);
/* Release heap storage, if any (a command that did not fit inline). */
void resp_free_heap(struct resp_buf *b);
/* Release heap storage, if any; b is empty on its inline storage after. */
static inline void resp_free(struct resp_buf *b)
{
    if (b->data != b->inline_data)
        resp_free_heap(b);
    b->len = 0;
    b->words = 0;
    b->declared = 0;
}

/* Append the array header for argc arguments. */
void resp_array(struct resp_buf *b, size_t argc);
/* Append one bulk string made of n parts joined. */
void resp_arg_parts(struct resp_buf *b, size_t n, const struct resp_part *p);
/* Append one bulk string. */
void resp_arg(struct resp_buf *b, const void *ptr, size_t len);
/* Append one bulk string holding the decimal form of v. */
void resp_arg_u64(struct resp_buf *b, unsigned long long v);

/* Append n bytes that are RESP already (a part of another command); the
 * counts (words, declared) are left as they were. */
void resp_raw(struct resp_buf *b, const void *p, size_t n);
/* Make dst a copy of src's content (failed and the counts too). */
void resp_copy(struct resp_buf *dst, const struct resp_buf *src);
/* Append one bulk string holding v as RESP_U64_WIDTH decimal digits with
 * leading zeros, so that it can be rewritten in place (resp_u64_fixed). */
#define RESP_U64_WIDTH 20
void resp_arg_u64_fixed(struct resp_buf *b, unsigned long long v);
/* Write v as RESP_U64_WIDTH digits with leading zeros to out (no NUL). */
void resp_u64_fixed(unsigned long long v, char *out);

/* Decimal form of v into out (>= 21 bytes); returns its length. */
size_t resp_u64_str(unsigned long long v, char *out);

#endif
