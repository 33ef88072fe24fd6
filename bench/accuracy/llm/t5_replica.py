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
The forward (and so the memory) is not written here: src/hf/hf_t5.c refuses it for now.
"""
import json
import os
import sys

import torch
from torch import nn

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


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
        act_info = cfg.get("feed_forward_proj", "relu").split("-")
        self.is_gated_act = cfg.get("is_gated_act", act_info[0] == "gated")
        self.tie_word_embeddings = cfg.get("tie_word_embeddings", True)
        self.is_decoder = False


class T5LayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps


class T5DenseActDense(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wi = nn.Linear(c.d_model, c.d_ff, bias=False)
        self.wo = nn.Linear(c.d_ff, c.d_model, bias=False)


class T5DenseGatedActDense(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wi_0 = nn.Linear(c.d_model, c.d_ff, bias=False)
        self.wi_1 = nn.Linear(c.d_model, c.d_ff, bias=False)
        self.wo = nn.Linear(c.d_ff, c.d_model, bias=False)


class T5LayerFF(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.DenseReluDense = T5DenseGatedActDense(c) if c.is_gated_act else T5DenseActDense(c)
        self.layer_norm = T5LayerNorm(c.d_model, eps=c.layer_norm_epsilon)


class T5Attention(nn.Module):
    def __init__(self, c, has_relative_attention_bias=False):
        super().__init__()
        inner = c.num_heads * c.d_kv
        self.q = nn.Linear(c.d_model, inner, bias=False)
        self.k = nn.Linear(c.d_model, inner, bias=False)
        self.v = nn.Linear(c.d_model, inner, bias=False)
        self.o = nn.Linear(inner, c.d_model, bias=False)
        if has_relative_attention_bias:
            self.relative_attention_bias = nn.Embedding(c.relative_attention_num_buckets, c.num_heads)


class T5LayerSelfAttention(nn.Module):
    def __init__(self, c, has_relative_attention_bias=False):
        super().__init__()
        self.SelfAttention = T5Attention(c, has_relative_attention_bias)
        self.layer_norm = T5LayerNorm(c.d_model, eps=c.layer_norm_epsilon)


class T5LayerCrossAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.EncDecAttention = T5Attention(c, has_relative_attention_bias=False)
        self.layer_norm = T5LayerNorm(c.d_model, eps=c.layer_norm_epsilon)


class T5Block(nn.Module):
    def __init__(self, c, has_relative_attention_bias=False):
        super().__init__()
        self.layer = nn.ModuleList([T5LayerSelfAttention(c, has_relative_attention_bias)])
        if c.is_decoder:
            self.layer.append(T5LayerCrossAttention(c))
        self.layer.append(T5LayerFF(c))


class T5Stack(nn.Module):
    def __init__(self, c, n, embed_tokens):
        super().__init__()
        self.embed_tokens = embed_tokens
        self.block = nn.ModuleList([T5Block(c, has_relative_attention_bias=bool(i == 0)) for i in range(n)])
        self.final_layer_norm = T5LayerNorm(c.d_model, eps=c.layer_norm_epsilon)


class T5ForConditionalGeneration(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.shared = nn.Embedding(c.vocab_size, c.d_model)
        c.is_decoder = False
        self.encoder = T5Stack(c, c.num_layers, self.shared)
        c.is_decoder = True
        self.decoder = T5Stack(c, c.num_decoder_layers, self.shared)
        c.is_decoder = False
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        if c.tie_word_embeddings:
            self.lm_head.weight = self.shared.weight


def count(cfg):
    from check_params import MetaMode  # every factory call makes a meta tensor: no storage
    with MetaMode():
        m = T5ForConditionalGeneration(Config(cfg))
    assert all(p.device.type == "meta" for p in m.parameters())
    return sum(p.numel() for p in m.parameters())  # parameters(): each shared tensor once


def main(paths):
    for p in paths:
        print(p, count(json.load(open(p))))


if __name__ == "__main__":
    main(sys.argv[1:])
