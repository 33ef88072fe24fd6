#!/usr/bin/python3
"""torch2vramcalc -- export a torch.nn.Module to a vramcalc model file (SPEC.md section 1).

    /usr/bin/python3 tools/torch2vramcalc.py torchvision.models.resnet50 --input 3,224,224 > resnet50.json
    /usr/bin/python3 tools/torch2vramcalc.py mypkg.nets:build_net --kwargs '{"width": 64}' --input 3,64,64
    /usr/bin/python3 tools/torch2vramcalc.py ./my_model.py:Net --input ids=128:int64

TARGET is a dotted path to a callable that returns an nn.Module (a class, a factory
such as torchvision.models.resnet50) or to a module instance; `pkg.mod:attr` and
`path/file.py:attr` name it explicitly.  --kwargs (JSON) are passed to the callable.

How it works: torch.fx symbolically traces the module (leaf modules are the layer kinds
vramcalc knows), runs the traced graph once on a small batch to learn every tensor's
shape, then maps
  * leaf modules to kinds, with their constructor arguments read from the module's
    attributes (arguments equal to PyTorch's default are left out);
  * functional ops and tensor methods that allocate or alias memory to kinds: add/iadd,
    mul, cat, flatten, relu & co. (F.*, torch.*, methods, in-place forms), view/reshape/
    squeeze/unsqueeze, permute/transpose, mean, matmul/bmm, softmax, dropout, pooling,
    interpolate, getitem slicing, chunk/split;
  * parameters read directly (class tokens, positional embeddings) to Parameter;
  * shape arithmetic (x.size(), x.shape, torch._assert) and .contiguous() to nothing
    (vramcalc counts the copy where the next op needs contiguous memory).
Anything else stops the export with a list of the unmapped ops (exit status 2).

Layers are written in execution order, unnamed when each takes the previous layer's
output, with `name`/`inputs` where the data flow branches (residuals, concatenations).
A submodule call that takes one tensor and returns one becomes a Sequential scope named
after the submodule, since PyTorch keeps a submodule's input alive until it returns
(--flat: one flat list).  The model's parameter count is checked against the exported
one; a difference (modules never called in forward) is reported on stderr.

Python use:
    import torch2vramcalc as t2v
    doc, info = t2v.export(module, [t2v.parse_input("3,224,224")], name="net")
    text = t2v.dumps(doc)
See docs/models.md.
"""

import argparse
import dis
import importlib
import importlib.util
import inspect
import json
import operator
import os
import re
import sys
from collections import OrderedDict

import torch
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["export", "dumps", "Unmapped", "load_target", "parse_input"]


class Unmapped(Exception):
    """The module uses ops the model format cannot express.  .items: list of
    (node name, op description, reason, location)."""

    def __init__(self, items, what="model"):
        self.items = items
        self.what = what
        super().__init__(self.report())

    def report(self):
        lines = ["cannot export %s: %d op(s) have no vramcalc kind:" % (self.what, len(self.items))]
        seen = OrderedDict()
        for node, desc, reason, loc in self.items:
            key = (desc, reason)
            seen.setdefault(key, []).append((node, loc))
        for (desc, reason), where in seen.items():
            nodes = ", ".join(n for n, _ in where[:4]) + (" ..." if len(where) > 4 else "")
            loc = where[0][1]
            lines.append("  %s%s  x%d  [%s]%s" % (desc, (": " + reason) if reason else "", len(where),
                                                  nodes, ("  " + loc) if loc else ""))
        lines.append("(--allow-unknown exports the rest, each of these as a new tensor of its output's shape, "
                     "marked approximate; or rewrite them with supported ops, or write the model by hand: "
                     "docs/models.md)")
        return "\n".join(lines)


# --------------------------------------------------------------------------
# torch 1.13's Proxy.__iter__ assumes pre-3.11 bytecode offsets (`a, b = proxy`
# fails with IndexError on Python 3.11); this version finds the instruction by offset.
# --------------------------------------------------------------------------

def _pieces(node):
    """How many tensors a chunk/split/unbind node gives, when its arguments say so."""
    name = node.target if node.op == "call_method" else getattr(node.target, "__name__", "")
    args = list(node.args[1:])
    if name == "chunk":
        n = args[0] if args else node.kwargs.get("chunks")
        return n if isinstance(n, int) else None
    if name == "split":
        s = args[0] if args else node.kwargs.get("split_size_or_sections", node.kwargs.get("split_size"))
        return len(s) if isinstance(s, (list, tuple)) else None
    return None


def _proxy_iter(self):
    n = _pieces(self.node) if self.node.op in ("call_method", "call_function") else None
    if n is not None:  # `for t in x.chunk(3)`, `[f(t) for t in qkv]`
        return (self[i] for i in range(n))
    frame = inspect.currentframe().f_back
    for inst in dis.get_instructions(frame.f_code):
        if inst.offset == frame.f_lasti:
            if inst.opname == "UNPACK_SEQUENCE":
                return (self[i] for i in range(inst.argval))
            break
    return self.tracer.iter(self)


def _inplace_magic(op):
    target = getattr(operator, op)

    def impl(self, other):
        return self.tracer.create_proxy("call_function", target, (self, other), {})
    impl.__name__ = "__%s__" % op
    return impl


# Tensor factories called with sizes taken from x.shape (torch.arange(x.shape[1])) fail
# under symbolic tracing in torch 1.13; during tracing they record a call instead.
_FACTORIES = ("arange", "ones", "zeros", "full", "empty", "tril", "triu")


def _proxy_aware(fn):
    def wrapper(*args, **kwargs):
        found = []
        fx.node.map_aggregate((args, kwargs), lambda a: found.append(a) if isinstance(a, fx.Proxy) else None)
        if found:
            return found[0].tracer.create_proxy("call_function", fn, args, kwargs)
        return fn(*args, **kwargs)
    wrapper.__name__ = getattr(fn, "__name__", "factory")
    wrapper.__wrapped__ = fn
    return wrapper


class _RootWrapper(nn.Module):
    def __init__(self, m, n):
        super().__init__()
        self.m = m
        self.n = n

    def forward(self, x0, x1=None, x2=None, x3=None):
        return self.m(*[x0, x1, x2, x3][:self.n])


# --------------------------------------------------------------------------
# Values flowing through the graph during export
# --------------------------------------------------------------------------

class _Ref:
    """A tensor the model file can name: a model input or a layer's output."""
    __slots__ = ("kind", "key")

    def __init__(self, kind, key):
        self.kind, self.key = kind, key  # ("in", name) or ("L", layer index)

    def __eq__(self, o):
        return isinstance(o, _Ref) and (self.kind, self.key) == (o.kind, o.key)

    def __hash__(self):
        return hash((self.kind, self.key))


class _Bad:
    """A value that cannot be expressed.  reported: already in the unmapped list (a
    root cause; its users fail silently); otherwise an error only if something uses it."""

    def __init__(self, desc, reason, reported=False):
        self.desc, self.reason, self.reported = desc, reason, reported


class _Cascade(Exception):
    """An argument failed to export earlier (already reported)."""


class _Param:
    """An nn.Parameter read by the forward (get_attr); becomes a Parameter layer when used."""

    def __init__(self, qualname, tensor, shape=None):
        self.qualname, self.tensor = qualname, tensor
        self.shape = list(tensor.shape) if shape is None else list(shape)  # a view of it (weight.view(1, -1, 1, 1))


class _Split:
    """Result of chunk/split: pieces of `base` along `dim` (per-model dim), [start, end)."""

    def __init__(self, base, dim, bounds):
        self.base, self.dim, self.bounds = base, dim, bounds


class _Arange:
    """torch.arange(n) (positions), possibly unsqueezed/expanded: feeds a positional Embedding."""

    def __init__(self, n):
        self.n = n


class _IndexView:
    """A view (unsqueeze, expand, reshape) of a TopK layer's int64 indices: no memory; a
    Gather reads it as its index (the Gather's `shape`)."""

    def __init__(self, base):
        self.base = base


class _Tuple:
    """A multi-output module's result: element 0 is a tensor, the rest unusable."""

    def __init__(self, items):
        self.items = items


class _Unbind:
    """Result of unbind: element i is base.select(dim, i)."""

    def __init__(self, base, dim):
        self.base, self.dim = base, dim


_NO_INPUT = ("Parameter", "RelativePositionBias")  # kinds without input (VC_KIND_NO_INPUT)


class _PosBias:
    """A parameter table gathered by a constant index and reshaped (MaxViT's relative position
    bias, torchvision/models/maxvit.py get_relative_positional_bias):
    table[index].view(N, N, -1).permute(2, 0, 1).contiguous().unsqueeze(0).  `ops` is the chain
    seen so far; it becomes a RelativePositionBias layer where a batched op uses it."""

    def __init__(self, param, ops):
        self.param, self.ops = param, list(ops)


def _prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


# --------------------------------------------------------------------------
# Module -> kind tables
# --------------------------------------------------------------------------

def _one(v):
    """(3, 3) -> 3; (1, 7) -> [1, 7]; strings and ints as they are."""
    if isinstance(v, (tuple, list)):
        v = list(v)
        if len(v) and all(x == v[0] for x in v):
            return v[0]
        return v
    return v


def _fields(pairs):
    """[(key, value, default)] -> dict without the defaults (default REQ: always kept)."""
    out = OrderedDict()
    for k, v, d in pairs:
        if d is _REQ or v != d:
            out[k] = v
    return out


_REQ = object()


def _conv(m, kind):
    pad = m.padding if isinstance(m.padding, str) else _one(m.padding)
    pairs = [("in_channels", m.in_channels, _REQ), ("out_channels", m.out_channels, _REQ),
             ("kernel_size", _one(m.kernel_size), _REQ), ("stride", _one(m.stride), 1),
             ("padding", pad, 0)]
    if kind.startswith("ConvTranspose"):
        pairs.append(("output_padding", _one(m.output_padding), 0))
    pairs += [("groups", m.groups, 1), ("bias", m.bias is not None, True),
              ("dilation", _one(m.dilation), 1), ("padding_mode", m.padding_mode, "zeros")]
    return _fields(pairs)


def _bn(m, kind):
    return _fields([("num_features", m.num_features, _REQ), ("eps", m.eps, 1e-5),
                    ("momentum", m.momentum, 0.1), ("affine", m.affine, True),
                    ("track_running_stats", m.track_running_stats, True)])


def _instnorm(m, kind):
    return _fields([("num_features", m.num_features, _REQ), ("eps", m.eps, 1e-5),
                    ("momentum", m.momentum, 0.1), ("affine", m.affine, False),
                    ("track_running_stats", m.track_running_stats, False)])


def _layernorm(m, kind):
    ns = list(m.normalized_shape)
    d = _fields([("normalized_shape", ns[0] if len(ns) == 1 else ns, _REQ), ("eps", m.eps, 1e-5),
                 ("elementwise_affine", m.elementwise_affine, True)])
    if m.elementwise_affine and getattr(m, "bias", None) is None:
        d["bias"] = False
    return d


def _groupnorm(m, kind):
    return _fields([("num_groups", m.num_groups, _REQ), ("num_channels", m.num_channels, _REQ),
                    ("eps", m.eps, 1e-5), ("affine", m.affine, True)])


def _rmsnorm(m, kind):
    ns = list(m.normalized_shape)
    return _fields([("normalized_shape", ns[0] if len(ns) == 1 else ns, _REQ), ("eps", m.eps, None),
                    ("elementwise_affine", m.elementwise_affine, True)])


def _linear(m, kind):
    return _fields([("in_features", m.in_features, _REQ), ("out_features", m.out_features, _REQ),
                    ("bias", m.bias is not None, True)])


def _swin_attention(m, kind):
    """torchvision's ShiftedWindowAttention(V2) (torchvision/models/swin_transformer.py): the
    constructor's arguments from the module's attributes."""
    return _fields([("dim", m.qkv.in_features, _REQ), ("window_size", _one(m.window_size), _REQ),
                    ("shift_size", _one(m.shift_size), _REQ), ("num_heads", m.num_heads, _REQ),
                    ("qkv_bias", m.qkv.bias is not None, True), ("proj_bias", m.proj.bias is not None, True),
                    ("attention_dropout", float(m.attention_dropout), 0.0), ("dropout", float(m.dropout), 0.0)])


def _mvit_attention(m, kind):
    """torchvision's MultiscaleAttention (torchvision/models/video/mvit.py): the constructor's
    arguments from the module (thw is added where it is called).  A Pool is there when the
    kernel or the stride is not all ones; its Conv3d has padding kernel // 2 (the constructor's
    padding_q / padding_kv)."""
    q, k = m.pool_q, m.pool_k
    if len(m.project) != 1:
        raise _Reject("MultiscaleAttention with dropout > 0 (project's nn.Dropout(inplace=True)) has no kind")
    for p in (q, k, m.pool_v):
        if p is not None and (not isinstance(p.pool, nn.Conv3d) or p.norm_act is None or len(p.norm_act) != 1
                              or not isinstance(p.norm_act[0], nn.LayerNorm) or p.norm_before_pool
                              or p.pool.bias is not None):
            raise _Reject("a Pool other than Conv3d + LayerNorm (the MViT builders') has no kind")
    one = [1, 1, 1]
    eps = next((p.norm_act[0].eps for p in (q, k) if p is not None), 1e-5)
    return _fields([("embed_dim", m.embed_dim, _REQ), ("output_dim", m.output_dim, m.embed_dim),
                    ("num_heads", m.num_heads, _REQ),
                    ("kernel_q", list(q.pool.kernel_size) if q else one, one),
                    ("kernel_kv", list(k.pool.kernel_size) if k else one, one),
                    ("stride_q", list(q.pool.stride) if q else one, one),
                    ("stride_kv", list(k.pool.stride) if k else one, one),
                    ("residual_pool", m.residual_pool, False),
                    ("residual_with_cls_embed", m.residual_with_cls_embed, True),
                    ("rel_pos_embed", m.rel_pos_h is not None, False), ("norm_eps", eps, 1e-5)])


def _mvit_pool(m, kind):
    """torchvision's Pool as MultiscaleBlock builds its pool_skip: Pool(nn.MaxPool3d(kernel,
    stride, padding), None) (torchvision/models/video/mvit.py)."""
    p = m.pool
    if not isinstance(p, nn.MaxPool3d) or m.norm_act is not None or p.dilation not in (1, (1, 1, 1)) or \
            p.ceil_mode or p.return_indices:
        raise _Reject("a Pool other than MultiscaleBlock's pool_skip (MaxPool3d, no norm) has no kind")
    three = lambda v: list(v) if isinstance(v, (list, tuple)) else [v, v, v]
    return _fields([("kernel_size", three(p.kernel_size), _REQ), ("stride", three(p.stride), None),
                    ("padding", three(p.padding), [0, 0, 0])])


def _mvit_posenc(m, kind):
    """torchvision's MViT PositionalEncoding (torchvision/models/video/mvit.py)."""
    return _fields([("embed_size", m.class_token.numel(), _REQ), ("temporal_size", m.temporal_size, _REQ),
                    ("spatial_size", list(m.spatial_size), _REQ),
                    ("rel_pos_embed", m.spatial_pos is None, False)])


def _embedding(m, kind):
    return _fields([("num_embeddings", m.num_embeddings, _REQ), ("embedding_dim", m.embedding_dim, _REQ),
                    ("padding_idx", m.padding_idx, None), ("max_norm", m.max_norm, None),
                    ("norm_type", m.norm_type, 2.0), ("scale_grad_by_freq", m.scale_grad_by_freq, False),
                    ("sparse", m.sparse, False)])


def _maxpool(m, kind):
    ks = _one(m.kernel_size)
    st = _one(m.stride) if m.stride is not None else ks
    return _fields([("kernel_size", ks, _REQ), ("stride", st, ks), ("padding", _one(m.padding), 0),
                    ("dilation", _one(m.dilation), 1), ("ceil_mode", m.ceil_mode, False),
                    ("return_indices", m.return_indices, False)])


def _avgpool(m, kind):
    ks = _one(m.kernel_size)
    st = _one(m.stride) if m.stride is not None else ks
    pairs = [("kernel_size", ks, _REQ), ("stride", st, ks), ("padding", _one(m.padding), 0),
             ("ceil_mode", m.ceil_mode, False), ("count_include_pad", m.count_include_pad, True)]
    if kind != "AvgPool1d":
        pairs.append(("divisor_override", m.divisor_override, None))
    return _fields(pairs)


def _adaptive(m, kind):
    d = _fields([("output_size", _one(m.output_size), _REQ)])
    if hasattr(m, "return_indices") and m.return_indices:
        d["return_indices"] = True
    return d


def _inplace(m, kind):
    return _fields([("inplace", getattr(m, "inplace", False), False)])


def _leaky(m, kind):
    return _fields([("negative_slope", m.negative_slope, 0.01), ("inplace", m.inplace, False)])


def _elu(m, kind):
    return _fields([("alpha", m.alpha, 1.0), ("inplace", m.inplace, False)])


