"""bart_replica.py -- BartForConditionalGeneration's modules as PyTorch modules, written from the transformers
source, measured by measure_llm.py (--mode train / infer) and counted by
`/usr/bin/python3 bart_replica.py CONFIG...` (named_parameters(), tied weights once).

Source read: huggingface/transformers @ efa7189c5546a94e8c1194b2ccc6669e0f7ad65e, models/bart/modeling_bart.py
(configuration_bart.py BartConfig.__init__ for the defaults: facebook/bart-large's sizes, dropout 0.1, attention
and activation dropout 0.0, scale_embedding False, use_cache True, pad 1, decoder_start 2; tie_word_embeddings
PretrainedConfig's True):
  BartLearnedPositionalEmbedding.forward: positions = torch.arange(past, past + seq_len).expand(bsz, -1);
      super().forward(positions + 2) (nn.Embedding(max_position_embeddings + 2, d_model));
  BartScaledWordEmbedding.forward: super().forward(input_ids) * embed_scale (sqrt(d_model) if scale_embedding
      else 1.0);
  BartSdpaAttention.forward (BART_ATTENTION_CLASSES["sdpa"], the default): query_states = self.q_proj(h);
      key/value_states = self._shape(self.k_proj(current_states), -1, bsz) (view, transpose(1, 2), contiguous;
      current_states the encoder's output for the cross-attention); past_key_value = (key_states, value_states)
      when is_decoder; query_states = self._shape(query_states, tgt_len, bsz); is_causal = self.is_causal and
      attention_mask is None and tgt_len > 1; F.scaled_dot_product_attention(q, k, v, attn_mask=None,
      dropout_p=self.dropout if training else 0.0, is_causal); transpose(1, 2).reshape(bsz, tgt_len, embed_dim);
      out_proj (every projection with a bias);
  BartEncoderLayer.forward: residual = h; self_attn; dropout; residual + h; self_attn_layer_norm; residual = h;
      activation_fn(fc1(h)); dropout(activation_dropout); fc2; dropout; residual + h; final_layer_norm (the
      fp16 clamp: fp32 and bf16 only here); BartDecoderLayer.forward: the same with encoder_attn and
      encoder_attn_layer_norm after the self-attention; present_key_value = self + cross (k, v) when use_cache;
  BartEncoder.forward: inputs_embeds = embed_tokens(input_ids); embed_pos = embed_positions(input);
      hidden_states = inputs_embeds + embed_pos; layernorm_embedding; dropout; no attention mask; the layers
      (torch.rand([]) per layer in training: LayerDrop 0.0); BartDecoder.forward: the same over
      decoder_input_ids, _prepare_4d_causal_attention_mask_for_sdpa None (no mask, query length = key length),
      next_decoder_cache (a tuple of every layer's present_key_value) when use_cache; under
      gradient_checkpointing in training, self._gradient_checkpointing_func(layer.__call__, ...) (run
      non-reentrant: vctorch._checkpoint2x) and use_cache False;
  BartModel: shared BartScaledWordEmbedding; the encoder's and decoder's embed_tokens share its weight;
      get_input_embeddings() returns shared (called by neither stack);
  BartForConditionalGeneration: final_logits_bias buffer zeros((1, V)); lm_head nn.Linear(d_model, V, bias=False)
      tied to shared; forward: labels -> use_cache = False, decoder_input_ids = shift_tokens_right(labels,
      pad_token_id, decoder_start_token_id); lm_logits = lm_head(outputs[0]) + final_logits_bias;
      CrossEntropyLoss()(lm_logits.view(-1, V), labels.view(-1)).
model_type "marian" (MarianMTModel, the same modules with marian's differences), read at huggingface/transformers
@00b676f8f0489b88652a31d70751cc540dd06305 models/marian/modeling_marian.py (configuration_marian.py MarianConfig.__init__
through the code index, its commit not given: vocab_size 58101, decoder_vocab_size None -> vocab_size, pad and
decoder_start 58100, eos 0, share_encoder_decoder_embeddings True):
  MarianSinusoidalPositionalEmbedding(nn.Embedding): max_position_embeddings rows (no offset), its weight an
      nn.Parameter(requires_grad=False); forward under @torch.no_grad(): position_ids = torch.arange(past, past +
      seq_len) ([seq_len], no batch), super().forward(position_ids);
  MarianEncoder.forward: inputs_embeds = embed_tokens(input_ids) * embed_scale; embed_pos = embed_positions(input_shape);
      hidden_states = inputs_embeds + embed_pos; dropout (no layernorm_embedding); MarianDecoder.forward the same
      (inputs_embeds = embed_tokens(input); inputs_embeds * embed_scale; positions at past_key_values_length);
  MarianAttention / MarianEncoderLayer / MarianDecoderLayer: "Copied from transformers.models.bart.modeling_bart" (Bart
      -> Marian): the bart modules above (BartSdpaAttention @efa7189c's _shape copies: the row's attention);
  MarianModel: shared = nn.Embedding(vocab_size, d_model, pad) the stacks' embed_tokens when
      share_encoder_decoder_embeddings, else deep copies; get_input_embeddings() is the encoder's embed_tokens;
  MarianMTModel: target_vocab_size = vocab_size if shared else decoder_vocab_size: final_logits_bias buffer
      zeros((1, target)), lm_head nn.Linear(d_model, target, bias=False), tie_weights ties it to the decoder's
      get_input_embeddings(); forward as bart's (labels: use_cache False, shift_tokens_right(labels, pad,
      decoder_start)), the loss over lm_logits.view(-1, decoder_vocab_size).
model_type "pegasus" (PegasusForConditionalGeneration), modeling_pegasus.py @00b676f8 (configuration_pegasus.py
@00e12e7c PegasusConfig.__init__: bart's sizes, pad 0, eos 1, decoder_start 0): marian's embeddings
(PegasusSinusoidalPositionalEmbedding "Copied from" Marian's; the stacks' embed_tokens is shared itself), MBart's pre-LN
layers (PegasusEncoderLayer / PegasusDecoderLayer "Copied from" MBartEncoderLayer / MBartDecoderLayer: residual = h;
h = self_attn_layer_norm(h); self_attn; dropout; residual + h; the cross block the same with encoder_attn_layer_norm;
residual = h; h = final_layer_norm(h); fc1, act, dropout, fc2, dropout; residual + h) and each stack's final
`hidden_states = self.layer_norm(hidden_states)`; PegasusModel.get_input_embeddings() is shared.
model_type "mbart" (MBartForConditionalGeneration), modeling_mbart.py @efa7189c (the same forms @00b676f8 but its newer
attention and decoder positions; configuration_mbart.py @008f5c8c MBartConfig.__init__: bart's defaults and
forced_eos_token_id 2): bart's embeddings (MBartScaledWordEmbedding, MBartLearnedPositionalEmbedding "Copied from" bart's,
the stacks' embed_tokens sharing shared's weight, layernorm_embedding), the pre-LN MBartEncoderLayer / MBartDecoderLayer
above (pegasus's are copies of them), each stack's final layer_norm, and its own shift_tokens_right(labels, pad):
prev_output_tokens = input_ids.clone(); masked_fill_(== -100, pad); index_of_eos = (prev.ne(pad).sum(dim=1) -
1).unsqueeze(-1); decoder_start_tokens = prev.gather(1, index_of_eos).squeeze(); prev[:, 1:] = prev[:, :-1].clone();
prev[:, 0] = decoder_start_tokens.
model_type "m2m_100" (M2M100ForConditionalGeneration: facebook/m2m100_418M, m2m100_1.2B, NLLB-200), modeling_m2m_100.py
@efa7189c (configuration_m2m_100.py @04591daa M2M100Config.__init__, the stored version: vocab_size 128112, relu,
attention_dropout 0.1, layerdrop 0.05, scale_embedding True, pad 1, eos 2, decoder_start 2): M2M100ScaledWordEmbedding
("Copied from" bart's; each stack's own module given shared's weight), M2M100SinusoidalPositionalEmbedding (a
non-persistent buffer `weights` of max_position_embeddings + 2 rows, row padding_idx zeroed, indexed by
create_position_ids_from_input_ids: (cumsum(ne(pad).int()).type_as(mask) + past) * mask, .long() + pad; index_select
under no_grad, .detach()), no layernorm_embedding, the pre-LN M2M100EncoderLayer / M2M100DecoderLayer ("Copied from"
MBart's), each stack's final layer_norm, bart's shift_tokens_right, lm_head tied to shared and no final_logits_bias
(lm_logits = lm_head(outputs[0])); CrossEntropyLoss on lm_logits.view(-1, vocab_size). M2M100Model.get_input_embeddings()
is shared (neither stack calls it).
Every nn.Linear is reference.Linear (at::linear as PyTorch 2.x runs it), every LayerNorm vctorch._LayerNorm2x, SDPA
vctorch._sdpa_math_2x (the math backend), dropout vctorch.dropout2x, as the harness's other replicas.
"""
import copy
import json
import math
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
except ImportError:  # pragma: no cover
    vctorch = None
    Linear, LayerNorm = nn.Linear, nn.LayerNorm

