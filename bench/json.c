/* SPDX-License-Identifier: BSD-3-Clause */
/* json.c -- a streaming JSON writer for --json.
 *
 * Values go straight to the file; the writer only remembers, per nesting
 * level, whether a comma is due. Every function accepts a NULL writer and
 * does nothing, so scenarios write their figures unconditionally. Numbers
 * that are not finite are written as null. */
#include "bench.h"

#include <math.h>
#include <stdlib.h>

#define JSON_DEPTH 16

struct json {
    FILE *f;
    int depth;
    int first[JSON_DEPTH];  /* nothing written yet at this level */
    char close[JSON_DEPTH]; /* '}' or ']' that ends this level */
};

struct json *json_open(const char *path)
{
    struct json *j = calloc(1, sizeof(*j));
    if (!j || !(j->f = fopen(path, "w"))) {
        fprintf(stderr, "hilock-bench: cannot write %s\n", path);
        free(j);
        return NULL;
    }
    j->first[0] = 1;
    return j;
}

int json_close(struct json *j)
{
    if (!j)
        return 0;
    fputc('\n', j->f);
    int bad = ferror(j->f) != 0;
    bad |= fclose(j->f) != 0;
    free(j);
    return bad ? -1 : 0;
}

static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* The comma, indentation and "key": before a value. */
static void lead(struct json *j, const char *key)
{
    if (!j->first[j->depth])
        fputc(',', j->f);
    j->first[j->depth] = 0;
    if (j->depth > 0)
        fprintf(j->f, "\n%*s", 2 * j->depth, "");
    if (key) {
        put_string(j->f, key);
        fputs(": ", j->f);
    }
}

static void open_level(struct json *j, const char *key, char c)
{
    if (!j)
        return;
    lead(j, key);
    fputc(c, j->f);
    if (j->depth + 1 < JSON_DEPTH) {
        j->first[++j->depth] = 1;
        j->close[j->depth] = c == '{' ? '}' : ']';
    }
}

void json_obj(struct json *j, const char *key)
{
    open_level(j, key, '{');
}

void json_arr(struct json *j, const char *key)
{
    open_level(j, key, '[');
}

/* Close the innermost object or array. */
void json_end(struct json *j)
{
    if (!j || j->depth == 0)
        return;
    int empty = j->first[j->depth];
    char c = j->close[j->depth];
    j->depth--;
    if (!empty)
        fprintf(j->f, "\n%*s", 2 * j->depth, "");
    fputc(c, j->f);
}

void json_int(struct json *j, const char *key, int64_t v)
{
    if (!j)
        return;
    lead(j, key);
    fprintf(j->f, "%lld", (long long)v);
}

void json_num(struct json *j, const char *key, double v)
{
    if (!j)
        return;
    lead(j, key);
    if (isfinite(v))
        fprintf(j->f, "%.6g", v);
    else
        fputs("null", j->f);
}

void json_str(struct json *j, const char *key, const char *v)
{
    if (!j)
        return;
    lead(j, key);
    if (v)
        put_string(j->f, v);
    else
        fputs("null", j->f);
}

void json_bool(struct json *j, const char *key, int v)
{
    if (!j)
        return;
    lead(j, key);
    fputs(v ? "true" : "false", j->f);
}

void json_latency(struct json *j, const char *key, struct samples *s)
{
    if (!j)
        return;
    json_obj(j, key);
    json_int(j, "n", (int64_t)s->n);
    json_num(j, "mean_ns", samples_mean(s));
    json_int(j, "p50_ns", samples_pct(s, 50));
    json_int(j, "p90_ns", samples_pct(s, 90));
    json_int(j, "p99_ns", samples_pct(s, 99));
    json_int(j, "p999_ns", samples_pct(s, 99.9));
    json_int(j, "max_ns", samples_max(s));
    json_arr(j, "cdf");
    for (int i = 0; s->n && i <= 1000; i++) {
        fprintf(j->f, "%s[%.3f, %lld]", i ? ", " : "", i / 1000.0,
                (long long)samples_pct(s, i ? i / 10.0 : 0.0001));
        j->first[j->depth] = 0;
    }
    json_end(j);
    json_end(j);
}

void json_rate(struct json *j, const char *key, const struct rate *r)
{
    if (!j)
        return;
    double per_s = 1e9 / (double)r->bucket_ns;
    json_obj(j, key);
    json_int(j, "bucket_ns", r->bucket_ns);
    json_arr(j, "per_second");
    for (size_t i = 0; i < r->n; i++) {
        fprintf(j->f, "%s%.0f", i ? ", " : "", r->count[i] * per_s);
        j->first[j->depth] = 0;
    }
    json_end(j);
    json_end(j);
}
