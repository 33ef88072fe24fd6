/*
 * test_liger.c — --liger (issue 26): Liger-Kernel's patch set as transformers' and TRL's
 * use_liger_kernel=True applies it (_apply_liger_kernel_to_instance, apply_liger_kernel_to_<family>
 * with its defaults: rope, rms_norm, swiglu, fused_linear_cross_entropy), linkedin/Liger-Kernel
 * @ ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c.
 *
 * 1. The CLI's refusals: exit 2, nothing on stdout, one stderr line naming --liger (a family
 *    Liger-Kernel has no apply function for, one whose patch set is not modelled, another --loss,
 *    another mode), and the layer arguments "liger" / "liger_rope" where they are not the Functions'.
 * 2. Hand-written models' peaks derived by hand from the Functions' allocations (the
 *    LigerRMSNormFunction, LigerSiLUMulFunction and LigerGELUMulFunction of layers/llm.c, which cite the source's
 *    lines), the gemma families' in_place False RMSNorm included.
 * 3. --liger-kernels (transformers' liger_kernel_config): its refusals, each naming the option.
 * The measured configs (bench/accuracy/llm/measured.json, the --liger cases at the end of
 * run_suite.py) are held to their bound by CTest llm_train_measured.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli_run.h"
#include "vramcalc/vramcalc.h"

#define HF VC_TEST_DATA "/hf/"

static void test_cli_refusals(void **state)
{
    (void)state;
    /* MODEL_TYPE_TO_APPLY_LIGER_FN (monkey_patch.py @ ead96b61) has no gpt_neox: nothing would be patched */
    assert_usage(HF "gpt-neox-20b.json --seq 64 --liger",
                 "--liger: gpt_neox: Liger-Kernel has no apply_liger_kernel_to_gpt_neox");
    /* apply_liger_kernel_to_gemma4_text exists (LigerRMSNormForGemma4, offset 0): not modelled here */
    assert_usage(HF "gemma-4-31b-it.json --seq 64 --liger", "--liger: gemma4: apply_liger_kernel_to_gemma4's patch set is not modelled");
    /* mixtral / qwen3_moe at transformers 5: LigerExperts.forward (LigerFusedMoEFunction), not layers/moe_ep.c's
     * expert-parallel MoELayer */
    assert_usage(HF "mixtral-8x7b-v0.1.json --seq 64 --liger --ep 2 --gpus 2",
                 "--ep: expert parallelism is not modelled with liger's LigerFusedMoEFunction");
    /* qwen3_moe with a dense layer: the swiglu patch reads mlp.experts on every layer (monkey_patch.py l.1776-1781);
     * a copy of qwen3-30b-a3b.json with mlp_only_layers [0] (its [] replaced) */
    {
        char path[] = "/tmp/vc_liger_qwen3_moe_XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        FILE *in = fopen(HF "qwen3-30b-a3b.json", "r"), *out = fdopen(fd, "w");
        assert_non_null(in);
        assert_non_null(out);
        char buf[8192];
        size_t n = fread(buf, 1, sizeof buf - 1, in);
        fclose(in);
        buf[n] = 0;
        static const char key[] = "\"mlp_only_layers\": []";
        char *at = strstr(buf, key);
        assert_non_null(at);
        fprintf(out, "%.*s\"mlp_only_layers\": [0]%s", (int)(at - buf), buf, at + strlen(key));
        fclose(out);
        char args[512];
        snprintf(args, sizeof args, "%s --seq 64 --liger", path);
        assert_usage(args, "--liger: qwen3_moe: swiglu patches decoder_layer.mlp.experts on every layer");
        unlink(path);
    }
    /* gemma3_text's rms_norm patches q_norm / k_norm on the transposed heads (copies not modelled); rope with it */
    assert_usage(HF "gemma-3-1b-it.json --seq 64 --liger", "--liger: gemma3_text: rope and rms_norm");
    /* --liger-kernels: transformers' liger_kernel_config, read only with use_liger_kernel=True */
    assert_usage(HF "llama-3.1-8b.json --seq 64 --liger-kernels rope", "--liger-kernels is transformers' liger_kernel_config: it needs --liger");
    assert_usage(HF "llama-3.1-8b.json --seq 64 --liger --liger-kernels rope,layer_norm",
                 "--liger-kernels: 'layer_norm' is no keyword of apply_liger_kernel_to_*");
    assert_usage(HF "llama-3.1-8b.json --seq 64 --liger --liger-kernels rope,rope", "--liger-kernels: 'rope' is named twice");
    assert_usage(HF "llama-3.1-8b.json --seq 64 --liger --liger-kernels rope,", "--liger-kernels: '' is no keyword");
    /* _apply_liger_kernel_to_instance drops a keyword the function does not take: geglu for llama, swiglu for gemma */
    assert_usage(HF "llama-3.1-8b.json --seq 64 --liger --liger-kernels geglu", "--liger-kernels: llama: apply_liger_kernel_to_llama takes swiglu, not geglu");
    assert_usage(HF "gemma-2-9b.json --seq 64 --liger --liger-kernels swiglu", "--liger-kernels: gemma2: apply_liger_kernel_to_gemma2 takes geglu, not swiglu");
    /* every apply function asserts not (cross_entropy and fused_linear_cross_entropy) */
    assert_usage(HF "llama-3.1-8b.json --seq 64 --liger --liger-kernels cross_entropy,fused_linear_cross_entropy",
                 "--liger-kernels: cross_entropy and fused_linear_cross_entropy cannot both be True");
    /* cross_entropy patches ForCausalLMLoss's F.cross_entropy: not another --loss, not a vocabulary shard; mistral's
     * sets modeling_mistral.CrossEntropyLoss (monkey_patch.py l.723-724), which nothing reads */
    assert_usage(HF "llama-3.1-8b.json --seq 64 --liger --liger-kernels rope,cross_entropy --loss cce",
                 "--liger-kernels: cross_entropy patches transformers' ForCausalLMLoss (--loss hf); --loss cce is another loss");
    assert_usage(HF "llama-3.1-8b.json --seq 64 --liger --liger-kernels rope,cross_entropy --tp 2 --gpus 2",
                 "--liger-kernels: cross_entropy with --tp is not modelled");
    assert_usage(HF "mistral-7b-v0.1.json --seq 64 --liger --liger-kernels rope,cross_entropy",
                 "--liger-kernels: mistral: apply_liger_kernel_to_mistral's cross_entropy sets modeling_mistral");
    /* --loss liger is the fused loss the kernels leave out */
    assert_usage(HF "llama-3.1-8b.json --seq 64 --liger --liger-kernels rope --loss liger",
                 "--liger-kernels: leaves fused_linear_cross_entropy out; --loss liger is that loss");
    /* fused_linear_cross_entropy=True is one of the defaults: another loss contradicts it */
    assert_usage(HF "llama-3.1-8b.json --seq 64 --liger --loss cce", "--liger: applies the fused linear cross-entropy");
    assert_usage(HF "llama-3.1-8b.json --seq 64 --liger --loss chunked", "--liger: applies the fused linear cross-entropy");
    /* the patch set is a training option (options.def: A_TR) and a config.json's (A_CFG) */
    assert_usage(HF "llama-3.1-8b.json --liger -m generate", "--liger does not apply to --mode generate");
    assert_usage(VC_EXAMPLES "/mlp.json --liger", "--liger applies to a Hugging Face config.json");
    /* the fused loss's own refusals still hold (src/engine/loss.c: no vocabulary-parallel mode) */
    assert_usage(HF "llama-3.1-8b.json --seq 64 --liger --tp 2 --gpus 2", "--loss: liger with --tp is not modelled");
}

