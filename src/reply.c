/* SPDX-License-Identifier: BSD-3-Clause */
/* reply.c -- decoding of script and command replies.
 *
 * Everything Redis sends back passes through here, so this is the one place
 * where hiredis reply types and server error strings become hilock codes.
 * Errors raised inside a script arrive either with their own prefix (Redis 7)
 * or wrapped as "ERR Error running script ... : WRONGTYPE ..." (Redis <= 6);
 * Redis 6.2 and KeyDB keep the dash of an error a command raised inside the
 * script (": -READONLY ..."), so the known prefixes are searched for in all
 * three positions. */
#include "reply.h"

#include <hiredis/hiredis.h>
#include <string.h>

#include "hilock/hilock.h"
#include "hot.h"

static const struct {
    const char *prefix;
    int code;
} error_prefixes[] = {
    {"WRONGTYPE", HILOCK_EWRONGTYPE}, {"OOM", HILOCK_EOOM},
    {"READONLY", HILOCK_EREADONLY},   {"NOAUTH", HILOCK_EAUTH},
    {"WRONGPASS", HILOCK_EAUTH},      {"NOPERM", HILOCK_ENOPERM},
    {"DEADLK", HILOCK_EDEADLK}, /* the write_acquire script's refusal */
    {"WRONGKIND", HILOCK_EWRONGKIND}, /* a script met another kind's key */
    /* an ACL refusing a command a script called (Redis 6 and 7.0) */
    {"The user executing the script can't", HILOCK_ENOPERM},
    /* the same refusal as Redis 7.2 and later word it */
    {"ACL failure in script", HILOCK_ENOPERM},
    /* "Protocol error: unauthenticated multibulk length": a command of
     * more than 10 words before AUTH (a waiting or a fair acquire) */
    {"unauthenticated", HILOCK_EAUTH},
};

/* Nonzero when the error text s (length n) starts with word (after "ERR "
 * too), or has ": word" or ": -word" inside it (a script error wrapped by
 * an older server; the dash is the inner command's error reply marker). */
static int error_has(const char *s, size_t n, const char *word)
{
    size_t w = strlen(word);
    if ((n >= w && memcmp(s, word, w) == 0) ||
        (n >= w + 4 && memcmp(s, "ERR ", 4) == 0 &&
         memcmp(s + 4, word, w) == 0))
        return 1;
    for (size_t i = 0; i + 2 + w <= n; i++) {
        if (s[i] != ':' || s[i + 1] != ' ')
            continue;
        size_t at = i + 2 + (s[i + 2] == '-');
        if (at + w <= n && memcmp(s + at, word, w) == 0)
            return 1;
    }
    return 0;
}

int reply_error_text_code(const char *s, size_t n)
{
    for (size_t i = 0; i < sizeof(error_prefixes) / sizeof(error_prefixes[0]);
         i++)
        if (error_has(s, n, error_prefixes[i].prefix))
            return error_prefixes[i].code;
    return HILOCK_ESERVER;
}

/* Whether the quoted span s (length n, quotes excluded) is a command's
 * name ("EVALSHA", "client|setname"): the one kind kept by the scrub. */
static int scrub_keeps(const char *s, size_t n)
{
    if (n == 0 || n > 32)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              s[i] == '|' || s[i] == '_'))
            return 0;
    return 1;
}

/* Append p (length n) to out at *o, up to keep bytes, control bytes as
 * '?'. */
static void scrub_put(char *out, size_t *o, size_t keep, const char *p,
                      size_t n)
{
    for (size_t i = 0; i < n && *o < keep; i++)
        out[(*o)++] = (unsigned char)p[i] < ' ' ? '?' : p[i];
}

const char *reply_error_scrub(const char *s, size_t n, char *out,
                              size_t cap)
{
    static const char args[] = "with args beginning with:";
    size_t o = 0, keep = cap > 200 ? 200 : cap - 1;
    for (size_t i = 0; i < n && o < keep; i++) {
        if (n - i >= sizeof(args) - 1 &&
            memcmp(s + i, args, sizeof(args) - 1) == 0)
            n = i + sizeof(args) - 1; /* the arguments go */
        if (s[i] != '\'') {
            scrub_put(out, &o, keep, s + i, 1);
            continue;
        }
        const char *end = memchr(s + i + 1, '\'', n - i - 1);
        size_t len = end ? (size_t)(end - s) - i - 1 : n - i - 1;
        if (end && scrub_keeps(s + i + 1, len))
            scrub_put(out, &o, keep, s + i, len + 2);
        else
            scrub_put(out, &o, keep, "'...'", 5);
        i += len + (end ? 1 : 0);
    }
    out[o] = '\0';
    return out;
}

