/*
 * test_trl_release.c — the TRL release as a table (issue 26; src/policy/release.c's third table,
 * --trl X.Y, read by the trl: rows of --recipe, src/policy/recipe.c).
 *
 * 1. The names the table takes (1.0 to 1.9) and its rows' values, each as the tag's source says it
 *    (huggingface/trl, the tags read in the local mirror; release.c cites file and tag per row).
 * 2. Through the CLI on Llama 3.1 8B (tests/data/hf/llama-3.1-8b.json, the published config): each
 *    release's trl:sft and trl:grpo are their options given by hand, the rows' effects on the
 *    estimate derived by hand, and the refusals (exit 2, one line naming --trl).
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

#include "cli_run.h"
#include "release.h"

#define LLAMA31_8B VC_TEST_DATA "/hf/llama-3.1-8b.json"

static void test_names(void **state)
{
    (void)state;
    assert_int_equal(vc_trl_from_name("1.0"), 100);
    assert_int_equal(vc_trl_from_name("1.6"), 106);
    assert_int_equal(vc_trl_from_name("1.9"), 109);
    assert_int_equal(VC_TRL_DEFAULT, 109); /* v1.9.0, the newest tag */
    /* outside the table (0.29 and before: GRPO's out-of-place logits / temperature and vllm_mode "server"; 1.10 and
     * 2.0: no such tag), or not a release's name */
    const char *bad[] = {"0.29", "0.19", "1.10", "2.0", "1.09", "1.", "1", "", "x", " 1.9", "1.9 ", "+1.9", "01.9", NULL};
    for (int i = 0; bad[i]; i++)
        if (vc_trl_from_name(bad[i]) != -1) fail_msg("'%s' taken", bad[i]);
    assert_int_equal(vc_trl_from_name(NULL), -1);
}

static const char *value(int version, vc_trl_what what, const char **why) { return vc_trl_value(version, what, why); }

static void test_rows(void **state)
{
    (void)state;
    const char *why = "unset";
    /* SFTConfig.loss_type: nll at 1.6 (None, set to "nll" by __post_init__: sft_config.py @ v1.6.0 l.297-308),
     * chunked_nll from 1.7 (__post_init__ @ v1.7.0 l.335-336); 1.7's chunked loss is not modelled (hidden[valid]),
     * 1.8's is (argsort, hidden[order]; v1.9.0 the same function) */
    assert_string_equal(value(106, VC_TRL_SFT_LOSS, &why), "nll");
    assert_null(why);
    assert_string_equal(value(107, VC_TRL_SFT_LOSS, &why), "chunked-nll");
    assert_non_null(why);
    assert_string_equal(value(108, VC_TRL_SFT_LOSS, &why), "chunked-nll");
    assert_null(why);
    assert_string_equal(value(0, VC_TRL_SFT_LOSS, &why), "chunked-nll");
    assert_null(why);
    /* SFTTrainer.compute_loss's metrics: 1.0 to 1.5 copy the logits (.contiguous()), not modelled; 1.6 on are */
    for (int v = 100; v <= 105; v++) {
        assert_null(value(v, VC_TRL_SFT_STEP, &why));
        assert_non_null(why);
    }
    for (int v = 106; v <= 109; v++) {
        value(v, VC_TRL_SFT_STEP, &why);
        assert_null(why);
    }
    /* at every release named: gradient_checkpointing True (SFTConfig/GRPOConfig from v0.22.0, base_config.py's
     * from v0.29.0) with use_reentrant False (setdefault from v0.28.0), GRPOConfig.beta 0.0 (from v0.19.0; 0.04 before),
     * max_completion_length 256 (every tag to v1.9.0; 512 only on main after it) */
    for (int v = 100; v <= 109; v++) {
        assert_string_equal(value(v, VC_TRL_SFT_CKPT, NULL), "true");
        assert_string_equal(value(v, VC_TRL_SFT_CKPT_KIND, NULL), "non-reentrant");
        assert_string_equal(value(v, VC_TRL_GRPO_CKPT, NULL), "true");
        assert_string_equal(value(v, VC_TRL_GRPO_CKPT_KIND, NULL), "non-reentrant");
        assert_string_equal(value(v, VC_TRL_GRPO_BETA, NULL), "0");
        assert_string_equal(value(v, VC_TRL_GRPO_NEW_TOKENS, &why), "256");
        assert_null(why);
    }
}

