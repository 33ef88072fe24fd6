/*
 * serve_encdec.c — --serve for an encoder-decoder: Whisper under vLLM (issue 31; docs/llm.md "Whisper
 * under vLLM"). src/engine/serve.c calls the three functions below where it builds the profiling run,
 * where it has the run's peak, and where it has the KV pool.
 *
 * vLLM (github:vllm-project/vllm; each behaviour at the commit the search index stores of its file):
 *  - vllm/model_executor/models/whisper.py @ 00a23257a13090193fb098c7573598c5fdb4b15e
 *    WhisperForConditionalGeneration: the encoder's WhisperAttention (AttentionType.ENCODER,
 *    MMEncoderAttention: no cache), each decoder layer's self-attention (Attention, AttentionType.DECODER)
 *    and WhisperCrossAttention (CrossAttention, AttentionType.ENCODER_DECODER); the parameters:
 *    QKVParallelLinear qkv_proj with bias=True (self-attention, both stacks) and q_proj + MergedColumnParallel
 *    kv_proj with bias=True (cross-attention), so every attention has a k_proj bias the checkpoint lacks
 *    (load_weights: _create_fake_bias_for_k_proj yields zeros(weight.size(0)) for each ".k_proj.weight":
 *    d_model elements an attention); proj_out = ParallelLMHead(...).tie_weights(model.decoder.embed_tokens)
 *    whatever tie_word_embeddings says, load_weights skipping "proj_out." (an untied checkpoint's proj_out is
 *    not loaded); WhisperEncoder.embed_positions an nn.Embedding(max_source_positions, d_model) in the
 *    model's dtype (init_in_fp32 False); WhisperProcessingInfo.get_num_audio_tokens: max_source_positions;
 *    WhisperDummyInputsBuilder: chunk_length x sampling_rate samples (30 s) per dummy clip;
 *  - vllm/v1/worker/gpu_model_runner.py @ 000fc94b754f66aeb60ef5acf1ea2e94cdc65164 profile_run: the model
 *    supports multimodal inputs (audio), so first mm_budget's dummy batch of max_mm_items_per_batch["audio"]
 *    clips (_get_mm_dummy_batch: the dummy item repeated, batched onto the device) through
 *    model.embed_multimodal (WhisperEncoder.forward over every clip, output [clips, max_source_positions,
 *    d_model], unbound per clip), each output kept in self.encoder_cache["tmp_i"] (and the dummy batch and
 *    outputs in profile_run's locals) until after the decoder's run; then _dummy_run(max_num_tokens,
 *    is_profile=True) and _dummy_sampler_run: the decoder alone (src/hf/hf_whisper.c vllm_decoder: no
 *    encoder outputs are passed, the cross-attention computes no keys and values, the attention backends
 *    return their zeroed output buffer without metadata); encoder_cache.clear() after both;
 *  - the dummy clips: vllm/multimodal/encoder_budget.py @ 042a4d3ee43ed07875505b04e93a5a14ddf86964
 *    MultiModalBudget and vllm/v1/core/encoder_cache_manager.py @ 003ad86e237cfccb7846111921a0230a45005196
 *    compute_mm_encoder_budget (as serve_mm.c's vc__serve_mm reads them): tokens per clip T =
 *    max_source_positions (the processor's PromptReplacement of [0] * get_num_audio_tokens()); the encoder
 *    budget min(compute budget, cache size) = max(max_num_batched_tokens, T) (max_num_batched_encoder_embeds
 *    and encoder_cache_size unset); _get_max_items: per prompt max(1, min(limit 1 (get_supported_mm_limits
 *    {"audio": 1}), max_model_len // T)) = 1, and since an encoder-decoder runs without chunked prefill
 *    (vllm/config/scheduler.py SchedulerConfig.__post_init__: is_encoder_decoder sets enable_chunked_prefill
 *    False and disable_chunked_mm_input True) max_num_reqs = min(max_num_seqs, max_num_batched_tokens // T);
 *    clips = max(1, min(budget // T, max_num_reqs x 1)): 5 under an H100's defaults (8192 // 1500);
 *  - what vLLM refuses for it: SchedulerConfig.verify_max_model_len (chunked prefill off:
 *    max_num_batched_tokens < max_model_len is a ValueError); compute_mm_encoder_budget (disable_chunked_mm_input
 *    and T > max_num_batched_tokens: ValueError "Chunked MM input disabled but max_tokens_per_mm_item ...");
 *    max_model_len past max_target_positions (serve.c's vllm_max_model_len, the derived length);
 *  - the KV cache: vllm/v1/kv_cache_interface.py @ 001cabc1be16a59a70d720ed61a13b678c060a18: each decoder
 *    layer's self-attention a FullAttentionSpec (max_memory_usage_bytes: cdiv(max_model_len, block_size)
 *    pages), its cross-attention a CrossAttentionSpec (cdiv(max_num_encoder_input_tokens, block_size) pages,
 *    max_num_encoder_input_tokens the encoder's length: VllmConfig.__post_init__ sets it to
 *    MULTIMODAL_REGISTRY.get_encdec_max_encoder_len, max_source_positions), both AttentionSpec pages of
 *    2 x block_size x num_kv_heads x head_size x dtype bytes (2 x block_size x d_model x dtype at one rank);
 *    vllm/v1/core/kv_cache_utils.py (get_kv_cache_groups: the two spec types are not one type, the pages
 *    are one size: _get_kv_cache_groups_uniform_page_size, as serve.c's hybrid pool) two KV cache groups of
 *    decoder_layers layers, group_size decoder_layers, num_blocks = available // page_size // group_size
 *    (get_num_blocks); get_max_concurrency_for_kv_cache_config: a request takes, summed over the groups,
 *    cdiv(max_memory_usage_bytes, page_size_bytes) blocks: cdiv(prompt + new tokens, block_size) +
 *    cdiv(max_source_positions, block_size);
 *  - CUDA graphs: vllm/config/vllm.py @ 000fc94b VllmConfig.__post_init__: "Encoder-decoder models do not
 *    support %s. Overriding cudagraph_mode to FULL_DECODE_ONLY": no PIECEWISE graphs, the FULL decode ones;
 *  - --tp: a rank's model (src/hf/hf_tp.c "whisper": heads / tp, column and row shards, the vocabulary whole:
 *    embed_tokens an nn.Embedding and proj_out tied to it, vllm/model_executor/layers/vocab_parallel_embedding.py
 *    ParallelLMHead.tie_weights: self.weight = embed_tokens.weight), so the weights below are m's per-rank
 *    parameters and a rank's page holds d_model / tp of each token; the encoder's outputs are whole (out_proj and
 *    fc2 all-reduced). serve.c's TP pieces apply as to a decoder-only model: the snapshot's NCCL, custom
 *    all-reduce and symmetric memory, the all-reduce's path by max_num_batched_tokens x d_model (the decoder's
 *    all-reduce, no smaller than the encoder phase's clips x max_source_positions), and src/engine/
 *    serve_nccl.c's logits all-gather, here of each rank's whole-vocabulary logits ([rows, tp x vocab_size]
 *    before LogitsProcessor's logits[..., :org_vocab_size]).
 * Where the stored commits differ: an older MultiModalBudget read the encoder budget from
 * max_num_encoder_input_tokens, which an encoder-decoder sets to T (one dummy clip); the newest
 * encoder_cache_manager.py's budget is max_num_batched_encoder_embeds', max_num_batched_tokens by default:
 * followed here.
 *
 * The estimate: the encoder phase is vLLM's WhisperEncoder op by op (encoder_phase below: conv1 / conv2 with
 * GELU per clip, embed_positions, the stack, each WhisperEncoderLayer's fused qkv_proj, MMEncoderAttention's
 * flash kernel, out_proj, fc1 / GELU / fc2 and cast_overflow_tensors' bools, the final layer_norm) at the dummy
 * clips' batch, above vLLM's weights and the dummy features (in the model's dtype: vllm/inputs/registry.py
 * @ f06ae651 InputProcessingContext.call_hf_processor casts the processor's floating outputs, as
 * src/engine/serve_mm.c reads it); measured by bench/accuracy/llm/vllm_whisper_replica.py (whisper.py's
 * statements in torch 1.13 on the CPU, the harness's allocator counter): encoder_phase's bytes exactly, the
 * replica's readings rounded to its allocator's 512-byte blocks (tests/test_whisper_serve.c replica). The
 * decoder phase is serve.c's profiling plan of vLLM's decoder (part 2) over the dummy requests, the encoder's
 * outputs and the dummy features held beside it; the plan does not hold the Python locals a sub-layer keeps
 * until it returns (held_until), so it may undercount by up to two [rows, d_model] tensors a sub-layer. The
 * profiling peak is the higher phase above vLLM's weights.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "load.h"
#include "serve_encdec.h"
#include "util.h"

#define MIB (INT64_C(1) << 20)

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* A whisper config's model as loaded (not one of the parts below). */
static bool whisper(const vc_model *m)
{
    if (!m->gen_json || m->whisper_part) return false;
    for (size_t i = 0; i < m->ninst; i++)
        if (!strcmp(m->inst[i].kind->name, "WhisperEncoderPositions")) return true;
    return false;
}

