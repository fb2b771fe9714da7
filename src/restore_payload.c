/* SPDX-License-Identifier: BSD-3-Clause */
/* restore_payload.c -- see restore_payload.h. */
#include "restore_payload.h"

#include <string.h>

#include "hot.h"

/* The CRC is linear: the table entry of a byte is the XOR of the entries
 * of its set bits, so eight constants (each bit's, through the reflected
 * polynomial) build the whole table at compile time. */
#define CRC_BIT(i, b, v) (((i) >> (b) & 1) ? (v) : 0)
#define CRC_BYTE(i)                                                         \
    (CRC_BIT(i, 0, 0x7ad870c830358979ULL) ^                                 \
     CRC_BIT(i, 1, 0xf5b0e190606b12f2ULL) ^                                 \
     CRC_BIT(i, 2, 0xc038e5739841b68fULL) ^                                 \
     CRC_BIT(i, 3, 0xab28ecb46814fe75ULL) ^                                 \
     CRC_BIT(i, 4, 0x7d08ff3b88be6f81ULL) ^                                 \
     CRC_BIT(i, 5, 0xfa11fe77117cdf02ULL) ^                                 \
     CRC_BIT(i, 6, 0xdf7adabd7a6e2d6fULL) ^                                 \
     CRC_BIT(i, 7, 0x95ac9329ac4bc9b5ULL))
#define CRC_4(i) CRC_BYTE(i), CRC_BYTE(i + 1), CRC_BYTE(i + 2), CRC_BYTE(i + 3)
#define CRC_16(i) CRC_4(i), CRC_4(i + 4), CRC_4(i + 8), CRC_4(i + 12)
#define CRC_64(i) CRC_16(i), CRC_16(i + 16), CRC_16(i + 32), CRC_16(i + 48)

static const uint64_t crc_table[256] = {CRC_64(0), CRC_64(64), CRC_64(128),
                                        CRC_64(192)};

uint64_t restore_payload_crc64(uint64_t crc, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return crc;
}

#define RDB_TYPE_HASH 4
#define RDB_VERSION 6

/* Append an RDB length (one byte below 64, else two) at out[*at]; 0 when
 * it does not fit in cap. */
static int put_len(unsigned char *out, size_t cap, size_t *at, size_t len)
{
    if (len > DUMP_STRING_MAX || *at + 2 > cap)
        return 0;
    if (len < 64) {
        out[(*at)++] = (unsigned char)len;
    } else {
        out[(*at)++] = (unsigned char)(0x40 | (len >> 8));
        out[(*at)++] = (unsigned char)(len & 0xff);
    }
    return 1;
}

HILOCK_HOT
size_t restore_payload_hash(const struct resp_part *s, size_t n, unsigned char *out,
                 size_t cap)
{
    size_t at = 0;
    if (cap < 1)
        return 0;
    out[at++] = RDB_TYPE_HASH;
    if (!put_len(out, cap, &at, n))
        return 0;
    for (size_t i = 0; i < 2 * n; i++) {
        if (!put_len(out, cap, &at, s[i].len) || at + s[i].len > cap)
            return 0;
        memcpy(out + at, s[i].ptr, s[i].len);
        at += s[i].len;
    }
    if (at + 10 > cap)
        return 0;
    out[at++] = RDB_VERSION & 0xff;
    out[at++] = RDB_VERSION >> 8;
    uint64_t crc = restore_payload_crc64(0, out, at);
    for (int i = 0; i < 8; i++)
        out[at++] = (unsigned char)(crc >> (8 * i));
    return at;
}
