"""Reference PyTorch modules for Hugging Face causal LMs, built from a config.json.

Written from the Hugging Face transformers source (no `transformers` package here) for
torch 1.13 on CPU, to be measured by bench/accuracy's allocator counter (measure_llm.py).
Sources read (transformers, stored commits named in README.md):
  L  = models/llama/modeling_llama.py   @5dd4a63  (also used by qwen2: the same code with
       q/k/v bias, Qwen2Attention; and by mixtral's attention, models/mixtral/modeling_mixtral.py @5dd4a63)
  G  = models/gemma2/modeling_gemma2.py @5dd4a63
  G1 = models/gemma/modeling_gemma.py @0125ac68 (Gemma 1: LlamaDecoderLayer's structure with GemmaRMSNorm = G's
       Gemma2RMSNorm ops, GemmaMLP = the gated MLP with hidden_activation, GemmaModel's embedding normalizer,
       head_dim ** -0.5 scaling, no soft-capping, no sliding window; GemmaConfig tie_word_embeddings=True)
  Q3 = models/qwen3/modeling_qwen3.py @000c33fd (transformers 5: Qwen3Attention with q_norm/k_norm,
       Qwen3RMSNorm = LlamaRMSNorm's ops, Qwen3MLP = LlamaMLP)
  Q3M = models/qwen3_moe/modeling_qwen3_moe.py @00d4b3d2 (transformers 4.x: Qwen3MoeAttention = Q3's,
       Qwen3MoeSparseMoeBlock's loop over nn.ModuleList experts, expert_hit; --experts per_expert only)
  N  = models/gpt_neox/modeling_gpt_neox.py @006bd23 (an older revision: see the GPT-NeoX section)
  M  = models/mixtral/modeling_mixtral.py @5dd4a63
  S  = integrations/sdpa_attention.py @00c238b (sdpa_attention_forward, use_gqa_in_sdpa)
  LU = loss/loss_utils.py @0114da0 (ForCausalLMLoss, fixed_cross_entropy)
  R  = modeling_rope_utils.py (_compute_default_rope_parameters, _compute_llama3_parameters)
  A  = activations.py (ACT2FN: silu -> nn.SiLU, gelu -> GELUActivation = F.gelu,
       gelu_pytorch_tanh -> F.gelu(approximate="tanh"))
  C  = cache_utils.py @004999d DynamicCache / DynamicLayer / DynamicSlidingWindowLayer
  GU = generation/utils.py @000034a GenerationMixin._sample (the decoding loop)
PEFT (github:huggingface/peft @5d602fd): tuners/lora/layer.py Linear.forward and
LoraLayer.update_layer; tuners_utils.py _cast_input_dtype / cast_adapter_dtype;
peft_model.py PeftModel.__init__ (autocast_adapter_dtype, prepare_model_for_gradient_checkpointing).

PyTorch 2.x operators that torch 1.13 lacks (scaled_dot_product_attention's math backend,
non-reentrant checkpoint with early stop, CUDA's fused dropout, 2.x's at::linear) come from
the accuracy harness (tools/vctorch.py), which ports them from the PyTorch source; nothing
here comes from vramcalc's engine.
"""

import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import vctorch  # tools/vctorch.py: the harness's PyTorch 2.x operator replicas


# --------------------------------------------------------------------------
# config
# --------------------------------------------------------------------------

class Config:
    """config.json with the defaults of the transformers configuration classes."""

    DEFAULTS = {
        "attention_bias": False, "attention_dropout": 0.0, "mlp_bias": False,
        "rope_scaling": None, "rope_theta": 10000.0, "tie_word_embeddings": False,
        "pad_token_id": None, "rms_norm_eps": 1e-6, "hidden_act": "silu",
        "num_key_value_heads": None, "head_dim": None, "sliding_window": None,
        "router_jitter_noise": 0.0, "hidden_dropout": 0.0, "use_parallel_residual": True,
        "rotary_pct": 0.25, "rotary_emb_base": 10000, "layer_norm_eps": 1e-5,
        "final_logit_softcapping": None, "attn_logit_softcapping": None,
    }

    def __init__(self, d):
        self.d = dict(d)
        if self.d["model_type"] in ("gemma", "gemma2"):
            # Gemma2Config (and G1's GemmaConfig) defaults: tie_word_embeddings=True, hidden_activation gelu_pytorch_tanh
            self.d.setdefault("tie_word_embeddings", True)
        if self.d["model_type"] in ("cohere", "cohere2"):  # CohereConfig / Cohere2Config: tie_word_embeddings True
            self.d.setdefault("tie_word_embeddings", True)
        if self.d.get("num_key_value_heads") is None:
            self.d["num_key_value_heads"] = self.d["num_attention_heads"]

    def __getattr__(self, k):
        d = self.__dict__["d"]
        if k in d:
            return d[k]
        if k in Config.DEFAULTS:
            return Config.DEFAULTS[k]
        raise AttributeError(k)

    @classmethod
    def load(cls, path):
        with open(path) as f:
            return cls(json.load(f))


def act_fn(name):
    # A: ACT2FN
    if name == "silu":
        return F.silu
    if name == "gelu":
        return F.gelu
    if name in ("gelu_pytorch_tanh", "gelu_new"):
        # gelu_new is NewGELUActivation (an explicit tanh formula) in transformers; only
        # gelu_pytorch_tanh is used by the configs here
        return lambda x: F.gelu(x, approximate="tanh")
    raise ValueError("activation %r" % name)


class Linear(nn.Linear):
    """nn.Linear; forward = at::linear as PyTorch 2.x runs it (vctorch.linear2x)."""

    def forward(self, x):
        return vctorch.linear2x(x, self.weight, self.bias)


# --------------------------------------------------------------------------
# norms, rotary embedding, attention
# --------------------------------------------------------------------------

