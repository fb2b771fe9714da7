/* SPDX-License-Identifier: BSD-3-Clause */
/* hilock.h -- asynchronous Redis distributed locks on a libevent loop.
 *
 * hilock is a client library. A struct hilock_client talks, from one
 * struct event_base, to one of four topologies (enum hilock_topology): one
 * Redis server, the master that a set of Sentinels names, a Redis Cluster,
 * or several independent masters of which a majority decides (Redlock); in
 * plaintext or over TLS. On it live handles of four kinds, each a type of
 * its own with only the operations that apply to it:
 *  - struct hilock_lock: one name held by one owner, re-entrant, with a
 *    lease the watchdog can renew: a mutex (hilock_lock_new) or either
 *    side of a read-write lock (hilock_rwlock_new);
 *  - struct hilock_multi: several names taken together, all or none;
 *  - struct hilock_semaphore: a counting semaphore, permits without owner
 *    or lease (hilock_semaphore_new);
 *  - struct hilock_permit: one expiring permit of a semaphore, with an id
 *    and a lease (hilock_permit_new).
 * Keys and channels are those of Redisson's RLock, RReadWriteLock,
 * RSemaphore and RPermitExpirableSemaphore (docs/keys.md says what
 * interoperates and what does not). Every operation is non-blocking and
 * reports through a callback that runs on the loop, with a struct
 * hilock_result whose fields are named for what they hold. The library
 * starts no threads, installs no signal handlers and prints nothing;
 * hilock_client_stats and hilock_stats_prometheus expose its counters.
 *
 * SIGPIPE: hiredis writes to its sockets with write(), so a connection that
 * Redis closes while a command is being sent raises SIGPIPE in the process.
 * Like any program with sockets, ignore it: signal(SIGPIPE, SIG_IGN).
 *
 * Conventions, for every function below:
 *  - Errors are negative HILOCK_E* codes; hilock_strerror() names them.
 *  - A function that takes a callback and returns an error never calls that
 *    callback. When it returns 0 the callback fires exactly once, also when
 *    the handle or client is freed first (HILOCK_ECANCELED).
 *  - Callbacks take the handle first, the status second, the result third
 *    (const struct hilock_result *, never NULL, valid during the call
 *    only) and the user's pointer last.
 *  - Times are in milliseconds and measured on the monotonic clock.
 *  - Every call belongs on the thread that runs the client's event_base;
 *    nothing here is thread-safe.
 *  - A callback never runs inside the call that started its operation.
 *    The *_cancel() and *_free() calls and hilock_client_free() are the
 *    exceptions, and say so: they end operations, and the operations'
 *    callbacks fire (with HILOCK_ECANCELED) before they return.
 */
#ifndef HILOCK_H
#define HILOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define HILOCK_EXPORT __attribute__((visibility("default")))
#else
#define HILOCK_EXPORT
#endif

#define HILOCK_VERSION_MAJOR 0
#define HILOCK_VERSION_MINOR 1
#define HILOCK_VERSION_PATCH 0

/* Longest lock name accepted, in bytes. */
#define HILOCK_NAME_MAX 512
/* Longest lease or wait accepted, in milliseconds (about 24.8 days). */
#define HILOCK_MS_MAX ((uint64_t)INT32_MAX)

/* Error codes: X(name, value, message). */
#define HILOCK_ERRNO_MAP(X)                                                    \
    X(EINVAL, -1, "invalid argument")                                          \
    X(ENOMEM, -2, "out of memory")                                             \
    X(ECONN, -3, "connection to Redis failed or was lost")                     \
    X(ETIMEDOUT, -4, "timed out")                                              \
    X(EBUSY, -5, "lock is held by another owner")                             \
    X(ENOTOWNER, -6, "lock is not held by this owner")                         \
    X(ELOST, -7, "lock was lost")                                              \
    X(ECANCELED, -8, "operation canceled")                                     \
    X(ENOQUORUM, -9, "no quorum of Redis masters")                             \
    X(EPROTO, -10, "unexpected reply from Redis")                              \
    X(ESERVER, -11, "Redis returned an error")                                 \
    X(EINPROGRESS, -12, "another acquire or release on this lock is pending")  \
    X(ERANDOM, -13, "the OS random source failed")                             \
    X(EAUTH, -14, "Redis authentication failed or is required")                \
    X(ENOPERM, -15, "Redis ACL denies the command or key")                     \
    X(EREADONLY, -16, "Redis is a read-only replica")                          \
    X(EOOM, -17, "Redis is out of memory")                                     \
    X(EWRONGTYPE, -18, "the lock key holds a value of another type")          \
    X(ENOREPLICA, -19, "the write did not reach enough replicas in time")    \
    X(EDEADLK, -20, "the owner holds the read lock: taking the write lock " \
                    "would deadlock")                                        \
    X(EWRONGKIND, -21, "the name is held as another kind of lock "           \
                       "(lock, read-write lock or semaphore)")               \
    X(ETLS, -22, "TLS failed: handshake, certificate check, or no TLS "      \
                 "support built in")                                         \
    X(ENOTCLUSTER, -23, "no cluster seed is in cluster mode")                \
    X(EGUARDED, -24, "guarded commands need one node to decide (not on "    \
                     "Redlock masters)")

enum hilock_errno {
#define HILOCK_ERRNO_ENUM_(name, value, msg) HILOCK_##name = (value),
    HILOCK_ERRNO_MAP(HILOCK_ERRNO_ENUM_)
#undef HILOCK_ERRNO_ENUM_
};

/* The message for an error code ("success" for 0, "unknown error" for
 * values outside the list);
 * never NULL, statically allocated. */
HILOCK_EXPORT const char *hilock_strerror(int err);
/* The symbolic name of an error code ("HILOCK_EBUSY"), "OK" for 0, or
 * "UNKNOWN". */
HILOCK_EXPORT const char *hilock_err_name(int err);

struct event_base;
struct hilock_client;
struct hilock_lock;
struct hilock_multi;
struct hilock_semaphore;
struct hilock_permit;

/* Severity passed to the log callback. */
enum hilock_log_level {
    HILOCK_LOG_DEBUG = 0,
    HILOCK_LOG_INFO = 1,
    HILOCK_LOG_WARN = 2,
    HILOCK_LOG_ERROR = 3
};

/* Receives the library's diagnostics. msg is a NUL-terminated line without
 * secrets (no password, no owner id), valid only during the call. */
