/* SPDX-License-Identifier: BSD-3-Clause */
/* wait.c -- waiting acquires: one FIFO per lock name, one retry at a time.
 *
 * A busy acquire that may wait is parked in its name's FIFO, and the name's
 * channel is subscribed (once per name, by the node: see sub.c). Only the head
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
 * retry. With no waiters elsewhere, nothing is delayed. The yield ends
 * early when as many release messages came from elsewhere as there were
 * other subscribers: each ends another process's turn, so every other
 * process had one (with two processes on a name, each would otherwise sit
 * out the other's yield in turn, the lock free meanwhile). This client's
 * subscriptions hear its own release message too, before or after its
 * answer, and that echo is no news from elsewhere. So while a release of
 * this client's is out, a message is only counted; the answer (which
 * always comes, if only as a time-out) says whether the release published
 * (its heard count), and so how many of those messages, and of the ones
 * still to come, are its echoes. An echo wakes nobody: the answer does,
 * yield or not (an echo ahead of the answer would let the head take the
 * lock before the answer could tell it to stand back; one after it would
 * send the head's retry again).
 *
 * Quiet releases: a release of a name with a waiter here publishes no
 * message (on one node, see release.lua), and this client's head waiter's
 * attempt goes right after it (not after its answer: no round trip with
 * the lock free) and takes the lock, up to WAIT_LOCAL_STREAK_MAX - 1 times
 * in a row; the next release publishes. Waiters elsewhere are not all
 * woken to find the lock taken again (with a few processes on one name
 * that was most of what the lock cost Redis); they wait for at most a
 * streak, as they would lose those races anyway. Until a waiter here takes
 * the lock after a quiet release, the queue owes the release message: the
 * queue's last waiter leaving without the lock (its wait timed out or was
 * cancelled while the attempt was lost) has it published.
 *
 * Lingering (fair mode): when a name's last waiter leaves, its queue and
 * subscriptions stay WAIT_LINGER_MS, so that a process that waits on a
 * hot name again and again neither subscribes each time nor sends the
 * retry that each new subscription's confirmation costs. (Without fair
 * mode, every release would reach the lingering subscriptions too: more
 * messages for Redis to send, for little.) A queue counts its news: release
 * messages not its own, confirmations, and hand-offs (fair mode) to no
 * waiter parked here. An acquire that may wait notes the count before its
 * attempt, and its park after the busy answer retries at once when news
 * came in between: a release (or a hand-off to it) that came before the
 * answer found nobody parked to wake. */
#include "wait.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "hot.h"
#include "quorum.h"
#include "reply.h"

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
/* How long a queue whose waiters all left keeps its subscriptions. */
#define WAIT_LINGER_MS 500
/* Releases in a row that may hand the lock to this client's own waiters
 * while others wait elsewhere: local hand-offs are cheaper (no process
 * switch), so a short streak buys throughput at a bounded cost in fairness. */
#ifndef WAIT_LOCAL_STREAK_MAX
#define WAIT_LOCAL_STREAK_MAX 4
#endif

TAILQ_HEAD(waiter_list, waiting);

/* The local waiters of one lock name; lives while it has waiters. */
struct wait_queue {
    struct table_node node;          /* eng->waits */
    struct engine *eng;
    uint8_t wake_pending;            /* woken while the head's retry was out */
    uint8_t polls;                   /* polls in a row while unsubscribed */
    uint64_t yield_until;            /* ms: no retry before (see above) */
    uint32_t news;                   /* see above */
    uint32_t answers_due;            /* releases sent, not answered */
    uint32_t early;                  /* messages while one was out */
    uint32_t echoes_due;             /* own messages still to come */
    uint32_t others_left;            /* messages from elsewhere that end
                                        the yield */
    unsigned local_streak;           /* own releases in a row (see above) */
    uint8_t owed;                    /* quiet release not yet taken up */
    struct waiter_list waiters;      /* FIFO */
    struct event timer;              /* fallback retry of the head */
    uint8_t kind;                    /* enum sub_kind of its channel */
    size_t name_len;
    char name[];
};

