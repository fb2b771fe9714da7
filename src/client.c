/* client.c -- client lifecycle: options, owner id, connection, teardown.
 *
 * Teardown may be requested from inside a callback that hilock is running;
 * every loop callback into hilock is bracketed by client_enter/client_leave,
 * and hilock_client_free() called at depth > 0 only marks the client. The
 * outermost client_leave() then tears it down, so no code above it on the
 * stack ever touches freed memory. */
#include "client.h"
#include "wait.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <event2/event.h>

/* Longest hilock_client_free() blocks to deliver requests already sent. */
#define CLIENT_DRAIN_MS 1000

void hilock_options_init(struct hilock_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof(*opts));
    opts->host = "127.0.0.1";
    opts->port = 6379;
    opts->connect_timeout_ms = 2000;
    opts->request_timeout_ms = 2000;
    opts->watchdog_lease_ms = 30000;
    opts->reconnect_min_ms = 50;
    opts->reconnect_max_ms = 2000;
}

void client_log(struct hilock_client *c, enum hilock_log_level level,
                const char *fmt, ...)
{
    char line[320];
    va_list ap;
    if (!c->opts.log_cb)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    c->opts.log_cb(level, line, c->opts.log_arg);
}

/* Reject options no client could work with. */
static int options_check(const struct hilock_options *o)
{
    if (!o->unix_path && (!o->host || !*o->host || o->port <= 0 ||
                          o->port > 65535))
        return HILOCK_EINVAL;
    if (o->unix_path && !*o->unix_path)
        return HILOCK_EINVAL;
    if (o->db < 0 || o->connect_timeout_ms == 0 ||
        o->request_timeout_ms == 0 ||
        o->watchdog_lease_ms < HILOCK_WATCHDOG_MIN_MS ||
        o->watchdog_lease_ms > HILOCK_MS_MAX || o->reconnect_min_ms == 0 ||
        o->reconnect_max_ms < o->reconnect_min_ms)
        return HILOCK_EINVAL;
    if (o->username && !o->password)
        return HILOCK_EINVAL;
    return 0;
}

/* Copy the option strings into one block owned by the client. */
static int options_copy(struct hilock_client *c, const struct hilock_options *o)
{
    const char *src[5] = {o->host, o->unix_path, o->username, o->password,
                          o->key_prefix};
    const char **dst[5] = {&c->opts.host, &c->opts.unix_path,
                           &c->opts.username, &c->opts.password,
                           &c->opts.key_prefix};
    size_t total = 1;
    for (int i = 0; i < 5; i++)
        total += src[i] ? strlen(src[i]) + 1 : 0;
    char *p = c->strings = malloc(total);
    if (!p)
        return HILOCK_ENOMEM;
    c->opts = *o;
    for (int i = 0; i < 5; i++) {
        *dst[i] = NULL;
        if (src[i]) {
            size_t n = strlen(src[i]) + 1;
            memcpy(p, src[i], n);
            *dst[i] = p;
            p += n;
        }
    }
    *p = '\0';
    c->prefix = c->opts.key_prefix ? c->opts.key_prefix : p;
    c->prefix_len = strlen(c->prefix);
    return 0;
}

/* Draw the 128-bit client id from the OS and format it as a UUID (v4);
 * draw apart from it the tag of release request ids, which end up in key
 * names that anyone allowed to SCAN can read, and the jitter seed. */
static int client_id_init(struct hilock_client *c)
{
    unsigned char b[32];
    size_t got = 0;
    while (got < sizeof(b)) {
        ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return HILOCK_ERANDOM;
        got += (size_t)n;
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(c->id, sizeof(c->id),
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
             "%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
             b[10], b[11], b[12], b[13], b[14], b[15]);
    for (int i = 0; i < 8; i++)
        snprintf(c->request_tag + 2 * i, 3, "%02x", b[16 + i]);
    memcpy(&c->rng, b + 24, sizeof(c->rng));
    c->rng |= 1;
    return 0;
}

/* Tell the user of a change of state, once per change: a failure with the
 * same cause as the last one reported is not news. */
void client_report(struct hilock_client *c, int state, int status)
{
    int *last = state <= HILOCK_STATE_DOWN ? c->reported : c->reported + 2;
    if (last[0] == state && last[1] == status)
        return;
    last[0] = state;
    last[1] = status;
    if (c->opts.state_cb && !c->closing)
        c->opts.state_cb(c, status, state, c->opts.state_arg);
}

/* Load every script as soon as the command connection is up, so EVALSHA
 * normally finds them; after a reconnect, verify the locks we hold. */
static void cmd_on_ready(struct conn *conn)
{
    for (int i = 0; i < SCRIPT_COUNT; i++)
        conn_load_script(conn, i);
    if (conn->connects > 1)
        watchdog_verify_all(conn->client);
    client_report(conn->client, HILOCK_STATE_UP, 0);
}

static void cmd_on_fail(struct conn *conn, int err)
{
    client_report(conn->client, HILOCK_STATE_DOWN, err);
}

int hilock_client_new(struct event_base *base,
                      const struct hilock_options *opts,
                      struct hilock_client **out)
{
    if (!base || !opts || !out)
        return HILOCK_EINVAL;
    int rc = options_check(opts);
    if (rc)
        return rc;
    struct hilock_client *c = calloc(1, sizeof(*c));
    if (!c)
        return HILOCK_ENOMEM;
    c->base = base;
    if ((rc = options_copy(c, opts)) || (rc = client_id_init(c)) ||
        (rc = waits_init(c))) {
        free(c->strings);
        free(c);
        return rc;
    }
    struct timeval tv = clock_tv(opts->request_timeout_ms);
    c->req_timeout = event_base_init_common_timeout(base, &tv);
    script_set_init(&c->scripts);
    owners_init(&c->owners);
    watchdog_init(c);
    conn_init(&c->cmd, c, "command");
    c->cmd.on_ready = cmd_on_ready;
    c->cmd.on_fail = cmd_on_fail;
    c->cmd.want_clock = 1;
    sub_init(c);
    conn_start(&c->cmd);
    *out = c;
    return 0;
}

int hilock_client_id(const struct hilock_client *client, char *buf,
                     size_t len)
{
    if (!client || !buf || len < sizeof(client->id))
        return HILOCK_EINVAL;
    memcpy(buf, client->id, sizeof(client->id));
    return 0;
}

/* Cancel everything, fire the callbacks, free all memory. */
static void client_teardown(struct hilock_client *c)
{
    c->closing = 1;
    c->depth++; /* callbacks fired below must not re-enter teardown */
    lock_cancel_all(c);
    conn_cancel_all(&c->cmd);
    conn_drain(&c->cmd, c->opts.request_timeout_ms < CLIENT_DRAIN_MS
                            ? c->opts.request_timeout_ms
                            : CLIENT_DRAIN_MS);
    conn_close(&c->cmd);
    conn_close(&c->sub);
    lock_free_all(c);
    owners_free(&c->owners);
    watchdog_release(c);
    waits_release(c);
    while (c->req_pool) {
        struct req *r = c->req_pool;
        c->req_pool = r->next;
        free(r);
    }
    free(c->strings);
    free(c);
}

void hilock_client_free(struct hilock_client *client)
{
    if (!client || client->closing)
        return;
    client->closing = 1;
    if (client->depth == 0)
        client_teardown(client);
}

void client_enter(struct hilock_client *c)
{
    c->depth++;
}

int client_leave(struct hilock_client *c)
{
    if (--c->depth == 0 && c->closing) {
        client_teardown(c);
        return 1;
    }
    return 0;
}
