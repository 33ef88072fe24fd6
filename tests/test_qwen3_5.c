/*
 * test_qwen3_5.c — Qwen3.5 / Qwen3.6 (model_type qwen3_5, qwen3_5_moe; issue 31) and --serve for
 * the Gated DeltaNet families (qwen3_next, qwen3_5, qwen3_5_moe).
 *
 * 1. The published configs (tests/data/hf/qwen3.6-35b-a3b.json: Qwen/Qwen3.6-35B-A3B's config.json
 *    as a public copy pins it byte for byte; qwen3.6-27b.json: the 27B's text_config and vision_config
 *    values as a public checkpoint validator transcribes them, the geometry THUDM/slime's
 *    scripts/models/qwen3.5-27B.sh also gives (64 layers, hidden 5120, ffn 17408, 24 heads, 4 kv heads,
 *    head_dim 256, vocab 248320, untied), max_position_embeddings and rope_parameters the 35B's) load
 *    with their exact parameter counts, each computed by hand in
 *    the comment from the modules' __init__s: huggingface/transformers modular_qwen3_5.py @ 8940358a
 *    (Qwen3_5GatedDeltaNet, Qwen3_5MLP, Qwen3_5DecoderLayer), modular_qwen3_5_moe.py @ e36255cb
 *    (Qwen3_5MoeDecoderLayer: Qwen3NextSparseMoeBlock on every layer), modeling_qwen3_next.py @
 *    7515843b (Qwen3NextAttention, the experts, Qwen3NextRMSNorm), modeling_qwen3_vl.py @ 68a7b7e2
 *    (the vision tower less its deepstack mergers). The checkpoints' mtp.* weights are not counted:
 *    transformers ignores them (_keys_to_ignore_on_load_unexpected) and vLLM skips them
 *    (load_weights skip_prefixes ["mtp."]).
 * 2. Every bad value of the keys exits with an error naming the key.
 * 3. --mode generate keeps Qwen3_5DynamicCache (Qwen3NextDynamicCache's) states, by hand.
 * 4. --serve: vLLM's hybrid KV cache (src/engine/serve.c gdn_state), every figure derived by hand
 *    from the vLLM source in the comments.
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

static vc_model *load(const char *file)
{
    vc_error err;
    vc_model *m = NULL;
    if (vc_model_load_file_hf(file, NULL, &m, &err) != VC_OK) fail_msg("%s: %s %s", file, err.path, err.msg);
    return m;
}

static vc_status load_js(const char *js, const vc_hf_options *o, vc_model **m, vc_error *err)
{
    *m = NULL;
    return vc_model_load_string_hf(js, strlen(js), "config.json", o, m, err);
}

/* 1. Qwen3.6-35B-A3B (qwen3_5_moe): hidden 2048, 40 layers (layer_types: full attention on every 4th,
 * 10 of them; 30 Gated DeltaNet), vocab 248320 untied, 256 experts of 512, a shared expert of 512.
 *  - embed_tokens and lm_head: 2 x 248320 x 2048 = 1,017,118,720; the final norm 2,048;
 *  - every layer: input_layernorm + post_attention_layernorm 4,096; Qwen3NextSparseMoeBlock: gate
 *    [256, 2048] 524,288, experts.gate_up_proj [256, 1024, 2048] 536,870,912, experts.down_proj
 *    [256, 2048, 512] 268,435,456, shared_expert gate/up/down 3 x 512 x 2048 = 3,145,728,
 *    shared_expert_gate [1, 2048] 2,048: 808,978,432;
 *  - a full-attention layer (Qwen3NextAttention): q_proj [16 x 256 x 2, 2048] 16,777,216, k_proj and
 *    v_proj [2 x 256, 2048] 1,048,576 each, o_proj [2048, 4096] 8,388,608, q_norm and k_norm 256 each:
 *    27,263,488;
 *  - a DeltaNet layer (key_dim 16 x 128 = 2048, value_dim 32 x 128 = 4096): in_proj_qkv [8192, 2048]
 *    16,777,216, in_proj_z [4096, 2048] 8,388,608, in_proj_b and in_proj_a [32, 2048] 65,536 each,
 *    conv1d [8192, 1, 4] 32,768 (no bias), dt_bias and A_log 32 each, norm [128], out_proj
 *    [2048, 4096] 8,388,608: 33,718,464;
 *  - the language model: 1,017,118,720 + 2,048 + 40 x (4,096 + 808,978,432) + 10 x 27,263,488
 *    + 30 x 33,718,464 = 34,660,610,688;
 *  - the vision tower (depth 27, hidden 1152, intermediate 4304, patch 16, temporal 2, merge 2,
 *    2304 positions, out 2048): patch_embed Conv3d 1152 x 3 x 2 x 16 x 16 + 1,152 = 1,770,624;
 *    pos_embed 2304 x 1152 = 2,654,208; a block: norm1 + norm2 4 x 1152, qkv 3 x 1152^2 + 3 x 1152,
 *    proj 1152^2 + 1152, linear_fc1 4304 x 1152 + 4304, linear_fc2 1152 x 4304 + 1152: 15,229,008,
 *    x 27 = 411,183,216; merger: norm 2 x 1152, linear_fc1 4608^2 + 4608, linear_fc2 2048 x 4608
 *    + 2048: 30,963,200; the tower: 446,571,248;
 *  - in all 35,107,181,936 ("35B"), 34,660,610,688 trainable (the tower frozen, hf_vision.c).
 * Qwen3.6-27B (qwen3_5): hidden 5120, intermediate 17408, 64 layers (16 full), heads 24, kv heads 4,
 * DeltaNet 16 key heads and 48 value heads of 128, vocab 248320 untied:
 *  - embed and lm_head 2 x 248320 x 5120 = 2,542,796,800; the final norm 5,120;
 *  - every layer: two norms 10,240 and Qwen3_5MLP 3 x 5120 x 17408 = 267,386,880;
 *  - a full layer: q_proj 12288 x 5120 = 62,914,560, k/v 1024 x 5120 each 10,485,760, o_proj
 *    5120 x 6144 = 31,457,280, q/k norms 512: 104,858,112;
 *  - a DeltaNet layer (key_dim 2048, value_dim 6144, conv_dim 10240): in_proj_qkv 10240 x 5120 =
 *    52,428,800, in_proj_z 6144 x 5120 = 31,457,280, in_proj_b and in_proj_a 48 x 5120 each 491,520,
 *    conv1d 40,960, dt_bias and A_log 96, norm 128, out_proj 5120 x 6144 = 31,457,280: 115,876,064;
 *  - the language model 2,542,796,800 + 5,120 + 64 x 267,397,120 + 16 x 104,858,112
 *    + 48 x 115,876,064 = 26,895,998,464; the tower as above but linear_fc2 5120 x 4608 + 5120:
 *    460,730,096; in all 27,356,728,560.
 * Both totals (and the trainable counts) are also what bench/accuracy/llm's reference.py CausalLM
 * with deltanet_replica.py's Qwen3_5 classes holds, built from these two configs on the meta device
 * (check_params.py's MetaMode): 35,107,181,936 / 34,660,610,688 and 27,356,728,560 / 26,895,998,464. */
