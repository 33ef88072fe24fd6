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

/* --serve --tp: one of vLLM's tensor_parallel_size ranks (src/hf/hf_tp.c's Gemma 4 block; vllm/model_executor/models/
 * gemma4.py @ 001cabc1): Gemma4Attention splits the query heads (total_num_heads // tp) and each layer's kv heads
 * as QKVParallelLinear does (num_key_value_heads on the sliding layers, num_global_key_value_heads on the k_eq_v
 * full ones; max(1, total // tp), a head copied when fewer than tp); o_proj row-, Gemma4MLP's gate_up_proj column-
 * and down_proj row-parallel over intermediate_size; Gemma4MoE's FusedMoE over moe_intermediate_size (w13 [E, 2 I /
 * tp, H], w2 [E, H, I / tp]), its GateLinear router, scale and per_expert_scale whole; embed_tokens a
 * VocabParallelEmbedding (262144 rows, a multiple of 64: / tp), the lm_head tied to it; the norms whole; the
 * vision tower whole (gemma4_mm.py @ 01bae219: ReplicatedLinear). h100-80gb (max_num_batched_tokens 8192), bf16,
 * block_size 16, requests of 4096 + 4096 tokens. */
typedef struct {
    const char *file;
    int64_t tp;
    int64_t weights;    /* bytes a rank loads: derived below */
    int64_t page_bytes; /* the largest layer page x group_size */
    int64_t block_size, groups, need;
} g4_tp_case;

static void check_tp(const g4_tp_case *c)
{
    vc_error err;
    vc_model *m = NULL;
    if (vc_model_load_file_hf(c->file, NULL, &m, &err) != VC_OK) fail_msg("%s", CLI_MSG(&err));
    vc_options o;
    vc_options_init(&o);
    o.precision = VC_PREC_BF16;
    o.prompt = 4096;
    o.new_tokens = 4096;
    o.tp = c->tp;
    o.gpus = c->tp;
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_gpu_spec gpu;
    assert_int_equal(vc_gpu_parse("h100-80gb", &gpu, &err), VC_OK);
    vc_serve_result sr;
    if (vc_serve(m, &o, &so, &gpu, &sr, &err) != VC_OK) fail_msg("%s tp %lld: %s", c->file, (long long)c->tp, CLI_MSG(&err));
    assert_int_equal(sr.weights, c->weights);
    assert_int_equal(sr.page_bytes, c->page_bytes);
    assert_int_equal(sr.block_size, c->block_size);
    /* determine_available_memory: requested - (the profiling run's peak, weights included) - non-torch memory - the
     * CUDA graphs' measure, which vLLM subtracts by default since v0.21.0: vramcalc's estimate of it (serve_graphs.c) */
    assert_int_equal(sr.graphs_subtracted, sr.graphs_estimate);
    assert_true(sr.graphs_estimate > sr.graphs_floor); /* activations and workspace above the 1 MiB a graph */
    assert_int_equal(sr.kv_cache, sr.requested - sr.profile_peak - sr.non_torch - sr.graphs_estimate);
    assert_int_equal(sr.blocks, sr.kv_cache / c->page_bytes);
    assert_int_equal(sr.tokens, sr.blocks / c->groups * c->block_size);
    assert_int_equal(sr.concurrency, sr.blocks / c->need);
    vc_model_free(m);
}

/* gemma-4-31b-it (H 5376, 32 heads, 50 sliding layers of 16 kv heads x 256, 10 full of 4 global kv heads x 512
 * under k_eq_v, intermediate 21504, vocabulary 262144, tied). A rank at tp t holds, in elements:
 *  - embed_tokens 262144 / t x 5376, the final norm 5376;
 *  - a sliding layer: q_proj 5376 x (32 / t x 256), q_norm and k_norm 256 each, k_proj and v_proj 5376 x (kv x
 *    256), o_proj (32 / t x 256) x 5376, the MLP 3 x 5376 x 21504 / t, four norms 4 x 5376;
 *  - a full layer: q_proj and o_proj at 512, q_norm and k_norm 512 each, k_proj 5376 x (gkv x 512), no v_proj;
 *  - the vision tower, whole: 575741232 (the checkpoint's count, hf_gemma4.c), one block of 1151482464 bytes
 *    rounded to the allocator's 512: 1151482880 bytes;
 *  - the two rotary tables' inv_freq (128 + 256 fp32: 1536 bytes), the rotary caches 262144 x (256 + 512) and
 *    vLLM's V slot of the k_eq_v layers, 10 x gkv x 512 x 5376 (gemma4_qkv_extra).
 * tp 2 (kv 8, gkv 2): 15349338368 language-model elements (50 x 239490560 + 10 x 267016192 + 131072 x 5376 +
 * 5376), 55050240 V-slot elements: 2 x 15349338368 +
 * 1151482880 + 1536 + 2 x (55050240 + 201326592) = 32362914816 bytes. Pages: sliding 2 x 16 x 8 x 256 x 2 =
 * 131072, full 2 x 16 x 2 x 512 x 2 = 65536 (block_size 32); group_size 10: 5 + 1 groups, 1310720 bytes a
 * block; a request 5 x (cdiv(8192, 16) + 1) + cdiv(8192, 32) = 2821 blocks.
 * tp 4 (kv 4, gkv 1): 7675334912 and 27525120 elements: 16959857664 bytes; pages 65536 and 32768: 655360 a
 * block, 2821 a request.
 * tp 8 (kv 2, gkv 4 < 8: one head copied to 2 ranks): 3852095744 and 27525120 elements: 9313379328 bytes; pages
 * 2 x 16 x 2 x 256 x 2 = 32768 and 2 x 16 x 1 x 512 x 2 = 32768, equal: block_size 16 everywhere, 327680 a
 * block, a request 5 x 513 + cdiv(8192, 16) = 3077. */
