"""cce_replica.py -- Apple's Cut Cross-Entropy (cut_cross_entropy, impl "cce", cce_patch's defaults)
as its transformers integration runs it, in plain torch (1.13, CPU), for the accuracy harness.

Source: github.com/apple/ml-cross-entropy @ d42911f9b1a1f98289bb601c35c8151562603d74
  cut_cross_entropy/transformers/llama.py   cce_forward (labels given: apply_lce, no logits)
  cut_cross_entropy/transformers/utils.py   apply_lce: linear_cross_entropy(e, c, labels, shift=True)
  cut_cross_entropy/cce.py                  cce_linear_cross_entropy, LinearCrossEntropyFunction
  cut_cross_entropy/utils.py                _build_flat_valids
  cut_cross_entropy/cce_lse_forward.py, indexed_dot.py, cce_backward.py   the kernels' wrappers

What is not the source's: the three Triton kernels (_cce_lse_forward_kernel, the indexed dot,
_cce_backward_kernel) tile the [N, V] logits on chip and write only into the tensors their
wrappers allocate; a torch computation of them would allocate [rows, V] blocks the kernels do not.
So this replica makes every allocation of the wrappers, in order, and replaces each kernel by an
in-place write of its outputs (fill_, no values computed): it measures what autograd keeps and
frees around them (the saved hidden states, valids, lse and logit_avg; the gradients allocated in
backward; AccumulateGrad; tied weights; checkpointing), not the arithmetic. torch.compile'd
helpers run eagerly (sort_logit_avg: argsort(...).to(int32)). Written without reading vramcalc's
engine.
"""
import torch

COMMIT = "d42911f9b1a1f98289bb601c35c8151562603d74"
IGNORE_INDEX = -100


def cdiv(a, b):
    return (a + b - 1) // b


def _build_flat_valids(targets, ignore_index, shift):
    """utils.py l.28-49 (shift != 0)."""
    targets = targets[..., shift:]
    valids = (targets != ignore_index).nonzero().to(torch.int32)
    for i in range(targets.ndim - 1):
        valids[:, i] *= targets.stride(i)
    assert targets.stride(-1) == 1
    return valids.sum(1)


class LinearCrossEntropyFunction(torch.autograd.Function):
    """cce.py l.48-235, reduction "mean", filter_eps set (logit_avg), no bias, no vocab parallel."""

    @staticmethod
    def forward(ctx, e, c, targets, valids, shift):
        needs_grad = e.requires_grad or c.requires_grad
        e_rg, c_rg = e.requires_grad, c.requires_grad
        # cce_lse_forward_kernel (cce_lse_forward.py l.193-237)
        B = valids.numel()
        V, D = c.shape
        lse = e.new_full((B,), -float("inf"), dtype=torch.float32)
        locks = e.new_full((cdiv(B, 128),), 0, dtype=torch.int32)  # uint32 in the source: 1.13 has none
        logit_avg = e.new_full((V,), 0.0, dtype=torch.float32) if needs_grad else None
        lse.fill_(0.0)                         # the kernel's output
        del locks
        # indexed_neg_dot_forward_kernel (indexed_dot.py l.123-158): out_dtype fp32, .to() a no-op
        neg_dot = e.new_zeros((B,), dtype=torch.float32)
        nll = neg_dot.add_(lse)                # cce.py l.139
        ctx.save_for_backward(e, c, lse, targets, valids, logit_avg)   # l.141
        ctx.e_rg, ctx.c_rg = e_rg, c_rg
        return nll.mean()                      # l.154

    @staticmethod
    def backward(ctx, grad_out):
        e, c, lse, targets, valids, logit_avg = ctx.saved_tensors
        vocab_ordering = torch.argsort(logit_avg).to(torch.int32) if logit_avg is not None else None  # l.171-172
        # cce_backward_kernel (cce_backward.py l.387-521), accum_*_fp32 False
        do = grad_out.contiguous()
        de = torch.zeros_like(e) if ctx.e_rg else None
        dc = torch.zeros_like(c) if ctx.c_rg else None
        B = valids.size(0)
        nd_locks = cdiv(c.size(1), 64)
        de_locks = e.new_zeros((cdiv(B, 128), nd_locks), dtype=torch.int32) if de is not None else None
        dc_locks = c.new_zeros((cdiv(c.size(0), 128), nd_locks), dtype=torch.int32) if dc is not None else None
        if de is not None:                     # the kernel's outputs
            de.fill_(0.0)
        if dc is not None:
            dc.fill_(0.0)
        del de_locks, dc_locks, vocab_ordering, do
        return de, dc, None, None, None


def cce_loss(hidden_states, lm_head_weight, labels, ignore_index=IGNORE_INDEX):
    """apply_lce (transformers/utils.py l.51-78, num_items_in_batch None) -> linear_cross_entropy ->
    cce_linear_cross_entropy (cce.py l.261-319) with shift=True."""
    e, targets = hidden_states, labels
    e = e.contiguous()
    targets = targets.contiguous()
    shift = 1
    valids = _build_flat_valids(targets, ignore_index, shift)
    e = e.flatten(0, -2)
    targets = targets.flatten()
    return LinearCrossEntropyFunction.apply(e, lm_head_weight, targets, valids, shift)
