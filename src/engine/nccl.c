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
