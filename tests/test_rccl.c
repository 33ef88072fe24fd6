/*
 * test_rccl.c — RCCL's buffers on AMD GPUs (src/engine/nccl.c "RCCL", issue 27),
 * each figure by hand from ROCm/rccl@0cbce2a7571c907554199fad7e905f16ec0a565c:
 *  - a P2P connection (src/transport/p2p.cc p2pRecvSetup / p2pSendSetup, write
 *    mode, ALIGN_SIZE to CUDA_IPC_MIN 2 MiB): a receive ncclRecvMem 4096 + LL
 *    8 x 256 x 8 x 16 = 262,144 + LL128 28 x 256 x 8 x 8 = 458,752 + SIMPLE
 *    4,194,304 = 4,919,296 B -> 6 MiB, a send 4096 B -> 2 MiB: 8 MiB a channel
 *    (src/include/device.h NCCL_MAX_NTHREADS 256, src/init.cc computeBuffSizes);
 *  - MI300X channels on one node (connect.cc ncclTopoPostset after init.cc's
 *    ring multiplier nc): 2 ranks 2 graph channels x 16 = 32, 4 ranks 6 x 4 =
 *    24 (the source's comments: "NCCL_MIN_NCHANNELS=32", "=24"), 8 ranks
 *    rome_model_79's 28 rings duplicated, 56;
 *  - trees, connected at init beside the rings (init.cc "Connect Trees"): on
 *    8 ranks a chain along each model ring; GPUs 1, 2 and 3 are never first or
 *    last in rome_model_79's 14 distinct rings (firsts 0, 7, 6, 5, 4; lasts 7,
 *    6, 5, 4, 0), so on every channel they add a send to the chain's previous
 *    GPU and a receive from its next: 56 x (6 + 2) = 448 MiB; 2 ranks: none
 *    (the ring already receives from and sends to the one peer); 4 ranks: not
 *    counted (the tree search's orders are not replicated);
 *  - P2P (paths.cc ncclTopoComputeP2pChannels): ncclTopoGetNchannels 4 x
 *    (48 / 48) on gfx94 xGMI, doubled on one gfx94 node: 8 channels a peer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "vramcalc/vramcalc.h"

#define MiB (INT64_C(1) << 20)

static vc_nccl_info info(const char *gpu, vc_parallel par, int64_t gpus, int64_t ep)
{
    vc_options o;
    vc_options_init(&o);
    o.device = gpu ? vc_gpu_find(gpu) : NULL;
    o.parallel = par;
    o.gpus = gpus;
    o.ep = ep;
    vc_nccl_info n;
    vc_nccl_per_gpu(&o, &n);
    return n;
}

/* DDP on 8 MI300X: one communicator of 8, 56 channels x 8 MiB = 448 MiB of rings, 448 MiB of
 * trees on the busiest GPU: 896 MiB */
static void ddp_8_mi300x(void **state)
{
    (void)state;
    vc_nccl_info n = info("mi300x", VC_PARALLEL_DDP, 8, 1);
    assert_int_equal(n.topology, VC_NCCL_TOPO_XGMI); /* the report's name, never an option */
    assert_string_equal(vc_nccl_topology_name(n.topology), "xgmi");
    assert_int_equal(vc_nccl_topology_from_name("xgmi"), -1);
    assert_int_equal(n.ring_communicators, 1);
    assert_int_equal(n.channels, 56);
    assert_int_equal(n.p2p_channels, 64); /* pow2Up(56), min 64 (4 x CHANNEL_LIMIT) */
    assert_int_equal(n.ring_bytes, (448 + 448) * MiB);
    assert_int_equal(n.nvls_bytes, 0); /* no NVSwitch: no NVLS graph */
    assert_int_equal(n.bytes, 896 * MiB);
}

/* FSDP on 2, 4 and 8 MI300X: 32 x 8 = 256 MiB (trees: nothing new), 24 x 8 = 192 MiB (trees
 * not counted), 896 MiB as DDP's (the one communicator alike) */
