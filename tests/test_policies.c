/*
 * test_policies.c — activation and optimizer policies (issue 26 items 3 and 4):
 * --grad-ckpt-every N (every N-th decoder layer checkpointed, torchtune's selective
 * layer AC), --grad-ckpt-ops (vc_options.ckpt_ops: torchtitan's op-level selective
 * AC), --act-offload (vc_options.act_offload: torchtune's OffloadActivations), --optim-in-bwd (vc_options.optim_in_bwd: the optimizer stepped per
 * parameter inside backward, torchtune's optimizer_in_bwd) and --first-step
 * (vc_options.first_step: the optimizer state made lazily by the first step()).
 * Expected values: replica-measured (bench/accuracy/llm/measured.json, torch 1.13 CPU)
 * or worked out by hand from the sources cited beside each.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "vramcalc/vramcalc.h"
#include "cli_spelt.h"

/* Two bias-free 1024 x 1024 Linears on 16 rows. */
static const char *const model =
    "{\"input\": [16, 1024], \"layers\": ["
    "{\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 1024, \"bias\": false, \"name\": \"l1\"},"
    "{\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 1024, \"bias\": false, \"name\": \"l2\"}]}";

static vc_status run(vc_optim optim, int in_bwd, int first, int accumulate, vc_result *r, vc_error *err)
{
    vc_model *m = NULL;
    if (vc_model_load_string(model, strlen(model), "policies.json", &m, err)) fail_msg("load: %s", err->msg);
    vc_options o;
    vc_options_init(&o);
    assert_int_equal(o.optim_in_bwd, 0); /* the defaults: one step() after backward, the steady state */
    assert_int_equal(o.first_step, 0);
    o.optim = optim;
    o.workspace = 0;
    o.optim_in_bwd = in_bwd;
    o.first_step = first;
    o.accumulate = accumulate;
    vc_status st = vc_estimate(m, &o, r, err);
    vc_model_free(m);
    return st;
}

static vc_result est(vc_optim optim, int in_bwd, int first)
{
    vc_result r;
    vc_error err;
    if (run(optim, in_bwd, first, 1, &r, &err)) fail_msg("estimate: %s", err.msg);
    return r;
}

/* fp32 SGD (no state, foreach _foreach_add_ in place: no temporaries), the loss the
 * output's mean (the contract). l2's node runs first and makes l2.weight's gradient
 * (1024 x 1024 x 4 = 4,194,304 B) and its input's (16 x 1024 x 4 = 65,536), then l1's node
 * makes l1.weight's (the input needs no gradient). One step() after backward: the peak is
 * at l1's weight gradient, with weights 8,388,608 + input 65,536 + the loss and its root
 * gradient 512 + 512 + l2's input gradient 65,536 + both weight gradients 8,388,608 =
 * 16,909,312. In backward, from the post-accumulate-grad hook (torchtune/training/memory.py
 * register_optim_in_bwd_hooks @ bd2a0fc7: step(), zero_grad()): l2's gradient is stepped on
 * and freed before l1's is made, so the peak moves to l2's weight gradient: weights
 * 8,388,608 + input 65,536 + l1's output (l2's saved input) 65,536 + 512 + 512 + the mean's
 * gradient 65,536 + l2's input gradient 65,536 + 4,194,304 = 12,846,080: 4,063,232 lower. */
static void test_in_bwd_sgd(void **state)
{
    (void)state;
    vc_result a = est(VC_OPTIM_SGD, 0, 0), k = est(VC_OPTIM_SGD, 1, 0);
    assert_int_equal(a.peak.phase, VC_PHASE_BACKWARD);
    assert_int_equal(k.peak.phase, VC_PHASE_BACKWARD);
    assert_int_equal(a.peak.gradients, 8388608);
    assert_int_equal(k.peak.gradients, 4194304);
    assert_int_equal(a.memory.peak_allocated, 16909312);
    assert_int_equal(k.memory.peak_allocated, 12846080);
    vc_result_free(&a);
    vc_result_free(&k);
}

