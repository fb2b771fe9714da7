/* cli.h -- what the parts of the hilock command share: the Redis endpoint
 * options (one endpoint, the Redlock masters of --redlock, the Sentinels of
 * --sentinel or the cluster nodes of --cluster), the exit codes, and one
 * entry point per subcommand. */
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
                                no quorum of the --redlock masters, no
                                master from the sentinels */
    CLI_EXIT_NOEXEC = 126,   /* run: CMD found but not executable */
    CLI_EXIT_NOTFOUND = 127  /* run: CMD not found */
};

/* Where the locks live: one endpoint (-H, -p), the Redlock masters
 * (--redlock), the master that Sentinels name (--sentinel, --master), or a
 * Redis Cluster (--cluster). One at a time. */
enum cli_topo { CLI_SINGLE = 0, CLI_REDLOCK, CLI_SENTINEL, CLI_CLUSTER };

/* Longest endpoint list accepted (--redlock, --sentinel, --cluster), in
 * bytes: HILOCK_SEEDS_MAX "host:port" entries with 253-byte host names and
 * their commas. */
#define CLI_LIST_TEXT_MAX 4200

/* The options without a short form, as getopt_long returns them. */
enum cli_opt {
    CLI_OPT_REDLOCK = 256,
    CLI_OPT_SENTINEL,
    CLI_OPT_MASTER,
    CLI_OPT_SENTINEL_PASSWORD,
    CLI_OPT_CLUSTER,
    CLI_OPT_WAIT_REPLICAS,    /* run only */
    CLI_OPT_WAIT_TIMEOUT,     /* run only */
    CLI_OPT_READ,             /* run only */
    CLI_OPT_WRITE,            /* run only */
    CLI_OPT_PERMITS,          /* run only */
    CLI_OPT_TLS,
    CLI_OPT_CACERT,
    CLI_OPT_CERT,
    CLI_OPT_KEY,
    CLI_OPT_SNI,
    CLI_OPT_INSECURE,
    CLI_OPT_FAIR,             /* run only */
    CLI_OPT_FENCE             /* run only */
};

/* The long options of the endpoint, for every subcommand's option table. */
#define CLI_REDIS_LONGOPTS                                                   \
    {"redlock", required_argument, NULL, CLI_OPT_REDLOCK},                  \
    {"sentinel", required_argument, NULL, CLI_OPT_SENTINEL},                \
    {"master", required_argument, NULL, CLI_OPT_MASTER},                    \
    {"sentinel-password", required_argument, NULL,                          \
     CLI_OPT_SENTINEL_PASSWORD},                                            \
    {"cluster", required_argument, NULL, CLI_OPT_CLUSTER},                  \
    {"tls", no_argument, NULL, CLI_OPT_TLS},                                \
    {"cacert", required_argument, NULL, CLI_OPT_CACERT},                    \
    {"cert", required_argument, NULL, CLI_OPT_CERT},                        \
    {"key", required_argument, NULL, CLI_OPT_KEY},                          \
    {"sni", required_argument, NULL, CLI_OPT_SNI},                          \
    {"insecure", no_argument, NULL, CLI_OPT_INSECURE}

/* The Redis endpoint, from -H/-p/-u/-a (and HILOCK_AUTH), or the list of
 * one of --redlock, --sentinel (with --master) or --cluster, which the user
 * and password apply to as well (with --sentinel: to the master, not to
 * the sentinels, which take --sentinel-password or HILOCK_SENTINEL_AUTH).
 * Strings borrowed from argv or the environment, except the listed hosts,
 * which point into list_text. */
struct cli_redis {
    const char *host;
    int port;
    const char *username;  /* NULL: AUTH with the password alone */
    const char *password;  /* NULL: no AUTH */
    int host_given;        /* -H or -p seen: they exclude the lists */
    enum cli_topo topo;
    struct hilock_endpoint list[HILOCK_SEEDS_MAX]; /* masters, sentinels or
                                                      cluster nodes */
    size_t nlist;          /* 0 for CLI_SINGLE */
    const char *master_name;        /* --master */
    const char *sentinel_password;  /* NULL: no AUTH to the sentinels */
    int sentinel_password_given;    /* --sentinel-password seen */
    char list_text[CLI_LIST_TEXT_MAX];  /* the list, split in place */
    /* --tls (mode VERIFY, or NO_VERIFY with --insecure), --cacert, --cert,
     * --key, --sni: for every connection, the sentinels' too. */
    struct hilock_tls tls;
    int tls_given;                  /* --tls seen */
    int tls_detail_given;           /* one of the others seen */
};

