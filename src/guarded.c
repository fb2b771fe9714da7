/* SPDX-License-Identifier: BSD-3-Clause */
/* guarded.c -- hilock_lock_guarded: run a caller's commands only while a
 * handle holds its lock.
 *
 * One script (src/lua/guarded.lua) checks the hold and runs the commands
 * on the node that keeps the lock, so the check and the write are one
 * atomic step there. The request goes to one node: on Redlock no single master
 * can tell whether the lock is held, so the call is refused. In a cluster
 * every key the commands declare must be in the lock name's slot, checked
 * here before anything is sent. A request resent after its connection
 * dropped carries the same request id, which the script recognises: the
 * commands run once, and the caller learns that the reply was lost. */
#include "guarded.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "handle.h"
#include "keys.h"
#include "fanout.h"
#include "reply.h"
#include "slot.h"

/* The shortest time a request id applied is kept beside a read-write lock
 * or permit: longer than any request can be resent (four request
 * timeouts when that is longer). */
#define GUARDED_KEEP_MS 60000

/* One guarded call in flight. rep is its reply while the decision is
 * being made (valid during the op's done only). */
struct guarded {
    hilock_guarded_cb *cb;               /* a lock's, or */
    hilock_permit_guarded_cb *permit_cb; /* a permit's */
    void *arg;
    size_t ncmds;
    const redisReply *rep;
    int lost;
};

void guarded_encode(struct resp_buf *b, const char *sha,
                    const struct wire_lock *l, int64_t token,
                    uint32_t keep_ms, const struct hilock_guarded_cmd *cmds,
                    size_t ncmds, uint64_t rid)
{
    struct key_src k = wire_key(l);
    size_t nkeys = 3, nargs = 7;
    for (size_t i = 0; i < ncmds; i++) {
        nkeys += cmds[i].nkeys;
        nargs += 1 + cmds[i].argc;
    }
    wire_evalsha(b, SCRIPT_GUARDED, sha, nkeys, nargs);
    keys_lock(b, &k);
    l->kind->guard_key(b, l);
    keys_tagged(b, &k, KEYS_RID_HEAD, KEYS_TAG_TAIL);
    for (size_t i = 0; i < ncmds; i++)
        for (size_t j = 0; j < cmds[i].nkeys; j++) {
            size_t a = cmds[i].keys[j];
            resp_arg(b, cmds[i].argv[a], cmds[i].argvlen[a]);
        }
    resp_arg(b, &l->kind->type, 1);
    l->kind->holder(b, l);
    resp_arg_u64(b, token > 0 ? (unsigned long long)token : 0);
    keys_tagged(b, &k, KEYS_SUFFIX_HEAD, KEYS_BASE_TAIL);
    resp_arg_u64(b, keep_ms);
    resp_arg_u64(b, ncmds);
    for (size_t i = 0; i < ncmds; i++) {
        resp_arg_u64(b, cmds[i].argc);
        for (size_t j = 0; j < cmds[i].argc; j++)
            resp_arg(b, cmds[i].argv[j], cmds[i].argvlen[j]);
    }
    resp_arg_u64_fixed(b, rid);
}

/* Write one line to the client's log callback, if any. */
static void guarded_log(const struct engine *eng, const char *msg)
{
    if (eng->opts->log_cb)
        eng->opts->log_cb(HILOCK_LOG_ERROR, msg, eng->opts->log_arg);
}

/* Whether cmds are well formed: 1..HILOCK_GUARDED_ARGS_MAX arguments each,
 * keys among the arguments after the command's name. */
static int cmds_ok(const struct hilock_guarded_cmd *cmds, size_t ncmds)
{
    if (!cmds || ncmds == 0 || ncmds > HILOCK_GUARDED_MAX)
        return 0;
    for (size_t i = 0; i < ncmds; i++) {
        const struct hilock_guarded_cmd *c = &cmds[i];
        if (c->argc == 0 || c->argc > HILOCK_GUARDED_ARGS_MAX || !c->argv ||
            !c->argvlen || c->nkeys >= c->argc || (c->nkeys && !c->keys))
            return 0;
        for (size_t j = 0; j < c->argc; j++)
            if (!c->argv[j] && c->argvlen[j])
                return 0;
        for (size_t j = 0; j < c->nkeys; j++)
            if (c->keys[j] == 0 || c->keys[j] >= c->argc)
                return 0;
    }
    return 1;
}

