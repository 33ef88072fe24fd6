/*
 * test_fam_glm4.c — the glm4 family row (issue 31): GLM-4-9B-0414, GLM-4-32B-0414, GLM-Z1-9B / 32B.
 *
 * Sources: huggingface/transformers models/glm4/modeling_glm4.py @ 00d01786ab67861791c57a11f3fca93e342c9e2d
 * (Glm4DecoderLayer: input_layernorm, post_self_attn_layernorm, post_attention_layernorm, post_mlp_layernorm, all
 * Glm4RMSNorm(hidden_size); Glm4Attention: q/k/v_proj with bias=config.attention_bias, o_proj bias=False;
 * Glm4MLP: gate_up_proj [2 x intermediate, hidden], down_proj [hidden, intermediate], no biases;
 * Glm4Model: embed_tokens, norm; Glm4ForCausalLM: lm_head, untied unless tie_word_embeddings) and
 * configuration_glm4.py @ 008e574391258935f3ecc3035c882e73bbcac419 (the defaults: head_dim 128,
 * attention_bias true, partial_rotary_factor 0.5).
 *
 * tests/data/hf/glm-4-9b-0414.json: THUDM/GLM-4-9B-0414's config.json was not in the stored sources; it is
 * written from Glm4Config's defaults and the values the model card and the Hub's config publish (40 layers,
 * hidden 4096, intermediate 13696, 32 heads over 2 kv heads of 128, vocab 151552, partial_rotary_factor 0.5,
 * max_position_embeddings 32768, rms_norm_eps 1e-5, attention_bias, untied).
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

/* GLM-4-9B-0414, each tensor (modeling_glm4.py's shapes): embed_tokens 151552 x 4096 = 620,756,992 and lm_head
 * the same (untied); a layer: q_proj 4096 x 4096 + 4096 = 16,781,312, k_proj and v_proj 2 x (4096 x 256 + 256) =
 * 2,097,664, o_proj 16,777,216, gate_up_proj 4096 x 27392 = 112,197,632, down_proj 13696 x 4096 = 56,098,816, four
 * norms 16,384: 203,969,024, x 40 = 8,158,760,960; norm 4,096: 9,400,279,040. Published: 9.4B (GLM-4-9B-0414's size as
 * published on its model card; no safetensors index was read here). */
