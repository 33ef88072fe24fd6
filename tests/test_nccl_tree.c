/*
 * test_nccl_tree.c — NCCL's trees, NVLS trees and NVLS credits on one GPU
 * (src/engine/nccl.c tree_group, nvls_tree_group, vc_nccl_per_gpu; issue 27),
 * each figure by hand from NVIDIA/nccl@5067397c2676d5aed50042fc39e5c8ee96eb0027:
 *  - connection sizes (tests/test_nccl.c): a P2P receive 10 MiB and send 2 MiB
 *    in write mode; in read mode (sm80 over NVLink, paths.cc ncclTopoCheckP2p)
 *    4096 + LL + LL128 = 5,443,584 B -> 6 MiB and 4096 + SIMPLE 4 MiB -> 6 MiB;
 *    a network receive or send with GPU Direct RDMA 10 MiB each;
 *  - src/graph/trees.cc ncclGetBtree / ncclGetDtree over the nodes: for 2
 *    nodes, tree 0: node 0 the root with child d1 = node 1 (node 1: up 0, child
 *    type 1); tree 1 (the mirror): node 1 the root with child d1 = node 0;
 *    for 4 nodes, tree 0: 0 -> 2 (d1), 2 -> 1 (d0), 3 (d1); tree 1: 3 -> 1 (d1),
 *    1 -> 2 (d0), 0 (d1);
 *  - connect.cc: ncclTopoPreset, a chain over the node's GPUs in the tree
 *    graph's order; BALANCED_TREE: the parent link at treeIntra[0], child 0 at
 *    treeIntra[1], child 1 at treeIntra[0]; connectTrees: tree 0 on channels
 *    0-11, tree 1 on 12-23 (24 channels, 12 graph channels);
 *  - generic.cc ncclTransportTreeConnect: receives from tree.down and up, sends
 *    to tree.up and down; transport.cc ncclTransportP2pConnect skips the ring's
 *    own receive (from ring.prev) and send (to ring.next).
 * vramcalc takes the tree graph's order as the ring's, graph channel g's order
 * the node's GPUs rotated by g (nccl.c). Then GPU x of a node of 8 is at
 * position (x - g) mod 8 on graph channel g (= c mod 12): on each channel the
 * chain adds a receive from the next position (not at position 7) and a send to
 * the previous (not at position 0); position 0 holds the network links. Over
 * g = 0..11, twice each (c and c + 12): GPU x is at position 0 where g = x or
 * x + 8 (< 12), at position 7 where g = x + 1 or x + 9 (< 12).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "vramcalc/vramcalc.h"

#define MiB (INT64_C(1) << 20)

static vc_nccl_info on(const char *gpu, vc_parallel par, int64_t gpus, int64_t tp)
{
    vc_options o;
    vc_options_init(&o);
    o.device = gpu ? vc_gpu_find(gpu) : NULL;
    o.parallel = par;
    o.gpus = gpus;
    o.tp = tp;
    vc_nccl_info n;
    vc_nccl_per_gpu(&o, &n);
    return n;
}

/* DDP on 2 nodes of 8 */
static void ddp_two_nodes(void **state)
{
    (void)state;
    /* 16 A100 SXM4 (no --gpu): read mode, receive 6 MiB, send 6 MiB. The network links: on each
     * channel node 0 links node 1 (tree 0: its child d1 at treeIntra[0] = position 0; tree 1: its
     * parent, node 0 being child 1 of node 1: the parent's treeToChild1, position 0), position 0 to
     * position 0; the ring's network receive at position 0 comes from the other node's position
     * 7, its send leaves from position 7: neither is the tree's, so a receive and a send on each
     * channel where the GPU is at position 0. GPU 3: position 0 at g = 3, 11 (4 channels),
     * position 7 at g = 4 only (2 channels): chain receives 24 - 2 = 22, sends 24 - 4 = 20, network
     * 4 receives + 4 sends: 22 x 6 + 20 x 6 + 8 x 10 = 332 MiB, the busiest (GPU 0: position 0 at
     * g = 0, 8 and 7 at g = 1, 9: 20 x 6 + 20 x 6 + 80 = 320; GPU 4: 22 x 6 + 22 x 6 + 40 = 304) */
    vc_nccl_info n = on(NULL, VC_PARALLEL_DDP, 16, 1);
    assert_int_equal(n.tree_communicators, 1);
    assert_int_equal(n.tree_bytes, 332 * MiB);
    assert_int_equal(n.nvls_bytes, 0); /* sm80: no multicast */
    assert_int_equal(n.nvls_tree_bytes, 0);
    assert_int_equal(n.net_bytes, (60 + 80) * MiB); /* the ring's 60 (tests/test_nccl.c) */
    assert_int_equal(n.bytes, (312 + 332) * MiB);
    /* 16 H100 SXM: write mode (receive 10, send 2): GPU 3: 22 x 10 + 20 x 2 + 80 = 340 MiB (GPU 0:
     * 200 + 40 + 80 = 320). NVLS: 8 heads x 16 channels x 2 x 1 MiB = 256 MiB for the all-reduce's
     * NVLS trees, + the credits (16 x 2 x 64 B x 8 = 16 KiB -> 2 MiB); the NVLS trees
     * (ncclNvlsTreeConnect): on each of the 16 NVLS channels a head links the same head of the one
     * other node (tree c % 2: 8 channels each, one link in each tree), a network receive + send:
     * 16 x 20 = 320 MiB */
    n = on("h100-80gb", VC_PARALLEL_DDP, 16, 1);
    assert_int_equal(n.tree_bytes, 340 * MiB);
    assert_int_equal(n.nvls_channels, 16);
    assert_int_equal(n.nvls_credit_bytes, 2 * MiB);
    assert_int_equal(n.nvls_bytes, 258 * MiB);
    assert_int_equal(n.nvls_tree_bytes, 320 * MiB);
    assert_int_equal(n.bytes, (312 + 340 + 258 + 320) * MiB);
    /* 16 B200: the ring 32 channels (16 graph channels: positions 0 at g = x, x + 8; 7 at g = x + 1,
     * x + 9, each on 2 channels, x < 8: 4 and 4): 28 x 10 + 28 x 2 + 8 x 10 = 416 MiB; NVLS across
     * 2 nodes: ncclNvlsTreeSm100Tuning with 400 Gb/s NICs (nicBw 50 >= 48, 2 nodes): 32 channels,
     * 8 x 32 x 2 MiB = 512 MiB + credits 2 MiB; NVLS trees 32 x 20 = 640 MiB */
    n = on("b200", VC_PARALLEL_DDP, 16, 1);
    assert_int_equal(n.tree_bytes, 416 * MiB);
    assert_int_equal(n.nvls_channels, 32);
    assert_int_equal(n.nvls_bytes, 514 * MiB);
    assert_int_equal(n.nvls_tree_bytes, 640 * MiB);
}

