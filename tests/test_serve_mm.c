/* --serve for a multimodal model (issue 31): vLLM's encoder profiling (src/engine/serve_mm.c vc__serve_mm).
 * Every expected value is derived by hand from vLLM's sources:
 *  - vllm-project/vllm @ 000fc94b754f66aeb60ef5acf1ea2e94cdc65164, vllm/v1/worker/gpu_model_runner.py
 *    GPUModelRunner.profile_run: the encoder runs on mm_max_items_per_batch dummy items of the modality with
 *    the most tokens, its outputs kept in encoder_cache through the language model's _dummy_run;
 *  - vllm/multimodal/encoder_budget.py @ 042a4d3e MultiModalBudget._get_max_items, vllm/v1/core/
 *    encoder_cache_manager.py @ 003ad86e compute_mm_encoder_budget: budget max(max_num_batched_tokens, tokens
 *    per item); per prompt max(1, min(999, max_model_len // tokens)); per batch max(1, min(budget // tokens,
 *    max_num_seqs x per prompt));
 *  - vllm/model_executor/models/qwen2_vl.py @ 002d181a Qwen2VLProcessingInfo.get_image_size_with_most_features:
 *    smart_resize(9999999, 9999999, patch x merge, min_pixels, max_pixels) with the published processors'
 *    max_pixels (Qwen2.5-VL 12845056, Qwen3-VL / Qwen3.5 16777216); qwen3_vl.py @ 4f5768c7
 *    Qwen3_VisionTransformer.forward: the output [tokens, out_hidden_size x (1 + deepstack features)].
 * The language model's dummy run is vramcalc's profiling plan as at main fac2f5f: a VLM's profiling peak there
 * plus the encoder's outputs. */
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

static void opts(vc_options *o)
{
    vc_options_init(o);
    o->precision = VC_PREC_BF16; /* the configs' torch_dtype: vLLM's --dtype auto */
    o->prompt = 1024;
    o->new_tokens = 256;
}

static vc_status serve_h100(const vc_model *m, const vc_options *o, const vc_serve_options *so, vc_serve_result *r)
{
    vc_gpu_spec g;
    vc_error err;
    assert_int_equal(vc_gpu_parse("h100-80gb", &g, &err), VC_OK);
    vc_status st = vc_serve(m, o, so, &g, r, &err);
    if (st) fail_msg("vc_serve: %s", err.msg);
    return st;
}

static long long field(const char *out, const char *key)
{
    const char *p = strstr(out, key);
    if (!p) fail_msg("no %s in: %s", key, out);
    return strtoll(p + strlen(key), NULL, 10);
}

/* Qwen2.5-VL-7B on an H100 with vLLM's defaults (8192 batched tokens, 1024 sequences; requests of 1024 + 256).
 * The largest image: round(9999999 / 28) x 28 squared passes 12845056, so beta = 9999999 / sqrt(12845056) =
 * 9999999 / 3584 and each side floor(3584 / 28) x 28 = 3584: a 256 x 256 grid of 14-pixel patches, 65536
 * patches, 16384 tokens (merge 2 x 2). Budget max(8192, 16384) = 16384; per prompt max(1, min(999, 1280 //
 * 16384 = 0)) = 1; items max(1, min(16384 // 16384, 1024 x 1)) = 1. Outputs 1 x 16384 x 3584 (out_hidden_size)
 * x 2 B = 117,440,512 B. (The tie with a one-frame video of the same patches goes to "video" by name: the same
 * tokens.) */
static void qwen25_defaults(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "qwen2.5-vl-7b-instruct.json");
    vc_options o;
    opts(&o);
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_serve_result r;
    serve_h100(m, &o, &so, &r);
    assert_int_equal(r.mm_encoder, 1);
    assert_int_equal(r.mm_item_width, 3584);
    assert_int_equal(r.mm_item_height, 3584);
    assert_int_equal(r.mm_item_tokens, 16384);
    assert_int_equal(r.mm_budget, 16384);
    assert_int_equal(r.mm_items, 1);
    assert_int_equal(r.mm_outputs, INT64_C(117440512));
    /* The encoder phase (src/engine/serve_mm.c; vLLM's modules op by op, qwen2_5_vl.py @ 002d181a): vision
     * hidden 1280, 16 heads of 80, intermediate 3420, bf16 (2 B); 65536 patches of 3 x 2 x 14 x 14 = 1176
     * pixel values. Per patch:
     *  - held all along: the pixel values 1176 x 2 = 2352 B (profile_run's dummy batch, in the model's dtype),
     *    rotary_pos_emb [patches, 40] float32 160 B, window_index and reverse_indices (int64 per merged token
     *    of 4 patches) 4 B;
     *  - the worst op, apply_rotary_pos_emb_vision's .type_as (rotary_embedding/common.py @ 002d181a): x 2560,
     *    norm1(x) 2560, qkv 7680, qk_concat 5120, its .float() 10240, cos and sin 2 x 160, the float32 output
     *    10240 and its bf16 cast 5120: 43840 B (the MLP's worst, forward_native SiluAndMul under the default
     *    custom_ops "none": x, x_attn, residual, x_fused_norm 4 x 2560 + gate_up 13680 + silu 6840 + the
     *    product 6840 = 37600 B, is below it);
     *  46356 B x 65536 = 3,037,986,816 B above the weights. The pixel values: 65536 x 1176 x 2 = 154,140,672 B. */
    assert_int_equal(r.mm_inputs, INT64_C(154140672));
    assert_int_equal(r.mm_encoder_peak, r.weights + INT64_C(3037986816));
    /* the profiling run's peak: the larger phase, here the encoder's */
    assert_true(r.profile_peak == r.mm_encoder_peak);
    /* determine_available_memory: the pool is what the larger peak leaves */
    assert_int_equal(r.graphs_subtracted, r.graphs_estimate); /* vLLM's default since v0.21.0: the graphs' measure, estimated */
    assert_int_equal(r.kv_cache, r.requested - r.profile_peak - r.non_torch - r.graphs_estimate);
    assert_int_equal(r.blocks, r.kv_cache / r.page_bytes);
    /* 65536 batched tokens: budget 65536, 65536 // 16384 = 4 items (4 x 117,440,512 B) */
    so.max_num_batched_tokens = 65536;
    serve_h100(m, &o, &so, &r);
    assert_int_equal(r.mm_budget, 65536);
    assert_int_equal(r.mm_items, 4);
    assert_int_equal(r.mm_outputs, INT64_C(469762048));
    /* ... at most max_num_seqs x per prompt: 2 sequences of one item each */
    so.max_num_seqs = 2;
    serve_h100(m, &o, &so, &r);
    assert_int_equal(r.mm_items, 2);
    /* requests of 32768 + 256 = 33024 tokens: per prompt 33024 // 16384 = 2, so 2 x 2 = 4 */
    o.prompt = 32768;
    serve_h100(m, &o, &so, &r);
    assert_int_equal(r.mm_items, 4);
    /* one sequence: 1 x 2 */
    so.max_num_seqs = 1;
    serve_h100(m, &o, &so, &r);
    assert_int_equal(r.mm_items, 2);
    vc_model_free(m);
}

