/*
 * main.c — the vramcalc command line (SPEC §2). Parses options, calls the
 * library, prints a report. Exit status: 0 estimated (and fits), 1 does not
 * fit --gpu, 2 bad usage or a bad model file. A sweep exits 0 unless an
 * error: each row carries its own fit.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "report.h"
#include "vramcalc/vramcalc.h"

#define EXIT_NOFIT 1
#define EXIT_USAGE 2
#define MAX_SWEEP 100000 /* batch sizes in one --sweep */
#define MAX_SWEEP_LAYER_ROWS 4000000 /* --per-layer rows a --sweep keeps (~250 bytes each) */

/* Where reports and the error line go: vc_cli_main's out and err (stdout
 * and stderr for the program; memory streams for fuzz/fuzz_cli.c). */
static FILE *cli_out, *cli_err;

/* --help: this, the options table (cli_options[], options.c), usage_tail. */
static const char usage_head[] =
    "usage: vramcalc MODEL.json [options]        (MODEL may be - for standard input)\n"
    "       vramcalc --params N [--activations N] [options]\n"
    "\n"
    "options:\n";
static const char usage_tail[] =
    "\n"
    "SIZE is bytes, or a number with a unit: 512MiB, 24GiB, 80GB, 1.5TB (KB/MB/GB/TB\n"
    "are powers of 1000, KiB/MiB/GiB/TiB powers of 1024).\n"
    "Exit status: 0 estimated (and fits), 1 does not fit --gpu, 2 bad usage or bad\n"
    "model file; with --sweep, 0 unless an error (each row says whether it fits).\n";

static int die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* One line on stderr; whatever the user gave (option values, file names)
 * is shown escaped (vc_escape_text): no raw control byte, valid UTF-8. */
static int die(const char *fmt, ...)
{
    char raw[2048], safe[4 * sizeof raw];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    vc_escape_text(safe, sizeof safe, raw);
    fprintf(cli_err, "vramcalc: %s\n", safe);
    return EXIT_USAGE;
}

/* The model file being estimated, for errors that arise after loading
 * (a sweep's or a search's batch): they name it too. */
static const char *model_file;

static int die_err(const vc_error *err)
{
    char msg[1200];
    vc_error e = *err;
    if (!e.file[0] && model_file) snprintf(e.file, sizeof e.file, "%s", model_file);
    vc_error_format(&e, msg, sizeof msg);
    return die("%s", msg);
}

/* A whole positive (or non-negative) decimal integer; no signs, exponents or junk. */
static int parse_count(const char *opt, const char *s, int64_t min, int64_t *out)
{
    char *end;
    if (!s || !*s || !(*s >= '0' && *s <= '9')) goto bad;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE) return die("%s: %s is too large", opt, s);
    if (*end || v < min) goto bad;
    *out = v;
    return 0;
bad:
    return die("%s: expected a %s integer, got '%s'", opt, min > 0 ? "positive" : "non-negative", s ? s : "");
}

/* Every write to stdout is checked: a report that could not be written
 * (a full disk, a closed pipe with SIGPIPE ignored) is an error, one line
 * on stderr and exit 2, never a silent success. */
static int flush_out(int rc)
{
    if (fflush(cli_out) == 0 && !ferror(cli_out)) return rc;
    int e = errno ? errno : EIO;
    return die("cannot write the output: %s", strerror(e));
}

/* Bytes with an optional unit (the library's vc_parse_size). */
static int parse_size(const char *opt, const char *s, int64_t *out)
{
    vc_error err;
    memset(&err, 0, sizeof err);
    if (vc_parse_size(s, out, &err)) return die("%s: %s", opt, err.msg);
    return 0;
}

/* A decimal number in [lo, hi]. */
static int parse_real(const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return die("%s: expected a number from %g to %g, got '%s'", opt, lo, hi, s);
    *out = v;
    return 0;
}

static int parse_shape(const char *s, int64_t *dims, int *nd)
{
    *nd = 0;
    const char *p = s;
    while (*p) {
        if (*nd == VC_MAX_DIMS) return die("--input: more than %d dimensions in '%s'", VC_MAX_DIMS, s);
        char *end;
        if (!(*p >= '0' && *p <= '9')) return die("--input: expected dimensions such as 3,224,224, got '%s'", s);
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (errno || v < 1) return die("--input: expected positive dimensions, got '%s'", s);
        dims[(*nd)++] = v;
        p = end;
        if ((*p == ',' || *p == 'x') && p[1]) p++; /* a separator needs a dimension after it: not "784," */
        else if (*p) return die("--input: expected dimensions such as 3,224,224, got '%s'", s);
    }
    return *nd ? 0 : die("--input: expected dimensions such as 3,224,224");
}

