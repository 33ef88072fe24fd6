#!/usr/bin/python3
"""cudnn_interval.py -- cuDNN's workspace interval on the H200 run's convolution cases
(issue 27 item 2; docs/context.md "cuDNN workspaces").

    /usr/bin/python3 bench/accuracy/cudnn_interval.py [--cli build/vramcalc]
        [--raw bench/accuracy/logs/gpu_h200_torch211.raw.json] [--check]

For every case of the raw file whose step runs a convolution (vramcalc --trace), the
command gpu_compare.py renders (--attention auto --gpu h200 --torch 2.11) with -f json,
and its memory.cudnn interval against what the GPU measured: max_memory_allocated()
(peak_allocated), max_memory_reserved() (reserved) and nvidia-smi's process total. Prints
one row per case and the summary docs/context.md quotes. The factors of the high end
(src/engine/cudnn.c) were fitted on these same cases: this is the fit's account, not a
prediction.

--check exits 1 unless at least 42 of the 47 measured peaks lie inside [low, high]
(CTest gpu_cudnn_interval).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join(ROOT, "tests", "data", "accuracy", "models")
RAW = os.path.join(HERE, "logs", "gpu_h200_torch211.raw.json")
MIB = 1048576.0


def cmd(cli, c):
    return [cli, os.path.join(MODELS, c["model"] + ".json"), "--batch", str(c["batch"]), "--optim", c["optim"],
            "--mode", c["mode"], "--precision", c["precision"], "--attention", "auto", "--gpu", "h200", "--torch", "2.11"]


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "vramcalc"))
    ap.add_argument("--raw", default=RAW)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args(argv)
    with open(a.raw) as f:
        cases = json.load(f)["cases"]
    rows = []
    for cid, v in cases.items():
        c, r = v["case"], v["result"]
        t = subprocess.run(cmd(a.cli, c) + ["--trace"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if not any(l.split()[-1:] == ["convolution"] for l in t.stdout.splitlines()):
            continue
        p = subprocess.run(cmd(a.cli, c) + ["-f", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode not in (0, 1):
            sys.exit("cudnn_interval.py: %s: vramcalc failed: %s" % (cid, p.stderr.strip()))
        cu = json.loads(p.stdout)["memory"]["cudnn"]
        rows.append((cid, r["peak_allocated"], r["reserved"], r["nvidia_smi_total"], cu))
    inside = lambda x, lo, hi: lo <= x <= hi
    print("%-32s %9s %9s %9s  %7s %7s %7s  %7s %7s %7s" % ("case", "peak", "low", "high", "reserv", "low", "high",
                                                          "smi", "low", "high"))
    for cid, pa, rs, smi, cu in rows:
        print("%-32s %9.1f %9.1f %9.1f%s %7.1f %7.1f %7.1f%s %7.1f %7.1f %7.1f" % (
            cid, pa / MIB, cu["peak_allocated_low"] / MIB, cu["peak_allocated_high"] / MIB,
            " " if inside(pa, cu["peak_allocated_low"], cu["peak_allocated_high"]) else "*",
            rs / MIB, cu["reserved_low"] / MIB, cu["reserved_high"] / MIB,
            " " if inside(rs, cu["reserved_low"], cu["reserved_high"]) else "*",
            smi / MIB, cu["total_low"] / MIB, cu["total_high"] / MIB))
    n = len(rows)
    pin = sum(inside(pa, cu["peak_allocated_low"], cu["peak_allocated_high"]) for _, pa, _, _, cu in rows)
    rin = sum(inside(rs, cu["reserved_low"], cu["reserved_high"]) for _, _, rs, _, cu in rows)
    within = lambda end: sum(abs(cu["total_" + end] - smi) <= 0.02 * smi for _, _, _, smi, cu in rows)
    med = lambda end: statistics.median(abs(cu["total_" + end] - smi) / smi * 100 for _, _, _, smi, cu in rows)
    pmed = lambda end: statistics.median((cu["peak_allocated_" + end] - pa) / pa * 100 for _, pa, _, _, cu in rows)
    print("\n(* outside the interval)")
    print("cases with a convolution: %d" % n)
    print("peak_allocated inside [low, high]: %d of %d; reserved inside: %d of %d" % (pin, n, rin, n))
    print("median peak_allocated error: low %+.2f%%, high %+.2f%%" % (pmed("low"), pmed("high")))
    print("nvidia-smi total within 2%%: low %d, high %d of %d; median |error| low %.2f%%, high %.2f%%"
          % (within("low"), within("high"), n, med("low"), med("high")))
    if a.check and (n != 47 or pin < 42):
        print("cudnn_interval.py: FAIL: %d of %d peaks inside (at least 42 of 47 expected)" % (pin, n), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
