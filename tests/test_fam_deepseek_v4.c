/*
 * test_fam_deepseek_v4.c — DeepSeek-V4 (model_type "deepseek_v4", issue 31; src/hf/hf_deepseek_v4.c): a count-only
 * family. The exact parameter count of DeepseekV4ForCausalLM (sum(p.numel() for p in model.parameters()), buffers
 * excluded) by hand from the __init__s of modeling_deepseek_v4.py @ 019760818965c71b0a4d38e95820ee0b6cee4240 and
 * DeepseekV4Config (configuration_deepseek_v4.py @ 015c078164151a049126942989817713e83a8f3e); every memory mode
 * but --serve refused with the count in its one line; each bad key named. No replica (the transformers model is not
 * estimated). What vLLM caches (vc__hf_deepseek_v4_vllm) is checked by hand in test_vllm, its --serve
 * (src/engine/serve_dsv4.c: the weights per rank, the profiling run, the pool, the pages per request) in test_serve.
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
    static const char *const modes[] = {"", " -m train", " -m infer", " -m generate", " -f json", " --lora 8"};
    char a[512];
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        snprintf(a, sizeof a, HF "deepseek-v4-flash.json%s", modes[i]);
        assert_usage(a, "deepseek_v4: the compressed attention (CSA/HCA), hyper-connections and hash-MoE are not "
                        "modelled for training or transformers' inference; the parameter count is exact: 284332230231 "
                        "parameters (DeepseekV4ForCausalLM's named_parameters(), buffers excluded); --serve estimates "
                        "vLLM's engine for it");
    }
    /* --serve reads V4-Flash-Base's config, which has no quantization_config: vLLM's attention reads its scale_fmt */
    assert_usage(HF "deepseek-v4-flash.json --serve --gpu h100-80gb",
                 "quantization_config: vLLM's DeepseekV4Attention reads quantization_config[\"scale_fmt\"]");
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
    const vc_hf_v4_rank one = {1, 0, 0, 2};
    int rc = vc__hf_deepseek_v4_vllm(&r, &one, 8192, 1048576, out);
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

/* DeepSeek-V4-Flash under vLLM --serve on 8 x H200 (tests/data/hf/deepseek-v4-flash-fp8.json: deepseek-v4-flash.json's
 * keys with the fp8 checkpoint's quantization_config as its model card gives it, V4_QC above: written here, not the
 * Hub's file; no expert_dtype: vLLM's default "fp4", MXFP4 experts), every figure by hand from the shapes in vLLM's
 * source (src/hf/hf_deepseek_v4.c vc__hf_deepseek_v4_vllm's and src/engine/serve_dsv4.c's sources). One rank of 8:
 * fp8(out, in) = out x in + cdiv(out, 128) x cdiv(in, 128) x 4 (Fp8LinearMethod's fp8 weight and float32 block scales).
 *   model: embed_tokens + lm_head 2 x (129,280 / 8 = 16,160) x 4096 x 2 = 264,765,440, norm 4096 x 2 = 8,192, hc_head
 *     (4 x 16,384 + 4 + 1) x 4 = 262,164: 265,035,796;
 *   per layer, attention: attn_sink max(64 / 8, 64) x 4 = 256, fused_wqa_wkv fp8(1536, 4096) = 6,291,456 + 12 x 32 x 4
 *     = 6,292,992, q_norm 2,048, kv_norm 1,024, wq_b fp8(4096, 1024) = 4,194,304 + 32 x 8 x 4 = 4,195,328, wo_a
 *     fp8(1024, 4096) = 4,195,328, wo_b fp8(4096, 1024) = 4,195,328: 18,882,304;
 *   attn_norm 8,192 + hc_attn / hc_ffn 2 x (24 x 16,384 + 24 + 3) x 4 = 3,145,944: 3,154,136;
 *   MoE beside the experts: norm_gate 8,192 + 256 x 4096 x 2 = 2,097,152, shared gate_up fp8(512, 4096) = 2,097,152
 *     + 4 x 32 x 4 = 2,097,664, down fp8(4096, 256) = 1,048,576 + 32 x 2 x 4 = 1,048,832: 5,251,840;
 *   routed experts (Mxfp4MoEMethod on Hopper's Triton backend: I / 8 = 256, a multiple of 64, H 4096 kept; float32
 *     biases): 256 x (512 x (2048 + 128) + 4096 x (128 + 8) + (512 + 4096) x 4) = 256 x 1,689,600 = 432,537,600;
 *   routing: tid2eid 3 x 129,280 x 6 x 4 = 9,308,160 (num_hash_layers 3), e_score_correction_bias 40 x 256 x 4 =
 *     40,960: 9,349,120;
 *   a CSA layer's compressor: ape 4 x 1024 x 4 = 16,384, fused_wkv_wgate 2048 x 4096 x 2 = 16,777,216, norm 1,024:
 *     16,794,624; its indexer: wq_b fp8(8192, 1024) = 8,388,608 + 64 x 8 x 4 = 8,390,656, weights_proj 64 x 4096 x 2 =
 *     524,288, k_norm 2 x 128 x 4 = 1,024, its compressor 4 x 256 x 4 + 512 x 4096 x 2 + 256 = 4,198,656: 13,114,624;
 *     29,909,248 a CSA layer; an HCA layer's compressor 128 x 512 x 4 + 1024 x 4096 x 2 + 1,024 = 8,651,776;
 *   265,035,796 + 43 x (18,882,304 + 3,154,136 + 5,251,840 + 432,537,600) + 9,349,120 + 21 x 29,909,248 + 20 x
 *     8,651,776 = 20,848,027,484 bytes; with the top-k buffer 8192 x 512 x 4 = 16,777,216 and the MTP buffer 8192 x 4 x
 *     4096 x 2 = 268,435,456 (285,212,672): 21,133,240,156 weights.
 *   The profiling run: the workspace the larger of the attention's 4 x (262,144 + 128 + 8192) x 512 x 2 = 1,107,820,544
 *     and the indexer's 10,485,760 keys (1,048,576 x 40 / 4) x (128 + 4) + 1 MiB = 1,385,168,896; the live tensors at the
 *     attention: the streams 2 x 8192 x 4 x 4096 x 2 = 536,870,912, the input 8192 x 4096 x 2 = 67,108,864, qkv 8192 x
 *     1536 x 2 = 25,165,824, q 8192 x 8 x 512 x 2 = 67,108,864, o_padded 8192 x 64 x 512 x 2 = 536,870,912, the
 *     indexer's 512 MiB dummy: 1,769,996,288 (the MoE's 1,082,130,432 and the sampler's 1024 x 129,280 x 6 =
 *     794,296,320 are less); peak 21,133,240,156 + 1,385,168,896 + 1,769,996,288 = 24,288,405,340.
 *   One request of 1024 + 256 = 1280 tokens: compressed pages cdiv(1280, 256) = 5 x 1,002,240 = 5,011,200; sliding
 *     pages 43 x (cdiv(min(127 + 8192, 1280), 64) + 1 = 21) x 37,440 = 33,808,320; states 21 x (cdiv(1280, 4) + 1 = 321)
 *     x (32,832 + 8,640) + 20 x (cdiv(1280, 8) + 1 = 161) x 32,832 = 385,281,792: 424,101,312 bytes a request. */
