/*
 * serve_dsv4.c — --serve for DeepSeek-V4 (model_type "deepseek_v4", issue 31): vLLM's engine on one tensor-parallel
 * rank, from the config alone. vramcalc builds no model of DeepSeek-V4 (its compressed attention, hyper-connections
 * and hash-MoE are not layer kinds: src/hf/hf_deepseek_v4.c counts its parameters and refuses every other mode), so
 * what vLLM allocates is derived here from vLLM's source, term by term:
 *  - the weights per rank and the buffers allocated with them, and the caches' pages per layer kind:
 *    src/hf/hf_deepseek_v4.c vc__hf_deepseek_v4_vllm (vllm/model_executor/models/deepseek_v4.py @
 *    023da1fc828eb07787cf0734a1ba32f0a0f11887, vllm/model_executor/layers/deepseek_v4_attention.py @
 *    0a291a2e1074b13971361df76245548a4ea4a77d, deepseek_compressor.py @ 0de10a276eced6036e9752a223cba53c996d31cd,
 *    vllm/v1/attention/backends/mla/sparse_swa.py @ 03dc564956172b5b2835be7a84ddde5de1d5dba6);
 *  - the profiling run's kept workspace: the workspace manager (current_workspace_manager().get_simultaneous) keeps one
 *    buffer grown to the largest request: the attention's prefill gather (_forward_prefill: PREFILL_CHUNK_SIZE 4 x
 *    (cdiv(max_model_len, ratio) + window + max_num_batched_tokens) x head_dim bf16) and, on the CSA layers, the
 *    indexer's K gather (DeepseekV4Indexer's SparseAttnIndexer with max_total_seq_len = get_max_prefill_buffer_size
 *    // 4 = max_model_len x 40 / 4 keys of index_head_dim fp8 + 4 scale bytes, and RADIX_TOPK_WORKSPACE_SIZE 1 MiB:
 *    vllm/model_executor/layers/sparse_attn_indexer.py @ 006475fe as src/engine/serve.c reads it for DeepSeek-V3.2),
 *    whose dummy VLLM_SPARSE_INDEXER_MAX_LOGITS_MB (512 MiB) tensor is made and freed inside the attention;
 *  - the profiling run's live tensors (bf16; T max_num_batched_tokens, per rank), at the worst of three points of
 *    DeepseekV4Model.forward: (a) inside the attention of a CSA layer: the hc_mult residual streams (hidden_states and
 *    residual, [T, hc_mult, hidden] each: DeepseekV4DecoderLayer._forward_cuda), the layer input [T, hidden],
 *    fused_wqa_wkv's output [T, q_lora_rank + head_dim], wq_b's q [T, heads / tp, head_dim], o_padded [T, 64 or 128,
 *    head_dim] (DeepseekV4MultiHeadLatentAttentionWrapper.forward: allocated before the attention op, FlashMLA's
 *    padded heads) and the indexer's 512 MiB dummy; (b) in the MoE: the streams, its input and FusedMoE's
 *    intermediates for T x top-k rows ([rows, 2 I / tp], [rows, I / tp], [rows, hidden]); (c) the sampler: the
 *    logits of min(max_num_seqs, T) rows over the vocabulary, bf16 and their float32 copy (as src/engine/serve.c
 *    counts every model's). These are the forward's named tensors, not a simulated trace: the kernels' own
 *    transients (fp8 quantized copies, the fused hyper-connection ops' outputs) are not counted;
 *  - the pool, non-torch memory, snapshot and graphs: serve.c's (vc__serve_pool), the CUDA graphs' estimate not derived
 *    (no forward is built): their 1 MiB-a-graph floor is taken off, a lower bound of vLLM's measure;
 *  - the cache per request: each spec's admission bound (kv_cache_interface.py, a copy seen through the search tool,
 *    repository and commit not shown: FullAttentionSpec / MLAAttentionSpec cdiv(tokens, block_size) pages;
 *    SlidingWindowSpec.max_admission_blocks_per_request, which SlidingWindowMLASpec inherits: cdiv(min(sliding_window
 *    - 1 + max_num_batched_tokens, tokens), block_size) + 1 pages): every layer's sliding-window cache (block 64,
 *    window sliding_window), each CSA layer's latent and indexer keys (block 256) and its two compressor states (block
 *    4, window 8), each HCA layer's latent (block 256) and compressor state (block 8, window 128). How vLLM packs
 *    these pages of different sizes into its blocks (vllm/v1/core/kv_cache_utils.py at a commit with DeepSeek-V4: not
 *    stored; the stored one, @ 001cabc1, predates it) is not read: the concurrency is the pool over one request's
 *    pages, summed as UniformTypeKVCacheSpecs sums its layers' max_memory_usage_bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "load.h"
#include "model.h"
#include "plan.h"
#include "serve_dsv4.h"
#include "util.h"

#define MIB (INT64_C(1) << 20)
#define V4_INDEXER_PREFILL 40              /* get_max_prefill_buffer_size: max_model_len x 40 */
#define V4_RADIX_WORKSPACE MIB             /* RADIX_TOPK_WORKSPACE_SIZE */
#define V4_MAX_LOGITS (INT64_C(512) << 20) /* VLLM_SPARSE_INDEXER_MAX_LOGITS_MB */

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t max2(int64_t a, int64_t b) { return a > b ? a : b; }

