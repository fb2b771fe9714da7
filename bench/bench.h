/* SPDX-License-Identifier: BSD-3-Clause */
/* bench.h -- what the files of hilock-bench share.
 *
 * hilock-bench is one program with one file per scenario (sc_*.c) and one
 * file per shared piece: samples and percentiles (stats.c), aligned tables
 * (table.c), the JSON writer (json.c), gnuplot output (plot.c), the progress
 * line (progress.c), forked worker processes (fanout.c), the redis-server and
 * the bench's own Redis connections (server.c), and process figures such as
 * RSS and CPU time (sysstat.c). Scenario code sees only this header.
 *
 * This is a measuring tool, not library code: it prints, it exits, and a
 * scenario keeps its state in its own structs passed around explicitly. */
#ifndef HILOCK_BENCH_H
#define HILOCK_BENCH_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

struct event_base;
struct rs_server;

/* Every bench key and lock name starts with this, so that a run against a
 * server named with --port can clean up after itself (SCAN *hilock-bench:*). */
#define BENCH_PREFIX "hilock-bench:"

/* ---- options and the run context -------------------------------------- */

/* Option bits: which options a scenario accepts. */
enum {
    OPT_SECONDS = 1u << 0,
    OPT_INFLIGHT = 1u << 1,
    OPT_ROUNDS = 1u << 2,
    OPT_PROCS = 1u << 3,
    OPT_WAITERS = 1u << 4,
    OPT_NAMES = 1u << 5,
    OPT_LOCKS = 1u << 6,
    OPT_LEASE = 1u << 7,
    OPT_BUYERS = 1u << 8,
    OPT_PURCHASES = 1u << 9,
    OPT_STOCK = 1u << 10,
    OPT_NO_LOCK = 1u << 11,
    OPT_WORST = 1u << 12,
    OPT_WAIT = 1u << 13,
    OPT_REMOTE = 1u << 14, /* --host/--port: a server the bench did not start */
    OPT_CSECONDS = 1u << 15,
    OPT_CLUSTER = 1u << 16,       /* uncontended: also on a cluster */
    OPT_WAIT_REPLICAS = 1u << 17, /* uncontended: WAIT off vs on */
    OPT_SENTINEL = 1u << 18,      /* faults: failovers under Sentinel */
    OPT_FAIR = 1u << 19,          /* contended: clients in fair mode */
    OPT_HOLD = 1u << 20,          /* readmostly, semaphore: section length */
    OPT_EVERY = 1u << 21,         /* readmostly: the writer's pause;
                                     torture: the gap between faults */
    OPT_PERMITS = 1u << 22,       /* semaphore: its permits */
    OPT_COUNTING = 1u << 23,      /* semaphore: counting, not expiring */
    OPT_TLS = 1u << 24,           /* uncontended: plain vs over TLS */
    OPT_REDLOCK = 1u << 25,       /* faults: one of 3 masters fails */
    OPT_MASTER_OUT = 1u << 26,    /* redlock: one master out, contended */
    OPT_MULTI = 1u << 27,         /* redlock --master-out: MultiLocks */
    OPT_ACQUISITIONS = 1u << 28,  /* torture: stop at this many */
    OPT_NO_FENCING = 1u << 29,    /* contended: no fencing tokens */
    OPT_SERIAL = 1u << 30         /* scripts: one call per round trip */
};

/* Command-line options; 0 or NULL means "the scenario's default". */
struct bench_opts {
    const char *host;
    int port;
    const char *json_path;
    const char *plot_dir;
    int no_progress;
    double seconds;
    double contended_seconds; /* redlock: its contended part */
    int inflight;
    int rounds;
    int procs;
    int waiters;
    int names;
    long locks;
    uint32_t lease_ms;
    uint32_t wait_ms;
    int buyers;
    int purchases;
    int stock;
    int no_lock;
    int worst;
    int cluster;       /* uncontended, faults: masters of the cluster, 0:
                          none */
    int wait_replicas; /* uncontended: replicas to WAIT for, 0: no WAIT */
    int sentinel;      /* faults: the Sentinel runs instead */
    int redlock;       /* faults: the Redlock runs instead */
    int fair;          /* contended: hilock_options.fair = 1 */
    int no_fencing;    /* contended: hilock_options.fencing = 0 */
    int serial;        /* scripts: each call alone, not pipelined */
    double hold_ms;    /* readmostly, semaphore: length of a section */
    uint32_t every_ms; /* readmostly: the writer's pause between sections */
    int permits;       /* semaphore: permits of the semaphore */
    int counting;      /* semaphore: a counting one (RSemaphore) */
    int tls;           /* uncontended: plain vs TLS */
    int master_out;    /* redlock: 1 refusing, 2 stopped (SIGSTOP) */
    int multi;         /* redlock --master-out: waiters take MultiLocks */
    long acquisitions; /* torture: the target; 0: none */
    unsigned given; /* OPT_* bits of the options on the command line */
};

