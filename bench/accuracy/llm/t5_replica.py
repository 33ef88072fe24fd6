"""t5_replica.py -- T5ForConditionalGeneration's modules (t5, flan-t5, T5 v1.1) as PyTorch modules,
written from the transformers source, built on the meta device and counted by
`/usr/bin/python3 t5_replica.py CONFIG...` (named_parameters(), tied weights once).

Source read: huggingface/transformers @ 6b8b757dfcb582379a64f013cdce46c43629f2b0
  configuration_t5.py T5Config.__init__: the defaults (t5-small's), num_decoder_layers
      "if num_decoder_layers is not None else self.num_layers", feed_forward_proj split on "-":
      is_gated_act = act_info[0] == "gated" (a config's own is_gated_act replaces it: PretrainedConfig
      sets the remaining kwargs); tie_word_embeddings PretrainedConfig's True unless the file says.
  modeling_t5.py:
      T5LayerNorm.__init__: weight = nn.Parameter(torch.ones(hidden_size)), no bias;
      T5DenseActDense: wi nn.Linear(d_model, d_ff, bias=False), wo nn.Linear(d_ff, d_model, bias=False);
      T5DenseGatedActDense: wi_0, wi_1 nn.Linear(d_model, d_ff, bias=False), wo;
      T5LayerFF: DenseReluDense (gated when config.is_gated_act), layer_norm;
      T5Attention.__init__: q, k, v nn.Linear(d_model, n_heads * d_kv, bias=False),
          o nn.Linear(inner_dim, d_model, bias=False), relative_attention_bias
          nn.Embedding(relative_attention_num_buckets, n_heads) if has_relative_attention_bias;
      T5LayerSelfAttention: SelfAttention, layer_norm; T5LayerCrossAttention: EncDecAttention
          (has_relative_attention_bias=False), layer_norm;
      T5Block: layer = [T5LayerSelfAttention, T5LayerCrossAttention if is_decoder, T5LayerFF];
      T5Stack.__init__: block = [T5Block(has_relative_attention_bias=bool(i == 0)) ...],
          final_layer_norm; embed_tokens the shared module (not a new parameter);
      T5ForConditionalGeneration.__init__: shared nn.Embedding(vocab_size, d_model), encoder,
          decoder (num_layers = num_decoder_layers), lm_head nn.Linear(d_model, vocab_size,
          bias=False); tied to shared when tie_word_embeddings (_tied_weights_keys).
  and the forward of each (modeling_t5.py @ 6b8b757d), for the accuracy harness (measure_llm.py):
      T5LayerNorm.forward: variance = h.to(float32).pow(2).mean(-1, keepdim=True); h = h * rsqrt(variance
          + eps); .to(weight.dtype) when the weight is 16-bit; weight * h;
      T5DenseActDense.forward: wi, act, dropout, (.to(wo.weight.dtype) when they differ), wo;
      T5DenseGatedActDense.forward: act(wi_0(h)) * wi_1(h), dropout, wo;
      T5LayerFF.forward: h + dropout(DenseReluDense(layer_norm(h)));
      T5Attention.forward: q/k/v(...).view(B, -1, H, d_kv).transpose(1, 2); past_key_value.update when
          given (EncoderDecoderCache; DynamicCache.update's first update keeps the states themselves);
          scores = matmul(q, k.transpose(3, 2)); position_bias None: compute_bias(q_len, k_len)
          (_relative_position_bucket) or zeros((1, H, q, k)), then + mask; scores += position_bias;
          softmax(scores.float(), -1).type_as(scores); dropout(p=dropout_rate); matmul(w, v);
          transpose(1, 2).contiguous().view(B, -1, inner); o; returns (out, position_bias);
      T5LayerSelfAttention / T5LayerCrossAttention.forward: h + dropout(attn(layer_norm(h)));
      T5Block.forward (no fp16 clamp: fp32 and bf16 only here);
      T5Stack.forward: embed_tokens, attention_mask = ones(B, L) (float32), the encoder's
          mask[:, None, None, :].to(dtype), (1 - m) * finfo.min; the decoder's _update_causal_mask
          (_prepare_4d_causal_attention_mask_with_cache_position, eager) and its inverted
          encoder mask (invert_attention_mask of ones(B, L_enc) long); dropout(inputs_embeds); the
          blocks sharing position_bias (and encoder_decoder_position_bias) from block 0;
          final_layer_norm; dropout; the decoder with use_cache (config.use_cache, True by default)
          makes EncoderDecoderCache(DynamicCache(), DynamicCache());
      T5ForConditionalGeneration.forward: encoder; decoder_input_ids = _shift_right(labels) when
          labels are given; decoder; sequence_output * d_model ** -0.5 when tied; lm_head;
          CrossEntropyLoss(ignore_index=-100)(logits.view(-1, V), labels.view(-1)).
      Gradient checkpointing (model.gradient_checkpointing, measure_llm.py --ckpt): gradient_checkpointing_enable
          sets every module's gradient_checkpointing (modeling_utils.py _set_gradient_checkpointing, not read
          at this commit; T5Stack.__init__ and T5Attention.__init__ define the attribute);
          T5Stack.forward then sets use_cache = False in training and calls
          self._gradient_checkpointing_func(layer_module.forward, hidden_states, causal_mask, position_bias,
          encoder_hidden_states, encoder_extended_attention_mask, encoder_decoder_position_bias, ..., None, ...)
          for every block (run non-reentrant: vctorch._checkpoint2x, the harness's port of 2.x's);
          T5Attention.forward: position_bias.requires_grad = True on the zeros bias when
          self.gradient_checkpointing and self.training.
  generate() (generate() below, measure_llm.py --mode generate): GenerationMixin.generate of
      generation/utils.py @000034a44ef887621d9b36001a5eb7c46e64cb3f for an encoder-decoder, greedy:
      _prepare_attention_mask_for_generation, _prepare_encoder_decoder_kwargs_for_generation (the encoder
      once, its last_hidden_state kept), _prepare_decoder_input_ids_for_generation (ones((B, 1)) *
      decoder_start_token_id), EncoderDecoderCache(DynamicCache(), DynamicCache()), _sample's loop
      (prepare_inputs_for_generation's input_ids[:, cache_position] and clone, the model forward with
      encoder_outputs, the fp32 copy of the last logits, argmax, cat); modeling_t5.py's cached paths
      (T5Stack.forward with past_key_values and cache_position: ones(B, past + 1), the causal mask at
      target_length past + 1, invert_attention_mask of generate's mask; T5Block's query_length =
      cache_position[-1] + 1; T5Attention.forward's is_updated reuse of the cross-attention's states,
      DynamicCache.update, compute_bias at cache_position).
umt5 (model_type "umt5": UMT5ForConditionalGeneration, modeling_umt5.py @ de0f5d1eab94a1725c9e4f202498521adf32c5e1,
its modules T5's "Copied from" but for these): UMT5Config's defaults (configuration_umt5.py @ 0d7e95d9:
feed_forward_proj "gated-gelu"); UMT5LayerSelfAttention builds UMT5Attention(config,
has_relative_attention_bias=True) in every block; UMT5Attention.forward takes no position_bias and returns
(attn_output, attn_weights, past_key_value): every call computes its own bias (compute_bias with the stack's
cache_position, or torch.zeros((1, n_heads, q, k)) without requires_grad), + the mask, a local dying on return;
UMT5Block.forward returns (hidden_states, past_key_value), so no bias passes from block to block, under
checkpointing either. The context positions here are an arange of the query length rather than a view of the
stack's cache_position (the same values; an int64 [q] temporary more, at most 512 B rounded per call).
Every nn.Linear is reference.Linear (at::linear as PyTorch 2.x runs it), every dropout
vctorch.dropout2x and the norm's mean vctorch.mean2x, as the harness's other replicas.
"""
import json
import os
import sys

