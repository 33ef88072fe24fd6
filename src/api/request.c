/*
 * request.c — a request: the options by table name (each value parsed and
 * checked here), the defaults and combination rules, the model loaded with
 * its options, and the one run it asks for (what the command line's
 * vc_cli_main did; the CLI is now a parser of argv into a request).
 *
 * Messages name options by their table name between option marks
 * (vc_error_format_for spells them per front end); what the user typed is
 * escaped before it joins a message, so the only control bytes in one are
 * the marks.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "api.h"
#include "engine.h"
#include "layer.h"
#include "recipe.h"
#include "release.h"
#include "model.h"
#include "serve_dsv4.h"
#include "util.h"

/* A usage error: the message (marks and all) as given; what the user typed
 * must already be escaped (ESC). */
static vc_status usage(vc_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static vc_status usage(vc_error *err, const char *fmt, ...)
{
    if (!err) return VC_ERR_USAGE;
    memset(err, 0, sizeof *err);
    err->code = VC_ERR_USAGE;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return VC_ERR_USAGE;
}

static vc_status nomem(vc_error *err)
{
    usage(err, "out of memory");
    if (err) err->code = VC_ERR_NOMEM;
    return VC_ERR_NOMEM;
}

/* What the user typed, safe inside a message (no control byte, so no mark). */
typedef struct {
    char s[512];
} esc_buf;
static const char *esc(esc_buf *b, const char *s)
{
    vc_escape_text(b->s, sizeof b->s, s ? s : "");
    return b->s;
}

/* ---- values ---- */

/* A whole positive (or non-negative) decimal integer; no signs, exponents or junk. */
static vc_status parse_count(const char *name, const char *s, int64_t min, int64_t *out, vc_error *err)
{
    esc_buf b;
    char *end;
    if (!s || !*s || !(*s >= '0' && *s <= '9')) goto bad;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE) return usage(err, "\x1f%s\x1f: %s is too large", name, esc(&b, s));
    if (*end || v < min) goto bad;
    *out = v;
    return VC_OK;
bad:
    return usage(err, "\x1f%s\x1f: expected a %s integer, got '%s'", name, min > 0 ? "positive" : "non-negative", esc(&b, s));
}

/* A decimal number in [lo, hi]. */
static vc_status parse_real(const char *name, const char *s, double lo, double hi, double *out, vc_error *err)
{
    esc_buf b;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return usage(err, "\x1f%s\x1f: expected a number from %g to %g, got '%s'", name, lo, hi, esc(&b, s));
    *out = v;
    return VC_OK;
}

static vc_status parse_size(const char *name, const char *s, int64_t *out, vc_error *err)
{
    vc_error e;
    memset(&e, 0, sizeof e);
    if (vc_parse_size(s, out, &e)) return usage(err, "\x1f%s\x1f: %s", name, e.msg); /* e.msg is escaped */
    return VC_OK;
}

/* v < 0: s is none of the choices ("a, b, c", or prose). */
static vc_status choose(const char *name, const char *s, int v, const char *choices, vc_error *err)
{
    esc_buf b;
    if (v < 0) return usage(err, "\x1f%s\x1f: unknown value '%s' (choose %s)", name, esc(&b, s), choices);
    return VC_OK;
}

static vc_status parse_shape(const char *s, int64_t *dims, int *nd, vc_error *err)
{
    esc_buf b;
    *nd = 0;
    const char *p = s;
    while (*p) {
        if (*nd == VC_MAX_DIMS) return usage(err, O("input") ": more than %d dimensions in '%s'", VC_MAX_DIMS, esc(&b, s));
        char *end;
        if (!(*p >= '0' && *p <= '9')) return usage(err, O("input") ": expected dimensions such as 3,224,224, got '%s'", esc(&b, s));
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (errno || v < 1) return usage(err, O("input") ": expected positive dimensions, got '%s'", esc(&b, s));
        dims[(*nd)++] = v;
        p = end;
        if ((*p == ',' || *p == 'x') && p[1]) p++; /* a separator needs a dimension after it: not "784," */
        else if (*p) return usage(err, O("input") ": expected dimensions such as 3,224,224, got '%s'", esc(&b, s));
    }
    return *nd ? VC_OK : usage(err, O("input") ": expected dimensions such as 3,224,224");
}

/* A positive integer inside a --sweep item: digits only, at most 2^53
 * (*over set when the digits pass it). */