void waits_init(struct engine *eng)
{
    table_init(&eng->waits);
}

static void queue_free(struct table_node *n, void *arg)
{
    struct wait_queue *q = TABLE_ENTRY(n, struct wait_queue, node);
    table_remove(arg, n);
    event_del(&q->timer);
    free(q);
}

void waits_free(struct engine *eng)
{
    table_each(&eng->waits, queue_free, &eng->waits);
    table_free(&eng->waits);
}

/* The queue of name (hash h: table_hash of the name), or NULL. */
static struct wait_queue *queue_find(struct engine *eng, enum sub_kind kind,
                                     const char *name, size_t len,
                                     uint32_t h)
{
    for (struct table_node *n = table_first(&eng->waits, h); n;
         n = table_next(n)) {
        struct wait_queue *q = TABLE_ENTRY(n, struct wait_queue, node);
        if (q->kind == kind && q->name_len == len &&
            memcmp(q->name, name, len) == 0)
            return q;
    }
    return NULL;
}

/* The queue of lock name name (its release channel), if any. */
static struct wait_queue *lock_queue(struct engine *eng, const char *name,
                                     size_t len)
{
    return queue_find(eng, SUB_RELEASE, name, len, table_hash(name, len, 0));
}

/* The queue of lock's name, lingering or not, if any. Inline, with the
 * common answer first: a lock and its release ask four times, and most
 * often the client has no queue at all. */
static HILOCK_INLINE struct wait_queue *
queue_any(const struct hilock_lock *lock)
{
    if (!lock->eng->waits.count)
        return NULL;
    return queue_find(lock->eng, lock->kind->channel, lock->name,
                      lock->name_len, lock->name_hash);
}

/* The queue lock's name has waiters in, if any. */
static HILOCK_INLINE struct wait_queue *
queue_of(const struct hilock_lock *lock)
{
    struct wait_queue *q = queue_any(lock);
    return q && !TAILQ_EMPTY(&q->waiters) ? q : NULL;
}

static void on_queue_timer(evutil_socket_t fd, short what, void *arg);

/* Subscribe q's name's release channel, and in fair mode this client's
 * hand-off channel of the name, on every node (that one first: when the
 * release channel is confirmed, so is it). */
static void queue_want(struct wait_queue *q)
{
    for (size_t i = 0; i < q->eng->nnodes; i++) {
        if (q->eng->listener && q->kind == SUB_RELEASE)
            topo_want(q->eng->topo, i, q->name, q->name_len, SUB_HANDOFF);
        topo_want(q->eng->topo, i, q->name, q->name_len, q->kind);
    }
}

/* A new, empty queue for lock's name, subscribed. NULL: out of memory. */
static struct wait_queue *queue_new(struct hilock_lock *lock)
{
    struct engine *eng = lock->eng;
    struct wait_queue *q = calloc(1, sizeof(*q) + lock->name_len);
    if (!q)
        return NULL;
    q->eng = eng;
    q->kind = (uint8_t)lock->kind->channel;
    q->name_len = lock->name_len;
    memcpy(q->name, lock->name, lock->name_len);
    TAILQ_INIT(&q->waiters);
    evtimer_assign(&q->timer, eng->base, on_queue_timer, q);
    if (table_insert(&eng->waits, &q->node, lock->name_hash)) {
        free(q);
        return NULL;
    }
    /* Without memory for the subscription the head polls instead. A
     * release on any node wakes the head. */
    queue_want(q);
    return q;
}

static void rewant_one(struct table_node *n, void *arg)
{
    queue_want(TABLE_ENTRY(n, struct wait_queue, node));
}

void wait_rewant_all(struct engine *eng)
{
    table_each(&eng->waits, rewant_one, NULL);
}

