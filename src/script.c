/* SPDX-License-Identifier: BSD-3-Clause */
/* script.c -- the Lua side of the lock.
 *
 * Every state change of a lock is one script, so it is atomic on the
 * server. The scripts are files, src/lua/<name>.lua, each opening with its
 * contract (KEYS and ARGV one per line, the replies, and the counts the
 * encoder is held to); src/lua/embed.py turns them into script_table at
 * build time, digests computed there. Shared pieces live in src/lua/lib/
 * and are included textually, so the body Redis sees is one
 * self-contained text.
 *
 * The layouts are Redisson's where Redisson has the kind (a lock is a hash
 * whose field "<client-uuid>:<owner-tag>" holds the re-entry count, with a
 * PEXPIRE lease; the final release publishes on the lock's channel), so
 * that a Java service and a C server can guard the same resource.
 *
 * Scripts are called with EVALSHA; the connection sends SCRIPT LOAD for all
 * of them right after connecting, and a NOSCRIPT reply (restart, failover,
 * SCRIPT FLUSH) makes the request load the script and go out once more.
 *
 * Every key a script touches is declared, so that Redis Cluster routes the
 * call by all of them: during a slot migration a call whose keys are split
 * between the two nodes is refused with TRYAGAIN (and sent again shortly)
 * instead of running where half of them are missing. Where a script reads
 * a companion key's name from ARGV (its layout predates the rule), the key
 * is declared as well, in the order each script's contract lists. Two
 * exceptions: a reader's timeout keys are named inside the read-write
 * scripts, in the lock's slot (lib/rw.lua), and the renew script declares
 * none, or the keys of the one lock it renews alone (renew.lua). */
#include "script.h"

void script_set_init(struct script_set *s)
{
    for (int i = 0; i < SCRIPT_COUNT; i++)
        s->sha[i] = script_table[i].sha;
}

const char *script_body(enum script_id id, size_t *len)
{
    *len = script_table[id].len;
    return script_table[id].body;
}