static const char *sweep_int(const char *p, int64_t *v, bool *over)
{
    int64_t x = 0;
    const char *q = p;
    for (; *q >= '0' && *q <= '9'; q++) {
        x = x * 10 + (*q - '0');
        if (x > (INT64_C(1) << 53)) {
            *over = true;
            return NULL;
        }
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
static vc_status parse_sweep(const char *s, int64_t **out, size_t *n, vc_error *err)
{
    esc_buf b;
    size_t cap = 64, k = 0;
    int64_t *v = malloc(cap * sizeof *v);
    if (!v) return nomem(err);
    const char *p = s;
    vc_status st = VC_OK;
    bool over = false;
    for (;;) {
        int64_t a, hi, step = 1;
        bool geo = false;
        const char *q = sweep_int(p, &a, &over);
        if (!q) goto bad;
        hi = a;
        if (*q == ':') {
            if (!(q = sweep_int(q + 1, &hi, &over)) || hi < a) goto bad;
            if (*q == ':') {
                q++;
                if (*q == 'x' || *q == '*') {
                    geo = true;
                    q++;
                }
                if (!(q = sweep_int(q, &step, &over)) || (geo && step < 2)) goto bad;
            }
        }
        for (int64_t x = a; x <= hi;) {
            if (k == VC_MAX_SWEEP) {
                st = usage(err, O("sweep") ": more than %d batch sizes in '%s'", VC_MAX_SWEEP, esc(&b, s));
                goto fail;
            }
            if (k == cap) {
                int64_t *nv = realloc(v, (cap *= 2) * sizeof *v);
                if (!nv) {
                    st = nomem(err);
                    goto fail;
                }
                v = nv;
            }
            v[k++] = x;
            if (geo ? x > hi / step : x > hi - step) break;
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
    return VC_OK;
bad:
    if (over) /* a well-formed number past the batch sizes vramcalc takes (docs/limits.md) */
        st = usage(err, O("sweep") ": a number in '%s' is over the limit of 2^53 (9007199254740992)", esc(&b, s));
    else
        st = usage(err, O("sweep") ": expected batch sizes such as 1,8,32 or 1:64 or 1:64:8 or 1:4096:x2, got '%s'", esc(&b, s));
fail:
    free(v);
    return st;
}

/* ---- the request ---- */

vc_request *vc_request_new(void)
{
    vc_request *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    vc_options_init(&q->o);
    vc_hf_options_init(&q->hf);
    vc_lora_init(&q->lora);
    vc_serve_options_init(&q->so);
    q->vllm_util = 0.3; /* GRPOConfig.vllm_gpu_memory_utilization (trl @f2cd5771 grpo_config.py) */
    q->vllm_graph_mem = -1;
    q->vllm_tp = 1; /* GRPOConfig.vllm_tensor_parallel_size */
    q->format = VC_FORMAT_TABLE;
    return q;
}

void vc_request_free(vc_request *q)
{
    if (!q) return;
    free(q->input);
    free(q->gpu);
    free(q->sweep);
    free(q->plot);
    free(q->columns);
    free(q->weights);
    free(q->model);
    free(q->extra);
    free(q->cudnn_table);
    free(q);
}

static vc_status keep(char **slot, const char *value, vc_error *err)
{
    char *c = strdup(value);
    if (!c) return nomem(err);
    free(*slot);
    *slot = c;
    return VC_OK;
}

vc_status vc_request_set(vc_request *q, const char *name, const char *v, vc_error *err)
{
    vc_error_clear(err); /* an out-parameter: cleared first (vramcalc.h) */
    esc_buf b;
    if (!q) return usage(err, "no request");
    const vc_option_info *info = vc_option_find(name);
    if (!info || (info->applies & VC_APPLIES_FRONT_END)) {
        const vc_option_info *near = vc_option_suggest(name, VC_SPELL_PYTHON);
        if (near) return usage(err, "unknown option '%s'; did you mean \x1f%s\x1f?", esc(&b, name), near->name);
        return usage(err, "unknown option '%s'", esc(&b, name));
    }
    vc_option_id id = (vc_option_id)(info - vc_option_at(0));
    bool on = true;
    if (!info->arg) { /* a flag */
        if (v && (!strcmp(v, "false") || !strcmp(v, "0"))) on = false;
        else if (v && strcmp(v, "true") && strcmp(v, "1"))
            return usage(err, "\x1f%s\x1f takes no value (true or false), got '%s'", name, esc(&b, v));
    } else if (!v) {
        return usage(err, "\x1f%s\x1f needs a value", name);
    }
    vc_options *o = &q->o;
    vc_hf_options *hf = &q->hf;
    vc_status st = VC_OK;
    q->given[id] = on;
    q->told[id] = 1;
    switch (id) {
    case VC_OPT_BATCH: q->batch_given = true; return parse_count(name, v, 1, &o->batch, err);
    case VC_OPT_INPUT: return keep(&q->input, v, err);
    case VC_OPT_SEQ: q->hf_given = true; return parse_count(name, v, 1, &hf->seq, err);
    case VC_OPT_IMAGE: { /* WxH: the image's width and height in pixels (src/hf/hf_vision.c resizes it) */
        char *x = NULL, *end = NULL;
        q->hf_given = true;
        errno = 0;
        long long w = strtoll(v, &x, 10), h = x && (*x == 'x' || *x == 'X') ? strtoll(x + 1, &end, 10) : 0;
        if (errno || x == v || !end || end == x + 1 || *end || w < 1 || h < 1 || w > (1LL << 20) || h > (1LL << 20))
            return usage(err, O("image") ": expected WxH, the width and height in pixels from 1 to 1048576, e.g. "
                         "1280x720; got '%s'", esc(&b, v));
        hf->image_w = w;
        hf->image_h = h;
        return VC_OK;
    }
    case VC_OPT_IMAGES: q->hf_given = true; return parse_count(name, v, 1, &hf->images, err);
    case VC_OPT_TARGET_SEQ: q->hf_given = true; return parse_count(name, v, 1, &hf->target_seq, err);
    case VC_OPT_MOE_IMBALANCE: {
        char *end;
        errno = 0;
        hf->moe_imbalance = strtod(v, &end);
        q->hf_given = true;
        if (errno || end == v || *end || !(hf->moe_imbalance >= 1.0 && hf->moe_imbalance <= 1e6))
            return usage(err, O("moe_imbalance") ": expected a number from 1 to 1000000 (1: tokens spread evenly over the experts)");
        return VC_OK;
    }
    case VC_OPT_EMIT_MODEL: q->emit = on; return VC_OK;
    case VC_OPT_GPUS: return parse_count(name, v, 1, &o->gpus, err);
    case VC_OPT_TP: return parse_count(name, v, 1, &o->tp, err);
    case VC_OPT_SP: o->sp = on; return VC_OK;
    case VC_OPT_PP: return parse_count(name, v, 1, &o->pp, err);
    case VC_OPT_EP: return parse_count(name, v, 1, &o->ep, err);
    case VC_OPT_MICRO_BATCHES: return parse_count(name, v, 1, &o->micro_batches, err);
    case VC_OPT_PP_VIRTUAL: return parse_count(name, v, 1, &o->pp_virtual, err);
    case VC_OPT_PARALLEL: return choose(name, v, o->parallel = vc_parallel_from_name(v), info->choices, err);
    case VC_OPT_OFFLOAD: return choose(name, v, o->offload = vc_offload_from_name(v), info->choices, err);
    case VC_OPT_FSDP_PARAM_DTYPE: return choose(name, v, o->fsdp_param_dtype = vc_fsdp_dtype_from_name(v), info->choices, err);
    case VC_OPT_FSDP_REDUCE_DTYPE: return choose(name, v, o->fsdp_reduce_dtype = vc_fsdp_dtype_from_name(v), info->choices, err);
    case VC_OPT_FSDP_RESHARD_AFTER_FORWARD:
        /* true, false or a positive integer (fully_shard's reshard_after_forward: bool | int); the library
         * checks the integer against the world */
        if (!strcmp(v, "true")) o->fsdp_reshard = VC_FSDP_RESHARD_TRUE;
        else if (!strcmp(v, "false")) o->fsdp_reshard = VC_FSDP_RESHARD_FALSE;
        else if (*v >= '0' && *v <= '9') return parse_count(name, v, 1, &o->fsdp_reshard, err);
        else return usage(err, "\x1f%s\x1f: expected true, false or a positive integer, got '%s'", name, esc(&b, v));
        return VC_OK;
    case VC_OPT_GRADIENT_AS_BUCKET_VIEW: o->gradient_as_bucket_view = on; return VC_OK;
    case VC_OPT_PARAMETERS_AS_BUCKET_VIEW: o->parameters_as_bucket_view = on; return VC_OK;
    case VC_OPT_FSDP_REPLICATE: return parse_count(name, v, 1, &o->fsdp_replicate, err);
    case VC_OPT_FSDP_USE_ORIG_PARAMS: o->fsdp_use_orig_params = on; return VC_OK;
    case VC_OPT_DS_OVERLAP_COMM: /* DeepSpeedZeroConfig's overlap_comm: Optional[bool] */
        if (!strcmp(v, "true")) o->ds_overlap_comm = VC_DS_OVERLAP_ON;
        else if (!strcmp(v, "false")) o->ds_overlap_comm = VC_DS_OVERLAP_OFF;
        else return usage(err, "\x1f%s\x1f: expected true or false, got '%s'", name, esc(&b, v));
        return VC_OK;
    case VC_OPT_OFFLOAD_DEVICE:
        o->offload_device = !strcmp(v, "cpu") ? VC_OFFLOAD_DEVICE_CPU : !strcmp(v, "nvme") ? VC_OFFLOAD_DEVICE_NVME : -1;
        return choose(name, v, o->offload_device, info->choices, err);
    case VC_OPT_NVME_GDS: o->nvme_gds = on; return VC_OK;
    case VC_OPT_HOLD_OUTPUT: o->hold_output = on; return VC_OK;
    case VC_OPT_OPTIM_IN_BWD: o->optim_in_bwd = on; return VC_OK;
    case VC_OPT_GRAD_CKPT_OPS: o->ckpt_ops = on; return VC_OK;
    case VC_OPT_GRAD_CKPT_KIND:
        o->ckpt_reentrant = !strcmp(v, "reentrant") ? 1 : !strcmp(v, "non-reentrant") ? 0 : -1;
        return choose(name, v, o->ckpt_reentrant, info->choices, err);
    case VC_OPT_ACT_OFFLOAD:
        o->act_offload = !strcmp(v, "none") ? VC_ACT_OFFLOAD_NONE : !strcmp(v, "streams") ? VC_ACT_OFFLOAD_STREAMS
                       : !strcmp(v, "sync") ? VC_ACT_OFFLOAD_SYNC : -1;
        return choose(name, v, o->act_offload, info->choices, err);
    case VC_OPT_FIRST_STEP: o->first_step = on; return VC_OK;
    case VC_OPT_COMPILE: o->compile = on ? VC_COMPILE_INDUCTOR : 0; return VC_OK;
    case VC_OPT_ZERO_GRAD:
        o->keep_grads = !strcmp(v, "zero") ? 1 : !strcmp(v, "none") ? 0 : -1;
        return choose(name, v, o->keep_grads, info->choices, err);
    case VC_OPT_GRAD_CKPT: q->hf_given = true; hf->checkpoint = on; return VC_OK;
    case VC_OPT_GRAD_CKPT_EVERY: q->hf_given = true; return parse_count(name, v, 1, &hf->ckpt_every, err);
    case VC_OPT_EXPERTS:
        q->hf_given = true;
        return choose(name, v, (int)(hf->experts = (vc_experts_impl)vc_experts_impl_from_name(v)), info->choices, err);
    case VC_OPT_LOSS:
        q->hf_given = q->loss_given = true;
        return choose(name, v, (int)(hf->loss = (vc_loss_impl)vc_loss_impl_from_name(v)), info->choices, err);
    case VC_OPT_PACKING: q->hf_given = true; o->packing = on; return VC_OK;
    case VC_OPT_LIGER: q->hf_given = true; hf->liger = on; return VC_OK;
    case VC_OPT_LIGER_KERNELS: /* the names are the family's apply function's keywords: checked by src/hf/hf.c */
        q->hf_given = true;
        if (strlen(v) >= sizeof hf->liger_kernels)
            return usage(err, O("liger_kernels") ": longer than %zu characters", sizeof hf->liger_kernels - 1);
        memcpy(hf->liger_kernels, v, strlen(v) + 1);
        return VC_OK;
    case VC_OPT_LOSS_CHUNKS: q->hf_given = true; return parse_count(name, v, 1, &hf->loss_chunks, err);
    case VC_OPT_BETA: return parse_real(name, v, 0, 1e6, &o->grpo_beta, err);
    case VC_OPT_NUM_GENERATIONS: return parse_count(name, v, 1, &o->num_generations, err);
    case VC_OPT_USE_VLLM: o->grpo_vllm = on; return VC_OK;
    case VC_OPT_VLLM_GPU_MEMORY_UTILIZATION: return parse_real(name, v, 1e-6, 1.0, &q->vllm_util, err);
    case VC_OPT_VLLM_SLEEP: q->vllm_sleep = on; return VC_OK;
    case VC_OPT_VLLM_CUDA_GRAPH_MEMORY: return parse_size(name, v, &q->vllm_graph_mem, err);
    case VC_OPT_VLLM_TENSOR_PARALLEL_SIZE: return parse_count(name, v, 1, &q->vllm_tp, err);
    case VC_OPT_TRANSFORMERS: /* the release table's rows (src/policy/release.c) */
        q->hf_given = true;
        return choose(name, v, q->transformers = vc_transformers_from_name(v), "a release from 4.46 to 4.57, or 5.0", err);
    case VC_OPT_TRL: /* the TRL table's rows (src/policy/release.c), read by a trl: --recipe (apply_recipe) */
        return choose(name, v, q->trl = vc_trl_from_name(v), "a release from 1.0 to 1.9", err);
    case VC_OPT_PROMPT: q->gen_given = q->prompt_given = true; return parse_count(name, v, 1, &o->prompt, err);
    case VC_OPT_NEW_TOKENS: q->gen_given = true; return parse_count(name, v, 1, &o->new_tokens, err);
    case VC_OPT_MAX_CONTEXT: q->max_context = on; return VC_OK;
    case VC_OPT_SERVE: q->serve = on; return VC_OK;
    case VC_OPT_GPU_MEMORY_UTILIZATION:
        q->serve_given = true;
        return parse_real(name, v, 1e-6, 1.0, &q->so.gpu_memory_utilization, err);
    case VC_OPT_MAX_NUM_BATCHED_TOKENS: q->serve_given = true; return parse_count(name, v, 1, &q->so.max_num_batched_tokens, err);
    case VC_OPT_MAX_NUM_SEQS: q->serve_given = true; return parse_count(name, v, 1, &q->so.max_num_seqs, err);
    case VC_OPT_BLOCK_SIZE: q->serve_given = true; return parse_count(name, v, 1, &q->so.block_size, err);
    case VC_OPT_ENFORCE_EAGER: q->serve_given = true; o->enforce_eager = on; return VC_OK;
    case VC_OPT_CUDA_GRAPH_MEMORY: /* a size, or "estimate": src/engine/serve_graphs.c's */
        q->serve_given = true;
        if (!strcmp(v, "estimate")) {
            o->cuda_graph_memory = VC_CUDA_GRAPH_MEMORY_ESTIMATE;
            return VC_OK;
        }
        if (vc_parse_size(v, &o->cuda_graph_memory, &(vc_error){0})) {
            esc_buf eb;
            return usage(err, O("cuda_graph_memory") ": expected a size such as 512MiB, or estimate, got '%s'", esc(&eb, v));
        }
        return VC_OK;
    case VC_OPT_KV_CACHE_DTYPE:
        q->serve_given = q->kv_dtype_given = true;
        return choose(name, v, q->so.kv_cache_dtype = vc_kv_dtype_from_name(v), info->choices, err);
    case VC_OPT_KV_BITS: case VC_OPT_KV_GROUP_SIZE: case VC_OPT_KV_RESIDUAL_LENGTH: {
        int64_t n;
        q->gen_given = q->kvq_given = true;
        if ((st = parse_count(name, v, id == VC_OPT_KV_RESIDUAL_LENGTH ? 0 : 1, &n, err))) return st;
        if (id == VC_OPT_KV_BITS) o->kv_bits = n > 1000 ? 1000 : (int)n; /* 2 or 4: the library's check */
        else if (id == VC_OPT_KV_GROUP_SIZE) o->kv_group = n;
        else o->kv_residual = n;
        return VC_OK;
    }
    case VC_OPT_NUM_BEAMS: return parse_count(name, v, 1, &o->num_beams, err);
    case VC_OPT_CACHE: q->gen_given = true; return choose(name, v, o->cache = vc_cache_from_name(v), info->choices, err);
    case VC_OPT_WEIGHTS:
        if (vc_quant_from_name(v, &q->quant))
            return choose(name, v, -1, info->choices, err);
        return keep(&q->weights, v, err);
    case VC_OPT_QLORA: q->qlora = on; return VC_OK;
    case VC_OPT_LORA: return parse_count(name, v, 1, &q->lora.r, err);
    case VC_OPT_LORA_ALPHA: return parse_real(name, v, 1e-9, 1e12, &q->lora.alpha, err);
    case VC_OPT_LORA_DROPOUT: return parse_real(name, v, 0, 0.999999, &q->lora.dropout, err);
    case VC_OPT_LORA_DTYPE:
        return choose(name, v, (int)(q->lora.dtype = (vc_lora_dtype)vc_lora_dtype_from_name(v)), info->choices, err);
    case VC_OPT_PEFT: {
        int m = vc_peft_from_name(v);
        if (m >= 0) q->lora.method = (vc_peft)m;
        return choose(name, v, m, info->choices, err);
    }
    case VC_OPT_LORA_TARGETS:
        if (strlen(v) >= sizeof q->lora.targets)
            return usage(err, O("lora_targets") ": longer than %zu characters", sizeof q->lora.targets - 1);
        memcpy(q->lora.targets, v, strlen(v) + 1);
        return VC_OK;
    case VC_OPT_MODULES_TO_SAVE:
        if (strlen(v) >= sizeof q->lora.modules_to_save)
            return usage(err, O("modules_to_save") ": longer than %zu characters", sizeof q->lora.modules_to_save - 1);
        memcpy(q->lora.modules_to_save, v, strlen(v) + 1);
        return VC_OK;
    case VC_OPT_OPTIM: return choose(name, v, o->optim = vc_optim_from_name(v), info->choices, err);
    case VC_OPT_OPTIM_IMPL:
        q->impl_given = true;
        return choose(name, v, o->optim_impl = vc_optim_impl_from_name(v), info->choices, err);
    case VC_OPT_ACCUMULATE: return parse_count(name, v, 1, &o->accumulate, err);
    case VC_OPT_PRECISION: q->prec_given = true; return choose(name, v, o->precision = vc_precision_from_name(v), info->choices, err);
    case VC_OPT_MODE: q->mode_given = true; return choose(name, v, o->mode = vc_mode_from_name(v), info->choices, err);
    case VC_OPT_ATTENTION: return choose(name, v, o->attention = vc_attention_from_name(v), info->choices, err);
    case VC_OPT_TORCH: return choose(name, v, o->torch_version = vc_torch_from_name(v), "a release from 2.0 to 2.15, e.g. 2.5", err);
    case VC_OPT_WORKSPACE: return parse_size(name, v, &o->workspace, err);
    case VC_OPT_CONTEXT: return parse_size(name, v, &o->context, err);
    case VC_OPT_CUDA: { /* the CUDA context model's runtime (src/engine/context.c) */
        int cuda = vc_cuda_from_name(v);
        if (cuda >= 0) o->cuda_version = cuda;
        return choose(name, v, cuda, "a CUDA release from 11.0 to 13.9, e.g. 12.4", err);
    }
    case VC_OPT_MODULE_LOADING: {
        int m = vc_module_loading_from_name(v);
        if (m >= 0) o->module_loading = m;
        return choose(name, v, m, info->choices, err);
    }
    case VC_OPT_NCCL_TOPOLOGY: { /* src/engine/nccl.c */
        int t = vc_nccl_topology_from_name(v);
        if (t >= 0) o->nccl_topology = (vc_nccl_topology)t;
        return choose(name, v, t, info->choices, err);
    }
    case VC_OPT_NCCL_NVLS: { /* NCCL_NVLS_ENABLE (src/engine/nccl.c) */
        int m = !strcmp(v, "auto") ? VC_NCCL_NVLS_AUTO : !strcmp(v, "off") ? VC_NCCL_NVLS_OFF : -1;
        if (m >= 0) o->nccl_nvls = m;
        return choose(name, v, m, info->choices, err);
    }
    case VC_OPT_GPUS_PER_NODE: { /* the node's GPUs, for NCCL's network transport (src/engine/nccl.c) */
        vc_status cs = parse_count(name, v, 1, &o->gpus_per_node, err);
        if (!cs && o->gpus_per_node > 72)
            return usage(err, O("gpus_per_node") ": must be from 1 to 72 (an NVL72 rack's NVLink domain), got %lld", (long long)o->gpus_per_node);
        return cs;
    }
    case VC_OPT_NCCL_CHANNELS: { /* NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS (src/engine/nccl.c) */
        vc_status cs = parse_count(name, v, 1, &o->nccl_channels, err);
        if (!cs && o->nccl_channels > 64)
            return usage(err, O("nccl_channels") ": must be from 1 to 64 (NCCL's MAXCHANNELS), got %lld", (long long)o->nccl_channels);
        return cs;
    }
    case VC_OPT_BOUND: /* src/engine/cudnn.c */
        o->bound = !strcmp(v, "low") ? VC_BOUND_LOW : !strcmp(v, "high") ? VC_BOUND_HIGH : -1;
        return choose(name, v, o->bound, info->choices, err);
    case VC_OPT_CUDNN_TABLE: return keep(&q->cudnn_table, v, err); /* read by vc_request_run */
    case VC_OPT_ALLOC_CONF: { /* src/engine/alloc_conf.c */
        vc_error e;
        memset(&e, 0, sizeof e);
        if (vc_alloc_conf_parse(v, o, &e)) return usage(err, O("alloc_conf") ": %s", e.msg); /* e.msg is escaped */
        return VC_OK;
    }
    case VC_OPT_FORMAT:
        q->format = !strcmp(v, "table") ? VC_FORMAT_TABLE : !strcmp(v, "json") ? VC_FORMAT_JSON : !strcmp(v, "csv") ? VC_FORMAT_CSV : VC_FORMAT_DEFAULT;
        if (q->format == VC_FORMAT_DEFAULT) return usage(err, O("format") ": unknown value '%s' (choose table, json or csv)", esc(&b, v));
        return VC_OK;
    case VC_OPT_GPU: return keep(&q->gpu, v, err);
    case VC_OPT_MAX_BATCH: q->max_batch = on; return VC_OK;
    case VC_OPT_MAX_SEQ: q->max_seq = on; return VC_OK;
    case VC_OPT_NO_HINTS: q->no_hints = on; return VC_OK;
    case VC_OPT_SWEEP: return keep(&q->sweep, v, err);
    case VC_OPT_PLOT: return keep(&q->plot, v, err);
    case VC_OPT_FORCE: return VC_OK; /* q->given[VC_OPT_FORCE] */
    case VC_OPT_COLUMNS: return keep(&q->columns, v, err);
    case VC_OPT_PER_LAYER: q->per_layer = on; return VC_OK;
    case VC_OPT_TRACE: q->trace = on; return VC_OK;
    case VC_OPT_PARAMS: q->counts = true; return parse_count(name, v, 0, &q->params, err);
    case VC_OPT_ACTIVATIONS: q->have_acts = true; return parse_count(name, v, 0, &q->acts, err);
    case VC_OPT_LIST_GPUS: q->list_gpus = on; return VC_OK;
    case VC_OPT_RECIPE: { /* src/policy/recipe.c; applied by vc_request_run, under the options given */
        if (!strcmp(v, "list")) {
            q->recipe = -1;
            return VC_OK;
        }
        const vc_recipe_row *r = vc__recipe_find(v);
        if (!r) {
            char names[1024];
            vc__recipe_names(names, sizeof names);
            return usage(err, O("recipe") ": unknown recipe '%s' (choose %s; list: each one's options and source)", esc(&b, v),
                         names);
        }
        q->recipe = 1 + (int)(r - vc__recipe_at(0));
        return VC_OK;
    }
    default: break; /* the front end's own (FRONT_END): refused above */
    }
    return usage(err, "unknown option '%s'", esc(&b, name));
}

vc_status vc_request_add_model(vc_request *q, const char *path, vc_error *err)
{
    vc_error_clear(err); /* an out-parameter: cleared first (vramcalc.h) */
    if (!q || !path) return usage(err, "no model file given");
    q->nmodels++;
    if (q->nmodels == 1) return keep(&q->model, path, err);
    if (q->nmodels == 2) return keep(&q->extra, path, err);
    return VC_OK;
}

/* ---- the JSON arena (vc_request_set_json_arena) ----
 * The model file's JSON tree is built and freed inside the load, one malloc
 * per value (thousands for a large model); a program that owns the process
 * lends cJSON a bump allocator for that call and drops it whole afterwards
 * (the library keeps no cJSON value). cJSON's hooks are process-wide: off
 * unless the front end asks. */
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

void vc_request_set_json_arena(vc_request *q, int on) { q->json_arena = on != 0; }

/* ---- the run ---- */

/* A library error after the model is loaded names the model file when it
 * names no file itself (the CLI's die_err did this). */
static vc_status lib_err(const vc_request *q, vc_error *err, vc_status st)
{
    if (!err->file[0] && q->model && !q->counts) snprintf(err->file, sizeof err->file, "%s", q->model);
    return st;
}

static void trace_line(void *ctx, const char *text)
{
    FILE *f = ctx;
    fprintf(f, "%s\n", text);
}

/* "--mode train" or "--mode train, infer and generate" (or --serve): where
 * an option applies, from its row's VC_APPLIES_ mode bits. */
static void modes_text(unsigned applies, char *buf, size_t n)
{
    static const struct { unsigned bit; const char *name; } modes[] = {
        {VC_APPLIES_TRAIN, "train"}, {VC_APPLIES_INFER, "infer"}, {VC_APPLIES_GENERATE, "generate"}};
    const char *names[3];
    int k = 0;
    for (int i = 0; i < 3; i++)
        if (applies & modes[i].bit) names[k++] = modes[i].name;
    int w = snprintf(buf, n, k ? O("mode") " " : "");
    for (int i = 0; i < k && w >= 0 && (size_t)w < n; i++)
        w += snprintf(buf + w, n - (size_t)w, "%s%s", i == 0 ? "" : i == k - 1 ? " and " : ", ", names[i]);
    if ((applies & VC_APPLIES_SERVE) && w >= 0 && (size_t)w < n) snprintf(buf + w, n - (size_t)w, "%s" O("serve"), k ? " or " : "");
}

/* Every option given applies to this request, from the table's applies-to
 * column (issue 29): the input (counts only or a model), the mode (or
 * --serve); LoRA's settings need adapters. After the refusals above, which
 * say more where they apply. */
static vc_status check_applies(const vc_request *q, vc_error *err)
{
    static const vc_option_id lora_opts[] = {VC_OPT_LORA_TARGETS, VC_OPT_LORA_ALPHA, VC_OPT_LORA_DROPOUT, VC_OPT_LORA_DTYPE};
    bool ia3 = !vc_peft_row_get(q->lora.method)->lora; /* IA3Config, LNTuningConfig: target_modules, the adapters' dtype */
    for (size_t i = 0; i < sizeof lora_opts / sizeof *lora_opts; i++)
        if (q->given[lora_opts[i]] && q->lora.r == 0 && !q->qlora &&
            !(ia3 && (lora_opts[i] == VC_OPT_LORA_TARGETS || lora_opts[i] == VC_OPT_LORA_DTYPE)))
            return usage(err, "\x1f%s\x1f sets the LoRA adapters: it needs " OV("lora", "R") " (or " O("qlora") ")",
                         vc_option_at(lora_opts[i])->name);
    if (q->o.keep_grads && (q->o.parallel != VC_PARALLEL_NONE || q->o.pp > 1 || q->o.optim == VC_OPTIM_NONE))
        return usage(err, OV("zero_grad", "zero") " (gradients kept between steps) is modelled on one GPU with an optimizer: "
                     "not with %s", q->o.optim == VC_OPTIM_NONE ? OV("optim", "none") : q->o.pp > 1 ? O("pp") : O("parallel"));
    if ((q->o.optim_in_bwd || q->o.first_step) &&
        (q->o.parallel != VC_PARALLEL_NONE || q->o.pp > 1 || q->o.optim == VC_OPTIM_NONE ||
         (q->o.optim_in_bwd && (q->o.accumulate > 1 || q->o.keep_grads))))
        return usage(err, "%s is modelled on one GPU with an optimizer%s: not with %s",
                     q->o.optim_in_bwd ? O("optim_in_bwd") : O("first_step"), q->o.optim_in_bwd ? ", without accumulation" : "",
                     q->o.optim == VC_OPTIM_NONE ? OV("optim", "none") : q->o.pp > 1 ? O("pp")
                     : q->o.parallel != VC_PARALLEL_NONE ? O("parallel") : q->o.keep_grads ? OV("zero_grad", "zero") : O("accumulate"));
    if (q->given[VC_OPT_GRAD_CKPT_EVERY] && !q->hf.checkpoint)
        return usage(err, O("grad_ckpt_every") " says which decoder layers are checkpointed: it needs " O("grad_ckpt"));
    /* --grad-ckpt-kind reentrant (torch/utils/checkpoint.py CheckpointFunction @0008d771a4015b0b43165ea470653b52e92b2148):
     * torchtitan's op-level policy is a context_fn, which checkpoint() takes only with use_reentrant=False (its
     * docstring: "This argument is only supported if use_reentrant=False"); torchtune's activation offloading runs
     * with its set_activation_checkpointing (torchtune/training/memory.py @03317787: apply_activation_checkpointing,
     * whose checkpoint_wrapper is CheckpointImpl.NO_REENTRANT), and the offload hooks around a reentrant forward
     * (ctx.save_for_backward of the layer's inputs) are not modelled */
    if (q->o.ckpt_reentrant && (q->o.ckpt_ops || q->o.act_offload))
        return usage(err, OV("grad_ckpt_kind", "reentrant") " is not modelled with %s: %s", q->o.ckpt_ops ? O("grad_ckpt_ops") : O("act_offload"),
                     q->o.ckpt_ops ? "torchtitan's op-level policy is a context_fn, which torch.utils.checkpoint takes only with "
                                     "use_reentrant=False"
                                   : "torchtune offloads around its non-reentrant checkpoint_wrapper (CheckpointImpl.NO_REENTRANT)");
    /* transformers' Trainer reads liger_kernel_config only with use_liger_kernel=True */
    if (q->given[VC_OPT_LIGER_KERNELS] && !q->hf.liger)
        return usage(err, O("liger_kernels") " is transformers' liger_kernel_config: it needs " O("liger"));
    if (q->given[VC_OPT_LOSS_CHUNKS] && q->hf.loss != VC_LOSS_IMPL_CHUNKED)
        return usage(err, O("loss_chunks") " is torchtune's num_output_chunks: it needs " OV("loss", "chunked"));
    /* --serve sizes vLLM's pool after its own profiling run, whose encoder batch is vLLM's dummy images of the
     * processor's largest size under the default limit_mm_per_prompt, reported with the pool (src/engine/
     * serve_mm.c). A request's image tokens are positions of the pool like its text (--prompt counts them): the
     * pool's size does not depend on them. A served image's size or count would be the server's
     * limit_mm_per_prompt {"image": {"count", "width", "height"}} (vllm/config/multimodal.py), which shrinks the
     * dummy items but not the budget (BaseDummyInputsBuilder._get_dummy_images takes min(width, override)):
     * not modelled, vLLM's default is */
    if (q->serve && (q->given[VC_OPT_IMAGE] || q->given[VC_OPT_IMAGES]))
        return usage(err, "%s with " O("serve") ": vLLM profiles the vision encoder on its own dummy images (the "
                     "processor's largest, under the default limit_mm_per_prompt), reported as \"encoder profiling\"; a "
                     "request's images are prompt tokens of the pool (count them in " O("prompt") "), and "
                     "limit_mm_per_prompt's image count and size are not modelled",
                     q->given[VC_OPT_IMAGE] ? O("image") : O("images"));
    unsigned mode = q->serve ? VC_APPLIES_SERVE : q->o.mode == VC_MODE_INFER ? VC_APPLIES_INFER
                  : q->o.mode == VC_MODE_GENERATE ? VC_APPLIES_GENERATE : VC_APPLIES_TRAIN;
    for (size_t i = 0; i < VC_OPT__N; i++) {
        const vc_option_info *info = vc_option_at(i);
        if (!q->given[i] || (info->applies & VC_APPLIES_FRONT_END)) continue;
        if (q->counts && !(info->applies & VC_APPLIES_COUNTS))
            return usage(err, "\x1f%s\x1f needs a model file: " O("params") " makes a counts-only estimate", info->name);
        if (!(info->applies & mode)) {
            char where[128];
            modes_text(info->applies, where, sizeof where);
            if (q->serve)
                return usage(err, "\x1f%s\x1f does not apply to " O("serve") " (vLLM's engine): it goes with %s", info->name, where);
            return usage(err, "\x1f%s\x1f does not apply to \x1fmode=%s\x1f: it goes with %s", info->name,
                         vc_mode_name(q->o.mode), where);
        }
    }
    return VC_OK;
}

/* The combinations refused before anything is loaded (vc_cli_main's order). */
static vc_status check_request(vc_request *q, vc_error *err)
{
    esc_buf b;
    vc_options *o = &q->o;
    const bool counts = q->counts, sweep = q->sweep != NULL, gpu = q->gpu != NULL;
    if (o->mode == VC_MODE_GENERATE) {
        if (q->per_layer || o->parallel != VC_PARALLEL_NONE)
            return usage(err, OV("mode", "generate") " estimates one GPU's generate(): it does not go with %s",
                         q->per_layer ? O("per_layer") : O("parallel"));
        if (q->hf.seq > 0) return usage(err, O("seq") " does not go with " OV("mode", "generate") ": " O("prompt") " is the sequence's length");
        q->hf.seq = o->prompt; /* a config.json's report names the prompt's length */
    }
    const vc_peft_row *pr = vc_peft_row_get(q->lora.method);
    if (q->lora.method == VC_PEFT_IA3) { /* IA3Config: target_modules, feedforward_modules; no r, alpha, dropout */
        if (q->given[VC_OPT_LORA] || q->given[VC_OPT_LORA_ALPHA] || q->given[VC_OPT_LORA_DROPOUT])
            return usage(err, OV("peft", "ia3") " learns one vector per target module: it has no %s",
                         q->given[VC_OPT_LORA] ? "rank (" O("lora") ")" : q->given[VC_OPT_LORA_ALPHA] ? O("lora_alpha") : O("lora_dropout"));
        if (q->qlora || q->weights)
            return usage(err, OV("peft", "ia3") " over quantized weights (peft/tuners/ia3/bnb.py) is not modelled: it does not go with %s",
                         q->qlora ? O("qlora") : O("weights"));
    } else if (pr->copy) { /* LNTuningConfig: target_modules; no r, alpha, dropout */
        if (q->given[VC_OPT_LORA] || q->given[VC_OPT_LORA_ALPHA] || q->given[VC_OPT_LORA_DROPOUT] || q->qlora)
            return usage(err, OV("peft", "ln_tuning") " trains a copy of each target module: it has no %s",
                         q->qlora ? "LoRA adapters (" O("qlora") "; " OV("weights", "nf4") " quantizes the base)"
                         : q->given[VC_OPT_LORA] ? "rank (" O("lora") ")" : q->given[VC_OPT_LORA_ALPHA] ? O("lora_alpha") : O("lora_dropout"));
        /* cast_adapter_dtype upcasts the copies to fp32; LlamaRMSNorm's weight * x.to(input_dtype) then
         * returns fp32, which the next 16-bit nn.Linear refuses (no autocast to reconcile them) */
        bool pure16 = o->precision == VC_PREC_BF16 || o->precision == VC_PREC_FP16 || o->precision == VC_PREC_MIXED_BF16 ||
                      o->precision == VC_PREC_MIXED_FP16 || (!q->prec_given && q->weights);
        if (pure16 && (q->lora.dtype == VC_LORA_DTYPE_AUTO || q->lora.dtype == VC_LORA_DTYPE_FP32))
            return usage(err, OV("peft", "ln_tuning") " on 16-bit weights: PEFT upcasts the copied norms to fp32 "
                         "(autocast_adapter_dtype), whose fp32 output a 16-bit Linear refuses; use " OV("lora_dtype", "model")
                         " (autocast_adapter_dtype=False) or an amp or fp32 " O("precision"));
    } else if (q->given[VC_OPT_PEFT] && q->lora.r == 0 && !q->qlora) {
        q->lora.r = 8; /* LoraConfig's r, as --qlora takes it */
    }
    if (q->given[VC_OPT_MODULES_TO_SAVE] && !q->given[VC_OPT_PEFT] && !q->given[VC_OPT_LORA] && !q->qlora)
        return usage(err, O("modules_to_save") " is a field of a PEFT config: it needs " OV("lora", "R") ", " O("qlora") " or " O("peft"));
    if (q->qlora) { /* BitsAndBytesConfig(load_in_4bit, nf4, double quant, compute bf16) + LoraConfig */
        if (q->weights && strcmp(q->weights, "nf4"))
            return usage(err, O("qlora") " stores the base as nf4: it does not go with \x1fweights=%s\x1f", esc(&b, q->weights));
        if (q->prec_given && o->precision != VC_PREC_BF16 && o->precision != VC_PREC_FP16)
            return usage(err, O("qlora") " computes in 16-bit (bnb_4bit_compute_dtype): use " O("precision") " bf16 or fp16, not %s",
                         vc_precision_name(o->precision));
        if (!q->prec_given) o->precision = VC_PREC_BF16;
        if (q->lora.r == 0) q->lora.r = 8; /* LoraConfig's r */
        vc_quant_from_name("nf4", &q->quant); /* q->weights stays as given: --weights nf4 or none */
    }
    if (counts && (q->weights || q->qlora))
        return usage(err, "%s needs a model file: " O("params") " makes a counts-only estimate", q->qlora ? O("qlora") : O("weights"));
    if (q->have_acts && !counts) return usage(err, O("activations") " goes with " O("params"));
    if (q->hf.loss == VC_LOSS_IMPL_DPO || q->hf.loss == VC_LOSS_IMPL_DPO_PRECOMPUTED || q->hf.loss == VC_LOSS_IMPL_ORPO ||
        q->hf.loss == VC_LOSS_IMPL_KTO) {
        /* TRL's DataCollatorForPreference concatenates each pair's chosen and rejected sequences
         * (src/engine/loss.c emit_dpo), ORPO's concatenated_forward the same (emit_orpo): --batch
         * counts them, 2 x per_device_train_batch_size. KTO's batch is unpaired (emit_kto): --batch
         * counts its examples, modelled half desirable, half not */
        const bool kto = q->hf.loss == VC_LOSS_IMPL_KTO;
        const char *ln = q->hf.loss == VC_LOSS_IMPL_DPO ? "dpo" : q->hf.loss == VC_LOSS_IMPL_ORPO ? "orpo"
                       : kto ? "kto" : "dpo-precomputed";
        if (!q->batch_given) o->batch = 2; /* one pair; KTO: two examples (its KL term needs more than one) */
        else if (o->batch % 2 && kto)
            return usage(err, O("batch") " %lld is odd: with " O("loss") " kto it counts the examples, modelled half "
                         "desirable and half undesirable", (long long)o->batch);
        else if (o->batch % 2)
            return usage(err, O("batch") " %lld is odd: with " O("loss") " %s it counts the sequences of TRL's "
                         "concatenated [chosen; rejected] batch, 2 x per_device_train_batch_size", (long long)o->batch, ln);
        if (q->max_batch || sweep)
            return usage(err, "%s with " O("loss") " %s is not modelled: %s", q->max_batch ? O("max_batch") : O("sweep"), ln,
                         kto ? "the batch's halves are its desirable and undesirable examples; give " O("batch")
                             : "it would count sequences, not pairs; give " O("batch") " as 2 x the pairs");
    }
    if (q->hf.loss == VC_LOSS_IMPL_SUM && o->compile) /* src/engine/loss.c emit_logits_sum */
        return usage(err, OV("loss", "sum") " with " O("compile") " is not modelled: what Inductor makes of sum's "
                     "expanded gradient before the LM head's matmuls was not derived");
    if (q->hf.loss == VC_LOSS_IMPL_SUM && (q->recipe > 0 || o->packing))
        return usage(err, OV("loss", "sum") " is the simplest loop's model(ids).logits.sum(), no labels: not with %s, %s",
                     q->recipe > 0 ? O("recipe") : O("packing"),
                     q->recipe > 0 ? "a library's training loop computing its own loss"
                                   : "TRL's and torchtune's packed batches, which their losses read through labels");
    if (q->hf.loss == VC_LOSS_IMPL_GRPO) {
        /* TRL's GRPOTrainer step (src/engine/grpo.c; trl/trainer/grpo_trainer.py and grpo_config.py @f2cd5771):
         * per_device_train_batch_size (--batch) completions per micro-step, gradient_accumulation_steps
         * (--accumulate) micro-steps, steps_per_generation = gradient_accumulation_steps (GRPOConfig.__post_init__'s
         * default), so one generation of generation_batch_size = batch x accumulate completions, num_generations
         * per prompt; the model runs prompt + max_completion_length tokens */
        if (o->mode != VC_MODE_TRAIN)
            return usage(err, OV("loss", "grpo") " is a training step (its generation inside): not with " OV("mode", "%s"),
                         vc_mode_name(o->mode));
        const char *no = q->hf.seq > 0 ? O("seq") : q->given[VC_OPT_GRAD_CKPT_EVERY] ? O("grad_ckpt_every")
                       : o->ckpt_ops ? O("grad_ckpt_ops")
                       : q->max_batch ? O("max_batch") : sweep ? O("sweep") : q->max_seq ? O("max_seq") : o->packing ? O("packing")
                       : q->given[VC_OPT_CACHE] ? O("cache") : o->compile ? O("compile") : o->first_step ? O("first_step")
                       : o->optim_in_bwd ? O("optim_in_bwd") : o->hold_output ? O("hold_output") : o->act_offload ? O("act_offload")
                       : o->tp > 1 ? O("tp") : o->pp > 1 ? O("pp") : NULL;
        if (no)
            return usage(err, OV("loss", "grpo") " is modelled without %s: %s", no,
                         !strcmp(no, O("seq")) ? "the sequence is " O("prompt") " + " O("new_tokens")
                         : !strcmp(no, O("grad_ckpt_every")) || !strcmp(no, O("grad_ckpt_ops"))
                           ? "TRL checkpoints every decoder layer whole (transformers' gradient_checkpointing_enable)"
                         : !strcmp(no, O("cache")) ? "GRPOTrainer's generate() makes a DynamicCache (cache_implementation None)"
                         : "the step's generation and training phases are two plans (src/engine/grpo.c) that it "
                           "does not run");
        if (o->num_generations < 2)
            return usage(err, O("num_generations") " %lld: GRPO needs at least 2 generations per prompt (GRPOConfig "
                         "raises below 2)", (long long)o->num_generations);
        int64_t total, gen_batch;
        if (!q->batch_given) o->batch = o->num_generations;
        if (__builtin_mul_overflow(o->batch, o->accumulate, &gen_batch) || gen_batch > VC_MAX_DIM_SIZE)
            return usage(err, O("batch") " x " O("accumulate") ": the generation batch passes 2^40");
        if (gen_batch % o->num_generations && o->accumulate == 1)
            return usage(err, O("batch") " %lld is not a multiple of " O("num_generations") " %lld: GRPOConfig requires "
                         "generation_batch_size %% num_generations == 0", (long long)o->batch, (long long)o->num_generations);
        if (gen_batch % o->num_generations)
            return usage(err, O("batch") " %lld x " O("accumulate") " %lld is not a multiple of " O("num_generations")
                         " %lld: GRPOConfig requires generation_batch_size %% num_generations == 0 (generation_batch_size "
                         "= per_device_train_batch_size x steps_per_generation)", (long long)o->batch,
                         (long long)o->accumulate, (long long)o->num_generations);
        if (__builtin_add_overflow(o->prompt, o->new_tokens, &total) || total > VC_MAX_DIM_SIZE)
            return usage(err, O("new_tokens") ": prompt + new tokens pass 2^40");
        q->hf.seq = total;
        /* --use-vllm: TRL's colocated engine (trl/generation/vllm_generation.py VLLMGeneration._init_vllm) */
        if (o->grpo_vllm) {
            /* LoRA (and rsLoRA, PiSSA) is modelled: sync_weights' merge_adapter / unmerge_adapter temporaries
             * (src/engine/grpo.c merge_temp; DoRA, IA3 and LN tuning refused there). Quantized weights are not:
             * _init_vllm gives vLLM quantization="bitsandbytes" for a bnb Linear4bit model and raises for
             * Linear8bitLt. QLoRA's sync, from source (issue 26):
             *  - merge (peft @5d602fdb tuners/lora/bnb.py Linear4bit.merge, unmerge the same with output - delta): per
             *    layer dequantize_bnb_weight (utils/integrations.py: bnb.functional.dequantize_4bit, the weight in
             *    quant_state.dtype, 2 B/element in bf16), get_delta_weight (lora_B @ lora_A x scaling, the adapters'
             *    fp32: 4 B), w_data = output + delta (fp32, 4 B), then bnb.nn.Params4bit(w_data.to("cpu")).to(device):
             *    bitsandbytes @95f9af30 nn/modules.py Params4bit.to -> _quantize: w = data.contiguous().to(device)
             *    (4 B again, on the GPU) and functional.py quantize_4bit's packed codes (0.5 B) and absmax, while the
             *    old packed weight is still referenced;
             *  - push: TRL (trl @f2cd5771 vllm_generation.py sync_weights) sends param.data, the trainer's packed
             *    uint8 codes, without their QuantState. vLLM's weights are its own: vllm-project/vllm @c9e9c484
             *    model_loader/bitsandbytes_loader.py quantizes the bf16 checkpoint at start-up (_unquantized_generator:
             *    quantize_4bit nf4, compress_statistics=True) and binds each weight's QuantState once
             *    (load_weights -> _bind_quant_states_to_params: bnb_quant_state); the later load_weights' loaders
             *    (layers/linear.py, use_bitsandbytes_4bit: adjust_bitsandbytes_4bit_shard, copy_) copy the codes in
             *    place, shape [n x k / 2, 1] as BitsAndBytesLinearMethod.create_weights makes them, and keep that
             *    start-up QuantState. So the copy allocates nothing but the engine decodes the merged codes with
             *    the base checkpoint's scales, and vLLM's start-up quantization is not modelled by vc_serve: refused */
            const char *nv = !gpu ? O("gpu") : q->qlora || q->given[VC_OPT_WEIGHTS] ? (q->qlora ? O("qlora") : O("weights")) : NULL;
            if (nv && !gpu)
                return usage(err, O("use_vllm") " needs " O("gpu") ": vLLM takes " O("vllm_gpu_memory_utilization")
                             " of the card it runs on");
            if (nv)
                return usage(err, O("use_vllm") " with %s is not modelled: vLLM loads the 4-bit checkpoint itself "
                             "(quantization=\"bitsandbytes\", quantized at start-up with its own QuantState per weight; "
                             "TRL refuses 8-bit: \"vLLM does not support in-flight 8-bit quantization\"), and sync_weights pushes only the packed codes peft's Linear4bit.merge "
                             "requantized, which vLLM copies in place beside its start-up scales", nv);
            /* trl @f2cd5771 vllm_generation.py _init_vllm: "tensor_parallel_size ({N}) must divide world size ({G})
             * evenly" (accelerator.num_processes: one process a GPU) */
            if (o->gpus % q->vllm_tp)
                return usage(err, O("vllm_tensor_parallel_size") " %lld must divide the trainer's processes, " O("gpus")
                             " %lld: TRL raises \"tensor_parallel_size must divide world size evenly\"",
                             (long long)q->vllm_tp, (long long)o->gpus);
        } else if (q->given[VC_OPT_VLLM_GPU_MEMORY_UTILIZATION] || q->vllm_sleep || q->given[VC_OPT_VLLM_CUDA_GRAPH_MEMORY] ||
                   q->given[VC_OPT_VLLM_TENSOR_PARALLEL_SIZE]) {
            return usage(err, "%s goes with " O("use_vllm"), q->vllm_sleep ? O("vllm_sleep")
                         : q->given[VC_OPT_VLLM_CUDA_GRAPH_MEMORY] ? O("vllm_cuda_graph_memory")
                         : q->given[VC_OPT_VLLM_TENSOR_PARALLEL_SIZE] ? O("vllm_tensor_parallel_size") : O("vllm_gpu_memory_utilization"));
        }
    } else if (q->given[VC_OPT_BETA] || q->given[VC_OPT_NUM_GENERATIONS] || q->o.grpo_vllm ||
               q->given[VC_OPT_VLLM_GPU_MEMORY_UTILIZATION] || q->vllm_sleep || q->given[VC_OPT_VLLM_TENSOR_PARALLEL_SIZE]) {
        return usage(err, "%s is GRPOConfig's: it needs " OV("loss", "grpo"),
                     q->given[VC_OPT_BETA] ? O("beta") : q->given[VC_OPT_NUM_GENERATIONS] ? O("num_generations")
                     : q->o.grpo_vllm ? O("use_vllm") : q->vllm_sleep ? O("vllm_sleep")
                     : q->given[VC_OPT_VLLM_TENSOR_PARALLEL_SIZE] ? O("vllm_tensor_parallel_size") : O("vllm_gpu_memory_utilization"));
    } else if (q->given[VC_OPT_VLLM_CUDA_GRAPH_MEMORY]) {
        return usage(err, O("vllm_cuda_graph_memory") " goes with " O("use_vllm") " (" OV("loss", "grpo") "); for "
                     O("serve") " it is " O("cuda_graph_memory"));
    }
    if (o->packing) {
        /* TRL's DataCollatorForLanguageModeling with padding_free (trl/trainer/sft_trainer.py @ f2cd5771,
         * torch_call: the examples' input_ids concatenated into one row, position_ids restarting at 0
         * per example, no attention_mask); torchtune's PackedDataset the same: the step runs one row of
         * B x L tokens (layers/llm.c ra_emit reads how many sequences it holds) */
        const char *other = q->max_batch ? O("max_batch") : sweep ? O("sweep") : q->max_seq ? O("max_seq")
                          : q->given[VC_OPT_IMAGE] ? O("image") : o->tp > 1 ? O("tp") : o->pp > 1 ? O("pp") : o->ep > 1 ? O("ep")
                          : q->hf.loss == VC_LOSS_IMPL_DPO || q->hf.loss == VC_LOSS_IMPL_DPO_PRECOMPUTED ? OV("loss", "dpo")
                          : q->hf.loss == VC_LOSS_IMPL_ORPO ? OV("loss", "orpo") : q->hf.loss == VC_LOSS_IMPL_KTO ? OV("loss", "kto") : NULL;
        if (other)
            return usage(err, O("packing") " packs " O("batch") " sequences of " O("seq") " tokens into one row; with %s it is "
                         "not modelled", other);
        int64_t L = q->hf.seq > 0 ? q->hf.seq : VC_HF_DEFAULT_SEQ, T;
        if (L > (INT64_C(1) << 31) / o->batch)
            return usage(err, O("packing") ": " O("batch") " %lld x " O("seq") " %lld tokens in one row is more than 2^31",
                         (long long)o->batch, (long long)L);
        o->packing = o->batch;
        T = L * o->batch;
        q->hf.seq = T;
        o->batch = 1;
    }
    if (q->max_batch && !gpu) return usage(err, O("max_batch") " needs " O("gpu") " (a preset such as h100-80gb, or a size such as 24GiB)");
    if (q->plot && !sweep) return usage(err, O("plot") " needs " O("sweep") " (the batch sizes to draw)");
    if (q->plot && !strcmp(q->plot, "-")) return usage(err, O("plot") " writes an SVG file: give a file name, not '-'");
    if (q->given[VC_OPT_FORCE] && !q->plot)
        return usage(err, O("force") " lets " O("plot") " replace an existing file: it needs " O("plot"));
    if (counts && (q->trace || q->input || q->per_layer))
        return usage(err, "%s needs a model file: " O("params") " makes a counts-only estimate",
                     q->trace ? O("trace") : q->input ? O("input") : O("per_layer"));
    if (q->trace && o->grpo_vllm &&
        (o->parallel == VC_PARALLEL_ZERO3 || o->parallel == VC_PARALLEL_FSDP || o->parallel == VC_PARALLEL_FSDP2))
        return usage(err, O("trace") " with " O("use_vllm") " under " OV("parallel", "%s") " is not written: sync_weights' "
                     "gathers are not rows of the trace (the report's sync peak counts them)", vc_parallel_name(o->parallel));
    if (q->trace && (q->max_batch || q->format != VC_FORMAT_TABLE))
        return usage(err, O("trace") " prints one batch's timeline: it does not go with %s", q->max_batch ? O("max_batch") : O("format"));
    if (q->gen_given && o->mode != VC_MODE_GENERATE && !q->serve && q->hf.loss != VC_LOSS_IMPL_GRPO)
        return usage(err, O("prompt") ", " O("new_tokens") " and " O("cache") " go with " OV("mode", "generate") " (or " O("serve") ")");
    if (q->given[VC_OPT_NUM_BEAMS] && (o->mode != VC_MODE_GENERATE || q->serve))
        return usage(err, O("num_beams") " is generate()'s beam search: it goes with " OV("mode", "generate") "%s",
                     q->serve ? " (vLLM's serving is modelled without it)" : "");
    if (q->kvq_given && o->cache != VC_CACHE_QUANTIZED)
        return usage(err, O("kv_bits") ", " O("kv_group_size") " and " O("kv_residual_length") " go with " OV("cache", "quantized")
                     " (QuantizedCache's cache_config)");
    if (q->serve && o->cache == VC_CACHE_QUANTIZED)
        return usage(err, OV("cache", "quantized") " is transformers' QuantizedCache (" OV("mode", "generate") "): vLLM's cache is its "
                     "paged pool, sized in " O("kv_cache_dtype"));
    if (q->kv_dtype_given && !q->serve && o->mode == VC_MODE_GENERATE)
        return usage(err, O("kv_cache_dtype") ": transformers' generate() has no cache dtype (DynamicLayer and StaticLayer store keys "
                     "and values in key_states.dtype, the model's); it is vLLM's setting (" O("serve") "). For a smaller cache "
                     "in generate(): " OV("cache", "quantized"));
    if (q->serve_given && !q->serve)
        return usage(err, O("gpu_memory_utilization") ", " O("max_num_batched_tokens") ", " O("max_num_seqs") ", " O("block_size")
                     ", " O("kv_cache_dtype") ", " O("enforce_eager") " and " O("cuda_graph_memory") " go with " O("serve"));
    if (q->serve && !q->mode_given) o->mode = VC_MODE_INFER; /* vLLM serves: no training state */
    if (q->serve && (!gpu || counts || q->max_batch || sweep || q->trace || q->max_context || (o->mode == VC_MODE_TRAIN && q->mode_given)))
        return usage(err, O("serve") " sizes vLLM's KV cache on one " O("gpu") " for a model file: it does not go with %s",
                     !gpu ? "no " O("gpu") : counts ? O("params") : q->max_batch ? O("max_batch") : sweep ? O("sweep")
                     : q->trace ? O("trace") : q->max_context ? O("max_context") : OV("mode", "train"));
    /* vLLM serves LoRA adapters in slots (LoRAConfig's max_loras x max_lora_rank per adapted module, and
     * a LoRA warm-up in the profiling run): not what vramcalc's LoRA (a PEFT training adapter) counts */
    if (q->serve && (q->given[VC_OPT_LORA] || q->given[VC_OPT_PEFT] || q->qlora))
        return usage(err, "%s with " O("serve") ": vLLM's LoRA serving (max_loras x max_lora_rank adapter slots per module) "
                     "is not modelled; estimate the base model's serving without it",
                     q->qlora ? O("qlora") : q->given[VC_OPT_LORA] ? O("lora") : O("peft"));
    if (q->serve && (o->parallel != VC_PARALLEL_NONE || o->gpus != (o->tp > 1 ? o->tp : 1)))
        return usage(err, O("serve") " models one vLLM engine: tensor_parallel_size N is " OV("tp", "N") " " OV("gpus", "N") " ("
                     O("parallel") " and data-parallel GPUs are training layouts)");
    if (counts && o->mode == VC_MODE_GENERATE) return usage(err, OV("mode", "generate") " needs a model file, not " O("params"));
    if (q->max_context && (o->mode != VC_MODE_GENERATE || !gpu))
        return usage(err, O("max_context") " needs " OV("mode", "generate") " and " O("gpu") " (the longest prompt that fits the GPU)");
    if (q->max_context && (q->max_batch || sweep || q->trace))
        return usage(err, O("max_context") " searches the prompt length at one batch: it does not go with %s",
                     q->max_batch ? O("max_batch") : sweep ? O("sweep") : O("trace"));
    if (sweep && q->batch_given) return usage(err, "give either " O("batch") " or " O("sweep") ", not both");
    if (q->max_seq) {
        const char *other = counts ? O("params") : q->max_batch ? O("max_batch") : sweep ? O("sweep") : q->input ? O("input")
                          : q->given[VC_OPT_SEQ] ? O("seq") : q->max_context ? O("max_context") : q->trace ? O("trace")
                          : q->emit ? O("emit_model") : NULL;
        if (other)
            return usage(err, O("max_seq") " searches the sequence length of a config.json at one " O("batch") ": it does not go with %s", other);
        if (!gpu) return usage(err, O("max_seq") " needs " O("gpu") " (a preset such as h100-80gb, or a size such as 24GiB)");
    }
    if (sweep && q->trace) return usage(err, O("trace") " shows one batch: use " O("batch") ", not " O("sweep"));
    /* cuDNN's workspaces (src/engine/cudnn.c): a table's are exact at the batches it was measured at */
    if (q->cudnn_table && (q->given[VC_OPT_BOUND] || q->max_batch || sweep))
        return usage(err, O("cudnn_table") " gives the workspaces measured at its batches (exact: no interval): it does not go with %s",
                     q->given[VC_OPT_BOUND] ? O("bound") : q->max_batch ? O("max_batch") : O("sweep"));
    /* NCCL's buffers (src/engine/nccl.c): a multi-GPU training or inference layout's, or vLLM's tensor-parallel
     * group's (--serve --tp: src/engine/serve.c vllm_snapshot) */
    if ((q->given[VC_OPT_NCCL_TOPOLOGY] || q->given[VC_OPT_NCCL_CHANNELS] || q->given[VC_OPT_GPUS_PER_NODE] ||
         q->given[VC_OPT_NCCL_NVLS]) && o->gpus < 2)
        return usage(err, "%s sets NCCL's buffers of a multi-GPU layout: give " O("gpus") " N (2 or more)",
                     q->given[VC_OPT_NCCL_TOPOLOGY] ? O("nccl_topology") : q->given[VC_OPT_NCCL_CHANNELS] ? O("nccl_channels")
                     : q->given[VC_OPT_NCCL_NVLS] ? O("nccl_nvls") : O("gpus_per_node"));
    /* the CUDA context (src/engine/context.c): --context replaces the model that --cuda and --module-loading set */
    if (q->given[VC_OPT_CONTEXT] && (q->given[VC_OPT_CUDA] || q->given[VC_OPT_MODULE_LOADING]))
        return usage(err, O("context") " gives the CUDA context's bytes: it does not go with %s, which sets the model it replaces",
                     q->given[VC_OPT_CUDA] ? O("cuda") : O("module_loading"));
    if (o->module_loading == VC_MODULE_LOADING_LAZY && o->cuda_version < 1107) /* CUDA_MODULE_LOADING appeared in 11.7 */
        return usage(err, OV("module_loading", "lazy") " needs CUDA 11.7 or later (CUDA_MODULE_LOADING=LAZY appeared there): "
                     O("cuda") " is %d.%d", o->cuda_version / 100, o->cuda_version % 100);
    return check_applies(q, err);
}

/* --plot's file (issue 29): never the model file, not even with --force; an
 * existing file only with --force (the front end writes the chart after the
 * run). model: the model file, or NULL (counts only, standard input). */
static vc_status check_plot(const vc_request *q, const char *model, vc_error *err)
{
    esc_buf b;
    struct stat ps, ms;
    if (!q->plot || stat(q->plot, &ps)) return VC_OK;
    if (model && strcmp(model, "-") && !stat(model, &ms) && ps.st_dev == ms.st_dev && ps.st_ino == ms.st_ino)
        return usage(err, O("plot") " '%s' is the model file: the chart would replace it; give another file name", esc(&b, q->plot));
    if (!q->given[VC_OPT_FORCE])
        return usage(err, O("plot") " '%s' exists: give " O("force") " to replace it, or another file name", esc(&b, q->plot));
    return VC_OK;
}

/* A library error about a model built from a config.json names the option
 * that made it (its path is one of the emitted model's, which the user never
 * saw: issue 29); a vramcalc model file's paths are the user's own. */
static vc_status opt_err(const vc_request *q, const vc_model *m, const char *flag, vc_error *err, vc_status st)
{
    if (m && vc_model_generated_json(m) && err->path[0] && err->path[0] != VC_OPTION_MARK) {
        snprintf(err->path, sizeof err->path, "%s", flag);
        err->line = err->col = 0;
    }
    return lib_err(q, err, st);
}

/* Whether m has a mixture-of-experts layer (--moe-imbalance applies). */
static bool has_moe(const vc_model *m)
{
    const vc_kind *moe = vc_kind_find("SparseMoE");
    for (size_t i = 0; moe && i < m->ninst; i++)
        if (m->inst[i].kind == moe) return true;
    return false;
}

/* --recipe list: every preset, the options it sets, what it leaves out, its source. */
static char *recipe_list_text(int trl, size_t *len)
{
    char *t = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&t, &n);
    if (!f) return NULL;
    for (size_t i = 0; i < vc__recipe_count(); i++) {
        const vc_recipe_row *r = vc__recipe_at(i);
        fprintf(f, "%s%s\n  model   %s\n  source  %s", i ? "\n" : "", r->name, r->model, r->source);
        if (vc__recipe_follows_trl(r)) /* its values are the --trl release's */
            fprintf(f, " at tag v%d.%d.0", (trl ? trl : VC_TRL_DEFAULT) / 100, (trl ? trl : VC_TRL_DEFAULT) % 100);
        fprintf(f, "\n  sets   ");
        for (size_t k = 0; k < vc__recipe_npairs(r); k++) {
            const vc_option_info *info = vc_option_find(r->set[k].option);
            const char *value = vc__recipe_value(&r->set[k], trl, NULL); /* at the --trl release */
            if (!value) continue;
            fprintf(f, " --%s", info ? info->flag : r->set[k].option);
            if (info && info->arg) fprintf(f, " %s", value);
        }
        fprintf(f, "\n  not applied: %s\n", r->not_applied);
    }
    if (fclose(f)) {
        free(t);
        return NULL;
    }
    *len = n;
    return t;
}

/* --recipe NAME: the row's (option, value) pairs set as if given, for each
 * option the user did not set (q->told), whatever the order they came in;
 * resp->recipe_set records which. The pairs name no option whose value
 * vc_request_set strdup()s (test_recipe checks): q is a shallow copy. */
static vc_status apply_recipe(vc_request *q, vc_response *resp, vc_error *err)
{
    const vc_recipe_row *r = vc__recipe_at((size_t)q->recipe - 1);
    if (q->serve || q->counts)
        return usage(err, O("recipe") " %s is a training config for a config.json: not with %s", r->name,
                     q->serve ? O("serve") : O("params"));
    if (q->o.mode != VC_MODE_TRAIN)
        return usage(err, O("recipe") " %s is a training config: not with \x1fmode=%s\x1f", r->name, vc_mode_name(q->o.mode));
    const char *why = NULL;
    const int trl = q->trl ? q->trl : VC_TRL_DEFAULT;
    if (r->trl_step) vc_trl_value(trl, (vc_trl_what)(r->trl_step - 1), &why);
    if (why) return usage(err, O("trl") " %d.%d with " O("recipe") " %s: %s", trl / 100, trl % 100, r->name, why);
    resp->recipe = q->recipe;
    for (size_t k = 0; k < vc__recipe_npairs(r); k++) {
        const vc_option_info *info = vc_option_find(r->set[k].option);
        if (!info) return usage(err, O("recipe") " %s: no option '%s' (src/policy/recipe.c)", r->name, r->set[k].option);
        if (q->told[info - vc_option_at(0)]) continue; /* the user's own wins */
        if (info == vc_option_at(VC_OPT_BATCH) && (q->sweep || q->max_batch)) continue; /* they choose the batch */
        bool needed = true; /* the pair it goes with applied */
        for (size_t j = 0; r->set[k].needs && j < k; j++)
            if (!strcmp(r->set[j].option, r->set[k].needs)) needed = resp->recipe_set[j];
        const char *value = vc__recipe_value(&r->set[k], trl, &why); /* NULL: none at the --trl release */
        if (why && needed)
            return usage(err, O("trl") " %d.%d with " O("recipe") " %s: %s", trl / 100, trl % 100, r->name, why);
        if (!needed || !value) continue;
        vc_status st = vc_request_set(q, r->set[k].option, value, err);
        if (st) return st;
        resp->recipe_set[k] = 1;
    }
    return VC_OK;
}

/* The response text of a trace or an emitted model. */
static vc_status text_response(vc_response *resp, char *buf, size_t len, vc_error *err)
{
    resp->kind = VC_RESP_TEXT;
    resp->text = buf;
    resp->text_len = len;
    return buf ? VC_OK : nomem(err);
}

/* vc_serve's errors in the options that set TRL's engine (issue 26): vllm_beside builds vLLM's options itself, so
 * a refusal that names --serve's options (--gpu-memory-utilization, --serve, ...) names ones the user did not give.
 * Each option mark (util.h O / OV / OS) of the serve option is renamed to the GRPO option that sets it:
 * LLM(gpu_memory_utilization=vllm_gpu_memory_utilization, tensor_parallel_size=vllm_tensor_parallel_size),
 * the graphs vLLM subtracts (--vllm-cuda-graph-memory), the engine itself (--use-vllm). TRL's fixed settings
 * (max_num_batched_tokens=4096, max_num_seqs from the batch) are refused before vc_serve, in vllm_beside. */
static const struct {
    const char *serve, *grpo;
} vllm_opt_names[] = {
    {"serve", "use_vllm"},
    {"gpu_memory_utilization", "vllm_gpu_memory_utilization"},
    {"cuda_graph_memory", "vllm_cuda_graph_memory"},
    {"tp", "vllm_tensor_parallel_size"},
    {"gpus", "vllm_tensor_parallel_size"},
};

static void vllm_rename_marks(char *s, size_t n)
{
    char out[sizeof ((vc_error *)0)->msg];
    size_t w = 0;
    const char *p = s;
    while (*p && w + 1 < sizeof out) {
        const char *end = *p == '\x1f' ? strchr(p + 1, '\x1f') : NULL;
        if (!end) {
            out[w++] = *p++;
            continue;
        }
        /* a mark: "\x1f" ["-"] name ["=" value] "\x1f" */
        const char *name = p + 1 + (p[1] == '-');
        size_t len = strcspn(name, "=\x1f");
        const char *to = NULL;
        for (size_t i = 0; i < sizeof vllm_opt_names / sizeof *vllm_opt_names && !to; i++)
            if (strlen(vllm_opt_names[i].serve) == len && !strncmp(name, vllm_opt_names[i].serve, len)) to = vllm_opt_names[i].grpo;
        int k = to ? snprintf(out + w, sizeof out - w, "%.*s%s%.*s", (int)(name - p), p, to, (int)(end + 1 - (name + len)), name + len)
                   : snprintf(out + w, sizeof out - w, "%.*s", (int)(end + 1 - p), p);
        if (k < 0 || (size_t)k >= sizeof out - w) break; /* the message's own length bounds it: vc_error's */
        w += (size_t)k;
        p = end + 1;
    }
    out[w] = '\0';
    snprintf(s, n, "%s", out);
}

/* vLLM's start-up check (gpu_worker.py init_device): the card less what the trainer holds when the engine starts
 * (at_start: its CUDA context and weights, and the TP group's buffers `held`) against the engine's share. Where the
 * trainer alone fills the card, the model does not load before the engine is built: said so, with no free count. */
static vc_status vllm_start_check(const vc_request *q, const vc_response *resp, int64_t requested, int64_t held, vc_error *err)
{
    const vc_result *r = &resp->r;
    const int64_t at_start = r->memory.cuda_context + r->memory.weights + held;
    if (resp->gpu.capacity - at_start <= 0)
        return usage(err, O("use_vllm") ": the trainer's CUDA context and weights%s take %lld bytes, %s %s's %lld: "
                     "the trainer alone does not fit the card, before vLLM starts", held ? " with vLLM's tensor-parallel "
                     "group's NCCL and all-reduce buffers" : "", (long long)at_start,
                     at_start > resp->gpu.capacity ? "more than" : "all of", resp->gpu.name, (long long)resp->gpu.capacity);
    if (resp->gpu.capacity - at_start < requested)
        return usage(err, O("vllm_gpu_memory_utilization") " %g: vLLM asks for %lld bytes of the card, but only %lld are "
                     "free when it starts (the card less the trainer's CUDA context and weights%s): vLLM refuses to start",
                     q->vllm_util, (long long)requested, (long long)(resp->gpu.capacity - at_start),
                     held ? ", and its tensor-parallel group's NCCL and all-reduce buffers" : "");
    return VC_OK;
}

/* --use-vllm: TRL's colocated vLLM engine beside the GRPO step (huggingface/trl @ f2cd5771, the same lines in
 * v1.9.0 @ 35def3ee: trl/generation/vllm_generation.py VLLMGeneration._init_vllm builds LLM(model=model.name_or_path,
 * gpu_memory_utilization=vllm_gpu_memory_utilization, max_num_seqs = per_device_train_batch_size x
 * vllm_tensor_parallel_size (--vllm-tensor-parallel-size) x steps_per_generation, max_num_batched_tokens=4096,
 * enable_sleep_mode, no dtype: vLLM's auto, distributed_executor_backend="external_launcher": in this process, its
 * tensors from this process's caching allocator). Its pool is sized as --serve sizes one engine (src/engine/serve.c
 * vc_serve, read-only): the share of the card less the weights, the profiling run and the non-torch memory. Without
 * sleep mode its weights
 * and KV cache stay allocated through the training step; with it, _init_vllm and generate() end with
 * llm.sleep(level=2), which releases both. vLLM's own start-up check (gpu_worker.py init_device: "Free memory on
 * device ... is less than desired GPU memory utilization") is the card less what the trainer holds when the
 * engine starts (its CUDA context and weights, the reference copy): refused here likewise.
 * CUDA graphs: LLM(...) gets neither enforce_eager nor compilation_config (TRL's kwargs above, none in
 * GRPOConfig), so vLLM captures its default cudagraph_mode's graphs (serve.c vllm_graphs: the count) at start-up,
 * after the pool is sized; vllm-project/vllm @ 9aaf83ef (TRL allows 0.17.0 ... 0.25.1, import_utils.py
 * is_vllm_available) vllm/v1/worker/gpu_worker.py compile_or_warm_up_model calls capture_model outside the
 * CuMemAllocator pools that sleep releases (load_model's tag "weights", initialize_kv_cache's "kv_cache"), so the
 * graph pool stays allocated in both modes. Its bytes are measured on the GPU (determine_available_memory subtracts
 * that measure from the pool, by default since vLLM v0.21.0: VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, opt-in in
 * 0.17 to 0.20): vramcalc's estimate of that measure (src/engine/serve_graphs.c), as --serve takes it off, or
 * --vllm-cuda-graph-memory's figure (given to vc_serve, which sizes the pool with it), is taken off the KV cache and
 * counted beside. The V2 model runner subtracts none yet captures them (serve.c vllm_graphs): counted beside only.
 * The step's timeline gains the two phases outside it (TRL's _generate_single_turn, before the step's forward; in
 * --trace as rows, src/engine/grpo.c vc__grpo_trace_head / vc__grpo_trace_tail):
 *  - sync (sync_weights, every new global step): under sleep mode wake_up(tags=["weights"]) first, so vLLM's
 *    weights (and graphs) beside the trainer's resident state (vc__grpo_phases: r->grpo.resident), its KV cache
 *    too without sleep mode; then per parameter load_weights([(name, param.data)]): vLLM's weight loaders
 *    (vllm/model_executor/layers/linear.py weight_loader_v2 -> parameter.py load_qkv_weight /
 *    load_merged_column_weight: narrow then copy_; weight_utils.py default_weight_loader: param.data.copy_) copy
 *    in place, a dtype change inside copy_'s CUDA kernel: nothing allocated (gather_params is a no-op on one GPU).
 *    Over LoRA, merge_adapter / unmerge_adapter around it: r->grpo.sync_temp (src/engine/grpo.c merge_temp);
 *  - vllm (generate): wake_up(tags=["kv_cache"]) under sleep mode, so vLLM's weights, KV cache and graphs beside
 *    the resident state; without sleep mode that is the training step's own state with vLLM beside, below its peak.
 * vLLM's forward activations during generate() (inside its share, at most its profiling run's) are not counted, nor
 * under sleep mode generate()'s collective_rpc("reload_weights") before the KV cache wakes (vllm @9aaf83ef
 * gpu_model_runner.py reload_weights -> model_loader/reload/layerwise.py: each module's parameters materialized on
 * the GPU, loaded from the checkpoint, copied into its kernel tensors: one module's bytes at a time, below the
 * generation phase wherever its KV cache exceeds the largest module). */
static vc_status vllm_beside(const vc_request *q, const vc_model *m, const vc_options *o, vc_response *resp, vc_error *err)
{
    vc_result *r = &resp->r;
    vc_options v = *o;
    v.mode = VC_MODE_INFER;
    v.batch = 1;
    v.accumulate = 1;
    v.grpo_vllm = 0;
    v.parallel = VC_PARALLEL_NONE; /* the engine is vLLM's, not the trainer's DDP model */
    vc_options d; /* nor its FSDP wrapping (--fsdp-*: fully_shard's and FSDP1's, the trainer's only) */
    vc_options_init(&d);
    v.fsdp_param_dtype = d.fsdp_param_dtype;
    v.fsdp_reduce_dtype = d.fsdp_reduce_dtype;
    v.fsdp_reshard = d.fsdp_reshard;
    v.fsdp_replicate = d.fsdp_replicate;
    v.fsdp_use_orig_params = d.fsdp_use_orig_params;
    v.tp = v.gpus = q->vllm_tp;    /* LLM(tensor_parallel_size=vllm_tensor_parallel_size): its group's ranks */
    v.pp = v.ep = 1;
    v.enforce_eager = 0;       /* TRL passes none */
    v.cuda_graph_memory = VC_CUDA_GRAPH_MEMORY_VLLM_DEFAULT; /* vLLM's default: the estimate, where it profiles them;
                                                              * a measure given: below, once the model is known */
    v.precision = vc_serve_auto_precision(m, &resp->gpu);
    vc_serve_options so;
    vc_serve_options_init(&so);
    so.gpu_memory_utilization = q->vllm_util;
    so.max_num_batched_tokens = 4096;
    /* max_num_seqs = per_device_train_batch_size x vllm_tensor_parallel_size x steps_per_generation (grpo_trainer.py):
     * each rank of a TP group generates the group's prompts (generate(): all_gather_object over tp_group) */
    if (__builtin_mul_overflow(o->batch * o->accumulate, q->vllm_tp, &so.max_num_seqs) || so.max_num_seqs > VC_MAX_DIM_SIZE)
        return usage(err, O("vllm_tensor_parallel_size") ": the engine's max_num_seqs passes 2^40");
    /* vllm/config/scheduler.py SchedulerConfig (serve.c vc_serve): max_num_batched_tokens < max_num_seqs is a
     * ValueError; TRL fixes the tokens at 4096, so the batch is what the user sets */
    if (so.max_num_seqs > so.max_num_batched_tokens)
        return usage(err, O("batch") " %lld x " O("accumulate") " %lld x " O("vllm_tensor_parallel_size") " %lld = %lld is vLLM's "
                     "max_num_seqs (TRL: per_device_train_batch_size x steps_per_generation x vllm_tensor_parallel_size), "
                     "more than TRL's max_num_batched_tokens=4096: vLLM refuses to start (SchedulerConfig: "
                     "max_num_batched_tokens must be greater than or equal to max_num_seqs)", (long long)o->batch,
                     (long long)o->accumulate, (long long)q->vllm_tp, (long long)so.max_num_seqs);
    /* the trainer alone, and the start-up check where vLLM's group holds nothing before it (tp 1): before the engine
     * is sized, as vLLM checks before it loads (requested: serve.c vc_serve's floor(total x utilization)) */
    vc_status st = vllm_start_check(q, resp, 0, 0, err);
    if (!st && q->vllm_tp == 1)
        st = vllm_start_check(q, resp, (int64_t)floor((double)resp->gpu.total * q->vllm_util), 0, err);
    if (st) return st;
    vc_serve_result sr;
    /* LLM(model=model.name_or_path): vLLM loads the base checkpoint, without the PEFT model's adapters (its
     * sync_weights pushes the merged base weights under their base names) */
    vc_model *base = NULL;
    if (q->vllm_tp > 1) {
        /* a tensor-parallel engine: one rank's share of the checkpoint as vLLM splits it (src/hf/hf_tp.c), loaded from
         * the config without the trainer's loss (vLLM runs the model; hf.c refuses the training loss grpo under a split)
         * and without the adapters */
        vc_hf_options h = q->hf;
        h.loss = VC_LOSS_IMPL_HF;
        vc_hf_release rel = {q->transformers, !q->given[VC_OPT_EXPERTS]};
        st = vc__model_load_file_split(q->model, &h, &rel, q->vllm_tp, 0, 1, vc__vllm_mxfp4_align(&resp->gpu), &base, err);
        if (st && err && !strcmp(err->path, O("tp"))) /* the split's refusal is of this option's ranks */
            snprintf(err->path, sizeof err->path, "%s", O("vllm_tensor_parallel_size"));
    } else if (vc__peft_on(&m->lora) || m->lora.modules_to_save[0]) {
        vc_lora none;
        vc_lora_init(&none);
        none.r = 0;
        if (!(st = vc__model_twin(m, q->hf.seq, &base, err))) st = vc_model_set_lora(base, &none, err);
    }
    /* --vllm-cuda-graph-memory: vLLM's measure, taken off the pool by vc_serve where vLLM subtracts its measure (as
     * --serve's --cuda-graph-memory), so that the pool is sized and refused once, with the figure given; where vLLM
     * subtracts none (the V2 model runner, not CUDA) it is counted beside the pool only (below) */
    const vc_model *eng = base ? base : m;
    if (!st && q->vllm_graph_mem >= 0 && vc__serve_graphs_why(eng, &v, &resp->gpu) == VC_SERVE_GRAPHS_PROFILED)
        v.cuda_graph_memory = q->vllm_graph_mem;
    if (!st && (st = vc_serve(eng, &v, &so, &resp->gpu, &sr, err)) && err) {
        /* the refusal in the options that set the engine (vllm_rename_marks); a model with learned positions past
         * which the profiling run's dummy requests reach (serve.c vc__vllm_min_num_seqs: cdiv(4096, positions)
         * needed) is refused in the batch that sets max_num_seqs */
        if (!strcmp(err->path, O("max_num_seqs"))) {
            const long long n = (long long)vc__vllm_min_num_seqs(eng, so.max_num_batched_tokens);
            usage(err, O("batch") " %lld x " O("accumulate") " %lld x " O("vllm_tensor_parallel_size") " %lld = %lld is "
                  "vLLM's max_num_seqs (TRL: per_device_train_batch_size x steps_per_generation x "
                  "vllm_tensor_parallel_size): its profiling run splits TRL's max_num_batched_tokens=4096 into dummy "
                  "requests of %lld tokens, past the model's positions, and vramcalc builds each as one sequence: the "
                  "product needs to be %lld or more", (long long)o->batch, (long long)o->accumulate, (long long)q->vllm_tp,
                  (long long)so.max_num_seqs,
                  (long long)((so.max_num_batched_tokens + so.max_num_seqs - 1) / so.max_num_seqs), n);
        } else {
            vllm_rename_marks(err->path, sizeof err->path);
            vllm_rename_marks(err->msg, sizeof err->msg);
        }
    }
    vc_model_free(base);
    if (st) return st;
    /* its tensor-parallel group (serve.c vllm_snapshot: init_worker_distributed_environment before the snapshot): the
     * NCCL communicator, the symmetric-memory and custom all-reduce buffers, outside the caching allocator but the
     * custom all-reduce's rank_data (custom_all_reduce.py: torch.empty(8 MiB)); NCCL's NVLS buffers at the
     * profiling run's first all-reduce (non_torch_nccl), and the communicator torch.distributed makes at the profiling
     * run's logits all-gather (non_torch_logits_nccl, src/engine/serve_nccl.c). 0 at tp 1 */
    const int64_t held = sr.snapshot_nccl + sr.snapshot_custom_ar + sr.snapshot_symm_mem;
    const int64_t rank_data = sr.snapshot_custom_ar > 0 ? INT64_C(8) << 20 : 0;
    const int64_t comm = held + sr.non_torch_nccl + sr.non_torch_logits_nccl;
    if ((st = vllm_start_check(q, resp, sr.requested, held, err))) return st;
    /* its graphs: vc_serve took vramcalc's estimate, or the measure given, off the pool where vLLM subtracts its
     * measure (serve.c: vLLM's default, VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 since v0.21.0). The V2 model runner
     * subtracts none but captures them after the pool is sized (serve.c vllm_graphs: GPUModelRunner.capture_model,
     * vllm/v1/worker/gpu/model_runner.py @ 0036d38d): the estimate, or the measure given, beside the pool. Not CUDA:
     * the measure given only (vramcalc does not follow ROCm's capture) */
    const int64_t gr = q->vllm_graph_mem >= 0                         ? q->vllm_graph_mem
                       : sr.graphs_why == VC_SERVE_GRAPHS_V2_RUNNER ? sr.graphs_estimate
                                                                    : sr.graphs_subtracted;
    const int64_t w = sr.weights, kv = sr.kv_cache;
    const int64_t g = gr + rank_data; /* allocated from start-up on, sleep mode or not: its graphs and rank_data */
    r->grpo.vllm_requested = sr.requested;
    r->grpo.vllm_weights = w;
    r->grpo.vllm_kv_cache = kv;
    r->grpo.vllm_graphs = sr.graphs_piecewise + sr.graphs_full;
    r->grpo.vllm_graph_memory = gr;
    r->grpo.vllm_graphs_off_pool = gr > 0 && sr.graphs_profiled;
    r->grpo.vllm_tp = q->vllm_tp;
    r->grpo.vllm_comm = comm;
    r->grpo.vllm_comm_allocated = rank_data;
    const bool sleep = q->vllm_sleep;
    int64_t wg, all, beside, sync, gen, peak, res, old_res = r->memory.reserved;
    if (__builtin_add_overflow(w, g, &wg) || __builtin_add_overflow(wg, kv, &all) ||
        __builtin_add_overflow(sleep ? 0 : w + kv, g, &beside) ||
        __builtin_add_overflow(r->grpo.resident, sleep ? wg : all, &sync) ||
        __builtin_add_overflow(sync, r->grpo.sync_temp, &sync) ||
        __builtin_add_overflow(r->grpo.resident, all, &gen) ||
        __builtin_add_overflow(r->memory.peak_allocated, beside, &peak) ||
        __builtin_add_overflow(r->memory.reserved, beside, &res))
        return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "total memory exceeds 2^63 bytes");
    r->grpo.vllm_beside = beside;
    r->grpo.sync_peak = sync;
    r->grpo.vllm_peak = gen;
    /* the training step with vLLM beside it */
    r->memory.peak_allocated = peak;
    r->peak.weights += sleep ? 0 : w;
    r->peak.activations += (sleep ? 0 : kv) + g; /* its KV cache and graph pool */
    /* a phase outside the step above it sets the peak; its reserve: the trainer's cache (TRL's empty_cache() before
     * each wake_up under sleep mode) at least that phase's bytes */
    const bool by_gen = gen > peak && gen >= sync;
    if (sync > peak || by_gen) {
        vc_peak *pk = &r->peak;
        const int64_t grads = r->grpo.resident_grads; /* resident's (vc__grpo_phases) */
        r->memory.peak_allocated = by_gen ? gen : sync;
        pk->phase = by_gen ? VC_PHASE_VLLM : VC_PHASE_SYNC;
        pk->weights = r->memory.weights + w + (by_gen ? 0 : r->grpo.gathered); /* zero3's, fsdp's gathered copies */
        pk->gradients = grads;
        pk->optimizer_states = r->memory.optimizer_states;
        /* the buffered batch (the rest of the resident state), vLLM's KV cache when allocated, its graphs */
        pk->activations = r->grpo.resident - r->memory.weights - grads - r->memory.optimizer_states - r->memory.workspace +
                          (by_gen || !sleep ? kv : 0) + g;
        pk->temporaries = by_gen ? 0 : r->grpo.sync_temp - r->grpo.gathered;
        pk->workspace = r->memory.workspace; /* the step's cuBLAS workspace, kept (vc__grpo_phases) */
        pk->layer[0] = 0;
        snprintf(pk->kind, sizeof pk->kind, "%s", by_gen ? "LLM.generate" : r->grpo.sync_temp > r->grpo.gathered ? "merge_adapter"
                 : r->grpo.gathered ? (o->parallel == VC_PARALLEL_FSDP ? "summon_full_params" : "GatheredParameters") : "load_weights");
    }
    if (sync > res) res = sync;
    if (gen > res) res = gen;
    r->memory.reserved = res;
    if (__builtin_add_overflow(r->memory.total, res - old_res + comm - rank_data, &r->memory.total))
        return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "total memory exceeds 2^63 bytes");
    return VC_OK;
}

/* --max-seq: the search, then the model at the answer (at 1 token when none
 * fits) so that the report is the estimate there: the search's model of the
 * answer in *m (the loaded one moved to *owner, whose names it borrows) with
 * its estimator *se (made at the options o has now), else m loaded again. */
static vc_status find_max_seq(vc_request *q, vc_response *resp, vc_model **mp, vc_model **owner, vc_estimator **se,
                              vc_error *err)
{
    vc_model *m = *mp;
    esc_buf b;
    if (!vc_model_generated_json(m))
        return usage(err, "%s: " O("max_seq") " applies to a Hugging Face config.json (the sequence length is its load option, "
                     O("seq") "); this is a vramcalc model file: use " O("max_batch") ", or " O("input") " for another length",
                     esc(&b, q->model));
    int limited = 0;
    vc_model *at = NULL;
    vc_status st = vc__model_max_seq_at(m, &resp->o, resp->gpu.capacity, &resp->rep.max_seq, &limited, NULL, &at, se, err);
    if (st) return lib_err(q, err, st);
    resp->rep.max_seq_limited = limited;
    if (at) {
        *owner = m;
        *mp = at;
        return VC_OK;
    }
    if ((st = vc_model_set_seq(m, resp->rep.max_seq > 0 ? resp->rep.max_seq : 1, err))) return lib_err(q, err, st);
    return VC_OK;
}

/* A sweep's rows: every one estimated before anything is rendered. */
static vc_status run_sweep(vc_request *q, vc_response *resp, vc_estimator *e, vc_error *err)
{
    esc_buf b;
    resp->kind = VC_RESP_SWEEP;
    resp->rows = calloc(resp->nsweep, sizeof *resp->rows);
    if (!resp->rows) return nomem(err);
    if (resp->have_gpu && (resp->max_batch || resp->plot)) {
        vc_status st = vc_estimator_max_batch(e, resp->gpu.capacity, &resp->plot_max, NULL, err);
        if (st) return lib_err(q, err, st);
    }
    resp->rep.max_batch = resp->max_batch ? resp->plot_max : -1;
    for (size_t i = 0; i < resp->nsweep; i++) {
        vc__estimator_expect(e, resp->sweep + i, resp->nsweep - i); /* src/engine/replay.c vc__plan_expect_replays */
        if (vc_estimator_run(e, resp->sweep[i], &resp->rows[i], err)) { /* the file, then the batch */
            char msg[sizeof err->file + sizeof err->path + sizeof err->msg + 64], m[sizeof err->msg];
            vc__error_format_marked(err, msg, sizeof msg);
            vc_status code = err->code;
            esc(&b, q->model && !q->counts ? q->model : "");
            snprintf(m, sizeof m, "%s", msg);
            usage(err, "%s%sbatch %" PRId64 ": %s", b.s, b.s[0] ? ": " : "", resp->sweep[i], m);
            err->code = code;
            return code;
        }
    }
    return VC_OK;
}

vc_status vc_request_run(const vc_request *given, vc_response **out, vc_error *err)
{
    vc_error_clear(err); /* an out-parameter: cleared first (vramcalc.h) */
    vc_request copy = *given; /* the defaults and rules apply to a copy: a request may run again */
    vc_request *q = &copy;
    esc_buf b;
    vc_status st;
    *out = NULL;
    vc_response *resp = calloc(1, sizeof *resp);
    if (!resp) return nomem(err);
    vc_options *o = &resp->o;
    resp->format = q->format;
    resp->plot_max = -1;
    vc_model *m = NULL;
    vc_estimator *e = NULL;
    vc_model *m_owner = NULL;  /* --max-seq: the model loaded, when m is the search's model of the answer (it borrows its names) */
    vc_estimator *seq_e = NULL; /* ... and the search's estimator of m, made at the options seq_o */
    vc_options seq_o;
    if (q->columns && (q->format != VC_FORMAT_CSV || q->list_gpus || q->serve)) {
        st = usage(err, O("columns") " chooses the estimate's CSV columns: it needs " OS("format", "csv") "%s",
                   q->list_gpus ? ", not " O("list_gpus") : q->serve ? ", not " O("serve") : "");
        goto fail;
    }
    if (q->list_gpus) {
        resp->kind = VC_RESP_LIST_GPUS;
        *out = resp;
        return VC_OK;
    }
    if (q->recipe < 0) { /* --recipe list */
        size_t n = 0;
        char *t = recipe_list_text(q->trl, &n);
        if ((st = text_response(resp, t, n, err))) goto fail;
        *out = resp;
        return VC_OK;
    }
    if (q->recipe > 0 && (st = apply_recipe(q, resp, err))) goto fail;
    if (q->given[VC_OPT_TRL] && !(q->recipe > 0 && vc__recipe_follows_trl(vc__recipe_at((size_t)q->recipe - 1)))) {
        st = q->recipe > 0 ? usage(err, O("trl") " is the TRL release a trl: " O("recipe") " follows: %s follows none",
                                   vc__recipe_at((size_t)q->recipe - 1)->name)
                           : usage(err, O("trl") " is the TRL release a trl: " O("recipe") " follows (trl:sft, trl:grpo): "
                                        "give one, or leave " O("trl") " out");
        goto fail;
    }
    if (!q->impl_given) q->o.optim_impl = vc_optim_default_impl_at(q->o.optim, q->o.torch_version); /* forloop for adafactor */
    if (!q->given[VC_OPT_EXPERTS]) /* the --transformers release's experts */
        q->hf.experts = (vc_experts_impl)vc_transformers_value(q->transformers, VC_TF_EXPERTS);
    if ((st = check_request(q, err))) goto fail;
    *o = q->o;
    if (q->cudnn_table) { /* strict: a bad file names itself and the JSON path */
        if ((st = vc_cudnn_table_load(q->cudnn_table, &resp->cudnn_table, err))) goto fail;
        o->cudnn_table = resp->cudnn_table;
        const char *tp = vc_cudnn_table_precision(resp->cudnn_table);
        if (strcmp(tp, vc_precision_name(o->precision))) {
            st = usage(err, O("cudnn_table") " %s was measured at precision %s: the estimate is " O("precision") " %s",
                       esc(&b, q->cudnn_table), tp, vc_precision_name(o->precision));
            goto fail;
        }
    }
    resp->so = q->so;
    resp->per_layer = q->per_layer;
    resp->counts = q->counts;
    resp->max_batch = q->max_batch;
    resp->max_seq = q->max_seq;
    resp->max_context = q->max_context;
    if (q->gpu) {
        vc_error ge;
        memset(&ge, 0, sizeof ge);
        if (vc_gpu_parse(q->gpu, &resp->gpu, &ge)) {
            st = usage(err, O("gpu") ": %s", ge.msg);
            goto fail;
        }
        resp->have_gpu = true;
        if (resp->gpu.preset && strcmp(resp->gpu.preset->vendor, "NVIDIA") && (q->given[VC_OPT_CUDA] || q->given[VC_OPT_MODULE_LOADING])) {
            st = usage(err, "%s sets the CUDA context model: " O("gpu") " %s is an %s GPU, whose context is not modelled (a 500 MiB "
                       "estimate; " O("context") " sets it)", q->given[VC_OPT_CUDA] ? O("cuda") : O("module_loading"),
                       resp->gpu.preset->name, resp->gpu.preset->vendor);
            goto fail;
        }
        if (resp->gpu.preset && resp->gpu.preset->hopper) o->hopper = 1;
        o->device = resp->gpu.preset; /* its multiprocessors size kernels' scratch (src/engine/scratch.c) */
    }
    if (q->sweep && (st = parse_sweep(q->sweep, &resp->sweep, &resp->nsweep, err))) goto fail;
    if ((q->plot && !(resp->plot = strdup(q->plot))) || (q->columns && !(resp->columns = strdup(q->columns)))) {
        st = nomem(err);
        goto fail;
    }
    resp->rep = (vc_report){"", NULL, o, &resp->r, q->per_layer, q->counts, resp->have_gpu ? &resp->gpu : NULL, -1, {0}, -1};
    resp->hf = q->hf; /* as set now; again when the run is done */
    resp->lora = q->lora;
    resp->rep.hf = &resp->hf;
    resp->rep.lora = &resp->lora;
    resp->rep.transformers = q->transformers;
    resp->rep.trl = q->trl;
    if (resp->recipe) {
        resp->rep.recipe = vc__recipe_at((size_t)resp->recipe - 1);
        resp->rep.recipe_set = resp->recipe_set;
    }
    resp->rep.max_seq = -1;
    if (q->columns) {
        resp->rep.columns = resp->columns;
        if ((st = vc__check_columns(resp, err))) goto fail;
    }
    if (q->counts) {
        if (q->nmodels) {
            st = usage(err, "give either a model file or " O("params") ", not both");
            goto fail;
        }
        if ((st = check_plot(q, NULL, err))) goto fail;
    } else {
        if (!q->nmodels) {
            st = usage(err, "no model file (see vramcalc --help)");
            goto fail;
        }
        if (q->nmodels > 1) {
            st = usage(err, "unexpected argument '%s' (one model file at a time)", esc(&b, q->extra));
            goto fail;
        }
        if ((st = check_plot(q, q->model, err))) goto fail; /* an output never replaces the input (issue 29) */
        vc_escape_text(resp->file, sizeof resp->file, q->model); /* the reports show it */
        resp->rep.file = resp->file;
        if (q->json_arena) {
            cJSON_Hooks hooks = {json_alloc, json_free};
            cJSON_InitHooks(&hooks);
        }
        /* a config.json is loaded as one tensor-parallel rank's share (src/hf/hf_tp.c: vLLM's under --serve), as the
         * release it runs as: its MoE default for the families whose experts it governs
         * (vc_hf_build) when the experts option is not given */
        /* whisper's generate(): its forced decoder prompt and length when --prompt / --new-tokens are not given
         * (src/hf/hf_whisper.c), the config loaded at that prompt (check_request) */
        if (o->mode == VC_MODE_GENERATE && !q->serve &&
            (st = vc__whisper_gen_defaults(q->model, q->prompt_given, &o->prompt, q->given[VC_OPT_NEW_TOKENS], &o->new_tokens, err))) {
            lib_err(q, err, st);
            goto fail;
        }
        if (q->serve && (st = vc__whisper_serve_defaults(q->model, q->prompt_given, &o->prompt, q->given[VC_OPT_NEW_TOKENS],
                                                         &o->new_tokens, err))) { /* src/hf/hf_whisper.c */
            lib_err(q, err, st);
            goto fail;
        }
        if (o->mode == VC_MODE_GENERATE) q->hf.seq = o->prompt;
        if (q->serve && resp->have_gpu) { /* DeepSeek-V4: vLLM's engine from the config alone (src/engine/serve_dsv4.c) */
            bool served;
            const unsigned refuse = (q->given[VC_OPT_BLOCK_SIZE] ? VC_DSV4_BLOCK_SIZE : 0u) |
                                    (q->prec_given ? VC_DSV4_PRECISION : 0u) | (q->given[VC_OPT_WEIGHTS] ? VC_DSV4_WEIGHTS : 0u) |
                                    (q->given[VC_OPT_MOE_IMBALANCE] ? VC_DSV4_MOE_IMBALANCE : 0u) |
                                    (q->given[VC_OPT_EXPERTS] ? VC_DSV4_EXPERTS : 0u) |
                                    (q->given[VC_OPT_TRANSFORMERS] ? VC_DSV4_TRANSFORMERS : 0u) |
                                    (q->given[VC_OPT_TORCH] ? VC_DSV4_TORCH : 0u);
            st = vc__serve_dsv4_file(q->model, o, &resp->so, &resp->gpu, refuse, &resp->sr, &served, resp->wdesc,
                                     sizeof resp->wdesc, err);
            if (st) {
                lib_err(q, err, st);
                goto fail;
            }
            if (served) {
                o->precision = VC_PREC_BF16;
                resp->rep.weights = resp->wdesc;
                resp->kind = VC_RESP_SERVE;
                goto done;
            }
        }
        vc_hf_release rel = {q->transformers, !q->given[VC_OPT_EXPERTS], o->mode == VC_MODE_GENERATE && !q->serve, q->serve};
        st = vc__model_load_file_split(q->model, &q->hf, &rel, o->tp, o->sp, q->serve, /* --serve: vLLM's split */
                                       q->serve && resp->have_gpu ? vc__vllm_mxfp4_align(&resp->gpu) : 0, &m, err);
        if (q->json_arena) {
            cJSON_InitHooks(NULL); /* the loader has freed its JSON tree: drop the arena with it */
            json_arena_release();
        }
        if (st) {
            /* generate loads a config.json at the prompt's length (check_request): its limits are --prompt's
             * (an encoder-decoder's decoder too: it is built at the prompt's length, --target-seq not given;
             * --loss grpo: at prompt + new tokens, --prompt's too) */
            if ((o->mode == VC_MODE_GENERATE || q->hf.loss == VC_LOSS_IMPL_GRPO) &&
                (!strcmp(err->path, O("seq")) || !strcmp(err->path, O("target_seq"))))
                snprintf(err->path, sizeof err->path, O("prompt"));
            lib_err(q, err, st);
            goto fail;
        }
        if (strcmp(m->file, q->model)) { /* a directory or a Hugging Face id: the reports name the config read (resolve.c) */
            char src[sizeof resp->file];
            vc_escape_text(src, sizeof src, m->file);
            size_t l = strlen(resp->file);
            snprintf(resp->file + l, sizeof resp->file - l, " (%s)", src);
        }
        const vc_hf_options *hf = &q->hf;
        if ((q->hf_given || q->emit) && !vc_model_generated_json(m)) {
            st = usage(err, "%s applies to a Hugging Face config.json; this is a vramcalc model file%s",
                       q->emit ? O("emit_model") : resp->recipe ? O("recipe") : o->packing ? O("packing") : hf->seq ? O("seq") : hf->checkpoint ? O("grad_ckpt") : q->loss_given ? O("loss")
                       : q->given[VC_OPT_EXPERTS] ? O("experts_implementation")
                       : q->given[VC_OPT_TRANSFORMERS] ? O("transformers") : q->given[VC_OPT_IMAGE] ? O("image")
                       : q->given[VC_OPT_IMAGES] ? O("images") : q->given[VC_OPT_TARGET_SEQ] ? O("target_seq")
                       : hf->liger ? O("liger") : O("moe_imbalance"),
                       resp->recipe || o->packing ? "" : hf->seq ? " (use " O("input") ")" : hf->checkpoint ? " (add \"checkpoint\": true to its layers)"
                       : q->loss_given ? " (it names its loss in its \"loss\" key: \"liger_fused_linear_ce\")" : "");
            goto fail;
        }
        /* --grad-ckpt-kind: the checkpointed layers' torch.utils.checkpoint. Not told (nor by a --recipe): what the library in
         * use does -- TRL's trainers (--loss grpo, chunked-nll, nll) pass use_reentrant=False (docs/llm.md), torchtune
         * (--loss chunked, --act-offload, --grad-ckpt-every) and torchtitan (--grad-ckpt-ops) wrap with
         * checkpoint_wrapper's NO_REENTRANT; otherwise transformers' gradient_checkpointing_enable() at the
         * --transformers release (release.c VC_TF_CKPT_REENTRANT); a model file's "checkpoint" is non-reentrant */
        if (q->given[VC_OPT_GRAD_CKPT_KIND] && m->nregions == 0) {
            st = usage(err, O("grad_ckpt_kind") " says how the checkpointed layers run: the model has none (add %s)",
                       vc_model_generated_json(m) ? O("grad_ckpt") : "\"checkpoint\": true to its layers");
            goto fail;
        }
        if (!q->given[VC_OPT_GRAD_CKPT_KIND])
            o->ckpt_reentrant = vc_model_generated_json(m) && q->hf.loss != VC_LOSS_IMPL_GRPO && q->hf.loss != VC_LOSS_IMPL_CHUNKED_NLL &&
                                q->hf.loss != VC_LOSS_IMPL_NLL && q->hf.loss != VC_LOSS_IMPL_CHUNKED && !o->act_offload && !o->ckpt_ops && q->hf.ckpt_every <= 1 &&
                                vc_transformers_value(q->transformers, VC_TF_CKPT_REENTRANT);
        if (q->input && vc_model_generated_json(m)) { /* a config's input is its token ids: [seq] */
            st = usage(err, O("input") " sets a vramcalc model file's input shape; a config.json's input is its tokens: use %s",
                       o->mode == VC_MODE_GENERATE || q->serve ? O("prompt") : O("seq"));
            goto fail;
        }
        if ((q->given[VC_OPT_MOE_IMBALANCE] || q->given[VC_OPT_EXPERTS]) && !has_moe(m)) {
            st = usage(err, "%s sets how a mixture-of-experts model %s: %s has no SparseMoE layer",
                       q->given[VC_OPT_MOE_IMBALANCE] ? O("moe_imbalance") : O("experts_implementation"),
                       q->given[VC_OPT_MOE_IMBALANCE] ? "routes its tokens" : "runs its experts", esc(&b, q->model));
            goto fail;
        }
        /* grouped_mm (transformers 5) computes the routed tokens as one [tokens x top-k, width] grouped
         * matmul whatever the routing: the busiest expert's share changes no allocation
         * (layers/llm.c, the MoE block); it does under the per-expert loop and the expert-parallel
         * dispatcher's per-rank buffers */
        if (q->given[VC_OPT_MOE_IMBALANCE] && hf->experts == VC_EXPERTS_GROUPED_MM && o->ep <= 1) {
            st = usage(err, O("moe_imbalance") " changes no allocation under " O("experts_implementation=grouped_mm")
                       " (transformers 5's default: one grouped matmul over every routed token): it applies with "
                       O("experts_implementation=per_expert") " or " O("ep"));
            goto fail;
        }
        if (q->emit) {
            const char *j = vc_model_generated_json(m);
            size_t n = strlen(j);
            char *t = malloc(n + 2);
            if (t) {
                memcpy(t, j, n);
                t[n] = '\n';
                t[n + 1] = '\0';
            }
            if ((st = text_response(resp, t, n + 1, err))) goto fail;
            goto done;
        }
        /* Qwen2.5-VL's vision tower as transformers runs it (modeling_qwen2_5_vl.py @ efa7189c, its
         * sdpa path): the batch's image patches are one sequence under a [1, n, n] block mask, so its
         * attention grows with the batch squared, which a per-sample plan cannot hold (measured:
         * 21.8% low at batch 2, measured.json's known_gap); refused rather than under-estimated.
         * Gemma 3's SigLIP runs the images as a batch dimension: any batch (vc_hf_images_one_sequence) */
        if (q->given[VC_OPT_IMAGE] && m->images_one_sequence && (o->batch > 1 || q->max_batch || q->sweep)) {
            st = usage(err, O("image") " is modelled at " O("batch") " 1 for this vision tower: transformers runs a batch's "
                       "image patches as one sequence through its attention (Qwen2.5-VL's, whose memory grows with the batch "
                       "squared; Qwen3-VL's and Qwen3.5's, one image after another); not %s", q->sweep ? O("sweep") : q->max_batch ? O("max_batch") : O("batch") " above 1");
            goto fail;
        }
        vc_lora *lora = &q->lora;
        if (lora->r > 0 || !vc_peft_row_get(lora->method)->lora) {
            const char *dflt = vc__model_peft_targets(m, lora->method);
            if (!lora->targets[0]) memcpy(lora->targets, dflt, strlen(dflt) + 1);
            if (!lora->targets[0]) {
                const char *who = lora->method == VC_PEFT_IA3 ? OV("peft", "ia3") : lora->method == VC_PEFT_LN_TUNING ? OV("peft", "ln_tuning") : O("lora");
                const char *what = lora->method == VC_PEFT_LN_TUNING ? "layers" : "Linear layers";
                /* a config.json whose model_type PEFT's TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING
                 * lacks (peft/utils/constants.py @ 00073fe8: deepseek_v3, glm4_moe): PEFT asks for target_modules */
                if (vc_model_generated_json(m))
                    st = usage(err, "%s needs " O("lora_targets") ": PEFT has no default target_modules for this model_type (the "
                               "names of the %s to adapt, e.g. %s)", who, what, lora->method == VC_PEFT_LN_TUNING ? "input_layernorm" : "o_proj");
                else
                    st = usage(err, "%s needs " O("lora_targets") " (the names of the %s to adapt) for a vramcalc model file", who, what);
                goto fail;
            }
            if ((st = vc_model_set_lora(m, lora, err))) {
                opt_err(q, m, O("lora"), err, st);
                goto fail;
            }
        }
        if (o->ep > 1 && (st = vc_model_set_ep(m, o->ep, err))) { /* one expert-parallel rank's experts (docs/parallel.md 6) */
            opt_err(q, m, O("ep"), err, st);
            goto fail;
        }
        if ((q->weights || q->qlora) && (st = vc_model_set_weights(m, &q->quant, err))) {
            opt_err(q, m, q->qlora ? O("qlora") : O("weights"), err, st);
            goto fail;
        }
        if (q->input) {
            int64_t dims[VC_MAX_DIMS];
            int nd;
            if ((st = parse_shape(q->input, dims, &nd, err))) goto fail;
            if ((st = vc_model_set_input_shape(m, dims, nd, err))) {
                lib_err(q, err, st);
                goto fail;
            }
        }
        if (q->max_seq) {
            seq_o = *o;
            if ((st = find_max_seq(q, resp, &m, &m_owner, &seq_e, err))) goto fail;
        }
        if (!(resp->model_name = strdup(vc_model_name(m)))) {
            st = nomem(err);
            goto fail;
        }
        resp->rep.model = resp->model_name;
        vc_quant mq;
        if (vc_model_weights(m, &mq) != VC_WEIGHTS_DENSE) {
            vc_quant_describe(&mq, resp->wdesc, sizeof resp->wdesc);
            resp->rep.weights = resp->wdesc;
            /* quantized weights compute in their format row's precision (fp16 for GPTQ/AWQ kernels, else bf16) */
            if (!q->prec_given) o->precision = vc_quant_compute_precision(&mq);
        } else if (q->serve && !q->prec_given) {
            o->precision = vc_serve_auto_precision(m, &resp->gpu); /* vLLM's --dtype auto: the config's torch_dtype */
        }
        if (q->trace) {
            char *t = NULL;
            size_t n = 0;
            FILE *f = open_memstream(&t, &n);
            if (!f) {
                st = nomem(err);
                goto fail;
            }
            /* --use-vllm: the engine sized (and refused) as the report's, then its rows around the step's */
            vc_grpo_engine eng = {0, 0, 0, false}, *v = NULL;
            if (o->grpo_vllm && resp->have_gpu &&
                !(st = vc_estimate(m, o, &resp->r, err)) && !(st = vllm_beside(q, m, o, resp, err))) {
                eng = (vc_grpo_engine){resp->r.grpo.vllm_weights, resp->r.grpo.vllm_kv_cache, resp->r.grpo.vllm_graph_memory,
                                       q->vllm_sleep, resp->r.grpo.vllm_comm_allocated};
                v = &eng;
            }
            vc_result_free(&resp->r);
            memset(&resp->r, 0, sizeof resp->r);
            if (!st) st = vc__trace(m, o, v, trace_line, f, err);
            if (fclose(f) && !st) st = nomem(err);
            if (st) {
                free(t);
                lib_err(q, err, st);
                goto fail;
            }
            if ((st = text_response(resp, t, n, err))) goto fail;
            goto done;
        }
    }
    if ((q->sweep || q->max_batch || !q->per_layer) && !(q->max_context && !q->prompt_given) && !q->serve) {
        /* (--serve sizes vLLM's pool from its own plan of vLLM's split, vc_serve: no estimator) */
        /* (--max-context without --prompt: the report is at the prompt it finds, not at the default's) */
        /* one plan for every batch size (the first one tried is o->batch); without
         * --per-layer, even for one batch: no per-layer rows to fill */
        /* --max-seq: the search's estimator of the answer, made by vc_estimator_new(m, seq_o, VC_EST_NO_LAYERS),
         * when the options are still those (quantized weights' compute precision is set after the search) */
        const unsigned flags = q->per_layer && q->sweep ? 0 : VC_EST_NO_LAYERS;
        if (seq_e && !q->counts && flags == VC_EST_NO_LAYERS && !memcmp(&seq_o, o, sizeof seq_o)) {
            e = seq_e;
            seq_e = NULL;
            st = VC_OK;
        } else {
            st = q->counts ? vc_estimator_new_counts(q->params, q->acts, o, &e, err) : vc_estimator_new(m, o, flags, &e, err);
        }
        if (st) {
            lib_err(q, err, st);
            goto fail;
        }
    }
    vc_estimator_free(seq_e); /* not the report's: one plan in memory at a time */
    seq_e = NULL;
    if (q->sweep) {
        /* a sweep keeps every row until all are known; with --per-layer each holds a row per layer */
        if (q->per_layer && m && vc_model_layer_count(m) > VC_MAX_SWEEP_LAYER_ROWS / resp->nsweep) {
            st = usage(err, O("per_layer") " with " O("sweep") " keeps a row per layer and batch size: %zu layers x %zu batch sizes is "
                       "more than the limit of %d rows (docs/limits.md); use fewer batch sizes",
                       vc_model_layer_count(m), resp->nsweep, VC_MAX_SWEEP_LAYER_ROWS);
            goto fail;
        }
        if ((st = run_sweep(q, resp, e, err))) goto fail;
        goto done;
    }
    if (q->max_batch) {
        if ((st = vc_estimator_max_batch(e, resp->gpu.capacity, &resp->rep.max_batch, NULL, err))) {
            lib_err(q, err, st);
            goto fail;
        }
        /* the report is for --batch if given, else for the max batch (or 1) */
        if (!q->batch_given) o->batch = resp->rep.max_batch > 0 ? resp->rep.max_batch : 1;
    }
    if (q->serve) {
        if ((st = vc_serve(m, o, &resp->so, &resp->gpu, &resp->sr, err))) {
            lib_err(q, err, st);
            goto fail;
        }
        resp->kind = VC_RESP_SERVE;
        goto done;
    }
    if (q->max_context) {
        if ((st = vc_max_prompt(m, o, resp->gpu.capacity, &resp->rep.max_prompt, NULL, err))) {
            lib_err(q, err, st);
            goto fail;
        }
        /* the search's limit (generate.c vc_max_prompt): prompt + new tokens within the model's positions and 2^40 */
        const int64_t limit = m->max_positions > 0 ? m->max_positions - o->new_tokens + 1 : VC_MAX_DIM_SIZE - o->new_tokens;
        resp->rep.max_prompt_limited = resp->rep.max_prompt > 0 && resp->rep.max_prompt >= limit;
        if (!q->prompt_given) { /* the report is for --prompt if given, else for the longest prompt (or 1) */
            o->prompt = resp->rep.max_prompt > 0 ? resp->rep.max_prompt : 1;
            vc_estimator_free(e); /* its plan is for the other prompt */
            e = NULL;
        }
    }
    if (e && !q->per_layer) { /* the search's plan and allocator replays serve the report too */
        st = vc_estimator_run(e, o->batch, &resp->r, err);
    } else {
        vc_estimator_free(e); /* one plan in memory at a time */
        e = NULL;
        st = q->counts ? vc_estimate_counts(q->params, q->acts, o, &resp->r, err) : vc_estimate(m, o, &resp->r, err);
    }
    if (!st && o->grpo_vllm && resp->have_gpu) st = vllm_beside(q, m, o, resp, err);
    if (st) {
        lib_err(q, err, st);
        goto fail;
    }
    resp->kind = VC_RESP_ESTIMATE;
    resp->status = !report_fits(&resp->rep) || resp->rep.max_batch == 0 || resp->rep.max_prompt == 0 || resp->rep.max_seq == 0;
    /* one estimate that does not fit: what would (a search's answer is its own hint) */
    if (resp->status && !q->no_hints && !q->counts && q->format != VC_FORMAT_CSV && !q->max_batch && !q->max_seq &&
        !q->max_context)
        vc__hints(given, resp);
    resp->rep.hints = resp->hints;
    resp->rep.nhints = resp->nhints;
    resp->rep.hints_tried = resp->hints_tried;
done:
    resp->hf = q->hf;
    resp->lora = q->lora;
    vc_estimator_free(e);
    vc_estimator_free(seq_e);
    vc_model_free(m);
    vc_model_free(m_owner);
    *out = resp;
    return VC_OK;
fail:
    vc_estimator_free(e);
    vc_estimator_free(seq_e);
    vc_model_free(m);
    vc_model_free(m_owner);
    vc_response_free(resp);
    return st;
}

void vc_response_free(vc_response *r)
{
    if (!r) return;
    vc_result_free(&r->r);
    if (r->rows)
        for (size_t i = 0; i < r->nsweep; i++) vc_result_free(&r->rows[i]);
    free(r->rows);
    free(r->sweep);
    free(r->columns);
    free(r->plot);
    free(r->text);
    free(r->model_name);
    vc_cudnn_table_free(r->cudnn_table);
    free(r);
}

int vc_response_status(const vc_response *r) { return r ? r->status : 0; }

const char *vc_response_plot_path(const vc_response *r) { return r && r->kind == VC_RESP_SWEEP ? r->plot : NULL; }

void vc_text_free(char *text) { free(text); }
