/* SPDX-License-Identifier: BSD-3-Clause */
/* sc_uncontended.c -- what hilock costs over the commands it sends.
 *
 * One process, one loop, K request slots in flight. Each slot loops over
 * lock + release pairs on its own key, so nothing ever waits:
 *  - hilock:  hilock_lock_acquire (watchdog lease, wait_ms 5000) then
 *             hilock_lock_release on one handle per slot;
 *  - ceiling: the same commands, byte for byte -- on one node the plain
 *             fast path (RESTORE, then HDEL and the release message in
 *             MULTI/EXEC), on
 *             several the two scripts (the text is taken from src/lua/
 *             through the pure static library and loaded with SCRIPT LOAD)
 *             -- with the same keys and arguments, encoded by hilock's own
 *             src/wire.c into a stack buffer and sent with raw hiredis
 *             (redisAsyncFormattedCommand), with no bookkeeping at all.
 *             Its replies are built by hiredis's own functions, hilock's
 *             common ones without allocating (src/reply_pool.c): that
 *             part of a pair costs hilock less than the ceiling.
 *  - SET NX PX: the textbook lock on the same server, SET key token NX PX
 *             then a compare-and-delete script by EVALSHA: the server
 *             time per pair (INFO commandstats around every phase) of each
 *             mode is printed, and hilock's over this one (target <= 2).
 * The ratio hilock / ceiling is the library's overhead; the target is 0.95.
 * Phases of the modes alternate (one order, then its reverse, over rounds
 * and K), so machine noise falls on all. After the run, DBSIZE: the keys
 * left (target 0). Pairs/s of a phase counts every pair completed from
 * its start until its last slot finished.
 *
 * The loop half of this file (uncontended.h: a run, its phases, the figures
 * of a cell) is shared with sc_redlock.c, which runs the hilock mode over
 * one, three and five masters. */
#include "uncontended.h"

#include <event2/event.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <hilock/hilock.h>

/* src/, not exported: through the pure static library the Lua text
 * hilock sends and the encoding of its script calls into RESP; compiled
 * in, the event adapter of its connections. */
#include "adapter.h"
#include "resp.h"
#include "script.h"
#include "wire.h"

#define U_HARD_S 30        /* a phase that has not drained by then fails */
#define U_CMD_INLINE 512   /* stack room of one ceiling command */
#define U_TARGET 0.95

static const char *const mode_name[U_MODES] = {"hilock", "ceiling",
                                               "SET NX PX"};

/* The compare-and-delete release of the U_SETNX mode. */
static const char cad_lua[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then\n"
    "  return redis.call('del', KEYS[1])\n"
    "end\n"
    "return 0\n";

struct urun;

/* The replies of one half (acquire or release) of a slot's ceiling pairs,
 * counted per connection: replies come in order on each, so the p-th
 * reply of connection j belongs to pair p, and a reply that comes after
 * its pair's half was decided (a straggler) only counts. */
struct chalf {
    uint32_t seen[HILOCK_MASTERS_MAX]; /* replies so far, every pair */
    uint8_t ok, bad, done;             /* of the slot's current pair */
};

/* One request slot: a key, a hilock handle on it, the current pair. */
struct uslot {
    struct urun *run;
    struct hilock_lock *lock;
    int64_t t0;
    uint64_t tag;
    char key[48];
    struct wire_lock wire; /* the ceiling's lock as the scripts see it */
    uint32_t pair;         /* ceiling pairs started */
    struct chalf acq, rel;
    char skey[48];         /* U_SETNX: its key and current token */
    char sval[64];
    size_t sklen, svlen;
};

struct urun {
    struct bench *b;
    struct event_base *base;
    struct hilock_client *client;
    redisAsyncContext *ac[HILOCK_MASTERS_MAX]; /* the ceiling's, per node */
    redisContext *stat[HILOCK_MASTERS_MAX];    /* INFO, per node */
    int nac;
    int quorum;                                /* of the nac nodes */
    struct event *tick;  /* progress line */
    struct event *flush; /* writes the raw contexts' buffers (raw_sent) */
    int flush_pending;
    char uuid[37];
    char sha_acq[41], sha_rel[41], sha_cad[41];
    uint32_t wait_ms;
    uint32_t lease_ms;           /* hilock's watchdog lease */
    uint64_t seq;
    struct uslot slots[U_KMAX];
    /* The phase running. */
    enum umode mode;
    int k;
    int stopping;
    int active;
    int64_t t_start, t_end;
    int64_t cpu_start, cpu_end;
    uint64_t pairs, errors;
    struct samples *lat; /* NULL: warm-up, nothing recorded */
    struct rate *rate;
    const char *what;    /* for the progress line */
};

static void slot_start(struct uslot *s);

/* The slot stops for this phase; the last one ends the phase. */
static void slot_retire(struct uslot *s)
{
    struct urun *u = s->run;
    if (--u->active == 0) {
        u->t_end = now_ns();
        u->cpu_end = cpu_ns();
        event_base_loopexit(u->base, NULL);
    }
}

/* The slot finished a pair (or failed one): go on, or stop. */
static void slot_next(struct uslot *s)
{
    if (s->run->stopping)
        slot_retire(s);
    else
        slot_start(s);
}

/* A pair completed at now; count it. */
static void pair_done(struct urun *u)
{
    u->pairs++;
    if (u->rate)
        rate_hit(u->rate, now_ns());
}

static void h_on_released(struct hilock_lock *lock, int status,
                          const struct hilock_result *res, void *arg)
{
    struct uslot *s = arg;
    (void)lock;
    if (status != 0 || res->holds != 0)
        s->run->errors++;
    else
        pair_done(s->run);
    slot_next(s);
}

static void h_on_acquired(struct hilock_lock *lock, int status,
                          const struct hilock_result *res, void *arg)
{
    struct uslot *s = arg;
    struct urun *u = s->run;
    int64_t t = now_ns();
    (void)res;
    if (status != 0) {
        u->errors++;
        slot_next(s);
        return;
    }
    if (u->lat)
        samples_add(u->lat, t - s->t0);
    if (hilock_lock_release(lock, h_on_released, s) != 0) {
        u->errors++;
        slot_next(s);
    }
}

/* Nonzero when a release reply says "no holds left": an integer 0, or an
 * array starting with 0 (the script's reply grew a second element once;
 * the check accepts both shapes). */
/* Whether the ceiling sends hilock's plain commands (one node, as
 * lock.c's fast path) rather than the scripts. */
static int c_plain(const struct uslot *s)
{
    return s->run->nac == 1;
}

static int release_freed(const redisReply *r, int plain)
{
    if (plain) /* EXEC: HDEL removed the owner's field and request id */
        return r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
               r->element[0]->type == REDIS_REPLY_INTEGER &&
               r->element[0]->integer > 0;
    if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1)
        r = r->element[0];
    return r->type == REDIS_REPLY_INTEGER && r->integer == 0;
}