struct json;

/* The progress line: shown only on a terminal, rewritten in place. */
struct progress {
    int enabled;
    int shown;       /* a line is on screen */
    int64_t last_ns; /* last update, for rate limiting */
    int64_t start_ns;
};

struct bench {
    struct bench_opts o;
    const char *scenario;
    struct rs_server *srv; /* the server we started; NULL with --port */
    const char *host;      /* where every connection goes */
    int port;
    struct json *json;     /* NULL without --json */
    struct progress progress;
    int plots_written;
    int plots_failed;
    int plots_skipped;     /* --plot given but gnuplot missing */
};

/* A scenario: run returns the exit status (0 ok, 1 a check failed or the run
 * could not be done). */
struct scenario {
    const char *name;
    const char *summary;
    unsigned opts; /* OPT_* accepted besides the common ones */
    int (*run)(struct bench *b);
    const char *help; /* its options and defaults, one per line */
};

int sc_uncontended(struct bench *b);
int sc_contended(struct bench *b);
int sc_held(struct bench *b);
int sc_waiters(struct bench *b);
int sc_oversell(struct bench *b);
int sc_faults(struct bench *b);
int sc_redlock(struct bench *b);
int sc_readmostly(struct bench *b);
int sc_semaphore(struct bench *b);
int sc_torture(struct bench *b);
int sc_guarded(struct bench *b);
int sc_scripts(struct bench *b);

/* ---- time and process figures (sysstat.c) ----------------------------- */

/* CLOCK_MONOTONIC in ns: machine-wide, so stamps of different processes
 * compare. */
int64_t now_ns(void);
/* This process's resident set (VmRSS) in bytes, or -1. */
int64_t rss_bytes(void);
/* Bytes malloc has handed out and not got back (mallinfo2: arena in use plus
 * mmapped blocks), or -1 where unavailable. */
int64_t heap_bytes(void);
/* User + system CPU time of this process so far, in ns. */
int64_t cpu_ns(void);
/* Sleep ms milliseconds (restarting after signals). */
void sleep_ms(int ms);

/* ---- samples and rates (stats.c) -------------------------------------- */

/* A growable vector of int64 samples (latencies in ns). */
struct samples {
    int64_t *v;
    size_t n, cap;
    int sorted;
};

/* Append x; -1 when out of memory (the sample is dropped). */
int samples_add(struct samples *s, int64_t x);
/* Make room for cap samples up front and touch the memory, so that a memory
 * measurement taken later does not see it grow. 0 or -1. */
int samples_reserve(struct samples *s, size_t cap);
/* Append every sample of src. 0 or -1. */
int samples_append(struct samples *dst, const struct samples *src);
void samples_free(struct samples *s);
/* The p-th percentile (nearest rank, 0 < p <= 100); 0 when empty. Sorts. */
int64_t samples_pct(struct samples *s, double p);
int64_t samples_max(struct samples *s);
double samples_mean(const struct samples *s);

/* Events per time bucket since t0_ns: throughput over time. */
struct rate {
    int64_t t0_ns;
    int64_t bucket_ns;
    uint32_t *count;
    size_t n, cap;
};

void rate_init(struct rate *r, int64_t t0_ns, int64_t bucket_ns);
/* Count one event at t_ns (events before t0 go to the first bucket). */
void rate_hit(struct rate *r, int64_t t_ns);
void rate_free(struct rate *r);

/* ns as a short human string ("1.23 us", "456 us", "7.8 ms") in buf. */
const char *fmt_ns(int64_t ns, char *buf, size_t len);
/* A count with thousands separators ("1 234 567"). */
const char *fmt_count(double v, char *buf, size_t len);

/* ---- tables (table.c) ------------------------------------------------- */

#define TABLE_COLS 12

/* Rows of strings printed with aligned columns. Column 0 is left-aligned,
 * the others right-aligned. */