class LlamaRMSNorm(nn.Module):
    """L: LlamaRMSNorm.forward (fp32 upcast, weight * x.to(input_dtype)). Also Qwen2RMSNorm,
    MixtralRMSNorm (identical code)."""

    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        # .mean(-1, keepdim=True) with 2.x's MeanBackward1 (sizes only; 1.13's keeps its input)
        variance = vctorch.mean2x(hidden_states.pow(2), -1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class Gemma2RMSNorm(nn.Module):
    """G: Gemma2RMSNorm (x.float(), (x * w).type_as(x) with w = 1 + weight.float())."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(dim))

    def _norm(self, x):
        return x * torch.rsqrt(vctorch.mean2x(x.pow(2), -1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float())
        output = output * (1.0 + self.weight.float())
        return output.type_as(x)


def rope_inv_freq(cfg, head_dim):
    """R: _compute_default_rope_parameters, and _compute_llama3_parameters when
    rope_scaling.rope_type == 'llama3'. Returns (inv_freq, attention_scaling)."""
    base = cfg.rope_theta
    dim = int(head_dim * cfg.d.get("partial_rotary_factor", 1.0))
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    rs = cfg.rope_scaling
    if rs is None:
        return inv_freq, 1.0
    rt = rs.get("rope_type", rs.get("type"))
    if rt == "default":
        return inv_freq, 1.0
    if rt == "linear":  # _compute_linear_scaling_rope_parameters
        return inv_freq / rs["factor"], 1.0
    if rt != "llama3":
        raise ValueError("rope_type %r not replicated" % rt)
    factor = rs["factor"]
    low_freq_factor = rs["low_freq_factor"]
    high_freq_factor = rs["high_freq_factor"]
    old_context_len = rs["original_max_position_embeddings"]
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    inv_freq_llama = torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)
    return inv_freq_llama, 1.0


class RotaryEmbedding(nn.Module):
    """L: LlamaRotaryEmbedding (one per model, position_embeddings shared by the layers);
    Gemma2RotaryEmbedding and MixtralRotaryEmbedding are the same code."""

    def __init__(self, cfg, head_dim):
        super().__init__()
        inv_freq, self.attention_scaling = rope_inv_freq(cfg, head_dim)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos()
        sin = emb.sin()
        cos = cos * self.attention_scaling
        sin = sin * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
    """L: rotate_half."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    """L: apply_rotary_pos_emb."""
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def repeat_kv(hidden_states, n_rep):
    """L / S: repeat_kv (expand + reshape: a copy)."""
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0,
                            softcap=None):
    """L: eager_attention_forward; G: the same with attn_logit_softcapping."""
    key_states = repeat_kv(key, module.num_key_value_groups)
    value_states = repeat_kv(value, module.num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if softcap is not None:
        attn_weights = attn_weights / softcap
        attn_weights = torch.tanh(attn_weights)
        attn_weights = attn_weights * softcap
    if attention_mask is not None:
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
        attn_weights = attn_weights + causal_mask
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = vctorch.dropout2x(attn_weights, dropout, module.training)
    attn_output = torch.matmul(attn_weights, value_states)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


def sdpa_attention_forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None,
                           **kwargs):
    """S: sdpa_attention_forward as it runs with torch >= 2.5 on CUDA: use_gqa_in_sdpa is true
    when attention_mask is None, and enable_gqa=True makes SDPA's math backend repeat k and v
    itself (PyTorch attention.cpp pre_process_group_query_attention_input: repeat_interleave
    on dim -3); with a mask, repeat_kv first.  is_causal = q_len > 1 and mask is None.
    SDPA itself: the harness's port of _scaled_dot_product_attention_math (the only backend
    a CPU can show; flash/efficient keep no L x S matrix)."""
    n_rep = module.num_key_value_groups
    enable_gqa = False
    if n_rep > 1:
        if attention_mask is None:
            # use_gqa_in_sdpa: torch >= 2.5 and no mask -> sdpa_kwargs = {"enable_gqa": True}; the
            # math backend repeats key/value itself after its fp32 copies (vctorch._sdpa_math_2x)
            enable_gqa = True
        else:
            key = repeat_kv(key, n_rep)
            value = repeat_kv(value, n_rep)
    is_causal = query.shape[2] > 1 and attention_mask is None
    if attention_mask is not None and attention_mask.dtype == torch.bool:
        # a packed row's block-causal mask (packing_replica.py): scaled_dot_product_attention converts
        # it before the backend, a local of the call
        import packing_replica
        attention_mask = packing_replica.bool_to_additive(attention_mask, query.dtype)
    attn_output = vctorch._sdpa_math_2x(query, key, value, attn_mask=attention_mask,
                                        dropout_p=dropout, is_causal=is_causal, scale=scaling,
                                        enable_gqa=enable_gqa)
    del attention_mask
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, None


class DynamicCache:
    """C: DynamicCache(config=...) (cache_utils.py @004999d, DynamicCache.__init__): one
    layer per decoder layer, DynamicSlidingWindowLayer for "sliding_attention" layers
    (layer_types, or every layer when the config has a sliding_window and no layer_types),
    DynamicLayer otherwise.  DynamicLayer.lazy_initialization makes empty tensors and
    DynamicLayer.update is `self.keys = torch.cat([self.keys, key_states], dim=-2)` from
    the first call on: the prefill's keys/values are copied into new tensors too, and every
    decode step allocates the grown tensor before the old one is freed (rebinding).
    DynamicSlidingWindowLayer.update: full = cat([keys, new]); keys = full[:, :, -w + 1:, :]
    (a view: the full tensor's storage stays); returns the full states."""

    def __init__(self, layer_types=None, sliding_window=None):
        self.layer_types = layer_types
        self.sliding_window = sliding_window
        self.keys = []
        self.values = []
        self.cumulative = []

    def _sliding(self, layer_idx):
        return (self.layer_types is not None and self.sliding_window is not None
                and self.layer_types[layer_idx] == "sliding_attention")

    def update_indexer(self, indexer_key_states, layer_idx):  # DynamicIndexedLayer's (dsa_replica.py)
        import dsa_replica
        return dsa_replica.update_indexer(self, indexer_key_states, layer_idx)

    def update(self, key_states, value_states, layer_idx):
        while len(self.keys) <= layer_idx:
            # lazy_initialization: torch.tensor([], dtype, device): no bytes
            self.keys.append(torch.tensor([], dtype=key_states.dtype))
            self.values.append(torch.tensor([], dtype=key_states.dtype))
            self.cumulative.append(0)
        self.cumulative[layer_idx] += key_states.shape[-2]
        full_k = torch.cat([self.keys[layer_idx], key_states], dim=-2)
        if not self._sliding(layer_idx):
            self.keys[layer_idx] = full_k
            self.values[layer_idx] = torch.cat([self.values[layer_idx], value_states], dim=-2)
            return self.keys[layer_idx], self.values[layer_idx]
        full_v = torch.cat([self.values[layer_idx], value_states], dim=-2)
        w = self.sliding_window
        self.keys[layer_idx] = full_k[:, :, -w + 1:, :]
        self.values[layer_idx] = full_v[:, :, -w + 1:, :]
        return full_k, full_v

    def get_seq_length(self, layer_idx=0):
        if len(self.keys) <= layer_idx:
            return 0
        return self.cumulative[layer_idx]

    def reorder_cache(self, beam_idx):
        """Cache.reorder_cache -> CacheLayerMixin.reorder_cache per layer (cache_utils.py @67dd5524):
        if self.get_seq_length() > 0: keys = keys.index_select(0, beam_idx), then values (a sliding
        layer's view copied: the cat's storage freed as the view is rebound)."""
        for i in range(len(self.keys)):
            if self.keys[i].numel():
                self.keys[i] = self.keys[i].index_select(0, beam_idx)
                self.values[i] = self.values[i].index_select(0, beam_idx)


class Attention(nn.Module):
    """L: LlamaAttention (bias = attention_bias); qwen2: Qwen2Attention (q/k/v bias=True,
    o_proj bias=False); M: MixtralAttention (no bias); G: Gemma2Attention (scaling =
    query_pre_attn_scalar**-0.5, softcap, sliding window on even layers)."""

    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        t = cfg.model_type
        self.layer_idx = layer_idx
        self.attn_impl = attn_impl
        self.head_dim = cfg.head_dim or cfg.hidden_size // cfg.num_attention_heads
        self.num_key_value_groups = cfg.num_attention_heads // cfg.num_key_value_heads
        self.scaling = (cfg.query_pre_attn_scalar if t == "gemma2" else self.head_dim) ** -0.5
        self.attention_dropout = cfg.attention_dropout
        qkv_bias = True if t == "qwen2" else (False if t == "mixtral" else cfg.attention_bias)
        if t == "qwen2_moe":  # Qwen2MoeAttention: q/k/v bias=config.qkv_bias (True by default), o_proj bias=False
            qkv_bias = cfg.d.get("qkv_bias", True)
        o_bias = False if t in ("qwen2", "mixtral", "qwen2_moe") else cfg.attention_bias
        # Q3 Qwen3Attention.__init__: q/k/v/o bias=config.attention_bias; q_norm, k_norm =
        # Qwen3RMSNorm(head_dim, eps=config.rms_norm_eps), per head ("unlike olmo, only on the head dim")
        self.qk_norm = t in ("qwen3", "qwen3_moe")  # Q3M: Qwen3MoeAttention's q_norm / k_norm, the same
        H, nh, nkv, hd = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, self.head_dim
        self.q_proj = Linear(H, nh * hd, bias=qkv_bias)
        self.k_proj = Linear(H, nkv * hd, bias=qkv_bias)
        self.v_proj = Linear(H, nkv * hd, bias=qkv_bias)
        self.o_proj = Linear(nh * hd, H, bias=o_bias)
        self.softcap = cfg.attn_logit_softcapping if t == "gemma2" else None
        if self.qk_norm:
            self.q_norm = LlamaRMSNorm(hd, eps=cfg.rms_norm_eps)
            self.k_norm = LlamaRMSNorm(hd, eps=cfg.rms_norm_eps)

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key_value=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        if self.qk_norm:  # Q3 Qwen3Attention.forward: the projections are temporaries inside q_norm(...)
            query_states = self.q_norm(self.q_proj(hidden_states).view(hidden_shape)).transpose(1, 2)
            key_states = self.k_norm(self.k_proj(hidden_states).view(hidden_shape)).transpose(1, 2)
        else:
            query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
            key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        if past_key_value is not None:
            key_states, value_states = past_key_value.update(key_states, value_states, self.layer_idx)
        dropout = 0.0 if not self.training else self.attention_dropout
        if self.attn_impl == "eager":
            attn_output, _ = eager_attention_forward(self, query_states, key_states, value_states,
                                                     attention_mask, self.scaling, dropout,
                                                     softcap=self.softcap)
        else:
            attn_output, _ = sdpa_attention_forward(self, query_states, key_states, value_states,
                                                    attention_mask, dropout, self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class GatedMLP(nn.Module):
    """L: LlamaMLP.forward = down_proj(act_fn(gate_proj(x)) * up_proj(x)); G: Gemma2MLP
    (hidden_activation); qwen2: Qwen2MLP (same)."""

    def __init__(self, cfg, act, inter=None):
        super().__init__()
        H, I = cfg.hidden_size, inter or cfg.intermediate_size
        b = cfg.mlp_bias if cfg.model_type == "llama" else False
        self.gate_proj = Linear(H, I, bias=b)
        self.up_proj = Linear(H, I, bias=b)
        self.down_proj = Linear(I, H, bias=b)
        self.act_fn = act_fn(act)

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class MixtralExpert(nn.Module):
    """M: MixtralBlockSparseTop2MLP: w2(act(w1(x)) * w3(x))."""

    def __init__(self, cfg):
        super().__init__()
        self.w1 = Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.w2 = Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)
        self.w3 = Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.act_fn = act_fn(cfg.hidden_act)

    def forward(self, hidden_states):
        current_hidden_states = self.act_fn(self.w1(hidden_states)) * self.w3(hidden_states)
        return self.w2(current_hidden_states)


class MixtralSparseMoeBlock(nn.Module):
    """M: MixtralSparseMoeBlock.forward: router logits, fp32 softmax, top-k, renormalise,
    one_hot expert mask, loop over experts with torch.where / index_add_."""

    def __init__(self, cfg):
        super().__init__()
        self.hidden_dim = cfg.hidden_size
        self.num_experts = cfg.num_local_experts
        self.top_k = cfg.num_experts_per_tok
        self.gate = Linear(self.hidden_dim, self.num_experts, bias=False)
        self.experts = nn.ModuleList([MixtralExpert(cfg) for _ in range(self.num_experts)])
        self.jitter_noise = cfg.router_jitter_noise

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        if self.training and self.jitter_noise > 0:
            hidden_states *= torch.empty_like(hidden_states).uniform_(1.0 - self.jitter_noise,
                                                                      1.0 + self.jitter_noise)
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)
        final_hidden_states = torch.zeros((batch_size * sequence_length, hidden_dim),
                                          dtype=hidden_states.dtype, device=hidden_states.device)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        for expert_idx in range(self.num_experts):
            expert_layer = self.experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        return final_hidden_states, router_logits


