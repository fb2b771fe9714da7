/* subscribe.c -- the subscriber connection: one SUBSCRIBE per waited name.
 *
 * hiredis keeps one callback per subscribed channel and replaces it when a
 * channel is subscribed twice, and an UNSUBSCRIBE confirmation deletes it,
 * even if a new SUBSCRIBE for the same channel was sent in between. So the
 * channel table owns the subscription state, never has two (un)subscribe
 * commands in flight for one channel, and sends the next one only when the
 * previous one is confirmed. Every message and confirmation arrives in one
 * callback that finds the entry by the lock name inside the channel name.
 *
 * When the connection drops, every subscription is gone: entries fall back to
 * SUB_NONE (their fallback timers keep them going); when it is back, every
 * entry with waiters is subscribed again, and each confirmation lets its head
 * waiter retry once. */
#include <string.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "wait.h"

/* Send SUBSCRIBE or UNSUBSCRIBE for ch. Returns 0, or -1 when the
 * connection is not ready. */
static int sub_send(struct chan *ch, const char *cmd);

static void on_sub_reply(redisAsyncContext *ac, void *reply, void *privdata);

/* The entry is subscribed to nothing any more (connection gone). */
static void sub_reset(struct chan *ch)
{
    ch->sub = SUB_NONE;
    if (!ch->head)
        chan_drop(ch);
}

/* Subscribe every entry that has waiters; drop the others. */
static void sub_resubscribe(struct chan *ch)
{
    if (!ch->head)
        chan_drop(ch);
    else if (sub_send(ch, "SUBSCRIBE") == 0)
        ch->sub = SUB_PENDING;
}

static void sub_on_ready(struct conn *conn)
{
    chan_each(conn->client, sub_resubscribe);
}

static void sub_on_drop(struct conn *conn)
{
    chan_each(conn->client, sub_reset);
}

/* Waiters poll while this lasts (see wait.c); the cause goes to the user. */
static void sub_on_fail(struct conn *conn, int err)
{
    client_report(conn->client, HILOCK_STATE_PUBSUB_DOWN, err);
}

void sub_init(struct hilock_client *c)
{
    conn_init(&c->sub, c, "subscriber");
    c->sub.on_ready = sub_on_ready;
    c->sub.on_drop = sub_on_drop;
    c->sub.on_fail = sub_on_fail;
}

static int sub_send(struct chan *ch, const char *cmd)
{
    struct hilock_client *c = ch->client;
    struct key_src k = {c->prefix, c->prefix_len, ch->name, ch->name_len};
    char small[256];
    struct resp_buf b;
    resp_init(&b, small, sizeof(small));
    resp_array(&b, 2);
    resp_arg(&b, cmd, strlen(cmd));
    keys_channel(&b, &k);
    int rc = conn_send_with(&c->sub, &b, on_sub_reply);
    resp_release(&b);
    return rc;
}

void sub_want(struct chan *ch)
{
    struct conn *sub = &ch->client->sub;
    if (sub->state == CONN_IDLE && !evtimer_pending(&sub->retry_timer, NULL))
        conn_start(sub); /* first need: open the connection */
    if (ch->sub == SUB_NONE && sub_send(ch, "SUBSCRIBE") == 0)
        ch->sub = SUB_PENDING;
    /* SUB_LEAVING: the confirmation of the UNSUBSCRIBE subscribes again. */
}

void sub_unwant(struct chan *ch)
{
    if (ch->sub == SUB_LEAVING)
        return;
    if (ch->sub != SUB_NONE && sub_send(ch, "UNSUBSCRIBE") == 0)
        ch->sub = SUB_LEAVING;
    else
        sub_reset(ch);
}

/* Find the entry a pub/sub reply is about. */
static struct chan *reply_chan(struct hilock_client *c, const redisReply *r)
{
    const char *name;
    size_t len;
    const redisReply *ch = r->element[1];
    if (ch->type != REDIS_REPLY_STRING ||
        keys_channel_name(c->prefix, c->prefix_len, ch->str, ch->len, &name,
                          &len) != 0)
        return NULL;
    return chan_find(c, name, len);
}

/* Apply one "subscribe", "message" or "unsubscribe" reply to ch. */
static void sub_event(struct chan *ch, const char *kind)
{
    if (strcmp(kind, "message") == 0) {
        chan_wake(ch);
    } else if (strcmp(kind, "subscribe") == 0) {
        if (ch->sub == SUB_PENDING) {
            ch->sub = SUB_ACTIVE;
            conn_proven(&ch->client->sub);
            client_report(ch->client, HILOCK_STATE_PUBSUB_UP, 0);
            chan_wake(ch); /* closes the race with an earlier release */
        }
    } else if (strcmp(kind, "unsubscribe") == 0 && ch->sub == SUB_LEAVING) {
        ch->sub = SUB_NONE;
        if (!ch->head)
            chan_drop(ch);
        else if (sub_send(ch, "SUBSCRIBE") == 0)
            ch->sub = SUB_PENDING;
    }
}

static void on_sub_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    const redisReply *r = reply;
    struct conn *conn = ac->data;
    if (!conn || !r || r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
        r->element[0]->type != REDIS_REPLY_STRING)
        return; /* NULL: the context is going away; on_drop handles it */
    struct hilock_client *c = conn->client;
    client_enter(c);
    struct chan *ch = reply_chan(c, r);
    if (ch)
        sub_event(ch, r->element[0]->str);
    client_leave(c);
}
