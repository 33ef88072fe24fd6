/*
 * test_context.c — the CUDA context model (src/engine/context.c, issue 27).
 *
 * Expected values are derived by hand from src/engine/context.c's table, each with
 * the measurement it reproduces where there is one: the H200 run
 * (bench/accuracy/logs/gpu_h200_torch211.raw.json, torch 2.11.0+cu130, 132
 * SMs of 2048 threads), context = nvidia_smi_total - reserved of a case.
 * The constants: runtime 349 MiB, local memory SMs x threads x 1 KiB,
 * cuBLAS 63, cuDNN-or-flash kernels 9, training local memory SMs x threads
 * x 256 B, training kernels 7, eager + 362 (MiB).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "vramcalc/vramcalc.h"
#include "cli_spelt.h"

#define MiB (INT64_C(1) << 20)

static vc_options on(const char *gpu, vc_mode mode)
{
    vc_options o;
    vc_options_init(&o);
    o.device = gpu ? vc_gpu_find(gpu) : NULL;
    o.mode = mode;
    return o;
}

static int64_t ctx(const vc_options *o, unsigned uses, vc_context_parts *p)
{
    int64_t total = -1;
    vc_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_context_estimate(o, uses, p, &total, &err), VC_OK);
    assert_int_equal(total, p->runtime + p->local_memory + p->eager + p->cublas + p->kernels +
                                p->backward_local_memory + p->backward_kernels);
    return total;
}

/* The H200's contexts, one per kind of step the run measured. */
static void h200_measured(void **state)
{
    (void)state;
    vc_context_parts p;
    vc_options o = on("h200", VC_MODE_TRAIN);
    assert_non_null(o.device);
    /* conv + GEMM training: 349 + 132*2048*1 KiB (264 MiB) + 63 + 9 + 132*2048*256 B (66 MiB) + 7
     * = 758 MiB; resnet_b32_adam_fp32: 924,844,032 - 130,023,424 = 794,820,608 B = 758 MiB */
    assert_int_equal(ctx(&o, VC_USES_GEMM | VC_USES_CUDNN, &p), 758 * MiB);
    assert_int_equal(p.local_memory, INT64_C(132) * 2048 * 1024);
    assert_int_equal(p.backward_local_memory, 66 * MiB);
    assert_int_equal(p.measured, 1);
    /* conv + GEMM + flash training: the kernels part once, 758 MiB; vit_b1_adafactor_bf16 measured 758 */
    assert_int_equal(ctx(&o, VC_USES_GEMM | VC_USES_CUDNN | VC_USES_FLASH, &p), 758 * MiB);
    /* GEMM training: 349 + 264 + 63 + 66 = 742 MiB (mlp_b64_adamw_fp32: 742) */
    assert_int_equal(ctx(&o, VC_USES_GEMM, &p), 742 * MiB);
    /* conv-only training: 349 + 264 + 9 + 7 = 629 MiB (unet_b4_adam_fp32 measured 630: the fit's -1) */
    assert_int_equal(ctx(&o, VC_USES_CUDNN, &p), 629 * MiB);
    o.mode = VC_MODE_INFER;
    /* GEMM inference: 349 + 264 + 63 = 676 MiB (mlp_b16_infer_bf16: 676) */
    assert_int_equal(ctx(&o, VC_USES_GEMM, &p), 676 * MiB);
    assert_int_equal(p.backward_local_memory + p.backward_kernels, 0);
    /* GEMM + flash inference: 676 + 9 = 685 MiB (gpt_prenorm_b4_infer_bf16 measured 684) */
    assert_int_equal(ctx(&o, VC_USES_GEMM | VC_USES_FLASH, &p), 685 * MiB);
    /* conv-only inference: 349 + 264 + 9 = 622 MiB (unet_b8_infer_fp32: 622) */
    assert_int_equal(ctx(&o, VC_USES_CUDNN, &p), 622 * MiB);
}

