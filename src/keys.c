/* SPDX-License-Identifier: BSD-3-Clause */
/* keys.c -- see keys.h. Nothing here allocates: every key is written
 * straight into the command being encoded. */
#include "keys.h"

#include <string.h>

#include "hot.h"
#include "slot.h"

#define CHANNEL_PREFIX KEYS_CHANNEL_HEAD
#define FENCE_PREFIX KEYS_FENCE_HEAD

/* Whether name keeps its own hash tag in companion keys: Redisson's rule
 * wraps a name in braces unless it has one, so that every key of a lock
 * hashes to the lock key's slot. (Redisson skips the braces for any name
 * with a '{'; a name whose '{' makes no tag is wrapped here, or its keys
 * would not share a slot.) */
static int own_tag(const struct key_src *k)
{
    return slot_has_tag(k->name, k->name_len);
}

int keys_slot_safe(const char *name, size_t len)
{
    return slot_has_tag(name, len) || !memchr(name, '}', len);
}

/* The parts of prefix + head + name + tail into p[4]; head ends with the
 * '{' and tail starts with the '}' that a name with its own tag goes
 * without. */
static void tagged_parts(const struct key_src *k, const char *head,
                         const char *tail, struct resp_part p[4])
{
    size_t own = head[0] ? (size_t)own_tag(k) : 0;
    p[0] = (struct resp_part){k->prefix, k->prefix_len};
    p[1] = (struct resp_part){head, strlen(head) - own};
    p[2] = (struct resp_part){k->name, k->name_len};
    p[3] = (struct resp_part){tail + own, strlen(tail) - own};
}

/* Append prefix + head + name + tail as one argument (tagged_parts). */
void keys_tagged(struct resp_buf *b, const struct key_src *k,
                 const char *head, const char *tail)
{
    struct resp_part p[4];
    tagged_parts(k, head, tail, p);
    resp_arg_parts(b, 4, p);
}

HILOCK_HOT
void keys_lock(struct resp_buf *b, const struct key_src *k)
{
    keys_tagged(b, k, "", "");
}

HILOCK_HOT
void keys_channel(struct resp_buf *b, const struct key_src *k)
{
    keys_tagged(b, k, CHANNEL_PREFIX, KEYS_TAG_TAIL);
}

void keys_channel_of(struct resp_buf *b, const struct key_src *k,
                     const char *head)
{
    keys_tagged(b, k, head, KEYS_TAG_TAIL);
}

void keys_fence(struct resp_buf *b, const struct key_src *k)
{
    keys_tagged(b, k, FENCE_PREFIX, KEYS_TAG_TAIL);
}

size_t keys_channel_text(const struct key_src *k, char *out, size_t size)
{
    return keys_tagged_text(k, CHANNEL_PREFIX, KEYS_TAG_TAIL, out, size);
}

size_t keys_tagged_text(const struct key_src *k, const char *head,
                        const char *tail, char *out, size_t size)
{
    struct resp_part p[4];
    size_t len = 0;
    tagged_parts(k, head, tail, p);
    for (int i = 0; i < 4; i++)
        len += p[i].len;
    if (len >= size)
        return len;
    char *at = out;
    for (int i = 0; i < 4; i++) {
        if (p[i].len)
            memcpy(at, p[i].ptr, p[i].len);
        at += p[i].len;
    }
    *at = '\0';
    return len;
}

void keys_queue(struct resp_buf *b, const struct key_src *k)
{
    keys_tagged(b, k, KEYS_QUEUE_HEAD, KEYS_TAG_TAIL);
}

void keys_handoff(struct resp_buf *b, const struct key_src *k,
                  const char *listener)
{
    struct resp_part p[6];
    tagged_parts(k, CHANNEL_PREFIX, KEYS_TAG_TAIL, p);
    p[4] = (struct resp_part){":", 1};
    p[5] = (struct resp_part){listener, strlen(listener)};
    resp_arg_parts(b, 6, p);
}

HILOCK_HOT
void keys_field_sfx(struct resp_buf *b, const char *client_id,
                    uint64_t owner_tag, const char *suffix)
{
    char num[21];
    size_t n = resp_u64_str(owner_tag, num);
    struct resp_part p[4] = {{client_id, strlen(client_id)},
                             {":", 1},
                             {num, n},
                             {suffix ? suffix : "", suffix ? strlen(suffix) : 0}};
    resp_arg_parts(b, 4, p);
}

void keys_read_hold(struct resp_buf *b, const struct key_src *k,
                    const char *client_id, uint64_t owner_tag,
                    const char *suffix)
{
    char num[21];
    struct resp_part p[9];
    tagged_parts(k, KEYS_SUFFIX_HEAD, KEYS_BASE_TAIL, p);
    p[4] = (struct resp_part){client_id, strlen(client_id)};
    p[5] = (struct resp_part){":", 1};
    p[6] = (struct resp_part){num, resp_u64_str(owner_tag, num)};
    p[7] = (struct resp_part){suffix ? suffix : "", suffix ? strlen(suffix) : 0};
    p[8] = (struct resp_part){":rwlock_timeout:1", 17};
    resp_arg_parts(b, 9, p);
}

HILOCK_HOT
void keys_field(struct resp_buf *b, const char *client_id,
                uint64_t owner_tag)
{
    keys_field_sfx(b, client_id, owner_tag, NULL);
}

int keys_channel_names(const char *prefix, size_t prefix_len,
                       const char *ch, size_t len, const char *name[2],
                       size_t name_len[2])
{
    return keys_channel_names_of(CHANNEL_PREFIX, prefix, prefix_len, ch, len,
                                 name, name_len);
}

int keys_channel_names_of(const char *head_text, const char *prefix,
                          size_t prefix_len, const char *ch, size_t len,
                          const char *name[2], size_t name_len[2])
{
    size_t bare = strlen(head_text) - 1; /* no '{' */
    size_t head = prefix_len + bare;
    if (len <= head || memcmp(ch, prefix, prefix_len) != 0 ||
        memcmp(ch + prefix_len, head_text, bare))
        return 0;
    const char *rest = ch + head;
    size_t n = len - head, found = 0;
    /* "{X}": the name X wrapped, unless X has a tag of its own */
    if (n >= 3 && rest[0] == '{' && rest[n - 1] == '}' &&
        !slot_has_tag(rest + 1, n - 2)) {
        name[found] = rest + 1;
        name_len[found++] = n - 2;
    }
    /* a name with a tag of its own, unwrapped */
    if (slot_has_tag(rest, n)) {
        name[found] = rest;
        name_len[found++] = n;
    }
    return (int)found;
}

int keys_handoff_names(const char *prefix, size_t prefix_len,
                       const char *listener, const char *ch, size_t len,
                       const char *name[2], size_t name_len[2])
{
    size_t tail = strlen(listener) + 1;
    if (len <= tail || ch[len - tail] != ':' ||
        memcmp(ch + len - tail + 1, listener, tail - 1) != 0)
        return 0;
    return keys_channel_names(prefix, prefix_len, ch, len - tail, name,
                              name_len);
}
