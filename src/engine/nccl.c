/*
 * nccl.c — NCCL's connection buffers on one GPU (issue 27 item 3;
 * docs/context.md "NCCL"), from the NCCL source at
 * NVIDIA/nccl@5067397c2676d5aed50042fc39e5c8ee96eb0027 (2.30.7).
 *
 * computeBuffSizes (src/init.cc) sets one buffer per protocol, unless
 * NCCL_LL_BUFFSIZE / NCCL_LL128_BUFFSIZE / NCCL_BUFFSIZE say otherwise:
 *   LL     DEFAULT_LL_BUFFSIZE = NCCL_LL_LINES_PER_THREAD (8) x NCCL_LL_MAX_NTHREADS
 *          (512) x NCCL_STEPS (8) x sizeof(union ncclLLFifoLine) (16) = 524,288 B
 *   LL128  DEFAULT_LL128_BUFFSIZE = NCCL_LL128_ELEMS_PER_THREAD (120) x
 *          NCCL_LL128_MAX_NTHREADS (640) x NCCL_STEPS x sizeof(uint64_t) = 4,915,200 B
 *   SIMPLE DEFAULT_BUFFSIZE = 1 << 22 = 4,194,304 B
 * (constants in src/include/device.h). The P2P transport (GPUs of one node
 * over NVLink or PCIe; src/transport/p2p.cc) gives each connection:
 *   p2pRecvSetup: recvSize = sizeof(struct ncclRecvMem) (4096: its pad4[MEM_ALIGN])
 *                 + every protocol's buffer, but SIMPLE's in read mode;
 *   p2pSendSetup: sendSize = sizeof(struct ncclSendMem) (4096) + SIMPLE's
 *                 buffer in read mode;
 * each ALIGN_SIZE'd to CUDA_IPC_MIN (2 MiB, src/include/comm.h) and allocated
 * with cuMem (ncclP2pAllocateShareableBuffer -> ncclCuMemAlloc, rounded to
 * the allocation granularity, 2 MiB). So in write mode a receive holds
 * 9,637,888 B -> 10 MiB and a send 4096 B -> 2 MiB; read mode (p2pGetInfo
 * -> ncclTopoCheckP2p, src/graph/paths.cc: NVLink between two sm80 GPUs
 * only, "Enable P2P Read for Ampere/NVLink only") moves SIMPLE's buffer to
 * the sender: receive 5,443,584 B -> 6 MiB, send 4,198,400 B -> 6 MiB.
 * These are outside PyTorch's caching allocator: nvidia-smi counts them,
 * memory_reserved() does not.
 *
 * A ring collective connects, on every channel, a receive from the previous
 * rank and a send to the next (src/transport/generic.cc ncclTransportRingConnect:
 * ncclTransportP2pConnect(comm, c, 1, &ring.prev, 1, &ring.next, 0) per channel),
 * so one communicator's ring holds channels x (receive + send) on each GPU.
 * How many channels NCCL opens follows its topology search (src/graph/
 * search.cc), not modelled here: the caller gives it (NCCL_MIN_NCHANNELS /
 * NCCL_MAX_NCHANNELS pin it). Since NCCL 2.22 (NCCL_RUNTIME_CONNECT=1) the
 * connections of an algorithm are made at its first collective.
 */
#include <string.h>

#include "policy.h"
#include "util.h"

#define LL_BUFF (INT64_C(8) * 512 * 8 * 16)
#define LL128_BUFF (INT64_C(120) * 640 * 8 * 8)
#define SIMPLE_BUFF (INT64_C(1) << 22)
#define CONN_MEM 4096                   /* sizeof(struct ncclSendMem) = sizeof(struct ncclRecvMem) */
#define IPC_MIN (INT64_C(2) << 20)      /* CUDA_IPC_MIN, and cuMem's granularity */

static int64_t align_ipc(int64_t n) { return (n + IPC_MIN - 1) / IPC_MIN * IPC_MIN; }

void vc_nccl_p2p_connection(int read, int64_t *recv, int64_t *send)
{
    *recv = align_ipc(CONN_MEM + LL_BUFF + LL128_BUFF + (read ? 0 : SIMPLE_BUFF));
    *send = align_ipc(CONN_MEM + (read ? SIMPLE_BUFF : 0));
}