int reply_error_code(const struct redisReply *r)
{
    if (!r || r->type != REDIS_REPLY_ERROR || !r->str)
        return HILOCK_EPROTO;
    return reply_error_text_code(r->str, r->len);
}

int reply_is_noscript(const struct redisReply *r)
{
    return r && r->type == REDIS_REPLY_ERROR && r->str &&
           r->len >= 8 && memcmp(r->str, "NOSCRIPT", 8) == 0;
}

int reply_evalsha_refused(const struct redisReply *r)
{
    static const char word[] = "evalsha";
    if (!r || r->type != REDIS_REPLY_ERROR || !r->str)
        return 0;
    for (size_t i = 0; i + 9 <= r->len; i++) {
        const char *s = r->str + i;
        if ((s[0] != '\'' && s[0] != '`') || s[8] != s[0])
            continue;
        size_t k = 0;
        while (k < 7 && (s[1 + k] | 0x20) == word[k])
            k++;
        if (k == 7)
            return 1;
    }
    return 0;
}

int reply_plain_refused(const struct redisReply *r)
{
    /* The generic ERR: an unknown command, a payload this server cannot
     * read, EXEC without the MULTI an ACL refused. The others have a word
     * of their own: BUSYKEY (RESTORE onto a key that exists), EXECABORT (a
     * command of the transaction refused or redirected: a cluster's
     * MOVED), LOADING, OOM, ... */
    return reply_error_code(r) == HILOCK_ENOPERM ||
           (r && r->type == REDIS_REPLY_ERROR && r->str && r->len >= 4 &&
            memcmp(r->str, "ERR ", 4) == 0);
}

/* Whether error text s (length n) starts with word and a space or ends. */
static int starts_with_word(const char *s, size_t n, const char *word)
{
    size_t w = strlen(word);
    return n >= w && memcmp(s, word, w) == 0 && (n == w || s[w] == ' ');
}

int reply_busykey(const struct redisReply *r)
{
    return r && r->type == REDIS_REPLY_ERROR && r->str &&
           starts_with_word(r->str, r->len, "BUSYKEY");
}

/* Whether r is RESTORE's OK. */
static int restored(const struct redisReply *r)
{
    return r && r->type == REDIS_REPLY_STATUS && r->len == 2 &&
           memcmp(r->str, "OK", 2) == 0;
}

/* A waiter's plain attempt answered (see reply_look_defers): 1 when its
 * RESTORE took the lock; 0 when another owner holds it (with nothing the
 * script would read), its PTTL in *ttl_ms; -1 otherwise. */
HILOCK_COLD
static int look_of(const struct redisReply *r, int64_t *ttl_ms)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        !r->element || !r->element[0] || !r->element[1] || !r->element[2])
        return -1;
    if (restored(r->element[0]))
        return 1;
    const struct redisReply *p = r->element[1], *v = r->element[2];
    if (!reply_busykey(r->element[0]) || p->type != REDIS_REPLY_INTEGER ||
        p->integer < -1 || v->type != REDIS_REPLY_ARRAY || v->elements != 3)
        return -1;
    for (size_t i = 0; i < 3; i++)
        if (!v->element[i] || v->element[i]->type != REDIS_REPLY_NIL)
            return -1;
    *ttl_ms = p->integer;
    return 0;
}

int reply_look_defers(const struct redisReply *r)
{
    int64_t ttl;
    return look_of(r, &ttl) < 0;
}

enum reply_redirect_kind reply_redirect(const struct redisReply *r,
                                        struct reply_redirect *to)
{
    if (!r || r->type != REDIS_REPLY_ERROR || !r->str)
        return REPLY_NOT_REDIRECT;
    const char *s = r->str;
    size_t n = r->len;
    if (starts_with_word(s, n, "TRYAGAIN") ||
        starts_with_word(s, n, "CLUSTERDOWN") ||
        starts_with_word(s, n, "LOADING"))
        return REPLY_RETRY;
    enum reply_redirect_kind kind =
        starts_with_word(s, n, "MOVED") ? REPLY_MOVED
        : starts_with_word(s, n, "ASK") ? REPLY_ASK
                                        : REPLY_NOT_REDIRECT;
    if (kind == REPLY_NOT_REDIRECT)
        return kind;
    /* "<KIND> <slot> <host>:<port>"; the host may hold ':' (IPv6) */
    const char *p = memchr(s, ' ', n), *end = s + n;
    const char *q = p ? memchr(p + 1, ' ', (size_t)(end - p - 1)) : NULL;
    if (!q)
        return REPLY_NOT_REDIRECT;
    unsigned long slot = 0;
    for (const char *c = p + 1; c < q; c++) {
        if (*c < '0' || *c > '9' ||
            (slot = slot * 10 + (unsigned long)(*c - '0')) >= 16384)
            return REPLY_NOT_REDIRECT;
    }
    const char *colon = NULL;
    for (const char *c = q + 1; c < end; c++)
        if (*c == ':')
            colon = c;
    size_t hlen = colon ? (size_t)(colon - q - 1) : 0;
    long port = 0;
    /* an empty host: the node that answered (unknown-endpoint) */
    if (q == p + 1 || !colon || hlen >= sizeof(to->host) || colon + 1 == end)
        return REPLY_NOT_REDIRECT;
    for (const char *c = colon + 1; c < end; c++) {
        if (*c < '0' || *c > '9' || (port = port * 10 + (*c - '0')) > 65535)
            return REPLY_NOT_REDIRECT;
    }
    memcpy(to->host, q + 1, hlen);
    to->host[hlen] = '\0';
    to->slot = (unsigned)slot;
    to->port = (int)port;
    return kind;
}

