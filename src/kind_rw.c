/* SPDX-License-Identifier: BSD-3-Clause */
/* kind_rw.c -- the two sides of a read-write lock (hilock_rwlock_new):
 * Redisson's RReadWriteLock hash with its mode field; readers share it,
 * a writer holds it alone, both re-entrant with a lease (src/lua/lib/rw.lua).
 * A waiting writer leaves a mark that keeps new readers off, which it
 * takes back when it gives up. */
#include "kind.h"

#include <stdint.h>

#include "clock.h"
#include "fanout.h"
#include "handle.h"

/* How long a waiting writer's mark keeps new readers off (see
 * src/lua/lib/rw.lua), and how often at least the writer retries (which renews
 * the mark) while it waits. A writer that dies while waiting keeps
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
 * began). Returns its script. */
static enum script_id rw_undo_into(struct hilock_lock *lock,
                                   struct resp_buf *cmd, uint64_t attempt,
                                   uint64_t rid)
{
    struct engine *eng = lock->eng;
    struct wire_lock w = handle_wire(lock);
    enum script_id id = lock->kind->id == KIND_WRITE ? SCRIPT_WRITE_UNDO
                                                      : SCRIPT_READ_UNDO;
    wire_rw_undo(cmd, eng->scripts.sha[id], &w, attempt, rid,
                 handle_hold_lease(lock), topo_publish(eng->topo));
    return id;
}

/* op->undo of an attempt (see fanout.h): a decided attempt resent after a
 * drop undoes what its request id may have taken instead. */
static int resend_undo(struct fanout *op, struct resp_buf *cmd, uint64_t rid)
{
    struct hilock_lock *lock = op->ctx;
    resp_reset(cmd);
    return (int)rw_undo_into(lock, cmd, rid, ++lock->eng->seq);
}

/* An attempt of either side, running script id. */
static void rw_acquire(struct hilock_lock *lock, struct fanout *op,
                       enum script_id id, uint64_t rid)
{
    struct wire_lock w = handle_wire(lock);
    op->undo = resend_undo;
    fanout_eval(op, id);
    wire_rw_acquire(fanout_cmd(op), lock->eng->scripts.sha[id], &w,
                    handle_acquire_lease(lock),
                    handle_wait_deadline(lock) != 0, writer_mark_ms(lock),
                    rid);
}

static void read_acquire(struct hilock_lock *lock, struct fanout *op,
                         int first, uint64_t rid)
{
    (void)first;
    rw_acquire(lock, op, SCRIPT_READ_ACQUIRE, rid);
}

/* A waiting writer that finds the lock busy leaves its mark. */
static void write_acquire(struct hilock_lock *lock, struct fanout *op,
                          int first, uint64_t rid)
{
    (void)first;
    lock->pending.queued |= handle_wait_deadline(lock) != 0;
    rw_acquire(lock, op, SCRIPT_WRITE_ACQUIRE, rid);
}

/* A release of either side, running script id. */
static void rw_release(struct hilock_lock *lock, struct fanout *op,
                       enum script_id id, uint32_t drop, uint64_t rid)
{
    struct engine *eng = lock->eng;
    struct wire_lock w = handle_wire(lock);
    fanout_eval(op, id);
    wire_rw_release(fanout_cmd(op), eng->scripts.sha[id], &w, rid,
                    handle_hold_lease(lock), drop, topo_publish(eng->topo));
}

static void read_release(struct hilock_lock *lock, struct fanout *op,
                         uint32_t drop, uint64_t rid)
{
    rw_release(lock, op, SCRIPT_READ_RELEASE, drop, rid);
}

static void write_release(struct hilock_lock *lock, struct fanout *op,
                          uint32_t drop, uint64_t rid)
{
    rw_release(lock, op, SCRIPT_WRITE_RELEASE, drop, rid);
}

/* The undo of either side's attempt, by its request id. */
static void rw_undo(struct hilock_lock *lock, struct fanout *op,
                    uint64_t attempt, uint64_t rid)
{
    /* encoded first: its script is known once encoded */
    fanout_eval(op, rw_undo_into(lock, fanout_cmd(op), attempt, rid));
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
    .id = KIND_READ,
    .channel = SUB_RWLOCK,
    .shared = 1,
    .leased = 1,
    .owned = 1,
    .nested = 1,
    .queries = 1,
    .guarded = 1,
    .encode_acquire = read_acquire,
    .encode_release = read_release,
    .encode_undo = rw_undo,
};

const struct kind_ops kind_write = {
    .id = KIND_WRITE,
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
    .encode_undo = rw_undo,
};
