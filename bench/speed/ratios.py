#!/usr/bin/env python3
"""bench/speed/ratios.py BUILD_DIR MODEL.json [ROUNDS [NAMED.json]] — issue 4's speed ratios,
measured interleaved.

hyperfine runs all the runs of one command, then the next; on a shared
machine whose speed drifts over seconds that skews ratios between commands.
Here every round runs each command once, in turn, so each ratio is taken
between runs made moments apart; reported are the per-command minimum and
median wall times and the median of the per-round ratios.

  one estimate / jq -c .            (target <= 0.25)
  --sweep 1:1024 / one estimate     (target <= 10)
  --max-batch (h100-80gb) / one     (target <= 3)
"""
import resource
import statistics
import subprocess
import sys
import time


def wall(cmd):
    """(wall seconds, child CPU seconds: user + system)"""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    t1 = time.perf_counter()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return t1 - t0, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    v = sys.argv[1].rstrip("/") + "/vramcalc"
    model = sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    named = sys.argv[4] if len(sys.argv) > 4 else None
    cmds = {
        "jq": ["jq", "-c", ".", model],
        "estimate": [v, model],
        "sweep": [v, model, "--sweep", "1:1024", "-f", "csv"],
        "max-batch": [v, model, "--gpu", "h100-80gb", "--max-batch"],
    }
    if named:  # the same model with every layer named (gen_model.py --names), against jq on that file
        cmds["jq-named"] = ["jq", "-c", ".", named]
        cmds["named"] = [v, named]
    for c in cmds.values():  # warm-up (page cache, first exec)
        wall(c)
        wall(c)
    t = {k: [] for k in cmds}
    cpu = {k: [] for k in cmds}
    for _ in range(rounds):
        for k, c in cmds.items():
            w, u = wall(c)
            t[k].append(w)
            cpu[k].append(u)
    print(f"{rounds} rounds; wall includes Python's spawn (~1 ms), CPU is the child's user + system")
    for k in cmds:
        print(f"{k:10s} wall min {min(t[k]) * 1e3:7.2f} median {statistics.median(t[k]) * 1e3:7.2f} ms;"
              f"  cpu min {min(cpu[k]) * 1e3:7.2f} median {statistics.median(cpu[k]) * 1e3:7.2f} ms")
    ratios = [("estimate / jq", "estimate", "jq", 0.25), ("sweep / estimate", "sweep", "estimate", 10),
              ("max-batch / estimate", "max-batch", "estimate", 3)]
    if named:
        ratios.append(("named / jq (named)", "named", "jq-named", 0.25))
    for name, a, b, target in ratios:
        rw = statistics.median([x / y for x, y in zip(t[a], t[b])])
        rc = statistics.median([x / y for x, y in zip(cpu[a], cpu[b]) if y > 0])
        print(f"{name:22s} median of per-round ratios: wall {rw:6.3f}, cpu {rc:6.3f}   (target <= {target})")


main()
