/* --serve of a whisper config (issue 31; src/engine/serve_encdec.c): vLLM's weights, its profiling run's
 * two phases, and its KV pool of decoder self-attention and cross-attention layers, on an H100 with vLLM's
 * defaults. Every expected value is derived by hand from vLLM's sources (each at the commit the search index
 * stores of its file):
 *  - vllm/model_executor/models/whisper.py @ 00a23257a13090193fb098c7573598c5fdb4b15e: QKVParallelLinear
 *    qkv_proj (bias=True) in every self-attention of both stacks, q_proj + MergedColumnParallelLinear kv_proj
 *    (bias=True) in every cross-attention, _create_fake_bias_for_k_proj's zeros(d_model) for each checkpoint
 *    ".k_proj.weight": d_model more elements an attention than transformers' model (k_proj has no bias there);
 *    proj_out = ParallelLMHead(...).tie_weights(embed_tokens): tied; get_num_audio_tokens: max_source_positions;
 *    get_supported_mm_limits {"audio": 1};
 *  - vllm/v1/worker/gpu_model_runner.py @ 000fc94b754f66aeb60ef5acf1ea2e94cdc65164 profile_run: the encoder
 *    over max_mm_items_per_batch dummy clips, outputs kept in encoder_cache through _dummy_run(max_num_tokens)
 *    and _dummy_sampler_run;
 *  - vllm/multimodal/encoder_budget.py @ 042a4d3e MultiModalBudget._get_max_items and vllm/v1/core/
 *    encoder_cache_manager.py @ 003ad86e compute_mm_encoder_budget: budget max(max_num_batched_tokens, 1500) =
 *    8192; per prompt max(1, min(1, 448 // 1500)) = 1; chunked prefill off for an encoder-decoder
 *    (vllm/config/scheduler.py SchedulerConfig.__post_init__), so max_num_reqs = min(1024, 8192 // 1500) = 5;
 *    clips max(1, min(8192 // 1500, 5 x 1)) = 5;
 *  - vllm/v1/kv_cache_interface.py @ 001cabc1be16a59a70d720ed61a13b678c060a18: AttentionSpec.page_size_bytes
 *    2 x block_size x num_kv_heads x head_size x dtype; FullAttentionSpec.max_memory_usage_bytes
 *    cdiv(max_model_len, block_size) pages; CrossAttentionSpec.max_memory_usage_bytes
 *    cdiv(max_num_encoder_input_tokens = 1500, block_size) pages;
 *  - vllm/v1/core/kv_cache_utils.py: the FullAttentionSpec and CrossAttentionSpec layers in two groups of
 *    decoder_layers layers (_get_kv_cache_groups_uniform_page_size), num_blocks = available // page_size //
 *    group_size (get_num_blocks), get_max_concurrency_for_kv_cache_config: num_blocks / the sum over the
 *    groups of cdiv(max_memory_usage_bytes, page_size_bytes).
 *  - the encoder phase (src/engine/serve_encdec.c encoder_phase, read op by op from whisper.py's WhisperEncoder,
 *    WhisperEncoderLayer, WhisperAttention, WhisperMLP, mm_encoder_attention.py @ 03037b42 MMEncoderAttention's
 *    flash path, utils.py cast_overflow_tensors): above the weights, the dummy features clips x num_mel_bins x 3000
 *    in the model's dtype (vllm/inputs/registry.py @ f06ae651 call_hf_processor casts them), and T = 1500 rows a
 *    clip of: the worst layer op x clips + the last clip's embeds (WhisperEncoder.forward's loop name), the layer's
 *    worst op a row the max of the attention's x, norm, qkv (3 d / tp), flash output (d / tp) and float32 lse
 *    (4 heads / tp), out_proj's output (+ its all-reduced copy at tp > 1), and the MLP's x, residual, norm, fc1
 *    and GELU outputs (2 I / tp) or fc1's and fc2's (+ the all-reduced copy): for whisper's I = 4 d the fc1 / GELU
 *    op, 3 d + 2 I / tp elements a row; the convolutions ((clips + 3) [T, d]) and the stack (2 clips) lower.
 * The requests: vLLM's derived max_model_len for whisper is max_target_positions, 448 (vllm/config/model.py
 * _get_and_verify_max_len), its transcription prompt 4 decoder tokens (whisper.py get_generation_prompt):
 * --serve's default request is 4 + 444. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "vramcalc/vramcalc.h"
#include "load_file.h"
#include "cli_run.h"
#include "cli_spelt.h"

#define HF VC_TEST_DATA "/hf/"

static void serve_h100_at(const char *file, vc_precision prec, int64_t tp, vc_serve_result *r)
{
    vc_model *m = load_file(file);
    vc_options o;
    vc_options_init(&o);
    o.precision = prec;
    o.tp = tp;
    o.gpus = tp;
    o.prompt = 4;
    o.new_tokens = 444;
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_gpu_spec g;
    vc_error err;
    assert_int_equal(vc_gpu_parse("h100-80gb", &g, &err), VC_OK);
    if (vc_serve(m, &o, &so, &g, r, &err)) fail_msg("vc_serve: %s", err.msg);
    vc_model_free(m);
}

static void serve_h100(const char *file, vc_serve_result *r)
{
    serve_h100_at(file, VC_PREC_BF16, 1, r); /* vLLM's --dtype auto for a float32 checkpoint on an sm90 card */
}

