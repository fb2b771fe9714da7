/* SPDX-License-Identifier: BSD-3-Clause */
/* redis_cluster.c -- see redis_cluster.h.
 *
 * Why the care: a cluster converges by gossip, so nothing is true at once
 * everywhere. Every step that changes the cluster waits until each live
 * node, asked on its own, says the same thing: cluster_state:ok, the same
 * owner for every slot, replicas linked to their masters. Tests that start
 * right after such a step then see one cluster, not a transition.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "redis_cluster.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RC_MAX_NODES 64
#define RC_POLL_MS 20
/* Connect and reply timeout of the harness's own queries. */
#define RC_IO_MS 2000
/* redis-cli --cluster create sleeps about a second by itself. */
#define RC_CLI_TIMEOUT_MS 30000
#define RC_MIGRATE_BATCH 100
#define RC_STR_(x) #x
#define RC_STR(x) RC_STR_(x)

struct rc_cluster {
    int n;
    struct rs_server *srv[RC_MAX_NODES];
    int tls_port[RC_MAX_NODES];
    char id[RC_MAX_NODES][41];
};

/* ---- key slots ----------------------------------------------------------- */

/* CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, no reflection;
 * bit by bit, so that it shares no table with the code it checks. */
static uint16_t crc16(const unsigned char *p, size_t len)
{
    uint16_t crc = 0;
    while (len--) {
        crc ^= (uint16_t)(*p++ << 8);
        for (int bit = 0; bit < 8; bit++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021)
                                 : (uint16_t)(crc << 1);
    }
    return crc;
}

int rc_key_slot(const char *key, size_t len)
{
    /* Only the part between the first '{' and the first '}' after it is
     * hashed, and only when it is not empty. */
    const char *open = memchr(key, '{', len);
    if (open) {
        size_t after = len - (size_t)(open - key) - 1;
        const char *close = memchr(open + 1, '}', after);
        if (close && close > open + 1) {
            key = open + 1;
            len = (size_t)(close - key);
        }
    }
    return crc16((const unsigned char *)key, len) & (RC_SLOTS - 1);
}

/* ---- nodes --------------------------------------------------------------- */

int rc_count(const struct rc_cluster *c)
{
    return c ? c->n : 0;
}

static bool valid(const struct rc_cluster *c, int i)
{
    return c && i >= 0 && i < c->n;
}

int rc_port(const struct rc_cluster *c, int i)
{
    return valid(c, i) ? rs_port(c->srv[i]) : -1;
}

struct rs_server *rc_server(struct rc_cluster *c, int i)
{
    return valid(c, i) ? c->srv[i] : NULL;
}

const char *rc_node_id(const struct rc_cluster *c, int i)
{
    return valid(c, i) ? c->id[i] : NULL;
}

static bool live(const struct rc_cluster *c, int i)
{
    return rs_pid(c->srv[i]) > 0;
}

/* The node listening on port, or -1. */
static int node_by_port(const struct rc_cluster *c, long long port)
{
    for (int i = 0; i < c->n; i++)
        if (rs_port(c->srv[i]) == port)
            return i;
    return -1;
}

/* rc_set_tls's files (empty: no TLS). */
static char tls_files[3][PATH_MAX];

void rc_set_tls(const struct rs_tls *tls)
{
    const char *f[3] = {tls ? tls->cert_file : NULL,
                        tls ? tls->key_file : NULL,
                        tls ? tls->ca_file : NULL};
    for (int i = 0; i < 3; i++)
        snprintf(tls_files[i], sizeof tls_files[i], "%s", f[i] ? f[i] : "");
}

int rc_tls_port(const struct rc_cluster *c, int i)
{
    return valid(c, i) && c->tls_port[i] > 0 ? c->tls_port[i] : -1;
}

/* A node with a bus port of its own: redis picks port + 10000 otherwise,
 * which may be taken or above 65535. The bus port was free a moment ago;
 * should it be taken meanwhile, the node exits and we try another. Before
 * 7.0 a node cannot be given its bus port (nor a shutdown timeout): one
 * whose port + 10000 is out of range is stopped and another started. */
