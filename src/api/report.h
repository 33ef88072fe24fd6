/*
 * report.h — the CLI's output formats: a table for people, JSON and CSV
 * for scripts (SPEC §3), sweeps of them, and pictures (a terminal bar, an
 * SVG chart).
 */
#ifndef VC_REPORT_H
#define VC_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "recipe.h"
#include "vramcalc/vramcalc.h"

/* The library's own: prefixed so that they cannot clash with a program's
 * symbols (the reports moved here from the CLI, issue 25). */
#define format_bytes vc__format_bytes
#define json_echo vc__json_echo
#define line_begin vc__line_begin
#define line_end vc__line_end
#define line_item vc__line_item
#define line_itemn vc__line_itemn
#define report_csv_check vc__report_csv_check
#define report_csv_header vc__report_csv_header
#define report_csv_row vc__report_csv_row
#define report_context_modelled vc__report_context_modelled
#define report_fits vc__report_fits
#define report_json vc__report_json
#define report_json_sweep_begin vc__report_json_sweep_begin
#define report_json_sweep_end vc__report_json_sweep_end
#define report_json_sweep_row vc__report_json_sweep_row
#define report_sweep_layers vc__report_sweep_layers
#define report_sweep_table_begin vc__report_sweep_table_begin
#define report_sweep_table_end vc__report_sweep_table_end
#define report_sweep_table_row vc__report_sweep_table_row
#define report_table vc__report_table
#define svg_render vc__svg_render
#define text_cols vc__text_cols
#define text_fit vc__text_fit

/* How the table may draw: Unicode block characters (a UTF-8 terminal) and
 * ANSI colours (a terminal, no --no-color, no NO_COLOR). Both off for pipes.
 * width: the columns a line may use, 80 unless a wider terminal (0: 80). */
typedef struct {
    bool utf8, color;
    int width;
} vc_term;

#define VC_TEXT_WIDTH 80

/* text.c: fitting text to columns (one per code point). */
int text_cols(const char *s);
enum { FIT_LEFT = 0, FIT_RIGHT = 1, FIT_MIDDLE = 2, FIT_NOPAD = 4 };
/* s in exactly w columns (FIT_NOPAD: at most w), padded on the right (FIT_LEFT) or
 * left (FIT_RIGHT), or cut with an ellipsis ("\u2026" on a UTF-8 terminal, "..."
 * otherwise) at its end or, FIT_MIDDLE, in its middle. */
void text_fit(FILE *f, const char *s, int w, int flags, bool utf8);
/* A line of items that wraps between them: a new line, indented, when the next
 * item would pass width (the separator's trailing spaces dropped there). */
typedef struct {
    FILE *f;
    int width, indent, col;
} text_line;
void line_begin(text_line *l, FILE *f, int width, int indent, const char *first);
void line_item(text_line *l, const char *sep, const char *item);
void line_itemn(text_line *l, const char *sep, const char *item, size_t n); /* the first n bytes of item */
void line_end(text_line *l);

/* One way to make a run that does not fit --gpu fit (src/api/hints.c): the
 * options it changes, by table name and value ("grad_ckpt" "true"), and the
 * estimate with them. */
