"""tracking.py -- the accuracy harness's counter set up for one measured process, and its phases.

Shared by worker.py (DDP / ZeroRedundancyOptimizer ranks), fsdp_replica.py and pp_replica.py
(the replicas): each did the same steps by hand. `Phases(spec_path, seed)` does what each did
before building the model (bench/accuracy/measure.py's protocol, SPEC.md section 4):
  torch.set_num_threads(1) is the caller's (worker.py must call it before init_process_group);
  measure.Tracker(), vctorch's fused/read hooks to it, the model file read, torch.manual_seed,
  gc.collect(), tr.start(install=True) (the baseline), the 2.x compatibility of the op observer.
Phases: `begin(name)` tags the phase and resets both peaks; `end(name)` reads the counter and
appends {"phase", "peak" (between-op), ["peak_allocator"], "end"} to `phases`.
`Phases.top()` is the phase with the highest peak in steps 2.. (`measured()`, the "sN." phases).

Also the pieces the replicas' scripts (fsdp_replica.py, fsdp2_replica.py, offload_replica.py,
zero1_replica.py) share beyond the phases:
`add_paths()` (tools/, bench/accuracy/, this folder on sys.path), `loss_step` (measure.py's loss),
`train` (the three measured steps: fwd, bwd, opt, zero), `Phases.result` (the record's peak fields),
and the command line: `arg_parser` (the common options), `compare_or_one` (the modes but --all),
`table_head`, `load_records`, `run_preloaded` (one case in a child process under libmemtrack.so,
its last output line as the record); `train`'s `after_backward` (zero1_replica.py's reduce_gradients,
fsdp_replica.py's end-of-backward callback), `vramcalc_peak` (the CLI's peak for a layout),
`compare_busiest` (the --compare table against the busiest measured rank), `measure_all` (the --all
loop that writes the records file; offload_replica.py's and zero1_replica.py's).
"""

import argparse
import gc
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ACC = os.path.dirname(HERE)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def add_paths():
    """tools/ (vctorch, optim2x), bench/accuracy/ (measure.py) and this folder, searched in that
    order from the last: this folder first."""
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    sys.path.insert(0, ACC)
    sys.path.insert(0, HERE)


class Phases:
    """The tracker and the phases of one process (see the module docstring)."""

    def __init__(self, spec_path, seed=0, allocator_peak=False):
        import torch
        import measure  # bench/accuracy/measure.py: Tracker (ctypes front of the counter)
        import vctorch

        self.tr = measure.Tracker()
        vctorch.HOOKS.fused = self.tr.fused
        vctorch.HOOKS.read = self.tr.read
        with open(os.path.join(ROOT, spec_path)) as f:
            self.spec = json.load(f)
        torch.manual_seed(seed)
        gc.collect()
        self.tr.start(install=True)
        self.tr.O.opobs_set_compat_2x(1)
        self.allocator_peak = allocator_peak
        self.phases = []

    def begin(self, name):
        self.tr.tag(name)
        self.tr.O.opobs_reset_peak()
        self.tr.reset_peak()
        return name

    def end(self, name):
        tr = self.tr
        tr.read(name + "-end")
        ph = {"phase": name, "peak": int(tr.O.opobs_peak())}
        if self.allocator_peak:
            ph["peak_allocator"] = int(tr.peak() - tr.base_total)
        ph["end"] = int(tr.O.opobs_current())
        self.phases.append(ph)

    def backward(self, on):
        """The op observer's backward flag around an autograd pass."""
        self.tr.O.opobs_set_backward(1 if on else 0)

    def measured(self):
        """The phases of steps 2.. ("s2.fwd", "s3.opt", ...)."""
        return [ph for ph in self.phases if ph["phase"][0] == "s" and int(ph["phase"][1:].split(".")[0]) >= 2]

    def top(self):
        """The measured phase with the highest between-op peak (the first of equal ones)."""
        return max(self.measured(), key=lambda ph: ph["peak"])

    def result(self, torch, **extra):
        """A replica's record: the top phase's peak, the phases, `extra`'s fields, the torch version."""
        top = self.top()
        res = {"peak_allocated": top["peak"], "peak_phase": top["phase"], "phases": self.phases}
        res.update(extra)
        res["torch"] = torch.__version__
        return res


def loss_step(torch, module, inputs):
    """measure.py's loss_step: cross entropy against targets drawn once (the first call) for a
    "cross_entropy" model, else the mean of the output."""
    F = torch.nn.functional
    targets = []

    def step():
        if module.loss_kind == "cross_entropy":
            logits = module(*inputs).float()
            if not targets:
                targets.append(torch.randint(0, logits.shape[-1], tuple(logits.shape[:-1]), dtype=torch.int64))
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets[0].reshape(-1))
        return module(*inputs).float().mean()
    return step