/* SlidingWindowSpec.max_admission_blocks_per_request: pages of block tokens a request of n tokens holds */
static int64_t window_pages(int64_t window, int64_t block, int64_t batched, int64_t n)
{
    return cdiv(window - 1 + batched < n ? window - 1 + batched : n, block) + 1;
}

static vc_status refusals(const vc_options *o, const vc_serve_options *so, const vc_gpu_spec *gpu, unsigned given,
                          vc_error *err)
{
    if (given & VC_DSV4_BLOCK_SIZE)
        return vc_set_error(err, VC_ERR_USAGE, O("block_size"), "vLLM sets DeepSeek-V4's block sizes itself: 256 tokens "
                            "for the compressed caches (DeepseekSparseSWABackend.get_preferred_block_size), 64 for the "
                            "sliding windows, 4 and 8 for the compressor states (sparse_swa.py, deepseek_compressor.py)");
    if (so->kv_cache_dtype == VC_KV_FP16 || so->kv_cache_dtype == VC_KV_BF16)
        return vc_set_error(err, VC_ERR_USAGE, O("kv_cache_dtype"), "%s: DeepseekV4MLAAttention asserts an fp8 cache "
                            "(\"DeepseekV4 only supports fp8 kv-cache format\"); auto and fp8 are its fp8_ds_mla",
                            vc_kv_dtype_name(so->kv_cache_dtype));
    if ((given & VC_DSV4_PRECISION) && o->precision != VC_PREC_BF16)
        return vc_set_error(err, VC_ERR_USAGE, O("precision"), "%s: DeepSeek-V4 under vLLM is modelled in bf16 alone (the "
                            "attention's wo_a einsum writes bfloat16: deepseek_v4_attention.py @ 0a291a2e)",
                            vc_precision_name(o->precision));
    if (given & VC_DSV4_WEIGHTS)
        return vc_set_error(err, VC_ERR_USAGE, O("weights"), "DeepSeek-V4's weights are what its quantization_config "
                            "loads (DeepseekV4FP8Config: fp8 blocks, MXFP4 or fp8 experts by expert_dtype)");
    /* what the other families' serving reads and this one does not: refused, never ignored (the --torch row's
     * cuBLAS workspace goes into the CUDA graphs' estimate, not made here; the experts are vLLM's fused MoE) */
    static const struct {
        unsigned bit;
        const char *opt;
    } unread[] = {{VC_DSV4_MOE_IMBALANCE, O("moe_imbalance")}, {VC_DSV4_EXPERTS, O("experts_implementation")},
                  {VC_DSV4_TRANSFORMERS, O("transformers")}, {VC_DSV4_TORCH, O("torch")}};
    for (size_t i = 0; i < sizeof unread / sizeof unread[0]; i++)
        if (given & unread[i].bit)
            return vc_set_error(err, VC_ERR_USAGE, unread[i].opt, "DeepSeek-V4's serving is computed from its config and "
                                "vLLM's source alone (src/engine/serve_dsv4.c): nothing there depends on it");
    if (gpu->preset && strcmp(gpu->preset->vendor, "NVIDIA"))
        return vc_set_error(err, VC_ERR_USAGE, O("gpu"), "%s: DeepSeek-V4 on ROCm takes other paths (no aux streams, "
                            "rocm_inv_rope_einsum: deepseek_v4.py, deepseek_v4_attention.py), not modelled",
                            gpu->preset->name);
    return VC_OK;
}

