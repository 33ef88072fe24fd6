/* --serve's estimate of vLLM's CUDA graph memory (issue 27 item 3; src/engine/serve_graphs.c;
 * docs/inference.md "Serving capacity" item 7). Every expected value is derived by hand from the sources:
 *  - vllm-project/vllm @ 000fc94b754f66aeb60ef5acf1ea2e94cdc65164, vllm/v1/worker/gpu_model_runner.py
 *    GPUModelRunner.profile_cudagraph_memory: estimate = max over modes of the first capture + sum over
 *    modes of max(second capture, 1 MiB) x (graphs - 1), the modes PIECEWISE then FULL
 *    (cudagraph_dispatcher.py get_capture_descs, largest size first) captured into one temporary pool;
 *  - pytorch/pytorch @ 1059cc7a, torch/cuda/graphs.py graph.__enter__: empty_cache() before each capture,
 *    so the eager warm-up's blocks are not held; the pool keeps the capture's live set, every later
 *    capture reusing its freed blocks: first capture = the forward's activation peak at the largest
 *    PIECEWISE size, the second capture and FULL's first nothing new (the 1 MiB floor a graph);
 *  - vLLM's _dummy_run(N): min(N, max_num_seqs) requests of N / requests tokens;
 *  - the forward's activation peak, from transformers' modules as vramcalc builds them
 *    (models/llama/modeling_llama.py, models/gemma3/modeling_gemma3.py): at LlamaMLP's
 *    act_fn(gate_proj(x)) * up_proj(x) (gate_proj's output freed once act_fn returns) the live set is
 *    act, up and their product ([N, I] each), the layer's input (LlamaModel.forward's hidden_states),
 *    the residual after attention and the normed x ([N, H] each), the token ids (int64, one per token),
 *    and the rotary cos and sin of one sequence ([1, tokens, head_dim] each; Gemma 3 has two rotary
 *    embeddings, local and global: four). Everything in the model's dtype, bf16 here;
 *  - the capture stream's cuBLAS workspace (ATen's per handle and stream; graph_capture's fresh side
 *    stream): src/engine/state.c workspaces, 4096 x 8 KiB on Hopper when the release retains it (torch
 *    2.11), none from 2.15 (the library's own). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "vramcalc/vramcalc.h"
#include "load_file.h"
#include "cli_run.h"

#define HF VC_TEST_DATA "/hf/"
#define MIB(n) ((int64_t)(n) << 20)

static void serve_on(const vc_model *m, const vc_options *o, const char *gpu, vc_serve_result *r)
{
    vc_gpu_spec g;
    vc_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_gpu_parse(gpu, &g, &err), VC_OK);
    vc_serve_options so;
    vc_serve_options_init(&so);
    if (vc_serve(m, o, &so, &g, r, &err)) fail_msg("serve on %s: %s", gpu, err.msg);
}

static void bf16_opts(vc_options *o, int64_t tp)
{
    vc_options_init(o);
    o->precision = VC_PREC_BF16;
    o->prompt = 1024;
    o->new_tokens = 1024;
    o->tp = tp;
    o->gpus = tp;
}

/* the activation peak at N tokens (bytes): 3 [N, I] + 3 [N, H] in bf16, N int64 ids, `rope` bytes of cos/sin */
static int64_t mlp_peak(int64_t n, int64_t inter, int64_t hidden, int64_t rope)
{
    return n * ((3 * inter + 3 * hidden) * 2 + 8) + rope;
}

/* Llama-3.1-8B (H 4096, I 14336, head_dim 128) on an H100: 1024 sequences, largest size 512 (51
 * PIECEWISE, 51 FULL), one token a request; torch 2.15: no retained workspace */
