#!/usr/bin/python3
"""llama4_params.py -- Llama 4's language model (Llama4ForCausalLM) built on the meta device from
the module definitions of transformers' models/llama4/modeling_llama4.py
(huggingface/transformers @ 000c33fdfde12e1ffafbfcdb3c926df5727a00b6) and the defaults of
configuration_llama4.py @ 008e5743 (Llama4TextConfig.__post_init__: moe_layers, head_dim,
num_key_value_heads), counting model.parameters() -- total, and active per token (the routed
experts a token's top-k leaves out subtracted). Asserts the counts tests/test_hf.c asserts
(test_llama4) for the configs in tests/data/hf/llama-4-*.json.

    /usr/bin/python3 bench/accuracy/llm/llama4_params.py
"""
import json
import os
import sys

import torch
import torch.nn as nn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


class Cfg:
    def __init__(self, d):
        g = d.get
        self.vocab_size = g("vocab_size", 202048)
        self.hidden_size = g("hidden_size", 5120)
        self.intermediate_size = g("intermediate_size", 8192)
        self.intermediate_size_mlp = g("intermediate_size_mlp", 16384)
        self.num_hidden_layers = g("num_hidden_layers", 48)
        self.num_attention_heads = g("num_attention_heads", 40)
        self.num_key_value_heads = g("num_key_value_heads", 8)
        if self.num_key_value_heads is None:
            self.num_key_value_heads = self.num_attention_heads
        self.head_dim = g("head_dim", 128)
        if self.head_dim is None:
            self.head_dim = self.hidden_size // self.num_attention_heads
        self.attention_bias = g("attention_bias", False)
        self.num_local_experts = g("num_local_experts", 16)
        self.num_experts_per_tok = g("num_experts_per_tok", 1)
        step = g("interleave_moe_layer_step", 1)
        ml = g("moe_layers")
        self.moe_layers = ml if ml is not None else list(range(step - 1, self.num_hidden_layers, step))
        self.tie_word_embeddings = g("tie_word_embeddings", False)


# the __init__s of modeling_llama4.py, parameters only
class Llama4TextExperts(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate_up_proj = nn.Parameter(torch.empty(c.num_local_experts, c.hidden_size, 2 * c.intermediate_size))
        self.down_proj = nn.Parameter(torch.empty(c.num_local_experts, c.intermediate_size, c.hidden_size))


class Llama4TextMLP(nn.Module):
    def __init__(self, c, intermediate_size=None):
        super().__init__()
        i = intermediate_size or c.intermediate_size
        self.gate_proj = nn.Linear(c.hidden_size, i, bias=False)
        self.up_proj = nn.Linear(c.hidden_size, i, bias=False)
        self.down_proj = nn.Linear(i, c.hidden_size, bias=False)


class Llama4TextRMSNorm(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h))


class Llama4TextMoe(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.experts = Llama4TextExperts(c)
        self.router = nn.Linear(c.hidden_size, c.num_local_experts, bias=False)  # Llama4Router
        self.shared_expert = Llama4TextMLP(c)


class Llama4TextAttention(nn.Module):  # Llama4TextL2Norm (qk_norm) holds no parameter
    def __init__(self, c):
        super().__init__()
        d, b = c.head_dim, c.attention_bias
        self.q_proj = nn.Linear(c.hidden_size, c.num_attention_heads * d, bias=b)
        self.k_proj = nn.Linear(c.hidden_size, c.num_key_value_heads * d, bias=b)
        self.v_proj = nn.Linear(c.hidden_size, c.num_key_value_heads * d, bias=b)
        self.o_proj = nn.Linear(c.num_attention_heads * d, c.hidden_size, bias=b)


class Llama4TextDecoderLayer(nn.Module):
    def __init__(self, c, i):
        super().__init__()
        self.self_attn = Llama4TextAttention(c)
        self.is_moe_layer = i in c.moe_layers
        self.feed_forward = Llama4TextMoe(c) if self.is_moe_layer else Llama4TextMLP(c, c.intermediate_size_mlp)
        self.input_layernorm = Llama4TextRMSNorm(c.hidden_size)
        self.post_attention_layernorm = Llama4TextRMSNorm(c.hidden_size)


class Llama4ForCausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList([Llama4TextDecoderLayer(c, i) for i in range(c.num_hidden_layers)])
        self.norm = Llama4TextRMSNorm(c.hidden_size)
        self.lm_head = nn.Linear(c.hidden_size, c.vocab_size, bias=False)
        if c.tie_word_embeddings:
            self.lm_head.weight = self.embed_tokens.weight


# Llama4ForConditionalGeneration's vision_model and multi_modal_projector (modeling_llama4.py @ 000c33fd,
# Llama4VisionConfig's defaults from configuration_llama4.py @ 008e5743), parameters only
class Llama4VisionEncoderLayer(nn.Module):
    def __init__(self, v):
        super().__init__()
        H, I = v["hidden_size"], v["intermediate_size"]
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(H, H, bias=True) for _ in range(4))
        self.fc1 = nn.Linear(H, I, bias=True)  # Llama4VisionMLP
        self.fc2 = nn.Linear(I, H, bias=True)
        self.input_layernorm = nn.LayerNorm(H, device="meta")
        self.post_attention_layernorm = nn.LayerNorm(H, device="meta")