/* transformers' WhisperForConditionalGeneration parameters (modeling_whisper.py, tied), by the layers: an
 * attention 4 d^2 weights + 3 d biases (k_proj none), a LayerNorm 2 d, the MLP d x I + I + I x d + d */
static int64_t hf_params(int64_t d, int64_t I, int64_t enc, int64_t dec, int64_t mel, int64_t src, int64_t tgt, int64_t V)
{
    const int64_t attn = 4 * d * d + 3 * d, ln = 2 * d, mlp = d * I + I + I * d + d;
    const int64_t conv = mel * d * 3 + d + d * d * 3 + d;
    return conv + src * d + enc * (attn + ln + mlp + ln) + ln + V * d + tgt * d + dec * (2 * attn + 3 * ln + mlp) + ln;
}

static void whisper_small(void **state)
{
    (void)state;
    /* d_model 768, ffn 3072, 12 + 12 layers, 12 heads, 80 mel bins, 1500 / 448 positions, vocab 51865 */
    const int64_t P = hf_params(768, 3072, 12, 12, 80, 1500, 448, 51865);
    assert_int_equal(P, 241734912); /* openai/whisper-small's published parameter count */
    vc_serve_result r;
    serve_h100(HF "whisper-small.json", &r);
    /* vLLM's weights: + a zero k_proj bias in 12 encoder, 12 decoder self- and 12 cross-attentions: 36 x 768;
     * bf16: (241,734,912 + 27,648) x 2 = 483,525,120 B */
    assert_int_equal(r.weights, (P + 36 * 768) * 2);
    assert_int_equal(r.weights, 483525120);
    /* the dummy clips: 5 of 1500 positions; their outputs 5 x 1500 x 768 x 2 B = 11,520,000 B */
    assert_int_equal(r.mm_items, 5);
    assert_int_equal(r.mm_item_tokens, 1500);
    assert_int_equal(r.mm_budget, 8192);
    assert_int_equal(r.mm_outputs, 11520000);
    /* the two phases: the peak is the higher; the decoder's holds the weights, the outputs and the features */
    assert_int_equal(r.profile_peak, r.encoder_peak > r.decoder_peak ? r.encoder_peak : r.decoder_peak);
    assert_true(r.decoder_peak > r.weights + r.mm_outputs + 5 * 80 * 3000 * 2);
    /* the encoder phase: the features 5 x 80 x 3000 x 2 B = 2,400,000; a layer's worst op the MLP's, (3 x 768 +
     * 2 x 3072) x 2 B = 16,896 B a row (out_proj's 7 x 768 x 2 = 10,752 and the flash op's 6 x 768 x 2 + 4 x 12 =
     * 9,264 lower), x 5 clips + the last clip's embeds 768 x 2: 86,016 B a position, x 1500 = 129,024,000 */
    assert_int_equal(r.encoder_peak, r.weights + 2400000 + (16896 * 5 + 1536) * 1500);
    assert_int_equal(r.encoder_peak, 614949120);
    /* the pool: one layer's page 2 x 16 x 12 heads x 64 x 2 B = 49,152 B; a block is a page of each of a
     * group's 12 layers: 589,824 B; two groups (self, cross) of 12 */
    assert_int_equal(r.kv_cache, r.requested - r.profile_peak - r.non_torch);
    assert_int_equal(r.page_bytes, 589824);
    assert_int_equal(r.cross_layers, 12);
    assert_int_equal(r.cross_tokens, 1500);
    assert_int_equal(r.blocks, r.kv_cache / 589824);
    assert_int_equal(r.tokens, r.blocks / 2 * 16);
    /* a request: cdiv(448, 16) = 28 self-attention blocks + cdiv(1500, 16) = 94 cross-attention blocks */
    assert_int_equal(r.request_tokens, 448);
    assert_int_equal(r.blocks_per_request, 122);
    assert_int_equal(r.concurrency, r.blocks / 122);
    /* FULL_DECODE_ONLY (vllm/config/vllm.py @ 000fc94b VllmConfig.__post_init__): no PIECEWISE graphs */
    assert_int_equal(r.graphs_piecewise, 0);
    assert_true(r.graphs_full > 0);
}