import math

import torch
from torch import nn
import torch.nn.functional as F

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))), "tools"))

try:  # the harness's PyTorch 2.x operators (tools/vctorch.py); count() needs neither
    import vctorch
    from reference import Linear
except ImportError:  # pragma: no cover
    vctorch = None
    Linear = nn.Linear


class Config:
    def __init__(self, cfg):
        self.vocab_size = cfg.get("vocab_size", 32128)
        self.d_model = cfg.get("d_model", 512)
        self.d_kv = cfg.get("d_kv", 64)
        self.d_ff = cfg.get("d_ff", 2048)
        self.num_layers = cfg.get("num_layers", 6)
        ndl = cfg.get("num_decoder_layers")
        self.num_decoder_layers = ndl if ndl is not None else self.num_layers
        self.num_heads = cfg.get("num_heads", 8)
        self.relative_attention_num_buckets = cfg.get("relative_attention_num_buckets", 32)
        self.layer_norm_epsilon = cfg.get("layer_norm_epsilon", 1e-6)
        self.umt5 = cfg.get("model_type") == "umt5"  # UMT5Config: feed_forward_proj "gated-gelu" by default
        ffp = cfg.get("feed_forward_proj", "gated-gelu" if self.umt5 else "relu")
        act_info = ffp.split("-")
        self.is_gated_act = cfg.get("is_gated_act", act_info[0] == "gated")
        self.tie_word_embeddings = cfg.get("tie_word_embeddings", True)
        self.is_decoder = False
        self.relative_attention_max_distance = cfg.get("relative_attention_max_distance", 128)
        self.dropout_rate = cfg.get("dropout_rate", 0.1)
        self.use_cache = cfg.get("use_cache", True)
        act = act_info[-1]
        self.dense_act_fn = cfg.get("dense_act_fn", "gelu_new" if ffp == "gated-gelu" else act)


def _drop(x, p, training):
    return vctorch.dropout2x(x, p, training) if vctorch else F.dropout(x, p, training)


def _act(name):
    # ACT2FN (activations.py): relu nn.ReLU, gelu GELUActivation (F.gelu), gelu_new NewGELUActivation,
    # gelu_pytorch_tanh, silu / swish
    if name == "relu":
        return F.relu
    if name == "gelu":
        return F.gelu
    if name == "gelu_new":  # NewGELUActivation.forward
        return lambda x: 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    if name == "gelu_pytorch_tanh":
        return lambda x: F.gelu(x, approximate="tanh")
    if name in ("silu", "swish"):
        return F.silu
    raise ValueError("activation %r" % name)


