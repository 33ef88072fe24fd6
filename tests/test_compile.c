/*
 * test_compile.c — --compile (src/engine/compile.c, issue 26 item 6): the min-cut
 * partitioner's saved values against the real partitioner's, measured on CPU by
 * bench/accuracy/compile_partition.py (functorch 1.13's min_cut_rematerialization_partition,
 * compiler="inductor"; its output is bench/accuracy/compile_partition.json), with the
 * engine on the same rules (VC_COMPILE_FUNCTORCH_113); torch 2.x's rules (--compile) on
 * the same model worked out by hand from partitioners.py @ c28ba8e5; the eager figures
 * beside the compiled ones; the refusals.
 */
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

#include "vramcalc/vramcalc.h"
#include "cli_run.h"

#define MLP_BLOCK VC_EXAMPLES "/../bench/accuracy/models/compile_mlp_block.json"
#define LLAMA VC_TEST_DATA "/hf/llama-small-measured.json"

static vc_result run_model(vc_model *m, int compile, int64_t batch, int torch_version, vc_attention att)
{
    vc_error err;
    vc_options o;
    vc_options_init(&o);
    o.optim = VC_OPTIM_SGD;
    o.workspace = 0;
    o.batch = batch;
    o.compile = compile;
    o.attention = att;
    o.torch_version = torch_version;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate: %s", err.msg);
    return r;
}

static vc_result mlp(int compile, int64_t batch)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file(MLP_BLOCK, &m, &err)) fail_msg("load: %s", err.msg);
    vc_result r = run_model(m, compile, batch, 0, VC_ATTN_AUTO);
    vc_model_free(m);
    return r;
}

static vc_result llama(int compile, int64_t batch)
{
    vc_model *m = NULL;
    vc_error err;
    vc_hf_options hf;
    vc_hf_options_init(&hf);
    hf.seq = 32;
    if (vc_model_load_file_hf(LLAMA, &hf, &m, &err)) fail_msg("load: %s", err.msg);
    /* the math SDPA with 2.4's plain softmax: the reference's attention (compile_partition.py llama) */
    vc_result r = run_model(m, compile, batch, 204, VC_ATTN_MATH);
    vc_model_free(m);
    return r;
}

/* The MLP block (LayerNorm(256) -> Linear(256, 1024) -> GELU -> Linear(1024, 256), 64
 * tokens, fp32). bench/accuracy/compile_partition.json, mlp_block: eager autograd saves
 * 590,336 B at batch 1 and 2,361,344 B at batch 4 (LayerNorm's output 65,536 read by the
 * first addmm, its mean and rstd 256 each, the first Linear's output 262,144 read by
 * GELU, GELU's output 262,144 read by the second addmm): the engine's eager figure is
 * exactly that. functorch 1.13's partitioner saves the first addmm's output (262,144) and
 * the LayerNorm output (as the addmm's view, 65,536): 327,680 and 1,310,720, GELU's output
 * recomputed in backward. The engine recomputes GELU's output too, and saves the addmm
 * output, but not the LayerNorm output: in the joint graph layer norm is decomposed into
 * var_mean, sub, mul, mul, add, convert_element_type, whose inner nodes are more than 4
 * from backward, which 1.13 bans under inductor (max_dist_from_bw; 2.x's is 1000: off),
 * so 1.13 cannot recompute it; the engine's LayerNorm is one node. It keeps eager's mean and
 * rstd (512 B) instead. The known gap: 65,536 - 512 per sample, 19.8% below the measurement. */
static void test_mlp_block_functorch_113(void **state)
{
    (void)state;
    vc_result a = mlp(VC_COMPILE_FUNCTORCH_113, 1), b = mlp(VC_COMPILE_FUNCTORCH_113, 4);
    assert_int_equal(a.memory.compile.saved_eager, 590336);
    assert_int_equal(b.memory.compile.saved_eager, 2361344);
    assert_int_equal(a.memory.compile.saved_compiled, 327680 - 65536 + 512);
    assert_int_equal(b.memory.compile.saved_compiled, 1310720 - 4 * (65536 - 512));
    vc_result_free(&a);
    vc_result_free(&b);
}

/* torch 2.x's rules on the same block (partitioners.py @ c28ba8e5, by hand): GELU's output
 * is read by the second addmm's backward (an mm, not fusible): is_materialized_backwards
 * bans its recomputation; the addmm outputs are not in the allowlist; the LayerNorm output
 * is read by the first addmm's backward: banned too. Everything eager saves is saved. */