/* The CLI: the language model's dummy run is main fac2f5f's (17,692,769,280 B from `vramcalc
 * tests/data/hf/qwen2.5-vl-7b-instruct.json --serve --gpu h100-80gb -f json` there); with the encoder's
 * outputs and pixel values that phase is 17,692,769,280 + 117,440,512 + 154,140,672 = 17,964,350,464 B, below
 * the encoder phase (the weights 16,584,354,816 B + 3,037,986,816 B, qwen25_defaults): the peak is
 * 19,622,341,632 B. The report's lines and JSON */
static void qwen25_cli(void **state)
{
    (void)state;
    cli_run r;
    run(&r, HF "qwen2.5-vl-7b-instruct.json --serve --gpu h100-80gb -f json");
    assert_int_equal(r.status, 0);
    assert_int_equal(field(r.out, "\"weights\": "), 16584354816LL);
    assert_int_equal(field(r.out, "\"profile_peak\": "), 16584354816LL + 3037986816LL);
    assert_int_equal(field(r.out, "\"outputs\": "), 117440512LL);
    assert_int_equal(field(r.out, "\"inputs\": "), 154140672LL);
    assert_int_equal(field(r.out, "\"encoder_phase_peak\": "), 16584354816LL + 3037986816LL);
    assert_int_equal(field(r.out, "\"language_model_phase_peak\": "), 17692769280LL + 117440512LL + 154140672LL);
    assert_non_null(strstr(r.out, "\"tower_activations_counted\": true"));
    run(&r, HF "qwen2.5-vl-7b-instruct.json --serve --gpu h100-80gb");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "1 dummy item of 16384 tokens, 3584x3584"));
    assert_non_null(strstr(r.out, "at its worst op: the profiling run's peak"));
    /* --tp 2: the tower split across ranks is not modelled: said, and the peak is the language model phase's */
    run(&r, HF "qwen2.5-vl-7b-instruct.json --serve --gpu h100-80gb --tp 2 --gpus 2 -f json");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "\"encoder_phase_peak\": null")); /* not estimated: null, no negative figure */
    assert_non_null(strstr(r.out, "\"tower_activations_counted\": false"));
    /* --image / --images under --serve: refused, naming the option */
    assert_usage(HF "qwen2.5-vl-7b-instruct.json --serve --gpu h100-80gb --image 1280x720",
                 "--image with --serve: vLLM profiles the vision encoder on its own dummy images");
    assert_usage(HF "qwen2.5-vl-7b-instruct.json --serve --gpu h100-80gb --images 2", "--images with --serve");
    /* whisper (src/engine/serve_encdec.c, tests/test_whisper_serve.c): large-v3's float16 checkpoint under vLLM's
     * --dtype auto is served in fp16 (vLLM's encoder runs cast_overflow_tensors in every dtype: bf16's ops) */
    run(&r, HF "whisper-large-v3.json --serve --gpu h100-80gb");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "vLLM on h100-80gb, fp16"));
}

/* Qwen3-VL-8B: factor 16 x 2 = 32, max_pixels 16777216 = 4096^2: 9999999 / beta = 4096, floor(4096 / 32) x 32
 * = 4096; 256 x 256 patches, 16384 tokens; each token's output 4096 x (1 + 3 deepstack features [8, 16, 24])
 * = 16384 wide: 16384 x 16384 x 2 B = 536,870,912 B. Qwen3.6-27B (qwen3_5, no deepstack): 16384 x 5120 x 2 B =
 * 167,772,160 B. */