/* In a cluster, whether every declared key is in the lock's slot (a key
 * elsewhere is logged). Always 1 outside a cluster. */
static int slots_ok(const struct hilock_lock *lock,
                    const struct hilock_guarded_cmd *cmds, size_t ncmds)
{
    if (!topo_slotted(lock->eng->topo))
        return 1;
    for (size_t i = 0; i < ncmds; i++)
        for (size_t j = 0; j < cmds[i].nkeys; j++) {
            size_t a = cmds[i].keys[j];
            unsigned s = slot_of2(cmds[i].argv[a], cmds[i].argvlen[a], "", 0);
            if (s != lock->slot) {
                char line[160];
                snprintf(line, sizeof(line),
                         "guarded command %zu: key %zu is in slot %u, the "
                         "lock in slot %u: give the key the lock name's "
                         "hash tag",
                         i + 1, j + 1, s, (unsigned)lock->slot);
                guarded_log(lock->eng, line);
                return 0;
            }
        }
    return 1;
}

/* How many reply views r needs (itself and everything under it). */
static size_t view_count(const redisReply *r)
{
    size_t n = 1;
    if (r->type == REDIS_REPLY_ARRAY)
        for (size_t i = 0; i < r->elements; i++)
            n += view_count(r->element[i]);
    return n;
}

/* Fill v from r; its elements go at *next in pool. */
static void view_fill(struct hilock_reply *v, const redisReply *r,
                      struct hilock_reply *pool, size_t *next)
{
    static const enum hilock_reply_type types[] = {
        [REDIS_REPLY_STRING] = HILOCK_REPLY_STRING,
        [REDIS_REPLY_ARRAY] = HILOCK_REPLY_ARRAY,
        [REDIS_REPLY_INTEGER] = HILOCK_REPLY_INTEGER,
        [REDIS_REPLY_NIL] = HILOCK_REPLY_NIL,
        [REDIS_REPLY_STATUS] = HILOCK_REPLY_STATUS,
        [REDIS_REPLY_ERROR] = HILOCK_REPLY_ERROR,
    };
    memset(v, 0, sizeof(*v));
    v->type = r->type >= 1 && r->type <= REDIS_REPLY_ERROR
                  ? types[r->type] : HILOCK_REPLY_NIL;
    v->integer = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
    if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ||
        r->type == REDIS_REPLY_ERROR) {
        v->str = r->str;
        v->len = r->len;
    }
    if (r->type != REDIS_REPLY_ARRAY)
        return;
    struct hilock_reply *kids = pool + *next;
    *next += r->elements;
    v->element = kids;
    v->elements = r->elements;
    for (size_t i = 0; i < r->elements; i++)
        view_fill(&kids[i], r->element[i], pool, next);
}

/* Read the script's reply into res and g: refusals become their codes, a
 * failed command HILOCK_ESERVER. */
static void guarded_raw(struct fanout *op, const struct redisReply *rep,
                        struct op_result *res)
{
    struct guarded *g = op->data;
    g->rep = NULL;
    if (rep->type == REDIS_REPLY_ERROR) {
        if (rep->len >= 8 && memcmp(rep->str, "NOTOWNER", 8) == 0)
            res->status = HILOCK_ENOTOWNER;
        else if (rep->len >= 7 && memcmp(rep->str, "APPLIED", 7) == 0)
            g->lost = 1;
        else
            res->status = reply_error_code(rep);
        return;
    }
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements == 0) {
        res->status = HILOCK_EPROTO;
        return;
    }
    g->rep = rep;
    if (rep->elements < g->ncmds ||
        rep->element[rep->elements - 1]->type == REDIS_REPLY_ERROR)
        res->status = HILOCK_ESERVER;
}