static struct rs_server *start_node(int *tls_port, const char *const *extra)
{
    bool v7 = rs_server_version() == 0 ||
              rs_server_version() >= RS_VERSION_7_0;
    for (int attempt = 0; attempt < (v7 ? 3 : 8); attempt++) {
        char bus[16], tls[16];
        int bus_port = rs_free_port();
        *tls_port = tls_files[0][0] ? rs_free_port() : 0;
        if (bus_port < 0 || *tls_port < 0)
            break;
        snprintf(bus, sizeof bus, "%d", bus_port);
        snprintf(tls, sizeof tls, "%d", *tls_port);
        /* hz 100: SIGTERM acted on within 10 ms. validity-factor 0: a
         * replica may always take over, however long its link was down.
         * Full syncs through a file: a diskless one starts at once too,
         * but may then leave a replica that reports its link up without
         * any stream from the master for up to a second (when its first
         * ACK beats the master's reaping of the fork), so a write made
         * then is lost by a failover. shutdown-timeout 0: a master stops
         * without waiting for its replicas. */
        const char *args[RC_MAX_ARGS + 32] = {
            "--hz", "100", "--cluster-enabled", "yes",
            "--cluster-node-timeout", RC_STR(RC_NODE_TIMEOUT_MS),
            "--cluster-replica-validity-factor", "0",
            "--repl-diskless-sync", "no"};
        int n = 10;
        if (v7) {
            const char *more[] = {"--cluster-port", bus, "--shutdown-timeout",
                                  "0"};
            for (int i = 0; i < 4; i++)
                args[n++] = more[i];
        }
        if (tls_files[0][0]) {
            const char *more[] = {"--tls-port", tls,
                                  "--tls-cert-file", tls_files[0],
                                  "--tls-key-file", tls_files[1],
                                  "--tls-ca-cert-file", tls_files[2],
                                  "--tls-auth-clients", "no",
                                  "--tls-cluster", "yes",
                                  "--tls-replication", "yes"};
            for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
                args[n++] = more[i];
        }
        for (int i = 0; extra && extra[i] && i < RC_MAX_ARGS; i++)
            args[n++] = extra[i];
        args[n] = NULL;
        struct rs_server *srv = rs_start(args);
        if (srv && !v7 && rs_port(srv) + 10000 > 65535) {
            rs_stop(srv);
            continue;
        }
        if (srv)
            return srv;
    }
    fprintf(stderr, "rc: could not start a cluster node\n");
    return NULL;
}

void rc_stop(struct rc_cluster *c)
{
    if (!c)
        return;
    /* Signal them all first, so that they shut down in parallel. */
    for (int i = 0; i < c->n; i++)
        if (c->srv[i] && rs_pid(c->srv[i]) > 0)
            kill(rs_pid(c->srv[i]), SIGTERM);
    for (int i = 0; i < c->n; i++)
        rs_stop(c->srv[i]);
    free(c);
}

/* ---- queries ------------------------------------------------------------- */

static redisContext *node_connect(const struct rc_cluster *c, int i)
{
    return rs_connect_timeout(c->srv[i], RC_IO_MS);
}

/* Run a NULL-terminated command on ctx; the reply or NULL. */
static redisReply *vcmd(redisContext *ctx, const char *cmd, va_list ap)
{
    const char *argv[RC_MAX_NODES + 16];
    int argc = 0;
    argv[argc++] = cmd;
    for (const char *a = va_arg(ap, const char *); a;
         a = va_arg(ap, const char *)) {
        if (argc == (int)(sizeof argv / sizeof argv[0]))
            return NULL;
        argv[argc++] = a;
    }
    return redisCommandArgv(ctx, argc, argv, NULL);
}

static redisReply *cmd(redisContext *ctx, const char *command, ...)
{
    va_list ap;
    va_start(ap, command);
    redisReply *r = vcmd(ctx, command, ap);
    va_end(ap);
    return r;
}

/* Run a command on node i that must answer +OK; 0, or -1 with a message. */
static int node_ok(const struct rc_cluster *c, int i, const char *command, ...)
{
    redisContext *ctx = node_connect(c, i);
    redisReply *r = NULL;
    int rc = -1;
    if (ctx) {
        va_list ap;
        va_start(ap, command);
        r = vcmd(ctx, command, ap);
        va_end(ap);
    }
    if (r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0)
        rc = 0;
    else
        fprintf(stderr, "rc: %s on node %d (port %d): %s\n", command, i,
                rs_port(c->srv[i]),
                r && r->str ? r->str : ctx ? ctx->errstr : "no connection");
    if (r)
        freeReplyObject(r);
    if (ctx)
        redisFree(ctx);
    return rc;
}

