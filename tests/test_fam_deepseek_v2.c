/*
 * test_fam_deepseek_v2.c — the deepseek_v2 row (issue 31; src/hf/hf.c, src/hf/hf_deepseek_v2.c,
 * layers/mla.c complex_rope, layers/llm.c SparseMoE style deepseek_v2).
 *
 * 1. Parameter counts, exact, from the module shapes of transformers' modeling_deepseek_v2.py
 *    @ 0233e509531ace915c8241b4c16c8032a583279c (DeepseekV2ForCausalLM.named_parameters()),
 *    computed by ds2_count below tensor by tensor:
 *      DeepseekV2Attention: q_proj [NH (nope + rope), H] when q_lora_rank is None, else q_a_proj
 *        [q_lora, H], q_a_layernorm [q_lora], q_b_proj [NH (nope + rope), q_lora];
 *        kv_a_proj_with_mqa [kv_lora + rope, H], kv_a_layernorm [kv_lora], kv_b_proj
 *        [NH (nope + v), kv_lora], o_proj [H, NH v] (attention_bias false: no biases);
 *      DeepseekV2DecoderLayer: input_layernorm, post_attention_layernorm [H] each; DeepseekV2MLP
 *        (gate/up/down [I, H]) below first_k_dense_replace, DeepseekV2Moe from it on: experts
 *        gate_up_proj [E, 2 moe_I, H], down_proj [E, H, moe_I], gate [E, H], shared_experts a
 *        DeepseekV2MLP of moe_I x n_shared_experts;
 *      DeepseekV2Model: embed_tokens [V, H], norm [H]; lm_head [V, H] (untied).
 *    - DeepSeek-V2-Lite (tests/data/hf/deepseek-v2-lite.json: deepseek-ai/DeepSeek-V2-Lite-Chat's
 *      config.json as transformers printed it on load, snapshot 85864749; V2-Lite and its Chat share
 *      the shape): 15,706,484,224, the model card's "15.7B" (the same shape as
 *      deepseek-v2-lite-shape.json's deepseek_v3 row, test_hf test_mla);
 *    - DeepSeek-V2.5 (tests/data/hf/deepseek-v2.5.json: deepseek-ai/DeepSeek-V2.5's config.json,
 *      DeepSeek-V2's shape: 60 layers, 160 experts, q_lora_rank 1536): 235,741,434,880, the model
 *      card's "236B".
 * 2. A tiny config by hand: test_hf's MLA tiny config (vocab 1000, hidden 64, 2 layers, 4 heads,
 *    q_lora_rank 32, kv_lora_rank 16, nope 8, rope 4, v 8, 8 experts of 16, one dense layer of
 *    128, one shared expert): 197,024 parameters (q_proj instead: 195,936), DeepSeek-V3's tensors
 *    less the correction bias (a buffer there, absent here).
 * 3. generate keeps transformers' DynamicCache of full heads (key_states [B, NH, S, nope + rope],
 *    value_states [B, NH, S, v]); --serve vLLM's MLA latent (vllm/model_executor/models/
 *    deepseek_v2.py serves deepseek_v2 with DeepseekV2MLAAttention: MLAAttentionSpec of
 *    kv_lora_rank + qk_rope_head_dim per token, one head).
 * 4. Every bad or inconsistent value of the row's keys exits naming the key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vramcalc/vramcalc.h"
#include "cli_spelt.h"

#define HF VC_TEST_DATA "/hf/"

static vc_model *load(const char *file)
{
    char path[512];
    snprintf(path, sizeof path, HF "%s", file);
    vc_error err;
    vc_model *m = NULL;
    if (vc_model_load_file_hf(path, NULL, &m, &err) != VC_OK) fail_msg("%s: %s: %s", file, err.path, err.msg);
    return m;
}

static vc_status load_js(const char *js, const vc_hf_options *o, vc_model **m, vc_error *err)
{
    *m = NULL;
    return vc_model_load_string_hf(js, strlen(js), "config.json", o, m, err);
}

/* DeepseekV2ForCausalLM's parameters from the module shapes (see the header). */
static int64_t ds2_count(int64_t V, int64_t H, int64_t N, int64_t NH, int64_t ql, int64_t kvl, int64_t nope, int64_t rope,
                         int64_t v, int64_t I, int64_t mI, int64_t E, int64_t shared, int64_t dense)
{
    int64_t q = ql ? ql * H + ql + NH * (nope + rope) * ql : NH * (nope + rope) * H;
    int64_t attn = q + (kvl + rope) * H + kvl + NH * (nope + v) * kvl + NH * v * H;
    int64_t mlp = 3 * H * I, moe = E * 2 * mI * H + E * H * mI + E * H + 3 * H * mI * shared;
    return 2 * V * H + H + N * (attn + 2 * H) + dense * mlp + (N - dense) * moe;
}

