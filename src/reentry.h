/* SPDX-License-Identifier: BSD-3-Clause */
/* reentry.h -- freeing the client from inside its own callbacks.
 *
 * Every loop callback that enters the library (a reply, a timer) brackets
 * its work with reentry_enter/reentry_leave. A free requested while any such
 * callback runs only marks the guard; the outermost reentry_leave then runs
 * the teardown it was given, so no code still on the stack touches freed
 * memory. The teardown is the client's, handed down at init: the layers
 * below never call the client. The bracket also carries the time of the
 * replies being handled, for the requests their callbacks send. */
#ifndef HILOCK_REENTRY_H
#define HILOCK_REENTRY_H

#include <stdint.h>

#include "clock.h"

struct reentry {
    int depth;    /* nesting of loop callbacks into the library */
    int closing;  /* a free was requested */
    uint64_t now_us; /* the time of the replies being handled (0: none) */
    void (*teardown)(void *arg);
    void *arg;
};

void reentry_init(struct reentry *g, void (*teardown)(void *arg), void *arg);
/* Run the teardown asked for (the outermost leave does). Returns 1. */
int reentry_run(struct reentry *g);

/* Every reply and timer brackets its work with these two: inline. */
static inline void reentry_enter(struct reentry *g)
{
    g->depth++;
}

/* Returns nonzero when it ran the teardown: the caller must touch nothing
 * of the client afterwards. */
static inline int reentry_leave(struct reentry *g)
{
    if (--g->depth > 0)
        return 0;
    g->now_us = 0;
    return g->closing ? reentry_run(g) : 0;
}

/* The monotonic clock in microseconds for a call that sends a request. In
 * a reply's callback (conn.c sets now_us) it is the time read when that
 * reply's batch was taken in, one read per batch instead of one per call;
 * else the clock now. It is never later than the clock, and earlier by at
 * most the time the batch has taken so far: a lease counted from it ends
 * no later than the one Redis keeps, and a deadline counted from it comes
 * that much early at most, as a libevent timer added in a callback does
 * (libevent counts from the time it read before running callbacks). */
static inline uint64_t reentry_now_us(const struct reentry *g)
{
    return g->now_us ? g->now_us : clock_now_us();
}
/* Ask for the teardown: now when no callback runs, else at the outermost
 * leave. Returns nonzero when it ran now. */
int reentry_close(struct reentry *g);

#endif