class Qwen3MoeSparseMoeBlock(nn.Module):
    """Q3M: Qwen3MoeSparseMoeBlock.forward (transformers 4.x): router logits, fp32 softmax, top-k, renormalised
    when norm_topk_prob, one_hot expert mask, expert_hit = greater(mask.sum((-1, -2)), 0).nonzero(), the loop over
    the hit experts (Qwen3MoeMLP each: GatedMLP of moe_intermediate_size) with torch.where / index_add_."""

    def __init__(self, cfg):
        super().__init__()
        self.num_experts = cfg.d["num_experts"]
        self.top_k = cfg.num_experts_per_tok
        self.norm_topk_prob = cfg.d.get("norm_topk_prob", False)
        self.gate = Linear(cfg.hidden_size, self.num_experts, bias=False)
        self.experts = nn.ModuleList([GatedMLP(cfg, cfg.hidden_act, cfg.d["moe_intermediate_size"])
                                      for _ in range(self.num_experts)])

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        if self.norm_topk_prob:
            routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)
        final_hidden_states = torch.zeros((batch_size * sequence_length, hidden_dim),
                                          dtype=hidden_states.dtype, device=hidden_states.device)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in expert_hit:
            expert_layer = self.experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        return final_hidden_states, router_logits


class DecoderLayer(nn.Module):
    """L: LlamaDecoderLayer.forward (pre-norm, two residuals); M: MixtralDecoderLayer (MoE
    block; router logits dropped when output_router_logits is False); G: Gemma2DecoderLayer
    (four norms; sliding-window mask made per sliding layer when a mask is given)."""

    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        t = cfg.model_type
        self.gemma = t == "gemma2"
        Norm = Gemma2RMSNorm if t in ("gemma", "gemma2") else LlamaRMSNorm  # G1: GemmaRMSNorm, the same ops
        if t == "phimoe":  # PhimoeDecoderLayer (modeling_phimoe.py @ 0233e509): "Phimoe uses nn.LayerNorm"
            Norm = vctorch._LayerNorm2x
        if t not in ("deepseek_v3", "deepseek_v2", "minimax_m2", "deepseek_v32", "glm_moe_dsa"):
            self.self_attn = Attention(cfg, layer_idx, attn_impl)
        self.residual_multiplier = cfg.d.get("residual_multiplier", 1.0) if t in ("granitemoe", "granitemoeshared") else None
        self.shared_mlp = None
        if t == "deepseek_v2":
            # DeepseekV2DecoderLayer (modeling_deepseek_v2.py @ 0233e509): MLA with the complex rotation,
            # DeepseekV2MLP below first_k_dense_replace (0 by default), DeepseekV2Moe from it on
            # (mla_replica.py); transformers 5's experts only
            import mla_replica
            if cfg.d.get("_experts_implementation") != "grouped_mm":
                raise ValueError("deepseek_v2 is replicated with transformers 5's experts: --experts grouped_mm")
            self.self_attn = mla_replica.DeepseekV2Attention(cfg, layer_idx, attn_impl, Linear, sdpa_attention_forward)
            if layer_idx < cfg.d.get("first_k_dense_replace", 0):
                self.mlp = GatedMLP(cfg, cfg.hidden_act)
            else:
                inter = cfg.d["moe_intermediate_size"] * cfg.d.get("n_shared_experts", 2)
                self.mlp = mla_replica.DeepseekV2Moe(cfg, act_fn(cfg.hidden_act), GatedMLP(cfg, cfg.hidden_act, inter),
                                                     Linear)
        elif t in ("granitemoe", "granitemoeshared"):
            # GraniteMoeDecoderLayer: LlamaAttention scaled by attention_multiplier, GraniteMoeMoE (granitemoe_replica.py)
            import granitemoe_replica
            self.self_attn.scaling = cfg.d.get("attention_multiplier", 1.0)
            self.block_sparse_moe = granitemoe_replica.GraniteMoeMoE(cfg, act_fn(cfg.hidden_act))
            if t == "granitemoeshared" and cfg.d.get("shared_intermediate_size", 0):  # GraniteMoeSharedDecoderLayer
                self.shared_mlp = granitemoe_replica.GraniteMoeSharedMLP(cfg, act_fn(cfg.hidden_act))
        elif t == "phimoe":
            # PhimoeDecoderLayer (transformers 5, modeling_phimoe.py @ 0233e509): LlamaAttention with attention_bias,
            # nn.LayerNorm input / post-attention norms (eps rms_norm_eps), the sparsemixer block over stacked
            # experts (phimoe_replica.py)
            import phimoe_replica
            if cfg.d.get("_experts_implementation") != "grouped_mm":
                raise ValueError("phimoe is replicated with transformers 5's experts: --experts grouped_mm")
            self.mlp = phimoe_replica.PhimoeSparseMoeBlock(cfg, act_fn(cfg.hidden_act))
        elif t == "minimax_m2":
            # MiniMaxM2DecoderLayer: q/k norms over all heads, partial rotary, the sigmoid-routed stacked
            # experts on every layer (minimax_replica.py); transformers 5 only
            import minimax_replica
            if cfg.d.get("_experts_implementation") != "grouped_mm":
                raise ValueError("minimax_m2 is replicated with transformers 5's experts: --experts grouped_mm")
            self.self_attn = minimax_replica.MiniMaxM2Attention(cfg, layer_idx, attn_impl)
            self.mlp = minimax_replica.MiniMaxM2SparseMoeBlock(cfg, act_fn(cfg.hidden_act))
        elif t in ("deepseek_v3", "deepseek_v32", "glm_moe_dsa"):
            # DeepseekV3DecoderLayer: MLA, DeepseekV3MLP below first_k_dense_replace, the MoE from
            # it on (mla_replica.py); transformers 5's experts only. DeepseekV32DecoderLayer: the same with
            # DeepseekV32Attention (dsa_replica.py: MLA with DeepSeek Sparse Attention's indexer)
            import mla_replica
            if cfg.d.get("_experts_implementation") != "grouped_mm":
                raise ValueError("deepseek_v3 is replicated with transformers 5's experts: --experts grouped_mm")
            if t in ("deepseek_v32", "glm_moe_dsa"):  # GlmMoeDsaAttention: dsa_replica.py
                import dsa_replica
                cls = dsa_replica.GlmMoeDsaAttention if t == "glm_moe_dsa" else dsa_replica.DeepseekV32Attention
                self.self_attn = cls(cfg, layer_idx, attn_impl, Linear, sdpa_attention_forward)
            else:
                self.self_attn = mla_replica.DeepseekV3Attention(cfg, layer_idx, attn_impl, Linear, sdpa_attention_forward)
            if layer_idx < cfg.d.get("first_k_dense_replace", 3):
                self.mlp = GatedMLP(cfg, cfg.hidden_act)
            else:
                inter = cfg.d["moe_intermediate_size"] * cfg.d.get("n_shared_experts", 1)
                self.mlp = mla_replica.DeepseekV3MoE(cfg, act_fn(cfg.hidden_act), GatedMLP(cfg, cfg.hidden_act, inter))
        elif t == "mixtral" and cfg.d.get("_experts_implementation") == "grouped_mm":
            # transformers 5: stacked experts through grouped_mm_experts_forward (moe_v5_replica.py)
            import moe_v5_replica
            self.block_sparse_moe = moe_v5_replica.MixtralSparseMoeBlock(cfg, act_fn(cfg.hidden_act))
        elif t == "mixtral":
            self.block_sparse_moe = MixtralSparseMoeBlock(cfg)
        elif t == "qwen3_moe":
            # Q3M Qwen3MoeDecoderLayer: the sparse block unless layer_idx is in mlp_only_layers or
            # (layer_idx + 1) % decoder_sparse_step != 0; transformers 4.x's per-expert modules only
            if cfg.d.get("_experts_implementation") != "per_expert":
                raise ValueError("qwen3_moe is replicated with transformers 4.x's experts: --experts per_expert")
            if layer_idx in cfg.d.get("mlp_only_layers", []) or (layer_idx + 1) % cfg.d.get("decoder_sparse_step", 1):
                self.mlp = GatedMLP(cfg, cfg.hidden_act)
            else:
                self.mlp = Qwen3MoeSparseMoeBlock(cfg)
        elif t == "qwen2_moe":
            # Qwen2MoeDecoderLayer: the sparse block unless layer_idx is in mlp_only_layers or
            # (layer_idx + 1) % decoder_sparse_step != 0; transformers 5's block only (moe_v5_replica.py)
            import moe_v5_replica
            if cfg.d.get("_experts_implementation") != "grouped_mm":
                raise ValueError("qwen2_moe is replicated with transformers 5's experts: --experts grouped_mm")
            if layer_idx in cfg.d.get("mlp_only_layers", []) or (layer_idx + 1) % cfg.d.get("decoder_sparse_step", 1):
                self.mlp = GatedMLP(cfg, cfg.hidden_act)
            else:
                self.mlp = moe_v5_replica.Qwen2MoeSparseMoeBlock(
                    cfg, act_fn(cfg.hidden_act), GatedMLP(cfg, cfg.hidden_act, cfg.shared_expert_intermediate_size), Linear)
        else:
            self.mlp = GatedMLP(cfg, cfg.d.get("hidden_activation", cfg.hidden_act) if t in ("gemma", "gemma2")
                                else cfg.hidden_act)  # G1: GemmaMLP, ACT2FN[config.hidden_activation]
        self.input_layernorm = Norm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.post_attention_layernorm = Norm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        if self.gemma:
            self.pre_feedforward_layernorm = Norm(cfg.hidden_size, eps=cfg.rms_norm_eps)
            self.post_feedforward_layernorm = Norm(cfg.hidden_size, eps=cfg.rms_norm_eps)
            self.is_sliding = not bool(layer_idx % 2)
            self.sliding_window = cfg.sliding_window

    def forward(self, hidden_states, attention_mask, position_embeddings, past_key_value=None,
                cache_len=0, last_cache_position=0):
        if self.gemma:
            return self._gemma_forward(hidden_states, attention_mask, position_embeddings,
                                       past_key_value, cache_len, last_cache_position)
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask, past_key_value)
        if self.residual_multiplier is not None:  # GraniteMoeDecoderLayer.forward
            hidden_states = residual + hidden_states * self.residual_multiplier
            residual = hidden_states
            hidden_states = self.post_attention_layernorm(hidden_states)
            if self.shared_mlp is None:
                hidden_states = self.block_sparse_moe(hidden_states)
            else:  # GraniteMoeSharedDecoderLayer.forward: moe_hidden_states + self.shared_mlp(hidden_states)
                moe_hidden_states = self.block_sparse_moe(hidden_states)
                hidden_states = moe_hidden_states + self.shared_mlp(hidden_states)
                del moe_hidden_states
            return residual + hidden_states * self.residual_multiplier
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        if hasattr(self, "block_sparse_moe"):
            hidden_states, router_logits = self.block_sparse_moe(hidden_states)
        else:
            hidden_states = self.mlp(hidden_states)
            if isinstance(hidden_states, tuple):  # Q3M Qwen3MoeDecoderLayer: "For the MoE layers, we need to unpack"
                hidden_states, _ = hidden_states
        hidden_states = residual + hidden_states
        return hidden_states

    def _gemma_forward(self, hidden_states, attention_mask, position_embeddings, past_key_value,
                       cache_len, last_cache_position):
        # (eager's float mask; sdpa's bool sliding mask comes ready from sliding_replica.py)
        if self.is_sliding and attention_mask is not None and attention_mask.dtype != torch.bool:
            effective_seq_len = max(cache_len, self.sliding_window)
            min_dtype = torch.finfo(attention_mask.dtype).min
            sliding_window_mask = torch.tril(torch.ones_like(attention_mask, dtype=torch.bool),
                                             diagonal=-self.sliding_window)
            attention_mask = torch.where(sliding_window_mask, min_dtype, attention_mask)
            offset = max(0, last_cache_position - effective_seq_len)
            attention_mask = attention_mask[:, :, :, offset: offset + effective_seq_len]
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask, past_key_value)
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.pre_feedforward_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = self.post_feedforward_layernorm(hidden_states)
        hidden_states = residual + hidden_states
        return hidden_states