static void llama_h100(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "llama-3.1-8b.json");
    vc_options o;
    bf16_opts(&o, 1);
    vc_serve_result r;
    serve_on(m, &o, "h100-80gb", &r);
    assert_int_equal(r.graphs_largest_piecewise, 512);
    assert_int_equal(r.graphs_floor, MIB(50 + 50));
    const int64_t act = mlp_peak(512, 14336, 4096, 2 * 1 * 128 * 2); /* 56,627,712 B = 54.0 MiB */
    assert_int_equal(r.graphs_activations, act);
    assert_int_equal(r.graphs_workspace, 0);
    assert_int_equal(r.graphs_estimate, act + MIB(100));
    assert_int_equal(r.graphs_subtracted, act + MIB(100)); /* taken off the pool: vLLM's default since v0.21.0 */
    /* torch 2.11 retains the cuBLAS workspace: the side stream's own, 4096 x 8 KiB on Hopper (no biased
     * Linear: no cuBLASLt one). o.hopper is what the CLI sets from --gpu (request.c) */
    o.torch_version = 211;
    o.hopper = 1;
    serve_on(m, &o, "h100-80gb", &r);
    assert_int_equal(r.graphs_workspace, MIB(32));
    assert_int_equal(r.graphs_estimate, act + MIB(32) + MIB(100));
    vc_model_free(m);
}

/* The same model on an A100-80GB (256 sequences, 2048 tokens): sizes up to min(512, 512) = 512, FULL
 * up to 256 (35): floor (50 + 34) MiB; _dummy_run(512) runs 256 requests of 2 tokens, so each
 * sequence's cos and sin hold 2 positions. Tensor parallelism 2: I / 2 a rank, H whole */
static void llama_a100_tp(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "llama-3.1-8b.json");
    vc_options o;
    bf16_opts(&o, 1);
    vc_serve_result r;
    serve_on(m, &o, "a100-80gb", &r);
    assert_int_equal(r.graphs_full, 35);
    assert_int_equal(r.graphs_floor, MIB(84));
    const int64_t act = mlp_peak(512, 14336, 4096, 2 * 2 * 128 * 2); /* 56,628,224 B */
    assert_int_equal(r.graphs_activations, act);
    assert_int_equal(r.graphs_estimate, act + MIB(84));
    bf16_opts(&o, 2);
    serve_on(m, &o, "h100-80gb", &r);
    assert_int_equal(r.graphs_activations, mlp_peak(512, 14336 / 2, 4096, 2 * 1 * 128 * 2)); /* 34,607,616 B */
    vc_model_free(m);
}

/* Gemma-3-1B-it (H 1152, I 6912, head_dim 256) on an H100: the same live set at Gemma3MLP's product
 * (gelu_pytorch_tanh, one op), the cos and sin of both rotary embeddings */
static void gemma3_h100(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "gemma-3-1b-it.json");
    vc_options o;
    bf16_opts(&o, 1);
    vc_serve_result r;
    serve_on(m, &o, "h100-80gb", &r);
    const int64_t act = mlp_peak(512, 6912, 1152, 4 * 1 * 256 * 2); /* 24,778,752 B */
    assert_int_equal(r.graphs_activations, act);
    assert_int_equal(r.graphs_estimate, act + MIB(100));
    vc_model_free(m);
}

/* The estimate taken off the pool (determine_available_memory's requested - non_kv_cache_memory -
 * cudagraph_memory_estimate_applied) by default, as vLLM does with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS
 * "1" (its default since v0.21.0), and with --cuda-graph-memory estimate; --cuda-graph-memory 0 (the variable
 * off, or vLLM before v0.21.0) gives the pool before it */