struct table {
    int ncols;
    char *head[TABLE_COLS];
    char **cells; /* nrows * ncols */
    size_t nrows, cap;
};

/* Start a table with ncols headers (NULL-terminated list). */
void table_init(struct table *t, const char *head, ...);
/* Add a row: ncols printf-formatted cells are given as already formatted
 * strings (NULL for empty). */
void table_row(struct table *t, ...);
/* Print with two spaces of indent and free the rows. */
void table_print(struct table *t, FILE *f);

/* One line of a figure table: figure, value, target, verdict. A target of
 * NULL prints no verdict. met: 1 ok, 0 missed. */
void figure_row(struct table *t, const char *figure, const char *value,
                const char *target, int met);

/* ---- JSON (json.c) ---------------------------------------------------- */

/* A streaming JSON writer. Every function accepts j == NULL and then does
 * nothing, so scenarios call them unconditionally. key is NULL inside
 * arrays. */
struct json *json_open(const char *path);
/* Finish and close; 0, or -1 when a write failed. */
int json_close(struct json *j);
void json_obj(struct json *j, const char *key);
void json_arr(struct json *j, const char *key);
void json_end(struct json *j);
void json_int(struct json *j, const char *key, int64_t v);
void json_num(struct json *j, const char *key, double v);
void json_str(struct json *j, const char *key, const char *v);
void json_bool(struct json *j, const char *key, int v);
/* A latency distribution: n, mean, p50, p90, p99, p99.9, max (ns) and the
 * quantiles at every 0.1 % ("cdf": [[fraction, ns], ...]). Sorts s. */
void json_latency(struct json *j, const char *key, struct samples *s);
/* A rate series: bucket width and events per second of every bucket. */
void json_rate(struct json *j, const char *key, const struct rate *r);

/* ---- plots (plot.c) --------------------------------------------------- */

/* Nonzero when a gnuplot program is on PATH. */
int plot_available(void);

/* A vertical marker on a time plot (a fault injected). */
struct plot_mark {
    double t_s;
    const char *label;
};

/* With --plot DIR and gnuplot present, write DIR/<name>.png showing the
 * CDFs of n distributions (log time axis), with their data and script
 * beside it. Counts written/failed/skipped in b. Sorts the samples. */
void plot_cdf(struct bench *b, const char *name, const char *title,
              struct samples **d, const char *const *titles, int n);
/* The same for n rate series over time (events/s against seconds since the
 * first series' t0), with optional markers. gaps: leave empty buckets out
 * (series that run in turns) instead of drawing them as zero (stalls). */
void plot_rate(struct bench *b, const char *name, const char *title,
               const char *ylabel, const struct rate *const *r,
               const char *const *titles, int n,
               const struct plot_mark *marks, int nmarks, int gaps);

/* ---- progress line (progress.c) --------------------------------------- */

/* Enable the line when stdout is a terminal, --no-progress was not given
 * and the run is planned to take more than a few seconds. */
