/* lock.c -- the lock handle: acquire, release, queries, reference counts.
 *
 * A handle is one name plus one owner. At most one acquire or release is
 * pending on it (lock->op); queries and renewals may run alongside. Every
 * request about a lock holds a reference to it, so a reply that arrives after
 * hilock_lock_free() still finds the name and owner it needs (a late acquire
 * success is released at once). The user's callback is always the last thing
 * a code path does with the lock. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "client.h"
#include "reply.h"

struct key_src lock_keys(const struct hilock_lock *lock)
{
    struct key_src k = {lock->client->prefix, lock->client->prefix_len,
                        lock->name, lock->name_len};
    return k;
}

void lock_ref(struct hilock_lock *lock)
{
    lock->refs++;
}

/* Unlink from the client and free; the wait timer goes with it. */
static void lock_destroy(struct hilock_lock *lock)
{
    struct hilock_client *c = lock->client;
    if (lock->prev)
        lock->prev->next = lock->next;
    else
        c->locks = lock->next;
    if (lock->next)
        lock->next->prev = lock->prev;
    if (lock->wait_timer)
        event_free(lock->wait_timer);
    free(lock);
}

void lock_unref(struct hilock_lock *lock)
{
    if (--lock->refs == 0)
        lock_destroy(lock);
}

/* fini of a request attached to a lock: unlink it, drop its reference. */
static void req_fini_lock(struct req *r)
{
    struct hilock_lock *lock = r->lock;
    if (r->lprev)
        r->lprev->lnext = r->lnext;
    else
        lock->reqs.head = r->lnext;
    if (r->lnext)
        r->lnext->lprev = r->lprev;
    else
        lock->reqs.tail = r->lprev;
    r->lock = NULL;
    lock_unref(lock);
}

void lock_attach_req(struct hilock_lock *lock, struct req *r)
{
    r->lock = lock;
    r->fini = req_fini_lock;
    r->lnext = NULL;
    r->lprev = lock->reqs.tail;
    if (lock->reqs.tail)
        lock->reqs.tail->lnext = r;
    else
        lock->reqs.head = r;
    lock->reqs.tail = r;
    lock_ref(lock);
}

int hilock_lock_new(struct hilock_client *client, const char *name,
                    size_t name_len, uint64_t owner_tag,
                    struct hilock_lock **out)
{
    if (!client || !name || !out || name_len == 0 ||
        name_len > HILOCK_NAME_MAX || client->closing)
        return HILOCK_EINVAL;
    struct hilock_lock *lock = calloc(1, sizeof(*lock) + name_len + 1);
    if (!lock)
        return HILOCK_ENOMEM;
    lock->client = client;
    lock->owner_tag = owner_tag;
    lock->refs = 1;
    heap_node_init(&lock->wd_node);
    lock->name_len = name_len;
    memcpy(lock->name, name, name_len);
    lock->next = client->locks;
    if (client->locks)
        client->locks->prev = lock;
    client->locks = lock;
    *out = lock;
    return 0;
}

void lock_finish_op(struct hilock_lock *lock, int status, int64_t value)
{
    hilock_lock_cb *cb = lock->op_cb;
    void *arg = lock->op_arg;
    if (lock->op == OP_ACQUIRE)
        wait_end(lock);
    lock->op = OP_NONE;
    lock->op_cb = NULL;
    lock->op_arg = NULL;
    lock->op_req = NULL;
    if (lock->client->closing || lock->freeing)
        status = HILOCK_ECANCELED;
    cb(lock, status, status == HILOCK_ECANCELED ? 0 : value, arg);
}

void lock_hold_ended(struct hilock_lock *lock)
{
    watchdog_forget(lock);
    owners_remove(&lock->client->owners, lock);
    lock->holds = 0;
    lock->token = 0;
    lock->auto_renew = 0;
}

/* Most twins (handles of one owner and name) told of a change at once. */
#define TWINS_MAX 64

/* The holding handles of lock's name and owner (lock too, if it holds),
 * each with a reference taken: what is done to them may fire callbacks
 * that free handles. */
static size_t twins_get(struct hilock_lock *lock, struct hilock_lock **out)
{
    size_t n = 0;
    for (struct hilock_lock *h = owners_first(&lock->client->owners, lock);
         h && n < TWINS_MAX; h = owners_next(h)) {
        lock_ref(h);
        out[n++] = h;
    }
    return n;
}

