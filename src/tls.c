/* SPDX-License-Identifier: BSD-3-Clause */
/* tls.c -- see tls.h.
 *
 * hiredis_ssl's own context checks the certificate chain but never the
 * server's name, so any certificate of the same CA would do. The context
 * and the sessions are therefore made here with OpenSSL and handed to
 * hiredis (redisInitiateSSL), with the name to check set on each session:
 * server_name when given, else the host connected to (an IP address is
 * matched against the certificate's IP addresses).
 *
 * hiredis reports a failed handshake as a plain I/O error ("Connection
 * reset by peer", or errno's text); the session tells what happened. */
#include "tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#if defined(HILOCK_HAVE_TLS) && HIREDIS_MAJOR < 1
#error "TLS needs hiredis 1.x (hiredis_ssl)"
#endif

#ifdef HILOCK_HAVE_TLS
#include <arpa/inet.h>
#include <hiredis/async.h>
#include <hiredis/hiredis_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#endif

/* Write one line to o's log callback. */
static void tls_log(const struct hilock_options *o, const char *what,
                    const char *msg, const char *arg, const char *detail)
{
    char line[320];
    if (!o->log_cb)
        return;
    snprintf(line, sizeof(line), "%s: %s%s%s%s%s", what, msg,
             arg ? " " : "", arg ? arg : "", detail ? ": " : "",
             detail ? detail : "");
    o->log_cb(HILOCK_LOG_ERROR, line, o->log_arg);
}

/* Whether the settings s are consistent by themselves. */
static int settings_ok(const struct hilock_tls *s)
{
    return (s->mode == HILOCK_TLS_OFF || s->mode == HILOCK_TLS_VERIFY ||
            s->mode == HILOCK_TLS_NO_VERIFY) &&
           !s->cert_file == !s->key_file;
}

/* Whether any of the n endpoints e is a unix socket. */
static int any_unix(const struct hilock_endpoint *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (e[i].unix_path)
            return 1;
    return 0;
}

int tls_options_check(const struct hilock_options *o)
{
    const struct hilock_tls *st = o->sentinel.tls_own ? &o->sentinel.tls
                                                      : &o->tls;
    int node = o->topology == HILOCK_TOPOLOGY_NODE;
    if (!settings_ok(&o->tls) || !settings_ok(&o->sentinel.tls))
        return HILOCK_EINVAL;
    if (o->tls.mode != HILOCK_TLS_OFF &&
        ((node && o->node.unix_path) ||
         (o->redlock.masters &&
          any_unix(o->redlock.masters, o->redlock.count)) ||
         (o->cluster.seeds && any_unix(o->cluster.seeds, o->cluster.count))))
        return HILOCK_EINVAL;
    if (st->mode != HILOCK_TLS_OFF && o->sentinel.nodes &&
        any_unix(o->sentinel.nodes, o->sentinel.count))
        return HILOCK_EINVAL;
    return 0;
}

int tls_set_init(struct tls_set *ts, const struct hilock_options *o)
{
    int rc = 0;
    ts->main = ts->sentinel = NULL;
    if (o->tls.mode != HILOCK_TLS_OFF)
        rc = tls_new(&ts->main, &o->tls, o, "tls");
    if (rc == 0 && o->sentinel.count && o->sentinel.tls_own &&
        o->sentinel.tls.mode != HILOCK_TLS_OFF)
        rc = tls_new(&ts->sentinel, &o->sentinel.tls, o, "sentinel.tls");
    else if (rc == 0 && !o->sentinel.tls_own)
        ts->sentinel = ts->main;
    if (rc)
        tls_set_free(ts);
    return rc;
}

void tls_set_free(struct tls_set *ts)
{
    if (ts->sentinel != ts->main)
        tls_free(ts->sentinel);
    tls_free(ts->main);
    ts->main = ts->sentinel = NULL;
}

#ifndef HILOCK_HAVE_TLS

int tls_new(struct tls **out, const struct hilock_tls *s,
            const struct hilock_options *o, const char *what)
{
    (void)s;
    *out = NULL;
    tls_log(o, what,
            "this hilock was built without TLS support (it needs hiredis "
            "1.x with hiredis_ssl)",
            NULL, NULL);
    return HILOCK_ETLS;
}

void tls_free(struct tls *t)
{
    (void)t;
}

int tls_connect(const struct tls *t, struct redisContext *c,
                const char *host, void **session)
{
    (void)t;
    (void)c;
    (void)host;
    *session = NULL;
    return HILOCK_ETLS;
}

int tls_attach(const struct tls *t, struct redisAsyncContext *ac,
               const char *host, void **session)
{
    (void)t;
    (void)ac;
    (void)host;
    *session = NULL;
    return HILOCK_ETLS;
}

int tls_failed(void *session, int pending, char *why, size_t len)
{
    (void)session;
    (void)pending;
    (void)why;
    (void)len;
    return 0;
}

#else

struct tls {
    SSL_CTX *ctx;
    char *server_name; /* NULL: check the host connected to */
};

