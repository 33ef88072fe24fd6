/*
 * serve.c — --serve (issue 13; docs/inference.md): how vLLM sizes its KV
 * cache on one GPU, and what that pool holds.
 *
 * vLLM (github:vllm-project/vllm, the files docs/inference.md names):
 *  - vllm/v1/worker/gpu_worker.py Worker.determine_available_memory: a
 *    profiling run (gpu_model_runner.py profile_run: _dummy_run over
 *    max_num_batched_tokens tokens split into min(max_num_seqs,
 *    max_num_batched_tokens) dummy requests, then _dummy_sampler_run on the
 *    last token of each);
 *    available = total_gpu_memory x gpu_memory_utilization - (weights + the
 *    run's peak increase + non-torch increase);
 *  - vllm/v1/kv_cache_interface.py AttentionSpec.page_size_bytes:
 *    2 x block_size x num_kv_heads x head_size x dtype size, per layer;
 *  - vllm/v1/core/kv_cache_utils.py get_num_blocks: available // page_size
 *    // num_layers; get_max_concurrency_for_kv_cache_config: num_blocks /
 *    cdiv(tokens per request, block_size);
 *  - vllm/engine/arg_utils.py EngineArgs.get_batch_defaults (the API
 *    server's): max_num_batched_tokens 8192 and max_num_seqs 1024 on cards of
 *    70 GiB or more that are not A100s, 2048 and 256 otherwise.
 * The profiling run is estimated as the model's forward over those dummy
 * requests, a batch of them (generate.c's prefill without a cache), with the
 * LM head on each one's last row and their fp32 copy (the sampler skips
 * top-k/top-p while profiling).
 * A multimodal model's encoder profiling before that run: src/engine/serve_mm.c.
 * The weights include vLLM's rotary cos/sin cache (vllm_rope_cache below).
 * vLLM's memory outside PyTorch's allocator (non_torch_memory below): the
 * arithmetic at vllm-project/vllm @ 35d5cda1 is
 *   available = requested_memory - non_kv_cache_memory,
 *   requested_memory = total x gpu_memory_utilization (Worker.init_device),
 *   non_kv_cache_memory = weights_memory + torch_peak_increase
 *                         + non_torch_increase (memory_profiling);
 * what is and is not in it is the table vllm_non_torch below. Since v0.21 V1
 * also subtracts its CUDA graph memory estimate (profile_cudagraph_memory:
 * measured by capturing graphs on the GPU): vramcalc derives it
 * (src/engine/serve_graphs.c) and takes it off the pool as vLLM does by
 * default, or a measure given with --cuda-graph-memory (docs/inference.md
 * item 7).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf.h"
#include "layer.h"
#include "plan.h"
#include "serve_encdec.h"
#include "serve_nccl.h"
#include "util.h"

void vc_serve_options_init(vc_serve_options *s)
{
    memset(s, 0, sizeof *s);
    s->gpu_memory_utilization = 0.9;
    s->block_size = 16;
    s->kv_cache_dtype = VC_KV_AUTO;
}

static int kv_size(vc_kv_dtype k, vc_dtype act)
{
    switch (k) {
    case VC_KV_FP16: case VC_KV_BF16: return 2;
    case VC_KV_FP8: return 1;
    default: return vc_dtype_size(act);
    }
}

/* vLLM's --dtype auto (vllm/config/model.py @ 18ec6629, _get_and_verify_dtype
 * with "auto" -> _resolve_auto_dtype): the platform's supported dtypes, in
 * order (vllm/platforms/cuda.py @ 002db495 CudaPlatformBase.supported_dtypes: bf16, fp16,
 * fp32 from sm80, fp16, fp32 from sm60; other platforms, ROCm included,
 * interface.py Platform.supported_dtypes: bf16, fp16, fp32), less float16 for
 * the model types in _FLOAT16_NOT_SUPPORTED_MODELS; a float32 (or absent,
 * _find_dtype) config dtype becomes the first of them, and so does one the
 * card does not support. A size without a preset is taken as sm80 or later.
 * _find_dtype's last resort, the safetensors files' dtypes, is not read:
 * vramcalc has the config only. */
vc_precision vc_serve_auto_precision(const vc_model *m, const vc_gpu_spec *gpu)
{
    const bool nv_old = gpu && gpu->preset && gpu->preset->sm > 0 && gpu->preset->sm < 80;
    vc_dtype supported[3];
    int n = 0;
    if (!nv_old) supported[n++] = VC_DT_BF16;
    if (!m->cfg_no_fp16) supported[n++] = VC_DT_F16;
    supported[n++] = VC_DT_F32;
    vc_dtype want = m->cfg_dtype < 0 || m->cfg_dtype == VC_DT_F32 ? supported[0] : (vc_dtype)m->cfg_dtype;
    bool ok = false;
    for (int i = 0; i < n; i++) ok |= supported[i] == want;
    if (!ok) want = supported[0];
    return want == VC_DT_BF16 ? VC_PREC_BF16 : want == VC_DT_F16 ? VC_PREC_FP16 : VC_PREC_FP32;
}

/* vLLM's rotary cos/sin cache, a buffer outside the checkpoint that "Model
 * loading took" counts (vllm-project/vllm @ 072d10a0,
 * vllm/model_executor/layers/rotary_embedding/base.py
 * RotaryEmbeddingBase.__init__: _compute_cos_sin_cache() is
 * [max_position_embeddings, rotary_dim] (cat of cos and sin), .to(dtype), the
 * model's dtype, register_buffer("cos_sin_cache"); @ 926c71f6, __init__.py
 * get_rope: one instance per (head_size, rotary_dim, max_position, ..., dtype),
 * kept in _ROPE_DICT, so every layer shares one cache). The rope types whose
 * cache has max_position_embeddings rows, as get_rope builds them: */
static const char *const vllm_rope_plain[] = {
    "default", /* RotaryEmbedding(head_size, rotary_dim, max_position, ...) */
    "llama3",  /* Llama3RotaryEmbedding: the base class's cache, other inv_freq */
};

/* The config vLLM reads the language model's keys from, hf_text_config (vllm-project/vllm @ e23031f0,
 * vllm/transformers_utils/config.py get_hf_text_config: config.get_text_config(), a multimodal
 * config's text_config): max_model_len and the rotary cache come from it (Qwen3.5's text_config); plan.h. */
const cJSON *vc__vllm_text_config(const cJSON *root)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "text_config");
    return cJSON_IsObject(t) ? t : root;
}

/* Elements of that cache for a Hugging Face config, 0 when the model has no
 * rotary embedding or its rope type sizes the cache otherwise (linear,
 * dynamic, yarn, longrope: not modelled). rotary_dim is read from the
 * model's RotaryEmbedding layer (its inv_freq buffer holds rotary_dim / 2). */
static int64_t vllm_rope_cache(const vc_model *m)
{
    int64_t half = 0;
    for (size_t i = 0; i < m->ninst && !half; i++)
        if (!strcmp(m->inst[i].kind->name, "RotaryEmbedding") && m->inst[i].nb > 0)
            half = m->buf[m->inst[i].bufs[0]].numel;
    if (!half || !m->gen_json || !m->text) return 0;
    cJSON *root = cJSON_ParseWithLength(m->text, m->text_len);
    if (!root) return 0;
    const cJSON *tc = vc__vllm_text_config(root);
    const cJSON *mp = cJSON_GetObjectItemCaseSensitive(tc, "max_position_embeddings");
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(tc, "rope_scaling");
    const cJSON *t = cJSON_IsObject(rs) ? cJSON_GetObjectItemCaseSensitive(rs, "rope_type") : NULL;
    if (cJSON_IsObject(rs) && !t) t = cJSON_GetObjectItemCaseSensitive(rs, "type");
    bool plain = !cJSON_IsObject(rs);
    for (size_t i = 0; i < sizeof vllm_rope_plain / sizeof *vllm_rope_plain && cJSON_IsString(t); i++)
        plain |= !strcmp(t->valuestring, vllm_rope_plain[i]);
    int64_t n = 0;
    if (plain && cJSON_IsNumber(mp) && mp->valuedouble >= 1 && mp->valuedouble <= (double)VC_MAX_DIM_SIZE)
        n = (int64_t)mp->valuedouble * 2 * half;
    cJSON_Delete(root);
    return n;
}

/* vLLM's derived max_model_len for a Hugging Face config, 0 when none is
 * derived (then any max_model_len is accepted). vllm-project/vllm @ 0052a5b8,
 * vllm/config/model.py _get_and_verify_max_len: the smallest of the keys
 * below that the config has; model_max_length, when present, instead; times
 * the rope scaling factor unless the rope type is su, longrope or llama3 (yarn:
 * original_max_position_embeddings x factor), Gemma 3 excepted. A
 * max_model_len over it is refused ("User-specified max_model_len ... is
 * greater than the derived max_model_len") unless it is at most the config's
 * model_max_length, or VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. The tokenizer's
 * model_max_length and a sliding window disabled by the user are not read
 * (vramcalc has the config only). */
static const char *const vllm_len_keys[] = {"max_position_embeddings", "n_positions", "max_seq_len", "seq_length",
                                            "model_max_length", "max_target_positions", "max_sequence_length",
                                            "max_seq_length", "seq_len"};

/* ... of a config's root (serve_dsv4.c reads a config with no model built: plan.h) */
double vc__vllm_max_model_len_cfg(const cJSON *root, const char **key, bool *scaled)
{
    *key = NULL;
    *scaled = false;
    const cJSON *tc = vc__vllm_text_config(root);
    double len = 0;
    for (size_t i = 0; i < sizeof vllm_len_keys / sizeof *vllm_len_keys; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(tc, vllm_len_keys[i]);
        if (cJSON_IsNumber(v) && (len == 0 || v->valuedouble < len)) {
            len = v->valuedouble;
            *key = vllm_len_keys[i];
        }
    }
    const cJSON *mml = cJSON_GetObjectItemCaseSensitive(tc, "model_max_length");
    if (cJSON_IsNumber(mml) && mml->valuedouble != 0) {
        len = mml->valuedouble;
        *key = "model_max_length";
    }
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(tc, "rope_scaling");
    if (!cJSON_IsObject(rs)) rs = cJSON_GetObjectItemCaseSensitive(tc, "rope_parameters");
    if (len > 0 && cJSON_IsObject(rs) && !(cJSON_IsString(mt) && strstr(mt->valuestring, "gemma3"))) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
        if (!cJSON_IsString(t)) t = cJSON_GetObjectItemCaseSensitive(rs, "type"); /* patch_rope_parameters */
        const char *type = cJSON_IsString(t) ? t->valuestring : "default";
        if (strcmp(type, "su") && strcmp(type, "longrope") && strcmp(type, "llama3")) {
            const cJSON *f = cJSON_GetObjectItemCaseSensitive(rs, "factor");
            const cJSON *orig = cJSON_GetObjectItemCaseSensitive(rs, "original_max_position_embeddings");
            if (!strcmp(type, "yarn") && cJSON_IsNumber(orig)) len = orig->valuedouble;
            if (cJSON_IsNumber(f)) len *= f->valuedouble;
            *scaled = cJSON_IsNumber(f) && f->valuedouble != 1;
        }
    }
    if (len > 0 && cJSON_IsNumber(mml) && mml->valuedouble > len) len = mml->valuedouble; /* allowed up to it */
    return len;
}

static double vllm_max_model_len(const vc_model *m, const char **key, bool *scaled)
{
    *key = NULL;
    *scaled = false;
    if (!m->gen_json || !m->text) return m->max_positions > 0 ? (double)m->max_positions : 0;
    cJSON *root = cJSON_ParseWithLength(m->text, m->text_len);
    if (!root) return 0;
    const double len = vc__vllm_max_model_len_cfg(root, key, scaled);
    cJSON_Delete(root);
    return len;
}

/* The least max_num_seqs whose profiling-run requests stay within the model's positions (vc_serve's refusal below,
 * and --use-vllm's in src/api/request.c vllm_beside): vLLM's profile_run splits max_num_batched_tokens into
 * min(max_num_seqs, tokens) dummy requests of about tokens / requests each (vramcalc builds each cdiv(tokens,
 * requests) long), so they fit max_model_len from cdiv(max_num_batched_tokens, max_model_len) requests on;
 * max_model_len as vllm_max_model_len derives it, whole. 0 where it derives none (any count fits). */
int64_t vc__vllm_min_num_seqs(const vc_model *m, int64_t max_num_batched_tokens)
{
    const char *key;
    bool scaled;
    const int64_t len = (int64_t)vllm_max_model_len(m, &key, &scaled);
    return len > 0 ? (max_num_batched_tokens + len - 1) / len : 0;
}

