/* SPDX-License-Identifier: BSD-3-Clause */
/* reply.h -- turn Redis replies into hilock results.
 *
 * Pure functions over hiredis reply objects: no I/O, no loop. Each returns 0
 * or a negative HILOCK_E* code and never trusts the reply's shape. */
#ifndef HILOCK_REPLY_H
#define HILOCK_REPLY_H

#include <stddef.h>
#include <stdint.h>

struct redisReply;

/* The code for the text of a server error, s of length n (HILOCK_ESERVER
 * when unrecognised). */
int reply_error_text_code(const char *s, size_t n);
/* Room for reply_error_scrub's text. */
#define REPLY_SCRUB_MAX 208
/* The server error text s (length n) fit for a log: the server echoes
 * arguments, an owner field or a password among them, in some errors
 * ("ERR unknown command 'X', with args beginning with: ..."). What follows
 * "with args beginning with:" is dropped, and every quoted span but a
 * command's name becomes '...'; control bytes become '?'. Written to out
 * (cap bytes, NUL-terminated, at most 200 bytes of text kept), which is
 * returned. */
const char *reply_error_scrub(const char *s, size_t n, char *out,
                              size_t cap);
/* The code for an error reply (HILOCK_ESERVER when unrecognised). */
int reply_error_code(const struct redisReply *r);
/* Nonzero when r is a NOSCRIPT error. */
int reply_is_noscript(const struct redisReply *r);
/* Whether r refuses EVALSHA itself (an ACL without it, a renamed
 * command): the server's error names the command, quoted. */
int reply_evalsha_refused(const struct redisReply *r);
/* Whether error reply r to a plain command (see plain.c) says that the
 * server does not take such commands at all -- unknown or renamed, an
 * ACL's NOPERM, EXEC without MULTI -- rather than that it refused this
 * one (BUSYKEY, EXECABORT, OOM, READONLY, ...). */
int reply_plain_refused(const struct redisReply *r);
/* Whether r is RESTORE's refusal of a key that exists (BUSYKEY). */
int reply_busykey(const struct redisReply *r);
/* Whether r, the reply to a waiter's plain attempt (EXEC of RESTORE, PTTL
 * and HMGET: see wire_look), leaves the decision to the acquire
 * script: the RESTORE was refused and the lock is not simply another
 * owner's (the owner's own field, another kind's mark or the fair queue's
 * marker is there, or the HMGET was refused: a key of another type), or
 * the reply is not of that shape. */
int reply_look_defers(const struct redisReply *r);

/* An error that asks for the command to go elsewhere (a cluster's
 * redirect) or later. */
enum reply_redirect_kind {
    REPLY_NOT_REDIRECT = 0,
    REPLY_MOVED,   /* the slot lives on host:port now */
    REPLY_ASK,     /* this once, on host:port after ASKING */
    REPLY_RETRY    /* TRYAGAIN, CLUSTERDOWN or LOADING (a restarted server
                      still reading its data): the same node, a bit later */
};
struct reply_redirect {
    unsigned slot;
    int port;
    char host[256];
};
/* The kind of r, with *to filled for MOVED and ASK ("MOVED <slot>
 * <host>:<port>"; a malformed one is REPLY_NOT_REDIRECT). An empty host
 * means the node that answered. */
enum reply_redirect_kind reply_redirect(const struct redisReply *r,
                                        struct reply_redirect *to);

/* acquire script: 0 with *holds and *token set when acquired; HILOCK_EBUSY
 * with *ttl_ms (-1 when the holder has no expiry) when held by another.
 * RESTORE's OK (the plain acquire) is one hold, token 0, and so is a
 * waiter's plain attempt whose RESTORE took the lock; one that found
 * another owner's hold (reply_look_defers false) is HILOCK_EBUSY with its
 * PTTL. */
int reply_acquire(const struct redisReply *r, int64_t *holds, int64_t *token,
                  int64_t *ttl_ms);
/* release script: 0 with *left (holds left) and *heard (subscribers that
 * received the release message) set, HILOCK_ENOTOWNER, or an error. */
int reply_release(const struct redisReply *r, int64_t *left, int64_t *heard);
/* The plain release, EXEC of HDEL and PUBLISH, or a quiet one's HDEL
 * alone (nobody heard it): as reply_release (0 holds left),
 * HILOCK_ENOTOWNER when HDEL removed nothing, or the error of either
 * command. */
int reply_release_plain(const struct redisReply *r, int64_t *left,
                        int64_t *heard);
/* Fair mode: a hand-off to a waiter of this client. The hold ends no
 * sooner than span_ms after sent_ms, the waiter's own clock when it sent
 * the request that queued it (see src/lua/lib/fair.lua). */
struct reply_handoff {
    uint64_t owner_tag;
    uint64_t wait_id;
    int64_t token;
    uint64_t sent_ms;
    uint64_t span_ms;
};
/* fair_release script: what success reply r says of a hand-off:
 * REPLY_HANDED_LOCAL with *h filled (a waiter of the caller's client got
 * the lock), REPLY_HANDED_ELSEWHERE, or REPLY_HANDED_NONE. */
enum { REPLY_HANDED_NONE = 0, REPLY_HANDED_LOCAL, REPLY_HANDED_ELSEWHERE };
int reply_release_handoff(const struct redisReply *r, struct reply_handoff *h);
/* A hand-off message "<owner tag>:<wait id>:<token>:<sent>:<span>" (msg,
 * len): 0 with *h filled, or HILOCK_EPROTO. */
int reply_handoff_message(const char *msg, size_t len,
                          struct reply_handoff *h);
/* A "wake:<ms>" message (msg, len): 0 with *ms, or with *ms = -1 for a
 * bare "wake"; HILOCK_EPROTO for anything else. */
int reply_wake_message(const char *msg, size_t len, int64_t *ms);
/* multi_acquire script: 0 when every lock was taken, HILOCK_EBUSY with
 * *index (the lock held by another owner) and *ttl_ms (its PTTL). */
int reply_multi_acquire(const struct redisReply *r, int64_t *index,
                        int64_t *ttl_ms);
/* renew script for n locks (a string of n digits): 0 with ok[i] = 1
 * (renewed), 0 (gone) or 2 (the node could not tell: the key is not
 * served there);
 * HILOCK_ETIMEDOUT when it arrived after its deadline and did nothing. */
int reply_renew(const struct redisReply *r, size_t n, unsigned char *ok);
/* An integer reply; nil counts as nil_value. */
int reply_integer(const struct redisReply *r, int64_t nil_value, int64_t *v);

#endif
