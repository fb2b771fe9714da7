/* SPDX-License-Identifier: BSD-3-Clause */
/* wire.c -- what every kind's commands share (see wire.h): the EVALSHA
 * framing, the renew, query and fence calls, MultiLock, and the plain
 * path's commands. */
#include "wire.h"

#include <string.h>

#include "restore_payload.h"
#include "keys.h"

void wire_evalsha(struct resp_buf *b, const char *sha, size_t argc,
                  size_t numkeys)
{
    resp_array(b, argc);
    resp_arg(b, "EVALSHA", 7);
    resp_arg(b, sha, 40);
    resp_arg_u64(b, numkeys);
}

int wire_eval_body(struct resp_buf *b, const char *body, size_t len)
{
    static const char head[] = "$7\r\nEVALSHA\r\n$40\r\n";
    const size_t hl = sizeof head - 1;
    const char *nl = b->failed || !b->len ? NULL : memchr(b->data, '\n', b->len);
    if (!nl)
        return -1;
    size_t at = (size_t)(nl - b->data) + 1; /* past the array header */
    size_t rest = at + hl + 40 + 2;         /* past the digest */
    if (b->len < rest || memcmp(b->data + at, head, hl) != 0)
        return -1;
    struct resp_buf t;
    resp_init(&t, NULL, 0);
    resp_raw(&t, b->data, at);
    resp_arg(&t, "EVAL", 4);
    resp_arg(&t, body, len);
    resp_raw(&t, b->data + rest, b->len - rest);
    int rc = t.failed ? -1 : 0;
    if (rc == 0) {
        resp_copy(b, &t);
        rc = b->failed ? -1 : 0;
    }
    resp_free(&t);
    return rc;
}

void wire_rid(struct resp_buf *b, uint64_t rid)
{
    resp_u64_fixed(rid, b->data + b->len - RESP_U64_WIDTH - 2);
}

uint64_t wire_rid_of(const struct resp_buf *b)
{
    const char *p = b->data + b->len - RESP_U64_WIDTH - 2;
    uint64_t rid = 0;
    for (int i = 0; i < RESP_U64_WIDTH; i++)
        rid = rid * 10 + (uint64_t)(p[i] - '0');
    return rid;
}

int wire_take(struct resp_buf *b, const struct wire_lock *l, uint32_t lease_ms,
              uint64_t rid)
{
    static const char first[] = KEYS_FIRST_RID_SUFFIX;
    char field[128], rid_field[sizeof(field) + 4];
    char first_field[sizeof(field) + sizeof(first)], num[21];
    unsigned char payload[3 * sizeof(field) + 96];
    size_t id = strlen(l->client_id), nlen;
    if (lease_ms == 0 || id + 22 > sizeof(field))
        return -1;
    memcpy(field, l->client_id, id);
    field[id] = ':';
    size_t flen = id + 1 + resp_u64_str(l->owner_tag, field + id + 1);
    memcpy(rid_field, field, flen);
    memcpy(rid_field + flen, KEYS_RID_SUFFIX, 4);
    memcpy(first_field, field, flen);
    memcpy(first_field + flen, first, sizeof(first) - 1);
    nlen = resp_u64_str(rid, num);
    const struct resp_part hash[6] = {
        {field, flen},
        {"1", 1},
        {rid_field, flen + 4},
        {num, nlen},
        {first_field, flen + sizeof(first) - 1},
        {num, nlen}};
    size_t n = restore_payload_hash(hash, 3, payload, sizeof(payload));
    if (n == 0)
        return -1;
    struct key_src k = wire_key(l);
    resp_array(b, 4);
    resp_arg(b, "RESTORE", 7);
    keys_lock(b, &k);
    resp_arg_u64(b, lease_ms);
    resp_arg(b, payload, n);
    return 0;
}

