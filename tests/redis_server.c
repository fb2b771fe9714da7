/* SPDX-License-Identifier: BSD-3-Clause */
/* redis_server.c -- throwaway redis-server processes for tests.
 *
 * Why the care: test programs run in parallel and Check runs each test in a
 * forked child that may be killed by a timeout. So every server has its own
 * port and directory, is started with PR_SET_PDEATHSIG(SIGKILL) in its own
 * process group (a killpg of the test does not reach it, the death of its
 * parent does), and is trusted only once its own log (in its private
 * directory) says it is listening: a PONG from some other test's server on
 * a reused port must not count. Directories live in one session directory
 * per runner process, removed at its exit.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "redis_server.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RS_MAX_ARGS 64
#define RS_START_ATTEMPTS 8
#define RS_STOP_TIMEOUT_MS 5000

struct rs_server {
    pid_t pid;              /* 0 while not running */
    pid_t owner;            /* process that started it */
    int port;
    bool paused;
    int start_timeout_ms;
    char dir[PATH_MAX];
    char conf_path[PATH_MAX + 16]; /* "" when no conf text was given */
    char sock_path[PATH_MAX + 16]; /* "" without a unix socket */
    char *args[RS_MAX_ARGS];       /* copies of the extra arguments */
    char *tls_args[11];            /* TLS only: the TLS arguments, NULL-ended */
    int nargs;
    struct rs_server *next; /* registry of running servers */
};

static struct rs_server *registry;
static bool atexit_installed;
/* Every server directory lives in one session directory, removed at exit by
 * the process that made it. A Check runner calls rs_init() before forking
 * its tests, so the directories of tests that crash or time out go too. */
static char session_dir[PATH_MAX - 64];
static pid_t session_owner;

long long rs_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void rs_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

/* ---- registry and atexit --------------------------------------------- */

static void registry_add(struct rs_server *srv)
{
    srv->next = registry;
    registry = srv;
}

static void registry_remove(struct rs_server *srv)
{
    for (struct rs_server **p = &registry; *p; p = &(*p)->next) {
        if (*p == srv) {
            *p = srv->next;
            return;
        }
    }
}

