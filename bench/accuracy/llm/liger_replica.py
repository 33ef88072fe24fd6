"""liger_replica.py -- Liger-Kernel's fused linear cross-entropy in plain torch (1.13, CPU), for
the accuracy harness: Triton does not run here, so the op sequence of the source is written out
statement by statement, each allocation where the source makes it.

Source: github.com/linkedin/Liger-Kernel @ ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c
  src/liger_kernel/transformers/model/llama.py        lce_forward (training with labels: skip_logits)
  src/liger_kernel/transformers/model/loss_utils.py   LigerForCausalLMLoss, fixed_fused_linear_cross_entropy
  src/liger_kernel/ops/fused_linear_cross_entropy.py  fused_linear_cross_entropy_forward / _backward,
                                                      LigerFusedLinearCrossEntropyFunction
Line numbers below are that file's (FLCE) at that commit.

What is not the source's: liger_cross_entropy_kernel (ops/cross_entropy.py) is a Triton kernel that
reads each row of the logits chunk and overwrites it with the gradient through registers, allocating
nothing. Its replica here works on the chunk in place with torch ops whose only allocations are
[rows, 1]-sized (a few 512-byte blocks for the chunks measured), and computes in the chunk's dtype
(the kernel accumulates in fp32). With soft-capping the gradient misses tanh's derivative (the memory
is the same; the values are not used). Written without reading vramcalc's engine.
"""
import torch
import torch.nn.functional as F

COMMIT = "ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c"


def next_power_of_2(n):
    """triton.next_power_of_2 for n >= 1."""
    return 1 << (n - 1).bit_length()


def cdiv(a, b):
    """triton.cdiv."""
    return (a + b - 1) // b


def _cross_entropy_kernel(X, Y, loss_slice, n_non_ignore, ignore_index, softcap, has_gradients):
    """liger_cross_entropy_kernel[(n_rows,)] (FLCE l.163-197) with reduction="mean": per row the
    loss lse - x_y over n_non_ignore into loss_slice and, with HAS_GRADIENTS, X overwritten in
    place by (softmax(x) - onehot(y)) / n_non_ignore (0 on ignored rows)."""
    if softcap is not None:
        X.div_(softcap).tanh_().mul_(softcap)
    valid = (Y != ignore_index).unsqueeze(1)
    yi = Y.clamp(min=0).unsqueeze(1)
    xy = X.gather(1, yi)
    m = torch.amax(X, 1, keepdim=True)
    X.sub_(m).exp_()
    s = X.sum(1, keepdim=True)
    lse = s.log().add_(m)
    loss_slice.copy_(lse.sub_(xy).mul_(valid).squeeze(1).div_(n_non_ignore))
    del lse, xy, m
    if has_gradients:
        X.div_(s)
        X.scatter_add_(1, yi, torch.full_like(s, -1.0))
        X.mul_(valid.to(X.dtype).div_(n_non_ignore))


