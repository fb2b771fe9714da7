/* SPDX-License-Identifier: BSD-3-Clause */
/* progress.c -- the one-line progress display on a terminal.
 *
 * Only the parent process draws it, only when stdout is a terminal, and only
 * for runs planned to last more than a few seconds; it is erased before any
 * result is printed, so redirected output never contains it. */
#include "bench.h"

#include <unistd.h>

#define PROGRESS_MIN_S 3.0
#define PROGRESS_EVERY_NS 200000000

void progress_begin(struct bench *b, double planned_s)
{
    struct progress *p = &b->progress;
    p->enabled = !b->o.no_progress && isatty(1) && planned_s > PROGRESS_MIN_S;
    p->start_ns = now_ns();
    p->last_ns = 0;
}

void progress_show(struct bench *b, const char *fmt, ...)
{
    struct progress *p = &b->progress;
    int64_t now = now_ns();
    va_list ap;
    if (!p->enabled || now - p->last_ns < PROGRESS_EVERY_NS)
        return;
    p->last_ns = now;
    printf("\r  [%5.1f s] ", (double)(now - p->start_ns) / 1e9);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\033[K");
    fflush(stdout);
    p->shown = 1;
}

void progress_end(struct bench *b)
{
    struct progress *p = &b->progress;
    if (p->shown) {
        printf("\r\033[K");
        fflush(stdout);
    }
    p->shown = 0;
    p->enabled = 0;
}