vc_status vc__serve_dsv4(const cJSON *cfg, const vc_options *o, const vc_serve_options *so, const vc_gpu_spec *gpu,
                         unsigned given, vc_serve_result *r, vc_error *err)
{
    vc_error_clear(err);
    memset(r, 0, sizeof *r);
    vc_status st = vc__serve_begin(o, so, gpu, r, err);
    if (st || (st = refusals(o, so, gpu, given, err))) return st;
    const char *key;
    bool scaled;
    const double max_len = vc__vllm_max_model_len_cfg(cfg, &key, &scaled);
    if (!(max_len >= 1 && max_len <= (double)VC_MAX_DIM_SIZE))
        return vc_set_error(err, VC_ERR_USAGE, O("serve"), "deepseek_v4: the config gives vLLM no max_model_len, which "
                            "sizes the attention's and the indexer's prefill workspaces");
    if (__builtin_add_overflow(o->prompt, o->new_tokens, &r->request_tokens))
        return vc_set_error(err, VC_ERR_USAGE, O("new_tokens"), "prompt + new tokens pass 2^63");
    if ((double)r->request_tokens > max_len)
        return vc_set_error(err, VC_ERR_USAGE, O("prompt"), "prompt + new tokens (%lld tokens) pass the model's length, "
                            "%.0f (%s%s): vLLM refuses a max_model_len over it", (long long)r->request_tokens, max_len,
                            key ? key : "max_positions", scaled ? " x rope_scaling's factor" : " in its config.json");
    const int64_t len = (int64_t)max_len, T = r->max_num_batched_tokens, n = r->request_tokens;
    const int b = vc__vllm_mxfp4_backend(gpu->preset);
    const vc_hf_v4_rank rank = {o->tp > 1 ? o->tp : 1, vc__vllm_mxfp4_pad(b, 0), vc__vllm_mxfp4_pad(b, 1),
                                b == VC_MXFP4_TRITON || b == VC_MXFP4_SM100_FI_BF16 ? 4 : 2};
    rd hr = {cfg, err, "deepseek_v4", false, 1, NULL};
    vc_hf_v4_vllm v;
    if (vc__hf_deepseek_v4_vllm(&hr, &rank, T, len, &v)) return err->code;
    const int64_t csa = v.layers[1], hca = v.layers[2], layers = v.layers[0] + csa + hca, tp = rank.tp;

    /* the weights and the buffers allocated with them ("Model loading took") */
    r->v4_buffers = v.topk_buffer + v.mtp_buffer;
    r->weights = v.weights + r->v4_buffers;
    /* the workspace manager's buffer: the largest of the attention's and the indexer's gathers */
    const int64_t keys = len * V4_INDEXER_PREFILL / 4;
    r->v4_workspace = max2(v.prefill_workspace, csa ? keys * v.ihd + keys * 4 + V4_RADIX_WORKSPACE : 0);
    /* the dummy run's live tensors (bf16) at its worst point: the attention, the MoE, the sampler */
    const int64_t streams = 2 * T * v.hc * v.hidden * 2, x = T * v.hidden * 2, local = v.heads / tp;
    const int64_t attn = streams + x + T * (v.q_lora + v.head_dim) * 2 + T * local * v.head_dim * 2 +
                         T * (local <= 64 ? 64 : 128) * v.head_dim * 2 + (csa ? V4_MAX_LOGITS : 0);
    const int64_t moe = streams + x + T * v.topk * (3 * (v.inter / tp) + v.hidden) * 2;
    const int64_t rows = r->max_num_seqs < T ? r->max_num_seqs : T, sampler = rows * v.vocab * (2 + 4);
    r->v4_activations = max2(attn, max2(moe, sampler));
    r->profile_peak = r->weights + r->v4_workspace + r->v4_activations;
    r->profile_lm = r->profile_peak;
    if ((st = vc__serve_pool(VC_DT_BF16, o, so, gpu, VC_USES_GEMM | VC_USES_FLASH, v.hidden, r, err))) return st;

    /* one request's pages: the compressed latents and indexer keys (by 256 tokens), the sliding windows, the states */
    for (int k = 0; k < 3; k++) r->v4_layers[k] = v.layers[k];
    r->v4_block_bytes[1] = v.page_compressed[1] + v.page_indexer;
    r->v4_block_bytes[2] = v.page_compressed[2];
    r->v4_swa_request = layers * window_pages(v.window, 64, T, n) * v.page_swa;
    r->v4_state_request = csa * window_pages(8, 4, T, n) * (v.page_state[1] + v.page_indexer_state) +
                          hca * window_pages(128, 8, T, n) * v.page_state[2];
    r->v4_request_bytes = cdiv(n, v.block_size) * v.per_block + r->v4_swa_request + r->v4_state_request;
    r->block_size = v.block_size;
    r->page_bytes = v.per_block;
    r->concurrency = r->kv_cache / r->v4_request_bytes;
    r->tokens = r->concurrency * n;
    r->blocks = r->concurrency * cdiv(n, v.block_size);
    if (r->concurrency == 0)
        return vc_set_error(err, VC_ERR_USAGE, O("serve"), "one request of %lld tokens (" O("prompt") " + " O("new_tokens")
                            ") needs more KV cache (%lld bytes of DeepSeek-V4's pages) than the %lld bytes left on %s "
                            "(vLLM refuses to start)", (long long)n, (long long)r->v4_request_bytes,
                            (long long)r->kv_cache, gpu->name);
    return VC_OK;
}

