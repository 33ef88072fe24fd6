/*
 * test_fam_ministral.c — the ministral family row (issue 31; src/hf/hf.c's row): MinistralForCausalLM
 * (configuration_ministral.py @ 052b1dcd, modeling_ministral.py @ 3edd469d), Qwen2's decoder without the q/k/v
 * biases, sliding or full attention per layer_types (every layer sliding when absent and sliding_window set).
 *
 * 1. Ministral-8B-Instruct-2410's parameters by hand, against the model card's; MinistralConfig()'s defaults.
 * 2. The layers are Mistral's: with every layer sliding (layer_types absent) the same runs as the mistral row's
 *    model of the same keys (training, -m infer, -m generate past the window).
 * 3. The ragged pattern: the generate cache of the full and sliding layers, by hand.
 * 4. Bad values name their key; --serve runs.
 *
 * tests/data/hf/ministral-8b-instruct-2410.json is not a copy of a published file (none with model_type ministral
 * was found with the code search): it is MinistralConfig's keys with the values the model card publishes for
 * Ministral-8B-Instruct-2410 (36 layers, 32 heads, dim 4,096, 8 kv heads, hidden dim 12,288, head dim 128, vocabulary
 * 131,072, context 128k, "Attention Pattern: Ragged (128k,32k,32k,32k)": layer_types full, sliding, sliding,
 * sliding repeated, sliding_window 32,768) and rope_theta 1e8 from the published Mistral-format config.
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
#include <cjson/cJSON.h>

#include "cli_run.h"
#include "vramcalc/vramcalc.h"

#define M8B VC_TEST_DATA "/hf/ministral-8b-instruct-2410.json"

static int64_t params_of(const char *js)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string_hf(js, strlen(js), "config.json", NULL, &m, &err) != VC_OK)
        fail_msg("%s: %s: %s", js, err.path, err.msg);
    const int64_t n = vc_model_parameters(m);
    vc_model_free(m);
    return n;
}

/* Ministral-8B: embed_tokens and lm_head 131,072 x 4,096 = 536,870,912 each; a MinistralDecoderLayer: q_proj and
 * o_proj 4,096 x 4,096 = 16,777,216 each, k_proj and v_proj 4,096 x 1,024 = 4,194,304 each (no biases), the MLP
 * 3 x 4,096 x 12,288 = 150,994,944, two RMSNorms 8,192: 192,946,176, x 36 = 6,946,062,336; norm 4,096: in all
 * 8,019,808,256, the model card's "Parameters 8,019,808,256".
 * MinistralConfig() (vocabulary 32,000, hidden 4,096, 32 layers, 32 heads, 8 kv heads, intermediate 14,336, head_dim
 * None: 128): embeddings 2 x 131,072,000; a layer 41,943,040 + 3 x 4,096 x 14,336 + 8,192 = 218,112,000, x 32 =
 * 6,979,584,000; norm 4,096: 7,241,732,096 (Mistral-7B's shapes). */
static void test_parameters(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file_hf(M8B, NULL, &m, &err) != VC_OK) fail_msg("%s: %s", err.path, err.msg);
    assert_int_equal(vc_model_parameters(m), INT64_C(8019808256));
    vc_model_free(m);
    assert_int_equal(params_of("{\"model_type\":\"ministral\"}"), INT64_C(7241732096));
    assert_int_equal(params_of("{\"model_type\":\"ministral\",\"head_dim\":null}"), INT64_C(7241732096));
}

