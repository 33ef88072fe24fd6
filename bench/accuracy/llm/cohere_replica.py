"""Cohere (model_type cohere: Command R / R+) and Cohere2 (model_type cohere2: Command R7B, Command A) as
transformers 5 runs them, for the harness (issue 31): reference.py's CausalLM builds its layers, final norm and
rotary embedding from here (near_llama_replica.layer_and_norm), and multiplies its logits by logit_scale
(CohereForCausalLM.forward / Cohere2ForCausalLM.forward: `logits = logits * self.logit_scale`).

Written from huggingface/transformers @ 0233e509531ace915c8241b4c16c8032a583279c, statement by statement:
  models/cohere/modeling_cohere.py
    CohereLayerNorm          weight only (torch.ones(hidden_size), a tuple for the q/k norms), float32,
                             mean-subtracted, self.weight.to(torch.float32) * hidden_states, .to(input_dtype)
    CohereRotaryEmbedding    the default rope, torch.repeat_interleave(freqs, 2, dim=-1) (not cat), cos / sin
                             * attention_scaling, .to(dtype=x.dtype)
    rotate_half              x[..., ::2], x[..., 1::2], torch.stack([-x2, x1], dim=-1).flatten(-2)
    apply_rotary_pos_emb     dtype = q.dtype; q = q.float(); k = k.float(); the products; .to(dtype=dtype)
    CohereMLP                LlamaMLP's down_proj(act_fn(gate_proj(x)) * up_proj(x)), no bias
    CohereAttention          q/k/v/o with attention_bias, .view(hidden_shape); use_qk_norm: q_norm / k_norm
                             (CohereLayerNorm((heads, head_dim)) on the [B, L, heads, head_dim] view) before the
                             transpose; apply_rotary_pos_emb; the cache update; the attention interface
    CohereDecoderLayer       residual = x; x = input_layernorm(x); attn = self_attn(x); mlp = self.mlp(x);
                             residual + attn + mlp
  models/cohere2/modeling_cohere2.py
    Cohere2Attention         no q/k norm; self.sliding_window = config.sliding_window on "sliding_attention"
                             layers, else None; apply_rotary_pos_emb only `if self.sliding_window is not None`
    Cohere2DecoderLayer      CohereDecoderLayer's statements, the layer's mask from the mapping
  models/cohere2/configuration_cohere2.py @ 008e574391258935f3ecc3035c882e73bbcac419
    Cohere2Config            layer_types None: "sliding_attention" if bool((i + 1) % sliding_window_pattern)
                             (kwargs' sliding_window_pattern, default 4) else "full_attention"; head_dim =
                             hidden_size // num_attention_heads
The two means run as PyTorch 2.x records them (tools/vctorch.py mean2x: no saved input, as reference.LlamaRMSNorm).
The attention interface is reference.py's (sdpa_attention_forward / eager_attention_forward, transformers'
integrations); the sliding mask sliding_replica.py's create_sliding_window_causal_mask. Nothing here comes from
vramcalc's engine.
"""

import torch
import torch.nn as nn

import reference as R


class CohereLayerNorm(nn.Module):
    """CohereLayerNorm.__init__ / forward."""

    def __init__(self, hidden_size=None, eps=1e-5, bias=False):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        # .mean(-1, keepdim=True) with 2.x's MeanBackward1 (sizes only; 1.13's keeps its input): vctorch.mean2x
        mean = R.vctorch.mean2x(hidden_states, -1, keepdim=True)
        variance = R.vctorch.mean2x((hidden_states - mean).pow(2), -1, keepdim=True)
        hidden_states = (hidden_states - mean) * torch.rsqrt(variance + self.variance_epsilon)
        hidden_states = self.weight.to(torch.float32) * hidden_states
        return hidden_states.to(input_dtype)


class CohereRotaryEmbedding(nn.Module):
    """CohereRotaryEmbedding: compute_default_rope_parameters (dim = head_dim or hidden // heads), forward under
    @torch.no_grad with autocast off."""

    def __init__(self, cfg, head_dim):
        super().__init__()
        inv_freq, self.attention_scaling = R.rope_inv_freq(cfg, head_dim)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.repeat_interleave(freqs, 2, dim=-1)  # diff from Llama: we interleave() instead of cat()
        cos = emb.cos() * self.attention_scaling
        sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
    # Split and rotate. Note that this function is different from e.g. Llama.
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    rot_x = torch.stack([-x2, x1], dim=-1).flatten(-2)
    return rot_x


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    dtype = q.dtype
    q = q.float()
    k = k.float()
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed.to(dtype=dtype), k_embed.to(dtype=dtype)


