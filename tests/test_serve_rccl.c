/*
 * test_serve_rccl.c — vLLM's tensor-parallel group on AMD cards under --serve --tp N (issue 27;
 * src/engine/serve.c "vLLM's TP group on AMD cards", src/engine/serve_nccl.c), each figure by hand:
 *  - vllm-project/vllm @ 089eca13 cuda_communicator.py CudaCommunicator.__init__ (the ROCm platform's
 *    communicator, vllm/platforms/rocm.py @ e2a00c7b): PyNcclCommunicator over RCCL before the
 *    snapshot; no SymmMemCommunicator (is_cuda() only); CustomAllreduce on the MI300 series only
 *    (RocmPlatform.use_custom_allreduce: gfx94/gfx95; vllm/config/parallel.py @ 00193b82
 *    ParallelConfig._verify_args), max_size 8 MiB on ROCm (custom_all_reduce.py @ 00d618aa: the
 *    CUDA-only max-size table), meta_size 2,560 + 8 MiB, 8 MiB, 8 MiB of rank_data = 25,168,384 B;
 *    QuickAllReduce disabled (VLLM_ROCM_QUICK_REDUCE_QUANTIZATION "NONE" by default);
 *  - the profiling run's all-reduce, 8192 tokens x 4096 x 2 B = 64 MiB >= 8 MiB: RCCL's, whose rings
 *    and trees are connected at init (ROCm/rccl@0cbce2a7): nothing after the snapshot;
 *  - the logits' all-gather: torch.distributed's own RCCL communicator, made in the profiling run: its
 *    rings and trees (tests/test_rccl.c: 32 x 8 = 256 MiB on 2 MI300X; 56 x 8 + 448 of trees = 896
 *    MiB on 8) in the non-torch increase, which the KV pool loses;
 *  - vllm/v1/worker/gpu_worker.py determine_available_memory: the pool = requested - the profiling
 *    run's peak - the non-torch increase (no CUDA-graph estimate off CUDA: serve.c vllm_graphs).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "vramcalc/vramcalc.h"

#define HF VC_TEST_DATA "/hf/"
#define MIB(n) ((int64_t)(n) << 20)
#define CA (2560 + MIB(8) + MIB(8) + MIB(8)) /* the custom all-reduce on ROCm: 25,168,384 B */

static vc_model *llama;

static int setup(void **state)
{
    (void)state;
    vc_error err;
    if (vc_model_load_file(HF "llama-3.1-8b.json", &llama, &err)) return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    vc_model_free(llama);
    return 0;
}

static vc_serve_result serve(const char *gpu, int64_t tp, vc_nccl_topology topo)
{
    vc_options o;
    vc_options_init(&o);
    o.precision = VC_PREC_BF16;
    o.prompt = 1024;
    o.new_tokens = 256;
    o.tp = tp;
    o.gpus = tp;
    o.nccl_topology = topo;
    vc_serve_options so;
    vc_serve_options_init(&so);
    vc_gpu_spec g;
    vc_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_gpu_parse(gpu, &g, &err), VC_OK);
    vc_serve_result r;
    if (vc_serve(llama, &o, &so, &g, &r, &err)) fail_msg("serve %s --tp %lld: %s", gpu, (long long)tp, err.msg);
    return r;
}

/* the pool and the blocks follow from the non-torch increase: requested - peak - non-torch */
static void pool_of(const vc_serve_result *r, int64_t non_torch)
{
    assert_int_equal(r->non_torch_nccl, 0); /* RCCL connected at init, no NVLS */
    assert_int_equal(r->non_torch, non_torch);
    assert_int_equal(r->graphs_subtracted, 0);
    assert_int_equal(r->kv_cache, r->requested - r->profile_peak - non_torch);
    assert_int_equal(r->blocks, r->kv_cache / r->page_bytes);
}

/* --serve --tp 2 on 2 MI300X: RCCL 32 channels x 8 MiB = 256 MiB at the snapshot (the 2-rank tree adds
 * nothing), the custom all-reduce 25,168,384 B; the logits' communicator 256 MiB more in the non-torch
 * increase. Pages 2 x 16 x (8 / 2) x 128 x 2 B x 32 = 1 MiB: 256 blocks fewer than without it. The
 * pool: 185,527,487,692 (0.9 x 206,141,652,992) - 8,852,152,832 (the peak) - 268,435,456 =
 * 176,406,899,404 B: 168,234 blocks */
