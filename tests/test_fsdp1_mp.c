/*
 * test_fsdp1_mp.c — FSDP1's MixedPrecision (--fsdp-param-dtype, --fsdp-reduce-dtype
 * under --parallel fsdp, shard-grad-op, hybrid) and use_orig_params=True
 * (--fsdp-use-orig-params), src/parallel/layout_fsdp1.c, every byte derived by hand from
 * pytorch/pytorch@01caf79e047fd15e1f75ba3825f789130efa476a torch/distributed/fsdp/
 * _flat_param.py and @00ae0bc91ac2c1718d1baa193d9d299e2b82776c _runtime_utils.py
 * (docs/parallel.md 1.6).
 *
 * The model of test_parallel.c: Linear(1000 -> 999) then Linear(999 -> 1000), fp32,
 * batch 1, Adam; each Linear a unit, the root holds nothing. At world size 4 each
 * unit's shard is 250,000 elements (unit 1: U = 999,999, padded to 1,000,000 for the
 * all-gather; unit 2: U = 1,000,000). Sizes in 512-byte blocks: 250,000 fp32
 * (1,000,000 B) -> 1,000,448; 250,000 bf16 (500,000 B) -> 500,224; 1,000,000 bf16
 * (2,000,000 B) and 999,999 bf16 (1,999,998 B) -> 2,000,384; 1,000,000 fp32 and
 * 999,999 fp32 -> 4,000,256; the Linear weights' bf16 gradients (999,000 x 2 B)
 * -> 1,998,336; the [1, 999] and [1, 1000] bf16 activations and bias gradients
 * -> 2,048; the fp32 input [1, 1000] -> 4,096.
 */
#include "cli_spelt.h"
#include "parallel_test.h"

static vc_options mp_opts(vc_parallel par, int64_t gpus, vc_fsdp_dtype pdt, vc_fsdp_dtype rdt, int orig)
{
    vc_options o = opts(par, gpus, VC_OPTIM_ADAM);
    o.fsdp_param_dtype = pdt;
    o.fsdp_reduce_dtype = rdt;
    o.fsdp_use_orig_params = orig;
    return o;
}

static vc_result mp_estimate(vc_options o)
{
    vc_model *m = load();
    vc_error err;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    vc_model_free(m);
    return r;
}

static trace_t mp_trace(vc_options o, const char *cat, int64_t bytes)
{
    vc_model *m = load();
    vc_error err;
    trace_t t = {cat, bytes, {0, 0, 0, 0}, {0, 0, 0, 0}};
    if (vc_trace(m, &o, on_line, &t, &err)) fail_msg("trace failed: %s", err.msg);
    vc_model_free(m);
    return t;
}

/* MixedPrecision(param_dtype=bf16, reduce_dtype=fp32), world size 4. Resident:
 * the fp32 shards (_local_shard), the sharded gradients cast back to fp32
 * (_cast_grad_to_param_dtype) and Adam's states on the fp32 FlatParameters: the
 * bytes of the run without mixed precision (test_parallel.c test_fsdp_resident). */
static void test_mp_resident(void **state)
{
    (void)state;
    vc_result r = mp_estimate(mp_opts(VC_PARALLEL_FSDP, 4, VC_FSDP_DTYPE_BF16, VC_FSDP_DTYPE_FP32, 0));
    vc_result plain = estimate(VC_PARALLEL_FSDP, 4, VC_OPTIM_ADAM);
    assert_int_equal(r.memory.weights, 2 * 1000448);
    assert_int_equal(r.memory.gradients, 2 * 1000448);
    assert_int_equal(r.memory.optimizer_states, 2 * 2 * 1000448);
    assert_int_equal(r.memory.weights, plain.memory.weights);
    vc_result_free(&r);
    vc_result_free(&plain);
}