static void test_31b_tp(void **state)
{
    (void)state;
    const g4_tp_case c[] = {
        {HF "gemma-4-31b-it.json", 2, INT64_C(32362914816), 1310720, 16, 6, 2821},
        {HF "gemma-4-31b-it.json", 4, INT64_C(16959857664), 655360, 16, 6, 2821},
        {HF "gemma-4-31b-it.json", 8, INT64_C(9313379328), 327680, 16, 6, 3077},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) check_tp(&c[i]);
}

/* gemma-4-26b-a4b-it (H 2816, 16 heads, 25 sliding layers of 8 kv heads x 256, 5 full of 2 global kv heads x 512,
 * intermediate 2112, 128 experts of moe_intermediate_size 704): the same terms, and per layer the router's
 * GateLinear 128 x 2816, its scale 2816, per_expert_scale 128 (256 bytes: one 512-byte block, 30 x 256 bytes
 * more), the experts 3 x 128 x 2816 x 704 / t and three more norms. The vision tower: 572792112 elements,
 * 1145584224 bytes rounded to 1145584640.
 * tp 2 (kv 4, gkv 1): 12622327808 language-model elements, V slots 5 x 1 x 512 x 2816 = 7208960: 2 x 12622327808
 * + 30 x 256 + 1145584640 + 1536 + 2 x (7208960 + 201326592) = 26807320576 bytes. Pages 2 x 16 x 4 x 256 x 2 =
 * 65536 and 2 x 16 x 1 x 512 x 2 = 32768 (block_size 32); group_size 5: 5 + 1 groups, 327680 a block; 2821 a
 * request.
 * tp 4 (kv 2, gkv 2 < 4: copied): 6320525312 and 7208960 elements: 14203715584 bytes; pages 32768 and 32768:
 * 163840 a block, 5 x 513 + 512 = 3077 a request. */
static void test_26b_a4b_tp(void **state)
{
    (void)state;
    const g4_tp_case c[] = {
        {HF "gemma-4-26b-a4b-it.json", 2, INT64_C(26807320576), 327680, 16, 6, 2821},
        {HF "gemma-4-26b-a4b-it.json", 4, INT64_C(14203715584), 163840, 16, 6, 3077},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) check_tp(&c[i]);
}

