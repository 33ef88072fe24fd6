"""mamba2_replica.py -- Mamba2ForCausalLM (model_type mamba2: mistralai/Mamba-Codestral-7B-v0.1, state-spaces/mamba2-*
in HF format) as transformers runs it on a GPU with the mamba_ssm and causal_conv1d kernels installed, for torch 1.13 on
CPU (measure_llm.py on a config whose model_type is mamba2). Issue 31: the truth for vramcalc's mamba2 row.

Written from huggingface/transformers, statement by statement; nothing from vramcalc's engine was read:
  configuration_mamba2.py @ f2a39d495c8c365996a33c6ae9506ad9c9339f4b: Mamba2Config.__init__'s defaults (DEFAULTS);
  modeling_mamba2.py @ 4711664e1c9dabe4e13b5bd6fe337507050f2157:
    Mamba2Mixer: the modules (conv1d, in_proj, dt_bias, A_log, norm = MambaRMSNormGated(intermediate), D, out_proj)
        and cuda_kernels_forward -- the same statements as GraniteMoeHybridMambaLayer's fast path, so the mixer is
        granite4_replica.MambaLayer (its kernel replays: mamba_split_conv1d_scan_combined in training without a cache,
        causal_conv1d_fn + mamba_chunk_scan_combined otherwise, causal_conv1d_update + selective_state_update on a
        decoding step) on Mamba2Config's keys (mixer_dict); apply_mask_to_padding_states multiplies only when the
        mask has more than one row and column: the cases here pass none (training, inference) or one row (generate
        at batch 1);
    Mamba2Cache.__init__: conv_states [layers, B, conv_dim, conv_kernel] and ssm_states [layers, B, heads, head_dim,
        state] zeros in inputs_embeds' dtype, made by Mamba2Model.forward after the embeddings (use_cache, no cache
        passed); update_conv_state / update_ssm_state with cache_init: an index assignment (a copy into the layer's
        slot); MambaMixer's decoding branch runs when cache_position[0] > 0;
    Mamba2RMSNorm (LlamaRMSNorm's statements: reference.LlamaRMSNorm);
    Mamba2Block.forward: residual = hidden_states; hidden_states = self.norm(hidden_states.to(dtype=
        self.norm.weight.dtype)); residual.to(torch.float32) under residual_in_fp32; the mixer; residual + hidden_states;
    Mamba2Model.forward: embeddings, the blocks (gradient checkpointing of each block), norm_f;
  modeling_mamba2.py @ 020a37d2264e60dc7beb9634c3e87ad870073e2c, Mamba2ForCausalLM.forward: logits =
    self.lm_head(hidden_states[:, slice_indices, :].to(self.lm_head.weight.dtype)).float(); loss_function
    (ForCausalLMLoss: reference.for_causal_lm_loss); lm_head tied to backbone.embeddings under tie_word_embeddings.
"""
import torch
import torch.nn as nn

import granite4_replica as G4
import reference as R

DEFAULTS = {  # Mamba2Config.__init__ @ f2a39d49
    "num_heads": 128, "head_dim": 64, "vocab_size": 32768, "hidden_size": 4096, "state_size": 128,
    "num_hidden_layers": 64, "layer_norm_epsilon": 1e-5, "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2,
    "expand": 2, "conv_kernel": 4, "n_groups": 8, "use_bias": False, "use_conv_bias": True, "hidden_act": "silu",
    "residual_in_fp32": True, "rms_norm": True, "chunk_size": 256, "tie_word_embeddings": False,
}


def resolve(raw):
    d = dict(DEFAULTS)
    d.update(raw)
    d["num_attention_heads"] = d["num_key_value_heads"] = 1  # reference.Config's keys; no attention here
    return d


def mixer_dict(d):
    """Mamba2Mixer.__init__'s sizes under GraniteMoeHybridMambaLayer's key names (granite4_replica.MambaLayer)."""
    return {"hidden_size": d["hidden_size"], "mamba_n_heads": d["num_heads"], "mamba_d_head": d["head_dim"],
            "mamba_n_groups": d["n_groups"], "mamba_d_state": d["state_size"], "mamba_d_conv": d["conv_kernel"],
            "mamba_chunk_size": d["chunk_size"], "mamba_expand": d["expand"], "mamba_conv_bias": d["use_conv_bias"],
            "mamba_proj_bias": d["use_bias"], "rms_norm_eps": d["layer_norm_epsilon"]}


