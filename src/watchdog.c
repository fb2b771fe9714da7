/* SPDX-License-Identifier: BSD-3-Clause */
/* watchdog.c -- lease renewal and loss detection on one loop timer.
 *
 * Every held lock is in one heap keyed by its next event: for a lock under
 * the watchdog, the moment its renewal is due (a third of the lease after the
 * last confirmed renewal, rounded up to a grain so locks taken close together
 * fall due together and go out in one batched script call); while a renewal
 * is in flight, and for locks with an explicit lease, the moment the lease
 * could have run out on the server: sent time + lease - a safety margin, on
 * the monotonic clock. Reaching that moment without a confirmation means the
 * lock is lost, and the holder is told then, not when Redis says so. */
#include "watchdog.h"

#include <stdlib.h>

#include "clock.h"
#include "fanout.h"
#include "hot.h"

/* Most locks renewed by one script call: bounds the time Redis spends in
 * one script. */
#define RENEW_BATCH_MAX 512

/* One renew script call; a manual renewal (hilock_lock_renew) is a batch
 * of one with the caller's callback. A batch goes to one node per member:
 * in a cluster, the master of its locks' slots. */
struct renew_batch {
    struct user_cb cb;    /* manual: the caller's; no callback for the
                             watchdog */
    struct renew_batch *next; /* open batches of one timer run */
    const struct node *group; /* the node its locks' slots map to */
    uint64_t sent_ms;
    uint64_t valid_min;   /* earliest validity end among the locks */
    size_t nargs;         /* the locks' arguments (wire_renew_size) */
    uint32_t lease_ms;
    uint8_t keyed;        /* one lock, its key declared (see wire.h) */
    size_t n;
    struct hilock_lock *locks[];
};

static struct hilock_lock *lock_of(struct heap_node *n)
{
    return (struct hilock_lock *)((char *)n -
                                  offsetof(struct hilock_lock, wd.node));
}

/* Allowance taken off every lease for clock drift between the hosts and
 * for this loop reacting late (a busy loop runs timers late): 10 % + 2 ms,
 * so the holder hears of a loss while the key still has time left. */
static uint32_t lease_margin(uint32_t lease_ms)
{
    return lease_ms / 10 + 2 < lease_ms ? lease_ms / 10 + 2 : lease_ms - 1;
}

static void on_timer(evutil_socket_t fd, short what, void *arg);

void watchdog_init(struct engine *eng)
{
    heap_init(&eng->wd.heap);
    evtimer_assign(&eng->wd.timer, eng->base, on_timer, eng);
    eng->wd.armed_ms = 0;
}

void watchdog_free(struct engine *eng)
{
    evtimer_del(&eng->wd.timer);
    heap_free(&eng->wd.heap);
}

/* Point the timer at the heap's earliest key. */
static void rearm(struct engine *c)
{
    struct heap_node *top = heap_top(&c->wd.heap);
    if (!top) {
        evtimer_del(&c->wd.timer);
        c->wd.armed_ms = 0;
        return;
    }
    uint64_t key = heap_top_key(&c->wd.heap);
    if (c->wd.armed_ms == key)
        return;
    uint64_t now = clock_now_ms();
    uint64_t ms = key > now ? key - now : 0;
    struct timeval tv = clock_tv(ms);
    evtimer_add(&c->wd.timer, &tv);
    c->wd.armed_ms = key;
}

/* Key the lock at key (or drop it if no bucket can be made: then it is
 * reported lost rather than silently unwatched). */
static void schedule(struct hilock_lock *lock, uint64_t key)
{
    struct engine *c = lock->eng;
    if (heap_set(&c->wd.heap, &lock->wd.node, key) != 0) {
        c->hooks.expired(lock);
        return;
    }
    if (c->wd.armed_ms == 0 || key < c->wd.armed_ms)
        rearm(c);
}

