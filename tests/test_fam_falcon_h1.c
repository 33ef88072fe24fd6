/*
 * test_fam_falcon_h1.c — TII Falcon-H1 (model_type falcon_h1; issue 31; src/hf/hf_granite4.c, layers/mamba2.c's
 * Mamba2Mixer with rms_norm false).
 *
 * The configs are not the checkpoints' own files, which are not in reach here (no network):
 *  - tests/data/hf/Falcon-H1-0.5B-Instruct.json: FALCON_H1_500M_CONFIG of NVIDIA Megatron-Bridge's unit test
 *    (tests/unit_tests/models/falcon_h1, a copy of the 0.5B config.json read through the code index), with
 *    mamba_d_ssm 1536 from the config.json of a FalconH1ForCausalLM fine-tune of it (MerlinSafety/
 *    HybridIntelligence-0.5B, the same sizes) because the test's copy leaves it out (the class default 1024
 *    would fail validate_architecture against mamba_d_head 64 x 24 heads);
 *  - tests/data/hf/Falcon-H1-7B-Instruct.json: the sizes a public test fixture quotes from the 7B-Instruct
 *    config.json (hidden 3072, 44 layers, 12 heads of 128, 2 kv, intermediate 12288, vocab 130048, Mamba d_ssm
 *    3072 in 24 heads of 128, state 256, 1 group, chunk 128), the transformers docs' table agreeing (depth 44,
 *    dim 3072, 12 / 2 heads, 24 Mamba heads, d_head 128 / 128, d_state 256); the muP multipliers left at the
 *    class defaults (they scale values, not sizes);
 *  - Falcon-H1-34B-Instruct: not written. The docs' table gives its depth, widths and heads but not its
 *    intermediate_size or vocab_size, which no source in reach quotes.
 *
 * 1. Parameters, exact, derived by hand from modeling_falcon_h1.py @ 68c08116's modules (every layer the same):
 *    input_layernorm + pre_ff_layernorm 2H; FalconH1Mixer in_proj H x (Di + conv_dim + heads) (no bias), conv1d
 *    conv_dim x 4 + conv_dim, dt_bias, A_log, D 3 heads, no norm (mamba_rms_norm false), out_proj Di x H (no bias);
 *    FalconH1Attention q, o H x heads x head_dim, k, v H x kv x head_dim; FalconH1MLP 3 H x I; embed_tokens and
 *    lm_head V x H each (untied), final_layernorm H:
 *    - 0.5B: Di 1536, conv_dim 1792, a layer 12,618,568; 36 layers + 2 x 32,784 x 1,024 + 1,024 = 521,411,104
 *      (published "0.5B"; the technical report's 0.52B);
 *    - 7B: Di 3072, conv_dim 3584, a layer 154,238,536; 44 layers + 2 x 130,048 x 3,072 + 3,072 = 7,585,513,568
 *      (published "7B"; 7.59B).
 * 2. The layers: each a Mamba2Mixer (rms_norm false) and a rotary attention, the multipliers as Scale layers.
 * 3. --mode generate: FalconHybridMambaAttentionDynamicCache's conv_states [conv_dim, 4] and ssm_states
 *    [24, 64, 128] for all 36 layers in bf16: 36 x (1,792 x 4 + 196,608) x 2 B = 14,671,872 B; the K/V of every
 *    layer over 1,279 tokens: 36 x 1,279 x 2 x 2 x 64 x 2 B = 23,574,528 B.
 * 4. Every bad value of a new key exits 2 naming the key; what is not modelled is refused in one line.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "cli_run.h"
#include "fam_hf.h"

#define HF VC_TEST_DATA "/hf/"
#define H05 HF "Falcon-H1-0.5B-Instruct.json"
#define H7 HF "Falcon-H1-7B-Instruct.json"

/* one FalconH1DecoderLayer by the formulas above (Mamba heads mh of mp, state n, one group; kv heads of d) */
static int64_t layer(int64_t H, int64_t I, int64_t NH, int64_t KV, int64_t d, int64_t mh, int64_t mp, int64_t n)
{
    const int64_t Di = mh * mp, CD = Di + 2 * n;
    return 2 * H + H * (Di + CD + mh) + CD * 4 + CD + 3 * mh + Di * H + 2 * H * NH * d + 2 * H * KV * d + 3 * H * I;
}