def _gelu(m, kind):
    return _fields([("approximate", getattr(m, "approximate", "none"), "none")])


def _none(m, kind):
    return OrderedDict()


def _softmax(m, kind):
    if m.dim is None:
        raise _Reject("dim=None (implicit dim) cannot be exported; give dim")
    return OrderedDict(dim=m.dim)


def _dropout(m, kind):
    return _fields([("p", m.p, 0.5), ("inplace", m.inplace, False)])


def _flatten(m, kind):
    return _fields([("start_dim", m.start_dim, 1), ("end_dim", m.end_dim, -1)])


def _upsample(m, kind):
    sf = m.scale_factor
    if isinstance(sf, tuple):
        sf = _one(sf)
    return _fields([("size", _one(m.size) if m.size is not None else None, None),
                    ("scale_factor", sf, None), ("mode", m.mode, "nearest"),
                    ("align_corners", m.align_corners, None),
                    ("recompute_scale_factor", getattr(m, "recompute_scale_factor", None), None)])


def _pixelshuffle(m, kind):
    return OrderedDict(upscale_factor=m.upscale_factor)


def _stochastic_depth(m, kind):
    return OrderedDict(p=m.p, mode=m.mode)


def _rnn(m, kind):
    if not m.batch_first:
        raise _Reject("batch_first=False: vramcalc's sequence modules are batch_first "
                      "(rebuild the module with batch_first=True)")
    pairs = [("input_size", m.input_size, _REQ), ("hidden_size", m.hidden_size, _REQ),
             ("num_layers", m.num_layers, 1)]
    if kind == "RNN":
        pairs.append(("nonlinearity", m.nonlinearity, "tanh"))
    pairs += [("bias", m.bias, True), ("dropout", float(m.dropout), 0.0),
              ("bidirectional", m.bidirectional, False)]
    if kind == "LSTM":
        pairs.append(("proj_size", m.proj_size, 0))
    return _fields(pairs)


def _mha_fields(m):
    if not m.batch_first:
        raise _Reject("batch_first=False: vramcalc's sequence modules are batch_first "
                      "(rebuild the module with batch_first=True)")
    return _fields([("embed_dim", m.embed_dim, _REQ), ("num_heads", m.num_heads, _REQ),
                    ("dropout", float(m.dropout), 0.0), ("bias", m.in_proj_bias is not None, True),
                    ("add_bias_kv", m.bias_k is not None, False),
                    ("add_zero_attn", m.add_zero_attn, False),
                    ("kdim", m.kdim, m.embed_dim), ("vdim", m.vdim, m.embed_dim)])


def _act_name(a):
    if a is F.relu or isinstance(a, nn.ReLU):
        return "relu"
    if a is F.gelu or (isinstance(a, nn.GELU) and a.approximate == "none"):
        return "gelu"
    raise _Reject("activation %r: only relu and gelu can be exported" % (a,))


def _tlayer(m, kind):
    if not m.self_attn.batch_first:
        raise _Reject("batch_first=False: vramcalc's sequence modules are batch_first "
                      "(rebuild the module with batch_first=True)")
    d = _fields([("d_model", m.self_attn.embed_dim, _REQ), ("nhead", m.self_attn.num_heads, _REQ),
                 ("dim_feedforward", m.linear1.out_features, 2048),
                 ("dropout", float(m.dropout.p), 0.1), ("activation", _act_name(m.activation), "relu"),
                 ("layer_norm_eps", m.norm1.eps, 1e-5), ("norm_first", m.norm_first, False)])
    if m.linear1.bias is None:
        d["bias"] = False
    return d


class _Reject(Exception):
    pass


# kind name -> (torch class, fields function); subclasses map through their MRO.
def _module_table():
    t = OrderedDict()
    for n in ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"):
        t[getattr(nn, n)] = (n, _conv)
    for n in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d"):
        t[getattr(nn, n)] = (n, _bn)
    for n in ("InstanceNorm1d", "InstanceNorm2d"):
        t[getattr(nn, n)] = (n, _instnorm)
    t[nn.LayerNorm] = ("LayerNorm", _layernorm)
    t[nn.GroupNorm] = ("GroupNorm", _groupnorm)
    if hasattr(nn, "RMSNorm"):
        t[nn.RMSNorm] = ("RMSNorm", _rmsnorm)
    t[nn.Linear] = ("Linear", _linear)
    t[nn.Embedding] = ("Embedding", _embedding)
    for n in ("MaxPool1d", "MaxPool2d", "MaxPool3d"):
        t[getattr(nn, n)] = (n, _maxpool)
    for n in ("AvgPool1d", "AvgPool2d", "AvgPool3d"):
        t[getattr(nn, n)] = (n, _avgpool)
    for n in ("AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
              "AdaptiveMaxPool2d"):
        t[getattr(nn, n)] = (n, _adaptive)
    for n in ("ReLU", "ReLU6", "SiLU", "Mish", "Hardswish", "Hardsigmoid"):
        t[getattr(nn, n)] = (n, _inplace)
    t[nn.LeakyReLU] = ("LeakyReLU", _leaky)
    t[nn.ELU] = ("ELU", _elu)
    t[nn.GELU] = ("GELU", _gelu)
    t[nn.Sigmoid] = ("Sigmoid", _none)
    t[nn.Tanh] = ("Tanh", _none)
    t[nn.Softmax] = ("Softmax", _softmax)
    t[nn.LogSoftmax] = ("LogSoftmax", _softmax)
    t[nn.Dropout] = ("Dropout", _dropout)
    t[nn.Dropout2d] = ("Dropout2d", _dropout)
    t[nn.Identity] = ("Identity", _none)
    t[nn.Flatten] = ("Flatten", _flatten)
    t[nn.Upsample] = ("Upsample", _upsample)
    t[nn.PixelShuffle] = ("PixelShuffle", _pixelshuffle)
    t[nn.RNN] = ("RNN", _rnn)
    t[nn.LSTM] = ("LSTM", _rnn)
    t[nn.GRU] = ("GRU", _rnn)
    t[nn.MultiheadAttention] = ("MultiheadAttention", None)
    t[nn.TransformerEncoderLayer] = ("TransformerEncoderLayer", _tlayer)
    t[nn.TransformerDecoderLayer] = ("TransformerDecoderLayer", _tlayer)
    t[nn.TransformerEncoder] = ("TransformerEncoder", None)
    t[nn.TransformerDecoder] = ("TransformerDecoder", None)
    t[nn.Unflatten] = ("Unflatten", None)
    try:
        from torchvision.ops import StochasticDepth
        t[StochasticDepth] = ("StochasticDepth", _stochastic_depth)
    except Exception:  # torchvision absent
        pass
    try:  # the window attention runs shifted_window_attention, which torch.fx.wrap hides
        from torchvision.models import swin_transformer as swin
        t[swin.ShiftedWindowAttention] = ("ShiftedWindowAttention", _swin_attention)
        t[swin.ShiftedWindowAttentionV2] = ("ShiftedWindowAttentionV2", _swin_attention)
    except Exception:  # torchvision absent or older than 0.14
        pass
    try:  # MViT's attention and pool_skip take (x, thw) and return (x, thw)
        from torchvision.models.video import mvit
        t[mvit.MultiscaleAttention] = ("MultiscaleAttention", _mvit_attention)
        t[mvit.Pool] = ("MViTPool", _mvit_pool)
        t[mvit.PositionalEncoding] = ("MViTPositionalEncoding", _mvit_posenc)
    except Exception:  # torchvision absent or older than 0.14
        pass
    return t


_MODULES = _module_table()

# Every kind of `vramcalc --list-layers` and how this exporter writes it: the modules
# mapped to it (from _module_table), the functional ops / tensor methods (names of the
# _Exporter.op_* handlers) and any other way.  tests/roundtrip/check_kinds.py checks it
# against the CLI (a kind added in C and not here fails), against the kinds the code
# emits, and vctorch's _KINDS against the CLI.
_OP_KINDS = OrderedDict([
    ("Identity", (["output"], "the model's output when it is not the last layer")),
    ("Flatten", (["flatten"], "")),
    ("ScaledDotProductAttention", (["sdpa"], "")),
    ("LayerNorm", (["layer_norm"], "")),
    ("Linear", (["linear"], "")),
    ("MaxPool1d", (["max_pool1d"], "")), ("MaxPool2d", (["max_pool2d"], "")), ("MaxPool3d", (["max_pool3d"], "")),
    ("AvgPool1d", (["avg_pool1d"], "")), ("AvgPool2d", (["avg_pool2d"], "")), ("AvgPool3d", (["avg_pool3d"], "")),
    ("AdaptiveAvgPool1d", (["adaptive_avg_pool1d"], "")), ("AdaptiveAvgPool2d", (["adaptive_avg_pool2d"], "")),
    ("AdaptiveAvgPool3d", (["adaptive_avg_pool3d"], "")), ("AdaptiveMaxPool1d", (["adaptive_max_pool1d"], "")),
    ("AdaptiveMaxPool2d", (["adaptive_max_pool2d"], "")),
    ("ReLU", (["relu", "relu_"], "")), ("ReLU6", (["relu6"], "")), ("LeakyReLU", (["leaky_relu", "saves_input", "pow"], "")),
    ("ELU", (["elu"], "")), ("GELU", (["gelu"], "")), ("SiLU", (["silu"], "")), ("Mish", (["mish"], "")),
    ("Hardswish", (["hardswish"], "")), ("Hardsigmoid", (["hardsigmoid"], "")),
    ("Sigmoid", (["sigmoid", "saves_output"], "")), ("Tanh", (["tanh"], "")), ("Square", (["square"], "")),
    ("XIELU", ([], "transformers' XIELUActivation (Apertus), as the Hugging Face reader writes it; a traced model's "
                   "is traced through")),
    ("Softmax", (["softmax"], "")), ("LogSoftmax", (["log_softmax"], "")),
    ("Dropout", (["dropout"], "")), ("Dropout2d", (["dropout2d"], "")),
    ("Upsample", (["interpolate"], "")), ("PixelShuffle", (["pixel_shuffle"], "")),
    ("Add", (["add", "iadd", "sub", "isub", "where"], "")),
    ("Mul", (["mul", "imul", "div", "idiv"], "")),
    ("Cat", (["cat", "stack", "pad", "nothing_saved", "masked_fill", "neg", "repeat", "repeat_interleave",
              "expand", "to", "gather"], "and every stand-in for a new tensor that saves nothing")),
    ("Gather", (["gather"], "torch.gather whose index is a TopK layer's indices (or views of them)")),
    ("Reshape", (["reshape", "squeeze", "unsqueeze", "stack", "einsum"], "also nn.Unflatten")),
    ("Permute", (["permute", "einsum"], "")), ("Transpose", (["transpose"], "")),
    ("Select", (["getitem", "unbind"], "")), ("Slice", (["getitem", "chunk", "split", "pad"], "")),
    ("Mean", (["mean", "sum", "std"], "")), ("Matmul", (["matmul", "einsum"], "")),
    ("TopK", (["topk"], "")),
    ("RMSNorm", ([], "nn.RMSNorm where torch has it (2.4+; a hand-written RMSNorm is traced through)")),
    ("Parameter", ([], "an nn.Parameter read in forward (class token, positional embedding), "
                       "Embedding(torch.arange(n))")),
    ("Sequential", ([], "a submodule call that takes one tensor and returns one (a scope)")),
    ("RelativePositionBias", (["getitem"], "a parameter table indexed by a constant index buffer, "
                                          "view(N, N, -1).permute(2, 0, 1).contiguous().unsqueeze(0) "
                                          "(MaxViT's relative position bias)")),
] + [(k, ([], "not exported: written by vramcalc's Hugging Face config.json reader (src/hf/hf.c) for the "
              "transformers modules it models; a traced model exports their ops"))
     for k in ("RotaryEmbedding", "RotaryAttention", "HFRMSNorm", "GatedActivation", "Scale",
               "PositionEmbedding", "SparseMoE", "NewGELU", "MLAttention", "GatedDeltaNet", "Mamba2Mixer", "ShortConv", "GraniteMoE", "PixelValues", "VisionWeights",
               "VisionPosEmbed", "VisionRotary", "VisionAttention", "VisionOutputs", "DeepstackAdd",
               "T5LayerNorm", "T5StackMask", "T5PositionBias", "T5Return", "T5Attention", "T5DecoderIds",
               "WhisperAttention", "WhisperEncoderPositions", "BartLogitsBias", "M2M100Positions", "PixtralRotary", "PixtralMask",
               "PixtralAttention", "PixtralMerge", "PixtralOutputs", "LayerScalar", "Cast", "SiglipLogits",
               "MllamaVision", "MllamaCrossMask", "MllamaCrossAttention", "MllamaGate",
               "VisionPosInterp")])


def _kind_table():
    t = OrderedDict()
    for cls, (kind, _fn) in _MODULES.items():
        t.setdefault(kind, {"modules": [], "ops": [], "other": ""})["modules"].append(
            "%s.%s" % (cls.__module__, cls.__name__))
    for kind, (ops, other) in _OP_KINDS.items():
        e = t.setdefault(kind, {"modules": [], "ops": [], "other": ""})
        e["ops"] += ops
        e["other"] = other
    for k in ("TransformerEncoder", "TransformerDecoder", "Unflatten"):
        t.pop(k, None)  # modules written as other kinds (TransformerEncoderLayer x n, Reshape)
    return t


KINDS = _kind_table()


def _lookup(m):
    """The kind of a module: its class or a base class in the table, provided no class in
    between overrides forward (torchvision's LayerNorm2d is a LayerNorm that permutes:
    it is traced through instead)."""
    for cls in type(m).__mro__:
        if cls in _MODULES:
            return _MODULES[cls]
        if "forward" in vars(cls):
            return None
    return None


_CONTAINERS = (nn.Sequential, nn.ModuleList, nn.ModuleDict)


class _Tracer(fx.Tracer):
    def __init__(self):
        super().__init__()
        self.record_stack_traces = True
        # buffers read in forward (causal masks, rotary tables) become get_attr nodes, so that
        # slicing them with sizes taken from x.shape can be traced; they are constants here
        self.proxy_buffer_attributes = True

    def trace(self, root, concrete_args=None):
        self.frames = []
        self.ncalls = 0
        return super().trace(root, concrete_args)

    def call_module(self, m, forward, args, kwargs):
        """Records, on every node, the stack of (non-leaf) module calls it was made in."""
        qual = self.path_of_module(m)
        if self.is_leaf_module(m, qual):
            return super().call_module(m, forward, args, kwargs)
        self.ncalls += 1
        self.frames.append((qual, self.ncalls))
        try:
            return super().call_module(m, forward, args, kwargs)
        except Exception:
            if not getattr(self, "failed_in", None):
                self.failed_in = qual  # the innermost module, for the error message
            raise
        finally:
            self.frames.pop()

    def create_node(self, *args, **kwargs):
        n = super().create_node(*args, **kwargs)
        n.meta["vc_frames"] = tuple(getattr(self, "frames", ()))
        return n

    def is_leaf_module(self, m, qualname):
        if _lookup(m) is not None:
            return True
        if isinstance(m, _CONTAINERS):
            return False
        # any other torch.nn module is a leaf, reported as unmapped if it is called
        return m.__module__.startswith("torch.nn")


# --------------------------------------------------------------------------
# Function / method names
# --------------------------------------------------------------------------

