#!/usr/bin/env python3
"""bench/speed/jobs.py AFTER_BIN [BEFORE_BIN] [--rounds N] [--no-callgrind] [--only JOB,...] — issue 28's jobs.

For each job: instructions (callgrind, deterministic: the figure to compare
between builds) and the wall time against `jq -c .` on the same input file,
interleaved (each round runs jq, then each binary, once: the container's
speed drifts by tens of percent over seconds, so only runs made moments
apart are compared); reported is the median of the per-round ratios. With
BEFORE_BIN, both builds run in the same rounds.

The jobs (issue 28, "Must show"), with their targets:
  estimate   one estimate of the 2,000-layer sequence MLP (gen_model.py --seq) at batch 32
  max-batch  the same model, --max-batch on h100-80gb
  sweep      the same model, --sweep 1:1024 -f csv
  max-seq    llama-3.1-8b, --max-seq on h100-80gb
  max-context llama-3.1-8b, -m generate --new-tokens 1024 -p bf16 --max-context on rtx4090 (docs/inference.md)
  mixtral    mixtral-8x7b-v0.1, --sweep 1:256 -f csv
  pp-virtual llama-3.1-405b, --pp 14 --pp-virtual 3 --gpus 14
--only runs the jobs named (e.g. --only max-seq).
Needs jq; valgrind for the instruction counts (Debian: apt-get install valgrind).
"""
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
HF = os.path.join(ROOT, "tests", "data", "hf")


def jobs(seq):
    return [
        ("estimate", seq, ["-b", "32"], "<= 0.25x jq, <= 25 M instructions"),
        ("max-batch", seq, ["--gpu", "h100-80gb", "--max-batch"], ""),
        ("sweep", seq, ["--sweep", "1:1024", "-f", "csv"], ""),
        ("max-seq", f"{HF}/llama-3.1-8b.json", ["--max-seq", "--gpu", "h100-80gb"], "<= 0.5x jq"),
        ("max-context", f"{HF}/llama-3.1-8b.json", ["--mode", "generate", "--new-tokens", "1024", "-p", "bf16", "--gpu", "rtx4090",
                                                  "--max-context"], ""),
        ("mixtral", f"{HF}/mixtral-8x7b-v0.1.json", ["--sweep", "1:256", "-f", "csv"], "<= 1x jq"),
        ("pp-virtual", f"{HF}/llama-3.1-405b.json", ["--pp", "14", "--pp-virtual", "3", "--gpus", "14"], "<= 1x jq"),
    ]


def wall(cmd):
    """wall seconds, CPU seconds (user + system) and minor page faults of one run"""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t1 = time.perf_counter()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return t1 - t0, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), r1.ru_minflt - r0.ru_minflt


def instructions(cmd):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        r = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] + cmd,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for line in r.stderr.splitlines():
            if "refs:" in line:
                return int(line.split("refs:")[1].replace(",", "").strip())
    return None


def main():
    args = sys.argv[1:]
    rounds, callgrind = 15, True
    if "--rounds" in args:
        i = args.index("--rounds")
        rounds = int(args[i + 1])
        del args[i:i + 2]
    only = None
    if "--only" in args:
        i = args.index("--only")
        only = set(args[i + 1].split(","))
        del args[i:i + 2]
    if "--no-callgrind" in args:
        args.remove("--no-callgrind")
        callgrind = False
    if not args:
        sys.exit(__doc__)
    bins = [("after", args[0])] + ([("before", args[1])] if len(args) > 1 else [])
    tmp = tempfile.mkdtemp()
    seq = os.path.join(tmp, "s2000.json")
    with open(seq, "w") as f:
        subprocess.run([sys.executable, os.path.join(HERE, "gen_model.py"), "2000", "--seq"], stdout=f, check=True)
    rows = []
    for name, model, opts, target in jobs(seq):
        if only and name not in only:
            continue
        cmds = {"jq": ["jq", "-c", ".", model]}
        for tag, b in bins:
            cmds[tag] = [b, model] + opts
        ir = {tag: instructions(cmds[tag]) if callgrind else None for tag, _ in bins}
        for c in cmds.values():  # warm-up
            wall(c)
        t = {k: [] for k in cmds}
        cpu = {k: [] for k in cmds}
        flt = {k: [] for k in cmds}
        for _ in range(rounds):
            for k, c in cmds.items():
                w, u, f = wall(c)
                t[k].append(w)
                cpu[k].append(u)
                flt[k].append(f)
        ratio = {tag: statistics.median([x / y for x, y in zip(t[tag], t["jq"])]) for tag, _ in bins}
        # CPU time is counted in clock ticks: the ratio of the rounds' sums, not a median of per-round ratios
        cratio = {tag: sum(cpu[tag]) / sum(cpu["jq"]) if sum(cpu["jq"]) else float("nan") for tag, _ in bins}
        rows.append((name, ir, ratio, statistics.median(t["jq"]), {tag: statistics.median(t[tag]) for tag, _ in bins},
                     target, cratio, {k: statistics.median(v) for k, v in flt.items()}))
    print(f"{rounds} interleaved rounds; wall medians in ms; / jq = median of per-round wall / jq; "
          "cpu / jq = the rounds' user + system CPU time over jq's; faults = median minor page faults")
    tags = [tag for tag, _ in bins][::-1]
    head = "| job | " + " | ".join(f"instructions {t}" for t in tags) + " | jq ms | " + \
        " | ".join(f"ms {t} | / jq {t}" for t in tags) + " | " + " | ".join(f"cpu / jq {t}" for t in tags) + \
        " | faults jq | " + " | ".join(f"faults {t}" for t in tags) + " | target |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for name, ir, ratio, jq, ms, target, cratio, flt in rows:
        cells = [f"{ir[t] / 1e6:.1f} M" if ir[t] else "-" for t in tags]
        cells += [f"{jq * 1e3:.1f}"]
        for t in tags:
            cells += [f"{ms[t] * 1e3:.1f}", f"{ratio[t]:.2f}"]
        cells += [f"{cratio[t]:.2f}" for t in tags]
        cells += [f"{flt['jq']:,.0f}"] + [f"{flt[t]:,.0f}" for t in tags]
        print(f"| {name} | " + " | ".join(cells) + f" | {target} |")


main()
