/*
 * test_fam_deepseek_v4.c — DeepSeek-V4 (model_type "deepseek_v4", issue 31; src/hf/hf_deepseek_v4.c): a count-only
 * family. The exact parameter count of DeepseekV4ForCausalLM (sum(p.numel() for p in model.parameters()), buffers
 * excluded) by hand from the __init__s of modeling_deepseek_v4.py @ 019760818965c71b0a4d38e95820ee0b6cee4240 and
 * DeepseekV4Config (configuration_deepseek_v4.py @ 015c078164151a049126942989817713e83a8f3e); every memory mode
 * refused with the count in its one line; each bad key named. No replica: nothing of its memory is estimated. What
 * vLLM would cache (vc__hf_deepseek_v4_vllm, not yet wired into vc_serve) is checked by hand in test_vllm.
 *
 * The buffers, not counted: the rotary embeddings' {main,compress}_inv_freq and _original_inv_freq (the model's and
 * every compressor's and indexer's), DeepseekV4TopKRouter.e_score_correction_bias [E], DeepseekV4HashRouter.tid2eid
 * [vocab, top_k] (persistent, int64: in the checkpoint, not a parameter).
 * The counts below (tiny 3,467; V4-Flash; V4-Pro) were also checked against a torch 1.13 transcription of those
 * __init__s built on the meta device (sum(p.numel() for p in model.parameters())): the same three numbers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "fam_hf.h"
#include "hf_arch.h"

#define HF VC_TEST_DATA "/hf/"

/* The config string js with the keys of the object edit (NULL: none) set over its own */
static cJSON *edited(const char *js, const char *edit)
{
    cJSON *cfg = cJSON_Parse(js);
    assert_non_null(cfg);
    cJSON *ed = edit ? cJSON_Parse(edit) : NULL;
    assert_true(!edit || cJSON_IsObject(ed));
    for (cJSON *e = ed ? ed->child : NULL; e; e = e->next) {
        cJSON_DeleteItemFromObjectCaseSensitive(cfg, e->string);
        cJSON_AddItemToObject(cfg, e->string, cJSON_Duplicate(e, true));
    }
    cJSON_Delete(ed);
    return cfg;
}

/* vc__hf_deepseek_v4_count over the config string js with the keys of edit set over its own: the count, or -1 with
 * the key the error names in *key */
static int64_t v4_count(const char *js, const char *edit, char *key, size_t n)
{
    cJSON *cfg = edited(js, edit);
    vc_error err;
    memset(&err, 0, sizeof err);
    rd r = {cfg, &err, "deepseek_v4", false, 1, NULL};
    int64_t params = -1;
    if (vc__hf_deepseek_v4_count(&r, &params)) {
        snprintf(key, n, "%s", CLI_PATH(&err));
        params = -1;
    }
    cJSON_Delete(cfg);
    return params;
}

static int64_t count_ok(const char *js)
{
    char key[128] = "";
    int64_t n = v4_count(js, NULL, key, sizeof key);
    if (n < 0) fail_msg("%s refused naming %s", js, key);
    return n;
}

static char *slurp(const char *path)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    static char buf[16384];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = 0;
    return buf;
}

/* A tiny config, every module's shapes by hand (V 10, H 8, moe_intermediate_size I 4, 3 layers, 2 heads of head_dim
 * 8, q_lora_rank 4, 2 experts, o_groups 2, o_lora_rank 3, index_n_heads 2, index_head_dim 4, hc_mult n 2,
 * compress_rates csa 2 / hca 4, layer_types sliding, CSA, HCA):
 *   attention: q_a_proj 8x4 = 32, q_a_norm 4, q_b_proj 4x(2x8) = 64, kv_proj 8x8 = 64, kv_norm 8, o_a_proj
 *     [2x3, 16 / 2] = 48, o_b_proj 6x8 = 48, sinks 2: 270;
 *   MoE: gate.weight 2x8 = 16, experts.gate_up_proj 2x(2x4)x8 = 128, experts.down_proj 2x8x4 = 64, shared_experts
 *     3x8x4 = 96: 304; input_layernorm + post_attention_layernorm 16;
 *   attn_hc and ffn_hc: fn [(2+2)x2, 2x8] = 128, base 8, scale 3: 2 x 139 = 278; per layer 270 + 304 + 16 + 278 = 868;
 *   CSA compressor: kv_proj, gate_proj 8x16 = 2 x 128, position_bias 2x16 = 32, kv_norm 8: 296; its indexer: kv_proj,
 *     gate_proj 8x8 = 2 x 64, position_bias 2x8 = 16, kv_norm 4, q_b_proj 4x(2x4) = 32, scorer.weights_proj 8x2 = 16:
 *     196; 492 in all;
 *   HCA compressor: kv_proj, gate_proj 8x8 = 2 x 64, position_bias 4x8 = 32, kv_norm 8: 168;
 *   the model: embed_tokens 80, lm_head 80, norm 8, hc_head (hc_fn 2x16 = 32, hc_base 2, hc_scale 1) 35: 203;
 *   203 + 3 x 868 + 492 + 168 = 3467; tied (tie_word_embeddings: lm_head is embed_tokens) 3467 - 80 = 3387. */
