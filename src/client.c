/* client.c -- the client: options, owner id, its node and lock engine,
 * the state it reports, teardown.
 *
 * Teardown may be requested from inside a callback that hilock is running;
 * every loop callback into hilock is bracketed by the reentry guard (see
 * reentry.h), and hilock_client_free() called inside one only marks the
 * client. The outermost leave then tears it down, so no code above it on
 * the stack ever touches freed memory. */
#include "client.h"

#include "clock.h"
#include "lock.h"
#include "wait.h"
#include "watchdog.h"

#include <errno.h>
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
static void client_report(struct hilock_client *c, int state, int status)
{
    int *last = state <= HILOCK_STATE_DOWN ? c->reported : c->reported + 2;
    if (last[0] == state && last[1] == status)
        return;
    last[0] = state;
    last[1] = status;
    if (c->opts.state_cb && !c->guard.closing)
        c->opts.state_cb(c, status, state, c->opts.state_arg);
}

/* The node's news. After a reconnect the server may have lost every key:
 * the locks held are verified at once. */
static void on_node_up(void *arg, int reconnected)
{
    struct hilock_client *c = arg;
    if (reconnected)
        watchdog_verify_all(&c->eng);
    client_report(c, HILOCK_STATE_UP, 0);
}

static void on_node_down(void *arg, int err)
{
    client_report(arg, HILOCK_STATE_DOWN, err);
}

static void on_pubsub_state(void *arg, int up, int err)
{
    client_report(arg, up ? HILOCK_STATE_PUBSUB_UP : HILOCK_STATE_PUBSUB_DOWN,
                  err);
}

/* A release message, or a confirmed subscription (a release may have come
 * before it): the name's head waiter retries. */
static void on_release_news(void *arg, const char *name, size_t len)
{
    struct hilock_client *c = arg;
    wait_on_message(&c->eng, name, len);
}

static void client_teardown(void *arg);

/* Wire the client's parts together: the node reports here, the engine
 * sends through the node. */
static void client_assemble(struct hilock_client *c, struct event_base *base)
{
    struct timeval tv = clock_tv(c->opts.request_timeout_ms);
    struct conn_endpoint ep = {c->opts.host, c->opts.port, c->opts.unix_path};
    reentry_init(&c->guard, client_teardown, c);
    c->cfg = (struct conn_config){base, &c->opts,
                                  event_base_init_common_timeout(base, &tv),
                                  &c->rng, &c->guard};
    c->events = (struct node_events){
        c, on_node_up, on_node_down,
        {c, on_release_news, on_release_news, on_pubsub_state}};
    node_init(&c->nodes[0], &c->cfg, &ep, c->prefix, c->prefix_len,
              &c->events);
    c->eng.base = base;
    c->eng.opts = &c->opts;
    c->eng.nodes = c->nodes;
    c->eng.nnodes = 1;
    c->eng.guard = &c->guard;
    c->eng.prefix = c->prefix;
    c->eng.prefix_len = c->prefix_len;
    c->eng.id = c->id;
    c->eng.request_tag = c->request_tag;
    lock_engine_init(&c->eng);
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
    if ((rc = options_copy(c, opts)) || (rc = client_id_init(c))) {
        free(c->strings);
        free(c);
        return rc;
    }
    client_assemble(c, base);
    node_start(&c->nodes[0]);
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

int hilock_lock_new(struct hilock_client *client, const char *name,
                    size_t name_len, uint64_t owner_tag,
                    struct hilock_lock **out)
{
    if (!client || client->guard.closing)
        return HILOCK_EINVAL;
    return lock_new(&client->eng, name, name_len, owner_tag, out);
}

/* Cancel everything, deliver what was sent, fire the callbacks, free all
 * memory. */
static void client_teardown(void *arg)
{
    struct hilock_client *c = arg;
    lock_cancel_all(&c->eng);
    node_close(&c->nodes[0], c->opts.request_timeout_ms < CLIENT_DRAIN_MS
                             ? c->opts.request_timeout_ms
                             : CLIENT_DRAIN_MS);
    lock_engine_free(&c->eng);
    free(c->strings);
    free(c);
}

void hilock_client_free(struct hilock_client *client)
{
    if (client)
        reentry_close(&client->guard);
}
