#!/usr/bin/python3
"""The min-cut partitioner's saved values on small reference models, measured on CPU.

vramcalc's --compile (src/engine/compile.c) decides per op which forward values a compiled
training step keeps for backward, following AOTAutograd's min-cut partitioner. This script
runs the real partitioner where one is at hand without a GPU: functorch 1.13's
min_cut_rematerialization_partition (functorch/_src/partitioners.py, Debian's torch 1.13
CPU), with compiler="inductor" (the op lists inductor uses) and the decompositions inductor
applies before partitioning for the ops involved (native_layer_norm, _softmax,
_log_softmax and their backwards, torch/_decomp). Each model's forward and loss is traced
by aot_function with the parameters as inputs (as torch.compile lifts them); the forward
graph the partitioner returns outputs the loss, then the saved values. Measured:

  saved_compiled  bytes of the storages the saved values keep: each value followed through
                  view ops to the value it aliases, each such value once (numel x element
                  size, as _size_of counts), the inputs (parameters, the batch) and their
                  views left out;
  saved_eager     bytes of the storages eager autograd's saved tensors keep, from
                  saved_tensors_hooks on the same forward, each storage once, the
                  parameters' and the inputs' left out.

The models are written here from their sources:
  mlp_block   LayerNorm(256) -> Linear(256, 1024) -> GELU -> Linear(1024, 256), the loss
              output.float().mean() (vramcalc's model-file loss, docs/contract.md), input
              [batch, 64, 256] fp32; bench/accuracy/models/compile_mlp_block.json;
  llama_small transformers' LlamaForCausalLM (models/llama/modeling_llama.py:
              LlamaRMSNorm, LlamaRotaryEmbedding without scaling, apply_rotary_pos_emb,
              sdpa_attention_forward on the math backend, LlamaMLP) at
              tests/data/hf/llama-small-measured.json's sizes (hidden 64, 4 heads, 2 KV
              heads, intermediate 176, vocab 384, 2 layers), fp32, with the causal-LM loss
              (logits.float(), shift, cross_entropy), seq 32 (vramcalc --attention math --torch
              2.4: the plain softmax of the math kernel before 2.5's _safe_softmax).

What this does not check: torch 2.x's partitioner (the ban on recomputing values a
non-fusible backward reads, views never banned; src/engine/compile.c follows it), and
inductor's fusion and memory planning, which need a GPU (the CPU backend here has none of
2.x's). Output: bench/accuracy/compile_partition.json (committed).

    /usr/bin/python3 bench/accuracy/compile_partition.py [--out FILE]
"""
import argparse
import functools
import json
import math
import os
import sys

import torch
import torch.nn.functional as F
from functorch.compile import aot_function, min_cut_rematerialization_partition
from torch._decomp import get_decompositions

HERE = os.path.dirname(os.path.abspath(__file__))
aten = torch.ops.aten
# aten view ops (no storage of their own): a saved view keeps its base's storage
VIEWS = {"t", "transpose", "view", "_reshape_alias", "_unsafe_view", "detach", "expand", "permute", "slice", "select",
         "unsqueeze", "squeeze", "alias", "as_strided"}

SIZES = {torch.float32: 4, torch.float16: 2, torch.bfloat16: 2, torch.int64: 8, torch.int32: 4, torch.bool: 1,
         torch.uint8: 1, torch.float64: 8}


def nbytes(shape, dtype):
    return math.prod(shape) * SIZES[dtype]


# ---------------------------------------------------------------- the models


def mlp_block(params, x):
    ln_w, ln_b, w1, b1, w2, b2 = params
    h = F.layer_norm(x, (x.shape[-1],), ln_w, ln_b, 1e-5)
    h = F.linear(h, w1, b1)
    h = F.gelu(h)
    h = F.linear(h, w2, b2)
    return h.float().mean()


def mlp_params(d=256, f=1024):
    g = torch.Generator().manual_seed(0)
    return [torch.ones(d), torch.zeros(d), torch.randn(f, d, generator=g) * 0.02, torch.zeros(f),
            torch.randn(d, f, generator=g) * 0.02, torch.zeros(d)]


LLAMA = dict(hidden=64, heads=4, kv=2, inter=176, vocab=384, layers=2, theta=500000.0, eps=1e-5)


