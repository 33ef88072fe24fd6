/*
 * options.c — vc_options: defaults, the checks every estimate makes, and
 * the names of each choice (from the X-macro lists in vramcalc.h).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "policy.h"
#include "release.h"
#include "util.h"

#define VC__NAME(e, n) n,
static const char *const optim_names[] = {VC_OPTIM_MAP(VC__NAME) NULL};
static const char *const impl_names[] = {VC_OPTIM_IMPL_MAP(VC__NAME) NULL};
static const char *const prec_names[] = {VC_PRECISION_MAP(VC__NAME) NULL};
static const char *const mode_names[] = {VC_MODE_MAP(VC__NAME) NULL};
static const char *const attn_names[] = {VC_ATTENTION_MAP(VC__NAME) NULL};
static const char *const par_names[] = {VC_PARALLEL_MAP(VC__NAME) NULL};
static const char *const cache_names[] = {VC_CACHE_MAP(VC__NAME) NULL};
static const char *const offload_names[] = {VC_OFFLOAD_MAP(VC__NAME) NULL};
static const char *const kv_names[] = {VC_KV_DTYPE_MAP(VC__NAME) NULL};
static const char *const fsdp_dt_names[] = {VC_FSDP_DTYPE_MAP(VC__NAME) NULL};
#undef VC__NAME
static const char *const phase_names[] = {"forward", "backward", "optimizer", "idle", "prefill", "decode", "sync", "vllm"};

static int lookup(const char *const *names, const char *s)
{
    for (int i = 0; s && names[i]; i++)
        if (!strcmp(names[i], s)) return i;
    return -1;
}

int vc_optim_from_name(const char *s) { return lookup(optim_names, s); }
int vc_optim_impl_from_name(const char *s) { return lookup(impl_names, s); }
int vc_precision_from_name(const char *s) { return lookup(prec_names, s); }
int vc_mode_from_name(const char *s) { return lookup(mode_names, s); }
int vc_attention_from_name(const char *s) { return lookup(attn_names, s); }
/* --parallel also takes each layout's aliases (vc_layout_desc.aliases: PyTorch's FSDP
 * ShardingStrategy names, torch/distributed/fsdp/api.py FULL_SHARD, SHARD_GRAD_OP,
 * HYBRID_SHARD, and hsdp), in any case and with '_' or '-': "FULL_SHARD", "hybrid_shard". */
int vc_parallel_from_name(const char *s)
{
    char n[32];
    size_t i = 0;
    for (; s && s[i] && i < sizeof n - 1; i++) n[i] = s[i] == '_' ? '-' : s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] - 'A' + 'a') : s[i];
    if (!s || s[i]) return -1; /* NULL, or longer than any name */
    n[i] = '\0';
    for (int p = 0; p < VC_PARALLEL__N; p++) {
        const vc_layout_desc *d = vc__layout_desc((vc_parallel)p);
        for (size_t a = 0; d && a < sizeof d->aliases / sizeof *d->aliases && d->aliases[a]; a++)
            if (!strcmp(n, d->aliases[a])) return p;
    }
    return lookup(par_names, n);
}
const char *vc_parallel_name(vc_parallel p) { return (unsigned)p < VC_PARALLEL__N ? par_names[p] : "?"; }
const char *vc_optim_name(vc_optim o) { return (unsigned)o < VC_OPTIM__N ? optim_names[o] : "?"; }
const char *vc_optim_impl_name(vc_optim_impl i) { return (unsigned)i < VC_IMPL__N ? impl_names[i] : "?"; }
const char *vc_precision_name(vc_precision p) { return (unsigned)p < VC_PREC__N ? prec_names[p] : "?"; }
const char *vc_mode_name(vc_mode m) { return (unsigned)m < VC_MODE__N ? mode_names[m] : "?"; }
const char *vc_attention_name(vc_attention a) { return (unsigned)a < VC_ATTN__N ? attn_names[a] : "?"; }
const char *vc_phase_name(vc_phase p) { return (unsigned)p < sizeof phase_names / sizeof *phase_names ? phase_names[p] : "?"; }
int vc_cache_from_name(const char *s) { return lookup(cache_names, s); }
int vc_offload_from_name(const char *s) { return lookup(offload_names, s); }
const char *vc_offload_name(vc_offload o) { return (unsigned)o < VC_OFFLOAD__N ? offload_names[o] : "?"; }
int vc_fsdp_dtype_from_name(const char *s) { return lookup(fsdp_dt_names, s); }
const char *vc_fsdp_dtype_name(vc_fsdp_dtype d) { return (unsigned)d < VC_FSDP_DTYPE__N ? fsdp_dt_names[d] : "?"; }
vc_dtype vc__fsdp_dtype(vc_fsdp_dtype d)
{
    return d == VC_FSDP_DTYPE_BF16 ? VC_DT_BF16 : d == VC_FSDP_DTYPE_FP16 ? VC_DT_F16 : VC_DT_F32;
}
int vc_kv_dtype_from_name(const char *s) { return lookup(kv_names, s); }
const char *vc_kv_dtype_name(vc_kv_dtype k) { return (unsigned)k < VC_KV__N ? kv_names[k] : "?"; }
const char *vc_cache_name(vc_cache c) { return (unsigned)c < VC_CACHE__N ? cache_names[c] : "?"; }
const char *vc_optim_summary(vc_optim o) { return (unsigned)o < VC_OPTIM__N ? vc_optim_row_get(o)->summary : "?"; }

