/* SPDX-License-Identifier: BSD-3-Clause */
/* multi.c -- MultiLock: several names held together, all or none.
 *
 * A MultiLock is K lock handles of one owner (its members) taken in one
 * atomic script call on each node (multi_acquire): either every name is
 * free or ours and all are taken, or nothing is taken and the script names
 * the first lock held by another owner. Two MultiLocks over the same names
 * in any order can therefore never deadlock: neither ever holds a part
 * while it waits. A busy MultiLock waits like a single lock: its member
 * for the blocking name is parked in that name's wait queue (pub/sub
 * wake-up, fallback timer at the holder's PTTL), and its turn sends the
 * whole script again. Once held, the members are ordinary held handles:
 * the watchdog renews them, and losing any of them loses the MultiLock.
 * The release is one script call too (multi_release).
 *
 * This file sits above lock.c: it hooks into the engine's upcalls for its
 * members and passes every other handle on to lock.c's hooks. */
#include "multi.h"

#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "clock.h"
#include "handle.h"
#include "hold.h"
#include "lock.h"
#include "fanout.h"
#include "wait.h"
#include "wire.h"

enum multi_op { MULTI_IDLE = 0, MULTI_ACQUIRING, MULTI_RELEASING };

struct hilock_multi {
    struct engine *eng;
    LIST_ENTRY(hilock_multi) link;   /* eng's multis */
    struct fanout_list ops;              /* operations about it (ctx_link) */
    uint32_t refs;                   /* the user's + one per operation */
    uint8_t freeing;
    uint8_t held;
    uint8_t op;                      /* enum multi_op */
    uint8_t splits;                  /* split votes in a row (backoff) */
    hilock_multi_cb *cb;             /* the pending acquire or release */
    void *arg;
    hilock_multi_cb *lost_cb;
    void *lost_arg;
    uint32_t lease_ms;               /* requested (0: watchdog) */
    uint64_t deadline;               /* ms; 0: try once */
    struct event *deadline_timer;
    struct fanout *pending;              /* attempt or release in flight */
    struct hilock_lock *parked;      /* member waiting in its name's queue */
    size_t k;
    struct hilock_lock *members[];
};

/* The engine's multis, for teardown; and lock.c's hooks, passed on. */
struct multi_state {
    LIST_HEAD(, hilock_multi) all;
    struct engine_hooks lock_hooks;
};

static int closing(const struct hilock_multi *m)
{
    return m->eng->guard->closing;
}

static void multi_unref(struct hilock_multi *m)
{
    if (--m->refs)
        return;
    LIST_REMOVE(m, link);
    for (size_t i = 0; i < m->k; i++)
        hilock_lock_free(m->members[i]);
    if (m->deadline_timer)
        event_free(m->deadline_timer);
    free(m);
}

static void multi_detach(struct fanout *op)
{
    struct hilock_multi *m = op->ctx;
    TAILQ_REMOVE(&m->ops, op, ctx_link);
    multi_unref(m);
}

/* Link op to m: a reference, and a place in m->ops for cancelling. */
static void multi_attach(struct hilock_multi *m, struct fanout *op)
{
    op->ctx = m;
    op->fini = multi_detach;
    TAILQ_INSERT_TAIL(&m->ops, op, ctx_link);
    m->refs++;
}

/* The members as the wire format names them (at most HILOCK_MULTI_MAX). */
static void multi_wire(const struct hilock_multi *m, struct wire_lock *w)
{
    for (size_t i = 0; i < m->k; i++)
        w[i] = handle_wire(m->members[i]);
}

/* Leave the wait queue, disarm the deadline. */
static void wait_stop(struct hilock_multi *m)
{
    if (m->parked) {
        m->parked->pending.fanout = NULL;
        wait_end(m->parked);
        m->parked = NULL;
    }
    if (m->deadline_timer)
        evtimer_del(m->deadline_timer);
}

/* Finish the pending acquire or release: the user's callback comes last. */
static void finish(struct hilock_multi *m, int status)
{
    hilock_multi_cb *cb = m->cb;
    void *arg = m->arg;
    stats_acquire_end(&m->eng->stats, m->op == MULTI_ACQUIRING, status);
    wait_stop(m);
    m->op = MULTI_IDLE;
    m->cb = NULL;
    m->pending = NULL;
    if (closing(m) || m->freeing)
        status = HILOCK_ECANCELED;
    struct hilock_result res = cb_result(CB_FIELD_NONE, 0);
    cb(m, status, &res, arg);
}

static void acquire_done(struct fanout *op, int status,
                         const struct op_result *res);
static void release_done(struct fanout *op, int status,
                         const struct op_result *res);

/* Release one hold of every member on every node (node < 0) or on one,
 * with done told. Returns the operation, or NULL without memory. */
