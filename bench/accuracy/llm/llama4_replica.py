"""llama4_replica.py -- Llama 4's language model (Llama4ForCausalLM, model_type llama4_text) as
transformers runs it, for torch 1.13 on CPU (measure_llm.py on a config whose model_type is
llama4_text). Issue 31: the truth for vramcalc's llama4 rows.

Written from huggingface/transformers models/llama4/modeling_llama4.py @
000c33fdfde12e1ffafbfcdb3c926df5727a00b6, statement by statement; nothing from vramcalc's engine
was read:
  Llama4TextExperts.forward: hidden_states.view(E, -1, H); gate_up = torch.bmm(hidden_states,
      gate_up_proj); gate, up = gate_up.chunk(2, dim=-1); torch.bmm(up * act_fn(gate), down_proj);
      view(-1, H)
  Llama4TextMLP.forward: down_proj(activation_fn(gate_proj(x)) * up_proj(x))
  Llama4TextL2Norm.forward: _norm(x.float()).type_as(x), _norm = x * rsqrt(x.pow(2).mean(-1,
      keepdim=True) + eps) (no weight)
  Llama4TextRMSNorm.forward: output = _norm(x.float()).type_as(x); output * weight
  Llama4Router.forward: router_logits = nn.Linear's forward; topk(router_logits, top_k, dim=1);
      full_like(router_logits, -inf).scatter_(1, router_indices, router_top_value);
      sigmoid(router_scores.float()).to(router_scores.dtype); returns (router_scores, router_logits)
  Llama4TextMoe.forward: reshape(-1, H); router; routed_in = hidden_states.repeat(E, 1);
      routed_in * router_scores.transpose(0, 1).reshape(-1, 1); experts; out = shared_expert(x);
      out.add_(routed_out.reshape(E, -1, H).sum(dim=0)); returns (out, router_logits)
  Llama4TextRotaryEmbedding.forward (@torch.no_grad): freqs = (inv_freq_expanded @
      position_ids_expanded).transpose(1, 2); freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
      * attention_scaling (1.0 for the default rope)
  apply_rotary_emb: view_as_complex(xq.float().reshape(*shape[:-1], -1, 2)), xk likewise,
      view_as_real(xq_ * freqs_cis[:, :, None, :]).flatten(3), .type_as(xq)
  Llama4TextAttention.forward: q_proj(x).view(hidden_shape), k_proj(x).view(..., -1, head_dim),
      v_proj(x).view(hidden_shape).transpose(1, 2); use_rope: apply_rotary_emb; qk_norm (rope layers
      with use_qk_norm); attn_temperature_tuning and not use_rope: attn_scales = log1p(floor(
      (cache_position.float() + 1.0) / floor_scale)) * attn_scale + 1.0, viewed (1, L, 1, 1) and
      expanded, query_states = (query_states * attn_scales).to(query_states.dtype); transpose(1, 2);
      past_key_values.update; the attention interface (sdpa: reference.sdpa_attention_forward),
      scaling head_dim**-0.5; reshape, contiguous, o_proj
  Llama4TextDecoderLayer.forward: input_layernorm, self_attn, residual add, post_attention_layernorm,
      feed_forward (Llama4TextMoe in config.moe_layers, else Llama4TextMLP(intermediate_size_mlp)),
      `hidden_states, _ = hidden_states` for the MoE (router_logits bound to `_` until the layer
      returns), residual + hidden_states.view(residual.shape)
  Llama4TextModel.forward: embed_tokens; causal_mask_mapping {"full_attention": create_causal_mask,
      "chunked_attention": create_chunked_causal_mask}; freq_cis = rotary_emb once; the layers; norm
  Llama4ForCausalLM.forward: lm_head on hidden_states[:, slice_indices, :], loss_function.
configuration_llama4.py @ 008e5743 (Llama4TextConfig.__post_init__): no_rope_layers empty ->
  [int((i + 1) % no_rope_layer_interval != 0)]; moe_layers None -> range(step - 1, N, step);
  layer_types None -> "chunked_attention" where no_rope_layers[i] else "full_attention";
  defaults attention_chunk_size 8192, attn_temperature_tuning True, floor_scale 8192, attn_scale 0.1.
masking_utils.py (transformers 5): sdpa_mask with allow_is_causal_skip returns None when
  _ignore_causal_mask_sdpa holds (no padding, q_len 1 or kv_len == q_len, and kv_len <
  local_attention_size for the chunked mask); otherwise a bool [B, 1, L, S] mask, here built as
  (kv_idx <= q_idx) & (kv_idx // chunk == q_idx // chunk) over the layer's kv_offset (the chunked
  layers' DynamicSlidingWindowLayer.get_mask_sizes), and sdpa_attention_forward repeats k and v
  (reference.sdpa_attention_forward).
cache_utils.py @ 004999d9 DynamicCache(config): "chunked_attention" layers are
  DynamicSlidingWindowLayer(sliding_window=attention_chunk_size) (reference.DynamicCache with those
  layers marked "sliding_attention").
Not replicated: the vision tower (Llama4ForConditionalGeneration), flex attention.
"""
import torch
import torch.nn as nn