def causal_mask_4d(sequence_length, target_length, dtype, cache_position, batch_size):
    """L: LlamaModel._prepare_4d_causal_attention_mask_with_cache_position without a 2-D
    attention_mask (training): full(min) -> triu -> *= arange > cache_position -> expand."""
    min_dtype = torch.finfo(dtype).min
    causal_mask = torch.full((sequence_length, target_length), fill_value=min_dtype, dtype=dtype)
    if sequence_length != 1:
        causal_mask = torch.triu(causal_mask, diagonal=1)
    causal_mask *= torch.arange(target_length) > cache_position.reshape(-1, 1)
    return causal_mask[None, None, :, :].expand(batch_size, 1, -1, -1)


# --------------------------------------------------------------------------
# GPT-NeoX: transformers' current GPTNeoXAttention / apply_rotary_pos_emb (v4.48+,
# the attention-interface rewrite).  The stored file read is an older revision (N @006bd23:
# GPTNeoXAttention._attn with a (1, 1, max_pos, max_pos) bool `bias` buffer per layer and
# cos/sin cache buffers); the current structure -- qkv .view(..., -1, 3*head_size)
# .transpose(1, 2).chunk(3, -1), partial rotary inside apply_rotary_pos_emb
# (q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:] ... torch.cat), the shared
# GPTNeoXRotaryEmbedding and eager/sdpa attention functions -- was confirmed from a
# torch.compile trace of modeling_gpt_neox.py (lines 149, 214-215, 280) in the code index.
# --------------------------------------------------------------------------

