#!/usr/bin/python3
"""check_zoo -- every examples/*.json against its reference implementation.

    /usr/bin/python3 tests/roundtrip/check_zoo.py [--cli build/vramcalc] [--write] [FILE ...]

For each zoo file (tests/roundtrip/reference_models.py REFERENCES names its reference):
  1. the reference module's sum(p.numel()) equals examples/reference_counts.json
     (--write rewrites that file from the references instead);
  2. tools/vctorch.py rebuilds the zoo file into a module with the same parameter count
     and the same output shape as the reference (both run on the meta device);
  3. with a vramcalc binary: vramcalc's "parameters" equals the reference too.
Exit status: 0 all agree, 1 a difference, 77 torch missing (CTest skip).
"""

import argparse
import glob
import json
import os
import subprocess
import sys
from collections import OrderedDict

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXAMPLES = os.path.join(ROOT, "examples")
COUNTS = os.path.join(EXAMPLES, "reference_counts.json")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))

try:
    import torch
except ImportError:
    print("check_zoo: torch not importable; skipping")
    sys.exit(77)

import reference_models as R  # noqa: E402
from fastinit import skip_random_init  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*")
    ap.add_argument("--cli", help="vramcalc binary: also compare its parameter count")
    ap.add_argument("--write", action="store_true", help="rewrite examples/reference_counts.json")
    a = ap.parse_args()
    try:
        import vctorch
    except ImportError:
        vctorch = None
    zoo = sorted(os.path.basename(p) for p in glob.glob(os.path.join(EXAMPLES, "*.json"))
                 if os.path.basename(p) != "reference_counts.json")
    bad = 0
    missing = [f for f in zoo if f not in R.REFERENCES]
    for f in missing:
        print("%-28s FAIL no reference in tests/roundtrip/reference_models.py" % f)
        bad += 1
    stored = json.load(open(COUNTS)) if os.path.exists(COUNTS) else {}
    # the files are what examples/zoo.py writes
    sys.path.insert(0, EXAMPLES)
    import zoo
    for fname, build in zoo.ZOO.items():
        path = os.path.join(EXAMPLES, fname)
        if a.files and fname not in a.files:
            continue
        if not os.path.exists(path) or open(path).read() != zoo.dumps(build()):
            print("%-28s FAIL differs from what examples/zoo.py writes (run it)" % fname)
            bad += 1
    out = OrderedDict()
    for fname, (build, inputs, how) in R.REFERENCES.items():
        if a.files and fname not in a.files:
            if fname in stored:
                out[fname] = stored[fname]
            continue
        torch.manual_seed(0)
        ref = build()
        n = R.count(ref)
        out[fname] = OrderedDict(parameters=n, source=how)
        notes = []
        ok = True
        if not a.write and stored.get(fname, {}).get("parameters") != n:
            ok = False
            notes.append("reference_counts.json has %s" % stored.get(fname, {}).get("parameters"))
        path = os.path.join(EXAMPLES, fname)
        if not os.path.exists(path):
            ok = False
            notes.append("no examples/%s" % fname)
        else:
            vocab = min([m.num_embeddings for m in ref.modules() if isinstance(m, torch.nn.Embedding)] or [2])
            xs = R.sample_inputs(inputs, 2, "meta", vocab)
            with torch.no_grad():
                ya = ref.to("meta").eval()(*xs)  # moved, not copied: only n and the shape are used after
            ref_shape = list(ya.shape[1:])
            notes.append("output %s" % ref_shape)
        if vctorch is not None and os.path.exists(path):
            spec = json.load(open(path))
            mod, mk = vctorch.build(spec)
            nv = sum(p.numel() for p in mod.parameters())
            if nv != n:
                ok = False
                notes.append("vctorch rebuild has %d" % nv)
            try:
                with torch.no_grad():
                    yb = mod.to("meta").eval()(*xs)
                if list(yb.shape[1:]) != ref_shape:
                    ok = False
                    notes.append("vctorch rebuild outputs %s" % (list(yb.shape[1:]),))
            except RuntimeError as e:  # vctorch cannot run this file on the meta device
                notes.append("vctorch shape check skipped (meta device: %s)" % str(e).splitlines()[0][:60])
        if a.cli and os.path.exists(path):
            r = subprocess.run([a.cli, path, "--format", "json", "--per-layer"], capture_output=True, text=True)
            if r.returncode in (0, 1):
                res = json.loads(r.stdout)
                nc = res["parameters"]
                if nc != n:
                    ok = False
                notes.append("vramcalc %d" % nc)
                vshape = res["layers"][-1]["output_shape"]
                if vshape != ref_shape:
                    ok = False
                    notes.append("vramcalc output %s" % vshape)
            else:
                ok = False
                notes.append("vramcalc: " + r.stderr.strip())
        bad += not ok
        print("%-28s %-4s %11d  %s" % (fname, "ok" if ok else "FAIL", n, "; ".join(notes)), flush=True)
    if a.write:
        with open(COUNTS, "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")
        print("wrote %s" % COUNTS)
    return 1 if bad else 0


if __name__ == "__main__":
    with skip_random_init():  # counts and shapes only: the weights' values are never read
        sys.exit(main())