static void fsdp_2_4_8_mi300x(void **state)
{
    (void)state;
    const int64_t gpus[3] = {2, 4, 8}, ch[3] = {32, 24, 56}, mib[3] = {256, 192, 896};
    for (int i = 0; i < 3; i++) {
        vc_nccl_info n = info("mi300x", VC_PARALLEL_FSDP, gpus[i], 1);
        assert_int_equal(n.channels, ch[i]);
        assert_int_equal(n.bytes, mib[i] * MiB);
    }
}

/* Mixtral's all-to-all over 8 MI300X (--ep 8) beside DDP's ring: 7 peers x 8 channels x 8 MiB
 * = 448 MiB of P2P; 896 + 448 = 1344 MiB */
static void ep_8_mi300x(void **state)
{
    (void)state;
    vc_nccl_info n = info("mi300x", VC_PARALLEL_DDP, 8, 8);
    assert_int_equal(n.p2p_peers, 7);
    assert_int_equal(n.p2p_channels_per_peer, 8);
    assert_int_equal(n.p2p_bytes, 448 * MiB);
    assert_int_equal(n.bytes, 1344 * MiB);
}

/* What stays NCCL's pcie row, at RCCL's 8 MiB a channel: MI210 (its search not replicated), a
 * pinned --nccl-topology pcie, --nccl-channels, a node of 6 (no derived count), 2 nodes */
static void other_amd_layouts(void **state)
{
    (void)state;
    /* MI210, DDP on 2: the pcie row's 4 channels x 8 MiB = 32 MiB */
    vc_nccl_info n = info("mi210", VC_PARALLEL_DDP, 2, 1);
    assert_int_equal(n.channels, 4);
    assert_int_equal(n.bytes, 32 * MiB);
    /* MI300X with --nccl-topology pcie: the pcie row, 32 MiB */
    vc_options o;
    vc_options_init(&o);
    o.device = vc_gpu_find("mi300x");
    o.parallel = VC_PARALLEL_DDP;
    o.gpus = 8;
    o.nccl_topology = VC_NCCL_TOPO_PCIE;
    vc_nccl_per_gpu(&o, &n);
    assert_int_equal(n.bytes, 32 * MiB);
    /* --nccl-channels 28 (NCCL_MIN/MAX_NCHANNELS) on 8 MI300X: the model's 28 rings once, rings
     * 28 x 8 = 224 MiB, trees 28 x 8 = 224 MiB */
    o.nccl_topology = VC_NCCL_TOPO_AUTO;
    o.nccl_channels = 28;
    vc_nccl_per_gpu(&o, &n);
    assert_int_equal(n.channels, 28);
    assert_int_equal(n.bytes, 448 * MiB);
    /* DDP on 6 MI300X: the pcie row, 4 x 8 = 32 MiB */
    n = info("mi300x", VC_PARALLEL_DDP, 6, 1);
    assert_int_equal(n.bytes, 32 * MiB);
    /* DDP on 16 MI300X, 2 nodes: the pcie row's ring, 32 MiB, and its trees across nodes, 32 MiB
     * (tests/test_nccl_tree.c's construction at 8 MiB a connection pair); no GDR: nothing of the
     * network's on the GPU */
    n = info("mi300x", VC_PARALLEL_DDP, 16, 1);
    assert_int_equal(n.nodes, 2);
    assert_int_equal(n.topology, VC_NCCL_TOPO_PCIE);
    assert_int_equal(n.net_bytes, 0);
    assert_int_equal(n.bytes, 64 * MiB);
}

/* NVIDIA unchanged: DDP on 8 H100 SXM, 24 x 12 = 288 MiB of rings + NVLS 8 x 16 x 2 x 1 MiB = 256
 * + 2 MiB credits (docs/context.md "NCCL") */
static void nvidia_unchanged(void **state)
{
    (void)state;
    vc_nccl_info n = info("h100-80gb", VC_PARALLEL_DDP, 8, 1);
    assert_int_equal(n.channels, 24);
    assert_int_equal(n.bytes, (288 + 256 + 2) * MiB);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ddp_8_mi300x),      cmocka_unit_test(fsdp_2_4_8_mi300x), cmocka_unit_test(ep_8_mi300x),
        cmocka_unit_test(other_amd_layouts), cmocka_unit_test(nvidia_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
