/* SPDX-License-Identifier: BSD-3-Clause */
/* inspect.c -- hilock status and hilock release --force.
 *
 * The library answers "do *I* hold it"; an operator asks "who holds it". These
 * two read and break a lock from outside, so they use a plain blocking
 * hiredis connection, and one Lua script each so that what they see or do is
 * one atomic step on the server. They rely on the key layout the library
 * documents: the lock is a hash of "<client-id>:<owner-tag>" -> hold count
 * (plus "<field>:rid" bookkeeping) with a PEXPIRE lease, and the final
 * release publishes "0" on the lock's channel (keys_channel_text:
 * "redisson_lock__channel:{NAME}", without the added braces for a NAME
 * with a hash tag of its own). The scripts check
 * that layout first: a key that does not have it is some other program's
 * data, shown as such and never deleted. Names, fields and server texts are
 * printed escaped (cli_escape), since they are anyone's bytes.
 *
 * With --redlock the same script runs on each master in turn, one
 * connection after the other (each bounded by TIMEOUT_MS): status shows what
 * every master holds and calls the lock held when one owner holds it on a
 * majority of them, free when no owner can (counting the masters that did
 * not answer as possibly holding it), and says it cannot tell otherwise;
 * release --force deletes it on every master that answers, each master
 * checking its own key. What a master said is not what it says a moment
 * later: these are a snapshot, master by master, not one atomic step.
 *
 * With --sentinel the script runs on the master that the sentinels name,
 * asked of them in turn and confirmed with ROLE. With --cluster it is sent
 * to the first node of the list that answers and follows MOVED and ASK to
 * the master of the name's slot (CLUSTER_HOPS redirections at most). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include <hilock/hilock.h>

#include "cli.h"
#include "keys.h"  /* src/: the key layout, defined once */
#include "reply.h" /* src/: reply_redirect, the parser of MOVED and ASK */
#include "tls.h"   /* src/: the library's TLS contexts and name checks */

#define TIMEOUT_MS 2000

/* What KEYS[1] is, read in one atomic step: {'none'}; {'lock', HGETALL}
 * for a hash laid out as a lock (owner fields "<uuid>:<tag>" with a decimal
 * hold count, at least one, and "<owner field>:rid" and
 * "<owner field>:first:rid" bookkeeping fields);
 * {'field', f} for a hash with a field f that does not fit; {'noowner'} for
 * one with bookkeeping fields only; {t} for a key of another type t. Both
 * scripts start with it, so that nothing but a lock is shown as one or
 * deleted as one. */
#define LAYOUT_LUA                                                           \
    "local function layout(key)\n"                                          \
    "  local t = redis.call('type', key).ok\n"                              \
    "  if t ~= 'hash' then return {t} end\n"                                \
    "  local all = redis.call('hgetall', key)\n"                            \
    "  local owner = '^' .. string.rep('%x', 8) .. '%-' ..\n"               \
    "    string.rep('%x', 4) .. '%-' .. string.rep('%x', 4) .. '%-' ..\n"   \
    "    string.rep('%x', 4) .. '%-' .. string.rep('%x', 12) .. ':%d+'\n"   \
    "  local owners = 0\n"                                                  \
    "  for i = 1, #all, 2 do\n"                                             \
    "    if string.find(all[i], owner .. '$') and\n"                        \
    "       string.find(all[i + 1], '^%d+$') then\n"                        \
    "      owners = owners + 1\n"                                           \
    "    elseif not string.find(all[i], owner .. '" KEYS_RID_SUFFIX "$') and\n" \
    "           not string.find(all[i],\n"                                  \
    "                           owner .. '" KEYS_FIRST_RID_SUFFIX "$') then\n" \
    "      return {'field', all[i]}\n"                                      \
    "    end\n"                                                             \
    "  end\n"                                                               \
    "  if owners == 0 then return {'noowner'} end\n"                        \
    "  return {'lock', all}\n"                                              \
    "end\n"

/* The kinds beside a mutex, in the library's (Redisson's) layouts: a hash
 * with a "mode" field is a read-write lock, {'rwlock', HGETALL, PTTL}; a
 * number, or no key while expiring permits are taken (their sorted set
 * permits), is a semaphore, {'semaphore', available, the permits taken
 * with their expiry (ZRANGE WITHSCORES), the server's time in ms}; else
 * nil. */
#define KINDS_LUA                                                            \
    "local function kind(key, permits)\n"                                   \
    "  local t = redis.call('type', key).ok\n"                              \
    "  if t == 'hash' and redis.call('hexists', key, 'mode') == 1 then\n"   \
    "    return {'rwlock', redis.call('hgetall', key),\n"                   \
    "            redis.call('pttl', key)}\n"                                \
    "  end\n"                                                               \
    "  local v = t == 'string' and redis.call('get', key)\n"                \
    "  if (v and string.find(v, '^%-?%d+$')) or\n"                          \
    "     (t == 'none' and redis.call('exists', permits) == 1) then\n"      \
    "    local now = redis.call('time')\n"                                  \
    "    return {'semaphore', v or '0',\n"                                  \
    "            redis.call('zrange', permits, 0, -1, 'withscores'),\n"     \
    "            now[1] * 1000 + math.floor(now[2] / 1000)}\n"              \
    "  end\n"                                                               \
    "end\n"

