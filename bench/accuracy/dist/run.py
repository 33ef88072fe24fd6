#!/usr/bin/python3
"""run.py -- measure per-rank peaks under DDP and ZeroRedundancyOptimizer (gloo, CPU).

    /usr/bin/python3 bench/accuracy/dist/run.py                 # every case -> results.json
    /usr/bin/python3 bench/accuracy/dist/run.py --only ID,ID    # some cases (merged into results.json)
    /usr/bin/python3 bench/accuracy/dist/run.py --list          # the cases
    /usr/bin/python3 bench/accuracy/dist/run.py --case '{"id":..., ...}' --out x.json   # one ad-hoc case

For each case it starts `world_size` processes of worker.py (torch.distributed, gloo
backend, 127.0.0.1) with LD_PRELOAD=bench/accuracy/libmemtrack.so, each measuring its own
rank with the accuracy harness's counter (see worker.py and bench/accuracy/README.md),
and stores one record per rank.  Needs the harness libraries (`make -C bench/accuracy`,
Debian's libtorch-dev headers) and torch 1.13 at /usr/bin/python3.

Engines:
  single     no wrapper, world size 1 (what bench/accuracy/measure.py measures)
  ddp        DistributedDataParallel, gradient_as_bucket_view=False (the default)
  ddp-view   DistributedDataParallel, gradient_as_bucket_view=True
  zero1      DDP (gradient_as_bucket_view=False) + ZeroRedundancyOptimizer
             (parameters_as_bucket_view=False, the defaults)
  zero1-view DDP (gradient_as_bucket_view=True) + ZeroRedundancyOptimizer
             (parameters_as_bucket_view=True)
  zero1-pview DDP (gradient_as_bucket_view=False) + ZeroRedundancyOptimizer
             (parameters_as_bucket_view=True): the zero1 rows' like-for-like pair
bucket_cap_mb 25 and the 1 MiB first bucket (dist._DEFAULT_FIRST_BUCKET_BYTES) are
DDP's defaults; a case may set "bucket_cap_mb".
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ACC = os.path.dirname(HERE)
ROOT = os.path.dirname(os.path.dirname(ACC))
MEMTRACK = os.path.join(ACC, "libmemtrack.so")
RESULTS = os.path.join(HERE, "results.json")

ENGINES = {
    "single": {},
    "ddp": {"gradient_as_bucket_view": False},
    "ddp-view": {"gradient_as_bucket_view": True},
    "zero1": {"gradient_as_bucket_view": False, "parameters_as_bucket_view": False},
    "zero1-view": {"gradient_as_bucket_view": True, "parameters_as_bucket_view": True},
    "zero1-pview": {"gradient_as_bucket_view": False, "parameters_as_bucket_view": True},
}

MLP = "bench/accuracy/models/mlp.json"            # 8.39 M params: buckets 1 MiB, 25 MiB, rest
TSTACK = "bench/accuracy/dist/models/tstack.json"  # 12.6 M params, 4 encoder layers
RESNET = "examples/resnet18.json"                  # 11.7 M params, BatchNorm buffers (broadcast each forward)
GPT = "bench/accuracy/models/gpt2_headsplit.json"  # tiny GPT: tied embedding, one bucket


def _cases():
    out = []

    def add(model, short, batch, optim, engine, world, held_out=False, **kw):
        c = {"id": "%s-b%d-%s-%s-w%d" % (short, batch, optim, engine, world), "model": model,
             "batch": batch, "optim": optim, "engine": engine, "world_size": world}
        c.update(ENGINES[engine])
        c.update(kw)
        if held_out:
            c["held_out"] = True
        out.append(c)

    # single-process references (the same protocol, no wrapper)
    for model, short, b, o, extra in ((MLP, "mlp", 64, "adam", {}), (TSTACK, "tstack", 4, "adam", {}),
                                      (RESNET, "resnet18", 8, "sgd", {"input": "3,64,64"}),
                                      (GPT, "gpt", 4, "adam", {}), (MLP, "mlp", 64, "sgd", {}),
                                      (MLP, "mlp", 64, "momentum", {})):
        add(model, short, b, o, "single", 1, **extra)
    # DDP at world size 1 (buckets are allocated even then)
    add(MLP, "mlp", 64, "adam", "ddp", 1)
    add(MLP, "mlp", 64, "adam", "ddp-view", 1)
    for w in (2, 4):
        # MLP: Adam and SGD, both bucket modes, ZeRO-1 (its greedy partition is very uneven here)
        add(MLP, "mlp", 64, "adam", "ddp", w)
        add(MLP, "mlp", 64, "adam", "ddp-view", w)
        add(MLP, "mlp", 64, "sgd", "ddp", w)
        add(MLP, "mlp", 64, "sgd", "ddp-view", w, held_out=(w == 4))
        add(MLP, "mlp", 64, "adam", "zero1", w)
        add(MLP, "mlp", 64, "momentum", "zero1", w, held_out=True)
        add(MLP, "mlp", 16, "adam", "zero1-view", w, held_out=(w == 2))
        # transformer block stack
        add(TSTACK, "tstack", 4, "adam", "ddp", w)
        add(TSTACK, "tstack", 4, "adam", "ddp-view", w, held_out=(w == 4))
        add(TSTACK, "tstack", 4, "adam", "zero1", w)
        add(TSTACK, "tstack", 8, "sgd", "ddp", w, held_out=True)
        add(TSTACK, "tstack", 2, "adam", "zero1-view", w, held_out=(w == 4))
        # ResNet-18 at 64x64 (BatchNorm buffers broadcast at every forward)
        add(RESNET, "resnet18", 8, "sgd", "ddp", w, input="3,64,64")
        add(RESNET, "resnet18", 8, "adam", "zero1", w, input="3,64,64", held_out=(w == 2))
        add(RESNET, "resnet18", 4, "momentum", "ddp-view", w, input="3,64,64", held_out=True)
        # parameters_as_bucket_view alone, against resnet18-b8-adam-zero1 (added after the model:
        # resnet18's small BatchNorm parameters make per-parameter and per-rank 512 B rounding differ)
        add(RESNET, "resnet18", 8, "adam", "zero1-pview", w, input="3,64,64", held_out=True)
        # tiny GPT with a tied embedding
        add(GPT, "gpt", 4, "adam", "ddp", w, held_out=(w == 2))
        add(GPT, "gpt", 4, "adam", "zero1", w)
    return out


CASES = _cases()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run_case(case, timeout=900):
    if not os.path.exists(MEMTRACK):
        subprocess.run(["make", "-s", "-C", ACC], check=True, stdout=sys.stderr)
    world = case["world_size"]
    port = free_port()
    procs = []
    for r in range(world):
        env = dict(os.environ)
        env.update({"LD_PRELOAD": MEMTRACK, "RANK": str(r), "WORLD_SIZE": str(world),
                    "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "OMP_NUM_THREADS": "1",
                    "GLOO_SOCKET_IFNAME": "lo", "VRAMCALC_MEASURE_CHILD": "1"})
        procs.append(subprocess.Popen([sys.executable, os.path.join(HERE, "worker.py"), json.dumps(case)],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    recs = []
    for r, pr in enumerate(procs):
        out, err = pr.communicate(timeout=timeout)
        if pr.returncode != 0:
            for q in procs:
                if q.poll() is None:
                    q.kill()
            raise RuntimeError("case %s rank %d failed (rc %d): %s" % (case["id"], r, pr.returncode,
                                                                       err.strip()[-2000:]))
        recs.append(json.loads(out.strip().splitlines()[-1]))
    return recs


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--only", help="comma list of case ids")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--case", help="one ad-hoc case as JSON (not stored in results.json)")
    ap.add_argument("--out", default=RESULTS)
    args = ap.parse_args(argv)
    if args.list:
        for c in CASES:
            print(c["id"] + ("  (held out)" if c.get("held_out") else ""))
        return 0
    if args.case:
        recs = run_case(json.loads(args.case))
        with open(args.out, "w") as f:
            json.dump(recs, f, indent=1)
        for r in recs:
            print(r["case"], "rank", r["rank"], r["peak_allocated"], r["peak_phase"])
        return 0
    cases = CASES
    if args.only:
        want = set(args.only.split(","))
        unknown = want - {c["id"] for c in CASES}
        if unknown:
            print("run.py: --only: unknown case %s" % ", ".join(sorted(unknown)), file=sys.stderr)
            return 2
        cases = [c for c in CASES if c["id"] in want]
    old = []
    if os.path.exists(args.out):
        with open(args.out) as f:
            old = json.load(f)["records"]
    done = {c["id"] for c in cases}
    records = [r for r in old if r["case"] not in done]
    for c in cases:
        t = time.time()
        recs = run_case(c)
        records.extend(recs)
        print("%-40s %s  (%.0f s)" % (c["id"], " ".join(str(r["peak_allocated"]) for r in recs), time.time() - t),
              flush=True)
        order = {c["id"]: i for i, c in enumerate(CASES)}
        records.sort(key=lambda r: (order.get(r["case"], 1 << 30), r["rank"]))
        with open(args.out, "w") as f:
            json.dump({"generator": "bench/accuracy/dist/run.py", "records": records}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
