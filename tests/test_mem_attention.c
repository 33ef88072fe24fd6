/*
 * test_mem_attention.c — exact byte figures for the attention family
 * (layers/attention.c).
 *
 * Each test builds a small model and runs vc_estimate with SGD (no optimizer
 * state or step temporaries), workspace 0, and checks values derived by hand
 * from AUTOGRAD.md §4 (MultiheadAttention's in-projection and explicit L×S
 * path, scaled_dot_product_attention's math / memory-efficient / flash
 * backends, the Transformer layers), §3.8 (LayerNorm), §3.6 (dropout) and
 * §1 (lifetimes). Every tensor is rounded up to 512 bytes. "activations"
 * (train) is what autograd holds at the end of forward plus the input batch;
 * the model output and the loss scalar are freed by then.
 *
 * Shapes used below (batch N = 2 unless said):
 *   MHA, E = 32, H = 4 (hd = 8), L = S = 16:
 *     [L, N, E] fp32 = 16*2*32*4 = 4096;  [3, L, N, E] = 12288;
 *     scores [N*H, L, S] fp32 = 8*16*16*4 = 8192;  weights [N, L, S] = 2048
 *     params: in_proj_weight 3072*4 = 12288, in_proj_bias 384 -> 512,
 *             out_proj.weight 4096, out_proj.bias 128 -> 512  (sum 17408)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <string.h>

#include "mem_test.h"

static vc_result run(const char *json, int64_t batch, vc_mode mode, vc_precision prec, vc_attention attn)
{
    return mem_run(json, batch, mode, prec, attn);
}

#define TRAIN VC_MODE_TRAIN
#define INFER VC_MODE_INFER
#define FP32 VC_PREC_FP32
#define BF16 VC_PREC_BF16

static const char *const MHA_W =
    "{\"input\": [16, 32], \"layers\": [{\"type\": \"MultiheadAttention\", \"embed_dim\": 32, \"num_heads\": 4}]}";
static const char *const MHA_NW =
    "{\"input\": [16, 32], \"layers\": [{\"type\": \"MultiheadAttention\", \"embed_dim\": 32, \"num_heads\": 4,"
    " \"need_weights\": false}]}";

/* MultiheadAttention(32, 4), need_weights=True (the default): §4.1 + §4.2.
 * The input (no grad) is transposed to [L, N, E]: linear folds it with a
 * copy that mm keeps (W needs grad). Kept at the end of forward:
 *   input 4096 + fold copy 4096 + packed [3,L,N,E] 12288 (k, v views kept by
 *   the bmms) + q_scaled 4096 + softmax P 8192 + out_proj input copy 4096
 *   = 36864.
 * Peak, in backward at softmax's backward: weights 17408 + input 4096 +
 *   out_proj grads 4096 + 512 + kept fold copy 4096, packed 12288, q_scaled
 *   4096, P 8192 + grads of P 8192 (from bmm #2) and of v 4096 + softmax's
 *   new grad 8192 = 75264, + the loss scalar and its root grad (512 each,
 *   alive through backward) = 76288.
 *   (Forward peaks at 60416 when the averaged weights [N, L, S] are made.) */
static void test_mha_need_weights_train(void **state)
{
    (void)state;
    vc_result r = run(MHA_W, 2, TRAIN, FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.weights, 17408);
    assert_int_equal(r.memory.activations, 36864);
    assert_int_equal(r.memory.peak_allocated, 75264 + 1024);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    vc_result_free(&r);
}

/* need_weights=False: §4.3, scaled_dot_product_attention on q, k, v views
 * of the packed projection.
 * auto, fp32 -> memory-efficient (§4.6): keeps q, k, v (the packed 12288),
 *   its output [N, L, H, hd] 4096 and logsumexp [N, H, ceil32(16)] fp32 =
 *   2*4*32*4 = 1024; its [N, L, H, hd] output permuted to [L, N, E] is not
 *   contiguous, so .contiguous() copies it (4096, kept by out_proj):
 *   input 4096 + fold 4096 + 12288 + 4096 + 1024 + 4096 = 29696.
 * math (§4.8): q*sqrt(s) 4096 and k^T*sqrt(s) 4096 (kept by the first bmm),
 *   the _safe_softmax result 8192, v (in the packed copy), the contiguous
 *   copy of the [N, H, L, hd] output 4096:
 *   input 4096 + fold 4096 + 12288 + 4096 + 4096 + 8192 + 4096 = 40960.
 * flash requested in fp32 is not eligible (fp16/bf16 only): efficient again. */