class T5LayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = vctorch.mean2x(hidden_states.to(torch.float32).pow(2), -1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        if self.weight.dtype in [torch.float16, torch.bfloat16]:
            hidden_states = hidden_states.to(self.weight.dtype)
        return self.weight * hidden_states


class T5DenseActDense(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wi = Linear(c.d_model, c.d_ff, bias=False)
        self.wo = Linear(c.d_ff, c.d_model, bias=False)
        self.p = c.dropout_rate
        self.act = _act(c.dense_act_fn)

    def forward(self, hidden_states):
        hidden_states = self.wi(hidden_states)
        hidden_states = self.act(hidden_states)
        hidden_states = _drop(hidden_states, self.p, self.training)
        wo = self.wo.base_layer if hasattr(self.wo, "base_layer") else self.wo
        if hidden_states.dtype != wo.weight.dtype and wo.weight.dtype != torch.int8:
            hidden_states = hidden_states.to(wo.weight.dtype)
        return self.wo(hidden_states)


class T5DenseGatedActDense(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wi_0 = Linear(c.d_model, c.d_ff, bias=False)
        self.wi_1 = Linear(c.d_model, c.d_ff, bias=False)
        self.wo = Linear(c.d_ff, c.d_model, bias=False)
        self.p = c.dropout_rate
        self.act = _act(c.dense_act_fn)

    def forward(self, hidden_states):
        hidden_gelu = self.act(self.wi_0(hidden_states))
        hidden_linear = self.wi_1(hidden_states)
        hidden_states = hidden_gelu * hidden_linear
        hidden_states = _drop(hidden_states, self.p, self.training)
        wo = self.wo.base_layer if hasattr(self.wo, "base_layer") else self.wo
        if hidden_states.dtype != wo.weight.dtype and wo.weight.dtype != torch.int8:
            hidden_states = hidden_states.to(wo.weight.dtype)
        return self.wo(hidden_states)


class T5LayerFF(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.DenseReluDense = T5DenseGatedActDense(c) if c.is_gated_act else T5DenseActDense(c)
        self.layer_norm = T5LayerNorm(c.d_model, eps=c.layer_norm_epsilon)
        self.p = c.dropout_rate

    def forward(self, hidden_states):
        forwarded_states = self.layer_norm(hidden_states)
        forwarded_states = self.DenseReluDense(forwarded_states)
        return hidden_states + _drop(forwarded_states, self.p, self.training)


class T5Attention(nn.Module):
    def __init__(self, c, has_relative_attention_bias=False, layer_idx=0):
        super().__init__()
        self.is_decoder = c.is_decoder
        self.has_relative_attention_bias = has_relative_attention_bias
        self.relative_attention_num_buckets = c.relative_attention_num_buckets
        self.relative_attention_max_distance = c.relative_attention_max_distance
        self.n_heads, self.key_value_proj_dim = c.num_heads, c.d_kv
        self.inner_dim = c.num_heads * c.d_kv
        self.dropout = c.dropout_rate
        self.layer_idx = layer_idx
        self.umt5 = c.umt5  # UMT5Attention: its own bias every call, not returned
        inner = c.num_heads * c.d_kv
        self.q = Linear(c.d_model, inner, bias=False)
        self.k = Linear(c.d_model, inner, bias=False)
        self.v = Linear(c.d_model, inner, bias=False)
        self.o = Linear(inner, c.d_model, bias=False)
        if has_relative_attention_bias:
            self.relative_attention_bias = nn.Embedding(c.relative_attention_num_buckets, c.num_heads)
        # set by gradient_checkpointing_enable (modeling_utils.py _set_gradient_checkpointing: every module
        # with the attribute); here by T5ForConditionalGeneration.forward from its own
        self.gradient_checkpointing = False

    @staticmethod
    def _relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
        relative_buckets = 0
        if bidirectional:
            num_buckets //= 2
            relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
            relative_position = torch.abs(relative_position)
        else:
            relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
        max_exact = num_buckets // 2
        is_small = relative_position < max_exact
        relative_position_if_large = max_exact + (
            torch.log(relative_position.float() / max_exact)
            / math.log(max_distance / max_exact)
            * (num_buckets - max_exact)
        ).to(torch.long)
        relative_position_if_large = torch.min(
            relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1)
        )
        relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
        return relative_buckets

    def compute_bias(self, query_length, key_length):
        context_position = torch.arange(query_length, dtype=torch.long)[:, None]
        memory_position = torch.arange(key_length, dtype=torch.long)[None, :]
        relative_position = memory_position - context_position
        relative_position_bucket = self._relative_position_bucket(
            relative_position, bidirectional=(not self.is_decoder), num_buckets=self.relative_attention_num_buckets,
            max_distance=self.relative_attention_max_distance)
        values = self.relative_attention_bias(relative_position_bucket)
        return values.permute([2, 0, 1]).unsqueeze(0)

    def compute_bias_at(self, key_length, cache_position):
        # compute_bias(real_seq_length, key_length, cache_position=cache_position) as generate() calls it:
        # context_position = cache_position[:, None] (a view), memory_position = arange(key_length)[None, :]
        context_position = cache_position[:, None]
        memory_position = torch.arange(key_length, dtype=torch.long)[None, :]
        relative_position = memory_position - context_position
        relative_position_bucket = self._relative_position_bucket(
            relative_position, bidirectional=(not self.is_decoder), num_buckets=self.relative_attention_num_buckets,
            max_distance=self.relative_attention_max_distance)
        values = self.relative_attention_bias(relative_position_bucket)
        return values.permute([2, 0, 1]).unsqueeze(0)

    def forward(self, hidden_states, mask=None, key_value_states=None, position_bias=None, past_key_value=None,
                query_length=None, cache_position=None):
        if cache_position is not None:  # generate(): modeling_t5.py T5Attention.forward with a cache_position
            return self._forward_cached(hidden_states, mask, key_value_states, position_bias, past_key_value,
                                        query_length, cache_position)
        batch_size, seq_length = hidden_states.shape[:2]
        is_cross_attention = key_value_states is not None
        query_states = self.q(hidden_states)
        query_states = query_states.view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)
        current_states = key_value_states if is_cross_attention else hidden_states
        key_states = self.k(current_states)
        value_states = self.v(current_states)
        key_states = key_states.view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)
        value_states = value_states.view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)
        if past_key_value is not None:
            cache = past_key_value.cross_attention_cache if is_cross_attention else past_key_value.self_attention_cache
            key_states, value_states = cache.update(key_states, value_states, self.layer_idx)
        scores = torch.matmul(query_states, key_states.transpose(3, 2))
        if position_bias is None:
            key_length = key_states.shape[-2]
            if not self.has_relative_attention_bias:
                position_bias = torch.zeros((1, self.n_heads, seq_length, key_length), dtype=scores.dtype)
                if self.gradient_checkpointing and self.training and not self.umt5:
                    position_bias.requires_grad = True
            else:
                position_bias = self.compute_bias(seq_length, key_length)
                position_bias = position_bias[:, :, -seq_length:, :]
            if mask is not None:
                causal_mask = mask[:, :, :, : key_states.shape[-2]]
                position_bias = position_bias + causal_mask
        scores += position_bias
        attn_weights = F.softmax(scores.float(), dim=-1).type_as(scores)
        attn_weights = _drop(attn_weights, self.dropout, self.training)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.view(batch_size, -1, self.inner_dim)
        attn_output = self.o(attn_output)
        return attn_output, (None if self.umt5 else position_bias)

    def _forward_cached(self, hidden_states, mask, key_value_states, position_bias, past_key_value, query_length,
                        cache_position):
        # T5Attention.forward @6b8b757d under generate(): the EncoderDecoderCache's is_updated reuse of the
        # cross-attention's states, the self-attention's DynamicCache.update, the bias at cache_position
        batch_size, seq_length = hidden_states.shape[:2]
        is_cross_attention = key_value_states is not None
        query_states = self.q(hidden_states)
        query_states = query_states.view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)
        is_updated = past_key_value.is_updated.get(self.layer_idx)
        curr_past_key_value = (past_key_value.cross_attention_cache if is_cross_attention
                               else past_key_value.self_attention_cache)
        current_states = key_value_states if is_cross_attention else hidden_states
        if is_cross_attention and is_updated:
            key_states = curr_past_key_value.key_cache[self.layer_idx]
            value_states = curr_past_key_value.value_cache[self.layer_idx]
        else:
            key_states = self.k(current_states)
            value_states = self.v(current_states)
            key_states = key_states.view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)
            value_states = value_states.view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)
            key_states, value_states = curr_past_key_value.update(key_states, value_states, self.layer_idx)
            if is_cross_attention:
                past_key_value.is_updated[self.layer_idx] = True
        scores = torch.matmul(query_states, key_states.transpose(3, 2))
        if position_bias is None:
            key_length = key_states.shape[-2]
            # real_seq_length = query_length if query_length is not None else cache_position[-1] + 1
            real_seq_length = query_length if query_length is not None else cache_position[-1] + 1  # noqa: F841
            if not self.has_relative_attention_bias:
                position_bias = torch.zeros((1, self.n_heads, seq_length, key_length), dtype=scores.dtype)
            else:
                position_bias = self.compute_bias_at(key_length, cache_position)
                position_bias = position_bias[:, :, -seq_length:, :]
            if mask is not None:
                causal_mask = mask[:, :, :, : key_states.shape[-2]]
                position_bias = position_bias + causal_mask
        scores += position_bias
        attn_weights = F.softmax(scores.float(), dim=-1).type_as(scores)
        attn_weights = _drop(attn_weights, self.dropout, self.training)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.view(batch_size, -1, self.inner_dim)
        attn_output = self.o(attn_output)
        return attn_output, (None if self.umt5 else position_bias)


