/* SPDX-License-Identifier: BSD-3-Clause */
/* promtext.c -- see promtext.h. One line at a time, one token at a time:
 * a cursor over the line, and a function per token that either takes it
 * or says what is wrong. */
#include "promtext.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The line being read: [p, end). */
struct cursor {
    const char *p, *end;
    char *err;
    size_t errlen;
    int line;
};

static int fail(struct cursor *c, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(c->err, c->errlen, "line %d: ", c->line);
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < c->errlen)
        vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static void skip_blank(struct cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
        c->p++;
}

static int name_char(char ch, int first, int colon)
{
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_')
        return 1;
    if (colon && ch == ':')
        return 1;
    return !first && ch >= '0' && ch <= '9';
}

/* A metric name ([a-zA-Z_:][a-zA-Z0-9_:]*), or a label name (no colon)
 * when colon is 0, into out. */
static int take_name(struct cursor *c, char *out, int colon)
{
    size_t n = 0;
    while (c->p < c->end && name_char(*c->p, n == 0, colon)) {
        if (n + 1 >= PROM_NAME_MAX)
            return fail(c, "name too long");
        out[n++] = *c->p++;
    }
    out[n] = '\0';
    return n ? 0 : fail(c, "a name expected");
}

/* Text up to the closing quote (quoted) or the end of the line, with its
 * escapes undone (\" only when quoted), into out. */
static int take_text(struct cursor *c, char *out, int quoted)
{
    size_t n = 0;
    for (;;) {
        if (c->p == c->end) {
            if (quoted)
                return fail(c, "unterminated label value");
            break;
        }
        char ch = *c->p++;
        if (quoted && ch == '"')
            break;
        if (ch == '\\') {
            char e = c->p < c->end ? *c->p++ : '\0';
            if (e == 'n')
                ch = '\n';
            else if (e == '\\' || (quoted && e == '"'))
                ch = e;
            else
                return fail(c, "bad escape \\%c", e ? e : '0');
        }
        if (n + 1 >= PROM_VALUE_MAX)
            return fail(c, "text too long");
        out[n++] = ch;
    }
    out[n] = '\0';
    return 0;
}

/* One label="value" into s. */
static int take_label(struct cursor *c, struct prom_sample *s)
{
    if (s->nlabels == PROM_LABELS_MAX)
        return fail(c, "too many labels");
    struct prom_label *l = &s->labels[s->nlabels];
    if (take_name(c, l->name, 0))
        return -1;
    if (prom_label(s, l->name))
        return fail(c, "label %s given twice", l->name);
    skip_blank(c);
    if (c->p == c->end || *c->p++ != '=')
        return fail(c, "'=' expected after label %s", l->name);
    skip_blank(c);
    if (c->p == c->end || *c->p++ != '"')
        return fail(c, "'\"' expected for label %s", l->name);
    if (take_text(c, l->value, 1))
        return -1;
    s->nlabels++;
    return 0;
}

/* "{" label { "," label } [","] "}", the opening brace already taken. */
static int take_labels(struct cursor *c, struct prom_sample *s)
{
    for (;;) {
        skip_blank(c);
        if (c->p < c->end && *c->p == '}') {
            c->p++;
            return 0;
        }
        if (take_label(c, s))
            return -1;
        skip_blank(c);
        if (c->p < c->end && *c->p == ',')
            c->p++;
        else if (c->p == c->end || *c->p != '}')
            return fail(c, "',' or '}' expected");
    }
}

/* The next blank-separated token into buf. */
static size_t take_token(struct cursor *c, char *buf, size_t len)
{
    size_t n = 0;
    while (c->p < c->end && *c->p != ' ' && *c->p != '\t') {
        if (n + 1 < len)
            buf[n] = *c->p;
        n++;
        c->p++;
    }
    buf[n < len ? n : len - 1] = '\0';
    return n;
}

/* A sample value: a float, +Inf, -Inf or NaN. */
static int take_value(struct cursor *c, double *v)
{
    char buf[64], *endp;
    size_t n = take_token(c, buf, sizeof(buf));
    if (n == 0)
        return fail(c, "a value expected");
    if (strcmp(buf, "+Inf") == 0 || strcmp(buf, "Inf") == 0) {
        *v = INFINITY;
        return 0;
    }
    if (strcmp(buf, "-Inf") == 0) {
        *v = -INFINITY;
        return 0;
    }
    if (strcmp(buf, "NaN") == 0) {
        *v = NAN;
        return 0;
    }
    errno = 0;
    *v = strtod(buf, &endp);
    if (n >= sizeof(buf) || *endp || errno || isnan(*v) || isinf(*v))
        return fail(c, "bad value '%s'", buf);
    return 0;
}

