"""glm4v_replica.py -- Glm4vForConditionalGeneration (GLM-4.1V) on text alone (issue 31), written from the transformers
source, not from vramcalc's engine; measured by measure_llm.py and counted by `python3 glm4v_replica.py CONFIG...`.

Sources read (huggingface/transformers):
  C = models/glm4v/configuration_glm4v.py @ 68c08116ff67bbc0b9a72179d72da9dc2355a4dc: Glm4vVisionConfig's defaults
      (depth 24, hidden_size 1536, attention_bias False, num_heads 12, in_channels 3, image_size 336, patch_size 14,
      spatial_merge_size 2, temporal_patch_size 2, out_hidden_size 4096, intermediate_size 13696); Glm4vTextConfig
      (rms_norm_eps 1e-5, rope_theta 10000, no head_dim, no partial_rotary_factor); Glm4vConfig (text_config None:
      Glm4vTextConfig(**kwargs)).
  M = models/glm4v/modeling_glm4v.py @ 03eac6f6d2af7e8562113f0b78d3d2d59a7d843d:
    - Glm4vTextRotaryEmbedding.forward: inv_freq[None, None, :, None].float().expand(3, B, -1, 1) @
      position_ids[:, :, None, :].float() (position_ids [3, B, L]), transpose(2, 3), cat((freqs, freqs), -1),
      cos() * attention_scaling, sin() * attention_scaling, autocast off, .to(x.dtype);
    - apply_multimodal_rotary_pos_emb: mrope_section * 2, cat([m[i % 3] for i, m in enumerate(cos.split(...))],
      -1).unsqueeze(1) (and sin), cos[..., : cos.shape[-1] // 2].repeat_interleave(2, -1), q_rot / q_pass at
      rotary_dim, (q_rot * cos) + (rotate_half_llm(q_rot) * sin) with rotate_half_llm over x[..., 0::2] / x[..., 1::2]
      (stack((-x2, x1), -1).flatten(-2)), cat([q_embed, q_pass], -1);
    - Glm4vTextAttention: q/k/v nn.Linear(bias=True), o_proj bias=False, head_dim = hidden_size // num_attention_heads,
      view(bsz, q_len, -1, head_dim).transpose(1, 2), the rotation, the cache update, the attention interface,
      reshape, o_proj;
    - Glm4vTextMLP (gate_up_proj, chunk(2), up * act(gate), down_proj) and Glm4vTextDecoderLayer (input_layernorm,
      self_attn, post_self_attn_layernorm, + residual; post_attention_layernorm, mlp, post_mlp_layernorm, + residual):
      Glm4's, near_llama_replica.py's Glm4MLP / Glm4DecoderLayer (modeling_glm4.py @ 00d01786, the same statements);
    - Glm4vTextModel.forward: embed_tokens, cache_position, position_ids (cache_position.view(1, 1, -1).expand(3, B,
      -1) when none is given; Glm4vModel.get_rope_index without images gives arange(L) expanded to [3, B, L], or the
      attention mask's cumsum in generation: int64 tensors of B x L, approximated here by cache_position's), the mask,
      rotary_emb once, the layers, norm; Glm4vForConditionalGeneration: lm_head, the loss (reference.py's head);
    - Glm4vVisionModel.__init__'s parameters (embeddings.position_embedding, patch_embed.proj Conv3d with bias, blocks
      with norm1 / norm2 RMSNorm weights, attn.qkv (bias=attention_bias) / attn.proj, mlp gate_proj / up_proj /
      down_proj to out_hidden_size, merger (proj, post_projection_norm LayerNorm, gate_proj / up_proj / down_proj of
      intermediate_size), post_conv_layernorm, downsample Conv2d with bias, post_layernorm): loaded and frozen, never run
      without pixel_values (Glm4vModel.forward: no image, no tower call).
  R = modeling_rope_utils.py @ 0044e3b3 _compute_default_rope_parameters (reference.py rope_inv_freq: the
      partial_rotary_factor, 1.0 when absent).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))

import torch
import torch.nn as nn

import near_llama_replica as NL
import reference as R

VISION = dict(depth=24, hidden_size=1536, attention_bias=False, num_heads=12, in_channels=3, image_size=336,
              patch_size=14, spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=4096,
              intermediate_size=13696)  # C: Glm4vVisionConfig


def flatten(raw):
    """measure_llm.py's view of a glm4v config.json: text_config's keys (or the config's own, C), model_type glm4v,
    vision_config beside them."""
    t = dict(raw.get("text_config") or {k: v for k, v in raw.items() if k not in ("vision_config", "model_type")})
    t.pop("model_type", None)
    return dict(t, model_type="glm4v", vision_config=raw.get("vision_config") or {})


class RMSWeight(nn.Module):
    """M Glm4vRMSNorm's parameter (never run here)."""

    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))


