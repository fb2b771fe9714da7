/* SPDX-License-Identifier: BSD-3-Clause */
/* table.c -- rows of strings printed with aligned columns.
 *
 * Every figure a scenario prints goes through a table, so columns line up
 * whatever the numbers are, and a reader (or grep) finds one figure per
 * line. Allocation failures drop the cell (it prints empty). */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

void table_init(struct table *t, const char *head, ...)
{
    va_list ap;
    memset(t, 0, sizeof(*t));
    va_start(ap, head);
    for (const char *h = head; h && t->ncols < TABLE_COLS;
         h = va_arg(ap, const char *))
        t->head[t->ncols++] = strdup(h);
    va_end(ap);
}

void table_row(struct table *t, ...)
{
    va_list ap;
    if (t->nrows == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        char **c = realloc(t->cells, cap * (size_t)t->ncols * sizeof(*c));
        if (!c)
            return;
        t->cells = c;
        t->cap = cap;
    }
    char **row = t->cells + t->nrows++ * (size_t)t->ncols;
    va_start(ap, t);
    for (int i = 0; i < t->ncols; i++) {
        const char *s = va_arg(ap, const char *);
        row[i] = strdup(s ? s : "");
    }
    va_end(ap);
}

/* Width of column i over the header and every row. */
static size_t col_width(const struct table *t, int i)
{
    size_t w = t->head[i] ? strlen(t->head[i]) : 0;
    for (size_t r = 0; r < t->nrows; r++) {
        const char *s = t->cells[r * (size_t)t->ncols + i];
        if (s && strlen(s) > w)
            w = strlen(s);
    }
    return w;
}

/* Print one line of cells with the widths w. */
static void print_line(FILE *f, char *const *cells, int n, const size_t *w)
{
    fputs("  ", f);
    for (int i = 0; i < n; i++) {
        const char *s = cells[i] ? cells[i] : "";
        if (i == 0)
            fprintf(f, "%-*s", (int)w[i], s);
        else
            fprintf(f, "  %*s", (int)w[i], s);
    }
    fputc('\n', f);
}

void table_print(struct table *t, FILE *f)
{
    size_t w[TABLE_COLS];
    for (int i = 0; i < t->ncols; i++)
        w[i] = col_width(t, i);
    print_line(f, t->head, t->ncols, w);
    for (size_t r = 0; r < t->nrows; r++)
        print_line(f, t->cells + r * (size_t)t->ncols, t->ncols, w);
    for (size_t r = 0; r < t->nrows * (size_t)t->ncols; r++)
        free(t->cells[r]);
    for (int i = 0; i < t->ncols; i++)
        free(t->head[i]);
    free(t->cells);
    memset(t, 0, sizeof(*t));
}

void figure_row(struct table *t, const char *figure, const char *value,
                const char *target, int met)
{
    table_row(t, figure, value, target ? target : "",
              target ? (met ? "ok" : "MISSED") : "");
}
