"""Qwen3-Next (model_type qwen3_next) for the accuracy harness: the Gated DeltaNet layers, the
gated full attention and Qwen3NextDynamicCache, for torch 1.13 on CPU (reference.py builds its
CausalLM from these for qwen3_next; measure_llm.py makes the cache for --mode generate).

Written from huggingface/transformers at 7515843b617551b008901620ca58f1208bbc330d,
src/transformers/models/qwen3_next/modeling_qwen3_next.py (QN below), each class and function
named after the one it replicates, op for op:
  Qwen3NextRMSNormGated.forward, Qwen3NextRMSNorm (x.float() * (1 + weight.float()), type_as),
  Qwen3NextDynamicCache (update: the first call keeps key_states / value_states themselves,
    later ones torch.cat; conv_states / recurrent_states per layer; has_previous_state),
  apply_rotary_pos_emb (partial: rotary_dim = cos.shape[-1], cat with the pass-through part),
  Qwen3NextAttention.forward (q_proj -> query and gate by torch.chunk, gate.reshape, q_norm /
    k_norm per head, the attention, attn_output * torch.sigmoid(gate), o_proj),
  torch_causal_conv1d_update, l2norm, torch_chunk_gated_delta_rule,
  torch_recurrent_gated_delta_rule, Qwen3NextGatedDeltaNet (fix_query_key_value_ordering,
    forward: the path without causal_conv1d and fla, is_fast_path_available False),
  Qwen3NextDecoderLayer.forward.
Only the torch path is replicated: with the `fla` package transformers runs fla's Triton
chunk_gated_delta_rule instead (a CUDA autograd.Function), which this file does not replicate.
The attention itself is reference.py's sdpa_attention_forward (the harness's SDPA math port).
torch 1.13 has every op used here (F.softplus, repeat_interleave, tril/triu, F.pad, conv1d).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

import qwen3vl_replica  # MRoPE: Qwen3VLTextRotaryEmbedding, which Qwen3_5TextRotaryEmbedding inherits
import reference as R


class Qwen3NextRMSNorm(nn.Module):
    """QN Qwen3NextRMSNorm: zeros weight, (x.float() normed) * (1.0 + weight.float()), type_as(x)."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(dim))

    def _norm(self, x):
        # .mean(-1, keepdim=True) with 2.x's MeanBackward1 (reference.py's vctorch.mean2x)
        return x * torch.rsqrt(R.vctorch.mean2x(x.pow(2), -1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float())
        output = output * (1.0 + self.weight.float())
        return output.type_as(x)


class Qwen3NextRMSNormGated(nn.Module):
    """QN Qwen3NextRMSNormGated.forward (norm before gate)."""

    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states, gate=None):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = R.vctorch.mean2x(hidden_states.pow(2), -1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        hidden_states = self.weight * hidden_states.to(input_dtype)
        hidden_states = hidden_states * F.silu(gate.to(torch.float32))
        return hidden_states.to(input_dtype)


def layer_types(cfg):
    """Qwen3NextConfig.__post_init__ (configuration_qwen3_next.py @008e5743): layer_types, else
    "linear_attention" if (i + 1) % full_attention_interval else "full_attention"."""
    lt = cfg.d.get("layer_types")
    if lt:
        return list(lt)
    k = cfg.d.get("full_attention_interval", 4)
    return ["linear_attention" if (i + 1) % k else "full_attention" for i in range(cfg.num_hidden_layers)]


class Qwen3NextDynamicCache:
    """QN Qwen3NextDynamicCache: key_cache / value_cache on the full-attention layers (the first
    update stores the states themselves, later updates torch.cat on dim 2), conv_states and
    recurrent_states on the linear ones (set by Qwen3NextGatedDeltaNet.forward)."""

    def __init__(self, cfg):
        self.layer_types = layer_types(cfg)
        n = len(self.layer_types)
        self.transformer_layers = [i for i in range(n) if self.layer_types[i] == "full_attention"]
        self.last_linear_layer = n - 1 - self.layer_types[::-1].index("linear_attention")
        self.conv_states = [None] * n
        self.recurrent_states = [None] * n
        self.key_cache = [None] * n
        self.value_cache = [None] * n

    def update(self, key_states, value_states, layer_idx):
        if self.key_cache[layer_idx] is None:
            self.key_cache[layer_idx] = key_states
            self.value_cache[layer_idx] = value_states
        else:
            self.key_cache[layer_idx] = torch.cat([self.key_cache[layer_idx], key_states], dim=2)
            self.value_cache[layer_idx] = torch.cat([self.value_cache[layer_idx], value_states], dim=2)
        return self.key_cache[layer_idx], self.value_cache[layer_idx]

    def get_seq_length(self, layer_idx=0):
        layer_idx = self.transformer_layers[0] if layer_idx not in self.transformer_layers else layer_idx
        if self.key_cache[layer_idx] is None:
            return 0
        return self.key_cache[layer_idx].shape[-2]

    @property
    def has_previous_state(self):
        return self.conv_states[self.last_linear_layer] is not None


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    """QN apply_rotary_pos_emb (partial rotary: the first cos.shape[-1] dims rotated)."""
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    rotary_dim = cos.shape[-1]
    q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]
    k_rot, k_pass = k[..., :rotary_dim], k[..., rotary_dim:]
    q_embed = (q_rot * cos) + (R.rotate_half(q_rot) * sin)
    k_embed = (k_rot * cos) + (R.rotate_half(k_rot) * sin)
    q_embed = torch.cat([q_embed, q_pass], dim=-1)
    k_embed = torch.cat([k_embed, k_pass], dim=-1)
    return q_embed, k_embed


