/* SPDX-License-Identifier: BSD-3-Clause */
/* uncontended.h -- the K-in-flight pair loop of "uncontended", shared with
 * "redlock".
 *
 * A run is one loop with one hilock client and U_KMAX request slots, each
 * with its own key and handle. A phase starts k slots; each loops over
 * lock + release pairs on its key, so nothing ever waits, until the phase's
 * time is up and the last slot finished. "uncontended" compares hilock with
 * the raw scripts (the ceiling mode) on one server; "redlock" runs the hilock
 * and ceiling modes of one run per topology (1, 3 and 5 masters): there
 * the ceiling sends the scripts to every master at once and, as hilock,
 * goes on at the first majority. */
#ifndef HILOCK_BENCH_UNCONTENDED_H
#define HILOCK_BENCH_UNCONTENDED_H

#include "bench.h"

#define U_KMAX 1024
#define U_ROUNDS_MAX 64

/* U_SETNX: the textbook lock, SET key token NX PX lease, then a
 * compare-and-delete script (GET == token ? DEL) by EVALSHA: what a lock
 * without holds, watchdog or waiting costs the server. */
enum umode { U_HILOCK = 0, U_CEIL = 1, U_SETNX = 2 };
#define U_MODES 3

/* Figures of one cell (a mode or a topology at one K) over its phases. */
struct ucell {
    uint64_t pairs, errors;
    double secs;
    int64_t cpu_ns; /* this process's CPU time over the phases */
    /* Server time (INFO commandstats usec) of the phases: EVALSHA, and for
     * U_SETNX the SETs too; -1 when it could not be read. */
    int64_t redis_usec;
    double round_rate[U_ROUNDS_MAX];
    int rounds;
    struct samples lat; /* acquire call -> callback */
    struct rate rate;
};

struct hilock_options;
struct urun;

/* A run: a loop, a hilock client made from *ho (copied by the client),
 * U_KMAX handles on the keys BENCH_PREFIX "u:<tag>:<slot>". With ceiling,
 * also the ceiling mode on the nodes of *ho (its masters, or its endpoint):
 * the bench's keys are reset there, hilock's scripts and the
 * compare-and-delete script loaded, a raw connection and a blocking one
 * (for INFO commandstats around each phase) opened to each, and the
 * U_SETNX mode is possible too. Every mode is warmed up (connections up,
 * scripts cached). NULL on failure, with a message. */
struct urun *urun_new(struct bench *b, const struct hilock_options *ho,
                      const char *tag, int ceiling, uint32_t wait_ms);
void urun_free(struct urun *u);

/* One phase: k slots (<= U_KMAX) in mode for secs; its pairs, errors, time,
 * CPU, rate of the round and acquire latencies are added to c. what labels
 * the progress line. 0, or -1 when the phase did not drain in time. Never
 * inlined: callgrind's --toggle-collect names it (README.md). */
__attribute__((noinline)) int urun_phase(struct urun *u, enum umode mode,
                                         int k, double secs, struct ucell *c,
                                         const char *what);

/* Start the cell's rate series at t0_ns (100 ms buckets). */
void ucell_init(struct ucell *c, int64_t t0_ns);
void ucell_free(struct ucell *c);
/* Pairs/s over all its phases; client CPU per pair in us. */
double ucell_rate(const struct ucell *c);
double ucell_cpu_us(const struct ucell *c);
/* Server time per pair in us, or -1 when unknown. */
double ucell_redis_us(const struct ucell *c);
/* The cell's figures as the JSON object key. Sorts the latencies. */
void ucell_json(struct json *j, const char *key, struct ucell *c);

/* "uncontended --cluster N" and "--wait-replicas N" (sc_topology.c): the
 * hilock mode on two setups in one run. Returns the exit status. */
int uncontended_topology(struct bench *b);

#endif
