/*
 * main.c — the vramcalc command line (SPEC §2). Parses options, calls the
 * library, prints a report. Exit status: 0 estimated (and fits), 1 does not
 * fit --gpu, 2 bad usage or a bad model file.
 */
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "vramcalc/vramcalc.h"

#define EXIT_NOFIT 1
#define EXIT_USAGE 2

static const char usage[] =
    "usage: vramcalc MODEL.json [options]        (MODEL may be - for standard input)\n"
    "       vramcalc --params N [--activations N] [options]\n"
    "\n"
    "  -b, --batch N          samples per step (default 1)\n"
    "      --input SHAPE      override the per-sample input shape, e.g. 3,224,224\n"
    "  -o, --optim NAME       sgd, momentum, adam, adamw, none (default adam)\n"
    "      --optim-impl I     foreach (default), fused, forloop\n"
    "      --accumulate N     gradient accumulation over N micro-batches\n"
    "  -p, --precision P      fp32 (default), fp16, bf16, amp-fp16, amp-bf16, mixed-fp16, mixed-bf16\n"
    "  -m, --mode M           train (default) or infer\n"
    "      --attention A      auto (default), flash, efficient, math\n"
    "      --workspace SIZE   cuBLAS/cuDNN workspace bytes (default: modelled; 0 leaves it out)\n"
    "      --context SIZE     CUDA context bytes (default: a 500 MiB estimate)\n"
    "  -f, --format F         table (default), json, csv\n"
    "      --per-layer        a row per layer: output shape, parameters, saved activations\n"
    "      --params N         counts-only estimate without a model (seed 003's calculator)\n"
    "      --activations N    with --params: activation elements per sample\n"
    "      --list-layers      the supported layer kinds\n"
    "      --trace            print the simulated timeline (one line per allocation or free)\n"
    "  -h, --help             this help\n"
    "      --version          print the version\n"
    "\n"
    "SIZE is bytes, or a number with a unit: 512MiB, 24GiB, 80GB, 1.5TB.\n"
    "Exit status: 0 estimated, 1 does not fit --gpu, 2 bad usage or bad model file.\n";