class T5LayerSelfAttention(nn.Module):
    def __init__(self, c, has_relative_attention_bias=False, layer_idx=0):
        super().__init__()
        self.SelfAttention = T5Attention(c, has_relative_attention_bias, layer_idx)
        self.layer_norm = T5LayerNorm(c.d_model, eps=c.layer_norm_epsilon)
        self.p = c.dropout_rate

    def forward(self, hidden_states, attention_mask=None, position_bias=None, past_key_value=None,
                cache_position=None):
        normed = self.layer_norm(hidden_states)
        out, position_bias = self.SelfAttention(normed, mask=attention_mask, position_bias=position_bias,
                                                past_key_value=past_key_value, cache_position=cache_position)
        return hidden_states + _drop(out, self.p, self.training), position_bias


class T5LayerCrossAttention(nn.Module):
    def __init__(self, c, layer_idx=0):
        super().__init__()
        self.EncDecAttention = T5Attention(c, has_relative_attention_bias=False, layer_idx=layer_idx)
        self.layer_norm = T5LayerNorm(c.d_model, eps=c.layer_norm_epsilon)
        self.p = c.dropout_rate

    def forward(self, hidden_states, key_value_states, attention_mask=None, position_bias=None, past_key_value=None,
                query_length=None, cache_position=None):
        normed = self.layer_norm(hidden_states)
        out, position_bias = self.EncDecAttention(normed, mask=attention_mask, key_value_states=key_value_states,
                                                  position_bias=position_bias, past_key_value=past_key_value,
                                                  query_length=query_length, cache_position=cache_position)
        return hidden_states + _drop(out, self.p, self.training), position_bias


