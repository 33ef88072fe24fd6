/*
 * test_nccl.c — NCCL's buffers across nodes and at the pipeline's ends
 * (src/engine/nccl.c vc_nccl_per_gpu, issue 27 item 3), each figure by hand
 * from the NCCL source at NVIDIA/nccl@5067397c2676d5aed50042fc39e5c8ee96eb0027:
 *  - a P2P connection pair on one node: receive 4096 + LL 524,288 + LL128
 *    4,915,200 + SIMPLE 4,194,304 = 9,637,888 B -> 10 MiB, send 4096 B -> 2 MiB
 *    (src/transport/p2p.cc p2pRecvSetup / p2pSendSetup, cuMem's 2 MiB), 12 MiB;
 *  - a network receive with GPU Direct RDMA (src/transport/net.cc
 *    recvProxyConnect: every protocol on the device): 9,633,792 B -> 10 MiB;
 *    a network send (sendProxyConnect: "p != NCCL_PROTO_LL && useGdr"): LL128 +
 *    SIMPLE = 9,109,504 B, ALIGN_SIZE to CUDA_IPC_MIN -> 10 MiB; without GDR both
 *    in host memory, 0 on the GPU;
 *  - send/recv across nodes: one shared pool per direction and communicator
 *    (net.cc sharedNetBuffersInit): p2pnChannels x NCCL_SHARED_STEPS 16 x
 *    p2pChunkSize (init.cc computeBuffSizes: nNodes > 1, NCCL_P2P_NET_CHUNKSIZE
 *    128 KiB); 32 channels: 64 MiB a direction, 128 MiB;
 *  - the channels: nccl.c's topos[] (A100 / H100 NVSwitch 24 collective channels,
 *    p2pnChannels 32, 32 per peer; PCIe Gen4 4 channels, 2 per peer).
 * A node holds --gpus-per-node consecutive ranks (default 8), Megatron's rank
 * order tp, dp, pp (megatron/core/parallel_state.py).
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

static vc_options opts(const char *gpu, vc_parallel par, int64_t gpus, int64_t tp, int64_t pp, int64_t ep)
{
    vc_options o;
    vc_options_init(&o);
    o.device = gpu ? vc_gpu_find(gpu) : NULL;
    o.parallel = par;
    o.gpus = gpus;
    o.tp = tp;
    o.pp = pp;
    o.ep = ep;
    return o;
}

static vc_nccl_info info(const vc_options *o)
{
    vc_nccl_info n;
    vc_nccl_per_gpu(o, &n);
    return n;
}

/* rings spanning nodes */
static void rings_across_nodes(void **state)
{
    (void)state;
    /* DDP on 16 A100 SXM4 (no --gpu: the A100), 2 nodes of 8: the ring's 24 channels each enter
     * a node at one GPU (connect.cc ringRecv = ringIntra[0]) and leave from another (ringSend =
     * ringIntra[7]), spread over the 8: a GPU holds 24 / 8 = 3 network receives (10 MiB, in place
     * of a P2P receive's 10 MiB) and 3 network sends (10 MiB, in place of a P2P send's 2 MiB):
     * 24 x 12 + 3 x (10 - 10) + 3 x (10 - 2) = 312 MiB, of it the network's 3 x 20 = 60 MiB;
     * DDP's all-reduce across the nodes adds its trees' 332 MiB, 80 of them the network's
     * (tests/test_nccl_tree.c) */
    vc_options o = opts(NULL, VC_PARALLEL_DDP, 16, 1, 1, 1);
    vc_nccl_info n = info(&o);
    assert_int_equal(n.nodes, 2);
    assert_int_equal(n.channels, 24);
    assert_int_equal(n.ring_bytes, 312 * MiB);
    assert_int_equal(n.net_bytes, (60 + 80) * MiB);
    assert_int_equal(n.bytes, (312 + 332) * MiB);
    /* the same 16 GPUs as one node (--gpus-per-node 16): 24 P2P pairs, 288 MiB, no network */
    o.gpus_per_node = 16;
    n = info(&o);
    assert_int_equal(n.nodes, 1);
    assert_int_equal(n.net_bytes, 0);
    assert_int_equal(n.bytes, 288 * MiB);
    /* Megatron tp 8, dp 2 on 16 H100 SXM: the DP group's ranks lie 8 apart, one on each node:
     * all 24 channels are network receive + send, 24 x 20 = 480 MiB; the TP ring on the node,
     * 24 x 12 = 288 MiB; NVLS for TP (8 heads x 16 channels x 2 x 1 MiB = 256 MiB, + 2 MiB of
     * credits), none for a group with one GPU on the node; the DP group's trees between two nodes
     * of one GPU each add nothing (the ring already receives from and sends to the one other
     * node on every channel: tests/test_nccl_tree.c): 1026 MiB */
    o = opts("h100-80gb", VC_PARALLEL_MEGATRON, 16, 8, 1, 1);
    n = info(&o);
    assert_int_equal(n.ring_communicators, 2);
    assert_int_equal(n.ring_bytes, (480 + 288) * MiB);
    assert_int_equal(n.net_bytes, 480 * MiB);
    assert_int_equal(n.nvls_bytes, 258 * MiB);
    assert_int_equal(n.tree_communicators, 1);
    assert_int_equal(n.tree_bytes, 0);
    assert_int_equal(n.bytes, 1026 * MiB);
    /* DDP on 16 RTX 4090 (PCIe: no GPU Direct RDMA, the network's buffers in host memory): 4
     * channels over 8 GPUs, the busiest GPU one with no network end (4 / 8 = 0 of each kind):
     * 4 x 12 = 48 MiB; its trees 48 MiB more (tests/test_nccl_tree.c), none of it the network's */
    o = opts("rtx4090", VC_PARALLEL_DDP, 16, 1, 1, 1);
    n = info(&o);
    assert_int_equal(n.nodes, 2);
    assert_int_equal(n.net_bytes, 0);
    assert_int_equal(n.ring_bytes, 48 * MiB);
    assert_int_equal(n.bytes, (48 + 48) * MiB);
}