/* one GPU of the group on each node: Megatron's DP group under tp 8 */
static void one_gpu_a_node(void **state)
{
    (void)state;
    /* dp 2 (16 H100): the ring on every channel already receives from and sends to the other node,
     * the trees' only peer: nothing new (tests/test_nccl.c: 1026 MiB) */
    vc_nccl_info n = on("h100-80gb", VC_PARALLEL_MEGATRON, 16, 8);
    assert_int_equal(n.tree_communicators, 1);
    assert_int_equal(n.tree_bytes, 0);
    /* dp 4 (32 H100): the ring receives from node n - 1 and sends to n + 1. Node 1: tree 0, up 2
     * (receive new, send = the ring's next): 1; tree 1, up 3 (2), child d0 2 (receive; the send is
     * the ring's), child d1 0 (the receive is the ring's; send): 4. Node 2: tree 0 up 0 (2), d0 1
     * (send), d1 3 (receive): 4; tree 1 up 1 (send): 1. Nodes 0 and 3: 2 + 1 and 1 + 2. The
     * busiest, nodes 1 and 2: 12 channels x 1 + 12 x 4 = 60 network connections x 10 MiB = 600 MiB;
     * no NVLS for a group of one GPU on the node (gpuCount < 2) */
    n = on("h100-80gb", VC_PARALLEL_MEGATRON, 32, 8);
    assert_int_equal(n.nodes, 4);
    assert_int_equal(n.tree_bytes, 600 * MiB);
    assert_int_equal(n.nvls_tree_bytes, 0);
    assert_int_equal(n.nvls_bytes, 258 * MiB); /* the TP group's, on the node */
    /* megatron-dist: the distributed optimizer's reduce-scatter and all-gather, no tree */
    n = on("h100-80gb", VC_PARALLEL_MEGATRON_DIST, 32, 8);
    assert_int_equal(n.tree_communicators, 0);
    assert_int_equal(n.tree_bytes, 0);
}

