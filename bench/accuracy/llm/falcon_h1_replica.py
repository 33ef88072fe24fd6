"""falcon_h1_replica.py -- TII Falcon-H1 (FalconH1ForCausalLM, model_type falcon_h1) as transformers runs it on a GPU
with the mamba_ssm and causal_conv1d kernels installed, for torch 1.13 on CPU (measure_llm.py on a config whose
model_type is falcon_h1). Issue 31: the truth for vramcalc's falcon_h1 row.

Written from huggingface/transformers models/falcon_h1/modeling_falcon_h1.py @
68c08116ff67bbc0b9a72179d72da9dc2355a4dc and configuration_falcon_h1.py @ 020a37d2, statement by statement;
nothing from vramcalc's engine was read for the modules:
  FalconH1Config: the class defaults below; __post_init__: num_key_value_heads None -> the heads, mamba_d_head
      "auto" -> mamba_intermediate // mamba_n_heads, mlp_multipliers None -> [1, 1], ssm_multipliers None -> [1] x 5
  FalconH1Mixer.cuda_kernels_forward (mamba_rms_norm false, the checkpoints'): hidden_states *
      ssm_in_multiplier; in_proj; projected_states * self.mup_vector; a decoding step: split, causal_conv1d_update
      (a new [B, conv_dim]), selective_state_update(..., z=gate) (a new [B, heads, head_dim]), out_proj;
      training without a cache: mamba_split_conv1d_scan_combined(..., rmsnorm_weight=None, outproj_bias=
      out_proj.bias); otherwise the split, the conv state (F.pad, then FalconHybridMambaAttentionDynamicCache.
      update_conv_state: roll, assignment, zero_, +=), causal_conv1d_fn, mamba_chunk_scan_combined(z=None), the ssm
      state's copy_, scan_output * silu(gate), out_proj
  FalconH1Attention.forward: q/k/v_proj(x).view(hidden_shape).transpose(1, 2), the key * key_multiplier, the
      rotary, past_key_values.update, the attention interface (sdpa: reference.sdpa_attention_forward), reshape,
      contiguous, o_proj
  FalconH1MLP.forward: up_proj(x) * act_fn(gate_proj(x) * gate_multiplier); down_proj(y) * down_multiplier
  FalconH1DecoderLayer.forward: residual; input_layernorm; mamba(h) * ssm_out_multiplier; self_attn(h *
      attention_in_multiplier) * attention_out_multiplier; mamba + attention; residual + that; pre_ff_layernorm;
      feed_forward; residual + that
  FalconH1Model.forward: embed_tokens(input_ids) * embedding_multiplier, rotary_emb, the layers (causal mask None
      under sdpa with an all-ones mask, mamba_mask None: _update_mamba_mask), final_layernorm; compute_mup_vector's
      [1, 1, in_proj width] buffer registered on every mixer (one tensor)
  FalconH1ForCausalLM.forward: lm_head(hidden_states[:, slice_indices, :]) * lm_head_multiplier; loss_function
  FalconHybridMambaAttentionDynamicCache: conv_states [B, conv_dim, d_conv] and ssm_states [B, heads, head_dim,
      state] zeros in the model's dtype for every layer, K/V kept at the first update and torch.cat after
The kernels' allocations are granite4_replica.py's (SplitConv1dScanCombined with norm_w None, chunk_scan_combined:
from state-spaces/mamba mamba_ssm/ops/triton/ssd_combined.py).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import granite4_replica as G
import reference as R

DEFAULTS = {  # FalconH1Config (configuration_falcon_h1.py @ 020a37d2)
    "vocab_size": 128000, "tie_word_embeddings": False, "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_act": "silu",
    "rms_norm_eps": 1e-5, "max_position_embeddings": 8192, "attention_dropout": 0.0, "mamba_d_ssm": 1024,
    "mamba_n_heads": 128, "mamba_d_head": "auto", "mamba_n_groups": 1, "mamba_d_state": 256, "mamba_d_conv": 4,
    "mamba_expand": 2, "mamba_chunk_size": 256, "mamba_conv_bias": True, "mamba_proj_bias": False,
    "mamba_rms_norm": False, "projectors_bias": False, "lm_head_multiplier": 1.0, "embedding_multiplier": 1.0,
    "mlp_multipliers": None, "key_multiplier": 1.0, "attention_out_multiplier": 1.0, "attention_in_multiplier": 1.0,
    "ssm_multipliers": None, "ssm_in_multiplier": 1.0, "ssm_out_multiplier": 1.0, "attention_bias": False,
    "mlp_bias": False, "rope_theta": 10000.0,
}


def resolve(raw):
    d = dict(DEFAULTS)
    d.update(raw)
    if d["num_key_value_heads"] is None:
        d["num_key_value_heads"] = d["num_attention_heads"]
    d["_inter"] = int(d["mamba_expand"] * d["hidden_size"]) if d["mamba_d_ssm"] is None else d["mamba_d_ssm"]
    if d["mamba_d_head"] == "auto":
        d["mamba_d_head"] = d["_inter"] // d["mamba_n_heads"]
    if d["mlp_multipliers"] is None:
        d["mlp_multipliers"] = [1.0, 1.0]
    if d["ssm_multipliers"] is None:
        d["ssm_multipliers"] = [1.0] * 5
    if d["mamba_rms_norm"]:
        raise SystemExit("falcon_h1_replica.py: mamba_rms_norm true (FalconH1RMSNormGated) is not replicated")
    d.setdefault("head_dim", d["hidden_size"] // d["num_attention_heads"])
    return d


def kv_bytes_per_token(d, elem):
    return d["num_hidden_layers"] * 2 * d["num_key_value_heads"] * d["head_dim"] * elem


def compute_mup_vector(d):
    inter, gts, nh = d["_inter"], d["mamba_n_groups"] * d["mamba_d_state"], d["mamba_n_heads"]
    m = d["ssm_multipliers"]
    v = torch.ones(1, 1, 2 * inter + 2 * gts + nh)
    v[:, :, :inter] *= m[0]
    v[:, :, inter:2 * inter] *= m[1]
    v[:, :, 2 * inter:2 * inter + gts] *= m[2]
    v[:, :, 2 * inter + gts:2 * inter + 2 * gts] *= m[3]
    v[:, :, 2 * inter + 2 * gts:] *= m[4]
    return v


class Mixer(G.MambaLayer):
    """FalconH1Mixer (mamba_rms_norm false: no self.norm)."""

    def __init__(self, d, layer_idx):
        nn.Module.__init__(self)
        H = d["hidden_size"]
        self.layer_idx = layer_idx
        self.num_heads, self.head_dim = d["mamba_n_heads"], d["mamba_d_head"]
        self.n_groups, self.ssm_state_size = d["mamba_n_groups"], d["mamba_d_state"]
        self.conv_kernel_size, self.chunk_size = d["mamba_d_conv"], d["mamba_chunk_size"]
        self.intermediate_size = d["_inter"]
        self.conv_dim = self.intermediate_size + 2 * self.n_groups * self.ssm_state_size
        self.conv1d = nn.Conv1d(self.conv_dim, self.conv_dim, self.conv_kernel_size, groups=self.conv_dim,
                                padding=self.conv_kernel_size - 1, bias=d["mamba_conv_bias"])
        self.in_proj = R.Linear(H, self.intermediate_size + self.conv_dim + self.num_heads, bias=d["mamba_proj_bias"])
        self.dt_bias = nn.Parameter(torch.ones(self.num_heads))
        self.A_log = nn.Parameter(torch.log(torch.arange(1, self.num_heads + 1).float()))
        self.D = nn.Parameter(torch.ones(self.num_heads))
        self.out_proj = R.Linear(self.intermediate_size, H, bias=d["projectors_bias"])
        self.ssm_in_multiplier = d["ssm_in_multiplier"]
        self.dims = (self.num_heads, self.head_dim, self.n_groups, self.ssm_state_size, self.chunk_size,
                     self.intermediate_size, self.conv_dim)

    def forward(self, hidden_states, cache_params=None, cache_position=None):
        hidden_states = hidden_states * self.ssm_in_multiplier
        projected_states = self.in_proj(hidden_states)
        projected_states = projected_states * self.mup_vector
        batch_size, seq_len, _ = hidden_states.shape
        use_precomputed_states = (cache_params is not None and cache_params.has_previous_state and seq_len == 1
                                  and cache_position is not None and cache_position[0] > 0)
        if use_precomputed_states:
            gate, hidden_states_B_C, dt = projected_states.squeeze(1).split(
                [self.intermediate_size, self.conv_dim, self.num_heads], dim=-1)
            hidden_states_B_C = torch.zeros_like(hidden_states_B_C)  # causal_conv1d_update: empty_like(x)
            cache_params.conv_states[self.layer_idx].zero_()
            hidden_states = hidden_states_B_C[..., :self.intermediate_size]  # hidden_states, B, C = torch.split(...)
            A = -torch.exp(self.A_log.float())
            # selective_state_update(..., z=gate): out = torch.empty_like(x) [B, heads, head_dim]; the state in place
            hs = hidden_states_B_C.new_zeros(batch_size, self.num_heads, self.head_dim)
            cache_params.ssm_states[self.layer_idx].zero_()
            del A
            hidden_states = hs.view(batch_size, self.num_heads * self.head_dim)
            return self.out_proj(hidden_states[:, None, ...])
        A = -torch.exp(self.A_log.float())
        if self.training and cache_params is None:
            return G.SplitConv1dScanCombined.apply(projected_states, self.conv1d.weight.squeeze(1), self.conv1d.bias,
                                                   self.dt_bias, A, self.D, None, self.out_proj.weight,
                                                   self.out_proj.bias, self.dims)
        _, gate, hidden_states_B_C, dt = projected_states.split(
            [0, self.intermediate_size, self.conv_dim, self.num_heads], dim=-1)
        if cache_params is not None:
            conv_states = F.pad(hidden_states_B_C.permute(0, 2, 1), (self.conv_kernel_size - hidden_states_B_C.shape[-2], 0))
            conv_state = cache_params.conv_states[self.layer_idx].roll(shifts=-1, dims=-1)  # update_conv_state
            conv_state[:, :, :] = conv_states
            cache_params.conv_states[self.layer_idx].zero_()
            cache_params.conv_states[self.layer_idx] += conv_state
            del conv_states, conv_state
        time_step = F.softplus(dt + self.dt_bias)
        hidden_states_B_C = hidden_states_B_C.new_zeros(batch_size, self.conv_dim, seq_len).transpose(1, 2)
        # hidden_states, B, C = torch.split(hidden_states_B_C, ...): the scaled input's last reference dropped
        hidden_states = hidden_states_B_C[..., :self.intermediate_size]
        scan_output, ssm_state = G.chunk_scan_combined(hidden_states_B_C, seq_len, self.dims)
        del time_step
        if cache_params is not None:
            cache_params.ssm_states[self.layer_idx].copy_(ssm_state.view_as(cache_params.ssm_states[self.layer_idx]))
        scan_output = scan_output.view(batch_size, seq_len, -1)
        out = scan_output * F.silu(gate)
        return self.out_proj(out)


class Attention(nn.Module):
    def __init__(self, d, layer_idx, attn_impl):
        super().__init__()
        H, nh, nkv = d["hidden_size"], d["num_attention_heads"], d["num_key_value_heads"]
        self.layer_idx = layer_idx
        self.head_dim = d["head_dim"]
        self.num_key_value_groups = nh // nkv
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = d["attention_dropout"]
        b = d["attention_bias"]
        self.q_proj = R.Linear(H, nh * self.head_dim, bias=b)
        self.k_proj = R.Linear(H, nkv * self.head_dim, bias=b)
        self.v_proj = R.Linear(H, nkv * self.head_dim, bias=b)
        self.o_proj = R.Linear(nh * self.head_dim, H, bias=b)
        self.key_multiplier = d["key_multiplier"]
        if attn_impl != "sdpa":
            raise ValueError("falcon_h1: sdpa only")

    def forward(self, hidden_states, position_embeddings, past_key_values=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2) * self.key_multiplier
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = R.apply_rotary_pos_emb(query_states, key_states, cos, sin)
        if past_key_values is not None:
            key_states, value_states = past_key_values.update(key_states, value_states, self.layer_idx)
        attn_output, _ = R.sdpa_attention_forward(self, query_states, key_states, value_states, None,
                                                  0.0 if not self.training else self.attention_dropout, self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class MLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        H, I, b = d["hidden_size"], d["intermediate_size"], d["mlp_bias"]
        self.gate_proj = R.Linear(H, I, bias=b)
        self.up_proj = R.Linear(H, I, bias=b)
        self.down_proj = R.Linear(I, H, bias=b)
        self.act_fn = R.act_fn(d["hidden_act"])
        self.gate_multiplier, self.down_multiplier = d["mlp_multipliers"]

    def forward(self, x):
        y = self.up_proj(x) * self.act_fn(self.gate_proj(x) * self.gate_multiplier)
        y = self.down_proj(y) * self.down_multiplier
        return y


class DecoderLayer(nn.Module):
    def __init__(self, d, layer_idx, attn_impl):
        super().__init__()
        self.feed_forward = MLP(d)
        self.mamba = Mixer(d, layer_idx)
        self.self_attn = Attention(d, layer_idx, attn_impl)
        self.attention_in_multiplier = d["attention_in_multiplier"]
        self.ssm_out_multiplier = d["ssm_out_multiplier"]
        self.attn_out_multiplier = d["attention_out_multiplier"]
        self.input_layernorm = R.LlamaRMSNorm(d["hidden_size"], eps=d["rms_norm_eps"])  # FalconH1RMSNorm: the same code
        self.pre_ff_layernorm = R.LlamaRMSNorm(d["hidden_size"], eps=d["rms_norm_eps"])

    def forward(self, hidden_states, position_embeddings, past_key_values=None, cache_position=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        mamba_hidden_states = self.mamba(hidden_states, past_key_values, cache_position)
        mamba_hidden_states = mamba_hidden_states * self.ssm_out_multiplier
        attention_hidden_states = self.self_attn(hidden_states * self.attention_in_multiplier, position_embeddings,
                                                 past_key_values)
        attention_hidden_states = attention_hidden_states * self.attn_out_multiplier
        hidden_states = mamba_hidden_states + attention_hidden_states
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.pre_ff_layernorm(hidden_states)
        hidden_states = self.feed_forward(hidden_states)
        return residual + hidden_states


class Cache(G.HybridMambaAttentionDynamicCache):
    """FalconHybridMambaAttentionDynamicCache: conv / ssm states for every layer, K/V (granite4_replica's update)."""

    def __init__(self, d, batch_size, dtype):
        self.has_previous_state = False
        n = d["num_hidden_layers"]
        cd = d["_inter"] + 2 * d["mamba_n_groups"] * d["mamba_d_state"]
        self.conv_states = [torch.zeros(batch_size, cd, d["mamba_d_conv"], dtype=dtype) for _ in range(n)]
        self.ssm_states = [torch.zeros(batch_size, d["mamba_n_heads"], d["mamba_d_head"], d["mamba_d_state"], dtype=dtype)
                           for _ in range(n)]
        self.key_cache = [torch.tensor([[]] * batch_size) for _ in range(n)]
        self.value_cache = [torch.tensor([[]] * batch_size) for _ in range(n)]
        self.attn = list(range(n))


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
        self.layers = nn.ModuleList([DecoderLayer(d, i, self.attn_impl) for i in range(d["num_hidden_layers"])])
        self.final_layernorm = R.LlamaRMSNorm(H, eps=d["rms_norm_eps"])
        self.rotary_emb = R.RotaryEmbedding(cfg, d["head_dim"])
        mup_vector = compute_mup_vector(d)
        for layer in self.layers:
            layer.mamba.register_buffer("mup_vector", mup_vector, persistent=False)
        self.lm_head = R.Linear(H, V, bias=False)
        if d["tie_word_embeddings"]:
            self.lm_head.weight = self.embed_tokens.weight

    def forward(self, input_ids, labels=None, past_key_values=None, cache_position=None, attention_mask=None,
                logits_to_keep=0, position_ids=None):
        """FalconH1ForCausalLM.forward: `outputs = self.model(...)` (FalconH1Model.forward), then lm_head,
        lm_head_multiplier and the loss on `outputs[0]`: FalconH1Model.forward's locals (inputs_embeds,
        cache_position, position_ids, the position embeddings) are freed when it returns, before the head
        (modeling_falcon_h1.py @68c08116ff67bbc0b9a72179d72da9dc2355a4dc, FalconH1ForCausalLM.forward; issue 26: the
        replica kept them alive through the head and the loss)."""
        hidden_states = self._model_forward(input_ids, past_key_values, cache_position)
        slice_indices = slice(-logits_to_keep, None)
        logits = self.lm_head(hidden_states[:, slice_indices, :]) * self.d["lm_head_multiplier"]
        loss = None
        if labels is not None:
            loss = R.for_causal_lm_loss(logits, labels, self.d["vocab_size"])
        return loss, logits

    def _model_forward(self, input_ids, past_key_values, cache_position):
        """FalconH1Model.forward: final_layernorm's output."""
        inputs_embeds = self.embed_tokens(input_ids) * self.d["embedding_multiplier"]
        hidden_states = inputs_embeds
        if cache_position is None:
            past = past_key_values.get_seq_length() if past_key_values is not None else 0
            cache_position = torch.arange(past, past + hidden_states.shape[1])
        position_ids = cache_position.unsqueeze(0)
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for i, layer in enumerate(self.layers):
            if self.gradient_checkpointing and self.training and (i + 1) % self.ckpt_every == 0:
                hidden_states = R.vctorch._checkpoint2x(layer.__call__, hidden_states, position_embeddings)
            else:
                hidden_states = layer(hidden_states, position_embeddings, past_key_values, cache_position)
        hidden_states = self.final_layernorm(hidden_states)
        if past_key_values is not None and not past_key_values.has_previous_state:
            past_key_values.has_previous_state = True
        return hidden_states