class Mamba2Cache:
    """Mamba2Cache: allocated by Mamba2Model.forward on the first call (allocate)."""

    def __init__(self, d):
        self.d = d
        self.conv_states = self.ssm_states = None
        self.has_previous_state = False

    def allocate(self, batch_size, dtype):
        d = self.d
        inter = int(d["expand"] * d["hidden_size"])
        self.conv_states = torch.zeros(d["num_hidden_layers"], batch_size, inter + 2 * d["n_groups"] * d["state_size"],
                                       d["conv_kernel"], dtype=dtype)
        self.ssm_states = torch.zeros(d["num_hidden_layers"], batch_size, d["num_heads"], d["head_dim"],
                                      d["state_size"], dtype=dtype)


class Block(nn.Module):
    def __init__(self, d, layer_idx):
        super().__init__()
        self.residual_in_fp32 = d["residual_in_fp32"]
        self.norm = R.LlamaRMSNorm(d["hidden_size"], eps=d["layer_norm_epsilon"])
        self.mixer = G4.MambaLayer(mixer_dict(d), layer_idx)

    def forward(self, hidden_states, cache_params=None, cache_position=None):
        residual = hidden_states
        hidden_states = self.norm(hidden_states.to(dtype=self.norm.weight.dtype))
        if self.residual_in_fp32:
            residual = residual.to(torch.float32)
        hidden_states = self.mixer(hidden_states, cache_params, cache_position)
        return residual + hidden_states


class CausalLM(nn.Module):
    def __init__(self, cfg, attn_impl=None):
        super().__init__()
        d = cfg.d
        self.cfg, self.d = cfg, d
        self.attn_impl = attn_impl or "sdpa"
        self.gradient_checkpointing = False
        self.ckpt_every, self.ckpt_ops, self.ckpt_save_inputs = 1, False, False
        H, V = d["hidden_size"], d["vocab_size"]
        self.embeddings = nn.Embedding(V, H)
        self.layers = nn.ModuleList([Block(d, i) for i in range(d["num_hidden_layers"])])
        self.norm_f = R.LlamaRMSNorm(H, eps=d["layer_norm_epsilon"])
        self.lm_head = R.Linear(H, V, bias=False)
        if d["tie_word_embeddings"]:
            self.lm_head.weight = self.embeddings.weight

    def forward(self, input_ids, labels=None, past_key_values=None, cache_position=None, attention_mask=None,
                logits_to_keep=0, position_ids=None):
        """Mamba2ForCausalLM.forward: `mamba2_outputs = self.backbone(...)` (Mamba2Model.forward), then lm_head and
        the loss on `mamba2_outputs[0]`: Mamba2Model.forward's locals (inputs_embeds, cache_position) are freed when
        it returns, before the head (modeling_mamba2.py @4711664e1c9dabe4e13b5bd6fe337507050f2157,
        Mamba2ForCausalLM.forward; issue 26: the replica kept them alive through the head and the loss)."""
        hidden_states = self._model_forward(input_ids, past_key_values, cache_position)
        slice_indices = slice(-logits_to_keep, None)
        logits = self.lm_head(hidden_states[:, slice_indices, :].to(self.lm_head.weight.dtype)).float()
        loss = None
        if labels is not None:
            loss = R.for_causal_lm_loss(logits, labels, self.d["vocab_size"])
        return loss, logits

    def _model_forward(self, input_ids, past_key_values, cache_position):
        """Mamba2Model.forward (the backbone): norm_f's output."""
        inputs_embeds = self.embeddings(input_ids)
        cache = past_key_values
        if cache is not None and cache.conv_states is None:  # Mamba2Model.forward: Mamba2Cache(config, B, dtype)
            cache.allocate(inputs_embeds.size(0), inputs_embeds.dtype)
        if cache is not None and not cache.has_previous_state:
            cache_position = torch.arange(0, self.d["conv_kernel"])  # the prefill: cache_position[0] == 0
        hidden_states = inputs_embeds
        for i, layer in enumerate(self.layers):
            if self.gradient_checkpointing and self.training and (i + 1) % self.ckpt_every == 0:
                hidden_states = R.vctorch._checkpoint2x(layer.__call__, hidden_states)
            else:
                hidden_states = layer(hidden_states, cache, cache_position)
        hidden_states = self.norm_f(hidden_states)
        if cache is not None:
            cache.has_previous_state = True
        return hidden_states
