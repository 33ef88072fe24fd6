"""gpt-oss and Gemma 3 as transformers 5 runs them, for torch 1.13 on CPU (measure_llm.py on a
config whose model_type is gpt_oss or gemma3_text), and their exact parameter counts
(`python3 gptoss_replica.py --params`, no torch needed).

Written from huggingface/transformers (files are stored at different commits; the one read is
named):
  models/gpt_oss/modular_gpt_oss.py (transformers 5: GptOssExperts under
      @use_experts_implementation(is_transposed=True, has_bias=True) with _apply_gate), read from
      the code index's copy of that revision; configuration_gpt_oss.py @02b8f42b (GptOssConfig:
      layer_types "sliding_attention" if (i + 1) % 2 else "full_attention", swiglu_alpha 1.702,
      swiglu_limit 7.0);
    GptOssRMSNorm.forward ((weight * h).to(input_dtype), the weight kept in float32 by
      GptOssPreTrainedModel._keep_in_fp32_modules = [post_attention_layernorm, input_layernorm, norm]),
    GptOssTopKRouter.forward (F.linear with bias, topk on the logits, softmax(dtype=values.dtype)),
    GptOssExperts._apply_gate (gate_up[..., ::2], [..., 1::2], clamp, gate * sigmoid(gate * alpha),
      (up + 1) * glu), GptOssMLP.forward,
    GptOssRotaryEmbedding.forward (emb = freqs: cos/sin of head_dim / 2), _apply_rotary_emb (chunk),
    eager_attention_forward (sinks joined by cat, minus the max, softmax in the logits' dtype,
      probs[..., :-1], dropout, .to(value_states.dtype)), GptOssAttention (q/k/v/o with
      attention_bias; eager only: _supports_sdpa = False), GptOssDecoderLayer (LlamaDecoderLayer's);
  integrations/moe.py @8b584a67 grouped_mm_experts_forward with has_bias (the biases gathered by
      expert_ids_g before the offsets, added to each _grouped_mm output) and is_transposed (no
      transpose of the weights); torch._grouped_mm as moe_v5_replica.GroupedMM makes it;
  masking_utils.py (transformers 5) create_causal_mask / create_sliding_window_causal_mask for
      eager: the boolean [B, 1, L, S] mask (causal, and kv_idx > q_idx - sliding_window) turned into
      torch.where(mask, 0.0, finfo.min) of the model's dtype, one per layer type per forward;
  models/gemma3/modeling_gemma3.py: Gemma3TextScaledWordEmbedding (embedding * embed_scale),
      Gemma3RMSNorm (Gemma 2's), Gemma3Attention (q_norm / k_norm over head_dim after the transpose,
      scaling query_pre_attn_scalar**-0.5, sdpa), Gemma3DecoderLayer (Gemma 2's four norms), the
      two rotary pairs (rope_theta for full layers, rope_local_base_freq for sliding ones);
      configuration_gemma3.py Gemma3TextConfig (layer_types from sliding_window_pattern 6).
Gemma 3 under sdpa: within sliding_window transformers' sdpa path runs is_causal without a mask
(sdpa_mask's allow_is_causal_skip); from a kv length of sliding_window on, the sliding layers get
create_sliding_window_causal_mask's bool mask (sliding_replica.py); generate runs past the window, where
DynamicSlidingWindowLayer keeps window - 1 tokens (reference.DynamicCache).
"""

import json
import sys



# ---------------------------------------------------------------------------------------------
# exact parameter counts from the module definitions (no torch): every parameter's shape
# ---------------------------------------------------------------------------------------------

def gpt_oss_params(c):
    H, V, N = c["hidden_size"], c["vocab_size"], c["num_hidden_layers"]
    nh, nkv, hd = c["num_attention_heads"], c["num_key_value_heads"], c.get("head_dim", 64)
    E, I = c["num_local_experts"], c["intermediate_size"]
    b = 1 if c.get("attention_bias", True) else 0
    attn = (H * nh * hd + b * nh * hd) + 2 * (H * nkv * hd + b * nkv * hd) + (nh * hd * H + b * H) + nh  # + sinks
    router = E * H + E                                      # GptOssTopKRouter weight, bias
    experts = E * H * 2 * I + E * 2 * I + E * I * H + E * H  # gate_up_proj (+bias), down_proj (+bias)
    layer = attn + router + experts + 2 * H                 # input_layernorm, post_attention_layernorm
    head = 0 if c.get("tie_word_embeddings", False) else V * H
    return V * H + N * layer + H + head, N * experts