typedef void hilock_log_cb(enum hilock_log_level level, const char *msg,
                           void *arg);

/* What the client's connections are doing, as reported to state_cb. */
enum hilock_state {
    HILOCK_STATE_UP = 1,         /* commands flow: connected, AUTH and SELECT
                                    accepted */
    HILOCK_STATE_DOWN = 2,       /* the command connection is down or cannot
                                    be (re)established; status says why
                                    (HILOCK_ECONN, HILOCK_EAUTH, ...) */
    HILOCK_STATE_PUBSUB_UP = 3,  /* waiters are woken by release messages */
    HILOCK_STATE_PUBSUB_DOWN = 4 /* the subscriber connection fails (status,
                                    e.g. HILOCK_ENOPERM when SUBSCRIBE is
                                    denied): waiters poll instead, with
                                    backoff */
};

/* Told of every change of state (status 0 for the UP states, the cause
 * for the DOWN ones). Repeated failures with the same cause are reported
 * once. node names the server whose news made the change: "host:port",
 * "[host]:port" for an IPv6 address, or the unix socket path (on Redlock
 * the master that made or broke the majority; with Sentinel the master
 * name while no sentinel names a master; "" when no one server did, a
 * cluster's map that changed); valid only during the call. Runs on the
 * loop, never inside a hilock call. */
typedef void hilock_state_cb(struct hilock_client *client, int status,
                             enum hilock_state state, const char *node,
                             void *arg);

/* Shortest watchdog_lease_ms accepted: a renewal every third of it must
 * have time for a round trip. */
#define HILOCK_WATCHDOG_MIN_MS 100

/* One Redis server: host and port, or a unix socket. */
struct hilock_endpoint {
    const char *host;      /* required unless unix_path is set */
    int port;
    const char *unix_path; /* when set, used instead of host/port */
};

/* How a group of connections uses TLS (see struct hilock_tls). */
enum hilock_tls_mode {
    HILOCK_TLS_OFF = 0,      /* plain TCP (the default) */
    HILOCK_TLS_VERIFY = 1,   /* TLS; the server's certificate must chain to
                                a trusted CA and name the server */
    HILOCK_TLS_NO_VERIFY = 2 /* TLS without any check of the server: the
                                traffic is encrypted, but anyone on the path
                                can pose as Redis. For tests only */
};

/* TLS settings of a group of connections. Needs hilock built with hiredis
 * 1.x and its hiredis_ssl; otherwise hilock_client_new() refuses a mode
 * other than HILOCK_TLS_OFF with HILOCK_ETLS. Files are PEM and are read
 * by hilock_client_new(), which fails with HILOCK_ETLS (and a log line)
 * when one cannot be used. Not with unix sockets. */
struct hilock_tls {
    enum hilock_tls_mode mode;
    const char *ca_file;     /* trusted CAs; with ca_dir NULL too: the
                                system's default CAs */
    const char *ca_dir;      /* a directory of hashed CA certificates */
    const char *cert_file;   /* client certificate (mutual TLS); needs
                                key_file */
    const char *key_file;    /* its private key */
    const char *server_name; /* sent as SNI and required in every server's
                                certificate; NULL: each server's certificate
                                must name the host (or IP address)
                                connected to */
};

/* Most masters a Redlock client takes. */
#define HILOCK_MASTERS_MAX 9
/* Most sentinels, and most cluster seed nodes, a client takes. */
#define HILOCK_SEEDS_MAX 16

/* Where the client's locks live: one of four topologies, each with its
 * own group of options in struct hilock_options (the others stay unset). */
enum hilock_topology {
    HILOCK_TOPOLOGY_NODE = 0,     /* one Redis server: opts.node (default) */
    HILOCK_TOPOLOGY_SENTINEL = 1, /* the master that Sentinels name:
                                     opts.sentinel */
    HILOCK_TOPOLOGY_CLUSTER = 2,  /* a Redis Cluster: opts.cluster */
    HILOCK_TOPOLOGY_REDLOCK = 3   /* independent masters, a majority
                                     decides: opts.redlock */
};

/* Client options. Fill with hilock_options_init(), then set what differs.
 * Strings and arrays are copied by hilock_client_new(). Options of a
 * topology other than opts.topology must stay unset (0, NULL): otherwise
 * hilock_client_new() fails with HILOCK_EINVAL and a log line naming the
 * option. */