static void test_mha_sdpa_train(void **state)
{
    (void)state;
    vc_result r = run(MHA_NW, 2, TRAIN, FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.activations, 29696);
    vc_result_free(&r);
    r = run(MHA_NW, 2, TRAIN, FP32, VC_ATTN_MATH);
    assert_int_equal(r.memory.activations, 40960);
    vc_result_free(&r);
    r = run(MHA_NW, 2, TRAIN, FP32, VC_ATTN_FLASH);
    assert_int_equal(r.memory.activations, 29696);
    vc_result_free(&r);
}

/* Inference (eval + no_grad, nothing saved): self-attention, even heads,
 * bias, fp32: MultiheadAttention.forward's fast path (activation.py) calls
 * torch._native_multi_head_attention, on CUDA native_multi_head_attention_cuda
 * (transformers/cuda/attention.cu). Base = weights 17408 + input 4096 = 21504.
 * need_weights=True, the explicit native path: qkv_projection [N, L, 3E]
 *   12288, _transform_bias_rescale_qkv's [3, N, H, L, hd] 12288 (46080), qkv
 *   freed; qkt [N, H, L, L] 8192 (41984), softmax written into it, bmm_nn
 *   into q's storage; transform_0213 [N, L, E] 4096 (46080) and addmm's
 *   output 4096: 50176 (the peak); the copy freed, qkt.sum(1) [N, L, L] 2048
 *   (48128).
 * need_weights=False, hd 8 % 8 == 0, auto picks memory-efficient: the
 *   SDPA-backed native path: at::linear [N, L, 3E] 12288 (33792), the
 *   efficient output [N, L, H, hd] 4096 (no logsumexp without grad), the
 *   out-projection 4096, the locals alive until return: 41984.
 * need_weights=False with --attention math: select_sdp_backend gives math,
 *   so the explicit native path, qkt dropped after the second bmm: the
 *   projection + q_k_v moment 21504 + 24576 = 46080 is the peak (later
 *   21504 + 12288 + 8192 = 41984, then 21504 + 12288 + 4096 + 4096 = 41984). */
static void test_mha_infer(void **state)
{
    (void)state;
    vc_result r = run(MHA_W, 2, INFER, FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.peak_allocated, 50176);
    assert_non_null(strstr(r.attention, "native MHA fast path, explicit"));
    vc_result_free(&r);
    r = run(MHA_NW, 2, INFER, FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.peak_allocated, 41984);
    assert_non_null(strstr(r.attention, "SDPA-backed (memory-efficient)"));
    vc_result_free(&r);
    r = run(MHA_NW, 2, INFER, FP32, VC_ATTN_MATH);
    assert_int_equal(r.memory.peak_allocated, 46080);
    vc_result_free(&r);
    /* bf16: flash. Weights 6144 + 192 -> 512 + 2048 + 64 -> 512 = 9216, input
     * 2048; at::linear [N, L, 3E] 6144; flash's output 2048 with softmax_lse
     * [N, H, L] fp32 512, rng_state 512 and _unused 512 (one split: a single
     * key block), freed when it returns (nothing saved); the out-projection
     * 2048 while the locals live: 9216 + 2048 + 6144 + 2048 + 2048 = 21504. */
    r = run(MHA_NW, 2, INFER, BF16, VC_ATTN_AUTO);
    assert_int_equal(r.memory.peak_allocated, 21504);
    assert_non_null(strstr(r.attention, "SDPA-backed (flash)"));
    vc_result_free(&r);
}

