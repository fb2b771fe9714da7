/* SPDX-License-Identifier: BSD-3-Clause */
/* reentry.c -- see reentry.h. */
#include "reentry.h"

#include "hot.h"

void reentry_init(struct reentry *g, void (*teardown)(void *arg), void *arg)
{
    g->depth = 0;
    g->closing = 0;
    g->teardown = teardown;
    g->arg = arg;
}

HILOCK_HOT
void reentry_enter(struct reentry *g)
{
    g->depth++;
}

HILOCK_HOT
int reentry_leave(struct reentry *g)
{
    if (--g->depth == 0 && g->closing) {
        g->depth = 1; /* what the teardown fires must not re-enter it */
        g->teardown(g->arg);
        return 1;
    }
    return 0;
}

int reentry_close(struct reentry *g)
{
    if (g->closing)
        return 0;
    g->closing = 1;
    if (g->depth > 0)
        return 0;
    g->depth = 1;
    g->teardown(g->arg);
    return 1;
}
