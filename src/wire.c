/* SPDX-License-Identifier: BSD-3-Clause */
/* wire.c -- what every kind's commands share (see wire.h): the EVALSHA
 * framing and its contract check, the renew, query and fence calls,
 * MultiLock, and the plain path's commands. */
#include "wire.h"

#include <string.h>

#include "hot.h"
#include "restore_payload.h"
#include "keys.h"

/* Whether n is within [lo, hi]. */
static int within(size_t n, uint32_t lo, uint32_t hi)
{
    return n >= lo && (hi == SCRIPT_UNBOUNDED || n <= hi);
}

void wire_evalsha(struct resp_buf *b, enum script_id id, const char *sha,
                  size_t nkeys, size_t nargs)
{
    const struct script_info *s = &script_table[id];
    resp_array(b, 3 + nkeys + nargs);
    resp_arg(b, "EVALSHA", 7);
    resp_arg(b, sha, 40);
    resp_arg_u64(b, nkeys);
    if (!b->failed && (!within(nkeys, s->keys_min, s->keys_max) ||
                       !within(nargs, s->args_min, s->args_max)))
        b->failed = RESP_BROKEN;
}

/* Read "<lead><decimal>\r\n" at *p (before end) into *v and move past
 * it. 0, or -1 when that is not what is there. */
static int read_count(const char **p, const char *end, char lead, size_t *v)
{
    const char *s = *p, *digits;
    if (s >= end || *s++ != lead)
        return -1;
    *v = 0;
    for (digits = s; s < end && *s >= '0' && *s <= '9' && s - digits < 12;
         s++)
        *v = *v * 10 + (size_t)(*s - '0');
    if (s == digits || end - s < 2 || s[0] != '\r' || s[1] != '\n')
        return -1;
    *p = s + 2;
    return 0;
}

/* Read one bulk string at *p (before end): its bytes in *w, *len long.
 * 0, or -1 when there is none. */
static int read_bulk(const char **p, const char *end, const char **w,
                     size_t *len)
{
    if (read_count(p, end, '$', len) != 0 || (size_t)(end - *p) < *len + 2 ||
        (*p)[*len] != '\r' || (*p)[*len + 1] != '\n')
        return -1;
    *w = *p;
    *p += *len + 2;
    return 0;
}

/* Whether word w (len bytes) names script s: its digest after EVALSHA,
 * its body after EVAL. */
static int names_script(const struct script_info *s, int body, const char *w,
                        size_t len)
{
    if (body)
        return len == s->len && memcmp(w, s->body, len) == 0;
    return len == 40 && memcmp(w, s->sha, 40) == 0;
}

/* The check is O(1) but for an EVAL's body: the words were counted as
 * they were appended (resp.h), so only the header, the script's name and
 * the number of keys are read. A header whose count is not the words
 * written, or a second command after the first, fails it. */
int wire_check(const struct resp_buf *b, enum script_id id)
{
    const struct script_info *s = &script_table[id];
    const char *p = b->data, *end = b->data + b->len, *w;
    size_t argc, len, nkeys = 0;
    if (b->failed || read_count(&p, end, '*', &argc) != 0 || argc < 3 ||
        argc != b->declared || argc != b->words ||
        read_bulk(&p, end, &w, &len) != 0)
        return -1;
    int body = len == 4 && memcmp(w, "EVAL", 4) == 0;
    if ((!body && (len != 7 || memcmp(w, "EVALSHA", 7) != 0)) ||
        read_bulk(&p, end, &w, &len) != 0 || !names_script(s, body, w, len) ||
        read_bulk(&p, end, &w, &len) != 0 || len == 0 || len > 9)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (w[i] < '0' || w[i] > '9')
            return -1;
        nkeys = nkeys * 10 + (size_t)(w[i] - '0');
    }
    if (nkeys > argc - 3)
        return -1;
    return within(nkeys, s->keys_min, s->keys_max) &&
                   within(argc - 3 - nkeys, s->args_min, s->args_max)
               ? 0
               : -1;
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
    t.words = b->words; /* the same words: the digest's place is the body's */
    t.declared = b->declared;
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

HILOCK_HOT
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

