/* SPDX-License-Identifier: BSD-3-Clause */
/* fanout.c -- see fanout.h.
 *
 * An operation owns one request per node. It is decided by quorum_decide
 * as the replies come in, or early by fanout_complete; its memory goes when it
 * is decided and every node request has been recycled (a request stays
 * alive while hiredis holds it, or while it waits to be resent). */
#include "fanout.h"

#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "clock.h"
#include "hot.h"
#include "node.h"
#include "reply.h"
#include "wire.h"

static void part_done(struct req *r, int status, redisReply *reply);
static void part_late(struct req *r, redisReply *reply);
static void part_fini(struct req *r);

/* The index of node request r in its operation. */
static size_t part_index(const struct fanout *op, const struct req *r)
{
    size_t i = 0;
    while (op->node[i].req != r)
        i++;
    return i;
}

/* Most recycled operations kept per engine: a hot path needs two per lock
 * and release, and a malloc each is measurable. */
#define OP_POOL_MAX 4096

/* Free the operation once nothing refers to it any more. */
static void fanout_maybe_free(struct fanout *op)
{
    struct engine *eng = op->eng;
    if (op->live || op->done || op->busy)
        return;
    if (op->fini)
        op->fini(op);
    free(op->renew);
    if (eng->fanout_pool_len < OP_POOL_MAX && !eng->guard->closing) {
        op->data = eng->fanout_pool;
        eng->fanout_pool = op;
        eng->fanout_pool_len++;
    } else {
        free(op);
    }
}

void fanout_pool_free(struct engine *eng)
{
    while (eng->fanout_pool) {
        struct fanout *op = eng->fanout_pool;
        eng->fanout_pool = op->data;
        free(op);
    }
    eng->fanout_pool_len = 0;
}

/* A zeroed operation, from the pool when it has one. Of the entries by
 * node only those of the client's nodes are zeroed (nothing reads past
 * op->n): on one node the eight others are most of the struct, and
 * zeroing them costs more than the rest of fanout_new. handoff is left as
 * it is: only a decoded reply that fills it says so. */
#define FANOUT_END(f) (offsetof(struct fanout, f) + sizeof(((struct fanout *)0)->f))
_Static_assert(offsetof(struct fanout, handoff) - FANOUT_END(node) <
                       _Alignof(struct reply_handoff) &&
                   sizeof(struct fanout) - FANOUT_END(handoff) <
                       _Alignof(struct fanout),
               "fanout_alloc zeroes every field but nodes past n and handoff");

static struct fanout *fanout_alloc(struct engine *eng)
{
    struct fanout *op = eng->fanout_pool;
    if (!op)
        return calloc(1, sizeof(*op));
    eng->fanout_pool = op->data;
    eng->fanout_pool_len--;
    if (eng->nnodes > 1)
        memset(op, 0, offsetof(struct fanout, node) +
                          eng->nnodes * sizeof(op->node[0]));
    else
        hot_zero(op, offsetof(struct fanout, node) + sizeof(op->node[0]));
    return op;
}

/* Node request r goes again as another command (node_eval): an ASK
 * answered only the command it was sent for, so the new one goes without
 * ASKING, and a node that imports the slot sends it to the slot's owner
 * (MOVED), whose keys say where it runs. */
static void part_rewritten(struct req *r, enum script_id id)
{
    r->asking = 0;
    node_eval(r, id);
}

/* Marks a node request rewritten into an undo (req.submitter.data): its
 * reply is not the operation's. */
static char part_undoing;

/* Rewrite node request r of a decided acquire, about to go again after a
 * drop, into the undo of its request id (op->undo). Returns whether it
 * did. Its reply then says nothing about the acquire: nobody hears it. */
