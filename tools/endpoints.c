/* SPDX-License-Identifier: BSD-3-Clause */
/* endpoints.c -- the endpoint lists, each one argument
 * "host:port,host:port,...": the Redlock masters of --redlock, the
 * Sentinels of --sentinel, the cluster nodes of --cluster.
 *
 * Parsed strictly, so that a typo is a usage error and not an endpoint that
 * never answers, which a quorum or the next sentinel or seed would hide
 * until the next failure: every entry is an IPv4 address in dotted-quad
 * form or a host name (RFC 1123 labels) and a decimal port 1..65535; no
 * empty entry, no entry twice; for --redlock an odd count from 3 to
 * HILOCK_MASTERS_MAX, for the others 1 to HILOCK_SEEDS_MAX. IPv6 addresses
 * are not taken (their colons would need brackets); a name is compared as
 * written, so "localhost:7000" and "127.0.0.1:7000" count as two. */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

#define HOST_MAX 253  /* longest host name (RFC 1035) */
#define LABEL_MAX 63  /* longest label of a host name */

/* Whether the len bytes at s are a host name: dot-separated labels of
 * letters, digits and inner hyphens, 1..LABEL_MAX bytes each. */
static int name_ok(const char *s, size_t len)
{
    size_t label = 0;
    for (size_t i = 0; i <= len; i++) {
        char c = i < len ? s[i] : '.';
        if (c == '.') {
            if (label == 0 || s[i - 1] == '-')
                return 0;
            label = 0;
        } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                   (c >= '0' && c <= '9') || (c == '-' && label > 0)) {
            if (++label > LABEL_MAX)
                return 0;
        } else {
            return 0;
        }
    }
    return 1;
}

/* Whether host (NUL-terminated) is an IPv4 address or a host name. Digits
 * and dots alone must make an address: "10.0.0.256" is refused, not looked
 * up as a name. */
static int host_ok(const char *host)
{
    size_t len = strlen(host);
    struct in_addr a;
    if (len == 0 || len > HOST_MAX)
        return 0;
    if (strspn(host, "0123456789.") == len)
        return inet_pton(AF_INET, host, &a) == 1;
    return name_ok(host, len);
}

/* The port in s (NUL-terminated): 1..65535 in decimal digits without sign,
 * spaces or leading zeros; -1 otherwise. */
static int port_of(const char *s)
{
    size_t len = strlen(s);
    long v = 0;
    if (len == 0 || len > 5 || s[0] == '0' || strspn(s, "0123456789") != len)
        return -1;
    for (size_t i = 0; i < len; i++)
        v = v * 10 + (s[i] - '0');
    return v <= 65535 ? (int)v : -1;
}

/* The word for one entry of topo's list. */
static const char *entry_word(enum cli_topo topo)
{
    return topo == CLI_REDLOCK ? "master" : topo == CLI_SENTINEL ? "sentinel"
                                                                 : "node";
}

const char *cli_topo_option(enum cli_topo topo)
{
    switch (topo) {
    case CLI_REDLOCK: return "--redlock";
    case CLI_SENTINEL: return "--sentinel";
    case CLI_CLUSTER: return "--cluster";
    default: return "-H/-p";
    }
}

/* Parse one entry (NUL-terminated, inside r->list_text) of opt's list into
 * r->list[n]. 0, or -1 with a message. */
static int entry_parse(struct cli_redis *r, const char *opt, char *entry,
                       size_t n)
{
    char shown[CLI_ESCAPED_SIZE(64)];
    char *colon = strrchr(entry, ':');
    cli_escape(shown, sizeof(shown), entry, strlen(entry));
    if (!colon || strchr(entry, ':') != colon) {
        cli_error("%s: '%s' is not host:port%s", opt, shown,
                  colon ? " (IPv6 addresses are not supported)" : "");
        return -1;
    }
    *colon = '\0';
    int port = port_of(colon + 1);
    if (!host_ok(entry)) {
        cli_error("%s: '%s': the host is neither an IPv4 address nor a host "
                  "name", opt, shown);
        return -1;
    }
    if (port < 0) {
        cli_error("%s: '%s': the port is not a number 1..65535", opt, shown);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (r->list[i].port == port &&
            strcasecmp(r->list[i].host, entry) == 0) {
            cli_error("%s: '%s' is listed twice", opt, shown);
            return -1;
        }
    r->list[n] = (struct hilock_endpoint){entry, port, NULL};
    return 0;
}

/* Whether count entries are right for topo's list; -1 with a message. */
static int count_check(enum cli_topo topo, size_t count)
{
    if (topo == CLI_REDLOCK &&
        (count < 3 || count > HILOCK_MASTERS_MAX || count % 2 == 0)) {
        cli_error("--redlock needs an odd number of masters from 3 to %d "
                  "(a majority of them holds the lock), not %zu",
                  HILOCK_MASTERS_MAX, count);
        return -1;
    }
    if (count > HILOCK_SEEDS_MAX) {
        cli_error("%s takes 1 to %d %ss, not %zu", cli_topo_option(topo),
                  HILOCK_SEEDS_MAX, entry_word(topo), count);
        return -1;
    }
    return 0;
}

int cli_list_parse(struct cli_redis *r, enum cli_topo topo, const char *list)
{
    const char *opt = cli_topo_option(topo);
    size_t len = strlen(list), count = 1;
    if (r->topo == topo) {
        cli_error("%s given twice: list every %s in one", opt,
                  entry_word(topo));
        return -1;
    }
    if (r->topo != CLI_SINGLE) {
        cli_error("%s and %s exclude each other: give one list",
                  cli_topo_option(r->topo), opt);
        return -1;
    }
    if (len >= sizeof(r->list_text)) {
        cli_error("%s: the list is longer than %d bytes", opt,
                  CLI_LIST_TEXT_MAX - 1);
        return -1;
    }
    for (size_t i = 0; i < len; i++)
        count += list[i] == ',';
    if (len == 0 || list[0] == ',' || list[len - 1] == ',' ||
        strstr(list, ",,")) {
        cli_error("%s: an empty entry (%ss are separated by one comma, no "
                  "spaces)", opt, entry_word(topo));
        return -1;
    }
    if (count_check(topo, count) != 0)
        return -1;
    memcpy(r->list_text, list, len + 1);
    char *entry = r->list_text;
    for (size_t n = 0; n < count; n++) {
        char *comma = strchr(entry, ',');
        if (comma)
            *comma = '\0';
        if (entry_parse(r, opt, entry, n) != 0)
            return -1;
        if (comma)
            entry = comma + 1;
    }
    r->topo = topo;
    r->nlist = count;
    return 0;
}
