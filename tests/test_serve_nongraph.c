/* --serve's memory outside the KV arithmetic (issue 27 item 3; src/engine/serve.c vllm_snapshot and
 * vllm_graphs; docs/inference.md "Serving capacity" item 7): what vLLM's memory snapshot already
 * holds (the CUDA context, and with --tp NCCL's ring, the custom all-reduce's and the symmetric-memory
 * buffers) and the CUDA graphs it captures, whose start-up measure it subtracts. Every expected value
 * is derived by hand from the sources at vllm-project/vllm @ 9aaf83ef502fc37bc647f6e474314d48ba36cd1c:
 *  - vllm/config/vllm.py _set_cudagraph_sizes: max capture size min(max_num_seqs x 2, 512), at most
 *    max_num_batched_tokens; sizes 1, 2, 4, 8..248 by 8, 256..max by 16, and max_num_batched_tokens
 *    when at most the max; vllm/v1/cudagraph_dispatcher.py initialize_cudagraph_keys: PIECEWISE every
 *    size, FULL the sizes up to max_num_seqs; gpu_model_runner.py profile_cudagraph_memory: at least
 *    1 MiB a graph past each mode's first;
 *  - vllm/v1/worker/gpu_worker.py Worker.init_device: the snapshot after the distributed set-up,
 *    ValueError when its free memory is under gpu_memory_utilization x the total;
 *  - vllm/distributed/device_communicators/custom_all_reduce.py (max_size 8 MiB, meta_size() + max_size
 *    and max_size by cudaMalloc, 8 MiB rank_data), all_reduce_utils.py (the max-size tables), symm_mem.py
 *    (a buffer of the table's bytes), pynccl.py (a warm-up all_reduce: NCCL's ring);
 *  - NCCL's ring connections from NVIDIA/nccl@5067397c as src/engine/nccl.c replays them (test_nccl). */
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
#include "load_file.h"
#include "cli_run.h"
#include "cli_spelt.h"

#define HF VC_TEST_DATA "/hf/"
#define MIB(n) ((int64_t)(n) << 20)

static vc_status serve_on(const vc_model *m, const vc_options *o, const vc_serve_options *so, const char *gpu,
                          vc_serve_result *r, vc_error *err)
{
    vc_gpu_spec g;
    memset(err, 0, sizeof *err);
    assert_int_equal(vc_gpu_parse(gpu, &g, err), VC_OK);
    return vc_serve(m, o, so, &g, r, err);
}

static void llama_opts(vc_options *o, int64_t tp)
{
    vc_options_init(o);
    o->precision = VC_PREC_BF16;
    o->prompt = 1024;
    o->new_tokens = 1024;
    o->tp = tp;
    o->gpus = tp;
}

