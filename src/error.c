/* SPDX-License-Identifier: BSD-3-Clause */
/* error.c -- messages and names for the HILOCK_E* codes.
 *
 * Both tables come from HILOCK_ERRNO_MAP in the public header, so a code
 * cannot exist without its message. */
#include "hilock/hilock.h"

const char *hilock_strerror(int err)
{
    switch (err) {
#define HILOCK_STRERROR_(name, value, msg) case HILOCK_##name: return msg;
        HILOCK_ERRNO_MAP(HILOCK_STRERROR_)
#undef HILOCK_STRERROR_
    case 0:
        return "success";
    default:
        return "unknown error";
    }
}

const char *hilock_err_name(int err)
{
    switch (err) {
#define HILOCK_ERR_NAME_(name, value, msg) case HILOCK_##name: return "HILOCK_" #name;
        HILOCK_ERRNO_MAP(HILOCK_ERR_NAME_)
#undef HILOCK_ERR_NAME_
    case 0:
        return "OK";
    default:
        return "UNKNOWN";
    }
}