/* The ordinary path in inference where a "why not fast path" check fails:
 * num_heads 5 (odd; E = 40, hd = 8), activation.py's `self.num_heads is not
 * even`. Weights: in_proj 4800*4 = 19200 -> 19456, bias 480 -> 512,
 * out_proj 6400 -> 6656 + 512: 27136; input [N, L, E] 2*16*40*4 = 5120.
 * need_weights=True, F.multi_head_attention_forward: linear folds the
 * transposed input (copy 5120, freed after mm), mm output [L, N, 3E] 15360,
 * the packed copy 15360 (mm output freed); q_scaled 5120; scores [N*H, L, S]
 * 10240, softmax P 10240 (scores freed when it returns): 27136 + 5120 +
 * 15360 + 5120 + 10240 + 10240 = 73216. */
static void test_mha_infer_odd_heads(void **state)
{
    (void)state;
    vc_result r = run("{\"input\": [16, 40], \"layers\": [{\"type\": \"MultiheadAttention\", \"embed_dim\": 40,"
                      " \"num_heads\": 5}]}",
                      2, INFER, FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.peak_allocated, 73216);
    assert_non_null(strstr(r.attention, "self.num_heads is not even"));
    vc_result_free(&r);
}

/* ScaledDotProductAttention on q, k, v = three Linear(32, 32) of one input
 * [2, 64, 32] (per sample [H=2, L=64, D=32], contiguous), pure bf16, N = 2:
 *   x / q / k / v [N, 2, 64, 32] bf16 = 16384; fp32 copies 32768;
 *   [N, H, L, S] fp32 = 2*2*64*64*4 = 65536.
 * train, kept at the end of forward:
 *   math (§4.8): fp16/bf16 inputs are upcast; v_acc (fp32 copy, kept by
 *     attn @ v) 32768, q*sqrt(s) 32768 and k^T*sqrt(s) 32768 (kept by q @ k^T),
 *     _safe_softmax result 65536: input 16384 + 163840 = 180224.
 *   efficient (§4.6): q, k, v 3*16384, output 16384, logsumexp
 *     [N, H, ceil32(64)] fp32 = 1024: 16384 + 65536 + 1024 = 82944.
 *   flash (§4.5): q, k, v, output 4*16384, softmax_lse [N, H, 64] fp32 1024,
 *     rng_state and _unused 512 each: 16384 + 65536 + 2048 = 83968. */
static const char *const SDPA3 =
    "{\"input\": [2, 64, 32], \"layers\": ["
    "{\"type\": \"Linear\", \"in_features\": 32, \"out_features\": 32, \"name\": \"q\"},"
    "{\"type\": \"Linear\", \"in_features\": 32, \"out_features\": 32, \"inputs\": [\"input\"], \"name\": \"k\"},"
    "{\"type\": \"Linear\", \"in_features\": 32, \"out_features\": 32, \"inputs\": [\"input\"], \"name\": \"v\"},"
    "{\"type\": \"ScaledDotProductAttention\", \"inputs\": [\"q\", \"k\", \"v\"]}]}";

static void test_sdpa_bf16_train_backends(void **state)
{
    (void)state;
    vc_result r = run(SDPA3, 2, TRAIN, BF16, VC_ATTN_MATH);
    assert_int_equal(r.memory.activations, 180224);
    vc_result_free(&r);
    r = run(SDPA3, 2, TRAIN, BF16, VC_ATTN_EFFICIENT);
    assert_int_equal(r.memory.activations, 82944);
    vc_result_free(&r);
    r = run(SDPA3, 2, TRAIN, BF16, VC_ATTN_FLASH);
    assert_int_equal(r.memory.activations, 83968);
    vc_result_free(&r);
    r = run(SDPA3, 2, TRAIN, BF16, VC_ATTN_AUTO); /* bf16, D 32 <= 256: flash */
    assert_int_equal(r.memory.activations, 83968);
    vc_result_free(&r);
}

