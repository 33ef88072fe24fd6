/*
 * test_dpo.c — `--loss dpo` and `--loss dpo-precomputed` (src/engine/loss.c emit_dpo, the
 * reference forward in src/engine/plan.c vc__emit_reference): TRL's DPOTrainer step as
 * trl/trainer/dpo_trainer.py DPOTrainer._compute_loss runs it at huggingface/trl
 * @ f2cd57710ae345ea6428ae95363267fcf38a3dc8 (issue 26 item 5).
 *
 * 1. The refusals through the CLI: exit 2, nothing on stdout, one stderr line naming the option.
 * 2. The reference's weights by hand: without PEFT a frozen copy (create_model_from_path, the
 *    same checkpoint in the same dtype): the persistent weights exactly twice the model's
 *    (the same tensors, each rounded to 512 B); with LoRA the model's own with the adapters
 *    disabled (use_adapter): no copy; with precompute_ref_log_probs no reference at all.
 * 3. llama_vocab8k.json against the harness's measurements of bench/accuracy/llm/dpo_replica.py
 *    (measured.json llm251-llm253 and llm259, torch 1.13 CPU, the allocator counter).
 * 4. One plan for every batch: an estimator's replays equal fresh estimates.
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
#include "vramcalc/vramcalc.h"

#define LLMCFG VC_TEST_DATA "/../../bench/accuracy/llm/configs/"

static void test_cli(void **state)
{
    (void)state;
    const char *c = LLMCFG "llama_vocab8k.json";
    char a[1024];
    /* --batch counts the concatenated [chosen; rejected] sequences: an odd count is no batch of pairs */
    snprintf(a, sizeof a, "%s --loss dpo -b 3", c);
    assert_usage(a, "--batch 3 is odd: with --loss dpo it counts the sequences");
    snprintf(a, sizeof a, "%s --loss dpo-precomputed -b 5", c);
    assert_usage(a, "--batch 5 is odd: with --loss dpo-precomputed");
    snprintf(a, sizeof a, "%s --loss dpo --max-batch --gpu 24GiB", c);
    assert_usage(a, "--max-batch with --loss dpo is not modelled");
    snprintf(a, sizeof a, "%s --loss dpo --sweep 2,4", c);
    assert_usage(a, "--sweep with --loss dpo is not modelled");
    snprintf(a, sizeof a, "%s --loss dpo -p amp-bf16", c);
    assert_usage(a, "--loss: dpo under autocast (amp-bf16) is not modelled");
    snprintf(a, sizeof a, "%s --loss dpo --hold-output", c);
    assert_usage(a, "--hold-output: dpo: DPOTrainer.compute_loss returns the loss only");
    snprintf(a, sizeof a, "%s --loss dpo --parallel ddp --gpus 2", c);
    assert_usage(a, "--loss: dpo is modelled on one GPU");
    snprintf(a, sizeof a, "%s --loss dpo --tp 2", c);
    assert_usage(a, "--loss: dpo with --tp is not modelled");
    snprintf(a, sizeof a, "%s --loss dpo --peft dora --lora 8 --modules-to-save lm_head", c);
    assert_usage(a, "--modules-to-save disabled is not modelled");
    snprintf(a, sizeof a, "%s --loss dpo -m infer", c);
    assert_usage(a, "--loss does not apply to --mode infer");
    /* without --batch: one pair, the two sequences */
    cli_run r;
    snprintf(a, sizeof a, "%s --loss dpo --lora 8", c);
    run(&r, a);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "train, batch 2,"));
}

static vc_status estimate(vc_loss_impl loss, int64_t batch, vc_precision p, int64_t lora, vc_result *r)
{
    vc_hf_options hf;
    vc_hf_options_init(&hf);
    hf.seq = 64;
    hf.loss = loss;
    vc_options o;
    vc_options_init(&o);
    o.batch = batch;
    o.precision = p;
    o.optim = VC_OPTIM_ADAMW;
    o.attention = VC_ATTN_MATH;
    o.workspace = 0;
    vc_error err;
    vc_model *m = NULL;
    vc_status st = vc_model_load_file_hf(LLMCFG "llama_vocab8k.json", &hf, &m, &err);
    if (st == VC_OK && lora) {
        vc_lora l;
        vc_lora_init(&l);
        l.r = lora;
        l.alpha = 16;
        snprintf(l.targets, sizeof l.targets, "q_proj,v_proj");
        st = vc_model_set_lora(m, &l, &err);
    }
    if (st == VC_OK) st = vc_estimate(m, &o, r, &err);
    if (st) fprintf(stderr, "%s\n", err.msg);
    vc_model_free(m);
    return st;
}

/* The reference's weights. llama_vocab8k.json in bf16: the policy's weights and buffers are
 * 2,284,544 B (the dpo-precomputed run: no reference, as trl keeps none with
 * precompute_ref_log_probs=True and no ref_model); the frozen copy adds the same again
 * (4,569,088 = 2 x 2,284,544: create_model_from_path loads every parameter and buffer in the
 * model's dtype); LoRA's reference is the model with its adapters disabled: no bytes. */