vc_status vc_nccl_ring_bytes(int64_t channels, int64_t communicators, int read, int64_t *bytes, vc_error *err)
{
    *bytes = 0;
    if (channels < 1 || channels > 64) /* MAXCHANNELS (src/include/device.h) */
        return vc_set_error(err, VC_ERR_USAGE, "channels", "must be from 1 to 64 (NCCL's MAXCHANNELS)");
    if (communicators < 0)
        return vc_set_error(err, VC_ERR_USAGE, "communicators", "must be a non-negative integer");
    int64_t recv, send, per;
    vc_nccl_p2p_connection(read, &recv, &send);
    per = channels * (recv + send); /* <= 64 x 12 MiB */
    if (__builtin_mul_overflow(per, communicators, bytes))
        return vc_set_error(err, VC_ERR_OVERFLOW, "communicators", "NCCL's buffers exceed 2^63 bytes");
    return VC_OK;
}

/* What one GPU of a multi-GPU layout holds at least (issue 27 item 3): its
 * communicators and their connections, each at NCCL's fewest channels.
 * Channels: init.cc sets ringGraph->minChannels = 1 (ncclTopoCompute's search
 * finds more on fast links, and ncclTopoDupChannels doubles them at 25 GB/s
 * and more: not modelled, the topology is not known), and P2P operations take
 * at least NCCL_MIN_P2P_NCHANNELS = 1 channel per peer (paths.cc
 * ncclTopoComputeP2pChannels). A connection pair (one receive and one send)
 * holds 12 MiB in write mode and in read mode alike (10 + 2 or 6 + 6 MiB,
 * vc_nccl_p2p_connection).
 * Communicators per GPU (torch.distributed's ProcessGroupNCCL makes one
 * ncclComm per process group and device, at its first collective):
 *  - data parallel (ddp, zero1-torch, fsdp, shard-grad-op, fsdp2, DeepSpeed
 *    zero1-3, megatron's DP group): one over the data-parallel ranks, when
 *    there are two or more; HSDP (hybrid, fsdp2 with --fsdp-replicate) two,
 *    the shard group and the replicate group;
 *  - tensor parallel (--tp): one; a ring on each channel;
 *  - pipeline (--pp): send/recv to the neighbouring stages, P2P connections
 *    to each (a middle stage has two neighbours: the busiest rank's);
 *  - expert parallel (--ep): an all-to-all, P2P connections to the ep - 1
 *    other ranks.
 * A ring collective connects one receive and one send per channel
 * (ncclTransportRingConnect). Since NCCL 2.22 connections are made at an
 * algorithm's first collective; trees, NVLS and the network transport add
 * buffers not counted here: the figure is a lower bound. */
void vc_nccl_per_gpu(const vc_options *o, vc_nccl_info *n)
{
    memset(n, 0, sizeof *n);
    vc_options full_o; /* the legacy struct's size (vramcalc.h) */
    if (vc__options_in(&o, &full_o, NULL)) return;
    int64_t tp = o->tp > 1 ? o->tp : 1, pp = o->pp > 1 ? o->pp : 1, ep = o->ep > 1 ? o->ep : 1;
    int64_t world = o->gpus > 1 ? o->gpus : 1, dp = world % (tp * pp) == 0 ? world / (tp * pp) : 1;
    if (world < 2) return;
    int64_t dp_comms = 0;
    if (dp > 1) {
        bool hsdp = o->parallel == VC_PARALLEL_FSDP_HYBRID || (o->parallel == VC_PARALLEL_FSDP2 && o->fsdp_replicate > 1);
        dp_comms = hsdp ? 2 : 1;
    }
    n->ring_communicators = dp_comms + (tp > 1);
    n->p2p_peers = (pp > 2 ? 2 : pp > 1 ? 1 : 0) + (ep > 1 ? ep - 1 : 0);
    n->communicators = n->ring_communicators + (pp > 1) + (ep > 1);
    n->channels = 1;
    int64_t recv, send;
    vc_nccl_p2p_connection(0, &recv, &send);
    /* at most a few thousand connection pairs of 12 MiB: no overflow (ep, tp, pp <= 2^20, checked by the options) */
    n->bytes = (n->ring_communicators + n->p2p_peers) * n->channels * (recv + send);
}
