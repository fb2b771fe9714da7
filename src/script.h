/* SPDX-License-Identifier: BSD-3-Clause */
/* script.h -- the Lua scripts hilock runs, and their digests. */
#ifndef HILOCK_SCRIPT_H
#define HILOCK_SCRIPT_H

#include <stddef.h>

enum script_id {
    SCRIPT_ACQUIRE = 0,
    SCRIPT_RELEASE,
    SCRIPT_RENEW,
    SCRIPT_FENCE,
    SCRIPT_MULTI_ACQUIRE,
    SCRIPT_MULTI_RELEASE,
    SCRIPT_FAIR_ACQUIRE,
    SCRIPT_FAIR_RELEASE,
    SCRIPT_FAIR_LEAVE,
    SCRIPT_READ_ACQUIRE,
    SCRIPT_WRITE_ACQUIRE,
    SCRIPT_READ_RELEASE,
    SCRIPT_WRITE_RELEASE,
    SCRIPT_WRITE_LEAVE,
    SCRIPT_SEM_ACQUIRE,
    SCRIPT_SEM_RELEASE,
    SCRIPT_PERMIT_ACQUIRE,
    SCRIPT_PERMIT_RELEASE,
    SCRIPT_SEM_INIT,
    SCRIPT_SEM_AVAILABLE,
    SCRIPT_UNDO,
    SCRIPT_COUNT
};

/* Digests of the scripts, computed once per client. */
struct script_set {
    char sha[SCRIPT_COUNT][41];
};

/* The bodies of the read-write lock scripts (script_rw.c) and of the
 * semaphore scripts (script_sem.c). */
extern const char script_read_acquire_lua[];
extern const char script_write_acquire_lua[];
extern const char script_read_release_lua[];
extern const char script_write_release_lua[];
extern const char script_write_leave_lua[];
extern const char script_sem_acquire_lua[];
extern const char script_sem_release_lua[];
extern const char script_permit_acquire_lua[];
extern const char script_permit_release_lua[];
extern const char script_sem_init_lua[];
extern const char script_sem_available_lua[];

void script_set_init(struct script_set *s);
/* The body of a script, NUL-terminated; its length in *len. */
const char *script_body(enum script_id id, size_t *len);

#endif