/* Count a reply (ok or not) of half h of slot s from connection ac. As
 * hilock does, the first majority decides: 1 when this reply makes a
 * majority ok, -1 when a majority can no longer be ok, else 0 (not yet,
 * decided already, or a straggler of an earlier pair). */
static int c_count(struct uslot *s, struct chalf *h,
                   const redisAsyncContext *ac, int ok)
{
    struct urun *u = s->run;
    size_t j = (size_t)(uintptr_t)ac->data;
    if (++h->seen[j] != s->pair || h->done)
        return 0;
    if (ok)
        h->ok++;
    else
        h->bad++;
    h->done = h->ok == u->quorum || h->bad > u->nac - u->quorum;
    return h->done ? (h->ok == u->quorum ? 1 : -1) : 0;
}

/* Count a release reply of slot s (ok: it freed the lock); once decided,
 * the pair is done (or an error) and the slot goes on. */
static void release_counted(struct uslot *s, const redisAsyncContext *ac,
                            int ok)
{
    int d = c_count(s, &s->rel, ac, ok);
    if (d == 0)
        return;
    if (d < 0)
        s->run->errors++;
    else
        pair_done(s->run);
    slot_next(s);
}

/* Count an acquire reply of slot s that came at t (ok: it took the lock):
 * 1 when it is decided taken (its latency recorded: send the release), 0
 * when not decided yet or failed (an error, and the slot goes on). */
static int acquire_counted(struct uslot *s, const redisAsyncContext *ac,
                           int ok, int64_t t)
{
    struct urun *u = s->run;
    int d = c_count(s, &s->acq, ac, ok);
    if (d < 0) { /* busy, or taken */
        u->errors++;
        slot_next(s);
    }
    if (d <= 0)
        return 0;
    if (u->lat)
        samples_add(u->lat, t - s->t0);
    return 1;
}

/* The release of slot s was sent (rc REDIS_OK) or not: then it is an
 * error, and the slot goes on. */
static void release_sent(struct uslot *s, int rc)
{
    if (rc != REDIS_OK) {
        s->run->errors++;
        slot_next(s);
    }
}

static void c_on_released(redisAsyncContext *ac, void *reply, void *arg)
{
    const redisReply *r = reply;
    if (r) /* NULL: the context is being freed, nothing runs any more */
        release_counted(arg, ac, release_freed(r, c_plain(arg)));
}

/* The raw modes leave as hilock's requests do (conn.c), through the same
 * event adapter (adapter.c): what was handed to the contexts is written
 * once the callbacks running now are done, not on the loop's next poll. */
static void on_raw_flush(evutil_socket_t fd, short what, void *arg)
{
    struct urun *u = arg;
    (void)fd;
    (void)what;
    u->flush_pending = 0;
    for (int j = 0; j < u->nac; j++)
        adapter_write_now(u->ac[j]);
}

static void raw_sent(struct urun *u)
{
    if (!u->flush_pending) {
        u->flush_pending = 1;
        event_active(u->flush, 0, 1);
    }
}