/* kind(KEYS[1], KEYS[2]) or layout(KEYS[1]), and for a lock its PTTL as a
 * third element. */
static const char status_lua[] =
    LAYOUT_LUA
    KINDS_LUA
    "local r = kind(KEYS[1], KEYS[2]) or layout(KEYS[1])\n"
    "if r[1] == 'lock' then r[3] = redis.call('pttl', KEYS[1]) end\n"
    "return r\n";

/* layout(KEYS[1]); for a lock, delete it, publish "0" on its channel
 * KEYS[2] with ARGV[1] ("publish", or "spublish" in a cluster with sharded
 * pub/sub, as the library's release does) and return {'released'}
 * instead. */
static const char release_lua[] =
    LAYOUT_LUA
    "local r = layout(KEYS[1])\n"
    "if r[1] ~= 'lock' then return r end\n"
    "redis.call('del', KEYS[1])\n"
    "redis.call(ARGV[1], KEYS[2], '0')\n"
    "return {'released'}\n";

/* Room for the reason of a failure kept for a message. */
#define ERR_SIZE 640

/* The text of an error reply, or why there was none, into err; -1. */
static int failed(char *err, const redisContext *c, const redisReply *reply)
{
    char text[CLI_ESCAPED_SIZE(200)];
    if (!reply)
        snprintf(err, ERR_SIZE, "%s", c->errstr[0] ? c->errstr : "no reply");
    else
        snprintf(err, ERR_SIZE, "%s",
                 cli_escape(text, sizeof(text), reply->str, reply->len));
    return -1;
}

/* Run argc/argv on c; the reply, or NULL with the reason in err (also for
 * an error reply, which is freed). */
static redisReply *command(redisContext *c, int argc, const char **argv,
                           char *err)
{
    redisReply *reply = redisCommandArgv(c, argc, argv, NULL);
    if (!reply || reply->type == REDIS_REPLY_ERROR) {
        failed(err, c, reply);
        freeReplyObject(reply);
        return NULL;
    }
    return reply;
}

/* The TLS context of --tls (NULL: plain TCP), made once by parse_args. */
static struct tls *inspect_tls;

/* A line of tls_new's through cli_error. */
static void tls_log(enum hilock_log_level level, const char *msg, void *arg)
{
    (void)level;
    (void)arg;
    cli_error("%s", msg);
}

/* Make inspect_tls from r's TLS options; 0, or -1 with a message. */
static int inspect_tls_init(const struct cli_redis *r)
{
    struct hilock_options o;
    hilock_options_init(&o);
    o.log_cb = tls_log;
    int rc = tls_new(&inspect_tls, &r->tls, &o, "tls");
    if (rc != 0 && rc != HILOCK_ETLS) /* ETLS: said already */
        cli_error("tls: %s", hilock_strerror(rc));
    return rc ? -1 : 0;
}

/* A connection to host:port (over TLS with --tls), authenticated with user
 * and password (NULL: no AUTH); NULL with the reason in err ("<host>:<port>:
 * <why>"). */