/* Other devices: the local memory terms scale with SMs x resident threads (extrapolated). */
static void other_devices(void **state)
{
    (void)state;
    vc_context_parts p;
    /* A100 80GB, 108 SMs x 2048: 349 + 216 + 63 + 54 = 682 MiB for GEMM training */
    vc_options o = on("a100-80gb", VC_MODE_TRAIN);
    assert_int_equal(ctx(&o, VC_USES_GEMM, &p), 682 * MiB);
    assert_int_equal(p.measured, 0);
    /* no --gpu: the same default device as src/engine/scratch.c, an A100's 108 x 2048 */
    o = on(NULL, VC_MODE_TRAIN);
    assert_int_equal(ctx(&o, VC_USES_GEMM, &p), 682 * MiB);
    /* RTX 4090, 128 SMs x 1536: 128*1536*1 KiB = 192 MiB; inference with GEMMs 349 + 192 + 63 = 604 MiB */
    o = on("rtx4090", VC_MODE_INFER);
    assert_int_equal(ctx(&o, VC_USES_GEMM, &p), 604 * MiB);
    /* H100 PCIe, 114 SMs: sm90 but not the 132-SM part the constants were fitted on */
    o = on("h100-pcie", VC_MODE_INFER);
    assert_int_equal(ctx(&o, VC_USES_GEMM, &p), (349 + 63) * MiB + INT64_C(114) * 2048 * 1024);
    assert_int_equal(p.measured, 0);
    /* H100 SXM: the H200's 132 x 2048, so the H200's 676 MiB, but not measured */
    o = on("h100-80gb", VC_MODE_INFER);
    assert_int_equal(ctx(&o, VC_USES_GEMM, &p), 676 * MiB);
    assert_int_equal(p.measured, 0);
    /* AMD: not modelled, the earlier 500 MiB estimate */
    o = on("mi210", VC_MODE_TRAIN);
    assert_non_null(o.device);
    assert_int_equal(ctx(&o, VC_USES_GEMM, &p), 500 * MiB);
}

/* The stack: --cuda and --module-loading. */
static void stacks(void **state)
{
    (void)state;
    vc_context_parts p;
    vc_options o = on("h200", VC_MODE_TRAIN);
    /* eager: 349 + 264 + 362 + 66 = 1041 MiB for GEMM training, the library parts in the 362 */
    o.module_loading = VC_MODULE_LOADING_EAGER;
    assert_int_equal(ctx(&o, VC_USES_GEMM | VC_USES_CUDNN, &p), 1041 * MiB);
    assert_int_equal(p.eager, 362 * MiB);
    assert_int_equal(p.cublas + p.kernels + p.backward_kernels, 0);
    /* CUDA 11.2: no lazy loading, auto is eager */
    o.cuda_version = 1102;
    o.module_loading = VC_MODULE_LOADING_AUTO;
    assert_int_equal(ctx(&o, VC_USES_GEMM, &p), 1041 * MiB);
    /* CUDA 12.4 lazy: 13.0's constants (extrapolated) */
    o.cuda_version = 1204;
    assert_int_equal(ctx(&o, VC_USES_GEMM, &p), 742 * MiB);
    assert_int_equal(p.measured, 0);
    /* --context: the figure as given, no parts */
    o.context = 300 * MiB;
    int64_t t = -1;
    assert_int_equal(vc_context_estimate(&o, VC_USES_GEMM, &p, &t, NULL), VC_OK);
    assert_int_equal(t, 300 * MiB);
    assert_int_equal(p.given, 1);
    assert_int_equal(p.runtime + p.local_memory + p.cublas, 0);
}