static void defaults(vc_options *o)
{
    memset(o, 0, sizeof *o);
    o->batch = 1;
    /* --serve: vLLM's CUDA graph measure not given: vLLM's default (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS "1"
     * since v0.21.0), vramcalc's estimate of it taken off the pool where vLLM measures them (src/engine/serve.c) */
    o->cuda_graph_memory = VC_CUDA_GRAPH_MEMORY_VLLM_DEFAULT;
    o->optim = VC_OPTIM_ADAM;
    o->optim_impl = VC_IMPL_FOREACH;
    o->accumulate = 1;
    o->precision = VC_PREC_FP32;
    o->mode = VC_MODE_TRAIN;
    o->attention = VC_ATTN_AUTO;
    o->workspace = -1;
    o->context = -1;
    o->torch_version = VC_TORCH_DEFAULT;
    o->cuda_version = VC_CUDA_DEFAULT;
    o->module_loading = VC_MODULE_LOADING_AUTO;
    o->parallel = VC_PARALLEL_NONE;
    o->gpus = 1;
    o->prompt = VC_GEN_DEFAULT_PROMPT;
    o->new_tokens = VC_GEN_DEFAULT_NEW_TOKENS;
    o->cache = VC_CACHE_DYNAMIC;
    o->kv_bits = 4; /* cache_utils.py QuantizedCache.__init__ defaults */
    o->kv_group = 64;
    o->kv_residual = 128;
    o->tp = 1;
    o->pp = 1;
    o->micro_batches = 0;
    o->sp = 0;
    o->ep = 1;
    o->num_generations = 8; /* GRPOConfig.num_generations */
    o->num_beams = 1; /* GenerationConfig.num_beams */
}

void vc_options_init_size(vc_options *o, size_t size)
{
    vc_options d;
    defaults(&d);
    d.size = size;
    memcpy(o, &d, size < sizeof d ? size : sizeof d);
}

void(vc_options_init)(vc_options *o) { vc_options_init_size(o, sizeof *o); }

/* The first vc_options with a size (release 0.1): up to act_offload. A field appended
 * later is read from a caller whose size reaches its end; this stays. */
#define OPTIONS_SIZE_FIRST (offsetof(vc_options, act_offload) + sizeof(int))

vc_status vc__options_in(const vc_options **o, vc_options *full, vc_error *err)
{
    size_t n = (*o)->size;
    if (n == sizeof **o) return VC_OK;
    if (n < OPTIONS_SIZE_FIRST || n > sizeof **o)
        return vc_set_error(err, VC_ERR_USAGE, NULL, "vc_options of %zu bytes: this library takes %zu to %zu (set it up with "
                            "vc_options_init before setting a field)", n, (size_t)OPTIONS_SIZE_FIRST, sizeof **o);
    defaults(full);
    memcpy(full, *o, n);
    full->size = sizeof *full;
    *o = full;
    return VC_OK;
}

