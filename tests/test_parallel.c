/*
 * test_parallel.c — the FSDP rows of the parallel-layout table (src/layout.c:
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
#include "pipeline.h"

static const char *const two =
    "{\"input\": [1000], \"layers\": [{\"type\": \"Linear\", \"in_features\": 1000, \"out_features\": 999},"
    " {\"type\": \"Linear\", \"in_features\": 999, \"out_features\": 1000}]}";

/* What the trace says, per phase: the largest running total, and how many
 * allocations of `bytes` in category `cat` it makes. */
typedef struct {
    const char *cat;
    int64_t bytes;
    int64_t max[4];   /* forward, backward, optimizer, idle */
    int gathers[4];
} trace_t;

static int phase_index(const char *p)
{
    return !strcmp(p, "forward") ? 0 : !strcmp(p, "backward") ? 1 : !strcmp(p, "optimizer") ? 2 : 3;
}

static void on_line(void *ctx, const char *text)
{
    trace_t *t = ctx;
    char phase[32], op[16], cat[16];
    long long bytes, total;
    if (sscanf(text, "%31s %15s %15s %lld %lld", phase, op, cat, &bytes, &total) != 5) return;
    int k = phase_index(phase);
    if (total > t->max[k]) t->max[k] = total;
    if (!strcmp(op, "alloc") && !strcmp(cat, t->cat) && bytes == t->bytes) t->gathers[k]++;
}

static vc_model *load(void)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(two, strlen(two), "two.json", &m, &err)) fail_msg("load failed: %s", err.msg);
    return m;
}

static vc_options opts(vc_parallel par, int64_t gpus, vc_optim optim)
{
    vc_options o;
    vc_options_init(&o);
    o.optim = optim;
    o.workspace = 0;
    o.parallel = par;
    o.gpus = gpus;
    return o;
}

static trace_t trace(vc_parallel par, int64_t gpus, vc_optim optim, const char *cat, int64_t bytes)
{
    vc_model *m = load();
    vc_options o = opts(par, gpus, optim);
    vc_error err;
    trace_t t = {cat, bytes, {0, 0, 0, 0}, {0, 0, 0, 0}};
    if (vc_trace(m, &o, on_line, &t, &err)) fail_msg("trace failed: %s", err.msg);
    vc_model_free(m);
    return t;
}

static vc_result estimate(vc_parallel par, int64_t gpus, vc_optim optim)
{
    vc_model *m = load();
    vc_options o = opts(par, gpus, optim);
    vc_error err;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    vc_model_free(m);
    return r;
}

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
    assert_string_equal(err.path, "--gpus");
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
    assert_string_equal(err.path, "--parallel");
    assert_non_null(strstr(err.msg, "layers[0][0].layers[1] mixes frozen and trainable"));
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


/* ---- Megatron tensor and sequence parallelism (--tp, --sp; src/hf_tp.c) ----
 * MEG = NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553; K =
 * Korthikanti et al., arXiv:2205.05198, Table 2 (docs/parallel.md 2.6, 3). */

#define TP_DATA VC_TEST_DATA "/"

static vc_model *load_tp(const char *file, int64_t seq, int64_t tp, int sp, vc_status *st, vc_error *err)
{
    vc_hf_options hf;
    vc_hf_options_init(&hf);
    hf.seq = seq;
    hf.tp = tp;
    hf.sp = sp;
    vc_model *m = NULL;
    *st = vc_model_load_file_hf(file, &hf, &m, err);
    return m;
}

/* Parameters on one rank of Llama-3.1-70B (h 8192, 80 layers, 64 heads, 8 kv
 * heads of 128, ffn 28672, vocab 128256, untied, no biases) at TP 8, by
 * Megatron's split (MEG attention.py, layers.py, mlp.py, vocab_utils.py):
 * per layer q 8192 x 1024 + k, v 8192 x 128 each + o 1024 x 8192 = 18,874,368;
 * MLP 3 x 8192 x 3584 = 88,080,384; two RMSNorms 16,384 (replicated):
 * 106,971,136 x 80 = 8,557,690,880; the vocabulary padded to a multiple of
 * 128 x 8 = 129,024, 16,128 rows per rank, embedding and lm_head 2 x 16,128 x
 * 8192 = 264,241,152; the final norm 8192: 8,821,940,224 in all. Over the 8
 * ranks: the model's 70,553,706,496 + 7 copies of the 1,318,912 replicated
 * norm weights + the 2 x 768 x 8192 padding rows. */
