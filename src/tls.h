/* SPDX-License-Identifier: BSD-3-Clause */
/* tls.h -- TLS for the connections (hiredis 1.x's hiredis_ssl with an
 * OpenSSL context of ours): one context per group of connections, built
 * once from struct hilock_tls, and a session per connection.
 *
 * Built without HILOCK_HAVE_TLS, tls_new() refuses every TLS setting and
 * the rest is never reached. */
#ifndef HILOCK_TLS_H
#define HILOCK_TLS_H

#include <stddef.h>

#include "hilock/hilock.h"

struct redisAsyncContext;
struct tls;

/* The contexts of a client: main for its Redis nodes, sentinel for its
 * sentinels (the same as main unless the options give the sentinels their
 * own settings); NULL where TLS is off. */
struct tls_set {
    struct tls *main;
    struct tls *sentinel;
};

/* Whether o's TLS settings can work: known modes, a key with a client
 * certificate and the other way round, no unix socket reached over TLS.
 * 0 or HILOCK_EINVAL. */
int tls_options_check(const struct hilock_options *o);
/* Build the contexts o asks for (see tls_new); 0, HILOCK_ENOMEM or
 * HILOCK_ETLS, with nothing left to free on failure. */
int tls_set_init(struct tls_set *ts, const struct hilock_options *o);
void tls_set_free(struct tls_set *ts);

/* Build the context for settings s (mode other than HILOCK_TLS_OFF): CAs,
 * client certificate and key read now. what names the group in the log
 * line ("tls" or "sentinel.tls"). Returns 0 and *out, HILOCK_ENOMEM, or
 * HILOCK_ETLS with one line through o's log callback (a file that cannot be
 * used, or no TLS support built in). */
int tls_new(struct tls **out, const struct hilock_tls *s,
            const struct hilock_options *o, const char *what);
/* Free a context of tls_new (NULL is ignored); sessions keep their own
 * reference to it. */
void tls_free(struct tls *t);
/* Start TLS on ac, a connection just opened to host: the handshake runs as
 * hiredis first reads and writes. *session is set to the session, valid
 * until ac is freed. Returns 0, or with ac->errstr set HILOCK_ETLS, or
 * HILOCK_ECONN when the connection failed under it (refused, reset). */
int tls_attach(const struct tls *t, struct redisAsyncContext *ac,
               const char *host, void **session);
/* The same on c, a blocking or non-blocking context just connected (a
 * blocking one does the handshake now); the same returns, c->errstr set. */
struct redisContext;
int tls_connect(const struct tls *t, struct redisContext *c,
                const char *host, void **session);
/* Whether a connection that was lost failed in TLS (the server's
 * certificate was refused, a TLS error or alert, or, when the handshake is
 * pending, the server closed after it had spoken TLS), with the reason in
 * why (len bytes). 0: lost for another reason (refused, reset, closed). */
int tls_failed(void *session, int pending, char *why, size_t len);

#endif
