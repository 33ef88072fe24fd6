/*
 * test_fam_nemotron_h.c — NVIDIA Nemotron-H (model_type nemotron_h; issue 31; src/hf/hf_granite4.c,
 * layers/mamba2.c's Mamba2Mixer with the grouped gated norm).
 *
 * The configs (tests/data/hf/Nemotron-H-8B-Base-8K.json, NVIDIA-Nemotron-Nano-9B-v2.json) are not the
 * checkpoints' files, which are not in reach here (no network):
 *  - Nemotron-H-8B-Base-8K: the defaults of the checkpoints' own NemotronHConfig (the remote
 *    configuration_nemotron_h.py the Nemotron-H releases ship: hidden 4096, 52 layers, pattern
 *    "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-", 32 heads of 128, 8 kv heads, intermediate 21504,
 *    128 Mamba heads of 64, 8 groups, state 128, conv 4, vocab 131072), max_position_embeddings 8192 (the
 *    name's 8K);
 *  - NVIDIA-Nemotron-Nano-9B-v2: the sizes public copies of its config.json quote (hidden 4480, 56 layers,
 *    pattern "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-", 40 heads of 128, 8 kv, intermediate
 *    15680, 128 Mamba heads of 80, state 128, conv 4), NemotronHConfig's defaults for the rest.
 *
 * 1. Parameters, exact, derived by hand from modeling_nemotron_h.py @ 008d9e95's modules: a Mamba block
 *    norm H + in_proj H x (Di + conv_dim + heads) + conv1d conv_dim x 4 + conv_dim + dt_bias, A_log, D 3 heads
 *    + norm Di + out_proj Di x H (Di = heads x head_dim, conv_dim = Di + 2 x 8 x 128); an attention block
 *    norm H + q, o H x heads x 128 + k, v H x 8 x 128; an MLP block norm H + up, down H x I; embeddings and
 *    lm_head V x H each (never tied), norm_f H:
 *    - 8B: Mamba 109,640,064 (Di 8192, conv_dim 10240), attention 41,947,136, MLP 176,164,864;
 *      24 + 4 + 24 blocks, 1,073,741,824 + 4,096: 8,100,852,736 (published "8B");
 *    - Nano-9B-v2: Mamba 147,450,624 (Di 10240, conv_dim 12288), attention 55,054,720, MLP 140,497,280; 27 + 4 + 25 blocks,
 *      1,174,409,600 + 4,480: 8,888,227,328 (the model card's "8.89B").
 * 2. The layers: 27 Mamba2Mixer with norm_groups 8, 4 attention layers without rotary, 25 MLPs (relu2: ReLU
 *    then the square); no tied lm_head.
 * 3. --mode generate: per Mamba layer conv_states [conv_dim, 4] + ssm_states [128, 80, 128] in bf16:
 *    27 x (12,288 x 4 + 1,310,720) x 2 B = 73,433,088 B; the 4 attention layers' K/V over 1,279 tokens:
 *    4 x 1,279 x 2 x 8 x 128 x 2 B = 20,955,136 B.
 * 4. Every bad value of a new key exits 2 naming the key; what is not modelled is refused in one line.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "cli_run.h"
#include "fam_hf.h"

#define HF VC_TEST_DATA "/hf/"
#define H8B HF "Nemotron-H-8B-Base-8K.json"
#define NANO9 HF "NVIDIA-Nemotron-Nano-9B-v2.json"

/* one block's parameters by the formulas above (H hidden, heads x head_dim Mamba, I the MLP, NH heads) */
static int64_t mamba_block(int64_t H, int64_t mh, int64_t mp)
{
    const int64_t Di = mh * mp, CD = Di + 2 * 8 * 128;
    return H + H * (Di + CD + mh) + CD * 4 + CD + 3 * mh + Di + Di * H;
}
static int64_t attn_block(int64_t H, int64_t NH) { return H + 2 * H * NH * 128 + 2 * H * 8 * 128; }
static int64_t mlp_block(int64_t H, int64_t I) { return H + 2 * H * I; }