def neox_apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    rotary_dim = cos.shape[-1]
    q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]
    k_rot, k_pass = k[..., :rotary_dim], k[..., rotary_dim:]
    q_embed = (q_rot * cos) + (rotate_half(q_rot) * sin)
    k_embed = (k_rot * cos) + (rotate_half(k_rot) * sin)
    q_embed = torch.cat([q_embed, q_pass], dim=-1)
    k_embed = torch.cat([k_embed, k_pass], dim=-1)
    return q_embed, k_embed


class NeoXAttention(nn.Module):
    """GPTNeoXAttention: fused query_key_value (bias = attention_bias, default True), dense;
    scaling head_size**-0.5; no GQA (num_key_value_groups absent: sdpa_attention_forward
    repeats nothing)."""

    def __init__(self, cfg, attn_impl):
        super().__init__()
        self.attn_impl = attn_impl
        self.head_size = cfg.hidden_size // cfg.num_attention_heads
        self.scaling = self.head_size ** -0.5
        self.attention_dropout = cfg.attention_dropout
        self.num_key_value_groups = 1
        b = cfg.d.get("attention_bias", True)
        self.query_key_value = Linear(cfg.hidden_size, 3 * cfg.hidden_size, bias=b)
        self.dense = Linear(cfg.hidden_size, cfg.hidden_size, bias=b)

    def forward(self, hidden_states, attention_mask, position_embeddings):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, 3 * self.head_size)
        qkv = self.query_key_value(hidden_states).view(hidden_shape).transpose(1, 2)
        query_states, key_states, value_states = qkv.chunk(3, dim=-1)
        cos, sin = position_embeddings
        query_states, key_states = neox_apply_rotary_pos_emb(query_states, key_states, cos, sin)
        dropout = 0.0 if not self.training else self.attention_dropout
        if self.attn_impl == "eager":
            attn_output, _ = eager_attention_forward(self, query_states, key_states, value_states,
                                                     attention_mask, self.scaling, dropout)
        else:
            attn_output, _ = sdpa_attention_forward(self, query_states, key_states, value_states,
                                                    attention_mask, dropout, self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.dense(attn_output)


class NeoXMLP(nn.Module):
    """N: GPTNeoXMLP: dense_4h_to_h(act(dense_h_to_4h(x)))."""

    def __init__(self, cfg):
        super().__init__()
        self.dense_h_to_4h = Linear(cfg.hidden_size, cfg.intermediate_size)
        self.dense_4h_to_h = Linear(cfg.intermediate_size, cfg.hidden_size)
        self.act = act_fn(cfg.hidden_act)

    def forward(self, hidden_states):
        return self.dense_4h_to_h(self.act(self.dense_h_to_4h(hidden_states)))


class NeoXLayer(nn.Module):
    """N: GPTNeoXLayer.forward: x + attn(ln1(x)) + mlp(ln2(x)) with use_parallel_residual
    (post_attention_dropout / post_mlp_dropout with hidden_dropout = 0 return their input)."""

    def __init__(self, cfg, attn_impl):
        super().__init__()
        self.use_parallel_residual = cfg.use_parallel_residual
        self.input_layernorm = vctorch._LayerNorm2x(cfg.hidden_size, eps=cfg.layer_norm_eps)
        self.post_attention_layernorm = vctorch._LayerNorm2x(cfg.hidden_size, eps=cfg.layer_norm_eps)
        self.hidden_dropout = cfg.hidden_dropout
        self.attention = NeoXAttention(cfg, attn_impl)
        self.mlp = NeoXMLP(cfg)

    def forward(self, hidden_states, attention_mask, position_embeddings):
        attn_output = self.attention(self.input_layernorm(hidden_states), attention_mask, position_embeddings)
        attn_output = vctorch.dropout2x(attn_output, self.hidden_dropout, self.training)
        if self.use_parallel_residual:
            mlp_output = self.mlp(self.post_attention_layernorm(hidden_states))
            mlp_output = vctorch.dropout2x(mlp_output, self.hidden_dropout, self.training)
            hidden_states = mlp_output + attn_output + hidden_states
        else:
            attn_output = attn_output + hidden_states
            mlp_output = self.mlp(self.post_attention_layernorm(attn_output))
            mlp_output = vctorch.dropout2x(mlp_output, self.hidden_dropout, self.training)
            hidden_states = mlp_output + attn_output
        return hidden_states


# --------------------------------------------------------------------------
# causal LM
# --------------------------------------------------------------------------

def for_causal_lm_loss(logits, labels, vocab_size, ignore_index=-100):
    """LU: ForCausalLMLoss (logits.float(), pad labels + shift, view, fixed_cross_entropy with
    reduction 'mean' when num_items_in_batch is None)."""
    logits = logits.float()
    labels = F.pad(labels, (0, 1), value=ignore_index)
    shift_labels = labels[..., 1:].contiguous()
    logits = logits.view(-1, vocab_size)
    shift_labels = shift_labels.view(-1)
    return F.cross_entropy(logits, shift_labels, ignore_index=ignore_index, reduction="mean")


class CausalLM(nn.Module):
    """*ForCausalLM: the decoder model (embed_tokens, layers, final norm, rotary embedding),
    lm_head (tied to embed_tokens when tie_word_embeddings), the loss, and
    gradient checkpointing per decoder layer (self.gradient_checkpointing with
    the non-reentrant torch.utils.checkpoint: transformers' gradient_checkpointing_enable
    passes use_reentrant=False by default in current releases; the harness's port of
    PyTorch 2.x's non-reentrant checkpoint runs it)."""

    def __init__(self, cfg, attn_impl=None):
        super().__init__()
        self.cfg = cfg
        t = cfg.model_type
        if t not in ("llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "gemma", "gemma2", "mixtral", "gpt_neox", "qwen2_moe", "deepseek_v3", "qwen3_next",
                     "qwen3_5", "qwen3_5_moe", "deepseek_v2", "glm4", "olmo3", "starcoder2", "olmo2", "minimax_m2", "phimoe",
                     "granitemoe", "granitemoeshared", "olmoe", "exaone4", "seed_oss", "ernie4_5",
                     "ernie4_5_moe", "cohere", "cohere2", "arcee", "hunyuan_v1_dense", "hunyuan_v1_moe",
                     "nemotron", "apertus", "deepseek_v32", "glm_moe_dsa", "ministral3"):
            raise ValueError("model_type %r not replicated" % t)
        # transformers' default attn_implementation is "sdpa" (PreTrainedModel._autoset_attn_implementation
        # with torch >= 2.1.1). Gemma-2 defaults to "eager" here: transformers 4.45-4.46's default
        # (Gemma2PreTrainedModel._check_and_enable_sdpa swapped sdpa for eager; SDPA cannot apply
        # attn_logit_softcapping and the Gemma-2 model card / HF warn to train it with eager), the one the
        # earlier gemma2 cases ran (compare.py: --transformers 4.46). From 4.47 its default is sdpa (the
        # override is gone): measure_llm.py --attn sdpa (run_suite.py's attn field, llm552 on).
        self.attn_impl = attn_impl or ("eager" if t == "gemma2" else "sdpa")
        self.neox = t == "gpt_neox"
        self.gradient_checkpointing = False
        # every N-th decoder layer checkpointed (counting from 1), 1: all: torchtune's selective layer
        # AC (torchtune/training/activations.py checkpoint_wrapper @ bd2a0fc7: `_count % every_x_layer == 0`)
        self.ckpt_every = 1
        self.ckpt_ops = False  # torchtitan's op-level selective AC in each checkpointed layer (ac_replica.py)
        self.ckpt_save_inputs = False  # the checkpoint's input saved under outer hooks (ac_replica.py)
        # torch.utils.checkpoint's reentrant variant (use_reentrant=True: vctorch._checkpoint_reentrant2x), what
        # transformers 4.x's gradient_checkpointing_enable() runs without gradient_checkpointing_kwargs
        self.ckpt_reentrant = False
        H, V = cfg.hidden_size, cfg.vocab_size
        if self.neox:
            self.embed_in = nn.Embedding(V, H)
            self.emb_dropout_p = cfg.hidden_dropout
            self.layers = nn.ModuleList([NeoXLayer(cfg, self.attn_impl) for _ in range(cfg.num_hidden_layers)])
            self.final_layer_norm = vctorch._LayerNorm2x(H, eps=cfg.layer_norm_eps)
            self.embed_out = Linear(H, V, bias=False)
            # GPTNeoXRotaryEmbedding: the default rope with partial_rotary_factor = rotary_pct,
            # base = rotary_emb_base (GPTNeoXConfig)
            rc = Config(dict(cfg.d, rope_theta=cfg.rotary_emb_base, partial_rotary_factor=cfg.rotary_pct))
            self.rotary_emb = RotaryEmbedding(rc, H // cfg.num_attention_heads)
            return
        self.embed_tokens = nn.Embedding(V, H, cfg.pad_token_id)
        if t == "qwen3_next":  # deltanet_replica.py: Gated DeltaNet and gated attention layers, Qwen3NextRMSNorm
            import deltanet_replica
            Layer, Norm = deltanet_replica.Qwen3NextDecoderLayer, deltanet_replica.Qwen3NextRMSNorm
        elif t in ("qwen3_5", "qwen3_5_moe"):  # deltanet_replica.py: Qwen3_5DecoderLayer (Qwen3_5TextModel's layers)
            import deltanet_replica
            Layer, Norm = deltanet_replica.Qwen3_5DecoderLayer, deltanet_replica.Qwen3NextRMSNorm
        elif t in ("glm4", "olmo3", "starcoder2", "olmo2", "olmoe", "exaone4", "seed_oss", "cohere", "cohere2", "arcee",
                   "hunyuan_v1_dense", "hunyuan_v1_moe", "nemotron", "apertus", "ministral3"):  # near_llama_replica.py (issue 31),
                   # olmoe_replica.py, cohere_replica.py, hunyuan_replica.py
            import near_llama_replica
            Layer, Norm = near_llama_replica.layer_and_norm(t, cfg)
        elif t in ("ernie4_5", "ernie4_5_moe"):  # ernie_replica.py; Ernie4_5Model.norm: LlamaRMSNorm's code
            import ernie_replica
            Layer, Norm = ernie_replica.Ernie4_5DecoderLayer, LlamaRMSNorm
        else:
            Layer, Norm = DecoderLayer, (Gemma2RMSNorm if t in ("gemma", "gemma2") else LlamaRMSNorm)
        self.layers = nn.ModuleList([Layer(cfg, i, self.attn_impl) for i in range(cfg.num_hidden_layers)])
        self.norm = Norm(H, eps=cfg.rms_norm_eps)
        if t == "phimoe":  # PhimoeModel.norm = nn.LayerNorm(hidden_size, eps=rms_norm_eps)
            self.norm = vctorch._LayerNorm2x(H, eps=cfg.rms_norm_eps)
        head_dim = cfg.head_dim or H // cfg.num_attention_heads
        if t in ("deepseek_v3", "deepseek_v2", "deepseek_v32", "glm_moe_dsa"):  # DeepseekV3Config / DeepseekV2Config: head_dim = qk_rope_head_dim
            head_dim = cfg.d["qk_rope_head_dim"]
        if t in ("qwen3_5", "qwen3_5_moe"):
            # Qwen3_5ForConditionalGeneration: model.visual (its weights, frozen; no image is run) beside
            # model.language_model, whose rotary embedding is Qwen3_5TextRotaryEmbedding (mrope)
            import deltanet_replica
            self.rotary_emb = deltanet_replica.Qwen3_5TextRotaryEmbedding(cfg, head_dim)
            self.visual = deltanet_replica.Qwen3_5VisionModel(cfg.d.get("vision_config") or {})
        elif t in ("olmo2", "ernie4_5", "ernie4_5_moe"):
            # Olmo2RotaryEmbedding: float32 cos / sin (near_llama_replica.py); Ernie4_5RotaryEmbedding's statements alike
            import near_llama_replica
            self.rotary_emb = near_llama_replica.Olmo2RotaryEmbedding(cfg, head_dim)
        elif t in ("cohere", "cohere2"):  # CohereRotaryEmbedding: repeat_interleave (cohere_replica.py)
            import cohere_replica
            self.rotary_emb = cohere_replica.CohereRotaryEmbedding(cfg, head_dim)
        elif t in ("hunyuan_v1_dense", "hunyuan_v1_moe"):  # the dynamic-NTK alpha base (hunyuan_replica.py)
            import hunyuan_replica
            self.rotary_emb = hunyuan_replica.HunYuanRotaryEmbedding(cfg, head_dim)
        elif t == "deepseek_v2":  # DeepseekV2RotaryEmbedding: complex64 freqs_cis (mla_replica.py)
            import mla_replica
            self.rotary_emb = mla_replica.DeepseekV2RotaryEmbedding(cfg, head_dim)
        else:
            self.rotary_emb = RotaryEmbedding(cfg, head_dim)
        # PhimoeForCausalLM: lm_head bias=config.lm_head_bias
        # Ernie4_5_MoeForCausalLM: lm_head bias=config.use_bias
        self.lm_head = Linear(H, V, bias=bool(cfg.d.get("lm_head_bias")) if t == "phimoe" else
                              bool(cfg.d.get("use_bias")) if t == "ernie4_5_moe" else False)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.embed_tokens.weight

    def get_input_embeddings(self):
        return self.embed_in if self.neox else self.embed_tokens

    def _layer(self, layer, *args):
        if self.gradient_checkpointing and self.training:
            count = next(i for i, m in enumerate(self.layers) if m is layer) + 1
            if count % self.ckpt_every == 0:
                if self.ckpt_ops:
                    import ac_replica
                    return ac_replica.checkpoint_sac(layer.__call__, *args)
                if self.ckpt_save_inputs:
                    import ac_replica
                    return ac_replica.checkpoint_saving_inputs(layer.__call__, *args)
                if self.ckpt_reentrant:
                    return vctorch._checkpoint_reentrant2x(layer.__call__, *args)
                return vctorch._checkpoint2x(layer.__call__, *args)
        return layer(*args)

    def forward(self, input_ids, labels=None, past_key_values=None, cache_position=None,
                attention_mask=None, logits_to_keep=0, position_ids=None):
        """Returns (loss, logits). attention_mask (2-D) only in generation; position_ids: a packed
        row's (packing_replica.py), given with no attention_mask.
        L: LlamaForCausalLM.forward runs `outputs = self.model(...)` (LlamaModel.forward) and then the head on
        `outputs[0]`: the embedding output (inputs_embeds), the masks, cache_position, position_ids and the
        position embeddings are locals of LlamaModel.forward, freed when it returns, before lm_head and the loss
        (modeling_llama.py @5dd4a63548857797727ae73eeb6a6e886ea02a3e, LlamaModel.forward / LlamaForCausalLM.forward;
        GPTNeoXForCausalLM.forward alike: `outputs = self.gpt_neox(...)`, GPTNeoXModel.forward's inputs_embeds and
        attention_mask its locals, modeling_gpt_neox.py @006bd23dd0ce18d54e1cf260b09b15fa943a731d). _model_forward
        and _neox_model_forward are those inner forwards (issue 26: the replica kept them alive through the head)."""
        if self.neox:
            if position_ids is not None:
                raise ValueError("packing: replicated for the Llama-style models")
            hidden_states = self._neox_model_forward(input_ids)
            return self._head(hidden_states, labels, logits_to_keep, self.embed_out)
        hidden_states = self._model_forward(input_ids, past_key_values, cache_position, attention_mask, position_ids)
        return self._head(hidden_states, labels, logits_to_keep, self.lm_head)

    def _model_forward(self, input_ids, past_key_values, cache_position, attention_mask, position_ids):
        """LlamaModel.forward (and the other families' *Model.forward): the final norm's output."""
        cfg = self.cfg
        inputs_embeds = self.embed_tokens(input_ids)
        past_seen = past_key_values.get_seq_length() if past_key_values is not None else 0
        if cache_position is None:
            cache_position = torch.arange(past_seen, past_seen + inputs_embeds.shape[1])
        packed = position_ids is not None
        if not packed:
            position_ids = cache_position.unsqueeze(0)
            if cfg.model_type in ("qwen3_5", "qwen3_5_moe"):
                # Qwen3_5TextModel.forward: position_ids = cache_position.view(1, 1, -1).expand(3, batch, -1)
                # (Qwen3_5Model.forward passes none without images: compute_3d_position_ids' text-only case)
                position_ids = cache_position.view(1, 1, -1).expand(3, inputs_embeds.shape[0], -1)
        S = inputs_embeds.shape[1]
        causal_mask = None
        if packed:  # masking_utils.create_causal_mask with the packed position_ids (packing_replica.py)
            if self.attn_impl != "sdpa" or past_key_values is not None:
                raise ValueError("packing: replicated for sdpa training")
            import packing_replica
            causal_mask = packing_replica.create_causal_mask(inputs_embeds, position_ids)
        last_cache_position = 0
        if self.attn_impl == "eager":
            if cfg.model_type == "gemma2":
                target = attention_mask.shape[-1] if attention_mask is not None else S
                if attention_mask is not None:
                    last_cache_position = attention_mask.shape[-1]
            else:
                target = attention_mask.shape[-1] if attention_mask is not None else past_seen + S + 1
            causal_mask = causal_mask_4d(S, target, inputs_embeds.dtype, cache_position, inputs_embeds.shape[0])
        # sdpa: LlamaModel._update_causal_mask returns None when AttentionMaskConverter.
        # _ignore_causal_mask_sdpa holds (no mask or an all-ones mask, q_len == kv_len or q_len == 1)
        # sdpa with sliding layers (transformers 5's causal_mask_mapping, sliding_replica.py): the
        # "sliding_attention" entry, a bool mask once the kv length reaches sliding_window (else None)
        lts, sliding_mask = None, None
        if self.attn_impl == "sdpa" and not packed and cfg.model_type in ("mistral", "mixtral", "qwen2", "qwen3", "gemma2",
                                                                          "olmo3", "starcoder2", "exaone4", "cohere2"):
            import sliding_replica
            lts = sliding_replica.layer_types(cfg)
            if "sliding_attention" in lts:
                sliding_mask = sliding_replica.create_sliding_window_causal_mask(
                    inputs_embeds, attention_mask, past_key_values, cfg.sliding_window, lts)
        if cfg.model_type in ("deepseek_v32", "glm_moe_dsa"):  # DeepseekV32Model.forward: allow_is_causal_skip=False (dsa_replica.py)
            import dsa_replica
            causal_mask = dsa_replica.create_causal_mask(inputs_embeds, past_seen)
        if cfg.model_type in ("granitemoe", "granitemoeshared"):  # GraniteMoeModel.forward: inputs_embeds * embedding_multiplier
            inputs_embeds = inputs_embeds * cfg.d.get("embedding_multiplier", 1.0)
        hidden_states = inputs_embeds
        if cfg.model_type == "starcoder2":  # Starcoder2Model.forward: dropout(embedding_dropout) before the rotary
            hidden_states = vctorch.dropout2x(hidden_states, cfg.d.get("embedding_dropout", 0.0), self.training)
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        if cfg.model_type in ("gemma", "gemma2"):  # G, G1: GemmaModel.forward's normalizer
            normalizer = torch.tensor(cfg.hidden_size ** 0.5, dtype=hidden_states.dtype)
            hidden_states = hidden_states * normalizer
        topk_indices = None  # GlmMoeDsaModel.forward: the top-k each layer returns, the next one's prev_topk_indices
        for i, layer in enumerate(self.layers):
            mask = sliding_mask if lts is not None and lts[i] == "sliding_attention" else causal_mask
            if cfg.model_type == "glm_moe_dsa":
                layer.self_attn.prev_topk_indices = topk_indices
            if past_key_values is None:
                hidden_states = self._layer(layer, hidden_states, mask, position_embeddings,
                                            None, cache_position.shape[0], last_cache_position)
            elif cfg.model_type in ("qwen3_next", "qwen3_5", "qwen3_5_moe"):  # the GatedDeltaNet reads cache_position
                hidden_states = layer(hidden_states, mask, position_embeddings, past_key_values,
                                      cache_position.shape[0], last_cache_position, cache_position)
            else:
                hidden_states = layer(hidden_states, mask, position_embeddings, past_key_values,
                                      cache_position.shape[0], last_cache_position)
            if cfg.model_type == "glm_moe_dsa":  # the layer returned: topk_indices rebound to its top-k
                layer.self_attn.prev_topk_indices = None
                topk_indices = layer.self_attn.__dict__.pop("topk_indices")
        return self.norm(hidden_states)

    def _head(self, hidden_states, labels, logits_to_keep, head):
        slice_indices = slice(-logits_to_keep, None)
        if labels is not None and self.training and getattr(self, "loss_impl", "hf") == "liger":
            # Liger-Kernel lce_forward (transformers/model/llama.py; gemma2.py passes
            # final_logit_softcapping): in training with labels the logits are skipped and
            # LigerForCausalLMLoss runs on the kept hidden states and lm_head.weight
            import liger_replica
            fc = self.cfg.final_logit_softcapping if self.cfg.model_type == "gemma2" else None
            loss = liger_replica.liger_for_causal_lm_loss(hidden_states[:, slice_indices, :], head.weight, labels,
                                                          self.cfg.hidden_size, final_logit_softcapping=fc)
            return loss, None
        if labels is not None and getattr(self, "loss_impl", "hf") == "cce":
            # Apple's Cut Cross-Entropy, cce_patch: cut_cross_entropy/transformers/llama.py cce_forward
            # (labels given: apply_lce on the hidden states and lm_head.weight, no logits; gemma2.py
            # passes no softcap)
            import cce_replica
            return cce_replica.cce_loss(hidden_states, head.weight, labels), None
        if getattr(self, "loss_impl", "hf") == "chunked":
            # torchtune: set_num_output_chunks(n) makes unembed return chunked_output(h), a list of
            # [b, s/n, v] logits; CEWithChunkedOutputLoss runs outside the model (chunked_replica.py)
            import chunked_replica
            if self.cfg.model_type == "gemma2":
                raise ValueError("chunked: torchtune's chunked_output has no final soft-capping")
            return None, chunked_replica.chunked_output(head, hidden_states, self.loss_chunks)
        logits = head(hidden_states[:, slice_indices, :])
        if self.cfg.model_type in ("granitemoe", "granitemoeshared"):  # GraniteMoeForCausalLM.forward: logits / config.logits_scaling
            logits = logits / self.cfg.d.get("logits_scaling", 1.0)
        if self.cfg.model_type in ("cohere", "cohere2"):  # CohereForCausalLM.forward: logits * self.logit_scale
            logits = logits * self.cfg.d.get("logit_scale", 0.0625)
        fc = self.cfg.final_logit_softcapping if self.cfg.model_type == "gemma2" else None
        if fc is not None:  # G: Gemma2ForCausalLM.forward
            logits = logits / fc
            logits = torch.tanh(logits)
            logits = logits * fc
        loss = None
        if labels is not None:
            loss = for_causal_lm_loss(logits, labels, self.cfg.vocab_size)
        return loss, logits

    def _neox_model_forward(self, input_ids):
        # GPTNeoXModel.forward (cache_position/position_ids as Llama; emb_dropout; the causal
        # mask as LlamaModel._update_causal_mask; rotary_emb shared; layers; final_layer_norm);
        # GPTNeoXForCausalLM (embed_out, loss_function) runs the head on its output (forward)
        inputs_embeds = self.embed_in(input_ids)
        S = inputs_embeds.shape[1]
        cache_position = torch.arange(0, S)
        position_ids = cache_position.unsqueeze(0)
        causal_mask = None
        if self.attn_impl == "eager":
            causal_mask = causal_mask_4d(S, S + 1, inputs_embeds.dtype, cache_position, inputs_embeds.shape[0])
        hidden_states = vctorch.dropout2x(inputs_embeds, self.emb_dropout_p, self.training)
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for layer in self.layers:
            hidden_states = self._layer(layer, hidden_states, causal_mask, position_embeddings)
        return self.final_layer_norm(hidden_states)


# --------------------------------------------------------------------------
# LoRA (PEFT)
# --------------------------------------------------------------------------

class LoraLinear(nn.Module):
    """peft tuners/lora/layer.py Linear.forward (vanilla LoRA, one adapter, not merged):
        result = base_layer(x); x = _cast_input_dtype(x, lora_A.weight.dtype)
        result = result + lora_B(lora_A(dropout(x))) * scaling; result.to(torch_result_dtype)
    LoraLayer.update_layer: lora_dropout = nn.Dropout(p) if p > 0 else nn.Identity();
    lora_A = nn.Linear(in, r, bias=False), lora_B = nn.Linear(r, out, bias=False);
    scaling = lora_alpha / r.  The base layer is frozen."""

    def __init__(self, base_layer, r, lora_alpha, lora_dropout, adapter_dtype):
        super().__init__()
        self.base_layer = base_layer
        for p in base_layer.parameters():
            p.requires_grad_(False)
        self.lora_dropout_p = lora_dropout
        self.lora_A = Linear(base_layer.in_features, r, bias=False).to(adapter_dtype)
        self.lora_B = Linear(r, base_layer.out_features, bias=False).to(adapter_dtype)
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = lora_alpha / r

    @property
    def in_features(self):
        return self.base_layer.in_features

    @property
    def out_features(self):
        return self.base_layer.out_features

    def forward(self, x):
        result = self.base_layer(x)
        torch_result_dtype = result.dtype
        if x.dtype != self.lora_A.weight.dtype:
            x = x.to(dtype=self.lora_A.weight.dtype)
        # nn.Dropout(p) in training = F.dropout: the harness's replica of 2.x CUDA's fused dropout
        d = vctorch.dropout2x(x, self.lora_dropout_p, self.training) if self.lora_dropout_p > 0 else x
        result = result + self.lora_B(self.lora_A(d)) * self.scaling
        result = result.to(torch_result_dtype)
        return result


def lora_dtype(model):
    """The adapters' dtype (the first LoraLinear's lora_A)."""
    return next(m.lora_A.weight.dtype for m in model.modules() if isinstance(m, LoraLinear))


def apply_lora(model, r=8, lora_alpha=16, lora_dropout=0.0, targets=("q_proj", "v_proj"),
               autocast_adapter_dtype=True, adapter_dtype=None, input_require_grads=True):
    """get_peft_model(model, LoraConfig(r, lora_alpha, lora_dropout, target_modules)):
    every parameter frozen (BaseTuner._mark_only_adapters_as_trainable with bias='none'),
    the target Linears wrapped; adapters created in fp32 and, with autocast_adapter_dtype
    (PEFT's default), fp16/bf16 adapters upcast to fp32 (cast_adapter_dtype): so with a
    bf16 base the adapters are fp32 and Linear.forward casts the adapter input to fp32.
    If gradient checkpointing is on, PeftModel.__init__ calls enable_input_require_grads
    (a forward hook: embedding output .requires_grad_(True)).
    autocast_adapter_dtype=False: the adapters keep the base weight's dtype
    (_move_adapter_to_device_of_base_layer, tuners_utils.py), as torchtune's LoRALinear
    built under set_default_dtype(dtype) does; adapter_dtype: that dtype whatever the
    base's (the model cast to it after get_peft_model's cast). input_require_grads=False:
    no such hook, as torchtune's LoRA recipes (which never call it) run."""
    for p in model.parameters():
        p.requires_grad_(False)
    base_dtype = next(model.parameters()).dtype
    if adapter_dtype is None:
        adapter_dtype = torch.float32 if (autocast_adapter_dtype or base_dtype == torch.float32) else base_dtype
    n = 0
    for name, mod in list(model.named_modules()):
        for cname, child in list(mod.named_children()):
            # PEFT's check_target_module_exists: the key equal to a target or ending with "." + it (a dotted
            # target, "self_attn.q_proj", names one module's child only)
            full = name + "." + cname if name else cname
            hit = cname in targets or any("." in t and (full == t or full.endswith("." + t)) for t in targets)
            if hit and isinstance(child, nn.Linear):
                setattr(mod, cname, LoraLinear(child, r, lora_alpha, lora_dropout, adapter_dtype))
                n += 1
    if n == 0:
        raise ValueError("no LoRA target found")
    if model.gradient_checkpointing and input_require_grads:
        model.get_input_embeddings().register_forward_hook(lambda m, i, o: o.requires_grad_(True))
    return model


def frozen_image_parts(model, *parts):
    """The tail of an image model's build whose embed_tokens wrapper runs the image part (idefics3_replica.py,
    mistral3_replica.py build_image): the parts (the tower, the projector) frozen, requires_grad_(False) on each
    parameter; the model's forward wrapped to drop embed_tokens.keep (the image part's locals, which the
    *Model.forward holds until it returns) as it returns. Returns the model."""
    for part in parts:
        for p in part.parameters():
            p.requires_grad_(False)
    inner = model.forward

    def forward(*args, **kwargs):
        try:
            return inner(*args, **kwargs)
        finally:
            model.embed_tokens.keep = None

    model.forward = forward
    return model
