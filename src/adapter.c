/* SPDX-License-Identifier: BSD-3-Clause */
/* adapter.c -- see adapter.h. */
#include "adapter.h"

#include <event2/event.h>
#include <event2/event_struct.h>
#include <stdint.h>
#include <stdlib.h>

#include "hot.h"

struct adapter {
    redisAsyncContext *ac;
    struct event rev;  /* persistent: hiredis always reads again */
    struct event wev;  /* one-shot, as hiredis expects */
#if HIREDIS_MAJOR >= 1
    struct event timer; /* hiredis 1.x's connect and command timeouts */
#endif
    adapter_write_soon_fn *write_soon;
    void *arg;
    uint8_t writing; /* adapter_write_now runs */
    uint8_t dead;    /* hiredis let go of it meanwhile: free on return */
};

HILOCK_HOT
static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    struct adapter *a = arg;
    (void)fd;
    (void)what;
    redisAsyncHandleRead(a->ac); /* may free a */
}

/* The poll found the socket writable: write as adapter_write_now does. */
static void on_writable(evutil_socket_t fd, short what, void *arg)
{
    struct adapter *a = arg;
    (void)fd;
    (void)what;
    adapter_write_now(a->ac);
}

HILOCK_HOT
static void add_read(void *arg)
{
    struct adapter *a = arg;
    event_add(&a->rev, NULL); /* no change when armed already */
}

static void del_read(void *arg)
{
    struct adapter *a = arg;
    event_del(&a->rev);
}

HILOCK_HOT
static void add_write(void *arg)
{
    struct adapter *a = arg;
    if (a->writing || !(a->ac->c.flags & REDIS_CONNECTED) ||
        !a->write_soon(a->ac, a->arg))
        event_add(&a->wev, NULL);
}

HILOCK_HOT
static void del_write(void *arg)
{
    struct adapter *a = arg;
    event_del(&a->wev); /* no change when not armed */
}

static void cleanup(void *arg)
{
    struct adapter *a = arg;
    event_del(&a->rev);
    event_del(&a->wev);
#if HIREDIS_MAJOR >= 1
    event_del(&a->timer);
#endif
    if (a->writing)
        a->dead = 1;
    else
        free(a);
}

#if HIREDIS_MAJOR >= 1
static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct adapter *a = arg;
    (void)fd;
    (void)what;
    redisAsyncHandleTimeout(a->ac); /* may free a */
}

static void schedule_timer(void *arg, struct timeval tv)
{
    struct adapter *a = arg;
    evtimer_add(&a->timer, &tv);
}
#endif

int adapter_attach(redisAsyncContext *ac, struct event_base *base,
                   adapter_write_soon_fn *write_soon, void *arg)
{
    if (ac->ev.data)
        return -1;
    struct adapter *a = calloc(1, sizeof(*a));
    if (!a)
        return -1;
    a->ac = ac;
    a->write_soon = write_soon;
    a->arg = arg;
    event_assign(&a->rev, base, ac->c.fd, EV_READ | EV_PERSIST, on_readable,
                 a);
    event_assign(&a->wev, base, ac->c.fd, EV_WRITE, on_writable, a);
    ac->ev.data = a;
    ac->ev.addRead = add_read;
    ac->ev.delRead = del_read;
    ac->ev.addWrite = add_write;
    ac->ev.delWrite = del_write;
    ac->ev.cleanup = cleanup;
#if HIREDIS_MAJOR >= 1
    evtimer_assign(&a->timer, base, on_timer, a);
    ac->ev.scheduleTimer = schedule_timer;
#endif
    return 0;
}

/* While hiredis writes, a wish to write again (the socket took less than
 * the whole buffer) goes straight to the poll, and a cleanup leaves the
 * freeing to the end. */
HILOCK_HOT
void adapter_write_now(redisAsyncContext *ac)
{
    struct adapter *a = ac->ev.data;
    a->writing = 1;
    redisAsyncHandleWrite(ac);
    if (a->dead)
        free(a);
    else
        a->writing = 0;
}
