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
  encoder    TransformerEncoderLayer(d_model 8) x 10,000 (tests/test_stress.c's file), --sweep 1:40 -f csv:
             wall, CPU and peak resident memory (no callgrind: its instructions are not the question)
--only runs the jobs named (e.g. --only max-seq).
Needs jq; valgrind for the instruction counts (Debian: apt-get install valgrind).
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
HF = os.path.join(ROOT, "tests", "data", "hf")


ENCODER = ('{"input":[4,8],"layers":[{"type":"TransformerEncoderLayer","d_model":8,"nhead":2,'
           '"batch_first":true,"repeat":10000}]}')


def jobs(seq, enc):
    return [
        ("estimate", seq, ["-b", "32"], "<= 0.25x jq, <= 25 M instructions"),
        ("max-batch", seq, ["--gpu", "h100-80gb", "--max-batch"], ""),
        ("sweep", seq, ["--sweep", "1:1024", "-f", "csv"], ""),
        ("max-seq", f"{HF}/llama-3.1-8b.json", ["--max-seq", "--gpu", "h100-80gb"], "<= 0.5x jq"),
        ("max-context", f"{HF}/llama-3.1-8b.json", ["--mode", "generate", "--new-tokens", "1024", "-p", "bf16", "--gpu", "rtx4090",
                                                  "--max-context"], ""),
        ("mixtral", f"{HF}/mixtral-8x7b-v0.1.json", ["--sweep", "1:256", "-f", "csv"], "<= 1x jq"),
        ("pp-virtual", f"{HF}/llama-3.1-405b.json", ["--pp", "14", "--pp-virtual", "3", "--gpus", "14"], "<= 1x jq"),
        ("encoder", enc, ["--sweep", "1:40", "-f", "csv"], "<= 2 s and 512 MB"),
    ]


def wall(cmd):
    """wall seconds, CPU seconds (user + system), minor page faults and peak resident KiB of one run"""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)  # this child's own usage (RUSAGE_CHILDREN's peak is the largest so far)
    t1 = time.perf_counter()
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not again by Popen
    return t1 - t0, ru.ru_utime + ru.ru_stime, ru.ru_minflt, ru.ru_maxrss


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
    enc = os.path.join(tmp, "enc10000.json")
    with open(enc, "w") as f:
        f.write(ENCODER)
    rows = []
    for name, model, opts, target in jobs(seq, enc):
        if only and name not in only:
            continue
        cmds = {"jq": ["jq", "-c", ".", model]}
        for tag, b in bins:
            cmds[tag] = [b, model] + opts
        ir = {tag: instructions(cmds[tag]) if callgrind and name != "encoder" else None for tag, _ in bins}
        for c in cmds.values():  # warm-up
            wall(c)
        t = {k: [] for k in cmds}
        cpu = {k: [] for k in cmds}
        flt = {k: [] for k in cmds}
        rss = {k: [] for k in cmds}
        for _ in range(rounds if name != "encoder" else max(1, rounds // 5)):
            for k, c in cmds.items():
                w, u, f, m = wall(c)
                t[k].append(w)
                cpu[k].append(u)
                flt[k].append(f)
                rss[k].append(m)
        ratio = {tag: statistics.median([x / y for x, y in zip(t[tag], t["jq"])]) for tag, _ in bins}
        # CPU time is counted in clock ticks: the ratio of the rounds' sums, not a median of per-round ratios
        cratio = {tag: sum(cpu[tag]) / sum(cpu["jq"]) if sum(cpu["jq"]) else float("nan") for tag, _ in bins}
        rows.append((name, ir, ratio, statistics.median(t["jq"]), {tag: statistics.median(t[tag]) for tag, _ in bins},
                     target, cratio, {k: statistics.median(v) for k, v in flt.items()},
                     {k: max(v) for k, v in rss.items()}, {k: statistics.median(v) for k, v in cpu.items()}))
    print(f"{rounds} interleaved rounds ({max(1, rounds // 5)} for the encoder); wall medians in ms; / jq = median "
          "of per-round wall / jq; cpu / jq = the rounds' user + system CPU time over jq's; faults = median minor "
          "page faults; cpu s = median CPU seconds; MB = the largest peak resident memory")
    tags = [tag for tag, _ in bins][::-1]
    head = "| job | " + " | ".join(f"instructions {t}" for t in tags) + " | jq ms | " + \
        " | ".join(f"ms {t} | / jq {t}" for t in tags) + " | " + " | ".join(f"cpu / jq {t}" for t in tags) + \
        " | faults jq | " + " | ".join(f"faults {t}" for t in tags) + " | " + \
        " | ".join(f"cpu s {t} | MB {t}" for t in tags) + " | target |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for name, ir, ratio, jq, ms, target, cratio, flt, rss, cpus in rows:
        cells = [f"{ir[t] / 1e6:.1f} M" if ir[t] else "-" for t in tags]
        cells += [f"{jq * 1e3:.1f}"]
        for t in tags:
            cells += [f"{ms[t] * 1e3:.1f}", f"{ratio[t]:.2f}"]
        cells += [f"{cratio[t]:.2f}" for t in tags]
        cells += [f"{flt['jq']:,.0f}"] + [f"{flt[t]:,.0f}" for t in tags]
        for t in tags:  # the median run's CPU seconds, the largest peak resident memory (ru_maxrss KiB, in MB)
            cells += [f"{cpus[t]:.2f}", f"{rss[t] * 1024 / 1e6:.0f}"]
        print(f"| {name} | " + " | ".join(cells) + f" | {target} |")


main()