static vc_status estimate(const char *json, const vc_options *o, vc_result *r, vc_error *err)
{
    vc_model *m = NULL;
    vc_status st = vc_model_load_string(json, strlen(json), "t", &m, err);
    if (st == VC_OK) st = vc_estimate(m, o, r, err);
    vc_model_free(m);
    return st;
}

/* A gated MLP after a Liger RMSNorm: x [16, 32] fp32 -> w0 (32 -> 32) -> LigerRMSNorm -> gate, up (32 -> 64)
 * -> LigerSiLUMulFunction(gate, up) -> down (64 -> 32), the default loss output.mean(). */
#define TINY(norm, act)                                                                                               \
    "{\"input\": {\"shape\": [16, 32], \"dtype\": \"float32\"}, \"layers\": ["                                       \
    "{\"type\": \"Linear\", \"name\": \"w0\", \"in_features\": 32, \"out_features\": 32, \"bias\": false},"          \
    "{\"type\": \"HFRMSNorm\", \"name\": \"norm\", \"hidden_size\": 32" norm "},"                                     \
    "{\"type\": \"Linear\", \"name\": \"gate\", \"in_features\": 32, \"out_features\": 64, \"bias\": false},"        \
    "{\"type\": \"Linear\", \"name\": \"up\", \"inputs\": [\"norm\"], \"in_features\": 32, \"out_features\": 64, "   \
    "\"bias\": false},"                                                                                              \
    "{\"type\": \"GatedActivation\", \"name\": \"act\", \"inputs\": [\"gate\", \"up\"]" act "},"                      \
    "{\"type\": \"Linear\", \"name\": \"down\", \"in_features\": 64, \"out_features\": 32, \"bias\": false}]}"

