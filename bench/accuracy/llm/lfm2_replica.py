"""lfm2_replica.py -- LiquidAI LFM2 (Lfm2ForCausalLM, model_type lfm2) as transformers runs it without the
causal-conv1d package (Lfm2ShortConv.slow_forward), for torch 1.13 on CPU (measure_llm.py on a config whose
model_type is lfm2). Issue 31: the truth for vramcalc's lfm2 row.

Written from huggingface/transformers models/lfm2/modeling_lfm2.py @ 0096ba4f66d4f5f7b1d4e162f8a75d0894b40ea8
and configuration_lfm2.py @ 05cd1ec14dbe16127778060fb68c34105873015c, statement by statement; nothing from
vramcalc's engine was read:
  Lfm2Config.__init__: the defaults below; intermediate_size = kwargs.get("block_ff_dim", intermediate_size);
      layer_types from full_attn_idxs ("full_attention" there, "conv" elsewhere; None: every layer attention);
      tie_word_embeddings = kwargs.get("tie_embedding", tie_word_embeddings); rope_theta (or theta) 1e6
  Lfm2RMSNorm: reference.LlamaRMSNorm's code (x.float(), pow(2).mean, rsqrt, weight * x.to(input_dtype))
  Lfm2MLP: int(2 * intermediate_size / 3) under block_auto_adjust_ff_dim, then int(multiplier * it) rounded up
      to block_multiple_of when block_ffn_dim_multiplier is not None; w2(F.silu(w1(x)) * w3(x))
  Lfm2HybridConvCache: conv_cache zeros [B, hidden, conv_L_cache] in the model's dtype for every one of
      num_hidden_layers layers; update: the first call keeps key_states / value_states themselves, later ones
      torch.cat on dim -2; get_seq_length from the first attention layer
  Lfm2Attention.forward: q_layernorm(q_proj(x).view(hidden_shape)).transpose(1, 2), k likewise, v_proj(x).view
      .transpose; apply_rotary_pos_emb; past_key_values.update; the attention interface (sdpa:
      reference.sdpa_attention_forward, dropout 0.0); reshape, contiguous, out_proj
  Lfm2ShortConv.slow_forward: BCx = in_proj(x).transpose(-1, -2); B, C, x = BCx.chunk(3, dim=-2); Bx = B * x;
      with a cache and cache_position[0] > 0: conv_state = conv_cache.roll(shifts=-1, dims=-1),
      conv_state[:, :, cache_position] = Bx, conv_cache.copy_(conv_state), torch.sum(conv_state *
      conv.weight[:, 0, :], dim=-1) (+= conv.bias), unsqueeze(-1); otherwise (with a cache: conv_state =
      F.pad(Bx, (L_cache - L, 0)), conv_cache.copy_) conv_out = self.conv(Bx)[..., :seqlen]; y = C * conv_out;
      y.transpose(-1, -2).contiguous(); out_proj(y). apply_mask_to_padding_states multiplies only with a 2-D
      mask of several rows and columns: the layers receive create_causal_mask's result, None here (sdpa, no
      padding)
  Lfm2DecoderLayer.forward: operator_norm, self_attn or conv, + residual; + feed_forward(ffn_norm(h))
  Lfm2Model.forward: embed_tokens, the cache made when use_cache and none is passed, pos_emb
      (Lfm2RotaryEmbedding: reference.RotaryEmbedding), the layers, embedding_norm;
  Lfm2ForCausalLM.forward: lm_head on hidden_states[:, -logits_to_keep:], loss_function.

lfm2_moe (Lfm2MoeForCausalLM, LFM2-8B-A1B): models/lfm2_moe/modular_lfm2_moe.py @
0c67e26d765996423ebf953347b1428b47dc38d5 and configuration_lfm2_moe.py @ 06053b84c14d72e9789fbf27844a75aa89b3ded7:
  Lfm2MoeConfig.__init__: MOE_DEFAULTS below; layer_types as given (no full_attn_idxs, no block_* keys);
      tie_word_embeddings = kwargs.get("tie_embedding", tie_word_embeddings); default_theta 1e6
  Lfm2MoeMLP(config, intermediate_size=config.intermediate_size): w1, w3, w2 of intermediate_size as it is
  Lfm2MoeSparseMoeBlock: gate nn.Linear(H, E, bias=False), experts Lfm2MoeExperts (Qwen2MoeExperts: stacked,
      grouped_mm_experts_forward, moe_v5_replica.Qwen2MoeExperts), expert_bias register_buffer(torch.zeros(E,
      dtype=torch.float32)) under use_expert_bias; route_tokens_to_experts and forward statement by statement below
  Lfm2MoeDecoderLayer: Lfm2DecoderLayer with feed_forward = Lfm2MoeMLP for layer_idx < num_dense_layers, else the
      sparse block; forward as lfm2's (a tuple from feed_forward unpacked: the block returns a tensor)
  Lfm2MoeModel / Lfm2MoeHybridConvCache / Lfm2MoeForCausalLM: lfm2's.
"""
import types