void lock_share_lease(struct hilock_lock *lock, uint64_t sent_ms,
                      uint32_t lease_ms)
{
    struct hilock_lock *t[TWINS_MAX];
    size_t n = twins_get(lock, t);
    for (size_t i = 0; i < n; i++) {
        if (t[i]->holds > 0 && !t[i]->freeing) {
            t[i]->lease_ms = lease_ms;
            watchdog_confirmed(t[i], sent_ms);
        }
        lock_unref(t[i]);
    }
}

void lock_share_end(struct hilock_lock *lock)
{
    struct hilock_lock *t[TWINS_MAX];
    size_t n = twins_get(lock, t);
    for (size_t i = 0; i < n; i++) {
        watchdog_lost(t[i]);
        lock_unref(t[i]);
    }
}

/* The lease a release or renewal sets when holds remain. */
static uint32_t lock_lease(const struct hilock_lock *lock)
{
    return lock->lease_ms ? lock->lease_ms
                          : lock->client->opts.watchdog_lease_ms;
}

/* Encode EVALSHA <sha> <numkeys> for script id into r. */
static void encode_evalsha(struct req *r, enum script_id id, size_t argc,
                           unsigned numkeys)
{
    struct hilock_client *c = r->conn->client;
    r->script = (int8_t)id;
    resp_array(&r->cmd, argc);
    resp_arg(&r->cmd, "EVALSHA", 7);
    resp_arg(&r->cmd, c->scripts.sha[id], 40);
    resp_arg_u64(&r->cmd, numkeys);
}

static void acquire_done(struct req *r, int status, redisReply *reply);
static void acquire_late(struct req *r, redisReply *reply);

/* NOSCRIPT: the attempt was not applied, while a twin's acquire sent after
 * it may have been. Resent with its old request id it would pass for a
 * resend of an attempt already applied (the script takes ids in order), so
 * it goes out as a new attempt, with a new id above every id sent so far.
 * The id is the command's last argument, written with a fixed width. */
static void acquire_refresh(struct req *r)
{
    struct hilock_client *c = r->conn->client;
    resp_u64_fixed(++c->seq, r->cmd.data + r->cmd.len - RESP_U64_WIDTH - 2);
}

/* Send one acquire attempt for the pending acquire. Returns 0 or ENOMEM. */
static int send_attempt(struct hilock_lock *lock)
{
    struct hilock_client *c = lock->client;
    struct key_src k = lock_keys(lock);
    struct req *r = req_new(&c->cmd, acquire_done);
    if (!r)
        return HILOCK_ENOMEM;
    r->kind = KIND_ACQUIRE;
    r->retry = 1; /* the request id makes a resend harmless */
    r->late = acquire_late;
    r->refresh = acquire_refresh;
    r->aux = (int64_t)clock_now_ms();
    encode_evalsha(r, SCRIPT_ACQUIRE, 9, 2);
    keys_lock(&r->cmd, &k);
    keys_fence(&r->cmd, &k);
    resp_arg_u64(&r->cmd, lock->op_lease_ms ? lock->op_lease_ms
                                            : c->opts.watchdog_lease_ms);
    keys_field(&r->cmd, c->id, lock->owner_tag);
    resp_arg(&r->cmd, c->opts.fencing ? "1" : "0", 1);
    resp_arg_u64_fixed(&r->cmd, ++c->seq);
    lock_attach_req(lock, r);
    lock->op_req = r;
    req_submit(r, 0);
    return 0;
}

void lock_send_attempt(struct hilock_lock *lock)
{
    if (lock->op_req)
        return;
    int rc = send_attempt(lock);
    if (rc)
        lock_finish_op(lock, rc, 0);
}

/* The acquire succeeded (sent at sent_ms): record the hold, start its
 * lease tracking, report. */
static void acquired(struct hilock_lock *lock, int64_t token, uint64_t sent_ms)
{
    uint32_t lease = lock->op_lease_ms;
    if (lock->holds++ == 0)
        owners_add(&lock->client->owners, lock);
    lock->token = token; /* on re-entry, Redis returns the current token */
    lock->auto_renew |= lease == 0;
    lock_share_lease(lock, sent_ms,
                     lease ? lease : lock->client->opts.watchdog_lease_ms);
    lock_finish_op(lock, 0, lock->token);
}

