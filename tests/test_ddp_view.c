/*
 * test_ddp_view.c — the bucket views of src/parallel/layout.c, every byte derived by
 * hand from PyTorch's source (docs/parallel.md 1.3):
 *  - DistributedDataParallel(gradient_as_bucket_view=True), --parallel ddp or
 *    zero1-torch with --gradient-as-bucket-view: the reducer's buckets as
 *    without it (Reducer::initialize_buckets), but each .grad a view into its
 *    bucket: AccumulateGrad's fresh gradient lives until DDP's post-hook has
 *    copied it in (Reducer::mark_variable_ready_dense: mul_out into the
 *    bucket view, then grad = bucket_view), and between steps the buckets are
 *    the only gradient storage (reducer.cpp, pytorch/pytorch@00413201 and
 *    @ad78a7b3);
 *  - ZeroRedundancyOptimizer(parameters_as_bucket_view=True), --parallel
 *    zero1-torch with --parameters-as-bucket-view: one flat bucket per rank's
 *    share in place of the parameters' own storages, torch.zeros(1) for a
 *    rank with none (zero_redundancy_optimizer.py _build_param_buckets, torch
 *    1.13 and pytorch/pytorch@815ff44c).
 * Sizes are in the caching allocator's 512-byte blocks; fp32, batch 1,
 * --workspace 0.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "vramcalc/vramcalc.h"
#include "cli_spelt.h"

/* Linear(10, 300), Linear(300, 1000), Linear(1000, 50), no biases: weights
 * 12,000, 1,200,000 and 200,000 B, in blocks 12,288 + 1,200,128 + 200,192 =
 * 1,412,608. DDP's buckets, the parameters in reverse (layout.c
 * ddp_buckets): W3 and W2 close the 1 MiB first bucket at 1,400,000 B
 * (1,400,320), W1 is the second (12,288): 1,412,608 too. */
static const char *const three =
    "{\"input\": [10], \"layers\": ["
    "{\"type\": \"Linear\", \"in_features\": 10, \"out_features\": 300, \"bias\": false},"
    "{\"type\": \"Linear\", \"in_features\": 300, \"out_features\": 1000, \"bias\": false},"
    "{\"type\": \"Linear\", \"in_features\": 1000, \"out_features\": 50, \"bias\": false}]}";

/* The same with biases (300, 1000 and 50 elements: 1,536, 4,096 and 512 B in
 * blocks): the parameters' own blocks are 1,418,752 B. */
static const char *const three_bias =
    "{\"input\": [10], \"layers\": ["
    "{\"type\": \"Linear\", \"in_features\": 10, \"out_features\": 300},"
    "{\"type\": \"Linear\", \"in_features\": 300, \"out_features\": 1000},"
    "{\"type\": \"Linear\", \"in_features\": 1000, \"out_features\": 50}]}";

static vc_options opts(vc_parallel par, int64_t gpus, vc_optim optim, int gview, int pview)
{
    vc_options o;
    vc_options_init(&o);
    o.optim = optim;
    o.workspace = 0;
    o.parallel = par;
    o.gpus = gpus;
    o.gradient_as_bucket_view = gview;
    o.parameters_as_bucket_view = pview;
    return o;
}