static void whisper_large_v3(void **state)
{
    (void)state;
    /* d_model 1280, ffn 5120, 32 + 32 layers, 20 heads, 128 mel bins, vocab 51866 */
    const int64_t P = hf_params(1280, 5120, 32, 32, 128, 1500, 448, 51866);
    assert_int_equal(P, 1543490560); /* openai/whisper-large-v3's published parameter count */
    vc_serve_result r;
    serve_h100(HF "whisper-large-v3.json", &r); /* bf16 given (vLLM's --dtype bfloat16) */
    assert_int_equal(r.weights, (P + 96 * 1280) * 2); /* 32 + 32 + 32 zero k_proj biases */
    assert_int_equal(r.weights, 3087226880);
    /* a page 2 x 16 x 20 x 64 x 2 B = 81,920 B, 32 layers a block: 2,621,440 B */
    assert_int_equal(r.page_bytes, 2621440);
    assert_int_equal(r.cross_layers, 32);
    assert_int_equal(r.blocks, r.kv_cache / 2621440);
    assert_int_equal(r.blocks_per_request, 122);
    assert_int_equal(r.concurrency, r.blocks / 122);
    assert_int_equal(r.mm_outputs, 5 * 1500 * 1280 * 2);
    /* the encoder phase: features 5 x 128 x 3000 x 2 B = 3,840,000; the MLP op (3 x 1280 + 2 x 5120) x 2 B = 28,160 B
     * a row, x 5 + 2,560 (the last clip's embeds) = 143,360 B a position, x 1500 = 215,040,000 */
    assert_int_equal(r.encoder_peak, r.weights + 3840000 + 215040000);
    assert_int_equal(r.encoder_peak, 3306106880);
    /* fp16, vLLM's --dtype auto for this float16 checkpoint: the op sequence of bf16 (vllm/model_executor/models/
     * whisper.py @ 00a23257 WhisperEncoderLayer.forward calls utils.py cast_overflow_tensors in every dtype; its
     * isinf / isnan bools stay under the layer's MLP peak, its clamp runs only on an inf or a nan: src/hf/
     * hf_whisper.c vc__whisper_check), two bytes an element as bf16: every figure the same */
    vc_serve_result h;
    serve_h100_at(HF "whisper-large-v3.json", VC_PREC_FP16, 1, &h);
    assert_int_equal(h.weights, r.weights);
    assert_int_equal(h.encoder_peak, r.encoder_peak);
    assert_int_equal(h.decoder_peak, r.decoder_peak);
    assert_int_equal(h.profile_peak, r.profile_peak);
    assert_int_equal(h.non_torch, r.non_torch);
    assert_int_equal(h.kv_cache, r.kv_cache);
    assert_int_equal(h.page_bytes, r.page_bytes);
    assert_int_equal(h.blocks, r.blocks);
    assert_int_equal(h.concurrency, r.concurrency);
    assert_int_equal(h.graphs_full, r.graphs_full);
}