#define TINY_HEAD                                                                                                       \
    "{\"model_type\": \"deepseek_v4\", \"vocab_size\": 10, \"hidden_size\": 8, \"moe_intermediate_size\": 4, "          \
    "\"num_hidden_layers\": 3, \"num_attention_heads\": 2, \"head_dim\": 8, \"q_lora_rank\": 4, "                       \
    "\"n_routed_experts\": 2, \"num_experts_per_tok\": 1, \"o_groups\": 2, \"o_lora_rank\": 3, \"index_n_heads\": 2, " \
    "\"index_head_dim\": 4, \"hc_mult\": 2, \"qk_rope_head_dim\": 2, "                                          \
    "\"compress_rates\": {\"compressed_sparse_attention\": 2, \"heavily_compressed_attention\": 4}"
#define TINY_TYPES                                                                                                      \
    ", \"layer_types\": [\"sliding_attention\", \"compressed_sparse_attention\", \"heavily_compressed_attention\"], "    \
    "\"mlp_layer_types\": [\"hash_moe\", \"moe\", \"moe\"]"

static void test_counts(void **state)
{
    (void)state;
    assert_int_equal(count_ok(TINY_HEAD TINY_TYPES "}"), 3467);
    assert_int_equal(count_ok(TINY_HEAD TINY_TYPES ", \"tie_word_embeddings\": true}"), 3387);
    /* the legacy per-layer compress_ratios (0 / 4 / 128 as the checkpoints ship them, the MTP layer's last entry cut):
     * 0, 4, 128 is the same schedule (compress_rates csa 2 / hca 4 still size the position biases) */
    assert_int_equal(count_ok(TINY_HEAD ", \"compress_ratios\": [0, 4, 128, 0]}"), 3467);
    /* the default schedule: two HCA layers then HCA / CSA alternating; 3 layers: HCA, HCA, HCA = 203 + 3 x (868 + 168) */
    assert_int_equal(count_ok(TINY_HEAD "}"), 203 + 3 * (868 + 168));
    /* mlp_bias: the shared expert's gate_proj, up_proj (4 each) and down_proj (8) biases, 16 per layer */
    assert_int_equal(count_ok(TINY_HEAD TINY_TYPES ", \"mlp_bias\": true}"), 3467 + 3 * 16);
    /* DeepseekV4Config's defaults (V4-Flash-Base's dimensions, the default schedule: 23 HCA and 20 CSA layers):
     * 284,325,869,015 by hand (the Python of the formula above over the class defaults) */
    assert_int_equal(count_ok("{\"model_type\": \"deepseek_v4\"}"), INT64_C(284325869015));
}

/* The checkpoints. tests/data/hf/deepseek-v4-flash.json and deepseek-v4-pro.json are NOT the Hub's files (no network
 * here): their keys as public sources quote config.json — V4-Flash-Base's from the "authoritative DeepSeek-V4-Flash-
 * Base config (as published on HF)" a public rtp-llm test inlines (compress_ratios 0, 0, then 4 / 128 alternating,
 * a trailing 0 for the MTP layer: 2 sliding, 21 CSA, 20 HCA layers); V4-Pro's from a public script inlining the
 * config (hidden_size 7168, 61 layers, 128 heads, q_lora_rank 1536, 384 experts of 3072, o_groups 16, index_topk
 * 1024; compress_ratios 128, 128, then 4 / 128 alternating, a trailing 0: 30 CSA, 31 HCA layers), the same dimensions
 * other public code quotes (unverified against the Hub). Published totals (DeepSeek's release, 2026-04-24):
 * V4-Flash 284B total (13B active), V4-Pro 1.6T total (49B active).
 *   V4-Flash: per layer attention 106,956,352, MoE 6,468,665,344 (router 1,048,576, experts 6,442,450,944, shared
 *   25,165,824), norms 8,192, hyper-connections 2 x 393,243: 6,576,416,374; CSA 19,142,272 (compressor 8,393,216 +
 *   indexer 10,749,056); HCA 4,260,352; model 1,059,131,397 (embed_tokens + lm_head 2 x 529,530,880, norm 4,096,
 *   hc_head 65,541): 1,059,131,397 + 43 x 6,576,416,374 + 21 x 19,142,272 + 20 x 4,260,352 = 284,332,230,231 (284B).
 *   V4-Pro: per layer attention 299,894,912, MoE 25,435,963,392, norms 14,336, hyper-connections 2 x 688,155:
 *   25,737,248,950; CSA 31,397,504; HCA 7,406,080; model 1,853,479,941: 1,853,479,941 + 61 x 25,737,248,950 +
 *   30 x 31,397,504 + 31 x 7,406,080 = 1,572,997,179,491 (1.57T, the "1.6T" published, rounded). */
