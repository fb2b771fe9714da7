/* SPDX-License-Identifier: BSD-3-Clause */
/* quorum.c -- see quorum.h. */
#include "quorum.h"

#include "hilock/hilock.h"
#include "hot.h"

size_t quorum_of(size_t n)
{
    return n / 2 + 1;
}

/* Counts over the results in so far. */
struct tally {
    size_t got, ok, busy, notowner, wrongkind;
    int64_t max_count, max_token, min_busy_ttl;
    int64_t sum_heard;
    int64_t busy_index;  /* index of the busy result kept */
};

static void tally(size_t n, const struct op_result *res,
                  const unsigned char *got, struct tally *t)
{
    *t = (struct tally){0};
    t->min_busy_ttl = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        if (!got[i])
            continue;
        const struct op_result *r = &res[i];
        t->got++;
        if (r->status == 0) {
            t->ok++;
            if (t->ok == 1 || r->count > t->max_count)
                t->max_count = r->count;
            if (t->ok == 1 || r->token > t->max_token)
                t->max_token = r->token;
            t->sum_heard += r->heard;
        } else if (r->status == HILOCK_EBUSY) {
            t->busy++;
            if (t->busy == 1 ||
                (r->ttl_ms >= 0 && r->ttl_ms < t->min_busy_ttl)) {
                t->min_busy_ttl = r->ttl_ms >= 0 ? r->ttl_ms : t->min_busy_ttl;
                t->busy_index = r->index;
            }
        } else if (r->status == HILOCK_ENOTOWNER) {
            t->notowner++;
        } else if (r->status == HILOCK_EWRONGKIND) {
            t->wrongkind++;
        }
    }
}

/* The q-th largest count among the successful results (ok >= q): what a
 * majority of the nodes agrees on at least -- held by a majority, the holds
 * a majority counts, the lease a majority still has. */
static int64_t qth_largest(size_t n, const struct op_result *res,
                           const unsigned char *got, size_t q)
{
    int64_t v[QUORUM_NODES_MAX];
    size_t m = 0;
    for (size_t i = 0; i < n && m < QUORUM_NODES_MAX; i++)
        if (got[i] && res[i].status == 0)
            v[m++] = res[i].count;
    for (size_t i = 1; i < m; i++) /* insertion sort, descending */
        for (size_t j = i; j > 0 && v[j] > v[j - 1]; j--) {
            int64_t x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    return v[q - 1];
}

/* The failure of an operation over n > 1 nodes whose successes can no
 * longer reach q: busy when held elsewhere, not owner when no node held it
 * for us, another kind when that is what the nodes that refused hold
 * (with those busy or not holding it for us), else no quorum. */
static void failed(const struct tally *t, size_t n, size_t q,
                   struct op_result *out)
{
    *out = (struct op_result){.status = HILOCK_ENOQUORUM};
    if (t->busy > 0 && (t->busy + t->ok >= q - (n - t->got) ||
                        t->got - t->ok == t->busy))
        out->status = HILOCK_EBUSY;
    else if (t->notowner > 0 && t->got - t->ok == t->notowner)
        out->status = HILOCK_ENOTOWNER;
    else if (t->wrongkind > 0 &&
             t->got - t->ok == t->wrongkind + t->busy + t->notowner)
        out->status = HILOCK_EWRONGKIND;
    if (out->status == HILOCK_EBUSY) {
        out->ttl_ms = t->min_busy_ttl == INT64_MAX ? -1 : t->min_busy_ttl;
        out->index = t->busy_index;
    }
}

int quorum_decide(enum op_kind kind, size_t n, const struct op_result *res,
                  const unsigned char *got, struct op_result *out)
{
    struct tally t;
    size_t q = quorum_of(n);
    if (n == 1) { /* one node: its answer, as it is */
        if (!got[0])
            return 0;
        *out = res[0];
        return 1;
    }
    tally(n, res, got, &t);
    switch (kind) {
    case OP_KIND_ACQUIRE:
    case OP_KIND_FENCE:
    case OP_KIND_RELEASE:
    case OP_KIND_MULTI_ACQUIRE:
    case OP_KIND_MULTI_RELEASE:
        /* Decided by the first majority; the other nodes' requests go on
         * (a release reaches every node that answers in time). */
        if (t.ok >= q) {
            *out = (struct op_result){.count = t.max_count,
                                      .token = t.max_token,
                                      .heard = t.sum_heard};
            return 1;
        }
        if (t.got - t.ok > n - q) {
            failed(&t, n, q, out);
            return 1;
        }
        return 0;
    default:
        break;
    }
    /* Queries and renewals wait for every node (each has a deadline). */
    if (t.got < n)
        return 0;
    if (t.ok >= q) {
        *out = (struct op_result){.count = qth_largest(n, res, got, q)};
    } else {
        failed(&t, n, q, out);
    }
    return 1;
}

void quorum_renew(size_t n, size_t nlocks, const unsigned char *ok,
                  unsigned char *out)
{
    size_t q = quorum_of(n);
    for (size_t k = 0; k < nlocks; k++) {
        size_t yes = 0, gone = 0;
        for (size_t i = 0; i < n; i++) {
            yes += ok[i * nlocks + k] == RENEW_OK;
            gone += ok[i * nlocks + k] == RENEW_GONE;
        }
        out[k] = yes >= q ? RENEW_OK
                          : gone > n - q ? RENEW_GONE : RENEW_UNKNOWN;
    }
}