/* vLLM's memory outside PyTorch's caching allocator, and whether its KV cache
 * sizing counts it (vllm-project/vllm @ 35d5cda1, vllm/v1/worker/gpu_worker.py;
 * @ a6d5c390, vllm/utils/mem_utils.py):
 *  - MemorySnapshot.measure: non_torch_memory = (total - free, mem_get_info)
 *    - memory_reserved(); memory_profiling: non_torch_increase = after the
 *    profiling run less init_snapshot, so only what appears after the snapshot
 *    is counted, and determine_available_memory subtracts it with the weights
 *    and torch_peak_increase (the profiling run's allocated peak, weights
 *    included here: profile_peak);
 *  - Worker.init_device takes init_snapshot after set_device and
 *    init_worker_distributed_environment ("Initialize the distributed
 *    environment BEFORE taking memory snapshot ... NCCL buffers are allocated
 *    before we measure"): the CUDA context's base, NCCL's communicators and the
 *    custom all-reduce's buffers for tensor parallelism are already in the
 *    snapshot, so not subtracted (@ 089eca13, vllm/distributed/
 *    device_communicators/cuda_communicator.py CudaCommunicator.__init__, run
 *    for each group ensure_model_parallel_initialized makes: PyNcclCommunicator
 *    and CustomAllreduce when world_size > 1);
 *  - what grows after it, to the end of profile_run: the library modules the
 *    model's first forward loads (lazy module loading: PyTorch's default since
 *    1.13, CUDA's since 12.2): cuBLAS/cuBLASLt for the GEMMs and the attention
 *    backend's kernels (vllm/v1/attention/backends/, FlashAttention by default
 *    on CUDA): src/engine/context.c's cublas and kernels parts (63 and 9 MiB:
 *    FIT on the H200 run's PyTorch processes, EXTRAPOLATED to vLLM's);
 *    under eager loading every module is loaded before the snapshot: 0;
 *  - the CUDA graphs: compile_or_warm_up_model -> capture_model runs after
 *    initialize_from_config has allocated the pool; the graph memory it
 *    returns is only logged (a debug line): not subtracted;
 *  - the sampler's dummy run: in profile_run (_dummy_sampler_run), so in
 *    torch_peak_increase (profile_peak); compile_or_warm_up_model's second one
 *    runs after the pool is sized. */
static vc_status vllm_non_torch(const vc_options *o, const vc_gpu_spec *gpu, unsigned uses, vc_serve_result *r,
                                vc_error *err)
{
    vc_options c = *o;
    c.mode = VC_MODE_INFER;
    c.context = -1; /* the model's parts, not a given total */
    c.device = gpu->preset;
    vc_context_parts parts;
    int64_t total;
    /* the attention always runs in the backend's kernels, loaded at its first call; an attention-free model
     * (mamba2: r->state_mamba 2 set before, src/engine/serve.c mamba_alone's sources) calls none */
    vc_status st = vc_context_estimate(&c, uses | (r->state_mamba == 2 ? 0u : VC_USES_FLASH), &parts, &total,
                                       err); /* --cuda, --module-loading */
    if (st) return st;
    r->non_torch_cublas = parts.cublas;
    r->non_torch_kernels = parts.kernels;
    r->non_torch = parts.cublas + parts.kernels;
    return VC_OK;
}

/* vLLM's CUDA graphs and whether its KV sizing subtracts them (vllm-project/vllm
 * @ 9aaf83ef502fc37bc647f6e474314d48ba36cd1c, v0.21 and later):
 *  - vllm/config/vllm.py VllmConfig.__post_init__: enforce_eager sets
 *    cudagraph_mode NONE and no capture sizes; otherwise the optimization
 *    level's (-O2 by default, OPTIMIZATION_LEVEL_02) cudagraph_mode is
 *    FULL_AND_PIECEWISE;
 *  - _set_cudagraph_sizes: max_cudagraph_capture_size = min(max_num_seqs x
 *    decode_query_len (1 without speculative decoding) x 2, 512), at most
 *    max_num_batched_tokens; the sizes 1, 2, 4, then 8 to 248 by 8, then 256
 *    to that maximum by 16, those up to it, and max_num_batched_tokens
 *    when it is at most the maximum (sequence parallelism, which would keep
 *    multiples of tp only, is off: pass_config enable_sp = IS_DENSE = False);
 *  - vllm/v1/cudagraph_dispatcher.py initialize_cudagraph_keys: PIECEWISE
 *    (the mixed mode) one key per capture size; FULL (the decode mode, a
 *    separate routine) one per capture size of at most uniform_decode_query_len
 *    x max_num_seqs; the attention backends vramcalc's models run on CUDA
 *    (FlashAttention: ALWAYS or UNIFORM_BATCH, FlashInfer:
 *    UNIFORM_SINGLE_TOKEN_DECODE or better, Triton: ALWAYS,
 *    vllm/v1/attention/backends/) keep FULL decode graphs; LoRA cases: none;
 *  - vllm/v1/worker/gpu_worker.py Worker.determine_available_memory: on CUDA
 *    (current_platform.is_cuda(): not ROCm) with cudagraph_mode != NONE,
 *    model_runner.profile_cudagraph_memory(), subtracted when
 *    VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS (vllm/envs.py: "1" by
 *    default since v0.21.0, #38284; "0", opt-in, before it, from its
 *    introduction in #30515): available = requested_memory -
 *    non_kv_cache_memory - cudagraph_memory_estimate_applied;
 *  - vllm/v1/worker/gpu_model_runner.py profile_cudagraph_memory: per mode,
 *    captures the two largest graphs into a temporary pool with a minimal KV
 *    cache and reads mem_get_info around each; estimate = the largest
 *    first capture + sum over modes of (graphs - 1) x max(second capture,
 *    1 MiB). Those captures are measured on the GPU: src/engine/serve_graphs.c
 *    derives them from the capture's forward; this reports the counts and the 1 MiB-a-graph floor;
 *  - vllm/config/vllm.py use_v2_model_runner: DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES
 *    = {Qwen3ForCausalLM}, not MoE, not quantized, runs the V2 model runner,
 *    whose profile_cudagraph_memory (vllm/v1/worker/gpu/model_runner.py)
 *    returns 0: nothing subtracted. It still captures them after the pool is
 *    sized (vllm-project/vllm @ 0036d38de46c5d48fdedeb658dedc0fc0f95677d,
 *    vllm/v1/worker/gpu/model_runner.py GPUModelRunner.capture_model:
 *    cudagraph_manager.capture, measured as the free memory before less after
 *    and logged "Graph capturing finished in %.0f secs, took %.2f GiB";
 *    vllm/v1/worker/gpu/cudagraph_utils.py CudaGraphManager.capture: the mixed
 *    mode's (PIECEWISE) sizes, then FULL's uniform-decode sizes, each largest
 *    first (capture_graphs), all into one torch.cuda.graph_pool_handle()), and
 *    nothing bounds them: they come on top of gpu_memory_utilization's share.
 *    vramcalc counts its estimate (serve_graphs.c: the same single pool, the
 *    largest capture first) as their bytes there (vc__serve_graphs_why). */
static bool vllm_v2_runner(const vc_model *m)
{
    if (!m || !m->gen_json || !m->text || m->has_quant || m->cfg_quant.format != VC_WEIGHTS_DENSE) return false;
    cJSON *root = cJSON_ParseWithLength(m->text, m->text_len);
    if (!root) return false;
    bool v2 = false;
    const cJSON *a, *archs = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    if (cJSON_IsArray(archs))
        cJSON_ArrayForEach(a, archs) v2 |= cJSON_IsString(a) && !strcmp(a->valuestring, "Qwen3ForCausalLM");
    cJSON_Delete(root);
    return v2;
}

#define MIB (INT64_C(1) << 20)

/* why vLLM does or does not subtract its CUDA graphs (VC_SERVE_GRAPHS_*), above; GRPO's vllm_beside
 * (src/api/request.c) asks it before vc_serve, to give a measure only where vLLM subtracts it */
int vc__serve_graphs_why(const vc_model *m, const vc_options *o, const vc_gpu_spec *gpu)
{
    if (o->enforce_eager) return VC_SERVE_GRAPHS_EAGER;
    if (gpu->preset && strcmp(gpu->preset->vendor, "NVIDIA") != 0) return VC_SERVE_GRAPHS_NOT_CUDA;
    return vllm_v2_runner(m) ? VC_SERVE_GRAPHS_V2_RUNNER : VC_SERVE_GRAPHS_PROFILED;
}

static void vllm_graphs(const vc_model *m, const vc_options *o, const vc_gpu_spec *gpu, vc_serve_result *r)
{
    r->graphs_why = vc__serve_graphs_why(m, o, gpu);
    if (r->graphs_why == VC_SERVE_GRAPHS_EAGER) return;
    const int64_t seqs = r->max_num_seqs, tokens = r->max_num_batched_tokens;
    int64_t max = seqs < 256 ? 2 * seqs : 512;
    if (tokens < max) max = tokens;
    int64_t size[64];
    int n = 0;
    for (int64_t s = 1; s <= 4 && s <= max; s *= 2) size[n++] = s;
    for (int64_t s = 8; s < 256 && s <= max; s += 8) size[n++] = s;
    for (int64_t s = 256; s <= max; s += 16) size[n++] = s;
    bool has = false;
    for (int i = 0; i < n; i++) has |= size[i] == tokens;
    if (tokens <= max && !has) size[n++] = tokens; /* above every other size: max is at most tokens */
    for (int i = 0; i < n; i++) {
        r->graphs_piecewise++;
        r->graphs_largest_piecewise = size[i]; /* ascending */
        if (size[i] <= seqs) { /* uniform_decode_query_len 1 */
            r->graphs_full++;
            r->graphs_largest_full = size[i];
        }
    }
    r->graphs_floor = (r->graphs_piecewise - 1 + (r->graphs_full > 0 ? r->graphs_full - 1 : 0)) * MIB;
    r->graphs_profiled = r->graphs_why == VC_SERVE_GRAPHS_PROFILED;
}

/* What vLLM's memory snapshot already holds (vllm-project/vllm @ 9aaf83ef):
 *  - vllm/v1/worker/gpu_worker.py Worker.init_device: set_device, then
 *    init_worker_distributed_environment ("Initialize the distributed
 *    environment BEFORE taking memory snapshot"), then init_snapshot =
 *    MemorySnapshot() and requested_memory = total x gpu_memory_utilization
 *    (vllm/utils/mem_utils.py request_memory), which raises ValueError ("Free
 *    memory on device ... on startup is less than desired GPU memory
 *    utilization") when the snapshot's free memory is less;
 *  - the CUDA context before the first forward: src/engine/context.c's
 *    runtime, local memory and eager parts (the cuBLAS and attention kernel
 *    modules load in the profiling run: vllm_non_torch);
 *  - for tensor_parallel_size > 1, each model-parallel group with two or more
 *    ranks gets a CudaCommunicator (vllm/distributed/device_communicators/
 *    cuda_communicator.py CudaCommunicator.__init__); with only --tp, the TP
 *    group:
 *    . PyNcclCommunicator (pynccl.py __init__): its own NCCL communicator and
 *      a warm-up all_reduce of one float, which connects the ring (since
 *      NCCL 2.22 connections are made at an algorithm's first collective):
 *      src/engine/nccl.c's ring bytes for one communicator of tp ranks, and
 *      where the GPUs have NVLS (NVSwitch sm90+, NCCL_NVLS_ENABLE's default:
 *      vLLM sets no NCCL variable since it dropped its NCCL_CUMEM_ENABLE=0
 *      override, vllm-project/vllm#24141, so NCCL's cuMem and NVLS are on)
 *      the NVLS credits ncclNvlsSetup allocates at init (nccl.c); the NVLS
 *      buffers (ncclNvlsBufferSetup) come at the first NVLS all-reduce, after
 *      the snapshot: below;
 *    . SymmMemCommunicator (symm_mem.py, VLLM_ALLREDUCE_USE_SYMM_MEM "1" by
 *      default, CUDA only): where SYMM_MEM_ALL_REDUCE_MAX_SIZES
 *      (all_reduce_utils.py) has the compute capability and tp, a buffer of
 *      that many bytes (torch_symm_mem.empty(max_size // 2, bfloat16)), kept
 *      in self.buffer whether or not the rendezvous then finds multicast; it
 *      is usable (not disabled) only with multicast: the NVSwitch boards;
 *      torch's signal pad is not counted;
 *    . CustomAllreduce (custom_all_reduce.py __init__, default max_size
 *      8192 x 1024): world sizes 2, 4, 6, 8 on one node, and above 2 only
 *      fully connected by NVLink (the nvswitch topology), and with P2P (not
 *      --nccl-topology shm); max_size = min(CUSTOM_ALL_REDUCE_MAX_SIZES[cc][tp],
 *      8 MiB) when the symmetric-memory communicator is usable; it allocates
 *      meta_size() + max_size (csrc/custom_all_reduce.cu meta_size:
 *      sizeof(vllm::Signal) = two alignas(128) uint32[36][8] arrays and
 *      uint32[36], 2,560 B) and max_size with cudaMalloc, and 8 MiB of
 *      rank_data with torch.empty.
 *  - the profiling run's all-reduces (the row-parallel layers' outputs,
 *    max_num_batched_tokens x hidden_size in the model's dtype) take the
 *    first of CudaCommunicator.all_reduce's (cuda_communicator.py) that
 *    accepts them: the custom all-reduce (should_custom_ar: inp_size <
 *    max_size), the symmetric-memory one (should_use_symm_mem: bfloat16,
 *    inp_size < max_size, usable with multicast), else PyNcclCommunicator's
 *    ncclAllReduce; on NVLS GPUs NCCL's tuning takes NVLS for an all-reduce of
 *    that size (the training layouts' assumption too, src/engine/nccl.c) and
 *    sets up its buffers then: heads x nvlsChannels x 2 x 1 MiB, outside
 *    PyTorch's allocator after the snapshot, so in non_torch_increase
 *    (r->non_torch_nccl); the logits' all-gather runs on another
 *    communicator, torch.distributed's, made then (src/engine/serve_nccl.c,
 *    r->non_torch_logits_nccl). On AMD cards (ROCm): below. */