static void estimate_taken_off(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "llama-3.1-8b.json");
    vc_options o;
    bf16_opts(&o, 1);
    vc_serve_result r0, r1, rd;
    o.cuda_graph_memory = 0;
    serve_on(m, &o, "h100-80gb", &r0);
    assert_int_equal(r0.graphs_subtracted, 0);
    o.cuda_graph_memory = VC_CUDA_GRAPH_MEMORY_ESTIMATE;
    serve_on(m, &o, "h100-80gb", &r1);
    assert_int_equal(r1.graphs_subtracted, r0.graphs_estimate);
    assert_int_equal(r1.kv_cache, r0.kv_cache - r0.graphs_estimate); /* the pool before - 161,485,312 B */
    o.cuda_graph_memory = VC_CUDA_GRAPH_MEMORY_VLLM_DEFAULT; /* the same, by default */
    serve_on(m, &o, "h100-80gb", &rd);
    assert_int_equal(rd.graphs_subtracted, r0.graphs_estimate);
    assert_int_equal(rd.kv_cache, r0.kv_cache - r0.graphs_estimate);
    vc_model_free(m);
    const char *out = cli_output(HF "llama-3.1-8b.json --serve --gpu h100-80gb --cuda-graph-memory estimate");
    assert_non_null(strstr(out, "  CUDA graphs               154.0 MiB  (51 PIECEWISE (largest 512) + 51 FULL (largest 512): "
                                "vLLM's measure, estimated 154.0 MiB: "));
    out = cli_output(HF "llama-3.1-8b.json --serve --gpu h100-80gb --cuda-graph-memory estimate -f json");
    assert_non_null(strstr(out, "\"cuda_graphs_counted\": true"));
    assert_non_null(strstr(out, "\"subtracted\": 161485312, \"estimate\": 161485312"));
    /* refused where vLLM's estimate is 0, as a given measure is */
    assert_usage(HF "llama-3.1-8b.json --serve --gpu h100-80gb --enforce-eager --cuda-graph-memory estimate",
                 "vLLM subtracts no CUDA graph memory under --enforce-eager");
    assert_usage(HF "llama-3.1-8b.json --serve --gpu h100-80gb --cuda-graph-memory estimat",
                 "--cuda-graph-memory: expected a size such as 512MiB, or estimate, got 'estimat'");
}

/* enforce_eager: nothing captured, no estimate; the report and JSON name the estimate's source */
static void eager_and_report(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "llama-3.1-8b.json");
    vc_options o;
    bf16_opts(&o, 1);
    o.enforce_eager = true;
    vc_serve_result r;
    serve_on(m, &o, "h100-80gb", &r);
    assert_int_equal(r.graphs_activations + r.graphs_workspace + r.graphs_estimate, 0);
    vc_model_free(m);
    const char *out = cli_output(HF "llama-3.1-8b.json --serve --gpu h100-80gb -f json");
    assert_non_null(strstr(out, "\"estimate\": 161485312")); /* 56,627,712 + 100 MiB */
    assert_non_null(strstr(out, "\"source\": \"estimated\""));
    out = cli_output(HF "llama-3.1-8b.json --serve --gpu h100-80gb --cuda-graph-memory 1GiB -f json");
    assert_non_null(strstr(out, "\"subtracted\": 1073741824, \"estimate\": 161485312"));
    assert_non_null(strstr(out, "\"source\": \"given\""));
    out = cli_output(HF "llama-3.1-8b.json --serve --gpu h100-80gb");
    assert_non_null(strstr(out, "estimated 154.0 MiB: activations at 512 tokens 54.0 MiB + cuBLAS workspace 0 B + 100 graphs x 1 MiB; "
                                "taken off the pool, as vLLM does by default)"));
    /* 0 given (vLLM before v0.21.0, or VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0): none taken off, the estimate shown */
    out = cli_output(HF "llama-3.1-8b.json --serve --gpu h100-80gb --cuda-graph-memory 0");
    assert_non_null(strstr(out, "  CUDA graphs             not counted  (51 PIECEWISE (largest 512) + 51 FULL (largest 512): "
                                "given as 0, none taken off the pool"));
    out = cli_output(HF "llama-3.1-8b.json --serve --gpu h100-80gb --cuda-graph-memory 0 -f json");
    assert_non_null(strstr(out, "\"cuda_graphs_counted\": false"));
    assert_non_null(strstr(out, "\"subtracted\": 0, \"estimate\": 161485312"));
    assert_non_null(strstr(out, "\"source\": \"given\""));
    /* whisper's decode-only graphs: not estimated, so none taken off by default (tests/test_whisper_serve.c) */
    out = cli_output(HF "whisper-tiny.json --serve --gpu h100-80gb -f json");
    assert_non_null(strstr(out, "\"cuda_graphs_counted\": false"));
    assert_non_null(strstr(out, "\"subtracted\": 0, \"estimate\": 0"));
}