HILOCK_COLD
static int part_undo(struct fanout *op, struct req *r)
{
    uint64_t rid = r->plain.active ? op->rid : wire_rid_of(&r->cmd);
    int id = op->undo(op, &r->cmd, rid);
    if (id < 0)
        return 0;
    r->plain = (struct req_plain){0};
    r->late = NULL;
    r->submitter.data = &part_undoing;
    part_rewritten(r, (enum script_id)id);
    return 1;
}

/* Sent again (why). A plain command becomes what its submitter makes of
 * it. Else, after Redis refused it unapplied (NOSCRIPT, a cluster
 * redirect), a request with an id takes a new one, above every id sent so
 * far (see script.c); after a drop it goes as it was -- unless the
 * operation was decided: then its undo goes instead (op->undo). */
HILOCK_COLD
static void part_refresh(struct req *r, enum req_again why)
{
    struct fanout *op = r->submitter.ctx;
    if (why == REQ_AGAIN_DROPPED && !op->done && op->undo &&
        r->submitter.data != &part_undoing && part_undo(op, r))
        return;
    if (r->plain.active) {
        int id = op->again(op, &r->cmd, why);
        if (id >= 0) {
            /* A transaction whose MULTI was refused (then EXEC is, and
             * counts as the command refused) ran its commands one by one:
             * the release may be applied already. */
            r->resent |= r->plain.split && why == REQ_AGAIN_NO_PLAIN;
            r->plain = (struct req_plain){0};
            part_rewritten(r, (enum script_id)id);
        }
        return;
    }
    if (why == REQ_AGAIN_REFUSED &&
        (op->kind == OP_KIND_ACQUIRE || op->kind == OP_KIND_RELEASE ||
         op->kind == OP_KIND_MULTI_ACQUIRE ||
         op->kind == OP_KIND_MULTI_RELEASE || op->kind == OP_KIND_GUARDED))
        wire_rid(&r->cmd, ++op->eng->seq);
}

/* Give op a request to node i. Returns 0, or -1 without memory. */
static inline int part_new(struct fanout *op, size_t i)
{
    struct req *r = topo_request(op->eng->topo, i, op->slot, part_done);
    if (!r)
        return -1;
    r->submitter.ctx = op;
    r->retry = 1;
    r->fini = part_fini;
    r->refresh = part_refresh;
    op->node[i].req = r;
    op->live++;
    return 0;
}

/* A new operation that could not get its node requests: nobody is told
 * (the caller gets NULL); the requests it got go unsent. */
HILOCK_COLD
static struct fanout *fanout_fail(struct fanout *op)
{
    op->done = NULL;
    op->busy++;
    for (size_t i = 0; i < op->n; i++)
        if (op->node[i].req)
            req_complete(op->node[i].req, HILOCK_ENOMEM); /* never submitted */
    op->busy--;
    fanout_maybe_free(op);
    return NULL;
}

HILOCK_HOT
struct fanout *fanout_new(struct engine *eng, enum op_kind kind, int node,
                  unsigned slot, uint32_t nlocks, fanout_done_fn *done)
{
    struct fanout *op = fanout_alloc(eng);
    if (!op)
        return NULL;
    op->eng = eng;
    op->kind = kind;
    op->done = done;
    op->n = (uint8_t)eng->nnodes;
    op->target = (int8_t)node;
    op->slot = slot;
    op->nlocks = nlocks;
    if (nlocks) {
        if (!(op->renew = malloc((op->n + 1u) * nlocks)))
            return fanout_fail(op);
        memset(op->renew, RENEW_UNKNOWN, (op->n + 1u) * nlocks);
    }
    if (op->n == 1 && node <= 0) /* one node: its one request */
        return part_new(op, 0) == 0 ? op : fanout_fail(op);
    for (size_t i = 0; i < op->n; i++) {
        if (node >= 0 && (size_t)node != i) {
            op->node[i].got = 1; /* not asked: counts as no answer */
            op->node[i].res.status = HILOCK_ECANCELED;
            continue;
        }
        if (part_new(op, i) != 0)
            return fanout_fail(op);
    }
    return op;
}