static void qwen3(void **state)
{
    (void)state;
    vc_options o;
    opts(&o);
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_serve_result r;
    vc_model *m = load_file(HF "qwen3-vl-8b-instruct.json");
    serve_h100(m, &o, &so, &r);
    assert_int_equal(r.mm_item_width, 4096);
    assert_int_equal(r.mm_item_tokens, 16384);
    assert_int_equal(r.mm_items, 1);
    assert_int_equal(r.mm_outputs, INT64_C(536870912));
    /* The encoder phase (qwen3_vl.py @ 002d7b93 Qwen3_VisionTransformer; hidden 1152, 16 heads of 72, bf16), per
     * patch: held, the pixel values 3 x 2 x 16 x 16 x 2 = 3072 B, rotary_pos_emb 36 x 4 = 144 B and pos_embeds
     * 1152 x 2 = 2304 B; the worst op the rotary embedding's .type_as as for Qwen2.5-VL: x, norm1(x), qkv,
     * qk_concat 7 x 2304 = 16128 + its float32 copy 9216 + cos and sin 2 x 144 + the float32 output 9216 + its
     * cast 4608 = 39456 B; per merged token (4 patches) 4 x 44976 = 179904 B and, during the last block, the
     * three deepstack features [8, 16, 24] made so far, 3 x 4096 x 2 = 24576 B: 204480 B x 16384 tokens =
     * 3,350,200,320 B above the weights. Qwen3.6-27B (no deepstack): 179904 x 16384 = 2,947,547,136 B. */
    assert_int_equal(r.mm_inputs, INT64_C(65536) * 1536 * 2);
    assert_int_equal(r.mm_encoder_peak, r.weights + INT64_C(3350200320));
    vc_model_free(m);
    m = load_file(HF "qwen3.6-27b.json");
    serve_h100(m, &o, &so, &r);
    assert_int_equal(r.mm_item_tokens, 16384);
    assert_int_equal(r.mm_outputs, INT64_C(167772160));
    assert_int_equal(r.mm_encoder_peak, r.weights + INT64_C(2947547136));
    vc_model_free(m);
}

/* Gemma 3 4B on an H100 (vllm gemma3_mm.py @ e5fa9450, siglip.py @ 0c028ba4): pan-and-scan off, so an item
 * is (0 crops + 1) x image_seq_length = 256 tokens (mm_tokens_per_image), the dummy image resized to 896 x 896:
 * 64 x 64 = 4096 patches of 14 x 14, 16 per token (the projector's 4 x 4 average pool). Budget max(8192, 256)
 * = 8192; per prompt min(999, 1280 // 256) = 5; items min(8192 // 256, 1024 x 5) = 32. Outputs 32 x 256 x 2560
 * x 2 B = 41,943,040 B; pixel values 32 x 3 x 896 x 896 x 2 B = 154,140,672 B. The encoder phase per patch
 * (SigLIP hidden 1152, intermediate 4304): the pixel values 3 x 14 x 14 x 2 = 1176 B, the embeddings' output
 * 1152 x 2 = 2304 B (siglip.py @ 0c028ba4: SiglipVisionTransformer.forward's hidden_states and SiglipEncoder.forward's
 * hidden_states_pool = [inputs_embeds] hold it from the second layer on) and the worst op, the MLP's activation_fn in
 * SiglipEncoderLayer: the layer's input (held by SiglipEncoder's loop), the attention block's sum, layer_norm2's
 * output 3 x 1152 x 2 + fc1's output and the activation's 2 x 4304 x 2 = 24128 B (the attention's worst, x,
 * layer_norm1, qkv, its output and out_proj's, 7 x 1152 x 2 = 16128 B, is below): 27608 B x 131072 patches =
 * 3,618,635,776 B above the weights. */
static void gemma3(void **state)
{
    (void)state;
    vc_options o;
    opts(&o);
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_serve_result r;
    vc_model *m = load_file(HF "gemma-3-4b-it.json");
    serve_h100(m, &o, &so, &r);
    assert_int_equal(r.mm_encoder, 1);
    assert_int_equal(r.mm_item_tokens, 256);
    assert_int_equal(r.mm_item_width, 896);
    assert_int_equal(r.mm_budget, 8192);
    assert_int_equal(r.mm_items, 32);
    assert_int_equal(r.mm_outputs, INT64_C(41943040));
    assert_int_equal(r.mm_inputs, INT64_C(154140672));
    assert_int_equal(r.mm_encoder_peak, r.weights + INT64_C(3618635776));
    assert_true(r.profile_peak >= r.mm_encoder_peak);
    assert_int_equal(r.graphs_subtracted, r.graphs_estimate); /* vLLM's default since v0.21.0: the graphs' measure, estimated */
    assert_int_equal(r.kv_cache, r.requested - r.profile_peak - r.non_torch - r.graphs_estimate);
    vc_model_free(m);
}

/* Measured: bench/accuracy/llm/vllm_vision_replica.py runs vLLM's Qwen2_5_VisionTransformer statement by statement
 * (qwen2_5_vl.py @ 002d181a, RMSNorm / SiluAndMul forward_native, flash and the rotary kernel as their outputs) in
 * torch 1.13 on the CPU under the accuracy harness's allocator counter: `/usr/bin/python3
 * bench/accuracy/llm/vllm_vision_replica.py bench/accuracy/llm/configs/qwen2_5_vl_small.json --grid 16
 * --precision P` (a 224 x 224 image, 256 patches, 64 merged tokens; vision hidden 64, 4 heads, intermediate
 * 160, depth 4, full attention in blocks 1 and 3): the encoder phase's peak above the weights 1,185,792 B in
 * bf16 (at the rotary embedding's .type_as) and 2,131,968 B in fp32 (at SiluAndMul's product: in float32 the
 * .float() copies are the tensors themselves), of which 1,024 B are cu_seqlens and cu_window_seqlens (int32,
 * a 512-byte block each) that serve_mm.c leaves out: 18,512 and 33,296 B a merged token. vramcalc's encoder
 * phase is linear in the tokens: its per-token bytes at vLLM's dummy image (16,384 tokens) are these. */