static int raw_write_soon(redisAsyncContext *ac, void *arg)
{
    (void)ac;
    raw_sent(arg);
    return 1;
}

/* Hand the encoded cmd to every raw context with fn as its callback, as
 * hilock does, so that the baseline carries no formatting cost hilock
 * avoids; then drop cmd's heap storage, if any. REDIS_OK or not. */
static int c_send(struct urun *u, struct resp_buf *cmd, size_t split,
                  redisCallbackFn *fn, void *arg)
{
    static const char multi[] = "*1\r\n$5\r\nMULTI\r\n";
    static const char exec[] = "*1\r\n$4\r\nEXEC\r\n";
    int rc = cmd->failed ? REDIS_ERR : REDIS_OK;
    for (int j = 0; j < u->nac && rc == REDIS_OK; j++) {
        redisAsyncContext *ac = u->ac[j];
        if (!split) {
            rc = redisAsyncFormattedCommand(ac, fn, arg, cmd->data, cmd->len);
            continue;
        }
        /* two commands in one transaction, as hilock (conn.c) */
        if (redisAsyncFormattedCommand(ac, NULL, NULL, multi,
                                       sizeof multi - 1) != REDIS_OK ||
            redisAsyncFormattedCommand(ac, NULL, NULL, cmd->data, split) !=
                REDIS_OK ||
            redisAsyncFormattedCommand(ac, NULL, NULL, cmd->data + split,
                                       cmd->len - split) != REDIS_OK)
            rc = REDIS_ERR;
        else
            rc = redisAsyncFormattedCommand(ac, fn, arg, exec, sizeof exec - 1);
    }
    resp_free(cmd);
    raw_sent(u);
    return rc;
}

/* The release as hilock sends it (lock.c release_op): one hold, the
 * watchdog lease; on one node plain, HDEL and the release message. */
static int c_send_release(struct uslot *s)
{
    struct urun *u = s->run;
    char inline_cmd[U_CMD_INLINE];
    struct resp_buf cmd;
    size_t split = 0;
    resp_init(&cmd, inline_cmd, sizeof inline_cmd);
    if (c_plain(s))
        split = wire_drop(&cmd, &s->wire, "publish");
    else
        wire_release(&cmd, u->sha_rel, &s->wire, ++u->seq, u->lease_ms, 1,
                     "publish", 0);
    return c_send(u, &cmd, split, c_on_released, s);
}

static void c_on_acquired(redisAsyncContext *ac, void *reply, void *arg)
{
    struct uslot *s = arg;
    const redisReply *r = reply;
    int64_t t = now_ns();
    int ok = r && (r->type == REDIS_REPLY_ARRAY || /* integers: busy */
                   (r->type == REDIS_REPLY_STATUS && c_plain(s)));
    if (r && acquire_counted(s, ac, ok, t))
        release_sent(s, c_send_release(s));
}

/* The acquire as hilock sends it (lock.c send_attempt): the watchdog
 * lease, fencing off, the next request id; on one node plain, RESTORE. */
static int c_send_acquire(struct uslot *s)
{
    struct urun *u = s->run;
    char inline_cmd[U_CMD_INLINE];
    struct resp_buf cmd;
    resp_init(&cmd, inline_cmd, sizeof inline_cmd);
    if (!c_plain(s) || wire_take(&cmd, &s->wire, u->lease_ms, ++u->seq) != 0)
        wire_acquire(&cmd, u->sha_acq, &s->wire, u->lease_ms, 0, "publish",
                     ++u->seq);
    s->pair++;
    s->acq.ok = s->acq.bad = s->acq.done = 0;
    s->rel.ok = s->rel.bad = s->rel.done = 0;
    return c_send(u, &cmd, 0, c_on_acquired, s);
}

/* ---- U_SETNX: SET NX PX, then compare-and-delete --------------------- */

/* Send argv to every raw context with fn as its callback. REDIS_OK or
 * not. */
static int s_send(struct urun *u, redisCallbackFn *fn, void *arg, int argc,
                  const char **argv, const size_t *lens)
{
    int rc = REDIS_OK;
    for (int j = 0; j < u->nac && rc == REDIS_OK; j++)
        rc = redisAsyncCommandArgv(u->ac[j], fn, arg, argc, argv, lens);
    raw_sent(u);
    return rc;
}

static void s_on_deleted(redisAsyncContext *ac, void *reply, void *arg)
{
    const redisReply *r = reply;
    if (r)
        release_counted(arg, ac,
                        r->type == REDIS_REPLY_INTEGER && r->integer == 1);
}

static void s_on_set(redisAsyncContext *ac, void *reply, void *arg)
{
    struct uslot *s = arg;
    struct urun *u = s->run;
    const redisReply *r = reply;
    int64_t t = now_ns();
    if (!r || !acquire_counted(s, ac, r->type == REDIS_REPLY_STATUS, t))
        return; /* nil: taken */
    const char *argv[5] = {"EVALSHA", u->sha_cad, "1", s->skey, s->sval};
    size_t lens[5] = {7, 40, 1, s->sklen, s->svlen};
    release_sent(s, s_send(u, s_on_deleted, s, 5, argv, lens));
}