/* The E models' per-layer inputs on a rank (vllm/model_executor/models/gemma4.py @ 001cabc1 Gemma4Model.__init__;
 * src/hf/hf_tp.c, src/hf/hf_gemma4.c g4_gather): embed_tokens_per_layer a VocabParallelEmbedding
 * (vocab_size_per_layer_input 262144, a multiple of 64: 262144 / t rows of N x P), per_layer_model_projection a
 * ColumnParallelLinear(H, N x P, gather_output=True): [N x P / t, H] on a rank, per_layer_projection_norm (P) whole;
 * each layer's per_layer_input_gate and per_layer_projection ReplicatedLinear: whole, with
 * post_per_layer_input_norm. The rest as above; the kv heads (E2B 1, E4B 2) copied to t / kv ranks when fewer
 * (QKVParallelLinear, Gemma4Attention: max(1, total // tp)). Per rank, beside the language model's elements
 * (bf16, 2 bytes each): both towers whole, one block each rounded to 512 (E2B: vision 168,544,256 and audio
 * 307,183,904 elements, tests/test_gemma4.c: 337088512 + 614368256 bytes; E4B: 169,330,688 and 308,756,768:
 * 338661376 + 617513984), the rotary tables' inv_freq 1536 bytes, and 2 bytes x (vLLM's qkv_proj slots of the
 * kv-shared layers + the rotary caches 131072 x (256 + 512) = 100663296 + Gemma4ForConditionalGeneration's
 * per-layer-embeddings buffer 8192 x N x 256, whole on every rank).
 * gemma-4-e2b-it (H 1536, N 35, N x P 8960, 8 heads, 1 kv head, layers 0-14 with a cache: full at 4, 9, 14, 12
 * sliding; 15-34 kv-shared, full at 19, 24, 29, 34, their MLP double-wide, 12288). A rank at t holds
 * embed_tokens 262144 / t x 1536, the norm 1536, embed_tokens_per_layer 262144 / t x 8960, the projection
 * 1536 x 8960 / t, its norm 256; per layer four norms 6,144 and the per-layer parts 787,968; a sliding layer
 * 0-14: q_proj and o_proj 2 x (8 / t x 256 x 1536), k_proj and v_proj 2 x 256 x 1536, norms 512, MLP
 * 3 x 1536 x 6144 / t; a full one at 512 (norms 1,024); a kv-shared sliding layer: q_proj, o_proj, q_norm 256, the
 * MLP 3 x 1536 x 12288 / t; a kv-shared full one at 512. The kv-shared layers' K, V and k_norm slots in vLLM:
 * 16 x (2 x 256 x 1536 + 256) + 4 x (2 x 512 x 1536 + 512) = 18880512 elements; the buffer 8192 x 35 x 256 =
 * 73400320.
 *  - t 2: 201326592 + 1536 + 1174405120 + 6881280 + 256 + 12 x 18882560 + 3 x 22815232 + 16 x 32251648 +
 *    4 x 35397632 = 2335268096 elements; 2 x 2335268096 + 337088512 + 614368256 + 1536 + 2 x (18880512 +
 *    100663296 + 73400320) = 6007882752 bytes;
 *  - t 4: 100663296 + 1536 + 587202560 + 3440640 + 256 + 12 x 10231808 + 3 x 12591616 + 16 x 16523008 +
 *    4 x 18096128 = 1188617472: 3714581504 bytes;
 *  - t 8: 50331648 + 1536 + 293601280 + 1720320 + 256 + 12 x 5906432 + 3 x 7479808 + 16 x 8658688 + 4 x 9445376 =
 *    615292160: 2567930880 bytes.
 *  (t 1 gives the checkpoint's 4,628,569,344.) Pages: one kv head on every rank: sliding 2 x 16 x 1 x 256 x 2 =
 *  16384, full 32768 (the sliding block_size 32); group_size 3 (12 >= 1.5 x 3): 4 sliding groups + 1 full,
 *  98304 a block; a request 4 x (cdiv(min(511 + 8192, 8192), 32) + 1) + cdiv(8192, 16) = 4 x 257 + 512 = 1540.
 * gemma-4-e4b-it (H 2560, N 42, N x P 10752, 8 heads, 2 kv heads: 1 a rank; layers 0-23 with a cache, full at 5,
 * 11, 17, 23; 24-41 kv-shared, full at 29, 35, 41; MLP 10240): per layer four norms 10,240 and the per-layer
 * parts 1,313,280; the K, V, k_norm slots 15 x (2 x 256 x 2560 + 256) + 3 x (2 x 512 x 2560 + 512) = 27530496;
 * the buffer 8192 x 42 x 256 = 88080384.
 *  - t 2: 335544320 + 2560 + 1409286144 + 13762560 + 256 + 20 x 47199232 + 4 x 53753344 + 15 x 45888256 +
 *    3 x 51131392 = 3759311872 elements; 2 x 3759311872 + 338661376 + 617513984 + 1536 + 2 x (27530496 +
 *    100663296 + 88080384) = 8907348992 bytes;
 *  - t 4: 167772160 + 2560 + 704643072 + 6881280 + 256 + 20 x 24916992 + 4 x 28849664 + 15 x 23606016 +
 *    3 x 26227712 = 1925811200: 5240347648 bytes;
 *  - t 8: 83886080 + 2560 + 352321536 + 3440640 + 256 + 20 x 13775872 + 4 x 16397824 + 15 x 12464896 +
 *    3 x 13775872 = 1009060864: 3406846976 bytes.
 *  Pages: sliding 16384, full 32768 (block_size 32); group_size 4: 5 sliding groups + 1 full, 131072 a block; a
 *  request 5 x 257 + 512 = 1797.
 * The profiling run all-gathers the projection's [tokens, 8960 / t] shard (g4_gather); its peak, per token, is
 * that of the per_layer_projection_norm after it (Gemma4RMSNorm's float32 temporaries beside the per-layer
 * embeddings and the scaled projection), so check_tp's kv_cache = requested - profile_peak - non_torch - graphs holds with
 * it. */