def gemma3_text_params(c):
    d = {"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
         "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256}  # Gemma3TextConfig defaults
    d.update(c)
    H, V, N, I = d["hidden_size"], d["vocab_size"], d["num_hidden_layers"], d["intermediate_size"]
    nh, nkv, hd = d["num_attention_heads"], d["num_key_value_heads"], d["head_dim"]
    attn = H * nh * hd + 2 * H * nkv * hd + nh * hd * H + 2 * hd  # q, k, v, o, q_norm, k_norm
    layer = attn + 3 * H * I + 4 * H                            # Gemma3MLP, four Gemma3RMSNorms
    return V * H + N * layer + H                                # tied lm_head


def siglip_vision_params(v):
    """SiglipVisionModel (vision_use_head False): patch Conv2d, position embedding, encoder, post norm."""
    H, I, N, p, img = v["hidden_size"], v["intermediate_size"], v["num_hidden_layers"], v["patch_size"], v["image_size"]
    layer = 2 * H + 4 * (H * H + H) + 2 * H + (H * I + I) + (I * H + H)
    return 3 * p * p * H + H + (img // p) ** 2 * H + N * layer + 2 * H


def check_params():
    import os
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "data", "hf")
    ok = True

    def expect(name, got, want):
        nonlocal ok
        print("%-44s %16s %16s %s" % (name, "{:,}".format(got), "{:,}".format(want), "ok" if got == want else "DIFFERS"))
        ok &= got == want

    for f, want in (("gpt-oss-20b.json", 20914757184), ("gpt-oss-120b.json", 116829156672)):
        c = json.load(open(os.path.join(here, f)))
        total, experts = gpt_oss_params(c)
        expect(f + " (OpenAI model card)", total, want)
        if f == "gpt-oss-20b.json":  # MXFP4: 0.5 byte + 1/32 byte per expert weight, bf16 otherwise
            wexp = experts - c["num_hidden_layers"] * c["num_local_experts"] * (2 * c["intermediate_size"] + c["hidden_size"])
            expect("  mxfp4 bytes (experts' weights packed)", wexp // 2 + wexp // 32 + (total - wexp) * 2, 13761264768)
    c = json.load(open(os.path.join(here, "gemma-3-1b-it.json")))
    expect("gemma-3-1b-it.json (Hub: 999,885,952)", gemma3_text_params(c), 999885952)
    for f, text, total in (("gemma-3-4b-it.json", 3880263168, 4300079472), ("gemma-3-27b-it.json", 27009346304, 27432406640)):
        c = json.load(open(os.path.join(here, f)))
        t = gemma3_text_params(c["text_config"])
        expect(f + " text", t, text)
        vis = siglip_vision_params(c["vision_config"])
        # Gemma3MultiModalProjector: mm_input_projection_weight [vision H, text H], mm_soft_emb_norm [vision H]
        proj = c["vision_config"]["hidden_size"] * c["text_config"]["hidden_size"] + c["vision_config"]["hidden_size"]
        expect(f + " + SigLIP + projector (Hub)", t + vis + proj, total)
    return 0 if ok else 1


if __name__ == "__main__" and "--params" in sys.argv:
    sys.exit(check_params())

import torch  # noqa: E402 (the counts above need no torch)
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import reference as R  # noqa: E402
import vctorch  # noqa: E402
from moe_v5_replica import GroupedMM  # noqa: E402


# ---------------------------------------------------------------------------------------------
# gpt-oss
# ---------------------------------------------------------------------------------------------

class GptOssRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = vctorch.mean2x(hidden_states.pow(2), -1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return (self.weight * hidden_states).to(input_dtype)


def _grouped_mm(x, w, offs):
    return GroupedMM.apply(x.to(w.dtype), w, offs)


class GptOssExperts(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.intermediate_size = cfg.intermediate_size
        self.num_experts = cfg.num_local_experts
        self.hidden_size = cfg.hidden_size
        E, H, I = self.num_experts, self.hidden_size, self.intermediate_size
        self.gate_up_proj = nn.Parameter(torch.empty(E, H, 2 * I))
        self.gate_up_proj_bias = nn.Parameter(torch.zeros(E, 2 * I))
        self.down_proj = nn.Parameter(torch.empty(E, I, H))
        self.down_proj_bias = nn.Parameter(torch.zeros(E, H))
        nn.init.normal_(self.gate_up_proj, std=0.02)
        nn.init.normal_(self.down_proj, std=0.02)
        self.alpha = cfg.d.get("swiglu_alpha", 1.702)
        self.limit = cfg.d.get("swiglu_limit", 7.0)

    def _apply_gate(self, gate_up):
        gate, up = gate_up[..., ::2], gate_up[..., 1::2]
        gate = gate.clamp(min=None, max=self.limit)
        up = up.clamp(min=-self.limit, max=self.limit)
        glu = gate * torch.sigmoid(gate * self.alpha)
        gated_output = (up + 1) * glu
        return gated_output

    def forward(self, hidden_states, top_k_index, top_k_weights):
        """grouped_mm_experts_forward, has_bias True, is_transposed True."""
        num_top_k = top_k_index.size(-1)
        num_tokens = hidden_states.size(0)
        hidden_dim = hidden_states.size(-1)
        token_idx = torch.arange(num_tokens).unsqueeze(1).expand(-1, num_top_k).reshape(-1)
        sample_weights = top_k_weights.reshape(-1)
        expert_ids = top_k_index.reshape(-1)
        selected_hidden_states = hidden_states[token_idx]
        perm = torch.argsort(expert_ids)
        inv_perm = torch.argsort(perm)
        expert_ids_g = expert_ids[perm]
        sample_weights_g = sample_weights[perm]
        selected_hidden_states_g = selected_hidden_states[perm]
        selected_gate_up = self.gate_up_proj
        selected_down = self.down_proj
        selected_gate_up_bias = self.gate_up_proj_bias[expert_ids_g]
        selected_down_bias = self.down_proj_bias[expert_ids_g]
        histc_input = expert_ids_g.float()  # CUDA: .int(), the same bytes
        num_tokens_per_expert = torch.histc(histc_input, bins=self.num_experts, min=0, max=self.num_experts - 1)
        offsets = torch.cumsum(num_tokens_per_expert, dim=0, dtype=torch.int32)
        # _grouped_linear(..., bias, is_transposed=True): out = _grouped_mm(input, weight); out = out + bias
        gate_up_out = _grouped_mm(selected_hidden_states_g, selected_gate_up, offsets)
        gate_up_out = gate_up_out + selected_gate_up_bias
        gated_out = self._apply_gate(gate_up_out)
        out_per_sample_g = _grouped_mm(gated_out, selected_down, offsets)
        out_per_sample_g = out_per_sample_g + selected_down_bias
        out_per_sample_g = out_per_sample_g * sample_weights_g.unsqueeze(-1)
        out_per_sample = out_per_sample_g[inv_perm]
        final_hidden_states = out_per_sample.view(num_tokens, num_top_k, hidden_dim).sum(dim=1)
        return final_hidden_states.to(hidden_states.dtype)


class GptOssTopKRouter(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.top_k = cfg.num_experts_per_tok
        self.num_experts = cfg.num_local_experts
        self.hidden_dim = cfg.hidden_size
        self.weight = nn.Parameter(torch.empty(self.num_experts, self.hidden_dim))
        self.bias = nn.Parameter(torch.empty(self.num_experts))
        nn.init.normal_(self.weight, std=0.02)
        nn.init.normal_(self.bias, std=0.02)

    def forward(self, hidden_states):
        router_logits = vctorch.linear2x(hidden_states, self.weight, self.bias)
        router_top_value, router_indices = torch.topk(router_logits, self.top_k, dim=-1)
        router_scores = torch.nn.functional.softmax(router_top_value, dim=1, dtype=router_top_value.dtype)
        return router_logits, router_scores, router_indices


class GptOssMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.router = GptOssTopKRouter(cfg)
        self.experts = GptOssExperts(cfg)

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.reshape(-1, hidden_dim)
        _, router_scores, router_indices = self.router(hidden_states)
        hidden_states = self.experts(hidden_states, router_indices, router_scores)
        hidden_states = hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        return hidden_states, router_scores


class GptOssRotaryEmbedding(nn.Module):
    def __init__(self, cfg, head_dim):
        super().__init__()
        inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
        self.attention_scaling = 1.0  # yarn's differs; the same tensors
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = freqs
        cos = emb.cos() * self.attention_scaling
        sin = emb.sin() * self.attention_scaling
        return cos.to(x.dtype), sin.to(x.dtype)


def _apply_rotary_emb(x, cos, sin):
    first_half, second_half = torch.chunk(x, 2, dim=-1)
    first_ = first_half * cos - second_half * sin
    second_ = second_half * cos + first_half * sin
    return torch.cat((first_, second_), dim=-1)


def gptoss_apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return _apply_rotary_emb(q, cos, sin), _apply_rotary_emb(k, cos, sin)


def sinks_eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0):
    key_states = R.repeat_kv(key, module.num_key_value_groups)
    value_states = R.repeat_kv(value, module.num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    sinks = module.sinks.reshape(1, -1, 1, 1).expand(query.shape[0], -1, query.shape[-2], -1)
    combined_logits = torch.cat([attn_weights, sinks], dim=-1)
    combined_logits = combined_logits - combined_logits.max(dim=-1, keepdim=True).values
    probs = F.softmax(combined_logits, dim=-1, dtype=combined_logits.dtype)
    scores = probs[..., :-1]
    attn_weights = vctorch.dropout2x(scores, dropout, module.training).to(value_states.dtype)
    attn_output = torch.matmul(attn_weights, value_states)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


class GptOssAttention(nn.Module):
    def __init__(self, cfg, layer_idx):
        super().__init__()
        self.layer_idx = layer_idx
        self.head_dim = cfg.head_dim
        self.num_key_value_groups = cfg.num_attention_heads // cfg.num_key_value_heads
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = cfg.attention_dropout
        H, nh, nkv, hd, b = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim, cfg.attention_bias
        self.q_proj = R.Linear(H, nh * hd, bias=b)
        self.k_proj = R.Linear(H, nkv * hd, bias=b)
        self.v_proj = R.Linear(H, nkv * hd, bias=b)
        self.o_proj = R.Linear(nh * hd, H, bias=b)
        self.sinks = nn.Parameter(torch.empty(nh))
        nn.init.normal_(self.sinks, std=0.02)

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key_value=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = gptoss_apply_rotary_pos_emb(query_states, key_states, cos, sin)
        if past_key_value is not None:
            key_states, value_states = past_key_value.update(key_states, value_states, self.layer_idx)
        attn_output, _ = sinks_eager_attention_forward(self, query_states, key_states, value_states, attention_mask,
                                                       self.scaling, 0.0 if not self.training else self.attention_dropout)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class GptOssDecoderLayer(nn.Module):
    def __init__(self, cfg, layer_idx):
        super().__init__()
        self.self_attn = GptOssAttention(cfg, layer_idx)
        self.mlp = GptOssMLP(cfg)
        self.input_layernorm = GptOssRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.post_attention_layernorm = GptOssRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.attention_type = cfg.layer_types[layer_idx]

    def forward(self, hidden_states, attention_mask, position_embeddings, past_key_value=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask, past_key_value)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states, _ = self.mlp(hidden_states)
        hidden_states = residual + hidden_states
        return hidden_states


def eager_mask(batch_size, cache_position, kv_length, dtype, sliding_window=None, kv_offset=0):
    """masking_utils (transformers 5) for eager: causal (kv_idx <= q_idx), and with a window
    kv_idx > q_idx - sliding_window; a bool [B, 1, L, S] (expanded) made into
    torch.where(mask, 0.0, min) of the model's dtype. S and the first kv index: the layer's
    get_mask_sizes (DynamicSlidingWindowLayer: kv_offset = max(cumulative - window + 1, 0),
    kv_length = window - 1 + L once full, else cumulative + L)."""
    kv_arange = torch.arange(kv_offset, kv_offset + kv_length)
    allowed = kv_arange[None, :] <= cache_position[:, None]
    if sliding_window is not None:
        allowed = allowed & (kv_arange[None, :] > cache_position[:, None] - sliding_window)
    mask = allowed[None, None, :, :].expand(batch_size, -1, -1, -1)
    return torch.where(mask, torch.tensor(0.0, dtype=dtype), torch.finfo(dtype).min)


# ---------------------------------------------------------------------------------------------
# Gemma 3 (text)
# ---------------------------------------------------------------------------------------------

class Gemma3Attention(nn.Module):
    def __init__(self, cfg, layer_idx):
        super().__init__()
        self.layer_idx = layer_idx
        self.head_dim = cfg.head_dim
        self.num_key_value_groups = cfg.num_attention_heads // cfg.num_key_value_heads
        self.scaling = cfg.query_pre_attn_scalar ** -0.5
        self.attention_dropout = cfg.attention_dropout
        H, nh, nkv, hd, b = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim, cfg.attention_bias
        self.q_proj = R.Linear(H, nh * hd, bias=b)
        self.k_proj = R.Linear(H, nkv * hd, bias=b)
        self.v_proj = R.Linear(H, nkv * hd, bias=b)
        self.o_proj = R.Linear(nh * hd, H, bias=b)
        self.q_norm = R.Gemma2RMSNorm(hd, eps=cfg.rms_norm_eps)  # Gemma3RMSNorm: the same code
        self.k_norm = R.Gemma2RMSNorm(hd, eps=cfg.rms_norm_eps)

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
        attn_output, _ = R.sdpa_attention_forward(self, query_states, key_states, value_states, attention_mask,
                                                  0.0 if not self.training else self.attention_dropout, self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class Gemma3DecoderLayer(nn.Module):
    def __init__(self, cfg, layer_idx):
        super().__init__()
        self.self_attn = Gemma3Attention(cfg, layer_idx)
        self.mlp = R.GatedMLP(cfg, cfg.d.get("hidden_activation", "gelu_pytorch_tanh"))
        Norm = R.Gemma2RMSNorm
        self.input_layernorm = Norm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.post_attention_layernorm = Norm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.pre_feedforward_layernorm = Norm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.post_feedforward_layernorm = Norm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.attention_type = cfg.layer_types[layer_idx]

    def forward(self, hidden_states, attention_mask, position_embeddings, past_key_value=None):
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


# ---------------------------------------------------------------------------------------------
# the causal LM around either
# ---------------------------------------------------------------------------------------------

class CausalLM(R.CausalLM):
    """GptOssForCausalLM / Gemma3ForCausalLM: embed_tokens, layers, norm, lm_head; reference.CausalLM's
    _head (loss) and _layer (gradient checkpointing)."""

    def __init__(self, cfg, attn_impl=None):
        nn.Module.__init__(self)
        self.cfg = cfg
        t = cfg.model_type
        self.oss = t == "gpt_oss"
        if t not in ("gpt_oss", "gemma3_text"):
            raise ValueError("model_type %r not replicated here" % t)
        if self.oss and attn_impl not in (None, "eager"):
            raise ValueError("gpt_oss runs eager attention only (_supports_sdpa = False)")
        if not self.oss and attn_impl not in (None, "sdpa"):
            raise ValueError("gemma3 is replicated with transformers' default sdpa")
        self.attn_impl = "eager" if self.oss else "sdpa"
        self.neox = False
        self.gradient_checkpointing = False
        self.ckpt_reentrant = False  # reference.CausalLM._layer reads it (--ckpt-kind reentrant)
        H, V = cfg.hidden_size, cfg.vocab_size
        self.embed_tokens = nn.Embedding(V, H, cfg.pad_token_id)
        if self.oss:
            self.layers = nn.ModuleList([GptOssDecoderLayer(cfg, i) for i in range(cfg.num_hidden_layers)])
            self.norm = GptOssRMSNorm(H, eps=cfg.rms_norm_eps)
            self.rotary_emb = GptOssRotaryEmbedding(cfg, cfg.head_dim)
        else:
            self.layers = nn.ModuleList([Gemma3DecoderLayer(cfg, i) for i in range(cfg.num_hidden_layers)])
            self.norm = R.Gemma2RMSNorm(H, eps=cfg.rms_norm_eps)
            self.rotary_emb = R.RotaryEmbedding(cfg, cfg.head_dim)
            local = R.Config(dict(cfg.d, rope_theta=cfg.d.get("rope_local_base_freq", 10000.0), rope_scaling=None))
            self.rotary_emb_local = R.RotaryEmbedding(local, cfg.head_dim)
            self.embed_scale = torch.tensor(H ** 0.5)  # Gemma3TextScaledWordEmbedding's buffer (non-persistent)
        self.lm_head = R.Linear(H, V, bias=False)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.embed_tokens.weight

    def _apply(self, fn):
        # GptOssPreTrainedModel._keep_in_fp32_modules: the norms stay float32 when the model is loaded in bf16
        super()._apply(fn)
        if self.oss:
            for m in self.modules():
                if isinstance(m, GptOssRMSNorm):
                    m.weight.data = m.weight.data.float()
        return self

    def forward(self, input_ids, labels=None, past_key_values=None, cache_position=None,
                attention_mask=None, logits_to_keep=0):
        """GptOssForCausalLM.forward / Gemma3ForCausalLM.forward: `outputs = self.model(...)` (GptOssModel.forward /
        Gemma3TextModel.forward), then lm_head and the loss on `outputs.last_hidden_state`: the inner forward's locals
        (inputs_embeds, the mask mapping, cache_position, position_ids, the position embeddings) are freed when it
        returns, before the head (modeling_gpt_oss.py @00d4b3d2142cb4ced2f51b90614b5d26bc045015,
        GptOssForCausalLM.forward; modeling_gemma3.py @0018aa647bb13801f061e2d1027c326f531b59fb,
        Gemma3ForCausalLM.forward; issue 26: the replica kept them alive through the head and the loss)."""
        hidden_states = self._model_forward(input_ids, past_key_values, cache_position, attention_mask)
        return self._head(hidden_states, labels, logits_to_keep, self.lm_head)

    def _model_forward(self, input_ids, past_key_values, cache_position, attention_mask):
        """GptOssModel.forward / Gemma3TextModel.forward: the final norm's output."""
        cfg = self.cfg
        inputs_embeds = self.embed_tokens(input_ids)
        if not self.oss:  # Gemma3TextScaledWordEmbedding.forward
            inputs_embeds = inputs_embeds * self.embed_scale.to(self.embed_tokens.weight.dtype)
        past_seen = past_key_values.get_seq_length() if past_key_values is not None else 0
        if cache_position is None:
            cache_position = torch.arange(past_seen, past_seen + inputs_embeds.shape[1])
        position_ids = cache_position.unsqueeze(0)
        B = inputs_embeds.shape[0]
        kv_len = attention_mask.shape[-1] if attention_mask is not None else past_seen + inputs_embeds.shape[1]
        hidden_states = inputs_embeds
        if self.oss:
            w, L = cfg.sliding_window, inputs_embeds.shape[1]
            s_len = w - 1 + L if past_seen >= w else past_seen + L
            masks = {"full_attention": eager_mask(B, cache_position, kv_len, inputs_embeds.dtype),
                     "sliding_attention": eager_mask(B, cache_position, s_len, inputs_embeds.dtype, w,
                                                     max(past_seen - w + 1, 0))}
            pe = self.rotary_emb(hidden_states, position_ids)
            pes = {"full_attention": pe, "sliding_attention": pe}
        else:
            # sdpa: the full layers' mask is None (no padding, kv_length == q_length or q_length 1); the sliding
            # layers' a bool mask once the kv length reaches sliding_window (sliding_replica.py), else None
            import sliding_replica
            masks = {"full_attention": None,
                     "sliding_attention": sliding_replica.create_sliding_window_causal_mask(
                         inputs_embeds, attention_mask, past_key_values, cfg.sliding_window, list(cfg.layer_types))}
            pes = {"full_attention": self.rotary_emb(hidden_states, position_ids),
                   "sliding_attention": self.rotary_emb_local(hidden_states, position_ids)}
        for layer in self.layers:
            a = (hidden_states, masks[layer.attention_type], pes[layer.attention_type])
            if past_key_values is None:
                hidden_states = self._layer(layer, *a)
            else:
                hidden_states = layer(*a, past_key_values)
        return self.norm(hidden_states)