#define LT4 "\"linear_attention\",\"linear_attention\",\"linear_attention\",\"full_attention\""
#define LT10 LT4 "," LT4 "," LT4 "," LT4 "," LT4 "," LT4 "," LT4 "," LT4 "," LT4 "," LT4
static void test_counts(void **state)
{
    (void)state;
    vc_model *m = load(HF "qwen3.6-35b-a3b.json");
    assert_int_equal(vc_model_parameters(m), INT64_C(35107181936));
    assert_int_equal(vc_model_trainable_parameters(m), INT64_C(34660610688));
    /* Qwen3_5GatedDeltaNet's four projections, not Qwen3-Next's two */
    const char *js = vc_model_generated_json(m);
    assert_non_null(strstr(js, "linear_attn.in_proj_qkv\""));
    assert_null(strstr(js, "in_proj_qkvz"));
    vc_model_free(m);
    m = load(HF "qwen3.6-27b.json");
    assert_int_equal(vc_model_parameters(m), INT64_C(27356728560));
    assert_int_equal(vc_model_trainable_parameters(m), INT64_C(26895998464));
    vc_model_free(m);
    /* the text config itself (model_type qwen3_5_moe_text: Qwen3_5MoeForCausalLM, no tower): the
     * language model's 34,660,610,688 */
    vc_error err;
    m = NULL;
    assert_int_equal(load_js("{\"model_type\":\"qwen3_5_moe_text\",\"layer_types\":[" LT10 "]}", NULL, &m, &err), VC_OK);
    assert_int_equal(vc_model_parameters(m), INT64_C(34660610688));
    assert_int_equal(vc_model_trainable_parameters(m), INT64_C(34660610688));
    vc_model_free(m);
    /* Qwen3_5TextConfig's defaults (Qwen3.5-9B's: hidden 4096, 32 layers, 8 full, intermediate 12288,
     * heads 16, kv 4, DeltaNet 16 / 32 heads of 128): embed + lm_head 2 x 248320 x 4096 = 2,034,237,440,
     * norm 4,096; per layer norms 8,192 + MLP 3 x 4096 x 12288 = 150,994,944; a full layer q_proj 8192 x
     * 4096 + k/v 2 x 1024 x 4096 + o_proj 4096 x 4096 + 512 = 58,720,768; a DeltaNet layer in_proj_qkv
     * 8192 x 4096 + in_proj_z 4096 x 4096 + b/a 2 x 32 x 4096 + conv1d 32,768 + 64 + 128 + out_proj
     * 4096 x 4096 = 67,403,968: 2,034,241,536 + 32 x 151,003,136 + 8 x 58,720,768 + 24 x 67,403,968 */
    assert_int_equal(load_js("{\"model_type\":\"qwen3_5_text\"}", NULL, &m, &err), VC_OK);
    assert_int_equal(vc_model_parameters(m),
                     INT64_C(2034241536) + 32 * INT64_C(151003136) + 8 * INT64_C(58720768) + 24 * INT64_C(67403968));
    vc_model_free(m);
}

