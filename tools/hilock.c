/* hilock.c -- the hilock command: run a command under a Redis lock, look at
 * a lock, break one.
 *
 *   hilock run [options] [--read | --write | --permits N] NAME [--] CMD...
 *   hilock status [options] NAME
 *   hilock release --force [options] NAME
 *
 * Each takes one Redis endpoint (-H, -p), or with --redlock the Redlock
 * masters, with --sentinel and --master the master that Sentinels name,
 * with --cluster a Redis Cluster. This file parses what the subcommands
 * share and dispatches; endpoints.c parses the lists, run.c holds the lock
 * while a child runs, inspect.c reads and breaks locks. Keys follow
 * the library's (Redisson's) layout, so the command interoperates with any
 * hilock or Redisson client guarding the same name. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hilock/hilock.h>

#include "cli.h"
#include "keys.h" /* src/: keys_slot_safe */

void cli_usage(int to_stderr)
{
    FILE *f = to_stderr ? stderr : stdout;
    fprintf(f,
"usage: hilock run [REDIS] [-w wait_ms] [-l lease_ms | -L watchdog_ms] [-n]\n"
"                  [--fair] [--wait-replicas N [--wait-timeout ms]]\n"
"                  [--read | --write | --permits N | --fence] NAME [--] CMD\n"
"                  [ARG...]\n"
"       hilock status [REDIS] NAME\n"
"       hilock release --force [REDIS] NAME\n"
"       hilock --help | --version\n"
"  REDIS is [-H host] [-p port] [-u user] [-a password]\n"
"        or --redlock h:p,h:p,h:p[,...] [-u user] [-a password]\n"
"        or --sentinel h:p[,...] --master NAME [--sentinel-password pw]\n"
"           [-u user] [-a password]\n"
"        or --cluster h:p[,...] [-u user] [-a password]\n"
"        each with [--tls [--cacert file] [--cert file --key file]\n"
"                  [--sni name] [--insecure]]\n"
"\n"
"run      take the Redis lock NAME, run CMD while holding it, release it when\n"
"         CMD and everything it started have exited, and exit with CMD's\n"
"         status. Options go before NAME; put -- before a CMD that starts\n"
"         with '-'. SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are\n"
"         passed on to CMD. If the lock is lost while CMD runs, CMD and its\n"
"         descendants get SIGTERM (SIGKILL 10 s later) and hilock exits 122.\n"
"         If hilock itself dies, they get SIGKILL (Linux).\n"
"  -w ms  wait at most ms for the lock; -w 0 tries once (default: wait\n"
"         indefinitely)\n"
"  -n     do not wait: fail at once when the lock is held (like flock -n)\n"
"  -l ms  a fixed lease (>= 1): the lock expires ms after it was taken,\n"
"         even while CMD runs (and then counts as lost)\n"
"  -L ms  instead of -l, the watchdog lease (>= 100): renewed every third of\n"
"         it while CMD runs, and what is left to others if hilock dies\n"
"         (default 30000)\n"
"  --fair  first come, first served: waiting runs (and library clients\n"
"         with fair mode) queue in Redis and each release hands the lock to\n"
"         the first live one; a killed waiter is passed over. Not with\n"
"         --redlock, --read, --write or --permits\n"
"  --read, --write  take the read or the write side of the read-write\n"
"         lock NAME: runs with --read share it, a --write run has it alone\n"
"  --permits N  take one of the N permits of semaphore NAME (an expiring\n"
"         permit, which comes back if hilock dies); N sets its permits if\n"
"         it has none; if it has another number, it is used as it is\n"
"         (said on stderr). Not with --redlock, nor with --read/--write\n"
"  --fence  draw a fencing token with the lock (not with --read, --write,\n"
"         --permits), passed to CMD as HILOCK_FENCE_TOKEN\n"
"  CMD's environment has HILOCK_LOCK_NAME and the hold's field in the lock\n"
"         hash, HILOCK_OWNER_FIELD (a permit: HILOCK_PERMIT_ID), for a write\n"
"         that checks the hold (docs/guarded-writes.md)\n"
"  --wait-replicas N  after taking and after each renewal, WAIT until N\n"
"         replicas have the lock; not taken (exit 125) when they do not\n"
"         within --wait-timeout ms (default 1000), lost when a renewal\n"
"         stays unconfirmed that way\n"
"status   print the holders of NAME (owner field: client id and owner tag,\n"
"         which is the pid of a hilock run), their hold counts and the ttl;\n"
"         with --redlock, what each master holds; with --sentinel, what the\n"
"         master they name holds; with --cluster, the master of NAME's slot.\n"
"         A read-write lock: its mode, readers and writer; a semaphore: the\n"
"         permits available and the expiring permits taken\n"
"release  --force: delete NAME whoever holds it and publish the release on\n"
"         its channel, so that waiters wake; with --redlock, on every master;\n"
"         with --sentinel and --cluster, on the master status reads\n");
    /* Two parts: C11 compilers need not take longer strings. */
    fprintf(f,
"\n"
"  -H host  Redis host (default 127.0.0.1)     -p port  (default 6379)\n"
"  -u user  ACL user name (needs a password)\n"
"  -a password  (or the HILOCK_AUTH variable)\n"
"  --redlock host:port,...  Redlock: an odd number (3 to 9) of independent\n"
"           masters, instead of -H/-p; a lock is held when a majority of\n"
"           them grant it. -u and -a apply to every master.\n"
"  --sentinel host:port,...  Sentinel: 1 to 16 sentinels, asked in turn\n"
"           for the master they know as --master NAME; -u and -a apply to\n"
"           the master, --sentinel-password (or the HILOCK_SENTINEL_AUTH\n"
"           variable) to the sentinels.\n"
"  --cluster host:port,...  Redis Cluster: 1 to 16 of its nodes; each lock\n"
"           is on the master of its slot. -u and -a apply to every node.\n"
"  Hosts are IPv4 addresses or names; only one of -H/-p and the lists.\n"
"  --tls    connect with TLS (every connection, the sentinels' too; needs\n"
"           hilock built with hiredis 1.x and hiredis_ssl). The server's\n"
"           certificate must chain to a trusted CA and name the host (or\n"
"           IP address) connected to, or --sni\n"
"  --cacert file  trusted CAs, PEM (default: the system's)\n"
"  --cert file --key file  a client certificate and its key (mutual TLS)\n"
"  --sni name  the server name sent and required in every certificate\n"
"  --insecure  NO CHECK of the server's certificate at all: encrypted, but\n"
"           anyone on the path can pose as Redis. For tests only\n"
"\n"
"exit status:\n"
"  run:     CMD's own exit status; 128+N when signal N killed CMD\n"
"           75   -n given and the lock is held by another owner\n"
"           122  the lock was lost while CMD ran (CMD and its descendants\n"
"                were sent SIGTERM if still running)\n"
"           124  the lock was not acquired within -w (-w 0 too)\n"
"           126  CMD is not executable      127  CMD was not found\n"
"           128+N  a signal N arrived while waiting for the lock\n"
"  status:  0 held, 1 free (a semaphore: held while an expiring permit is\n"
"           taken)                  release: 0 released, 1 was free\n"
"  all:     125 usage error; Redis unreachable, refusing or failing (no\n"
"           sentinel naming a master, no cluster node answering); a\n"
"           failed release; status, release: the key is not a lock;\n"
"           --redlock: no quorum (fewer than a majority of the masters\n"
"           answered), or status cannot tell, or release --force could\n"
"           not reach every master; --wait-replicas: too few replicas\n");
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    fputs("hilock: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void cli_redis_init(struct cli_redis *r)
{
    const char *auth = getenv("HILOCK_AUTH");
    const char *sentinel_auth = getenv("HILOCK_SENTINEL_AUTH");
    memset(r, 0, sizeof(*r));
    r->host = "127.0.0.1";
    r->port = 6379;
    r->password = auth && *auth ? auth : NULL;
    r->sentinel_password =
        sentinel_auth && *sentinel_auth ? sentinel_auth : NULL;
    r->topo = CLI_SINGLE;
}

/* Whether name can be a Sentinel master name: what the library takes (it
 * comes back inside space-separated messages): 1..255 bytes, none of them
 * a space or a control byte. */
static int master_name_ok(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len > 255)
        return 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)name[i] <= ' ' || name[i] == 0x7f)
            return 0;
    return 1;
}