/* The last waiter left: unsubscribe and free. */
static void queue_drop(struct wait_queue *q)
{
    for (size_t i = 0; i < q->eng->nnodes; i++) {
        topo_unwant(q->eng->topo, i, q->name, q->name_len, q->kind);
        if (q->eng->listener && q->kind == SUB_RELEASE)
            topo_unwant(q->eng->topo, i, q->name, q->name_len, SUB_HANDOFF);
    }
    table_remove(&q->eng->waits, &q->node);
    event_del(&q->timer);
    free(q);
}

/* How many of this client's subscriptions to q's name are confirmed: its
 * share of the subscribers a release reaches. */
static size_t listening(const struct wait_queue *q)
{
    size_t n = 0;
    for (size_t i = 0; i < q->eng->nnodes; i++)
        n += (size_t)topo_listening(q->eng->topo, i, q->name, q->name_len,
                                    q->kind);
    return n;
}

HILOCK_HOT
int wait_has_waiters(const struct hilock_lock *lock)
{
    return queue_of(lock) != NULL;
}

HILOCK_HOT
int wait_look(struct hilock_lock *lock)
{
    struct wait_queue *q = queue_any(lock);
    lock->waiting->news_mark = q ? q->news : 0;
    return q && !TAILQ_EMPTY(&q->waiters);
}

/* Let the head waiter retry now (or as soon as its retry in flight is
 * answered, or after the yield). */
static void queue_wake(struct wait_queue *q)
{
    uint64_t now = clock_now_ms();
    struct waiting *first = TAILQ_FIRST(&q->waiters);
    if (!first)
        return; /* lingering: the timer is its end */
    event_del(&q->timer);
    struct hilock_lock *head = first->lock;
    if (now < q->yield_until) {
        struct timeval tv = clock_tv(q->yield_until - now);
        evtimer_add(&q->timer, &tv);
        return;
    }
    if (head->pending.fanout)
        q->wake_pending = 1;
    else
        q->eng->hooks.attempt(head);
}

static void on_queue_timer(evutil_socket_t fd, short what, void *arg)
{
    struct wait_queue *q = arg;
    struct reentry *guard = q->eng->guard;
    if (TAILQ_EMPTY(&q->waiters)) {
        queue_drop(q); /* it lingered long enough */
        return;
    }
    reentry_enter(guard);
    queue_wake(q);
    reentry_leave(guard);
}

/* A release message that is not this client's own came for q. */
static void news_from_elsewhere(struct wait_queue *q)
{
    q->news++;
    if (q->others_left > 0 && --q->others_left == 0)
        q->yield_until = 0; /* every other process had its turn */
}

void wait_on_message(struct engine *eng, enum sub_kind kind,
                     const char *name, size_t len)
{
    struct wait_queue *q =
        queue_find(eng, kind, name, len, table_hash(name, len, 0));
    if (!q)
        return;
    if (q->answers_due > 0) {
        q->early++; /* maybe this client's own: the answer tells */
        return;
    }
    if (q->echoes_due > 0) {
        q->echoes_due--; /* its answer woke the head */
        return;
    }
    news_from_elsewhere(q);
    queue_wake(q);
}

/* How long the hold of hand-off h lasts, in this client's clock: until
 * the returned time (ms) at least, or 0 when too little is left to count
 * it as a grant.
 *
 * A hand-off's lease runs from the moment the server set it, not from the
 * moment its message is read: a waiter whose process was stopped or slow
 * reads it late, maybe after the lease ran out and the lock moved on. The
 * message says when the lease ends relative to something this client
 * timed itself: the hold ends span_ms after the server wrote the waiter's
 * queue entry, and the request that wrote it left here at sent_ms (this
 * client's monotonic clock, echoed back), before it was written. So it
 * ends no sooner than sent_ms + span_ms here. That needs no shared clock,
 * only clocks that run at about the same rate, for which the usual
 * allowance (lease/100 + 2 ms over the span) is kept back, as for any
 * grant: lease - (now - send time) - drift. */