static void test_reference_weights(void **state)
{
    (void)state;
    vc_result pre, dpo, lpre, ldpo;
    assert_int_equal(estimate(VC_LOSS_IMPL_DPO_PRECOMPUTED, 4, VC_PREC_BF16, 0, &pre), VC_OK);
    assert_int_equal(estimate(VC_LOSS_IMPL_DPO, 4, VC_PREC_BF16, 0, &dpo), VC_OK);
    assert_int_equal(estimate(VC_LOSS_IMPL_DPO_PRECOMPUTED, 4, VC_PREC_BF16, 8, &lpre), VC_OK);
    assert_int_equal(estimate(VC_LOSS_IMPL_DPO, 4, VC_PREC_BF16, 8, &ldpo), VC_OK);
    assert_int_equal(pre.memory.weights, 2284544);
    assert_int_equal(dpo.memory.weights, 2 * 2284544);
    assert_int_equal(ldpo.memory.weights, lpre.memory.weights);
    /* the reference forward's logits and transients come on top in the forward */
    assert_true(dpo.memory.peak_allocated > pre.memory.peak_allocated);
    assert_true(ldpo.memory.peak_allocated > lpre.memory.peak_allocated);
    vc_result_free(&pre);
    vc_result_free(&dpo);
    vc_result_free(&lpre);
    vc_result_free(&ldpo);
}

/* bench/accuracy/llm/measured.json (dpo_replica.py: the TRL code at the pinned commit, on
 * torch 1.13 CPU): llama_vocab8k.json, 64 tokens, adamw, 4 sequences (2 pairs):
 *   llm251 bf16 dpo 34,457,600 B; llm252 fp32 dpo 59,384,832 B; llm253 bf16 LoRA r8 dpo
 *   27,236,864 B; llm259 bf16 dpo-precomputed 27,978,752 B (held out: llm253, llm259).
 * Each estimate is within 0.05% (--attention math --workspace 0, as compare.py runs them). */
static void test_measured(void **state)
{
    (void)state;
    const struct { vc_loss_impl loss; vc_precision p; int64_t lora, measured; } cases[] = {
        {VC_LOSS_IMPL_DPO, VC_PREC_BF16, 0, INT64_C(34457600)},
        {VC_LOSS_IMPL_DPO, VC_PREC_FP32, 0, INT64_C(59384832)},
        {VC_LOSS_IMPL_DPO, VC_PREC_BF16, 8, INT64_C(27236864)},
        {VC_LOSS_IMPL_DPO_PRECOMPUTED, VC_PREC_BF16, 0, INT64_C(27978752)}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        vc_result r;
        assert_int_equal(estimate(cases[i].loss, 4, cases[i].p, cases[i].lora, &r), VC_OK);
        int64_t d = r.memory.peak_allocated - cases[i].measured;
        if (d < 0) d = -d;
        if (d * 2000 > cases[i].measured) /* 0.05% */
            fail_msg("case %zu: estimate %lld, measured %lld", i, (long long)r.memory.peak_allocated,
                     (long long)cases[i].measured);
        assert_int_equal(r.peak.phase, VC_PHASE_FORWARD); /* the metrics on both logits (aten::mul) */
        vc_result_free(&r);
    }
}

/* The plan is batch-symbolic (selective_log_softmax's per-row loop is one op whatever the
 * batch): an estimator built once at 4 sequences gives, at every batch, exactly what a fresh
 * estimate at that batch gives (the vc_estimator contract, vramcalc.h), across the boundary of
 * entropy_from_logits' chunking: 63 shifted rows per sequence, so 2 sequences (126 rows) are
 * one chunk of every row and 4 or more are 128-row chunks (vc_batch_range). */
static void test_batch_symbolic(void **state)
{
    (void)state;
    for (int lora = 0; lora <= 8; lora += 8) {
        vc_hf_options hf;
        vc_hf_options_init(&hf);
        hf.seq = 64;
        hf.loss = VC_LOSS_IMPL_DPO;
        vc_options o;
        vc_options_init(&o);
        o.batch = 4;
        o.precision = VC_PREC_BF16;
        o.attention = VC_ATTN_MATH;
        vc_error err;
        vc_model *m = NULL;
        assert_int_equal(vc_model_load_file_hf(LLMCFG "llama_vocab8k.json", &hf, &m, &err), VC_OK);
        if (lora) {
            vc_lora l;
            vc_lora_init(&l);
            l.r = lora;
            snprintf(l.targets, sizeof l.targets, "q_proj,v_proj");
            assert_int_equal(vc_model_set_lora(m, &l, &err), VC_OK);
        }
        vc_estimator *e = NULL;
        assert_int_equal(vc_estimator_new(m, &o, 0, &e, &err), VC_OK);
        const int64_t batches[] = {2, 4, 8, 16, 6};
        for (size_t i = 0; i < sizeof batches / sizeof *batches; i++) {
            vc_result a, f;
            assert_int_equal(vc_estimator_run(e, batches[i], &a, &err), VC_OK);
            o.batch = batches[i];
            assert_int_equal(vc_estimate(m, &o, &f, &err), VC_OK);
            assert_int_equal(a.memory.peak_allocated, f.memory.peak_allocated);
            assert_int_equal(a.memory.reserved, f.memory.reserved);
            assert_int_equal(a.memory.activations, f.memory.activations);
            vc_result_free(&a);
            vc_result_free(&f);
        }
        vc_estimator_free(e);
        vc_model_free(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cli),
        cmocka_unit_test(test_reference_weights),
        cmocka_unit_test(test_measured),
        cmocka_unit_test(test_batch_symbolic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
