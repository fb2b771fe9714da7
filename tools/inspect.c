/* inspect.c -- hilock status and hilock release --force.
 *
 * The library answers "do *I* hold it"; an operator asks "who holds it". These
 * two read and break a lock from outside, so they use a plain blocking
 * hiredis connection, and one Lua script each so that what they see or do is
 * one atomic step on the server. They rely on the key layout the library
 * documents: the lock is a hash of "<client-id>:<owner-tag>" -> hold count
 * (plus "<field>:rid" bookkeeping) with a PEXPIRE lease, and the final
 * release publishes "0" on "redisson_lock__channel:{NAME}". */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>

#include <hilock/hilock.h>

#include "cli.h"

#define TIMEOUT_MS 2000
#define CHANNEL_HEAD "redisson_lock__channel:{"

/* The type of KEYS[1]; for a hash also its PTTL and HGETALL, all read in one
 * atomic step. */
static const char status_lua[] =
    "local t = redis.call('type', KEYS[1]).ok\n"
    "if t ~= 'hash' then return {t} end\n"
    "return {t, redis.call('pttl', KEYS[1]), redis.call('hgetall', KEYS[1])}\n";

/* Delete the lock KEYS[1] and publish "0" on its channel KEYS[2]: 1, or 0
 * when there was no lock. Another type of key is left alone. */
static const char release_lua[] =
    "local t = redis.call('type', KEYS[1]).ok\n"
    "if t == 'none' then return 0 end\n"
    "if t ~= 'hash' then\n"
    "  return redis.error_reply('WRONGTYPE the key is a ' .. t .. ', not a lock')\n"
    "end\n"
    "redis.call('del', KEYS[1])\n"
    "redis.call('publish', KEYS[2], '0')\n"
    "return 1\n";

/* Run argc/argv on c; the reply, or NULL with a message (also for an error
 * reply, which is freed). */
static redisReply *command(redisContext *c, int argc, const char **argv,
                           const size_t *lens)
{
    redisReply *reply = redisCommandArgv(c, argc, argv, lens);
    if (!reply) {
        cli_error("Redis: %s", c->errstr[0] ? c->errstr : "no reply");
        return NULL;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        cli_error("Redis: %s", reply->str);
        freeReplyObject(reply);
        return NULL;
    }
    return reply;
}

/* A connection to the endpoint in r, authenticated; NULL with a message. */
static redisContext *connect_to(const struct cli_redis *r)
{
    struct timeval tv = {TIMEOUT_MS / 1000, (TIMEOUT_MS % 1000) * 1000};
    redisContext *c = redisConnectWithTimeout(r->host, r->port, tv);
    if (!c || c->err) {
        cli_error("cannot connect to Redis at %s:%d: %s", r->host, r->port,
                  c ? c->errstr : "out of memory");
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    if (r->password) {
        const char *argv[3];
        int n = 0;
        argv[n++] = "AUTH";
        if (r->username)
            argv[n++] = r->username;
        argv[n++] = r->password;
        redisReply *reply = command(c, n, argv, NULL);
        if (!reply) {
            redisFree(c);
            return NULL;
        }
        freeReplyObject(reply);
    }
    return c;
}

/* Parse [-H -p -u -a] [--force] NAME; 0, 1 for --help, -1 on a usage error.
 * force may be NULL when --force is not an option of the subcommand. */
static int parse_args(struct cli_redis *r, int *force, const char **name,
                      int argc, char **argv)
{
    static const struct option longopts[] = {
        {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
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
    return 0;
}

/* Print the owner fields of an HGETALL array (not the ":rid" ones); the
 * number printed. */
static int print_holders(const redisReply *all)
{
    int n = 0;
    for (size_t i = 0; i + 1 < all->elements; i += 2) {
        const redisReply *f = all->element[i], *v = all->element[i + 1];
        if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
            (f->len >= 4 && memcmp(f->str + f->len - 4, ":rid", 4) == 0))
            continue;
        printf("  holder %.*s  holds %.*s\n", (int)f->len, f->str,
               (int)v->len, v->str);
        n++;
    }
    return n;
}

/* Print what the status script returned for name; the exit code. */
static int print_status(const char *name, const redisReply *r)
{
    /* Lua hands the type back as a bulk string (a status reply in a
     * table loses its status-ness). */
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        (r->element[0]->type != REDIS_REPLY_STRING &&
         r->element[0]->type != REDIS_REPLY_STATUS)) {
        cli_error("unexpected reply from Redis");
        return CLI_EXIT_FAILURE;
    }
    const char *type = r->element[0]->str;
    if (strcmp(type, "none") == 0) {
        printf("%s: free\n", name);
        return CLI_EXIT_NO;
    }
    if (strcmp(type, "hash") != 0 || r->elements != 3 ||
        r->element[1]->type != REDIS_REPLY_INTEGER ||
        r->element[2]->type != REDIS_REPLY_ARRAY) {
        cli_error("%s is a %s, not a lock", name, type);
        return CLI_EXIT_FAILURE;
    }
    long long ttl = r->element[1]->integer;
    if (ttl >= 0)
        printf("%s: held, ttl %lld ms\n", name, ttl);
    else
        printf("%s: held, no expiry\n", name);
    print_holders(r->element[2]);
    return CLI_EXIT_OK;
}

/* Run script with the lock key (and its channel when with_channel) as KEYS;
 * the reply, or NULL with a message. */
static redisReply *run_script(const struct cli_redis *r, const char *script,
                              const char *name, int with_channel)
{
    size_t nlen = strlen(name);
    char *channel = malloc(sizeof(CHANNEL_HEAD) + nlen + 1);
    redisContext *c = channel ? connect_to(r) : NULL;
    redisReply *reply = NULL;
    if (c) {
        sprintf(channel, "%s%s}", CHANNEL_HEAD, name);
        const char *argv[] = {"EVAL", script, with_channel ? "2" : "1", name,
                              channel};
        reply = command(c, with_channel ? 5 : 4, argv, NULL);
        redisFree(c);
    }
    free(channel);
    return reply;
}

int cli_status(int argc, char **argv)
{
    struct cli_redis r;
    const char *name;
    int rc = parse_args(&r, NULL, &name, argc, argv);
    if (rc != 0) {
        if (rc > 0)
            cli_usage(0);
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
    }
    redisReply *reply = run_script(&r, status_lua, name, 0);
    if (!reply)
        return CLI_EXIT_FAILURE;
    rc = print_status(name, reply);
    freeReplyObject(reply);
    return rc;
}

int cli_release(int argc, char **argv)
{
    struct cli_redis r;
    const char *name;
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
    redisReply *reply = run_script(&r, release_lua, name, 1);
    if (!reply)
        return CLI_EXIT_FAILURE;
    rc = reply->type == REDIS_REPLY_INTEGER && reply->integer == 1
             ? CLI_EXIT_OK : CLI_EXIT_NO;
    printf(rc == CLI_EXIT_OK ? "%s: released; waiters notified\n"
                             : "%s: was free\n", name);
    freeReplyObject(reply);
    return rc;
}