/* The config's sizes (WhisperConfig's defaults: configuration_whisper.py, as src/hf/hf.c's row reads them;
 * the loader checked the values) */
typedef struct {
    int64_t d, heads, enc_layers, dec_layers, src, tgt, vocab, mel, enc_heads, enc_ffn;
    bool tie;
} wh_sizes;

static int64_t key_int(const cJSON *cfg, const char *k, int64_t def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, k);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : def;
}

static vc_status sizes(const vc_model *m, wh_sizes *s, vc_error *err)
{
    cJSON *cfg = cJSON_ParseWithLength(m->text, m->text_len);
    if (!cfg) return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    s->d = key_int(cfg, "d_model", 384);
    s->heads = key_int(cfg, "decoder_attention_heads", 6);
    s->enc_layers = key_int(cfg, "encoder_layers", 4);
    s->dec_layers = key_int(cfg, "decoder_layers", 4);
    s->src = key_int(cfg, "max_source_positions", 1500);
    s->tgt = key_int(cfg, "max_target_positions", 448);
    s->vocab = key_int(cfg, "vocab_size", 51865);
    s->mel = key_int(cfg, "num_mel_bins", 80);
    s->enc_heads = key_int(cfg, "encoder_attention_heads", 6);
    s->enc_ffn = key_int(cfg, "encoder_ffn_dim", 1536);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(cfg, "tie_word_embeddings");
    s->tie = !cJSON_IsBool(t) || cJSON_IsTrue(t); /* PretrainedConfig's True */
    cJSON_Delete(cfg);
    return VC_OK;
}