/* pipeline stages: ends with one neighbour; neighbours on other nodes */
static void pipeline_stages(void **state)
{
    (void)state;
    /* pp 4 on 4 A100: a neighbour is 32 channels x 12 MiB = 384 MiB; the first and last stage
     * have one, the middle two 768; nccl_stage 0 (the layout's options): the busiest, 768 */
    vc_options o = opts(NULL, VC_PARALLEL_NONE, 4, 1, 4, 1);
    int64_t want[5] = {768, 384, 768, 768, 384};
    for (int s = 0; s <= 4; s++) {
        o.nccl_stage = s;
        vc_nccl_info n = info(&o);
        assert_int_equal(n.p2p_peers, s == 1 || s == 4 ? 1 : 2);
        assert_int_equal(n.bytes, want[s] * MiB);
    }
    /* pp 4, dp 2 on 8 H100, nodes of 4: stages 0-1 on node 0, 2-3 on node 1. Stage 1 (nccl_stage
     * 2): stage 0 on its node (384 MiB), stage 2 across (the pools, 2 x 32 x 16 x 128 KiB = 128
     * MiB), 512; stage 0 only its node's neighbour, 384. The DP ring (2 GPUs of the node, 288 MiB)
     * and its NVLS (2 heads x 16 x 2 MiB = 64 MiB, + 2 MiB of credits) on every stage */
    o = opts("h100-80gb", VC_PARALLEL_DDP, 8, 1, 4, 1);
    o.gpus_per_node = 4;
    o.nccl_stage = 2;
    vc_nccl_info n = info(&o);
    assert_int_equal(n.nodes, 2);
    assert_int_equal(n.p2p_peers, 2);
    assert_int_equal(n.p2p_bytes, 512 * MiB);
    assert_int_equal(n.net_bytes, 128 * MiB);
    assert_int_equal(n.bytes, (512 + 288 + 66) * MiB);
    o.nccl_stage = 1;
    n = info(&o);
    assert_int_equal(n.p2p_bytes, 384 * MiB);
    o.nccl_stage = 0; /* the busiest stage: a middle one, 512 */
    n = info(&o);
    assert_int_equal(n.p2p_bytes, 512 * MiB);
    /* the breakdown behind a stage's figure: the first stage whose bytes they are */
    vc_nccl_per_gpu_of(&o, (384 + 288 + 66) * MiB, &n);
    assert_int_equal(n.p2p_peers, 1);
}

