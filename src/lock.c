/* lock.c -- the lock operations: acquire, release, cancel, free, queries,
 * renew; the top of the engine.
 *
 * A handle is one name plus one owner. At most one acquire or release is
 * pending on it (lock->op); queries and renewals may run alongside. Handles
 * of one name and owner (twins) share one hold in Redis: what a reply says
 * about that hold (a new lease, its end) is applied to all of them. The
 * files below report here through eng->hooks, which lock_engine_init fills
 * in. The user's callback is always the last thing a code path does with
 * the lock. */
#include "lock.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "clock.h"
#include "handle.h"
#include "reply.h"
#include "wait.h"
#include "watchdog.h"
#include "wire.h"

/* Delay before the next attempt of a wait whose attempt failed on the way
 * (the connection's own backoff paces reconnects). */
#define ACQUIRE_RETRY_MS 50

static int closing(const struct hilock_lock *lock)
{
    return lock->eng->guard->closing;
}

/* Finish the pending op: clear it, then call the user's callback (last). */
static void finish_op(struct hilock_lock *lock, int status, int64_t value)
{
    hilock_lock_cb *cb = lock->op_cb;
    void *arg = lock->op_arg;
    if (lock->op == OP_ACQUIRE)
        wait_end(lock);
    lock->op = OP_NONE;
    lock->op_cb = NULL;
    lock->op_arg = NULL;
    lock->op_req = NULL;
    if (closing(lock) || lock->freeing)
        status = HILOCK_ECANCELED;
    cb(lock, status, status == HILOCK_ECANCELED ? 0 : value, arg);
}

/* The handle's hold ended (released, lost, freed): stop its renewals. */
static void hold_ended(struct hilock_lock *lock)
{
    watchdog_forget(lock);
    handle_hold_end(lock);
    lock->holds = 0;
    lock->token = 0;
    lock->auto_renew = 0;
}

/* The hold of a handle that counted on it is gone: tell its on_lost. */
static void lock_lost(struct hilock_lock *lock)
{
    hilock_lock_cb *cb = lock->lost_cb;
    void *arg = lock->lost_arg;
    int held = lock->holds > 0;
    hold_ended(lock);
    if (held && cb && !lock->freeing && !closing(lock))
        cb(lock, HILOCK_ELOST, 0, arg);
}

/* Redis confirmed the owner's hold with lease_ms from a request sent at
 * sent_ms: every holding twin takes the new lease and validity. */
static void share_lease(struct hilock_lock *lock, uint64_t sent_ms,
                        uint32_t lease_ms)
{
    struct hilock_lock *t[HANDLE_TWINS_MAX];
    size_t n = handle_twins(lock, t);
    for (size_t i = 0; i < n; i++) {
        if (t[i]->holds > 0 && !t[i]->freeing) {
            t[i]->lease_ms = lease_ms;
            watchdog_confirmed(t[i], sent_ms);
        }
        handle_unref(t[i]);
    }
}

/* Redis says the owner holds nothing: every twin that counted on the hold
 * (lock included) is told. */
static void share_end(struct hilock_lock *lock)
{
    struct hilock_lock *t[HANDLE_TWINS_MAX];
    size_t n = handle_twins(lock, t);
    for (size_t i = 0; i < n; i++) {
        lock_lost(t[i]);
        handle_unref(t[i]);
    }
}

/* The lease a release sets when holds remain. */
static uint32_t lock_lease(const struct hilock_lock *lock)
{
    return lock->lease_ms ? lock->lease_ms
                          : lock->eng->opts->watchdog_lease_ms;
}

static void acquire_done(struct req *r, int status, redisReply *reply);
static void acquire_late(struct req *r, redisReply *reply);

/* NOSCRIPT: the attempt was not applied, while a twin's acquire sent after
 * it may have been. Resent with its old request id it would pass for a
 * resend of an attempt already applied (the script takes ids in order), so
 * it goes out as a new attempt, with a new id above every id sent so far. */
static void acquire_refresh(struct req *r)
{
    struct hilock_lock *lock = r->ctx;
    wire_acquire_rid(&r->cmd, ++lock->eng->seq);
}

/* Send one acquire attempt for the pending acquire. Returns 0 or ENOMEM. */
static int send_attempt(struct hilock_lock *lock)
{
    struct engine *eng = lock->eng;
    struct wire_lock w = handle_wire(lock);
    struct req *r = node_request(eng->node, acquire_done);
    if (!r)
        return HILOCK_ENOMEM;
    r->retry = 1; /* the request id makes a resend harmless */
    r->late = acquire_late;
    r->refresh = acquire_refresh;
    node_eval(r, SCRIPT_ACQUIRE);
    wire_acquire(&r->cmd, node_sha(eng->node, SCRIPT_ACQUIRE), &w,
                 lock->op_lease_ms ? lock->op_lease_ms
                                   : eng->opts->watchdog_lease_ms,
                 eng->opts->fencing, ++eng->seq);
    handle_attach(lock, r);
    lock->op_req = r;
    req_submit(r, 0);
    return 0;
}

