/*
 * test_parallel.c — the FSDP layouts (src/parallel/layout_fsdp1.c:
 * fsdp = FULL_SHARD, shard-grad-op = SHARD_GRAD_OP) on a model small enough to
 * derive every byte by hand from FSDP's source (torch/distributed/fsdp/
 * _flat_param.py, _runtime_utils.py, PyTorch 2.x; docs/parallel.md 1.6), and
 * hybrid = HYBRID_SHARD; and DeepSpeed's ZeRO-2 (zero2, from
 * deepspeed/runtime/zero/stage_1_and_2.py) and ZeRO-3 (zero3, from stage3.py,
 * partition_parameters.py, partitioned_param_coordinator.py; docs/parallel.md 1.8).
 *
 * The model: Linear(1000 -> 999) then Linear(999 -> 1000), both with bias,
 * fp32, batch 1. No repeated entry, so each Linear is a unit and the root
 * holds nothing. Unit 1: U = 999,000 + 999 = 999,999 elements; unit 2:
 * U = 999,000 + 1,000 = 1,000,000. At world size 4 both shards are
 * ceil(U / 4) = 250,000 elements (FlatParamHandle._get_shard: chunk(4)[rank],
 * padded to chunks[0]); unit 1's gathered (padded unsharded) flat parameter is
 * 4 x 250,000 = 1,000,000 elements, one more than U. Sizes in the trace are in
 * 512-byte blocks: 1,000,000 B -> 1,000,448; 4,000,000 and 3,999,996 B ->
 * 4,000,256; 3,996,000 B -> 3,996,160; 4,000 and 3,996 B -> 4,096.
 */
#include "cli_spelt.h"
#include "parallel_test.h"

/* Resident state per rank: the two shards, their sharded gradients and
 * Adam's two states on the shards only (the optimizer is built on the
 * FlatParameters, whose data is the local shard). */
static void test_fsdp_resident(void **state)
{
    (void)state;
    vc_result r = estimate(VC_PARALLEL_FSDP, 4, VC_OPTIM_ADAM);
    assert_int_equal(r.memory.weights, 2 * 1000448);          /* the shards, 1,000,000 B each in blocks */
    assert_int_equal(r.memory.gradients, 2 * 1000448);        /* _saved_grad_shard -> .grad */
    assert_int_equal(r.memory.optimizer_states, 2 * 2 * 1000448); /* exp_avg, exp_avg_sq */
    vc_result_free(&r);
    /* world size 1: a shard is the whole unit, 3,999,996 and 4,000,000 B
     * (4,000,256 each in blocks), as many bytes as one GPU's four tensors
     * (3,996,160 + 4,096, twice): the same weights and states */
    vc_result one = estimate(VC_PARALLEL_FSDP, 1, VC_OPTIM_ADAM);
    vc_result single = estimate(VC_PARALLEL_NONE, 1, VC_OPTIM_ADAM);
    assert_int_equal(one.memory.weights, 2 * 4000256);
    assert_int_equal(one.memory.weights, single.memory.weights);
    assert_int_equal(one.memory.optimizer_states, single.memory.optimizer_states);
    assert_int_equal(one.memory.gradients, 2 * 4000256); /* NO_SHARD: .grad is the unit's whole gradient */
    vc_result_free(&one);
    vc_result_free(&single);
    /* world size 3: ceil(999,999 / 3) = 333,333 and ceil(1,000,000 / 3) =
     * 333,334 elements, 1,333,332 and 1,333,336 B: 1,333,760 each in blocks */
    vc_result w3 = estimate(VC_PARALLEL_FSDP, 3, VC_OPTIM_SGD);
    assert_int_equal(w3.memory.weights, 2 * 1333760);
    assert_int_equal(w3.memory.optimizer_states, 0);
    vc_result_free(&w3);
}

/* FULL_SHARD at world size 4, Adam, batch 1. Forward: each unit gathered at
 * its pre-forward and freed at its post-forward (_post_forward_reshard), so
 * one at a time. Backward: the second unit gathered at its pre-backward, the
 * first prefetched right after it (BACKWARD_PRE), both gathered again after
 * the forward freed them: 2 + 2 gathers of 4,000,256 B in all. The peak is in the
 * second unit's post-backward, as SplitWithSizesBackward cats the views'
 * gradients into the unsharded flat gradient. Live then: the resident state
 * 6 x 1,000,448 (2 shards, 4 Adam states) = 6,002,688; the input 4,096; the
 * loss and its root gradient 512 + 512; the gradient of the first Linear's
 * output 4,096; two gathered units 2 x 4,000,256; the second Linear's weight
 * and bias gradients 3,996,160 + 4,096; the cat 4,000,256. Sum 22,012,928. */
static void test_fsdp_full_shard_timeline(void **state)
{
    (void)state;
    trace_t t = trace(VC_PARALLEL_FSDP, 4, VC_OPTIM_ADAM, "weight", 4000256);
    assert_int_equal(t.gathers[0], 2);
    assert_int_equal(t.gathers[1], 2);
    vc_result r = estimate(VC_PARALLEL_FSDP, 4, VC_OPTIM_ADAM);
    assert_int_equal(r.memory.peak_allocated, 6002688 + 4096 + 512 + 512 + 4096 + 2 * 4000256 + 3996160 + 4096 + 4000256);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    vc_result_free(&r);
    /* The forward's highest point: the resident state, the input, the
     * second unit gathered (the first already freed), the first Linear's
     * output (kept: saved for backward) and the second's, the loss:
     * 6,002,688 + 4,096 + 4,000,256 + 4,096 + 4,096 + 512 = 10,015,744. */
    assert_int_equal(t.max[0], 10015744);
}

/* SHARD_GRAD_OP keeps each unit gathered from its forward to its backward
 * (_post_forward_reshard frees only for RESHARD_AFTER_FORWARD strategies):
 * the forward's highest point holds the first unit too, 4,000,256 B more;
 * the backward needs no new gathers; its peak (both units gathered) is the
 * same as FULL_SHARD's. */
static void test_fsdp_shard_grad_op(void **state)
{
    (void)state;
    trace_t full = trace(VC_PARALLEL_FSDP, 4, VC_OPTIM_ADAM, "weight", 4000256);
    trace_t sgo = trace(VC_PARALLEL_FSDP_GRAD_OP, 4, VC_OPTIM_ADAM, "weight", 4000256);
    assert_int_equal(sgo.max[0] - full.max[0], 4000256);
    assert_int_equal(sgo.gathers[0], 2);
    assert_int_equal(sgo.gathers[1], 0);
    assert_int_equal(sgo.max[1], full.max[1]);
}

/* The reduce-scatter's padded copy: unit 1 (999,999 elements) is padded to
 * 1,000,000 (F.pad in _post_backward_hook: a new 4,000,256 B tensor), unit
 * 2 (1,000,000) needs none. With the gathered size counted above, the
 * backward's 4,000,256 B grad allocations are: unit 2's cat, unit 1's cat,
 * unit 1's padded copy = 3. */
