#!/usr/bin/env python3
"""bench/speed/limits.py VRAMCALC [--copies N] [--timeout S] [--cap-gib G] [--mode M] — every layer kind at the limits.

Issue 28 (item 4) asks that every kind at the limits of docs/limits.md be
answered or refused within 2 s of CPU and 512 MB. This measures it: for each
layer kind, the first single-layer fixture of fuzz/corpus/ (fixture_*.json,
one layer each, the kinds' test shapes) whose output shape equals its
input's (what `repeat` needs; a square Linear for Linear) is repeated N
times ("repeat": N on its layer, default 1,000,000: VC_MAX_LAYERS) and
estimated once through the CLI (training, the default options, or --mode).
Each run is a child process; its CPU time (user + system) and peak resident
memory come from wait4's rusage (the child's own), its address space is
capped (RLIMIT_AS, --cap-gib, default 16; an address-space cap counts
reservations never touched, so a low one stops runs that would fit: at 6
GiB, Conv2d's 3.5 GiB run ran out), and it is killed after --timeout
seconds of wall time (default 120). CTest limits_kinds (tests/test_limits.c)
runs the same models through vc_estimate and asserts a generous ceiling.

Printed: one row per kind (exit status, CPU s, peak MiB, the error's gist),
sorted by peak memory, then how many kinds meet the target. A measurement
for people to read, not a test (timings on a shared machine move).
"""
import glob
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def fixtures(vc, d):
    """{kind: (path, model)}: for each kind, the first single-layer fixture that
    can be repeated (its output shape equals its input's: 2 copies estimate);
    and the kinds with none (a pooling that shrinks, an Embedding: they reach
    the layer limit only among other layers, not measured here)."""
    out, first = {}, {}
    for path in sorted(glob.glob(os.path.join(ROOT, "fuzz", "corpus", "fixture_*.json"))):
        try:
            m = json.load(open(path))
        except ValueError:
            continue
        layers = m.get("layers")
        if not isinstance(layers, list) or len(layers) != 1 or not isinstance(layers[0], dict):
            continue
        kind = layers[0].get("type")
        if not isinstance(kind, str) or kind in out or "repeat" in layers[0]:
            continue
        first.setdefault(kind, (path, m))
        t = json.loads(json.dumps(m))
        t["layers"][0]["repeat"] = 2
        f = os.path.join(d, "probe.json")
        json.dump(t, open(f, "w"))
        if subprocess.run([vc, f, "-f", "csv"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
            out[kind] = (path, m)
    # a kind with no repeatable fixture: a square Linear (docs/limits.md's million-Linear case)
    if "Linear" not in out:
        out["Linear"] = ("(Linear 8 x 8)", {"input": [8], "layers": [{"type": "Linear", "in_features": 8, "out_features": 8}]})
    return out, sorted(k for k in first if k not in out)


def run(cmd, cap, timeout):
    """exit status (or 'timeout'/'signal N'), CPU seconds, peak KiB, stderr's first line"""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=limit)
    t0 = time.time()
    status = None
    while status is None:
        pid, st, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            status = st
            break
        if time.time() - t0 > timeout:
            p.send_signal(signal.SIGKILL)
            pid, st, ru = os.wait4(p.pid, 0)
            status = "timeout"
            break
        time.sleep(0.02)
    err = p.stderr.read().decode(errors="replace").strip().splitlines()
    p.stderr.close()
    if status != "timeout":
        status = os.WEXITSTATUS(status) if os.WIFEXITED(status) else f"signal {os.WTERMSIG(status)}"
    return status, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, err[0] if err else ""


def main():
    args = sys.argv[1:]
    opts = {"--copies": 1000000, "--timeout": 120.0, "--cap-gib": 16.0, "--mode": "train"}
    for k in list(opts):
        if k in args:
            i = args.index(k)
            opts[k] = type(opts[k])(args[i + 1])
            del args[i:i + 2]
    if len(args) != 1:
        sys.exit(__doc__)
    vc = args[0]
    cap = int(opts["--cap-gib"] * (1 << 30))
    rows = []
    with tempfile.TemporaryDirectory() as d:
        kinds, skipped = fixtures(vc, d)
        for kind, (path, m) in sorted(kinds.items()):
            m["layers"][0]["repeat"] = opts["--copies"]
            f = os.path.join(d, kind + ".json")
            json.dump(m, open(f, "w"))
            st, cpu, kib, msg = run([vc, f, "-m", opts["--mode"], "-f", "csv"], cap, opts["--timeout"])
            rows.append((kind, os.path.basename(path), st, cpu, kib, msg))
            print(f"{kind:28s} {str(st):8s} {cpu:7.2f} s {kib / 1024:8.0f} MiB  {msg[:110]}", flush=True)
    print(f"\n{opts['--copies']} copies, --mode {opts['--mode']}, sorted by peak memory "
          f"(target: answered or refused within 2 s CPU and 512 MB):")
    print("| kind | fixture | exit | CPU s | peak MiB | meets | error (exit 2) |")
    print("|---|---|---|---|---|---|---|")
    ok = 0
    for kind, fx, st, cpu, kib, msg in sorted(rows, key=lambda r: -r[4]):
        meets = st in (0, 2) and cpu <= 2.0 and kib * 1024 <= 512e6
        ok += meets
        gist = msg.split(": ", 1)[1] if st == 2 and ": " in msg else ""
        print(f"| {kind} | {fx} | {st} | {cpu:.2f} | {kib / 1024:.0f} | {'yes' if meets else 'no'} | {gist[:90]} |")
    print(f"\n{ok} of {len(rows)} kinds within 2 s and 512 MB; not repeatable (no fixture whose output shape "
          f"is its input's): {', '.join(skipped)}")


main()