static void measured(void **state)
{
    (void)state;
    vc_model *m = load_file(VC_TEST_DATA "/../../bench/accuracy/llm/configs/qwen2_5_vl_small.json");
    vc_options o;
    opts(&o);
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_serve_result r;
    serve_h100(m, &o, &so, &r);
    assert_int_equal(r.mm_items * r.mm_item_tokens, 16384);
    assert_int_equal((r.mm_encoder_peak - r.weights) % 16384, 0);
    assert_int_equal((r.mm_encoder_peak - r.weights) / 16384, (1185792 - 1024) / 64);
    o.precision = VC_PREC_FP32;
    serve_h100(m, &o, &so, &r);
    assert_int_equal((r.mm_encoder_peak - r.weights) / 16384, (2131968 - 1024) / 64);
    vc_model_free(m);
    /* Qwen3-VL and Qwen3.5 (the script's qwen3_vl.py @ 002d7b93 path) on qwen3_vl_small.json (hidden 64, deepstack
     * [0, 1]) and qwen3_5_vl_small.json (hidden 32), 256 patches: 1,417,728 / 2,400,768 B and 1,106,432 /
     * 1,998,848 B (bf16 / fp32), less cu_seqlens' 512-byte block, and for Qwen3.5 in fp32, whose worst op is
     * fast_pos_embed_interpolate's torch.cat, its eight per-side vectors (8 x 512 B) instead: per merged token
     * 22,144 / 37,504 and 17,280 / 31,168 B */
    static const struct { const char *cfg; vc_precision p; int64_t measured, small; } q[] = {
        {"qwen3_vl_small.json", VC_PREC_BF16, 1417728, 512},   {"qwen3_vl_small.json", VC_PREC_FP32, 2400768, 512},
        {"qwen3_5_vl_small.json", VC_PREC_BF16, 1106432, 512}, {"qwen3_5_vl_small.json", VC_PREC_FP32, 1998848, 4096},
    };
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/../../bench/accuracy/llm/configs/%s", VC_TEST_DATA, q[i].cfg);
        m = load_file(path);
        o.precision = q[i].p;
        serve_h100(m, &o, &so, &r);
        assert_int_equal(r.mm_items * r.mm_item_tokens, 16384);
        assert_int_equal(r.mm_encoder_peak - r.weights, (q[i].measured - q[i].small) / 64 * 16384);
        vc_model_free(m);
    }
    /* Gemma 3's SigLIP tower and projector (siglip() of the same script, siglip.py @ 0c028ba4, conv.py @ 045d7575
     * Conv2dLayer._forward_mulmat, gemma3_mm.py @ e5fa9450), `... configs/gemma3_vl_small.json --items 2
     * --precision P` (224 x 224 images, 256 patches, 64 tokens each; SigLIP hidden 64, intermediate 160): 1,269,760 B
     * in bf16 and 2,539,520 B in fp32 above the weights, both at the patch embedding's F.linear (the pixel
     * values, their unfold copy, the output); gemma3_vl_mlp_small.json (intermediate 1024): 2,961,408 and
     * 5,922,816 B, at the MLP's GELU (the replica's SiglipEncoder holding the embeddings' output as siglip.py's
     * hidden_states_pool does). Per image, vramcalc's figure at 128 dummy images is these halves. */
    static const struct { const char *cfg; vc_precision p; int64_t measured; } g[] = {
        {"gemma3_vl_small.json", VC_PREC_BF16, 1269760},     {"gemma3_vl_small.json", VC_PREC_FP32, 2539520},
        {"gemma3_vl_mlp_small.json", VC_PREC_BF16, 2961408}, {"gemma3_vl_mlp_small.json", VC_PREC_FP32, 5922816},
    };
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/../../bench/accuracy/llm/configs/%s", VC_TEST_DATA, g[i].cfg);
        m = load_file(path);
        o.precision = g[i].p;
        serve_h100(m, &o, &so, &r);
        assert_int_equal(r.mm_items, 128);
        assert_int_equal(r.mm_encoder_peak - r.weights, g[i].measured / 2 * 128);
        vc_model_free(m);
    }
}

/* Llama 4 (vllm-project/vllm vllm/model_executor/models/mllama4.py, the newest stored text, embed_multimodal and
 * MMEncoderAttention; the same modules at 00dd5493 / 60d375cb): Mllama4ProcessingInfo.get_image_size_with_most_features
 * is max_patches (16, Llama4ImageProcessorFast's) x image_size high and image_size wide; its best fit is 16 x 1
 * tiles, patches_per_image 1 + 16 = 17 (_call_hf_processor); get_patch_per_chunk (336 // 14)^2 // round(1 / 0.5^2)
 * = 576 // 4 = 144; the item's embeddings (select_text(repl, img_patch_token): the <|patch|> tokens of
 * _prompt_split_image) 17 x 144 = 2448. The budget's tokens per item: vllm/multimodal/encoder_budget.py @ 042a4d3e
 * (the newest stored text) MultiModalBudget.__init__ passes mm_counts = the allowed limits (999 images) to
 * get_mm_max_toks_per_item, which with no get_mm_max_tokens_per_item sums get_num_embeds over the 999 dummy
 * images: 999 x 2448 = 2,445,552. Scout, --tp 4 (one H100 does not hold it): budget max(8192, 2,445,552) =
 * 2,445,552, per prompt max(1, min(999, 1280 // 2,445,552)) = 1, items max(1, min(2,445,552 // 2,445,552, 1024))
 * = 1; pixel values 17 x 3 x 336 x 336 x 2 B = 11,515,392 B; outputs (Llama4MultiModalProjector: text
 * hidden_size 5120) 2448 x 5120 x 2 B = 25,067,520 B; the tower's run on a rank of the four: 204,870,400 B above
 * the weights (derived in tests/test_serve_mm_tp.c). */