static void test_e_tp(void **state)
{
    (void)state;
    const g4_tp_case c[] = {
        {HF "gemma-4-e2b-it.json", 2, INT64_C(6007882752), 98304, 16, 5, 1540},
        {HF "gemma-4-e2b-it.json", 4, INT64_C(3714581504), 98304, 16, 5, 1540},
        {HF "gemma-4-e2b-it.json", 8, INT64_C(2567930880), 98304, 16, 5, 1540},
        {HF "gemma-4-e4b-it.json", 2, INT64_C(8907348992), 131072, 16, 6, 1797},
        {HF "gemma-4-e4b-it.json", 4, INT64_C(5240347648), 131072, 16, 6, 1797},
        {HF "gemma-4-e4b-it.json", 8, INT64_C(3406846976), 131072, 16, 6, 1797},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) check_tp(&c[i]);
}

/* A text-only gemma4_text config of per-layer inputs whose N x P (or padded vocab_size_per_layer_input) the
 * ranks do not divide: vLLM's divide() asserts (ColumnParallelLinear's output_size_per_partition,
 * VocabParallelEmbedding's num_embeddings_per_partition) */
static vc_status serve_small(int64_t layers, int64_t ple, int64_t heads, int64_t tp, vc_error *err)
{
    char cfg[512];
    snprintf(cfg, sizeof cfg, "{\"model_type\": \"gemma4_text\", \"vocab_size\": 384, \"hidden_size\": 48, "
             "\"intermediate_size\": 96, \"num_hidden_layers\": %lld, \"num_attention_heads\": %lld, "
             "\"num_key_value_heads\": %lld, \"head_dim\": 16, \"global_head_dim\": 16, \"vocab_size_per_layer_input\": 100, "
             "\"hidden_size_per_layer_input\": %lld, \"num_kv_shared_layers\": 0, \"max_position_embeddings\": 4096}",
             (long long)layers, (long long)heads, (long long)heads, (long long)ple);
    vc_model *m = NULL;
    vc_status st = vc_model_load_string_hf(cfg, strlen(cfg), "small", NULL, &m, err);
    if (st != VC_OK) return st;
    vc_options o;
    vc_options_init(&o);
    o.precision = VC_PREC_BF16;
    o.prompt = 64;
    o.new_tokens = 64;
    o.tp = tp;
    o.gpus = tp;
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_gpu_spec gpu;
    st = vc_gpu_parse("h100-80gb", &gpu, err);
    vc_serve_result sr;
    if (st == VC_OK) st = vc_serve(m, &o, &so, &gpu, &sr, err);
    vc_model_free(m);
    return st;
}

/* Refused, naming the option: per-layer inputs the ranks do not divide, a tp that does not divide the query heads,
 * and Megatron's split (training) */
static void test_tp_refused(void **state)
{
    (void)state;
    vc_error err;
    vc_model *m = NULL;
    /* 3 layers x P 6 = 18 and the padded 128 rows: tp 2 serves; 3 x 5 = 15 is not divisible by 2; with 3 heads,
     * tp 3 divides 3 x 6 but not 128 */
    if (serve_small(3, 6, 2, 2, &err) != VC_OK) fail_msg("%s", CLI_MSG(&err));
    assert_int_equal(serve_small(3, 5, 2, 2, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--tp");
    assert_non_null(strstr(CLI_MSG(&err), "do not divide num_hidden_layers x hidden_size_per_layer_input (15)"));
    assert_int_equal(serve_small(3, 6, 3, 3, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--tp");
    assert_non_null(strstr(CLI_MSG(&err), "vocab_size_per_layer_input padded to a multiple of 64 (128)"));
    vc_options o;
    vc_options_init(&o);
    o.precision = VC_PREC_BF16;
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_gpu_spec gpu;
    assert_int_equal(vc_gpu_parse("h100-80gb", &gpu, &err), VC_OK);
    vc_serve_result sr;
    if (vc_model_load_file_hf(HF "gemma-4-31b-it.json", NULL, &m, &err) != VC_OK) fail_msg("%s", CLI_MSG(&err));
    o.tp = 3; /* 32 heads */
    o.gpus = 3;
    assert_int_equal(vc_serve(m, &o, &so, &gpu, &sr, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--tp");
    assert_non_null(strstr(CLI_MSG(&err), "do not divide"));
    o.tp = 2;
    o.gpus = 2;
    vc_result r;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--tp");
    assert_non_null(strstr(CLI_MSG(&err), "Megatron's tensor-parallel split of Gemma 4"));
    vc_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_31b),
        cmocka_unit_test(test_26b_a4b),
        cmocka_unit_test(test_e4b),
        cmocka_unit_test(test_31b_tp),
        cmocka_unit_test(test_26b_a4b_tp),
        cmocka_unit_test(test_e_tp),
        cmocka_unit_test(test_tp_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
