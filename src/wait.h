/* wait.h -- the channel table shared by wait.c and subscribe.c. */
#ifndef HILOCK_WAIT_H
#define HILOCK_WAIT_H

#include "client.h"

/* Subscription of one channel on the subscriber connection. */
enum sub_state {
    SUB_NONE = 0, /* not subscribed, nothing sent */
    SUB_PENDING,  /* SUBSCRIBE sent, not confirmed yet */
    SUB_ACTIVE,   /* confirmed: releases reach us */
    SUB_LEAVING   /* UNSUBSCRIBE sent, not confirmed yet */
};

/* The local waiters of one lock name. Lives while it has waiters, or while
 * its channel is being unsubscribed. */
struct chan {
    struct chan *next;               /* bucket chain */
    uint32_t hash;
    uint8_t sub;                     /* enum sub_state */
    uint8_t wake_pending;            /* woken while the head's retry was out */
    uint8_t polls;                   /* polls in a row while unsubscribed */
    uint64_t yield_until;            /* ms: no retry before (see wait.c) */
    unsigned local_streak;           /* own releases in a row, see wait.c */
    struct hilock_lock *head, *tail; /* FIFO of waiters */
    struct event timer;              /* fallback retry of the head */
    struct hilock_client *client;
    size_t name_len;
    char name[];
};

struct chan *chan_find(struct hilock_client *c, const char *name,
                       size_t len);
/* Free an entry that has no waiters and no subscription. */
void chan_drop(struct chan *ch);
/* Call fn on every entry; fn may drop the entry it is given. */
void chan_each(struct hilock_client *c, void (*fn)(struct chan *ch));
/* Let the head waiter retry now (or as soon as its retry in flight is
 * answered). */
void chan_wake(struct chan *ch);

/* subscribe.c */
void sub_init(struct hilock_client *c);
/* The entry has waiters: make sure its channel is (being) subscribed. */
void sub_want(struct chan *ch);
/* The entry has no waiters left: unsubscribe, or drop it at once. */
void sub_unwant(struct chan *ch);

#endif