/* the CLI's JSON for args without its "recipe" line (which names the preset and the release) */
static void json_without_recipe(const char *args, char *out, size_t n)
{
    snprintf(out, n, "%s", cli_output(args));
    char *at = strstr(out, "\n  \"recipe\": {");
    if (at) {
        char *end = strchr(at + 1, '\n');
        assert_non_null(end);
        memmove(at, end, strlen(end) + 1);
    }
}

static long long field(const char *json, const char *key)
{
    const char *p = strstr(json, key);
    if (!p) fail_msg("no %s", key);
    return strtoll(p + strlen(key), NULL, 10);
}

/* trl:sft at 1.6 is its options with --loss nll, at 1.8 and 1.9 with --loss chunked-nll. Batch 8 (TrainingArguments'
 * per_device_train_batch_size), seq 256, vocabulary 128,256: nll's saved activations exceed chunked-nll's by the
 * fp32 log_softmax output [B x L, V] that ForCausalLMLoss's cross_entropy saves for backward (src/engine/loss.c
 * emit_ce), 8 x 256 x 128,256 x 4 = 1,050,673,152 bytes, which chunked_nll recomputes per 256-token chunk under a
 * checkpoint instead, plus nll's own [B, L]-sized tensors (the shifted labels and masks: under 64 KiB here). */
static void test_sft(void **state)
{
    (void)state;
    static char a[16384], b[16384];
    const char *hand = LLAMA31_8B " --seq 256 -f json --precision bf16 --batch 8 --optim adamw --optim-impl foreach "
                                  "--grad-ckpt --grad-ckpt-kind non-reentrant";
    char args[1024];
    json_without_recipe(LLAMA31_8B " --seq 256 -f json --recipe trl:sft --trl 1.6", a, sizeof a);
    snprintf(args, sizeof args, "%s --loss nll", hand);
    json_without_recipe(args, b, sizeof b);
    assert_string_equal(a, b);
    const long long nll = field(a, "\"activations\": ");
    json_without_recipe(LLAMA31_8B " --seq 256 -f json --recipe trl:sft", a, sizeof a);
    snprintf(args, sizeof args, "%s --loss chunked-nll", hand);
    json_without_recipe(args, b, sizeof b);
    assert_string_equal(a, b);
    json_without_recipe(LLAMA31_8B " --seq 256 -f json --recipe trl:sft --trl 1.8", b, sizeof b);
    assert_string_equal(a, b);
    const long long chunked = field(a, "\"activations\": ");
    const long long logsoftmax = 8LL * 256 * 128256 * 4;
    assert_true(nll - chunked >= logsoftmax && nll - chunked < logsoftmax + 65536);
    /* the report names the release its values are */
    assert_non_null(strstr(cli_output(LLAMA31_8B " --seq 256 -f json --recipe trl:sft --trl 1.6"),
                           "\"source\": \"huggingface/trl trl/trainer/sft_config.py\", \"trl\": \"1.6\", \"set\": {"));
    assert_non_null(strstr(cli_output(LLAMA31_8B " --seq 256 -f json --recipe trl:sft --trl 1.6"), "\"loss\": \"nll\""));
    /* a --loss given wins over the release's (1.8's chunked-nll: the preset's loss is not the release's row) */
    json_without_recipe(LLAMA31_8B " --seq 256 -f json --recipe trl:sft --trl 1.8 --loss nll", b, sizeof b);
    json_without_recipe(LLAMA31_8B " --seq 256 -f json --recipe trl:sft --trl 1.6", a, sizeof a);
    assert_string_equal(a, b);
}

