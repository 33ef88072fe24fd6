/*
 * test_mem_dropout.c — exact byte figures for Dropout, Dropout2d and
 * StochasticDepth (layers/dropout.c).
 *
 * Each model is Conv2d(8->8, kernel 1, no bias) on [8, 8, 8] followed by
 * the layer under test, batch 2, so that the dropout input needs grad.
 * vc_estimate runs with SGD (no optimizer state or step temporaries), fp32,
 * workspace 0. Values are derived by hand from docs/autograd.md (the conv
 * keeps its input, the model input, and its weight; dropout; the loss
 * `output.float().mean()`: a 0-d fp32 tensor, 512 B, that stays alive until
 * loss.backward() returns, as does the 512-byte root gradient backward
 * starts from; mean's backward then allocates dY, a grad of the output's
 * size, and the output itself goes when forward ends). Each derivation was
 * checked line by line against `vramcalc --trace -o sgd --workspace 0`.
 * Every tensor is rounded up to 512 bytes:
 *   conv weight 8*8*4 = 256 -> 512; x (input) = c (conv output) = 2*8*8*8*4 = 4096.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>
#include <string.h>

#include "mem_test.h"

static vc_result run_layer(const char *layer, int64_t batch, vc_mode mode)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{\"input\": [8, 8, 8], \"layers\": [{\"type\": \"Conv2d\", \"in_channels\": 8, \"out_channels\": 8,"
             " \"kernel_size\": 1, \"bias\": false}, %s]}",
             layer);
    return mem_run(json, batch, mode, VC_PREC_FP32, VC_ATTN_AUTO);
}

#define TRAIN VC_MODE_TRAIN
#define INFER VC_MODE_INFER

/* Dropout(0.1): native_dropout allocates y (4096) and a bool mask
 * (2*512 = 1024), keeps only the mask; c dies after it.
 * train: activations = x + mask = 5120.
 *   peak in native_dropout's backward: weight 512 + x 4096 + mask 1024
 *   + loss 512 + root grad 512 + dY 4096 + grad_input 4096 = 14848.
 * infer: identity: peak = 512 + x + c = 8704. */
static void test_dropout_native(void **state)
{
    (void)state;
    vc_result r = run_layer("{\"type\": \"Dropout\", \"p\": 0.1}", 2, TRAIN);
    assert_int_equal(r.memory.activations, 5120);
    assert_int_equal(r.memory.peak_allocated, 14848);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    vc_result_free(&r);
    r = run_layer("{\"type\": \"Dropout\", \"p\": 0.1}", 2, INFER);
    assert_int_equal(r.memory.peak_allocated, 8704);
    vc_result_free(&r);
}

/* Dropout(0.1, inplace=True): at::dropout_ takes no fused kernel: noise =
 * empty_like(c) in fp32 (4096), c.mul_(noise) keeps the noise.
 * train: activations = x + noise = 8192 (c, which is also the output,
 *   dies at the loss).
 *   peak in mul_'s backward: weight 512 + x 4096 + noise 4096 + loss 512
 *   + root grad 512 + dY 4096 + grad 4096 = 17920. */
static void test_dropout_inplace_keeps_float_noise(void **state)
{
    (void)state;
    vc_result r = run_layer("{\"type\": \"Dropout\", \"p\": 0.1, \"inplace\": true}", 2, TRAIN);
    assert_int_equal(r.memory.activations, 8192);
    assert_int_equal(r.memory.peak_allocated, 17920);
    vc_result_free(&r);
}

/* Dropout2d(0.1): noise [N, C, 1, 1] = 2*8 floats (64 -> 512), y = c * noise.
 * train: activations = x + noise = 4608; peak in mul's backward:
 *   512 + x 4096 + noise 512 + loss 512 + root grad 512 + dY 4096 + grad 4096 = 14336. */
static void test_dropout2d_feature_noise(void **state)
{
    (void)state;
    vc_result r = run_layer("{\"type\": \"Dropout2d\", \"p\": 0.1}", 2, TRAIN);
    assert_int_equal(r.memory.activations, 4608);
    assert_int_equal(r.memory.peak_allocated, 14336);
    vc_result_free(&r);
}