/* Same model, inference. Base = 3 Linear (W 2048 + b 512) 7680 + input
 * 16384 = 24064; q, k, v 3*16384 -> 73216.
 *   math: q/k/v fp32 copies 3*32768 (C++ locals, alive to the end) + q*s
 *     32768 + k^T*s 32768 + scores 65536 (k^T*s freed after the matmul), then
 *     _safe_softmax as in PyTorch 2.5: its result 65536 plus, alive together
 *     inside it, the softmax output 65536, the (x == -inf) bool mask 16384,
 *     the bool row mask [N, H, L] 256 -> 512 and the two 0-d device tensors
 *     it compares and fills with (scalar_tensor(-inf), scalar_tensor(0.0):
 *     512 each, attention.cpp; measured with the CPU harness): 73216 + 98304
 *     + 32768 + 65536 + 65536 + 82432 + 1024 = 418816. From 2.6 on (the
 *     default, 2.15) where_out writes into the softmax output: 65536 less.
 *   efficient: the output 16384 (no logsumexp without grad): 89600.
 *   flash: output 16384 + softmax_lse 1024 + rng_state 512 + _unused 512
 *     (no split-KV: one key block of 256) = 91648. */
static void test_sdpa_bf16_infer_backends(void **state)
{
    (void)state;
    vc_result r = run(SDPA3, 2, INFER, BF16, VC_ATTN_MATH);
    assert_int_equal(r.memory.peak_allocated, 418816 - 65536);
    vc_result_free(&r);
    r = run(SDPA3, 2, INFER, BF16, VC_ATTN_EFFICIENT);
    assert_int_equal(r.memory.peak_allocated, 89600);
    vc_result_free(&r);
    r = run(SDPA3, 2, INFER, BF16, VC_ATTN_FLASH);
    assert_int_equal(r.memory.peak_allocated, 91648);
    vc_result_free(&r);
}

/* TransformerEncoderLayer(32, 4, dim_feedforward=64), post-norm, dropout 0.1,
 * relu, fp32, L = 16, N = 2: [N, L, E] = 4096, [N, L, F] = 8192,
 * bool masks 1024 / 2048, LayerNorm mean/rstd [N*L] fp32 = 128 -> 512 each.
 * Weights: self_attn 17408 + linear1 8192 + 512 + linear2 8192 + 512 +
 *   norm1/norm2 4*512 = 36864.
 * train, auto (efficient), kept at the end of forward:
 *   input 4096; self-attention (as test_mha_sdpa_train) fold 4096 + packed
 *   12288 + output 4096 + logsumexp 1024 + out_proj input copy 4096;
 *   dropout1 mask 1024; norm1 input (the sum) 4096 + stats 1024; norm1
 *   output (linear1's input) 4096; relu output 8192; dropout mask 2048 +
 *   dropped tensor (linear2's input) 8192; dropout2 mask 1024; norm2 input
 *   4096 + stats 1024 = 64512.
 * math: the attention keeps q*s 4096, k^T*s 4096, P 8192, SDPA's dropout
 *   (p = 0.1) mask [N, H, L, S] bool 2048 + dropped P 8192 and the output
 *   copy 4096 instead of output + logsumexp + copy (9216):
 *   64512 - 9216 + 30720 = 86016. */
static const char *const ENC =
    "{\"input\": [16, 32], \"layers\": [{\"type\": \"TransformerEncoderLayer\", \"d_model\": 32, \"nhead\": 4,"
    " \"dim_feedforward\": 64}]}";

static void test_encoder_post_norm_train(void **state)
{
    (void)state;
    vc_result r = run(ENC, 2, TRAIN, FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.weights, 36864);
    assert_int_equal(r.memory.activations, 64512);
    vc_result_free(&r);
    r = run(ENC, 2, TRAIN, FP32, VC_ATTN_MATH);
    assert_int_equal(r.memory.activations, 86016);
    vc_result_free(&r);
}

/* Inference, base = weights 36864 + input 4096 = 40960 (dropout is the
 * identity, nothing is saved). TransformerEncoderLayer.forward's fast path
 * (transformer.py: eval, no grad, bias, even heads, no autocast) runs
 * transformer_encoder_layer_forward (transformers/transformer.cpp):
 * auto: the SDPA-backed native attention (efficient): linear [N, L, 3E]
 *   12288, output 4096, out-projection 4096 with the locals alive: 61440
 *   (the peak); then x.add_(src) in place, norm1 (4096 + mean/rstd 2 * 512),
 *   _addmm_activation [N, L, F] 8192 + addmm 4096 on norm1's output:
 *   40960 + 4096 + 8192 + 4096 = 57344; norm2 54272.
 * math: the explicit native attention: qkv 12288 + q_k_v 12288: 65536. */
