/*
 * test_gemma2_attn.c — gemma2's default attention by --transformers release (src/policy/release.c
 * VC_TF_GEMMA2_EAGER, src/hf/hf.c .eager_release, src/hf/hf_layers.c attn_core).
 *
 * 4.45 and 4.46: Gemma2PreTrainedModel._check_and_enable_sdpa (PR #32865, commit 975b988b) swaps
 * the default sdpa for eager; PR #34282 removed the override before 4.47.0: modeling_gemma2.py
 * @006e86931247d7bacf94ad00ada1fb6baf11e94b and @5dd4a63548857797727ae73eeb6a6e886ea02a3e define
 * none, so PreTrainedModel's default, sdpa, runs (sdpa_attention_forward: no softcap).
 *
 * 1. The table: eager at 4.46, sdpa from 4.47 to 5.0 (the default).
 * 2. The layer a config becomes (--emit-model): "eager" and "softcap" at 4.46, neither from 4.47.
 * 3. What eager holds: the [b, h, s, s] scores, by hand (below).
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

#include "release.h"
#include "cli_doc.h"

#define GEMMA2 VC_TEST_DATA "/hf/gemma-2-9b.json"

/* 1. VC_TF_GEMMA2_EAGER by release (0: the default, 5.0) */
static void test_table(void **state)
{
    (void)state;
    assert_int_equal(vc_transformers_value(446, VC_TF_GEMMA2_EAGER), 1);
    for (int v = 447; v <= VC_TRANSFORMERS_LAST_4X; v++)
        assert_int_equal(vc_transformers_value(v, VC_TF_GEMMA2_EAGER), 0);
    assert_int_equal(vc_transformers_value(500, VC_TF_GEMMA2_EAGER), 0);
    assert_int_equal(vc_transformers_value(0, VC_TF_GEMMA2_EAGER), 0);
}

/* The RotaryAttention layers of an --emit-model document's layers (depth first): how many, how
 * many with "eager": true, how many with "softcap": 50. */
static void count_attention(const cJSON *layers, int n[3])
{
    const cJSON *l;
    cJSON_ArrayForEach(l, layers) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(l, "type");
        if (cJSON_IsString(t) && !strcmp(t->valuestring, "RotaryAttention")) {
            const cJSON *cap = cJSON_GetObjectItemCaseSensitive(l, "softcap");
            n[0]++;
            n[1] += cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(l, "eager"));
            n[2] += cJSON_IsNumber(cap) && cap->valuedouble == 50.0;
        }
        count_attention(cJSON_GetObjectItemCaseSensitive(l, "layers"), n);
    }
}

/* 2. The attention layers (num_hidden_layers 42): eager_attention_forward with
 * attn_logit_softcapping (50.0 in the config) at 4.46; sdpa from 4.47 and at the default,
 * without the softcap (sdpa_attention_forward takes none) */
static void test_layer(void **state)
{
    (void)state;
    const char *rel[] = {"4.46", "4.47", "4.57", "5.0", NULL};
    for (int i = 0; i < 5; i++) {
        char a[512];
        snprintf(a, sizeof a, "%s --seq 256 --emit-model%s%s", GEMMA2, rel[i] ? " --transformers " : "",
                 rel[i] ? rel[i] : "");
        cJSON *j = cli_doc(a);
        int n[3] = {0, 0, 0};
        count_attention(cJSON_GetObjectItemCaseSensitive(j, "layers"), n);
        assert_int_equal(n[0], 42);
        assert_int_equal(n[1], i == 0 ? 42 : 0);
        assert_int_equal(n[2], i == 0 ? 42 : 0);
        cJSON_Delete(j);
    }
}

/* The activations --per-layer gives the first two attention layers (decoder layer 0, sliding,
 * and 1, global) of gemma-2-9b, batch 2, bf16, at seq s under release rel. */
static void attn_acts(const char *rel, int s, long long out[2])
{
    char a[512];
    snprintf(a, sizeof a, "%s --transformers %s --seq %d -b 2 -p bf16 --per-layer -f json", GEMMA2, rel, s);
    cJSON *j = cli_doc(a);
    int k = 0;
    const cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(j, "layers")) {
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(l, "kind");
        if (k < 2 && cJSON_IsString(kind) && !strcmp(kind->valuestring, "RotaryAttention"))
            out[k++] = (long long)cJSON_GetObjectItemCaseSensitive(l, "activations")->valuedouble;
    }
    assert_int_equal(k, 2);
    cJSON_Delete(j);
}

/* 3. What one attention layer holds for backward, at s = 256, 512 and 768 (all within the
 * 4096-token window: the sliding layer's mask is the causal one). gemma-2-9b: h = 16 heads
 * (num_attention_heads), 8 kv heads, head_dim D = 256; b = 2; bf16.
 * Eager (eager_attention_forward @5dd4a63 as 4.46 runs it), per layer, the [b, h, s, s] tensors
 * saved: tanh's output (the softcapping's, saved by tanh's backward: 2 B), softmax's float32
 * output (dtype=torch.float32: 4 B) and its .to(bf16) (matmul(weights, v)'s saved input: 2 B):
 * 8 B x b x h x s^2; the rest is linear in s (the [b, h, s, D] operands: q's copy for matmul's
 * fold, repeat_kv's k and v). The second difference f(3s) - 2 f(2s) + f(s) keeps the s^2 term
 * only: 8 x b x h x (9 - 8 + 1) x s^2 = 8 x 2 x 16 x 2 x 256^2 = 33,554,432 bytes.
 * sdpa (4.47 on; --attention auto picks flash at bf16): no [b, h, s, s] tensor held, the
 * second difference 0. Both layer types alike (s below the window). */
static void test_scores(void **state)
{
    (void)state;
    long long e[3][2], s5[3][2], s47[3][2];
    for (int i = 0; i < 3; i++) {
        attn_acts("4.46", 256 * (i + 1), e[i]);
        attn_acts("5.0", 256 * (i + 1), s5[i]);
        attn_acts("4.47", 256 * (i + 1), s47[i]);
    }
    for (int l = 0; l < 2; l++) {
        assert_int_equal(e[2][l] - 2 * e[1][l] + e[0][l], 8LL * 2 * 16 * 2 * 256 * 256);
        assert_int_equal(s5[2][l] - 2 * s5[1][l] + s5[0][l], 0);
        for (int i = 0; i < 3; i++) {
            assert_int_equal(s47[i][l], s5[i][l]); /* 4.47 runs as 5.0 here */
            assert_true(e[i][l] > s5[i][l]);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_layer),
        cmocka_unit_test(test_scores),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
