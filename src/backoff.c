/* SPDX-License-Identifier: BSD-3-Clause */
/* backoff.c -- see backoff.h. */
#include "backoff.h"

uint32_t backoff_delay_ms(uint32_t min_ms, uint32_t max_ms, unsigned attempt,
                          uint64_t *seed)
{
    uint64_t d = min_ms ? min_ms : 1;
    for (unsigned i = 0; i < attempt && d < max_ms; i++)
        d *= 2;
    if (d > max_ms)
        d = max_ms;
    uint64_t x = *seed ? *seed : 0x9e3779b97f4a7c15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *seed = x;
    uint64_t half = d / 2;
    return (uint32_t)(d - half + (half ? x % (half + 1) : 0));
}
