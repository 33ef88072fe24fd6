"""MiniMax-M2 (model_type minimax_m2) as transformers 5 runs it, for the harness (reference.py builds
its decoder layers from here; measure_llm.py resolves its config with resolve()).

Written from huggingface/transformers:
  models/minimax_m2/configuration_minimax_m2.py @ 3e108993dfb76b70428b374a3536e75465bb792c
    MiniMaxM2Config.convert_rope_params_to_dict: rope_parameters["partial_rotary_factor"] =
    kwargs.pop("rotary_dim", head_dim // 2) / head_dim (resolve() below)
  models/minimax_m2/modeling_minimax_m2.py @ 0205eec1d869591488aa74eda3f2da23610c28d9
    MiniMaxM2TopKRouter       weight [E, H] (nn.Parameter); forward: F.linear(x.to(weight.dtype), weight),
                              sigmoid(router_logits.float()), + e_score_correction_bias, topk(k, sorted=False)
                              (`_, top_k_index`), routing_weights.gather(1, top_k_index), /= sum (in place);
                              returns router_logits, router_scores, top_k_index
    MiniMaxM2Experts          gate_up_proj [E, 2I, H], down_proj [E, H, I] under @use_experts_implementation:
                              grouped_mm_experts_forward (moe_v5_replica.MixtralExperts)
    MiniMaxM2SparseMoeBlock   gate, experts, e_score_correction_bias = nn.Buffer(torch.zeros(E)); forward:
                              jitter in training, view(-1, H), `_, top_k_weights, top_k_index =
                              self.gate(hidden_states, self.e_score_correction_bias)`, experts, reshape
    MiniMaxM2RMSNorm          LlamaRMSNorm's code (reference.LlamaRMSNorm)
    MiniMaxM2Attention        q/k/v/o nn.Linear bias=False; q_norm = RMSNorm(heads * head_dim), k_norm =
                              RMSNorm(kv heads * head_dim); forward: q_norm(q_proj(x)), k_norm(k_proj(x)),
                              v_proj(x), view(hidden_shape).transpose(1, 2), apply_rotary_pos_emb (the partial
                              form: q[..., :rotary_dim] rotated, cat with the rest: reference.
                              neox_apply_rotary_pos_emb is the same code), the cache, the attention interface
                              (sdpa by default), reshape(*input_shape, -1).contiguous(), o_proj
    MiniMaxM2DecoderLayer     input_layernorm, self_attn, + residual, post_attention_layernorm, mlp, + residual
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

import moe_v5_replica
import reference as R


def resolve(raw):
    """MiniMaxM2Config: partial_rotary_factor from rotary_dim (head_dim // 2 without it)."""
    d = dict(raw)
    head_dim = d.get("head_dim") or d["hidden_size"] // d["num_attention_heads"]
    d["partial_rotary_factor"] = d.get("rotary_dim", head_dim // 2) / head_dim
    return d


class MiniMaxM2Attention(nn.Module):
    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        self.layer_idx = layer_idx
        self.attn_impl = attn_impl
        self.head_dim = cfg.head_dim or cfg.hidden_size // cfg.num_attention_heads
        self.num_key_value_groups = cfg.num_attention_heads // cfg.num_key_value_heads
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = cfg.attention_dropout
        H, nh, nkv, hd = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, self.head_dim
        self.q_proj = R.Linear(H, nh * hd, bias=False)
        self.k_proj = R.Linear(H, nkv * hd, bias=False)
        self.v_proj = R.Linear(H, nkv * hd, bias=False)
        self.o_proj = R.Linear(nh * hd, H, bias=False)
        self.q_norm = R.LlamaRMSNorm(nh * hd, eps=cfg.rms_norm_eps)
        self.k_norm = R.LlamaRMSNorm(nkv * hd, eps=cfg.rms_norm_eps)

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
        query_states, key_states = R.neox_apply_rotary_pos_emb(query_states, key_states, cos, sin)
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


class MiniMaxM2TopKRouter(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.top_k = cfg.num_experts_per_tok
        self.num_experts = cfg.num_local_experts
        self.hidden_dim = cfg.hidden_size
        self.weight = nn.Parameter(torch.empty(self.num_experts, self.hidden_dim))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, hidden_states, e_score_correction_bias):
        hidden_states = hidden_states.reshape(-1, self.hidden_dim)
        router_logits = F.linear(hidden_states.to(self.weight.dtype), self.weight)
        routing_weights = nn.functional.sigmoid(router_logits.float())
        scores_for_choice = routing_weights + e_score_correction_bias
        _, top_k_index = torch.topk(scores_for_choice, self.top_k, dim=-1, sorted=False)
        top_k_weights = routing_weights.gather(1, top_k_index)
        top_k_weights /= top_k_weights.sum(dim=-1, keepdim=True)
        router_scores = top_k_weights
        return router_logits, router_scores, top_k_index


class MiniMaxM2SparseMoeBlock(nn.Module):
    def __init__(self, cfg, act):
        super().__init__()
        self.top_k = cfg.num_experts_per_tok
        self.jitter_noise = cfg.d.get("router_jitter_noise", 0.0)
        self.gate = MiniMaxM2TopKRouter(cfg)
        self.experts = moe_v5_replica.MixtralExperts(cfg, act)  # [E, 2I, H], [E, H, I], grouped_mm
        self.register_buffer("e_score_correction_bias", torch.zeros(cfg.num_local_experts))

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        if self.training and self.jitter_noise > 0:
            hidden_states *= torch.empty_like(hidden_states).uniform_(1.0 - self.jitter_noise, 1.0 + self.jitter_noise)
        hidden_states = hidden_states.view(-1, hidden_states.shape[-1])
        _, top_k_weights, top_k_index = self.gate(hidden_states, self.e_score_correction_bias)
        hidden_states = self.experts(hidden_states, top_k_index, top_k_weights)
        hidden_states = hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        return hidden_states