class Llama4VisionModel(nn.Module):
    def __init__(self, v):
        super().__init__()
        H, P = v["hidden_size"], v["patch_size"]
        self.patch_embedding = nn.Linear(v["num_channels"] * P * P, H, bias=False)  # Llama4UnfoldConvolution.linear
        self.class_embedding = nn.Parameter(torch.empty(H))
        self.positional_embedding_vlm = nn.Parameter(torch.empty((v["image_size"] // P) ** 2 + 1, H))
        self.layernorm_pre = nn.LayerNorm(H, device="meta")
        self.layernorm_post = nn.LayerNorm(H, device="meta")
        self.layers = nn.ModuleList([Llama4VisionEncoderLayer(v) for _ in range(v["num_hidden_layers"])])
        # vision_adapter.mlp = Llama4VisionMLP2
        self.adapter_fc1 = nn.Linear(v["intermediate_size"], v["projector_input_dim"], bias=False)
        self.adapter_fc2 = nn.Linear(v["projector_output_dim"], v["projector_output_dim"], bias=False)


VISION_DEFAULTS = {"hidden_size": 768, "num_hidden_layers": 34, "num_attention_heads": 16, "num_channels": 3,
                   "intermediate_size": 5632, "vision_output_dim": 7680, "image_size": 448, "patch_size": 14,
                   "projector_input_dim": 4096, "projector_output_dim": 4096}


def vision_count(cfg):
    v = dict(VISION_DEFAULTS, **(cfg.get("vision_config") or {}))
    with _meta():
        m = Llama4VisionModel(v)
        proj = nn.Linear(v["vision_output_dim"], cfg["text_config"].get("hidden_size", 5120), bias=False)
    return sum(p.numel() for p in m.parameters()) + sum(p.numel() for p in proj.parameters())


def counts(d):
    c = Cfg(d)
    with torch.device("meta") if hasattr(torch, "device") and hasattr(torch.device, "__enter__") else _meta():
        m = Llama4ForCausalLM(c)
    total = sum(p.numel() for p in m.parameters())
    idle = 0
    for layer in m.layers:
        if layer.is_moe_layer:
            e = layer.feed_forward.experts
            per = (e.gate_up_proj.numel() + e.down_proj.numel()) // c.num_local_experts
            idle += (c.num_local_experts - c.num_experts_per_tok) * per
    return total, total - idle


class _meta:  # torch 1.13: no `with torch.device(...)`; build with the meta default through a factory patch
    def __enter__(self):
        self.saved = torch.empty, torch.ones
        torch.empty = lambda *a, **k: self.saved[0](*a, **{**k, "device": "meta"})
        torch.ones = lambda *a, **k: self.saved[1](*a, **{**k, "device": "meta"})
        self.lin = nn.Linear.__init__
        self.emb = nn.Embedding.__init__
        lin, emb = self.lin, self.emb
        nn.Linear.__init__ = lambda s, i, o, bias=True: lin(s, i, o, bias=bias, device="meta")
        nn.Embedding.__init__ = lambda s, n, d: emb(s, n, d, device="meta")

    def __exit__(self, *exc):
        torch.empty, torch.ones = self.saved
        nn.Linear.__init__, nn.Embedding.__init__ = self.lin, self.emb


EXPECT = {  # tests/test_hf.c test_llama4
    "llama-4-scout-17b-16e-instruct.json": (107769861120, 17172894720),
    "llama-4-maverick-17b-128e-instruct.json": (400711848960, 17184691200),
}

# Llama4ForConditionalGeneration with its vision tower and projector (tests/test_llama4.c test_vision)
EXPECT_ALL = {
    "llama-4-scout-17b-16e-instruct.json": 108641793536,
    "llama-4-maverick-17b-128e-instruct.json": 401583781376,
}

if __name__ == "__main__":
    bad = 0
    for f, want in EXPECT.items():
        cfg = json.load(open(os.path.join(ROOT, "tests", "data", "hf", f)))
        got = counts(cfg.get("text_config", cfg))
        print(f"{f}: {got[0]:,} parameters, {got[1]:,} active" + ("" if got == want else f"  MISMATCH, expected {want}"))
        bad += got != want
        allp = got[0] + vision_count(cfg)
        print(f"  with the vision tower and projector: {allp:,}" +
              ("" if allp == EXPECT_ALL[f] else f"  MISMATCH, expected {EXPECT_ALL[f]:,}"))
        bad += allp != EXPECT_ALL[f]
    sys.exit(1 if bad else 0)
