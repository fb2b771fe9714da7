/* SPDX-License-Identifier: BSD-3-Clause */
/* client.c -- the client: owner id, its topology and lock engine, the
 * state it reports, the handles it makes, teardown (its options are
 * checked and copied in options.c).
 *
 * Teardown may be requested from inside a callback that hilock is running;
 * every loop callback into hilock is bracketed by the reentry guard (see
 * reentry.h), and hilock_client_free() called inside one only marks the
 * client. The outermost leave then tears it down, so no code above it on
 * the stack ever touches freed memory. */
#include "client.h"

#include "clock.h"
#include "lock.h"
#include "multi.h"
#include "options.h"
#include "quorum.h"
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

/* Draw the 128-bit client id from the OS and format it as a UUID (v4),
 * the jitter seed, and the fair mode's listener tag (public: it names a
 * channel, so it is drawn apart from the secret id). */
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
    memcpy(&c->rng, b + 16, sizeof(c->rng));
    c->rng |= 1;
    for (size_t i = 0; i < 8; i++)
        snprintf(c->listener + 2 * i, 3, "%02x", b[24 + i]);
    memcpy(c->tag, b + 24, sizeof(c->tag));
    return 0;
}

/* Tell the user of a change of state, once per change: a failure with the
 * same cause as the last one reported is not news. node names the server
 * (NULL: the Sentinel master's name). */
static void client_report(struct hilock_client *c, enum hilock_state state,
                          int status, const char *node)
{
    int *last = state <= HILOCK_STATE_DOWN ? c->reported : c->reported + 2;
    if (last[0] == (int)state && last[1] == status)
        return;
    last[0] = (int)state;
    last[1] = status;
    if (!node)
        node = c->opts.sentinel.master_name ? c->opts.sentinel.master_name
                                            : "";
    if (c->opts.state_cb && !c->guard.closing)
        c->opts.state_cb(c, status, state, node, c->opts.state_arg);
}

/* The topology's news. The client is up while a majority of its members
 * is (its one node or cluster, or most Redlock masters). After a reconnect
 * or a failover the server may have lost every key: the locks held are
 * verified at once. */
/* Mark member i up or down; the number of members up now. */
static size_t members_set(struct hilock_client *c, size_t i, int up)
{
    size_t n = 0;
    c->up[i] = (uint8_t)up;
    for (size_t k = 0; k < c->eng.nnodes; k++)
        n += c->up[k];
    return n;
}

static void on_member_up(void *arg, size_t member, int reconnected,
                         const char *node)
{
    struct hilock_client *c = arg;
    size_t up = members_set(c, member, 1);
    c->eng.stats.reconnects += reconnected != 0;
    if (reconnected)
        watchdog_verify_all(&c->eng);
    if (up == quorum_of(c->eng.nnodes))
        client_report(c, HILOCK_STATE_UP, 0, node);
}

static void on_member_down(void *arg, size_t member, int err,
                           const char *node)
{
    struct hilock_client *c = arg;
    if (members_set(c, member, 0) < quorum_of(c->eng.nnodes))
        client_report(c, HILOCK_STATE_DOWN,
                      c->eng.nnodes == 1 ? err : HILOCK_ENOQUORUM, node);
}

static void on_pubsub_state(void *arg, int up, int err, const char *node)
{
    client_report(arg, up ? HILOCK_STATE_PUBSUB_UP : HILOCK_STATE_PUBSUB_DOWN,
                  err, node);
}

/* A release message, or a confirmed subscription (a release may have come
 * before it): the name's head waiter retries. */
static void on_release_news(void *arg, enum sub_kind kind, const char *name,
                            size_t len)
{
    struct hilock_client *c = arg;
    wait_on_message(&c->eng, kind, name, len);
}

/* Fair mode: a hand-off message for one of this client's waiters. */
static void on_handoff_news(void *arg, const char *name, size_t len,
                            const char *msg, size_t mlen)
{
    struct hilock_client *c = arg;
    wait_on_handoff(&c->eng, name, len, msg, mlen);
}

