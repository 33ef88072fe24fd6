"""qwen3vl_replica.py -- Qwen3VLForConditionalGeneration on text alone, written from the transformers
source, measured by measure_llm.py and counted by `python3 qwen3vl_replica.py CONFIG...`.

Sources read (huggingface/transformers):
  C = models/qwen3_vl/configuration_qwen3_vl.py @000c33fd: Qwen3VLTextConfig / Qwen3VLVisionConfig defaults.
  M = models/qwen3_vl/modeling_qwen3_vl.py @00709b86:
    - Qwen3VLTextModel: embed_tokens, Qwen3VLTextDecoderLayer (input_layernorm, Qwen3VLTextAttention:
      q/k/v/o with attention_bias, q_norm / k_norm RMSNorm(head_dim) on the [B, L, heads, D] views,
      apply_rotary_pos_emb; post_attention_layernorm, Qwen3VLTextMLP gate/up/down), norm: Qwen3's
      modules, which reference.py's qwen3 rows replicate (its model_type "qwen3");
    - Qwen3VLTextRotaryEmbedding.forward: position_ids [B, L] expanded to [3, B, L];
      inv_freq[None, None, :, None].float().expand(3, B, -1, 1) @ position_ids[:, :, None, :].float(),
      transpose(2, 3), apply_interleaved_mrope (freqs_t = freqs[0]; freqs_t[..., slice(offset, 3 *
      mrope_section[dim], 3)] = freqs[dim, ..., same]: in place in freqs' storage), cat((freqs_t,
      freqs_t), -1), cos() * attention_scaling, sin() * attention_scaling, .to(x.dtype);
    - Qwen3VLVisionModel's parameters (patch_embed Conv3d with bias, pos_embed, blocks with LayerNorm
      norm1 / norm2, attn.qkv / proj, mlp.linear_fc1 / fc2, merger and deepstack_merger_list): loaded and
      frozen (LLaMA-Factory's freeze_vision_tower / freeze_multi_modal_projector defaults, as
      qwen25vl_replica.py), never run without pixel_values (Qwen3VLModel.forward: no image, no tower call,
      no deepstack: deepstack_visual_embeds None).
  No position_ids are passed (measure_llm.py's loop): Qwen3VLModel.get_rope_index without an attention mask
  gives arange(L) expanded to [3, B, L] (a view), the text rope's positions as the 1-D ones.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))

import torch
import torch.nn as nn

import reference as R


def vision_keys(v):
    g = lambda k, d: d if v.get(k) is None else v[k]  # noqa: E731
    return dict(depth=g("depth", 27), C=g("hidden_size", 1152), I=g("intermediate_size", 4304),
                NH=g("num_heads", 16), cin=g("in_channels", 3), P=g("patch_size", 16), M=g("spatial_merge_size", 2),
                T=g("temporal_patch_size", 2), out=g("out_hidden_size", 3584), npos=g("num_position_embeddings", 2304),
                ndeep=len(g("deepstack_visual_indexes", [8, 16, 24])))


class VisionWeights(nn.Module):
    """M: Qwen3VLVisionModel's parameters, module by module (their shapes only: never run here)."""

    def __init__(self, v):
        super().__init__()
        k = vision_keys(v)
        C, I, H4 = k["C"], k["I"], k["C"] * k["M"] ** 2
        self.patch_embed = nn.Conv3d(k["cin"], C, kernel_size=(k["T"], k["P"], k["P"]), stride=(k["T"], k["P"], k["P"]),
                                     bias=True)
        self.pos_embed = nn.Embedding(k["npos"], C)

        def block():
            b = nn.Module()
            b.norm1, b.norm2 = nn.LayerNorm(C, eps=1e-6), nn.LayerNorm(C, eps=1e-6)
            b.qkv, b.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
            b.linear_fc1, b.linear_fc2 = nn.Linear(C, I), nn.Linear(I, C)
            return b

        def merger(post):
            m = nn.Module()
            m.norm = nn.LayerNorm(H4 if post else C, eps=1e-6)
            m.linear_fc1, m.linear_fc2 = nn.Linear(H4, H4), nn.Linear(H4, k["out"])
            return m

        self.blocks = nn.ModuleList(block() for _ in range(k["depth"]))
        self.merger = merger(False)
        self.deepstack_merger_list = nn.ModuleList(merger(True) for _ in range(k["ndeep"]))


class MRoPE(nn.Module):
    """M: Qwen3VLTextRotaryEmbedding (default rope_type: attention_scaling 1.0)."""

    def __init__(self, cfg, head_dim, mrope_section):
        super().__init__()
        inv_freq, self.attention_scaling = R.rope_inv_freq(cfg, head_dim)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.mrope_section = mrope_section

    @torch.no_grad()
    def forward(self, x, position_ids):
        if position_ids.ndim == 2:
            position_ids = position_ids[None, ...].expand(3, position_ids.shape[0], -1)
        inv_freq_expanded = self.inv_freq[None, None, :, None].float().expand(3, position_ids.shape[1], -1, 1)
        position_ids_expanded = position_ids[:, :, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(2, 3)
        freqs = self.apply_interleaved_mrope(freqs, self.mrope_section)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * self.attention_scaling
        sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)

    @staticmethod
    def apply_interleaved_mrope(freqs, mrope_section):
        freqs_t = freqs[0]
        for dim, offset in enumerate((1, 2), start=1):
            length = mrope_section[dim] * 3
            idx = slice(offset, length, 3)
            freqs_t[..., idx] = freqs[dim, ..., idx]
        return freqs_t


def _text(d):
    t = dict(d)
    rs = t.get("rope_scaling") or {}
    return R.Config(dict(t, model_type="qwen3", rope_scaling=None)), rs.get("mrope_section", [24, 20, 20])


def build(cfg, attn_impl=None):
    """cfg: measure_llm.py's Config of text_config's keys with vision_config beside them."""
    text, section = _text(cfg.d)
    model = R.CausalLM(text, attn_impl)
    head_dim = text.head_dim or text.hidden_size // text.num_attention_heads
    model.rotary_emb = MRoPE(text, head_dim, section)
    model.visual = VisionWeights(cfg.d.get("vision_config") or {})
    for p in model.visual.parameters():
        p.requires_grad_(False)
    return model


def counts(path):
    c = json.load(open(path))
    from check_params import MetaMode
    with MetaMode():
        m = build(R.Config(dict(c["text_config"], model_type="qwen3_vl", vision_config=c.get("vision_config") or {})))
    total = sum(p.numel() for p in m.parameters())
    vis = sum(p.numel() for p in m.visual.parameters())
    return {"Qwen3VLForConditionalGeneration": total, "visual": vis, "language_model + lm_head": total - vis}


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(p, json.dumps(counts(p)))