static redisContext *connect_to(const char *host, int port, const char *user,
                                const char *password, char *err)
{
    struct timeval tv = {TIMEOUT_MS / 1000, (TIMEOUT_MS % 1000) * 1000};
    char shown[CLI_ESCAPED_SIZE(64)], why[ERR_SIZE];
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    void *session;
    cli_escape(shown, sizeof(shown), host, strlen(host));
    if (c && !c->err && inspect_tls && redisSetTimeout(c, tv) == REDIS_OK)
        tls_connect(inspect_tls, c, host, &session); /* c->err on failure */
    if (!c || c->err) {
        snprintf(err, ERR_SIZE, "cannot connect to %s:%d: %.200s", shown, port,
                 c ? c->errstr : "out of memory");
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    if (password) {
        const char *argv[3];
        int n = 0;
        argv[n++] = "AUTH";
        if (user)
            argv[n++] = user;
        argv[n++] = password;
        redisReply *reply = command(c, n, argv, why);
        if (!reply) {
            snprintf(err, ERR_SIZE, "%s:%d: %.200s", shown, port, why);
            redisFree(c);
            return NULL;
        }
        freeReplyObject(reply);
    }
    return c;
}

/* What a script is run with: the lock key and a second key, with the
 * publish command as ARGV[1]. The second key is the lock's channel when the
 * script publishes, else the sorted set of a semaphore's expiring permits
 * (status). */
struct call {
    const struct cli_redis *r;
    const char *script;
    const char *name;
    int publishes;
    char key2[sizeof(KEYS_CHANNEL_HEAD) + HILOCK_NAME_MAX + 2];
};

/* The script of k on c (after ASKING when asking); the reply as Redis gave
 * it, an error reply too, or NULL with the reason in err. publish: the
 * command for ARGV[1]. */
static redisReply *eval_on(redisContext *c, const struct call *k,
                           const char *publish, int asking, char *err)
{
    const char *argv[] = {"EVAL", k->script, "2", k->name, k->key2,
                          publish};
    if (asking) {
        const char *ask[] = {"ASKING"};
        redisReply *ok = command(c, 1, ask, err);
        if (!ok)
            return NULL;
        freeReplyObject(ok);
    }
    redisReply *reply = redisCommandArgv(c, 6, argv, NULL);
    if (!reply)
        failed(err, c, NULL);
    return reply;
}

/* Print "Redis: <reason>" for reply when it is an error reply (freed) or
 * NULL (reason in err); the reply, or NULL. */
static redisReply *checked(redisReply *reply, const char *err)
{
    char text[CLI_ESCAPED_SIZE(200)];
    if (reply && reply->type == REDIS_REPLY_ERROR) {
        cli_error("Redis: %s",
                  cli_escape(text, sizeof(text), reply->str, reply->len));
        freeReplyObject(reply);
        return NULL;
    }
    if (!reply)
        cli_error("Redis: %s", err);
    return reply;
}

/* The script on the one endpoint ep (a single Redis or a Redlock
 * master); the reply, or NULL with a message. */
static redisReply *run_at(const struct call *k,
                          const struct hilock_endpoint *ep)
{
    char err[ERR_SIZE];
    redisContext *c = connect_to(ep->host, ep->port, k->r->username,
                                 k->r->password, err);
    if (!c) {
        cli_error("%s", err);
        return NULL;
    }
    redisReply *reply = eval_on(c, k, "publish", 0, err);
    redisFree(c);
    return checked(reply, err);
}

/* ---- Sentinel: the master the sentinels name ----------------------------- */

/* Ask sentinel ep for the address of the master r->master_name; a
 * connection to that master, confirmed by ROLE, or NULL with the reason in
 * err. */
static redisContext *master_from(const struct cli_redis *r,
                                 const struct hilock_endpoint *ep, char *err)
{
    char host[256], why[ERR_SIZE], shown[CLI_ESCAPED_SIZE(64)];
    redisContext *c = connect_to(ep->host, ep->port, NULL,
                                 r->sentinel_password, err);
    if (!c)
        return NULL;
    cli_escape(shown, sizeof(shown), ep->host, strlen(ep->host));
    const char *ask[] = {"SENTINEL", "get-master-addr-by-name",
                         r->master_name};
    redisReply *addr = command(c, 3, ask, why);
    redisFree(c);
    if (!addr || addr->type != REDIS_REPLY_ARRAY || addr->elements != 2 ||
        addr->element[0]->type != REDIS_REPLY_STRING ||
        addr->element[1]->type != REDIS_REPLY_STRING ||
        addr->element[0]->len >= sizeof(host)) {
        snprintf(err, ERR_SIZE, "sentinel %s:%d: %.200s", shown, ep->port,
                 !addr ? why
                 : addr->type == REDIS_REPLY_NIL ? "no such master"
                                                 : "unexpected reply");
        freeReplyObject(addr);
        return NULL;
    }
    memcpy(host, addr->element[0]->str, addr->element[0]->len + 1);
    int port = atoi(addr->element[1]->str);
    freeReplyObject(addr);
    c = connect_to(host, port, r->username, r->password, err);
    if (!c)
        return NULL;
    /* A sentinel that has not seen a failover yet names the old master,
     * which may be a replica by now: its lock hash says nothing. */
    const char *role[] = {"ROLE"};
    redisReply *is = command(c, 1, role, why);
    if (is && (is->type != REDIS_REPLY_ARRAY || is->elements < 1 ||
               is->element[0]->type != REDIS_REPLY_STRING ||
               strcmp(is->element[0]->str, "master") != 0)) {
        snprintf(err, ERR_SIZE, "sentinel %s:%d names %.200s:%d, which is not "
                 "a master", shown, ep->port,
                 cli_escape(why, sizeof(why), host, strlen(host)), port);
        freeReplyObject(is);
        redisFree(c);
        return NULL;
    }
    freeReplyObject(is);  /* NULL: ROLE refused (ACL); take the word */
    return c;
}

/* The script on the master that the sentinels name, asking them in turn;
 * the reply, or NULL with a message. */
static redisReply *run_sentinel(const struct call *k)
{
    const struct cli_redis *r = k->r;
    char err[ERR_SIZE], where[CLI_WHERE_SIZE], name[CLI_ESCAPED_SIZE(64)];
    for (size_t i = 0; i < r->nlist; i++) {
        redisContext *c = master_from(r, &r->list[i], err);
        if (!c)
            continue;
        redisReply *reply = eval_on(c, k, "publish", 0, err);
        redisFree(c);
        return checked(reply, err);
    }
    cli_error("no sentinel (%s) named a master '%s'; the last: %s",
              cli_redis_where(r, where, sizeof(where)),
              cli_escape(name, sizeof(name), r->master_name,
                         strlen(r->master_name)), err);
    return NULL;
}

/* ---- Redis Cluster: the master of the name's slot ------------------------ */

/* Redirections followed before giving up (a slot being moved takes two:
 * MOVED to the old owner's view, ASK to the new one). */
#define CLUSTER_HOPS 5

/* Whether c's server has sharded pub/sub (Redis 7), where the library's
 * waiters in a cluster listen with SSUBSCRIBE: its release message then
 * goes out with SPUBLISH, as the library's release does. */
static int sharded(redisContext *c)
{
    redisReply *reply = redisCommand(c, "PUBSUB SHARDNUMSUB");
    int yes = reply && reply->type == REDIS_REPLY_ARRAY;
    freeReplyObject(reply);
    return yes;
}

/* The script on the master of the name's slot: sent to the first node of
 * the list that answers, then wherever MOVED and ASK redirect it; the
 * reply, or NULL with a message. */
static redisReply *run_cluster(const struct call *k)
{
    const struct cli_redis *r = k->r;
    char err[ERR_SIZE], what[CLI_WHAT_SIZE];
    redisContext *c = NULL;
    for (size_t i = 0; i < r->nlist && !c; i++)
        c = connect_to(r->list[i].host, r->list[i].port, r->username,
                       r->password, err);
    if (!c) {
        cli_error("no node of %s answered; the last: %s",
                  cli_redis_what(r, what, sizeof(what)), err);
        return NULL;
    }
    redisReply *reply = NULL;
    int asking = 0;
    for (int hop = 0; hop <= CLUSTER_HOPS; hop++) {
        const char *publish =
            k->publishes && sharded(c) ? "spublish" : "publish";
        struct reply_redirect to;
        reply = eval_on(c, k, publish, asking, err);
        enum reply_redirect_kind kind = reply_redirect(reply, &to);
        if (kind == REPLY_NOT_REDIRECT || hop == CLUSTER_HOPS)
            break;
        freeReplyObject(reply);
        reply = NULL;
        if (kind == REPLY_RETRY) {  /* TRYAGAIN, CLUSTERDOWN */
            struct timespec pause = {0, 100 * 1000 * 1000};
            nanosleep(&pause, NULL);
            continue;
        }
        redisFree(c);
        asking = kind == REPLY_ASK;
        c = connect_to(to.host, to.port, r->username, r->password, err);
        if (!c)
            break;
    }
    redisFree(c);
    return checked(reply, err);
}

/* Parse [-H -p -u -a | --redlock | --sentinel --master | --cluster]
 * [--force] NAME; 0, 1 for --help, -1 on a usage error. force may be NULL
 * when --force is not an option of the subcommand. */
static int parse_args(struct cli_redis *r, int *force, const char **name,
                      int argc, char **argv)
{
    static const struct option longopts[] = {
        {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        CLI_REDIS_LONGOPTS,
        {NULL, 0, NULL, 0}};
    int c;
    cli_redis_init(r);
    while ((c = getopt_long(argc, argv, "H:p:u:a:h", longopts, NULL)) != -1) {
        if (c == 'h')
            return 1;
        if (c == 'f' && force)
            *force = 1;
        else if (c == 'f' || cli_redis_option(r, c, optarg) != 0)
            return -1;
    }
    if (optind + 1 != argc || !argv[optind][0] ||
        strlen(argv[optind]) > HILOCK_NAME_MAX) {
        cli_error("%s needs one lock NAME (try hilock --help)", argv[0]);
        return -1;
    }
    *name = argv[optind];
    if (cli_redis_check(r) != 0)
        return -1;
    if (r->tls_given && inspect_tls_init(r) != 0)
        return -1;
    return cli_name_check(r, *name);
}

/* Whether f, a field of a lock's HGETALL array, is ":rid" bookkeeping. */
static int is_rid(const redisReply *f)
{
    size_t n = sizeof(KEYS_RID_SUFFIX) - 1;
    return f->len >= n && memcmp(f->str + f->len - n, KEYS_RID_SUFFIX, n) == 0;
}

/* Print the owner fields of a lock's HGETALL array (not the ":rid" ones),
 * escaped, each on a line after indent. */
static void print_holders(const char *indent, const redisReply *all)
{
    char field[CLI_ESCAPED_SIZE(64)], count[CLI_ESCAPED_SIZE(24)];
    for (size_t i = 0; i + 1 < all->elements; i += 2) {
        const redisReply *f = all->element[i], *v = all->element[i + 1];
        if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
            is_rid(f))
            continue;
        printf("%sholder %s  holds %s\n", indent,
               cli_escape(field, sizeof(field), f->str, f->len),
               cli_escape(count, sizeof(count), v->str, v->len));
    }
}

/* The kind a script's reply starts with ("none", "lock", "released",
 * "field", "noowner" or a Redis type), or NULL (message) when the reply
 * is not shaped as the scripts make it. Lua hands the kind back as a bulk
 * string. */
static const char *reply_kind(const redisReply *r)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != REDIS_REPLY_STRING) {
        cli_error("unexpected reply from Redis");
        return NULL;
    }
    return r->element[0]->str;
}

