/* SPDX-License-Identifier: BSD-3-Clause */
/* keys.h -- how lock names become Redis keys, channels and fields.
 *
 * Default layout (Redisson's): the lock key is the name itself, the channel
 * is "redisson_lock__channel:{name}". hilock's companion keys carry the same
 * "{name}" hash tag: "hilock_fence:{name}", "hilock_queue:{name}" (fair mode),
 * and the hand-off channels "redisson_lock__channel:{name}:<listener>".
 * A name with a hash tag of its own is not wrapped: "a{b}" has the channel
 * "redisson_lock__channel:a{b}".
 * A key prefix, when configured, is put in front of every one of them. */
#ifndef HILOCK_KEYS_H
#define HILOCK_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "resp.h"

/* The names themselves, for code that builds them outside a command (the
 * bench, the CLI): a companion key is <prefix><head><name><tail>, where a
 * name with a hash tag of its own ("a{b}c") goes without the last byte of
 * the head and the tail (Redisson's rule): every key of a lock hashes to
 * the slot of the lock key <prefix><name>. */
#define KEYS_CHANNEL_HEAD "redisson_lock__channel:{"
#define KEYS_RWLOCK_CHANNEL_HEAD "redisson_rwlock:{"
#define KEYS_SEM_CHANNEL_HEAD "redisson_sc:{"
/* Read-write locks and semaphores: the companion keys Redisson names
 * "{<name>}:<suffix>" (a name with its own tag: "<name>:<suffix>"), and
 * hilock's own: the request ids applied ("hilock_rid:{<name>}", a hash by
 * owner field) and a waiting writer ("hilock_rwlock_writer:{<name>}"). */
#define KEYS_SUFFIX_HEAD "{"
#define KEYS_BASE_TAIL "}:"            /* read holds: <base><field>:rwlock_timeout:<n> */
#define KEYS_PERMITS_TAIL "}:timeout"  /* expiring permits' sorted set */
#define KEYS_RID_HEAD "hilock_rid:{"
#define KEYS_WRITER_HEAD "hilock_rwlock_writer:{"
#define KEYS_FENCE_HEAD "hilock_fence:{"
#define KEYS_QUEUE_HEAD "hilock_queue:{"
#define KEYS_OWNERS_TAIL "}:owners"    /* fair queue's owners hash */
#define KEYS_TAG_TAIL "}"
/* The owner field's companion in the lock hash: <field><suffix> holds the
 * highest acquire request id applied for that owner (see src/lua/acquire.lua). */
#define KEYS_RID_SUFFIX ":rid"
/* ... and <field><suffix> the request id that began the owner's hold (the
 * one that created the hash): a cleanup of an attempt sent before it has
 * nothing of its own there to undo. */
#define KEYS_FIRST_RID_SUFFIX ":first:rid"

/* What a key is built from; all pointers borrowed. */
struct key_src {
    const char *prefix;
    size_t prefix_len;
    const char *name;
    size_t name_len;
};

/* Whether every key of lock name hashes to one cluster slot: it has a
 * hash tag of its own, or no '}' (a name such as "a{}b" can have no
 * companion key in its slot). */
int keys_slot_safe(const char *name, size_t len);

/* Append the lock key / channel / fencing counter as one argument. */
void keys_lock(struct resp_buf *b, const struct key_src *k);
void keys_channel(struct resp_buf *b, const struct key_src *k);
void keys_fence(struct resp_buf *b, const struct key_src *k);
/* Append the companion key <prefix><head><name><tail> (the tag rule
 * above), e.g. a channel with its head, or "{name}:timeout" with
 * KEYS_SUFFIX_HEAD and the tail "}:timeout". */
void keys_tagged(struct resp_buf *b, const struct key_src *k,
                 const char *head, const char *tail);
/* Append the channel of k that starts with head (KEYS_*_CHANNEL_HEAD). */
void keys_channel_of(struct resp_buf *b, const struct key_src *k,
                     const char *head);
/* The channel of k as text, for code that sends it outside a command (the
 * CLI): written with a NUL after it into out when it fits in size bytes
 * with that NUL, else nothing is written. Returns its length either way. */
size_t keys_channel_text(const struct key_src *k, char *out, size_t size);
/* The same for the companion key <prefix><head><name><tail> (the tag rule
 * above), e.g. an expiring semaphore's "{name}:timeout". */
size_t keys_tagged_text(const struct key_src *k, const char *head,
                        const char *tail, char *out, size_t size);
/* Fair mode: append the wait queue "hilock_queue:{name}", or the hand-off
 * channel of a client, "<channel>:<listener>" (listener: its public tag). */
void keys_queue(struct resp_buf *b, const struct key_src *k);
void keys_handoff(struct resp_buf *b, const struct key_src *k,
                  const char *listener);
/* Append the owner field "<client_id>:<owner_tag>", or with suffix
 * ("<client_id>:<owner_tag><suffix>", a writer's ":write") when suffix is
 * not NULL. */
void keys_field(struct resp_buf *b, const char *client_id,
                uint64_t owner_tag);
void keys_field_sfx(struct resp_buf *b, const char *client_id,
                    uint64_t owner_tag, const char *suffix);
/* Append a reader's first hold's key, "{name}:<field>:rwlock_timeout:1"
 * (the field as keys_field_sfx makes it), which lives while the reader
 * holds the lock. */
void keys_read_hold(struct resp_buf *b, const struct key_src *k,
                    const char *client_id, uint64_t owner_tag,
                    const char *suffix);
/* The lock names whose channel is ch (length len) for prefix: stores them
 * in name[]/name_len[] and returns how many (0 when ch is no lock channel
 * of this prefix). Names "X" and "{X}" share a channel, as in Redisson. */
int keys_channel_names(const char *prefix, size_t prefix_len,
                       const char *ch, size_t len, const char *name[2],
                       size_t name_len[2]);
/* As keys_channel_names for channels that start with head. */
int keys_channel_names_of(const char *head, const char *prefix,
                          size_t prefix_len, const char *ch, size_t len,
                          const char *name[2], size_t name_len[2]);
/* As keys_channel_names for a hand-off channel of listener: 0 when ch
 * does not end with ":<listener>". */
int keys_handoff_names(const char *prefix, size_t prefix_len,
                       const char *listener, const char *ch, size_t len,
                       const char *name[2], size_t name_len[2]);

#endif