static void test_fsdp_padding(void **state)
{
    (void)state;
    trace_t t = trace(VC_PARALLEL_FSDP, 4, VC_OPTIM_ADAM, "grad", 4000256);
    assert_int_equal(t.gathers[1], 3);
    /* and the sharded gradients, 250,000 elements each (1,000,448 B): one per unit */
    trace_t s = trace(VC_PARALLEL_FSDP, 4, VC_OPTIM_ADAM, "grad", 1000448);
    assert_int_equal(s.gathers[1], 2);
    /* world size 2: 999,999 is odd, so unit 1 is padded to 2 x 500,000 =
     * 1,000,000 elements (4,000,256 B), like its cat (3,999,996 B) and unit
     * 2's (4,000,000 B, even: no copy): 3 again */
    trace_t w2 = trace(VC_PARALLEL_FSDP, 2, VC_OPTIM_ADAM, "grad", 4000256);
    assert_int_equal(w2.gathers[1], 3);
}

/* World size 1: FSDP1 clamps every strategy to NO_SHARD (_init_utils.py
 * _init_core_state, pytorch/pytorch@39ec502d), so nothing is gathered
 * (FlatParamHandle.needs_unshard: False without a sharded strategy, and no
 * parameter mixed precision) and the post-backward hook keeps the unsharded
 * gradient as .grad (_post_backward_hook's NO_SHARD branch: all-reduce in
 * place, no reduce-scatter, no new_sharded_grad). The trace, by hand: the
 * forward's highest point is the resident 6 x 4,000,256 = 24,001,536 (two
 * flat parameters, four Adam states), the input 4,096, both Linears'
 * outputs 2 x 4,096 and the loss 512: 24,014,336, no gathered unit. In
 * backward the only 4,000,256 B grad allocations are the two
 * SplitWithSizesBackward cats (before: a new_sharded_grad of 4,000,256 B
 * each too). The backward's highest point is unit 1's cat: the resident
 * 24,001,536, the input 4,096, the loss and its gradient 512 + 512, unit
 * 2's .grad 4,000,256, weight 1's and bias 1's gradients 3,996,160 + 4,096,
 * the cat 4,000,256: 36,007,424. The peak is Adam's step (foreach: two
 * temporaries of 4,000,256 B over the resident 32,002,048 and the input
 * 4,096): 40,006,656, one GPU's peak exactly; SHARD_GRAD_OP and hybrid
 * give the same (NO_SHARD too). */
static void test_fsdp_world1_no_shard(void **state)
{
    (void)state;
    trace_t w = trace(VC_PARALLEL_FSDP, 1, VC_OPTIM_ADAM, "weight", 4000256);
    assert_int_equal(w.gathers[0], 2); /* the two flat parameters, made before the forward: no gather */
    assert_int_equal(w.gathers[1], 0);
    assert_int_equal(w.max[0], 24001536 + 4096 + 2 * 4096 + 512);
    assert_int_equal(w.max[1], 24001536 + 4096 + 512 + 512 + 4000256 + 3996160 + 4096 + 4000256);
    trace_t g = trace(VC_PARALLEL_FSDP, 1, VC_OPTIM_ADAM, "grad", 4000256);
    assert_int_equal(g.gathers[1], 2);
    vc_result one = estimate(VC_PARALLEL_FSDP, 1, VC_OPTIM_ADAM);
    vc_result single = estimate(VC_PARALLEL_NONE, 1, VC_OPTIM_ADAM);
    assert_int_equal(one.memory.peak_allocated, 32002048 + 4096 + 2 * 4000256);
    assert_int_equal(one.memory.peak_allocated, single.memory.peak_allocated);
    assert_int_equal(one.peak.phase, VC_PHASE_OPTIMIZER);
    vc_parallel other[] = {VC_PARALLEL_FSDP_GRAD_OP, VC_PARALLEL_FSDP_HYBRID};
    for (size_t k = 0; k < 2; k++) {
        vc_result r = estimate(other[k], 1, VC_OPTIM_ADAM);
        assert_int_equal(r.memory.peak_allocated, one.memory.peak_allocated);
        vc_result_free(&r);
        trace_t t = trace(other[k], 1, VC_OPTIM_ADAM, "weight", 4000256);
        assert_int_equal(t.max[0], w.max[0]);
        assert_int_equal(t.max[1], w.max[1]);
    }
    vc_result_free(&one);
    vc_result_free(&single);
}

/* HYBRID_SHARD: FULL_SHARD within an 8-GPU node, replicated across nodes
 * (the shard group is the node's device_count(); the inter-node all-reduce
 * of the sharded gradient is in place). At 16 GPUs each rank holds what
 * FULL_SHARD at 8 holds; at 4 GPUs (one node) what FULL_SHARD at 4 holds.
 * 12 GPUs are not whole nodes: refused on --gpus. */
static void test_fsdp_hybrid(void **state)
{
    (void)state;
    vc_result h16 = estimate(VC_PARALLEL_FSDP_HYBRID, 16, VC_OPTIM_ADAM);
    vc_result f8 = estimate(VC_PARALLEL_FSDP, 8, VC_OPTIM_ADAM);
    /* ceil(999,999 / 8) = 125,000 and 1,000,000 / 8 = 125,000 elements: 500,224 B each in blocks */
    assert_int_equal(h16.memory.weights, 2 * 500224);
    assert_int_equal(h16.memory.peak_allocated, f8.memory.peak_allocated);
    vc_result_free(&h16);
    vc_result_free(&f8);
    vc_result h4 = estimate(VC_PARALLEL_FSDP_HYBRID, 4, VC_OPTIM_ADAM);
    vc_result f4 = estimate(VC_PARALLEL_FSDP, 4, VC_OPTIM_ADAM);
    assert_int_equal(h4.memory.peak_allocated, f4.memory.peak_allocated);
    vc_result_free(&h4);
    vc_result_free(&f4);
    vc_model *m = load();
    vc_options o = opts(VC_PARALLEL_FSDP_HYBRID, 12, VC_OPTIM_ADAM);
    vc_error err = {0}; /* vc_set_error keeps the first error: start clean */
    vc_result r;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--gpus");
    vc_model_free(m);
}

/* A unit of frozen and trainable parameters: FSDP1 with use_orig_params=False
 * raises ValueError("Must flatten tensors with uniform `requires_grad`")
 * (_flat_param.py _validate_tensors_to_flatten); so does vramcalc, on
 * --parallel, naming the layer. Here each repeat copy (a unit) holds a
 * frozen Linear and a trainable one. */
