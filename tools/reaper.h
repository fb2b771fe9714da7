/* SPDX-License-Identifier: BSD-3-Clause */
/* reaper.h -- the process between hilock run and its command: it starts
 * the command, outlives it until every descendant has exited, and kills
 * them all when hilock dies or asks. See reaper.c. */
#ifndef HILOCK_TOOLS_REAPER_H
#define HILOCK_TOOLS_REAPER_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

/* What the command is run with: what hilock itself was started with, as
 * taken by reaper_cmd_init() before hilock opens or changes anything. */
struct reaper_cmd {
    char **argv;        /* the command and its arguments (borrowed) */
    int *fds;           /* descriptors above stderr hilock was given, sorted */
    size_t nfds;
    sigset_t mask;      /* the signal mask (run.c unblocks what it uses) */
    sigset_t ignored;   /* signals that were ignored (SIGCHLD never is) */
    pid_t pgid;         /* the process group the command joins: hilock's */
};

/* The reaper as hilock sees it. */
struct reaper {
    pid_t pid;    /* 0: not running */
    int ctl;      /* write end of the orders pipe; -1 when closed */
    int report;   /* read end of the report pipe; -1 when closed */
};

/* An order: a signal number alone goes to the command (to every remaining
 * descendant once the command has exited); with REAPER_TREE it goes to
 * every descendant at once. REAPER_TREE | SIGKILL also makes the reaper
 * kill whatever it finds from then on, until nothing is left. */
#define REAPER_TREE 0x80

/* Take down hilock's descriptors, signal mask and ignored signals into c;
 * argv stays NULL. 0, or -1 with a message on stderr (no /proc/self/fd, or
 * out of memory). Free with reaper_cmd_free(). */
int reaper_cmd_init(struct reaper_cmd *c);
void reaper_cmd_free(struct reaper_cmd *c);

/* Fork the reaper, which starts c->argv. Call with every signal blocked, so
 * that no handler of hilock's runs in the child. 0 with *r filled, or -1
 * with a message (then nothing was started). */
int reaper_start(const struct reaper_cmd *c, struct reaper *r);

/* Send an order (see REAPER_TREE). Lost when the reaper has exited. */
void reaper_order(struct reaper *r, int order);

/* Read the reaper's report, which it writes when the command and all its
 * descendants have exited, and reap the reaper; blocks until then. 0 with
 * the command's wait status in *status, or -1 when the reaper died without
 * a report (killed). */
int reaper_wait(struct reaper *r, int *status);

/* Close both pipes. A reaper still running takes that as hilock's death:
 * it kills every descendant and exits. */
void reaper_close(struct reaper *r);

#endif