/* A positive integer inside a --sweep item: digits only, at most 2^53. */
static const char *sweep_int(const char *p, int64_t *v)
{
    int64_t x = 0;
    const char *q = p;
    for (; *q >= '0' && *q <= '9'; q++) {
        x = x * 10 + (*q - '0');
        if (x > (INT64_C(1) << 53)) return NULL;
    }
    if (q == p || x < 1) return NULL;
    *v = x;
    return q;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* "1,8,32", "1:64", "1:64:8", "1:4096:x2", and lists of them: sorted, without repeats. */
static int parse_sweep(const char *s, int64_t **out, size_t *n)
{
    size_t cap = 64, k = 0;
    int64_t *v = malloc(cap * sizeof *v);
    if (!v) return die("out of memory");
    const char *p = s;
    int rc = 0;
    for (;;) {
        int64_t a, b, step = 1;
        bool geo = false;
        const char *q = sweep_int(p, &a);
        if (!q) goto bad;
        b = a;
        if (*q == ':') {
            if (!(q = sweep_int(q + 1, &b)) || b < a) goto bad;
            if (*q == ':') {
                q++;
                if (*q == 'x' || *q == '*') {
                    geo = true;
                    q++;
                }
                if (!(q = sweep_int(q, &step)) || (geo && step < 2)) goto bad;
            }
        }
        for (int64_t x = a; x <= b;) {
            if (k == MAX_SWEEP) {
                rc = die("--sweep: more than %d batch sizes in '%s'", MAX_SWEEP, s);
                goto fail;
            }
            if (k == cap) {
                int64_t *nv = realloc(v, (cap *= 2) * sizeof *v);
                if (!nv) {
                    rc = die("out of memory");
                    goto fail;
                }
                v = nv;
            }
            v[k++] = x;
            if (geo ? x > b / step : x > b - step) break;
            x = geo ? x * step : x + step;
        }
        if (!*q) break;
        if (*q != ',') goto bad;
        p = q + 1;
    }
    qsort(v, k, sizeof *v, cmp_i64);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (!u || v[u - 1] != v[i]) v[u++] = v[i];
    *out = v;
    *n = u;
    return 0;
bad:
    rc = die("--sweep: expected batch sizes such as 1,8,32 or 1:64 or 1:64:8 or 1:4096:x2, got '%s'", s);
fail:
    free(v);
    return rc;
}

/* choices: the options table's VC_CHOICES list ("a, b, c, "), or prose. */
static int choose(const char *opt, const char *s, int v, const char *choices)
{
    size_t n = strlen(choices);
    while (n && (choices[n - 1] == ' ' || choices[n - 1] == ',')) n--;
    if (v < 0) return die("%s: unknown value '%s' (choose %.*s)", opt, s, (int)n, choices);
    return 0;
}

static void print_line(void *ctx, const char *text) { fprintf(ctx, "%s\n", text); }

static bool mentions_utf8(const char *s)
{
    char low[128];
    size_t i = 0;
    for (; s[i] && i + 1 < sizeof low; i++) low[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
    low[i] = '\0';
    return strstr(low, "utf-8") || strstr(low, "utf8");
}

/* Unicode blocks on a UTF-8 terminal; colour on a terminal unless --no-color,
 * NO_COLOR (https://no-color.org) or TERM=dumb; --no-color also means ASCII. */
static vc_term detect_term(bool no_color)
{
    vc_term t = {false, false, VC_TEXT_WIDTH};
    if (!isatty(fileno(cli_out))) return t;
    /* wider on a wider terminal (its size, else $COLUMNS); never narrower than 80 */
    struct winsize ws;
    const char *cols = getenv("COLUMNS");
    long w = ioctl(fileno(cli_out), TIOCGWINSZ, &ws) == 0 && ws.ws_col ? ws.ws_col : cols ? strtol(cols, NULL, 10) : 0;
    if (w > VC_TEXT_WIDTH) t.width = w < 1000 ? (int)w : 1000;
    if (no_color) return t;
    const char *vars[] = {"LC_ALL", "LC_CTYPE", "LANG"};
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) {
            t.utf8 = mentions_utf8(v);
            break;
        }
    }
    const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");
    t.color = !(nc && *nc) && !(term && !strcmp(term, "dumb"));
    return t;
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* head, then the words of text wrapped to width, further lines indented. */
static void print_wrapped(const char *head, const char *text, int width, int indent)
{
    text_line l;
    line_begin(&l, cli_out, width, indent, head);
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, " ");
        if (n) line_itemn(&l, " ", p, n);
        p += n + (p[n] == ' ');
    }
    line_end(&l);
}

static int list_gpus(const char *format)
{
    char b[32];
    if (!strcmp(format, "json")) {
        fprintf(cli_out, "{\n  \"schema_version\": 1,\n  \"gpus\": [");
        for (size_t i = 0; i < vc_gpu_count(); i++) {
            const vc_gpu *g = vc_gpu_get(i);
            fprintf(cli_out, "%s\n    {\"name\": ", i ? "," : "");
            json_str(cli_out, g->name);
            fprintf(cli_out, ", \"product\": ");
            json_str(cli_out, g->label);
            fprintf(cli_out, ", \"vendor\": ");
            json_str(cli_out, g->vendor);
            fprintf(cli_out, ", \"capacity\": %" PRId64 ", \"hopper\": %s, \"source\": ", g->capacity, g->hopper ? "true" : "false");
            json_str(cli_out, g->source);
            fprintf(cli_out, "}");
        }
        fprintf(cli_out, "\n  ]\n}\n");
    } else if (!strcmp(format, "csv")) {
        fprintf(cli_out, "name,product,vendor,capacity,hopper,source\n");
        for (size_t i = 0; i < vc_gpu_count(); i++) {
            const vc_gpu *g = vc_gpu_get(i);
            fprintf(cli_out, "%s,\"%s\",%s,%" PRId64 ",%s,\"%s\"\n", g->name, g->label, g->vendor, g->capacity,
                   g->hopper ? "true" : "false", g->source);
        }
    } else {
        /* within the width: the source of the figure on its own lines (bytes: -f csv or json) */
        int width = detect_term(true).width;
        fprintf(cli_out, "%-11s %10s  %-6s %-5s  %s\n", "name", "memory", "vendor", "sm90+", "product");
        for (size_t i = 0; i < vc_gpu_count(); i++) {
            const vc_gpu *g = vc_gpu_get(i);
            format_bytes(g->capacity, b, sizeof b);
            char head[96];
            snprintf(head, sizeof head, "%-11s %10s  %-6s %-5s ", g->name, b, g->vendor, g->hopper ? "yes" : "");
            print_wrapped(head, g->label, width, 38);
            print_wrapped("            source:", g->source, width, 14);
        }
        fprintf(cli_out, "\nmemory: the total nvidia-smi (MiB x 1048576) or rocm-smi reports for one device\n"
                         "(bytes: -f csv or -f json); sm90+: the preset sets the Hopper/Blackwell cuBLAS\n"
                         "workspace (32 MiB). Keep headroom with NAME:90%%.\n");
    }
    return fflush(cli_out) ? EXIT_USAGE : 0;
}


typedef struct {
    const char *format, *plot, *file, *columns;
    bool per_layer, counts, max_batch, max_seq;
    vc_gpu_spec gpu;
    bool have_gpu;
    vc_term term;
    int64_t *sweep;
    size_t nsweep;
} cli;