/* fp32 Adam, foreach (src/policy/optim.c's row): the states, exp_avg and exp_avg_sq per
 * weight, 4 x 4,194,304 = 16,777,216 B, are the same either way (optimizer_in_bwd keeps a
 * one-parameter Adam per weight). One step(): the peak is in the step, with both gradients
 * alive; in backward, at most one gradient is ever alive: 4,194,304 at the peak. */
static void test_in_bwd_adam(void **state)
{
    (void)state;
    vc_result a = est(VC_OPTIM_ADAM, 0, 0), k = est(VC_OPTIM_ADAM, 1, 0);
    assert_int_equal(a.peak.phase, VC_PHASE_OPTIMIZER);
    assert_int_equal(a.peak.gradients, 8388608);
    assert_int_equal(a.peak.optimizer_states, 16777216);
    assert_int_equal(k.peak.optimizer_states, 16777216);
    assert_true(k.peak.gradients <= 4194304);
    assert_true(k.memory.peak_allocated < a.memory.peak_allocated);
    vc_result_free(&a);
    vc_result_free(&k);
}

/* --first-step, fp32 Adam: the first step() makes the state (torch/optim/adam.py's lazy
 * state initialization, zeros_like per parameter before the update), after backward has
 * freed the activations; the second step is the steady one. The allocated peak over both
 * is the steady step's (the first step's forward and backward run without the 16 MiB of
 * state, its step with it, as the steady step's): equal. */
static void test_first_step(void **state)
{
    (void)state;
    vc_result a = est(VC_OPTIM_ADAM, 0, 0), f = est(VC_OPTIM_ADAM, 0, 1);
    assert_int_equal(f.memory.peak_allocated, a.memory.peak_allocated);
    assert_int_equal(f.peak.optimizer_states, 16777216);
    assert_true(f.memory.reserved >= f.memory.peak_allocated);
    /* the flag adds memory.first_step and leaves the steady figures as they are; here the peak
     * is in step() either way (the state made first, then the update's temporaries) */
    assert_int_equal(a.memory.first_step.computed, 0);
    assert_int_equal(f.memory.first_step.computed, 1);
    assert_int_equal(f.memory.reserved, a.memory.reserved);
    assert_int_equal(f.memory.total, a.memory.total);
    assert_int_equal(f.memory.first_step.peak_allocated, a.memory.peak_allocated);
    assert_true(f.memory.first_step.reserved >= f.memory.first_step.peak_allocated);
    vc_result_free(&a);
    vc_result_free(&f);
    /* with the step in backward too: the same peak as the steady in-backward one */
    a = est(VC_OPTIM_ADAM, 1, 0);
    f = est(VC_OPTIM_ADAM, 1, 1);
    assert_int_equal(f.memory.peak_allocated, a.memory.peak_allocated);
    vc_result_free(&a);
    vc_result_free(&f);
}

/* --first-step where the first step differs: SmolLM3-3B (tests/data/hf/smollm3-3b.json), bf16,
 * AdamW, 2,048 tokens. The steady step peaks in backward with the 11.5 GiB of state alive;
 * the first step's forward and backward run without it, so its peak is its step()'s, where the
 * state is made: the steady step's optimizer phase (weights, gradients, states and the
 * update's temporaries; no activations), the peak of the same step with --grad-ckpt, whose
 * steady peak is there. Its reserve over two steps is above the steady one: the state lands in
 * the blocks the first backward freed and the second forward needs segments of its own. */
static void test_first_step_differs(void **state)
{
    (void)state;
    vc_result r[3];
    for (int i = 0; i < 3; i++) {
        vc_hf_options hf;
        vc_hf_options_init(&hf);
        hf.seq = 2048;
        hf.checkpoint = i == 2;
        vc_options o;
        vc_options_init(&o);
        o.precision = VC_PREC_BF16;
        o.optim = VC_OPTIM_ADAMW;
        o.first_step = i == 1;
        vc_error err;
        vc_model *m = NULL;
        if (vc_model_load_file_hf(VC_TEST_DATA "/hf/smollm3-3b.json", &hf, &m, &err) || vc_estimate(m, &o, &r[i], &err))
            fail_msg("%s", err.msg);
        vc_model_free(m);
    }
    assert_int_equal(r[1].memory.peak_allocated, r[0].memory.peak_allocated);
    assert_int_equal(r[1].memory.reserved, r[0].memory.reserved);
    assert_int_equal(r[0].peak.phase, VC_PHASE_BACKWARD);
    assert_int_equal(r[2].peak.phase, VC_PHASE_OPTIMIZER);
    assert_int_equal(r[1].memory.first_step.peak_allocated, r[2].memory.peak_allocated);
    assert_true(r[1].memory.first_step.peak_allocated < r[1].memory.peak_allocated);
    assert_true(r[1].memory.first_step.reserved > r[1].memory.reserved);
    assert_int_equal(r[1].memory.first_step.total, r[1].memory.first_step.reserved + r[1].memory.cuda_context);
    for (int i = 0; i < 3; i++) vc_result_free(&r[i]);
}