/* Say why the key shown (escaped) is not a lock, for a reply of another
 * kind than "none", "lock" or "released"; the exit code. */
static int not_a_lock(const char *shown, const char *kind, const redisReply *r)
{
    char field[CLI_ESCAPED_SIZE(64)];
    if (strcmp(kind, "field") == 0 && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_STRING)
        cli_error("%s is not a lock: a hash with the field '%s', which no "
                  "lock has; left alone", shown,
                  cli_escape(field, sizeof(field), r->element[1]->str,
                             r->element[1]->len));
    else if (strcmp(kind, "noowner") == 0)
        cli_error("%s is not a lock: a hash without an owner field; left "
                  "alone", shown);
    else
        cli_error("%s is not a lock: a %s; left alone", shown,
                  cli_escape(field, sizeof(field), kind, strlen(kind)));
    return CLI_EXIT_FAILURE;
}

/* Whether r, a status reply of the kind "rwlock" or "semaphore", has that
 * kind's shape; if not, says so. */
static int shaped(const redisReply *r, const char *kind)
{
    int ok = strcmp(kind, "rwlock") == 0
                 ? r->elements == 3 &&
                       r->element[1]->type == REDIS_REPLY_ARRAY &&
                       r->element[2]->type == REDIS_REPLY_INTEGER
                 : r->elements == 4 &&
                       r->element[1]->type == REDIS_REPLY_STRING &&
                       r->element[2]->type == REDIS_REPLY_ARRAY &&
                       r->element[3]->type == REDIS_REPLY_INTEGER;
    if (!ok)
        cli_error("unexpected reply from Redis");
    return ok;
}