static void test_tp_params_llama70b(void **state)
{
    (void)state;
    vc_status st;
    vc_error err;
    vc_model *m = load_tp(VC_TEST_DATA "/hf/llama-3.1-70b.json", 8192, 8, 0, &st, &err);
    assert_int_equal(st, VC_OK);
    assert_int_equal(vc_model_parameters(m), INT64_C(8821940224));
    assert_int_equal(8 * vc_model_parameters(m), INT64_C(70553706496) + 7 * INT64_C(1318912) + 2 * 768 * 8192);
    vc_model_free(m);
    /* with --sp the weights are the same */
    m = load_tp(VC_TEST_DATA "/hf/llama-3.1-70b.json", 8192, 8, 1, &st, &err);
    assert_int_equal(st, VC_OK);
    assert_int_equal(vc_model_parameters(m), INT64_C(8821940224));
    vc_model_free(m);
}

/* The saved bytes of one GPT block (the second, layers[4][1]) on a TP rank of
 * tests/data/parallel/gpt2-medium-k.json (s 1024, h 1024, a 16, b 1, bf16,
 * dropout 0.1, gelu_pytorch_tanh: one saved input as Megatron's fused GELU).
 * Flash attention keeps no s x s tensor: K's "selective recompute" rows,
 * sbh(10 + 24/t) without SP and 34sbh/t with it, plus what K leaves out: the
 * two LayerNorms' mean and rstd (fp32, s/t' each: 2 x 2 x 4 x s/t' B, t' = t
 * with SP, else 1) and flash's softmax_lse (fp32 [a/t, s]) and rng state (two
 * 512-byte blocks). The math backend upcasts 16-bit q, k, v to fp32
 * (docs/autograd.md 4.8): its attention core keeps 9as^2b/t + 14sbh/t bytes
 * (fp32 softmax and dropped probabilities, the 1-byte mask; fp32 q, k, v, the
 * 16-bit output) where K counts 5as^2b/t + 8sbh/t; the rest is K's 26sbh
 * (/t with SP). */
static int64_t block_saved(const char *file, int64_t tp, int sp, vc_attention att)
{
    vc_status st;
    vc_error err;
    vc_model *m = load_tp(file, 1024, tp, sp, &st, &err);
    if (st) fail_msg("load: %s", err.msg);
    vc_options o;
    vc_options_init(&o);
    o.precision = VC_PREC_BF16;
    o.optim = VC_OPTIM_SGD;
    o.workspace = 0;
    o.attention = att;
    o.tp = tp;
    o.sp = sp;
    o.gpus = tp;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate: %s", err.msg);
    int64_t sum = 0;
    for (size_t i = 0; i < r.nlayers; i++)
        if (!strncmp(r.layers[i].name, "layers[4][1].", 13)) sum += r.layers[i].activations;
    vc_result_free(&r);
    vc_model_free(m);
    return sum;
}

static void test_tp_korthikanti(void **state)
{
    (void)state;
    const char *f = TP_DATA "parallel/gpt2-medium-k.json";
    const int64_t s = 1024, h = 1024, a = 16, sbh = s * h;
    for (int64_t t = 1; t <= 8; t *= 2)
        for (int sp = 0; sp <= (t > 1); sp++) {
            int64_t ts = sp ? t : 1;
            int64_t k_sel = sp ? 34 * sbh / t : sbh * 10 + 24 * sbh / t; /* K Table 2, selective */
            int64_t ln = 2 * 2 * 4 * s / ts, lse = 4 * (a / t) * s + 1024;
            assert_int_equal(block_saved(f, t, sp, VC_ATTN_FLASH), k_sel + ln + lse);
            int64_t k_full = sp ? (34 * sbh + 5 * a * s * s) / t : sbh * 10 + (24 * sbh + 5 * a * s * s) / t; /* K, no recompute */
            int64_t core_k = (8 * sbh + 5 * a * s * s) / t, core_fp32 = (14 * sbh + 9 * a * s * s) / t;
            assert_int_equal(block_saved(f, t, sp, VC_ATTN_MATH), k_full - core_k + core_fp32 + ln);
        }
}