/* The first node request: the command is encoded into it. */
static struct req *first_part(const struct fanout *op)
{
    for (size_t i = 0; i < op->n; i++)
        if (op->node[i].req)
            return op->node[i].req;
    return NULL;
}

struct resp_buf *fanout_cmd_at(struct fanout *op, size_t i)
{
    return op->node[i].req ? &op->node[i].req->cmd : NULL;
}

void fanout_eval(struct fanout *op, enum script_id id)
{
    op->script = (uint8_t)(id + 1);
    for (size_t i = 0; i < op->n; i++)
        if (op->node[i].req)
            node_eval(op->node[i].req, id);
}

/* The node of member i, for its health (several masters only). */
static struct node *member_node(const struct fanout *op, size_t i)
{
    return op->n > 1 ? topo_node(op->eng->topo, i, op->slot) : NULL;
}

/* The deadline of node request r: timeout_ms, or on several masters what
 * the master's health allows. A master known down, or suspect (frozen,
 * cut off: its last vote timed out), must not hold up every decision that
 * waits for its vote: it counts as a no from the start, and the decision
 * is made by the others' answers. Its request still goes, with a short
 * deadline (1 ms when down): an answer before the decision counts as
 * usual, and any answer ends the suspicion. A decision is still only ever
 * made on the loop, by an answer or a deadline, never inside the submit. */
static uint32_t vote_ms(struct fanout *op, const struct req *r,
                        uint32_t timeout_ms)
{
    size_t i = part_index(op, r);
    struct node *n = member_node(op, i);
    int down = n && node_down(n);
    if (!n || (!down && !node_suspect(n)))
        return timeout_ms;
    op->node[i].got = 1;
    op->node[i].res = (struct op_result){.status = HILOCK_ECONN, .ttl_ms = -1};
    return down ? 1 : node_vote_ms(n, timeout_ms);
}

/* Node i's request ended with status (0: a reply): the master's health
 * follows, unless fanout_complete ended it. */
static void part_health(const struct fanout *op, size_t i, int status)
{
    struct node *n = member_node(op, i);
    if (n && (status == 0 || (status == HILOCK_ETIMEDOUT && !op->early)))
        node_voted(n, status != 0);
}

HILOCK_HOT
void fanout_submit(struct fanout *op, uint32_t timeout_ms)
{
    fanout_submit_at(op, timeout_ms, 0);
}

/* Make node request r ready to go: the command of first when it has
 * none of its own, checked, and the late handler the operation wants. A
 * script call that breaks its script's contract is marked to fail unsent. */
static inline void part_ready(const struct fanout *op, struct req *r,
                       const struct req *first)
{
    if (r != first && r->cmd.len == 0)
        resp_copy(&r->cmd, &first->cmd);
    /* An encoder whose header miscounts its words is a bug: caught here in
     * a debug build, for plain commands too; in any build a script call
     * with it fails unsent (wire_check, O(1)). */
    assert(resp_counted(req_cmd(r)));
    if (op->script && !r->plain.active &&
        wire_check(&r->cmd, (enum script_id)(op->script - 1)) != 0)
        r->cmd.failed = RESP_BROKEN; /* fails, unsent: see wire.h */
    /* Only an operation that wants late replies keeps a request that
     * completed (timed out) to resend it when its connection drops. */
    r->late = op->late ? part_late : NULL;
}

/* Send the node requests of op, on several masters, each with the
 * deadline its master's health allows (vote_ms). */
HILOCK_OUTLINE
static void submit_each(struct fanout *op, uint32_t timeout_ms,
                        uint64_t now_us)
{
    struct req *first = first_part(op);
    struct req *parts[QUORUM_NODES_MAX];
    size_t m = 0;
    /* Copy first: a submit may complete a request (no memory) at once. */
    for (size_t i = 0; i < op->n; i++)
        if (op->node[i].req) {
            part_ready(op, op->node[i].req, first);
            parts[m++] = op->node[i].req;
        }
    op->busy++;
    for (size_t i = 0; i < m; i++)
        req_submit_at(parts[i], vote_ms(op, parts[i], timeout_ms), now_us);
    op->busy--;
    fanout_maybe_free(op);
}