/* Print a read-write lock's status reply as "<label>: read-write lock,
 * <mode> mode, N readers, ttl N ms" and its holders below it after
 * indent, each a reader or the writer (its field without ":write"). The
 * exit code: held. */
#define WRITER_SUFFIX ":write"

/* What field f of a read-write lock's hash is: 'm' its mode, 'w' the
 * writer ("<owner field>:write"), 'r' a reader. */
static char rw_field(const redisReply *f)
{
    size_t w = sizeof(WRITER_SUFFIX) - 1;
    if (f->len == 4 && memcmp(f->str, "mode", 4) == 0)
        return 'm';
    if (f->len >= w && memcmp(f->str + f->len - w, WRITER_SUFFIX, w) == 0)
        return 'w';
    return 'r';
}

static int print_rwlock(const char *label, const char *indent,
                        const redisReply *r)
{
    const redisReply *all = r->element[1];
    char mode[CLI_ESCAPED_SIZE(8)] = "?", field[CLI_ESCAPED_SIZE(64)],
         count[CLI_ESCAPED_SIZE(24)];
    size_t readers = 0;
    for (size_t i = 0; i + 1 < all->elements; i += 2) {
        const redisReply *f = all->element[i], *v = all->element[i + 1];
        if (rw_field(f) == 'm')
            cli_escape(mode, sizeof(mode), v->str, v->len);
        readers += rw_field(f) == 'r';
    }
    printf("%s: read-write lock, %s mode, %zu reader%s, ttl %lld ms\n", label,
           mode, readers, readers == 1 ? "" : "s", r->element[2]->integer);
    for (size_t i = 0; i + 1 < all->elements; i += 2) {
        const redisReply *f = all->element[i], *v = all->element[i + 1];
        char is = rw_field(f);
        size_t len = f->len - (is == 'w' ? sizeof(WRITER_SUFFIX) - 1 : 0);
        if (is != 'm')
            printf("%s%s %s  holds %s\n", indent,
                   is == 'w' ? "writer" : "reader",
                   cli_escape(field, sizeof(field), f->str, len),
                   cli_escape(count, sizeof(count), v->str, v->len));
    }
    return CLI_EXIT_OK;
}

/* Print a semaphore's status reply as "<label>: semaphore, N available, N
 * expiring permits taken" and each permit taken below it after indent: its
 * id in hex and when it expires. The exit code: 0 while a permit is taken
 * and not expired, else 1. */
