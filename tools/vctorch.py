"""vctorch -- build a torch.nn.Module from a vramcalc model file (SPEC.md section 1).

    import json, vctorch
    module, make_inputs = vctorch.build(json.load(open("model.json")))
    x = make_inputs(32)               # tuple of tensors, batch 32
    loss = module(*x).float().mean()

The module behaves like hand-written PyTorch code: layers run in order, each
intermediate is released after its last use (last-use indices are computed
when the graph is built; nothing is kept in a dict for the whole forward).

compat="2x" (default) makes the few places where torch 1.13 differs from
PyTorch 2.x on CUDA behave like 2.x, in plain torch code:
  * Dropout (training, 0<p<1, not in place) is a replica of CUDA's fused
    native_dropout: it keeps a bool mask (1 byte/element) instead of 1.13 CPU's
    float noise tensor (4 bytes/element).  Same in MultiheadAttention,
    Transformer*Layer and ScaledDotProductAttention.
  * MultiheadAttention is a port of 2.x F.multi_head_attention_forward
    (packed [3, L, N, E] in-projection copy, need_weights=False -> SDPA).
  * ScaledDotProductAttention (absent in 1.13) is a port of 2.x
    _scaled_dot_product_attention_math (vramcalc --attention math).
  * TransformerEncoderLayer/TransformerDecoderLayer run 2.x's training forward
    (also with bias=False, which 1.13 lacks).
  * Inference fast paths: where 2.x's "why not fast path" checks pass (eval, no
    grad, self-attention, even heads, biases, no autocast), MultiheadAttention
    runs CUDA's _native_multi_head_attention and TransformerEncoderLayer
    transformer_encoder_layer_forward, op for op from the CUDA source.
  * The math SDPA's _safe_softmax follows TORCH_RELEASE (2.5: a separate
    `where` result; 2.6+: where_out into the softmax output).
  * RMSNorm (absent in 1.13) replicates 2.x's _fused_rms_norm: one operator
    that keeps input, weight and rstd.
compat="stock" uses torch 1.13's own modules wherever they exist.

Replicas of a single 2.x operator written as several 1.13 operators run inside
HOOKS.fused(name): a measuring harness may treat the region as one operator.
HOOKS.layer(path) is called before each layer runs (for per-op logs); HOOKS.read(what)
asks the harness for a reading where no operator ends (checkpoint's early stop).
"""

import contextlib
import inspect
import math
import re
import weakref

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint as _checkpoint

__all__ = ["build", "HOOKS", "ModelError", "TORCH_RELEASE", "set_torch_release"]

# The PyTorch 2.x release whose behaviour compat="2x" replicates where releases
# differ (vramcalc --torch): (major, minor).  2.15 is the current stable one.
TORCH_RELEASE = (2, 15)
# torch.backends.mha.get_fastpath_enabled(): True unless a harness turns it off
# for diagnosis (measure.py --mha-fastpath off).
FASTPATH = True


def set_torch_release(text):
    """'2.5' -> TORCH_RELEASE = (2, 5); ValueError outside 2.0 .. 2.15."""
    global TORCH_RELEASE
    m = re.fullmatch(r"2\.(0|[1-9][0-9]?)", text or "")
    if not m or int(m.group(1)) > 15:
        raise ValueError("unsupported PyTorch release %r (2.0 to 2.15)" % (text,))
    TORCH_RELEASE = (2, int(m.group(1)))


class ModelError(ValueError):
    """A model file that does not follow SPEC.md section 1."""


class _Hooks:
    def __init__(self):
        self.fused = lambda name: contextlib.nullcontext()
        self.layer = None
        self.read = lambda what: None  # a measuring harness: take a reading now


HOOKS = _Hooks()

# --------------------------------------------------------------------------
# PyTorch 2.x operator replicas
# --------------------------------------------------------------------------


class _NativeDropout(torch.autograd.Function):
    """2.x CUDA native_dropout: y and a bool mask; saves the mask only;
    backward native_dropout_backward(grad, mask, scale): one tensor."""

    @staticmethod
    def forward(ctx, x, p):
        scale = 1.0 / (1.0 - p)
        with HOOKS.fused("native_dropout"):
            mask = torch.empty_like(x, dtype=torch.bool).bernoulli_(1.0 - p)
            y = x.mul(mask)
            y.mul_(scale)
        ctx.save_for_backward(mask)
        ctx.scale = scale
        return y

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        with HOOKS.fused("native_dropout_backward"):
            g = grad.mul(mask)
            g.mul_(ctx.scale)
        return g, None


def dropout2x(x, p, training=True, inplace=False):
    """F.dropout as PyTorch 2.x runs it on CUDA."""
    if inplace or not training or p == 0.0 or p == 1.0 or x.numel() == 0:
        # p == 0 / eval: returns the input itself (1.13 and 2.x alike);
        # in place and p == 1 take the non-fused path in 2.x too.
        return F.dropout(x, p, training, inplace)
    return _NativeDropout.apply(x, p)


def _should_fold_2x(t1, t2):
    """2.x should_fold (LinearAlgebra.cpp) for t1 N-D (N >= 3) x t2 2-D: fold the batch
    into rows (a copy when t1's leading dims are not viewable) when t2 requires grad,
    or when folding copies nothing; else bmm against an expanded t2.  torch 1.13
    always folds."""
    if t2.requires_grad:
        return True
    if t1.numel() == 0:
        return True
    for i in range(t1.dim() - 2):
        if t1.stride(i) != t1.stride(i + 1) * t1.size(i + 1):
            return False
    return True


def matmul2x(t1, t2):
    """torch.matmul as 2.x runs it (differs from 1.13 only for N-D x 2-D without fold)."""
    if t1.dim() >= 3 and t2.dim() == 2 and not _should_fold_2x(t1, t2):
        batch = tuple(t1.shape[:-2])
        n, m = t1.shape[-2], t1.shape[-1]
        p = t2.shape[-1]
        nb = 1
        for d in batch:
            nb *= d
        a = t1.reshape(nb, n, m)
        b = t2.expand(nb, m, p)
        return torch.bmm(a, b).view(*batch, n, p)
    return torch.matmul(t1, t2)


def linear2x(x, weight, bias=None):
    """at::linear as 2.x runs it (Linear.cpp): addmm for 2-D input with bias;
    _flatten_nd_linear for contiguous N-D input with a 1-D bias; else matmul and an
    in-place bias add."""
    if x.dim() == 2 and bias is not None:
        return torch.addmm(bias, x, weight.t())
    if bias is not None and x.dim() >= 3 and x.is_contiguous() and bias.dim() == 1:
        out = torch.addmm(bias, x.reshape(-1, x.shape[-1]), weight.t())
        return out.view(*x.shape[:-1], out.shape[-1])
    out = matmul2x(x, weight.t())
    if bias is not None:
        out.add_(bias)
    return out


class _Linear2x(nn.Linear):
    def forward(self, x):
        return linear2x(x, self.weight, self.bias)


class _SafeSoftmax(torch.autograd.Function):
    """The math SDPA backend's softmax (attention.cpp), by TORCH_RELEASE:
      2.5: at::_safe_softmax: out = softmax(self, dim); neg_inf = scalar_tensor(-inf)
        (a device tensor); masked = self.eq(neg_inf); masked_rows = all(masked, dim,
        keepdim=True); zero = scalar_tensor(0.0); return at::where(masked_rows, zero, out)
        -- a new result while out and the masks are alive;
      2.6 and later: the same, but `return at::where_out(out, masked_rows, zero, out)`
        (PyTorch PR #139613): the rows are zeroed inside out, no new tensor.  Replicated
        with out.masked_fill_(masked_rows, 0), which allocates nothing either;
      before 2.5: at::softmax only.
    CompositeExplicitAutograd: derivatives.yaml saves `result` only and its backward
    is _softmax_backward_data(grad, result, dim).  The ops run one by one here, so the
    harness reads the total after each, as CUDA's allocator counts them."""

    @staticmethod
    def forward(ctx, x, dim):
        out = torch.softmax(x, dim)
        if TORCH_RELEASE >= (2, 5):
            neg_inf = torch.full((), float("-inf"), dtype=out.dtype, device=out.device)
            masked = x.eq(neg_inf)
            masked_rows = masked.all(dim, keepdim=True)
            zero = torch.full((), 0.0, dtype=out.dtype, device=out.device)
            if TORCH_RELEASE == (2, 5):
                res = torch.where(masked_rows, zero, out)
            else:
                res = out.masked_fill_(masked_rows, 0.0)
            del neg_inf, masked, masked_rows, zero
        else:
            res = out
        del out
        ctx.save_for_backward(res)
        ctx.dim = dim
        return res

    @staticmethod
    def backward(ctx, grad):
        (res,) = ctx.saved_tensors
        return torch._softmax_backward_data(grad, res, ctx.dim, res.dtype), None


