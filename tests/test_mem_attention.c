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

/* Inference (nothing saved), base = weights 17408 + input 4096 = 21504.
 * need_weights=True: fold copy (freed after mm), mm output 12288, packed
 *   copy 12288 (mm output freed), then q_scaled 4096 and the packed copy
 *   stay alive to the end of F.multi_head_attention_forward (Python locals):
 *   scores 8192 -> softmax P 8192 (scores freed) = 21504+12288+4096+8192+8192
 *   = 54272; later bmm #2 + its reshape copy (4096 each, then the first is
 *   freed) and out_proj's output reach the same 54272. Peak 54272.
 * need_weights=False, efficient: the largest moment is the packed copy being
 *   made while mm's output is alive: 21504 + 12288 + 12288 = 46080
 *   (efficient output 4096 + its contiguous copy 4096 stay below). */
static void test_mha_infer(void **state)
{
    (void)state;
    vc_result r = run(MHA_W, 2, INFER, FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.peak_allocated, 54272);
    vc_result_free(&r);
    r = run(MHA_NW, 2, INFER, FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.peak_allocated, 46080);
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
 *     _safe_softmax: its result 65536 plus, alive together inside it, the
 *     softmax output 65536, the (x == -inf) bool mask 16384, the bool row
 *     mask [N, H, L] 256 -> 512 and the two 0-d device tensors it compares
 *     and fills with (scalar_tensor(-inf), scalar_tensor(0.0): 512 each,
 *     attention.cpp; measured with the CPU harness): 73216 + 98304 + 32768 +
 *     65536 + 65536 + 82432 + 1024 = 418816.
 *   efficient: the output 16384 (no logsumexp without grad): 89600.
 *   flash: output 16384 + softmax_lse 1024 + rng_state 512 + _unused 512
 *     (no split-KV: one key block of 256) = 91648. */
static void test_sdpa_bf16_infer_backends(void **state)
{
    (void)state;
    vc_result r = run(SDPA3, 2, INFER, BF16, VC_ATTN_MATH);
    assert_int_equal(r.memory.peak_allocated, 418816);
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
 * identity, nothing is saved).
 * auto (efficient): the packed copy made while mm's [L, N, 3E] output is
 *   alive: 40960 + 12288 + 12288 = 65536; the feed-forward block stays below
 *   (norm1 output 4096 + linear1 8192 + relu 8192 = 61440).
 * math: after the projections (packed 12288 alive): q*s 4096, k^T*s 4096,
 *   scores 8192 (k^T*s freed after the matmul); _safe_softmax: result 8192 +
 *   softmax output 8192 + bool mask 2048 + row mask 128 -> 512 + the -inf
 *   and 0.0 scalar tensors 2 * 512 alive together: 40960 + 12288 + 4096 +
 *   8192 + 8192 + 10752 + 1024 = 85504 (the scalars: attention.cpp
 *   _safe_softmax's at::scalar_tensor(..., out.device()), measured). */
static void test_encoder_post_norm_infer(void **state)
{
    (void)state;
    vc_result r = run(ENC, 2, INFER, FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.peak_allocated, 65536);
    vc_result_free(&r);
    r = run(ENC, 2, INFER, FP32, VC_ATTN_MATH);
    assert_int_equal(r.memory.peak_allocated, 85504);
    vc_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mha_need_weights_train),  cmocka_unit_test(test_mha_sdpa_train),
        cmocka_unit_test(test_mha_infer),               cmocka_unit_test(test_sdpa_bf16_train_backends),
        cmocka_unit_test(test_sdpa_bf16_infer_backends), cmocka_unit_test(test_encoder_post_norm_train),
        cmocka_unit_test(test_encoder_post_norm_infer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
