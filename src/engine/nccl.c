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
 * How many channels NCCL opens follows its topology search: the table
 * topos[] below, one row per topology, derived from the same commit.
 * Since NCCL 2.22 (NCCL_RUNTIME_CONNECT=1) the connections of an algorithm
 * are made at its first collective.
 */
#include <string.h>

#include "policy.h"
#include "util.h"

#define LL_BUFF (INT64_C(8) * 512 * 8 * 16)
#define LL128_BUFF (INT64_C(120) * 640 * 8 * 8)
#define SIMPLE_BUFF (INT64_C(1) << 22)
#define CONN_MEM 4096                   /* sizeof(struct ncclSendMem) = sizeof(struct ncclRecvMem) */
#define IPC_MIN (INT64_C(2) << 20)      /* CUDA_IPC_MIN, and cuMem's granularity */
#define NVLS_BUFF (INT64_C(128) * 1024 * 8) /* nvls.cc: NCCL_NVLS_CHUNKSIZE 128 KiB x NCCL_STEPS */
#define NVLS_CREDIT 64                      /* nvls.cc ncclNvlsSetup: memSize, a credit per channel, direction and head */

static int64_t align_ipc(int64_t n) { return (n + IPC_MIN - 1) / IPC_MIN * IPC_MIN; }

void vc_nccl_p2p_connection(int read, int64_t *recv, int64_t *send)
{
    *recv = align_ipc(CONN_MEM + LL_BUFF + LL128_BUFF + (read ? 0 : SIMPLE_BUFF));
    *send = align_ipc(CONN_MEM + (read ? SIMPLE_BUFF : 0));
}

