/* SPDX-License-Identifier: BSD-3-Clause */
/* adapter.h -- hiredis's event hooks on a libevent loop, for a context
 * whose owner writes each batch of commands itself.
 *
 * hiredis asks its adapter to poll the socket writable each time it takes
 * a command and to stop once the buffer is out; hiredis's own libevent
 * adapter also re-arms a one-shot read event after every read. Each of
 * those is a change of the poll set, a system call, per batch. Here the
 * read event stays armed, and a wish to write first asks the owner
 * (write_soon): an owner that will call adapter_write_now in this pass of
 * the loop takes it, and only what that write could not send (a full
 * socket), or a write wished while connecting, waits for the poll. */
#ifndef HILOCK_ADAPTER_H
#define HILOCK_ADAPTER_H

#include <hiredis/async.h>

struct event_base;

/* Whether the owner will call adapter_write_now(ac) in this pass: 1, or 0
 * for the poll. arg is attach's. */
typedef int adapter_write_soon_fn(redisAsyncContext *ac, void *arg);

/* Hook ac to base, with write_soon asked before each poll for writing.
 * 0, or -1 (no memory, or ac has an adapter already). */
int adapter_attach(redisAsyncContext *ac, struct event_base *base,
                   adapter_write_soon_fn *write_soon, void *arg);
/* Write what hiredis holds for ac now (as a writable socket would); what
 * the socket does not take waits for the poll. May free ac, as hiredis's
 * own handlers may. */
void adapter_write_now(redisAsyncContext *ac);

#endif