vc_status vc__serve_encdec_decoder(const vc_model *m, const vc_options *o, const vc_serve_result *r, int64_t len,
                                   vc_model **part, vc_error *err)
{
    *part = NULL;
    if (!whisper(m)) return VC_OK;
    vc_status st = vc__whisper_check(m, o, true, err); /* what is refused for whisper (src/hf/hf_whisper.c) */
    if (st) return st;
    wh_sizes s;
    st = sizes(m, &s, err);
    if (st) return st;
    int64_t max_model_len; /* the requests' length */
    if (__builtin_add_overflow(o->prompt, o->new_tokens, &max_model_len))
        return vc_set_error(err, VC_ERR_USAGE, O("new_tokens"), "prompt + new tokens pass 2^63");
    if (max_model_len > s.tgt) /* _get_and_verify_max_len: the derived max_model_len is max_target_positions */
        return vc_set_error(err, VC_ERR_USAGE, O("prompt"), "prompt + new tokens (%lld tokens) pass whisper's "
                            "max_target_positions (%lld): vLLM refuses a max_model_len over it (ModelConfig: "
                            "\"User-specified max_model_len ... is greater than the derived max_model_len\")",
                            (long long)max_model_len, (long long)s.tgt);
    if (r->max_num_batched_tokens < max_model_len) /* SchedulerConfig.verify_max_model_len, chunked prefill off */
        return vc_set_error(err, VC_ERR_USAGE, O("max_num_batched_tokens"), "%lld is less than the requests' length "
                            "(" O("prompt") " + " O("new_tokens") ", %lld): an encoder-decoder runs without chunked "
                            "prefill and vLLM refuses to start (SchedulerConfig: ValueError)",
                            (long long)r->max_num_batched_tokens, (long long)max_model_len);
    if (r->max_num_batched_tokens < s.src) /* compute_mm_encoder_budget with disable_chunked_mm_input */
        return vc_set_error(err, VC_ERR_USAGE, O("max_num_batched_tokens"), "%lld is less than a clip's %lld encoder "
                            "tokens (max_source_positions): an encoder-decoder's audio is not chunked and vLLM refuses "
                            "to start (compute_mm_encoder_budget: ValueError)",
                            (long long)r->max_num_batched_tokens, (long long)s.src);
    return vc__model_part(m, 2, len, part, err); /* the decoder alone, at the requests' length */
}

