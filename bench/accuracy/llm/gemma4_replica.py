"""Gemma 4's language model (Gemma4ForCausalLM, model_type gemma4_text) as transformers runs it, for
torch 1.13 on CPU (measure_llm.py on a config whose model_type is gemma4_text): sliding and full
attention with the full layers' global_head_dim, attention_k_eq_v, q/k/v norms, the layer scalar, final
soft-capping, the MoE block beside the MLP, the per-layer inputs, the kv-shared layers and the
shared_kv_states dict every model fills. (Gradient checkpointing runs reference.CausalLM's per-layer
non-reentrant checkpoint, vctorch._checkpoint2x; with it the dict, passed to every checkpointed layer, lives
through backward: transformers' GradientCheckpointingLayer.__call__ (modeling_layers.py @ 00029cfa) binds it as
a keyword in partial(super().__call__, **kwargs), which torch's checkpoint frame keeps for the recompute; here the
recompute closure keeps it among the positional args, for as long. A storing layer's recompute puts its
recomputed keys and values, with their recomputed graph, in the dict in place of the forward's.)

Written from huggingface/transformers models/gemma4/modeling_gemma4.py @
0246b4f3335464614ef1de66531f9131a44ec801 (the file bench/accuracy/llm/gemma4_params.py counts from):
  Gemma4RMSNorm (_norm: x * torch.pow(x.pow(2).mean(-1, keepdim=True) + eps, -0.5) on x.float();
      with_scale: * self.weight.float(); .type_as(x)),
  apply_rotary_pos_emb on [B, L, heads, D] with unsqueeze_dim=2 (rotate_half: cat(-x2, x1)),
  Gemma4TextRotaryEmbedding.forward (one cos / sin pair per layer type, of that type's head_dim: the
      full layers' "proportional" rope, modeling_rope_utils.py _compute_proportional_rope_parameters,
      returns head_dim // 2 inverse frequencies whatever partial_rotary_factor),
  Gemma4TextAttention.forward (q_proj(x).view, q_norm, rotary, transpose; k_proj(x).view, v_proj(x).view
      or, under attention_k_eq_v on a full layer, value_states = key_states; k_norm, rotary, transpose;
      v_norm (no weight), transpose; past_key_values.update; sdpa with scaling 1.0; reshape, contiguous,
      o_proj),
  Gemma4TextMLP (down_proj(act_fn(gate_proj(x)) * up_proj(x))),
  Gemma4TextRouter.forward (norm without weight, * scale * scalar_root_size, proj, softmax(dim=-1) in the
      activations' dtype, topk, in-place renormalisation, * per_expert_scale[top_k_index]),
  Gemma4TextExperts (gate_up_proj [E, 2 moe_intermediate_size, H], down_proj [E, H, moe_intermediate_size])
      under @use_experts_implementation: transformers 5's default grouped_mm, integrations/moe.py
      grouped_mm_experts_forward (moe_v5_replica.MixtralExperts.forward, @8b584a67),
  Gemma4TextAttention.__init__ (is_kv_shared_layer: layer_idx >= num_hidden_layers - num_kv_shared_layers;
      store_full_length_kv: the last layer of its type before them) and forward (a shared layer takes
      shared_kv_states[layer_type] and updates no cache; a storing layer puts its keys and values there after
      past_key_values.update), Gemma4TextMLP's double-wide MLP on the shared layers,
  Gemma4TextModel.get_per_layer_inputs / project_per_layer_inputs (embed_tokens_per_layer * P ** 0.5,
      per_layer_model_projection * H ** -0.5, reshape, per_layer_projection_norm, (sum) * 2 ** -0.5) and the
      decoder layer's per-layer branch (per_layer_input_gate, act_fn, * per_layer_inputs[:, :, i, :],
      per_layer_projection, post_per_layer_input_norm, + residual),
  Gemma4TextDecoderLayer.forward (input_layernorm, self_attn, post_attention_layernorm, + residual;
      pre_feedforward_layernorm, mlp, with enable_moe_block post_feedforward_layernorm_1 of it and
      the router on the residual, pre_feedforward_layernorm_2, experts, post_feedforward_layernorm_2,
      their sum; post_feedforward_layernorm, + residual; hidden_states *=
      self.layer_scalar, a [1] buffer),
  Gemma4TextScaledWordEmbedding (super().forward(ids) * embed_scale.to(weight.dtype)),
  Gemma4TextModel.forward (embed, rotary per type, the layers, norm), Gemma4ForCausalLM.forward
      (lm_head, final_logit_softcapping: / cap, tanh, * cap; loss_function);
and configuration_gemma4.py (v5.5) Gemma4TextConfig's defaults and __post_init__ (layer_types: sliding
unless (i + 1) % 6 == 0, the last layer forced to "full_attention").
transformers' default attention here is sdpa; below sliding_window sdpa_mask returns None (allow_is_causal_skip),
from a kv length of sliding_window on the sliding layers get create_sliding_window_causal_mask's bool mask
(sliding_replica.py), as gptoss_replica.py's Gemma 3 does; generation runs past it, DynamicSlidingWindowLayer
keeping window - 1 tokens (reference.DynamicCache).
"""
import torch
import torch.nn as nn

