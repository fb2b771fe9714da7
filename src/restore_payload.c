/* SPDX-License-Identifier: BSD-3-Clause */
/* restore_payload.c -- see restore_payload.h. */
#include "restore_payload.h"

#include <string.h>

#include "hot.h"

/* The CRC is linear: the table entry of a byte is the XOR of the entries
 * of its set bits, so eight constants (each bit's, through the reflected
 * polynomial) build a whole table at compile time. Table k holds what a
 * byte contributes k bytes before the end of an 8-byte word, so a word is
 * folded in with eight independent lookups (slicing by 8) rather than a
 * chain of eight: RESTORE's payload, some 120 bytes, is checksummed on
 * every plain acquire. */
#define CRC_BIT(i, b, v) (((i) >> (b) & 1) ? (v) : 0)
#define CRC_BYTE(i, c0, c1, c2, c3, c4, c5, c6, c7)                          \
    (CRC_BIT(i, 0, c0) ^ CRC_BIT(i, 1, c1) ^ CRC_BIT(i, 2, c2) ^              \
     CRC_BIT(i, 3, c3) ^ CRC_BIT(i, 4, c4) ^ CRC_BIT(i, 5, c5) ^              \
     CRC_BIT(i, 6, c6) ^ CRC_BIT(i, 7, c7))
#define CRC_4(i, ...)                                                       \
    CRC_BYTE(i, __VA_ARGS__), CRC_BYTE(i + 1, __VA_ARGS__),                 \
        CRC_BYTE(i + 2, __VA_ARGS__), CRC_BYTE(i + 3, __VA_ARGS__)
#define CRC_16(i, ...)                                                      \
    CRC_4(i, __VA_ARGS__), CRC_4(i + 4, __VA_ARGS__),                       \
        CRC_4(i + 8, __VA_ARGS__), CRC_4(i + 12, __VA_ARGS__)
#define CRC_64(i, ...)                                                      \
    CRC_16(i, __VA_ARGS__), CRC_16(i + 16, __VA_ARGS__),                    \
        CRC_16(i + 32, __VA_ARGS__), CRC_16(i + 48, __VA_ARGS__)
#define CRC_TABLE(...)                                                      \
    {CRC_64(0, __VA_ARGS__), CRC_64(64, __VA_ARGS__),                       \
     CRC_64(128, __VA_ARGS__), CRC_64(192, __VA_ARGS__)}

/* Each bit's entry in table k: table k - 1's, through one more zero byte. */
#define CRC_BITS_0                                                          \
    0x7ad870c830358979ULL, 0xf5b0e190606b12f2ULL, 0xc038e5739841b68fULL,    \
        0xab28ecb46814fe75ULL, 0x7d08ff3b88be6f81ULL, 0xfa11fe77117cdf02ULL, \
        0xdf7adabd7a6e2d6fULL, 0x95ac9329ac4bc9b5ULL
#define CRC_BITS_1                                                          \
    0x89e99ffd73bddf69ULL, 0x388a19a9bfec2db9ULL, 0x711433537fd85b72ULL,    \
        0xe22866a6ffb0b6e4ULL, 0xef09eb1ea7f6fea3ULL, 0xf54af06e177a6e2dULL, \
        0xc1ccc68f76634f31ULL, 0xa8c0ab4db4510d09ULL
#define CRC_BITS_2                                                          \
    0xf4125129ce4038beULL, 0xc37d8400c417e217ULL, 0xada22e52d0b85745ULL,    \
        0x701d7af6f9e73de1ULL, 0xe03af5edf3ce7bc2ULL, 0xeb2ccd88bf0b64efULL, \
        0xfd00bd4226815ab5ULL, 0xd1585cd715952601ULL
#define CRC_BITS_3                                                          \
    0x8ce168638c796306ULL, 0x329bf69440655567ULL, 0x6537ed2880caaaceULL,    \
        0xca6fda510195559cULL, 0xbf8692f15bbd3853ULL, 0x545403b1efede3cdULL, \
        0xa8a80763dfdbc79aULL, 0x7a092894e7201c5fULL
#define CRC_BITS_4                                                          \
    0x3504e58b9ba6dd1eULL, 0x6a09cb17374dba3cULL, 0xd413962e6e9b7478ULL,    \
        0x837e0a0f85a17b9bULL, 0x2da5324c53d5645dULL, 0x5b4a6498a7aac8baULL, \
        0xb694c9314f559174ULL, 0x4670b431c63cb183ULL
#define CRC_BITS_5                                                          \
    0xe39d1389931b9354ULL, 0xec6301407ea0b5c3ULL, 0xf39f24d3a5d6f8edULL,    \
        0xcc676ff4133a62b1ULL, 0xb397f9bb7ee35609ULL, 0x4c76d525a5513f79ULL, \
        0x98edaa4b4aa27ef2ULL, 0x1a8272c5cdd36e8fULL
#define CRC_BITS_6                                                          \
    0x62a95de6e302eff2ULL, 0xc552bbcdc605dfe4ULL, 0xa1fc51c8d49c2ca3ULL,    \
        0x68a185c2f1afca2dULL, 0xd1430b85e35f945aULL, 0x89df31589e28bbdfULL, \
        0x38e744e264c6e4d5ULL, 0x71ce89c4c98dc9aaULL
#define CRC_BITS_7                                                          \
    0x381d0015c96f4444ULL, 0x703a002b92de8888ULL, 0xe074005725bd1110ULL,    \
        0xebb126fd13edb14bULL, 0xfc3b6ba97f4cf1fdULL, 0xd32ff101a60e7091ULL, \
        0x8d06c450148b7249ULL, 0x3154aef3718177f9ULL

static const uint64_t crc_table[8][256] = {
    CRC_TABLE(CRC_BITS_0), CRC_TABLE(CRC_BITS_1), CRC_TABLE(CRC_BITS_2),
    CRC_TABLE(CRC_BITS_3), CRC_TABLE(CRC_BITS_4), CRC_TABLE(CRC_BITS_5),
    CRC_TABLE(CRC_BITS_6), CRC_TABLE(CRC_BITS_7)};

/* The 8 bytes at p as a little-endian word, whatever the host's order. */
static inline uint64_t le64(const unsigned char *p)
{
    uint64_t w = 0;
    for (int i = 7; i >= 0; i--)
        w = w << 8 | p[i];
    return w;
}

HILOCK_HOT
uint64_t restore_payload_crc64(uint64_t crc, const unsigned char *p, size_t n)
{
    const uint64_t(*t)[256] = crc_table;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w = crc ^ le64(p);
        crc = t[7][w & 0xff] ^ t[6][w >> 8 & 0xff] ^ t[5][w >> 16 & 0xff] ^
              t[4][w >> 24 & 0xff] ^ t[3][w >> 32 & 0xff] ^
              t[2][w >> 40 & 0xff] ^ t[1][w >> 48 & 0xff] ^ t[0][w >> 56];
    }
    for (; n > 0; p++, n--)
        crc = t[0][(crc ^ *p) & 0xff] ^ (crc >> 8);
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
