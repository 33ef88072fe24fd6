#!/usr/bin/python3
"""fsdp_check.py -- does torch 1.13's FullyShardedDataParallel run on CPU with gloo?

    /usr/bin/python3 bench/accuracy/dist/fsdp_check.py [--world 2] [--out fsdp_check.json]

Starts `world` ranks (gloo, 127.0.0.1, LD_PRELOAD=libmemtrack.so).  Each rank builds
bench/accuracy/models/mlp.json with vctorch, wraps it in FSDP (FULL_SHARD, one unit:
the whole model, so one FlatParameter), reads the accuracy harness's counter after the
constructor (the sharded FlatParameter this rank keeps), then tries a forward pass and
records the exception.  Answer with Debian's torch 1.13.1 (CPU-only build, Python 3.11),
three walls, each enough on its own (torch/distributed/fsdp/fully_sharded_data_parallel.py):
  1. `import torch.distributed.fsdp` fails on Python 3.11 (see _install_shim; worked around);
  2. the constructor fails: FullyShardedDataParallel.__init__ -> _get_compute_device ->
     torch.device("cuda", torch.cuda.current_device()) for a module not on a GPU
     ("AssertionError: Torch not compiled with CUDA enabled");
  3. were it constructed, the first forward raises in _lazy_init
     (`if not torch.cuda.is_available(): raise RuntimeError("FSDP does not support CPU only
     execution")`) and _init_streams needs torch.cuda.Stream.
The result (fsdp_check.json) records what happened on each rank.
`--offload` (-> fsdp_check_offload.json) asks the same with cpu_offload=CPUOffload(offload_params=True),
FSDP1's CPU offload: the same walls (_get_compute_device does not look at cpu_offload; _lazy_init
refuses CPU-only execution before anything else), so FSDP's CPU offload cannot run here either.
"""

import gc
import json
import os
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ACC = os.path.dirname(HERE)
ROOT = os.path.dirname(os.path.dirname(ACC))


def _install_shim():
    """Debian's torch 1.13 cannot import torch.distributed.fsdp on Python 3.11:
    torch/distributed/_shard/sharded_tensor/metadata.py declares
    `tensor_properties: TensorProperties = field(default=TensorProperties())`, and 3.11's
    dataclasses reject an unhashable default ("mutable default ... use default_factory").
    PyTorch 2.0 changed that line to `field(default_factory=TensorProperties)`; this import
    hook loads the module with that one change (no effect on memory)."""
    import importlib.abc
    import importlib.util
    name = "torch.distributed._shard.sharded_tensor.metadata"

    class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, fullname, path, target=None):
            if fullname != name:
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(fullname)
            sys.meta_path.insert(0, self)
            self.origin = spec.origin
            return importlib.util.spec_from_file_location(fullname, spec.origin, loader=self)

        def create_module(self, spec):
            return None

        def exec_module(self, module):
            with open(self.origin) as f:
                src = f.read()
            old = "field(default=TensorProperties())"
            assert old in src
            exec(compile(src.replace(old, "field(default_factory=TensorProperties)"), self.origin, "exec"),
                 module.__dict__)

    sys.meta_path.insert(0, Finder())


def worker():
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    sys.path.insert(0, ACC)
    import torch
    import torch.distributed as dist
    import measure
    import vctorch
    _install_shim()
    from torch.distributed.fsdp import CPUOffload, FullyShardedDataParallel as FSDP, ShardingStrategy
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", rank=rank, world_size=world)
    tr = measure.Tracker()
    with open(os.path.join(ROOT, "bench/accuracy/models/mlp.json")) as f:
        spec = json.load(f)
    gc.collect()
    tr.start(install=True)
    module, make_inputs = vctorch.build(spec, compat="2x")
    x = make_inputs(4, dtype=torch.float32)
    after_build = tr.O.opobs_current()
    tr.O.opobs_reset_peak()
    res = {"rank": rank, "world_size": world, "torch": torch.__version__, "model": "bench/accuracy/models/mlp.json",
           "after_build_bytes": int(after_build)}
    offload = os.environ.get("FSDP_CHECK_OFFLOAD") == "1"
    if offload:
        res["cpu_offload"] = "CPUOffload(offload_params=True)"
    try:
        m = FSDP(module, sharding_strategy=ShardingStrategy.FULL_SHARD,
                 cpu_offload=CPUOffload(offload_params=True) if offload else None)
        gc.collect()
        res["constructor"] = "ok"
        res["after_fsdp_constructor_bytes"] = int(tr.O.opobs_current())
        res["constructor_peak_bytes"] = int(tr.O.opobs_peak())
        fps = [p for p in m.parameters()]
        res["flat_params"] = [{"numel_local_shard": int(p.numel()), "dtype": str(p.dtype),
                               "unpadded_total_numel": int(getattr(p, "_unsharded_size", torch.Size([0])).numel()),
                               "padded_total_numel": int(p.numel()) * world} for p in fps]
        try:
            m(*x).float().mean().backward()
            res["forward"] = "ok"
        except Exception as e:  # the answer this script exists to record
            res["forward"] = "%s: %s" % (type(e).__name__, e)
    except Exception as e:
        import traceback
        res["constructor"] = "%s: %s" % (type(e).__name__, e)
        res["constructor_traceback"] = [
            "%s:%d %s" % (fr.filename.replace("/usr/lib/python3/dist-packages/", ""), fr.lineno, fr.name)
            for fr in traceback.extract_tb(e.__traceback__)]
    print(json.dumps(res))
    dist.destroy_process_group()


def main(argv):
    import argparse
    import socket
    import subprocess
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--out")
    ap.add_argument("--offload", action="store_true", help="CPUOffload(offload_params=True)")
    a = ap.parse_args(argv)
    a.out = a.out or os.path.join(HERE, "fsdp_check_offload.json" if a.offload else "fsdp_check.json")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    procs = []
    for r in range(a.world):
        env = dict(os.environ, LD_PRELOAD=os.path.join(ACC, "libmemtrack.so"), RANK=str(r),
                   WORLD_SIZE=str(a.world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", FSDP_CHECK_WORKER="1",
                   FSDP_CHECK_OFFLOAD="1" if a.offload else "0")
        procs.append(subprocess.Popen([sys.executable, __file__], env=env, stdout=subprocess.PIPE, text=True))
    recs = [json.loads(p.communicate(timeout=600)[0].strip().splitlines()[-1]) for p in procs]
    with open(a.out, "w") as f:
        json.dump({"generator": "bench/accuracy/dist/fsdp_check.py", "records": recs}, f, indent=1)
    for r in recs:
        print(json.dumps(r))
    return 0


if __name__ == "__main__":
    if os.environ.get("FSDP_CHECK_WORKER") == "1":
        worker()
    else:
        sys.exit(main(sys.argv[1:]))