def _fn_table():
    t = {}

    def add(name, *fns):
        for f in fns:
            if f is not None:
                t[f] = name
    add("add", operator.add, torch.add)
    add("iadd", operator.iadd)
    add("mul", operator.mul, torch.mul)
    add("imul", operator.imul)
    add("cat", torch.cat, getattr(torch, "concat", None), getattr(torch, "concatenate", None))
    add("flatten", torch.flatten)
    add("relu", F.relu, torch.relu)
    add("relu_", torch.relu_, F.relu_)
    add("relu6", F.relu6)
    add("leaky_relu", F.leaky_relu)
    add("elu", F.elu)
    add("gelu", F.gelu)
    add("silu", F.silu)
    add("mish", F.mish)
    add("hardswish", F.hardswish)
    add("hardsigmoid", F.hardsigmoid)
    add("sigmoid", torch.sigmoid, F.sigmoid)
    add("tanh", torch.tanh, F.tanh)
    add("square", torch.square)
    add("softmax", F.softmax, torch.softmax)
    add("log_softmax", F.log_softmax, torch.log_softmax)
    add("dropout", F.dropout)
    add("dropout2d", F.dropout2d)
    add("adaptive_avg_pool1d", F.adaptive_avg_pool1d, torch.adaptive_avg_pool1d)
    add("adaptive_avg_pool2d", F.adaptive_avg_pool2d)
    add("adaptive_avg_pool3d", F.adaptive_avg_pool3d)
    add("adaptive_max_pool1d", F.adaptive_max_pool1d)
    add("adaptive_max_pool2d", F.adaptive_max_pool2d)
    add("max_pool1d", F.max_pool1d)
    add("max_pool2d", F.max_pool2d)
    add("max_pool3d", F.max_pool3d)
    add("avg_pool1d", F.avg_pool1d)
    add("avg_pool2d", F.avg_pool2d)
    add("avg_pool3d", F.avg_pool3d)
    add("interpolate", F.interpolate)
    add("pixel_shuffle", F.pixel_shuffle)
    add("reshape", torch.reshape)
    add("squeeze", torch.squeeze)
    add("unsqueeze", torch.unsqueeze)
    add("permute", torch.permute)
    add("transpose", torch.transpose, torch.swapaxes)
    add("mean", torch.mean)
    add("matmul", torch.matmul, operator.matmul, torch.bmm)
    add("getitem", operator.getitem)
    add("layer_norm", F.layer_norm)
    add("linear", F.linear)
    add("getattr", getattr)
    add("chunk", torch.chunk)
    add("split", torch.split)
    add("assert", torch._assert)
    add("arange", torch.arange)
    add("sdpa", getattr(F, "scaled_dot_product_attention", None))
    # arithmetic with Python numbers and constant tensors, and the small ops user code calls
    add("sub", operator.sub, torch.sub, torch.subtract)
    add("isub", operator.isub)
    add("div", operator.truediv, torch.div, torch.true_divide, torch.divide)
    add("idiv", operator.itruediv)
    add("neg", operator.neg, torch.neg)
    add("pow", operator.pow, torch.pow)
    add("saves_output", torch.rsqrt, torch.sqrt, torch.exp)
    add("saves_input", torch.abs, torch.log, torch.clamp, torch.clip, torch.sin, torch.cos)
    add("nothing_saved", torch.cumsum, torch.triu, torch.tril)
    add("masked_fill", torch.masked_fill)
    add("where", torch.where)
    add("stack", torch.stack)
    add("pad", F.pad)
    add("normalize", F.normalize)
    add("einsum", torch.einsum)
    add("unbind", torch.unbind)
    add("gather", torch.gather)
    add("topk", torch.topk)
    add("repeat_interleave", torch.repeat_interleave)
    add("sum", torch.sum)
    add("std", torch.std, torch.var)
    add("compare", operator.gt, operator.lt, operator.ge, operator.le, operator.eq, operator.ne,
        torch.gt, torch.lt, torch.ge, torch.le, torch.eq, torch.ne, torch.isnan, torch.isinf)
    add("like", torch.zeros_like, torch.ones_like, torch.full_like, torch.empty_like, torch.rand_like,
        torch.randn_like)
    try:  # registered with torch.fx.wrap: fx records one call
        from torchvision.models import swin_transformer as swin
        add("patch_merging_pad", getattr(swin, "_patch_merging_pad", None))
    except Exception:
        pass
    try:  # registered with torch.fx.wrap: fx records one call
        from torchvision.models.video import mvit
        add("mvit_unsqueeze", getattr(mvit, "_unsqueeze", None))
        add("mvit_squeeze", getattr(mvit, "_squeeze", None))
    except Exception:
        pass
    return t


_FNS = _fn_table()

_METHODS = {
    "add": "add", "add_": "iadd", "__iadd__": "iadd", "mul": "mul", "mul_": "imul",
    "relu": "relu", "relu_": "relu_", "sigmoid": "sigmoid", "tanh": "tanh", "softmax": "softmax",
    "log_softmax": "log_softmax", "view": "reshape", "reshape": "reshape", "flatten": "flatten",
    "squeeze": "squeeze", "unsqueeze": "unsqueeze", "unflatten": "reshape", "view_as": "reshape",
    "reshape_as": "reshape", "permute": "permute", "transpose": "transpose", "swapaxes": "transpose",
    "contiguous": "contiguous", "mean": "mean", "matmul": "matmul", "bmm": "matmul",
    "chunk": "chunk", "split": "split", "size": "size", "dim": "size", "numel": "size",
    "expand": "expand", "expand_as": "expand", "to": "to", "float": "to", "type_as": "to",
    "__getitem__": "getitem",
    "sub": "sub", "sub_": "isub", "div": "div", "div_": "idiv", "neg": "neg", "pow": "pow",
    "rsqrt": "saves_output", "sqrt": "saves_output", "exp": "saves_output",
    "abs": "saves_input", "log": "saves_input", "clamp": "saves_input", "clip": "saves_input",
    "sin": "saves_input", "cos": "saves_input", "square": "square",
    "cumsum": "nothing_saved", "triu": "nothing_saved", "tril": "nothing_saved",
    "masked_fill": "masked_fill", "masked_fill_": "masked_fill_", "clamp_": "inplace",
    "unbind": "unbind", "gather": "gather", "topk": "topk", "repeat_interleave": "repeat_interleave", "repeat": "repeat",
    "sum": "sum", "std": "std", "var": "std", "half": "to", "bfloat16": "to", "double": "to",
    "new_zeros": "like", "new_ones": "like", "new_full": "like", "new_empty": "like",
    "zero_": "inplace", "fill_": "inplace", "gt": "compare", "lt": "compare", "ge": "compare",
    "le": "compare", "eq": "compare", "ne": "compare", "bool": "compare",
}


def _fn_desc(node):
    if node.op == "call_method":
        return "Tensor.%s" % node.target
    t = node.target
    mod = getattr(t, "__module__", None) or ""
    name = getattr(t, "__name__", repr(t))
    if mod.startswith("torch.nn.functional") or t in vars(F).values():
        return "F.%s" % name
    if mod == "_operator" or mod == "operator":
        return "operator.%s" % name
    if mod == "torch" or mod.startswith("torch._") or getattr(torch, name, None) is t:
        return "torch.%s" % name
    return "%s.%s" % (mod, name) if mod else name


def _loc(node):
    """file:line of the user code that made the node (innermost frame outside torch's own
    module-calling machinery)."""
    st = getattr(node, "stack_trace", None)
    if not st:
        return ""
    for line in st.splitlines():
        m = re.match(r'\s*File "([^"]+)", line (\d+)', line)
        if not m:
            continue
        path = m.group(1)
        if "/torch/fx/" in path or path.endswith("torch/nn/modules/module.py") or \
                path.endswith("torch/nn/modules/container.py") or path == os.path.abspath(__file__):
            continue
        for marker in ("site-packages/", "dist-packages/"):
            if marker in path:
                path = path.split(marker, 1)[1]
        if path.startswith(os.getcwd() + os.sep):
            path = os.path.relpath(path)
        return "%s:%s" % (path, m.group(2))
    return ""


# --------------------------------------------------------------------------
# Shape propagation (records what every node produced, on a small batch)
# --------------------------------------------------------------------------

class _Meta:
    __slots__ = ("shape", "dtype")

    def __init__(self, t):
        self.shape, self.dtype = tuple(t.shape), t.dtype


def _summarise(v):
    if isinstance(v, torch.Tensor):
        return _Meta(v)
    if isinstance(v, (tuple, list)):
        s = [_summarise(x) for x in v]
        return tuple(s) if isinstance(v, tuple) else s
    return v


class _Recorder(fx.Interpreter):
    def __init__(self, gm):
        super().__init__(gm)
        self.meta = {}

    def run_node(self, n):
        r = super().run_node(n)
        self.meta[n] = _summarise(r)
        return r


def _sample_inputs(module, named, batch, device):
    """One batch of inputs on device.  On "meta" they are made there (torch.empty(..., device="meta"):
    no storage, whatever the shape; a meta run reads shapes, never values), not made on the CPU and
    moved (input (2**24, 4) at batch 2: 512 MiB of float32; the process's peak RSS grew 1,031 MiB
    that way, 6.7 MiB this way).  The CPU fallback runs the module for real: random values, ids
    below the vocabulary."""
    if device == "meta":
        return [torch.empty((batch, *shape), dtype=dt, device="meta") for _nm, shape, dt in named]
    args = []
    g = torch.Generator().manual_seed(0)
    for nm, shape, dt in named:
        if dt == torch.int64:
            vocab = min([m.num_embeddings for m in module.modules() if isinstance(m, nn.Embedding)] or [2])
            t = torch.randint(0, vocab, (batch, *shape), generator=g)
        else:
            t = torch.randn((batch, *shape), generator=g, dtype=dt)
        args.append(t.to(device))
    return args


def _meta_copy(module):
    """module's copy on the meta device, made without copying a weight: the deepcopy's memo
    maps every parameter and buffer to an empty meta tensor of its shape."""
    import copy
    memo = {}
    for t in list(module.parameters()) + list(module.buffers()):
        e = torch.empty_like(t, device="meta")
        memo[id(t)] = nn.Parameter(e, requires_grad=t.requires_grad) if isinstance(t, nn.Parameter) else e
    return copy.deepcopy(module, memo).eval()


def _shapes(module, graph, named, batch, meta_module=None, meta_only=False):
    """Runs the traced graph once (eval mode, no grad) and records every node's result:
    on the meta device when every op supports it (no compute, no memory), else on CPU
    (meta_only: None instead)."""
    was_training = module.training
    try:
        try:
            mcopy = meta_module if meta_module is not None else _meta_copy(module)
            rec = _Recorder(fx.GraphModule(mcopy, graph))
            with torch.no_grad():
                rec.run(*_sample_inputs(module, named, batch, "meta"))
            return rec.meta
        except Exception:  # an op without a meta kernel, or data-dependent Python
            if meta_only:
                return None
        rec = _Recorder(fx.GraphModule(module, graph))
        module.eval()
        with torch.no_grad():
            rec.run(*_sample_inputs(module, named, batch, "cpu"))
        return rec.meta
    finally:
        module.train(was_training)


def _other_inputs(named):
    """Input sizes to re-export at, to find the sizes computed from the input: every
    dimension after the first doubled (images, video), else the first (sequences)."""
    out = []
    if any(len(s) > 1 for _, s, _ in named):
        out.append([(n, [s[0]] + [2 * d for d in s[1:]] if len(s) > 1 else s, dt) for n, s, dt in named])
    out.append([(n, [2 * s[0]] + list(s[1:]), dt) for n, s, dt in named])
    return out


def _freeze_unused(layers):
    """Layers whose output never reaches the model's output (the last layer) along a
    differentiable path: auxiliary heads of a model that returns several values, the loss
    being taken on the primary one, and what only a TopK's int64 indices are computed from
    (derivatives.yaml: topk's indices and gather's index are not differentiable).
    PyTorch gives their parameters no gradient (and Adam no state), which is what
    `frozen` says.  Returns how many layers were frozen."""
    live = set()
    todo = [len(layers) - 1]
    while todo:
        i = todo.pop()
        if i in live:
            continue
        live.add(i)
        l = layers[i]
        if l["type"] == "TopK" and l.get("output") == "indices":
            continue  # int64 indices: no gradient reaches what they were computed from
        ins = l["_in"][:1] if l["type"] == "Gather" else l["_in"]  # the index is not differentiable
        todo += [r.key for r in ins if r.kind == "L"]
    tie_names = set(l["tie"] for l in layers if "tie" in l)
    n = 0
    for i, l in enumerate(layers):
        if i in live or l["type"] in _NO_INPUT or "tie" in l or l["_node"] in tie_names:
            continue
        l["frozen"] = True
        n += 1
    return n


def _rederive(layers, other, why=""):
    """Compares the layers exported at the input with those exported at another input size
    (other: None when that export failed).  Sizes that follow the input are rewritten so
    that vramcalc --input re-derives them: one changing Reshape dimension becomes -1, an
    Upsample size proportional to its input becomes scale_factor.  Returns the list of
    sizes that cannot (fixed at the exported input)."""
    if other is None:
        return [why or "the model cannot be traced at another input size"]
    if [l["type"] for l in layers] != [l["type"] for l in other]:
        return ["the layers themselves change with the input size"]
    fixed = []
    for l, o in zip(layers, other):
        keys = [k for k in l if not k.startswith("_") and l.get(k) != o.get(k)]
        if not keys:
            continue
        if l["type"] == "Reshape" and keys == ["shape"] and len(l["shape"]) == len(o["shape"]):
            diff = [i for i, (a, b) in enumerate(zip(l["shape"], o["shape"])) if a != b]
            if len(diff) == 1 and -1 not in l["shape"]:
                l["shape"] = [(-1 if i == diff[0] else d) for i, d in enumerate(l["shape"])]
                continue
        if l["type"] == "Upsample" and keys == ["size"] and "_src" in l and "_src" in o:
            sz = l["size"] if isinstance(l["size"], list) else [l["size"]] * len(l["_src"])
            so = o["size"] if isinstance(o["size"], list) else [o["size"]] * len(o["_src"])
            r1 = [a / b for a, b in zip(sz, l["_src"])]
            r2 = [a / b for a, b in zip(so, o["_src"])]
            if r1 == r2 and all(float(r).is_integer() for r in r1):
                del l["size"]
                l["scale_factor"] = _one([int(r) for r in r1])
                continue
        fixed.append("%s %s of %s" % (l["type"], "/".join(keys), l["_node"]))
    return fixed


# --------------------------------------------------------------------------
# The exporter
# --------------------------------------------------------------------------

_NONTENSOR_OPS = {"size", "getattr", "assert"}


