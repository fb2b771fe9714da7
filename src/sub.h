/* SPDX-License-Identifier: BSD-3-Clause */
/* sub.h -- a node's subscriber connection: one SUBSCRIBE per lock name that
 * has waiters, and the release messages that come back. */
#ifndef HILOCK_SUB_H
#define HILOCK_SUB_H

#include <stddef.h>

#include "conn.h"
#include "table.h"

/* The channels a name may be waited on: a lock's release channel, (fair
 * mode) this client's hand-off channel of a lock, "<channel>:<listener>",
 * a read-write lock's channel and a semaphore's. */
enum sub_kind {
    SUB_RELEASE = 0,
    SUB_HANDOFF = 1,
    SUB_RWLOCK = 2,
    SUB_SEM = 3
};

/* News for the waiting layer; arg is handed back. */
struct sub_events {
    void *arg;
    /* A release was published on name's channel of kind (msg NULL), or a
     * hand-off message msg (length mlen) on this client's hand-off
     * channel. */
    void (*on_message)(void *arg, enum sub_kind kind, const char *name,
                       size_t len, const char *msg, size_t mlen);
    /* name's channel of kind is subscribed: releases from now on reach
     * us. */
    void (*on_subscribed)(void *arg, enum sub_kind kind, const char *name,
                          size_t len);
    /* The subscriber connection to addr (see conn_addr) works again (up,
     * err 0) or fails (err: HILOCK_ECONN, HILOCK_ENOPERM, ...). */
    void (*on_state)(void *arg, int up, int err, const char *addr);
    /* The server ended name's subscription by itself (a cluster moved the
     * channel's slot to another node). May be NULL. */
    void (*on_evicted)(void *arg, const char *name, size_t len);
    /* Fair mode: the tag of this client's hand-off channels (see
     * keys_handoff), handed down by the waiting layer; NULL: not fair. */
    const char *listener;
};

struct sub_set {
    struct conn conn;
    struct table entries; /* struct sub by lock name */
    const char *prefix;   /* key prefix, borrowed */
    size_t prefix_len;
    const struct sub_events *ev;
};

void sub_init(struct sub_set *s, const struct conn_config *cfg,
              const struct conn_endpoint *ep, const char *prefix,
              size_t prefix_len, const struct sub_events *ev);
/* Close the connection and free every entry. */
void sub_close(struct sub_set *s);
/* Make sure name's channel of kind is (being) subscribed; opens the
 * connection on first use. Returns 0 or HILOCK_ENOMEM. */
int sub_want(struct sub_set *s, const char *name, size_t len,
             enum sub_kind kind);
/* name has no waiters left: unsubscribe. */
void sub_unwant(struct sub_set *s, const char *name, size_t len,
                enum sub_kind kind);
/* Nonzero when name's channel of kind is confirmed subscribed. */
int sub_active(const struct sub_set *s, const char *name, size_t len,
               enum sub_kind kind);
/* Subscribe again every wanted name that is not (after an eviction). */
void sub_rejoin(struct sub_set *s);
/* Call fn for every wanted name; fn must not change s. */
typedef void sub_name_fn(void *arg, const char *name, size_t len,
                         enum sub_kind kind);
void sub_each_wanted(struct sub_set *s, sub_name_fn *fn, void *arg);

#endif
