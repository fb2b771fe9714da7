/* SPDX-License-Identifier: BSD-3-Clause */
/* sc_scripts.c -- what each lock script costs Redis, alone.
 *
 * Every case prepares a state in Redis (a lock held by another owner, a
 * fair queue of N waiters, N readers, N permits taken...), then calls one
 * script again and again with the arguments the library sends (encoded
 * by src/wire.h; the text from src/lua/, as script.h gives it) and reads
 * the server time of those calls from INFO commandstats. The state stays
 * the same from call to call: what a call changes is put back
 * by another script call sent as EVAL, which commandstats counts apart
 * from the EVALSHA measured (the commands a script runs are counted in
 * their own lines as well, and in the script's). A case with a queue runs
 * at each queue size, the others once.
 *
 * Prints the server time per call (us) by script and queue size: the
 * least of CHUNKS chunks of calls (CONFIG RESETSTAT before each), so that
 * a chunk during which others' processes took Redis's CPU does not count;
 * a slow chunk stops after CHUNK_NS (with BATCH calls at least). Fails
 * when a measured call was answered with an error, or with another reply
 * than the case expects (its state was not the one meant).
 *
 * Calls go in pipelined batches of BATCH steps, or with --serial one step
 * per round trip, as they reach Redis in a contended run: between two
 * calls Redis reads and writes sockets, and a call finds its caches cold.
 * The floor rows show what a call costs Redis before any logic of
 * hilock's: a script that runs no command, and scripts that run just the
 * commands a fenced lock cannot do without (floors[] below), each called
 * with the keys and arguments of the script it stands for. */
#include "bench.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "script.h"
#include "wire.h"

#define NAME BENCH_PREFIX "scripts"
#define NAME2 BENCH_PREFIX "scripts2"
#define LEASE_MS 30000
#define ENTRY_MS 30000
#define CHUNKS 5          /* measured chunks per case: the least counts */
#define CHUNK 400         /* calls per chunk */
#define CHUNK_NS 60000000LL /* a slow chunk stops after this, >= BATCH calls */
#define BATCH 32          /* steps per pipelined batch */
#define MAX_PENDING (BATCH * 4)
#define NQUEUES 4

static const int queues[NQUEUES] = {1, 10, 100, 1000};

/* The floor rows' scripts: one of each command that a fenced lock's
 * step cannot do without, and nothing else, called with the keys and
 * arguments of the script it stands for (src/lua/).
 * - a waiter's take (acquire): is the name free, write the owner's hold
 *   and its lease, draw a token;
 * - a release (release): read the owner's hold, tell the waiters, drop it;
 * - a fair hand-off (fair_release): read the owner's hold, drop it, take
 *   the queue's head (moved to the tail, so the queue stays as it was),
 *   draw a token, tell the new owner's client (a subscribed channel),
 *   write the new owner and its lease. */
enum floor_id { FLOOR_NONE, FLOOR_TAKE, FLOOR_RELEASE, FLOOR_HANDOFF, NFLOORS };

static const char *const floors[NFLOORS] = {
    [FLOOR_NONE] = "return {0, 0, 0}",
    [FLOOR_TAKE] =
        "redis.call('exists', KEYS[1], ARGV[5])\n"
        "redis.call('hset', KEYS[1], ARGV[2], 1, 'rid', ARGV[9])\n"
        "redis.call('pexpire', KEYS[1], ARGV[1])\n"
        "return {1, redis.call('incr', KEYS[2])}\n",
    [FLOOR_RELEASE] =
        "redis.call('hmget', KEYS[1], ARGV[3], 'rid', 'mode', 'q')\n"
        "local n = redis.call(ARGV[5], ARGV[6], ARGV[1])\n"
        "redis.call('del', KEYS[1])\n"
        "return {0, n}\n",
    [FLOOR_HANDOFF] =
        "redis.call('hmget', KEYS[1], ARGV[3], 'rid', 'mode', 'q')\n"
        "redis.call('del', KEYS[1])\n"
        "local e = redis.call('lmove', KEYS[2], KEYS[2], 'left', 'right')\n"
        "local t = redis.call('incr', KEYS[4])\n"
        "redis.call('publish', ARGV[6] .. ':' .. ARGV[10], t)\n"
        "redis.call('hset', KEYS[1], ARGV[3], 1, 'hilock:handed', t)\n"
        "redis.call('pexpire', KEYS[1], 5000)\n"
        "return {0, 0, 0}\n",
};