static void client_rewant(void *arg)
{
    struct hilock_client *c = arg;
    wait_rewant_all(&c->eng);
}

static void client_teardown(void *arg);
static void on_close_tick(evutil_socket_t fd, short what, void *arg);

/* Wire the client's parts together: the topology reports here, the
 * engine sends through it. */
static int client_assemble(struct hilock_client *c, struct event_base *base)
{
    struct timeval tv = clock_tv(c->opts.request_timeout_ms);
    int rc;
    reentry_init(&c->guard, client_teardown, c);
    evtimer_assign(&c->close_timer, base, on_close_tick, c);
    c->cfg = (struct conn_config){base, &c->opts,
                                  event_base_init_common_timeout(base, &tv),
                                  &c->rng, &c->guard, &c->eng.stats,
                                  &c->wire, c->tls.main, c->tls.sentinel,
                                  &c->scratch};
    resp_init(&c->scratch.buf, c->scratch.inline_data,
              sizeof(c->scratch.inline_data));
    c->events = (struct topo_events){c,
                                     on_member_up,
                                     on_member_down,
                                     on_pubsub_state,
                                     on_release_news,
                                     on_handoff_news,
                                     client_rewant,
                                     c->opts.fair ? c->listener : NULL};
    if ((rc = topo_init(&c->topo, &c->cfg, &c->opts, c->prefix,
                        c->prefix_len, &c->events)))
        return rc;
    c->eng.base = base;
    c->eng.opts = &c->opts;
    c->eng.topo = &c->topo;
    c->eng.nnodes = c->topo.members;
    script_set_init(&c->eng.scripts);
    c->eng.guard = &c->guard;
    c->eng.prefix = c->prefix;
    c->eng.prefix_len = c->prefix_len;
    c->eng.id = c->id;
    c->eng.listener = c->events.listener;
    c->eng.permit_prefix = c->tag;
    c->eng.rng = &c->rng;
    lock_engine_init(&c->eng);
    return multi_init(&c->eng);
}

/* hilock_client_new's arguments and options: 0, or HILOCK_EINVAL with
 * one line to opts->log_cb (when there is one) saying which and why. */
static int client_args_check(const struct event_base *base,
                             const struct hilock_options *opts,
                             struct hilock_client *const *out)
{
    char why[OPTIONS_WHY_MAX], line[OPTIONS_WHY_MAX + 32];
    if (!opts)
        return HILOCK_EINVAL;
    if (!base || !out)
        snprintf(line, sizeof(line), "invalid argument: %s: NULL",
                 base ? "out" : "base");
    else if (options_check(opts, why))
        snprintf(line, sizeof(line), "invalid option: %s", why);
    else
        return 0;
    if (opts->log_cb)
        opts->log_cb(HILOCK_LOG_ERROR, line, opts->log_arg);
    return HILOCK_EINVAL;
}

int hilock_client_new(struct event_base *base,
                      const struct hilock_options *opts,
                      struct hilock_client **out)
{
    int rc = client_args_check(base, opts, out);
    if (rc)
        return rc;
    struct hilock_client *c = calloc(1, sizeof(*c));
    if (!c)
        return HILOCK_ENOMEM;
    if ((rc = options_copy(c, opts)) || (rc = client_id_init(c)) ||
        (rc = tls_set_init(&c->tls, opts))) {
        free(c->strings);
        free(c);
        return rc;
    }
    if ((rc = client_assemble(c, base))) {
        topo_close(&c->topo, 0);
        lock_engine_free(&c->eng);
        tls_set_free(&c->tls);
        free(c->strings);
        free(c);
        return rc;
    }
    topo_start(&c->topo);
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
    return lock_new(&client->eng, name, name_len, owner_tag, KIND_MUTEX,
                    out);
}

