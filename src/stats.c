/* SPDX-License-Identifier: BSD-3-Clause */
/* stats.c -- hilock_client_stats: the counters (see stats.h) as the user
 * reads them. */
#include "stats.h"

#include <string.h>

#include "client.h"

int hilock_client_stats(const struct hilock_client *client,
                        struct hilock_stats *out, size_t size)
{
    const struct hilock_stats *s;
    if (!client || !out || size == 0)
        return HILOCK_EINVAL;
    s = &client->eng.stats;
    if (size <= sizeof(*s)) {
        memcpy(out, s, size);
    } else {
        memcpy(out, s, sizeof(*s));
        memset((char *)out + sizeof(*s), 0, size - sizeof(*s));
    }
    return 0;
}
