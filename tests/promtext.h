/* SPDX-License-Identifier: BSD-3-Clause */
/* promtext.h -- a reader of the Prometheus text exposition format (0.0.4),
 * for the tests and the inventory demo: what a scraper would make of a
 * /metrics page, so that they check the page, not a pattern in it.
 *
 * A tokenizer over lines: "# HELP name text", "# TYPE name type", other
 * comments, blank lines, and samples
 *
 *   name [ "{" label="value" { "," label="value" } [","] "}" ] value [ts]
 *
 * with the escapes \\, \" and \n in label values (and \\, \n in HELP text),
 * values as Go's ParseFloat takes them (+Inf, -Inf, NaN), an optional
 * integer timestamp in ms. It rejects what Prometheus rejects: a bad name,
 * an unterminated or badly escaped label value, a label given twice, a
 * missing value, anything after the timestamp, a TYPE given twice or after
 * samples of its family, an unknown type. Test support: fixed-size names
 * and values, errors as a message. */
#ifndef HILOCK_TESTS_PROMTEXT_H
#define HILOCK_TESTS_PROMTEXT_H

#include <stddef.h>

#define PROM_NAME_MAX 128
#define PROM_VALUE_MAX 256
#define PROM_LABELS_MAX 8
#define PROM_BUCKETS_MAX 64

struct prom_label {
    char name[PROM_NAME_MAX];
    char value[PROM_VALUE_MAX]; /* unescaped */
};

struct prom_sample {
    char name[PROM_NAME_MAX];
    size_t nlabels;
    struct prom_label labels[PROM_LABELS_MAX];
    double value;
    int has_timestamp;
    long long timestamp_ms;
};

/* What the HELP and TYPE lines said of one metric family. */
struct prom_family {
    char name[PROM_NAME_MAX];
    char type[16];              /* "" when no TYPE line came */
    char help[PROM_VALUE_MAX];  /* unescaped; "" when no HELP line came */
};

struct prom_doc {
    struct prom_sample *samples;
    size_t nsamples;
    struct prom_family *families;
    size_t nfamilies;
};

/* Parse len bytes of text into *doc (free it with prom_free, also after a
 * failure). 0, or -1 with the line number and the reason in err. */
int prom_parse(const char *text, size_t len, struct prom_doc *doc, char *err,
               size_t errlen);
void prom_free(struct prom_doc *doc);

/* The value of label name of s, or NULL. */
const char *prom_label(const struct prom_sample *s, const char *name);
/* The first sample called name whose label has value (label NULL: the first
 * one called name), or NULL. */
const struct prom_sample *prom_find(const struct prom_doc *doc,
                                    const char *name, const char *label,
                                    const char *value);
/* The family called name, or NULL. */
const struct prom_family *prom_family(const struct prom_doc *doc,
                                      const char *name);

/* One histogram: its buckets (upper bound, cumulative count) in the order
 * of the page, its _sum and _count. */
struct prom_histogram {
    size_t n;
    double le[PROM_BUCKETS_MAX];
    double count_le[PROM_BUCKETS_MAX];
    double sum;
    double count;
};
/* Collect histogram name (samples name_bucket, name_sum, name_count) and
 * check it as a scraper would: its TYPE is histogram, the bounds rise, the
 * cumulative counts never fall, the last bound is +Inf and its count is
 * _count, _sum is there. 0, or -1 with the reason in err. */
int prom_histogram(const struct prom_doc *doc, const char *name,
                   struct prom_histogram *h, char *err, size_t errlen);
/* The upper bound of the first bucket of h whose cumulative count reaches
 * a fraction q (0 < q <= 1) of the observations: a bound on the
 * q-quantile, as fine as the buckets. NAN for an empty histogram. */
double prom_quantile(const struct prom_histogram *h, double q);

#endif
