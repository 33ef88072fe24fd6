/*
 * test_zero1.c — the zero1 row of the parallel-layout table (src/parallel/layout.c):
 * DeepSpeed ZeRO stage 1, DeepSpeedZeroOptimizer with partition_grads=False
 * (deepspeed/runtime/zero/stage_1_and_2.py and engine.py at
 * deepspeedai/DeepSpeed@edaa7221267243c7be7fb49c5d5f5c4fb97b4641; docs/parallel.md
 * 1.10), every byte derived by hand from that source.
 *
 * The model of test_parallel.c: Linear(1000 -> 999) then Linear(999 -> 1000),
 * both with bias, fp32, batch 1, Adam. 1,999,999 trainable elements, flattened
 * and padded to a multiple of 2 x world (flatten_dense_tensors_aligned); at
 * world 4: 2,000,000, each rank's partition 500,000. In flat order W1 [0,
 * 999,000), b1 [999,000, 999,999), W2 [999,999, 1,998,999), b2 [1,998,999,
 * 1,999,999): rank 1's partition [500,000, 1,000,000) touches W1, b1 and W2,
 * whose whole gradients (get_partition_info; copy_grads_in_partition:
 * grads_in_partition = torch.empty(total_size)) are 1,998,999 elements, the
 * most: the rank modelled. Sizes in 512-byte blocks: 2,000,000 B -> 2,000,384;
 * 3,996,000 B -> 3,996,160; 4,000 and 3,996 B -> 4,096; 7,995,996 B -> 7,996,416.
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

static vc_model *load(void)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(two, strlen(two), "two.json", &m, &err)) fail_msg("load failed: %s", err.msg);
    return m;
}

static vc_options opts(vc_parallel par, int64_t gpus)
{
    vc_options o;
    vc_options_init(&o);
    o.optim = VC_OPTIM_ADAM;
    o.workspace = 0;
    o.parallel = par;
    o.gpus = gpus;
    return o;
}

static vc_result run(const vc_options *o)
{
    vc_model *m = load();
    vc_error err = {0};
    vc_result r;
    if (vc_estimate(m, o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    vc_model_free(m);
    return r;
}

/* How many allocations and frees of `bytes` in category `cat` the trace makes per
 * phase (forward, backward, optimizer, idle). */
typedef struct {
    const char *cat;
    int64_t bytes;
    int allocs[4], frees[4];
} count_t;

static int phase_index(const char *p)
{
    return !strcmp(p, "forward") ? 0 : !strcmp(p, "backward") ? 1 : !strcmp(p, "optimizer") ? 2 : 3;
}

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

static count_t count(const vc_options *o, const char *cat, int64_t bytes)
{
    vc_model *m = load();
    vc_error err = {0};
    count_t c = {cat, bytes, {0, 0, 0, 0}, {0, 0, 0, 0}};
    if (vc_trace(m, o, on_count, &c, &err)) fail_msg("trace failed: %s", err.msg);
    vc_model_free(m);
    return c;
}

/* What is alive at the end of backward besides the resident state (the
 * timeline of a single GPU, autograd.c): the input (1,000 fp32: 4,096), the
 * gradient flowing into layers[0]'s output (999 fp32: 4,096), the loss and its
 * root gradient (512 + 512). */
#define BWD_LIVE (4096 + 4096 + 512 + 512)
/* The four whole gradients, autograd's, of a step: W1, W2 3,996,160 each, b1, b2 4,096 each. */
#define ALL_GRADS (2 * 3996160 + 2 * 4096)
/* setup_buckets' IPG buffer: torch.empty(reduce_bucket_size = 5e8) fp32. */
#define IPG INT64_C(2000000000)

/* fp32 at world 4. Resident as zero2's (the same __init__): the flat buffer
 * 8,000,000 B, the fp32 partition (a clone even of fp32) 2,000,384 and Adam's
 * two states on it. Stage 1's hooks only make the IPG buffer (process_gradients
 * -> setup_buckets; no reduction, partition_gradients and overlap_comm off), so
 * every gradient stays whole until backward ends, and the peak is the last of
 * them (b1's) with the IPG buffer alive: 4,608 B above zero2's (its peak,
 * the bucket's flatten, 8,000,000, with no whole gradient left). Then
 * reduce_gradients (engine.py allreduce_gradients at the boundary) moves the
 * gradients into the bucket, each freed as it goes; allreduce_bucket's flatten
 * (1,999,999 fp32 = 8,000,000 B) once; grads_in_partition 7,996,416. The
 * step's get_grad_norm_direct: a float64 copy of each slice of rank 1's
 * partition (W1's 499,000 elements: 3,992,000 B -> 3,992,064; b1's 999:
 * 7,992 -> 8,192; W2's one element: 512). */