/* The result of a reply that is not of the expected type. */
static int unexpected(const struct redisReply *r)
{
    return r && r->type == REDIS_REPLY_ERROR ? reply_error_code(r)
                                             : HILOCK_EPROTO;
}

HILOCK_HOT
int reply_acquire(const struct redisReply *r, int64_t *holds, int64_t *token,
                  int64_t *ttl_ms)
{
    if (!r)
        return HILOCK_EPROTO;
    int look = -1;
    if (restored(r) || (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
                        (look = look_of(r, ttl_ms)) > 0)) {
        *holds = 1; /* RESTORE made the lock: one hold */
        *token = 0;
        return 0;
    }
    if (look == 0)
        return HILOCK_EBUSY; /* a waiter's plain attempt: held */
    if (r->type == REDIS_REPLY_INTEGER) {
        if (r->integer < -1)
            return HILOCK_EPROTO;
        *ttl_ms = r->integer;
        return HILOCK_EBUSY;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !r->element ||
        !r->element[0] || !r->element[1] ||
        r->element[0]->type != REDIS_REPLY_INTEGER ||
        r->element[1]->type != REDIS_REPLY_INTEGER ||
        r->element[0]->integer < 1 || r->element[1]->integer < 0)
        return unexpected(r);
    *holds = r->element[0]->integer;
    *token = r->element[1]->integer;
    return 0;
}

int reply_release(const struct redisReply *r, int64_t *left, int64_t *heard)
{
    if (r && r->type == REDIS_REPLY_NIL)
        return HILOCK_ENOTOWNER;
    if (!r || r->type != REDIS_REPLY_ARRAY ||
        (r->elements != 2 && r->elements != 3 && r->elements != 7) ||
        !r->element ||
        !r->element[0] || !r->element[1] ||
        r->element[0]->type != REDIS_REPLY_INTEGER ||
        r->element[1]->type != REDIS_REPLY_INTEGER ||
        r->element[0]->integer < 0 || r->element[1]->integer < 0)
        return unexpected(r);
    if (r->elements > 2 &&
        !reply_release_handoff(r, &(struct reply_handoff){0, 0, 0, 0, 0}))
        return unexpected(r);
    *left = r->element[0]->integer;
    *heard = r->element[1]->integer;
    return 0;
}

HILOCK_HOT
int reply_release_plain(const struct redisReply *r, int64_t *left,
                        int64_t *heard)
{
    if (r && r->type == REDIS_REPLY_INTEGER && r->integer >= 0) {
        *left = *heard = 0; /* a quiet one: the HDEL alone */
        return r->integer > 0 ? 0 : HILOCK_ENOTOWNER;
    }
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        !r->element || !r->element[0] || !r->element[1])
        return unexpected(r);
    for (size_t i = 0; i < 2; i++) {
        const struct redisReply *e = r->element[i];
        if (e->type == REDIS_REPLY_ERROR)
            return reply_error_code(e);
        if (e->type != REDIS_REPLY_INTEGER || e->integer < 0)
            return HILOCK_EPROTO;
    }
    *left = 0;
    *heard = r->element[1]->integer;
    return r->element[0]->integer > 0 ? 0 : HILOCK_ENOTOWNER;
}

/* The decimal u64 in s (length n), into *v: 0, or -1 when it is none. */
static int parse_u64(const char *s, size_t n, uint64_t *v)
{
    uint64_t x = 0;
    if (n == 0 || n > 20)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || x > (UINT64_MAX - 9) / 10)
            return -1;
        x = x * 10 + (uint64_t)(s[i] - '0');
    }
    *v = x;
    return 0;
}