static void tp2_mi300x(void **state)
{
    (void)state;
    vc_serve_result r = serve("mi300x", 2, VC_NCCL_TOPO_AUTO);
    assert_int_equal(r.max_num_batched_tokens, 8192); /* the all-reduce 8192 x 4096 x 2 B = 64 MiB: RCCL's */
    assert_int_equal(r.snapshot_nccl, MIB(256));
    assert_int_equal(r.snapshot_nvls_credits, 0);
    assert_int_equal(r.snapshot_custom_ar, CA);
    assert_int_equal(r.snapshot_symm_mem, 0);
    assert_int_equal(r.non_torch_logits_nccl, MIB(256));
    assert_int_equal(r.page_bytes, MIB(1));
    assert_int_equal(r.requested, INT64_C(185527487692));
    assert_int_equal(r.profile_peak, INT64_C(8852152832));
    pool_of(&r, MIB(256));
    assert_int_equal(r.blocks, 168234);
}

/* --serve --tp 8 on 8 MI300X: RCCL 56 channels x 8 MiB + trees 448 MiB = 896 MiB at the snapshot, the
 * custom all-reduce (8 ranks, all one xGMI hop apart) 25,168,384 B; the logits' communicator 896 MiB.
 * Pages 2 x 16 x 1 x 128 x 2 x 32 = 256 KiB: 3,584 blocks fewer */
static void tp8_mi300x(void **state)
{
    (void)state;
    vc_serve_result r = serve("mi300x", 8, VC_NCCL_TOPO_AUTO);
    assert_int_equal(r.snapshot_nccl, MIB(896));
    assert_int_equal(r.snapshot_custom_ar, CA);
    assert_int_equal(r.snapshot_symm_mem, 0);
    assert_int_equal(r.non_torch_logits_nccl, MIB(896));
    assert_int_equal(r.page_bytes, 262144);
    pool_of(&r, MIB(896));
    /* (kv_cache + 896 MiB) / 256 KiB: the pool the communicator takes 3,584 blocks from */
    assert_int_equal((r.kv_cache + MIB(896)) / r.page_bytes - r.blocks, 3584);
}

/* 4 MI300X: 24 x 8 = 192 MiB (the 4-rank trees not counted, nccl.c); the custom all-reduce (fully
 * connected). (6 ranks do not divide Llama's 32 heads: refused.) */
static void tp4_mi300x(void **state)
{
    (void)state;
    vc_serve_result r = serve("mi300x", 4, VC_NCCL_TOPO_AUTO);
    assert_int_equal(r.snapshot_nccl, MIB(192));
    assert_int_equal(r.snapshot_custom_ar, CA);
    assert_int_equal(r.non_torch_logits_nccl, MIB(192));
}

/* --nccl-topology pcie on 8 MI300X: not fully connected, no custom all-reduce above 2 ranks; RCCL the
 * pcie row's 32 MiB. At 2 ranks the custom all-reduce needs no full connection: kept */
static void pcie_mi300x(void **state)
{
    (void)state;
    vc_serve_result r = serve("mi300x", 8, VC_NCCL_TOPO_PCIE);
    assert_int_equal(r.snapshot_nccl, MIB(32));
    assert_int_equal(r.snapshot_custom_ar, 0);
    assert_int_equal(r.non_torch_logits_nccl, MIB(32));
    r = serve("mi300x", 2, VC_NCCL_TOPO_PCIE);
    assert_int_equal(r.snapshot_custom_ar, CA);
}

/* MI210 and MI250X (gfx90a): no custom all-reduce (use_custom_allreduce: the MI300 series only); RCCL
 * the pcie row, 4 x 8 = 32 MiB, at the snapshot and for the logits' communicator; the all-reduce (2048
 * tokens on a 64 GB card, 16 MiB) RCCL's, connected */
static void gfx90a(void **state)
{
    (void)state;
    const char *gpus[2] = {"mi210", "mi250x"};
    for (int i = 0; i < 2; i++) {
        vc_serve_result r = serve(gpus[i], 2, VC_NCCL_TOPO_AUTO);
        assert_int_equal(r.max_num_batched_tokens, 2048);
        assert_int_equal(r.snapshot_nccl, MIB(32));
        assert_int_equal(r.snapshot_custom_ar, 0);
        assert_int_equal(r.non_torch_logits_nccl, MIB(32));
        pool_of(&r, MIB(32));
    }
}

/* --tp 1: no group, nothing */
static void tp1_mi300x(void **state)
{
    (void)state;
    vc_serve_result r = serve("mi300x", 1, VC_NCCL_TOPO_AUTO);
    assert_int_equal(r.snapshot_nccl + r.snapshot_custom_ar + r.non_torch_logits_nccl + r.non_torch, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tp2_mi300x),  cmocka_unit_test(tp8_mi300x), cmocka_unit_test(tp4_mi300x),
        cmocka_unit_test(pcie_mi300x), cmocka_unit_test(gfx90a),     cmocka_unit_test(tp1_mi300x),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
