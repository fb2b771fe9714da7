/* SPDX-License-Identifier: BSD-3-Clause */
/* kind_rw.c -- the two sides of a read-write lock (hilock_rwlock_new):
 * Redisson's RReadWriteLock hash with its mode field; readers share it,
 * a writer holds it alone, both re-entrant with a lease
 * (src/lua/lib/rw.lua). A waiting writer leaves a mark that keeps new
 * readers off, which it takes back when it gives up. The two sides share
 * their functions, which hand wire_rw.c the handle's side (struct
 * wire_rw_side): its scripts and what tells it apart in their
 * arguments. */
#include "kind.h"

#include <stdint.h>

#include "clock.h"
#include "fanout.h"
#include "handle.h"

/* How long a waiting writer's mark keeps new readers off (see
 * src/lua/lib/rw.lua), and how often at least the writer retries (which
 * renews the mark) while it waits. A writer that dies while waiting keeps
 * readers off for this long at most. */
#define RW_WRITER_MARK_MS 3000
#define RW_WRITER_RETRY_MS (RW_WRITER_MARK_MS / 3)

/* How long a waiting writer's mark lasts: RW_WRITER_MARK_MS, or less when
 * its wait ends sooner. */
static uint32_t writer_mark_ms(const struct hilock_lock *lock)
{
    uint64_t now = clock_now_ms(), deadline = handle_wait_deadline(lock);
    uint64_t left = deadline > now ? deadline - now : 1;
    return (uint32_t)(left < RW_WRITER_MARK_MS ? left : RW_WRITER_MARK_MS);
}

/* The side lock's handles take. */
static const struct wire_rw_side *side_of(const struct hilock_lock *lock)
{
    return lock->kind == &kind_write ? &wire_rw_writer : &wire_rw_reader;
}

/* The undo of what the attempt with request id attempt took, as rid,
 * into cmd (read_undo.lua, write_undo.lua: only a hold that attempt
 * began). */
static void rw_undo_into(struct hilock_lock *lock, struct resp_buf *cmd,
                         uint64_t attempt, uint64_t rid)
{
    struct engine *eng = lock->eng;
    const struct wire_rw_side *side = side_of(lock);
    struct wire_lock w = handle_wire(lock);
    wire_rw_undo(cmd, eng->scripts.sha[side->undo], &w, side, attempt, rid,
                 handle_hold_lease(lock), topo_publish(eng->topo));
}

/* op->undo of an attempt (see fanout.h): a decided attempt resent after a
 * drop undoes what its request id may have taken instead. */
static int resend_undo(struct fanout *op, struct resp_buf *cmd, uint64_t rid)
{
    struct hilock_lock *lock = op->ctx;
    resp_reset(cmd);
    rw_undo_into(lock, cmd, rid, ++lock->eng->seq);
    return (int)side_of(lock)->undo;
}

/* An attempt; a resend once it is decided goes as undo. A waiting writer
 * that finds the lock busy leaves its mark. */
static void rw_acquire(struct hilock_lock *lock, struct fanout *op,
                       int first, uint64_t rid)
{
    const struct wire_rw_side *side = side_of(lock);
    int wait = handle_wait_deadline(lock) != 0;
    (void)first;
    if (side == &wire_rw_writer)
        lock->pending.queued |= wait;
    op->undo = resend_undo;
    struct kind_call c = kind_call(lock, op, side->acquire);
    wire_rw_acquire(c.cmd, c.sha, &c.w, side, handle_acquire_lease(lock),
                    wait, writer_mark_ms(lock), rid);
}

static void rw_release(struct hilock_lock *lock, struct fanout *op,
                       uint32_t drop, uint64_t rid)
{
    const struct wire_rw_side *side = side_of(lock);
    struct kind_call c = kind_call(lock, op, side->release);
    wire_rw_release(c.cmd, c.sha, &c.w, side, rid, handle_hold_lease(lock),
                    drop, c.publish);
}

/* The undo of an attempt, by its request id. */
static void rw_undo(struct hilock_lock *lock, struct fanout *op,
                    uint64_t attempt, uint64_t rid)
{
    fanout_eval(op, side_of(lock)->undo);
    rw_undo_into(lock, fanout_cmd(op), attempt, rid);
}

/* A waiting writer gave up: its mark goes (sent after its last attempt,
 * which may renew it). */
static void write_leave(struct hilock_lock *lock, struct fanout *op)
{
    struct kind_call c = kind_call(lock, op, SCRIPT_WRITE_LEAVE);
    wire_write_leave(c.cmd, c.sha, &c.w);
}

const struct kind_ops kind_read = {
    KIND_LOCK_SIDE,
    .wire = &wire_kind_read,
    .channel = SUB_RWLOCK,
    .shared = 1,
    .bare_field = 1,
    .encode_acquire = rw_acquire,
    .encode_release = rw_release,
    .encode_undo = rw_undo,
};

const struct kind_ops kind_write = {
    KIND_LOCK_SIDE,
    .wire = &wire_kind_write,
    .channel = SUB_RWLOCK,
    .busy_retry_ms = RW_WRITER_RETRY_MS, /* renews the mark */
    .field_suffix = ":write",
    .encode_acquire = rw_acquire,
    .encode_release = rw_release,
    .encode_leave = write_leave,
    .encode_undo = rw_undo,
};