/* One run: the connections, the digests, the pipeline. */
struct srun {
    redisContext *rc;
    redisContext *sub; /* subscribed to every hand-off channel */
    struct script_set set;
    char floor_sha[NFLOORS][41]; /* the floor rows' digests */
    int batch;         /* steps per pipelined batch: BATCH, or 1 */
    char id[37];       /* the client id of every owner */
    uint64_t rid;      /* request ids, rising */
    int q;             /* the queue size of the case */
    long holder;       /* the fair rotation's holder */
    struct resp_buf cmd;
    char measured[MAX_PENDING]; /* per command sent: EVALSHA measured */
    int npending;
    int want, elems;   /* the reply a measured call must get */
    long bad, setup_bad;
};

/* A case: a state, then one measured call per step. */
struct scase {
    const char *script, *meets;
    int queued;               /* runs at each queue size, else once */
    int want, elems;          /* the measured reply's type, elements */
    void (*prep)(struct srun *s);
    void (*step)(struct srun *s, long i);
};

/* ---- encoding -------------------------------------------------------- */

/* Owner i of the lock of kind on name. */
static struct wire_lock who(const struct srun *s, long i, const char *name,
                            const struct wire_kind *kind)
{
    struct wire_lock w = {.prefix = "", .prefix_len = 0, .name = name,
                          .name_len = strlen(name), .client_id = s->id,
                          .owner_tag = (uint64_t)i + 1,
                          .suffix = kind == &wire_kind_write ? ":write"
                                                              : NULL,
                          .kind = kind};
    memset(w.member, 0xab, 8);
    memcpy(w.member + 8, &i, sizeof i < 8 ? sizeof i : 8);
    return w;
}

/* Owner i's listener tag (hex, as the client's). */
static const char *listener(long i, char *buf, size_t len)
{
    snprintf(buf, len, "%lx", 0x10000L + i);
    return buf;
}

static int drain(struct srun *s);

/* Send what s->cmd holds: as it is (EVALSHA) when measured, else as EVAL
 * of the body of script id. A full pipeline is read first. */
static void push(struct srun *s, enum script_id id, int measured)
{
    size_t len;
    const char *body = script_body(id, &len);
    if (!measured && wire_eval_body(&s->cmd, body, len) != 0)
        s->cmd.failed = 1;
    if (s->npending == MAX_PENDING && drain(s) != 0)
        s->cmd.failed = 1;
    if (!s->cmd.failed &&
        redisAppendFormattedCommand(s->rc, s->cmd.data, s->cmd.len) ==
            REDIS_OK)
        s->measured[s->npending++] = (char)measured;
    else
        s->setup_bad++;
    resp_reset(&s->cmd);
}

/* Owner i's acquire, or with its keys and arguments the script of
 * digest sha. */
static void acq_as(struct srun *s, long i, uint32_t entry_ms, const char *sha,
                   int m)
{
    struct wire_lock w = who(s, i, NAME, &wire_kind_mutex);
    w.entry_ms = entry_ms;
    wire_acquire(&s->cmd, sha, &w, LEASE_MS, 1, "publish", ++s->rid);
    push(s, SCRIPT_ACQUIRE, m);
}

static void acq(struct srun *s, long i, uint32_t entry_ms, int m)
{
    acq_as(s, i, entry_ms, s->set.sha[SCRIPT_ACQUIRE], m);
}

/* Release of owner i's last hold (quiet: no message, wire.h), or with its
 * keys and arguments the script of digest sha. */
static void rel_as(struct srun *s, long i, const char *sha, int m, int quiet)
{
    struct wire_lock w = who(s, i, NAME, &wire_kind_mutex);
    wire_release(&s->cmd, sha, &w, ++s->rid, LEASE_MS, 1, "publish", quiet);
    push(s, SCRIPT_RELEASE, m);
}

static void rel(struct srun *s, long i, int m)
{
    rel_as(s, i, s->set.sha[SCRIPT_RELEASE], m, 0);
}