static void test_real_counts(void **state)
{
    (void)state;
    vc_model *m = load("deepseek-v2-lite.json");
    int64_t lite = ds2_count(102400, 2048, 27, 16, 0, 512, 128, 64, 128, 10944, 1408, 64, 2, 1);
    assert_int_equal(lite, INT64_C(15706484224));
    assert_int_equal(vc_model_parameters(m), lite);
    vc_model_free(m);
    m = load("deepseek-v2.5.json");
    int64_t v25 = ds2_count(102400, 5120, 60, 128, 1536, 512, 128, 64, 128, 12288, 1536, 160, 2, 1);
    assert_int_equal(v25, INT64_C(235741434880));
    assert_int_equal(vc_model_parameters(m), v25);
    /* no e_score_correction_bias (DeepseekV2Moe has none), the group-limited routing written */
    const char *js = vc_model_generated_json(m);
    assert_null(strstr(js, "e_score_correction_bias"));
    assert_non_null(strstr(js, "\"group_limited_greedy\""));
    assert_non_null(strstr(js, "\"complex_rope\""));
    vc_model_free(m);
}

static const char *const tiny[][2] = {
    {"vocab_size", "1000"}, {"hidden_size", "64"}, {"intermediate_size", "128"}, {"num_hidden_layers", "2"},
    {"num_attention_heads", "4"}, {"q_lora_rank", "32"}, {"kv_lora_rank", "16"}, {"qk_nope_head_dim", "8"},
    {"qk_rope_head_dim", "4"}, {"v_head_dim", "8"}, {"n_routed_experts", "8"}, {"num_experts_per_tok", "2"},
    {"n_group", "2"}, {"topk_group", "1"}, {"moe_intermediate_size", "16"}, {"first_k_dense_replace", "1"},
    {"n_shared_experts", "1"}, {"topk_method", "\"group_limited_greedy\""}, {"routed_scaling_factor", "16.0"},
};

/* The tiny deepseek_v2 config, key k (NULL: none) set to v (replacing or adding it). */
static void tiny_js(char *js, size_t n, const char *k, const char *v)
{
    size_t at = (size_t)snprintf(js, n, "{\"model_type\":\"deepseek_v2\"");
    bool seen = false;
    for (size_t i = 0; i < sizeof tiny / sizeof *tiny; i++) {
        bool mine = k && !strcmp(k, tiny[i][0]);
        seen |= mine;
        at += (size_t)snprintf(js + at, n - at, ",\"%s\":%s", tiny[i][0], mine ? v : tiny[i][1]);
    }
    if (k && !seen) at += (size_t)snprintf(js + at, n - at, ",\"%s\":%s", k, v);
    snprintf(js + at, n - at, "}");
}

