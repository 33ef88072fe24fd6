/*
 * test_zero_grad.c — loop shapes (issue 26 item 5): --zero-grad zero
 * (vc_options.keep_grads), the loop's optimizer.zero_grad(set_to_none=False), the
 * gradients kept between steps; and --hold-output (vc_options.hold_output), the loop's
 * `out = model(x)` kept until loss.backward() returns. Expected values are worked out by hand from
 * torch/optim/optimizer.py Optimizer.zero_grad (set_to_none=False: p.grad zeroed in
 * place, never freed) and AccumulateGrad (accumulate_grad.h: with no .grad the new
 * gradient is stolen; with one, variable_grad += new_grad and the new one is freed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "vramcalc/vramcalc.h"
#include "cli_spelt.h"

/* q (1024 -> 1024, no bias), a ReLU, v (1024 -> 512, bias), a LayerNorm; 16 rows. */
static const char *const model =
    "{\"input\": [16, 1024], \"layers\": ["
    "{\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 1024, \"bias\": false, \"name\": \"q_proj\"},"
    "{\"type\": \"ReLU\"},"
    "{\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 512, \"name\": \"attn.v_proj\"},"
    "{\"type\": \"LayerNorm\", \"normalized_shape\": [512]}]}";

static vc_result run_opts(int keep, int hold, vc_optim optim);
static vc_result run(int keep, vc_optim optim) { return run_opts(keep, 0, optim); }
static vc_result run_opts(int keep, int hold, vc_optim optim)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(model, strlen(model), "zero_grad.json", &m, &err)) fail_msg("load: %s", err.msg);
    vc_options o;
    vc_options_init(&o);
    assert_int_equal(o.keep_grads, 0); /* the default: set_to_none=True */
    o.optim = optim;
    o.workspace = 0;
    o.keep_grads = keep;
    o.hold_output = hold;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate: %s", err.msg);
    vc_model_free(m);
    return r;
}

/* fp32, SGD (no state, so backward has the peak). The gradients: q 1024 x 1024 x 4 =
 * 4,194,304, v 2,097,152, v's bias 2,048 (512 x 4), the LayerNorm's weight and bias
 * 2,048 each: 6,297,600. Both peaks are at q_proj's weight gradient, the last one
 * backward makes. set_to_none=True: it is stolen into .grad, gradients at the peak
 * 6,297,600. set_to_none=False: every .grad is there from the previous step and the
 * new q gradient is alive next to its .grad until the in-place add: 6,297,600 +
 * 4,194,304 = 10,491,904; the peak rises by exactly 4,194,304. */
static void test_sgd(void **state)
{
    (void)state;
    vc_result a = run(0, VC_OPTIM_SGD), k = run(1, VC_OPTIM_SGD);
    assert_int_equal(a.peak.phase, VC_PHASE_BACKWARD);
    assert_int_equal(k.peak.phase, VC_PHASE_BACKWARD);
    assert_int_equal(a.peak.gradients, 6297600);
    assert_int_equal(k.peak.gradients, 6297600 + 4194304);
    assert_int_equal(k.memory.peak_allocated - a.memory.peak_allocated, 4194304);
    assert_int_equal(k.memory.gradients, a.memory.gradients);
    vc_result_free(&a);
    vc_result_free(&k);
}

/* AdamW: the peak is in the optimizer step, where every gradient exists either way
 * (and nothing is accumulated): the same peak, 6,297,600 of gradients at it. */
static void test_adamw(void **state)
{
    (void)state;
    vc_result a = run(0, VC_OPTIM_ADAMW), k = run(1, VC_OPTIM_ADAMW);
    assert_int_equal(a.peak.phase, VC_PHASE_OPTIMIZER);
    assert_int_equal(k.peak.phase, VC_PHASE_OPTIMIZER);
    assert_int_equal(k.peak.gradients, 6297600);
    assert_int_equal(k.memory.peak_allocated, a.memory.peak_allocated);
    vc_result_free(&a);
    vc_result_free(&k);
}

/* --hold-output: the model's output, [16, 512] fp32 = 32,768 B (the loss is the model
 * file's default "mean", output.float().mean(): no copy for fp32, MeanBackward saves
 * nothing, so without the loop's reference the output goes right after the mean). Held by
 * the loop, it is alive at the end of forward (activations +32,768) and at SGD's peak in
 * backward (+32,768 exactly); it goes when backward returns, so AdamW's optimizer peak
 * does not change. */
static void test_hold_output(void **state)
{
    (void)state;
    vc_result a = run_opts(0, 0, VC_OPTIM_SGD), h = run_opts(0, 1, VC_OPTIM_SGD);
    assert_int_equal(h.memory.activations - a.memory.activations, 32768);
    assert_int_equal(h.peak.phase, VC_PHASE_BACKWARD);
    assert_int_equal(h.memory.peak_allocated - a.memory.peak_allocated, 32768);
    assert_int_equal(h.peak.activations - a.peak.activations, 32768);
    vc_result_free(&a);
    vc_result_free(&h);
    a = run_opts(0, 0, VC_OPTIM_ADAMW);
    h = run_opts(0, 1, VC_OPTIM_ADAMW);
    assert_int_equal(h.peak.phase, VC_PHASE_OPTIMIZER);
    assert_int_equal(h.memory.peak_allocated, a.memory.peak_allocated);
    vc_result_free(&a);
    vc_result_free(&h);
}

/* The library refuses what is not modelled, naming the option: a parallel layout (its
 * buckets and shards own the gradients), no optimizer (no zero_grad), a bad value. */
static void test_refusals(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(model, strlen(model), "zero_grad.json", &m, &err)) fail_msg("load: %s", err.msg);
    vc_options o;
    vc_result r;
    const struct { int keep, gpus; vc_parallel par; vc_optim optim; const char *msg; } cases[] = {
        {1, 2, VC_PARALLEL_DDP, VC_OPTIM_ADAMW, "zero (gradients kept between steps) is modelled on one GPU with an optimizer"},
        {1, 1, VC_PARALLEL_NONE, VC_OPTIM_NONE, "zero (gradients kept between steps) is modelled on one GPU with an optimizer"},
        {2, 1, VC_PARALLEL_NONE, VC_OPTIM_SGD, "invalid value"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        vc_options_init(&o);
        o.keep_grads = cases[i].keep;
        o.gpus = cases[i].gpus;
        o.parallel = cases[i].par;
        o.optim = cases[i].optim;
        assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
        assert_string_equal(CLI_PATH(&err), "--zero-grad");
        assert_string_equal(CLI_MSG(&err), cases[i].msg);
    }
    vc_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_sgd), cmocka_unit_test(test_adamw), cmocka_unit_test(test_refusals),
                                       cmocka_unit_test(test_hold_output)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
