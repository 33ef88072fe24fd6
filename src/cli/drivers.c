/*
 * drivers.c — what the command line prints besides one estimate's report
 * (split out of main.c): --list-gpus, --list-layers' wrapped lines, the
 * terminal's abilities, --serve's report, a --sweep's rows and plot, and
 * --max-seq's checks and search. vc_cli_main (main.c) decides which runs.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "main.h"

void print_line(void *ctx, const char *text) { fprintf(ctx, "%s\n", text); }

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
vc_term detect_term(bool no_color)
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
void print_wrapped(const char *head, const char *text, int width, int indent)
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

int list_gpus(const char *format)
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
            fprintf(cli_out, ", \"sms\": %d, \"sm_threads\": %d}", g->sms, g->sm_threads);
        }
        fprintf(cli_out, "\n  ]\n}\n");
    } else if (!strcmp(format, "csv")) {
        fprintf(cli_out, "name,product,vendor,capacity,hopper,source,sms,sm_threads\n");
        for (size_t i = 0; i < vc_gpu_count(); i++) {
            const vc_gpu *g = vc_gpu_get(i);
            fprintf(cli_out, "%s,\"%s\",%s,%" PRId64 ",%s,\"%s\",%d,%d\n", g->name, g->label, g->vendor, g->capacity,
                   g->hopper ? "true" : "false", g->source, g->sms, g->sm_threads);
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

/* --serve: vLLM's KV cache pool and what it holds. */
void print_serve(const cli *c, const vc_report *rep, const vc_serve_options *so, const vc_serve_result *r)
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

int print_one(const cli *c, const vc_report *rep)
{
    if (!strcmp(c->format, "json")) report_json(cli_out, rep);
    else if (!strcmp(c->format, "csv")) {
        if (report_csv_header(cli_out, rep) || report_csv_row(cli_out, rep)) return die("out of memory");
    } else report_table(cli_out, rep);
    return 0;
}

/* --columns: every name one of this report's CSV columns (--max-batch and
 * --max-seq add theirs), before anything is estimated */
int check_columns(const cli *c, vc_report *rep)
{
    char msg[1024];
    vc_report names = *rep;
    rep->columns = names.columns = c->columns;
    names.max_batch = c->max_batch ? 0 : -1;
    names.max_seq = c->max_seq ? 0 : -1;
    return report_csv_check(&names, msg, sizeof msg) ? die("%s", msg) : 0;
}

int run_sweep(const cli *c, vc_estimator *e, vc_report *rep, vc_options *o)
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
int max_seq_usage(const cli *c, const char *gpu, const char *sweep, const char *input, int64_t seq, bool trace,
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
int find_max_seq(const cli *c, vc_model *m, const vc_options *o, vc_report *rep)
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
