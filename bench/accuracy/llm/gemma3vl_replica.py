"""Gemma 3's vision part (SiglipVisionModel + Gemma3MultiModalProjector) written from the transformers
source (issue 31 item 4), for the exact parameter counts of the Gemma 3 checkpoints.

Source: huggingface/transformers @ efa7189c5546a94e8c1194b2ccc6669e0f7ad65e,
src/transformers/models/siglip/modeling_siglip.py:
  SiglipVisionEmbeddings   patch_embedding = nn.Conv2d(num_channels, hidden, kernel_size=patch_size,
                           stride=patch_size, padding="valid") (bias: nn.Conv2d's default True);
                           position_embedding = nn.Embedding((image_size // patch_size) ** 2, hidden)
  SiglipAttention          k_proj, v_proj, q_proj, out_proj = nn.Linear(hidden, hidden) (biases)
  SiglipMLP                fc1 = nn.Linear(hidden, intermediate), fc2 = nn.Linear(intermediate, hidden)
  SiglipEncoderLayer       layer_norm1, self_attn, layer_norm2, mlp (nn.LayerNorm: weight and bias)
  SiglipVisionTransformer  embeddings, encoder (num_hidden_layers layers), post_layernorm; the head
                           (SiglipMultiheadAttentionPoolingHead: probe [1, 1, hidden], nn.MultiheadAttention,
                           layernorm, mlp) unless the config has vision_use_head false
models/gemma3/modeling_gemma3.py @ 0018aa647bb13801f061e2d1027c326f531b59fb:
  Gemma3MultiModalProjector mm_input_projection_weight = nn.Parameter([vision hidden, text hidden]),
                           mm_soft_emb_norm = Gemma3RMSNorm(vision hidden) (weight only)
The language model: gptoss_replica.gemma3_text_params (Gemma3TextModel, lm_head tied).

python3 gemma3vl_replica.py --check builds every module above on the meta device with torch and
asserts the totals tests/test_hf.c uses (gemma-3-4b-it 4,300,079,472, gemma-3-27b-it 27,432,406,640).
"""

import json
import os
import sys

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
M = dict(device="meta")  # shapes only: every module built on the meta device


def siglip_keys(v):
    g = lambda k, d: v[k] if v.get(k) is not None else d  # noqa: E731  (SiglipVisionConfig defaults)
    return dict(C=g("hidden_size", 768), I=g("intermediate_size", 3072), N=g("num_hidden_layers", 12),
                NH=g("num_attention_heads", 12), cin=g("num_channels", 3), img=g("image_size", 224),
                P=g("patch_size", 16), eps=g("layer_norm_eps", 1e-6), head=v.get("vision_use_head", True))


class SiglipMLP(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.fc1 = nn.Linear(k["C"], k["I"], **M)
        self.fc2 = nn.Linear(k["I"], k["C"], **M)


class SiglipAttention(nn.Module):
    def __init__(self, k):
        super().__init__()
        C = k["C"]
        self.k_proj, self.v_proj, self.q_proj, self.out_proj = (nn.Linear(C, C, **M) for _ in range(4))


class SiglipEncoderLayer(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.self_attn = SiglipAttention(k)
        self.layer_norm1 = nn.LayerNorm(k["C"], eps=k["eps"], **M)
        self.mlp = SiglipMLP(k)
        self.layer_norm2 = nn.LayerNorm(k["C"], eps=k["eps"], **M)


class SiglipHead(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.probe = nn.Parameter(torch.empty(1, 1, k["C"], **M))
        self.attention = nn.MultiheadAttention(k["C"], k["NH"], batch_first=True, **M)
        self.layernorm = nn.LayerNorm(k["C"], eps=k["eps"], **M)
        self.mlp = SiglipMLP(k)


class SiglipVisionTransformer(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.patch_embedding = nn.Conv2d(k["cin"], k["C"], kernel_size=k["P"], stride=k["P"], padding="valid", **M)
        self.position_embedding = nn.Embedding((k["img"] // k["P"]) ** 2, k["C"], **M)
        self.layers = nn.ModuleList([SiglipEncoderLayer(k) for _ in range(k["N"])])
        self.post_layernorm = nn.LayerNorm(k["C"], eps=k["eps"], **M)
        if k["head"]:
            self.head = SiglipHead(k)


class Gemma3MultiModalProjector(nn.Module):
    def __init__(self, k, text_hidden):
        super().__init__()
        self.mm_input_projection_weight = nn.Parameter(torch.empty(k["C"], text_hidden, **M))
        self.mm_soft_emb_norm_weight = nn.Parameter(torch.empty(k["C"], **M))  # Gemma3RMSNorm.weight


def vision_count(cfg):
    k = siglip_keys(cfg.get("vision_config") or {})
    tower = SiglipVisionTransformer(k)
    proj = Gemma3MultiModalProjector(k, cfg["text_config"].get("hidden_size", 2304))
    return sum(p.numel() for p in tower.parameters()) + sum(p.numel() for p in proj.parameters())


def check():
    import gptoss_replica
    ok = True
    for f, want in (("gemma-3-4b-it.json", 4300079472), ("gemma-3-27b-it.json", 27432406640)):
        c = json.load(open(os.path.join(ROOT, "tests", "data", "hf", f)))
        text = gptoss_replica.gemma3_text_params(c["text_config"])
        vis = vision_count(c)
        print("%-22s text %16s  vision+projector %14s  total %16s  (want %s)" % (
            f, "{:,}".format(text), "{:,}".format(vis), "{:,}".format(text + vis), "{:,}".format(want)))
        ok &= text + vis == want
    return 0 if ok else 1


if __name__ == "__main__" and "--check" in sys.argv:
    sys.exit(check())