/* A small dense one by hand (hidden 64, layers [linear, full], vocab 100, untied):
 *  - DeltaNet layer (key_dim 2 x 16 = 32, value_dim 4 x 16 = 64): in_proj_qkv (2 x 32 + 64) x 64 =
 *    8,192, in_proj_z 64 x 64 = 4,096, in_proj_b and in_proj_a 4 x 64 each, dt_bias 4, A_log 4,
 *    conv1d 128 x 4 = 512, norm 16, out_proj 4,096: 17,432 (Qwen3-Next's in_proj_qkvz 12,288 and
 *    in_proj_ba 512 hold as many);
 *  - full layer: q_proj 2 x 4 x 16 x 64 = 8,192, k/v 2,048 each, o_proj 4,096, q/k norms 16 each: 16,416;
 *  - MLPs 3 x 64 x 128 = 24,576 each, two norms of 64 per layer, the final norm, embed and lm_head
 *    100 x 64 each: 96,120 in the language model;
 *  - vision tower (depth 1, hidden 32, intermediate 64, patch 4, temporal 2, merge 1, 64 positions,
 *    out 64): patch_embed 32 x 3 x 2 x 4 x 4 + 32 = 3,104, pos_embed 2,048, the block 4 x 32 +
 *    3 x 32^2 + 96 + 32^2 + 32 + 64 x 32 + 64 + 32 x 64 + 32 = 8,544, merger 2 x 32 + 32^2 + 32 +
 *    64 x 32 + 64 = 3,232: 16,928. */
#define SMALL_TEXT "\"vocab_size\":100,\"hidden_size\":64,\"num_hidden_layers\":2,\"num_attention_heads\":4," \
                   "\"num_key_value_heads\":2,\"head_dim\":16,\"linear_num_key_heads\":2,\"linear_num_value_heads\":4," \
                   "\"linear_key_head_dim\":16,\"linear_value_head_dim\":16,\"layer_types\":[\"linear_attention\",\"full_attention\"]"
#define SMALL_VISION "\"vision_config\":{\"depth\":1,\"hidden_size\":32,\"intermediate_size\":64,\"num_heads\":4," \
                     "\"num_position_embeddings\":64,\"out_hidden_size\":64,\"patch_size\":4,\"spatial_merge_size\":1}"