/* Fair acquire of owner i in mode (wire.h). */
static void facq(struct srun *s, long i, enum wire_fair_mode mode, int m)
{
    char l[24];
    struct wire_lock w = who(s, i, NAME, &wire_kind_mutex);
    struct wire_fair f = {listener(i, l, sizeof l), ENTRY_MS,
                          (uint64_t)i + 1, "publish", 1000};
    wire_fair_acquire(&s->cmd, s->set.sha[SCRIPT_FAIR_ACQUIRE], &w, LEASE_MS,
                      1, mode, &f, ++s->rid);
    push(s, SCRIPT_FAIR_ACQUIRE, m);
}

/* Owner i's fair release, or with the keys and arguments of one the
 * script of digest sha. */
static void frel_as(struct srun *s, long i, const char *sha, int m)
{
    char l[24];
    struct wire_lock w = who(s, i, NAME, &wire_kind_mutex);
    struct wire_fair f = {listener(i, l, sizeof l), ENTRY_MS,
                          (uint64_t)i + 1, "publish", 1000};
    wire_fair_release(&s->cmd, sha, &w, ++s->rid, LEASE_MS, 1, 1, &f);
    push(s, SCRIPT_FAIR_RELEASE, m);
}

static void frel(struct srun *s, long i, int m)
{
    frel_as(s, i, s->set.sha[SCRIPT_FAIR_RELEASE], m);
}

static void fleave(struct srun *s, long i, int m)
{
    char l[24];
    struct wire_lock w = who(s, i, NAME, &wire_kind_mutex);
    struct wire_fair f = {listener(i, l, sizeof l), ENTRY_MS,
                          (uint64_t)i + 1, "publish", 1000};
    wire_fair_leave(&s->cmd, s->set.sha[SCRIPT_FAIR_LEAVE], &w, 1, &f);
    push(s, SCRIPT_FAIR_LEAVE, m);
}

/* A side of the read-write lock: its reader (write 0) or its writer. */
static void racq(struct srun *s, long i, int write, int m)
{
    const struct wire_rw_side *side = write ? &wire_rw_writer
                                            : &wire_rw_reader;
    struct wire_lock w =
        who(s, i, NAME, write ? &wire_kind_write : &wire_kind_read);
    wire_rw_acquire(&s->cmd, s->set.sha[side->acquire], &w, side, LEASE_MS,
                    1, ENTRY_MS, ++s->rid);
    push(s, side->acquire, m);
}

static void rrel(struct srun *s, long i, int write, int m)
{
    const struct wire_rw_side *side = write ? &wire_rw_writer
                                            : &wire_rw_reader;
    struct wire_lock w =
        who(s, i, NAME, write ? &wire_kind_write : &wire_kind_read);
    wire_rw_release(&s->cmd, s->set.sha[side->release], &w, side, ++s->rid,
                    LEASE_MS, 1, "publish");
    push(s, side->release, m);
}

/* Undo side write's acquire attempt with request id attempt. */
static void rundo(struct srun *s, long i, int write, uint64_t attempt,
                  int m)
{
    const struct wire_rw_side *side = write ? &wire_rw_writer
                                            : &wire_rw_reader;
    struct wire_lock w =
        who(s, i, NAME, write ? &wire_kind_write : &wire_kind_read);
    wire_rw_undo(&s->cmd, s->set.sha[side->undo], &w, side, attempt,
                 ++s->rid, LEASE_MS, "publish");
    push(s, side->undo, m);
}

static void sacq(struct srun *s, long i, int m)
{
    struct wire_lock w = who(s, i, NAME, &wire_kind_permit);
    wire_sem_acquire(&s->cmd, s->set.sha[SCRIPT_SEM_ACQUIRE], &w, 1,
                     LEASE_MS, ++s->rid);
    push(s, SCRIPT_SEM_ACQUIRE, m);
}

static void srel(struct srun *s, long i, int m)
{
    struct wire_lock w = who(s, i, NAME, &wire_kind_permit);
    wire_sem_release(&s->cmd, s->set.sha[SCRIPT_SEM_RELEASE], &w, 1,
                     LEASE_MS, "publish", ++s->rid);
    push(s, SCRIPT_SEM_RELEASE, m);
}

