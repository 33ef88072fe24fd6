"""whisper_replica.py -- WhisperForConditionalGeneration's modules as PyTorch modules, written from the
transformers source, built on the meta device and counted by
`/usr/bin/python3 whisper_replica.py CONFIG...` (named_parameters(), tied weights once).

Source read: huggingface/transformers @ efa7189c5546a94e8c1194b2ccc6669e0f7ad65e
  configuration_whisper.py WhisperConfig.__init__: the defaults (whisper-tiny's sizes: vocab_size 51865,
      num_mel_bins 80, d_model 384, encoder/decoder_layers 4, encoder/decoder_attention_heads 6,
      encoder/decoder_ffn_dim 1536, max_source_positions 1500, max_target_positions 448, dropout,
      attention_dropout, activation_dropout 0.0, activation_function "gelu", decoder_start_token_id 50257,
      pad_token_id 50256, use_cache True); tie_word_embeddings PretrainedConfig's True.
  modeling_whisper.py:
      WhisperAttention.__init__: k_proj nn.Linear(embed_dim, embed_dim, bias=False), v_proj, q_proj,
          out_proj nn.Linear(embed_dim, embed_dim, bias=True);
      WhisperSdpaAttention.forward (WHISPER_ATTENTION_CLASSES["sdpa"], the default): query_states =
          self._shape(self.q_proj(hidden_states), tgt_len, bsz) (_shape: view(bsz, seq_len, num_heads,
          head_dim).transpose(1, 2).contiguous()); key/value_states = self._shape(self.k_proj(current_states),
          -1, bsz) with current_states the encoder's output for the cross-attention; past_key_value.update
          when the decoder caches; is_causal = self.is_causal and causal_mask is None and tgt_len > 1;
          F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=self.dropout if training,
          is_causal); attn_output.transpose(1, 2).reshape(bsz, tgt_len, embed_dim); out_proj;
      WhisperEncoderLayer.forward: residual + dropout(self_attn(self_attn_layer_norm(h)));
          residual + dropout(fc2(dropout(act(fc1(final_layer_norm(h))), activation_dropout)));
          the fp16 clamp (not run: fp32 and bf16 only here);
      WhisperDecoderLayer.forward: the same with encoder_attn (encoder_attn_layer_norm) between;
      WhisperEncoder.__init__ / forward: conv1 nn.Conv1d(num_mel_bins, d_model, 3, padding=1), conv2
          nn.Conv1d(d_model, d_model, 3, stride=2, padding=1), embed_positions nn.Embedding(
          max_source_positions, d_model).requires_grad_(False); input_features.shape[-1] must be
          max_source_positions * 2; gelu(conv1(x)), gelu(conv2(.)), permute(0, 2, 1) + embed_positions.weight,
          dropout, the layers (LayerDrop: torch.rand([]) per layer in training, 0.0 here), layer_norm;
      WhisperDecoder.__init__ / forward: embed_tokens nn.Embedding(vocab_size, d_model, padding_idx),
          embed_positions WhisperPositionalEmbedding(max_target_positions, d_model) (forward:
          self.weight[position_ids]); use_cache (config.use_cache) makes EncoderDecoderCache.from_legacy_cache
          (DynamicCache(), DynamicCache()); cache_position = arange(T), position_ids =
          cache_position.unsqueeze(0).repeat(B, 1); inputs_embeds + positions, dropout;
          _update_causal_mask: None for sdpa without an attention mask
          (AttentionMaskConverter._ignore_causal_mask_sdpa); the layers; layer_norm;
      WhisperEncoder.forward / WhisperDecoder.forward under gradient_checkpointing and training: every layer through
          self._gradient_checkpointing_func(layer.__call__, ...) (run non-reentrant: vctorch._checkpoint2x), the
          decoder's use_cache set False ("incompatible with gradient checkpointing");
      WhisperModel.get_input_embeddings: decoder.embed_tokens (PEFT's enable_input_require_grads hooks it);
      WhisperModel.forward: _mask_input_features (apply_spec_augment False: unchanged), encoder, decoder;
      WhisperForConditionalGeneration.__init__: proj_out nn.Linear(d_model, vocab_size, bias=False) tied to
          embed_tokens (_tied_weights_keys); forward: labels -> decoder_input_ids = shift_tokens_right(labels,
          pad_token_id, decoder_start_token_id) (new_zeros, [:, 1:] = labels[:, :-1].clone(), [:, 0] = start,
          masked_fill_(== -100, pad)); lm_logits = proj_out(outputs[0]); CrossEntropyLoss()(lm_logits.view(-1, V),
          labels.reshape(-1)).
  cache_utils.py DynamicCache.update (4.4x): a layer's first update keeps the states themselves.
Every nn.Linear is reference.Linear (at::linear as PyTorch 2.x runs it), every LayerNorm vctorch._LayerNorm2x,
every Conv1d vctorch's 2.x convolution, SDPA vctorch._sdpa_math_2x (the math backend), dropout vctorch.dropout2x,
as the harness's other replicas.
"""
import json
import os
import sys

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
    LayerNorm = vctorch._LayerNorm2x
    Conv1d = vctorch._conv2x_class(nn.Conv1d)
