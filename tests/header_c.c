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
    hilock_lock_cb *cb = 0;
    hilock_log_cb *log = 0;
    (void)cb;
    (void)log;
    opts.node.port = 6379;
    return (sizeof codes / sizeof codes[0] > 0 && opts.node.port == 6379 &&
            HILOCK_NAME_MAX > 0 && HILOCK_MS_MAX > 0)
               ? 0
               : 1;
}
