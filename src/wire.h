/* SPDX-License-Identifier: BSD-3-Clause */
/* wire.h -- the commands hilock sends about a lock, defined once.
 *
 * Every script call and query is encoded by these functions, with the
 * argument lists the scripts of src/lua/ expect: the engine, the CLI and
 * the bench all speak through them, so the wire format has one
 * definition. wire.c holds what every kind shares (the EVALSHA framing,
 * the renew, query and fence calls, MultiLock, the plain path's
 * commands); each kind's own scripts are encoded in a file of its own
 * (wire_mutex.c, wire_rw.c, wire_sem.c), which also defines its struct
 * wire_kind: what the shared scripts need to know of it. */
#ifndef HILOCK_WIRE_H
#define HILOCK_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "keys.h"
#include "resp.h"
#include "script.h"

struct wire_kind;

/* One lock as the scripts see it. All pointers borrowed. */
struct wire_lock {
    const char *prefix; /* key prefix ("" for Redisson's layout) */
    size_t prefix_len;
    const char *name;
    size_t name_len;
    const char *client_id; /* the owner field is <client_id>:<owner_tag> */
    uint64_t owner_tag;
    const char *suffix;    /* of the field (a writer's ":write"), or NULL */
    const struct wire_kind *kind; /* NULL: a lock's own scripts only */
    unsigned char member[16]; /* an expiring permit's id */
    uint32_t entry_ms;     /* a waiting acquire's fair-queue entry lives
                              this long (ms); 0: it does not wait */
    unsigned char queue;   /* a lock's acquire: declares the fair queue,
                              which one that does not wait serves on a
                              free name but never joins */
};

/* The keys of l. */
static inline struct key_src wire_key(const struct wire_lock *l)
{
    struct key_src k = {l->prefix, l->prefix_len, l->name, l->name_len};
    return k;
}

/* What the scripts every kind shares (renew, query, guarded) are told of
 * a kind. Each hook writes words of l into b. A kind never renewed,
 * queried nor guarded (a counting semaphore's permits) has none. */
struct wire_kind {
    char type;                /* as renew and guarded name it ('m', ...) */
    const char *query_layout; /* as the query script names the key's
                                 layout ("lock", "rwlock"); NULL: none */
    uint8_t renew_size;       /* its words in a renew call, type included */
    uint8_t renew_nkeys;      /* the keys a renew call of it alone declares */
    /* Those keys (see wire_renew_head). */
    void (*renew_keys)(struct resp_buf *b, const struct wire_lock *l);
    /* Its words in a renew call after its type: where the hold is, who
     * holds it, and what else its renewal reads. */
    void (*renew_args)(struct resp_buf *b, const struct wire_lock *l);
    /* The guarded script's second key: the fencing counter, or the key
     * that holds the hold when that is not the lock key. */
    void (*guard_key)(struct resp_buf *b, const struct wire_lock *l);
    /* Who holds: the owner's field (with the kind's suffix), or the
     * permit's id. */
    void (*holder)(struct resp_buf *b, const struct wire_lock *l);
};

/* The hooks of a hold that is its owner's field in the lock hash (a
 * lock's, a writer's): renewed with the lock key and that field, guarded
 * by the fencing counter. The rest of such a kind's struct wire_kind is
 * its type and query layout. */
#define WIRE_OWNER_FIELD_HOOKS                                             \
    .renew_size = 3, .renew_nkeys = 1, .renew_keys = wire_lock_key,       \
    .renew_args = wire_owner_hold, .guard_key = wire_fence_key,            \
    .holder = wire_owner_field

/* The kinds as the shared scripts see them (their wire_<kind>.c). */
extern const struct wire_kind wire_kind_mutex;
extern const struct wire_kind wire_kind_read;
extern const struct wire_kind wire_kind_write;
extern const struct wire_kind wire_kind_permit;

/* Hooks several kinds share: l's lock key, its fencing counter, its
 * owner's field (with l->suffix), and the lock key then that field. */
void wire_lock_key(struct resp_buf *b, const struct wire_lock *l);
void wire_fence_key(struct resp_buf *b, const struct wire_lock *l);
void wire_owner_field(struct resp_buf *b, const struct wire_lock *l);
void wire_owner_hold(struct resp_buf *b, const struct wire_lock *l);

/* The start of a call of script id, whose digest sha is, with nkeys keys
 * and nargs arguments to follow: the array header, EVALSHA, the digest and
 * nkeys. Counts outside the script's contract (the "-- keys:" and "--
 * args:" lines of src/lua/<name>.lua) mark b broken (RESP_BROKEN): a
 * request with it fails with HILOCK_EPROTO, unsent. */
void wire_evalsha(struct resp_buf *b, enum script_id id, const char *sha,
                  size_t nkeys, size_t nargs);

/* Whether b holds exactly one call of script id, as EVALSHA of its digest
 * or EVAL of its body, whose array header counts the words written and
 * whose numbers of keys and arguments keep the script's contract: 0, or
 * -1 (also for a failed buffer). What fanout_submit checks before a script
 * call goes out. */