static void test_fsdp_mixed_unit(void **state)
{
    (void)state;
    static const char *const mixed =
        "{\"input\": [8], \"layers\": [{\"type\": \"Sequential\", \"repeat\": 2, \"layers\": ["
        "{\"type\": \"Linear\", \"in_features\": 8, \"out_features\": 8, \"frozen\": true},"
        "{\"type\": \"Linear\", \"in_features\": 8, \"out_features\": 8}]}]}";
    vc_model *m = NULL;
    vc_error err = {0}; /* vc_set_error keeps the first error: start clean */
    assert_int_equal(vc_model_load_string(mixed, strlen(mixed), "mixed.json", &m, &err), VC_OK);
    vc_options o = opts(VC_PARALLEL_FSDP, 2, VC_OPTIM_ADAM);
    vc_result r;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--parallel");
    assert_non_null(strstr(CLI_MSG(&err), "layers[0][0].layers[1] mixes frozen and trainable"));
    /* DDP has no such rule */
    o.parallel = VC_PARALLEL_DDP;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_OK);
    vc_result_free(&r);
    vc_model_free(m);
}

/* ---- zero2: DeepSpeed ZeRO stage 2 (stage_1_and_2.py), derived from its source.
 * The same two Linears, 1,999,999 trainable elements, flattened and padded
 * to a multiple of 2 x 4 = 8: 2,000,000; each rank's partition 500,000. In
 * flat order W1 [0, 999,000), b1 [999,000, 999,999), W2 [999,999,
 * 1,998,999), b2 [1,998,999, 1,999,999): rank 1's partition [500,000,
 * 1,000,000) touches W1, b1 and W2, so its grads_in_partition holds
 * 999,000 + 999 + 999,000 = 1,998,999 elements, the most (ranks 0, 2, 3:
 * 999,000, 999,000, 1,000,000). */
static vc_result zero2(vc_precision prec, vc_error *err)
{
    vc_model *m = load();
    vc_options o = opts(VC_PARALLEL_ZERO2, 4, VC_OPTIM_ADAM);
    o.precision = prec;
    vc_result r;
    if (vc_estimate(m, &o, &r, err)) fail_msg("estimate failed: %s", err->msg);
    vc_model_free(m);
    return r;
}

/* fp32: the flat buffer 8,000,000 B; the fp32 partition (a clone even of
 * fp32) 2,000,000 B -> 2,000,384 in blocks; Adam's two states on it; the
 * gradient partition 7,995,996 B -> 7,996,416. The peak is at the end of
 * backward, in allreduce_bucket's flatten of the bucket (1,999,999 elements,
 * 8,000,000 B) while the IPG buffer (5e8 fp32 elements: 2,000,000,000 B)
 * is alive: resident 8,000,000 + 3 x 2,000,384 = 14,001,152, the input
 * 4,096, the loss and its root gradient 512 + 512. */
static void test_zero2_fp32(void **state)
{
    (void)state;
    vc_error err;
    vc_result r = zero2(VC_PREC_FP32, &err);
    assert_int_equal(r.memory.weights, 8000000 + 2000384);
    assert_int_equal(r.memory.optimizer_states, 2 * 2000384);
    assert_int_equal(r.memory.gradients, 7996416);
    assert_int_equal(r.memory.peak_allocated, 14001152 + 4096 + 512 + 512 + INT64_C(2000000000) + 8000000);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    vc_result_free(&r);
}

/* bf16 parameters: the flat buffer 4,000,000 B (4,000,256 in blocks), the
 * fp32 partition and Adam's states as above (the optimizer works on the fp32
 * partition), the gradient partition in bf16 3,997,998 B -> 3,998,208, the
 * IPG buffer 5e8 x 2 = 1,000,000,000 B. At the step, the bf16 flat gradient
 * of the partition (1,000,448) and its fp32 copy (2,000,384) are alive
 * together: its trace shows both. */
static void test_zero2_bf16(void **state)
{
    (void)state;
    vc_error err;
    vc_result r = zero2(VC_PREC_BF16, &err);
    assert_int_equal(r.memory.weights, 4000256 + 2000384);
    assert_int_equal(r.memory.optimizer_states, 2 * 2000384);
    assert_int_equal(r.memory.gradients, 3998208);
    /* the peak: the flatten copy (1,999,999 bf16 elements, 4,000,256 B) with
     * the IPG buffer; resident 6,000,640 + 4,000,768, the input (1,000 bf16:
     * 2,048) and the loss and its root gradient 512 + 512 */
    assert_int_equal(r.memory.peak_allocated, 6000640 + 4000768 + 2048 + 512 + 512 + INT64_C(1000000000) + 4000256);
    vc_result_free(&r);
    vc_model *m = load();
    vc_options o = opts(VC_PARALLEL_ZERO2, 4, VC_OPTIM_ADAM);
    o.precision = VC_PREC_BF16;
    trace_t t = {"grad", 1000448, {0, 0, 0, 0}, {0, 0, 0, 0}};
    if (vc_trace(m, &o, on_line, &t, &err)) fail_msg("trace failed: %s", err.msg);
    assert_int_equal(t.gathers[2], 1); /* flat_grad_partition in the optimizer phase */
    trace_t t32 = {"grad", 2000384, {0, 0, 0, 0}, {0, 0, 0, 0}};
    if (vc_trace(m, &o, on_line, &t32, &err)) fail_msg("trace failed: %s", err.msg);
    assert_int_equal(t32.gathers[2], 1); /* single_grad_partition, its fp32 copy */
    vc_model_free(m);
}


/* ---- zero3: DeepSpeed ZeRO stage 3 (src/parallel/layout_zero3.c), derived from its
 * source. A counter of one size's allocations and frees per phase. */
typedef struct {
    const char *cat;
    int64_t bytes;
    int allocs[4], frees[4];
} count_t;

static void on_count(void *ctx, const char *text)
{
    count_t *c = ctx;
    char phase[32], op[16], cat[16];
    long long bytes, total;
    if (sscanf(text, "%31s %15s %15s %lld %lld", phase, op, cat, &bytes, &total) != 5) return;
    if (strcmp(cat, c->cat) || bytes != c->bytes) return;
    if (!strcmp(op, "alloc")) c->allocs[phase_index(phase)]++;
    else if (!strcmp(op, "free")) c->frees[phase_index(phase)]++;
}

static count_t count_string(const char *json, vc_parallel par, int64_t gpus, vc_optim optim, const char *cat, int64_t bytes)
{
    vc_model *m = NULL;
    vc_error err = {0};
    if (vc_model_load_string(json, strlen(json), "m.json", &m, &err)) fail_msg("load failed: %s", err.msg);
    vc_options o = opts(par, gpus, optim);
    count_t c = {cat, bytes, {0, 0, 0, 0}, {0, 0, 0, 0}};
    if (vc_trace(m, &o, on_count, &c, &err)) fail_msg("trace failed: %s", err.msg);
    vc_model_free(m);
    return c;
}

/* The two Linears at world size 4, fp32, Adam. Partitions (Init._aligned_size:
 * each parameter padded to a multiple of 4): W1 999,000 -> 249,750 elements,
 * b1 999 -> 1,000 -> 250, W2 249,750, b2 1,000 -> 250: 500,000 in all.
 * Resident: the defragmented partitions (lp_param_buffer) 2,000,000 B ->
 * 2,000,384 in blocks, the fp32 partition the same, Adam's two states on it;
 * the gradient partitions (grad_partitions_flat_buffer, fp32) 2,000,384 and
 * the IPG bucket (5e8 fp32 elements) 2,000,000,000 B; b1 and b2 (at most 1e5
 * elements: persistent) gathered whole by _allgather_params_coalesced, 4 x
 * 250 elements each: 4,096 B each in blocks. */