/* 1 when ROLE says master, 0 replica (*master_of: the node it follows, -1
 * when unknown), -1 on error. */
static int read_role(redisContext *ctx, const struct rc_cluster *c,
                     int *master_of)
{
    redisReply *r = cmd(ctx, "ROLE", (char *)NULL);
    int role = -1;
    if (master_of)
        *master_of = -1;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements >= 3 &&
        r->element[0]->type == REDIS_REPLY_STRING) {
        if (strcmp(r->element[0]->str, "master") == 0) {
            role = 1;
        } else if (strcmp(r->element[0]->str, "slave") == 0) {
            role = 0;
            if (master_of && r->element[2]->type == REDIS_REPLY_INTEGER)
                *master_of = node_by_port(c, r->element[2]->integer);
        }
    }
    if (r)
        freeReplyObject(r);
    return role;
}

/* True when the text reply of command (CLUSTER INFO, INFO replication)
 * has the line "field:value". */
static bool has_line(redisContext *ctx, const char *command, const char *arg,
                     const char *line)
{
    redisReply *r = cmd(ctx, command, arg, (char *)NULL);
    bool found = false;
    if (r && r->type == REDIS_REPLY_STRING) {
        size_t len = strlen(line);
        for (const char *p = r->str; p && *p;) {
            if (strncmp(p, line, len) == 0 &&
                (p[len] == '\r' || p[len] == '\n' || p[len] == '\0')) {
                found = true;
                break;
            }
            p = strchr(p, '\n');
            if (p)
                p++;
        }
    }
    if (r)
        freeReplyObject(r);
    return found;
}

/* The slot owners per CLUSTER SLOTS: node index, -1 for a slot no range
 * covers or whose master is not one of ours. 0 or -1. */
static int read_slots(redisContext *ctx, const struct rc_cluster *c,
                      int16_t *owner)
{
    redisReply *r = cmd(ctx, "CLUSTER", "SLOTS", (char *)NULL);
    int rc = -1;
    for (int s = 0; s < RC_SLOTS; s++)
        owner[s] = -1;
    if (r && r->type == REDIS_REPLY_ARRAY) {
        rc = 0;
        for (size_t k = 0; k < r->elements; k++) {
            const redisReply *e = r->element[k];
            if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
                e->element[0]->type != REDIS_REPLY_INTEGER ||
                e->element[1]->type != REDIS_REPLY_INTEGER ||
                e->element[2]->type != REDIS_REPLY_ARRAY ||
                e->element[2]->elements < 2 ||
                e->element[2]->element[1]->type != REDIS_REPLY_INTEGER) {
                rc = -1;
                break;
            }
            long long from = e->element[0]->integer;
            long long to = e->element[1]->integer;
            int node = node_by_port(c, e->element[2]->element[1]->integer);
            for (long long s = from; s <= to && s < RC_SLOTS; s++)
                if (s >= 0)
                    owner[s] = (int16_t)node;
        }
    }
    if (r)
        freeReplyObject(r);
    return rc;
}

/* The slot map as node i sees it (owner: RC_SLOTS entries). 0 or -1. */
static int node_slots(const struct rc_cluster *c, int i, int16_t *owner)
{
    redisContext *ctx = node_connect(c, i);
    if (!ctx)
        return -1;
    int rc = read_slots(ctx, c, owner);
    redisFree(ctx);
    return rc;
}

static int node_role(const struct rc_cluster *c, int i, int *master_of)
{
    redisContext *ctx = node_connect(c, i);
    if (!ctx)
        return -1;
    int role = read_role(ctx, c, master_of);
    redisFree(ctx);
    return role;
}

int rc_masters(struct rc_cluster *c, int *out, int max)
{
    int count = 0;
    if (!c)
        return -1;
    for (int i = 0; i < c->n; i++) {
        if (live(c, i) && node_role(c, i, NULL) == 1) {
            if (count < max)
                out[count] = i;
            count++;
        }
    }
    return count;
}

