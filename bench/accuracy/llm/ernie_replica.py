"""ERNIE 4.5 (model_types ernie4_5 and ernie4_5_moe) as transformers 5 runs them, for the harness (issue 31):
reference.py's CausalLM builds its layers from here (layer_and_norm), its rotary embedding
near_llama_replica.Olmo2RotaryEmbedding (Ernie4_5RotaryEmbedding's statements: float32 cos / sin, `return cos, sin`).

Written from huggingface/transformers @ 0233e509531ace915c8241b4c16c8032a583279c, models/ernie4_5/modeling_ernie4_5.py
and models/ernie4_5_moe/modeling_ernie4_5_moe.py:
  Ernie4_5RMSNorm             LlamaRMSNorm's code (reference.LlamaRMSNorm)
  Ernie4_5Attention           q/k/v/o with bias=config.use_bias, head_dim getattr(config, "head_dim", H // heads),
                              apply_rotary_pos_emb below, the attention interface (attention_dropout 0.0)
  apply_rotary_pos_emb        cos / sin[..., : D // 2].repeat_interleave(2), (q.float() * cos) +
                              (rotate_half(q).float() * sin) over interleaved pairs, .to(original_dtype)
  Ernie4_5MLP                 gate_proj / up_proj / down_proj with bias=config.use_bias
  Ernie4_5_MoeTopKRouter      weight [E, H] float32; autocast off: F.linear(x.float(), weight.float()),
                              softmax(dim=1, dtype=float), topk of + moe_statics.e_score_correction_bias (the choice
                              only), gather, / clamp(sum, min=moe_norm_min), .to(x.dtype)
  Ernie4_5_MoeExperts         [E, 2I, H], [E, H, I] of moe_intermediate_size under @use_experts_implementation:
                              grouped_mm_experts_forward (moe_v5_replica.MixtralExperts' forward)
  Ernie4_5_MoeSparseMoeBlock  shared_experts (Ernie4_5_MoeMLP of moe_intermediate_size x moe_num_shared_experts)
                              first, gate, experts, + shared_output, reshape, .to(dtype)
  Ernie4_5_MoeDecoderLayer    the MoE block where (i + 1) % moe_layer_interval == 0 and moe_layer_start_index <= i <=
                              moe_layer_end_index (-1: the last layer), else Ernie4_5_MoeMLP(intermediate_size)
  _keep_in_fp32_modules_strict ["gate.weight", "moe_statics"]: float32 under bf16 (keep_fp32 after model.to)
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

import moe_v5_replica
import reference as R


def rotate_half(x):
    x1 = x[..., 0::2]
    x2 = x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    original_dtype = q.dtype
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    cos = cos[..., : cos.shape[-1] // 2].repeat_interleave(2, dim=-1)
    sin = sin[..., : sin.shape[-1] // 2].repeat_interleave(2, dim=-1)
    q_embed = (q.float() * cos) + (rotate_half(q).float() * sin)
    k_embed = (k.float() * cos) + (rotate_half(k).float() * sin)
    return q_embed.to(original_dtype), k_embed.to(original_dtype)


class Ernie4_5Attention(nn.Module):
    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        self.layer_idx = layer_idx
        self.attn_impl = attn_impl
        H, nh, nkv = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads
        self.head_dim = hd = cfg.d.get("head_dim") or H // nh
        self.num_key_value_groups = nh // nkv
        self.scaling = hd ** -0.5
        b = bool(cfg.d.get("use_bias", False))
        self.q_proj = R.Linear(H, nh * hd, bias=b)
        self.k_proj = R.Linear(H, nkv * hd, bias=b)
        self.v_proj = R.Linear(H, nkv * hd, bias=b)
        self.o_proj = R.Linear(nh * hd, H, bias=b)

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key_value=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        if past_key_value is not None:
            key_states, value_states = past_key_value.update(key_states, value_states, self.layer_idx)
        if self.attn_impl == "eager":
            attn_output, _ = R.eager_attention_forward(self, query_states, key_states, value_states,
                                                       attention_mask, self.scaling, 0.0)
        else:
            attn_output, _ = R.sdpa_attention_forward(self, query_states, key_states, value_states,
                                                      attention_mask, 0.0, self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class Ernie4_5MLP(nn.Module):
    def __init__(self, cfg, intermediate_size=None):
        super().__init__()
        H, I = cfg.hidden_size, intermediate_size or cfg.intermediate_size
        b = bool(cfg.d.get("use_bias", False))
        self.gate_proj = R.Linear(H, I, bias=b)
        self.up_proj = R.Linear(H, I, bias=b)
        self.down_proj = R.Linear(I, H, bias=b)
        self.act_fn = R.act_fn(cfg.hidden_act)

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class Ernie4_5_MoeStatics(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.e_score_correction_bias = nn.Parameter(torch.zeros(1, cfg.d["moe_num_experts"], dtype=torch.float32),
                                                    requires_grad=False)

    def forward(self, hidden_states):
        return hidden_states + self.e_score_correction_bias.squeeze()


class Ernie4_5_MoeTopKRouter(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(cfg.d["moe_num_experts"], cfg.hidden_size, dtype=torch.float32))
        nn.init.normal_(self.weight, std=0.02)
        self.moe_statics = Ernie4_5_MoeStatics(cfg)
        self.top_k = cfg.d["moe_k"]
        self.norm_min = cfg.d.get("moe_norm_min", 1e-12)

    def forward(self, hidden_states):
        # maybe_autocast(enabled=False): the harness runs no autocast
        router_logits = F.linear(hidden_states.float(), self.weight.float())
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        _, selected_experts = torch.topk(self.moe_statics(routing_weights), self.top_k, dim=-1)
        routing_weights = torch.gather(routing_weights, dim=-1, index=selected_experts)
        routing_weights = routing_weights / torch.clamp(routing_weights.sum(dim=-1, keepdim=True), min=self.norm_min)
        routing_weights = routing_weights.to(hidden_states.dtype)
        return router_logits, selected_experts, routing_weights


class Ernie4_5_MoeSparseMoeBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.hidden_dim = cfg.hidden_size
        self.gate = Ernie4_5_MoeTopKRouter(cfg)
        ec = R.Config(dict(cfg.d, num_experts=cfg.d["moe_num_experts"]))
        self.experts = moe_v5_replica.Qwen2MoeExperts(ec, R.act_fn(cfg.hidden_act))
        n = cfg.d.get("moe_num_shared_experts", 2)
        self.shared_experts = Ernie4_5MLP(cfg, cfg.d["moe_intermediate_size"] * n) if n > 0 else None

    def forward(self, hidden_states):
        batch_size, sequence_length, _ = hidden_states.shape
        hidden_states = hidden_states.view(-1, self.hidden_dim)
        if self.shared_experts is not None:
            shared_output = self.shared_experts(hidden_states)
        _, top_k_index, top_k_weights = self.gate(hidden_states)
        final_hidden_states = self.experts(hidden_states, top_k_index, top_k_weights)
        if self.shared_experts is not None:
            final_hidden_states = final_hidden_states + shared_output
        final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, self.hidden_dim)
        return final_hidden_states.to(hidden_states.dtype)


def is_moe_layer(cfg, layer_idx):
    end = cfg.d.get("moe_layer_end_index", -1)
    end = cfg.num_hidden_layers - 1 if end == -1 else end
    return ((layer_idx + 1) % cfg.d.get("moe_layer_interval", 1) == 0
            and layer_idx >= cfg.d.get("moe_layer_start_index", 1) and layer_idx <= end)


class Ernie4_5DecoderLayer(nn.Module):
    """Ernie4_5DecoderLayer and Ernie4_5_MoeDecoderLayer (the same statements; the MLP differs)."""

    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        moe = cfg.model_type == "ernie4_5_moe"
        if moe and cfg.d.get("_experts_implementation") != "grouped_mm":
            raise ValueError("ernie4_5_moe is replicated with transformers 5's experts: --experts grouped_mm")
        self.self_attn = Ernie4_5Attention(cfg, layer_idx, attn_impl)
        self.mlp = Ernie4_5_MoeSparseMoeBlock(cfg) if moe and is_moe_layer(cfg, layer_idx) else Ernie4_5MLP(cfg)
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
    """from_pretrained(dtype=bfloat16) keeps _keep_in_fp32_modules_strict ("gate.weight", "moe_statics") float32;
    the harness's model.to(bfloat16) cast them: restored."""
    for m in model.modules():
        if isinstance(m, Ernie4_5_MoeTopKRouter):
            m.weight.data = m.weight.data.float()
            m.moe_statics.e_score_correction_bias.data = m.moe_statics.e_score_correction_bias.data.float()