static const char small_dense[] = "{\"model_type\":\"qwen3_5\",\"text_config\":{" SMALL_TEXT ",\"intermediate_size\":128}," SMALL_VISION "}";
/* MoE: 4 experts of 32, top-2, a shared expert of 48, per layer: gate 4 x 64 = 256, gate_up_proj
 * 4 x 64 x 64 = 16,384, down_proj 4 x 64 x 32 = 8,192, shared expert 3 x 48 x 64 = 9,216,
 * shared_expert_gate 64: 34,112 (x 2 layers in place of the MLPs' 49,152): 81,040 + 16,928 */
static const char small_moe[] = "{\"model_type\":\"qwen3_5_moe\",\"text_config\":{" SMALL_TEXT ",\"num_experts\":4,"
                                "\"num_experts_per_tok\":2,\"moe_intermediate_size\":32,\"shared_expert_intermediate_size\":48},"
                                SMALL_VISION "}";

static void test_small(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    assert_int_equal(load_js(small_dense, NULL, &m, &err), VC_OK);
    assert_int_equal(vc_model_parameters(m), 96120 + 16928);
    assert_int_equal(vc_model_trainable_parameters(m), 96120);
    /* 3. --mode generate, bf16, batch 2, 100 + 8 tokens: Qwen3_5DynamicCache (Qwen3NextDynamicCache):
     * the full layer's keys and values 2 x 2 kv heads x 16 x 2 bytes x 107 tokens x 2 sequences =
     * 27,392; the DeltaNet layer's conv_states [conv_dim 128, kernel 4] bf16 (1,024 bytes) and
     * recurrent_states [4, 16, 16] fp32 (4,096 bytes) per sequence: 10,240 */
    vc_options o;
    vc_options_init(&o);
    o.mode = VC_MODE_GENERATE;
    o.precision = VC_PREC_BF16;
    o.batch = 2;
    o.prompt = 100;
    o.new_tokens = 8;
    vc_result r;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_OK);
    assert_int_equal(r.generate.kv_cache, 27392);
    assert_int_equal(r.generate.ssm_layers, 1);
    assert_int_equal(r.generate.ssm_state, (128 * 4 * 2 + 4 * 16 * 16 * 4) * 2);
    vc_result_free(&r);
    vc_model_free(m);
    assert_int_equal(load_js(small_moe, NULL, &m, &err), VC_OK);
    assert_int_equal(vc_model_parameters(m), 96120 - 49152 + 2 * 34112 + 16928);
    vc_model_free(m);
}