HILOCK_HOT
void fanout_submit_at(struct fanout *op, uint32_t timeout_ms,
                      uint64_t now_us)
{
    if (!now_us)
        now_us = clock_now_us(); /* one clock read for all */
    op->sent_ms = now_us / 1000u;
    op->vote_ms =
        timeout_ms ? timeout_ms : op->eng->opts->request_timeout_ms;
    if (op->n > 1) {
        submit_each(op, timeout_ms, now_us);
        return;
    }
    /* One node: its one request (which a submit never completes at once),
     * no copy, no master's health to ask. */
    assert(op->node[0].req);
    part_ready(op, op->node[0].req, op->node[0].req);
    req_submit_at(op->node[0].req, timeout_ms, now_us);
}

/* Fill res from node i's reply rep (status 0) or status; plain: the reply
 * is that of the plain command (fanout_plain), not of the script. */
HILOCK_HOT
static void decode(struct fanout *op, size_t i, int status, int plain,
                   redisReply *rep, struct op_result *res)
{
    int64_t v = 0;
    *res = (struct op_result){.status = status, .ttl_ms = -1};
    unsigned char *row = op->renew ? op->renew + i * op->nlocks : NULL;
    if (row)
        memset(row, RENEW_UNKNOWN, op->nlocks);
    if (status)
        return;
    if (op->raw) {
        op->raw(op, rep, res);
        return;
    }
    switch (op->kind) {
    case OP_KIND_ACQUIRE:
        res->status =
            reply_acquire(rep, &res->count, &res->token, &res->ttl_ms);
        break;
    case OP_KIND_RELEASE:
        res->status = plain
                          ? reply_release_plain(rep, &res->count, &res->heard)
                          : reply_release(rep, &res->count, &res->heard);
        if (res->status == 0 && !plain) /* a plain reply hands nothing;
                                           fair mode is not for Redlock */
            op->handed = (uint8_t)reply_release_handoff(rep, &op->handoff);
        break;
    case OP_KIND_MULTI_ACQUIRE:
        res->status = reply_multi_acquire(rep, &res->index, &res->ttl_ms);
        res->count = res->status ? 0 : 1;
        break;
    case OP_KIND_RENEW:
        res->status = reply_renew(rep, op->nlocks, row);
        if (res->status)
            memset(row, RENEW_UNKNOWN, op->nlocks);
        break;
    case OP_KIND_QUERY_TTL:
        res->status = reply_integer(rep, -2, &v);
        res->count = v == -2 ? -1 : v == -1 ? INT64_MAX : v;
        break;
    default:
        res->status = reply_integer(rep, 0, &res->count);
        break;
    }
}

/* The operation is decided: on several masters the requests of an
 * acquire still out are not sent again as they were when their
 * connection drops (their late handler hears NULL instead). One resent
 * then would run after whatever the submitter sent since and not resent
 * alike (after the release of the lock it took: the lock would come back
 * on that master). A release, a renewal or a fence is harmless to resend.
 * A failed attempt with an undo by request id goes again as that undo
 * (part_refresh): a grant its lost reply carried is dropped there at
 * once, not left to block that master for the lease; the undo drops
 * nothing that the attempt did not take. A successful one's grant is
 * part of the hold, which the release ends everywhere. */
static void parts_final(struct fanout *op)
{
    if (op->n == 1 ||
        (op->kind != OP_KIND_ACQUIRE && op->kind != OP_KIND_MULTI_ACQUIRE))
        return;
    int undo = op->undo && op->status != 0 && op->kind == OP_KIND_ACQUIRE;
    for (size_t i = 0; i < op->n; i++)
        if (op->node[i].req)
            op->node[i].req->retry = (uint8_t)undo;
}