/* Megatron's vocab-parallel cross-entropy (src/loss.c emit_vocab_parallel, MEG cross_entropy.py)
 * on gpt2-medium-k at TP 8, s 1024, bf16: the vocabulary 50,257 padded to a
 * multiple of 128 x 8 (vocab_utils.py) = 51,200, 6,400 per rank. logits.float()
 * is fp32 [1024, 6400] = 26,214,400 B, which becomes the saved softmax; the
 * bf16 logits (13,107,200 B) live until the loss returns; the int64 labels,
 * masked target (8,192 B) and bool mask (1,024 B) are [s] each. Backward:
 * the fp32 gradient (a new tensor here, Megatron's in-place update of the
 * softmax), then the .float()'s backward makes the bf16 gradient. */
typedef struct {
    int fwd_fp32, bwd_fp32, bwd_bf16, saved_small;
} ce_trace;

static void on_ce(void *ctx, const char *text)
{
    ce_trace *c = ctx;
    char phase[32], op[16], cat[16], layer[64], name[64] = "";
    long long bytes, total;
    if (sscanf(text, "%31s %15s %15s %lld %lld %63s %63s", phase, op, cat, &bytes, &total, layer, name) < 6 || strcmp(op, "alloc"))
        return;
    bool f = !strcmp(phase, "forward"), bw = !strcmp(phase, "backward");
    if (f && bytes == 26214400 && !strcmp(name, "_to_copy")) c->fwd_fp32++;
    if (bw && bytes == 26214400 && !strcmp(name, "vocab_parallel_cross_entropy")) c->bwd_fp32++;
    if (bw && bytes == 13107200 && !strcmp(name, "_to_copy")) c->bwd_bf16++;
    if (f && !strcmp(cat, "act") && !strcmp(name, "vocab_parallel_cross_entropy") && (bytes == 1024 || bytes == 8192)) c->saved_small++;
}

static void test_tp_vocab_parallel_loss(void **state)
{
    (void)state;
    vc_status st;
    vc_error err;
    vc_model *m = load_tp(TP_DATA "parallel/gpt2-medium-k.json", 1024, 8, 0, &st, &err);
    assert_non_null(m);
    vc_options o;
    vc_options_init(&o);
    o.precision = VC_PREC_BF16;
    o.optim = VC_OPTIM_SGD;
    o.workspace = 0;
    o.attention = VC_ATTN_FLASH;
    o.tp = 8;
    o.gpus = 8;
    ce_trace c = {0, 0, 0, 0};
    assert_int_equal(vc_trace(m, &o, on_ce, &c, &err), VC_OK);
    assert_int_equal(c.fwd_fp32, 1);
    assert_int_equal(c.bwd_fp32, 1);
    assert_int_equal(c.bwd_bf16, 1);
    assert_int_equal(c.saved_small, 2); /* target_mask (1,024 B), masked_target_1d (8,192 B) */
    vc_model_free(m);
}

/* Impossible layouts name --tp / --sp (src/hf_tp.c; MEG divide() asserts). */
static void test_tp_errors(void **state)
{
    (void)state;
    vc_status st;
    vc_error err;
    const char *l70 = VC_TEST_DATA "/hf/llama-3.1-70b.json";
    assert_null(load_tp(l70, 0, 3, 0, &st, &err)); /* 64 heads */
    assert_int_equal(st, VC_ERR_USAGE);
    assert_string_equal(err.path, "--tp");
    assert_non_null(strstr(err.msg, "num_attention_heads (64)"));
    assert_null(load_tp(l70, 0, 16, 0, &st, &err)); /* 8 kv heads */
    assert_string_equal(err.path, "--tp");
    assert_non_null(strstr(err.msg, "num_key_value_heads (8)"));
    assert_null(load_tp(l70, 0, 1, 1, &st, &err));
    assert_string_equal(err.path, "--sp");
    assert_null(load_tp(l70, 1001, 8, 1, &st, &err)); /* 1001 tokens over 8 ranks */
    assert_string_equal(err.path, "--sp");
    assert_null(load_tp(VC_TEST_DATA "/hf/bert-base-uncased.json", 128, 2, 1, &st, &err));
    assert_string_equal(err.path, "--sp");
    /* a model loaded for one split, estimated with another; a model file with --tp */
    vc_model *m = load_tp(l70, 512, 8, 0, &st, &err);
    assert_non_null(m);
    vc_options o;
    vc_options_init(&o);
    vc_result r;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
    assert_string_equal(err.path, "--tp");
    vc_model_free(m);
    m = load();
    o.tp = 2;
    o.gpus = 2;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
    assert_string_equal(err.path, "--tp");
    vc_model_free(m);
    /* generation's decoding step has one token: no sequence to split */
    m = load_tp(l70, 512, 8, 1, &st, &err);
    assert_non_null(m);
    o.tp = 8;
    o.gpus = 8;
    o.sp = 1;
    o.mode = VC_MODE_GENERATE;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
    assert_string_equal(err.path, "--sp");
    vc_model_free(m);
}