static int rm_entry(const char *path, const struct stat *sb, int flag,
                    struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void remove_dir(const char *dir)
{
    if (dir[0])
        nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Kill what this process started and did not stop. Entries inherited over
 * fork() belong to the parent and are left alone. */
static void rs_atexit(void)
{
    pid_t self = getpid();
    struct rs_server *srv = registry;
    while (srv) {
        struct rs_server *next = srv->next;
        if (srv->owner == self) {
            if (srv->pid > 0) {
                kill(srv->pid, SIGKILL);
                waitpid(srv->pid, NULL, 0);
                srv->pid = 0;
            }
            remove_dir(srv->dir);
        }
        srv = next;
    }
    if (session_owner == self)
        remove_dir(session_dir);
}

/* Remove session directories left by runners that were killed before their
 * atexit could run (meson's timeout, Ctrl-C). The owner's pid is in the
 * name; only our own directories whose owner is gone are touched. */
static void sweep_stale_sessions(const char *tmp)
{
    DIR *d = opendir(tmp);
    struct dirent *e;
    if (!d)
        return;
    while ((e = readdir(d)) != NULL) {
        char path[PATH_MAX];
        struct stat st;
        long pid;
        char tail[16];
        if (sscanf(e->d_name, "hilock-rs-%ld-%15s", &pid, tail) != 2 ||
            pid <= 0 || (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
            continue;
        snprintf(path, sizeof path, "%s/%s", tmp, e->d_name);
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
            st.st_uid == getuid())
            remove_dir(path);
    }
    closedir(d);
}

int rs_init(void)
{
    const char *tmp = getenv("TMPDIR");
    if (session_dir[0])
        return 0;
    if (!tmp || !tmp[0])
        tmp = "/tmp";
    sweep_stale_sessions(tmp);
    snprintf(session_dir, sizeof session_dir, "%s/hilock-rs-%ld-XXXXXX", tmp,
             (long)getpid());
    if (!mkdtemp(session_dir)) {
        fprintf(stderr, "rs: mkdtemp %s: %s\n", session_dir, strerror(errno));
        session_dir[0] = '\0';
        return -1;
    }
    session_owner = getpid();
    if (!atexit_installed) {
        atexit(rs_atexit);
        atexit_installed = true;
    }
    return 0;
}

/* ---- processes --------------------------------------------------------- */

/* A port that was free on 127.0.0.1 a moment ago, or -1. */
static int pick_port(void)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = 0;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        close(fd);
        return -1;
    }
    close(fd);
    return ntohs(sa.sin_port);
}

/* The server program: HILOCK_REDIS_SERVER, or redis-server from PATH. */
static const char *server_bin(void)
{
    const char *bin = getenv("HILOCK_REDIS_SERVER");
    return bin && bin[0] ? bin : "redis-server";
}

/* major * 10000 + minor * 100 + patch from a --version line: "Redis
 * server v=7.0.15 sha=...", "Valkey server v=8.1.1 ...", "KeyDB server
 * v=6.3.4 ..."; 0 without a "v=". */
static int parse_version(const char *line)
{
    const char *v = strstr(line, " v=");
    int major = 0, minor = 0, patch = 0;
    if (!v || sscanf(v + 3, "%d.%d.%d", &major, &minor, &patch) < 2)
        return 0;
    return major * 10000 + minor * 100 + patch;
}

/* Run the server program with --version and read its one line; the
 * version, or 0. */
static int ask_version(void)
{
    int fd[2];
    if (pipe(fd) != 0)
        return 0;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return 0;
    }
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        execlp(server_bin(), server_bin(), "--version", (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    char line[512];
    size_t n = 0;
    ssize_t k;
    while (n < sizeof line - 1 &&
           (k = read(fd[0], line + n, sizeof line - 1 - n)) != 0) {
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            break;
        n += (size_t)k;
    }
    line[n] = '\0';
    close(fd[0]);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return parse_version(line);
}

int rs_server_version(void)
{
    static int version = -1;
    if (version < 0)
        version = ask_version();
    return version;
}

/* In the child: tie our life to the parent's, detach from its process
 * group and descriptors, exec redis-server. Never returns. */
static void child_exec(struct rs_server *srv, pid_t parent)
{
    char port[16], logfile[PATH_MAX + 16];
    const char *argv[RS_MAX_ARGS + 24];
    int n = 0;

    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(127); /* the parent is already gone */
    setpgid(0, 0);
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(devnull, 2);
    }
    long maxfd = sysconf(_SC_OPEN_MAX);
    if (maxfd < 0 || maxfd > 65536)
        maxfd = 65536;
    for (int fd = 3; fd < maxfd; fd++)
        close(fd);

    snprintf(port, sizeof port, "%d", srv->port);
    snprintf(logfile, sizeof logfile, "%s/redis.log", srv->dir);
    argv[n++] = server_bin();
    if (srv->conf_path[0])
        argv[n++] = srv->conf_path;
    const char *fixed[] = {"--port", srv->tls_args[0] ? "0" : port,
                           "--bind", "127.0.0.1",
                           "--save", "", "--appendonly", "no",
                           "--dir", srv->dir, "--daemonize", "no",
                           "--logfile", logfile, "--protected-mode", "no"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        argv[n++] = fixed[i];
    if (srv->sock_path[0]) {
        argv[n++] = "--unixsocket";
        argv[n++] = srv->sock_path;
        argv[n++] = "--unixsocketperm";
        argv[n++] = "700";
    }
    for (int i = 0; srv->tls_args[i]; i++)
        argv[n++] = strcmp(srv->tls_args[i], "PORT") ? srv->tls_args[i] : port;
    for (int i = 0; i < srv->nargs; i++)
        argv[n++] = srv->args[i];
    argv[n] = NULL;
    execvp(argv[0], (char *const *)argv);
    _exit(127);
}

/* Fork and exec the server on srv->port; sets srv->pid. 0 or -1. */
static int spawn(struct rs_server *srv)
{
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "rs: fork: %s\n", strerror(errno));
        return -1;
    }
    if (pid == 0)
        child_exec(srv, parent);
    srv->pid = pid;
    srv->paused = false;
    return 0;
}

