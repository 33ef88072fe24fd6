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
  Qwen3-VL-MoE (model_type qwen3_vl_moe) on text alone, the same way:
  MC = models/qwen3_vl_moe/configuration_qwen3_vl_moe.py @008e5743, MM = models/qwen3_vl_moe/modeling_qwen3_vl_moe.py
  @0142cff2: Qwen3VLMoeTextDecoderLayer is the dense layer above with mlp Qwen3VLMoeTextSparseMoeBlock where
  layer_idx not in mlp_only_layers and (layer_idx + 1) % decoder_sparse_step == 0 (num_experts > 0), else
  Qwen3VLMoeTextMLP(intermediate_size); the block: gate Qwen3VLMoeTextTopKRouter (weight [E, H], F.linear,
  softmax(dtype=float), topk, always renormalized in place, .to(logits dtype): moe_v5_replica.Qwen2MoeTopKRouter
  with norm_topk_prob True), experts Qwen3VLMoeTextExperts (gate_up_proj [E, 2I, H], down_proj [E, H, I],
  @use_experts_implementation: grouped_mm by default, moe_v5_replica.Qwen2MoeExperts), forward view(-1, H),
  gate, experts, reshape; no shared expert. The vision tower's weights as Qwen3-VL's (Qwen3VLMoeVisionConfig
  has Qwen3VLVisionConfig's keys and defaults).
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


class Qwen3VLMoeTextSparseMoeBlock(nn.Module):
    """MM: Qwen3VLMoeTextSparseMoeBlock (transformers 5's stacked experts through grouped_mm)."""

    def __init__(self, cfg):
        super().__init__()
        import moe_v5_replica
        self.experts = moe_v5_replica.Qwen2MoeExperts(cfg, R.act_fn(cfg.hidden_act))
        self.gate = moe_v5_replica.Qwen2MoeTopKRouter(cfg)

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states_reshaped = hidden_states.view(-1, hidden_dim)
        _, routing_weights, selected_experts = self.gate(hidden_states_reshaped)
        final_hidden_states = self.experts(hidden_states_reshaped, selected_experts, routing_weights)
        return final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)


def _moe_config(d):
    """MC: Qwen3VLMoeTextConfig's defaults for the MoE keys; the router always renormalizes."""
    m = dict(d)
    m.setdefault("num_experts", m.get("num_local_experts", 60))
    m.setdefault("num_experts_per_tok", 4)
    m.setdefault("moe_intermediate_size", 1408)
    m["norm_topk_prob"] = True
    return R.Config(dict(m, model_type="qwen3"))


def build(cfg, attn_impl=None):
    """cfg: measure_llm.py's Config of text_config's keys with vision_config beside them."""
    text, section = _text(cfg.d)
    model = R.CausalLM(text, attn_impl)
    if cfg.d.get("model_type") == "qwen3_vl_moe":
        if cfg.d.get("_experts_implementation", "grouped_mm") != "grouped_mm":
            raise ValueError("qwen3_vl_moe is replicated with transformers 5's experts: --experts grouped_mm")
        mc = _moe_config(cfg.d)
        only = cfg.d.get("mlp_only_layers") or []
        step = cfg.d.get("decoder_sparse_step", 1)
        for i, layer in enumerate(model.layers):
            if i not in only and mc.num_experts > 0 and (i + 1) % step == 0:
                layer.mlp = Qwen3VLMoeTextSparseMoeBlock(mc)
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
        m = build(R.Config(dict(c["text_config"], model_type=c["model_type"], vision_config=c.get("vision_config") or {})))
    total = sum(p.numel() for p in m.parameters())
    vis = sum(p.numel() for p in m.visual.parameters())
    return {"Qwen3VLForConditionalGeneration": total, "visual": vis, "language_model + lm_head": total - vis}


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(p, json.dumps(counts(p)))