static void pacq(struct srun *s, long i, int m)
{
    struct wire_lock w = who(s, i, NAME, &wire_kind_permit);
    wire_permit_acquire(&s->cmd, s->set.sha[SCRIPT_PERMIT_ACQUIRE], &w,
                        LEASE_MS, "publish", ++s->rid);
    push(s, SCRIPT_PERMIT_ACQUIRE, m);
}

static void prel(struct srun *s, long i, int m)
{
    struct wire_lock w = who(s, i, NAME, &wire_kind_permit);
    wire_permit_release(&s->cmd, s->set.sha[SCRIPT_PERMIT_RELEASE], &w,
                        "publish", ++s->rid);
    push(s, SCRIPT_PERMIT_RELEASE, m);
}

/* The semaphore with permits (the permits' scripts share its counter). */
static void sinit(struct srun *s, uint32_t permits)
{
    struct wire_lock w = who(s, 0, NAME, &wire_kind_permit);
    wire_sem_init(&s->cmd, s->set.sha[SCRIPT_SEM_INIT], &w, permits,
                  "publish");
    push(s, SCRIPT_SEM_INIT, 0);
}

/* ---- the pipeline ---------------------------------------------------- */

/* Whether r is the reply a measured call of the case must get. */
static int reply_ok(const struct srun *s, const redisReply *r)
{
    if (!r || r->type == REDIS_REPLY_ERROR || r->type != s->want)
        return 0;
    return s->elems == 0 || (r->type == REDIS_REPLY_ARRAY &&
                             r->elements == (size_t)s->elems);
}

/* Read the replies of everything sent. 0, or -1 when the connection
 * failed. */
static int drain(struct srun *s)
{
    for (int i = 0; i < s->npending; i++) {
        redisReply *r = NULL;
        if (redisGetReply(s->rc, (void **)&r) != REDIS_OK)
            return -1;
        if (s->measured[i] && !reply_ok(s, r))
            s->bad++;
        else if (!s->measured[i] && r->type == REDIS_REPLY_ERROR)
            s->setup_bad++;
        if (s->measured[i] && !reply_ok(s, r) && s->bad == 1)
            fprintf(stderr, "scripts: unexpected reply (type %d%s%s)\n",
                    r->type, r->type == REDIS_REPLY_ERROR ? ": " : "",
                    r->type == REDIS_REPLY_ERROR ? r->str : "");
        if (!s->measured[i] && r->type == REDIS_REPLY_ERROR &&
            s->setup_bad == 1)
            fprintf(stderr, "scripts: set-up error: %s\n", r->str);
        freeReplyObject(r);
    }
    s->npending = 0;
    return 0;
}

/* Subscribe s->sub to the hand-off channels of owners 0..n-1, so that a
 * hand-off to any of them is heard (PUBLISH counts 1). 0 or -1. */
static int subscribe(struct srun *s, long n)
{
    char l[24];
    struct resp_buf b;
    resp_init(&b, NULL, 0);
    resp_array(&b, (size_t)n + 1);
    resp_arg(&b, "SUBSCRIBE", 9);
    struct key_src k = {"", 0, NAME, strlen(NAME)};
    for (long i = 0; i < n; i++)
        keys_handoff(&b, &k, listener(i, l, sizeof l));
    int ok = !b.failed && redisAppendFormattedCommand(s->sub, b.data, b.len) ==
                              REDIS_OK;
    resp_free(&b);
    for (long i = 0; ok && i < n; i++) {
        redisReply *r = NULL;
        ok = redisGetReply(s->sub, (void **)&r) == REDIS_OK;
        if (r)
            freeReplyObject(r);
    }
    return ok ? 0 : -1;
}

/* ---- states ---------------------------------------------------------- */

static void prep_none(struct srun *s) { (void)s; }

/* Another owner holds the lock. */
static void prep_held(struct srun *s) { acq(s, 1, 0, 0); }

/* Owner 1 holds the lock in fair mode, owners 2..q+1 queue. */
static void prep_fair_queue(struct srun *s)
{
    for (long j = 1; j <= s->q + 1; j++)
        facq(s, j, WIRE_FAIR_WAIT, 0);
}

/* The same, and owner 0 queued last. */
static void prep_fair_self(struct srun *s)
{
    prep_fair_queue(s);
    facq(s, 0, WIRE_FAIR_WAIT, 0);
}