/* Refused, naming the option: accumulation with the step in backward (torchtune's recipes
 * raise "Gradient accumulation is not supported with optimizer_in_bwd"), --optim none. */
static void test_refusals(void **state)
{
    (void)state;
    vc_result r;
    vc_error err;
    assert_int_equal(run(VC_OPTIM_ADAM, 1, 0, 2, &r, &err), VC_ERR_USAGE);
    assert_non_null(strstr(CLI_MSG(&err), "accumulation"));
    assert_int_equal(run(VC_OPTIM_NONE, 1, 0, 1, &r, &err), VC_ERR_USAGE);
    assert_int_equal(run(VC_OPTIM_NONE, 0, 1, 1, &r, &err), VC_ERR_USAGE);
}

/* The CLI's JSON peak_allocated for a command line, -1 on failure. */
static long long cli_peak(const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s -f json 2>&1", VC_CLI, args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, p);
    buf[n] = 0;
    pclose(p);
    const char *k = strstr(buf, "\"peak_allocated\": ");
    return k ? atoll(k + 18) : -1;
}

#define LLAMA VC_TEST_DATA "/../../bench/accuracy/llm/configs/llama_small.json"
#define SMALL " --seq 64 -b 2 -o adamw -p fp32 --attention math --workspace 0"

/* --grad-ckpt-every 2 on the replica's 2-layer llama (bench/accuracy/llm/configs/llama_small.json):
 * only layer 2 checkpointed (torchtune's checkpoint_wrapper: `_count % every_x_layer == 0`).
 * Measured on torch 1.13 CPU (measured.json llm200, measure_llm.py --ckpt --ckpt-every 2):
 * 3,714,560 B; the estimate 3,712,512 (-0.06%). Between no checkpointing and every layer's, and
 * --grad-ckpt-every 1 is --grad-ckpt; the option needs --grad-ckpt. */
static void test_every(void **state)
{
    (void)state;
    long long none = cli_peak(LLAMA SMALL), all = cli_peak(LLAMA SMALL " --grad-ckpt"),
              one = cli_peak(LLAMA SMALL " --grad-ckpt --grad-ckpt-every 1"),
              two = cli_peak(LLAMA SMALL " --grad-ckpt --grad-ckpt-every 2");
    assert_int_equal(two, 3712512);
    assert_true(llabs(two - 3714560) * 1000 < 3714560); /* within 0.1% of the measurement */
    assert_int_equal(one, all);
    assert_true(all < two && two < none);
    assert_int_equal(cli_peak(LLAMA SMALL " --grad-ckpt-every 2"), -1); /* refused */
}

/* --optim-in-bwd on the replica's llama (batch 1, 16 tokens, fp32 AdamW: the step holds the
 * peak). Measured on torch 1.13 CPU (measured.json llm206, measure_llm.py --optim-in-bwd: a post
 * hook on each parameter's AccumulateGrad node, the pre-2.1 form of
 * register_post_accumulate_grad_hook): 2,101,760 B; without it the same run measures 2,840,576
 * (peak in the step, aten::_foreach_sqrt). The estimate: 2,099,712 (-0.10%). */