except ImportError:  # pragma: no cover
    vctorch = None
    Linear, LayerNorm, Conv1d = nn.Linear, nn.LayerNorm, nn.Conv1d

DEFAULTS = {  # WhisperConfig.__init__
    "vocab_size": 51865, "num_mel_bins": 80, "encoder_layers": 4, "encoder_attention_heads": 6,
    "decoder_layers": 4, "decoder_attention_heads": 6, "decoder_ffn_dim": 1536, "encoder_ffn_dim": 1536,
    "encoder_layerdrop": 0.0, "decoder_layerdrop": 0.0, "decoder_start_token_id": 50257, "use_cache": True,
    "activation_function": "gelu", "d_model": 384, "dropout": 0.0, "attention_dropout": 0.0,
    "activation_dropout": 0.0, "max_source_positions": 1500, "max_target_positions": 448, "pad_token_id": 50256,
    "tie_word_embeddings": True, "apply_spec_augment": False,
}


class Config:
    def __init__(self, cfg):
        for k, v in DEFAULTS.items():
            setattr(self, k, cfg.get(k, v) if cfg.get(k) is not None else v)


def _drop(x, p, training):
    if p <= 0 or not training:
        return x  # F.dropout with p 0 / in eval returns its input
    return vctorch.dropout2x(x, p, training) if vctorch else F.dropout(x, p, training)


def _act(name):
    if name == "gelu":  # ACT2FN["gelu"]: GELUActivation -> nn.functional.gelu
        return F.gelu
    if name == "relu":
        return F.relu
    raise ValueError("activation %r" % name)


def _sdpa(q, k, v, dropout_p, is_causal):
    if vctorch:
        return vctorch._sdpa_math_2x(q, k, v, None, dropout_p, is_causal, dropout=vctorch.dropout2x)
    raise RuntimeError("the forward needs tools/vctorch.py")  # pragma: no cover


class WhisperAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0, is_causal=False):
        super().__init__()
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.is_causal = is_causal
        self.k_proj = Linear(embed_dim, embed_dim, bias=False)
        self.v_proj = Linear(embed_dim, embed_dim, bias=True)
        self.q_proj = Linear(embed_dim, embed_dim, bias=True)
        self.out_proj = Linear(embed_dim, embed_dim, bias=True)

    def _shape(self, tensor, seq_len, bsz):
        return tensor.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, hidden_states, key_value_states=None, past_key_value=None):
        is_cross_attention = key_value_states is not None
        bsz, tgt_len, _ = hidden_states.size()
        query_states = self._shape(self.q_proj(hidden_states), tgt_len, bsz)
        current_states = key_value_states if key_value_states is not None else hidden_states
        key_states = self._shape(self.k_proj(current_states), -1, bsz)
        value_states = self._shape(self.v_proj(current_states), -1, bsz)
        if past_key_value is not None:  # DynamicCache.update's first update: the states themselves
            past_key_value.append((key_states, value_states))
        is_causal = True if self.is_causal and tgt_len > 1 else False  # causal_mask is None (sdpa, no mask)
        attn_output = _sdpa(query_states, key_states, value_states, self.dropout if self.training else 0.0, is_causal)
        attn_output = attn_output.transpose(1, 2)
        attn_output = attn_output.reshape(bsz, tgt_len, self.embed_dim)
        attn_output = self.out_proj(attn_output)
        return attn_output


class WhisperEncoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_dim = c.d_model
        self.self_attn = WhisperAttention(c.d_model, c.encoder_attention_heads, c.attention_dropout)
        self.self_attn_layer_norm = LayerNorm(c.d_model)
        self.dropout, self.activation_dropout = c.dropout, c.activation_dropout
        self.activation_fn = _act(c.activation_function)
        self.fc1 = Linear(c.d_model, c.encoder_ffn_dim)
        self.fc2 = Linear(c.encoder_ffn_dim, c.d_model)
        self.final_layer_norm = LayerNorm(c.d_model)

    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = self.self_attn_layer_norm(hidden_states)
        hidden_states = self.self_attn(hidden_states=hidden_states)
        hidden_states = _drop(hidden_states, self.dropout, self.training)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = self.activation_fn(self.fc1(hidden_states))
        hidden_states = _drop(hidden_states, self.activation_dropout, self.training)
        hidden_states = self.fc2(hidden_states)
        hidden_states = _drop(hidden_states, self.dropout, self.training)
        hidden_states = residual + hidden_states
        return hidden_states


class WhisperDecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = WhisperAttention(c.d_model, c.decoder_attention_heads, c.attention_dropout, is_causal=True)
        self.dropout, self.activation_dropout = c.dropout, c.activation_dropout
        self.activation_fn = _act(c.activation_function)
        self.self_attn_layer_norm = LayerNorm(c.d_model)
        self.encoder_attn = WhisperAttention(c.d_model, c.decoder_attention_heads, c.attention_dropout)
        self.encoder_attn_layer_norm = LayerNorm(c.d_model)
        self.fc1 = Linear(c.d_model, c.decoder_ffn_dim)
        self.fc2 = Linear(c.decoder_ffn_dim, c.d_model)
        self.final_layer_norm = LayerNorm(c.d_model)

    def forward(self, hidden_states, encoder_hidden_states, self_cache=None, cross_cache=None):
        residual = hidden_states
        hidden_states = self.self_attn_layer_norm(hidden_states)
        hidden_states = self.self_attn(hidden_states=hidden_states, past_key_value=self_cache)
        hidden_states = _drop(hidden_states, self.dropout, self.training)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.encoder_attn_layer_norm(hidden_states)
        hidden_states = self.encoder_attn(hidden_states=hidden_states, key_value_states=encoder_hidden_states,
                                          past_key_value=cross_cache)
        hidden_states = _drop(hidden_states, self.dropout, self.training)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = self.activation_fn(self.fc1(hidden_states))
        hidden_states = _drop(hidden_states, self.activation_dropout, self.training)
        hidden_states = self.fc2(hidden_states)
        hidden_states = _drop(hidden_states, self.dropout, self.training)
        hidden_states = residual + hidden_states
        return hidden_states


class WhisperEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.dropout = c.dropout
        self.conv1 = Conv1d(c.num_mel_bins, c.d_model, kernel_size=3, padding=1)
        self.conv2 = Conv1d(c.d_model, c.d_model, kernel_size=3, stride=2, padding=1)
        self.embed_positions = nn.Embedding(c.max_source_positions, c.d_model)
        self.embed_positions.requires_grad_(False)
        self.layers = nn.ModuleList([WhisperEncoderLayer(c) for _ in range(c.encoder_layers)])
        self.layer_norm = LayerNorm(c.d_model)
        self.gradient_checkpointing = False

    def forward(self, input_features):
        expected_seq_length = self.config.max_source_positions * self.conv1.stride[0] * self.conv2.stride[0]
        if input_features.shape[-1] != expected_seq_length:
            raise ValueError("Whisper expects the mel input features to be of length %d" % expected_seq_length)
        inputs_embeds = F.gelu(self.conv1(input_features))
        inputs_embeds = F.gelu(self.conv2(inputs_embeds))
        inputs_embeds = inputs_embeds.permute(0, 2, 1)
        embed_pos = self.embed_positions.weight
        hidden_states = inputs_embeds + embed_pos
        hidden_states = _drop(hidden_states, self.dropout, self.training)
        for layer in self.layers:
            if self.training:
                torch.rand([])  # LayerDrop's dropout_probability (layerdrop 0.0: never skipped)
            if self.gradient_checkpointing and self.training:
                # self._gradient_checkpointing_func(encoder_layer.__call__, hidden_states, None, head_mask,
                # output_attentions): torch.utils.checkpoint with use_reentrant=False (as the harness runs every
                # family): the harness's port of 2.x's
                hidden_states = vctorch._checkpoint2x(layer.__call__, hidden_states)
                continue
            hidden_states = layer(hidden_states)
        hidden_states = self.layer_norm(hidden_states)
        return hidden_states


class WhisperDecoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.dropout = c.dropout
        self.embed_tokens = nn.Embedding(c.vocab_size, c.d_model, c.pad_token_id)
        self.embed_positions = nn.Embedding(c.max_target_positions, c.d_model)  # WhisperPositionalEmbedding
        self.layers = nn.ModuleList([WhisperDecoderLayer(c) for _ in range(c.decoder_layers)])
        self.layer_norm = LayerNorm(c.d_model)
        self.gradient_checkpointing = False

    def forward(self, input_ids, encoder_hidden_states):
        input_shape = input_ids.size()
        inputs_embeds = self.embed_tokens(input_ids)
        use_cache = self.config.use_cache
        if self.gradient_checkpointing and self.training:
            use_cache = False  # "`use_cache = True` is incompatible with gradient checkpointing"
        # EncoderDecoderCache(DynamicCache(), DynamicCache()): per layer (self, cross) key/value states
        caches = ([], []) if use_cache else (None, None)
        cache_position = torch.arange(0, input_shape[1])
        position_ids = cache_position.unsqueeze(0).repeat(input_shape[0], 1)
        positions = self.embed_positions.weight[position_ids]  # WhisperPositionalEmbedding.forward
        hidden_states = inputs_embeds + positions
        hidden_states = _drop(hidden_states, self.dropout, self.training)
        for layer in self.layers:
            if self.training:
                torch.rand([])
            if self.gradient_checkpointing and self.training:
                # self._gradient_checkpointing_func(decoder_layer.__call__, hidden_states, causal_mask (None),
                # encoder_hidden_states, None, ..., None (past_key_value), ...)
                hidden_states = vctorch._checkpoint2x(layer.__call__, hidden_states, encoder_hidden_states, None, None)
                continue
            hidden_states = layer(hidden_states, encoder_hidden_states, caches[0], caches[1])
        hidden_states = self.layer_norm(hidden_states)
        return hidden_states, caches


