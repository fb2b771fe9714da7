/* SPDX-License-Identifier: BSD-3-Clause */
/* reply_guard.c -- refuse the replies that would take the whole process down.
 *
 * hilock runs inside its user's server, so a misbehaving peer (a broken
 * proxy, something else listening on the Redis port, a tampered network)
 * may cost a connection, never the process. hiredis trusts its peer in a few
 * places, 0.14 and 1.x alike:
 *  - A reply that arrives when no command waits for one, on a connection
 *    that is not subscribed, hits an assert and aborts, unless it is an
 *    error reply (those close the connection).
 *  - On a subscribed connection a pub/sub reply is taken apart under
 *    asserts: a kind that is not a bulk string, an unsubscribe whose third
 *    element is not an integer; in 0.14 also a channel that is not a bulk
 *    string and fewer than 2 elements (and an unsubscribe's third element
 *    is read without a bounds check); in 1.x also a subscribe confirmation
 *    for a channel never subscribed. With asserts compiled out (NDEBUG)
 *    most of these turn into NULL dereferences instead.
 *  - An array's element pointers are calloc'ed when its header arrives:
 *    "*2147483647" maps 16 GiB before a single element was received.
 *  - 1.x (up to 1.4.0; 1.3.1 and 1.4.1 stop at 1024) nests arrays without
 *    a limit and frees replies recursively: a long run of "*1" exhausts
 *    memory, then the stack. 1.x also parses RESP3 types on a RESP2
 *    connection; a push reply changes how later pub/sub replies are
 *    dispatched and may be read out of bounds.
 * hiredis's reader builds every element through a table of functions, one
 * call per element as it arrives, before the reply is dispatched. This file
 * puts a table of its own in front: each function checks the element against
 * the connection's state and either builds it (from reply_pool.c when that
 * has it, else through hiredis's function) or returns NULL. A NULL fails the
 * reader (hiredis reports it as "Out of memory"), and hiredis then closes the
 * connection as after any read error: each pending callback runs once with a
 * NULL reply; hilock reconnects.
 *
 * Cost: on a command connection each element costs a comparison or two (a
 * callback waits for every reply hilock reads there); the pub/sub checks run
 * only for the first three elements of replies on the subscriber connection.
 *
 * Left to hiredis: a bulk string is buffered until all of it has arrived, so
 * a peer can make hiredis hold as many bytes as it sends, and no more. And
 * 0.14 hands a message for a channel it has no callback for to the callback
 * it ran last in the same read; the subscriber connection's callbacks all
 * ignore their privdata and check the reply, so that is harmless here. */
#include "reply_guard.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <hiredis/sds.h>

#include "hilock/hilock.h"
#include "hot.h"
#include "reply_pool.h"

/* Longest array accepted at any depth. hilock's longest reply is a renew
 * batch: one integer per lock, at most 512. */
#define GUARD_ELEMENTS_MAX ((size_t)1 << 20)
/* Deepest array accepted (a top-level array is at depth 1). hilock's replies
 * nest no arrays; hiredis 0.14 stops after depth 8 by itself. */
#define GUARD_DEPTH_MAX 7

#if HIREDIS_MAJOR >= 1
typedef size_t guard_count; /* createArray's element count */
/* Callbacks of commands other than (un)subscribe sent while subscribed. */
#define GUARD_SUB_WAITING(ac) ((ac)->sub.replies.head)
#else
typedef int guard_count;
#define GUARD_SUB_WAITING(ac) ((ac)->sub.invalid.head)
#endif

/* hiredis keeps the callback of each subscribed channel in a dict of its
 * own; dict.h is not installed. This is its layout, the same in 0.14.1 and
 * in 1.0.0 through 1.4.1, read here and never written. With another hiredis
 * the lookup is skipped and every subscribe confirmation is let through. */
#if (HIREDIS_MAJOR == 0 && HIREDIS_MINOR == 14) ||                            \
    (HIREDIS_MAJOR == 1 && HIREDIS_MINOR <= 4)
#define GUARD_DICT_LAYOUT_KNOWN 1
struct hdict_entry {
    void *key; /* an sds string */
    void *val;
    struct hdict_entry *next;
};
struct hdict {
    struct hdict_entry **table;
    void *type;
    unsigned long size;
    unsigned long sizemask;
    unsigned long used;
    void *privdata;
};
#endif

/* hiredis's own table. Every reader hiredis creates points at the same
 * static table inside libhiredis, so one pointer serves all contexts of all
 * clients. It is set once (compare-and-swap: clients may live on several
 * threads) and only read afterwards. */
static _Atomic(const redisReplyObjectFunctions *) hiredis_fns;