static uint64_t handoff_until(const struct reply_handoff *h)
{
    uint64_t now = clock_now_ms();
    if (h->sent_ms > now || h->span_ms > UINT32_MAX)
        return 0; /* not a time of this clock: confirm instead */
    if (quorum_validity((uint32_t)h->span_ms, now - h->sent_ms) <= 0)
        return 0;
    return h->sent_ms + h->span_ms;
}

void wait_handed(struct engine *eng, const char *name, size_t len,
                 const struct reply_handoff *h)
{
    struct wait_queue *q = lock_queue(eng, name, len);
    struct waiting *w;
    if (!q)
        return;
    TAILQ_FOREACH(w, &q->waiters, link)
        if (w->lock->owner_tag == h->owner_tag &&
            w->lock->pending.wait_id == h->wait_id)
            break;
    if (w)
        eng->hooks.handed(w->lock, h->token, handoff_until(h));
    else
        q->news++; /* maybe to a waiter not parked yet (see above) */
}

static void arm_fallback(struct wait_queue *q, int64_t ttl_ms);

/* Fair mode: the lock went to a waiter elsewhere with a lease of ms, and
 * name's head waiter here is next in line: it looks again when that lease
 * ends (a waiter that died holds it no longer), unless the release wakes
 * it first. With its retry out, the retry's answer sets that time. */
static void queue_rearm(struct engine *eng, const char *name, size_t len,
                        uint64_t ms)
{
    struct wait_queue *q = lock_queue(eng, name, len);
    struct waiting *first = q ? TAILQ_FIRST(&q->waiters) : NULL;
    if (first && !first->lock->pending.fanout)
        arm_fallback(q, (int64_t)ms);
}

void wait_on_handoff(struct engine *eng, const char *name, size_t len,
                     const char *msg, size_t mlen)
{
    struct reply_handoff h;
    int64_t ms;
    if (reply_wake_message(msg, mlen, &ms) != 0) {
        if (reply_handoff_message(msg, mlen, &h) == 0)
            wait_handed(eng, name, len, &h);
    } else if (ms >= 0) {
        queue_rearm(eng, name, len, (uint64_t)ms);
    } else {
        wait_on_message(eng, SUB_RELEASE, name, len); /* learn the lease */
    }
}

/* The wait's deadline timer. libevent times it from its own cached view
 * of the clock, which can lag clock_now_ms(), so it may fire a little
 * before the deadline: a wait never ends early, the timer is armed again
 * for what is left. */
static void on_wait_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct hilock_lock *lock = arg;
    struct reentry *guard = lock->eng->guard;
    uint64_t now = clock_now_ms();
    if (now < lock->waiting->deadline) {
        struct timeval tv = clock_tv(lock->waiting->deadline - now);
        evtimer_add(&lock->waiting->timer, &tv);
        return;
    }
    reentry_enter(guard);
    lock->waiting->deadline = 1; /* passed, whatever the clock's rounding */
    lock->eng->hooks.wait_expired(lock);
    reentry_leave(guard);
}

/* The handle's waiting state, made on its first wait; NULL without
 * memory. */
static struct waiting *waiting_of(struct hilock_lock *lock)
{
    struct waiting *w = lock->waiting;
    if (!w && (w = calloc(1, sizeof(*w)))) {
        evtimer_assign(&w->timer, lock->eng->base, on_wait_deadline, lock);
        w->lock = lock;
        lock->waiting = w;
    }
    return w;
}

HILOCK_HOT
int wait_set_deadline(struct hilock_lock *lock, uint64_t deadline)
{
    struct waiting *w = waiting_of(lock);
    if (!w)
        return HILOCK_ENOMEM;
    w->deadline = deadline;
    return 0;
}

