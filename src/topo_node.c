/* SPDX-License-Identifier: BSD-3-Clause */
/* topo_node.c -- the one-node topology: every request goes to the one
 * server of the options (host and port, or a unix socket). When it is
 * down, requests wait for it within their deadlines and its connections
 * reconnect by themselves. */
#include "topo_backend.h"

/* The node of o's host and port (or unix socket). Returns 0 or
 * HILOCK_ENOMEM. */
static int node_topo_init(struct topo *t, const struct hilock_options *o)
{
    return topo_fixed_new(t, &o->node, 1);
}

const struct topo_ops topo_node_ops = {
    .name = "node",
    .slotted = 0,
    .init = node_topo_init,
    .start = topo_fixed_start,
    .close = topo_fixed_close,
    .cancel = topo_fixed_cancel,
    .request = topo_fixed_request,
    .node = topo_fixed_node,
    .publish = topo_fixed_publish,
    .unwant = topo_fixed_unwant,
};