/* The CUDA graphs: counts and floor by the capture sizes */
static void graphs(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "llama-3.1-8b.json");
    vc_options o;
    llama_opts(&o, 1);
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_serve_result r;
    vc_error err;
    /* an H100's defaults, 8192 tokens and 1024 sequences: max = min(2048, 512) = 512; sizes 1, 2, 4 (3),
     * 8..248 (31), 256..512 by 16 (17): 51, 8192 > 512 not added; FULL: every size <= 1024, 51 */
    assert_int_equal(serve_on(m, &o, &so, "h100-80gb", &r, &err), VC_OK);
    assert_int_equal(r.graphs_piecewise, 51);
    assert_int_equal(r.graphs_largest_piecewise, 512);
    assert_int_equal(r.graphs_full, 51);
    assert_int_equal(r.graphs_largest_full, 512);
    assert_int_equal(r.graphs_floor, MIB(50 + 50));
    assert_int_equal(r.graphs_profiled, 1);
    assert_int_equal(r.graphs_why, VC_SERVE_GRAPHS_PROFILED);
    /* vLLM's default since v0.21.0 takes its measure off the pool: vramcalc's estimate of it, 54 MiB of activations at
     * 512 tokens + 100 MiB (tests/test_serve_graphs.c, the report below: 161,485,312 B) */
    assert_int_equal(r.graphs_subtracted, 161485312);
    const int64_t pool = r.kv_cache;
    /* an RTX 4090's defaults, 2048 and 256: max = min(512, 512, 2048) = 512, 51 sizes; FULL the sizes
     * <= 256: 3 + 31 + 1 = 35, largest 256; floor (50 + 34) MiB */
    assert_int_equal(serve_on(m, &o, &so, "rtx4090", &r, &err), VC_OK);
    assert_int_equal(r.graphs_piecewise, 51);
    assert_int_equal(r.graphs_full, 35);
    assert_int_equal(r.graphs_largest_full, 256);
    assert_int_equal(r.graphs_floor, MIB(84));
    /* 128 sequences: max = 256, 3 + 31 + 1 = 35 sizes; FULL <= 128: 3 + 16 = 19 */
    so.max_num_seqs = 128;
    assert_int_equal(serve_on(m, &o, &so, "h100-80gb", &r, &err), VC_OK);
    assert_int_equal(r.graphs_piecewise, 35);
    assert_int_equal(r.graphs_largest_piecewise, 256);
    assert_int_equal(r.graphs_full, 19);
    assert_int_equal(r.graphs_largest_full, 128);
    /* 100 tokens, 64 sequences: max = min(128, 100) = 100; 1, 2, 4, 8..96 (12), and 100 appended: 16;
     * FULL <= 64: 3 + 8 = 11 */
    so.max_num_seqs = 64;
    so.max_num_batched_tokens = 100;
    assert_int_equal(serve_on(m, &o, &so, "h100-80gb", &r, &err), VC_OK);
    assert_int_equal(r.graphs_piecewise, 16);
    assert_int_equal(r.graphs_largest_piecewise, 100);
    assert_int_equal(r.graphs_full, 11);
    assert_int_equal(r.graphs_largest_full, 64);
    assert_int_equal(r.graphs_floor, MIB(15 + 10));
    /* enforce_eager: cudagraph_mode NONE, nothing captured nor subtracted: the pool above plus the estimate it had
     * taken off (the profiling run is the same) */
    vc_serve_options_init(&so);
    o.enforce_eager = 1;
    assert_int_equal(serve_on(m, &o, &so, "h100-80gb", &r, &err), VC_OK);
    assert_int_equal(r.graphs_why, VC_SERVE_GRAPHS_EAGER);
    assert_int_equal(r.graphs_piecewise + r.graphs_full + r.graphs_floor + r.graphs_profiled + r.graphs_subtracted, 0);
    assert_int_equal(r.kv_cache, pool + 161485312);
    /* an AMD card: profiled on CUDA only (is_cuda()) */
    o.enforce_eager = 0;
    assert_int_equal(serve_on(m, &o, &so, "mi300x", &r, &err), VC_OK);
    assert_int_equal(r.graphs_why, VC_SERVE_GRAPHS_NOT_CUDA);
    assert_int_equal(r.graphs_profiled, 0);
    assert_int_equal(r.graphs_subtracted, 0);
    vc_model_free(m);
    /* Qwen3ForCausalLM, dense and unquantized: the V2 model runner, whose profile_cudagraph_memory is 0 */
    m = load_file(HF "qwen3-8b.json");
    o.precision = VC_PREC_BF16;
    assert_int_equal(serve_on(m, &o, &so, "h100-80gb", &r, &err), VC_OK);
    assert_int_equal(r.graphs_why, VC_SERVE_GRAPHS_V2_RUNNER);
    assert_int_equal(r.graphs_profiled, 0);
    assert_int_equal(r.graphs_piecewise, 51);
    assert_true(r.graphs_estimate > 0);
    assert_int_equal(r.graphs_subtracted, 0); /* estimated, not subtracted: vLLM's is 0 */
    vc_model_free(m);
}