/* --serve: vLLM's KV cache pool and what it holds. */
static void print_serve(const cli *c, const vc_report *rep, const vc_serve_options *so, const vc_serve_result *r)
{
    const vc_options *o = rep->opts;
    if (!strcmp(c->format, "json")) {
        fprintf(cli_out, "{\n  \"schema_version\": 1,\n  \"serve\": {\"gpu\": ");
        json_str(cli_out, c->gpu.name);
        fprintf(cli_out, ", \"tensor_parallel_size\": %" PRId64, o->tp > 1 ? o->tp : (int64_t)1);
        fprintf(cli_out, ", \"gpu_total\": %" PRId64 ", \"gpu_memory_utilization\": %.6g, \"max_num_batched_tokens\": %" PRId64
               ", \"max_num_seqs\": %" PRId64 ", \"block_size\": %" PRId64 ", \"kv_cache_dtype\": \"%s\", \"precision\": \"%s\",\n"
               "    \"weights\": %" PRId64 ", \"profile_peak\": %" PRId64 ", \"requested\": %" PRId64 ", \"kv_cache\": %" PRId64
               ", \"page_bytes\": %" PRId64 ", \"blocks\": %" PRId64 ", \"tokens\": %" PRId64 ", \"request_tokens\": %" PRId64
               ", \"concurrency\": %" PRId64 "}\n}\n",
               c->gpu.total, so->gpu_memory_utilization, r->max_num_batched_tokens, r->max_num_seqs, so->block_size,
               vc_kv_dtype_name(so->kv_cache_dtype), vc_precision_name(o->precision), r->weights, r->profile_peak,
               r->requested, r->kv_cache, r->page_bytes, r->blocks, r->tokens, r->request_tokens, r->concurrency);
        return;
    }
    char a[32], b[32], d[32];
    char tp[48] = "";
    if (o->tp > 1) snprintf(tp, sizeof tp, " (per GPU of tensor_parallel_size %" PRId64 ")", o->tp);
    fprintf(cli_out, "%s (%s)\nvLLM on %s%s, %s%s%s, gpu_memory_utilization %.2f, max_num_batched_tokens %" PRId64 ", max_num_seqs %" PRId64
           ", kv cache %s\n\n", rep->model[0] ? rep->model : rep->file, rep->file, c->gpu.name, tp, vc_precision_name(o->precision),
           rep->weights ? ", weights " : "", rep->weights ? rep->weights : "",
           so->gpu_memory_utilization, r->max_num_batched_tokens, r->max_num_seqs, vc_kv_dtype_name(so->kv_cache_dtype));
    format_bytes(r->requested, a, sizeof a);
    fprintf(cli_out, "  %-22s %12s\n", "usable (utilization)", a);
    format_bytes(r->weights, a, sizeof a);
    fprintf(cli_out, "  %-22s %12s\n", "weights", a);
    format_bytes(r->profile_peak, a, sizeof a);
    fprintf(cli_out, "  %-22s %12s  (peak of the profiling run, weights included)\n", "profiling run", a);
    format_bytes(r->kv_cache, a, sizeof a);
    fprintf(cli_out, "  %-22s %12s\n", "KV cache pool", a);
    format_bytes(r->page_bytes, b, sizeof b);
    fprintf(cli_out, "  %-22s %12" PRId64 "  (%" PRId64 " tokens each, %s per block)\n", "blocks", r->blocks, so->block_size, b);
    fprintf(cli_out, "  %-22s %12" PRId64 "\n", "tokens", r->tokens);
    snprintf(d, sizeof d, "%" PRId64 "+%" PRId64, o->prompt, o->new_tokens);
    fprintf(cli_out, "  %-22s %12" PRId64 "  (requests of %s = %" PRId64 " tokens at once)\n", "concurrency", r->concurrency, d,
           r->request_tokens);
}

static int print_one(const cli *c, const vc_report *rep)
{
    if (!strcmp(c->format, "json")) report_json(cli_out, rep);
    else if (!strcmp(c->format, "csv")) {
        if (report_csv_header(cli_out, rep) || report_csv_row(cli_out, rep)) return die("out of memory");
    } else report_table(cli_out, rep);
    return 0;
}

/* --columns: every name one of this report's CSV columns (--max-batch and
 * --max-seq add theirs), before anything is estimated */
static int check_columns(const cli *c, vc_report *rep)
{
    char msg[1024];
    vc_report names = *rep;
    rep->columns = names.columns = c->columns;
    names.max_batch = c->max_batch ? 0 : -1;
    names.max_seq = c->max_seq ? 0 : -1;
    return report_csv_check(&names, msg, sizeof msg) ? die("%s", msg) : 0;
}