class T5Block(nn.Module):
    def __init__(self, c, has_relative_attention_bias=False, layer_idx=0):
        super().__init__()
        self.is_decoder = c.is_decoder
        self.layer = nn.ModuleList([T5LayerSelfAttention(c, has_relative_attention_bias, layer_idx)])
        if c.is_decoder:
            self.layer.append(T5LayerCrossAttention(c, layer_idx))
        self.layer.append(T5LayerFF(c))

    def forward(self, hidden_states, attention_mask, position_bias, encoder_hidden_states, encoder_attention_mask,
                encoder_decoder_position_bias, past_key_value, cache_position=None):
        hidden_states, position_bias = self.layer[0](hidden_states, attention_mask, position_bias, past_key_value,
                                                     cache_position)
        if self.is_decoder and encoder_hidden_states is not None:
            # T5Block.forward: query_length=cache_position[-1] + 1 (generate(): cache_position given)
            hidden_states, encoder_decoder_position_bias = self.layer[1](
                hidden_states, encoder_hidden_states, encoder_attention_mask, encoder_decoder_position_bias,
                past_key_value, *((cache_position[-1] + 1, cache_position) if cache_position is not None else ()))
        hidden_states = self.layer[-1](hidden_states)
        return hidden_states, position_bias, encoder_decoder_position_bias


class DynamicCache:
    """cache_utils.py DynamicCache.update (4.4x): a layer's first update keeps the states themselves."""

    def __init__(self):
        self.key_cache, self.value_cache = [], []

    def update(self, k, v, layer_idx):
        if len(self.key_cache) <= layer_idx:
            self.key_cache.append(k)
            self.value_cache.append(v)
        else:
            self.key_cache[layer_idx] = torch.cat([self.key_cache[layer_idx], k], dim=-2)
            self.value_cache[layer_idx] = torch.cat([self.value_cache[layer_idx], v], dim=-2)
        return self.key_cache[layer_idx], self.value_cache[layer_idx]

    def reorder_cache(self, beam_idx):
        """beam search: CacheLayerMixin.reorder_cache (cache_utils.py @004999d9) per layer: when it holds tokens,
        keys = keys.index_select(0, beam_idx), then the values (a new copy each, the old one freed as it is
        rebound)."""
        for i in range(len(self.key_cache)):
            if self.key_cache[i].shape[-2] > 0:
                self.key_cache[i] = self.key_cache[i].index_select(0, beam_idx)
                self.value_cache[i] = self.value_cache[i].index_select(0, beam_idx)


class EncoderDecoderCache:
    def __init__(self, self_attention_cache, cross_attention_cache):
        self.self_attention_cache, self.cross_attention_cache = self_attention_cache, cross_attention_cache
        self.is_updated = {}  # EncoderDecoderCache.is_updated: the cross-attention layers already filled

    def get_seq_length(self):  # self_attention_cache.get_seq_length(): layer 0's tokens
        kc = self.self_attention_cache.key_cache
        return kc[0].shape[-2] if kc else 0

    def reorder_cache(self, beam_idx):
        """EncoderDecoderCache.reorder_cache (cache_utils.py @004999d972e478164dd7e8e508350937c803531e): the
        self-attention cache, then the cross-attention cache, each through DynamicCache.reorder_cache."""
        self.self_attention_cache.reorder_cache(beam_idx)
        self.cross_attention_cache.reorder_cache(beam_idx)