/* Decide with status and result res (NULL: completed early). */
HILOCK_HOT
static void decided(struct fanout *op, int status, const struct op_result *res)
{
    fanout_done_fn *done = op->done;
    op->done = NULL;
    op->status = status;
    parts_final(op);
    if (op->renew && res) {
        unsigned char *out = op->renew + (size_t)op->n * op->nlocks;
        if (op->n == 1)
            memcpy(out, op->renew, op->nlocks);
        else
            quorum_renew(op->n, op->nlocks, op->renew, out);
    }
    op->busy++;
    done(op, status, res);
    op->busy--;
}

/* A renewal over several nodes is settled before every node answered
 * once each of its locks is renewed, or gone, on a majority: a frozen
 * master must not hold the others' confirmation back past the locks'
 * validity. */
static int renewal_settled(const struct fanout *op)
{
    unsigned char out[1];
    if (op->kind != OP_KIND_RENEW || op->n == 1)
        return 0;
    for (uint32_t k = 0; k < op->nlocks; k++) {
        unsigned char col[QUORUM_NODES_MAX];
        for (size_t i = 0; i < op->n; i++)
            col[i] = op->renew[i * op->nlocks + k];
        quorum_renew(op->n, 1, col, out);
        if (out[0] == RENEW_UNKNOWN)
            return 0;
    }
    return 1;
}

/* How long a split vote waits for the masters still out, at least: a
 * master that answers is seldom later than that behind the others. */
#define OP_SPLIT_GRACE_MS 5

/* Whether node i answered a vote with a refusal (held elsewhere). */
static int refused(const struct fanout *op, size_t i)
{
    int st = op->node[i].res.status;
    return op->node[i].got && (st == HILOCK_EBUSY || st == HILOCK_EWRONGKIND ||
                          st == HILOCK_ENOTOWNER);
}

/* An acquire over several masters that a majority answered without
 * deciding it (grants and refusals, both replies): the masters still out
 * decide it, and one of them may be frozen, cut off or slow. They get a short deadline
 * (twice what the answers so far took, at least OP_SPLIT_GRACE_MS, never
 * later than their own): a split vote costs that, not a full deadline per
 * attempt. A master that misses it counts as a no (and turns suspect),
 * never as a yes; a grant it still sends goes to late, to be undone. */
static void hurry_rest(struct fanout *op)
{
    uint64_t spent = clock_now_ms() - op->sent_ms;
    uint64_t grace = spent * 2 > OP_SPLIT_GRACE_MS ? spent * 2
                                                   : OP_SPLIT_GRACE_MS;
    size_t yes = 0, no = 0;
    if (op->hurried || op->n == 1 || op->target >= 0 ||
        (op->kind != OP_KIND_ACQUIRE && op->kind != OP_KIND_MULTI_ACQUIRE &&
         op->kind != OP_KIND_FENCE))
        return;
    for (size_t i = 0; i < op->n; i++) {
        yes += fanout_node_ok(op, i);
        no += refused(op, i);
    }
    if (!yes || !no || yes + no < quorum_of(op->n) ||
        spent + grace >= op->vote_ms)
        return;
    op->hurried = 1;
    for (size_t i = 0; i < op->n; i++)
        if (!op->node[i].got && op->node[i].req)
            req_hurry(op->node[i].req, (uint32_t)grace);
}

/* quorum_decide over op's nodes' answers. */
static int decide(const struct fanout *op, struct op_result *out)
{
    struct op_result res[QUORUM_NODES_MAX];
    unsigned char got[QUORUM_NODES_MAX];
    for (size_t i = 0; i < op->n; i++) {
        res[i] = op->node[i].res;
        got[i] = op->node[i].got;
    }
    return quorum_decide(op->kind, op->n, res, got, out);
}

/* Count node i's answer (op->node[i].res; status: its request's, nonzero when
 * no reply came) towards the decision, or hand it to late when the
 * operation is decided already. */