/* bf16 / fp32, world size 4: the gathers and the peak. Every unshard first
 * allocates _mp_shard, 250,000 bf16 (500,224 B, pre_unshard ->
 * _use_low_precision_shard), then _full_param_padded, 1,000,000 bf16 (2,000,384 B),
 * and frees _mp_shard (post_unshard): 2 + 2 of each (forward: both units;
 * backward: unit 2 and the BACKWARD_PRE prefetch of unit 1, as without mixed
 * precision). Each post-backward casts the bf16 unsharded gradient to fp32
 * (flat_param.grad.to(_reduce_dtype), 4,000,256 B); unit 1 (999,999 elements)
 * then pads it (F.pad, fp32, 4,000,256 B): three 4,000,256 B gradients in all.
 * The peak is unit 1's post-backward, at the end of backward, as the new fp32
 * shard is made: resident 6,002,688 (2 shards, 4 Adam states), unit 2's sharded
 * gradient 1,000,448, the input 4,096, the loss and its gradient 512 + 512,
 * unit 1's bf16 unsharded gradient 2,000,384 (autograd_computed_grad, held to
 * the hook's end), its fp32 cast 4,000,256, the padded copy 4,000,256, the new
 * shard 1,000,448: 18,009,600. */
static void test_mp_bf16_fp32(void **state)
{
    (void)state;
    vc_options o = mp_opts(VC_PARALLEL_FSDP, 4, VC_FSDP_DTYPE_BF16, VC_FSDP_DTYPE_FP32, 0);
    trace_t mp = mp_trace(o, "temp", 500224);
    assert_int_equal(mp.gathers[0], 2);
    assert_int_equal(mp.gathers[1], 2);
    trace_t full = mp_trace(o, "weight", 2000384);
    assert_int_equal(full.gathers[0], 2);
    assert_int_equal(full.gathers[1], 2);
    trace_t f32 = mp_trace(o, "weight", 4000256); /* no fp32 gather */
    assert_int_equal(f32.gathers[0] + f32.gathers[1], 0);
    trace_t rs = mp_trace(o, "grad", 4000256);
    assert_int_equal(rs.gathers[1], 3);
    vc_result r = mp_estimate(o);
    assert_int_equal(r.memory.peak_allocated, 6002688 + 1000448 + 4096 + 512 + 512 + 2000384 + 4000256 + 4000256 + 1000448);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    vc_result_free(&r);
}

/* bf16 / bf16 (reduce_dtype given equal; param_dtype alone gives the same,
 * _init_param_reduce_dtypes): no cast before the reduce-scatter; unit 1's padded
 * copy is bf16 (2,000,384 B, with the two unsharded gradients: three); each new
 * shard is bf16 (500,224 B) and becomes fp32 (1,000,448 B) in
 * _cast_grad_to_param_dtype. The peak is now unit 2's SplitWithSizesBackward cat:
 * resident 6,002,688, the input 4,096 and its bf16 copy 2,048
 * (cast_root_forward_inputs, saved by Linear 1), the loss and its gradient
 * 512 + 512, the gradient of Linear 1's output 2,048, both units gathered
 * 2 x 2,000,384, Linear 2's bf16 weight and bias gradients 1,998,336 + 2,048, the
 * cat 2,000,384: 14,013,440. */
static void test_mp_bf16_bf16(void **state)
{
    (void)state;
    vc_options o = mp_opts(VC_PARALLEL_FSDP, 4, VC_FSDP_DTYPE_BF16, VC_FSDP_DTYPE_BF16, 0);
    trace_t g16 = mp_trace(o, "grad", 2000384);
    assert_int_equal(g16.gathers[1], 3);
    trace_t g32 = mp_trace(o, "grad", 4000256);
    assert_int_equal(g32.gathers[1], 0);
    trace_t s16 = mp_trace(o, "grad", 500224);
    assert_int_equal(s16.gathers[1], 2);
    trace_t s32 = mp_trace(o, "grad", 1000448);
    assert_int_equal(s32.gathers[1], 2);
    vc_result r = mp_estimate(o);
    assert_int_equal(r.memory.peak_allocated, 6002688 + 4096 + 2048 + 512 + 512 + 2048 + 2 * 2000384 + 1998336 + 2048 + 2000384);
    vc_result_free(&r);
    vc_result none = mp_estimate(mp_opts(VC_PARALLEL_FSDP, 4, VC_FSDP_DTYPE_BF16, VC_FSDP_DTYPE_NONE, 0));
    vc_result same = mp_estimate(o);
    assert_int_equal(none.memory.peak_allocated, same.memory.peak_allocated);
    vc_result_free(&none);
    vc_result_free(&same);
}

