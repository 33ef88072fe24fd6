/*
 * test_fam_ministral3.c — Ministral 3 (issue 31): the ministral3 family row (Ministral3ForCausalLM) and mistral3's
 * row for a text_config of model_type "ministral3" (Mistral3ForConditionalGeneration of Ministral-3-3B/8B/14B-*-2512),
 * src/hf/hf.c; the llama-4 attention scale (RotaryAttention llama4_attn_scale, layers/llm.c llama4_scale);
 * rope_parameters' llama_4_scaling_beta and original_max_position_embeddings (src/hf/hf_read.c read_l4_scale).
 *
 * 1. Ministral-3-3B/8B/14B's parameters, exactly, by hand from the modules (below).
 * 2. Ministral3Config's defaults (configuration_ministral3.py @ 008e5743), for ministral3 and for mistral3's text_config.
 * 3. The scale: the same model as the mistral row's of the same keys, each layer's [L] scale held for backward on top.
 * 4. Every bad value of the two rope_parameters keys exits 2 naming the key path.
 *
 * tests/data/hf/ministral-3-{3b,8b,14b}-instruct-2512.json are written here, not the Hub's files (no network): the
 * sizes from Megatron-Bridge's Ministral3ModelProvider3B / 8B / 14B (ministral3_provider.py, read through the code
 * search without a pinned commit: hidden 3,072 / 4,096 / 5,120, ffn 9,216 / 14,336 / 16,384, 26 / 34 / 40 layers,
 * 32 heads, 8 query groups, kv_channels 128, the 3B's embeddings shared with the output; the 14B's rotary_base 1e9)
 * and Ministral3Config's defaults (vocab 131,072, max_position_embeddings 262,144, rms_norm_eps 1e-5, the yarn
 * rope_parameters with llama_4_scaling_beta 0.1 over 16,384); the vision tower and projector Mistral-Small-3.2's
 * (tests/data/hf/mistral-small-3.2-24b-instruct-2506.json: Pixtral 1,024 wide, 24 layers, patch 14, image 1,540,
 * spatial_merge_size 2, no projector bias). Unverified against the Hub's config.json: the vision_config (the
 * provider's docstrings say "0.4B Vision Encoder", the tower below is 403,305,472), rope_theta.
 */
#define _GNU_SOURCE
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "fam_hf.h"

#define M3_3B VC_TEST_DATA "/hf/ministral-3-3b-instruct-2512.json"
#define M3_8B VC_TEST_DATA "/hf/ministral-3-8b-instruct-2512.json"
#define M3_14B VC_TEST_DATA "/hf/ministral-3-14b-instruct-2512.json"

static void counts_of(const char *path, int64_t *all, int64_t *trainable)
{
    vc_model *m = fam_load_file(path, 0);
    *all = vc_model_parameters(m);
    *trainable = vc_model_trainable_parameters(m);
    vc_model_free(m);
}

/* Module by module (Ministral3ForCausalLM = MistralForCausalLM's modules, modular_ministral3.py @ 00b364c7; the tower
 * and projector as test_fam_mistral3.c derives them, modeling_pixtral.py @ 0233e509, modeling_mistral3.py @ 00dcc6dd).
 * A Ministral3DecoderLayer of hidden H and intermediate I (32 heads and 8 kv heads of 128): q_proj H x 4,096, k_proj
 * and v_proj H x 1,024 each, o_proj 4,096 x H, gate/up/down 3 x H x I, two RMSNorms 2H.
 *  - 3B (H 3,072, I 9,216, 26 layers, tied): a layer 31,457,280 + 84,934,656 + 6,144 = 116,398,080, x 26 =
 *    3,026,350,080; embed_tokens 131,072 x 3,072 = 402,653,184 (lm_head tied); norm 3,072: 3,429,006,336;
 *    projector norm 1,024 + merging_layer 4,194,304 + linear_1 1,024 x 3,072 = 3,145,728 + linear_2 3,072^2 =
 *    9,437,184: 16,778,240; with the tower's 403,305,472: 3,849,090,048.
 *  - 8B (H 4,096, I 14,336, 34 layers, untied): a layer 218,112,000, x 34 = 7,415,808,000; embed_tokens and lm_head
 *    2 x 536,870,912; norm 4,096: 8,489,553,920; projector 1,024 + 4,194,304 + 4,194,304 + 16,777,216 = 25,166,848;
 *    in all 8,918,026,240.
 *  - 14B (H 5,120, I 16,384, 40 layers, untied): a layer 52,428,800 + 251,658,240 + 10,240 = 304,097,280, x 40 =
 *    12,163,891,200; embeddings 2 x 671,088,640; norm 5,120: 13,506,073,600; projector 1,024 + 4,194,304 + 5,242,880
 *    + 26,214,400 = 35,652,608; in all 13,945,031,680.
 * The language models agree with the provider's docstrings ("3.4B / 8.4B / 13.5B Language Model + 0.4B Vision
 * Encoder"); the tower and projector are frozen (trainable: the language model). */
