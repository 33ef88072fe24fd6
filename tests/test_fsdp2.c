/*
 * test_fsdp2.c — FSDP2's options beyond the defaults (src/parallel/layout_fsdp2.c,
 * docs/parallel.md 2.5): MixedPrecisionPolicy.cast_forward_inputs,
 * reshard_after_forward (False, True given, an int), CPUOffloadPolicy and HSDP. Values
 * derived by hand from the source cited in layout_fsdp2.c and plan.c.
 */
#include "cli_spelt.h"
#include "parallel_test.h"

/* Sizes chosen so that no two tensors share a 512-rounded size: input
 * [4096] -> Linear 4096x1024 -> Linear 1024x768, batch 1. The caller's fp32
 * input is 4096 x 4 = 16,384 B; its bf16 copy 8,192 B; the Linears' bf16
 * outputs 2,048 and 1,536 B. */
static const char *const cast_model =
    "{\"input\": [4096], \"layers\": [{\"type\": \"Linear\", \"in_features\": 4096, \"out_features\": 1024},"
    " {\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 768}]}";

static trace_t trace_json(const char *json, const vc_options *o, const char *cat, int64_t bytes)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(json, strlen(json), "m.json", &m, &err)) fail_msg("load failed: %s", err.msg);
    trace_t t = {cat, bytes, {0, 0, 0, 0}, {0, 0, 0, 0}};
    if (vc_trace(m, o, on_line, &t, &err)) fail_msg("trace failed: %s", err.msg);
    vc_model_free(m);
    return t;
}

/* Counts the frees of `bytes` in `cat` per phase (on_line counts allocations). */
typedef struct {
    const char *cat;
    int64_t bytes;
    int frees[4];
} free_t;

static void on_free(void *ctx, const char *text)
{
    free_t *t = ctx;
    char phase[32], op[16], cat[16];
    long long bytes, total;
    if (sscanf(text, "%31s %15s %15s %lld %lld", phase, op, cat, &bytes, &total) != 5) return;
    if (!strcmp(op, "free") && !strcmp(cat, t->cat) && bytes == t->bytes) t->frees[phase_index(phase)]++;
}

static free_t frees_json(const char *json, const vc_options *o, const char *cat, int64_t bytes)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(json, strlen(json), "m.json", &m, &err)) fail_msg("load failed: %s", err.msg);
    free_t t = {cat, bytes, {0, 0, 0, 0}};
    if (vc_trace(m, o, on_free, &t, &err)) fail_msg("trace failed: %s", err.msg);
    vc_model_free(m);
    return t;
}

/* cast_forward_inputs (MixedPrecisionPolicy's default True; _fsdp_state.py
 * FSDPState._pre_forward, _fsdp_common.py _cast_fp_tensor): under
 * param_dtype bf16 the root's pre-forward makes a bf16 copy of the fp32
 * input, which the caller keeps (one 16,384 B activation, the input, and one
 * 8,192 B copy in forward). The copy is the first Linear's saved input, so
 * in training it goes in backward (once the first Linear's weight gradient is
 * made); in inference (nothing saved) it is held until the model's forward
 * returns (the module's argument) and freed then. Without the policy the
 * input is taken as it is: no copy. World size 1 and 4 alike. */
static void test_fsdp2_cast_forward_inputs(void **state)
{
    (void)state;
    for (int64_t gpus = 1; gpus <= 4; gpus += 3) {
        vc_options o = opts(VC_PARALLEL_FSDP2, gpus, VC_OPTIM_ADAM);
        o.fsdp_param_dtype = VC_FSDP_DTYPE_BF16;
        o.fsdp_reduce_dtype = VC_FSDP_DTYPE_FP32;
        trace_t in = trace_json(cast_model, &o, "act", 16384);
        assert_int_equal(in.gathers[0], 1);
        trace_t cp = trace_json(cast_model, &o, "act", 8192);
        assert_int_equal(cp.gathers[0], 1);
        assert_int_equal(cp.gathers[1], 0);
        free_t f = frees_json(cast_model, &o, "act", 8192);
        assert_int_equal(f.frees[0], 0);
        assert_int_equal(f.frees[1], 1);
        o.mode = VC_MODE_INFER;
        free_t fi = frees_json(cast_model, &o, "act", 8192);
        assert_int_equal(fi.frees[0], 1);
        vc_options none = opts(VC_PARALLEL_FSDP2, gpus, VC_OPTIM_ADAM);
        trace_t in32 = trace_json(cast_model, &none, "act", 16384);
        assert_int_equal(in32.gathers[0], 1);
        trace_t cp32 = trace_json(cast_model, &none, "act", 8192);
        assert_int_equal(cp32.gathers[0], 0);
    }
}