/* SET key token NX PX lease, a fresh token per pair. */
static int s_send_set(struct uslot *s)
{
    struct urun *u = s->run;
    char px[16];
    int n = snprintf(s->sval, sizeof s->sval, "%s:%" PRIu64, u->uuid,
                     ++u->seq);
    s->svlen = (size_t)n;
    n = snprintf(px, sizeof px, "%u", u->lease_ms);
    const char *argv[6] = {"SET", s->skey, s->sval, "NX", "PX", px};
    size_t lens[6] = {3, s->sklen, s->svlen, 2, 2, (size_t)n};
    s->pair++;
    s->acq.ok = s->acq.bad = s->acq.done = 0;
    s->rel.ok = s->rel.bad = s->rel.done = 0;
    return s_send(u, s_on_set, s, 6, argv, lens);
}

static void slot_start(struct uslot *s)
{
    struct urun *u = s->run;
    s->t0 = now_ns();
    int rc = u->mode == U_HILOCK
                 ? hilock_lock_acquire(s->lock, u->wait_ms, 0, h_on_acquired, s)
             : u->mode == U_CEIL ? (c_send_acquire(s) == REDIS_OK ? 0 : -1)
                                 : (s_send_set(s) == REDIS_OK ? 0 : -1);
    if (rc != 0) { /* retire rather than retry: no loop without the loop */
        u->errors++;
        slot_retire(s);
    }
}

static void on_phase_stop(evutil_socket_t fd, short what, void *arg)
{
    struct urun *u = arg;
    (void)fd;
    (void)what;
    u->stopping = 1;
}

static void on_phase_hard(evutil_socket_t fd, short what, void *arg)
{
    struct urun *u = arg;
    (void)fd;
    (void)what;
    fprintf(stderr, "%s: a phase did not drain: stopped\n", u->b->scenario);
    u->errors++;
    u->t_end = now_ns();
    u->cpu_end = cpu_ns();
    event_base_loopbreak(u->base);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct urun *u = arg;
    (void)fd;
    (void)what;
    double s = (double)(now_ns() - u->t_start) / 1e9;
    progress_show(u->b, "%s  %s K=%d  %.0f pairs/s", u->what,
                  mode_name[u->mode], u->k, s > 0 ? (double)u->pairs / s : 0);
}

/* Run one phase: k slots in mode for secs. Figures stay in u. 0, or -1
 * when it had to be broken off. */
static int phase_run(struct urun *u, enum umode mode, int k, double secs)
{
    struct timeval stop = {(time_t)secs,
                           (suseconds_t)((secs - (int)secs) * 1e6)};
    struct timeval hard = {(time_t)secs + U_HARD_S, 0};
    struct event *ev_stop = evtimer_new(u->base, on_phase_stop, u);
    struct event *ev_hard = evtimer_new(u->base, on_phase_hard, u);
    u->mode = mode;
    u->k = k;
    u->stopping = 0;
    u->active = k;
    u->pairs = u->errors = 0;
    u->t_start = now_ns();
    u->cpu_start = cpu_ns();
    u->t_end = 0;
    evtimer_add(ev_stop, &stop);
    evtimer_add(ev_hard, &hard);
    for (int i = 0; i < k; i++)
        slot_start(&u->slots[i]);
    event_base_dispatch(u->base);
    event_free(ev_stop);
    event_free(ev_hard);
    return u->active == 0 ? 0 : -1;
}

/* Server time so far of the commands mode sends, summed over the nodes,
 * in us: EVALSHA, and SET for U_SETNX; on one node also the plain
 * commands of hilock's fast path, RESTORE, MULTI and EXEC (whose time
 * includes the HDEL and PUBLISH it runs, as a script call's includes its
 * commands). -1 without INFO connections or when INFO failed. */
static int64_t redis_usec(struct urun *u, enum umode mode)
{
    static const char *const setnx[] = {"evalsha", "set"};
    static const char *const ours[] = {"evalsha", "restore", "multi",
                                       "exec"};
    const char *const *name = mode == U_SETNX ? setnx : ours;
    size_t n = mode == U_SETNX ? 2 : u->nac == 1 ? 4 : 1;
    int64_t sum = 0;
    if (u->nac == 0)
        return -1;
    for (int j = 0; j < u->nac; j++) {
        for (size_t i = 0; i < n; i++) {
            long long calls, us;
            if (!u->stat[j] ||
                bench_cmdstat(u->stat[j], name[i], &calls, &us) != 0)
                return -1;
            sum += us;
        }
    }
    return sum;
}

