#!/usr/bin/python3
"""nccl_probe.py -- NCCL's memory at world size 2, measured (issue 27 item 3; docs/context.md "NCCL").

    python3 bench/accuracy/nccl_probe.py [--out FILE]

Needs a CUDA build of PyTorch 2.x and two GPUs (with fewer it prints {"skipped": WHY} and
exits 0). Two processes (torch.multiprocessing), one GPU each, NCCL backend. Each rank
records, after every stage, what nvidia-smi lists for its process and memory_reserved()
(their difference is everything outside the caching allocator: the CUDA context plus
NCCL's buffers):

    context     the CUDA context up, before init_process_group
    init        after init_process_group (NCCL 2.22+: connections are made lazily)
    all_reduce  after the first all_reduce (ring or tree connections, per channel)
    then all_gather_into_tensor, reduce_scatter_tensor, broadcast, all_to_all_single,
    each after its first call (p2p connections for all-to-all)

NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,P2P unless set) goes to one file per rank
(NCCL_DEBUG_FILE); the probe keeps the lines that name channels, transports and
buffer sizes, and counts the ring channels ("Channel NN/MM"). src/engine/nccl.c predicts
channels x (receive + send) per communicator: 10 + 2 MiB per channel in P2P write mode,
6 + 6 MiB in read mode (NVLink between sm80 GPUs). gpu_compare.py --probes runs this.
"""

import argparse
import glob
import json
import os
import re
import socket
import sys
import tempfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

STAGES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all")
KEEP = re.compile(r"Channel \d+/\d+|nChannels|P2P|SHM|NET|NVLS|CUMEM|Connected all|buffSize|BUFFSIZE|NCCL version"
                  r"|P2P Chunksize|comm 0x")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, world, port, out_dir):
    import torch
    import torch.distributed as dist
    import cudameasure
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world))
    torch.cuda.set_device(rank)
    rec = {"pid": os.getpid()}

    def snap(label):
        torch.cuda.synchronize()
        smi, why = cudameasure.smi_process_total(os.getpid())
        rec[label] = {"nvidia_smi": smi, "why": why, "reserved": torch.cuda.memory_reserved(),
                      "allocated": torch.cuda.memory_allocated()}

    torch.empty(0, device="cuda")
    snap("context")
    dist.init_process_group("nccl", rank=rank, world_size=world)
    snap("init")
    n = 1 << 22  # 16 MiB of fp32: above the LL/LL128 thresholds, so SIMPLE runs too
    x = torch.ones(n, device="cuda")
    dist.all_reduce(x)
    snap("all_reduce")
    out = torch.empty(world * n, device="cuda")
    dist.all_gather_into_tensor(out, x)
    snap("all_gather")
    part = torch.empty(n // world, device="cuda")
    dist.reduce_scatter_tensor(part, x)
    snap("reduce_scatter")
    dist.broadcast(x, 0)
    snap("broadcast")
    y = torch.empty_like(x)
    dist.all_to_all_single(y, x)
    snap("all_to_all")
    dist.barrier()
    dist.destroy_process_group()
    with open(os.path.join(out_dir, "rank%d.json" % rank), "w") as f:
        json.dump(rec, f)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--out", help="write the JSON here (default: stdout)")
    args = ap.parse_args(argv)
    import torch
    world = 2
    result = {"generated_by": "bench/accuracy/nccl_probe.py", "world": world, "torch": torch.__version__}
    if not torch.cuda.is_available() or torch.cuda.device_count() < world:
        result["skipped"] = "needs %d GPUs, %d visible" % (world, torch.cuda.device_count()
                                                           if torch.cuda.is_available() else 0)
    else:
        import torch.multiprocessing as mp
        with tempfile.TemporaryDirectory() as d:
            os.environ.setdefault("NCCL_DEBUG", "INFO")
            os.environ.setdefault("NCCL_DEBUG_SUBSYS", "INIT,P2P")
            os.environ["NCCL_DEBUG_FILE"] = os.path.join(d, "nccl.%h.%p.log")
            mp.spawn(worker, args=(world, free_port(), d), nprocs=world, join=True)
            ranks = {}
            for r in range(world):
                with open(os.path.join(d, "rank%d.json" % r)) as f:
                    ranks[r] = json.load(f)
            logs = {}
            for path in sorted(glob.glob(os.path.join(d, "nccl.*.log"))):
                pid = int(path.rsplit(".", 2)[-2])
                rank = next((r for r, v in ranks.items() if v["pid"] == pid), None)
                with open(path, errors="replace") as f:
                    logs[rank] = [l.rstrip("\n") for l in f if KEEP.search(l)][:400]
        result["nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())
        result["gpus"] = [torch.cuda.get_device_name(i) for i in range(world)]
        result["ranks"] = ranks
        result["log"] = logs
        chans = set()
        for line in logs.get(0) or []:
            m = re.search(r"Channel (\d+)/(\d+)", line)
            if m:
                chans.add(int(m.group(1)))
        result["ring_channels_seen"] = len(chans)
        # outside the allocator after each stage, less the context before init
        result["outside_allocator_delta"] = {
            r: {s: (v[s]["nvidia_smi"] - v[s]["reserved"]) - (v["context"]["nvidia_smi"] - v["context"]["reserved"])
                for s in ("init",) + STAGES if v[s]["nvidia_smi"] is not None and v["context"]["nvidia_smi"] is not None}
            for r, v in ranks.items()}
    text = json.dumps(result, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