static void test_encoder_post_norm_infer(void **state)
{
    (void)state;
    vc_result r = run(ENC, 2, INFER, FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.peak_allocated, 61440);
    assert_non_null(strstr(r.attention, "TransformerEncoderLayer fast path"));
    vc_result_free(&r);
    r = run(ENC, 2, INFER, FP32, VC_ATTN_MATH);
    assert_int_equal(r.memory.peak_allocated, 65536);
    vc_result_free(&r);
}

/* The same layer with bias=False: transformer.py's "self_attn was passed
 * bias=False", so the ordinary path (as before this release choice) with
 * math SDPA. Weights without biases: in_proj 12288 + out_proj 4096 +
 * linear1/2 2 * 8192 + norm weights 2 * 512 = 33792; + input 4096 = 37888.
 * After the projections (packed 12288 alive; the transposed input's fold
 * copy is freed by then): q*s 4096, k^T*s 4096, scores 8192 (k^T*s freed);
 * _safe_softmax (2.6+): softmax output 8192 + bool mask 2048 + row mask 512
 * + the two scalars 1024: 37888 + 12288 + 4096 + 8192 + 8192 + 3584 =
 * 74240. --torch 2.5 adds where's separate result, one [N, H, L, S] fp32
 * tensor: 8192 more. --torch 2.4 (plain softmax): 74240 - 3584 = 70656. */
static const char *const ENC_NB =
    "{\"input\": [16, 32], \"layers\": [{\"type\": \"TransformerEncoderLayer\", \"d_model\": 32, \"nhead\": 4,"
    " \"dim_feedforward\": 64, \"bias\": false}]}";

/* A model (SGD, workspace 0) at a release, precision and backend. */
static vc_result run_rel(const char *json, int torch, vc_mode mode, vc_precision prec, vc_attention attn)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(json, strlen(json), "test.json", &m, &err)) fail_msg("load failed: %s", err.msg);
    vc_options o;
    vc_options_init(&o);
    o.batch = 2;
    o.mode = mode;
    o.precision = prec;
    o.attention = attn;
    o.optim = VC_OPTIM_SGD;
    o.workspace = 0;
    o.torch_version = torch;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    vc_model_free(m);
    return r;
}

static vc_result run_torch(const char *json, int torch, vc_mode mode, vc_attention attn)
{
    return run_rel(json, torch, mode, VC_PREC_FP32, attn);
}

static void test_encoder_no_bias_infer_versions(void **state)
{
    (void)state;
    vc_result r = run_torch(ENC_NB, VC_TORCH_DEFAULT, INFER, VC_ATTN_MATH);
    assert_int_equal(r.memory.peak_allocated, 74240);
    assert_non_null(strstr(r.attention, "bias=False"));
    vc_result_free(&r);
    r = run_torch(ENC_NB, 205, INFER, VC_ATTN_MATH);
    assert_int_equal(r.memory.peak_allocated, 74240 + 8192);
    vc_result_free(&r);
    r = run_torch(ENC_NB, 204, INFER, VC_ATTN_MATH);
    assert_int_equal(r.memory.peak_allocated, 70656);
    vc_result_free(&r);
}

/* A masked (causal) math SDPA: --torch 2.5 and the default differ by the
 * safe-softmax tensor exactly, [N, H, L, S] = 2*2*64*64*4 = 65536 bytes in
 * fp32 (SDPA3 with is_causal, fp32: the peak is inside _safe_softmax). */
