/*
 * test_ckpt_unpack.c — when a checkpointed region is recomputed in backward (issue 26).
 *
 * PyTorch 2.x's non-reentrant checkpoint recomputes a region inside the saved-tensor unpack hook
 * (torch/utils/checkpoint.py @0008d771, _checkpoint_hook.unpack_hook: `if not
 * frame.is_recomputed[gid]: ... frame.recompute_fn(*args)`), so the first node of the region
 * that UNPACKS a saved tensor triggers it; a node that saved nothing (MeanBackward1 in 2.x keeps
 * only sizes; an add, a view) runs its backward before the recompute, and its gradient is alive
 * during it.
 *
 * The model: x [64, 8] fp32 (2,048 B), then one checkpointed Sequential
 *   Linear(8 -> 4096)  y1 [64, 4096]: H = 1,048,576 B     saves its input x (not y1)
 *   Dropout(0.1)       y2 [64, 4096]: H, mask bool H/4     saves the mask (262,144 B)
 *   Mean(dim 1, keepdim)             [64, 1]: 256 -> 512 B  saves nothing (sizes only)
 * and the loss (mean of it, 512 B) with its root gradient (512 B); SGD, batch 64, workspace 0.
 * Weights: 8*4096*4 + 4096*4 = 147,456 B.
 *
 * Backward, as PyTorch runs it:
 *   MeanBackward1: its gradient, expanded to [64, 4096]: H (the incoming 512 B freed);
 *   then NativeDropoutBackward unpacks the mask: the recompute runs Linear (y1, H) and the dropout
 *   (y2, H, and the mask H/4) and stops there (the last saving op), so at the dropout's forward
 *   weights + x + loss + root gradient + Mean's gradient + y1 + y2 + mask
 *   = 147,456 + 2,048 + 512 + 512 + 1,048,576 * 3 + 262,144 = 3,558,400 B, the step's peak.
 * The accuracy harness measured this model at exactly that (bench/accuracy/measure.py
 * MODEL.json -b 64 -o sgd, PyTorch 1.13 CPU with the 2.x checkpoint port: peak_allocated 3558400 at
 * s2.bwd native_dropout). Recomputing at the region's first backward node instead (Mean's, before
 * its gradient exists) gave 147,456 + 2,048 + 512 + 512 + 512 (Mean's incoming gradient)
 * + 1,048,576 * 2 + 262,144 = 2,510,336.
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
#define WTS INT64_C(147456)
#define XB INT64_C(2048)
#define LOSS INT64_C(1024) /* loss + root gradient, 512 B each */
#define MASK INT64_C(262144)

static vc_result run(const char *json)
{
    vc_model *m;
    vc_error err;
    assert_int_equal(vc_model_load_string(json, strlen(json), "ckpt", &m, &err), VC_OK);
    vc_options o;
    vc_options_init(&o);
    o.batch = 64;
    o.workspace = 0;
    o.optim = VC_OPTIM_SGD;
    o.mode = VC_MODE_TRAIN;
    vc_result r;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_OK);
    vc_model_free(m);
    return r;
}

#define LIN "{\"type\":\"Linear\",\"in_features\":8,\"out_features\":4096}"
#define DROP "{\"type\":\"Dropout\",\"p\":0.1}"
#define MEAN "{\"type\":\"Mean\",\"dim\":1,\"keepdim\":true}"

/* Mean inside the region: its backward (it unpacks nothing) runs first, the recompute at the
 * dropout's node, with Mean's [64, 4096] gradient alive. */
static void test_recompute_at_first_unpack(void **state)
{
    (void)state;
    vc_result r = run("{\"input\":[8],\"layers\":[{\"type\":\"Sequential\",\"checkpoint\":true,\"layers\":["
                      LIN "," DROP "," MEAN "]}]}");
    assert_int_equal(r.memory.peak_allocated, WTS + XB + LOSS + 3 * H + MASK); /* 3,558,400 (measured) */
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    assert_string_equal(r.peak.layer, "layers[0].layers[1]");
    assert_string_equal(r.peak.kind, "Dropout");
    vc_result_free(&r);
}

/* The same ops with Mean outside the region: the node order and so the peak are the same, a node
 * that saves nothing being, for the recompute, as if it were not in the region. */
static void test_saves_nothing_as_if_outside(void **state)
{
    (void)state;
    vc_result in = run("{\"input\":[8],\"layers\":[{\"type\":\"Sequential\",\"checkpoint\":true,\"layers\":["
                       LIN "," DROP "," MEAN "]}]}");
    vc_result out = run("{\"input\":[8],\"layers\":[{\"type\":\"Sequential\",\"checkpoint\":true,\"layers\":["
                        LIN "," DROP "]}," MEAN "]}");
    assert_int_equal(out.memory.peak_allocated, WTS + XB + LOSS + 3 * H + MASK);
    assert_int_equal(in.memory.peak_allocated, out.memory.peak_allocated);
    vc_result_free(&in);
    vc_result_free(&out);
}

/* Without Mean the region's first backward node (the dropout's) unpacks the mask: the recompute
 * runs there, with only the loss's gradient of the output (y2's size, H) alive: the same
 * 3,558,400 by the same sum (that gradient takes the place of Mean's). */
static void test_first_node_unpacks(void **state)
{
    (void)state;
    vc_result r = run("{\"input\":[8],\"layers\":[{\"type\":\"Sequential\",\"checkpoint\":true,\"layers\":["
                      LIN "," DROP "]}]}");
    assert_int_equal(r.memory.peak_allocated, WTS + XB + LOSS + 3 * H + MASK);
    vc_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recompute_at_first_unpack),
        cmocka_unit_test(test_saves_nothing_as_if_outside),
        cmocka_unit_test(test_first_node_unpacks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