static int64_t mx(int64_t a, int64_t b) { return a > b ? a : b; }

/* vLLM's WhisperEncoder.forward over `clips` dummy clips (the header's whisper.py, read op by op as eager PyTorch
 * runs it: the encoder is not compiled, no support_torch_compile on WhisperEncoder; under inference_mode), its
 * peak above the weights and the dummy features, in bytes; -1 past 2^63. e the activations' bytes, tp the ranks.
 * Per clip (T = max_source_positions rows, C = d_model), the loop over the clips (each a [num_mel_bins, 2T] slice
 * of the batch, unbatched to nn.Conv1d):
 *   embeds = gelu(conv1(features)): conv1's [C, 2T] output and GELU's; embeds = gelu(conv2(embeds)): the first
 *   GELU's output (still named embeds) with conv2's [C, T] output and its GELU; transpose a view; embeds +
 *   embed_positions.weight[:T] a new [T, C] (.to(embeds.dtype) itself: the table is in the model's dtype); each
 *   clip's embeds kept in the hidden_states list: at the last clip's conv (clips - 1 + 4) x T x C;
 * torch.stack(hidden_states) (the embeds are 2-D: input_is_batched False): the list and the stack, 2 x clips x T x C;
 * the loop's name embeds keeps the last clip's [T, C] alive until forward returns;
 * then each WhisperEncoderLayer over N = clips x T rows, its input held by the caller (forward's hidden_states and
 * the nn.Module call's args), per row:
 *   self_attn_layer_norm (nn.LayerNorm: a new output); WhisperAttention.forward: qkv_proj (QKVParallelLinear,
 *   3 C / tp), q, k, v split views, WhisperEncoderAttention -> MMEncoderAttention.forward_cuda (the custom op is
 *   always enabled) -> _forward_fa (vllm/model_executor/layers/attention/mm_encoder_attention.py @ 03037b42: the
 *   backend get_vit_attn_backend's, FLASH_ATTN on an NVIDIA card from sm80; view to [b, s, h, d], no copy) ->
 *   vllm/v1/attention/ops/vit_attn_wrappers.py @ 03037b42 flash_attn_maxseqlen_wrapper (cu_seqlens an int32
 *   arange of clips + 1, not counted; the (b s) rearranges views): flash_attn_varlen_func's output [N, heads / tp,
 *   head_dim] and its float32 softmax_lse [heads / tp, N] inside the kernel; output.reshape a view; out_proj
 *   (RowParallelLinear: [N, C], at tp > 1 all-reduced into a new tensor, tensor_model_parallel_all_reduce out of
 *   place) with qkv and the attention's output alive until WhisperAttention.forward returns; residual + attn;
 *   final_layer_norm; WhisperMLP: fc1 (ColumnParallelLinear, I / tp), activation_fn (get_act_fn("gelu"):
 *   vllm/model_executor/layers/activation.py @ 00db0119 _ACTIVATION_REGISTRY nn.GELU(), a new output), fc2 (as
 *   out_proj) with fc1's output named until the rebind; residual + mlp; cast_overflow_tensors (vllm/model_executor/
 *   models/utils.py: tensors.isinf().any() or tensors.isnan().any(), a [N, C] bool each, one at a time; the clamp
 *   only on an inf or a nan);
 * then layer_norm: its input and output, 2 x N x C. Not counted: the kernels' own workspaces (cuDNN's for the
 * convolutions, cuBLAS's, LayerNorm's per-row mean and rstd) and the tiny index tensors. Below sm80 vLLM takes
 * TORCH_SDPA (apply_sdpa's output and output.reshape's copy of its permuted view, C / tp a row more than flash's
 * softmax_lse at that op; the whisper sizes' MLP op stays higher): not distinguished here. */