static void part_counted(struct fanout *op, size_t i, int status)
{
    struct op_result out;
    op->node[i].got = 1;
    if (op->done && op->n == 1) { /* one node: its answer, as it is */
        decided(op, op->node[0].res.status, &op->node[0].res);
        return;
    }
    if (!op->done) {
        /* Decided already (by a majority, or early): this answer is late,
         * and a grant in it may have to be undone. */
        if (op->late) {
            op->busy++;
            op->late(op, i, status ? NULL : &op->node[i].res);
            op->busy--;
        }
        return;
    }
    if (decide(op, &out))
        decided(op, out.status, &out);
    else if (renewal_settled(op))
        decided(op, 0, &(struct op_result){.ttl_ms = -1});
    else
        hurry_rest(op);
}

/* WAIT (hilock_options.wait_replicas): a write that a failover could lose
 * counts only once enough replicas have it. Acquisitions and renewals
 * wait; a release does not (it cannot be taken back). */
static void wait_done(struct req *w, int status, redisReply *reply)
{
    struct fanout *op = w->submitter.ctx;
    size_t i = (size_t)(uintptr_t)w->submitter.data;
    int64_t acks = -1;
    if (status == 0)
        reply_integer(reply, -1, &acks);
    if (acks >= (int64_t)op->eng->opts->wait_replicas) {
        part_counted(op, i, 0);
        return;
    }
    /* Not confirmed: the node counts as failed, and a grant it made goes
     * to late, to be undone. On one node the decision is this failure:
     * the undo goes out first, so that nothing sent when the failure is
     * told (the next attempt) overtakes it. On several, after the
     * decision, which may still be a success. */
    struct op_result grant = op->node[i].res;
    int undo = op->late && op->kind != OP_KIND_RENEW;
    op->node[i].res.status = HILOCK_ENOREPLICA;
    if (op->renew)
        memset(op->renew + i * op->nlocks, RENEW_UNKNOWN, op->nlocks);
    op->busy++;
    if (undo && op->n == 1) {
        op->status = HILOCK_ENOREPLICA;
        op->late(op, i, &grant);
    }
    part_counted(op, i, 0);
    if (undo && op->n > 1)
        op->late(op, i, &grant);
    op->busy--;
    fanout_maybe_free(op);
}

static void wait_fini(struct req *w)
{
    struct fanout *op = w->submitter.ctx;
    op->live--;
    fanout_maybe_free(op);
}

/* Send WAIT for node i's write on conn (where its reply came from).
 * Returns 0, or -1 when it cannot (no memory). */
HILOCK_COLD
static int wait_send(struct fanout *op, size_t i, struct conn *conn)
{
    const struct hilock_options *o = op->eng->opts;
    struct req *w = req_new(conn, wait_done);
    if (!w)
        return -1;
    w->submitter.ctx = op;
    w->submitter.data = (void *)(uintptr_t)i;
    w->fini = wait_fini;
    op->live++;
    resp_array(&w->cmd, 3);
    resp_arg(&w->cmd, "WAIT", 4);
    resp_arg_u64(&w->cmd, o->wait_replicas);
    resp_arg_u64(&w->cmd, o->wait_timeout_ms);
    req_submit(w, o->wait_timeout_ms + o->request_timeout_ms);
    return 0;
}

/* Whether node i's answer is a write to confirm with WAIT first. */
static int wants_wait(const struct fanout *op, size_t i)
{
    return op->eng->opts->wait_replicas && op->done &&
           op->node[i].res.status == 0 &&
           (op->kind == OP_KIND_ACQUIRE || op->kind == OP_KIND_RENEW ||
            op->kind == OP_KIND_MULTI_ACQUIRE);
}

/* A release resent after its connection dropped that finds the owner's
 * hold gone: its first send ended it (see script.c). */