static int die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("vramcalc: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return EXIT_USAGE;
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

/* Bytes with an optional unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB). */
static int parse_size(const char *opt, const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    if (!s || !((*s >= '0' && *s <= '9') || *s == '.')) return die("%s: expected a size such as 24GiB, got '%s'", opt, s ? s : "");
    double v = strtod(s, &end);
    static const struct { const char *u; double m; } units[] = {
        {"", 1}, {"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
        {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
    };
    for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
        if (strcmp(end, units[i].u)) continue;
        double b = v * units[i].m;
        if (errno || b < 0 || b > 9.2e18) return die("%s: '%s' is out of range", opt, s);
        *out = (int64_t)(b + 0.5);
        return 0;
    }
    return die("%s: unknown unit in '%s' (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)", opt, s);
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
        if (*p == ',' || *p == 'x') p++;
        else if (*p) return die("--input: expected dimensions such as 3,224,224, got '%s'", s);
    }
    return *nd ? 0 : die("--input: expected dimensions such as 3,224,224");
}

static int choose(const char *opt, const char *s, int v, const char *choices)
{
    if (v < 0) return die("%s: unknown value '%s' (choose %s)", opt, s, choices);
    return 0;
}

static void print_line(void *ctx, const char *text) { fprintf(ctx, "%s\n", text); }

enum {
    OPT_INPUT = 256, OPT_IMPL, OPT_ACCUM, OPT_ATTN, OPT_WS, OPT_CTX, OPT_PER_LAYER, OPT_PARAMS, OPT_ACTS,
    OPT_LIST_LAYERS, OPT_VERSION, OPT_TRACE,
};

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"batch", required_argument, 0, 'b'},       {"input", required_argument, 0, OPT_INPUT},
        {"optim", required_argument, 0, 'o'},       {"optim-impl", required_argument, 0, OPT_IMPL},
        {"accumulate", required_argument, 0, OPT_ACCUM}, {"precision", required_argument, 0, 'p'},
        {"mode", required_argument, 0, 'm'},        {"attention", required_argument, 0, OPT_ATTN},
        {"workspace", required_argument, 0, OPT_WS}, {"context", required_argument, 0, OPT_CTX},
        {"format", required_argument, 0, 'f'},      {"per-layer", no_argument, 0, OPT_PER_LAYER},
        {"params", required_argument, 0, OPT_PARAMS}, {"activations", required_argument, 0, OPT_ACTS},
        {"list-layers", no_argument, 0, OPT_LIST_LAYERS}, {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, OPT_VERSION},  {"trace", no_argument, 0, OPT_TRACE},   {0, 0, 0, 0},
    };
    vc_options o;
    vc_options_init(&o);
    const char *input = NULL, *format = "table";
    bool per_layer = false, counts = false, have_acts = false, trace = false;
    int64_t params = 0, acts = 0;
    int c, rc;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":b:o:p:m:f:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'b': if ((rc = parse_count("--batch", optarg, 1, &o.batch))) return rc; break;
        case OPT_INPUT: input = optarg; break;
        case 'o': if ((rc = choose("--optim", optarg, o.optim = vc_optim_from_name(optarg), "sgd, momentum, adam, adamw or none"))) return rc; break;
        case OPT_IMPL: if ((rc = choose("--optim-impl", optarg, o.optim_impl = vc_optim_impl_from_name(optarg), "foreach, fused or forloop"))) return rc; break;
        case OPT_ACCUM: if ((rc = parse_count("--accumulate", optarg, 1, &o.accumulate))) return rc; break;
        case 'p': if ((rc = choose("--precision", optarg, o.precision = vc_precision_from_name(optarg), "fp32, fp16, bf16, amp-fp16, amp-bf16, mixed-fp16 or mixed-bf16"))) return rc; break;
        case 'm': if ((rc = choose("--mode", optarg, o.mode = vc_mode_from_name(optarg), "train or infer"))) return rc; break;
        case OPT_ATTN: if ((rc = choose("--attention", optarg, o.attention = vc_attention_from_name(optarg), "auto, flash, efficient or math"))) return rc; break;
        case OPT_WS: if ((rc = parse_size("--workspace", optarg, &o.workspace))) return rc; break;
        case OPT_CTX: if ((rc = parse_size("--context", optarg, &o.context))) return rc; break;
        case 'f':
            format = optarg;
            if (strcmp(format, "table") && strcmp(format, "json") && strcmp(format, "csv"))
                return die("--format: unknown value '%s' (choose table, json or csv)", optarg);
            break;
        case OPT_PER_LAYER: per_layer = true; break;
        case OPT_TRACE: trace = true; break;
        case OPT_PARAMS: counts = true; if ((rc = parse_count("--params", optarg, 0, &params))) return rc; break;
        case OPT_ACTS: have_acts = true; if ((rc = parse_count("--activations", optarg, 0, &acts))) return rc; break;
        case OPT_LIST_LAYERS:
            for (size_t i = 0; i < vc_kind_count(); i++) printf("%-28s %s\n", vc_kind_name(i), vc_kind_summary(i));
            printf("%-28s %s\n", "Sequential", "a block of layers (a scope), with repeat/frozen/checkpoint");
            return 0;
        case 'h': fputs(usage, stdout); return 0;
        case OPT_VERSION: printf("vramcalc %s\n", VC_VERSION); return 0;
        case ':': return die("%s needs a value (see vramcalc --help)", argv[optind - 1]);
        default:
            if (optopt) return die("unknown option '-%c' (see vramcalc --help)", optopt);
            return die("unknown option '%s' (see vramcalc --help)", argv[optind - 1]);
        }
    }
    if (have_acts && !counts) return die("--activations goes with --params");
    vc_error err;
    memset(&err, 0, sizeof err);
    vc_result r;
    vc_report rep = {"", NULL, &o, &r, per_layer, counts};
    vc_model *m = NULL;
    if (counts) {
        if (optind < argc) return die("give either a model file or --params, not both");
        if (vc_estimate_counts(params, acts, &o, &r, &err)) {
            char msg[1200];
            vc_error_format(&err, msg, sizeof msg);
            return die("%s", msg);
        }
    } else {
        if (optind >= argc) return die("no model file (see vramcalc --help)");
        if (optind + 1 < argc) return die("unexpected argument '%s' (one model file at a time)", argv[optind + 1]);
        const char *path = argv[optind];
        rep.file = path;
        char msg[1200];
        if (vc_model_load_file(path, &m, &err)) {
            vc_error_format(&err, msg, sizeof msg);
            return die("%s", msg);
        }
        if (input) {
            int64_t dims[VC_MAX_DIMS];
            int nd;
            if ((rc = parse_shape(input, dims, &nd))) {
                vc_model_free(m);
                return rc;
            }
            if (vc_model_set_input_shape(m, dims, nd, &err)) {
                vc_error_format(&err, msg, sizeof msg);
                vc_model_free(m);
                return die("%s", msg);
            }
        }
        rep.model = vc_model_name(m);
        if (trace) {
            rc = vc_trace(m, &o, print_line, stdout, &err) ? EXIT_USAGE : 0;
            if (rc) {
                vc_error_format(&err, msg, sizeof msg);
                die("%s", msg);
            }
            vc_model_free(m);
            return rc;
        }
        if (vc_estimate(m, &o, &r, &err)) {
            vc_error_format(&err, msg, sizeof msg);
            vc_model_free(m);
            return die("%s", msg);
        }
    }
    if (!strcmp(format, "json")) report_json(stdout, &rep);
    else if (!strcmp(format, "csv")) {
        report_csv_header(stdout);
        report_csv_row(stdout, &rep);
    } else report_table(stdout, &rep);
    vc_result_free(&r);
    vc_model_free(m);
    return fflush(stdout) ? EXIT_USAGE : 0;
}