static void test_parameters(void **state)
{
    (void)state;
    /* the formulas give the totals above */
    assert_int_equal(mamba_block(4096, 128, 64), INT64_C(109640064));
    assert_int_equal(attn_block(4096, 32), INT64_C(41947136));
    assert_int_equal(mlp_block(4096, 21504), INT64_C(176164864));
    const int64_t b8 = 24 * mamba_block(4096, 128, 64) + 4 * attn_block(4096, 32) + 24 * mlp_block(4096, 21504) +
                       2 * INT64_C(131072) * 4096 + 4096;
    assert_int_equal(b8, INT64_C(8100852736));
    const int64_t n9 = 27 * mamba_block(4480, 128, 80) + 4 * attn_block(4480, 40) + 25 * mlp_block(4480, 15680) +
                       2 * INT64_C(131072) * 4480 + 4480;
    assert_int_equal(n9, INT64_C(8888227328)); /* the card's 8.89B */
    /* the generated models hold the same counts */
    assert_int_equal(cli_json_num(H8B " -m infer -p bf16", NULL, "parameters"), b8);
    assert_int_equal(cli_json_num(NANO9 " -m infer -p bf16", NULL, "parameters"), n9);
}

static void test_layers(void **state)
{
    (void)state;
    const char *b = "{\"model_type\": \"nemotron_h\", \"hidden_size\": 64, \"intermediate_size\": 96, \"num_hidden_layers\": 5, "
                    "\"hybrid_override_pattern\": \"M-*-M\", \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
                    "\"head_dim\": 16, \"mamba_num_heads\": 8, \"mamba_head_dim\": 16, \"n_groups\": 2, "
                    "\"ssm_state_size\": 16, \"vocab_size\": 128}";
    assert_int_equal(emitted(b, "\"Mamba2Mixer\""), 2);
    assert_int_equal(emitted(b, "\"norm_groups\":\t2"), 2); /* Zamba2RMSNormGated: intermediate // n_groups per group */
    assert_int_equal(emitted(b, "\"RotaryAttention\""), 1);
    assert_int_equal(emitted(b, "\"rotary_dim\":\t0"), 1);
    assert_int_equal(emitted(b, "\"RotaryEmbedding\""), 0);
    assert_int_equal(emitted(b, "\"mixer.act_fn.square\""), 2);
    assert_int_equal(emitted(b, "\"tie\""), 0);
    /* in_proj: 128 + (128 + 2 x 2 x 16) + 8 = 328 outputs */
    assert_int_equal(emitted(b, "\"out_features\":\t328"), 2);
    /* by hand: embeddings + lm_head 2 x 128 x 64, norm_f 64; Mamba 64 + 64 x 328 + 192 x 5 + 24 + 128 + 128 x 64;
     * attention 64 + 64 x 64 x 2 + 64 x 32 x 2; MLP 64 + 2 x 64 x 96 */
    const int64_t m = 64 + 64 * 328 + 192 * 5 + 24 + 128 + 128 * 64, a = 64 + 2 * 64 * 64 + 2 * 64 * 32, f = 64 + 2 * 64 * 96;
    assert_int_equal(count_of(b), 2 * 128 * 64 + 64 + 2 * m + a + 2 * f);
    /* layers_block_type (the list) wins over the pattern; the new names too */
    const char *l = "{\"model_type\": \"nemotron_h\", \"hidden_size\": 64, \"intermediate_size\": 96, "
                    "\"layers_block_type\": [\"linear_attention\", \"mlp\", \"full_attention\"], \"hybrid_override_pattern\": \"MMM\", "
                    "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, \"mamba_num_heads\": 8, "
                    "\"mamba_head_dim\": 16, \"n_groups\": 2, \"ssm_state_size\": 16, \"vocab_size\": 128}";
    assert_int_equal(emitted(l, "\"Mamba2Mixer\""), 1);
    assert_int_equal(count_of(l), 2 * 128 * 64 + 64 + m + a + f);
    /* the legacy mamba_n_groups overrides n_groups (NemotronHConfig.__post_init__) */
    const char *g = "{\"model_type\": \"nemotron_h\", \"hidden_size\": 64, \"intermediate_size\": 96, \"num_hidden_layers\": 1, "
                    "\"hybrid_override_pattern\": \"M\", \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, \"mamba_num_heads\": 8, "
                    "\"mamba_head_dim\": 16, \"n_groups\": 2, \"mamba_n_groups\": 4, \"ssm_state_size\": 16, \"vocab_size\": 128}";
    assert_int_equal(emitted(g, "\"n_groups\":\t4"), 1);
}