/* A rank's parameters at vLLM's --tp t (vllm/model_executor/models/whisper.py @ 00a23257: WhisperAttention's
 * qkv_proj QKVParallelLinear, the cross-attention's q_proj ColumnParallelLinear and kv_proj
 * MergedColumnParallelLinear, each d x d / t with a d / t bias, out_proj RowParallelLinear d / t x d with its whole
 * d bias; WhisperMLP's fc1 ColumnParallelLinear d x I / t + I / t, fc2 RowParallelLinear I / t x d + d; conv1,
 * conv2, both embed_positions, the LayerNorms and embed_tokens (an nn.Embedding, proj_out tied to it) whole),
 * plus vLLM's zero k_proj bias shard, d / t, in each of the enc + 2 dec attentions */
static int64_t vllm_rank_params(int64_t d, int64_t I, int64_t enc, int64_t dec, int64_t mel, int64_t src, int64_t tgt,
                                int64_t V, int64_t t)
{
    const int64_t h = d / t, i = I / t;
    const int64_t attn = 4 * d * h + 3 * h + d, ln = 2 * d, mlp = d * i + i + i * d + d;
    const int64_t conv = mel * d * 3 + d + d * d * 3 + d;
    return conv + src * d + enc * (attn + ln + mlp + ln) + ln + V * d + tgt * d + dec * (2 * attn + 3 * ln + mlp) + ln;
}

/* --tp 2 on H100s (vLLM's tensor-parallel whisper; src/hf/hf_tp.c, src/engine/serve_encdec.c) */
static void whisper_large_v3_tp2(void **state)
{
    (void)state;
    /* at t = 1 the same sum is transformers' parameters plus the 96 whole zero biases (above) */
    assert_int_equal(vllm_rank_params(1280, 5120, 32, 32, 128, 1500, 448, 51866, 1), 1543490560 + 96 * 1280);
    const int64_t P = vllm_rank_params(1280, 5120, 32, 32, 128, 1500, 448, 51866, 2);
    /* an attention (the zero k bias in) 4 x 1280 x 640 + 3 x 640 + 1280 = 3,280,000; an MLP 2 x 1280 x 2560 + 2560 +
     * 1280 = 6,557,440; encoder 5,409,280 (convs) + 1,920,000 (positions) + 32 x 9,842,560 + 2,560 = 322,293,760;
     * decoder 66,388,480 (embed_tokens, whole) + 573,440 + 32 x 13,125,120 + 2,560 = 486,968,320: 809,262,080 */
    assert_int_equal(P, 809262080);
    vc_serve_result r, h;
    serve_h100_at(HF "whisper-large-v3.json", VC_PREC_BF16, 2, &r);
    assert_int_equal(r.weights, P * 2);
    assert_int_equal(r.weights, 1618524160);
    /* a rank's KV page: num_kv_heads 20 / 2 = 10 heads of 64: 2 x 16 x 10 x 64 x 2 B = 40,960 B, 32 layers a block */
    assert_int_equal(r.page_bytes, 1310720);
    assert_int_equal(r.blocks, r.kv_cache / 1310720);
    assert_int_equal(r.tokens, r.blocks / 2 * 16);
    assert_int_equal(r.blocks_per_request, 122);
    assert_int_equal(r.concurrency, r.blocks / 122);
    /* the encoder's outputs are whole (out_proj / fc2's all-reduced outputs): 5 x 1500 x 1280 x 2 B */
    assert_int_equal(r.mm_outputs, 19200000);
    /* the encoder phase on a rank: qkv 3 x 640, fc1 2560 a row; the MLP's fc1 / GELU op (3 x 1280 + 2 x 2560) x 2 B
     * = 17,920 B a row, fc2's with its all-reduced copy (3 x 1280 + 2560 + 1280 + 1280) x 2 B the same, out_proj's
     * (2 x 1280 + 4 x 640 + 2 x 1280) x 2 B = 15,360 lower; x 5 + 2,560 = 92,160 B a position, x 1500 =
     * 138,240,000, and the features 3,840,000 */
    assert_int_equal(r.encoder_peak, r.weights + 3840000 + 138240000);
    assert_int_equal(r.encoder_peak, 1760604160);
    assert_int_equal(r.kv_cache, r.requested - r.profile_peak - r.non_torch);
    /* serve.c's TP pieces: the logits' all-gather communicator; the all-reduce of 8192 x 1280 x 2 B = 20 MiB in
     * bf16 takes the symmetric memory (under its 64 MiB at sm90, tp 2: all_reduce_utils.py), no NCCL NVLS buffers */
    assert_true(r.non_torch_logits_nccl > 0);
    assert_int_equal(r.non_torch_nccl, 0);
    /* fp16 (large-v3's --dtype auto): the same weights, phases and pages; should_use_symm_mem takes bfloat16
     * only, so the all-reduce is NCCL's and its NVLS buffers come in the non-torch increase */
    serve_h100_at(HF "whisper-large-v3.json", VC_PREC_FP16, 2, &h);
    assert_int_equal(h.weights, r.weights);
    assert_int_equal(h.profile_peak, r.profile_peak);
    assert_int_equal(h.encoder_peak, r.encoder_peak);
    assert_int_equal(h.page_bytes, r.page_bytes);
    assert_true(h.non_torch_nccl > 0);
    assert_int_equal(h.non_torch, r.non_torch + h.non_torch_nccl);
}