/* The forward's highest point on the two-Linear model (parallel_test.h) at
 * world size 4 under bf16/fp32, batch 1, with the copy: group 2's unshard,
 * as its all-gather output is made while its foreach-copy cast is alive and
 * group 1's output is still kept (comm_ctx.all_gather_state, freed by group
 * 2's wait_for_unshard): resident 6,005,760 (fp32 shards and Adam states),
 * the caller's fp32 input 1000 x 4 B (4,096) and its bf16 copy 1000 x 2 B
 * (2,048), group 1's all-gather output 4 x 250,250 x 2 B (2,002,432), the
 * first Linear's bf16 output 999 x 2 B (2,048), group 2's cast 250,000 x 2 B
 * (500,224) and all-gather output 4 x 250,000 x 2 B (2,000,384):
 * 10,516,992. Without cast_forward_inputs (the input in bf16 alone) it would
 * be 4,096 lower. */
static void test_fsdp2_cast_peak_forward(void **state)
{
    (void)state;
    vc_options o = opts(VC_PARALLEL_FSDP2, 4, VC_OPTIM_ADAM);
    o.fsdp_param_dtype = VC_FSDP_DTYPE_BF16;
    o.fsdp_reduce_dtype = VC_FSDP_DTYPE_FP32;
    trace_t t = trace_json(two, &o, "act", 2048);
    assert_int_equal(t.max[0], 6005760 + 4096 + 2048 + 2002432 + 2048 + 500224 + 2000384);
    assert_int_equal(t.gathers[0], 3); /* the input's copy and the two Linears' outputs */
}

/* reshard_after_forward on the two-Linear model (parallel_test.h; each Linear
 * a group, the root's empty), world size 4, fp32, batch 1. Group 1's
 * all-gather output is 4 x 250,250 fp32 (4,004,352 B); weight 1 unsharded
 * 4 x 250,000 (4,000,256 B, the size of group 2's all-gather output too).
 * By default (test_parallel.c's timeline) each group is gathered in forward
 * and again in backward. With False (every call's, _get_post_forward_mesh_info:
 * post_forward_mesh_info None) the groups stay unsharded from forward to
 * backward: no all-gather in backward, the unsharded weights not freed in
 * forward. The peak moves to weight 1's gradient in backward: resident
 * 6,005,760, the input 4,096, the loss 512 and its gradient 512, the
 * gradient of the first Linear's output 4,096, group 1's unsharded weight
 * and bias kept since forward 4,000,256 + 4,096, group 2's reduce-scatter
 * input 4,000,256 (kept in reduce_scatter_states) and its sharded gradients
 * 1,000,448, weight 1's and bias 1's gradients 999,000 x 4 B (3,996,160) and
 * 4,096: 19,020,288, 4,096 B under the default's 19,024,384 (whose peak is
 * group 1's copy-out in backward, test_parallel.c). */
static void test_fsdp2_reshard_false(void **state)
{
    (void)state;
    vc_options o = opts(VC_PARALLEL_FSDP2, 4, VC_OPTIM_ADAM);
    o.fsdp_reshard = VC_FSDP_RESHARD_FALSE;
    trace_t ag1 = trace_json(two, &o, "weight", 4004352);
    assert_int_equal(ag1.gathers[0], 1);
    assert_int_equal(ag1.gathers[1], 0);
    trace_t ag2 = trace_json(two, &o, "weight", 4000256);
    assert_int_equal(ag2.gathers[0], 2);
    assert_int_equal(ag2.gathers[1], 0);
    free_t f = frees_json(two, &o, "weight", 4000256);
    assert_int_equal(f.frees[0], 1); /* group 2's all-gather output only (weight 1 is kept) */
    vc_result def = estimate(VC_PARALLEL_FSDP2, 4, VC_OPTIM_ADAM);
    vc_model *m = load();
    vc_error err;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    assert_int_equal(r.memory.peak_allocated,
                     6005760 + 4096 + 512 + 512 + 4096 + 4000256 + 4096 + 4000256 + 1000448 + 3996160 + 4096);
    assert_int_equal(def.memory.peak_allocated, 19024384);
    assert_int_equal(r.memory.weights, def.memory.weights); /* the shards are the same */
    vc_result_free(&r);
    vc_result_free(&def);
    vc_model_free(m);
    /* an int 1 is False (_get_post_forward_mesh_info), 4 (the world) True: the default's peak */
    o.fsdp_reshard = 1;
    trace_t one = trace_json(two, &o, "weight", 4004352);
    assert_int_equal(one.gathers[1], 0);
    o.fsdp_reshard = 4;
    trace_t four = trace_json(two, &o, "weight", 4004352);
    assert_int_equal(four.gathers[1], 1);
}