static void test_checkpoints(void **state)
{
    (void)state;
    assert_int_equal(count_ok(slurp(HF "deepseek-v4-flash.json")), INT64_C(284332230231));
    assert_int_equal(count_ok(slurp(HF "deepseek-v4-pro.json")), INT64_C(1572997179491));
}

/* Every memory mode refused (exit 2, one line): the count, then the refusal */
static void test_refused(void **state)
{
    (void)state;
    static const char *const modes[] = {"", " -m train", " -m infer", " -m generate", " --serve --gpu h100-80gb",
                                        " -f json", " --lora 8"};
    char a[512];
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        snprintf(a, sizeof a, HF "deepseek-v4-flash.json%s", modes[i]);
        assert_usage(a, "deepseek_v4: the compressed attention (CSA/HCA), hyper-connections and hash-MoE are not "
                        "modelled yet; the parameter count is exact: 284332230231 parameters");
    }
    assert_usage(HF "deepseek-v4-pro.json", "the parameter count is exact: 1572997179491 parameters");
    vc_model *m = NULL;
    vc_error err;
    assert_int_equal(vc_model_load_file(HF "deepseek-v4-flash.json", &m, &err), VC_ERR_MODEL);
    assert_null(m);
    assert_string_equal(CLI_PATH(&err), "model_type");
}

/* Each bad or inconsistent key the count depends on, named */
static void test_bad_keys(void **state)
{
    (void)state;
    static const struct {
        const char *edit, *key;
    } bad[] = {
        {"{\"layer_types\": [\"sliding_attention\", \"compressed_sparse_attention\"]}", "layer_types"},
        {"{\"layer_types\": [\"sliding_attention\", \"full_attention\", \"sliding_attention\"]}", "layer_types[1]"},
        {"{\"layer_types\": \"sliding_attention\"}", "layer_types"},
        {"{\"mlp_layer_types\": [\"moe\", \"moe\"]}", "mlp_layer_types"},
        {"{\"mlp_layer_types\": [\"moe\", \"dense\", \"moe\"]}", "mlp_layer_types[1]"},
        {"{\"layer_types\": null, \"compress_ratios\": [0, 4]}", "compress_ratios"},
        {"{\"layer_types\": null, \"compress_ratios\": [0, 8, 128]}", "compress_ratios[1]"},
        {"{\"mlp_layer_types\": null, \"num_hash_layers\": -1}", "num_hash_layers"},
        {"{\"compress_rates\": {\"compressed_sparse_attention\": 0}}", "compress_rates.compressed_sparse_attention"},
        {"{\"compress_rates\": {\"sliding_attention\": 4}}", "compress_rates.sliding_attention"},
        {"{\"compress_rates\": [4, 128]}", "compress_rates"},
        {"{\"compress_rates\": {\"compressed_sparse_attention\": 2}}", "compress_rates.heavily_compressed_attention"},
        {"{\"compress_rate_hca\": 0}", "compress_rate_hca"},
        {"{\"o_groups\": 3}", "o_groups"},
        {"{\"hc_mult\": 0}", "hc_mult"},
        {"{\"hc_mult\": 65}", "hc_mult"},
        {"{\"partial_rotary_factor\": 0.2}", "partial_rotary_factor"}, /* int(8 x 0.2) = 1: odd */
        {"{\"partial_rotary_factor\": 1.5}", "partial_rotary_factor"},
        {"{\"qk_rope_head_dim\": 16}", "qk_rope_head_dim"}, /* more than head_dim 8 */
        {"{\"qk_rope_head_dim\": 3}", "qk_rope_head_dim"},  /* odd */
        {"{\"num_key_value_heads\": 2}", "num_key_value_heads"},
        {"{\"n_shared_experts\": 2}", "n_shared_experts"},
        {"{\"num_experts_per_tok\": 3}", "num_experts_per_tok"},
        {"{\"attention_bias\": true}", "attention_bias"},
        {"{\"tie_word_embeddings\": 1}", "tie_word_embeddings"},
        {"{\"scoring_func\": \"tanh\"}", "scoring_func"},
        {"{\"hidden_size\": 0}", "hidden_size"},
        {"{\"hidden_size\": 8.5}", "hidden_size"},
        {"{\"vocab_size\": null}", "vocab_size"},
        {"{\"sliding_window\": 1099511627777}", "sliding_window"},
        {"{\"n_routed_experts\": 1099511627776, \"moe_intermediate_size\": 1099511627776}", "hidden_size"},
    };
    char key[128];
    const char *tiny = TINY_HEAD TINY_TYPES "}";
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        key[0] = 0;
        if (v4_count(tiny, bad[i].edit, key, sizeof key) >= 0) fail_msg("%s: counted", bad[i].edit);
        if (strcmp(key, bad[i].key)) fail_msg("%s: named %s, not %s", bad[i].edit, key, bad[i].key);
    }
    /* the CLI: exit 2, the line naming the key */
    static const fam_refusal cli[] = {
        {"\"o_groups\": 5", "o_groups"}, /* 3 heads x 64 = 192 */
        {"\"layer_types\": [\"sliding_attention\"]", "layer_types"},
    };
    fam_refuse_edits("{\"model_type\": \"deepseek_v4\", \"num_hidden_layers\": 2, \"num_attention_heads\": 3, "
                     "\"head_dim\": 64, ",
                     cli, sizeof cli / sizeof cli[0]);
}