/* Measured: bench/accuracy/llm/vllm_whisper_replica.py runs vLLM's WhisperForConditionalGeneration.embed_multimodal
 * (WhisperEncoder and its layers, whisper.py @ 00a23257 statement by statement; MMEncoderAttention's flash kernel as
 * its output and float32 softmax_lse filled a row at a time) in torch 1.13 on the CPU under inference_mode with the
 * harness's allocator counter; on bench/accuracy/llm/configs/whisper_small.json (d_model 256, 4 heads, ffn 1024, 2
 * encoder layers, 300 positions, 80 mel bins) over 3 clips:
 *   /usr/bin/python3 bench/accuracy/llm/vllm_whisper_replica.py bench/accuracy/llm/configs/whisper_small.json --clips 3
 * peak above the weights 5,510,656 B in bf16 (at aten::gelu, the MLP's) and 11,020,800 B with --precision fp32.
 * --serve with max_num_batched_tokens 900 (3 clips of 300) gives the same less the allocator's rounding: the bf16
 * features' 3 x 80 x 600 x 2 = 288,000 B take 288,256 B in 512-byte blocks (fp32's 576,000 B are whole blocks).
 * And on whisper_v3_small.json (d_model 192, 6 heads, ffn 768, 2 layers, 250 positions, 128 mel bins) over 2 clips
 * (--clips 2; --serve at 500 tokens): 2,464,256 B in bf16, the last clip's embeds' 96,000 B taking 96,256 B. */
static void replica(void **state)
{
    (void)state;
    const struct {
        const char *cfg;
        vc_precision prec;
        int64_t tokens, clips, measured;
    } c[3] = {{"whisper_small.json", VC_PREC_BF16, 900, 3, 5510656 - 256},
              {"whisper_small.json", VC_PREC_FP32, 900, 3, 11020800},
              {"whisper_v3_small.json", VC_PREC_BF16, 500, 2, 2464256 - 256}};
    for (int i = 0; i < 3; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/../../bench/accuracy/llm/configs/%s", VC_TEST_DATA, c[i].cfg);
        vc_model *m = load_file(path);
        vc_options o;
        vc_options_init(&o);
        o.precision = c[i].prec;
        o.prompt = 4;
        o.new_tokens = 100;
        vc_serve_options so;
        vc_serve_options_init(&so);
        so.max_num_batched_tokens = c[i].tokens;
        vc_gpu_spec g;
        vc_error err;
        assert_int_equal(vc_gpu_parse("h100-80gb", &g, &err), VC_OK);
        vc_serve_result r;
        if (vc_serve(m, &o, &so, &g, &r, &err)) fail_msg("vc_serve: %s", err.msg);
        vc_model_free(m);
        assert_int_equal(r.mm_items, c[i].clips);
        assert_int_equal(r.encoder_peak - r.weights, c[i].measured);
    }
}

