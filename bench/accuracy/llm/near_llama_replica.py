"""Near-llama decoder families (issue 31) for reference.py's CausalLM, written from the transformers source
(GLM-4 below; OLMo 3, OLMo 2, StarCoder2, EXAONE 4.0, Seed-OSS, Arcee and Nemotron each cited at its classes).

GLM-4 (GLM-4-9B-0414, GLM-4-32B-0414, GLM-Z1): models/glm4/modeling_glm4.py @ 00d01786
(huggingface/transformers), each class cited below:
  - Glm4DecoderLayer: input_layernorm -> self_attn -> post_self_attn_layernorm -> + residual;
    post_attention_layernorm -> mlp -> post_mlp_layernorm -> + residual (Gemma2's four norm places,
    Glm4RMSNorm = LlamaRMSNorm's ops);
  - Glm4Attention: q/k/v_proj with bias=config.attention_bias, o_proj bias=False, scaling head_dim**-0.5,
    apply_rotary_pos_emb (the module's): cos / sin[..., : cos.shape[-1] // 2].repeat_interleave(2, dim=-1),
    q_rot / q_pass split at rotary_dim, rotate_half over x[..., 0::2] / x[..., 1::2] with
    torch.stack((-x2, x1), dim=-1).flatten(-2), torch.cat([q_embed, q_pass], dim=-1);
  - Glm4MLP: gate_up_proj (hidden -> 2 x intermediate, no bias), up_states.chunk(2, dim=-1),
    up_states * activation_fn(gate), down_proj;
  - Glm4RotaryEmbedding: the default rope of partial_rotary_factor x head_dim (Glm4Config.__post_init__:
    partial_rotary_factor 0.5 by default; reference.py rope_inv_freq reads it).
The attention interface is reference.py's (sdpa_attention_forward / eager_attention_forward, the same
integrations/sdpa_attention.py); nothing here comes from vramcalc's engine.
"""

import torch
import torch.nn as nn

import reference as R