/* Batch 1, fp32, sgd (no state), no workspace (sm_count 1: rms_norm.py l.519, off CUDA). Bytes, each rounded up
 * to 512. Weights: w0 4096, norm 128 -> 512, gate / up / down 8192 each: 29184; the input x 2048.
 * Forward (saved, alive after it):
 *   w0 saves x (its weight's gradient);                      a0 = w0(x) [16, 32]            2048
 *   LigerRMSNormFunction: Y = torch.empty((n_rows, n_cols)) (rms_norm.py l.449)              2048
 *     RSTD = torch.empty(n_rows, float32) (l.452-453), saved with X = a0 (l.657)             512
 *   gate(Y), up(Y) [16, 64] (each saves Y)                                                   4096 + 4096
 *   LigerSiLUMulFunction: c = torch.empty_like(a) (swiglu.py l.128); saves a, b (l.231)     4096
 *   down(c) [16, 32] saves c; the loss output.mean() 512 (down's output freed after it)
 * Backward, in order: the root gradient 512; mean's gradient [16, 32] 2048; down: dc 4096 and its weight's
 * gradient 8192, then c and mean's gradient freed; LigerSiLUMulFunction.backward: swiglu_backward writes da into
 * a and db into b and returns them (l.163-198, l.263): nothing allocated, dc freed; up: dY 2048 and its weight's
 * gradient 8192, then b (up's gradient, consumed) freed; gate: dY 2048 and its weight's gradient 8192 -- the peak:
 *   weights 29184 + activations (x 2048, a0 2048, RSTD 512, Y 2048, a = gate's gradient 4096) 10752
 *   + gradients (down, up, gate weights) 24576 + temporaries (root 512, loss 512, two dY 2048 + 2048) 5120
 *   = 69632.
 * With the eager modules (act_fn(gate) * up: silu saves gate, the product saves silu's output and up; each
 * gradient a new tensor) the same step keeps one more [16, 64] tensor and allocates its gradients. */