/* Errors that a later attempt may not meet: a wait goes on through them. */
static int transient(int status)
{
    return status == HILOCK_ETIMEDOUT || status == HILOCK_ECONN;
}

/* Delay before the next attempt of a wait whose attempt failed on the way
 * (the connection's own backoff paces reconnects). */
#define ACQUIRE_RETRY_MS 50

static void acquire_done(struct req *r, int status, redisReply *reply)
{
    struct hilock_lock *lock = r->lock;
    int64_t holds = 0, token = 0, ttl = -1;
    lock->op_req = NULL;
    if (status == 0)
        status = reply_acquire(reply, &holds, &token, &ttl);
    if (status == 0) {
        acquired(lock, token, (uint64_t)r->aux);
    } else if (lock->wait_deadline == 0 ||
               (status != HILOCK_EBUSY && !transient(status))) {
        lock_finish_op(lock, status, status == HILOCK_EBUSY ? ttl : 0);
    } else if (clock_now_ms() >= lock->wait_deadline) {
        lock_finish_op(lock, HILOCK_ETIMEDOUT, 0);
    } else {
        if (status != HILOCK_EBUSY)
            ttl = ACQUIRE_RETRY_MS; /* a late success is undone by late */
        int rc = wait_park(lock, ttl);
        if (rc)
            lock_finish_op(lock, rc, 0);
    }
}

static void cleanup_done(struct req *r, int status, redisReply *reply);

/* A request releasing drop holds of this owner, with a latch of its own so
 * that resending it is harmless, attached to the lock. NULL: no memory. */
static struct req *release_req(struct hilock_lock *lock, uint32_t drop,
                               req_done_fn *done)
{
    struct hilock_client *c = lock->client;
    struct key_src k = lock_keys(lock);
    struct req *r = req_new(&c->cmd, done);
    if (!r)
        return NULL;
    r->retry = 1;
    r->aux = (int64_t)clock_now_ms();
    encode_evalsha(r, SCRIPT_RELEASE, 11, 3);
    keys_lock(&r->cmd, &k);
    keys_channel(&r->cmd, &k);
    keys_latch(&r->cmd, &k, c->request_tag, ++c->seq);
    resp_arg(&r->cmd, "0", 1);
    resp_arg_u64(&r->cmd, lock_lease(lock));
    keys_field(&r->cmd, c->id, lock->owner_tag);
    resp_arg_u64(&r->cmd, c->opts.request_timeout_ms + 5000u);
    resp_arg_u64(&r->cmd, drop);
    lock_attach_req(lock, r);
    return r;
}

/* Release drop holds of this owner without telling anyone (a late acquire
 * success, or a held handle being freed). Best effort. */
static void send_cleanup(struct hilock_lock *lock, uint32_t drop)
{
    struct req *r = release_req(lock, drop, cleanup_done);
    if (r) {
        r->kind = KIND_CLEANUP;
        req_submit(r, 0);
    }
}

static void acquire_late(struct req *r, redisReply *reply)
{
    int64_t holds, token, ttl;
    if (reply && reply_acquire(reply, &holds, &token, &ttl) == 0)
        send_cleanup(r->lock, 1);
}

static void cleanup_done(struct req *r, int status, redisReply *reply)
{
    int64_t left, heard;
    if (status == 0 && reply_release(reply, &left, &heard) == 0 && left == 0) {
        lock_share_end(r->lock); /* twins that still counted on it */
        wait_released(r->lock, heard);
    }
}

/* Common checks of the public entry points. */
static int lock_usable(const struct hilock_lock *lock)
{
    if (!lock || lock->freeing)
        return HILOCK_EINVAL;
    return lock->client->closing ? HILOCK_ECANCELED : 0;
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
    if (wait_ms && lock->holds == 0 &&
        !owners_first(&lock->client->owners, lock) && wait_has_waiters(lock))
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
    struct hilock_lock *lock = r->lock;
    int64_t left = 0, heard = 0;
    lock->op_req = NULL;
    if (status == 0)
        status = reply_release(reply, &left, &heard);
    /* A release that failed otherwise (timed out, connection lost) gives
     * the hold up too: it is most likely applied anyway (it stays queued, and
     * is resent), and if not, the lease runs out once nothing renews it. */
    if (status == HILOCK_ENOTOWNER || (status == 0 && left == 0) ||
        (lock->holds > 0 && --lock->holds == 0))
        lock_hold_ended(lock);
    if (status == HILOCK_ENOTOWNER || (status == 0 && left == 0))
        lock_share_end(lock); /* twins of this owner held it too */
    else if (status == 0)
        lock_share_lease(lock, (uint64_t)r->aux, lock_lease(lock));
    if (status == 0 && left == 0)
        wait_released(lock, heard);
    lock_finish_op(lock, status, left);
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
    r->kind = KIND_RELEASE;
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
    struct hilock_client *c = lock->client;
    client_enter(c);
    if (lock->op_req)
        req_complete(lock->op_req, HILOCK_ECANCELED);
    else
        lock_finish_op(lock, HILOCK_ECANCELED, 0);
    client_leave(c);
    return 0;
}