static void llama4(void **state)
{
    (void)state;
    vc_options o;
    opts(&o);
    o.tp = 4;
    o.gpus = 4;
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_serve_result r;
    vc_model *m = load_file(HF "llama-4-scout-17b-16e-instruct.json");
    serve_h100(m, &o, &so, &r);
    assert_int_equal(r.mm_encoder, 1);
    assert_int_equal(r.mm_item_tokens, 2448);
    assert_int_equal(r.mm_item_width, 336);
    assert_int_equal(r.mm_item_height, 5376);
    assert_int_equal(r.mm_budget, INT64_C(2445552));
    assert_int_equal(r.mm_items, 1);
    assert_int_equal(r.mm_inputs, INT64_C(11515392));
    assert_int_equal(r.mm_outputs, INT64_C(25067520));
    assert_int_equal(r.mm_encoder_peak - r.weights, INT64_C(204870400));
    vc_model_free(m);
    /* bench/accuracy/llm/configs/llama4_vl_small.json (image 112, patch 14: 8 x 8 = 64 patches a tile, s = 65
     * rows with the class token, 16 tokens a tile, 272 an item; vision hidden 64, 4 heads, intermediate 256,
     * 2 layers, adapter 96 wide, text hidden 64) on one H100: the budget 999 x 272 = 271,728, items
     * max(1, min(271,728 // 271,728, 1024 x 1)) = 1, 17 tiles.
     * Per tile, the pixel values X = 64 x 3 x 14 x 14 x e; the encoder's input (layernorm_pre's output, held
     * by Llama4VisionModel.forward while the second layer runs) s x 64 x e; then in bf16 the worst op is the
     * rotary embedding's second type_as (Llama4VisionRotaryEmbedding.forward_native): the layer's input x,
     * input_layernorm's output, qkv (3), the float32 copies of q and k (2 x 65 x 64 x 4), their complex64
     * products (the same) and the two casts: 75,264 + 8,320 + 5 x 8,320 + 33,280 + 33,280 + 2 x 8,320 = 208,384
     * B; in fp32 (.float() and type_as the tensors themselves) the encoder MLP's GELU: x, the residual sum,
     * post_attention_layernorm's output, fc1's output and GELU's (2 x 65 x 256 x 4): 150,528 + 16,640 + 3 x
     * 16,640 + 133,120 = 350,208 B. 17 tiles an item: 3,542,528 and 5,953,536 B.
     * Measured: `/usr/bin/python3 bench/accuracy/llm/vllm_vision_replica.py bench/accuracy/llm/configs/
     * llama4_vl_small.json --items 1 --precision P` (mllama4.py statement by statement, the flash kernel as its
     * output and softmax_lse): 3,545,600 B (at aten::_to_copy, the type_as) and 5,954,560 B (at aten::gelu):
     * vramcalc's plus the harness allocator's 512-byte rounding of each live tensor (bf16: the 141,440-byte
     * [17, 65, 64] tensors x, the norm, layernorm_pre's output and the two casts 384 B each, qkv 128 B, the four
     * 282,880-byte float32 ones 256 B each: 3,072 B; fp32: the four [17, 65, 64] ones 256 B each: 1,024 B). */
    m = load_file(VC_TEST_DATA "/../../bench/accuracy/llm/configs/llama4_vl_small.json");
    opts(&o);
    static const struct { vc_precision p; int64_t per_item, measured, rounding; } l[] = {
        {VC_PREC_BF16, 3542528, 3545600, 3072},
        {VC_PREC_FP32, 5953536, 5954560, 1024},
    };
    for (size_t i = 0; i < sizeof l / sizeof l[0]; i++) {
        o.precision = l[i].p;
        serve_h100(m, &o, &so, &r);
        assert_int_equal(r.mm_items, 1);
        assert_int_equal(r.mm_item_tokens, 272);
        assert_int_equal(r.mm_budget, 271728);
        assert_int_equal(l[i].measured - l[i].rounding, l[i].per_item);
        assert_int_equal(r.mm_encoder_peak - r.weights, l[i].per_item);
    }
    vc_model_free(m);
}

/* Gemma 4 (vllm-project/vllm @ 49e6e4739167b1c261e06909e08f0b50dd576be4 vllm/model_executor/models/gemma4_mm.py; the
 * same processing info and dummy inputs at 01bae219):
 * Gemma4ProcessingInfo.get_mm_max_tokens_per_item: "image" default_output_length (280), "audio" the processor's
 * audio_seq_length (750, Gemma4Processor's), "video" _VIDEO_MAX_FRAMES 32 x (_VIDEO_MAX_SOFT_TOKENS 70 + 2 + 6)
 * = 2496: the dummy modality is the video. Budget max(8192, 2496) = 8192, per prompt max(1, min(999, 1280 //
 * 2496)) = 1, items max(1, min(8192 // 2496, 1024)) = 3. Each dummy video: 32 frames of 224 x 224
 * (Gemma4DummyInputsBuilder: the image processor's size is None), each frame processed with max_soft_tokens 70:
 * pixel_values [70 x 3^2 = 630 patches (padded), 16^2 x 3 = 768] in the model's dtype, 630 x 768 x 2 =
 * 967,680 B; _compute_num_soft_tokens(224, 224, 70): unit 48, scale sqrt(630 / 196), target floor(224 x 1.7928
 * / 48) x 48 = 384, (384 / 16)^2 // 9 = 64 tokens a frame; _process_video_input's output per video
 * [2048, text hidden_size]. E4B (hidden 2560): inputs 3 x 32 x 967,680 = 92,897,280 B, outputs 3 x 2048 x 2560 x
 * 2 = 31,457,280 B.
 * The tower (gemma4_mm.py @ 01bae2190e1c298115941f50bd6ed508216f24e7 _process_video_input, transformers @ 0246b4f3
 * Gemma4VisionPatchEmbedder): the 96 frames in chunks of _encoder_chunk(630, free, total, 10240) = min(free // 2,
 * total // 10) // (630 x 4 x 10240 x 8 = 206,438,400); on the H100 (81559 MiB: total // 10 = 8,552,080,998, free
 * // 2 larger with E4B's 15.2 GiB of weights) 41 frames: chunks of 41, 41, 14. A frame's patch embedder at the
 * one-hot's cast: its pixel values' 2 * (x - 0.5) 967,680, input_proj's output 630 x 768 x 2 = 967,680,
 * clamped_positions 630 x 2 x 8 = 10,080, F.one_hot 630 x 2 x 10240 x 8 = 103,219,200 and its bf16 copy
 * 25,804,800: 130,969,440 B. The second chunk's (the first chunk's 41 outputs kept, 41 x 967,680 = 39,674,880):
 * 41 x 130,969,440 + 39,674,880 = 5,409,421,920, plus every frame's pixel values 92,897,280: 5,502,319,200 B above
 * the weights (the last chunk's 1,912,921,920 and the final torch.cat's 185,794,560 are less). */