int rc_master_of(struct rc_cluster *c, int replica)
{
    int master;
    if (!valid(c, replica) || node_role(c, replica, &master) != 0)
        return -1;
    return master;
}

/* The first live node that says it is a master, or -1. */
static int any_master(const struct rc_cluster *c)
{
    for (int i = 0; i < c->n; i++)
        if (live(c, i) && node_role(c, i, NULL) == 1)
            return i;
    return -1;
}

int rc_slot_owner(struct rc_cluster *c, int slot)
{
    int16_t *owner;
    int m, result = -1;
    if (!c || slot < 0 || slot >= RC_SLOTS || (m = any_master(c)) < 0)
        return -1;
    owner = malloc(RC_SLOTS * sizeof *owner);
    if (owner && node_slots(c, m, owner) == 0)
        result = owner[slot];
    free(owner);
    return result;
}

/* ---- waiting for agreement ----------------------------------------------- */

/* Scratch slot maps: the first live node's and the one being compared. */
struct views {
    int16_t ref[RC_SLOTS];
    int16_t cur[RC_SLOTS];
};

/* True when every live node answers, reports cluster_state:ok and, if a
 * replica, has its link up; when all have the same owner for every slot,
 * each a live node; and, when slot >= 0 and want >= 0, that owner of slot
 * is want. *owner_of_slot (optional) gets the agreed owner of slot. */
static bool settled(const struct rc_cluster *c, struct views *v, int slot,
                    int want, int *owner_of_slot)
{
    bool first = true;
    for (int i = 0; i < c->n; i++) {
        if (!live(c, i))
            continue;
        redisContext *ctx = node_connect(c, i);
        if (!ctx)
            return false;
        int role = read_role(ctx, c, NULL);
        bool ok = role >= 0 &&
                  has_line(ctx, "CLUSTER", "INFO", "cluster_state:ok") &&
                  (role == 1 || has_line(ctx, "INFO", "replication",
                                         "master_link_status:up")) &&
                  read_slots(ctx, c, first ? v->ref : v->cur) == 0;
        redisFree(ctx);
        if (!ok)
            return false;
        if (first) {
            for (int s = 0; s < RC_SLOTS; s++)
                if (v->ref[s] < 0 || !live(c, v->ref[s]))
                    return false;
            first = false;
        } else if (memcmp(v->ref, v->cur, sizeof v->ref) != 0) {
            return false;
        }
    }
    if (first)
        return false; /* no live node */
    if (slot >= 0 && want >= 0 && v->ref[slot] != want)
        return false;
    if (slot >= 0 && owner_of_slot)
        *owner_of_slot = v->ref[slot];
    return true;
}

/* settled() polled until true or RC_WAIT_MS passed. 0 or -1. */
static int wait_settled(const struct rc_cluster *c, int slot, int want,
                        int *owner_of_slot, const char *what)
{
    struct views *v = malloc(sizeof *v);
    long long deadline = rs_now_ms() + RC_WAIT_MS;
    int rc = -1;
    if (!v)
        return -1;
    for (;;) {
        if (settled(c, v, slot, want, owner_of_slot)) {
            rc = 0;
            break;
        }
        if (rs_now_ms() >= deadline)
            break;
        rs_sleep_ms(RC_POLL_MS);
    }
    free(v);
    if (rc != 0)
        fprintf(stderr, "rc: %s: the cluster did not settle in %d ms\n",
                what, RC_WAIT_MS);
    return rc;
}

/* ---- start --------------------------------------------------------------- */

/* Run argv with stdout and stderr into log and wait at most timeout_ms.
 * The exit status, or -1. */
