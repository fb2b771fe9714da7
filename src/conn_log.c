/* SPDX-License-Identifier: BSD-3-Clause */
/* conn_log.c -- how a connection names its server and logs: every line
 * to the log callback starts with the connection's role and host:port
 * (or unix socket), and a connection that keeps failing for one cause
 * logs it once per change of state. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "conn_impl.h"

const char *conn_addr(const struct conn *conn, char *buf, size_t len)
{
    const struct conn_endpoint *ep = &conn->ep;
    if (ep->unix_path)
        snprintf(buf, len, "%s", ep->unix_path);
    else if (!ep->host || !*ep->host)
        snprintf(buf, len, "(address not known yet)");
    else if (strchr(ep->host, ':'))
        snprintf(buf, len, "[%s]:%d", ep->host, ep->port);
    else
        snprintf(buf, len, "%s:%d", ep->host, ep->port);
    return buf;
}

/* Write one formatted line, naming the server, to the log callback. */
static void conn_vlog(const struct conn *conn, enum hilock_log_level level,
                      const char *fmt, va_list ap)
{
    const struct hilock_options *o = conn->cfg->opts;
    char line[CONN_ADDR_MAX + 320], addr[CONN_ADDR_MAX];
    int n;
    if (!o->log_cb)
        return;
    n = snprintf(line, sizeof(line), "%s connection to %s: ", conn->what,
                 conn_addr(conn, addr, sizeof(addr)));
    vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    o->log_cb(level, line, o->log_arg);
}

void conn_log(const struct conn *conn, enum hilock_log_level level,
              const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    conn_vlog(conn, level, fmt, ap);
    va_end(ap);
}

/* Log why the connection failed with err: a warning (an error for a cause
 * other than the network), or only a debug line when it was down for that
 * same cause already. A server that keeps refusing costs one line per
 * change of state, not one per reconnect. */
void conn_log_down(const struct conn *conn, int err, const char *fmt,
                   ...)
{
    enum hilock_log_level level = HILOCK_LOG_DEBUG;
    va_list ap;
    if (conn->err != err)
        level = err == HILOCK_ECONN ? HILOCK_LOG_WARN : HILOCK_LOG_ERROR;
    va_start(ap, fmt);
    conn_vlog(conn, level, fmt, ap);
    va_end(ap);
}
