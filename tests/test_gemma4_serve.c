/*
 * test_gemma4_serve.c — Gemma 4 under --serve (issue 31; src/engine/serve.c gemma4_pages,
 * gemma4_qkv_extra): vLLM's KV cache pages, blocks and concurrency for the 31B, 26B-A4B and E4B
 * checkpoints' configs (tests/data/hf/gemma-4-*.json), and the weights vLLM's qkv_proj holds beyond
 * the checkpoint's tensors. Every expected value is derived by hand below from
 * vllm-project/vllm @ 001cabc1be16a59a70d720ed61a13b678c060a18:
 *  - vllm/model_executor/models/gemma4.py Gemma4DecoderLayer / Gemma4Attention: head_dim global_head_dim
 *    (512) on full layers, head_dim (256) on sliding ones; num_global_key_value_heads on full layers under
 *    attention_k_eq_v; the last num_kv_shared_layers layers get kv_sharing_target_layer_name (no
 *    KVCacheSpec, vllm/v1/worker/gpu_model_runner.py get_kv_cache_spec); QKVParallelLinear on every
 *    layer (the V slot of a k_eq_v layer, K and V and k_norm of a kv-shared layer more than transformers);
 *  - vllm/v1/kv_cache_interface.py AttentionSpec.real_page_size_bytes = 2 x block_size x kv heads x
 *    head_size x dtype size; SlidingWindowSpec.max_memory_usage_bytes: (cdiv(min(window - 1 +
 *    max_num_batched_tokens, max_model_len), block_size) + 1) pages; FullAttentionSpec: cdiv(max_model_len,
 *    block_size) pages;
 *  - vllm/v1/core/kv_cache_utils.py unify_kv_cache_spec_page_size (smaller pages' block_size x ratio),
 *    _get_kv_cache_groups_uniform_page_size (group_size: the fewest layers of a spec, unless the most is
 *    under 1.5 times it), get_num_blocks (available // page // group_size), _report_kv_cache_config
 *    (tokens: num_blocks // groups x the smallest block_size), get_max_concurrency_for_kv_cache_config.
 * The options: bf16 (the configs' dtype), h200 (max_num_batched_tokens 8192, EngineArgs.get_batch_defaults),
 * block_size 16, requests of 4096 + 4096 tokens.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "vramcalc/vramcalc.h"
#include "cli_spelt.h"

#define HF VC_TEST_DATA "/hf/"

typedef struct {
    const char *file;
    int64_t page_bytes;  /* the largest layer page x group_size */
    int64_t block_size;  /* the smallest block_size, as _report_kv_cache_config logs it */
    int64_t groups;      /* KV cache groups */
    int64_t need;        /* blocks one request needs, all groups */
    int64_t qkv_extra;   /* bytes of vLLM's qkv_proj / k_norm slots the checkpoint has not, and of
                          * Gemma4ForConditionalGeneration's per-layer-embeddings buffer (gemma4_mm.py @ 01bae219) */
    int64_t rope;        /* bytes of vLLM's two rotary caches: the sliding layers' [max_position_embeddings, 256]
                          * and the full layers' Gemma4RotaryEmbedding [max_position_embeddings, 512]
                          * (gemma4_rope.py @ 41c5903d: rotary_dim = head_size) */
} g4_case;

static void check(const g4_case *c)
{
    vc_error err;
    vc_model *m = NULL;
    if (vc_model_load_file_hf(c->file, NULL, &m, &err) != VC_OK) fail_msg("%s", CLI_MSG(&err));
    vc_options o;
    vc_options_init(&o);
    o.precision = VC_PREC_BF16;
    o.prompt = 4096;
    o.new_tokens = 4096;
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_gpu_spec gpu;
    assert_int_equal(vc_gpu_parse("h200", &gpu, &err), VC_OK);
    vc_serve_result sr;
    if (vc_serve(m, &o, &so, &gpu, &sr, &err) != VC_OK) fail_msg("%s: %s", c->file, CLI_MSG(&err));
    assert_int_equal(sr.page_bytes, c->page_bytes);
    assert_int_equal(sr.block_size, c->block_size);
    assert_true(sr.kv_cache > 0);
    assert_int_equal(sr.blocks, sr.kv_cache / c->page_bytes);
    assert_int_equal(sr.tokens, sr.blocks / c->groups * c->block_size);
    assert_int_equal(sr.concurrency, sr.blocks / c->need);
    /* the weights: the model's (vc_estimate's inference weights: parameters and buffers, bf16), the rotary
     * cache and the slots vLLM's fused qkv_proj adds */
    vc_options io;
    vc_options_init(&io);
    io.mode = VC_MODE_INFER;
    io.precision = VC_PREC_BF16;
    io.batch = 1;
    vc_result r;
    if (vc_estimate(m, &io, &r, &err) != VC_OK) fail_msg("%s", CLI_MSG(&err));
    assert_int_equal(sr.weights - r.memory.weights, c->qkv_extra + c->rope);
    vc_result_free(&r);
    vc_model_free(m);
}

