/* SPDX-License-Identifier: BSD-3-Clause */
/* wire_sem.c -- the commands of semaphores, counting and with expiring
 * permits (see wire.h; the scripts' arguments are listed in the contracts
 * of src/lua/), and how the shared scripts see an expiring permit. */
#include <string.h>

#include "wire.h"

/* The permits' sorted set. */
static void permit_set(struct resp_buf *b, const struct wire_lock *l)
{
    struct key_src k = wire_key(l);
    keys_tagged(b, &k, KEYS_SUFFIX_HEAD, KEYS_PERMITS_TAIL);
}

/* The permit's id. */
static void permit_id(struct resp_buf *b, const struct wire_lock *l)
{
    resp_arg(b, (const char *)l->member, sizeof(l->member));
}

/* In a renew call: the sorted set, then the permit. */
static void permit_renew_args(struct resp_buf *b, const struct wire_lock *l)
{
    permit_set(b, l);
    permit_id(b, l);
}

/* An expiring permit as the shared scripts see it. A counting semaphore's
 * permits are no one's: never renewed, queried nor guarded, they have no
 * struct wire_kind. */
const struct wire_kind wire_kind_permit = {
    .type = 'p',
    .renew_size = 3,
    .renew_nkeys = 1,
    .renew_keys = permit_set,
    .renew_args = permit_renew_args,
    .guard_key = permit_set,
    .holder = permit_id,
};

/* The scripts here read their companion keys' names from ARGV; each of
 * them is declared too, after the lock key (KEYS[2..]), so that a cluster
 * routes and checks it with the lock during a slot migration. */

/* What both counting semaphore scripts start with: the counter, permits,
 * where the request ids are kept, the handle they are kept for (the first
 * 12 bytes of its member: the client's permit prefix and the handle's
 * number), and how long; script id takes nargs arguments in all. */
static void sem_head(struct resp_buf *b, enum script_id id, const char *sha,
                     size_t nargs,
                     const struct wire_lock *l, uint32_t permits,
                     uint32_t rid_ttl_ms)
{
    struct key_src k = wire_key(l);
    wire_evalsha(b, id, sha, 2, nargs);
    keys_lock(b, &k);
    keys_tagged(b, &k, KEYS_RID_HEAD, KEYS_TAG_TAIL);
    resp_arg_u64(b, permits);
    keys_tagged(b, &k, KEYS_RID_HEAD, KEYS_TAG_TAIL);
    resp_arg(b, (const char *)l->member, 12);
    resp_arg_u64(b, rid_ttl_ms);
}

void wire_sem_acquire(struct resp_buf *b, const char *sha,
                      const struct wire_lock *l, uint32_t permits,
                      uint32_t rid_ttl_ms, uint64_t rid)
{
    sem_head(b, SCRIPT_SEM_ACQUIRE, sha, 5, l, permits, rid_ttl_ms);
    resp_arg_u64_fixed(b, rid);
}

void wire_sem_release(struct resp_buf *b, const char *sha,
                      const struct wire_lock *l, uint32_t permits,
                      uint32_t rid_ttl_ms, const char *publish,
                      uint64_t rid)
{
    struct key_src k = wire_key(l);
    sem_head(b, SCRIPT_SEM_RELEASE, sha, 7, l, permits, rid_ttl_ms);
    resp_arg(b, publish, strlen(publish));
    keys_channel_of(b, &k, KEYS_SEM_CHANNEL_HEAD);
    resp_arg_u64_fixed(b, rid);
}

/* The count key, then the permits' sorted set, the publish command and
 * the channel: what every expiring-permit script starts with; nargs counts
 * the command's words in all. */
static void permit_head(struct resp_buf *b, enum script_id id,
                        const char *sha, size_t nargs,
                        const struct wire_lock *l, const char *publish)
{
    struct key_src k = wire_key(l);
    wire_evalsha(b, id, sha, 2, nargs);
    keys_lock(b, &k);
    keys_tagged(b, &k, KEYS_SUFFIX_HEAD, KEYS_PERMITS_TAIL);
    keys_tagged(b, &k, KEYS_SUFFIX_HEAD, KEYS_PERMITS_TAIL);
    resp_arg(b, publish, strlen(publish));
    keys_channel_of(b, &k, KEYS_SEM_CHANNEL_HEAD);
}

void wire_permit_acquire(struct resp_buf *b, const char *sha,
                         const struct wire_lock *l, uint32_t lease_ms,
                         const char *publish, uint64_t rid)
{
    permit_head(b, SCRIPT_PERMIT_ACQUIRE, sha, 6, l, publish);
    resp_arg(b, (const char *)l->member, sizeof(l->member));
    resp_arg_u64(b, lease_ms);
    resp_arg_u64_fixed(b, rid);
}

void wire_permit_release(struct resp_buf *b, const char *sha,
                         const struct wire_lock *l, const char *publish,
                         uint64_t rid)
{
    permit_head(b, SCRIPT_PERMIT_RELEASE, sha, 5, l, publish);
    resp_arg(b, (const char *)l->member, sizeof(l->member));
    resp_arg_u64_fixed(b, rid);
}

void wire_sem_init(struct resp_buf *b, const char *sha,
                   const struct wire_lock *l, uint32_t permits,
                   const char *publish)
{
    permit_head(b, SCRIPT_SEM_INIT, sha, 4, l, publish);
    resp_arg_u64(b, permits);
}

void wire_sem_available(struct resp_buf *b, const char *sha,
                        const struct wire_lock *l, const char *publish)
{
    permit_head(b, SCRIPT_SEM_AVAILABLE, sha, 3, l, publish);
}