struct hilock_options {
    enum hilock_topology topology; /* default HILOCK_TOPOLOGY_NODE */
    /* HILOCK_TOPOLOGY_NODE: the one server; host default "127.0.0.1",
     * port 6379; unix_path, when set, is used instead of them. */
    struct hilock_endpoint node;
    /* HILOCK_TOPOLOGY_SENTINEL: the master that the sentinels name
     * master_name. It is asked of all count sentinels at once (SENTINEL
     * get-master-addr-by-name) and taken when a majority names it (of all,
     * or of those that answered within connect_timeout_ms), confirmed with
     * ROLE, asked again before every reconnect, and at once when a
     * sentinel announces +switch-master; held locks are then verified on
     * the new master (docs/topologies.md). 1..HILOCK_SEEDS_MAX sentinels.
     * password: AUTH sent to the sentinels (NULL: none); username,
     * password and db below apply to the master. tls_own 0: the sentinels
     * are reached with opts.tls as well; nonzero: with sentinel.tls
     * instead (which may be off). */
    struct {
        const struct hilock_endpoint *nodes;
        size_t count;
        const char *master_name;
        const char *password;
        int tls_own;
        struct hilock_tls tls;
    } sentinel;
    /* HILOCK_TOPOLOGY_CLUSTER: 1..HILOCK_SEEDS_MAX nodes of the cluster to
     * learn the slot map from; each lock goes to the master of its key's
     * slot, MOVED and ASK are followed. Nothing is sent before the map is
     * known; a seed not in cluster mode is logged and never used (none
     * left: requests fail with HILOCK_ENOTCLUSTER). In a cluster,
     * key_prefix must contain a hash tag ("{app}:"), which puts every lock
     * in that one slot; without a prefix the locks spread over the
     * cluster. */
    struct {
        const struct hilock_endpoint *seeds;
        size_t count;
    } cluster;
    /* HILOCK_TOPOLOGY_REDLOCK: independent masters, an odd number from 3
     * to HILOCK_MASTERS_MAX, none listed twice (under any name). Every
     * lock operation goes to all of them at once and a majority decides
     * (docs/topologies.md). */
    struct {
        const struct hilock_endpoint *masters;
        size_t count;
    } redlock;
    const char *username;        /* ACL user; NULL: AUTH with password only */
    const char *password;        /* NULL: no AUTH */
    int db;                      /* SELECT db when > 0; default 0 */
    uint32_t connect_timeout_ms; /* default 2000 */
    uint32_t request_timeout_ms; /* deadline of each request; default 2000 */
    uint32_t watchdog_lease_ms;  /* lease of locks acquired with lease_ms 0,
                                    renewed every third of it; default 30000,
                                    at least HILOCK_WATCHDOG_MIN_MS */
    uint32_t reconnect_min_ms;   /* first reconnect delay; default 50 */
    uint32_t reconnect_max_ms;   /* cap of the exponential backoff; 2000 */
    const char *key_prefix;      /* prepended to every key and channel;
                                    NULL/"" keeps the Redisson layout */
    int fencing;                 /* nonzero: acquisitions return tokens */
    hilock_log_cb *log_cb;       /* NULL: no logging */
    void *log_arg;
    hilock_state_cb *state_cb;   /* NULL: not told */
    void *state_arg;
    /* After each acquisition and renewal, WAIT until wait_replicas
     * replicas have the write, for at most wait_timeout_ms (default 1000)
     * within the request deadline: an acquisition that does not reach them
     * is undone and fails with HILOCK_ENOREPLICA, a renewal that does not
     * counts as not confirmed. 0: no WAIT (default). Each costs one more
     * round trip; it narrows, not closes, the window in which a failover
     * loses a lock (docs/guarantees.md). */
    uint32_t wait_replicas;
    uint32_t wait_timeout_ms;
    /* Fair mode: nonzero makes every lock of this client first come, first
     * served. A waiter queues in Redis (hilock_queue:{<name>}), and the
     * release that ends a hold makes the first live waiter the owner at
     * once and tells it on a channel of its own: one round trip per
     * hand-off instead of a race of retries. A Redisson RLock (and a hilock
     * client without fair mode) on the same name is still excluded, but
     * does not queue. Not on Redlock: HILOCK_EINVAL. Default 0
     * (Redisson's RLock behaviour). See docs/waiting.md, "Fair mode". */
    int fair;
    /* Nonzero: no plain fast path; every acquire and release runs its
     * script. By default a lock's first acquire attempt with nothing held
     * is a RESTORE of the lock hash (refused at once when the key exists,
     * then the script runs), and a release of a single hold is an HDEL
     * and a PUBLISH in MULTI/EXEC: plain commands cost Redis a fraction of
     * a script call. Only on one node without fencing tokens or fair
     * mode; a server or ACL that does not take RESTORE, MULTI or EXEC
     * turns it off by itself. See docs/internals.md, "The plain path". */
    int scripts_only;
    /* TLS for the connections to Redis: the one node, the master behind
     * the sentinels, every cluster node (also those a redirect names), every
     * Redlock master. Off by default. */
    struct hilock_tls tls;
};

/* Fill *opts with the defaults listed in struct hilock_options. */
HILOCK_EXPORT void hilock_options_init(struct hilock_options *opts);

/* Create a client for the endpoint in *opts on base and start connecting.
 * Requests may be issued at once; they wait for the connection within their
 * deadline. On success stores the client in *out and returns 0.
 * Errors: HILOCK_EINVAL (NULL argument, bad option: one line to log_cb,
 * if set, names the option and says why), HILOCK_ENOMEM, HILOCK_ERANDOM
 * (no owner id could be drawn), HILOCK_ETLS (a TLS file cannot be used,
 * or no TLS support built in; logged). Endpoints are compared by the
 * addresses their hosts resolve to ("localhost" and "127.0.0.1" on one
 * port are one server), a blocking lookup as connecting does. */
HILOCK_EXPORT int hilock_client_new(struct event_base *base,
                                    const struct hilock_options *opts,
                                    struct hilock_client **out);

/* Free the client. Every pending callback fires once with
 * HILOCK_ECANCELED before the memory goes; held locks are not released
 * (their leases run out), so release them (or free their handles) first.
 * Lock, semaphore and permit handles not freed yet outlive it, detached:
 * nothing pending, nothing held, every call on them but their *_free and
 * the local state calls returns HILOCK_EINVAL; *_free then frees their
 * memory (free every handle, before or after its client). MultiLocks go
 * with the client. Requests already sent on a live connection -- a release, the
 * release of a freed handle, an acquire whose success must be undone -- are
 * delivered first: the call blocks until their replies are in, for at most
 * request_timeout_ms or 1 s, whichever is shorter. Called from inside a
 * callback of a reply, it only writes out what is buffered, without waiting.
 * Safe to call from inside any hilock callback: the teardown then completes
 * when that callback returns. NULL is ignored. */
HILOCK_EXPORT void hilock_client_free(struct hilock_client *client);

/* Told once by hilock_client_close() that the client is done: the client
 * may still be read (hilock_client_stats) during the call, and is freed
 * when it returns. */
typedef void hilock_close_cb(struct hilock_client *client, void *arg);

/* Close the client without blocking the loop: as hilock_client_free()
 * (pending callbacks fire with HILOCK_ECANCELED before it returns, lock
 * handles are detached, held locks are not released), but the requests
 * already sent -- releases, the undoing of a success that came too late
 * -- are given until their replies are in, or request_timeout_ms or 1 s
 * (the shorter) passed, on the loop. Then cb fires, once and never inside
 * this call, and the client is freed after it. Call neither this nor
 * hilock_client_free() on the client again. Safe inside any hilock
 * callback. Returns 0, or HILOCK_EINVAL (NULL client or cb, or the client
 * is being freed or closed already). */
HILOCK_EXPORT int hilock_client_close(struct hilock_client *client,
                                      hilock_close_cb *cb, void *arg);

/* Write the client id as a 36-character UUID plus NUL into buf (>= 37 bytes).
 * It is part of every owner field: whoever knows it can release this
 * client's locks. Treat it as a secret, and remember that anyone allowed to
 * read a lock key (HGETALL) sees the owner fields in it. No key name
 * contains it, except the keys of read holds of a read-write lock
 * (Redisson's layout names them after the owner field: docs/keys.md).
 * Errors: HILOCK_EINVAL. */
HILOCK_EXPORT int hilock_client_id(const struct hilock_client *client,
                                   char *buf, size_t len);

/* ---- Results ------------------------------------------------------------ */

