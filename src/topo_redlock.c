/* SPDX-License-Identifier: BSD-3-Clause */
/* topo_redlock.c -- the Redlock topology: N independent masters, member
 * i being master i. The engine sends one request to each and counts the
 * votes (fanout.c, quorum.c); this backend only routes. A master that is
 * down fails its own requests (node_down, node_vote_ms let the engine
 * count it as a no at once) and reconnects by itself; the others go on. */
#include "topo_backend.h"

/* One node per master of o, in their order. Returns 0 or
 * HILOCK_ENOMEM. */
static int redlock_init(struct topo *t, const struct hilock_options *o)
{
    return topo_fixed_new(t, o->redlock.masters, o->redlock.count);
}

const struct topo_ops topo_redlock_ops = {
    .name = "redlock",
    .slotted = 0,
    .init = redlock_init,
    .start = topo_fixed_start,
    .close = topo_fixed_close,
    .cancel = topo_fixed_cancel,
    .request = topo_fixed_request,
    .node = topo_fixed_node,
    .publish = topo_fixed_publish,
    .unwant = topo_fixed_unwant,
};
