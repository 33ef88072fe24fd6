"""PyTorch 2.x foreach optimizers, replicated on torch 1.13 (AUTOGRAD.md section 8);
torch.optim.Adafactor (2.5+) in both implementations (Adafactor2x, below).

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


def _lerp_(selves, ends, weights):
    """torch._foreach_lerp_ (2.x) with a list of weights; in a function so that no loop
    variable keeps the last element alive after the caller's `del` (PyTorch's single
    call has none)."""
    for s, e, w in zip(selves, ends, weights):
        s.lerp_(e, w)


def _clamp_min_(ts, v):
    """torch._foreach_clamp_min_ (2.x), in place."""
    for t in ts:
        t.clamp_(min=v)


def _rsqrt_(ts):
    """torch._foreach_rsqrt_ (2.x), in place."""
    for t in ts:
        t.rsqrt_()


class Adafactor2x:
    """torch.optim.Adafactor (PyTorch >= 2.5) with its defaults (lr 1e-2, beta2_decay
    -0.8, eps (None, 1e-3), d 1.0, weight_decay 0.0, maximize False), written from
    torch/optim/_adafactor.py at pytorch/pytorch commit
    051d6a09bb159a48ac11006c454c0c979511d0f3: Adafactor._init_group,
    _single_tensor_adafactor (foreach=None, the default) and _multi_tensor_adafactor
    (foreach=True), statement for statement, the loop variables kept as they are
    (a local of the loop over parameters lives until the next parameter rebinds it).

    Differences, none with device memory in 2.x:
      * state["step"] is a Python number (2.x: a 0-d CPU tensor, never on the GPU);
      * 1.13 has no _foreach_lerp_, _foreach_clamp_min_, _foreach_rsqrt_: the per-tensor
        in-place ops (lerp_, clamp_, rsqrt_), which allocate nothing either way."""

    def __init__(self, params, foreach=False):
        seen = set()
        self.params = []
        for p in params:
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                self.params.append(p)
        self.foreach = foreach
        self.lr, self.beta2_decay, self.eps1, self.eps2, self.d, self.weight_decay = 1e-2, -0.8, None, 1e-3, 1.0, 0.0
        self.state = {}

    def zero_grad(self, set_to_none=True):
        for p in self.params:
            p.grad = None

    def _init_group(self):
        params, grads, row_vars, col_vars, variances, steps = [], [], [], [], [], []
        for p in self.params:
            if p.grad is None:
                continue
            params.append(p)
            grads.append(p.grad)
            state = self.state.get(p)
            if state is None:
                state = self.state[p] = {"step": 0.0}
                if p.grad.dim() > 1:
                    row_shape = list(p.grad.shape)
                    row_shape[-1] = 1
                    state["row_var"] = p.grad.new_zeros(row_shape)
                    col_shape = list(p.grad.shape)
                    col_shape[-2] = 1
                    state["col_var"] = p.grad.new_zeros(col_shape)
                else:
                    state["variance"] = torch.zeros_like(p.grad, memory_format=torch.preserve_format)
            row_vars.append(state.get("row_var", None))
            col_vars.append(state.get("col_var", None))
            variances.append(state.get("variance", None))
            steps.append(state)
        return params, grads, row_vars, col_vars, variances, steps

    @torch.no_grad()
    def step(self):
        lists = self._init_group()
        if self.foreach:
            self._multi(*lists)
        else:
            self._single(*lists)

    def _single(self, params, grads, row_vars, col_vars, variances, state_steps):
        lr, eps1, eps2, d, beta2_decay = self.lr, self.eps1, self.eps2, self.d, self.beta2_decay
        for i, param in enumerate(params):
            grad = grads[i]
            step_t = state_steps[i]
            row_var = row_vars[i]
            col_var = col_vars[i]
            variance = variances[i]
            if eps1 is None:
                eps1 = torch.finfo(param.dtype).eps
            step_t["step"] += 1
            step_float = step_t["step"]
            one_minus_beta2_t = step_float ** beta2_decay
            rho_t = min(lr, 1 / (step_float ** 0.5))
            alpha = max(eps2, param.norm(2).item() / (param.numel() ** 0.5)) * rho_t
            if self.weight_decay != 0:
                param.mul_(1 - lr * self.weight_decay)
            if grad.dim() > 1:
                row_mean = torch.linalg.vector_norm(grad, dim=-1, keepdim=True).square_().div_(grad.size(-1))
                row_var.lerp_(row_mean, one_minus_beta2_t)
                col_mean = torch.linalg.vector_norm(grad, dim=-2, keepdim=True).square_().div_(grad.size(-2))
                col_var.lerp_(col_mean, one_minus_beta2_t)
                var_estimate = row_var @ col_var
                var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
            else:
                grad_squared = grad * grad
                variance.lerp_(grad_squared, one_minus_beta2_t)
                var_estimate = variance.clone()
            update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_()
            update.mul_(grad)
            denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
            param.add_(update, alpha=-alpha / denom)

    def _multi(self, params, grads, row_vars, col_vars, variances, state_steps):
        if len(params) == 0:
            return
        lr, eps1, eps2, d, beta2_decay = self.lr, self.eps1, self.eps2, self.d, self.beta2_decay
        # _group_tensors_by_device_dtype_and_is_multidim: (device, dtype) groups in
        # parameter order, each split into dim() > 1 and the rest, in order of first sight
        grouped = OrderedDict()
        for j, g in enumerate(grads):
            key = (g.device, g.dtype, g.dim() > 1)
            grouped.setdefault(key, [[] for _ in range(6)])
            for k, lst in enumerate((params, grads, row_vars, col_vars, variances, state_steps)):
                grouped[key][k].append(lst[j])
        for (_, dtype, is_multidim), (device_params, device_grads, device_row_vars, device_col_vars,
                                      device_variances, device_state_steps) in grouped.items():
            if eps1 is None:
                eps1 = torch.finfo(dtype).eps
            for s in device_state_steps:  # torch._foreach_add_(device_state_steps, 1.0)
                s["step"] += 1
            one_minus_beta2_ts = [s["step"] ** beta2_decay for s in device_state_steps]
            rho_ts = [min(lr, 1 / (s["step"] ** 0.5)) for s in device_state_steps]
            alphas = [max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * r for p, r in zip(device_params, rho_ts)]
            if self.weight_decay != 0:
                torch._foreach_mul_(device_params, 1 - lr * self.weight_decay)
            if is_multidim:
                row_means = [torch.linalg.vector_norm(grad, dim=-1, keepdim=True) for grad in device_grads]
                torch._foreach_mul_(row_means, row_means)
                torch._foreach_div_(row_means, [grad.size(-1) for grad in device_grads])
                _lerp_(device_row_vars, row_means, one_minus_beta2_ts)
                del row_means
                col_means = [torch.linalg.vector_norm(grad, dim=-2, keepdim=True) for grad in device_grads]
                torch._foreach_mul_(col_means, col_means)
                torch._foreach_div_(col_means, [grad.size(-2) for grad in device_grads])
                _lerp_(device_col_vars, col_means, one_minus_beta2_ts)
                del col_means
                var_estimates = [row_var @ col_var for row_var, col_var in zip(device_row_vars, device_col_vars)]
                row_var_means = [row_var.mean(dim=-2, keepdim=True) for row_var in device_row_vars]
                _clamp_min_(row_var_means, eps1)
                torch._foreach_div_(var_estimates, row_var_means)
                del row_var_means
            else:
                grads_squared = torch._foreach_mul(device_grads, device_grads)
                _lerp_(device_variances, grads_squared, one_minus_beta2_ts)
                del grads_squared
                var_estimates = [v.clone() for v in device_variances]
            _clamp_min_(var_estimates, eps1 * eps1)
            _rsqrt_(var_estimates)
            torch._foreach_mul_(var_estimates, device_grads)
            updates = var_estimates
            alphas = [-a / (max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d)))
                      for a, update in zip(alphas, updates)]
            torch._foreach_mul_(updates, alphas)
            torch._foreach_add_(device_params, updates)

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
    if kind in ("adafactor", "adafactor-foreach"):
        return Adafactor2x(params, foreach=kind == "adafactor-foreach")
    return Foreach2x(params, kind)


__all__ = ["Foreach2x", "Adafactor2x", "make"]