/* A ttl_ms of a key that exists without an expiry. */
#define HILOCK_TTL_NONE (-1)
/* A ttl_ms of a key that does not exist: nothing holds the name. */
#define HILOCK_TTL_NOKEY (-2)

/* What an operation reports to its callback, one meaning per field. Each
 * operation names the fields it sets (and for which status); the others
 * are 0. */
struct hilock_result {
    int64_t token;    /* acquire, 0: the hold's fencing token (0 without
                         fencing) */
    int64_t ttl_ms;   /* acquire, HILOCK_EBUSY: the holder's remaining
                         lease (a permit: until the first permit taken
                         expires); hilock_lock_query_ttl: the lock's; or
                         HILOCK_TTL_NONE, HILOCK_TTL_NOKEY */
    int64_t holds;    /* hilock_lock_release: the owner's holds left (0:
                         the lock is free); hilock_lock_query_count: the
                         owner's holds in Redis */
    int64_t permits;  /* semaphore acquire: permits taken; semaphore
                         release and *_available: permits available */
    int64_t lease_ms; /* *_renew: the lease set */
    int held;         /* hilock_lock_query_held: 1 when this owner holds
                         the lock, else 0 */
    int permits_set;  /* *_try_set_permits: 1 when this call set them, 0
                         when they were set already (unchanged) */
};

/* The callback of every operation on a lock handle. */
typedef void hilock_lock_cb(struct hilock_lock *lock, int status,
                            const struct hilock_result *res, void *arg);

/* ---- Locks: a mutex, a read-write lock's side --------------------------- */

/* Create a handle for lock name (1..HILOCK_NAME_MAX bytes, any bytes) owned
 * by this client and owner_tag. Two handles with the same name and tag are
 * the same owner: they re-enter each other's lock and share one hold in
 * Redis (one count, one lease). Each handle counts the holds taken through
 * it; a change to the shared hold made through one handle (a new lease, its
 * end) reaches the others at once: when the hold ends while a handle still
 * counts on it, that handle's on_lost fires. Sends nothing.
 * Errors: HILOCK_EINVAL (also after hilock_client_free), HILOCK_ENOMEM. */
HILOCK_EXPORT int hilock_lock_new(struct hilock_client *client,
                                  const char *name, size_t name_len,
                                  uint64_t owner_tag,
                                  struct hilock_lock **out);

/* Free a lock handle. Its pending callbacks fire with HILOCK_ECANCELED
 * before it returns; if it holds the lock, the holds taken through it are
 * released without waiting for the reply (best effort: on a broken
 * connection the lease expires instead; hilock_client_free() right after
 * still delivers it). Safe inside the lock's own callbacks, and after its
 * client was freed (it then frees only the handle's memory). NULL is
 * ignored. */
HILOCK_EXPORT void hilock_lock_free(struct hilock_lock *lock);

/* Acquire, or re-enter when this owner already holds it (a re-entry never
 * waits, not even behind this client's other waiters).
 * wait_ms: 0 tries once; otherwise how long to wait for the lock, at most
 *   HILOCK_MS_MAX. A wait goes on through request timeouts, stalls and
 *   reconnects until wait_ms has passed. Called inside one of hilock's
 *   callbacks for a reply, wait_ms and the lease count from when that
 *   batch of replies came in (as a libevent timer added in a callback
 *   counts from the loop's time), so they may end that much early.
 * lease_ms: the lease, 1..HILOCK_MS_MAX; 0 means watchdog_lease_ms renewed
 *   by the watchdog for as long as the lock is held. While any hold of the
 *   owner is under the watchdog, the watchdog keeps renewing within the
 *   shortest lease set since (a re-entry or hilock_lock_renew() with a
 *   lease does not let it expire).
 * Wait comes before lease, as in Redisson's tryLock(waitTime, leaseTime):
 * the two are adjacent integers of one unit, and code ported from Java
 * must not swap them silently.
 * cb(lock, status, res, arg):
 *   0                 acquired; res->token: the fencing token (0 without
 *                     fencing)
 *   HILOCK_EBUSY      held by another owner and wait_ms was 0;
 *                     res->ttl_ms: the holder's remaining lease,
 *                     HILOCK_TTL_NONE when the key has no expiry
 *   HILOCK_ETIMEDOUT  not acquired within wait_ms; with wait_ms 0, no reply
 *                     within the request deadline, or a grant read too
 *                     late (below)
 *   HILOCK_ECONN      (wait_ms 0) no connection to Redis at the deadline
 *   HILOCK_ECANCELED  hilock_lock_cancel(), or the lock/client was freed
 *   HILOCK_EWRONGKIND the name is held as another kind (a lock, a
 *                     read-write lock, a semaphore); its key is left as it
 *                     is. Release, renew (HILOCK_ELOST) and the queries
 *                     refuse it too
 *   other codes       refusals with their own cause (HILOCK_EAUTH,
 *                     HILOCK_ENOPERM, HILOCK_ESERVER, ...); the server's
 *                     text goes to the log callback
 * A grant counts only while its lease (watchdog_lease_ms under the
 * watchdog) can still be running: it is read no later than the lease less
 * 1% + 2 ms after the request was sent. One read later (a stalled loop, a
 * reply held up) is undone and is not an acquisition: a wait tries again
 * while wait_ms lasts and ends HILOCK_ETIMEDOUT when it has passed;
 * wait_ms 0 ends HILOCK_ETIMEDOUT at once (HILOCK_ENOQUORUM on several
 * masters, as for a quorum that came too late).
 * Returns 0, HILOCK_EINVAL (bad argument, lease over the maximum, a freed
 * handle), HILOCK_ECANCELED (the client is being freed), HILOCK_EINPROGRESS
 * (an acquire or release is already pending), HILOCK_ENOMEM. */
HILOCK_EXPORT int hilock_lock_acquire(struct hilock_lock *lock,
                                      uint64_t wait_ms, uint64_t lease_ms,
                                      hilock_lock_cb *cb, void *arg);

/* Release one hold of the owner. A release whose reply is lost is retried
 * with the same request id and applied once.
 * cb: 0 with res->holds: holds left (0: the lock is free), HILOCK_ENOTOWNER
 * (not held by this owner: expired or never taken), or an error. After an
 * error the handle no longer counts the hold either: the release may still
 * be applied (a timed-out request stays queued at the server), and if it is
 * not, the watchdog no longer renews the lease and it runs out.
 * Returns 0, HILOCK_EINVAL, HILOCK_ECANCELED (the client is being freed),
 * HILOCK_EINPROGRESS, HILOCK_ENOMEM. */
