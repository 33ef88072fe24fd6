/*
 * test_mem_norm.c — exact byte figures for the norm family (layers/norm.c).
 *
 * Each test builds a small model, runs vc_estimate with SGD (no optimizer
 * state or step temporaries), fp32 unless said, workspace 0, and checks values derived
 * by hand from docs/autograd.md (what each norm keeps, node lifetimes, the
 * loss `output.float().mean()`: a 0-d fp32 tensor, 512 B, alive until
 * loss.backward() returns, as is the 512-byte root gradient backward starts
 * from, "loss + root 1024" below; mean's backward then allocates dY, a
 * full-size grad of the output). Every tensor is rounded up to 512 bytes.
 * Each derivation was checked line by line against
 * `vramcalc --trace -o sgd --workspace 0`.
 * The norm layer is the first layer, so its input (the model input) needs
 * no grad: no grad_input is computed, but the node still exists (its
 * parameters need grads) and keeps what it saves.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <string.h>

#include "mem_test.h"

static vc_result run(const char *json, int64_t batch, vc_mode mode, vc_precision prec)
{
    return mem_run(json, batch, mode, prec, VC_ATTN_AUTO);
}

#define TRAIN VC_MODE_TRAIN
#define INFER VC_MODE_INFER

/* BatchNorm2d(16) on [16, 8, 8], batch 4 (cuDNN path: 4-D input, affine).
 *   weights: weight, bias, running_mean, running_var (64 B each) and
 *            num_batches_tracked (8 B): 5 x 512 = 2560
 *   x = y = 4*16*8*8*4 = 16384; save_mean, save_var [16] fp32 -> 512 each
 * train: activations = x (saved) + 2 stats = 17408.
 *   peak in BN's backward: weights 2560 + x 16384 + stats 1024 + loss + root
 *   1024 + dY 16384 + grad_weight 512 + grad_bias 512 = 38400.
 * infer (eval, running stats): y only: activations = x + y = 32768,
 *   peak = 2560 + 32768 = 35328. */
static void test_batchnorm2d(void **state)
{
    (void)state;
    const char *j = "{\"input\": [16, 8, 8], \"layers\": [{\"type\": \"BatchNorm2d\", \"num_features\": 16}]}";
    vc_result r = run(j, 4, TRAIN, VC_PREC_FP32);
    assert_int_equal(r.memory.weights, 2560);
    assert_int_equal(r.memory.activations, 17408);
    assert_int_equal(r.memory.peak_allocated, 38400);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    assert_int_equal(r.peak.gradients, 1024);
    vc_result_free(&r);
    r = run(j, 4, INFER, VC_PREC_FP32);
    assert_int_equal(r.memory.activations, 32768);
    assert_int_equal(r.memory.peak_allocated, 35328);
    vc_result_free(&r);
}

/* BatchNorm2d(16, track_running_stats=False) in eval still normalizes with
 * batch statistics (bn_training = running stats are None), so the forward
 * allocates save_mean/save_var [16] (512 each), dropped under no_grad:
 *   weights: weight + bias = 1024; peak = 1024 + x 16384 + y 16384 + 2 x 512
 *   = 34816 (with running stats it would be 33792). */
static void test_batchnorm_eval_without_running_stats(void **state)
{
    (void)state;
    const char *j = "{\"input\": [16, 8, 8], \"layers\": [{\"type\": \"BatchNorm2d\", \"num_features\": 16,"
                    " \"track_running_stats\": false}]}";
    vc_result r = run(j, 4, INFER, VC_PREC_FP32);
    assert_int_equal(r.memory.peak_allocated, 34816);
    vc_result_free(&r);
}

/* InstanceNorm2d(16, affine, track_running_stats) on [16, 8, 8], batch 4:
 * at::instance_norm repeats weight, bias, running_mean, running_var to
 * [N*C] = 64 floats (256 -> 512 each), views x as [1, 64, 8, 8] and runs
 * cudnn_batch_norm with [64] stats (512 each); then running_mean_.view(N, C)
 * .mean(0) (512, transient) for each running stat.
 *   weights 2560, x = y = 16384.
 * train: BN keeps x (alias), the repeated weight and running stats (3 x
 *   512) and its 2 stats; the repeated bias dies after BN:
 *   activations = 16384 + 1536 + 1024 = 18944.
 *   peak in BN's backward: 2560 + 16384 + 1536 + 1024 + loss + root 1024
 *   + dY 16384 + grads of the repeated weight and bias 2 x 512 = 39936.
 * infer: the four repeats, then y: peak = 2560 + 16384 + 4 x 512 + 16384 = 37376. */
static void test_instancenorm2d_repeats(void **state)
{
    (void)state;
    const char *j = "{\"input\": [16, 8, 8], \"layers\": [{\"type\": \"InstanceNorm2d\", \"num_features\": 16,"
                    " \"affine\": true, \"track_running_stats\": true}]}";
    vc_result r = run(j, 4, TRAIN, VC_PREC_FP32);
    assert_int_equal(r.memory.activations, 18944);
    assert_int_equal(r.memory.peak_allocated, 39936);
    vc_result_free(&r);
    r = run(j, 4, INFER, VC_PREC_FP32);
    assert_int_equal(r.memory.peak_allocated, 37376);
    vc_result_free(&r);
}