static int64_t encoder_phase(const wh_sizes *s, int64_t clips, int64_t e, int64_t tp)
{
    const int64_t C = s->d, h = s->d / tp, I = s->enc_ffn / tp, H = s->enc_heads / tp, T = s->src;
    const int64_t red = tp > 1 ? C * e : 0; /* a row-parallel layer's all-reduced copy */
    int64_t row = 2 * C * e;                                  /* self_attn_layer_norm */
    row = mx(row, 2 * C * e + 3 * h * e + h * e + 4 * H);     /* qkv, the flash output and softmax_lse */
    row = mx(row, 2 * C * e + 4 * h * e + C * e + red);       /* out_proj */
    row = mx(row, 3 * C * e);                                 /* residual + attn; final_layer_norm */
    row = mx(row, 3 * C * e + 2 * I * e);                     /* fc1 and GELU */
    row = mx(row, 3 * C * e + I * e + C * e + red);           /* fc2 */
    row = mx(row, 4 * C * e);                                 /* residual + mlp */
    row = mx(row, 3 * C * e + C);                             /* cast_overflow_tensors' isinf / isnan bools */
    if (s->enc_layers < 1) row = 0;
    /* bytes a row of a clip: the convolutions' (clips + 3) and the stack's 2 x clips [T, C]; the layers', the
     * final layer_norm's 2 [T, C] a clip, and the last clip's embeds (the loop's name, alive until forward returns) */
    int64_t conv, layers, b;
    if (__builtin_mul_overflow(clips + 3 > 2 * clips ? clips + 3 : 2 * clips, C * e, &conv) ||
        __builtin_mul_overflow(mx(row, 2 * C * e), clips, &layers) || __builtin_add_overflow(layers, C * e, &layers) ||
        __builtin_mul_overflow(mx(conv, layers), T, &b))
        return -1;
    return b;
}

