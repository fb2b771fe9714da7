// SPDX-License-Identifier: BSD-3-Clause
// header_cpp.cpp -- the public header compiles as C++11 with
// -pedantic-errors -Werror, inside extern "C" guards of its own.
#include <hilock/hilock.h>
#include <hilock/hilock.h>

static void on_result(struct hilock_lock *, int, int64_t, void *) {}

int main()
{
    hilock_options opts = hilock_options();
    hilock_lock_cb *cb = on_result;
    (void)cb;
    opts.node.port = 6379;
    int err = HILOCK_EBUSY;
    return (err < 0 && opts.node.port == 6379) ? 0 : 1;
}