static void gemma4(void **state)
{
    (void)state;
    vc_options o;
    opts(&o);
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_serve_result r;
    vc_model *m = load_file(HF "gemma-4-e4b-it.json");
    serve_h100(m, &o, &so, &r);
    assert_int_equal(r.mm_encoder, 1);
    assert_int_equal(r.mm_item_tokens, 2496);
    assert_int_equal(r.mm_item_width, 224);
    assert_int_equal(r.mm_budget, 8192);
    assert_int_equal(r.mm_items, 3);
    assert_int_equal(r.mm_inputs, INT64_C(92897280));
    assert_int_equal(r.mm_outputs, INT64_C(31457280));
    assert_int_equal(r.mm_encoder_peak - r.weights, INT64_C(5502319200));
    assert_int_equal(r.profile_peak, r.mm_encoder_peak); /* over the language model phase */
    /* --tp 2: every rank holds and runs the whole tower (gemma4_mm.py @ 01bae219: AutoModel.from_config, no
     * tensor-parallel layer): the same run above a rank's weights, _encoder_chunk's bound total // 10 on both */
    o.tp = o.gpus = 2;
    serve_h100(m, &o, &so, &r);
    assert_int_equal(r.mm_encoder_peak - r.weights, INT64_C(5502319200));
    assert_int_equal(r.profile_peak, r.mm_encoder_peak);
    vc_model_free(m);
    /* bench/accuracy/llm/configs/gemma4_vl_small.json (vision hidden 64, intermediate 128, 2 layers, 4 heads of 16,
     * position_embedding_size 256) on one H100: 96 frames, chunk min(96, 8,552,080,998 // (630 x 4 x 256 x 8)) =
     * 96, one chunk. A frame at the one-hot's cast: 2 * (x - 0.5) 630 x 768 x e, input_proj 630 x 64 x e,
     * clamped_positions 10,080, the one-hot 630 x 2 x 256 x 8 = 2,580,480 and its copy 630 x 512 x e: bf16
     * 4,284,000 B, fp32 5,977,440 B; with the frame's pixel values (967,680 or 1,935,360 B) 5,251,680 and
     * 7,912,800 B a frame.
     * Measured: `/usr/bin/python3 bench/accuracy/llm/vllm_vision_replica.py bench/accuracy/llm/configs/
     * gemma4_vl_small.json --items 1 --precision P` (32 frames, one chunk; gemma4_mm.py @ 01bae219 and transformers'
     * modules statement by statement, SDPA's kernel as its output and logsumexp): 168,396,800 B (bf16) and
     * 253,552,640 B (fp32), at aten::_to_copy (the one-hot's cast): 32 frames of vramcalc's plus 343,040 B, the
     * pixel_position_ids (32 x 630 x 2 x 8 = 322,560) and padding_positions (32 x 630 bool, 20,480 in 512-byte
     * blocks) vramcalc leaves out; with --chunk 12 (chunks 12, 12, 8) 83,684,864 B, vramcalc's 83,341,440 (the
     * second chunk, the first's outputs kept) plus the same 343,040 and 384 B of clamped_positions' rounding. */
    m = load_file(VC_TEST_DATA "/../../bench/accuracy/llm/configs/gemma4_vl_small.json");
    opts(&o);
    static const struct { vc_precision p; int64_t per_frame, measured; } g[] = {
        {VC_PREC_BF16, 5251680, 168396800},
        {VC_PREC_FP32, 7912800, 253552640},
    };
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        o.precision = g[i].p;
        serve_h100(m, &o, &so, &r);
        assert_int_equal(r.mm_items, 3);
        assert_int_equal(g[i].measured - 343040, 32 * g[i].per_frame);
        assert_int_equal(r.mm_encoder_peak - r.weights, 96 * g[i].per_frame);
    }
    vc_model_free(m);
}