static struct fanout *send_release(struct hilock_multi *m, int node,
                               fanout_done_fn *done)
{
    struct engine *eng = m->eng;
    struct wire_lock w[HILOCK_MULTI_MAX];
    struct fanout *op = fanout_new(eng, OP_KIND_MULTI_RELEASE, node,
                           m->members[0]->slot, 0, done);
    if (!op)
        return NULL;
    multi_wire(m, w);
    fanout_eval(op, SCRIPT_MULTI_RELEASE);
    wire_multi_release(fanout_cmd(op), eng->scripts.sha[SCRIPT_MULTI_RELEASE],
                       w, m->k, ++eng->seq, engine_lease(eng, m->lease_ms),
                       topo_publish(eng->topo));
    multi_attach(m, op);
    fanout_submit(op, 0);
    return op;
}

static void undo_done(struct fanout *op, int status, const struct op_result *res)
{
    (void)op;
    (void)status;
    (void)res;
}

/* A node answered an attempt after its decision: its grants are undone
 * unless the attempt succeeded and the MultiLock is still held (or being
 * taken again: then its release went to that master before the new
 * attempt). */
static void acquire_late(struct fanout *op, size_t i, const struct op_result *res)
{
    struct hilock_multi *m = op->ctx;
    int stale = !m->held && m->op != MULTI_ACQUIRING;
    if (res && res->status == 0 && (op->status != 0 || stale))
        send_release(m, op->n == 1 ? -1 : (int)i, undo_done);
}

/* Send one attempt of the pending acquire to every node. */
static int send_attempt(struct hilock_multi *m)
{
    struct engine *eng = m->eng;
    struct wire_lock w[HILOCK_MULTI_MAX];
    struct fanout *op = fanout_new(eng, OP_KIND_MULTI_ACQUIRE, -1,
                           m->members[0]->slot, 0, acquire_done);
    if (!op)
        return HILOCK_ENOMEM;
    op->late = acquire_late;
    multi_wire(m, w);
    fanout_eval(op, SCRIPT_MULTI_ACQUIRE);
    wire_multi_acquire(fanout_cmd(op),
                       eng->scripts.sha[SCRIPT_MULTI_ACQUIRE], w,
                       m->k, engine_lease(eng, m->lease_ms), ++eng->seq);
    multi_attach(m, op);
    m->pending = op;
    if (m->parked)
        m->parked->pending.fanout = op; /* a wake-up now is kept for later */
    fanout_submit(op, 0);
    return 0;
}

/* Busy on member b (holder's ttl): wait in b's queue until the deadline. */
static void park(struct hilock_multi *m, size_t b, int64_t ttl)
{
    struct hilock_lock *member = m->members[b < m->k ? b : 0];
    if (m->parked != member) {
        if (m->parked) {
            m->parked->pending.fanout = NULL;
            wait_end(m->parked);
        }
        m->parked = member;
        if (wait_set_deadline(member, m->deadline)) {
            finish(m, HILOCK_ENOMEM);
            return;
        }
    }
    member->pending.fanout = NULL;
    if (wait_park(member, ttl))
        finish(m, HILOCK_ENOMEM);
}

/* Undo the grants of failed attempt op. Returns how many masters had
 * granted it. */
static size_t undo_grants(struct hilock_multi *m, struct fanout *op)
{
    size_t n = 0;
    for (size_t i = 0; i < op->n; i++)
        if (fanout_node_ok(op, i) && ++n)
            send_release(m, (int)i, undo_done);
    return n;
}

/* A split vote (some masters granted, others were taken by another
 * owner at the same moment): wait in blocking member b's queue for a
 * short random time, longer each time, whatever wakes it meanwhile (the
 * undo's own release message among others), so that the contenders do
 * not split again in step. */
static void split_backoff(struct hilock_multi *m, size_t b)
{
    uint32_t ms = backoff_delay_ms(2, 64, m->splits, m->eng->rng);
    m->splits += m->splits < 8;
    if (m->parked)
        wait_hold_off(m->parked, ms);
    park(m, b, ms);
    if (m->parked)
        wait_hold_off(m->parked, ms);
}

