/*
 * test_mem_tensor.c — exact byte figures for TopK and Gather (layers/tensor.c):
 * torch.topk's values and int64 indices, TopkBackward0 keeping the indices
 * (derivatives.yaml topk: value_selecting_reduction_backward_symint, whose
 * zeros(sizes).scatter_ is one input-sized gradient), and torch.gather keeping
 * its input and index (derivatives.yaml gather: gather_backward(grad, self,
 * dim, index), new_zeros(self.sizes()).scatter_add_).
 *
 * Input [12, 32], batch 2, fp32, SGD, workspace 0 (mem_test.h); each figure
 * derived by hand and checked line by line against `vramcalc --trace -o sgd
 * --workspace 0`; every tensor rounded up to 512 B: x = h = 2*12*32*4 = 3072;
 * 4 of 12 rows: values 2*4*32*4 = 1024, their int64 indices 2048. The same
 * kinds measured against PyTorch 1.13 (tests/roundtrip/measure_module.py on
 * tests/roundtrip/user_models.py's modules, Adam, batch 64): TopKValues
 * 332,288 B measured and estimated (train), 305,152 (infer); TopKGather
 * (indices into gather) 158,208 (train): all exact.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "mem_test.h"

/* Linear(32->32, no bias) -> h; TopK(k 4, dim 1) -> values [4, 32]; Flatten;
 * Linear(128->10, no bias). Weights 4096 + 5120 = 9216.
 * train: activations = x 3072 (the first mm's input) + values 1024 (the
 *   second mm's) + indices 2048 (TopkBackward0) = 6144; h is freed at the
 *   topk (nothing keeps it). Peak at the first Linear's weight gradient:
 *   weights 9216 + x 3072 + the loss's two 512 temporaries + the head's
 *   weight gradient 5120 + topk's input-sized gradient 3072 + 4096 = 25600.
 * infer: at the topk, x, h, the values and the indices (freed after, no
 *   backward): 9216 + 3072 + 3072 + 1024 + 2048 = 18432. */
static void test_topk_values(void **state)
{
    (void)state;
    const char *json = "{\"input\": [12, 32], \"layers\": [{\"type\": \"Linear\", \"in_features\": 32, \"out_features\": 32, "
                       "\"bias\": false}, {\"type\": \"TopK\", \"k\": 4, \"dim\": 1}, {\"type\": \"Flatten\"}, "
                       "{\"type\": \"Linear\", \"in_features\": 128, \"out_features\": 10, \"bias\": false}]}";
    vc_result r = mem_run(json, 2, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.weights, 9216);
    assert_int_equal(r.memory.activations, 6144);
    assert_int_equal(r.memory.peak_allocated, 25600);
    vc_result_free(&r);
    r = mem_run(json, 2, VC_MODE_INFER, VC_PREC_FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.peak_allocated, 18432);
    vc_result_free(&r);
}

/* GatherPool as exported: h = Linear(32->32); a frozen score Linear(32->1)
 * [12] (96 -> 512; weights 9216 + 512 = 9728), TopK indices of 4 [4] (64 ->
 * 512; its unused values 32 -> 512 a transient); Gather(h, dim 1, index
 * viewed as [4, 32]) -> 1024; Flatten; Linear(128->10).
 * train: activations = x 3072 + h 3072 (GatherBackward0 keeps self) + the
 *   index 512 + the gather's output 1024 (the head's input) = 7680; no
 *   gradient for the score Linear (topk's indices are not differentiable):
 *   gradients 4096 + 5120 = 9216. Peak at the gather's backward: 9728 + x
 *   3072 + h 3072 + the index 512 + the loss's two 512 temporaries + the
 *   gradient of the gather's output 1024 + the head's weight gradient 5120 +
 *   the gather's input-sized gradient 3072 = 26624; then h and the index
 *   are freed (the frozen score Linear keeps nothing: in PyTorch its mm's
 *   saved h goes with the score, a local freed when forward returns).
 * infer: x, h, the index and the gather output alive at the gather: 9728 +
 *   3072 + 3072 + 512 + 1024 = 17408 (the score output is freed at the topk,
 *   its last use; GatherPool's forward keeps it in a local until it returns,
 *   one of the Python locals the format does not model). */
static void test_topk_indices_gather(void **state)
{
    (void)state;
    const char *json = "{\"input\": [12, 32], \"layers\": [{\"type\": \"Linear\", \"in_features\": 32, \"out_features\": 32, "
                       "\"bias\": false, \"name\": \"h\"}, {\"type\": \"Linear\", \"in_features\": 32, \"out_features\": 1, "
                       "\"bias\": false, \"frozen\": true}, {\"type\": \"Reshape\", \"shape\": [12], \"frozen\": true}, "
                       "{\"type\": \"TopK\", \"k\": 4, \"output\": \"indices\", \"name\": \"i\", \"frozen\": true}, "
                       "{\"type\": \"Gather\", \"dim\": 1, \"shape\": [4, 32], \"inputs\": [\"h\", \"i\"]}, {\"type\": \"Flatten\"}, "
                       "{\"type\": \"Linear\", \"in_features\": 128, \"out_features\": 10, \"bias\": false}]}";
    vc_result r = mem_run(json, 2, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.weights, 9728);
    assert_int_equal(r.memory.gradients, 9216);
    assert_int_equal(r.memory.activations, 7680);
    assert_int_equal(r.memory.peak_allocated, 26624);
    vc_result_free(&r);
    r = mem_run(json, 2, VC_MODE_INFER, VC_PREC_FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.peak_allocated, 17408);
    vc_result_free(&r);
}

