/* SPDX-License-Identifier: BSD-3-Clause */
/* reentry.h -- freeing the client from inside its own callbacks.
 *
 * Every loop callback that enters the library (a reply, a timer) brackets
 * its work with reentry_enter/reentry_leave. A free requested while any such
 * callback runs only marks the guard; the outermost reentry_leave then runs
 * the teardown it was given, so no code still on the stack touches freed
 * memory. The teardown is the client's, handed down at init: the layers
 * below never call the client. */
#ifndef HILOCK_REENTRY_H
#define HILOCK_REENTRY_H

struct reentry {
    int depth;    /* nesting of loop callbacks into the library */
    int closing;  /* a free was requested */
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
    return --g->depth == 0 && g->closing ? reentry_run(g) : 0;
}
/* Ask for the teardown: now when no callback runs, else at the outermost
 * leave. Returns nonzero when it ran now. */
int reentry_close(struct reentry *g);

#endif
