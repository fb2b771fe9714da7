/* wait.c -- waiting acquires: one FIFO per lock name, one retry at a time.
 *
 * A busy acquire that may wait is parked in its name's FIFO, and the name's
 * channel is subscribed (once per name, see subscribe.c). Only the head
 * waiter ever has a request in flight, so N local waiters on one name cost
 * one retry, not N, and no connection or subscription of their own. The head
 * retries when
 *  - the subscription is confirmed (a release between the busy reply and the
 *    subscription would otherwise be missed),
 *  - a release is published on the channel, or done by this client,
 *  - its fallback timer fires at min(holder's PTTL, deadline): an expiring
 *    holder publishes nothing, and messages can be lost,
 *  - it becomes the head.
 * A wake-up that arrives while the head's retry is out is remembered and
 * honoured when the retry comes back busy. Each waiter has its own deadline
 * timer.
 *
 * Fairness between processes: the client that just released is awake and on
 * the CPU, so its own head waiter would win nearly every race against
 * waiters in other processes, which are still being woken. The release
 * script reports how many subscribers heard the release; when some of them
 * are elsewhere, this client's head waits WAIT_HANDOFF_YIELD_MS before its
 * retry. With no waiters elsewhere, nothing is delayed. */
#include <stdlib.h>
#include <string.h>

#include "wait.h"

/* Poll interval when the holder reported no expiry (PTTL -1). */
#define WAIT_NO_TTL_RETRY_MS 1000
/* While a name's channel is not subscribed (subscriber connection down, or
 * SUBSCRIBE denied by an ACL) no release message can wake its head: it
 * polls, from the first interval doubling up to the last. */
#define WAIT_POLL_FIRST_MS 100
#define WAIT_POLL_MAX_MS 1000
/* How long this client's waiters stand back after its own release when
 * waiters elsewhere heard it: a few loopback round trips, short enough to
 * cost little when nobody else takes the lock. */
#define WAIT_HANDOFF_YIELD_MS 2
/* Releases in a row that may hand the lock to this client's own waiters
 * while others wait elsewhere: local hand-offs are cheaper (no process
 * switch), so a short streak buys throughput at a bounded cost in fairness. */
#ifndef WAIT_LOCAL_STREAK_MAX
#define WAIT_LOCAL_STREAK_MAX 4
#endif

static uint32_t name_hash(const char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 16777619u;
    return h;
}

int waits_init(struct hilock_client *c)
{
    c->chans.nbuckets = 64;
    c->chans.count = 0;
    c->chans.buckets = calloc(c->chans.nbuckets, sizeof(struct chan *));
    return c->chans.buckets ? 0 : HILOCK_ENOMEM;
}

void waits_release(struct hilock_client *c)
{
    for (size_t i = 0; i < c->chans.nbuckets; i++) {
        while (c->chans.buckets[i]) {
            struct chan *ch = c->chans.buckets[i];
            c->chans.buckets[i] = ch->next;
            event_del(&ch->timer);
            free(ch);
        }
    }
    free(c->chans.buckets);
    c->chans.buckets = NULL;
}

struct chan *chan_find(struct hilock_client *c, const char *name,
                              size_t len)
{
    uint32_t h = name_hash(name, len);
    struct chan *ch = c->chans.buckets[h & (c->chans.nbuckets - 1)];
    for (; ch; ch = ch->next)
        if (ch->hash == h && ch->name_len == len &&
            memcmp(ch->name, name, len) == 0)
            return ch;
    return NULL;
}

/* Double the bucket array; on allocation failure keep the old one. */
static void chans_grow(struct chan_table *t)
{
    size_t n = t->nbuckets * 2;
    struct chan **b = calloc(n, sizeof(*b));
    if (!b)
        return;
    for (size_t i = 0; i < t->nbuckets; i++) {
        while (t->buckets[i]) {
            struct chan *ch = t->buckets[i];
            t->buckets[i] = ch->next;
            ch->next = b[ch->hash & (n - 1)];
            b[ch->hash & (n - 1)] = ch;
        }
    }
    free(t->buckets);
    t->buckets = b;
    t->nbuckets = n;
}

static void on_chan_timer(evutil_socket_t fd, short what, void *arg);

/* Find or create the channel entry of lock's name. NULL: out of memory. */
static struct chan *chan_get(struct hilock_lock *lock)
{
    struct hilock_client *c = lock->client;
    struct chan *ch = chan_find(c, lock->name, lock->name_len);
    if (ch)
        return ch;
    if (!(ch = calloc(1, sizeof(*ch) + lock->name_len)))
        return NULL;
    ch->client = c;
    ch->hash = name_hash(lock->name, lock->name_len);
    ch->name_len = lock->name_len;
    memcpy(ch->name, lock->name, lock->name_len);
    evtimer_assign(&ch->timer, c->base, on_chan_timer, ch);
    if (c->chans.count >= c->chans.nbuckets)
        chans_grow(&c->chans);
    struct chan **b = &c->chans.buckets[ch->hash & (c->chans.nbuckets - 1)];
    ch->next = *b;
    *b = ch;
    c->chans.count++;
    return ch;
}

void chan_drop(struct chan *ch)
{
    struct chan_table *t = &ch->client->chans;
    struct chan **p = &t->buckets[ch->hash & (t->nbuckets - 1)];
    while (*p != ch)
        p = &(*p)->next;
    *p = ch->next;
    t->count--;
    event_del(&ch->timer);
    free(ch);
}

