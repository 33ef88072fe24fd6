/*
 * test_nccl_pat.c — NCCL's PAT connections on one GPU (src/engine/nccl.c pat_group, vc_nccl_per_gpu;
 * issue 27), each figure by hand from NVIDIA/nccl@5067397c2676d5aed50042fc39e5c8ee96eb0027:
 *  - src/graph/tuning.cc ncclPatEnable: PAT for reduce-scatter and all-gather only where
 *    comm->nNodes == comm->nRanks (one GPU a node) and compute capability >= 6.0;
 *  - src/transport/generic.cc ncclTransportPatConnect: for mask 1, 2, 4, ... < nRanks, on every channel,
 *    a receive from rank + mask and a send to rank - mask, then a receive from rank - mask and a send to
 *    rank + mask (mod nRanks); ncclTransportP2pConnect skips what is connected: the ring's receive from
 *    rank - 1 and send to rank + 1. With S the distinct offsets +-mask mod nRanks, 2 x (|S| - 1) new
 *    connections a channel: 2 ranks S = {1}: none; 3 ranks {1, 2}: 2; 4 ranks {1, 3, 2}: 4;
 *    8 ranks {1, 7, 2, 6, 4}: 8;
 *  - every peer on another node: the network transport (net.cc), a receive LL + LL128 + SIMPLE =
 *    9,633,792 B -> 10 MiB and a send LL128 + SIMPLE = 9,109,504 B -> 10 MiB on the device with GPU Direct
 *    RDMA (the NVSwitch boards' NIC beside each GPU), in host memory without (a PCIe server);
 *  - channels: the topology row's comm->nChannels, 24 on A100 and H100 NVSwitch boards, 4 on PCIe Gen4
 *    (src/engine/nccl.c topos[]); the ring of one GPU a node: a network receive and send a channel,
 *    24 x 20 MiB = 480 MiB (tests/test_nccl.c).
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

static vc_nccl_info on(const char *gpu, vc_parallel par, int64_t gpus, int64_t gpn, int64_t tp)
{
    vc_options o;
    vc_options_init(&o);
    o.device = gpu ? vc_gpu_find(gpu) : NULL;
    o.parallel = par;
    o.gpus = gpus;
    o.gpus_per_node = gpn;
    o.tp = tp;
    vc_nccl_info n;
    vc_nccl_per_gpu(&o, &n);
    return n;
}

/* FSDP and ZeRO-3 over nodes of one GPU: the DP group's all-gather and reduce-scatter */
static void sharded_one_gpu_a_node(void **state)
{
    (void)state;
    /* 8 H100 nodes: 8 new connections a channel x 24 channels x 10 MiB = 1920 MiB, beside the ring's 480 */
    vc_nccl_info n = on("h100-80gb", VC_PARALLEL_FSDP, 8, 1, 1);
    assert_int_equal(n.pat_communicators, 1);
    assert_int_equal(n.pat_bytes, 8 * 24 * 10 * MiB);
    assert_int_equal(n.ring_bytes, 24 * 20 * MiB);
    assert_int_equal(n.tree_communicators, 0); /* no all-reduce */
    assert_int_equal(n.bytes, (1920 + 480) * MiB);
    assert_int_equal(n.net_bytes, n.bytes); /* every connection crosses the network */
    /* ZeRO-3 on 4 A100 nodes: 4 new a channel: 4 x 24 x 10 = 960 MiB */
    n = on("a100-80gb", VC_PARALLEL_ZERO3, 4, 1, 1);
    assert_int_equal(n.pat_bytes, 4 * 24 * 10 * MiB);
    /* 3 nodes: 2 a channel, 480 MiB; 2 nodes: PAT's peer is the ring's both ways, nothing new */
    n = on("a100-80gb", VC_PARALLEL_FSDP2, 3, 1, 1);
    assert_int_equal(n.pat_bytes, 2 * 24 * 10 * MiB);
    n = on("a100-80gb", VC_PARALLEL_FSDP, 6, 1, 1); /* 6 nodes: 6 a channel */
    assert_int_equal(n.pat_bytes, 6 * 24 * 10 * MiB);
    n = on("a100-80gb", VC_PARALLEL_FSDP, 2, 1, 1);
    assert_int_equal(n.pat_communicators, 1);
    assert_int_equal(n.pat_bytes, 0);
    /* DeepSpeed ZeRO-1/2 all-gather the updated parameters too (stage_1_and_2.py all_gather_dp_groups) */
    n = on("a100-80gb", VC_PARALLEL_ZERO2, 4, 1, 1);
    assert_int_equal(n.pat_bytes, 4 * 24 * 10 * MiB);
}

/* Where PAT is not: more than one GPU a node, an all-reduce layout, no GPU Direct RDMA */
static void not_pat(void **state)
{
    (void)state;
    vc_nccl_info n = on("h100-80gb", VC_PARALLEL_FSDP, 16, 8, 1); /* 2 nodes of 8: nNodes != nRanks */
    assert_int_equal(n.pat_communicators, 0);
    assert_int_equal(n.pat_bytes, 0);
    n = on("h100-80gb", VC_PARALLEL_DDP, 8, 1, 1); /* all-reduce: rings and trees (tests/test_nccl_tree.c) */
    assert_int_equal(n.pat_communicators, 0);
    assert_int_equal(n.pat_bytes, 0);
    n = on("l40s", VC_PARALLEL_FSDP, 8, 1, 1); /* PCIe: the network's buffers in host memory */
    assert_int_equal(n.pat_communicators, 1);
    assert_int_equal(n.pat_bytes, 0);
    n = on("mi300x", VC_PARALLEL_FSDP, 8, 1, 1); /* RCCL: NCCL's pcie row stands for it, PAT not read */
    assert_int_equal(n.pat_communicators, 0);
}

/* megatron-dist --tp 2 on 8 single-GPU nodes: the DP group (4 ranks, 2 apart, one a node) reduce-scatters
 * and all-gathers: 4 new connections a channel, 960 MiB; the TP group (2 ranks on 2 nodes) all-reduces:
 * trees, no PAT */
static void megatron_dist(void **state)
{
    (void)state;
    vc_nccl_info n = on("h100-80gb", VC_PARALLEL_MEGATRON_DIST, 8, 1, 2);
    assert_int_equal(n.pat_communicators, 1);
    assert_int_equal(n.pat_bytes, 4 * 24 * 10 * MiB);
    assert_int_equal(n.tree_communicators, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sharded_one_gpu_a_node),
        cmocka_unit_test(not_pat),
        cmocka_unit_test(megatron_dist),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