static void errors(void **state)
{
    (void)state;
    vc_context_parts p;
    int64_t t;
    vc_error err;
    vc_options o = on("h200", VC_MODE_TRAIN);
    o.cuda_version = 1102;
    o.module_loading = VC_MODULE_LOADING_LAZY;
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_context_estimate(&o, 0, &p, &t, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--module-loading");
    assert_non_null(strstr(CLI_MSG(&err), "11.7"));
    o.cuda_version = 1400;
    o.module_loading = VC_MODULE_LOADING_AUTO;
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_context_estimate(&o, 0, &p, &t, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--cuda");
    /* names */
    char buf[16];
    assert_int_equal(vc_cuda_from_name("12.4"), 1204);
    assert_int_equal(vc_cuda_from_name("13.0"), 1300);
    assert_int_equal(vc_cuda_from_name("11.0"), 1100);
    assert_int_equal(vc_cuda_from_name("10.2"), -1);
    assert_int_equal(vc_cuda_from_name("12.10"), -1);
    assert_int_equal(vc_cuda_from_name("12"), -1);
    assert_int_equal(vc_cuda_from_name("12.4x"), -1);
    assert_int_equal(vc_cuda_from_name(" 12.4"), -1);
    assert_string_equal(vc_cuda_name(0, buf, sizeof buf), "13.0");
    assert_string_equal(vc_cuda_name(1204, buf, sizeof buf), "12.4");
    assert_int_equal(vc_module_loading_from_name("eager"), VC_MODULE_LOADING_EAGER);
    assert_int_equal(vc_module_loading_from_name("Lazy"), -1);
    assert_string_equal(vc_module_loading_name(VC_MODULE_LOADING_AUTO), "auto");
}

/* The engine: what a model's step runs sets the parts, in vc_estimate and the
 * estimator (--sweep, --max-batch) alike. */
static void engine(void **state)
{
    (void)state;
    const struct {
        const char *file;
        vc_mode mode;
        vc_precision prec;
        int64_t mib; /* by hand, and the H200 run's measurement of that case */
    } cases[] = {
        /* U-Net: convolutions, no Linear; 622 (unet_b8_infer_fp32: 622) */
        {"unet.json", VC_MODE_INFER, VC_PREC_FP32, 622},
        /* MLP: Linear only; training 742 (mlp_b64_adamw_fp32: 742) */
        {"mlp.json", VC_MODE_TRAIN, VC_PREC_FP32, 742},
        /* GPT pre-norm in bf16: flash attention and Linear; 349 + 264 + 63 + 9 + 66 + 7 = 758
         * (gpt_prenorm_b8_momentum_bf16: 758) */
        {"gpt_prenorm.json", VC_MODE_TRAIN, VC_PREC_BF16, 758},
        /* the same in fp32: memory-efficient attention, no part of its own; 742 (gpt_prenorm_b4_adamw_fp32: 742) */
        {"gpt_prenorm.json", VC_MODE_TRAIN, VC_PREC_FP32, 742},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/accuracy/models/%s", VC_TEST_DATA, cases[i].file);
        vc_model *m = NULL;
        vc_error err;
        assert_int_equal(vc_model_load_file(path, &m, &err), VC_OK);
        vc_options o = on("h200", cases[i].mode);
        o.hopper = 1;
        o.precision = cases[i].prec;
        o.batch = 4;
        if (cases[i].mode == VC_MODE_INFER) o.optim = VC_OPTIM_NONE;
        vc_result r, s;
        assert_int_equal(vc_estimate(m, &o, &r, &err), VC_OK);
        assert_int_equal(r.memory.cuda_context, cases[i].mib * MiB);
        assert_int_equal(r.memory.total, r.memory.reserved + r.memory.cuda_context);
        vc_estimator *e = NULL;
        assert_int_equal(vc_estimator_new(m, &o, 0, &e, &err), VC_OK);
        assert_int_equal(vc_estimator_run(e, 4, &s, &err), VC_OK);
        assert_int_equal(s.memory.cuda_context, r.memory.cuda_context);
        assert_memory_equal(&s.memory.context_parts, &r.memory.context_parts, sizeof r.memory.context_parts);
        vc_result_free(&s);
        vc_estimator_free(e);
        vc_result_free(&r);
        vc_model_free(m);
    }
}

/* NCCL's P2P-transport buffers (src/engine/nccl.c), by hand from NVIDIA/nccl@5067397c (2.30.7):
 * LL 8 x 512 x 8 x 16 = 524,288 B, LL128 120 x 640 x 8 x 8 = 4,915,200 B, SIMPLE 4,194,304 B,
 * ncclRecvMem / ncclSendMem 4096 B each, every connection rounded up to 2 MiB (CUDA_IPC_MIN). */
static void nccl_buffers(void **state)
{
    (void)state;
    int64_t recv, send, b;
    /* write mode: receive 4096 + 524,288 + 4,915,200 + 4,194,304 = 9,637,888 B (9.19 MiB) -> 10 MiB;
     * send 4096 B -> 2 MiB */
    vc_nccl_p2p_connection(0, &recv, &send);
    assert_int_equal(recv, 10 * MiB);
    assert_int_equal(send, 2 * MiB);
    /* read mode (NVLink, sm80): receive 4096 + 524,288 + 4,915,200 = 5,443,584 B -> 6 MiB;
     * send 4096 + 4,194,304 = 4,198,400 B -> 6 MiB */
    vc_nccl_p2p_connection(1, &recv, &send);
    assert_int_equal(recv, 6 * MiB);
    assert_int_equal(send, 6 * MiB);
    /* DDP's one communicator over 2 channels (a two-GPU PCIe ring): 2 x (10 + 2) = 24 MiB a GPU;
     * 16 channels and two communicators (a TP and a DP group): 2 x 16 x 12 = 384 MiB */
    assert_int_equal(vc_nccl_ring_bytes(2, 1, 0, &b, NULL), VC_OK);
    assert_int_equal(b, 24 * MiB);
    assert_int_equal(vc_nccl_ring_bytes(16, 2, 0, &b, NULL), VC_OK);
    assert_int_equal(b, 384 * MiB);
    vc_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_nccl_ring_bytes(65, 1, 0, &b, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "channels");
    assert_int_equal(vc_nccl_ring_bytes(64, INT64_MAX, 0, &b, NULL), VC_ERR_OVERFLOW);
}

/* One GPU's NCCL line (vc_nccl_per_gpu, the reports' "nccl buffers"), by hand from
 * NVIDIA/nccl@5067397c: every connection pair is a 10 MiB receive and a 2 MiB send (above);
 * a communicator per process group (ProcessGroupNCCL); its collective channels are
 * ncclTopoPostset's 2 x the ring graph's (connect.cc), P2P peers connect p2pnChannelsPerPeer
 * channels each (enqueue.cc "Mark channels that need pre-connect"; paths.cc
 * ncclTopoComputeP2pChannels), NVLS holds heads x nvlsChannels x 2 x 1 MiB (nvls.cc
 * ncclNvlsBufferSetup: NCCL_NVLS_CHUNKSIZE 128 KiB x NCCL_STEPS 8 = 1 MiB). The graphs'
 * channels are derived in src/engine/nccl.c's table (topos[]) from search.cc's speed arrays. */
static vc_nccl_info nccl_on(const char *gpu, vc_parallel par, int64_t gpus, int64_t tp, int64_t pp, int64_t ep,
                            int64_t replicate)
{
    vc_options o;
    vc_options_init(&o);
    o.device = gpu ? vc_gpu_find(gpu) : NULL;
    o.parallel = par;
    o.gpus = gpus;
    o.tp = tp;
    o.pp = pp;
    o.ep = ep;
    o.fsdp_replicate = replicate;
    vc_nccl_info n;
    vc_nccl_per_gpu(&o, &n);
    return n;
}

static vc_nccl_info nccl_of(vc_parallel par, int64_t gpus, int64_t tp, int64_t pp, int64_t ep, int64_t replicate)
{
    return nccl_on(NULL, par, gpus, tp, pp, ep, replicate);
}

static void nccl_per_gpu(void **state)
{
    (void)state;
    /* one GPU: no communicator */
    vc_nccl_info n = nccl_of(VC_PARALLEL_NONE, 1, 1, 1, 1, 0);
    assert_int_equal(n.communicators, 0);
    assert_int_equal(n.bytes, 0);
    /* DDP on 2 GPUs without --gpu: the context model's A100, an SXM4 board on NVSwitch. The ring
     * search at 40 GB/s finds 6 channels (12 NVLink x 20 GB/s = 240 = totalBw), DupChannels 12,
     * Postset 24: one ring of 24 channels x 12 MiB = 288 MiB; no NVLS before sm90 */
    n = nccl_of(VC_PARALLEL_DDP, 2, 1, 1, 1, 0);
    assert_int_equal(n.topology, VC_NCCL_TOPO_NVSWITCH);
    assert_int_equal(n.communicators, 1);
    assert_int_equal(n.channels, 24);
    assert_int_equal(n.nvls_bytes, 0);
    assert_int_equal(n.bytes, 288 * MiB);
    /* DDP on 8 H100 SXM: 18 NVLink x 20.6 = 370.8 GB/s; 6 channels at 60 GB/s, dup 12, Postset 24:
     * 288 MiB of ring; NVLS: 8 heads x 16 channels x 2 x 1 MiB = 256 MiB, and ncclNvlsSetup's
     * credits, 16 x 2 x 64 B x 8 heads = 16 KiB -> cuMem's 2 MiB: 258 MiB; 546 MiB */
    n = nccl_on("h100-80gb", VC_PARALLEL_DDP, 8, 1, 1, 1, 0);
    assert_int_equal(n.channels, 24);
    assert_int_equal(n.nvls_channels, 16);
    assert_int_equal(n.ring_bytes, 288 * MiB);
    assert_int_equal(n.nvls_bytes, 258 * MiB);
    assert_int_equal(n.nvls_credit_bytes, 2 * MiB);
    assert_int_equal(n.bytes, 546 * MiB);
    /* ... with ep 8 (NCCL issue #1685's all-to-all on 8 H100): p2pnChannels pow2Up(24) = 32,
     * per peer min(32, pow2Up(2 x 18 = 36) = 64) = 32 (the log: channels 00-31 per
     * peer); 7 peers x 32 x 12 MiB = 2688 MiB, + the DP ring and NVLS: 3234 MiB */
    n = nccl_on("h100-80gb", VC_PARALLEL_DDP, 8, 1, 1, 8, 0);
    assert_int_equal(n.communicators, 2);
    assert_int_equal(n.p2p_channels, 32);
    assert_int_equal(n.p2p_channels_per_peer, 32);
    assert_int_equal(n.p2p_bytes, 2688 * MiB);
    assert_int_equal(n.bytes, 3234 * MiB);
    /* Megatron tp 2, pp 4 on 16 B200: dp 2; the DP and TP rings, 32 channels each (8 at 90 GB/s of
     * 18 x 40.1 = 721.8, dup 16, Postset 32): 2 x 32 x 12 = 768 MiB; NVLS 24 channels (one node's
     * NVLS_NCHANNELS_SM100_NVL) x 2 heads x 2 MiB = 96 MiB per group, and its credits (24 x 2 x
     * 64 B x 2 heads = 6 KiB -> 2 MiB), 196; two nodes of 8 (stages
     * 0-1, 2-3): a middle stage has one neighbour on its node (32 channels x 12 MiB = 384 MiB) and
     * one across (net.cc's send/recv pools, 2 x 32 x 16 x 128 KiB = 128 MiB, tests/test_nccl.c):
     * 512 MiB; 1476 MiB, 3 communicators */
    n = nccl_on("b200", VC_PARALLEL_MEGATRON, 16, 2, 4, 1, 0);
    assert_int_equal(n.communicators, 3);
    assert_int_equal(n.p2p_peers, 2);
    assert_int_equal(n.channels, 32);
    assert_int_equal(n.nvls_bytes, 196 * MiB);
    assert_int_equal(n.bytes, 1476 * MiB);
    /* a pipeline stage's options (gpus / pp, pp 1, nccl_stages pp) give the same figure */
    vc_options o;
    vc_options_init(&o);
    o.device = vc_gpu_find("b200");
    o.parallel = VC_PARALLEL_MEGATRON;
    o.gpus = 4;
    o.tp = 2;
    o.nccl_stages = 4;
    vc_nccl_info st;
    vc_nccl_per_gpu(&o, &st);
    assert_int_equal(st.bytes, n.bytes);
    /* FSDP2 as HSDP (replicate 2 of 8) on RTX 4090s (PCIe Gen4: 2 channels at 12 GB/s, no dup,
     * Postset 4): the shard and replicate rings, 2 x 4 x 12 MiB = 96 MiB */
    n = nccl_on("rtx4090", VC_PARALLEL_FSDP2, 8, 1, 1, 1, 2);
    assert_int_equal(n.topology, VC_NCCL_TOPO_PCIE);
    assert_int_equal(n.ring_communicators, 2);
    assert_int_equal(n.channels, 4);
    assert_int_equal(n.p2p_channels_per_peer, 2);
    assert_int_equal(n.bytes, 96 * MiB);
    /* two H100 NVL on their bridges (12 x 20.6 = 247.2 GB/s): 4 channels at 60, dup 8, Postset 16 */
    n = nccl_on("h100-nvl", VC_PARALLEL_DDP, 2, 1, 1, 1, 0);
    assert_int_equal(n.topology, VC_NCCL_TOPO_NVLINK);
    assert_int_equal(n.bytes, 16 * 12 * MiB);
    /* NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS = 2 on two H100 SXM: a 2-channel ring (24 MiB) and
     * NVLS, which the channel variables do not change: 2 heads x 16 x 2 MiB = 64 MiB, + its
     * credits (16 x 2 x 64 B x 2 heads = 4 KiB -> 2 MiB) */
    vc_options_init(&o);
    o.device = vc_gpu_find("h100-80gb");
    o.parallel = VC_PARALLEL_DDP;
    o.gpus = 2;
    o.nccl_channels = 2;
    vc_nccl_per_gpu(&o, &n);
    assert_int_equal(n.p2p_channels, 2);
    assert_int_equal(n.bytes, 90 * MiB);
    /* a topology with no row for the card */
    o.device = vc_gpu_find("t4");
    o.nccl_topology = VC_NCCL_TOPO_NVSWITCH;
    o.nccl_channels = 0;
    vc_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_nccl_check(&o, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--nccl-topology");
    o.nccl_topology = VC_NCCL_TOPO_PCIE;
    assert_int_equal(vc_nccl_check(&o, &err), VC_OK);
    /* an AMD card runs RCCL: only the PCIe row stands for it */
    o.device = vc_gpu_find("mi300x");
    o.nccl_topology = VC_NCCL_TOPO_NVSWITCH;
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_nccl_check(&o, &err), VC_ERR_USAGE);
    assert_non_null(strstr(CLI_MSG(&err), "RCCL"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(h200_measured), cmocka_unit_test(other_devices), cmocka_unit_test(stacks),
        cmocka_unit_test(errors), cmocka_unit_test(engine), cmocka_unit_test(nccl_buffers),
        cmocka_unit_test(nccl_per_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
