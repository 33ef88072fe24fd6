#!/usr/bin/python3
"""worker.py -- one rank of a multi-process DDP / ZeroRedundancyOptimizer measurement.

Started by run.py (one process per rank, LD_PRELOAD=bench/accuracy/libmemtrack.so,
RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT in the environment), never by hand.
Argument: one JSON object (the case, see run.py).  Prints one JSON object (this rank's
result) on stdout.

Protocol: bench/accuracy/measure.py's (SPEC.md section 4), per rank, with the
accuracy harness's own counter (memtrack.c: c10 CPU allocations, 512 B rounding;
opobserver.cpp: a reading after every aten operator of the main thread):
  1. init_process_group("gloo"); gc.collect(); baseline := tracker total.
  2. build the model (vctorch, compat 2x), input batch (stays resident).
  3. wrap: DistributedDataParallel(module, gradient_as_bucket_view=..., bucket_cap_mb=25)
     -- the constructor broadcasts the module states from rank 0 and allocates the
     reducer's buckets (every engine but 'single').
  4. optimizer: optim2x's PyTorch 2.x foreach Adam/SGD (the single-GPU harness's), or
     ZeroRedundancyOptimizer(params, optimizer_class=<the same, as an Optimizer>)
     for the zero1* engines.
  5. steps 1..S of: loss = ddp(*x).float().mean() (or cross entropy), backward, step,
     zero_grad(set_to_none=True).  peak_allocated = the highest between-op reading in
     steps 2..S, relative to the baseline (as measure.py).  Each phase (wrap, and
     fwd/bwd/opt/zero of every step) also gets its own peak and the total at its end.
The collectives are gloo's: CPU allreduce/broadcast work in place on the tensors
given; gloo's own scratch is malloc'd by gloo, not by c10, and is not counted (on a
GPU NCCL's buffers are outside PyTorch's caching allocator too).
"""

import json
import os
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ACC = os.path.dirname(HERE)
ROOT = os.path.dirname(os.path.dirname(ACC))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, ACC)


def main():
    case = json.loads(sys.argv[1])
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import measure  # bench/accuracy/measure.py: Tracker (ctypes front of the counter)
    import optim2x
    import tracking
    import vctorch

    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    engine = case["engine"]
    # the counter, the model file and the phases (each: between-op peak, allocator peak, total at end)
    trk = tracking.Phases(case["model"], seed=case.get("seed", 0), allocator_peak=True)
    phases, phase_begin, phase_end = trk.phases, trk.begin, trk.end

    p = phase_begin("build")
    module, make_inputs = vctorch.build(trk.spec, compat="2x")
    shapes = None
    if case.get("input"):
        shapes = {module.input_names[0]: [int(s) for s in case["input"].split(",")]}
    inputs = make_inputs(case["batch"], dtype=torch.float32, shapes=shapes)
    params = list(module.parameters())
    phase_end(p)

    p = phase_begin("wrap")
    model = module
    ddp = None
    if engine != "single":
        from torch.nn.parallel import DistributedDataParallel as DDP
        ddp = DDP(module, gradient_as_bucket_view=case.get("gradient_as_bucket_view", False),
                  bucket_cap_mb=case.get("bucket_cap_mb", 25))
        model = ddp
    phase_end(p)

    p = phase_begin("optim")
    kind = case["optim"]
    zero = None
    if engine.startswith("zero1"):
        from torch.distributed.optim import ZeroRedundancyOptimizer

        class Foreach2xOptimizer(torch.optim.Optimizer):
            """optim2x.Foreach2x (the single-GPU harness's 2.x foreach step) as a
            torch.optim.Optimizer, so that ZeroRedundancyOptimizer can construct it on
            this rank's partition (ZeroRedundancyOptimizer._init_local_optimizer)."""

            def __init__(self, param_groups, lr=1e-3):
                super().__init__(param_groups, {"lr": lr})
                self.impl = optim2x.Foreach2x([q for g in self.param_groups for q in g["params"]], kind, lr)
                self.impl_state = self.impl.state

            @torch.no_grad()
            def step(self, closure=None):
                self.impl.step()

        zero = ZeroRedundancyOptimizer(params, optimizer_class=Foreach2xOptimizer,
                                       parameters_as_bucket_view=case.get("parameters_as_bucket_view", False),
                                       lr=1e-3)
        opt = zero
        state_of = zero.optim.impl.state
        local = [q for g in zero.optim.param_groups for q in g["params"]]
    else:
        opt = optim2x.make(model.parameters(), kind)
        state_of = opt.state
        local = params
    phase_end(p)

    targets = []

    def loss_step():
        # measure.py's loss_step, through the DDP wrapper
        if module.loss_kind == "cross_entropy":
            if not targets:
                logits = model(*inputs).float()
                targets.append(torch.randint(0, logits.shape[-1], tuple(logits.shape[:-1]), dtype=torch.int64))
                targets.append(logits.shape[-1])
                return F.cross_entropy(logits.reshape(-1, targets[1]), targets[0].reshape(-1))
            return F.cross_entropy(model(*inputs).float().reshape(-1, targets[1]), targets[0].reshape(-1))
        return model(*inputs).float().mean()

    model.train()
    steps = case.get("steps", 3)
    for step in range(1, steps + 1):
        p = phase_begin("s%d.fwd" % step)
        loss = loss_step()
        phase_end(p)
        p = phase_begin("s%d.bwd" % step)
        trk.backward(True)
        loss.backward()
        trk.backward(False)
        del loss
        phase_end(p)
        p = phase_begin("s%d.opt" % step)
        opt.step()
        phase_end(p)
        p = phase_begin("s%d.zero" % step)
        opt.zero_grad(set_to_none=True)
        phase_end(p)
    dist.barrier()

    measured = trk.measured()
    top = trk.top()
    rounded = measure.rounded
    res = {
        "case": case["id"],
        "held_out": bool(case.get("held_out", False)),
        "config": {k: v for k, v in case.items() if k not in ("id", "held_out")},
        "world_size": world,
        "rank": rank,
        "peak_allocated": top["peak"],
        "peak_phase": top["phase"],
        "peak_allocator": max(ph["peak_allocator"] for ph in measured),
        "steady_bytes": phases[-1]["end"],
        "phases": phases,
        "params": int(sum(q.numel() for q in params)),
        "weights_bytes": int(sum(rounded(q) for q in params) + sum(rounded(b) for b in module.buffers())),
        "inputs_bytes": int(sum(rounded(x) for x in inputs)),
        "local_optimizer_params": int(sum(q.numel() for q in local)),
        "optimizer_state_bytes": int(sum(rounded(v) for st in state_of.values() for v in st.values()
                                         if torch.is_tensor(v))),
        "torch": torch.__version__,
        "backend": "gloo",
        "counter": "bench/accuracy memtrack.c + opobserver.cpp (between-op readings, 512 B rounding)",
    }
    if ddp is not None:
        ld = ddp._get_ddp_logging_data()
        res["ddp"] = {k: ld.get(k) for k in ("bucket_sizes", "rebuilt_bucket_sizes", "bucket_cap_bytes",
                                             "gradient_as_bucket_view", "broadcast_buffers",
                                             "rebuilt_per_bucket_param_indices")}
    if zero is not None:
        res["zero"] = {"partition_numel": [int(sum(q.numel() for g in gs for q in g["params"]))
                                           for gs in zero._partition_parameters()],
                       "partition_shapes": [[list(q.shape) for g in gs for q in g["params"]]
                                            for gs in zero._partition_parameters()]}
    print(json.dumps(res))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
