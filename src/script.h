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
    SCRIPT_QUERY,
    SCRIPT_GUARDED,
    SCRIPT_COUNT
};

/* Kinds refuse each other's keys (Redisson's layouts): a hash without a
 * "mode" field is a lock, one with it a read-write lock, a number a
 * semaphore. other_kind(k, mine) is nil when key k is free or of kind
 * mine, else the error reply "WRONGKIND <kind found>" (HILOCK_EWRONGKIND;
 * the kind as "lock", "rwlock" or "semaphore"); a key of no lock kind (a
 * list, a string that is no number) is nil too, left to the command that
 * meets it (WRONGTYPE). Scripts call it where a key is not what they
 * expect, not on their common path. */
#define KIND_LUA                                                              \
    "local function other_kind(k, mine)\n"                                    \
    "  local t, found = redis.call('type', k).ok, nil\n"                      \
    "  if t == 'hash' then\n"                                                 \
    "    found = redis.call('hexists', k, 'mode') == 1 and 'rwlock' or 'lock'\n" \
    "  elseif t == 'string' and\n"                                            \
    "         string.find(redis.call('get', k), '^%-?%d+$') then\n"           \
    "    found = 'semaphore'\n"                                               \
    "  end\n"                                                                 \
    "  if not found or found == mine then return nil end\n"                   \
    "  return redis.error_reply('WRONGKIND ' .. found)\n"                     \
    "end\n"

/* may_publish(cmd, chan) is nil when this user may send cmd (PUBLISH or
 * SPUBLISH) to channel chan, else the error reply "NOPERM ..."
 * (HILOCK_ENOPERM). Redis does not undo what a script wrote before one of
 * its commands was refused, so a release that publishes asks first,
 * before its first write. Redis 6 has no such check (nil there); its
 * releases publish before they delete, which covers the common case. */
#define MAY_PUBLISH_LUA                                                       \
    "local function may_publish(cmd, chan)\n"                                 \
    "  if redis.acl_check_cmd and not redis.acl_check_cmd(cmd, chan, '0') then\n" \
    "    return redis.error_reply('NOPERM the user may not ' .. cmd ..\n"      \
    "                             ' to the release channel')\n"               \
    "  end\n"                                                                 \
    "end\n"

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
/* The guarded command script (script_guard.c). */
extern const char script_guarded_lua[];

void script_set_init(struct script_set *s);
/* The body of a script, NUL-terminated; its length in *len. */
const char *script_body(enum script_id id, size_t *len);

#endif