static void test_mlp_block_inductor(void **state)
{
    (void)state;
    vc_result a = mlp(VC_COMPILE_INDUCTOR, 1), e = mlp(0, 1);
    assert_int_equal(a.memory.compile.on, 1);
    assert_int_equal(a.memory.compile.saved_compiled, 590336);
    assert_int_equal(a.memory.compile.saved_eager, 590336);
    /* the eager figures beside are the plain estimate's */
    assert_int_equal(e.memory.compile.on, 0);
    assert_int_equal(a.memory.compile.eager_peak_allocated, e.memory.peak_allocated);
    assert_int_equal(a.memory.compile.eager_reserved, e.memory.reserved);
    assert_int_equal(a.memory.compile.eager_activations, e.memory.activations);
    assert_int_equal(a.memory.compile.eager_total, e.memory.total);
    /* fusion: nothing of this block is fused in forward (each value is an extern kernel's
     * input or output, or saved), so the activations held at the end of forward are the same */
    assert_int_equal(a.memory.activations, e.memory.activations);
    vc_result_free(&a);
    vc_result_free(&e);
}

/* The small llama (2 layers, hidden 64, seq 32, fp32, the math SDPA). bench/accuracy/
 * compile_partition.json, llama_small: functorch 1.13's partitioner saves 367,532 B at
 * batch 1 and 732,964 B at batch 2: per layer the two RMSNorms' rsqrt and outputs, the
 * attention's scaled q and k, the repeated v, the softmax, o_proj's input and output, gate,
 * up, their product, down's output; the embedding, the rotary cos/sin, the loss's
 * log-probabilities. The engine saves the same values but the rotary cos/sin (its cos+sin is
 * one op, recomputed) and the repeat_interleave index: 365,444 and 730,884, -0.57% and
 * -0.28%, held to 1%. Eager autograd on CPU 1.13 saves 496,684 and 989,092; the engine's
 * eager figure (CUDA 2.x's autograd, validated on GPUs: docs/accuracy.md) is 455,556 and
 * 907,012, 8.3% lower, held to 10%. */
static void test_llama_functorch_113(void **state)
{
    (void)state;
    static const int64_t measured[2][2] = {{367532, 496684}, {732964, 989092}};
    for (int i = 0; i < 2; i++) {
        vc_result r = llama(VC_COMPILE_FUNCTORCH_113, i + 1), x = llama(VC_COMPILE_INDUCTOR, i + 1);
        double c = (double)r.memory.compile.saved_compiled, e = (double)r.memory.compile.saved_eager;
        assert_true(c > 0.99 * (double)measured[i][0] && c < 1.01 * (double)measured[i][0]);
        assert_true(e > 0.90 * (double)measured[i][1] && e < (double)measured[i][1]);
        /* 2.x's rules choose the same values here (what 1.13 bans through views absent from
         * its list, 2.x bans as read by a non-fusible backward) */
        assert_int_equal(x.memory.compile.saved_compiled, r.memory.compile.saved_compiled);
        /* fusion: the compiled step holds less at the end of forward than the eager one */
        assert_true(x.memory.activations < x.memory.compile.eager_activations);
        vc_result_free(&r);
        vc_result_free(&x);
    }
}

/* Fusion, by hand. A Linear (no bias) to 4096 features, SiLU, Tanh, a Linear back to 16,
 * fp32, no cuBLAS workspace. SiLU's output is read by Tanh only (both fusible, neither saves
 * it: silu saves its input, tanh its result): inductor fuses the two and the SiLU output is
 * never allocated; the first Linear's output (an extern kernel's) and Tanh's (the second
 * Linear reads it) are. */
static vc_result chain(const char *json, vc_mode mode, int compile)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(json, strlen(json), "chain.json", &m, &err)) fail_msg("load: %s", err.msg);
    vc_options o;
    vc_options_init(&o);
    o.optim = VC_OPTIM_SGD;
    o.workspace = 0;
    o.mode = mode;
    o.compile = compile;
    vc_result r;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate: %s", err.msg);
    vc_model_free(m);
    return r;
}

/* Inference on a [16, 1024] input (65,536 B). Eager: the largest live set is inside SiLU,
 * the input, the mm output and SiLU's output, 65,536 + 2 x 262,144 = 589,824. Compiled: the
 * mm output goes after SiLU (its last reader) and SiLU's output is never made, so the
 * largest set is at the second Linear: the input, Tanh's output and the Linear's
 * [16, 16] output, 65,536 + 262,144 + 1,024 = 328,704; the peak falls by the difference. */
static void test_fusion_forward(void **state)
{
    (void)state;
    static const char *const json =
        "{\"input\": [16, 1024], \"layers\": ["
        "{\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 4096, \"bias\": false},"
        "{\"type\": \"SiLU\"}, {\"type\": \"Tanh\"},"
        "{\"type\": \"Linear\", \"in_features\": 4096, \"out_features\": 16, \"bias\": false}]}";
    vc_result e = chain(json, VC_MODE_INFER, 0), c = chain(json, VC_MODE_INFER, VC_COMPILE_INDUCTOR);
    assert_int_equal(e.memory.activations, 589824);
    assert_int_equal(c.memory.activations, 328704);
    assert_int_equal(c.memory.compile.eager_activations, 589824);
    assert_int_equal(e.memory.peak_allocated - c.memory.peak_allocated, 589824 - 328704);
    assert_int_equal(c.memory.compile.saved_compiled, 0); /* inference: nothing saved */
    vc_result_free(&e);
    vc_result_free(&c);
}