/* The reason of OpenSSL's last error, for a log line. */
static const char *ssl_reason(void)
{
    unsigned long e = ERR_peek_last_error();
    const char *r = e ? ERR_reason_error_string(e) : NULL;
    return r ? r : "unknown reason";
}

/* Load the CAs and the client certificate of s into ctx; 0, or -1 with a
 * log line. */
static int tls_load(SSL_CTX *ctx, const struct hilock_tls *s,
                    const struct hilock_options *o, const char *what)
{
    if (s->ca_file || s->ca_dir) {
        if (SSL_CTX_load_verify_locations(ctx, s->ca_file, s->ca_dir) != 1) {
            tls_log(o, what, "cannot load the CAs of",
                    s->ca_file ? s->ca_file : s->ca_dir, ssl_reason());
            return -1;
        }
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        tls_log(o, what, "cannot load the system's CAs", NULL, ssl_reason());
        return -1;
    }
    if (!s->cert_file)
        return 0;
    if (SSL_CTX_use_certificate_chain_file(ctx, s->cert_file) != 1) {
        tls_log(o, what, "cannot load the certificate", s->cert_file,
                ssl_reason());
        return -1;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, s->key_file, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
        tls_log(o, what, "cannot use the key", s->key_file, ssl_reason());
        return -1;
    }
    return 0;
}

int tls_new(struct tls **out, const struct hilock_tls *s,
            const struct hilock_options *o, const char *what)
{
    struct tls *t = calloc(1, sizeof(*t));
    *out = NULL;
    if (!t || (s->server_name && !(t->server_name = strdup(s->server_name))) ||
        !(t->ctx = SSL_CTX_new(TLS_client_method()))) {
        tls_free(t);
        return HILOCK_ENOMEM;
    }
    ERR_clear_error();
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(t->ctx,
                       s->mode == HILOCK_TLS_VERIFY ? SSL_VERIFY_PEER
                                                    : SSL_VERIFY_NONE,
                       NULL);
    if (tls_load(t->ctx, s, o, what) != 0) {
        ERR_clear_error();
        tls_free(t);
        return HILOCK_ETLS;
    }
    *out = t;
    return 0;
}

void tls_free(struct tls *t)
{
    if (!t)
        return;
    SSL_CTX_free(t->ctx);
    free(t->server_name);
    free(t);
}

/* Set on ssl the name its server's certificate must carry, and SNI
 * (never an IP address). 1 on success. */
static int tls_set_name(SSL *ssl, const char *name)
{
    unsigned char addr[16];
    if (inet_pton(AF_INET, name, addr) == 1 ||
        inet_pton(AF_INET6, name, addr) == 1)
        return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name);
    return SSL_set_tlsext_host_name(ssl, name) && SSL_set1_host(ssl, name);
}

int tls_connect(const struct tls *t, redisContext *c, const char *host,
                void **session)
{
    const char *name = t->server_name ? t->server_name : host;
    SSL *ssl = SSL_new(t->ctx);
    int rc = HILOCK_ETLS;
    *session = NULL;
    ERR_clear_error();
    if (ssl && (!name || tls_set_name(ssl, name)) &&
        redisInitiateSSL(c, ssl) == REDIS_OK) {
        *session = ssl;
        return 0;
    }
    /* The handshake may fail at once (loopback, blocking): say why. A
     * connection refused or reset keeps hiredis's words. */
    if (ssl && !tls_failed(ssl, 1, c->errstr, sizeof(c->errstr)) && c->err)
        rc = HILOCK_ECONN;
    else if (!ssl || c->err == 0)
        snprintf(c->errstr, sizeof(c->errstr), "TLS setup: %s",
                 ssl_reason());
    if (!c->err)
        c->err = REDIS_ERR_OTHER;
    SSL_free(ssl); /* hiredis took it only on success */
    return rc;
}

int tls_attach(const struct tls *t, redisAsyncContext *ac, const char *host,
               void **session)
{
    int rc = tls_connect(t, &ac->c, host, session);
    if (rc != 0) {
        ac->err = ac->c.err;
        ac->errstr = ac->c.errstr;
    }
    return rc;
}

int tls_failed(void *session, int pending, char *why, size_t len)
{
    SSL *ssl = session;
    unsigned long e = ERR_peek_last_error();
    long v = SSL_get_verify_result(ssl);
    int ssl_error = e && ERR_GET_LIB(e) == ERR_LIB_SSL;
    /* Whether the server spoke TLS at all: without that, a refused or
     * reset connection is a connection failure. */
    int spoke = SSL_get_peer_cert_chain(ssl) || SSL_is_init_finished(ssl);
    int failed = 1;
    if (ssl_error && v != X509_V_OK &&
        (SSL_get_verify_mode(ssl) & SSL_VERIFY_PEER))
        snprintf(why, len, "TLS: server certificate refused: %s",
                 X509_verify_cert_error_string(v));
    else if (ssl_error)
        snprintf(why, len, "TLS: %s", ssl_reason()); /* e.g. an alert */
    else if (pending && spoke) /* a refused client certificate, often */
        snprintf(why, len, "TLS: closed by the server in the handshake");
    else
        failed = 0;
    ERR_clear_error();
    return failed;
}

#endif