static const struct { int sm; int64_t symm[9], ca[9]; } vllm_ar_sizes[] = {
    /* all_reduce_utils.py SYMM_MEM_ALL_REDUCE_MAX_SIZES and CUSTOM_ALL_REDUCE_MAX_SIZES, by world size */
    {90, {[2] = 64 * MIB, [4] = 32 * MIB, [6] = 64 * MIB, [8] = 64 * MIB},
     {[2] = 64 * MIB, [4] = 32 * MIB, [6] = MIB / 2, [8] = MIB / 4}},
    {100, {[2] = 8 * MIB, [4] = 32 * MIB, [6] = 128 * MIB, [8] = 128 * MIB},
     {[2] = 2 * MIB, [4] = 2 * MIB, [6] = MIB, [8] = MIB}},
    {103, {[2] = 4 * MIB, [4] = 32 * MIB, [6] = 32 * MIB, [8] = 64 * MIB},
     {[2] = 4 * MIB, [4] = 4 * MIB, [6] = 8 * MIB, [8] = 4 * MIB}},
};
#define VLLM_CA_META 2560 /* sizeof(vllm::Signal) */
#define VLLM_CA_MAX (INT64_C(8192) * 1024)
#define VLLM_CA_RANK_DATA (INT64_C(8) * 1024 * 1024)

/* vLLM's TP group on AMD cards (ROCm, issue 27; vllm-project/vllm):
 *  - the ROCm platform's device communicator is CudaCommunicator too
 *    (vllm/platforms/rocm.py @ e2a00c7b RocmPlatform.get_device_communicator_cls);
 *    its __init__ (cuda_communicator.py @ 089eca13) makes on ROCm:
 *    . PyNcclCommunicator over RCCL (torch's ROCm build loads librccl as its
 *      NCCL), before the snapshot: src/engine/nccl.c's RCCL bytes for one
 *      communicator of tp ranks (ROCm/rccl@0cbce2a7: 8 MiB a channel; on one
 *      MI300X node 32, 24, 56 channels for 2, 4, 8 ranks, the trees connected
 *      at init beside the rings, no runtime connect), no NVLS;
 *    . no SymmMemCommunicator (VLLM_ALLREDUCE_USE_SYMM_MEM and
 *      current_platform.is_cuda(): CUDA only);
 *    . CustomAllreduce where _ENABLE_CUSTOM_ALL_REDUCE: vllm/config/
 *      parallel.py @ 00193b82 ParallelConfig._verify_args sets
 *      disable_custom_all_reduce unless current_platform.use_custom_allreduce(),
 *      which on ROCm is the MI300 series only (rocm.py: gcnArchName gfx94 or
 *      gfx95: mi300x here, not MI210 or MI250X, gfx90a); custom_all_reduce.py
 *      @ 00d618aa CustomAllreduce.__init__: world sizes 2, 4, 6, 8 on one node,
 *      above 2 fully connected (RocmPlatform.is_fully_connected: every pair one
 *      xGMI hop, an 8 x MI300X board; --nccl-topology pcie says otherwise);
 *      max_size stays 8192 x 1024 (CUSTOM_ALL_REDUCE_MAX_SIZES applies only on
 *      CUDA with symmetric memory); on ROCm _complete_init runs at once (no
 *      P2P check): meta_size() + max_size and max_size through
 *      create_shared_buffer, 8 MiB of rank_data with torch.empty, as on CUDA
 *      (meta_size: sizeof(vllm::Signal), 2,560 B, the CUDA build's figure);
 *    . QuickAllReduce (ROCm, with the custom all-reduce): init_quick_all_reduce
 *      (quick_all_reduce.py @ 02cdf876) returns before init_custom_qr when
 *      VLLM_ROCM_QUICK_REDUCE_QUANTIZATION is "NONE", vllm/envs.py's default:
 *      disabled, nothing allocated;
 *  - the profiling run's all-reduces (max_num_batched_tokens x hidden_size in
 *    the model's dtype): quick reduce disabled, the custom all-reduce where
 *    inp_size < max_size (8 MiB), else PyNccl's RCCL all-reduce, whose rings
 *    and trees are already connected (no NVLS): nothing after the snapshot;
 *  - the logits' all-gather: DeviceCommunicatorBase.all_gather on ROCm too,
 *    torch.distributed's ProcessGroupNCCL (RCCL) over the TP group, its own
 *    communicator made at that first collective, in the profiling run: its
 *    RCCL rings and trees in the non-torch increase (serve_nccl.c).
 * Not counted: RCCL's MSCCL connections (nccl.c "Not counted"), the
 * non-torch increase's rocBLAS and kernels (context.c: not modelled on AMD). */
/* hidden_size of the config vLLM reads (0 when not known): the profiling run's all-reduce is tokens x hidden */
static int64_t vllm_hidden(const vc_model *m)
{
    int64_t hidden = 0;
    cJSON *root = m->gen_json && m->text ? cJSON_ParseWithLength(m->text, m->text_len) : NULL;
    const cJSON *h = root ? cJSON_GetObjectItemCaseSensitive(vc__vllm_text_config(root), "hidden_size") : NULL;
    const cJSON *mt = root ? cJSON_GetObjectItemCaseSensitive(root, "model_type") : NULL;
    if (!h && cJSON_IsString(mt) && !strcmp(mt->valuestring, "whisper")) /* WhisperConfig.attribute_map: hidden_size is
                                                                              * d_model (src/engine/serve_encdec.c) */
        h = cJSON_GetObjectItemCaseSensitive(root, "d_model");
    if (cJSON_IsNumber(h) && h->valuedouble >= 1 && h->valuedouble < 1e9) hidden = (int64_t)h->valuedouble;
    cJSON_Delete(root);
    return hidden;
}

static vc_status vllm_snapshot(int64_t hidden, vc_dtype act, const vc_options *o, const vc_gpu_spec *gpu, unsigned uses,
                               vc_serve_result *r, vc_error *err)
{
    vc_options c = *o;
    c.mode = VC_MODE_INFER;
    c.context = -1;
    c.device = gpu->preset;
    vc_context_parts parts;
    int64_t total;
    vc_status st = vc_context_estimate(&c, uses | VC_USES_FLASH, &parts, &total, err);
    if (st) return st;
    r->snapshot_context = parts.runtime + parts.local_memory + parts.eager;
    const bool nvidia = !gpu->preset || !strcmp(gpu->preset->vendor, "NVIDIA");
    const bool amd = gpu->preset && !strcmp(gpu->preset->vendor, "AMD"); /* ROCm: RCCL (the comment above) */
    const int64_t tp = o->tp;
    if (tp > 1 && amd) {
        c.gpus = tp;
        c.pp = 1;
        c.ep = 1;
        c.nccl_stages = 1;
        vc_nccl_info n;
        vc_nccl_per_gpu(&c, &n); /* RCCL: rings and trees, all connected at init; no NVLS */
        r->snapshot_nccl = n.ring_bytes;
        const int64_t gpn = o->gpus_per_node > 0 ? o->gpus_per_node : 8;
        if (!strcmp(gpu->preset->name, "mi300x") && (tp == 2 || tp == 4 || tp == 6 || tp == 8) && tp <= gpn &&
            (tp == 2 || o->nccl_topology == VC_NCCL_TOPO_AUTO))
            r->snapshot_custom_ar = VLLM_CA_META + VLLM_CA_MAX + VLLM_CA_MAX + VLLM_CA_RANK_DATA;
        r->non_torch_logits_nccl = vc__vllm_logits_nccl(&n); /* torch.distributed's RCCL communicator (serve_nccl.c) */
        r->non_torch += r->non_torch_logits_nccl;
    }
    if (tp > 1 && nvidia) {
        c.gpus = tp;
        c.pp = 1;
        c.ep = 1;
        c.nccl_stages = 1;
        vc_nccl_info n;
        vc_nccl_per_gpu(&c, &n);
        r->snapshot_nvls_credits = n.nvls_credit_bytes;
        r->snapshot_nccl = n.ring_bytes + n.nvls_credit_bytes;
        const int sm = gpu->preset && gpu->preset->sm ? gpu->preset->sm : 80;
        const vc_nccl_topology t = (vc_nccl_topology)n.topology;
        int row = -1;
        for (int i = 0; i < (int)(sizeof vllm_ar_sizes / sizeof *vllm_ar_sizes); i++)
            if (vllm_ar_sizes[i].sm == sm) row = i;
        if (row >= 0 && tp <= 8) r->snapshot_symm_mem = vllm_ar_sizes[row].symm[tp];
        const bool symm_usable = r->snapshot_symm_mem > 0 && t == VC_NCCL_TOPO_NVSWITCH; /* multicast */
        int64_t ca_max = 0; /* the custom all-reduce's max_size; 0: none */
        const int64_t gpn = o->gpus_per_node > 0 ? o->gpus_per_node : 8;
        if ((tp == 2 || tp == 4 || tp == 6 || tp == 8) && tp <= gpn && t != VC_NCCL_TOPO_SHM &&
            (tp == 2 || t == VC_NCCL_TOPO_NVSWITCH)) {
            int64_t max = VLLM_CA_MAX;
            if (symm_usable && vllm_ar_sizes[row].ca[tp] < max) max = vllm_ar_sizes[row].ca[tp];
            r->snapshot_custom_ar = VLLM_CA_META + max + max + VLLM_CA_RANK_DATA;
            ca_max = max;
        }
        /* the profiling run's all-reduce: the custom all-reduce's, the symmetric memory's, else NCCL's */
        int64_t size;
        if (__builtin_mul_overflow(r->max_num_batched_tokens, (int64_t)vc_dtype_size(act), &size) ||
            __builtin_mul_overflow(size, hidden, &size))
            size = INT64_MAX;
        const bool ca = ca_max > 0 && size < ca_max;
        const bool symm = symm_usable && act == VC_DT_BF16 && size < r->snapshot_symm_mem;
        if (hidden > 0 && !ca && !symm) r->non_torch_nccl = n.nvls_bytes - n.nvls_credit_bytes;
        r->non_torch += r->non_torch_nccl;
        r->non_torch_logits_nccl = vc__vllm_logits_nccl(&n); /* the logits' all-gather (serve_nccl.c) */
        r->non_torch += r->non_torch_logits_nccl;
    }
    return VC_OK;
}

/* vLLM's MXFP4 MoE backend (vllm-project/vllm @ 007d5005, vllm/model_executor/layers/quantization/mxfp4.py
 * get_mxfp4_backend, without LoRA (--lora with --serve is refused), with vLLM's defaults: FlashInfer installed
 * (flashinfer-python is in requirements/cuda.txt: read at 009d5248, not stored at 007d5005), triton_kernels
 * importable on Hopper and torch >= 2.8 (as the Triton backend on H100 already assumed here),
 * vllm/envs.py's VLLM_USE_FLASHINFER_MOE_MXFP4_BF16, _MXFP4_MXFP8 and _MXFP4_MXFP8_CUTLASS "0",
 * VLLM_MXFP4_USE_MARLIN unset) on a preset, and what Mxfp4MoEMethod.create_weights pads a rank's
 * intermediate_size_per_partition (I) and hidden_size (H) to:
 *  - compute capability 9.0 (H100, H200): SM90_FI_MXFP4_BF16 only with VLLM_USE_FLASHINFER_MOE_MXFP4_BF16=1; else
 *    TRITON, triton_kernels_supported ((9, 0) <= capability < (11, 0)): the last else, round_up(I, 64), H kept;
 *  - the 10.x family (B200: is_device_capability_family(100), vllm/platforms/interface.py: capability.to_int()
 *    // 10 == 100 // 10) with FlashInfer: SM100_FI_MXFP4_BF16,
 *    round_up(I, 256) and round_up(H, 256);
 *  - 8.x (A100, A10, L4, L40S, RTX 30xx / 40xx, RTX A6000) and 12.0 (RTX 50xx: not family 100, and above
 *    triton_kernels' (11, 0)): MARLIN, round_up(I, 128) and round_up(H, 256);
 *  - below 8.0 (V100, T4): Mxfp4Config.get_min_capability() is 80, and vLLM refuses the checkpoint before any
 *    layer is made (vllm/config/vllm.py _get_quantization_config; src/policy/quant.c vc__quant_vllm_check);
 *    MARLIN's padding here so that the split loads and that refusal is the one given;
 *  - ROCm (MI210, MI250X, MI300X): TRITON (is_rocm() and has_triton_kernels()), create_weights' is_rocm()
 *    branch: get_padding_alignment() (quantization/utils/mxfp4_utils.py, read at 01b817db: 256 on gfx950,
 *    else 128; none of the presets is gfx950) for both I and H.
 * The weights each backend keeps after process_weights_after_loading, with H's padding: src/policy/quant.c
 * mxfp4_vllm_tensors. No preset (a size): VC_MXFP4_NONE, the experts as the checkpoint splits them. */