/* Cancel the pending op and every request with a callback. */
static void lock_cancel_pending(struct hilock_lock *lock)
{
    if (lock->op != OP_NONE && !lock->op_req)
        lock_finish_op(lock, HILOCK_ECANCELED, 0);
    for (struct req *r = lock->reqs.head, *next; r; r = next) {
        next = r->lnext;
        if (r->kind != KIND_CLEANUP)
            req_complete(r, HILOCK_ECANCELED);
    }
}

void hilock_lock_free(struct hilock_lock *lock)
{
    if (!lock || lock->freeing)
        return;
    struct hilock_client *c = lock->client;
    lock->freeing = 1;
    if (c->closing)
        return; /* the teardown frees it */
    client_enter(c);
    lock_cancel_pending(lock);
    if (lock->holds > 0)
        send_cleanup(lock, lock->holds);
    lock_hold_ended(lock);
    lock_unref(lock);
    client_leave(c);
}

void lock_cancel_all(struct hilock_client *c)
{
    for (struct hilock_lock *lock = c->locks; lock; lock = lock->next) {
        lock->freeing = 1;
        if (lock->op != OP_NONE && !lock->op_req)
            lock_finish_op(lock, HILOCK_ECANCELED, 0);
        watchdog_forget(lock);
    }
}

void lock_free_all(struct hilock_client *c)
{
    while (c->locks)
        lock_destroy(c->locks);
}

static void query_done(struct req *r, int status, redisReply *reply)
{
    int64_t v = 0;
    if (status == 0)
        status = reply_integer(reply, r->kind == KIND_QUERY_TTL ? -2 : 0, &v);
    if (status == 0 && r->kind == KIND_QUERY_TTL)
        v = v == -2 ? -1 : v == -1 ? INT64_MAX : v;
    if (r->lock->freeing || r->lock->client->closing)
        status = HILOCK_ECANCELED;
    r->cb(r->lock, status, status ? 0 : v, r->arg);
}

/* Send HEXISTS, HGET or PTTL about the lock. */
static int query(struct hilock_lock *lock, int kind, hilock_lock_cb *cb,
                 void *arg)
{
    static const char *const cmds[] = {"HEXISTS", "HGET", "PTTL"};
    int rc = lock_usable(lock);
    if (rc)
        return rc;
    if (!cb)
        return HILOCK_EINVAL;
    struct hilock_client *c = lock->client;
    struct key_src k = lock_keys(lock);
    struct req *r = req_new(&c->cmd, query_done);
    if (!r)
        return HILOCK_ENOMEM;
    const char *cmd = cmds[kind - KIND_QUERY_HELD];
    r->kind = kind;
    r->retry = 1;
    r->cb = cb;
    r->arg = arg;
    resp_array(&r->cmd, kind == KIND_QUERY_TTL ? 2 : 3);
    resp_arg(&r->cmd, cmd, strlen(cmd));
    keys_lock(&r->cmd, &k);
    if (kind != KIND_QUERY_TTL)
        keys_field(&r->cmd, c->id, lock->owner_tag);
    lock_attach_req(lock, r);
    req_submit(r, 0);
    return 0;
}

int hilock_lock_query_held(struct hilock_lock *lock, hilock_lock_cb *cb,
                           void *arg)
{
    return query(lock, KIND_QUERY_HELD, cb, arg);
}

int hilock_lock_query_count(struct hilock_lock *lock, hilock_lock_cb *cb,
                            void *arg)
{
    return query(lock, KIND_QUERY_COUNT, cb, arg);
}

int hilock_lock_query_ttl(struct hilock_lock *lock, hilock_lock_cb *cb,
                          void *arg)
{
    return query(lock, KIND_QUERY_TTL, cb, arg);
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