/* StochasticDepth(0.2, "row") at batch 256: noise [256, 1, 1, 1] = 1024 B;
 * "batch": noise [1, 1, 1, 1] = 512. x = c = 256*512*4 = 524288.
 * train: activations = x + noise: row 525312, batch 524800. */
static void test_stochastic_depth_modes(void **state)
{
    (void)state;
    vc_result r = run_layer("{\"type\": \"StochasticDepth\", \"p\": 0.2, \"mode\": \"row\"}", 256, TRAIN);
    assert_int_equal(r.memory.activations, 525312);
    vc_result_free(&r);
    r = run_layer("{\"type\": \"StochasticDepth\", \"p\": 0.2, \"mode\": \"batch\"}", 256, TRAIN);
    assert_int_equal(r.memory.activations, 524800);
    vc_result_free(&r);
}

/* StochasticDepth(0.2, "row", scale_input): DINOv2's drop_path (layers/dropout.c), batch 2.
 * activations: the same saved tensors as "row" (x and the noise; the quotient input.div(keep_prob) is not
 * saved): 256 x 512: 525312. Peak at batch 2, in forward at the product: weight 512 + x 4096 + c 4096 (the
 * argument of drop_path, alive until it returns) + random_tensor 512 (keep_prob + rand: the rand's 512 freed
 * after the add) + the quotient 4096 + the product 4096 = 17408 (backward's most is 14336: the root grad,
 * dY and the mul's grad * random_tensor beside the weight, x, the noise and the loss). */
static void test_stochastic_depth_scale_input(void **state)
{
    (void)state;
    vc_result r = run_layer("{\"type\": \"StochasticDepth\", \"p\": 0.2, \"mode\": \"row\", \"scale_input\": true}",
                            256, TRAIN);
    assert_int_equal(r.memory.activations, 525312);
    vc_result_free(&r);
    r = run_layer("{\"type\": \"StochasticDepth\", \"p\": 0.2, \"mode\": \"row\", \"scale_input\": true}", 2, TRAIN);
    assert_int_equal(r.memory.peak_allocated, 17408);
    vc_result_free(&r);
    r = run_layer("{\"type\": \"StochasticDepth\", \"p\": 0.2, \"mode\": \"row\"}", 2, TRAIN);
    assert_true(r.memory.peak_allocated < 17408); /* no quotient: x * noise alone */
    vc_result_free(&r);
}

/* p == 0 (and eval) is the identity: no node. Dropout(p=0):
 * train: activations = x = 4096; peak at the conv's backward: 512 + x
 *   + loss 512 + root grad 512 + dY 4096 + grad_weight 512 = 10240 (above
 *   the end of forward, 512 + x + c + loss 512 = 9216). */
static void test_dropout_p_zero_identity(void **state)
{
    (void)state;
    vc_result r = run_layer("{\"type\": \"Dropout\", \"p\": 0.0}", 2, TRAIN);
    assert_int_equal(r.memory.activations, 4096);
    assert_int_equal(r.memory.peak_allocated, 10240);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    vc_result_free(&r);
}

/* Dropout(p=1): input * zeros({}) — the 0-d zeros (512) is kept by mul.
 * train: activations = x + zeros = 4608. */
static void test_dropout_p_one(void **state)
{
    (void)state;
    vc_result r = run_layer("{\"type\": \"Dropout\", \"p\": 1.0}", 2, TRAIN);
    assert_int_equal(r.memory.activations, 4608);
    vc_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dropout_native),
        cmocka_unit_test(test_dropout_inplace_keeps_float_noise),
        cmocka_unit_test(test_dropout2d_feature_noise),
        cmocka_unit_test(test_stochastic_depth_modes),
        cmocka_unit_test(test_stochastic_depth_scale_input),
        cmocka_unit_test(test_dropout_p_zero_identity),
        cmocka_unit_test(test_dropout_p_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
