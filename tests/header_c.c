/* SPDX-License-Identifier: BSD-3-Clause */
/* header_c.c -- the public header compiles alone, twice, as strict C11
 * (-pedantic-errors -Werror): it must include what it uses and nothing
 * from hiredis or libevent. */
#include <hilock/hilock.h>
#include <hilock/hilock.h>

static const int codes[] = {
#define CODE_(name, value, msg) HILOCK_##name,
    HILOCK_ERRNO_MAP(CODE_)
#undef CODE_
};

int main(void)
{
    struct hilock_options opts = {0};
    struct hilock_result res = {0, 0, 0, 0, 0, 0, 0};
    enum hilock_topology topo = HILOCK_TOPOLOGY_CLUSTER;
    enum hilock_rw_side side = HILOCK_WRITE;
    hilock_lock_cb *cb = 0;
    hilock_semaphore_cb *scb = 0;
    hilock_permit_cb *pcb = 0;
    hilock_multi_cb *mcb = 0;
    hilock_log_cb *log = 0;
    (void)cb;
    (void)scb;
    (void)pcb;
    (void)mcb;
    (void)log;
    (void)side;
    opts.topology = topo;
    if (res.ttl_ms != 0 || HILOCK_TTL_NONE == HILOCK_TTL_NOKEY)
        return 1;
    opts.node.port = 6379;
    return (sizeof codes / sizeof codes[0] > 0 && opts.node.port == 6379 &&
            HILOCK_NAME_MAX > 0 && HILOCK_MS_MAX > 0)
               ? 0
               : 1;
}