/* Owner 0 holds, owners 1..q queue: the hand-off rotation. */
static void prep_fair_rotation(struct srun *s)
{
    for (long j = 0; j <= s->q; j++)
        facq(s, j, WIRE_FAIR_WAIT, 0);
    s->holder = 0;
}

/* Owners 1..q hold the read lock. */
static void prep_readers(struct srun *s)
{
    for (long j = 1; j <= s->q; j++)
        racq(s, j, 0, 0);
}

static void prep_sem(struct srun *s) { sinit(s, 1u << 30); }

/* Owners 1..q hold a permit each, 10 more are free. */
static void prep_permits(struct srun *s)
{
    sinit(s, (uint32_t)s->q + 10);
    for (long j = 1; j <= s->q; j++)
        pacq(s, j, 0);
}

/* ---- steps: the measured call (1), what puts the state back (0) ------ */

static void st_take(struct srun *s, long i) { (void)i; acq(s, 0, 0, 1); rel(s, 0, 0); }
static void st_take_wait(struct srun *s, long i) { (void)i; acq(s, 0, ENTRY_MS, 1); rel(s, 0, 0); }
static void st_busy(struct srun *s, long i) { (void)i; acq(s, 0, ENTRY_MS, 1); }
static void st_release(struct srun *s, long i) { (void)i; acq(s, 0, 0, 0); rel(s, 0, 1); }
static void st_quiet(struct srun *s, long i) { (void)i; acq(s, 0, 0, 0); rel_as(s, 0, s->set.sha[SCRIPT_RELEASE], 1, 1); }

static void st_undo(struct srun *s, long i)
{
    struct wire_lock w = who(s, 0, NAME, &wire_kind_mutex);
    (void)i;
    acq(s, 0, 0, 0);
    uint64_t attempt = s->rid;
    wire_undo(&s->cmd, s->set.sha[SCRIPT_UNDO], &w, attempt, ++s->rid,
              "publish");
    push(s, SCRIPT_UNDO, 1);
}

static void st_renew(struct srun *s, long i)
{
    struct wire_lock w = who(s, 0, NAME, &wire_kind_mutex);
    (void)i;
    wire_renew_head(&s->cmd, s->set.sha[SCRIPT_RENEW],
                    wire_renew_size(&w), LEASE_MS, 0, NULL);
    wire_renew_lock(&s->cmd, &w);
    push(s, SCRIPT_RENEW, 1);
}

static void st_query(struct srun *s, long i)
{
    struct wire_lock w = who(s, 0, NAME, &wire_kind_mutex);
    (void)i;
    wire_query(&s->cmd, s->set.sha[SCRIPT_QUERY], WIRE_QUERY_TTL, &w);
    push(s, SCRIPT_QUERY, 1);
}

static void st_multi(struct srun *s, long i, int measure_acquire)
{
    struct wire_lock w[2] = {who(s, 0, NAME, &wire_kind_mutex),
                             who(s, 0, NAME2, &wire_kind_mutex)};
    (void)i;
    wire_multi_acquire(&s->cmd, s->set.sha[SCRIPT_MULTI_ACQUIRE], w, 2,
                       LEASE_MS, ++s->rid);
    push(s, SCRIPT_MULTI_ACQUIRE, measure_acquire);
    wire_multi_release(&s->cmd, s->set.sha[SCRIPT_MULTI_RELEASE], w, 2,
                       ++s->rid, LEASE_MS, "publish");
    push(s, SCRIPT_MULTI_RELEASE, !measure_acquire);
}

static void st_macq(struct srun *s, long i) { st_multi(s, i, 1); }
static void st_mrel(struct srun *s, long i) { st_multi(s, i, 0); }

/* Owner 0 joins the fair queue, and leaves it again. */
static void st_fjoin(struct srun *s, long i)
{
    (void)i;
    facq(s, 0, WIRE_FAIR_WAIT, 1);
    fleave(s, 0, 0);
}

static void st_fretry(struct srun *s, long i) { (void)i; facq(s, 0, WIRE_FAIR_RETRY, 1); }
static void st_ftry(struct srun *s, long i) { (void)i; facq(s, 0, WIRE_FAIR_TRY, 1); }