class T5Stack(nn.Module):
    def __init__(self, c, n, embed_tokens):
        super().__init__()
        self.embed_tokens = embed_tokens
        self.is_decoder = c.is_decoder
        self.use_cache = c.use_cache and c.is_decoder  # the encoder's config: use_cache = False
        # umt5: UMT5Block(config, layer_idx=i), every SelfAttention with its relative_attention_bias
        self.block = nn.ModuleList([T5Block(c, has_relative_attention_bias=bool(i == 0) or c.umt5, layer_idx=i)
                                    for i in range(n)])
        self.final_layer_norm = T5LayerNorm(c.d_model, eps=c.layer_norm_epsilon)
        self.p = c.dropout_rate
        self.gradient_checkpointing = False

    def forward(self, input_ids, encoder_hidden_states=None, attention_mask=None, encoder_attention_mask=None,
                past_key_values=None, cache_position=None):
        if cache_position is not None:  # the decoder under generate()
            return self._forward_cached(input_ids, encoder_hidden_states, encoder_attention_mask, past_key_values,
                                        cache_position)
        inputs_embeds = self.embed_tokens(input_ids)
        batch_size, seq_length = input_ids.shape
        dtype = inputs_embeds.dtype
        use_cache = self.use_cache
        if self.gradient_checkpointing and self.training:
            use_cache = False  # "`use_cache=True` is incompatible with gradient checkpointing"
        past_key_values = EncoderDecoderCache(DynamicCache(), DynamicCache()) if use_cache else None
        cache_position = torch.arange(0, seq_length)
        if attention_mask is None:  # generate() passes the encoder its attention_mask (int64)
            attention_mask = torch.ones(batch_size, seq_length)
        if self.is_decoder:
            # _update_causal_mask (eager) -> _prepare_4d_causal_attention_mask_with_cache_position
            min_dtype = torch.finfo(dtype).min
            target_length = attention_mask.shape[-1]
            causal_mask = torch.full((seq_length, target_length), fill_value=min_dtype, dtype=dtype)
            if seq_length != 1:
                causal_mask = torch.triu(causal_mask, diagonal=1)
            causal_mask *= torch.arange(target_length) > cache_position.reshape(-1, 1)
            causal_mask = causal_mask[None, None, :, :].expand(batch_size, 1, -1, -1)
            causal_mask = causal_mask.clone()
            mask_length = attention_mask.shape[-1]
            padding_mask = causal_mask[:, :, :, :mask_length] + attention_mask[:, None, None, :]
            padding_mask = padding_mask == 0
            causal_mask[:, :, :, :mask_length] = causal_mask[:, :, :, :mask_length].masked_fill(padding_mask, min_dtype)
        else:
            causal_mask = attention_mask[:, None, None, :]
            causal_mask = causal_mask.to(dtype=dtype)
            causal_mask = (1.0 - causal_mask) * torch.finfo(dtype).min
        encoder_extended_attention_mask = None
        if self.is_decoder and encoder_hidden_states is not None:
            encoder_attention_mask = torch.ones(encoder_hidden_states.shape[:2], dtype=torch.long)
            # ModuleUtilsMixin.invert_attention_mask
            ext = encoder_attention_mask[:, None, None, :].to(dtype=dtype)
            encoder_extended_attention_mask = (1.0 - ext) * torch.finfo(dtype).min
        position_bias = None
        encoder_decoder_position_bias = None
        hidden_states = _drop(inputs_embeds, self.p, self.training)
        for layer_module in self.block:
            if self.gradient_checkpointing and self.training:
                # self._gradient_checkpointing_func(layer_module.forward, hidden_states, causal_mask, position_bias,
                # encoder_hidden_states, encoder_extended_attention_mask, encoder_decoder_position_bias, ...,
                # None (past_key_value), ...): torch.utils.checkpoint with use_reentrant=False
                # (gradient_checkpointing_kwargs={"use_reentrant": False}, as the harness runs every family): the
                # harness's port of 2.x's. Block 0's position biases are outputs of its checkpoint.
                hidden_states, position_bias, encoder_decoder_position_bias = vctorch._checkpoint2x(
                    layer_module.forward, hidden_states, causal_mask, position_bias, encoder_hidden_states,
                    encoder_extended_attention_mask, encoder_decoder_position_bias, None)
                continue
            hidden_states, position_bias, encoder_decoder_position_bias = layer_module(
                hidden_states, causal_mask, position_bias, encoder_hidden_states, encoder_extended_attention_mask,
                encoder_decoder_position_bias, past_key_values)
        hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = _drop(hidden_states, self.p, self.training)
        return hidden_states, past_key_values

    def _forward_cached(self, input_ids, encoder_hidden_states, encoder_attention_mask, past_key_values, cache_position):
        # T5Stack.forward @6b8b757d, the decoder under generate(): past_key_values (EncoderDecoderCache) and
        # cache_position given, attention_mask None, encoder_attention_mask generate()'s int64 mask
        inputs_embeds = self.embed_tokens(input_ids)
        batch_size, seq_length = input_ids.shape
        dtype = inputs_embeds.dtype
        past_key_values_length = past_key_values.get_seq_length()
        mask_seq_length = past_key_values_length + seq_length
        attention_mask = torch.ones(batch_size, mask_seq_length)
        # _update_causal_mask (eager): target_length = attention_mask.shape[-1];
        # _prepare_4d_causal_attention_mask_with_cache_position
        min_dtype = torch.finfo(dtype).min
        target_length = attention_mask.shape[-1]
        causal_mask = torch.full((seq_length, target_length), fill_value=min_dtype, dtype=dtype)
        if seq_length != 1:
            causal_mask = torch.triu(causal_mask, diagonal=1)
        causal_mask *= torch.arange(target_length) > cache_position.reshape(-1, 1)
        causal_mask = causal_mask[None, None, :, :].expand(batch_size, 1, -1, -1)
        causal_mask = causal_mask.clone()
        mask_length = attention_mask.shape[-1]
        padding_mask = causal_mask[:, :, :, :mask_length] + attention_mask[:, None, None, :]
        padding_mask = padding_mask == 0
        causal_mask[:, :, :, :mask_length] = causal_mask[:, :, :, :mask_length].masked_fill(padding_mask, min_dtype)
        del padding_mask
        # invert_attention_mask(encoder_attention_mask)
        ext = encoder_attention_mask[:, None, None, :].to(dtype=dtype)
        encoder_extended_attention_mask = (1.0 - ext) * torch.finfo(dtype).min
        del ext
        position_bias = None
        encoder_decoder_position_bias = None
        hidden_states = _drop(inputs_embeds, self.p, self.training)
        for layer_module in self.block:
            hidden_states, position_bias, encoder_decoder_position_bias = layer_module(
                hidden_states, causal_mask, position_bias, encoder_hidden_states, encoder_extended_attention_mask,
                encoder_decoder_position_bias, past_key_values, cache_position)
        hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = _drop(hidden_states, self.p, self.training)
        return hidden_states, past_key_values