HILOCK_HOT
void watchdog_confirmed(struct hilock_lock *lock, uint64_t sent_ms)
{
    struct engine *c = lock->eng;
    lock->wd.valid_until = sent_ms + lock->hold.lease_ms - lease_margin(lock->hold.lease_ms);
    if (lock->hold.renewing || !lock->hold.auto_renew) {
        schedule(lock, lock->wd.valid_until);
        return;
    }
    /* A third of the lease in force: a shorter lease set on a watchdog
     * lock (a renewal or re-entry with a lease) is renewed in time too. */
    uint32_t lease = lock->hold.lease_ms < c->opts->watchdog_lease_ms
                         ? lock->hold.lease_ms
                         : c->opts->watchdog_lease_ms;
    uint32_t period = lease / 3 ? lease / 3 : 1;
    uint64_t grain = period / 16 ? period / 16 : 1;
    uint64_t due = (sent_ms + period + grain - 1) / grain * grain;
    schedule(lock, due < lock->wd.valid_until ? due : lock->wd.valid_until);
}

HILOCK_HOT
void watchdog_forget(struct hilock_lock *lock)
{
    heap_remove(&lock->eng->wd.heap, &lock->wd.node);
    lock->hold.renewing = 0;
}

static void renew_done(struct fanout *op, int status,
                       const struct op_result *res);
static void renew_late(struct fanout *op, size_t i, const struct op_result *res);
static void renew_fini(struct fanout *op);

/* Encode the renew script for the locks of b into buf, with the deadline
 * in the clock of node n (none while n is not known). Past the earliest
 * validity end of the batch some lock of it has been reported lost here:
 * the server must not extend it any more. */
static void encode_batch(struct resp_buf *buf, const char *sha,
                         const struct node *n, const struct renew_batch *b)
{
    uint64_t deadline = b->lease_ms && n ? node_server_ms(n, b->valid_min)
                                         : 0;
    struct wire_lock key = handle_wire(b->locks[0]);
    wire_renew_head(buf, sha, b->nargs, b->lease_ms, deadline,
                    b->keyed ? &key : NULL);
    for (size_t i = 0; i < b->n; i++) {
        struct wire_lock w = handle_wire(b->locks[i]);
        wire_renew_lock(buf, &w);
    }
}

/* Send one renew script for the locks of b to every member; a manual
 * renewal (b->cb) is attached to its lock so that freeing the lock cancels
 * it. A resend carries the same deadline: harmless. Returns 0, or
 * HILOCK_ENOMEM with nothing sent and b untouched. */
static int send_batch(struct engine *c, struct renew_batch *b)
{
    unsigned slot = b->locks[0]->slot;
    struct fanout *op =
        fanout_new(c, OP_KIND_RENEW, -1, slot, (uint32_t)b->n, renew_done);
    if (!op)
        return HILOCK_ENOMEM;
    fanout_eval(op, SCRIPT_RENEW);
    op->data = b;
    for (size_t i = 0; i < c->nnodes; i++) {
        struct node *n = topo_node(c->topo, i, slot);
        if (b->lease_ms && n)
            node_clock_refresh(n);
        encode_batch(fanout_cmd_at(op, i), c->scripts.sha[SCRIPT_RENEW], n, b);
    }
    if (cb_set(&b->cb)) {
        handle_attach(b->locks[0], op);
    } else { /* b lives on for the answers after the decision */
        op->late = c->nnodes > 1 ? renew_late : NULL;
        op->fini = renew_fini;
    }
    c->stats.renewals_sent += b->n;
    fanout_submit(op, 0);
    return 0;
}

/* A renewal of lock could not be sent (no memory): renew a watchdog lock
 * again shortly, and watch a lock with an explicit lease to its end, as
 * before (on_timer reports any other lock reaching its key as lost). */
static void retry_soon(struct hilock_lock *lock)
{
    uint64_t soon = clock_now_ms() + 10;
    schedule(lock, lock->hold.auto_renew && soon < lock->wd.valid_until
                       ? soon : lock->wd.valid_until);
}

