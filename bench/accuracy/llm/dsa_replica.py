"""DeepSeek-V3.2's DeepSeek Sparse Attention (model_type deepseek_v32) as transformers runs it, for the
reference models (reference.py builds DeepseekV32Attention for model_type deepseek_v32; issue 31).

Written from huggingface/transformers @ 01f8fa55d98fbd77fb6461c47ae14fc6206f2f87,
src/transformers/models/deepseek_v32/modeling_deepseek_v32.py:
  DeepseekV32Indexer          wq_b [index_n_heads x index_head_dim, q_lora_rank], wk [index_head_dim, hidden],
                              k_norm nn.LayerNorm(index_head_dim, eps=1e-6), weights_proj [index_n_heads, hidden]
                              (all bias=False); forward under @torch.no_grad: q = wq_b(q_resid).view(B, S, nh, hd),
                              split [qk_rope_head_dim, rest]; k = k_norm(wk(hidden)).unsqueeze(2), split alike;
                              apply_rotary_pos_emb (rotate_half, unsqueeze_dim=2) on the rotary parts; cat back;
                              past_key_values.update_indexer(k) in generation; scores = matmul(q.float(),
                              k.transpose(-1, -2).float().unsqueeze(1)) * softmax_scale, relu; weights =
                              weights_proj(hidden.to(weights_proj.weight.dtype)).float() * nh^-0.5; index_scores =
                              matmul(weights.unsqueeze(-2), scores).squeeze(-2); masked_fill(~mask, -inf) of a bool
                              mask; topk(min(index_topk, T)).indices.to(int32)
  DeepseekV32Attention.forward q_resid = q_a_layernorm(q_a_proj(x)) (q_b_proj reads it, the indexer too); the MLA
                              steps; apply_rotary_pos_emb_interleave on even / odd slices (cat of two products);
                              expand_kv (kv_b_proj, new_empty key_states, copy_ of k_nope and the expanded k_rot);
                              past_key_values.update(key_states, value_states) (the full per-head K/V); the indexer
                              on attention_mask[:, 0]; under sdpa / eager index_mask = new_ones([B, S, T], bool)
                              .scatter(-1, topk.long(), False).unsqueeze(1), attention_mask & ~index_mask (bool)
  DeepseekV32Model.forward    create_causal_mask(..., allow_is_causal_skip=False): a bool mask always
The MLA modules, DeepseekV3RMSNorm and the MoE are mla_replica.py's (DeepseekV32MoE / TopkRouter / Experts are
DeepSeek-V3's).

GLM-5 (model_type glm_moe_dsa), written from src/transformers/models/glm_moe_dsa/modular_glm_moe_dsa.py @
01f8fa55d98fbd77fb6461c47ae14fc6206f2f87 and configuration_glm_moe_dsa.py @ 008e574391258935f3ecc3035c882e73bbcac419:
  GlmMoeDsaIndexer.forward    DeepseekV32Indexer's, the rotary parts through DeepSeek-V3's
                              apply_rotary_pos_emb_interleave (unsqueeze_dim=2; mla_replica.py: view / transpose /
                              reshape, then rotate_half) instead of apply_rotary_pos_emb
  GlmMoeDsaAttention.forward  DeepseekV32Attention's steps with DeepSeek-V3's apply_rotary_pos_emb_interleave on q_rot /
                              k_rot; an indexer in every "full" layer (indexer_types), none in a "shared" one, which
                              masks with prev_topk_indices (the previous layer's returned top-k); index_n_heads 32
                              by default
  GlmMoeDsaModel.forward      create_causal_mask(..., allow_is_causal_skip=False), as DeepSeek-V3.2's; topk_indices
                              threaded from layer to layer (reference.py's loop). The bool mask's sdpa conversion is packing_replica.bool_to_additive (reference.sdpa_attention_forward).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import mla_replica
import vctorch
from packing_replica import _non_vmap_expansion_sdpa, causal_mask_function


def create_causal_mask(inputs_embeds, past_seen):
    """masking_utils.create_causal_mask with allow_is_causal_skip=False under sdpa (no padding mask): the causal
    mask function on the four aranges (_non_vmap_expansion_sdpa), expanded to the batch: bool [B, 1, S, T]."""
    B, S = inputs_embeds.shape[:2]
    q_arange = torch.arange(S) + past_seen
    kv_arange = torch.arange(past_seen + S)
    m = causal_mask_function(*_non_vmap_expansion_sdpa(torch.arange(B), torch.arange(1), q_arange, kv_arange))
    return m.expand(B, -1, S, past_seen + S)


class DeepseekV32Indexer(nn.Module):
    def __init__(self, cfg, layer_idx, linear):
        super().__init__()
        self.layer_idx = layer_idx
        self.n_heads = cfg.d.get("index_n_heads", 32 if cfg.model_type == "glm_moe_dsa" else 64)
        self.head_dim = cfg.d.get("index_head_dim", 128)
        self.qk_rope_head_dim = cfg.d["qk_rope_head_dim"]
        self.index_topk = cfg.d.get("index_topk", 2048)
        self.wq_b = linear(cfg.d["q_lora_rank"], self.n_heads * self.head_dim, bias=False)
        self.wk = linear(cfg.hidden_size, self.head_dim, bias=False)
        self.k_norm = vctorch._LayerNorm2x(self.head_dim, eps=1e-6)
        self.weights_proj = linear(cfg.hidden_size, self.n_heads, bias=False)
        self.softmax_scale = self.head_dim ** -0.5
        self.rotate = mla_replica.apply_rotary_pos_emb

    @torch.no_grad()
    def forward(self, hidden_states, q_resid, position_embeddings, attention_mask, past_key_values=None):
        B, S, _ = hidden_states.shape
        cos, sin = position_embeddings
        q = self.wq_b(q_resid)
        q = q.view(B, S, self.n_heads, self.head_dim)
        q_rot, q_pass = torch.split(q, [self.qk_rope_head_dim, self.head_dim - self.qk_rope_head_dim], dim=-1)
        k = self.k_norm(self.wk(hidden_states)).unsqueeze(2)
        k_rot, k_pass = torch.split(k, [self.qk_rope_head_dim, self.head_dim - self.qk_rope_head_dim], dim=-1)
        q_rot, k_rot = self.rotate(q_rot, k_rot, cos, sin, unsqueeze_dim=2)
        q = torch.cat([q_rot, q_pass], dim=-1)
        k = torch.cat([k_rot, k_pass], dim=-1).squeeze(2)
        if past_key_values is not None:
            k = past_key_values.update_indexer(k, self.layer_idx)
        scores = torch.matmul(q.float(), k.transpose(-1, -2).float().unsqueeze(1)) * self.softmax_scale
        scores = F.relu(scores)
        weights = self.weights_proj(hidden_states.to(self.weights_proj.weight.dtype)).float() * (self.n_heads ** -0.5)
        index_scores = torch.matmul(weights.unsqueeze(-2), scores).squeeze(-2)
        index_scores = index_scores.masked_fill(~attention_mask, float("-inf"))
        topk = min(self.index_topk, index_scores.shape[-1])
        return index_scores.topk(topk, dim=-1).indices.to(torch.int32)


def apply_rotary_pos_emb_interleave(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos[..., : cos.shape[-1] // 2].unsqueeze(unsqueeze_dim)
    sin = sin[..., : sin.shape[-1] // 2].unsqueeze(unsqueeze_dim)
    q1, q2 = q[..., 0::2], q[..., 1::2]
    k1, k2 = k[..., 0::2], k[..., 1::2]
    q_embed = torch.cat([q1 * cos - q2 * sin, q2 * cos + q1 * sin], dim=-1)
    k_embed = torch.cat([k1 * cos - k2 * sin, k2 * cos + k1 * sin], dim=-1)
    return q_embed, k_embed


class DeepseekV32Attention(mla_replica.DeepseekV3Attention):
    def __init__(self, cfg, layer_idx, attn_impl, linear, sdpa):
        super().__init__(cfg, layer_idx, attn_impl, linear, sdpa)
        self.indexer = DeepseekV32Indexer(cfg, layer_idx, linear)
        self.rotate = apply_rotary_pos_emb_interleave

    def expand_kv(self, kv_nope, k_rot):
        batch_size, _, seq_length, _ = kv_nope.shape
        key_shape = (batch_size, seq_length, -1, self.qk_nope_head_dim + self.v_head_dim)
        kv_nope = self.kv_b_proj(kv_nope).view(key_shape).transpose(1, 2)
        k_nope, value_states = torch.split(kv_nope, [self.qk_nope_head_dim, self.v_head_dim], dim=-1)
        k_rot = k_rot.expand(-1, k_nope.shape[1], -1, -1)
        key_states = kv_nope.new_empty(*kv_nope.shape[:-1], self.qk_nope_head_dim + self.qk_rope_head_dim)
        key_states[..., : self.qk_nope_head_dim].copy_(k_nope)
        key_states[..., self.qk_nope_head_dim:].copy_(k_rot)
        return key_states, value_states

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key_value=None):
        batch_size, seq_length = hidden_states.shape[:-1]
        query_shape = (batch_size, seq_length, -1, self.qk_head_dim)
        q_resid = self.q_a_layernorm(self.q_a_proj(hidden_states))
        q_states = self.q_b_proj(q_resid).view(query_shape).transpose(1, 2)
        q_pass, q_rot = torch.split(q_states, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        compressed_kv = self.kv_a_proj_with_mqa(hidden_states)
        kv_pass, k_rot = torch.split(compressed_kv, [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        k_pass = self.kv_a_layernorm(kv_pass).view(batch_size, 1, seq_length, self.kv_lora_rank)
        k_rot = k_rot.view(batch_size, 1, seq_length, self.qk_rope_head_dim)
        cos, sin = position_embeddings
        q_rot, k_rot = self.rotate(q_rot, k_rot, cos, sin)
        query_states = torch.cat((q_pass, q_rot), dim=-1)
        key_states, value_states = self.expand_kv(k_pass, k_rot)
        if past_key_value is not None:
            key_states, value_states = past_key_value.update(key_states, value_states, self.layer_idx)
        topk_indices = self.select_topk(hidden_states, q_resid, position_embeddings, attention_mask, past_key_value)
        index_mask = (topk_indices.new_ones((batch_size, seq_length, key_states.shape[2]), dtype=torch.bool)
                      .scatter(-1, topk_indices.long(), False).unsqueeze(1))
        attention_mask = attention_mask & ~index_mask
        attn_output, _ = self.sdpa(self, query_states, key_states, value_states, attention_mask,
                                   0.0 if not self.training else self.attention_dropout, self.scaling)
        attn_output = attn_output.reshape(batch_size, seq_length, -1).contiguous()
        return self.o_proj(attn_output)

    def select_topk(self, hidden_states, q_resid, position_embeddings, attention_mask, past_key_value):
        """The indexer's call in forward (a method so that GlmMoeDsaAttention can take a shared layer's top-k)."""
        return self.indexer(hidden_states, q_resid, position_embeddings, attention_mask[:, 0, :, :],
                            past_key_values=past_key_value)


def glm_indexer_types(d, n):
    """GlmMoeDsaConfig.__post_init__ (configuration_glm_moe_dsa.py @ 008e5743): indexer_types, else
    index_topk_pattern ("F" / "S" letters or a list), else from index_topk_freq / index_skip_topk_offset."""
    if d.get("indexer_types") is not None:
        return list(d["indexer_types"])
    pattern = d.get("index_topk_pattern")
    if pattern is not None:
        return [{"F": "full", "S": "shared"}[c] for c in pattern] if isinstance(pattern, str) else list(pattern)
    freq = max(d.get("index_topk_freq", 1), 1)
    offset = d.get("index_skip_topk_offset", 2)
    return ["full" if (max(i - offset + 1, 0) % freq) == 0 else "shared" for i in range(n)]


class GlmMoeDsaAttention(DeepseekV32Attention):
    """GlmMoeDsaAttention and its GlmMoeDsaIndexer: DeepSeek-V3's apply_rotary_pos_emb_interleave in both (the steps
    are DeepseekV32Attention's otherwise). A "shared" layer (indexer_types) builds no indexer (self.indexer None) and
    uses prev_topk_indices, the top-k the previous layer returned; every layer returns its topk_indices, which
    GlmMoeDsaModel.forward keeps as its loop variable (reference.py: the model's loop sets prev_topk_indices before
    the layer and takes topk_indices after it returns, as GlmMoeDsaDecoderLayer's arguments and return value)."""

    def __init__(self, cfg, layer_idx, attn_impl, linear, sdpa):
        super().__init__(cfg, layer_idx, attn_impl, linear, sdpa)
        self.rotate = mla_replica.apply_rotary_pos_emb_interleave
        self.skip_topk = glm_indexer_types(cfg.d, cfg.num_hidden_layers)[layer_idx] == "shared"
        if self.skip_topk:
            self.indexer = None
        else:
            self.indexer.rotate = mla_replica.apply_rotary_pos_emb_interleave
        self.prev_topk_indices = None

    def select_topk(self, hidden_states, q_resid, position_embeddings, attention_mask, past_key_value):
        if self.indexer is not None:
            topk_indices = super().select_topk(hidden_states, q_resid, position_embeddings, attention_mask, past_key_value)
        else:
            if self.prev_topk_indices is None:
                raise ValueError("Shared DSA layers require top-k indices from a previous full indexer layer.")
            topk_indices = self.prev_topk_indices
        self.topk_indices = topk_indices  # GlmMoeDsaAttention.forward's third return value
        return topk_indices


def update_indexer(cache, indexer_key_states, layer_idx):
    """cache_utils.DynamicIndexedLayer.update_indexer: indexer_keys = cat([indexer_keys, new], dim=1) (lazily an
    empty tensor first), returned whole."""
    ik = cache.__dict__.setdefault("indexer_keys", {})
    if layer_idx not in ik:
        ik[layer_idx] = torch.tensor([], dtype=indexer_key_states.dtype)
    ik[layer_idx] = torch.cat([ik[layer_idx], indexer_key_states], dim=1)
    return ik[layer_idx]