static void test_zero3_resident(void **state)
{
    (void)state;
    vc_result r = estimate(VC_PARALLEL_ZERO3, 4, VC_OPTIM_ADAM);
    assert_int_equal(r.memory.weights, 2 * 2000384 + 2 * 4096);
    assert_int_equal(r.memory.gradients, 2000384 + INT64_C(2000000000));
    assert_int_equal(r.memory.optimizer_states, 2 * 2000384);
    /* The peak, in the second Linear's backward: the resident 2,010,010,112;
     * the input 4,096; W1 and W2 gathered (3,996,000 B each, 3,996,160 in
     * blocks: see test_zero3_gathers); the first Linear's output, saved,
     * 4,096; the loss and the root gradient 512 + 512; the gradient of the
     * output 4,096 and of the first Linear's output 4,096; W2's and b2's
     * gradients 3,996,160 + 4,096 before their hooks copy them into the IPG
     * bucket. */
    assert_int_equal(r.memory.peak_allocated, INT64_C(2010010112) + 4096 + 2 * 3996160 + 4096 + 512 + 512 + 4096 + 4096 +
                                                  3996160 + 4096);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    vc_result_free(&r);
}

/* The coordinator's gathers (fetch_sub_module) with its prefetch and
 * max_reuse_distance: the trace is [Linear 1, Linear 2] forward then
 * [Linear 2, Linear 1] backward. Linear 1's fetch gathers W1 (one parameter:
 * torch.empty(ceil(numel / 4) x 4), 999,000 elements) and prefetches the next
 * parameters of the trace not available, W2 (b2 is persistent); each
 * Linear's parameters are used again within 1e9 elements of trace
 * (__params_to_release), so neither is released in forward: no gather in
 * backward. Each is released after its backward (no later use). The
 * epilogue's reduce_scatter_coalesced cats the bucket's four gradients,
 * padded to multiples of 4 (999,000 + 1,000 + 999,000 + 1,000 elements,
 * 8,000,000 B), b1's one padding element a 512-byte allocation. */
static void test_zero3_gathers(void **state)
{
    (void)state;
    count_t g = count_string(two, VC_PARALLEL_ZERO3, 4, VC_OPTIM_ADAM, "weight", 3996160);
    assert_int_equal(g.allocs[0], 2);
    assert_int_equal(g.frees[0], 0);
    assert_int_equal(g.allocs[1], 0);
    assert_int_equal(g.frees[1], 2);
    count_t c = count_string(two, VC_PARALLEL_ZERO3, 4, VC_OPTIM_ADAM, "temp", 8000000);
    assert_int_equal(c.allocs[1], 1);
    /* the step: _partition_all_parameters releases b1 and b2, _post_step gathers them again */
    count_t p = count_string(two, VC_PARALLEL_ZERO3, 4, VC_OPTIM_ADAM, "weight", 4096);
    assert_int_equal(p.frees[2], 2);
    assert_int_equal(p.allocs[2], 2);
}

/* Four Linear(16384 -> 16384) at world size 2, SGD: each weight 268,435,456
 * elements (1 GiB in fp32 when gathered), the biases persistent. Forward:
 * Linear 0's fetch gathers W0 and prefetches W1 (prefetch_bucket_size 5e7:
 * one weight passes it); Linear 1's prefetches W2, Linear 2's W3, Linear 3's
 * the backward's next one not available, W1. Linear 0 and 1 are released
 * (their next use lies past 1e9 elements of trace: Linear 1's after 2, 3, 3,
 * 2 = 1.07e9), Linear 2 and 3 are kept (2 x 268M and 0 before their reuse):
 * 5 gathers, 2 frees in forward. Backward: Linear 3's fetch prefetches W0
 * (max_live_parameters 1e9 less the 805M available leaves room for it);
 * all four are freed after their backward. */
static void test_zero3_prefetch_reuse(void **state)
{
    (void)state;
    static const char *const big =
        "{\"input\": [16384], \"layers\": [{\"type\": \"Linear\", \"in_features\": 16384, \"out_features\": 16384, \"repeat\": 4}]}";
    count_t g = count_string(big, VC_PARALLEL_ZERO3, 2, VC_OPTIM_SGD, "weight", INT64_C(1073741824));
    assert_int_equal(g.allocs[0], 5);
    assert_int_equal(g.frees[0], 2);
    assert_int_equal(g.allocs[1], 1);
    assert_int_equal(g.frees[1], 4);
}

/* sub_group_size (1e9 elements): the same four Linears at world size 1, fp32.
 * The trainable parameters in order, W0 268,435,456, b0 16,384, ...: the
 * first sub-group closes at W3, holding 4 x 268,435,456 + 3 x 16,384 =
 * 1,073,790,976 elements (4,295,163,904 B, a multiple of 512); b3 is the
 * second. Each has its fp32 partition (_create_fp32_partitions: a tensor each)
 * and is stepped alone: the first's gradients flattened into one fp32 copy
 * (fp32: .to(float32) copies nothing), the second's single gradient only
 * viewed (flatten_dense_tensors of one tensor). */
static void test_zero3_subgroups(void **state)
{
    (void)state;
    static const char *const big =
        "{\"input\": [16384], \"layers\": [{\"type\": \"Linear\", \"in_features\": 16384, \"out_features\": 16384, \"repeat\": 4}]}";
    count_t w = count_string(big, VC_PARALLEL_ZERO3, 1, VC_OPTIM_SGD, "weight", INT64_C(4295163904));
    assert_int_equal(w.allocs[0], 1);
    count_t b3 = count_string(big, VC_PARALLEL_ZERO3, 1, VC_OPTIM_SGD, "weight", 65536);
    assert_int_equal(b3.allocs[0], 1);
    count_t g = count_string(big, VC_PARALLEL_ZERO3, 1, VC_OPTIM_SGD, "grad", INT64_C(4295163904));
    assert_int_equal(g.allocs[2], 1);
    count_t g1 = count_string(big, VC_PARALLEL_ZERO3, 1, VC_OPTIM_SGD, "grad", 65536);
    assert_int_equal(g1.allocs[2], 0);
}

/* World size 1: num_partitions == 1, so nothing is gathered
 * (_no_gather_coalesced: param.data = the partition) and nothing is padded;
 * the partitions are the whole parameters: lp_param_buffer 1,999,999 fp32
 * elements (7,999,996 B -> 8,000,000), the fp32 partition the same. Still
 * not the single-GPU estimate: the IPG bucket and the gradient partitions
 * are allocated and every gradient goes through the bucket. */