/* Llama-3.1-8B on 2 H100s (the nvswitch topology): every byte at the snapshot */
static void snapshot_tp2(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "llama-3.1-8b.json");
    vc_options o;
    llama_opts(&o, 2);
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_serve_result r;
    vc_error err;
    assert_int_equal(serve_on(m, &o, &so, "h100-80gb", &r, &err), VC_OK);
    /* context.c on an H100 (132 SMs x 2048 threads) at CUDA 13.0, lazy: runtime 349 MiB + local memory
     * 132 x 2048 x 1 KiB = 264 MiB */
    assert_int_equal(r.snapshot_context, MIB(349) + INT64_C(132) * 2048 * 1024);
    /* NCCL: one communicator of 2 ranks on the sm90 nvswitch row, 24 channels, each a receive of
     * 4096 + 524,288 + 4,915,200 + 4,194,304 = 9,637,888 B -> 10 MiB and a send of 4096 B -> 2 MiB;
     * NVLS's credits at init (nvls.cc ncclNvlsSetup: 16 channels x 2 x 64 B x 2 heads = 4 KiB ->
     * cuMem's 2 MiB) */
    assert_int_equal(r.snapshot_nccl, 24 * MIB(12) + MIB(2));
    assert_int_equal(r.snapshot_nvls_credits, MIB(2));
    /* the profiling run's all-reduce, 8192 tokens x hidden 4096 x 2 B = 64 MiB: not under the custom
     * all-reduce's 8 MiB nor the symmetric memory's 64 MiB (inp_size < max_size): PyNccl's, NVLS on
     * NVSwitch H100s, whose buffers (nvls.cc ncclNvlsBufferSetup: 2 heads x 16 channels x 2 x 1 MiB)
     * appear after the snapshot: in the non-torch increase, 72 + 64 MiB, and the logits' all-gather's
     * communicator (torch.distributed's, tests/test_serve_logits.c): its credits and NVLS buffers, 2 + 64 MiB */
    assert_int_equal(r.non_torch_nccl, MIB(64));
    assert_int_equal(r.non_torch_logits_nccl, MIB(66));
    assert_int_equal(r.non_torch, MIB(72) + MIB(64) + MIB(66));
    /* symmetric memory: SYMM_MEM_ALL_REDUCE_MAX_SIZES["9.0"][2] = 64 MiB */
    assert_int_equal(r.snapshot_symm_mem, MIB(64));
    /* custom all-reduce: usable symmetric memory (multicast on NVSwitch), so max_size = min(
     * CUSTOM_ALL_REDUCE_MAX_SIZES["9.0"][2] = 64 MiB, 8 MiB) = 8 MiB; 2560 + 8 MiB, 8 MiB, 8 MiB rank data */
    assert_int_equal(r.snapshot_custom_ar, 2560 + MIB(8) + MIB(8) + MIB(8));
    /* none of it is in the pool's arithmetic: the same pool as the figures vLLM subtracts say, the CUDA graphs'
     * estimate included (vLLM's default: 33 MiB of activations + 100 MiB, 139,465,216 B, the report below) */
    assert_int_equal(r.graphs_subtracted, 139465216);
    assert_int_equal(r.kv_cache, r.requested - r.profile_peak - r.non_torch - 139465216);
    /* 8 H100s: CUSTOM_ALL_REDUCE_MAX_SIZES["9.0"][8] = 256 KiB; symmetric memory ["9.0"][8] 64 MiB */
    llama_opts(&o, 8);
    assert_int_equal(serve_on(m, &o, &so, "h100-80gb", &r, &err), VC_OK);
    assert_int_equal(r.snapshot_custom_ar, 2560 + 2 * (MIB(1) / 4) + MIB(8));
    assert_int_equal(r.snapshot_symm_mem, MIB(64));
    /* ... NVLS over 8 heads: 8 x 16 x 2 MiB = 256 MiB; NCCL_NVLS_ENABLE=0 (--nccl-nvls off): none, and
     * no credits */
    assert_int_equal(r.non_torch_nccl, MIB(256));
    o.nccl_nvls = VC_NCCL_NVLS_OFF;
    assert_int_equal(serve_on(m, &o, &so, "h100-80gb", &r, &err), VC_OK);
    assert_int_equal(r.non_torch_nccl, 0);
    assert_int_equal(r.snapshot_nccl, 24 * MIB(12));
    o.nccl_nvls = VC_NCCL_NVLS_AUTO;
    /* an A100 (NVSwitch without multicast): no NVLS */
    assert_int_equal(serve_on(m, &o, &so, "a100-80gb", &r, &err), VC_OK);
    assert_int_equal(r.non_torch_nccl, 0);
    /* 8 B200s: ["10.0"][8]: custom all-reduce 1 MiB, symmetric memory 128 MiB */
    assert_int_equal(serve_on(m, &o, &so, "b200", &r, &err), VC_OK);
    assert_int_equal(r.snapshot_custom_ar, 2560 + MIB(1) + MIB(1) + MIB(8));
    assert_int_equal(r.snapshot_symm_mem, MIB(128));
    /* two nodes of 4: the custom all-reduce is off (the group spans nodes) */
    o.gpus_per_node = 4;
    assert_int_equal(serve_on(m, &o, &so, "h100-80gb", &r, &err), VC_OK);
    assert_int_equal(r.snapshot_custom_ar, 0);
    /* PCIe cards (an RTX 4090, sm89: in neither table): 2 GPUs keep the custom all-reduce at 8 MiB,
     * 4 are not fully connected (off); without peer access (shm) it is off, and NCCL's buffers are
     * in host memory */
    llama_opts(&o, 2);
    assert_int_equal(serve_on(m, &o, &so, "rtx4090", &r, &err), VC_OK);
    assert_int_equal(r.snapshot_custom_ar, 2560 + MIB(24));
    assert_int_equal(r.snapshot_symm_mem, 0);
    o.nccl_topology = VC_NCCL_TOPO_SHM;
    assert_int_equal(serve_on(m, &o, &so, "rtx4090", &r, &err), VC_OK);
    assert_int_equal(r.snapshot_custom_ar + r.snapshot_nccl, 0);
    llama_opts(&o, 4);
    assert_int_equal(serve_on(m, &o, &so, "rtx4090", &r, &err), VC_OK);
    assert_int_equal(r.snapshot_custom_ar, 0);
    /* vLLM refuses to start when the snapshot's free memory is under the requested share: on an H100
     * (81,559 MiB) at 0.995 the request is 81,151 MiB, more than 81,559 - 613 - 378 MiB */
    llama_opts(&o, 2);
    so.gpu_memory_utilization = 0.995;
    assert_int_equal(serve_on(m, &o, &so, "h100-80gb", &r, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--gpu-memory-utilization");
    assert_non_null(strstr(CLI_MSG(&err), "vLLM refuses to start"));
    /* 0.98: 79,928 MiB <= 80,570: it starts */
    so.gpu_memory_utilization = 0.98;
    assert_int_equal(serve_on(m, &o, &so, "h100-80gb", &r, &err), VC_OK);
    vc_model_free(m);
}

/* --cuda-graph-memory: vLLM's logged measure taken off the pool (determine_available_memory:
 * requested - non_kv_cache_memory - cudagraph_memory_estimate_applied), refused where vLLM's estimate
 * is 0 */
static void given_measure(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "llama-3.1-8b.json");
    vc_options o;
    llama_opts(&o, 1);
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_serve_result r, g;
    vc_error err;
    /* vc_options_init: not given, vLLM's default: its measure (vramcalc's estimate, 161,485,312 B: graphs above)
     * taken off */
    assert_int_equal(o.cuda_graph_memory, VC_CUDA_GRAPH_MEMORY_VLLM_DEFAULT);
    assert_int_equal(serve_on(m, &o, &so, "h100-80gb", &r, &err), VC_OK);
    assert_int_equal(r.graphs_subtracted, 161485312);
    /* 0 given (vLLM with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0, or before v0.21.0): the pool before the graphs */
    vc_serve_result z;
    o.cuda_graph_memory = 0;
    assert_int_equal(serve_on(m, &o, &so, "h100-80gb", &z, &err), VC_OK);
    assert_int_equal(z.graphs_subtracted, 0);
    assert_int_equal(z.kv_cache, r.kv_cache + 161485312);
    /* a given measure replaces the estimate: the pool before them less 512 MiB */
    o.cuda_graph_memory = MIB(512);
    assert_int_equal(serve_on(m, &o, &so, "h100-80gb", &g, &err), VC_OK);
    assert_int_equal(g.graphs_subtracted, MIB(512));
    assert_int_equal(g.kv_cache, z.kv_cache - MIB(512));
    assert_int_equal(g.blocks, g.kv_cache / MIB(2)); /* 2 MiB blocks: 16 tokens x 32 layers x 2 x 8 x 128 x 2 B */
    assert_int_equal(z.blocks - g.blocks, 256);      /* 512 MiB / 2 MiB, the pool's remainder the same */
    o.enforce_eager = 1;
    assert_int_equal(serve_on(m, &o, &so, "h100-80gb", &g, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--cuda-graph-memory");
    o.enforce_eager = 0;
    assert_int_equal(serve_on(m, &o, &so, "mi300x", &g, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--cuda-graph-memory");
    vc_model_free(m);
    m = load_file(HF "qwen3-8b.json");
    assert_int_equal(serve_on(m, &o, &so, "h100-80gb", &g, &err), VC_ERR_USAGE);
    assert_non_null(strstr(CLI_MSG(&err), "V2 model runner"));
    vc_model_free(m);
}

/* One --serve --tp 2 report's lines and JSON, by hand (the figures of snapshot_tp2 and graphs):
 * 24 x 12 MiB + 2 MiB = 290 MiB of NCCL, 25,168,384 B = 24.0 MiB of custom all-reduce, 64 MiB of
 * symmetric memory: 304,087,040 + 25,168,384 + 67,108,864 = 396,364,288 B = 378.0 MiB; the graphs'
 * floor (50 + 50) MiB = 100.0 MiB */
static void report(void **state)
{
    (void)state;
    const char *tab = cli_output(HF "llama-3.1-8b.json --serve --gpu h100-80gb -p bf16 --tp 2 --gpus 2");
    assert_non_null(strstr(tab, "  NCCL + all-reduce         378.0 MiB  (held at vLLM's snapshot, not subtracted: NCCL ring "
                                "288.0 MiB + NVLS credits 2.0 MiB, custom all-reduce 24.0 MiB, symmetric memory 64.0 MiB)\n"));
    /* the estimate: tests/test_serve_graphs.c (34,607,616 B of activations at 512 tokens + 100 MiB) */
    assert_non_null(strstr(tab, "  CUDA graphs               133.0 MiB  (51 PIECEWISE (largest 512) + 51 FULL (largest 512): "
                                "vLLM's measure, estimated 133.0 MiB: activations at 512 tokens 33.0 MiB + cuBLAS workspace "
                                "0 B + 100 graphs x 1 MiB; taken off the pool, as vLLM does by default)\n"));
    const char *js = cli_output(HF "llama-3.1-8b.json --serve --gpu h100-80gb -p bf16 --tp 2 --gpus 2 -f json");
    assert_non_null(strstr(js, "\"at_snapshot\": {\"cuda_context\": 642777088, \"nccl\": 304087040, \"custom_all_reduce\": "
                               "25168384, \"symmetric_memory\": 67108864}"));
    assert_non_null(strstr(js, "\"cuda_graphs\": {\"piecewise\": 51, \"largest_piecewise\": 512, \"full\": 51, \"largest_full\": "
                               "512, \"subtracted_by_vllm\": true, \"why\": \"profiled\", \"floor\": 104857600, \"subtracted\": "
                               "139465216, \"estimate\": 139465216")); /* subtracted: vLLM's default, the estimate */
    assert_non_null(strstr(js, "\"enforce_eager\": false"));
    tab = cli_output(HF "llama-3.1-8b.json --serve --gpu h100-80gb -p bf16 --enforce-eager");
    assert_non_null(strstr(tab, "  CUDA graphs                    none  (enforce_eager: none captured)\n"));
    js = cli_output(HF "llama-3.1-8b.json --serve --gpu h100-80gb -p bf16 --cuda-graph-memory 512MiB -f json");
    assert_non_null(strstr(js, "\"cuda_graphs_counted\": true"));
    assert_non_null(strstr(js, "\"floor\": 104857600, \"subtracted\": 536870912, \"estimate\": 161485312"));
    tab = cli_output(HF "llama-3.1-8b.json --serve --gpu h100-80gb -p bf16 --cuda-graph-memory 512MiB");
    assert_non_null(strstr(tab, "  CUDA graphs               512.0 MiB  (51 PIECEWISE (largest 512) + 51 FULL (largest 512): "
                                "vLLM's measure as given, taken off the pool; estimated 154.0 MiB"));
    tab = cli_output(HF "qwen3-8b.json --serve --gpu h100-80gb");
    assert_non_null(strstr(tab, "the V2 model runner's profile_cudagraph_memory is 0; estimated "));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(graphs),
        cmocka_unit_test(snapshot_tp2),
        cmocka_unit_test(given_measure),
        cmocka_unit_test(report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
