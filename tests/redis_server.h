/* SPDX-License-Identifier: BSD-3-Clause */
/* redis_server.h -- run a throwaway redis-server for tests, demos and bench.
 *
 * Each server gets its own temporary directory and its own loopback port, so
 * any number of test programs may run in parallel. The server is started
 * with PR_SET_PDEATHSIG(SIGKILL), so it dies with the process that started it
 * even when that process is killed by a timeout or crashes; servers still
 * running at a normal exit() are killed by an atexit handler.
 *
 * This is test support, not library code: on failure it prints a line to
 * stderr and returns an error. It uses blocking hiredis for the synchronous
 * helpers and nothing of hilock. Not thread-safe.
 */
#ifndef HILOCK_TESTS_REDIS_SERVER_H
#define HILOCK_TESTS_REDIS_SERVER_H

#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rs_server;

/* How to start a server; zero-initialise, then set what you need. */
struct rs_options {
    /* Extra command-line arguments, NULL-terminated, appended after the
     * harness's own, e.g. {"--requirepass", "secret", NULL}. Copied. */
    const char *const *args;
    /* Extra configuration text (redis.conf lines) written to a file in the
     * server's directory and passed as the config file. Copied. */
    const char *conf;
    /* Port to use; 0 picks a free one. */
    int port;
    /* Milliseconds to wait for the first PONG; 0 means 5000. */
    int start_timeout_ms;
    /* Nonzero: also listen on a unix socket in the server's directory
     * (see rs_unix_path). */
    int unix_socket;
    /* TLS only (cert_file set): --port 0 and --tls-port on the server's
     * port, with these PEM files (see tls_certs.h). The harness's own
     * helpers (rs_connect, rs_int, ...) then use a unix socket, which is
     * added. auth_clients nonzero: clients must show a certificate of
     * ca_file. Copied. */
    struct rs_tls {
        const char *cert_file;
        const char *key_file;
        const char *ca_file;
        int auth_clients;
    } tls;
};

/* Make the session directory that will hold every server's directory and
 * have it removed at exit() of this process. Optional (rs_start calls it),
 * but a test runner that forks its tests (Check) should call it first, so
 * that the directories of tests that crash or time out are removed by the
 * runner. Also removes session directories of runners that were killed
 * before they could clean up. 0, or -1 with a message on stderr. */
int rs_init(void);

/* Start a server with extra arguments (NULL-terminated; NULL for none) and
 * wait until it answers PING. A Sentinel ("--sentinel" among the arguments,
 * its configuration as conf) is recognised as started too. Returns NULL (with a message on stderr) on
 * failure. The program "redis-server" is looked up in PATH unless the
 * environment variable HILOCK_REDIS_SERVER names another binary. */
struct rs_server *rs_start(const char *const *args);
/* The same with every option; opts may be NULL. */
struct rs_server *rs_start_opts(const struct rs_options *opts);

/* Stop the server (SIGTERM, SIGKILL after 5 s), remove its directory and
 * free it. NULL is ignored. */
void rs_stop(struct rs_server *srv);

/* The version of the server program rs_start runs, as major * 10000 +
 * minor * 100 + patch (70015 for 7.0.15), read from its --version line
 * once per process; 0 when it cannot be told. Options and commands that
 * older servers lack (7.0: --cluster-port, --shutdown-timeout, SENTINEL
 * DEBUG, sharded pub/sub) are used only from the version that has them. */
int rs_server_version(void);
#define RS_VERSION_7_0 70000

/* Milliseconds on the monotonic clock; sleep ms (through signals). */
long long rs_now_ms(void);
void rs_sleep_ms(int ms);

/* A loopback TCP port that nothing listened on a moment ago, or -1: for
 * tests of a client pointed at no server. */
int rs_free_port(void);

/* The TCP port, the server's pid (0 while not running), its directory. */
int rs_port(const struct rs_server *srv);
pid_t rs_pid(const struct rs_server *srv);
const char *rs_dir(const struct rs_server *srv);
/* The unix socket path when started with unix_socket, else NULL. */
const char *rs_unix_path(const struct rs_server *srv);

/* kill -9 the server and reap it. It stays down (rs_pid() is 0) until
 * rs_restart() or rs_kill9_restart(); rs_stop() still frees it. 0, or -1
 * when it was not running. */
int rs_kill9(struct rs_server *srv);
/* kill -9 the server, then start it again on the same port and wait for
 * PING. The data set is empty afterwards (nothing is saved). 0 or -1. */
int rs_kill9_restart(struct rs_server *srv);
/* Graceful stop (SIGTERM) and start again on the same port. 0 or -1. */
int rs_restart(struct rs_server *srv);
/* Freeze (SIGSTOP) and thaw (SIGCONT) the server process. 0 or -1. While
 * frozen the kernel still accepts connections but nothing is answered. */
int rs_pause(struct rs_server *srv);
int rs_resume(struct rs_server *srv);

/* ---- synchronous helpers (blocking hiredis, a new connection per call) --- */

/* A blocking connection to the server with 2 s connect and I/O timeouts, or
 * NULL. Free with redisFree(). */
redisContext *rs_connect(const struct rs_server *srv);
/* The same with a timeout of timeout_ms for connect and for each reply. */
redisContext *rs_connect_timeout(const struct rs_server *srv, int timeout_ms);

/* A connection as rs_connect's, subscribed to channel (the server
 * confirmed it), or NULL. Free with redisFree(). */
redisContext *rs_subscriber(const struct rs_server *srv, const char *channel);

/* 0 when the server answers PING with PONG within timeout_ms, else -1. */
int rs_ping(const struct rs_server *srv, int timeout_ms);

/* Run one command given as argc strings with lengths (argvlen NULL: use
 * strlen). Returns the reply (free with freeReplyObject) or NULL on an I/O
 * error or timeout (message on stderr). */
redisReply *rs_command_argv(const struct rs_server *srv, int argc,
                            const char *const *argv, const size_t *argvlen);

/* rs_int(srv, "HGET", key, field, (char *)NULL): run a command given as
 * NUL-terminated strings and return the reply as an integer. An integer
 * reply is returned as is, a string or status reply is parsed as a decimal.
 * Returns RS_NIL for a nil reply, RS_ERR for an error reply, an I/O error or
 * a reply of another type. */
#define RS_NIL LLONG_MIN
#define RS_ERR (LLONG_MIN + 1)
long long rs_int(const struct rs_server *srv, const char *cmd, ...);
/* rs_int with the arguments after cmd in a va_list. */
long long rs_vint(const struct rs_server *srv, const char *cmd, va_list ap);

/* As rs_int, returning the reply as a malloc'd NUL-terminated string (free
 * with free()): string, status and error replies as their text, integers in
 * decimal. NULL for nil, an array, or an I/O error. */
char *rs_str(const struct rs_server *srv, const char *cmd, ...);

/* Subscribers of channel per PUBSUB NUMSUB, or -1 on error. */
long long rs_numsub(const struct rs_server *srv, const char *channel);

/* The value of "field:" in INFO section, as a malloc'd string, or NULL.
 * Example: rs_info(srv, "stats", "total_commands_processed"). */
char *rs_info(const struct rs_server *srv, const char *section,
              const char *field);

/* The number of calls recorded in INFO commandstats for the command name
 * (lower case, "evalsha" or "client|setname"); 0 when absent, -1 on error. */
long long rs_cmdstat_calls(const struct rs_server *srv, const char *name);

#ifdef __cplusplus
}
#endif

#endif /* HILOCK_TESTS_REDIS_SERVER_H */