HILOCK_EXPORT int hilock_lock_release(struct hilock_lock *lock,
                                      hilock_lock_cb *cb, void *arg);

/* Cancel a pending acquire: its callback fires with HILOCK_ECANCELED
 * before this returns. A success that arrives afterwards is released at
 * once. Returns 0, HILOCK_EINVAL (NULL, or no acquire pending). */
HILOCK_EXPORT int hilock_lock_cancel(struct hilock_lock *lock);

/* Reset the lease of a held lock to lease_ms (0: the lock's own lease) now.
 * cb: 0 with res->lease_ms: the lease set, HILOCK_ELOST (not ours any more;
 * on_lost fires too), HILOCK_ETIMEDOUT (no reply in time, or it reached
 * Redis after the lock's validity had run out here and changed nothing), or
 * another error. Returns 0, HILOCK_EINVAL (bad argument or not held by this
 * handle), HILOCK_ECANCELED (the client is being freed), HILOCK_ENOMEM. */
HILOCK_EXPORT int hilock_lock_renew(struct hilock_lock *lock,
                                    uint64_t lease_ms, hilock_lock_cb *cb,
                                    void *arg);

/* Call cb(lock, HILOCK_ELOST, res, arg) (no field set) once if the lock,
 * while held by this handle, is found lost: a renewal says it is gone,
 * another handle of the same owner ended the shared hold, or no renewal
 * was confirmed before the lease could have run out (monotonic clock). A renewal that reaches Redis
 * after that moment is refused by the server, so a lock reported lost is
 * never extended by its old owner. A lock deleted by someone else (`hilock
 * release --force`) is found at the next renewal, up to a third of the
 * lease later, or at the end of an explicit lease. Not called after a
 * release or free. cb NULL clears. Returns 0, HILOCK_EINVAL. */
HILOCK_EXPORT int hilock_lock_on_lost(struct hilock_lock *lock,
                                      hilock_lock_cb *cb, void *arg);

/* Ask Redis whether this owner holds the lock: res->held. */
HILOCK_EXPORT int hilock_lock_query_held(struct hilock_lock *lock,
                                         hilock_lock_cb *cb, void *arg);
/* Ask Redis how many holds this owner has: res->holds. */
HILOCK_EXPORT int hilock_lock_query_count(struct hilock_lock *lock,
                                          hilock_lock_cb *cb, void *arg);
/* Ask Redis for the lock's remaining lease, whoever holds it: res->ttl_ms,
 * HILOCK_TTL_NOKEY when the lock is free, HILOCK_TTL_NONE when the key
 * exists without an expiry. */
HILOCK_EXPORT int hilock_lock_query_ttl(struct hilock_lock *lock,
                                        hilock_lock_cb *cb, void *arg);
/* The three queries above return 0, HILOCK_EINVAL, HILOCK_ECANCELED (the
 * client is being freed) or HILOCK_ENOMEM; their callbacks fire with 0 or
 * a connection/server error. */

/* Local state, no request: holds this handle has (0 when not held), and the
 * fencing token of the current hold (0 without fencing or when not held). */
HILOCK_EXPORT uint32_t hilock_lock_hold_count(const struct hilock_lock *lock);
HILOCK_EXPORT int64_t hilock_lock_token(const struct hilock_lock *lock);
/* The lock's name as given to hilock_lock_new (not NUL-terminated when the
 * name is not); its length in *len when len is not NULL. */
HILOCK_EXPORT const char *hilock_lock_name(const struct hilock_lock *lock,
                                           size_t *len);

/* ---- MultiLock: several names held together, all or none ---------------
 *
 * A MultiLock takes up to HILOCK_MULTI_MAX names for one owner in one
 * atomic step on each node: all of them, or none while it waits. Two
 * MultiLocks over the same names, in any order, cannot deadlock. It is a
 * type of its own, with the calls of a lock that apply to it; each works
 * as the hilock_lock_* call of the same name says (waiting, leases, the
 * watchdog, cancel, on_lost, free), with these differences: the loss of
 * any name is reported once through on_lost, and the other names are
 * given back; fencing tokens are not drawn, and no field of the result
 * is set. A MultiLock has no name, hold count, token, queries, renew or
 * guarded commands. */
#define HILOCK_MULTI_MAX 64

/* The callback of every operation on a MultiLock (as hilock_lock_cb). */
typedef void hilock_multi_cb(struct hilock_multi *multi, int status,
                             const struct hilock_result *res, void *arg);

/* A MultiLock over count names (names[i] of lens[i] bytes, 1..count ..
 * HILOCK_MULTI_MAX, none twice) owned by this client and owner_tag; the
 * names are copied. Sends nothing.
 * Errors: HILOCK_EINVAL, HILOCK_ENOMEM. */
HILOCK_EXPORT int hilock_multi_new(struct hilock_client *client,
                                   const char *const *names,
                                   const size_t *lens, size_t count,
                                   uint64_t owner_tag,
                                   struct hilock_multi **out);
/* As hilock_lock_free; it goes with its client too. */
HILOCK_EXPORT void hilock_multi_free(struct hilock_multi *multi);
/* Take every name, as hilock_lock_acquire. cb: 0 all taken; HILOCK_EBUSY
 * (wait_ms 0) some name is held by another owner and none was taken;
 * HILOCK_ETIMEDOUT, HILOCK_ECANCELED, or another error, with none taken.
 * Returns as hilock_lock_acquire, and HILOCK_EINVAL when already held. */
HILOCK_EXPORT int hilock_multi_acquire(struct hilock_multi *multi,
                                       uint64_t wait_ms, uint64_t lease_ms,
                                       hilock_multi_cb *cb, void *arg);
/* Release one hold of every name. cb: 0, HILOCK_ENOTOWNER (none was held),
 * or an error. Returns as hilock_lock_release. */
HILOCK_EXPORT int hilock_multi_release(struct hilock_multi *multi,
                                       hilock_multi_cb *cb, void *arg);
/* As hilock_lock_cancel. */
HILOCK_EXPORT int hilock_multi_cancel(struct hilock_multi *multi);
/* As hilock_lock_on_lost: cb(multi, HILOCK_ELOST, res, arg) once when a
 * name of the held MultiLock is lost. */
HILOCK_EXPORT int hilock_multi_on_lost(struct hilock_multi *multi,
                                       hilock_multi_cb *cb, void *arg);