int cli_redis_option(struct cli_redis *r, int opt, const char *value)
{
    char *end, shown[CLI_ESCAPED_SIZE(64)];
    long port;
    switch (opt) {
    case 'H':
        if (!*value) {
            cli_error("-H: empty host");
            return -1;
        }
        r->host = value;
        r->host_given = 1;
        return 0;
    case CLI_OPT_REDLOCK:
        return cli_list_parse(r, CLI_REDLOCK, value);
    case CLI_OPT_SENTINEL:
        return cli_list_parse(r, CLI_SENTINEL, value);
    case CLI_OPT_CLUSTER:
        return cli_list_parse(r, CLI_CLUSTER, value);
    case CLI_OPT_MASTER:
        if (r->master_name) {
            cli_error("--master given twice");
            return -1;
        }
        if (!master_name_ok(value)) {
            cli_error("--master: '%s' is no master name (1 to 255 bytes, "
                      "no spaces or control bytes)",
                      cli_escape(shown, sizeof(shown), value, strlen(value)));
            return -1;
        }
        r->master_name = value;
        return 0;
    case CLI_OPT_SENTINEL_PASSWORD:
        r->sentinel_password = value;
        r->sentinel_password_given = 1;
        return 0;
    case CLI_OPT_TLS:
        r->tls_given = 1;
        if (r->tls.mode == HILOCK_TLS_OFF)
            r->tls.mode = HILOCK_TLS_VERIFY;
        return 0;
    case CLI_OPT_INSECURE: r->tls.mode = HILOCK_TLS_NO_VERIFY; break;
    case CLI_OPT_CACERT: r->tls.ca_file = value; break;
    case CLI_OPT_CERT: r->tls.cert_file = value; break;
    case CLI_OPT_KEY: r->tls.key_file = value; break;
    case CLI_OPT_SNI: r->tls.server_name = value; break;
    case 'u': r->username = value; return 0;
    case 'a': r->password = value; return 0;
    case 'p':
        errno = 0;
        port = strtol(value, &end, 10);
        if (errno || !*value || *end || port < 1 || port > 65535) {
            cli_error("bad port '%s'", value);
            return -1;
        }
        r->port = (int)port;
        r->host_given = 1;
        return 0;
    default:
        return -1;
    }
    r->tls_detail_given = 1; /* one of the TLS details */
    return 0;
}