DEFAULTS = {  # BartConfig.__init__
    "vocab_size": 50265, "max_position_embeddings": 1024, "encoder_layers": 12, "encoder_ffn_dim": 4096,
    "encoder_attention_heads": 16, "decoder_layers": 12, "decoder_ffn_dim": 4096, "decoder_attention_heads": 16,
    "encoder_layerdrop": 0.0, "decoder_layerdrop": 0.0, "use_cache": True, "activation_function": "gelu",
    "d_model": 1024, "dropout": 0.1, "attention_dropout": 0.0, "activation_dropout": 0.0,
    "decoder_start_token_id": 2, "scale_embedding": False, "pad_token_id": 1, "tie_word_embeddings": True,
    "eos_token_id": 2,
    # generate()'s logits processors from the config's keys (GenerationConfig.from_model_config; its defaults: none)
    "no_repeat_ngram_size": 0, "forced_bos_token_id": None, "forced_eos_token_id": None, "bad_words_ids": None,
}


PEGASUS_DEFAULTS = dict(DEFAULTS, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)  # PegasusConfig.__init__
MBART_DEFAULTS = dict(DEFAULTS, forced_eos_token_id=2)  # MBartConfig.__init__
M2M_DEFAULTS = dict(DEFAULTS, vocab_size=128112, activation_function="relu", attention_dropout=0.1,
                    encoder_layerdrop=0.05, decoder_layerdrop=0.05, scale_embedding=True)  # M2M100Config.__init__
MARIAN_DEFAULTS = dict(DEFAULTS, vocab_size=58101, pad_token_id=58100, decoder_start_token_id=58100, eos_token_id=0,
                       share_encoder_decoder_embeddings=True, decoder_vocab_size=None)  # MarianConfig.__init__


