#!/usr/bin/python3
"""gpu_validation.py -- vramcalc against GPU measurements of models outside the suite.

    python3 bench/accuracy/gpu_validation.py --cli build/vramcalc [--bound 2]
        [--log bench/accuracy/logs/gpu_h200_gpt2s.json]

The log holds max_memory_allocated() figures that bench/accuracy/measure.py took on a GPU
(--device cuda) for one model file and several (batch, optimizer, precision) settings; this
script runs vramcalc on the same settings with the GPU's preset and fails (exit 1) when an
estimate is further than --bound percent from its measurement. It needs no GPU.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRESETS = {"NVIDIA H200": "h200", "NVIDIA H100 80GB HBM3": "h100-80gb"}


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--log", default=os.path.join(ROOT, "bench", "accuracy", "logs", "gpu_h200_gpt2s.json"))
    ap.add_argument("--bound", type=float, default=2.0, help="percent (default 2)")
    a = ap.parse_args(argv)
    with open(a.log) as f:
        log = json.load(f)
    model = os.path.join(ROOT, log["model"])
    bad = 0
    print("| batch | optimizer | precision | measured | vramcalc | error |")
    print("|---:|---|---|---:|---:|---:|")
    for c in log["cases"]:
        gpu = PRESETS[c["gpu"]["name"]]
        cmd = [a.cli, model, "--batch", str(c["batch"]), "--optim", c["optim"], "--mode", c["mode"],
               "-p", c["precision"], "--attention", c["attention"], "--gpu", gpu, "-f", "json",
               "--torch", ".".join(c["torch"].split("+")[0].split(".")[:2])]  # the release measured (2.11)
        est = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        e, m = est["memory"]["peak_allocated"], c["peak_allocated"]
        err = 100.0 * (e - m) / m
        bad += abs(err) > a.bound
        print("| %d | %s | %s | %d | %d | %+.2f%% |" % (c["batch"], c["optim"], c["precision"], m, e, err))
    print("%d of %d outside +-%.1f%% (%s, %s, torch %s)" % (bad, len(log["cases"]), a.bound, log["model"],
                                                             log["cases"][0]["gpu"]["name"], log["cases"][0]["torch"]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