static int run_sweep(const cli *c, vc_estimator *e, vc_report *rep, vc_options *o)
{
    vc_error err;
    memset(&err, 0, sizeof err);
    int rc = 0;
    vc_result *rows = calloc(c->nsweep, sizeof *rows);
    vc_plot_point *pts = calloc(c->nsweep, sizeof *pts);
    if (!rows || !pts) {
        rc = die("out of memory");
        goto out;
    }
    int64_t plot_max = -1;
    if (c->have_gpu && (c->max_batch || c->plot)) {
        if (vc_estimator_max_batch(e, c->gpu.capacity, &plot_max, NULL, &err)) {
            rc = die_err(&err);
            goto out;
        }
    }
    rep->max_batch = c->max_batch ? plot_max : -1;
    /* every row first, so that an error leaves stdout empty */
    for (size_t i = 0; i < c->nsweep; i++) {
        if (vc_estimator_run(e, c->sweep[i], &rows[i], &err)) { /* the file, then the batch */
            char msg[1200];
            vc_error_format(&err, msg, sizeof msg);
            rc = die("%s%sbatch %" PRId64 ": %s", model_file ? model_file : "", model_file ? ": " : "", c->sweep[i], msg);
            goto out;
        }
        const vc_memory *m = &rows[i].memory;
        pts[i] = (vc_plot_point){c->sweep[i], m->weights, m->gradients, m->optimizer_states, m->activations,
                                 m->peak_allocated, m->total, !c->have_gpu || m->total <= c->gpu.capacity};
    }
    if (c->plot) {
        char sub[256];
        snprintf(sub, sizeof sub, "%s, %s%s%s%s%s", vc_mode_name(o->mode), vc_precision_name(o->precision),
                 o->mode == VC_MODE_TRAIN ? ", " : "", o->mode == VC_MODE_TRAIN ? vc_optim_name(o->optim) : "",
                 c->have_gpu ? ", on " : "", c->have_gpu ? c->gpu.name : "");
        vc_plot p = {rep->model[0] ? rep->model : rep->file ? rep->file : "counts-only estimate", sub, pts, c->nsweep,
                     c->have_gpu ? c->gpu.name : NULL, c->gpu.capacity, plot_max};
        if (svg_write(c->plot, &p)) {
            rc = die("--plot: cannot write '%s': %s", c->plot, strerror(errno));
            goto out;
        }
    }
    bool json = !strcmp(c->format, "json"), csv = !strcmp(c->format, "csv");
    if (json) report_json_sweep_begin(cli_out);
    for (size_t i = 0; i < c->nsweep; i++) {
        o->batch = c->sweep[i];
        rep->r = &rows[i];
        if (json) report_json_sweep_row(cli_out, rep, i == 0);
        else if (csv) {
            if ((!i && report_csv_header(cli_out, rep)) || report_csv_row(cli_out, rep)) {
                rc = die("out of memory");
                goto out;
            }
        } else {
            if (!i) report_sweep_table_begin(cli_out, rep);
            report_sweep_table_row(cli_out, rep);
        }
        /* --per-layer in a table sweep: the rows follow their summary line */
        if (!json && !csv && rep->per_layer && rows[i].nlayers) report_sweep_layers(cli_out, rep);
    }
    if (json) report_json_sweep_end(cli_out, rep);
    else if (!csv) report_sweep_table_end(cli_out, rep);
    if (fflush(cli_out)) rc = EXIT_USAGE;
out:
    if (rows)
        for (size_t i = 0; i < c->nsweep; i++) vc_result_free(&rows[i]);
    free(rows);
    free(pts);
    return rc;
}

/* --max-seq: what it goes with (a model, --gpu, --batch) and what it does not. */
static int max_seq_usage(const cli *c, const char *gpu, const char *sweep, const char *input, int64_t seq, bool trace,
                         bool emit)
{
    const char *other = c->counts ? "--params" : c->max_batch ? "--max-batch" : sweep ? "--sweep" : input ? "--input"
                      : seq ? "--seq" : trace ? "--trace" : emit ? "--emit-model" : NULL;
    if (other)
        return die("--max-seq searches the sequence length of a config.json at one --batch: it does not go with %s", other);
    if (!gpu) return die("--max-seq needs --gpu (a preset such as h100-80gb, or a size such as 24GiB)");
    return 0;
}

/* --max-seq: the search, then the model reloaded at the answer (at 1 token
 * when none fits) so that the report is the estimate there. */
static int find_max_seq(const cli *c, vc_model *m, const vc_options *o, vc_report *rep)
{
    vc_error err;
    memset(&err, 0, sizeof err);
    if (!vc_model_generated_json(m))
        return die("%s: --max-seq applies to a Hugging Face config.json (the sequence length is its load option, "
                   "--seq); this is a vramcalc model file: use --max-batch, or --input for another length", model_file);
    int limited = 0;
    if (vc_model_max_seq(m, o, c->gpu.capacity, &rep->max_seq, &limited, NULL, &err)) return die_err(&err);
    rep->max_seq_limited = limited;
    if (vc_model_set_seq(m, rep->max_seq > 0 ? rep->max_seq : 1, &err)) return die_err(&err);
    return 0;
}

/* The model file's JSON tree is built and freed inside vc_model_load_file,
 * one malloc per value (thousands for a large model); the CLI owns the
 * process, so it lends cJSON a bump allocator for that call and drops it
 * whole afterwards (the library keeps no cJSON value). */
typedef struct json_chunk {
    struct json_chunk *next;
    size_t used, cap;
    max_align_t data[];
} json_chunk;
static json_chunk *json_chunks;

static void *json_alloc(size_t n)
{
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    json_chunk *c = json_chunks;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > (size_t)60 << 10 ? n : (size_t)60 << 10; /* under the mmap threshold: freed chunks are reused */
        if (!(c = malloc(sizeof *c + cap))) return NULL;
        c->next = json_chunks;
        c->used = 0;
        c->cap = cap;
        json_chunks = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    return p;
}

static void json_free(void *p) { (void)p; }

static void json_arena_release(void)
{
    while (json_chunks) {
        json_chunk *c = json_chunks;
        json_chunks = c->next;
        free(c);
    }
}


/* The CLI's one flow, top to bottom: the options, the combinations refused,
 * the model (and its LoRA, weights, input), then one of the reports. It is
 * longer than the project's ~100 lines on purpose: the parsed options are
 * its ~30 locals, and split into steps they would be passed around as a
 * struct that every step reads whole. */
