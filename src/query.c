/* SPDX-License-Identifier: BSD-3-Clause */
/* query.c -- see query.h. A query runs beside a pending acquire or
 * release; its answer goes to the caller's callback (query_done). */
#include "query.h"

#include <stdlib.h>

#include "fanout.h"

/* The caller of a query, and what its reply means. */
struct query {
    struct user_cb cb;
    enum cb_field field;
};

static void query_done(struct fanout *op, int status,
                       const struct op_result *res)
{
    struct hilock_lock *lock = op->ctx;
    struct query *q = op->data;
    int64_t v = res && status == 0 ? res->count : 0;
    if (lock->freeing || handle_closing(lock))
        status = HILOCK_ECANCELED;
    struct user_cb cb = q->cb;
    struct hilock_result r = cb_result(status ? CB_FIELD_NONE : q->field, v);
    free(q);
    op->data = NULL;
    cb_call(&cb, lock->kind->api, lock, status, &r);
}

struct fanout *query_new(struct hilock_lock *lock, enum op_kind kind,
                         struct user_cb cb, enum cb_field field, int *rc)
{
    if ((*rc = handle_usable(lock)) != 0)
        return NULL;
    if (!cb_set(&cb)) {
        *rc = HILOCK_EINVAL;
        return NULL;
    }
    struct query *q = malloc(sizeof(*q));
    struct fanout *op =
        q ? fanout_new(lock->eng, kind, -1, lock->slot, 0, query_done) : NULL;
    if (!op) {
        free(q);
        *rc = HILOCK_ENOMEM;
        return NULL;
    }
    *q = (struct query){cb, field};
    op->data = q;
    handle_attach(lock, op);
    return op;
}

/* Ask every node whether the owner holds the lock, its holds or its
 * lease (kinds with queries; a key of another kind is refused). */
static int query(struct hilock_lock *lock, enum wire_query which,
                 hilock_lock_cb *cb, void *arg)
{
    static const enum op_kind kinds[] = {
        [WIRE_QUERY_HELD] = OP_KIND_QUERY_HELD,
        [WIRE_QUERY_COUNT] = OP_KIND_QUERY_COUNT,
        [WIRE_QUERY_TTL] = OP_KIND_QUERY_TTL,
    };
    static const enum cb_field fields[] = {
        [WIRE_QUERY_HELD] = CB_FIELD_HELD,
        [WIRE_QUERY_COUNT] = CB_FIELD_HOLDS,
        [WIRE_QUERY_TTL] = CB_FIELD_QUERY_TTL,
    };
    int rc;
    if (lock && !lock->kind->queries)
        return HILOCK_EINVAL;
    struct fanout *op = query_new(lock, kinds[which], cb_lock(cb, arg),
                                  fields[which], &rc);
    if (!op)
        return rc;
    struct wire_lock w = handle_wire(lock);
    fanout_eval(op, SCRIPT_QUERY);
    wire_query(fanout_cmd(op), lock->eng->scripts.sha[SCRIPT_QUERY], which,
               &w);
    fanout_submit(op, 0);
    return 0;
}

int hilock_lock_query_held(struct hilock_lock *lock, hilock_lock_cb *cb,
                           void *arg)
{
    return query(lock, WIRE_QUERY_HELD, cb, arg);
}

int hilock_lock_query_count(struct hilock_lock *lock, hilock_lock_cb *cb,
                            void *arg)
{
    return query(lock, WIRE_QUERY_COUNT, cb, arg);
}

int hilock_lock_query_ttl(struct hilock_lock *lock, hilock_lock_cb *cb,
                          void *arg)
{
    return query(lock, WIRE_QUERY_TTL, cb, arg);
}