class WhisperForConditionalGeneration(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.encoder = WhisperEncoder(c)
        self.decoder = WhisperDecoder(c)
        self.proj_out = Linear(c.d_model, c.vocab_size, bias=False)
        if c.tie_word_embeddings:
            self.proj_out.weight = self.decoder.embed_tokens.weight
        self.attn_impl = "sdpa"
        self.gradient_checkpointing = False

    def shift_tokens_right(self, input_ids):
        c = self.config
        shifted_input_ids = input_ids.new_zeros(input_ids.shape)
        shifted_input_ids[:, 1:] = input_ids[:, :-1].clone()
        shifted_input_ids[:, 0] = c.decoder_start_token_id
        shifted_input_ids.masked_fill_(shifted_input_ids == -100, c.pad_token_id)
        return shifted_input_ids

    def get_input_embeddings(self):  # WhisperModel.get_input_embeddings: the decoder's embed_tokens
        return self.decoder.embed_tokens

    def forward(self, input_features, labels=None, decoder_input_ids=None):
        # gradient_checkpointing_enable sets WhisperEncoder's and WhisperDecoder's gradient_checkpointing
        self.encoder.gradient_checkpointing = self.decoder.gradient_checkpointing = self.gradient_checkpointing
        if labels is not None:
            if labels.shape[1] > self.config.max_target_positions:
                raise ValueError("Labels' sequence length cannot exceed max_target_positions")
            if decoder_input_ids is None:
                decoder_input_ids = self.shift_tokens_right(labels)
        encoder_hidden_states = self.encoder(input_features)  # encoder_outputs: held to the end
        # outputs (last_hidden_state, past_key_values, encoder_last_hidden_state): a local until the forward returns
        outputs = self.decoder(decoder_input_ids, encoder_hidden_states)
        lm_logits = self.proj_out(outputs[0])
        loss = None
        if labels is not None:
            loss_fct = nn.CrossEntropyLoss()
            loss = loss_fct(lm_logits.view(-1, self.config.vocab_size), labels.reshape(-1))
        return loss, lm_logits


# ---- generate() (issue 31 item 4): the cached forward and the loop ----

def _attention_cached(attn, hidden_states, layer_idx, cache, key_value_states=None):
    """WhisperSdpaAttention.forward (modeling_whisper.py @ efa7189c) with past_key_value an EncoderDecoderCache:
    is_updated = past_key_value.is_updated.get(layer_idx); the cross-attention sets is_updated[layer_idx] and uses
    cross_attention_cache, the self-attention self_attention_cache; a cross-attention already updated takes
    key_cache[layer_idx] / value_cache[layer_idx] (k_proj and v_proj not run), otherwise key/value_states =
    _shape(k_proj(current_states)) and past_key_value.update(...) (DynamicCache.update: the first update keeps them,
    later ones torch.cat); no attention mask under generate (sdpa: _update_causal_mask None), is_causal = self.is_causal
    and tgt_len > 1."""
    is_cross_attention = key_value_states is not None
    bsz, tgt_len, _ = hidden_states.size()
    query_states = attn._shape(attn.q_proj(hidden_states), tgt_len, bsz)
    is_updated = cache.is_updated.get(layer_idx)
    if is_cross_attention:
        cache.is_updated[layer_idx] = True
        kv_cache = cache.cross_attention_cache
    else:
        kv_cache = cache.self_attention_cache
    current_states = key_value_states if key_value_states is not None else hidden_states
    if is_cross_attention and len(kv_cache.key_cache) > layer_idx and is_updated:
        key_states = kv_cache.key_cache[layer_idx]
        value_states = kv_cache.value_cache[layer_idx]
    else:
        key_states = attn._shape(attn.k_proj(current_states), -1, bsz)
        value_states = attn._shape(attn.v_proj(current_states), -1, bsz)
        key_states, value_states = kv_cache.update(key_states, value_states, layer_idx)
    is_causal = True if attn.is_causal and tgt_len > 1 else False
    attn_output = _sdpa(query_states, key_states, value_states, 0.0, is_causal)
    attn_output = attn_output.transpose(1, 2)
    attn_output = attn_output.reshape(bsz, tgt_len, attn.embed_dim)
    attn_output = attn.out_proj(attn_output)
    return attn_output


def _decoder_layer_cached(layer, hidden_states, encoder_hidden_states, layer_idx, cache):
    """WhisperDecoderLayer.forward (eval: the dropouts are identities) with the EncoderDecoderCache."""
    residual = hidden_states
    hidden_states = layer.self_attn_layer_norm(hidden_states)
    hidden_states = _attention_cached(layer.self_attn, hidden_states, layer_idx, cache)
    hidden_states = residual + hidden_states
    residual = hidden_states
    hidden_states = layer.encoder_attn_layer_norm(hidden_states)
    hidden_states = _attention_cached(layer.encoder_attn, hidden_states, layer_idx, cache, encoder_hidden_states)
    hidden_states = residual + hidden_states
    residual = hidden_states
    hidden_states = layer.final_layer_norm(hidden_states)
    hidden_states = layer.activation_fn(layer.fc1(hidden_states))
    hidden_states = layer.fc2(hidden_states)
    hidden_states = residual + hidden_states
    return hidden_states


def forward_cached(model, decoder_input_ids, encoder_hidden_states, cache, cache_position):
    """WhisperForConditionalGeneration.forward as generate() calls it (encoder_outputs given: the encoder not run):
    WhisperDecoder.forward: inputs_embeds = embed_tokens(input_ids); position_ids =
    cache_position.unsqueeze(0).repeat(B, 1); positions = embed_positions.weight[position_ids]; hidden_states =
    inputs_embeds + positions; the layers with the cache; layer_norm; lm_logits = proj_out(outputs[0]) (every
    position: no logits_to_keep at efa7189c)."""
    dec = model.decoder
    inputs_embeds = dec.embed_tokens(decoder_input_ids)
    position_ids = cache_position.unsqueeze(0).repeat(decoder_input_ids.shape[0], 1)
    positions = dec.embed_positions.weight[position_ids]
    hidden_states = inputs_embeds + positions  # inputs_embeds, positions, position_ids: locals until it returns
    for idx, layer in enumerate(dec.layers):
        hidden_states = _decoder_layer_cached(layer, hidden_states, encoder_hidden_states, idx, cache)
    hidden_states = dec.layer_norm(hidden_states)
    return model.proj_out(hidden_states)


def prepare_generation(model, input_features, init_len):
    """WhisperGenerationMixin.generate's short-form path (generation_whisper.py @000dccdb) and GenerationMixin.generate
    (generation/utils.py @000034a) up to the decoding loop, as generate() below runs them: the init tokens, the
    segment copy, the default attention mask, the encoder once (batch rows), the decoder's input ids. Returns
    (decoder ids, encoder_hidden_states, attention_mask, the locals WhisperGenerationMixin.generate holds to its
    end)."""
    c = model.config
    B = input_features.shape[0]
    # 2: input_stride = conv1.stride * conv2.stride; num_segment_frames = input_stride * max_source_positions
    num_segment_frames = 2 * c.max_source_positions
    total_input_frames = input_features.shape[-1]
    # _retrieve_init_tokens: torch.as_tensor(init_tokens, dtype=long).expand(batch_size, -1)
    tokens = [c.decoder_start_token_id] + [(c.decoder_start_token_id + 1 + i) % c.vocab_size for i in range(init_len - 1)]
    init_tokens = torch.as_tensor([tokens], dtype=torch.long).expand(B, -1)
    # _retrieve_max_frames_and_seek (short-form): ones((B,), long) * total_input_frames, zeros((B,), long)
    max_frames = torch.ones((B,), dtype=torch.long) * total_input_frames
    seek = torch.zeros((B,), dtype=torch.long)
    batch_idx_map = list(range(B))
    # 6: while (seek < max_frames).any(): one segment for short-form
    seek_num_frames = (max_frames - seek).clamp(max=num_segment_frames)
    # _get_input_segment: input_features[i : i + 1, :, seek : seek + seek_num_frames] per sample, torch.cat(dim=0)
    segment_input = torch.cat([input_features[i:i + 1, :, seek[i]:seek[i] + seek_num_frames[i]] for i in range(B)],
                              dim=0)
    # _prepare_decoder_input_ids: init_tokens[batch_idx_map] (no previous segment, no prompt_ids)
    decoder_input_ids = init_tokens[batch_idx_map]
    # generate_with_fallback -> GenerationMixin.generate(segment_input, decoder_input_ids=..., attention_mask=None)
    # _prepare_attention_mask_for_generation: not input ids (float features) -> default_attention_mask =
    # torch.ones(inputs_tensor.shape[:2], dtype=torch.long), kept in model_kwargs
    attention_mask = torch.ones(segment_input.shape[:2], dtype=torch.long)
    # _prepare_encoder_decoder_kwargs_for_generation: encoder(segment_input) (the mask ignored by WhisperEncoder)
    encoder_hidden_states = model.encoder(segment_input)
    # _prepare_decoder_input_ids_for_generation: decoder_input_ids_start = ones((B, 1), long) * decoder_start;
    # whisper's decoder_input_ids are kept as given (they start with it)
    decoder_input_ids_start = torch.ones((B, 1), dtype=torch.long) * c.decoder_start_token_id
    del decoder_input_ids_start
    dec_ids = decoder_input_ids
    return dec_ids, encoder_hidden_states, attention_mask, (segment_input, decoder_input_ids, init_tokens, max_frames,
                                                            seek, seek_num_frames)


def generate(model, input_features, init_len, max_new_tokens, on_phase=lambda name: None, on_step_end=lambda: None):
    """WhisperGenerationMixin.generate (generation_whisper.py @000dccdb6476f364e7997578cb3e25b570b6e838), short-form
    (the features' 2 x max_source_positions frames = num_segment_frames), greedy (temperature None: one pass of
    generate_with_fallback), under torch.no_grad(), with a generation_config whose init tokens are init_len long
    (_retrieve_init_tokens: [decoder_start_token_id] alone for a config without lang_to_id / forced_decoder_ids /
    no_timestamps_token_id; [<|startoftranscript|>, language, task, <|notimestamps|>] for a published multilingual
    one given the language) and no suppress_tokens / begin_suppress_tokens / no_speech_threshold (no logits
    processor). GenerationMixin.generate's encoder-decoder path as t5_replica.generate follows it
    (generation/utils.py @000034a). on_phase("prefill") before anything (the encoder and the first step),
    on_phase("decodeK") before step K >= 1, on_step_end() after each step."""
    c = model.config
    B = input_features.shape[0]
    on_phase("prefill")
    dec_ids, encoder_hidden_states, attention_mask, held = prepare_generation(model, input_features, init_len)
    # _prepare_cache_for_generation: EncoderDecoderCache(DynamicCache(), DynamicCache())
    from t5_replica import DynamicCache, EncoderDecoderCache
    cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
    unfinished_sequences = torch.ones(B, dtype=torch.long)
    pad = torch.tensor(c.pad_token_id, dtype=torch.long)  # _prepare_special_tokens
    cache_position = torch.ones(dec_ids.shape[1], dtype=torch.int64).cumsum(0) - 1
    model_inputs = None
    for step in range(max_new_tokens):
        if step:
            on_phase("decode%d" % step)
        cur = dec_ids
        if cur.shape[1] != cache_position.shape[0]:
            cur = cur[:, cache_position]
        model_inputs = {"decoder_input_ids": cur.clone(memory_format=torch.contiguous_format)}
        del cur
        logits = forward_cached(model, model_inputs["decoder_input_ids"], encoder_hidden_states, cache,
                                cache_position)
        cache_position = cache_position[-1:] + 1
        next_token_logits = logits[:, -1, :].to(copy=True, dtype=torch.float32)
        next_tokens = torch.argmax(next_token_logits, dim=-1)
        next_tokens = next_tokens * unfinished_sequences + pad * (1 - unfinished_sequences)
        dec_ids = torch.cat([dec_ids, next_tokens[:, None]], dim=-1)
        del logits
        on_step_end()
    del cache, model_inputs, encoder_hidden_states, attention_mask, held
    return dec_ids


def count(cfg):
    from check_params import meta_numel  # every factory call makes a meta tensor: no storage
    return meta_numel(lambda: WhisperForConditionalGeneration(Config(cfg)))


def main(paths):
    for p in paths:
        print(p, count(json.load(open(p))))


if __name__ == "__main__":
    main(sys.argv[1:])
