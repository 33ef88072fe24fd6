/*
 * test_policy.c — the optimizer, precision and parallel-layout tables
 * (src/policy/policy.h): each row as the engine runs it, on models small enough to
 * derive every byte by hand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "cli_spelt.h"
#include "plan.h"
#include "util.h"

#define MIB (INT64_C(1) << 20)

/* One bias-free Linear(1024 -> 1024): a 4 MiB weight, a 4 KiB input. */
static const char *const square =
    "{\"input\": [1024], \"layers\": [{\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 1024, \"bias\": false}]}";

static vc_status run_optim(const char *json, vc_optim optim, vc_optim_impl impl, vc_result *r, vc_error *err)
{
    vc_model *m = NULL;
    if (vc_model_load_string(json, strlen(json), "test.json", &m, err)) fail_msg("load failed: %s", err->msg);
    vc_options o;
    vc_options_init(&o);
    o.optim = optim;
    o.optim_impl = impl;
    o.workspace = 0;
    vc_status st = vc_estimate(m, &o, r, err);
    vc_model_free(m);
    return st;
}

/* Every optimizer has a name that reads back, and a summary. */
static void test_optim_names(void **state)
{
    (void)state;
    for (int i = 0; i < VC_OPTIM__N; i++) {
        assert_int_equal(vc_optim_from_name(vc_optim_name((vc_optim)i)), i);
        assert_string_not_equal(vc_optim_summary((vc_optim)i), "?");
    }
    assert_int_equal(vc_optim_from_name("lion"), VC_OPTIM_LION);
    assert_int_equal(vc_optim_from_name("Lion"), -1);
    assert_string_equal(vc_optim_name(VC_OPTIM__N), "?");
}

/* Every parallel layout's name reads back; PyTorch's ShardingStrategy names
 * (torch/distributed/fsdp/api.py) and hsdp are aliases, in any case, '_' or '-'. */
static void test_parallel_names(void **state)
{
    (void)state;
    for (int i = 0; i < VC_PARALLEL__N; i++) assert_int_equal(vc_parallel_from_name(vc_parallel_name((vc_parallel)i)), i);
    assert_int_equal(vc_parallel_from_name("FULL_SHARD"), VC_PARALLEL_FSDP);
    assert_int_equal(vc_parallel_from_name("SHARD_GRAD_OP"), VC_PARALLEL_FSDP_GRAD_OP);
    assert_int_equal(vc_parallel_from_name("HYBRID_SHARD"), VC_PARALLEL_FSDP_HYBRID);
    assert_int_equal(vc_parallel_from_name("hsdp"), VC_PARALLEL_FSDP_HYBRID);
    assert_int_equal(vc_parallel_from_name("zero1_torch"), VC_PARALLEL_ZERO1_TORCH);
    assert_int_equal(vc_parallel_from_name("_HYBRID_SHARD_ZERO2"), -1); /* not modelled */
    assert_int_equal(vc_parallel_from_name("fsdp-but-much-longer-than-any-name"), -1);
    assert_int_equal(vc_parallel_from_name(NULL), -1);
}

/* The layout registry (src/parallel/layout.c): every vc_parallel has exactly one descriptor,
 * and the capability bits agree with the hooks they stand for. */