/* Parameter with bicubic_from (layers/tensor.c: Dinov2Embeddings.interpolate_pos_encoding @ 015e6876): input [5, 64],
 * Linear(64->64, no bias) -> h 2560; Parameter [1 + 3 x 3, 64] (2304 B -> 2560) resized to shape [5, 64] (a class
 * position and 4 patches); Add(h, pos). Weights 16384 + 2560 = 18944.
 * infer: at the add: weights + x 2560 + h 2560 + the cat [5 x 64] 1536 (the interpolate's [4 x 64] 1024 freed after
 *   the cat) + the sum 2560 = 28160.
 * train (sgd): the forward's most is the same 28160; backward: at pos's slices, weights + x 2560 + loss 512 + root
 *   grad 512 + dY 2560 + the expand's sum_to [5, 64] 1536 + upsample_bicubic2d's grad of its [64, 3, 3] input 2560 +
 *   a slice_backward zero tensor of the parameter's size 2560 = 31744; the peak at the mm's weight grad: weights
 *   + x + loss + root + dY + pos's grad 2560 + 16384 = 44032. Checked line by line against `vramcalc --trace`. */
static void test_parameter_bicubic_from(void **state)
{
    (void)state;
    static const char js[] = "{\"input\": [5, 64], \"layers\": [{\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 64, "
                             "\"bias\": false, \"name\": \"x\"}, {\"type\": \"Parameter\", \"shape\": [5, 64], "
                             "\"bicubic_from\": 3, \"name\": \"pos\"}, {\"type\": \"Add\", \"inputs\": [\"x\", \"pos\"]}]}";
    vc_result r = mem_run(js, 2, VC_MODE_INFER, VC_PREC_FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.peak_allocated, 28160);
    vc_result_free(&r);
    r = mem_run(js, 2, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.weights, 18944);
    assert_int_equal(r.memory.peak_allocated, 44032);
    vc_result_free(&r);
}

/* Parameter's modes lookup and repeat (layers/tensor.c: SiglipVisionEmbeddings' position_embedding(position_ids) and
 * SiglipMultiheadAttentionPoolingHead's probe.repeat(batch_size, 1, 1), modeling_siglip.py @ efa7189c); input [4, 64],
 * Linear(64->64, no bias) -> h 2048 per batch of 2. Checked line by line against `vramcalc --trace`.
 * lookup: Parameter [4, 64] (1024 B) and its position_ids buffer (4 int64, 512 B): weights 16384 + 1024 + 512 =
 *   17920; Add(h, pos). infer: at the add, weights + x 2048 + h 2048 + the embedding's [4, 64] once (not per sample)
 *   1024 + the sum 2048 = 25088. train (sgd): the peak at the mm's weight grad: weights + x + loss 512 + root grad
 *   512 + dY 2048 + pos's grad (embedding_dense_backward, after the expand's sum_to 1024 is freed) 1024 + 16384 =
 *   40448.
 * repeat: Parameter [1, 64] (256 B -> 512), Cat(probe, h) on dim 1 -> [2, 5, 64] 2560: weights 16896. infer: weights +
 *   x 2048 + h 2048 + the repeat [2, 1, 64] 512 + the cat 2560 = 24064. train: at the mm's weight grad: weights + x +
 *   loss 512 + root 512 + dY 2560 + probe's grad (the sum over the repeats) 512 + 16384 = 39424. */
static void test_parameter_lookup_repeat(void **state)
{
    (void)state;
    static const char lk[] = "{\"input\": [4, 64], \"layers\": [{\"type\": \"Linear\", \"in_features\": 64, "
                             "\"out_features\": 64, \"bias\": false, \"name\": \"x\"}, {\"type\": \"Parameter\", \"shape\": "
                             "[4, 64], \"mode\": \"lookup\", \"name\": \"pos\"}, {\"type\": \"Add\", \"inputs\": [\"x\", \"pos\"]}]}";
    static const char rp[] = "{\"input\": [4, 64], \"layers\": [{\"type\": \"Linear\", \"in_features\": 64, "
                             "\"out_features\": 64, \"bias\": false, \"name\": \"x\"}, {\"type\": \"Parameter\", \"shape\": "
                             "[1, 64], \"mode\": \"repeat\", \"name\": \"probe\"}, {\"type\": \"Cat\", \"inputs\": "
                             "[\"probe\", \"x\"], \"dim\": 1}]}";
    vc_result r = mem_run(lk, 2, VC_MODE_INFER, VC_PREC_FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.weights, 17920);
    assert_int_equal(r.memory.peak_allocated, 25088);
    vc_result_free(&r);
    r = mem_run(lk, 2, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.peak_allocated, 40448);
    vc_result_free(&r);
    r = mem_run(rp, 2, VC_MODE_INFER, VC_PREC_FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.weights, 16896);
    assert_int_equal(r.memory.peak_allocated, 24064);
    vc_result_free(&r);
    r = mem_run(rp, 2, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.peak_allocated, 39424);
    vc_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topk_values),
        cmocka_unit_test(test_topk_indices_gather),
        cmocka_unit_test(test_parameter_bicubic_from),
        cmocka_unit_test(test_parameter_lookup_repeat),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