int wait_begin(struct hilock_lock *lock, uint64_t wait_ms)
{
    /* + 1: the ms clock truncates; wait_ms whole ones must pass */
    int rc = wait_set_deadline(lock, clock_now_ms() + wait_ms + 1);
    if (rc)
        return rc;
    struct timeval tv = clock_tv(wait_ms);
    evtimer_add(&lock->waiting->timer, &tv);
    return 0;
}

void wait_arm(struct hilock_lock *lock)
{
    uint64_t now = clock_now_ms(), deadline = lock->waiting->deadline;
    struct timeval tv = clock_tv(deadline > now ? deadline - now : 0);
    evtimer_add(&lock->waiting->timer, &tv);
}

/* Arm the fallback retry of the head at min(ttl_ms, its deadline), or
 * sooner while no release message can reach it. */
static void arm_fallback(struct wait_queue *q, int64_t ttl_ms)
{
    uint64_t now = clock_now_ms();
    uint64_t deadline = TAILQ_FIRST(&q->waiters)->deadline;
    uint64_t ms = ttl_ms < 0 ? WAIT_NO_TTL_RETRY_MS
                             : ttl_ms == 0 ? 1 : (uint64_t)ttl_ms;
    if (listening(q) == 0) {
        uint64_t poll = (uint64_t)WAIT_POLL_FIRST_MS << q->polls;
        if (poll >= WAIT_POLL_MAX_MS)
            poll = WAIT_POLL_MAX_MS;
        else
            q->polls++;
        if (poll < ms)
            ms = poll;
    } else {
        q->polls = 0;
    }
    if (deadline > now && deadline - now < ms)
        ms = deadline - now;
    struct timeval tv = clock_tv(ms);
    evtimer_add(&q->timer, &tv);
}

/* q, empty (new or lingering), gets w as its first waiter: the head
 * retries at once on news that w's attempt may have missed (see above). */
static void queue_revive(struct wait_queue *q, const struct waiting *w)
{
    event_del(&q->timer);
    q->wake_pending = q->news != w->news_mark;
}

int wait_park(struct hilock_lock *lock, int64_t ttl_ms)
{
    struct waiting *w = waiting_of(lock);
    if (!w)
        return HILOCK_ENOMEM;
    struct wait_queue *q = w->queue;
    if (!q) {
        q = queue_any(lock);
        if (!q && !(q = queue_new(lock)))
            return HILOCK_ENOMEM;
        if (TAILQ_EMPTY(&q->waiters))
            queue_revive(q, w);
        w->queue = q;
        TAILQ_INSERT_TAIL(&q->waiters, w, link);
        stats_wait_begin(&lock->eng->stats, &w->parked_us);
    }
    if (TAILQ_FIRST(&q->waiters) != w)
        return 0;
    if (q->wake_pending) {
        q->wake_pending = 0;
        queue_wake(q);
    } else {
        arm_fallback(q, ttl_ms);
    }
    return 0;
}

/* q's last waiter left: it lingers in fair mode (see above), its
 * turn-taking state reset, else it goes. */
static void queue_linger(struct wait_queue *q)
{
    if (!q->eng->listener) {
        queue_drop(q);
        return;
    }
    struct timeval tv = clock_tv(WAIT_LINGER_MS);
    q->wake_pending = 0;
    q->owed = 0;
    q->local_streak = 0;
    q->yield_until = 0;
    q->others_left = 0;
    evtimer_add(&q->timer, &tv);
}

void wait_end(struct hilock_lock *lock)
{
    struct waiting *w = lock->waiting;
    struct wait_queue *q = w ? w->queue : NULL;
    if (w)
        evtimer_del(&w->timer);
    if (!q)
        return;
    stats_wait_end(&lock->eng->stats, w->parked_us);
    int was_head = TAILQ_FIRST(&q->waiters) == w;
    TAILQ_REMOVE(&q->waiters, w, link);
    w->queue = NULL;
    if (lock->hold.count > 0)
        q->owed = 0;
    if (TAILQ_EMPTY(&q->waiters)) {
        int owed = q->owed;
        queue_linger(q);
        if (owed)
            lock->eng->hooks.owed(lock);
    } else if (was_head && lock->hold.count > 0 && !lock->kind->shared) {
        /* It left because it got the lock: the new head's retry would be
         * busy for sure. This client's release wakes it; the fallback
         * covers a lost lock. (A reader, or a semaphore's taker, may have
         * left room: the next one tries at once.) */
        q->wake_pending = 0;
        arm_fallback(q, lock->hold.lease_ms);
    } else if (was_head) {
        q->wake_pending = 0;
        queue_wake(q);
    }
}

