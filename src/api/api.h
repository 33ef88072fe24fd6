/*
 * api.h — what the request layer's files share (src/api/): the option ids
 * of options.def, the request and the response, the mark speller. Private
 * to the library.
 */
#ifndef VC_API_H
#define VC_API_H

#include <stdbool.h>
#include <stdint.h>

#include "report.h"
#include "vramcalc/vramcalc.h"

/* "a, b, c" from an X-macro map of vramcalc.h (VC_OPTIM_MAP, ...). */
#define VC__OPT_CHOICE(e, n) ", " n
#define VC_OPT_CHOICES(map) (&(map(VC__OPT_CHOICE))[2]) /* past the first ", " */

typedef enum {
#define VC_OPTION(id, ...) VC_OPT_##id,
#include "options.def"
#undef VC_OPTION
    VC_OPT__N
} vc_option_id;

void vc__spell_marks(const char *in, vc_spelling how, char *out, size_t cap);
/* A usage error whose message may be longer than vc_error.msg: its first
 * part in msg, the rest in path, line -1 (vc_error_format_for joins them). */
vc_status vc__usage_long(vc_error *err, const char *text);

#define VC_MAX_SWEEP 100000 /* batch sizes in one --sweep */
#define VC_MAX_SWEEP_LAYER_ROWS 4000000 /* --per-layer rows a --sweep keeps (~250 bytes each) */

struct vc_request {
    vc_options o;
    vc_hf_options hf;     /* --seq, --moe-imbalance, --grad-ckpt, --loss (the split: o's tp and sp) */
    int transformers;     /* --transformers, 100*major + minor (0: VC_TRANSFORMERS_DEFAULT) */
    int trl;              /* --trl, 100*major + minor (0: VC_TRL_DEFAULT): a trl: --recipe's release */
    vc_lora lora;         /* --lora, --lora-alpha, --lora-dropout, --lora-targets */
    vc_serve_options so;  /* --serve's vLLM settings */
    double vllm_util;     /* --vllm-gpu-memory-utilization (--use-vllm) */
    bool vllm_sleep;      /* --vllm-sleep */
    int64_t vllm_graph_mem; /* --vllm-cuda-graph-memory, -1 not given */
    int64_t vllm_tp;      /* --vllm-tensor-parallel-size (1) */
    vc_quant quant;       /* --weights, --qlora */
    char *input, *gpu, *sweep, *plot, *columns, *weights, *model, *extra, *cudnn_table;
    vc_format format;
    unsigned char given[VC_OPT__N]; /* options set (a flag: set on), for the rules of what applies */
    unsigned char told[VC_OPT__N];  /* options set at all (a flag: on or off): --recipe's pairs yield to them */
    int recipe;           /* --recipe: 1 + its row in src/policy/recipe.c; 0 none; -1 list */
    int64_t params, acts;
    size_t nmodels;
    bool have_acts, trace, batch_given, list_gpus, hf_given, loss_given, emit, gen_given, max_context, prompt_given,
        impl_given, kvq_given, kv_dtype_given, serve, serve_given, mode_given, qlora, prec_given, per_layer, counts,
        max_batch, max_seq, json_arena, no_hints;
};

typedef enum { VC_RESP_ESTIMATE, VC_RESP_SWEEP, VC_RESP_SERVE, VC_RESP_TEXT, VC_RESP_LIST_GPUS } vc_response_kind;

struct vc_response {
    vc_response_kind kind;
    vc_format format;        /* the request's */
    vc_options o;            /* as estimated (defaults applied, the batch of the report) */
    vc_hf_options hf;        /* the config.json's options and the adapters' as run (rep.hf, rep.lora: the JSON echo) */
    vc_lora lora;
    vc_serve_options so;
    vc_serve_result sr;
    vc_gpu_spec gpu;
    bool have_gpu, per_layer, counts, max_batch, max_seq, max_context;
    char *columns, *plot;
    vc_report rep;           /* its opts, r, gpu, model, file, weights point into this response */
    vc_result r;
    vc_result *rows;         /* a sweep's, one per batch size */
    int64_t *sweep;
    size_t nsweep;
    int64_t plot_max;        /* the max batch a plot marks; -1 none */
    char *text;              /* VC_RESP_TEXT: a trace or an emitted model */
    size_t text_len;
    int status;              /* 0 fits, 1 does not */
    char *model_name;        /* the model's name (rep.model) */
    vc_hint hints[VC_MAX_HINTS]; /* does not fit --gpu: what would (hints.c) */
    size_t nhints;
    bool hints_tried;
    vc_cudnn_table *cudnn_table; /* --cudnn-table's, o.cudnn_table */
    int recipe;              /* the request's --recipe (1 + its row), 0 none */
    unsigned char recipe_set[VC_RECIPE_MAX_SET]; /* 1: the recipe's pair k applied (the user did not give the option) */
    char file[4 * 4096 + 1], wdesc[96];
};

/* hints.c: the request did not fit its GPU: fills resp->hints with what would. */
void vc__hints(const vc_request *given, vc_response *resp);

/* render.c */
vc_status vc__check_columns(const vc_response *resp, vc_error *err);

#endif