static int run_logged(const char *const *argv, const char *log,
                      int timeout_ms)
{
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "rc: fork: %s\n", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        /* Like the servers: it dies with us, keeps none of our files. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(127);
        int in = open("/dev/null", O_RDONLY);
        int out = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (in < 0 || out < 0)
            _exit(127);
        dup2(in, 0);
        dup2(out, 1);
        dup2(out, 2);
        long maxfd = sysconf(_SC_OPEN_MAX);
        if (maxfd < 0 || maxfd > 65536)
            maxfd = 65536;
        for (int fd = 3; fd < maxfd; fd++)
            close(fd);
        setenv("TERM", "dumb", 1); /* no colour codes in the log */
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    long long deadline = rs_now_ms() + timeout_ms;
    int status;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
        if (w < 0 && errno != EINTR)
            return -1;
        if (rs_now_ms() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            fprintf(stderr, "rc: %s did not finish in %d ms\n", argv[0],
                    timeout_ms);
            return -1;
        }
        rs_sleep_ms(10);
    }
}

/* The last non-empty line of a file, for a one-line failure message. */
static void last_line(const char *path, char *buf, size_t size)
{
    char line[512];
    FILE *f = fopen(path, "r");
    snprintf(buf, size, "(no output)");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        size_t len = strlen(line);
        if (len > 0) {
            if (len >= size)
                len = size - 1; /* the start says what went wrong */
            memcpy(buf, line, len);
            buf[len] = '\0';
        }
    }
    fclose(f);
}

static int create_cluster(struct rc_cluster *c, int replicas)
{
    const char *bin = getenv("HILOCK_REDIS_CLI");
    const char *argv[RC_MAX_NODES + 16];
    char addr[RC_MAX_NODES][32], nrep[16], log[PATH_MAX + 32];
    int argc = 0;

    argv[argc++] = bin && bin[0] ? bin : "redis-cli";
    argv[argc++] = "--cluster";
    argv[argc++] = "create";
    for (int i = 0; i < c->n; i++) {
        snprintf(addr[i], sizeof addr[i], "127.0.0.1:%d", rs_port(c->srv[i]));
        argv[argc++] = addr[i];
    }
    snprintf(nrep, sizeof nrep, "%d", replicas);
    argv[argc++] = "--cluster-replicas";
    argv[argc++] = nrep;
    argv[argc++] = "--cluster-yes";
    argv[argc] = NULL;

    snprintf(log, sizeof log, "%s/cluster-create.log", rs_dir(c->srv[0]));
    int status = run_logged(argv, log, RC_CLI_TIMEOUT_MS);
    if (status != 0) {
        char last[256];
        last_line(log, last, sizeof last);
        fprintf(stderr, "rc: %s --cluster create exited with %d: %s\n",
                argv[0], status, last);
        return -1;
    }
    return 0;
}

/* Fill c->id[] from CLUSTER MYID. 0 or -1. */
static int read_ids(struct rc_cluster *c)
{
    for (int i = 0; i < c->n; i++) {
        char *id = rs_str(c->srv[i], "CLUSTER", "MYID", (char *)NULL);
        bool ok = id && strlen(id) == 40;
        if (ok)
            memcpy(c->id[i], id, 41);
        free(id);
        if (!ok) {
            fprintf(stderr, "rc: no node id from port %d\n",
                    rs_port(c->srv[i]));
            return -1;
        }
    }
    return 0;
}

/* redis-cli makes the first `masters` addresses masters when they share a
 * host; check it, since callers rely on the numbering. */
static int check_roles(const struct rc_cluster *c, int masters)
{
    for (int i = 0; i < c->n; i++) {
        int role = node_role(c, i, NULL);
        if (role != (i < masters)) {
            fprintf(stderr, "rc: node %d (port %d) is not a %s\n", i,
                    rs_port(c->srv[i]), i < masters ? "master" : "replica");
            return -1;
        }
    }
    return 0;
}

struct rc_cluster *rc_start(int masters, int replicas_per_master)
{
    return rc_start_args(masters, replicas_per_master, NULL);
}

struct rc_cluster *rc_start_args(int masters, int replicas_per_master,
                                 const char *const *args)
{
    if (masters < 3 || replicas_per_master < 0 ||
        masters * (1 + replicas_per_master) > RC_MAX_NODES) {
        fprintf(stderr, "rc: cannot make %d masters with %d replicas each\n",
                masters, replicas_per_master);
        return NULL;
    }
    struct rc_cluster *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    int n = masters * (1 + replicas_per_master);
    for (c->n = 0; c->n < n; c->n++) {
        c->srv[c->n] = start_node(&c->tls_port[c->n], args);
        if (!c->srv[c->n])
            goto fail;
    }
    if (read_ids(c) != 0 || create_cluster(c, replicas_per_master) != 0 ||
        check_roles(c, masters) != 0 ||
        wait_settled(c, -1, -1, NULL, "start") != 0)
        goto fail;
    return c;
fail:
    rc_stop(c);
    return NULL;
}

