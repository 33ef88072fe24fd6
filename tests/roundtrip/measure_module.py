#!/usr/bin/python3
"""measure_module -- the end of the round trip: the ORIGINAL torch module, measured.

    /usr/bin/python3 tests/roundtrip/measure_module.py torchvision.models.resnet18 \
        --input 3,224,224 --batch 2 [--optim adam] [--mode train|infer] [--cli build/vramcalc]

bench/accuracy/measure.py measures a model *file* (rebuilt by tools/vctorch.py).  This
script measures the module the file was exported from, with the same instruments and
protocol (docs/contract.md section 6: libmemtrack.so preloaded, libopobserver.so reading the
allocator after every aten operator, PyTorch 2.x foreach optimizer replica, peak over
steps 2 and 3 from before the model was built), then exports the module with
tools/torch2vramcalc.py and prints vramcalc's estimate (--workspace 0) next to it.

It runs the module as it is (torch 1.13 on CPU): where the module uses an op whose 1.13
CPU behaviour differs from 2.x on CUDA (dropout's float mask, MultiheadAttention's
forward), the measurement is 1.13's; measure.py's vctorch rebuild compensates those.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BENCH = os.path.join(ROOT, "bench", "accuracy")


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("--input", required=True)
    ap.add_argument("--kwargs", default="{}")
    ap.add_argument("-b", "--batch", type=int, default=2)
    ap.add_argument("-o", "--optim", default="adam", choices=["sgd", "momentum", "adam", "adamw", "none"])
    ap.add_argument("-m", "--mode", default="train", choices=["train", "infer"])
    ap.add_argument("--cli", help="vramcalc binary (default build/ or build-zoo/)")
    ap.add_argument("--file", help="estimate this model file (a zoo file) instead of exporting the module")
    a = ap.parse_args(argv)

    sys.path.insert(0, BENCH)
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import measure as M  # bench/accuracy/measure.py: Tracker, preload helpers
    M.reexec_with_preload()

    import torch
    import optim2x
    import torch2vramcalc as t2v

    torch.manual_seed(0)
    kwargs = json.loads(a.kwargs)
    name, shape, dt = t2v.parse_input(a.input)
    tr = M.Tracker()
    import gc
    gc.collect()
    tr.start(install=True)
    tr.O.opobs_set_compat_2x(1)
    module = t2v.load_target(a.target, kwargs)
    if dt == torch.int64:
        x = torch.randint(0, 2, (a.batch, *shape))
    else:
        x = torch.randn(a.batch, *shape, dtype=dt)
    if a.mode == "train":
        module.train()
        opt = optim2x.make(module.parameters(), a.optim)
        for step in (1, 2, 3):
            if step == 2:
                tr.O.opobs_reset_peak()
                tr.reset_peak()
            out = module(x)
            # the loss on the primary output, as the exporter writes it (a dict's "out" or
            # "logits" or first value, a tuple's first); the other outputs live until `del out`
            p = out
            while isinstance(p, (dict, tuple, list)):
                p = (p["out"] if "out" in p else p["logits"] if "logits" in p else next(iter(p.values()))) \
                    if isinstance(p, dict) else p[0]
            loss = p.float().mean()
            del p
            del out
            tr.O.opobs_set_backward(1)
            loss.backward()
            tr.O.opobs_set_backward(0)
            del loss
            tr.read("backward-end")
            if opt is not None:
                opt.step()
                tr.read("step-end")
                opt.zero_grad(set_to_none=True)
            else:
                for p in module.parameters():
                    p.grad = None
            tr.read("zero_grad-end")
    else:
        module.eval()
        with torch.no_grad():
            for step in (1, 2):
                if step == 2:
                    tr.O.opobs_reset_peak()
                    tr.reset_peak()
                out = module(x)
                del out
                tr.read("forward-end")
    measured = int(tr.O.opobs_peak())
    where = tr.O.opobs_peak_where().decode(errors="replace")

    # export the same module and estimate
    import tempfile
    if a.file:
        path = a.file
    else:
        module.train(a.mode == "train")
        doc, _ = t2v.export(module, [(name, shape, dt)], name=a.target.split(".")[-1], source=a.target)
        fd, path = tempfile.mkstemp(suffix=".json")
        with os.fdopen(fd, "w") as f:
            f.write(t2v.dumps(doc))
    cli = a.cli
    for d in ("build", "build-zoo"):
        if not cli and os.access(os.path.join(ROOT, d, "vramcalc"), os.X_OK):
            cli = os.path.join(ROOT, d, "vramcalc")
    r = subprocess.run([cli, path, "--batch", str(a.batch), "--optim", a.optim, "--mode", a.mode,
                        "--workspace", "0", "--format", "json"], capture_output=True, text=True,
                       env={k: v for k, v in os.environ.items() if k != "LD_PRELOAD"})
    if not a.file:
        os.unlink(path)
    est = json.loads(r.stdout)["memory"]["peak_allocated"]
    print(json.dumps({"target": a.target, "file": a.file or "(exported)", "batch": a.batch, "mode": a.mode,
                      "optim": a.optim,
                      "measured_peak": measured, "measured_where": where, "estimate_peak": est,
                      "error": round((est - measured) / measured, 4)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