class Qwen3NextAttention(nn.Module):
    """QN Qwen3NextAttention: q_proj gives num_heads * head_dim * 2 (query and gate)."""

    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        self.layer_idx = layer_idx
        self.attn_impl = attn_impl
        self.head_dim = cfg.head_dim or cfg.hidden_size // cfg.num_attention_heads
        self.num_key_value_groups = cfg.num_attention_heads // cfg.num_key_value_heads
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = cfg.attention_dropout
        H, nh, nkv, hd, b = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, self.head_dim, cfg.attention_bias
        self.q_proj = R.Linear(H, nh * hd * 2, bias=b)
        self.k_proj = R.Linear(H, nkv * hd, bias=b)
        self.v_proj = R.Linear(H, nkv * hd, bias=b)
        self.o_proj = R.Linear(nh * hd, H, bias=b)
        self.q_norm = Qwen3NextRMSNorm(hd, eps=cfg.rms_norm_eps)
        self.k_norm = Qwen3NextRMSNorm(hd, eps=cfg.rms_norm_eps)

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key_values=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states, gate = torch.chunk(self.q_proj(hidden_states).view(*input_shape, -1, self.head_dim * 2), 2, dim=-1)
        gate = gate.reshape(*input_shape, -1)
        query_states = self.q_norm(query_states.view(hidden_shape)).transpose(1, 2)
        key_states = self.k_norm(self.k_proj(hidden_states).view(hidden_shape)).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        if past_key_values is not None:
            key_states, value_states = past_key_values.update(key_states, value_states, self.layer_idx)
        dropout = 0.0 if not self.training else self.attention_dropout
        if self.attn_impl == "eager":
            attn_output, _ = R.eager_attention_forward(self, query_states, key_states, value_states, attention_mask,
                                                       self.scaling, dropout)
        else:
            attn_output, _ = R.sdpa_attention_forward(self, query_states, key_states, value_states, attention_mask,
                                                      dropout, self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = attn_output * torch.sigmoid(gate)
        attn_output = self.o_proj(attn_output)
        return attn_output


def torch_causal_conv1d_update(hidden_states, conv_state, weight, bias=None, activation=None):
    """QN torch_causal_conv1d_update."""
    _, hidden_size, seq_len = hidden_states.shape
    state_len = conv_state.shape[-1]
    hidden_states_new = torch.cat([conv_state, hidden_states], dim=-1).to(weight.dtype)
    conv_state.copy_(hidden_states_new[:, :, -state_len:])
    out = F.conv1d(hidden_states_new, weight.unsqueeze(1), bias, padding=0, groups=hidden_size)
    out = F.silu(out[:, :, -seq_len:])
    out = out.to(hidden_states.dtype)
    return out


def l2norm(x, dim=-1, eps=1e-6):
    """QN l2norm."""
    inv_norm = torch.rsqrt((x * x).sum(dim=dim, keepdim=True) + eps)
    return x * inv_norm


def torch_chunk_gated_delta_rule(query, key, value, g, beta, chunk_size=64, initial_state=None,
                                 output_final_state=False, use_qk_l2norm_in_kernel=False):
    """QN torch_chunk_gated_delta_rule."""
    initial_dtype = query.dtype
    if use_qk_l2norm_in_kernel:
        query = l2norm(query, dim=-1, eps=1e-6)
        key = l2norm(key, dim=-1, eps=1e-6)
    query, key, value, beta, g = [x.transpose(1, 2).contiguous().to(torch.float32) for x in (query, key, value, beta, g)]
    batch_size, num_heads, sequence_length, k_head_dim = key.shape
    v_head_dim = value.shape[-1]
    pad_size = (chunk_size - sequence_length % chunk_size) % chunk_size
    query = F.pad(query, (0, 0, 0, pad_size))
    key = F.pad(key, (0, 0, 0, pad_size))
    value = F.pad(value, (0, 0, 0, pad_size))
    beta = F.pad(beta, (0, pad_size))
    g = F.pad(g, (0, pad_size))
    total_sequence_length = sequence_length + pad_size
    scale = 1 / (query.shape[-1] ** 0.5)
    query = query * scale
    v_beta = value * beta.unsqueeze(-1)
    k_beta = key * beta.unsqueeze(-1)
    query, key, value, k_beta, v_beta = [x.reshape(x.shape[0], x.shape[1], -1, chunk_size, x.shape[-1])
                                         for x in (query, key, value, k_beta, v_beta)]
    g = g.reshape(g.shape[0], g.shape[1], -1, chunk_size)
    mask = torch.triu(torch.ones(chunk_size, chunk_size, dtype=torch.bool, device=query.device), diagonal=0)
    g = g.cumsum(dim=-1)
    decay_mask = ((g.unsqueeze(-1) - g.unsqueeze(-2)).tril().exp().float()).tril()
    attn = -((k_beta @ key.transpose(-1, -2)) * decay_mask).masked_fill(mask, 0)
    for i in range(1, chunk_size):
        row = attn[..., i, :i].clone()
        sub = attn[..., :i, :i].clone()
        attn[..., i, :i] = row + (row.unsqueeze(-1) * sub).sum(-2)
    attn = attn + torch.eye(chunk_size, dtype=attn.dtype, device=attn.device)
    value = attn @ v_beta
    k_cumdecay = attn @ (k_beta * g.exp().unsqueeze(-1))
    last_recurrent_state = (torch.zeros(batch_size, num_heads, k_head_dim, v_head_dim).to(value)
                            if initial_state is None else initial_state.to(value))
    core_attn_out = torch.zeros_like(value)
    mask = torch.triu(torch.ones(chunk_size, chunk_size, dtype=torch.bool, device=query.device), diagonal=1)
    for i in range(0, total_sequence_length // chunk_size):
        q_i, k_i, v_i = query[:, :, i], key[:, :, i], value[:, :, i]
        attn = (q_i @ k_i.transpose(-1, -2) * decay_mask[:, :, i]).masked_fill_(mask, 0)
        v_prime = (k_cumdecay[:, :, i]) @ last_recurrent_state
        v_new = v_i - v_prime
        attn_inter = (q_i * g[:, :, i, :, None].exp()) @ last_recurrent_state
        core_attn_out[:, :, i] = attn_inter + attn @ v_new
        last_recurrent_state = (last_recurrent_state * g[:, :, i, -1, None, None].exp()
                                + (k_i * (g[:, :, i, -1, None] - g[:, :, i]).exp()[..., None]).transpose(-1, -2) @ v_new)
    if not output_final_state:
        last_recurrent_state = None
    core_attn_out = core_attn_out.reshape(core_attn_out.shape[0], core_attn_out.shape[1], -1, core_attn_out.shape[-1])
    core_attn_out = core_attn_out[:, :, :sequence_length]
    core_attn_out = core_attn_out.transpose(1, 2).contiguous().to(initial_dtype)
    return core_attn_out, last_recurrent_state


def torch_recurrent_gated_delta_rule(query, key, value, g, beta, initial_state, output_final_state,
                                     use_qk_l2norm_in_kernel=False):
    """QN torch_recurrent_gated_delta_rule."""
    initial_dtype = query.dtype
    if use_qk_l2norm_in_kernel:
        query = l2norm(query, dim=-1, eps=1e-6)
        key = l2norm(key, dim=-1, eps=1e-6)
    query, key, value, beta, g = [x.transpose(1, 2).contiguous().to(torch.float32) for x in (query, key, value, beta, g)]
    batch_size, num_heads, sequence_length, k_head_dim = key.shape
    v_head_dim = value.shape[-1]
    scale = 1 / (query.shape[-1] ** 0.5)
    query = query * scale
    core_attn_out = torch.zeros(batch_size, num_heads, sequence_length, v_head_dim).to(value)
    last_recurrent_state = (torch.zeros(batch_size, num_heads, k_head_dim, v_head_dim).to(value)
                            if initial_state is None else initial_state.to(value))
    for i in range(sequence_length):
        q_t = query[:, :, i]
        k_t = key[:, :, i]
        v_t = value[:, :, i]
        g_t = g[:, :, i].exp().unsqueeze(-1).unsqueeze(-1)
        beta_t = beta[:, :, i].unsqueeze(-1)
        last_recurrent_state = last_recurrent_state * g_t
        kv_mem = (last_recurrent_state * k_t.unsqueeze(-1)).sum(dim=-2)
        delta = (v_t - kv_mem) * beta_t
        last_recurrent_state = last_recurrent_state + k_t.unsqueeze(-1) * delta.unsqueeze(-2)
        core_attn_out[:, :, i] = (last_recurrent_state * q_t.unsqueeze(-1)).sum(dim=-2)
    if not output_final_state:
        last_recurrent_state = None
    core_attn_out = core_attn_out.transpose(1, 2).contiguous().to(initial_dtype)
    return core_attn_out, last_recurrent_state


class Qwen3NextGatedDeltaNet(nn.Module):
    """QN Qwen3NextGatedDeltaNet (torch path: causal_conv1d_fn None, the torch rules)."""

    def __init__(self, cfg, layer_idx):
        super().__init__()
        self.hidden_size = cfg.hidden_size
        self.num_v_heads = cfg.d.get("linear_num_value_heads", 32)
        self.num_k_heads = cfg.d.get("linear_num_key_heads", 16)
        self.head_k_dim = cfg.d.get("linear_key_head_dim", 128)
        self.head_v_dim = cfg.d.get("linear_value_head_dim", 128)
        self.key_dim = self.head_k_dim * self.num_k_heads
        self.value_dim = self.head_v_dim * self.num_v_heads
        self.conv_kernel_size = cfg.d.get("linear_conv_kernel_dim", 4)
        self.layer_idx = layer_idx
        self.conv_dim = self.key_dim * 2 + self.value_dim
        self.conv1d = nn.Conv1d(in_channels=self.conv_dim, out_channels=self.conv_dim, bias=False,
                                kernel_size=self.conv_kernel_size, groups=self.conv_dim,
                                padding=self.conv_kernel_size - 1)
        self.in_proj_qkvz = R.Linear(self.hidden_size, self.key_dim * 2 + self.value_dim * 2, bias=False)
        self.in_proj_ba = R.Linear(self.hidden_size, self.num_v_heads * 2, bias=False)
        self.dt_bias = nn.Parameter(torch.ones(self.num_v_heads))
        A = torch.empty(self.num_v_heads).uniform_(0, 16)
        self.A_log = nn.Parameter(torch.log(A))
        self.norm = Qwen3NextRMSNormGated(self.head_v_dim, eps=cfg.rms_norm_eps)
        self.out_proj = R.Linear(self.value_dim, self.hidden_size, bias=False)

    def fix_query_key_value_ordering(self, mixed_qkvz, mixed_ba):
        nk, nv = self.num_k_heads, self.num_v_heads
        mixed_qkvz = mixed_qkvz.view(*mixed_qkvz.size()[:-1], nk, 2 * self.head_k_dim + 2 * self.head_v_dim * nv // nk)
        mixed_ba = mixed_ba.view(*mixed_ba.size()[:-1], nk, 2 * nv // nk)
        split_qkvz = [self.head_k_dim, self.head_k_dim, nv // nk * self.head_v_dim, nv // nk * self.head_v_dim]
        query, key, value, z = torch.split(mixed_qkvz, split_qkvz, dim=3)
        b, a = torch.split(mixed_ba, [nv // nk, nv // nk], dim=3)
        value = value.reshape(value.size(0), value.size(1), -1, self.head_v_dim)
        z = z.reshape(z.size(0), z.size(1), -1, self.head_v_dim)
        b = b.reshape(b.size(0), b.size(1), nv)
        a = a.reshape(a.size(0), a.size(1), nv)
        return query, key, value, z, b, a

    def forward(self, hidden_states, cache_params=None, cache_position=None, attention_mask=None):
        # apply_mask_to_padding_states: a no-op without a mask (or with one row / one token)
        if attention_mask is not None and attention_mask.shape[1] > 1 and attention_mask.shape[0] > 1:
            dtype = hidden_states.dtype
            hidden_states = (hidden_states * attention_mask[:, :, None]).to(dtype)
        batch_size, seq_len, _ = hidden_states.shape
        use_precomputed_states = (cache_params is not None and cache_params.has_previous_state and seq_len == 1
                                  and cache_position is not None)
        if cache_params is not None:
            conv_state = cache_params.conv_states[self.layer_idx]
            recurrent_state = cache_params.recurrent_states[self.layer_idx]
        projected_states_qkvz = self.in_proj_qkvz(hidden_states)
        projected_states_ba = self.in_proj_ba(hidden_states)
        query, key, value, z, b, a = self.fix_query_key_value_ordering(projected_states_qkvz, projected_states_ba)
        query, key, value = (x.reshape(x.shape[0], x.shape[1], -1) for x in (query, key, value))
        mixed_qkv = torch.cat((query, key, value), dim=-1)
        mixed_qkv = mixed_qkv.transpose(1, 2)
        if use_precomputed_states:
            mixed_qkv = torch_causal_conv1d_update(mixed_qkv, conv_state, self.conv1d.weight.squeeze(1), self.conv1d.bias,
                                                   "silu")
        else:
            if cache_params is not None:
                conv_state = F.pad(mixed_qkv, (self.conv_kernel_size - mixed_qkv.shape[-1], 0))
                cache_params.conv_states[self.layer_idx] = conv_state
            mixed_qkv = F.silu(self.conv1d(mixed_qkv)[:, :, :seq_len])
        mixed_qkv = mixed_qkv.transpose(1, 2)
        query, key, value = torch.split(mixed_qkv, [self.key_dim, self.key_dim, self.value_dim], dim=-1)
        query = query.reshape(query.shape[0], query.shape[1], -1, self.head_k_dim)
        key = key.reshape(key.shape[0], key.shape[1], -1, self.head_k_dim)
        value = value.reshape(value.shape[0], value.shape[1], -1, self.head_v_dim)
        beta = b.sigmoid()
        g = -self.A_log.float().exp() * F.softplus(a.float() + self.dt_bias)
        if self.num_v_heads // self.num_k_heads > 1:
            query = query.repeat_interleave(self.num_v_heads // self.num_k_heads, dim=2)
            key = key.repeat_interleave(self.num_v_heads // self.num_k_heads, dim=2)
        if not use_precomputed_states:
            core_attn_out, last_recurrent_state = torch_chunk_gated_delta_rule(
                query, key, value, g=g, beta=beta, initial_state=None, output_final_state=cache_params is not None,
                use_qk_l2norm_in_kernel=True)
        else:
            core_attn_out, last_recurrent_state = torch_recurrent_gated_delta_rule(
                query, key, value, g=g, beta=beta, initial_state=recurrent_state,
                output_final_state=cache_params is not None, use_qk_l2norm_in_kernel=True)
        if cache_params is not None:
            cache_params.recurrent_states[self.layer_idx] = last_recurrent_state
        z_shape_og = z.shape
        core_attn_out = core_attn_out.reshape(-1, core_attn_out.shape[-1])
        z = z.reshape(-1, z.shape[-1])
        core_attn_out = self.norm(core_attn_out, z)
        core_attn_out = core_attn_out.reshape(z_shape_og)
        core_attn_out = core_attn_out.reshape(core_attn_out.shape[0], core_attn_out.shape[1], -1)
        output = self.out_proj(core_attn_out)
        return output


class Qwen3NextDecoderLayer(nn.Module):
    """QN Qwen3NextDecoderLayer: linear_attn or self_attn by layer_types; mlp Qwen3NextMLP (LlamaMLP's
    ops, reference.GatedMLP) on mlp_only_layers / num_experts 0 / off decoder_sparse_step, else the
    sparse block with its shared expert (transformers 5's stacked experts: moe_v5_replica.py's
    Qwen2MoeSparseMoeBlock, the same router and shared-expert gate)."""

    def __init__(self, cfg, layer_idx, attn_impl):
        super().__init__()
        self.layer_type = layer_types(cfg)[layer_idx]
        if self.layer_type == "linear_attention":
            self.linear_attn = Qwen3NextGatedDeltaNet(cfg, layer_idx)
        else:
            self.self_attn = Qwen3NextAttention(cfg, layer_idx, attn_impl)
        E = cfg.d.get("num_experts", 512)
        if layer_idx not in (cfg.d.get("mlp_only_layers") or []) and E > 0 and (layer_idx + 1) % cfg.d.get("decoder_sparse_step", 1) == 0:
            import moe_v5_replica
            if cfg.d.get("_experts_implementation") != "grouped_mm":
                raise ValueError("qwen3_next's experts are replicated as transformers 5's: --experts grouped_mm")
            self.mlp = moe_v5_replica.Qwen2MoeSparseMoeBlock(
                cfg, R.act_fn(cfg.hidden_act), R.GatedMLP(cfg, cfg.hidden_act, cfg.shared_expert_intermediate_size), R.Linear)
        else:
            self.mlp = R.GatedMLP(cfg, cfg.hidden_act)
        self.input_layernorm = Qwen3NextRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.post_attention_layernorm = Qwen3NextRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)

    def forward(self, hidden_states, attention_mask, position_embeddings, past_key_value=None, cache_len=0,
                last_cache_position=0, cache_position=None, linear_attn_mask=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        if self.layer_type == "linear_attention":
            hidden_states = self.linear_attn(hidden_states, cache_params=past_key_value, cache_position=cache_position,
                                             attention_mask=linear_attn_mask)
        else:
            hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask, past_key_value)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = residual + hidden_states
        return hidden_states


# ---------------------------------------------------------------------------------------------------
# Qwen3.5 / Qwen3.6 (model_type qwen3_5, qwen3_5_moe), written from huggingface/transformers
# src/transformers/models/qwen3_5/modular_qwen3_5.py @ 8940358af7421e958995b05136ca14ce54bef39c (Q35
# below), models/qwen3_5_moe/modular_qwen3_5_moe.py @ e36255cb9af68ea2c16fefd6b1c798882cafda16 (Q35M)
# and models/qwen3_vl/modeling_qwen3_vl.py @ 68a7b7e272a36928120316249af3ee3cac595818 (QVL: the classes
# Q35 inherits), each class named after the one it replicates; what Q35 takes unchanged from
# modeling_qwen3_next.py (Qwen3NextAttention, Qwen3NextRMSNorm(Gated), the torch delta rules,
# torch_causal_conv1d_update, Qwen3NextDynamicCache) is the code above.
# ---------------------------------------------------------------------------------------------------

class Qwen3_5GatedDeltaNet(Qwen3NextGatedDeltaNet):
    """Q35 Qwen3_5GatedDeltaNet: Qwen3NextGatedDeltaNet's modules with in_proj_qkv [2 key_dim +
    value_dim], in_proj_z [value_dim], in_proj_b and in_proj_a [num_v_heads] in place of in_proj_qkvz and
    in_proj_ba (built here without the two it deletes), and its forward: no fix_query_key_value_ordering,
    mixed_qkv the projection itself."""

    def __init__(self, cfg, layer_idx):
        nn.Module.__init__(self)
        self.hidden_size = cfg.hidden_size
        self.num_v_heads = cfg.d.get("linear_num_value_heads", 32)
        self.num_k_heads = cfg.d.get("linear_num_key_heads", 16)
        self.head_k_dim = cfg.d.get("linear_key_head_dim", 128)
        self.head_v_dim = cfg.d.get("linear_value_head_dim", 128)
        self.key_dim = self.head_k_dim * self.num_k_heads
        self.value_dim = self.head_v_dim * self.num_v_heads
        self.conv_kernel_size = cfg.d.get("linear_conv_kernel_dim", 4)
        self.layer_idx = layer_idx
        self.conv_dim = self.key_dim * 2 + self.value_dim
        self.conv1d = nn.Conv1d(in_channels=self.conv_dim, out_channels=self.conv_dim, bias=False,
                                kernel_size=self.conv_kernel_size, groups=self.conv_dim,
                                padding=self.conv_kernel_size - 1)
        self.dt_bias = nn.Parameter(torch.ones(self.num_v_heads))
        A = torch.empty(self.num_v_heads).uniform_(0, 16)
        self.A_log = nn.Parameter(torch.log(A))
        self.norm = Qwen3NextRMSNormGated(self.head_v_dim, eps=cfg.rms_norm_eps)
        self.out_proj = R.Linear(self.value_dim, self.hidden_size, bias=False)
        self.in_proj_qkv = R.Linear(self.hidden_size, self.key_dim * 2 + self.value_dim, bias=False)
        self.in_proj_z = R.Linear(self.hidden_size, self.value_dim, bias=False)
        self.in_proj_b = R.Linear(self.hidden_size, self.num_v_heads, bias=False)
        self.in_proj_a = R.Linear(self.hidden_size, self.num_v_heads, bias=False)

    def forward(self, hidden_states, cache_params=None, cache_position=None, attention_mask=None):
        # apply_mask_to_padding_states: a no-op without a mask (or with one row / one token)
        if attention_mask is not None and attention_mask.shape[1] > 1 and attention_mask.shape[0] > 1:
            dtype = hidden_states.dtype
            hidden_states = (hidden_states * attention_mask[:, :, None]).to(dtype)
        batch_size, seq_len, _ = hidden_states.shape
        use_precomputed_states = (cache_params is not None and cache_params.has_previous_state and seq_len == 1
                                  and cache_position is not None)
        if cache_params is not None:
            conv_state = cache_params.conv_states[self.layer_idx]
            recurrent_state = cache_params.recurrent_states[self.layer_idx]
        mixed_qkv = self.in_proj_qkv(hidden_states)
        mixed_qkv = mixed_qkv.transpose(1, 2)
        z = self.in_proj_z(hidden_states)
        z = z.reshape(batch_size, seq_len, -1, self.head_v_dim)
        b = self.in_proj_b(hidden_states)
        a = self.in_proj_a(hidden_states)
        if use_precomputed_states:
            mixed_qkv = torch_causal_conv1d_update(mixed_qkv, conv_state, self.conv1d.weight.squeeze(1), self.conv1d.bias,
                                                   "silu")
        else:
            if cache_params is not None:
                conv_state = F.pad(mixed_qkv, (self.conv_kernel_size - mixed_qkv.shape[-1], 0))
                cache_params.conv_states[self.layer_idx] = conv_state
            mixed_qkv = F.silu(self.conv1d(mixed_qkv)[:, :, :seq_len])
        mixed_qkv = mixed_qkv.transpose(1, 2)
        query, key, value = torch.split(mixed_qkv, [self.key_dim, self.key_dim, self.value_dim], dim=-1)
        query = query.reshape(batch_size, seq_len, -1, self.head_k_dim)
        key = key.reshape(batch_size, seq_len, -1, self.head_k_dim)
        value = value.reshape(batch_size, seq_len, -1, self.head_v_dim)
        beta = b.sigmoid()
        g = -self.A_log.float().exp() * F.softplus(a.float() + self.dt_bias)
        if self.num_v_heads // self.num_k_heads > 1:
            query = query.repeat_interleave(self.num_v_heads // self.num_k_heads, dim=2)
            key = key.repeat_interleave(self.num_v_heads // self.num_k_heads, dim=2)
        if not use_precomputed_states:
            core_attn_out, last_recurrent_state = torch_chunk_gated_delta_rule(
                query, key, value, g=g, beta=beta, initial_state=None, output_final_state=cache_params is not None,
                use_qk_l2norm_in_kernel=True)
        else:
            core_attn_out, last_recurrent_state = torch_recurrent_gated_delta_rule(
                query, key, value, g=g, beta=beta, initial_state=recurrent_state,
                output_final_state=cache_params is not None, use_qk_l2norm_in_kernel=True)
        if cache_params is not None:
            cache_params.recurrent_states[self.layer_idx] = last_recurrent_state
        core_attn_out = core_attn_out.reshape(-1, self.head_v_dim)
        z = z.reshape(-1, self.head_v_dim)
        core_attn_out = self.norm(core_attn_out, z)
        core_attn_out = core_attn_out.reshape(batch_size, seq_len, -1)
        output = self.out_proj(core_attn_out)
        return output


class Qwen3_5DecoderLayer(Qwen3NextDecoderLayer):
    """Q35 Qwen3_5DecoderLayer: linear_attn (Qwen3_5GatedDeltaNet) or self_attn (Qwen3NextAttention) by
    layer_types, mlp a Qwen3_5MLP(intermediate_size) (LlamaMLP's ops, reference.GatedMLP) on every layer;
    Q35M Qwen3_5MoeDecoderLayer: Qwen3NextSparseMoeBlock on every layer (Qwen3_5MoeTopKRouter, Qwen3-VL-MoE's
    router, renormalizes the top-k: norm_topk_prob True; stacked experts, moe_v5_replica.py). The forward
    is Qwen3NextDecoderLayer's."""

    def __init__(self, cfg, layer_idx, attn_impl):
        nn.Module.__init__(self)
        self.layer_type = layer_types(cfg)[layer_idx]
        if self.layer_type == "linear_attention":
            self.linear_attn = Qwen3_5GatedDeltaNet(cfg, layer_idx)
        else:
            self.self_attn = Qwen3NextAttention(cfg, layer_idx, attn_impl)
        if cfg.model_type == "qwen3_5_moe":
            import moe_v5_replica
            if cfg.d.get("_experts_implementation") != "grouped_mm":
                raise ValueError("qwen3_5_moe's experts are replicated as transformers 5's: --experts grouped_mm")
            cfg.d["norm_topk_prob"] = True
            self.mlp = moe_v5_replica.Qwen2MoeSparseMoeBlock(
                cfg, R.act_fn(cfg.hidden_act), R.GatedMLP(cfg, cfg.hidden_act, cfg.shared_expert_intermediate_size), R.Linear)
        else:
            self.mlp = R.GatedMLP(cfg, cfg.hidden_act)
        self.input_layernorm = Qwen3NextRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.post_attention_layernorm = Qwen3NextRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)


class Qwen3_5TextRotaryEmbedding(qwen3vl_replica.MRoPE):
    """Q35 Qwen3_5TextRotaryEmbedding (QVL Qwen3VLTextRotaryEmbedding.forward, apply_interleaved_mrope):
    inv_freq of int(head_dim x rope_parameters' partial_rotary_factor) dims, the 3-D position ids
    (Qwen3_5TextModel.forward: cache_position.view(1, 1, -1).expand(3, batch, -1) without images),
    freqs [3, B, L, dim / 2] in float32, the H and W sections written into freqs[0] in place, cat,
    cos / sin x attention_scaling, .to(x.dtype): qwen3vl_replica.MRoPE's forward, as the class inherits it."""

    def __init__(self, cfg, head_dim):
        nn.Module.__init__(self)
        rp = cfg.d.get("rope_parameters") or {}
        base = rp.get("rope_theta", cfg.d.get("rope_theta", 10000.0))
        dim = int(head_dim * rp.get("partial_rotary_factor", cfg.d.get("partial_rotary_factor", 0.25)))
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.attention_scaling = 1.0
        self.mrope_section = rp.get("mrope_section", [11, 11, 10])


class Qwen3_5VisionModel(nn.Module):
    """Q35 Qwen3_5VisionModel (QVL Qwen3VLVisionModel less deepstack_merger_list) as built, its forward not
    run (no images): patch_embed.proj nn.Conv3d(in_channels, hidden, [T, P, P], bias=True), pos_embed
    nn.Embedding(num_position_embeddings, hidden), rotary_pos_emb (Qwen3VLVisionRotaryEmbedding(head_dim
    // 2): the inv_freq buffer), blocks (Qwen3VLVisionBlock: norm1, norm2 nn.LayerNorm(hidden, eps=1e-6),
    attn.qkv / attn.proj, mlp.linear_fc1 / linear_fc2, nn.Linear with biases), merger
    (Qwen3VLVisionPatchMerger(use_postshuffle_norm=False): norm nn.LayerNorm(hidden), linear_fc1
    (hidden x merge^2, square), linear_fc2 to out_hidden_size). Frozen, as vramcalc models a VLM's tower
    (LLaMA-Factory's freeze_vision_tower default; src/hf/hf_vision.c)."""

    def __init__(self, v):
        super().__init__()
        C, I, NH = v.get("hidden_size", 1152), v.get("intermediate_size", 4304), v.get("num_heads", 16)
        P, T, M = v.get("patch_size", 16), v.get("temporal_patch_size", 2), v.get("spatial_merge_size", 2)
        cin, npos, out = v.get("in_channels", 3), v.get("num_position_embeddings", 2304), v.get("out_hidden_size", 3584)
        self.patch_embed = nn.Module()
        self.patch_embed.proj = nn.Conv3d(cin, C, kernel_size=[T, P, P], stride=[T, P, P], bias=True)
        self.pos_embed = nn.Embedding(npos, C)
        rdim = (C // NH) // 2
        self.rotary_pos_emb = nn.Module()
        self.rotary_pos_emb.register_buffer(
            "inv_freq", 1.0 / (10000.0 ** (torch.arange(0, rdim, 2, dtype=torch.float) / rdim)), persistent=False)
        self.blocks = nn.ModuleList()
        for _ in range(v.get("depth", 27)):
            blk = nn.Module()
            blk.norm1 = nn.LayerNorm(C, eps=1e-6)
            blk.norm2 = nn.LayerNorm(C, eps=1e-6)
            blk.attn = nn.Module()
            blk.attn.qkv = nn.Linear(C, 3 * C, bias=True)
            blk.attn.proj = nn.Linear(C, C)
            blk.mlp = nn.Module()
            blk.mlp.linear_fc1 = nn.Linear(C, I, bias=True)
            blk.mlp.linear_fc2 = nn.Linear(I, C, bias=True)
            self.blocks.append(blk)
        H4 = C * M * M
        self.merger = nn.Module()
        self.merger.norm = nn.LayerNorm(C, eps=1e-6)
        self.merger.linear_fc1 = nn.Linear(H4, H4)
        self.merger.linear_fc2 = nn.Linear(H4, out)
        self.requires_grad_(False)