vc_status vc__serve_encdec_profile(const vc_model *m, const vc_options *o, const vc_sim *dec, vc_dtype act,
                                   vc_serve_result *r, vc_error *err)
{
    wh_sizes s;
    vc_status st = sizes(m, &s, err);
    if (st) return st;
    (void)o; /* the run's options: the encoder phase reads none of them (m->tp the ranks) */
    const int64_t es = vc_dtype_size(act), T = s.src;
    /* the dummy clips (MultiModalBudget, compute_mm_encoder_budget, _get_max_items: above) */
    const int64_t budget = r->max_num_batched_tokens > T ? r->max_num_batched_tokens : T;
    int64_t reqs = r->max_num_batched_tokens / T; /* chunked prefill off */
    if (r->max_num_seqs < reqs) reqs = r->max_num_seqs;
    int64_t clips = budget / T < reqs ? budget / T : reqs; /* x 1 clip per prompt */
    if (clips < 1) clips = 1;
    /* vLLM's weights: the checkpoint's parameters (m: transformers' model, tied counted once; at --tp a rank's
     * shards, src/hf/hf_tp.c), a zero k_proj bias for every attention (encoder_layers + 2 x decoder_layers of
     * them; a rank's d_model / tp of each), no proj_out of its own (the vocabulary whole on every rank) */
    const int64_t tp = m->tp > 1 ? m->tp : 1;
    int64_t n = m->nparams + s.d / tp * (s.enc_layers + 2 * s.dec_layers) - (s.tie ? 0 : s.vocab * s.d);
    for (size_t i = 0; i < m->nbuf; i++) n += m->buf[i].numel;
    /* the encoder phase: vLLM's WhisperEncoder over the clips, op by op (encoder_phase above) */
    const int64_t enc_act = encoder_phase(&s, clips, es, tp);
    /* the dummy batch: input_features [num_mel_bins, 2 x T] a clip, in the model's dtype (InputProcessingContext
     * .call_hf_processor's maybe_cast_dtype; _parse_and_validate_audio_input's .to(self.dtype) returns it), a
     * profile_run local held through both phases; the encoder's outputs [T, d_model] a clip */
    int64_t feats, outs, wbytes, enc_peak, dec_peak;
    if (enc_act < 0 || __builtin_mul_overflow(clips * s.mel, 2 * T * es, &feats) ||
        __builtin_mul_overflow(clips * T, s.d * es, &outs) || __builtin_mul_overflow(n, es, &wbytes) ||
        __builtin_add_overflow(wbytes, enc_act, &enc_peak) || __builtin_add_overflow(enc_peak, feats, &enc_peak))
        return vc_set_error(err, VC_ERR_OVERFLOW, O("max_num_batched_tokens"), "the encoder profiling passes 2^63 bytes");
    dec_peak = wbytes + (dec->peak - dec->persistent[CAT_WEIGHT]) + outs + feats;
    r->weights = wbytes;
    r->encoder_peak = enc_peak;
    r->decoder_peak = dec_peak;
    r->profile_peak = enc_peak > dec_peak ? enc_peak : dec_peak;
    r->mm_encoder = 1;
    r->mm_items = clips;
    r->mm_item_tokens = T;
    r->mm_item_width = r->mm_item_height = 0; /* audio: no picture */
    r->mm_budget = budget;
    r->mm_outputs = outs;
    return VC_OK;
}

vc_status vc__serve_encdec_pool(const vc_model *m, const vc_serve_options *so, vc_dtype act, int kv_bytes,
                                vc_serve_result *r, vc_error *err)
{
    wh_sizes s;
    vc_status st = sizes(m, &s, err);
    if (st) return st;
    (void)act;
    const int64_t B = so->block_size, L = s.dec_layers, tp = m->tp > 1 ? m->tp : 1;
    /* one layer's page: 2 x block_size x num_kv_heads x head_size x dtype, a rank's num_kv_heads heads / tp
     * (WhisperAttention: max(1, total_num_heads // tp_size), the heads divisible by tp: hf_tp.c), so d_model / tp */
    int64_t page;
    if (__builtin_mul_overflow(2 * B * kv_bytes, s.d / tp, &page) || __builtin_mul_overflow(page, L, &r->page_bytes))
        return vc_set_error(err, VC_ERR_OVERFLOW, O("serve"), "a KV block passes 2^63 bytes");
    /* two groups (self-attention, cross-attention) of L layers: a block is a page of every layer of a group */
    r->blocks = r->kv_cache / r->page_bytes;
    r->tokens = r->blocks / 2 * B;
    r->block_size = B;
    r->cross_layers = L;
    r->cross_tokens = s.src;
    r->blocks_per_request = cdiv(r->request_tokens, B) + cdiv(s.src, B);
    r->concurrency = r->blocks / r->blocks_per_request;
    /* FULL_DECODE_ONLY: the FULL decode graphs, no PIECEWISE ones */
    if (r->graphs_why != VC_SERVE_GRAPHS_EAGER) {
        r->graphs_piecewise = r->graphs_largest_piecewise = 0;
        r->graphs_floor = r->graphs_full > 0 ? (r->graphs_full - 1) * MIB : 0;
    }
    if (r->concurrency == 0)
        return vc_set_error(err, VC_ERR_USAGE, O("serve"), "one request (%lld decoder tokens, " O("prompt") " + "
                            O("new_tokens") ", and %lld encoder positions) needs %lld KV blocks, more than the %lld the "
                            "pool holds (vLLM refuses to start)", (long long)r->request_tokens, (long long)s.src,
                            (long long)r->blocks_per_request, (long long)r->blocks);
    return VC_OK;
}
