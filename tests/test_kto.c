/*
 * test_kto.c — `--loss kto` (src/engine/loss.c emit_kto, the reference's forwards in src/engine/plan.c
 * vc__emit_reference): TRL's KTO step as trl/trainer/kto_trainer.py KTOTrainer._compute_loss runs it at
 * huggingface/trl @ f2cd57710ae345ea6428ae95363267fcf38a3dc8 (issue 26 item 5).
 *
 * 1. The refusals through the CLI: exit 2, nothing on stdout, one stderr line naming the option.
 * 2. The reference's weights: without PEFT one frozen copy for its two forwards (the KL sequences and
 *    the batch), the same bytes as DPO's; with LoRA none.
 * 3. The harness's measurements of bench/accuracy/llm/kto_replica.py (measured.json, the kto cases
 *    appended after the orpo ones; torch 1.13 CPU, the allocator counter).
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

#define LLMCFG VC_TEST_DATA "/../../bench/accuracy/llm/configs/"

static void test_refused(void **state)
{
    (void)state;
    const char *c = LLMCFG "llama_vocab8k.json";
    char a[1024];
    snprintf(a, sizeof a, "%s --loss kto -b 3", c);
    assert_usage(a, "--batch 3 is odd: with --loss kto it counts the examples, modelled half desirable");
    snprintf(a, sizeof a, "%s --loss kto --max-batch --gpu 24GiB", c);
    assert_usage(a, "--max-batch with --loss kto is not modelled: the batch's halves");
    snprintf(a, sizeof a, "%s --loss kto -p amp-bf16", c);
    assert_usage(a, "--loss: kto under autocast (amp-bf16) is not modelled");
    snprintf(a, sizeof a, "%s --loss kto --parallel ddp --gpus 2", c);
    assert_usage(a, "--loss: kto is modelled on one GPU");
    snprintf(a, sizeof a, "%s --loss kto --hold-output", c);
    assert_usage(a, "--hold-output: kto: KTOTrainer.compute_loss returns the loss only");
    snprintf(a, sizeof a, "%s --loss kto --lora 8 --peft dora --modules-to-save lm_head", c);
    assert_usage(a, "--modules-to-save disabled is not modelled");
    cli_run r;
    snprintf(a, sizeof a, "%s --loss kto", c);
    run(&r, a);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "train, batch 2,"));
}

/* KTOTrainer's reference is DPOTrainer's (create_model_from_path; use_adapter(None) with PEFT): one copy
 * for both of its forwards, so the weights equal --loss dpo's (twice the model's without PEFT) */
static void test_reference(void **state)
{
    (void)state;
    char k[512], d[512], h[512];
    const char *c = LLMCFG "llama_vocab8k.json -b 2 --seq 64 -p bf16";
    snprintf(k, sizeof k, "%s --loss kto", c);
    snprintf(d, sizeof d, "%s --loss dpo", c);
    snprintf(h, sizeof h, "%s --loss hf", c);
    long long wk = cli_json_field(k, "\"weights\": "), wd = cli_json_field(d, "\"weights\": "),
              wh = cli_json_field(h, "\"weights\": ");
    assert_int_equal(wk, wd);
    assert_int_equal(wk, 2 * wh);
    snprintf(k, sizeof k, "%s --loss kto --lora 8", c);
    snprintf(h, sizeof h, "%s --loss hf --lora 8", c);
    assert_int_equal(cli_json_field(k, "\"weights\": "), cli_json_field(h, "\"weights\": "));
}

static void test_measured(void **state)
{
    (void)state;
    /* bench/accuracy/llm/measured.json, run_suite.py's `kto` rows: measure_llm.py --loss kto, peak_allocated
     * in bytes (the estimates' errors when they were measured: -0.02% ... -1.63%) */
    static const cli_measured cases[] = {
        {"llama_vocab8k.json --seq 64 -b 4 -o adamw -p bf16", 34470912},
        {"llama_vocab8k.json --seq 64 -b 4 -o adamw -p fp32", 59398144},
        {"llama_vocab8k.json --seq 64 -b 4 -o adamw -p bf16 --lora 8 --lora-alpha 16 --lora-dropout 0 "
         "--lora-targets q_proj,v_proj", 27250176},
        {"qwen2_vocab6k.json --seq 96 -b 2 -o adamw -p fp32 --lora 8 --lora-alpha 16 --lora-dropout 0 "
         "--lora-targets q_proj,v_proj", 31221248},
        {"llama_wide.json --seq 64 -b 2 -o sgd -p fp32 --grad-ckpt", 76616704},
    };
    assert_measured(cases, sizeof cases / sizeof *cases, " --loss kto", 0.1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_reference),
        cmocka_unit_test(test_measured),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
