#!/usr/bin/python3
"""gpu_compare.py -- the accuracy suite measured on a CUDA GPU against vramcalc, as markdown.

    python3 bench/accuracy/gpu_compare.py --cli build/vramcalc --out gpu.md
        [--only ID,ID] [--precision amp-bf16] [--attention auto|math|flash|efficient]
        [--gpu PRESET] [--python PY] [--raw FILE] [--from-raw FILE] [--probes]

Run it with (or point --python at) a Python whose torch is a CUDA build of PyTorch
2.x, on a machine with an NVIDIA GPU.  For every case of suite/cases.py (the same
model files, batch, optimizer, mode and precision as the CPU suite,
tests/data/accuracy/models/) it runs

    measure.py MODEL --batch B --optim O --mode M --precision P --json
               --device cuda --attention A --mha-fastpath on       (suite/measure_all.py's command)
    vramcalc MODEL --batch B --optim O --mode M --precision P
               --attention A [--gpu PRESET] --format json          (suite/report.py's command,
                                                                    workspace modelled)

one case at a time, and writes a "GPU measurements" section (markdown) to --out, to
be pasted into docs/accuracy.md: measured max_memory_allocated, max_memory_reserved,
the process total from nvidia-smi and the CUDA context (that total - reserved),
against vramcalc's peak_allocated, reserved, cuda_context and total, with signed
errors (estimate - measured) / measured.

The raw measurements go to --raw (default: --out with .raw.json), written after
every case; --from-raw FILE renders the table again from such a file (with the
current vramcalc) without measuring.  --gpu defaults to the vramcalc preset whose
product name matches the GPU torch reports (it sets the Hopper cuBLAS workspace);
without a match vramcalc runs with no --gpu.

--probes also records, into the raw file's "probes" (docs/context.md), what the CUDA
context model cannot tell from the cases alone:
  * autograd_threads_off: a few training cases again with
    torch.autograd.set_multithreading_enabled(False) (measure.py --autograd-threads off),
    with the per-thread stack size (cuCtxGetLimit) before and after, in every case: the
    training term is local memory grown by 256 B a thread if it stays with backward on the
    calling thread and the stack limit grows, the backward thread's library handles if it
    goes;
  * conv_workspace: one case of each model with convolutions (measure.py
    --conv-workspace): every convolution's transient above its results, forward and
    backward (cuDNN's workspace);
  * nccl: bench/accuracy/nccl_probe.py, NCCL's memory at world size 2 (two GPUs only);
  * cudnn_table: for each model with convolutions and each precision, the --cudnn-table
    file bench/accuracy/cudnn_calibrate.py writes at the cases' batches (each convolution's
    cuDNN workspace per direction on this GPU); the rendering runs vramcalc with it beside
    the interval --bound gives (docs/context.md "cuDNN workspaces").

VRAMCALC_CUDA_DRYRUN=1 in the environment makes measure.py run the CUDA path on
the CPU without measuring anything (every figure n/a): a check of this script and
of the CUDA path's code where no GPU is available.
"""

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "suite"))
import cases as suite  # noqa: E402
import measure_all  # noqa: E402  (command(c): the measure.py command of a case)
import report  # noqa: E402  (estimate(): the vramcalc command of a case; mib())

FIXTURES = os.path.join(ROOT, "tests", "data", "accuracy", "cases.json")


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "vramcalc"), help="vramcalc binary")
    ap.add_argument("--out", required=True, help="markdown file to write")
    ap.add_argument("--only", help="comma list of case ids (suite/cases.py; with --precision, the new ids)")
    ap.add_argument("--precision", help="measure every case at this precision instead of its own "
                                        "(fp32, bf16, fp16, amp-bf16, amp-fp16)")
    ap.add_argument("--attention", default="auto", choices=["auto", "math", "flash", "efficient"],
                    help="SDPA backend, the same for PyTorch and vramcalc (default auto)")
    ap.add_argument("--mha-fastpath", default="on", choices=["on", "off"],
                    help="PyTorch's native MHA/TransformerEncoderLayer inference path (default on, as "
                         "PyTorch runs it and vramcalc models it; off for diagnosis only)")
    ap.add_argument("--gpu", help="vramcalc --gpu preset (default: matched from the GPU's name)")
    ap.add_argument("--workspace", help="vramcalc --workspace SIZE (default: vramcalc's model)")
    ap.add_argument("--python", default=sys.executable,
                    help="Python with a CUDA build of torch that runs measure.py (default: this one)")
    ap.add_argument("--raw", help="raw measurements (JSON) to write (default: OUT with .raw.json)")
    ap.add_argument("--from-raw", help="render from this raw file instead of measuring")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per measurement (default 1800)")
    ap.add_argument("--probes", action="store_true",
                    help="also record the context probes (autograd threads off, conv workspaces, NCCL at "
                         "world size 2) into the raw file (see above)")
    return ap.parse_args(argv)