/* ---- slot migration ------------------------------------------------------ */

static bool valid_slot(int slot)
{
    return slot >= 0 && slot < RC_SLOTS;
}

int rc_migrate_begin(struct rc_cluster *c, int slot, int from, int to)
{
    char s[16];
    if (!valid(c, from) || !valid(c, to) || from == to || !valid_slot(slot))
        return -1;
    snprintf(s, sizeof s, "%d", slot);
    /* Importing first: once `from` migrates, it sends clients to `to`
     * with -ASK, and `to` must accept them by then. */
    if (node_ok(c, to, "CLUSTER", "SETSLOT", s, "IMPORTING", c->id[from],
                (char *)NULL) != 0 ||
        node_ok(c, from, "CLUSTER", "SETSLOT", s, "MIGRATING", c->id[to],
                (char *)NULL) != 0)
        return -1;
    return 0;
}

/* MIGRATE the keys of one GETKEYSINSLOT batch; the number of keys in it,
 * or -1. */
static int migrate_batch(redisContext *ctx, const char *slot,
                         const char *port)
{
    redisReply *keys = cmd(ctx, "CLUSTER", "GETKEYSINSLOT", slot,
                           RC_STR(RC_MIGRATE_BATCH), (char *)NULL);
    if (!keys || keys->type != REDIS_REPLY_ARRAY) {
        fprintf(stderr, "rc: CLUSTER GETKEYSINSLOT %s: %s\n", slot,
                keys && keys->str ? keys->str : ctx->errstr);
        if (keys)
            freeReplyObject(keys);
        return -1;
    }
    int n = (int)keys->elements;
    if (n == 0) {
        freeReplyObject(keys);
        return 0;
    }
    /* MIGRATE host port "" 0 timeout KEYS k1 k2 ...: binary-safe. */
    const char **argv = malloc((size_t)(n + 7) * sizeof *argv);
    size_t *lens = malloc((size_t)(n + 7) * sizeof *lens);
    const char *head[] = {"MIGRATE", "127.0.0.1", port, "", "0", "5000",
                          "KEYS"};
    int argc = 0, rc = -1;
    if (argv && lens) {
        for (; argc < 7; argc++) {
            argv[argc] = head[argc];
            lens[argc] = strlen(head[argc]);
        }
        for (int k = 0; k < n; k++, argc++) {
            argv[argc] = keys->element[k]->str;
            lens[argc] = keys->element[k]->len;
        }
        redisReply *r = redisCommandArgv(ctx, argc, argv, lens);
        /* NOKEY: the keys expired meanwhile, nothing to move. */
        if (r && r->type == REDIS_REPLY_STATUS &&
            (strcmp(r->str, "OK") == 0 || strcmp(r->str, "NOKEY") == 0))
            rc = n;
        else
            fprintf(stderr, "rc: MIGRATE of slot %s: %s\n", slot,
                    r && r->str ? r->str : ctx->errstr);
        if (r)
            freeReplyObject(r);
    }
    free(argv);
    free(lens);
    freeReplyObject(keys);
    return rc;
}

int rc_migrate_keys(struct rc_cluster *c, int slot, int from, int to)
{
    char s[16], port[16];
    if (!valid(c, from) || !valid(c, to) || !valid_slot(slot))
        return -1;
    snprintf(s, sizeof s, "%d", slot);
    snprintf(port, sizeof port, "%d", rs_port(c->srv[to]));
    redisContext *ctx = node_connect(c, from);
    if (!ctx) {
        fprintf(stderr, "rc: cannot connect to node %d\n", from);
        return -1;
    }
    int n;
    while ((n = migrate_batch(ctx, s, port)) > 0) {
    }
    redisFree(ctx);
    return n == 0 ? 0 : -1;
}