/* --max-seq with --sp searches lengths the TP degree divides (src/maxseq.c;
 * hf_tp.c refuses the others), and the answer is a length that loads and
 * fits while the next multiple of t does not. */
static void test_tp_max_seq(void **state)
{
    (void)state;
    vc_status st;
    vc_error err;
    vc_model *m = load_tp(VC_TEST_DATA "/hf/llama-3.1-8b.json", 0, 8, 1, &st, &err);
    assert_non_null(m);
    vc_options o;
    vc_options_init(&o);
    o.precision = VC_PREC_BF16;
    o.tp = 8;
    o.sp = 1;
    o.gpus = 8;
    int64_t cap = INT64_C(80) << 30, n = 0;
    int limited = 0;
    assert_int_equal(vc_model_max_seq(m, &o, cap, &n, &limited, NULL, &err), VC_OK);
    assert_true(n > 0);
    assert_int_equal(n % 8, 0);
    for (int64_t k = 0; k < 2; k++) {
        vc_model *c = load_tp(VC_TEST_DATA "/hf/llama-3.1-8b.json", n + 8 * k, 8, 1, &st, &err);
        assert_non_null(c);
        vc_result r;
        assert_int_equal(vc_estimate(c, &o, &r, &err), VC_OK);
        if (k == 0) assert_true(r.memory.total <= cap);
        else assert_true(r.memory.total > cap);
        vc_result_free(&r);
        vc_model_free(c);
    }
    vc_model_free(m);
}

/* ---- pipeline parallelism (--pp; src/pipeline.c, docs/parallel.md 2.6) ----
 * The model: four Linear(1000 -> 1000, bias=False), fp32, batch 1, SGD,
 * workspace 0. --pp 2 puts two on each stage. Sizes in 512-byte blocks: a
 * weight or its gradient 4,000,000 B -> 4,000,256; an activation [1, 1000]
 * 4,000 B -> 4,096; the loss and the root gradient 4 B -> 512. */
static const char *const four =
    "{\"input\": [1000], \"layers\": ["
    "{\"type\": \"Linear\", \"in_features\": 1000, \"out_features\": 1000, \"bias\": false},"
    "{\"type\": \"Linear\", \"in_features\": 1000, \"out_features\": 1000, \"bias\": false},"
    "{\"type\": \"Linear\", \"in_features\": 1000, \"out_features\": 1000, \"bias\": false},"
    "{\"type\": \"Linear\", \"in_features\": 1000, \"out_features\": 1000, \"bias\": false}]}";

static vc_result pp_estimate(const char *json, int64_t pp, int64_t micro, int64_t gpus, vc_parallel par)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(json, strlen(json), "pp.json", &m, &err)) fail_msg("load failed: %s", err.msg);
    vc_options o = opts(par, gpus, VC_OPTIM_SGD);
    o.pp = pp;
    o.micro_batches = micro;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    vc_model_free(m);
    return r;
}

