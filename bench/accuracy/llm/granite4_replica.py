"""granite4_replica.py -- IBM Granite 4.0-H (GraniteMoeHybridForCausalLM, model_type granitemoehybrid) as
transformers runs it on a GPU with the mamba_ssm and causal_conv1d kernels installed, for torch 1.13 on CPU
(measure_llm.py on a config whose model_type is granitemoehybrid). Issue 31: the truth for vramcalc's
granitemoehybrid row.

Written from huggingface/transformers models/granitemoehybrid/modeling_granitemoehybrid.py @
00511f5df3b63c48b31496072ec35d6ff3ffa6c6 and configuration_granitemoehybrid.py @ 008f5c8c, statement by
statement; nothing from vramcalc's engine was read for the modules:
  GraniteMoeHybridAttention.forward: q/k/v_proj(x).view(hidden_shape).transpose(1, 2); rotary only with
      position_embeddings (position_embedding_type "rope"); past_key_values.update; the attention interface
      (sdpa: reference.sdpa_attention_forward) with scaling = attention_multiplier; reshape, contiguous, o_proj
  HybridMambaAttentionDynamicCache: conv_states [B, conv_dim, d_conv] and ssm_states [B, heads, head_dim,
      state] zeros in the model's dtype for each mamba layer (made before the prefill by
      prepare_inputs_for_generation); update: the first call keeps key_states / value_states themselves,
      later ones torch.cat
  GraniteMoeHybridMambaLayer.cuda_kernels_forward (is_fast_path_available with the weights on a GPU):
      in_proj; training without a cache: A = -exp(A_log.float()), mamba_split_conv1d_scan_combined;
      otherwise projected_states.split, causal_conv1d_fn (or causal_conv1d_update on a decoding step),
      mamba_chunk_scan_combined / selective_state_update, the caches' copy_, self.norm(scan_output, gate),
      out_proj
  GraniteMoeHybridRMSNormGated.forward (x.to(fp32) * silu(gate.to(fp32)), the RMS, .to(dtype), * weight),
  GraniteMoeHybridMLP (input_linear, chunk(2), act * , output_linear), GraniteMoeHybridParallelExperts
      (split, F.linear per expert with weight[i], cat), GraniteMoeHybridTopKGating, GraniteMoeHybridMoE,
  GraniteMoeHybridDecoderLayer.forward (residual + h * residual_multiplier twice; moe + shared_mlp),
  GraniteMoeHybridModel.forward (embed_tokens * embedding_multiplier, rotary_emb when "rope", layers, norm;
      the sdpa causal mask and mamba_mask None: no padding), GraniteMoeHybridForCausalLM.forward (lm_head,
      logits / logits_scaling, loss_function).

The mamba_ssm / causal_conv1d kernels cannot run here (CUDA / Triton). Their allocations are replayed
(torch.zeros of the sizes and dtypes, in the order the source makes them, the values irrelevant to a
memory count) from state-spaces/mamba mamba_ssm/ops/triton/ssd_combined.py (mamba_ssm 2.x):
  MambaSplitConv1dScanCombinedFn.forward: xBC_conv (causal_conv1d_fwd) [B, L, conv_dim]; in
      _mamba_chunk_scan_combined_fwd: dA_cumsum and dt [B, heads, chunks, chunk] fp32 (_chunk_cumsum_fwd),
      the chunk states [B, chunks, heads, head_dim, state] fp32 (_chunk_state_fwd), the passed states (C's
      dtype) and the final states [B, heads, head_dim x state] fp32 (_state_passing_fwd), CB [B, chunks,
      groups, chunk, chunk] fp32 (_bmm_chunk_fwd, freed at the return), out_x [B, L, heads, head_dim]
      (_chunk_scan_fwd); _layer_norm_fwd's out [B L, intermediate] and rstd [groups x B L] fp32; F.linear;
      save_for_backward(zxbcdt, ..., out_x, ..., rstd, ...);
  its backward: out_recompute, xBC_conv recomputed, dzxbcdt, dxBC, dout = F.linear(dout, W.t()),
      _layer_norm_bwd's dx and the norm weight's gradient, then _mamba_chunk_scan_combined_bwd's dt clone and
      its fp32 dA_cumsum, dt, ddt, CB, states and dstates alive together (the largest set of that function, as
      read) with dD, dA and ddt_bias, which it makes; once it returned the out_proj weight's (einsum) and bias's
      gradients, then causal_conv1d_bwd_function's conv weight and bias gradients (ssd_combined.py and
      layernorm_gated.py read @ e9594ce1c732d97440f0332fdc43170a2294dbfa). These backward sizes are what was
      read from the source, not a measurement of the kernels:
      the cases check vramcalc's bookkeeping around them (the layer's saved tensors, the rest of the model),
      not the kernels' own allocations (which would need the GPU).
  mamba_chunk_scan_combined (no grad: inference, prefill): the same forward tensors, returning out and the
      final states; causal_conv1d_update / selective_state_update: a new output, the state updated in place.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import reference as R

DEFAULTS = {  # GraniteMoeHybridConfig.__init__
    "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": None, "hidden_act": "silu", "max_position_embeddings": 2048,
    "rms_norm_eps": 1e-6, "tie_word_embeddings": False, "rope_theta": 10000.0, "attention_bias": False,
    "attention_dropout": 0.0, "embedding_multiplier": 1.0, "logits_scaling": 1.0, "residual_multiplier": 1.0,
    "attention_multiplier": 1.0, "num_local_experts": 8, "num_experts_per_tok": 2, "shared_intermediate_size": 1024,
    "position_embedding_type": None, "layer_types": None, "mamba_n_heads": 128, "mamba_n_groups": 1,
    "mamba_d_state": 256, "mamba_d_head": "auto", "mamba_d_conv": 4, "mamba_expand": 2, "mamba_chunk_size": 256,
    "mamba_conv_bias": True, "mamba_proj_bias": False,
}


def resolve(raw):
    d = dict(DEFAULTS)
    d.update(raw)
    inter = int(d["mamba_expand"] * d["hidden_size"])
    if d["mamba_d_head"] == "auto":
        d["mamba_d_head"] = inter // d["mamba_n_heads"]
    if d["layer_types"] is None:
        d["layer_types"] = ["mamba"] * d["num_hidden_layers"]
    return d


def kv_bytes_per_token(d, elem):
    return d["layer_types"].count("attention") * 2 * d["num_key_value_heads"] * (
        d["hidden_size"] // d["num_attention_heads"]) * elem


class SplitConv1dScanCombined(torch.autograd.Function):
    """MambaSplitConv1dScanCombinedFn's allocations (module docstring). norm_w None (falcon_h1_replica.py,
    rmsnorm_weight=None): _mamba_chunk_scan_combined_fwd(..., z=z) returns out (out_x x silu(z)) beside out_x, rstd
    None, and the backward has no _layer_norm_bwd."""

    @staticmethod
    def forward(ctx, zx, conv_w, conv_b, dt_bias, A, D, norm_w, out_w, out_b, dims):
        B, L, _ = zx.shape
        H, P, G, N, C, Di, CD = dims
        nc = -(-L // C)
        xc = zx.new_zeros(B, L, CD)
        da = torch.zeros(B, H, nc, C)
        dto = torch.zeros(B, H, nc, C)
        s32 = torch.zeros(B, nc, H, P, N)
        sp = zx.new_zeros(B, nc, H, P * N)
        fin = torch.zeros(B, H, P * N)
        del s32
        cb = torch.zeros(B, nc, G, C, C)
        out_x = zx.new_zeros(B, L, H, P)
        if norm_w is None:  # _chunk_scan_fwd's out beside out_x, CB alive to the return
            nrm = zx.new_zeros(B * L, Di)
        del cb
        if norm_w is not None:
            nrm = zx.new_zeros(B * L, Di)
        rstd = torch.zeros(G * B * L) if norm_w is not None else None
        out = F.linear(nrm.view(B, L, Di), out_w, out_b)
        ctx.save_for_backward(zx, conv_w, conv_b, out_x, A, D, dt_bias, norm_w, rstd, out_w, out_b)
        ctx.dims = dims
        del xc, da, dto, sp, fin, nrm
        return out

    @staticmethod
    def backward(ctx, dout):
        zx, conv_w, conv_b, out_x, A, D, dt_bias, norm_w, rstd, out_w, out_b = ctx.saved_tensors
        H, P, G, N, C, Di, CD = ctx.dims
        B, L, _ = zx.shape
        nc = -(-L // C)
        out_recompute = zx.new_zeros(B, L, Di)
        xc = zx.new_zeros(B, L, CD)
        dzx = torch.zeros_like(zx)
        dxbc = zx.new_zeros(B, L, CD)
        dout_og = dout
        dout = F.linear(dout, out_w.t())
        dx_rms = zx.new_zeros(B * L, Di) if norm_w is not None else None
        # _layer_norm_bwd's dw = _dw.sum(0).to(weight.dtype) (layernorm_gated.py @ e9594ce1): made before the scan's
        # backward, alive through it
        dnorm = None if norm_w is None else torch.zeros_like(norm_w)
        # _mamba_chunk_scan_combined_bwd (ssd_combined.py @ e9594ce1): dt_in = dt.clone(), its fp32 locals; dD
        # (_chunk_scan_chunk_state_bwd_dx) and dA, ddt_bias (_chunk_cumsum_bwd, its last call) made while they live
        dt_in = zx.new_zeros(B, L, H)
        f32 = torch.zeros(3 * B * H * nc * C + B * nc * G * C * C + 2 * B * nc * H * P * N)
        dD = torch.zeros_like(D)
        dA = torch.zeros_like(A)
        ddt_bias = torch.zeros_like(dt_bias)
        del dt_in, f32
        # after it returns: doutproj_weight (einsum), doutproj_bias, then causal_conv1d_bwd_function's dweight, dbias
        doutproj = torch.einsum("bso,bsd->od", dout_og, out_recompute)
        doutproj_b = None if out_b is None else torch.zeros_like(out_b)
        dconv_w = torch.zeros_like(conv_w)
        dconv_b = torch.zeros_like(conv_b) if conv_b is not None else None
        del out_recompute, xc, dxbc, dout, dx_rms
        return (dzx, dconv_w, dconv_b, ddt_bias, dA, dD, dnorm, doutproj, doutproj_b, None)


def chunk_scan_combined(x_like, L, dims):
    """mamba_chunk_scan_combined(..., z=None, return_final_states=True) under no_grad: (out, final_states)."""
    H, P, G, N, C, Di, CD = dims
    B = x_like.shape[0]
    nc = -(-L // C)
    da = torch.zeros(B, H, nc, C)
    dto = torch.zeros(B, H, nc, C)
    s32 = torch.zeros(B, nc, H, P, N)
    sp = x_like.new_zeros(B, nc, H, P * N)
    fin = torch.zeros(B, H, P * N)
    del s32
    cb = torch.zeros(B, nc, G, C, C)
    out = x_like.new_zeros(B, L, H, P)
    del cb, da, dto, sp
    return out, fin


class RMSNormGated(nn.Module):
    """GraniteMoeHybridRMSNormGated.forward (gate before the norm)."""

    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states, gate=None):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        if gate is not None:
            hidden_states = hidden_states * F.silu(gate.to(torch.float32))
        variance = R.vctorch.mean2x(hidden_states.pow(2), -1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class MambaLayer(nn.Module):
    def __init__(self, d, layer_idx):
        super().__init__()
        H = d["hidden_size"]
        self.layer_idx = layer_idx
        self.num_heads, self.head_dim = d["mamba_n_heads"], d["mamba_d_head"]
        self.n_groups, self.ssm_state_size = d["mamba_n_groups"], d["mamba_d_state"]
        self.conv_kernel_size, self.chunk_size = d["mamba_d_conv"], d["mamba_chunk_size"]
        self.intermediate_size = int(d["mamba_expand"] * H)
        self.conv_dim = self.intermediate_size + 2 * self.n_groups * self.ssm_state_size
        self.conv1d = nn.Conv1d(self.conv_dim, self.conv_dim, self.conv_kernel_size, groups=self.conv_dim,
                                padding=self.conv_kernel_size - 1, bias=d["mamba_conv_bias"])
        self.in_proj = R.Linear(H, self.intermediate_size + self.conv_dim + self.num_heads, bias=d["mamba_proj_bias"])
        self.dt_bias = nn.Parameter(torch.ones(self.num_heads))
        self.A_log = nn.Parameter(torch.log(torch.arange(1, self.num_heads + 1).float()))
        self.norm = RMSNormGated(self.intermediate_size, eps=d["rms_norm_eps"])
        self.D = nn.Parameter(torch.ones(self.num_heads))
        self.out_proj = R.Linear(self.intermediate_size, H, bias=d["mamba_proj_bias"])
        self.dims = (self.num_heads, self.head_dim, self.n_groups, self.ssm_state_size, self.chunk_size,
                     self.intermediate_size, self.conv_dim)

    def forward(self, hidden_states, cache_params=None, cache_position=None):
        projected_states = self.in_proj(hidden_states)
        batch_size, seq_len, _ = hidden_states.shape
        use_precomputed_states = (cache_params is not None and cache_params.has_previous_state and seq_len == 1
                                  and cache_position is not None and cache_position[0] > 0)
        if use_precomputed_states:
            gate, hidden_states_B_C, dt = projected_states.squeeze(1).split(
                [self.intermediate_size, self.conv_dim, self.num_heads], dim=-1)
            # causal_conv1d_update: out = torch.empty_like(x); the conv state updated in place
            hidden_states_B_C = torch.zeros_like(hidden_states_B_C)
            cache_params.conv_states[self.layer_idx].zero_()
            A = -torch.exp(self.A_log.float())
            # selective_state_update: out = torch.empty_like(x) [B, heads, head_dim]; the state in place
            hs = hidden_states_B_C.new_zeros(batch_size, self.num_heads, self.head_dim)
            cache_params.ssm_states[self.layer_idx].zero_()
            del A
            hidden_states = hs.view(batch_size, self.num_heads * self.head_dim)
            hidden_states = self.norm(hidden_states, gate)
            return self.out_proj(hidden_states)[:, None, ...]
        A = -torch.exp(self.A_log.float())
        if self.training and cache_params is None:
            return SplitConv1dScanCombined.apply(projected_states, self.conv1d.weight.squeeze(1), self.conv1d.bias,
                                                 self.dt_bias, A, self.D, self.norm.weight, self.out_proj.weight,
                                                 self.out_proj.bias, self.dims)
        gate, hidden_states_B_C, dt = projected_states.split(
            [self.intermediate_size, self.conv_dim, self.num_heads], dim=-1)
        if cache_params is not None:
            t = hidden_states_B_C.transpose(1, 2)
            conv_states = F.pad(t, (self.conv_kernel_size - t.shape[-1], 0))
            cache_params.conv_states[self.layer_idx].copy_(conv_states)
            del conv_states, t
        # causal_conv1d_fn(x=hidden_states_B_C.transpose(1, 2), ...): a new [B, conv_dim, L], transposed back
        hidden_states_B_C = hidden_states_B_C.new_zeros(batch_size, self.conv_dim, seq_len).transpose(1, 2)
        scan_output, ssm_state = chunk_scan_combined(hidden_states_B_C, seq_len, self.dims)
        if cache_params is not None:
            cache_params.ssm_states[self.layer_idx].copy_(ssm_state.view_as(cache_params.ssm_states[self.layer_idx]))
        scan_output = scan_output.view(batch_size, seq_len, -1)
        scan_output = self.norm(scan_output, gate)
        return self.out_proj(scan_output)


class Attention(nn.Module):
    def __init__(self, d, layer_idx, attn_impl):
        super().__init__()
        H, nh, nkv = d["hidden_size"], d["num_attention_heads"], d["num_key_value_heads"]
        self.layer_idx = layer_idx
        self.head_dim = H // nh
        self.num_key_value_groups = nh // nkv
        self.scaling = d["attention_multiplier"]
        self.attention_dropout = d["attention_dropout"]
        b = d["attention_bias"]
        self.q_proj = R.Linear(H, nh * self.head_dim, bias=b)
        self.k_proj = R.Linear(H, nkv * self.head_dim, bias=b)
        self.v_proj = R.Linear(H, nkv * self.head_dim, bias=b)
        self.o_proj = R.Linear(nh * self.head_dim, H, bias=b)
        if attn_impl != "sdpa":
            raise ValueError("granitemoehybrid: sdpa only")

    def forward(self, hidden_states, position_embeddings, past_key_values=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        if position_embeddings is not None:
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
        self.input_linear = R.Linear(d["hidden_size"], d["shared_intermediate_size"] * 2, bias=False)
        self.output_linear = R.Linear(d["shared_intermediate_size"], d["hidden_size"], bias=False)
        self.activation = R.act_fn(d["hidden_act"])

    def forward(self, hidden_states):
        hidden_states = self.input_linear(hidden_states)
        chunked_hidden_states = hidden_states.chunk(2, dim=-1)
        hidden_states = self.activation(chunked_hidden_states[0]) * chunked_hidden_states[1]
        return self.output_linear(hidden_states)


class ParallelExperts(nn.Module):
    def __init__(self, num_experts, input_size, output_size):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(num_experts, output_size, input_size).normal_(0, 0.02))
        self.num_experts = num_experts

    def forward(self, inputs, expert_size):
        input_list = inputs.split(expert_size, dim=0)
        output_list = []
        for i in range(self.num_experts):
            output_list.append(R.vctorch.linear2x(input_list[i], self.weight[i], None))
        results = torch.cat(output_list, dim=0)
        return results


class TopKGating(nn.Module):
    def __init__(self, input_size, num_experts, top_k):
        super().__init__()
        self.num_experts, self.top_k = num_experts, top_k
        self.layer = R.Linear(input_size, num_experts, bias=False)

    def forward(self, hidden_states):
        logits = self.layer(hidden_states).float()
        top_k_logits, top_k_indices = logits.topk(self.top_k, dim=1)
        top_k_gates = torch.softmax(top_k_logits, dim=1).type_as(hidden_states)
        zeros = torch.zeros([top_k_gates.size(0), self.num_experts], dtype=top_k_gates.dtype)
        gates = zeros.scatter(1, top_k_indices, 1)
        expert_size = gates.long().sum(0)
        expert_size = expert_size.tolist()
        top_k_experts = top_k_indices.flatten()
        _, index_sorted_experts = top_k_experts.sort(0)
        batch_index = index_sorted_experts.div(self.top_k, rounding_mode="trunc")
        top_k_gates = top_k_gates.flatten()
        batch_gates = top_k_gates[index_sorted_experts]
        return index_sorted_experts, batch_index, batch_gates, expert_size, logits


class MoE(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.input_size, self.hidden_size = d["hidden_size"], d["intermediate_size"]
        self.activation = R.act_fn(d["hidden_act"])
        self.input_linear = ParallelExperts(d["num_local_experts"], self.input_size, self.hidden_size * 2)
        self.output_linear = ParallelExperts(d["num_local_experts"], self.hidden_size, self.input_size)
        self.router = TopKGating(self.input_size, d["num_local_experts"], d["num_experts_per_tok"])

    def forward(self, layer_input):
        bsz, length, emb_size = layer_input.size()
        layer_input = layer_input.reshape(-1, emb_size)
        _, batch_index, batch_gates, expert_size, _ = self.router(layer_input)
        expert_inputs = layer_input[batch_index]
        hidden_states = self.input_linear(expert_inputs, expert_size)
        chunked_hidden_states = hidden_states.chunk(2, dim=-1)
        hidden_states = self.activation(chunked_hidden_states[0]) * chunked_hidden_states[1]
        expert_outputs = self.output_linear(hidden_states, expert_size)
        expert_outputs = expert_outputs * batch_gates[:, None]
        zeros = torch.zeros((bsz * length, self.input_size), dtype=expert_outputs.dtype)
        layer_output = zeros.index_add(0, batch_index, expert_outputs)
        return layer_output.view(bsz, length, self.input_size)


class DecoderLayer(nn.Module):
    def __init__(self, d, layer_idx, attn_impl):
        super().__init__()
        H = d["hidden_size"]
        self.input_layernorm = R.LlamaRMSNorm(H, eps=d["rms_norm_eps"])
        self.post_attention_layernorm = R.LlamaRMSNorm(H, eps=d["rms_norm_eps"])
        self.block_sparse_moe = MoE(d) if d["num_local_experts"] > 0 else None
        self.residual_multiplier = d["residual_multiplier"]
        self.shared_mlp = MLP(d)
        self.mamba = MambaLayer(d, layer_idx) if d["layer_types"][layer_idx] == "mamba" else None
        self.self_attn = None if self.mamba is not None else Attention(d, layer_idx, attn_impl)

    def forward(self, hidden_states, position_embeddings, past_key_values=None, cache_position=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        if self.mamba is not None:
            hidden_states = self.mamba(hidden_states, past_key_values, cache_position)
        else:
            hidden_states = self.self_attn(hidden_states, position_embeddings, past_key_values)
        hidden_states = residual + hidden_states * self.residual_multiplier
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        if self.block_sparse_moe is not None:
            moe_hidden_states = self.block_sparse_moe(hidden_states)
            hidden_states = moe_hidden_states + self.shared_mlp(hidden_states)
        else:
            hidden_states = self.shared_mlp(hidden_states)
        return residual + hidden_states * self.residual_multiplier


class HybridMambaAttentionDynamicCache:
    def __init__(self, d, batch_size, dtype):
        self.has_previous_state = False
        self.conv_states, self.ssm_states, self.key_cache, self.value_cache = [], [], [], []
        inter = int(d["mamba_expand"] * d["hidden_size"])
        for t in d["layer_types"]:
            if t == "mamba":
                self.conv_states.append(torch.zeros(batch_size, inter + 2 * d["mamba_n_groups"] * d["mamba_d_state"],
                                                    d["mamba_d_conv"], dtype=dtype))
                self.ssm_states.append(torch.zeros(batch_size, d["mamba_n_heads"], d["mamba_d_head"], d["mamba_d_state"],
                                                   dtype=dtype))
            else:
                self.conv_states.append(torch.tensor([[]] * batch_size))
                self.ssm_states.append(torch.tensor([[]] * batch_size))
            self.key_cache.append(torch.tensor([[]] * batch_size))
            self.value_cache.append(torch.tensor([[]] * batch_size))
        self.attn = [i for i, t in enumerate(d["layer_types"]) if t == "attention"]

    def update(self, key_states, value_states, layer_idx):
        if self.key_cache[layer_idx].shape[-1] == 0:
            self.key_cache[layer_idx] = key_states
            self.value_cache[layer_idx] = value_states
        else:
            self.key_cache[layer_idx] = torch.cat([self.key_cache[layer_idx], key_states], dim=2)
            self.value_cache[layer_idx] = torch.cat([self.value_cache[layer_idx], value_states], dim=2)
        return self.key_cache[layer_idx], self.value_cache[layer_idx]

    def get_seq_length(self, layer_idx=0):
        layer_idx = self.attn[0] if self.attn and layer_idx not in self.attn else layer_idx
        if self.key_cache[layer_idx].shape[-1] == 0:
            return 0
        return self.key_cache[layer_idx].shape[-2]


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
        self.norm = R.LlamaRMSNorm(H, eps=d["rms_norm_eps"])
        self.rotary_emb = R.RotaryEmbedding(cfg, H // d["num_attention_heads"]) \
            if d["position_embedding_type"] == "rope" else None
        self.lm_head = R.Linear(H, V, bias=False)
        if d["tie_word_embeddings"]:
            self.lm_head.weight = self.embed_tokens.weight

    def forward(self, input_ids, labels=None, past_key_values=None, cache_position=None, attention_mask=None,
                logits_to_keep=0, position_ids=None):
        """GraniteMoeHybridForCausalLM.forward: `outputs = self.model(...)` (GraniteMoeHybridModel.forward), then
        lm_head, logits_scaling and the loss on `outputs.last_hidden_state`: the inner forward's locals
        (inputs_embeds, cache_position, position_ids, the position embeddings) are freed when it returns, before the
        head (modeling_granitemoehybrid.py @00511f5df3b63c48b31496072ec35d6ff3ffa6c6,
        GraniteMoeHybridForCausalLM.forward; issue 26: the replica kept them alive through the head and the loss)."""
        hidden_states = self._model_forward(input_ids, past_key_values, cache_position)
        slice_indices = slice(-logits_to_keep, None)
        logits = self.lm_head(hidden_states[:, slice_indices, :])
        logits = logits / self.d["logits_scaling"]
        loss = None
        if labels is not None:
            loss = R.for_causal_lm_loss(logits, labels, self.d["vocab_size"])
        return loss, logits

    def _model_forward(self, input_ids, past_key_values, cache_position):
        """GraniteMoeHybridModel.forward: the final norm's output."""
        inputs_embeds = self.embed_tokens(input_ids)
        inputs_embeds = inputs_embeds * self.d["embedding_multiplier"]
        if cache_position is None:
            past = past_key_values.get_seq_length() if past_key_values is not None else 0
            cache_position = torch.arange(past, past + inputs_embeds.shape[1])
        position_ids = cache_position.unsqueeze(0)
        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids) if self.rotary_emb is not None else None
        for i, layer in enumerate(self.layers):
            if self.gradient_checkpointing and self.training and (i + 1) % self.ckpt_every == 0:
                hidden_states = R.vctorch._checkpoint2x(layer.__call__, hidden_states, position_embeddings)
            else:
                hidden_states = layer(hidden_states, position_embeddings, past_key_values, cache_position)
        hidden_states = self.norm(hidden_states)
        if past_key_values is not None and not past_key_values.has_previous_state:
            past_key_values.has_previous_state = True
        return hidden_states