/* SHARD_GRAD_OP keeps each bf16 unit gathered from forward to backward: no
 * gathers in backward (2 _mp_shard copies, in forward only). HYBRID_SHARD at 16
 * GPUs is FULL_SHARD at 8. CPUOffload: _use_low_precision_shard's
 * _local_shard.to(device) is an H2D copy of the fp32 shard (1,000,448 B), made
 * after _mp_shard and gone before the gather: one per unshard. */
static void test_mp_strategies(void **state)
{
    (void)state;
    trace_t sgo = mp_trace(mp_opts(VC_PARALLEL_FSDP_GRAD_OP, 4, VC_FSDP_DTYPE_BF16, VC_FSDP_DTYPE_FP32, 0), "temp", 500224);
    assert_int_equal(sgo.gathers[0], 2);
    assert_int_equal(sgo.gathers[1], 0);
    vc_result h = mp_estimate(mp_opts(VC_PARALLEL_FSDP_HYBRID, 16, VC_FSDP_DTYPE_BF16, VC_FSDP_DTYPE_FP32, 0));
    vc_result f8 = mp_estimate(mp_opts(VC_PARALLEL_FSDP, 8, VC_FSDP_DTYPE_BF16, VC_FSDP_DTYPE_FP32, 0));
    assert_int_equal(h.memory.peak_allocated, f8.memory.peak_allocated);
    vc_result_free(&h);
    vc_result_free(&f8);
    vc_options off = mp_opts(VC_PARALLEL_FSDP, 4, VC_FSDP_DTYPE_BF16, VC_FSDP_DTYPE_FP32, 0);
    off.offload = VC_OFFLOAD_PARAMS;
    trace_t h2d = mp_trace(off, "temp", 1000448);
    assert_int_equal(h2d.gathers[0], 2);
    assert_int_equal(h2d.gathers[1], 2);
}

/* use_orig_params=True, fp32, world size 4. _init_flat_param_and_metadata aligns
 * each parameter to 16 bytes (4 fp32 elements): the biases start at 999,000, a
 * multiple of 4, so no padding inside; then it pads to a multiple of the world
 * size: unit 1 999,999 -> 1,000,000, unit 2 stays. Same shards (250,000), same
 * resident bytes and peak (unit 2's cat, test_parallel.c), but unit 1's
 * post-backward needs no F.pad copy (numel_to_pad 0): two 4,000,256 B gradient
 * allocations in backward (the two cats), not three. */
static void test_orig_params(void **state)
{
    (void)state;
    vc_options o = mp_opts(VC_PARALLEL_FSDP, 4, VC_FSDP_DTYPE_NONE, VC_FSDP_DTYPE_NONE, 1);
    vc_result r = mp_estimate(o);
    vc_result plain = estimate(VC_PARALLEL_FSDP, 4, VC_OPTIM_ADAM);
    assert_int_equal(r.memory.weights, 2 * 1000448);
    assert_int_equal(r.memory.peak_allocated, plain.memory.peak_allocated);
    vc_result_free(&r);
    vc_result_free(&plain);
    trace_t g = mp_trace(o, "grad", 4000256);
    assert_int_equal(g.gathers[1], 2);
    trace_t without = trace(VC_PARALLEL_FSDP, 4, VC_OPTIM_ADAM, "grad", 4000256);
    assert_int_equal(without.gathers[1], 3);
    /* unit 1's padding element gets no gradient: SplitWithSizesBackward
     * (split_with_sizes_backward) makes at::zeros of it (4 B: 512) for its cat */
    trace_t z = mp_trace(o, "grad", 512);
    assert_int_equal(z.gathers[1], 1);
    trace_t z0 = trace(VC_PARALLEL_FSDP, 4, VC_OPTIM_ADAM, "grad", 512);
    assert_int_equal(z0.gathers[1], 0);
}