import torch
import torch.nn as nn
import torch.nn.functional as F

import moe_v5_replica
import reference as R

DEFAULTS = {  # Lfm2Config.__init__
    "vocab_size": 65536, "hidden_size": 2560, "intermediate_size": 12288, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 128000, "norm_eps": 1e-5,
    "pad_token_id": 0, "tie_word_embeddings": True, "conv_bias": False, "conv_L_cache": 3, "block_multiple_of": 256,
    "block_ffn_dim_multiplier": 1.0, "block_auto_adjust_ff_dim": True, "full_attn_idxs": None, "layer_types": None,
}


MOE_DEFAULTS = {  # Lfm2MoeConfig.__init__
    "vocab_size": 65536, "hidden_size": 2048, "intermediate_size": 7168, "moe_intermediate_size": 1792,
    "num_hidden_layers": 32, "pad_token_id": 0, "tie_word_embeddings": True, "max_position_embeddings": 128000,
    "norm_eps": 1e-5, "num_attention_heads": 32, "num_key_value_heads": 8, "conv_bias": False, "conv_L_cache": 3,
    "num_dense_layers": 2, "num_experts_per_tok": 4, "num_experts": 32, "use_expert_bias": True,
    "routed_scaling_factor": 1.0, "norm_topk_prob": True, "layer_types": None,
}


def resolve(raw):
    if raw.get("model_type") == "lfm2_moe":
        d = dict(MOE_DEFAULTS)
        d.update(raw)
        d["rope_theta"] = raw.get("rope_theta", 1000000.0)
        d["tie_word_embeddings"] = raw.get("tie_embedding", d["tie_word_embeddings"])
        d["rms_norm_eps"] = d["norm_eps"]
        d["moe"] = True
        return d
    d = dict(DEFAULTS)
    d.update(raw)
    d["intermediate_size"] = raw.get("block_ff_dim", d["intermediate_size"])
    if d["layer_types"] is None:
        idxs = d["full_attn_idxs"] if d["full_attn_idxs"] is not None else list(range(d["num_hidden_layers"]))
        d["layer_types"] = ["full_attention" if i in idxs else "conv" for i in range(d["num_hidden_layers"])]
    d["rope_theta"] = raw.get("theta", raw.get("rope_theta", 1000000.0))
    d["tie_word_embeddings"] = raw.get("tie_embedding", d["tie_word_embeddings"])
    d["rms_norm_eps"] = d["norm_eps"]  # for reference.py's readers
    return d


def head_dim(d):
    return d.get("head_dim") or d["hidden_size"] // d["num_attention_heads"]


def kv_bytes_per_token(d, elem):
    return d["layer_types"].count("full_attention") * 2 * d["num_key_value_heads"] * head_dim(d) * elem