static vc_result run(const char *json, const vc_options *o)
{
    vc_model *m = NULL;
    vc_error err;
    vc_result r;
    if (vc_model_load_string(json, strlen(json), "test.json", &m, &err)) fail_msg("load failed: %s", err.msg);
    if (vc_estimate(m, o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    vc_model_free(m);
    return r;
}

/* gradient_as_bucket_view, SGD. Between steps: the weights and the buckets,
 * no gradient of their own (memory.gradients is the buckets). The peak is in
 * W2's backward, as AccumulateGrad holds W2's fresh gradient: the weights and
 * buckets 2 x 1,412,608; the input 512; out1 [1, 300] 1,536, saved for W2's
 * backward; the loss's gradient and mean's backward 512 + 512; the gradient
 * of out2 4,096 and of out1 1,536; W2's gradient 1,200,128 = 4,034,048. W3's
 * gradient (200,192) has gone by then: copied into its bucket view. Without
 * the views (the ddp row) every .grad stays next to the buckets: the one-GPU
 * peak 2,828,288 + the buckets = 4,240,896, 206,848 more. World size changes
 * neither (1, 2, 4: as measured, results.json ddp-view at w1, w2, w4). */
static void test_gradient_view_sgd(void **state)
{
    (void)state;
    vc_options o = opts(VC_PARALLEL_NONE, 1, VC_OPTIM_SGD, 0, 0);
    vc_result one = run(three, &o);
    assert_int_equal(one.memory.peak_allocated, 2828288);
    for (int64_t w = 1; w <= 4; w *= 2) {
        o = opts(VC_PARALLEL_DDP, w, VC_OPTIM_SGD, 1, 0);
        vc_result v = run(three, &o);
        assert_int_equal(v.memory.weights, 1412608);
        assert_int_equal(v.memory.gradients, 1412608); /* the buckets only */
        assert_int_equal(v.memory.peak_allocated, 2 * 1412608 + 512 + 1536 + 512 + 512 + 4096 + 1536 + 1200128);
        assert_int_equal(v.peak.phase, VC_PHASE_BACKWARD);
        assert_string_equal(v.peak.layer, "layers[1]");
        assert_int_equal(v.peak.gradients, 1412608 + 1200128); /* the buckets and W2's fresh gradient */
        o.gradient_as_bucket_view = 0;
        vc_result d = run(three, &o);
        assert_int_equal(d.memory.gradients, 2 * 1412608);
        assert_int_equal(d.memory.peak_allocated, one.memory.peak_allocated + 1412608);
        assert_int_equal(d.memory.peak_allocated - v.memory.peak_allocated, 206848);
        vc_result_free(&v);
        vc_result_free(&d);
    }
    vc_result_free(&one);
}

/* gradient_as_bucket_view, Adam: the peak is in the optimizer step, where one
 * GPU holds every .grad (1,412,608 in blocks) and DDP the buckets, the same
 * bytes: the peaks are equal (as measured: mlp-b64-adam-ddp-view = single,
 * 168,136,704 B). zero1-torch with the views: DDP's buckets as gradients, and
 * Adam's two states for the busiest rank's W2 only (2 x 1,200,128). */
static void test_gradient_view_adam(void **state)
{
    (void)state;
    vc_options o = opts(VC_PARALLEL_NONE, 1, VC_OPTIM_ADAM, 0, 0);
    vc_result one = run(three, &o);
    o = opts(VC_PARALLEL_DDP, 2, VC_OPTIM_ADAM, 1, 0);
    vc_result v = run(three, &o);
    assert_int_equal(v.memory.peak_allocated, one.memory.peak_allocated);
    assert_int_equal(v.memory.gradients, one.memory.gradients);
    assert_int_equal(v.peak.phase, VC_PHASE_OPTIMIZER);
    o = opts(VC_PARALLEL_ZERO1_TORCH, 2, VC_OPTIM_ADAM, 1, 0);
    vc_result z = run(three, &o);
    assert_int_equal(z.memory.gradients, 1412608);
    assert_int_equal(z.memory.optimizer_states, 2 * 1200128);
    vc_result_free(&z);
    vc_result_free(&v);
    vc_result_free(&one);
}

/* parameters_as_bucket_view: the trainable parameters of each rank's share
 * (greedy by size, largest first, to the rank with the fewest elements:
 * _partition_parameters) in one block. World 2: W2 (300,000) to rank 0, then
 * W3 50,000, W1 3,000, b2 1,000, b1 300, b3 50 to rank 1: 1,200,000 B
 * (1,200,128) + 54,350 x 4 = 217,400 B (217,600) = 1,417,728, 1,024 below the
 * parameters' own blocks. World 4: W2, W3, W1 one rank each, b2 + b1 + b3
 * (1,350 elements, 5,400 B: 5,632) to rank 3: 1,200,128 + 200,192 + 12,288 +
 * 5,632 = 1,418,240. World 8: six ranks with one parameter each (their own
 * blocks, 1,418,752) and two with none, torch.zeros(1) each: + 2 x 512.
 * World 1: one bucket of 354,350 elements, 1,417,400 B: 1,417,728. The
 * difference goes straight to the peak; the optimizer state is unchanged. */
static void test_parameter_view(void **state)
{
    (void)state;
    static const struct { int64_t w, weights; } cases[] = {
        {1, 1417728}, {2, 1200128 + 217600}, {4, 1200128 + 200192 + 12288 + 5632}, {8, 1418752 + 2 * 512},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        vc_options o = opts(VC_PARALLEL_ZERO1_TORCH, cases[i].w, VC_OPTIM_ADAM, 0, 0);
        vc_result plain = run(three_bias, &o);
        assert_int_equal(plain.memory.weights, 1418752);
        o.parameters_as_bucket_view = 1;
        vc_result v = run(three_bias, &o);
        assert_int_equal(v.memory.weights, cases[i].weights);
        assert_int_equal(v.memory.optimizer_states, plain.memory.optimizer_states);
        assert_int_equal(v.memory.gradients, plain.memory.gradients);
        assert_int_equal(v.memory.peak_allocated - plain.memory.peak_allocated, cases[i].weights - 1418752);
        /* DDP's buckets, in reverse: b3, W3, b2, W2 close the first at 1,404,200 B (1,404,416),
         * b1 + W1 13,200 B (13,312) the second; next to the .grad tensors (1,418,752) without the
         * gradient views, the only gradients with them */
        assert_int_equal(plain.memory.gradients, 1418752 + 1404416 + 13312);
        o.gradient_as_bucket_view = 1;
        vc_result both = run(three_bias, &o);
        assert_int_equal(both.memory.weights, cases[i].weights);
        assert_int_equal(both.memory.gradients, 1404416 + 13312);
        vc_result_free(&both);
        vc_result_free(&v);
        vc_result_free(&plain);
    }
}

/* Refused, with the option named: a layout without the setting, and what is
 * not modelled (--pp; the gradient views with --accumulate, where .grad
 * depends on no_sync()). */
static void test_refused(void **state)
{
    (void)state;
    static const struct { vc_parallel par; int gview, pview; int64_t pp, accumulate; const char *path; } bad[] = {
        {VC_PARALLEL_NONE, 1, 0, 1, 1, "--gradient-as-bucket-view"},
        {VC_PARALLEL_FSDP, 1, 0, 1, 1, "--gradient-as-bucket-view"},
        {VC_PARALLEL_ZERO2, 1, 0, 1, 1, "--gradient-as-bucket-view"},
        {VC_PARALLEL_DDP, 0, 1, 1, 1, "--parameters-as-bucket-view"},
        {VC_PARALLEL_ZERO1, 0, 1, 1, 1, "--parameters-as-bucket-view"},
        {VC_PARALLEL_DDP, 1, 0, 2, 1, "--gradient-as-bucket-view"},
        {VC_PARALLEL_ZERO1_TORCH, 0, 1, 2, 1, "--parameters-as-bucket-view"},
        {VC_PARALLEL_DDP, 1, 0, 1, 4, "--gradient-as-bucket-view"},
    };
    vc_model *m = NULL;
    vc_error err;
    assert_int_equal(vc_model_load_string(three, strlen(three), "t.json", &m, &err), VC_OK);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        vc_options o = opts(bad[i].par, (bad[i].par == VC_PARALLEL_NONE ? 1 : 2) * bad[i].pp, VC_OPTIM_SGD, bad[i].gview,
                            bad[i].pview);
        o.pp = bad[i].pp;
        o.accumulate = bad[i].accumulate;
        vc_result r;
        assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
        assert_string_equal(CLI_PATH(&err), bad[i].path);
    }
    /* --parameters-as-bucket-view with --accumulate is modelled (it moves weights only) */
    vc_options o = opts(VC_PARALLEL_ZERO1_TORCH, 2, VC_OPTIM_SGD, 0, 1);
    o.accumulate = 2;
    vc_result r;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_OK);
    vc_result_free(&r);
    vc_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradient_view_sgd),
        cmocka_unit_test(test_gradient_view_adam),
        cmocka_unit_test(test_parameter_view),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
