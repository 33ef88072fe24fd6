/*
 * test_megatron.c — the megatron and megatron-dist rows of the parallel-layout
 * table (src/parallel/layout_megatron.c): Megatron-Core's DistributedDataParallel with
 * Float16OptimizerWithFloat16Params, and with DistributedOptimizer, every byte
 * derived by hand from NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553
 * (docs/parallel.md section 7):
 *  - param_and_grad_buffer.py _ParamAndGradBuffer.__init__: grad_data =
 *    torch.zeros(numel, fp32) (grad_reduce_in_fp32 under --bf16), param_data
 *    (bf16) only under the distributed optimizer;
 *  - distrib_optimizer.py _compute_per_buffer_param_layout: parameters in
 *    reverse order, each start padded to 64 elements, the (single: overlap_grad_reduce
 *    off) bucket's end to lcm(dp, 128); a rank's range is numel / dp elements,
 *    each parameter piece in it gets an fp32 main param (clone().float()) and Adam's
 *    two states;
 *  - optimizer.py Float16OptimizerWithFloat16Params: an fp32 main param per
 *    parameter, main_param.grad = main_grad.float() (fp32: no copy);
 *  - distributed_data_parallel.py _make_backward_post_hook: .grad added into
 *    main_grad and dropped at once.
 *
 * The model: Linear(1000 -> 999) then Linear(999 -> 1000), both with bias, -p
 * mixed-bf16, batch 1, Adam (foreach: torch.optim.Adam, Megatron's fallback
 * without TE and apex), no workspace. Parameters W1 999,000, b1 999, W2 999,000,
 * b2 1,000: N = 1,999,999. Sizes in 512-byte blocks: bf16 1,998,000 B -> 1,998,336,
 * 1,998 and 2,000 B -> 2,048; fp32 3,996,000 B -> 3,996,160, 3,996 and 4,000 B
 * -> 4,096.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "vramcalc/vramcalc.h"
#include "cli_spelt.h"

static const char *const two =
    "{\"input\": [1000], \"layers\": [{\"type\": \"Linear\", \"in_features\": 1000, \"out_features\": 999},"
    " {\"type\": \"Linear\", \"in_features\": 999, \"out_features\": 1000}]}";

static vc_options opts(vc_parallel par, int64_t gpus)
{
    vc_options o;
    vc_options_init(&o);
    o.optim = VC_OPTIM_ADAM;
    o.precision = VC_PREC_MIXED_BF16;
    o.workspace = 0;
    o.parallel = par;
    o.gpus = gpus;
    return o;
}

static vc_status run(const vc_options *o, vc_result *r, vc_error *err)
{
    vc_model *m = NULL;
    if (vc_model_load_string(two, strlen(two), "two.json", &m, err)) fail_msg("load failed: %s", err->msg);
    vc_status s = vc_estimate(m, o, r, err);
    vc_model_free(m);
    return s;
}

static vc_result estimate(vc_parallel par, int64_t gpus)
{
    vc_options o = opts(par, gpus);
    vc_error err = {0};
    vc_result r;
    if (run(&o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    return r;
}

#define BF16_PARAMS (2 * 1998336 + 2 * 2048) /* the model's own bf16 parameters */
#define MAIN_PARAMS (2 * 3996160 + 2 * 4096) /* their fp32 copies, whole */

/* megatron at world 4: the bf16 parameters as they are (4,000,768), the fp32
 * main params (8,000,512), one fp32 grad_data of N elements (7,999,996 B ->
 * 8,000,000; no padding without the distributed optimizer), Adam's exp_avg and
 * exp_avg_sq on the main params (16,001,024): 2 + 4 + 4 + 8 = Megatron's 18 B per
 * parameter (theoretical_memory_usage.py), 36,002,304 B for its 35,999,982,
 * the difference the 512-byte blocks. The peak is the step's: foreach Adam's
 * sqrt(exp_avg_sq) of every main param at once (8,000,512) with the input batch
 * (1,000 bf16: 2,048); the .grad tensors are gone (the hook), so it is a plain
 * mixed-bf16 step's peak with the bf16 gradients (4,000,768) replaced by the fp32
 * buffer (8,000,000). The world size changes nothing (one bucket, no padding). */
static void test_megatron_resident(void **state)
{
    (void)state;
    vc_result r = estimate(VC_PARALLEL_MEGATRON, 4);
    assert_int_equal(r.memory.weights, BF16_PARAMS + MAIN_PARAMS);
    assert_int_equal(r.memory.gradients, 8000000);
    assert_int_equal(r.memory.optimizer_states, 2 * MAIN_PARAMS);
    assert_int_equal(r.memory.peak_allocated, BF16_PARAMS + MAIN_PARAMS + 8000000 + 2 * MAIN_PARAMS + 2048 + MAIN_PARAMS);
    assert_int_equal(r.peak.phase, VC_PHASE_OPTIMIZER);
    assert_int_equal(r.peak.temporaries, MAIN_PARAMS);
    vc_result plain = estimate(VC_PARALLEL_NONE, 1);
    assert_int_equal(plain.peak.phase, VC_PHASE_OPTIMIZER);
    assert_int_equal(r.memory.peak_allocated, plain.memory.peak_allocated - BF16_PARAMS + 8000000);
    vc_result one = estimate(VC_PARALLEL_MEGATRON, 1);
    assert_int_equal(one.memory.peak_allocated, r.memory.peak_allocated);
    assert_int_equal(one.memory.gradients, r.memory.gradients);
    vc_result_free(&r);
    vc_result_free(&plain);
    vc_result_free(&one);
}

