/* SPDX-License-Identifier: BSD-3-Clause */
/* reply_guard.h -- keep a misbehaving Redis peer from crashing the process. */
#ifndef HILOCK_REPLY_GUARD_H
#define HILOCK_REPLY_GUARD_H

struct redisAsyncContext;

/* Put checks in front of ac's reply parser (see reply_guard.c): a reply that
 * hiredis would abort or crash on, or that would make it allocate far more
 * than it received, is refused before hiredis builds it. A refused reply
 * fails the reader; hiredis then drops the connection as after a read error,
 * so every pending callback runs once with a NULL reply.
 * Call right after the context is created, before any byte is read.
 * sharded: the context subscribes with SSUBSCRIBE under hiredis's name
 * SUBSCRIBE, and its sharded pub/sub replies are renamed to the plain ones.
 * Returns 0, or HILOCK_EINVAL (nothing changed) when ac's reader does not
 * build replies with hiredis's own functions. */
int guard_attach(struct redisAsyncContext *ac, int sharded);

#endif