int vc__vllm_mxfp4_backend(const vc_gpu *dev)
{
    if (!dev) return VC_MXFP4_NONE;
    if (strcmp(dev->vendor, "NVIDIA")) return VC_MXFP4_ROCM_TRITON;
    if (dev->sm == 90) return VC_MXFP4_TRITON;
    if (dev->sm / 10 == 10) return VC_MXFP4_SM100_FI_BF16;
    return VC_MXFP4_MARLIN;
}

int vc__vllm_mxfp4_pad(int backend, int hidden)
{
    static const int inter[] = {[VC_MXFP4_TRITON] = 64, [VC_MXFP4_SM100_FI_BF16] = 256, [VC_MXFP4_MARLIN] = 128,
                                [VC_MXFP4_ROCM_TRITON] = 128};
    static const int hid[] = {[VC_MXFP4_SM100_FI_BF16] = 256, [VC_MXFP4_MARLIN] = 256, [VC_MXFP4_ROCM_TRITON] = 128};
    if (backend <= VC_MXFP4_NONE || backend > VC_MXFP4_ROCM_TRITON) return 0;
    return hidden ? hid[backend] : inter[backend];
}

const char *vc__vllm_mxfp4_name(int backend)
{
    static const char *const names[] = {"none", "TRITON", "SM100_FI_MXFP4_BF16", "MARLIN", "TRITON (ROCm)"};
    return backend >= VC_MXFP4_NONE && backend <= VC_MXFP4_ROCM_TRITON ? names[backend] : "none";
}

int vc__vllm_mxfp4_align(const vc_gpu_spec *gpu)
{
    return gpu ? vc__vllm_mxfp4_pad(vc__vllm_mxfp4_backend(gpu->preset), 0) : 0;
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static void gib(int64_t v, char *buf, size_t n) { snprintf(buf, n, "%.2f GiB", (double)v / (double)(INT64_C(1) << 30)); }

/* The hybrid KV cache of a model with Gated DeltaNet layers (qwen3_next, qwen3_5, qwen3_5_moe) as vLLM
 * sizes it without prefix caching for the Mamba-like layers (mamba_cache_mode "none"):
 *  - each DeltaNet layer keeps, per request, a conv state and a temporal (recurrent) state: MambaSpec
 *    (vllm-project/vllm @ bc8282e6, vllm/v1/kv_cache_interface.py: page_size_bytes = the sum of the
 *    states' prod(shape) x dtype size, or page_size_padded; max_memory_usage_bytes with
 *    mamba_cache_mode "none": one page per request), their shapes layers/deltanet.c vc__gdn_state
 *    (mamba_utils.py @ 2afe1e85 gated_delta_net_state_shape). Their dtype: Qwen3NextForCausalLM's
 *    get_mamba_state_dtype_from_config, gated_delta_net_state_dtype(model dtype, mamba_cache_dtype
 *    "auto"): the model's dtype for both (mamba_utils.py @ 2afe1e85); Qwen3.5's
 *    (vllm/model_executor/models/qwen3_5.py @ 36c110bd Qwen3_5ForConditionalGeneration
 *    .get_mamba_state_dtype_from_config: "Qwen3.5 uses float32 for mamba cache dtype"): float32 for both;
 *  - the attention layers keep paged K and V, and their block size is raised until one attention
 *    page holds a state page (vllm/model_executor/models/config.py @ 1936cf38,
 *    HybridAttentionMambaModelConfig.verify_and_update_config, without prefix caching:
 *    attn_block_size = 16 x cdiv(mamba_page_size, 16 x attn_page_size_1_token), kept when the user's
 *    block_size is larger; the state page is then padded to the attention page, mamba_page_size_padded);
 *  - one page size for every layer: the layers of each kind in groups of group_size (the fewest layers
 *    of a kind, or the most when under 1.5 times the fewest: _get_kv_cache_groups_uniform_page_size in
 *    vllm/v1/core/kv_cache_utils.py, as for sliding and full layers above), group_size KVCacheTensors a
 *    layer of every group shares: num_blocks = available // page_size // group_size (get_num_blocks);
 *    get_max_concurrency_for_kv_cache_config: a request needs cdiv(tokens, block_size) blocks per
 *    attention group and one block per DeltaNet group.
 * With prefix caching on (vLLM's mamba_cache_mode "align" for models that support it), block sizes and
 * state pages per request differ: not modelled (docs/inference.md). */
/* The same page-size unification serves the MambaMixer2 layers of granitemoehybrid, nemotron_h and falcon_h1
 * (mamba_state below): `state`, one layer's state page in bytes, from either kind. */
static vc_status hybrid_state(vc_serve_result *r, const vc_serve_options *so, vc_dtype act, int64_t n_gdn, int64_t state,
                              int64_t n_attn, int nkind, int64_t layer_el, vc_error *err)
{
    if (nkind > 1 || layer_el <= 0)
        return vc_set_error(err, VC_ERR_USAGE, O("serve"), "%s layers beside attention layers of differing "
                            "kinds or sizes: vLLM's hybrid cache for that mix is not modelled",
                            r->state_mamba == 3 ? "ShortConv" : r->state_mamba ? "Mamba2" : "Gated DeltaNet");
    int64_t one_tok, page, blk, t;
    if (__builtin_mul_overflow(layer_el, (int64_t)kv_size(so->kv_cache_dtype, act), &one_tok) ||
        __builtin_mul_overflow(16, one_tok, &t))
        return vc_set_error(err, VC_ERR_OVERFLOW, O("serve"), "a DeltaNet state page passes 2^63 bytes");
    blk = 16 * cdiv(state, t); /* attn_block_size */
    if (so->block_size > blk) blk = so->block_size;
    const int64_t g = (double)(n_gdn > n_attn ? n_gdn : n_attn) < 1.5 * (double)(n_gdn < n_attn ? n_gdn : n_attn)
                          ? (n_gdn > n_attn ? n_gdn : n_attn)
                          : (n_gdn < n_attn ? n_gdn : n_attn);
    const int64_t ga = cdiv(n_attn, g), gs = cdiv(n_gdn, g);
    if (__builtin_mul_overflow(blk, one_tok, &page) || __builtin_mul_overflow(page, g, &r->page_bytes))
        return vc_set_error(err, VC_ERR_OVERFLOW, O("serve"), "a KV block passes 2^63 bytes");
    r->block_size = blk;
    r->state_layers = n_gdn;
    r->state_bytes = state;
    r->blocks = r->kv_cache / r->page_bytes;
    r->tokens = r->blocks / (ga + gs) * blk;
    r->concurrency = r->blocks / (ga * cdiv(r->request_tokens, blk) + gs);
    return VC_OK;
}

static vc_status gdn_state(vc_serve_result *r, const vc_serve_options *so, vc_dtype act, int64_t n_gdn, int64_t conv,
                           int64_t ssm, bool f32, int64_t n_attn, int nkind, int64_t layer_el, vc_error *err)
{
    const int64_t sdt = f32 ? 4 : vc_dtype_size(act);
    int64_t state;
    if (__builtin_mul_overflow(conv + ssm, sdt, &state))
        return vc_set_error(err, VC_ERR_OVERFLOW, O("serve"), "a DeltaNet state page passes 2^63 bytes");
    return hybrid_state(r, so, act, n_gdn, state, n_attn, nkind, layer_el, err);
}

/* granitemoehybrid (Granite 4.0-H) under vLLM: GraniteMoeHybridForCausalLM is IsHybrid (vllm-project/vllm @
 * 0195c9ec6ea9cda412d1c69034fc5926a2c29528, vllm/model_executor/models/granitemoehybrid.py): its
 * GraniteMoeHybridMambaDecoderLayer's MambaMixer2 keeps, per request, a conv state and a temporal (SSM) state
 * (get_mamba_state_shape_from_config -> MambaStateShapeCalculator.mamba2_state_shape, vllm/model_executor/
 * layers/mamba/mamba_utils.py @ 2afe1e85: (d_conv - 1, intermediate + 2 n_groups d_state) and (heads,
 * head_dim, d_state), layers/mamba2.c vc__mamba2_vllm_state), each in the dtype of
 * get_mamba_state_dtype_from_config -> mamba2_state_dtype -> _mamba_state_dtype: the conv state's
 * get_kv_cache_torch_dtype(mamba_cache_dtype "auto", model dtype), the model's dtype; the temporal state's
 * mamba_ssm_cache_dtype "auto": the conv state's. Both vLLM defaults; --kv-cache-dtype does not change them
 * (cache_dtype is the attention layers'). Then the attention layers' pages and the state pages are unified as
 * for Gated DeltaNet (hybrid_state above; HybridAttentionMambaModelConfig.verify_and_update_config, without
 * prefix caching). */
/* nemotron_h's NemotronHForCausalLM and falcon_h1's FalconH1ForCausalLM (vllm/model_executor/models/nemotron_h.py @
 * 8744bb09, falcon_h1.py @ 01894272: IsHybrid, MambaMixer2 layers) are sized the same way, nemotron_h's temporal state
 * in ssm_size bytes an element (nemotron_h_ssm_dtype below; 0: the model's dtype). One layer's state page in bytes. */
static vc_status mamba_page(vc_dtype act, int64_t conv, int64_t ssm, int ssm_size, int64_t *state, vc_error *err)
{
    const int64_t es = vc_dtype_size(act), ss = ssm_size ? ssm_size : es;
    if (conv > INT64_MAX / 8 / es || ssm > INT64_MAX / 8 / ss || __builtin_add_overflow(conv * es, ssm * ss, state))
        return vc_set_error(err, VC_ERR_OVERFLOW, O("serve"), "a Mamba state page passes 2^63 bytes");
    return VC_OK;
}

static vc_status mamba_state(vc_serve_result *r, const vc_serve_options *so, vc_dtype act, int64_t n_mamba, int64_t conv,
                             int64_t ssm, int ssm_size, int64_t n_attn, int nkind, int64_t layer_el, vc_error *err)
{
    int64_t state = 0;
    vc_status st = mamba_page(act, conv, ssm, ssm_size, &state, err);
    if (st) return st;
    r->state_mamba = 1;
    return hybrid_state(r, so, act, n_mamba, state, n_attn, nkind, layer_el, err);
}

/* mamba2 (Mamba2ForCausalLM, vllm-project/vllm @ 055e47c28003156421365af985d676fc921cb075, vllm/model_executor/models/
 * mamba2.py: IsAttentionFree, get_mamba_state_shape_from_config -> mamba2_state_shape with intermediate expand x
 * hidden_size, get_mamba_state_dtype_from_config -> mamba2_state_dtype: the model's dtype for both states under
 * vLLM's defaults) has no attention layer: MODELS_CONFIG_MAP gives Mamba2ForCausalLM MambaModelConfig alone
 * (vllm/model_executor/models/config.py @ 0144dd5b0d2d9ef9ac2651a3ab6efa83d0497ea9: prefix caching off, no
 * HybridAttentionMambaModelConfig, so no mamba_page_size_padded), and mamba_block_size is max_model_len
 * (mamba_cache_mode "none"); every layer's MambaSpec (vllm/model_executor/layers/mamba/abstract.py @ 00b08dc4
 * MambaBase.get_kv_cache_spec) is the same, so get_kv_cache_groups (vllm/v1/core/kv_cache_utils.py @
 * 001cabc1be16a59a70d720ed61a13b678c060a18) makes one group of every layer (_get_kv_cache_groups_uniform_spec):
 * get_num_blocks: available // state page // layers; _report_kv_cache_config's tokens num_blocks x block_size
 * (max_model_len, the request's tokens here); get_max_concurrency_for_kv_cache_config: one block a request
 * (MambaSpec.max_memory_usage_bytes with mamba_cache_mode "none": one page). --kv-cache-dtype does not apply
 * (the states' dtype is mamba_cache_dtype's); the scheduler runs at most max_num_seqs of those requests at once. */
static vc_status mamba_alone(vc_serve_result *r, vc_dtype act, int64_t n_mamba, int64_t conv, int64_t ssm, vc_error *err)
{
    int64_t state = 0;
    vc_status st = mamba_page(act, conv, ssm, 0, &state, err);
    if (st) return st;
    if (__builtin_mul_overflow(state, n_mamba, &r->page_bytes))
        return vc_set_error(err, VC_ERR_OVERFLOW, O("serve"), "a Mamba state block passes 2^63 bytes");
    r->state_mamba = 2;
    r->state_layers = n_mamba;
    r->state_bytes = state;
    r->block_size = r->request_tokens;
    r->blocks = r->kv_cache / r->page_bytes;
    r->concurrency = r->blocks;
    if (__builtin_mul_overflow(r->blocks, r->request_tokens, &r->tokens))
        return vc_set_error(err, VC_ERR_OVERFLOW, O("serve"), "the cache's tokens pass 2^63");
    return VC_OK;
}

/* nemotron_h (NemotronHForCausalLM): MODELS_CONFIG_MAP's NemotronHForCausalLMConfig.verify_and_update_config
 * (vllm/model_executor/models/config.py, the stored version with DEFAULT_MAMBA_SSM_CACHE_DTYPE = "float32": "Only
 * float32 is known to have no accuracy issues by default"; its commit was not shown by the reader) sets
 * mamba_ssm_cache_dtype "auto" to the config's mamba_ssm_cache_dtype, float32 when the key is absent, and
 * VllmConfig.try_verify_and_update_config (vllm/config/vllm.py) runs it before HybridAttentionMambaModelConfig, so
 * the temporal state's page is in that dtype (NemotronHForCausalLM.get_mamba_state_dtype_from_config ->
 * mamba2_state_dtype, vllm/model_executor/models/nemotron_h.py @ 8744bb0924a53c0d16867426b8b17428d41e4002; the conv
 * state keeps the model's dtype). *size: 4 or 2 bytes, 0 for another model (the model's dtype). */
static vc_status nemotron_h_ssm_dtype(const vc_model *m, int *size, vc_error *err)
{
    *size = 0;
    cJSON *root = m->gen_json && m->text ? cJSON_ParseWithLength(m->text, m->text_len) : NULL;
    const cJSON *mt = root ? cJSON_GetObjectItemCaseSensitive(root, "model_type") : NULL;
    if (cJSON_IsString(mt) && !strcmp(mt->valuestring, "nemotron_h")) {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "mamba_ssm_cache_dtype");
        const char *s = cJSON_IsString(d) ? d->valuestring : d ? "" : "float32";
        *size = !strcmp(s, "float32") ? 4 : !strcmp(s, "bfloat16") || !strcmp(s, "float16") ? 2 : -1;
    }
    cJSON_Delete(root);
    if (*size < 0)
        return vc_set_error(err, VC_ERR_USAGE, "mamba_ssm_cache_dtype", "expected \"float32\", \"bfloat16\" or "
                            "\"float16\" (vLLM's temporal state dtype for nemotron_h)");
    return VC_OK;
}