/* wait.c's turn: the head waiter tries again. */
static void hook_attempt(struct hilock_lock *lock)
{
    if (lock->op_req)
        return;
    int rc = send_attempt(lock);
    if (rc)
        finish_op(lock, rc, 0);
}

/* wait.c: the wait's deadline passed. */
static void hook_wait_expired(struct hilock_lock *lock)
{
    if (lock->op_req)
        req_complete(lock->op_req, HILOCK_ETIMEDOUT);
    else if (lock->op == OP_ACQUIRE)
        finish_op(lock, HILOCK_ETIMEDOUT, 0);
}

/* The acquire succeeded (sent at sent_ms): record the hold, start its
 * lease tracking, report. */
static void acquired(struct hilock_lock *lock, int64_t token, uint64_t sent_ms)
{
    uint32_t lease = lock->op_lease_ms;
    if (lock->holds++ == 0)
        handle_hold_begin(lock);
    lock->token = token; /* on re-entry, Redis returns the current token */
    lock->auto_renew |= lease == 0;
    share_lease(lock, sent_ms,
                lease ? lease : lock->eng->opts->watchdog_lease_ms);
    finish_op(lock, 0, lock->token);
}

/* Errors that a later attempt may not meet: a wait goes on through them. */
static int transient(int status)
{
    return status == HILOCK_ETIMEDOUT || status == HILOCK_ECONN;
}

static void acquire_done(struct req *r, int status, redisReply *reply)
{
    struct hilock_lock *lock = r->ctx;
    int64_t holds = 0, token = 0, ttl = -1;
    lock->op_req = NULL;
    if (status == 0)
        status = reply_acquire(reply, &holds, &token, &ttl);
    if (status == 0) {
        acquired(lock, token, r->sent_ms);
    } else if (lock->wait_deadline == 0 ||
               (status != HILOCK_EBUSY && !transient(status))) {
        finish_op(lock, status, status == HILOCK_EBUSY ? ttl : 0);
    } else if (clock_now_ms() >= lock->wait_deadline) {
        finish_op(lock, HILOCK_ETIMEDOUT, 0);
    } else {
        if (status != HILOCK_EBUSY)
            ttl = ACQUIRE_RETRY_MS; /* a late success is undone by late */
        int rc = wait_park(lock, ttl);
        if (rc)
            finish_op(lock, rc, 0);
    }
}

static void cleanup_done(struct req *r, int status, redisReply *reply);

/* A request releasing drop holds of this owner, with a latch of its own so
 * that resending it is harmless, attached to the lock. NULL: no memory. */
static struct req *release_req(struct hilock_lock *lock, uint32_t drop,
                               req_done_fn *done)
{
    struct engine *eng = lock->eng;
    struct wire_lock w = handle_wire(lock);
    struct req *r = node_request(eng->node, done);
    if (!r)
        return NULL;
    r->retry = 1;
    node_eval(r, SCRIPT_RELEASE);
    wire_release(&r->cmd, node_sha(eng->node, SCRIPT_RELEASE), &w,
                 eng->request_tag, ++eng->seq, lock_lease(lock),
                 eng->opts->request_timeout_ms, drop);
    handle_attach(lock, r);
    return r;
}

/* Release drop holds of this owner without telling anyone (a late acquire
 * success, or a held handle being freed). Best effort. */
static void send_cleanup(struct hilock_lock *lock, uint32_t drop)
{
    struct req *r = release_req(lock, drop, cleanup_done);
    if (r)
        req_submit(r, 0);
}

static void acquire_late(struct req *r, redisReply *reply)
{
    int64_t holds, token, ttl;
    if (reply && reply_acquire(reply, &holds, &token, &ttl) == 0)
        send_cleanup(r->ctx, 1);
}

static void cleanup_done(struct req *r, int status, redisReply *reply)
{
    int64_t left, heard;
    if (status == 0 && reply_release(reply, &left, &heard) == 0 && left == 0) {
        share_end(r->ctx); /* twins that still counted on it */
        wait_released(r->ctx, heard);
    }
}

/* Common checks of the public entry points. */
static int lock_usable(const struct hilock_lock *lock)
{
    if (!lock || lock->freeing)
        return HILOCK_EINVAL;
    return closing(lock) ? HILOCK_ECANCELED : 0;
}