vc_status vc__serve_dsv4_file(const char *path, const vc_options *o, const vc_serve_options *so, const vc_gpu_spec *gpu,
                              unsigned given, vc_serve_result *r, bool *served, char *desc, size_t desc_n, vc_error *err)
{
    *served = false;
    if (!path[0] || !strcmp(path, "-")) return VC_OK; /* standard input is read once: the loader's */
    char *resolved = NULL, *buf = NULL;
    size_t n;
    vc_error e;
    vc_error_clear(&e);
    if (vc__model_resolve(path, &resolved, &e) != VC_OK) return VC_OK; /* the loader says what it is */
    vc_status st = VC_OK;
    if (vc_read_file(resolved ? resolved : path, (size_t)VC_MAX_FILE_BYTES, &buf, &n, &e) == VC_OK) {
        cJSON *cfg = cJSON_ParseWithLength(buf, n);
        const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
        if (cJSON_IsString(mt) && !strcmp(mt->valuestring, "deepseek_v4")) {
            *served = true;
            vc_options ob = *o; /* its only precision (refusals below): the fit check's messages say bf16 */
            if (!(given & VC_DSV4_PRECISION)) ob.precision = VC_PREC_BF16;
            st = vc__serve_dsv4(cfg, &ob, so, gpu, given, r, err);
            const cJSON *ed = cJSON_GetObjectItemCaseSensitive(cfg, "expert_dtype"); /* checked by vc__serve_dsv4 */
            snprintf(desc, desc_n, "fp8 blocks, %s experts (DeepseekV4FP8Config)",
                     cJSON_IsString(ed) && !strcmp(ed->valuestring, "fp8") ? "fp8" : "MXFP4");
        }
        cJSON_Delete(cfg);
    }
    free(buf);
    free(resolved);
    return st;
}
