/*
 * test_mem_pooling.c — exact byte figures for the pooling family
 * (layers/pooling.c) and the resample family (layers/resample.c: Upsample,
 * PixelShuffle).
 *
 * Each test builds a small model, runs vc_estimate with SGD (no optimizer
 * state or step temporaries), fp32 unless said, and workspace 0, and checks
 * values derived by hand from docs/autograd.md (pooling, upsample,
 * pixel_shuffle, node lifetimes, the loss, autocast). Every tensor is
 * rounded up to 512 bytes. The loss (`output.float().mean()`, a 0-d fp32
 * tensor, 512) is a Python variable alive until loss.backward() returns, and
 * so is the root gradient (512) backward starts from: "loss + root 1024" in
 * every backward figure below. Each derivation was checked line by line
 * against `vramcalc --trace -o sgd --workspace 0`.
 *
 * Most models start with a trainable Conv2d(4->4, k1, no bias) on [4, 8, 8]
 * at batch 2 so that the op under test has an input that requires grad:
 *   x 2*4*8*8*4 = 2048 (kept by the conv), c (conv output) 2048, weight 64 B -> 512.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "mem_test.h"

static vc_result run(const char *json, int64_t batch, vc_mode mode, vc_precision prec)
{
    return mem_run(json, batch, mode, prec, VC_ATTN_AUTO);
}

/* The conv stem followed by `layer` (a JSON object). */
static vc_result run_after_conv(const char *layer, vc_mode mode, vc_precision prec)
{
    char j[1024];
    snprintf(j, sizeof j,
             "{\"input\": [4, 8, 8], \"layers\": [{\"type\": \"Conv2d\", \"in_channels\": 4, \"out_channels\": 4,"
             " \"kernel_size\": 1, \"bias\": false}, %s]}",
             layer);
    return run(j, 2, mode, prec);
}

#define TRAIN VC_MODE_TRAIN
#define INFER VC_MODE_INFER
#define FP32 VC_PREC_FP32

/* MaxPool2d(2) after the stem: y [4, 4, 4] = 2*4*4*4*4 = 512; int64 indices 2*64*8 = 1024.
 * train: max_pool2d_with_indices keeps c and the indices:
 *   activations = x + c + indices = 2048 + 2048 + 1024 = 5120.
 *   peak in its backward: weight 512 + x 2048 + c 2048 + indices 1024 + loss + root 1024
 *   + grad y 512 + grad c 2048 = 9216.
 * infer: the indices are still allocated with y and dropped when the op returns:
 *   peak = weight 512 + x 2048 + c 2048 + y 512 + indices 1024 = 6144. */
static void test_maxpool2d(void **state)
{
    (void)state;
    const char *l = "{\"type\": \"MaxPool2d\", \"kernel_size\": 2}";
    vc_result r = run_after_conv(l, TRAIN, FP32);
    assert_int_equal(r.memory.activations, 5120);
    assert_int_equal(r.memory.peak_allocated, 9216);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    vc_result_free(&r);
    r = run_after_conv(l, INFER, FP32);
    assert_int_equal(r.memory.peak_allocated, 6144);
    vc_result_free(&r);
}

/* MaxPool1d(2) on the model input [4, 64] at batch 2 (no grad anywhere):
 *   x 2*4*64*4 = 2048; y [4, 32] 1024; indices 2*4*32*8 = 2048.
 * infer (and train, where nothing is saved): peak = x + y + indices = 5120. */
static void test_maxpool1d_transient_indices(void **state)
{
    (void)state;
    const char *j = "{\"input\": [4, 64], \"layers\": [{\"type\": \"MaxPool1d\", \"kernel_size\": 2}]}";
    vc_result r = run(j, 2, INFER, FP32);
    assert_int_equal(r.memory.peak_allocated, 5120);
    vc_result_free(&r);
    r = run(j, 2, TRAIN, FP32);
    assert_int_equal(r.memory.peak_allocated, 5120);
    assert_int_equal(r.memory.activations, 2048);
    vc_result_free(&r);
}

/* AdaptiveAvgPool2d(1) is c.mean((-1, -2), keepdim=True): nothing saved, c is freed after it:
 *   activations = x = 2048; y 2*4*4 = 32 -> 512.
 *   forward tops out when y is made: weight 512 + x 2048 + c 2048 + y 512 = 5120 (c is gone
 *   before the loss); the peak is in mean's backward: weight + x + loss + root 1024 + grad y 512
 *   + grad c 2048 = 6144.
 * AdaptiveAvgPool2d([2, 2]) is _adaptive_avg_pool2d, which keeps c: activations = 4096. */