int hilock_rwlock_new(struct hilock_client *client, const char *name,
                      size_t name_len, uint64_t owner_tag,
                      enum hilock_rw_side side, struct hilock_lock **out)
{
    if (!client || client->guard.closing ||
        (side != HILOCK_READ && side != HILOCK_WRITE))
        return HILOCK_EINVAL;
    return lock_new(&client->eng, name, name_len, owner_tag,
                    side == HILOCK_READ ? KIND_READ : KIND_WRITE, out);
}

int hilock_semaphore_new(struct hilock_client *client, const char *name,
                         size_t name_len, struct hilock_semaphore **out)
{
    struct hilock_lock *h = NULL;
    if (!client || client->guard.closing || !out)
        return HILOCK_EINVAL;
    int rc = lock_new(&client->eng, name, name_len, 0, KIND_SEM, &h);
    if (rc == 0)
        *out = public_sem(h);
    return rc;
}

int hilock_permit_new(struct hilock_client *client, const char *name,
                      size_t name_len, struct hilock_permit **out)
{
    struct hilock_lock *h = NULL;
    if (!client || client->guard.closing || !out)
        return HILOCK_EINVAL;
    int rc = lock_new(&client->eng, name, name_len, 0, KIND_PERMIT, &h);
    if (rc == 0)
        *out = public_permit(h);
    return rc;
}

int hilock_multi_new(struct hilock_client *client, const char *const *names,
                     const size_t *lens, size_t count, uint64_t owner_tag,
                     struct hilock_multi **out)
{
    if (!client || client->guard.closing)
        return HILOCK_EINVAL;
    return multi_new(&client->eng, names, lens, count, owner_tag, out);
}

/* How often a closing client looks whether its requests are answered. */
#define CLIENT_CLOSE_POLL_MS 2

/* Close the connections (waiting up to drain_ms, blocking, for what is in
 * flight) and free all memory. */
static void client_destroy(struct hilock_client *c, uint32_t drain_ms)
{
    topo_close(&c->topo, drain_ms);
    multi_free_all(&c->eng);
    lock_engine_free(&c->eng);
    event_del(&c->close_timer);
    tls_set_free(&c->tls);
    resp_free(&c->scratch.buf);
    free(c->strings);
    free(c);
}

/* hilock_client_close's wait: once every request sent is answered, or
 * its deadline passed, tell the user and free the client. */
static void on_close_tick(evutil_socket_t fd, short what, void *arg)
{
    struct hilock_client *c = arg;
    (void)fd;
    (void)what;
    if (c->wire > 0 && clock_now_ms() < c->close_deadline_ms) {
        struct timeval tv = clock_tv(CLIENT_CLOSE_POLL_MS);
        evtimer_add(&c->close_timer, &tv);
        return;
    }
    c->close_cb(c, c->close_arg);
    client_destroy(c, 0);
}

/* Cancel everything and fire the callbacks; then deliver what was sent
 * (blocking, or on the loop for hilock_client_close) and free all
 * memory. */
static void client_teardown(void *arg)
{
    struct hilock_client *c = arg;
    uint32_t drain = c->opts.request_timeout_ms < CLIENT_DRAIN_MS
                         ? c->opts.request_timeout_ms
                         : CLIENT_DRAIN_MS;
    multi_cancel_all(&c->eng);
    lock_cancel_all(&c->eng);
    if (!c->close_cb) {
        client_destroy(c, drain);
        return;
    }
    topo_cancel(&c->topo);
    struct timeval now = {0, 0};
    c->close_deadline_ms = clock_now_ms() + drain;
    evtimer_add(&c->close_timer, &now);
}

void hilock_client_free(struct hilock_client *client)
{
    if (client)
        reentry_close(&client->guard);
}

int hilock_client_close(struct hilock_client *client, hilock_close_cb *cb,
                        void *arg)
{
    if (!client || !cb || client->guard.closing)
        return HILOCK_EINVAL;
    client->close_cb = cb;
    client->close_arg = arg;
    reentry_close(&client->guard);
    return 0;
}
