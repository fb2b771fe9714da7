/* keys.h -- how lock names become Redis keys, channels and fields.
 *
 * Default layout (Redisson's): the lock key is the name itself, the channel
 * is "redisson_lock__channel:{name}". hilock's companion keys carry the same
 * "{name}" hash tag: "hilock_fence:{name}", "hilock_latch:{name}:<request>".
 * A key prefix, when configured, is put in front of every one of them. */
#ifndef HILOCK_KEYS_H
#define HILOCK_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "resp.h"

/* The names themselves, for code that builds them outside a command (the
 * bench, the CLI); a key is <prefix><head><name><tail>. */
#define KEYS_CHANNEL_HEAD "redisson_lock__channel:{"
#define KEYS_FENCE_HEAD "hilock_fence:{"
#define KEYS_LATCH_HEAD "hilock_latch:{"
#define KEYS_TAG_TAIL "}"
/* The owner field's companion in the lock hash: <field><suffix> holds the
 * highest acquire request id applied for that owner (see script.c). */
#define KEYS_RID_SUFFIX ":rid"

/* What a key is built from; all pointers borrowed. */
struct key_src {
    const char *prefix;
    size_t prefix_len;
    const char *name;
    size_t name_len;
};

/* Append the lock key / channel / fencing counter as one argument. */
void keys_lock(struct resp_buf *b, const struct key_src *k);
void keys_channel(struct resp_buf *b, const struct key_src *k);
void keys_fence(struct resp_buf *b, const struct key_src *k);
/* Append the release latch for request id "<tag>:<seq>"; tag is random
 * per client and unrelated to the owner id, which must not show in key
 * names. */
void keys_latch(struct resp_buf *b, const struct key_src *k, const char *tag,
                uint64_t seq);
/* Append the owner field "<client_id>:<owner_tag>". */
void keys_field(struct resp_buf *b, const char *client_id,
                uint64_t owner_tag);
/* The lock name inside channel ch (length len) for prefix; 0 with *name
 * and *name_len set, or -1 when ch is not a lock channel of this prefix. */
int keys_channel_name(const char *prefix, size_t prefix_len, const char *ch,
                      size_t len, const char **name, size_t *name_len);

#endif
