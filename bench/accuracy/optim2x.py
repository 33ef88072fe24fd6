"""PyTorch 2.x foreach optimizers, replicated on torch 1.13 (AUTOGRAD.md section 8).

torch 1.13's optimizers are not 2.x's defaults (foreach on CUDA).  These classes
run the same tensor-list operations in the same order as 2.x's
_multi_tensor_adam (torch/optim/adam.py, decoupled_weight_decay for AdamW) and
_multi_tensor_sgd (torch/optim/sgd.py), so the measured timeline holds the same
tensors: exp_avg/exp_avg_sq made with zeros_like on the first step, the
exp_avg_sq_sqrt list (1x the parameters) during step(), the momentum buffers
cloned from the gradients on the first step.

Differences, all without device memory in 2.x:
  * state["step"] is a Python number here; 2.x keeps a 0-d CPU tensor
    (capturable=False), which never touches the GPU but would be counted by
    the CPU allocator tracker.
  * 1.13 has no torch._foreach_lerp_: exp_avg.lerp_(grad, 1-beta1) per tensor
    (in place, no allocation), as _foreach_lerp_ is.
Tensors are grouped by (device, dtype) in parameter order, as
Optimizer._group_tensors_by_device_and_dtype does.
"""

from collections import OrderedDict

import torch


def _groups(params):
    g = OrderedDict()
    for p in params:
        g.setdefault((p.device, p.dtype), []).append(p)
    return g.values()


class Foreach2x:
    """kind: 'adam', 'adamw', 'sgd', 'momentum' (SGD, momentum 0.9)."""

    def __init__(self, params, kind, lr=None):
        seen = set()
        self.params = []
        for p in params:
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                self.params.append(p)
        self.kind = kind
        if kind in ("adam", "adamw"):
            self.lr = 1e-3 if lr is None else lr
            self.betas = (0.9, 0.999)
            self.eps = 1e-8
            self.weight_decay = 0.0 if kind == "adam" else 1e-2
        elif kind in ("sgd", "momentum"):
            self.lr = 1e-3 if lr is None else lr
            self.momentum = 0.9 if kind == "momentum" else 0.0
            self.dampening = 0.0
            self.weight_decay = 0.0
        else:
            raise ValueError("unknown optimizer %r" % kind)
        self.state = {}

    def zero_grad(self, set_to_none=True):
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self):
        if self.kind in ("adam", "adamw"):
            self._adam()
        else:
            self._sgd()

    # torch/optim/adam.py: Adam._init_group + _multi_tensor_adam (capturable=False,
    # amsgrad=False, maximize=False)
    def _adam(self):
        params, grads, exp_avgs, exp_avg_sqs, steps = [], [], [], [], []
        for p in self.params:
            if p.grad is None:
                continue
            st = self.state.get(p)
            if st is None:
                st = self.state[p] = {
                    "step": 0.0,
                    "exp_avg": torch.zeros_like(p, memory_format=torch.preserve_format),
                    "exp_avg_sq": torch.zeros_like(p, memory_format=torch.preserve_format),
                }
            params.append(p)
            grads.append(p.grad)
            exp_avgs.append(st["exp_avg"])
            exp_avg_sqs.append(st["exp_avg_sq"])
            steps.append(st)
        if not params:
            return
        beta1, beta2 = self.betas
        lr, eps, wd = self.lr, self.eps, self.weight_decay
        idx = {id(p): i for i, p in enumerate(params)}
        for group in _groups(params):
            ii = [idx[id(p)] for p in group]
            device_params = [params[i] for i in ii]
            device_grads = [grads[i] for i in ii]
            device_exp_avgs = [exp_avgs[i] for i in ii]
            device_exp_avg_sqs = [exp_avg_sqs[i] for i in ii]
            device_steps = [steps[i] for i in ii]
            for st in device_steps:  # torch._foreach_add_(device_state_steps, 1)
                st["step"] += 1
            if wd != 0:
                if self.kind == "adamw":
                    torch._foreach_mul_(device_params, 1 - lr * wd)
                else:
                    device_grads = torch._foreach_add(device_grads, device_params, alpha=wd)
            for ea, g in zip(device_exp_avgs, device_grads):  # torch._foreach_lerp_
                ea.lerp_(g, 1 - beta1)
            torch._foreach_mul_(device_exp_avg_sqs, beta2)
            torch._foreach_addcmul_(device_exp_avg_sqs, device_grads, device_grads, 1 - beta2)
            del device_grads
            bias_correction1 = [1 - beta1 ** st["step"] for st in device_steps]
            bias_correction2 = [1 - beta2 ** st["step"] for st in device_steps]
            step_size = [(lr / bc) * -1 for bc in bias_correction1]
            bias_correction2_sqrt = [bc ** 0.5 for bc in bias_correction2]
            exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)
            torch._foreach_div_(exp_avg_sq_sqrt, bias_correction2_sqrt)
            torch._foreach_add_(exp_avg_sq_sqrt, eps)
            torch._foreach_addcdiv_(device_params, device_exp_avgs, exp_avg_sq_sqrt, step_size)
            # like 2.x, this group's list stays referenced (loop variable) while the
            # next group's _foreach_sqrt allocates; dropped when step() returns

    # torch/optim/sgd.py: _multi_tensor_sgd (maximize=False, nesterov=False)
    def _sgd(self):
        params, grads = [], []
        for p in self.params:
            if p.grad is not None:
                params.append(p)
                grads.append(p.grad)
        if not params:
            return
        idx = {id(p): i for i, p in enumerate(params)}
        for group in _groups(params):
            ii = [idx[id(p)] for p in group]
            device_params = [params[i] for i in ii]
            device_grads = [grads[i] for i in ii]
            if self.weight_decay != 0:
                device_grads = torch._foreach_add(device_grads, device_params, alpha=self.weight_decay)
            if self.momentum != 0:
                bufs = [self.state.get(p, {}).get("momentum_buffer") for p in device_params]
                if all(b is not None for b in bufs):
                    torch._foreach_mul_(bufs, self.momentum)
                    torch._foreach_add_(bufs, device_grads, alpha=1 - self.dampening)
                else:
                    for i, p in enumerate(device_params):
                        if bufs[i] is None:
                            bufs[i] = device_grads[i].detach().clone()
                            self.state.setdefault(p, {})["momentum_buffer"] = bufs[i]
                        else:
                            bufs[i].mul_(self.momentum).add_(device_grads[i], alpha=1 - self.dampening)
                device_grads = bufs
            torch._foreach_add_(device_params, device_grads, alpha=-self.lr)

    def state_bytes(self):
        n = 0
        for st in self.state.values():
            for v in st.values():
                if torch.is_tensor(v):
                    n += v.numel() * v.element_size()
        return n


def make(params, kind):
    if kind == "none":
        return None
    return Foreach2x(params, kind)


__all__ = ["Foreach2x", "make"]