/* The holder hands the lock to the head of the queue and queues again:
 * holders come round in queue order. */
static void st_fhand(struct srun *s, long i)
{
    long h = i % (s->q + 1);
    frel(s, h, 1);
    facq(s, h, WIRE_FAIR_WAIT, 0);
}

/* The floor rows (floors[]). A hand-off's: the holder of the rotation
 * calls it in turn. */
static void st_floor_none(struct srun *s, long i)
{
    frel_as(s, i % (s->q + 1), s->floor_sha[FLOOR_NONE], 1);
}

static void st_floor_take(struct srun *s, long i)
{
    (void)i;
    acq_as(s, 0, ENTRY_MS, s->floor_sha[FLOOR_TAKE], 1);
    rel(s, 0, 0);
}

static void st_floor_release(struct srun *s, long i)
{
    (void)i;
    acq(s, 0, 0, 0);
    rel_as(s, 0, s->floor_sha[FLOOR_RELEASE], 1, 0);
}

static void st_floor_handoff(struct srun *s, long i)
{
    frel_as(s, i % (s->q + 1), s->floor_sha[FLOOR_HANDOFF], 1);
}

static void st_fleave(struct srun *s, long i)
{
    (void)i;
    fleave(s, 0, 1);
    facq(s, 0, WIRE_FAIR_WAIT, 0);
}

/* Owner 0 takes the free fair lock, and its attempt is undone. */
static void st_fundo(struct srun *s, long i)
{
    char l[24];
    struct wire_lock w = who(s, 0, NAME, &wire_kind_mutex);
    struct wire_fair f = {listener(0, l, sizeof l), ENTRY_MS, 1, "publish",
                          1000};
    (void)i;
    facq(s, 0, WIRE_FAIR_WAIT, 0);
    uint64_t attempt = s->rid;
    wire_fair_undo(&s->cmd, s->set.sha[SCRIPT_FAIR_UNDO], &w, attempt,
                   ++s->rid, 1, &f);
    push(s, SCRIPT_FAIR_UNDO, 1);
}

/* A side takes its hold, and that attempt is undone. */
static void st_rwundo(struct srun *s, int write)
{
    racq(s, 0, write, 0);
    rundo(s, 0, write, s->rid, 1);
}

static void st_rundo(struct srun *s, long i) { (void)i; st_rwundo(s, 0); }
static void st_wundo(struct srun *s, long i) { (void)i; st_rwundo(s, 1); }

static void st_racq(struct srun *s, long i) { (void)i; racq(s, 0, 0, 1); rrel(s, 0, 0, 0); }
static void st_rrel(struct srun *s, long i) { (void)i; racq(s, 0, 0, 0); rrel(s, 0, 0, 1); }
static void st_wbusy(struct srun *s, long i) { (void)i; racq(s, 0, 1, 1); }
static void st_wacq(struct srun *s, long i) { (void)i; racq(s, 0, 1, 1); rrel(s, 0, 1, 0); }
static void st_wrel(struct srun *s, long i) { (void)i; racq(s, 0, 1, 0); rrel(s, 0, 1, 1); }
static void st_sacq(struct srun *s, long i) { (void)i; sacq(s, 0, 1); srel(s, 0, 0); }
static void st_srel(struct srun *s, long i) { (void)i; sacq(s, 0, 0); srel(s, 0, 1); }
static void st_pacq(struct srun *s, long i) { (void)i; pacq(s, 0, 1); prel(s, 0, 0); }
static void st_prel(struct srun *s, long i) { (void)i; pacq(s, 0, 0); prel(s, 0, 1); }

#define ARR REDIS_REPLY_ARRAY
#define INT REDIS_REPLY_INTEGER
#define STR REDIS_REPLY_STRING