/* the CLI: the default request (4 + 444), the report's two phases and cache kind */
static void cli(void **state)
{
    (void)state;
    cli_run c;
    run(&c, HF "whisper-small.json --serve --gpu h100-80gb -f json");
    assert_int_equal(c.status, 0);
    const char *want[] = {"\"weights\": 483525120", "\"page_bytes\": 589824", "\"request_tokens\": 448",
                          "\"dummy_clips\": 5", "\"encoder_outputs\": 11520000", "\"self_attention_layers\": 12",
                          "\"cross_attention_layers\": 12", "\"cross_tokens\": 1500", "\"blocks_per_request\": 122",
                          "\"piecewise\": 0"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (!strstr(c.out, want[i])) fail_msg("no %s in: %s", want[i], c.out);
    run(&c, HF "whisper-small.json --serve --gpu h100-80gb");
    assert_int_equal(c.status, 0);
    const char *rows[] = {"encoder phase", "decoder phase", "self + cross", "requests of 4+444 = 448 tokens"};
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        if (!strstr(c.out, rows[i])) fail_msg("no %s in: %s", rows[i], c.out);
    /* --new-tokens alone: the 4-token prompt; --prompt alone: the rest of the 448 */
    run(&c, HF "whisper-small.json --serve --gpu h100-80gb --new-tokens 100 -f json");
    if (!strstr(c.out, "\"request_tokens\": 104")) fail_msg("%s", c.out);
    run(&c, HF "whisper-small.json --serve --gpu h100-80gb --prompt 40 -f json");
    if (!strstr(c.out, "\"request_tokens\": 448")) fail_msg("%s", c.out);
    /* large-v3's float16 under vLLM's --dtype auto: served in fp16, large-v3's bf16 weights (above) */
    run(&c, HF "whisper-large-v3.json --serve --gpu h100-80gb -f json");
    assert_int_equal(c.status, 0);
    if (!strstr(c.out, "\"weights\": 3087226880")) fail_msg("%s", c.out);
}

/* what vLLM refuses, and what is not modelled, each naming the option */
static void refusals(void **state)
{
    (void)state;
    /* SchedulerConfig.verify_max_model_len with chunked prefill off (an encoder-decoder) */
    assert_usage(HF "whisper-small.json --serve --gpu h100-80gb --max-num-batched-tokens 400 --max-num-seqs 256",
                 "--max-num-batched-tokens: 400 is less than the requests' length");
    /* compute_mm_encoder_budget: disable_chunked_mm_input and 1500 tokens a clip */
    assert_usage(HF "whisper-small.json --serve --gpu h100-80gb --prompt 4 --new-tokens 100 --max-num-batched-tokens 1024 "
                 "--max-num-seqs 256", "--max-num-batched-tokens: 1024 is less than a clip's 1500 encoder tokens");
    /* the derived max_model_len, max_target_positions */
    assert_usage(HF "whisper-small.json --serve --gpu h100-80gb --prompt 400 --new-tokens 100",
                 "--prompt: prompt + new tokens (500 tokens) pass whisper's max_target_positions (448)");
    /* transformers' fp16 (WhisperEncoderLayer's float16-only clamp) stays refused outside --serve */
    assert_usage(HF "whisper-large-v3.json -m infer --precision fp16",
                 "--precision: whisper is modelled in fp32 and bf16 (the model cast whole); fp16 adds WhisperEncoderLayer's");
    /* WhisperAttention asserts total_num_heads % tp_size == 0 (vLLM); transformers' tensor-parallel whisper is
     * not modelled */
    assert_usage(HF "whisper-small.json --serve --gpu h100-80gb --tp 8 --gpus 8",
                 "--tp: 8 tensor-parallel ranks do not divide encoder_attention_heads (12)");
    assert_usage(HF "whisper-small.json --tp 2 --gpus 2",
                 "--tp: whisper: tensor parallelism of an encoder-decoder is modelled only as vLLM splits it, under --serve");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(whisper_small),
        cmocka_unit_test(whisper_large_v3),
        cmocka_unit_test(whisper_large_v3_tp2),
        cmocka_unit_test(replica),
        cmocka_unit_test(cli),
        cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