/* Training on a [256, 16] input (16,384 B), weights 2 x 262,144, SGD. Saved both ways: the
 * mm output (SiLU's input, an extern output: banned) and Tanh's output (the second mm's
 * backward reads it: banned as materialized in backward), 2 x 4,194,304 = 8,388,608.
 * Eager's peak is Tanh's backward: weights 524,288, the input and the saved tensors
 * 8,404,992, the second weight's gradient 262,144, the gradients of Tanh's output and of
 * SiLU's output 2 x 4,194,304, the loss and its root gradient 2 x 512: 17,581,056. Compiled,
 * Tanh's and SiLU's backwards are one kernel: the gradient between them is never made, and
 * the peak is the second Linear's backward, the same in both: weights, input and saved
 * tensors, Tanh's output gradient, the weight gradient 262,144, the mean's backward
 * expansion of [256, 16] 16,384, the loss and the root 1,024: 13,403,136. */
static void test_fusion_backward(void **state)
{
    (void)state;
    static const char *const json =
        "{\"input\": [256, 16], \"layers\": ["
        "{\"type\": \"Linear\", \"in_features\": 16, \"out_features\": 4096, \"bias\": false},"
        "{\"type\": \"SiLU\"}, {\"type\": \"Tanh\"},"
        "{\"type\": \"Linear\", \"in_features\": 4096, \"out_features\": 16, \"bias\": false}]}";
    vc_result e = chain(json, VC_MODE_TRAIN, 0), c = chain(json, VC_MODE_TRAIN, VC_COMPILE_INDUCTOR);
    assert_int_equal(c.memory.compile.saved_eager, 8388608);
    assert_int_equal(c.memory.compile.saved_compiled, 8388608);
    assert_int_equal(e.memory.peak_allocated, 17581056);
    assert_int_equal(c.memory.peak_allocated, 13403136);
    assert_int_equal(c.memory.compile.eager_peak_allocated, 17581056);
    assert_int_equal(c.peak.phase, VC_PHASE_BACKWARD);
    assert_string_equal(c.peak.layer, "layers[3]");
    vc_result_free(&e);
    vc_result_free(&c);
}

/* ban_recompute_long_fusible_chains, by hand: a Linear (16 -> 1024, no bias) on a [64, 16]
 * input, 110 Tanh, a Linear back to 16, fp32. Eager, each Tanh saves its result:
 * 110 x 262,144 = 28,835,840. Compiled: the last Tanh's result is read by the second mm's
 * backward (banned: materialized in backward), the first mm's output is an extern kernel's
 * (banned), and the chain of Tanh from the first reaches more than 100 ops past its start
 * with nothing else left to visit: the Tanh reached there is banned. The cut keeps the mm
 * output (recomputing Tanh 1 to 100 from it costs 262,144 x 1.1^2 against 2 x 262,144 x 1.1
 * for any fused Tanh output), the banned Tanh's output (the cheapest cut after it: the
 * outputs after it weigh the same, the source side is the nearest) and the last Tanh's:
 * 3 x 262,144 = 786,432 (without the chain rule the middle one would be recomputed: 524,288). */
static void test_long_fusible_chain(void **state)
{
    (void)state;
    char json[8192];
    int n = snprintf(json, sizeof json, "{\"input\": [64, 16], \"layers\": [{\"type\": \"Linear\", \"in_features\": "
                     "16, \"out_features\": 1024, \"bias\": false}");
    for (int i = 0; i < 110; i++) n += snprintf(json + n, sizeof json - (size_t)n, ", {\"type\": \"Tanh\"}");
    snprintf(json + n, sizeof json - (size_t)n,
             ", {\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 16, \"bias\": false}]}");
    vc_result c = chain(json, VC_MODE_TRAIN, VC_COMPILE_INDUCTOR);
    assert_int_equal(c.memory.compile.saved_eager, 28835840);
    assert_int_equal(c.memory.compile.saved_compiled, 786432);
    vc_result_free(&c);
}

/* Refusals: checkpointed layers, a parallel layout, generation; exit 2 and one line naming the option. */
static void test_refusals(void **state)
{
    (void)state;
    assert_usage(LLAMA " --seq 32 --compile --grad-ckpt", "--compile: with checkpointed layers");
    assert_usage(LLAMA " --seq 32 --compile --parallel ddp --gpus 2", "not with a parallel layout");
    assert_usage(LLAMA " --compile -m generate", "--compile does not apply to --mode generate");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mlp_block_functorch_113),
        cmocka_unit_test(test_mlp_block_inductor),
        cmocka_unit_test(test_llama_functorch_113),
        cmocka_unit_test(test_fusion_forward),
        cmocka_unit_test(test_fusion_backward),
        cmocka_unit_test(test_long_fusible_chain),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