/* Stage 0 (first): weights 2 x 4,000,256 = 8,000,512, the input batch 4,096
 * resident. Each micro-batch leaves h1 (saved by the second Linear) alive
 * until its backward; its output h2 is sent and its storage replaced by a
 * one-element tensor, 512 B, kept until the backward (deallocate_output_tensor).
 * In flight: min(pp - 0, M) (schedules.py: num_warmup_microbatches =
 * min(pp - rank - 1, M), one more forward in each 1F1B pair).
 *  M = 1: one micro-batch, no accumulation. The peak is the first Linear's
 *    backward: weights 8,000,512 + input 4,096 + the received output gradient
 *    4,096 + dW2 4,000,256 + dh1 4,096 + dW1 4,000,256 + the sent output's
 *    512 = 16,013,824.
 *  M = 2: two in flight, then a cooldown backward into existing gradients
 *    (one held micro-batch fewer): the second Linear's backward, weights
 *    8,000,512 + gradients 8,000,512 + input, h1, received gradient, dh1
 *    4 x 4,096 + the new dW2 4,000,256 (added in place, then freed) + 512 =
 *    20,018,176.
 *  M = 4: a 1F1B pair follows, the other micro-batch's h1 and sent output
 *    still held: 20,018,176 + 4,096 + 512 = 20,022,784.
 * Stage 1 (last, one in flight): the received input h2 (requires_grad, saved
 * by the third Linear), h3, the loss 512 and the root gradient 512.
 *  M = 1: the third Linear's backward: weights 8,000,512 + h2 4,096 + dW4
 *    4,000,256 + dh3 4,096 + dW3 4,000,256 + dh2 4,096 (the gradient sent
 *    back) + loss and root 1,024 = 16,014,336.
 *  M >= 2: the fourth Linear's backward into existing gradients: 16,001,024
 *    + h2, h3, dh4, dh3 4 x 4,096 + loss and root 1,024 + the new dW4
 *    4,000,256 = 20,018,688. */
static void test_pp_stage_timeline(void **state)
{
    (void)state;
    const int64_t first[3] = {16013824, 20018176, 20022784}, last[3] = {16014336, 20018688, 20018688};
    const int64_t micro[3] = {1, 2, 4}, flight[3] = {1, 2, 2}, held[3] = {8704, 13312, 13312};
    for (int i = 0; i < 3; i++) {
        vc_result r = pp_estimate(four, 2, micro[i], 2, VC_PARALLEL_NONE);
        assert_int_equal(r.nranks, 2);
        assert_string_equal(r.ranks[0].kind, "first");
        assert_string_equal(r.ranks[1].kind, "last");
        assert_int_equal(r.ranks[0].in_flight, flight[i]);
        assert_int_equal(r.ranks[1].in_flight, 1);
        assert_int_equal(r.ranks[0].memory.weights, 8000512);
        assert_int_equal(r.ranks[1].memory.weights, 8000512);
        assert_int_equal(r.ranks[0].parameters, 2000000);
        /* held at the end of forward: the input batch, h1 and the sent output's 512 B of each
         * micro-batch in flight; the last stage: h2 and h3 */
        assert_int_equal(r.ranks[0].memory.activations, held[i]);
        assert_int_equal(r.ranks[1].memory.activations, 8192);
        assert_int_equal(r.ranks[0].memory.peak_allocated, first[i]);
        assert_int_equal(r.ranks[1].memory.peak_allocated, last[i]);
        /* the figures reported are the busiest rank's (the larger total, then the larger peak) */
        const vc_rank_info *b = &r.ranks[r.ranks[1].memory.total > r.ranks[0].memory.total ||
                                         (r.ranks[1].memory.total == r.ranks[0].memory.total &&
                                          r.ranks[1].memory.peak_allocated > r.ranks[0].memory.peak_allocated)];
        assert_int_equal(r.memory.peak_allocated, b->memory.peak_allocated);
        assert_int_equal(r.parameters, 4000000); /* the whole model's count */
        vc_result_free(&r);
    }
}

/* The ranks of each kind, Megatron's order (pp outermost): with 8 GPUs and
 * pp 4 each stage has 2 data-parallel ranks; stage s is ranks 2s, 2s + 1.
 * In flight: 4, 3 (the busiest middle stage, 1), 1. */
static void test_pp_ranks(void **state)
{
    (void)state;
    char json[4096];
    snprintf(json, sizeof json, "{\"input\": [64], \"layers\": [{\"type\": \"Sequential\", \"repeat\": 8, \"layers\": "
             "[{\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 64}]}]}");
    vc_result r = pp_estimate(json, 4, 0, 8, VC_PARALLEL_DDP);
    assert_int_equal(r.nranks, 3);
    const char *kinds[3] = {"first", "middle", "last"};
    const int64_t s0[3] = {0, 1, 3}, s1[3] = {0, 2, 3}, r0[3] = {0, 2, 6}, r1[3] = {1, 5, 7}, fl[3] = {4, 3, 1};
    for (int k = 0; k < 3; k++) {
        assert_string_equal(r.ranks[k].kind, kinds[k]);
        assert_int_equal(r.ranks[k].stage_first, s0[k]);
        assert_int_equal(r.ranks[k].stage_last, s1[k]);
        assert_int_equal(r.ranks[k].rank_first, r0[k]);
        assert_int_equal(r.ranks[k].rank_last, r1[k]);
        assert_int_equal(r.ranks[k].in_flight, fl[k]);
        assert_int_equal(r.ranks[k].layers, 2);
        assert_int_equal(r.ranks[k].parameters, 2 * (64 * 64 + 64));
    }
    assert_int_equal(r.ranks[1].stage, 1);
    vc_result_free(&r);
}

