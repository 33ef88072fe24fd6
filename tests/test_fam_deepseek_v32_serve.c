/*
 * test_fam_deepseek_v32_serve.c — DeepSeek-V3.2 (deepseek_v32) under vLLM (issue 31; src/engine/serve.c
 * dsa_memory, src/hf/hf_layers.c mla_attention's indexer): --serve --tp 8 --gpu h200, every figure that
 * DeepSeek Sparse Attention's indexer adds derived from vLLM's source, on top of the same config read by the
 * deepseek_v3 row (DeepSeek-V3's modules alone, served the same way: the two configs differ only in the
 * index_* keys, model_type, architectures and scale_fmt).
 *
 * vllm-project/vllm:
 *  - vllm/model_executor/models/deepseek_v2.py @ 002d6073 Indexer.__init__, one per decoder layer, replicated
 *    on every tensor-parallel rank: wq_b ReplicatedLinear(q_lora_rank 1536, 128 x 64 = 8192, quant_config): fp8
 *    8192 x 1536 = 12,582,912 B + weight_scale_inv float32 [8192 / 128, 1536 / 128] = 64 x 12 x 4 = 3,072 B;
 *    wk_weights_proj (quant_config None, disable_tp): (128 + 64) x 7168 x 2 (bf16) = 2,752,512 B; k_norm
 *    LayerNorm(128) (layernorm.py @ 00cba797: float32 weight and bias) = 1,024 B: 15,339,520 B a layer,
 *    x 61 = 935,710,720 B; DeepseekV2Model.__init__'s topk_indices_buffer int32 [max_num_batched_tokens 8192,
 *    index_topk 2048] = 67,108,864 B, allocated with the model: the weights grow by 1,002,819,584 B.
 *  - sparse_attn_indexer.py @ 006475fe, the profiling run: the workspace manager's K-gather buffers,
 *    total_seq_lens = get_max_prefill_buffer_size = max_model_len 163,840 (yarn: 4096 x factor 40) x 40 =
 *    6,553,600 keys of 128 fp8 + 4 scale bytes = 865,075,200 B, + RADIX_TOPK_WORKSPACE_SIZE 1 MiB; and the
 *    dummy VLLM_SPARSE_INDEXER_MAX_LOGITS_MB (512) MiB tensor: the profiling run's peak grows by the weights'
 *    1,002,819,584 B + 866,123,776 B + 536,870,912 B.
 *  - platforms/cuda.py @ 002db495 check_and_update_config: block_size 64 for FlashMLASparse (whatever
 *    --block-size says); kv_cache_interface.py UniformTypeKVCacheSpecs: one page per block holds each layer's
 *    MLA latent (kv_lora_rank 512 + qk_rope_head_dim 64 = 576, bf16) and its DeepseekV32IndexerCache
 *    (MLAAttentionSpec, uint8, 128 + 128 / 128 x 4 = 132 B): 64 x 61 x (576 x 2 + 132) = 5,012,736 B.
 *  - the blocks: the pool (usable - profiling peak - non-torch - CUDA graphs, as for any model) // the page.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cli_spelt.h"
#include "vramcalc/vramcalc.h"

#define HF VC_TEST_DATA "/hf/"

static void serve(const char *file, int block_size, vc_serve_result *sr)
{
    vc_error err;
    vc_model *m = NULL;
    if (vc_model_load_file_hf(file, NULL, &m, &err) != VC_OK) fail_msg("%s", CLI_MSG(&err));
    vc_options o;
    vc_options_init(&o);
    o.precision = VC_PREC_BF16;
    o.tp = 8;
    o.gpus = 8;
    vc_serve_options so;
    vc_serve_options_init(&so);
    so.block_size = block_size;
    vc_gpu_spec gpu;
    assert_int_equal(vc_gpu_parse("h200", &gpu, &err), VC_OK);
    if (vc_serve(m, &o, &so, &gpu, sr, &err) != VC_OK) fail_msg("%s: %s", file, CLI_MSG(&err));
    vc_model_free(m);
}

static void test_v32_tp8_h200(void **state)
{
    (void)state;
    vc_serve_result v3, v32, v32b;
    serve(HF "deepseek-v3.json", 16, &v3);
    serve(HF "deepseek-v3.2.json", 16, &v32);
    serve(HF "deepseek-v3.2.json", 128, &v32b); /* FlashMLASparse forces 64 whatever is asked */
    const int64_t layer = 8192 * 1536 + 64 * 12 * 4 + (128 + 64) * 7168 * 2 + 2 * 128 * 4;
    assert_int_equal(layer, 15339520);
    const int64_t topk = INT64_C(8192) * 2048 * 4;
    const int64_t ws = INT64_C(163840) * 40 * (128 + 4) + (INT64_C(1) << 20);
    assert_int_equal(v32.weights - v3.weights, 61 * layer + topk);
    assert_int_equal(v32.weights - v3.weights, INT64_C(1002819584));
    assert_int_equal(v32.profile_peak - v3.profile_peak, 61 * layer + topk + ws + (INT64_C(512) << 20));
    assert_int_equal(v32.block_size, 64);
    assert_int_equal(v32.page_bytes, INT64_C(64) * 61 * (576 * 2 + 132));
    assert_int_equal(v32.page_bytes, 5012736);
    assert_int_equal(v32.latent_layers, 61);
    assert_int_equal(v32.latent, 576);
    /* the same non-torch memory and CUDA graphs as DeepSeek-V3's (the indexer is not in the graphs' estimate) */
    assert_int_equal(v32.non_torch, v3.non_torch);
    assert_int_equal(v32.graphs_subtracted, v3.graphs_subtracted);
    assert_int_equal(v32.kv_cache, v32.requested - v32.profile_peak - v32.non_torch - v32.graphs_subtracted);
    assert_int_equal(v32.blocks, v32.kv_cache / v32.page_bytes);
    assert_int_equal(v32.tokens, v32.blocks * 64);
    assert_int_equal(v32.concurrency, v32.blocks / ((1024 + 256 + 63) / 64));
    /* the figures docs/llm.md shows */
    assert_int_equal(v32.weights, INT64_C(86143034880));
    assert_int_equal(v32.profile_peak, INT64_C(94117787136));
    assert_int_equal(v32.blocks, 8065);
    assert_int_equal(v32.tokens, 516160);
    assert_int_equal(v32.concurrency, 403);
    assert_int_equal(v32b.block_size, 64);
    assert_int_equal(v32b.blocks, v32.blocks);
}

