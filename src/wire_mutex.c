/* SPDX-License-Identifier: BSD-3-Clause */
/* wire_mutex.c -- a lock's own commands (see wire.h; the scripts'
 * arguments are listed in the contracts of src/lua/): acquire, release
 * and undo, those of its fair mode, and how the shared scripts see a
 * lock. Its plain path's commands are plain Redis commands, in wire.c. */
#include <string.h>

#include "wire.h"

const struct wire_kind wire_kind_mutex = {
    .type = 'm',
    .query_layout = "lock",
    WIRE_OWNER_FIELD_HOOKS,
};

void wire_acquire(struct resp_buf *b, const char *sha,
                  const struct wire_lock *l, uint32_t lease_ms, int fencing,
                  const char *publish, uint64_t rid)
{
    struct key_src k = wire_key(l);
    int queue = l->entry_ms || l->queue;
    int fence = fencing || queue; /* a hand-off to a fair waiter draws */
    size_t nk = 1 + (fence != 0) + (queue ? 2 : 0);
    wire_evalsha(b, SCRIPT_ACQUIRE, sha, nk, queue ? 9 : 5);
    keys_lock(b, &k);
    if (fence)
        keys_fence(b, &k);
    if (queue) { /* the fair queue it may serve or join, and its owners */
        keys_queue(b, &k);
        keys_tagged(b, &k, KEYS_QUEUE_HEAD, KEYS_OWNERS_TAIL);
    }
    resp_arg_u64(b, lease_ms);
    keys_field(b, l->client_id, l->owner_tag);
    resp_arg(b, fencing ? "1" : "0", 1);
    keys_fence(b, &k);
    if (queue) { /* only a wait joins the queue */
        keys_queue(b, &k);
        resp_arg_u64(b, l->entry_ms);
        resp_arg(b, publish, strlen(publish));
        keys_channel(b, &k);
    }
    resp_arg_u64_fixed(b, rid);
}


/* The arguments both release scripts start with, after their keys: the
 * message (none when quiet), lease_ms, the owner field, drop, the publish
 * command and the channel. */
static void release_args(struct resp_buf *b, const struct key_src *k,
                         const struct wire_lock *l, uint32_t lease_ms,
                         uint32_t drop, const char *publish, int quiet)
{
    resp_arg(b, "0", quiet ? 0 : 1);
    resp_arg_u64(b, lease_ms);
    keys_field(b, l->client_id, l->owner_tag);
    resp_arg_u64(b, drop);
    resp_arg(b, publish, strlen(publish));
    keys_channel(b, k);
}

void wire_release(struct resp_buf *b, const char *sha,
                  const struct wire_lock *l, uint64_t rid, uint32_t lease_ms,
                  uint32_t drop, const char *publish, int quiet)
{
    struct key_src k = wire_key(l);
    wire_evalsha(b, SCRIPT_RELEASE, sha, 1, 7);
    keys_lock(b, &k);
    release_args(b, &k, l, lease_ms, drop, publish, quiet);
    resp_arg_u64_fixed(b, rid);
}

void wire_undo(struct resp_buf *b, const char *sha, const struct wire_lock *l,
               uint64_t attempt, uint64_t rid, const char *publish)
{
    struct key_src k = wire_key(l);
    wire_evalsha(b, SCRIPT_UNDO, sha, 1, 6);
    keys_lock(b, &k);
    resp_arg(b, "0", 1);
    keys_field(b, l->client_id, l->owner_tag);
    resp_arg(b, publish, strlen(publish));
    keys_channel(b, &k);
    resp_arg_u64(b, attempt);
    resp_arg_u64_fixed(b, rid);
}

/* The start of a call of fair script id with nargs arguments: its keys
 * (see src/lua/fair_acquire.lua), the lock, the queue, its owners hash
 * and, when tokens are issued, the fencing counter. */
static void fair_head(struct resp_buf *b, enum script_id id, const char *sha,
                      size_t nargs, const struct key_src *k, int fencing)
{
    wire_evalsha(b, id, sha, fencing ? 4 : 3, nargs);
    keys_lock(b, k);
    keys_queue(b, k);
    keys_tagged(b, k, KEYS_QUEUE_HEAD, KEYS_OWNERS_TAIL);
    if (fencing)
        keys_fence(b, k);
}

void wire_fair_acquire(struct resp_buf *b, const char *sha,
                       const struct wire_lock *l, uint32_t lease_ms,
                       int fencing, enum wire_fair_mode mode,
                       const struct wire_fair *f, uint64_t rid)
{
    struct key_src k = wire_key(l);
    char m = (char)mode;
    fair_head(b, SCRIPT_FAIR_ACQUIRE, sha, 13, &k, fencing);
    resp_arg_u64(b, lease_ms);
    keys_field(b, l->client_id, l->owner_tag);
    resp_arg(b, fencing ? "1" : "0", 1);
    keys_fence(b, &k);
    keys_queue(b, &k);
    resp_arg(b, &m, 1);
    resp_arg_u64(b, f->entry_ms ? f->entry_ms : 1);
    resp_arg(b, f->listener, strlen(f->listener));
    resp_arg_u64(b, f->wait_id);
    resp_arg(b, f->publish, strlen(f->publish));
    keys_channel(b, &k);
    resp_arg_u64(b, f->clock_ms);
    resp_arg_u64_fixed(b, rid); /* last: wire_rid */
}

void wire_fair_release(struct resp_buf *b, const char *sha,
                       const struct wire_lock *l, uint64_t rid,
                       uint32_t lease_ms, uint32_t drop, int fencing,
                       const struct wire_fair *f)
{
    struct key_src k = wire_key(l);
    fair_head(b, SCRIPT_FAIR_RELEASE, sha, 11, &k, fencing);
    release_args(b, &k, l, lease_ms, drop, f->publish, 0);
    keys_queue(b, &k);
    resp_arg(b, fencing ? "1" : "0", 1);
    keys_fence(b, &k);
    resp_arg(b, f->listener, strlen(f->listener));
    resp_arg_u64_fixed(b, rid);
}

void wire_fair_leave(struct resp_buf *b, const char *sha,
                     const struct wire_lock *l, int fencing,
                     const struct wire_fair *f)
{
    struct key_src k = wire_key(l);
    fair_head(b, SCRIPT_FAIR_LEAVE, sha, 8, &k, fencing);
    keys_field(b, l->client_id, l->owner_tag);
    keys_queue(b, &k);
    resp_arg(b, fencing ? "1" : "0", 1);
    keys_fence(b, &k);
    resp_arg(b, f->publish, strlen(f->publish));
    keys_channel(b, &k);
    resp_arg(b, "0", 1);
    resp_arg_u64(b, f->wait_id);
}

void wire_fair_undo(struct resp_buf *b, const char *sha,
                    const struct wire_lock *l, uint64_t attempt, uint64_t rid,
                    int fencing, const struct wire_fair *f)
{
    struct key_src k = wire_key(l);
    fair_head(b, SCRIPT_FAIR_UNDO, sha, 10, &k, fencing);
    resp_arg(b, "0", 1);
    keys_field(b, l->client_id, l->owner_tag);
    resp_arg(b, f->publish, strlen(f->publish));
    keys_channel(b, &k);
    keys_queue(b, &k);
    resp_arg(b, fencing ? "1" : "0", 1);
    keys_fence(b, &k);
    resp_arg(b, f->listener, strlen(f->listener));
    resp_arg_u64(b, attempt);
    resp_arg_u64_fixed(b, rid);
}