/* lfm2 and lfm2_moe (LFM2, LFM2-MoE) under vLLM: Lfm2ForCausalLM and Lfm2MoeForCausalLM are IsHybrid
 * (vllm-project/vllm, vllm/model_executor/models/lfm2.py @ 055e47c28003156421365af985d676fc921cb075, lfm2_moe.py @
 * 030ea52effcb05071543c8c42b8f0145e94cee43): each ShortConv layer (layers/shortconv.c) keeps, per request, one conv
 * state (get_mamba_state_shape_from_config -> MambaStateShapeCalculator.short_conv_state_shape, mamba_utils.py @
 * 2afe1e85: (conv_L_cache - 1, conv_dim) for lfm2, (conv_L_cache - 1, hidden_size) for lfm2_moe;
 * vc__shortconv_vllm_state) in get_mamba_state_dtype_from_config's dtype -> short_conv_state_dtype ->
 * get_kv_cache_torch_dtype(mamba_cache_dtype "auto", model dtype): the model's dtype (--kv-cache-dtype is the
 * attention layers'). Its MambaSpec page is that state alone, unified with the attention layers' pages as for
 * Gated DeltaNet and Mamba2 (hybrid_state above). lfm2.py's __init__ refuses mamba_cache_mode "all"; "align"
 * (prefix caching) is not modelled, as for the other hybrids. */
static vc_status shortconv_state(vc_serve_result *r, const vc_serve_options *so, vc_dtype act, int64_t n_sc, int64_t conv,
                                 int64_t n_attn, int nkind, int64_t layer_el, vc_error *err)
{
    int64_t state;
    if (__builtin_mul_overflow(conv, (int64_t)vc_dtype_size(act), &state))
        return vc_set_error(err, VC_ERR_OVERFLOW, O("serve"), "a ShortConv state page passes 2^63 bytes");
    r->state_mamba = 3;
    return hybrid_state(r, so, act, n_sc, state, n_attn, nkind, layer_el, err);
}

/* Gemma 4 (gemma4_text, gemma4) under vLLM, vllm-project/vllm @ 001cabc1be16a59a70d720ed61a13b678c060a18:
 *  - vllm/model_executor/models/gemma4.py Gemma4DecoderLayer.__init__: head_dim global_head_dim on the
 *    full_attention layers, head_dim on the sliding ones; num_global_key_value_heads kv heads on a full
 *    layer under attention_k_eq_v, num_key_value_heads otherwise (the model's RotaryAttention layers hold
 *    the same, vc__ra_kv_layout); Gemma4Attention.__init__: one QKVParallelLinear(hidden, head_dim,
 *    heads, kv heads, bias=attention_bias) on every layer ("k_eq_v layers load K weights into both K and
 *    V slots"; a kv-shared layer builds it too, and k_norm of head_dim), where transformers'
 *    Gemma4TextAttention has no v_proj under k_eq_v and no k_proj, v_proj, k_norm on a kv-shared layer:
 *    vLLM's weights hold those slots more (gemma4_qkv_extra);
 *  - Gemma4Attention.__init__: a layer among the last num_kv_shared_layers gets
 *    kv_sharing_target_layer_name (the last earlier layer of its type), and vLLM's
 *    GPUModelRunner.get_kv_cache_spec (vllm/v1/worker/gpu_model_runner.py) skips such a layer ("We skip
 *    creating a KVCacheSpec for it"): it has no page of its own;
 *  - each other layer's Attention(per_layer_sliding_window = sliding_window on the sliding layers) is a
 *    SlidingWindowSpec or FullAttentionSpec (vllm/v1/kv_cache_interface.py AttentionSpec
 *    .real_page_size_bytes: 2 x block_size x num_kv_heads x head_size x dtype size; the keys-as-values
 *    layers keep both, the V slot a copy of K);
 *  - vllm/v1/core/kv_cache_utils.py get_kv_cache_groups: neither one spec nor one type (sliding and
 *    full), so unify_kv_cache_spec_page_size: the largest page stays, a smaller one's block_size is
 *    multiplied by max_page // page (NotImplementedError when it does not divide); then
 *    _get_kv_cache_groups_uniform_page_size: the layers of each spec in groups of group_size (the fewest
 *    layers of a spec, the most when under 1.5 times the fewest); get_kv_cache_config_from_groups:
 *    num_blocks = available // page_size // group_size (get_num_blocks); _report_kv_cache_config: tokens
 *    num_blocks // groups x the smallest block_size; get_max_concurrency_for_kv_cache_config: num_blocks /
 *    cdiv(sum of the groups' max_memory_usage_bytes, page_size): per full group cdiv(max_model_len,
 *    block_size) pages (FullAttentionSpec), per sliding group cdiv(min(sliding_window - 1 +
 *    max_num_batched_tokens, max_model_len), block_size) + 1 (SlidingWindowSpec), each at its own
 *    block_size.
 * Not modelled (docs/inference.md "Gemma 4: pages of two sizes, kv-shared layers"): the multimodal processor's encoder profiling run for the
 * towers, the per-token-head quantized caches' page padding (kv_cache_page_size_padded), the attention
 * backend vLLM picks for the 512-wide heads. */
static bool is_gemma4_attn(const vc_inst *in) { return !strcmp(in->kind->name, "RotaryAttention") && vc__ra_v_norm(in->cfg); }

/* the elements vLLM's qkv_proj and k_norm hold beyond the model's (the V slot of a keys-as-values layer,
 * K, V and k_norm of a kv-shared one), from the config vLLM reads (hf_text_config) */
static int64_t gemma4_qkv_extra(const vc_model *m)
{
    if (!m->gen_json || !m->text) return 0;
    cJSON *root = cJSON_ParseWithLength(m->text, m->text_len);
    if (!root) return 0;
    const cJSON *tc = vc__vllm_text_config(root);
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(tc, "hidden_size");
    const bool keqv = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(tc, "attention_k_eq_v"));
    const bool bias = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(tc, "attention_bias"));
    const int64_t H = cJSON_IsNumber(h) ? (int64_t)h->valuedouble : 0;
    cJSON_Delete(root);
    int64_t n = 0;
    for (size_t i = 0; i < m->ninst; i++) {
        if (!is_gemma4_attn(&m->inst[i])) continue;
        int64_t kv, d, w;
        bool shared;
        vc__ra_kv_layout(m->inst[i].cfg, &kv, &d, &w, &shared);
        const int64_t slots = shared ? 2 : keqv && w == 0 ? 1 : 0;
        n += slots * kv * d * (H + (bias ? 1 : 0)) + (shared ? d : 0);
    }
    return n;
}

/* Gemma4ForConditionalGeneration (a config with text_config: model_type gemma4) pre-allocates, with the
 * model, a per-layer-embeddings buffer for CUDA graphs (vllm-project/vllm @ 01bae2190e1c298115941f50bd6ed508216f24e7,
 * vllm/model_executor/models/gemma4_mm.py Gemma4ForConditionalGeneration.__init__: torch.zeros(
 * max_num_batched_tokens, num_hidden_layers, hidden_size_per_layer_input, dtype=the model's) when
 * hidden_size_per_layer_input is > 0): elements, counted with the weights ("Model loading took"). Its towers
 * (vision_tower, audio_tower when audio_config is set) are loaded as the model's frozen towers are.
 * -1: the buffer passes 2^63 elements. */
static int64_t gemma4_ple_buffer(const vc_model *m, int64_t max_num_batched_tokens)
{
    if (!m->gen_json || !m->text) return 0;
    cJSON *root = cJSON_ParseWithLength(m->text, m->text_len);
    if (!root) return 0;
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(root, "text_config");
    const cJSON *p = cJSON_IsObject(tc) ? cJSON_GetObjectItemCaseSensitive(tc, "hidden_size_per_layer_input") : NULL;
    const cJSON *l = cJSON_IsObject(tc) ? cJSON_GetObjectItemCaseSensitive(tc, "num_hidden_layers") : NULL;
    int64_t n = 0;
    if (cJSON_IsNumber(p) && p->valuedouble > 0 && cJSON_IsNumber(l) && l->valuedouble > 0 && /* checked by the loader */
        (__builtin_mul_overflow(max_num_batched_tokens, (int64_t)l->valuedouble, &n) ||
         __builtin_mul_overflow(n, (int64_t)p->valuedouble, &n)))
        n = -1;
    cJSON_Delete(root);
    return n;
}

/* Gemma 4's second rotary cache: vLLM builds one get_rope per layer type (Gemma4Attention.__init__,
 * rope_parameters[layer_type]; _ROPE_DICT keeps one per key), the sliding layers' plain RotaryEmbedding
 * (vllm_rope_cache counts it: the model's first RotaryEmbedding) and the full layers' "proportional"
 * Gemma4RotaryEmbedding, whose cos/sin cache is [max_position_embeddings, head_size] whatever
 * partial_rotary_factor (vllm-project/vllm @ 41c5903d049b80b83a6e570f52f0f55e31316e49,
 * vllm/model_executor/layers/rotary_embedding/gemma4_rope.py Gemma4RotaryEmbedding.__init__: rotary_dim =
 * head_size, the non-rotated pairs zero frequencies). The model's rotary layers after the first hold that
 * head_size / 2 in their inv_freq (hf_gemma4.c: the proportional rope's cos / sin of the full
 * global_head_dim): elements of those caches. */
static int64_t gemma4_rope_rest(const vc_model *m)
{
    int64_t half = 0;
    bool first = true;
    for (size_t i = 0; i < m->ninst; i++)
        if (!strcmp(m->inst[i].kind->name, "RotaryEmbedding") && m->inst[i].nb > 0) {
            if (!first) half += m->buf[m->inst[i].bufs[0]].numel;
            first = false;
        }
    if (!half || !m->gen_json || !m->text) return 0;
    cJSON *root = cJSON_ParseWithLength(m->text, m->text_len);
    if (!root) return 0;
    const cJSON *mp = cJSON_GetObjectItemCaseSensitive(vc__vllm_text_config(root), "max_position_embeddings");
    int64_t n = 0;
    if (cJSON_IsNumber(mp) && mp->valuedouble >= 1 && mp->valuedouble <= (double)VC_MAX_DIM_SIZE)
        n = (int64_t)mp->valuedouble * 2 * half;
    cJSON_Delete(root);
    return n;
}