/* megatron-dist at world 4. The layout, backward order: b2 [0, 1,000), W2 from
 * 1,024 (64-aligned) to 1,000,024, b1 from 1,000,064 to 1,001,063, W1 from
 * 1,001,088 to 2,000,088; padded to lcm(4, 128) = 128: 2,000,128 elements,
 * 500,032 per rank. Rank 0 holds b2 and W2's [1,024, 500,032): 1,000 + 499,008
 * = 500,008 elements, rank 1 499,992 (W2), rank 2 999 + 499,008 = 500,007,
 * rank 3 499,992: rank 0 is modelled. Resident: param_data 2,000,128 bf16
 * (4,000,256 B) and the two main-param pieces (4,000 B -> 4,096; 1,996,032 B ->
 * 1,996,288); grad_data 2,000,128 fp32 (8,000,512); Adam's states on the pieces
 * (2 x 2,000,384). 18,001,920 B for Megatron's (6 + 12 / 4) x N = 17,999,991.
 * The peak is in backward, W2's and b2's .grad (1,998,336 + 2,048) made by
 * layers[1]'s backward before the hook drops them, with the input batch (2,048),
 * layers[0]'s output saved (2,048), the loss and its root gradient (512 + 512),
 * the loss's gradient cast to bf16 (2,048) and layers[1]'s input gradient
 * (2,048). */
static void test_megatron_dist(void **state)
{
    (void)state;
    vc_result r = estimate(VC_PARALLEL_MEGATRON_DIST, 4);
    const int64_t pieces = 4096 + 1996288;
    assert_int_equal(r.memory.weights, 4000256 + pieces);
    assert_int_equal(r.memory.gradients, 8000512);
    assert_int_equal(r.memory.optimizer_states, 2 * pieces);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    assert_int_equal(r.peak.gradients, 8000512 + 1998336 + 2048);
    assert_int_equal(r.memory.peak_allocated,
                     4000256 + 3 * pieces + 8000512 + 2048 + 2048 + 512 + 512 + 2048 + 2048 + 1998336 + 2048);
    vc_result_free(&r);
}

/* megatron-dist at world 1: lcm(1, 128) = 128, the same 2,000,128 elements, and
 * the one rank holds every parameter whole: the main params and states are
 * megatron's (8,000,512 and 16,001,024), param_data replaces the bf16
 * parameters (4,000,256), grad_data is padded (8,000,512). Megatron wraps a
 * single GPU the same way: not the plain single-GPU estimate. The step's
 * sqrt(exp_avg_sq) (8,000,512) then makes the peak. */
static void test_megatron_dist_one(void **state)
{
    (void)state;
    vc_result r = estimate(VC_PARALLEL_MEGATRON_DIST, 1);
    assert_int_equal(r.memory.weights, 4000256 + MAIN_PARAMS);
    assert_int_equal(r.memory.gradients, 8000512);
    assert_int_equal(r.memory.optimizer_states, 2 * MAIN_PARAMS);
    assert_int_equal(r.peak.phase, VC_PHASE_OPTIMIZER);
    assert_int_equal(r.memory.peak_allocated, 4000256 + MAIN_PARAMS + 8000512 + 2 * MAIN_PARAMS + 2048 + MAIN_PARAMS);
    vc_result_free(&r);
}

/* With --optim-impl fused (torch's fused Adam: FusedAdam's kernel, no
 * temporaries) the step adds nothing; torch keeps a device `step` per tensor
 * (512 B each, 2 pieces) that TE's and apex's FusedAdam keep in the group. The
 * peak is then backward's, 20,011,520 as above. */
