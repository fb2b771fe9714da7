/* SPDX-License-Identifier: BSD-3-Clause */
/* server.c -- the redis-server a run talks to, and the bench's own
 * connections to it.
 *
 * Without --port the bench starts a throwaway redis-server through the test
 * harness (tests/redis_server.h: free loopback port, own directory, dies
 * with us). The blocking helpers are for the parent's setup and checks; the
 * reconnecting async connection (struct kv) runs critical sections inside
 * the workers' loops, next to the hilock client under test. */
#include "bench.h"

#include <errno.h>
#include <event2/event.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <hiredis/adapters/libevent.h>

#include "redis_server.h"

#define KV_RETRY_MS 50

int bench_server_up(struct bench *b, const char *const *args)
{
    if (b->o.port) {
        b->host = b->o.host ? b->o.host : "127.0.0.1";
        b->port = b->o.port;
        redisContext *rc = bench_connect(b, 2000);
        long long ok = rc ? bench_int(rc, "DBSIZE", NULL) : LLONG_MIN;
        if (rc)
            redisFree(rc);
        return ok == LLONG_MIN ? -1 : 0;
    }
    if (rs_init() != 0 || !(b->srv = rs_start(args))) {
        fprintf(stderr, "hilock-bench: could not start redis-server\n");
        return -1;
    }
    b->host = "127.0.0.1";
    b->port = rs_port(b->srv);
    return 0;
}

void bench_server_down(struct bench *b)
{
    rs_stop(b->srv);
    b->srv = NULL;
}

redisContext *bench_connect(const struct bench *b, int timeout_ms)
{
    return bench_connect_at(b->host, b->port, timeout_ms);
}

redisContext *bench_connect_at(const char *host, int port, int timeout_ms)
{
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *rc = redisConnectWithTimeout(host, port, tv);
    if (!rc || rc->err || redisSetTimeout(rc, tv) != REDIS_OK) {
        fprintf(stderr, "hilock-bench: cannot connect to %s:%d: %s\n",
                host, port, rc ? rc->errstr : "out of memory");
        if (rc)
            redisFree(rc);
        return NULL;
    }
    return rc;
}

redisReply *bench_cmdv(redisContext *rc, int argc, const char **argv,
                       const size_t *lens)
{
    redisReply *r = redisCommandArgv(rc, argc, argv, lens);
    if (!r)
        fprintf(stderr, "hilock-bench: %s: %s\n", argv[0], rc->errstr);
    return r;
}

/* Collect a NULL-terminated list of strings after cmd into argv (at most
 * max). Returns argc. */
static int collect_args(const char **argv, int max, const char *cmd,
                        va_list ap)
{
    int argc = 0;
    argv[argc++] = cmd;
    for (const char *a; argc < max && (a = va_arg(ap, const char *));)
        argv[argc++] = a;
    return argc;
}

redisReply *bench_cmd(redisContext *rc, const char *cmd, ...)
{
    const char *argv[32];
    va_list ap;
    va_start(ap, cmd);
    int argc = collect_args(argv, 32, cmd, ap);
    va_end(ap);
    return bench_cmdv(rc, argc, argv, NULL);
}

