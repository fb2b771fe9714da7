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
    SCRIPT_COUNT
};

/* Digests of the scripts, computed once per client. */
struct script_set {
    char sha[SCRIPT_COUNT][41];
};

void script_set_init(struct script_set *s);
/* The body of a script, NUL-terminated; its length in *len. */
const char *script_body(enum script_id id, size_t *len);

#endif
