/* SPDX-License-Identifier: BSD-3-Clause */
/* wait.h -- waiting acquires: one queue per lock name, one retry at a
 * time, woken by release messages (see wait.c). */
#ifndef HILOCK_WAIT_H
#define HILOCK_WAIT_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "handle.h"
#include "reply.h"

void waits_init(struct engine *eng);
/* Free every queue (client teardown; the handles go separately). */
void waits_free(struct engine *eng);
/* Nonzero when this client has waiters parked on lock's name. */
int wait_has_waiters(const struct hilock_lock *lock);
/* wait_has_waiters for an acquire that may wait (its deadline set), which
 * notes how much news of its name came so far: its park after a busy
 * answer retries at once when news came in between (see wait.c). */
int wait_look(struct hilock_lock *lock);
/* Set the deadline of lock's wait to wait_ms from now and arm its timer
 * (eng->hooks.wait_expired fires then). Returns 0 or HILOCK_ENOMEM. */
int wait_begin(struct hilock_lock *lock, uint64_t wait_ms);
/* Arm the timer of lock's wait (its deadline set) for what is left of it:
 * eng->hooks.wait_expired fires then. */
void wait_arm(struct hilock_lock *lock);
/* Set the deadline (ms) of a wait whose timer is someone else's (a
 * MultiLock member). Returns 0 or HILOCK_ENOMEM. */
int wait_set_deadline(struct hilock_lock *lock, uint64_t deadline);
/* The acquire finished: leave the queue, disarm the deadline. */
void wait_end(struct hilock_lock *lock);
/* Park lock (busy with holder ttl_ms; -1 unknown) in its name's queue: at
 * the head when it was the head's retry, else at the tail. Returns 0 or
 * HILOCK_ENOMEM. */
int wait_park(struct hilock_lock *lock, int64_t ttl_ms);
/* Let lock's name's head retry no sooner than ms from now, whatever wakes
 * it (a split Redlock vote backs off with jitter). */
void wait_hold_off(struct hilock_lock *lock, uint64_t ms);
/* This client released lock's name; heard subscribers received the release
 * message. Wake the name's head waiter: now, or after a short yield when
 * waiters elsewhere heard it too. */
void wait_released(struct hilock_lock *lock, int64_t heard);
/* Whether lock's release may be quiet (publish nothing): one node, a
 * waiter of this client is next on the name, and the streak of releases
 * that keep the lock in this process is not at its end (see wait.c). */
int wait_quiet_ok(const struct hilock_lock *lock);
/* A release of lock's name was sent by the handle's own call. Quiet: the
 * name's head waiter's attempt follows it on the loop's next turn (after
 * it on the connection), without waiting for its answer. Else its message
 * is on the way to this client's subscriptions too (see wait.c). */
void wait_release_sent(struct hilock_lock *lock, int quiet);
/* That release's answer came: heard subscribers got its message (0: it
 * published none, or failed). Called once for every release sent, before
 * the other news of its answer. */
void wait_release_answered(struct hilock_lock *lock, int64_t heard);
/* This client's quiet release of lock's name is answered with status: the
 * head's attempt sent after it takes the lock; after a failure (it may
 * have freed the lock all the same) the head looks again. With no waiter
 * left here, hooks.owed publishes the release message. */
void wait_passed(struct hilock_lock *lock, int status);
/* The node's news: a release message on name's channel of kind, or the
 * channel's subscription confirmed (a release may have been missed
 * before). */
void wait_on_message(struct engine *eng, enum sub_kind kind,
                     const char *name, size_t len);
/* Fair mode: the lock name was handed to the waiter of this client that
 * h names (its owner tag and wait id); hooks.handed tells it, with the
 * time the hold lasts, or 0 when it was learnt too late to count. A
 * hand-off for no waiter here (it gave up, or took the lock already) is
 * ignored. */
void wait_handed(struct engine *eng, const char *name, size_t len,
                 const struct reply_handoff *h);
/* Fair mode: a message msg (length mlen) on this client's hand-off channel
 * of name: a hand-off, or "wake:<ms>" (a waiter here is next in line: the
 * head looks again when the new holder's short lease ends; a bare "wake"
 * makes it retry to learn that lease). */
void wait_on_handoff(struct engine *eng, const char *name, size_t len,
                     const char *msg, size_t mlen);
/* Subscribe every waited name again (the topology moved channels). */
void wait_rewant_all(struct engine *eng);

#endif