static void test_in_bwd_measured(void **state)
{
    (void)state;
    const char *a = LLAMA " --seq 16 -b 1 -o adamw -p fp32 --attention math --workspace 0";
    char with[512];
    snprintf(with, sizeof with, "%s --optim-in-bwd", a);
    long long k = cli_peak(with), s = cli_peak(a);
    assert_int_equal(k, 2099712);
    assert_true(llabs(k - 2101760) * 1000 < 2101760 * 2); /* within 0.2% of the measurement */
    assert_true(llabs(s - 2840576) * 1000 < 2840576 * 2); /* and the one-step() run of 2,840,576 */
}

/* --grad-ckpt-ops on one checkpointed Sequential of four bias-free 1024 x 1024 Linears (16 rows,
 * fp32, SGD): torchtitan's _custom_policy (torchtitan/distributed/activation_checkpoint.py
 * _apply_op_sac @ 1f029641) counts the region's aten.mm calls and saves every one in the save
 * list except when the count is even: the 1st and 3rd Linears' outputs (65,536 B each) are
 * kept from forward, the 2nd and 4th recomputed. At the end of forward: the input (65,536)
 * alone with plain checkpointing, input + two kept outputs = 196,608 with the policy (the
 * 4th's output, the region's, is freed once the mean has been taken). */
static const char *const ckpt_model =
    "{\"input\": [16, 1024], \"layers\": [{\"type\": \"Sequential\", \"checkpoint\": true, \"layers\": ["
    "{\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 1024, \"bias\": false},"
    "{\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 1024, \"bias\": false},"
    "{\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 1024, \"bias\": false},"
    "{\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 1024, \"bias\": false}]}]}";

static vc_status run_ops(const char *json, int ops, vc_result *r, vc_error *err)
{
    vc_model *m = NULL;
    if (vc_model_load_string(json, strlen(json), "ckpt.json", &m, err)) fail_msg("load: %s", err->msg);
    vc_options o;
    vc_options_init(&o);
    assert_int_equal(o.ckpt_ops, 0);
    o.optim = VC_OPTIM_SGD;
    o.workspace = 0;
    o.ckpt_ops = ops;
    vc_status st = vc_estimate(m, &o, r, err);
    vc_model_free(m);
    return st;
}