static void test_zero3_world1(void **state)
{
    (void)state;
    vc_result r = estimate(VC_PARALLEL_ZERO3, 1, VC_OPTIM_ADAM);
    assert_int_equal(r.memory.weights, 2 * 8000000);
    assert_int_equal(r.memory.gradients, 8000000 + INT64_C(2000000000));
    vc_result_free(&r);
    count_t g = count_string(two, VC_PARALLEL_ZERO3, 1, VC_OPTIM_ADAM, "weight", 3996160);
    assert_int_equal(g.allocs[0] + g.allocs[1], 0);
}

/* bf16 parameters: the 16-bit partitions 1,000,000 B (1,000,448), the fp32
 * partition 2,000,384, the gradient partitions in bf16 1,000,448 and the IPG
 * bucket 5e8 x 2 B; at the step flatten(averaged_gradients) (bf16, 1,000,448)
 * and its .to(float32) (2,000,384) are alive together. */
static void test_zero3_bf16(void **state)
{
    (void)state;
    vc_model *m = load();
    vc_options o = opts(VC_PARALLEL_ZERO3, 4, VC_OPTIM_ADAM);
    o.precision = VC_PREC_BF16;
    vc_error err = {0};
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    /* the persistent b1, b2 gathered: 1,000 bf16 elements each, 2,048 B */
    assert_int_equal(r.memory.weights, 1000448 + 2000384 + 2 * 2048);
    assert_int_equal(r.memory.gradients, 1000448 + INT64_C(1000000000));
    assert_int_equal(r.memory.optimizer_states, 2 * 2000384);
    vc_result_free(&r);
    count_t c = {"grad", 1000448, {0, 0, 0, 0}, {0, 0, 0, 0}};
    if (vc_trace(m, &o, on_count, &c, &err)) fail_msg("trace failed: %s", err.msg);
    assert_int_equal(c.allocs[2], 1);
    count_t c32 = {"grad", 2000384, {0, 0, 0, 0}, {0, 0, 0, 0}};
    if (vc_trace(m, &o, on_count, &c32, &err)) fail_msg("trace failed: %s", err.msg);
    assert_int_equal(c32.allocs[2], 1);
    vc_model_free(m);
}

/* A trace of the two Linears at world size 4, fp32, Adam, under a layout and an offload. */
static count_t count_lay(vc_parallel par, vc_offload off, const char *cat, int64_t bytes)
{
    vc_model *m = load();
    vc_options o = opts(par, 4, VC_OPTIM_ADAM);
    o.offload = off;
    vc_error err = {0};
    count_t c = {cat, bytes, {0, 0, 0, 0}, {0, 0, 0, 0}};
    if (vc_trace(m, &o, on_count, &c, &err)) fail_msg("trace failed: %s", err.msg);
    vc_model_free(m);
    return c;
}

/* --offload optimizer (offload_optimizer, device cpu): the fp32 partition,
 * its Adam state and the gradient partitions on the CPU (self.device); the GPU
 * keeps the model-dtype partitions (fp32 here: 2,000,384), the persistent b1 and
 * b2 gathered (2 x 4,096) and the IPG bucket. The reduce (partition_grads)
 * brings each partition back to the GPU (grad_buffer.to(device): W1 and W2
 * 249,750 elements, 999,000 B -> 999,424; b1 and b2 250, 1,024) and takes
 * its norm in float64 (W1, W2: 1,998,000 B -> 1,998,336); the step's own
 * float64 norm copies are not made (the norms were taken then). --offload
 * params adds offload_param: no partition on the GPU, and each gather brings
 * the partition over first (ds_tensor.to(device): W1 and W2 in forward); the
 * persistent parameters' re-gather after the step copies b1 and b2's. */
static void test_zero3_offload(void **state)
{
    (void)state;
    vc_model *m = load();
    vc_options o = opts(VC_PARALLEL_ZERO3, 4, VC_OPTIM_ADAM);
    o.offload = VC_OFFLOAD_OPTIMIZER;
    vc_error err = {0};
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    assert_int_equal(r.memory.weights, 2000384 + 2 * 4096);
    assert_int_equal(r.memory.gradients, INT64_C(2000000000));
    assert_int_equal(r.memory.optimizer_states, 0);
    vc_result_free(&r);
    o.offload = VC_OFFLOAD_PARAMS;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    assert_int_equal(r.memory.weights, 2 * 4096);
    assert_int_equal(r.memory.optimizer_states, 0);
    vc_result_free(&r);
    vc_model_free(m);
    count_t back = count_lay(VC_PARALLEL_ZERO3, VC_OFFLOAD_OPTIMIZER, "temp", 999424);
    assert_int_equal(back.allocs[1], 2);
    assert_int_equal(back.allocs[0], 0);
    count_t norm = count_lay(VC_PARALLEL_ZERO3, VC_OFFLOAD_OPTIMIZER, "temp", 1998336);
    assert_int_equal(norm.allocs[1], 2);
    assert_int_equal(norm.allocs[2], 0);
    count_t none = count_lay(VC_PARALLEL_ZERO3, VC_OFFLOAD_NONE, "temp", 1998336);
    assert_int_equal(none.allocs[2], 2); /* without offload: get_grad_norm_direct's copies in the step */
    count_t fwd = count_lay(VC_PARALLEL_ZERO3, VC_OFFLOAD_PARAMS, "temp", 999424);
    assert_int_equal(fwd.allocs[0], 2);
    count_t pers = count_lay(VC_PARALLEL_ZERO3, VC_OFFLOAD_PARAMS, "temp", 1024);
    assert_int_equal(pers.allocs[2], 2);
}

/* --offload a layout cannot do: exit 2 naming --offload (layout.c
 * offload_refusal, from the descriptors' offload and offload_why): ZeRO-2 has no offload_param, FSDP1 no optimizer-only
 * offload, DDP and one GPU none at all. */
static void test_offload_refused(void **state)
{
    (void)state;
    static const struct { vc_parallel par; vc_offload off; const char *why; } cases[] = {
        {VC_PARALLEL_ZERO2, VC_OFFLOAD_PARAMS, "offload_param is stage 3's"},
        {VC_PARALLEL_FSDP, VC_OFFLOAD_OPTIMIZER, "no optimizer-only offload"},
        {VC_PARALLEL_DDP, VC_OFFLOAD_OPTIMIZER, "no CPU offload"},
        {VC_PARALLEL_NONE, VC_OFFLOAD_PARAMS, "sharded --parallel"},
    };
    vc_model *m = load();
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        vc_options o = opts(cases[i].par, cases[i].par == VC_PARALLEL_NONE ? 1 : 4, VC_OPTIM_ADAM);
        o.offload = cases[i].off;
        vc_error err = {0};
        vc_result r;
        assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
        assert_string_equal(CLI_PATH(&err), "--offload");
        assert_non_null(strstr(CLI_MSG(&err), cases[i].why));
    }
    vc_model_free(m);
}

/* ---- offload beyond ZeRO-3 (src/parallel/layout_zero12.c, layout_fsdp1.c): ZeRO-2's offload_optimizer and
 * FSDP1's CPUOffload(offload_params=True) on the two Linears at world size 4,
 * fp32, Adam (sizes in 512-byte blocks as above). */