/* Send a watchdog batch; if that fails, put its locks back on the heap to
 * try again shortly (still bounded by their validity). */
static void flush_batch(struct engine *c, struct renew_batch *b)
{
    if (send_batch(c, b) == 0)
        return;
    for (size_t i = 0; i < b->n; i++) {
        struct hilock_lock *lock = b->locks[i];
        lock->hold.renewing = 0;
        retry_soon(lock);
        handle_unref(lock);
    }
    free(b);
}

/* Put lock into b (there is room). */
static void batch_push(struct renew_batch *b, struct hilock_lock *lock)
{
    b->locks[b->n++] = lock;
    b->nargs += lock->kind->wire->renew_size;
}

/* Put lock, keyed at its validity end already, into b, marked as having a
 * renewal in flight. */
static void batch_add(struct renew_batch *b, struct hilock_lock *lock)
{
    lock->hold.renewing = 1;
    handle_ref(lock);
    batch_push(b, lock);
    if (lock->wd.valid_until < b->valid_min)
        b->valid_min = lock->wd.valid_until;
}

static struct renew_batch *batch_new(size_t cap, uint32_t lease_ms)
{
    struct renew_batch *b =
        malloc(sizeof(*b) + cap * sizeof(b->locks[0]));
    if (b) {
        b->cb = cb_lock(NULL, NULL);
        b->next = NULL;
        b->group = NULL;
        b->keyed = 0;
        b->n = 0;
        b->nargs = 0;
        b->valid_min = UINT64_MAX;
        b->lease_ms = lease_ms;
        b->sent_ms = clock_now_ms();
    }
    return b;
}

/* Apply one watchdog renewal result (RENEW_*) to a lock. */
static void renew_apply(struct hilock_lock *lock, int ok,
                        const struct renew_batch *b)
{
    if (lock->freeing || !lock->hold.renewing)
        return; /* the hold ended while the renewal was out */
    lock->eng->stats.renewals_failed += ok != RENEW_OK;
    lock->hold.renewing = 0;
    if (ok == RENEW_OK && b->lease_ms == 0) {
        schedule(lock, lock->wd.valid_until); /* checked, lease unchanged */
    } else if (ok == RENEW_OK) {
        lock->eng->hooks.renewed(lock, b->sent_ms, b->lease_ms);
    } else if (ok == RENEW_GONE) {
        lock->eng->hooks.gone(lock);
    } else {
        uint64_t retry = clock_now_ms() +
                         lock->eng->opts->watchdog_lease_ms / 12 + 1;
        schedule(lock, retry < lock->wd.valid_until ? retry : lock->wd.valid_until);
    }
}

/* Apply a manual renewal and report it to its caller. */
static void renew_manual(int status, int ok, const struct renew_batch *b)
{
    struct hilock_lock *lock = b->locks[0];
    lock->eng->stats.renewals_failed += status != 0 || ok != RENEW_OK;
    if (status == 0 && ok == RENEW_GONE) {
        lock->eng->hooks.gone(lock);
        status = HILOCK_ELOST;
    } else if (status == 0 && ok == RENEW_UNKNOWN) {
        status = HILOCK_ENOQUORUM; /* neither held nor gone on a majority */
    } else if (status == 0 && lock->hold.count > 0 && !lock->hold.renewing) {
        lock->eng->hooks.renewed(lock, b->sent_ms, b->lease_ms);
    }
    if (lock->freeing || lock->eng->guard->closing)
        status = HILOCK_ECANCELED;
    struct hilock_result res =
        cb_result(status ? CB_FIELD_NONE : CB_FIELD_LEASE, b->lease_ms);
    cb_call(&b->cb, lock->kind->api, lock, status, &res);
}

/* Lock k of renewal op was renewed on a majority: node i, if it said it
 * had lost it, gets it back (see engine.h), while the lock is held. */
