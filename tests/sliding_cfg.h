/* tests/sliding_cfg.h: the small Mistral config of the sliding-window mask tests (test_sliding_mask.c,
 * test_sliding_4x.c), written twice to temporary files: with a 32-token window (with_window) and with
 * "sliding_window": null (without_window), and the report's numbers the tests read. Include after cmocka.h,
 * cjson/cJSON.h and cli_doc.h; the test's group runs sliding_setup and sliding_teardown. */
#ifndef VC_TEST_SLIDING_CFG_H
#define VC_TEST_SLIDING_CFG_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *cfg_text =
    "{\"architectures\": [\"MistralForCausalLM\"], \"head_dim\": 16, \"hidden_act\": \"silu\", \"hidden_size\": 64,"
    " \"intermediate_size\": 128, \"max_position_embeddings\": 4096, \"model_type\": \"mistral\","
    " \"num_attention_heads\": 8, \"num_hidden_layers\": 2, \"num_key_value_heads\": 2, \"rms_norm_eps\": 1e-05,"
    " \"rope_theta\": 10000.0, \"sliding_window\": %s, \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\","
    " \"vocab_size\": 256}\n";

static char with_window[64], without_window[64];

static void write_cfg(char *path, const char *window)
{
    strcpy(path, "/tmp/vc_sliding_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fprintf(f, cfg_text, window);
    fclose(f);
}

static int sliding_setup(void **state)
{
    (void)state;
    write_cfg(with_window, "32");
    write_cfg(without_window, "null");
    return 0;
}

static int sliding_teardown(void **state)
{
    (void)state;
    unlink(with_window);
    unlink(without_window);
    return 0;
}

/* A number of the report: o[k1] or o[k1][k2]. */
static long long num(const cJSON *o, const char *k1, const char *k2)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k1);
    if (k2) v = cJSON_GetObjectItemCaseSensitive(v, k2);
    assert_true(cJSON_IsNumber(v));
    return (long long)v->valuedouble;
}

/* Training `cfg args -f json` (args with --per-layer, cli_doc.h): the two attention layers' activations and the
 * step's peak. */
static void sliding_train(const char *cfg, const char *args, long long act[2], long long *peak)
{
    char a[1024];
    snprintf(a, sizeof a, "%s %s -f json", cfg, args);
    cJSON *j = cli_doc(a);
    int k = 0;
    const cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(j, "layers")) {
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(l, "kind");
        if (cJSON_IsString(kind) && !strcmp(kind->valuestring, "RotaryAttention")) {
            assert_true(k < 2);
            act[k++] = num(l, "activations", NULL);
        }
    }
    assert_int_equal(k, 2);
    *peak = num(j, "memory", "peak_allocated");
    cJSON_Delete(j);
}

#endif
