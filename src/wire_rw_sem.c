/* SPDX-License-Identifier: BSD-3-Clause */
/* wire_rw_sem.c -- the commands about read-write locks and semaphores
 * (see wire.h; the scripts' arguments are listed in the contracts of
 * src/lua/). */
#include <string.h>

#include "wire.h"

/* The script of side l: rd for a reader, wr for a writer. */
static enum script_id rw_script(const struct wire_lock *l, enum script_id rd,
                                enum script_id wr)
{
    return l->kind == KIND_WRITE ? wr : rd;
}

/* The field of l's owner on the other side of its read-write lock. */
static void other_field(struct resp_buf *b, const struct wire_lock *l)
{
    keys_field_sfx(b, l->client_id, l->owner_tag,
                   l->kind == KIND_READ ? ":write" : NULL);
}

void wire_rw_acquire(struct resp_buf *b, const char *sha,
                     const struct wire_lock *l, uint32_t lease_ms, int wait,
                     uint32_t intent_ms, uint64_t rid)
{
    struct key_src k = wire_key(l);
    wire_evalsha(b, rw_script(l, SCRIPT_READ_ACQUIRE, SCRIPT_WRITE_ACQUIRE),
                 sha, 3, 9);
    keys_lock(b, &k);
    keys_tagged(b, &k, KEYS_RID_HEAD, KEYS_TAG_TAIL);
    keys_tagged(b, &k, KEYS_WRITER_HEAD, KEYS_TAG_TAIL);
    resp_arg_u64(b, lease_ms);
    keys_field_sfx(b, l->client_id, l->owner_tag, l->suffix);
    other_field(b, l);
    keys_tagged(b, &k, KEYS_SUFFIX_HEAD, KEYS_BASE_TAIL);
    keys_tagged(b, &k, KEYS_RID_HEAD, KEYS_TAG_TAIL);
    keys_tagged(b, &k, KEYS_WRITER_HEAD, KEYS_TAG_TAIL);
    resp_arg(b, wait ? "1" : "0", 1);
    resp_arg_u64(b, intent_ms ? intent_ms : 1);
    resp_arg_u64_fixed(b, rid);
}

void wire_rw_release(struct resp_buf *b, const char *sha,
                     const struct wire_lock *l, uint64_t rid,
                     uint32_t lease_ms, uint32_t drop, const char *publish)
{
    struct key_src k = wire_key(l);
    wire_evalsha(b, rw_script(l, SCRIPT_READ_RELEASE, SCRIPT_WRITE_RELEASE),
                 sha, 2, 9);
    keys_lock(b, &k);
    keys_tagged(b, &k, KEYS_RID_HEAD, KEYS_TAG_TAIL);
    /* A writer's release lets every reader in: "1", as Redisson's. */
    resp_arg(b, l->kind == KIND_WRITE ? "1" : "0", 1);
    resp_arg_u64(b, lease_ms);
    keys_field_sfx(b, l->client_id, l->owner_tag, l->suffix);
    resp_arg_u64(b, drop);
    resp_arg(b, publish, strlen(publish));
    keys_channel_of(b, &k, KEYS_RWLOCK_CHANNEL_HEAD);
    keys_tagged(b, &k, KEYS_SUFFIX_HEAD, KEYS_BASE_TAIL);
    keys_tagged(b, &k, KEYS_RID_HEAD, KEYS_TAG_TAIL);
    resp_arg_u64_fixed(b, rid);
}

void wire_rw_undo(struct resp_buf *b, const char *sha,
                  const struct wire_lock *l, uint64_t attempt, uint64_t rid,
                  uint32_t lease_ms, const char *publish)
{
    struct key_src k = wire_key(l);
    wire_evalsha(b, rw_script(l, SCRIPT_READ_UNDO, SCRIPT_WRITE_UNDO), sha,
                 2, 9);
    keys_lock(b, &k);
    keys_tagged(b, &k, KEYS_RID_HEAD, KEYS_TAG_TAIL);
    /* as a release: a writer's lets every reader in */
    resp_arg(b, l->kind == KIND_WRITE ? "1" : "0", 1);
    resp_arg_u64(b, lease_ms);
    keys_field_sfx(b, l->client_id, l->owner_tag, l->suffix);
    resp_arg(b, publish, strlen(publish));
    keys_channel_of(b, &k, KEYS_RWLOCK_CHANNEL_HEAD);
    keys_tagged(b, &k, KEYS_SUFFIX_HEAD, KEYS_BASE_TAIL);
    keys_tagged(b, &k, KEYS_RID_HEAD, KEYS_TAG_TAIL);
    resp_arg_u64(b, attempt);
    resp_arg_u64_fixed(b, rid);
}

void wire_write_leave(struct resp_buf *b, const char *sha,
                      const struct wire_lock *l)
{
    struct key_src k = wire_key(l);
    wire_evalsha(b, SCRIPT_WRITE_LEAVE, sha, 2, 2);
    keys_lock(b, &k);
    keys_tagged(b, &k, KEYS_WRITER_HEAD, KEYS_TAG_TAIL);
    keys_tagged(b, &k, KEYS_WRITER_HEAD, KEYS_TAG_TAIL);
    keys_field_sfx(b, l->client_id, l->owner_tag, l->suffix);
}

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