/* The TLS options taken together; 0, or -1 with a message. */
static int cli_tls_check(const struct cli_redis *r)
{
    if (r->tls_detail_given && !r->tls_given) {
        cli_error("--cacert, --cert, --key, --sni and --insecure need --tls");
        return -1;
    }
    if (!r->tls.cert_file != !r->tls.key_file) {
        cli_error("--cert and --key go together (mutual TLS)");
        return -1;
    }
    return 0;
}

int cli_redis_check(const struct cli_redis *r)
{
    static const char *const why[] = {
        [CLI_REDLOCK] = "--redlock names every master with its port",
        [CLI_SENTINEL] = "the sentinels name the master",
        [CLI_CLUSTER] = "--cluster names the nodes with their ports",
    };
    if (r->username && !r->password) {
        cli_error("-u needs a password (-a, or the HILOCK_AUTH variable)");
        return -1;
    }
    if (r->topo != CLI_SINGLE && r->host_given) {
        cli_error("-H/-p and %s exclude each other: %s",
                  cli_topo_option(r->topo), why[r->topo]);
        return -1;
    }
    if (r->topo == CLI_SENTINEL && !r->master_name) {
        cli_error("--sentinel needs --master NAME, the name the sentinels "
                  "know the master by");
        return -1;
    }
    if (r->topo != CLI_SENTINEL && r->master_name) {
        cli_error("--master names a master that sentinels watch: it needs "
                  "--sentinel");
        return -1;
    }
    if (r->topo != CLI_SENTINEL && r->sentinel_password_given) {
        cli_error("--sentinel-password is for the sentinels of --sentinel");
        return -1;
    }
    return cli_tls_check(r);
}

int cli_name_check(const struct cli_redis *r, const char *name)
{
    size_t len = strlen(name);
    char shown[CLI_ESCAPED_SIZE(64)];
    if (len == 0 || len > HILOCK_NAME_MAX) {
        cli_error("a lock NAME has 1 to %d bytes", HILOCK_NAME_MAX);
        return -1;
    }
    if (r->topo == CLI_CLUSTER && !keys_slot_safe(name, len)) {
        cli_error("'%s' cannot be a lock in a cluster: a NAME with a '}' "
                  "needs a hash tag of its own ('{' and '}' with something "
                  "between) for its keys to share one slot",
                  cli_escape(shown, sizeof(shown), name, len));
        return -1;
    }
    return 0;
}

