/*
 * serve_graphs.c — --serve (issue 27): vLLM's estimate of its CUDA graphs' memory, the figure
 * Worker.determine_available_memory takes off the KV cache pool (src/engine/serve.c vllm_graphs
 * says when it does), derived from the capture's forward.
 *
 * vLLM measures it on the GPU (vllm-project/vllm @ 000fc94b754f66aeb60ef5acf1ea2e94cdc65164,
 * vllm/v1/worker/gpu_model_runner.py GPUModelRunner.profile_cudagraph_memory; the same arithmetic
 * as at 9aaf83ef, the commit serve.c follows):
 *  - _init_minimal_kv_cache_for_profiling first (a KV cache of min(max_num_seqs,
 *    max_cudagraph_capture_size) blocks, allocated before any sample below: not in the estimate);
 *  - capture_descs = cudagraph_dispatcher.get_capture_descs(): (PIECEWISE, its sizes), then (FULL,
 *    its sizes), each list largest first (vllm/v1/cudagraph_dispatcher.py get_capture_descs);
 *  - every CUDAGraphWrapper's graph_pool swapped for one temporary profiling_pool
 *    (current_platform.graph_pool_handle()): both modes capture into the same private pool;
 *  - inside graph_capture(device) (a fresh side stream on CUDA: cap_ctx None), after
 *    synchronize() and empty_cache(), for each mode the first two sizes: mem_before =
 *    get_memory_info()[0]; _warmup_and_capture(desc) (cudagraph_num_of_warmups eager _dummy_run's,
 *    1: vllm/config/vllm.py VllmConfig.__post_init__ sets it when graphs are on, then the capturing
 *    _dummy_run); the sample is mem_before - the free memory after;
 *  - first_capture = the first sample; per_graph = max(the second sample, 1 MiB) ("at least 1 MiB
 *    per graph for driver overhead"); estimate = max over modes of first_capture + sum over modes
 *    of per_graph x (graphs - 1): "FULL and PIECEWISE graphs share the global pool at runtime ...
 *    take the max to avoid double-counting the overlap".
 * What those samples hold, from the source:
 *  - the warm-up's activations do not stay: torch.cuda.graph.__enter__ (pytorch/pytorch @
 *    1059cc7a476e117c338a40560b317c2cc5800609, torch/cuda/graphs.py graph.__enter__) runs
 *    torch.cuda.empty_cache() before capture_begin, so the blocks the eager warm-up freed go back to
 *    the driver before the first graph of a capture (vllm/compilation/cuda_graph.py @ 018fe847
 *    CUDAGraphWrapper.__call__: gc_disable, which patches empty_cache away, is set for the pieces
 *    after a forward's first only);
 *  - the capture's activations stay: every piece (PIECEWISE: the compiled model split at the
 *    attention ops, one CUDAGraphWrapper a piece) or the whole forward (FULL) is captured with
 *    torch.cuda.graph(pool=the profiling pool); a private pool keeps its segments while its graphs
 *    live (CUDAGraphWrapper keeps each entry's graph until clear_all_graphs, after the samples), and
 *    blocks freed during one capture are reused by the next capture into the same pool. Outputs kept
 *    per graph: none (entry.output = weak_ref_tensors(output); the last piece's output is weak-ref'd
 *    at once, the others die when the next piece and attention have consumed them). So the pool grows
 *    by the highest live set of the captured forward: the first capture of the first mode (PIECEWISE,
 *    the largest size) holds the forward's activation peak at that size; every later capture, FULL's
 *    largest included (at most the same tokens), fits in the blocks already there;
 *  - the side stream's cuBLAS workspace: the warm-up's first GEMMs on the new stream make one (ATen's
 *    workspace is per handle and stream), held after the capture: vramcalc's workspace for the plan
 *    (src/engine/state.c workspaces, which follows the --torch release's retention);
 *  - the graphs' own device memory (cudaGraphInstantiate's): not derived; vLLM's 1 MiB floor stands
 *    for it in the per-graph term, and the first capture's is not counted.
 * So, derived: estimate = A(N) + W + (PIECEWISE graphs - 1 + FULL graphs - 1) x 1 MiB, A(N) the
 * activation peak (allocated bytes, ACT and TEMP at the plan's peak, no segment rounding) of the
 * model's forward over the largest PIECEWISE size N (a no-grad forward without the LM head and the
 * sampler: _dummy_run's model call, the logits outside the graphs; its min(N, max_num_seqs)
 * requests of cdiv(N, requests) tokens, as _dummy_run splits them), W that workspace. The
 * activations are those of vramcalc's forward (the same plan as the profiling run's, the HF
 * modules'), not of vLLM's compiled kernels. --cuda-graph-memory still gives vLLM's logged figure.
 *
 * Speculative decoding: vramcalc has no option for it. With num_speculative_tokens k, vLLM's
 * uniform_decode_query_len is 1 + k: _set_cudagraph_sizes' largest size is min(max_num_seqs x (1 + k)
 * x 2, 512) and FULL keeps the sizes up to (1 + k) x max_num_seqs (initialize_cudagraph_keys), so
 * more FULL graphs (1 MiB each past the first) and a largest PIECEWISE size that can reach 512 sooner.
 */
#include <string.h>

#include "plan.h"
#include "policy.h"
#include "util.h"

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

vc_status vc__serve_graphs_estimate(const vc_model *m, const vc_options *o, vc_serve_result *r, vc_error *err)
{
    r->graphs_activations = r->graphs_workspace = r->graphs_estimate = 0;
    if (r->graphs_piecewise < 1) return VC_OK; /* enforce_eager: none captured */
    const int64_t n = r->graphs_largest_piecewise;
    const int64_t rows = n < r->max_num_seqs ? n : r->max_num_seqs; /* _dummy_run: min(num_tokens, max_num_reqs) */
    vc_plan *p = NULL;
    vc__quant_vllm_scope(true); /* vLLM's modules (src/policy/quant.c), as the profiling run's plan */
    vc_status st = vc__plan_build_capture(m, o, cdiv(n, rows), &p, err);
    vc_sim sim;
    if (!st) st = vc_plan_simulate(p, rows, &sim, NULL, err);
    vc__quant_vllm_scope(false);
    vc_plan_free(p);
    if (st) return st;
    r->graphs_activations = sim.at_peak[CAT_ACT] + sim.at_peak[CAT_TEMP]; /* each at most the peak */
    r->graphs_workspace = sim.persistent[CAT_WS];
    if (__builtin_add_overflow(r->graphs_activations, r->graphs_workspace, &r->graphs_estimate) ||
        __builtin_add_overflow(r->graphs_estimate, r->graphs_floor, &r->graphs_estimate))
        return vc_set_error(err, VC_ERR_OVERFLOW, O("serve"), "the CUDA graphs' estimate passes 2^63 bytes");
    return VC_OK;
}