/* The optional timestamp (integer ms), then nothing but blanks. */
static int take_timestamp(struct cursor *c, struct prom_sample *s)
{
    char buf[32], *endp;
    skip_blank(c);
    if (c->p == c->end)
        return 0;
    size_t n = take_token(c, buf, sizeof(buf));
    errno = 0;
    s->timestamp_ms = strtoll(buf, &endp, 10);
    if (n >= sizeof(buf) || *endp || errno)
        return fail(c, "bad timestamp '%s'", buf);
    s->has_timestamp = 1;
    skip_blank(c);
    return c->p == c->end ? 0 : fail(c, "text after the timestamp");
}

/* The family name a sample called name belongs to: name itself, or the
 * histogram's or summary's whose _bucket, _sum or _count it is. */
static const struct prom_family *family_of(const struct prom_doc *doc,
                                           const char *name)
{
    static const char *const suffixes[] = {"_bucket", "_sum", "_count"};
    const struct prom_family *f = prom_family(doc, name);
    if (f && f->type[0])
        return f;
    size_t len = strlen(name);
    for (size_t i = 0; i < 3; i++) {
        size_t sl = strlen(suffixes[i]);
        char base[PROM_NAME_MAX];
        if (len <= sl || strcmp(name + len - sl, suffixes[i]) != 0)
            continue;
        memcpy(base, name, len - sl);
        base[len - sl] = '\0';
        const struct prom_family *b = prom_family(doc, base);
        if (b && (strcmp(b->type, "histogram") == 0 ||
                  strcmp(b->type, "summary") == 0))
            return b;
    }
    return f;
}

static int sample_line(struct cursor *c, struct prom_doc *doc)
{
    struct prom_sample s;
    memset(&s, 0, sizeof(s));
    if (take_name(c, s.name, 1))
        return -1;
    if (c->p < c->end && *c->p == '{') {
        c->p++;
        if (take_labels(c, &s))
            return -1;
    }
    if (c->p == c->end || (*c->p != ' ' && *c->p != '\t'))
        return fail(c, "a blank and a value expected after %s", s.name);
    skip_blank(c);
    if (take_value(c, &s.value) || take_timestamp(c, &s))
        return -1;
    const struct prom_family *f = family_of(doc, s.name);
    if (f && strcmp(f->type, "histogram") == 0 &&
        strcmp(s.name + strlen(f->name), "_bucket") == 0 &&
        !prom_label(&s, "le"))
        return fail(c, "%s without le", s.name);
    struct prom_sample *m =
        realloc(doc->samples, (doc->nsamples + 1) * sizeof(*m));
    if (!m)
        return fail(c, "out of memory");
    doc->samples = m;
    m[doc->nsamples++] = s;
    return 0;
}

/* The family called name, made when there is none; NULL without memory. */
static struct prom_family *family_get(struct prom_doc *doc, const char *name)
{
    struct prom_family *f = (struct prom_family *)prom_family(doc, name);
    if (f)
        return f;
    f = realloc(doc->families, (doc->nfamilies + 1) * sizeof(*f));
    if (!f)
        return NULL;
    doc->families = f;
    f = &f[doc->nfamilies++];
    memset(f, 0, sizeof(*f));
    snprintf(f->name, sizeof(f->name), "%s", name);
    return f;
}

/* Whether a sample of family name came already. */
static int sampled(const struct prom_doc *doc, const char *name)
{
    for (size_t i = 0; i < doc->nsamples; i++) {
        const char *s = doc->samples[i].name;
        size_t n = strlen(name);
        if (strncmp(s, name, n) == 0 &&
            (!s[n] || !strcmp(s + n, "_bucket") || !strcmp(s + n, "_sum") ||
             !strcmp(s + n, "_count")))
            return 1;
    }
    return 0;
}

/* "# TYPE name type" or "# HELP name text", after the keyword. */
static int meta_line(struct cursor *c, struct prom_doc *doc, int type)
{
    static const char *const types[] = {"counter", "gauge", "histogram",
                                        "summary", "untyped"};
    char name[PROM_NAME_MAX], word[16];
    skip_blank(c);
    if (take_name(c, name, 1))
        return -1;
    skip_blank(c);
    struct prom_family *f = family_get(doc, name);
    if (!f)
        return fail(c, "out of memory");
    if (!type)
        return take_text(c, f->help, 0);
    take_token(c, word, sizeof(word));
    skip_blank(c);
    size_t i = 0;
    while (i < 5 && strcmp(word, types[i]) != 0)
        i++;
    if (i == 5 || c->p != c->end)
        return fail(c, "bad type for %s", name);
    if (f->type[0])
        return fail(c, "TYPE of %s given twice", name);
    if (sampled(doc, name))
        return fail(c, "TYPE of %s after its samples", name);
    snprintf(f->type, sizeof(f->type), "%s", word);
    return 0;
}