/* PaliGemma (vllm/model_executor/models/paligemma.py as 1CatAI/1Cat-vLLM @ 92a785cb holds it, upstream's V1 text;
 * vllm-project/vllm @ fd472a64 the same modules: _process_image_input runs SiglipVisionModel, then
 * PaliGemmaMultiModalProjector's nn.Linear(vision hidden_size, projection_dim), and embed_multimodal scales by
 * hidden_size**-0.5; PaliGemmaProcessingInfo.get_supported_mm_limits {"image": 1} and PaliGemmaDummyInputsBuilder's
 * image vision_config.image_size squared):
 * paligemma-3b-pt-224 on an H100 with vLLM's defaults (8192 batched tokens, 1024 sequences), bf16. An item is
 * SiglipEncoderInfo's (224 // 14)^2 = 256 tokens (the config's num_image_tokens too); the budget counts
 * mm_counts = 1 image: 256 a item, budget max(8192, 256) = 8192, per prompt max(1, min(1, 1280 // 256)) = 1,
 * items max(1, min(8192 // 256, 1024 x 1)) = 32. Outputs 32 x 256 x 2048 (projection_dim, the text hidden_size)
 * x 2 B = 33,554,432 B; pixel values 32 x 3 x 224 x 224 x 2 B = 9,633,792 B. The encoder phase per patch (SigLIP
 * hidden 1152, intermediate 4304, as Gemma 3's above): the pixel values 3 x 14 x 14 x 2 = 1176 B and the MLP's
 * activation_fn, 3 x 1152 x 2 + 2 x 4304 x 2 = 24128 B, with the embeddings' output 2304 B held (as Gemma 3's); the
 * projector (image_features 1152 x 2 + the Linear's 2048 x 2 = 6400 B, then the two [.., 2048] of the scaling,
 * 8192 B) is below: 27608 B x 8192 patches = 226,164,736 B above the weights. PaliGemma 2 (paligemma2-3b-pt-224: projection_dim 2304, the same tower): outputs
 * 32 x 256 x 2304 x 2 B = 37,748,736 B, the same encoder phase (its projector's 1176 + 2 x 2304 x 2 = 10392 B
 * below); its Gemma 2 layers alternate sliding (4096) and full attention, served as the text model's are. */
static void paligemma(void **state)
{
    (void)state;
    vc_options o;
    opts(&o);
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_serve_result r;
    static const struct { const char *cfg; int64_t out; } c[] = {
        {"paligemma-3b-pt-224.json", INT64_C(33554432)},
        {"paligemma2-3b-pt-224.json", INT64_C(37748736)},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, HF "%s", c[i].cfg);
        vc_model *m = load_file(path);
        serve_h100(m, &o, &so, &r);
        assert_int_equal(r.mm_encoder, 1);
        assert_int_equal(r.mm_item_tokens, 256);
        assert_int_equal(r.mm_item_width, 224);
        assert_int_equal(r.mm_budget, 8192);
        assert_int_equal(r.mm_items, 32);
        assert_int_equal(r.mm_outputs, c[i].out);
        assert_int_equal(r.mm_inputs, INT64_C(9633792));
        assert_int_equal(r.mm_encoder_peak, r.weights + INT64_C(226164736));
        assert_int_equal(r.profile_peak, r.profile_lm > r.mm_encoder_peak ? r.profile_lm : r.mm_encoder_peak);
        assert_int_equal(r.kv_cache, r.requested - r.profile_peak - r.non_torch - r.graphs_estimate);
        vc_model_free(m);
    }
    /* Measured: bench/accuracy/llm/vllm_vision_replica.py's siglip() with PaliGemma's projector and scaling (the script
     * cites the modules), `/usr/bin/python3 bench/accuracy/llm/vllm_vision_replica.py
     * bench/accuracy/llm/configs/paligemma_vl_small.json --items 2 --precision P` (224 x 224 images, 256 patches;
     * SigLIP hidden 64, intermediate 160; text hidden_size 512, so embed_multimodal's scaling is the worst op):
     * 1,650,688 B in bf16 and 3,301,376 B in fp32 above the weights, at aten::mul (the pixel values, the projector's
     * output and its scaled copy: 256 x (1176 + 2 x 512 x 2) = 825,344 B an image in bf16). Per image, vramcalc's
     * figure at its 32 dummy images is these halves. */
    static const struct { vc_precision p; int64_t measured; } g[] = {{VC_PREC_BF16, 1650688}, {VC_PREC_FP32, 3301376}};
    vc_model *m = load_file(VC_TEST_DATA "/../../bench/accuracy/llm/configs/paligemma_vl_small.json");
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        o.precision = g[i].p;
        serve_h100(m, &o, &so, &r);
        assert_int_equal(r.mm_items, 32);
        assert_int_equal(r.mm_encoder_peak - r.weights, g[i].measured / 2 * 32);
    }
    vc_model_free(m);
}