static void test_parameters(void **state)
{
    (void)state;
    int64_t n, t;
    counts_of(M3_3B, &n, &t);
    assert_int_equal(n, INT64_C(3849090048));
    assert_int_equal(t, INT64_C(3429006336));
    counts_of(M3_8B, &n, &t);
    assert_int_equal(n, INT64_C(8918026240));
    assert_int_equal(t, INT64_C(8489553920));
    counts_of(M3_14B, &n, &t);
    assert_int_equal(n, INT64_C(13945031680));
    assert_int_equal(t, INT64_C(13506073600));
}

/* Ministral3Config() (configuration_ministral3.py @ 008e5743) is the 8B's language model: 8,489,553,920 (above), read
 * alone (ministral3) and as mistral3's text_config (Pixtral's tower 403,305,472 and the 8B's projector 25,166,848 on
 * top); num_key_value_heads null: the heads (k_proj and v_proj 4,096^2, 2 x 12,582,912 more a layer); head_dim null:
 * hidden_size // num_attention_heads (4,096 / 32 = 128, the default's); tie_word_embeddings true: one embedding less. */
static void test_defaults(void **state)
{
    (void)state;
    const int64_t lm = INT64_C(8489553920), vis = INT64_C(403305472) + INT64_C(25166848);
    assert_int_equal(count_of("{\"model_type\":\"ministral3\"}"), lm);
    assert_int_equal(count_of("{\"model_type\":\"mistral3\",\"text_config\":{\"model_type\":\"ministral3\"}}"), lm + vis);
    assert_int_equal(count_of("{\"model_type\":\"ministral3\",\"num_key_value_heads\":null}"),
                     lm + 34 * 2 * INT64_C(12582912));
    assert_int_equal(count_of("{\"model_type\":\"ministral3\",\"head_dim\":null}"), lm);
    assert_int_equal(count_of("{\"model_type\":\"ministral3\",\"tie_word_embeddings\":true}"), lm - INT64_C(536870912));
    /* the scale on every layer of both rows (the emitted layer list writes the repeated decoder layer once) */
    assert_true(emitted("{\"model_type\":\"ministral3\"}", "\"llama4_attn_scale\"") >= 1);
    assert_true(emitted("{\"model_type\":\"mistral3\",\"text_config\":{\"model_type\":\"ministral3\"}}",
                        "\"llama4_attn_scale\"") >= 1);
    assert_int_equal(emitted("{\"model_type\":\"mistral3\",\"text_config\":{}}", "\"llama4_attn_scale\""), 0);
}

/* Ministral3Attention is MistralAttention plus query_states * _get_llama_4_attn_scale(...).to(query_states.dtype)
 * after the rotation (modular_ministral3.py @ 00b364c7): a new q-sized tensor replacing the rotated one (which nothing
 * saves: mul saves only the scale, the tensor that needs no grad being the other), sdpa saving the scaled q where it
 * saved the rotated one. So training holds, at the end of the forward, the mistral row's activations of the same
 * keys plus each layer's scale: [L, 1] in q's dtype, L = 128 here: 512 B in fp32, 256 B in bf16, each one block of
 * the caching allocator's 512 B: 2 layers x 512 = 1,024 B more, in both precisions. */
