/* SPDX-License-Identifier: BSD-3-Clause */
/* backoff.h -- reconnect delays: exponential growth with jitter. */
#ifndef HILOCK_BACKOFF_H
#define HILOCK_BACKOFF_H

#include <stdint.h>

/* The delay before reconnect attempt number attempt (0 = first), in ms:
 * min_ms doubled per attempt, capped at max_ms, then drawn uniformly from its
 * upper half with *seed (xorshift state, nonzero), so clients that lost the
 * same server do not come back in step. */
uint32_t backoff_delay_ms(uint32_t min_ms, uint32_t max_ms, unsigned attempt,
                          uint64_t *seed);

#endif