static void test_adaptive_avgpool(void **state)
{
    (void)state;
    vc_result r = run_after_conv("{\"type\": \"AdaptiveAvgPool2d\", \"output_size\": 1}", TRAIN, FP32);
    assert_int_equal(r.memory.activations, 2048);
    assert_int_equal(r.memory.peak_allocated, 6144);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    vc_result_free(&r);
    r = run_after_conv("{\"type\": \"AdaptiveAvgPool2d\", \"output_size\": [2, null]}", TRAIN, FP32);
    assert_int_equal(r.memory.activations, 4096);
    vc_result_free(&r);
}

/* AvgPool2d(2): keeps c, no indices: activations = 4096;
 * infer peak = weight 512 + x 2048 + c 2048 + y 512 = 5120.
 * AdaptiveMaxPool2d(4) keeps c and int64 indices [4, 4, 4]: activations = 2048 + 2048 + 1024 = 5120. */
static void test_avgpool_and_adaptive_max(void **state)
{
    (void)state;
    const char *l = "{\"type\": \"AvgPool2d\", \"kernel_size\": 2}";
    vc_result r = run_after_conv(l, TRAIN, FP32);
    assert_int_equal(r.memory.activations, 4096);
    vc_result_free(&r);
    r = run_after_conv(l, INFER, FP32);
    assert_int_equal(r.memory.peak_allocated, 5120);
    vc_result_free(&r);
    r = run_after_conv("{\"type\": \"AdaptiveMaxPool2d\", \"output_size\": 4}", TRAIN, FP32);
    assert_int_equal(r.memory.activations, 5120);
    vc_result_free(&r);
}

/* ---- resample.c */

/* Upsample(scale_factor=2) (nearest): saves nothing; y [4, 16, 16] = 2*4*256*4 = 8192.
 * train: activations = x = 2048 (c freed after the upsample);
 *   forward tops out when y is made: weight 512 + x 2048 + c 2048 + y 8192 = 12800; the peak
 *   is in backward when grad c is made: 512 + 2048 + loss + root 1024 + grad y 8192
 *   + grad c 2048 = 13824.
 * infer: peak = 12800. */
static void test_upsample_nearest(void **state)
{
    (void)state;
    const char *l = "{\"type\": \"Upsample\", \"scale_factor\": 2}";
    vc_result r = run_after_conv(l, TRAIN, FP32);
    assert_int_equal(r.memory.activations, 2048);
    assert_int_equal(r.memory.peak_allocated, 13824);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    vc_result_free(&r);
    r = run_after_conv(l, INFER, FP32);
    assert_int_equal(r.memory.peak_allocated, 12800);
    vc_result_free(&r);
}

/* amp-bf16, Upsample bilinear x2: the conv runs in bf16 (x bf16 1024 and weight bf16 512 saved,
 * output c 1024 bf16); upsample_bilinear2d is on autocast's fp32 list, so c is cast to fp32
 * (2048) and y is fp32 (8192). Nothing of the upsample or the cast is saved:
 *   activations = x 2048 + x bf16 1024 + weight bf16 512 = 3584.
 *   peak when y is made: weight 512 + 3584 + c bf16 1024 (the caller's reference lives until
 *   the upsample returns) + c fp32 2048 + y 8192 = 15360; backward reaches the same figure
 *   when grad c is made: 512 + 3584 + loss + root 1024 + grad y 8192 + grad c fp32 2048. */
static void test_upsample_amp_fp32(void **state)
{
    (void)state;
    vc_result r = run_after_conv("{\"type\": \"Upsample\", \"scale_factor\": 2, \"mode\": \"bilinear\"}", TRAIN,
                                 VC_PREC_AMP_BF16);
    assert_int_equal(r.memory.activations, 3584);
    assert_int_equal(r.memory.peak_allocated, 15360);
    vc_result_free(&r);
}

/* PixelShuffle(2): one output-sized copy [1, 16, 16] = 2048, nothing saved.
 * train: activations = x = 2048; infer peak = weight 512 + x + c + y = 512 + 3*2048 = 6656. */
static void test_pixel_shuffle(void **state)
{
    (void)state;
    const char *l = "{\"type\": \"PixelShuffle\", \"upscale_factor\": 2}";
    vc_result r = run_after_conv(l, TRAIN, FP32);
    assert_int_equal(r.memory.activations, 2048);
    vc_result_free(&r);
    r = run_after_conv(l, INFER, FP32);
    assert_int_equal(r.memory.peak_allocated, 6656);
    vc_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_maxpool2d),
        cmocka_unit_test(test_maxpool1d_transient_indices),
        cmocka_unit_test(test_adaptive_avgpool),
        cmocka_unit_test(test_avgpool_and_adaptive_max),
        cmocka_unit_test(test_upsample_nearest),
        cmocka_unit_test(test_upsample_amp_fp32),
        cmocka_unit_test(test_pixel_shuffle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