static void test_scale(void **state)
{
    (void)state;
    const char *keys = "\"vocab_size\":1000,\"hidden_size\":256,\"intermediate_size\":512,\"num_hidden_layers\":2,"
                       "\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":64,\"sliding_window\":null,"
                       "\"rms_norm_eps\":1e-5,\"max_position_embeddings\":4096}";
    char a[512], b[512];
    snprintf(a, sizeof a, "{\"model_type\":\"ministral3\",%s", keys);
    snprintf(b, sizeof b, "{\"model_type\":\"mistral\",%s", keys);
    static const vc_precision prec[] = {VC_PREC_FP32, VC_PREC_BF16};
    for (int i = 0; i < 2; i++) {
        int64_t act[2];
        for (int k = 0; k < 2; k++) {
            vc_model *m = fam_load_string(k ? b : a, 128);
            vc_options o;
            vc_options_init(&o);
            o.precision = prec[i];
            vc_result r;
            vc_error err;
            if (vc_estimate(m, &o, &r, &err)) fail_msg("%s: %s", err.path, err.msg);
            act[k] = r.memory.activations;
            vc_result_free(&r);
            vc_model_free(m);
        }
        assert_int_equal(act[0] - act[1], 1024);
    }
}

/* rope_parameters (Ministral3Config.__post_init__ fills it only when absent or null): the scale's two keys must be
 * there (the forward hands rope_parameters.get(...) to _get_llama_4_attn_scale: None raises TypeError), beta a number
 * (0 .. 1e6), original_max_position_embeddings an integer of at least 1 (the positions are divided by it); errors name
 * the path, under mistral3 text_config's. A text_config of another model_type than mistral / ministral3 is refused. */
static void test_refusals(void **state)
{
    (void)state;
    static const struct { const char *rp, *path; } bad[] = {
        {"7", "rope_parameters"},
        {"{\"rope_type\":\"yarn\",\"original_max_position_embeddings\":16384}", "rope_parameters.llama_4_scaling_beta"},
        {"{\"llama_4_scaling_beta\":0.1}", "rope_parameters.original_max_position_embeddings"},
        {"{\"llama_4_scaling_beta\":\"0.1\",\"original_max_position_embeddings\":16384}", "rope_parameters.llama_4_scaling_beta"},
        {"{\"llama_4_scaling_beta\":-0.1,\"original_max_position_embeddings\":16384}", "rope_parameters.llama_4_scaling_beta"},
        {"{\"llama_4_scaling_beta\":0.1,\"original_max_position_embeddings\":0}", "rope_parameters.original_max_position_embeddings"},
        {"{\"llama_4_scaling_beta\":0.1,\"original_max_position_embeddings\":1.5}", "rope_parameters.original_max_position_embeddings"},
        {"{\"llama_4_scaling_beta\":0.1,\"original_max_position_embeddings\":null}", "rope_parameters.original_max_position_embeddings"},
    };
    char js[512], path[128];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(js, sizeof js, "{\"model_type\":\"ministral3\",\"rope_parameters\":%s}", bad[i].rp);
        fam_refused(js, bad[i].path);
        snprintf(js, sizeof js, "{\"model_type\":\"mistral3\",\"text_config\":{\"model_type\":\"ministral3\","
                 "\"rope_parameters\":%s}}", bad[i].rp);
        snprintf(path, sizeof path, "text_config.%s", bad[i].path);
        fam_refused(js, path);
    }
    /* null or absent: Ministral3Config's own (beta 0.1 over 16,384) */
    assert_int_equal(count_of("{\"model_type\":\"ministral3\",\"rope_parameters\":null}"), INT64_C(8489553920));
    fam_refused("{\"model_type\":\"mistral3\",\"text_config\":{\"model_type\":\"mistral4\"}}", "text_config.model_type");
    /* the CLI: exit 2, one line naming the key path */
    char f[] = "/tmp/vc_m3XXXXXX";
    fam_write(f, "{\"model_type\":\"mistral3\",\"text_config\":{\"model_type\":\"ministral3\",\"rope_parameters\":"
                 "{\"llama_4_scaling_beta\":0.1}}}");
    assert_usage(f, "text_config.rope_parameters.original_max_position_embeddings");
    remove(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parameters), cmocka_unit_test(test_defaults), cmocka_unit_test(test_scale),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
