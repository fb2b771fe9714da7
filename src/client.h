/* client.h -- the client and lock structures shared by the src/ files. */
#ifndef HILOCK_CLIENT_H
#define HILOCK_CLIENT_H

#include <stdint.h>

#include "clock.h"
#include "conn.h"
#include "heap.h"
#include "hilock/hilock.h"
#include "keys.h"
#include "owners.h"
#include "script.h"

struct chan;

/* The watchdog: every held lock sits in one heap keyed by its next event
 * (renewal due, or the moment its lease could have run out). */
struct watchdog {
    struct heap heap;
    struct event timer;
    uint64_t armed_ms; /* when timer fires; 0: not armed */
};

/* Channel table: lock name -> struct chan (local waiters of that name). */
struct chan_table {
    struct chan **buckets;
    size_t nbuckets; /* power of two */
    size_t count;
};

struct hilock_client {
    struct event_base *base;
    struct hilock_options opts; /* strings point into strings[] */
    char *strings;
    const char *prefix;         /* never NULL */
    size_t prefix_len;
    char id[37];                /* client uuid */
    char request_tag[17];       /* random, in release request ids */
    struct script_set scripts;
    struct conn cmd;            /* pipelined EVALSHA requests */
    struct conn sub;            /* SUBSCRIBE only, opened on first wait */
    const struct timeval *req_timeout; /* libevent common timeout */
    struct req *req_pool;
    size_t req_pool_len;
    uint64_t seq;               /* release request ids */
    uint64_t rng;               /* backoff jitter */
    struct hilock_lock *locks;  /* every handle, for teardown */
    struct watchdog wd;
    struct chan_table chans;
    struct owner_table owners;  /* holding handles by name and owner */
    int reported[4];            /* last state and status told, for the
                                   command and the subscriber connection */
    int depth;                  /* nesting of loop callbacks into hilock */
    int closing;                /* hilock_client_free() was called */
};

enum lock_op { OP_NONE = 0, OP_ACQUIRE, OP_RELEASE };

enum req_kind {
    KIND_ACQUIRE = 1,
    KIND_RELEASE,
    KIND_RENEW,
    KIND_QUERY_HELD,
    KIND_QUERY_COUNT,
    KIND_QUERY_TTL,
    KIND_CLEANUP /* internal release, no callback */
};

struct hilock_lock {
    struct hilock_client *client;
    struct hilock_lock *prev, *next; /* client->locks */
    struct req_list reqs;            /* requests about this lock (lnext) */
    uint64_t owner_tag;
    uint32_t refs;                   /* handle + requests + renew batches */
    uint32_t holds;                  /* holds taken through this handle */
    int64_t token;
    uint32_t lease_ms;               /* lease of the current hold */
    uint8_t auto_renew;              /* watchdog renews the lease */
    uint8_t renewing;                /* a watchdog renewal is in flight */
    uint8_t freeing;                 /* hilock_lock_free() was called */
    uint8_t op;                      /* enum lock_op pending */
    struct hilock_lock *onext;       /* chain in client->owners */
    uint8_t in_owners;               /* in client->owners */
    struct heap_node wd_node;
    uint64_t valid_until;            /* ms: lease may run out after this */
    hilock_lock_cb *lost_cb;
    void *lost_arg;
    /* The pending acquire or release. */
    hilock_lock_cb *op_cb;
    void *op_arg;
    struct req *op_req;              /* attempt in flight, if any */
    uint32_t op_lease_ms;            /* requested lease (0: watchdog) */
    uint64_t wait_deadline;          /* ms; 0: try once */
    /* Waiting: place in the name's FIFO. */
    struct chan *chan;
    struct hilock_lock *wprev, *wnext;
    struct event *wait_timer;        /* deadline, allocated on first wait */
    size_t name_len;
    char name[];
};

/* Bracket every loop callback that enters hilock; leave returns nonzero when
 * it freed the client (touch nothing afterwards). */
void client_enter(struct hilock_client *c);
int client_leave(struct hilock_client *c);
/* Report state (enum hilock_state) with status to the user, unless it is
 * what was reported last for that connection. */
void client_report(struct hilock_client *c, int state, int status);
void client_log(struct hilock_client *c, enum hilock_log_level level,
                const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* lock.c */
struct key_src lock_keys(const struct hilock_lock *lock);
void lock_ref(struct hilock_lock *lock);
void lock_unref(struct hilock_lock *lock);
/* Link a request to the lock (takes a reference, dropped by its fini). */
void lock_attach_req(struct hilock_lock *lock, struct req *req);
/* Send one acquire attempt for the pending acquire. */
void lock_send_attempt(struct hilock_lock *lock);
/* Finish the pending op: clear it, then call the user's callback (last). */
void lock_finish_op(struct hilock_lock *lock, int status, int64_t value);
/* The hold ended (released, lost, freed): stop renewals and validity. */
void lock_hold_ended(struct hilock_lock *lock);
/* Redis confirmed that the owner's hold (shared by every handle of lock's
 * name and owner) has lease_ms from a request sent at sent_ms: every
 * holding handle takes the new lease and validity. */
void lock_share_lease(struct hilock_lock *lock, uint64_t sent_ms,
                      uint32_t lease_ms);
/* Redis says the owner holds nothing any more: every handle that still
 * holds it (lock included) is told through on_lost. */
void lock_share_end(struct hilock_lock *lock);
/* Client teardown: end every pending op that has no request in flight,
 * then (after the connection has canceled the rest) free every lock. */
void lock_cancel_all(struct hilock_client *c);
void lock_free_all(struct hilock_client *c);

/* wait.c */
int waits_init(struct hilock_client *c);
void waits_release(struct hilock_client *c);
/* Nonzero when this client has waiters parked on lock's name. */
int wait_has_waiters(struct hilock_lock *lock);
/* Arm the wait deadline of a waiting acquire. Returns 0 or HILOCK_ENOMEM. */
int wait_begin(struct hilock_lock *lock, uint64_t wait_ms);
/* The acquire finished: leave the FIFO, disarm the deadline. */
void wait_end(struct hilock_lock *lock);
/* Park lock (busy with holder ttl_ms) in its name's FIFO: at the head when
 * it was the head's retry, else at the tail. Returns 0 or HILOCK_ENOMEM. */
int wait_park(struct hilock_lock *lock, int64_t ttl_ms);
/* This client released lock's name; heard subscribers received the release
 * message. Wake the name's head waiter: now, or after a short yield when
 * waiters elsewhere heard it too. */
void wait_released(struct hilock_lock *lock, int64_t heard);

/* watchdog.c */
void watchdog_init(struct hilock_client *c);
void watchdog_release(struct hilock_client *c);
/* A hold started or its lease was reset by a request sent at sent_ms. */
void watchdog_confirmed(struct hilock_lock *lock, uint64_t sent_ms);
/* Stop tracking the lock. */
void watchdog_forget(struct hilock_lock *lock);
/* Send a renew for one lock on behalf of hilock_lock_renew(). */
int watchdog_renew_now(struct hilock_lock *lock, uint32_t lease_ms,
                       hilock_lock_cb *cb, void *arg);
/* After a reconnect: the server may have lost every key (restart,
 * failover). Renew every watchdog lock and check every lock with an
 * explicit lease (without extending it) now, so a vanished lock is reported
 * at once instead of at its next renewal or lease end. */
void watchdog_verify_all(struct hilock_client *c);
/* Fire on_lost for a held lock and end its hold. */
void watchdog_lost(struct hilock_lock *lock);

#endif