static int comment_line(struct cursor *c, struct prom_doc *doc)
{
    char word[8];
    c->p++; /* '#' */
    skip_blank(c);
    take_token(c, word, sizeof(word));
    if (strcmp(word, "HELP") == 0 || strcmp(word, "TYPE") == 0)
        return meta_line(c, doc, word[0] == 'T');
    return 0; /* any other comment */
}

int prom_parse(const char *text, size_t len, struct prom_doc *doc, char *err,
               size_t errlen)
{
    struct cursor c = {text, text, err, errlen, 0};
    const char *end = text + len;
    memset(doc, 0, sizeof(*doc));
    while (c.p < end) {
        const char *nl = memchr(c.p, '\n', (size_t)(end - c.p));
        c.end = nl ? nl : end;
        c.line++;
        skip_blank(&c);
        if (c.p < c.end &&
            (*c.p == '#' ? comment_line(&c, doc) : sample_line(&c, doc)))
            return -1;
        c.p = nl ? nl + 1 : end;
    }
    return 0;
}

void prom_free(struct prom_doc *doc)
{
    free(doc->samples);
    free(doc->families);
    memset(doc, 0, sizeof(*doc));
}

const char *prom_label(const struct prom_sample *s, const char *name)
{
    for (size_t i = 0; i < s->nlabels; i++)
        if (strcmp(s->labels[i].name, name) == 0)
            return s->labels[i].value;
    return NULL;
}

const struct prom_sample *prom_find(const struct prom_doc *doc,
                                    const char *name, const char *label,
                                    const char *value)
{
    for (size_t i = 0; i < doc->nsamples; i++) {
        const struct prom_sample *s = &doc->samples[i];
        const char *v = label ? prom_label(s, label) : NULL;
        if (strcmp(s->name, name) == 0 &&
            (!label || (v && strcmp(v, value) == 0)))
            return s;
    }
    return NULL;
}

const struct prom_family *prom_family(const struct prom_doc *doc,
                                      const char *name)
{
    for (size_t i = 0; i < doc->nfamilies; i++)
        if (strcmp(doc->families[i].name, name) == 0)
            return &doc->families[i];
    return NULL;
}

/* prom_histogram's failure: the reason into err. */
static int hist_fail(char *err, size_t errlen, const char *name,
                     const char *why)
{
    snprintf(err, errlen, "histogram %s: %s", name, why);
    return -1;
}

int prom_histogram(const struct prom_doc *doc, const char *name,
                   struct prom_histogram *h, char *err, size_t errlen)
{
    char bucket[PROM_NAME_MAX + 8], sum[PROM_NAME_MAX + 8],
        count[PROM_NAME_MAX + 8];
    const struct prom_family *f = prom_family(doc, name);
    memset(h, 0, sizeof(*h));
    if (!f || strcmp(f->type, "histogram") != 0)
        return hist_fail(err, errlen, name, "no TYPE histogram line");
    snprintf(bucket, sizeof(bucket), "%s_bucket", name);
    snprintf(sum, sizeof(sum), "%s_sum", name);
    snprintf(count, sizeof(count), "%s_count", name);
    for (size_t i = 0; i < doc->nsamples; i++) {
        const struct prom_sample *s = &doc->samples[i];
        if (strcmp(s->name, bucket) != 0)
            continue;
        char *endp;
        const char *le = prom_label(s, "le");
        double bound = strcmp(le, "+Inf") == 0 ? INFINITY : strtod(le, &endp);
        if (!isinf(bound) && (*endp || endp == le))
            return hist_fail(err, errlen, name, "bad le");
        if (h->n == PROM_BUCKETS_MAX)
            return hist_fail(err, errlen, name, "too many buckets");
        if (h->n && bound <= h->le[h->n - 1])
            return hist_fail(err, errlen, name, "bounds do not rise");
        if (h->n && s->value < h->count_le[h->n - 1])
            return hist_fail(err, errlen, name, "counts are not cumulative");
        h->le[h->n] = bound;
        h->count_le[h->n++] = s->value;
    }
    const struct prom_sample *s = prom_find(doc, sum, NULL, NULL);
    const struct prom_sample *n = prom_find(doc, count, NULL, NULL);
    if (!h->n || !isinf(h->le[h->n - 1]))
        return hist_fail(err, errlen, name, "no +Inf bucket");
    if (!s || !n)
        return hist_fail(err, errlen, name, "no _sum or no _count");
    h->sum = s->value;
    h->count = n->value;
    if (h->count != h->count_le[h->n - 1])
        return hist_fail(err, errlen, name, "+Inf bucket is not _count");
    return 0;
}

double prom_quantile(const struct prom_histogram *h, double q)
{
    if (h->count <= 0)
        return NAN;
    for (size_t i = 0; i < h->n; i++)
        if (h->count_le[i] >= q * h->count)
            return h->le[i];
    return INFINITY;
}