static void test_parameters(void **state)
{
    (void)state;
    assert_int_equal(layer(1024, 2048, 8, 2, 64, 24, 64, 128), INT64_C(12618568));
    assert_int_equal(layer(3072, 12288, 12, 2, 128, 24, 128, 256), INT64_C(154238536));
    const int64_t h05 = 36 * layer(1024, 2048, 8, 2, 64, 24, 64, 128) + 2 * INT64_C(32784) * 1024 + 1024;
    const int64_t h7 = 44 * layer(3072, 12288, 12, 2, 128, 24, 128, 256) + 2 * INT64_C(130048) * 3072 + 3072;
    assert_int_equal(h05, INT64_C(521411104));
    assert_int_equal(h7, INT64_C(7585513568));
    assert_int_equal(cli_json_num(H05 " -m infer -p bf16", NULL, "parameters"), h05);
    assert_int_equal(cli_json_num(H7 " -m infer -p bf16", NULL, "parameters"), h7);
}

#define SMALL                                                                                                   \
    "\"model_type\": \"falcon_h1\", \"hidden_size\": 64, \"intermediate_size\": 96, \"num_hidden_layers\": 2, " \
    "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, \"mamba_d_ssm\": 128, "         \
    "\"mamba_n_heads\": 8, \"mamba_d_head\": 16, \"mamba_d_state\": 16, \"mamba_n_groups\": 2, \"vocab_size\": 128"

static void test_layers(void **state)
{
    (void)state;
    const char *b = "{" SMALL ", \"key_multiplier\": 0.5, \"mlp_multipliers\": [2, 0.25]}";
    /* the two layers are one Sequential written once with repeat 2 (g_stack) */
    assert_int_equal(emitted(b, "\"repeat\":\t2"), 1);
    assert_int_equal(emitted(b, "\"Mamba2Mixer\""), 1);
    assert_int_equal(emitted(b, "\"rms_norm\":\tfalse"), 1); /* mamba_rms_norm false: no FalconH1RMSNormGated */
    assert_int_equal(emitted(b, "\"RotaryAttention\""), 1);
    assert_int_equal(emitted(b, "\"RotaryEmbedding\""), 1);
    assert_int_equal(emitted(b, "\"factor\":\t0.5"), 1);  /* k x key_multiplier */
    assert_int_equal(emitted(b, "\"factor\":\t0.25"), 1); /* down_proj x down_multiplier */
    /* in_proj: 128 + (128 + 2 x 2 x 16) + 8 = 328 outputs */
    assert_int_equal(emitted(b, "\"out_features\":\t328"), 1);
    /* by hand: a layer 2 x 64 + 64 x 328 + 192 x 5 + 24 + 128 x 64 + 2 x 64 x 64 + 2 x 64 x 32 + 3 x 64 x 96 = 61,016;
     * embed_tokens, lm_head 2 x 128 x 64, final_layernorm 64 */
    assert_int_equal(count_of(b), 2 * 61016 + 2 * 128 * 64 + 64);
    /* mamba_d_ssm null: int(mamba_expand x hidden_size), the heads' width then 2 x 64 / 8 */
    const char *e = "{\"model_type\": \"falcon_h1\", \"hidden_size\": 64, \"intermediate_size\": 96, \"num_hidden_layers\": 1, "
                    "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"mamba_d_ssm\": null, \"mamba_n_heads\": 8, "
                    "\"mamba_d_state\": 16, \"vocab_size\": 128}";
    assert_int_equal(emitted(e, "\"head_dim\":\t16"), 3); /* the mixer's 128 / 8, the attention's and the rotary's 64 / 4 */
    /* projectors_bias: out_proj's bias (hidden), mamba_proj_bias: in_proj's (328); tied embeddings */
    const char *p = "{" SMALL ", \"projectors_bias\": true, \"mamba_proj_bias\": true, \"tie_word_embeddings\": true}";
    assert_int_equal(count_of(p), 2 * (61016 + 64 + 328) + 128 * 64 + 64);
}

static void test_generate_state(void **state)
{
    (void)state;
    const char *a = H05 " -m generate --prompt 1024 --new-tokens 256 -p bf16";
    assert_int_equal(cli_json_num(a, "generate", "mamba_state"), INT64_C(14671872));
    assert_int_equal(cli_json_num(a, "generate", "mamba_layers"), 36);
    assert_int_equal(cli_json_num(a, "generate", "kv_cache"), INT64_C(23574528));
}