/* zero2 --offload optimizer (stage_1_and_2.py, DeepSpeed@edaa7221): the fp32
 * partition, its CPU gradient and Adam's state are the CPU's; the GPU keeps the
 * flat buffer (8,000,000 B) and temp_grad_buffer_for_gpu_offload, zeros of the
 * largest parameter (W1, W2: 999,000 fp32, 3,996,000 B -> 3,996,160), and no
 * grads_in_partition. Rank 1 (the busiest, above) holds W1's elements
 * [500,000, 999,000) = 499,000, all 999 of b1 and 1 of W2. The peak is still
 * the flatten of the bucket with the IPG buffer alive: 8,000,000 + 3,996,160
 * resident, the input 4,096, the loss and its root gradient 512 + 512, the IPG
 * buffer 2,000,000,000 and the copy 8,000,000. Then, per parameter of the
 * partition (copy_grads_in_partition's cpu_offload branch): the float64 copy of
 * its part (W1: 3,992,000 B -> 3,992,064; b1 7,992 -> 8,192); _has_inf_or_nan
 * on the whole gradient, fp32 so no .float() copy: isnan, isinf, logical_or
 * (bool, W1 and W2: 999,000 B -> 999,424 each) and their .float() (3,996,160),
 * for W1 and W2 both; no fp32 copy of an fp32 part. The kept norms (3 x 512)
 * go in the step, which makes total_dev_norm (512). */
static void test_zero2_offload(void **state)
{
    (void)state;
    vc_model *m = load();
    vc_options o = opts(VC_PARALLEL_ZERO2, 4, VC_OPTIM_ADAM);
    o.offload = VC_OFFLOAD_OPTIMIZER;
    vc_error err = {0};
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    assert_int_equal(r.memory.weights, 8000000);
    assert_int_equal(r.memory.gradients, 3996160);
    assert_int_equal(r.memory.optimizer_states, 0);
    assert_int_equal(r.memory.peak_allocated, 8000000 + 3996160 + 4096 + 512 + 512 + INT64_C(2000000000) + 8000000);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    vc_result_free(&r);
    vc_model_free(m);
    count_t d = count_lay(VC_PARALLEL_ZERO2, VC_OFFLOAD_OPTIMIZER, "temp", 3992064);
    assert_int_equal(d.allocs[1], 1);
    count_t db = count_lay(VC_PARALLEL_ZERO2, VC_OFFLOAD_OPTIMIZER, "temp", 8192);
    assert_int_equal(db.allocs[1], 1);
    count_t isnan = count_lay(VC_PARALLEL_ZERO2, VC_OFFLOAD_OPTIMIZER, "temp", 999424);
    assert_int_equal(isnan.allocs[1], 2 * 3);
    count_t fl = count_lay(VC_PARALLEL_ZERO2, VC_OFFLOAD_OPTIMIZER, "temp", 3996160);
    assert_int_equal(fl.allocs[1], 2);
    count_t gip = count_lay(VC_PARALLEL_ZERO2, VC_OFFLOAD_OPTIMIZER, "grad", 7996416);
    assert_int_equal(gip.allocs[1] + gip.allocs[2], 0); /* no grads_in_partition */
    count_t step = count_lay(VC_PARALLEL_ZERO2, VC_OFFLOAD_OPTIMIZER, "temp", 512);
    assert_int_equal(step.allocs[2], 1); /* total_dev_norm */
    assert_int_equal(step.frees[2], 3 + 1); /* reset_cpu_buffers: the norms of W1, b1, W2 */
}

/* The same in bf16: the flat buffer 4,000,000 B (4,000,256), the GPU temp buffer
 * 999,000 bf16 (1,998,000 B -> 1,998,336). _has_inf_or_nan now starts with
 * x.float(), a copy of the whole gradient (W1, W2: 3,996,160), and its .float()
 * of the logical_or is another: 2 per parameter; the part goes to the CPU through
 * .to(float32) (W1's 499,000 elements: 1,996,000 B -> 1,996,288). */
static void test_zero2_offload_bf16(void **state)
{
    (void)state;
    vc_model *m = load();
    vc_options o = opts(VC_PARALLEL_ZERO2, 4, VC_OPTIM_ADAM);
    o.offload = VC_OFFLOAD_OPTIMIZER;
    o.precision = VC_PREC_BF16;
    vc_error err = {0};
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    assert_int_equal(r.memory.weights, 4000256);
    assert_int_equal(r.memory.gradients, 1998336);
    assert_int_equal(r.memory.optimizer_states, 0);
    vc_result_free(&r);
    count_t fl = {"temp", 3996160, {0, 0, 0, 0}, {0, 0, 0, 0}};
    if (vc_trace(m, &o, on_count, &fl, &err)) fail_msg("trace failed: %s", err.msg);
    assert_int_equal(fl.allocs[1], 2 * 2);
    count_t part = {"temp", 1996288, {0, 0, 0, 0}, {0, 0, 0, 0}};
    if (vc_trace(m, &o, on_count, &part, &err)) fail_msg("trace failed: %s", err.msg);
    assert_int_equal(part.allocs[1], 1);
    vc_model_free(m);
}

/* fsdp --offload params (FULL_SHARD): the shards, their gradients (_cpu_grad)
 * and Adam's state are the CPU's: nothing resident on the GPU. Each gather first
 * copies the shard over (pre_unshard -> flat_param_to: 250,000 fp32, 1,000,448)
 * and drops it after the all-gather: 2 in forward, 2 in backward, as many as
 * the gathers. The reduce-scattered shard (_saved_grad_shard, 1,000,448) stays
 * on the GPU to the end of backward (prepare_gradient_for_optim deletes it):
 * freed there, not by zero_grad. The peak is FULL_SHARD's (test_fsdp_full_
 * shard_timeline) without the 6,002,688 B of resident shards and states:
 * 4,096 + 512 + 512 + 4,096 + 2 x 4,000,256 + 3,996,160 + 4,096 + 4,000,256. */
static void test_fsdp_offload(void **state)
{
    (void)state;
    vc_model *m = load();
    vc_options o = opts(VC_PARALLEL_FSDP, 4, VC_OPTIM_ADAM);
    o.offload = VC_OFFLOAD_PARAMS;
    vc_error err = {0};
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    assert_int_equal(r.memory.weights, 0);
    assert_int_equal(r.memory.gradients, 0);
    assert_int_equal(r.memory.optimizer_states, 0);
    assert_int_equal(r.memory.peak_allocated, 4096 + 512 + 512 + 4096 + 2 * 4000256 + 3996160 + 4096 + 4000256);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    vc_result_free(&r);
    vc_model_free(m);
    count_t h2d = count_lay(VC_PARALLEL_FSDP, VC_OFFLOAD_PARAMS, "temp", 1000448);
    assert_int_equal(h2d.allocs[0], 2);
    assert_int_equal(h2d.allocs[1], 2);
    count_t g = count_lay(VC_PARALLEL_FSDP, VC_OFFLOAD_PARAMS, "grad", 1000448);
    assert_int_equal(g.allocs[1], 2);
    assert_int_equal(g.frees[1], 2);
    assert_int_equal(g.frees[2] + g.frees[3], 0);
    /* without offload no copies, and the shards' gradients last to zero_grad */
    count_t none = count_lay(VC_PARALLEL_FSDP, VC_OFFLOAD_NONE, "temp", 1000448);
    assert_int_equal(none.allocs[0] + none.allocs[1], 0);
    count_t keep = count_lay(VC_PARALLEL_FSDP, VC_OFFLOAD_NONE, "grad", 1000448);
    assert_int_equal(keep.frees[1], 0);
}