static void test_sdpa_causal_versions(void **state)
{
    (void)state;
    static const char *const CAUSAL =
        "{\"input\": [2, 64, 32], \"layers\": ["
        "{\"type\": \"Linear\", \"in_features\": 32, \"out_features\": 32, \"name\": \"q\"},"
        "{\"type\": \"Linear\", \"in_features\": 32, \"out_features\": 32, \"inputs\": [\"input\"], \"name\": \"k\"},"
        "{\"type\": \"Linear\", \"in_features\": 32, \"out_features\": 32, \"inputs\": [\"input\"], \"name\": \"v\"},"
        "{\"type\": \"ScaledDotProductAttention\", \"inputs\": [\"q\", \"k\", \"v\"], \"is_causal\": true}]}";
    vc_result a = run_torch(CAUSAL, 205, INFER, VC_ATTN_MATH), d = run_torch(CAUSAL, 0, INFER, VC_ATTN_MATH);
    assert_int_equal(a.memory.peak_allocated - d.memory.peak_allocated, 65536);
    vc_result_free(&a);
    vc_result_free(&d);
    a = run_torch(CAUSAL, 205, TRAIN, VC_ATTN_MATH), d = run_torch(CAUSAL, 0, TRAIN, VC_ATTN_MATH);
    assert_int_equal(a.memory.peak_allocated - d.memory.peak_allocated, 65536);
    vc_result_free(&a);
    vc_result_free(&d);
}

/* Flash's head-dim limit by release (release.c VC_REL_FLASH_HDIM; sdp_utils.cpp
 * check_head_dim_size_flash: 128 with FlashAttention v1 in 2.0/2.1, 256 from
 * 2.2, PR #105602). q = k = v = the input [N, H, L, D] = [2, 2, 64, 192]
 * bf16, inference, --attention auto (the A100 default: 108 SMs):
 *  - 2.2 and later: flash. Input 2*2*64*192*2 = 98304; out (empty_like(q))
 *    98304; softmax_lse [N, H, L] fp32 1024; rng_state and _unused (16 and
 *    8 B -> 512 each); split-KV: N*H*ceil(L/64) = 4 blocks < 0.8*216 but one
 *    key block (block_n 64 for D > 128) -> 1 split, no accumulators:
 *    98304 + 98304 + 1024 + 1024 = 198656.
 *  - 2.1: D = 192 > 128 rejects flash; memory-efficient (192 % 8 == 0):
 *    out [N, L, H, D] 98304, no logsumexp (no grad), output_accum
 *    [N, L, H, D] fp32 196608 (16-bit output with D > 128):
 *    98304 + 98304 + 196608 = 393216, the same as --attention efficient. */
static const char *const SDPA_D192 =
    "{\"input\": [2, 64, 192], \"layers\": [{\"type\": \"ScaledDotProductAttention\","
    " \"inputs\": [\"input\", \"input\", \"input\"]}]}";

static void test_sdpa_flash_head_dim_versions(void **state)
{
    (void)state;
    vc_result r = run_rel(SDPA_D192, 0, INFER, BF16, VC_ATTN_AUTO);
    assert_int_equal(r.memory.peak_allocated, 198656);
    vc_result_free(&r);
    r = run_rel(SDPA_D192, 202, INFER, BF16, VC_ATTN_AUTO);
    assert_int_equal(r.memory.peak_allocated, 198656);
    vc_result_free(&r);
    r = run_rel(SDPA_D192, 201, INFER, BF16, VC_ATTN_AUTO);
    assert_int_equal(r.memory.peak_allocated, 393216);
    vc_result_free(&r);
    r = run_rel(SDPA_D192, 0, INFER, BF16, VC_ATTN_EFFICIENT);
    assert_int_equal(r.memory.peak_allocated, 393216);
    vc_result_free(&r);
}

/* Head dim 64 is within both limits: flash under 2.0 and 2.15 alike, the
 * same bytes (input [2, 2, 64, 64] bf16 32768; out 32768; lse 1024; rng and
 * _unused 512 each; 2*2*1 = 4 query blocks, one key block of 256 -> 1
 * split): 67584. */
static void test_sdpa_flash_head_dim_same(void **state)
{
    (void)state;
    static const char *const D64 =
        "{\"input\": [2, 64, 64], \"layers\": [{\"type\": \"ScaledDotProductAttention\","
        " \"inputs\": [\"input\", \"input\", \"input\"]}]}";
    vc_result a = run_rel(D64, 200, INFER, BF16, VC_ATTN_AUTO), d = run_rel(D64, 0, INFER, BF16, VC_ATTN_AUTO);
    assert_int_equal(a.memory.peak_allocated, 67584);
    assert_int_equal(d.memory.peak_allocated, 67584);
    vc_result_free(&a);
    vc_result_free(&d);
}