int hilock_lock_acquire(struct hilock_lock *lock, uint64_t lease_ms,
                        uint64_t wait_ms, hilock_lock_cb *cb, void *arg)
{
    int rc = lock_usable(lock);
    if (rc)
        return rc;
    if (!cb || lease_ms > HILOCK_MS_MAX || wait_ms > HILOCK_MS_MAX)
        return HILOCK_EINVAL;
    if (lock->op != OP_NONE)
        return HILOCK_EINPROGRESS;
    if (wait_ms && (rc = wait_begin(lock, wait_ms)))
        return rc;
    lock->op = OP_ACQUIRE;
    lock->op_cb = cb;
    lock->op_arg = arg;
    lock->op_lease_ms = (uint32_t)lease_ms;
    lock->wait_deadline = wait_ms ? clock_now_ms() + wait_ms : 0;
    if (wait_ms && !handle_owner_holds(lock) && wait_has_waiters(lock))
        rc = wait_park(lock, -1); /* no barging past our own waiters, but a
                                     re-entry never waits */
    else
        rc = send_attempt(lock);
    if (rc) {
        wait_end(lock);
        lock->op = OP_NONE;
    }
    return rc;
}

static void release_done(struct req *r, int status, redisReply *reply)
{
    struct hilock_lock *lock = r->ctx;
    int64_t left = 0, heard = 0;
    lock->op_req = NULL;
    if (status == 0)
        status = reply_release(reply, &left, &heard);
    int ended = status == HILOCK_ENOTOWNER || (status == 0 && left == 0);
    /* A release that failed otherwise (timed out, connection lost) gives
     * the hold up too: it is most likely applied anyway (it stays queued, and
     * is resent), and if not, the lease runs out once nothing renews it. */
    if (ended || (lock->holds > 0 && --lock->holds == 0))
        hold_ended(lock);
    if (ended)
        share_end(lock); /* twins of this owner counted on it too */
    else if (status == 0)
        share_lease(lock, r->sent_ms, lock_lease(lock));
    if (status == 0 && left == 0)
        wait_released(lock, heard);
    finish_op(lock, status, left);
}

int hilock_lock_release(struct hilock_lock *lock, hilock_lock_cb *cb,
                        void *arg)
{
    int rc = lock_usable(lock);
    if (rc)
        return rc;
    if (!cb)
        return HILOCK_EINVAL;
    if (lock->op != OP_NONE)
        return HILOCK_EINPROGRESS;
    struct req *r = release_req(lock, 1, release_done);
    if (!r)
        return HILOCK_ENOMEM;
    lock->op = OP_RELEASE;
    lock->op_cb = cb;
    lock->op_arg = arg;
    lock->op_req = r;
    req_submit(r, 0);
    return 0;
}

int hilock_lock_cancel(struct hilock_lock *lock)
{
    if (lock_usable(lock) || lock->op != OP_ACQUIRE)
        return HILOCK_EINVAL;
    struct reentry *guard = lock->eng->guard;
    reentry_enter(guard);
    if (lock->op_req)
        req_complete(lock->op_req, HILOCK_ECANCELED);
    else
        finish_op(lock, HILOCK_ECANCELED, 0);
    reentry_leave(guard);
    return 0;
}

/* Cancel the pending op and every request with a callback, except the
 * releases of this lock's holds. */
static void cancel_pending(struct hilock_lock *lock)
{
    struct req *r, *next;
    if (lock->op != OP_NONE && !lock->op_req)
        finish_op(lock, HILOCK_ECANCELED, 0);
    for (r = TAILQ_FIRST(&lock->reqs); r; r = next) {
        next = TAILQ_NEXT(r, ctx_link);
        if (r->done != cleanup_done)
            req_complete(r, HILOCK_ECANCELED);
    }
}

void hilock_lock_free(struct hilock_lock *lock)
{
    if (!lock || lock->freeing)
        return;
    struct reentry *guard = lock->eng->guard;
    lock->freeing = 1;
    if (guard->closing)
        return; /* the teardown frees it */
    reentry_enter(guard);
    cancel_pending(lock);
    if (lock->holds > 0)
        send_cleanup(lock, lock->holds);
    hold_ended(lock);
    handle_unref(lock);
    reentry_leave(guard);
}

/* Applies the result of a query and reports it. */
struct query {
    enum wire_query q;
    hilock_lock_cb *cb;
    void *arg;
};