def fused_linear_cross_entropy_forward(_input, weight, target, ignore_index=-100, softcap=None):
    """FLCE l.21-289 for ce_weight=None, bias=None, reduction="mean", no z-loss, accum_dtype=None
    (what LigerForCausalLMLoss passes), no token scaling/accuracy."""
    input_requires_grad = _input.requires_grad          # l.54 (compute_gradients None)
    weight_needs_grad = weight.requires_grad            # l.55
    BT, H = _input.shape                                # l.64
    V = weight.shape[0]
    inc_factor = cdiv(V, H)                             # l.68
    chunk_size = next_power_of_2(cdiv(BT, inc_factor))  # l.69
    num_chunks = cdiv(BT, chunk_size)                   # l.70
    grad_input = torch.zeros_like(_input)               # l.72
    if input_requires_grad:                             # l.75-84
        grad_weight = torch.zeros_like(weight) if weight_needs_grad else None
    else:
        grad_weight = None
    loss_1d = torch.zeros(BT, dtype=torch.float32)      # l.86
    target_mask = target != ignore_index                # l.92
    total_n_non_ignore = target_mask.sum().item()       # l.93
    for chunk_id in range(num_chunks):                  # l.108
        start_idx = chunk_id * chunk_size
        end_idx = min((chunk_id + 1) * chunk_size, BT)
        _input_chunk = _input[start_idx:end_idx]        # l.111
        logits_chunk = _input_chunk @ weight.t()        # l.114 (the previous chunk is still grad_logits_chunk)
        target_chunk = target[start_idx:end_idx]        # l.118
        loss_1d_slice = loss_1d[start_idx:end_idx]      # l.153
        logits_chunk = logits_chunk.contiguous()        # l.159
        target_chunk = target_chunk.contiguous()        # l.160
        _cross_entropy_kernel(logits_chunk, target_chunk, loss_1d_slice, total_n_non_ignore,
                              ignore_index, softcap, input_requires_grad)   # l.163
        loss_1d[start_idx:end_idx] = loss_1d_slice      # l.205
        grad_logits_chunk = logits_chunk                # l.212 (the previous chunk goes)
        if input_requires_grad:                         # l.230-231
            grad_input[start_idx:end_idx] = grad_logits_chunk @ weight
        if grad_weight is not None and input_requires_grad:
            # l.257: grad_weight += torch.mm(grad_logits_chunk.t(), _input_chunk).float()
            # (the l.235-255 addmm(out_dtype=float32) path needs an fp32 grad_weight: not taken).
            # The mm's result dies once .float() has returned (a new fp32 tensor for a 16-bit mm,
            # the mm itself for fp32), then the in-place add. CUDA's add_ casts inside its kernel;
            # torch's CPU TensorIterator would allocate an fp32 output temporary for a bf16
            # grad_weight (compute_types, CPU only), so the replica adds the mm (same dtype) while
            # both are alive: the same allocations as the GPU's, in the same order.
            mm = torch.mm(grad_logits_chunk.t(), _input_chunk)
            f = mm.float()
            if f is mm:
                del mm
                grad_weight += f
            else:
                grad_weight += mm
                del mm
            del f
    loss = torch.sum(loss_1d)                           # l.278
    grad_weight = grad_weight.to(weight.dtype) if grad_weight is not None else None   # l.286
    return loss, grad_input, grad_weight


class LigerFusedLinearCrossEntropyFunction(torch.autograd.Function):
    """FLCE l.339-487 (reduction "mean": the compute-in-forward path, l.429-435)."""

    @staticmethod
    def forward(ctx, _input, weight, target, ignore_index=-100, softcap=None):
        loss, grad_input, grad_weight = fused_linear_cross_entropy_forward(
            _input, weight, target, ignore_index, softcap)
        ctx.save_for_backward(grad_input.detach(),
                              grad_weight.detach() if grad_weight is not None else None)   # l.431
        return loss

    @staticmethod
    def backward(ctx, grad_output):
        grad_input, grad_weight = ctx.saved_tensors     # l.467
        # fused_linear_cross_entropy_backward (l.292-336)
        if not torch.equal(grad_output, torch.tensor(1.0, device=grad_output.device)):
            grad_input.mul_(grad_output)                # element_mul_kernel, in place
            if grad_weight is not None:
                grad_weight.mul_(grad_output)
        return grad_input, grad_weight, None, None, None


def liger_for_causal_lm_loss(hidden_states, lm_head_weight, labels, hidden_size, ignore_index=-100,
                             final_logit_softcapping=None):
    """LigerForCausalLMLoss (loss_utils.py l.67-106) with shift_labels None and num_items_in_batch
    None (fixed_fused_linear_cross_entropy: reduction "mean", the loss as returned)."""
    labels = F.pad(labels, (0, 1), value=ignore_index)
    shift_labels = labels[..., 1:].contiguous()
    hidden_states = hidden_states.view(-1, hidden_size)
    shift_labels = shift_labels.view(-1)
    return LigerFusedLinearCrossEntropyFunction.apply(hidden_states, lm_head_weight, shift_labels,
                                                      ignore_index, final_logit_softcapping)