def select_cases(args):
    cs = suite.cases()
    if args.precision:
        seen, out = set(), []
        for c in cs:
            c = dict(c, precision=args.precision)
            c["id"] = suite.case_id(c["model"], c["batch"], c["optim"], c["mode"], c["precision"])
            if c["id"] not in seen:
                seen.add(c["id"])
                out.append(c)
        cs = out
    if args.only:
        only = [s for s in args.only.split(",") if s]
        unknown = set(only) - {c["id"] for c in cs}
        if unknown:
            raise SystemExit("gpu_compare.py: unknown case id(s): %s" % ", ".join(sorted(unknown)))
        cs = [c for c in cs if c["id"] in set(only)]
    return cs


def measure_command(args, c):
    cmd = measure_all.command(c)
    cmd[0] = args.python
    return cmd + ["--device", "cuda", "--attention", args.attention, "--mha-fastpath", args.mha_fastpath]


def measure(args, cs, raw_path):
    raw = {"generated_by": "bench/accuracy/gpu_compare.py", "date": datetime.date.today().isoformat(),
           "python": args.python, "attention": args.attention, "mha_fastpath": args.mha_fastpath,
           "dry_run": os.environ.get("VRAMCALC_CUDA_DRYRUN") == "1", "cases": {}}
    for i, c in enumerate(cs):
        cmd = measure_command(args, c)
        rec = {"case": c, "command": " ".join(cmd[1:]).replace(ROOT + os.sep, "")}
        try:
            p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=args.timeout)
        except subprocess.TimeoutExpired:
            p = None
            rec["error"] = "timed out after %d s" % args.timeout
        if p is not None:
            err = [l for l in p.stderr.strip().splitlines() if l.strip()]
            if p.returncode == 2 and err and "CUDA is not available" in err[-1]:
                print(err[-1], file=sys.stderr)
                sys.exit(2)
            if p.returncode != 0:
                rec["error"] = "exit %d: %s" % (p.returncode, err[-1] if err else "")
            else:
                rec["result"] = json.loads(p.stdout)
        raw["cases"][c["id"]] = rec
        r = rec.get("result")
        print("[%d/%d] %-40s %s" % (i + 1, len(cs), c["id"], rec["error"] if "error" in rec else
                                    "allocated %s reserved %s smi %s" % (r["peak_allocated"], r["reserved"],
                                                                         r["nvidia_smi_total"])),
              file=sys.stderr)
        with open(raw_path, "w") as f:
            json.dump(raw, f, indent=1)
            f.write("\n")
    return raw


# training cases run again with --autograd-threads off: GEMM only, conv + GEMM, flash + GEMM, conv only
PROBE_THREADS = ("mlp_b64_adamw_fp32", "resnet_b32_adam_fp32", "gpt_prenorm_b8_momentum_bf16", "unet_b4_adam_fp32")


def has_conv(model):
    with open(os.path.join(ROOT, "tests", "data", "accuracy", "models", model + ".json")) as f:
        return '"Conv' in f.read()


def run_probe(args, cmd):
    try:
        p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"error": "timed out after %d s" % args.timeout}
    if p.returncode != 0:
        err = [l for l in p.stderr.strip().splitlines() if l.strip()]
        return {"error": "exit %d: %s" % (p.returncode, err[-1] if err else "")}
    return json.loads(p.stdout)