static vc_status gemma4_pages(const vc_model *m, const vc_serve_options *so, vc_dtype act, vc_serve_result *r,
                              vc_error *err)
{
    struct { int64_t window, kv, d, page, blk, n; } kind[8];
    int nkind = 0;
    const int64_t es = kv_size(so->kv_cache_dtype, act);
    int64_t maxp = 0;
    for (size_t i = 0; i < m->ninst; i++) {
        if (!is_gemma4_attn(&m->inst[i])) continue;
        int64_t kv, d, w;
        bool shared;
        vc__ra_kv_layout(m->inst[i].cfg, &kv, &d, &w, &shared);
        if (shared) continue; /* kv_sharing_target_layer_name: no KVCacheSpec */
        int k = 0;
        while (k < nkind && !(kind[k].window == w && kind[k].kv == kv && kind[k].d == d)) k++;
        if (k == nkind) {
            if (nkind == 8) return vc_set_error(err, VC_ERR_USAGE, O("serve"), "gemma4: more than 8 kinds of attention layer");
            int64_t page;
            if (__builtin_mul_overflow(2 * so->block_size * es, kv * d, &page))
                return vc_set_error(err, VC_ERR_OVERFLOW, O("serve"), "a KV block passes 2^63 bytes");
            kind[nkind].window = w, kind[nkind].kv = kv, kind[nkind].d = d, kind[nkind].page = page, kind[nkind++].n = 0;
            maxp = page > maxp ? page : maxp;
        }
        kind[k].n++;
    }
    if (nkind == 0) return VC_OK;
    int64_t lo = kind[0].n, hi = kind[0].n, minblk = 0;
    for (int k = 0; k < nkind; k++) {
        if (maxp % kind[k].page)
            return vc_set_error(err, VC_ERR_USAGE, O("serve"), "gemma4: a layer's KV page (%lld bytes) does not divide the "
                                "largest (%lld bytes): vLLM cannot unify the page sizes (unify_kv_cache_spec_page_size: "
                                "NotImplementedError)", (long long)kind[k].page, (long long)maxp);
        kind[k].blk = so->block_size * (maxp / kind[k].page);
        minblk = minblk == 0 || kind[k].blk < minblk ? kind[k].blk : minblk;
        lo = kind[k].n < lo ? kind[k].n : lo;
        hi = kind[k].n > hi ? kind[k].n : hi;
    }
    const int64_t g = (double)hi < 1.5 * (double)lo ? hi : lo;
    int64_t groups = 0, need = 0;
    for (int k = 0; k < nkind; k++) {
        const int64_t ng = cdiv(kind[k].n, g);
        int64_t t = r->request_tokens;
        if (kind[k].window > 0 && kind[k].window - 1 + r->max_num_batched_tokens < t)
            t = kind[k].window - 1 + r->max_num_batched_tokens;
        groups += ng;
        need += ng * (cdiv(t, kind[k].blk) + (kind[k].window > 0 ? 1 : 0));
    }
    if (__builtin_mul_overflow(maxp, g, &r->page_bytes))
        return vc_set_error(err, VC_ERR_OVERFLOW, O("serve"), "a KV block passes 2^63 bytes");
    r->blocks = r->kv_cache / r->page_bytes;
    r->tokens = r->blocks / groups * minblk;
    r->block_size = minblk;
    r->concurrency = r->blocks / need;
    return VC_OK;
}

/* DeepSeek-V3.2 (deepseek_v32) under vLLM: DeepSeek Sparse Attention's indexer in the MLA model that
 * vc_hf_build makes of the config (DeepSeek-V3's layers with the indexer's parameters and projections,
 * src/hf/hf_layers.c; src/hf/hf_deepseek_v32.c) and what vLLM adds beside it. vllm-project/vllm:
 *  - vllm/model_executor/models/deepseek_v2.py @ 002d6073aa034d4f5545d45021b0e56d1f3c3593, Indexer.__init__ (one per
 *    decoder layer, "no tensor parallel, just replicated"): wq_b ReplicatedLinear(q_lora_rank, index_head_dim x
 *    index_n_heads, quant_config) -- under the checkpoint's fp8 block format an fp8 weight and a float32
 *    weight_scale_inv [cdiv(out, 128), cdiv(in, 128)] (Fp8LinearMethod, as every other fp8-block Linear here);
 *    wk_weights_proj MergedColumnParallelLinear(hidden_size, [index_head_dim, index_n_heads], quant_config=None,
 *    disable_tp=True): the model dtype on every rank; k_norm LayerNorm(index_head_dim): weight and bias float32
 *    (vllm/model_executor/layers/layernorm.py @ 00cba797 LayerNorm.__init__); k_cache = DeepseekV32IndexerCache(
 *    head_dim = index_head_dim + index_head_dim // quant_block_size (128) x 4, dtype uint8), whose
 *    get_kv_cache_spec is an MLAAttentionSpec of one head of that size: 132 bytes per token and layer for
 *    DeepSeek-V3.2, whatever the MLA latent's dtype;
 *    DeepseekV2Model.__init__: topk_indices_buffer = torch.empty(max_num_batched_tokens, index_topk, int32),
 *    allocated with the model (in vLLM's weights memory, "Model loading took");
 *  - vllm/v1/kv_cache_interface.py UniformTypeKVCacheSpecs (same commit): the MLA latents and the indexer caches
 *    are one group of full-attention layers, page_size_bytes the sum of every layer's page, so a block holds
 *    block_size x (latent x dtype size + 132) bytes per layer;
 *  - vllm/platforms/cuda.py @ 002db4951e0c4b326a559eb44b05698afd3e534a CudaPlatformBase.check_and_update_config:
 *    "if use_sparse and cache_config.block_size != 64: cache_config.block_size = 64" (FlashMLASparse), whatever
 *    --block-size says;
 *  - vllm/model_executor/layers/sparse_attn_indexer.py @ 006475fe sparse_attn_indexer, the profiling run
 *    (attn_metadata not a dict): current_workspace_manager().get_simultaneous of the K-gather workspace
 *    (total_seq_lens x index_head_dim fp8 and total_seq_lens x 4 uint8, _gather_workspace_shapes) and
 *    RADIX_TOPK_WORKSPACE_SIZE (1 MiB), kept by the workspace manager; then a dummy torch.empty of
 *    VLLM_SPARSE_INDEXER_MAX_LOGITS_MB MiB (vllm/envs.py: 512 by default), freed at once; total_seq_lens =
 *    get_max_prefill_buffer_size (vllm/v1/attention/backends/mla/indexer.py: max_model_len x 40), max_model_len the
 *    model's (vllm_max_model_len: 163840 for DeepSeek-V3.2's yarn factor 40 x 4096).
 * The workspace and the 512 MiB are added to the profiling run's peak (the dummy logits as if they met the
 * forward's own peak: at most 512 MiB high). Not modelled: the indexer's activations past its projections'
 * outputs (the fp8 query and weights, fused_indexer_q_rope_quant), FlashMLASparse's prefill workspace,
 * which the same workspace manager may grow past the indexer's, and the fp8_ds_mla latent (refused in
 * vc_serve). */
#define DSA_QUANT_BLOCK 128     /* Indexer.quant_block_size */
#define DSA_PREFILL_FACTOR 40   /* get_max_prefill_buffer_size: max_model_len x 40 */
#define DSA_RADIX_WORKSPACE (INT64_C(1) << 20)
#define DSA_MAX_LOGITS (INT64_C(512) << 20)
#define DSA_BLOCK_SIZE 64

/* Bytes of one layer's indexer key cache per token: index_head_dim fp8 values + a float32 scale per 128. */
static int64_t dsa_cache_bytes(const vc_hf_dsa *d) { return d->hd + d->hd / DSA_QUANT_BLOCK * 4; }

/* The indexer's top-k buffer (into r->weights and r->profile_peak) and its profiling workspace (into
 * r->profile_peak); its parameters are the model's (src/hf/hf_layers.c: wq_b in the checkpoint's format, wk and
 * weights_proj in the model dtype, k_norm). */
static vc_status dsa_memory(const vc_hf_dsa *d, double max_len, vc_serve_result *r, vc_error *err)
{
    if (!(max_len >= 1 && max_len <= (double)VC_MAX_DIM_SIZE))
        return vc_set_error(err, VC_ERR_USAGE, O("serve"), "DeepSeek Sparse Attention (deepseek_v32, glm_moe_dsa): the config gives vLLM no max_model_len, "
                            "which sizes the indexer's prefill workspace (max_model_len x 40 keys)");
    const int64_t topk = r->max_num_batched_tokens * d->topk * 4; /* int32 */
    const int64_t seq = (int64_t)max_len * DSA_PREFILL_FACTOR;
    const int64_t ws = seq * d->hd + seq * 4 + DSA_RADIX_WORKSPACE;
    if (topk > INT64_MAX / 4 || ws > INT64_MAX / 4)
        return vc_set_error(err, VC_ERR_OVERFLOW, O("serve"), "the indexer's memory passes 2^62 bytes");
    r->weights += topk;
    r->profile_peak += topk + ws + DSA_MAX_LOGITS;
    return VC_OK;
}

/* vc_serve's checks of its options (serve_dsv4.c's too: vc__serve_begin) */
static vc_status serve_check(const vc_options *o, const vc_serve_options *so, const vc_gpu_spec *gpu, vc_error *err)
{
    if (!gpu || gpu->total <= 0) return vc_set_error(err, VC_ERR_USAGE, O("serve"), "needs " O("gpu") " (the card vLLM runs on)");
    if (!(so->gpu_memory_utilization > 0 && so->gpu_memory_utilization <= 1))
        return vc_set_error(err, VC_ERR_USAGE, O("gpu_memory_utilization"), "expected a fraction in (0, 1]");
    if (so->block_size < 1 || so->block_size > 1024)
        return vc_set_error(err, VC_ERR_USAGE, O("block_size"), "expected 1 to 1024 tokens");
    if ((unsigned)so->kv_cache_dtype >= VC_KV__N) return vc_set_error(err, VC_ERR_USAGE, O("kv_cache_dtype"), "invalid dtype");
    if (so->max_num_batched_tokens < 0 || so->max_num_batched_tokens > VC_MAX_DIM_SIZE || so->max_num_seqs < 0 ||
        so->max_num_seqs > VC_MAX_DIM_SIZE)
        return vc_set_error(err, VC_ERR_USAGE, O("max_num_batched_tokens"), "expected 1 to 2^40");
    return vc__check_options(o, err);
}

/* vLLM's batch settings, the defaults filled in, into r */
static vc_status serve_batch(const vc_serve_options *so, const vc_gpu_spec *gpu, vc_serve_result *r, vc_error *err)
{
    /* EngineArgs.get_batch_defaults: the OpenAI API server's defaults; max_num_seqs's at most
     * max_num_batched_tokens (vllm-project/vllm @ 99d7eb5d, vllm/engine/arg_utils.py
     * EngineArgs._set_default_args: min(default_max_num_seqs, max_num_batched_tokens)) */
    bool big = gpu->total >= (INT64_C(70) << 30) && !(gpu->preset && strstr(gpu->preset->name, "a100"));
    r->max_num_batched_tokens = so->max_num_batched_tokens ? so->max_num_batched_tokens : big ? 8192 : 2048;
    r->max_num_seqs = so->max_num_seqs ? so->max_num_seqs : big ? 1024 : 256;
    if (!so->max_num_seqs && r->max_num_seqs > r->max_num_batched_tokens) r->max_num_seqs = r->max_num_batched_tokens;
    /* vllm-project/vllm @ 01230b40, vllm/config/scheduler.py SchedulerConfig.verify_max_model_len (from
     * __post_init__): max_num_batched_tokens < max_num_seqs is a ValueError. Its other check,
     * max_num_batched_tokens < max_model_len, applies only with chunked prefill off, and V1 turns it on
     * for every generating model (arg_utils.py _set_default_args: enable_chunked_prefill = True) */
    if (r->max_num_batched_tokens < r->max_num_seqs)
        return vc_set_error(err, VC_ERR_USAGE, O("max_num_batched_tokens"),
                            "%lld is less than " OV("max_num_seqs", "%lld") ": vLLM refuses to start (SchedulerConfig: "
                            "max_num_batched_tokens must be greater than or equal to max_num_seqs)",
                            (long long)r->max_num_batched_tokens, (long long)r->max_num_seqs);
    return VC_OK;
}

vc_status vc__serve_begin(const vc_options *o, const vc_serve_options *so, const vc_gpu_spec *gpu, vc_serve_result *r,
                          vc_error *err)
{
    vc_status st = serve_check(o, so, gpu, err);
    return st ? st : serve_batch(so, gpu, r, err);
}

/* The pool vLLM sizes once the weights and the profiling run's peak are in r (Worker.determine_available_memory, the
 * sources above): the requested share, the non-torch increase, what the snapshot holds, the CUDA graphs, and
 * kv_cache. m NULL: a model vramcalc does not build (serve_dsv4.c), whose graph capture is not estimated (the 1 MiB-a-graph
 * floor is taken off instead, a lower bound of vLLM's measure); wh: whisper's two phases (serve_encdec.c). */