/* Local state: 1 while held, else 0. */
HILOCK_EXPORT int hilock_multi_held(const struct hilock_multi *multi);

/* ---- Counters ------------------------------------------------------------
 *
 * Every client counts what it does, always: plain increments on the loop's
 * thread where the events happen, no allocation, and one monotonic clock
 * read per request beyond what the request costs anyway. Counters start at
 * 0 with hilock_client_new and never decrease; gauges say how things are
 * now. hilock_stats_prometheus writes them as Prometheus text (see
 * docs/metrics.md). */

/* The latency histograms have this many buckets, in microseconds on log2
 * bounds: bucket 0 counts values of at most 1 us; bucket i, for 1 <= i <=
 * HILOCK_HIST_BUCKETS - 2, values above 2^(i-1) and at most 2^i us (bucket
 * 30: up to 2^30 us, about 17.9 minutes); the last bucket every larger
 * value. Each bucket counts only its own values (not cumulative). Fixed:
 * it will not change. */
#define HILOCK_HIST_BUCKETS 32

struct hilock_stats {
    /* Counters. Acquires count once, when their callback fires. */
    uint64_t acquisitions;     /* acquires that succeeded (status 0), a
                                  MultiLock's once, re-entries included */
    uint64_t reentries;        /* of those, by an owner (name + owner tag)
                                  that held the lock already */
    uint64_t waits;            /* acquires that waited: parked in their
                                  name's queue after a busy answer, or
                                  behind this client's own waiters */
    uint64_t timeouts;         /* acquires that ended HILOCK_ETIMEDOUT */
    uint64_t cancels;          /* acquires that ended HILOCK_ECANCELED
                                  (hilock_lock_cancel, a freed handle) */
    uint64_t handoffs;         /* fair mode: locks a release handed to a
                                  waiter of this client */
    uint64_t lost;             /* holds found lost, per handle: what fires
                                  on_lost (whether set or not) */
    uint64_t renewals_sent;    /* lock renewals sent, one per lock (a
                                  batch of n counts n): the watchdog's,
                                  hilock_lock_renew, the check of held
                                  locks after a reconnect */
    uint64_t renewals_failed;  /* of those, not confirmed: no reply in
                                  time, an error, or the lock was gone */
    uint64_t reconnects;       /* the command connection came back after a
                                  drop (or moved: a failover, a cluster's
                                  slots), per node */
    /* Gauges. */
    uint64_t requests_inflight; /* requests submitted and not completed:
                                   waiting for a connection, or sent */
    uint64_t waiters_parked;   /* acquires parked in a wait queue now */
    uint64_t subscriptions;    /* release (and fair hand-off) channels
                                  confirmed subscribed now, per node (in
                                  fair mode a name's stay half a second
                                  after its last waiter left) */
    /* Histograms (see HILOCK_HIST_BUCKETS) and the sums of their values. */
    uint64_t wait_us[HILOCK_HIST_BUCKETS]; /* each wait, from parking to
                                  leaving the queue (acquired, timed out,
                                  canceled or failed): it counts waits -
                                  waiters_parked values */
    uint64_t wait_us_sum;
    uint64_t request_us[HILOCK_HIST_BUCKETS]; /* each request to Redis (a
                                  lock script, a query, a WAIT, a cluster
                                  or Sentinel lookup; one per node on
                                  Redlock), from submission to completion
                                  (reply, deadline, failure) */
    uint64_t request_us_sum;
    /* New fields are only ever added here, at the end. */
};

/* Copy the client's counters into *out. size is sizeof(*out) as the
 * caller's header has it: the fields that fit in size are filled, and
 * bytes of it past the fields this library knows are zeroed, so that a
 * program built against an older or newer hilock.h reads what both know.
 * No request, no allocation; fine inside any hilock callback.
 * Returns 0, HILOCK_EINVAL (NULL client or out, size 0). */
HILOCK_EXPORT int hilock_client_stats(const struct hilock_client *client,
                                      struct hilock_stats *out, size_t size);

/* Write *st (st_size bytes: sizeof(*st) as the caller's header has it,
 * as for hilock_client_stats) as Prometheus text, exposition format 0.0.4:
 * a HELP and a TYPE line and one sample for each counter and gauge
 * (hilock_acquisitions_total, ..., hilock_waiters_parked) and the two
 * histograms in seconds, hilock_wait_seconds and hilock_request_seconds
 * (cumulative buckets up to +Inf, _sum, _count). labels, when not NULL or
 * "", goes inside every sample's braces as given (e.g. "client=\"orders\"",
 * already escaped as Prometheus wants). Writes at most size bytes into buf,
 * always NUL-terminated when size > 0, like snprintf; buf may be NULL when
 * size is 0. Pure: no allocation, no request, no clock.
 * Returns the length of the whole text without the NUL (the text was cut
 * if it is size or more: call again with a buffer one byte longer than
 * that), or HILOCK_EINVAL (NULL st, st_size 0, NULL buf with size > 0). */
HILOCK_EXPORT int hilock_stats_prometheus(const struct hilock_stats *st,
                                          size_t st_size, const char *labels,
                                          char *buf, size_t size);

/* ---- Read-write locks ----------------------------------------------------
 *
 * Many readers or one writer, in Redisson's RReadWriteLock layout (see the
 * docs/keys.md), so that a Redisson service and a hilock server can share one
 * read-write lock. Each side is a lock handle: hilock_lock_acquire,
 * _release, _cancel, _renew, _on_lost, _free, the queries and the local
 * state calls work on it as on a mutex, with the watchdog renewing holds
 * taken with lease 0. Differences:
 *  - the same owner re-enters either side; while it holds the write lock
 *    it may take the read lock too (downgrade: release the write hold
 *    afterwards and keep reading); taking the write lock while it holds
 *    the read lock fails with HILOCK_EDEADLK (two readers upgrading would
 *    wait for each other forever);
 *  - a writer that waits stops new readers (other than owners already
 *    reading, whose re-entries never wait) from starting: once the readers
 *    that hold leave, the writer gets it. Redisson readers on the same
 *    lock do not honour that;
 *  - each read hold has a lease of its own: a reader that dies frees its
 *    share when its lease runs out, whatever the other readers do;
 *  - hilock_lock_query_ttl reports the lock key's lease (the longest hold);
 *    fencing tokens are not drawn (res->token 0). Not on Redlock and never
 *    fair. */
enum hilock_rw_side { HILOCK_READ = 1, HILOCK_WRITE = 2 };