/* World size 1: NO_SHARD (_init_utils.py _init_core_state, pytorch/pytorch@39ec502d)
 * under MixedPrecision(bf16, fp32) and (bf16, bf16). No _full_param_padded
 * (init_flat_param_attributes makes it for sharded strategies only): the unsharded
 * parameter is _mp_shard itself, the whole unit in bf16 (999,999 or 1,000,000 x 2 B:
 * 2,000,384 B each), made by pre_unshard's _use_low_precision_shard, kept by
 * post_unshard (NO_SHARD) and freed by post_reshard, which _post_forward_reshard
 * runs after each unit's forward whatever the strategy: 2 in forward, and 2 again
 * in backward (unit 2's pre-backward and its BACKWARD_PRE prefetch of unit 1).
 * The only fp32 4,000,256 B weights are the two resident flat parameters. In each
 * post-backward the bf16 cat (2,000,384 B) is cast to fp32 (4,000,256 B): by
 * flat_param.grad.to(reduce_dtype) under fp32 reduction, by
 * _cast_grad_to_param_dtype under bf16; that fp32 tensor stays .grad. The peak is
 * Adam's step, as without mixed precision: 40,006,656 (test_parallel.c
 * test_fsdp_world1_no_shard). */
static void test_mp_world1(void **state)
{
    (void)state;
    vc_fsdp_dtype rd[] = {VC_FSDP_DTYPE_FP32, VC_FSDP_DTYPE_BF16};
    for (size_t k = 0; k < 2; k++) {
        vc_options o = mp_opts(VC_PARALLEL_FSDP, 1, VC_FSDP_DTYPE_BF16, rd[k], 0);
        trace_t mp = mp_trace(o, "weight", 2000384);
        assert_int_equal(mp.gathers[0], 2);
        assert_int_equal(mp.gathers[1], 2);
        trace_t full = mp_trace(o, "weight", 4000256);
        assert_int_equal(full.gathers[0], 2);
        assert_int_equal(full.gathers[1], 0);
        trace_t cat = mp_trace(o, "grad", 2000384);
        assert_int_equal(cat.gathers[1], 2);
        trace_t g32 = mp_trace(o, "grad", 4000256);
        assert_int_equal(g32.gathers[1], 2);
        vc_result r = mp_estimate(o);
        assert_int_equal(r.memory.gradients, 2 * 4000256);
        assert_int_equal(r.memory.peak_allocated, 32002048 + 4096 + 2 * 4000256);
        vc_result_free(&r);
    }
}

/* use_orig_params=True: the optimizer is built on the original parameters,
 * whose data are their slices of the shard (_flat_param.py _use_sharded_views),
 * so Adam keeps one state tensor per slice, each in its own 512-byte blocks.
 * Linear(10 -> 10) twice, world size 1: a unit is the weight (100 elements, 400
 * B) and the bias (10, 40 B; at 100, already a multiple of 4: no padding), 110
 * elements. Per unit and state: 512 + 512 B per slice, where one state of the
 * flat parameter (440 B) takes 512: 2 units x 2 states x 1,024 = 4,096 B, one
 * GPU's four parameters' states; without use_orig_params 2,048. At world size 2
 * rank 0's shard is elements [0, 55): the weight's first 55 only, one slice
 * (220 B: 512), the bias has none there (its .grad None: no state): 2,048. */