static void test_ops_policy(void **state)
{
    (void)state;
    vc_result a, k;
    vc_error err;
    if (run_ops(ckpt_model, 0, &a, &err) || run_ops(ckpt_model, 1, &k, &err)) fail_msg("estimate: %s", err.msg);
    assert_int_equal(a.memory.activations, 65536);
    assert_int_equal(k.memory.activations, 196608);
    vc_result_free(&a);
    vc_result_free(&k);
    /* refused, naming the option, where nothing is checkpointed */
    assert_int_equal(run_ops(model, 1, &k, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--grad-ckpt-ops");
    assert_non_null(strstr(CLI_MSG(&err), "no checkpointed layers"));
}

/* --grad-ckpt-ops on the replica's llama (batch 4, 128 tokens, bf16 SGD): measured on torch
 * 1.13 CPU with ac_replica.py (torchtitan's policy through TorchDispatchMode, 2.x's
 * non-reentrant checkpoint without early stop; measured.json llm213): 4,880,896 B; the
 * estimate 4,879,872 (-0.02%), against 4,456,448 with every op recomputed. */
static void test_ops_measured(void **state)
{
    (void)state;
    const char *a = LLAMA " --seq 128 -b 4 -o sgd -p bf16 --attention math --workspace 0 --grad-ckpt";
    char with[512];
    snprintf(with, sizeof with, "%s --grad-ckpt-ops", a);
    long long k = cli_peak(with);
    assert_int_equal(k, 4879872);
    assert_true(llabs(k - 4880896) * 1000 < 4880896); /* within 0.1% of the measurement */
    assert_int_equal(cli_peak(a), 4456448);
}

/* The CLI's exit status for a command line, its first output line in line. */
static int cli_status(const char *args, char *line, size_t n)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1 >/dev/null", VC_CLI, args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    if (!fgets(line, (int)n, p)) line[0] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* --grad-ckpt-kind (vc_options.ckpt_reentrant): torch.utils.checkpoint's reentrant CheckpointFunction
 * (torch/utils/checkpoint.py @0008d771; test_ckpt_reentrant.c derives a peak by hand). On the replica's llama
 * (batch 2, 64 tokens, fp32 AdamW, every layer checkpointed) measured on torch 1.13 CPU with
 * vctorch._checkpoint_reentrant2x (measure_llm.py --ckpt --ckpt-kind reentrant, measured.json's llama_small case of
 * issue 26): 3,111,424 B; the estimate 3,110,400 (-0.03%), 32,768 B (the layer's held [2, 64, 64] fp32 output
 * gradient and recomputed output) above the non-reentrant 3,077,632. The default follows the library: a config.json
 * as transformers' gradient_checkpointing_enable() at --transformers (4.57: reentrant; 5.0, the default:
 * non-reentrant, release.c VC_TF_CKPT_REENTRANT), TRL's loss and a TRL or torchtune recipe non-reentrant. */
static void test_ckpt_kind(void **state)
{
    (void)state;
    const char *a = LLAMA SMALL " --grad-ckpt";
    char cmd[512], line[512];
    snprintf(cmd, sizeof cmd, "%s --grad-ckpt-kind reentrant", a);
    long long re = cli_peak(cmd);
    assert_int_equal(re, 3110400);
    assert_true(llabs(re - 3111424) * 1000 < 3111424); /* within 0.1% of the measurement */
    snprintf(cmd, sizeof cmd, "%s --grad-ckpt-kind non-reentrant", a);
    assert_int_equal(cli_peak(cmd), 3077632);
    assert_int_equal(cli_peak(a), 3077632); /* transformers 5.0 */
    snprintf(cmd, sizeof cmd, "%s --transformers 4.57", a);
    assert_int_equal(cli_peak(cmd), 3110400); /* 4.x: use_reentrant=True */
    snprintf(cmd, sizeof cmd, "%s --transformers 4.57 --loss chunked-nll", a);
    long long trl = cli_peak(cmd);
    snprintf(cmd, sizeof cmd, "%s --transformers 4.57 --loss chunked-nll --grad-ckpt-kind non-reentrant", a);
    assert_int_equal(trl, cli_peak(cmd)); /* TRL passes use_reentrant=False */
    /* refusals: exit 2, one line naming the option */
    static const char *bad[] = {
        " --grad-ckpt-kind bogus",                                  /* not a choice */
        " --grad-ckpt-kind reentrant --grad-ckpt-ops",              /* torchtitan's context_fn: non-reentrant only */
        " --grad-ckpt-kind reentrant --act-offload sync",           /* torchtune's NO_REENTRANT wrapper */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(cmd, sizeof cmd, "%s%s", a, bad[i]);
        assert_int_equal(cli_status(cmd, line, sizeof line), 2);
        assert_non_null(strstr(line, "--grad-ckpt-kind"));
    }
    assert_int_equal(cli_status(LLAMA SMALL " --grad-ckpt-kind reentrant", line, sizeof line), 2); /* nothing checkpointed */
    assert_non_null(strstr(line, "--grad-ckpt-kind"));
    assert_non_null(strstr(line, "--grad-ckpt)"));
    /* LoRA without the input-embeddings hook (every 2nd layer, torchtune's selective AC: no PeftModel hook) still
     * has a layer input requiring grad (layer 1's LoRA output): accepted; a model file whose checkpointed layer's
     * input requires no grad is refused (test_ckpt_reentrant.c) */
    snprintf(cmd, sizeof cmd, "%s --lora 8 --grad-ckpt-every 2 --grad-ckpt-kind reentrant", a);
    assert_true(cli_peak(cmd) > 0);
}

/* --act-offload (vc_options.act_offload) on x [16, 1024] -> Linear -> ReLU -> Linear (bias-free,
 * fp32, SGD), from torchtune/training/_activation_offloading.py @ bd2a0fc7 by hand. The packs:
 * l1 saves x (id 1) and its weight (id 2, a Parameter: kept), the ReLU its output r (id 3), l2
 * r (id 4) and its weight (id 5); x and r (65,536 B each) are offloaded. None: the peak is at
 * l1's weight gradient, 16,909,312 (weights 8,388,608 + x 65,536 + loss and root gradient 1,024
 * + the ReLU's input gradient 65,536 + both weight gradients 8,388,608). Sync
 * (use_streams=False): at the end of forward only x, the batch, is left (65,536, against
 * 131,072 with r saved); in backward each node brings its tensors back for its apply, l1 a
 * copy of x: +65,536, 16,974,848. Streams: the fwd_stash keeps r (no offloaded pack 5 ids
 * past it), so 131,072 at the end of forward; the ReLU node's copy of r stays in
 * bwd_tensor_stash until the next unpacking node's (l1's) hook: +65,536 more, 17,040,384. */
static const char *const offload_model =
    "{\"input\": [16, 1024], \"layers\": ["
    "{\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 1024, \"bias\": false},"
    "{\"type\": \"ReLU\"},"
    "{\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 1024, \"bias\": false}]}";

static vc_result offload_est(int mode)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(offload_model, strlen(offload_model), "offload.json", &m, &err)) fail_msg("load: %s", err.msg);
    vc_options o;
    vc_options_init(&o);
    assert_int_equal(o.act_offload, VC_ACT_OFFLOAD_NONE);
    o.optim = VC_OPTIM_SGD;
    o.workspace = 0;
    o.act_offload = mode;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate: %s", err.msg);
    vc_model_free(m);
    return r;
}