static int print_semaphore(const char *label, const char *indent,
                           const redisReply *r)
{
    const redisReply *taken = r->element[2];
    char avail[CLI_ESCAPED_SIZE(24)], id[2 * 32 + 1];
    long long now = r->element[3]->integer;
    size_t live = 0, n = taken->elements / 2;
    printf("%s: semaphore, %s available, %zu expiring permit%s taken\n",
           label, cli_escape(avail, sizeof(avail), r->element[1]->str,
                             r->element[1]->len), n, n == 1 ? "" : "s");
    for (size_t i = 0; i + 1 < taken->elements; i += 2) {
        const redisReply *m = taken->element[i], *at = taken->element[i + 1];
        size_t len = m->len < 32 ? m->len : 32;
        for (size_t k = 0; k < len; k++)
            snprintf(id + 2 * k, 3, "%02x", (unsigned char)m->str[k]);
        id[2 * len] = '\0';
        long long left = (long long)strtod(at->str ? at->str : "0", NULL) -
                         now;
        live += left > 0;
        if (left > 0)
            printf("%spermit %s  expires in %lld ms\n", indent, id, left);
        else
            printf("%spermit %s  expired\n", indent, id);
    }
    return live ? CLI_EXIT_OK : CLI_EXIT_NO;
}

/* Print what the status script returned, as "<label>: held, ttl N ms" (or
 * free) and the holders below it after indent; a key that is not a lock is
 * reported under the name shown. The exit code. */
static int print_status(const char *shown, const char *label,
                        const char *indent, const redisReply *r)
{
    const char *kind = reply_kind(r);
    if (!kind)
        return CLI_EXIT_FAILURE;
    if (strcmp(kind, "none") == 0) {
        printf("%s: free\n", label);
        return CLI_EXIT_NO;
    }
    if (strcmp(kind, "rwlock") == 0 || strcmp(kind, "semaphore") == 0) {
        if (!shaped(r, kind))
            return CLI_EXIT_FAILURE;
        return kind[0] == 'r' ? print_rwlock(label, indent, r)
                              : print_semaphore(label, indent, r);
    }
    if (strcmp(kind, "lock") != 0) {
        if (strcmp(label, shown) != 0)
            printf("%s: not a lock; left alone\n", label);
        return not_a_lock(shown, kind, r);
    }
    if (r->elements != 3 || r->element[1]->type != REDIS_REPLY_ARRAY ||
        r->element[2]->type != REDIS_REPLY_INTEGER) {
        cli_error("unexpected reply from Redis");
        return CLI_EXIT_FAILURE;
    }
    long long ttl = r->element[2]->integer;
    if (ttl >= 0)
        printf("%s: held, ttl %lld ms\n", label, ttl);
    else
        printf("%s: held, no expiry\n", label);
    print_holders(indent, r->element[1]);
    return CLI_EXIT_OK;
}

/* Run script on the Redis that holds name's lock (for a single endpoint or
 * a Redlock master: ep), with the lock key and, when the script publishes,
 * its channel as KEYS, else the lock key and its permits' sorted set; the
 * reply, or NULL with a message. */
static redisReply *run_script(const struct cli_redis *r,
                              const struct hilock_endpoint *ep,
                              const char *script, const char *name,
                              int publishes)
{
    struct call k = {r, script, name, publishes, ""};
    struct key_src src = {"", 0, name, strlen(name)};
    if (publishes)
        keys_channel_text(&src, k.key2, sizeof(k.key2));
    else
        keys_tagged_text(&src, KEYS_SUFFIX_HEAD, KEYS_PERMITS_TAIL, k.key2,
                         sizeof(k.key2));
    if (r->topo == CLI_SENTINEL)
        return run_sentinel(&k);
    if (r->topo == CLI_CLUSTER)
        return run_cluster(&k);
    return run_at(&k, ep);
}

/* Run script where the lock is and check the shape of its reply: the reply
 * and its kind in *kind, or NULL (message printed) when Redis gave none
 * that fits. */
static redisReply *run_checked(const struct cli_redis *r,
                               const struct hilock_endpoint *ep,
                               const char *script, const char *name,
                               int publishes, const char **kind)
{
    redisReply *reply = run_script(r, ep, script, name, publishes);
    if (reply && !(*kind = reply_kind(reply))) {
        freeReplyObject(reply);
        reply = NULL;
    }
    return reply;
}

/* ---- several masters (--redlock) ---------------------------------------- */

/* The HGETALL array of a status reply for a lock, else NULL. */
static const redisReply *lock_fields(const redisReply *r)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        strcmp(r->element[0]->str, "lock") != 0 ||
        r->element[1]->type != REDIS_REPLY_ARRAY)
        return NULL;
    return r->element[1];
}

/* Whether the HGETALL array all has the owner field f. */
static int has_owner(const redisReply *all, const redisReply *f)
{
    for (size_t i = 0; i + 1 < all->elements; i += 2) {
        const redisReply *g = all->element[i];
        if (g->type == REDIS_REPLY_STRING && g->len == f->len &&
            memcmp(g->str, f->str, f->len) == 0)
            return 1;
    }
    return 0;
}