def glm4_rotate_half(x):
    """Glm4 rotate_half: interleaved (even, odd) pairs."""
    x1 = x[..., 0::2]
    x2 = x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def glm4_apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    """Glm4's apply_rotary_pos_emb, statement by statement."""
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    # Interleave them instead of usual shape
    cos = cos[..., : cos.shape[-1] // 2].repeat_interleave(2, dim=-1)
    sin = sin[..., : sin.shape[-1] // 2].repeat_interleave(2, dim=-1)
    # Keep half or full tensor for later concatenation
    rotary_dim = cos.shape[-1]
    q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]
    k_rot, k_pass = k[..., :rotary_dim], k[..., rotary_dim:]
    # Apply rotary embeddings on the first half or full tensor
    q_embed = (q_rot * cos) + (glm4_rotate_half(q_rot) * sin)
    k_embed = (k_rot * cos) + (glm4_rotate_half(k_rot) * sin)
    # Concatenate back to full shape
    q_embed = torch.cat([q_embed, q_pass], dim=-1)
    k_embed = torch.cat([k_embed, k_pass], dim=-1)
    return q_embed, k_embed


class Glm4Attention(nn.Module):
    """Glm4Attention.__init__ / forward."""

    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        self.layer_idx = layer_idx
        self.attn_impl = attn_impl
        self.head_dim = cfg.d.get("head_dim", 128)
        self.num_key_value_groups = cfg.num_attention_heads // cfg.num_key_value_heads
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = cfg.attention_dropout
        H, nh, nkv, hd = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, self.head_dim
        b = cfg.d.get("attention_bias", True)  # Glm4Config.attention_bias: True
        self.q_proj = R.Linear(H, nh * hd, bias=b)
        self.k_proj = R.Linear(H, nkv * hd, bias=b)
        self.v_proj = R.Linear(H, nkv * hd, bias=b)
        self.o_proj = R.Linear(nh * hd, H, bias=False)

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key_value=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = glm4_apply_rotary_pos_emb(query_states, key_states, cos, sin)
        if past_key_value is not None:
            key_states, value_states = past_key_value.update(key_states, value_states, self.layer_idx)
        dropout = 0.0 if not self.training else self.attention_dropout
        if self.attn_impl == "eager":
            attn_output, _ = R.eager_attention_forward(self, query_states, key_states, value_states,
                                                       attention_mask, self.scaling, dropout)
        else:
            attn_output, _ = R.sdpa_attention_forward(self, query_states, key_states, value_states,
                                                      attention_mask, dropout, self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class Glm4MLP(nn.Module):
    """Glm4MLP.forward."""

    def __init__(self, cfg):
        super().__init__()
        H, I = cfg.hidden_size, cfg.intermediate_size
        self.gate_up_proj = R.Linear(H, 2 * I, bias=False)
        self.down_proj = R.Linear(I, H, bias=False)
        self.activation_fn = R.act_fn(cfg.hidden_act)

    def forward(self, hidden_states):
        up_states = self.gate_up_proj(hidden_states)
        gate, up_states = up_states.chunk(2, dim=-1)
        up_states = up_states * self.activation_fn(gate)
        return self.down_proj(up_states)


class Glm4DecoderLayer(nn.Module):
    """Glm4DecoderLayer.__init__ / forward (the four Glm4RMSNorms)."""

    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        H, eps = cfg.hidden_size, cfg.rms_norm_eps
        self.self_attn = Glm4Attention(cfg, layer_idx, attn_impl)
        self.mlp = Glm4MLP(cfg)
        self.input_layernorm = R.LlamaRMSNorm(H, eps=eps)
        self.post_attention_layernorm = R.LlamaRMSNorm(H, eps=eps)
        self.post_self_attn_layernorm = R.LlamaRMSNorm(H, eps=eps)
        self.post_mlp_layernorm = R.LlamaRMSNorm(H, eps=eps)

    def forward(self, hidden_states, attention_mask, position_embeddings, past_key_value=None,
                cache_len=0, last_cache_position=0):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask, past_key_value)
        hidden_states = self.post_self_attn_layernorm(hidden_states)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = self.post_mlp_layernorm(hidden_states)
        hidden_states = residual + hidden_states
        return hidden_states


# --------------------------------------------------------------------------
# OLMo 3: models/olmo3/modeling_olmo3.py @ 0233e509 (configuration_olmo3.py @ 008e5743)
# --------------------------------------------------------------------------

class Olmo3RMSNorm(nn.Module):
    """Olmo3RMSNorm.forward: (self.weight * hidden_states).to(input_dtype), the product in float32."""

    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = R.vctorch.mean2x(hidden_states.pow(2), -1, keepdim=True)  # 2.x's MeanBackward1 (reference.py)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return (self.weight * hidden_states).to(input_dtype)


def olmo3_layer_types(cfg):
    """Olmo3Config.__post_init__: the config's layer_types, else sliding where (i + 1) % 4."""
    if cfg.d.get("layer_types"):
        return list(cfg.d["layer_types"])
    return ["sliding_attention" if (i + 1) % 4 != 0 else "full_attention" for i in range(cfg.num_hidden_layers)]


def olmo3_apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    """Olmo3's apply_rotary_pos_emb: llama's, then q_embed.to(q_type) (the same dtype: no copy)."""
    q_type, k_type = q.dtype, k.dtype
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (R.rotate_half(q) * sin)
    k_embed = (k * cos) + (R.rotate_half(k) * sin)
    return q_embed.to(q_type), k_embed.to(k_type)


class Olmo3Attention(nn.Module):
    """Olmo3Attention.__init__ / forward: q_norm / k_norm over the whole projections, before the view."""

    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        self.layer_idx = layer_idx
        self.attn_impl = attn_impl
        self.head_dim = cfg.d.get("head_dim") or cfg.hidden_size // cfg.num_attention_heads
        self.num_key_value_groups = cfg.num_attention_heads // cfg.num_key_value_heads
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = cfg.attention_dropout
        H, nh, nkv, hd = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, self.head_dim
        b = cfg.attention_bias
        self.q_proj = R.Linear(H, nh * hd, bias=b)
        self.k_proj = R.Linear(H, nkv * hd, bias=b)
        self.v_proj = R.Linear(H, nkv * hd, bias=b)
        self.o_proj = R.Linear(nh * hd, H, bias=b)
        self.q_norm = Olmo3RMSNorm(nh * hd, cfg.rms_norm_eps)
        self.k_norm = Olmo3RMSNorm(nkv * hd, cfg.rms_norm_eps)

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key_value=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_norm(self.q_proj(hidden_states))
        key_states = self.k_norm(self.k_proj(hidden_states))
        value_states = self.v_proj(hidden_states)
        query_states = query_states.view(hidden_shape).transpose(1, 2)
        key_states = key_states.view(hidden_shape).transpose(1, 2)
        value_states = value_states.view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = olmo3_apply_rotary_pos_emb(query_states, key_states, cos, sin)
        if past_key_value is not None:
            key_states, value_states = past_key_value.update(key_states, value_states, self.layer_idx)
        dropout = 0.0 if not self.training else self.attention_dropout
        if self.attn_impl == "eager":
            attn_output, _ = R.eager_attention_forward(self, query_states, key_states, value_states,
                                                       attention_mask, self.scaling, dropout)
        else:
            attn_output, _ = R.sdpa_attention_forward(self, query_states, key_states, value_states,
                                                      attention_mask, dropout, self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class Olmo3DecoderLayer(nn.Module):
    """Olmo3DecoderLayer.forward: no norm before the sublayers, one after each (before the residual add)."""

    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        self.self_attn = Olmo3Attention(cfg, layer_idx, attn_impl)
        self.mlp = R.GatedMLP(cfg, cfg.hidden_act)  # Olmo3MLP: LlamaMLP's ops without bias
        self.post_attention_layernorm = Olmo3RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.post_feedforward_layernorm = Olmo3RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)

    def forward(self, hidden_states, attention_mask, position_embeddings, past_key_value=None,
                cache_len=0, last_cache_position=0):
        residual = hidden_states
        hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask, past_key_value)
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.mlp(hidden_states)
        hidden_states = self.post_feedforward_layernorm(hidden_states)
        hidden_states = residual + hidden_states
        return hidden_states