int vc_cli_main(int argc, char **argv, FILE *out, FILE *errf)
{
    static struct option longopts[CLI_MAX_OPTIONS + 1];
    static char shortopts[3 * CLI_MAX_OPTIONS + 2];
    cli_getopt_tables(cli_options, cli_noptions, longopts, shortopts);
    cli_out = out;
    cli_err = errf;
    model_file = NULL;
    optind = 0; /* glibc: start afresh (vc_cli_main may run more than once in a process) */
    vc_options o;
    vc_options_init(&o);
    cli c;
    memset(&c, 0, sizeof c);
    c.format = "table";
    const char *input = NULL, *gpu = NULL, *sweep = NULL;
    bool have_acts = false, trace = false, batch_given = false, no_color = false, gpus = false;
    int64_t params = 0, acts = 0;
    vc_hf_options hf; /* --seq, --moe-imbalance, --emit-model, --grad-ckpt */
    vc_hf_options_init(&hf);
    vc_lora lora; /* --lora, --lora-alpha, --lora-dropout, --lora-targets */
    vc_lora_init(&lora);
    bool hf_given = false, loss_given = false, emit = false, gen_given = false, max_context = false, prompt_given = false, impl_given = false, kvq_given = false, kv_dtype_given = false;
    bool serve = false, serve_given = false, mode_given = false;
    vc_serve_options so; /* --serve and its vLLM settings */
    vc_serve_options_init(&so);
    vc_quant quant; /* --weights, --qlora */
    const char *weights = NULL;
    bool qlora = false, prec_given = false;
    int ch, rc;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        switch (ch) {
        case 'b': batch_given = true; if ((rc = parse_count("--batch", optarg, 1, &o.batch))) return rc; break;
        case OPT_INPUT: input = optarg; break;
        case OPT_SEQ: hf_given = true; if ((rc = parse_count("--seq", optarg, 1, &hf.seq))) return rc; break;
        case OPT_MOE: {
            char *end;
            errno = 0;
            hf.moe_imbalance = strtod(optarg, &end);
            hf_given = true;
            if (errno || end == optarg || *end || !(hf.moe_imbalance >= 1.0 && hf.moe_imbalance <= 1e6))
                return die("--moe-imbalance: expected a number from 1 to 1000000 (1: tokens spread evenly over the experts)");
            break;
        }
        case OPT_EMIT: emit = true; break;
        case OPT_GPUS: if ((rc = parse_count("--gpus", optarg, 1, &o.gpus))) return rc; break;
        case OPT_TP: if ((rc = parse_count("--tp", optarg, 1, &o.tp))) return rc; break;
        case OPT_SP: o.sp = 1; break;
        case OPT_PP: if ((rc = parse_count("--pp", optarg, 1, &o.pp))) return rc; break;
        case OPT_MICRO: if ((rc = parse_count("--micro-batches", optarg, 1, &o.micro_batches))) return rc; break;
        case OPT_PP_VIRTUAL: if ((rc = parse_count("--pp-virtual", optarg, 1, &o.pp_virtual))) return rc; break;
        case OPT_PARALLEL: if ((rc = choose("--parallel", optarg, o.parallel = vc_parallel_from_name(optarg), VC_CHOICES(VC_PARALLEL_MAP)))) return rc; break;
        case OPT_OFFLOAD: if ((rc = choose("--offload", optarg, o.offload = vc_offload_from_name(optarg), VC_CHOICES(VC_OFFLOAD_MAP)))) return rc; break;
        case OPT_FSDP_PARAM_DT:
            if ((rc = choose("--fsdp-param-dtype", optarg, o.fsdp_param_dtype = vc_fsdp_dtype_from_name(optarg), VC_CHOICES(VC_FSDP_DTYPE_MAP)))) return rc;
            break;
        case OPT_FSDP_REDUCE_DT:
            if ((rc = choose("--fsdp-reduce-dtype", optarg, o.fsdp_reduce_dtype = vc_fsdp_dtype_from_name(optarg), VC_CHOICES(VC_FSDP_DTYPE_MAP)))) return rc;
            break;
        case OPT_GRAD_CKPT: hf_given = true; hf.checkpoint = 1; break;
        case OPT_LOSS:
            hf_given = loss_given = true;
            if ((rc = choose("--loss", optarg, (int)(hf.loss = (vc_loss_impl)vc_loss_impl_from_name(optarg)), VC_CHOICES(VC_LOSS_MAP)))) return rc;
            break;
        case OPT_PROMPT: gen_given = prompt_given = true; if ((rc = parse_count("--prompt", optarg, 1, &o.prompt))) return rc; break;
        case OPT_NEW_TOKENS: gen_given = true; if ((rc = parse_count("--new-tokens", optarg, 1, &o.new_tokens))) return rc; break;
        case OPT_MAX_CONTEXT: max_context = true; break;
        case OPT_SERVE: serve = true; break;
        case OPT_GPU_UTIL: serve_given = true; if ((rc = parse_real("--gpu-memory-utilization", optarg, 1e-6, 1.0, &so.gpu_memory_utilization))) return rc; break;
        case OPT_MAX_TOKENS: serve_given = true; if ((rc = parse_count("--max-num-batched-tokens", optarg, 1, &so.max_num_batched_tokens))) return rc; break;
        case OPT_MAX_SEQS: serve_given = true; if ((rc = parse_count("--max-num-seqs", optarg, 1, &so.max_num_seqs))) return rc; break;
        case OPT_BLOCK: serve_given = true; if ((rc = parse_count("--block-size", optarg, 1, &so.block_size))) return rc; break;
        case OPT_KV_DTYPE: serve_given = kv_dtype_given = true; if ((rc = choose("--kv-cache-dtype", optarg, so.kv_cache_dtype = vc_kv_dtype_from_name(optarg), VC_CHOICES(VC_KV_DTYPE_MAP)))) return rc; break;
        case OPT_KV_BITS: case OPT_KV_GROUP: case OPT_KV_RESIDUAL: {
            int64_t v;
            const char *name = ch == OPT_KV_BITS ? "--kv-bits" : ch == OPT_KV_GROUP ? "--kv-group-size" : "--kv-residual-length";
            gen_given = kvq_given = true;
            if ((rc = parse_count(name, optarg, ch == OPT_KV_RESIDUAL ? 0 : 1, &v))) return rc;
            if (ch == OPT_KV_BITS) o.kv_bits = v > 1000 ? 1000 : (int)v; /* 2 or 4: the library's check */
            else if (ch == OPT_KV_GROUP) o.kv_group = v;
            else o.kv_residual = v;
            break;
        }
        case OPT_CACHE: gen_given = true; if ((rc = choose("--cache", optarg, o.cache = vc_cache_from_name(optarg), VC_CHOICES(VC_CACHE_MAP)))) return rc; break;
        case OPT_WEIGHTS:
            weights = optarg;
            if (vc_quant_from_name(optarg, &quant))
                return die("--weights: unknown value '%s' (choose nf4, fp4, int8, gptq4, gptq8, gptq3, gptq2, awq4, fp8, fp8-channel, fp8-block or dense)", optarg);
            break;
        case OPT_QLORA: qlora = true; break;
        case OPT_LORA: if ((rc = parse_count("--lora", optarg, 1, &lora.r))) return rc; break;
        case OPT_LORA_ALPHA: if ((rc = parse_real("--lora-alpha", optarg, 1e-9, 1e12, &lora.alpha))) return rc; break;
        case OPT_LORA_DROPOUT: if ((rc = parse_real("--lora-dropout", optarg, 0, 0.999999, &lora.dropout))) return rc; break;
        case OPT_LORA_TARGETS:
            if (strlen(optarg) >= sizeof lora.targets) return die("--lora-targets: longer than %zu characters", sizeof lora.targets - 1);
            memcpy(lora.targets, optarg, strlen(optarg) + 1);
            break;
        case 'o': if ((rc = choose("--optim", optarg, o.optim = vc_optim_from_name(optarg), VC_CHOICES(VC_OPTIM_MAP)))) return rc; break;
        case OPT_IMPL: impl_given = true; if ((rc = choose("--optim-impl", optarg, o.optim_impl = vc_optim_impl_from_name(optarg), VC_CHOICES(VC_OPTIM_IMPL_MAP)))) return rc; break;
        case OPT_ACCUM: if ((rc = parse_count("--accumulate", optarg, 1, &o.accumulate))) return rc; break;
        case 'p': prec_given = true; if ((rc = choose("--precision", optarg, o.precision = vc_precision_from_name(optarg), VC_CHOICES(VC_PRECISION_MAP)))) return rc; break;
        case 'm': mode_given = true; if ((rc = choose("--mode", optarg, o.mode = vc_mode_from_name(optarg), VC_CHOICES(VC_MODE_MAP)))) return rc; break;
        case OPT_ATTN: if ((rc = choose("--attention", optarg, o.attention = vc_attention_from_name(optarg), VC_CHOICES(VC_ATTENTION_MAP)))) return rc; break;
        case OPT_TORCH: if ((rc = choose("--torch", optarg, o.torch_version = vc_torch_from_name(optarg), "a release from 2.0 to 2.15, e.g. 2.5"))) return rc; break;
        case OPT_WS: if ((rc = parse_size("--workspace", optarg, &o.workspace))) return rc; break;
        case OPT_CTX: if ((rc = parse_size("--context", optarg, &o.context))) return rc; break;
        case 'f':
            c.format = optarg;
            if (strcmp(c.format, "table") && strcmp(c.format, "json") && strcmp(c.format, "csv"))
                return die("--format: unknown value '%s' (choose table, json or csv)", optarg);
            break;
        case 'g': gpu = optarg; break;
        case OPT_MAX_BATCH: c.max_batch = true; break;
        case OPT_MAX_SEQ: c.max_seq = true; break;
        case OPT_SWEEP: sweep = optarg; break;
        case OPT_PLOT: c.plot = optarg; break;
        case OPT_COLUMNS: c.columns = optarg; break;
        case OPT_NO_COLOR: no_color = true; break;
        case OPT_LIST_GPUS: gpus = true; break;
        case OPT_PER_LAYER: c.per_layer = true; break;
        case OPT_TRACE: trace = true; break;
        case OPT_PARAMS: c.counts = true; if ((rc = parse_count("--params", optarg, 0, &params))) return rc; break;
        case OPT_ACTS: have_acts = true; if ((rc = parse_count("--activations", optarg, 0, &acts))) return rc; break;
        case OPT_LIST_LAYERS:
            /* a line per kind (scripts read the first word); on a terminal, summaries wrapped to its width */
            for (size_t i = 0; i <= vc_kind_count(); i++) {
                char head[64];
                snprintf(head, sizeof head, "%-28s", i < vc_kind_count() ? vc_kind_name(i) : "Sequential");
                print_wrapped(head, i < vc_kind_count() ? vc_kind_summary(i)
                                                        : "a block of layers (a scope), with repeat/frozen/checkpoint",
                              isatty(fileno(cli_out)) ? detect_term(true).width : INT32_MAX, 29);
            }
            return flush_out(0);
        case 'h': cli_help(cli_out, usage_head, cli_options, cli_noptions, usage_tail); return flush_out(0);
        case OPT_VERSION: fprintf(cli_out, "vramcalc %s\n", VC_VERSION); return flush_out(0);
        case ':': return die("%s needs a value (see vramcalc --help)", argv[optind - 1]);
        default:
            if (optopt) return die("unknown option '-%c' (see vramcalc --help)", optopt);
            return die("unknown option '%s' (see vramcalc --help)", argv[optind - 1]);
        }
    }
    if (c.columns && (strcmp(c.format, "csv") || gpus || serve))
        return die("--columns chooses the estimate's CSV columns: it needs -f csv%s", gpus ? ", not --list-gpus" : serve ? ", not --serve" : "");
    if (gpus) return flush_out(list_gpus(c.format));
    if (!impl_given) o.optim_impl = vc_optim_default_impl_at(o.optim, o.torch_version); /* forloop for adafactor */
    if (o.mode == VC_MODE_GENERATE) {
        if (c.per_layer || o.parallel != VC_PARALLEL_NONE)
            return die("--mode generate estimates one GPU's generate(): it does not go with %s",
                       c.per_layer ? "--per-layer" : "--parallel");
        if (hf.seq > 0) return die("--seq does not go with --mode generate: --prompt is the sequence's length");
        hf.seq = o.prompt; /* a config.json's report names the prompt's length */
    }
    if (qlora) { /* BitsAndBytesConfig(load_in_4bit, nf4, double quant, compute bf16) + LoraConfig */
        if (weights && strcmp(weights, "nf4")) return die("--qlora stores the base as nf4: it does not go with --weights %s", weights);
        if (prec_given && o.precision != VC_PREC_BF16 && o.precision != VC_PREC_FP16)
            return die("--qlora computes in 16-bit (bnb_4bit_compute_dtype): use --precision bf16 or fp16, not %s", vc_precision_name(o.precision));
        if (!prec_given) o.precision = VC_PREC_BF16;
        if (lora.r == 0) lora.r = 8; /* LoraConfig's r */
        vc_quant_from_name("nf4", &quant);
        weights = "nf4";
    }
    if (c.counts && weights) return die("--%s needs a model file: --params makes a counts-only estimate", qlora ? "qlora" : "weights");
    if (have_acts && !c.counts) return die("--activations goes with --params");
    if (c.max_batch && !gpu) return die("--max-batch needs --gpu (a preset such as h100-80gb, or a size such as 24GiB)");
    if (c.plot && !sweep) return die("--plot needs --sweep (the batch sizes to draw)");
    if (c.plot && !strcmp(c.plot, "-")) return die("--plot writes an SVG file: give a file name, not '-'");
    if (c.counts && (trace || input || c.per_layer))
        return die("%s needs a model file: --params makes a counts-only estimate",
                   trace ? "--trace" : input ? "--input" : "--per-layer");
    if (trace && (c.max_batch || strcmp(c.format, "table")))
        return die("--trace prints one batch's timeline: it does not go with %s", c.max_batch ? "--max-batch" : "--format");
    if (gen_given && o.mode != VC_MODE_GENERATE && !serve)
        return die("--prompt, --new-tokens and --cache go with --mode generate (or --serve)");
    if (kvq_given && o.cache != VC_CACHE_QUANTIZED)
        return die("--kv-bits, --kv-group-size and --kv-residual-length go with --cache quantized (QuantizedCache's cache_config)");
    if (serve && o.cache == VC_CACHE_QUANTIZED)
        return die("--cache quantized is transformers' QuantizedCache (--mode generate): vLLM's cache is its paged pool, "
                   "sized in --kv-cache-dtype");
    if (kv_dtype_given && !serve && o.mode == VC_MODE_GENERATE)
        return die("--kv-cache-dtype: transformers' generate() has no cache dtype (DynamicLayer and StaticLayer store keys "
                   "and values in key_states.dtype, the model's); it is vLLM's setting (--serve). For a smaller cache "
                   "in generate(): --cache quantized");
    if (serve_given && !serve)
        return die("--gpu-memory-utilization, --max-num-batched-tokens, --max-num-seqs, --block-size and --kv-cache-dtype go with --serve");
    if (serve && !mode_given) o.mode = VC_MODE_INFER; /* vLLM serves: no training state */
    if (serve && (!gpu || c.counts || c.max_batch || sweep || trace || max_context || (o.mode == VC_MODE_TRAIN && mode_given)))
        return die("--serve sizes vLLM's KV cache on one --gpu for a model file: it does not go with %s",
                   !gpu ? "no --gpu" : c.counts ? "--params" : c.max_batch ? "--max-batch" : sweep ? "--sweep" : trace ? "--trace"
                   : max_context ? "--max-context" : "--mode train");
    if (serve && (o.parallel != VC_PARALLEL_NONE || o.gpus != (o.tp > 1 ? o.tp : 1)))
        return die("--serve models one vLLM engine: tensor_parallel_size N is --tp N --gpus N (--parallel and "
                   "data-parallel GPUs are training layouts)");
    if (c.counts && o.mode == VC_MODE_GENERATE) return die("--mode generate needs a model file, not --params");
    if (max_context && (o.mode != VC_MODE_GENERATE || !gpu))
        return die("--max-context needs --mode generate and --gpu (the longest prompt that fits the GPU)");
    if (max_context && (c.max_batch || sweep || trace))
        return die("--max-context searches the prompt length at one batch: it does not go with %s",
                   c.max_batch ? "--max-batch" : sweep ? "--sweep" : "--trace");
    if (sweep && batch_given) return die("give either --batch or --sweep, not both");
    if (c.max_seq && (rc = max_seq_usage(&c, gpu, sweep, input, hf.seq, trace, emit))) return rc;
    if (sweep && trace) return die("--trace shows one batch: use --batch, not --sweep");
    vc_error err;
    memset(&err, 0, sizeof err);
    if (gpu) {
        if (vc_gpu_parse(gpu, &c.gpu, &err)) return die("--gpu: %s", err.msg);
        c.have_gpu = true;
        if (c.gpu.preset && c.gpu.preset->hopper) o.hopper = 1;
    }
    if (sweep && (rc = parse_sweep(sweep, &c.sweep, &c.nsweep))) return rc;
    c.term = detect_term(no_color);

    vc_result r;
    memset(&r, 0, sizeof r);
    vc_report rep = {"", NULL, &o, &r, c.per_layer, c.counts, c.have_gpu ? &c.gpu : NULL, -1, c.term, -1};
    rep.max_seq = -1;
    static char shown_file[4 * 4096 + 1];
    vc_model *m = NULL;
    vc_estimator *e = NULL;
    rc = 0;
    if (c.columns && (rc = check_columns(&c, &rep))) goto out;
    if (c.counts) {
        if (optind < argc) {
            rc = die("give either a model file or --params, not both");
            goto out;
        }
    } else {
        if (optind >= argc) {
            rc = die("no model file (see vramcalc --help)");
            goto out;
        }
        if (optind + 1 < argc) {
            rc = die("unexpected argument '%s' (one model file at a time)", argv[optind + 1]);
            goto out;
        }
        vc_escape_text(shown_file, sizeof shown_file, argv[optind]); /* the reports show it */
        model_file = argv[optind];
        rep.file = shown_file;
        cJSON_Hooks hooks = {json_alloc, json_free};
        cJSON_InitHooks(&hooks);
        hf.tp = o.tp; /* a config.json is loaded as one tensor-parallel rank's share (src/hf_tp.c) */
        hf.sp = o.sp;
        vc_status lst = vc_model_load_file_hf(argv[optind], &hf, &m, &err);
        cJSON_InitHooks(NULL); /* the loader has freed its JSON tree: drop the arena with it */
        json_arena_release();
        if (lst) {
            rc = die_err(&err);
            goto out;
        }
        if ((hf_given || emit) && !vc_model_generated_json(m)) {
            rc = die("%s applies to a Hugging Face config.json; this is a vramcalc model file%s",
                     emit ? "--emit-model" : hf.seq ? "--seq" : hf.checkpoint ? "--grad-ckpt" : loss_given ? "--loss" : "--moe-imbalance",
                     hf.seq ? " (use --input)" : hf.checkpoint ? " (add \"checkpoint\": true to its layers)"
                     : loss_given ? " (it names its loss in its \"loss\" key: \"liger_fused_linear_ce\")" : "");
            goto out;
        }
        if (emit) {
            rc = fprintf(cli_out, "%s\n", vc_model_generated_json(m)) < 0 || fflush(cli_out) ? EXIT_USAGE : 0;
            goto out;
        }
        if (lora.r > 0) {
            if (!lora.targets[0]) memcpy(lora.targets, vc_model_lora_targets(m), strlen(vc_model_lora_targets(m)) + 1);
            if (!lora.targets[0]) {
                rc = die("--lora needs --lora-targets (the names of the Linear layers to adapt) for a vramcalc model file");
                goto out;
            }
            if (vc_model_set_lora(m, &lora, &err)) {
                rc = die_err(&err);
                goto out;
            }
        }
        if (weights && vc_model_set_weights(m, &quant, &err)) {
            rc = die_err(&err);
            goto out;
        }
        if (input) {
            int64_t dims[VC_MAX_DIMS];
            int nd;
            if ((rc = parse_shape(input, dims, &nd))) goto out;
            if (vc_model_set_input_shape(m, dims, nd, &err)) {
                rc = die_err(&err);
                goto out;
            }
        }
        if (c.max_seq && (rc = find_max_seq(&c, m, &o, &rep))) goto out;
        rep.model = vc_model_name(m);
        static char wdesc[96];
        vc_quant mq;
        if (vc_model_weights(m, &mq) != VC_WEIGHTS_DENSE) {
            vc_quant_describe(&mq, wdesc, sizeof wdesc);
            rep.weights = wdesc;
            /* quantized weights compute in 16-bit: fp16 for GPTQ/AWQ (their kernels' dtype), else bf16 */
            if (!prec_given) o.precision = mq.format == VC_WEIGHTS_GPTQ || mq.format == VC_WEIGHTS_AWQ ? VC_PREC_FP16 : VC_PREC_BF16;
        } else if (serve && !prec_given) {
            o.precision = vc_serve_auto_precision(m, &c.gpu); /* vLLM's --dtype auto: the config's torch_dtype */
        }
        if (trace) {
            if (vc_trace(m, &o, print_line, cli_out, &err)) rc = die_err(&err);
            goto out;
        }
    }
    if (sweep || c.max_batch || !c.per_layer) {
        /* one plan for every batch size (the first one tried is o.batch); without
         * --per-layer, even for one batch: no per-layer rows to fill */
        vc_status st = c.counts ? vc_estimator_new_counts(params, acts, &o, &e, &err)
                                : vc_estimator_new(m, &o, c.per_layer && sweep ? 0 : VC_EST_NO_LAYERS, &e, &err);
        if (st) {
            rc = die_err(&err);
            goto out;
        }
    }
    if (sweep) {
        /* a sweep keeps every row until all are known; with --per-layer each holds a row per layer */
        if (c.per_layer && m && vc_model_layer_count(m) > MAX_SWEEP_LAYER_ROWS / c.nsweep) {
            rc = die("--per-layer with --sweep keeps a row per layer and batch size: %zu layers x %zu batch sizes is "
                     "more than the limit of %d rows (docs/limits.md); use fewer batch sizes",
                     vc_model_layer_count(m), c.nsweep, MAX_SWEEP_LAYER_ROWS);
            goto out;
        }
        rc = run_sweep(&c, e, &rep, &o);
        goto out;
    }
    if (c.max_batch) {
        if (vc_estimator_max_batch(e, c.gpu.capacity, &rep.max_batch, NULL, &err)) {
            rc = die_err(&err);
            goto out;
        }
        /* the report is for --batch if given, else for the max batch (or 1) */
        if (!batch_given) o.batch = rep.max_batch > 0 ? rep.max_batch : 1;
    }
    if (serve) {
        vc_serve_result sr;
        if (vc_serve(m, &o, &so, &c.gpu, &sr, &err)) {
            rc = die_err(&err);
            goto out;
        }
        print_serve(&c, &rep, &so, &sr);
        rc = fflush(stdout) ? EXIT_USAGE : 0;
        goto out;
    }
    if (max_context) {
        if (vc_max_prompt(m, &o, c.gpu.capacity, &rep.max_prompt, NULL, &err)) {
            rc = die_err(&err);
            goto out;
        }
        if (!prompt_given) { /* the report is for --prompt if given, else for the longest prompt (or 1) */
            o.prompt = rep.max_prompt > 0 ? rep.max_prompt : 1;
            vc_estimator_free(e); /* its plan is for the other prompt */
            e = NULL;
        }
    }
    vc_status st;
    if (e && !c.per_layer) { /* the search's plan and allocator replays serve the report too */
        st = vc_estimator_run(e, o.batch, &r, &err);
    } else {
        vc_estimator_free(e); /* one plan in memory at a time */
        e = NULL;
        st = c.counts ? vc_estimate_counts(params, acts, &o, &r, &err) : vc_estimate(m, &o, &r, &err);
    }
    if (st) {
        rc = die_err(&err);
        goto out;
    }
    if ((rc = print_one(&c, &rep))) goto out;
    rc = fflush(cli_out) ? EXIT_USAGE : !report_fits(&rep) || rep.max_batch == 0 || rep.max_prompt == 0 || rep.max_seq == 0 ? EXIT_NOFIT : 0;
out:
    vc_result_free(&r);
    vc_estimator_free(e);
    vc_model_free(m);
    free(c.sweep);
    return flush_out(rc);
}

#ifndef VC_CLI_NO_MAIN
int main(int argc, char **argv) { return vc_cli_main(argc, argv, stdout, stderr); }
#endif