/* all-to-all across nodes */
static void experts_across_nodes(void **state)
{
    (void)state;
    /* ep 16 on 16 H100, 2 nodes: 7 peers on the node (7 x 32 x 12 = 2688 MiB) and 8 on the other
     * through one pool pair (128 MiB): 2816 MiB; the DDP ring 312 MiB (above); NVLS 256 MiB + 2
     * MiB of credits; DDP's all-reduce across nodes: trees 340 MiB, NVLS trees 320 MiB
     * (tests/test_nccl_tree.c) */
    vc_options o = opts("h100-80gb", VC_PARALLEL_DDP, 16, 1, 1, 16);
    vc_nccl_info n = info(&o);
    assert_int_equal(n.p2p_peers, 15);
    assert_int_equal(n.p2p_bytes, 2816 * MiB);
    assert_int_equal(n.bytes, (2816 + 312 + 258 + 340 + 320) * MiB);
}

/* PCIe without peer access: NCCL's SHM transport */
static void shm_transport(void **state)
{
    (void)state;
    /* two RTX 4090 (no peer access on the stock driver): shm.cc puts ncclSendMem / ncclRecvMem and
     * every protocol's buffer in host memory (ncclShmAllocateShareableBuffer): the communicator
     * and its 4 channels (the pcie row) are there, 0 bytes on the GPU, where pcie's P2P transport
     * holds 4 x 12 = 48 MiB */
    vc_options o = opts("rtx4090", VC_PARALLEL_DDP, 2, 1, 1, 1);
    assert_int_equal(info(&o).bytes, 48 * MiB);
    o.nccl_topology = VC_NCCL_TOPO_SHM;
    vc_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_nccl_check(&o, &err), VC_OK);
    vc_nccl_info n = info(&o);
    assert_int_equal(n.topology, VC_NCCL_TOPO_SHM);
    assert_int_equal(n.communicators, 1);
    assert_int_equal(n.channels, 4);
    assert_int_equal(n.bytes, 0);
    /* ... with 4 pipeline stages of 4 GPUs on 2 nodes (no GDR: the network's in host memory too) */
    o = opts("rtx4090", VC_PARALLEL_DDP, 16, 1, 4, 1);
    o.nccl_topology = VC_NCCL_TOPO_SHM;
    n = info(&o);
    assert_int_equal(n.p2p_peers, 2);
    assert_int_equal(n.bytes, 0);
    assert_string_equal(vc_nccl_topology_name(VC_NCCL_TOPO_SHM), "shm");
    assert_int_equal(vc_nccl_topology_from_name("shm"), VC_NCCL_TOPO_SHM);
}

static void errors(void **state)
{
    (void)state;
    vc_options o = opts(NULL, VC_PARALLEL_DDP, 16, 1, 1, 1);
    o.gpus_per_node = 73;
    vc_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(vc_nccl_check(&o, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--gpus-per-node");
    o.gpus_per_node = 72;
    assert_int_equal(vc_nccl_check(&o, &err), VC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rings_across_nodes),
        cmocka_unit_test(pipeline_stages),
        cmocka_unit_test(experts_across_nodes),
        cmocka_unit_test(shm_transport),
        cmocka_unit_test(errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