/* vc__hf_deepseek_v4_vllm over the config string js with the keys of edit set over its own, at 8192 batched tokens
 * and max_model_len 1048576 (vLLM's default, max_position_embeddings): 0, or -1 with the key named in *key */
static int v4_vllm(const char *js, const char *edit, vc_hf_v4_vllm *out, char *key, size_t n)
{
    cJSON *cfg = edited(js, edit);
    vc_error err;
    memset(&err, 0, sizeof err);
    rd r = {cfg, &err, "deepseek_v4", false, 1, NULL};
    int rc = vc__hf_deepseek_v4_vllm(&r, 8192, 1048576, out);
    if (rc) snprintf(key, n, "%s", CLI_PATH(&err));
    cJSON_Delete(cfg);
    return rc;
}

/* DeepSeek-V4-Flash's fp8 checkpoint's quantization_config as its model card gives it (not read from the Hub here: no
 * network; vLLM reads scale_fmt alone) */
#define V4_QC "{\"quantization_config\": {\"activation_scheme\": \"dynamic\", \"fmt\": \"e4m3\", \"quant_method\": " \
              "\"fp8\", \"scale_fmt\": \"ue8m0\", \"weight_block_size\": [128, 128]}}"

/* vLLM's caches by hand from the spec classes (sources in hf_deepseek_v4.c), pages rounded up to 576 bytes:
 *   every layer's sliding-window cache: 64 tokens x 584 bytes = 37,376 -> 65 x 576 = 37,440;
 *   per 256 tokens of context: a CSA layer's latent 256 / 4 = 64 entries x 584 = 37,376 -> 37,440 and its indexer's
 *   keys 64 x (128 fp8 + 128 / 128 x 4 scale bytes = 132) = 8,448 -> 15 x 576 = 8,640 (46,080: 180 bytes a token);
 *   an HCA layer's latent 256 / 128 = 2 x 584 = 1,168 -> 3 x 576 = 1,728 (6.75 bytes a token);
 *   the compressors' float32 states: CSA 4 rows x 2 x 2 x 512 x 4 = 32,768 -> 57 x 576 = 32,832, HCA 8 rows x 2 x 512 x
 *   4 = 32,768 -> 32,832, the indexer's 4 x 2 x 2 x 128 x 4 = 8,192 -> 8,640;
 *   the buffers at 8192 tokens: top-k 8192 x index_topk x 4, MTP 8192 x hc_mult 4 x hidden x 2;
 *   the profiling workspace: 4 x (cdiv(1048576, 4) + 128 + 8192 = 270,464) x 512 x 2 = 1,107,820,544. */