/* The most masters, among the n status replies rep (NULL: no answer), on
 * which one and the same owner holds the lock. */
static size_t most_held(redisReply *const *rep, size_t n)
{
    size_t best = 0;
    for (size_t i = 0; i < n; i++) {
        const redisReply *all = lock_fields(rep[i]);
        for (size_t k = 0; all && k + 1 < all->elements; k += 2) {
            const redisReply *f = all->element[k];
            size_t count = 0;
            if (f->type != REDIS_REPLY_STRING || is_rid(f))
                continue;
            for (size_t j = 0; j < n; j++)
                count += lock_fields(rep[j]) &&
                         has_owner(lock_fields(rep[j]), f);
            best = count > best ? count : best;
        }
    }
    return best;
}

/* The summary line of a status over n masters; the exit code. Held: one
 * owner holds it on a majority. Free: no owner could, even if every master
 * that did not answer held it for that owner. */
static int status_summary(const char *shown, size_t n, size_t best,
                          size_t silent, size_t others)
{
    size_t q = n / 2 + 1;
    if (others) {
        printf("%s: not a lock on %zu of the %zu masters\n", shown, others,
               n);
        return CLI_EXIT_FAILURE;
    }
    if (best >= q) {
        printf("%s: held on %zu of %zu masters\n", shown, best, n);
        return CLI_EXIT_OK;
    }
    if (best + silent == 0) {
        printf("%s: free\n", shown);
        return CLI_EXIT_NO;
    }
    if (best + silent < q) {
        printf("%s: free: no owner holds it on a majority (%zu of %zu "
               "masters)\n", shown, q, n);
        return CLI_EXIT_NO;
    }
    printf("%s: unknown: %zu of the %zu masters did not answer\n", shown,
           silent, n);
    cli_error("no quorum: cannot tell whether %s is held", shown);
    return CLI_EXIT_FAILURE;
}

/* hilock status --redlock: the status script on every master, a summary,
 * then each master's view. The exit code. */
static int status_masters(const struct cli_redis *r, const char *name,
                          const char *shown)
{
    redisReply *rep[HILOCK_MASTERS_MAX];
    size_t n = r->nlist, silent = 0, others = 0;
    for (size_t i = 0; i < n; i++) {
        const char *kind = NULL;
        rep[i] = run_checked(r, &r->list[i], status_lua, name, 0, &kind);
        silent += !rep[i];
        others += rep[i] && strcmp(kind, "none") != 0 &&
                  strcmp(kind, "lock") != 0;
    }
    int rc = status_summary(shown, n, most_held(rep, n), silent, others);
    for (size_t i = 0; i < n; i++) {
        char label[CLI_WHERE_SIZE];
        char where[CLI_ESCAPED_SIZE(HILOCK_NAME_MAX) + CLI_WHERE_SIZE];
        snprintf(label, sizeof(label), "  %s:%d", r->list[i].host,
                 r->list[i].port);
        snprintf(where, sizeof(where), "%s on %s:%d", shown,
                 r->list[i].host, r->list[i].port);
        if (!rep[i]) {
            printf("%s: no answer\n", label);
            continue;
        }
        print_status(where, label, "    ", rep[i]);
        freeReplyObject(rep[i]);
    }
    return rc;
}

/* Break the lock on master ep: what happened, as a line for the user;
 * counted in *released, or in *failed when the master did not answer or
 * holds something else under the name (said on stderr). */
static const char *release_one(const struct cli_redis *r,
                               const struct hilock_endpoint *ep,
                               const char *name, const char *shown,
                               size_t *released, size_t *failed)
{
    char where[CLI_ESCAPED_SIZE(HILOCK_NAME_MAX) + CLI_WHERE_SIZE];
    const char *kind = NULL, *said = "was free";
    redisReply *rep = run_checked(r, ep, release_lua, name, 1, &kind);
    if (!rep) {
        (*failed)++;
        return "no answer: a lock there stays until its lease runs out";
    }
    if (strcmp(kind, "released") == 0) {
        (*released)++;
        said = "released";
    } else if (strcmp(kind, "none") != 0) {
        snprintf(where, sizeof(where), "%s on %s:%d", shown, ep->host,
                 ep->port);
        not_a_lock(where, kind, rep);
        (*failed)++;
        said = "not a lock; left alone";
    }
    freeReplyObject(rep);
    return said;
}

/* hilock release --force --redlock: the release script on every master, a
 * summary, then what each master did. The exit code: 0 when it was
 * released somewhere and every other master had nothing under the name, 1
 * when it was free everywhere, CLI_EXIT_FAILURE when a master did not
 * answer or holds something else under the name. */
