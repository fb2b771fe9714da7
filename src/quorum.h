/* SPDX-License-Identifier: BSD-3-Clause */
/* quorum.h -- deciding one lock operation from the replies of N nodes.
 *
 * Pure arithmetic, no I/O: the majority, the validity left after a quorum
 * acquisition, and for each kind of operation the rule that turns the
 * per-node results gathered so far into one result, as early as the
 * outcome is certain. With one node every rule passes that node's result
 * through unchanged. */
#ifndef HILOCK_QUORUM_H
#define HILOCK_QUORUM_H

#include <stddef.h>
#include <stdint.h>

/* Most nodes a topology may have (Redlock: 3..9 masters, odd). */
#define QUORUM_NODES_MAX 9

enum op_kind {
    OP_KIND_ACQUIRE,
    OP_KIND_RELEASE,
    OP_KIND_RENEW,
    OP_KIND_QUERY_HELD,
    OP_KIND_QUERY_COUNT,
    OP_KIND_QUERY_TTL,
    OP_KIND_FENCE,
    OP_KIND_MULTI_ACQUIRE,  /* count = 1; EBUSY: ttl_ms and index */
    OP_KIND_MULTI_RELEASE,  /* count = locks the owner held */
    OP_KIND_LEAVE,          /* fair: count = 1 when a hand-off was passed
                               on */
    OP_KIND_GUARDED         /* one node; its reply read by op->raw */
};

/* One node's result, or the combined one. */
struct op_result {
    int status;      /* 0; HILOCK_EBUSY (acquire), HILOCK_ENOTOWNER
                        (release); or an error */
    int64_t count;   /* acquire: the owner's holds; release: holds left (a
                        counting semaphore: permits available); query: the
                        value; multi release: locks the owner held */
    int64_t token;   /* acquire: the fencing token */
    int64_t heard;   /* release: subscribers that got its message */
    int64_t ttl_ms;  /* EBUSY: the holder's lease left (-1: no expiry) */
    int64_t index;   /* multi acquire, EBUSY: the lock held by another */
};

/* Values of a renewal's per-lock outcome. */
enum { RENEW_GONE = 0, RENEW_OK = 1, RENEW_UNKNOWN = 2 };

/* floor(n / 2) + 1. */
size_t quorum_of(size_t n);

/* Time left of a lease_ms lease taken by requests sent elapsed_ms ago, after
 * the allowance for clock drift (lease/100 + 2 ms); <= 0: not valid. */
static inline int64_t quorum_validity(uint32_t lease_ms, uint64_t elapsed_ms)
{
    return (int64_t)lease_ms - (int64_t)elapsed_ms -
           (int64_t)(lease_ms / 100 + 2);
}

/* The validity left at now_ms of a grant of a lease_ms lease by a request
 * sent at sent_ms: quorum_validity of the time between the two (none when
 * now_ms is not after sent_ms). <= 0: the lease may have run out before
 * the grant was read, so it is no lock: the grant is undone and not
 * reported as acquired. Every grant is checked with it -- an acquire's
 * reply or quorum on any topology and kind with a lease, a hand-off. */
static inline int64_t quorum_grant_left(uint32_t lease_ms, uint64_t sent_ms,
                                        uint64_t now_ms)
{
    return quorum_validity(lease_ms, now_ms > sent_ms ? now_ms - sent_ms : 0);
}

/* Decide an operation of kind over n nodes. res[i] is node i's result when
 * got[i]; Returns 1 with *out when the outcome is certain, else 0. A
 * failed acquire or a release/query without a majority is
 * HILOCK_ENOQUORUM when no single cause explains it (n > 1). */
int quorum_decide(enum op_kind kind, size_t n, const struct op_result *res,
                  const unsigned char *got, struct op_result *out);

/* A renewal over n nodes of nlocks locks: ok[i * nlocks + k] is node i's
 * answer for lock k (RENEW_OK, RENEW_GONE, RENEW_UNKNOWN when node i did
 * not answer). Writes RENEW_OK / RENEW_GONE / RENEW_UNKNOWN per lock into
 * out[k]. */
void quorum_renew(size_t n, size_t nlocks, const unsigned char *ok,
                  unsigned char *out);

#endif
