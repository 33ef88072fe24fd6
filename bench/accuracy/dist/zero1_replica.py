#!/usr/bin/python3
"""zero1_replica.py -- one rank of DeepSpeed ZeRO stage 1 (with and without offload_optimizer),
replicated in torch 1.13 CPU and measured with the accuracy harness's counter; and the cases
against vramcalc's --parallel zero1 (and zero2 with --ds-overlap-comm).

    LD_PRELOAD=bench/accuracy/libmemtrack.so /usr/bin/python3 bench/accuracy/dist/zero1_replica.py \
        --model M --batch B --optim adam --world N --rank R [--offload] [--stage 2] [--overlap]
    /usr/bin/python3 bench/accuracy/dist/zero1_replica.py --all [--redo]   # every case -> zero1_replica.json
    /usr/bin/python3 bench/accuracy/dist/zero1_replica.py --compare --cli build/vramcalc

DeepSpeed cannot run here (no GPU, not installable), so this script runs the re-implementation of
what DeepSpeedZeroOptimizer allocates on one rank's GPU, from its source
(deepspeed/runtime/zero/stage_1_and_2.py and engine.py at deepspeedai/DeepSpeed@
edaa7221267243c7be7fb49c5d5f5c4fb97b4641), not from vramcalc: zero_common.py's DeepSpeedZero (shared
with offload_replica.py; its docstring lists what is replicated, function by function). The cases:
stage 1 (partition_grads=False: engine.py _configure_zero_optimizer, partition_grads=zero_stage ==
ZeroStageEnum.gradients) with and without offload_optimizer, at the defaults (overlap_comm off); and
overlap_comm on (--overlap, DeepSpeedZeroConfig.overlap_comm, docs/parallel.md 1.7 and 1.10) for
stages 1 and 2 (--stage 2), with a stage-2 baseline without it.
Every rank is measured; vramcalc is compared with the largest. Peak = the highest between-op
reading in steps 2-3.
"""

import functools
import gc
import os
import sys

sys.dont_write_bytecode = True
import tracking  # noqa: E402  the counter's phases, the training steps, the command line's pieces
from tracking import HERE  # noqa: E402
tracking.add_paths()
OUT = os.path.join(HERE, "zero1_replica.json")

from fsdp_replica import MLP, TSTACK, GPTSTACK  # noqa: E402  the FSDP1 replica's model files
from offload_replica import WIDE  # noqa: E402  the zero2-offload replica's model file
from zero_common import DeepSpeedZero  # noqa: E402  DeepSpeedZeroOptimizer, shared with offload_replica.py
CASES = [
    # model, short, batch, optim, world, offload, held_out[, stage, overlap_comm] (default 1, False)
    (MLP, "mlp", 64, "adam", 2, False, False),
    (MLP, "mlp", 64, "adam", 4, False, False),
    (MLP, "mlp", 64, "sgd", 3, False, True),
    (TSTACK, "tstack", 4, "adam", 2, False, False),
    (TSTACK, "tstack", 4, "adam", 4, False, False),
    (GPTSTACK, "gptstack", 4, "momentum", 2, False, True),
    (WIDE, "wide", 16, "adam", 2, False, False),
    (WIDE, "wide", 16, "adam", 4, False, False),
    (MLP, "mlp", 64, "adam", 2, True, False),
    (TSTACK, "tstack", 4, "adam", 4, True, False),
    (GPTSTACK, "gptstack", 4, "momentum", 2, True, True),
    (WIDE, "wide", 16, "adam", 2, True, False),
    (WIDE, "wide", 16, "adam", 4, True, False),
    # overlap_comm (--ds-overlap-comm true), stages 1 and 2, and a stage-2 baseline without it
    (MLP, "mlp", 64, "adam", 2, False, False, 1, True),
    (MLP, "mlp", 64, "adam", 4, False, False, 1, True),
    (TSTACK, "tstack", 4, "adam", 2, False, False, 1, True),
    (TSTACK, "tstack", 4, "adam", 4, False, False, 1, True),
    (GPTSTACK, "gptstack", 4, "momentum", 2, False, True, 1, True),
    (MLP, "mlp", 64, "adam", 2, False, False, 2, True),
    (MLP, "mlp", 64, "adam", 4, False, False, 2, True),
    (TSTACK, "tstack", 4, "adam", 2, False, False, 2, True),
    (TSTACK, "tstack", 4, "adam", 4, False, False, 2, True),
    (GPTSTACK, "gptstack", 4, "momentum", 2, False, True, 2, True),
    (MLP, "mlp", 64, "adam", 2, False, False, 2, False),
    (MLP, "mlp", 64, "adam", 2, True, False, 1, True),
]
# the first cases, measured before overlap_comm: stage 1, overlap_comm off
CASES = [c if len(c) == 9 else c + (1, False) for c in CASES]