int wire_check(const struct resp_buf *b, enum script_id id);

/* Turn the EVALSHA command in b into EVAL of the script's body (len
 * bytes): the same keys and arguments. For a server that refuses SCRIPT
 * LOAD or EVALSHA. 0; -1 when b holds no EVALSHA or memory ran out (b is
 * then unusable only when its own growth failed: b->failed). */
int wire_eval_body(struct resp_buf *b, const char *body, size_t len);

/* Every acquire and release carries a request id (see
 * src/lua/acquire.lua) as its last argument, written with a fixed width so
 * that wire_rid() can change it in place for a resend that needs a new
 * one. */
void wire_rid(struct resp_buf *b, uint64_t rid);
/* The request id such a command carries now. */
uint64_t wire_rid_of(const struct resp_buf *b);

/* A lock's own scripts (wire_mutex.c). EVALSHA sha of the acquire
 * script: take or re-enter l with lease_ms, drawing a fencing token when
 * fencing, as request id rid; a waiting acquire (l->entry_ms) joins the
 * name's fair queue when there is one, and may hand the lock on to it
 * with publish ("publish" or "spublish"). */
void wire_acquire(struct resp_buf *b, const char *sha,
                  const struct wire_lock *l, uint32_t lease_ms, int fencing,
                  const char *publish, uint64_t rid);

/* EVALSHA sha of the release script: drop `drop` holds of l's owner as
 * request id rid; lease_ms is set again when holds remain; the release
 * message goes out with publish ("publish" or "spublish"), unless quiet
 * (see release.lua). */
void wire_release(struct resp_buf *b, const char *sha,
                  const struct wire_lock *l, uint64_t rid, uint32_t lease_ms,
                  uint32_t drop, const char *publish, int quiet);

/* EVALSHA sha of the undo script: drop the hold of l's owner that the
 * acquire attempt with request id attempt took, if it is still there, as
 * request id rid; a release message goes out with publish when no hold is
 * left. */
void wire_undo(struct resp_buf *b, const char *sha, const struct wire_lock *l,
               uint64_t attempt, uint64_t rid, const char *publish);

/* The plain fast path of a lock (see plain.c): commands, not scripts,
 * for the common case, at a fraction of a script's cost on the server.
 * wire_take: RESTORE of l's lock key with lease_ms as the hash the acquire
 * script writes for a first hold (the owner's field 1, rid as its last
 * and its first request id); Redis refuses it with BUSYKEY when the key
 * exists. -1 (nothing written) when the owner field does not fit a
 * payload; lease_ms must not be 0 (RESTORE's "no expiry").
 * wire_drop: HDEL of the owner's field and request ids, which ends a single
 * hold and deletes the key with its last field, then the release message
 * with publish as a second command; returns where that one starts (the
 * two go as one transaction: see conn.h, req.split). With publish NULL (a
 * quiet release, see release.lua) the HDEL goes alone: returns 0. */
int wire_take(struct resp_buf *b, const struct wire_lock *l, uint32_t lease_ms,
              uint64_t rid);
/* wire_look: after wire_take, PTTL of the key and HMGET of the owner's
 * field, "mode" and the fair queue's marker, for one transaction of the
 * three (a waiter's attempt, see plain.c). Returns where the HMGET
 * starts. */
size_t wire_look(struct resp_buf *b, const struct wire_lock *l);
size_t wire_drop(struct resp_buf *b, const struct wire_lock *l,
                 const char *publish);
/* The release message alone, as wire_drop's second command (publish:
 * "publish" or "spublish"): a quiet release whose waiter did not take the
 * lock owes it (wait.c). */
void wire_release_message(struct resp_buf *b, const struct wire_lock *l,
                          const char *publish);

/* EVALSHA sha of the renew script over locks of every kind:
 * wire_renew_head, then wire_renew_lock for each lock; nargs is the sum of
 * their wire_renew_size. lease_ms 0 only checks; deadline_ms is the
 * server's unix time after which nothing may change (0: none). The locks
 * are arguments, not declared keys: in a cluster one call renews every
 * lock a master holds, whatever their slots. A call about one lock only
 * may name it as keyed: its key (a reader's first hold's key with it) is
 * declared too, so that a cluster redirects the call to where the key is
 * (MOVED, or ASK while its slot migrates). */
void wire_renew_head(struct resp_buf *b, const char *sha, size_t nargs,
                     uint32_t lease_ms, uint64_t deadline_ms,
                     const struct wire_lock *keyed);
void wire_renew_lock(struct resp_buf *b, const struct wire_lock *l);

/* The arguments l takes in a renew call. */
static inline size_t wire_renew_size(const struct wire_lock *l)
{
    return l->kind->renew_size;
}

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

/* Fair mode (see src/lua/lib/fair.lua), a mode of the lock
 * (wire_mutex.c). What a fair acquire is: */
