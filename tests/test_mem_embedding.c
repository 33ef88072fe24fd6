/*
 * test_mem_embedding.c — exact byte figures for Embedding (layers/embedding.c).
 *
 * Each test builds a one-layer model over int64 ids, runs vc_estimate with
 * SGD (no optimizer state or step temporaries), fp32, workspace 0, and
 * checks values derived by hand from docs/autograd.md (embedding keeps
 * only the indices, an alias of the model input; embedding_dense_backward
 * allocates a weight-sized zeros grad for num_indices <= 3072, and the
 * sort/segment temporaries otherwise; the loss `output.float().mean()` is a
 * 0-d fp32 tensor, 512 B, alive until loss.backward() returns, as is the
 * 512-byte root gradient backward starts from, "loss + root 1024" below;
 * mean's backward then allocates a grad of the output's size). Every tensor
 * is rounded up to 512 bytes. Each derivation was checked line by line
 * against `vramcalc --trace -o sgd --workspace 0`.
 *
 * Embedding(1000, 64): weight 1000*64*4 = 256000 bytes (a multiple of 512).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <string.h>

#include "mem_test.h"

static vc_result run(const char *json, int64_t batch, vc_mode mode)
{
    return mem_run(json, batch, mode, VC_PREC_FP32, VC_ATTN_AUTO);
}

#define TRAIN VC_MODE_TRAIN
#define INFER VC_MODE_INFER

static const char *const emb2048 =
    "{\"input\": {\"shape\": [2048], \"dtype\": \"int64\"}, \"layers\": [{\"type\": \"Embedding\","
    " \"num_embeddings\": 1000, \"embedding_dim\": 64}]}";

/* 16 ids per sample, batch 2: num_indices 32 <= 3072 (small path).
 *   ids 2*16*8 = 256 -> 512; y = 32*64*4 = 8192.
 * train: the node keeps the ids (the model input): activations = 512.
 *   peak in embedding's backward: weight 256000 + ids 512 + loss + root 1024
 *   + incoming grad 8192 + grad_weight (zeros, weight-sized) 256000 = 521728.
 * infer: peak = 256000 + 512 + 8192 = 264704. */
static void test_embedding_small_path(void **state)
{
    (void)state;
    const char *j = "{\"input\": {\"shape\": [16], \"dtype\": \"int64\"}, \"layers\": [{\"type\": \"Embedding\","
                    " \"num_embeddings\": 1000, \"embedding_dim\": 64}]}";
    vc_result r = run(j, 2, TRAIN);
    assert_int_equal(r.memory.activations, 512);
    assert_int_equal(r.memory.peak_allocated, 521728);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    assert_int_equal(r.peak.gradients, 256000);
    vc_result_free(&r);
    r = run(j, 2, INFER);
    assert_int_equal(r.memory.peak_allocated, 264704);
    vc_result_free(&r);
}

/* 2048 ids per sample. Batch 1: num_indices 2048 <= 3072:
 *   peak = weight 256000 + ids 16384 + loss + root 1024 + incoming grad 2048*64*4 = 524288
 *        + grad_weight 256000 = 1053696.
 * Batch 2: num_indices n = 4096 > 3072: the sort-based path.
 *   ids 32768, incoming grad 1048576, grad_weight 256000.
 *   int64 [n] = 32768 each; max_segments = min(n, 1000) = 1000 (8000 -> 8192);
 *   max_partial_segment = n/10 + 1000 = 1409 (11272 -> 11776);
 *   grad_weight_per_segment [1409, 64] fp32 = 360704 -> 360960.
 *   sort phase: sorted + orig + range + cub temp (2n int64 = 65536) = 163840;
 *   kernel phase: sorted + orig + segment_offsets (3 x 32768) + 2 scalars
 *     (1024) + partials_per_segment(+_offset) 2 x 8192 + partial_segment_offset
 *     11776 + grad_weight_per_segment 360960 = 488448.
 *   peak = 256000 + 32768 + loss + root 1024 + 1048576 + 256000 + 488448 = 2082816. */