int urun_phase(struct urun *u, enum umode mode, int k, double secs,
               struct ucell *c, const char *what)
{
    u->what = what;
    u->lat = &c->lat;
    u->rate = &c->rate;
    int64_t us0 = redis_usec(u, mode);
    int bad = phase_run(u, mode, k > U_KMAX ? U_KMAX : k, secs);
    int64_t us1 = us0 < 0 ? -1 : redis_usec(u, mode);
    if (us0 < 0 || us1 < 0 || c->redis_usec < 0)
        c->redis_usec = -1;
    else
        c->redis_usec += us1 - us0;
    double s = (double)(u->t_end - u->t_start) / 1e9;
    c->pairs += u->pairs;
    c->errors += u->errors;
    c->secs += s;
    c->cpu_ns += u->cpu_end - u->cpu_start;
    if (c->rounds < U_ROUNDS_MAX)
        c->round_rate[c->rounds++] = s > 0 ? (double)u->pairs / s : 0;
    return bad;
}

/* Keys, owner fields and hilock handles of every slot; the hilock keys
 * are named by tag. 0 or -1. */
static int slots_init(struct urun *u, const char *tag)
{
    for (int i = 0; i < U_KMAX; i++) {
        struct uslot *s = &u->slots[i];
        s->run = u;
        s->tag = (uint64_t)i + 1;
        /* Distinct keys per mode, so the two never meet. */
        snprintf(s->key, sizeof s->key, BENCH_PREFIX "u:%s:%d", tag, i);
        if (hilock_lock_new(u->client, s->key, strlen(s->key), s->tag,
                            &s->lock) != 0)
            return -1;
        s->sklen = (size_t)snprintf(s->skey, sizeof s->skey,
                                    BENCH_PREFIX "u:s:%d", i);
        int n = snprintf(s->key, sizeof s->key, BENCH_PREFIX "u:c:%d", i);
        struct wire_lock w = {.prefix = "",
                              .name = s->key,
                              .name_len = (size_t)n,
                              .client_id = u->uuid,
                              .owner_tag = s->tag};
        s->wire = w;
    }
    return 0;
}

/* Load hilock's acquire and release scripts (the very text of src/lua/)
 * and check that hilock would call the same digests. 0 or -1. */
static int scripts_load(struct urun *u, redisContext *rc)
{
    struct script_set set;
    size_t la, lr;
    const char *acq = script_body(SCRIPT_ACQUIRE, &la);
    const char *rel = script_body(SCRIPT_RELEASE, &lr);
    script_set_init(&set);
    if (bench_script_load(rc, acq, la, u->sha_acq) != 0 ||
        bench_script_load(rc, rel, lr, u->sha_rel) != 0 ||
        bench_script_load(rc, cad_lua, sizeof cad_lua - 1, u->sha_cad) != 0)
        return -1;
    if (strcmp(u->sha_acq, set.sha[SCRIPT_ACQUIRE]) != 0 ||
        strcmp(u->sha_rel, set.sha[SCRIPT_RELEASE]) != 0) {
        fprintf(stderr, "uncontended: script digests differ from hilock's\n");
        return -1;
    }
    return 0;
}

/* The ceiling's node j at host:port: keys reset, scripts loaded, a raw
 * context on the loop that knows its index. 0 or -1. */
static int ceiling_node(struct urun *u, int j, const char *host, int port)
{
    redisContext *rc = bench_connect_at(host, port, 2000);
    int ok = rc && bench_reset(u->b, rc, NULL) == 0 &&
             scripts_load(u, rc) == 0;
    if (!ok) {
        if (rc)
            redisFree(rc);
        return -1;
    }
    u->stat[j] = rc; /* kept for INFO commandstats around the phases */
    u->ac[j] = redisAsyncConnect(host, port);
    if (!u->ac[j] || u->ac[j]->err)
        return -1;
    u->ac[j]->data = (void *)(uintptr_t)j;
    return adapter_attach(u->ac[j], u->base, raw_write_soon, u);
}

/* The ceiling mode on the nodes of *ho (its masters, or its endpoint):
 * each set up, owner id drawn. 0 or -1. */
static int ceiling_setup(struct urun *u, const struct hilock_options *ho)
{
    int n = ho->redlock.count ? (int)ho->redlock.count : 1;
    if (n > HILOCK_MASTERS_MAX || bench_uuid(u->uuid) != 0)
        return -1;
    u->nac = n;
    u->quorum = n / 2 + 1;
    for (int j = 0; j < n; j++) {
        const struct hilock_endpoint *e =
            ho->redlock.count ? &ho->redlock.masters[j] : &ho->node;
        if (ceiling_node(u, j, e->host, e->port) != 0)
            return -1;
    }
    return 0;
}

/* Loop, hilock client, the ceiling when asked, slots, progress tick; then a
 * short warm-up of each mode. 0 or -1. */
