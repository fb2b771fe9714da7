/* wire.h -- the commands hilock sends about a lock, defined once.
 *
 * Every script call and query is encoded here, with the argument lists the
 * scripts in script.c expect: the engine, the CLI and the bench all speak
 * through these functions, so the wire format has one definition. */
#ifndef HILOCK_WIRE_H
#define HILOCK_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "resp.h"

/* One lock as the scripts see it. All pointers borrowed. */
struct wire_lock {
    const char *prefix; /* key prefix ("" for Redisson's layout) */
    size_t prefix_len;
    const char *name;
    size_t name_len;
    const char *client_id; /* the owner field is <client_id>:<owner_tag> */
    uint64_t owner_tag;
};

/* Every acquire and release carries a request id (see script.c) as its
 * last argument, written with a fixed width so that wire_rid() can change
 * it in place for a resend that needs a new one. */
void wire_rid(struct resp_buf *b, uint64_t rid);

/* EVALSHA sha of the acquire script: take or re-enter l with lease_ms,
 * drawing a fencing token when fencing, as request id rid. */
void wire_acquire(struct resp_buf *b, const char *sha,
                  const struct wire_lock *l, uint32_t lease_ms, int fencing,
                  uint64_t rid);

/* EVALSHA sha of the release script: drop `drop` holds of l's owner as
 * request id rid; lease_ms is set again when holds remain; the release
 * message goes out with publish ("publish" or "spublish"). */
void wire_release(struct resp_buf *b, const char *sha,
                  const struct wire_lock *l, uint64_t rid, uint32_t lease_ms,
                  uint32_t drop, const char *publish);

/* EVALSHA sha of the renew script over n locks: wire_renew_head, then
 * wire_renew_lock for each lock. lease_ms 0 only checks; deadline_ms is
 * the server's unix time after which nothing may change (0: none). The
 * locks are arguments, not declared keys: in a cluster one call renews
 * every lock a master holds, whatever their slots. */
void wire_renew_head(struct resp_buf *b, const char *sha, size_t n,
                     uint32_t lease_ms, uint64_t deadline_ms);
void wire_renew_lock(struct resp_buf *b, const struct wire_lock *l);

/* EVALSHA sha of the fence script: raise l's fencing counter to token. */
void wire_fence(struct resp_buf *b, const char *sha,
                const struct wire_lock *l, int64_t token);

/* EVALSHA sha of multi_acquire over the n locks l[0..n-1] (one owner). */
void wire_multi_acquire(struct resp_buf *b, const char *sha,
                        const struct wire_lock *l, size_t n,
                        uint32_t lease_ms, uint64_t rid);
/* EVALSHA sha of multi_release over the n locks l[0..n-1], as rid. */
void wire_multi_release(struct resp_buf *b, const char *sha,
                        const struct wire_lock *l, size_t n, uint64_t rid,
                        uint32_t lease_ms, const char *publish);

/* Fair mode (see script.c). What a fair acquire is: */
enum wire_fair_mode {
    WIRE_FAIR_WAIT = 'w',  /* queue when busy */
    WIRE_FAIR_TRY = 't',   /* try once */
    WIRE_FAIR_CLAIM = 'c'  /* claim a hand-off, nothing else */
};
/* Where a fair request names its client: the listener tag, and how long
 * the waiter's queue entry stays live (ms) and which wait it is. */
struct wire_fair {
    const char *listener;
    uint32_t entry_ms;
    uint64_t wait_id;
    const char *publish;
};
/* EVALSHA sha of fair_acquire: as wire_acquire, in mode. */
void wire_fair_acquire(struct resp_buf *b, const char *sha,
                       const struct wire_lock *l, uint32_t lease_ms,
                       int fencing, enum wire_fair_mode mode,
                       const struct wire_fair *f, uint64_t rid);
/* EVALSHA sha of fair_release: as wire_release. */
void wire_fair_release(struct resp_buf *b, const char *sha,
                       const struct wire_lock *l, uint64_t rid,
                       uint32_t lease_ms, uint32_t drop, int fencing,
                       const struct wire_fair *f);
/* EVALSHA sha of fair_leave: l's owner leaves the queue. */
void wire_fair_leave(struct resp_buf *b, const char *sha,
                     const struct wire_lock *l, int fencing,
                     const struct wire_fair *f);

/* The queries: does l's owner hold it (HEXISTS), how many holds (HGET),
 * the lease left whoever holds it (PTTL). */
enum wire_query { WIRE_QUERY_HELD, WIRE_QUERY_COUNT, WIRE_QUERY_TTL };
void wire_query(struct resp_buf *b, enum wire_query q,
                const struct wire_lock *l);

#endif