# --------------------------------------------------------------------------
# OLMo 2: models/olmo2/modeling_olmo2.py @ 0233e509 (huggingface/transformers)
# --------------------------------------------------------------------------

class Olmo2RMSNorm(Olmo3RMSNorm):
    """Olmo2RMSNorm.forward: hidden_states.to(torch.float32), * rsqrt(variance + eps), then
    (self.weight * hidden_states).to(input_dtype): the product in float32, as Olmo3RMSNorm (the same statements)."""


class Olmo2RotaryEmbedding(nn.Module):
    """Olmo2RotaryEmbedding.forward (@torch.no_grad, autocast off): inv_freq_expanded @ position_ids.float(),
    cat((freqs, freqs)), emb.cos() * attention_scaling, emb.sin() * attention_scaling, then `return cos, sin`:
    float32 whatever x's dtype (unlike LlamaRotaryEmbedding's cos.to(dtype=x.dtype))."""

    def __init__(self, cfg, head_dim):
        super().__init__()
        inv_freq, self.attention_scaling = R.rope_inv_freq(cfg, head_dim)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1).to(x.device)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * self.attention_scaling
        sin = emb.sin() * self.attention_scaling
        return cos, sin


class Olmo2Attention(Olmo3Attention):
    """Olmo2Attention.__init__ / forward: Olmo3Attention's statements (q_norm / k_norm Olmo2RMSNorms over the
    whole projections, before the view; apply_rotary_pos_emb with q_type / k_type and q_embed.to(q_type): with
    Olmo2RotaryEmbedding's float32 cos / sin the products and sums are float32, cast back to q's dtype), no
    sliding window (Olmo2Config has no layer_types)."""


class Olmo2DecoderLayer(nn.Module):
    """Olmo2DecoderLayer.forward: self_attn, post_attention_layernorm, + residual; mlp (Olmo2MLP: LlamaMLP's ops
    without bias), post_feedforward_layernorm, + residual (no norm before the sublayers)."""

    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        self.self_attn = Olmo2Attention(cfg, layer_idx, attn_impl)
        self.mlp = R.GatedMLP(cfg, cfg.hidden_act)
        self.post_attention_layernorm = Olmo2RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.post_feedforward_layernorm = Olmo2RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)

    def forward(self, hidden_states, attention_mask, position_embeddings, past_key_value=None,
                cache_len=0, last_cache_position=0):
        residual = hidden_states
        hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask, past_key_value)
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.mlp(hidden_states)
        hidden_states = self.post_feedforward_layernorm(hidden_states)
        hidden_states = residual + hidden_states
        return hidden_states


# --------------------------------------------------------------------------
# EXAONE 4.0: models/exaone4/modeling_exaone4.py @ 948448a0 (configuration_exaone4.py @ f503927d)
# --------------------------------------------------------------------------

def exaone4_layer_types(cfg):
    """Exaone4Config.__init__: the config's layer_types, else "sliding_attention" where (i + 1) % sliding_window_pattern
    (default 4) and i < num_hidden_layers."""
    if cfg.d.get("layer_types"):
        return list(cfg.d["layer_types"])
    pattern = cfg.d.get("sliding_window_pattern", 4)
    return ["sliding_attention" if (i + 1) % pattern != 0 else "full_attention" for i in range(cfg.num_hidden_layers)]


class Exaone4Attention(nn.Module):
    """Exaone4Attention.__init__ / forward: q/k/v/o without bias, q_norm / k_norm = Exaone4RMSNorm(head_dim) on the
    [b, heads, s, head_dim] states after the transpose, apply_rotary_pos_emb (llama's) only
    `if self.sliding_window is None or self.is_sliding`, sliding_window passed to the interface on sliding layers."""

    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        self.layer_idx = layer_idx
        self.attn_impl = attn_impl
        self.head_dim = cfg.d.get("head_dim") or cfg.hidden_size // cfg.num_attention_heads
        self.num_key_value_groups = cfg.num_attention_heads // cfg.num_key_value_heads
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = cfg.attention_dropout
        self.sliding_window = cfg.d.get("sliding_window", 4096)
        self.is_sliding = exaone4_layer_types(cfg)[layer_idx] == "sliding_attention"
        H, nh, nkv, hd = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, self.head_dim
        self.q_proj = R.Linear(H, nh * hd, bias=False)
        self.k_proj = R.Linear(H, nkv * hd, bias=False)
        self.v_proj = R.Linear(H, nkv * hd, bias=False)
        self.o_proj = R.Linear(nh * hd, H, bias=False)
        self.q_norm = R.LlamaRMSNorm(hd, eps=cfg.rms_norm_eps)  # Exaone4RMSNorm: LlamaRMSNorm's statements
        self.k_norm = R.LlamaRMSNorm(hd, eps=cfg.rms_norm_eps)

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key_value=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        query_states = self.q_norm(query_states)
        key_states = self.k_norm(key_states)
        cos, sin = position_embeddings
        if self.sliding_window is None or self.is_sliding:
            query_states, key_states = R.apply_rotary_pos_emb(query_states, key_states, cos, sin)
        if past_key_value is not None:
            key_states, value_states = past_key_value.update(key_states, value_states, self.layer_idx)
        dropout = 0.0 if not self.training else self.attention_dropout
        if self.attn_impl == "eager":
            attn_output, _ = R.eager_attention_forward(self, query_states, key_states, value_states,
                                                       attention_mask, self.scaling, dropout)
        else:
            attn_output, _ = R.sdpa_attention_forward(self, query_states, key_states, value_states,
                                                      attention_mask, dropout, self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class Exaone4DecoderLayer(nn.Module):
    """Exaone4DecoderLayer.forward: self_attn, post_attention_layernorm, + residual; mlp (Exaone4MLP: LlamaMLP's ops
    without bias), post_feedforward_layernorm, + residual (no norm before the sublayers; Exaone4RMSNorm)."""

    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        self.self_attn = Exaone4Attention(cfg, layer_idx, attn_impl)
        self.mlp = R.GatedMLP(cfg, cfg.hidden_act)
        self.post_attention_layernorm = R.LlamaRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.post_feedforward_layernorm = R.LlamaRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)

    forward = Olmo2DecoderLayer.forward  # the same statements (Exaone4DecoderLayer.forward)


