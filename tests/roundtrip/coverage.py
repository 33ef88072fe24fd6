#!/usr/bin/python3
"""Exporter coverage: torchvision 0.14's list_models() (classification, segmentation,
video) and detection backbones, and the hand-written modules of user_models.py.

    coverage.py --cli build/vramcalc [--exporter tools/torch2vramcalc.py] [--set all|tv|user]
                [--only NAME,...] [--json out.json] [--gate]
    coverage.py --table before.json after.json      # docs/models.md's tables

For each model: build it (weights never downloaded: builders get weights=None and
weights_backbone=None, and any download raises), export it with the exporter given
(default: this checkout's), load the file with the CLI (--per-layer -f json), and check
the parameter count against sum(p.numel()) and the last layer's output shape against
the module's own output (a CPU forward, batch 1, eval, no grad; the primary output of a
dict/tuple).  Prints one line per model and a summary; --json keeps the rows
(docs/models.md's table comes from them).  Exit 0 (a coverage measure), or with --gate
(CTest exporter_user_models) 1 when a model fails.
"""

import argparse
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict

T0 = time.time()
try:
    import torch  # noqa: E402
    import torchvision  # noqa: E402
    import torchvision.models as tvm  # noqa: E402
except ImportError:
    print("coverage.py: torch/torchvision not importable; skipping")
    sys.exit(77)
T_IMPORT = time.time() - T0

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)


def no_download(*a, **k):
    raise RuntimeError("coverage.py: a builder tried to download weights")


torch.hub.load_state_dict_from_url = no_download
torch.hub.download_url_to_file = no_download
socket.setdefaulttimeout(5)

VIDEO_224 = {"mvit_v1_b", "mvit_v2_s", "s3d"}


def tv_models():
    rows = []
    for n in tvm.list_models(module=tvm):
        rows.append(("tv:" + n, "torchvision.models." + n, {}, "3,299,299" if n == "inception_v3" else "3,224,224"))
    for n in tvm.list_models(module=tvm.segmentation):
        rows.append(("seg:" + n, "torchvision.models.segmentation." + n, {}, "3,224,224"))
    for n in tvm.list_models(module=tvm.video):
        rows.append(("video:" + n, "torchvision.models.video." + n, {},
                     "3,16,224,224" if n in VIDEO_224 else "3,16,112,112"))
    for n in tvm.list_models(module=tvm.detection):
        rows.append(("det-backbone:" + n, "torchvision.models.detection." + n,
                     {"weights": None, "weights_backbone": None, ".backbone": True},
                     "3,300,300" if n == "ssd300_vgg16" else "3,320,320" if n.startswith("ssdlite320") else "3,224,224"))
    return rows


def user_models():
    import user_models as um
    return [("user:" + n, "user_models:" + n, {"factory": f}, spec) for n, f, spec in um.MODELS]


def primary(y):
    if isinstance(y, dict):
        return primary(y["out"] if "out" in y else next(iter(y.values())))
    if isinstance(y, (tuple, list)):
        return primary(y[0])
    return y


def meta_copy(module):
    """module on the meta device without copying its weights (deepcopy with a memo of empty
    meta tensors)."""
    import copy
    memo = {}
    for t in list(module.parameters()) + list(module.buffers()):
        e = torch.empty_like(t, device="meta")
        memo[id(t)] = torch.nn.Parameter(e, requires_grad=t.requires_grad) if isinstance(t, torch.nn.Parameter) else e
    return copy.deepcopy(module, memo)