/* The split (get_num_layers_to_build): even when pp divides the layers
 * (80 / 8 = 10); otherwise ceil(L / pp) on each middle stage and the rest
 * halved over the first and last, Megatron's num_layers_in_first/last_
 * pipeline_stage: 126 over 16 is 7 + 14 x 8 + 7 (Llama 3 405B's layout in
 * the Llama 3 paper, one layer fewer on the first and last stage); 10 over
 * 4 is 2 + 3 + 3 + 2. */
static void test_pp_split(void **state)
{
    (void)state;
    int64_t c[16];
    vc_error err;
    memset(&err, 0, sizeof err); /* vc_set_error keeps a first error: err starts clear */
    assert_int_equal(vc__pp_split(80, 8, c, &err), VC_OK);
    for (int r = 0; r < 8; r++) assert_int_equal(c[r], 10);
    assert_int_equal(vc__pp_split(126, 16, c, &err), VC_OK);
    assert_int_equal(c[0], 7);
    assert_int_equal(c[15], 7);
    for (int r = 1; r < 15; r++) assert_int_equal(c[r], 8);
    assert_int_equal(vc__pp_split(10, 4, c, &err), VC_OK);
    assert_int_equal(c[0], 2);
    assert_int_equal(c[1], 3);
    assert_int_equal(c[2], 3);
    assert_int_equal(c[3], 2);
    assert_int_equal(vc__pp_split(3, 4, c, &err), VC_ERR_USAGE); /* more stages than layers */
    assert_string_equal(err.path, "--pp");
    memset(&err, 0, sizeof err);
    assert_int_equal(vc__pp_split(5, 4, c, &err), VC_ERR_USAGE); /* 2 on each middle stage leaves 1 for both ends */
    assert_string_equal(err.path, "--pp");
}

/* GPT-2 small with tied embeddings (examples/gpt2_small.json; counts from
 * its config: wte 50,257 x 768 = 38,597,376, wpe 786,432, a block 7,087,872,
 * ln_f 1,536): --pp 4 puts 3 blocks on each stage, the embeddings on the
 * first, ln_f and the head on the last, which keeps its own copy of the tied
 * word embedding (LanguageModule.setup_embeddings_and_output_layer). */
static void test_pp_tied(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file(VC_EXAMPLES "/gpt2_small.json", &m, &err)) fail_msg("load: %s", err.msg);
    vc_options o = opts(VC_PARALLEL_NONE, 4, VC_OPTIM_ADAM);
    o.pp = 4;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate: %s", err.msg);
    assert_int_equal(r.nranks, 3);
    assert_int_equal(r.ranks[0].parameters, 38597376 + 786432 + 3 * 7087872);
    assert_int_equal(r.ranks[1].parameters, 3 * 7087872);
    assert_int_equal(r.ranks[2].parameters, 3 * 7087872 + 1536 + 38597376);
    assert_int_equal(r.parameters, 124439808);
    vc_result_free(&r);
    vc_model_free(m);
}

