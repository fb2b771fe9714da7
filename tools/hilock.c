/* hilock.c -- the hilock command: run a command under a Redis lock, look at
 * a lock, break one.
 *
 *   hilock run [options] NAME [--] CMD [ARG...]
 *   hilock status [options] NAME
 *   hilock release --force [options] NAME
 *
 * Each takes one Redis endpoint (-H, -p) or, with --redlock, the Redlock
 * masters. This file parses what the subcommands share and dispatches;
 * masters.c parses the --redlock list, run.c holds the lock while a child
 * runs, inspect.c reads and breaks locks. Keys follow
 * the library's (Redisson's) layout, so the command interoperates with any
 * hilock or Redisson client guarding the same name. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hilock/hilock.h>

#include "cli.h"

void cli_usage(int to_stderr)
{
    FILE *f = to_stderr ? stderr : stdout;
    fprintf(f,
"usage: hilock run [REDIS] [-w wait_ms] [-l lease_ms | -L watchdog_ms] [-n]\n"
"                  NAME [--] CMD [ARG...]\n"
"       hilock status [REDIS] NAME\n"
"       hilock release --force [REDIS] NAME\n"
"       hilock --help | --version\n"
"  REDIS is [-H host] [-p port] [-u user] [-a password]\n"
"        or --redlock h:p,h:p,h:p[,...] [-u user] [-a password]\n"
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
"  -l ms  a fixed lease: the lock expires ms after it was taken, even while\n"
"         CMD runs (and then counts as lost)\n"
"  -L ms  instead of -l, the watchdog lease (>= 100): renewed every third of\n"
"         it while CMD runs, and what is left to others if hilock dies\n"
"         (default 30000)\n"
"status   print the holders of NAME (owner field: client id and owner tag,\n"
"         which is the pid of a hilock run), their hold counts and the ttl;\n"
"         with --redlock, what each master holds\n"
"release  --force: delete NAME whoever holds it and publish the release on\n"
"         its channel, so that waiters wake; with --redlock, on every master\n"
"\n"
"  -H host  Redis host (default 127.0.0.1)     -p port  (default 6379)\n"
"  -u user  ACL user name (needs a password)\n"
"  -a password  (or the HILOCK_AUTH variable)\n"
"  --redlock host:port,...  Redlock: an odd number (3 to 9) of independent\n"
"           masters, instead of -H/-p; a lock is held when a majority of\n"
"           them grant it. Hosts are IPv4 addresses or names; -u and -a\n"
"           apply to every master.\n"
"\n"
"exit status:\n"
"  run:     CMD's own exit status; 128+N when signal N killed CMD\n"
"           75   -n given and the lock is held by another owner\n"
"           122  the lock was lost while CMD ran (CMD and its descendants\n"
"                were sent SIGTERM if still running)\n"
"           124  the lock was not acquired within -w (-w 0 too)\n"
"           126  CMD is not executable      127  CMD was not found\n"
"           128+N  a signal N arrived while waiting for the lock\n"
"  status:  0 held, 1 free          release: 0 released, 1 was free\n"
"  all:     125 usage error; Redis unreachable, refusing or failing; a\n"
"           failed release; status, release: the key is not a lock;\n"
"           --redlock: no quorum (fewer than a majority of the masters\n"
"           answered), or status cannot tell, or release --force could\n"
"           not reach every master\n");
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
    r->host = "127.0.0.1";
    r->port = 6379;
    r->username = NULL;
    r->password = auth && *auth ? auth : NULL;
    r->host_given = 0;
    r->nmasters = 0;
}

int cli_redis_option(struct cli_redis *r, int opt, const char *value)
{
    char *end;
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
        return cli_masters_parse(r, value);
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
}

int cli_redis_check(const struct cli_redis *r)
{
    if (r->username && !r->password) {
        cli_error("-u needs a password (-a, or the HILOCK_AUTH variable)");
        return -1;
    }
    if (r->nmasters && r->host_given) {
        cli_error("-H/-p and --redlock exclude each other: --redlock names "
                  "every master with its port");
        return -1;
    }
    return 0;
}

const struct hilock_endpoint *cli_endpoints(const struct cli_redis *r,
                                            struct hilock_endpoint *one,
                                            size_t *n)
{
    if (r->nmasters) {
        *n = r->nmasters;
        return r->masters;
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
    if (errno || !*s || *end || *s == '-' || v > HILOCK_MS_MAX) {
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
