/* SPDX-License-Identifier: BSD-3-Clause */
/* redis_cluster.h -- a throwaway Redis Cluster for tests, demos and bench.
 *
 * Every node is an rs_server (see redis_server.h): its own port, cluster bus
 * port and directory, killed with the process that started it. The cluster
 * is created by `redis-cli --cluster create`, as an operator would, and the
 * helpers below change it the way redis-cli does (resharding in steps) or
 * the way failures do (manual failover, kill -9 of a master).
 *
 * Nodes are numbered in the order they were started: the masters first,
 * then the replicas. A node keeps its number when its role changes, so
 * "node 0" may be a replica after a failover; ask rc_masters().
 *
 * Waits are bounded (RC_WAIT_MS) and poll every few milliseconds. "Live"
 * means started and not killed: a node frozen with rs_pause() counts as
 * live, so waits that need its answers time out.
 *
 * Test support, not library code: blocking hiredis, nothing of hilock; on
 * failure a line on stderr and NULL or -1. Not thread-safe.
 */
#ifndef HILOCK_TESTS_REDIS_CLUSTER_H
#define HILOCK_TESTS_REDIS_CLUSTER_H

#include <stddef.h>

#include "redis_server.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RC_SLOTS 16384
/* The bound of every wait below, in milliseconds. */
#define RC_WAIT_MS 15000
/* cluster-node-timeout of every node: how long a node may be silent before
 * it is suspected, so about how long rc_kill_master() takes. */
#define RC_NODE_TIMEOUT_MS 1000

struct rc_cluster;

/* Start masters (>= 3) masters with replicas_per_master replicas each and
 * create the cluster with `redis-cli --cluster create ... --cluster-replicas
 * N --cluster-yes` ("redis-cli" from PATH unless HILOCK_REDIS_CLI names
 * another binary). Returns when every node reports cluster_state:ok, all
 * nodes agree on the owner of every slot and every replica's link to its
 * master is up. Node i < masters is a master. NULL on failure, with every
 * node stopped. */
struct rc_cluster *rc_start(int masters, int replicas_per_master);
/* TLS for the nodes rc_start starts from now on (NULL: none): each also
 * listens with TLS on a port of its own (rc_tls_port), with tls-cluster
 * and tls-replication on, so that the bus and replication use TLS and TLS
 * clients are told the TLS ports (in CLUSTER SLOTS, MOVED, ASK). The
 * harness and redis-cli keep the plain port. Copied. */
void rc_set_tls(const struct rs_tls *tls);
/* Node i's TLS port, or -1. */
int rc_tls_port(const struct rc_cluster *c, int i);

/* The same with extra server arguments for every node (NULL-terminated, at
 * most RC_MAX_ARGS), e.g. "--rename-command", "SPUBLISH", "". */
#define RC_MAX_ARGS 32
struct rc_cluster *rc_start_args(int masters, int replicas_per_master,
                                 const char *const *args);
/* Stop every node and free the cluster; NULL is ignored. */
void rc_stop(struct rc_cluster *c);

/* Number of nodes; the port, the server (for rs_* calls) and the cluster
 * node id (40 hex digits) of node i. */
int rc_count(const struct rc_cluster *c);
int rc_port(const struct rc_cluster *c, int i);
struct rs_server *rc_server(struct rc_cluster *c, int i);
const char *rc_node_id(const struct rc_cluster *c, int i);

/* The hash slot of a key: CRC16 (XMODEM) mod 16384 of the key, or of its
 * {hash tag} when it has a non-empty one. Written here independently of
 * Redis and of hilock, for cross-checks. */
int rc_key_slot(const char *key, size_t len);

/* The node that owns slot according to CLUSTER SLOTS of a live master, or
 * -1. */
int rc_slot_owner(struct rc_cluster *c, int slot);
/* The live nodes whose ROLE is master, into out[] (at most max); returns
 * how many there are (which may exceed max), or -1. */
int rc_masters(struct rc_cluster *c, int *out, int max);
/* The node that replica i replicates (per its ROLE), or -1. */
int rc_master_of(struct rc_cluster *c, int replica);

/* Move a slot in steps, as `redis-cli --cluster reshard` does:
 * begin: CLUSTER SETSLOT slot IMPORTING on `to`, then MIGRATING on `from`
 *   (from now on `from` answers -ASK for keys it no longer has);
 * keys: MIGRATE every key of the slot from `from` to `to`;
 * finish: CLUSTER SETSLOT slot NODE `to` on `to`, then on every other live
 *   master, and wait until every live node names `to` as the owner.
 * Each 0 or -1. */
int rc_migrate_begin(struct rc_cluster *c, int slot, int from, int to);
int rc_migrate_keys(struct rc_cluster *c, int slot, int from, int to);
int rc_migrate_finish(struct rc_cluster *c, int slot, int to);
/* All three steps from the current owner; 0 at once when `to` owns it. */
int rc_move_slot(struct rc_cluster *c, int slot, int to);

/* CLUSTER FAILOVER on replica node i. Returns 0 once i is a master, owns
 * its old master's slots in the view of every live node, every live node
 * reports cluster_state:ok and every replica (the old master too) has its
 * link up; -1 otherwise. */
int rc_failover(struct rc_cluster *c, int replica);
/* kill -9 master node i (it stays down) and wait until one of its replicas
 * owns its slots in the view of every live node, every live node reports
 * cluster_state:ok and every live replica has its link up. Returns the
 * promoted node, or -1. */
int rc_kill_master(struct rc_cluster *c, int master);

#ifdef __cplusplus
}
#endif

#endif /* HILOCK_TESTS_REDIS_CLUSTER_H */
