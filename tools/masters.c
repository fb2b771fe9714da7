/* masters.c -- the --redlock option: the Redlock masters as one argument,
 * "host:port,host:port,host:port".
 *
 * Parsed strictly, so that a typo is a usage error and not a master that
 * never answers, which a quorum would hide until the next failure: every
 * entry is an IPv4 address in dotted-quad form or a host name (RFC 1123
 * labels) and a decimal port 1..65535; no empty entry, no entry twice, an
 * odd count from 3 to HILOCK_MASTERS_MAX. IPv6 addresses are not taken
 * (their colons would need brackets); a name is compared as written, so
 * "localhost:7000" and "127.0.0.1:7000" count as two masters. */
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

/* Parse one entry (NUL-terminated, inside r->masters_text) into master n.
 * 0, or -1 with a message. */
static int entry_parse(struct cli_redis *r, char *entry, size_t n)
{
    char shown[CLI_ESCAPED_SIZE(64)];
    char *colon = strrchr(entry, ':');
    cli_escape(shown, sizeof(shown), entry, strlen(entry));
    if (!colon || strchr(entry, ':') != colon) {
        cli_error("--redlock: '%s' is not host:port%s", shown,
                  colon ? " (IPv6 addresses are not supported)" : "");
        return -1;
    }
    *colon = '\0';
    int port = port_of(colon + 1);
    if (!host_ok(entry)) {
        cli_error("--redlock: '%s': the host is neither an IPv4 address nor "
                  "a host name", shown);
        return -1;
    }
    if (port < 0) {
        cli_error("--redlock: '%s': the port is not a number 1..65535",
                  shown);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (r->masters[i].port == port &&
            strcasecmp(r->masters[i].host, entry) == 0) {
            cli_error("--redlock: '%s' is listed twice", shown);
            return -1;
        }
    r->masters[n] = (struct hilock_endpoint){entry, port, NULL};
    return 0;
}

int cli_masters_parse(struct cli_redis *r, const char *list)
{
    size_t len = strlen(list), count = 1;
    if (r->nmasters) {
        cli_error("--redlock given twice: list every master in one");
        return -1;
    }
    if (len >= sizeof(r->masters_text)) {
        cli_error("--redlock: the list is longer than %d bytes",
                  CLI_MASTERS_TEXT_MAX - 1);
        return -1;
    }
    for (size_t i = 0; i < len; i++)
        count += list[i] == ',';
    if (len == 0 || list[0] == ',' || list[len - 1] == ',' ||
        strstr(list, ",,")) {
        cli_error("--redlock: an empty entry (masters are separated by one "
                  "comma, no spaces)");
        return -1;
    }
    if (count < 3 || count > HILOCK_MASTERS_MAX || count % 2 == 0) {
        cli_error("--redlock needs an odd number of masters from 3 to %d "
                  "(a majority of them holds the lock), not %zu",
                  HILOCK_MASTERS_MAX, count);
        return -1;
    }
    memcpy(r->masters_text, list, len + 1);
    char *entry = r->masters_text;
    for (size_t n = 0; n < count; n++) {
        char *comma = strchr(entry, ',');
        if (comma)
            *comma = '\0';
        if (entry_parse(r, entry, n) != 0)
            return -1;
        if (comma)
            entry = comma + 1;
    }
    r->nmasters = count;
    return 0;
}