static void acquire_done(struct fanout *op, int status,
                         const struct op_result *res)
{
    struct hilock_multi *m = op->ctx;
    m->pending = NULL;
    if (status == 0 && op->n > 1 &&
        quorum_validity(engine_lease(m->eng, m->lease_ms),
                        clock_now_ms() - op->sent_ms) <= 0)
        status = HILOCK_ENOQUORUM;
    if (status == 0) {
        for (size_t i = 0; i < m->k; i++)
            hold_grant(m->members[i], op->sent_ms, m->lease_ms == 0,
                       engine_lease(m->eng, m->lease_ms));
        m->held = 1;
        m->splits = 0;
        finish(m, 0);
        return;
    }
    op->status = status; /* late grants are undone */
    int split = undo_grants(m, op) && status == HILOCK_EBUSY;
    if (m->deadline == 0 ||
        (status != HILOCK_EBUSY && !engine_transient(status))) {
        finish(m, status);
    } else if (clock_now_ms() >= m->deadline) {
        finish(m, status == HILOCK_ENOQUORUM ? status : HILOCK_ETIMEDOUT);
    } else if (split) {
        split_backoff(m, res ? (size_t)res->index : 0);
    } else {
        m->splits = 0;
        park(m, status == HILOCK_EBUSY && res ? (size_t)res->index : 0,
             status == HILOCK_EBUSY && res ? res->ttl_ms : 50);
    }
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct hilock_multi *m = arg;
    struct reentry *guard = m->eng->guard;
    reentry_enter(guard);
    m->deadline = 1; /* passed, whatever the clock's rounding */
    if (m->pending)
        fanout_complete(m->pending, HILOCK_ETIMEDOUT);
    else if (m->op == MULTI_ACQUIRING)
        finish(m, HILOCK_ETIMEDOUT);
    reentry_leave(guard);
}

/* A member lost its hold: the MultiLock is lost (told once). The other
 * names are given back at once and no longer renewed: held all or none. */
static void member_lost(struct hilock_lock *lock, int status,
                        const struct hilock_result *res, void *arg)
{
    struct hilock_multi *m = arg;
    (void)lock;
    if (!m->held)
        return;
    m->held = 0;
    if (!m->freeing && !closing(m))
        send_release(m, -1, undo_done); /* the lost name is skipped */
    for (size_t i = 0; i < m->k; i++)
        hold_drop(m->members[i]);
    if (m->lost_cb && !m->freeing && !closing(m))
        m->lost_cb(m, status, res, m->lost_arg);
}

static void release_done(struct fanout *op, int status,
                         const struct op_result *res)
{
    struct hilock_multi *m = op->ctx;
    m->pending = NULL;
    m->held = 0;
    for (size_t i = 0; i < m->k; i++) {
        hold_drop(m->members[i]);
        if (status == 0)
            wait_released(m->members[i], 0);
    }
    if (status == 0 && res && res->count == 0)
        status = HILOCK_ENOTOWNER;
    finish(m, status);
}

/* ---- the engine's upcalls: members here, other handles to lock.c ---- */

static struct multi_state *state_of(struct engine *eng)
{
    return eng->multi;
}

static void hook_attempt(struct hilock_lock *lock)
{
    struct hilock_multi *m = lock->multi;
    if (!m) {
        state_of(lock->eng)->lock_hooks.attempt(lock);
        return;
    }
    if (!m->pending && m->op == MULTI_ACQUIRING) {
        int rc = send_attempt(m);
        if (rc)
            finish(m, rc);
    }
}

static void hook_wait_expired(struct hilock_lock *lock)
{
    if (!lock->multi)
        state_of(lock->eng)->lock_hooks.wait_expired(lock);
}

int multi_init(struct engine *eng)
{
    struct multi_state *s = calloc(1, sizeof(*s));
    if (!s)
        return HILOCK_ENOMEM;
    LIST_INIT(&s->all);
    s->lock_hooks = eng->hooks;
    eng->hooks.attempt = hook_attempt;
    eng->hooks.wait_expired = hook_wait_expired;
    eng->multi = s;
    return 0;
}

void multi_cancel_all(struct engine *eng)
{
    struct hilock_multi *m;
    LIST_FOREACH(m, &state_of(eng)->all, link) {
        m->freeing = 1;
        if (m->op != MULTI_IDLE && !m->pending)
            finish(m, HILOCK_ECANCELED);
    }
}

void multi_free_all(struct engine *eng)
{
    struct multi_state *s = state_of(eng);
    while (!LIST_EMPTY(&s->all)) {
        struct hilock_multi *m = LIST_FIRST(&s->all);
        LIST_REMOVE(m, link);
        if (m->deadline_timer)
            event_free(m->deadline_timer);
        free(m); /* the members go with the engine's handles */
    }
    free(s);
    eng->multi = NULL;
}

/* ---- the public calls ---- */