int reply_release_handoff(const struct redisReply *r, struct reply_handoff *h)
{
    const struct redisReply *const *e;
    uint64_t tag, wid, sent;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 3 || !r->element)
        return REPLY_HANDED_NONE;
    e = (const struct redisReply *const *)r->element;
    if (r->elements == 3)
        return e[2] && e[2]->type == REDIS_REPLY_INTEGER
                   ? REPLY_HANDED_ELSEWHERE
                   : REPLY_HANDED_NONE;
    if (r->elements != 7)
        return REPLY_HANDED_NONE;
    for (size_t i = 2; i < 7; i++)
        if (!e[i] || e[i]->type != (i < 4 || i == 5 ? REDIS_REPLY_STRING
                                                    : REDIS_REPLY_INTEGER))
            return REPLY_HANDED_NONE;
    if (parse_u64(e[2]->str, e[2]->len, &tag) ||
        parse_u64(e[3]->str, e[3]->len, &wid) ||
        parse_u64(e[5]->str, e[5]->len, &sent) || e[6]->integer < 0)
        return REPLY_HANDED_NONE;
    *h = (struct reply_handoff){tag, wid, e[4]->integer, sent,
                                (uint64_t)e[6]->integer};
    return REPLY_HANDED_LOCAL;
}

int reply_wake_message(const char *msg, size_t len, int64_t *ms)
{
    uint64_t v;
    if (len == 4 && memcmp(msg, "wake", 4) == 0) {
        *ms = -1;
        return 0;
    }
    if (len < 6 || memcmp(msg, "wake:", 5) != 0 ||
        parse_u64(msg + 5, len - 5, &v) != 0 || v > INT32_MAX)
        return HILOCK_EPROTO;
    *ms = (int64_t)v;
    return 0;
}

int reply_handoff_message(const char *msg, size_t len,
                          struct reply_handoff *h)
{
    uint64_t v[5];
    const char *p = msg, *end = msg + len;
    for (size_t i = 0; i < 5; i++) {
        const char *c = i < 4 ? memchr(p, ':', (size_t)(end - p)) : end;
        if (!c || parse_u64(p, (size_t)(c - p), &v[i]))
            return HILOCK_EPROTO;
        p = c + 1;
    }
    if (v[2] > INT64_MAX)
        return HILOCK_EPROTO;
    *h = (struct reply_handoff){v[0], v[1], (int64_t)v[2], v[3], v[4]};
    return 0;
}

int reply_multi_acquire(const struct redisReply *r, int64_t *index,
                        int64_t *ttl_ms)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        !r->element || !r->element[0] ||
        r->element[0]->type != REDIS_REPLY_INTEGER)
        return unexpected(r);
    if (r->element[0]->integer == 1 && r->elements == 1)
        return 0;
    if (r->element[0]->integer != -1 || r->elements != 3 ||
        !r->element[1] || !r->element[2] ||
        r->element[1]->type != REDIS_REPLY_INTEGER ||
        r->element[2]->type != REDIS_REPLY_INTEGER ||
        r->element[1]->integer < 0 || r->element[2]->integer < -1)
        return HILOCK_EPROTO;
    *index = r->element[1]->integer;
    *ttl_ms = r->element[2]->integer;
    return HILOCK_EBUSY;
}

int reply_renew(const struct redisReply *r, size_t n, unsigned char *ok)
{
    if (r && r->type == REDIS_REPLY_INTEGER && r->integer == -1)
        return HILOCK_ETIMEDOUT; /* reached Redis after its deadline */
    if (!r || r->type != REDIS_REPLY_STRING || r->len != n ||
        (n && !r->str))
        return unexpected(r);
    for (size_t i = 0; i < n; i++) {
        if (r->str[i] < '0' || r->str[i] > '2')
            return HILOCK_EPROTO;
        ok[i] = (unsigned char)(r->str[i] - '0');
    }
    return 0;
}

int reply_integer(const struct redisReply *r, int64_t nil_value, int64_t *v)
{
    if (r && r->type == REDIS_REPLY_NIL) {
        *v = nil_value;
        return 0;
    }
    if (r && r->type == REDIS_REPLY_STRING && r->str) {
        /* HGET returns the count as a bulk string. */
        int64_t x = 0;
        if (r->len == 0 || r->len > 18)
            return HILOCK_EPROTO;
        for (size_t i = 0; i < r->len; i++) {
            if (r->str[i] < '0' || r->str[i] > '9')
                return HILOCK_EPROTO;
            x = x * 10 + (r->str[i] - '0');
        }
        *v = x;
        return 0;
    }
    if (!r || r->type != REDIS_REPLY_INTEGER)
        return unexpected(r);
    *v = r->integer;
    return 0;
}
