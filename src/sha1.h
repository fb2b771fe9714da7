/* SPDX-License-Identifier: BSD-3-Clause */
/* sha1.h -- SHA-1, only to name Lua scripts the way EVALSHA expects. */
#ifndef HILOCK_SHA1_H
#define HILOCK_SHA1_H

#include <stddef.h>

/* Write the SHA-1 of data[0..len) as 40 lowercase hex digits plus NUL. */
void sha1_hex(const void *data, size_t len, char out[41]);

#endif