static void test_flagship_count(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file_hf(HF "glm-4-9b-0414.json", NULL, &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
    assert_int_equal(vc_model_parameters(m), INT64_C(9400279040));
    assert_int_equal((vc_model_parameters(m) + 50000000) / 100000000, 94); /* 9.4B */
    vc_model_free(m);
}

#define SMALL "\"model_type\":\"glm4\",\"vocab_size\":1000,\"hidden_size\":64,\"intermediate_size\":128," \
              "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2"

/* A small config by hand: head_dim 16; q_proj 64 x 64 + 64 = 4,160, k/v_proj 2 x (64 x 32 + 32) = 4,160,
 * o_proj 4,096, gate_up_proj 64 x 256 = 16,384, down_proj 8,192, norms 4 x 64: 37,248 a layer, 74,496;
 * embed_tokens + lm_head 2 x 64,000, norm 64: 202,560. attention_bias false: 128 biases fewer a layer, 202,304.
 * Without head_dim, Glm4Config's 128 (not 64 / 4): q 64 x 512 + 512 = 33,280, k/v 2 x 16,640, o 32,768: a layer
 * 124,160, 376,384 in all. */
static void test_small_counts(void **state)
{
    (void)state;
    assert_int_equal(count_of("{" SMALL ",\"head_dim\":16}"), 202560);
    assert_int_equal(count_of("{" SMALL ",\"head_dim\":16,\"attention_bias\":false}"), 202304);
    assert_int_equal(count_of("{" SMALL "}"), 376384);
    /* the class's defaults alone (AutoConfig.for_model("glm4")): GLM-4-9B's shapes with 131072 positions */
    assert_int_equal(count_of("{\"model_type\":\"glm4\"}"), INT64_C(9400279040));
}

/* The layers written: Glm4DecoderLayer's norm names (the two layers written once, repeat 2), the fused MLP, Glm4's
 * interleaved rotation on 8 of 16 dims (partial_rotary_factor 0.5) */
static void test_emitted(void **state)
{
    (void)state;
    static const char js[] = "{" SMALL ",\"head_dim\":16}";
    assert_int_equal(emitted(js, "\"name\":\t\"post_self_attn_layernorm\""), 1);
    assert_int_equal(emitted(js, "\"name\":\t\"post_mlp_layernorm\""), 1);
    assert_int_equal(emitted(js, "\"name\":\t\"post_attention_layernorm\""), 1);
    assert_int_equal(emitted(js, "\"name\":\t\"pre_feedforward_layernorm\""), 0);
    assert_int_equal(emitted(js, "\"name\":\t\"mlp.gate_up_proj\""), 1);
    assert_int_equal(emitted(js, "\"rope_style\":\t\"glm4\""), 1);
    assert_int_equal(emitted(js, "\"rotary_dim\":\t8"), 2); /* model.rotary_emb and the attention */
}

/* Bad or inconsistent values of the keys the row reads exit 2 naming the key */
static void test_bad_values(void **state)
{
    (void)state;
    static const struct {
        const char *extra, *key;
    } bad[] = {
        {",\"head_dim\":16,\"partial_rotary_factor\":1.5", "partial_rotary_factor"},
        {",\"head_dim\":16,\"partial_rotary_factor\":\"half\"", "partial_rotary_factor"},
        {",\"head_dim\":16,\"partial_rotary_factor\":0.01", "partial_rotary_factor"}, /* 0 rotary dims */
        {",\"head_dim\":14", "partial_rotary_factor"},                              /* 7: odd */
        {",\"head_dim\":16,\"partial_rotary_factor\":0.5,\"rope_parameters\":{\"partial_rotary_factor\":0.25}",
         "rope_parameters.partial_rotary_factor"},
        {",\"head_dim\":16,\"rope_parameters\":{\"partial_rotary_factor\":2}", "rope_parameters.partial_rotary_factor"},
        {",\"head_dim\":16,\"attention_bias\":\"yes\"", "attention_bias"},
        {",\"head_dim\":0", "head_dim"},
        {",\"head_dim\":16,\"rms_norm_eps\":-1", "rms_norm_eps"},
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
    /* rope_parameters' factor alone is read: 0.25 x 16 = 4 dims */
    assert_int_equal(emitted("{" SMALL ",\"head_dim\":16,\"rope_parameters\":{\"partial_rotary_factor\":0.25}}",
                             "\"rotary_dim\":\t4"), 2);
    /* and the CLI exits 2 with one line naming the key */
    FILE *f = fopen("/tmp/vc_glm4_bad.json", "w");
    assert_non_null(f);
    fputs("{" SMALL ",\"head_dim\":14}", f);
    fclose(f);
    assert_usage("/tmp/vc_glm4_bad.json", "partial_rotary_factor: 0.5 x head_dim 14 gives 7 rotary dimensions");
    remove("/tmp/vc_glm4_bad.json");
}

/* --mode generate and --serve run. DynamicCache's keys and values in bf16: 40 layers x 2 x 2 kv heads x 128 x
 * 2 B = 40,960 B a token, 1,279 tokens (the default 1024 prompt + 256 new, the last token's not cached):
 * 52,387,840 B. vLLM (vllm/model_executor/models/glm4.py @ 055e47c2: Glm4Attention's Attention of num_kv_heads
 * x head_dim, LlamaModel's layers) on an h100-80gb: 16-token blocks of 40,960 x 16 B = 640 KiB. */
static void test_generate_serve(void **state)
{
    (void)state;
    const char *out = cli_output(HF "glm-4-9b-0414.json -m generate --precision bf16");
    assert_non_null(strstr(out, "KV cache             50.0 MiB            52387840"));
    out = cli_output(HF "glm-4-9b-0414.json --serve --gpu h100-80gb");
    assert_non_null(strstr(out, "(16 tokens each, 640.0 KiB per block)"));
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