/* hiredis's table, once guard_attach() has stored it. */
static const redisReplyObjectFunctions *fns(void)
{
    return atomic_load_explicit(&hiredis_fns, memory_order_relaxed);
}

/* The reader's context; privdata is its address, with the low bit set
 * when its pub/sub replies are sharded. */
static const redisAsyncContext *ctx_of(const redisReadTask *t)
{
    return (const void *)((uintptr_t)t->privdata & ~(uintptr_t)1);
}

/* A sharded pub/sub kind (a top-level array's first element on a
 * subscriber connection that sent SSUBSCRIBE as hiredis's SUBSCRIBE; see
 * conn_send_as) renamed to the plain one that hiredis dispatches: *s and
 * *len are replaced when t is one. */
static void unshard(const redisReadTask *t, char **s, size_t *len)
{
    static const char *const kinds[][2] = {{"smessage", "message"},
                                           {"ssubscribe", "subscribe"},
                                           {"sunsubscribe", "unsubscribe"}};
    if (!((uintptr_t)t->privdata & 1) || t->idx != 0 || !t->parent ||
        t->parent->parent || ctx_of(t)->replies.head)
        return;
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        if (*len == strlen(kinds[i][0]) &&
            strncasecmp(*s, kinds[i][0], *len) == 0) {
            *s = (char *)kinds[i][1];
            *len = strlen(kinds[i][1]);
            return;
        }
    }
}

/* Whether hiredis's dict d holds the key s/len (exact bytes). A linear walk:
 * it runs once per subscribe confirmation, over this connection's channels. */
static int dict_has(const struct dict *d, const char *s, size_t len)
{
#ifdef GUARD_DICT_LAYOUT_KNOWN
    const struct hdict *h = (const struct hdict *)(const void *)d;
    for (unsigned long i = 0; i < h->size; i++)
        for (const struct hdict_entry *e = h->table[i]; e; e = e->next)
            if (sdslen((sds)e->key) == len && memcmp(e->key, s, len) == 0)
                return 1;
    return 0;
#else
    (void)d;
    (void)s;
    (void)len;
    return 1;
#endif
}

/* Whether the pub/sub kind k (a bulk string) is word, with or without the
 * leading "p" of the pattern variants, compared as hiredis compares it. */
static int kind_is(const redisReply *k, const char *word)
{
    const char *s = k->str;
    return strcasecmp(s + (tolower((unsigned char)s[0]) == 'p'), word) == 0;
}

/* Whether a top-level reply of the given type (elements: its length, for an
 * array) may be built: hiredis will hand it to a callback, close the
 * connection over it, or take it apart as a pub/sub reply. */
static int top_ok(const redisReadTask *t, int type, long long elements)
{
    const redisAsyncContext *ac = ctx_of(t);
    if (ac->replies.head || type == REDIS_REPLY_ERROR ||
        (ac->c.flags & REDIS_MONITORING))
        return 1;
    if (!(ac->c.flags & REDIS_SUBSCRIBED))
        return 0; /* nobody asked for it */
    if (type != REDIS_REPLY_ARRAY) /* 0.14 would rerun the last callback */
        return GUARD_SUB_WAITING(ac) != NULL;
    return elements >= 3; /* kind, channel, then a count or a payload */
}

/* Whether element t (index 0..2 of a top-level array; s/len its bytes when a
 * string) may be built. Only arrays that hiredis will take apart as pub/sub
 * replies are checked: no callback waits, and the context is subscribed. */
static int pubsub_ok(const redisReadTask *t, int type, const char *s,
                     size_t len)
{
    const redisAsyncContext *ac = ctx_of(t);
    if (ac->replies.head || !(ac->c.flags & REDIS_SUBSCRIBED))
        return 1;
    if (t->idx == 0)
        return type == REDIS_REPLY_STRING;
    const redisReply *kind = ((const redisReply *)t->parent->obj)->element[0];
    if (t->idx == 1) {
        if (type != REDIS_REPLY_STRING)
            return 0;
        if (!kind_is(kind, "subscribe"))
            return 1;
        int pattern = tolower((unsigned char)kind->str[0]) == 'p';
        return dict_has(pattern ? ac->sub.patterns : ac->sub.channels, s, len);
    }
    return type == REDIS_REPLY_INTEGER || !kind_is(kind, "unsubscribe");
}

/* The checks that depend on where element t sits. */
static int place_ok(const redisReadTask *t, int type, long long elements,
                    const char *s, size_t len)
{
    if (!t->parent)
        return top_ok(t, type, elements);
    if (!t->parent->parent && t->idx <= 2)
        return pubsub_ok(t, type, s, len);
    return 1;
}