class Config:
    def __init__(self, cfg):
        self.model_type = cfg.get("model_type", "bart")
        for k, v in {"marian": MARIAN_DEFAULTS, "pegasus": PEGASUS_DEFAULTS, "mbart": MBART_DEFAULTS,
                     "m2m_100": M2M_DEFAULTS}.get(self.model_type, DEFAULTS).items():
            setattr(self, k, cfg.get(k, v) if cfg.get(k) is not None else v)
        if self.model_type == "marian":
            self.decoder_vocab_size = self.decoder_vocab_size or self.vocab_size


PRE_LN = ("pegasus", "mbart", "m2m_100")  # MBartEncoderLayer / MBartDecoderLayer and the stacks' final layer_norm


def _drop(x, p, training):
    if p <= 0 or not training:
        return x  # F.dropout with p 0 / in eval returns its input
    return vctorch.dropout2x(x, p, training) if vctorch else F.dropout(x, p, training)


def _act(name):
    if name == "gelu":  # ACT2FN["gelu"]: GELUActivation -> nn.functional.gelu
        return F.gelu
    if name == "relu":
        return F.relu
    if name in ("swish", "silu"):  # ACT2FN["swish"]: nn.SiLU
        return F.silu
    raise ValueError("activation %r" % name)


class BartLearnedPositionalEmbedding(nn.Embedding):
    def __init__(self, num_embeddings, embedding_dim):
        self.offset = 2
        super().__init__(num_embeddings + self.offset, embedding_dim)

    def forward(self, input_ids, past_key_values_length=0):
        bsz, seq_len = input_ids.shape[:2]
        positions = torch.arange(past_key_values_length, past_key_values_length + seq_len, dtype=torch.long,
                                 device=self.weight.device).expand(bsz, -1)
        return super().forward(positions + self.offset)


class MarianSinusoidalPositionalEmbedding(nn.Embedding):
    def __init__(self, num_positions, embedding_dim):
        super().__init__(num_positions, embedding_dim)
        self.weight.requires_grad_(False)  # nn.Parameter(out, requires_grad=False): frozen, counted

    @torch.no_grad()
    def forward(self, input_ids_shape, past_key_values_length=0):
        bsz, seq_len = input_ids_shape[:2]
        position_ids = torch.arange(past_key_values_length, past_key_values_length + seq_len, dtype=torch.long,
                                    device=self.weight.device)
        return super().forward(position_ids)


class M2M100SinusoidalPositionalEmbedding(nn.Module):
    """modeling_m2m_100.py @efa7189c: the table a non-persistent buffer (no parameter), rebuilt by make_weights when
    padding_idx + 1 + seq_len + past passes its rows (the harness's lengths never reach that)."""
    def __init__(self, num_positions, embedding_dim, padding_idx):
        super().__init__()
        self.offset, self.embedding_dim, self.padding_idx = 2, embedding_dim, padding_idx
        self.make_weights(num_positions + self.offset, embedding_dim, padding_idx)

    def make_weights(self, num_embeddings, embedding_dim, padding_idx):
        emb_weights = self.get_embedding(num_embeddings, embedding_dim, padding_idx)
        if hasattr(self, "weights"):
            emb_weights = emb_weights.to(dtype=self.weights.dtype, device=self.weights.device)
        self.register_buffer("weights", emb_weights, persistent=False)

    @staticmethod
    def get_embedding(num_embeddings, embedding_dim, padding_idx):
        half_dim = embedding_dim // 2
        emb = math.log(10000) / (half_dim - 1)
        emb = torch.exp(torch.arange(half_dim, dtype=torch.int64).float() * -emb)
        emb = torch.arange(num_embeddings, dtype=torch.int64).float().unsqueeze(1) * emb.unsqueeze(0)
        emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=1).view(num_embeddings, -1)
        if embedding_dim % 2 == 1:
            emb = torch.cat([emb, torch.zeros(num_embeddings, 1)], dim=1)
        if padding_idx is not None:
            emb[padding_idx, :] = 0
        return emb.to(torch.get_default_dtype())

    @torch.no_grad()
    def forward(self, input_ids, past_key_values_length=0):
        bsz, seq_len = input_ids.size()
        # create_position_ids_from_input_ids(input_ids, padding_idx, past_key_values_length)
        mask = input_ids.ne(self.padding_idx).int()
        incremental_indices = (torch.cumsum(mask, dim=1).type_as(mask) + past_key_values_length) * mask
        position_ids = incremental_indices.long() + self.padding_idx
        del mask, incremental_indices
        max_pos = self.padding_idx + 1 + seq_len + past_key_values_length
        if max_pos > self.weights.size(0):
            self.make_weights(max_pos + self.offset, self.embedding_dim, self.padding_idx)
        return self.weights.index_select(0, position_ids.view(-1)).view(bsz, seq_len, self.weights.shape[-1]).detach()


def _positions(c, d_model):
    if c.model_type == "m2m_100":
        return M2M100SinusoidalPositionalEmbedding(c.max_position_embeddings, d_model, c.pad_token_id)
    if c.model_type in ("marian", "pegasus"):  # PegasusSinusoidalPositionalEmbedding: "Copied from" Marian's
        return MarianSinusoidalPositionalEmbedding(c.max_position_embeddings, d_model)
    return BartLearnedPositionalEmbedding(c.max_position_embeddings, d_model)


def _embed_positions(stack, input_ids, past=0):
    """bart: embed_positions(input, past) (ids per sample, + 2); marian: embed_positions(input_shape, past) ([L])."""
    if stack.config.model_type in ("marian", "pegasus"):
        return stack.embed_positions(input_ids.shape, past)
    return stack.embed_positions(input_ids, past)


def _layernorm_embedding(stack, hidden_states):
    return stack.layernorm_embedding(hidden_states) if stack.layernorm_embedding is not None else hidden_states


