/* keys.c -- see keys.h. Nothing here allocates: every key is written
 * straight into the command being encoded. */
#include "keys.h"

#include <string.h>

#define CHANNEL_PREFIX KEYS_CHANNEL_HEAD
#define FENCE_PREFIX KEYS_FENCE_HEAD
#define LATCH_PREFIX KEYS_LATCH_HEAD

/* Append prefix + head + name + tail as one argument. */
static void tagged(struct resp_buf *b, const struct key_src *k,
                   const char *head, const char *tail)
{
    struct resp_part p[4] = {
        {k->prefix, k->prefix_len},
        {head, strlen(head)},
        {k->name, k->name_len},
        {tail, strlen(tail)},
    };
    resp_arg_parts(b, 4, p);
}

void keys_lock(struct resp_buf *b, const struct key_src *k)
{
    tagged(b, k, "", "");
}

void keys_channel(struct resp_buf *b, const struct key_src *k)
{
    tagged(b, k, CHANNEL_PREFIX, KEYS_TAG_TAIL);
}

void keys_fence(struct resp_buf *b, const struct key_src *k)
{
    tagged(b, k, FENCE_PREFIX, KEYS_TAG_TAIL);
}

void keys_latch(struct resp_buf *b, const struct key_src *k, const char *tag,
                uint64_t seq)
{
    char num[21];
    size_t n = resp_u64_str(seq, num);
    struct resp_part p[7] = {
        {k->prefix, k->prefix_len},
        {LATCH_PREFIX, sizeof(LATCH_PREFIX) - 1},
        {k->name, k->name_len},
        {"}:", 2},
        {tag, strlen(tag)},
        {":", 1},
        {num, n},
    };
    resp_arg_parts(b, 7, p);
}

void keys_field(struct resp_buf *b, const char *client_id,
                uint64_t owner_tag)
{
    char num[21];
    size_t n = resp_u64_str(owner_tag, num);
    struct resp_part p[3] = {
        {client_id, strlen(client_id)}, {":", 1}, {num, n}};
    resp_arg_parts(b, 3, p);
}

int keys_channel_name(const char *prefix, size_t prefix_len, const char *ch,
                      size_t len, const char **name, size_t *name_len)
{
    size_t head = prefix_len + sizeof(CHANNEL_PREFIX) - 1;
    if (len < head + 1 || memcmp(ch, prefix, prefix_len) != 0 ||
        memcmp(ch + prefix_len, CHANNEL_PREFIX, sizeof(CHANNEL_PREFIX) - 1) ||
        ch[len - 1] != '}')
        return -1;
    *name = ch + head;
    *name_len = len - head - 1;
    return 0;
}
