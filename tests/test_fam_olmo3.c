/*
 * test_fam_olmo3.c — the olmo3 family row (issue 31): OLMo-3-7B / 32B.
 *
 * Sources: huggingface/transformers models/olmo3/modeling_olmo3.py @ 0233e509531ace915c8241b4c16c8032a583279c
 * (Olmo3DecoderLayer: self_attn, post_attention_layernorm, mlp, post_feedforward_layernorm, no norm before either;
 * Olmo3Attention: q/k/v/o_proj with bias=config.attention_bias, q_norm Olmo3RMSNorm(heads x head_dim), k_norm
 * Olmo3RMSNorm(kv heads x head_dim); Olmo3MLP: gate/up/down_proj without bias; Olmo3Model: embed_tokens, norm, one
 * rotary_emb; Olmo3ForCausalLM: lm_head) and configuration_olmo3.py @ 008e574391258935f3ecc3035c882e73bbcac419
 * (the defaults; layer_types "sliding_attention" if (i + 1) % 4 else "full_attention", sliding_window 4096).
 *
 * tests/data/hf/olmo-3-7b.json: allenai's OLMo-3-7B config.json was not in the stored sources; it is written from
 * Olmo3Config's keys and the values the model card publishes (32 layers, hidden 4096, intermediate 11008, 32
 * heads, 32 kv heads, 3:1 sliding / full layers with a 4096 window, YaRN x 8 over 8192 positions: 65536,
 * rms_norm_eps 1e-6, untied); vocab_size 100278 as recalled, not read (100352 would add 606,208 parameters;
 * both round to the published 7.3B).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "vramcalc/vramcalc.h"
#include "cli_spelt.h"
#include "cli_run.h"
#include "fam_hf.h"

#define HF VC_TEST_DATA "/hf/"

/* OLMo-3-7B, each tensor (modeling_olmo3.py's shapes): embed_tokens 100278 x 4096 = 410,738,688 and lm_head the
 * same; a layer: q/k/v/o_proj 4 x 4096 x 4096 = 67,108,864, q_norm + k_norm 8,192, gate/up/down_proj 3 x 4096 x
 * 11008 = 135,266,304, two norms 8,192: 202,391,552, x 32 = 6,476,529,664; norm 4,096: 7,298,011,136. Published:
 * 7.3B (OLMo-3-7B's published size; no safetensors index was read here). */
static void test_flagship_count(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file_hf(HF "olmo-3-7b.json", NULL, &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
    assert_int_equal(vc_model_parameters(m), INT64_C(7298011136));
    assert_int_equal((vc_model_parameters(m) + 50000000) / 100000000, 73); /* 7.3B */
    vc_model_free(m);
}

#define SMALL "\"model_type\":\"olmo3\",\"vocab_size\":1000,\"hidden_size\":64,\"intermediate_size\":128," \
              "\"num_hidden_layers\":4,\"num_attention_heads\":4,\"num_key_value_heads\":2"

/* A small config by hand (head_dim 64 / 4 = 16): q/o_proj 2 x 4,096, k/v_proj 2 x 2,048, q_norm 64, k_norm 32,
 * MLP 3 x 64 x 128 = 24,576, two norms 128: 37,088 a layer, 148,352; embed_tokens + lm_head 2 x 64,000, norm 64:
 * 276,416. attention_bias: + 64 + 32 + 32 + 64 = 192 a layer, 277,184. */
static void test_small_counts(void **state)
{
    (void)state;
    assert_int_equal(count_of("{" SMALL "}"), 276416);
    assert_int_equal(count_of("{" SMALL ",\"attention_bias\":true}"), 277184);
    /* the class's defaults alone: vocab 50304, 32 layers of 32 heads over hidden 4096: 6,476,529,664 + 2 x
     * 50304 x 4096 + 4096 */
    assert_int_equal(count_of("{\"model_type\":\"olmo3\"}"), INT64_C(6476529664) + 2 * INT64_C(206045184) + 4096);
}

/* The layers written: no input_layernorm; Olmo3RMSNorm's variant on each written layer's two norms and its q/k
 * norms (two layers written: the run of three sliding ones, repeat 3, and the full one) and on model.norm; the
 * 4096 window on the sliding run, none on layer 3 (layer_types' default 3:1) */
static void test_emitted(void **state)
{
    (void)state;
    static const char js[] = "{" SMALL "}";
    assert_int_equal(emitted(js, "\"name\":\t\"input_layernorm\""), 0);
    assert_int_equal(emitted(js, "\"qk_norm_whole\":\ttrue"), 2);
    assert_int_equal(emitted(js, "\"qk_norm_variant\":\t\"olmo\""), 2);
    assert_int_equal(emitted(js, "\"variant\":\t\"olmo\""), 5); /* 2 + 2 layer norms, model.norm */
    assert_int_equal(emitted(js, "\"sliding_window\":\t4096"), 1);
    assert_int_equal(emitted(js, "\"repeat\":\t3"), 1);
    /* layer_types given: every layer full, no window */
    assert_int_equal(emitted("{" SMALL ",\"layer_types\":[\"full_attention\",\"full_attention\",\"full_attention\","
                             "\"full_attention\"]}", "\"sliding_window\""), 0);
    /* sliding_window null: no window */
    assert_int_equal(emitted("{" SMALL ",\"sliding_window\":null}", "\"sliding_window\""), 0);
}

/* Bad or inconsistent values exit 2 naming the key */
static void test_bad_values(void **state)
{
    (void)state;
    static const struct {
        const char *extra, *key;
    } bad[] = {
        {",\"sliding_window\":-5", "sliding_window"},
        {",\"sliding_window\":\"big\"", "sliding_window"},
        {",\"layer_types\":[\"sliding_attention\"]", "layer_types"},
        {",\"layer_types\":[\"x\",\"y\",\"z\",\"w\"]", "layer_types"},
        {",\"attention_bias\":1", "attention_bias"},
        {",\"num_key_value_heads\":3", "num_key_value_heads"},
        {",\"rope_scaling\":{\"rope_type\":\"bogus\"}", "rope_scaling.rope_type"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char js[400];
        snprintf(js, sizeof js, "{" SMALL "%s}", bad[i].extra);
        vc_model *m = NULL;
        vc_error err;
        vc_status st = load_js(js, &m, &err);
        vc_model_free(m);
        if (st != VC_ERR_MODEL) fail_msg("%s: status %d", js, (int)st);
        assert_string_equal(CLI_PATH(&err), bad[i].key);
    }
}

/* --mode generate and --serve run. DynamicCache in bf16, 1,279 tokens (within the 4096 window: every layer keeps
 * them all): 32 layers x 2 x 4096 x 2 B x 1279 = 670,564,352 B. vLLM (vllm/model_executor/models/olmo2.py, which
 * serves Olmo3ForCausalLM with the layer_types' sliding windows) on an h100-80gb. */
static void test_generate_serve(void **state)
{
    (void)state;
    const char *out = cli_output(HF "olmo-3-7b.json -m generate --precision bf16");
    assert_non_null(strstr(out, "670564352"));
    out = cli_output(HF "olmo-3-7b.json --serve --gpu h100-80gb");
    assert_non_null(strstr(out, "KV cache pool"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flagship_count), cmocka_unit_test(test_small_counts),
        cmocka_unit_test(test_emitted),        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_generate_serve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
