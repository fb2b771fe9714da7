// SPDX-License-Identifier: BSD-3-Clause
// header_cpp.cpp -- the public header compiles as C++11 with
// -pedantic-errors -Werror, inside extern "C" guards of its own.
#include <hilock/hilock.h>
#include <hilock/hilock.h>

static void on_result(struct hilock_lock *, int, const hilock_result *,
                      void *)
{
}
static void on_sem(hilock_semaphore *, int, const hilock_result *, void *) {}
static void on_permit(hilock_permit *, int, const hilock_result *, void *) {}
static void on_multi(hilock_multi *, int, const hilock_result *, void *) {}

int main()
{
    hilock_options opts = hilock_options();
    hilock_lock_cb *cb = on_result;
    hilock_semaphore_cb *scb = on_sem;
    hilock_permit_cb *pcb = on_permit;
    hilock_multi_cb *mcb = on_multi;
    hilock_result res = hilock_result();
    (void)cb;
    (void)scb;
    (void)pcb;
    (void)mcb;
    opts.topology = HILOCK_TOPOLOGY_REDLOCK;
    if (res.ttl_ms != 0 || HILOCK_TTL_NONE == HILOCK_TTL_NOKEY)
        return 1;
    opts.node.port = 6379;
    int err = HILOCK_EBUSY;
    return (err < 0 && opts.node.port == 6379) ? 0 : 1;
}