static void test_embedding_sort_path_is_batch_dependent(void **state)
{
    (void)state;
    vc_result r = run(emb2048, 1, TRAIN);
    assert_int_equal(r.memory.peak_allocated, 1053696);
    vc_result_free(&r);
    r = run(emb2048, 2, TRAIN);
    assert_int_equal(r.memory.peak_allocated, 2082816);
    assert_int_equal(r.peak.temporaries, 1024 + 1048576 + 488448); /* loss, root grad, dY, sort path */
    vc_result_free(&r);
}

/* scale_grad_by_freq forces the sort path even for 32 ids:
 *   int64 [32] = 256 -> 512 each; max_segments 32 (256 -> 512);
 *   max_partial_segment 3 + 32 = 35 (280 -> 512); per-segment [35, 64] fp32 8960 -> 9216.
 *   kernel phase: sorted + orig + count + segment_offsets 4 x 512 + 2 scalars
 *     1024 + 2 x 512 + 512 + 9216 = 13824 (the sort phase, 4 x 512, is smaller).
 *   peak = 256000 + ids 512 + loss + root 1024 + incoming grad 8192 + grad_weight 256000
 *        + 13824 = 535552. */
static void test_embedding_scale_grad_by_freq(void **state)
{
    (void)state;
    const char *j = "{\"input\": {\"shape\": [16], \"dtype\": \"int64\"}, \"layers\": [{\"type\": \"Embedding\","
                    " \"num_embeddings\": 1000, \"embedding_dim\": 64, \"scale_grad_by_freq\": true}]}";
    vc_result r = run(j, 2, TRAIN);
    assert_int_equal(r.memory.peak_allocated, 535552);
    vc_result_free(&r);
}

/* max_norm: embedding_renorm_ sorts the ids (values + int64 indices, 2n
 * int64) before the lookup. Embedding(100, 2, max_norm=1) on 1024 ids,
 * batch 2, infer:
 *   weight 800 -> 1024; ids 16384; renorm temporaries 2*2048*8 = 32768;
 *   y = 2048*2*4 = 16384.
 *   peak = 1024 + 16384 + 32768 = 50176 (without max_norm: 1024 + 16384 + 16384 = 33792);
 *   activations (live activation tensors) = ids + y = 32768. */
static void test_embedding_max_norm_renorm(void **state)
{
    (void)state;
    const char *j = "{\"input\": {\"shape\": [1024], \"dtype\": \"int64\"}, \"layers\": [{\"type\": \"Embedding\","
                    " \"num_embeddings\": 100, \"embedding_dim\": 2, \"max_norm\": 1.0}]}";
    vc_result r = run(j, 2, INFER);
    assert_int_equal(r.memory.peak_allocated, 50176);
    assert_int_equal(r.memory.activations, 32768);
    vc_result_free(&r);
}

/* A frozen embedding has no node: nothing is kept, no backward.
 *   train: activations = ids 512 (the model input only); peak at the loss:
 *   weight 256000 + ids 512 + y 8192 + loss 512 = 265216. */
static void test_embedding_frozen(void **state)
{
    (void)state;
    const char *j = "{\"input\": {\"shape\": [16], \"dtype\": \"int64\"}, \"layers\": [{\"type\": \"Embedding\","
                    " \"num_embeddings\": 1000, \"embedding_dim\": 64, \"frozen\": true}]}";
    vc_result r = run(j, 2, TRAIN);
    assert_int_equal(r.memory.activations, 512);
    assert_int_equal(r.memory.peak_allocated, 265216);
    vc_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_embedding_small_path),
        cmocka_unit_test(test_embedding_sort_path_is_batch_dependent),
        cmocka_unit_test(test_embedding_scale_grad_by_freq),
        cmocka_unit_test(test_embedding_max_norm_renorm),
        cmocka_unit_test(test_embedding_frozen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