const struct hilock_endpoint *cli_endpoints(const struct cli_redis *r,
                                            struct hilock_endpoint *one,
                                            size_t *n)
{
    if (r->topo != CLI_SINGLE) {
        *n = r->nlist;
        return r->list;
    }
    *one = (struct hilock_endpoint){r->host, r->port, NULL};
    *n = 1;
    return one;
}

const char *cli_redis_where(const struct cli_redis *r, char *buf,
                            size_t size)
{
    struct hilock_endpoint one;
    size_t n, len = 0;
    const struct hilock_endpoint *eps = cli_endpoints(r, &one, &n);
    buf[0] = '\0';
    for (size_t i = 0; i < n && len + 16 < size; i++) {
        if (i)
            buf[len++] = ',';
        cli_escape(buf + len, size - len - 8, eps[i].host,
                   strlen(eps[i].host));
        len += strlen(buf + len);
        len += (size_t)snprintf(buf + len, size - len, ":%d", eps[i].port);
    }
    return buf;
}

const char *cli_redis_what(const struct cli_redis *r, char *buf,
                           size_t size)
{
    char where[CLI_WHERE_SIZE], name[CLI_ESCAPED_SIZE(64)];
    cli_redis_where(r, where, sizeof(where));
    switch (r->topo) {
    case CLI_REDLOCK:
        snprintf(buf, size, "the Redlock masters (%s)", where);
        break;
    case CLI_SENTINEL:
        snprintf(buf, size, "the master '%s' of the sentinels (%s)",
                 cli_escape(name, sizeof(name), r->master_name,
                            strlen(r->master_name)), where);
        break;
    case CLI_CLUSTER:
        snprintf(buf, size, "the Redis Cluster of %s", where);
        break;
    default:
        snprintf(buf, size, "Redis at %s", where);
    }
    return buf;
}

/* Bytes that c takes in cli_escape()'s output. */
static size_t escaped_width(char c)
{
    unsigned char u = (unsigned char)c;
    return u == '\\' ? 2 : u >= 0x20 && u < 0x7f ? 1 : 4;
}

/* Write c escaped at out; the bytes written (no NUL). */
static size_t escaped_put(char *out, char c)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char u = (unsigned char)c;
    size_t w = escaped_width(c);
    if (w == 1) {
        out[0] = c;
    } else if (w == 2) {
        out[0] = out[1] = '\\';
    } else {
        out[0] = '\\';
        out[1] = 'x';
        out[2] = hex[u >> 4];
        out[3] = hex[u & 15];
    }
    return w;
}

const char *cli_escape(char *buf, size_t size, const char *s, size_t len)
{
    size_t total = 0, n = 0, i;
    for (i = 0; i < len; i++)
        total += escaped_width(s[i]);
    size_t room = total < size ? size : size - 3;  /* keep room for "..." */
    for (i = 0; i < len && n + escaped_width(s[i]) < room; i++)
        n += escaped_put(buf + n, s[i]);
    strcpy(buf + n, i < len ? "..." : "");
    return buf;
}

int cli_ms_arg(const char *what, const char *s, uint64_t *ms)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    /* digits only: strtoull would take " 5" and "+5" for 5 */
    if (errno || *s < '0' || *s > '9' || *end || v > HILOCK_MS_MAX) {
        cli_error("bad %s '%s' (milliseconds, 0..%llu)", what, s,
                  (unsigned long long)HILOCK_MS_MAX);
        return -1;
    }
    *ms = v;
    return 0;
}

int main(int argc, char **argv)
{
    const char *sub = argc > 1 ? argv[1] : NULL;
    if (!sub) {
        cli_usage(1);
        return CLI_EXIT_FAILURE;
    }
    if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0 ||
        strcmp(sub, "help") == 0) {
        cli_usage(0);
        return CLI_EXIT_OK;
    }
    if (strcmp(sub, "--version") == 0) {
        printf("hilock %d.%d.%d\n", HILOCK_VERSION_MAJOR, HILOCK_VERSION_MINOR,
               HILOCK_VERSION_PATCH);
        return CLI_EXIT_OK;
    }
    if (strcmp(sub, "run") == 0)
        return cli_run(argc - 1, argv + 1);
    if (strcmp(sub, "status") == 0)
        return cli_status(argc - 1, argv + 1);
    if (strcmp(sub, "release") == 0)
        return cli_release(argc - 1, argv + 1);
    cli_error("unknown subcommand '%s' (try hilock --help)", sub);
    return CLI_EXIT_FAILURE;
}