def layer_types(cfg):
    """Cohere2Config.__post_init__'s layer_types (cohere: every layer full, no window)."""
    n = cfg.num_hidden_layers
    if cfg.model_type != "cohere2":
        return ["full_attention"] * n
    if cfg.d.get("layer_types"):
        return list(cfg.d["layer_types"])
    p = cfg.d.get("sliding_window_pattern", 4)
    return ["sliding_attention" if bool((i + 1) % p) else "full_attention" for i in range(n)]


def sliding_window(cfg):
    """Cohere2Config.sliding_window (4096 by default, None: no window)."""
    return cfg.d.get("sliding_window", 4096) if cfg.model_type == "cohere2" else None


class CohereAttention(nn.Module):
    """CohereAttention / Cohere2Attention __init__ / forward."""

    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        self.layer_idx = layer_idx
        self.attn_impl = attn_impl
        H, nh, nkv = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads
        # CohereAttention: getattr(config, "head_dim", hidden // heads); Cohere2Config.__post_init__ sets it to that
        self.head_dim = hd = (cfg.d.get("head_dim") if cfg.model_type == "cohere" else None) or H // nh
        self.num_key_value_groups = nh // nkv
        self.scaling = hd ** -0.5
        self.attention_dropout = cfg.attention_dropout
        self.cohere2 = cfg.model_type == "cohere2"
        self.sliding_window = None
        if self.cohere2:
            layer_type = layer_types(cfg)[layer_idx]
            self.sliding_window = sliding_window(cfg) if layer_type == "sliding_attention" else None
        b = cfg.attention_bias
        self.q_proj = R.Linear(H, nh * hd, bias=b)
        self.k_proj = R.Linear(H, nkv * hd, bias=b)
        self.v_proj = R.Linear(H, nkv * hd, bias=b)
        self.o_proj = R.Linear(nh * hd, H, bias=b)
        self.use_qk_norm = not self.cohere2 and cfg.d.get("use_qk_norm", False)
        if self.use_qk_norm:
            eps = cfg.d.get("layer_norm_eps", 1e-5)
            self.q_norm = CohereLayerNorm(hidden_size=(nh, hd), eps=eps)
            self.k_norm = CohereLayerNorm(hidden_size=(nkv, hd), eps=eps)

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key_value=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        if self.cohere2:  # Cohere2Attention.forward: .view(hidden_shape).transpose(1, 2) at once
            query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
            key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
            value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
            cos, sin = position_embeddings
            if self.sliding_window is not None:
                query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        else:
            query_states = self.q_proj(hidden_states).view(hidden_shape)
            key_states = self.k_proj(hidden_states).view(hidden_shape)
            value_states = self.v_proj(hidden_states).view(hidden_shape)
            if self.use_qk_norm:  # main diff from Llama
                query_states = self.q_norm(query_states)
                key_states = self.k_norm(key_states)
            query_states = query_states.transpose(1, 2)
            key_states = key_states.transpose(1, 2)
            value_states = value_states.transpose(1, 2)
            cos, sin = position_embeddings
            query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
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
        return attn_output


class CohereMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        H, I = cfg.hidden_size, cfg.intermediate_size
        self.gate_proj = R.Linear(H, I, bias=False)
        self.up_proj = R.Linear(H, I, bias=False)
        self.down_proj = R.Linear(I, H, bias=False)
        self.act_fn = R.act_fn(cfg.hidden_act)

    def forward(self, x):
        down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
        return down_proj


class CohereDecoderLayer(nn.Module):
    """CohereDecoderLayer / Cohere2DecoderLayer: the parallel block."""

    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        self.self_attn = CohereAttention(cfg, layer_idx, attn_impl)
        self.mlp = CohereMLP(cfg)
        self.input_layernorm = CohereLayerNorm(hidden_size=(cfg.hidden_size), eps=cfg.d.get("layer_norm_eps", 1e-5))

    def forward(self, hidden_states, attention_mask, position_embeddings, past_key_value=None,
                cache_len=0, last_cache_position=0):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states_attention = self.self_attn(hidden_states, position_embeddings, attention_mask, past_key_value)
        hidden_states_mlp = self.mlp(hidden_states)
        hidden_states = residual + hidden_states_attention + hidden_states_mlp
        return hidden_states


def final_norm(cfg):
    """CohereModel.norm / Cohere2Model.norm: CohereLayerNorm(hidden_size, eps=layer_norm_eps)."""
    return lambda h, eps: CohereLayerNorm(hidden_size=h, eps=cfg.d.get("layer_norm_eps", 1e-5))