static int urun_setup(struct urun *u, struct bench *b,
                      const struct hilock_options *ho, const char *tag,
                      int ceiling)
{
    struct timeval tick = {0, 200000};
    u->b = b;
    u->lease_ms = ho->watchdog_lease_ms;
    if (!(u->base = event_base_new()) ||
        (ceiling && ceiling_setup(u, ho) != 0) ||
        hilock_client_new(u->base, ho, &u->client) != 0 ||
        slots_init(u, tag) != 0 ||
        !(u->tick = event_new(u->base, -1, EV_PERSIST, on_tick, u)) ||
        !(u->flush = event_new(u->base, -1, 0, on_raw_flush, u)))
        return -1;
    event_add(u->tick, &tick);
    u->what = "warm-up";
    for (int m = 0; m < (ceiling ? U_MODES : 1); m++)
        if (phase_run(u, (enum umode)m, 64, 0.3) != 0 || u->errors) {
            fprintf(stderr, "%s: warm-up failed (%s, %" PRIu64
                            " errors, %" PRIu64 " pairs)\n",
                    b->scenario, mode_name[m], u->errors, u->pairs);
            return -1;
        }
    return 0;
}

struct urun *urun_new(struct bench *b, const struct hilock_options *ho,
                      const char *tag, int ceiling, uint32_t wait_ms)
{
    struct urun *u = calloc(1, sizeof(*u));
    if (!u)
        return NULL;
    u->wait_ms = wait_ms;
    if (urun_setup(u, b, ho, tag, ceiling) != 0) {
        fprintf(stderr, "%s: setup failed\n", b->scenario);
        urun_free(u);
        return NULL;
    }
    return u;
}

void urun_free(struct urun *u)
{
    if (!u)
        return;
    if (u->tick)
        event_free(u->tick);
    if (u->flush)
        event_free(u->flush);
    if (u->client)
        hilock_client_free(u->client); /* frees the handles too */
    for (int j = 0; j < u->nac; j++)
        if (u->ac[j])
            redisAsyncFree(u->ac[j]);
    for (int j = 0; j < u->nac; j++)
        if (u->stat[j])
            redisFree(u->stat[j]);
    if (u->base)
        event_base_free(u->base);
    free(u);
}

void ucell_init(struct ucell *c, int64_t t0_ns)
{
    rate_init(&c->rate, t0_ns, 100000000);
}

void ucell_free(struct ucell *c)
{
    samples_free(&c->lat);
    rate_free(&c->rate);
}

double ucell_rate(const struct ucell *c)
{
    return c->secs > 0 ? (double)c->pairs / c->secs : 0;
}

/* Client CPU time per pair in us: what this process spent per pair. */
double ucell_cpu_us(const struct ucell *c)
{
    return c->pairs ? (double)c->cpu_ns / 1e3 / (double)c->pairs : 0;
}

double ucell_redis_us(const struct ucell *c)
{
    return c->pairs && c->redis_usec >= 0
               ? (double)c->redis_usec / (double)c->pairs
               : -1;
}

void ucell_json(struct json *j, const char *key, struct ucell *c)
{
    json_obj(j, key);
    json_int(j, "pairs", (int64_t)c->pairs);
    json_num(j, "seconds", c->secs);
    json_num(j, "pairs_per_s", ucell_rate(c));
    json_num(j, "client_cpu_us_per_pair", ucell_cpu_us(c));
    if (c->redis_usec >= 0)
        json_num(j, "redis_us_per_pair", ucell_redis_us(c));
    json_int(j, "errors", (int64_t)c->errors);
    json_arr(j, "pairs_per_s_by_round");
    for (int r = 0; r < c->rounds; r++)
        json_num(j, NULL, c->round_rate[r]);
    json_end(j);
    json_latency(j, "acquire_latency", &c->lat);
    json_end(j);
}

/* ---- the uncontended scenario ------------------------------------------ */

/* Run every phase, filling cells[k index][mode]: the modes in one order,
 * then the reverse (hilock, ceiling, SET NX PX; SET NX PX, ceiling,
 * hilock; ...), alternating over rounds and K. */
static int run_phases(struct urun *u, const int *ks, int nk, int rounds,
                      double secs, struct ucell (*cells)[U_MODES])
{
    char what[32];
    int bad = 0;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < nk; i++) {
            for (int m = 0; m < U_MODES; m++) {
                enum umode mode = (enum umode)((r + i) % 2 == 0
                                                   ? m
                                                   : U_MODES - 1 - m);
                snprintf(what, sizeof what, "round %d/%d", r + 1, rounds);
                bad |= urun_phase(u, mode, ks[i], secs, &cells[i][mode],
                                  what);
            }
        }
    }
    return bad;
}

/* "0.97 / 1.01 / 0.99": the ratio of every round. */
static void round_ratios(const struct ucell *h, const struct ucell *c,
                         char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int r = 0; r < h->rounds && o + 8 < len; r++)
        o += (size_t)snprintf(buf + o, len - o, "%s%.2f", r ? "/" : "",
                              c->round_rate[r] > 0
                                  ? h->round_rate[r] / c->round_rate[r]
                                  : 0);
}