static void test_generate_state(void **state)
{
    (void)state;
    const char *a = NANO9 " -m generate --prompt 1024 --new-tokens 256 -p bf16";
    assert_int_equal(cli_json_num(a, "generate", "mamba_state"), INT64_C(73433088));
    assert_int_equal(cli_json_num(a, "generate", "mamba_layers"), 27);
    assert_int_equal(cli_json_num(a, "generate", "kv_cache"), INT64_C(20955136));
}

static void test_bad_keys(void **state)
{
    (void)state;
    static const struct { const char *extra, *key; } c[] = {
        {"\"hybrid_override_pattern\": \"M-X\"", "hybrid_override_pattern"},
        {"\"hybrid_override_pattern\": \"M-*-\"", "hybrid_override_pattern"}, /* 4 characters, 3 layers */
        {"\"hybrid_override_pattern\": \"\"", "hybrid_override_pattern"},
        {"\"hybrid_override_pattern\": 3", "hybrid_override_pattern"},
        {"\"hybrid_override_pattern\": \"M-E\"", "hybrid_override_pattern"}, /* NemotronHMoE: not modelled */
        {"\"layers_block_type\": [\"mamba\", \"mlp\", \"conv\"]", "layers_block_type"},
        {"\"layers_block_type\": [\"mamba\", \"mlp\"]", "layers_block_type"},
        {"\"layers_block_type\": \"mamba\"", "layers_block_type"},
        {"\"layers_block_type\": [\"mamba\", \"moe\", \"mlp\"]", "layers_block_type"},
        {"\"mamba_num_heads\": 0", "mamba_num_heads"},
        {"\"mamba_head_dim\": 1.5", "mamba_head_dim"},
        {"\"n_groups\": 3", "n_groups"},
        {"\"mamba_n_groups\": 5", "mamba_n_groups"},
        {"\"ssm_state_size\": -1", "ssm_state_size"},
        {"\"conv_kernel\": 0", "conv_kernel"},
        {"\"mamba_d_conv\": \"4\"", "mamba_d_conv"},
        {"\"chunk_size\": 0", "chunk_size"},
        {"\"use_conv_bias\": 1", "use_conv_bias"},
        {"\"use_bias\": \"no\"", "use_bias"},
        {"\"mlp_bias\": 0", "mlp_bias"},
        {"\"mamba_hidden_act\": \"gelu\"", "mamba_hidden_act"},
        {"\"mlp_hidden_act\": \"silu\"", "mlp_hidden_act"},
        {"\"tie_word_embeddings\": true", "tie_word_embeddings"},
        {"\"num_nextn_predict_layers\": 1", "num_nextn_predict_layers"},
        {"\"layer_norm_epsilon\": \"x\"", "layer_norm_epsilon"},
    };
    char js[1024];
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        snprintf(js, sizeof js,
                 "{\"model_type\": \"nemotron_h\", \"hidden_size\": 64, \"intermediate_size\": 96, \"num_hidden_layers\": 3, "
                 "\"hybrid_override_pattern\": \"M-*\", \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, \"mamba_num_heads\": 8, "
                 "\"mamba_head_dim\": 16, \"n_groups\": 2, \"ssm_state_size\": 16, \"vocab_size\": 128, %s}",
                 c[i].extra);
        /* the base's own key replaced by the bad one (cJSON would read the first of two) */
        cJSON *o = cJSON_Parse(js);
        assert_non_null(o);
        char wrap[512];
        snprintf(wrap, sizeof wrap, "{%s}", c[i].extra);
        cJSON *e = cJSON_Parse(wrap);
        assert_non_null(e);
        for (cJSON *k = e->child; k; k = k->next) {
            cJSON_DeleteItemFromObjectCaseSensitive(o, k->string);
            cJSON_AddItemToObject(o, k->string, cJSON_Duplicate(k, true));
        }
        cJSON_Delete(e);
        char *txt = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        vc_model *m = NULL;
        vc_error err;
        if (load_js(txt, &m, &err) == VC_OK) fail_msg("%s: accepted", c[i].extra);
        if (strcmp(err.path, c[i].key)) fail_msg("%s: error names %s (%s), not %s", c[i].extra, err.path, err.msg, c[i].key);
        /* the CLI: exit 2, one line naming the key */
        char path[] = "/tmp/vc_nemotron_h_XXXXXX", args[128], want[64];
        fam_write(path, txt);
        snprintf(args, sizeof args, "%s -m infer", path);
        snprintf(want, sizeof want, "%s: ", c[i].key);
        assert_usage(args, want);
        remove(path);
        free(txt);
    }
}