def mlp_width(d):
    intermediate_size = d["intermediate_size"]
    if d["block_auto_adjust_ff_dim"]:
        intermediate_size = int(2 * intermediate_size / 3)
        if d["block_ffn_dim_multiplier"] is not None:
            intermediate_size = int(d["block_ffn_dim_multiplier"] * intermediate_size)
            m = d["block_multiple_of"]
            intermediate_size = m * ((intermediate_size + m - 1) // m)
    return intermediate_size


class Lfm2MLP(nn.Module):
    def __init__(self, d, intermediate_size=None):
        super().__init__()
        H = d["hidden_size"]
        intermediate_size = mlp_width(d) if intermediate_size is None else intermediate_size
        self.w1 = R.Linear(H, intermediate_size, bias=False)
        self.w3 = R.Linear(H, intermediate_size, bias=False)
        self.w2 = R.Linear(intermediate_size, H, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Lfm2MoeSparseMoeBlock(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.num_experts = d["num_experts"]
        self.top_k = d["num_experts_per_tok"]
        self.routed_scaling_factor = d["routed_scaling_factor"]
        self.norm_topk_prob = d["norm_topk_prob"]
        self.gate = R.Linear(d["hidden_size"], d["num_experts"], bias=False)
        cfg = types.SimpleNamespace(num_experts=d["num_experts"], hidden_size=d["hidden_size"],
                                    moe_intermediate_size=d["moe_intermediate_size"])
        self.experts = moe_v5_replica.Qwen2MoeExperts(cfg, F.silu)
        if d["use_expert_bias"]:
            self.register_buffer("expert_bias", torch.zeros(self.num_experts, dtype=torch.float32))
        else:
            self.register_buffer("expert_bias", None)

    def route_tokens_to_experts(self, router_logits):
        routing_weights = router_logits.sigmoid()
        if self.expert_bias is not None:
            scores_for_routing = routing_weights + self.expert_bias
            _, selected_experts = torch.topk(scores_for_routing, k=self.top_k, dim=-1)
            routing_weights = torch.gather(routing_weights, dim=1, index=selected_experts).type_as(router_logits)
        else:
            routing_weights, selected_experts = torch.topk(routing_weights, k=self.top_k, dim=-1)
        if self.norm_topk_prob:
            routing_weights = routing_weights / (routing_weights.sum(dim=-1, keepdim=True) + 1e-6)
        routing_weights = routing_weights * self.routed_scaling_factor
        return selected_experts, routing_weights

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states_reshaped = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states_reshaped)
        selected_experts, routing_weights = self.route_tokens_to_experts(router_logits)
        final_hidden_states = self.experts(hidden_states_reshaped, selected_experts, routing_weights)
        return final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)


def keep_fp32(model):
    """expert_bias: torch.zeros(E, dtype=torch.float32), an explicit dtype from_pretrained(dtype=bfloat16) leaves
    as built (nothing casts buffers); measure_llm.py's model.to() cast it: restored."""
    for m in model.modules():
        if isinstance(m, Lfm2MoeSparseMoeBlock) and m.expert_bias is not None:
            m.expert_bias = m.expert_bias.float()


class Lfm2HybridConvCache:
    def __init__(self, d, max_batch_size, dtype):
        self.key_cache, self.value_cache, self.conv_cache = [], [], []
        self.layer_types = d["layer_types"]
        self.first_attention_layer = self.layer_types.index("full_attention")
        self.conv_L_cache = d["conv_L_cache"]
        for _ in range(d["num_hidden_layers"]):
            self.conv_cache.append(torch.zeros(max_batch_size, d["hidden_size"], self.conv_L_cache, dtype=dtype))
            self.key_cache.append(torch.tensor([]))
            self.value_cache.append(torch.tensor([]))

    def update(self, key_states, value_states, layer_idx):
        if self.key_cache[layer_idx].numel() == 0:
            self.key_cache[layer_idx] = key_states
            self.value_cache[layer_idx] = value_states
        else:
            self.key_cache[layer_idx] = torch.cat([self.key_cache[layer_idx], key_states], dim=-2)
            self.value_cache[layer_idx] = torch.cat([self.value_cache[layer_idx], value_states], dim=-2)
        return self.key_cache[layer_idx], self.value_cache[layer_idx]

    def get_seq_length(self, layer_idx=0):
        layer_idx = self.first_attention_layer if self.layer_types[layer_idx] != "full_attention" else layer_idx
        if len(self.key_cache) <= layer_idx or self.key_cache[layer_idx].numel() == 0:
            return 0
        return self.key_cache[layer_idx].shape[-2]


class Lfm2Attention(nn.Module):
    def __init__(self, d, layer_idx, attn_impl):
        super().__init__()
        H, nh, nkv = d["hidden_size"], d["num_attention_heads"], d["num_key_value_heads"]
        self.layer_idx = layer_idx
        self.head_dim = head_dim(d)
        self.num_key_value_groups = nh // nkv
        self.scaling = self.head_dim ** -0.5
        self.q_proj = R.Linear(H, nh * self.head_dim, bias=False)
        self.k_proj = R.Linear(H, nkv * self.head_dim, bias=False)
        self.v_proj = R.Linear(H, nkv * self.head_dim, bias=False)
        self.out_proj = R.Linear(nh * self.head_dim, H, bias=False)
        self.q_layernorm = R.LlamaRMSNorm(self.head_dim, eps=d["norm_eps"])
        self.k_layernorm = R.LlamaRMSNorm(self.head_dim, eps=d["norm_eps"])
        if attn_impl != "sdpa":
            raise ValueError("lfm2: sdpa only")

    def forward(self, hidden_states, position_embeddings, past_key_values=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_layernorm(self.q_proj(hidden_states).view(*hidden_shape)).transpose(1, 2)
        key_states = self.k_layernorm(self.k_proj(hidden_states).view(*hidden_shape)).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(*hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = R.apply_rotary_pos_emb(query_states, key_states, cos, sin)
        if past_key_values is not None:
            key_states, value_states = past_key_values.update(key_states, value_states, self.layer_idx)
        attn_output, _ = R.sdpa_attention_forward(self, query_states, key_states, value_states, None, 0.0,
                                                  self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.out_proj(attn_output)


class Lfm2ShortConv(nn.Module):
    def __init__(self, d, layer_idx):
        super().__init__()
        H = d["hidden_size"]
        self.layer_idx = layer_idx
        self.L_cache = d["conv_L_cache"]
        self.bias = d["conv_bias"]
        self.conv = nn.Conv1d(in_channels=H, out_channels=H, kernel_size=self.L_cache, groups=H, bias=self.bias,
                              padding=self.L_cache - 1)
        self.in_proj = R.Linear(H, 3 * H, bias=self.bias)
        self.out_proj = R.Linear(H, H, bias=self.bias)

    def forward(self, x, past_key_values=None, cache_position=None):
        seqlen = x.shape[1]
        BCx = self.in_proj(x).transpose(-1, -2)
        B, C, x = BCx.chunk(3, dim=-2)
        Bx = B * x
        if past_key_values is not None and cache_position[0] > 0:
            conv_state = past_key_values.conv_cache[self.layer_idx]
            cache_position = cache_position.clamp(0, self.L_cache - 1)
            conv_state = conv_state.roll(shifts=-1, dims=-1)
            conv_state[:, :, cache_position] = Bx.to(device=conv_state.device, dtype=conv_state.dtype)
            past_key_values.conv_cache[self.layer_idx].copy_(conv_state)
            conv_out = torch.sum(conv_state.to(Bx.device) * self.conv.weight[:, 0, :], dim=-1)
            if self.bias:
                conv_out += self.conv.bias
            conv_out = conv_out.unsqueeze(-1)
        else:
            if past_key_values is not None:
                conv_state = F.pad(Bx, (self.L_cache - Bx.shape[-1], 0))
                past_key_values.conv_cache[self.layer_idx].copy_(conv_state)
            conv_out = self.conv(Bx)[..., :seqlen]
        y = C * conv_out
        y = y.transpose(-1, -2).contiguous()
        y = self.out_proj(y)
        return y


class Lfm2DecoderLayer(nn.Module):
    def __init__(self, d, layer_idx, attn_impl):
        super().__init__()
        self.is_attention_layer = d["layer_types"][layer_idx] == "full_attention"
        if self.is_attention_layer:
            self.self_attn = Lfm2Attention(d, layer_idx, attn_impl)
        else:
            self.conv = Lfm2ShortConv(d, layer_idx)
        if not d.get("moe"):
            self.feed_forward = Lfm2MLP(d)
        elif layer_idx < d["num_dense_layers"]:  # Lfm2MoeMLP(config, intermediate_size=config.intermediate_size)
            self.feed_forward = Lfm2MLP(d, intermediate_size=d["intermediate_size"])
        else:
            self.feed_forward = Lfm2MoeSparseMoeBlock(d)
        self.operator_norm = R.LlamaRMSNorm(d["hidden_size"], eps=d["norm_eps"])
        self.ffn_norm = R.LlamaRMSNorm(d["hidden_size"], eps=d["norm_eps"])

    def forward(self, hidden_states, position_embeddings, past_key_values=None, cache_position=None):
        residual = hidden_states
        if self.is_attention_layer:
            hidden_states = self.self_attn(self.operator_norm(hidden_states), position_embeddings, past_key_values)
        else:
            hidden_states = self.conv(self.operator_norm(hidden_states), past_key_values, cache_position)
        hidden_states = hidden_states + residual
        hidden_states = hidden_states + self.feed_forward(self.ffn_norm(hidden_states))
        return hidden_states


class CausalLM(nn.Module):
    def __init__(self, cfg, attn_impl=None):
        super().__init__()
        d = cfg.d
        self.cfg, self.d = cfg, d
        self.attn_impl = attn_impl or "sdpa"
        self.gradient_checkpointing = False
        self.ckpt_every, self.ckpt_ops, self.ckpt_save_inputs = 1, False, False
        H, V = d["hidden_size"], d["vocab_size"]
        self.embed_tokens = nn.Embedding(V, H, d.get("pad_token_id"))
        self.layers = nn.ModuleList([Lfm2DecoderLayer(d, i, self.attn_impl) for i in range(d["num_hidden_layers"])])
        self.pos_emb = R.RotaryEmbedding(cfg, head_dim(d))
        self.embedding_norm = R.LlamaRMSNorm(H, eps=d["norm_eps"])
        self.lm_head = R.Linear(H, V, bias=False)
        if d["tie_word_embeddings"]:
            self.lm_head.weight = self.embed_tokens.weight

    def forward(self, input_ids, labels=None, past_key_values=None, cache_position=None, attention_mask=None,
                logits_to_keep=0, position_ids=None):
        """Lfm2ForCausalLM.forward (Lfm2MoeForCausalLM alike): `outputs = self.model(...)` (Lfm2Model.forward), then
        lm_head and the loss on `outputs.last_hidden_state`: Lfm2Model.forward's locals (inputs_embeds,
        cache_position, position_ids, the position embeddings) are freed when it returns, before the head
        (modeling_lfm2.py @0096ba4f66d4f5f7b1d4e162f8a75d0894b40ea8, Lfm2ForCausalLM.forward; issue 26: the replica
        kept them alive through the head and the loss)."""
        hidden_states = self._model_forward(input_ids, past_key_values, cache_position)
        slice_indices = slice(-logits_to_keep, None)
        logits = self.lm_head(hidden_states[:, slice_indices, :])
        loss = None
        if labels is not None:
            loss = R.for_causal_lm_loss(logits, labels, self.d["vocab_size"])
        return loss, logits

    def _model_forward(self, input_ids, past_key_values, cache_position):
        """Lfm2Model.forward: embedding_norm's output."""
        inputs_embeds = self.embed_tokens(input_ids)
        if cache_position is None:
            past = past_key_values.get_seq_length() if past_key_values is not None else 0
            cache_position = torch.arange(past, past + inputs_embeds.shape[1])
        position_ids = cache_position.unsqueeze(0)
        hidden_states = inputs_embeds
        position_embeddings = self.pos_emb(hidden_states, position_ids)
        for i, layer in enumerate(self.layers):
            if self.gradient_checkpointing and self.training and (i + 1) % self.ckpt_every == 0:
                hidden_states = R.vctorch._checkpoint2x(layer.__call__, hidden_states, position_embeddings)
            else:
                hidden_states = layer(hidden_states, position_embeddings, past_key_values, cache_position)
        return self.embedding_norm(hidden_states)