/* ---- fsdp2: PyTorch FSDP2 (fully_shard; src/parallel/layout_fsdp2.c, docs/parallel.md
 * 2.5), the same two Linears, each its own fully_shard group, the root's group
 * empty. Each parameter is sharded on its own (_fsdp_param.py
 * _init_sharded_param: chunk(world, dim 0)[0], ceil(dim0 / world) rows).
 * At world size 4: weight 1 [999, 1000] -> 250 x 1000 = 250,000 elements
 * (1,000,000 B, 1,000,448 in blocks); bias 1 [999] -> 250 (1,000 B: 1,024);
 * weight 2 [1000, 999] -> 250 x 999 = 249,750 (999,000 B: 999,424); bias 2
 * [1000] -> 250 (1,024). */
static vc_result estimate_mp(int64_t gpus, vc_fsdp_dtype pdt, vc_fsdp_dtype rdt)
{
    vc_model *m = load();
    vc_options o = opts(VC_PARALLEL_FSDP2, gpus, VC_OPTIM_ADAM);
    o.fsdp_param_dtype = pdt;
    o.fsdp_reduce_dtype = rdt;
    vc_error err;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    vc_model_free(m);
    return r;
}

static trace_t trace_mp(int64_t gpus, vc_fsdp_dtype pdt, vc_fsdp_dtype rdt, const char *cat, int64_t bytes)
{
    vc_model *m = load();
    vc_options o = opts(VC_PARALLEL_FSDP2, gpus, VC_OPTIM_ADAM);
    o.fsdp_param_dtype = pdt;
    o.fsdp_reduce_dtype = rdt;
    vc_error err;
    trace_t t = {cat, bytes, {0, 0, 0, 0}, {0, 0, 0, 0}};
    if (vc_trace(m, &o, on_line, &t, &err)) fail_msg("trace failed: %s", err.msg);
    vc_model_free(m);
    return t;
}

/* Resident per rank: the four shards (1,000,448 + 1,024 + 999,424 + 1,024 =
 * 2,001,920 B); the sharded gradients, one reduce-scatter output per group
 * (foreach_reduce: reduce_output, the .grads are as_strided views of it):
 * group 1 250,000 + 250 = 250,250 elements (1,001,000 B: 1,001,472), group 2
 * 249,750 + 250 = 250,000 (1,000,448), 2,001,920 again; Adam's two states per
 * sharded parameter, 2 x 2,001,920. */
static void test_fsdp2_resident(void **state)
{
    (void)state;
    vc_result r = estimate(VC_PARALLEL_FSDP2, 4, VC_OPTIM_ADAM);
    assert_int_equal(r.memory.weights, 2001920);
    assert_int_equal(r.memory.gradients, 1001472 + 1000448);
    assert_int_equal(r.memory.optimizer_states, 2 * 2001920);
    vc_result_free(&r);
}

/* World size 4, fp32, Adam, batch 1: the all-gathers and the peak.
 * Forward (implicit prefetch): group 1's pre_forward allocates its
 * all-gather output, 4 x 250,250 = 1,001,000 elements (4,004,000 B:
 * 4,004,352), then its two unsharded parameters (4 x 250,000 = 1,000,000
 * elements: 4,000,256; 1,000: 4,096); the output is kept in
 * comm_ctx.all_gather_state. The first Linear's output (4,096) makes the
 * forward's highest point: resident 6,005,760 (shards and states; no
 * gradients yet), the input 4,096, 4,004,352 + 4,000,256 + 4,096, the output
 * 4,096 = 14,022,656. Group 2's all-gather output is 4 x 250,000 elements
 * (4,000,256 B, like weight 1's unsharded tensor): so two 4,000,256 B weight
 * allocations in forward, two in backward.
 * Backward: the root has no group (no prefetch from it); group 2's
 * pre_backward gathers it and prefetches group 1 (_backward_prefetch). Group
 * 2's post_backward: reduce_scatter_input (4 x 250,000 fp32: 4,000,256 B)
 * kept in reduce_scatter_states until group 1's post_backward, its output
 * 1,000,448 (.grad). The peak is group 1's copy-out in its pre_backward,
 * before its all-gather output is dropped: resident 6,005,760, input 4,096,
 * the loss and its root gradient 512 + 512, the gradient of the first
 * Linear's output 4,096, group 2's reduce-scatter input 4,000,256 and
 * output 1,000,448, group 1's all-gather output 4,004,352 and its unsharded
 * parameters 4,000,256 + 4,096: 19,024,384. */
static void test_fsdp2_timeline(void **state)
{
    (void)state;
    trace_t ag1 = trace(VC_PARALLEL_FSDP2, 4, VC_OPTIM_ADAM, "weight", 4004352);
    assert_int_equal(ag1.gathers[0], 1);
    assert_int_equal(ag1.gathers[1], 1);
    trace_t ag2 = trace(VC_PARALLEL_FSDP2, 4, VC_OPTIM_ADAM, "weight", 4000256);
    assert_int_equal(ag2.gathers[0], 2);
    assert_int_equal(ag2.gathers[1], 2);
    assert_int_equal(ag1.max[0], 6005760 + 4096 + 4004352 + 4000256 + 4096 + 4096);
    vc_result r = estimate(VC_PARALLEL_FSDP2, 4, VC_OPTIM_ADAM);
    assert_int_equal(r.memory.peak_allocated,
                     6005760 + 4096 + 512 + 512 + 4096 + 4000256 + 1000448 + 4004352 + 4000256 + 4096);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    vc_result_free(&r);
    /* reduce-scatter inputs (grad, backward): group 2's 4,000,256 B; group
     * 1's 4 x 250,250 fp32 = 4,004,352 B */
    trace_t rs = trace(VC_PARALLEL_FSDP2, 4, VC_OPTIM_ADAM, "grad", 4004352);
    assert_int_equal(rs.gathers[1], 1);
}

/* World size 1: the unshard gathers nothing (FSDPParamGroup.unshard returns
 * with _all_gather_output, an empty tensor), but wait_for_unshard still
 * copies each shard (the whole parameter) into a tensor of its own, and the
 * gradients still go through reduce_scatter_input and a copy into
 * reduce_output. So the resident state equals one GPU's, the peak does
 * not: no 999,999-element all-gather output (4,000,256 B) in forward, but
 * copies of weight 1 (999 x 1000: 3,996,160 B) and weight 2 (1000 x 999, the
 * same bytes) in forward and backward, besides the two resident shards. */