/* Impossible layouts: exit 2 naming the option (the CLI's message is err.msg). */
static void test_pp_refused(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(four, strlen(four), "four.json", &m, &err)) fail_msg("load failed: %s", err.msg);
    struct {
        int64_t pp, micro, gpus;
        vc_parallel par;
        vc_mode mode;
        const char *opt;
    } cases[] = {
        {1, 4, 1, VC_PARALLEL_NONE, VC_MODE_TRAIN, "--micro-batches"}, /* micro-batches without a pipeline */
        {2, 0, 3, VC_PARALLEL_NONE, VC_MODE_TRAIN, "--gpus"},          /* 3 GPUs, 2 stages */
        {8, 0, 8, VC_PARALLEL_NONE, VC_MODE_TRAIN, "--pp"},            /* 8 stages, 4 layers */
        {2, 0, 2, VC_PARALLEL_NONE, VC_MODE_INFER, "--pp"},            /* training only */
        {2, 0, 4, VC_PARALLEL_ZERO2, VC_MODE_TRAIN, "--parallel"},     /* DeepSpeed's pipeline refuses ZeRO-2 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        vc_options o = opts(cases[i].par, cases[i].gpus, VC_OPTIM_SGD);
        o.pp = cases[i].pp;
        o.micro_batches = cases[i].micro;
        o.mode = cases[i].mode;
        vc_result r;
        memset(&err, 0, sizeof err);
        assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
        assert_string_equal(err.path, cases[i].opt);
    }
    /* the counts-only calculator has no layers to split */
    vc_options o = opts(VC_PARALLEL_NONE, 2, VC_OPTIM_SGD);
    o.pp = 2;
    vc_result r;
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_estimate_counts(1000, 10, &o, &r, &err), VC_ERR_USAGE);
    assert_string_equal(err.path, "--pp");
    vc_model_free(m);
}

/* --max-batch answers per GPU: the largest micro-batch at which every stage
 * fits, so the busiest stage's total at it fits and one more does not. */
/* --tp with --pp: the stages of a config split for tensor parallelism keep the
 * split (src/pipeline.c hf_part; hf_tp.c vc__tp_check). Llama-3.1-405B
 * (126 layers) at tp 8 and pp 16 on 1,024 GPUs: the stages hold 7, 14 x 8
 * and 7 layers (test_pp_split), each of a tensor-parallel rank's width, so the
 * ranks' parameters add up to the tp-8 rank's whole model. */
static void test_tp_pp(void **state)
{
    (void)state;
    vc_status st;
    vc_error err;
    vc_model *m = load_tp(VC_TEST_DATA "/hf/llama-3.1-405b.json", 1024, 8, 1, &st, &err);
    assert_non_null(m);
    vc_options o = opts(VC_PARALLEL_DDP, 1024, VC_OPTIM_ADAM);
    o.precision = VC_PREC_BF16;
    o.tp = 8;
    o.sp = 1;
    o.pp = 16;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate: %s", err.msg);
    assert_int_equal(r.nranks, 3);
    assert_int_equal(r.ranks[0].layers, 7);
    assert_int_equal(r.ranks[1].layers, 8);
    assert_int_equal(r.ranks[2].layers, 7);
    /* first + 14 middle stages + last: every parameter of the rank's shard once, but the
     * last stage's own copy of nothing (Llama's embedding and head are untied) */
    assert_int_equal(r.ranks[0].parameters + 14 * r.ranks[1].parameters + r.ranks[2].parameters, vc_model_parameters(m));
    vc_result_free(&r);
    vc_model_free(m);
}

static void test_pp_max_batch(void **state)
{
    (void)state;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file(VC_EXAMPLES "/gpt2_small.json", &m, &err)) fail_msg("load: %s", err.msg);
    vc_options o = opts(VC_PARALLEL_NONE, 4, VC_OPTIM_ADAM);
    o.pp = 4;
    vc_estimator *e = NULL;
    assert_int_equal(vc_estimator_new(m, &o, VC_EST_NO_LAYERS, &e, &err), VC_OK);
    const int64_t cap = INT64_C(8) << 30;
    int64_t n = 0, t0 = 0, t1 = 0;
    assert_int_equal(vc_estimator_max_batch(e, cap, &n, NULL, &err), VC_OK);
    assert_true(n > 0);
    assert_int_equal(vc_estimator_total(e, n, &t0, &err), VC_OK);
    assert_int_equal(vc_estimator_total(e, n + 1, &t1, &err), VC_OK);
    assert_true(t0 <= cap && t1 > cap);
    vc_result r;
    o.batch = n + 1;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_OK);
    assert_int_equal(r.memory.total, t1); /* the estimator's total is the busiest stage's */
    vc_result_free(&r);
    vc_estimator_free(e);
    vc_model_free(m);
}