# --------------------------------------------------------------------------
# StarCoder2: models/starcoder2/modeling_starcoder2.py @ 73faa33f (the shared rotary_emb of Starcoder2Model),
# masks as masking_utils makes them (@ 00d4b3d2: create_sliding_window_causal_mask when sliding_window is set)
# --------------------------------------------------------------------------

class Starcoder2Attention(nn.Module):
    """Starcoder2Attention.__init__ / forward: q/k/v/o with bias=use_bias, dropout(residual_dropout) on the output."""

    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        self.layer_idx = layer_idx
        self.attn_impl = attn_impl
        self.head_dim = cfg.hidden_size // cfg.num_attention_heads
        self.num_key_value_groups = cfg.num_attention_heads // cfg.num_key_value_heads
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = cfg.attention_dropout
        H, nh, nkv, hd = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, self.head_dim
        b = cfg.d.get("use_bias", True)
        self.q_proj = R.Linear(H, nh * hd, bias=b)
        self.k_proj = R.Linear(H, nkv * hd, bias=b)
        self.v_proj = R.Linear(H, nkv * hd, bias=b)
        self.o_proj = R.Linear(nh * hd, H, bias=b)
        self.residual_dropout = cfg.d.get("residual_dropout", 0.0)

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key_value=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = R.apply_rotary_pos_emb(query_states, key_states, cos, sin)
        if past_key_value is not None:
            key_states, value_states = past_key_value.update(key_states, value_states, self.layer_idx)
        dropout = 0.0 if not self.training else self.attention_dropout
        if self.attn_impl == "eager":
            attn_output, _ = R.eager_attention_forward(self, query_states, key_states, value_states,
                                                       attention_mask, self.scaling, dropout)
        else:
            attn_output, _ = R.sdpa_attention_forward(self, query_states, key_states, value_states,
                                                      attention_mask, dropout, self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = self.o_proj(attn_output)
        return R.vctorch.dropout2x(attn_output, self.residual_dropout, self.training)


class Starcoder2MLP(nn.Module):
    """Starcoder2MLP.forward: c_fc, act, c_proj, dropout(residual_dropout)."""

    def __init__(self, cfg):
        super().__init__()
        b = cfg.d.get("use_bias", True)
        self.c_fc = R.Linear(cfg.hidden_size, cfg.intermediate_size, bias=b)
        self.c_proj = R.Linear(cfg.intermediate_size, cfg.hidden_size, bias=b)
        self.act = R.act_fn(cfg.d.get("hidden_act", "gelu_pytorch_tanh"))
        self.residual_dropout = cfg.d.get("residual_dropout", 0.0)

    def forward(self, hidden_states):
        hidden_states = self.c_fc(hidden_states)
        hidden_states = self.act(hidden_states)
        hidden_states = self.c_proj(hidden_states)
        return R.vctorch.dropout2x(hidden_states, self.residual_dropout, self.training)


class Starcoder2DecoderLayer(nn.Module):
    """Starcoder2DecoderLayer.forward: pre-norm nn.LayerNorms (weight and bias), two residual adds."""

    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        eps = cfg.d.get("norm_epsilon", 1e-5)
        self.self_attn = Starcoder2Attention(cfg, layer_idx, attn_impl)
        self.mlp = Starcoder2MLP(cfg)
        self.input_layernorm = R.vctorch._LayerNorm2x(cfg.hidden_size, eps=eps)
        self.post_attention_layernorm = R.vctorch._LayerNorm2x(cfg.hidden_size, eps=eps)

    def forward(self, hidden_states, attention_mask, position_embeddings, past_key_value=None,
                cache_len=0, last_cache_position=0):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask, past_key_value)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = residual + hidden_states
        return hidden_states


