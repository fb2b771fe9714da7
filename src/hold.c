/* SPDX-License-Identifier: BSD-3-Clause */
/* hold.c -- see hold.h. */
#include "hold.h"

#include "fanout.h"
#include "hot.h"
#include "wait.h"
#include "watchdog.h"

HILOCK_HOT
int hold_grant(struct hilock_lock *lock, uint64_t sent_ms, int watchdog,
               uint32_t lease_ms)
{
    int again = lock->hold.count++ > 0 || handle_hold_begin(lock);
    lock->waited |= lock->pending.queued;
    lock->hold.auto_renew |= watchdog != 0;
    hold_share_lease(lock, sent_ms, lease_ms);
    return again;
}

void hold_drop(struct hilock_lock *lock)
{
    if (lock->hold.count > 0 && --lock->hold.count == 0)
        hold_end(lock);
}

HILOCK_HOT
void hold_end(struct hilock_lock *lock)
{
    watchdog_forget(lock);
    handle_hold_end(lock);
    lock->hold.count = 0;
    lock->hold.token = 0;
    lock->hold.auto_renew = 0;
    lock->waited = 0;
}

void hold_lost(struct hilock_lock *lock)
{
    struct user_cb cb = lock->on_lost;
    int releasing = lock->pending.what == PENDING_RELEASE;
    int held = lock->hold.count > (releasing ? 1u : 0u);
    int told = held && !lock->freeing && !handle_closing(lock);
    lock->eng->stats.lost += told;
    hold_end(lock);
    if (told && cb_set(&cb)) {
        struct hilock_result res = cb_result(CB_FIELD_NONE, 0);
        cb_call(&cb, lock->kind->api, lock, HILOCK_ELOST, &res);
    }
}

/* Handle t's hold has lease_ms from sent_ms on (the watchdog may report
 * it lost at once, when it cannot be scheduled). */
static void lease_set(struct hilock_lock *t, uint64_t sent_ms,
                      uint32_t lease_ms)
{
    if (t->hold.count > 0 && !t->freeing) {
        t->hold.lease_ms = lease_ms;
        watchdog_confirmed(t, sent_ms);
    }
}

HILOCK_HOT
void hold_share_lease(struct hilock_lock *lock, uint64_t sent_ms,
                      uint32_t lease_ms)
{
    struct hilock_lock *t[HANDLE_TWINS_MAX];
    if (handle_holds_alone(lock)) { /* nothing touched after: no reference */
        lease_set(lock, sent_ms, lease_ms);
        return;
    }
    size_t n = handle_twins(lock, t);
    for (size_t i = 0; i < n; i++) {
        lease_set(t[i], sent_ms, lease_ms);
        handle_unref(t[i]);
    }
}

HILOCK_HOT
void hold_share_end(struct hilock_lock *lock)
{
    struct hilock_lock *t[HANDLE_TWINS_MAX];
    size_t n = handle_twins(lock, t);
    for (size_t i = 0; i < n; i++) {
        hold_lost(t[i]);
        handle_unref(t[i]);
    }
}

HILOCK_HOT
void hold_released_news(struct hilock_lock *lock, const struct fanout *op,
                        const struct op_result *res)
{
    if (op->handed == REPLY_HANDED_LOCAL)
        wait_handed(lock->eng, lock->name, lock->name_len, &op->handoff);
    else if (op->handed == REPLY_HANDED_NONE)
        wait_released(lock, res->heard);
}