void wait_hold_off(struct hilock_lock *lock, uint64_t ms)
{
    struct wait_queue *q = lock->waiting ? lock->waiting->queue : NULL;
    uint64_t until = clock_now_ms() + ms;
    if (q && q->yield_until < until)
        q->yield_until = until;
}

HILOCK_HOT
void wait_released(struct hilock_lock *lock, int64_t heard)
{
    struct wait_queue *q = queue_of(lock);
    if (!q)
        return;
    size_t mine = listening(q);
    q->owed = 0; /* everyone listening heard it */
    if (heard <= (int64_t)mine) {
        q->local_streak = 0;
    } else if (++q->local_streak >= WAIT_LOCAL_STREAK_MAX) {
        /* Waiters in other processes heard this release. The releasing
         * process is on the CPU and would nearly always win the race for
         * the lock; standing back lets the lock move between processes. */
        q->local_streak = 0;
        q->yield_until = clock_now_ms() + WAIT_HANDOFF_YIELD_MS;
        q->others_left = (uint32_t)(heard - (int64_t)mine);
    }
    queue_wake(q);
}

int wait_quiet_ok(const struct hilock_lock *lock)
{
    const struct wait_queue *q = queue_of(lock);
    return q && lock->eng->nnodes == 1 &&
           q->local_streak + 1 < WAIT_LOCAL_STREAK_MAX &&
           clock_now_ms() >= q->yield_until;
}

/* Whether q's head has an attempt out. */
static int head_trying(const struct wait_queue *q)
{
    struct waiting *first = TAILQ_FIRST(&q->waiters);
    return first && first->lock->pending.fanout;
}

void wait_release_sent(struct hilock_lock *lock, int quiet)
{
    struct wait_queue *q = queue_any(lock); /* quiet: it has waiters */
    struct timeval now = {0, 0};
    if (!q)
        return;
    q->answers_due++;
    if (!quiet)
        return;
    if (head_trying(q))
        q->wake_pending = 1; /* it got there first: again at its answer */
    else
        evtimer_add(&q->timer, &now); /* not inside the user's call */
}

void wait_release_answered(struct hilock_lock *lock, int64_t heard)
{
    struct wait_queue *q = queue_any(lock);
    if (!q || q->answers_due == 0)
        return; /* sent before the queue was made */
    uint32_t mine = heard > 0 ? (uint32_t)listening(q) : 0;
    uint32_t seen = q->early < mine ? q->early : mine;
    q->answers_due--;
    q->early -= seen;
    q->echoes_due += mine - seen;
    if (q->answers_due > 0 || q->early == 0)
        return; /* the next answer may claim the rest */
    for (; q->early > 0; q->early--)
        news_from_elsewhere(q);
    /* the head looks on the loop's next turn, unless the news of this
     * answer wakes it first (queue_wake takes the timer back) */
    if (!TAILQ_EMPTY(&q->waiters)) {
        struct timeval now = {0, 0};
        evtimer_add(&q->timer, &now);
    }
}

void wait_passed(struct hilock_lock *lock, int status)
{
    struct wait_queue *q = queue_of(lock);
    if (!q) {
        lock->eng->hooks.owed(lock);
        return;
    }
    q->local_streak++;
    q->owed = 1;
    /* No attempt out behind it: the head's timer was taken for its
     * fallback, or the head changed. */
    if (status != 0 || !head_trying(q))
        queue_wake(q);
}
