"""DeepSeek-V3's multi-head latent attention (MLA) and the exact parameter counts of the
deepseek_v3 / kimi_k2 checkpoints, written from the transformers source (issue 31).

Source: huggingface/transformers @ 00b676f8f0489b88652a31d70751cc540dd06305,
src/transformers/models/deepseek_v3/modeling_deepseek_v3.py:
  DeepseekV3RMSNorm          weight [hidden], x.to(float32), pow(2).mean, rsqrt, weight * x.to(dtype)
  DeepseekV3Attention        q_proj [H*qk, hidden] when q_lora_rank is None, else q_a_proj [q_lora_rank,
                             hidden] (bias=attention_bias), q_a_layernorm [q_lora_rank], q_b_proj
                             [H*qk, q_lora_rank]; kv_a_proj_with_mqa [kv_lora_rank + rope, hidden]
                             (bias=attention_bias), kv_a_layernorm [kv_lora_rank], kv_b_proj
                             [H*(nope + v), kv_lora_rank], o_proj [hidden, H*v] (bias=attention_bias);
                             forward as below (MLA.forward)
  DeepseekV3MLP              gate/up [I, hidden], down [hidden, I]
  DeepseekV3TopkRouter       weight [E, hidden]; e_score_correction_bias a buffer [E] (in the checkpoint,
                             not in named_parameters())
  DeepseekV3MoE              experts (E MLPs of moe_intermediate_size), gate, shared_experts (an MLP of
                             moe_intermediate_size * n_shared_experts)
  DeepseekV3DecoderLayer     input_layernorm, self_attn, post_attention_layernorm, mlp: DeepseekV3MLP below
                             first_k_dense_replace, DeepseekV3MoE from it on
  DeepseekV3ForCausalLM      embed_tokens, layers, norm, lm_head (untied)
configuration_deepseek_v3.py @ 001f85b3: head_dim = qk_rope_head_dim, qk_head_dim = nope + rope,
rope_interleave defaults to True.
The checkpoint's MTP layer (num_nextn_predict_layers, model.layers.61: enorm, hnorm, eh_proj
[hidden, 2*hidden], a MoE decoder layer, shared_head.norm, shared_head.head and its own
embed_tokens, as DeepSeek-V3's model.safetensors.index.json lists it) is counted apart:
DeepseekV3Model._keys_to_ignore_on_load_unexpected = [r"model\\.layers\\.61.*"].

python3 mla_replica.py prints the counts; `--check` asserts the figures tests/test_hf.c uses.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def keys(cfg):
    g = lambda k, d: cfg[k] if cfg.get(k) is not None else d  # noqa: E731  (DeepseekV3Config defaults)
    return dict(V=cfg["vocab_size"], H=cfg["hidden_size"], N=cfg["num_hidden_layers"], NH=cfg["num_attention_heads"],
                I=cfg["intermediate_size"], qlr=cfg.get("q_lora_rank", 1536), kvl=g("kv_lora_rank", 512),
                R=g("qk_rope_head_dim", 64), nope=g("qk_nope_head_dim", 128), vd=g("v_head_dim", 128),
                E=g("n_routed_experts", 256), shared=g("n_shared_experts", 1), moeI=g("moe_intermediate_size", 2048),
                fkd=g("first_k_dense_replace", 3), bias=bool(g("attention_bias", False)),
                tie=bool(g("tie_word_embeddings", False)), mtp=g("num_nextn_predict_layers", 0))


def counts(cfg):
    """(named_parameters() of DeepseekV3ForCausalLM, e_score_correction_bias values, one MTP layer)."""
    k = keys(cfg)
    H, NH, qk = k["H"], k["NH"], k["nope"] + k["R"]
    b = H if k["bias"] else 0  # attention_bias: q_a_proj / kv_a_proj_with_mqa / o_proj biases
    if k["qlr"]:
        attn = H * k["qlr"] + (k["qlr"] if k["bias"] else 0) + k["qlr"] + k["qlr"] * NH * qk
    else:
        attn = H * NH * qk
    attn += H * (k["kvl"] + k["R"]) + ((k["kvl"] + k["R"]) if k["bias"] else 0) + k["kvl"]
    attn += k["kvl"] * NH * (k["nope"] + k["vd"]) + NH * k["vd"] * H + b
    norms = 2 * H
    dense = 3 * H * k["I"]
    moe = k["E"] * 3 * H * k["moeI"] + k["E"] * H + 3 * H * k["moeI"] * k["shared"]
    n_moe = max(k["N"] - k["fkd"], 0)
    layers = min(k["fkd"], k["N"]) * (attn + norms + dense) + n_moe * (attn + norms + moe)
    main = k["V"] * H + layers + H + (0 if k["tie"] else k["V"] * H)
    mtp = attn + norms + moe + k["E"] + 2 * H + 2 * H * H + H + 2 * k["V"] * H
    return main, n_moe * k["E"], mtp


def mla_module(cfg):
    """DeepseekV3Attention as torch modules (for a meta-device count or a measurement)."""
    import torch.nn as nn
    import torch
    import torch.nn.functional as F
    k = keys(cfg)

    class RMSNorm(nn.Module):
        def __init__(self, n, eps=1e-6):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(n))
            self.eps = eps

        def forward(self, x):
            dt = x.dtype
            x = x.to(torch.float32)
            v = x.pow(2).mean(-1, keepdim=True)
            x = x * torch.rsqrt(v + self.eps)
            return self.weight * x.to(dt)

    class MLA(nn.Module):
        def __init__(self):
            super().__init__()
            H, NH = k["H"], k["NH"]
            self.qk, self.nope, self.R, self.vd, self.kvl = k["nope"] + k["R"], k["nope"], k["R"], k["vd"], k["kvl"]
            if not k["qlr"]:
                self.q_proj = nn.Linear(H, NH * self.qk, bias=False)
            else:
                self.q_a_proj = nn.Linear(H, k["qlr"], bias=k["bias"])
                self.q_a_layernorm = RMSNorm(k["qlr"])
                self.q_b_proj = nn.Linear(k["qlr"], NH * self.qk, bias=False)
            self.kv_a_proj_with_mqa = nn.Linear(H, self.kvl + self.R, bias=k["bias"])
            self.kv_a_layernorm = RMSNorm(self.kvl)
            self.kv_b_proj = nn.Linear(self.kvl, NH * (self.nope + self.vd), bias=False)
            self.o_proj = nn.Linear(NH * self.vd, H, bias=k["bias"])
            self.interleave = bool(cfg.get("rope_interleave", True))

        def forward(self, x, cos, sin, attention):
            """DeepseekV3Attention.forward, statement by statement; `attention` is the
            sdpa_attention_forward the harness supplies (query, key, value) -> [B, L, H, v]."""
            B, L = x.shape[:-1]
            q = self.q_proj(x) if not hasattr(self, "q_a_proj") else self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x)))
            q = q.view(B, L, -1, self.qk).transpose(1, 2)
            q_pass, q_rot = torch.split(q, [self.nope, self.R], dim=-1)
            ckv = self.kv_a_proj_with_mqa(x)
            k_pass, k_rot = torch.split(ckv, [self.kvl, self.R], dim=-1)
            k_pass = self.kv_b_proj(self.kv_a_layernorm(k_pass)).view(B, L, -1, self.nope + self.vd).transpose(1, 2)
            k_pass, value = torch.split(k_pass, [self.nope, self.vd], dim=-1)
            k_rot = k_rot.view(B, 1, L, self.R)
            cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)

            def rot(t):
                if self.interleave:  # apply_rotary_pos_emb_interleave
                    b, h, s, d = t.shape
                    t = t.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)
                half = t.shape[-1] // 2
                return (t * cos) + (torch.cat((-t[..., half:], t[..., :half]), dim=-1) * sin)

            q_rot, k_rot = rot(q_rot), rot(k_rot)
            k_rot = k_rot.expand(*k_pass.shape[:-1], -1)
            query = torch.cat((q_pass, q_rot), dim=-1)
            key = torch.cat((k_pass, k_rot), dim=-1)
            out = attention(query, key, value)
            return self.o_proj(out.reshape(B, L, -1).contiguous())

    return MLA()



# ---------------------------------------------------------------------------
# The harness's modules (reference.py builds them for model_type deepseek_v3): DeepseekV3Attention
# (modeling_deepseek_v3.py @ 00b676f8, as above) and transformers 5's DeepseekV3MoE. The MoE is
# written from models/glm4_moe/modeling_glm4_moe.py @ 000c33fd (Glm4MoeTopkRouter,
# Glm4MoeMoE.route_tokens_to_experts / forward: transformers 5's modular DeepSeek-V3 MoE, whose
# Glm4MoeNaiveMoe experts dispatch to grouped_mm_experts_forward through
# @use_experts_implementation, replicated in moe_v5_replica.py).
# ---------------------------------------------------------------------------
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class DeepseekV3RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        import vctorch  # tools/vctorch.py: .mean with 2.x's MeanBackward1 (sizes only; 1.13's keeps its input)
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = vctorch.mean2x(hidden_states.pow(2), -1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


def _rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (_rotate_half(q) * sin)
    k_embed = (k * cos) + (_rotate_half(k) * sin)
    return q_embed, k_embed


def apply_rotary_pos_emb_interleave(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    b, h, s, d = q.shape
    q = q.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)
    b, h, s, d = k.shape
    k = k.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)
    q_embed = (q * cos) + (_rotate_half(q) * sin)
    k_embed = (k * cos) + (_rotate_half(k) * sin)
    return q_embed, k_embed


class DeepseekV3Attention(nn.Module):
    """DeepseekV3Attention.__init__ / forward; `linear` is reference.Linear (nn.Linear through
    the harness's 2.x at::linear), the attention reference.sdpa_attention_forward."""

    def __init__(self, cfg, layer_idx, attn_impl, linear, sdpa):
        super().__init__()
        self.layer_idx = layer_idx
        self.sdpa = sdpa
        self.num_key_value_groups = 1  # num_attention_heads // num_key_value_heads (equal)
        self.attention_dropout = cfg.attention_dropout
        H, NH = cfg.hidden_size, cfg.num_attention_heads
        self.q_lora_rank = cfg.d.get("q_lora_rank")
        self.qk_rope_head_dim = cfg.d["qk_rope_head_dim"]
        self.kv_lora_rank = cfg.d["kv_lora_rank"]
        self.v_head_dim = cfg.d["v_head_dim"]
        self.qk_nope_head_dim = cfg.d["qk_nope_head_dim"]
        self.qk_head_dim = self.qk_nope_head_dim + self.qk_rope_head_dim
        self.rope_interleave = cfg.d.get("rope_interleave", True)
        if self.q_lora_rank is None:
            self.q_proj = linear(H, NH * self.qk_head_dim, bias=False)
        else:
            self.q_a_proj = linear(H, self.q_lora_rank, bias=cfg.attention_bias)
            self.q_a_layernorm = DeepseekV3RMSNorm(self.q_lora_rank)
            self.q_b_proj = linear(self.q_lora_rank, NH * self.qk_head_dim, bias=False)
        self.kv_a_proj_with_mqa = linear(H, self.kv_lora_rank + self.qk_rope_head_dim, bias=cfg.attention_bias)
        self.kv_a_layernorm = DeepseekV3RMSNorm(self.kv_lora_rank)
        self.kv_b_proj = linear(self.kv_lora_rank, NH * (self.qk_nope_head_dim + self.v_head_dim), bias=False)
        self.o_proj = linear(NH * self.v_head_dim, H, bias=cfg.attention_bias)
        self.scaling = self.qk_head_dim ** (-0.5)

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key_value=None):
        batch_size, seq_length = hidden_states.shape[:-1]
        query_shape = (batch_size, seq_length, -1, self.qk_head_dim)
        key_shape = (batch_size, seq_length, -1, self.qk_nope_head_dim + self.v_head_dim)
        if self.q_lora_rank is None:
            q_states = self.q_proj(hidden_states)
        else:
            q_states = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(hidden_states)))
        q_states = q_states.view(query_shape).transpose(1, 2)
        q_pass, q_rot = torch.split(q_states, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        compressed_kv = self.kv_a_proj_with_mqa(hidden_states)
        k_pass, k_rot = torch.split(compressed_kv, [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        k_pass = self.kv_b_proj(self.kv_a_layernorm(k_pass)).view(key_shape).transpose(1, 2)
        k_pass, value_states = torch.split(k_pass, [self.qk_nope_head_dim, self.v_head_dim], dim=-1)
        k_rot = k_rot.view(batch_size, 1, seq_length, self.qk_rope_head_dim)
        cos, sin = position_embeddings
        if self.rope_interleave:
            q_rot, k_rot = apply_rotary_pos_emb_interleave(q_rot, k_rot, cos, sin)
        else:
            q_rot, k_rot = apply_rotary_pos_emb(q_rot, k_rot, cos, sin)
        k_rot = k_rot.expand(*k_pass.shape[:-1], -1)
        query_states = torch.cat((q_pass, q_rot), dim=-1)
        key_states = torch.cat((k_pass, k_rot), dim=-1)
        if past_key_value is not None:
            key_states, value_states = past_key_value.update(key_states, value_states, self.layer_idx)
        # sdpa (transformers' default): no padding of the value (that is flash_attention_2's only)
        attn_output, _ = self.sdpa(self, query_states, key_states, value_states, attention_mask,
                                   0.0 if not self.training else self.attention_dropout, self.scaling)
        attn_output = attn_output.reshape(batch_size, seq_length, -1).contiguous()
        return self.o_proj(attn_output)


class DeepseekV3TopkRouter(nn.Module):
    """Glm4MoeTopkRouter (transformers 5): weight [E, H], e_score_correction_bias a float32 buffer;
    forward returns F.linear(hidden.type(float32), weight.type(float32))."""

    def __init__(self, cfg):
        super().__init__()
        self.hidden_size = cfg.hidden_size
        self.weight = nn.Parameter(torch.empty((cfg.d["n_routed_experts"], cfg.hidden_size)))
        nn.init.normal_(self.weight, std=0.02)
        self.register_buffer("e_score_correction_bias", torch.zeros((cfg.d["n_routed_experts"]), dtype=torch.float32))

    def forward(self, hidden_states):
        hidden_states = hidden_states.view(-1, self.hidden_size)
        return F.linear(hidden_states.type(torch.float32), self.weight.type(torch.float32))


def _naive_moe(cfg, act):
    """Glm4MoeNaiveMoe's stacked experts ([E, 2I, H], [E, H, I]) through grouped_mm_experts_forward."""
    import moe_v5_replica
    m = moe_v5_replica.MixtralExperts.__new__(moe_v5_replica.MixtralExperts)
    nn.Module.__init__(m)
    m.num_experts = cfg.d["n_routed_experts"]
    m.hidden_dim = cfg.hidden_size
    m.intermediate_dim = cfg.d["moe_intermediate_size"]
    m.gate_up_proj = nn.Parameter(torch.empty(m.num_experts, 2 * m.intermediate_dim, m.hidden_dim))
    m.down_proj = nn.Parameter(torch.empty(m.num_experts, m.hidden_dim, m.intermediate_dim))
    nn.init.normal_(m.gate_up_proj, std=0.02)
    nn.init.normal_(m.down_proj, std=0.02)
    m.act_fn = act
    return m


class DeepseekV3MoE(nn.Module):
    """Glm4MoeMoE.__init__ / route_tokens_to_experts / forward (transformers 5)."""

    def __init__(self, cfg, act, shared_mlp):
        super().__init__()
        self.experts = _naive_moe(cfg, act)
        self.gate = DeepseekV3TopkRouter(cfg)
        self.shared_experts = shared_mlp  # MLP of moe_intermediate_size * n_shared_experts
        self.n_routed_experts = cfg.d["n_routed_experts"]
        self.n_group = cfg.d["n_group"]
        self.topk_group = cfg.d["topk_group"]
        self.norm_topk_prob = cfg.d.get("norm_topk_prob", True)
        self.routed_scaling_factor = cfg.d.get("routed_scaling_factor", 2.5)
        self.top_k = cfg.d["num_experts_per_tok"]

    def route_tokens_to_experts(self, router_logits):
        router_logits = router_logits.sigmoid()
        router_logits_for_choice = router_logits + self.gate.e_score_correction_bias
        group_scores = (
            router_logits_for_choice.view(-1, self.n_group, self.n_routed_experts // self.n_group)
            .topk(2, dim=-1)[0]
            .sum(dim=-1)
        )
        group_idx = torch.topk(group_scores, k=self.topk_group, dim=-1, sorted=False)[1]
        group_mask = torch.zeros_like(group_scores)
        group_mask.scatter_(1, group_idx, 1)
        score_mask = (
            group_mask.unsqueeze(-1)
            .expand(-1, self.n_group, self.n_routed_experts // self.n_group)
            .reshape(-1, self.n_routed_experts)
        )
        scores_for_choice = router_logits_for_choice.masked_fill(~score_mask.bool(), 0.0)
        topk_indices = torch.topk(scores_for_choice, k=self.top_k, dim=-1, sorted=False)[1]
        topk_weights = router_logits.gather(1, topk_indices)
        if self.norm_topk_prob:
            denominator = topk_weights.sum(dim=-1, keepdim=True) + 1e-20
            topk_weights /= denominator
        topk_weights = topk_weights * self.routed_scaling_factor
        return topk_indices, topk_weights

    def forward(self, hidden_states):
        residuals = hidden_states
        orig_shape = hidden_states.shape
        router_logits = self.gate(hidden_states)
        topk_indices, topk_weights = self.route_tokens_to_experts(router_logits)
        hidden_states = hidden_states.view(-1, hidden_states.shape[-1])
        hidden_states = self.experts(hidden_states, topk_indices, topk_weights).view(*orig_shape)
        hidden_states = hidden_states + self.shared_experts(residuals)
        return hidden_states

# ---------------------------------------------------------------------------
# DeepSeek-V2 (model_type deepseek_v2, issue 31): huggingface/transformers @
# 0233e509531ace915c8241b4c16c8032a583279c, src/transformers/models/deepseek_v2/modeling_deepseek_v2.py.
# DeepseekV2Attention is DeepseekV3Attention's modules with apply_rotary_emb on the complex freqs_cis
# of DeepseekV2RotaryEmbedding; DeepseekV2Moe routes by softmax (topk_method greedy or
# group_limited_greedy, no correction bias, no renormalisation) over DeepseekV2Experts (stacked,
# @use_experts_implementation: grouped_mm_experts_forward, moe_v5_replica.py).
# ---------------------------------------------------------------------------
class DeepseekV2RotaryEmbedding(nn.Module):
    """DeepseekV2RotaryEmbedding: compute_default_rope_parameters (dim = head_dim = qk_rope_head_dim),
    forward: freqs (float32), torch.polar(ones_like(freqs), freqs), * attention_scaling (1.0)."""

    def __init__(self, cfg, dim):
        super().__init__()
        base = cfg.d.get("rope_theta", 10000.0)
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.attention_scaling = 1.0
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.to(x.device) @ position_ids_expanded).transpose(1, 2)
        freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
        freqs_cis = freqs_cis * self.attention_scaling
        return freqs_cis


def apply_rotary_emb_v2(xq, xk, freqs_cis):
    """modeling_deepseek_v2.py apply_rotary_emb."""
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = freqs_cis.unsqueeze(1).to(xq_.device)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3).type_as(xq)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3).type_as(xk)
    return xq_out, xk_out


class DeepseekV2Attention(DeepseekV3Attention):
    """DeepseekV2Attention.__init__ (DeepseekV3Attention's modules, no rope_interleave) / forward."""

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key_value=None):
        batch_size, seq_length = hidden_states.shape[:-1]
        query_shape = (batch_size, seq_length, -1, self.qk_head_dim)
        key_shape = (batch_size, seq_length, -1, self.qk_nope_head_dim + self.v_head_dim)
        if self.q_lora_rank is None:
            q = self.q_proj(hidden_states)
        else:
            q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(hidden_states)))
        q = q.view(query_shape).transpose(1, 2)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        compressed_kv = self.kv_a_proj_with_mqa(hidden_states)
        k_nope, k_pe = torch.split(compressed_kv, [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        k_nope = self.kv_b_proj(self.kv_a_layernorm(k_nope)).view(key_shape).transpose(1, 2)
        k_nope, value_states = torch.split(k_nope, [self.qk_nope_head_dim, self.v_head_dim], dim=-1)
        k_pe = k_pe.view(batch_size, 1, seq_length, self.qk_rope_head_dim)
        q_pe, k_pe = apply_rotary_emb_v2(q_pe, k_pe, position_embeddings.to(q_pe.device))
        k_pe = k_pe.expand(*k_nope.shape[:-1], -1)
        query_states = torch.cat((q_nope, q_pe), dim=-1)
        key_states = torch.cat((k_nope, k_pe), dim=-1)
        if past_key_value is not None:
            key_states, value_states = past_key_value.update(key_states, value_states, self.layer_idx)
        attn_output, _ = self.sdpa(self, query_states, key_states, value_states, attention_mask,
                                   0.0 if not self.training else self.attention_dropout, self.scaling)
        attn_output = attn_output.reshape(batch_size, seq_length, -1).contiguous()
        return self.o_proj(attn_output)


class DeepseekV2Moe(nn.Module):
    """DeepseekV2Moe.__init__ (experts, gate: nn.Linear(H, E, bias=False), shared_experts) /
    route_tokens_to_experts / forward."""

    def __init__(self, cfg, act, shared_mlp, linear):
        super().__init__()
        self.experts = _naive_moe(cfg, act)
        self.gate = linear(cfg.hidden_size, cfg.d["n_routed_experts"], bias=False)
        self.shared_experts = shared_mlp
        self.num_experts = cfg.d["n_routed_experts"]
        self.routed_scaling_factor = cfg.d.get("routed_scaling_factor", 1.0)
        self.topk_method = cfg.d.get("topk_method", "greedy")
        self.num_group = cfg.d.get("n_group")
        self.top_k = cfg.d["num_experts_per_tok"]
        self.topk_group = cfg.d.get("topk_group")

    def route_tokens_to_experts(self, router_logits):
        batch_size, seq_len, hidden_dim = router_logits.shape
        router_logits = router_logits.view(-1, hidden_dim)
        router_logits = router_logits.softmax(dim=-1, dtype=torch.float32)
        if self.topk_method == "greedy":
            topk_weight, topk_idx = torch.topk(router_logits, k=self.top_k, dim=-1, sorted=False)
        elif self.topk_method == "group_limited_greedy":
            group_scores = router_logits.view(batch_size * seq_len, self.num_group, -1).max(dim=-1).values
            group_idx = torch.topk(group_scores, k=self.topk_group, dim=-1, sorted=False)[1]
            group_mask = torch.zeros_like(group_scores)
            group_mask.scatter_(1, group_idx, 1)
            score_mask = (
                group_mask.unsqueeze(-1)
                .expand(batch_size * seq_len, self.num_group, self.num_experts // self.num_group)
                .reshape(batch_size * seq_len, -1)
            )
            tmp_scores = router_logits.masked_fill(~score_mask.bool(), 0.0)
            topk_weight, topk_idx = torch.topk(tmp_scores, k=self.top_k, dim=-1, sorted=False)
        topk_weight = topk_weight * self.routed_scaling_factor
        return topk_idx, topk_weight

    def forward(self, hidden_states):
        residuals = hidden_states
        orig_shape = hidden_states.shape
        router_logits = F.linear(hidden_states.type(torch.float32), self.gate.weight.type(torch.float32))
        topk_indices, topk_weights = self.route_tokens_to_experts(router_logits)
        hidden_states = hidden_states.view(-1, hidden_states.shape[-1])
        hidden_states = self.experts(hidden_states, topk_indices, topk_weights).view(*orig_shape)
        hidden_states = hidden_states + self.shared_experts(residuals)
        return hidden_states


CASES = [  # (config under tests/data/hf, named_parameters() count test_hf.c asserts)
    ("deepseek-v3.json", 671026404352),
    ("kimi-k2.json", 1026408209408),
    ("deepseek-v2-lite-shape.json", 15706484224),
]


def main(argv):
    ok = True
    for name, want in CASES:
        with open(os.path.join(ROOT, "tests", "data", "hf", name)) as f:
            cfg = json.load(f)
        main_n, bias, mtp = counts(cfg)
        nextn = cfg.get("num_nextn_predict_layers", 0) or 0
        print("%-28s named_parameters %d, + e_score_correction_bias %d = %d stored; MTP %d x %d; with MTP %d"
              % (name, main_n, bias, main_n + bias, nextn, mtp, main_n + bias + nextn * mtp))
        ok &= main_n == want
    if "--meta" in argv:  # the attention's count from the modules themselves (torch's meta device)
        import torch
        with open(os.path.join(ROOT, "tests", "data", "hf", "deepseek-v3.json")) as f:
            cfg = json.load(f)
        k = keys(cfg)
        with torch.device("meta") if hasattr(torch, "device") and hasattr(torch.device, "__enter__") else _Meta():
            m = mla_module(cfg)
        n = sum(p.numel() for p in m.parameters())
        qk = k["nope"] + k["R"]
        want = (k["H"] * k["qlr"] + k["qlr"] + k["qlr"] * k["NH"] * qk + k["H"] * (k["kvl"] + k["R"]) + k["kvl"]
                + k["kvl"] * k["NH"] * (k["nope"] + k["vd"]) + k["NH"] * k["vd"] * k["H"])
        print("DeepseekV3Attention modules: %d parameters (the count's attention: %d)" % (n, want))
        ok &= n == want
    if "--check" in argv and not ok:
        sys.exit("mismatch")


class _Meta:
    """torch 1.13: no `with torch.device(...)`; build on the CPU instead (small enough for one layer)."""

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


if __name__ == "__main__":
    main(sys.argv[1:])