/* Print the throughput table; returns how many K missed the target. */
static int report_rates(const int *ks, int nk, struct ucell (*cells)[U_MODES])
{
    struct table t;
    int missed = 0;
    table_init(&t, "K", "hilock pairs/s", "ceiling pairs/s", "ratio",
               "target >= 0.95", "ratio by round", "client CPU/pair: hilock",
               "ceiling", "SET NX PX pairs/s", NULL);
    for (int i = 0; i < nk; i++) {
        struct ucell *h = &cells[i][U_HILOCK], *c = &cells[i][U_CEIL];
        char k[16], hr[32], cr[32], ratio[16], rounds[128], hc[32], cc[32];
        char sr[32];
        double q = ucell_rate(c) > 0 ? ucell_rate(h) / ucell_rate(c) : 0;
        missed += q < U_TARGET;
        snprintf(k, sizeof k, "%d", ks[i]);
        snprintf(ratio, sizeof ratio, "%.3f", q);
        snprintf(hc, sizeof hc, "%.2f us", ucell_cpu_us(h));
        snprintf(cc, sizeof cc, "%.2f us", ucell_cpu_us(c));
        round_ratios(h, c, rounds, sizeof rounds);
        table_row(&t, k, fmt_count(ucell_rate(h), hr, sizeof hr),
                  fmt_count(ucell_rate(c), cr, sizeof cr), ratio,
                  q >= U_TARGET ? "ok" : "MISSED", rounds, hc, cc,
                  fmt_count(ucell_rate(&cells[i][U_SETNX]), sr, sizeof sr));
    }
    table_print(&t, stdout);
    return missed;
}

/* Print the acquire latency table and any errors. */
static void report_latency(const int *ks, int nk, struct ucell (*cells)[U_MODES])
{
    struct table t;
    table_init(&t, "K", "acquire latency", "p50", "p99", "p99.9", "max",
               NULL);
    for (int i = 0; i < nk; i++)
        for (int m = 0; m < U_MODES; m++) {
            struct samples *s = &cells[i][m].lat;
            char k[16], l[4][32];
            snprintf(k, sizeof k, "%d", ks[i]);
            table_row(&t, m ? "" : k, mode_name[m],
                      fmt_ns(samples_pct(s, 50), l[0], 32),
                      fmt_ns(samples_pct(s, 99), l[1], 32),
                      fmt_ns(samples_pct(s, 99.9), l[2], 32),
                      fmt_ns(samples_max(s), l[3], 32));
        }
    table_print(&t, stdout);
    for (int i = 0; i < nk; i++)
        if (cells[i][0].errors || cells[i][1].errors || cells[i][2].errors)
            printf("  K=%d: errors: hilock %" PRIu64 ", ceiling %" PRIu64
                   ", SET NX PX %" PRIu64 "\n",
                   ks[i], cells[i][0].errors, cells[i][1].errors,
                   cells[i][2].errors);
}

#define U_REDIS_TARGET 2.0

/* Print the server time per pair (INFO commandstats) of each mode and
 * hilock's over SET NX PX's; returns how many K missed the target. */
static int report_redis(const int *ks, int nk, struct ucell (*cells)[U_MODES])
{
    struct table t;
    int missed = 0;
    printf("Redis CPU per acquire+release pair (INFO commandstats usec: "
           "EVALSHA, and on one node RESTORE + MULTI + EXEC; SET NX PX: "
           "SET + EVALSHA)\n");
    table_init(&t, "K", "hilock", "ceiling", "SET NX PX",
               "hilock / SET NX PX", "target <= 2", NULL);
    for (int i = 0; i < nk; i++) {
        double us[U_MODES], q;
        char k[16], v[U_MODES][32], r[16];
        for (int m = 0; m < U_MODES; m++) {
            us[m] = ucell_redis_us(&cells[i][m]);
            if (us[m] < 0)
                snprintf(v[m], 32, "-");
            else
                snprintf(v[m], 32, "%.2f us", us[m]);
        }
        q = us[U_HILOCK] >= 0 && us[U_SETNX] > 0 ? us[U_HILOCK] / us[U_SETNX]
                                                 : -1;
        missed += !(q >= 0 && q <= U_REDIS_TARGET);
        snprintf(k, sizeof k, "%d", ks[i]);
        if (q >= 0)
            snprintf(r, sizeof r, "%.2f", q);
        else
            snprintf(r, sizeof r, "-");
        table_row(&t, k, v[0], v[1], v[2], r,
                  q >= 0 && q <= U_REDIS_TARGET ? "ok" : "MISSED");
    }
    table_print(&t, stdout);
    return missed;
}

static void write_json(struct bench *b, const int *ks, int nk,
                       struct ucell (*cells)[U_MODES])
{
    json_arr(b->json, "results");
    for (int i = 0; i < nk; i++) {
        double c = ucell_rate(&cells[i][U_CEIL]);
        json_obj(b->json, NULL);
        json_int(b->json, "inflight", ks[i]);
        json_num(b->json, "ratio", c > 0 ? ucell_rate(&cells[i][0]) / c : 0);
        ucell_json(b->json, "hilock", &cells[i][U_HILOCK]);
        ucell_json(b->json, "ceiling", &cells[i][U_CEIL]);
        ucell_json(b->json, "set_nx_px", &cells[i][U_SETNX]);
        json_end(b->json);
    }
    json_end(b->json);
}

