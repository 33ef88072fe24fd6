/* --serve's memory outside PyTorch's allocator (issue 27 item 3; src/engine/serve.c
 * vllm_non_torch; docs/inference.md "Serving capacity"). Each expected value is vLLM's
 * arithmetic applied by hand:
 *   vllm-project/vllm @ 35d5cda1 vllm/v1/worker/gpu_worker.py determine_available_memory:
 *     available = requested_memory - non_kv_cache_memory;
 *   @ a6d5c390 vllm/utils/mem_utils.py memory_profiling:
 *     non_kv_cache_memory = weights_memory + torch_peak_increase + non_torch_increase,
 *     non_torch_increase = after_profile.non_torch_memory - init_snapshot.non_torch_memory;
 *   Worker.init_device takes init_snapshot after init_worker_distributed_environment (NCCL and
 *   the custom all-reduce are in it), and capture_model runs after the pool is allocated.
 * So the increase is what the first forward loads lazily: src/engine/context.c's cuBLAS part
 * (63 MiB, a GEMM runs) and its kernels part (9 MiB, the attention backend's kernels), and
 * nothing under eager module loading (every module before the snapshot). */
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

static void serve_on(const vc_model *m, const vc_options *o, const char *gpu, vc_serve_result *r)
{
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_gpu_spec g;
    vc_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_gpu_parse(gpu, &g, &err), VC_OK);
    if (vc_serve(m, o, &so, &g, r, &err)) fail_msg("serve on %s: %s", gpu, err.msg);
}