static void test_offload(void **state)
{
    (void)state;
    vc_result n = offload_est(VC_ACT_OFFLOAD_NONE), y = offload_est(VC_ACT_OFFLOAD_SYNC),
              s = offload_est(VC_ACT_OFFLOAD_STREAMS);
    assert_int_equal(n.memory.activations, 131072);
    assert_int_equal(y.memory.activations, 65536);
    assert_int_equal(s.memory.activations, 131072);
    assert_int_equal(n.memory.peak_allocated, 16909312);
    assert_int_equal(y.memory.peak_allocated, 16974848);
    assert_int_equal(s.memory.peak_allocated, 17040384);
    vc_result_free(&n);
    vc_result_free(&y);
    vc_result_free(&s);
}

/* --act-offload sync on the replica's llama (batch 2, 64 tokens, fp32 SGD): measured on torch
 * 1.13 CPU with ac_replica.py's OffloadActivations (the copies held outside the counted
 * allocator; measured.json llm218): 1,467,904 B; the estimate 1,466,880 (-0.07%), against
 * 2,908,672 without offloading (measured 2,910,720). With checkpointing (batch 4, 128 tokens,
 * bf16 AdamW; llm228): each layer's hidden states offloaded by the checkpoint's _NoopSaveInputs
 * and brought back by its recompute: 4,962,304 measured, 4,961,280 estimated, against 5,026,816
 * with checkpointing alone. */
static void test_offload_measured(void **state)
{
    (void)state;
    const char *a = LLAMA " --seq 64 -b 2 -o sgd -p fp32 --attention math --workspace 0";
    char with[512];
    snprintf(with, sizeof with, "%s --act-offload sync", a);
    long long k = cli_peak(with);
    assert_int_equal(k, 1466880);
    assert_true(llabs(k - 1467904) * 1000 < 1467904); /* within 0.1% of the measurement */
    assert_int_equal(cli_peak(a), 2908672);
    const char *c = LLAMA " --seq 128 -b 4 -o adamw -p bf16 --attention math --workspace 0 --grad-ckpt";
    snprintf(with, sizeof with, "%s --act-offload sync", c);
    k = cli_peak(with);
    assert_int_equal(k, 4961280);
    assert_true(llabs(k - 4962304) * 1000 < 4962304);
    assert_int_equal(cli_peak(c), 5026816);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_bwd_sgd), cmocka_unit_test(test_in_bwd_adam), cmocka_unit_test(test_first_step), cmocka_unit_test(test_first_step_differs),
        cmocka_unit_test(test_refusals), cmocka_unit_test(test_every), cmocka_unit_test(test_in_bwd_measured),
        cmocka_unit_test(test_ops_policy), cmocka_unit_test(test_ops_measured), cmocka_unit_test(test_ckpt_kind),
        cmocka_unit_test(test_offload), cmocka_unit_test(test_offload_measured),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
