/*
 * test_mem_mvit.c — peaks of MultiscaleAttention, MViTPool and
 * MViTPositionalEncoding (layers/mvit.c), torchvision's video MViT modules
 * (models/video/mvit.py), against what PyTorch measured.
 *
 * Every expected peak_allocated below was measured with the CPU accuracy
 * harness (torch 1.13, compat 2x: bench/accuracy/measure.py MODEL --batch N
 * --optim sgd|none --mode train|infer --json, its "peak_allocated") on the
 * model written in the test, built by tools/vctorch.py from torchvision's own
 * modules; the parameter counts are torchvision's sum(p.numel()) of the same
 * modules (the harness's "params"). vc_estimate runs with SGD and workspace 0
 * (mem_test.h), as the harness compares (SGD has no optimizer state; the
 * harness has no cuBLAS workspace). The models put a Linear in front so that
 * the layer's input needs grad; the attention models use many tokens and
 * narrow channels so that the attention matrix's backward is the peak.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>
#include <string.h>

#include "mem_test.h"

/* Linear(16, 16) then MultiscaleAttention(embed 16, 2 heads) on thw [2, 8, 8]
 * (129 tokens), kernel_q kq, kernel_kv kkv (cubes), `extra` appended to the
 * attention's keys. */
static vc_result run_msa(int kq, int kkv, const char *extra, int64_t batch, vc_mode mode, int64_t *params)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{\"input\": [129, 16], \"layers\": [{\"type\": \"Linear\", \"in_features\": 16, \"out_features\": 16},"
             " {\"type\": \"MultiscaleAttention\", \"embed_dim\": 16, \"num_heads\": 2, \"thw\": [2, 8, 8],"
             " \"kernel_q\": %d, \"kernel_kv\": %d%s}]}",
             kq, kkv, extra);
    vc_result r = mem_run(json, batch, mode, VC_PREC_FP32, VC_ATTN_AUTO);
    *params = r.parameters;
    return r;
}

#define V2 ", \"residual_pool\": true, \"residual_with_cls_embed\": false, \"rel_pos_embed\": true"

/* MViT v2's attention (rel_pos_embed, residual pooling without the class
 * token): the peak is the backward of `attn[:, :, 1:, 1:] += rel_pos`'s
 * setitem copy_ (CopySlices: the incoming gradient, its base-sized copy, the
 * slice clone and zeros_like(slice) together; harness peak at
 * aten::zeros_like). Batch 4 train 2,661,376 B; batch 8 inference 3,726,336 B
 * (the peak at the rel_pos reshape's copy, with _add_rel_pos's locals). */
static void test_attention_v2(void **state)
{
    (void)state;
    int64_t n;
    vc_result r = run_msa(3, 3, V2, 4, VC_MODE_TRAIN, &n);
    assert_int_equal(n, 2320);
    assert_int_equal(r.memory.peak_allocated, 2661376);
    vc_result_free(&r);
    r = run_msa(3, 3, V2, 8, VC_MODE_INFER, &n);
    assert_int_equal(r.memory.peak_allocated, 3726336);
    vc_result_free(&r);
    /* residual_with_cls_embed: x.add_(q) instead of the slice add: the same peak (harness) */
    r = run_msa(3, 3, ", \"residual_pool\": true, \"rel_pos_embed\": true", 4, VC_MODE_TRAIN, &n);
    assert_int_equal(r.memory.peak_allocated, 2661376);
    vc_result_free(&r);
    /* k and v pooled with stride [1, 2, 2] (33 keys): 969,728 B train, 1,195,008 B inference */
    r = run_msa(3, 3, V2 ", \"stride_kv\": [1, 2, 2]", 4, VC_MODE_TRAIN, &n);
    assert_int_equal(r.memory.peak_allocated, 969728);
    vc_result_free(&r);
    r = run_msa(3, 3, V2 ", \"stride_kv\": [1, 2, 2]", 8, VC_MODE_INFER, &n);
    assert_int_equal(r.memory.peak_allocated, 1195008);
    vc_result_free(&r);
    /* q not pooled (kernel_q [1, 1, 1]): q stays a view of qkv; batch 1 train 667,136 B */
    r = run_msa(1, 3, V2, 1, VC_MODE_TRAIN, &n);
    assert_int_equal(n, 2088);
    assert_int_equal(r.memory.peak_allocated, 667136);
    vc_result_free(&r);
}