import reference as R
import vctorch
from moe_v5_replica import MixtralExperts

DEFAULTS = dict(  # Gemma4TextConfig (configuration_gemma4.py, v5.5)
    vocab_size=262144, hidden_size=2304, intermediate_size=9216, num_hidden_layers=30, num_attention_heads=8,
    num_key_value_heads=4, head_dim=256, hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True,
    attention_bias=False, sliding_window=512, hidden_size_per_layer_input=256, vocab_size_per_layer_input=262144,
    num_global_key_value_heads=None, global_head_dim=512, attention_k_eq_v=False, num_kv_shared_layers=0,
    enable_moe_block=False, use_double_wide_mlp=False, num_experts=None, top_k_experts=None,
    moe_intermediate_size=None, final_logit_softcapping=None, rms_norm_eps=1e-6,
    attention_dropout=0.0, layer_types=None)


def resolve(raw):
    """The config dict with Gemma4TextConfig's defaults and __post_init__'s layer_types."""
    d = dict(DEFAULTS)
    d.update(raw)
    n = d["num_hidden_layers"]
    lt = list(d["layer_types"]) if d["layer_types"] is not None else \
        ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(n)]
    lt[-1] = "full_attention"  # __post_init__: the last layer is always full attention
    d["layer_types"] = lt
    return d


def kv_bytes_per_token(d, elem):
    """DynamicCache's key_states and value_states per token per sequence: each layer's kv heads x head_dim."""
    n = 0
    for t in d["layer_types"]:
        full = t == "full_attention"
        hd = d["global_head_dim"] if full and d["global_head_dim"] else d["head_dim"]
        kv = d["num_global_key_value_heads"] if full and d["attention_k_eq_v"] else d["num_key_value_heads"]
        n += 2 * kv * hd * elem
    return n


class Gemma4RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6, with_scale=True):
        super().__init__()
        self.eps = eps
        self.with_scale = with_scale
        if with_scale:
            self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, hidden_states):
        # .mean(-1, keepdim=True) with 2.x's MeanBackward1 (vctorch.mean2x)
        mean_squared = vctorch.mean2x(hidden_states.pow(2), -1, keepdim=True) + self.eps
        return hidden_states * torch.pow(mean_squared, -0.5)

    def forward(self, hidden_states):
        normed_output = self._norm(hidden_states.float())
        if self.with_scale:
            normed_output = normed_output * self.weight.float()
        return normed_output.type_as(hidden_states)


def apply_rotary_pos_emb(x, cos, sin, unsqueeze_dim=2):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return (x * cos) + (R.rotate_half(x) * sin)