def case_id(short, batch, optim, world, offload, stage=1, overlap=False):
    return "%s-b%d-%s-zero%d%s%s-w%d" % (short, batch, optim, stage, "-offload" if offload else "",
                                         "-overlap" if overlap else "", world)


def run_case(model, batch, optim, world, rank, offload, stage=1, overlap=False):
    import torch
    import vctorch

    torch.set_num_threads(1)
    trk = tracking.Phases(model)
    p = trk.begin("build")
    module, make_inputs = vctorch.build(trk.spec, compat="2x")
    inputs = make_inputs(batch, dtype=torch.float32)
    trk.end(p)
    p = trk.begin("wrap")
    zo = DeepSpeedZero(torch, list(module.parameters()), world, rank, optim, stage, offload, overlap)
    gc.collect()
    trk.end(p)
    module.train()
    # stage 1: engine.backward(loss) -> _backward_epilogue -> reduce_gradients, after autograd's
    # backward returned (its root gradient gone) while the caller still holds the loss; stage 2: the
    # epilogue queued at the end of backward (zero_common.py)
    tracking.train(trk, tracking.loss_step(torch, module, inputs), zo.step, zo.zero_grad,
                   after_backward=zo.reduce_gradients if stage == 1 else None)
    return trk.result(torch, partition=zo.part, params_in_partition=len(zo.in_part))


def measure(model, batch, optim, world, offload, stage=1, overlap=False):
    recs = []
    for rank in range(world):
        cmd = [sys.executable, os.path.abspath(__file__), "--model", model, "--batch", str(batch), "--optim",
               optim, "--world", str(world), "--rank", str(rank)] + (["--offload"] if offload else []) + \
              (["--stage", "2"] if stage == 2 else []) + (["--overlap"] if overlap else [])
        r = tracking.run_preloaded(cmd)
        r["rank"] = rank
        recs.append(r)
    return recs


def layout(offload, stage=1, overlap=False):
    return ["--parallel", "zero%d" % stage] + (["--offload", "optimizer"] if offload else []) + \
        (["--ds-overlap-comm", "true"] if overlap else [])


def config(model, batch, optim, world, offload, stage, overlap):
    """A record's config (overlap_comm only where on: the records measured before it stay as they are)."""
    c = {"engine": "zero%d" % stage, "model": model, "batch": batch, "optim": optim, "world_size": world,
         "offload": offload}
    if overlap:
        c["overlap_comm"] = True
    return c


def compare(cli, bound):
    """vramcalc against the busiest measured rank; 1 when one is off by more than `bound` percent."""
    return tracking.compare_busiest(OUT, [
        (case_id(short, batch, optim, world, offload, stage, overlap), held,
         functools.partial(tracking.vramcalc_peak, cli, model, batch, optim, world, layout(offload, stage, overlap)))
        for model, short, batch, optim, world, offload, held, stage, overlap in CASES], bound)


def main(argv):
    ap = tracking.arg_parser(__doc__)
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--offload", action="store_true")
    ap.add_argument("--stage", type=int, default=1, choices=(1, 2))
    ap.add_argument("--overlap", action="store_true", help="overlap_comm")
    a = ap.parse_args(argv)
    rc = tracking.compare_or_one(a, compare, lambda: run_case(a.model, a.batch, a.optim, a.world, a.rank, a.offload,
                                                              a.stage, a.overlap))
    if rc is not None:
        return rc
    return tracking.measure_all(OUT, "bench/accuracy/dist/zero1_replica.py", a.redo, [
        (case_id(short, batch, optim, world, offload, stage, overlap), held,
         config(model, batch, optim, world, offload, stage, overlap),
         functools.partial(measure, model, batch, optim, world, offload, stage, overlap))
        for model, short, batch, optim, world, offload, held, stage, overlap in CASES])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