static void test_layout_registry(void **state)
{
    (void)state;
    for (int i = 0; i < VC_PARALLEL__N; i++) {
        const vc_layout_desc *d = vc__layout_desc((vc_parallel)i);
        assert_non_null(d);
        assert_int_equal(d->id, i);
        assert_null(d->views[0][0]); /* no setting given: the layout's own hooks */
        assert_int_equal(d->views[1][0] != NULL, (d->caps & VC_LAYOUT_GRAD_VIEW) != 0);
        assert_int_equal(d->views[0][1] != NULL, (d->caps & VC_LAYOUT_PARAM_VIEW) != 0);
        assert_int_equal(d->mp_class != NULL, (d->caps & (VC_LAYOUT_FSDP1_OPTIONS | VC_LAYOUT_FSDP2_OPTIONS)) != 0);
        assert_false(d->offload & (1u << VC_OFFLOAD_NONE));
        assert_true(d->interleaved_why == NULL || (d->caps & VC_LAYOUT_PP));
    }
    assert_null(vc__layout_desc(VC_PARALLEL__N));
    /* the lists the refusals print, as the messages named them before the descriptors
     * (options.c, layout.c and layout_fsdp2.c at f088d1c) */
    char buf[128];
    assert_string_equal(vc__layout_names(VC_LAYOUT_PP, " and ", buf, sizeof buf), "ddp, zero1, zero1-torch, megatron and megatron-dist");
    assert_string_equal(vc__layout_names(VC_LAYOUT_EP, " and ", buf, sizeof buf), "ddp, megatron and megatron-dist");
    assert_string_equal(vc__layout_names(VC_LAYOUT_ZERO_CONFIG, " or ", buf, sizeof buf), "zero1, zero2 or zero3");
    assert_string_equal(vc__layout_names(VC_LAYOUT_GRAD_VIEW, " or ", buf, sizeof buf), "ddp or zero1-torch");
    assert_string_equal(vc__layout_names(VC_LAYOUT_PARAM_VIEW, " or ", buf, sizeof buf), "zero1-torch");
    assert_string_equal(vc__layout_names(VC_LAYOUT_FSDP1_OPTIONS, ", ", buf, sizeof buf), "fsdp, shard-grad-op, hybrid");
    assert_string_equal(vc__layout_names(VC_LAYOUT_PP | VC_LAYOUT_EP, " and ", buf, sizeof buf), "ddp, megatron and megatron-dist");
    assert_string_equal(vc__layout_names(VC_LAYOUT_PP | VC_LAYOUT_ZERO_CONFIG, " and ", buf, sizeof buf), "zero1");
    assert_string_equal(vc__layout_names(VC_LAYOUT_FSDP2_OPTIONS | VC_LAYOUT_PP, " and ", buf, sizeof buf), "");
    assert_string_equal(vc__layout_names(VC_LAYOUT_PP, " and ", buf, 8), "ddp, ze"); /* truncated, terminated */
    assert_string_equal(vc_parallel_mixed_precision(VC_PARALLEL_FSDP2), "MixedPrecisionPolicy"); /* fully_shard's class */
    assert_string_equal(vc_parallel_mixed_precision(VC_PARALLEL_FSDP_HYBRID), "MixedPrecision"); /* FSDP1's */
    assert_string_equal(vc_parallel_mixed_precision(VC_PARALLEL_DDP), "?");
    /* the hooks by options: a setting's own row, else the layout's */
    vc_options o;
    vc_options_init(&o);
    o.parallel = VC_PARALLEL_ZERO1_TORCH;
    assert_ptr_equal(vc_layout_row_get(&o), &vc__layout_desc(VC_PARALLEL_ZERO1_TORCH)->hooks);
    o.gradient_as_bucket_view = 1;
    assert_ptr_equal(vc_layout_row_get(&o), vc__layout_desc(VC_PARALLEL_ZERO1_TORCH)->views[1][0]);
    assert_true(vc_layout_row_get(&o)->grad_views);
    /* the descriptors' refusals come where the ladders' came (f088d1c's order): hybrid's whole
     * nodes before --offload's, fsdp2's generate before the --fsdp-* options' */
    vc_error err;
    vc_options_init(&o);
    o.parallel = VC_PARALLEL_FSDP_HYBRID;
    o.gpus = 12;
    o.offload = VC_OFFLOAD_OPTIMIZER; /* refused for FSDP1 too */
    vc_error_clear(&err);
    assert_int_equal(vc__check_options(&o, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--gpus");
    assert_string_equal(CLI_MSG(&err), "hybrid shards within 8-GPU nodes: 12 GPUs is not a whole number of nodes");
    o.gpus = 16; /* two nodes */
    o.offload = VC_OFFLOAD_PARAMS;
    vc_error_clear(&err);
    assert_int_equal(vc__check_options(&o, &err), VC_OK);
    vc_options_init(&o);
    o.parallel = VC_PARALLEL_FSDP2;
    o.gpus = 8;
    o.mode = VC_MODE_GENERATE;
    o.fsdp_replicate = 3; /* does not divide 8 either */
    vc_error_clear(&err);
    assert_int_equal(vc__check_options(&o, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--parallel");
    assert_string_equal(CLI_MSG(&err), "fsdp2 is modelled for --mode train and infer");
    vc_options_init(&o);
    o.parallel = VC_PARALLEL_MEGATRON;
    o.gpus = 8;
    o.fsdp_replicate = 2; /* fp32 is refused by megatron's own check, which comes after */
    vc_error_clear(&err);
    assert_int_equal(vc__check_options(&o, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--fsdp-replicate");
}

/* The quant-format rows (src/policy/quant.c): the --weights names and defaults, the settings
 * each takes, the compute precision. Sources: GPTQConfig bits 2/3/4/8 and group_size 128,
 * AwqConfig w_bit 4, bitsandbytes quantize_4bit's blocksizes 32..4096 (powers of two),
 * Params4bit blocksize 64. */
static vc_status qcheck(const vc_quant *q, vc_error *err)
{
    vc_error_clear(err);
    return vc__quant_settings_check(q, err);
}

/* Every spelling of vramcalc.h's VC_WEIGHTS_SPELLING_MAP (what --weights
 * accepts, and so the option table's choices) names its format and passes
 * the row's own checks (its bits among the row's widths), and every format
 * has a spelling: the list and the rows cannot drift apart. */
static void test_quant_spellings(void **state)
{
    (void)state;
#define SPELLING(e, n) {VC_WEIGHTS_##e, n},
    static const struct {
        vc_weights format;
        const char *name;
    } sp[] = {VC_WEIGHTS_SPELLING_MAP(SPELLING)};
#undef SPELLING
    bool seen[VC_WEIGHTS__N] = {false};
    for (size_t i = 0; i < sizeof sp / sizeof *sp; i++) {
        vc_quant q;
        vc_error err;
        assert_int_equal(vc_quant_from_name(sp[i].name, &q), 0);
        assert_int_equal(q.format, sp[i].format);
        assert_int_equal(qcheck(&q, &err), VC_OK);
        seen[sp[i].format] = true;
    }
    for (int w = 0; w < VC_WEIGHTS__N; w++) assert_true(seen[w]);
}

static void test_quant_rows(void **state)
{
    (void)state;
    vc_quant q;
    vc_error err;
    assert_int_equal(vc_quant_from_name("gptq3", &q), 0);
    assert_int_equal(q.format, VC_WEIGHTS_GPTQ);
    assert_int_equal(q.bits, 3);
    assert_int_equal(q.group, 128);
    assert_int_equal(vc_quant_compute_precision(&q), VC_PREC_FP16);
    assert_int_equal(vc_quant_from_name("gptq5", &q), -1);
    assert_int_equal(vc_quant_from_name("gptq", &q), -1);
    assert_int_equal(vc_quant_from_name("gptq44", &q), -1);
    assert_int_equal(vc_quant_from_name("awq4", &q), 0);
    assert_int_equal(vc_quant_compute_precision(&q), VC_PREC_FP16);
    assert_int_equal(vc_quant_from_name("awq8", &q), -1);
    assert_int_equal(vc_quant_from_name("nf4", &q), 0);
    assert_int_equal(q.group, 64);
    assert_int_equal(q.double_quant, 1);
    assert_int_equal(vc_quant_compute_precision(&q), VC_PREC_BF16);
    assert_int_equal(qcheck(&q, &err), VC_OK);
    q.group = 4096;
    assert_int_equal(qcheck(&q, &err), VC_OK);
    q.group = 8192;
    assert_int_equal(qcheck(&q, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_MSG(&err), "nf4: group/block size 8192 is not supported");
    q.group = 96;
    assert_int_equal(qcheck(&q, &err), VC_ERR_USAGE);
    q.group = 16;
    assert_int_equal(qcheck(&q, &err), VC_ERR_USAGE);
    assert_int_equal(vc_quant_from_name("gptq8", &q), 0);
    q.bits = 5;
    assert_int_equal(qcheck(&q, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_MSG(&err), "gptq: 5 bits is not a supported width");
    q.bits = 8;
    q.group = -1; /* one group per input row */
    assert_int_equal(qcheck(&q, &err), VC_OK);
    q.group = 0;
    assert_int_equal(qcheck(&q, &err), VC_ERR_USAGE);
    assert_int_equal(vc_quant_from_name("fp8-block", &q), 0);
    assert_int_equal(q.block[0], 128);
    assert_int_equal(q.block[1], 128);
    char d[64];
    vc_quant_describe(&q, d, sizeof d);
    assert_string_equal(d, "fp8-block (128x128)");
    q.block[1] = 0;
    assert_int_equal(qcheck(&q, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_MSG(&err), "fp8-block: the block sizes must be positive");
    assert_int_equal(vc_quant_from_name("fp8", &q), 0);
    assert_int_equal(q.block[0], 0);
    assert_int_equal(vc_quant_compute_precision(&q), VC_PREC_BF16);
    assert_int_equal(vc_quant_from_name("dense", &q), 0);
    assert_int_equal(vc_quant_compute_precision(&q), VC_PREC_FP32); /* vc_options_init's default */
    q.format = VC_WEIGHTS__N;
    assert_int_equal(qcheck(&q, &err), VC_ERR_USAGE);
    for (int w = 0; w < VC_WEIGHTS__N; w++) { /* every row's name reads back, with the first of its bits */
        const vc_weight_row *r = vc_weight_row_get((vc_weights)w);
        char name[32];
        int b = 0;
        while (r->bits && !(r->bits & (1u << b))) b++;
        snprintf(name, sizeof name, r->bits ? "%s%d" : "%s", r->name, b);
        assert_int_equal(vc_quant_from_name(name, &q), 0);
        assert_int_equal(q.format, w);
        assert_int_equal(qcheck(&q, &err), VC_OK);
        assert_true(r->method == NULL || r->from_config != NULL);
    }
}

/* cuBLAS's workspaces (aten/src/ATen/cuda/CublasHandlePool.cpp @ 26a39059, src/engine/state.c
 * workspaces) on an sm90 card: one handle's getChosenWorkspaceSize, 4096 x 8 KiB = 32 MiB;
 * a biased Linear runs addmm through cuBLASLt, whose own workspace is
 * min(CUBLASLT_WORKSPACE_SIZE 1024 KiB, 32 MiB) = 1 MiB; training adds the autograd device
 * thread's handle, another 32 MiB, and a checkpointed region re-runs its biased Linear
 * there, another 1 MiB. The totals are what the H200 run measured (docs/accuracy.md). */
static int64_t workspace_at(const char *json, vc_mode mode, int64_t ws, int torch)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(json, strlen(json), "test.json", &m, &err)) fail_msg("load failed: %s", err.msg);
    vc_options o;
    vc_options_init(&o);
    o.mode = mode;
    o.hopper = 1;
    o.workspace = ws;
    o.torch_version = torch;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    int64_t w = r.memory.workspace;
    vc_result_free(&r);
    vc_model_free(m);
    return w;
}

/* 26a39059's behaviour (torch 2.11, the H200 run's): ATen's retained workspaces */
static int64_t workspace_of(const char *json, vc_mode mode, int64_t ws) { return workspace_at(json, mode, ws, 211); }

static void test_cublas_workspaces(void **state)
{
    (void)state;
    static const char *const biased =
        "{\"input\": [1024], \"layers\": [{\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 1024}]}";
    static const char *const ckpt =
        "{\"input\": [1024], \"layers\": [{\"type\": \"Sequential\", \"checkpoint\": true, \"layers\": ["
        "{\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 1024}, {\"type\": \"ReLU\"}]}]}";
    assert_int_equal(workspace_of(square, VC_MODE_INFER, -1), 32 * MIB);            /* mm: cuBLAS only */
    assert_int_equal(workspace_of(square, VC_MODE_TRAIN, -1), 64 * MIB);            /* + the backward thread's */
    assert_int_equal(workspace_of(biased, VC_MODE_INFER, -1), 33 * MIB);            /* + cuBLASLt's */
    assert_int_equal(workspace_of(biased, VC_MODE_TRAIN, -1), 65 * MIB);
    assert_int_equal(workspace_of(ckpt, VC_MODE_TRAIN, -1), 66 * MIB);              /* + the re-run's cuBLASLt */
    assert_int_equal(workspace_of(biased, VC_MODE_TRAIN, 512 * 1024), 3 * 512 * 1024); /* Lt capped at the cuBLAS size */
    assert_int_equal(workspace_of(biased, VC_MODE_TRAIN, 0), 0);                    /* --workspace 0: none */
    /* torch 2.15 (src/policy/release.c VC_REL_CUBLAS_WS_RETAINED): the handle's workspace is
     * cuBLAS's own, outside the caching allocator; the cuBLASLt workspaces stay */
    assert_int_equal(workspace_at(square, VC_MODE_TRAIN, -1, 215), 0);
    assert_int_equal(workspace_at(biased, VC_MODE_TRAIN, -1, 215), 1 * MIB);
    assert_int_equal(workspace_at(ckpt, VC_MODE_TRAIN, -1, 215), 2 * MIB);
}

/* Lion, forloop (lion_pytorch.py update_fn): at the step the weight W, its
 * gradient G and exp_avg S are live (4 MiB each), and the update makes
 * exp_avg.clone() (4 MiB) and, while it is alive, .add(grad) (4 MiB): the
 * peak is 5 x 4 MiB plus the 4 KiB input batch; the state is one 4 MiB
 * tensor. Backward holds only W, S, G and small tensors. */
static void test_lion_forloop(void **state)
{
    (void)state;
    vc_result r;
    vc_error err;
    assert_int_equal(run_optim(square, VC_OPTIM_LION, VC_IMPL_FORLOOP, &r, &err), VC_OK);
    assert_int_equal(r.memory.optimizer_states, 4 * MIB);
    assert_int_equal(r.memory.peak_allocated, 5 * 4 * MIB + 4096);
    assert_int_equal(r.peak.phase, VC_PHASE_OPTIMIZER);
    assert_int_equal(r.peak.temporaries, 2 * 4 * MIB);
    vc_result_free(&r);
}

/* Lion, foreach (foreach.py Lion.step): `updates = [t.clone() ...]`, then
 * in-place _foreach_ ops: one 4 MiB temporary, the peak 4 x 4 MiB + 4 KiB. */
static void test_lion_foreach(void **state)
{
    (void)state;
    vc_result r;
    vc_error err;
    assert_int_equal(run_optim(square, VC_OPTIM_LION, VC_IMPL_FOREACH, &r, &err), VC_OK);
    assert_int_equal(r.memory.peak_allocated, 4 * 4 * MIB + 4096);
    assert_int_equal(r.peak.temporaries, 4 * MIB);
    vc_result_free(&r);
}

/* lion-pytorch has no fused kernel: the option is refused, naming it. */
static void test_lion_fused_refused(void **state)
{
    (void)state;
    vc_result r;
    vc_error err;
    assert_int_equal(run_optim(square, VC_OPTIM_LION, VC_IMPL_FUSED, &r, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--optim-impl");
    assert_string_equal(CLI_MSG(&err), "lion has no fused implementation (it has foreach, forloop)");
}

/* Adam's row: exp_avg and exp_avg_sq per parameter (2 x 4 MiB here); fused
 * adds the device step, a float32 scalar per parameter (one 512-byte
 * block). foreach's sqrt(exp_avg_sq) temporary (4 MiB) makes the peak
 * W + G + 2 states + 1 = 5 x 4 MiB + the input. Fused allocates nothing at
 * the step, so its peak is in backward, as mm makes the weight's gradient:
 * W, 2 states, G (4 x 4 MiB), the input and the output's gradient (4 KiB
 * each), the step, the loss and its root gradient (512 B each). */
static void test_adam_row(void **state)
{
    (void)state;
    vc_result r;
    vc_error err;
    assert_int_equal(run_optim(square, VC_OPTIM_ADAM, VC_IMPL_FOREACH, &r, &err), VC_OK);
    assert_int_equal(r.memory.optimizer_states, 2 * 4 * MIB);
    assert_int_equal(r.memory.peak_allocated, 5 * 4 * MIB + 4096);
    vc_result_free(&r);
    assert_int_equal(run_optim(square, VC_OPTIM_ADAMW, VC_IMPL_FUSED, &r, &err), VC_OK);
    assert_int_equal(r.memory.optimizer_states, 2 * 4 * MIB + 512);
    assert_int_equal(r.memory.peak_allocated, 4 * 4 * MIB + 2 * 4096 + 3 * 512);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    vc_result_free(&r);
}

/* Seed 003's counts-only calculator takes its optimizer bytes from the same
 * rows: Adam 2 x 4 bytes per parameter, Lion and momentum 4, SGD none; in
 * mixed-bf16 the states are fp32 and the weights 2 bytes + a 4-byte master. */
static void test_counts_from_rows(void **state)
{
    (void)state;
    vc_options o;
    vc_options_init(&o);
    vc_result r;
    vc_error err;
    const struct { vc_optim optim; int64_t states; } cases[] = {
        {VC_OPTIM_ADAM, 8000}, {VC_OPTIM_LION, 4000}, {VC_OPTIM_MOMENTUM, 4000}, {VC_OPTIM_SGD, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        o.optim = cases[i].optim;
        assert_int_equal(vc_estimate_counts(1000, 0, &o, &r, &err), VC_OK);
        assert_int_equal(r.memory.optimizer_states, cases[i].states);
        vc_result_free(&r);
    }
    o.optim = VC_OPTIM_ADAM;
    o.precision = VC_PREC_MIXED_BF16;
    assert_int_equal(vc_estimate_counts(1000, 0, &o, &r, &err), VC_OK);
    assert_int_equal(r.memory.optimizer_states, 8000);
    assert_int_equal(r.memory.weights, 6000);
    assert_int_equal(r.memory.gradients, 2000);
    vc_result_free(&r);
}

/* bitsandbytes AdamW8bit (Optimizer2State.init_state at 06029dd): the
 * 1024 x 1024 weight keeps two uint8 states (1 MiB each) and two float32
 * absmax of 1,048,576 / 2048 = 512 blocks (2 KiB each); the bias, under
 * 4,096 elements, two float32 states (4 KiB each); the two 256-float
 * quantization maps (1 KiB each) once. No step temporaries: the peak is in
 * backward. */
static void test_adamw8bit_row(void **state)
{
    (void)state;
    static const char *const biased =
        "{\"input\": [1024], \"layers\": [{\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 1024}]}";
    vc_result r;
    vc_error err;
    assert_int_equal(run_optim(biased, VC_OPTIM_ADAMW8BIT, VC_IMPL_FOREACH, &r, &err), VC_OK);
    assert_int_equal(r.memory.optimizer_states, 2 * MIB + 2 * 2048 + 2 * 4096 + 2 * 1024);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    assert_int_equal(r.peak.temporaries, 4096 + 1024); /* the output's gradient, the loss and its root gradient */
    vc_result_free(&r);
    /* seed 003's calculator: the model as one tensor; 1,000 elements stay fp32 */
    vc_options o;
    vc_options_init(&o);
    o.optim = VC_OPTIM_ADAMW8BIT;
    assert_int_equal(vc_estimate_counts(1000, 0, &o, &r, &err), VC_OK);
    assert_int_equal(r.memory.optimizer_states, 8000);
    vc_result_free(&r);
    assert_int_equal(vc_estimate_counts(1048576, 0, &o, &r, &err), VC_OK);
    assert_int_equal(r.memory.optimizer_states, 2 * 1048576 + 2 * 512 * 4 + 2 * 256 * 4);
    vc_result_free(&r);
}

/* torch.optim.Adafactor (torch/optim/_adafactor.py, src/policy/optim.c) on
 * Linear(1024, 1024) + Linear(1024, 512, bias=False), fp32, batch 1:
 * W1 [1024, 1024] 4 MiB, b1 [1024] 4 KiB, W2 [512, 1024] 2 MiB.
 * State (_init_group): W1 row_var [1024, 1] and col_var [1, 1024], 4 KiB
 * each; b1 variance [1024] 4 KiB; W2 row_var [512, 1] 2 KiB, col_var
 * [1, 1024] 4 KiB: 18,432 B. Weights and gradients 6,295,552 B each, the
 * input batch 4 KiB: 12,613,632 B live through the step.
 * forloop (_single_tensor_adafactor, the default): W1 makes row_mean 4 KiB,
 * col_mean 4 KiB, var_estimate 4 MiB (= update); b1, while those are still
 * bound, grad_squared 4 KiB and var_estimate 4 KiB, before `update` is
 * rebound and W1's 4 MiB dropped: the peak is 4 MiB + 16 KiB of
 * temporaries, 16,824,320 B. (The 0-d norms, 512 B, come and go when fewer
 * are live.)
 * foreach (_multi_tensor_adafactor): the >= 2-D group's var_estimates for
 * W1 and W2 (6 MiB) are made together and stay bound as `updates` while the
 * 1-D group clones b1's variance (4 KiB): 6 MiB + 4 KiB of temporaries,
 * 18,909,184 B. The bench/accuracy harness's replica (optim2x.Adafactor2x)
 * of both implementations measures these models' optimizer peaks exactly
 * (docs/optimizers.md). */
static void test_adafactor_row(void **state)
{
    (void)state;
    static const char *const two =
        "{\"input\": [1024], \"layers\": [{\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 1024},"
        " {\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 512, \"bias\": false}]}";
    vc_result r;
    vc_error err;
    assert_int_equal(vc_optim_default_impl(VC_OPTIM_ADAFACTOR), VC_IMPL_FORLOOP); /* foreach=None */
    assert_int_equal(vc_optim_default_impl(VC_OPTIM_ADAM), VC_IMPL_FOREACH);
    assert_int_equal(run_optim(two, VC_OPTIM_ADAFACTOR, VC_IMPL_FORLOOP, &r, &err), VC_OK);
    assert_int_equal(r.memory.optimizer_states, 18432);
    assert_int_equal(r.peak.phase, VC_PHASE_OPTIMIZER);
    assert_int_equal(r.peak.temporaries, 4 * MIB + 16384);
    assert_int_equal(r.memory.peak_allocated, 12613632 + 4 * MIB + 16384);
    vc_result_free(&r);
    assert_int_equal(run_optim(two, VC_OPTIM_ADAFACTOR, VC_IMPL_FOREACH, &r, &err), VC_OK);
    assert_int_equal(r.memory.optimizer_states, 18432);
    assert_int_equal(r.peak.phase, VC_PHASE_OPTIMIZER);
    assert_int_equal(r.peak.temporaries, 6 * MIB + 4096);
    assert_int_equal(r.memory.peak_allocated, 12613632 + 6 * MIB + 4096);
    vc_result_free(&r);
    assert_int_equal(run_optim(two, VC_OPTIM_ADAFACTOR, VC_IMPL_FUSED, &r, &err), VC_ERR_USAGE); /* no fused */
    /* a 4-D weight factors over its last two dimensions: Conv2d(16, 32,
     * kernel_size=[3, 5]) weight [32, 16, 3, 5]: row_var [32, 16, 3, 1] 1,536
     * floats (6,144 B), col_var [32, 16, 1, 5] 2,560 floats (10,240 B); the
     * bias [32] variance 128 B, one 512-byte block: 16,896 B */
    static const char *const conv =
        "{\"input\": [16, 8, 8], \"layers\": [{\"type\": \"Conv2d\", \"in_channels\": 16, \"out_channels\": 32,"
        " \"kernel_size\": [3, 5]}]}";
    assert_int_equal(run_optim(conv, VC_OPTIM_ADAFACTOR, VC_IMPL_FORLOOP, &r, &err), VC_OK);
    assert_int_equal(r.memory.optimizer_states, 6144 + 10240 + 512);
    vc_result_free(&r);
}

/* bitsandbytes PagedAdamW8bit (Optimizer8bit.get_state_buffer at 06029dd:
 * is_paged and p.numel() >= 1e5 -> F.get_paged, cudaMallocManaged) on
 * Linear(1024, 1024) + Linear(1024, 64, bias=False):
 *   W1 [1024, 1024], 1,048,576 elements: state1, state2 uint8 paged,
 *      2 x 1,048,576 B outside the allocator; absmax1, absmax2 512 floats,
 *      2 x 2,048 B on the device; the two 256-float qmaps 2 x 1,024 B;
 *   b1 [1024], under 4,096 elements: two float32 states, 2 x 4,096 B;
 *   W2 [64, 1024], 65,536 elements (under 1e5: get_state_buffer's
 *      zeros_like): state1, state2 2 x 65,536 B, absmax 32 floats (128 B,
 *      one 512-byte block each).
 * In the allocator 4,096 + 2,048 + 8,192 + 131,072 + 1,024 = 146,432 B;
 * paged 2,097,152 B, in no allocator figure: AdamW8bit's peak less those
 * 2 MiB (the step makes no temporaries either way). */
static void test_paged_adamw8bit_row(void **state)
{
    (void)state;
    static const char *const three =
        "{\"input\": [1024], \"layers\": [{\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 1024},"
        " {\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 64, \"bias\": false}]}";
    vc_result r, plain;
    vc_error err;
    assert_int_equal(run_optim(three, VC_OPTIM_PAGED_ADAMW8BIT, VC_IMPL_FOREACH, &r, &err), VC_OK);
    assert_int_equal(run_optim(three, VC_OPTIM_ADAMW8BIT, VC_IMPL_FOREACH, &plain, &err), VC_OK);
    assert_int_equal(r.memory.optimizer_states, 146432);
    assert_int_equal(r.memory.optimizer_states_paged, 2 * 1048576);
    assert_int_equal(plain.memory.optimizer_states, 146432 + 2 * 1048576);
    assert_int_equal(plain.memory.optimizer_states_paged, 0);
    assert_int_equal(r.memory.peak_allocated, plain.memory.peak_allocated - 2 * 1048576);
    assert_int_equal(r.peak.optimizer_states, 146432);
    vc_result_free(&r);
    vc_result_free(&plain);
    /* PagedAdam8bit is the same class with Adam's update (adam.py) */
    assert_int_equal(run_optim(three, VC_OPTIM_PAGED_ADAM8BIT, VC_IMPL_FOREACH, &r, &err), VC_OK);
    assert_int_equal(r.memory.optimizer_states_paged, 2 * 1048576);
    vc_result_free(&r);
    /* seed 003's calculator: one tensor of 1,048,576 elements is paged; 1,000 stay fp32 on the device */
    vc_options o;
    vc_options_init(&o);
    o.optim = VC_OPTIM_PAGED_ADAMW8BIT;
    assert_int_equal(vc_estimate_counts(1048576, 0, &o, &r, &err), VC_OK);
    assert_int_equal(r.memory.optimizer_states, 2 * 512 * 4 + 2 * 256 * 4);
    assert_int_equal(r.memory.optimizer_states_paged, 2 * 1048576);
    vc_result_free(&r);
    assert_int_equal(vc_estimate_counts(1000, 0, &o, &r, &err), VC_OK);
    assert_int_equal(r.memory.optimizer_states, 8000);
    assert_int_equal(r.memory.optimizer_states_paged, 0);
    vc_result_free(&r);
}

/* ---- the parallel layouts */

static vc_result run_layout(const char *json, vc_parallel par, int64_t gpus, vc_optim optim)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(json, strlen(json), "test.json", &m, &err)) fail_msg("load failed: %s", err.msg);
    vc_options o;
    vc_options_init(&o);
    o.optim = optim;
    o.workspace = 0;
    o.parallel = par;
    o.gpus = gpus;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate failed: %s", err.msg);
    vc_model_free(m);
    return r;
}

/* DDP's gradient buckets (layout.c, reducer.cpp): the trainable parameters
 * in reverse order, the first bucket closed once it holds 1 MiB, the others
 * at 25 MiB, one flat tensor each in 512-byte blocks. Here, in reverse:
 * Linear(1000, 50) 200,000 B, then Linear(300, 1000) 1,200,000 B close the
 * first bucket at 1,400,000 B (1,400,320 in blocks); Linear(10, 300),
 * 12,000 B, is the second (12,288). Together 1,412,608; one bucket would
 * have been 1,412,096. The buckets are resident: gradients and the peak grow
 * by that much, whatever the world size (measured the same at world sizes
 * 1, 2 and 4: bench/accuracy/dist/results.json). */
static void test_ddp_buckets(void **state)
{
    (void)state;
    static const char *const three =
        "{\"input\": [10], \"layers\": ["
        "{\"type\": \"Linear\", \"in_features\": 10, \"out_features\": 300, \"bias\": false},"
        "{\"type\": \"Linear\", \"in_features\": 300, \"out_features\": 1000, \"bias\": false},"
        "{\"type\": \"Linear\", \"in_features\": 1000, \"out_features\": 50, \"bias\": false}]}";
    vc_result one = run_layout(three, VC_PARALLEL_NONE, 1, VC_OPTIM_SGD);
    const int64_t buckets = 1400320 + 12288;
    for (int64_t w = 1; w <= 4; w *= 2) {
        vc_result ddp = run_layout(three, VC_PARALLEL_DDP, w, VC_OPTIM_SGD);
        assert_int_equal(ddp.memory.gradients - one.memory.gradients, buckets);
        assert_int_equal(ddp.memory.peak_allocated - one.memory.peak_allocated, buckets);
        assert_int_equal(ddp.memory.weights, one.memory.weights);
        vc_result_free(&ddp);
    }
    /* ZeroRedundancyOptimizer (layout.c): greedy by size, largest first, to the
     * rank with the fewest elements: 300,000 to rank 0, then 50,000 and 3,000
     * to rank 1. The busiest rank, 0, keeps Adam's two states of the 300 x 1000
     * weight only (1,200,000 B, 1,200,128 in blocks, each); one GPU keeps
     * them for all three weights (12,288 + 1,200,128 + 200,192, twice). */
    vc_result adam = run_layout(three, VC_PARALLEL_NONE, 1, VC_OPTIM_ADAM);
    assert_int_equal(adam.memory.optimizer_states, 2 * (12288 + 1200128 + 200192));
    vc_result_free(&adam);
    for (int64_t w = 2; w <= 4; w *= 2) {
        vc_result z = run_layout(three, VC_PARALLEL_ZERO1_TORCH, w, VC_OPTIM_ADAM);
        assert_int_equal(z.memory.optimizer_states, 2 * 1200128);
        assert_int_equal(z.memory.gradients - one.memory.gradients, buckets); /* over DDP's buckets */
        vc_result_free(&z);
    }
    vc_result_free(&one);
    /* --gpus without a layout is refused */
    vc_model *m = NULL;
    vc_error err;
    assert_int_equal(vc_model_load_string(three, strlen(three), "t.json", &m, &err), VC_OK);
    vc_options o;
    vc_options_init(&o);
    o.gpus = 2;
    vc_result r;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--gpus");
    vc_model_free(m);
}

/* ---- the parallel layout's module hooks */

static char hook_log[256];
static int32_t gathered = -1;

/* A layout that holds a 1 MiB buffer while a layer runs (as FSDP holds a
 * unit's gathered parameters), and logs the calls: F/B/O for the phase,
 * +/- for begin/end, the instance (-1: the whole model, as a pass begins
 * and ends; it holds nothing then). */
static void gather_hook(vc_build *b, int inst, vc_phase phase, bool begin)
{
    size_t l = strlen(hook_log);
    snprintf(hook_log + l, sizeof hook_log - l, "%c%c%d ", phase == VC_PHASE_FORWARD ? 'F' : phase == VC_PHASE_BACKWARD ? 'B' : 'O',
             begin ? '+' : '-', inst);
    if (inst < 0) return;
    if (begin) gathered = vc__alloc(b, vc_n_fixed(MIB), VC_DT_U8, CAT_TEMP, inst);
    else vc__free(b, gathered, inst);
}

static int64_t layout_peak(const vc_layout_row *layout, vc_mode mode)
{
    static const char *const three =
        "{\"input\": [256], \"layers\": [{\"type\": \"Linear\", \"in_features\": 256, \"out_features\": 256, \"bias\": false,"
        " \"repeat\": 3}]}";
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(three, strlen(three), "test.json", &m, &err)) fail_msg("load failed: %s", err.msg);
    vc_options o;
    vc_options_init(&o);
    o.optim = VC_OPTIM_SGD;
    o.mode = mode;
    o.workspace = 0;
    vc_plan *p = NULL;
    hook_log[0] = 0;
    assert_int_equal(vc__plan_build_layout(m, &o, layout, &p, &err), VC_OK);
    vc_sim s;
    assert_int_equal(vc_plan_simulate(p, 1, &s, NULL, &err), VC_OK);
    vc_plan_free(p);
    vc_model_free(m);
    return s.peak;
}

/* The hooks run as each layer starts and ends, forward in order, backward in
 * reverse; inference has no backward. The peak of inference is inside a
 * layer, so the held buffer adds exactly 1 MiB to it. */
static void test_layout_hooks(void **state)
{
    (void)state;
    const vc_layout_row hooked = {.module = gather_hook};
    int64_t base = layout_peak(vc_layout_row_get(NULL), VC_MODE_INFER);
    assert_string_equal(hook_log, "");
    int64_t with = layout_peak(&hooked, VC_MODE_INFER);
    assert_string_equal(hook_log, "F+-1 F+0 F-0 F+1 F-1 F+2 F-2 F--1 ");
    assert_int_equal(with - base, MIB);
    layout_peak(&hooked, VC_MODE_TRAIN);
    assert_string_equal(hook_log, "F+-1 F+0 F-0 F+1 F-1 F+2 F-2 F--1 B+-1 B+2 B-2 B+1 B-1 B+0 B-0 B--1 O+-1 O--1 ");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_optim_names),     cmocka_unit_test(test_lion_forloop),
        cmocka_unit_test(test_lion_foreach),    cmocka_unit_test(test_lion_fused_refused),
        cmocka_unit_test(test_adam_row),        cmocka_unit_test(test_counts_from_rows),
        cmocka_unit_test(test_adamw8bit_row),   cmocka_unit_test(test_layout_hooks),
        cmocka_unit_test(test_ddp_buckets),     cmocka_unit_test(test_adafactor_row),
        cmocka_unit_test(test_paged_adamw8bit_row), cmocka_unit_test(test_parallel_names),
        cmocka_unit_test(test_cublas_workspaces), cmocka_unit_test(test_layout_registry),
        cmocka_unit_test(test_quant_rows),
        cmocka_unit_test(test_quant_spellings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