static vc_status vllm_pool(const vc_model *m, vc_dtype act, const vc_options *o, const vc_serve_options *so,
                           const vc_gpu_spec *gpu, unsigned uses, int64_t hidden, bool wh, vc_serve_result *r, vc_error *err)
{
    vc_status st;
    r->requested = (int64_t)floor((double)gpu->total * so->gpu_memory_utilization);
    char a[32], b[32];
    if ((st = vllm_non_torch(o, gpu, uses, r, err))) return st;
    if ((st = vllm_snapshot(hidden, act, o, gpu, uses, r, err))) return st;
    vllm_graphs(m, o, gpu, r);
    /* vLLM's estimate, derived (serve_graphs.c); whisper's FULL_DECODE_ONLY graphs (serve_encdec.c) are not */
    if (m && !wh && (st = vc__serve_graphs_estimate(m, o, r, err))) return st;
    if (!m && o->cuda_graph_memory == VC_CUDA_GRAPH_MEMORY_ESTIMATE)
        return vc_set_error(err, VC_ERR_USAGE, O("cuda_graph_memory"), "estimate: not derived for this model, whose "
                            "forward vramcalc does not build (DeepSeek-V4: src/engine/serve_dsv4.c); give vLLM's logged figure");
    if (wh && o->cuda_graph_memory == VC_CUDA_GRAPH_MEMORY_ESTIMATE)
        return vc_set_error(err, VC_ERR_USAGE, O("cuda_graph_memory"), "estimate: not derived for an encoder-decoder, whose "
                            "graphs vLLM captures for decode batches only (FULL_DECODE_ONLY); give vLLM's logged figure");
    const bool graphs_given = o->cuda_graph_memory >= 0 || o->cuda_graph_memory == VC_CUDA_GRAPH_MEMORY_ESTIMATE;
    if (graphs_given && !r->graphs_profiled) /* vLLM's cudagraph_memory_estimate is 0 there */
        return vc_set_error(err, VC_ERR_USAGE, O("cuda_graph_memory"), "vLLM subtracts no CUDA graph memory %s",
                            r->graphs_why == VC_SERVE_GRAPHS_EAGER      ? "under " O("enforce_eager") " (no graph is captured)"
                            : r->graphs_why == VC_SERVE_GRAPHS_V2_RUNNER ? "for this model: the V2 model runner's estimate is 0"
                                                                       : "on this GPU's vendor (it profiles graphs on CUDA only)");
    /* a given measure, else vLLM's default (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 since v0.21.0, and with
     * estimate): the derived estimate wherever vLLM measures them; 0 where it does not (enforce_eager, not CUDA, the V2
     * runner) and where vramcalc does not derive it (whisper's decode-only graphs: graphs_estimate 0) */
    if (o->cuda_graph_memory >= 0) r->graphs_subtracted = o->cuda_graph_memory;
    else if (r->graphs_profiled) r->graphs_subtracted = m ? r->graphs_estimate : r->graphs_floor; /* no model: the floor */
    const int64_t held = r->snapshot_context + r->snapshot_nccl + r->snapshot_custom_ar + r->snapshot_symm_mem;
    if (gpu->total - held < r->requested) {
        gib(gpu->total - held, a, sizeof a);
        gib(r->requested, b, sizeof b);
        return vc_set_error(err, VC_ERR_USAGE, O("gpu_memory_utilization"),
                            "vLLM refuses to start: free memory at its snapshot (%s of %s, less the CUDA context%s) is less than "
                            OV("gpu_memory_utilization", "%g") " of it (%s)", a, gpu->name,
                            o->tp > 1 ? ", NCCL and the all-reduce buffers" : "", so->gpu_memory_utilization, b);
    }
    /* determine_available_memory: requested_memory - (weights + torch_peak_increase + non_torch_increase) */
    /* determine_available_memory @ 9aaf83ef: ... - cudagraph_memory_estimate_applied (given, or estimated) */
    if (__builtin_sub_overflow(r->requested - r->profile_peak - r->non_torch, r->graphs_subtracted, &r->kv_cache))
        return vc_set_error(err, VC_ERR_OVERFLOW, O("cuda_graph_memory"), "passes 2^63 bytes");
    if (r->kv_cache <= 0) {
        gib(r->profile_peak + r->non_torch + r->graphs_subtracted, a, sizeof a);
        gib(r->requested, b, sizeof b);
        return vc_set_error(err, VC_ERR_USAGE, O("serve"),
                            "the weights, vLLM's profiling run%s take %s in %s, more than "
                            OV("gpu_memory_utilization", "%.2f") " of %s (%s): no memory is left for the KV cache",
                            !r->graphs_subtracted       ? " and its non-torch memory"
                            : o->cuda_graph_memory >= 0 ? " and its non-torch memory (with " O("cuda_graph_memory") ")"
                                                        : ", its non-torch memory and its CUDA graphs (estimated)",
                            a, vc_precision_name(o->precision), so->gpu_memory_utilization, gpu->name, b);
    }
    return VC_OK;
}

vc_status vc__serve_pool(vc_dtype act, const vc_options *o, const vc_serve_options *so, const vc_gpu_spec *gpu,
                         unsigned uses, int64_t hidden, vc_serve_result *r, vc_error *err)
{
    return vllm_pool(NULL, act, o, so, gpu, uses, hidden, false, r, err);
}