static int release_masters(const struct cli_redis *r, const char *name,
                           const char *shown)
{
    const char *said[HILOCK_MASTERS_MAX];
    size_t n = r->nlist, released = 0, failed = 0;
    for (size_t i = 0; i < n; i++)
        said[i] = release_one(r, &r->list[i], name, shown, &released,
                              &failed);
    if (failed)
        printf("%s: released on %zu of %zu masters; %zu failed\n", shown,
               released, n, failed);
    else if (released)
        printf("%s: released on %zu of %zu masters; waiters notified\n",
               shown, released, n);
    else
        printf("%s: was free on every master\n", shown);
    for (size_t i = 0; i < n; i++)
        printf("  %s:%d: %s\n", r->list[i].host, r->list[i].port,
               said[i]);
    return failed ? CLI_EXIT_FAILURE : released ? CLI_EXIT_OK : CLI_EXIT_NO;
}

/* ---- the subcommands ----------------------------------------------------- */

int cli_semaphore_total(const struct cli_redis *r, const char *name,
                        long long *total)
{
    struct hilock_endpoint one;
    size_t n;
    const char *kind;
    char shown[CLI_ESCAPED_SIZE(HILOCK_NAME_MAX)];
    redisReply *reply = run_checked(r, cli_endpoints(r, &one, &n),
                                    status_lua, name, 0, &kind);
    if (!reply)
        return -1;
    int rc = 0;
    if (strcmp(kind, "none") == 0) {
        *total = 0;
    } else if (strcmp(kind, "semaphore") == 0 && shaped(reply, kind)) {
        *total = strtoll(reply->element[1]->str, NULL, 10) +
                 (long long)(reply->element[2]->elements / 2);
    } else {
        cli_error("%s is not a semaphore",
                  cli_escape(shown, sizeof(shown), name, strlen(name)));
        rc = -1;
    }
    freeReplyObject(reply);
    return rc;
}

const char *cli_kind_found(const struct cli_redis *r, const char *name)
{
    struct hilock_endpoint one;
    size_t n;
    const char *kind, *said;
    redisReply *reply = run_checked(r, cli_endpoints(r, &one, &n),
                                    status_lua, name, 0, &kind);
    if (!reply)
        return NULL;
    /* a hash without "mode" is a lock to the scripts, laid out as
     * hilock's or not */
    said = strcmp(kind, "lock") == 0 || strcmp(kind, "field") == 0 ||
                   strcmp(kind, "noowner") == 0
               ? "a lock"
           : strcmp(kind, "rwlock") == 0    ? "a read-write lock"
           : strcmp(kind, "semaphore") == 0 ? "a semaphore"
           : strcmp(kind, "none") == 0      ? "nothing"
                                            : "a key of another type";
    freeReplyObject(reply);
    return said;
}

int cli_status(int argc, char **argv)
{
    struct cli_redis r;
    struct hilock_endpoint one;
    size_t n;
    const char *name, *kind;
    char shown[CLI_ESCAPED_SIZE(HILOCK_NAME_MAX)];
    int rc = parse_args(&r, NULL, &name, argc, argv);
    if (rc != 0) {
        if (rc > 0)
            cli_usage(0);
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
    }
    cli_escape(shown, sizeof(shown), name, strlen(name));
    if (r.topo == CLI_REDLOCK)
        return status_masters(&r, name, shown);
    redisReply *reply = run_checked(&r, cli_endpoints(&r, &one, &n),
                                    status_lua, name, 0, &kind);
    if (!reply)
        return CLI_EXIT_FAILURE;
    rc = print_status(shown, shown, "  ", reply);
    freeReplyObject(reply);
    return rc;
}

int cli_release(int argc, char **argv)
{
    struct cli_redis r;
    struct hilock_endpoint one;
    size_t n;
    const char *name, *kind;
    char shown[CLI_ESCAPED_SIZE(HILOCK_NAME_MAX)];
    int force = 0;
    int rc = parse_args(&r, &force, &name, argc, argv);
    if (rc != 0) {
        if (rc > 0)
            cli_usage(0);
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
    }
    if (!force) {
        cli_error("release takes the lock from whoever holds it; say "
                  "--force to do that");
        return CLI_EXIT_FAILURE;
    }
    cli_escape(shown, sizeof(shown), name, strlen(name));
    if (r.topo == CLI_REDLOCK)
        return release_masters(&r, name, shown);
    redisReply *reply = run_checked(&r, cli_endpoints(&r, &one, &n),
                                    release_lua, name, 1, &kind);
    if (!reply)
        return CLI_EXIT_FAILURE;
    if (strcmp(kind, "released") == 0) {
        printf("%s: released; waiters notified\n", shown);
        rc = CLI_EXIT_OK;
    } else if (strcmp(kind, "none") == 0) {
        printf("%s: was free\n", shown);
        rc = CLI_EXIT_NO;
    } else {
        rc = not_a_lock(shown, kind, reply);
    }
    freeReplyObject(reply);
    return rc;
}
