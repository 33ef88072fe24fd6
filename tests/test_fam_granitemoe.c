/*
 * test_fam_granitemoe.c — Granite 3.x MoE (model_types "granitemoe" and "granitemoeshared", issue 31): the family
 * rows of src/hf/hf.c (granite's multipliers; granitemoeshared's shared MLP) and the SparseMoE style granitemoe of
 * layers/llm.c (JetMoe's top-k gating and GraniteMoeParallelExperts' per-expert loop).
 *
 * Sources: huggingface/transformers models/granitemoe/modular_granitemoe.py @ 94cb76e8 and models/jetmoe/
 * modeling_jetmoe.py (JetMoeTopKGating, JetMoeParallelExperts), cited in layers/llm.c moe_granite_emit.
 *
 * tests/data/hf/granite-3.1-3b-a800m-instruct.json: ibm-granite/granite-3.1-3b-a800m-instruct's config.json with the
 * fields public copies of it list (sizes, experts, vocab, tie, rope_theta, max_position_embeddings); its muP
 * multipliers (embedding_multiplier, residual_multiplier, logits_scaling, attention_multiplier) are left at
 * GraniteMoeConfig's 1.0: each is a scalar factor, no tensor's size changes with it (the Scale layers stay).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "vramcalc/vramcalc.h"
#include "cli_run.h"
#include "fam_hf.h"
#include "cli_spelt.h"

#define HF VC_TEST_DATA "/hf/"

/* a tiny GraniteMoe by hand: vocab 1000, hidden 64, 2 layers, 4 heads / 2 kv heads of 16, 8 experts of 32, top-2 */
#define TINY "{\"model_type\":\"granitemoe\",\"vocab_size\":1000,\"hidden_size\":64,\"intermediate_size\":32," \
             "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"num_local_experts\":8," \
             "\"num_experts_per_tok\":2,\"max_position_embeddings\":4096,\"embedding_multiplier\":12,"         \
             "\"residual_multiplier\":0.22,\"logits_scaling\":6,\"attention_multiplier\":0.0625"

/* GraniteMoeForCausalLM's named_parameters(), by hand from the modules (modular_granitemoe.py @ 94cb76e8): embed_tokens
 * 49155 x 1536 = 75,502,080 (the lm_head tied to it), model.norm 1,536; a layer: q_proj and o_proj 2 x 1536 x 1536 =
 * 4,718,592, k_proj and v_proj 2 x 1536 x 512 = 1,572,864, block_sparse_moe.router.layer 40 x 1536 = 61,440,
 * input_linear [40, 1024, 1536] 62,914,560 and output_linear [40, 1536, 512] 31,457,280, two RMSNorms 3,072:
 * 100,727,808; x 32 = 3,223,289,856. Total 3,298,793,472: the published 3.3B (800M active: 8 of 40 experts). */
static void test_counts(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file_hf(HF "granite-3.1-3b-a800m-instruct.json", NULL, &m, &err) != VC_OK)
        fail_msg("%s: %s", err.path, err.msg);
    assert_int_equal(vc_model_parameters(m), INT64_C(3298793472));
    vc_model_free(m);
    /* the tiny one: embeddings 64,000, final norm 64; a layer: q 4,096, k 2,048, v 2,048, o 4,096, norms 128, router 512,
     * input_linear 8 x 64 x 64 = 32,768, output_linear 8 x 64 x 32 = 16,384: 62,080; x 2; the lm_head 64,000 unless
     * tied (GraniteMoeConfig: tie_word_embeddings False by default) */
    assert_int_equal(count_of(TINY "}"), 64000 + 64 + 2 * 62080 + 64000);
    assert_int_equal(count_of(TINY ",\"tie_word_embeddings\":true}"), 64000 + 64 + 2 * 62080);
    assert_int_equal(emitted(TINY "}", "\"style\":\t\"granitemoe\""), 1);
    /* granite's multipliers: the embedding, each residual branch (twice a layer) and the logits, Scale layers */
    assert_int_equal(emitted(TINY "}", "\"factor\":\t12"), 1);
    assert_int_equal(emitted(TINY "}", "\"factor\":\t0.22"), 2);
}

