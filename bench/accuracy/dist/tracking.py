"""tracking.py -- the accuracy harness's counter set up for one measured process, and its phases.

Shared by worker.py (DDP / ZeroRedundancyOptimizer ranks), fsdp_replica.py and pp_replica.py
(the replicas): each did the same steps by hand. `start(spec_path, seed)` does what each did
before building the model (bench/accuracy/measure.py's protocol, SPEC.md section 4):
  torch.set_num_threads(1) is the caller's (worker.py must call it before init_process_group);
  measure.Tracker(), vctorch's fused/read hooks to it, the model file read, torch.manual_seed,
  gc.collect(), tr.start(install=True) (the baseline), the 2.x compatibility of the op observer.
Phases: `begin(name)` tags the phase and resets both peaks; `end(name)` reads the counter and
appends {"phase", "peak" (between-op), ["peak_allocator"], "end"} to `phases`.
`measured_top(phases)` is the phase with the highest peak in steps 2.. (the "sN." phases).
"""

import gc
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


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