static void query_done(struct req *r, int status, redisReply *reply)
{
    struct hilock_lock *lock = r->ctx;
    struct query *q = r->data;
    int64_t v = 0;
    if (status == 0)
        status = reply_integer(reply, q->q == WIRE_QUERY_TTL ? -2 : 0, &v);
    if (status == 0 && q->q == WIRE_QUERY_TTL)
        v = v == -2 ? -1 : v == -1 ? INT64_MAX : v;
    if (lock->freeing || closing(lock))
        status = HILOCK_ECANCELED;
    hilock_lock_cb *cb = q->cb;
    void *arg = q->arg;
    free(q);
    r->data = NULL;
    cb(lock, status, status ? 0 : v, arg);
}

/* Send HEXISTS, HGET or PTTL about the lock. */
static int query(struct hilock_lock *lock, enum wire_query which,
                 hilock_lock_cb *cb, void *arg)
{
    int rc = lock_usable(lock);
    if (rc)
        return rc;
    if (!cb)
        return HILOCK_EINVAL;
    struct wire_lock w = handle_wire(lock);
    struct query *q = malloc(sizeof(*q));
    struct req *r = q ? node_request(lock->eng->node, query_done) : NULL;
    if (!r) {
        free(q);
        return HILOCK_ENOMEM;
    }
    *q = (struct query){which, cb, arg};
    r->retry = 1;
    r->data = q;
    wire_query(&r->cmd, which, &w);
    handle_attach(lock, r);
    req_submit(r, 0);
    return 0;
}

int hilock_lock_query_held(struct hilock_lock *lock, hilock_lock_cb *cb,
                           void *arg)
{
    return query(lock, WIRE_QUERY_HELD, cb, arg);
}

int hilock_lock_query_count(struct hilock_lock *lock, hilock_lock_cb *cb,
                            void *arg)
{
    return query(lock, WIRE_QUERY_COUNT, cb, arg);
}

int hilock_lock_query_ttl(struct hilock_lock *lock, hilock_lock_cb *cb,
                          void *arg)
{
    return query(lock, WIRE_QUERY_TTL, cb, arg);
}

int hilock_lock_on_lost(struct hilock_lock *lock, hilock_lock_cb *cb,
                        void *arg)
{
    if (!lock || lock->freeing)
        return HILOCK_EINVAL;
    lock->lost_cb = cb;
    lock->lost_arg = arg;
    return 0;
}

int hilock_lock_renew(struct hilock_lock *lock, uint64_t lease_ms,
                      hilock_lock_cb *cb, void *arg)
{
    int rc = lock_usable(lock);
    if (rc)
        return rc;
    if (!cb || lease_ms > HILOCK_MS_MAX || lock->holds == 0)
        return HILOCK_EINVAL;
    return watchdog_renew_now(lock, lease_ms ? (uint32_t)lease_ms
                                             : lock_lease(lock),
                              cb, arg);
}

uint32_t hilock_lock_hold_count(const struct hilock_lock *lock)
{
    return lock ? lock->holds : 0;
}

int64_t hilock_lock_token(const struct hilock_lock *lock)
{
    return lock ? lock->token : 0;
}

const char *hilock_lock_name(const struct hilock_lock *lock, size_t *len)
{
    if (!lock)
        return NULL;
    if (len)
        *len = lock->name_len;
    return lock->name;
}

int lock_new(struct engine *eng, const char *name, size_t len,
             uint64_t owner_tag, struct hilock_lock **out)
{
    if (!name || !out || len == 0 || len > HILOCK_NAME_MAX)
        return HILOCK_EINVAL;
    struct hilock_lock *lock = handle_new(eng, name, len, owner_tag);
    if (!lock)
        return HILOCK_ENOMEM;
    *out = lock;
    return 0;
}

void lock_engine_init(struct engine *eng)
{
    LIST_INIT(&eng->locks);
    table_init(&eng->owners);
    waits_init(eng);
    watchdog_init(eng);
    eng->hooks.attempt = hook_attempt;
    eng->hooks.wait_expired = hook_wait_expired;
    eng->hooks.renewed = share_lease;
    eng->hooks.gone = share_end;
    eng->hooks.expired = lock_lost;
}

void lock_cancel_all(struct engine *eng)
{
    struct hilock_lock *lock;
    LIST_FOREACH(lock, &eng->locks, link) {
        lock->freeing = 1;
        if (lock->op != OP_NONE && !lock->op_req)
            finish_op(lock, HILOCK_ECANCELED, 0);
        watchdog_forget(lock);
    }
}

void lock_engine_free(struct engine *eng)
{
    handle_free_all(eng);
    table_free(&eng->owners);
    waits_free(eng);
    watchdog_free(eng);
}