/* reshard_after_forward=2 at world size 4: after forward each parameter keeps
 * 1/2 of its all-gather output (to_sharded_post_forward: a clone of
 * world x shard / 2 elements, then the output freed): weight 1 500,000 fp32
 * (2,000,384 B), bias 1 500 (2,048), weight 2 499,500 (1,998,336), bias 2
 * 500 (2,048). In backward each group is gathered again over the 2-rank
 * post-forward mesh: the inputs are the clones (1,001,000 / 2 elements for
 * group 1), the output the same 4 x 250,250 fp32 (4,004,352 B), and the
 * clones are freed after the copy-out (to_unsharded). So the peak is the
 * default's (group 1's copy-out in backward, 19,024,384, test_parallel.c)
 * with group 1's clones still there: + 2,000,384 + 2,048 = 21,026,816,
 * above both True's and False's (test_fsdp2_reshard_false). */
static void test_fsdp2_reshard_int(void **state)
{
    (void)state;
    vc_options o = opts(VC_PARALLEL_FSDP2, 4, VC_OPTIM_ADAM);
    o.fsdp_reshard = 2;
    trace_t c1 = trace_json(two, &o, "weight", 2000384);
    assert_int_equal(c1.gathers[0], 1);
    assert_int_equal(c1.gathers[1], 0);
    free_t f1 = frees_json(two, &o, "weight", 2000384);
    assert_int_equal(f1.frees[0], 0);
    assert_int_equal(f1.frees[1], 1);
    trace_t c2 = trace_json(two, &o, "weight", 1998336);
    assert_int_equal(c2.gathers[0], 1);
    free_t f2 = frees_json(two, &o, "weight", 1998336);
    assert_int_equal(f2.frees[1], 1);
    trace_t ag1 = trace_json(two, &o, "weight", 4004352);
    assert_int_equal(ag1.gathers[0], 1);
    assert_int_equal(ag1.gathers[1], 1);
    vc_model *m = load();
    vc_error err;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    assert_int_equal(r.memory.peak_allocated, 19024384 + 2000384 + 2048);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    vc_result_free(&r);
    vc_model_free(m);
}

/* The root's special case (FSDPState._lazy_init: only when
 * reshard_after_forward was not given, the root's groups get
 * post_forward_mesh_info None). A model with a root group: Linear 64->32,
 * two copies of Linear 32->32 (the units), Linear 32->16, world size 2. The
 * root's shards: 16 x 64 + 16 + 8 x 32 + 8 = 1,304 elements; its all-gather
 * output 2 x 1,304 fp32 = 10,432 B (10,752). By default it is gathered once
 * (forward) and kept to its post-backward; with True given it is resharded
 * after forward and gathered again in backward. */
static void test_fsdp2_reshard_root(void **state)
{
    (void)state;
    static const char *const rooted =
        "{\"input\": [64], \"layers\": [{\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 32},"
        " {\"type\": \"Linear\", \"in_features\": 32, \"out_features\": 32, \"repeat\": 2},"
        " {\"type\": \"Linear\", \"in_features\": 32, \"out_features\": 16}]}";
    vc_options o = opts(VC_PARALLEL_FSDP2, 2, VC_OPTIM_ADAM);
    trace_t def = trace_json(rooted, &o, "weight", 10752);
    assert_int_equal(def.gathers[0], 1);
    assert_int_equal(def.gathers[1], 0);
    o.fsdp_reshard = VC_FSDP_RESHARD_TRUE;
    trace_t all = trace_json(rooted, &o, "weight", 10752);
    assert_int_equal(all.gathers[0], 1);
    assert_int_equal(all.gathers[1], 1);
}