static const struct scase cases[] = {
    {"acquire", "free lock, taken", 0, ARR, 2, prep_none, st_take},
    {"acquire", "free lock, a waiter takes it", 0, ARR, 2, prep_none,
     st_take_wait},
    {"acquire", "held by another, waits", 0, INT, 0, prep_held, st_busy},
    {"acquire", "held, fair queue: joins", 1, INT, 0, prep_fair_queue,
     st_busy},
    {"release", "last hold", 0, ARR, 2, prep_none, st_release},
    {"release", "last hold, quiet", 0, ARR, 2, prep_none, st_quiet},
    {"undo", "the attempt's hold", 0, ARR, 2, prep_none, st_undo},
    {"renew", "one lock", 0, STR, 0, prep_held, st_renew},
    {"query", "ttl", 0, INT, 0, prep_held, st_query},
    {"multi_acquire", "2 free locks", 0, ARR, 1, prep_none, st_macq},
    {"multi_release", "2 locks held", 0, INT, 0, prep_none, st_mrel},
    {"fair_acquire", "held: joins the queue", 1, INT, 0, prep_fair_queue,
     st_fjoin},
    {"fair_acquire", "held: retry, queued last", 1, INT, 0, prep_fair_self,
     st_fretry},
    {"fair_acquire", "held: try once", 1, INT, 0, prep_fair_queue, st_ftry},
    {"fair_release", "hand-off to the head", 1, ARR, 3, prep_fair_rotation,
     st_fhand},
    {"floor", "no command", 0, ARR, 3, prep_fair_rotation, st_floor_none},
    {"floor", "a waiter's take: 4 commands", 0, ARR, 2, prep_none,
     st_floor_take},
    {"floor", "a release: 3 commands", 0, ARR, 2, prep_none,
     st_floor_release},
    {"floor", "a hand-off: 7 commands", 1, ARR, 3, prep_fair_rotation,
     st_floor_handoff},
    {"fair_leave", "queued last", 1, INT, 0, prep_fair_self, st_fleave},
    {"fair_undo", "the attempt's hold", 0, ARR, 2, prep_none, st_fundo},
    {"read_acquire", "N readers hold", 1, ARR, 2, prep_readers, st_racq},
    {"read_release", "N other readers hold", 1, ARR, 2, prep_readers,
     st_rrel},
    {"read_undo", "N other readers hold", 1, ARR, 2, prep_readers,
     st_rundo},
    {"write_acquire", "N readers hold: waits", 1, INT, 0, prep_readers,
     st_wbusy},
    {"write_acquire", "free", 0, ARR, 2, prep_none, st_wacq},
    {"write_release", "last hold", 0, ARR, 2, prep_none, st_wrel},
    {"write_undo", "the attempt's hold", 0, ARR, 2, prep_none, st_wundo},
    {"sem_acquire", "1 permit", 0, ARR, 2, prep_sem, st_sacq},
    {"sem_release", "1 permit", 0, ARR, 2, prep_sem, st_srel},
    {"permit_acquire", "N permits taken", 1, ARR, 2, prep_permits, st_pacq},
    {"permit_release", "N permits taken", 1, ARR, 2, prep_permits, st_prel},
};

#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* ---- running --------------------------------------------------------- */

/* One chunk of case c from step *n on: CONFIG RESETSTAT, up to CHUNK
 * steps (CHUNK_NS at most, BATCH steps at least), its server time per
 * measured call (us) into *us. 0, or -1 (a reply, the connection, the
 * count). */
static int chunk_run(struct srun *s, const struct scase *c, long *n,
                     double *us)
{
    long long calls = 0, usec = 0;
    redisReply *r = bench_cmd(s->rc, "CONFIG", "RESETSTAT", NULL);
    if (r)
        freeReplyObject(r);
    int64_t until = now_ns() + CHUNK_NS;
    long done = 0;
    while (done < CHUNK && (done % BATCH != 0 || done == 0 ||
                            now_ns() < until)) {
        c->step(s, (*n)++);
        if (++done % s->batch == 0 && drain(s) != 0)
            return -1;
    }
    if (drain(s) != 0 || bench_cmdstat(s->rc, "evalsha", &calls, &usec) != 0)
        return -1;
    *us = calls > 0 ? (double)usec / (double)calls : 0;
    return s->bad || s->setup_bad || calls != done ? -1 : 0;
}

/* Run case c at queue size q: the least server time per measured call
 * (us) of CHUNKS chunks into *us, so that a chunk in which Redis shared
 * the CPU with others does not count. 0, or -1 (the case failed). */