static void test_zero1_fp32(void **state)
{
    (void)state;
    vc_options o = opts(VC_PARALLEL_ZERO1, 4);
    vc_result r = run(&o);
    assert_int_equal(r.memory.weights, 8000000 + 2000384);
    assert_int_equal(r.memory.optimizer_states, 2 * 2000384);
    assert_int_equal(r.memory.gradients, 7996416);
    assert_int_equal(r.memory.peak_allocated, 8000000 + 3 * 2000384 + IPG + ALL_GRADS + BWD_LIVE);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    vc_result_free(&r);
    o.parallel = VC_PARALLEL_ZERO2;
    vc_result r2 = run(&o);
    assert_int_equal(r2.memory.peak_allocated + 4608, 8000000 + 3 * 2000384 + IPG + ALL_GRADS + BWD_LIVE);
    vc_result_free(&r2);
    o.parallel = VC_PARALLEL_ZERO1;
    count_t ipg = count(&o, "grad", IPG);
    assert_int_equal(ipg.allocs[1], 1);
    assert_int_equal(ipg.frees[1], 1);
    count_t w = count(&o, "grad", 3996160); /* W1's and W2's gradients: made and freed in backward */
    assert_int_equal(w.allocs[1], 2);
    assert_int_equal(w.frees[1], 2);
    count_t flat = count(&o, "temp", 8000000);
    assert_int_equal(flat.allocs[1], 1);
    count_t gip = count(&o, "grad", 7996416);
    assert_int_equal(gip.allocs[1], 1);
    assert_int_equal(gip.frees[2], 1);
    count_t d1 = count(&o, "temp", 3992064);
    assert_int_equal(d1.allocs[2], 1);
    count_t d2 = count(&o, "temp", 8192);
    assert_int_equal(d2.allocs[2], 1);
}

/* World size 1 against the single-GPU estimate: one rank holds everything, so
 * DeepSpeed adds exactly (stage_1_and_2.py __init__, setup_buckets) the fp32
 * partition (2,000,000 elements: 8,000,000 B, a clone even of fp32) and the IPG
 * buffer, and holds the parameters as one flat buffer (1,999,999 padded to 2:
 * 8,000,000 B) instead of four tensors (8,000,512 in blocks), Adam's states on
 * the partition (2 x 8,000,000) instead of per parameter (16,001,024). The
 * whole gradients of backward are the single GPU's. */
static void test_zero1_world1(void **state)
{
    (void)state;
    vc_options o = opts(VC_PARALLEL_NONE, 1);
    vc_result one = run(&o);
    assert_int_equal(one.memory.weights, 8000512);
    assert_int_equal(one.memory.gradients, ALL_GRADS);
    assert_int_equal(one.memory.optimizer_states, 16001024);
    o.parallel = VC_PARALLEL_ZERO1;
    vc_result r = run(&o);
    assert_int_equal(r.memory.weights, 8000000 + 8000000);
    assert_int_equal(r.memory.optimizer_states, 2 * 8000000);
    assert_int_equal(r.memory.gradients, 8000000); /* grads_in_partition: 1,999,999 fp32 -> 8,000,000 */
    assert_int_equal(r.memory.peak_allocated, 8000000 + 8000000 + 16000000 + IPG + one.memory.gradients + BWD_LIVE);
    vc_result_free(&one);
    vc_result_free(&r);
}

/* --offload optimizer: the cpu_offload branches are stage-independent (zero2's,
 * test_parallel.c test_zero2_offload): the GPU keeps the flat buffer
 * (8,000,000) and temp_grad_buffer_for_gpu_offload (the largest parameter,
 * 999,000 fp32: 3,996,160), no fp32 partition, state or grads_in_partition; the
 * peak is again the whole gradients with the IPG buffer. */