void progress_begin(struct bench *b, double planned_s);
/* Rewrite the line (at most every 200 ms; printf-style text). */
void progress_show(struct bench *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Erase the line. */
void progress_end(struct bench *b);

/* ---- worker processes (fanout.c) -------------------------------------- */

/* A small message between the parent and a worker over its socket. */
struct fan_msg {
    int32_t type;
    int32_t index;
    int64_t v[8];
};

struct fan_child {
    pid_t pid;   /* 0 once reaped */
    int fd;      /* socket to the worker */
    FILE *out;   /* bulk results the worker wrote (a temporary file) */
    int status;  /* exit status once reaped */
};

struct fanout {
    int n;
    struct fan_child *c;
    int failed; /* workers reaped with a failure or killed */
};

/* Body of worker index: talk to the parent on fd, write bulk results to out;
 * the return value is its exit status. It runs in a forked child, which
 * leaves with _exit() (never exit(): that would run the parent's atexit
 * handlers, which stop the redis-server). */
typedef int fan_fn(int index, int fd, FILE *out, void *arg);

/* Fork n workers running fn. The workers die with the parent
 * (PR_SET_PDEATHSIG). 0, or -1 (the started ones are killed and reaped). */
int fan_spawn(struct fanout *f, int n, fan_fn *fn, void *arg);
/* Send or receive one message. fan_recv waits at most timeout_ms (< 0:
 * forever): 1 received, 0 timed out, -1 EOF or error. */
int fan_send(int fd, int type, const int64_t *v, int nv);
int fan_recv(int fd, struct fan_msg *m, int timeout_ms);
/* Receive one message of type from every worker within timeout_ms, into
 * msgs[index]. 0, or -1 (timeout, EOF, other type: message on stderr). */
int fan_gather(struct fanout *f, int type, struct fan_msg *msgs,
               int timeout_ms);
/* Send type to every worker. 0 or -1. */
int fan_broadcast(struct fanout *f, int type);
/* The start of a run: each worker says FAN_READY once set up, and the
 * parent answers FAN_GO to all of them at once. */
enum { FAN_READY = 1, FAN_GO };
/* Worker: say FAN_READY, then, when ok (set up), wait at most timeout_ms
 * for FAN_GO. 0 when it came. */
int fan_ready(int fd, int ok, int timeout_ms);
/* Parent: FAN_READY from every worker within timeout_ms (fan_gather); when
 * one fails, the workers are reaped and f freed. 0 or -1. */
int fan_all_ready(struct fanout *f, int timeout_ms);
/* Reap the workers that have exited, without waiting; returns how many
 * still run. */
int fan_poll(struct fanout *f);
/* Reap every worker; kill (by pid) those still running at deadline_ns.
 * Returns how many did not exit 0. */
int fan_reap(struct fanout *f, int64_t deadline_ns);
/* Close sockets and files (reap first). */
void fan_free(struct fanout *f);

/* In a worker: a fixed-size block written to out, read back by the parent.
 * 0 or -1. */
int fan_write(FILE *out, const void *p, size_t len);
int fan_read(FILE *in, void *p, size_t len);

/* ---- the redis-server and the bench's connections (server.c) ---------- */

/* Start our own redis-server (extra args, NULL-terminated, may be NULL) on
 * a free loopback port, or check the one named by --host/--port. 0 or -1
 * with a message. */
int bench_server_up(struct bench *b, const char *const *args);
void bench_server_down(struct bench *b);
/* A blocking connection with timeout_ms for connect and replies, or NULL
 * with a message. */
redisContext *bench_connect(const struct bench *b, int timeout_ms);
/* The same to another of the bench's servers. */
redisContext *bench_connect_at(const char *host, int port, int timeout_ms);
/* Run a command given as NUL-terminated strings (NULL-terminated list). The
 * reply, or NULL with a message. */
redisReply *bench_cmd(redisContext *rc, const char *cmd, ...);
redisReply *bench_cmdv(redisContext *rc, int argc, const char **argv,
                       const size_t *lens);
/* The same, the reply as an integer (strings parsed); LLONG_MIN on error. */
long long bench_int(redisContext *rc, const char *cmd, ...);
/* Calls and total usec of a command in INFO commandstats ("evalsha").
 * 0 (calls 0 when absent), or -1. */
int bench_cmdstat(redisContext *rc, const char *name, long long *calls,
                  long long *usec);
/* Delete the bench's keys: FLUSHALL on our own server, else SCAN for
 * *hilock-bench:* (and extra, a NULL-terminated list of exact keys) and
 * UNLINK them. 0 or -1. */
int bench_reset(struct bench *b, redisContext *rc, const char *const *extra);
/* Load a Lua script; its SHA1 (41 bytes) into sha. 0 or -1. */
int bench_script_load(redisContext *rc, const char *body, size_t len,
                      char *sha);

/* A raw hiredis async connection for critical sections, which reconnects by
 * itself (50 ms apart) after the server went away. */
struct kv;

struct kv *kv_new(struct event_base *base, const char *host, int port);
/* Send a command; fn gets the reply, or NULL when the connection died.
 * Returns 0, or -1 when not connected (fn is then never called). */
int kv_cmd(struct kv *kv, redisCallbackFn *fn, void *arg, int argc,
           const char **argv, const size_t *lens);
/* Nonzero while connected. */
int kv_up(const struct kv *kv);
/* Run base's loop until kv is connected, at most 5 s: 0, or -1 when it
 * is not. */
int kv_wait_up(struct event_base *base, const struct kv *kv);
/* Free; pending callbacks get NULL replies. NULL is ignored. */
void kv_free(struct kv *kv);

/* A random owner id formatted as a UUID (37 bytes with the NUL). 0 or -1. */
int bench_uuid(char *buf);
/* n random hex digits (n <= 128) and a NUL into buf. 0 or -1. */
int bench_hex(char *buf, size_t n);

#endif