int64_t vc_dp_world(const vc_options *o)
{
    vc_options full;
    if (vc__options_in(&o, &full, NULL)) return 1;
    int64_t mp = o->tp * o->pp; /* both bounded by vc__check_options */
    return mp >= 1 && o->gpus % mp == 0 ? o->gpus / mp : 1;
}

/* "2.Y" with Y from VC_TORCH_OLDEST to VC_TORCH_DEFAULT's minor, digits only. */
int vc_torch_from_name(const char *s)
{
    if (!s || s[0] != '2' || s[1] != '.' || !s[2] || strlen(s) > 4) return -1;
    int minor = 0;
    for (const char *c = s + 2; *c; c++) {
        if (*c < '0' || *c > '9') return -1;
        minor = minor * 10 + (*c - '0');
    }
    if (s[2] == '0' && s[3]) return -1; /* "2.05" */
    int v = 200 + minor;
    return v >= VC_TORCH_OLDEST && v <= VC_TORCH_DEFAULT ? v : -1;
}

const char *vc_torch_name(int version, char *buf, size_t n)
{
    if (version == 0) version = VC_TORCH_DEFAULT;
    snprintf(buf, n, "%d.%d", version / 100, version % 100);
    return buf;
}

/* --ep against the other options: Megatron-Core's rules (NVIDIA/Megatron-LM@d98e8a64,
 * docs/parallel.md section 6) and what is modelled. */
static vc_status ep_check(const vc_options *o, vc_error *err)
{
    if (o->ep < 1 || o->ep > (INT64_C(1) << 20))
        return vc_set_error(err, VC_ERR_USAGE, O("ep"), "expected 1 to 2^20 expert-parallel ranks, got %lld", (long long)o->ep);
    if (o->ep == 1) return VC_OK;
    if (o->mode == VC_MODE_GENERATE)
        return vc_set_error(err, VC_ERR_USAGE, O("ep"), "expert parallelism is modelled for training and one forward (" OV("mode", "train") ", infer), not generate");
    /* MoELayer.forward raises ValueError in training when tp > 1 without sequence_parallel; the
     * experts' own split (expert_tensor_parallel_size, the TP size by default) and MoE under --sp are not modelled */
    if (o->tp > 1)
        return vc_set_error(err, VC_ERR_USAGE, O("ep"), O("ep") " with " O("tp") " is not modelled (Megatron needs --sequence-parallel with both, "
                            "and splits each expert over expert_tensor_parallel_size)");
    /* the distributed optimizer shards expert parameters over the expert-data-parallel group (gpus / (etp x ep x pp)),
     * the others over the data-parallel group (theoretical_memory_usage.py's two num_bytes_per_parameter):
     * the layouts with VC_LAYOUT_EP */
    char names[128];
    if (!(vc__layout_desc(o->parallel)->caps & VC_LAYOUT_EP))
        return vc_set_error(err, VC_ERR_USAGE, O("parallel"), "%s with " O("ep") " is not modelled: expert parameters shard over the "
                            "expert-data-parallel group (gpus / ep), the others over all data-parallel ranks (%s are modelled)",
                            par_names[o->parallel], vc__layout_names(VC_LAYOUT_EP, " and ", names, sizeof names));
    /* parallel_state.initialize_model_parallel: RuntimeError unless world_size is divisible by
     * expert_tensor x expert_model x pipeline parallel size */
    if (o->gpus % (o->tp * o->pp * o->ep))
        return vc_set_error(err, VC_ERR_USAGE, O("ep"), "%lld GPUs are not divisible by expert_tensor x expert_model x pipeline parallel "
                            "size (%lld x %lld x %lld): give " O("gpus") " a multiple of " O("ep"), (long long)o->gpus, (long long)o->tp,
                            (long long)o->ep, (long long)o->pp);
    return VC_OK;
}

