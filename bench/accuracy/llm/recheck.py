#!/usr/bin/python3
"""recheck.py -- do measured.json's cases still measure what they say? (the replicas drift as they are edited)

    /usr/bin/python3 bench/accuracy/llm/recheck.py [--ids llm401,llm430] [--model-type gemma4_text]
                                                   [--one-per-config] [--write]

Re-runs the recorded `command` of each selected case of measured.json (the harness, measure_llm.py, on the
replica as it is now) and prints, per case, "same" or each measured figure that moved (peak_allocated, and a
generation case's prefill_peak / decode_peak, GRPO's generate_peak) with its relative change. Exit status 1
when a figure moved or a command failed. A replica edited after its cases were measured (a shared module of
reference.py, a mask or a cache it now builds) makes compare.py hold the estimate to a figure the replica no
longer produces; this finds such cases without re-running the whole suite (run_suite.py, hours).

--one-per-config takes the first selected case of each config file and mode (a sample across the replicas).
--write puts the fresh results into measured.json in place of the old ones, keeping each case's id, held_out,
command and any key the harness does not write (known_gap, notes), the file rewritten after each case that moved (a
run stopped midway keeps the cases it re-measured); say in the commit why the figures moved.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
FIGURES = ("peak_allocated", "prefill_peak", "decode_peak", "generate_peak")


def write(doc, path):
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=os.path.join(HERE, "measured.json"))
    ap.add_argument("--ids", help="comma-separated case ids")
    ap.add_argument("--model-type")
    ap.add_argument("--one-per-config", action="store_true")
    ap.add_argument("--write", action="store_true")
    opt = ap.parse_args()
    doc = json.load(open(opt.cases))
    ids = set(opt.ids.split(",")) if opt.ids else None
    picked, seen = [], set()
    for i, c in enumerate(doc["cases"]):
        if ids is not None and c["id"] not in ids:
            continue
        if opt.model_type and c.get("model_type") != opt.model_type:
            continue
        key = (c["config"], c["mode"])
        if opt.one_per_config and key in seen:
            continue
        seen.add(key)
        picked.append(i)
    moved = failed = 0
    for i in picked:
        c = doc["cases"][i]
        p = subprocess.run(shlex.split(c["command"]), cwd=ROOT, capture_output=True, text=True)
        try:
            r = json.loads(p.stdout)
        except ValueError:
            failed += 1
            print("%s failed: %s" % (c["id"], (p.stderr.strip().splitlines() or ["no output"])[-1]), flush=True)
            continue
        diffs = ["%s %d -> %d (%+.2f%%)" % (k, c[k], r[k], 100.0 * (r[k] - c[k]) / c[k])
                 for k in FIGURES if c.get(k) is not None and r.get(k) != c[k]]
        moved += bool(diffs)
        print("%s %s %s: %s" % (c["id"], os.path.basename(c["config"]), c["mode"], "; ".join(diffs) or "same"),
              flush=True)
        if diffs and opt.write:
            fresh = dict(r)
            for k, v in c.items():
                if k not in r or k in ("id", "held_out", "command"):
                    fresh[k] = v
            doc["cases"][i] = fresh
            write(doc, opt.cases)  # after each moved case: a long run stopped midway keeps what it measured
    print("%d cases: %d same, %d moved, %d failed" % (len(picked), len(picked) - moved - failed, moved, failed))
    return 1 if moved or failed else 0


if __name__ == "__main__":
    sys.exit(main())