/* Qwen3-8B (H 4096, I 12288, head_dim 128) runs vLLM's V2 model runner (vllm/config/vllm.py use_v2_model_runner:
 * Qwen3ForCausalLM, dense, unquantized), whose profile_cudagraph_memory returns 0 (vllm-project/vllm @
 * 0036d38de46c5d48fdedeb658dedc0fc0f95677d, vllm/v1/worker/gpu/model_runner.py): nothing taken off the pool. Its
 * capture_model still captures them after the pool is sized (CudaGraphManager.capture, vllm/v1/worker/gpu/
 * cudagraph_utils.py: PIECEWISE sizes then FULL's, largest first, into one graph pool), and nothing bounds them: the
 * estimate comes on top of gpu_memory_utilization's share. On an H100: 512 sequences of one token at the largest
 * size, the live set 512 x (3 x 12288 + 3 x 4096) x 2 B + 512 x 8 B ids + the cos and sin of one token (2 x 128 x
 * 2 B) = 50,336,256 B, + 100 MiB = 155,193,856 B (148.0 MiB) */
static void qwen3_v2_runner(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "qwen3-8b.json");
    vc_options o;
    bf16_opts(&o, 1);
    vc_serve_result r;
    serve_on(m, &o, "h100-80gb", &r);
    assert_int_equal(r.graphs_why, VC_SERVE_GRAPHS_V2_RUNNER);
    const int64_t act = mlp_peak(512, 12288, 4096, 2 * 1 * 128 * 2);
    assert_int_equal(act, 50336256);
    assert_int_equal(r.graphs_activations, act);
    assert_int_equal(r.graphs_estimate, act + MIB(100));
    assert_int_equal(r.graphs_subtracted, 0);
    assert_int_equal(r.kv_cache, r.requested - r.profile_peak - r.non_torch); /* the share less the rest: no graphs */
    vc_model_free(m);
    const char *out = cli_output(HF "qwen3-8b.json --serve --gpu h100-80gb");
    assert_non_null(strstr(out, "  CUDA graphs               148.0 MiB  (51 PIECEWISE (largest 512) + 51 FULL (largest 512), "
                                "captured after the pool is sized: the V2 model runner's profile_cudagraph_memory is 0; "
                                "estimated 148.0 MiB: activations at 512 tokens 48.0 MiB + cuBLAS workspace 0 B + 100 graphs "
                                "x 1 MiB; none taken off the pool: on top of gpu_memory_utilization's share)"));
    out = cli_output(HF "qwen3-8b.json --serve --gpu h100-80gb -f json");
    assert_non_null(strstr(out, "\"subtracted\": 0, \"estimate\": 155193856"));
    assert_non_null(strstr(out, "\"beyond_utilization\": 155193856"));
    /* where vLLM subtracts them (Llama), nothing beyond the share */
    out = cli_output(HF "llama-3.1-8b.json --serve --gpu h100-80gb -f json");
    assert_non_null(strstr(out, "\"source\": \"estimated\", \"beyond_utilization\": 0"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(llama_h100),
        cmocka_unit_test(llama_a100_tp),
        cmocka_unit_test(gemma3_h100),
        cmocka_unit_test(eager_and_report),
        cmocka_unit_test(estimate_taken_off),
        cmocka_unit_test(qwen3_v2_runner),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
