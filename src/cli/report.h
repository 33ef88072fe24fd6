/*
 * report.h — the CLI's output formats: a table for people, JSON and CSV
 * for scripts (SPEC §3), sweeps of them, and pictures (a terminal bar, an
 * SVG chart).
 */
#ifndef VC_REPORT_H
#define VC_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "vramcalc/vramcalc.h"

/* How the table may draw: Unicode block characters (a UTF-8 terminal) and
 * ANSI colours (a terminal, no --no-color, no NO_COLOR). Both off for pipes. */
typedef struct {
    bool utf8, color;
} vc_term;

typedef struct {
    const char *model;        /* model name ("" when none) */
    const char *file;         /* model file, NULL in counts mode */
    const vc_options *opts;
    const vc_result *r;
    bool per_layer;
    bool counts_only;         /* --params mode: a formula, not a simulation */
    const vc_gpu_spec *gpu;   /* --gpu, or NULL */
    int64_t max_batch;        /* --max-batch result; -1 when not asked */
    vc_term term;
    const char *weights;      /* quantized Linear weights' format (--weights, quantization_config), NULL dense */
} vc_report;

/* Whether r fits rep->gpu (true without a GPU). */
bool report_fits(const vc_report *rep);

void report_table(FILE *f, const vc_report *rep);
void report_json(FILE *f, const vc_report *rep);
/* The header names the columns for this report's options (gpu.*, max_batch). */
void report_csv_header(FILE *f, const vc_report *rep);
void report_csv_row(FILE *f, const vc_report *rep);

/* A sweep: {"schema_version": 1, "sweep": [ {...}, ... ]}, one object per
 * row as report_json prints it; "max_batch" at the top when asked. */
void report_json_sweep_begin(FILE *f);
void report_json_sweep_row(FILE *f, const vc_report *rep, bool first);
void report_json_sweep_end(FILE *f, const vc_report *rep);
/* The table form: a header (model, options, GPU), one line per batch. */
void report_sweep_table_begin(FILE *f, const vc_report *rep);
void report_sweep_table_row(FILE *f, const vc_report *rep);
void report_sweep_table_end(FILE *f, const vc_report *rep);

/* "1.5 GiB", "512 B" */
void format_bytes(int64_t bytes, char *buf, size_t n);

/* svg.c: a chart of the memory components against batch size. */
typedef struct {
    int64_t batch;
    int64_t weights, gradients, optimizer_states, activations, peak_allocated, total;
    bool fits;
} vc_plot_point;

typedef struct {
    const char *title;        /* model name or file */
    const char *subtitle;     /* mode, precision, optimizer */
    const vc_plot_point *pts; /* ascending batch */
    size_t n;
    const char *gpu_name;     /* NULL: no capacity line */
    int64_t capacity;
    int64_t max_batch;        /* <= 0: not marked */
} vc_plot;

/* Writes the chart to path; 0 on success, -1 with errno set. */
int svg_write(const char *path, const vc_plot *p);

#endif
