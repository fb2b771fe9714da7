/* SPDX-License-Identifier: BSD-3-Clause */
/* query.h -- questions about a lock whose answer is one integer: does the
 * owner hold it, how many holds, the lease left; a semaphore's permits
 * (semaphore.c). The hilock_lock_query_* calls live in query.c. */
#ifndef HILOCK_QUERY_H
#define HILOCK_QUERY_H

#include "handle.h"

/* A query about lock whose reply (an integer) goes to cb as the result's
 * field: the caller encodes the command into fanout_cmd() and submits it.
 * NULL with *rc set (HILOCK_EINVAL, HILOCK_ECANCELED, HILOCK_ENOMEM). */
struct fanout *query_new(struct hilock_lock *lock, enum op_kind kind,
                         struct user_cb cb, enum cb_field field, int *rc);

#endif