static void test_tiny_bytes(void **state)
{
    (void)state;
    static const char liger[] = TINY(", \"liger\": true", ", \"liger\": true");
    static const char eager[] = TINY("", "");
    vc_options o;
    vc_options_init(&o);
    o.optim = VC_OPTIM_SGD;
    o.workspace = 0;
    vc_result r;
    vc_error err;
    assert_int_equal(estimate(liger, &o, &r, &err), VC_OK);
    assert_int_equal(r.memory.peak_allocated, 69632);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    assert_int_equal(r.peak.weights, 29184);
    assert_int_equal(r.peak.activations, 10752);
    assert_int_equal(r.peak.gradients, 24576);
    assert_int_equal(r.peak.temporaries, 5120);
    int64_t liger_peak = r.memory.peak_allocated;
    vc_result_free(&r);
    assert_int_equal(estimate(eager, &o, &r, &err), VC_OK);
    assert_true(r.memory.peak_allocated > liger_peak);
    vc_result_free(&r);
}

/* LigerRMSNormFunction with in_place False (apply_liger_kernel_to_gemma2's and _gemma3_text's partial,
 * monkey_patch.py l.1023-1025): x [16, 32] fp32 -> w0 (32 -> 32) -> LigerRMSNorm (offset 1.0, casting_mode "gemma")
 * -> output.mean(). Batch 1, sgd, no workspace (sm_count 1). Bytes, each rounded up to 512: weights w0 4096 + norm
 * 128 -> 512 = 4608; x 2048.
 * Forward: w0 saves x; a0 = w0(x) 2048, saved by the norm as X (rms_norm.py l.657) with RSTD float32 [16] 512
 * (l.452-453); Y 2048 (l.449), mean's output 512, Y freed after the mean.
 * Backward: the root gradient 512, mean's gradient dY [16, 32] 2048; the norm's backward: dX =
 * torch.zeros_like(dY) (l.543) 2048 beside dY, _dW = torch.empty((1, 32), float32) (l.529) 512, dW = _dW.sum(0)
 * (l.605, float32: the weight's gradient) 512 -- the peak: weights 4608 + activations (x, a0, RSTD) 4608 + the
 * norm's gradient 512 + temporaries (root 512, loss 512, dY 2048, dX 2048, _dW 512) 5632 = 15360.
 * in_place True (dX = dY, l.541-542): the norm's backward holds 13312, under w0's backward (its weight's gradient
 * 4096 beside the norm's 512; x 2048; root, loss and dX 3072): 4608 + 4608 + 2048 + 3072 = 14336. */
#define NORM_ONLY(in_place)                                                                                           \
    "{\"input\": {\"shape\": [16, 32], \"dtype\": \"float32\"}, \"layers\": ["                                       \
    "{\"type\": \"Linear\", \"name\": \"w0\", \"in_features\": 32, \"out_features\": 32, \"bias\": false},"          \
    "{\"type\": \"HFRMSNorm\", \"name\": \"norm\", \"hidden_size\": 32, \"variant\": \"gemma\", \"liger\": true, "     \
    "\"liger_in_place\": " in_place "}]}"

static void test_gemma_norm_bytes(void **state)
{
    (void)state;
    vc_options o;
    vc_options_init(&o);
    o.optim = VC_OPTIM_SGD;
    o.workspace = 0;
    vc_result r;
    vc_error err;
    assert_int_equal(estimate(NORM_ONLY("false"), &o, &r, &err), VC_OK);
    assert_int_equal(r.memory.peak_allocated, 15360);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    assert_string_equal(r.peak.kind, "HFRMSNorm");
    assert_int_equal(r.peak.weights, 4608);
    assert_int_equal(r.peak.activations, 4608);
    assert_int_equal(r.peak.gradients, 512);
    assert_int_equal(r.peak.temporaries, 5632);
    vc_result_free(&r);
    assert_int_equal(estimate(NORM_ONLY("true"), &o, &r, &err), VC_OK);
    assert_int_equal(r.memory.peak_allocated, 14336);
    assert_string_equal(r.peak.kind, "Linear");
    assert_int_equal(r.peak.gradients, 4608);
    assert_int_equal(r.peak.temporaries, 3072);
    vc_result_free(&r);
}

/* The GEGLU path (LigerGELUMulFunction, ops/geglu.py l.87-146) allocates and saves what the SiLUMul path does:
 * test_tiny_bytes' model with the gelu_tanh activation has its peak, 69632 */