vc_status vc_serve(const vc_model *m, const vc_options *o, const vc_serve_options *so, const vc_gpu_spec *gpu,
                   vc_serve_result *r, vc_error *err)
{
    vc_error_clear(err); /* an out-parameter: cleared first (vramcalc.h) */
    memset(r, 0, sizeof *r);
    vc_options full_o; /* the legacy struct's size (vramcalc.h) */
    vc_status in_st = vc__options_in(&o, &full_o, err);
    if (in_st) return in_st;
    vc_status st = serve_check(o, so, gpu, err);
    if (st) return st;
    if ((st = vc__model_at_vllm(m, o, vc__vllm_mxfp4_align(gpu), &m, err))) return st; /* vLLM's split of the options' tp (hf_tp.c) */
    /* a hybrid model's Gated DeltaNet layers: vLLM's per-request state (gdn_state below); the MambaMixer2 layers
     * of granitemoehybrid, nemotron_h and falcon_h1: theirs (mamba_state below), of mamba2 (mamba_alone); lfm2's ShortConv layers:
     * theirs (shortconv_state) */
    int64_t gdn_n = 0, gdn_conv = 0, gdn_ssm = 0, m2_n = 0, m2_conv = 0, m2_ssm = 0, sc_n = 0, sc_conv = 0;
    bool gdn_f32 = false;
    for (size_t i = 0; i < m->ninst; i++)
        if (!strcmp(m->inst[i].kind->name, "GatedDeltaNet")) {
            vc__gdn_state(m->inst[i].cfg, &gdn_conv, &gdn_ssm, &gdn_f32);
            gdn_n++;
        } else if (!strcmp(m->inst[i].kind->name, "Mamba2Mixer")) {
            vc__mamba2_vllm_state(m->inst[i].cfg, &m2_conv, &m2_ssm);
            m2_n++;
        } else if (!strcmp(m->inst[i].kind->name, "ShortConv")) { /* lfm2, lfm2_moe: shortconv_state below */
            sc_conv = vc__shortconv_vllm_state(m->inst[i].cfg);
            sc_n++;
        }
    /* a model of Mamba2 layers alone (mamba2: Mamba2ForCausalLM, IsAttentionFree): vLLM's cache is Mamba state pages
     * alone (mamba_alone below), not the pages beside attention layers of mamba_state */
    bool attn = false;
    for (size_t i = 0; i < m->ninst && m2_n > 0 && !attn; i++) attn = !strcmp(m->inst[i].kind->name, "RotaryAttention");
    vc_hf_dsa dsa;
    bool v32 = false;
    /* granitemoehybrid whose layer_types are all "attention" (Granite-4.0-Micro: m2_n 0 below) is served as a plain
     * decoder. GraniteMoeHybridForCausalLM is IsHybrid whatever its layers (vllm-project/vllm @ 0195c9ec,
     * vllm/model_executor/models/granitemoehybrid.py), but ModelConfig.is_hybrid (vllm/config/model.py @
     * 0052a5b818980ce8a0477706aaf9f75bd5af72cd: "Handle granite-4.0-micro case which uses hybrid config but does not
     * actually contain any non-attention layers") is False when every hf_config.layer_types entry is "attention", so
     * VllmConfig.try_verify_and_update_config (vllm/config/vllm.py @ 09f030eaf851400a83ad3d99f730868f76df0ca7:
     * "if self.model_config.is_hybrid: HybridAttentionMambaModelConfig.verify_and_update_config(self)") never raises
     * the block size to the Mamba page of the config's mamba_* keys (vllm/model_executor/models/config.py @ 0144dd5b
     * would compute one from them, no layer count consulted); no GraniteMoeHybridMambaDecoderLayer is built, so no
     * MambaSpec: the attention layers' FullAttentionSpec pages of block_size alone, as any decoder's. */
    if (m2_n > 0 && !attn) r->state_mamba = 2; /* attention-free (mamba_alone); vllm_non_torch reads it */
    int m2_ssm_size = 0; /* the temporal state's bytes an element: 0 the model's dtype (mamba_ssm_cache_dtype "auto") */
    if (m2_n > 0 && (st = nemotron_h_ssm_dtype(m, &m2_ssm_size, err))) return st;
    if (m2_n == 0) {
        cJSON *root = m->gen_json && m->text ? cJSON_ParseWithLength(m->text, m->text_len) : NULL;
        v32 = root && vc__hf_dsa_vllm(vc__vllm_text_config(root), &dsa); /* DeepSeek-V3.2's indexer (dsa_memory) */
        cJSON_Delete(root);
    }
    vc_serve_options so_dsa; /* DeepSeek-V3.2: FlashMLASparse's block size (dsa_memory's sources) */
    /* GLM-5.x's "shared" indexer layers: vLLM (deepseek_v2.py @ 002d6073) reads them from index_topk_pattern or
     * index_topk_freq / index_skip_topk_offset alone (src/hf/hf_deepseek_v32.c vc__hf_dsa_vllm) */
    if (v32 && dsa.unread_key)
        return vc_set_error(err, VC_ERR_USAGE, O("serve"), "glm_moe_dsa: %s makes %lld \"shared\" indexer layers, which "
                            "vLLM (deepseek_v2.py @ 002d6073) does not read: it builds an Indexer in every layer from "
                            "index_topk_pattern (letters) or index_topk_freq / index_skip_topk_offset alone; not modelled",
                            dsa.unread_key, (long long)dsa.shared);
    if (v32) {
        /* vllm/model_executor/models/config.py DeepseekV32ForCausalLM.verify_and_update_config: an fp8 cache is
         * the custom fp8_ds_mla format */
        if (so->kv_cache_dtype == VC_KV_FP8)
            return vc_set_error(err, VC_ERR_USAGE, O("kv_cache_dtype"), "fp8: vLLM stores DeepSeek-V3.2's latent in its "
                                "fp8_ds_mla format, which is not modelled; auto (the model dtype) is");
        so_dsa = *so;
        so_dsa.block_size = DSA_BLOCK_SIZE;
        so = &so_dsa;
    }
    /* vLLM cannot serve Llama 4 under fbgemm_fp8 (issue 31); it has no FP8 MoE method for this format:
     * - FBGEMMFp8Config.get_quant_method (vllm-project/vllm @ 04843c7c and @ 5deacad0, vllm/model_executor/
     *   layers/quantization/fbgemm_fp8.py) returns FBGEMMFp8LinearMethod (fp8 weight, fp32 weight_scale
     *   [out, 1], input_scale_ub) or UnquantizedLinearMethod for a LinearBase alone, None for anything else,
     *   FusedMoE included (modules_to_not_convert is read only for LinearBase);
     * - FusedMoE.__init__ (vllm/model_executor/layers/fused_moe/layer.py @ 0014ec6c) then hits
     *   `assert quant_method is not None`: Llama4MoE's experts (a FusedMoE built with the config) fail the
     *   model's construction, the experts named in modules_to_not_convert or not;
     * - later releases fall back to UnquantizedFusedMoEMethod (bf16 w13_weight / w2_weight, no scales; seen
     *   in vLLM's FusedMoE through the search tool, not read at a stored commit), and then
     *   Llama4Model.load_moe_expert_weights (vllm/model_executor/models/llama4.py @ 0121c95e) maps the
     *   checkpoint's experts.gate_up_proj_scale to experts.w13_weight_scale (name.replace of
     *   "experts.gate_up_proj") and indexes params_dict with it: a KeyError, as no such parameter exists.
     * So no per-rank weight bytes are modelled; the refusal says what vLLM does */
    const vc_quant *wq = m->has_quant ? &m->quant : &m->cfg_quant;
    if (wq->format == VC_WEIGHTS_FP8_CHANNEL)
        for (size_t i = 0; i < m->npar; i++)
            if (m->par[i].flags & VC_PARAM_LLAMA4_EXPERTS)
                return vc_set_error(err, VC_ERR_USAGE, m->has_quant ? O("weights") : "quantization_config",
                                    "fbgemm_fp8: vLLM cannot load Llama 4 under " O("serve") ": "
                                    "FBGEMMFp8Config.get_quant_method returns None for FusedMoE (fbgemm_fp8.py), "
                                    "which FusedMoE.__init__ asserts against; where FusedMoE falls back to unquantized "
                                    "bf16 experts, Llama4Model.load_moe_expert_weights finds no w13_weight_scale for the "
                                    "checkpoint's gate_up_proj_scale (KeyError)");
    if ((st = vc__quant_vllm_check(m, gpu->preset, err))) return st; /* vLLM's compressed-tensors schemes (src/policy/quant.c) */
    vc_options dev_o; /* compressed-tensors weight-only, MXFP4 experts: vLLM's kernel and its workspace follow the GPU (quant.c) */
    if (vc__quant_vllm_needs_device(m) && o->device != gpu->preset) {
        dev_o = *o;
        dev_o.device = gpu->preset;
        o = &dev_o;
    }
    if ((st = serve_batch(so, gpu, r, err))) return st;
    /* the requests' length is the max_model_len they need: at most the model's (vllm_max_model_len) */
    const char *len_key;
    bool scaled;
    double max_len = vllm_max_model_len(m, &len_key, &scaled);
    /* (a model that cannot generate is refused by the profiling run's build below, which says so) */
    if (max_len > 0 && vc_loss_row_get(m->loss)->causal && (double)o->prompt + (double)o->new_tokens > max_len)
        return vc_set_error(err, VC_ERR_USAGE, O("prompt"),
                            "prompt + new tokens (%lld tokens) pass the model's length, %.0f (%s%s): vLLM refuses a "
                            "max_model_len over it (ModelConfig: \"User-specified max_model_len ... is greater than the "
                            "derived max_model_len\")", (long long)o->prompt + (long long)o->new_tokens, max_len,
                            len_key ? len_key : "max_positions", !len_key ? "" : scaled ? " x rope_scaling's factor" : " in its config.json");
    /* the profiling run's dummy requests (vllm-project/vllm @ 4e179065, vllm/v1/worker/gpu_model_runner.py
     * profile_run: _dummy_run(max_num_tokens), whose num_reqs = min(num_tokens, max_num_seqs) requests get
     * num_tokens // num_reqs tokens each, the remainder on the last; then _dummy_sampler_run on the last
     * token of each): a batch of `rows` sequences, each cdiv(tokens, rows) long (when rows does not divide
     * the tokens, up to rows - 1 tokens more than vLLM's), the LM head on one row of each. Each dummy
     * request is short (8 tokens under the defaults): a model with learned positions is not run past them */
    int64_t rows = r->max_num_seqs < r->max_num_batched_tokens ? r->max_num_seqs : r->max_num_batched_tokens;
    vc_plan *p = NULL;
    const int64_t len = cdiv(r->max_num_batched_tokens, rows);
    vc_model *encdec = NULL; /* whisper: vLLM's decoder for the dummy run (src/engine/serve_encdec.c) */
    if ((st = vc__serve_encdec_decoder(m, o, r, len, &encdec, err))) return st;
    const bool wh = encdec != NULL;
    vc__quant_vllm_scope(true); /* the plans built until the simulation returns are vLLM's (src/policy/quant.c) */
    st = vc__plan_build_profile(encdec ? encdec : m, o, len, 1, &p, err);
    if (st) vc__quant_vllm_scope(false);
    if (st) {
        vc_model_free(encdec);
        /* a model with learned positions cannot be built past them: say so in the options' words, not
         * with a path of the model a config becomes */
        if (st != VC_ERR_NOMEM && max_len > 0 && (double)len > max_len) {
            vc_error_clear(err); /* replaces the build's message (vc_set_error keeps a first one) */
            return vc_set_error(err, VC_ERR_USAGE, O("max_num_seqs"),
                                "the profiling run's %lld dummy request%s of %lld tokens pass%s the model's %.0f "
                                "positions, and vramcalc builds each as one sequence: give " OV("max_num_seqs", "%lld") " or "
                                "more, or a smaller " O("max_num_batched_tokens"),
                                (long long)rows, rows > 1 ? "s" : "", (long long)len, rows > 1 ? "" : "es",
                                max_len, (long long)vc__vllm_min_num_seqs(m, r->max_num_batched_tokens));
        }
        return st;
    }
    vc_sim sim;
    st = vc_plan_simulate(p, rows, &sim, NULL, err);
    vc__quant_vllm_scope(false);
    int64_t per_token = 0; /* K and V elements of one token, all layers */
    /* the layers by attention kind (sliding_window, 0 full) for the hybrid KV cache manager */
    struct { int64_t window, n; } kind[8];
    int nkind = 0;
    int64_t layer_el = -1;   /* one layer's elements per token when every layer has the same, else -2 */
    for (int i = 0; i < p->gen.nslot; i++) {
        const vc_kv_slot *s = &p->gen.slot[i];
        /* an MLA layer: vLLM's MLAAttentionSpec (vllm/v1/kv_cache_interface.py @ 001cabc1,
         * real_page_size_bytes: block_size x num_kv_heads x head_size x dtype size, no factor 2),
         * num_kv_heads 1 and head_size kv_lora_rank + qk_rope_head_dim (vllm/model_executor/layers/
         * attention/mla_attention.py @ 90b0a26e, MLAAttention.get_kv_cache_spec): the latent, the
         * same on every tensor-parallel rank */
        int64_t el = s->latent > 0 ? s->latent : s->paged > 0 ? s->paged : (p->t[s->k].n.ps + p->t[s->v].n.ps) / s->len;
        if (s->latent > 0) {
            r->latent_layers++;
            r->latent = s->latent;
        }
        per_token += el;
        layer_el = layer_el == -1 || layer_el == el ? el : -2;
        int k = 0;
        while (k < nkind && kind[k].window != s->window) k++;
        if (k == nkind && nkind < 8) { kind[nkind].window = s->window; kind[nkind++].n = 0; }
        if (k < nkind) kind[k].n++;
        else layer_el = -2; /* more kinds than tracked: sized as before */
    }
    int nlayers = p->gen.nslot;
    vc_dtype act = p->act_dt;
    const unsigned uses = vc__plan_uses(p);
    vc_plan_free(p);
    vc_model_free(encdec);
    if (st) return st;
    if (nlayers == 0 && !wh && !(m2_n > 0 && !attn)) return vc_set_error(err, VC_ERR_USAGE, O("serve"), "the model has no attention layer: no KV cache to size");
    /* the rotary cache is allocated with the weights and counted with them */
    const int64_t rope = vllm_rope_cache(m) * vc_dtype_size(act);
    bool gemma4 = false;
    for (size_t i = 0; i < m->ninst && !gemma4; i++) gemma4 = is_gemma4_attn(&m->inst[i]);
    /* Gemma 4: vLLM's qkv_proj slots beyond the checkpoint's tensors (gemma4_qkv_extra), the full layers'
     * rotary cache (gemma4_rope_rest), the multimodal model's per-layer-embeddings buffer (gemma4_ple_buffer) */
    const int64_t ple = gemma4 ? gemma4_ple_buffer(m, r->max_num_batched_tokens) : 0;
    int64_t qkv_extra = 0;
    if (ple < 0 || (gemma4 && __builtin_mul_overflow(gemma4_qkv_extra(m) + gemma4_rope_rest(m) + ple, (int64_t)vc_dtype_size(act), &qkv_extra)))
        return vc_set_error(err, VC_ERR_OVERFLOW, O("max_num_batched_tokens"), "Gemma 4's per-layer-embeddings buffer passes 2^63 bytes");
    r->weights = sim.persistent[CAT_WEIGHT] + rope + qkv_extra;
    r->profile_peak = sim.peak + rope + qkv_extra;
    if (v32 && (st = dsa_memory(&dsa, max_len, r, err))) return st; /* DeepSeek-V3.2's indexer */
    /* a multimodal model (src/engine/serve_mm.c): the language model's run holds the encoder's dummy inputs and
     * outputs; the encoder's own phase before it peaks at the weights plus the tower's worst op */
    if ((st = vc__serve_mm(m, o, gpu, act, r, err))) return st;
    if (__builtin_add_overflow(r->profile_peak, r->mm_outputs + r->mm_inputs, &r->profile_peak) ||
        (r->mm_encoder_peak > 0 && __builtin_add_overflow(r->weights, r->mm_encoder_peak, &r->mm_encoder_peak)))
        return vc_set_error(err, VC_ERR_OVERFLOW, O("max_num_batched_tokens"), "the encoder profiling passes 2^63 bytes");
    r->profile_lm = r->profile_peak;
    if (r->mm_encoder_peak > r->profile_peak) r->profile_peak = r->mm_encoder_peak;
    if (wh && (st = vc__serve_encdec_profile(m, o, &sim, act, r, err))) return st; /* whisper's two phases */
    if ((st = vllm_pool(m, act, o, so, gpu, uses, vllm_hidden(m), wh, r, err))) return st;
    if (__builtin_mul_overflow(per_token, (int64_t)kv_size(so->kv_cache_dtype, act) * so->block_size, &r->page_bytes))
        return vc_set_error(err, VC_ERR_OVERFLOW, O("serve"), "a KV block passes 2^63 bytes");
    if (v32) /* UniformTypeKVCacheSpecs: each layer's indexer key page beside its latent page (dsa_memory's sources) */
        r->page_bytes += (dsa.layers - dsa.shared) * dsa_cache_bytes(&dsa) * so->block_size; /* the Indexers' */
    r->blocks = r->page_bytes ? r->kv_cache / r->page_bytes : 0; /* get_num_blocks: available // page_size // num_layers
                                                                   * (whisper's pool: vc__serve_encdec_pool below) */
    r->tokens = r->blocks * so->block_size;
    if (__builtin_add_overflow(o->prompt, o->new_tokens, &r->request_tokens))
        return vc_set_error(err, VC_ERR_USAGE, O("new_tokens"), "prompt + new tokens pass 2^63");
    r->concurrency = r->blocks / cdiv(r->request_tokens, so->block_size);
    if (nkind > 1 && layer_el > 0) {
        /* sliding and full layers (gemma3, gpt-oss): vLLM's hybrid KV cache manager
         * (vllm/v1/core/kv_cache_utils.py _get_kv_cache_groups_uniform_page_size): the layers
         * of each kind in groups of group_size (the fewest layers of a kind, or the most when
         * that is under 1.5 times the fewest), one KVCacheTensor per group member shared by a
         * layer of every group: a block is page_size x group_size bytes, num_blocks =
         * available // page_size // group_size (get_num_blocks); _report_kv_cache_config's
         * tokens: num_blocks // groups x block_size; get_max_concurrency_for_kv_cache_config:
         * a request needs cdiv(tokens, block_size) blocks per full group and, per sliding group
         * (SlidingWindowSpec.max_memory_usage_bytes), cdiv(min(sliding_window - 1 +
         * max_num_batched_tokens, tokens), block_size) + 1 */
        int64_t lo = kind[0].n, hi = kind[0].n, groups = 0, need = 0;
        for (int k = 1; k < nkind; k++) {
            lo = kind[k].n < lo ? kind[k].n : lo;
            hi = kind[k].n > hi ? kind[k].n : hi;
        }
        int64_t g = (double)hi < 1.5 * (double)lo ? hi : lo;
        for (int k = 0; k < nkind; k++) {
            int64_t ng = cdiv(kind[k].n, g), t = r->request_tokens;
            if (kind[k].window > 0 && kind[k].window - 1 + r->max_num_batched_tokens < t)
                t = kind[k].window - 1 + r->max_num_batched_tokens;
            groups += ng;
            need += ng * (cdiv(t, so->block_size) + (kind[k].window > 0 ? 1 : 0));
        }
        if (__builtin_mul_overflow(layer_el * g, (int64_t)kv_size(so->kv_cache_dtype, act) * so->block_size, &r->page_bytes))
            return vc_set_error(err, VC_ERR_OVERFLOW, O("serve"), "a KV block passes 2^63 bytes");
        r->blocks = r->kv_cache / r->page_bytes;
        r->tokens = r->blocks / groups * so->block_size;
        r->concurrency = r->blocks / need;
    }
    r->block_size = so->block_size;
    if (gemma4 && (st = gemma4_pages(m, so, act, r, err))) return st;
    if (gdn_n > 0 && (st = gdn_state(r, so, act, gdn_n, gdn_conv, gdn_ssm, gdn_f32, nlayers, nkind, layer_el, err))) return st;
    if (m2_n > 0 && !attn && (st = mamba_alone(r, act, m2_n, m2_conv, m2_ssm, err))) return st;
    if (m2_n > 0 && attn &&
        (st = mamba_state(r, so, act, m2_n, m2_conv, m2_ssm, m2_ssm_size, nlayers, nkind, layer_el, err)))
        return st;
    if (sc_n > 0 && (st = shortconv_state(r, so, act, sc_n, sc_conv, nlayers, nkind, layer_el, err))) return st;
    if (wh && (st = vc__serve_encdec_pool(m, so, act, kv_size(so->kv_cache_dtype, act), r, err))) return st; /* whisper */
    if (r->concurrency == 0)
        return vc_set_error(err, VC_ERR_USAGE, O("serve"),
                            "one request of %lld tokens (" O("prompt") " + " O("new_tokens") ") needs more KV cache than the %lld tokens "
                            "left on %s (vLLM refuses to start: max_model_len larger than the KV cache)",
                            (long long)r->request_tokens, (long long)r->tokens, gpu->name);
    return VC_OK;
}