/* LayerNorm(64) on [256, 64], batch 2: M = 512 rows.
 *   weights: weight, bias 256 B -> 512 each = 1024; x = y = 2*256*64*4 = 131072
 *   mean, rstd [512] fp32 = 2048 each
 * train: activations = x + mean + rstd = 135168.
 *   peak in LN's backward: 1024 + x 131072 + 4096 + loss + root 1024
 *   + dY 131072 + grad_weight 512 + grad_bias 512 = 269312. */
static void test_layernorm(void **state)
{
    (void)state;
    const char *j = "{\"input\": [256, 64], \"layers\": [{\"type\": \"LayerNorm\", \"normalized_shape\": 64}]}";
    vc_result r = run(j, 2, TRAIN, VC_PREC_FP32);
    assert_int_equal(r.memory.activations, 135168);
    assert_int_equal(r.memory.peak_allocated, 269312);
    vc_result_free(&r);
}

/* RMSNorm(64) on [256, 64], batch 2, fp32: weight and input share a dtype,
 * so rms_norm runs _fused_rms_norm (keeps input, weight, rstd [M]).
 *   weight 256 -> 512; x = y = 131072; rstd [512] fp32 = 2048.
 * train: activations = x + rstd = 133120.
 *   peak in the fused backward: 512 + x + rstd + loss + root 1024 + dY 131072
 *   + grad_weight 512 = 266240 (512 less at mean's backward, before
 *   grad_weight exists).
 * infer: rstd is still allocated: peak = 512 + x + y + 2048 = 264704. */
static void test_rmsnorm_fused(void **state)
{
    (void)state;
    const char *j = "{\"input\": [256, 64], \"layers\": [{\"type\": \"RMSNorm\", \"normalized_shape\": 64}]}";
    vc_result r = run(j, 2, TRAIN, VC_PREC_FP32);
    assert_int_equal(r.memory.activations, 133120);
    assert_int_equal(r.memory.peak_allocated, 266240);
    vc_result_free(&r);
    r = run(j, 2, INFER, VC_PREC_FP32);
    assert_int_equal(r.memory.peak_allocated, 264704);
    vc_result_free(&r);
}

/* Linear(64, 64, bias=False) -> RMSNorm(64) on [256, 64], batch 2, amp-bf16:
 * the RMSNorm input is the bf16 mm output and the weight is fp32, so
 * rms_norm runs the composite (docs/autograd.md, RMSNorm):
 *   weights: W 16384 + rms weight 512 = 16896; x (fp32 input) 131072.
 *   Linear: x cast to bf16 (65536, kept by mm: W needs grad), W cast to
 *   bf16 (8192, autocast cache, dropped at the end of forward), h bf16 65536.
 *   Composite: xu = h.float() 131072 (h dies), sq 131072 (dies after mean),
 *   mean 2048 (dies after rsqrt), r = rsqrt 2048, y1 = xu * r 131072,
 *   y2 = y1 * w 131072, type_as -> bf16 65536; the loss casts it to fp32.
 *   Kept: xu (pow, mul), r (mul), y1 (the weight's mul).
 * train: activations = x 131072 + x_bf16 65536 + xu 131072 + r 2048
 *   + y1 131072 = 460800.
 *   peak in pow's backward: weights 16896 + x + x_bf16 + xu + loss + root
 *   1024 + xu's grad from the mul 131072 + incoming grad 131072 + new grad
 *   131072 + pow_backward's two temporaries 262144 + the rms weight's grad
 *   512 = 1001472. */
static void test_rmsnorm_composite_under_amp(void **state)
{
    (void)state;
    const char *j = "{\"input\": [256, 64], \"layers\": [{\"type\": \"Linear\", \"in_features\": 64,"
                    " \"out_features\": 64, \"bias\": false}, {\"type\": \"RMSNorm\", \"normalized_shape\": 64}]}";
    vc_result r = run(j, 2, TRAIN, VC_PREC_AMP_BF16);
    assert_int_equal(r.memory.activations, 460800);
    assert_int_equal(r.memory.peak_allocated, 1001472);
    vc_result_free(&r);
}

/* GroupNorm(4, 32) on [32, 4, 4], batch 2:
 *   weights 2 x 512 = 1024; x = y = 2*32*16*4 = 4096; mean, rstd [N, G] = 8
 *   floats -> 512 each.
 * train: activations = x + mean + rstd = 5120.
 *   peak in GN's backward: 1024 + 4096 + 1024 + loss + root 1024 + dY 4096
 *   + grads 2 x 512 + the ds/db [N, C] fp32 temporaries (2*2*32*4 = 512)
 *   = 12800. */
static void test_groupnorm(void **state)
{
    (void)state;
    const char *j = "{\"input\": [32, 4, 4], \"layers\": [{\"type\": \"GroupNorm\", \"num_groups\": 4,"
                    " \"num_channels\": 32}]}";
    vc_result r = run(j, 2, TRAIN, VC_PREC_FP32);
    assert_int_equal(r.memory.activations, 5120);
    assert_int_equal(r.memory.peak_allocated, 12800);
    vc_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batchnorm2d),
        cmocka_unit_test(test_batchnorm_eval_without_running_stats),
        cmocka_unit_test(test_instancenorm2d_repeats),
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_rmsnorm_fused),
        cmocka_unit_test(test_rmsnorm_composite_under_amp),
        cmocka_unit_test(test_groupnorm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