# --------------------------------------------------------------------------
# Seed-OSS: models/seed_oss/modular_seed_oss.py @ 6e4054ae (configuration_seed_oss.py @ d9aa776f; the generated
# modeling_seed_oss.py is its copy)
# --------------------------------------------------------------------------

class SeedOssAttention(Starcoder2Attention):
    """SeedOssAttention.__init__ / forward: q/k/v_proj with bias=config.attention_bias, o_proj with
    bias=config.attention_out_bias, head_dim config.head_dim, llama's apply_rotary_pos_emb, the attention interface,
    then nn.functional.dropout(attn_output, p=residual_dropout): Starcoder2Attention's statements with these modules."""

    def __init__(self, cfg, layer_idx, attn_impl):
        nn.Module.__init__(self)
        self.layer_idx = layer_idx
        self.attn_impl = attn_impl
        self.head_dim = cfg.d.get("head_dim", 128)
        self.num_key_value_groups = cfg.num_attention_heads // cfg.num_key_value_heads
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = cfg.d.get("attention_dropout", 0.1)
        H, nh, nkv, hd = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, self.head_dim
        b = cfg.d.get("attention_bias", True)
        self.q_proj = R.Linear(H, nh * hd, bias=b)
        self.k_proj = R.Linear(H, nkv * hd, bias=b)
        self.v_proj = R.Linear(H, nkv * hd, bias=b)
        self.o_proj = R.Linear(nh * hd, H, bias=cfg.d.get("attention_out_bias", False))
        self.residual_dropout = cfg.d.get("residual_dropout", 0.1)


class SeedOssMLP(nn.Module):
    """SeedOssMLP.forward: down_proj(act_fn(gate_proj(x)) * up_proj(x)) (bias=config.mlp_bias), then
    nn.functional.dropout(down_proj, p=residual_dropout)."""

    def __init__(self, cfg):
        super().__init__()
        b = cfg.d.get("mlp_bias", False)
        self.gate_proj = R.Linear(cfg.hidden_size, cfg.intermediate_size, bias=b)
        self.up_proj = R.Linear(cfg.hidden_size, cfg.intermediate_size, bias=b)
        self.down_proj = R.Linear(cfg.intermediate_size, cfg.hidden_size, bias=b)
        self.act_fn = R.act_fn(cfg.d.get("hidden_act", "silu"))
        self.residual_dropout = cfg.d.get("residual_dropout", 0.1)

    def forward(self, x):
        down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
        return R.vctorch.dropout2x(down_proj, self.residual_dropout, self.training)


class SeedOssDecoderLayer(nn.Module):
    """SeedOssDecoderLayer = LlamaDecoderLayer: input_layernorm, self_attn, + residual, post_attention_layernorm, mlp,
    + residual (SeedOssRMSNorm = LlamaRMSNorm); the statements of Starcoder2DecoderLayer.forward."""

    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        self.self_attn = SeedOssAttention(cfg, layer_idx, attn_impl)
        self.mlp = SeedOssMLP(cfg)
        self.input_layernorm = R.LlamaRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.post_attention_layernorm = R.LlamaRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)

    forward = Starcoder2DecoderLayer.forward


# --------------------------------------------------------------------------
# Arcee (AFM-4.5B): models/arcee/modular_arcee.py @ 031734d9 (configuration_arcee.py @ 008e5743):
# ArceeForCausalLM = LlamaForCausalLM, its layers LlamaDecoderLayer's with ArceeMLP = NemotronMLP
# (models/nemotron/modeling_nemotron.py: down_proj(act_fn(up_proj(x))), bias=config.mlp_bias) and
# ACT2FN[hidden_act], "relu2" by default: ReLUSquaredActivation (src/transformers/activations.py @ d60525f3)
# --------------------------------------------------------------------------

def relu2(input):
    """ReLUSquaredActivation.forward, statement by statement."""
    relu_applied = nn.functional.relu(input)
    squared = torch.square(relu_applied)
    return squared


class ArceeMLP(nn.Module):
    """NemotronMLP.__init__ / forward: up_proj, act_fn, down_proj."""

    def __init__(self, cfg):
        super().__init__()
        b = cfg.d.get("mlp_bias", False)
        self.up_proj = R.Linear(cfg.hidden_size, cfg.intermediate_size, bias=b)
        self.down_proj = R.Linear(cfg.intermediate_size, cfg.hidden_size, bias=b)
        act = cfg.d.get("hidden_act", "relu2")
        self.act_fn = relu2 if act == "relu2" else R.act_fn(act)

    def forward(self, x):
        return self.down_proj(self.act_fn(self.up_proj(x)))


class ArceeDecoderLayer(nn.Module):
    """LlamaDecoderLayer: input_layernorm, self_attn (LlamaAttention: reference.Attention), + residual,
    post_attention_layernorm, mlp, + residual (LlamaRMSNorm); the statements of Starcoder2DecoderLayer.forward."""

    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        self.self_attn = R.Attention(cfg, layer_idx, attn_impl)
        self.mlp = ArceeMLP(cfg)
        self.input_layernorm = R.LlamaRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.post_attention_layernorm = R.LlamaRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)

    forward = Starcoder2DecoderLayer.forward