static void test_vllm(void **state)
{
    (void)state;
    vc_hf_v4_vllm v;
    char key[128] = "";
    assert_int_equal(v4_vllm(slurp(HF "deepseek-v4-flash.json"), V4_QC, &v, key, sizeof key), 0);
    /* compress_ratios[:43]: 0, 0, then 4 / 128 alternating */
    assert_int_equal(v.layers[0], 2);
    assert_int_equal(v.layers[1], 21);
    assert_int_equal(v.layers[2], 20);
    assert_int_equal(v.block_size, 256);
    assert_int_equal(v.window, 128);
    assert_int_equal(v.page_swa, 37440);
    assert_int_equal(v.page_compressed[1], 37440);
    assert_int_equal(v.page_compressed[2], 1728);
    assert_int_equal(v.page_indexer, 8640);
    assert_int_equal(v.page_state[1], 32832);
    assert_int_equal(v.page_state[2], 32832);
    assert_int_equal(v.page_indexer_state, 8640);
    /* 21 x 46,080 + 20 x 1,728 = 1,002,240 bytes per 256 tokens: 3,915 bytes a token of context */
    assert_int_equal(v.per_block, 1002240);
    assert_int_equal(v.topk_buffer, INT64_C(8192) * 512 * 4);
    assert_int_equal(v.mtp_buffer, INT64_C(8192) * 4 * 4096 * 2);
    assert_int_equal(v.prefill_workspace, INT64_C(1107820544));
    /* V4-Pro: compress_ratios[:61] 128, 128, then 4 / 128 alternating: 30 CSA, 31 HCA layers, none sliding-only;
     * 30 x 46,080 + 31 x 1,728 = 1,435,968 per 256 tokens; top-k 1024 wide, MTP 4 x 7168 */
    assert_int_equal(v4_vllm(slurp(HF "deepseek-v4-pro.json"), V4_QC, &v, key, sizeof key), 0);
    assert_int_equal(v.layers[0], 0);
    assert_int_equal(v.layers[1], 30);
    assert_int_equal(v.layers[2], 31);
    assert_int_equal(v.per_block, 1435968);
    assert_int_equal(v.topk_buffer, INT64_C(8192) * 1024 * 4);
    assert_int_equal(v.mtp_buffer, INT64_C(8192) * 4 * 7168 * 2);
    assert_int_equal(v.prefill_workspace, INT64_C(1107820544));
    /* HCA layers alone: the workspace's compressed keys are cdiv(1048576, 128) = 8192: 4 x (8192 + 128 + 8192) x 1024 */
    assert_int_equal(v4_vllm(slurp(HF "deepseek-v4-flash.json"),
                             "{\"num_hidden_layers\": 2, \"compress_ratios\": [128, 0], \"quantization_config\": "
                             "{\"scale_fmt\": \"ue8m0\"}}", &v, key, sizeof key), 0);
    assert_int_equal(v.prefill_workspace, INT64_C(4) * (8192 + 128 + 8192) * 1024);
    assert_int_equal(v.per_block, 1728);

    /* refused, naming the key: what vLLM reads that the config lacks or that its kernels do not take */
    static const struct { const char *edit, *key; } bad[] = {
        {"{\"hidden_act\": \"silu\"}", "quantization_config"}, /* V4-Flash-Base's config: no quantization_config */
        {"{\"quantization_config\": {\"quant_method\": \"fp8\"}}", "quantization_config"},
        {"{\"quantization_config\": {\"scale_fmt\": \"ue8m0\"}, \"compress_ratios\": null, \"layer_types\": null}",
         "compress_ratios"},
        {"{\"quantization_config\": {\"scale_fmt\": \"ue8m0\"}, \"head_dim\": 256}", "head_dim"},
        {"{\"quantization_config\": {\"scale_fmt\": \"ue8m0\"}, \"qk_rope_head_dim\": 32}", "qk_rope_head_dim"},
        {"{\"quantization_config\": {\"scale_fmt\": \"ue8m0\"}, \"index_head_dim\": 64}", "index_head_dim"},
        {"{\"quantization_config\": {\"scale_fmt\": \"ue8m0\"}, \"compress_ratios\": [0, 8]}", "compress_ratios"},
        {"{\"quantization_config\": {\"scale_fmt\": \"ue8m0\"}, \"vocab_size\": 0}", "vocab_size"}, /* the count's */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        key[0] = 0;
        assert_int_equal(v4_vllm(slurp(HF "deepseek-v4-flash.json"), bad[i].edit, &v, key, sizeof key), -1);
        if (strcmp(key, bad[i].key)) fail_msg("%s: named %s, expected %s", bad[i].edit, key, bad[i].key);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_checkpoints),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_bad_keys),
        cmocka_unit_test(test_vllm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
