/* SPDX-License-Identifier: BSD-3-Clause */
/* stats.h -- the client's counters (hilock_client_stats), kept where the
 * events happen.
 *
 * One struct hilock_stats per client, in its engine; the connection layer
 * reaches it through conn_config.stats, so that no lower layer calls up to
 * count. Everything here is a plain increment on the loop's thread: no
 * lock, no allocation. The one cost beyond that is two clock reads per
 * wait (a request's submit time is the read req_submit takes anyway, its
 * reply's one the connection takes per batch of replies). */
#ifndef HILOCK_STATS_H
#define HILOCK_STATS_H

#include <stdint.h>

#include "clock.h"
#include "hilock/hilock.h"

/* The histogram bucket of a value of us microseconds: 0 up to 1 us, i for
 * 2^(i-1) < us <= 2^i, the last one for everything above (hilock.h). */
static inline unsigned stats_bucket(uint64_t us)
{
    unsigned i = 0;
    if (us <= 1)
        return 0;
#if defined(__GNUC__)
    i = 64u - (unsigned)__builtin_clzll(us - 1); /* ceil(log2(us)) */
#else
    for (uint64_t v = us - 1; v; v >>= 1)
        i++;
#endif
    return i < HILOCK_HIST_BUCKETS - 1 ? i : HILOCK_HIST_BUCKETS - 1;
}

/* Count one value of us microseconds in a histogram and its sum. */
static inline void stats_hist_add(uint64_t *hist, uint64_t *sum, uint64_t us)
{
    hist[stats_bucket(us)]++;
    *sum += us;
}

/* A request was submitted (queued for its connection or sent). */
static inline void stats_request_sent(struct hilock_stats *s)
{
    s->requests_inflight++;
}

/* A request submitted at sent_us completed at now_us (sent_us 0: it never
 * was submitted, a request given up while being built). */
static inline void stats_request_done(struct hilock_stats *s,
                                      uint64_t sent_us, uint64_t now_us)
{
    if (!sent_us)
        return;
    s->requests_inflight--;
    stats_hist_add(s->request_us, &s->request_us_sum,
                   now_us > sent_us ? now_us - sent_us : 0);
}

/* An acquire (or, when acquire is 0, a release) reported status to its
 * caller. */
static inline void stats_acquire_end(struct hilock_stats *s, int acquire,
                                     int status)
{
    if (!acquire)
        return;
    s->acquisitions += status == 0;
    s->timeouts += status == HILOCK_ETIMEDOUT;
    s->cancels += status == HILOCK_ECANCELED;
}

/* A waiter was parked in its name's queue; *parked_us remembers when. */
static inline void stats_wait_begin(struct hilock_stats *s,
                                    uint64_t *parked_us)
{
    s->waits++;
    s->waiters_parked++;
    *parked_us = clock_now_us();
}

/* The waiter parked at parked_us left its queue, whatever the outcome. */
static inline void stats_wait_end(struct hilock_stats *s, uint64_t parked_us)
{
    s->waiters_parked--;
    stats_hist_add(s->wait_us, &s->wait_us_sum, clock_now_us() - parked_us);
}

/* A channel's subscription ends; it counted when it was confirmed (state
 * active). */
static inline void stats_unsubscribed(struct hilock_stats *s, int active)
{
    s->subscriptions -= active != 0;
}

#endif