static void test_zero1_offload(void **state)
{
    (void)state;
    vc_options o = opts(VC_PARALLEL_ZERO1, 4);
    o.offload = VC_OFFLOAD_OPTIMIZER;
    vc_result r = run(&o);
    assert_int_equal(r.memory.weights, 8000000);
    assert_int_equal(r.memory.gradients, 3996160);
    assert_int_equal(r.memory.optimizer_states, 0);
    assert_int_equal(r.memory.peak_allocated, 8000000 + 3996160 + IPG + ALL_GRADS + BWD_LIVE);
    vc_result_free(&r);
    count_t gip = count(&o, "grad", 7996416);
    assert_int_equal(gip.allocs[1] + gip.allocs[2], 0); /* copy_grads_in_partition returns first */
    count_t d = count(&o, "temp", 3992064);        /* set_norm_for_param_grad_in_gpu: W1's part in float64 */
    assert_int_equal(d.allocs[1], 1);
}

/* --accumulate 2: the first micro-batch's backward makes the IPG buffer and
 * reduces nothing (allreduce_gradients communicates only at the boundary for
 * stage 1); ready_for_gradients stays set until the boundary's epilogue
 * (_release_ipg_buffers), so the second backward adds into the whole .grad
 * tensors with the same buffer, and the bucket is flattened once. The peak is
 * the second backward's W2 and b2 gradients, not yet added in place: resident
 * 14,001,152, the IPG buffer, the four accumulated gradients, the input and
 * the second forward's saved input of layers[1] (4,096 each), the loss and its
 * root gradient (512 + 512), the mean's gradient and the one into layers[1]'s
 * input (4,096 each), W2's new gradient 3,996,160 and b2's 4,096. */
static void test_zero1_accumulate(void **state)
{
    (void)state;
    vc_options o = opts(VC_PARALLEL_ZERO1, 4);
    o.accumulate = 2;
    vc_result r = run(&o);
    assert_int_equal(r.memory.peak_allocated,
                     8000000 + 3 * 2000384 + IPG + ALL_GRADS + 4096 + 4096 + 512 + 512 + 4096 + 4096 + 3996160 + 4096);
    vc_result_free(&r);
    count_t ipg = count(&o, "grad", IPG);
    assert_int_equal(ipg.allocs[1], 1);
    count_t flat = count(&o, "temp", 8000000);
    assert_int_equal(flat.allocs[1], 1);
}

/* What zero1 refuses, exit 2 naming the option: offload_param (stage 3's,
 * config.py DeepSpeedZeroOffloadParamConfig). */
static void test_zero1_refused(void **state)
{
    (void)state;
    vc_model *m = load();
    vc_options o = opts(VC_PARALLEL_ZERO1, 4);
    o.offload = VC_OFFLOAD_PARAMS;
    vc_error err = {0};
    vc_result r;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--offload");
    assert_non_null(strstr(CLI_MSG(&err), "offload_param is stage 3's"));
    vc_model_free(m);
}

/* With --pp (DeepSpeed's PipelineEngine takes stage 1: pipe/engine.py
 * PipelineEngine.__init__ asserts only zero_optimization_stage() <
 * ZeroStageEnum.gradients): each stage's parameters are flattened and
 * partitioned over its own data-parallel group. 4 GPUs, pp 2: 2 ranks per
 * stage. Stage 0 is Linear(1000 -> 999), 999,999 elements, stage 1
 * Linear(999 -> 1000), 1,000,000; either padded to a multiple of 2 x 2:
 * 1,000,000, partitions of 500,000. Weights: the flat buffer 4,000,000 B ->
 * 4,000,256 and the fp32 partition 2,000,000 -> 2,000,384 = 6,000,640; Adam's
 * two states on the partition 2 x 2,000,384. At the accumulation boundary
 * (the last of the 2 micro-batches) engine.py allreduce_gradients calls
 * reduce_gradients(pipeline_parallel=self.pipeline_parallelism), which first
 * appends a second torch.empty(reduce_bucket_size) to the IPG bucket (the
 * first made by setup_buckets at the first micro-batch's first gradient
 * hook) and cleared with it by _release_ipg_buffers: the peak holds both
 * buffers and the stage's whole gradients (3,996,160 + 4,096 either stage). */