static void repair_node(const struct fanout *op, size_t i, size_t k,
                        struct hilock_lock *lock)
{
    if (fanout_renew_at(op, i, k) == RENEW_GONE && !lock->freeing &&
        heap_contains(&lock->wd.node))
        lock->eng->hooks.repair(lock, i);
}

/* Node i of a watchdog renewal on several masters answered after the
 * decision (a majority decides without waiting for the last one, which is
 * often the very master that restarted): the locks renewed that it lost
 * are repaired too. */
static void renew_late(struct fanout *op, size_t i, const struct op_result *res)
{
    struct renew_batch *b = op->data;
    if (!res || res->status != 0 || op->status != 0 || !b->lease_ms)
        return;
    const unsigned char *ok = fanout_renew_result(op);
    for (size_t k = 0; k < b->n; k++)
        if (ok[k] == RENEW_OK)
            repair_node(op, i, k, b->locks[k]);
}

/* A watchdog renewal's memory goes: its locks are let go. */
static void renew_fini(struct fanout *op)
{
    struct renew_batch *b = op->data;
    for (size_t i = 0; i < b->n; i++)
        handle_unref(b->locks[i]);
    free(b);
}

/* The one node of a batch answered that it does not serve lock (a
 * cluster master whose slot is migrating or has moved): renew the lock
 * alone with its key declared, which the cluster redirects to where the
 * key is. Returns 1 when that went out (the lock stays renewing). */
static int renew_keyed(struct hilock_lock *lock, const struct renew_batch *b)
{
    struct renew_batch *k = batch_new(1, b->lease_ms);
    if (!k)
        return 0;
    k->keyed = 1;
    batch_push(k, lock);
    k->valid_min = lock->wd.valid_until;
    handle_ref(lock);
    if (send_batch(lock->eng, k) == 0)
        return 1;
    handle_unref(lock);
    free(k);
    return 0;
}

static void renew_done(struct fanout *op, int status,
                       const struct op_result *res)
{
    struct renew_batch *b = op->data;
    struct engine *c = b->locks[0]->eng;
    const unsigned char *ok = status == 0 && res ? fanout_renew_result(op) : NULL;
    /* Only one node's answer says where a key is not (a Redlock's
     * unknown is a master that did not answer). */
    int reroute = ok && !b->keyed && op->n == 1;
    if (cb_set(&b->cb)) {
        renew_manual(status, ok ? ok[0] : RENEW_UNKNOWN, b);
        free(b);
    } else {
        for (size_t i = 0; i < b->n; i++) {
            struct hilock_lock *lock = b->locks[i];
            if (ok && ok[i] == RENEW_OK && b->lease_ms)
                for (size_t j = 0; j < op->n; j++)
                    repair_node(op, j, i, lock);
            if (reroute && ok[i] == RENEW_UNKNOWN && lock->hold.renewing &&
                !lock->freeing && renew_keyed(lock, b))
                continue;
            renew_apply(lock, ok ? ok[i] : RENEW_UNKNOWN, b);
        }
    }
    if (!c->guard->closing)
        rearm(c);
}

int watchdog_renew_now(struct hilock_lock *lock, uint32_t lease_ms,
                       struct user_cb cb)
{
    struct renew_batch *b = batch_new(1, lease_ms);
    if (!b)
        return HILOCK_ENOMEM;
    b->cb = cb;
    b->keyed = 1; /* one lock: routed by its key wherever it is */
    batch_push(b, lock);
    b->valid_min = lock->wd.valid_until;
    int rc = send_batch(lock->eng, b);
    if (rc)
        free(b);
    return rc;
}

/* Put lock into the open batch of its node and lease in *open (made when
 * there is none), sending it when it is full; while the renewal is out,
 * the lock is keyed at its validity end. Returns 0, or -1 without memory:
 * then the lock is where it was, or out of the heap if its key could not
 * move (the caller puts it back, see retry_soon). */
