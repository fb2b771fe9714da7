/* cli.h -- what the parts of the hilock command share: the Redis endpoint
 * options (one endpoint, or the Redlock masters of --redlock), the exit
 * codes, and one entry point per subcommand. */
#ifndef HILOCK_TOOLS_CLI_H
#define HILOCK_TOOLS_CLI_H

#include <stddef.h>
#include <stdint.h>

#include <hilock/hilock.h>

/* Exit codes. hilock run passes CMD's own status through (128+N when a
 * signal N killed it, as a shell reports it); the codes below are hilock's
 * own, chosen where few commands put theirs (the sysexits temporary failure,
 * and the 122..127 block next to timeout(1)'s 124 and env(1)'s 125..127). */
enum cli_exit {
    CLI_EXIT_OK = 0,
    CLI_EXIT_NO = 1,         /* status: the lock is free; release: was free */
    CLI_EXIT_BUSY = 75,      /* run -n: held by another owner (EX_TEMPFAIL) */
    CLI_EXIT_LOST = 122,     /* run: the lock was lost while CMD ran */
    CLI_EXIT_TIMEDOUT = 124, /* run: not acquired within -w */
    CLI_EXIT_FAILURE = 125,  /* usage error, Redis unreachable or failing,
                                no quorum of the --redlock masters */
    CLI_EXIT_NOEXEC = 126,   /* run: CMD found but not executable */
    CLI_EXIT_NOTFOUND = 127  /* run: CMD not found */
};

/* Longest --redlock argument accepted, in bytes: nine "host:port" entries
 * with 253-byte host names and their commas. */
#define CLI_MASTERS_TEXT_MAX 2400

/* The option that gives the Redlock masters; its short form in getopt. */
#define CLI_OPT_REDLOCK 'R'

/* The Redis endpoint, from -H/-p/-u/-a (and HILOCK_AUTH), or the Redlock
 * masters from --redlock, which the user and password apply to as well.
 * Strings borrowed from argv or the environment, except the masters' hosts,
 * which point into masters_text. */
struct cli_redis {
    const char *host;
    int port;
    const char *username;  /* NULL: AUTH with the password alone */
    const char *password;  /* NULL: no AUTH */
    int host_given;        /* -H or -p seen: they exclude --redlock */
    struct hilock_endpoint masters[HILOCK_MASTERS_MAX];
    size_t nmasters;       /* 0: the one endpoint host:port */
    char masters_text[CLI_MASTERS_TEXT_MAX];  /* --redlock, split in place */
};

/* Set the defaults: 127.0.0.1:6379, password from $HILOCK_AUTH if set. */
void cli_redis_init(struct cli_redis *r);
/* Apply one endpoint option (opt is 'H', 'p', 'u', 'a' or CLI_OPT_REDLOCK).
 * Returns 0, or -1 with a message on stderr for a bad value. */
int cli_redis_option(struct cli_redis *r, int opt, const char *value);
/* Check the options taken together (a user needs a password; -H/-p and
 * --redlock exclude each other); 0, or -1 with a message on stderr. */
int cli_redis_check(const struct cli_redis *r);
/* Parse the --redlock list "host:port,host:port,..." into r->masters
 * (masters.c): an odd number from 3 to HILOCK_MASTERS_MAX of distinct
 * entries, each an IPv4 address or a host name and a port 1..65535. 0, or
 * -1 with a message on stderr saying what is wrong. */
int cli_masters_parse(struct cli_redis *r, const char *list);
/* The endpoints r names, n of them (1 without --redlock): r->masters, or
 * host:port in *one. */
const struct hilock_endpoint *cli_endpoints(const struct cli_redis *r,
                                            struct hilock_endpoint *one,
                                            size_t *n);
/* Parse a count of milliseconds 0..2^31-1 into *ms; 0 or -1 (message). */
int cli_ms_arg(const char *what, const char *s, uint64_t *ms);
/* Room for what cli_redis_where() writes. */
#define CLI_WHERE_SIZE (CLI_MASTERS_TEXT_MAX + 16)
/* "host:port", or the masters as "host:port,host:port,...", into buf (size
 * >= CLI_WHERE_SIZE), escaped. Returns buf. */
const char *cli_redis_where(const struct cli_redis *r, char *buf,
                            size_t size);
/* Room for len bytes escaped by cli_escape(). */
#define CLI_ESCAPED_SIZE(len) (4 * (size_t)(len) + 1)
/* Write the len bytes at s into buf (size >= 8) as printable text: bytes
 * outside printable ASCII become \xNN and a backslash \\, so that a name or
 * a field from Redis cannot drive the terminal. What does not fit is cut
 * and marked with "...". Returns buf. */
const char *cli_escape(char *buf, size_t size, const char *s, size_t len);
/* Print "hilock: <fmt>" and a newline to stderr. */
void cli_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
/* The usage text, on stdout for --help (then exit 0) or on stderr. */
void cli_usage(int to_stderr);

/* The subcommands: argv[0] is the subcommand's name. Each returns the exit
 * code. */
int cli_run(int argc, char **argv);
int cli_status(int argc, char **argv);
int cli_release(int argc, char **argv);

#endif
