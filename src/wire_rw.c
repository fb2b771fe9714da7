/* SPDX-License-Identifier: BSD-3-Clause */
/* wire_rw.c -- the commands of a read-write lock's two sides (see
 * wire.h; the scripts' arguments are listed in the contracts of
 * src/lua/), and how the shared scripts see each side. */
#include <string.h>

#include "wire.h"

const struct wire_rw_side wire_rw_reader = {
    .acquire = SCRIPT_READ_ACQUIRE,
    .release = SCRIPT_READ_RELEASE,
    .undo = SCRIPT_READ_UNDO,
    .other = ":write",
    .message = "0",
};

const struct wire_rw_side wire_rw_writer = {
    .acquire = SCRIPT_WRITE_ACQUIRE,
    .release = SCRIPT_WRITE_RELEASE,
    .undo = SCRIPT_WRITE_UNDO,
    .other = NULL,
    .message = "1", /* every reader may come in, as Redisson's */
};

/* A reader's renewal: its newest hold's timeout key lives, and every one
 * of its holds' keys is renewed (see src/lua/renew.lua): the key's prefix
 * goes too. */
static void read_renew_args(struct resp_buf *b, const struct wire_lock *l)
{
    struct key_src k = wire_key(l);
    wire_owner_hold(b, l);
    keys_tagged(b, &k, KEYS_SUFFIX_HEAD, KEYS_BASE_TAIL);
}

/* A reader's first hold's key moves with its lock: a renewal of it alone
 * declares both. */
static void read_renew_keys(struct resp_buf *b, const struct wire_lock *l)
{
    struct key_src k = wire_key(l);
    keys_lock(b, &k);
    keys_read_hold(b, &k, l->client_id, l->owner_tag, l->suffix);
}

const struct wire_kind wire_kind_read = {
    .type = 'r',
    .query_layout = "rwlock",
    .renew_size = 4,
    .renew_nkeys = 2,
    .renew_keys = read_renew_keys,
    .renew_args = read_renew_args,
    .guard_key = wire_fence_key,
    .holder = wire_owner_field,
};

const struct wire_kind wire_kind_write = {
    .type = 'w',
    .query_layout = "rwlock",
    WIRE_OWNER_FIELD_HOOKS,
};

void wire_rw_acquire(struct resp_buf *b, const char *sha,
                     const struct wire_lock *l,
                     const struct wire_rw_side *side, uint32_t lease_ms,
                     int wait, uint32_t intent_ms, uint64_t rid)
{
    struct key_src k = wire_key(l);
    wire_evalsha(b, side->acquire, sha, 3, 9);
    keys_lock(b, &k);
    keys_tagged(b, &k, KEYS_RID_HEAD, KEYS_TAG_TAIL);
    keys_tagged(b, &k, KEYS_WRITER_HEAD, KEYS_TAG_TAIL);
    resp_arg_u64(b, lease_ms);
    keys_field_sfx(b, l->client_id, l->owner_tag, l->suffix);
    keys_field_sfx(b, l->client_id, l->owner_tag, side->other);
    keys_tagged(b, &k, KEYS_SUFFIX_HEAD, KEYS_BASE_TAIL);
    keys_tagged(b, &k, KEYS_RID_HEAD, KEYS_TAG_TAIL);
    keys_tagged(b, &k, KEYS_WRITER_HEAD, KEYS_TAG_TAIL);
    resp_arg(b, wait ? "1" : "0", 1);
    resp_arg_u64(b, intent_ms ? intent_ms : 1);
    resp_arg_u64_fixed(b, rid);
}

/* What a release and an undo (script id) of side start with: the lock
 * key and the owner's request ids, the side's release message, lease_ms
 * and the owner's field. */
static void end_head(struct resp_buf *b, enum script_id id, const char *sha,
                     const struct wire_lock *l,
                     const struct wire_rw_side *side, uint32_t lease_ms)
{
    struct key_src k = wire_key(l);
    wire_evalsha(b, id, sha, 2, 9);
    keys_lock(b, &k);
    keys_tagged(b, &k, KEYS_RID_HEAD, KEYS_TAG_TAIL);
    resp_arg(b, side->message, strlen(side->message));
    resp_arg_u64(b, lease_ms);
    keys_field_sfx(b, l->client_id, l->owner_tag, l->suffix);
}

/* And what they go on with: how the release message goes out, and where
 * the owner's hold keys and request ids are. */
static void end_tail(struct resp_buf *b, const struct wire_lock *l,
                     const char *publish)
{
    struct key_src k = wire_key(l);
    resp_arg(b, publish, strlen(publish));
    keys_channel_of(b, &k, KEYS_RWLOCK_CHANNEL_HEAD);
    keys_tagged(b, &k, KEYS_SUFFIX_HEAD, KEYS_BASE_TAIL);
    keys_tagged(b, &k, KEYS_RID_HEAD, KEYS_TAG_TAIL);
}

void wire_rw_release(struct resp_buf *b, const char *sha,
                     const struct wire_lock *l,
                     const struct wire_rw_side *side, uint64_t rid,
                     uint32_t lease_ms, uint32_t drop, const char *publish)
{
    end_head(b, side->release, sha, l, side, lease_ms);
    resp_arg_u64(b, drop);
    end_tail(b, l, publish);
    resp_arg_u64_fixed(b, rid);
}

/* As a release (its message too), with the attempt it undoes. */
void wire_rw_undo(struct resp_buf *b, const char *sha,
                  const struct wire_lock *l,
                  const struct wire_rw_side *side, uint64_t attempt,
                  uint64_t rid, uint32_t lease_ms, const char *publish)
{
    end_head(b, side->undo, sha, l, side, lease_ms);
    end_tail(b, l, publish);
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
