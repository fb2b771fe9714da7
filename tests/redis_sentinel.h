/* SPDX-License-Identifier: BSD-3-Clause */
/* redis_sentinel.h -- a throwaway master, its replicas and the Sentinels
 * that watch them, for tests, demos and bench.
 *
 * Every process is an rs_server (see redis_server.h): its own port and
 * directory, killed with the process that started it. Each Sentinel has its
 * own configuration file in its own directory, since Sentinels rewrite it.
 * Everything is addressed as 127.0.0.1.
 *
 * Data nodes are numbered in the order they were started, the master
 * first; a node keeps its number when its role changes, so ask rt_master()
 * which one is the master now.
 *
 * The Sentinels run with shorter periods than the defaults (SENTINEL DEBUG:
 * hellos every 200 ms, INFO every 500 ms) and down-after-milliseconds 1000,
 * so that they find each other, fail over and reconfigure a returning old
 * master within seconds rather than tens of seconds. Waits are bounded
 * (RT_WAIT_MS; three times that before 7.0, which has no SENTINEL DEBUG)
 * and poll every few milliseconds.
 *
 * Test support, not library code: blocking hiredis, nothing of hilock; on
 * failure a line on stderr and NULL or -1. Not thread-safe.
 */
#ifndef HILOCK_TESTS_REDIS_SENTINEL_H
#define HILOCK_TESTS_REDIS_SENTINEL_H

#include "redis_server.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The bound of every wait below, in milliseconds. */
#define RT_WAIT_MS 20000
/* down-after-milliseconds and failover-timeout of the monitored master. */
#define RT_DOWN_AFTER_MS 1000
#define RT_FAILOVER_TIMEOUT_MS 3000

struct rt_sentinel;

/* Start a master, `replicas` replicas of it and `sentinels` (>= 1)
 * Sentinels monitoring it as master_name (quorum 2, or 1 with a single
 * Sentinel; parallel-syncs 1). Returns when every replica's link is up and
 * every Sentinel names the master, knows each replica (with its link up)
 * and every other Sentinel. NULL on failure, with everything stopped. */
struct rt_sentinel *rt_start(int replicas, int sentinels,
                             const char *master_name);
/* TLS for what rt_start starts from now on (NULL: none): every data node
 * and Sentinel speaks TLS only (see struct rs_tls; rs_port gives the TLS
 * port), replication and the Sentinels' links too. Copied. */
void rt_set_tls(const struct rs_tls *tls);
/* Stop every process and free; NULL is ignored. */
void rt_stop(struct rt_sentinel *t);

/* The name the master is monitored as. */
const char *rt_master_name(const struct rt_sentinel *t);
/* Sentinels: count, port of Sentinel i, its server (for rs_* calls; one
 * restarted with rs_restart() runs with the default periods). */
int rt_sentinel_count(const struct rt_sentinel *t);
int rt_sentinel_port(const struct rt_sentinel *t, int i);
struct rs_server *rt_sentinel_server(struct rt_sentinel *t, int i);
/* Data nodes (the master first at start): count, port, server. */
int rt_server_count(const struct rt_sentinel *t);
int rt_server_port(const struct rt_sentinel *t, int i);
struct rs_server *rt_server(struct rt_sentinel *t, int i);

/* The data node that every live Sentinel names as the master
 * (SENTINEL GET-MASTER-ADDR-BY-NAME) and that answers ROLE as a master;
 * -1 when there is none (they disagree, or it is down). No waiting. */
int rt_master(struct rt_sentinel *t);
/* Wait until every live data node other than rt_master() replicates it
 * with its link up, and every live Sentinel lists each of them as a
 * replica of it with its link up: e.g. until the Sentinels have turned an
 * old master into a replica after rt_failover(). 0 or -1. */
int rt_settle(struct rt_sentinel *t);
/* SENTINEL FAILOVER on a live Sentinel (again while it has no replica to
 * promote yet); returns the new master's index once every live Sentinel
 * names it and it answers ROLE as a master, or -1. The old master is made
 * a replica later; rt_settle() waits for that. */
int rt_failover(struct rt_sentinel *t);
/* kill -9 the current master (it stays down); returns the index of the
 * replica the Sentinels promoted, once every live Sentinel names it and it
 * answers ROLE as a master, or -1. */
int rt_kill_master(struct rt_sentinel *t);

#ifdef __cplusplus
}
#endif

#endif /* HILOCK_TESTS_REDIS_SENTINEL_H */
