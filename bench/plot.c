/* SPDX-License-Identifier: BSD-3-Clause */
/* plot.c -- PNG plots through gnuplot, when it is installed.
 *
 * For each plot we write the data (<name>.dat), the gnuplot script
 * (<name>.gp) and run gnuplot on it, bounded in time, to get <name>.png, all
 * in the --plot directory. Without gnuplot on PATH nothing is written and
 * the run says so at the end; the figures themselves never depend on it. */
#include "bench.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define GNUPLOT_TIMEOUT_MS 30000

int plot_available(void)
{
    const char *path = getenv("PATH");
    char buf[4096];
    while (path && *path) {
        const char *end = strchr(path, ':');
        size_t n = end ? (size_t)(end - path) : strlen(path);
        snprintf(buf, sizeof buf, "%.*s/gnuplot", (int)n, path);
        if (n > 0 && access(buf, X_OK) == 0)
            return 1;
        path = end ? end + 1 : NULL;
    }
    return 0;
}

/* Run gnuplot on script, at most GNUPLOT_TIMEOUT_MS. 0 or -1. */
static int run_gnuplot(const char *script)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execlp("gnuplot", "gnuplot", script, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    int64_t deadline = now_ns() + (int64_t)GNUPLOT_TIMEOUT_MS * 1000000;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (now_ns() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        sleep_ms(10);
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* Decide whether to plot at all; on yes, make the directory and fill the
 * three paths. 1 go on, 0 skip (counted), -1 failed (counted). */
static int plot_prepare(struct bench *b, const char *name, char *dat,
                        char *gp, char *png, size_t len)
{
    if (!b->o.plot_dir)
        return 0;
    if (!plot_available()) {
        b->plots_skipped++;
        return 0;
    }
    if (mkdir(b->o.plot_dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "hilock-bench: mkdir %s: %s\n", b->o.plot_dir,
                strerror(errno));
        b->plots_failed++;
        return -1;
    }
    snprintf(dat, len, "%s/%s-%s.dat", b->o.plot_dir, b->scenario, name);
    snprintf(gp, len, "%s/%s-%s.gp", b->o.plot_dir, b->scenario, name);
    snprintf(png, len, "%s/%s-%s.png", b->o.plot_dir, b->scenario, name);
    return 1;
}

/* Run the script and count the outcome. */
static void plot_finish(struct bench *b, const char *gp)
{
    if (run_gnuplot(gp) == 0) {
        b->plots_written++;
    } else {
        fprintf(stderr, "hilock-bench: gnuplot failed on %s\n", gp);
        b->plots_failed++;
    }
}

/* Write s as a gnuplot single-quoted string body (no quote can end it). */
static void put_title(FILE *f, const char *s)
{
    for (; *s; s++)
        fputc(*s == '\'' ? '`' : *s, f);
}

/* Nonzero when there is nothing to draw (gnuplot fails on empty data). */
static int all_empty_cdf(struct samples **d, int n)
{
    for (int i = 0; i < n; i++)
        if (d[i]->n > 0)
            return 0;
    return 1;
}

static int all_empty_rate(const struct rate *const *r, int n)
{
    for (int i = 0; i < n; i++)
        for (size_t k = 0; k < r[i]->n; k++)
            if (r[i]->count[k])
                return 0;
    return 1;
}

/* The common head of every script. */
static void script_head(FILE *f, const char *png, const char *title)
{
    fprintf(f, "set terminal pngcairo size 1100,650 noenhanced\n"
               "set output '%s'\nset title \"%s\"\nset grid\n"
               "set key outside right top\n",
            png, title);
}

/* The plot command: one line of width lw per data block of dat. */
static void plot_lines(FILE *fg, const char *dat, const char *const *titles,
                       int n, int lw)
{
    fprintf(fg, "plot ");
    for (int i = 0; i < n; i++) {
        fprintf(fg, "%s'%s' index %d using 1:2 with lines lw %d title '",
                i ? ", \\\n     " : "", dat, i, lw);
        put_title(fg, titles[i]);
        fprintf(fg, "'");
    }
    fprintf(fg, "\n");
}

/* Close the data and script files and run gnuplot if both were written. */
static void plot_close(struct bench *b, FILE *fd, FILE *fg, const char *gp)
{
    int ok = fd && fg;
    if (fd)
        fclose(fd);
    if (fg)
        fclose(fg);
    if (ok)
        plot_finish(b, gp);
    else
        b->plots_failed++;
}

void plot_cdf(struct bench *b, const char *name, const char *title,
              struct samples **d, const char *const *titles, int n)
{
    char dat[1024], gp[1024], png[1024];
    if (all_empty_cdf(d, n) ||
        plot_prepare(b, name, dat, gp, png, sizeof dat) <= 0)
        return;
    FILE *fd = fopen(dat, "w"), *fg = fopen(gp, "w");
    if (fd && fg) {
        for (int i = 0; i < n; i++) { /* one block per distribution */
            fprintf(fd, "# %s\n", titles[i]);
            for (int q = 1; d[i]->n && q <= 1000; q++)
                fprintf(fd, "%.3f %.6f\n",
                        (double)samples_pct(d[i], q / 10.0) / 1e3, q / 1000.0);
            fprintf(fd, "\n\n");
        }
        script_head(fg, png, title);
        fprintf(fg, "set logscale x\nset xlabel 'latency (us, log)'\n"
                    "set ylabel 'fraction of samples <= x'\n"
                    "set yrange [0:1]\n");
        plot_lines(fg, dat, titles, n, 2);
    }
    plot_close(b, fd, fg, gp);
}

/* Data of one rate series: seconds since t0 (bucket middles), events/s;
 * with gaps, an empty bucket breaks the line instead. */
static void rate_data(FILE *f, const struct rate *r, int64_t t0_ns, int gaps)
{
    double bs = (double)r->bucket_ns / 1e9;
    double off = (double)(r->t0_ns - t0_ns) / 1e9;
    int open = 0; /* a line segment is being written */
    for (size_t i = 0; i < r->n; i++) {
        if (gaps && r->count[i] == 0) {
            if (open) /* one blank line: a break, two would end the block */
                fprintf(f, "\n");
            open = 0;
            continue;
        }
        fprintf(f, "%.3f %.1f\n", off + ((double)i + 0.5) * bs,
                r->count[i] / bs);
        open = 1;
    }
    fprintf(f, "%s\n\n", open ? "" : "# empty\n");
}

void plot_rate(struct bench *b, const char *name, const char *title,
               const char *ylabel, const struct rate *const *r,
               const char *const *titles, int n,
               const struct plot_mark *marks, int nmarks, int gaps)
{
    char dat[1024], gp[1024], png[1024];
    if (n < 1 || all_empty_rate(r, n) ||
        plot_prepare(b, name, dat, gp, png, sizeof dat) <= 0)
        return;
    FILE *fd = fopen(dat, "w"), *fg = fopen(gp, "w");
    if (fd && fg) {
        for (int i = 0; i < n; i++)
            rate_data(fd, r[i], r[0]->t0_ns, gaps);
        script_head(fg, png, title);
        fprintf(fg, "set xlabel 'seconds since start'\nset ylabel '%s'\n"
                    "set yrange [0:*]\n",
                ylabel);
        for (int i = 0; i < nmarks; i++)
            fprintf(fg, "set arrow from %.3f, graph 0 to %.3f, graph 1 "
                        "nohead lc rgb 'red' dt 2\n"
                        "set label '%s' at %.3f, graph 0.97 tc rgb 'red'\n",
                    marks[i].t_s, marks[i].t_s, marks[i].label, marks[i].t_s);
        plot_lines(fg, dat, titles, n, 1);
    }
    plot_close(b, fd, fg, gp);
}