/* --optim-impl's default by release (release.c VC_REL_OPTIM_DEFAULT:
 * optimizer.py _default_to_fused_or_foreach picks foreach on CUDA from 2.0,
 * PRs #92306, #95241/#95415, #95862; fused is never the default, PR #177605
 * open): the same for every release, so Adam's training estimate does not
 * move. Adafactor (foreach=None -> forloop) exists from 2.5 only
 * (torch/optim/_adafactor.py): an older --torch is a usage error naming --optim. */
static void test_optim_default_versions(void **state)
{
    (void)state;
    for (int v = VC_TORCH_OLDEST; v <= VC_TORCH_DEFAULT; v++) {
        assert_int_equal(vc_optim_default_impl_at(VC_OPTIM_ADAM, v), VC_IMPL_FOREACH);
        assert_int_equal(vc_optim_default_impl_at(VC_OPTIM_ADAMW, v), VC_IMPL_FOREACH);
        assert_int_equal(vc_optim_default_impl_at(VC_OPTIM_MOMENTUM, v), VC_IMPL_FOREACH);
    }
    assert_int_equal(vc_optim_default_impl_at(VC_OPTIM_ADAFACTOR, 205), VC_IMPL_FORLOOP);
    assert_int_equal(vc_optim_default_impl_at(VC_OPTIM_ADAFACTOR, 0), VC_IMPL_FORLOOP);
    assert_int_equal(vc_optim_default_impl(VC_OPTIM_ADAM), vc_optim_default_impl_at(VC_OPTIM_ADAM, 0));
    static const char *const MLP = "{\"input\": [64], \"layers\": [{\"type\": \"Linear\", \"in_features\": 64,"
                                   " \"out_features\": 64}]}";
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(MLP, strlen(MLP), "test.json", &m, &err)) fail_msg("load failed: %s", err.msg);
    vc_options o;
    vc_options_init(&o);
    o.optim = VC_OPTIM_ADAM;
    o.workspace = 0;
    vc_result r[2];
    for (int i = 0; i < 2; i++) {
        o.torch_version = i ? VC_TORCH_DEFAULT : VC_TORCH_OLDEST;
        o.optim_impl = vc_optim_default_impl_at(o.optim, o.torch_version);
        if (vc_estimate(m, &o, &r[i], &err)) fail_msg("estimate failed: %s", err.msg);
    }
    assert_int_equal(r[0].memory.peak_allocated, r[1].memory.peak_allocated);
    assert_int_equal(r[0].memory.optimizer_states, r[1].memory.optimizer_states);
    vc_result_free(&r[0]);
    vc_result_free(&r[1]);
    o.optim = VC_OPTIM_ADAFACTOR;
    o.optim_impl = VC_IMPL_FORLOOP;
    o.torch_version = 204;
    assert_int_equal(vc_estimate(m, &o, &r[0], &err), VC_ERR_USAGE);
    assert_non_null(strstr(err.msg, "2.5"));
    o.torch_version = 205;
    assert_int_equal(vc_estimate(m, &o, &r[0], &err), VC_OK);
    vc_result_free(&r[0]);
    vc_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mha_need_weights_train),  cmocka_unit_test(test_mha_sdpa_train),
        cmocka_unit_test(test_mha_infer),               cmocka_unit_test(test_sdpa_bf16_train_backends),
        cmocka_unit_test(test_sdpa_bf16_infer_backends), cmocka_unit_test(test_encoder_post_norm_train),
        cmocka_unit_test(test_encoder_post_norm_infer), cmocka_unit_test(test_mha_infer_odd_heads),
        cmocka_unit_test(test_encoder_no_bias_infer_versions), cmocka_unit_test(test_sdpa_causal_versions),
        cmocka_unit_test(test_sdpa_flash_head_dim_versions), cmocka_unit_test(test_sdpa_flash_head_dim_same),
        cmocka_unit_test(test_optim_default_versions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