HILOCK_COLD
static void resent_release(const struct fanout *op, struct op_result *res)
{
    if (op->kind == OP_KIND_RELEASE && res->status == HILOCK_ENOTOWNER)
        *res = (struct op_result){.ttl_ms = -1};
    else if (op->kind == OP_KIND_MULTI_RELEASE && res->status == 0 &&
             res->count == 0)
        res->count = 1;
}

/* Note the request id node i's acquire carried as it was answered (the
 * command may have gone again with a new one, see part_refresh). */
static void note_rid(struct fanout *op, size_t i, const struct req *r)
{
    if (op->kind == OP_KIND_ACQUIRE)
        op->node[i].rid = r->plain.active ? op->rid : wire_rid_of(&r->cmd);
}

/* part_done in general: several masters, an undo, a resent request,
 * a write to confirm with WAIT, a decided operation. */
HILOCK_OUTLINE
static void part_done_each(struct fanout *op, struct req *r, int status,
                           redisReply *reply)
{
    size_t i = part_index(op, r);
    part_health(op, i, status);
    if (r->submitter.data == &part_undoing)
        status = HILOCK_ECONN; /* the acquire's own reply was lost */
    note_rid(op, i, r);
    decode(op, i, status, r->plain.active, reply, &op->node[i].res);
    if (r->resent)
        resent_release(op, &op->node[i].res);
    if (wants_wait(op, i) && wait_send(op, i, r->conn) == 0)
        return; /* counted when WAIT answers */
    part_counted(op, i, status);
}

/* One node's reply (or end) for an operation not decided yet: decoded
 * and decided at once; anything else takes part_done_each. */
HILOCK_HOT
static void part_done(struct req *r, int status, redisReply *reply)
{
    struct fanout *op = r->submitter.ctx;
    if (op->n > 1 || !op->done || r->resent ||
        r->submitter.data == &part_undoing || op->eng->opts->wait_replicas) {
        part_done_each(op, r, status, reply);
        return;
    }
    note_rid(op, 0, r);
    decode(op, 0, status, r->plain.active, reply, &op->node[0].res);
    op->node[0].got = 1;
    decided(op, op->node[0].res.status, &op->node[0].res);
}

static void part_late(struct req *r, redisReply *reply)
{
    struct fanout *op = r->submitter.ctx;
    struct op_result res;
    size_t i = part_index(op, r);
    if (reply)
        part_health(op, i, 0);
    if (!op->late)
        return;
    note_rid(op, i, r);
    if (reply)
        decode(op, i, 0, r->plain.active, reply, &res);
    op->busy++;
    op->late(op, i, reply ? &res : NULL);
    op->busy--;
}

HILOCK_HOT
static void part_fini(struct req *r)
{
    struct fanout *op = r->submitter.ctx;
    op->node[part_index(op, r)].req = NULL;
    op->live--;
    fanout_maybe_free(op);
}

void fanout_complete(struct fanout *op, int status)
{
    if (!op->done)
        return;
    fanout_done_fn *done = op->done;
    op->done = NULL; /* the node requests completed below see it decided */
    op->status = status;
    op->early = 1;
    parts_final(op);
    op->busy++;
    for (size_t i = 0; i < op->n; i++)
        if (op->node[i].req)
            req_complete(op->node[i].req, status);
    done(op, status, NULL);
    op->busy--;
    fanout_maybe_free(op);
}

void fanout_hold(struct fanout *op)
{
    op->busy++;
}

void fanout_drop(struct fanout *op)
{
    op->busy--;
    fanout_maybe_free(op);
}

int fanout_node_ok(const struct fanout *op, size_t i)
{
    return op->node[i].got && op->node[i].res.status == 0;
}

int fanout_renew_at(const struct fanout *op, size_t i, size_t k)
{
    return op->renew[i * op->nlocks + k];
}

const unsigned char *fanout_renew_result(const struct fanout *op)
{
    return op->renew + (size_t)op->n * op->nlocks;
}