def rms_norm(x, w, eps):  # LlamaRMSNorm.forward
    dt = x.dtype
    h = x.to(torch.float32)
    var = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(var + eps)
    return w * h.to(dt)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rotary(pos, dim, theta, dtype):  # LlamaRotaryEmbedding.forward (default rope)
    inv = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    freqs = (inv[None, :, None].float() @ pos[:, None, :].float()).transpose(1, 2)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def llama(params, ids, labels):
    c = LLAMA
    H, nh, nkv = c["hidden"], c["heads"], c["kv"]
    D = H // nh
    it = iter(params)
    emb = next(it)
    B, S = ids.shape
    x = F.embedding(ids, emb)
    pos = torch.arange(S).unsqueeze(0)
    cos, sin = rotary(pos, D, c["theta"], x.dtype)
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    causal = torch.ones(S, S, dtype=torch.bool).tril()  # sdpa's is_causal mask (convert_boolean_attn_mask)
    mask = torch.where(causal.logical_not(), torch.tensor(float("-inf")), torch.tensor(0.0))
    for _ in range(c["layers"]):
        ln1, wq, wk, wv, wo, ln2, wg, wu, wd = (next(it) for _ in range(9))
        res = x
        h = rms_norm(x, ln1, c["eps"])
        q = F.linear(h, wq).view(B, S, nh, D).transpose(1, 2)
        k = F.linear(h, wk).view(B, S, nkv, D).transpose(1, 2)
        v = F.linear(h, wv).view(B, S, nkv, D).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        # F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True) on the math
        # backend (aten/src/ATen/native/transformers/attention.cpp _scaled_dot_product_attention_math,
        # docs/autograd.md §4.8): keys and values repeat_interleave'd, both sides scaled by
        # sqrt(scale), the causal mask added, softmax, the second matmul
        k = k.repeat_interleave(nh // nkv, dim=1)
        v = v.repeat_interleave(nh // nkv, dim=1)
        sf = math.sqrt(D ** -0.5)
        w = torch.matmul(q * sf, k.transpose(-2, -1) * sf)
        w = w + mask
        w = torch.softmax(w, dim=-1)
        o = torch.matmul(w, v).transpose(1, 2).reshape(B, S, H)
        x = res + F.linear(o, wo)
        res = x
        h = rms_norm(x, ln2, c["eps"])
        x = res + F.linear(F.silu(F.linear(h, wg)) * F.linear(h, wu), wd)
    x = rms_norm(x, next(it), c["eps"])
    logits = F.linear(x, next(it))
    logits = logits.float()  # ForCausalLMLoss
    shift = F.pad(labels, (0, 1), value=-100)[..., 1:].contiguous()
    return F.cross_entropy(logits.view(-1, c["vocab"]), shift.view(-1), ignore_index=-100)


def llama_params():
    c = LLAMA
    g = torch.Generator().manual_seed(0)
    H, I, D = c["hidden"], c["inter"], c["hidden"] // c["heads"]
    r = lambda *s: torch.randn(*s, generator=g) * 0.02  # noqa: E731
    p = [r(c["vocab"], H)]
    for _ in range(c["layers"]):
        p += [torch.ones(H), r(H, H), r(c["kv"] * D, H), r(c["kv"] * D, H), r(H, H), torch.ones(H), r(I, H), r(I, H),
              r(H, I)]
    return p + [torch.ones(H), r(c["vocab"], H)]


# ---------------------------------------------------------------- measuring


def partition_saved(fn, params, args):
    """The partitioner's saved values (forward graph outputs after the loss)."""
    got = {}

    def root(n):  # through view ops to the value whose storage n shares
        while n.op == "call_function" and getattr(n.target, "__name__", "").split(".")[0] in VIEWS:
            n = n.args[0]
        return n

    def fw_compiler(gm, _inputs):
        outs = [n for n in gm.graph.nodes if n.op == "output"][0].args[0]
        got["saved"] = [(n.name, str(n.target), root(n), tuple(n.meta["tensor_meta"].shape), n.meta["tensor_meta"].dtype)
                        for n in outs[1:]]
        return gm

    decomp = get_decompositions([aten.native_layer_norm, aten.native_layer_norm_backward, aten._softmax,
                                 aten._softmax_backward_data, aten._log_softmax, aten._log_softmax_backward_data])
    part = functools.partial(min_cut_rematerialization_partition, compiler="inductor")
    ps = [p.clone().requires_grad_(True) for p in params]
    f = aot_function(lambda ps, *a: fn(ps, *a), fw_compiler=fw_compiler, bw_compiler=lambda gm, _i: gm,
                     partition_fn=part, decompositions=decomp)
    f(ps, *args).backward()
    acts = [s for s in got["saved"] if s[2].op != "placeholder"]
    roots = {s[2] for s in acts}
    return {"saved_compiled": sum(nbytes(r.meta["tensor_meta"].shape, r.meta["tensor_meta"].dtype) for r in roots),
            "saved_values": [{"name": s[0], "op": s[1], "storage_of": s[2].name, "shape": list(s[3]),
                              "dtype": str(s[4]).replace("torch.", ""), "bytes": nbytes(s[3], s[4])} for s in acts],
            "saved_inputs": len(got["saved"]) - len(acts)}


def eager_saved(fn, params, args):
    ps = [p.clone().requires_grad_(True) for p in params]
    skip = {t.storage().data_ptr() for t in ps} | {a.storage().data_ptr() for a in args}
    seen = {}

    def pack(t):
        st = t.storage()
        if st.data_ptr() not in skip:
            seen[st.data_ptr()] = st.size() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = fn(ps, *args)
    loss.backward()
    return sum(seen.values())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "compile_partition.json"))
    a = ap.parse_args()
    torch.manual_seed(0)
    cases = []
    for batch in (1, 4):
        x = torch.randn(batch, 64, 256)
        r = partition_saved(mlp_block, mlp_params(), (x,))
        r.update(case="mlp_block", batch=batch, saved_eager=eager_saved(mlp_block, mlp_params(), (x,)))
        cases.append(r)
    for batch in (1, 2):
        ids = torch.randint(0, LLAMA["vocab"], (batch, 32))
        r = partition_saved(llama, llama_params(), (ids, ids))
        r.update(case="llama_small", batch=batch, seq=32, saved_eager=eager_saved(llama, llama_params(), (ids, ids)))
        cases.append(r)
    doc = {"torch": torch.__version__, "partitioner": "functorch 1.13 min_cut_rematerialization_partition, "
           "compiler='inductor'", "device": "cpu", "cases": cases}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    for c in cases:
        print("%-12s batch %d  saved eager %8d B  compiled %8d B (%d values)" % (
            c["case"], c["batch"], c["saved_eager"], c["saved_compiled"], len(c["saved_values"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