def train(ph, step_loss, opt_step, zero_grad, steps=3, after_backward=None):
    """The measured training steps, each in four phases: sN.fwd (the loss), sN.bwd (backward with
    the op observer's backward flag on, then `after_backward()` if given, while the loss is still
    held), sN.opt (`opt_step()`), sN.zero (`zero_grad()`)."""
    for step in range(1, steps + 1):
        p = ph.begin("s%d.fwd" % step)
        loss = step_loss()
        ph.end(p)
        p = ph.begin("s%d.bwd" % step)
        ph.backward(True)
        loss.backward()
        ph.backward(False)
        if after_backward is not None:
            after_backward()
        del loss
        ph.end(p)
        p = ph.begin("s%d.opt" % step)
        opt_step()
        ph.end(p)
        p = ph.begin("s%d.zero" % step)
        zero_grad()
        ph.end(p)


def arg_parser(doc):
    """The replicas' common options: --all/--redo (measure), --compare/--cli/--bound, one case."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[1])
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--redo", action="store_true")
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "vramcalc"))
    ap.add_argument("--bound", type=float, default=8.0, help="percent (default 8, the suite's)")
    ap.add_argument("--model")
    ap.add_argument("--batch", type=int)
    ap.add_argument("--optim", default="adam")
    ap.add_argument("--world", type=int, default=2)
    return ap


def compare_or_one(a, compare, run_one):
    """The modes besides --all: --compare (`compare(a.cli, a.bound)`'s exit status), or one case
    (`run_one()`'s record printed as JSON, 0); None with --all (the caller measures)."""
    if a.compare:
        return compare(a.cli, a.bound)
    if not a.all:
        print(json.dumps(run_one()))
        return 0
    return None


def table_head(cols):
    """A Markdown table's header row and its rule."""
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))


def load_records(out, redo):
    """The records already in `out` (none with --redo, or without the file)."""
    if os.path.exists(out) and not redo:
        with open(out) as f:
            return json.load(f)["records"]
    return []


def run_preloaded(cmd):
    """Run `cmd` with libmemtrack.so preloaded; its last output line, a JSON record."""
    env = dict(os.environ, LD_PRELOAD=os.path.join(ACC, "libmemtrack.so"))
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def vramcalc_peak(cli, model, batch, optim, world, layout):
    """vramcalc's peak_allocated for `model` on `world` GPUs with the options `layout` (no workspace,
    math attention, as the replicas run)."""
    out = subprocess.run([cli, os.path.join(ROOT, model), "-f", "json", "-b", str(batch), "-o", optim,
                          "--workspace", "0", "--attention", "math", "--gpus", str(world)] + layout,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["memory"]["peak_allocated"]


def compare_busiest(out, cases, bound):
    """The --compare table: for each (case id, held out, estimate) of `cases`, vramcalc's
    `estimate()` against the busiest rank recorded in `out`; 1 when a case is missing or off by
    more than `bound` percent."""
    with open(out) as f:
        recs = json.load(f)["records"]
    table_head(["case", "held out", "measured busiest rank (B)", "vramcalc (B)", "diff (B)", "diff"])
    worst, bad = 0.0, 0
    for cid, held, estimate in cases:
        rs = [r for r in recs if r["case"] == cid]
        if not rs:
            print("| %s | missing | | | | |" % cid)
            bad += 1
            continue
        meas = max(r["peak_allocated"] for r in rs)
        est = estimate()
        d = (est - meas) / meas * 100
        worst = max(worst, abs(d))
        bad += abs(d) > bound
        print("| %s | %s | %s | %s | %+d | %+.2f%% |" % (cid, "yes" if held else "", format(meas, ","),
                                                       format(est, ","), est - meas, d))
    print("worst |diff| %.2f%%" % worst)
    return 1 if bad else 0


def measure_all(out, generator, redo, cases):
    """--all: each (case id, held out, config, measure) of `cases` not yet in `out` (every one with
    `redo`): `measure()`'s rank records tagged with the case, appended, and `out` rewritten."""
    recs = load_records(out, redo)
    have = {r["case"] for r in recs}
    for cid, held, config, measure in cases:
        if cid in have:
            continue
        for r in measure():
            r.update({"case": cid, "held_out": held, "config": dict(config)})
            recs.append(r)
            print("%s rank %d %s %d" % (cid, r["rank"], r["peak_phase"], r["peak_allocated"]), file=sys.stderr)
        with open(out, "w") as f:
            json.dump({"generator": generator, "records": recs}, f, indent=1)
    return 0
