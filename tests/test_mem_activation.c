/*
 * test_mem_activation.c — exact byte figures for in-place activations
 * (layers/activation.c) whose backward reads the original input, and for
 * Square (torch.square) and its backward's temporaries.
 *
 * hardswish_, silu_, mish_, hardsigmoid_, hardtanh_ (ReLU6(inplace=True))
 * have no in-place formula of their own in derivatives.yaml: the generated
 * VariableType kernel saves `original_self = self.clone()` for the
 * out-of-place formula, inside `if (grad_fn)`, i.e. only when grad mode is on
 * and the input requires grad. So the copy exists in training after a
 * trainable layer, and not in inference (no_grad) nor after a frozen prefix.
 * SGD, workspace 0 (mem_test.h); every tensor rounded up to 512 bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>
#include <string.h>

#include "mem_test.h"

/* Linear(256 -> 65536) + Hardswish(inplace=True), batch 32, inference (the
 * case of issue 17): W 256*65536*4 = 67108864, b 262144, input 32*256*4 =
 * 32768, output 32*65536*4 = 8388608 written in place: 75792384. The
 * clone would add another 8388608 (what the estimate gave before). */
static void test_hardswish_inplace_infer(void **state)
{
    (void)state;
    vc_result r = mem_run("{\"input\": [256], \"layers\": [{\"type\": \"Linear\", \"in_features\": 256, \"out_features\": 65536},"
                          " {\"type\": \"Hardswish\", \"inplace\": true}]}",
                          32, VC_MODE_INFER, VC_PREC_FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.peak_allocated, 75792384);
    vc_result_free(&r);
}

/* Linear(64 -> 1024) frozen, an in-place activation, Linear(1024 -> 8),
 * batch 32, trained. Weights 262144 + 4096 + 32768 + 512 = 299520, input
 * 8192.
 * Frozen prefix: the activation's input does not require grad, no clone:
 *   forward: h 131072 (in place), output 1024 (freed once the loss is made),
 *   loss 512; backward: root grad 512, mean's grad 1024, grad W2 32768,
 *   grad b2 512 (no grad for h): 299520 + 8192 + 131072 + 512 + 512 + 1024
 *   + 32768 + 512 = 474112, the peak. Activations at the end of forward:
 *   input 8192 + h 131072.
 * Trainable: the clone 131072 is saved for backward; activations at the
 *   end of forward = input 8192 + linear2's input h 131072 + the clone
 *   131072 = 270336. */
static void test_inplace_frozen_prefix_train(void **state)
{
    (void)state;
    static const char *const kinds[] = {"Hardswish", "SiLU", "ReLU6", "Mish", "Hardsigmoid"};
    for (int i = 0; i < 5; i++) {
        char frozen[512], trained[512];
        snprintf(frozen, sizeof frozen,
                 "{\"input\": [64], \"layers\": [{\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 1024,"
                 " \"frozen\": true}, {\"type\": \"%s\", \"inplace\": true},"
                 " {\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 8}]}",
                 kinds[i]);
        snprintf(trained, sizeof trained,
                 "{\"input\": [64], \"layers\": [{\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 1024},"
                 " {\"type\": \"%s\", \"inplace\": true},"
                 " {\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 8}]}",
                 kinds[i]);
        vc_result r = mem_run(frozen, 32, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO);
        assert_int_equal(r.memory.peak_allocated, 474112);
        assert_int_equal(r.memory.activations, 8192 + 131072);
        vc_result_free(&r);
        r = mem_run(trained, 32, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO);
        assert_int_equal(r.memory.activations, 270336);
        vc_result_free(&r);
    }
}

/* Linear(64 -> 1024), Square (torch.square = pow(x, 2): PowBackward0 keeps its input; pow_backward,
 * FunctionsManual.cpp @ 002ca671, makes self.pow(1.0) and 2.0 * it beside the gradient), Linear(1024 -> 8), batch 32,
 * SGD, trained. Weights 262144 + 4096 + 32768 + 512 = 299520, input 8192. Forward: h 131072 (kept by pow), y = h^2
 * 131072 (kept by linear2), output 1024, loss 512. Backward: root grad 512, grad W2 32768, grad b2 512, grad y 131072
 * (y freed after linear2's node); pow's node: grad h 131072 and its two temporaries 2 x 131072, all live at once:
 * 299520 + 8192 + 131072 + 131072 + 32768 + 512 + 512 + 512 + 3 x 131072 = 997376, the peak. The end of forward keeps
 * input, h and y: 270336. */
static void test_square_train(void **state)
{
    (void)state;
    vc_result r = mem_run("{\"input\": [64], \"layers\": [{\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 1024},"
                          " {\"type\": \"Square\"}, {\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 8}]}",
                          32, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.peak_allocated, 997376);
    assert_int_equal(r.memory.activations, 8192 + 131072 + 131072);
    vc_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hardswish_inplace_infer),
        cmocka_unit_test(test_inplace_frozen_prefix_train),
        cmocka_unit_test(test_square_train),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
