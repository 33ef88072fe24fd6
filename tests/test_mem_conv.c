/*
 * test_mem_conv.c — exact byte figures for the conv family (layers/conv.c).
 *
 * Each test builds a small model, runs vc_estimate with SGD (no optimizer
 * state or step temporaries), fp32 unless said, and workspace 0, and checks
 * values derived by hand from docs/autograd.md: convolution saves its input
 * and weight (a non-"zeros" padding_mode or padding="same" with an even
 * kernel saves a padded copy instead), node lifetimes, the loss
 * (`model(x).float().mean()`) and autocast. Every tensor is rounded up to
 * 512 bytes. The loss (a 0-d fp32 tensor, 512) is a Python variable alive
 * until loss.backward() returns, and so is the root gradient
 * (ones_like(loss), 512) the engine starts backward with: both are live at
 * every backward peak below. mean's backward then allocates dY, a grad of
 * the output's size, and the output itself is freed when forward ends (mean
 * saves nothing). Each derivation was checked line by line against
 * `vramcalc --trace -o sgd --workspace 0`.
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
#define FP32 VC_PREC_FP32

/* Conv2d(2->4, k3, padding 1, reflect, no bias) on [2, 8, 8], batch 4.
 *   x       4*2*8*8*4   = 2048
 *   padded  4*2*10*10*4 = 3200 -> 3584   (reflection_pad output, saved by convolution)
 *   y       4*4*8*8*4   = 4096
 *   weight  4*2*3*3*4   = 288  -> 512
 * train: the input needs no grad, so reflection_pad keeps nothing; the
 *   convolution keeps the padded copy: activations = x + padded = 5632.
 *   forward ends at weight + x + padded + y + loss = 10752, then y goes (6656).
 *   peak in convolution_backward: weight 512 + x 2048 + padded 3584 + loss 512
 *   + root grad 512 + dY 4096 + grad_weight 512 = 11776.
 * infer: the padded copy dies after the convolution: peak = 512+2048+3584+4096 = 10240. */
static void test_conv2d_reflect(void **state)
{
    (void)state;
    const char *j = "{\"input\": [2, 8, 8], \"layers\": [{\"type\": \"Conv2d\", \"in_channels\": 2, \"out_channels\": 4,"
                    " \"kernel_size\": 3, \"padding\": 1, \"padding_mode\": \"reflect\", \"bias\": false}]}";
    vc_result r = run(j, 4, TRAIN, FP32);
    assert_int_equal(r.memory.activations, 5632);
    assert_int_equal(r.memory.peak_allocated, 11776);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    vc_result_free(&r);
    r = run(j, 4, INFER, FP32);
    assert_int_equal(r.memory.peak_allocated, 10240);
    vc_result_free(&r);
}

/* Conv1d(2->2, k1) then Conv1d(2->2, k3, padding 1, reflect), no bias, [2, 16], batch 4.
 *   x 4*2*16*4 = 512; c (first conv's output) 512; padded 4*2*18*4 = 576 -> 1024; weights 512 each.
 * c requires grad, so reflection_pad saves it (reflection_pad1d_backward(grad, self, padding)):
 *   activations = x (saved by conv 1) + c (saved by reflection_pad) + padded (saved by conv 2)
 *               = 512 + 512 + 1024 = 2048. */
static void test_conv1d_reflect_saves_pad_input(void **state)
{
    (void)state;
    const char *j = "{\"input\": [2, 16], \"layers\": ["
                    "{\"type\": \"Conv1d\", \"in_channels\": 2, \"out_channels\": 2, \"kernel_size\": 1, \"bias\": false},"
                    "{\"type\": \"Conv1d\", \"in_channels\": 2, \"out_channels\": 2, \"kernel_size\": 3, \"padding\": 1,"
                    " \"padding_mode\": \"reflect\", \"bias\": false}]}";
    vc_result r = run(j, 4, TRAIN, FP32);
    assert_int_equal(r.memory.activations, 2048);
    vc_result_free(&r);
}

/* The same with padding_mode circular: _pad_circular (new_empty + slice copies) saves nothing,
 * so c is freed once padded: activations = x + padded = 512 + 1024 = 1536.
 * infer: weights 1024 + x 512 + c 512 + padded 1024 = 3072 when the padded copy is made;
 * c stays referenced by the caller (nn.Sequential's `input`) until the conv returns, so
 * y (512) joins them: 3584. */
static void test_conv1d_circular(void **state)
{
    (void)state;
    const char *j = "{\"input\": [2, 16], \"layers\": ["
                    "{\"type\": \"Conv1d\", \"in_channels\": 2, \"out_channels\": 2, \"kernel_size\": 1, \"bias\": false},"
                    "{\"type\": \"Conv1d\", \"in_channels\": 2, \"out_channels\": 2, \"kernel_size\": 3, \"padding\": 1,"
                    " \"padding_mode\": \"circular\", \"bias\": false}]}";
    vc_result r = run(j, 4, TRAIN, FP32);
    assert_int_equal(r.memory.activations, 1536);
    vc_result_free(&r);
    r = run(j, 4, INFER, FP32);
    assert_int_equal(r.memory.peak_allocated, 3584);
    vc_result_free(&r);
}