static void test_bad_keys(void **state)
{
    (void)state;
    static const struct { const char *key, *value; } c[] = {
        {"mamba_n_heads", "0"},           {"mamba_n_heads", "5"}, /* 5 does not divide 128 */
        {"mamba_d_head", "8"},            {"mamba_d_head", "\"x\""},
        {"mamba_d_ssm", "0"},             {"mamba_n_groups", "3"},
        {"mamba_d_state", "-1"},          {"mamba_d_conv", "\"4\""},
        {"mamba_chunk_size", "0"},        {"mamba_conv_bias", "1"},
        {"mamba_proj_bias", "\"no\""},    {"projectors_bias", "0"},
        {"mamba_rms_norm", "true"},       {"mamba_norm_before_gate", "\"x\""},
        {"mamba_expand", "-1"},           {"hidden_act", "\"gelu\""},
        {"key_multiplier", "\"x\""},      {"lm_head_multiplier", "1e10"},
        {"attention_in_multiplier", "[]"}, {"attention_out_multiplier", "\"0.5\""},
        {"ssm_in_multiplier", "true"},    {"ssm_out_multiplier", "\"1\""},
        {"mlp_multipliers", "[1]"},       {"ssm_multipliers", "[1, 1]"},
        {"ssm_multipliers", "[1, 1, 1, 1, \"x\"]"}, {"num_logits_to_keep", "2"},
        {"time_step_limit", "[1]"},       {"time_step_min", "-1"},
        {"head_dim", "15"},               {"mlp_bias", "0"},
        {"embedding_multiplier", "\"x\""},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        cJSON *o = cJSON_Parse("{" SMALL "}");
        assert_non_null(o);
        cJSON_DeleteItemFromObjectCaseSensitive(o, c[i].key); /* the base's own key replaced */
        char *base = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        char js[1024];
        snprintf(js, sizeof js, "%.*s, \"%s\": %s}", (int)strlen(base) - 1, base, c[i].key, c[i].value);
        free(base);
        vc_model *m = NULL;
        vc_error err;
        if (load_js(js, &m, &err) == VC_OK) fail_msg("%s: %s accepted", c[i].key, c[i].value);
        if (strcmp(err.path, c[i].key)) fail_msg("%s %s: error names %s (%s)", c[i].key, c[i].value, err.path, err.msg);
        /* the CLI: exit 2, one line naming the key */
        char path[] = "/tmp/vc_falcon_h1_XXXXXX", args[128], want[64];
        fam_write(path, js);
        snprintf(args, sizeof args, "%s -m infer", path);
        snprintf(want, sizeof want, "%s: ", c[i].key);
        assert_usage(args, want);
        remove(path);
    }
}

static void test_refused(void **state)
{
    (void)state;
    assert_usage(H7 " --tp 2", "falcon_h1: tensor parallelism of the Mamba2 layers is modelled only as vLLM splits them"); /* --serve --tp: test_serve_mamba2_tp.c */
    assert_usage(H05 " -m generate --cache static", "HybridMambaAttentionDynamicCache");
    assert_usage(H05 " -p bf16 --qlora --lora-targets in_proj", "out_proj quantized in training");
    assert_usage(H05 " --lora 8", "--lora-targets"); /* PEFT's mapping has no falcon_h1 */
}

/* --serve (vLLM; no replica: no vLLM here, every figure derived from its source; src/engine/serve.c mamba_state,
 * layers/mamba2.c emit_vllm_profile), Falcon-H1-7B on h100-80gb, requests of 1024 + 256 tokens, bf16:
 *  - a layer's Mamba state a request (mamba_utils.py @ 2afe1e85 mamba2_state_shape with intermediate mamba_d_ssm
 *    3,072 = 24 heads x 128): conv (3, 3,072 + 2 x 1 x 256) = 10,752 elements, temporal 24 x 128 x 256 = 786,432,
 *    both bf16 (mamba_cache_dtype and mamba_ssm_cache_dtype "auto"): 1,594,368 bytes;
 *  - one attention token 2 x 2 kv heads x 128 x 2 bytes = 1,024; block 16 x cdiv(1,594,368, 16,384) = 16 x 98 =
 *    1,568 tokens (HybridAttentionMambaModelConfig), the state page padded to 1,568 x 1,024 = 1,605,632;
 *  - every one of the 44 layers has both (FalconH1ParallelHybrid): 44 attention and 44 Mamba layers, group_size 44
 *    (under 1.5 times the fewest), one group each, a block 44 x 1,605,632 = 70,647,808 bytes; a request
 *    cdiv(1,280, 1,568) = 1 + 1 = 2 blocks;
 *  - the Mamba2 layers without the gated norm (mamba_rms_norm false: Mixer2RMSNormGated(use_rms_norm=False)
 *    .forward_cuda, x * silu(gate.to(float32)).to(dtype)) are served, not refused. */
static void test_serve(void **state)
{
    (void)state;
    cli_serve_hybrid(H7 " --serve --gpu h100-80gb", 44, INT64_C(1594368), 1568, INT64_C(70647808), 1, 1);
    assert_non_null(strstr(cli_output(H05 " --serve --gpu h100-80gb"), "Mamba state  (36 Mamba2 layers: conv + SSM state"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parameters), cmocka_unit_test(test_layers), cmocka_unit_test(test_generate_state),
        cmocka_unit_test(test_bad_keys),   cmocka_unit_test(test_refused),
        cmocka_unit_test(test_serve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
