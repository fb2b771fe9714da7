/* SPDX-License-Identifier: BSD-3-Clause */
/* metrics.c -- hilock_stats_prometheus: struct hilock_stats as Prometheus
 * text (exposition format 0.0.4), so that a program's GET /metrics needs
 * no formatting of its own.
 *
 * Pure: it reads the caller's copy of the counters and writes into the
 * caller's buffer, snprintf style; no allocation, no clock, no client.
 * Numbers are written as integers (seconds as <s>.<6 digits>), never with
 * %f, so that a program that set LC_NUMERIC still gets a '.'. */
#include <hilock/hilock.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* The counters and gauges, as Prometheus names them (counters end in
 * _total). */
static const struct metric {
    const char *name, *type, *help;
    size_t offset;
} metrics[] = {
#define M(name, type, field, help) \
    {name, type, help, offsetof(struct hilock_stats, field)}
    M("hilock_acquisitions_total", "counter", acquisitions,
      "Lock acquisitions that succeeded, re-entries included."),
    M("hilock_reentries_total", "counter", reentries,
      "Acquisitions by an owner that held the lock already."),
    M("hilock_waits_total", "counter", waits,
      "Acquisitions that waited in their lock's queue."),
    M("hilock_timeouts_total", "counter", timeouts,
      "Acquisitions that timed out."),
    M("hilock_cancels_total", "counter", cancels,
      "Acquisitions canceled or freed while pending."),
    M("hilock_handoffs_total", "counter", handoffs,
      "Locks handed to a waiter by a release (fair mode)."),
    M("hilock_locks_lost_total", "counter", lost,
      "Holds found lost before their release."),
    M("hilock_renewals_sent_total", "counter", renewals_sent,
      "Lock renewals sent, one per lock."),
    M("hilock_renewals_failed_total", "counter", renewals_failed,
      "Lock renewals not confirmed."),
    M("hilock_reconnects_total", "counter", reconnects,
      "Times the command connection came back after a drop."),
    M("hilock_requests_in_flight", "gauge", requests_inflight,
      "Requests to Redis submitted and not completed."),
    M("hilock_waiters_parked", "gauge", waiters_parked,
      "Acquisitions waiting in a lock's queue now."),
    M("hilock_subscriptions", "gauge", subscriptions,
      "Lock channels subscribed now."),
#undef M
};

/* Where the text goes: buf of size bytes, and how long it is so far (also
 * past size: that is the length the caller needs). */
struct out {
    char *buf;
    size_t size;
    size_t len;
    int failed;
};

/* Append printf-style to o; past the end of the buffer only the length
 * grows. An encoding error marks o failed. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void put(struct out *o, const char *fmt, ...)
{
    va_list ap;
    int n;
    char *at = o->len < o->size ? o->buf + o->len : NULL;
    size_t room = o->len < o->size ? o->size - o->len : 0;
    va_start(ap, fmt);
    n = vsnprintf(at, room, fmt, ap);
    va_end(ap);
    if (n < 0)
        o->failed = 1;
    else
        o->len += (size_t)n;
}

/* "{labels}" or "{labels,extra}" or "{extra}" or "" into o. */
static void put_labels(struct out *o, const char *labels, const char *extra)
{
    int have = labels && *labels;
    if (!have && !extra)
        return;
    put(o, "{%s%s%s}", have ? labels : "", have && extra ? "," : "",
        extra ? extra : "");
}

/* Microseconds as seconds with six decimals, without floating point. */
static void put_seconds(struct out *o, uint64_t us)
{
    put(o, "%" PRIu64 ".%06" PRIu64, us / 1000000, us % 1000000);
}

/* One histogram (HILOCK_HIST_BUCKETS counts on log2 microsecond bounds,
 * see hilock.h) and its sum, in seconds: cumulative buckets, the last one
 * +Inf, then _sum and _count. */
static void put_histogram(struct out *o, const char *labels, const char *name,
                          const char *help, const uint64_t *hist,
                          uint64_t sum_us)
{
    uint64_t n = 0;
    char le[40];
    put(o, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    for (int i = 0; i < HILOCK_HIST_BUCKETS; i++) {
        uint64_t bound = UINT64_C(1) << i;
        n += hist[i];
        if (i == HILOCK_HIST_BUCKETS - 1)
            snprintf(le, sizeof(le), "le=\"+Inf\"");
        else
            snprintf(le, sizeof(le), "le=\"%" PRIu64 ".%06" PRIu64 "\"",
                     bound / 1000000, bound % 1000000);
        put(o, "%s_bucket", name);
        put_labels(o, labels, le);
        put(o, " %" PRIu64 "\n", n);
    }
    put(o, "%s_sum", name);
    put_labels(o, labels, NULL);
    put(o, " ");
    put_seconds(o, sum_us);
    put(o, "\n%s_count", name);
    put_labels(o, labels, NULL);
    put(o, " %" PRIu64 "\n", n);
}

int hilock_stats_prometheus(const struct hilock_stats *st, size_t st_size,
                            const char *labels, char *buf, size_t size)
{
    struct hilock_stats all; /* the caller's copy; fields its header did
                                not have yet read as 0 */
    struct out o = {buf, size, 0, 0};
    if (!st || st_size == 0 || (!buf && size > 0))
        return HILOCK_EINVAL;
    memset(&all, 0, sizeof(all));
    memcpy(&all, st, st_size < sizeof(all) ? st_size : sizeof(all));
    for (size_t i = 0; i < sizeof(metrics) / sizeof(metrics[0]); i++) {
        const struct metric *m = &metrics[i];
        uint64_t v;
        memcpy(&v, (const char *)&all + m->offset, sizeof(v));
        put(&o, "# HELP %s %s\n# TYPE %s %s\n%s", m->name, m->help, m->name,
            m->type, m->name);
        put_labels(&o, labels, NULL);
        put(&o, " %" PRIu64 "\n", v);
    }
    put_histogram(&o, labels, "hilock_wait_seconds",
                  "Time acquisitions spent in a lock's queue.", all.wait_us,
                  all.wait_us_sum);
    put_histogram(&o, labels, "hilock_request_seconds",
                  "Time from a request to Redis to its completion.",
                  all.request_us, all.request_us_sum);
    if (o.failed || o.len > INT32_MAX)
        return HILOCK_EINVAL;
    return (int)o.len;
}
