/* SPDX-License-Identifier: BSD-3-Clause */
/* clock.h -- the one clock of the library: monotonic milliseconds, and the
 * conversion to the struct timeval that libevent timers take. */
#ifndef HILOCK_CLOCK_H
#define HILOCK_CLOCK_H

#include <stdint.h>
#include <sys/time.h>
#include <time.h>

/* Milliseconds on CLOCK_MONOTONIC (never steps with the wall clock).
 * Inline, as the next one: every lock and release reads the clock. */
static inline uint64_t clock_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Microseconds on CLOCK_MONOTONIC. */
static inline uint64_t clock_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ms as a relative timeout for evtimer_add(). */
struct timeval clock_tv(uint64_t ms);

#endif
