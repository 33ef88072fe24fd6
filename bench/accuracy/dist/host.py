"""host.py -- tensors in host (CPU) memory for the offload replicas, outside the counter.

The accuracy harness counts what c10's CPU allocator allocates (memtrack.c: posix_memalign
from libc10.so), standing for the GPU's caching allocator. An offloaded tensor lives in the
host's (pinned) memory, not the GPU's, so the replicas make it from a NumPy array
(torch.from_numpy shares NumPy's malloc'd buffer: c10 allocates nothing, the counter sees
nothing), and the optimizer that steps offloaded tensors (DeepSpeedCPUAdam / torch.optim on
CPU tensors) runs here in NumPy, so its temporaries are host memory too. Its arithmetic is
torch.optim's (Adam: exp_avg, exp_avg_sq, bias corrections; SGD with momentum 0.9 for
'momentum'), lr 1e-3 as optim2x; the values do not change what the GPU holds.
"""

import numpy as np


def empty(torch, n, dtype):
    """A host tensor of n elements (zeros), outside the counter."""
    npdt = {torch.float32: np.float32, torch.float64: np.float64, torch.float16: np.float16}[dtype]
    return torch.from_numpy(np.zeros(int(n), dtype=npdt))


class HostOptimizer:
    """kind 'adam', 'sgd' or 'momentum' over host parameters whose .grad are host tensors."""

    def __init__(self, params, kind, lr=1e-3):
        self.params = [p for p in params if p.requires_grad]
        self.kind, self.lr, self.state, self.t = kind, lr, {}, 0

    def zero_grad(self, set_to_none=True):
        for p in self.params:
            p.grad = None

    def step(self):
        self.t += 1
        for p in self.params:
            if p.grad is None:
                continue
            w, g = p.data.numpy(), p.grad.numpy()
            st = self.state.setdefault(id(p), {})
            if self.kind == "adam":
                if not st:
                    st["exp_avg"], st["exp_avg_sq"] = np.zeros_like(w), np.zeros_like(w)
                m, v = st["exp_avg"], st["exp_avg_sq"]
                m *= 0.9
                m += 0.1 * g
                v *= 0.999
                v += 0.001 * g * g
                denom = np.sqrt(v / (1 - 0.999 ** self.t)) + 1e-8
                w -= self.lr / (1 - 0.9 ** self.t) * m / denom
            elif self.kind == "momentum":
                if not st:
                    st["momentum_buffer"] = g.copy()
                else:
                    st["momentum_buffer"] *= 0.9
                    st["momentum_buffer"] += g
                w -= self.lr * st["momentum_buffer"]
            else:
                w -= self.lr * g