/* --ds-overlap-comm: DeepSpeedZeroConfig's overlap_comm (deepspeed/runtime/zero/config.py at
 * deepspeedai/DeepSpeed@edaa7221), a ZeRO setting: refused outside the layouts with
 * VC_LAYOUT_ZERO_CONFIG (zero1/2/3), and with a pipeline
 * stage (PipelineEngine's reduce_gradients(pipeline_parallel=True) with the hooks' reduction is not
 * modelled: docs/parallel.md 1.10). */
static vc_status zero_overlap_check(const vc_options *o, vc_error *err)
{
    const char *opt = O("ds_overlap_comm");
    if (o->ds_overlap_comm < VC_DS_OVERLAP_OFF || o->ds_overlap_comm > VC_DS_OVERLAP_ON)
        return vc_set_error(err, VC_ERR_USAGE, opt, "invalid value (true or false)");
    if (o->ds_overlap_comm == VC_DS_OVERLAP_AUTO) return VC_OK;
    char names[128];
    if (!(vc__layout_desc(o->parallel)->caps & VC_LAYOUT_ZERO_CONFIG))
        return vc_set_error(err, VC_ERR_USAGE, opt, "overlap_comm is DeepSpeed ZeRO's: give " OV("parallel", "%s") "%s%s",
                            vc__layout_names(VC_LAYOUT_ZERO_CONFIG, " or ", names, sizeof names),
                            o->parallel != VC_PARALLEL_NONE ? ", not " : "", o->parallel != VC_PARALLEL_NONE ? par_names[o->parallel] : "");
    if (o->pp > 1 && o->ds_overlap_comm == VC_DS_OVERLAP_ON)
        return vc_set_error(err, VC_ERR_USAGE, opt, "true with " O("pp") " is not modelled (PipelineEngine's reduce_gradients with the "
                            "gradient hooks' reduction)");
    return VC_OK;
}

