"""nemotron_h_replica.py -- NVIDIA Nemotron-H (NemotronHForCausalLM, model_type nemotron_h) as transformers runs it
on a GPU with the mamba_ssm and causal_conv1d kernels installed, for torch 1.13 on CPU (measure_llm.py on a config
whose model_type is nemotron_h). Issue 31: the truth for vramcalc's nemotron_h row.

Written from huggingface/transformers models/nemotron_h/modeling_nemotron_h.py @
008d9e9577b0eb0149aa6bb0c44da582b10e0b6e and configuration_nemotron_h.py @ 13923c63, statement by statement;
nothing from vramcalc's engine was read for the modules:
  NemotronHConfig: the class defaults below; __post_init__: mamba_n_groups, mamba_d_conv, mamba_expand,
      mamba_conv_bias, mamba_chunk_size override n_groups, conv_kernel, expand, use_conv_bias, chunk_size;
      hybrid_override_pattern ('M' mamba, '*' attention, '-' mlp, 'E' moe) the layer list when
      layers_block_type is not given
  NemotronHBlock.forward: residual = hidden_states; hidden_states = self.norm(hidden_states.to(
      self.norm.weight.dtype)); one mixer; residual + hidden_states
  NemotronHMamba2Mixer: intermediate = mamba_num_heads x mamba_head_dim, conv_dim = intermediate + 2 n_groups x
      ssm_state_size, in_proj / out_proj with use_bias, conv1d with use_conv_bias, dt_bias, A_log, D,
      norm = Zamba2RMSNormGated(intermediate, group_size = intermediate // n_groups); cuda_kernels_forward:
      granite4_replica.py's MambaLayer.forward, the same statements (training without a cache:
      mamba_split_conv1d_scan_combined with ngroups = n_groups; otherwise the split, causal_conv1d_fn,
      mamba_chunk_scan_combined, the caches' copies, self.norm(scan_output, gate), out_proj; a decoding step:
      causal_conv1d_update, selective_state_update)
  Zamba2RMSNormGated.forward (models/zamba2/modeling_zamba2.py, imported by modeling_nemotron_h.py):
      x.to(fp32) * silu(gate.to(fp32)), view [..., groups, group_size], pow(2).mean(-1, keepdim), * rsqrt,
      view back, weight * x.to(input_dtype)
  NemotronHAttention.forward: q/k/v_proj(x).view(hidden_shape).transpose(1, 2) (bias False, head_dim from the
      config, scaling head_dim ** -0.5, no rotary embedding); past_key_values.update; the attention interface
      (sdpa: reference.sdpa_attention_forward); reshape, contiguous, o_proj
  NemotronHMLP.forward: down_proj(act_fn(up_proj(x))), act_fn ACT2FN["relu2"] = ReLUSquaredActivation
      (activations.py: relu_applied = relu(input); torch.square(relu_applied))
  NemotronHModel.forward: embeddings, the blocks (mamba_mask None: no padding), norm_f
  NemotronHForCausalLM.forward: logits = self.lm_head(hidden_states[:, slice_indices, :]).float(); the
      loss_function (ForCausalLMLoss)
The kernels' allocations are granite4_replica.py's (SplitConv1dScanCombined, chunk_scan_combined: from
state-spaces/mamba mamba_ssm/ops/triton/ssd_combined.py). The cache: transformers @ 008d9e95 builds
DynamicCache(config=self.config) in NemotronHModel.forward; its Mamba layers' states are taken as
HybridMambaAttentionDynamicCache's (zeros [B, conv_dim, d_conv] and [B, heads, head_dim, state] in the model's
dtype, made before the prefill), the cache_utils.py of that commit not read.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import granite4_replica as G
import reference as R

DEFAULTS = {  # NemotronHConfig (configuration_nemotron_h.py @ 13923c63)
    "vocab_size": 131072, "hidden_size": 4096, "layers_block_type": None, "tie_word_embeddings": False,
    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 4096,
    "attention_bias": False, "attention_dropout": 0.0, "intermediate_size": 21504, "mlp_hidden_act": "relu2",
    "mlp_bias": False, "ssm_state_size": 128, "mamba_num_heads": 128, "mamba_head_dim": 64,
    "mamba_hidden_act": "silu", "n_groups": 8, "conv_kernel": 4, "expand": 2, "use_conv_bias": True,
    "chunk_size": 128, "use_bias": False, "layer_norm_epsilon": 1e-5, "residual_in_fp32": False,
}
LEGACY = {"mamba_n_groups": "n_groups", "mamba_d_conv": "conv_kernel", "mamba_expand": "expand",
          "mamba_conv_bias": "use_conv_bias", "mamba_chunk_size": "chunk_size"}
PATTERN = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
NAMES = {"linear_attention": "mamba", "full_attention": "attention"}


def resolve(raw):
    d = dict(DEFAULTS)
    d.update(raw)
    for old, new in LEGACY.items():
        if old in raw:
            d[new] = raw[old]
    types = d.get("layers_block_type") or d.get("layer_types")
    if types is None:
        types = [PATTERN[c] for c in d.get("hybrid_override_pattern",
                                           "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-")]
    d["layers_block_type"] = [NAMES.get(t, t) for t in types]
    if "moe" in d["layers_block_type"]:
        raise SystemExit("nemotron_h_replica.py: NemotronHMoE layers are not replicated")
    d["num_hidden_layers"] = len(d["layers_block_type"])
    if d["num_key_value_heads"] is None:
        d["num_key_value_heads"] = d["num_attention_heads"]
    return d


def kv_bytes_per_token(d, elem):
    return d["layers_block_type"].count("attention") * 2 * d["num_key_value_heads"] * d["head_dim"] * elem


class Zamba2RMSNormGated(nn.Module):
    def __init__(self, hidden_size, group_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps
        self.group_size = group_size

    def forward(self, hidden_states, gate=None):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        if gate is not None:
            hidden_states = hidden_states * F.silu(gate.to(torch.float32))
        *prefix_dims, last_dim = hidden_states.shape
        group_count = last_dim // self.group_size
        hidden_states_group = hidden_states.view(*prefix_dims, group_count, self.group_size)
        variance = R.vctorch.mean2x(hidden_states_group.pow(2), -1, keepdim=True)
        hidden_states_group = hidden_states_group * torch.rsqrt(variance + self.variance_epsilon)
        hidden_states = hidden_states_group.view(*prefix_dims, group_count * self.group_size)
        return self.weight * hidden_states.to(input_dtype)


class Mamba2Mixer(G.MambaLayer):
    """NemotronHMamba2Mixer: its modules; its cuda_kernels_forward is granite4_replica.MambaLayer.forward."""

    def __init__(self, d, layer_idx):
        nn.Module.__init__(self)
        H = d["hidden_size"]
        self.layer_idx = layer_idx
        self.num_heads, self.head_dim = d["mamba_num_heads"], d["mamba_head_dim"]
        self.n_groups, self.ssm_state_size = d["n_groups"], d["ssm_state_size"]
        self.conv_kernel_size, self.chunk_size = d["conv_kernel"], d["chunk_size"]
        self.intermediate_size = self.num_heads * self.head_dim
        self.conv_dim = self.intermediate_size + 2 * self.n_groups * self.ssm_state_size
        self.conv1d = nn.Conv1d(self.conv_dim, self.conv_dim, self.conv_kernel_size, groups=self.conv_dim,
                                padding=self.conv_kernel_size - 1, bias=d["use_conv_bias"])
        self.in_proj = R.Linear(H, self.intermediate_size + self.conv_dim + self.num_heads, bias=d["use_bias"])
        self.dt_bias = nn.Parameter(torch.ones(self.num_heads))
        self.A_log = nn.Parameter(torch.log(torch.arange(1, self.num_heads + 1).float()))
        self.norm = Zamba2RMSNormGated(self.intermediate_size, self.intermediate_size // self.n_groups,
                                       eps=d["layer_norm_epsilon"])
        self.D = nn.Parameter(torch.ones(self.num_heads))
        self.out_proj = R.Linear(self.intermediate_size, H, bias=d["use_bias"])
        self.dims = (self.num_heads, self.head_dim, self.n_groups, self.ssm_state_size, self.chunk_size,
                     self.intermediate_size, self.conv_dim)


class Attention(nn.Module):
    def __init__(self, d, layer_idx, attn_impl):
        super().__init__()
        H, nh, nkv = d["hidden_size"], d["num_attention_heads"], d["num_key_value_heads"]
        self.layer_idx = layer_idx
        self.head_dim = d["head_dim"]
        self.num_key_value_groups = nh // nkv
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = d["attention_dropout"]
        self.q_proj = R.Linear(H, nh * self.head_dim, bias=False)
        self.k_proj = R.Linear(H, nkv * self.head_dim, bias=False)
        self.v_proj = R.Linear(H, nkv * self.head_dim, bias=False)
        self.o_proj = R.Linear(nh * self.head_dim, H, bias=False)
        if attn_impl != "sdpa":
            raise ValueError("nemotron_h: sdpa only")

    def forward(self, hidden_states, past_key_values=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        if past_key_values is not None:
            key_states, value_states = past_key_values.update(key_states, value_states, self.layer_idx)
        attn_output, _ = R.sdpa_attention_forward(self, query_states, key_states, value_states, None,
                                                  0.0 if not self.training else self.attention_dropout, self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class MLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.up_proj = R.Linear(d["hidden_size"], d["intermediate_size"], bias=d["mlp_bias"])
        self.down_proj = R.Linear(d["intermediate_size"], d["hidden_size"], bias=d["mlp_bias"])

    def forward(self, x):
        relu_applied = F.relu(self.up_proj(x))  # ReLUSquaredActivation
        return self.down_proj(torch.square(relu_applied))


class Block(nn.Module):
    def __init__(self, d, layer_idx, attn_impl):
        super().__init__()
        self.norm = R.LlamaRMSNorm(d["hidden_size"], eps=d["layer_norm_epsilon"])  # NemotronHRMSNorm: the same code
        self.block_type = d["layers_block_type"][layer_idx]
        self.mixer = (Mamba2Mixer(d, layer_idx) if self.block_type == "mamba" else
                      Attention(d, layer_idx, attn_impl) if self.block_type == "attention" else MLP(d))

    def forward(self, hidden_states, past_key_values=None, cache_position=None):
        residual = hidden_states
        hidden_states = self.norm(hidden_states.to(dtype=self.norm.weight.dtype))
        if self.block_type == "mamba":
            hidden_states = self.mixer(hidden_states, past_key_values, cache_position)
        elif self.block_type == "attention":
            hidden_states = self.mixer(hidden_states, past_key_values)
        else:
            hidden_states = self.mixer(hidden_states)
        return residual + hidden_states


class Cache(G.HybridMambaAttentionDynamicCache):
    """The Mamba layers' conv / ssm states and the attention layers' keys and values (the update and length of
    granite4_replica.HybridMambaAttentionDynamicCache)."""

    def __init__(self, d, batch_size, dtype):
        self.has_previous_state = False
        self.conv_states, self.ssm_states, self.key_cache, self.value_cache = [], [], [], []
        inter = d["mamba_num_heads"] * d["mamba_head_dim"]
        for t in d["layers_block_type"]:
            if t == "mamba":
                self.conv_states.append(torch.zeros(batch_size, inter + 2 * d["n_groups"] * d["ssm_state_size"],
                                                    d["conv_kernel"], dtype=dtype))
                self.ssm_states.append(torch.zeros(batch_size, d["mamba_num_heads"], d["mamba_head_dim"],
                                                   d["ssm_state_size"], dtype=dtype))
            else:
                self.conv_states.append(torch.tensor([[]] * batch_size))
                self.ssm_states.append(torch.tensor([[]] * batch_size))
            self.key_cache.append(torch.tensor([[]] * batch_size))
            self.value_cache.append(torch.tensor([[]] * batch_size))
        self.attn = [i for i, t in enumerate(d["layers_block_type"]) if t == "attention"]


class CausalLM(nn.Module):
    def __init__(self, cfg, attn_impl=None):
        super().__init__()
        d = cfg.d
        self.cfg, self.d = cfg, d
        self.attn_impl = attn_impl or "sdpa"
        self.gradient_checkpointing = False
        self.ckpt_every, self.ckpt_ops, self.ckpt_save_inputs = 1, False, False
        H, V = d["hidden_size"], d["vocab_size"]
        self.embed_tokens = nn.Embedding(V, H, d.get("pad_token_id"))  # NemotronHModel.embeddings
        self.layers = nn.ModuleList([Block(d, i, self.attn_impl) for i in range(d["num_hidden_layers"])])
        self.norm = R.LlamaRMSNorm(H, eps=d["layer_norm_epsilon"])  # norm_f
        self.lm_head = R.Linear(H, V, bias=False)

    def forward(self, input_ids, labels=None, past_key_values=None, cache_position=None, attention_mask=None,
                logits_to_keep=0, position_ids=None):
        inputs_embeds = self.embed_tokens(input_ids)  # NemotronHModel.forward: a local to its return
        hidden_states = inputs_embeds
        if cache_position is None:
            past = past_key_values.get_seq_length() if past_key_values is not None else 0
            cache_position = torch.arange(past, past + hidden_states.shape[1])
        for i, layer in enumerate(self.layers):
            if self.gradient_checkpointing and self.training and (i + 1) % self.ckpt_every == 0:
                hidden_states = R.vctorch._checkpoint2x(layer.__call__, hidden_states)
            else:
                hidden_states = layer(hidden_states, past_key_values, cache_position)
        hidden_states = self.norm(hidden_states)
        del inputs_embeds  # NemotronHModel.forward returns; NemotronHForCausalLM.forward goes on
        if past_key_values is not None and not past_key_values.has_previous_state:
            past_key_values.has_previous_state = True
        slice_indices = slice(-logits_to_keep, None)
        logits = self.lm_head(hidden_states[:, slice_indices, :]).float()
        loss = None
        if labels is not None:
            loss = R.for_causal_lm_loss(logits, labels, self.d["vocab_size"])
        return loss, logits
