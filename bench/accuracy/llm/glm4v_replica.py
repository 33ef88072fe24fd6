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
    With images (build_image, measure_llm.py --image): Glm4vVisionPatchEmbed.forward (view(-1, C, T, P, P),
      .to(proj.weight.dtype), Conv3d, view(-1, hidden)), Glm4vRMSNorm (LlamaRMSNorm's statements),
      Glm4vVisionRotaryEmbedding, Glm4vVisionModel.rot_pos_emb, Glm4vVisionEmbeddings.forward (the bicubic
      F.grid_sample of the position table), apply_rotary_pos_emb_vision, Glm4vVisionAttention.forward (sdpa: each
      cu_seqlens chunk separately, cat), Glm4VisionMlp, Glm4vVisionBlock, Glm4vVisionPatchMerger,
      Glm4vVisionModel.forward (patch_embed, post_conv_layernorm, rot_pos_emb, (emb.cos(), emb.sin()), cu_seqlens,
      embeddings, blocks, post_layernorm, view / permute, downsample Conv2d, view, merger), statement by statement;
      Glm4vModel.get_image_features (pixel_values.type(visual.dtype), visual, torch.split) and forward
      (torch.cat(...).to(dtype), get_placeholder_mask, masked_scatter, get_rope_index's [3, B, L] positions): the
      statements qwen3vl_tower_replica.EmbedVL replicates for Qwen3VLModel.forward @ 00709b86 (no deepstack here),
      reused.
  P = models/glm4v/image_processing_glm4v.py @ 1505215df303467822c2ef407e277381f9d290f1: smart_resize(num_frames =
      temporal_patch_size, h, w, temporal_factor = temporal_patch_size, factor = patch_size * merge_size, min_pixels =
      size["shortest_edge"], max_pixels = size["longest_edge"]; the class's defaults 112 * 112 and 28 * 28 * 15000),
      _preprocess: pixel_values [grid_h * grid_w, C * T * P * P] float32, image_grid_thw (1, h / P, w / P).
  R = modeling_rope_utils.py @ 0044e3b3 _compute_default_rope_parameters (reference.py rope_inv_freq: the
      partial_rotary_factor, 1.0 when absent).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import near_llama_replica as NL
import qwen3vl_tower_replica as QT
import reference as R
import vctorch

VISION = dict(depth=24, hidden_size=1536, attention_bias=False, num_heads=12, in_channels=3, image_size=336,
              patch_size=14, spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=4096,
              intermediate_size=13696)  # C: Glm4vVisionConfig


def flatten(raw):
    """measure_llm.py's view of a glm4v config.json: text_config's keys (or the config's own, C), model_type glm4v,
    vision_config beside them."""
    t = dict(raw.get("text_config") or {k: v for k, v in raw.items() if k not in ("vision_config", "model_type")})
    t.pop("model_type", None)
    return dict(t, model_type="glm4v", vision_config=raw.get("vision_config") or {},
                image_token_id=raw.get("image_token_id"))  # the image path's placeholder id (build_image)


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


# ---------------------------------------------------------------------------------------------- the tower on images
def smart_resize(height, width, factor=28, num_frames=2, temporal_factor=2, min_pixels=112 * 112,
                 max_pixels=28 * 28 * 15000):
    """P smart_resize, statement by statement (Glm4vImageProcessor's defaults)."""
    if num_frames < temporal_factor:
        raise ValueError("num_frames")
    if height < factor or width < factor:
        raise ValueError("height:%d or width:%d must be larger than factor:%d" % (height, width, factor))
    if max(height, width) / min(height, width) > 200:
        raise ValueError("aspect ratio")
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    t_bar = round(num_frames / temporal_factor) * temporal_factor
    if t_bar * h_bar * w_bar > max_pixels:
        beta = math.sqrt((num_frames * height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif t_bar * h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (num_frames * height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def vision_keys(v):
    """measure_llm.py's view of the tower (qwen25vl_replica.vision_keys' names), C's defaults."""
    k = dict(VISION, hidden_act="silu")
    k.update({n: x for n, x in v.items() if n in k and x is not None})
    return dict(C=k["hidden_size"], NH=k["num_heads"], cin=k["in_channels"], P=k["patch_size"],
                M=k["spatial_merge_size"], T=k["temporal_patch_size"], out=k["out_hidden_size"],
                I=k["intermediate_size"], depth=k["depth"], img=k["image_size"], act=k["hidden_act"],
                bias=k["attention_bias"])


class VisionAttention(QT.VisionAttention):
    """M Glm4vVisionAttention.forward (sdpa: "Other implementations: Process each chunk separately"): the statements of
    Qwen3VLVisionAttention.forward and apply_rotary_pos_emb_vision that qwen3vl_tower_replica.VisionAttention
    replicates, reused; M's qkv nn.Linear(bias=attention_bias), proj nn.Linear(bias=False)."""

    def __init__(self, C, NH, bias):
        super().__init__(C, NH)
        self.qkv = R.Linear(C, 3 * C, bias=bias)
        self.proj = R.Linear(C, C, bias=False)


class SwiGLU(nn.Module):
    """M Glm4VisionMlp(bias=False) and the tail of Glm4vVisionPatchMerger: down(act(gate(x)) * up(x))."""

    def __init__(self, C, I, act):
        super().__init__()
        self.gate_proj = R.Linear(C, I, bias=False)
        self.up_proj = R.Linear(C, I, bias=False)
        self.down_proj = R.Linear(I, C, bias=False)
        self.act_fn = R.act_fn(act)

    def forward(self, hidden_state):
        return self.down_proj(self.act_fn(self.gate_proj(hidden_state)) * self.up_proj(hidden_state))


class VisionBlock(nn.Module):
    """M Glm4vVisionBlock."""

    def __init__(self, k):
        super().__init__()
        self.norm1 = R.LlamaRMSNorm(k["C"], eps=1e-5)
        self.norm2 = R.LlamaRMSNorm(k["C"], eps=1e-5)
        self.attn = VisionAttention(k["C"], k["NH"], k["bias"])
        self.mlp = SwiGLU(k["C"], k["out"], k["act"])

    def forward(self, hidden_states, cu_seqlens, position_embeddings):
        hidden_states = hidden_states + self.attn(self.norm1(hidden_states), cu_seqlens, position_embeddings)
        hidden_states = hidden_states + self.mlp(self.norm2(hidden_states))
        return hidden_states


class PatchMerger(nn.Module):
    """M Glm4vVisionPatchMerger."""

    def __init__(self, dim, context_dim, act):
        super().__init__()
        self.proj = R.Linear(dim, dim, bias=False)
        self.post_projection_norm = vctorch._LayerNorm2x(dim)
        self.act1 = nn.GELU()
        self.mlp = SwiGLU(dim, context_dim, act)

    def forward(self, hidden_state):
        hidden_state = self.proj(hidden_state)
        hidden_state = self.act1(self.post_projection_norm(hidden_state))
        return self.mlp(hidden_state)


class Embeddings(nn.Module):
    """M Glm4vVisionEmbeddings."""

    def __init__(self, k):
        super().__init__()
        self.position_embedding = nn.Embedding((k["img"] // k["P"]) ** 2, k["C"])

    def forward(self, embeddings, lengths, image_shapes, h_coords, w_coords):
        pos_embed_weight = self.position_embedding.weight
        hidden_size = pos_embed_weight.shape[1]
        if isinstance(lengths, list):
            lengths = torch.tensor(lengths, dtype=torch.long)
        orig_size = int(pos_embed_weight.shape[0] ** 0.5)
        pos_embed_2d = pos_embed_weight.view(orig_size, orig_size, hidden_size).permute(2, 0, 1).unsqueeze(0).to(
            dtype=torch.float32)
        target_h = torch.cat([image_shapes[i, 1].repeat(lengths[i]) for i in range(len(lengths))]).to(dtype=torch.float32)
        target_w = torch.cat([image_shapes[i, 2].repeat(lengths[i]) for i in range(len(lengths))]).to(dtype=torch.float32)
        h_coords = h_coords.to(dtype=torch.float32)
        w_coords = w_coords.to(dtype=torch.float32)
        norm_w = ((w_coords + 0.5) / target_w) * 2 - 1
        norm_h = ((h_coords + 0.5) / target_h) * 2 - 1
        grid = torch.stack((norm_w, norm_h), dim=-1).unsqueeze(0).unsqueeze(2)
        interpolated_embed_fp32 = F.grid_sample(pos_embed_2d, grid, mode="bicubic", align_corners=False,
                                                padding_mode="border")
        adapted_pos_embed_fp32 = interpolated_embed_fp32.squeeze(0).squeeze(-1).permute(1, 0)
        adapted_pos_embed = adapted_pos_embed_fp32.to(pos_embed_weight.dtype).to(embeddings.device)
        embeddings = embeddings + adapted_pos_embed
        return embeddings


class VisionModel(nn.Module):
    """M Glm4vVisionModel, frozen; forward returns (None, merger output, []) for qwen3vl_tower_replica.EmbedVL (the
    blocks' output is not kept past post_layernorm)."""

    def __init__(self, v):
        super().__init__()
        k = self.k = vision_keys(v)
        C, O = k["C"], k["out"]
        self.spatial_merge_size = k["M"]
        self.embeddings = Embeddings(k)
        self.patch_embed = nn.Module()
        kern = (k["T"], k["P"], k["P"])
        self.patch_embed.proj = nn.Conv3d(k["cin"], C, kernel_size=kern, stride=kern)
        dim = (C // k["NH"]) // 2
        self.rotary_pos_emb = nn.Module()
        self.rotary_pos_emb.register_buffer(
            "inv_freq", 1.0 / (10000.0 ** (torch.arange(0, dim, 2, dtype=torch.float) / dim)), persistent=False)
        self.blocks = nn.ModuleList(VisionBlock(k) for _ in range(k["depth"]))
        self.merger = PatchMerger(O, k["I"], k["act"])
        self.post_conv_layernorm = R.LlamaRMSNorm(C, eps=1e-5)
        self.downsample = nn.Conv2d(C, O, kernel_size=k["M"], stride=k["M"])
        self.post_layernorm = R.LlamaRMSNorm(C, eps=1e-5)
        self.requires_grad_(False)

    def rot_pos_emb(self, grid_thw):
        m = self.spatial_merge_size
        pos_ids = []
        for t, h, w in grid_thw:
            hpos_ids = torch.arange(h).unsqueeze(1).expand(-1, w)
            hpos_ids = hpos_ids.reshape(h // m, m, w // m, m).permute(0, 2, 1, 3).flatten()
            wpos_ids = torch.arange(w).unsqueeze(0).expand(h, -1)
            wpos_ids = wpos_ids.reshape(h // m, m, w // m, m).permute(0, 2, 1, 3).flatten()
            pos_ids.append(torch.stack([hpos_ids, wpos_ids], dim=-1).repeat(t, 1))
        pos_ids = torch.cat(pos_ids, dim=0)
        max_grid_size = grid_thw[:, 1:].max()
        seq = torch.arange(max_grid_size, dtype=self.rotary_pos_emb.inv_freq.dtype)
        rotary_pos_emb_full = torch.outer(seq, self.rotary_pos_emb.inv_freq)
        rotary_pos_emb = rotary_pos_emb_full[pos_ids].flatten(1)
        return rotary_pos_emb, pos_ids

    def forward(self, hidden_states, grid_thw):
        k = self.k
        x = hidden_states.view(-1, k["cin"], k["T"], k["P"], k["P"])
        hidden_states = self.patch_embed.proj(x.to(dtype=self.patch_embed.proj.weight.dtype)).view(-1, k["C"])
        del x
        hidden_states = self.post_conv_layernorm(hidden_states)
        rotary_pos_emb, image_type_ids = self.rot_pos_emb(grid_thw)
        emb = torch.cat((rotary_pos_emb, rotary_pos_emb), dim=-1)
        position_embeddings = (emb.cos(), emb.sin())
        cu_seqlens = torch.repeat_interleave(grid_thw[:, 1] * grid_thw[:, 2], grid_thw[:, 0]).cumsum(
            dim=0, dtype=torch.int32)
        cu_seqlens = F.pad(cu_seqlens, (1, 0), value=0)
        seqlens = (cu_seqlens[1:] - cu_seqlens[:-1]).tolist()
        hidden_states = self.embeddings(hidden_states, seqlens, grid_thw, image_type_ids[:, 0], image_type_ids[:, 1])
        for blk in self.blocks:
            hidden_states = blk(hidden_states, cu_seqlens, position_embeddings)
        hidden_states = self.post_layernorm(hidden_states)
        hidden_states = hidden_states.view(-1, self.spatial_merge_size, self.spatial_merge_size, hidden_states.shape[-1])
        hidden_states = hidden_states.permute(0, 3, 1, 2)
        hidden_states = self.downsample(hidden_states).view(-1, k["out"])
        hidden_states = self.merger(hidden_states)
        return None, hidden_states, []


def build_image(cfg, attn_impl=None):
    """build()'s model with the tower run on images: Glm4vModel.forward's image path as qwen3vl_tower_replica.EmbedVL
    (the same statements, no deepstack), what it keeps dropped after the final norm (Glm4vModel.forward returns before
    lm_head and the loss)."""
    model = build(cfg, attn_impl)
    model.visual = VisionModel(cfg.d.get("vision_config") or {})
    emb = model.embed_tokens
    model.embed_tokens = QT.EmbedVL(emb, model.visual, cfg.d["image_token_id"])

    def drop(*_):
        model.embed_tokens.stash = None
    model.norm.register_forward_hook(drop)
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