vc_status vc__check_options(const vc_options *o, vc_error *err)
{
    if (o->batch < 1) return vc_set_error(err, VC_ERR_USAGE, O("batch"), "must be a positive integer");
    if (o->accumulate < 1) return vc_set_error(err, VC_ERR_USAGE, O("accumulate"), "must be a positive integer");
    if (o->packing < 0 || (o->packing > 1 && o->batch != 1))
        return vc_set_error(err, VC_ERR_USAGE, O("packing"), "sequences packed into one row: a count of 0 or more, with batch 1 (the row)");
    if ((unsigned)o->optim >= VC_OPTIM__N || (unsigned)o->optim_impl >= VC_IMPL__N ||
        (unsigned)o->precision >= VC_PREC__N || (unsigned)o->mode >= VC_MODE__N ||
        (unsigned)o->attention >= VC_ATTN__N)
        return vc_set_error(err, VC_ERR_USAGE, NULL, "invalid option value");
    if (o->torch_version && (o->torch_version < VC_TORCH_OLDEST || o->torch_version > VC_TORCH_DEFAULT))
        return vc_set_error(err, VC_ERR_USAGE, O("torch"), "unsupported PyTorch release");
    if (!vc__layout_desc(o->parallel)) return vc_set_error(err, VC_ERR_USAGE, O("parallel"), "invalid layout");
    if (o->gpus < 1 || o->gpus > (INT64_C(1) << 20))
        return vc_set_error(err, VC_ERR_USAGE, O("gpus"), "expected 1 to 2^20 GPUs, got %lld", (long long)o->gpus);
    if (o->tp < 1 || o->tp > (INT64_C(1) << 20))
        return vc_set_error(err, VC_ERR_USAGE, O("tp"), "expected 1 to 2^20 tensor-parallel ranks, got %lld", (long long)o->tp);
    if (o->pp < 1 || o->pp > (INT64_C(1) << 20))
        return vc_set_error(err, VC_ERR_USAGE, O("pp"), "expected 1 to 2^20 pipeline stages, got %lld", (long long)o->pp);
    if (o->micro_batches < 0 || o->micro_batches > (INT64_C(1) << 20))
        return vc_set_error(err, VC_ERR_USAGE, O("micro_batches"), "expected 1 to 2^20 micro-batches, got %lld", (long long)o->micro_batches);
    if (o->sp && o->tp < 2) return vc_set_error(err, VC_ERR_USAGE, O("sp"), "sequence parallelism needs " OV("tp", "2") " or more");
    if (o->pp_virtual < 0 || o->pp_virtual > (INT64_C(1) << 20))
        return vc_set_error(err, VC_ERR_USAGE, O("pp_virtual"), "expected 1 to 2^20 model chunks per pipeline rank, got %lld", (long long)o->pp_virtual);
    if (o->pp_virtual > 1 && o->pp < 2)
        return vc_set_error(err, VC_ERR_USAGE, O("pp_virtual"), "virtual pipeline stages are a pipeline's: give " OV("pp", "2") " or more");
    /* forward_backward_pipelining_with_interleaving (MEG schedules.py): microbatch_group_size_per_vp_stage
     * (pp by default, model_parallel_config.py __post_init__) must lie in [pp, M], and a last group of M mod
     * pp micro-batches is refused ("The remainder of M ... should be 0, or larger than or equal to the
     * pipeline-parallel size"): M a multiple of pp */
    if (o->pp_virtual > 1 && o->micro_batches && o->micro_batches % o->pp)
        return vc_set_error(err, VC_ERR_USAGE, O("micro_batches"), "the interleaved schedule needs a multiple of " O("pp") " (%lld) "
                            "micro-batches, got %lld", (long long)o->pp, (long long)o->micro_batches);
    /* a layout whose pipeline engine has no interleaved schedule (DeepSpeed's PipelineEngine, zero1's) */
    const vc_layout_desc *lay = vc__layout_desc(o->parallel);
    if (o->pp_virtual > 1 && lay->interleaved_why) return vc_set_error(err, VC_ERR_USAGE, O("pp_virtual"), "%s", lay->interleaved_why);
    if (o->micro_batches && o->pp < 2)
        return vc_set_error(err, VC_ERR_USAGE, O("micro_batches"), "micro-batches are a pipeline's: give " OV("pp", "2") " or more");
    if (o->pp > 1 && o->mode != VC_MODE_TRAIN)
        return vc_set_error(err, VC_ERR_USAGE, O("pp"), "pipeline parallelism is modelled for training (" OV("mode", "train") ")");
    if (o->pp > 1 && o->accumulate > 1)
        return vc_set_error(err, VC_ERR_USAGE, O("accumulate"), "under " O("pp") " the micro-batches are the accumulation: give " O("micro_batches"));
    /* the layouts with VC_LAYOUT_PP: DeepSpeed's PipelineEngine refuses ZeRO-2/3 (deepspeed/runtime/pipe/engine.py
     * PipelineEngine.__init__: "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism") and takes stage 1;
     * FSDP's units under a 1F1B schedule are not modelled */
    char names[128];
    if (o->pp > 1 && !(lay->caps & VC_LAYOUT_PP))
        return vc_set_error(err, VC_ERR_USAGE, O("parallel"), "%s with " O("pp") " is not modelled (%s are)", par_names[o->parallel],
                            vc__layout_names(VC_LAYOUT_PP, " and ", names, sizeof names));
    if (o->gpus % (o->tp * o->pp))
        return vc_set_error(err, VC_ERR_USAGE, O("gpus"), "%lld GPUs are not a whole number of tensor x pipeline groups (tp %lld x pp %lld)",
                            (long long)o->gpus, (long long)o->tp, (long long)o->pp);
    if (ep_check(o, err)) return VC_ERR_USAGE;
    if (vc_dp_world(o) > 1 && o->parallel == VC_PARALLEL_NONE)
        return vc_set_error(err, VC_ERR_USAGE, O("gpus"), "%lld data-parallel ranks need a " O("parallel") " layout (ddp)", (long long)vc_dp_world(o));
    if ((unsigned)o->cache >= VC_CACHE__N) return vc_set_error(err, VC_ERR_USAGE, O("cache"), "invalid cache");
    /* QuantoQuantizedLayer.__init__: "`nbits` for `quanto` backend has to be one of [`2`, `4`]" */
    if (o->kv_bits != 2 && o->kv_bits != 4)
        return vc_set_error(err, VC_ERR_USAGE, O("kv_bits"), "the quanto backend of QuantizedCache takes 2 or 4 bits, got %d", o->kv_bits);
    if (o->kv_group < 1 || o->kv_group > VC_MAX_DIM_SIZE)
        return vc_set_error(err, VC_ERR_USAGE, O("kv_group_size"), "expected 1 to 2^40 elements, got %lld", (long long)o->kv_group);
    if (o->kv_residual < 0 || o->kv_residual > VC_MAX_DIM_SIZE)
        return vc_set_error(err, VC_ERR_USAGE, O("kv_residual_length"), "expected 0 to 2^40 tokens, got %lld", (long long)o->kv_residual);
    if (o->prompt < 1 || o->prompt > VC_MAX_DIM_SIZE)
        return vc_set_error(err, VC_ERR_USAGE, O("prompt"), "expected 1 to 2^40 tokens, got %lld", (long long)o->prompt);
    if (o->new_tokens < 1 || o->new_tokens > VC_MAX_DIM_SIZE)
        return vc_set_error(err, VC_ERR_USAGE, O("new_tokens"), "expected 1 to 2^40 tokens, got %lld", (long long)o->new_tokens);
    if (o->num_beams < 1 || o->num_beams > VC_MAX_DIM_SIZE)
        return vc_set_error(err, VC_ERR_USAGE, O("num_beams"), "expected 1 to 2^40 beams, got %lld", (long long)o->num_beams);
    if (lay->node_gpus && vc_dp_world(o) > lay->node_gpus && vc_dp_world(o) % lay->node_gpus)
        return vc_set_error(err, VC_ERR_USAGE, O("gpus"), "%s shards within %d-GPU nodes: %lld GPUs is not a whole number of nodes",
                            par_names[o->parallel], lay->node_gpus, (long long)o->gpus);
    if (vc__layout_offload_check(o, err)) return VC_ERR_USAGE; /* --offload (layout.c) */
    if (vc__layout_view_check(o, err)) return VC_ERR_USAGE; /* the bucket views (layout.c) */
    if (o->optim == VC_OPTIM_ADAFACTOR && !vc_release_value(o->torch_version, VC_REL_ADAFACTOR))
        return vc_set_error(err, VC_ERR_USAGE, O("optim"), "adafactor is torch.optim.Adafactor, new in PyTorch 2.5 (" OV("torch", "2.5") " or later)");
    if (o->mode == VC_MODE_GENERATE && lay->generate_why) return vc_set_error(err, VC_ERR_USAGE, O("parallel"), "%s", lay->generate_why);
    if (vc__fsdp_mp_check(o, err)) return VC_ERR_USAGE; /* the --fsdp-* options (layout_fsdp2.c) */
    if (lay->check && lay->check(o, err)) return VC_ERR_USAGE; /* the layout's own refusals */
    if (zero_overlap_check(o, err)) return VC_ERR_USAGE;
    const vc_optim_row *r = vc_optim_row_get(o->optim);
    if (!(r->impls & (1u << o->optim_impl))) {
        char have[64] = "";
        for (int i = 0; i < VC_IMPL__N; i++)
            if (r->impls & (1u << i)) {
                size_t l = strlen(have);
                snprintf(have + l, sizeof have - l, "%s%s", l ? ", " : "", impl_names[i]);
            }
        return vc_set_error(err, VC_ERR_USAGE, O("optim_impl"), "%s has no %s implementation (it has %s)",
                            optim_names[o->optim], impl_names[o->optim_impl], have);
    }
    if ((unsigned)o->nccl_topology > VC_NCCL_TOPO_SHM) return vc_set_error(err, VC_ERR_USAGE, O("nccl_topology"), "invalid topology");
    if (o->gpus > 1 || o->nccl_stages > 1) return vc_nccl_check(o, err); /* src/engine/nccl.c: a row for the GPU */
    return VC_OK;
}