class VisionWeights(nn.Module):
    """M Glm4vVisionModel.__init__'s parameters, module by module (their shapes only: never run on text)."""

    def __init__(self, v):
        super().__init__()
        k = dict(VISION)
        k.update({n: x for n, x in v.items() if n in VISION and x is not None})
        C, O, I, P, T, M = (k["hidden_size"], k["out_hidden_size"], k["intermediate_size"], k["patch_size"],
                            k["temporal_patch_size"], k["spatial_merge_size"])
        self.embeddings = nn.Module()
        self.embeddings.position_embedding = nn.Embedding((k["image_size"] // P) ** 2, C)
        self.patch_embed = nn.Module()
        self.patch_embed.proj = nn.Conv3d(k["in_channels"], C, kernel_size=[T, P, P], stride=[T, P, P])

        def block():
            b = nn.Module()
            b.norm1, b.norm2 = RMSWeight(C), RMSWeight(C)
            b.attn = nn.Module()
            b.attn.qkv = nn.Linear(C, 3 * C, bias=k["attention_bias"])
            b.attn.proj = nn.Linear(C, C, bias=False)
            b.mlp = nn.Module()
            b.mlp.gate_proj = nn.Linear(C, O, bias=False)
            b.mlp.up_proj = nn.Linear(C, O, bias=False)
            b.mlp.down_proj = nn.Linear(O, C, bias=False)
            return b

        self.blocks = nn.ModuleList(block() for _ in range(k["depth"]))
        self.merger = nn.Module()
        self.merger.proj = nn.Linear(O, O, bias=False)
        self.merger.post_projection_norm = nn.LayerNorm(O)
        self.merger.gate_proj = nn.Linear(O, I, bias=False)
        self.merger.up_proj = nn.Linear(O, I, bias=False)
        self.merger.down_proj = nn.Linear(I, O, bias=False)
        self.post_conv_layernorm = RMSWeight(C)
        self.downsample = nn.Conv2d(C, O, kernel_size=M, stride=M)
        self.post_layernorm = RMSWeight(C)


class Glm4vTextRotaryEmbedding(nn.Module):
    """M Glm4vTextRotaryEmbedding (the default rope: attention_scaling 1.0)."""

    def __init__(self, cfg, head_dim):
        super().__init__()
        inv_freq, self.attention_scaling = R.rope_inv_freq(cfg, head_dim)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        if position_ids.ndim == 2:  # M Glm4vTextModel.forward: the 3 rows (temporal, height, width) of text positions
            position_ids = position_ids.view(1, 1, -1).expand(3, x.shape[0], -1)
        inv_freq_expanded = self.inv_freq[None, None, :, None].float().expand(3, position_ids.shape[1], -1, 1)
        position_ids_expanded = position_ids[:, :, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(2, 3)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * self.attention_scaling
        sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def apply_multimodal_rotary_pos_emb(q, k, cos, sin, mrope_section, unsqueeze_dim=1):
    """M apply_multimodal_rotary_pos_emb, statement by statement."""
    mrope_section = mrope_section * 2
    cos = torch.cat([m[i % 3] for i, m in enumerate(cos.split(mrope_section, dim=-1))], dim=-1).unsqueeze(unsqueeze_dim)
    sin = torch.cat([m[i % 3] for i, m in enumerate(sin.split(mrope_section, dim=-1))], dim=-1).unsqueeze(unsqueeze_dim)
    cos = cos[..., : cos.shape[-1] // 2].repeat_interleave(2, dim=-1)
    sin = sin[..., : sin.shape[-1] // 2].repeat_interleave(2, dim=-1)
    rotary_dim = cos.shape[-1]
    q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]
    k_rot, k_pass = k[..., :rotary_dim], k[..., rotary_dim:]
    q_embed = (q_rot * cos) + (NL.glm4_rotate_half(q_rot) * sin)
    k_embed = (k_rot * cos) + (NL.glm4_rotate_half(k_rot) * sin)
    q_embed = torch.cat([q_embed, q_pass], dim=-1)
    k_embed = torch.cat([k_embed, k_pass], dim=-1)
    return q_embed, k_embed


class Glm4vTextAttention(NL.Glm4Attention):
    """M Glm4vTextAttention: Glm4Attention's projections (q/k/v with bias, head_dim = hidden // heads) with mrope."""

    def __init__(self, cfg, layer_idx, attn_impl, mrope_section):
        super().__init__(cfg, layer_idx, attn_impl)
        self.mrope_section = list(mrope_section)

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key_value=None):
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states)
        key_states = self.k_proj(hidden_states)
        value_states = self.v_proj(hidden_states)
        query_states = query_states.view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        key_states = key_states.view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        value_states = value_states.view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_multimodal_rotary_pos_emb(query_states, key_states, cos, sin,
                                                                   self.mrope_section)
        if past_key_value is not None:
            key_states, value_states = past_key_value.update(key_states, value_states, self.layer_idx)
        dropout = 0.0 if not self.training else self.attention_dropout
        if self.attn_impl == "eager":
            attn_output, _ = R.eager_attention_forward(self, query_states, key_states, value_states,
                                                       attention_mask, self.scaling, dropout)
        else:
            attn_output, _ = R.sdpa_attention_forward(self, query_states, key_states, value_states,
                                                      attention_mask, dropout, self.scaling)
        attn_output = attn_output.reshape(bsz, q_len, -1).contiguous()
        return self.o_proj(attn_output)


def build(cfg, attn_impl=None):
    """cfg: measure_llm.py's Config of flatten()'s keys."""
    d = dict(cfg.d)
    head_dim = d["hidden_size"] // d["num_attention_heads"]  # M Glm4vTextAttention
    section = (d.get("rope_scaling") or {})["mrope_section"]  # M: rope_scaling["mrope_section"] in every forward
    text = R.Config(dict(d, model_type="glm4", head_dim=head_dim, attention_bias=True, rope_scaling=None))
    model = R.CausalLM(text, attn_impl)
    for i, layer in enumerate(model.layers):
        layer.self_attn = Glm4vTextAttention(text, i, model.attn_impl, section)
    model.rotary_emb = Glm4vTextRotaryEmbedding(text, head_dim)
    model.visual = VisionWeights(d.get("vision_config") or {})
    for p in model.visual.parameters():
        p.requires_grad_(False)
    return model


def counts(path):
    raw = json.load(open(path))
    from check_params import MetaMode
    with MetaMode():
        m = build(R.Config(flatten(raw)))
    total = sum(p.numel() for p in m.parameters())
    vis = sum(p.numel() for p in m.visual.parameters())
    return {"Glm4vForConditionalGeneration": total, "visual": vis, "language_model + lm_head": total - vis}


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(p, json.dumps(counts(p)))