/* Bad or inconsistent values exit 2 naming the key or the option. */
static void test_bad_keys(void **state)
{
    (void)state;
    static const struct {
        const char *kv, *key;
    } bad[] = {
        {"\"hidden_act\":\"gelu_new\"", "hidden_act"}, /* the experts' activations */
        {"\"embedding_multiplier\":\"12\"", "embedding_multiplier"},
        {"\"residual_multiplier\":null", "residual_multiplier"},
        {"\"logits_scaling\":true", "logits_scaling"},
    };
    char js[1024];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(js, sizeof js, TINY ",%s}", bad[i].kv);
        vc_model *m = NULL;
        vc_error err;
        vc_status st = load_js(js, &m, &err);
        if (st == VC_OK) fail_msg("%s: accepted", bad[i].kv);
        assert_null(m);
        if (strcmp(CLI_PATH(&err), bad[i].key)) fail_msg("%s: path %s (%s)", bad[i].kv, err.path, err.msg);
    }
    vc_model *m = NULL;
    vc_error err;
    assert_int_equal(load_js("{\"model_type\":\"granitemoe\",\"vocab_size\":1000,\"hidden_size\":64,\"intermediate_size\":32,"
                             "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_local_experts\":2,"
                             "\"num_experts_per_tok\":3}", &m, &err), VC_ERR_MODEL);
    assert_string_equal(CLI_PATH(&err), "num_experts_per_tok");
    /* the per-expert loop runs in every release: --experts-implementation does not apply; --ep is not modelled */
    assert_usage(HF "granite-3.1-3b-a800m-instruct.json --experts-implementation per_expert", "--experts-implementation");
    assert_usage(HF "granite-3.1-3b-a800m-instruct.json --parallel ddp --gpus 8 --ep 8", "--ep");
}

/* generate: DynamicCache keeps full keys and values (2 kv heads x 16 per layer), fp32 by default: prompt 16 +
 * 4 new tokens, 19 cached after the last step, x 2 (k, v) x 2 layers x 2 heads x 16 x 4 B */
static void test_generate(void **state)
{
    (void)state;
    assert_int_equal(fam_kv_cache(TINY "}", 16, 4), 19 * 2 * 2 * 2 * 16 * 4);
}

/* --serve on 8 H100: a rank holds 1 of the 8 kv heads of 64, a KV block of 16 tokens 32 layers x 2 x 1 x 64 x 2 B x 16
 * = 131,072 B */
static void test_serve(void **state)
{
    (void)state;
    const char *out = cli_output(HF "granite-3.1-3b-a800m-instruct.json --serve --gpu h100-80gb --tp 8 --gpus 8");
    assert_non_null(strstr(out, "128.0 KiB per block"));
}

/* granitemoeshared (modular_granitemoeshared.py @ a878fc03): granitemoe's layer with GraniteMoeSharedMLP beside the
 * experts when shared_intermediate_size > 0. The tiny one with shared 48: + input_linear 64 x 96 = 6,144 and
 * output_linear 48 x 64 = 3,072 a layer. GraniteMoeSharedConfig's defaults (no public checkpoint's config.json was
 * found: the class's own sizes, shared_intermediate_size 0, so no shared MLP): embed_tokens and the untied lm_head
 * 2 x 32000 x 4096 = 262,144,000, final norm 4,096; a layer: q/k/v/o 4 x 4096 x 4096 = 67,108,864 (32 kv heads:
 * num_key_value_heads None), router 8 x 4096 = 32,768, input_linear [8, 22016, 4096] 721,420,288, output_linear
 * [8, 4096, 11008] 360,710,144, norms 8,192: 1,149,280,256; x 32: 36,776,968,192; total 37,039,116,288. */
static void test_shared(void **state)
{
    (void)state;
#define SHARED "{\"model_type\":\"granitemoeshared\",\"vocab_size\":1000,\"hidden_size\":64,\"intermediate_size\":32," \
               "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"num_local_experts\":8," \
               "\"num_experts_per_tok\":2,\"max_position_embeddings\":4096"
    assert_int_equal(count_of(SHARED ",\"shared_intermediate_size\":48}"), 64000 + 64 + 2 * (62080 + 9216) + 64000);
    assert_int_equal(count_of(SHARED "}"), 64000 + 64 + 2 * 62080 + 64000);
    assert_int_equal(emitted(SHARED ",\"shared_intermediate_size\":48}", "\"name\":\t\"shared_mlp.add\""), 1);
    assert_int_equal(count_of("{\"model_type\":\"granitemoeshared\"}"), INT64_C(37039116288));
    vc_model *m = NULL;
    vc_error err;
    assert_int_equal(load_js(SHARED ",\"shared_intermediate_size\":-1}", &m, &err), VC_ERR_MODEL);
    assert_string_equal(CLI_PATH(&err), "shared_intermediate_size");
    assert_int_equal(load_js(SHARED ",\"shared_intermediate_size\":1.5}", &m, &err), VC_ERR_MODEL);
    assert_string_equal(CLI_PATH(&err), "shared_intermediate_size");
#undef SHARED
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_bad_keys),
        cmocka_unit_test(test_generate),
        cmocka_unit_test(test_serve),
        cmocka_unit_test(test_shared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