/* SmolVLM (vLLM's SmolVLMForConditionalGeneration: idefics3.py's Idefics3ProcessingInfo as 1CatAI/1Cat-vLLM @ 92a785cb
 * holds it, upstream's V1 text):
 * the dummy image is max_image_size["longest_edge"] squared (512 for SmolVLM-256M, vision_config.image_size here),
 * resized to size["longest_edge"] = 4 x 512 = 2048 (the published processor's): grid ceil(2048 / 512) = 4 x 4 and
 * get_num_patches 4 x 4 + 1 = 17 frames; image_seq_len int((512 // 16)^2 / 4^2) = 64: 17 x 64 = 1088 image tokens
 * (select_text(..., embed_text=image_token)). No get_mm_max_tokens_per_item: the budget counts 999 dummy images,
 * 999 x 1088 = 1,086,912 (max(8192, that)), per prompt max(1, min(999, 1280 // 1,086,912)) = 1, items
 * max(1, min(1, 1024)) = 1. Outputs 1088 x 576 (text hidden_size) x 2 B = 1,253,376 B; inputs pixel_values
 * 17 x 3 x 512 x 512 x 2 B = 26,738,688 B and pixel_attention_mask 17 x 512 x 512 bool = 4,456,448 B: 31,195,136 B.
 * SmolVLM2-2.2B (image_size 384, patch 14, scale_factor 3): image_seq_len int(27^2 / 9) = 81, 17 x 81 = 1377 tokens,
 * budget 999 x 1377 = 1,375,623, one item; outputs 1377 x 2048 x 2 B = 5,640,192 B; inputs 17 x 384 x 384 x
 * (3 x 2 + 1) B = 17,547,264 B.
 * The encoder phase (serve_mm.c idefics3_tower: idefics3.py as 1CatAI/1Cat-vLLM @ 92a785cb, idefics2_vision_model.py as
 * AutoCONFIG/vllm @ 1b1063fa), per frame of SmolVLM-256M (vision hidden 768, intermediate 3072, 12 heads, 12 layers,
 * 512 / 16 = 32 patches a side, S = 1024; bf16): held, the dummy batch's pixel values 3 x 512 x 512 x 2 = 1,572,864
 * and mask 512 x 512 = 262,144, image_pixels_to_features' copies of both and the patch_attention_mask (1024):
 * 3,671,040 B; the worst op, SiglipEncoderLayer's MLP activation from the second layer on: the embeddings' output,
 * the layer's input, the attention block's sum, layer_norm2's output 4 x 768 x 2 + fc1's output and the activation
 * 2 x 3072 x 2 = 18,432 B a patch, 18,874,368 B (the patch embedding's unfold copy and output, 3,145,728 B, the
 * pixel_shuffle copies, 3 x 1,572,864, and the projection are below): 22,545,408 B x 17 frames = 383,271,936 B
 * above the weights. SmolVLM2-2.2B (hidden 1152, intermediate 4304, 384 / 14 = 27 a side, S = 729): held 2 x
 * (884,736 + 147,456) + 729 = 2,065,113 B, the MLP 2304 + 3 x 2304 + 2 x 4304 x 2 = 26,432 B x 729 = 19,268,928 B:
 * 21,334,041 x 17 = 362,678,697 B. */
static void smolvlm(void **state)
{
    (void)state;
    vc_options o;
    opts(&o);
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_serve_result r;
    static const struct { const char *cfg; int64_t side, tokens, out, in, enc; } c[] = {
        {"smolvlm-256m-instruct.json", 512, 1088, INT64_C(1253376), INT64_C(31195136), INT64_C(383271936)},
        {"smolvlm2-2.2b-instruct.json", 384, 1377, INT64_C(5640192), INT64_C(17547264), INT64_C(362678697)},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, HF "%s", c[i].cfg);
        vc_model *m = load_file(path);
        serve_h100(m, &o, &so, &r);
        assert_int_equal(r.mm_encoder, 1);
        assert_int_equal(r.mm_item_tokens, c[i].tokens);
        assert_int_equal(r.mm_item_width, c[i].side);
        assert_int_equal(r.mm_item_height, c[i].side);
        assert_int_equal(r.mm_budget, 999 * c[i].tokens);
        assert_int_equal(r.mm_items, 1);
        assert_int_equal(r.mm_outputs, c[i].out);
        assert_int_equal(r.mm_inputs, c[i].in);
        assert_int_equal(r.mm_encoder_peak - r.weights, c[i].enc);
        assert_int_equal(r.profile_peak, r.profile_lm > r.mm_encoder_peak ? r.profile_lm : r.mm_encoder_peak);
        vc_model_free(m);
    }
    const char *out = cli_output(HF "smolvlm-256m-instruct.json --serve --gpu h100-80gb");
    assert_non_null(strstr(out, "1 dummy item of 1088 tokens, 512x512"));
    /* Measured: bench/accuracy/llm/vllm_vision_replica.py's idefics3() (the modules above statement by statement),
     * `/usr/bin/python3 bench/accuracy/llm/vllm_vision_replica.py bench/accuracy/llm/configs/smolvlm_vl_small.json
     * --items 1 --precision P` (one dummy image, 17 frames of 128 x 128, patch 8, S = 256; vision hidden 64,
     * intermediate 256, 3 layers; scale_factor 2): 10,589,696 B in bf16 and 20,616,704 B in fp32 above the weights, at
     * the MLP's GELU; less three tensors vramcalc leaves out, each a 512-byte block of the harness's allocator:
     * real_images_inds (17 bools), the dummy batch's num_patches (one int64), and the patch_attention_mask's rounding
     * (17 x 256 = 4,352 B in 4,608): 1,280 B. */
    static const struct { vc_precision p; int64_t measured; } g[] = {{VC_PREC_BF16, 10589696}, {VC_PREC_FP32, 20616704}};
    vc_model *m = load_file(VC_TEST_DATA "/../../bench/accuracy/llm/configs/smolvlm_vl_small.json");
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        o.precision = g[i].p;
        serve_h100(m, &o, &so, &r);
        assert_int_equal(r.mm_items, 1);
        assert_int_equal(r.mm_encoder_peak - r.weights, g[i].measured - 1280);
    }
    vc_model_free(m);
}

/* A text-only model has no encoder profiling */
static void others(void **state)
{
    (void)state;
    vc_options o;
    opts(&o);
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_serve_result r;
    vc_model *m = load_file(HF "llama-3.1-8b.json");
    serve_h100(m, &o, &so, &r);
    assert_int_equal(r.mm_encoder, 0);
    assert_int_equal(r.mm_items + r.mm_outputs, 0);
    vc_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(qwen25_defaults),
        cmocka_unit_test(qwen25_cli),
        cmocka_unit_test(qwen3),
        cmocka_unit_test(gemma3),
        cmocka_unit_test(measured),
        cmocka_unit_test(llama4),
        cmocka_unit_test(gemma4),
        cmocka_unit_test(paligemma),
        cmocka_unit_test(smolvlm),
        cmocka_unit_test(others),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