long long bench_int(redisContext *rc, const char *cmd, ...)
{
    const char *argv[32];
    va_list ap;
    va_start(ap, cmd);
    int argc = collect_args(argv, 32, cmd, ap);
    va_end(ap);
    redisReply *r = bench_cmdv(rc, argc, argv, NULL);
    long long v = LLONG_MIN;
    if (r && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    else if (r && (r->type == REDIS_REPLY_STRING ||
                   r->type == REDIS_REPLY_STATUS))
        v = strtoll(r->str, NULL, 10);
    else if (r && r->type == REDIS_REPLY_ERROR)
        fprintf(stderr, "hilock-bench: %s: %s\n", cmd, r->str);
    if (r)
        freeReplyObject(r);
    return v;
}

int bench_cmdstat(redisContext *rc, const char *name, long long *calls,
                  long long *usec)
{
    redisReply *r = bench_cmd(rc, "INFO", "commandstats", NULL);
    char needle[64];
    if (!r || r->type != REDIS_REPLY_STRING) {
        if (r)
            freeReplyObject(r);
        return -1;
    }
    snprintf(needle, sizeof needle, "cmdstat_%s:calls=", name);
    const char *p = strstr(r->str, needle);
    *calls = p ? strtoll(p + strlen(needle), NULL, 10) : 0;
    const char *u = p ? strstr(p, ",usec=") : NULL;
    if (usec)
        *usec = u ? strtoll(u + 6, NULL, 10) : 0;
    freeReplyObject(r);
    return 0;
}

/* UNLINK every key matching pattern, SCAN by SCAN. 0 or -1. */
static int unlink_matching(redisContext *rc, const char *pattern)
{
    char cursor[32] = "0";
    do {
        redisReply *r = bench_cmd(rc, "SCAN", cursor, "MATCH", pattern,
                                  "COUNT", "1000", NULL);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
            if (r)
                freeReplyObject(r);
            return -1;
        }
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        redisReply *keys = r->element[1];
        if (keys->elements > 0) {
            const char **argv = malloc((keys->elements + 1) * sizeof(*argv));
            size_t *lens = malloc((keys->elements + 1) * sizeof(*lens));
            argv[0] = "UNLINK";
            lens[0] = 6;
            for (size_t i = 0; i < keys->elements; i++) {
                argv[i + 1] = keys->element[i]->str;
                lens[i + 1] = keys->element[i]->len;
            }
            redisReply *d = bench_cmdv(rc, (int)keys->elements + 1, argv, lens);
            if (d)
                freeReplyObject(d);
            free(argv);
            free(lens);
        }
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    return 0;
}

int bench_reset(struct bench *b, redisContext *rc, const char *const *extra)
{
    if (b->srv) {
        long long ok = bench_int(rc, "FLUSHALL", NULL);
        return ok == LLONG_MIN ? -1 : 0;
    }
    for (int i = 0; extra && extra[i]; i++) {
        redisReply *r = bench_cmd(rc, "UNLINK", extra[i], NULL);
        if (!r)
            return -1;
        freeReplyObject(r);
    }
    return unlink_matching(rc, "*" BENCH_PREFIX "*");
}

int bench_script_load(redisContext *rc, const char *body, size_t len,
                      char *sha)
{
    const char *argv[3] = {"SCRIPT", "LOAD", body};
    size_t lens[3] = {6, 4, len};
    redisReply *r = bench_cmdv(rc, 3, argv, lens);
    int ok = r && r->type == REDIS_REPLY_STRING && r->len == 40;
    if (ok)
        memcpy(sha, r->str, 41);
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

int bench_uuid(char *buf)
{
    unsigned char u[16];
    if (getrandom(u, sizeof u, 0) != (ssize_t)sizeof u)
        return -1;
    u[6] = (unsigned char)((u[6] & 0x0f) | 0x40);
    u[8] = (unsigned char)((u[8] & 0x3f) | 0x80);
    snprintf(buf, 37,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
             "%02x%02x%02x%02x%02x%02x",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
             u[10], u[11], u[12], u[13], u[14], u[15]);
    return 0;
}

int bench_hex(char *buf, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    unsigned char r[64];
    if (n > 2 * sizeof r ||
        getrandom(r, (n + 1) / 2, 0) != (ssize_t)((n + 1) / 2))
        return -1;
    for (size_t i = 0; i < n; i++)
        buf[i] = digits[(r[i / 2] >> (i % 2 ? 0 : 4)) & 0xf];
    buf[n] = '\0';
    return 0;
}

/* ---- struct kv: a raw async connection that reconnects ----------------- */

struct kv {
    struct event_base *base;
    char *host;
    int port;
    redisAsyncContext *ac; /* NULL while down */
    int connected;
    struct event *retry;
    struct event *flush; /* writes what kv_cmd handed over (kv_cmd) */
    int flush_pending;
};

static void kv_connect(struct kv *kv);

static void kv_schedule(struct kv *kv)
{
    struct timeval tv = {0, KV_RETRY_MS * 1000};
    evtimer_add(kv->retry, &tv);
}

static void kv_on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    kv_connect(arg);
}

static void kv_on_connect(const redisAsyncContext *ac, int status)
{
    struct kv *kv = ac->data;
    if (!kv)
        return;
    if (status == REDIS_OK) {
        kv->connected = 1;
        return;
    }
    kv->ac = NULL; /* hiredis frees it after this callback */
    kv_schedule(kv);
}

static void kv_on_disconnect(const redisAsyncContext *ac, int status)
{
    struct kv *kv = ac->data;
    (void)status;
    if (!kv)
        return;
    kv->ac = NULL;
    kv->connected = 0;
    kv_schedule(kv);
}

/* Start a connection attempt; on immediate failure try again later. */
static void kv_connect(struct kv *kv)
{
    redisAsyncContext *ac = redisAsyncConnect(kv->host, kv->port);
    if (!ac || ac->err) {
        if (ac)
            redisAsyncFree(ac);
        kv_schedule(kv);
        return;
    }
    ac->data = kv;
    redisLibeventAttach(ac, kv->base);
    redisAsyncSetConnectCallback(ac, kv_on_connect);
    redisAsyncSetDisconnectCallback(ac, kv_on_disconnect);
    kv->ac = ac;
}

static void kv_on_flush(evutil_socket_t fd, short what, void *arg)
{
    struct kv *kv = arg;
    (void)fd;
    (void)what;
    kv->flush_pending = 0;
    if (kv->ac && kv->connected)
        redisAsyncHandleWrite(kv->ac);
}

struct kv *kv_new(struct event_base *base, const char *host, int port)
{
    struct kv *kv = calloc(1, sizeof(*kv));
    if (!kv || !(kv->host = strdup(host)) ||
        !(kv->retry = evtimer_new(base, kv_on_retry, kv)) ||
        !(kv->flush = event_new(base, -1, 0, kv_on_flush, kv))) {
        if (kv) {
            if (kv->retry)
                event_free(kv->retry);
            free(kv->host);
        }
        free(kv);
        return NULL;
    }
    kv->base = base;
    kv->port = port;
    kv_connect(kv);
    return kv;
}

int kv_cmd(struct kv *kv, redisCallbackFn *fn, void *arg, int argc,
           const char **argv, const size_t *lens)
{
    if (!kv->ac || !kv->connected ||
        redisAsyncCommandArgv(kv->ac, fn, arg, argc, argv, lens) != REDIS_OK)
        return -1;
    /* it leaves once the running callbacks are done, as hilock's requests
     * do, not on the loop's next poll: the sections cost what they cost */
    if (!kv->flush_pending) {
        kv->flush_pending = 1;
        event_active(kv->flush, 0, 1);
    }
    return 0;
}

int kv_up(const struct kv *kv)
{
    return kv->ac && kv->connected;
}

int kv_wait_up(struct event_base *base, const struct kv *kv)
{
    struct timeval tv = {0, 20000};
    for (int i = 0; i < 250 && !kv_up(kv); i++) {
        event_base_loopexit(base, &tv);
        event_base_dispatch(base);
    }
    return kv_up(kv) ? 0 : -1;
}

void kv_free(struct kv *kv)
{
    if (!kv)
        return;
    event_free(kv->retry);
    event_free(kv->flush);
    if (kv->ac) {
        redisAsyncContext *ac = kv->ac;
        ac->data = NULL;
        kv->ac = NULL;
        redisAsyncFree(ac);
    }
    free(kv->host);
    free(kv);
}