static void test_refused(void **state)
{
    (void)state;
    assert_usage(H8B " --tp 2", "nemotron_h: tensor parallelism of the Mamba2 layers is modelled only as vLLM splits them"); /* --serve --tp: test_serve_mamba2_tp.c */
    assert_usage(H8B " -m generate --cache static", "HybridMambaAttentionDynamicCache");
    assert_usage(H8B " --qlora --lora-targets in_proj", "out_proj quantized in training");
}

/* --serve (vLLM; no replica: no vLLM here, every figure derived from its source; src/engine/serve.c mamba_state,
 * nemotron_h_ssm_dtype; layers/mamba2.c emit_vllm_profile), h100-80gb, requests of 1024 + 256 tokens, bf16:
 *  - a Mamba layer's state a request (vllm/model_executor/models/nemotron_h.py @ 8744bb09 NemotronHForCausalLM
 *    .get_mamba_state_shape_from_config: intermediate mamba_num_heads x mamba_head_dim -> mamba_utils.py @ 2afe1e85
 *    mamba2_state_shape): conv (3, Di + 2 x 8 x 128) in bf16, temporal (128, mamba_head_dim, 128) in float32
 *    (NemotronHForCausalLMConfig: mamba_ssm_cache_dtype "auto" -> the config's, float32 when absent, as in both
 *    configs here);
 *  - one attention token 2 x 8 kv heads x 128 x 2 bytes = 4,096; attention block 16 x cdiv(state, 16 x 4,096)
 *    (HybridAttentionMambaModelConfig), the state page padded to it; 4 attention layers, so group_size 4 (the Mamba
 *    layers are 6 or more times as many), a block 4 pages, 1 attention group and cdiv(Mamba layers, 4) state groups;
 *  - 8B (Di 8,192): conv 3 x 10,240 x 2 = 61,440, temporal 1,048,576 x 4 = 4,194,304: 4,255,744 bytes; block
 *    16 x cdiv(4,255,744, 65,536) = 16 x 65 = 1,040 tokens, a block 4 x 1,040 x 4,096 = 17,039,360; 24 Mamba layers:
 *    6 groups; a request cdiv(1,280, 1,040) = 2 + 6 = 8 blocks;
 *  - Nano-9B-v2 (Di 10,240): conv 3 x 12,288 x 2 = 73,728, temporal 1,310,720 x 4 = 5,242,880: 5,316,608 bytes;
 *    block 16 x cdiv(5,316,608, 65,536) = 16 x 82 = 1,312 tokens, a block 4 x 1,312 x 4,096 = 21,495,808; 27 Mamba
 *    layers: 7 groups; a request 1 + 7 = 8 blocks;
 *  - the 8B with "mamba_ssm_cache_dtype": "bfloat16": temporal 2,097,152: 2,158,592 bytes, block 16 x 33 = 528. */