/* A handle for side (HILOCK_READ or HILOCK_WRITE) of read-write lock name,
 * owned by this client and owner_tag, as hilock_lock_new. The read and the
 * write side of one owner are separate handles (and separate holds).
 * Errors: HILOCK_EINVAL (also on Redlock), HILOCK_ENOMEM. */
HILOCK_EXPORT int hilock_rwlock_new(struct hilock_client *client,
                                    const char *name, size_t name_len,
                                    uint64_t owner_tag,
                                    enum hilock_rw_side side,
                                    struct hilock_lock **out);

/* ---- Semaphores ----------------------------------------------------------
 *
 * Redisson's layouts: the key <name> is a string holding the number of
 * permits available, and releases are published on
 * "redisson_sc:{<name>}" (the number available after them). A semaphore
 * has no permits until someone sets them (*_try_set_permits). Waiting
 * works as for a lock (woken by releases, a fallback poll, the deadline).
 * Not on Redlock, and never fair. Two handle types share the counter: */
#define HILOCK_PERMITS_MAX 1000000

/* ---- Counting semaphores (Redisson's RSemaphore): permits are not owned
 * and never expire; a process that dies holding some loses them for
 * everyone. */

typedef void hilock_semaphore_cb(struct hilock_semaphore *sem, int status,
                                 const struct hilock_result *res, void *arg);

/* A counting semaphore handle for name (1..HILOCK_NAME_MAX bytes). Sends
 * nothing. Errors: HILOCK_EINVAL (also on Redlock), HILOCK_ENOMEM. */
HILOCK_EXPORT int hilock_semaphore_new(struct hilock_client *client,
                                       const char *name, size_t name_len,
                                       struct hilock_semaphore **out);
/* Free the handle: pending callbacks fire with HILOCK_ECANCELED before it
 * returns, and the permits it holds are given back (best effort), as
 * hilock_lock_free. NULL is ignored. */
HILOCK_EXPORT void hilock_semaphore_free(struct hilock_semaphore *sem);
/* Take permits (1..HILOCK_PERMITS_MAX) at once, waiting up to wait_ms as
 * hilock_lock_acquire does. cb: 0 with res->permits: the permits taken,
 * HILOCK_EBUSY (wait_ms 0: too few available; res->ttl_ms
 * HILOCK_TTL_NONE), HILOCK_ETIMEDOUT, HILOCK_ECANCELED, or an error. A
 * request resent after a lost reply is applied once. Returns as
 * hilock_lock_acquire. */
HILOCK_EXPORT int hilock_semaphore_acquire(struct hilock_semaphore *sem,
                                           uint32_t permits,
                                           uint64_t wait_ms,
                                           hilock_semaphore_cb *cb,
                                           void *arg);
/* Give permits (1..HILOCK_PERMITS_MAX) back, whether or not this handle
 * took them (Redisson's semantics); waiters are told. cb: 0 with
 * res->permits: the permits available after it. Returns as
 * hilock_lock_release. */
HILOCK_EXPORT int hilock_semaphore_release(struct hilock_semaphore *sem,
                                           uint32_t permits,
                                           hilock_semaphore_cb *cb,
                                           void *arg);
/* Cancel a pending acquire, as hilock_lock_cancel. */
HILOCK_EXPORT int hilock_semaphore_cancel(struct hilock_semaphore *sem);
/* Set the semaphore's permits to permits (0..HILOCK_PERMITS_MAX) if none
 * are set yet (Redisson's trySetPermits). cb: 0 with res->permits_set 1
 * when this call set them, 0 when they were set already (unchanged). */
HILOCK_EXPORT int hilock_semaphore_try_set_permits(
    struct hilock_semaphore *sem, uint32_t permits, hilock_semaphore_cb *cb,
    void *arg);
/* The permits available now: cb 0 with res->permits. */
HILOCK_EXPORT int hilock_semaphore_available(struct hilock_semaphore *sem,
                                             hilock_semaphore_cb *cb,
                                             void *arg);
/* The two calls above return 0, HILOCK_EINVAL, HILOCK_ECANCELED (the
 * client is being freed) or HILOCK_ENOMEM. */
/* Local state: the permits this handle took and has not given back. */
HILOCK_EXPORT uint32_t
hilock_semaphore_permits_held(const struct hilock_semaphore *sem);

/* ---- Expiring permits (Redisson's RPermitExpirableSemaphore): the
 * permits taken are kept, each under an id, in the sorted set
 * "{<name>}:timeout" scored by the unix time in ms at which it expires. A
 * permit that expires comes back to the semaphore, so a holder that dies
 * gives its permit back after its lease. */

typedef void hilock_permit_cb(struct hilock_permit *permit, int status,
                              const struct hilock_result *res, void *arg);

/* A handle for one expiring permit of semaphore name. A handle holds one
 * permit at a time. Sends nothing. Errors: HILOCK_EINVAL (also on
 * Redlock), HILOCK_ENOMEM. */
HILOCK_EXPORT int hilock_permit_new(struct hilock_client *client,
                                    const char *name, size_t name_len,
                                    struct hilock_permit **out);
/* Free the handle, as hilock_lock_free: its permit, if held, is given
 * back (best effort). NULL is ignored. */
HILOCK_EXPORT void hilock_permit_free(struct hilock_permit *permit);
/* Take one permit with a new id, waiting up to wait_ms, for lease_ms (0:
 * watchdog_lease_ms, renewed by the watchdog while held), as
 * hilock_lock_acquire. cb: 0 (no field set); HILOCK_EBUSY (wait_ms 0:
 * none available; res->ttl_ms until the first permit taken expires,
 * HILOCK_TTL_NONE when none will), HILOCK_ETIMEDOUT, HILOCK_ECANCELED, or
 * an error. Returns as hilock_lock_acquire, and HILOCK_EINVAL while the
 * handle holds a permit. */
HILOCK_EXPORT int hilock_permit_acquire(struct hilock_permit *permit,
                                        uint64_t wait_ms, uint64_t lease_ms,
                                        hilock_permit_cb *cb, void *arg);
/* Give the permit back. cb: 0 (no field set), HILOCK_ENOTOWNER (it had
 * expired), or an error. Returns as hilock_lock_release. */
HILOCK_EXPORT int hilock_permit_release(struct hilock_permit *permit,
                                        hilock_permit_cb *cb, void *arg);