size_t wire_drop(struct resp_buf *b, const struct wire_lock *l,
                 const char *publish)
{
    struct key_src k = wire_key(l);
    resp_array(b, 5);
    resp_arg(b, "HDEL", 4);
    keys_lock(b, &k);
    keys_field(b, l->client_id, l->owner_tag);
    keys_field_sfx(b, l->client_id, l->owner_tag, KEYS_RID_SUFFIX);
    keys_field_sfx(b, l->client_id, l->owner_tag, KEYS_FIRST_RID_SUFFIX);
    size_t second = b->len;
    resp_array(b, 3);
    resp_arg(b, publish, strlen(publish));
    keys_channel(b, &k);
    resp_arg(b, "0", 1);
    return second;
}

void wire_lock_key(struct resp_buf *b, const struct wire_lock *l)
{
    struct key_src k = wire_key(l);
    keys_lock(b, &k);
}

void wire_fence_key(struct resp_buf *b, const struct wire_lock *l)
{
    struct key_src k = wire_key(l);
    keys_fence(b, &k);
}

void wire_owner_field(struct resp_buf *b, const struct wire_lock *l)
{
    keys_field_sfx(b, l->client_id, l->owner_tag, l->suffix);
}

void wire_owner_hold(struct resp_buf *b, const struct wire_lock *l)
{
    wire_lock_key(b, l);
    wire_owner_field(b, l);
}

void wire_renew_head(struct resp_buf *b, const char *sha, size_t nargs,
                     uint32_t lease_ms, uint64_t deadline_ms,
                     const struct wire_lock *keyed)
{
    size_t nk = keyed ? keyed->kind->renew_nkeys : 0;
    wire_evalsha(b, sha, 5 + nargs + nk, nk);
    if (keyed)
        keyed->kind->renew_keys(b, keyed);
    resp_arg_u64(b, lease_ms);
    resp_arg_u64(b, deadline_ms);
}

/* A lock in a renew call: its type (see script.c), then what its kind
 * says. */
void wire_renew_lock(struct resp_buf *b, const struct wire_lock *l)
{
    resp_arg(b, &l->kind->type, 1);
    l->kind->renew_args(b, l);
}

void wire_fence(struct resp_buf *b, const char *sha,
                const struct wire_lock *l, int64_t token)
{
    struct key_src k = wire_key(l);
    wire_evalsha(b, sha, 5, 1);
    keys_fence(b, &k);
    resp_arg_u64(b, (uint64_t)token);
}

void wire_multi_acquire(struct resp_buf *b, const char *sha,
                        const struct wire_lock *l, size_t n,
                        uint32_t lease_ms, uint64_t rid)
{
    wire_evalsha(b, sha, 3 + n + 3, n);
    for (size_t i = 0; i < n; i++) {
        struct key_src k = wire_key(&l[i]);
        keys_lock(b, &k);
    }
    resp_arg_u64(b, lease_ms);
    keys_field(b, l[0].client_id, l[0].owner_tag);
    resp_arg_u64_fixed(b, rid);
}

void wire_multi_release(struct resp_buf *b, const char *sha,
                        const struct wire_lock *l, size_t n, uint64_t rid,
                        uint32_t lease_ms, const char *publish)
{
    wire_evalsha(b, sha, 3 + 2 * n + 5, 2 * n);
    for (size_t i = 0; i < n; i++) {
        struct key_src k = wire_key(&l[i]);
        keys_lock(b, &k);
    }
    for (size_t i = 0; i < n; i++) {
        struct key_src k = wire_key(&l[i]);
        keys_channel(b, &k);
    }
    resp_arg(b, "0", 1);
    resp_arg_u64(b, lease_ms);
    keys_field(b, l[0].client_id, l[0].owner_tag);
    resp_arg(b, publish, strlen(publish));
    resp_arg_u64_fixed(b, rid);
}

void wire_query(struct resp_buf *b, const char *sha, enum wire_query q,
                const struct wire_lock *l)
{
    static const char *const what[] = {"held", "count", "ttl"};
    const char *layout = l->kind->query_layout;
    wire_evalsha(b, sha, 7, 1);
    wire_lock_key(b, l);
    resp_arg(b, what[q], strlen(what[q]));
    wire_owner_field(b, l);
    resp_arg(b, layout, strlen(layout));
}
