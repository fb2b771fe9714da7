/* SPDX-License-Identifier: BSD-3-Clause */
/* kind_rw.c -- the two sides of a read-write lock (hilock_rwlock_new):
 * Redisson's RReadWriteLock hash with its mode field; readers share it,
 * a writer holds it alone, both re-entrant with a lease
 * (src/lua/lib/rw.lua). A waiting writer leaves a mark that keeps new
 * readers off, which it takes back when it gives up. Each side's
 * functions hand wire_rw.c its side (struct wire_rw_side): its scripts
 * and what tells it apart in their arguments. */
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

/* The undo of what the attempt with request id attempt took, as rid,
 * into cmd (read_undo.lua, write_undo.lua: only a hold that attempt
 * began). */
static void rw_undo_into(struct hilock_lock *lock,
                         const struct wire_rw_side *side,
                         struct resp_buf *cmd, uint64_t attempt, uint64_t rid)
{
    struct engine *eng = lock->eng;
    struct wire_lock w = handle_wire(lock);
    wire_rw_undo(cmd, eng->scripts.sha[side->undo], &w, side, attempt, rid,
                 handle_hold_lease(lock), topo_publish(eng->topo));
}

/* op->undo of an attempt of side (see fanout.h): a decided attempt resent
 * after a drop undoes what its request id may have taken instead. */
static int resend_undo(struct fanout *op, const struct wire_rw_side *side,
                       struct resp_buf *cmd, uint64_t rid)
{
    struct hilock_lock *lock = op->ctx;
    resp_reset(cmd);
    rw_undo_into(lock, side, cmd, rid, ++lock->eng->seq);
    return (int)side->undo;
}

static int read_resend_undo(struct fanout *op, struct resp_buf *cmd,
                            uint64_t rid)
{
    return resend_undo(op, &wire_rw_reader, cmd, rid);
}

static int write_resend_undo(struct fanout *op, struct resp_buf *cmd,
                             uint64_t rid)
{
    return resend_undo(op, &wire_rw_writer, cmd, rid);
}

/* An attempt of side; a resend once it is decided goes as undo. */
static void rw_acquire(struct hilock_lock *lock, struct fanout *op,
                       const struct wire_rw_side *side,
                       int (*undo)(struct fanout *, struct resp_buf *,
                                   uint64_t),
                       uint64_t rid)
{
    struct wire_lock w = handle_wire(lock);
    op->undo = undo;
    fanout_eval(op, side->acquire);
    wire_rw_acquire(fanout_cmd(op), lock->eng->scripts.sha[side->acquire],
                    &w, side, handle_acquire_lease(lock),
                    handle_wait_deadline(lock) != 0, writer_mark_ms(lock),
                    rid);
}

static void read_acquire(struct hilock_lock *lock, struct fanout *op,
                         int first, uint64_t rid)
{
    (void)first;
    rw_acquire(lock, op, &wire_rw_reader, read_resend_undo, rid);
}

/* A waiting writer that finds the lock busy leaves its mark. */
static void write_acquire(struct hilock_lock *lock, struct fanout *op,
                          int first, uint64_t rid)
{
    (void)first;
    lock->pending.queued |= handle_wait_deadline(lock) != 0;
    rw_acquire(lock, op, &wire_rw_writer, write_resend_undo, rid);
}

/* A release of side. */
static void rw_release(struct hilock_lock *lock, struct fanout *op,
                       const struct wire_rw_side *side, uint32_t drop,
                       uint64_t rid)
{
    struct engine *eng = lock->eng;
    struct wire_lock w = handle_wire(lock);
    fanout_eval(op, side->release);
    wire_rw_release(fanout_cmd(op), eng->scripts.sha[side->release], &w,
                    side, rid, handle_hold_lease(lock), drop,
                    topo_publish(eng->topo));
}

static void read_release(struct hilock_lock *lock, struct fanout *op,
                         uint32_t drop, uint64_t rid)
{
    rw_release(lock, op, &wire_rw_reader, drop, rid);
}

static void write_release(struct hilock_lock *lock, struct fanout *op,
                          uint32_t drop, uint64_t rid)
{
    rw_release(lock, op, &wire_rw_writer, drop, rid);
}

/* The undo of an attempt, by its request id. */
static void read_undo(struct hilock_lock *lock, struct fanout *op,
                      uint64_t attempt, uint64_t rid)
{
    fanout_eval(op, wire_rw_reader.undo);
    rw_undo_into(lock, &wire_rw_reader, fanout_cmd(op), attempt, rid);
}

static void write_undo(struct hilock_lock *lock, struct fanout *op,
                       uint64_t attempt, uint64_t rid)
{
    fanout_eval(op, wire_rw_writer.undo);
    rw_undo_into(lock, &wire_rw_writer, fanout_cmd(op), attempt, rid);
}

/* A waiting writer gave up: its mark goes (sent after its last attempt,
 * which may renew it). */
static void write_leave(struct hilock_lock *lock, struct fanout *op)
{
    struct wire_lock w = handle_wire(lock);
    fanout_eval(op, SCRIPT_WRITE_LEAVE);
    wire_write_leave(fanout_cmd(op),
                     lock->eng->scripts.sha[SCRIPT_WRITE_LEAVE], &w);
}

const struct kind_ops kind_read = {
    .api = CB_LOCK,
    .wire = &wire_kind_read,
    .channel = SUB_RWLOCK,
    .shared = 1,
    .leased = 1,
    .owned = 1,
    .nested = 1,
    .queries = 1,
    .guarded = 1,
    .bare_field = 1,
    .encode_acquire = read_acquire,
    .encode_release = read_release,
    .encode_undo = read_undo,
};

const struct kind_ops kind_write = {
    .api = CB_LOCK,
    .wire = &wire_kind_write,
    .channel = SUB_RWLOCK,
    .leased = 1,
    .owned = 1,
    .nested = 1,
    .queries = 1,
    .guarded = 1,
    .busy_retry_ms = RW_WRITER_RETRY_MS, /* renews the mark */
    .field_suffix = ":write",
    .encode_acquire = write_acquire,
    .encode_release = write_release,
    .encode_leave = write_leave,
    .encode_undo = write_undo,
};