static void test_megatron_dist_fused(void **state)
{
    (void)state;
    vc_options o = opts(VC_PARALLEL_MEGATRON_DIST, 4);
    o.optim_impl = VC_IMPL_FUSED;
    vc_error err = {0};
    vc_result r;
    if (run(&o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    assert_int_equal(r.memory.optimizer_states, 2 * (4096 + 1996288) + 2 * 512);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    vc_result_free(&r);
}

/* --ep: one SparseMoE layer (test_ep.c's: hidden 64, intermediate 48, 4 experts,
 * top-2) at ep 2 on 8 GPUs: dp 8, edp = 8 / (1 x 2 x 1) = 4. The rank holds
 * the router [4, 64] (256 elements; dense buffer) and 2 local experts, each
 * linear_fc1 [96, 64] (6,144) and linear_fc2 [64, 48] (3,072) (the expert
 * buffer, distributed_data_parallel.py: is_expert_parallel params over the
 * expert-data-parallel group). Dense buffer: 256 elements, a multiple of
 * lcm(8, 128); 32 per rank, an fp32 piece of 128 B -> 512. Expert buffer in
 * backward order: e1.fc2 [0, 3,072), e1.fc1 [3,072, 9,216), e0.fc2 [9,216,
 * 12,288), e0.fc1 [12,288, 18,432), no start padding (multiples of 64), a
 * multiple of lcm(4, 128); 4,608 per rank, every rank full: rank 0 is modelled,
 * e1.fc2 whole (3,072 fp32: 12,288 B) and e1.fc1's first 1,536 (6,144 B).
 * Weights: param_data 256 bf16 (512) + 18,432 bf16 (36,864) + the pieces
 * (512 + 12,288 + 6,144); gradients: grad_data 1,024 + 73,728; Adam: twice the
 * pieces. 168,960 B against Megatron's 256 x (6 + 12 / 8) + 18,432 x (6 + 12 / 4)
 * = 167,808: the router piece's blocks, 3 x (512 - 128). */
static void test_megatron_ep(void **state)
{
    (void)state;
    static const char *const moe = "{\"input\": [16, 64], \"layers\": [{\"type\": \"SparseMoE\", \"hidden_size\": 64,"
                                   " \"intermediate_size\": 48, \"num_experts\": 4, \"top_k\": 2}]}";
    vc_model *m = NULL;
    vc_error err = {0};
    if (vc_model_load_string(moe, strlen(moe), "moe.json", &m, &err)) fail_msg("load failed: %s", err.msg);
    if (vc_model_set_ep(m, 2, &err)) fail_msg("set_ep failed: %s", err.msg);
    vc_options o = opts(VC_PARALLEL_MEGATRON_DIST, 8);
    o.ep = 2;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    const int64_t pieces = 512 + 12288 + 6144;
    assert_int_equal(r.memory.weights, 512 + 36864 + pieces);
    assert_int_equal(r.memory.gradients, 1024 + 73728);
    assert_int_equal(r.memory.optimizer_states, 2 * pieces);
    assert_int_equal(r.memory.weights + r.memory.gradients + r.memory.optimizer_states, 167808 + 3 * (512 - 128));
    vc_result_free(&r);
    /* megatron (nothing sharded): the same two grad_data buffers, unpadded (256 and
     * 18,432 fp32: 1,024 + 73,728); weights the bf16 parameters (router 512 B, each
     * fc1 12,288, each fc2 6,144) and their fp32 main params (1,024; 24,576; 12,288) */
    o.parallel = VC_PARALLEL_MEGATRON;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    assert_int_equal(r.memory.gradients, 1024 + 73728);
    assert_int_equal(r.memory.weights, 512 + 2 * (12288 + 6144) + 1024 + 2 * (24576 + 12288));
    vc_result_free(&r);
    vc_model_free(m);
}

/* What the rows refuse (exit 2 in the CLI), each naming its option. */
static void test_megatron_refusals(void **state)
{
    (void)state;
    static const struct { vc_parallel par; vc_precision prec; vc_optim optim; vc_mode mode; const char *opt; } cases[] = {
        {VC_PARALLEL_MEGATRON, VC_PREC_FP32, VC_OPTIM_ADAM, VC_MODE_TRAIN, "--precision"},      /* not --bf16's */
        {VC_PARALLEL_MEGATRON_DIST, VC_PREC_MIXED_FP16, VC_OPTIM_ADAM, VC_MODE_TRAIN, "--precision"}, /* --fp16 */
        {VC_PARALLEL_MEGATRON_DIST, VC_PREC_BF16, VC_OPTIM_ADAM, VC_MODE_TRAIN, "--precision"},
        {VC_PARALLEL_MEGATRON, VC_PREC_MIXED_BF16, VC_OPTIM_SGD, VC_MODE_TRAIN, "--optim"},
        {VC_PARALLEL_MEGATRON_DIST, VC_PREC_MIXED_BF16, VC_OPTIM_ADAM, VC_MODE_INFER, "--parallel"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        vc_options o = opts(cases[i].par, 4);
        o.precision = cases[i].prec;
        o.optim = cases[i].optim;
        o.mode = cases[i].mode;
        vc_error err = {0};
        vc_result r;
        assert_int_equal(run(&o, &r, &err), VC_ERR_USAGE);
        assert_non_null(strstr(CLI_PATH(&err), cases[i].opt));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_megatron_resident),
        cmocka_unit_test(test_megatron_dist),
        cmocka_unit_test(test_megatron_dist_one),
        cmocka_unit_test(test_megatron_dist_fused),
        cmocka_unit_test(test_megatron_ep),
        cmocka_unit_test(test_megatron_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