static void test_zero1_pp(void **state)
{
    (void)state;
    vc_options o = opts(VC_PARALLEL_ZERO1, 4);
    o.pp = 2;
    vc_result r = run(&o);
    assert_int_equal(r.nranks, 2);
    for (size_t k = 0; k < 2; k++) {
        assert_int_equal(r.ranks[k].memory.weights, 4000256 + 2000384);
        assert_int_equal(r.ranks[k].memory.optimizer_states, 2 * 2000384);
        assert_int_equal(r.ranks[k].peak.gradients, 2 * IPG + 3996160 + 4096);
    }
    vc_result_free(&r);
}


/* --ds-overlap-comm true (DeepSpeedZeroConfig.overlap_comm; stage_1_and_2.py at
 * deepspeedai/DeepSpeed@edaa7221). setup_buckets makes buf_1 with buf_0
 * ("double buffers to avoid data access conflict when overlap_comm is
 * enabled"), both dropped by _release_ipg_buffers: one more IPG in backward.
 * Zero2: nothing else moves (other partitions' gradients go to
 * previous_reduced_grads only without contiguous_gradients), so its peak, the
 * bucket's flatten at the epilogue (8,000,000, with the input 4,096, the loss
 * and its root gradient 512 + 512), rises by exactly one IPG. Zero1:
 * process_gradients reduces in the hook (`if self.partition_gradients or
 * self.overlap_comm`) at the accumulation boundary, so each gradient goes into
 * the bucket as it is made, autograd's freed, and reduce_gradients skips its
 * loop: the whole gradients (zero1's peak above) are never all alive, and the
 * peak is zero2's, the flatten with both buffers: zero1's + IPG - 4,608. */
static void test_zero1_overlap(void **state)
{
    (void)state;
    const int64_t flatten_peak = 8000000 + 3 * 2000384 + 8000000 + 4096 + 512 + 512;
    vc_options o = opts(VC_PARALLEL_ZERO2, 4);
    vc_result r2 = run(&o);
    assert_int_equal(r2.memory.peak_allocated, flatten_peak + IPG);
    o.ds_overlap_comm = VC_DS_OVERLAP_ON;
    vc_result r2o = run(&o);
    assert_int_equal(r2o.memory.peak_allocated, flatten_peak + 2 * IPG);
    assert_int_equal(r2o.memory.gradients, r2.memory.gradients); /* grads_in_partition, 7,996,416 */
    count_t ipg = count(&o, "grad", IPG);
    assert_int_equal(ipg.allocs[1], 2);
    assert_int_equal(ipg.frees[1], 2);
    o.parallel = VC_PARALLEL_ZERO1;
    vc_result r1o = run(&o);
    assert_int_equal(r1o.memory.peak_allocated, flatten_peak + 2 * IPG);
    assert_int_equal(r1o.peak.phase, VC_PHASE_BACKWARD);
    ipg = count(&o, "grad", IPG);
    assert_int_equal(ipg.allocs[1], 2);
    assert_int_equal(ipg.frees[1], 2);
    count_t flat = count(&o, "temp", 8000000); /* allreduce_bucket's flatten: once, the bucket never fills */
    assert_int_equal(flat.allocs[1], 1);
    o.ds_overlap_comm = VC_DS_OVERLAP_OFF; /* DeepSpeed's default for stages 1-2: today's estimate */
    vc_result r1 = run(&o);
    assert_int_equal(r1.memory.peak_allocated, 8000000 + 3 * 2000384 + IPG + ALL_GRADS + BWD_LIVE);
    assert_int_equal(r1o.memory.peak_allocated, r1.memory.peak_allocated + IPG - 4608);
    vc_result_free(&r2); vc_result_free(&r2o); vc_result_free(&r1o); vc_result_free(&r1);
}

/* --accumulate 2 with overlap_comm, stage 1: the first backward is not the
 * boundary (engine.py _backward_prologue sets the optimizer's flag from
 * is_gradient_accumulation_boundary before backward), so its hooks make both
 * buffers and reduce nothing (reduce_ready_partitions_and_remove_grads: `if
 * self.partition_gradients or self.is_gradient_accumulation_boundary()`), and
 * allreduce_gradients calls nothing at stage 1 off the boundary: the buffers
 * stay (ready_for_gradients) and the gradients stay whole, as in
 * test_zero1_accumulate, whose peak (the second backward's new W2 gradient
 * before it is added) holds one more IPG here. */