static int case_run(struct bench *b, struct srun *s, const struct scase *c,
                    int q, double *us)
{
    s->q = q;
    s->bad = s->setup_bad = 0;
    s->want = c->want;
    s->elems = c->elems;
    if (bench_reset(b, s->rc, NULL) != 0 || subscribe(s, q + 2) != 0)
        return -1;
    c->prep(s);
    if (drain(s) != 0 || s->setup_bad)
        return -1;
    long n = 0;
    for (int k = 0; k < CHUNKS; k++) {
        double one;
        if (chunk_run(s, c, &n, &one) != 0)
            return -1;
        if (k == 0 || one < *us)
            *us = one;
    }
    return 0;
}

/* A fresh subscriber connection: the last case's channels and messages
 * go with the old one. 0 or -1. */
static int sub_renew(struct bench *b, struct srun *s)
{
    if (s->sub)
        redisFree(s->sub);
    s->sub = bench_connect(b, 10000);
    return s->sub ? 0 : -1;
}

/* One row: case c at every queue size (or once). The cases that failed. */
static int case_row(struct bench *b, struct srun *s, const struct scase *c,
                    struct table *t)
{
    char cell[NQUEUES][24];
    int failed = 0;
    for (int k = 0; k < NQUEUES; k++) {
        double us = 0;
        snprintf(cell[k], sizeof cell[k], "-");
        if (!c->queued && k > 0)
            continue;
        int q = c->queued ? queues[k] : 0;
        int rc = sub_renew(b, s) == 0 ? case_run(b, s, c, q, &us) : -1;
        failed += rc != 0;
        if (rc != 0)
            fprintf(stderr, "scripts: %s (%s) at %d failed: %ld replies not "
                    "as expected, %ld set-up errors\n", c->script, c->meets,
                    q, s->bad, s->setup_bad);
        if (rc == 0)
            snprintf(cell[k], sizeof cell[k], "%.1f", us);
        else
            snprintf(cell[k], sizeof cell[k], "FAILED");
        json_obj(b->json, NULL);
        json_str(b->json, "script", c->script);
        json_str(b->json, "meets", c->meets);
        json_int(b->json, "queue", q);
        json_num(b->json, "usec_per_call", rc == 0 ? us : -1);
        json_end(b->json);
    }
    table_row(t, c->script, c->meets, cell[0], cell[1], cell[2], cell[3]);
    return failed;
}

int sc_scripts(struct bench *b)
{
    struct srun s;
    char inline_cmd[1024];
    memset(&s, 0, sizeof s);
    resp_init(&s.cmd, inline_cmd, sizeof inline_cmd);
    script_set_init(&s.set);
    s.rc = bench_connect(b, 10000);
    if (!s.rc || bench_uuid(s.id) != 0) {
        if (s.rc)
            redisFree(s.rc);
        return 1;
    }
    s.batch = b->o.serial ? 1 : BATCH;
    int failed = 0;
    for (int i = 0; i < NFLOORS && !failed; i++)
        failed = bench_script_load(s.rc, floors[i], strlen(floors[i]),
                                   s.floor_sha[i]) != 0;
    for (int i = 0; i < SCRIPT_COUNT && !failed; i++) {
        size_t len;
        const char *body = script_body((enum script_id)i, &len);
        char sha[41];
        failed = bench_script_load(s.rc, body, len, sha) != 0 ||
                 strcmp(sha, s.set.sha[i]) != 0;
    }
    printf("scripts: Redis us per EVALSHA (INFO commandstats), the least of "
           "%d chunks of %d calls (at least %d, %.0f ms at most), %s, by "
           "queue size (-: the case has no queue)\n", CHUNKS, CHUNK, BATCH,
           (double)CHUNK_NS / 1e6,
           b->o.serial ? "each call after the last one's reply"
                       : "pipelined");
    struct table t;
    table_init(&t, "script", "meets", "1", "10", "100", "1000", NULL);
    json_arr(b->json, "cases");
    for (size_t i = 0; i < NCASES && !failed; i++)
        failed += case_row(b, &s, &cases[i], &t);
    json_end(b->json);
    table_print(&t, stdout);
    printf("result: %s\n", failed ? "FAIL" : "ok");
    if (s.sub)
        redisFree(s.sub);
    redisFree(s.rc);
    resp_free(&s.cmd);
    return failed ? 1 : 0;
}