def _sdpa_math_2x(query_, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                  scale=None, dropout=dropout2x, enable_gqa=False):
    """Port of ATen _scaled_dot_product_attention_math (PyTorch 2.x,
    aten/src/ATen/native/transformers/attention.cpp), with 2.5+'s
    at::_safe_softmax (_SafeSoftmax: its temporaries are read one op at a time,
    as CUDA's max_memory_allocated sees them) and enable_gqa (2.5+): after the
    fp32 copies and the causal mask, pre_process_group_query_attention_input
    repeats key_acc / value_acc to the query's heads (repeat_interleave on dim -3);
    the repeats are C++ locals, alive until the function returns."""
    origin = query_.dtype
    low = origin in (torch.float16, torch.bfloat16)
    query_acc = query_.to(torch.float32) if low else query_
    key_acc = key.to(torch.float32) if key.dtype in (torch.float16, torch.bfloat16) else key
    value_acc = value.to(torch.float32) if value.dtype in (torch.float16, torch.bfloat16) else value
    s = scale if scale is not None else 1.0 / math.sqrt(query_acc.size(-1))
    scaling_factor = math.sqrt(abs(s))
    query = query_acc * (-scaling_factor if s < 0 else scaling_factor)
    if is_causal:
        if attn_mask is not None:
            raise ModelError("ScaledDotProductAttention: attn_mask with is_causal")
        L, S = query.size(-2), key_acc.size(-2)
        m = torch.ones(L, S, dtype=torch.bool).tril()
        # convert_boolean_attn_mask: where(!mask, -inf, 0)
        attn_mask = torch.where(m.logical_not(), torch.tensor(float("-inf"), dtype=query.dtype),
                                torch.tensor(0.0, dtype=query.dtype))
        del m
    key_expanded, value_expanded = key_acc, value_acc
    if enable_gqa and key_acc.size(-3) != query.size(-3):
        key_expanded = key_acc.repeat_interleave(query.size(-3) // key_acc.size(-3), -3)
        value_expanded = value_acc.repeat_interleave(query.size(-3) // value_acc.size(-3), -3)
    attn = torch.matmul(query, key_expanded.transpose(-2, -1) * scaling_factor)
    if attn_mask is not None:
        attn.add_(attn_mask)
    attn = _SafeSoftmax.apply(attn, -1)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, True)
    # return std::make_tuple(at::matmul(attn, value_acc).to(origin_dtype), attn.to(origin_dtype)):
    # the temporaries of a C++ full-expression live until it ends ([class.temporary]), so the
    # fp32 matmul result stays alive while its cast and the discarded second output are made
    mm = torch.matmul(attn, value_expanded)
    out = mm.to(origin)
    second = attn.to(origin)  # the discarded second output (a copy for 16-bit)
    del second, mm
    return out


def _sdpa_stock(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    return _sdpa_math_2x(q, k, v, attn_mask, dropout_p, is_causal, scale,
                         dropout=lambda x, p, t: F.dropout(x, p, t))


def _in_projection_packed_2x(q, k, v, w, b=None):
    E = q.size(-1)
    if k is v:
        if q is k:
            proj = linear2x(q, w, b)
            proj = proj.unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
            return proj[0], proj[1], proj[2]
        w_q, w_kv = w.split([E, E * 2])
        if b is None:
            b_q = b_kv = None
        else:
            b_q, b_kv = b.split([E, E * 2])
        q_proj = linear2x(q, w_q, b_q)
        kv_proj = linear2x(k, w_kv, b_kv)
        kv_proj = kv_proj.unflatten(-1, (2, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
        return q_proj, kv_proj[0], kv_proj[1]
    w_q, w_k, w_v = w.chunk(3)
    if b is None:
        b_q = b_k = b_v = None
    else:
        b_q, b_k, b_v = b.chunk(3)
    return linear2x(q, w_q, b_q), linear2x(k, w_k, b_k), linear2x(v, w_v, b_v)


def _mha_forward_2x(query, key, value, num_heads, in_proj_weight, in_proj_bias, bias_k, bias_v,
                    add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training=True,
                    need_weights=True, use_separate_proj_weight=False, q_proj_weight=None,
                    k_proj_weight=None, v_proj_weight=None, average_attn_weights=True,
                    dropout=dropout2x):
    """Port of PyTorch 2.x F.multi_head_attention_forward for batched input
    without masks (torch/nn/functional.py).  Like the original it deletes no
    local: q, k, v (views of the packed projection) and q_scaled stay referenced
    until the function returns, which matters under no_grad (inference)."""
    tgt_len, bsz, embed_dim = query.shape
    head_dim = embed_dim // num_heads
    if not use_separate_proj_weight:
        q, k, v = _in_projection_packed_2x(query, key, value, in_proj_weight, in_proj_bias)
    else:
        if in_proj_bias is None:
            b_q = b_k = b_v = None
        else:
            b_q, b_k, b_v = in_proj_bias.chunk(3)
        q, k, v = (linear2x(query, q_proj_weight, b_q), linear2x(key, k_proj_weight, b_k),
                   linear2x(value, v_proj_weight, b_v))
    if bias_k is not None and bias_v is not None:
        k = torch.cat([k, bias_k.repeat(1, bsz, 1)])
        v = torch.cat([v, bias_v.repeat(1, bsz, 1)])
    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.view(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    v = v.view(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if add_zero_attn:
        zero_attn_shape = (bsz * num_heads, 1, head_dim)
        k = torch.cat([k, torch.zeros(zero_attn_shape, dtype=k.dtype, device=k.device)], dim=1)
        v = torch.cat([v, torch.zeros(zero_attn_shape, dtype=v.dtype, device=v.device)], dim=1)
    src_len = k.size(1)
    if not training:
        dropout_p = 0.0
    if need_weights:
        _B, _Nt, E = q.shape
        q_scaled = q * math.sqrt(1.0 / float(E))
        attn_output_weights = torch.bmm(q_scaled, k.transpose(-2, -1))
        attn_output_weights = torch.softmax(attn_output_weights, dim=-1)
        if dropout_p > 0.0:
            attn_output_weights = dropout(attn_output_weights, dropout_p, True)
        attn_output = torch.bmm(attn_output_weights, v)
        attn_output = attn_output.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        attn_output = linear2x(attn_output, out_proj_weight, out_proj_bias)
        attn_output = attn_output.view(tgt_len, bsz, attn_output.size(1))
        attn_output_weights = attn_output_weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            attn_output_weights = attn_output_weights.mean(dim=1)
        return attn_output, attn_output_weights
    q = q.view(bsz, num_heads, tgt_len, head_dim)
    k = k.view(bsz, num_heads, src_len, head_dim)
    v = v.view(bsz, num_heads, src_len, head_dim)
    attn_output = _sdpa_math_2x(q, k, v, None, dropout_p, False, dropout=dropout)
    attn_output = attn_output.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    attn_output = linear2x(attn_output, out_proj_weight, out_proj_bias)
    attn_output = attn_output.view(tgt_len, bsz, attn_output.size(1))
    return attn_output, None


def _mha_why_not_fast_path(m, query, key, value):
    """torch/nn/modules/activation.py MultiheadAttention.forward (2.x): the checks that
    send it to F.multi_head_attention_forward instead of torch._native_multi_head_attention,
    in their order; "" when the fast path runs.  (Fast path disabled, unbatched or
    nested input, torch functions, make_fx and devices cannot occur here; batch_first
    is always True.)  The native op is called only when in_proj_bias is not None."""
    if not FASTPATH:
        return "torch.backends.mha.get_fastpath_enabled() was not True"
    if query is not key or key is not value:
        return "non-self attention was used (query, key, and value are not the same Tensor)"
    if m.in_proj_bias is not None and query.dtype != m.in_proj_bias.dtype:
        return "dtypes of query and self.in_proj_bias don't match"
    if m.in_proj_weight is None:
        return "in_proj_weight was None"
    if query.dtype != m.in_proj_weight.dtype:
        return "dtypes of query and self.in_proj_weight don't match"
    if m.training:
        return "training is enabled"
    if m.num_heads % 2 != 0:
        return "self.num_heads is not even"
    if m.bias_k is not None or m.bias_v is not None:
        return "self.bias_k was not None"
    if m.add_zero_attn:
        return "add_zero_attn was enabled"
    if not m._qkv_same_embed_dim:
        return "_qkv_same_embed_dim was not True"
    if torch.is_autocast_enabled():
        return "autocast is enabled"
    args = (query, m.in_proj_weight, m.in_proj_bias, m.out_proj.weight, m.out_proj.bias)
    if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in args):
        return "grad is enabled and at least one of query or the input/output projection weights or biases requires_grad"
    if m.in_proj_bias is None:
        return "in_proj_bias is None (the native op is not called)"
    return ""


def _native_mha_cuda_2x(query, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias,
                        need_weights, average_attn_weights):
    """torch._native_multi_head_attention as CUDA runs it, self-attention without a
    mask (native_multi_head_attention_cuda, aten/src/ATen/native/transformers/cuda/
    attention.cu; helpers in transformers/attention.cpp), written from the source:
    1.13 has the op, but on the CPU it is one aten call whose internals the per-op
    reading cannot see, and its CPU kernel is not CUDA's.  The SDPA-backed branch
    (`dim_per_head % 8 == 0 && !need_weights` and select_sdp_backend giving flash or
    efficient) needs a fused CUDA kernel: the CPU harness measures the math setting
    (vramcalc --attention math), where select_sdp_backend gives math and the explicit
    branch below runs."""
    B, T, D = query.shape
    dh = D // num_heads
    # qkv_projection: gemm_nt(query, qkv_weight) = at::native::matmul(query, w.t()), no bias
    qkv = torch.matmul(query, qkv_weight.t())
    # _transform_bias_rescale_qkv -> transform_bias_rescale_qkv_cuda:
    # q_k_v = at::empty({3, B, num_head, T, dim_per_head}), filled by one kernel
    # (q = (q + bq) / sqrt(dh), k + bk, v + bv); one operator
    with HOOKS.fused("_transform_bias_rescale_qkv"):
        q_k_v = torch.empty((3, B, num_heads, T, dh), dtype=qkv.dtype, device=qkv.device)
        q_k_v.copy_((qkv + qkv_bias).view(B, T, 3, num_heads, dh).permute(2, 0, 3, 1, 4))
        q_k_v[0].mul_(1.0 / math.sqrt(dh))
    del qkv  # `qkv = Tensor(); // Not used any more, allow free`
    q, k, v = (q_k_v[i].view(B * num_heads, T, dh) for i in range(3))
    # qkt = bmm_nt(q, k): [B, num_head, T, T]
    qkt = torch.bmm(q, k.transpose(1, 2))
    # masked_softmax without a mask: at::_softmax_out(attn_scores, attn_scores, dim)
    torch.ops.aten._softmax.out(qkt, -1, False, out=qkt)
    # attn_ctx = bmm_nn(q, qkt, v): at::bmm_out(q, qkt, v), "reuse storage for q"
    torch.bmm(qkt, v, out=q)
    if not need_weights:
        del qkt  # `qkt = Tensor();`
        qkt = None
    # transform0213_gemm_nt_bias: transform_0213 (at::empty({B, T, H, dh}) + kernel),
    # then at::native::linear on the [B*T, D] view (addmm)
    a = q.view(B, num_heads, T, dh).permute(0, 2, 1, 3).contiguous()
    proj = torch.addmm(proj_bias, a.view(B * T, D), proj_weight.t()).view(B, T, D)
    del a
    if need_weights and average_attn_weights:
        qkt = qkt.view(B, num_heads, T, T).sum(1)  # qkt = qkt.sum(1)
        qkt /= num_heads
    del q, k, v, q_k_v  # std::tuple locals: alive until the function returns
    return proj, qkt


class _MHA2x(nn.MultiheadAttention):
    """nn.MultiheadAttention (same parameters) running 2.x's training forward,
    batch_first; returns the attention output only."""

    need_weights = True
    average_attn_weights = True

    def forward(self, query, key=None, value=None, need_weights=None):
        if key is None:
            key = value = query
        if need_weights is None:
            need_weights = self.need_weights
        self.why_not_fast_path = _mha_why_not_fast_path(self, query, key, value)
        if not self.why_not_fast_path:
            out, w = _native_mha_cuda_2x(query, self.num_heads, self.in_proj_weight, self.in_proj_bias,
                                         self.out_proj.weight, self.out_proj.bias, need_weights,
                                         self.average_attn_weights)
            del w  # returned as the second output and dropped by the caller
            return out
        if key is value:
            if query is key:
                query = key = value = query.transpose(1, 0)
            else:
                query, key = (x.transpose(1, 0) for x in (query, key))
                value = key
        else:
            query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        common = dict(training=self.training, need_weights=need_weights,
                      average_attn_weights=self.average_attn_weights)
        if not self._qkv_same_embed_dim:
            out, w = _mha_forward_2x(
                query, key, value, self.num_heads, self.in_proj_weight, self.in_proj_bias,
                self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
                self.out_proj.weight, self.out_proj.bias, use_separate_proj_weight=True,
                q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight,
                v_proj_weight=self.v_proj_weight, **common)
        else:
            out, w = _mha_forward_2x(
                query, key, value, self.num_heads, self.in_proj_weight, self.in_proj_bias,
                self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
                self.out_proj.weight, self.out_proj.bias, **common)
        del w
        return out.transpose(1, 0)


class _MHAStock(nn.MultiheadAttention):
    need_weights = True
    average_attn_weights = True

    def forward(self, query, key=None, value=None, need_weights=None):
        if key is None:
            key = value = query
        if need_weights is None:
            need_weights = self.need_weights
        return super().forward(query, key, value, need_weights=need_weights,
                               average_attn_weights=self.average_attn_weights)[0]


class _LayerNorm16(torch.autograd.Function):
    """native_layer_norm on fp16/bf16 input as 2.x CUDA runs it: mean and rstd are
    kept in fp32 (the accumulate type; torch 1.13's CPU kernel keeps them in the
    input dtype).  One operator each way (fused regions); the backward hands 1.13's
    kernel the statistics in the dtype it expects, inside the region."""

    @staticmethod
    def forward(ctx, x, weight, bias, shape, eps):
        with HOOKS.fused("native_layer_norm"):
            y, mean, rstd = torch.native_layer_norm(x, shape, weight, bias, eps)
            mean32, rstd32 = mean.float(), rstd.float()
            del mean, rstd
        ctx.save_for_backward(x, weight, bias, mean32, rstd32)
        ctx.shape = shape
        return y

    @staticmethod
    def backward(ctx, grad):
        x, weight, bias, mean32, rstd32 = ctx.saved_tensors
        mask = [ctx.needs_input_grad[0], weight is not None and ctx.needs_input_grad[1],
                bias is not None and ctx.needs_input_grad[2]]
        with HOOKS.fused("native_layer_norm_backward"):
            gx, gw, gb = torch.ops.aten.native_layer_norm_backward(
                grad, x, list(ctx.shape), mean32.to(x.dtype), rstd32.to(x.dtype), weight, bias, mask)
        return gx, gw, gb, None, None


class _LayerNorm2x(nn.LayerNorm):
    """nn.LayerNorm; 16-bit input keeps fp32 statistics as on CUDA (_LayerNorm16)."""

    def forward(self, x):
        # native_layer_norm: X = input.expect_contiguous() in forward and in backward
        if x.dtype in (torch.float16, torch.bfloat16):
            return _conv_contig_probe(lambda: _LayerNorm16.apply(
                x, self.weight, self.bias, tuple(self.normalized_shape), self.eps), x)
        return _conv_contig_probe(lambda: super(_LayerNorm2x, self).forward(x), x)


class _LayerNorm1P(nn.LayerNorm):
    """LayerNorm one_plus (NemotronLayerNorm1P.forward, modeling_nemotron.py @ 0233e509): F.layer_norm with
    self.weight + 1, a fresh tensor native_layer_norm keeps; otherwise _LayerNorm2x's path."""

    def forward(self, x):
        weight = self.weight + 1
        if x.dtype in (torch.float16, torch.bfloat16):
            return _conv_contig_probe(lambda: _LayerNorm16.apply(
                x, weight, self.bias, tuple(self.normalized_shape), self.eps), x)
        return _conv_contig_probe(lambda: F.layer_norm(x, self.normalized_shape, weight, self.bias, self.eps), x)


def _act(name):
    if callable(name):
        return name
    if name == "relu":
        return F.relu
    if name == "gelu":
        return F.gelu
    raise ModelError("activation must be 'relu' or 'gelu', not %r" % (name,))


def _drop_biases(mods):
    for m in mods:
        if getattr(m, "bias", None) is not None:
            m.bias = None


class _EncoderLayer2x(nn.TransformerEncoderLayer):
    """2.x TransformerEncoderLayer training forward (torch/nn/modules/transformer.py)."""

    def _setup(self, d_model, nhead, dropout, bias):
        self.self_attn = _MHA2x(d_model, nhead, dropout=dropout, bias=bias, batch_first=True)
        if not bias:
            _drop_biases([self.linear1, self.linear2, self.norm1, self.norm2])
        for n in (self.norm1, self.norm2):
            n.__class__ = _LayerNorm2x
        self._act = _act(self._act_name)

    def _why_not_fast_path(self, src):
        """torch/nn/modules/transformer.py TransformerEncoderLayer.forward (2.x): the
        checks before torch._transformer_encoder_layer_fwd, in order ("" = fast path).
        batch_first, same kdim/vdim, relu/gelu and equal norm eps always hold here."""
        sa = self.self_attn
        if not FASTPATH:
            return "torch.backends.mha.get_fastpath_enabled() was not True"
        if self.training:
            return "training is enabled"
        if sa.in_proj_bias is None:
            return "self_attn was passed bias=False"
        if sa.num_heads % 2 == 1:
            return "num_head is odd"
        if torch.is_autocast_enabled():
            return "autocast is enabled"
        args = [src] + [p for p in self.parameters()]
        if torch.is_grad_enabled() and any(t.requires_grad for t in args):
            return ("grad is enabled and at least one of query or the input/output projection "
                    "weights or biases requires_grad")
        return ""

    def _fast_path(self, src):
        """transformer_encoder_layer_forward (aten/src/ATen/native/transformers/
        transformer.cpp) with CUDA's _native_multi_head_attention (need_weights=false)."""
        sa = self.self_attn
        x = self.norm1(src) if self.norm_first else src
        x, _ = _native_mha_cuda_2x(x, sa.num_heads, sa.in_proj_weight, sa.in_proj_bias,
                                   sa.out_proj.weight, sa.out_proj.bias, False, True)
        x.add_(src)
        if not self.norm_first:
            x = self.norm1(x)
        pre_ffn_res = x
        if self.norm_first:
            x = self.norm2(x)
        # ffn: linear_for_ffn = at::_addmm_activation(b1, x_2d, w1.t(), use_gelu), then at::addmm
        B, T, D = x.shape
        h = torch._addmm_activation(self.linear1.bias, x.reshape(B * T, D), self.linear1.weight.t(),
                                    use_gelu=self._act is F.gelu)
        x = torch.addmm(self.linear2.bias, h, self.linear2.weight.t()).view(B, T, D)
        del h
        x.add_(pre_ffn_res)
        if not self.norm_first:
            x = self.norm2(x)
        del pre_ffn_res  # a C++ local: alive until the function returns
        return x

    def forward(self, src):
        self.why_not_fast_path = self._why_not_fast_path(src)
        if not self.why_not_fast_path:
            return self._fast_path(src)
        x = src
        if self.norm_first:
            x = x + self._sa(self.norm1(x))
            x = x + self._ff(self.norm2(x))
        else:
            x = self.norm1(x + self._sa(x))
            x = self.norm2(x + self._ff(x))
        return x

    def _sa(self, x):
        x = self.self_attn(x, x, x, need_weights=False)
        return dropout2x(x, self.dropout1.p, self.training)

    def _ff(self, x):
        x = self.linear2(dropout2x(self._act(self.linear1(x)), self.dropout.p, self.training))
        return dropout2x(x, self.dropout2.p, self.training)


class _DecoderLayer2x(nn.TransformerDecoderLayer):
    """2.x TransformerDecoderLayer training forward; inputs [tgt, memory]."""

    def _setup(self, d_model, nhead, dropout, bias):
        self.self_attn = _MHA2x(d_model, nhead, dropout=dropout, bias=bias, batch_first=True)
        self.multihead_attn = _MHA2x(d_model, nhead, dropout=dropout, bias=bias, batch_first=True)
        if not bias:
            _drop_biases([self.linear1, self.linear2, self.norm1, self.norm2, self.norm3])
        for n in (self.norm1, self.norm2, self.norm3):
            n.__class__ = _LayerNorm2x
        self._act = _act(self._act_name)

    def forward(self, tgt, memory):
        x = tgt
        if self.norm_first:
            x = x + self._sa(self.norm1(x))
            x = x + self._mha(self.norm2(x), memory)
            x = x + self._ff(self.norm3(x))
        else:
            x = self.norm1(x + self._sa(x))
            x = self.norm2(x + self._mha(x, memory))
            x = self.norm3(x + self._ff(x))
        return x

    def _sa(self, x):
        x = self.self_attn(x, x, x, need_weights=False)
        return dropout2x(x, self.dropout1.p, self.training)

    def _mha(self, x, mem):
        x = self.multihead_attn(x, mem, mem, need_weights=False)
        return dropout2x(x, self.dropout2.p, self.training)

    def _ff(self, x):
        x = self.linear2(dropout2x(self._act(self.linear1(x)), self.dropout.p, self.training))
        return dropout2x(x, self.dropout3.p, self.training)


class _EncoderLayerStock(nn.TransformerEncoderLayer):
    def forward(self, src):
        return super().forward(src)


class _DecoderLayerStock(nn.TransformerDecoderLayer):
    def forward(self, tgt, memory):
        return super().forward(tgt, memory)


class _FusedRMSNorm(torch.autograd.Function):
    """2.x _fused_rms_norm / _fused_rms_norm_backward: keeps input, weight and
    rstd (stat-shaped, fp32 for 16-bit input); temporaries are inside the op."""

    @staticmethod
    def forward(ctx, x, weight, ndim, eps):
        dims = tuple(range(-ndim, 0))
        with HOOKS.fused("_fused_rms_norm"):
            xf = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
            sq = xf.pow(2)
            ms = sq.mean(dims, keepdim=True)
            del sq
            rstd = torch.rsqrt(ms.add_(eps))
            del ms
            y = xf * rstd
            if weight is not None:
                y.mul_(weight)
            y = y.to(x.dtype)
            del xf
        ctx.save_for_backward(x, weight, rstd) if weight is not None else ctx.save_for_backward(x, rstd)
        ctx.has_w = weight is not None
        ctx.dims = dims
        return y

    @staticmethod
    def backward(ctx, grad):
        if ctx.has_w:
            x, weight, rstd = ctx.saved_tensors
        else:
            (x, rstd), weight = ctx.saved_tensors, None
        dims = ctx.dims
        gw = None
        with HOOKS.fused("_fused_rms_norm_backward"):
            xf = x.float() if x.dtype != torch.float32 else x
            gf = grad.float() if grad.dtype != torch.float32 else grad
            xhat = xf * rstd
            if weight is not None and ctx.needs_input_grad[1]:
                lead = tuple(range(x.dim() - len(dims)))
                gw = (gf * xhat).sum(lead).to(weight.dtype)
            gxh = gf * weight if weight is not None else gf
            dot = (gxh * xhat).mean(dims, keepdim=True)
            gx = (gxh - xhat * dot).mul_(rstd).to(x.dtype)
            del xf, gf, xhat, gxh, dot
        return gx, gw, None, None


class RMSNorm(nn.Module):
    """nn.RMSNorm (PyTorch >= 2.4) for torch 1.13."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = nn.Parameter(torch.ones(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.fused = True

    def forward(self, x):
        eps = self.eps if self.eps is not None else torch.finfo(x.dtype).eps
        if self.fused and (self.weight is None or self.weight.dtype == x.dtype):
            return _FusedRMSNorm.apply(x, self.weight, len(self.normalized_shape), eps)
        # rms_norm_composite (2.x layer_norm.cpp)
        dims = tuple(range(-len(self.normalized_shape), 0))
        up = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
        rstd = torch.rsqrt(up.pow(2).mean(dims, keepdim=True).add_(eps))
        r = up.mul(rstd)
        if self.weight is not None:
            r = r.mul(self.weight)
        return r.contiguous().type_as(x)


# --------------------------------------------------------------------------
# Small modules for the graph's tensor ops
# --------------------------------------------------------------------------


class _Dropout2x(nn.Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        self.p, self.inplace = p, inplace

    def forward(self, x):
        return dropout2x(x, self.p, self.training, self.inplace)


class _First(nn.Module):
    """Multi-output module -> its first output (RNN/LSTM/GRU, return_indices)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        y = self.inner(x)
        return y[0] if isinstance(y, (tuple, list)) else y


class _Add(nn.Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, a, *rest):
        if self.inplace:
            for b in rest:
                a += b
            return a
        for b in rest:
            a = a + b
        return a


class _Mul(nn.Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, a, *rest):
        if self.inplace:
            for b in rest:
                a *= b
            return a
        for b in rest:
            a = a * b
        return a


class _Cat(nn.Module):
    def __init__(self, dim=1):
        super().__init__()
        self.dim = dim

    def forward(self, *xs):
        return torch.cat(xs, self.dim)


class _Reshape(nn.Module):
    def __init__(self, shape):
        super().__init__()
        self.shape = tuple(shape)

    def forward(self, x):
        return x.reshape(x.shape[0], *self.shape)


class _Permute(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.dims = tuple(dims)

    def forward(self, x):
        return x.permute(*self.dims)


class _Transpose(nn.Module):
    def __init__(self, dim0, dim1):
        super().__init__()
        self.dim0, self.dim1 = dim0, dim1

    def forward(self, x):
        return x.transpose(self.dim0, self.dim1)


class _Select(nn.Module):
    def __init__(self, dim, index):
        super().__init__()
        self.dim, self.index = dim, index

    def forward(self, x):
        return x.select(self.dim, self.index)


class _TopK(nn.Module):
    """torch.topk(x, k, dim, largest, sorted): the values or the int64 indices."""

    def __init__(self, k, dim=-1, largest=True, sorted=True, output="values"):
        super().__init__()
        self.k, self.dim, self.largest, self.sorted = k, dim, largest, sorted
        self.output = ("values", "indices").index(output)

    def forward(self, x):
        return torch.topk(x, self.k, self.dim, self.largest, self.sorted)[self.output]


class _Gather(nn.Module):
    """torch.gather(x, dim, index); `shape`: the index viewed as the exporter writes it
    (unsqueeze, then expand: views)."""

    def __init__(self, dim, shape=None):
        super().__init__()
        self.dim, self.shape = dim, shape

    def forward(self, x, idx):
        if self.shape is not None:
            while idx.dim() < len(self.shape) + 1:
                idx = idx.unsqueeze(-1)
            idx = idx.expand(idx.shape[0], *self.shape)
        return torch.gather(x, self.dim, idx)


class _Slice(nn.Module):
    def __init__(self, dim, start=None, end=None, step=1):
        super().__init__()
        self.dim, self.start, self.end, self.step = dim, start, end, step

    def forward(self, x):
        d = self.dim % x.dim()
        idx = (slice(None),) * d + (slice(self.start, self.end, self.step),)
        return x[idx]


class _Mean2x(torch.autograd.Function):
    """mean.dim as PyTorch 2.x's autograd records it.  2.x derivatives.yaml:
    `self: mean_backward(grad, self.sym_sizes(), dim, self.sym_numel(), keepdim)`,
    so MeanBackward1 keeps sizes and numel only; torch 1.13's MeanBackward1 keeps
    `self`, the whole input (it can hold an activation nobody else saves, e.g. the
    map AdaptiveAvgPool2d(1) reduces).  Backward as 2.x's mean_backward:
    sum_backward (unsqueeze + expand, views) then one division (a new tensor)."""

    @staticmethod
    def forward(ctx, x, dim, keepdim):
        dims = sorted(d % x.dim() for d in dim)
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        n = 1
        for d in dims:
            n *= x.shape[d]
        ctx.n = n
        return x.mean(dim=dims, keepdim=keepdim)

    @staticmethod
    def backward(ctx, g):
        if not ctx.keepdim:
            for d in ctx.dims:
                g = g.unsqueeze(d)
        return g.expand(ctx.shape) / ctx.n, None, None


def mean2x(x, dim, keepdim=False):
    """x.mean(dim, keepdim) with 2.x's saved tensors (none)."""
    if isinstance(dim, int):
        dim = [dim]
    return _Mean2x.apply(x, list(dim), keepdim)


class _Unfold2x(torch.autograd.Function):
    """F.unfold (aten::im2col) as PyTorch 2.x's autograd records it.  2.x derivatives.yaml
    (pytorch/pytorch tools/autograd/derivatives.yaml, read at its fork ROCm/pytorch 10b22ea5):
    `self: col2im_symint(grad, {self.sym_size(-2), self.sym_size(-1)}, kernel_size, dilation,
    padding, stride)`, and tools/autograd/load_derivatives.py replaces `{}.sym_size\\((-?\\w+)\\)`
    with a saved SymInt (self_sym_argsize_minus_2), so Im2ColBackward0 keeps two sizes; torch
    1.13's Im2ColBackward0 keeps `self`, the whole input (its `_saved_self`, checked on the
    harness's torch 1.13.0a0).  Backward as 2.x's: col2im (F.fold), a new tensor."""

    @staticmethod
    def forward(ctx, x, kernel_size, stride):
        ctx.hw, ctx.kernel_size, ctx.stride = tuple(x.shape[-2:]), kernel_size, stride
        return F.unfold(x, kernel_size=kernel_size, stride=stride)

    @staticmethod
    def backward(ctx, g):
        return F.fold(g, ctx.hw, kernel_size=ctx.kernel_size, stride=ctx.stride), None, None


def unfold2x(x, kernel_size, stride):
    """F.unfold(x, kernel_size, stride=stride) with 2.x's saved tensors (two sizes)."""
    return _Unfold2x.apply(x, kernel_size, stride)


class _Mean(nn.Module):
    def __init__(self, dim=None, keepdim=False, stock=False):
        super().__init__()
        self.dim, self.keepdim, self.stock = dim, keepdim, stock

    def forward(self, x):
        dim = self.dim
        if dim is None:
            dim = list(range(1, x.dim()))
        if self.stock:
            return x.mean(dim=dim, keepdim=self.keepdim)
        return mean2x(x, dim, self.keepdim)


class _AdaptiveAvgPool2x(nn.Module):
    """AdaptiveAvgPool{1,2,3}d: an output of all ones is input.mean(spatial dims,
    keepdim=True) in 1.13 and 2.x alike (AdaptiveAveragePooling*.cpp; the 1-d pool is
    the 2-d one on x.unsqueeze(-2)); mean2x keeps what 2.x's MeanBackward1 keeps.
    Other output sizes run the module itself."""

    def __init__(self, dims, output_size):
        super().__init__()
        self.pool = getattr(nn, "AdaptiveAvgPool%dd" % dims)(output_size)
        self.dims = dims
        osz = output_size if isinstance(output_size, (tuple, list)) else (output_size,) * dims
        self.global_ = all(o == 1 for o in osz)

    def forward(self, x):
        if not self.global_:
            return _conv_contig_probe(lambda: self.pool(x), x, backward=False)
        if self.dims == 1:
            return mean2x(x.unsqueeze(-2), [-1, -2], True).squeeze(-2)
        return mean2x(x, list(range(-self.dims, 0)), True)


class _Matmul(nn.Module):
    def __init__(self, stock=False):
        super().__init__()
        self.stock = stock

    def forward(self, a, b):
        return torch.matmul(a, b) if self.stock else matmul2x(a, b)


class _SDPA(nn.Module):
    def __init__(self, dropout_p=0.0, is_causal=False, scale=None, stock=False):
        super().__init__()
        self.dropout_p, self.is_causal, self.scale, self.stock = dropout_p, is_causal, scale, stock

    def forward(self, q, k, v):
        p = self.dropout_p if self.training else 0.0
        f = _sdpa_stock if self.stock else _sdpa_math_2x
        return f(q, k, v, None, p, self.is_causal, self.scale)


class _Param(nn.Module):
    """A learned per-sample tensor broadcast over the batch (class token, positional embedding)."""

    def __init__(self, shape):
        super().__init__()
        self.shape = tuple(shape)
        self.weight = nn.Parameter(torch.zeros(1, *self.shape).normal_(std=0.02))

    def forward(self):
        return self.weight.expand(_RUN.batch, *self.shape)


class _Run:
    batch = 1


_RUN = _Run()

# --------------------------------------------------------------------------
# Kind table
# --------------------------------------------------------------------------

_TUPLE_KEYS = {"kernel_size", "stride", "padding", "dilation", "output_padding", "output_size",
               "normalized_shape", "size", "scale_factor"}

# kind -> (factory(kwargs, compat) -> module, number of inputs (None: variadic), extra keys)
_KINDS = {}


def _kind(names, nin=1, extra=()):
    def deco(f):
        for n in names.split():
            _KINDS[n] = (f, nin, set(extra))
        return f
    return deco


def _ctor(cls):
    return lambda kw, compat: cls(**kw)


for _n in ("Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d Identity "
           "Flatten Embedding BatchNorm1d BatchNorm2d BatchNorm3d GroupNorm InstanceNorm1d "
           "InstanceNorm2d MaxPool1d MaxPool2d MaxPool3d AvgPool1d AvgPool2d AvgPool3d "
           "AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d ReLU ReLU6 LeakyReLU ELU GELU SiLU "
           "Mish Hardswish Hardsigmoid Sigmoid Tanh Softmax LogSoftmax Dropout2d Upsample "
           "PixelShuffle").split():
    _KINDS[_n] = (_ctor(getattr(nn, _n)), 1, set())
_KINDS["Linear"] = (lambda kw, c: _Linear2x(**kw) if c == "2x" else nn.Linear(**kw), 1, set())


class _Square(nn.Module):
    """Square: torch.square(x), the op ReLUSquaredActivation runs (layers/activation.c)."""

    def forward(self, x):
        return torch.square(x)


_KINDS["Square"] = (lambda kw, c: _Square(), 1, set())


class _XIELU(nn.Module):
    """XIELU: transformers' XIELUActivation (src/transformers/activations.py; Apertus' ACT2FN["xielu"]): __init__'s
    bfloat16 alpha_p / alpha_n Parameters of shape [1] and beta / eps 0-dim buffers, and its Python path
    _xielu_python (layers/activation.c XIELU)."""

    def __init__(self, alpha_p_init=0.8, alpha_n_init=0.8, beta=0.5, eps=-1e-6, dtype=torch.bfloat16):
        super().__init__()
        self.alpha_p = nn.Parameter(torch.log(torch.expm1(torch.tensor(alpha_p_init, dtype=dtype))).unsqueeze(0))
        self.alpha_n = nn.Parameter(
            torch.log(torch.expm1(torch.tensor(alpha_n_init - beta, dtype=dtype))).unsqueeze(0)
        )
        self.register_buffer("beta", torch.tensor(beta, dtype=dtype))
        self.register_buffer("eps", torch.tensor(eps, dtype=dtype))

    def forward(self, x):
        alpha_p = F.softplus(self.alpha_p)
        alpha_n = self.beta + F.softplus(self.alpha_n)
        return torch.where(
            x > 0,
            alpha_p * x * x + self.beta * x,
            (torch.expm1(torch.min(x, self.eps)) - x) * alpha_n + self.beta * x,
        )


_KINDS["XIELU"] = (lambda kw, c: _XIELU(), 1, set())


def _conv_contig_probe(run, x, backward=True):
    """A convolution on a non-contiguous input (a transposed embedding, ...).  2.x on
    CUDA: at::_convolution passes input.contiguous(backend_memory_format) to cuDNN and
    convolution_backward does the same, so an input-sized copy lives inside each
    operator, where max_memory_allocated counts it; this harness reads between
    operators and would miss it (1.13's CPU kernel copies internally too).  An empty
    tensor of the input's size stands in for the copy: allocated just before the
    operator and freed just after it, in forward and (tensor hook / node post-hook)
    in backward."""
    if x.is_contiguous():
        return run()
    tmp = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    y = run()
    del tmp
    if backward and y.requires_grad and y.grad_fn is not None:
        box = []
        shape, dtype, device = tuple(x.shape), x.dtype, x.device

        def pre(g):
            box.append(torch.empty(shape, dtype=dtype, device=device))

        def post(grad_inputs, grad_outputs):
            box.clear()
        y.register_hook(pre)
        y.grad_fn.register_hook(post)
    return y


def _conv2x_class(base):
    class _Conv2x(base):
        def forward(self, x, *args):
            return _conv_contig_probe(lambda: base.forward(self, x, *args), x)
    _Conv2x.__name__ = base.__name__
    return _Conv2x


for _n in ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"):
    _KINDS[_n] = ((lambda base, cls2x: lambda kw, c: cls2x(**kw) if c == "2x" else base(**kw))(
        getattr(nn, _n), _conv2x_class(getattr(nn, _n))), 1, set())


def _contig2x_class(base):
    """Ops whose CUDA kernel copies a non-contiguous input inside the operator
    (softmax/log_softmax: host_softmax's input.contiguous(); pooling and upsampling:
    input.contiguous()): the copy is counted as for a convolution (forward only)."""
    class _Contig2x(base):
        def forward(self, x, *args):
            return _conv_contig_probe(lambda: base.forward(self, x, *args), x, backward=False)
    _Contig2x.__name__ = base.__name__
    return _Contig2x


def _bn2x_class(base):
    """BatchNorm as 2.x CUDA runs it on a non-contiguous input: _batch_norm_impl_index
    hands cuDNN input.contiguous(suggest_memory_format) (a copy, saved for backward in
    training) when the cuDNN path applies (input of 3+ dims, affine, not bf16, fp16
    only with fp32 weights); the native kernel copies inside the operator instead."""
    class _BN2x(base):
        def forward(self, x):
            w = self.weight
            cudnn = (x.dim() >= 3 and w is not None and self.bias is not None and
                     x.dtype != torch.bfloat16 and w.dtype != torch.bfloat16 and
                     (x.dtype != torch.float16 or w.dtype == torch.float32) and
                     (self.track_running_stats or self.training))
            if x.is_contiguous():
                return base.forward(self, x)
            if cudnn:
                return base.forward(self, x.contiguous())
            return _conv_contig_probe(lambda: base.forward(self, x), x, backward=False)
    _BN2x.__name__ = base.__name__
    return _BN2x


for _n in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d"):
    _KINDS[_n] = ((lambda base, cls2x: lambda kw, c: cls2x(**kw) if c == "2x" else base(**kw))(
        getattr(nn, _n), _bn2x_class(getattr(nn, _n))), 1, set())

for _n in ("Softmax", "LogSoftmax", "AvgPool1d", "AvgPool2d", "AvgPool3d", "Upsample"):
    _KINDS[_n] = ((lambda base, cls2x: lambda kw, c: cls2x(**kw) if c == "2x" else base(**kw))(
        getattr(nn, _n), _contig2x_class(getattr(nn, _n))), 1, set())


class _MaxPoolIdx(nn.Module):
    """MaxPool as CUDA runs it: always max_pool*d_with_indices (the CPU kernel of
    1.13 skips the int64 indices for MaxPool1d when the input needs no grad)."""

    def __init__(self, dims, **kw):
        super().__init__()
        self.pool = getattr(nn, "MaxPool%dd" % dims)(**kw)
        self.fn = getattr(F, "max_pool%dd" % dims)

    def forward(self, x):
        p = self.pool
        if p.return_indices:
            return _conv_contig_probe(lambda: p(x)[0], x, backward=False)
        return _conv_contig_probe(lambda: self.fn(x, p.kernel_size, p.stride, p.padding, p.dilation,
                                                  ceil_mode=p.ceil_mode, return_indices=True)[0],
                                  x, backward=False)


for _n in ("MaxPool1d", "MaxPool2d", "MaxPool3d"):
    _KINDS[_n] = ((lambda d: lambda kw, c: _MaxPoolIdx(d, **kw) if c == "2x"
                   else _First(getattr(nn, "MaxPool%dd" % d)(**kw)))(int(_n[-2])), 1, set())
for _n in ("AdaptiveMaxPool1d", "AdaptiveMaxPool2d"):
    _KINDS[_n] = ((lambda cls: lambda kw, c: _First(cls(**kw)))(getattr(nn, _n)), 1, set())


@_kind("LayerNorm")
def _mk_layernorm(kw, compat):
    bias = kw.pop("bias", True)
    one_plus = kw.pop("one_plus", False)
    m = _LayerNorm1P(**kw) if one_plus else _LayerNorm2x(**kw) if compat == "2x" else nn.LayerNorm(**kw)
    if not bias and m.bias is not None:
        m.bias = None
    return m


@_kind("RMSNorm")
def _mk_rmsnorm(kw, compat):
    m = RMSNorm(**kw)
    m.fused = compat == "2x"
    return m


@_kind("Dropout")
def _mk_dropout(kw, compat):
    return _Dropout2x(**kw) if compat == "2x" else nn.Dropout(**kw)


@_kind("StochasticDepth")
def _mk_sd(kw, compat):
    from torchvision.ops import StochasticDepth
    return StochasticDepth(**kw)


class _FunctionalDropout2x:
    """torch.nn.functional with dropout replaced by dropout2x: what torchvision's
    shifted_window_attention finds as its module's `F` while a compat="2x" Swin attention
    runs (it calls F.dropout(attn, p=attention_dropout) and F.dropout(x, p=dropout))."""

    def __getattr__(self, name):
        return dropout2x if name == "dropout" else getattr(F, name)


def _swin_factory(cls_name):
    """torchvision's own module (torchvision/models/swin_transformer.py); its forward calls
    shifted_window_attention, which the kind replicates op by op.  compat="2x": its F.dropout
    calls (p > 0) run as 2.x's CUDA native_dropout (bool mask), as every other dropout here."""
    def f(kw, compat):
        from torchvision.models import swin_transformer as swin
        for k in ("window_size", "shift_size"):
            v = kw[k]
            kw[k] = list(v) if isinstance(v, (list, tuple)) else [v, v]
        m = getattr(swin, cls_name)(**kw)
        if compat == "2x" and (m.attention_dropout > 0 or m.dropout > 0):
            saved = []

            def pre(mod, args):
                saved.append(swin.F)
                swin.F = _FunctionalDropout2x()

            def post(mod, args, out):
                swin.F = saved.pop()
            m.register_forward_pre_hook(pre)
            m.register_forward_hook(post)
        return m
    return f


for _n in ("ShiftedWindowAttention", "ShiftedWindowAttentionV2"):
    _KINDS[_n] = (_swin_factory(_n), 1, set())


class _RelPosBias(nn.Module):
    """torchvision's MaxViT relative position bias (models/maxvit.py
    RelativePositionalMultiHeadAttention.get_relative_positional_bias, called on this module):
    the table and index of the attention module, [1, heads, N, N], no batch."""

    def __init__(self, num_heads, window_size):
        super().__init__()
        from torchvision.models import maxvit
        w = window_size
        self.size, self.max_seq_len = w, w * w
        self.relative_position_bias_table = nn.Parameter(torch.zeros((2 * w - 1) ** 2, num_heads).normal_(std=0.02))
        self.register_buffer("relative_position_index", maxvit._get_relative_position_index(w, w))
        self.get = maxvit.RelativePositionalMultiHeadAttention.get_relative_positional_bias

    def forward(self):
        return self.get(self)


_KINDS["RelativePositionBias"] = (lambda kw, c: _RelPosBias(**kw), 0, set())


def _three(v):
    return list(v) if isinstance(v, (list, tuple)) else [v, v, v]


def _mvit_2x(m, compat):
    """compat="2x": the Pool's submodules as every other module of this harness runs them
    (Conv3d and LayerNorm with the contiguous-input probe, MaxPool3d always with indices, as
    CUDA's max_pool3d_with_indices); parameters and their names unchanged."""
    if compat != "2x":
        return m
    from torchvision.models.video import mvit
    pools = [m] if isinstance(m, mvit.Pool) else [m.pool_q, m.pool_k, m.pool_v]
    for p in pools:
        if p is None:
            continue
        if isinstance(p.pool, nn.Conv3d):
            p.pool.__class__ = _conv2x_class(nn.Conv3d)
        elif isinstance(p.pool, nn.MaxPool3d):
            q = p.pool
            p.pool = _MaxPoolIdx(3, kernel_size=q.kernel_size, stride=q.stride, padding=q.padding)
        if p.norm_act is not None and isinstance(p.norm_act[0], nn.LayerNorm):
            p.norm_act[0].__class__ = _LayerNorm2x
    return m


def _mk_mvit_attention(kw, compat):
    """torchvision's MultiscaleAttention (torchvision/models/video/mvit.py, 0.14 as Debian ships
    it), called with the file's fixed thw: the kind replicates its forward op by op."""
    from functools import partial
    from torchvision.models.video import mvit
    thw = tuple(_three(kw.pop("thw")))
    eps = kw.pop("norm_eps", 1e-5)
    kw.setdefault("output_dim", kw["embed_dim"])
    for k in ("kernel_q", "kernel_kv", "stride_q", "stride_kv"):
        kw[k] = _three(kw.get(k, 1))
    kw.setdefault("residual_pool", False)
    kw.setdefault("residual_with_cls_embed", True)
    kw.setdefault("rel_pos_embed", False)

    class _MSA(mvit.MultiscaleAttention):
        def forward(self, x):
            return mvit.MultiscaleAttention.forward(self, x, thw)[0]
    m = _MSA(input_size=list(thw), norm_layer=partial(nn.LayerNorm, eps=eps), **kw)
    return _mvit_2x(m, compat)


def _mk_mvit_pool(kw, compat):
    """torchvision's Pool (torchvision/models/video/mvit.py) as MultiscaleBlock builds its
    pool_skip: Pool(nn.MaxPool3d(kernel, stride, padding), None), on [N, C] tokens with the
    class token first, called with the file's fixed thw."""
    from torchvision.models.video import mvit
    thw = tuple(_three(kw.pop("thw")))
    k, s = _three(kw["kernel_size"]), _three(kw.get("stride", kw["kernel_size"]))
    pad = _three(kw.get("padding", 0))

    class _Pool(mvit.Pool):
        def forward(self, x):
            return mvit.Pool.forward(self, x, thw)[0]
    m = _Pool(nn.MaxPool3d(k, stride=s, padding=pad), None)
    return _mvit_2x(m, compat)




def _mk_mvit_posenc(kw, compat):
    """torchvision's PositionalEncoding (torchvision/models/video/mvit.py), its parameters
    initialised as MViT.__init__ does (trunc_normal_, std 0.02)."""
    from torchvision.models.video import mvit
    m = mvit.PositionalEncoding(embed_size=kw.pop("embed_size"), spatial_size=tuple(kw["spatial_size"]),
                                temporal_size=kw["temporal_size"], rel_pos_embed=kw.get("rel_pos_embed", False))
    for w in m.parameters():
        nn.init.trunc_normal_(w, std=0.02)
    return m


_KINDS["MultiscaleAttention"] = (_mk_mvit_attention, 1, set())
_KINDS["MViTPool"] = (_mk_mvit_pool, 1, set())
_KINDS["MViTPositionalEncoding"] = (_mk_mvit_posenc, 1, set())


def _rnn_factory(cls):
    def f(kw, compat):
        if "batch_first" in kw:
            raise ModelError("batch_first is implied (sequence modules are always batch_first)")
        return _First(cls(batch_first=True, **kw))
    return f


for _n in ("RNN", "LSTM", "GRU"):
    _KINDS[_n] = (_rnn_factory(getattr(nn, _n)), 1, set())


def _mk_mha(kw, compat):
    if "batch_first" in kw:
        raise ModelError("batch_first is implied (sequence modules are always batch_first)")
    need = kw.pop("need_weights", True)
    avg = kw.pop("average_attn_weights", True)
    cls = _MHA2x if compat == "2x" else _MHAStock
    m = cls(batch_first=True, **kw)
    m.need_weights, m.average_attn_weights = bool(need), bool(avg)
    return m


_KINDS["MultiheadAttention"] = (_mk_mha, None, {"need_weights", "average_attn_weights"})


def _llm_kind(name):
    """The kinds of vramcalc's Hugging Face config reader (src/hf/hf.c, layers/llm.c) are
    not rebuilt here from their own semantics: a replica of the engine's reading would
    share its assumptions. Their truth is bench/accuracy/llm/reference.py, written from
    the transformers source, measured by bench/accuracy/llm/measure_llm.py."""
    def f(kw, compat):
        raise ModelError("%s is measured with bench/accuracy/llm's reference modules (written from the "
                         "transformers source), not rebuilt by vctorch" % name)
    return f


for _n in ("RotaryEmbedding", "RotaryAttention", "HFRMSNorm", "GatedActivation", "Scale", "PositionEmbedding",
           "SparseMoE", "NewGELU", "MLAttention", "GatedDeltaNet", "Mamba2Mixer", "ShortConv", "GraniteMoE", "PixelValues", "VisionWeights",
           "VisionPosEmbed", "VisionRotary", "VisionAttention", "VisionOutputs", "DeepstackAdd",
           "T5LayerNorm", "T5StackMask", "T5PositionBias", "T5Return", "T5Attention", "T5DecoderIds",
           "WhisperAttention", "WhisperEncoderPositions", "BartLogitsBias", "M2M100Positions", "PixtralRotary", "PixtralMask",
               "PixtralAttention", "PixtralMerge", "PixtralOutputs", "LayerScalar", "Cast", "SiglipLogits",
               "MllamaVision", "MllamaCrossMask", "MllamaCrossAttention", "MllamaGate",
               "VisionPosInterp"):
    _KINDS[_n] = (_llm_kind(_n), None, set())


def _transformer_factory(cls2x, clsstock):
    def f(kw, compat):
        if "batch_first" in kw:
            raise ModelError("batch_first is implied (sequence modules are always batch_first)")
        bias = kw.pop("bias", True)
        act = kw.get("activation", "relu")
        if compat == "2x":
            m = cls2x(batch_first=True, **kw)
            m._act_name = act
            m._setup(kw["d_model"], kw["nhead"], kw.get("dropout", 0.1), bias)
        else:
            if not bias:
                raise ModelError("bias=False needs PyTorch >= 2.1 (use compat 2x)")
            m = clsstock(batch_first=True, **kw)
        return m
    return f


_KINDS["TransformerEncoderLayer"] = (_transformer_factory(_EncoderLayer2x, _EncoderLayerStock), 1, set())
_KINDS["TransformerDecoderLayer"] = (_transformer_factory(_DecoderLayer2x, _DecoderLayerStock), 2, set())
_KINDS["Add"] = (lambda kw, c: _Add(**kw), None, set())
_KINDS["Mul"] = (lambda kw, c: _Mul(**kw), None, set())
_KINDS["Cat"] = (lambda kw, c: _Cat(**kw), None, set())
_KINDS["Reshape"] = (lambda kw, c: _Reshape(**kw), 1, set())
_KINDS["Permute"] = (lambda kw, c: _Permute(**kw), 1, set())
_KINDS["Transpose"] = (lambda kw, c: _Transpose(**kw), 1, set())
_KINDS["Select"] = (lambda kw, c: _Select(**kw), 1, set())
_KINDS["Slice"] = (lambda kw, c: _Slice(**kw), 1, set())
_KINDS["TopK"] = (lambda kw, c: _TopK(**kw), 1, set())
_KINDS["Gather"] = (lambda kw, c: _Gather(**kw), 2, set())
_KINDS["Mean"] = (lambda kw, c: _Mean(stock=(c != "2x"), **kw), 1, set())
for _n in ("AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d"):
    _KINDS[_n] = ((lambda d: lambda kw, c: _AdaptiveAvgPool2x(d, **kw) if c == "2x"
                   else getattr(nn, "AdaptiveAvgPool%dd" % d)(**kw))(int(_n[-2])), 1, set())
_KINDS["Matmul"] = (lambda kw, c: _Matmul(stock=(c != "2x"), **kw), 2, set())
_KINDS["ScaledDotProductAttention"] = (lambda kw, c: _SDPA(stock=(c != "2x"), **kw), 3, set())
_KINDS["Parameter"] = (lambda kw, c: _Param(**kw), 0, set())

_GRAPH_KEYS = {"type", "name", "inputs", "repeat", "frozen", "checkpoint", "module", "held_until"}


def _check_dims(kind, kw, path):
    """No op may move or resize dim 0 (SPEC section 1)."""
    def bad(what):
        raise ModelError("%s (%s): %s must not touch the batch dimension 0" % (path, kind, what))
    if kind in ("Transpose",):
        if kw.get("dim0") == 0 or kw.get("dim1") == 0:
            bad("dim0/dim1")
    if kind in ("Select", "Slice", "Cat", "Softmax", "LogSoftmax", "TopK", "Gather") and kw.get("dim") == 0:
        bad("dim")
    if kind == "Mean":
        d = kw.get("dim")
        if d == 0 or (isinstance(d, (list, tuple)) and 0 in d):
            bad("dim")
    if kind == "Permute":
        dims = kw.get("dims")
        if not dims or dims[0] != 0:
            bad("dims[0]")
    if kind == "Flatten" and kw.get("start_dim", 1) == 0:
        bad("start_dim")


# --------------------------------------------------------------------------
# Graph
# --------------------------------------------------------------------------


class _StopRecomputation(Exception):
    pass


class _Handle:
    """Key of a recomputed tensor (2.x torch/utils/checkpoint.py _Handle)."""


class _Holder:
    """What a checkpointed forward saves instead of a tensor (2.x _Holder)."""

    __slots__ = ("handle", "__weakref__")

    def __init__(self):
        self.handle = None


def _wrapped_number(x):
    """A Python number autograd saved as a tensor (`h * 0.5`: MulBackward0's `other`, 0-d float64 or
    int64, no grad). PyTorch 2.x saves it without the saved-tensor hooks
    (torch/csrc/autograd/saved_variable.cpp @032b464e, SavedVariable::SavedVariable: `if (maybe_hooks &&
    !variable.unsafeGetTensorImpl()->is_wrapped_number())`), so no checkpoint holder is made for it and
    unpacking it recomputes nothing; torch 1.13 packs it like any tensor. is_wrapped_number is not visible
    from Python here: a 0-d float64 / int64 / complex128 / bool tensor that needs no grad stands for it
    (a heuristic: a model's own such tensor, saved by an op, would be taken for one)."""
    return (x.dim() == 0 and not x.requires_grad and x.grad_fn is None and
            x.dtype in (torch.float64, torch.int64, torch.complex128, torch.bool))


def _checkpoint2x(fn, *args):
    """torch.utils.checkpoint(fn, *args, use_reentrant=False) as PyTorch 2.x runs it
    (torch/utils/checkpoint.py, _checkpoint_without_reentrant_generator with
    early_stop=True, preserve_rng_state=False, one graph task).  Forward: every
    tensor autograd would save becomes a _Holder.  The first unpack in backward
    re-runs fn under recomputation hooks that store each recomputed saved tensor
    (detached) under a _Handle in a WeakKeyDictionary, and raise
    _StopRecomputation as soon as the last one is stored: the ops after the block's
    last saving op are not recomputed (torch 1.13's checkpoint re-runs the whole
    block).  Unpacking drops the holder's handle, so the recomputed tensor lives
    until the node that needed it has run.  The block's inputs stay referenced by
    this frame, as 2.x's _NoopSaveInputs keeps them."""
    holders = []
    recomputed = weakref.WeakKeyDictionary()
    done = [False]

    def pack(x):
        if _wrapped_number(x):
            return x
        h = _Holder()
        holders.append(weakref.ref(h))
        return h

    def recompute():
        count = [0]

        def rpack(x):
            if _wrapped_number(x):
                return x
            h = holders[count[0]]()
            count[0] += 1
            if h is not None:
                h.handle = _Handle()
                recomputed[h.handle] = x.detach()
            if count[0] == len(holders):
                # the op that saved this tensor has allocated its outputs; raising
                # frees them before its operator ends, so read the total first (CUDA's
                # max_memory_allocated sees them)
                HOOKS.read("checkpoint-early-stop")
                raise _StopRecomputation()
            return x.detach()

        try:
            with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(rpack, lambda x: x):
                fn(*args)
        except RuntimeError as e:  # 1.13 re-raises a hook's exception as RuntimeError
            if "_StopRecomputation" not in str(e):
                raise
        except _StopRecomputation:
            pass
        done[0] = True

    def unpack(h):
        if isinstance(h, torch.Tensor):
            return h
        if not done[0]:
            recompute()
        ret = recomputed[h.handle]
        h.handle = None
        return ret

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        return fn(*args)


class _CheckpointFunction2x(torch.autograd.Function):
    """torch.utils.checkpoint(fn, *args, use_reentrant=True) as PyTorch 2.x runs it: CheckpointFunction
    (torch/utils/checkpoint.py @0008d771a4015b0b43165ea470653b52e92b2148), with preserve_rng_state=False (the
    RNG snapshot, torch.get_rng_state() and the device states, is a CPU tensor on CUDA too: no device memory,
    not taken here, as _checkpoint2x does).  Forward: the tensor arguments saved (ctx.save_for_backward), the
    others kept in ctx.inputs, fn run under no_grad.  Backward: the saved inputs detached (detach_variable:
    same storage, requires_grad as before), fn run again whole under enable_grad (no early stop),
    torch.autograd.backward(outputs_with_grad, args_with_grad) inside this node -- the recomputed graph freed
    as that inner backward runs, the parameters' gradients accumulated there, `args` (the outputs' gradients)
    and `outputs` referenced until this returns -- and the detached inputs' .grad returned.  Torch 1.13's
    CheckpointFunction is the same but for the CUDA-only autocast and RNG handling (torch.cuda.amp.autocast,
    had_cuda_in_fwd), which this port leaves out with the RNG; kept as a port so the harness runs 2.x's
    statement order whatever the installed torch."""

    @staticmethod
    def forward(ctx, run_function, *args):
        ctx.run_function = run_function
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if torch.is_tensor(arg):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with torch.no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        inputs = list(ctx.inputs)
        tensors = ctx.saved_tensors
        for i, idx in enumerate(ctx.tensor_indices):
            inputs[idx] = tensors[i]
        detached_inputs = torch.utils.checkpoint.detach_variable(tuple(inputs))
        with torch.enable_grad():
            outputs = ctx.run_function(*detached_inputs)
        if isinstance(outputs, torch.Tensor):
            outputs = (outputs,)
        outputs_with_grad = []
        args_with_grad = []
        for i in range(len(outputs)):
            if torch.is_tensor(outputs[i]) and outputs[i].requires_grad:
                outputs_with_grad.append(outputs[i])
                args_with_grad.append(args[i])
        if len(outputs_with_grad) == 0:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        torch.autograd.backward(outputs_with_grad, args_with_grad)
        grads = tuple(inp.grad if isinstance(inp, torch.Tensor) else None for inp in detached_inputs)
        return (None,) + grads


def _checkpoint_reentrant2x(fn, *args):
    """torch.utils.checkpoint(fn, *args, use_reentrant=True, preserve_rng_state=False), 2.x's
    CheckpointFunction (_CheckpointFunction2x).  2.x's checkpoint() warns when no argument requires grad
    ("None of the inputs have requires_grad=True. Gradients will be None"): the output then needs none."""
    return _CheckpointFunction2x.apply(fn, *args)


class _Block(nn.Module):
    """One layer entry: `repeat` copies in sequence, optional checkpointing."""

    def __init__(self, copies, ckpt, path, compat="2x"):
        super().__init__()
        self.copies = nn.ModuleList(copies)
        self.ckpt = ckpt
        self.path = path
        self.compat = compat

    loop = False

    def run_loop(self, box):
        """A "loop" Sequential, called with its arguments in a list it empties: copy k's input is
        referenced only while copy k runs (`for layer in self.layers: h = layer(h)`), no
        Module.__call__ frame holding the first input through the whole block."""
        if HOOKS.layer is not None:
            HOOKS.layer(self.path)
        rest = tuple(box[1:])
        h = box[0]
        box.clear()
        for m in self.copies:
            h = self._copy(m, (h,) + rest)
        return h

    def _copy(self, m, args):
        if self.ckpt and torch.is_grad_enabled() and args:
            # non-reentrant, as SPEC asks.  The RNG snapshot is a CPU tensor on
            # CUDA too (no device memory), so it is not taken here.
            if self.compat == "2x":
                return _checkpoint2x(m, *args)
            return _checkpoint(m, *args, use_reentrant=False, preserve_rng_state=False)
        return m(*args)

    def forward(self, *args):
        if HOOKS.layer is not None:
            HOOKS.layer(self.path)
        y = None
        for m in self.copies:
            y = self._copy(m, args)
            if len(self.copies) > 1:
                args = (y,) + tuple(args[1:])
        return y


_REF_RE = re.compile(r"^layers\[(\d+)\]$")


class _Scope(nn.Module):
    """A list of layers (the model, or a Sequential): runs them in order and drops
    each output after its last use."""

    def __init__(self, cfgs, path, input_names, compat, registry):
        super().__init__()
        if not isinstance(cfgs, list) or not cfgs:
            raise ModelError("%s: layers must be a non-empty list" % path)
        self.items = nn.ModuleList()
        self.refs = []
        self.keeps = []
        names = {}
        nin = len(input_names)
        for i, cfg in enumerate(cfgs):
            lpath = "%s[%d]" % (path, i)
            if not isinstance(cfg, dict) or "type" not in cfg:
                raise ModelError("%s: a layer is an object with a \"type\"" % lpath)
            block, arity = _build_layer(cfg, lpath, compat, registry)
            refs = []
            keep = None
            if cfg["type"] == "Sequential" and "keep" in cfg:  # held until this block returns, not passed
                keep = self._resolve(cfg["keep"], i, names, input_names, lpath + ".keep")
            if "inputs" in cfg:
                spec = cfg["inputs"]
                if not isinstance(spec, list):
                    raise ModelError("%s.inputs: must be a list" % lpath)
                for r in spec:
                    refs.append(self._resolve(r, i, names, input_names, lpath))
            elif arity != 0:
                refs.append(("in", 0) if i == 0 else ("out", i - 1))
            if arity is not None and len(refs) != arity and not (
                    cfg["type"] == "MultiheadAttention" and len(refs) in (1, 3)):
                raise ModelError("%s (%s): takes %d input(s), got %d" % (lpath, cfg["type"], arity, len(refs)))
            if cfg["type"] == "MultiheadAttention" and len(refs) not in (1, 3):
                raise ModelError("%s (MultiheadAttention): inputs are [q] or [q, k, v]" % lpath)
            if cfg["type"] in ("Add", "Mul", "Cat") and len(refs) < (1 if cfg["type"] == "Cat" else 2):
                raise ModelError("%s (%s): needs more inputs" % (lpath, cfg["type"]))
            if "name" in cfg:
                nm = cfg["name"]
                if nm in names or nm == "input" or nm in input_names:
                    raise ModelError("%s.name: %r is not unique in its scope" % (lpath, nm))
                names[nm] = i
                registry.setdefault("names", {}).setdefault(nm, block)
            self.items.append(block)
            self.refs.append(refs)
            self.keeps.append(keep)
        n = len(self.refs)
        last = {}
        for i, refs in enumerate(self.refs):
            for r in refs + ([self.keeps[i]] if self.keeps[i] else []):
                last[r] = i
        # values to drop after item i ran
        self.free_after = [[] for _ in range(n)]
        for r, i in last.items():
            if r == ("out", n - 1):
                continue
            self.free_after[i].append(r)
        for j in range(n - 1):
            if ("out", j) not in last:
                self.free_after[j].append(("out", j))
        self.n_inputs = nin

    @staticmethod
    def _resolve(r, i, names, input_names, lpath):
        if not isinstance(r, str):
            raise ModelError("%s.inputs: references are strings" % lpath)
        if r == "input":
            return ("in", 0)
        if r in input_names:
            return ("in", input_names.index(r))
        m = _REF_RE.match(r)
        if m:
            j = int(m.group(1))
            if j >= i:
                raise ModelError("%s.inputs: %s is not an earlier layer" % (lpath, r))
            return ("out", j)
        if r in names:
            return ("out", names[r])
        raise ModelError("%s.inputs: unknown reference %r" % (lpath, r))

    def forward(self, *inputs):
        n = len(self.items)
        outs = [None] * n
        ins = list(inputs)
        for i in range(n):
            args = [ins[k] if kind == "in" else outs[k] for kind, k in self.refs[i]]
            if self.items[i].loop:  # its input dropped here when this is its last use (run_loop)
                for kind, k in self.free_after[i]:
                    if (kind, k) == self.refs[i][0] and self.keeps[i] != (kind, k):
                        if kind == "in":
                            ins[k] = None
                        else:
                            outs[k] = None
                outs[i] = self.items[i].run_loop(args)
            else:
                outs[i] = self.items[i](*args)
            del args
            for kind, k in self.free_after[i]:
                if kind == "in":
                    ins[k] = None
                else:
                    outs[k] = None
        return outs[n - 1]


def _build_layer(cfg, path, compat, registry):
    kind = cfg["type"]
    repeat = cfg.get("repeat", 1)
    if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
        raise ModelError("%s.repeat: must be a positive integer" % path)
    frozen = bool(cfg.get("frozen", False))
    ckpt = bool(cfg.get("checkpoint", False))
    copies = []
    if kind == "Sequential":
        extra = set(cfg) - _GRAPH_KEYS - {"layers", "loop", "keep"}
        if extra:
            raise ModelError("%s (Sequential): unknown key(s) %s" % (path, ", ".join(sorted(extra))))
        for _ in range(repeat):
            copies.append(_Scope(cfg.get("layers"), path + ".layers", ["input"], compat, registry))
        arity = None if "inputs" in cfg else 1
    else:
        if kind not in _KINDS:
            raise ModelError("%s: unknown layer type %r" % (path, kind))
        factory, arity, extra_keys = _KINDS[kind]
        kw = {k: v for k, v in cfg.items() if k not in _GRAPH_KEYS and k != "tie"}
        if "tie" in cfg and kind not in ("Linear", "Embedding"):
            raise ModelError("%s.tie: only Linear and Embedding can tie weights" % path)
        for k in list(kw):
            if isinstance(kw[k], list) and k in _TUPLE_KEYS:
                kw[k] = tuple(kw[k])
        _check_dims(kind, kw, path)
        for _ in range(repeat):
            try:
                m = factory(dict(kw), compat)
            except ModelError as e:
                raise ModelError("%s (%s): %s" % (path, kind, e)) from None
            except TypeError as e:
                raise ModelError("%s (%s): %s" % (path, kind, e)) from None
            copies.append(m)
            if "tie" in cfg:
                registry.setdefault("ties", []).append((m, cfg["tie"], path))
            if kind == "Embedding":
                registry.setdefault("embeddings", []).append(m)
    if frozen:
        for m in copies:
            for p in m.parameters():
                p.requires_grad_(False)
    blk = _Block(copies, ckpt, path, compat)
    if kind == "Sequential":
        # "loop": a Python loop over the copies (h = layer(h)): each copy's input dies as it returns
        blk.loop = bool(cfg.get("loop", False)) and repeat > 1
    return blk, arity


class Model(nn.Module):
    """The built model: forward(*inputs) in the order of `input_names`."""

    def __init__(self, spec, compat="2x"):
        super().__init__()
        if not isinstance(spec, dict):
            raise ModelError("model: must be a JSON object")
        if ("input" in spec) == ("inputs" in spec):
            raise ModelError("model: give exactly one of \"input\" and \"inputs\"")
        if "input" in spec:
            self.input_specs = [("input", _input_spec(spec["input"], "input"))]
        else:
            if not isinstance(spec["inputs"], dict) or not spec["inputs"]:
                raise ModelError("inputs: must be a non-empty object")
            self.input_specs = [(k, _input_spec(v, "inputs." + k)) for k, v in spec["inputs"].items()]
        self.input_names = [n for n, _ in self.input_specs]
        self.name = spec.get("name", "model")
        self.loss_kind = spec.get("loss", "mean")
        if self.loss_kind not in ("mean", "cross_entropy"):
            raise ModelError("loss: must be \"mean\" or \"cross_entropy\"")
        reg = {}
        self.body = _Scope(spec.get("layers"), "layers", self.input_names, compat, reg)
        names = reg.get("names", {})
        for m, target, path in reg.get("ties", []):
            blk = names.get(target)
            if blk is None:
                raise ModelError("%s.tie: no layer named %r" % (path, target))
            src = blk.copies[0]
            if not hasattr(src, "weight") or not isinstance(src, (nn.Linear, nn.Embedding)):
                raise ModelError("%s.tie: %r is not a Linear or Embedding" % (path, target))
            if src.weight.shape != m.weight.shape:
                raise ModelError("%s.tie: weight shapes differ (%s vs %s)" % (
                    path, tuple(src.weight.shape), tuple(m.weight.shape)))
            m.weight = src.weight
        embs = reg.get("embeddings", [])
        self.vocab = embs[0].num_embeddings if embs else 2

    def forward(self, *inputs):
        _RUN.batch = inputs[0].shape[0] if inputs else 1
        return self.body(*inputs)

    def make_inputs(self, batch, dtype=torch.float32, shapes=None):
        """Random inputs: floats in `dtype`, int64 ids below the first Embedding's
        num_embeddings.  `shapes` overrides per-sample shapes by input name."""
        out = []
        for name, (shape, dt) in self.input_specs:
            if shapes and name in shapes:
                shape = list(shapes[name])
            if dt == torch.int64:
                out.append(torch.randint(0, self.vocab, (batch, *shape), dtype=torch.int64))
            elif dt == torch.bool:
                out.append(torch.zeros((batch, *shape), dtype=torch.bool))
            else:
                out.append(torch.randn((batch, *shape), dtype=dtype if dt is None else dt))
        return tuple(out)


_DTYPES = {"float32": None, "float": None, "int64": torch.int64, "long": torch.int64, "bool": torch.bool}


def _input_spec(v, path):
    if isinstance(v, list):
        shape, dt = v, None
    elif isinstance(v, dict):
        if set(v) - {"shape", "dtype", "cast"}:
            raise ModelError("%s: unknown key(s) %s" % (path, ", ".join(sorted(set(v) - {"shape", "dtype", "cast"}))))
        shape = v.get("shape")
        dname = v.get("dtype", "float32")
        if dname not in _DTYPES:
            raise ModelError("%s.dtype: unsupported %r" % (path, dname))
        dt = _DTYPES[dname]
        if "cast" in v:  # src/model/load.c: "cast": false keeps a float input float32 whatever the precision
            if not isinstance(v["cast"], bool) or dt is not None:
                raise ModelError("%s.cast: true or false, for a float input" % path)
            if v["cast"] is False:
                dt = torch.float32
    else:
        raise ModelError("%s: a shape list or {\"shape\", \"dtype\"}" % path)
    if not isinstance(shape, list) or not all(isinstance(d, int) and d > 0 for d in shape):
        raise ModelError("%s: shape must be a list of positive integers" % path)
    return shape, dt


def build(model_json, compat="2x"):
    """model_json (dict, SPEC section 1) -> (module, make_inputs(batch) -> tuple of tensors).

    The module is a vctorch.Model (an nn.Module).  make_inputs(batch, dtype=float32)
    makes one random batch.  module.loss_kind is "mean" or "cross_entropy";
    module.input_names lists the model inputs in forward order."""
    if compat not in ("2x", "stock"):
        raise ValueError("compat must be '2x' or 'stock'")
    m = Model(model_json, compat)
    return m, m.make_inputs


if __name__ == "__main__":
    import json
    import sys
    mod, mk = build(json.load(open(sys.argv[1])))
    b = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    xs = mk(b)
    y = mod(*xs)
    print(mod)
    print("params", sum(p.numel() for p in mod.parameters()), "output", tuple(y.shape))