class BartScaledWordEmbedding(nn.Embedding):
    def __init__(self, num_embeddings, embedding_dim, padding_idx, embed_scale=1.0):
        super().__init__(num_embeddings, embedding_dim, padding_idx)
        self.embed_scale = embed_scale

    def forward(self, input_ids):
        return super().forward(input_ids) * self.embed_scale


class BartSdpaAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0, is_decoder=False, is_causal=False):
        super().__init__()
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.is_decoder, self.is_causal = is_decoder, is_causal
        self.k_proj = Linear(embed_dim, embed_dim, bias=True)
        self.v_proj = Linear(embed_dim, embed_dim, bias=True)
        self.q_proj = Linear(embed_dim, embed_dim, bias=True)
        self.out_proj = Linear(embed_dim, embed_dim, bias=True)

    def _shape(self, tensor, seq_len, bsz):
        return tensor.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, hidden_states, key_value_states=None):
        is_cross_attention = key_value_states is not None
        bsz, tgt_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states)
        if is_cross_attention:
            key_states = self._shape(self.k_proj(key_value_states), -1, bsz)
            value_states = self._shape(self.v_proj(key_value_states), -1, bsz)
        else:
            key_states = self._shape(self.k_proj(hidden_states), -1, bsz)
            value_states = self._shape(self.v_proj(hidden_states), -1, bsz)
        past_key_value = (key_states, value_states) if self.is_decoder else None
        query_states = self._shape(query_states, tgt_len, bsz)
        is_causal = True if self.is_causal and tgt_len > 1 else False  # attention_mask is None
        attn_output = vctorch._sdpa_math_2x(query_states, key_states, value_states, None,
                                            self.dropout if self.training else 0.0, is_causal, dropout=vctorch.dropout2x)
        attn_output = attn_output.transpose(1, 2)
        attn_output = attn_output.reshape(bsz, tgt_len, self.embed_dim)
        attn_output = self.out_proj(attn_output)
        return attn_output, None, past_key_value


class BartEncoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = BartSdpaAttention(c.d_model, c.encoder_attention_heads, c.attention_dropout)
        self.self_attn_layer_norm = LayerNorm(c.d_model)
        self.dropout, self.activation_dropout = c.dropout, c.activation_dropout
        self.activation_fn = _act(c.activation_function)
        self.fc1 = Linear(c.d_model, c.encoder_ffn_dim)
        self.fc2 = Linear(c.encoder_ffn_dim, c.d_model)
        self.final_layer_norm = LayerNorm(c.d_model)
        self.pre = c.model_type in PRE_LN

    def forward_pre(self, hidden_states):  # MBartEncoderLayer.forward (pegasus's): pre-LN, fp16's clamp only
        residual = hidden_states
        hidden_states = self.self_attn_layer_norm(hidden_states)
        hidden_states, attn_weights, _ = self.self_attn(hidden_states=hidden_states)
        hidden_states = _drop(hidden_states, self.dropout, self.training)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = self.activation_fn(self.fc1(hidden_states))
        hidden_states = _drop(hidden_states, self.activation_dropout, self.training)
        hidden_states = self.fc2(hidden_states)
        hidden_states = _drop(hidden_states, self.dropout, self.training)
        hidden_states = residual + hidden_states
        return (hidden_states,)

    def forward(self, hidden_states):
        if self.pre:
            return self.forward_pre(hidden_states)
        residual = hidden_states
        hidden_states, attn_weights, _ = self.self_attn(hidden_states=hidden_states)
        hidden_states = _drop(hidden_states, self.dropout, self.training)
        hidden_states = residual + hidden_states
        hidden_states = self.self_attn_layer_norm(hidden_states)
        residual = hidden_states
        hidden_states = self.activation_fn(self.fc1(hidden_states))
        hidden_states = _drop(hidden_states, self.activation_dropout, self.training)
        hidden_states = self.fc2(hidden_states)
        hidden_states = _drop(hidden_states, self.dropout, self.training)
        hidden_states = residual + hidden_states
        hidden_states = self.final_layer_norm(hidden_states)
        outputs = (hidden_states,)
        return outputs


class BartDecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = BartSdpaAttention(c.d_model, c.decoder_attention_heads, c.attention_dropout, is_decoder=True,
                                           is_causal=True)
        self.dropout, self.activation_dropout = c.dropout, c.activation_dropout
        self.activation_fn = _act(c.activation_function)
        self.self_attn_layer_norm = LayerNorm(c.d_model)
        self.encoder_attn = BartSdpaAttention(c.d_model, c.decoder_attention_heads, c.attention_dropout, is_decoder=True)
        self.encoder_attn_layer_norm = LayerNorm(c.d_model)
        self.fc1 = Linear(c.d_model, c.decoder_ffn_dim)
        self.fc2 = Linear(c.decoder_ffn_dim, c.d_model)
        self.final_layer_norm = LayerNorm(c.d_model)
        self.pre = c.model_type in PRE_LN

    def forward_pre(self, hidden_states, encoder_hidden_states, use_cache=True):  # MBartDecoderLayer.forward
        residual = hidden_states
        hidden_states = self.self_attn_layer_norm(hidden_states)
        hidden_states, self_attn_weights, present_key_value = self.self_attn(hidden_states=hidden_states)
        hidden_states = _drop(hidden_states, self.dropout, self.training)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.encoder_attn_layer_norm(hidden_states)
        hidden_states, cross_attn_weights, cross_attn_present_key_value = self.encoder_attn(
            hidden_states=hidden_states, key_value_states=encoder_hidden_states)
        hidden_states = _drop(hidden_states, self.dropout, self.training)
        hidden_states = residual + hidden_states
        present_key_value = present_key_value + cross_attn_present_key_value
        residual = hidden_states
        hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = self.activation_fn(self.fc1(hidden_states))
        hidden_states = _drop(hidden_states, self.activation_dropout, self.training)
        hidden_states = self.fc2(hidden_states)
        hidden_states = _drop(hidden_states, self.dropout, self.training)
        hidden_states = residual + hidden_states
        outputs = (hidden_states,)
        if use_cache:
            outputs += (present_key_value,)
        return outputs

    def forward(self, hidden_states, encoder_hidden_states, use_cache=True):
        if self.pre:
            return self.forward_pre(hidden_states, encoder_hidden_states, use_cache)
        residual = hidden_states
        hidden_states, self_attn_weights, present_key_value = self.self_attn(hidden_states=hidden_states)
        hidden_states = _drop(hidden_states, self.dropout, self.training)
        hidden_states = residual + hidden_states
        hidden_states = self.self_attn_layer_norm(hidden_states)
        residual = hidden_states
        hidden_states, cross_attn_weights, cross_attn_present_key_value = self.encoder_attn(
            hidden_states=hidden_states, key_value_states=encoder_hidden_states)
        hidden_states = _drop(hidden_states, self.dropout, self.training)
        hidden_states = residual + hidden_states
        hidden_states = self.encoder_attn_layer_norm(hidden_states)
        present_key_value = present_key_value + cross_attn_present_key_value
        residual = hidden_states
        hidden_states = self.activation_fn(self.fc1(hidden_states))
        hidden_states = _drop(hidden_states, self.activation_dropout, self.training)
        hidden_states = self.fc2(hidden_states)
        hidden_states = _drop(hidden_states, self.dropout, self.training)
        hidden_states = residual + hidden_states
        hidden_states = self.final_layer_norm(hidden_states)
        outputs = (hidden_states,)
        if use_cache:
            outputs += (present_key_value,)
        return outputs


class BartEncoder(nn.Module):
    def __init__(self, c, shared):
        super().__init__()
        self.config, self.dropout = c, c.dropout
        embed_scale = math.sqrt(c.d_model) if c.scale_embedding else 1.0
        self.embed_tokens = BartScaledWordEmbedding(c.vocab_size, c.d_model, c.pad_token_id, embed_scale=embed_scale)
        self.embed_tokens.weight = shared.weight
        if c.model_type in ("marian", "pegasus"):  # MarianModel, PegasusModel: shared itself (or a deep copy)
            self.embed_tokens = shared
        self.embed_positions = _positions(c, c.d_model)
        self.layers = nn.ModuleList([BartEncoderLayer(c) for _ in range(c.encoder_layers)])
        self.layernorm_embedding = LayerNorm(c.d_model) if c.model_type in ("bart", "mbart") else None
        self.layer_norm = LayerNorm(c.d_model) if c.model_type in PRE_LN else None  # the stack's final norm
        self.gradient_checkpointing = False

    def forward(self, input_ids):
        input = input_ids
        input_ids = input_ids.view(-1, input_ids.shape[-1])
        inputs_embeds = self.embed_tokens(input_ids)
        embed_pos = _embed_positions(self, input)
        embed_pos = embed_pos.to(inputs_embeds.device)
        hidden_states = inputs_embeds + embed_pos
        hidden_states = _layernorm_embedding(self, hidden_states)
        hidden_states = _drop(hidden_states, self.dropout, self.training)
        for encoder_layer in self.layers:
            if self.training:
                torch.rand([])  # LayerDrop's dropout_probability (layerdrop 0.0: never skipped)
            if self.gradient_checkpointing and self.training:
                layer_outputs = vctorch._checkpoint2x(encoder_layer.__call__, hidden_states)
            else:
                layer_outputs = encoder_layer(hidden_states)
            hidden_states = layer_outputs[0]
        if self.layer_norm is not None:
            hidden_states = self.layer_norm(hidden_states)
        return (hidden_states,)


class BartDecoder(nn.Module):
    def __init__(self, c, shared):
        super().__init__()
        self.config, self.dropout = c, c.dropout
        embed_scale = math.sqrt(c.d_model) if c.scale_embedding else 1.0
        self.embed_tokens = BartScaledWordEmbedding(c.vocab_size, c.d_model, c.pad_token_id, embed_scale=embed_scale)
        self.embed_tokens.weight = shared.weight
        if c.model_type in ("marian", "pegasus"):
            self.embed_tokens = shared
        self.embed_positions = _positions(c, c.d_model)
        self.layers = nn.ModuleList([BartDecoderLayer(c) for _ in range(c.decoder_layers)])
        self.layernorm_embedding = LayerNorm(c.d_model) if c.model_type in ("bart", "mbart") else None
        self.layer_norm = LayerNorm(c.d_model) if c.model_type in PRE_LN else None  # the stack's final norm
        self.gradient_checkpointing = False

    def forward(self, input_ids, encoder_hidden_states, use_cache):
        input = input_ids
        input_shape = input.shape
        input_ids = input_ids.view(-1, input_shape[-1])
        inputs_embeds = self.embed_tokens(input)
        positions = _embed_positions(self, input, 0)
        positions = positions.to(inputs_embeds.device)
        hidden_states = inputs_embeds + positions
        hidden_states = _layernorm_embedding(self, hidden_states)
        hidden_states = _drop(hidden_states, self.dropout, self.training)
        if self.gradient_checkpointing and self.training and use_cache:
            use_cache = False
        next_decoder_cache = () if use_cache else None
        for decoder_layer in self.layers:
            if self.training:
                torch.rand([])
            if self.gradient_checkpointing and self.training:
                layer_outputs = vctorch._checkpoint2x(decoder_layer.__call__, hidden_states, encoder_hidden_states,
                                                      use_cache)
            else:
                layer_outputs = decoder_layer(hidden_states, encoder_hidden_states, use_cache=use_cache)
            hidden_states = layer_outputs[0]
            if use_cache:
                next_decoder_cache += (layer_outputs[1],)
        if self.layer_norm is not None:
            hidden_states = self.layer_norm(hidden_states)
        return (hidden_states, next_decoder_cache)