static void write_file(char *path, const char *text)
{
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

/* MinistralAttention is Qwen2Attention without biases, with sliding_window on its "sliding_attention" layers, and
 * MinistralModel builds create_sliding_window_causal_mask for them: with every layer sliding the same model as
 * MistralForCausalLM with that window (modeling_mistral.py), so the same estimate, whatever the mode */
static void test_as_mistral(void **state)
{
    (void)state;
    static const char keys[] = "\"vocab_size\":1000,\"hidden_size\":256,\"intermediate_size\":512,\"num_hidden_layers\":3,"
                               "\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":64,\"sliding_window\":48,"
                               "\"max_position_embeddings\":4096}";
    char mi[512], mn[512];
    snprintf(mi, sizeof mi, "{\"model_type\":\"mistral\",%s", keys);
    snprintf(mn, sizeof mn, "{\"model_type\":\"ministral\",%s", keys);
    char pi[] = "/tmp/vc_mi_XXXXXX", pn[] = "/tmp/vc_mn_XXXXXX";
    write_file(pi, mi);
    write_file(pn, mn);
    static const char *const modes[] = {"--seq 128", "--seq 32 --batch 2 --lora 8 --lora-targets q_proj,v_proj",
                                        "-m infer --seq 96", "-m generate --prompt 64 --new-tokens 8"};
    char a[512];
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
        snprintf(a, sizeof a, "%s %s", pi, modes[i]);
        const long long want = cli_json_field(a, "\"peak_allocated\": ");
        snprintf(a, sizeof a, "%s %s", pn, modes[i]);
        assert_int_equal(cli_json_field(a, "\"peak_allocated\": "), want);
    }
    remove(pi);
    remove(pn);
}

/* The ragged pattern under -m generate (bf16, a 40,000-token prompt, 16 new tokens): the 9 full layers keep every
 * token, 40,016 - 1 = 40,015 (DynamicLayer: the last token is not yet cached), the 27 sliding layers 32,768
 * (DynamicSlidingWindowLayer.update, cache_utils.py @ 004999d9, keeps the last sliding_window - 1 tokens, and a
 * step's cat adds one); a token of a layer is K and V of 8 kv heads x 128 in bf16, 4,096 B:
 * 9 x 40,015 x 4,096 + 27 x 32,768 x 4,096 = 1,475,112,960 + 3,623,878,656 = 5,098,991,616 B */
static void test_ragged_cache(void **state)
{
    (void)state;
    cli_run r;
    run(&r, M8B " -m generate --prompt 40000 --new-tokens 16 -p bf16 -f json");
    if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
    const char *p = strstr(r.out, "\"kv_cache\": ");
    assert_non_null(p);
    assert_int_equal(strtoll(p + strlen("\"kv_cache\": "), NULL, 10), 5098991616LL);
}

static void test_bad_keys(void **state)
{
    (void)state;
    static const struct { const char *js, *path; } bad[] = {
        {"{\"model_type\":\"ministral\",\"layer_types\":[\"full_attention\"]}", "layer_types"},
        {"{\"model_type\":\"ministral\",\"num_hidden_layers\":2,\"layer_types\":[\"full_attention\",\"chunked\"]}",
         "layer_types"},
        {"{\"model_type\":\"ministral\",\"sliding_window\":-1}", "sliding_window"},
        {"{\"model_type\":\"ministral\",\"num_key_value_heads\":5}", "num_key_value_heads"},
        {"{\"model_type\":\"ministral\",\"head_dim\":\"128\"}", "head_dim"},
        {"{\"model_type\":\"ministral\",\"hidden_act\":\"quick_gelu\"}", "hidden_act"},
    };
    vc_model *m = NULL;
    vc_error err;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(vc_model_load_string_hf(bad[i].js, strlen(bad[i].js), "config.json", NULL, &m, &err), VC_ERR_MODEL);
        if (strcmp(err.path, bad[i].path)) fail_msg("%s: %s: %s (wanted %s)", bad[i].js, err.path, err.msg, bad[i].path);
    }
    (void)cli_output(M8B " --serve --gpu h100-80gb");
    (void)cli_output(M8B " --serve --gpu h100-80gb --tp 2 --gpus 2");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parameters),
        cmocka_unit_test(test_as_mistral),
        cmocka_unit_test(test_ragged_cache),
        cmocka_unit_test(test_bad_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