HILOCK_COLD
size_t wire_look(struct resp_buf *b, const struct wire_lock *l)
{
    struct key_src k = wire_key(l);
    resp_array(b, 2);
    resp_arg(b, "PTTL", 4);
    keys_lock(b, &k);
    size_t third = b->len;
    /* what acquire.lua reads before it decides: the owner's hold, another
     * kind's mark, the fair queue's marker (lib/fair.lua) */
    resp_array(b, 5);
    resp_arg(b, "HMGET", 5);
    keys_lock(b, &k);
    wire_owner_field(b, l);
    resp_arg(b, "mode", 4);
    resp_arg(b, "hilock:queued", 13);
    return third;
}

/* PUBLISH of the release message "0" on k's channel, with publish. */
static void release_message(struct resp_buf *b, const struct key_src *k,
                            const char *publish)
{
    resp_array(b, 3);
    resp_arg(b, publish, strlen(publish));
    keys_channel(b, k);
    resp_arg(b, "0", 1);
}

void wire_release_message(struct resp_buf *b, const struct wire_lock *l,
                          const char *publish)
{
    struct key_src k = wire_key(l);
    release_message(b, &k, publish);
}

/* The plain path's release (wire_drop, wire_fair_drop): HDEL of the
 * owner's field and request ids, and of the hand-off marker too when
 * handed, then the release message with publish (none: NULL); returns
 * where that second command starts (0: none). */
HILOCK_HOT
static size_t drop(struct resp_buf *b, const struct wire_lock *l,
                   const char *publish, int handed)
{
    static const char marker[] = "hilock:handed";
    struct key_src k = wire_key(l);
    resp_array(b, handed ? 6 : 5);
    resp_arg(b, "HDEL", 4);
    keys_lock(b, &k);
    keys_field(b, l->client_id, l->owner_tag);
    keys_field_sfx(b, l->client_id, l->owner_tag, KEYS_RID_SUFFIX);
    keys_field_sfx(b, l->client_id, l->owner_tag, KEYS_FIRST_RID_SUFFIX);
    if (handed)
        resp_arg(b, marker, sizeof marker - 1);
    if (!publish)
        return 0;
    size_t second = b->len;
    release_message(b, &k, publish);
    return second;
}

HILOCK_HOT
size_t wire_drop(struct resp_buf *b, const struct wire_lock *l,
                 const char *publish)
{
    return drop(b, l, publish, 0);
}

size_t wire_fair_drop(struct resp_buf *b, const struct wire_lock *l,
                      const char *publish)
{
    return drop(b, l, publish, 1);
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
    wire_evalsha(b, SCRIPT_RENEW, sha, nk, 2 + nargs);
    if (keyed)
        keyed->kind->renew_keys(b, keyed);
    resp_arg_u64(b, lease_ms);
    resp_arg_u64(b, deadline_ms);
}

/* A lock in a renew call: its type (see src/lua/renew.lua), then what its
 * kind says. */
void wire_renew_lock(struct resp_buf *b, const struct wire_lock *l)
{
    resp_arg(b, &l->kind->type, 1);
    l->kind->renew_args(b, l);
}

void wire_fence(struct resp_buf *b, const char *sha,
                const struct wire_lock *l, int64_t token)
{
    struct key_src k = wire_key(l);
    wire_evalsha(b, SCRIPT_FENCE, sha, 1, 1);
    keys_fence(b, &k);
    resp_arg_u64(b, (uint64_t)token);
}

void wire_multi_acquire(struct resp_buf *b, const char *sha,
                        const struct wire_lock *l, size_t n,
                        uint32_t lease_ms, uint64_t rid)
{
    wire_evalsha(b, SCRIPT_MULTI_ACQUIRE, sha, n, 3);
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
    wire_evalsha(b, SCRIPT_MULTI_RELEASE, sha, 2 * n, 5);
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
    wire_evalsha(b, SCRIPT_QUERY, sha, 1, 3);
    wire_lock_key(b, l);
    resp_arg(b, what[q], strlen(what[q]));
    wire_owner_field(b, l);
    resp_arg(b, layout, strlen(layout));
}
