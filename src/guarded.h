/* SPDX-License-Identifier: BSD-3-Clause */
/* guarded.h -- guarded commands: a caller's Redis commands run by one
 * script only while a handle still holds its lock (hilock_lock_guarded in
 * the public header; the script is src/lua/guarded.lua). */
#ifndef HILOCK_GUARDED_H
#define HILOCK_GUARDED_H

#include <stddef.h>

#include "hilock/hilock.h"
#include "resp.h"
#include "wire.h"

/* Encode the EVALSHA of the guarded script (sha) for lock l, whose kind
 * says how its hold is checked (l->kind: guard_key, holder): the fencing
 * token to require (0: none), keep_ms for the request ids it writes, the
 * commands, and request id rid last (wire_rid can change it). */
void guarded_encode(struct resp_buf *b, const char *sha,
                    const struct wire_lock *l, int64_t token,
                    uint32_t keep_ms, const struct hilock_guarded_cmd *cmds,
                    size_t ncmds, uint64_t rid);

#endif