/* What --fsdp-reshard-after-forward refuses (exit 2 naming it): another
 * layout, an int that does not divide the data-parallel world
 * (_get_post_forward_mesh_info's ValueError), one past it. */
static void test_fsdp2_reshard_refused(void **state)
{
    (void)state;
    vc_model *m = load();
    static const struct { vc_parallel par; int64_t gpus, r; const char *why; } cases[] = {
        {VC_PARALLEL_FSDP, 4, VC_FSDP_RESHARD_FALSE, "give --parallel fsdp2"},
        {VC_PARALLEL_FSDP2, 4, 3, "3 does not divide the data-parallel world size 4"},
        {VC_PARALLEL_FSDP2, 4, 8, "8 does not divide"},
        {VC_PARALLEL_FSDP2, 1, 2, "2 does not divide the data-parallel world size 1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        vc_options o = opts(cases[i].par, cases[i].gpus, VC_OPTIM_ADAM);
        o.fsdp_reshard = cases[i].r;
        vc_error err = {0};
        vc_result r;
        assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
        assert_string_equal(CLI_PATH(&err), "--fsdp-reshard-after-forward");
        assert_non_null(strstr(CLI_MSG(&err), cases[i].why));
    }
    vc_model_free(m);
}

/* CPUOffloadPolicy (--offload params) on the two-Linear model, world size 4,
 * fp32, batch 1. The shards, their gradients and Adam's state are the
 * CPU's (_fsdp_param.py _init_sharded_param: padded_sharded_param.cpu(),
 * pin_memory(); foreach_reduce: new_sharded_grad.to(cpu)): nothing resident
 * on the GPU. Each unshard copies the group's shards to the GPU first
 * (FSDPParam.all_gather_inputs: sharded_param_data.to(device); no foreach
 * copy under offload): weight 1's 250,000 fp32 (1,000,448 B) and bias 1's
 * 250 (1,024) before group 1's all-gather output, weight 2's 249,750
 * (999,424) and bias 2's (1,024) before group 2's, in forward and again in
 * backward; they go as foreach_all_gather returns. Each reduce-scatter output
 * (group 2's 1,000,448 B) is freed in backward once copied to the CPU. The
 * peak is the second Linear's weight gradient in backward: the input 4,096,
 * the loss 512 and its gradient 512, the gradient of the model's output
 * 4,096, group 2's unsharded weight 999,000 x 4 B (3,996,160) and bias
 * 4,096, group 1's prefetched all-gather output 4,004,352, the first
 * Linear's output saved 4,096, the gradient of the second Linear's input
 * 4,096, its weight and bias gradients 3,996,160 + 4,096: 12,022,272. */
static void test_fsdp2_offload(void **state)
{
    (void)state;
    vc_model *m = load();
    vc_options o = opts(VC_PARALLEL_FSDP2, 4, VC_OPTIM_ADAM);
    o.offload = VC_OFFLOAD_PARAMS;
    vc_error err;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    assert_int_equal(r.memory.weights, 0);
    assert_int_equal(r.memory.gradients, 0);
    assert_int_equal(r.memory.optimizer_states, 0);
    assert_int_equal(r.memory.peak_allocated,
                     4096 + 512 + 512 + 4096 + 3996160 + 4096 + 4004352 + 4096 + 4096 + 3996160 + 4096);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    vc_result_free(&r);
    trace_t h1 = trace_json(two, &o, "temp", 1000448);
    assert_int_equal(h1.gathers[0], 1);
    assert_int_equal(h1.gathers[1], 1);
    trace_t h2 = trace_json(two, &o, "temp", 999424);
    assert_int_equal(h2.gathers[0], 1);
    assert_int_equal(h2.gathers[1], 1);
    trace_t rs = trace_json(two, &o, "grad", 1000448);
    assert_int_equal(rs.gathers[1], 1);
    free_t rsf = frees_json(two, &o, "grad", 1000448);
    assert_int_equal(rsf.frees[1], 1);
    assert_int_equal(rsf.frees[3], 0); /* not kept to zero_grad */
    /* world size 1: wait_for_unshard's all_gather_inputs[0] is the whole weight copied to the GPU
     * (999 x 1000 fp32, 3,996,160 B, a temporary), then its unsharded copy (a weight) */
    o.gpus = 1;
    trace_t w1 = trace_json(two, &o, "temp", 3996160);
    assert_int_equal(w1.gathers[0], 2); /* weight 1's and weight 2's (the same bytes) */
    assert_int_equal(w1.gathers[1], 2);
    vc_model_free(m);
}

/* HSDP (--fsdp-replicate 2 on 8 GPUs: a (2, 4) mesh) on the two-Linear
 * model: the parameters are sharded over the 4-rank shard dimension
 * (_fsdp_param.py _init_sharded_param: shard_mesh_size), so the shards, the
 * all-gathers and the reduce-scatters are fsdp2's at world size 4
 * (test_parallel.c: weights 2,001,920 B, peak 19,024,384). The
 * reduce-scatter output is then all-reduced over the replicas in place
 * (_fsdp_collectives.py foreach_reduce: dist.all_reduce(reduce_output)) and
 * held as all_reduce_input in the group's _all_reduce_state until
 * finalize_backward. In fp32 that is the tensor the .grads view: no byte
 * more. Under param_dtype bf16 with no reduce_dtype the output is bf16 and
 * cast to fp32 for the .grads; held, group 2's bf16 output (250,000 x 2 B,
 * 500,224) outlives its cast to the end of backward, so the backward peak
 * (group 1's copy-out, after group 2's post-backward) is 500,224 B above
 * fsdp2's at world size 4. */
static void test_fsdp2_hsdp(void **state)
{
    (void)state;
    vc_model *m = load();
    vc_error err;
    vc_result h, f;
    vc_options o = opts(VC_PARALLEL_FSDP2, 8, VC_OPTIM_ADAM);
    o.fsdp_replicate = 2;
    vc_options four = opts(VC_PARALLEL_FSDP2, 4, VC_OPTIM_ADAM);
    if (vc_estimate(m, &o, &h, &err) || vc_estimate(m, &four, &f, &err)) fail_msg("estimate failed: %s", err.msg);
    assert_int_equal(h.memory.weights, 2001920);
    assert_int_equal(h.memory.peak_allocated, 19024384);
    assert_int_equal(f.memory.peak_allocated, 19024384);
    vc_result_free(&h);
    vc_result_free(&f);
    o.fsdp_param_dtype = four.fsdp_param_dtype = VC_FSDP_DTYPE_BF16;
    if (vc_estimate(m, &o, &h, &err) || vc_estimate(m, &four, &f, &err)) fail_msg("estimate failed: %s", err.msg);
    assert_int_equal(h.memory.peak_allocated - f.memory.peak_allocated, 500224);
    assert_int_equal(h.peak.phase, VC_PHASE_BACKWARD);
    vc_result_free(&h);
    vc_result_free(&f);
    /* refused: replicas not dividing the world, HSDP without fsdp2, an int reshard against the shard dimension */
    static const struct { vc_parallel par; int64_t rep, r; const char *path, *why; } bad[] = {
        {VC_PARALLEL_FSDP2, 3, 0, "--fsdp-replicate", "3 replicas do not divide the data-parallel world size 8"},
        {VC_PARALLEL_FSDP, 2, 0, "--fsdp-replicate", "give --parallel fsdp2"},
        {VC_PARALLEL_FSDP2, 2, 8, "--fsdp-reshard-after-forward", "8 does not divide the data-parallel world size 4"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        vc_options b = opts(bad[i].par, 8, VC_OPTIM_ADAM);
        b.fsdp_replicate = bad[i].rep;
        b.fsdp_reshard = bad[i].r;
        vc_error e = {0};
        assert_int_equal(vc_estimate(m, &b, &h, &e), VC_ERR_USAGE);
        assert_string_equal(CLI_PATH(&e), bad[i].path);
        assert_non_null(strstr(CLI_MSG(&e), bad[i].why));
    }
    vc_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fsdp2_cast_forward_inputs),
        cmocka_unit_test(test_fsdp2_cast_peak_forward),
        cmocka_unit_test(test_fsdp2_reshard_false),
        cmocka_unit_test(test_fsdp2_reshard_int),
        cmocka_unit_test(test_fsdp2_reshard_root),
        cmocka_unit_test(test_fsdp2_reshard_refused),
        cmocka_unit_test(test_fsdp2_offload),
        cmocka_unit_test(test_fsdp2_hsdp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