static void test_geglu_bytes(void **state)
{
    (void)state;
    static const char geglu[] = TINY(", \"liger\": true", ", \"activation\": \"gelu_tanh\", \"liger\": true");
    vc_options o;
    vc_options_init(&o);
    o.optim = VC_OPTIM_SGD;
    o.workspace = 0;
    vc_result r;
    vc_error err;
    assert_int_equal(estimate(geglu, &o, &r, &err), VC_OK);
    assert_int_equal(r.memory.peak_allocated, 69632);
    vc_result_free(&r);
}

/* --liger-kernels cross_entropy: ForCausalLMLoss with LigerCrossEntropyFunction (src/engine/loss.c emit_liger_ce,
 * which cites ops/cross_entropy.py's lines), on Embedding(100, 8) then the head Linear(8, 100), 64 tokens, batch 1,
 * fp32, sgd, no workspace. Bytes, each rounded up to 512: weights 3200 -> 3584 each, 7168; ids [64] i64 512,
 * the resident targets 512, the embedding output [64, 8] 2048, the logits [64, 100] fp32 25600.
 * Liger: the forward writes the gradient into the logits, which it saves; its backward returns them (nothing
 * allocated). The peak is the head's backward: weights 7168 + activations (ids, targets, embedding output, the
 * logits holding their gradient) 28672 + the root gradient 512 + the loss 512 + the embedding output's gradient
 * [64, 8] 2048 + the head weight's gradient 3584 = 42496.
 * The hf row (causal_lm): log_softmax's output [64, 100] 25600 (saved), then in backward nll_loss's gradient
 * 25600 and log_softmax's 25600 beside it: the loss's backward holds 7168 + 28672 (the logits freed, the saved
 * output alive) + 25600 + 25600 + root 512 + loss 512 = 88064. */
#define LM_TINY(loss)                                                                                                  \
    "{\"input\": {\"shape\": [64], \"dtype\": \"int64\"}, \"loss\": \"" loss "\", \"layers\": ["                          \
    "{\"type\": \"Embedding\", \"name\": \"emb\", \"num_embeddings\": 100, \"embedding_dim\": 8},"                 \
    "{\"type\": \"Linear\", \"name\": \"lm_head\", \"in_features\": 8, \"out_features\": 100, \"bias\": false}]}"

static void test_cross_entropy_bytes(void **state)
{
    (void)state;
    vc_options o;
    vc_options_init(&o);
    o.optim = VC_OPTIM_SGD;
    o.workspace = 0;
    vc_result r;
    vc_error err;
    assert_int_equal(estimate(LM_TINY("liger_cross_entropy"), &o, &r, &err), VC_OK);
    assert_int_equal(r.memory.peak_allocated, 42496);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    assert_string_equal(r.peak.kind, "Linear");
    assert_int_equal(r.peak.activations, 28672);
    assert_int_equal(r.peak.gradients, 3584);
    assert_int_equal(r.peak.temporaries, 3072);
    vc_result_free(&r);
    assert_int_equal(estimate(LM_TINY("causal_lm"), &o, &r, &err), VC_OK);
    assert_int_equal(r.memory.peak_allocated, 88064);
    assert_string_equal(r.peak.kind, "loss");
    vc_result_free(&r);
}

/* The layer arguments are the Functions' only: LigerRMSNorm's casting modes "llama" / "gemma" (the llama and
 * gemma variants), LigerSiLUMulFunction's silu and LigerGELUMulFunction's gelu over two inputs, LigerRopeFunction's
 * whole-head llama rotation; liger_in_place only with liger. */
/* 4.x's per-expert modules (--experts-implementation per_expert): each expert's forward is
 * LigerBlockSparseTop2MLP's, w2(LigerSiLUMulFunction.apply(w1(x), w3(x))) (transformers/swiglu.py l.37-38). The
 * expected peaks are the harness's measurements of liger_patch_replica.py on reference.py's per-expert
 * MixtralSparseMoeBlock (bench/accuracy/llm/measured.json, the issue-26 mixtral_small per_expert --liger cases:
 * measure_llm.py configs/mixtral_small.json --experts per_expert --liger ...), held to 0.5%. */