class BartForConditionalGeneration(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        embed_scale = math.sqrt(c.d_model) if c.scale_embedding else 1.0
        self.shared = BartScaledWordEmbedding(c.vocab_size, c.d_model, c.pad_token_id, embed_scale=embed_scale)
        target = c.vocab_size
        if c.model_type == "marian":  # MarianModel / MarianMTModel
            if c.share_encoder_decoder_embeddings:
                enc_emb = dec_emb = self.shared
            else:
                enc_emb, dec_emb = copy.deepcopy(self.shared), copy.deepcopy(self.shared)
                self.shared = None
                target = c.decoder_vocab_size
            self.encoder = BartEncoder(c, enc_emb)
            self.decoder = BartDecoder(c, dec_emb)
        else:
            self.encoder = BartEncoder(c, self.shared)
            self.decoder = BartDecoder(c, self.shared)
        if c.model_type != "m2m_100":  # M2M100ForConditionalGeneration has no final_logits_bias
            self.register_buffer("final_logits_bias", torch.zeros((1, target)))
        self.lm_head = Linear(c.d_model, target, bias=False)
        if c.tie_word_embeddings:  # tie_weights: the decoder's get_input_embeddings() (bart: shared's weight)
            self.lm_head.weight = self.decoder.embed_tokens.weight
        self.attn_impl = "sdpa"
        self.gradient_checkpointing = False

    def get_input_embeddings(self):  # BartModel.get_input_embeddings: shared (neither stack calls it); marian's: the
        return self.encoder.embed_tokens if self.config.model_type == "marian" else self.shared  # encoder's embed_tokens
        # (pegasus: PegasusModel.get_input_embeddings() is shared, the stacks' embed_tokens itself)

    def shift_tokens_right(self, input_ids):
        c = self.config
        if c.model_type == "mbart":  # modeling_mbart.py shift_tokens_right(input_ids, pad_token_id)
            prev_output_tokens = input_ids.clone()
            prev_output_tokens.masked_fill_(prev_output_tokens == -100, c.pad_token_id)
            index_of_eos = (prev_output_tokens.ne(c.pad_token_id).sum(dim=1) - 1).unsqueeze(-1)
            decoder_start_tokens = prev_output_tokens.gather(1, index_of_eos).squeeze()
            prev_output_tokens[:, 1:] = prev_output_tokens[:, :-1].clone()
            prev_output_tokens[:, 0] = decoder_start_tokens
            return prev_output_tokens
        shifted_input_ids = input_ids.new_zeros(input_ids.shape)
        shifted_input_ids[:, 1:] = input_ids[:, :-1].clone()
        shifted_input_ids[:, 0] = c.decoder_start_token_id
        shifted_input_ids.masked_fill_(shifted_input_ids == -100, c.pad_token_id)
        return shifted_input_ids

    def forward(self, input_ids, labels=None, decoder_input_ids=None):
        self.encoder.gradient_checkpointing = self.decoder.gradient_checkpointing = self.gradient_checkpointing
        use_cache = self.config.use_cache
        if labels is not None:
            use_cache = False
            if decoder_input_ids is None:
                decoder_input_ids = self.shift_tokens_right(labels)
        # BartModel.forward: encoder_outputs and the decoder's outputs held in the returned Seq2SeqLMOutput
        encoder_outputs = self.encoder(input_ids)
        decoder_outputs = self.decoder(decoder_input_ids, encoder_outputs[0], use_cache)
        outputs = decoder_outputs + encoder_outputs
        lm_logits = self.lm_head(outputs[0])
        if self.config.model_type != "m2m_100":
            lm_logits = lm_logits + self.final_logits_bias.to(lm_logits.device)
        loss = None
        if labels is not None:
            loss_fct = nn.CrossEntropyLoss()
            loss = loss_fct(lm_logits.view(-1, self.lm_head.out_features), labels.view(-1))
        return loss, lm_logits


# ---- generate() (issue 31): the cached forward, the logits processors and the loop ----

def _mask_for_sdpa(mask):
    """_prepare_4d_attention_mask_for_sdpa (modeling_attn_mask_utils.py, as BartEncoder.forward and BartDecoder.forward
    call it on generate()'s attention_mask under sdpa): torch.all(mask == 1) -> None (the comparison a temporary)."""
    if not torch.all(mask == 1):
        raise ValueError("the harness's prompts have no padding")
    return None


def _decoder_layer_cached(layer, hidden_states, encoder_hidden_states, layer_idx, cache):
    """BartDecoderLayer.forward (post-LN; eval: the dropouts are identities) with the EncoderDecoderCache, each
    attention as whisper_replica._attention_cached (WhisperSdpaAttention @efa7189c's EncoderDecoderCache path, the
    form transformers 5's BartAttention has: self_attention_cache.update cats, the cross-attention's keys and values
    made at the first step and reused once is_updated; sdpa, is_causal only over more than one query)."""
    from whisper_replica import _attention_cached, _decoder_layer_cached as pre_ln_layer
    if layer.pre:  # MBartDecoderLayer.forward (pegasus's, m2m_100's): WhisperDecoderLayer is "Copied from" it upstream
        return pre_ln_layer(layer, hidden_states, encoder_hidden_states, layer_idx, cache)
    residual = hidden_states
    hidden_states = _attention_cached(layer.self_attn, hidden_states, layer_idx, cache)
    hidden_states = residual + hidden_states
    hidden_states = layer.self_attn_layer_norm(hidden_states)
    residual = hidden_states
    hidden_states = _attention_cached(layer.encoder_attn, hidden_states, layer_idx, cache, encoder_hidden_states)
    hidden_states = residual + hidden_states
    hidden_states = layer.encoder_attn_layer_norm(hidden_states)
    residual = hidden_states
    hidden_states = layer.activation_fn(layer.fc1(hidden_states))
    hidden_states = layer.fc2(hidden_states)
    hidden_states = residual + hidden_states
    hidden_states = layer.final_layer_norm(hidden_states)
    return hidden_states


def forward_cached(model, decoder_input_ids, encoder_hidden_states, attention_mask, cache, cache_position):
    """BartForConditionalGeneration.forward as generate() calls it (encoder_outputs given: the encoder not run):
    BartDecoder.forward: inputs_embeds = embed_tokens(input) (* embed_scale, a new tensor); positions =
    embed_positions(input, past_key_values_length) (arange(past, past + L).expand(bsz, -1) + 2, looked up); hidden_states =
    inputs_embeds + positions; layernorm_embedding; no causal mask (sdpa, one query or none past); the encoder's
    attention_mask through _prepare_4d_attention_mask_for_sdpa (None); the layers with the cache; lm_logits =
    lm_head(outputs[0]) + final_logits_bias (every position: no logits_to_keep)."""
    dec = model.decoder
    past = cache.get_seq_length()
    inputs_embeds = dec.embed_tokens(decoder_input_ids)
    positions = _embed_positions(dec, decoder_input_ids, past)
    hidden_states = inputs_embeds + positions  # inputs_embeds, positions: locals until it returns
    hidden_states = _layernorm_embedding(dec, hidden_states)
    _mask_for_sdpa(attention_mask)
    for idx, layer in enumerate(dec.layers):
        hidden_states = _decoder_layer_cached(layer, hidden_states, encoder_hidden_states, idx, cache)
    if dec.layer_norm is not None:  # pegasus: the decoder's final layer_norm
        hidden_states = dec.layer_norm(hidden_states)
    del inputs_embeds, positions
    lm_logits = model.lm_head(hidden_states)
    if model.config.model_type != "m2m_100":
        lm_logits = lm_logits + model.final_logits_bias
    return lm_logits


def _calc_banned_ngram_tokens(ngram_size, prev_input_ids, num_hypos, cur_len):
    """generation/logits_process.py _get_ngrams / _get_generated_ngrams / _calc_banned_ngram_tokens: the n-grams of
    each row's tokens (input_ids.tolist(), on the host), the tokens that would repeat one."""
    if cur_len + 1 < ngram_size:
        return [[] for _ in range(num_hypos)]
    banned = []
    for idx in range(num_hypos):
        gen_tokens = prev_input_ids[idx].tolist()
        generated = {}
        for ngram in zip(*[gen_tokens[i:] for i in range(ngram_size)]):
            generated[tuple(ngram[:-1])] = generated.get(tuple(ngram[:-1]), []) + [ngram[-1]]
        start_idx = cur_len + 1 - ngram_size
        banned.append(generated.get(tuple(prev_input_ids[idx, start_idx:cur_len].tolist()), []))
    return banned


def logits_processors(c, input_ids, scores, max_length):
    """LogitsProcessorList.__call__ over the processors GenerationMixin._get_logits_processor (generation/utils.py
    @000034a44ef887621d9b36001a5eb7c46e64cb3f) makes of the config's keys, in its order (`scores = processor(input_ids,
    scores)`): NoRepeatNGramLogitsProcessor (scores_processed = scores.clone(); scores_processed[i, banned] = -inf),
    ForcedBOSTokenLogitsProcessor (cur_len == 1: torch.full_like(scores, -inf), [:, bos] = 0) and
    ForcedEOSTokenLogitsProcessor (cur_len == max_length - 1: the same with eos); the caller keeps its input."""
    cur_len = input_ids.shape[-1]
    if c.no_repeat_ngram_size > 0:
        scores_processed = scores.clone()
        for i, banned in enumerate(_calc_banned_ngram_tokens(c.no_repeat_ngram_size, input_ids, scores.shape[0],
                                                             cur_len)):
            scores_processed[i, banned] = -float("inf")
        scores = scores_processed
        del scores_processed
    if c.bad_words_ids is not None:
        # NoBadWordsLogitsProcessor (after NoRepeatNGram in _get_logits_processor's order): __init__ drops the
        # sequences equal to [eos]; SequenceBiasLogitsProcessor.__call__: at the first call _prepare_bias_variables'
        # length_1_bias = torch.zeros((V,)) (kept by the processor: here on the config, for generate()'s lifetime);
        # bias = torch.zeros_like(scores); bias += length_1_bias; scores_processed = scores + bias (single-token
        # sequences only: the longer ones' matching is not replicated)
        eos = c.eos_token_id if isinstance(c.eos_token_id, list) else [c.eos_token_id]
        seqs = [q for q in c.bad_words_ids if all(q != [i] for i in eos)]
        if any(len(q) > 1 for q in seqs):
            raise ValueError("bad_words_ids: sequences of more than one token are not replicated")
        if getattr(c, "_length_1_bias", None) is None:
            c._length_1_bias = torch.zeros((scores.shape[-1],), dtype=torch.float)
            for q in seqs:
                c._length_1_bias[q[-1]] = -float("inf")
        bias = torch.zeros_like(scores)
        bias += c._length_1_bias
        scores_processed = scores + bias
        del bias
        scores = scores_processed
        del scores_processed
    if c.forced_bos_token_id is not None and cur_len == 1:
        scores_processed = torch.full_like(scores, -math.inf)
        scores_processed[:, c.forced_bos_token_id] = 0
        scores = scores_processed
        del scores_processed
    if c.forced_eos_token_id is not None and cur_len == max_length - 1:
        scores_processed = torch.full_like(scores, -math.inf)
        scores_processed[:, c.forced_eos_token_id] = 0
        scores = scores_processed
        del scores_processed
    return scores


def prepare_generation(model, input_ids):
    """GenerationMixin.generate (generation/utils.py @000034a44ef887621d9b36001a5eb7c46e64cb3f) of
    BartForConditionalGeneration up to its decoding loop, as t5_replica.prepare_generation (the special tokens of
    BartConfig: pad 1, eos 2, decoder_start 2): the attention mask, the encoder once over input_ids (batch rows; its
    attention_mask through _prepare_4d_attention_mask_for_sdpa: None), the decoder's start ids. Returns (decoder ids,
    encoder_hidden_states, attention_mask, the special tokens: generate()'s locals to its end)."""
    c = model.config
    B = input_ids.shape[0]
    pad = torch.tensor(c.pad_token_id, dtype=torch.long)
    eos = torch.tensor([c.eos_token_id], dtype=torch.long)
    decoder_start = torch.tensor(c.decoder_start_token_id, dtype=torch.long)
    from t5_replica import attention_mask_for_generation
    attention_mask = attention_mask_for_generation(input_ids, pad, eos)
    # _prepare_encoder_decoder_kwargs_for_generation: encoder(input_ids, attention_mask, return_dict=True)
    _mask_for_sdpa(attention_mask)
    encoder_hidden_states = model.encoder(input_ids)[0]
    dec_ids = torch.ones((B, 1), dtype=torch.long) * decoder_start
    return dec_ids, encoder_hidden_states, attention_mask, (pad, eos, decoder_start)


def generate(model, input_ids, max_new_tokens, on_phase=lambda name: None, on_step_end=lambda: None):
    """GenerationMixin.generate (generation/utils.py @000034a) of BartForConditionalGeneration, greedy (num_beams 1),
    under torch.no_grad(), as t5_replica.generate runs T5's, with the logits processors of the config's keys between
    next_token_logits and the argmax (_sample: next_token_scores = logits_processor(input_ids, next_token_logits));
    max_length = the decoder's start token + max_new_tokens. on_phase("prefill") before anything (the encoder and the
    first step), on_phase("decodeK") before step K >= 1, on_step_end() after each step."""
    from t5_replica import DynamicCache, EncoderDecoderCache
    c = model.config
    B = input_ids.shape[0]
    on_phase("prefill")
    dec_ids, encoder_hidden_states, attention_mask, held = prepare_generation(model, input_ids)
    pad = held[0]
    cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
    unfinished_sequences = torch.ones(B, dtype=torch.long)
    cache_position = torch.ones(dec_ids.shape[1], dtype=torch.int64).cumsum(0) - 1
    max_length = dec_ids.shape[1] + max_new_tokens
    model_inputs = next_token_logits = next_token_scores = None
    for step in range(max_new_tokens):
        if step:
            on_phase("decode%d" % step)
        cur = dec_ids
        if cur.shape[1] != cache_position.shape[0]:
            cur = cur[:, cache_position]
        model_inputs = {"decoder_input_ids": cur.clone(memory_format=torch.contiguous_format)}
        del cur
        logits = forward_cached(model, model_inputs["decoder_input_ids"], encoder_hidden_states, attention_mask, cache,
                                cache_position)
        cache_position = cache_position[-1:] + 1
        next_token_logits = logits[:, -1, :].to(copy=True, dtype=torch.float32)
        next_token_scores = logits_processors(c, dec_ids, next_token_logits, max_length)
        next_tokens = torch.argmax(next_token_scores, dim=-1)
        next_tokens = next_tokens * unfinished_sequences + pad * (1 - unfinished_sequences)
        dec_ids = torch.cat([dec_ids, next_tokens[:, None]], dim=-1)
        del logits
        on_step_end()
    del cache, model_inputs, encoder_hidden_states, attention_mask, held, next_token_logits, next_token_scores
    c._length_1_bias = None  # the logits processors (NoBadWordsLogitsProcessor's length_1_bias) die with generate()
    return dec_ids


def count(cfg):
    """named_parameters() of BartForConditionalGeneration (the shared weight and a tied lm_head once; the
    final_logits_bias buffer is no parameter) and of BartModel, on the meta device."""
    from check_params import MetaMode
    c = Config(cfg)
    with MetaMode():
        m = BartForConditionalGeneration(c)
    n = sum(p.numel() for p in m.parameters())
    base = n - (0 if c.tie_word_embeddings else c.vocab_size * c.d_model)
    return {"BartForConditionalGeneration": n, "BartModel": base}


def main(paths):
    for p in paths:
        print(p, json.dumps(count(json.load(open(p)))))


if __name__ == "__main__":
    main(sys.argv[1:])