int multi_new(struct engine *eng, const char *const *names, const size_t *lens,
              size_t k, uint64_t owner_tag, struct hilock_multi **out)
{
    if (!names || !lens || !out || k == 0 || k > HILOCK_MULTI_MAX)
        return HILOCK_EINVAL;
    struct hilock_multi *m = calloc(1, sizeof(*m) + k * sizeof(m->members[0]));
    if (!m)
        return HILOCK_ENOMEM;
    m->eng = eng;
    m->refs = 1;
    TAILQ_INIT(&m->ops);
    for (size_t i = 0; i < k; i++) {
        int rc = 0;
        for (size_t j = 0; j < i && !rc; j++)
            if (lens[i] == lens[j] && memcmp(names[i], names[j], lens[i]) == 0)
                rc = HILOCK_EINVAL; /* a name twice */
        /* one script takes them all: in a cluster, one slot */
        if (i > 0 && names[i] && names[0] &&
            topo_slot(eng->topo, names[i], lens[i]) !=
                topo_slot(eng->topo, names[0], lens[0]))
            rc = HILOCK_EINVAL;
        if (rc || (rc = lock_new(eng, names[i], lens[i], owner_tag, KIND_MUTEX,
                                 &m->members[i]))) {
            for (size_t j = 0; j < i; j++)
                hilock_lock_free(m->members[j]);
            free(m);
            return rc;
        }
        m->members[i]->multi = m;
        hilock_lock_on_lost(m->members[i], member_lost, m);
    }
    m->k = k;
    LIST_INSERT_HEAD(&state_of(eng)->all, m, link);
    *out = m;
    return 0;
}

/* Common checks of the public entry points. */
static int usable(const struct hilock_multi *m)
{
    if (!m || m->freeing)
        return HILOCK_EINVAL;
    return closing(m) ? HILOCK_ECANCELED : 0;
}

int hilock_multi_acquire(struct hilock_multi *m, uint64_t wait_ms,
                         uint64_t lease_ms, hilock_multi_cb *cb, void *arg)
{
    int rc = usable(m);
    if (rc)
        return rc;
    if (!cb || lease_ms > HILOCK_MS_MAX || wait_ms > HILOCK_MS_MAX || m->held)
        return HILOCK_EINVAL;
    if (m->op != MULTI_IDLE)
        return HILOCK_EINPROGRESS;
    if (wait_ms && !m->deadline_timer &&
        !(m->deadline_timer = evtimer_new(m->eng->base, on_deadline, m)))
        return HILOCK_ENOMEM;
    m->lease_ms = (uint32_t)lease_ms;
    m->deadline = wait_ms ? clock_now_ms() + wait_ms : 0;
    m->op = MULTI_ACQUIRING;
    m->cb = cb;
    m->arg = arg;
    if ((rc = send_attempt(m))) {
        m->op = MULTI_IDLE;
        return rc;
    }
    if (wait_ms) {
        struct timeval tv = clock_tv(wait_ms);
        evtimer_add(m->deadline_timer, &tv);
    }
    return 0;
}

int hilock_multi_release(struct hilock_multi *m, hilock_multi_cb *cb,
                         void *arg)
{
    int rc = usable(m);
    if (rc)
        return rc;
    if (!cb)
        return HILOCK_EINVAL;
    if (m->op != MULTI_IDLE)
        return HILOCK_EINPROGRESS;
    struct fanout *op = send_release(m, -1, release_done);
    if (!op)
        return HILOCK_ENOMEM;
    m->op = MULTI_RELEASING;
    m->cb = cb;
    m->arg = arg;
    m->pending = op;
    return 0;
}

int hilock_multi_cancel(struct hilock_multi *m)
{
    if (usable(m) || m->op != MULTI_ACQUIRING)
        return HILOCK_EINVAL;
    struct reentry *guard = m->eng->guard;
    reentry_enter(guard);
    if (m->pending)
        fanout_complete(m->pending, HILOCK_ECANCELED);
    else
        finish(m, HILOCK_ECANCELED);
    reentry_leave(guard);
    return 0;
}

int hilock_multi_on_lost(struct hilock_multi *m, hilock_multi_cb *cb,
                         void *arg)
{
    if (!m || m->freeing)
        return HILOCK_EINVAL;
    m->lost_cb = cb;
    m->lost_arg = arg;
    return 0;
}

int hilock_multi_held(const struct hilock_multi *m)
{
    return m && m->held;
}

void hilock_multi_free(struct hilock_multi *m)
{
    if (!m || m->freeing)
        return;
    struct reentry *guard = m->eng->guard;
    m->freeing = 1;
    if (guard->closing)
        return; /* the teardown frees it */
    reentry_enter(guard);
    for (struct fanout *op = TAILQ_FIRST(&m->ops), *next; op; op = next) {
        next = TAILQ_NEXT(op, ctx_link);
        if (op->done != undo_done)
            fanout_complete(op, HILOCK_ECANCELED);
    }
    if (m->op != MULTI_IDLE)
        finish(m, HILOCK_ECANCELED);
    if (m->held) {
        m->held = 0;
        send_release(m, -1, undo_done);
        for (size_t i = 0; i < m->k; i++)
            hold_drop(m->members[i]);
    }
    multi_unref(m);
    reentry_leave(guard);
}