static void test_orig_params_state(void **state)
{
    (void)state;
    static const char *const small =
        "{\"input\": [10], \"layers\": [{\"type\": \"Linear\", \"in_features\": 10, \"out_features\": 10},"
        " {\"type\": \"Linear\", \"in_features\": 10, \"out_features\": 10}]}";
    static const struct { int64_t gpus; int orig; vc_parallel par; int64_t states; } cases[] = {
        {1, 1, VC_PARALLEL_FSDP, 4096}, {1, 0, VC_PARALLEL_FSDP, 2048}, {1, 0, VC_PARALLEL_NONE, 4096},
        {2, 1, VC_PARALLEL_FSDP, 2048}, {1, 1, VC_PARALLEL_FSDP_GRAD_OP, 4096},
    };
    vc_model *m = NULL;
    vc_error err = {0};
    assert_int_equal(vc_model_load_string(small, strlen(small), "small.json", &m, &err), VC_OK);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        vc_options o = mp_opts(cases[i].par, cases[i].gpus, VC_FSDP_DTYPE_NONE, VC_FSDP_DTYPE_NONE, cases[i].orig);
        vc_result r;
        assert_int_equal(vc_estimate(m, &o, &r, &err), VC_OK);
        assert_int_equal(r.memory.optimizer_states, cases[i].states);
        vc_result_free(&r);
    }
    vc_model_free(m);
}

/* What is refused (exit 2 naming the option): MixedPrecision under autocast
 * (amp-bf16) or over fp32 master weights (mixed-bf16); --fsdp-use-orig-params
 * outside FSDP1; a unit of frozen and trainable parameters under
 * use_orig_params=True (its frozen views get gradients: not modelled). */
static void test_refused(void **state)
{
    (void)state;
    static const struct { int what; const char *path, *why; } cases[] = {
        {0, "--fsdp-param-dtype", "autocast"},
        {1, "--fsdp-param-dtype", "fp32 master weights"},
        {2, "--fsdp-use-orig-params", "give --parallel fsdp"},
        {3, "--fsdp-reduce-dtype", "mixed precision is FSDP's"},
    };
    vc_model *m = load();
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        vc_options o = mp_opts(VC_PARALLEL_FSDP, 4, VC_FSDP_DTYPE_BF16, VC_FSDP_DTYPE_NONE, 0);
        if (cases[i].what == 0) o.precision = VC_PREC_AMP_BF16;
        if (cases[i].what == 1) o.precision = VC_PREC_MIXED_BF16;
        if (cases[i].what == 2) o = mp_opts(VC_PARALLEL_FSDP2, 4, VC_FSDP_DTYPE_NONE, VC_FSDP_DTYPE_NONE, 1);
        if (cases[i].what == 3) o = mp_opts(VC_PARALLEL_ZERO3, 4, VC_FSDP_DTYPE_NONE, VC_FSDP_DTYPE_FP32, 0);
        vc_error err = {0};
        vc_result r;
        assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
        assert_string_equal(CLI_PATH(&err), cases[i].path);
        assert_non_null(strstr(CLI_MSG(&err), cases[i].why));
    }
    vc_model_free(m);
    static const char *const mixed =
        "{\"input\": [8], \"layers\": [{\"type\": \"Sequential\", \"repeat\": 2, \"layers\": ["
        "{\"type\": \"Linear\", \"in_features\": 8, \"out_features\": 8, \"frozen\": true},"
        "{\"type\": \"Linear\", \"in_features\": 8, \"out_features\": 8}]}]}";
    vc_error err = {0};
    assert_int_equal(vc_model_load_string(mixed, strlen(mixed), "mixed.json", &m, &err), VC_OK);
    vc_options o = mp_opts(VC_PARALLEL_FSDP, 2, VC_FSDP_DTYPE_NONE, VC_FSDP_DTYPE_NONE, 1);
    vc_result r;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--parallel");
    assert_non_null(strstr(CLI_MSG(&err), "the frozen ones get gradients too"));
    vc_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mp_resident),
        cmocka_unit_test(test_mp_bf16_fp32),
        cmocka_unit_test(test_mp_bf16_bf16),
        cmocka_unit_test(test_mp_strategies),
        cmocka_unit_test(test_orig_params),
        cmocka_unit_test(test_mp_world1),
        cmocka_unit_test(test_orig_params_state),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