import reference as R
import vctorch


def keys(c):
    """Llama4TextConfig's defaults and __post_init__ for the keys used here (a plain dict)."""
    d = dict(c)
    n = d["num_hidden_layers"]
    d.setdefault("intermediate_size", 8192)
    d.setdefault("intermediate_size_mlp", 16384)
    d.setdefault("num_local_experts", 16)
    d.setdefault("num_experts_per_tok", 1)
    d.setdefault("rms_norm_eps", 1e-5)
    d.setdefault("rope_theta", 500000.0)
    d.setdefault("attention_chunk_size", 8192)
    d.setdefault("attn_temperature_tuning", True)
    d.setdefault("floor_scale", 8192)
    d.setdefault("attn_scale", 0.1)
    d.setdefault("use_qk_norm", True)
    d.setdefault("head_dim", 128)
    if d.get("head_dim") is None:
        d["head_dim"] = d["hidden_size"] // d["num_attention_heads"]
    step = d.get("interleave_moe_layer_step", 1)
    if d.get("moe_layers") is None:
        d["moe_layers"] = list(range(step - 1, n, step))
    if not d.get("no_rope_layers"):
        d["no_rope_layers"] = [int((i + 1) % d.get("no_rope_layer_interval", 4) != 0) for i in range(n)]
    if d.get("layer_types") is None:
        d["layer_types"] = ["chunked_attention" if d["no_rope_layers"][i] else "full_attention" for i in range(n)]
    return d


def cache_layer_types(c):
    """DynamicCache(config): the chunked layers as sliding-window layers of attention_chunk_size."""
    d = keys(c)
    return ["sliding_attention" if t == "chunked_attention" else "full_attention" for t in d["layer_types"]], \
        d["attention_chunk_size"]


class Llama4TextExperts(nn.Module):
    def __init__(self, d):
        super().__init__()
        E, H, I = d["num_local_experts"], d["hidden_size"], d["intermediate_size"]
        self.num_experts, self.hidden_size = E, H
        self.gate_up_proj = nn.Parameter(torch.empty(E, H, 2 * I))
        self.down_proj = nn.Parameter(torch.empty(E, I, H))
        nn.init.normal_(self.gate_up_proj, std=0.02)
        nn.init.normal_(self.down_proj, std=0.02)
        self.act_fn = R.act_fn(d.get("hidden_act", "silu"))

    def forward(self, hidden_states):
        hidden_states = hidden_states.view(self.gate_up_proj.shape[0], -1, self.hidden_size)
        gate_up = torch.bmm(hidden_states, self.gate_up_proj)
        gate, up = gate_up.chunk(2, dim=-1)
        next_states = torch.bmm((up * self.act_fn(gate)), self.down_proj)
        next_states = next_states.view(-1, self.hidden_size)
        return next_states


class Llama4TextMLP(nn.Module):
    def __init__(self, d, intermediate_size=None):
        super().__init__()
        H, I = d["hidden_size"], intermediate_size or d["intermediate_size"]
        self.gate_proj = R.Linear(H, I, bias=False)
        self.up_proj = R.Linear(H, I, bias=False)
        self.down_proj = R.Linear(I, H, bias=False)
        self.activation_fn = R.act_fn(d.get("hidden_act", "silu"))

    def forward(self, x):
        down_proj = self.activation_fn(self.gate_proj(x)) * self.up_proj(x)
        return self.down_proj(down_proj)


def _norm(x, eps):
    return x * torch.rsqrt(vctorch.mean2x(x.pow(2), -1, keepdim=True) + eps)


class Llama4TextL2Norm(nn.Module):
    def __init__(self, eps=1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        return _norm(x.float(), self.eps).type_as(x)


class Llama4TextRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_size))

    def forward(self, x):
        output = _norm(x.float(), self.eps).type_as(x)
        return output * self.weight


class Llama4Router(R.Linear):
    def __init__(self, d):
        super().__init__(d["hidden_size"], d["num_local_experts"], bias=False)
        self.num_experts = d["num_local_experts"]
        self.top_k = d["num_experts_per_tok"]

    def forward(self, hidden_states):
        router_logits = super().forward(hidden_states)
        router_top_value, router_indices = torch.topk(router_logits, self.top_k, dim=1)
        router_scores = torch.full_like(router_logits, float("-inf")).scatter_(1, router_indices, router_top_value)
        router_scores = torch.nn.functional.sigmoid(router_scores.float()).to(router_scores.dtype)
        return router_scores, router_logits


