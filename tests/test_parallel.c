/*
 * test_parallel.c — the FSDP rows of the parallel-layout table (src/layout.c:
 * fsdp = FULL_SHARD, shard-grad-op = SHARD_GRAD_OP) on a model small enough to
 * derive every byte by hand from FSDP's source (torch/distributed/fsdp/
 * _flat_param.py, _runtime_utils.py, PyTorch 2.x; docs/parallel.md 1.6), and
 * hybrid = HYBRID_SHARD; and DeepSpeed's ZeRO-2 (zero2, from
 * deepspeed/runtime/zero/stage_1_and_2.py).
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
