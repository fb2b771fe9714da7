/* SPDX-License-Identifier: BSD-3-Clause */
/* kind.c -- the kinds by their wire id (see kind.h). */
#include "kind.h"

#include "fanout.h"
#include "handle.h"
#include "hot.h"

const struct kind_ops *kind_of(enum lock_kind id)
{
    static const struct kind_ops *const table[] = {
        [KIND_MUTEX] = &kind_mutex, [KIND_READ] = &kind_read,
        [KIND_WRITE] = &kind_write, [KIND_SEM] = &kind_sem,
        [KIND_PERMIT] = &kind_permit,
    };
    return table[id];
}

struct kind_call kind_call(struct hilock_lock *lock, struct fanout *op,
                           enum script_id id)
{
    struct engine *eng = lock->eng;
    struct kind_call c = {handle_wire(lock), fanout_cmd(op),
                          eng->scripts.sha[id], topo_publish(eng->topo)};
    fanout_eval(op, id);
    return c;
}

HILOCK_HOT
struct fanout *kind_release_new(struct hilock_lock *lock, uint32_t drop,
                                int node, uint64_t now_us,
                                fanout_done_fn *done)
{
    struct engine *eng = lock->eng;
    struct fanout *op =
        fanout_new(eng, OP_KIND_RELEASE, node, lock->slot, 0, done);
    if (!op)
        return NULL;
    op->drop = drop;
    op->sent_ms = now_us / 1000u;
    lock->kind->encode_release(lock, op, drop, ++eng->seq);
    handle_attach(lock, op);
    return op;
}