/* gemma-4-31b-it: 60 layers, 50 sliding (16 kv heads x 256), 10 full (4 global kv heads x 512, k_eq_v).
 * Pages at 16 tokens: sliding 2 x 16 x 16 x 256 x 2 = 262144, full 2 x 16 x 4 x 512 x 2 = 131072, so the
 * full layers' block_size becomes 32; group_size 10 (50 >= 1.5 x 10): 5 sliding groups + 1 full = 6;
 * page_bytes 262144 x 10 = 2621440. A request: sliding min(1023 + 8192, 8192) = 8192 tokens,
 * cdiv(8192, 16) + 1 = 513 blocks per group x 5, full cdiv(8192, 32) = 256: 2821.
 * qkv_extra: the V slot of the 10 full layers, 10 x 4 x 512 x 5376 = 110100480 elements, x 2 bytes.
 * rope: max_position_embeddings 262144 x (256 + 512) x 2 bytes. */
static void test_31b(void **state)
{
    (void)state;
    const g4_case c = {HF "gemma-4-31b-it.json", 2621440, 16, 6, 2821, INT64_C(110100480) * 2, INT64_C(262144) * (256 + 512) * 2};
    check(&c);
}

/* gemma-4-26b-a4b-it: 30 layers, 25 sliding (8 kv heads x 256), 5 full (2 global kv heads x 512, k_eq_v).
 * Pages: sliding 2 x 16 x 8 x 256 x 2 = 131072, full 2 x 16 x 2 x 512 x 2 = 65536 (block_size 32);
 * group_size 5: 5 + 1 groups; page_bytes 131072 x 5 = 655360; a request 5 x 513 + 256 = 2821 blocks.
 * qkv_extra: 5 x 2 x 512 x 2816 = 14417920 elements x 2 bytes. */
static void test_26b_a4b(void **state)
{
    (void)state;
    const g4_case c = {HF "gemma-4-26b-a4b-it.json", 655360, 16, 6, 2821, INT64_C(14417920) * 2, INT64_C(262144) * (256 + 512) * 2};
    check(&c);
}

/* gemma-4-e4b-it: 42 layers, the last 18 kv-shared (no page); the first 24: full at 5, 11, 17, 23 (4 x 2 kv
 * heads x 512), 20 sliding (2 kv heads x 256). Pages: full 2 x 16 x 2 x 512 x 2 = 65536, sliding 32768, so the
 * sliding layers' block_size becomes 32 and the smallest stays 16; group_size 4 (20 >= 1.5 x 4): 5 sliding
 * groups + 1 full; page_bytes 65536 x 4 = 262144. A request: sliding min(511 + 8192, 8192) = 8192 tokens,
 * cdiv(8192, 32) + 1 = 257 x 5, full cdiv(8192, 16) = 512: 1797 blocks.
 * qkv_extra: the 18 shared layers (full at 29, 35, 41) have K, V and k_norm in vLLM only:
 * 15 x (2 x 2 x 256 x 2560 + 256) + 3 x (2 x 2 x 512 x 2560 + 512) = 55055616 elements x 2 bytes.
 * The per-layer-embeddings buffer: max_num_batched_tokens 8192 x 42 layers x 256 (hidden_size_per_layer_input)
 * elements x 2 bytes. rope: max_position_embeddings 131072 x (256 + 512) x 2 bytes. */
static void test_e4b(void **state)
{
    (void)state;
    const g4_case c = {HF "gemma-4-e4b-it.json", 262144, 16, 6, 1797, (INT64_C(55055616) + INT64_C(8192) * 42 * 256) * 2, INT64_C(131072) * (256 + 512) * 2};
    check(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_31b),
        cmocka_unit_test(test_26b_a4b),
        cmocka_unit_test(test_e4b),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
