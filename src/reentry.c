/* SPDX-License-Identifier: BSD-3-Clause */
/* reentry.c -- see reentry.h. */
#include "reentry.h"

#include "hot.h"

void reentry_init(struct reentry *g, void (*teardown)(void *arg), void *arg)
{
    g->depth = 0;
    g->closing = 0;
    g->now_us = 0;
    g->teardown = teardown;
    g->arg = arg;
}

HILOCK_COLD
int reentry_run(struct reentry *g)
{
    g->depth = 1; /* what the teardown fires must not re-enter it */
    g->teardown(g->arg);
    return 1;
}

int reentry_close(struct reentry *g)
{
    if (g->closing)
        return 0;
    g->closing = 1;
    if (g->depth > 0)
        return 0;
    return reentry_run(g);
}