static void test_fsdp2_world1(void **state)
{
    (void)state;
    vc_result one = estimate(VC_PARALLEL_FSDP2, 1, VC_OPTIM_ADAM);
    vc_result single = estimate(VC_PARALLEL_NONE, 1, VC_OPTIM_ADAM);
    assert_int_equal(one.memory.weights, single.memory.weights);
    assert_int_equal(one.memory.optimizer_states, single.memory.optimizer_states);
    assert_true(one.memory.peak_allocated > single.memory.peak_allocated);
    vc_result_free(&one);
    vc_result_free(&single);
    trace_t ag = trace(VC_PARALLEL_FSDP2, 1, VC_OPTIM_ADAM, "weight", 4000256);
    assert_int_equal(ag.gathers[0], 0);
    trace_t cp = trace(VC_PARALLEL_FSDP2, 1, VC_OPTIM_ADAM, "weight", 3996160);
    assert_int_equal(cp.gathers[0], 4); /* the two resident shards (the whole weights), then weight 1's and weight 2's copies */
    assert_int_equal(cp.gathers[1], 2);
}

/* MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) over the fp32
 * model, world size 4: the shards, gradients and Adam state stay fp32
 * (the same bytes as without the policy); the all-gather runs in bf16: the
 * foreach-copy cast of group 1's shards, 250,250 bf16 (500,500 B: 500,736,
 * a temporary), then its output 1,001,000 bf16 (2,002,000 B: 2,002,432),
 * then weight 1 unsharded, 1,000,000 bf16 (2,000,384). The reduce-scatter
 * input of group 2 is fp32 (4,000,256, as without the policy: bf16
 * gradients widened in _chunk_cat's copy). With reduce_dtype bf16 too
 * (param_dtype's, so None), the input is bf16 (2,000,000 B: 2,000,384) and its output is
 * cast to fp32 after (_to_dtype_if_needed). */
static void test_fsdp2_mixed_precision(void **state)
{
    (void)state;
    vc_result r = estimate_mp(4, VC_FSDP_DTYPE_BF16, VC_FSDP_DTYPE_FP32);
    assert_int_equal(r.memory.weights, 2001920);
    assert_int_equal(r.memory.gradients, 1001472 + 1000448);
    assert_int_equal(r.memory.optimizer_states, 2 * 2001920);
    vc_result_free(&r);
    trace_t cast = trace_mp(4, VC_FSDP_DTYPE_BF16, VC_FSDP_DTYPE_FP32, "temp", 500736);
    assert_int_equal(cast.gathers[0], 1);
    assert_int_equal(cast.gathers[1], 1); /* the backward prefetch of group 1 */
    trace_t ag = trace_mp(4, VC_FSDP_DTYPE_BF16, VC_FSDP_DTYPE_FP32, "weight", 2002432);
    assert_int_equal(ag.gathers[0], 1);
    trace_t rs = trace_mp(4, VC_FSDP_DTYPE_BF16, VC_FSDP_DTYPE_FP32, "grad", 4000256);
    assert_int_equal(rs.gathers[1], 1);
    trace_t rs16 = trace_mp(4, VC_FSDP_DTYPE_BF16, VC_FSDP_DTYPE_NONE, "grad", 4000256);
    assert_int_equal(rs16.gathers[1], 0);
    trace_t rs16b = trace_mp(4, VC_FSDP_DTYPE_BF16, VC_FSDP_DTYPE_NONE, "grad", 2000384);
    assert_int_equal(rs16b.gathers[1], 1); /* group 2's bf16 reduce-scatter input, 4 x 250,000 bf16 */
    /* ... whose bf16 output, 250,000 elements (500,224 B), becomes fp32 (1,000,448): two grad allocations */
    trace_t out16 = trace_mp(4, VC_FSDP_DTYPE_BF16, VC_FSDP_DTYPE_NONE, "grad", 500224);
    assert_int_equal(out16.gathers[1], 1);
}

/* What fsdp2 refuses (exit 2 naming the option): --pp, --offload optimizer
 * (CPUOffloadPolicy moves the parameters too: test_fsdp2.c), --mode generate,
 * the policy without an FSDP layout or over autocast. */
static void test_fsdp2_refused(void **state)
{
    (void)state;
    vc_model *m = load();
    static const struct { int what; const char *path, *why; } cases[] = {
        {0, "--parallel", "with --pp is not modelled"},
        {1, "--offload", "FSDP2 has no optimizer-only offload"},
        {2, "--parallel", "modelled for --mode train and infer"},
        {3, "--fsdp-param-dtype", "mixed precision is FSDP's"},
        {4, "--fsdp-param-dtype", "not amp-bf16"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        vc_options o = opts(VC_PARALLEL_FSDP2, 4, VC_OPTIM_ADAM);
        if (cases[i].what == 0) o.pp = 2, o.gpus = 8;
        if (cases[i].what == 1) o.offload = VC_OFFLOAD_OPTIMIZER;
        if (cases[i].what == 2) o.mode = VC_MODE_GENERATE;
        if (cases[i].what >= 3) o.fsdp_param_dtype = VC_FSDP_DTYPE_BF16;
        if (cases[i].what == 3) o.parallel = VC_PARALLEL_DDP; /* fsdp takes it: FSDP1's MixedPrecision (test_fsdp1_mp.c) */
        if (cases[i].what == 4) o.precision = VC_PREC_AMP_BF16;
        vc_error err = {0};
        vc_result r;
        assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
        assert_string_equal(CLI_PATH(&err), cases[i].path);
        assert_non_null(strstr(CLI_MSG(&err), cases[i].why));
    }
    vc_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fsdp_resident),
        cmocka_unit_test(test_fsdp_world1_no_shard),
        cmocka_unit_test(test_fsdp_full_shard_timeline),
        cmocka_unit_test(test_fsdp_shard_grad_op),
        cmocka_unit_test(test_fsdp_padding),
        cmocka_unit_test(test_fsdp_hybrid),
        cmocka_unit_test(test_fsdp_mixed_unit),
        cmocka_unit_test(test_zero2_fp32),
        cmocka_unit_test(test_zero2_bf16),
        cmocka_unit_test(test_zero3_resident),
        cmocka_unit_test(test_zero3_gathers),
        cmocka_unit_test(test_zero3_prefetch_reuse),
        cmocka_unit_test(test_zero3_subgroups),
        cmocka_unit_test(test_zero3_world1),
        cmocka_unit_test(test_zero3_bf16),
        cmocka_unit_test(test_zero3_offload),
        cmocka_unit_test(test_offload_refused),
        cmocka_unit_test(test_zero2_offload),
        cmocka_unit_test(test_zero2_offload_bf16),
        cmocka_unit_test(test_fsdp_offload),
        cmocka_unit_test(test_fsdp2_resident),
        cmocka_unit_test(test_fsdp2_timeline),
        cmocka_unit_test(test_fsdp2_world1),
        cmocka_unit_test(test_fsdp2_mixed_precision),
        cmocka_unit_test(test_fsdp2_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