int rc_migrate_finish(struct rc_cluster *c, int slot, int to)
{
    char s[16];
    int masters[RC_MAX_NODES];
    if (!valid(c, to) || !valid_slot(slot))
        return -1;
    snprintf(s, sizeof s, "%d", slot);
    /* The new owner first: the old one then redirects to a node that
     * already serves the slot, never to one that sends clients back. */
    if (node_ok(c, to, "CLUSTER", "SETSLOT", s, "NODE", c->id[to],
                (char *)NULL) != 0)
        return -1;
    int m = rc_masters(c, masters, RC_MAX_NODES);
    if (m < 0)
        return -1;
    for (int k = 0; k < m && k < RC_MAX_NODES; k++) {
        if (masters[k] != to &&
            node_ok(c, masters[k], "CLUSTER", "SETSLOT", s, "NODE",
                    c->id[to], (char *)NULL) != 0)
            return -1;
    }
    return wait_settled(c, slot, to, NULL, "slot migration");
}

int rc_move_slot(struct rc_cluster *c, int slot, int to)
{
    if (!valid(c, to) || !valid_slot(slot))
        return -1;
    int from = rc_slot_owner(c, slot);
    if (from < 0) {
        fprintf(stderr, "rc: slot %d has no owner\n", slot);
        return -1;
    }
    if (from == to)
        return 0;
    if (rc_migrate_begin(c, slot, from, to) != 0 ||
        rc_migrate_keys(c, slot, from, to) != 0 ||
        rc_migrate_finish(c, slot, to) != 0)
        return -1;
    return 0;
}

/* ---- failures ------------------------------------------------------------ */

/* A slot that node owns in its own view, or -1. */
static int some_slot_of(const struct rc_cluster *c, int node)
{
    int16_t *owner = malloc(RC_SLOTS * sizeof *owner);
    int slot = -1;
    if (owner && node_slots(c, node, owner) == 0) {
        for (int s = 0; s < RC_SLOTS && slot < 0; s++)
            if (owner[s] == node)
                slot = s;
    }
    free(owner);
    return slot;
}

int rc_failover(struct rc_cluster *c, int replica)
{
    int master;
    if (!valid(c, replica) || !live(c, replica) ||
        node_role(c, replica, &master) != 0 || !valid(c, master)) {
        fprintf(stderr, "rc: node %d is not a replica of a known node\n",
                replica);
        return -1;
    }
    int slot = some_slot_of(c, master);
    if (slot < 0) {
        fprintf(stderr, "rc: the master of node %d owns no slot\n", replica);
        return -1;
    }
    /* A manual failover that the replica cannot finish in Redis's 5 s
     * (it lags on a loaded machine) is dropped: ask again, at most thrice. */
    for (int attempt = 0; attempt < 3; attempt++) {
        if (node_ok(c, replica, "CLUSTER", "FAILOVER", (char *)NULL) != 0)
            return -1;
        long long until = rs_now_ms() + 6000;
        while (node_role(c, replica, NULL) != 1 && rs_now_ms() < until)
            rs_sleep_ms(RC_POLL_MS);
        if (node_role(c, replica, NULL) == 1)
            return wait_settled(c, slot, replica, NULL, "failover");
    }
    fprintf(stderr, "rc: node %d did not take over\n", replica);
    return -1;
}

int rc_kill_master(struct rc_cluster *c, int master)
{
    int promoted = -1;
    if (!valid(c, master) || !live(c, master) ||
        node_role(c, master, NULL) != 1) {
        fprintf(stderr, "rc: node %d is not a live master\n", master);
        return -1;
    }
    int slot = some_slot_of(c, master);
    if (slot < 0) {
        fprintf(stderr, "rc: node %d owns no slot\n", master);
        return -1;
    }
    int replica = -1;
    for (int i = 0; i < c->n && replica < 0; i++)
        if (i != master && live(c, i) && rc_master_of(c, i) == master)
            replica = i;
    if (replica < 0) {
        fprintf(stderr, "rc: node %d has no live replica\n", master);
        return -1;
    }
    if (rs_kill9(c->srv[master]) != 0)
        return -1;
    /* Settled means every slot has a live owner, so not the dead one. */
    if (wait_settled(c, slot, -1, &promoted, "failover after kill") != 0)
        return -1;
    return promoted;
}