def probes(args, cs, raw, raw_path):
    """--probes: the context probes (module docstring) into raw["probes"], written after each."""
    pr = raw.setdefault("probes", {"autograd_threads_off": {}, "conv_workspace": {}, "nccl": None})
    todo = [("autograd_threads_off", c, ["--autograd-threads", "off"]) for c in cs if c["id"] in PROBE_THREADS]
    seen = set()
    for c in cs:
        if c["model"] not in seen and has_conv(c["model"]):
            seen.add(c["model"])
            todo.append(("conv_workspace", c, ["--conv-workspace"]))
    for i, (kind, c, extra) in enumerate(todo):
        r = run_probe(args, measure_command(args, c) + extra)
        if kind == "conv_workspace" and "error" not in r:
            r = {"case": c["id"], "rows": r.get("conv_workspace"), "stack_limit_after": r.get("stack_limit_after")}
        pr[kind][c["id"]] = r
        print("[probe %d/%d] %-22s %s %s" % (i + 1, len(todo) + 1, kind, c["id"], r.get("error", "ok")),
              file=sys.stderr)
        with open(raw_path, "w") as f:
            json.dump(raw, f, indent=1)
            f.write("\n")
    # cuDNN's workspaces per convolution and direction: one table per (model, precision), at its cases' batches
    groups = {}
    for c in cs:
        if has_conv(c["model"]):
            groups.setdefault((c["model"], c["precision"]), set()).add(c["batch"])
    tables = pr.setdefault("cudnn_table", {})
    for (model, prec), batches in sorted(groups.items()):
        out = "%s.cudnn.%s.%s.json" % (raw_path, model, prec)
        cmd = [args.python, os.path.join(HERE, "cudnn_calibrate.py"),
               os.path.join(ROOT, "tests", "data", "accuracy", "models", model + ".json"), "--precision", prec,
               "--cli", args.cli, "-o", out] + [a for b in sorted(batches) for a in ("--batch", str(b))]
        try:
            p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=args.timeout)
            err = [l for l in p.stderr.strip().splitlines() if l.strip()]
            if p.returncode:
                tables["%s/%s" % (model, prec)] = {"error": "exit %d: %s" % (p.returncode, err[-1] if err else "")}
            else:
                with open(out) as f:
                    tables["%s/%s" % (model, prec)] = json.load(f)
        except subprocess.TimeoutExpired:
            tables["%s/%s" % (model, prec)] = {"error": "timed out after %d s" % args.timeout}
        print("[probe] cudnn_table %s/%s %s" % (model, prec, tables["%s/%s" % (model, prec)].get("error", "ok")),
              file=sys.stderr)
        with open(raw_path, "w") as f:
            json.dump(raw, f, indent=1)
            f.write("\n")
    pr["nccl"] = run_probe(args, [args.python, os.path.join(HERE, "nccl_probe.py")])
    print("[probe %d/%d] nccl %s" % (len(todo) + 1, len(todo) + 1, pr["nccl"].get("error") or
                                     pr["nccl"].get("skipped") or "ok"), file=sys.stderr)
    with open(raw_path, "w") as f:
        json.dump(raw, f, indent=1)
        f.write("\n")


