"""Tencent HunYuan (model_types hunyuan_v1_dense and hunyuan_v1_moe) as transformers 5 runs them, for the harness
(issue 31): reference.py's CausalLM builds its layers from here (near_llama_replica.layer_and_norm) and its rotary
embedding (HunYuanRotaryEmbedding).

Written from huggingface/transformers @ 0233e509531ace915c8241b4c16c8032a583279c,
models/hunyuan_v1_dense/modeling_hunyuan_v1_dense.py and models/hunyuan_v1_moe/modeling_hunyuan_v1_moe.py:
  HunYuan*RMSNorm           LlamaRMSNorm's code (reference.LlamaRMSNorm)
  HunYuan*Attention         q/k/v/o with bias=config.attention_bias, head_dim getattr(config, "head_dim", H // heads),
                            apply_rotary_pos_emb (llama's) on the transposed q / k, then query_layernorm /
                            key_layernorm (RMSNorm(head_dim)) on the rotated [B, heads, L, D] tensors, the attention
                            interface
  HunYuan*MLP               gate_proj / up_proj / down_proj of intermediate_size, no bias (LlamaMLP's ops)
  HunYuan*RotaryEmbedding   rope_type "dynamic" with rope_parameters["alpha"]: base = rope_theta * alpha ** (head_dim /
                            (head_dim - 2)), inv_freq = 1 / base ** (arange(0, head_dim, 2) / head_dim), attention_scaling
                            1.0; inv_freq and original_inv_freq non-persistent buffers; forward = LlamaRotaryEmbedding's
                            (dynamic_rope_update recomputes only past max_position_embeddings: the cases stay below)
  HunYuanMoEV1Gate          wg = nn.Linear(H, E, bias=False, dtype=torch.float32); forward: reshape(-1, H),
                            .float() when wg is float32, wg(x)
  HunYuanMoEV1Experts       [E, 2I, H], [E, H, I] of intermediate_size under @use_experts_implementation:
                            grouped_mm_experts_forward (moe_v5_replica.MixtralExperts' forward)
  HunYuanMoEV1Moe           shared_mlp(x) first, gate, route_tokens_to_experts (softmax(dim=1, dtype=float), topk,
                            /= sum in place, .to(router_logits.dtype): float32), experts, + hidden_states_mlp
The float32 wg: from_pretrained(dtype=bfloat16) builds nn.Linear(..., dtype=torch.float32) float32 (an explicit dtype
wins over the default one); the harness's model.to(bfloat16) cast it: keep_fp32 restores it (and the rotary buffers).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

import moe_v5_replica
import reference as R


def head_dim_of(cfg):
    return cfg.d.get("head_dim") or cfg.hidden_size // cfg.num_attention_heads


class HunYuanRotaryEmbedding(nn.Module):
    def __init__(self, cfg, head_dim):
        super().__init__()
        rs = cfg.rope_scaling or {}
        rope_type = rs.get("rope_type", rs.get("type", "default"))
        if rope_type == "dynamic" and rs.get("alpha"):
            base = cfg.rope_theta * rs["alpha"] ** (head_dim / (head_dim - 2))
            inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
            self.attention_scaling = 1.0
        else:
            inv_freq, self.attention_scaling = R.rope_inv_freq(cfg, head_dim)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.register_buffer("original_inv_freq", inv_freq.clone(), persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * self.attention_scaling
        sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


class HunYuanAttention(nn.Module):
    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        self.layer_idx = layer_idx
        self.attn_impl = attn_impl
        H, nh, nkv = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads
        self.head_dim = hd = head_dim_of(cfg)
        self.num_key_value_groups = nh // nkv
        self.scaling = hd ** -0.5
        self.attention_dropout = cfg.attention_dropout
        b = cfg.attention_bias
        self.q_proj = R.Linear(H, nh * hd, bias=b)
        self.k_proj = R.Linear(H, nkv * hd, bias=b)
        self.v_proj = R.Linear(H, nkv * hd, bias=b)
        self.o_proj = R.Linear(nh * hd, H, bias=b)
        self.query_layernorm = R.LlamaRMSNorm(hd, eps=cfg.rms_norm_eps)
        self.key_layernorm = R.LlamaRMSNorm(hd, eps=cfg.rms_norm_eps)

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key_value=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = R.apply_rotary_pos_emb(query_states, key_states, cos, sin)
        query_states = self.query_layernorm(query_states)
        key_states = self.key_layernorm(key_states)
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


class HunYuanMoEV1Gate(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.wg = R.Linear(cfg.hidden_size, cfg.num_experts, bias=False).float()

    def forward(self, hidden_states):
        bsz, seq_len, hidden_size = hidden_states.shape
        hidden_states = hidden_states.reshape(-1, hidden_size)
        if self.wg.weight.dtype == torch.float32:
            hidden_states = hidden_states.float()
        return self.wg(hidden_states)


class HunYuanMoEV1Moe(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.top_k = cfg.d.get("moe_topk", 1)
        if isinstance(self.top_k, list):
            self.top_k = self.top_k[0]
        self.gate = HunYuanMoEV1Gate(cfg)
        # HunYuanMoEV1Experts: config.num_local_experts, config.intermediate_size
        ec = R.Config(dict(cfg.d, num_experts=cfg.num_experts, moe_intermediate_size=cfg.intermediate_size))
        self.experts = moe_v5_replica.Qwen2MoeExperts(ec, R.act_fn(cfg.hidden_act))
        self.shared_mlp = R.GatedMLP(cfg, cfg.hidden_act)

    def route_tokens_to_experts(self, hidden_states):
        routing_weights = F.softmax(hidden_states, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        return selected_experts, routing_weights.to(hidden_states.dtype)

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states_mlp = self.shared_mlp(hidden_states)
        router_logits = self.gate(hidden_states)
        hidden_states = hidden_states.view(-1, hidden_dim)
        selected_experts, routing_weights = self.route_tokens_to_experts(router_logits)
        final_hidden_states = self.experts(hidden_states, selected_experts, routing_weights).reshape(
            batch_size, sequence_length, hidden_dim)
        return final_hidden_states + hidden_states_mlp


class HunYuanDecoderLayer(nn.Module):
    """HunYuanDenseV1DecoderLayer and HunYuanMoEV1DecoderLayer (the same statements; the MLP differs)."""

    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        moe = cfg.model_type == "hunyuan_v1_moe"
        if moe and cfg.d.get("_experts_implementation") != "grouped_mm":
            raise ValueError("hunyuan_v1_moe is replicated with transformers 5's experts: --experts grouped_mm")
        self.self_attn = HunYuanAttention(cfg, layer_idx, attn_impl)
        self.mlp = HunYuanMoEV1Moe(cfg) if moe else R.GatedMLP(cfg, cfg.hidden_act)
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


def keep_fp32(model):
    """from_pretrained(dtype=bfloat16) leaves the float32 wg (an explicit dtype) and the rotary embedding's float32
    buffers as built; the harness's model.to(bfloat16) cast them: restored."""
    for m in model.modules():
        if isinstance(m, HunYuanMoEV1Gate):
            m.wg.weight.data = m.wg.weight.data.float()
        if isinstance(m, HunYuanRotaryEmbedding):
            m.inv_freq, m.original_inv_freq = m.inv_freq.float(), m.original_inv_freq.float()
