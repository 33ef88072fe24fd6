#!/usr/bin/python3
"""Round trip: torchvision model -> tools/torch2vramcalc.py -> vramcalc.

    /usr/bin/python3 tests/roundtrip/roundtrip.py [--cli build/vramcalc] [--out DIR]
        [--measure] [--batch 2] [MODEL ...]

For each model (default: the list below) it exports the model at its usual input
size, then checks
  1. vramcalc's parameter count (`vramcalc FILE --format json`) equals torch's
     sum(p.numel()) exactly;
  2. tools/vctorch.py (model file -> torch module) rebuilds a module with the same
     parameter count and the same output shape as the original (when vctorch exists).
With --measure it also runs bench/accuracy/measure.py on the exported file at a small
batch and prints vramcalc's peak (--workspace 0) next to the measured one.

Exit status: 0 all passed, 1 a check failed, 77 torch or torchvision missing (CTest skip).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))

try:
    import torch
    import torchvision  # noqa: F401
except ImportError:
    print("roundtrip: torch/torchvision not importable; skipping")
    sys.exit(77)

import torch2vramcalc as t2v  # noqa: E402
from fastinit import skip_random_init  # noqa: E402

# model, input shape, kwargs
MODELS = [
    ("resnet18", "3,224,224", {}),
    ("resnet50", "3,224,224", {}),
    ("vgg11_bn", "3,224,224", {}),
    ("mobilenet_v2", "3,224,224", {}),
    ("mobilenet_v3_small", "3,224,224", {}),
    ("densenet121", "3,224,224", {}),
    ("squeezenet1_0", "3,224,224", {}),
    ("shufflenet_v2_x1_0", "3,224,224", {}),
    ("efficientnet_b0", "3,224,224", {}),
    ("googlenet", "3,224,224", {"aux_logits": False, "init_weights": False}),
    ("mnasnet1_0", "3,224,224", {}),
    ("regnet_y_400mf", "3,224,224", {}),
    ("convnext_tiny", "3,224,224", {}),
    ("vit_b_16", "3,224,224", {}),
    ("alexnet", "3,224,224", {}),
    ("inception_v3", "3,299,299", {"aux_logits": False, "init_weights": False}),
]


def find_cli(arg):
    cands = [arg] if arg else []
    cands += [os.path.join(ROOT, d, "vramcalc") for d in ("build", "build-zoo")]
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def vramcalc_json(cli, path, *extra):
    r = subprocess.run([cli, path, "--format", "json", *extra], capture_output=True, text=True)
    if r.returncode not in (0, 1):
        return None, r.stderr.strip()
    return json.loads(r.stdout), ""


def check_vctorch(vctorch, model, path, n_torch):
    """Rebuild the exported file with tools/vctorch.py: same parameter count, same output
    shape as the original model (both run on the meta device: shapes only; the model is
    moved there, not copied: the caller is done with it)."""
    with open(path) as f:
        spec = json.load(f)
    mod, mk = vctorch.build(spec)
    n_vt = sum(p.numel() for p in mod.parameters())
    if n_vt != n_torch:
        return "FAIL: vctorch rebuild has %d parameters" % n_vt
    x = [t.to("meta") for t in mk(2)]
    with torch.no_grad():
        ya = model.to("meta").eval()(*x)
        yb = mod.to("meta").eval()(*x)
    if tuple(ya.shape) != tuple(yb.shape):
        return "FAIL: vctorch rebuild outputs %s, torch %s" % (tuple(yb.shape), tuple(ya.shape))
    return "vctorch rebuild: same parameters, output %s" % (list(ya.shape[1:]),)


def main():
    ap = argparse.ArgumentParser(description="torchvision -> vramcalc round trip")
    ap.add_argument("models", nargs="*")
    ap.add_argument("--cli", help="vramcalc binary (default: build/ or build-zoo/)")
    ap.add_argument("--out", help="keep the exported files here")
    ap.add_argument("--measure", action="store_true", help="also measure the peak (bench/accuracy/measure.py)")
    ap.add_argument("--batch", type=int, default=2, help="batch for --measure (default 2)")
    ap.add_argument("--optim", default="adam")
    a = ap.parse_args()
    cli = find_cli(a.cli)
    if cli is None:
        print("roundtrip: no vramcalc binary (give --cli)")
        return 1
    try:
        import vctorch
    except ImportError:
        vctorch = None
    out = a.out or tempfile.mkdtemp(prefix="vc-roundtrip-")
    os.makedirs(out, exist_ok=True)
    todo = [m for m in MODELS if not a.models or m[0] in a.models]
    failures = 0
    rows = []
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    for name, shape, kwargs in todo:
        t0 = time.time()
        torch.manual_seed(0)
        model = getattr(torchvision.models, name)(**kwargs)
        n_torch = sum(p.numel() for p in model.parameters())
        status, detail, n_vc = "ok", "", None
        path = os.path.join(out, name + ".json")
        try:
            doc, _ = t2v.export(model, [t2v.parse_input(shape)], name=name,
                                source="torchvision.models.%s(%s)" % (
                                    name, ", ".join("%s=%r" % kv for kv in kwargs.items())))
            with open(path, "w") as f:
                f.write(t2v.dumps(doc))
        except t2v.Unmapped as e:
            status, detail = "FAIL", "export: " + e.report().replace("\n", "; ")
        if status == "ok" and vctorch is not None:
            detail = check_vctorch(vctorch, model, path, n_torch)
            if detail.startswith("FAIL"):
                status = "FAIL"
        if status == "ok":
            res, err = vramcalc_json(cli, path)
            if res is None:
                status, detail = "FAIL", "vramcalc: " + err
            else:
                n_vc = res["parameters"]
                if n_vc != n_torch:
                    status, detail = "FAIL", "parameter count differs"
        if status == "ok" and a.measure:
            res, err = vramcalc_json(cli, path, "--batch", str(a.batch), "--optim", a.optim, "--workspace", "0")
            r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "bench/accuracy/measure.py"), path,
                                "--batch", str(a.batch), "--optim", a.optim, "--json"],
                               capture_output=True, text=True)
            if r.returncode == 0 and res is not None:
                meas = json.loads(r.stdout)
                mpk = meas["peak_allocated"]
                est = res["memory"]["peak_allocated"]
                detail += "; batch %d %s: estimate %.1f MiB, measured %.1f MiB (%+.1f%%)" % (
                    a.batch, a.optim, est / 2**20, mpk / 2**20, 100.0 * (est - mpk) / mpk)
            else:
                detail += "; measure failed: " + (r.stderr.strip().splitlines() or ["?"])[-1]
        if status != "ok":
            failures += 1
        rows.append((name, n_torch, n_vc, status, detail))
        print("%-20s torch %11d  vramcalc %11s  %-4s %s  (%.1fs)" % (
            name, n_torch, n_vc if n_vc is not None else "-", status, detail, time.time() - t0), flush=True)
    if failures or a.out:
        print("roundtrip: %d of %d models passed (files in %s)" % (len(rows) - failures, len(rows), out))
    else:
        shutil.rmtree(out, ignore_errors=True)
        print("roundtrip: %d of %d models passed" % (len(rows), len(rows)))
    return 1 if failures else 0


if __name__ == "__main__":
    with skip_random_init():  # counts and shapes only: the weights' values are never read
        sys.exit(main())