vc_status vc_nccl_ring_bytes(int64_t channels, int64_t communicators, int read, int64_t *bytes, vc_error *err)
{
    vc_error_clear(err); /* an out-parameter: cleared first (vramcalc.h) */
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


/* ---- Channels by topology (issue 27 item 3) ----
 * NVIDIA/nccl@5067397c, per communicator:
 *  - collective channels: ncclTopoCompute (src/graph/search.cc) searches the
 *    ring graph (init.cc: ringGraph minChannels 1, maxChannels MAXCHANNELS/2
 *    = 32) from the fastest speed of the architecture's array that the links
 *    allow (speedArrayIntra {40, 30, 20, 18, 15, 12, 10, ...};
 *    sm90SpeedArrayIntra {60, 50, 40, 30, 24, 20, ...}; sm100SpeedArrayIntra
 *    {90, 80, 70, 60, 50, 45, 40, ...} GB/s), each channel taking its speed
 *    from every link it crosses; pass 1 keeps the graph of the largest
 *    channels x speed, trying slower speeds while the next is > 0.49 x the
 *    best's and stopping when channels x speed reaches the GPU's totalBw;
 *    ncclTopoDupChannels then doubles the channels (halving the speed) unless
 *    the speed is < 25 GB/s, or (ccMin > 80) < 50 GB/s with more than 4
 *    channels; pass 2 retries faster speeds with those channels. A GPU's
 *    NVLink bandwidth is its links x ncclTopoNVLinkBw (src/graph/topo.h:
 *    SM80_NVLINK_BW 20.0, SM90_NVLINK_BW 20.6, SM100_NVLINK_BW 40.1 GB/s);
 *    PCIe is what the slot reads (Gen3 x16 12, Gen4 x16 24, Gen5 x16 48 GB/s).
 *    ncclTopoPostset (src/graph/connect.cc) doubles again: comm->nChannels =
 *    min(MAXCHANNELS, 2 x graph channels) ("Duplication should be complete
 *    now"), then clamps to [NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS].
 *  - P2P channels (src/graph/paths.cc): ncclTopoComputeP2pChannelsPerPeer
 *    takes, over the peers, the fewest of ncclTopoGetNchannels: NVLink
 *    2 x max(1, path bw / ncclTopoNVLinkBw), PCIe 2, network per NIC;
 *    ncclTopoComputeP2pChannels: p2pnChannels = pow2Up(min(nChannels,
 *    NCCL_MAX_P2P_NCHANNELS = 64)), p2pnChannelsPerPeer = min(p2pnChannels,
 *    pow2Up(that fewest)). Every send/recv peer connects p2pnChannelsPerPeer
 *    channels (connIndex 1: P2P write mode, 10 + 2 MiB per channel).
 *  - NVLS (src/transport/nvls.cc): NCCL_NVLS_ENABLE defaults to 2 (on where
 *    the driver reports multicast, i.e. NVSwitch sm90+ systems); the NVLS
 *    graph is searched only with an NVSwitch and ccMin >= 90 (search.cc);
 *    ncclNvlsTuning: nvlsChannels NVLS_NCHANNELS_SM90 16, sm100 on one node
 *    NVLS_NCHANNELS_SM100_NVL 24; ncclNvlsBufferSetup, at the first NVLS
 *    collective (one node: all-reduce, reduce-scatter, all-gather; across
 *    nodes all-reduce's NVLS_TREE only, vc_nccl_per_gpu): buffSize =
 *    NCCL_NVLS_CHUNKSIZE (128 KiB) x NCCL_STEPS (8) = 1 MiB, nvlsTotalSize
 *    = nHeads x nvlsChannels x 2 x buffSize of unicast memory on each GPU,
 *    nHeads = the NVLS graph's channels = the node's GPUs of the
 *    communicator (maxChannels min(NCCL_MAX_NVLS_ARITY 32, GPUs), forced as
 *    minChannels on one node).
 *
 * The rows (graph = the ring graph ncclTopoCompute returns):
 *  nvswitch sm80 (A100 SXM4: 12 NVLink3 x 20 = 240 GB/s to the NVSwitches):
 *    40 GB/s: 6 channels = 240 = totalBw, done; dup -> 12 x 20 (ccMin 80 is
 *    not > 80); pass 2: 12 x 30 = 360 > 240 fails. Postset 24. P2P: path 240
 *    / 20 = 12 -> 24 -> pow2Up 32; p2pnChannels pow2Up(24) = 32 -> 32, 32.
 *  nvswitch sm90 (H100/H200 SXM5: 18 NVLink4 x 20.6 = 370.8 GB/s): 60 GB/s:
 *    6 channels (360 < 370.8); 50: 7 x 50 = 350, 40: 9 x 40 = 360, 30:
 *    12 x 30 = 360, none larger; 24 / 60 < 0.49 stops. dup (60 >= 50) ->
 *    12 x 30; pass 2: 12 x 40 = 480 fails. Postset 24. P2P: 370.8 / 20.6 = 18
 *    -> 36 -> 64; p2pnChannels pow2Up(24) = 32 -> 32, 32. NVLS 16 channels.
 *  nvswitch sm100 (B200: 18 NVLink5 x 40.1 = 721.8 GB/s): 90 GB/s: 8
 *    channels (720); 80: 9 x 80 = 720, 70: 700, 60: 720, 50: 700, 45: 720,
 *    none larger; 40 / 90 < 0.49 stops. dup -> 16 x 45; pass 2: 16 x 50 =
 *    800 fails. Postset 32. P2P: 18 -> 36 -> 64; pow2Up(32) = 32 -> 32, 32.
 *    NVLS 24 channels (one node).
 *  nvlink sm80 (two A100s on NVLink bridges, 12 links, 240 GB/s): the ring
 *    of two crosses the one 240 GB/s link each way: as nvswitch sm80, 24;
 *    P2P 32, 32 (read mode for the rings: 6 + 6 MiB, the same 12 MiB).
 *  nvlink sm90 (two H100 NVL on bridges, 12 links x 20.6 = 247.2 GB/s): 60:
 *    4 channels (240); 50: 200, 40: 240, 30: 240; 24 / 60 stops. dup -> 8 x
 *    30; pass 2: 8 x 40 = 320 fails. Postset 16. P2P: 12 -> 24 -> 32;
 *    pow2Up(16) = 16 -> 16, 16. No NVSwitch: no NVLS.
 *  pcie sm80+ (Gen4 x16, 24 GB/s; sm90's Gen5 48 GB/s gives the same):
 *    speeds above the 24 GB/s path skipped; 20: 1 channel; 18, 15: 1; 12 (12
 *    / 20 > 0.49): 2 x 12 = 24 = totalBw, done (sm90 Gen5: 40: 1, 30: 1, 24:
 *    2 x 24 = 48, done); no dup (< 25 GB/s); pass 2 fails. Postset 4. P2P:
 *    PCIe 2 per peer; pow2Up(4) = 4 -> 4, 2.
 *  pcie before sm80 (T4, V100 PCIe: Gen3 x16, 12 GB/s): 12: 1 channel = 12
 *    = totalBw, done; no dup. Postset 2. P2P: pow2Up(2) = 2 -> 2, 2. */
typedef struct {
    vc_nccl_topology topo;
    int sm_from;            /* compute capability x 10: the row holds from here to the next row's */
    int coll;               /* comm->nChannels after ncclTopoPostset */
    int per_peer_topo;      /* pow2Up of ncclTopoGetNchannels' fewest over the peers */
    int nvls;               /* nvlsChannels: 0 where NVLS is not searched */
    const char *what;
} topo_row;

static const topo_row topos[] = {
    {VC_NCCL_TOPO_NVSWITCH, 0, 24, 32, 0, "NVSwitch, A100 SXM4 (12 NVLink3)"},
    {VC_NCCL_TOPO_NVSWITCH, 90, 24, 64, 16, "NVSwitch, H100/H200 SXM5 (18 NVLink4, NVLS)"},
    {VC_NCCL_TOPO_NVSWITCH, 100, 32, 64, 24, "NVSwitch, B200 (18 NVLink5, NVLS)"},
    {VC_NCCL_TOPO_NVLINK, 0, 24, 32, 0, "NVLink bridge pair, A100 (12 links)"},
    {VC_NCCL_TOPO_NVLINK, 90, 16, 32, 0, "NVLink bridge pair, H100 NVL (12 links)"},
    {VC_NCCL_TOPO_PCIE, 0, 2, 2, 0, "PCIe Gen3 x16"},
    {VC_NCCL_TOPO_PCIE, 80, 4, 2, 0, "PCIe Gen4/Gen5 x16"},
};

static const char *const topo_names[] = {"auto", "nvswitch", "nvlink", "pcie", "shm", "xgmi"};

int vc_nccl_topology_from_name(const char *s)
{
    for (int i = 0; s && i <= VC_NCCL_TOPO_SHM; i++) /* xgmi: a report's, not an option's */
        if (strcmp(s, topo_names[i]) == 0) return i;
    return -1;
}

const char *vc_nccl_topology_name(int t)
{
    return t >= 0 && t < (int)(sizeof topo_names / sizeof topo_names[0]) ? topo_names[t] : "?";
}

/* The topology of --gpu's preset, without --nccl-topology: the SXM boards
 * multi-GPU training runs on are NVSwitch systems (A100 SXM4, H100/H200 SXM5,
 * B200; the a100 presets stand for SXM4 and PCIe alike: SXM4's), an H100 NVL
 * is sold as a bridged pair, every other card sits on PCIe. Without --gpu,
 * the context model's device (an A100, src/engine/context.c): NVSwitch. */
static vc_nccl_topology auto_topology(const vc_gpu *g)
{
    if (!g) return VC_NCCL_TOPO_NVSWITCH;
    static const char *const sxm[] = {"a100-40gb", "a100-80gb", "h100-80gb", "h200", "b200"};
    for (size_t i = 0; i < sizeof sxm / sizeof sxm[0]; i++)
        if (strcmp(g->name, sxm[i]) == 0) return VC_NCCL_TOPO_NVSWITCH;
    return strcmp(g->name, "h100-nvl") == 0 ? VC_NCCL_TOPO_NVLINK : VC_NCCL_TOPO_PCIE;
}

static const topo_row *find_row(vc_nccl_topology t, int sm)
{
    const topo_row *r = NULL;
    for (size_t i = 0; i < sizeof topos / sizeof topos[0]; i++)
        if (topos[i].topo == t && topos[i].sm_from <= sm) r = &topos[i];
    return r;
}

static int pow2_up(int n)
{
    int p = 1;
    while (p < n) p <<= 1;
    return p;
}

/* A node without --gpus-per-node: an HGX/DGX board's 8 GPUs (the NVSwitch
 * rows'; a PCIe server's 8 slots). The largest: an NVL72 rack's NVLink
 * domain, 72 GPUs. */
#define NODE_GPUS 8
#define MAX_NODE_GPUS 72

vc_status vc_nccl_check(const vc_options *o, vc_error *err)
{
    vc_error_clear(err); /* an out-parameter: cleared first (vramcalc.h) */
    int sm = o->device && o->device->sm ? o->device->sm : 80;
    vc_nccl_topology t = o->nccl_topology != VC_NCCL_TOPO_AUTO ? o->nccl_topology : auto_topology(o->device);
    if (o->device && strcmp(o->device->vendor, "NVIDIA") != 0 && t != VC_NCCL_TOPO_PCIE && t != VC_NCCL_TOPO_SHM)
        return vc_set_error(err, VC_ERR_USAGE, O("nccl_topology"),
                            "%s: %s runs RCCL, whose rows are auto (MI300X over xGMI) and NCCL's pcie",
                            vc_nccl_topology_name(t), o->device->name);
    if (t == VC_NCCL_TOPO_NVSWITCH && sm < 80)
        return vc_set_error(err, VC_ERR_USAGE, O("nccl_topology"),
                            "nvswitch: NCCL's rows are A100, H100/H200 and B200 boards (sm80 and later); %s is sm%d",
                            o->device ? o->device->name : "the GPU", sm);
    if (t == VC_NCCL_TOPO_NVLINK && (sm < 80 || sm == 86 || sm == 89 || sm >= 100))
        return vc_set_error(err, VC_ERR_USAGE, O("nccl_topology"),
                            "nvlink: NCCL's rows are bridged A100 and H100 NVL pairs (12 links); %s is sm%d",
                            o->device ? o->device->name : "the GPU", sm);
    if (o->nccl_channels < 0 || o->nccl_channels > 64)
        return vc_set_error(err, VC_ERR_USAGE, O("nccl_channels"), "must be from 1 to 64 (NCCL's MAXCHANNELS)");
    if (o->gpus_per_node < 0 || o->gpus_per_node > MAX_NODE_GPUS)
        return vc_set_error(err, VC_ERR_USAGE, O("gpus_per_node"), "must be from 1 to %d", MAX_NODE_GPUS);
    return VC_OK;
}


/* ---- Across nodes: the network transport (issue 27 item 3) ----
 * NVIDIA/nccl@5067397c src/transport/net.cc. A connection between GPUs of
 * two nodes runs over the network (IB/RoCE); its buffers are set up by the
 * proxy thread of the rank that drives the NIC (sendProxyConnect,
 * recvProxyConnect), in device memory where GPU Direct RDMA is on
 * (resources->useGdr: ncclTopoCheckGdr, src/graph/paths.cc, the NIC within
 * PATH_PXB of the GPU, i.e. behind the same PCIe switch: the NVSwitch rows'
 * HGX/DGX boards, one NIC beside each GPU; a PCIe server's NIC hangs off the
 * CPU, no GDR, every buffer in pinned host memory, nothing on the GPU).
 * Ring and tree connections (connIndex 0: shared 0) get dedicated buffers,
 * NCCL_NET_MAP_ADD_POINTER(map, 0, dev, proxyState->buffSizes[p], ...):
 *  - recvProxyConnect: every protocol on the device with GDR, LL 524,288 +
 *    LL128 4,915,200 + SIMPLE 4,194,304 = 9,633,792 B, allocated with
 *    ncclP2pAllocateShareableBuffer (cuMem, 2 MiB granularity) -> 10 MiB;
 *  - sendProxyConnect: "p != NCCL_PROTO_LL && useGdr": LL128 + SIMPLE =
 *    9,109,504 B, ALIGN_SIZE(.., CUDA_IPC_MIN) -> 10 MiB; LL in host memory;
 *  - ncclSendMem / ncclRecvMem: host memory (dev 0) on both sides.
 * With PXN (NCCL_PXN_DISABLE 0, ncclTopoGetNetDev's proxyRank) a send's
 * proxy is the NIC's GPU, whose process allocates the buffer. Send/recv operations
 * (connIndex 1, NCCL_NET_SHARED_BUFFERS default on) share one pool per
 * direction (sharedNetBuffersInit: nChannels x NCCL_SHARED_STEPS 16 x
 * p2pChunkSize, p2pnChannels channels; computeBuffSizes, src/init.cc: with
 * nNodes > 1 p2pChunkSize = NCCL_P2P_NET_CHUNKSIZE 128 KiB on x86 hosts),
 * allocated once per communicator and direction, whatever the peers.
 * Not replicated: the ring graph's search through the NICs (the channels
 * are the node's row's). The trees: below (tree_group). */
#define NET_RECV_DEV (LL_BUFF + LL128_BUFF + SIMPLE_BUFF) /* -> 10 MiB */
#define NET_SEND_DEV (LL128_BUFF + SIMPLE_BUFF)           /* -> 10 MiB */
#define NET_SHARED_STEPS 16                              /* NCCL_SHARED_STEPS (net.cc) */
#define NET_P2P_CHUNK (INT64_C(1) << 17)                 /* NCCL_P2P_NET_CHUNKSIZE (init.cc) */

/* Members of a group on one node: the group's ranks lie `stride` apart
 * (Megatron's rank order "tp-cp-ep-dp-pp", megatron/core/parallel_state.py:
 * TP innermost, DP next, PP outermost), a node holds gpn consecutive ranks. */
static int64_t on_node(int64_t stride, int64_t size, int64_t gpn)
{
    int64_t l = stride >= gpn ? 1 : gpn / stride;
    return l < size ? l : size;
}

/* One ring communicator on the busiest GPU: `local` of its members on the
 * node. On one node every channel holds a receive and a send (P2P). Across
 * nodes each channel enters the node at the first GPU of its intra-node
 * order and leaves from the last (src/graph/connect.cc: ringRecv =
 * ringIntra[0], ringSend = ringIntra[localRanks - 1]): the first's receive
 * and the last's send are network connections (with PXN the send's buffer
 * is on the NIC's GPU, which holds it instead: the node's sum is the same).
 * Spread evenly over the local members, a GPU holds ceil or floor of
 * channels / local ends of each kind, the busiest whichever weighs more; a
 * group with one GPU on the node has both ends of every channel.
 * *net: the network's part. */
static int64_t ring_group(int64_t channels, int64_t local, int64_t size, int64_t pair, bool gdr, int64_t *net)
{
    *net = 0;
    if (local >= size) return channels * pair;
    int64_t netpair = gdr ? align_ipc(NET_RECV_DEV) + align_ipc(NET_SEND_DEV) : 0, delta = netpair - pair;
    int64_t ends = local == 1 ? channels : delta > 0 ? (channels + local - 1) / local : channels / local;
    *net = ends * netpair;
    return channels * pair + ends * delta;
}

/* The device bytes of a communicator's send/recv pools across nodes. */
static int64_t net_p2p_pools(int64_t p2p_channels, bool gdr)
{
    return gdr ? 2 * align_ipc(p2p_channels * NET_SHARED_STEPS * NET_P2P_CHUNK) : 0;
}

/* A pipeline stage's neighbours (stage r of `stages`, 0-based) on its node
 * and on others: stage r's ranks begin at r x per (Megatron's order). */
static void stage_peers(int64_t r, int64_t stages, int64_t per, int64_t gpn, int64_t *local, int64_t *remote)
{
    *local = *remote = 0;
    for (int64_t s = r - 1; s <= r + 1; s += 2) {
        if (s < 0 || s >= stages) continue;
        if (r * per / gpn == s * per / gpn) ++*local;
        else ++*remote;
    }
}

/* ---- Trees across nodes (issue 27) ----
 * NVIDIA/nccl@5067397c. Which collectives run trees: src/graph/tuning.cc
 * ncclTopoTuneModel offers NCCL_ALGO_TREE to all-reduce only (broadcast and
 * reduce: ring; reduce-scatter and all-gather: ring, PAT, NVLS, CollNet); its
 * latency, 2 x ((nRanks / nNodes - 1) x intraLat + log2(nNodes) x interLat),
 * grows with log2 of the nodes where the ring's (2 x (nRanks - 1) steps,
 * 2 x (nNodes - 1) of them across) grows with the ranks, so across nodes a
 * small all-reduce (DDP's first 1 MiB bucket, a loss or a gradient norm)
 * takes the tree (taken here for every all-reduce group spanning nodes; with
 * one GPU a node on two nodes the tree adds nothing anyway). With NCCL_RUNTIME_CONNECT (2.22+,
 * cuMem) its connections are made then: enqueue.cc ncclPrepareTasks sets
 * algoNeedConnect[task->algorithm], group.cc ncclCollPreconnect calls
 * generic.cc ncclTransportTreeConnect, which on every channel connects
 * receives from tree.down[] and a send to tree.up, then a receive from
 * tree.up and sends to tree.down[] (connIndex 0). ncclTransportP2pConnect
 * (src/transport.cc) skips a (channel, peer) whose connection is already
 * connected: the ring's receive from ring.prev and send to ring.next are
 * reused, the rest are new connections of the same sizes (P2P on the node,
 * the network transport between nodes).
 * The tree on every channel (src/graph/connect.cc):
 *  - ncclTopoPreset: within a node a chain in the tree graph's order
 *    treeIntra, tree.up = treeIntra[i - 1], tree.down[0] = treeIntra[i + 1];
 *    the node's links to other nodes at treeToParent = treeIntra[0],
 *    treeToChild0 = treeIntra[1], treeToChild1 = treeIntra[0] (the pattern
 *    NCCL_TOPO_PATTERN_BALANCED_TREE that init.cc asks of the tree graph;
 *    one GPU on the node: search.cc sets NCCL_TOPO_PATTERN_TREE, all three
 *    treeIntra[0]); the tree graph has the ring graph's channels (init.cc
 *    treeGraph->minChannels = maxChannels = ringGraph->nChannels);
 *  - connectTrees: ncclGetDtree (src/graph/trees.cc) over the nodes, tree 0
 *    on the first half of the channels, tree 1 (the mirror, or the shift by
 *    one for an odd node count) on the second: the node's parent link at
 *    treeToParent to the parent's treeToChild0 (we are its child 0) or
 *    treeToChild1, child d0 at treeToChild0, child d1 at treeToChild1, each
 *    to the child's treeToParent; the channels past the search's 2 x graph
 *    channels (--nccl-channels) copy channel c - start (copyChannels).
 * Taken here: the tree graph's intra-node order is the ring graph's, each
 * graph channel's order the node's GPUs rotated by the channel (channels
 * enter the node at different GPUs, as the ring's ends are spread in
 * ring_group). Then on each channel, against the ring (ring.prev the order's
 * previous GPU, ring.next the next; the first GPU's prev and the last's next
 * on the neighbouring nodes, connectRings):
 *  - the chain adds, at position i, a receive from i + 1 and a send to i - 1;
 *  - each network link adds a receive and a send, but the receive at the
 *    first GPU from the previous node's last (the ring's) and the send at the
 *    last GPU to the next node's first.
 * The busiest GPU of the busiest node is taken (every node, every GPU). */
static void btree(int64_t n, int64_t rank, int64_t *u, int64_t *d0, int64_t *d1, int *type)
{
    int64_t bit; /* trees.cc ncclGetBtree, line for line */
    for (bit = 1; bit < n; bit <<= 1)
        if (bit & rank) break;
    if (rank == 0) {
        *u = *d0 = -1;
        *d1 = n > 1 ? bit >> 1 : -1;
        *type = 0;
        return;
    }
    int64_t up = (rank ^ bit) | (bit << 1);
    if (up >= n) up = rank ^ bit;
    *type = rank < up ? 0 : 1;
    *u = up;
    int64_t lowbit = bit >> 1;
    *d0 = lowbit == 0 ? -1 : rank - lowbit;
    int64_t down1 = lowbit == 0 ? -1 : rank + lowbit;
    while (down1 >= n) {
        down1 = lowbit == 0 ? -1 : rank + lowbit;
        lowbit >>= 1;
    }
    *d1 = down1;
}

/* trees.cc ncclGetDtree: tree t (0, 1) of node `rank` of n: parent, children, child type */
static void dtree(int64_t n, int64_t rank, int t, int64_t *u, int64_t *d0, int64_t *d1, int *type)
{
    if (t == 0) {
        btree(n, rank, u, d0, d1, type);
        return;
    }
    int64_t a, b, c;
    if (n % 2 == 1) { /* shift */
        btree(n, (rank - 1 + n) % n, &a, &b, &c, type);
        *u = a == -1 ? -1 : (a + 1) % n;
        *d0 = b == -1 ? -1 : (b + 1) % n;
        *d1 = c == -1 ? -1 : (c + 1) % n;
    } else { /* mirror */
        btree(n, n - 1 - rank, &a, &b, &c, type);
        *u = a == -1 ? -1 : n - 1 - a;
        *d0 = b == -1 ? -1 : n - 1 - b;
        *d1 = c == -1 ? -1 : n - 1 - c;
    }
}

/* The tree half of channel c: the search's `base` = 2 x graph channels, the
 * first half tree 0 (copyChannels repeats them past base). */
static int tree_half(int64_t c, int64_t base) { return c % base < base / 2 ? 0 : 1; }

typedef struct {
    int64_t p2p_recv, p2p_send, net_recv, net_send; /* connections on one GPU */
} tree_conns;

/* A network link of node nd's GPU at position pos to node peer's GPU at
 * position ppos: a receive and a send, less the ring's (L GPUs, N nodes). */
static void net_link(tree_conns *k, int64_t nd, int64_t pos, int64_t peer, int64_t ppos, int64_t L, int64_t N)
{
    if (!(pos == 0 && peer == (nd - 1 + N) % N && ppos == L - 1)) k->net_recv++;
    if (!(pos == L - 1 && peer == (nd + 1) % N && ppos == 0)) k->net_send++;
}

/* One communicator's tree connections beyond its ring's, on its busiest GPU:
 * `size` ranks, `local` of them on each node, `channels` channels of which
 * the search opened `base`; recv/send: a P2P connection's bytes; netpair: a
 * network receive + send on the device (0 without GDR). *net: the network's
 * part. */
static int64_t tree_group(int64_t channels, int64_t base, int64_t local, int64_t size, int64_t recv, int64_t send,
                          int64_t net_recv, int64_t net_send, int64_t *net)
{
    const int64_t L = local, N = (size + local - 1) / local, graph = base / 2 > 0 ? base / 2 : 1;
    const int64_t pc0 = L >= 2 ? 1 : 0, pc1 = 0; /* BALANCED_TREE's child positions; TREE's with one GPU */
    int64_t best = 0;
    *net = 0;
    for (int64_t nd = 0; nd < N; nd++) {
        int64_t u[2], d0[2], d1[2];
        int type[2];
        for (int t = 0; t < 2; t++) dtree(N, nd, t, &u[t], &d0[t], &d1[t], &type[t]);
        for (int64_t x = 0; x < L; x++) {
            tree_conns k = {0, 0, 0, 0};
            for (int64_t c = 0; c < channels; c++) {
                int t = tree_half(c, base);
                int64_t pos = ((x - (c % base) % graph) % L + L) % L;
                if (pos + 1 < L) k.p2p_recv++;
                if (pos >= 1) k.p2p_send++;
                if (pos == 0 && u[t] != -1) net_link(&k, nd, pos, u[t], type[t] == 0 ? pc0 : pc1, L, N);
                if (pos == pc0 && d0[t] != -1) net_link(&k, nd, pos, d0[t], 0, L, N);
                if (pos == pc1 && d1[t] != -1) net_link(&k, nd, pos, d1[t], 0, L, N);
            }
            int64_t nb = k.net_recv * net_recv + k.net_send * net_send;
            int64_t b = k.p2p_recv * recv + k.p2p_send * send + nb;
            if (b > best) {
                best = b;
                *net = nb;
            }
        }
    }
    return best;
}

/* The NVLS trees (nvls.cc ncclNvlsTreeConnect, connect.cc connectNvls): on
 * every NVLS channel c each head (every GPU of the node: the NVLS graph's
 * heads) connects to the same head of its parent and children nodes in
 * ncclGetDtree's tree c % 2, a receive and a send each (connIndex 0, the
 * network transport; nvls.treeDown[0], the multicast peer, is past nRanks
 * and not a connection). The busiest node's links x (receive + send). */
static int64_t nvls_tree_group(int64_t nvls_channels, int64_t nodes, int64_t netpair)
{
    int64_t best = 0;
    for (int64_t nd = 0; nd < nodes; nd++) {
        int64_t links = 0;
        for (int t = 0; t < 2; t++) {
            int64_t u, d0, d1;
            int type;
            dtree(nodes, nd, t, &u, &d0, &d1, &type);
            int64_t deg = (u != -1) + (d0 != -1) + (d1 != -1);
            links += deg * (t == 0 ? (nvls_channels + 1) / 2 : nvls_channels / 2); /* channel c runs tree c % 2 */
        }
        if (links > best) best = links;
    }
    return best * netpair;
}

/* ---- PAT (issue 27) ----
 * NVIDIA/nccl@5067397c. PAT ("Parallel Aggregated Trees", NCCL 2.23+) runs
 * reduce-scatter and all-gather only: src/graph/tuning.cc ncclTopoTuneModel
 * offers NCCL_ALGO_PAT to ncclFuncReduceScatter and ncclFuncAllGather (never
 * all-reduce), SIMPLE protocol only, where ncclPatEnable says so:
 * NCCL_PAT_ENABLE 2 by default, comm->minCompCap >= 60, comm->nNodes ==
 * comm->nRanks ("PAT only supports 1 GPU per node") and the host network
 * (no device offload); its latency, log2i(nNodes) x interLat / 3.5 +
 * nRanks x 2.8, grows with the log of the nodes where the ring's nRanks - 1
 * network steps grow with them, so a small all-gather or reduce-scatter
 * across nodes takes it (taken here for every data-parallel group whose
 * all-gather spans nodes one GPU a node: a layer's or a bucket's, the small
 * ones among them; enqueue.cc skips PAT for a reduce-scatter with
 * PreMulSum / SumPostDiv, the all-gather still takes it). With
 * NCCL_RUNTIME_CONNECT its connections are made at its first collective
 * (group.cc ncclCollPreconnect: case NCCL_ALGO_PAT ->
 * ncclTransportPatConnect; without runtime connect, init.cc at init when
 * comm->maxLocalRanks == 1). src/transport/generic.cc
 * ncclTransportPatConnect: for mask = 1, 2, 4, ... < nRanks, prevPeer =
 * (rank + mask) % nRanks and nextPeer = (rank - mask) mod nRanks, on every
 * channel (comm->nChannels) a receive from prevPeer and a send to nextPeer
 * (reduce-scatter), then a receive from nextPeer and a send to prevPeer
 * (all-gather), connIndex 0: dedicated buffers; ncclTransportP2pConnect
 * skips a (channel, peer) already connected, the ring's receive from
 * ring.prev = rank - 1 and send to ring.next = rank + 1 (one GPU a node:
 * the ring runs over the nodes in rank order) among them. So on each
 * channel a GPU receives from and sends to every rank rank +- 2^k: with S
 * those distinct offsets, 2 x (|S| - 1) new connections, each a network
 * receive or send (one GPU a node: every peer elsewhere), 10 MiB on the
 * device with GPU Direct RDMA (net.cc, above), none without. |S|: 2 ranks
 * 1 (nothing new: the ring's), 3 ranks 2 (+2 = -1), 4 ranks 3, 6 ranks 4, 8 ranks 5, 16 ranks 7. */
static int64_t pat_offsets(int64_t n)
{
    int64_t v[128]; /* the distinct (+-m) mod n over m = 1, 2, 4, ... < n (n < 2^63: 63 masks) */
    int k = 0;
    for (int64_t m = 1; m > 0 && m < n; m <<= 1)
        for (int s = 0; s < 2; s++) {
            int64_t x = s ? n - m : m, j = 0;
            while (j < k && v[j] != x) j++;
            if (j == k) v[k++] = x;
        }
    return k;
}

static int64_t pat_group(int64_t channels, int64_t size, int64_t net_recv, int64_t net_send)
{
    return channels * (pat_offsets(size) - 1) * (net_recv + net_send);
}

/* ---- RCCL: AMD's port (issue 27) ----
 * ROCm/rccl@0cbce2a7571c907554199fad7e905f16ec0a565c. What differs from NCCL:
 *  - buffer sizes: NCCL_MAX_NTHREADS is 256 (src/include/device.h), so
 *    computeBuffSizes (src/init.cc) gives LL 8 x 256 x 8 x 16 = 262,144 B and
 *    LL128 NCCL_LL128_ELEMS_PER_THREAD (28) x NCCL_LL128_MAX_NTHREADS (256) x 8
 *    x 8 = 458,752 B; SIMPLE 4 MiB as NCCL's. p2p.cc p2pRecvSetup / p2pSendSetup
 *    size a connection as NCCL's do, write mode (paths.cc ncclTopoCheckP2p
 *    reads only between sm80 pairs), ALIGN_SIZE to CUDA_IPC_MIN (2 MiB): a
 *    receive 4096 + 262,144 + 458,752 + 4,194,304 = 4,919,296 B -> 6 MiB, a
 *    send 4096 B -> 2 MiB. Every AMD card.
 *  - the channels on MI300X (gfx942) with the communicator on one node, its
 *    GPUs all joined by xGMI (an 8 x MI300X board: each GPU one link to each
 *    other, ncclTopoXGMISpeed GFX94X_XGMI_WIDTH 48 GB/s a link, topo.h):
 *      init.cc initTransportsRank searches the ring graph (ncclTopoCompute,
 *      search.cc); ncclTopoTrimSystem (paths.cc) removes the NICs of a
 *      one-node communicator whose GPUs are all xGMI-connected.
 *      8 ranks: the model matching comes first (search.cc: parseChordalRing,
 *        then parseA2a8P, rome_models.cc): 8 GPUs on 2 NUMA nodes, all-to-all
 *        links of equal width, no NIC, 7 links: rome_model_79 (pattern "4040",
 *        options "...,mscclEnabled=1,tuning=5,..."), whose ringBase lists 28
 *        rings (rccl_mi300x_rings below); parseGraph takes them as the ring
 *        and, its treeBase being null, the tree graph's channels. The ring
 *        multiplier nc stays 2 (the gfx94 branch sets it for 2 and 4 ranks
 *        only). ncclTopoPostset (connect.cc): maxChannels MAXCHANNELS 128
 *        (gfx94 with 304 CUs; no NIC marks in the rings: nIntraChannels 0), nc =
 *        min(maxNchannels / 28, 2) x 28 = 56, the duplication 28 -> 56,
 *        copyChannels(.., max(ncclMinNchannels() 2, nc)) = 56 channels;
 *        channel c runs ring c mod 28. MSCCL's internal scheduler may raise
 *        the minimum to its algorithms' channels (mscclSchedulerInit): the
 *        8-rank files RCCL installs (tools/msccl-algorithms) need 32 at most.
 *      2 ranks: no model (no 2-GPU one); the search's speedArrayIntra {48,
 *        24, ...}: one 48 GB/s link each way, 1 channel x 48 = totalBw 48,
 *        done; ncclTopoDupChannels (ccMin 94 > 80, 48 < 50 GB/s but 1 <= 4
 *        channels) -> 2 x 24; pass 2 fails at 48. Postset: nc 16 ("NCCL_MIN_
 *        NCHANNELS=32"), min(128 / 2, 16) x 2 = 32; duplication 4; copy to 32.
 *      4 ranks: three 48 GB/s links a GPU, totalBw 144: at 48 GB/s two rings
 *        at most (the complete digraph on 4 vertices has no decomposition into
 *        3 Hamiltonian cycles, Tillson), 96 < 144; 24 / 48 > 0.49: at 24 GB/s
 *        the six directed Hamiltonian cycles use every link twice, 6 x 24 =
 *        144 = totalBw, done; no duplication (< 25 GB/s). Postset: nc 4
 *        ("=24"), min(128 / 6, 4) x 6 = 24; duplication 12; copy to 24.
 *  - the trees: RCCL connects them at init beside the rings, on every
 *    communicator (init.cc "Connect Trees": ncclTransportP2pConnect of
 *    tree.down and tree.up on each channel, then ncclTransportP2pSetup; no
 *    runtime connect at this commit), connIndex 0: a (channel, peer, direction)
 *    the ring already connected is not connected again. On one node a tree is
 *    the chain of the tree graph's order (ncclTopoPreset: tree.up =
 *    intra[i - 1], tree.down[0] = intra[i + 1]): against the ring of the same
 *    order (ring.prev = intra[i - 1], ring.next = intra[i + 1]) a middle GPU
 *    adds a send to intra[i - 1] and a receive from intra[i + 1], the first a
 *    receive, the last a send. 2 ranks: nothing (the one peer, both ways, is
 *    the ring's). 8 ranks: the model's rings are the tree's orders
 *    (rccl_tree_extra). 4 ranks: the tree graph comes from its own search
 *    (BALANCED_TREE, min = max = 6 channels), whose orders are not
 *    replicated: not counted.
 *  - P2P (send/recv, all-to-all; paths.cc ncclTopoComputeP2pChannels): per
 *    peer ncclTopoGetNchannels 4 x max(1, 48 / 48) on gfx94 xGMI, pow2Up 4,
 *    doubled on one node for gfx94: 8; p2pnChannels min(pow2Up(nChannels), 64).
 *  - no NVLS (no NVSwitch: ncclTopoCompute returns no NVLS graph), no PAT
 *    (not at this commit), CollNet off.
 * Not counted: MSCCL (init.cc: mscclInit at init where mscclEnabled(),
 * RCCL_MSCCL_ENABLE 1, and the topology's mscclEnabled, rome_model_79's, i.e.
 * 8 ranks: mscclSetupConnections connects each algorithm file's channels and
 * peers, connIndex 0, if the installation has the files: on the busiest GPU
 * 58 receives and 55 sends beyond the rings' and trees', 458 MiB, counted
 * from tools/msccl-algorithms by hand; whether a wheel ships them vramcalc
 * cannot see), MSCCL++ (mscclpp_ncclCommInitRank at init, its own buffers,
 * sizes in ext-src/mscclpp not read), and the channels of other group sizes
 * and of MI210 / MI250X (their search not replicated: the pcie row's). */
#define RCCL_LL_BUFF (INT64_C(8) * 256 * 8 * 16)
#define RCCL_LL128_BUFF (INT64_C(28) * 256 * 8 * 8)
#define RCCL_MI300X_PER_PEER 8

/* rome_models.cc rome_model_79 .ringBase, the 8-rank rings (twice the same 14) */
static const char rccl_mi300x_rings[] =
    "0 1 2 3 4 5 6 7|0 1 2 3 4 5 7 6|0 2 4 1 3 6 5 7|0 2 4 6 1 7 3 5|0 3 1 5 2 7 4 6|0 3 5 1 6 2 7 4|"
    "0 4 1 7 3 6 2 5|7 6 5 4 3 2 1 0|6 7 5 4 3 2 1 0|7 5 6 3 1 4 2 0|5 3 7 1 6 4 2 0|6 4 7 2 5 1 3 0|"
    "4 7 2 6 1 5 3 0|5 2 6 3 7 1 4 0|0 1 2 3 4 5 6 7|0 1 2 3 4 5 7 6|0 2 4 1 3 6 5 7|0 2 4 6 1 7 3 5|"
    "0 3 1 5 2 7 4 6|0 3 5 1 6 2 7 4|0 4 1 7 3 6 2 5|7 6 5 4 3 2 1 0|6 7 5 4 3 2 1 0|7 5 6 3 1 4 2 0|"
    "5 3 7 1 6 4 2 0|6 4 7 2 5 1 3 0|4 7 2 6 1 5 3 0|5 2 6 3 7 1 4 0";
#define RCCL_MI300X_RINGS 28

static void rccl_p2p_connection(int64_t *recv, int64_t *send)
{
    *recv = align_ipc(CONN_MEM + RCCL_LL_BUFF + RCCL_LL128_BUFF + SIMPLE_BUFF);
    *send = align_ipc(CONN_MEM);
}

static bool is_amd(const vc_gpu *g) { return g && strcmp(g->vendor, "AMD") == 0; }
static bool is_mi300x(const vc_gpu *g) { return g && strcmp(g->name, "mi300x") == 0; }

/* comm->nChannels of an MI300X communicator of `ranks` on one node; 0: not derived */
static int rccl_mi300x_channels(int64_t ranks)
{
    return ranks == 2 ? 32 : ranks == 4 ? 24 : ranks == 8 ? 56 : 0;
}

/* The bytes the 8-rank trees add to the rings on the busiest GPU, channel c
 * running ring c mod 28 (a GPU's place differs by ring: the busiest one is a
 * chain's middle on every channel). */
static int64_t rccl_tree_extra(int64_t ranks, int64_t channels, int64_t recv, int64_t send)
{
    if (ranks != 8) return 0;
    int pos[RCCL_MI300X_RINGS][8]; /* pos[ring][gpu]: its place in the ring's order */
    int r = 0, i = 0;
    for (const char *s = rccl_mi300x_rings; *s && r < RCCL_MI300X_RINGS; s++) {
        if (*s >= '0' && *s <= '7') pos[r][*s - '0'] = i++;
        else if (*s == '|') r++, i = 0;
    }
    int64_t best = 0;
    for (int g = 0; g < 8; g++) {
        int64_t b = 0;
        for (int64_t c = 0; c < channels; c++) {
            int p = pos[c % RCCL_MI300X_RINGS][g];
            b += (p > 0 ? send : 0) + (p < 7 ? recv : 0);
        }
        if (b > best) best = b;
    }
    return best;
}

/* What one GPU of a multi-GPU layout holds (issue 27 item 3), its
 * communicators at the channels NCCL opens on the topology (topos[]).
 * Communicators per GPU (torch.distributed's ProcessGroupNCCL makes one
 * ncclComm per process group and device, at its first collective):
 *  - data parallel (ddp, zero1-torch, fsdp, shard-grad-op, fsdp2, DeepSpeed
 *    zero1-3, megatron's DP group): one over the data-parallel ranks, when
 *    there are two or more; HSDP (hybrid, fsdp2 with --fsdp-replicate) two,
 *    the shard group and the replicate group;
 *  - tensor parallel (--tp): one;
 *    each a ring on every collective channel (ncclTransportRingConnect: one
 *    receive and one send per channel), and on NVSwitch sm90+ the NVLS
 *    buffers of its all-reduce / reduce-scatter / all-gather (the node's
 *    members are the NVLS heads);
 *  - pipeline (--pp): send/recv to the neighbouring stages, p2pnChannelsPerPeer
 *    channels to each on the node; a first or last stage has one neighbour,
 *    a middle one two (o->nccl_stage: the stage; 0, the busiest stage's);
 *  - expert parallel (--ep): an all-to-all, p2pnChannelsPerPeer channels to
 *    each of the ep - 1 other ranks on the node.
 * Peers on other nodes (o->gpus_per_node, default 8) connect through the
 * network transport (above): a spanning ring's network channels, one
 * send/recv pool pair per P2P communicator with a peer elsewhere.
 * --nccl-topology shm: GPUs without peer access (p2pCanConnect,
 * src/transport/p2p.cc: cudaDeviceCanAccessPeer says no, as on GeForce cards
 * with the stock driver; NVIDIA/nccl#1127, NVIDIA/nccl-tests#117) connect
 * through the SHM transport (src/transport/shm.cc): shmSendSetup and
 * shmRecvSetup size ncclSendMem / ncclRecvMem + every protocol's buffer
 * (on the receive side, NCCL_SHM_LOCALITY's default) and
 * ncclShmAllocateShareableBuffer allocates it in host memory
 * (ncclCuMemHostAlloc or /dev/shm): none of it on the GPU. The channels are
 * the pcie row's.
 * A group whose all-reduce spans nodes also holds its trees' connections
 * (tree_group, nvls_tree_group above). Not counted: trees on one node (the
 * tuning's ring, NVLS and P2P win there), CollNet (NCCL_COLLNET_ENABLE is 0
 * by default, comm->config.collnetEnable: it needs a SHARP network plugin,
 * and tuning.cc disables CollNet Direct, Chain and NVLS across nodes without
 * it), PAT on a group that also all-reduces (the TP group under --sp one
 * GPU a node: its trees' and PAT's connections overlap), NCCL's work FIFO
 * and proxy state (host memory). A data-parallel group whose all-gather
 * spans nodes one GPU a node also holds PAT's connections (pat_group). */
void vc_nccl_per_gpu(const vc_options *o, vc_nccl_info *n)
{
    memset(n, 0, sizeof *n);
    vc_options full_o; /* the legacy struct's size (vramcalc.h) */
    if (vc__options_in(&o, &full_o, NULL)) return;
    int64_t stages = o->pp > 1 ? o->pp : o->nccl_stages > 1 ? o->nccl_stages : 1;
    int64_t tp = o->tp > 1 ? o->tp : 1, ep = o->ep > 1 ? o->ep : 1;
    int64_t world = (o->gpus > 1 ? o->gpus : 1) * (o->pp > 1 ? 1 : stages); /* a stage's options: gpus / pp */
    int64_t dp = world % (tp * stages) == 0 ? world / (tp * stages) : 1;
    if (world < 2) return;
    int64_t gpn = o->gpus_per_node > 0 ? o->gpus_per_node : NODE_GPUS;
    int sm = o->device && o->device->sm ? o->device->sm : 80;
    vc_nccl_topology t = o->nccl_topology != VC_NCCL_TOPO_AUTO ? o->nccl_topology : auto_topology(o->device);
    /* SHM: the PCIe rows' channels (the search's), each connection in host memory */
    const topo_row *row = find_row(t == VC_NCCL_TOPO_SHM ? VC_NCCL_TOPO_PCIE : t, sm);
    if (!row) row = find_row(VC_NCCL_TOPO_PCIE, sm); /* vc_nccl_check refused the others */
    bool gdr = t == VC_NCCL_TOPO_NVSWITCH;
    const bool nvidia = !o->device || !strcmp(o->device->vendor, "NVIDIA"); /* RCCL's PAT: not read */
    n->topology = t;
    n->topology_row = row->what;
    n->nodes = (world + gpn - 1) / gpn;
    int64_t groups[3] = {0, 0, 0}, strides[3] = {1, 1, 1}; /* the ring communicators' sizes, their ranks' spacing */
    /* whether the layout all-reduces over the group (trees across nodes): DDP's gradient buckets
     * (torch/csrc/distributed/c10d/reducer.cpp; ZeroRedundancyOptimizer and Megatron's DDP without
     * the distributed optimizer alike), HSDP's replicate group (FSDP1 _runtime_utils.py
     * _post_reduce_grad_callback's all_reduce over the inter-node group; FSDP2 foreach_reduce's
     * all_reduce over the replicate group), the TP group (Megatron's row-parallel all-reduce).
     * FSDP's and ZeRO-3's reduce-scatter / all-gather, DeepSpeed ZeRO-1/2's reduce (reduce_scatter
     * true, stage_1_and_2.py average_tensor) and megatron-dist's reduce-scatter run no tree */
    bool allred[3] = {false, false, false};
    int ng = 0;
    if (dp > 1) {
        bool hsdp = o->parallel == VC_PARALLEL_FSDP_HYBRID || (o->parallel == VC_PARALLEL_FSDP2 && o->fsdp_replicate > 1);
        if (hsdp && o->parallel == VC_PARALLEL_FSDP2 && dp % o->fsdp_replicate == 0) {
            strides[ng] = tp;
            groups[ng++] = dp / o->fsdp_replicate; /* the shard group */
            strides[ng] = tp * (dp / o->fsdp_replicate);
            allred[ng] = true;
            groups[ng++] = o->fsdp_replicate;      /* the replicate group */
        } else if (hsdp) { /* FSDP1 HYBRID_SHARD: the shard group is the node's ranks */
            int64_t node = dp < gpn ? dp : gpn;
            groups[ng++] = node;
            strides[ng] = node;
            allred[ng] = true;
            groups[ng++] = dp / node;
        } else {
            strides[ng] = tp;
            allred[ng] = o->parallel == VC_PARALLEL_DDP || o->parallel == VC_PARALLEL_ZERO1_TORCH ||
                         o->parallel == VC_PARALLEL_MEGATRON;
            groups[ng++] = dp;
        }
    }
    if (tp > 1) {
        strides[ng] = 1;
        allred[ng] = true;
        groups[ng++] = tp;
    }
    int kept = 0; /* a group of one rank connects nothing */
    for (int i = 0; i < ng; i++)
        if (groups[i] > 1) {
            strides[kept] = strides[i];
            allred[kept] = allred[i];
            groups[kept++] = groups[i];
        }
    ng = kept;
    n->ring_communicators = ng;
    n->communicators = n->ring_communicators + (stages > 1) + (ep > 1);
    /* ncclTopoPostset: NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS = N pins comm->nChannels */
    n->channels = o->nccl_channels > 0 ? o->nccl_channels : row->coll;
    /* ncclTopoComputeP2pChannels */
    int p2pn = pow2_up((int)(n->channels < 64 ? n->channels : 64));
    n->p2p_channels = p2pn;
    n->p2p_channels_per_peer = row->per_peer_topo < p2pn ? row->per_peer_topo : p2pn;
    int64_t recv, send;
    vc_nccl_p2p_connection(0, &recv, &send);
    /* AMD: RCCL's buffers; on MI300X (auto topology) its xGMI channels where derived (above) */
    const bool amd = is_amd(o->device), xgmi = is_mi300x(o->device) && o->nccl_topology == VC_NCCL_TOPO_AUTO;
    if (amd) rccl_p2p_connection(&recv, &send);
    if (xgmi && n->nodes == 1) {
        n->topology_row = "xGMI, 8 x MI300X (RCCL: 2, 4, 8 ranks 32, 24, 56 channels)";
        n->p2p_channels_per_peer = RCCL_MI300X_PER_PEER; /* p2pnChannels >= 32 for 2, 4, 8 ranks */
    }
    if (t == VC_NCCL_TOPO_SHM) /* shm.cc shmSendSetup/shmRecvSetup: ncclShmAllocateShareableBuffer, host memory */
        recv = send = 0;
    /* every count here is small (channels <= 64, peers < 2^20, the options' checks): no overflow */
    const int64_t net_recv = gdr ? align_ipc(NET_RECV_DEV) : 0, net_send = gdr ? align_ipc(NET_SEND_DEV) : 0;
    /* the trees' P2P connections one by one: read mode (SIMPLE's buffer on the sender) between
     * sm80 GPUs over NVLink (paths.cc ncclTopoCheckP2p, "Enable P2P Read for Ampere/NVLink only";
     * p2p.cc keeps it for connIndex 0), write mode elsewhere */
    int64_t trecv, tsend;
    vc_nccl_p2p_connection(sm == 80 && (t == VC_NCCL_TOPO_NVSWITCH || t == VC_NCCL_TOPO_NVLINK), &trecv, &tsend);
    if (amd) rccl_p2p_connection(&trecv, &tsend);
    if (t == VC_NCCL_TOPO_SHM) trecv = tsend = 0;
    int64_t rccl_channels = 0; /* the largest RCCL channel count of the groups (xgmi) */
    for (int i = 0; i < ng; i++) {
        int64_t net, local = on_node(strides[i], groups[i], gpn);
        const int rc = xgmi && local == groups[i] && t != VC_NCCL_TOPO_SHM ? rccl_mi300x_channels(groups[i]) : 0;
        if (rc) { /* RCCL on one MI300X node: its channels, its rings and, connected with them at init, trees */
            const int64_t ch = o->nccl_channels > 0 ? o->nccl_channels : rc;
            if (ch > rccl_channels) rccl_channels = ch;
            n->ring_bytes += ch * (recv + send) + rccl_tree_extra(groups[i], ch, recv, send);
            continue;
        }
        n->ring_bytes += ring_group(n->channels, local, groups[i], recv + send, gdr, &net);
        n->net_bytes += net;
        if (allred[i] && local < groups[i]) { /* an all-reduce across nodes: its trees */
            n->tree_communicators++;
            n->tree_bytes += tree_group(n->channels, row->coll, local, groups[i], trecv, tsend, net_recv, net_send, &net);
            n->net_bytes += net;
        }
        if (!allred[i] && local == 1 && sm >= 60 && nvidia) { /* all-gather / reduce-scatter one GPU a node: PAT */
            n->pat_communicators++;
            n->pat_bytes += pat_group(n->channels, groups[i], net_recv, net_send);
        }
    }
    if (xgmi && n->nodes == 1) n->topology = VC_NCCL_TOPO_XGMI; /* the report's name */
    if (rccl_channels) {
        n->channels = rccl_channels;
        n->p2p_channels = pow2_up((int)(rccl_channels < 64 ? rccl_channels : 64));
    }
    /* pipeline neighbours: the given stage's, else the busiest stage's (on
     * equal bytes the one with more peers) */
    int64_t pp_local = 0, pp_remote = 0, per = world / stages, pool = net_p2p_pools(p2pn, gdr);
    int64_t peer_bytes = n->p2p_channels_per_peer * (recv + send);
    int64_t best = -1;
    for (int64_t r = o->nccl_stage > 0 ? o->nccl_stage - 1 : 0; stages > 1 && r < stages; r++) {
        int64_t l, m;
        stage_peers(r, stages, per, gpn, &l, &m);
        int64_t b = l * peer_bytes + (m ? pool : 0);
        if (b > best || (b == best && l + m > pp_local + pp_remote)) {
            best = b;
            pp_local = l;
            pp_remote = m;
        }
        if (o->nccl_stage > 0) break;
    }
    int64_t ep_local = ep > 1 ? on_node(tp, ep, gpn) - 1 : 0, ep_remote = ep > 1 ? ep - 1 - ep_local : 0;
    n->p2p_peers = pp_local + pp_remote + ep_local + ep_remote;
    n->p2p_bytes = (pp_local + ep_local) * peer_bytes;
    n->net_bytes += (pp_remote ? pool : 0) + (ep_remote ? pool : 0);
    n->p2p_bytes += (pp_remote ? pool : 0) + (ep_remote ? pool : 0);
    /* NVLS (nvls.cc): ncclNvlsInit, NCCL_NVLS_ENABLE 2 (0: --nccl-nvls off), the driver's
     * CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED (the rows' nvls), the code built with CUDA 12.1 or
     * later (#if CUDART_VERSION >= 12010; PyTorch's NCCL is built with its CUDA, --cuda) and two
     * or more GPUs of the communicator on the node (gpuCount < 2: none). Per communicator:
     *  - ncclNvlsSetup, at init: the credits, nvlsChannels x 2 x 64 B x nHeads, nvlsAllocateMem
     *    rounding up to cuMem's granularity (2 MiB);
     *  - ncclNvlsBufferSetup, at the first NVLS or NVLS-tree collective: heads x nvlsChannels x 2
     *    x 1 MiB. On one node all-reduce, reduce-scatter and all-gather take NVLS; across nodes
     *    tuning.cc disables NVLS without CollNet ("Disable ... Collnet+NVLS if collnet is not
     *    supported") and only all-reduce's NVLS_TREE remains (ncclPrepareTasks sets NVLS's
     *    connection with it): the buffers of an all-reduce group only;
     *  - across nodes, the NVLS trees' network links (nvls_tree_group).
     * nvlsChannels (ncclNvlsTuning): sm90 16; sm100 24 on one node (NVLS_NCHANNELS_SM100_NVL),
     * across nodes NVLS_NCHANNELS_SM100 32 then ncclNvlsTreeSm100Tuning by the NICs' bandwidth:
     * taken for 400 Gb/s NICs (HGX B200's ConnectX-7, 50 GB/s: nicBw >= 48, < 96), 32 on two
     * nodes, 24 on more. */
    const bool nvls = row->nvls && o->nccl_nvls != VC_NCCL_NVLS_OFF && o->cuda_version >= 1201;
    n->nvls_channels = nvls ? row->nvls : 0;
    for (int i = 0; i < ng && nvls; i++) {
        int64_t heads = on_node(strides[i], groups[i], gpn), nodes = (groups[i] + heads - 1) / heads;
        if (heads < 2) continue;
        int64_t ch = sm >= 100 && nodes > 1 ? (nodes == 2 ? 32 : 24) : row->nvls;
        if (ch > n->nvls_channels) n->nvls_channels = ch;
        n->nvls_credit_bytes += align_ipc(ch * 2 * NVLS_CREDIT * heads);
        if (nodes == 1 || allred[i]) n->nvls_bytes += heads * ch * 2 * NVLS_BUFF;
        if (nodes > 1 && allred[i]) n->nvls_tree_bytes += nvls_tree_group(ch, nodes, net_recv + net_send);
    }
    n->nvls_bytes += n->nvls_credit_bytes;
    n->net_bytes += n->nvls_tree_bytes + n->pat_bytes;
    n->bytes = n->ring_bytes + n->p2p_bytes + n->nvls_bytes + n->tree_bytes + n->nvls_tree_bytes + n->pat_bytes;
}

/* The breakdown behind a figure: a pipeline's report shows the busiest
 * stage's total, whose NCCL bytes are `bytes`; the first stage with those
 * bytes (the stages differ in their neighbours only). */
void vc_nccl_per_gpu_of(const vc_options *o, int64_t bytes, vc_nccl_info *n)
{
    vc_nccl_per_gpu(o, n);
    vc_options full_o;
    if (n->bytes == bytes || vc__options_in(&o, &full_o, NULL) || o->pp < 2 || o->nccl_stage > 0) return;
    vc_options x = *o;
    for (x.nccl_stage = 1; x.nccl_stage <= o->pp; x.nccl_stage++) {
        vc_nccl_per_gpu(&x, n);
        if (n->bytes == bytes) return;
    }
    vc_nccl_per_gpu(o, n);
}
