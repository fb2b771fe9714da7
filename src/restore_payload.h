/* SPDX-License-Identifier: BSD-3-Clause */
/* restore_payload.h -- a small hash in the format of DUMP, for RESTORE.
 *
 * RESTORE creates a key with a lease from such a payload, and refuses
 * (BUSYKEY) when the key exists: one plain command that takes a free lock
 * in Redisson's layout without running a script (see plain.c). The payload
 * is an RDB hash object, the RDB version it is written in (6: every Redis
 * with Lua reads it) and a CRC-64 of both, which Redis checks. */
#ifndef HILOCK_RESTORE_PAYLOAD_H
#define HILOCK_RESTORE_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "resp.h"

/* Longest string a payload holds here (a two-byte RDB length). */
#define DUMP_STRING_MAX 16383

/* Redis's CRC-64 (Jones polynomial, reflected) of p[0..n-1], continuing
 * from crc (0 to start). */
uint64_t restore_payload_crc64(uint64_t crc, const unsigned char *p, size_t n);

/* The payload of a hash of the n field/value pairs s[0..2n-1] into out
 * (cap bytes); its length, or 0 when it does not fit or a string is
 * longer than DUMP_STRING_MAX. */
size_t restore_payload_hash(const struct resp_part *s, size_t n, unsigned char *out,
                 size_t cap);

#endif
