#!/usr/bin/python3
"""tune.py -- the engine-tuning view of the accuracy suite: TUNING CASES ONLY.

    /usr/bin/python3 bench/accuracy/suite/tune.py [--cli build/vramcalc] [--filter SUBSTR]

Prints measured vs estimated peak_allocated for every case that is not held out
(tests/data/accuracy/cases.json).  Held-out cases are skipped on purpose: they are
never looked at while the engine is being changed (cases.py explains the rule);
report.py reports them separately once the engine is fixed.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
FIX = os.path.join(ROOT, "tests", "data", "accuracy")


def estimate(cli, c):
    cmd = [cli, os.path.join(FIX, c["model"]), "--batch", str(c["batch"]), "--optim", c["optim"],
           "--mode", c["mode"], "--precision", c["precision"], "--workspace", "0", "--attention", "math",
           "--format", "json"]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, check=True, text=True).stdout
    return json.loads(out)


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "vramcalc"))
    ap.add_argument("--filter", default="")
    args = ap.parse_args(argv)
    with open(os.path.join(FIX, "cases.json")) as f:
        doc = json.load(f)
    errs = []
    for c in doc["cases"]:
        if c["held_out"] or args.filter not in c["id"]:
            continue
        e = estimate(args.cli, c)
        m = c["measured"]["peak_allocated"]
        est = e["memory"]["peak_allocated"]
        err = (est - m) / m
        errs.append(abs(err))
        flag = "" if abs(err) <= c["bound"] else "  OVER BOUND"
        pm = "" if e["parameters"] == c["measured"]["params"] else "  PARAMS %d != %d" % (
            e["parameters"], c["measured"]["params"])
        print("%-36s %13d %13d %+8.3f%%  %-28s %s%s%s" % (
            c["id"], m, est, 100 * err, c["measured"]["peak_where"].replace("\t", " ")[:28],
            e["peak"]["phase"] + ":" + e["peak"]["layer"], flag, pm))
    if errs:
        print("tuning cases: %d, median |err| %.3f%%, worst %.3f%%" % (
            len(errs), 100 * statistics.median(errs), 100 * max(errs)))


if __name__ == "__main__":
    main(sys.argv[1:])