static void test_v32_refusals(void **state)
{
    (void)state;
    vc_error err;
    vc_model *m = NULL;
    if (vc_model_load_file_hf(HF "deepseek-v3.2.json", NULL, &m, &err) != VC_OK) fail_msg("%s", CLI_MSG(&err));
    vc_options o;
    vc_options_init(&o);
    o.precision = VC_PREC_BF16;
    vc_serve_options so;
    vc_serve_options_init(&so);
    so.kv_cache_dtype = VC_KV_FP8; /* vLLM's fp8_ds_mla latent: not modelled */
    vc_gpu_spec gpu;
    assert_int_equal(vc_gpu_parse("h200", &gpu, &err), VC_OK);
    vc_serve_result sr;
    assert_int_equal(vc_serve(m, &o, &so, &gpu, &sr, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--kv-cache-dtype");
    vc_model_free(m);
    so.kv_cache_dtype = VC_KV_AUTO;
    /* GLM-5.x's "shared" indexer layers. vLLM's DeepseekV2MLAAttention (deepseek_v2.py @ 002d6073) skips the Indexer
     * (and so its DeepseekV32IndexerCache) where index_topk_pattern says "S" or index_topk_freq /
     * index_skip_topk_offset make the layer skip: a small config of the class (8 layers) with freq 4, offset 3 (full at
     * 0, 1, 2, 6: 4 skipping) holds 4 indexer key pages of 132 B (128 fp8 values + a float32 scale) x 64 tokens
     * (FlashMLASparse's block) fewer a block than with every layer full, and 4 indexers' weights fewer */
    {
#define GLM_SMALL "{\"model_type\":\"glm_moe_dsa\",\"num_hidden_layers\":8,\"hidden_size\":512,\"intermediate_size\":1024,\"moe_intermediate_size\":128," \
    "\"n_routed_experts\":8,\"num_experts_per_tok\":2,\"num_attention_heads\":8,\"num_key_value_heads\":8,\"q_lora_rank\":256," \
    "\"kv_lora_rank\":128,\"qk_nope_head_dim\":64,\"qk_rope_head_dim\":32,\"v_head_dim\":64,\"vocab_size\":1000,\"max_position_embeddings\":4096"
        static const char *const js[2] = {GLM_SMALL "}", GLM_SMALL ",\"index_topk_freq\":4,\"index_skip_topk_offset\":3}"};
        vc_serve_result g[2];
        for (int i = 0; i < 2; i++) {
            vc_model *gm = NULL;
            if (vc_model_load_string_hf(js[i], strlen(js[i]), "config.json", NULL, &gm, &err) != VC_OK)
                fail_msg("%s", CLI_MSG(&err));
            if (vc_serve(gm, &o, &so, &gpu, &g[i], &err) != VC_OK) fail_msg("%s: %s", js[i], CLI_MSG(&err));
            vc_model_free(gm);
        }
        assert_int_equal(g[0].page_bytes - g[1].page_bytes, 4 * 132 * 64);
        assert_true(g[1].weights < g[0].weights);
    }
    /* an indexer_types list (tests/data/hf/glm-5-shared-indexer.json, 57 shared) vLLM @ 002d6073 does not read: it
     * would build every layer's Indexer; --serve refused naming the key */
    if (vc_model_load_file_hf(HF "glm-5-shared-indexer.json", NULL, &m, &err) != VC_OK) fail_msg("%s", CLI_MSG(&err));
    assert_int_equal(vc_serve(m, &o, &so, &gpu, &sr, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--serve");
    assert_non_null(strstr(CLI_MSG(&err), "indexer_types"));
    vc_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v32_tp8_h200),
        cmocka_unit_test(test_v32_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