static void test_serve(void **state)
{
    (void)state;
    vc_hf_v4_vllm v;
    cJSON *cfg = edited(slurp(HF "deepseek-v4-flash-fp8.json"), NULL);
    vc_error err;
    memset(&err, 0, sizeof err);
    rd r = {cfg, &err, "deepseek_v4", false, 1, NULL};
    const vc_hf_v4_rank h200 = {8, 64, 0, 4}; /* Hopper: Mxfp4MoEMethod's TRITON backend */
    assert_int_equal(vc__hf_deepseek_v4_vllm(&r, &h200, 8192, 1048576, &v), 0);
    assert_int_equal(v.experts, INT64_C(43) * 432537600);
    assert_int_equal(v.weights, INT64_C(20848027484));
    /* fp8 experts (expert_dtype "fp8", Fp8MoEMethod): 256 x (fp8(512, 4096) + fp8(4096, 256)) a layer */
    cJSON_AddStringToObject(cfg, "expert_dtype", "fp8");
    assert_int_equal(vc__hf_deepseek_v4_vllm(&r, &h200, 8192, 1048576, &v), 0);
    assert_int_equal(v.experts, INT64_C(43) * 256 * (2097664 + 1048832));
    cJSON_Delete(cfg);
    const char *run = HF "deepseek-v4-flash-fp8.json --serve --gpu h200 --tp 8 --gpus 8";
    assert_int_equal(cli_json_num(run, "serve", "weights"), INT64_C(21133240156));
    assert_int_equal(cli_json_num(run, "serve", "profile_peak"), INT64_C(24288405340));
    assert_int_equal(cli_json_num(run, "serve", "request_tokens"), 1280);
    char a[512];
    snprintf(a, sizeof a, "%s -f json", run);
    cJSON *j = cJSON_Parse(cli_output(a));
    const cJSON *sv = cJSON_GetObjectItemCaseSensitive(j, "serve");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(sv, "deepseek_v4");
    static const struct { const char *key; int64_t want; } fig[] = {
        {"sliding_only_layers", 2}, {"csa_layers", 21}, {"hca_layers", 20},
        {"csa_bytes_per_block", 46080}, {"hca_bytes_per_block", 1728}, /* 180 and 6.75 bytes a token */
        {"sliding_bytes_per_request", 33808320}, {"state_bytes_per_request", 385281792},
        {"bytes_per_request", 424101312}, {"buffers", 285212672}, {"workspace", 1385168896},
        {"activations", 1769996288},
    };
    for (size_t i = 0; i < sizeof fig / sizeof fig[0]; i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(d, fig[i].key);
        if (!cJSON_IsNumber(x) || (int64_t)x->valuedouble != fig[i].want)
            fail_msg("deepseek_v4.%s: expected %lld", fig[i].key, (long long)fig[i].want);
    }
    /* the pool over one request's pages: concurrency = kv_cache / 424,101,312, the tokens and blocks they hold */
    const int64_t kv = (int64_t)cJSON_GetObjectItemCaseSensitive(sv, "kv_cache")->valuedouble;
    assert_true(kv > 0);
    assert_int_equal((int64_t)cJSON_GetObjectItemCaseSensitive(sv, "concurrency")->valuedouble, kv / 424101312);
    assert_int_equal((int64_t)cJSON_GetObjectItemCaseSensitive(sv, "tokens")->valuedouble, kv / 424101312 * 1280);
    assert_int_equal((int64_t)cJSON_GetObjectItemCaseSensitive(sv, "blocks")->valuedouble, kv / 424101312 * 5);
    assert_int_equal((int64_t)cJSON_GetObjectItemCaseSensitive(sv, "page_bytes")->valuedouble, 1002240);
    /* the CUDA graphs: their 1 MiB-a-graph floor taken off (50 + 50 graphs past each mode's first) */
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(sv, "cuda_graphs");
    assert_int_equal((int64_t)cJSON_GetObjectItemCaseSensitive(g, "subtracted")->valuedouble, INT64_C(100) << 20);
    cJSON_Delete(j);

    /* each option DeepSeek-V4's serving does not take, named (exit 2) */
    static const fam_refusal opts[] = {
        {"--serve --gpu h200 --block-size 64", "block-size: vLLM sets DeepSeek-V4's block sizes itself"},
        {"--serve --gpu h200 --kv-cache-dtype bf16", "DeepseekV4 only supports fp8 kv-cache format"},
        {"--serve --gpu h200 -p fp16", "DeepSeek-V4 under vLLM is modelled in bf16 alone"},
        {"--serve --gpu h200 --weights fp8", "weights: DeepSeek-V4's weights are what its quantization_config loads"},
        {"--serve --gpu h200 --cuda-graph-memory estimate", "estimate: not derived for this model"},
        {"--serve --gpu mi300x", "DeepSeek-V4 on ROCm takes other paths"},
        {"--serve --gpu h200 --tp 3 --gpus 3", "vLLM cannot split DeepSeek-V4's num_attention_heads that many ways"},
        {"--serve --gpu h200 --tp 16 --gpus 16", "vLLM cannot split DeepSeek-V4's o_groups that many ways"}, /* 8 groups */
        {"--serve --gpu h200 --prompt 1048576", "pass the model's length, 1048576"},
        {"--serve --gpu h100-80gb", "no memory is left for the KV cache"},
        {"--serve --gpu h200", "take 149.44 GiB in bf16"}, /* one rank: the fit check in its one precision */
        /* read by the other families' serving, not by this one's (serve_dsv4.c refusals): refused, never ignored */
        {"--serve --gpu h200 --moe-imbalance 2", "moe-imbalance: DeepSeek-V4's serving is computed from its config"},
        {"--serve --gpu h200 --experts-implementation per_expert", "experts-implementation: DeepSeek-V4's serving"},
        {"--serve --gpu h200 --transformers 4.57", "transformers: DeepSeek-V4's serving is computed"},
        {"--serve --gpu h200 --torch 2.6", "torch: DeepSeek-V4's serving is computed"},
    };
    fam_refuse_options(HF "deepseek-v4-flash-fp8.json", opts, sizeof opts / sizeof opts[0]);
    static const fam_refusal keys[] = {
        {"\"quantization_config\": {\"scale_fmt\": \"ue8m0\", \"quant_method\": \"awq\"}", "quantization_config.quant_method"},
        {"\"quantization_config\": {\"scale_fmt\": \"ue8m0\", \"weight_block_size\": [64, 64]}",
         "quantization_config.weight_block_size"},
        {"\"quantization_config\": {\"scale_fmt\": \"ue8m0\"}, \"expert_dtype\": \"int4\"", "expert_dtype"},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) { /* the config's keys vLLM reads, under --serve */
        char path[] = "/tmp/vc_famXXXXXX", body[1024];
        snprintf(body, sizeof body, "{\"model_type\": \"deepseek_v4\", \"num_hidden_layers\": 2, \"compress_ratios\": "
                 "[4, 128], \"max_position_embeddings\": 4096, %s}", keys[i].in);
        fam_write(path, body);
        snprintf(a, sizeof a, "%s --serve --gpu h200", path);
        assert_usage(a, keys[i].want);
        remove(path);
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
        cmocka_unit_test(test_serve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