static int64_t count_of(const char *js)
{
    vc_model *m = NULL;
    vc_error err;
    if (load_js(js, NULL, &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
    int64_t n = vc_model_parameters(m);
    vc_model_free(m);
    return n;
}

static void test_tiny(void **state)
{
    (void)state;
    char js[1024];
    tiny_js(js, sizeof js, NULL, NULL);
    assert_int_equal(ds2_count(1000, 64, 2, 4, 32, 16, 8, 4, 8, 128, 16, 8, 1, 1), 197024);
    assert_int_equal(count_of(js), 197024);
    tiny_js(js, sizeof js, "q_lora_rank", "null");
    assert_int_equal(count_of(js), 195936);
    tiny_js(js, sizeof js, "topk_method", "\"greedy\""); /* the groups unread: the same tensors */
    assert_int_equal(count_of(js), 197024);
    /* generate: DynamicCache keeps key_states [B, 4, S, 12] and value_states [B, 4, S, 8] per
     * layer; 16 + 4 - 1 = 19 tokens x 2 layers x 4 heads x 20 x 4 bytes (fp32) */
    tiny_js(js, sizeof js, NULL, NULL);
    vc_model *m = NULL;
    vc_error err;
    assert_int_equal(load_js(js, NULL, &m, &err), VC_OK);
    vc_options o;
    vc_options_init(&o);
    o.mode = VC_MODE_GENERATE;
    o.prompt = 16;
    o.new_tokens = 4;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("%s: %s", err.path, err.msg);
    assert_int_equal(r.generate.kv_cache, 19 * 2 * 4 * 20 * 4);
    assert_int_equal(r.generate.kv_mla, 2);
    vc_result_free(&r);
    static const vc_mode modes[] = {VC_MODE_TRAIN, VC_MODE_INFER};
    for (size_t i = 0; i < 2; i++) {
        vc_options_init(&o);
        o.mode = modes[i];
        o.batch = 2;
        o.precision = i ? VC_PREC_BF16 : VC_PREC_AMP_BF16;
        if (vc_estimate(m, &o, &r, &err)) fail_msg("%s: %s", err.path, err.msg);
        assert_true(r.memory.peak_allocated > r.memory.weights);
        vc_result_free(&r);
    }
    /* --serve: vLLM's MLAAttentionSpec, kv_lora_rank + qk_rope_head_dim = 20 per token and layer,
     * one head, bf16: 16 tokens x 2 layers x 20 x 2 bytes per block */
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_gpu_spec h100;
    assert_int_equal(vc_gpu_parse("h100-80gb", &h100, &err), VC_OK);
    vc_options_init(&o);
    o.precision = VC_PREC_BF16;
    o.prompt = 64;
    o.new_tokens = 64;
    vc_serve_result sr;
    if (vc_serve(m, &o, &so, &h100, &sr, &err)) fail_msg("serve: %s", err.msg);
    assert_int_equal(sr.page_bytes, 16 * 2 * 20 * 2);
    assert_int_equal(sr.latent_layers, 2);
    assert_int_equal(sr.latent, 20);
    vc_model_free(m);
    /* per_expert (transformers 4.x's experts): refused, naming the option */
    vc_hf_options ho;
    vc_hf_options_init(&ho);
    ho.experts = VC_EXPERTS_PER_EXPERT;
    assert_int_equal(load_js(js, &ho, &m, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--experts-implementation");
}

static void test_bad_keys(void **state)
{
    (void)state;
    static const struct {
        const char *key, *value, *path;
    } bad[] = {
        {"topk_method", "\"noaux_tc\"", "topk_method"},  /* DeepSeek-V3's: not DeepseekV2Moe's */
        {"topk_method", "null", "topk_method"},          /* None: topk_weight unbound */
        {"topk_method", "1", "topk_method"},
        {"n_group", "3", "n_group"},                     /* 8 experts do not split into 3 groups */
        {"n_group", "null", "n_group"},                  /* group_limited_greedy with None groups */
        {"topk_group", "null", "topk_group"},
        {"topk_group", "3", "topk_group"},               /* more than n_group */
        {"n_shared_experts", "null", "n_shared_experts"}, /* no shared_experts module, forward needs it */
        {"n_shared_experts", "0", "n_shared_experts"},
        {"moe_layer_freq", "2", "moe_layer_freq"},
        {"scoring_func", "\"sigmoid\"", "scoring_func"},
        {"mlp_bias", "true", "mlp_bias"},
        {"qk_rope_head_dim", "5", "qk_rope_head_dim"},
        {"num_key_value_heads", "2", "num_key_value_heads"},
        {"num_experts_per_tok", "null", "num_experts_per_tok"}, /* DeepseekV2Config's None: topk(k=None) */
        {"num_experts_per_tok", "9", "num_experts_per_tok"},    /* more than the 8 experts */
        {"routed_scaling_factor", "-1", "routed_scaling_factor"},
        {"first_k_dense_replace", "-1", "first_k_dense_replace"},
        {"q_lora_rank", "0", "q_lora_rank"},
        {"kv_lora_rank", "\"512\"", "kv_lora_rank"},
        {"norm_topk_prob", "1", "norm_topk_prob"},
        {"rope_scaling", "{\"type\":\"nope\"}", "rope_scaling.rope_type"},
    };
    char js[1024];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        vc_model *m = NULL;
        vc_error err;
        tiny_js(js, sizeof js, bad[i].key, bad[i].value);
        assert_int_equal(load_js(js, NULL, &m, &err), VC_ERR_MODEL);
        assert_null(m);
        if (strcmp(err.path, bad[i].path)) fail_msg("%s %s: path %s (%s)", bad[i].key, bad[i].value, err.path, err.msg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_counts),
        cmocka_unit_test(test_tiny),
        cmocka_unit_test(test_bad_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