static void test_zero1_overlap_accumulate(void **state)
{
    (void)state;
    vc_options o = opts(VC_PARALLEL_ZERO1, 4);
    o.accumulate = 2;
    vc_result r = run(&o);
    o.ds_overlap_comm = VC_DS_OVERLAP_ON;
    vc_result ro = run(&o);
    assert_int_equal(ro.memory.peak_allocated, r.memory.peak_allocated + IPG);
    assert_int_equal(ro.memory.peak_allocated,
                     8000000 + 3 * 2000384 + 2 * IPG + ALL_GRADS + 4096 + 4096 + 512 + 512 + 4096 + 4096 + 3996160 + 4096);
    vc_result_free(&r);
    vc_result_free(&ro);
    count_t ipg = count(&o, "grad", IPG);
    assert_int_equal(ipg.allocs[1], 2); /* made once, in the first backward */
    assert_int_equal(ipg.frees[1], 2);
}

/* Stage 3 (stage3.py at microsoft/DeepSpeed@38327e07 and deepspeedai/DeepSpeed@
 * edaa7221): overlap_comm only picks the streams (reduce_and_partition_stream,
 * parameter_offload.py's __allgather_stream: a new one, or the default
 * stream); there is one __ipg_bucket_flat_buffer either way. True (the
 * default) and false give the same bytes. */
static void test_zero3_overlap(void **state)
{
    (void)state;
    vc_options o = opts(VC_PARALLEL_ZERO3, 4);
    vc_result r = run(&o);
    o.ds_overlap_comm = VC_DS_OVERLAP_OFF;
    vc_result off = run(&o);
    o.ds_overlap_comm = VC_DS_OVERLAP_ON;
    vc_result on = run(&o);
    assert_memory_equal(&r.memory, &off.memory, sizeof r.memory);
    assert_memory_equal(&r.memory, &on.memory, sizeof r.memory);
    assert_int_equal(r.memory.peak_allocated, 2022020096); /* test_parallel.c test_zero3_resident derives it */
    vc_result_free(&r); vc_result_free(&off); vc_result_free(&on);
}

/* --ds-overlap-comm refused, exit 2 naming it: outside DeepSpeed ZeRO, true
 * with a pipeline stage (not modelled), and a value not true or false. */
static void test_overlap_refused(void **state)
{
    (void)state;
    static const struct { vc_parallel par; int64_t pp; int v; const char *msg; } bad[] = {
        {VC_PARALLEL_DDP, 1, VC_DS_OVERLAP_ON, "give --parallel zero1, zero2 or zero3, not ddp"},
        {VC_PARALLEL_FSDP, 1, VC_DS_OVERLAP_OFF, "overlap_comm is DeepSpeed ZeRO's"},
        {VC_PARALLEL_NONE, 1, VC_DS_OVERLAP_ON, "overlap_comm is DeepSpeed ZeRO's"},
        {VC_PARALLEL_ZERO1, 2, VC_DS_OVERLAP_ON, "true with --pp is not modelled"},
        {VC_PARALLEL_ZERO2, 1, 7, "invalid value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vc_model *m = load();
        vc_options o = opts(bad[i].par, bad[i].par == VC_PARALLEL_NONE ? 1 : 4);
        o.pp = bad[i].pp;
        o.ds_overlap_comm = bad[i].v;
        vc_error err = {0};
        vc_result r;
        assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
        assert_string_equal(CLI_PATH(&err), "--ds-overlap-comm");
        assert_non_null(strstr(CLI_MSG(&err), bad[i].msg));
        vc_model_free(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zero1_fp32),
        cmocka_unit_test(test_zero1_world1),
        cmocka_unit_test(test_zero1_offload),
        cmocka_unit_test(test_zero1_accumulate),
        cmocka_unit_test(test_zero1_refused),
        cmocka_unit_test(test_zero1_pp),
        cmocka_unit_test(test_zero1_overlap),
        cmocka_unit_test(test_zero1_overlap_accumulate),
        cmocka_unit_test(test_zero3_overlap),
        cmocka_unit_test(test_overlap_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
