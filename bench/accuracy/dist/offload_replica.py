#!/usr/bin/python3
"""offload_replica.py -- one rank of DeepSpeed ZeRO-2 with offload_optimizer (device cpu), replicated
in torch 1.13 CPU and measured with the accuracy harness's counter; and the offload cases of both
replicas (this one and fsdp_replica.py --offload) against vramcalc's --offload.

    LD_PRELOAD=bench/accuracy/libmemtrack.so /usr/bin/python3 bench/accuracy/dist/offload_replica.py \
        --model M --batch B --optim adam --world N --rank R
    /usr/bin/python3 bench/accuracy/dist/offload_replica.py --all [--redo]   # every case -> offload_replica.json
    /usr/bin/python3 bench/accuracy/dist/offload_replica.py --compare --cli build/vramcalc

DeepSpeed cannot run here (no GPU, not installable), so this script runs the re-implementation of
what DeepSpeedZeroOptimizer (deepspeed/runtime/zero/stage_1_and_2.py at deepspeedai/DeepSpeed@
edaa7221267243c7be7fb49c5d5f5c4fb97b4641) allocates on one rank's GPU, from that source, not from
vramcalc: zero_common.py's DeepSpeedZero (shared with zero1_replica.py; its docstring lists what is
replicated, function by function), here with stage 2 (partition_gradients) and cpu_offload, the
defaults otherwise (contiguous_gradients, overlap_comm off, reduce_bucket_size 5e8, one parameter
group; fp32 model, so no check_grad_overflow and no loss scaling). The CPU side (the fp32 partition,
its gradient, the bit16 staging buffer, the optimizer's state and step) is host memory (host.py, not
counted).
Every rank is measured (ranks differ by the parameters touching their partition); vramcalc is
compared with the largest. Peak = the highest between-op reading in steps 2-3.
"""

import functools
import gc
import os
import sys

sys.dont_write_bytecode = True
import tracking  # noqa: E402  the counter's phases, the training steps, the command line's pieces
from tracking import HERE  # noqa: E402
tracking.add_paths()
OUT = os.path.join(HERE, "offload_replica.json")

from fsdp_replica import MLP, TSTACK, GPTSTACK  # noqa: E402  the FSDP1 replica's model files
from zero_common import DeepSpeedZero  # noqa: E402  DeepSpeedZeroOptimizer, shared with zero1_replica.py
WIDE = "bench/accuracy/dist/models/wide.json"  # one Linear is most of the model: the peak is _has_inf_or_nan's
CASES = [
    # engine, model, short, batch, optim, world, held_out
    ("zero2", MLP, "mlp", 64, "adam", 2, False),
    ("zero2", MLP, "mlp", 64, "sgd", 3, True),
    ("zero2", TSTACK, "tstack", 4, "adam", 2, False),
    ("zero2", GPTSTACK, "gptstack", 4, "momentum", 2, True),
    ("zero2", WIDE, "wide", 16, "adam", 2, False),
    ("fsdp", MLP, "mlp", 64, "adam", 4, False),
    ("fsdp", MLP, "mlp", 64, "adam", 3, False),
    ("fsdp", TSTACK, "tstack", 4, "adam", 4, False),
    ("fsdp", GPTSTACK, "gptstack", 8, "sgd", 2, True),
    ("sgo", TSTACK, "tstack", 4, "momentum", 4, True),
]
STRATEGY = {"fsdp": "full_shard", "sgo": "shard_grad_op"}
LAYOUT = {"zero2": ["--parallel", "zero2", "--offload", "optimizer"],
          "fsdp": ["--parallel", "fsdp", "--offload", "params"],
          "sgo": ["--parallel", "shard-grad-op", "--offload", "params"]}


def case_id(engine, short, batch, optim, world):
    return "%s-b%d-%s-%s-offload-w%d" % (short, batch, optim, engine, world)


def run_case(model, batch, optim, world, rank):
    import torch
    import vctorch

    torch.set_num_threads(1)
    trk = tracking.Phases(model)
    phase_begin, phase_end = trk.begin, trk.end
    p = phase_begin("build")
    module, make_inputs = vctorch.build(trk.spec, compat="2x")
    inputs = make_inputs(batch, dtype=torch.float32)
    phase_end(p)
    p = phase_begin("wrap")
    zo = DeepSpeedZero(torch, list(module.parameters()), world, rank, optim, stage=2, offload=True)
    gc.collect()
    phase_end(p)
    module.train()
    tracking.train(trk, tracking.loss_step(torch, module, inputs), zo.step, zo.zero_grad)
    return trk.result(torch, partition=zo.part, params_in_partition=len(zo.pos))


def measure(engine, model, batch, optim, world):
    """One record per measured rank (zero2: every rank; fsdp: rank 0 of fsdp_replica.py, whose
    ranks hold the same shard sizes)."""
    recs = []
    for rank in range(world if engine == "zero2" else 1):
        if engine == "zero2":
            cmd = [sys.executable, os.path.abspath(__file__), "--model", model, "--batch", str(batch), "--optim",
                   optim, "--world", str(world), "--rank", str(rank)]
        else:
            cmd = [sys.executable, os.path.join(HERE, "fsdp_replica.py"), "--model", model, "--batch", str(batch),
                   "--optim", optim, "--world", str(world), "--strategy", STRATEGY[engine], "--offload"]
        r = tracking.run_preloaded(cmd)
        r["rank"] = rank
        recs.append(r)
    return recs


def compare(cli, bound):
    """vramcalc against the busiest measured rank; 1 when one is off by more than `bound` percent."""
    return tracking.compare_busiest(OUT, [
        (case_id(engine, short, batch, optim, world), held,
         functools.partial(tracking.vramcalc_peak, cli, model, batch, optim, world, LAYOUT[engine]))
        for engine, model, short, batch, optim, world, held in CASES], bound)


def main(argv):
    ap = tracking.arg_parser(__doc__)
    ap.add_argument("--rank", type=int, default=0)
    a = ap.parse_args(argv)
    rc = tracking.compare_or_one(a, compare, lambda: run_case(a.model, a.batch, a.optim, a.world, a.rank))
    if rc is not None:
        return rc
    return tracking.measure_all(OUT, "bench/accuracy/dist/offload_replica.py", a.redo, [
        (case_id(engine, short, batch, optim, world), held,
         {"engine": engine, "model": model, "batch": batch, "optim": optim, "world_size": world},
         functools.partial(measure, engine, model, batch, optim, world))
        for engine, model, short, batch, optim, world, held in CASES])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