#define VC_HINT_OPTIONS 8
#define VC_MAX_HINTS 12
typedef struct {
    char name[VC_HINT_OPTIONS][32], value[VC_HINT_OPTIONS][32];
    int n;
    char what[96];            /* in words */
    int64_t total, peak_allocated;
} vc_hint;

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
    int64_t max_prompt;       /* --max-context result: the longest prompt; -1 when not asked */
    int64_t max_seq;          /* --max-seq result (config.json); -1 when not asked */
    bool max_seq_limited;     /* ... and max_seq + 1 is refused by the model, not by memory */
    bool max_prompt_limited;  /* ... and max_prompt + 1 is past the search's limit (the model's positions, 2^40), not memory */
    const char *weights;      /* quantized Linear weights' format (--weights, quantization_config), NULL dense */
    const char *columns;      /* --columns: the CSV columns by header name, "a,b,c"; NULL all */
    const vc_hint *hints;     /* does not fit: what would, cheapest first (hints_tried: looked for) */
    size_t nhints;
    bool hints_tried;
    const vc_hf_options *hf;  /* the config.json's options as run (--seq, --loss, ...; the defaults for a model file) */
    const vc_lora *lora;      /* the adapters' (--lora, --peft, ...; r 0: none) */
    const vc_recipe_row *recipe;       /* --recipe's row, NULL none */
    const unsigned char *recipe_set;   /* recipe_set[k]: its pair k applied (not given by the user) */
    int transformers;         /* --transformers (100*major + minor; 0: the newest tabled, release.h) */
    int trl;                  /* --trl (100*major + minor; 0: the newest tabled): a trl: recipe's values */
} vc_report;

/* The options -f json reports (options.def's VC_OPTION_JSON rows), at a place of a
 * report; what the rows' expressions read: o, rep, and for --serve so and sr (NULL else). */
typedef enum {
    VC_JSON_STEP,       /* top level, after "model" */
    VC_JSON_STACK,      /* top level, after "recipe", before "attention_kernel" */
    VC_JSON_LAYOUT,     /* top level, after "attention_kernel" */
    VC_JSON_PIPELINE,   /* top level, after "peak", with the ranks */
    VC_JSON_GENERATE,   /* inside "generate", before its results */
    VC_JSON_SERVE_GPU,  /* inside "serve", after "gpu" */
    VC_JSON_SERVE,      /* inside "serve", after "gpu_total" */
} vc_json_place;
typedef struct {
    const vc_options *o;
    const vc_report *rep;
    const vc_serve_options *so;
    const vc_serve_result *sr;
} vc_json_echo;
/* place's rows, each after its separator (", " or ",\n" and ind; lead: none before the first). */
void json_echo(FILE *f, const vc_json_echo *e, vc_json_place place, const char *ind, bool lead);

/* Whether r fits rep->gpu (true without a GPU). */
bool report_fits(const vc_report *rep);
/* Whether the CUDA context is src/engine/context.c's model (not --context's bytes, not an AMD
 * GPU's fixed estimate): the reports show its parts then. */
bool report_context_modelled(const vc_options *o, const vc_memory *m);

void report_table(FILE *f, const vc_report *rep);
void report_json(FILE *f, const vc_report *rep);
/* The header names the columns for this report's options (gpu.*, max_batch);
 * rep->columns, when set, chooses and orders them by name. -1: out of memory. */
int report_csv_header(FILE *f, const vc_report *rep);
int report_csv_row(FILE *f, const vc_report *rep);
/* -1 (and a one-line message naming the valid columns, the options between
 * option marks) when rep->columns names a column this report does not have
 * (rep->r is not read). */
int report_csv_check(const vc_report *rep, char *msg, size_t n);

/* A sweep: {"schema_version": 1, "sweep": [ {...}, ... ]}, one object per
 * row as report_json prints it; "max_batch" at the top when asked. */
void report_json_sweep_begin(FILE *f);
void report_json_sweep_row(FILE *f, const vc_report *rep, bool first);
void report_json_sweep_end(FILE *f, const vc_report *rep);
/* The table form: a header (model, options, GPU), one line per batch. */
void report_sweep_table_begin(FILE *f, const vc_report *rep);
void report_sweep_table_row(FILE *f, const vc_report *rep);
void report_sweep_table_end(FILE *f, const vc_report *rep);
/* --per-layer in a table sweep: rep->r's layer rows, under their batch's line. */
void report_sweep_layers(FILE *f, const vc_report *rep);

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

/* Writes the chart to f (p->n >= 1 points). */
void svg_render(FILE *f, const vc_plot *p);

#endif
