/* SPDX-License-Identifier: BSD-3-Clause */
/* slot.c -- see slot.h. */
#include "slot.h"

#include <string.h>

#include "hot.h"

/* The byte at index i of a + b. */
static char at2(const char *a, size_t alen, const char *b, size_t i)
{
    return i < alen ? a[i] : b[i - alen];
}

/* Extend crc by bytes [from, to) of a + b. */
static uint16_t crc_range(const char *a, size_t alen, const char *b,
                          size_t from, size_t to)
{
    uint16_t crc = 0;
    for (size_t i = from; i < to; i++) {
        crc ^= (uint16_t)((unsigned char)at2(a, alen, b, i) << 8);
        for (int k = 0; k < 8; k++)
            crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return crc;
}

/* Bounds [*from, *to) of the hash tag's text in a + b; 0 when there is
 * none. */
static int tag_of(const char *a, size_t alen, const char *b, size_t blen,
                  size_t *from, size_t *to)
{
    size_t n = alen + blen, open = 0;
    while (open < n && at2(a, alen, b, open) != '{')
        open++;
    if (open == n)
        return 0;
    size_t close = open + 1;
    while (close < n && at2(a, alen, b, close) != '}')
        close++;
    if (close == n || close == open + 1)
        return 0;
    *from = open + 1;
    *to = close;
    return 1;
}

uint16_t slot_crc16(const char *s, size_t len)
{
    return crc_range(s, len, "", 0, len);
}

unsigned slot_of2(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t from = 0, to = alen + blen;
    tag_of(a, alen, b, blen, &from, &to);
    return crc_range(a, alen, b, from, to) & (SLOT_COUNT - 1);
}

HILOCK_HOT
int slot_has_tag(const char *s, size_t len)
{
    size_t from, to;
    return tag_of(s, len, "", 0, &from, &to);
}