/* Conv2d(2->2, k4, padding "same", no bias) on [2, 7, 7], batch 4: total padding 3 per dim is
 * odd, so _convolution_mode pads one zero on the right of H and W (constant_pad_nd) and passes
 * padding 1 to the convolution.
 *   x 4*2*7*7*4 = 1568 -> 2048; padded [2, 8, 8]: 4*2*8*8*4 = 2048; y [2, 7, 7]: 2048;
 *   weight 2*2*4*4*4 = 256 -> 512.
 * train: activations = x + padded = 4096; peak in convolution_backward: weight 512
 *   + x 2048 + padded 2048 + loss 512 + root grad 512 + dY 2048 + grad_weight 512 = 8192.
 * infer: peak = weight + x + padded + y = 512 + 2048*3 = 6656.
 * With k3 (total padding 2, symmetric) no copy is made: activations = x = 2048. */
static void test_conv2d_same_even_kernel(void **state)
{
    (void)state;
    const char *j = "{\"input\": [2, 7, 7], \"layers\": [{\"type\": \"Conv2d\", \"in_channels\": 2, \"out_channels\": 2,"
                    " \"kernel_size\": 4, \"padding\": \"same\", \"bias\": false}]}";
    vc_result r = run(j, 4, TRAIN, FP32);
    assert_int_equal(r.memory.activations, 4096);
    assert_int_equal(r.memory.peak_allocated, 8192);
    vc_result_free(&r);
    r = run(j, 4, INFER, FP32);
    assert_int_equal(r.memory.peak_allocated, 6656);
    vc_result_free(&r);
    const char *odd = "{\"input\": [2, 7, 7], \"layers\": [{\"type\": \"Conv2d\", \"in_channels\": 2, \"out_channels\": 2,"
                      " \"kernel_size\": 3, \"padding\": \"same\", \"bias\": false}]}";
    r = run(odd, 4, TRAIN, FP32);
    assert_int_equal(r.memory.activations, 2048);
    vc_result_free(&r);
}

/* ConvTranspose2d(4->2, k2, stride 2, no bias) on [4, 8, 8], batch 2: weight [4, 2, 2, 2].
 *   x 2*4*8*8*4 = 2048; y [2, 16, 16]: 2*2*16*16*4 = 4096; weight 32*4 = 128 -> 512.
 * train: the input is kept: activations = 2048; infer peak = 512 + 2048 + 4096 = 6656. */
static void test_conv_transpose2d(void **state)
{
    (void)state;
    const char *j = "{\"input\": [4, 8, 8], \"layers\": [{\"type\": \"ConvTranspose2d\", \"in_channels\": 4,"
                    " \"out_channels\": 2, \"kernel_size\": 2, \"stride\": 2, \"bias\": false}]}";
    vc_result r = run(j, 2, TRAIN, FP32);
    assert_int_equal(r.memory.activations, 2048);
    vc_result_free(&r);
    r = run(j, 2, INFER, FP32);
    assert_int_equal(r.memory.peak_allocated, 6656);
    vc_result_free(&r);
}

/* amp-bf16: Conv2d(4->4, k1, no bias) on [4, 8, 8], batch 8. convolution is on autocast's
 * lower-precision list: the input and the weight are cast to bf16 and those copies are saved.
 *   x fp32 8*4*8*8*4 = 8192; x bf16 4096; weight 64 B -> 512; weight bf16 -> 512;
 *   y bf16 4096; loss: y.float() 8192, then mean 512.
 * activations at the end of forward = x + x bf16 + weight bf16 = 8192 + 4096 + 512 = 12800.
 * forward peaks when y.float() is made: weight 512 + 12800 + y 4096 + 8192 = 25600.
 * the step peaks in _to_copy's backward (y.float()'s): weight 512 + 12800 + loss 512
 *   + root grad 512 + mean's fp32 grad 8192 + its bf16 copy 4096 = 26624. */
static void test_conv2d_amp_bf16(void **state)
{
    (void)state;
    const char *j = "{\"input\": [4, 8, 8], \"layers\": [{\"type\": \"Conv2d\", \"in_channels\": 4, \"out_channels\": 4,"
                    " \"kernel_size\": 1, \"bias\": false}]}";
    vc_result r = run(j, 8, TRAIN, VC_PREC_AMP_BF16);
    assert_int_equal(r.memory.activations, 12800);
    assert_int_equal(r.memory.peak_allocated, 26624);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    vc_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv2d_reflect),
        cmocka_unit_test(test_conv1d_reflect_saves_pad_input),
        cmocka_unit_test(test_conv1d_circular),
        cmocka_unit_test(test_conv2d_same_even_kernel),
        cmocka_unit_test(test_conv_transpose2d),
        cmocka_unit_test(test_conv2d_amp_bf16),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