/* The decision: build the reply view and tell the caller. */
static void guarded_done(struct fanout *op, int status,
                         const struct op_result *res)
{
    struct hilock_lock *lock = op->ctx;
    struct guarded *g = op->data;
    const redisReply *rep = res ? g->rep : NULL;
    struct hilock_reply lost = {.type = HILOCK_REPLY_LOST}, *pool = NULL;
    const struct hilock_reply *view = NULL;
    if (lock->freeing || lock->eng->guard->closing)
        status = HILOCK_ECANCELED;
    if (status == 0 && g->lost) {
        view = &lost;
    } else if (rep && (status == 0 || status == HILOCK_ESERVER)) {
        if (g->ncmds == 1)
            rep = rep->element[0];
        size_t next = 1;
        pool = malloc(view_count(rep) * sizeof(*pool));
        if (pool)
            view_fill(pool, rep, pool, &next);
        else
            status = HILOCK_ENOMEM;
        view = pool;
    }
    struct guarded told = *g;
    free(g);
    op->data = NULL;
    if (told.permit_cb)
        told.permit_cb(public_permit(lock), status, view, told.arg);
    else
        told.cb(lock, status, view, told.arg);
    free(pool);
}

/* Whether the arguments can make a guarded call on lock; the error code
 * (0 when they can). */
static int guarded_check(struct hilock_lock *lock,
                         const struct hilock_guarded_cmd *cmds, size_t ncmds,
                         unsigned flags, int has_cb)
{
    if (!lock || lock->freeing || !has_cb || !cmds_ok(cmds, ncmds) ||
        (flags & ~HILOCK_GUARD_FENCE))
        return HILOCK_EINVAL;
    if (!lock->eng || lock->eng->guard->closing)
        return HILOCK_ECANCELED;
    if (lock->eng->nnodes > 1) {
        guarded_log(lock->eng, "guarded commands are not for Redlock: no "
                               "one master can tell whether a lock is held");
        return HILOCK_EGUARDED;
    }
    if (!lock->kind->guarded ||
        ((flags & HILOCK_GUARD_FENCE) && lock->hold.token <= 0))
        return HILOCK_EINVAL;
    return slots_ok(lock, cmds, ncmds) ? 0 : HILOCK_EINVAL;
}

/* Start a guarded call of lock, told through g's callback. */
static int guarded_start(struct hilock_lock *lock,
                         const struct hilock_guarded_cmd *cmds, size_t ncmds,
                         unsigned flags, struct guarded told)
{
    int rc = guarded_check(lock, cmds, ncmds, flags,
                           told.cb != NULL || told.permit_cb != NULL);
    if (rc)
        return rc;
    struct engine *eng = lock->eng;
    struct guarded *g = malloc(sizeof(*g));
    struct fanout *op =
        g ? fanout_new(eng, OP_KIND_GUARDED, -1, lock->slot, 0, guarded_done)
          : NULL;
    if (!op) {
        free(g);
        return HILOCK_ENOMEM;
    }
    *g = told;
    g->ncmds = ncmds;
    op->data = g;
    op->raw = guarded_raw;
    handle_attach(lock, op);
    uint64_t keep = 4 * (uint64_t)eng->opts->request_timeout_ms;
    struct wire_lock w = handle_wire(lock);
    fanout_eval(op, SCRIPT_GUARDED);
    guarded_encode(fanout_cmd(op), eng->scripts.sha[SCRIPT_GUARDED], &w,
                   (flags & HILOCK_GUARD_FENCE) ? lock->hold.token : 0,
                   (uint32_t)(keep < GUARDED_KEEP_MS   ? GUARDED_KEEP_MS
                              : keep > INT32_MAX ? INT32_MAX
                                                 : keep),
                   cmds, ncmds, ++eng->seq);
    fanout_submit(op, 0);
    return 0;
}

int hilock_lock_guarded(struct hilock_lock *lock,
                        const struct hilock_guarded_cmd *cmds, size_t ncmds,
                        unsigned flags, hilock_guarded_cb *cb, void *arg)
{
    if (lock && lock->kind->api == CB_PERMIT)
        return HILOCK_EINVAL; /* hilock_permit_guarded */
    return guarded_start(lock, cmds, ncmds, flags,
                         (struct guarded){.cb = cb, .arg = arg});
}

int hilock_permit_guarded(struct hilock_permit *permit,
                          const struct hilock_guarded_cmd *cmds, size_t ncmds,
                          unsigned flags, hilock_permit_guarded_cb *cb,
                          void *arg)
{
    struct hilock_lock *lock = handle_of_permit(permit);
    if (lock && lock->kind->api != CB_PERMIT)
        return HILOCK_EINVAL;
    return guarded_start(lock, cmds, ncmds, flags,
                         (struct guarded){.permit_cb = cb, .arg = arg});
}