/* HSDP's replicate group; a TP group spanning nodes */
static void replicate_and_tp(void **state)
{
    (void)state;
    /* FSDP2 as HSDP on 32 H100, --fsdp-replicate 4: the shard group (8, on the node) reduce-scatters,
     * no tree; the replicate group (4, ranks 8 apart: one GPU a node) all-reduces (foreach_reduce):
     * the 4-node trees of one_gpu_a_node, 600 MiB; NVLS for the shard group only (8 heads: 256 + 2
     * MiB), the replicate group has one GPU on the node */
    vc_options o;
    vc_options_init(&o);
    o.device = vc_gpu_find("h100-80gb");
    o.parallel = VC_PARALLEL_FSDP2;
    o.gpus = 32;
    o.fsdp_replicate = 4;
    vc_nccl_info n;
    vc_nccl_per_gpu(&o, &n);
    assert_int_equal(n.ring_communicators, 2);
    assert_int_equal(n.tree_communicators, 1);
    assert_int_equal(n.tree_bytes, 600 * MiB);
    assert_int_equal(n.nvls_bytes, 258 * MiB);
    assert_int_equal(n.nvls_tree_bytes, 0);
    /* FSDP1 HYBRID_SHARD on 32: the node's 8 and the inter-node group of 4, the same */
    o.parallel = VC_PARALLEL_FSDP_HYBRID;
    o.fsdp_replicate = 0;
    vc_nccl_per_gpu(&o, &n);
    assert_int_equal(n.tree_bytes, 600 * MiB);
    /* Megatron tp 16 on 16 H100 (2 nodes of 8): the TP group's all-reduce spans the nodes, the
     * trees and NVLS trees of DDP on 16 (ddp_two_nodes): 340 + 320 MiB, NVLS 258 */
    n = on("h100-80gb", VC_PARALLEL_MEGATRON, 16, 16);
    assert_int_equal(n.ring_communicators, 1);
    assert_int_equal(n.tree_bytes, 340 * MiB);
    assert_int_equal(n.nvls_tree_bytes, 320 * MiB);
    assert_int_equal(n.nvls_bytes, 258 * MiB);
}

/* collectives that are not all-reduce; NVLS off */
static void no_trees_nvls_off(void **state)
{
    (void)state;
    /* FSDP on 16 H100: reduce-scatter and all-gather, no tree; across nodes NVLS runs only as the
     * all-reduce's NVLS tree (tuning.cc disables NVLS across nodes without CollNet): the credits
     * only, 2 MiB */
    vc_nccl_info n = on("h100-80gb", VC_PARALLEL_FSDP, 16, 1);
    assert_int_equal(n.tree_communicators, 0);
    assert_int_equal(n.nvls_bytes, 2 * MiB);
    assert_int_equal(n.bytes, (312 + 2) * MiB);
    /* NCCL_NVLS_ENABLE=0: DDP on 16 H100 keeps its trees (340 MiB), no NVLS */
    vc_options o;
    vc_options_init(&o);
    o.device = vc_gpu_find("h100-80gb");
    o.parallel = VC_PARALLEL_DDP;
    o.gpus = 16;
    o.nccl_nvls = VC_NCCL_NVLS_OFF;
    vc_nccl_per_gpu(&o, &n);
    assert_int_equal(n.nvls_channels, 0);
    assert_int_equal(n.nvls_bytes + n.nvls_tree_bytes, 0);
    assert_int_equal(n.bytes, (312 + 340) * MiB);
    /* NCCL built with CUDA 12.0 (nvls.cc's NVLS code is #if CUDART_VERSION >= 12010): none */
    o.nccl_nvls = VC_NCCL_NVLS_AUTO;
    o.cuda_version = 1200;
    vc_nccl_per_gpu(&o, &n);
    assert_int_equal(n.nvls_bytes, 0);
    o.cuda_version = 1201;
    vc_nccl_per_gpu(&o, &n);
    assert_int_equal(n.nvls_bytes, 258 * MiB);
    /* one node: no tree (DDP on 8 H100: ring 288 + NVLS 258 MiB) */
    n = on("h100-80gb", VC_PARALLEL_DDP, 8, 1);
    assert_int_equal(n.tree_communicators, 0);
    assert_int_equal(n.bytes, (288 + 258) * MiB);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ddp_two_nodes),
        cmocka_unit_test(one_gpu_a_node),
        cmocka_unit_test(replicate_and_tp),
        cmocka_unit_test(no_trees_nvls_off),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