static void write_plots(struct bench *b, const int *ks, int nk,
                        struct ucell (*cells)[U_MODES])
{
    struct samples *d[12];
    const struct rate *r[12];
    char names[12][32];
    const char *titles[12];
    int n = 0;
    for (int i = 0; i < nk && n < 12; i++)
        for (int m = 0; m < U_MODES; m++, n++) {
            snprintf(names[n], sizeof names[n], "%s K=%d", mode_name[m],
                     ks[i]);
            titles[n] = names[n];
            d[n] = &cells[i][m].lat;
            r[n] = &cells[i][m].rate;
        }
    plot_cdf(b, "acquire-latency", "uncontended: acquire latency", d, titles,
             n);
    plot_rate(b, "throughput", "uncontended: lock+release pairs/s", "pairs/s",
              r, titles, n, NULL, 0, 1);
}

/* Print, write and plot the figures; returns the exit status. */
static int ureport(struct bench *b, uint32_t wait_ms, const int *ks, int nk,
                   int rounds, double secs, int bad,
                   struct ucell (*cells)[U_MODES], long long keys_left)
{
    int missed = report_rates(ks, nk, cells), errors = 0;
    report_latency(ks, nk, cells);
    missed += report_redis(ks, nk, cells);
    printf("  keys left in Redis after the run (DBSIZE): %lld   target 0  %s\n",
           keys_left, keys_left == 0 ? "ok" : "MISSED");
    missed += keys_left != 0;
    json_int(b->json, "keys_left", keys_left);
    for (int i = 0; i < nk; i++)
        errors += cells[i][0].errors || cells[i][1].errors ||
                  cells[i][2].errors;
    json_int(b->json, "rounds", rounds);
    json_num(b->json, "phase_seconds", secs);
    json_int(b->json, "wait_ms", wait_ms);
    write_json(b, ks, nk, cells);
    write_plots(b, ks, nk, cells);
    /* Only failures fail the run; a ratio under target is reported. */
    if (bad || errors)
        printf("result: FAIL (%s)\n", bad ? "a phase did not drain"
                                          : "request errors");
    else if (missed)
        printf("result: ok, %d target(s) missed\n", missed);
    else
        printf("result: ok\n");
    return bad || errors ? 1 : 0;
}

/* Set up, run every phase, report. Returns the exit status. */
static int urun_all(struct bench *b, const int *ks, int nk, int rounds,
                    double secs, uint32_t wait_ms, struct ucell (*cells)[U_MODES])
{
    struct hilock_options ho;
    hilock_options_init(&ho);
    ho.node.host = b->host;
    ho.node.port = b->port;
    ho.fair = b->o.fair;
    struct urun *u = urun_new(b, &ho, "h", 1, wait_ms);
    if (!u)
        return 1;
    int64_t t0 = now_ns();
    for (int i = 0; i < nk; i++)
        for (int m = 0; m < U_MODES; m++)
            ucell_init(&cells[i][m], t0);
    progress_begin(b, rounds * nk * U_MODES * secs);
    printf("uncontended: %d round(s) x %d K x 3 modes, %.1f s each, "
           "wait_ms %u%s, on %s:%d\n",
           rounds, nk, secs, wait_ms, ho.fair ? ", fair" : "", b->host,
           b->port);
    int bad = run_phases(u, ks, nk, rounds, secs, cells);
    progress_end(b);
    urun_free(u);
    /* What the run left: lock keys, tokens, latches of every mode (all
     * keys of the bench's own server; of the whole server with --port). */
    redisContext *rc = bench_connect(b, 2000);
    long long left = rc ? bench_int(rc, "DBSIZE", NULL) : -1;
    if (rc)
        redisFree(rc);
    return ureport(b, wait_ms, ks, nk, rounds, secs, bad, cells, left);
}

int sc_uncontended(struct bench *b)
{
    static const int all_k[] = {1, 64, 256, 1024};
    int ks[4], nk = 0, rounds = b->o.rounds ? b->o.rounds : 3;
    double secs = b->o.seconds > 0 ? b->o.seconds : 1.0;
    uint32_t wait_ms = (b->o.given & OPT_WAIT) ? b->o.wait_ms : 5000;
    if (b->o.cluster || b->o.wait_replicas || b->o.tls)
        return uncontended_topology(b);
    struct ucell (*cells)[U_MODES] = calloc(4, sizeof(*cells));
    if (b->o.inflight)
        ks[nk++] = b->o.inflight > U_KMAX ? U_KMAX : b->o.inflight;
    else
        for (int i = 0; i < 4; i++)
            ks[nk++] = all_k[i];
    rounds = rounds > U_ROUNDS_MAX ? U_ROUNDS_MAX : rounds;
    int rc = cells ? urun_all(b, ks, nk, rounds, secs, wait_ms, cells) : 1;
    for (int i = 0; cells && i < 4; i++)
        for (int m = 0; m < U_MODES; m++)
            ucell_free(&cells[i][m]);
    free(cells);
    return rc;
}