/* 2. Every bad or inconsistent value exits 2 naming the key (text_config's keys as text_config.KEY) */
static void test_bad(void **state)
{
    (void)state;
    static const struct {
        const char *js, *path;
    } bad[] = {
        {"{\"model_type\":\"qwen3_5\"}", "text_config"},
        {"{\"model_type\":\"qwen3_5_moe\",\"text_config\":[]}", "text_config"},
        {"{\"model_type\":\"qwen3_5\",\"text_config\":{\"linear_num_key_heads\":3}}", "text_config.linear_num_value_heads"},
        {"{\"model_type\":\"qwen3_5\",\"text_config\":{\"linear_key_head_dim\":0}}", "text_config.linear_key_head_dim"},
        {"{\"model_type\":\"qwen3_5\",\"text_config\":{\"linear_conv_kernel_dim\":\"4\"}}", "text_config.linear_conv_kernel_dim"},
        {"{\"model_type\":\"qwen3_5\",\"text_config\":{\"layer_types\":[\"full_attention\"]}}", "text_config.layer_types"},
        {"{\"model_type\":\"qwen3_5\",\"text_config\":{\"full_attention_interval\":0}}", "text_config.full_attention_interval"},
        {"{\"model_type\":\"qwen3_5_moe\",\"text_config\":{\"num_experts_per_tok\":300}}", "text_config.num_experts_per_tok"},
        {"{\"model_type\":\"qwen3_5_moe\",\"text_config\":{\"num_experts\":0}}", "text_config.num_experts"},
        /* Qwen3_5Config's defaults: the merger's 3584 outputs, a language model 4096 wide */
        {"{\"model_type\":\"qwen3_5\",\"text_config\":{}}", "vision_config.out_hidden_size"},
        {"{\"model_type\":\"qwen3_5\",\"text_config\":{\"hidden_size\":3584},\"vision_config\":{\"num_position_embeddings\":0}}",
         "vision_config.num_position_embeddings"},
        {"{\"model_type\":\"qwen3_5\",\"text_config\":{\"hidden_size\":3584},\"vision_config\":{\"num_heads\":5}}",
         "vision_config.num_heads"},
        {"{\"model_type\":\"qwen3_5\",\"text_config\":{\"hidden_size\":3584},\"vision_config\":7}", "vision_config"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        vc_model *m = NULL;
        vc_error err;
        assert_int_equal(load_js(bad[i].js, NULL, &m, &err), VC_ERR_MODEL);
        assert_null(m);
        if (strcmp(err.path, bad[i].path)) fail_msg("case %zu: %s, expected %s (%s)", i, err.path, bad[i].path, err.msg);
    }
    /* the tower runs on --image (tests/test_qwen3_5_vision.c): a 448 x 448 image loads; the Gated
     * DeltaNet layers' tensor-parallel split is not modelled: --tp */
    vc_hf_options ho;
    vc_hf_options_init(&ho);
    ho.image_w = ho.image_h = 448;
    vc_model *m = NULL;
    vc_error err;
    assert_int_equal(load_js(small_dense, &ho, &m, &err), VC_OK);
    vc_model_free(m);
    /* the split is the estimate's (vc_model_set_tp builds the model at it): refused naming --tp */
    assert_int_equal(load_js(small_dense, NULL, &m, &err), VC_OK);
    assert_int_equal(vc_model_set_tp(m, 2, 0, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--tp");
    vc_model_free(m);
}

static vc_serve_result serve(const char *file, const char *gpu, double util, int64_t tokens, int64_t seqs)
{
    vc_model *m = load(file);
    vc_options o;
    vc_options_init(&o);
    o.precision = vc_serve_auto_precision(m, NULL);
    o.prompt = 1024;
    o.new_tokens = 1024;
    vc_serve_options so;
    vc_serve_options_init(&so);
    so.gpu_memory_utilization = util;
    so.max_num_batched_tokens = tokens;
    so.max_num_seqs = seqs;
    vc_gpu_spec g;
    vc_error err;
    assert_int_equal(vc_gpu_parse(gpu, &g, &err), VC_OK);
    vc_serve_result r;
    if (vc_serve(m, &o, &so, &g, &r, &err)) fail_msg("serve: %s", err.msg);
    vc_model_free(m);
    return r;
}

/* 4. --serve, requests of 1024 + 1024 tokens, bf16 (the configs' dtype), prefix caching off for the
 * DeltaNet layers (vLLM's mamba_cache_mode "none"). The pool (kv_cache) is the estimate's; from it:
 *  - Qwen3.6-35B-A3B on an H200 (vLLM's defaults): each DeltaNet layer's state
 *    (mamba_utils.py @ 2afe1e85 gated_delta_net_state_shape): conv (kernel - 1, conv_dim) = (3, 2 x 2048
 *    + 4096 = 8192) = 24,576 elements, temporal (32, 128, 128) = 524,288, both float32 for Qwen3.5
 *    (qwen3_5.py @ 36c110bd get_mamba_state_dtype_from_config): 2,195,456 bytes (MambaSpec
 *    .page_size_bytes, kv_cache_interface.py @ bc8282e6); one attention token 2 x 2 kv heads x 256 x
 *    2 bytes = 2,048 (FullAttentionSpec, block_size 1); the block size (config.py @ 1936cf38
 *    HybridAttentionMambaModelConfig, no prefix caching): 16 x cdiv(2,195,456, 16 x 2,048) = 16 x 67 =
 *    1,072 tokens, an attention page 1,072 x 2,048 = 2,195,456 (no padding); 10 attention layers and 30
 *    DeltaNet ones: group_size 10 (30 >= 1.5 x 10), groups 1 + 3, a block 10 pages = 21,954,560 bytes;
 *    blocks = pool // 21,954,560 (get_num_blocks); a request needs cdiv(2048, 1072) = 2 blocks in the
 *    attention group and 1 in each DeltaNet group: 5 (get_max_concurrency_for_kv_cache_config);
 *    tokens = blocks // 4 x 1072;
 *  - Qwen3-Next-80B-A3B on a B200 at gpu_memory_utilization 0.95, 2048 batched tokens, 256 sequences:
 *    the state in bf16 (gated_delta_net_state_dtype(model dtype, "auto")): (24,576 + 524,288) x 2 =
 *    1,097,728 bytes; block 16 x cdiv(1,097,728, 32,768) = 16 x 34 = 544 tokens, a page 544 x 2,048 =
 *    1,114,112 (the state padded to it); 12 attention and 36 DeltaNet layers: group_size 12, groups
 *    1 + 3, a block 12 pages = 13,369,344 bytes; a request cdiv(2048, 544) = 4 + 3 = 7 blocks. */
static void test_serve(void **state)
{
    (void)state;
    vc_serve_result r = serve(HF "qwen3.6-35b-a3b.json", "h200", 0.9, 0, 0);
    assert_int_equal(r.state_layers, 30);
    assert_int_equal(r.state_bytes, 2195456);
    assert_int_equal(r.block_size, 1072);
    assert_int_equal(r.page_bytes, 21954560);
    assert_true(r.kv_cache > 0);
    assert_int_equal(r.blocks, r.kv_cache / 21954560);
    assert_int_equal(r.concurrency, r.blocks / 5);
    assert_int_equal(r.tokens, r.blocks / 4 * 1072);
    /* the profiling run's DeltaNet layers are vLLM's (layers/deltanet.c gdn_emit_vllm_profile: the core
     * returns at once, "V1 profile run"): per layer a zeroed core_attn_out and the norm's output, [8192,
     * 4096] bf16, 64 MiB each. transformers' chunked rule over the 1024 dummy requests of 8 tokens
     * (each padded to a chunk of 64) would hold [1024 x 32 heads, 64, 64] fp32 matrices, 512 MiB each,
     * dozens of them: the run stays under 2 GiB above the weights (the language model phase, less the vision
     * encoder's dummy inputs and outputs it holds: src/engine/serve_mm.c) */
    assert_true(r.profile_lm - r.mm_inputs - r.mm_outputs - r.weights < (INT64_C(2) << 30));
    r = serve(HF "qwen3-next-80b-a3b-instruct.json", "b200", 0.95, 2048, 256);
    assert_int_equal(r.state_layers, 36);
    assert_int_equal(r.state_bytes, 1097728);
    assert_int_equal(r.block_size, 544);
    assert_int_equal(r.page_bytes, 13369344);
    assert_true(r.kv_cache > 0);
    assert_int_equal(r.blocks, r.kv_cache / 13369344);
    assert_int_equal(r.concurrency, r.blocks / 7);
    assert_int_equal(r.tokens, r.blocks / 4 * 544);
    /* vLLM reads the language model's keys from text_config (hf_text_config): its rotary cos/sin cache,
     * max_position_embeddings 262144 x rotary_dim 64 (256 x 0.25) in bf16 = 33,554,432 bytes, is in the
     * weights beside the parameters (the weights of an inference estimate in bf16), and a request past
     * those 262,144 positions is refused naming --prompt */
    {
        vc_model *m = load(HF "qwen3.6-35b-a3b.json");
        vc_options o;
        vc_options_init(&o);
        o.mode = VC_MODE_INFER;
        o.precision = VC_PREC_BF16;
        vc_result e;
        vc_error err;
        assert_int_equal(vc_estimate(m, &o, &e, &err), VC_OK);
        r = serve(HF "qwen3.6-35b-a3b.json", "h200", 0.9, 0, 0);
        assert_int_equal(r.weights - e.memory.weights, INT64_C(262144) * 64 * 2);
        vc_result_free(&e);
        o.mode = VC_MODE_TRAIN;
        o.prompt = 262144;
        o.new_tokens = 1;
        vc_serve_options so;
        vc_serve_options_init(&so);
        vc_gpu_spec g;
        assert_int_equal(vc_gpu_parse("h200", &g, &err), VC_OK);
        assert_int_equal(vc_serve(m, &o, &so, &g, &r, &err), VC_ERR_USAGE);
        assert_string_equal(CLI_PATH(&err), "--prompt");
        vc_model_free(m);
    }
    /* an attention model keeps its block size and has no state */
    r = serve(HF "qwen3-8b.json", "h200", 0.9, 0, 0);
    assert_int_equal(r.state_layers, 0);
    assert_int_equal(r.block_size, 16);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_small),
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_serve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