# --------------------------------------------------------------------------
# Nemotron (Minitron-8B / 4B, Nemotron-Mini-4B, Mistral-NeMo-Minitron-8B): models/nemotron/modeling_nemotron.py
# @ 0233e509531ace915c8241b4c16c8032a583279c (configuration_nemotron.py @ 05cd1ec1: norm_eps 1e-5,
# partial_rotary_factor 0.5, hidden_act relu2, attention_bias / mlp_bias False)
# --------------------------------------------------------------------------

class NemotronLayerNorm1P(R.vctorch._LayerNorm1P):
    """NemotronLayerNorm1P.forward: F.layer_norm(input, normalized_shape, self.weight + 1, self.bias, eps) (no
    autocast here: _cast_if_autocast_enabled returns its arguments). The harness's _LayerNorm1P runs exactly that:
    weight + 1 a fresh tensor, then native_layer_norm (a 16-bit input keeps fp32 statistics as on CUDA)."""


def nemotron_apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    """Nemotron's apply_rotary_pos_emb, statement by statement: the first rot_dim = cos.shape[-1] of each head
    rotated (rotate_half: Llama's), the rest passed, torch.cat of both."""
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    rot_dim = cos.shape[-1]
    q, q_pass = q[..., :rot_dim], q[..., rot_dim:]
    k, k_pass = k[..., :rot_dim], k[..., rot_dim:]
    q_embed = (q * cos) + (R.rotate_half(q) * sin)
    k_embed = (k * cos) + (R.rotate_half(k) * sin)
    return torch.cat((q_embed, q_pass), dim=-1), torch.cat((k_embed, k_pass), dim=-1)


class NemotronAttention(Starcoder2Attention):
    """NemotronSdpaAttention.forward (the default "sdpa"; NemotronAttention the eager one): q/k/v/o with
    bias=attention_bias, head_dim = config.head_dim, the partial rotary above, repeat_kv, sdpa with is_causal when
    no mask, transpose, view, o_proj."""

    def __init__(self, cfg, layer_idx, attn_impl):
        nn.Module.__init__(self)
        self.layer_idx = layer_idx
        self.attn_impl = attn_impl
        self.head_dim = cfg.head_dim or cfg.hidden_size // cfg.num_attention_heads
        self.num_key_value_groups = cfg.num_attention_heads // cfg.num_key_value_heads
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = cfg.attention_dropout
        H, nh, nkv, hd = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, self.head_dim
        b = cfg.attention_bias
        self.q_proj = R.Linear(H, nh * hd, bias=b)
        self.k_proj = R.Linear(H, nkv * hd, bias=b)
        self.v_proj = R.Linear(H, nkv * hd, bias=b)
        self.o_proj = R.Linear(nh * hd, H, bias=b)

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key_value=None):
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = nemotron_apply_rotary_pos_emb(query_states, key_states, cos, sin)
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


class NemotronDecoderLayer(nn.Module):
    """NemotronDecoderLayer: input_layernorm (NemotronLayerNorm1P), self_attn, + residual, post_attention_layernorm,
    mlp (NemotronMLP = ArceeMLP above), + residual."""

    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        eps = cfg.d.get("norm_eps", 1e-5)
        self.self_attn = NemotronAttention(cfg, layer_idx, attn_impl)
        self.mlp = ArceeMLP(cfg)
        self.input_layernorm = NemotronLayerNorm1P(cfg.hidden_size, eps=eps)
        self.post_attention_layernorm = NemotronLayerNorm1P(cfg.hidden_size, eps=eps)

    forward = Starcoder2DecoderLayer.forward


# --------------------------------------------------------------------------
# Apertus (swiss-ai Apertus-8B / 70B): models/apertus/modeling_apertus.py @ 6e4054ae4d2748051a0080ccb6eebfbcc0848d88
# (configuration_apertus.py @ ecbf7a09: hidden_act "xielu", rms_norm_eps 1e-5, llama3 rope_scaling by default, no
# biases) and src/transformers/activations.py's XIELUActivation (the Python path _xielu_python: no xielu CUDA
# extension here)
# --------------------------------------------------------------------------

class XIELUActivation(R.vctorch._XIELU):
    """XIELUActivation.__init__ (alpha_p_init 0.8, alpha_n_init 0.8, beta 0.5, eps -1e-6, dtype torch.bfloat16:
    alpha_p / alpha_n Parameters of shape [1], beta / eps 0-dim buffers, all bfloat16) and _xielu_python:
      alpha_p = softplus(self.alpha_p); alpha_n = self.beta + softplus(self.alpha_n)
      where(x > 0, alpha_p * x * x + self.beta * x, (expm1(min(x, self.eps)) - x) * alpha_n + self.beta * x)
    statement by statement in the harness's _XIELU (tools/vctorch.py), which builds the same module for a model
    file's XIELU layer."""