/* The size of the server's log file now (0 when absent): the start of the
 * next run's lines, since a restart appends to the same file. */
static long log_size(const struct rs_server *srv)
{
    char path[PATH_MAX + 16];
    struct stat st;
    snprintf(path, sizeof path, "%s/redis.log", srv->dir);
    return stat(path, &st) == 0 ? (long)st.st_size : 0;
}

/* True when the log, past offset, says the server is listening. The log is
 * in our private directory, so this proves our child owns the port, even
 * when a password makes INFO unusable. The line that says so differs: a
 * Sentinel logs its ID once it listens; KeyDB 6.3 writes "Ready to accept
 * connections" only when it has a TLS port, but every server writes
 * "Server initialized" after binding its ports (before loading its data:
 * answers() then waits for the end of a load). */
static bool log_says_ready(const struct rs_server *srv, long offset)
{
    char path[PATH_MAX + 16], line[1024];
    bool ready = false;
    snprintf(path, sizeof path, "%s/redis.log", srv->dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    if (fseek(f, offset, SEEK_SET) == 0) {
        while (!ready && fgets(line, sizeof line, f))
            ready = strstr(line, "Ready to accept connections") != NULL ||
                    strstr(line, "Server initialized") != NULL ||
                    strstr(line, "Sentinel ID is ") != NULL;
    }
    fclose(f);
    return ready;
}

/* True when the server answers PING (PONG or an error such as NOAUTH)
 * other than LOADING. */
static bool answers(const struct rs_server *srv, int timeout_ms)
{
    redisContext *c = rs_connect_timeout(srv, timeout_ms);
    if (!c)
        return false;
    redisReply *r = redisCommand(c, "PING");
    bool ok = r != NULL && !(r->type == REDIS_REPLY_ERROR && r->str &&
                             strncmp(r->str, "LOADING", 7) == 0);
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return ok;
}

/* Print the end of the server's log to stderr, for a failed start. */
static void dump_log(const struct rs_server *srv)
{
    char path[PATH_MAX + 16], buf[2048];
    snprintf(path, sizeof path, "%s/redis.log", srv->dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (fseek(f, -(long)(sizeof buf - 1), SEEK_END) != 0)
        rewind(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    fprintf(stderr, "rs: tail of %s:\n%s\n", path, buf);
}

/* Wait until our own child answers on srv->port. Returns 0; 1 when the
 * child exited (typically: port taken), -1 on timeout (child killed). */
static int wait_ready(struct rs_server *srv, long log_offset)
{
    long long deadline = rs_now_ms() + srv->start_timeout_ms;
    int status;
    while (rs_now_ms() < deadline) {
        pid_t w = waitpid(srv->pid, &status, WNOHANG);
        if (w == srv->pid) {
            srv->pid = 0;
            return 1;
        }
        if (log_says_ready(srv, log_offset) && answers(srv, 500))
            return 0;
        rs_sleep_ms(10);
    }
    fprintf(stderr, "rs: redis-server on port %d did not answer in %d ms\n",
            srv->port, srv->start_timeout_ms);
    dump_log(srv);
    kill(srv->pid, SIGKILL);
    waitpid(srv->pid, NULL, 0);
    srv->pid = 0;
    return -1;
}

/* Start the process, on a fresh port unless keep_port. 0 or -1. */
static int launch(struct rs_server *srv, bool keep_port)
{
    for (int attempt = 0; attempt < RS_START_ATTEMPTS; attempt++) {
        if (!keep_port) {
            srv->port = pick_port();
            if (srv->port < 0) {
                fprintf(stderr, "rs: no free port: %s\n", strerror(errno));
                return -1;
            }
        }
        long log_offset = log_size(srv);
        if (spawn(srv) != 0)
            return -1;
        int rc = wait_ready(srv, log_offset);
        if (rc == 0)
            return 0;
        if (rc < 0)
            return -1;
        /* exited early: the port was probably taken; try again */
        if (keep_port)
            rs_sleep_ms(100 * (attempt + 1));
    }
    fprintf(stderr, "rs: redis-server kept exiting at start (port %d)\n",
            srv->port);
    dump_log(srv);
    return -1;
}

/* Stop the process: SIGTERM (or SIGKILL when hard), reap, SIGKILL after
 * RS_STOP_TIMEOUT_MS. */
static void terminate(struct rs_server *srv, bool hard)
{
    if (srv->pid <= 0)
        return;
    kill(srv->pid, hard ? SIGKILL : SIGTERM);
    if (srv->paused)
        kill(srv->pid, SIGCONT);
    long long deadline = rs_now_ms() + RS_STOP_TIMEOUT_MS;
    while (!hard && rs_now_ms() < deadline) {
        if (waitpid(srv->pid, NULL, WNOHANG) == srv->pid)
            goto reaped;
        rs_sleep_ms(5);
    }
    kill(srv->pid, SIGKILL);
    waitpid(srv->pid, NULL, 0);
reaped:
    srv->pid = 0;
    srv->paused = false;
}

/* ---- public ------------------------------------------------------------- */

/* The TLS arguments of o (none without a certificate); "PORT" stands for
 * the port, known only at launch. 0 or -1. */
static int copy_tls(struct rs_server *srv, const struct rs_tls *t)
{
    const char *a[] = {"--tls-port", "PORT", "--tls-cert-file", t->cert_file,
                       "--tls-key-file", t->key_file, "--tls-ca-cert-file",
                       t->ca_file, "--tls-auth-clients",
                       t->auth_clients ? "yes" : "no"};
    if (!t->cert_file)
        return 0;
    if (!t->key_file || !t->ca_file)
        return -1;
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++)
        if (!(srv->tls_args[i] = strdup(a[i])))
            return -1;
    snprintf(srv->sock_path, sizeof srv->sock_path, "%s/redis.sock",
             srv->dir);
    return 0;
}

static int copy_options(struct rs_server *srv, const struct rs_options *o)
{
    if (o && o->args) {
        for (int i = 0; o->args[i]; i++) {
            if (srv->nargs == RS_MAX_ARGS) {
                fprintf(stderr, "rs: too many extra arguments\n");
                return -1;
            }
            srv->args[srv->nargs] = strdup(o->args[i]);
            if (!srv->args[srv->nargs++])
                return -1;
        }
    }
    if (o && o->unix_socket)
        snprintf(srv->sock_path, sizeof srv->sock_path, "%s/redis.sock",
                 srv->dir);
    if (o && copy_tls(srv, &o->tls) != 0)
        return -1;
    if (o && o->conf) {
        snprintf(srv->conf_path, sizeof srv->conf_path, "%s/redis.conf",
                 srv->dir);
        FILE *f = fopen(srv->conf_path, "w");
        if (!f || fputs(o->conf, f) < 0 || fputc('\n', f) < 0) {
            fprintf(stderr, "rs: writing %s: %s\n", srv->conf_path,
                    strerror(errno));
            if (f)
                fclose(f);
            return -1;
        }
        fclose(f);
    }
    return 0;
}

static void free_server(struct rs_server *srv)
{
    remove_dir(srv->dir);
    for (int i = 0; i < srv->nargs; i++)
        free(srv->args[i]);
    for (int i = 0; srv->tls_args[i]; i++)
        free(srv->tls_args[i]);
    free(srv);
}

struct rs_server *rs_start_opts(const struct rs_options *opts)
{
    if (rs_init() != 0)
        return NULL;
    struct rs_server *srv = calloc(1, sizeof *srv);
    if (!srv)
        return NULL;
    snprintf(srv->dir, sizeof srv->dir, "%s/srv-XXXXXX", session_dir);
    if (!mkdtemp(srv->dir)) {
        fprintf(stderr, "rs: mkdtemp %s: %s\n", srv->dir, strerror(errno));
        srv->dir[0] = '\0';
        free_server(srv);
        return NULL;
    }
    srv->owner = getpid();
    srv->start_timeout_ms =
        opts && opts->start_timeout_ms > 0 ? opts->start_timeout_ms : 5000;
    srv->port = opts ? opts->port : 0;
    registry_add(srv);
    if (copy_options(srv, opts) != 0 || launch(srv, srv->port > 0) != 0) {
        registry_remove(srv);
        free_server(srv);
        return NULL;
    }
    return srv;
}

struct rs_server *rs_start(const char *const *args)
{
    struct rs_options o;
    memset(&o, 0, sizeof o);
    o.args = args;
    return rs_start_opts(&o);
}

void rs_stop(struct rs_server *srv)
{
    if (!srv)
        return;
    terminate(srv, false);
    registry_remove(srv);
    free_server(srv);
}

int rs_free_port(void)
{
    return pick_port();
}

int rs_port(const struct rs_server *srv)
{
    return srv ? srv->port : -1;
}

pid_t rs_pid(const struct rs_server *srv)
{
    return srv ? srv->pid : 0;
}

const char *rs_dir(const struct rs_server *srv)
{
    return srv ? srv->dir : NULL;
}

const char *rs_unix_path(const struct rs_server *srv)
{
    return srv && srv->sock_path[0] ? srv->sock_path : NULL;
}

int rs_kill9(struct rs_server *srv)
{
    if (srv->pid <= 0)
        return -1;
    terminate(srv, true);
    return 0;
}

int rs_kill9_restart(struct rs_server *srv)
{
    terminate(srv, true);
    return launch(srv, true);
}

int rs_restart(struct rs_server *srv)
{
    terminate(srv, false);
    return launch(srv, true);
}

int rs_pause(struct rs_server *srv)
{
    if (srv->pid <= 0 || kill(srv->pid, SIGSTOP) != 0)
        return -1;
    srv->paused = true;
    return 0;
}

int rs_resume(struct rs_server *srv)
{
    if (srv->pid <= 0 || kill(srv->pid, SIGCONT) != 0)
        return -1;
    srv->paused = false;
    return 0;
}

/* ---- synchronous helpers ------------------------------------------------- */

redisContext *rs_connect_timeout(const struct rs_server *srv, int timeout_ms)
{
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    /* A TLS-only server is reached over its unix socket. */
    redisContext *c =
        srv->tls_args[0]
            ? redisConnectUnixWithTimeout(srv->sock_path, tv)
            : redisConnectWithTimeout("127.0.0.1", srv->port, tv);
    if (!c)
        return NULL;
    if (c->err || redisSetTimeout(c, tv) != REDIS_OK) {
        redisFree(c);
        return NULL;
    }
    return c;
}

redisContext *rs_connect(const struct rs_server *srv)
{
    return rs_connect_timeout(srv, 2000);
}

redisContext *rs_subscriber(const struct rs_server *srv, const char *channel)
{
    redisContext *c = rs_connect(srv);
    if (!c)
        return NULL;
    redisReply *r = redisCommand(c, "SUBSCRIBE %s", channel);
    if (r && r->type == REDIS_REPLY_ARRAY) {
        freeReplyObject(r);
        return c;
    }
    fprintf(stderr, "rs: SUBSCRIBE %s on port %d: %s\n", channel, srv->port,
            r ? "not confirmed" : c->errstr);
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return NULL;
}

int rs_ping(const struct rs_server *srv, int timeout_ms)
{
    redisContext *c = rs_connect_timeout(srv, timeout_ms);
    int rc = -1;
    if (!c)
        return -1;
    redisReply *r = redisCommand(c, "PING");
    if (r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0)
        rc = 0;
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return rc;
}

redisReply *rs_command_argv(const struct rs_server *srv, int argc,
                            const char *const *argv, const size_t *argvlen)
{
    redisContext *c = rs_connect(srv);
    if (!c) {
        fprintf(stderr, "rs: cannot connect to 127.0.0.1:%d\n", srv->port);
        return NULL;
    }
    redisReply *r = redisCommandArgv(c, argc, (const char **)argv, argvlen);
    if (!r)
        fprintf(stderr, "rs: %s on port %d: %s\n", argv[0], srv->port,
                c->errstr);
    redisFree(c);
    return r;
}

/* Collect a NULL-terminated variadic list after cmd and run it. */
static redisReply *command_va(const struct rs_server *srv, const char *cmd,
                              va_list ap)
{
    const char *argv[RS_MAX_ARGS];
    int argc = 0;
    argv[argc++] = cmd;
    for (const char *a = va_arg(ap, const char *); a;
         a = va_arg(ap, const char *)) {
        if (argc == RS_MAX_ARGS) {
            fprintf(stderr, "rs: too many command arguments\n");
            return NULL;
        }
        argv[argc++] = a;
    }
    return rs_command_argv(srv, argc, argv, NULL);
}

long long rs_int(const struct rs_server *srv, const char *cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    long long v = rs_vint(srv, cmd, ap);
    va_end(ap);
    return v;
}

long long rs_vint(const struct rs_server *srv, const char *cmd, va_list ap)
{
    redisReply *r = command_va(srv, cmd, ap);
    long long v = RS_ERR;
    if (!r)
        return RS_ERR;
    if (r->type == REDIS_REPLY_INTEGER) {
        v = r->integer;
    } else if (r->type == REDIS_REPLY_NIL) {
        v = RS_NIL;
    } else if (r->type == REDIS_REPLY_STRING ||
               r->type == REDIS_REPLY_STATUS) {
        char *end;
        errno = 0;
        v = strtoll(r->str, &end, 10);
        if (errno || end == r->str || *end)
            v = RS_ERR;
    }
    freeReplyObject(r);
    return v;
}

char *rs_str(const struct rs_server *srv, const char *cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    redisReply *r = command_va(srv, cmd, ap);
    va_end(ap);
    char *s = NULL;
    if (!r)
        return NULL;
    if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ||
        r->type == REDIS_REPLY_ERROR) {
        s = malloc(r->len + 1);
        if (s) {
            memcpy(s, r->str, r->len);
            s[r->len] = '\0';
        }
    } else if (r->type == REDIS_REPLY_INTEGER) {
        s = malloc(24);
        if (s)
            snprintf(s, 24, "%lld", r->integer);
    }
    freeReplyObject(r);
    return s;
}

char *rs_info(const struct rs_server *srv, const char *section,
              const char *field)
{
    char *info = rs_str(srv, "INFO", section, (char *)NULL);
    char *out = NULL;
    size_t flen = strlen(field);
    if (!info)
        return NULL;
    for (char *line = info; line && *line;) {
        char *eol = strpbrk(line, "\r\n");
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        if (len > flen && strncmp(line, field, flen) == 0 &&
            line[flen] == ':') {
            out = strndup(line + flen + 1, len - flen - 1);
            break;
        }
        line = eol ? eol + strspn(eol, "\r\n") : NULL;
    }
    free(info);
    return out;
}

long long rs_cmdstat_calls(const struct rs_server *srv, const char *name)
{
    char field[256];
    snprintf(field, sizeof field, "cmdstat_%s", name);
    char *v = rs_info(srv, "commandstats", field);
    if (!v) {
        /* absent means never called, but tell it apart from no server */
        return rs_ping(srv, 2000) == 0 ? 0 : -1;
    }
    long long calls = -1;
    const char *p = strstr(v, "calls=");
    if (p)
        calls = strtoll(p + strlen("calls="), NULL, 10);
    free(v);
    return calls;
}

long long rs_numsub(const struct rs_server *srv, const char *channel)
{
    const char *argv[] = {"PUBSUB", "NUMSUB", channel};
    redisReply *r = rs_command_argv(srv, 3, argv, NULL);
    long long n = -1;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_INTEGER)
        n = r->element[1]->integer;
    if (r)
        freeReplyObject(r);
    return n;
}
