/*
 * test_mem_window.c — exact byte figures for ShiftedWindowAttention,
 * ShiftedWindowAttentionV2 and RelativePositionBias (layers/window.c), the
 * ops of torchvision's shifted_window_attention (models/swin_transformer.py)
 * and MaxViT's relative position bias (models/maxvit.py).
 *
 * Each model is Linear(8->8, no bias) on [4, 4, 8] (so that the attention's
 * input needs grad) followed by the layer under test: dim 8, window 2 (nW = 4
 * windows of N = 4 tokens), 2 heads (d = 4), batch 2. vc_estimate runs with
 * SGD, fp32, workspace 0 (mem_test.h). Derived by hand from docs/autograd.md
 * and the function's source, each checked line by line against
 * `vramcalc --trace -o sgd --workspace 0`. Every tensor is rounded up to 512 B:
 *   x (model input) = c (linear output) = 2*4*4*8*4 = 1024; qkv = 3072;
 *   attention scores 2*4*2*4*4*4 = 1024; the bias [1, 2, 4, 4] 128 -> 512;
 *   the shift mask [4, 4, 4] 256 -> 512, its bool masks 64 -> 512.
 * Weights: linear 256 -> 512, relative_position_bias_table 9*2 floats -> 512,
 * qkv.weight 24*8*4 = 768 -> 1024, qkv.bias 96 -> 512, proj.weight 256 -> 512,
 * proj.bias -> 512, the index buffer 16 int64 -> 512: 4096.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>
#include <string.h>

#include "mem_test.h"

static vc_result run_window(const char *kind, int shift, vc_mode mode)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{\"input\": [4, 4, 8], \"layers\": [{\"type\": \"Linear\", \"in_features\": 8, \"out_features\": 8,"
             " \"bias\": false}, {\"type\": \"%s\", \"dim\": 8, \"window_size\": 2, \"shift_size\": %d,"
             " \"num_heads\": 2}]}",
             kind, shift);
    return mem_run(json, 2, mode, VC_PREC_FP32, VC_ATTN_AUTO);
}

/* Training, v1 without shift: what the function leaves saved at the end of
 * forward is the linear's input x 1024 and, in the attention, the window
 * copy (view.permute.reshape with 2 windows per row and 2 rows per window:
 * a copy, kept by the qkv linear) 1024, bmm's copies of the scaled q and of
 * k^T (matmul's reshape of non-contiguous operands) 1024 + 1024, the softmax
 * output 1024, bmm's copy of v 1024 and the transpose(1, 2).reshape copy kept
 * by proj 1024: 7168. The bias, qkv and the scaled q are locals, freed when
 * the function returns; pad's clone and the output are not kept. A shifted
 * block keeps the same (roll and the mask add save nothing). */
static void test_window_train_saved(void **state)
{
    (void)state;
    vc_result r = run_window("ShiftedWindowAttention", 0, VC_MODE_TRAIN);
    assert_int_equal(r.memory.weights, 4096);
    assert_int_equal(r.memory.activations, 7168);
    vc_result_free(&r);
    r = run_window("ShiftedWindowAttention", 1, VC_MODE_TRAIN);
    assert_int_equal(r.memory.activations, 7168);
    vc_result_free(&r);
}

/* Inference, shifted (shift 1 < padded size 4): the peak is at attn @ v.
 * Alive then: x 1024, c 1024 (the function's input, a local until it
 * returns), the bias 512, the window copy x 1024 (rebound only after attn @ v),
 * qkv 3072 (k and v are its views), the scaled q 1024, the mask 512, the
 * softmax output 1024, bmm's copy of v 1024 and bmm's output 1024: 11264
 * activations + 4096 weights = 15360. Without shift the mask is not made:
 * 10752 + 4096 = 14848. (The mask's own build peaks at 10752 + weights:
 * new_zeros, its reshape copy, the difference, ne, masked_fill, eq,
 * masked_fill, each 512, with three alive at once.) */
static void test_window_infer_peak(void **state)
{
    (void)state;
    vc_result r = run_window("ShiftedWindowAttention", 1, VC_MODE_INFER);
    assert_int_equal(r.memory.activations, 11264);
    assert_int_equal(r.memory.peak_allocated, 15360);
    assert_int_equal(r.peak.phase, VC_PHASE_FORWARD);
    vc_result_free(&r);
    r = run_window("ShiftedWindowAttention", 0, VC_MODE_INFER);
    assert_int_equal(r.memory.peak_allocated, 14848);
    vc_result_free(&r);
}

