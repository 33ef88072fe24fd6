/*
 * cli.h — the vramcalc command line as a function: main() is
 * vc_cli_main(argc, argv, stdout, stderr); fuzz/fuzz_cli.c calls it in
 * process with memory streams. It never exits the process and may be called
 * again (getopt and the file-level state are reset on entry).
 *
 * Returns the exit status: 0 estimated (and fits), 1 does not fit --gpu,
 * 2 bad usage, a bad model file or an output that could not be written
 * (then exactly one line on err, nothing on err otherwise).
 */
#ifndef VC_CLI_H
#define VC_CLI_H

#include <getopt.h>
#include <stdio.h>

#define VC_EXIT_OK 0
#define VC_EXIT_NOFIT 1
#define VC_EXIT_USAGE 2

int vc_cli_main(int argc, char **argv, FILE *out, FILE *err);

/* ---- the options table (help.c): one row per option ----
 * --help prints from it, getopt_long's tables are built from it and
 * tools/gen_docs.py writes README's option table from --help's output, so
 * adding an option is adding a row (and its case in vc_cli_main's switch). */
typedef struct {
    const char *name;    /* long name, without "--" */
    char letter;         /* short option (-b), or 0 */
    const char *arg;     /* the argument's placeholder in --help ("N", "SIZE"); NULL: takes none */
    int id;              /* what getopt_long returns for it: the letter, or an OPT_ value */
    const char *choices; /* a closed set of values, VC_CHOICES(map) ("sgd, momentum, "), or NULL */
    const char *help;    /* --help's text, one paragraph (wrapped to 80 columns); "{}" stands for the
                          * choices ("a, b, c"); NULL: a hidden alias */
} cli_option;

/* "sgd, momentum, adam, " from an X-macro map of vramcalc.h (VC_OPTIM_MAP, ...). */
#define VC__CHOICE(e, n) n ", "
#define VC_CHOICES(map) map(VC__CHOICE)

/* --help: head, one entry per visible row of t[0..n), tail; each description
 * starts at column 25 and every line ends by column 80. */
void cli_help(FILE *f, const char *head, const cli_option *t, size_t n, const char *tail);

/* What getopt_long returns for the options without a letter. */
enum cli_option_id {
    OPT_INPUT = 256, OPT_TORCH, OPT_IMPL, OPT_ACCUM, OPT_ATTN, OPT_WS, OPT_CTX, OPT_PER_LAYER, OPT_PARAMS, OPT_ACTS,
    OPT_LIST_LAYERS, OPT_VERSION, OPT_TRACE, OPT_MAX_BATCH, OPT_SWEEP, OPT_PLOT, OPT_NO_COLOR, OPT_LIST_GPUS,
    OPT_SEQ, OPT_MOE, OPT_EMIT, /* Hugging Face config.json (issue 12) */
    OPT_LORA, OPT_LORA_ALPHA, OPT_LORA_DROPOUT, OPT_LORA_TARGETS, OPT_GRAD_CKPT, /* fine-tuning (issue 12) */
    OPT_GPUS, OPT_PARALLEL, OPT_TP, OPT_SP, OPT_PP, OPT_MICRO, OPT_PP_VIRTUAL, /* more than one GPU (issue 14) */
    OPT_PROMPT, OPT_NEW_TOKENS, OPT_CACHE, OPT_MAX_CONTEXT, /* generation (issue 13) */
    OPT_SERVE, OPT_GPU_UTIL, OPT_MAX_TOKENS, OPT_MAX_SEQS, OPT_BLOCK, OPT_KV_DTYPE, /* vLLM serving (issue 13) */
    OPT_MAX_SEQ, /* the longest sequence that fits (issue 12) */
    OPT_WEIGHTS, OPT_QLORA, /* quantized weights (docs/quantization.md) */
    OPT_OFFLOAD, /* a parallel layout's CPU offload (docs/parallel.md) */
    OPT_KV_BITS, OPT_KV_GROUP, OPT_KV_RESIDUAL, /* --cache quantized (docs/inference.md) */
    OPT_LOSS, /* the causal-LM loss (issue 12 item 3) */
    OPT_COLUMNS, /* -f csv's columns by name (issue 16) */
    OPT_FSDP_PARAM_DT, OPT_FSDP_REDUCE_DT, OPT_FSDP_RESHARD, OPT_FSDP_REPLICATE, /* FSDP2's MixedPrecisionPolicy (docs/parallel.md 2.5) */
    OPT_FSDP_ORIG, /* FSDP1's use_orig_params=True (docs/parallel.md 1.6) */
    OPT_EP, /* expert parallelism (docs/parallel.md 6) */
    OPT_GRAD_VIEW, OPT_PARAM_VIEW, /* DDP's and ZeroRedundancyOptimizer's bucket views (docs/parallel.md 1.3) */
    OPT_DS_OVERLAP, /* DeepSpeed ZeRO's overlap_comm (docs/parallel.md 1.7, 1.9, 1.10) */
    OPT_OFFLOAD_DEV, OPT_NVME_GDS, /* ZeRO-Infinity's NVMe offload (docs/parallel.md 1.9) */
};

/* The options (options.c), in --help's order. */
#define CLI_MAX_OPTIONS 128
extern const cli_option cli_options[];
extern const size_t cli_noptions;

/* getopt_long's tables from t[0..n): lo needs n + 1 entries, shorts 3n + 2 chars. */
void cli_getopt_tables(const cli_option *t, size_t n, struct option *lo, char *shorts);

#endif