class Llama4TextMoe(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.top_k = d["num_experts_per_tok"]
        self.hidden_dim = d["hidden_size"]
        self.num_experts = d["num_local_experts"]
        self.experts = Llama4TextExperts(d)
        self.router = Llama4Router(d)
        self.shared_expert = Llama4TextMLP(d)

    def forward(self, hidden_states):
        hidden_states = hidden_states.reshape(-1, self.hidden_dim)
        router_scores, router_logits = self.router(hidden_states)
        routed_in = hidden_states.repeat(router_scores.shape[1], 1)
        routed_in = routed_in * router_scores.transpose(0, 1).reshape(-1, 1)
        routed_out = self.experts(routed_in)
        out = self.shared_expert(hidden_states)
        out.add_(routed_out.reshape(router_scores.shape[1], -1, routed_out.shape[-1]).sum(dim=0))
        return out, router_logits


class Llama4TextRotaryEmbedding(nn.Module):
    def __init__(self, d):
        super().__init__()
        dim = d["head_dim"]
        inv_freq = 1.0 / (d["rope_theta"] ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.attention_scaling = 1.0  # compute_default_rope_parameters
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.to(x.device) @ position_ids_expanded).transpose(1, 2)
        freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
        freqs_cis = freqs_cis * self.attention_scaling
        return freqs_cis


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    xq_out = torch.view_as_real(xq_ * freqs_cis[:, :, None, :]).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis[:, :, None, :]).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class Llama4TextAttention(nn.Module):
    def __init__(self, d, layer_idx):
        super().__init__()
        self.layer_idx = layer_idx
        self.head_dim = d["head_dim"]
        self.num_key_value_groups = d["num_attention_heads"] // d["num_key_value_heads"]
        self.scaling = self.head_dim ** -0.5
        self.attn_scale = d["attn_scale"]
        self.floor_scale = d["floor_scale"]
        self.attn_temperature_tuning = d["attn_temperature_tuning"]
        self.attention_dropout = d.get("attention_dropout", 0.0)
        self.use_rope = d["no_rope_layers"][layer_idx]
        H, nh, nkv, hd, b = d["hidden_size"], d["num_attention_heads"], d["num_key_value_heads"], self.head_dim, \
            d.get("attention_bias", False)
        self.q_proj = R.Linear(H, nh * hd, bias=b)
        self.k_proj = R.Linear(H, nkv * hd, bias=b)
        self.v_proj = R.Linear(H, nkv * hd, bias=b)
        self.o_proj = R.Linear(nh * hd, H, bias=b)
        if d["use_qk_norm"] and self.use_rope:
            self.qk_norm = Llama4TextL2Norm(d["rms_norm_eps"])

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key_value=None, cache_position=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape)
        key_states = self.k_proj(hidden_states).view(*input_shape, -1, self.head_dim)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        if self.use_rope:
            query_states, key_states = apply_rotary_emb(query_states, key_states, position_embeddings)
        if hasattr(self, "qk_norm"):
            query_states = self.qk_norm(query_states)
            key_states = self.qk_norm(key_states)
        if self.attn_temperature_tuning and not self.use_rope:
            attn_scales = (torch.log1p(torch.floor((cache_position.float() + 1.0) / self.floor_scale))
                           * self.attn_scale + 1.0)
            attn_scales = attn_scales.view((1, input_shape[-1], 1, 1)).expand((*input_shape, 1, 1))
            query_states = (query_states * attn_scales).to(query_states.dtype)
        query_states = query_states.transpose(1, 2)
        key_states = key_states.transpose(1, 2)
        if past_key_value is not None:
            key_states, value_states = past_key_value.update(key_states, value_states, self.layer_idx)
        attn_output, _ = R.sdpa_attention_forward(self, query_states, key_states, value_states, attention_mask,
                                                  0.0 if not self.training else self.attention_dropout, self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class Llama4TextDecoderLayer(nn.Module):
    def __init__(self, d, layer_idx):
        super().__init__()
        self.attention_type = d["layer_types"][layer_idx]
        self.self_attn = Llama4TextAttention(d, layer_idx)
        self.is_moe_layer = layer_idx in d["moe_layers"]
        if self.is_moe_layer:
            self.feed_forward = Llama4TextMoe(d)
        else:
            self.feed_forward = Llama4TextMLP(d, intermediate_size=d["intermediate_size_mlp"])
        self.input_layernorm = Llama4TextRMSNorm(d["hidden_size"], eps=d["rms_norm_eps"])
        self.post_attention_layernorm = Llama4TextRMSNorm(d["hidden_size"], eps=d["rms_norm_eps"])

    def forward(self, hidden_states, attention_mask, position_embeddings, past_key_value=None, cache_position=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        attention_states = self.self_attn(hidden_states, position_embeddings, attention_mask, past_key_value,
                                          cache_position)
        hidden_states = residual + attention_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.feed_forward(hidden_states)
        if self.is_moe_layer:
            hidden_states, _ = hidden_states
        hidden_states = residual + hidden_states.view(residual.shape)
        return hidden_states


def chunked_mask(batch_size, cache_position, kv_length, kv_offset, chunk):
    """sdpa_mask for create_chunked_causal_mask when it cannot be skipped: a bool [1, 1, L, S]
    expanded to the batch (a view)."""
    kv_idx = torch.arange(kv_offset, kv_offset + kv_length)
    allowed = (kv_idx[None, :] <= cache_position[:, None]) & \
        (torch.div(kv_idx[None, :], chunk, rounding_mode="floor") == torch.div(cache_position[:, None], chunk,
                                                                             rounding_mode="floor"))
    return allowed[None, None, :, :].expand(batch_size, -1, -1, -1)


class CausalLM(R.CausalLM):
    """Llama4ForCausalLM: model.embed_tokens, layers, norm, rotary_emb, lm_head; reference.CausalLM's
    _head (loss) and _layer (gradient checkpointing)."""

    def __init__(self, cfg, attn_impl=None):
        nn.Module.__init__(self)
        if attn_impl not in (None, "sdpa"):
            raise ValueError("llama4_text is replicated with transformers' default sdpa")
        self.cfg = cfg
        self.d = d = keys(cfg.d)
        self.attn_impl = "sdpa"
        self.neox = False
        self.gradient_checkpointing = False
        self.ckpt_every = 1
        self.ckpt_ops = False
        self.ckpt_save_inputs = False
        self.ckpt_reentrant = False  # reference.CausalLM._layer reads it (--ckpt-kind reentrant)
        H, V = d["hidden_size"], d["vocab_size"]
        self.embed_tokens = nn.Embedding(V, H, d.get("pad_token_id"))
        self.layers = nn.ModuleList([Llama4TextDecoderLayer(d, i) for i in range(d["num_hidden_layers"])])
        self.norm = Llama4TextRMSNorm(H, eps=d["rms_norm_eps"])
        self.rotary_emb = Llama4TextRotaryEmbedding(d)
        self.lm_head = R.Linear(H, V, bias=False)
        if d.get("tie_word_embeddings", False):
            self.lm_head.weight = self.embed_tokens.weight

    def forward(self, input_ids, labels=None, past_key_values=None, cache_position=None,
                attention_mask=None, logits_to_keep=0):
        """Llama4ForCausalLM.forward: `outputs = self.model(...)` (Llama4TextModel.forward), then lm_head and the
        loss on `outputs.last_hidden_state`: Llama4TextModel.forward's locals (inputs_embeds, the mask mapping,
        cache_position, position_ids, freq_cis) are freed when it returns, before the head (modeling_llama4.py
        @000c33fdfde12e1ffafbfcdb3c926df5727a00b6, Llama4ForCausalLM.forward; issue 26: the replica kept them alive
        through the head and the loss)."""
        hidden_states = self._model_forward(input_ids, past_key_values, cache_position)
        return self._head(hidden_states, labels, logits_to_keep, self.lm_head)

    def _model_forward(self, input_ids, past_key_values, cache_position):
        """Llama4TextModel.forward: the final norm's output."""
        d = self.d
        inputs_embeds = self.embed_tokens(input_ids)
        past_seen = past_key_values.get_seq_length() if past_key_values is not None else 0
        if cache_position is None:
            cache_position = torch.arange(past_seen, past_seen + inputs_embeds.shape[1])
        position_ids = cache_position.unsqueeze(0)
        B, L = inputs_embeds.shape[:2]
        chunk = d["attention_chunk_size"]
        # create_causal_mask: no padding, q_len == kv_len or 1: skipped (None) in every case here.
        # create_chunked_causal_mask: kv_length and kv_offset from the first chunked layer's cache
        # (DynamicSlidingWindowLayer.get_mask_sizes), skipped while kv_length < chunk
        kv_len, kv_off = L, 0
        if past_key_values is not None:
            cum = past_seen
            kv_off = max(cum - chunk + 1, 0)
            kv_len = chunk - 1 + L if cum >= chunk else cum + L
        cmask = None
        if not (kv_len < chunk and (L == 1 or kv_len == L)):
            cmask = chunked_mask(B, cache_position, kv_len, kv_off, chunk)
        masks = {"full_attention": None, "chunked_attention": cmask}
        hidden_states = inputs_embeds
        freq_cis = self.rotary_emb(hidden_states, position_ids)
        for layer in self.layers:
            a = (hidden_states, masks[layer.attention_type], freq_cis)
            if past_key_values is None:
                hidden_states = self._layer(layer, *a, None, cache_position)
            else:
                hidden_states = layer(*a, past_key_values, cache_position)
        return self.norm(hidden_states)