class ApertusMLP(ArceeMLP):
    """ApertusMLP: up_proj, act_fn (ACT2FN[hidden_act]: a new XIELUActivation per MLP), down_proj, no bias."""

    def __init__(self, cfg):
        nn.Module.__init__(self)
        self.up_proj = R.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = R.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)
        act = cfg.d.get("hidden_act", "xielu")
        self.act_fn = XIELUActivation() if act == "xielu" else R.act_fn(act)


class ApertusAttention(Starcoder2Attention):
    """ApertusAttention: q/k/v/o with bias=attention_bias, q_norm / k_norm = ApertusRMSNorm(head_dim) on the
    transposed [B, heads, S, head_dim] states, then Llama's apply_rotary_pos_emb."""

    def __init__(self, cfg, layer_idx, attn_impl):
        nn.Module.__init__(self)
        self.layer_idx = layer_idx
        self.attn_impl = attn_impl
        self.head_dim = cfg.head_dim or cfg.hidden_size // cfg.num_attention_heads
        self.num_key_value_groups = cfg.num_attention_heads // cfg.num_key_value_heads
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = cfg.attention_dropout
        H, nh, nkv, hd = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, self.head_dim
        b = cfg.attention_bias
        self.q_proj = R.Linear(H, nh * hd, bias=b)
        self.k_proj = R.Linear(H, nkv * hd, bias=b)
        self.v_proj = R.Linear(H, nkv * hd, bias=b)
        self.o_proj = R.Linear(nh * hd, H, bias=b)
        self.q_norm = R.LlamaRMSNorm(hd, eps=cfg.rms_norm_eps)
        self.k_norm = R.LlamaRMSNorm(hd, eps=cfg.rms_norm_eps)

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key_value=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        query_states = self.q_norm(query_states)
        key_states = self.k_norm(key_states)
        cos, sin = position_embeddings
        query_states, key_states = R.apply_rotary_pos_emb(query_states, key_states, cos, sin)
        if past_key_value is not None:
            key_states, value_states = past_key_value.update(key_states, value_states, self.layer_idx)
        dropout = 0.0 if not self.training else self.attention_dropout
        if self.attn_impl == "eager":
            attn_output, _ = R.eager_attention_forward(self, query_states, key_states, value_states,
                                                       attention_mask, self.scaling, dropout)
        else:
            attn_output, _ = R.sdpa_attention_forward(self, query_states, key_states, value_states,
                                                      attention_mask, dropout, self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class ApertusDecoderLayer(nn.Module):
    """ApertusDecoderLayer: attention_layernorm, self_attn, + residual, feedforward_layernorm, mlp, + residual."""

    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        self.self_attn = ApertusAttention(cfg, layer_idx, attn_impl)
        self.mlp = ApertusMLP(cfg)
        self.input_layernorm = R.LlamaRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)  # attention_layernorm
        self.post_attention_layernorm = R.LlamaRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)  # feedforward_layernorm

    forward = Starcoder2DecoderLayer.forward


# --------------------------------------------------------------------------
# Ministral 3 (mistralai/Ministral-3-3B/8B/14B-*-2512): models/ministral3/modular_ministral3.py @
# 00b364c707dac287e81ab6a952c386246a1025f3 (configuration_ministral3.py @ 008e574391258935f3ecc3035c882e73bbcac419:
# rope_parameters yarn with llama_4_scaling_beta 0.1 over original_max_position_embeddings 16384 by default)
# --------------------------------------------------------------------------

def _get_llama_4_attn_scale(positions_ids, beta, max_position_embeddings):
    """modular_ministral3.py's _get_llama_4_attn_scale, statement by statement."""
    scaling = 1 + beta * torch.log(1 + torch.floor(positions_ids / max_position_embeddings))
    return scaling.unsqueeze(-1)