class _Exporter:
    def __init__(self, gm, meta, inputs, batch, root):
        self.gm, self.meta, self.inputs, self.B = gm, meta, inputs, batch
        self.root = root
        self.mods = dict(gm.named_modules())
        self.layers = []          # dicts with "_in": [refs]
        self.val = {}             # node -> value (_Ref, _Param, _Split, _Tuple, _Bad, python value)
        self.unmapped = []
        self.users = {n: list(n.users) for n in gm.graph.nodes}
        self.module_layer = {}    # id(module) -> layer index of its first call
        self.param_owner = {}     # id(param) -> layer index
        self.param_layers = {}    # qualname -> layer index (Parameter kind)
        self.exported_params = {}  # id(param) -> numel
        self.names = {}           # layer index -> node name
        self.notes = OrderedDict()  # stand-in kinds used: what -> count (the description says)
        self.approx = []          # (what, op, where): approximations (--allow-unknown and a few ops)
        self.allow_unknown = False
        self.outputs_note = None  # what the model returns besides its primary output

    # ---- helpers ----
    def fail(self, node, reason="", desc=None):
        self.unmapped.append((node.name, desc or self.describe(node), reason, self.where(node)))
        return _Bad(desc or self.describe(node), reason, reported=True)

    def qualname(self, node):
        """The name a report should give node's layer: the module's qualified name from the
        source (layer4.2.relu) for a module call; for an op, the module whose forward made it
        and the op (layer4.2:add)."""
        if node.op == "call_module":
            if isinstance(self.root, _RootWrapper):  # the user's root is the wrapper's m: its name is ""
                return node.target[2:] if node.target.startswith("m.") else ""
            return node.target
        frames = node.meta.get("vc_frames", ())
        op = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", node.name)
        op = op.strip("_") or node.name
        return "%s:%s" % (frames[-1][0], op) if frames else op

    def where(self, node):
        """'in module layer4.2 (Bottleneck) at file.py:123' -- the module path from the trace's
        call stack and the user's source line from fx's stack trace."""
        frames = node.meta.get("vc_frames", ())
        mod = node.target if node.op == "call_module" else (frames[-1][0] if frames else "")
        parts = []
        if mod:
            if not hasattr(self, "root_mods"):
                self.root_mods = dict(self.root.named_modules())
            m = self.root_mods.get(mod, self.mods.get(mod))
            parts.append("in module %s%s" % (mod, " (%s)" % type(m).__name__ if m is not None else ""))
        loc = _loc(node)
        if loc:
            parts.append("at " + loc)
        return " ".join(parts)

    def describe(self, node):
        if node.op == "call_module":
            m = self.mods[node.target]
            return "%s (%s.%s)" % (node.target, type(m).__module__.replace("torch.nn.modules.", "nn.")
                                   .split(".")[0] if type(m).__module__.startswith("torch.nn") else
                                   type(m).__module__, type(m).__name__)
        if node.op == "get_attr":
            return "get_attr %s" % node.target
        return _fn_desc(node)

    def emit(self, node, kind, fields, ins):
        d = OrderedDict(type=kind)
        d.update(fields)
        d["_in"] = list(ins)
        d["_node"] = node.name
        d["_frames"] = node.meta.get("vc_frames", ())
        d["_module"] = self.qualname(node)
        self.layers.append(d)
        return _Ref("L", len(self.layers) - 1)

    def tensor_meta(self, node):
        m = self.meta.get(node)
        return m if isinstance(m, _Meta) else None

    def shape(self, node):
        """Per-sample shape of a node's tensor output."""
        m = self.tensor_meta(node)
        return list(m.shape[1:])

    def rank(self, node):
        return len(self.tensor_meta(node).shape)

    def get(self, a, node):
        """The export value of an argument (a node or a constant)."""
        if isinstance(a, fx.Node):
            v = self.val.get(a)
            return v
        return a

    def concrete(self, a):
        """A python value: node arguments resolved to what they were in the sample run."""
        if isinstance(a, fx.Node):
            v = self.meta.get(a)
            if isinstance(v, _Meta):
                raise _Reject("a tensor is used where a constant is expected")
            return v
        if isinstance(a, (list, tuple)):
            return type(a)(self.concrete(x) for x in a)
        if isinstance(a, slice):
            return slice(self.concrete(a.start), self.concrete(a.stop), self.concrete(a.step))
        return a

    def tref(self, a, node, rank=None):
        """Argument a as a tensor reference (materialising Parameters); raises _Reject."""
        if not isinstance(a, fx.Node):
            raise _Reject("a constant (%r) is used where vramcalc needs a tensor" % (a,))
        v = self.val.get(a)
        if isinstance(v, _Ref):
            return v
        if isinstance(v, _Param):
            return self.param_layer(v, a, rank)
        if isinstance(v, _PosBias):
            return self.pos_bias_layer(v, a)
        if isinstance(v, _Bad):
            if v.reported:
                raise _Cascade()
            raise _Reject("uses %s (%s)" % (v.desc, v.reason))
        raise _Reject("argument %s is not a tensor the model file can name" % a.name)

    def param_layer(self, p, node, rank):
        if p.qualname in self.param_layers:
            return _Ref("L", self.param_layers[p.qualname])
        shape = list(p.shape)
        if rank is not None and len(shape) < rank:
            per = [1] * (rank - 1 - len(shape)) + shape
        elif len(shape) >= 2 and shape[0] == 1:
            per = shape[1:]
        elif rank is not None and len(shape) == rank:
            raise _Reject("parameter %s of shape %s has a leading dim that is not 1 "
                          "(it is not broadcast over the batch)" % (p.qualname, shape))
        else:
            per = shape
        if not per:
            raise _Reject("scalar parameter %s" % p.qualname)
        ref = self.emit(node, "Parameter", OrderedDict(shape=per), [])
        self.layers[-1]["_node"] = re.sub(r"\W", "_", p.qualname)
        self.layers[-1]["_module"] = p.qualname
        self.param_layers[p.qualname] = ref.key
        self.exported_params[id(p.tensor)] = p.tensor.numel()
        return ref

    def pos_bias_layer(self, v, node):
        """A _PosBias as the RelativePositionBias kind, when its chain is the one that kind runs:
        table [(2w-1)^2, h] gathered by N*N indices, view(N, N, h), permute(2, 0, 1),
        contiguous(), unsqueeze(0) -> [1, h, N, N]."""
        t = v.param.tensor
        chain = [o[0] for o in v.ops]
        if t.dim() != 2 or chain != ["index", "reshape", "permute", "contiguous", "unsqueeze"]:
            raise _Reject("a parameter indexed by a constant tensor, then %s (RelativePositionBias is "
                          "table[index].view(N, N, -1).permute(2, 0, 1).contiguous().unsqueeze(0))" % chain[1:])
        rows, h = t.shape
        nn_ = _prod(v.ops[0][1])
        n = int(round(nn_ ** 0.5))
        w = int(round(n ** 0.5))
        if n * n != nn_ or w * w != n or (2 * w - 1) ** 2 != rows or list(v.ops[2][2]) != [2, 0, 1] or \
                v.ops[4][1] != (1, h, n, n):
            raise _Reject("a parameter gathered by an index that is not a square window's relative positions")
        if v.param.qualname in self.param_layers:
            return _Ref("L", self.param_layers[v.param.qualname])
        ref = self.emit(node, "RelativePositionBias", OrderedDict(num_heads=h, window_size=w), [])
        self.layers[-1]["_node"] = re.sub(r"\W", "_", v.param.qualname)
        self.layers[-1]["_module"] = v.param.qualname
        self.param_layers[v.param.qualname] = ref.key
        self.exported_params[id(t)] = t.numel()
        return ref

    def dim_norm(self, d, rank, what="dim"):
        if not isinstance(d, int):
            raise _Reject("%s %r is not a constant int" % (what, d))
        dd = d + rank if d < 0 else d
        if dd < 0 or dd >= rank:
            raise _Reject("%s %d out of range" % (what, d))
        if dd == 0:
            raise _Reject("%s=0 is the batch dimension (vramcalc keeps dim 0 as the batch)" % what)
        return dd

    def arg(self, node, i, name, default=None):
        if len(node.args) > i:
            return node.args[i]
        return node.kwargs.get(name, default)

    def batched_args(self, node):
        """Does any argument of node carry model data (an input, a layer output, a parameter)?"""
        found = []
        fx.node.map_aggregate((node.args, node.kwargs), lambda a: found.append(a) if isinstance(a, fx.Node) else None)
        return any(isinstance(self.val.get(a), (_Ref, _Param, _Split, _Tuple, _PosBias)) for a in found)

    @staticmethod
    def has_tensor(v):
        if isinstance(v, _Meta):
            return True
        if isinstance(v, (list, tuple)):
            return any(_Exporter.has_tensor(x) for x in v)
        return False

    def used(self, node):
        return bool(self.users[node])

    # ---- main loop ----
    def run(self):
        for node in self.gm.graph.nodes:
            try:
                self.val[node] = self.visit(node)
            except _Cascade:
                self.val[node] = _Bad(node.name, "", reported=True)
            except _Reject as e:
                v = self.unknown(node, str(e)) if self.allow_unknown else None
                self.val[node] = v if v is not None else self.fail(node, str(e))
        if self.unmapped:
            return None
        return self.layers

    def unknown(self, node, reason):
        """--allow-unknown: node's tensor result(s) as a new tensor made from its first batched
        argument (materialise), marked approximate; None when that cannot be done."""
        args = []
        fx.node.map_aggregate((node.args, node.kwargs), lambda a: args.append(a) if isinstance(a, fx.Node) else None)
        # parameters handed to the unknown op (a weight passed to a function) keep their count:
        # each becomes a Parameter layer that nothing reads
        params = [self.val.get(a) for a in args if isinstance(self.val.get(a), _Param)]
        if node.op == "call_module":  # an unknown module, or a known one on a constant input
            params += [_Param("%s.%s" % (node.target, n), p) for n, p in self.mods[node.target].named_parameters()]
        for v in params:
            if v.qualname not in self.param_layers and id(v.tensor) not in self.exported_params:
                try:
                    self.param_layer(v, node, None)
                except _Reject:
                    pass
        src = next((a for a in args if self.is_batched(a) and not isinstance(self.val.get(a), _Param)
                    and self.tensor_meta(a) is not None), None)
        if src is None:
            meta = self.meta.get(node)
            if isinstance(meta, _Meta) and all(self.is_const(a) or isinstance(self.val.get(a), _Param) for a in args):
                # computed from parameters and constants only (a relative position bias): a
                # constant here; its memory is not per sample
                self.approx.append(("%s (unknown op on parameters; treated as a constant)" % self.describe(node),
                                    self.describe(node), self.where(node)))
                return _Bad(self.describe(node), "unknown op on parameters")
            return None
        meta = self.meta.get(node)
        metas = [meta] if isinstance(meta, _Meta) else list(meta) if isinstance(meta, (tuple, list)) else []
        if not metas or not all(isinstance(m, _Meta) and m.shape[:1] == (self.B,) for m in metas):
            return None
        ref = self.tref(src, node)
        what = "%s%s (unknown op; a new tensor of its output's shape, nothing saved)" % (
            self.describe(node), (": " + reason) if reason else "")
        outs = [self.materialise(node, ref, list(self.tensor_meta(src).shape[1:]), what, list(m.shape[1:]))
                for m in metas]
        return outs[0] if isinstance(meta, _Meta) else _Tuple(outs)

    def visit(self, node):
        if node.op == "placeholder":
            name = node.target
            idx = [n for n in self.gm.graph.nodes if n.op == "placeholder"].index(node)
            if idx >= len(self.inputs):
                if node.args:  # has a default
                    return node.args[0]
                raise _Reject("forward argument %r has no --input" % name)
            return _Ref("in", self.inputs[idx][0])
        if node.op == "get_attr":
            obj = self.gm
            for part in node.target.split("."):
                obj = getattr(obj, part)
            if isinstance(obj, nn.Parameter):
                return _Param(node.target, obj)
            if isinstance(obj, torch.Tensor):
                return _Bad("buffer %s" % node.target, "a buffer used directly in forward "
                            "(the model format has no buffer tensor)")
            return obj
        if node.op == "output":
            return self.visit_output(node)
        if node.op == "call_module":
            return self.visit_module(node)
        return self.visit_call(node)

    def visit_output(self, node):
        """The primary output: a dict's "out" (torchvision segmentation) or "logits" or first
        value, a tuple's (or namedtuple's) first element; the rest is said in the description."""
        out = node.args[0]
        rest = []
        while True:
            if isinstance(out, dict) and out:
                key = "out" if "out" in out else "logits" if "logits" in out else next(iter(out))
                rest += ["%r" % k for k in out if k != key]
                self.primary = (self.primary or "") + "[%r]" % key
                out = out[key]
            elif isinstance(out, (tuple, list)) and out:
                rest += ["element %d" % i for i in range(1, len(out))]
                self.primary = (self.primary or "") + "[0]"
                out = out[0]
            elif isinstance(out, fx.Node) and isinstance(self.val.get(out), _Tuple):
                items = self.val.get(out).items
                rest += ["element %d" % i for i in range(1, len(items))]
                self.primary = (self.primary or "") + "[0]"
                v = items[0]
                if not isinstance(v, _Ref):
                    raise _Reject("the model's first output is not a tensor the model file can name")
                out = v
                break
            else:
                break
        if rest:
            self.outputs_note = "the model returns more than one value; the loss is taken on output%s " \
                "(the primary one), the others (%s) are computed but not used" % (self.primary, ", ".join(rest))
        elif self.primary:
            self.outputs_note = "the model returns a container; the loss is taken on output%s" % self.primary
        ref = out if isinstance(out, _Ref) else self.tref(out, node)
        if not (ref.kind == "L" and ref.key == len(self.layers) - 1):
            self.emit(node, "Identity", OrderedDict(), [ref])
        return None

    primary = None

    # ---- modules ----
    def visit_module(self, node):
        m = self.mods[node.target]
        entry = _lookup(m)
        if entry is None:
            raise _Reject("no vramcalc kind for this module")
        kind, fields_fn = entry
        if kind == "MultiheadAttention":
            return self.mha(node, m)
        if kind in ("TransformerEncoder", "TransformerDecoder"):
            return self.tstack(node, m, kind)
        if kind in ("MultiscaleAttention", "MViTPool"):
            return self.mvit(node, m, kind, fields_fn)
        if kind == "Unflatten":
            x = self.tref(node.args[0], node)
            return self.emit(node, "Reshape", OrderedDict(shape=self.shape(node)), [x])
        fields = fields_fn(m, kind)
        nin = 2 if kind == "TransformerDecoderLayer" else 1
        pos = list(node.args)
        kw = dict(node.kwargs)
        while len(pos) < nin and kw:
            pos.append(kw.pop(next(iter(kw))))
        if kind == "Embedding" and pos and isinstance(pos[0], fx.Node) and isinstance(self.val.get(pos[0]), _Arange):
            return self.positional(node, m, self.val.get(pos[0]).n)
        ins = [self.tref(a, node) for a in pos[:nin]]
        extra = [a for a in pos[nin:] + list(kw.values()) if a is not None and a is not False]
        if extra:
            raise _Reject("called with extra arguments (masks, initial states) the model format cannot express")
        if kind == "Embedding":
            src = node.args[0]
            if self.tensor_meta(src).dtype not in (torch.int64, torch.int32):
                raise _Reject("Embedding input is not integer token ids")
        ref = self.module_call(node, m, kind, fields, ins)
        if kind == "Upsample":
            self.layers[-1]["_src"] = list(self.tensor_meta(pos[0]).shape[2:])
        if kind in ("RNN", "LSTM", "GRU") or (kind.startswith("Adaptive") and fields.get("return_indices")) or \
                (kind.startswith("MaxPool") and fields.get("return_indices")):
            return _Tuple([ref, _Bad("%s's second output" % kind, "only the first output of a "
                                     "multi-output module can be used")])
        return ref

    def positional(self, node, m, n):
        """Embedding(torch.arange(n)): a learned positional table read in order -- the
        format's Parameter [n, embedding_dim], exact when n is the whole table."""
        if n != m.num_embeddings:
            raise _Reject("positional Embedding(%d, ...) read over %d positions: a Parameter "
                          "[%d, %d] would count %d rows; export at the full length %d or write "
                          "it by hand" % (m.num_embeddings, n, n, m.embedding_dim, n, m.num_embeddings))
        if id(m) in self.module_layer:
            return _Ref("L", self.module_layer[id(m)])
        ref = self.emit(node, "Parameter", OrderedDict(shape=[n, m.embedding_dim]), [])
        self.module_layer[id(m)] = ref.key
        for p in m.parameters():
            self.exported_params[id(p)] = p.numel()
            self.param_owner.setdefault(id(p), ref.key)
        return ref

    def module_call(self, node, m, kind, fields, ins):
        has_params = any(True for _ in m.parameters(recurse=True))
        if id(m) in self.module_layer and has_params:
            first = self.module_layer[id(m)]
            if kind not in ("Linear", "Embedding"):
                raise _Reject("module %s is called more than once; shared weights can only be "
                              "expressed for Linear and Embedding (tie)" % node.target)
            fields = OrderedDict(fields)
            fields["tie"] = self.name_of(first)
            return self.emit(node, kind, fields, ins)
        w = getattr(m, "weight", None)
        if isinstance(w, nn.Parameter) and id(w) in self.param_owner:
            owner = self.param_owner[id(w)]
            if kind not in ("Linear", "Embedding") or self.layers[owner]["type"] not in ("Linear", "Embedding"):
                raise _Reject("its weight is shared with layer %s; only Linear/Embedding can tie" %
                              self.layers[owner]["_node"])
            fields = OrderedDict(fields)
            fields["tie"] = self.name_of(owner)
            ref = self.emit(node, kind, fields, ins)
            for p in m.parameters():
                if p is not w:
                    self.exported_params[id(p)] = p.numel()
            self.module_layer[id(m)] = ref.key
            return ref
        ref = self.emit(node, kind, fields, ins)
        self.module_layer.setdefault(id(m), ref.key)
        for p in m.parameters():
            self.exported_params[id(p)] = p.numel()
            self.param_owner.setdefault(id(p), ref.key)
        return ref

    def name_of(self, idx):
        self.layers[idx]["_named"] = True
        return self.layers[idx]["_node"]

    def mvit(self, node, m, kind, fields_fn):
        """MultiscaleAttention / Pool (torchvision/models/video/mvit.py) called as
        module(x, thw): thw (T, H, W) is fixed when the model is built; the sample run's value
        becomes the layer's "thw".  Returns (x, thw_out) as the module does, thw_out the pooled
        size the module returns (Pool: the pool's output; the attention: pool_q's)."""
        fields = OrderedDict(fields_fn(m, kind))
        thw = self.concrete(self.arg(node, 1, "thw"))
        if not (isinstance(thw, (list, tuple)) and len(thw) == 3 and all(isinstance(v, int) for v in thw)):
            raise _Reject("thw is not a constant (T, H, W)")
        fields["thw"] = list(thw)
        fields.move_to_end("thw", last=False)
        ref = self.module_call(node, m, kind, fields, [self.tref(node.args[0], node)])
        out = self.meta.get(node)
        out_thw = tuple(out[1]) if isinstance(out, (list, tuple)) and len(out) == 2 else None
        return _Tuple([ref, out_thw])

    def op_mvit_unsqueeze(self, node, op):
        """torchvision's _unsqueeze(x, target_dim, expand_dim) (models/video/mvit.py,
        torch.fx.wrap'ped): (x.unsqueeze(expand_dim) when x has target_dim - 1 dims, else x,
        x's dim)."""
        x = node.args[0]
        r = len(self.tensor_meta(x).shape)
        target, expand = self.concrete(node.args[1]), self.concrete(node.args[2])
        if r == target:
            return _Tuple([self.tref(x, node), r])
        if r != target - 1 or expand == 0:
            raise _Reject("_unsqueeze of a %d-dim tensor to %d dims at %d" % (r, target, expand))
        shape = list(self.meta.get(node)[0].shape[1:])
        return _Tuple([self.emit(node, "Reshape", OrderedDict(shape=shape), [self.tref(x, node)]), r])

    def op_mvit_squeeze(self, node, op):
        """torchvision's _squeeze(x, target_dim, expand_dim, tensor_dim): x.squeeze(expand_dim)
        when tensor_dim == target_dim - 1, else x."""
        x = node.args[0]
        if self.concrete(node.args[3]) != self.concrete(node.args[1]) - 1:
            return self.tref(x, node)
        return self._reshape_to(node, x)

    def mha(self, node, m):
        fields = _mha_fields(m)
        q = self.arg(node, 0, "query")
        k = self.arg(node, 1, "key")
        v = self.arg(node, 2, "value")
        for key, pos in (("key_padding_mask", 3), ("attn_mask", 5)):
            if self.arg(node, pos, key) is not None:
                raise _Reject("%s is not expressible in the model format" % key)
        need = self.concrete(self.arg(node, 4, "need_weights", True))
        avg = self.concrete(self.arg(node, 6, "average_attn_weights", True))
        if q is k and k is v:
            ins = [self.tref(q, node)]
        else:
            ins = [self.tref(q, node), self.tref(k, node), self.tref(v, node)]
        if not need:
            fields["need_weights"] = False
        if not avg:
            fields["average_attn_weights"] = False
        ref = self.module_call(node, m, "MultiheadAttention", fields, ins)
        return _Tuple([ref, _Bad("MultiheadAttention's attention weights",
                                 "only the attention output can be used")])

    def tstack(self, node, m, kind):
        layer_kind = kind + "Layer"
        extra = [a for a in list(node.args[1 if kind == "TransformerEncoder" else 2:]) + list(node.kwargs.values())
                 if a is not None and a is not False]
        if extra:
            raise _Reject("called with masks the model format cannot express")
        x = self.tref(node.args[0], node)
        mem = self.tref(node.args[1], node) if kind == "TransformerDecoder" else None
        cfgs = [_tlayer(l, layer_kind) for l in m.layers]
        ref = x
        i = 0
        while i < len(cfgs):
            j = i
            while j + 1 < len(cfgs) and cfgs[j + 1] == cfgs[i]:
                j += 1
            f = OrderedDict(cfgs[i])
            n = j - i + 1
            if n > 1 and mem is None:
                f["repeat"] = n
                ref = self.emit(node, layer_kind, f, [ref])
                i = j + 1
            else:
                ref = self.emit(node, layer_kind, f, [ref] if mem is None else [ref, mem])
                i += 1
        for p in m.layers.parameters():
            self.exported_params[id(p)] = p.numel()
        if m.norm is not None:
            entry = _lookup(m.norm)
            if entry is None or entry[1] is None:
                raise _Reject("final norm %s" % type(m.norm).__name__)
            ref = self.emit(node, entry[0], entry[1](m.norm, entry[0]), [ref])
            for p in m.norm.parameters():
                self.exported_params[id(p)] = p.numel()
        return ref

    # ---- functions and methods ----
    def visit_call(self, node):
        if node.op == "call_method":
            op = _METHODS.get(node.target)
        else:
            op = _FNS.get(node.target)
        if op is None and node.op == "call_function" and isinstance(node.target, type) and \
                issubclass(node.target, tuple):
            # a namedtuple built in forward (GoogLeNetOutputs, InceptionOutputs)
            return _Tuple([self.val.get(a) if isinstance(a, fx.Node) else a
                           for a in list(node.args) + list(node.kwargs.values())])
        if op is None:
            if not self.has_tensor(self.meta.get(node)):
                return self.meta.get(node)  # python arithmetic on sizes and constants
            args = []
            fx.node.map_aggregate((node.args, node.kwargs), lambda a: args.append(a) if isinstance(a, fx.Node) else None)
            if any(isinstance(self.val.get(a), _Bad) and self.val.get(a).reported for a in args):
                raise _Cascade()
            if not self.batched_args(node):
                return _Bad(_fn_desc(node), "a tensor computed from constants has no kind")
            raise _Reject("")
        a0 = node.args[0] if node.args else None
        if op == "getattr" and isinstance(a0, fx.Node):
            v = self.val.get(a0)
            if isinstance(v, _Bad) and v.reported:
                raise _Cascade()
            if isinstance(v, _Tuple) and node.args[1] in ("values", "indices"):  # torch.return_types
                return v.items[("values", "indices").index(node.args[1])]
        if op in _NONTENSOR_OPS:
            return self.meta.get(node)
        if op == "getitem":
            return self.getitem(node)
        if op == "arange":
            tm = self.tensor_meta(node)
            args = [self.concrete(a) for a in node.args]
            if len(tm.shape) == 1 and (len(args) == 1 or (len(args) >= 2 and args[0] == 0)) and \
                    node.kwargs.get("step", 1) == 1 and (len(args) < 3 or args[2] == 1):
                return _Arange(tm.shape[0])
            return _Bad("torch.arange", "a tensor computed from constants has no kind")
        if isinstance(a0, fx.Node) and isinstance(self.val.get(a0), _Arange) and \
                op in ("unsqueeze", "expand", "reshape", "to", "contiguous"):
            return self.val.get(a0)
        tm = self.tensor_meta(node)
        if isinstance(a0, fx.Node) and isinstance(self.val.get(a0), _PosBias) and tm is not None and \
                op in ("reshape", "unsqueeze", "permute", "contiguous"):
            v = self.val.get(a0)
            dims = [self.concrete(d) for d in node.args[1:]] if op == "permute" else []
            if op == "permute" and len(dims) == 1 and isinstance(dims[0], (list, tuple)):
                dims = list(dims[0])
            return _PosBias(v.param, v.ops + [(op, tuple(tm.shape), tuple(dims))])
        if isinstance(a0, fx.Node) and isinstance(self.val.get(a0), _Param) and tm is not None and \
                op in ("reshape", "unsqueeze", "squeeze") and tm.shape[:1] == (1,) and \
                _prod(tm.shape) == self.val.get(a0).tensor.numel():
            # a view of a parameter with a leading 1 (SSD's L2Norm: scale_weight.view(1, -1, 1, 1)):
            # the parameter, broadcast over the batch
            v = self.val.get(a0)
            return _Param(v.qualname, v.tensor, tm.shape)
        if tm is None and op not in ("chunk", "split", "unbind", "topk", "mvit_unsqueeze"):
            # a python-level computation on constants
            if isinstance(a0, fx.Node) and isinstance(self.val.get(a0), (_Ref, _Param)):
                raise _Reject("result is not a tensor")
            return self.meta.get(node)
        if tm is not None and tm.shape[:1] != (self.B,) and not self.batched_args(node):
            return _Bad(_fn_desc(node), "a tensor computed from constants (no batch dimension) has no kind")
        if tm is not None and tm.shape[:1] != (self.B,):
            raise _Reject("output shape %s has no batch dimension %d in front (does it move the "
                          "batch dim, or is it a batch_first=False module?)" % (list(tm.shape), self.B))
        if isinstance(a0, fx.Node) and tm is not None and tm.dtype == torch.int64 and \
                op in ("unsqueeze", "reshape", "squeeze", "expand", "contiguous") and self.topk_index(a0):
            return _IndexView(self.topk_index(a0))  # views of an index: no layer, no memory
        h = getattr(self, "op_" + op)
        return h(node, op)

    def topk_index(self, a):
        """The TopK indices layer that a (or the view a is) reads, else None."""
        v = self.val.get(a)
        if isinstance(v, _IndexView):
            return v.base
        if isinstance(v, _Ref) and v.kind == "L" and self.layers[v.key]["type"] == "TopK" and \
                self.layers[v.key].get("output") == "indices":
            return v
        return None

    # ---- arithmetic and pointwise ops ----
    # The model format has no pointwise kind with a free choice of what is saved; these ops
    # are written as the kind whose memory is the same: a new tensor of the output's shape
    # that saves nothing (Cat of one input), saves its input (LeakyReLU) or saves its output
    # (Sigmoid).  Each stand-in is counted in the file's description.

    def is_batched(self, a):
        return isinstance(a, fx.Node) and isinstance(self.val.get(a), (_Ref, _Param, _Split, _PosBias))

    def is_const(self, a):
        """A Python number or a tensor that does not depend on the model's input (a buffer,
        torch.ones(...), x.new_zeros(...), a comparison of buffers): no layer, no memory per sample."""
        if not isinstance(a, fx.Node):
            return True
        v = self.val.get(a)
        if isinstance(v, (_Bad, _Arange)):
            return not (isinstance(v, _Bad) and (v.reported or getattr(v, "batched", False)))
        return not isinstance(v, (_Ref, _Param, _Split, _Tuple, _Unbind, _PosBias))

    def note(self, what):
        self.notes[what] = self.notes.get(what, 0) + 1

    _STANDIN = {"none": ("Cat", "a new tensor, nothing saved"), "input": ("LeakyReLU", "saves its input"),
                "output": ("Sigmoid", "saves its output")}

    def pointwise(self, node, x, saves, what):
        """node's result as a pointwise op of batched argument x (see above)."""
        ref = self.tref(x, node)
        xs, os_ = self.tensor_meta(x).shape, self.tensor_meta(node).shape
        if xs != os_:
            return self.materialise(node, ref, list(xs[1:]), "%s (broadcast to a larger shape)" % what)
        kind, how = self._STANDIN[saves]
        self.note("%s as %s (%s)" % (what, kind, how))
        return self.emit(node, kind, OrderedDict(dim=1) if kind == "Cat" else OrderedDict(), [ref])

    def materialise(self, node, ref, in_shape, what, shape=None):
        """A new tensor of node's output shape made from ref (per-sample shape in_shape):
        flatten (a view), slice or repeat to the output's element count, one copy (Cat),
        reshape (a view).  Memory: the output, nothing saved -- an approximation."""
        out = list(shape if shape is not None else self.shape(node))
        n_in, n_out = _prod(in_shape), _prod(out)
        self.approx.append((what, self.describe(node), self.where(node)))
        cur = ref
        if len(in_shape) > 1:
            cur = self.emit(node, "Flatten", OrderedDict(), [cur])
        if n_out <= n_in:
            if n_out < n_in:
                cur = self.emit(node, "Slice", OrderedDict(dim=1, start=0, end=n_out), [cur])
            cur = self.emit(node, "Cat", OrderedDict(dim=1), [cur])
        else:
            k = -(-n_out // n_in)
            cur = self.emit(node, "Cat", OrderedDict(dim=1), [cur] * k)
            if k * n_in != n_out:
                cur = self.emit(node, "Slice", OrderedDict(dim=1, start=0, end=n_out), [cur])
        if out != [n_out]:
            cur = self.emit(node, "Reshape", OrderedDict(shape=out), [cur])
        return cur

    def _binary(self, node, op, kind):
        a = node.args[0] if node.args else node.kwargs.get("input")
        b = node.args[1] if len(node.args) > 1 else node.kwargs.get("other")
        alpha = node.kwargs.get("alpha", 1)
        r = self.rank(node)
        ab, bb = self.is_batched(a), self.is_batched(b)
        if ab and bb:
            if alpha != 1:
                raise _Reject("alpha != 1")
            if op in ("sub", "isub", "div", "idiv"):
                self.note("%s of two tensors as %s" % (op.lstrip("i"), kind))
            ra, rb = self.tref(a, node, r), self.tref(b, node, r)
            f = OrderedDict()
            if op in ("iadd", "imul", "isub", "idiv"):
                if isinstance(self.val.get(a), _Param):
                    raise _Reject("in-place op on a parameter")
                f["inplace"] = True
            return self.emit(node, kind, f, [ra, rb])
        if not (ab or bb):
            for t in (a, b):
                v = self.val.get(t) if isinstance(t, fx.Node) else None
                if isinstance(v, _Bad) and v.reported:
                    raise _Cascade()
            raise _Reject("no argument carries model data")
        x, other = (a, b) if ab else (b, a)
        if not self.is_const(other):
            v = self.val.get(other)
            if isinstance(v, _Bad) and v.reported:
                raise _Cascade()
            raise _Reject("the other operand is not a tensor the model file can name")
        if op in ("iadd", "imul", "isub", "idiv") and x is a and \
                self.tensor_meta(a).shape == self.tensor_meta(node).shape:
            return self.tref(a, node)  # in place with a constant: no new memory
        name = {"add": "add", "iadd": "add", "sub": "sub", "isub": "sub", "mul": "mul", "imul": "mul",
                "div": "div", "idiv": "div"}[op]
        what = "%s with a constant" % name
        if name == "div" and x is b:
            return self.pointwise(node, x, "output", "a constant divided by a tensor")
        return self.pointwise(node, x, "none", what)

    def op_add(self, node, op):
        return self._binary(node, op, "Add")

    op_iadd = op_add
    op_sub = op_add
    op_isub = op_add

    def op_mul(self, node, op):
        return self._binary(node, op, "Mul")

    op_imul = op_mul
    op_div = op_mul
    op_idiv = op_mul

    def op_neg(self, node, op):
        return self.pointwise(node, node.args[0], "none", "neg")

    def op_pow(self, node, op):
        a, b = node.args[0], node.args[1]
        if self.is_batched(a) and self.is_const(b):
            return self.pointwise(node, a, "input", "pow")
        if self.is_batched(b) and self.is_const(a):
            return self.pointwise(node, b, "output", "constant ** tensor")
        raise _Reject("pow of two tensors")

    def _first_batched(self, node):
        for a in list(node.args) + list(node.kwargs.values()):
            if self.is_batched(a):
                return a
        for a in list(node.args) + list(node.kwargs.values()):
            v = self.val.get(a) if isinstance(a, fx.Node) else None
            if isinstance(v, _Bad) and v.reported:
                raise _Cascade()
        raise _Reject("no argument carries model data")

    def op_saves_output(self, node, op):
        return self.pointwise(node, self._first_batched(node), "output", _fn_desc(node))

    def op_saves_input(self, node, op):
        return self.pointwise(node, self._first_batched(node), "input", _fn_desc(node))

    def op_nothing_saved(self, node, op):
        return self.pointwise(node, self._first_batched(node), "none", _fn_desc(node))

    def op_inplace(self, node, op):
        return self.tref(node.args[0], node)

    def op_like(self, node, op):
        return _Bad(_fn_desc(node), "a new tensor that does not depend on the input's values")

    def op_compare(self, node, op):
        """A bool tensor computed from the input: usable as the mask of masked_fill / where
        (not counted: 1 byte per element), nothing else."""
        b = _Bad(_fn_desc(node), "a bool mask computed from the input can only be a masked_fill/where condition")
        b.batched = True
        return b

    def op_masked_fill(self, node, op):
        x, mask = node.args[0], self.arg(node, 1, "mask")
        if not self.is_batched(x):
            raise _Reject("masked_fill of a constant by a computed mask")
        if not self.is_const(mask):
            self.note("masked_fill with a mask computed from the input (its bool mask not counted)")
        return self.pointwise(node, x, "none", "masked_fill")

    def op_masked_fill_(self, node, op):
        return self.tref(node.args[0], node)

    def op_where(self, node, op):
        c, a, b = (self.arg(node, i, n) for i, n in enumerate(("condition", "input", "other")))
        ts = [t for t in (a, b) if self.is_batched(t)]
        if not ts:
            raise _Reject("where() of constants with a computed condition")
        if not self.is_const(c):
            self.note("where with a condition computed from the input (its bool mask not counted)")
        if len(ts) == 2:
            r = self.rank(node)
            self.note("where of two tensors as Add")
            return self.emit(node, "Add", OrderedDict(), [self.tref(a, node, r), self.tref(b, node, r)])
        return self.pointwise(node, ts[0], "none", "where")

    def op_stack(self, node, op):
        ts = self.arg(node, 0, "tensors")
        r = self.rank(node)
        dim = self.dim_norm(self.concrete(self.arg(node, 1, "dim", 0)), r)
        refs = []
        for t in ts:
            sh = list(self.tensor_meta(t).shape[1:])
            sh.insert(dim - 1, 1)
            refs.append(self.emit(node, "Reshape", OrderedDict(shape=sh), [self.tref(t, node)]))
        return self.emit(node, "Cat", OrderedDict(dim=dim), refs)

    def op_unbind(self, node, op):
        x = node.args[0]
        self.tref(x, node)
        dim = self.dim_norm(self.concrete(self.arg(node, 1, "dim", 0)), self.rank(x))
        return _Unbind(self.tref(x, node), dim)

    def op_pad(self, node, op):
        return self._pad(node, node.args[0], list(self.concrete(self.arg(node, 1, "pad"))))

    def _pad(self, node, x, pad):
        """F.pad: a new tensor of the padded shape that saves nothing; written as Cat of the
        input and Slices of it (views) of the pad widths, one Cat per padded dimension.  With
        no positive width, constant_pad_nd returns a clone of the (narrowed) input
        (aten/src/ATen/native/PadNd.cpp constant_pad_nd: all_pads_non_positive): a Cat of one
        input, the same memory."""
        ref = self.tref(x, node)
        shape = list(self.tensor_meta(x).shape)
        r = len(shape)
        grown = False
        for i in range(0, len(pad), 2):
            d = r - 1 - i // 2
            lo, hi = pad[i], pad[i + 1] if i + 1 < len(pad) else 0
            if lo == 0 and hi == 0:
                continue
            if d == 0:
                raise _Reject("padding the batch dimension")
            if lo < 0 or hi < 0:
                ref = self.emit(node, "Slice", OrderedDict(dim=d, start=max(-lo, 0),
                                                           end=shape[d] - max(-hi, 0)), [ref])
                shape[d] -= max(-lo, 0) + max(-hi, 0)
                lo, hi = max(lo, 0), max(hi, 0)
                if lo == 0 and hi == 0:
                    continue
            if lo > shape[d] or hi > shape[d]:
                return self.materialise(node, self.tref(x, node), list(self.tensor_meta(x).shape[1:]),
                                        "pad wider than the tensor")
            parts = []
            if lo:
                parts.append(self.emit(node, "Slice", OrderedDict(dim=d, start=0, end=lo), [ref]))
            parts.append(ref)
            if hi:
                parts.append(self.emit(node, "Slice", OrderedDict(dim=d, start=0, end=hi), [ref]))
            ref = self.emit(node, "Cat", OrderedDict(dim=d), parts)
            shape[d] += lo + hi
            grown = True
        if not grown:
            self.note("F.pad without positive widths as Cat of one input (constant_pad_nd clones)")
            return self.emit(node, "Cat", OrderedDict(dim=1), [ref])
        self.note("F.pad as Cat of the input and slices of it (backward: one extra input-size gradient per side)")
        return ref

    def op_normalize(self, node, op):
        """F.normalize(x, p, dim) (torch/nn/functional.py normalize): denom = x.norm(p, dim,
        keepdim=True).clamp_min(eps).expand_as(x); x / denom.  Written as Mean over dim with
        keepdim (the norm: a new reduced tensor; what it saves, x and its result, the ops after
        it keep too), LeakyReLU (clamp_min keeps its input), Mul (the division keeps both)."""
        x = node.args[0]
        ref = self.tref(x, node)
        dim = self.dim_norm(self.concrete(self.arg(node, 2, "dim", 1)), self.rank(x))
        n = self.emit(node, "Mean", OrderedDict(dim=dim, keepdim=True), [ref])
        self.note("the norm of F.normalize as Mean (a new reduced tensor)")
        c = self.emit(node, "LeakyReLU", OrderedDict(), [n])
        self.note("clamp_min of F.normalize as LeakyReLU (saves its input)")
        return self.emit(node, "Mul", OrderedDict(), [ref, c])

    def op_patch_merging_pad(self, node, op):
        """torchvision's _patch_merging_pad (torchvision/models/swin_transformer.py, registered
        with torch.fx.wrap), as it runs: F.pad(x, (0, 0, 0, W % 2, 0, H % 2)); x[..., 0::2, 0::2, :],
        x[..., 1::2, 0::2, :], x[..., 0::2, 1::2, :], x[..., 1::2, 1::2, :] (two strided slices
        each, views); torch.cat(.., -1)."""
        x = node.args[0]
        shape = list(self.tensor_meta(x).shape)
        r = len(shape)
        if r < 4:
            raise _Reject("_patch_merging_pad of a tensor without [H, W, C] per sample")
        H, W = shape[-3], shape[-2]
        ref = self._pad(node, x, [0, 0, 0, W % 2, 0, H % 2])
        Hp, Wp = H + H % 2, W + W % 2
        parts = []
        for a, b in ((0, 0), (1, 0), (0, 1), (1, 1)):
            s = self.emit(node, "Slice", OrderedDict(dim=r - 3, start=a, step=2), [ref])
            parts.append(self.emit(node, "Slice", OrderedDict(dim=r - 2, start=b, step=2), [s]))
        return self.emit(node, "Cat", OrderedDict(dim=r - 1), parts)

    def op_einsum(self, node, op):
        """Two-operand einsum as torch.einsum computes it: permute and reshape each operand
        to [batch, rows, contracted] and [batch, contracted, cols], bmm, reshape, permute."""
        eq = self.concrete(node.args[0]).replace(" ", "")
        ops_ = list(node.args[1:])
        if len(ops_) == 1 and isinstance(ops_[0], (list, tuple)):
            ops_ = list(ops_[0])
        if "->" not in eq or "." in eq or len(ops_) != 2:
            raise _Reject("einsum %r: only two operands with an explicit '->' output" % eq)
        ins, out = eq.split("->")
        sa, sb = ins.split(",")
        a, b = ops_
        if not (sa[0] == sb[0] == out[0]):
            raise _Reject("einsum %r: the first index must be the batch in every operand" % eq)
        size = {}
        for sub, t in ((sa, a), (sb, b)):
            for c, n in zip(sub, self.tensor_meta(t).shape):
                size[c] = n
        batch = [c for c in out if c in sa and c in sb]
        left = [c for c in out if c in sa and c not in sb]
        right = [c for c in out if c in sb and c not in sa]
        contr = [c for c in sa if c in sb and c not in out]
        if any(c not in out and c not in sb for c in sa) or any(c not in out and c not in sa for c in sb):
            raise _Reject("einsum %r sums an index of one operand" % eq)

        def arrange(t, sub, order, groups):
            ref = self.tref(t, node)
            perm = [sub.index(c) for c in order]
            if perm != list(range(len(perm))):
                ref = self.emit(node, "Permute", OrderedDict(dims=perm), [ref])
            shape = [_prod(size[c] for c in g) for g in groups]
            if [size[c] for c in order[1:]] != shape:
                ref = self.emit(node, "Reshape", OrderedDict(shape=shape), [ref])
            return ref
        ra = arrange(a, sa, batch + left + contr, [batch[1:], left, contr])
        rb = arrange(b, sb, batch + contr + right, [batch[1:], contr, right])
        ref = self.emit(node, "Matmul", OrderedDict(), [ra, rb])
        order = batch + left + right
        shape = [size[c] for c in order[1:]]
        if shape != [_prod(size[c] for c in batch[1:]), _prod(size[c] for c in left), _prod(size[c] for c in right)]:
            ref = self.emit(node, "Reshape", OrderedDict(shape=shape), [ref])
        perm = [order.index(c) for c in out]
        if perm != list(range(len(perm))):
            ref = self.emit(node, "Permute", OrderedDict(dims=perm), [ref])
        return ref

    def _repeat_along(self, node, ref, dim, n):
        return self.emit(node, "Cat", OrderedDict(dim=dim), [ref] * n)

    def op_repeat_interleave(self, node, op):
        x = node.args[0]
        reps = self.concrete(self.arg(node, 1, "repeats"))
        dim = self.arg(node, 2, "dim")
        if not isinstance(reps, int) or dim is None:
            raise _Reject("repeat_interleave with tensor repeats or without dim")
        dim = self.dim_norm(self.concrete(dim), self.rank(x))
        self.note("repeat_interleave as Cat of copies (same memory, other order)")
        return self._repeat_along(node, self.tref(x, node), dim, reps)

    def op_repeat(self, node, op):
        x = node.args[0]
        reps = [self.concrete(v) for v in (node.args[1:] if len(node.args) > 2 or not
                                           isinstance(node.args[1], (list, tuple)) else node.args[1])]
        r = self.rank(node)
        reps = [1] * (r - len(reps)) + list(reps)
        if len(reps) != self.rank(x) or reps[0] != 1:
            raise _Reject("repeat over the batch or adding dimensions")
        ref = self.tref(x, node)
        for d, n in enumerate(reps):
            if n > 1:
                ref = self._repeat_along(node, ref, d, n)
        return ref

    def op_sum(self, node, op):
        x = self.tref(node.args[0], node)
        dim = self.concrete(self.arg(node, 1, "dim", None))
        keep = self.concrete(self.arg(node, 2, "keepdim", False))
        if dim is None:
            raise _Reject("sum over all dims (the batch included)")
        r = self.rank(node.args[0])
        dims = [self.dim_norm(d, r) for d in (dim if isinstance(dim, (list, tuple)) else [dim])]
        self.note("sum as Mean (same memory)")
        return self.emit(node, "Mean", _fields([("dim", dims[0] if len(dims) == 1 else dims, _REQ),
                                                ("keepdim", bool(keep), False)]), [x])

    def op_std(self, node, op):
        x = node.args[0]
        dim = self.concrete(self.arg(node, 1, "dim", None))
        if dim is None or isinstance(dim, bool):
            raise _Reject("std/var over all dims")
        keep = self.concrete(node.kwargs.get("keepdim", node.args[3] if len(node.args) > 3 else False))
        r = self.rank(x)
        dims = [self.dim_norm(d, r) for d in (dim if isinstance(dim, (list, tuple)) else [dim])]
        self.approx.append(("std/var as Mean (its saved input not counted)", self.describe(node), self.where(node)))
        return self.emit(node, "Mean", _fields([("dim", dims[0] if len(dims) == 1 else dims, _REQ),
                                                ("keepdim", bool(keep), False)]), [self.tref(x, node)])

    def op_gather(self, node, op):
        x = node.args[0]
        dim = self.concrete(self.arg(node, 1, "dim"))
        index = self.arg(node, 2, "index")
        base = self.topk_index(index) if isinstance(index, fx.Node) else None
        if base is not None and not node.kwargs.get("sparse_grad"):
            r = self.rank(x)
            dim = self.dim_norm(dim, r)
            f = [("dim", dim - r, _REQ)]
            if isinstance(self.val.get(index), _IndexView):  # the shape gather sees the view as
                f.append(("shape", list(self.tensor_meta(index).shape[1:]), _REQ))
            return self.emit(node, "Gather", _fields(f), [self.tref(x, node), base])
        return self.materialise(node, self.tref(x, node), list(self.tensor_meta(x).shape[1:]),
                                "gather (its int64 index not counted)")

    def op_topk(self, node, op):
        """torch.topk / Tensor.topk -> (values, indices): a TopK layer per result the code
        uses (`.values` / `[0]`, `.indices` / `[1]`); the kind keeps the indices for the
        values' backward (derivatives.yaml topk: value_selecting_reduction_backward)."""
        x = node.args[0] if node.args else node.kwargs.get("input")
        k = self.concrete(self.arg(node, 1, "k"))
        r = self.rank(x)
        dim = self.dim_norm(self.concrete(self.arg(node, 2, "dim", -1)), r)
        largest = bool(self.concrete(self.arg(node, 3, "largest", True)))
        sorted_ = bool(self.concrete(self.arg(node, 4, "sorted", True)))
        want = set()
        for u in self.users[node]:
            if u.op == "call_function" and u.target is operator.getitem and isinstance(u.args[1], int):
                if self.users[u]:  # `v, i = x.topk(k)` with v never read: no values layer
                    want.add(u.args[1])
            elif u.op == "call_function" and u.target is getattr and u.args[1] in ("values", "indices"):
                want.add(("values", "indices").index(u.args[1]))
            else:
                want.update((0, 1))
        ref = self.tref(x, node)
        out = []
        for i, name in enumerate(("values", "indices")):
            out.append(self.emit(node, "TopK", _fields([("k", k, _REQ), ("dim", dim - r, -1), ("largest", largest, True),
                                                        ("sorted", sorted_, True), ("output", name, "values")]), [ref])
                       if i in want else _Bad("topk's unused %s" % name, "not used"))
        if want == {0, 1}:
            self.approx.append(("topk with both results used: two TopK layers (the second result allocated twice)",
                                self.describe(node), self.where(node)))
        return _Tuple(out)

    def op_cat(self, node, op):
        ts = self.arg(node, 0, "tensors")
        dim = self.concrete(self.arg(node, 1, "dim", 0))
        r = self.rank(node)
        dim = self.dim_norm(dim, r)
        refs = [self.tref(t, node, r) for t in ts]
        return self.emit(node, "Cat", OrderedDict(dim=dim), refs)

    def op_flatten(self, node, op):
        x = self.tref(node.args[0], node)
        r = self.rank(node.args[0])
        s = self.concrete(self.arg(node, 1, "start_dim", 0))
        e = self.concrete(self.arg(node, 2, "end_dim", -1))
        s = s + r if s < 0 else s
        e = e + r if e < 0 else e
        if s == 0:
            raise _Reject("flatten from dim 0 merges the batch dimension")
        if s >= e:
            return x
        return self.emit(node, "Flatten", _fields([("start_dim", s, 1), ("end_dim", e if e != r - 1 else -1, -1)]),
                         [x])

    def _act(self, node, kind, inplace_pos=None, extra=()):
        x = self.tref(node.args[0] if node.args else node.kwargs.get("input"), node)
        f = OrderedDict()
        for key, pos, default in extra:
            v = self.concrete(self.arg(node, pos, key, default))
            if v != default:
                f[key] = v
        if inplace_pos is not None:
            ip = self.concrete(self.arg(node, inplace_pos, "inplace", False))
            if ip:
                f["inplace"] = True
        return self.emit(node, kind, f, [x])

    def op_relu(self, node, op):
        if node.op == "call_function" and node.target is F.relu:
            return self._act(node, "ReLU", 1)
        return self._act(node, "ReLU")

    def op_relu_(self, node, op):
        x = self.tref(node.args[0], node)
        return self.emit(node, "ReLU", OrderedDict(inplace=True), [x])

    def op_relu6(self, node, op):
        return self._act(node, "ReLU6", 1)

    def op_leaky_relu(self, node, op):
        return self._act(node, "LeakyReLU", 2, [("negative_slope", 1, 0.01)])

    def op_elu(self, node, op):
        return self._act(node, "ELU", 2, [("alpha", 1, 1.0)])

    def op_gelu(self, node, op):
        return self._act(node, "GELU", None, [("approximate", 1, "none")])

    def op_silu(self, node, op):
        return self._act(node, "SiLU", 1)

    def op_mish(self, node, op):
        return self._act(node, "Mish", 1)

    def op_hardswish(self, node, op):
        return self._act(node, "Hardswish", 1)

    def op_hardsigmoid(self, node, op):
        return self._act(node, "Hardsigmoid", 1)

    def op_sigmoid(self, node, op):
        return self._act(node, "Sigmoid")

    def op_tanh(self, node, op):
        return self._act(node, "Tanh")

    def op_square(self, node, op):  # torch.square / Tensor.square: pow(x, 2), layers/activation.c Square
        return self._act(node, "Square")

    def _softmax(self, node, kind):
        x = self.tref(node.args[0], node)
        dim = self.concrete(self.arg(node, 1, "dim", None))
        if dim is None:
            raise _Reject("softmax without dim")
        dt = node.kwargs.get("dtype", node.args[3] if len(node.args) > 3 else None)
        if dt is not None:
            raise _Reject("softmax with dtype")
        return self.emit(node, kind, OrderedDict(dim=self.dim_norm(dim, self.rank(node))), [x])

    def op_softmax(self, node, op):
        return self._softmax(node, "Softmax")

    def op_log_softmax(self, node, op):
        return self._softmax(node, "LogSoftmax")

    def _dropout(self, node, kind):
        x = self.tref(node.args[0], node)
        p = self.concrete(self.arg(node, 1, "p", 0.5))
        training = self.concrete(self.arg(node, 2, "training", True))
        inplace = self.concrete(self.arg(node, 3, "inplace", False))
        if not training:
            return x
        return self.emit(node, kind, _fields([("p", p, 0.5), ("inplace", inplace, False)]), [x])

    def op_dropout(self, node, op):
        return self._dropout(node, "Dropout")

    def op_dropout2d(self, node, op):
        return self._dropout(node, "Dropout2d")

    def _adaptive(self, node, kind):
        x = self.tref(node.args[0], node)
        os_ = self.concrete(self.arg(node, 1, "output_size"))
        if self.concrete(self.arg(node, 2, "return_indices", False)):
            raise _Reject("return_indices")
        return self.emit(node, kind, OrderedDict(output_size=_one(os_)), [x])

    def op_adaptive_avg_pool1d(self, node, op):
        return self._adaptive(node, "AdaptiveAvgPool1d")

    def op_adaptive_avg_pool2d(self, node, op):
        return self._adaptive(node, "AdaptiveAvgPool2d")

    def op_adaptive_avg_pool3d(self, node, op):
        return self._adaptive(node, "AdaptiveAvgPool3d")

    def op_adaptive_max_pool1d(self, node, op):
        return self._adaptive(node, "AdaptiveMaxPool1d")

    def op_adaptive_max_pool2d(self, node, op):
        return self._adaptive(node, "AdaptiveMaxPool2d")

    def _maxpool(self, node, kind):
        x = self.tref(node.args[0], node)
        ks = _one(self.concrete(self.arg(node, 1, "kernel_size")))
        st = self.concrete(self.arg(node, 2, "stride", None))
        st = ks if st is None or st == [] or st == () else _one(st)
        if self.concrete(self.arg(node, 6, "return_indices", False)):
            raise _Reject("return_indices")
        f = _fields([("kernel_size", ks, _REQ), ("stride", st, ks),
                     ("padding", _one(self.concrete(self.arg(node, 3, "padding", 0))), 0),
                     ("dilation", _one(self.concrete(self.arg(node, 4, "dilation", 1))), 1),
                     ("ceil_mode", self.concrete(self.arg(node, 5, "ceil_mode", False)), False)])
        return self.emit(node, kind, f, [x])

    def op_max_pool1d(self, node, op):
        return self._maxpool(node, "MaxPool1d")

    def op_max_pool2d(self, node, op):
        return self._maxpool(node, "MaxPool2d")

    def op_max_pool3d(self, node, op):
        return self._maxpool(node, "MaxPool3d")

    def _avgpool(self, node, kind):
        x = self.tref(node.args[0], node)
        ks = _one(self.concrete(self.arg(node, 1, "kernel_size")))
        st = self.concrete(self.arg(node, 2, "stride", None))
        st = ks if st is None or st == [] or st == () else _one(st)
        pairs = [("kernel_size", ks, _REQ), ("stride", st, ks),
                 ("padding", _one(self.concrete(self.arg(node, 3, "padding", 0))), 0),
                 ("ceil_mode", self.concrete(self.arg(node, 4, "ceil_mode", False)), False),
                 ("count_include_pad", self.concrete(self.arg(node, 5, "count_include_pad", True)), True)]
        if kind != "AvgPool1d":
            pairs.append(("divisor_override", self.concrete(self.arg(node, 6, "divisor_override", None)), None))
        return self.emit(node, kind, _fields(pairs), [x])

    def op_avg_pool1d(self, node, op):
        return self._avgpool(node, "AvgPool1d")

    def op_avg_pool2d(self, node, op):
        return self._avgpool(node, "AvgPool2d")

    def op_avg_pool3d(self, node, op):
        return self._avgpool(node, "AvgPool3d")

    def op_interpolate(self, node, op):
        x = self.tref(node.args[0], node)
        size = self.concrete(self.arg(node, 1, "size", None))
        sf = self.concrete(self.arg(node, 2, "scale_factor", None))
        mode = self.concrete(self.arg(node, 3, "mode", "nearest"))
        ac = self.concrete(self.arg(node, 4, "align_corners", None))
        rsf = self.concrete(self.arg(node, 5, "recompute_scale_factor", None))
        if self.concrete(self.arg(node, 6, "antialias", False)):
            raise _Reject("antialias")
        f = _fields([("size", _one(size) if size is not None else None, None),
                     ("scale_factor", _one(sf) if sf is not None else None, None),
                     ("mode", mode, "nearest"), ("align_corners", ac, None),
                     ("recompute_scale_factor", rsf, None)])
        ref = self.emit(node, "Upsample", f, [x])
        self.layers[-1]["_src"] = list(self.tensor_meta(node.args[0]).shape[2:])
        return ref

    def op_pixel_shuffle(self, node, op):
        x = self.tref(node.args[0], node)
        return self.emit(node, "PixelShuffle",
                         OrderedDict(upscale_factor=self.concrete(self.arg(node, 1, "upscale_factor"))), [x])

    def _reshape_to(self, node, src):
        x = self.tref(src, node)
        if self.tensor_meta(src) is not None and list(self.tensor_meta(src).shape) == list(self.tensor_meta(node).shape):
            return x
        return self.emit(node, "Reshape", OrderedDict(shape=self.shape(node)), [x])

    def op_reshape(self, node, op):
        return self._reshape_to(node, node.args[0])

    op_squeeze = op_reshape
    op_unsqueeze = op_reshape

    def op_permute(self, node, op):
        x = self.tref(node.args[0], node)
        if node.op == "call_method":
            dims = list(node.args[1:]) if len(node.args) > 2 or not isinstance(node.args[1], (list, tuple)) \
                else list(node.args[1])
            if not dims:
                dims = list(node.kwargs.get("dims", []))
        else:
            dims = list(self.arg(node, 1, "dims"))
        dims = [self.concrete(d) for d in dims]
        r = self.rank(node)
        dims = [d + r if d < 0 else d for d in dims]
        if dims[0] != 0:
            raise _Reject("permute moves the batch dimension")
        if dims == list(range(r)):
            return x
        return self.emit(node, "Permute", OrderedDict(dims=dims), [x])

    def op_transpose(self, node, op):
        x = self.tref(node.args[0], node)
        r = self.rank(node)
        d0 = self.dim_norm(self.concrete(self.arg(node, 1, "dim0")), r, "dim0")
        d1 = self.dim_norm(self.concrete(self.arg(node, 2, "dim1")), r, "dim1")
        if d0 == d1:
            return x
        return self.emit(node, "Transpose", OrderedDict(dim0=min(d0, d1), dim1=max(d0, d1)), [x])

    def op_contiguous(self, node, op):
        return self.tref(node.args[0], node)

    def op_to(self, node, op):
        src = node.args[0]
        sm = self.tensor_meta(src)
        if sm is not None and sm.dtype == self.tensor_meta(node).dtype:
            return self.tref(src, node)
        self.approx.append(("dtype conversion %s -> %s as a same-size copy" % (sm.dtype, self.tensor_meta(node).dtype),
                            self.describe(node), self.where(node)))
        return self.emit(node, "Cat", OrderedDict(dim=1), [self.tref(src, node)])

    def op_expand(self, node, op):
        src = node.args[0]
        v = self.val.get(src)
        if isinstance(v, _Param):
            return self.tref(src, node, self.rank(node))
        sm = self.tensor_meta(src)
        if sm is not None and sm.shape == self.tensor_meta(node).shape:
            return self.tref(src, node)
        out = self.tensor_meta(node).shape
        if sm is None or len(sm.shape) != len(out) or sm.shape[0] != out[0]:
            raise _Reject("expand that adds dimensions")
        self.approx.append(("expand of a batched tensor as a copy (PyTorch makes a view; the next "
                            "reshape or contiguous copies it)", self.describe(node), self.where(node)))
        ref = self.tref(src, node)
        for d, (a, b) in enumerate(zip(sm.shape, out)):
            if a == 1 and b > 1:
                ref = self._repeat_along(node, ref, d, b)
        return ref

    def op_mean(self, node, op):
        x = self.tref(node.args[0], node)
        dim = self.concrete(self.arg(node, 1, "dim", None))
        keep = self.concrete(self.arg(node, 2, "keepdim", False))
        if node.kwargs.get("dtype") is not None:
            raise _Reject("mean with dtype")
        if dim is None:
            raise _Reject("mean over all dims (the batch included)")
        r = self.rank(node.args[0])
        if isinstance(dim, (list, tuple)):
            dims = [self.dim_norm(d, r) for d in dim]
            dv = dims[0] if len(dims) == 1 else dims
        else:
            dv = self.dim_norm(dim, r)
        return self.emit(node, "Mean", _fields([("dim", dv, _REQ), ("keepdim", bool(keep), False)]), [x])

    def _own_param(self, a, node):
        """A weight argument of a functional call: a parameter read by get_attr (or None)."""
        if a is None:
            return None
        v = self.val.get(a) if isinstance(a, fx.Node) else None
        if not isinstance(v, _Param):
            raise _Reject("weight argument is not a parameter of the model")
        if v.qualname in self.param_layers:
            raise _Reject("parameter %s is used twice" % v.qualname)
        self.exported_params[id(v.tensor)] = v.tensor.numel()
        return v.tensor

    def op_layer_norm(self, node, op):
        x = self.tref(node.args[0], node)
        ns = list(self.concrete(self.arg(node, 1, "normalized_shape")))
        w = self._own_param(self.arg(node, 2, "weight"), node)
        b = self._own_param(self.arg(node, 3, "bias"), node)
        eps = self.concrete(self.arg(node, 4, "eps", 1e-5))
        if (w is None) != (b is None) and b is not None:
            raise _Reject("bias without weight")
        f = _fields([("normalized_shape", ns[0] if len(ns) == 1 else ns, _REQ), ("eps", eps, 1e-5),
                     ("elementwise_affine", w is not None, True)])
        if w is not None and b is None:
            f["bias"] = False
        return self.emit(node, "LayerNorm", f, [x])

    def op_linear(self, node, op):
        x = self.tref(node.args[0], node)
        w = self._own_param(self.arg(node, 1, "weight"), node)
        b = self._own_param(self.arg(node, 2, "bias"), node)
        f = _fields([("in_features", w.shape[1], _REQ), ("out_features", w.shape[0], _REQ),
                     ("bias", b is not None, True)])
        return self.emit(node, "Linear", f, [x])

    def op_matmul(self, node, op):
        a = self.tref(node.args[0], node)
        b = self.tref(node.args[1], node)
        return self.emit(node, "Matmul", OrderedDict(), [a, b])

    def op_sdpa(self, node, op):
        q, k, v = (self.tref(self.arg(node, i, n), node) for i, n in enumerate(("query", "key", "value")))
        if self.arg(node, 3, "attn_mask") is not None:
            raise _Reject("attn_mask is not expressible in the model format")
        f = _fields([("dropout_p", float(self.concrete(self.arg(node, 4, "dropout_p", 0.0))), 0.0),
                     ("is_causal", bool(self.concrete(self.arg(node, 5, "is_causal", False))), False),
                     ("scale", self.concrete(node.kwargs.get("scale")), None)])
        return self.emit(node, "ScaledDotProductAttention", f, [q, k, v])

    def op_chunk(self, node, op):
        base = self.tref(node.args[0], node)
        parts = self.meta.get(node)
        dim = self.concrete(self.arg(node, 2, "dim", 0))
        r = self.rank(node.args[0])
        dim = self.dim_norm(dim, r)
        bounds, s = [], 0
        for p in parts:
            bounds.append((s, s + p.shape[dim]))
            s += p.shape[dim]
        return _Split(base, dim, bounds)

    op_split = op_chunk

    def getitem(self, node):
        src, idx = node.args[0], node.args[1]
        v = self.val.get(src) if isinstance(src, fx.Node) else src
        if isinstance(v, _Tuple):
            i = self.concrete(idx)
            return v.items[i]
        if isinstance(v, _Unbind):
            i = self.concrete(idx)
            if not isinstance(i, int):
                raise _Reject("slicing the result of unbind")
            return self.emit(node, "Select", OrderedDict(dim=v.dim, index=i), [v.base])
        if isinstance(v, _Split):
            i = self.concrete(idx)
            if not isinstance(i, int):
                raise _Reject("slicing the result of chunk/split")
            s, e = v.bounds[i]
            full = self.tensor_meta(src.args[0]).shape[v.dim] if isinstance(src.args[0], fx.Node) else None
            if s == 0 and e == full:
                return v.base
            return self.emit(node, "Slice", OrderedDict(dim=v.dim, start=s, end=e), [v.base])
        if isinstance(v, _Bad):
            if v.reported:
                raise _Cascade()
            return v  # still lazy: an error only if something uses it
        if isinstance(v, _Param) and isinstance(idx, fx.Node) and self.is_const(idx) and \
                isinstance(self.meta.get(idx), _Meta) and self.meta.get(idx).dtype == torch.int64:
            return _PosBias(v, [("index", tuple(self.meta.get(idx).shape))])
        if isinstance(v, (_Ref, _Param)):
            return self.tensor_index(node, src, self.concrete(idx))
        # python containers (torch.Size, lists, tuples of constants)
        return self.meta.get(node)

    def tensor_index(self, node, src, idx):
        x = self.tref(src, node)
        if not isinstance(idx, tuple):
            idx = (idx,)
        if any(isinstance(i, (torch.Tensor, list)) or isinstance(i, _Meta) for i in idx):
            raise _Reject("advanced (tensor) indexing")
        r = self.rank(src)
        n_real = sum(1 for i in idx if i is not None and i is not Ellipsis)
        if Ellipsis in idx:
            k = idx.index(Ellipsis)
            idx = idx[:k] + (slice(None),) * (r - n_real) + idx[k + 1:]
        ops = []
        d = 0  # current dim in the (changing) tensor
        for i in idx:
            if i is None:
                ops.append(("unsqueeze",))
                d += 1
                continue
            if isinstance(i, bool):
                raise _Reject("boolean index")
            if isinstance(i, int):
                if d == 0:
                    raise _Reject("indexing the batch dimension")
                ops.append(("select", d, i))
                continue
            if isinstance(i, slice):
                if i.start in (None, 0) and i.stop is None and i.step in (None, 1):
                    d += 1
                    continue
                if d == 0:
                    raise _Reject("slicing the batch dimension")
                ops.append(("slice", d, i))
                d += 1
                continue
            raise _Reject("index %r" % (i,))
        if any(o[0] == "unsqueeze" for o in ops):
            return self.emit(node, "Reshape", OrderedDict(shape=self.shape(node)), [x])
        ref = x
        for o in ops:
            if o[0] == "select":
                ref = self.emit(node, "Select", OrderedDict(dim=o[1], index=o[2]), [ref])
            else:
                s = o[2]
                f = OrderedDict(dim=o[1])
                if s.start is not None:
                    f["start"] = s.start
                if s.stop is not None:
                    f["end"] = s.stop
                if s.step not in (None, 1):
                    f["step"] = s.step
                ref = self.emit(node, "Slice", f, [ref])
        return ref


# --------------------------------------------------------------------------
# Naming, inputs, JSON
# --------------------------------------------------------------------------

def _group(layers, flat):
    """The scope tree: module calls that take one tensor and give one back become
    Sequential scopes (as a Python caller holds a submodule's input until it returns).
    Returns a list of items: layer index (int) or ("S", frame, items, external ref)."""
    n = len(layers)
    frames = [list(l.get("_frames", ())) for l in layers]
    users = {}  # layer index -> set of user layer indices
    for j, l in enumerate(layers):
        for r in l["_in"]:
            if r.kind == "L":
                users.setdefault(r.key, set()).add(j)
    tie_names = set(l["tie"] for l in layers if "tie" in l)
    tied = set(i for i, l in enumerate(layers) if "tie" in l or l["_node"] in tie_names)

    def groupable(group):
        if len(group) < 2:
            return None
        gs = set(group)
        ext = []
        for j in group:
            for r in layers[j]["_in"]:
                if (r.kind == "in" or r.key not in gs) and r not in ext:
                    ext.append(r)
        if len(ext) != 1:
            return None
        for j in group[:-1]:
            if any(u not in gs for u in users.get(j, ())) or j == n - 1:
                return None
        if gs & tied:
            return None
        return ext[0]

    def build(idxs, depth):
        items = []
        i = 0
        while i < len(idxs):
            idx = idxs[i]
            if flat or len(frames[idx]) <= depth:
                items.append(idx)
                i += 1
                continue
            f = frames[idx][depth]
            j = i
            while j < len(idxs) and len(frames[idxs[j]]) > depth and frames[idxs[j]][depth] == f:
                j += 1
            group = idxs[i:j]
            ext = groupable(group)
            if ext is None:  # not a one-tensor scope: its layers join this scope
                for g in group:
                    del frames[g][depth]
                continue
            items.append(("S", f, build(group, depth + 1), ext))
            i = j
        return items

    return build(list(range(n)), 0)


def _last(item):
    return item if isinstance(item, int) else _last(item[2][-1])


def _finalise(layers, inputs, flat=False):
    in_names = [t[0] for t in inputs]
    single = len(inputs) == 1
    tree = _group(layers, flat)
    taken = set(in_names) | {"input"}

    def fresh(base):
        base = re.sub(r"\W", "_", base) or "t"
        if base in taken or base[0].isdigit():
            base = "t_" + base
        nm, k = base, 1
        while nm in taken:
            k += 1
            nm = "%s_%d" % (base, k)
        taken.add(nm)
        return nm

    def refs_of(item):
        if isinstance(item, int):
            return layers[item]["_in"]
        return [item[3]]

    def scope(items, ext, prefix=""):
        # which item produces each layer output visible here
        out_of = {_last(it): k for k, it in enumerate(items)}
        in_scope_default = ext if ext is not None else _Ref("in", in_names[0])

        def resolve(r):
            if ext is not None and r == ext:
                return "input"
            if r.kind == "in":
                return "input" if single else r.key
            return names[out_of[r.key]]

        names = {}
        need = set()
        for k, it in enumerate(items):
            if isinstance(it, int) and layers[it].get("_named"):
                need.add(k)
            default = [_Ref("L", _last(items[k - 1]))] if k > 0 else [in_scope_default]
            rs = refs_of(it)
            if (isinstance(it, int) and layers[it]["type"] in _NO_INPUT) or rs != default:
                for r in rs:
                    if r.kind == "L" and not (ext is not None and r == ext):
                        need.add(out_of[r.key])
        for k, it in enumerate(items):
            if not isinstance(it, int):
                need.add(k)  # scopes carry their module's name, for the reader
        for k in sorted(need):
            it = items[k]
            names[k] = fresh(layers[it]["_node"] if isinstance(it, int) else it[1][0])
        node_to_name = {layers[items[k]]["_node"]: names[k] for k in names if isinstance(items[k], int)}
        out = []
        for k, it in enumerate(items):
            default = [_Ref("L", _last(items[k - 1]))] if k > 0 else [in_scope_default]
            if isinstance(it, int):
                l = layers[it]
                d = OrderedDict(type=l["type"])
                if k in names:
                    d["name"] = names[k]
                if l.get("_module"):  # the reports name the layer by its module (issue 15)
                    d["module"] = l["_module"]
                if l["type"] not in _NO_INPUT and l["_in"] != default:
                    d["inputs"] = [resolve(r) for r in l["_in"]]
                for key, v in l.items():
                    if key.startswith("_") or key in ("type", "repeat"):
                        continue
                    if key == "tie":
                        v = node_to_name.get(v, v)
                    d[key] = v
                if "repeat" in l:
                    d["repeat"] = l["repeat"]
                here = "%s%slayers[%d]" % (prefix, "." if prefix else "", k)
                for c in range(l.get("repeat", 1)):
                    pth = here + ("[%d]" % c if l.get("repeat", 1) > 1 else "")
                    paths[pth] = l.get("_module", "") + (".%d" % c if l.get("repeat", 1) > 1 else "")
            else:
                d = OrderedDict(type="Sequential")
                if k in names:
                    d["name"] = names[k]
                if [it[3]] != default:
                    d["inputs"] = [resolve(it[3])]
                d["layers"] = scope(it[2], it[3], "%s%slayers[%d]" % (prefix, "." if prefix else "", k))
            out.append(d)
        return out

    paths = OrderedDict()  # the loader's instance path of each layer -> its module's qualified name
    doc_layers = scope(tree, None)
    _finalise.paths = paths
    return doc_layers


def dumps(doc, indent=2):
    """A model document as JSON text: top-level keys one per line, one layer per line
    (nested Sequential layers indented)."""
    def layer_lines(layers, depth):
        pad = " " * (indent * depth)
        lines = []
        for i, l in enumerate(layers):
            comma = "," if i + 1 < len(layers) else ""
            if "layers" in l:
                head = OrderedDict((k, v) for k, v in l.items() if k != "layers")
                h = json.dumps(head)
                lines.append(pad + h[:-1] + ', "layers": [')
                lines.extend(layer_lines(l["layers"], depth + 1))
                lines.append(pad + "]}" + comma)
            else:
                lines.append(pad + json.dumps(l) + comma)
        return lines

    out = ["{"]
    keys = list(doc.keys())
    for i, k in enumerate(keys):
        comma = "," if i + 1 < len(keys) else ""
        if k == "layers":
            out.append(" " * indent + '"layers": [')
            out.extend(layer_lines(doc[k], 2))
            out.append(" " * indent + "]" + comma)
        else:
            out.append(" " * indent + json.dumps(k) + ": " + json.dumps(doc[k]) + comma)
    out.append("}")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------

_DT = {"float32": torch.float32, "float": torch.float32, "int64": torch.int64, "long": torch.int64}


def parse_input(text, index=0):
    """'3,224,224' | 'ids=128:int64' | '3,32,32:float32' -> (name, shape, dtype)."""
    name = None
    if "=" in text:
        name, text = text.split("=", 1)
    dt = "float32"
    if ":" in text:
        text, dt = text.split(":", 1)
    if dt not in _DT:
        raise ValueError("dtype %r: use float32 or int64" % dt)
    try:
        shape = [int(x) for x in text.replace("x", ",").split(",") if x.strip()]
    except ValueError:
        raise ValueError("bad shape %r (want e.g. 3,224,224)" % text) from None
    if not shape or any(d <= 0 for d in shape):
        raise ValueError("bad shape %r" % text)
    return name, shape, _DT[dt]


class TraceError(Exception):
    """torch.fx could not trace the module (data-dependent Python, iterating a tensor...)."""


def _user_frame(tb):
    """'file.py:LINE: code' of the innermost traceback frame outside torch and this file."""
    import traceback
    best = ""
    for fr in traceback.extract_tb(tb):
        f = fr.filename
        if "/torch/" in f or f == os.path.abspath(__file__) or f.endswith("torch2vramcalc.py") or \
                f.endswith("/_t2v.py"):
            continue
        for marker in ("site-packages/", "dist-packages/"):
            if marker in f:
                f = f.split(marker, 1)[1]
        if f.startswith(os.getcwd() + os.sep):
            f = os.path.relpath(f)
        best = "%s:%s: %s" % (f, fr.lineno, (fr.line or "").strip())
    return best


def export(module, inputs, name=None, batch=2, source=None, description=None, loss=None,
           concrete_args=None, what=None, flat=False, allow_unknown=False, info_out=None):
    """module: an nn.Module; inputs: list of (name, shape, dtype) per forward argument
    (name None: the forward argument's own name).  Returns the model document (a dict).
    Raises Unmapped when some op has no kind (allow_unknown: exports them as new tensors
    of their output's shape, listed in info["approximate"] and the description), and
    TraceError when torch.fx cannot trace the module."""
    patches = {"__iter__": _proxy_iter}
    for op in ("iadd", "imul", "isub", "itruediv"):
        # torch 1.13's Proxy has no in-place magic methods: `out += identity` would be
        # recorded as an out-of-place add.  Record operator.iadd (as later versions do).
        if "__%s__" % op not in vars(fx.Proxy):
            patches["__%s__" % op] = _inplace_magic(op)
    saved = {k: vars(fx.Proxy).get(k) for k in patches}
    for k, v in patches.items():
        setattr(fx.Proxy, k, v)
    # builtins that fx does not see when their sizes come from x.shape: record a call instead
    saved_fns = {(torch, n): getattr(torch, n) for n in _FACTORIES if hasattr(torch, n)}
    saved_fns[(F, "pad")] = F.pad
    for (mod, n), f in saved_fns.items():
        setattr(mod, n, _proxy_aware(f))
    if _lookup(module) is not None:
        # the root itself is a leaf kind (an nn.LSTM, nn.TransformerEncoder...): call it
        # from a wrapper so that it is traced as one module call
        module = _RootWrapper(module, len(inputs))
    tracer = _Tracer()
    try:
        graph = tracer.trace(module, concrete_args=concrete_args)
    except Exception as e:  # noqa: BLE001  (anything user code raises under tracing)
        where = _user_frame(e.__traceback__)
        mod = getattr(tracer, "failed_in", "")
        msg = str(e).strip().splitlines()[0].split(". ")[0] if str(e).strip() else type(e).__name__
        raise TraceError("torch.fx cannot trace %s: %s%s%s (Python control flow on tensor values, "
                         "iterating a tensor or data-dependent shapes cannot be traced: rewrite that "
                         "line, pass the value as a constant with --kwargs, or export the submodule "
                         "that can be traced)" % (what or type(module).__name__, msg,
                                                  (" in module " + mod) if mod else "",
                                                  (" at " + where) if where else "")) from None
    finally:
        for k, v in saved.items():
            if v is None:
                delattr(fx.Proxy, k)
            else:
                setattr(fx.Proxy, k, v)
        for (mod, n), f in saved_fns.items():
            setattr(mod, n, f)
    gm = fx.GraphModule(tracer.root, graph, type(module).__name__)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(inputs) > len(placeholders):
        raise ValueError("%d inputs given, forward takes %d" % (len(inputs), len(placeholders)))
    named = []
    for (nm, shape, dt), ph in zip(inputs, placeholders):
        nm = nm or (ph.target if len(inputs) > 1 else "input")
        named.append((nm, shape, dt))
    meta_module = _meta_copy(module)
    meta = _shapes(module, graph, named, batch, meta_module)
    ex = _Exporter(gm, meta, [(n, s) for n, s, _ in named], batch, module)
    ex.allow_unknown = allow_unknown
    layers = ex.run()
    dead = _freeze_unused(layers) if layers is not None else 0
    fixed = []
    if layers is not None:  # sizes computed from the input: re-derivable by vramcalc --input?
        other, why = None, "the model cannot be traced at another input size"
        for cand in _other_inputs(named):
            meta2 = _shapes(module, graph, cand, batch, meta_module, meta_only=True)
            if meta2 is None:
                continue
            ex2 = _Exporter(gm, meta2, [(n, s) for n, s, _ in cand], batch, module)
            ex2.allow_unknown = allow_unknown
            with open(os.devnull, "w") as quiet:
                saved_err, sys.stderr = sys.stderr, quiet
                try:
                    other = ex2.run()
                    if other is not None:  # the same `frozen` as the first export's
                        _freeze_unused(other)
                except Exception:  # noqa: BLE001  (a shape the model does not take)
                    other = None
                finally:
                    sys.stderr = saved_err
            if other is not None:
                break
            if ex2.unmapped:
                why = "at input %s: %s: %s" % (",".join(str(d) for d in cand[0][1]), ex2.unmapped[0][1],
                                               ex2.unmapped[0][2])
        fixed = _rederive(layers, other, why)
    if layers is None:
        raise Unmapped(ex.unmapped, what or type(module).__name__)
    doc = OrderedDict()
    doc["name"] = name or type(module).__name__
    if ex.approx:  # the report's header and JSON "model" show it
        doc["name"] += " (approximate: %d op%s)" % (len(ex.approx), "s" if len(ex.approx) > 1 else "")
    if source:
        doc["source"] = source
    notes = [description] if description else []
    if ex.outputs_note:
        notes.append(ex.outputs_note)
    if dead:
        notes.append("%d layer(s) whose outputs do not reach the primary output are frozen (as in PyTorch, "
                     "no gradient reaches their parameters: no gradients, no optimizer states)" % dead)
    if ex.notes:
        notes.append("stand-in kinds (same memory, other kind): " +
                     ", ".join("%s x%d" % kv for kv in ex.notes.items()))
    if ex.approx:
        counts = OrderedDict()
        for what_, op, where in ex.approx:
            counts[what_] = counts.get(what_, 0) + 1
        notes.append("approximate: " + ", ".join("%s x%d" % kv for kv in counts.items()))
    if fixed:
        notes.append("fixed at the exported input (vramcalc --input does not re-derive them: re-export "
                     "at the new input size): " + ", ".join(fixed[:8]) + (" ..." if len(fixed) > 8 else ""))
        # vramcalc refuses --input on this file, with this reason (issue 15)
        doc["input_fixed"] = ", ".join(fixed[:8]) + (" ..." if len(fixed) > 8 else "")
    if notes:
        doc["description"] = "; ".join(notes)
    specs = OrderedDict()
    for nm, shape, dt in named:
        specs[nm] = list(shape) if dt != torch.int64 else OrderedDict(shape=list(shape), dtype="int64")
    if len(named) == 1:
        doc["input"] = next(iter(specs.values()))
    else:
        doc["inputs"] = specs
    if loss:
        doc["loss"] = loss
    doc["layers"] = _finalise(layers, named, flat)
    module_names = _finalise.paths
    # parameter check
    total = {id(p): p.numel() for p in module.parameters()}
    missing = {k: v for k, v in total.items() if k not in ex.exported_params}
    if missing:
        names = [n for n, p in module.named_parameters() if id(p) in missing]
        print("torch2vramcalc: warning: %d parameters (%d tensors: %s%s) are not used by forward "
              "and are not in the model file" % (sum(missing.values()), len(names), ", ".join(names[:5]),
                                                  " ..." if len(names) > 5 else ""), file=sys.stderr)
    doc_params = sum(ex.exported_params.values())
    return doc, {"torch_parameters": sum(total.values()), "exported_parameters": doc_params,
                 "layers": len(layers), "approximate": list(ex.approx), "stand_ins": dict(ex.notes),
                 "module_names": module_names}


class _no_downloads:
    """Makes torch.hub / torchvision weight downloads raise a ValueError naming the target
    (a builder that downloads even with weights=None: its backbone's, an auxiliary net's)."""

    def __init__(self, target):
        self.target = target
        self.saved = []

    def __enter__(self):
        def refuse(url, *a, **k):
            raise ValueError("%s tried to download weights (%s); an export never does: pass "
                             "--kwargs to turn the download off (e.g. {\"weights_backbone\": null})"
                             % (self.target, url))
        mods = [torch.hub]
        for name in ("torchvision._internally_replaced_utils", "torchvision.models._api", "torch.utils.model_zoo"):
            if name in sys.modules:
                mods.append(sys.modules[name])
        for mod in mods:
            for attr in ("load_state_dict_from_url", "download_url_to_file", "load_url"):
                if hasattr(mod, attr):
                    self.saved.append((mod, attr, getattr(mod, attr)))
                    setattr(mod, attr, refuse)
        return self

    def __exit__(self, *exc):
        for mod, attr, v in reversed(self.saved):
            setattr(mod, attr, v)
        return False


def load_target(target, kwargs=None):
    """'pkg.mod.fn' | 'pkg.mod:attr' | 'file.py:attr' -> an nn.Module."""
    kwargs = kwargs or {}
    obj = None
    if ":" in target:
        modname, attr = target.rsplit(":", 1)
        if modname.endswith(".py") or os.sep in modname:
            spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(modname))[0], modname)
            mod = importlib.util.module_from_spec(spec)
            sys.path.insert(0, os.path.dirname(os.path.abspath(modname)))
            spec.loader.exec_module(mod)
        else:
            mod = importlib.import_module(modname)
        obj = mod
        for part in attr.split("."):
            obj = getattr(obj, part)
    else:
        parts = target.split(".")
        err = None
        for i in range(len(parts) - 1, 0, -1):
            try:
                mod = importlib.import_module(".".join(parts[:i]))
            except ImportError as e:
                err = e
                continue
            obj = mod
            try:
                for part in parts[i:]:
                    obj = getattr(obj, part)
            except AttributeError as e:
                raise ValueError("%s: %s" % (target, e)) from None
            break
        if obj is None:
            raise ValueError("%s: cannot import (%s)" % (target, err))
    if isinstance(obj, nn.Module):
        if kwargs:
            raise ValueError("--kwargs given but %s is already a module instance" % target)
        return obj
    if not callable(obj):
        raise ValueError("%s is neither a module nor a callable" % target)
    kwargs = dict(kwargs)
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        sig = None
    if sig is not None:  # never download weights: the file needs shapes, not values
        for k, v in (("weights", None), ("weights_backbone", None), ("pretrained", False),
                     ("pretrained_backbone", False)):
            if k in sig.parameters and k not in kwargs:
                kwargs[k] = v
    with _no_downloads(target):
        m = obj(**kwargs)
    if not isinstance(m, nn.Module):
        raise ValueError("%s(...) returned %s, not an nn.Module" % (target, type(m).__name__))
    return m


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="torch2vramcalc",
        description="Export a torch.nn.Module to a vramcalc model file (JSON on stdout).",
        epilog="Exit status: 0 exported; 2 bad usage, or ops without a vramcalc kind (listed on stderr).")
    ap.add_argument("target", help="dotted path to a callable returning a module (torchvision.models.resnet50), "
                    "or pkg.mod:attr, or path/file.py:attr")
    ap.add_argument("-i", "--input", action="append", required=True,
                    help="per-sample input shape, e.g. 3,224,224; [NAME=]SHAPE[:int64] for token ids; "
                         "repeat for several forward arguments, in order")
    ap.add_argument("--kwargs", default="{}", help="JSON object of keyword arguments for the callable")
    ap.add_argument("--name", help="model name (default: the target's last component)")
    ap.add_argument("--source", help="the model's \"source\" string (default: the target)")
    ap.add_argument("--description", help="a \"description\" string")
    ap.add_argument("--loss", choices=["mean", "cross_entropy"], help="model-level loss (default: not written)")
    ap.add_argument("--eval", action="store_true", help="trace in eval mode (default: train mode)")
    ap.add_argument("--batch", type=int, default=2, help="batch size of the shape-finding run (default 2)")
    ap.add_argument("--flat", action="store_true",
                    help="one flat list of layers (default: module calls that take and return one "
                         "tensor become Sequential scopes, as PyTorch keeps their input alive)")
    ap.add_argument("--allow-unknown", action="store_true",
                    help="export ops without a vramcalc kind as new tensors of their output's shape "
                         "(nothing saved), listed on stderr and in the file's description as approximate")
    ap.add_argument("-o", "--output", help="write here instead of standard output")
    a = ap.parse_args(argv)
    try:
        kwargs = json.loads(a.kwargs)
        if not isinstance(kwargs, dict):
            raise ValueError("--kwargs must be a JSON object")
        inputs = [parse_input(t) for t in a.input]
        torch.manual_seed(0)
        module = load_target(a.target, kwargs)
    except (ValueError, ImportError, TypeError) as e:
        print("torch2vramcalc: %s" % e, file=sys.stderr)
        return 2
    module.train(not a.eval)
    name = a.name or re.split(r"[.:]", a.target)[-1]
    try:
        doc, info = export(module, inputs, name=name, batch=a.batch, source=a.source or a.target,
                           description=a.description, loss=a.loss, what=a.target, flat=a.flat,
                           allow_unknown=a.allow_unknown)
    except Unmapped as e:
        print("torch2vramcalc: " + e.report(), file=sys.stderr)
        return 2
    except TraceError as e:
        print("torch2vramcalc: %s" % e, file=sys.stderr)
        return 2
    except (ValueError, RuntimeError, TypeError) as e:
        print("torch2vramcalc: %s: %s" % (a.target, str(e).splitlines()[0] if str(e) else type(e).__name__),
              file=sys.stderr)
        return 2
    for what_, op, where in info["approximate"]:
        print("torch2vramcalc: approximate: %s  [%s]%s" % (what_, op, ("  " + where) if where else ""),
              file=sys.stderr)
    text = dumps(doc)
    if a.output:
        with open(a.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    print("torch2vramcalc: %s: %d layers, %d parameters (torch: %d)" % (
        name, info["layers"], info["exported_parameters"], info["torch_parameters"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