class Gemma4TextAttention(nn.Module):
    def __init__(self, cfg, layer_idx):
        super().__init__()
        d = cfg.d
        self.layer_idx = layer_idx
        self.layer_type = d["layer_types"][layer_idx]
        self.is_sliding = self.layer_type == "sliding_attention"
        # shared kv cache: the last num_kv_shared_layers layers read the keys and values the last earlier layer of
        # their type stored (store_full_length_kv, computed for every model, kv sharing or not)
        first = d["num_hidden_layers"] - d["num_kv_shared_layers"]
        self.is_kv_shared_layer = layer_idx >= first >= 0
        prev = d["layer_types"][:first]
        self.store_full_length_kv = not self.is_kv_shared_layer and layer_idx == len(prev) - 1 - prev[::-1].index(
            self.layer_type)
        self.head_dim = d["global_head_dim"] if not self.is_sliding and d["global_head_dim"] else d["head_dim"]
        self.use_alternative_attention = d["attention_k_eq_v"] and not self.is_sliding
        nkv = d["num_global_key_value_heads"] if self.use_alternative_attention else d["num_key_value_heads"]
        self.num_key_value_groups = d["num_attention_heads"] // nkv
        self.scaling = 1.0
        self.attention_dropout = d["attention_dropout"]
        H, nh, b, eps = d["hidden_size"], d["num_attention_heads"], d["attention_bias"], d["rms_norm_eps"]
        self.q_proj = R.Linear(H, nh * self.head_dim, bias=b)
        self.q_norm = Gemma4RMSNorm(self.head_dim, eps)
        if not self.is_kv_shared_layer:  # layers sharing kv states don't need any weight matrices
            self.k_norm = Gemma4RMSNorm(self.head_dim, eps)
            self.v_norm = Gemma4RMSNorm(self.head_dim, eps, with_scale=False)
            self.k_proj = R.Linear(H, nkv * self.head_dim, bias=b)
            self.v_proj = R.Linear(H, nkv * self.head_dim, bias=b) if not self.use_alternative_attention else None
        self.o_proj = R.Linear(nh * self.head_dim, H, bias=b)

    def forward(self, hidden_states, position_embeddings, attention_mask, shared_kv_states, past_key_values=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        cos, sin = position_embeddings
        query_states = self.q_proj(hidden_states).view(hidden_shape)
        query_states = self.q_norm(query_states)
        query_states = apply_rotary_pos_emb(query_states, cos, sin, unsqueeze_dim=2)
        query_states = query_states.transpose(1, 2)
        if self.is_kv_shared_layer:
            key_states, value_states = shared_kv_states[self.layer_type]
        else:
            key_states = self.k_proj(hidden_states).view(hidden_shape)
            value_states = self.v_proj(hidden_states).view(hidden_shape) if self.v_proj is not None else key_states
            key_states = self.k_norm(key_states)
            key_states = apply_rotary_pos_emb(key_states, cos, sin, unsqueeze_dim=2)
            key_states = key_states.transpose(1, 2)
            value_states = self.v_norm(value_states)
            value_states = value_states.transpose(1, 2)
        if past_key_values is not None and not self.is_kv_shared_layer:
            key_states, value_states = past_key_values.update(key_states, value_states, self.layer_idx)
        if self.store_full_length_kv:
            shared_kv_states[self.layer_type] = key_states, value_states
        attn_output, _ = R.sdpa_attention_forward(self, query_states, key_states, value_states, attention_mask,
                                                  self.attention_dropout if self.training else 0.0, self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class Gemma4TextRouter(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.hidden_size = d["hidden_size"]
        self.scalar_root_size = self.hidden_size ** -0.5
        self.top_k = d["top_k_experts"]
        self.norm = Gemma4RMSNorm(self.hidden_size, d["rms_norm_eps"], with_scale=False)
        self.proj = R.Linear(self.hidden_size, d["num_experts"], bias=False)
        self.scale = nn.Parameter(torch.ones(self.hidden_size))
        self.per_expert_scale = nn.Parameter(torch.ones(d["num_experts"]))

    def forward(self, hidden_states):
        hidden_states = self.norm(hidden_states)
        hidden_states = hidden_states * self.scale * self.scalar_root_size
        expert_scores = self.proj(hidden_states)
        router_probabilities = nn.functional.softmax(expert_scores, dim=-1)
        top_k_weights, top_k_index = torch.topk(router_probabilities, k=self.top_k, dim=-1)
        top_k_weights /= top_k_weights.sum(dim=-1, keepdim=True)
        top_k_weights = top_k_weights * self.per_expert_scale[top_k_index]
        return router_probabilities, top_k_weights, top_k_index


class Gemma4TextExperts(MixtralExperts):
    """Gemma4TextExperts.__init__'s stacked weights; forward: grouped_mm_experts_forward (MixtralExperts')."""

    def __init__(self, d):
        nn.Module.__init__(self)
        self.num_experts = d["num_experts"]
        self.hidden_dim = d["hidden_size"]
        self.intermediate_dim = d["moe_intermediate_size"]
        self.gate_up_proj = nn.Parameter(torch.empty(self.num_experts, 2 * self.intermediate_dim, self.hidden_dim))
        self.down_proj = nn.Parameter(torch.empty(self.num_experts, self.hidden_dim, self.intermediate_dim))
        nn.init.normal_(self.gate_up_proj, std=0.02)
        nn.init.normal_(self.down_proj, std=0.02)
        self.act_fn = R.act_fn(d["hidden_activation"])


class Gemma4TextDecoderLayer(nn.Module):
    def __init__(self, cfg, layer_idx):
        super().__init__()
        d = cfg.d
        H, eps = d["hidden_size"], d["rms_norm_eps"]
        self.self_attn = Gemma4TextAttention(cfg, layer_idx)
        # Gemma4TextMLP: intermediate_size x 2 on the kv-shared layers under use_double_wide_mlp
        first = d["num_hidden_layers"] - d["num_kv_shared_layers"]
        wide = d["use_double_wide_mlp"] and layer_idx >= first > 0
        self.mlp = R.GatedMLP(cfg, d["hidden_activation"], inter=d["intermediate_size"] * (2 if wide else 1))
        self.input_layernorm = Gemma4RMSNorm(H, eps)
        self.post_attention_layernorm = Gemma4RMSNorm(H, eps)
        self.pre_feedforward_layernorm = Gemma4RMSNorm(H, eps)
        self.post_feedforward_layernorm = Gemma4RMSNorm(H, eps)
        self.register_buffer("layer_scalar", torch.ones(1))
        self.attention_type = d["layer_types"][layer_idx]
        self.enable_moe_block = d["enable_moe_block"]
        if self.enable_moe_block:
            self.router = Gemma4TextRouter(d)
            self.experts = Gemma4TextExperts(d)
            self.post_feedforward_layernorm_1 = Gemma4RMSNorm(H, eps)
            self.post_feedforward_layernorm_2 = Gemma4RMSNorm(H, eps)
            self.pre_feedforward_layernorm_2 = Gemma4RMSNorm(H, eps)
        self.hidden_size_per_layer_input = d["hidden_size_per_layer_input"]
        if self.hidden_size_per_layer_input:
            P = self.hidden_size_per_layer_input
            self.act_fn = R.act_fn(d["hidden_activation"])
            self.per_layer_input_gate = R.Linear(H, P, bias=False)
            self.per_layer_projection = R.Linear(P, H, bias=False)
            self.post_per_layer_input_norm = Gemma4RMSNorm(H, eps)

    def forward(self, hidden_states, per_layer_input, shared_kv_states, attention_mask, position_embeddings,
                past_key_values=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask, shared_kv_states,
                                       past_key_values)
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.pre_feedforward_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        if self.enable_moe_block:
            hidden_states_1 = self.post_feedforward_layernorm_1(hidden_states)
            hidden_states_flat = residual.reshape(-1, residual.shape[-1])
            _, top_k_weights, top_k_index = self.router(hidden_states_flat)
            hidden_states_2 = self.pre_feedforward_layernorm_2(hidden_states_flat)
            hidden_states_2 = self.experts(hidden_states_2, top_k_index, top_k_weights)
            hidden_states_2 = hidden_states_2.reshape(residual.shape)
            hidden_states_2 = self.post_feedforward_layernorm_2(hidden_states_2)
            hidden_states = hidden_states_1 + hidden_states_2
        hidden_states = self.post_feedforward_layernorm(hidden_states)
        hidden_states = residual + hidden_states
        if self.hidden_size_per_layer_input:
            residual = hidden_states
            hidden_states = self.per_layer_input_gate(hidden_states)
            hidden_states = self.act_fn(hidden_states)
            hidden_states = hidden_states * per_layer_input
            hidden_states = self.per_layer_projection(hidden_states)
            hidden_states = self.post_per_layer_input_norm(hidden_states)
            hidden_states = residual + hidden_states
        hidden_states *= self.layer_scalar
        return hidden_states


class CausalLM(R.CausalLM):
    """Gemma4ForCausalLM: Gemma4TextModel (embed_tokens, layers, norm, rotary_emb) and lm_head (tied by
    tie_word_embeddings); reference.CausalLM's _layer (gradient checkpointing per decoder layer) and the
    loss of its _head."""

    def __init__(self, cfg, attn_impl=None):
        nn.Module.__init__(self)
        if attn_impl not in (None, "sdpa"):
            raise ValueError("gemma4 is replicated with transformers' default sdpa")
        self.cfg = cfg
        d = cfg.d
        self.attn_impl = "sdpa"
        self.neox = False
        self.gradient_checkpointing = False
        self.ckpt_every = 1
        self.ckpt_ops = False
        self.ckpt_save_inputs = False
        self.ckpt_reentrant = False  # reference.CausalLM._layer reads it (--ckpt-kind reentrant)
        H, V = d["hidden_size"], d["vocab_size"]
        self.embed_tokens = nn.Embedding(V, H, d.get("pad_token_id"))
        self.embed_scale = torch.tensor(H ** 0.5)  # Gemma4TextScaledWordEmbedding's buffer (non-persistent)
        self.layers = nn.ModuleList([Gemma4TextDecoderLayer(cfg, i) for i in range(d["num_hidden_layers"])])
        self.hidden_size_per_layer_input = P = d["hidden_size_per_layer_input"]
        if P:  # Per-Layer Embeddings: embed_tokens_per_layer (scaled by P ** 0.5), the projection and its norm
            N = d["num_hidden_layers"]
            self.embed_tokens_per_layer = nn.Embedding(d["vocab_size_per_layer_input"], N * P, d.get("pad_token_id"))
            self.embed_scale_per_layer = torch.tensor(P ** 0.5)
            self.per_layer_input_scale = 2.0 ** -0.5
            self.per_layer_model_projection = R.Linear(H, N * P, bias=False)
            self.per_layer_model_projection_scale = H ** -0.5
            self.per_layer_projection_norm = Gemma4RMSNorm(P, d["rms_norm_eps"])
        self.norm = Gemma4RMSNorm(H, d["rms_norm_eps"])
        # Gemma4TextRotaryEmbedding: one inv_freq per layer type (the frequencies' values do not change a size)
        self.rotary = nn.ModuleDict()
        for t in set(d["layer_types"]):
            hd = d["global_head_dim"] if t == "full_attention" and d["global_head_dim"] else d["head_dim"]
            self.rotary[t] = R.RotaryEmbedding(cfg, hd)
        self.lm_head = R.Linear(H, V, bias=False)
        if d["tie_word_embeddings"]:
            self.lm_head.weight = self.embed_tokens.weight

    def forward(self, input_ids, labels=None, past_key_values=None, cache_position=None,
                attention_mask=None, logits_to_keep=0):
        inputs_embeds = self.embed_tokens(input_ids) * self.embed_scale.to(self.embed_tokens.weight.dtype)
        per_layer_inputs = None
        if self.hidden_size_per_layer_input:
            N, P = self.cfg.d["num_hidden_layers"], self.hidden_size_per_layer_input
            # get_per_layer_inputs: embed_tokens_per_layer(input_ids) (Gemma4TextScaledWordEmbedding), reshaped
            per_layer_inputs = (self.embed_tokens_per_layer(input_ids) * self.embed_scale_per_layer.to(
                self.embed_tokens_per_layer.weight.dtype)).reshape(*input_ids.shape, N, P)
            # project_per_layer_inputs
            per_layer_projection = self.per_layer_model_projection(inputs_embeds) * self.per_layer_model_projection_scale
            per_layer_projection = per_layer_projection.reshape(*inputs_embeds.shape[:-1], N, P)
            per_layer_projection = self.per_layer_projection_norm(per_layer_projection)
            per_layer_inputs = (per_layer_projection + per_layer_inputs) * self.per_layer_input_scale
            del per_layer_projection
        past_seen = past_key_values.get_seq_length() if past_key_values is not None else 0
        if cache_position is None:
            cache_position = torch.arange(past_seen, past_seen + inputs_embeds.shape[1])
        position_ids = cache_position.unsqueeze(0)
        hidden_states = inputs_embeds
        # sdpa, no padding: the full layers' mask is None; the sliding layers' a bool mask once the kv length
        # reaches sliding_window (sliding_replica.py: create_sliding_window_causal_mask), else None
        import sliding_replica
        masks = {"full_attention": None,
                 "sliding_attention": sliding_replica.create_sliding_window_causal_mask(
                     inputs_embeds, attention_mask, past_key_values, self.cfg.d["sliding_window"],
                     list(self.cfg.d["layer_types"]))}
        pes = {t: self.rotary[t](hidden_states, position_ids) for t in self.rotary}
        shared_kv_states = {}  # UserDict() in transformers: the same dict for every layer
        for i, layer in enumerate(self.layers):
            per_layer_input = per_layer_inputs[:, :, i, :] if per_layer_inputs is not None else None
            a = (hidden_states, per_layer_input, shared_kv_states, masks[layer.attention_type], pes[layer.attention_type])
            if past_key_values is None:
                hidden_states = self._layer(layer, *a)
            else:
                hidden_states = layer(*a, past_key_values)
        hidden_states = self.norm(hidden_states)
        del shared_kv_states, per_layer_inputs, per_layer_input, a, inputs_embeds, pes, masks  # Gemma4TextModel.forward returns
        return self._head(hidden_states, labels, logits_to_keep, self.lm_head)

    def _head(self, hidden_states, labels, logits_to_keep, head):
        # Gemma4ForCausalLM.forward: logits = lm_head(hidden_states[:, slice_indices, :]); softcapping; loss
        logits = head(hidden_states[:, slice(-logits_to_keep, None), :])
        fc = self.cfg.d["final_logit_softcapping"]
        if fc is not None:
            logits = logits / fc
            logits = torch.tanh(logits)
            logits = logits * fc
        loss = None
        if labels is not None:
            loss = R.for_causal_lm_loss(logits, labels, self.cfg.d["vocab_size"])
        return loss, logits