/* ---- zero3: DeepSpeed ZeRO stage 3 (src/layout_zero3.c), derived from its
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

static count_t count_off(vc_offload off, const char *cat, int64_t bytes)
{
    vc_model *m = load();
    vc_options o = opts(VC_PARALLEL_ZERO3, 4, VC_OPTIM_ADAM);
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
    count_t back = count_off(VC_OFFLOAD_OPTIMIZER, "temp", 999424);
    assert_int_equal(back.allocs[1], 2);
    assert_int_equal(back.allocs[0], 0);
    count_t norm = count_off(VC_OFFLOAD_OPTIMIZER, "temp", 1998336);
    assert_int_equal(norm.allocs[1], 2);
    assert_int_equal(norm.allocs[2], 0);
    count_t none = count_off(VC_OFFLOAD_NONE, "temp", 1998336);
    assert_int_equal(none.allocs[2], 2); /* without offload: get_grad_norm_direct's copies in the step */
    count_t fwd = count_off(VC_OFFLOAD_PARAMS, "temp", 999424);
    assert_int_equal(fwd.allocs[0], 2);
    count_t pers = count_off(VC_OFFLOAD_PARAMS, "temp", 1024);
    assert_int_equal(pers.allocs[2], 2);
}

/* --offload a layout cannot do: exit 2 naming --offload (layout.c
 * offload_refusal): ZeRO-2 has no offload_param, FSDP1 no optimizer-only
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
        assert_string_equal(err.path, "--offload");
        assert_non_null(strstr(err.msg, cases[i].why));
    }
    vc_model_free(m);
}

/* ---- offload beyond ZeRO-3 (src/layout.c): ZeRO-2's offload_optimizer and
 * FSDP1's CPUOffload(offload_params=True) on the two Linears at world size 4,
 * fp32, Adam (sizes in 512-byte blocks as above). */

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

/* ---- fsdp2: PyTorch FSDP2 (fully_shard; src/layout_fsdp2.c, docs/parallel.md
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

/* What fsdp2 refuses (exit 2 naming the option): --pp, --offload (not
 * modelled), --mode generate, the policy without fsdp2 or over autocast. */
static void test_fsdp2_refused(void **state)
{
    (void)state;
    vc_model *m = load();
    static const struct { int what; const char *path, *why; } cases[] = {
        {0, "--parallel", "with --pp is not modelled"},
        {1, "--offload", "CPUOffloadPolicy is not modelled"},
        {2, "--parallel", "modelled for --mode train and infer"},
        {3, "--fsdp-param-dtype", "give --parallel fsdp2"},
        {4, "--fsdp-param-dtype", "not amp-bf16"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        vc_options o = opts(VC_PARALLEL_FSDP2, 4, VC_OPTIM_ADAM);
        if (cases[i].what == 0) o.pp = 2, o.gpus = 8;
        if (cases[i].what == 1) o.offload = VC_OFFLOAD_PARAMS;
        if (cases[i].what == 2) o.mode = VC_MODE_GENERATE;
        if (cases[i].what >= 3) o.fsdp_param_dtype = VC_FSDP_DTYPE_BF16;
        if (cases[i].what == 3) o.parallel = VC_PARALLEL_FSDP;
        if (cases[i].what == 4) o.precision = VC_PREC_AMP_BF16;
        vc_error err = {0};
        vc_result r;
        assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
        assert_string_equal(err.path, cases[i].path);
        assert_non_null(strstr(err.msg, cases[i].why));
    }
    vc_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fsdp_resident),
        cmocka_unit_test(test_fsdp_full_shard_timeline),
        cmocka_unit_test(test_fsdp_shard_grad_op),
        cmocka_unit_test(test_fsdp_padding),
        cmocka_unit_test(test_fsdp_hybrid),
        cmocka_unit_test(test_fsdp_mixed_unit),
        cmocka_unit_test(test_zero2_fp32),
        cmocka_unit_test(test_zero2_bf16),
        cmocka_unit_test(test_tp_params_llama70b),
        cmocka_unit_test(test_tp_korthikanti),
        cmocka_unit_test(test_tp_vocab_parallel_loss),
        cmocka_unit_test(test_tp_errors),
        cmocka_unit_test(test_tp_max_seq),
        cmocka_unit_test(test_pp_stage_timeline),
        cmocka_unit_test(test_pp_ranks),
        cmocka_unit_test(test_pp_split),
        cmocka_unit_test(test_pp_tied),
        cmocka_unit_test(test_pp_refused),
        cmocka_unit_test(test_pp_max_batch),
        cmocka_unit_test(test_tp_pp),
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
