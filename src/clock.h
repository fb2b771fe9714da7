/* SPDX-License-Identifier: BSD-3-Clause */
/* clock.h -- the one clock of the library: monotonic milliseconds, and the
 * conversion to the struct timeval that libevent timers take. */
#ifndef HILOCK_CLOCK_H
#define HILOCK_CLOCK_H

#include <stdint.h>
#include <sys/time.h>

/* Milliseconds on CLOCK_MONOTONIC (never steps with the wall clock). */
uint64_t clock_now_ms(void);

/* Microseconds on CLOCK_MONOTONIC. */
uint64_t clock_now_us(void);

/* ms as a relative timeout for evtimer_add(). */
struct timeval clock_tv(uint64_t ms);

#endif