/* Llama-3.1-8B in bf16 on an H100: GEMMs and attention, lazy loading (CUDA 13.0, the default) */
static void non_torch_lazy(void **state)
{
    (void)state;
    vc_model *m = load_file(HF "llama-3.1-8b.json");
    vc_options o;
    vc_options_init(&o);
    o.precision = VC_PREC_BF16;
    o.prompt = 1024;
    o.new_tokens = 1024;
    vc_serve_result r;
    serve_on(m, &o, "h100-80gb", &r);
    assert_int_equal(r.non_torch_cublas, MIB(63));
    assert_int_equal(r.non_torch_kernels, MIB(9));
    assert_int_equal(r.non_torch, INT64_C(75497472)); /* 72 MiB */
    /* requested - (weights + torch_peak_increase) - non_torch_increase - the CUDA graphs' estimate (vLLM's default,
     * tests/test_serve_graphs.c); profile_peak holds the first two */
    assert_int_equal(r.requested, (int64_t)(0.9 * (double)MIB(81559)));
    assert_int_equal(r.graphs_subtracted, r.graphs_estimate);
    assert_int_equal(r.kv_cache, r.requested - r.profile_peak - INT64_C(75497472) - r.graphs_estimate);
    assert_int_equal(r.blocks, r.kv_cache / (INT64_C(2) << 20)); /* 2 MiB blocks (test_generate.c serve) */

    /* eager loading: every module is loaded before vLLM's snapshot, so no increase: the pool grows by
     * exactly the 72 MiB, the profiling run being the same */
    vc_serve_result e;
    o.module_loading = VC_MODULE_LOADING_EAGER;
    serve_on(m, &o, "h100-80gb", &e);
    assert_int_equal(e.non_torch, 0);
    assert_int_equal(e.profile_peak, r.profile_peak);
    assert_int_equal(e.kv_cache - r.kv_cache, INT64_C(75497472));
    /* CUDA 11.2: auto is eager before 11.7 (context.c) */
    o.module_loading = VC_MODULE_LOADING_AUTO;
    o.cuda_version = 1102;
    serve_on(m, &o, "h100-80gb", &e);
    assert_int_equal(e.non_torch, 0);
    /* 12.4, lazy: the same parts as 13.0 (context.c's lazy row from 11.7) */
    o.cuda_version = 1204;
    serve_on(m, &o, "h100-80gb", &e);
    assert_int_equal(e.non_torch, INT64_C(75497472));
    /* an AMD card: the context is not modelled there (context.c's fixed estimate, no library part) */
    o.cuda_version = 0;
    serve_on(m, &o, "mi300x", &e);
    assert_int_equal(e.non_torch, 0);
    assert_int_equal(e.graphs_subtracted, 0); /* nor the graphs: vLLM profiles them on CUDA only */
    assert_int_equal(e.kv_cache, e.requested - e.profile_peak);
    /* a stack the context model refuses is refused here too, naming the option */
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_gpu_spec g;
    vc_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_gpu_parse("h100-80gb", &g, &err), VC_OK);
    o.cuda_version = 1000;
    assert_int_equal(vc_serve(m, &o, &so, &g, &e, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--cuda");
    vc_model_free(m);
}

/* the report's lines and JSON fields; with tensor parallelism NCCL's ring and the custom all-reduce are
 * set up before the snapshot (the table says they are not subtracted), and the profiling run's
 * all-reduce (8192 tokens x 4096 x 2 B = 64 MiB, at neither all-reduce's size limit: 8 MiB and 64 MiB)
 * runs NCCL's NVLS, whose buffers (2 heads x 16 channels x 2 x 1 MiB = 64 MiB) join the increase, and
 * so does the logits all-gather's communicator (torch.distributed's: 2 MiB of NVLS credits + the same
 * 64 MiB of buffers, tests/test_serve_logits.c): 72 + 64 + 66 = 202 MiB (tests/test_serve_nongraph.c
 * snapshot_tp2) */
static void report(void **state)
{
    (void)state;
    const char *tab = cli_output(VC_TEST_DATA "/hf/llama-3.1-8b.json --serve --gpu h100-80gb -p bf16 --tp 2 --gpus 2");
    assert_non_null(strstr(tab, "  non-torch increase        202.0 MiB  (cuBLAS, attention kernels and NCCL's buffers of the "
                                "profiling run's all-reduce and logits all-gather)"));
    /* held at the snapshot, not subtracted; the graphs vLLM measures (test_serve_nongraph derives both) */
    assert_non_null(strstr(tab, "  NCCL + all-reduce         378.0 MiB  (held at vLLM's snapshot, not subtracted"));
    /* the line shows the estimate: 100 MiB of floor + 33.0 MiB of activations (tests/test_serve_graphs.c), taken
     * off the pool by default as vLLM does */
    assert_non_null(strstr(tab, "  CUDA graphs               133.0 MiB  (51 PIECEWISE (largest 512) + 51 FULL (largest 512)"));
    assert_non_null(strstr(tab, "taken off the pool, as vLLM does by default)"));
    const char *js = cli_output(VC_TEST_DATA "/hf/llama-3.1-8b.json --serve --gpu h100-80gb -p bf16 --tp 2 --gpus 2 -f json");
    assert_non_null(strstr(js, "\"non_torch_increase\": 211812352, \"non_torch_parts\": {\"cublas\": 66060288, "
                               "\"attention_kernels\": 9437184, \"nccl_nvls\": 67108864, \"nccl_logits_gather\": 69206016}, "
                               "\"nccl_counted\": true, "
                               "\"cuda_graphs_counted\": true"));
    /* --cuda and --module-loading set the stack with --serve: eager (CUDA 11.2's auto) loads every module
     * before the snapshot */
    js = cli_output(VC_TEST_DATA "/hf/llama-3.1-8b.json --serve --gpu h100-80gb -p bf16 --cuda 11.2 -f json");
    assert_non_null(strstr(js, "\"non_torch_increase\": 0, \"non_torch_parts\": {\"cublas\": 0, \"attention_kernels\": 0}"));
    tab = cli_output(VC_TEST_DATA "/hf/llama-3.1-8b.json --serve --gpu h100-80gb -p bf16 --module-loading eager");
    assert_non_null(strstr(tab, "  non-torch increase              0 B  (eager loading: loaded before vLLM's snapshot)"));
    tab = cli_output(VC_TEST_DATA "/hf/llama-3.1-8b.json --serve --gpu mi300x");
    assert_non_null(strstr(tab, "  non-torch increase              0 B  (not modelled on this GPU's vendor)"));
    /* one GPU: no NCCL line */
    tab = cli_output(VC_TEST_DATA "/hf/llama-3.1-8b.json --serve --gpu h100-80gb -p bf16");
    assert_null(strstr(tab, "NCCL"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(non_torch_lazy),
        cmocka_unit_test(report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