int wait_has_waiters(struct hilock_lock *lock)
{
    return chan_find(lock->client, lock->name, lock->name_len) != NULL;
}

void chan_wake(struct chan *ch)
{
    uint64_t now = clock_now_ms();
    event_del(&ch->timer);
    if (!ch->head)
        return;
    if (now < ch->yield_until) {
        struct timeval tv = clock_tv(ch->yield_until - now);
        evtimer_add(&ch->timer, &tv);
        return;
    }
    if (ch->head->op_req)
        ch->wake_pending = 1;
    else
        lock_send_attempt(ch->head);
}

void chan_each(struct hilock_client *c, void (*fn)(struct chan *ch))
{
    for (size_t i = 0; i < c->chans.nbuckets; i++) {
        for (struct chan *ch = c->chans.buckets[i], *next; ch; ch = next) {
            next = ch->next;
            fn(ch);
        }
    }
}

static void on_chan_timer(evutil_socket_t fd, short what, void *arg)
{
    struct chan *ch = arg;
    struct hilock_client *c = ch->client;
    client_enter(c);
    chan_wake(ch);
    client_leave(c);
}

static void on_wait_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct hilock_lock *lock = arg;
    struct hilock_client *c = lock->client;
    client_enter(c);
    lock->wait_deadline = 1; /* passed, whatever the clock's rounding */
    if (lock->op_req)
        req_complete(lock->op_req, HILOCK_ETIMEDOUT);
    else if (lock->op == OP_ACQUIRE)
        lock_finish_op(lock, HILOCK_ETIMEDOUT, 0);
    client_leave(c);
}

int wait_begin(struct hilock_lock *lock, uint64_t wait_ms)
{
    if (!lock->wait_timer) {
        lock->wait_timer = evtimer_new(lock->client->base, on_wait_deadline,
                                       lock);
        if (!lock->wait_timer)
            return HILOCK_ENOMEM;
    }
    struct timeval tv = clock_tv(wait_ms);
    evtimer_add(lock->wait_timer, &tv);
    return 0;
}

/* Arm the fallback retry of the head at min(ttl_ms, its deadline), or
 * sooner while no release message can reach it. */
static void arm_fallback(struct chan *ch, int64_t ttl_ms)
{
    uint64_t now = clock_now_ms(), deadline = ch->head->wait_deadline;
    uint64_t ms = ttl_ms < 0 ? WAIT_NO_TTL_RETRY_MS
                             : ttl_ms == 0 ? 1 : (uint64_t)ttl_ms;
    if (ch->sub != SUB_ACTIVE) {
        uint64_t poll = (uint64_t)WAIT_POLL_FIRST_MS << ch->polls;
        if (poll >= WAIT_POLL_MAX_MS)
            poll = WAIT_POLL_MAX_MS;
        else
            ch->polls++;
        if (poll < ms)
            ms = poll;
    } else {
        ch->polls = 0;
    }
    if (deadline > now && deadline - now < ms)
        ms = deadline - now;
    struct timeval tv = clock_tv(ms);
    evtimer_add(&ch->timer, &tv);
}

int wait_park(struct hilock_lock *lock, int64_t ttl_ms)
{
    struct chan *ch = lock->chan;
    if (!ch) {
        if (!(ch = chan_get(lock)))
            return HILOCK_ENOMEM;
        lock->chan = ch;
        lock->wnext = NULL;
        sub_want(ch);
        lock->wprev = ch->tail;
        if (ch->tail)
            ch->tail->wnext = lock;
        else
            ch->head = lock;
        ch->tail = lock;
    }
    if (ch->head == lock && ch->wake_pending) {
        ch->wake_pending = 0;
        chan_wake(ch);
    } else if (ch->head == lock) {
        arm_fallback(ch, ttl_ms);
    }
    return 0;
}

void wait_end(struct hilock_lock *lock)
{
    struct chan *ch = lock->chan;
    if (lock->wait_timer)
        evtimer_del(lock->wait_timer);
    if (!ch)
        return;
    int was_head = ch->head == lock;
    if (lock->wprev)
        lock->wprev->wnext = lock->wnext;
    else
        ch->head = lock->wnext;
    if (lock->wnext)
        lock->wnext->wprev = lock->wprev;
    else
        ch->tail = lock->wprev;
    lock->chan = NULL;
    lock->wprev = lock->wnext = NULL;
    if (!ch->head) {
        ch->wake_pending = 0;
        event_del(&ch->timer);
        sub_unwant(ch);
    } else if (was_head && lock->holds > 0) {
        /* It left because it got the lock: the new head's retry would be
         * busy for sure. This client's release wakes it; the fallback
         * covers a lost lock. */
        ch->wake_pending = 0;
        arm_fallback(ch, lock->lease_ms);
    } else if (was_head) {
        ch->wake_pending = 0;
        chan_wake(ch);
    }
}

void wait_released(struct hilock_lock *lock, int64_t heard)
{
    struct chan *ch = chan_find(lock->client, lock->name, lock->name_len);
    if (!ch)
        return;
    if (heard <= (ch->sub == SUB_ACTIVE)) {
        ch->local_streak = 0;
    } else if (++ch->local_streak >= WAIT_LOCAL_STREAK_MAX) {
        /* Waiters in other processes heard this release. The releasing
         * process is on the CPU and would nearly always win the race for
         * the lock; standing back lets the lock move between processes. */
        ch->local_streak = 0;
        ch->yield_until = clock_now_ms() + WAIT_HANDOFF_YIELD_MS;
    }
    chan_wake(ch);
}
