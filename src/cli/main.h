/*
 * main.h — what main.c (vc_cli_main) shares with parse.c (the error line,
 * the option values) and drivers.c (the reports other than one estimate's).
 * Private to the command line's files.
 */
#ifndef VC_CLI_MAIN_H
#define VC_CLI_MAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "report.h"
#include "vramcalc/vramcalc.h"

#define EXIT_NOFIT 1
#define EXIT_USAGE 2
#define MAX_SWEEP 100000 /* batch sizes in one --sweep */
#define MAX_SWEEP_LAYER_ROWS 4000000 /* --per-layer rows a --sweep keeps (~250 bytes each) */

/* Where reports and the error line go (parse.c): vc_cli_main's out and err. */
extern FILE *cli_out, *cli_err;
/* The model file being estimated, for errors that arise after loading
 * (a sweep's or a search's batch): they name it too. */
extern const char *model_file;

/* The parsed options the drivers read. */
typedef struct {
    const char *format, *plot, *file, *columns;
    bool per_layer, counts, max_batch, max_seq;
    vc_gpu_spec gpu;
    bool have_gpu;
    vc_term term;
    int64_t *sweep;
    size_t nsweep;
} cli;

/* ---- parse.c ----
 * Each returns 0, or EXIT_USAGE after one line on cli_err naming the option. */
int die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int die_err(const vc_error *err);
int flush_out(int rc);
int parse_count(const char *opt, const char *s, int64_t min, int64_t *out);
int parse_reshard(const char *s, int64_t *out);
int parse_overlap(const char *s, int *out);
int parse_size(const char *opt, const char *s, int64_t *out);
int parse_real(const char *opt, const char *s, double lo, double hi, double *out);
int parse_shape(const char *s, int64_t *dims, int *nd);
int parse_sweep(const char *s, int64_t **out, size_t *n);
int choose(const char *opt, const char *s, int v, const char *choices);

/* ---- drivers.c ---- */
void print_line(void *ctx, const char *text);
vc_term detect_term(bool no_color);
void print_wrapped(const char *head, const char *text, int width, int indent);
int list_gpus(const char *format);
void print_serve(const cli *c, const vc_report *rep, const vc_serve_options *so, const vc_serve_result *r);
int print_one(const cli *c, const vc_report *rep);
int check_columns(const cli *c, vc_report *rep);
int run_sweep(const cli *c, vc_estimator *e, vc_report *rep, vc_options *o);
int max_seq_usage(const cli *c, const char *gpu, const char *sweep, const char *input, int64_t seq, bool trace,
                  bool emit);
int find_max_seq(const cli *c, vc_model *m, const vc_options *o, vc_report *rep);

#endif