/* trl:grpo: GRPOConfig's max_completion_length is 256 at every release named (and beta 0.0, checkpointing on), so
 * 1.0 and 1.9 give one report. Its generation's DynamicCache on Llama 3.1 8B (32 layers, 8 KV heads of 128, bf16:
 * K and V 2 x 8 x 128 x 2 = 4,096 bytes a token a layer, 131,072 a token) over 8 sequences (per_device_train_batch_size
 * 8) holds prompt + completion - 1 positions (the last sampled token is never fed back): 64 + 256 - 1 = 319, so
 * 319 x 8 x 131,072 = 334,495,744 bytes; main's 512 after v1.9.0 (--new-tokens 512): 575 x 1,048,576 = 602,931,200. */
static void test_grpo(void **state)
{
    (void)state;
    static char a[16384], b[16384];
    json_without_recipe(LLAMA31_8B " --prompt 64 -f json --recipe trl:grpo", a, sizeof a);
    json_without_recipe(LLAMA31_8B " --prompt 64 -f json --recipe trl:grpo --trl 1.0", b, sizeof b);
    assert_string_equal(a, b);
    json_without_recipe(LLAMA31_8B " --prompt 64 -f json --loss grpo --num-generations 8 --new-tokens 256 --beta 0 "
                                   "--batch 8 --precision bf16 --optim adamw --optim-impl foreach --grad-ckpt "
                                   "--grad-ckpt-kind non-reentrant",
                        b, sizeof b);
    assert_string_equal(a, b);
    assert_non_null(strstr(a, "\"beta\": 0, \"num_generations\": 8, \"prompt\": 64, \"max_completion_length\": 256,"));
    assert_int_equal(field(a, "\"kv_cache\": "), 334495744LL);
    json_without_recipe(LLAMA31_8B " --prompt 64 -f json --recipe trl:grpo --new-tokens 512", b, sizeof b);
    assert_int_equal(field(b, "\"kv_cache\": "), 602931200LL);
}

/* Refused, exit 2 with one line naming --trl: a release outside the table, the releases whose trl:sft step is not
 * modelled, --trl without a trl: recipe (with none, with torchtune's, with a model file). */
static void test_refusals(void **state)
{
    (void)state;
    assert_usage(LLAMA31_8B " --recipe trl:sft --trl 0.29", "--trl: unknown value '0.29' (choose a release from 1.0 to 1.9)");
    assert_usage(LLAMA31_8B " --recipe trl:grpo --trl 1.10", "--trl: unknown value '1.10' (choose a release from 1.0 to 1.9)");
    assert_usage(LLAMA31_8B " --recipe trl:sft --trl 1.5", "--trl 1.5 with --recipe trl:sft: SFTTrainer.compute_loss's metrics");
    assert_usage(LLAMA31_8B " --recipe trl:sft --trl 1.0", "--trl 1.0 with --recipe trl:sft:");
    assert_usage(LLAMA31_8B " --recipe trl:sft --trl 1.7", "--trl 1.7 with --recipe trl:sft: TRL 1.7's chunked_nll");
    assert_usage(LLAMA31_8B " --trl 1.9", "--trl is the TRL release a trl: --recipe follows (trl:sft, trl:grpo)");
    assert_usage(LLAMA31_8B " --trl 1.9 --recipe torchtune:llama3_1/8B_lora",
                 "--trl is the TRL release a trl: --recipe follows: torchtune:llama3_1/8B_lora follows none");
    assert_usage(VC_EXAMPLES "/tiny_resnet.json --trl 1.9", "--trl is the TRL release a trl: --recipe follows");
    /* 1.7 with the user's own loss: the release's loss row does not apply, and its step is 1.6's */
    cli_output(LLAMA31_8B " --seq 256 --recipe trl:sft --trl 1.7 --loss nll");
    /* trl:grpo at every release named */
    char args[256];
    for (int v = 0; v <= 9; v++) {
        snprintf(args, sizeof args, LLAMA31_8B " --prompt 64 --recipe trl:grpo --trl 1.%d", v);
        cli_output(args);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names), cmocka_unit_test(test_rows), cmocka_unit_test(test_sft),
        cmocka_unit_test(test_grpo),  cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