static void test_serve(void **state)
{
    (void)state;
    cli_serve_hybrid(H8B " --serve --gpu h100-80gb", 24, INT64_C(4255744), 1040, INT64_C(17039360), 1, 6);
    cli_serve_hybrid(NANO9 " --serve --gpu h100-80gb", 27, INT64_C(5316608), 1312, INT64_C(21495808), 1, 7);
    assert_non_null(strstr(cli_output(H8B " --serve --gpu h100-80gb"), "Mamba state  (24 Mamba2 layers: conv + SSM state, "
                                                                     "4.1 MiB per request and layer, one block each; the "
                                                                     "attention layers' K/V paged)"));
    /* the config's mamba_ssm_cache_dtype: bfloat16 (or float16) halves the temporal state; another value exits 2
     * naming the key (vLLM's STR_DTYPE_TO_TORCH_DTYPE reads more names: not modelled) */
    static char cfg[1 << 14], body[1 << 14];
    cli_slurp(H8B, cfg, sizeof cfg);
    char *at = strstr(cfg, "\"n_groups\": 8");
    assert_non_null(at);
    static const char *const v[] = {"\"bfloat16\"", "\"float16\"", "\"fp8\"", "32", "null"};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        snprintf(body, sizeof body, "%.*s\"mamba_ssm_cache_dtype\": %s, %s", (int)(at - cfg), cfg, v[i], at);
        char path[] = "/tmp/vc_nemotron_h_XXXXXX", args[128];
        fam_write(path, body);
        snprintf(args, sizeof args, "%s --serve --gpu h100-80gb", path);
        if (i < 2) cli_serve_hybrid(args, 24, INT64_C(2158592), 528, INT64_C(4) * 528 * 4096, 1, 6);
        else assert_usage(args, "mamba_ssm_cache_dtype: ");
        remove(path);
    }
}

/* Mamba2Mixer's norm_groups written by hand: a divisor of num_heads x head_dim, at least 1; exit 2 naming it */
static void test_norm_groups(void **state)
{
    (void)state;
    static const struct { const char *v, *want; } c[] = {
        {"3", "layers[0].norm_groups: must divide num_heads x head_dim (128)"},
        {"0", "layers[0].norm_groups"},
        {"\"2\"", "layers[0].norm_groups"},
        {"2", NULL},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char body[512], path[] = "/tmp/vc_nemotron_h_kind_XXXXXX", args[128];
        /* in_proj's output width: 128 + (128 + 2 x 2 x 16) + 8 = 328 */
        snprintf(body, sizeof body, "{\"name\": \"k\", \"input\": {\"shape\": [64, 328]}, \"layers\": [{\"type\": "
                 "\"Mamba2Mixer\", \"num_heads\": 8, \"head_dim\": 16, \"n_groups\": 2, \"state_size\": 16, "
                 "\"chunk_size\": 16, \"hidden_size\": 64, \"norm_groups\": %s}]}", c[i].v);
        fam_write(path, body);
        snprintf(args, sizeof args, "%s --mode infer", path);
        if (c[i].want) {
            assert_usage(args, c[i].want);
        } else { /* accepted: the same parameters as without groups (conv1d 192 x 4 + 192, 3 x 8, norm 128, out_proj
                  * 64 x 128: 9,304) */
            snprintf(args, sizeof args, "%s --mode infer -f json", path);
            cJSON *j = cJSON_Parse(cli_output(args));
            assert_non_null(j);
            assert_int_equal((int64_t)cJSON_GetObjectItemCaseSensitive(j, "parameters")->valuedouble, 9304);
            cJSON_Delete(j);
        }
        remove(path);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parameters), cmocka_unit_test(test_layers), cmocka_unit_test(test_generate_state),
        cmocka_unit_test(test_bad_keys), cmocka_unit_test(test_refused), cmocka_unit_test(test_norm_groups),
        cmocka_unit_test(test_serve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