/* Cancel a pending acquire, as hilock_lock_cancel. */
HILOCK_EXPORT int hilock_permit_cancel(struct hilock_permit *permit);
/* Reset the held permit's lease to lease_ms (0: its own lease) now, as
 * hilock_lock_renew: cb 0 with res->lease_ms, HILOCK_ELOST (expired;
 * on_lost fires too), or an error. */
HILOCK_EXPORT int hilock_permit_renew(struct hilock_permit *permit,
                                      uint64_t lease_ms,
                                      hilock_permit_cb *cb, void *arg);
/* Call cb(permit, HILOCK_ELOST, res, arg) once if the held permit is
 * found expired, as hilock_lock_on_lost. cb NULL clears. Returns 0,
 * HILOCK_EINVAL. */
HILOCK_EXPORT int hilock_permit_on_lost(struct hilock_permit *permit,
                                        hilock_permit_cb *cb, void *arg);
/* As hilock_semaphore_try_set_permits and hilock_semaphore_available, for
 * the semaphore of this permit (expired permits are given back first). */
HILOCK_EXPORT int hilock_permit_try_set_permits(struct hilock_permit *permit,
                                                uint32_t permits,
                                                hilock_permit_cb *cb,
                                                void *arg);
HILOCK_EXPORT int hilock_permit_available(struct hilock_permit *permit,
                                          hilock_permit_cb *cb, void *arg);
/* Local state: 1 while the handle holds its permit, else 0. */
HILOCK_EXPORT int hilock_permit_held(const struct hilock_permit *permit);
/* The id of the permit held, as 32 hex digits plus NUL into buf (>= 33
 * bytes): the sorted set member, hex-encoded as Redisson prints it.
 * Errors: HILOCK_EINVAL (not held). */
HILOCK_EXPORT int hilock_permit_id(const struct hilock_permit *permit,
                                   char *buf, size_t len);

/* ---- Guarded commands ----------------------------------------------------
 *
 * Redis commands that run only while a handle still holds its lock: one
 * script checks the hold and runs them, atomically, on the node that keeps
 * the lock. A holder that stalled past its lease and lost the lock to
 * another owner then has its write refused instead of applied. Only data
 * on that node is protected: in a cluster every key of the commands must
 * hash to the lock name's slot (give them the name as hash tag). See
 * docs/guarded-writes.md. */

/* Most commands in one guarded call, and most arguments of one command. */
#define HILOCK_GUARDED_MAX 8
#define HILOCK_GUARDED_ARGS_MAX 64

/* One command: argc arguments (argv[0] is the command's name), each of
 * argvlen[i] bytes (binary safe), and which of them are keys: nkeys
 * indexes into argv (1..argc-1). A key that is not declared still works
 * on one node, but a cluster cannot check or route it. All borrowed
 * during the call only. */
struct hilock_guarded_cmd {
    size_t argc;
    const char *const *argv;
    const size_t *argvlen;
    size_t nkeys;
    const size_t *keys;
};

/* Flags of hilock_lock_guarded. */
#define HILOCK_GUARD_FENCE 1u /* also require that the name's fencing
                                 counter still equals this hold's token */

/* A reply, as a view that is valid during the callback only. */
enum hilock_reply_type {
    HILOCK_REPLY_NIL = 0,
    HILOCK_REPLY_STRING = 1,  /* str, len */
    HILOCK_REPLY_STATUS = 2,  /* str, len ("OK") */
    HILOCK_REPLY_INTEGER = 3, /* integer */
    HILOCK_REPLY_ARRAY = 4,   /* element[0..elements-1] */
    HILOCK_REPLY_ERROR = 5,   /* str, len: the command's error */
    HILOCK_REPLY_LOST = 6     /* the commands were applied, once, by a
                                 request whose reply was lost with its
                                 connection: what they answered is not
                                 known */
};

struct hilock_reply {
    enum hilock_reply_type type;
    int64_t integer;
    const char *str;
    size_t len;
    const struct hilock_reply *element;
    size_t elements;
};

/* status 0: the commands ran; reply is the one command's reply, or with
 * several an array of their replies (HILOCK_REPLY_LOST: see there).
 * HILOCK_ESERVER: a command failed; reply as for 0, its last reply the
 * error; the commands before it were applied (Redis does not roll a
 * script back) and those after it did not run. HILOCK_ENOTOWNER: the
 * handle does not hold the lock (expired, released, taken by another
 * owner, or with HILOCK_GUARD_FENCE a newer token was drawn); nothing
 * ran; reply NULL. HILOCK_EWRONGKIND: the name is held as another kind.
 * Else a connection or server error (HILOCK_ECONN, HILOCK_ETIMEDOUT,
 * HILOCK_ECANCELED, ...), reply NULL. */
typedef void hilock_guarded_cb(struct hilock_lock *lock, int status,
                               const struct hilock_reply *reply, void *arg);

/* Run cmds[0..ncmds-1] (1..HILOCK_GUARDED_MAX) in one script, only if lock
 * still holds in Redis: a lock's owner field with holds and no "mode"; a
 * read-write side's hold (a reader's share not expired). flags: 0 or
 * HILOCK_GUARD_FENCE (a lock acquired with fencing on). A request resent
 * after its connection dropped is applied once (HILOCK_REPLY_LOST when
 * the first send was). Returns 0, HILOCK_EINVAL (bad argument, a key
 * outside the name's cluster slot: a log line says which), HILOCK_EGUARDED
 * (a Redlock client: no one master can tell whether the lock is held),
 * HILOCK_ECANCELED, HILOCK_ENOMEM. */
HILOCK_EXPORT int hilock_lock_guarded(struct hilock_lock *lock,
                                      const struct hilock_guarded_cmd *cmds,
                                      size_t ncmds, unsigned flags,
                                      hilock_guarded_cb *cb, void *arg);

/* The guarded commands of an expiring permit: as hilock_lock_guarded,
 * while the permit's id is in the sorted set with its expiry in the future
 * (flags 0: permits have no fencing tokens). */
typedef void hilock_permit_guarded_cb(struct hilock_permit *permit,
                                      int status,
                                      const struct hilock_reply *reply,
                                      void *arg);
HILOCK_EXPORT int hilock_permit_guarded(struct hilock_permit *permit,
                                        const struct hilock_guarded_cmd *cmds,
                                        size_t ncmds, unsigned flags,
                                        hilock_permit_guarded_cb *cb,
                                        void *arg);

#ifdef __cplusplus
}
#endif

#endif /* HILOCK_H */
