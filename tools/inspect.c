/* inspect.c -- hilock status and hilock release --force.
 *
 * The library answers "do *I* hold it"; an operator asks "who holds it". These
 * two read and break a lock from outside, so they use a plain blocking
 * hiredis connection, and one Lua script each so that what they see or do is
 * one atomic step on the server. They rely on the key layout the library
 * documents: the lock is a hash of "<client-id>:<owner-tag>" -> hold count
 * (plus "<field>:rid" bookkeeping) with a PEXPIRE lease, and the final
 * release publishes "0" on "redisson_lock__channel:{NAME}". The scripts check
 * that layout first: a key that does not have it is some other program's
 * data, shown as such and never deleted. Names, fields and server texts are
 * printed escaped (cli_escape), since they are anyone's bytes. */
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

/* What KEYS[1] is, read in one atomic step: {'none'}; {'lock', HGETALL}
 * for a hash laid out as a lock (owner fields "<uuid>:<tag>" with a decimal
 * hold count, at least one, and "<owner field>:rid" bookkeeping fields);
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
    "    elseif not string.find(all[i], owner .. ':rid$') then\n"           \
    "      return {'field', all[i]}\n"                                      \
    "    end\n"                                                             \
    "  end\n"                                                               \
    "  if owners == 0 then return {'noowner'} end\n"                        \
    "  return {'lock', all}\n"                                              \
    "end\n"

/* layout(KEYS[1]), and for a lock its PTTL as a third element. */
static const char status_lua[] =
    LAYOUT_LUA
    "local r = layout(KEYS[1])\n"
    "if r[1] == 'lock' then r[3] = redis.call('pttl', KEYS[1]) end\n"
    "return r\n";

/* layout(KEYS[1]); for a lock, delete it, publish "0" on its channel
 * KEYS[2] and return {'released'} instead. */
static const char release_lua[] =
    LAYOUT_LUA
    "local r = layout(KEYS[1])\n"
    "if r[1] ~= 'lock' then return r end\n"
    "redis.call('del', KEYS[1])\n"
    "redis.call('publish', KEYS[2], '0')\n"
    "return {'released'}\n";

/* Run argc/argv on c; the reply, or NULL with a message (also for an error
 * reply, which is freed). */
static redisReply *command(redisContext *c, int argc, const char **argv,
                           const size_t *lens)
{
    redisReply *reply = redisCommandArgv(c, argc, argv, lens);
    char text[CLI_ESCAPED_SIZE(200)];
    if (!reply) {
        cli_error("Redis: %s", c->errstr[0] ? c->errstr : "no reply");
        return NULL;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        cli_error("Redis: %s",
                  cli_escape(text, sizeof(text), reply->str, reply->len));
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
    return cli_redis_check(r);
}

/* Print the owner fields of a lock's HGETALL array (not the ":rid" ones),
 * escaped. */
static void print_holders(const redisReply *all)
{
    char field[CLI_ESCAPED_SIZE(64)], count[CLI_ESCAPED_SIZE(24)];
    for (size_t i = 0; i + 1 < all->elements; i += 2) {
        const redisReply *f = all->element[i], *v = all->element[i + 1];
        if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
            (f->len >= 4 && memcmp(f->str + f->len - 4, ":rid", 4) == 0))
            continue;
        printf("  holder %s  holds %s\n",
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

/* Print what the status script returned for the name shown; the exit
 * code. */
static int print_status(const char *shown, const redisReply *r)
{
    const char *kind = reply_kind(r);
    if (!kind)
        return CLI_EXIT_FAILURE;
    if (strcmp(kind, "none") == 0) {
        printf("%s: free\n", shown);
        return CLI_EXIT_NO;
    }
    if (strcmp(kind, "lock") != 0)
        return not_a_lock(shown, kind, r);
    if (r->elements != 3 || r->element[1]->type != REDIS_REPLY_ARRAY ||
        r->element[2]->type != REDIS_REPLY_INTEGER) {
        cli_error("unexpected reply from Redis");
        return CLI_EXIT_FAILURE;
    }
    long long ttl = r->element[2]->integer;
    if (ttl >= 0)
        printf("%s: held, ttl %lld ms\n", shown, ttl);
    else
        printf("%s: held, no expiry\n", shown);
    print_holders(r->element[1]);
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
    char shown[CLI_ESCAPED_SIZE(HILOCK_NAME_MAX)];
    int rc = parse_args(&r, NULL, &name, argc, argv);
    if (rc != 0) {
        if (rc > 0)
            cli_usage(0);
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
    }
    cli_escape(shown, sizeof(shown), name, strlen(name));
    redisReply *reply = run_script(&r, status_lua, name, 0);
    if (!reply)
        return CLI_EXIT_FAILURE;
    rc = print_status(shown, reply);
    freeReplyObject(reply);
    return rc;
}

int cli_release(int argc, char **argv)
{
    struct cli_redis r;
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
    redisReply *reply = run_script(&r, release_lua, name, 1);
    if (!reply)
        return CLI_EXIT_FAILURE;
    if (!(kind = reply_kind(reply))) {
        rc = CLI_EXIT_FAILURE;
    } else if (strcmp(kind, "released") == 0) {
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