class Ministral3Attention(R.Attention):
    """Ministral3Attention(MistralAttention).forward: q/k/v views, apply_rotary_pos_emb, then query_states =
    query_states * _get_llama_4_attn_scale(cache_position, beta, original_max_position_embeddings)
    .to(query_states.dtype), the cache update, the attention interface, o_proj. reference.py's layers are not handed
    cache_position: it is rebuilt here as the model's forward builds it, arange(past_seen, past_seen + S) with past_seen
    the cache's length before the update (an int64 [S] tensor per layer where the model shares one: 8 x S bytes)."""

    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__(cfg, layer_idx, attn_impl)
        rp = cfg.d.get("rope_parameters") or {"llama_4_scaling_beta": 0.1, "original_max_position_embeddings": 16384}
        self.beta = rp.get("llama_4_scaling_beta")
        self.original_max_position_embeddings = rp.get("original_max_position_embeddings")

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key_value=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = R.apply_rotary_pos_emb(query_states, key_states, cos, sin)
        past_seen = past_key_value.get_seq_length(self.layer_idx) if past_key_value is not None else 0
        cache_position = torch.arange(past_seen, past_seen + input_shape[-1], device=hidden_states.device)
        query_states = query_states * _get_llama_4_attn_scale(
            cache_position, self.beta, self.original_max_position_embeddings).to(query_states.dtype)
        del cache_position
        if past_key_value is not None:
            key_states, value_states = past_key_value.update(key_states, value_states, self.layer_idx)
        dropout = 0.0 if not self.training else self.attention_dropout
        if self.attn_impl == "eager":
            attn_output, _ = R.eager_attention_forward(self, query_states, key_states, value_states,
                                                       attention_mask, self.scaling, dropout)
        else:
            attn_output, _ = R.sdpa_attention_forward(self, query_states, key_states, value_states,
                                                      attention_mask, dropout, self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class Ministral3DecoderLayer(R.DecoderLayer):
    """Ministral3DecoderLayer(MistralDecoderLayer): LlamaDecoderLayer's norms and MLP around Ministral3Attention."""

    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__(cfg, layer_idx, attn_impl)
        self.self_attn = Ministral3Attention(cfg, layer_idx, attn_impl)


def layer_and_norm(model_type, cfg=None):
    """The decoder layer class and the final norm class (called as Norm(hidden, eps=...)) of a family here."""
    if model_type == "glm4":
        return Glm4DecoderLayer, R.LlamaRMSNorm  # Glm4Model.norm: Glm4RMSNorm
    if model_type == "olmo3":
        return Olmo3DecoderLayer, Olmo3RMSNorm  # Olmo3Model.norm: Olmo3RMSNorm
    if model_type == "olmo2":
        return Olmo2DecoderLayer, Olmo2RMSNorm  # Olmo2Model.norm: Olmo2RMSNorm
    if model_type == "olmoe":  # olmoe_replica.py; OlmoeModel.norm: OlmoeRMSNorm (LlamaRMSNorm's code)
        import olmoe_replica
        return olmoe_replica.OlmoeDecoderLayer, R.LlamaRMSNorm
    if model_type == "exaone4":
        return Exaone4DecoderLayer, R.LlamaRMSNorm  # Exaone4Model.norm: Exaone4RMSNorm
    if model_type == "seed_oss":
        return SeedOssDecoderLayer, R.LlamaRMSNorm  # SeedOssModel.norm (LlamaModel's): SeedOssRMSNorm
    if model_type == "arcee":
        return ArceeDecoderLayer, R.LlamaRMSNorm  # ArceeModel.norm (LlamaModel's): ArceeRMSNorm
    if model_type == "apertus":  # ApertusModel.norm: ApertusRMSNorm (LlamaRMSNorm's code)
        return ApertusDecoderLayer, R.LlamaRMSNorm
    if model_type == "nemotron":  # NemotronModel.norm: NemotronLayerNorm1P(hidden_size, eps=config.norm_eps)
        return NemotronDecoderLayer, lambda h, eps: NemotronLayerNorm1P(h, eps=cfg.d.get("norm_eps", 1e-5))
    if model_type in ("cohere", "cohere2"):  # cohere_replica.py; CohereModel.norm: CohereLayerNorm
        import cohere_replica
        return cohere_replica.CohereDecoderLayer, cohere_replica.final_norm(cfg)
    if model_type in ("hunyuan_v1_dense", "hunyuan_v1_moe"):  # hunyuan_replica.py; HunYuan*Model.norm: LlamaRMSNorm's code
        import hunyuan_replica
        return hunyuan_replica.HunYuanDecoderLayer, R.LlamaRMSNorm
    if model_type == "ministral3":  # Ministral3Model (MistralModel).norm: MistralRMSNorm (LlamaRMSNorm's code)
        return Ministral3DecoderLayer, R.LlamaRMSNorm
    if model_type == "starcoder2":  # Starcoder2Model.norm: nn.LayerNorm(hidden_size, eps=config.norm_epsilon)
        return Starcoder2DecoderLayer, lambda h, eps: R.vctorch._LayerNorm2x(h, eps=cfg.d.get("norm_epsilon", 1e-5))
    raise ValueError("model_type %r not replicated here" % model_type)


def layer_types(cfg):
    """(layer_types, sliding_window) of a family here, as DynamicCache(config=...) and the mask mapping read them."""
    if cfg.model_type == "olmo3":
        return olmo3_layer_types(cfg), cfg.d.get("sliding_window", 4096)
    if cfg.model_type == "exaone4" and cfg.d.get("sliding_window", 4096) is not None:  # Exaone4Config's layer_types
        return exaone4_layer_types(cfg), cfg.d.get("sliding_window", 4096)
    if cfg.model_type == "starcoder2" and cfg.d.get("sliding_window"):  # every layer (Starcoder2Config: no layer_types)
        return ["sliding_attention"] * cfg.num_hidden_layers, cfg.d["sliding_window"]
    if cfg.model_type in ("cohere", "cohere2"):  # Cohere2Config.__post_init__ (cohere_replica.py)
        import cohere_replica
        return cohere_replica.layer_types(cfg), cohere_replica.sliding_window(cfg)
    return ["full_attention"] * cfg.num_hidden_layers, None


FAMILIES = ("glm4", "olmo3", "starcoder2", "olmo2", "olmoe", "exaone4", "seed_oss", "cohere", "cohere2", "arcee",
            "hunyuan_v1_dense", "hunyuan_v1_moe", "nemotron", "apertus", "ministral3")