/* Training, v2 (cosine attention, cpb_mlp bias): x 1024; the bias path keeps
 * cpb_mlp's hidden [9, 512] (ReLU in place keeps its output, the second
 * Linear its input: one tensor, 18432) and the sigmoid's result 512; the
 * window copy 1024; qkv 3072 (F.normalize keeps q and k, views of it); per
 * normalize the norm [.., N, 1] and the clamp_min result, 512 each: 2048;
 * bmm's copies of the normalized q and k^T 1024 + 1024; attn * logit_scale
 * keeps attn 1024 and exp(clamp(logit_scale)) 512; softmax 1024; v's copy
 * 1024; the proj input copy 1024: 32768. */
static void test_window_v2_train_saved(void **state)
{
    (void)state;
    vc_result r = run_window("ShiftedWindowAttentionV2", 0, VC_MODE_TRAIN);
    assert_int_equal(r.memory.activations, 32768);
    vc_result_free(&r);
}

/* attention_dropout 0.1, shifted. torchvision calls F.dropout(attn, p) without
 * `training`, so it drops in eval mode too.
 * train: native_dropout keeps its bool mask (2*4*2*4*4 = 256 -> 512) and the
 *   second bmm keeps the dropout output (1024) where it kept the softmax
 *   output, which softmax itself still keeps: 7168 + 512 + 1024 = 8704.
 * infer: the dropout output (1024) and its mask (512, kept by nothing) are
 *   made next to the softmax output, which is freed after it: 9216 + 1536 =
 *   10752 activations, below the 11264 at attn @ v: the peak stays 15360. */
static void test_window_attention_dropout(void **state)
{
    (void)state;
    const char *json = "{\"input\": [4, 4, 8], \"layers\": [{\"type\": \"Linear\", \"in_features\": 8, "
                       "\"out_features\": 8, \"bias\": false}, {\"type\": \"ShiftedWindowAttention\", \"dim\": 8, "
                       "\"window_size\": 2, \"shift_size\": 1, \"num_heads\": 2, \"attention_dropout\": 0.1}]}";
    vc_result r = mem_run(json, 2, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.activations, 8704);
    vc_result_free(&r);
    r = mem_run(json, 2, VC_MODE_INFER, VC_PREC_FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.peak_allocated, 15360);
    vc_result_free(&r);
}

/* RelativePositionBias (MaxViT's get_relative_positional_bias) added to
 * Linear(4->4, no bias) on [1, 2, 4, 4], batch 2: heads 2, window 2 (N = 4,
 * a 9-row table: 72 B -> 512; the index buffer 16 int64 -> 512; the linear's
 * weight -> 512: weights 1536). x = the linear's output = 256 -> 512. The
 * bias has no batch: table[index] [16, 2] (128 -> 512), its permuted copy
 * [1, 2, 4, 4] (512), the gather freed after the copy; the add keeps nothing.
 * train: activations = x 512; gradients: the linear's weight and the table,
 *   512 each. Peak at the gather's backward: weights 1536 + x 512 + loss 512
 *   + root grad 512 + dY 512 + the add's gradient for the bias, reduced to
 *   its [1, 2, 4, 4] (512) + the table's gradient (index_put_ into zeros of
 *   the table, 512) = 4608.
 * infer: x, the linear's output, the gather and its copy alive at the copy:
 *   2048 + weights 1536 = 3584. */
static void test_relative_position_bias(void **state)
{
    (void)state;
    const char *json = "{\"input\": [1, 2, 4, 4], \"layers\": [{\"type\": \"Linear\", \"in_features\": 4, "
                       "\"out_features\": 4, \"bias\": false}, {\"type\": \"RelativePositionBias\", \"num_heads\": 2, "
                       "\"window_size\": 2}, {\"type\": \"Add\", \"inputs\": [\"layers[0]\", \"layers[1]\"]}]}";
    vc_result r = mem_run(json, 2, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.weights, 1536);
    assert_int_equal(r.memory.activations, 512);
    assert_int_equal(r.memory.gradients, 1024);
    assert_int_equal(r.memory.peak_allocated, 4608);
    vc_result_free(&r);
    r = mem_run(json, 2, VC_MODE_INFER, VC_PREC_FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.peak_allocated, 3584);
    vc_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_train_saved),
        cmocka_unit_test(test_window_infer_peak),
        cmocka_unit_test(test_window_v2_train_saved),
        cmocka_unit_test(test_window_attention_dropout),
        cmocka_unit_test(test_relative_position_bias),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
