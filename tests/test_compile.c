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
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