def load_exporter(path):
    spec = importlib.util.spec_from_file_location("t2v_under_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class no_init:
    """Skips weight initialisation while a model is built (its values do not matter here,
    its shapes do; a 600M-parameter builder spends most of its time in init)."""
    NAMES = ("normal_", "uniform_", "kaiming_normal_", "kaiming_uniform_", "xavier_normal_", "xavier_uniform_",
             "trunc_normal_", "constant_", "zeros_", "ones_", "orthogonal_")

    def __enter__(self):
        self.saved = []
        for name in self.NAMES:
            for owner in (torch.nn.init, torch.Tensor):
                if hasattr(owner, name):
                    self.saved.append((owner, name, getattr(owner, name)))
                    setattr(owner, name, lambda t, *a, **k: t)
        return self

    def __exit__(self, *exc):
        for owner, name, f in reversed(self.saved):
            setattr(owner, name, f)
        return False


def run_one(t2v, cli, key, target, kw, spec):
    row = {"model": key, "input": spec}
    t = time.time()
    kw = dict(kw)
    try:
        torch.manual_seed(0)
        with no_init():
            m = build(t2v, target, kw)
    except Exception as e:  # noqa: BLE001  (a coverage measure: every failure is a row)
        row.update(status="build", error=("%s: %s" % (type(e).__name__, e)).splitlines()[0][:200])
        return row
    row["build_s"] = round(time.time() - t, 3)
    return check_one(t2v, cli, row, key, m, spec)


def build(t2v, target, kw):
    if "factory" in kw:
        return kw.pop("factory")()
    if kw.pop(".backbone", False):
        return t2v.load_target(target, kw).backbone
    return t2v.load_target(target, kw)


def check_one(t2v, cli, row, key, m, spec):
    inputs = [t2v.parse_input(spec)]
    nm, shape, dt = inputs[0]
    # the module's own forward (not the traced graph), batch 1, eval, no grad: on a copy
    # on the meta device (no weights copied, no compute) when its ops allow, else on CPU
    m.eval()
    for dev in ("meta", "cpu"):
        try:
            mm = meta_copy(m) if dev == "meta" else m
            with torch.no_grad():
                x = torch.randint(0, 2, (1, *shape)) if dt == torch.int64 else torch.randn(1, *shape)
                row["torch_output"] = list(primary(mm(x.to(dev))).shape[1:])
            break
        except Exception as e:  # noqa: BLE001
            row["torch_output"] = "forward failed: %s" % str(e).splitlines()[0][:100]
    m.train()
    row["torch_params"] = sum(p.numel() for p in m.parameters())
    t = time.time()
    try:
        doc, info = t2v.export(m, inputs, name=key.split(":")[1])
    except Exception as e:  # noqa: BLE001
        row["export_s"] = round(time.time() - t, 3)
        msg = str(e).strip().splitlines() or [type(e).__name__]
        row.update(status="export", error=" | ".join(msg[:3])[:300], error_type=type(e).__name__)
        if type(e).__name__ != "Unmapped" or "allow_unknown" not in t2v.export.__code__.co_varnames:
            return row
        try:  # what --allow-unknown gives
            doc, info = t2v.export(m, inputs, name=key.split(":")[1], allow_unknown=True)
        except Exception as e2:  # noqa: BLE001
            row["allow_unknown"] = "fails: %s" % (str(e2).strip().splitlines() or [type(e2).__name__])[0][:200]
            return row
        row["allow_unknown"] = "exported"
    row["export_s"] = round(time.time() - t, 3)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        fh.write(t2v.dumps(doc))
    try:
        p = subprocess.run([cli, fh.name, "--per-layer", "-f", "json", "-b", "2"], capture_output=True, text=True)
    finally:
        os.unlink(fh.name)
    if p.returncode not in (0, 1):
        row.update(status="load", error=p.stderr.strip()[:300])
        return row
    r = json.loads(p.stdout)
    row["file_params"] = r["parameters"]
    row["file_output"] = r["layers"][-1]["output_shape"] if r.get("layers") else None
    row["approximate"] = [a for a in (doc.get("description") or "").split("; ") if a.startswith("approximate")]
    ok_p = r["parameters"] == row["torch_params"]
    ok_o = row["file_output"] == row["torch_output"]
    if row.get("status") == "export":
        row["allow_unknown"] = "exported, checks %s" % ("pass" if ok_p and ok_o else "fail")
        return row
    row["status"] = "ok" if ok_p and ok_o else "mismatch"
    return row


def table(before_path, after_path):
    """docs/models.md's coverage table from two --json runs (before and after a change)."""
    with open(before_path) as fh:
        before = json.load(fh)
    with open(after_path) as fh:
        after = json.load(fh)
    b = {r["model"]: r for r in before["rows"]}
    groups = OrderedDict()
    for r in after["rows"]:
        g = r["model"].split(":")[0]
        groups.setdefault(g, []).append(r)
    print("| set | models | exported and checked, before | after | after, with --allow-unknown |")
    print("|---|---|---|---|---|")
    tot = [0, 0, 0, 0]
    for g, rows in groups.items():
        nb = sum(1 for r in rows if b.get(r["model"], {}).get("status") == "ok")
        na = sum(1 for r in rows if r["status"] == "ok")
        nu = na + sum(1 for r in rows if str(r.get("allow_unknown", "")).endswith("checks pass"))
        print("| %s | %d | %d | %d | %d |" % (g, len(rows), nb, na, nu))
        for i, v in enumerate((len(rows), nb, na, nu)):
            tot[i] += v
    print("| **all** | **%d** | **%d** | **%d** | **%d** |" % tuple(tot))
    print()
    print("| model | input | before | after | export s (before / after) | parameters | notes |")
    print("|---|---|---|---|---|---|---|")
    for r in after["rows"]:
        o = b.get(r["model"], {})
        note = r.get("error", "") if r["status"] != "ok" else ""
        if r.get("allow_unknown"):
            note = "--allow-unknown: %s; %s" % (r["allow_unknown"], note)
        if r["status"] == "mismatch":
            note = "params %s vs %s, output %s vs %s" % (r.get("file_params"), r.get("torch_params"),
                                                          r.get("file_output"), r.get("torch_output"))
        note = note.replace("|", "/")[:160]
        print("| %s | %s | %s | %s | %s / %s | %s | %s |" % (
            r["model"], r["input"], o.get("status", "-"), r["status"], o.get("export_s", "-"),
            r.get("export_s", "-"), r.get("torch_params", "-"), note))
    print()
    print("torch + torchvision import: %.2f s (before run), %.2f s (after run); exporter import %.2f s / %.2f s"
          % (before["import_s"], after["import_s"], before["exporter_import_s"], after["exporter_import_s"]))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--table":
        table(sys.argv[2], sys.argv[3])
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--exporter", default=os.path.join(ROOT, "tools", "torch2vramcalc.py"))
    ap.add_argument("--set", default="all", choices=["all", "tv", "user"])
    ap.add_argument("--only", default="")
    ap.add_argument("--json")
    ap.add_argument("--gate", action="store_true",
                    help="a test: exit 1 unless every model exports and passes its checks (a model that "
                         "needs --allow-unknown must pass them with it)")
    a = ap.parse_args()
    t = time.time()
    t2v = load_exporter(a.exporter)
    t_exporter = time.time() - t
    models = (tv_models() if a.set in ("all", "tv") else []) + (user_models() if a.set in ("all", "user") else [])
    if a.only:
        keep = set(a.only.split(","))
        models = [m for m in models if m[0] in keep or m[0].split(":")[1] in keep]
    rows = []
    for key, target, kw, spec in models:
        row = run_one(t2v, a.cli, key, target, kw, spec)
        rows.append(row)
        print("%-40s %-8s %6.2fs  %s%s" % (key, row["status"], row.get("export_s", 0),
                                           ("[--allow-unknown: %s] " % row["allow_unknown"]) if "allow_unknown" in row else "",
                                         row.get("error", "") or ("params %s/%s out %s/%s" % (
                                             row.get("file_params"), row.get("torch_params"),
                                             row.get("file_output"), row.get("torch_output")))), flush=True)
    n_ok = sum(1 for r in rows if r["status"] == "ok")
    print("exported and checked: %d of %d (torch+torchvision import %.2fs, exporter import %.2fs)"
          % (n_ok, len(rows), T_IMPORT, t_exporter))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"import_s": round(T_IMPORT, 3), "exporter_import_s": round(t_exporter, 3),
                       "torch": torch.__version__, "torchvision": torchvision.__version__, "rows": rows}, fh, indent=1)
    if a.gate:
        bad = [r["model"] for r in rows if r["status"] != "ok" and
               not str(r.get("allow_unknown", "")).endswith("checks pass")]
        if bad:
            print("FAILED: " + ", ".join(bad))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