static void test_moe_per_expert(void **state)
{
    (void)state;
#define MX " --attention math --workspace 0 --experts-implementation per_expert --liger"
    static const cli_measured c[] = {
        {"mixtral_small.json --seq 64 -b 2 -o sgd -p fp32" MX, 3445248},
        {"mixtral_small.json --seq 64 -b 2 -o adamw -p bf16 --grad-ckpt" MX, 2723840},
        {"mixtral_small.json --seq 96 -b 1 -o sgd -p bf16" MX, 1885184},
    };
#undef MX
    assert_measured(c, sizeof c / sizeof *c, "", 0.5);
    /* transformers 5's stacked experts (grouped_mm, the default): LigerExperts.forward, LigerFusedMoEFunction,
     * measured with liger_patch_replica.py's on moe_v5_replica.py's MixtralExperts (the issue-26 mixtral_small
     * grouped_mm --liger cases: measure_llm.py configs/mixtral_small.json --experts grouped_mm --liger ...) */
#define MG " --attention math --workspace 0 --liger"
    static const cli_measured g[] = {
        {"mixtral_small.json --seq 64 -b 2 -o sgd -p fp32" MG, 3452416},
        {"mixtral_small.json --seq 64 -b 2 -o adamw -p fp32 --lora 8" MG, 3314176},
        {"mixtral_small.json --seq 96 -b 2 -o sgd -p bf16 --grad-ckpt --grad-ckpt-kind non-reentrant" MG, 2193408},
    };
#undef MG
    assert_measured(g, sizeof g / sizeof *g, "", 0.5);
}

/* LigerExperts.forward on transformers 5's stacked experts (LigerFusedMoEFunction, layers/llm.c liger_fused_moe,
 * which cites ops/fused_moe.py's lines): x [16, 32] fp32 -> w0 (32 -> 32) -> SparseMoE (style mixtral, grouped_mm,
 * hidden 32, intermediate 64, 4 experts, top 2), the default loss output.mean(). Batch 1, sgd, no workspace. T 16,
 * K 2, TK 32. Bytes, each rounded up to 512.
 * Weights: w0 4096, the router [4, 32] 512, gate_up_proj [4, 128, 32] 65536, down_proj [4, 32, 64] 32768: 102912.
 * Forward (MixtralSparseMoeBlock, MixtralTopKRouter): x 2048 (saved by w0); a = w0(x) [16, 32] 2048 (saved by the
 *   router's linear and by the Function); router_logits [16, 4] 512 (the block's local); softmax's output 512
 *   (saved); topk's values [16, 2] 512 (renormalised in place, saved by div_) and int64 indices 512 (saved); the
 *   sum [16, 1] 512 (saved by div_); LigerExperts.forward's top_k_index.to(int32) [32] 512 (its local); the
 *   Function: out [16, 32] 2048; saved: expert_start_idx [5], x_gather_idx / s_scatter_idx / s_reverse_scatter_idx
 *   [32], tile_row_start / tile_expert [floor((32 + 63 x 4) / 64) = 4] (int32, 512 each: 3072), pre_act [32, 128]
 *   16384; its locals tile_expert_counts [4, cdiv(16, 512) = 1], expert_token_count [4], expert_tile_offset [5]
 *   (512 each), post_act [32, 64] 8192, Y [32, 32] 4096. Held after it: x, a, softmax's output, the top-k values,
 *   indices and sum, the Function's saved ones: 2048 + 2048 + 4 x 512 + 3072 + 16384 = 25600.
 * Backward, the Function's (ops/fused_moe.py l.285-434), the peak: weights 102912 + activations 25600 + the
 *   weights' gradients ddown_proj 32768 and dgate_up_proj 65536 (98304) + temporaries: the root gradient 512, the
 *   loss 512, mean's gradient dO [16, 32] 2048, dx [16, 32] 2048, dS [32] 512, d_pre_act [32, 128] 16384,
 *   weighted_act [32, 64] 8192, dx_expanded [32, 32] 4096 (34304) = 261120.
 * transformers 5's grouped_mm_experts_forward on the same block (no liger) peaks at 234496: the Function's
 * saved pre_act and its backward's buffers cost more at this width. */
