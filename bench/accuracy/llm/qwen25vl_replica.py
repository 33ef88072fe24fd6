"""Qwen2.5-VL's vision tower and patch merger, and the exact parameter counts of the Qwen2.5-VL
checkpoints, written from the transformers source (issue 31 item 4).

Source: huggingface/transformers @ efa7189c5546a94e8c1194b2ccc6669e0f7ad65e,
src/transformers/models/qwen2_5_vl/modeling_qwen2_5_vl.py:
  Qwen2_5_VisionPatchEmbed     proj = nn.Conv3d(in_channels, embed_dim, kernel_size=[temporal_patch_size,
                               patch_size, patch_size], stride=kernel_size, bias=False); forward: view(-1, C, T,
                               P, P), proj(x.to(weight dtype)).view(-1, embed_dim)
  Qwen2RMSNorm                 weight [hidden], eps 1e-6 in the tower
  Qwen2_5_VLVisionSdpaAttention qkv = Linear(dim, 3 dim, bias=True), proj = Linear(dim, dim); rotary in float32
                               (apply_rotary_pos_emb_vision), a [1, n, n] bool block mask, F.scaled_dot_product_attention
  Qwen2_5_VLMLP(bias=True)     gate_proj / up_proj [I, dim], down_proj [dim, I], all with biases
  Qwen2_5_VLVisionBlock        x + attn(norm1(x)); x + mlp(norm2(x))
  Qwen2_5_VLPatchMerger        ln_q = Qwen2RMSNorm(context_dim), mlp = Sequential(Linear(4 dim, 4 dim), GELU(),
                               Linear(4 dim, out_hidden_size))
  Qwen2_5_VisionTransformerPretrainedModel: patch_embed, rotary_pos_emb (a buffer only), blocks x depth, merger
  Qwen2_5_VLModel / ForConditionalGeneration: the language model is Qwen2's (q/k/v with biases, o without;
                               lm_head tied as tie_word_embeddings says)
configuration_qwen2_5_vl.py @ aa0dc95c (Qwen2_5_VLVisionConfig defaults: depth 32, hidden_size (embed width),
intermediate_size 3420, num_heads 16, in_channels 3, patch_size 14, spatial_merge_size 2, temporal_patch_size 2,
window_size 112, out_hidden_size 3584, fullatt_block_indexes [7, 15, 23, 31]); config.json files name the
tower's width hidden_size (1280) and carry in_chans, which the class ignores (in_channels stays 3).

python3 qwen25vl_replica.py prints the counts; `--check` asserts the figures tests/test_hf.c uses.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def vision_keys(v):
    g = lambda k, d: v[k] if v.get(k) is not None else d  # noqa: E731  (Qwen2_5_VLVisionConfig defaults)
    return dict(depth=g("depth", 32), C=g("hidden_size", 1280), I=g("intermediate_size", 3420), NH=g("num_heads", 16),
                cin=g("in_channels", 3), P=g("patch_size", 14), M=g("spatial_merge_size", 2),
                T=g("temporal_patch_size", 2), out=g("out_hidden_size", 3584))


def vision_count(v):
    """named_parameters() of Qwen2_5_VisionTransformerPretrainedModel, by module."""
    k = vision_keys(v)
    C, I = k["C"], k["I"]
    patch = C * k["cin"] * k["T"] * k["P"] * k["P"]
    block = 2 * C + (3 * C * C + 3 * C) + (C * C + C) + 2 * (I * C + I) + (C * I + C)
    H4 = C * k["M"] ** 2
    merger = C + H4 * H4 + H4 + H4 * k["out"] + k["out"]
    return patch + k["depth"] * block + merger


def text_count(c):
    """Qwen2's decoder (Qwen2_5_VLModel's language model) and lm_head."""
    H, N, NH, KV, I, V = (c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"], c["num_key_value_heads"],
                          c["intermediate_size"], c["vocab_size"])
    D = H // NH
    attn = H * NH * D + NH * D + 2 * (H * KV * D + KV * D) + NH * D * H
    layer = attn + 3 * H * I + 2 * H
    return V * H + N * layer + H + (0 if c.get("tie_word_embeddings") else V * H)


def meta_count(c):
    """The same count from torch modules built as the source builds them (device='meta': no memory)."""
    import torch
    from torch import nn
    k = vision_keys(c["vision_config"])
    C, I = k["C"], k["I"]
    dev = "meta"
    n = 0
    n += sum(p.numel() for p in nn.Conv3d(k["cin"], C, (k["T"], k["P"], k["P"]), stride=(k["T"], k["P"], k["P"]),
                                          bias=False, device=dev).parameters())
    blk = nn.ModuleDict(dict(norm1=nn.Linear(1, C, bias=False, device=dev),  # Qwen2RMSNorm: a weight of C (as [C, 1] here)
                             norm2=nn.Linear(1, C, bias=False, device=dev),
                             qkv=nn.Linear(C, 3 * C, device=dev), proj=nn.Linear(C, C, device=dev),
                             gate=nn.Linear(C, I, device=dev), up=nn.Linear(C, I, device=dev), down=nn.Linear(I, C, device=dev)))
    n += k["depth"] * sum(p.numel() for p in blk.parameters())
    H4 = C * k["M"] ** 2
    n += C + sum(p.numel() for p in nn.Sequential(nn.Linear(H4, H4, device=dev), nn.GELU(),
                                                  nn.Linear(H4, k["out"], device=dev)).parameters())
    del torch
    return n


CASES = {  # config file -> (vision tower + merger, the whole checkpoint)
    "qwen2.5-vl-3b-instruct.json": (668684288, 3754622976),
    "qwen2.5-vl-7b-instruct.json": (676550144, 8292166656),
}


def main():
    check = "--check" in sys.argv
    for name, (want_v, want_all) in CASES.items():
        with open(os.path.join(ROOT, "tests", "data", "hf", name)) as f:
            c = json.load(f)
        v = vision_count(c["vision_config"])
        t = text_count(c)
        m = meta_count(c)
        print("%-30s vision %d (modules: %d)  text %d  total %d" % (name, v, m, t, v + t))
        if check:
            assert v == m == want_v, (name, v, m, want_v)
            assert v + t == want_all, (name, v + t, want_all)
    return 0


if __name__ == "__main__":
    sys.exit(main())