class T5ForConditionalGeneration(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.model_dim = c.d_model
        self.shared = nn.Embedding(c.vocab_size, c.d_model)
        c.is_decoder = False
        self.encoder = T5Stack(c, c.num_layers, self.shared)
        c.is_decoder = True
        self.decoder = T5Stack(c, c.num_decoder_layers, self.shared)
        c.is_decoder = False
        self.lm_head = Linear(c.d_model, c.vocab_size, bias=False)
        if c.tie_word_embeddings:
            self.lm_head.weight = self.shared.weight
        self.attn_impl = "eager"
        self.gradient_checkpointing = False

    def get_input_embeddings(self):
        return self.shared

    def _shift_right(self, input_ids):
        decoder_start_token_id = pad_token_id = 0  # T5Config: decoder_start_token_id = pad_token_id = 0
        shifted_input_ids = input_ids.new_zeros(input_ids.shape)
        shifted_input_ids[..., 1:] = input_ids[..., :-1].clone()
        shifted_input_ids[..., 0] = decoder_start_token_id
        shifted_input_ids.masked_fill_(shifted_input_ids == -100, pad_token_id)
        return shifted_input_ids

    def forward(self, input_ids, labels=None, decoder_input_ids=None):
        # gradient_checkpointing_enable: T5Stack.gradient_checkpointing and T5Attention.gradient_checkpointing
        # (_set_gradient_checkpointing sets every module's attribute)
        for m in self.modules():
            if m is not self and hasattr(m, "gradient_checkpointing"):
                m.gradient_checkpointing = self.gradient_checkpointing
        hidden_states, _ = self.encoder(input_ids)
        if labels is not None and decoder_input_ids is None:
            decoder_input_ids = self._shift_right(labels)
        # decoder_outputs (last_hidden_state, past_key_values) is a local until the forward returns
        decoder_outputs = self.decoder(decoder_input_ids, encoder_hidden_states=hidden_states)
        sequence_output = decoder_outputs[0]
        if self.config.tie_word_embeddings:
            sequence_output = sequence_output * (self.model_dim ** -0.5)
        lm_logits = self.lm_head(sequence_output)
        loss = None
        if labels is not None:
            loss_fct = nn.CrossEntropyLoss(ignore_index=-100)
            loss = loss_fct(lm_logits.view(-1, lm_logits.size(-1)), labels.view(-1))
        return loss, lm_logits


    def forward_cached(self, decoder_input_ids, encoder_hidden_states, attention_mask, past_key_values,
                       cache_position):
        # T5ForConditionalGeneration.forward as generate() calls it: encoder_outputs given (hidden_states =
        # encoder_outputs[0]), the decoder with the cache, the rescale when tied, lm_head over the decoder's
        # positions (no logits_to_keep in this forward); the Seq2SeqLMOutput's logits
        decoder_outputs = self.decoder(decoder_input_ids, encoder_hidden_states=encoder_hidden_states,
                                       encoder_attention_mask=attention_mask, past_key_values=past_key_values,
                                       cache_position=cache_position)
        sequence_output = decoder_outputs[0]
        if self.config.tie_word_embeddings:
            sequence_output = sequence_output * (self.model_dim ** -0.5)
        return self.lm_head(sequence_output)


def attention_mask_for_generation(input_ids, pad, eos):
    """GenerationMixin._prepare_attention_mask_for_generation (generation/utils.py @000034a) for token ids: the
    default mask, the padding's, the one kept (their locals freed when it returns)."""
    default_attention_mask = torch.ones(input_ids.shape[:2], dtype=torch.long)
    is_pad_token_in_inputs = torch.isin(input_ids, pad).any()
    is_pad_token_not_equal_to_eos_token_id = ~(torch.isin(eos, pad).any())
    can_infer_attention_mask = is_pad_token_in_inputs * is_pad_token_not_equal_to_eos_token_id
    attention_mask_from_padding = input_ids.ne(pad).long()
    attention_mask = (attention_mask_from_padding * can_infer_attention_mask
                      + default_attention_mask * ~can_infer_attention_mask)
    del default_attention_mask, is_pad_token_in_inputs, is_pad_token_not_equal_to_eos_token_id
    del can_infer_attention_mask, attention_mask_from_padding
    return attention_mask


def prepare_generation(model, input_ids):
    """GenerationMixin.generate (generation/utils.py @000034a44ef887621d9b36001a5eb7c46e64cb3f) of
    T5ForConditionalGeneration up to its decoding loop: the special tokens, the attention mask, the encoder once
    over input_ids (batch rows), the decoder's start ids. Returns (decoder ids, encoder_hidden_states,
    attention_mask, the special tokens (pad, eos, decoder_start): generate()'s locals to its end)."""
    B = input_ids.shape[0]
    # _prepare_special_tokens: pad_token_id, eos_token_id, decoder_start_token_id as tensors (T5Config: 0, 1, 0)
    pad = torch.tensor(0, dtype=torch.long)
    eos = torch.tensor([1], dtype=torch.long)
    decoder_start = torch.tensor(0, dtype=torch.long)
    attention_mask = attention_mask_for_generation(input_ids, pad, eos)
    # _prepare_encoder_decoder_kwargs_for_generation: encoder(input_ids, attention_mask, return_dict=True)
    encoder_hidden_states = model.encoder(input_ids, attention_mask=attention_mask)[0]
    # _prepare_decoder_input_ids_for_generation: torch.ones((batch_size, 1), dtype=long) * decoder_start_token_id
    dec_ids = torch.ones((B, 1), dtype=torch.long) * decoder_start
    return dec_ids, encoder_hidden_states, attention_mask, (pad, eos, decoder_start)


def generate(model, input_ids, max_new_tokens, on_phase=lambda name: None, on_step_end=lambda: None):
    """GenerationMixin.generate (generation/utils.py @000034a44ef887621d9b36001a5eb7c46e64cb3f) for an
    encoder-decoder, greedy (do_sample False, num_beams 1), under torch.no_grad(), as it runs
    T5ForConditionalGeneration: on_phase("prefill") before anything (the encoder and the first step),
    on_phase("decodeK") before step K >= 1, on_step_end() after each step."""
    B = input_ids.shape[0]
    on_phase("prefill")
    dec_ids, encoder_hidden_states, attention_mask, (pad, eos, decoder_start) = prepare_generation(model, input_ids)
    # _prepare_cache_for_generation: EncoderDecoderCache(DynamicCache(), DynamicCache())
    cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
    # _sample: unfinished_sequences; _get_initial_cache_position: torch.ones(cur_len).cumsum(0) - 1
    unfinished_sequences = torch.ones(B, dtype=torch.long)
    cache_position = torch.ones(dec_ids.shape[1], dtype=torch.int64).cumsum(0) - 1
    model_inputs = None
    for step in range(max_new_tokens):
        if step:
            on_phase("decode%d" % step)
        # prepare_inputs_for_generation: _cache_dependant_input_preparation (input_ids[:, cache_position] when
        # input_ids is longer than cache_position), decoder_input_ids = input_ids.clone(); the dict rebound
        cur = dec_ids
        if cur.shape[1] != cache_position.shape[0]:
            cur = cur[:, cache_position]
        model_inputs = {"decoder_input_ids": cur.clone(memory_format=torch.contiguous_format)}
        del cur
        logits = model.forward_cached(model_inputs["decoder_input_ids"], encoder_hidden_states, attention_mask, cache,
                                      cache_position)
        # _update_model_kwargs_for_generation (encoder-decoder, no decoder_attention_mask): cache_position only
        cache_position = cache_position[-1:] + 1
        next_token_logits = logits[:, -1, :].to(copy=True, dtype=torch.float32)
        next_tokens = torch.argmax(next_token_logits, dim=-1)
        next_tokens = next_tokens * unfinished_sequences + pad * (1 - unfinished_sequences)
        dec_ids = torch.cat([dec_ids, next_tokens[:, None]], dim=-1)
        # `del outputs`: the logits; next_token_logits and next_tokens live until rebound
        del logits
        on_step_end()
    del cache, model_inputs, encoder_hidden_states, attention_mask
    return dec_ids


def count(cfg):
    from check_params import meta_numel  # every factory call makes a meta tensor: no storage
    return meta_numel(lambda: T5ForConditionalGeneration(Config(cfg)))


def main(paths):
    for p in paths:
        print(p, count(json.load(open(p))))


if __name__ == "__main__":
    main(sys.argv[1:])