#define MOE_TINY(liger)                                                                                               \
    "{\"input\": {\"shape\": [16, 32], \"dtype\": \"float32\"}, \"layers\": ["                                       \
    "{\"type\": \"Linear\", \"name\": \"w0\", \"in_features\": 32, \"out_features\": 32, \"bias\": false},"          \
    "{\"type\": \"SparseMoE\", \"name\": \"moe\", \"hidden_size\": 32, \"intermediate_size\": 64, \"num_experts\": 4, " \
    "\"top_k\": 2, \"style\": \"mixtral\", \"experts_implementation\": \"grouped_mm\"" liger "}]}"

static void test_fused_moe_bytes(void **state)
{
    (void)state;
    vc_options o;
    vc_options_init(&o);
    o.optim = VC_OPTIM_SGD;
    o.workspace = 0;
    vc_result r;
    vc_error err;
    assert_int_equal(estimate(MOE_TINY(", \"liger\": true"), &o, &r, &err), VC_OK);
    assert_int_equal(r.memory.peak_allocated, 261120);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    assert_string_equal(r.peak.kind, "SparseMoE");
    assert_int_equal(r.peak.weights, 102912);
    assert_int_equal(r.peak.activations, 25600);
    assert_int_equal(r.peak.gradients, 98304);
    assert_int_equal(r.peak.temporaries, 34304);
    vc_result_free(&r);
    assert_int_equal(estimate(MOE_TINY(""), &o, &r, &err), VC_OK);
    assert_int_equal(r.memory.peak_allocated, 234496);
    vc_result_free(&r);
}

static void test_bad_args(void **state)
{
    (void)state;
    vc_options o;
    vc_options_init(&o);
    vc_result r;
    vc_error err;
    static const char olmo_norm[] = TINY(", \"variant\": \"olmo\", \"liger\": true", "");
    assert_int_equal(estimate(olmo_norm, &o, &r, &err), VC_ERR_MODEL);
    assert_non_null(strstr(err.path, "liger"));
    static const char copy_only[] = TINY(", \"liger_in_place\": false", "");
    assert_int_equal(estimate(copy_only, &o, &r, &err), VC_ERR_MODEL);
    assert_non_null(strstr(err.path, "liger_in_place"));
    /* LigerExperts binds to the stacked experts of mixtral / qwen3_moe only (no shared expert, no other router) */
    static const char ds[] = "{\"input\": {\"shape\": [16, 32], \"dtype\": \"float32\"}, \"layers\": [{\"type\": "
                             "\"SparseMoE\", \"hidden_size\": 32, \"intermediate_size\": 64, \"num_experts\": 4, \"style\": "
                             "\"deepseek_v3\", \"experts_implementation\": \"grouped_mm\", \"liger\": true}]}";
    assert_int_equal(estimate(ds, &o, &r, &err), VC_ERR_MODEL);
    assert_non_null(strstr(err.path, "liger"));
    static const char relu[] = TINY("", ", \"activation\": \"relu\", \"liger\": true");
    assert_int_equal(estimate(relu, &o, &r, &err), VC_ERR_MODEL);
    assert_non_null(strstr(err.path, "liger"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cli_refusals),
        cmocka_unit_test(test_tiny_bytes),
        cmocka_unit_test(test_gemma_norm_bytes),
        cmocka_unit_test(test_geglu_bytes),
        cmocka_unit_test(test_moe_per_expert),
        cmocka_unit_test(test_bad_args),
        cmocka_unit_test(test_cross_entropy_bytes),
        cmocka_unit_test(test_fused_moe_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
