"""OLMoE (model_type olmoe) as transformers 5 runs it, for the harness (issue 31): reference.py's CausalLM builds its
layers from here (near_llama_replica.layer_and_norm), its final norm reference.LlamaRMSNorm (OlmoeRMSNorm).

Written from huggingface/transformers models/olmoe/modeling_olmoe.py @ 0233e509531ace915c8241b4c16c8032a583279c:
  OlmoeRMSNorm           LlamaRMSNorm's code (reference.LlamaRMSNorm)
  OlmoeAttention         q/k/v/o with attention_bias; q_norm = OlmoeRMSNorm(hidden_size), k_norm =
                         OlmoeRMSNorm(hidden_size // heads * kv_heads) on q_proj's / k_proj's outputs before the view
                         (clip_qkv None: no clamp_), apply_rotary_pos_emb (Llama's), the attention interface
  OlmoeTopKRouter        weight [E, H], F.linear, float32 softmax, topk, norm_topk_prob, .to(router_logits.dtype)
                         (Qwen3MoeTopKRouter's code: moe_v5_replica.Qwen2MoeTopKRouter)
  OlmoeExperts           [E, 2I, H], [E, H, I] of intermediate_size under @use_experts_implementation:
                         grouped_mm_experts_forward (moe_v5_replica.MixtralExperts)
  OlmoeSparseMoeBlock    view(-1, H), gate, experts, reshape; no shared expert
  OlmoeDecoderLayer      LlamaDecoderLayer's pre-norm residuals with OlmoeRMSNorm
"""

import torch.nn as nn

import moe_v5_replica
import reference as R


class OlmoeAttention(nn.Module):
    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        self.layer_idx = layer_idx
        self.attn_impl = attn_impl
        H, nh, nkv = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads
        self.head_dim = hd = cfg.d.get("head_dim") or H // nh
        self.num_key_value_groups = nh // nkv
        self.scaling = hd ** -0.5
        self.attention_dropout = cfg.attention_dropout
        b = cfg.attention_bias
        self.q_proj = R.Linear(H, nh * hd, bias=b)
        self.k_proj = R.Linear(H, nkv * hd, bias=b)
        self.v_proj = R.Linear(H, nkv * hd, bias=b)
        self.o_proj = R.Linear(nh * hd, H, bias=b)
        self.q_norm = R.LlamaRMSNorm(H, eps=cfg.rms_norm_eps)
        self.k_norm = R.LlamaRMSNorm((H // nh) * nkv, eps=cfg.rms_norm_eps)

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key_value=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_norm(self.q_proj(hidden_states))
        key_states = self.k_norm(self.k_proj(hidden_states))
        value_states = self.v_proj(hidden_states)
        query_states = query_states.view(*hidden_shape).transpose(1, 2)
        key_states = key_states.view(*hidden_shape).transpose(1, 2)
        value_states = value_states.view(*hidden_shape).transpose(1, 2)
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


class OlmoeExperts(moe_v5_replica.Qwen2MoeExperts):
    """OlmoeExperts: MixtralExperts' stacked weights of num_experts x intermediate_size."""

    def __init__(self, cfg, act_fn):
        super().__init__(R.Config(dict(cfg.d, moe_intermediate_size=cfg.intermediate_size)), act_fn)


class OlmoeSparseMoeBlock(nn.Module):
    def __init__(self, cfg, act_fn):
        super().__init__()
        self.gate = moe_v5_replica.Qwen2MoeTopKRouter(cfg)
        self.experts = OlmoeExperts(cfg, act_fn)

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        _, top_k_weights, top_k_index = self.gate(hidden_states)
        return self.experts(hidden_states, top_k_index, top_k_weights).reshape(batch_size, sequence_length, hidden_dim)


class OlmoeDecoderLayer(nn.Module):
    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        if cfg.d.get("_experts_implementation") != "grouped_mm":
            raise ValueError("olmoe is replicated with transformers 5's experts: --experts grouped_mm")
        self.self_attn = OlmoeAttention(cfg, layer_idx, attn_impl)
        self.mlp = OlmoeSparseMoeBlock(cfg, R.act_fn(cfg.hidden_act))
        self.input_layernorm = R.LlamaRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.post_attention_layernorm = R.LlamaRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)

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
