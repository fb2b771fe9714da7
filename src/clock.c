/* SPDX-License-Identifier: BSD-3-Clause */
/* clock.c -- see clock.h. */
#include "clock.h"

#include <time.h>

struct timeval clock_tv(uint64_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    return tv;
}