/* Set the defaults: 127.0.0.1:6379, password from $HILOCK_AUTH if set. */
void cli_redis_init(struct cli_redis *r);
/* Apply one endpoint option (opt is 'H', 'p', 'u', 'a' or one of the
 * CLI_REDIS_LONGOPTS). Returns 0, or -1 with a message on stderr for a bad
 * value; -1 without a message for any other opt. */
int cli_redis_option(struct cli_redis *r, int opt, const char *value);
/* Check the options taken together (a user needs a password; -H/-p and the
 * lists exclude each other; --sentinel and --master go together); 0, or -1
 * with a message on stderr. */
int cli_redis_check(const struct cli_redis *r);
/* Whether name can be a lock NAME where r points: 1 to HILOCK_NAME_MAX
 * bytes, and in a cluster every key of it in one slot (keys_slot_safe). 0,
 * or -1 with a message on stderr. */
int cli_name_check(const struct cli_redis *r, const char *name);
/* Parse the list "host:port,host:port,..." of --redlock, --sentinel or
 * --cluster (topo says which) into r->list (endpoints.c): distinct
 * entries, each an IPv4 address or a host name and a port 1..65535; for
 * --redlock an odd number from 3 to HILOCK_MASTERS_MAX, else 1 to
 * HILOCK_SEEDS_MAX. Only one list may be given. 0, or -1 with a message on
 * stderr saying what is wrong. */
int cli_list_parse(struct cli_redis *r, enum cli_topo topo, const char *list);
/* The option that gives the list of topo ("--redlock", ...; "-H/-p" for
 * CLI_SINGLE). */
const char *cli_topo_option(enum cli_topo topo);
/* The endpoints of a single endpoint or the Redlock masters, n of them (1
 * for CLI_SINGLE): r->list, or host:port in *one. */
const struct hilock_endpoint *cli_endpoints(const struct cli_redis *r,
                                            struct hilock_endpoint *one,
                                            size_t *n);
/* Parse a count of milliseconds 0..2^31-1, digits only, into *ms; 0 or
 * -1 (message). */
int cli_ms_arg(const char *what, const char *s, uint64_t *ms);
/* Room for what cli_redis_where() writes. */
#define CLI_WHERE_SIZE (CLI_LIST_TEXT_MAX + 16)
/* "host:port", or the list as "host:port,host:port,...", into buf (size
 * >= CLI_WHERE_SIZE), escaped. Returns buf. */
const char *cli_redis_where(const struct cli_redis *r, char *buf,
                            size_t size);
/* Room for what cli_redis_what() writes. */
#define CLI_WHAT_SIZE (CLI_WHERE_SIZE + 320)
/* What r points at, for messages: "Redis at host:port", "the Redlock
 * masters (...)", "the master 'NAME' of the sentinels (...)", "the Redis
 * Cluster of (...)", into buf (size >= CLI_WHAT_SIZE). Returns buf. */
const char *cli_redis_what(const struct cli_redis *r, char *buf,
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
/* The permits semaphore name has in all where r points (inspect.c): the
 * ones available plus the expiring permits taken, live or expired, read in
 * one atomic step. 0 with the number in *total (0: none set), or -1 with a
 * message on stderr. */
int cli_semaphore_total(const struct cli_redis *r, const char *name,
                        long long *total);
/* What name holds where r points (inspect.c), for a message: "a lock",
 * "a read-write lock", "a semaphore", "nothing" (free now), or "a key of
 * another type"; NULL (message on stderr) when Redis did not answer. */
const char *cli_kind_found(const struct cli_redis *r, const char *name);
/* The usage text, on stdout for --help (then exit 0) or on stderr. */
void cli_usage(int to_stderr);

/* The subcommands: argv[0] is the subcommand's name. Each returns the exit
 * code. */
int cli_run(int argc, char **argv);
int cli_status(int argc, char **argv);
int cli_release(int argc, char **argv);

#endif