enum wire_fair_mode {
    WIRE_FAIR_WAIT = 'w',  /* queue when busy */
    WIRE_FAIR_RETRY = 'r', /* the same, for a wait that queued already */
    WIRE_FAIR_TRY = 't',   /* try once */
    WIRE_FAIR_CLAIM = 'c'  /* claim a hand-off, nothing else */
};
/* Where a fair request names its client: the listener tag, and how long
 * the waiter's queue entry stays live (ms) and which wait it is; the
 * sender's monotonic clock (ms) at encoding, which a hand-off echoes. */
struct wire_fair {
    const char *listener;
    uint32_t entry_ms;
    uint64_t wait_id;
    const char *publish;
    uint64_t clock_ms;
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
/* wire_drop in fair mode: the HDEL takes the hand-off marker
 * "hilock:handed" too (a hold handed to the owner keeps it until it ends;
 * the key still exists only for the queue's marker); returns where the
 * release message starts. */
size_t wire_fair_drop(struct resp_buf *b, const struct wire_lock *l,
                      const char *publish);
/* EVALSHA sha of fair_leave: l's owner leaves the queue. */
void wire_fair_leave(struct resp_buf *b, const char *sha,
                     const struct wire_lock *l, int fencing,
                     const struct wire_fair *f);

/* EVALSHA sha of fair_undo: as wire_undo, in fair mode (the lock handed
 * on when the attempt's hold was the last). */
void wire_fair_undo(struct resp_buf *b, const char *sha,
                    const struct wire_lock *l, uint64_t attempt, uint64_t rid,
                    int fencing, const struct wire_fair *f);

/* Read-write locks (src/lua/lib/rw.lua, wire_rw.c). What tells the two
 * sides apart in their scripts and their arguments: */
struct wire_rw_side {
    enum script_id acquire, release, undo; /* its scripts */
    const char *other;   /* the suffix of the owner's field on the other
                            side (NULL: none) */
    const char *message; /* its release message: a writer's ("1") lets
                            every reader in */
};
extern const struct wire_rw_side wire_rw_reader;
extern const struct wire_rw_side wire_rw_writer;
/* Take l as side with lease_ms; a writer that will wait (wait nonzero)
 * and finds the lock busy keeps new readers off for intent_ms. */
void wire_rw_acquire(struct resp_buf *b, const char *sha,
                     const struct wire_lock *l,
                     const struct wire_rw_side *side, uint32_t lease_ms,
                     int wait, uint32_t intent_ms, uint64_t rid);
/* Drop `drop` holds of l as side, as wire_release. */
void wire_rw_release(struct resp_buf *b, const char *sha,
                     const struct wire_lock *l,
                     const struct wire_rw_side *side, uint64_t rid,
                     uint32_t lease_ms, uint32_t drop, const char *publish);

/* Undo the hold of l as side that the acquire attempt with request id
 * attempt took, if it is still there, as wire_undo (lease_ms: how long
 * the undo's own id is kept when holds remain). */
void wire_rw_undo(struct resp_buf *b, const char *sha,
                  const struct wire_lock *l,
                  const struct wire_rw_side *side, uint64_t attempt,
                  uint64_t rid, uint32_t lease_ms, const char *publish);

/* A waiting writer l gave up: its mark goes. */
void wire_write_leave(struct resp_buf *b, const char *sha,
                      const struct wire_lock *l);

/* Semaphores (src/lua/lib/sem_kind.lua, wire_sem.c). Take or give back permits of
 * the counting semaphore l; the request ids applied are kept rid_ttl_ms. */
void wire_sem_acquire(struct resp_buf *b, const char *sha,
                      const struct wire_lock *l, uint32_t permits,
                      uint32_t rid_ttl_ms, uint64_t rid);
void wire_sem_release(struct resp_buf *b, const char *sha,
                      const struct wire_lock *l, uint32_t permits,
                      uint32_t rid_ttl_ms, const char *publish,
                      uint64_t rid);
/* Take the expiring permit l->member with lease_ms, or give it back. */
void wire_permit_acquire(struct resp_buf *b, const char *sha,
                         const struct wire_lock *l, uint32_t lease_ms,
                         const char *publish, uint64_t rid);
void wire_permit_release(struct resp_buf *b, const char *sha,
                         const struct wire_lock *l, const char *publish,
                         uint64_t rid);
/* Set the permits of l's semaphore unless set; the permits available. */
void wire_sem_init(struct resp_buf *b, const char *sha,
                   const struct wire_lock *l, uint32_t permits,
                   const char *publish);
void wire_sem_available(struct resp_buf *b, const char *sha,
                        const struct wire_lock *l, const char *publish);

/* The queries, as the query script (sha, src/lua/query.lua): does l's
 * owner hold it, how many holds, the lease left whoever holds it; a key of
 * another layout than l's kind (its query_layout) is refused. */
enum wire_query { WIRE_QUERY_HELD, WIRE_QUERY_COUNT, WIRE_QUERY_TTL };
void wire_query(struct resp_buf *b, const char *sha, enum wire_query q,
                const struct wire_lock *l);

#endif