def cudnn_table_rows(args, raw, preset):
    """Markdown: each convolution case's measured peak against vramcalc's interval (--bound) and
    with the probe's --cudnn-table (the workspaces measured on this GPU)."""
    tables = (raw.get("probes") or {}).get("cudnn_table") or {}
    L = []
    for cid, rec in sorted(raw["cases"].items()):
        c, m = rec["case"], rec.get("result")
        t = tables.get("%s/%s" % (c["model"], c["precision"]))
        if not m or not t or "error" in t:
            continue
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(t, f)
        try:
            cmd = report.estimate_command(args.cli, dict(c, model="models/%s.json" % c["model"]), workspace=args.workspace,
                                          attention=args.attention, gpu=preset, torch=release_of(m.get("torch")))
            lo = json.loads(subprocess.run(cmd, stdout=subprocess.PIPE, text=True).stdout)["memory"]
            ex = subprocess.run(cmd + ["--cudnn-table", f.name], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        finally:
            os.unlink(f.name)
        cu = lo.get("cudnn") or {}
        exact = json.loads(ex.stdout)["memory"]["peak_allocated"] if ex.returncode in (0, 1) else None
        L.append("| `%s` | %s | %s | %s | %s | %s |" % (
            cid, fmt_mib(m["peak_allocated"]), fmt_mib(cu.get("peak_allocated_low")), fmt_mib(cu.get("peak_allocated_high")),
            fmt_mib(exact) if exact is not None else ex.stderr.strip().replace("|", "\\|"),
            fmt_err(err(exact, m["peak_allocated"])) if exact is not None else "n/a"))
    if not L:
        return []
    return ["### cuDNN workspaces: the interval and the measured table", "",
            "| case | allocated | vramcalc low | high | with --cudnn-table | error |",
            "|---|---:|---:|---:|---:|---:|"] + L + [""]


def probe_section(raw, args=None, preset=None):
    """Markdown for raw["probes"] (none: no lines)."""
    pr = raw.get("probes")
    if not pr:
        return []
    L = ["### Context probes", "",
         "| case | context, autograd threads on | off | stack limit before / after (on) | (off) |",
         "|---|---:|---:|---|---|"]
    for cid, r in sorted(pr.get("autograd_threads_off", {}).items()):
        on = (raw["cases"].get(cid) or {}).get("result") or {}
        L.append("| `%s` | %s | %s | %s / %s | %s / %s |" % (
            cid, fmt_mib(on.get("cuda_context")), fmt_mib(r.get("cuda_context")) if "error" not in r else r["error"],
            on.get("stack_limit_before"), on.get("stack_limit_after"), r.get("stack_limit_before"),
            r.get("stack_limit_after")))
    L.append("")
    for cid, r in sorted(pr.get("conv_workspace", {}).items()):
        rows = r.get("rows") or []
        big = max(rows, key=lambda x: x["transient"]) if rows else None
        L.append("- `%s`: %d convolution calls%s" % (cid, len(rows), "" if not big else
                                                     "; the largest transient %s MiB (`%s`, %s)" % (
                                                         report.mib(big["transient"]), big["module"],
                                                         big["direction"])))
    n = pr.get("nccl") or {}
    if n:
        L.append("- NCCL at world size 2: %s" % (n.get("skipped") or n.get("error") or json.dumps(
            n.get("outside_allocator_delta"))))
    L.append("")
    if args is not None:
        L += cudnn_table_rows(args, raw, preset)
    return L


def _tokens(s):
    return set(re.findall(r"[a-z0-9]+", s.lower())) - {"nvidia", "geforce", "tesla", "amd", "instinct"}


def match_preset(cli, gpu_name):
    """The vramcalc preset whose product name holds every word of torch's device name
    ("NVIDIA H100 80GB HBM3" -> h100-80gb, "NVIDIA A100-SXM4-40GB" -> a100-40gb), if
    exactly one does."""
    if not gpu_name:
        return None
    p = subprocess.run([cli, "--list-gpus", "--format", "json"], stdout=subprocess.PIPE, text=True)
    if p.returncode != 0:
        return None
    want = _tokens(gpu_name)
    hits = [g["name"] for g in json.loads(p.stdout)["gpus"] if want and want <= _tokens(g["product"])]
    return hits[0] if len(hits) == 1 else None


def err(est, meas):
    if est is None or not meas:
        return None
    return (est - meas) / meas


def fmt_mib(n):
    return "n/a" if n is None else report.mib(n)


def fmt_err(e):
    return "n/a" if e is None else "%+.2f%%" % (100 * e)


def summary_row(name, errs):
    errs = [e for e in errs if e is not None]
    if not errs:
        return "| %s | 0 | n/a | n/a |" % name
    worst = max(errs, key=abs)
    return "| %s | %d | %.2f%% | %+.2f%% |" % (name, len(errs), 100 * statistics.median([abs(e) for e in errs]),
                                             100 * worst)


ROUTINE_NOTES = ("CUDA: torch.cuda.max_memory_allocated", "peak_allocated includes what CUDA kernels")


def render(args, raw, cs):
    cpu = {}
    if os.path.exists(FIXTURES):
        with open(FIXTURES) as f:
            cpu = {c["id"]: c["measured"]["peak_allocated"] for c in json.load(f).get("cases", [])}
    results = [raw["cases"][c["id"]] for c in cs if c["id"] in raw["cases"]]
    first = next((r["result"] for r in results if "result" in r), None)
    gpu = (first or {}).get("gpu") or {}
    preset = args.gpu or match_preset(args.cli, gpu.get("name"))
    version = subprocess.run([args.cli, "--version"], stdout=subprocess.PIPE, text=True).stdout.strip()

    rows, failures, remarks = [], [], {}
    for rec in results:
        c = rec["case"]
        if "result" not in rec:
            failures.append((c["id"], rec.get("error", "?")))
            continue
        m = rec["result"]
        e = report.estimate(args.cli, dict(c, model="models/%s.json" % c["model"]), workspace=args.workspace,
                            attention=args.attention, gpu=preset, torch=release_of(m.get("torch")))
        em = e["memory"]
        if e["parameters"] != m["params"] or e["trainable_parameters"] != m["trainable_params"]:
            remarks.setdefault("parameter counts differ (vramcalc %d/%d, PyTorch %d/%d)" % (
                e["parameters"], e["trainable_parameters"], m["params"], m["trainable_params"]), []).append(c["id"])
        for n in m.get("notes", []):
            if not n.startswith(ROUTINE_NOTES):
                remarks.setdefault(n, []).append(c["id"])
        rows.append({"id": c["id"], "m": m, "e": em,
                     "err_alloc": err(em["peak_allocated"], m["peak_allocated"]),
                     "err_res": err(em["reserved"], m["reserved"]),
                     "err_ctx": err(em["cuda_context"], m["cuda_context"]),
                     "err_total": err(em["total"], m["nvidia_smi_total"]),
                     "cpu": cpu.get(c["id"])})

    est_flags = "--attention %s%s%s" % (args.attention, " --gpu %s" % preset if preset else "",
                                        " --workspace %s" % args.workspace if args.workspace else "")
    L = []
    w = L.append
    w("## GPU measurements")
    w("")
    raw_abs = os.path.abspath(args.raw_path)
    w("<!-- generated by bench/accuracy/gpu_compare.py; raw measurements: %s -->" % (
        os.path.relpath(raw_abs, ROOT) if raw_abs.startswith(ROOT + os.sep) else raw_abs))
    w("")
    if raw.get("dry_run"):
        w("**DRY RUN: the CUDA path ran on the CPU (VRAMCALC_CUDA_DRYRUN=1); nothing below was measured.**")
        w("")
    w("The suite's cases measured on a GPU with PyTorch's own numbers (docs/contract.md §6, \"On a GPU\"), "
      "against vramcalc for the same configuration.")
    w("")
    w("- **GPU**: %s (%s, compute capability %s), driver %s; PyTorch %s, CUDA %s, cuDNN %s; %s." % (
        gpu.get("name") or "n/a", "%s bytes" % "{:,}".format(gpu["capacity"]) if gpu.get("capacity") else "n/a",
        gpu.get("compute_capability") or "n/a", gpu.get("driver") or "n/a", (first or {}).get("torch", "n/a"),
        (first or {}).get("torch_cuda") or "n/a", (first or {}).get("cudnn") or "n/a", raw.get("date", "n/a")))
    w("- **Measured**: `bench/accuracy/measure.py MODEL ... --device cuda --attention %s --mha-fastpath %s`: "
      "the model file built as PyTorch modules, model and batch on the GPU, PyTorch's foreach optimizer "
      "(lr 1e-3, AdamW weight decay 1e-2, momentum 0.9); step 1 (inference: forward pass 1) warms up, then "
      "`torch.cuda.synchronize()` and `reset_peak_memory_stats()`; **allocated** = `max_memory_allocated()` "
      "over steps 2–3 (inference: pass 2), **reserved** = `max_memory_reserved()`, **nvidia-smi** = the "
      "process's `used_memory` from `nvidia-smi --query-compute-apps`, **context** = nvidia-smi − "
      "`memory_reserved()` at the same moment (CUDA context, cuBLAS/cuDNN handles, anything outside the "
      "caching allocator)." % (raw.get("attention"), raw.get("mha_fastpath")))
    w("- **Estimate**: `vramcalc MODEL --batch B --optim O --mode M --precision P %s --format json` (%s); "
      "the workspace is vramcalc's model, not 0, because CUDA's `max_memory_allocated` counts cuBLAS's "
      "workspace; `cuda_context` is vramcalc's context model (`src/engine/context.c`, [context.md](context.md): "
      "fitted on this run's contexts) unless `--context` was given." % (
          est_flags, version or "vramcalc"))
    w("- **Error** = (estimate − measured) / measured. Sizes in MiB (2^20 bytes). *CPU harness*: this case's "
      "`peak_allocated` from `tests/data/accuracy/cases.json` (torch 1.13 CPU, `--workspace 0` scope), for "
      "comparison.")
    w("- **Regenerate**: `python3 bench/accuracy/gpu_compare.py --cli build/vramcalc --out FILE` (a CUDA "
      "build of PyTorch 2.x); `--from-raw FILE.raw.json` re-renders without measuring.")
    w("")
    w("| figure | cases | median \\|error\\| | worst error |")
    w("|---|---:|---:|---:|")
    w(summary_row("peak_allocated", [r["err_alloc"] for r in rows]))
    w(summary_row("reserved", [r["err_res"] for r in rows]))
    w(summary_row("cuda_context", [r["err_ctx"] for r in rows]))
    w(summary_row("total (nvidia-smi)", [r["err_total"] for r in rows]))
    w("")
    w("| case | allocated | vramcalc peak_allocated | error | reserved | vramcalc reserved | error | "
      "context | vramcalc cuda_context | error | nvidia-smi | vramcalc total | error | CPU harness | peak at |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        m, e = r["m"], r["e"]
        w("| `%s` | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["id"], fmt_mib(m["peak_allocated"]), fmt_mib(e["peak_allocated"]), fmt_err(r["err_alloc"]),
            fmt_mib(m["reserved"]), fmt_mib(e["reserved"]), fmt_err(r["err_res"]),
            fmt_mib(m["cuda_context"]), fmt_mib(e["cuda_context"]), fmt_err(r["err_ctx"]),
            fmt_mib(m["nvidia_smi_total"]), fmt_mib(e["total"]), fmt_err(r["err_total"]),
            fmt_mib(r["cpu"]), "`%s`" % m["peak_where"] if m.get("peak_where") else "n/a"))
    w("")
    for line in probe_section(raw, args, preset):
        w(line)
    if failures:
        w("Not measured:")
        w("")
        for cid, why in failures:
            w("- `%s`: %s" % (cid, why.replace("|", "\\|")))
        w("")
    if remarks:
        w("Remarks from the measurements:")
        w("")
        for n, ids in remarks.items():
            w("- %s: %s." % (n, ", ".join("`%s`" % i for i in ids)))
        w("")
    with open(args.out, "w") as f:
        f.write("\n".join(L).rstrip("\n") + "\n")
    print("wrote %s (%d cases, %d not measured)" % (args.out, len(rows), len(failures)), file=sys.stderr)


def release_of(version):
    """'2.6.0+cu124' -> '2.6' for vramcalc --torch (None outside 2.0 .. 2.15: vramcalc's default)."""
    parts = (version or "").split("+")[0].split(".")
    if len(parts) >= 2 and parts[0] == "2" and parts[1].isdigit() and int(parts[1]) <= 15:
        return "2.%d" % int(parts[1])
    return None


def main(argv):
    args = parse_args(argv)
    cs = select_cases(args)
    if args.from_raw:
        with open(args.from_raw) as f:
            raw = json.load(f)
        args.raw_path = args.from_raw
        cs = [c for c in cs if c["id"] in raw["cases"]]
        if not cs:
            raise SystemExit("gpu_compare.py: %s holds none of the selected cases" % args.from_raw)
        args.attention = raw.get("attention", args.attention)
        args.mha_fastpath = raw.get("mha_fastpath", args.mha_fastpath)
    if not os.access(args.cli, os.X_OK):
        raise SystemExit("gpu_compare.py: %s: no vramcalc binary (--cli)" % args.cli)
    if not args.from_raw:
        args.raw_path = args.raw or os.path.splitext(args.out)[0] + ".raw.json"
        raw = measure(args, cs, args.raw_path)
        if args.probes:
            probes(args, cs, raw, args.raw_path)
    render(args, raw, cs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
