/* SPDX-License-Identifier: BSD-3-Clause */
/* stats.c -- latency samples, percentiles, throughput over time, and the
 * formatting of times and counts.
 *
 * Samples are kept whole (8 bytes each) rather than in a histogram: runs are
 * bounded, and exact percentiles of a few million samples cost one sort. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

/* Grow s to hold at least want samples. 0 or -1. */
static int samples_grow(struct samples *s, size_t want)
{
    if (want <= s->cap)
        return 0;
    size_t cap = s->cap ? s->cap : 1024;
    while (cap < want)
        cap *= 2;
    int64_t *v = realloc(s->v, cap * sizeof(*v));
    if (!v)
        return -1;
    s->v = v;
    s->cap = cap;
    return 0;
}

int samples_add(struct samples *s, int64_t x)
{
    if (s->n == s->cap && samples_grow(s, s->n + 1) != 0)
        return -1;
    s->v[s->n++] = x;
    s->sorted = 0;
    return 0;
}

int samples_reserve(struct samples *s, size_t cap)
{
    if (samples_grow(s, cap) != 0)
        return -1;
    memset(s->v + s->n, 0, (s->cap - s->n) * sizeof(*s->v));
    return 0;
}

int samples_append(struct samples *dst, const struct samples *src)
{
    if (samples_grow(dst, dst->n + src->n) != 0)
        return -1;
    if (src->n)
        memcpy(dst->v + dst->n, src->v, src->n * sizeof(*src->v));
    dst->n += src->n;
    dst->sorted = 0;
    return 0;
}

void samples_free(struct samples *s)
{
    free(s->v);
    memset(s, 0, sizeof(*s));
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

static void samples_sort(struct samples *s)
{
    if (!s->sorted && s->n > 1)
        qsort(s->v, s->n, sizeof(*s->v), cmp_i64);
    s->sorted = 1;
}

int64_t samples_pct(struct samples *s, double p)
{
    if (s->n == 0)
        return 0;
    samples_sort(s);
    size_t rank = (size_t)(p / 100.0 * (double)s->n + 0.999999);
    return s->v[rank == 0 ? 0 : rank > s->n ? s->n - 1 : rank - 1];
}

int64_t samples_max(struct samples *s)
{
    return samples_pct(s, 100);
}

double samples_mean(const struct samples *s)
{
    double sum = 0;
    for (size_t i = 0; i < s->n; i++)
        sum += (double)s->v[i];
    return s->n ? sum / (double)s->n : 0;
}

void rate_init(struct rate *r, int64_t t0_ns, int64_t bucket_ns)
{
    memset(r, 0, sizeof(*r));
    r->t0_ns = t0_ns;
    r->bucket_ns = bucket_ns > 0 ? bucket_ns : 100000000;
}

void rate_hit(struct rate *r, int64_t t_ns)
{
    int64_t d = t_ns > r->t0_ns ? t_ns - r->t0_ns : 0;
    size_t i = (size_t)(d / r->bucket_ns);
    if (i >= r->cap) {
        size_t cap = r->cap ? r->cap : 256;
        while (cap <= i)
            cap *= 2;
        uint32_t *c = realloc(r->count, cap * sizeof(*c));
        if (!c)
            return;
        memset(c + r->cap, 0, (cap - r->cap) * sizeof(*c));
        r->count = c;
        r->cap = cap;
    }
    r->count[i]++;
    if (i + 1 > r->n)
        r->n = i + 1;
}

void rate_free(struct rate *r)
{
    free(r->count);
    memset(r, 0, sizeof(*r));
}

const char *fmt_ns(int64_t ns, char *buf, size_t len)
{
    if (ns < 10000)
        snprintf(buf, len, "%.2f us", (double)ns / 1e3);
    else if (ns < 10000000)
        snprintf(buf, len, "%.0f us", (double)ns / 1e3);
    else if (ns < 10000000000)
        snprintf(buf, len, "%.1f ms", (double)ns / 1e6);
    else
        snprintf(buf, len, "%.2f s", (double)ns / 1e9);
    return buf;
}

const char *fmt_count(double v, char *buf, size_t len)
{
    char digits[32];
    int neg = v < 0;
    snprintf(digits, sizeof digits, "%.0f", neg ? -v : v);
    size_t n = strlen(digits), o = 0;
    if (neg && o + 1 < len)
        buf[o++] = '-';
    for (size_t i = 0; i < n && o + 2 < len; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            buf[o++] = ' ';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}