static int batch_put(struct engine *c, struct renew_batch **open,
                     uint32_t lease_ms, struct hilock_lock *lock)
{
    const struct node *group = topo_node(c->topo, 0, lock->slot);
    struct renew_batch **p = open;
    while (*p && ((*p)->group != group || (*p)->lease_ms != lease_ms))
        p = &(*p)->next;
    if (!*p) {
        if (!(*p = batch_new(RENEW_BATCH_MAX, lease_ms)))
            return -1;
        (*p)->group = group;
    }
    struct renew_batch *b = *p;
    if (heap_set(&c->wd.heap, &lock->wd.node, lock->wd.valid_until) != 0) {
        if (b->n == 0) { /* never send an empty batch */
            *p = b->next;
            free(b);
        }
        return -1;
    }
    batch_add(b, lock);
    if (b->n == RENEW_BATCH_MAX) {
        *p = b->next;
        flush_batch(c, b);
    }
    return 0;
}

/* Send every batch still open. */
static void flush_open(struct engine *c, struct renew_batch *open)
{
    while (open) {
        struct renew_batch *b = open;
        open = b->next;
        flush_batch(c, b);
    }
}

/* Whether a release that ends lock's hold is out. A renewal sent now
 * would go behind it with a later deadline: resent on the next connection
 * (a failover) after the release failed at its own deadline, it would
 * give the lease of a hold nobody has any more a new start. Whatever the
 * release's outcome, the hold ends with it. */
static int hold_ending(const struct hilock_lock *lock)
{
    return lock->pending.what == PENDING_RELEASE && lock->hold.count == 1 &&
           lock->kind->leased;
}

/* Timer: renew what is due, one batch per node; report what ran out. */
static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct engine *c = arg;
    struct heap_node *top;
    struct renew_batch *open = NULL;
    uint64_t now = clock_now_ms();
    reentry_enter(c->guard);
    c->wd.armed_ms = 0;
    while (!c->guard->closing && (top = heap_top(&c->wd.heap)) &&
           heap_top_key(&c->wd.heap) <= now) {
        struct hilock_lock *lock = lock_of(top);
        if (lock->hold.renewing || !lock->hold.auto_renew || now >= lock->wd.valid_until) {
            watchdog_forget(lock); /* out of the heap whatever the hook does */
            c->hooks.expired(lock);
            continue;
        }
        if (hold_ending(lock)) {
            schedule(lock, lock->wd.valid_until); /* lost if still out then */
            continue;
        }
        if (batch_put(c, &open, c->opts->watchdog_lease_ms, lock) != 0) {
            retry_soon(lock);
            break;
        }
    }
    flush_open(c, open);
    if (!c->guard->closing)
        rearm(c);
    reentry_leave(c->guard);
}

void watchdog_verify_all(struct engine *c)
{
    size_t n = c->wd.heap.len;
    struct heap_node **all = n ? malloc(n * sizeof(*all)) : NULL;
    struct renew_batch *open = NULL;
    if (!all)
        return;
    /* Collect first: batch_put moves locks between buckets. Each gets a
     * reference, as a lock reported lost on the way (no memory) may be
     * freed by its owner's callback. */
    n = heap_nodes(&c->wd.heap, all, n);
    for (size_t i = 0; i < n; i++)
        handle_ref(lock_of(all[i]));
    for (size_t i = 0; i < n; i++) {
        struct hilock_lock *lock = lock_of(all[i]);
        if (lock->hold.renewing || lock->freeing ||
            !heap_contains(&lock->wd.node))
            continue; /* in flight already, or its hold ended meanwhile */
        if (batch_put(c, &open,
                      lock->hold.auto_renew ? c->opts->watchdog_lease_ms : 0,
                      lock) != 0)
            retry_soon(lock);
    }
    flush_open(c, open);
    for (size_t i = 0; i < n; i++)
        handle_unref(lock_of(all[i]));
    free(all);
    rearm(c);
}