/* Whether an array at t's place nests no deeper than GUARD_DEPTH_MAX. */
static int depth_ok(const redisReadTask *t)
{
    int depth = 1;
    for (const redisReadTask *p = t->parent; p; p = p->parent)
        if (++depth > GUARD_DEPTH_MAX)
            return 0;
    return 1;
}

/* Whether t is a whole reply that a callback waits for: hiredis hands it
 * to that callback, whatever it holds (no pub/sub reading, no renaming). */
static int awaited(const redisReadTask *t)
{
    return !t->parent && ctx_of(t)->replies.head;
}

/* A string element that is not a whole awaited reply: renamed when it is
 * a sharded pub/sub kind, then checked for its place. */
HILOCK_OUTLINE
static void *string_placed(const redisReadTask *t, char *s, size_t len)
{
    unshard(t, &s, &len);
    if (!place_ok(t, t->type, -1, s, len))
        return NULL;
    void *r = reply_pool_element(t, t->type, 0, s, len);
    return r ? r : fns()->createString(t, s, len);
}

/* The wrappers: each returns NULL (the reader fails), a reply of the pool
 * (reply_pool.c) or what hiredis's own function returns. They check before
 * building, because hiredis links each new element into its parent array at
 * once. */
HILOCK_HOT
static void *guard_string(const redisReadTask *t, char *s, size_t len)
{
    /* RESP3 verbatim strings and big numbers are refused in 1.x */
    if (t->type != REDIS_REPLY_STRING && t->type != REDIS_REPLY_STATUS &&
        t->type != REDIS_REPLY_ERROR)
        return NULL;
    if (!awaited(t)) /* the common case, a reply to a command, goes on */
        return string_placed(t, s, len);
    void *r = t->type == REDIS_REPLY_STATUS ? reply_pool_status(s, len) : NULL;
    return r ? r : fns()->createString(t, s, len);
}

HILOCK_HOT
static void *guard_array(const redisReadTask *t, guard_count n)
{
    /* RESP3 maps, sets and pushes are refused in 1.x */
    if ((size_t)n > GUARD_ELEMENTS_MAX || t->type != REDIS_REPLY_ARRAY ||
        (t->parent && !depth_ok(t)) ||
        !place_ok(t, REDIS_REPLY_ARRAY, (long long)n, NULL, 0))
        return NULL;
    void *r = awaited(t) ? reply_pool_array((size_t)n) : NULL;
    return r ? r : fns()->createArray(t, n);
}

HILOCK_HOT
static void *guard_integer(const redisReadTask *t, long long v)
{
    if (!place_ok(t, REDIS_REPLY_INTEGER, -1, NULL, 0))
        return NULL;
    void *r = awaited(t) ? reply_pool_integer(v)
                         : reply_pool_element(t, REDIS_REPLY_INTEGER, v, NULL,
                                              0);
    return r ? r : fns()->createInteger(t, v);
}

static void *guard_nil(const redisReadTask *t)
{
    if (!place_ok(t, REDIS_REPLY_NIL, -1, NULL, 0))
        return NULL;
    void *r = awaited(t) ? reply_pool_nil()
                         : reply_pool_element(t, REDIS_REPLY_NIL, 0, NULL, 0);
    return r ? r : fns()->createNil(t);
}

#if HIREDIS_MAJOR >= 1
/* RESP3 doubles and booleans: hilock speaks RESP2, a server never sends them
 * on a RESP2 connection. */
static void *guard_double(const redisReadTask *t, double d, char *s,
                          size_t len)
{
    return NULL;
}

static void *guard_bool(const redisReadTask *t, int b)
{
    return NULL;
}
#endif

/* hiredis reads through the pointer it is given and never writes. */
static const redisReplyObjectFunctions guard_fns = {
    .createString = guard_string,
    .createArray = guard_array,
    .createInteger = guard_integer,
#if HIREDIS_MAJOR >= 1
    .createDouble = guard_double,
    .createBool = guard_bool,
#endif
    .createNil = guard_nil,
    .freeObject = reply_pool_free,
};

int guard_attach(struct redisAsyncContext *ac, int sharded)
{
    redisReader *r = ac ? ac->c.reader : NULL;
    if (!r || !r->fn || r->fn->freeObject != freeReplyObject)
        return HILOCK_EINVAL; /* a reader of functions of its own */
    if (r->fn == &guard_fns)
        return 0;
    const redisReplyObjectFunctions *seen = NULL;
    if (!atomic_compare_exchange_strong(&hiredis_fns, &seen, r->fn) &&
        seen != r->fn)
        return HILOCK_EINVAL; /* a reader with functions of its own */
    r->privdata = (void *)((uintptr_t)ac | (sharded ? 1u : 0u));
    r->fn = (redisReplyObjectFunctions *)&guard_fns;
    return 0;
}
