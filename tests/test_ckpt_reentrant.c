/*
 * test_ckpt_reentrant.c — torch.utils.checkpoint's reentrant variant (--grad-ckpt-kind reentrant, issue 26),
 * one small model's peak derived by hand from the source.
 *
 * torch/utils/checkpoint.py @0008d771a4015b0b43165ea470653b52e92b2148, CheckpointFunction:
 *   forward(ctx, run_function, preserve_rng_state, *args): ctx.save_for_backward(*tensor_inputs), then
 *     `with torch.no_grad(): outputs = run_function(*args)` -- no graph, nothing saved in the region;
 *   backward(ctx, *args): `args` (the outputs' gradients) held until it returns; the saved inputs detached
 *     (detach_variable: the same storage), `with torch.enable_grad(): outputs = ctx.run_function(*detached_inputs)`
 *     -- the WHOLE region run again, no early stop, before any of its nodes' backward; then
 *     torch.autograd.backward(outputs_with_grad, args_with_grad) runs the region's nodes (each freeing its saved
 *     tensors after it runs, retain_graph False), `outputs` held until it returns.
 *
 * The model: x [64, 8] fp32 (2,048 B, requires no grad), then
 *   Linear(8 -> 8)       h [64, 8]: 2,048 B, requires grad (its weight trains): the reentrant region needs an
 *                        input that requires grad (else "None of the inputs have requires_grad=True" and no
 *                        gradient for the region's parameters: vramcalc refuses, test_no_input_requires_grad)
 * and one checkpointed Sequential:
 *   Linear(8 -> 4096)    y1 [64, 4096]: H = 1,048,576 B     saves its input h
 *   Dropout(0.1)         y2 [64, 4096]: H, mask bool H/4     saves the mask (262,144 B)
 *   Mean(dim 1, keepdim) y3 [64, 1]: 256 -> 512 B            saves nothing (2.x MeanBackward1: sizes only)
 * and the loss (mean of y3, 512 B) with its root gradient (512 B); SGD, batch 64, workspace 0.
 * Weights: 8*4096*4 + 4096*4 = 147,456 B, and the first Linear's 8*8*4 = 256 -> 512 B and 8*4 = 32 -> 512 B:
 * 148,480 B. Alive through backward until the region's node has run: weights, x (the first Linear saves it),
 * h (ctx.saved_tensors), the loss and the root gradient: BASE = 148,480 + 2,048 + 2,048 + 512 + 512 = 153,600 B.
 *
 * Backward, as CheckpointFunction runs it:
 *   the loss's MeanBackward: y3's gradient g [64, 1], 512 B: CheckpointFunctionBackward's `args`, held to its end;
 *   the recompute (run_function under enable_grad): y1 (H), the dropout's y2 (H) and mask (H/4), y1 freed when the
 *     dropout returns (nothing saved it), Mean's y3 (512 B, `outputs`: held), y2 freed (Mean saved nothing): at the
 *     dropout BASE + g + 2H + H/4 = 2,513,408 B;
 *   the inner backward: MeanBackward1's gradient, expanded to [64, 4096] (H), then NativeDropoutBackward's
 *     gradient (H) with the mask alive: BASE + g + y3 + H/4 + 2H = 2,513,920 B, the step's peak, in the
 *     dropout's backward;
 *   then AddmmBackward (the dropout's gradient H, the weight's 131,072 B, the bias's 16,384 B, h's 2,048 B).
 * The non-reentrant checkpoint (test_ckpt_unpack.c's order: Mean's backward first, the recompute at the dropout's
 * node, the first that unpacks) recomputes with Mean's [64, 4096] gradient alive and g already freed:
 * BASE + H + 2H + H/4 = 3,561,472 B (test_ckpt_unpack.c's 3,558,400 plus the first Linear's 1,024 B of weights
 * and h's 2,048 B).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "vramcalc/vramcalc.h"

#define H INT64_C(1048576)
#define BASE INT64_C(153600) /* weights 148,480 + x 2,048 + h 2,048 + loss 512 + root gradient 512 */
#define G INT64_C(512)       /* y3's gradient, CheckpointFunction.backward's args */
#define Y3 INT64_C(512)      /* the recomputed output, held in `outputs` */
#define MASK INT64_C(262144)

#define LIN0 "{\"type\":\"Linear\",\"in_features\":8,\"out_features\":8}"
#define LIN "{\"type\":\"Linear\",\"in_features\":8,\"out_features\":4096}"
#define DROP "{\"type\":\"Dropout\",\"p\":0.1}"
#define MEAN "{\"type\":\"Mean\",\"dim\":1,\"keepdim\":true}"
#define MODEL(first) "{\"input\":[8],\"layers\":[" first "{\"type\":\"Sequential\",\"checkpoint\":true,\"layers\":[" \
                     LIN "," DROP "," MEAN "]}]}"

static vc_status run(const char *json, int reentrant, vc_result *r, vc_error *err)
{
    vc_model *m;
    assert_int_equal(vc_model_load_string(json, strlen(json), "ckpt", &m, err), VC_OK);
    vc_options o;
    vc_options_init(&o);
    o.batch = 64;
    o.workspace = 0;
    o.optim = VC_OPTIM_SGD;
    o.mode = VC_MODE_TRAIN;
    o.ckpt_reentrant = reentrant;
    vc_status st = vc_estimate(m, &o, r, err);
    vc_model_free(m);
    return st;
}

/* The peak by hand (the header): in the dropout's backward, inside CheckpointFunction's inner backward. */
static void test_reentrant_peak(void **state)
{
    (void)state;
    vc_result r;
    vc_error err;
    assert_int_equal(run(MODEL(LIN0 ","), 1, &r, &err), VC_OK);
    assert_int_equal(r.memory.peak_allocated, BASE + G + Y3 + MASK + 2 * H); /* 2,513,920 */
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    assert_string_equal(r.peak.kind, "Dropout");
    vc_result_free(&r);
}

/* The same model non-reentrant recomputes after Mean's backward, its [64, 4096] gradient alive: higher (the
 * header's last paragraph). */
static void test_non_reentrant_differs(void **state)
{
    (void)state;
    vc_result re, nr;
    vc_error err;
    assert_int_equal(run(MODEL(LIN0 ","), 1, &re, &err), VC_OK);
    assert_int_equal(run(MODEL(LIN0 ","), 0, &nr, &err), VC_OK);
    assert_int_equal(nr.memory.peak_allocated, BASE + 3 * H + MASK); /* 3,561,472 */
    assert_true(nr.memory.peak_allocated > re.memory.peak_allocated);
    vc_result_free(&re);
    vc_result_free(&nr);
}

/* Without the first Linear the region's input, x, requires no grad: CheckpointFunction's output would need
 * none and the region's parameters would get no gradient; refused, naming the option. */
static void test_no_input_requires_grad(void **state)
{
    (void)state;
    vc_result r;
    vc_error err;
    assert_int_equal(run(MODEL(""), 1, &r, &err), VC_ERR_USAGE);
    assert_non_null(strstr(err.path, "grad_ckpt_kind")); /* the option, between the library's option marks */
    assert_non_null(strstr(err.msg, "requires_grad"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reentrant_peak),
        cmocka_unit_test(test_non_reentrant_differs),
        cmocka_unit_test(test_no_input_requires_grad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