/* MViT v1's attention (no relative positions, no residual pooling): the peak
 * is softmax's backward (harness: aten::_softmax_backward_data). Batch 4
 * train 2,006,528 B, batch 8 inference 2,473,984 B; without any pool
 * (kernels all ones: q, k and v views of qkv, copied by matmul's reshape),
 * batch 2 train 893,952 B. */
static void test_attention_v1(void **state)
{
    (void)state;
    int64_t n;
    vc_result r = run_msa(3, 3, "", 4, VC_MODE_TRAIN, &n);
    assert_int_equal(n, 2056);
    assert_int_equal(r.memory.peak_allocated, 2006528);
    vc_result_free(&r);
    r = run_msa(3, 3, "", 8, VC_MODE_INFER, &n);
    assert_int_equal(r.memory.peak_allocated, 2473984);
    vc_result_free(&r);
    r = run_msa(1, 1, "", 2, VC_MODE_TRAIN, &n);
    assert_int_equal(n, 1360);
    assert_int_equal(r.memory.peak_allocated, 893952);
    vc_result_free(&r);
}

/* pool_skip: Linear(16, 16), then Pool(MaxPool3d([1, 3, 3], [1, 2, 2], [0, 1, 1]))
 * on thw [2, 4, 4] (33 tokens -> 9), batch 8: 68,608 B train (harness peak at
 * the cat), 64,000 B inference (at max_pool3d_with_indices). */
static void test_pool_skip(void **state)
{
    (void)state;
    const char *json = "{\"input\": [33, 16], \"layers\": [{\"type\": \"Linear\", \"in_features\": 16, "
                       "\"out_features\": 16}, {\"type\": \"MViTPool\", \"thw\": [2, 4, 4], \"kernel_size\": [1, 3, 3], "
                       "\"stride\": [1, 2, 2], \"padding\": [0, 1, 1]}]}";
    vc_result r = mem_run(json, 8, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO);
    assert_int_equal(r.parameters, 272);
    assert_int_equal(r.memory.peak_allocated, 68608);
    vc_result_free(&r);
    r = mem_run(json, 8, VC_MODE_INFER, VC_PREC_FP32, VC_ATTN_AUTO);
    assert_int_equal(r.memory.peak_allocated, 64000);
    vc_result_free(&r);
}

/* PositionalEncoding(32, (8, 8), 2) between Linear(32, 32) and Linear(32, 8),
 * batch 8: v1 (the position table built each forward) 448,000 B train,
 * 443,392 B inference; v2 (rel_pos_embed: the class token only) 437,760 B
 * and 400,896 B. */
static void test_positional_encoding(void **state)
{
    (void)state;
    char json[512];
    for (int v2 = 0; v2 < 2; v2++) {
        snprintf(json, sizeof json,
                 "{\"input\": [128, 32], \"layers\": [{\"type\": \"Linear\", \"in_features\": 32, \"out_features\": 32},"
                 " {\"type\": \"MViTPositionalEncoding\", \"embed_size\": 32, \"temporal_size\": 2, \"spatial_size\": [8, 8],"
                 " \"rel_pos_embed\": %s}, {\"type\": \"Linear\", \"in_features\": 32, \"out_features\": 8}]}",
                 v2 ? "true" : "false");
        vc_result r = mem_run(json, 8, VC_MODE_TRAIN, VC_PREC_FP32, VC_ATTN_AUTO);
        assert_int_equal(r.parameters, v2 ? 1352 : 3496);
        assert_int_equal(r.memory.peak_allocated, v2 ? 437760 : 448000);
        vc_result_free(&r);
        r = mem_run(json, 8, VC_MODE_INFER, VC_PREC_FP32, VC_ATTN_AUTO);
        assert_int_equal(r.memory.peak_allocated, v2 ? 400896 : 443392);
        vc_result_free(&r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attention_v2),
        cmocka_unit_test(test_attention_v1),
        cmocka_unit_test(test_pool_skip),
        cmocka_unit_test(test_positional_encoding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
